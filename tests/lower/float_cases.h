// Operands for the floating-point tests: every edge class (signed zeros,
// subnormals, the largest and smallest normals, infinities, NaNs, exact
// halfway cases) and random values drawn so that exponents are close (where
// additions cancel and round) as well as uniformly random bit patterns.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "model_host/ptx/float_ref.h"

namespace qgpu::floattest {

inline const std::vector<uint32_t>& edges() {
  static const std::vector<uint32_t> v = [] {
    std::vector<uint32_t> base = {
        0x00000000u, 0x00000001u, 0x00000002u, 0x007FFFFFu, 0x00400000u, 0x00800000u, 0x00800001u,
        0x00FFFFFFu, 0x01000000u, 0x33800000u /*2^-24*/, 0x33800001u, 0x34000000u, 0x3F000000u,
        0x3F800000u, 0x3F800001u, 0x3FC00000u, 0x3FFFFFFFu, 0x40000000u, 0x4B000000u /*2^23*/,
        0x4B000001u, 0x4B7FFFFFu, 0x4B800000u, 0x4EFFFFFFu, 0x4F000000u, 0x4F800000u, 0x5F000000u,
        0x7E800000u, 0x7F000000u, 0x7F7FFFFEu, 0x7F7FFFFFu, 0x7F800000u, 0x7F800001u, 0x7FC00000u,
        0x7FFFFFFFu, 0x3EFFFFFFu, 0x3F000001u, 0x3FBFFFFFu, 0x3FA00000u, 0x40200000u, 0x0C000000u,
        0x1F800000u, 0x20000000u, 0x5F800000u, 0x60000000u};
    std::vector<uint32_t> all;
    for (uint32_t x : base) {
      all.push_back(x);
      all.push_back(x | 0x80000000u);
    }
    return all;
  }();
  return v;
}

// The scale of the randomised runs: QGPU_FLOAT_PAIRS overrides the default.
inline uint64_t pairs(uint64_t dflt) {
  if (const char* s = std::getenv("QGPU_FLOAT_PAIRS")) return std::strtoull(s, nullptr, 10);
  return dflt;
}

class Operands {
 public:
  explicit Operands(uint64_t seed) : rng_(seed) {}
  uint32_t any() {
    switch (rng_() % 8) {
      case 0: return edges()[rng_() % edges().size()];
      case 1: case 2: return uint32_t(rng_());
      case 3: return (uint32_t(rng_()) & 0x807FFFFFu) | ((uint32_t(rng_() % 4)) << 23);  // subnormal, tiny
      default: {  // exponents near 127, so sums and products round and cancel
        uint32_t e = 112 + uint32_t(rng_() % 32);
        return (uint32_t(rng_()) & 0x807FFFFFu) | (e << 23);
      }
    }
  }
  // b near a (same or neighbouring exponent), for cancellation.
  uint32_t near(uint32_t a) {
    switch (rng_() % 4) {
      case 0: return a ^ 0x80000000u ^ uint32_t(rng_() % 4);
      case 1: return (a ^ 0x80000000u) + uint32_t(rng_() % 0x1000000u) - 0x800000u;
      case 2: return a + (uint32_t(rng_() % 64) << 23);
      default: return any();
    }
  }
  std::mt19937_64& rng() { return rng_; }

 private:
  std::mt19937_64 rng_;
};

// binary64 edge values: zeros, subnormals, the smallest and largest normals,
// infinities, NaNs, 1 and its neighbours, halfway cases.
inline std::vector<uint64_t> edges64() {
  std::vector<uint64_t> base = {0, 1, 2, 0x000FFFFFFFFFFFFFull, 0x0008000000000000ull, 0x0010000000000000ull,
                                0x0010000000000001ull, 0x3CA0000000000000ull /*2^-53*/, 0x3CA0000000000001ull,
                                0x3FE0000000000000ull, 0x3FF0000000000000ull, 0x3FF0000000000001ull,
                                0x3FF8000000000000ull, 0x3FFFFFFFFFFFFFFFull, 0x4000000000000000ull,
                                0x4340000000000000ull /*2^53*/, 0x4340000000000001ull, 0x7FE0000000000000ull,
                                0x7FEFFFFFFFFFFFFFull, 0x7FF0000000000000ull, 0x7FF0000000000001ull,
                                0x7FF8000000000000ull, 0x7FFFFFFFFFFFFFFFull, 0x3FEFFFFFFFFFFFFFull,
                                0x0000000100000000ull, 0x00000000FFFFFFFFull, 0x4330000000000000ull};
  std::vector<uint64_t> all;
  for (uint64_t x : base) {
    all.push_back(x);
    all.push_back(x | 0x8000000000000000ull);
  }
  return all;
}

inline uint64_t double_bits(double d) {
  uint64_t b;
  std::memcpy(&b, &d, 8);
  return b;
}
inline uint32_t float_bits(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}

// A random binary64 operand: an edge value, any bit pattern, a subnormal,
// or an exponent near 1's (where sums cancel and round).
inline uint64_t any64(std::mt19937_64& rng) {
  static const auto E = edges64();
  switch (rng() % 6) {
    case 0: return E[rng() % E.size()];
    case 1: return rng();
    case 2: return rng() & 0x800FFFFFFFFFFFFFull;  // subnormal
    default: return (rng() & 0x800FFFFFFFFFFFFFull) | ((1000 + rng() % 48) << 52);
  }
}

inline std::string hex(uint32_t v) {
  char b[16];
  std::snprintf(b, sizeof b, "0x%08x", v);
  return b;
}

}  // namespace qgpu::floattest
