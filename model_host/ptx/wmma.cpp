// Warp matrix operations: the arithmetic of one element (wmma.h).
#include "model_host/ptx/wmma.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "model_host/ptx/float_ref.h"

namespace qgpu::ptx::wmma {

bool valid_shape(const Shape& s) {
  return s.k == 16 && ((s.m == 16 && s.n == 16) || (s.m == 32 && s.n == 8) || (s.m == 8 && s.n == 32));
}

const float* f16_table() {
  static const std::vector<float> table = [] {
    std::vector<float> t(65536);
    for (uint32_t x = 0; x < 65536; ++x) t[x] = fref::as_float(fref::f32_from_f16(x));
    return t;
  }();
  return table.data();
}

// Each step is an f32 fused multiply-add .rn; the product of two halves is
// exact in f32 (22 significant bits, magnitude within 2^-48 .. 2^32), so
// the fused multiply-add is the rounded sum of that product and the
// accumulator, computed here as exactly that.  A NaN stays a NaN through
// every later step, so making it the canonical one at the end gives what
// canonical steps give.
uint32_t dot_f32(uint32_t k, const float* a, const float* b, uint32_t c) {
  float acc = fref::as_float(c);
  for (uint32_t i = 0; i < k; ++i) {
    const float p = a[i] * b[i];
    acc = p + acc;
  }
  return fref::canonical(fref::as_bits(acc));
}

void dot_f32_many(uint32_t k, const float* const* a, const float* const* b, const uint32_t* c, uint32_t* out,
                  uint32_t n) {
  // Eight chains in flight, four to a vector (GCC's vector extension: an
  // f32 multiply and an f32 add per lane, as dot_f32's).
  using v4 = float __attribute__((vector_size(16)));
  uint32_t j = 0;
  for (; j + 8 <= n; j += 8) {
    const float* const* x = a + j;
    const float* const* y = b + j;
    v4 lo = {fref::as_float(c[j]), fref::as_float(c[j + 1]), fref::as_float(c[j + 2]), fref::as_float(c[j + 3])};
    v4 hi = {fref::as_float(c[j + 4]), fref::as_float(c[j + 5]), fref::as_float(c[j + 6]), fref::as_float(c[j + 7])};
    for (uint32_t i = 0; i < k; ++i) {
      const v4 xl = {x[0][i], x[1][i], x[2][i], x[3][i]}, yl = {y[0][i], y[1][i], y[2][i], y[3][i]};
      const v4 xh = {x[4][i], x[5][i], x[6][i], x[7][i]}, yh = {y[4][i], y[5][i], y[6][i], y[7][i]};
      const v4 pl = xl * yl, ph = xh * yh;
      lo = pl + lo;
      hi = ph + hi;
    }
    for (uint32_t t = 0; t < 4; ++t) {
      out[j + t] = fref::canonical(fref::as_bits(lo[t]));
      out[j + 4 + t] = fref::canonical(fref::as_bits(hi[t]));
    }
  }
  for (; j < n; ++j) out[j] = dot_f32(k, a[j], b[j], c[j]);
}

uint32_t dot(uint32_t k, In t, bool satfinite, const uint8_t* a, const uint8_t* b, uint32_t c) {
  if (t == In::F16) {
    float x[64], y[64];
    for (uint32_t i = 0; i < k; ++i) {
      uint16_t u, v;
      std::memcpy(&u, a + 2 * i, 2);
      std::memcpy(&v, b + 2 * i, 2);
      x[i] = f16_table()[u], y[i] = f16_table()[v];
    }
    return dot_f32(k, x, y, c);
  }
  int64_t sum = 0;
  for (uint32_t i = 0; i < k; ++i)
    sum += t == In::S8 ? int64_t(int8_t(a[i])) * int8_t(b[i]) : int64_t(a[i]) * int64_t(b[i]);
  if (!satfinite) return c + uint32_t(sum);
  return uint32_t(int32_t(std::clamp<int64_t>(int64_t(int32_t(c)) + sum, INT32_MIN, INT32_MAX)));
}

}  // namespace qgpu::ptx::wmma
