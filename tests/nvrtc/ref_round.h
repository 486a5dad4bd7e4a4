// Rounding to a 16-bit binary floating-point format, written from IEEE 754's
// definition (the exact value, then one rounding), for the device tests of
// cuda_fp16.h and cuda_bf16.h: it shares nothing with either header.
#pragma once

#include <algorithm>
#include <cstdint>

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

}  // namespace qgpu::test
