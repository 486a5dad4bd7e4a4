#include "qgpu/fatbin.h"

#include <lz4.h>
#include <zstd.h>

#include <cstring>

namespace qgpu::fatbin {
namespace {

template <class T>
T load(const uint8_t* p, size_t off) {
  T v;
  std::memcpy(&v, p + off, sizeof v);
  return v;
}

std::string hex(uint64_t v) {
  char b[24];
  std::snprintf(b, sizeof b, "0x%llx", static_cast<unsigned long long>(v));
  return b;
}

// Entry header layout (little-endian):
//   0 u16 kind, 2 u16 (format version), 4 u32 header size, 8 u64 payload size,
//  16 u32 compressed size (0: not compressed), 20 u32, 24 u16 minor, 26 u16 major,
//  28 u32 arch, 32..39 object name, 40 u64 flags, 48 u64, 56 u64 decompressed size.
constexpr size_t kEntryHeaderMin = 64;
constexpr uint64_t kMaxPayload = 1ull << 30;

std::string decompress(const uint8_t* src, uint64_t stored, uint32_t compressed, uint64_t flags,
                       uint64_t size) {
  if (size > kMaxPayload) throw FatbinError("entry declares a decompressed size of " + std::to_string(size));
  uint64_t in = compressed ? compressed : stored;
  if (in > stored) throw FatbinError("compressed size " + std::to_string(in) + " exceeds the stored payload");
  std::string out(size, '\0');
  if (flags & kFlagCompressedZstd) {
    size_t got = ZSTD_decompress(out.data(), out.size(), src, in);
    if (ZSTD_isError(got))
      throw FatbinError(std::string("zstd payload does not decompress: ") + ZSTD_getErrorName(got));
    out.resize(got);
  } else {
    if (in > uint64_t(INT32_MAX) || size > uint64_t(INT32_MAX)) throw FatbinError("LZ4 payload too large");
    int got = LZ4_decompress_safe(reinterpret_cast<const char*>(src), out.data(), int(in), int(size));
    if (got < 0) throw FatbinError("LZ4 payload does not decompress");
    out.resize(size_t(got));
  }
  return out;
}

}  // namespace

size_t declared_size(const void* data) {
  auto* p = static_cast<const uint8_t*>(data);
  if (load<uint32_t>(p, 0) != kFatbinMagic)
    throw FatbinError("not a fatbinary: magic " + hex(load<uint32_t>(p, 0)) + ", expected " + hex(kFatbinMagic));
  return size_t(load<uint16_t>(p, 6)) + load<uint64_t>(p, 8);
}

Fatbin parse(const void* data, size_t limit) {
  auto* p = static_cast<const uint8_t*>(data);
  if (limit < 16) throw FatbinError("fatbinary shorter than its 16-byte header");
  uint32_t magic = load<uint32_t>(p, 0);
  if (magic != kFatbinMagic)
    throw FatbinError("not a fatbinary: magic " + hex(magic) + ", expected " + hex(kFatbinMagic));
  uint16_t version = load<uint16_t>(p, 4);
  uint16_t header = load<uint16_t>(p, 6);
  uint64_t body = load<uint64_t>(p, 8);
  if (version != 1) throw FatbinError("fatbinary format version " + std::to_string(version) + " is not supported");
  if (header < 16 || header > limit || body > limit - header)
    throw FatbinError("fatbinary header declares " + std::to_string(header) + "+" + std::to_string(body) +
                      " bytes, more than the " + std::to_string(limit) + " available");
  Fatbin fb;
  size_t pos = header, end = header + body;
  while (pos < end) {
    if (end - pos < kEntryHeaderMin)
      throw FatbinError("truncated entry header at offset " + std::to_string(pos));
    const uint8_t* e = p + pos;
    uint16_t kind = load<uint16_t>(e, 0);
    uint32_t ehs = load<uint32_t>(e, 4);
    uint64_t stored = load<uint64_t>(e, 8);
    if (ehs < kEntryHeaderMin || ehs > end - pos || stored > end - pos - ehs)
      throw FatbinError("entry at offset " + std::to_string(pos) + " declares " + std::to_string(ehs) + "+" +
                        std::to_string(stored) + " bytes, past the end of the fatbinary");
    if (kind != uint16_t(Kind::Ptx) && kind != uint16_t(Kind::Elf))
      throw FatbinError("entry at offset " + std::to_string(pos) + " has unknown kind " + std::to_string(kind));
    Entry en;
    en.kind = Kind(kind);
    en.minor = load<uint16_t>(e, 24);
    en.major = load<uint16_t>(e, 26);
    en.arch = load<uint32_t>(e, 28);
    en.flags = load<uint64_t>(e, 40);
    const uint8_t* payload = e + ehs;
    if (en.flags & (kFlagCompressedZstd | kFlagCompressedLz4))
      en.payload = decompress(payload, stored, load<uint32_t>(e, 16), en.flags, load<uint64_t>(e, 56));
    else
      en.payload.assign(reinterpret_cast<const char*>(payload), stored);
    if (en.kind == Kind::Ptx) en.payload.resize(std::strlen(en.payload.c_str()));
    fb.entries.push_back(std::move(en));
    pos += ehs + stored;
  }
  return fb;
}

const Entry* Fatbin::best_ptx(uint32_t arch) const {
  const Entry *best = nullptr, *oldest = nullptr;
  for (const Entry& e : entries) {
    if (e.kind != Kind::Ptx) continue;
    if (!oldest || e.arch < oldest->arch) oldest = &e;
    if (e.arch <= arch && (!best || e.arch > best->arch)) best = &e;
  }
  return best ? best : oldest;
}

Wrapper parse_wrapper(const void* wrapper) {
  if (!wrapper) throw FatbinError("null fatbinary wrapper");
  auto* w = static_cast<const uint8_t*>(wrapper);
  uint32_t magic = load<uint32_t>(w, 0);
  if (magic != kWrapperMagic)
    throw FatbinError("fatbinary wrapper has magic " + hex(magic) + ", expected " + hex(kWrapperMagic));
  Wrapper out;
  out.version = load<uint32_t>(w, 4);
  auto* data = load<const uint8_t*>(w, 8);
  auto* extra = load<const void* const*>(w, 16);
  auto parse_one = [](const uint8_t* fb) { return parse(fb, declared_size(fb)); };
  if (out.version == 1) {
    if (!data) throw FatbinError("fatbinary wrapper has no data");
    out.units.push_back(parse_one(data));
  } else if (out.version == 2) {
    // The linked image holds only device code for one architecture; the PTX
    // of each translation unit is in its prelinked fatbinary.
    if (extra)
      for (size_t i = 0; extra[i]; ++i) out.units.push_back(parse_one(static_cast<const uint8_t*>(extra[i])));
    if (data) out.units.push_back(parse_one(data));
  } else {
    throw FatbinError("fatbinary wrapper version " + std::to_string(out.version) + " is not supported");
  }
  return out;
}

}  // namespace qgpu::fatbin
