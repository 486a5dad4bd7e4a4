#include "model_host/tokens/vocab.h"

#include <array>
#include <cstdio>
#include <stdexcept>

namespace qgpu::gpu {
namespace {

struct KindInfo {
  const char* name;
  uint32_t size;
};

// Payload sizes follow machine::model_params(): 1024 ROM blocks, 65536 global
// words a page (MGP names the page of the MG records after it: 16 pages, the
// circuit reads as many of its bits as its global memory has), 1024
// parameter words, 1024 threads per CTA, 65535 CTAs (NC's payload is the
// count, CTA's the index).
constexpr std::array<KindInfo, kKindCount> kKinds = {{
    {"NT", 1025},     {"NC", 1 << 16}, {"MG", 1 << 16}, {"MGP", kMgPages}, {"MP", 1024},  {"ROM", 1024},
    {"OP", 1 << 14},  {"A", 64},       {"B", 64},      {"C", 64},    {"T", 256},
    {"START", 1},     {"D", 1 << 16},  {"CTA", 1 << 16},    {"WARP", 1025}, {"EXEC", 1024},
    {"VZ", 1 << 16},  {"VLO", 1 << 16}, {"VX", 1 << 16}, {"VG", 1 << 16},
    {"VN", 1 << 16},  {"VZF", 1 << 16}, {"VGF", 1 << 16}, {"VNF", 1 << 16}, {"DF", 1 << 16},
    {"VH", 1 << 16},  {"VHF", 1 << 16}, {"VLO1", 1 << 16}, {"VLO2", 1 << 16}, {"VLO3", 1 << 16}, {"VLO4", 1 << 16}, {"VLO5", 1 << 16}, {"VLO6", 1 << 16}, {"WARPS", 1024}, {"BARRIER", 2}, {"WMIN", 1024}, {"TRAP", 1024}, {"FAULT", 2},
    {"END", 1},
}};

constexpr std::array<int64_t, kKindCount + 1> offsets() {
  std::array<int64_t, kKindCount + 1> o{};
  for (int k = 0; k < kKindCount; ++k) o[k + 1] = o[k] + kKinds[k].size;
  return o;
}
constexpr auto kOffsets = offsets();

}  // namespace

uint32_t payload_size(Kind k) { return kKinds.at(size_t(k)).size; }
const char* kind_name(Kind k) { return kKinds.at(size_t(k)).name; }
int64_t circuit_token_count() { return kOffsets[kKindCount]; }

int64_t token_id(Kind k, uint32_t payload) {
  if (payload >= payload_size(k))
    throw std::out_of_range(std::string("token ") + kind_name(k) + " has no payload " + std::to_string(payload));
  return kTokenBase + kOffsets[size_t(k)] + payload;
}

std::optional<Token> decode_token(int64_t id) {
  int64_t rel = id - kTokenBase;
  if (rel < 0 || rel >= circuit_token_count()) return std::nullopt;
  for (int k = 0; k < kKindCount; ++k)
    if (rel < kOffsets[k + 1]) return Token{Kind(k), uint32_t(rel - kOffsets[k])};
  return std::nullopt;
}

std::string token_name(int64_t id) {
  auto t = decode_token(id);
  if (!t) return "id:" + std::to_string(id);
  std::string s = kind_name(t->kind);
  if (payload_size(t->kind) == 1) return s;
  char buf[32];
  if (t->kind == Kind::VX)
    std::snprintf(buf, sizeof buf, "(%u,%u)", block_of(*t), t->payload >> kVxPcBits);
  else if (payload_size(t->kind) == (1u << 16) && t->kind != Kind::NC && t->kind != Kind::CTA && t->kind != Kind::MG)
    std::snprintf(buf, sizeof buf, "(0x%04x)", t->payload);   // data: a half word
  else
    std::snprintf(buf, sizeof buf, "(%u)", t->payload);
  return s + buf;
}

}  // namespace qgpu::gpu
