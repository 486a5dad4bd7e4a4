// Rounding to a 16-bit binary floating-point format, written from IEEE 754's
// definition (the exact value, then one rounding), for the device tests of
// cuda_fp16.h and cuda_bf16.h: it shares nothing with either header.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

namespace qgpu::test {

using u128 = unsigned __int128;
enum Mode { kNearest, kTowardZero, kDown, kUp };

// (-1)^neg * m * 2^e (m < 2^120) rounded once in `mode` to the format with
// kFrac fraction bits and 15 - kFrac exponent bits: binary16 is
// ref_round16<10>, bfloat16 ref_round16<7>.
template <int kFrac>
uint16_t ref_round16(bool neg, u128 m, int e, Mode mode) {
  constexpr int kField = (1 << (15 - kFrac)) - 1;  // the exponent field of infinities and NaNs
  constexpr int kBias = kField / 2, kMinExp = 1 - kBias;
  const uint16_t sign = neg ? 0x8000 : 0;
  if (m == 0) return sign;
  int top = 127;
  while (!(m >> top & 1)) --top;
  const int exponent = top + e;  // the value lies in [2^exponent, 2^(exponent+1))
  auto overflow = [&] {
    const bool to_inf = mode == kNearest || (mode == kDown && neg) || (mode == kUp && !neg);
    return uint16_t(sign | ((kField << kFrac) - (to_inf ? 0 : 1)));
  };
  if (exponent > kBias) return overflow();
  int quantum = std::max(exponent, kMinExp) - kFrac;  // the exponent of the last place kept
  const int shift = quantum - e;
  u128 n;
  bool half = false, sticky = false;
  if (shift <= 0) {
    n = m << -shift;
  } else if (shift > top + 1) {
    n = 0, sticky = true;
  } else {
    n = m >> shift;
    u128 rest = m & ((u128(1) << shift) - 1), halfway = u128(1) << (shift - 1);
    half = rest >= halfway;
    sticky = (rest & (halfway - 1)) != 0;
  }
  const bool inexact = half || sticky;
  const bool up = mode == kNearest ? half && (sticky || (n & 1)) : mode == kDown ? neg && inexact
                  : mode == kUp    ? !neg && inexact
                                   : false;
  if (up) ++n;
  if (n == u128(2) << kFrac) n = u128(1) << kFrac, ++quantum;  // carried into the next binade
  if (n < (u128(1) << kFrac)) return uint16_t(sign | unsigned(n));  // subnormal
  const int biased = quantum + kFrac + kBias;
  if (biased >= kField) return overflow();
  return uint16_t(sign | biased << kFrac | unsigned(n - (u128(1) << kFrac)));
}

// The value of a word of that format (NaN, infinities, subnormals).
template <int kFrac>
double value16(uint16_t h) {
  constexpr int kField = (1 << (15 - kFrac)) - 1, kBias = kField / 2;
  const int field = h >> kFrac & kField, frac = h & ((1 << kFrac) - 1);
  double v = field == kField ? (frac ? std::numeric_limits<double>::quiet_NaN() : INFINITY)
             : field == 0    ? std::ldexp(frac, 1 - kBias - kFrac)
                             : std::ldexp((1 << kFrac) + frac, field - kBias - kFrac);
  return h & 0x8000 ? -v : v;
}

// A finite word of that format as (-1)^neg * m * 2^e (m < 2^(kFrac+1)).
template <int kFrac>
void parts16(uint16_t h, bool& neg, uint64_t& m, int& e) {
  constexpr int kField = (1 << (15 - kFrac)) - 1, kBias = kField / 2;
  const int field = h >> kFrac & kField;
  neg = h & 0x8000;
  m = field ? (1u << kFrac) + (h & ((1u << kFrac) - 1)) : h & ((1u << kFrac) - 1);
  e = field ? field - kBias - kFrac : 1 - kBias - kFrac;
}

// A double rounded to that format (specials kept; a NaN is 0x7FFF).
template <int kFrac>
uint16_t from_double16(double d, Mode mode) {
  constexpr uint16_t kInf = uint16_t(((1 << (15 - kFrac)) - 1) << kFrac);
  if (std::isnan(d)) return 0x7FFF;
  if (std::isinf(d)) return d < 0 ? uint16_t(0x8000 | kInf) : kInf;
  if (d == 0) return std::signbit(d) ? 0x8000 : 0;
  int e;
  double frac = std::frexp(std::fabs(d), &e);
  return ref_round16<kFrac>(d < 0, u128(uint64_t(std::ldexp(frac, 53))), e - 53, mode);
}

// An integer rounded to that format.
template <int kFrac, typename Int>
uint16_t from_int16(Int v, Mode mode) {
  const bool neg = v < 0;
  const u128 m = neg ? u128(-(__int128)v) : u128(v);
  return ref_round16<kFrac>(neg, m, 0, mode);
}

// A word of that format to an integer type, rounded by `mode`, saturated, a
// NaN giving 0.
template <int kFrac, typename Int>
Int to_int16(uint16_t h, Mode mode) {
  double v = value16<kFrac>(h);
  if (std::isnan(v)) return 0;
  v = mode == kNearest ? std::nearbyint(v) : mode == kTowardZero ? std::trunc(v) : mode == kDown ? std::floor(v)
                                                                                              : std::ceil(v);
  if (v <= double(std::numeric_limits<Int>::min())) return std::numeric_limits<Int>::min();
  if (v >= double(std::numeric_limits<Int>::max())) return std::numeric_limits<Int>::max();
  return Int(v);
}

}  // namespace qgpu::test
