// ptx::wmma's tile (every element of D at once, the interpreter's fast path)
// against dot, one element at a time, on random matrices rich in the edge
// values: f16 zeros, subnormals, infinities, NaNs and the largest finite
// halves; s8/u8 extremes; accumulators at the f32 and s32 edges.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "model_host/ptx/wmma.h"

namespace wm = qgpu::ptx::wmma;

namespace {

uint16_t random_half(std::mt19937& rng) {
  static const uint16_t edges[] = {0x0000, 0x8000, 0x0001, 0x8001, 0x03FF, 0x0400, 0x7BFF, 0xFBFF,
                                   0x7C00, 0xFC00, 0x7E00, 0x7C01, 0xFFFF, 0x3C00, 0xBC00, 0x3555};
  const uint32_t pick = rng() % 8;
  if (pick == 0) return edges[rng() % std::size(edges)];
  if (pick < 4) return uint16_t(0x3000 + rng() % 0x1800);  // ordinary magnitudes, both signs below
  return uint16_t(rng());
}

uint32_t random_acc(std::mt19937& rng, wm::In t) {
  static const uint32_t f32_edges[] = {0x00000000, 0x80000000, 0x7F800000, 0xFF800000, 0x7FC00000,
                                       0x7F7FFFFF, 0x00000001, 0x477FE000, 0xC77FE000};
  static const uint32_t s32_edges[] = {0x7FFFFFFF, 0x80000000, 0x7FFFFF00, 0x80000100, 0, 0xFFFFFFFF};
  if (rng() % 6 == 0)
    return t == wm::In::F16 ? f32_edges[rng() % std::size(f32_edges)] : s32_edges[rng() % std::size(s32_edges)];
  return rng();
}

}  // namespace

TEST(WarpMatrixArithmetic, TileIsEveryElementsDot) {
  std::mt19937 rng(20261206);
  const wm::Shape shapes[] = {{16, 16, 16}, {32, 8, 16}, {8, 32, 16}};
  size_t checked = 0;
  for (const wm::Shape& s : shapes)
    for (wm::In t : {wm::In::F16, wm::In::S8, wm::In::U8})
      for (bool sat : {false, true}) {
        if (t == wm::In::F16 && sat) continue;  // satfinite is the integer forms'
        const uint32_t es = wm::in_bytes(t), a_bytes = s.m * s.k * es;
        for (int round = 0; round < 60; ++round) {
          std::vector<uint8_t> area(a_bytes + s.k * s.n * es);
          if (t == wm::In::F16) {
            for (size_t i = 0; i < area.size(); i += 2) {
              const uint16_t h = random_half(rng);
              std::memcpy(&area[i], &h, 2);
            }
          } else {
            for (auto& b : area) b = rng() % 4 == 0 ? (rng() % 2 ? 0x7F : 0x80) : uint8_t(rng());
            if (round % 10 == 0) std::fill(area.begin(), area.end(), uint8_t(t == wm::In::S8 ? 0x80 : 0xFF));
          }
          std::vector<uint32_t> c(s.m * s.n), d(s.m * s.n);
          for (auto& x : c) x = random_acc(rng, t);
          wm::tile(s, t, sat, area.data(), c.data(), d.data());
          for (uint32_t r = 0; r < s.m; ++r)
            for (uint32_t col = 0; col < s.n; ++col) {
              const uint32_t e = r * s.n + col;
              const uint32_t want =
                  wm::dot(s.k, t, sat, &area[r * s.k * es], &area[a_bytes + col * s.k * es], c[e]);
              ASSERT_EQ(d[e], want) << "shape " << s.m << "x" << s.n << "x" << s.k << " type " << int(t)
                                    << " satfinite " << sat << " element (" << r << ", " << col << ")";
              ++checked;
            }
        }
      }
  EXPECT_EQ(checked, 3u * 5 * 60 * 256);
}
