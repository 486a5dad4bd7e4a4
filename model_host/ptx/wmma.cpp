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

namespace {
using v8 = float __attribute__((vector_size(32)));
using v8i = int32_t __attribute__((vector_size(32)));

// Rows r0 and r0 + 1 of D (NV vectors of eight columns each): for each step
// i of k, the row's A element times B's row i (bt: B transposed), added to
// the row's accumulators; the four or eight chains are independent.
template <typename V, typename S, uint32_t NV>
[[gnu::always_inline]] inline void tile_rows(uint32_t K, const S* a, const V* bt, V (&acc)[2][NV]) {
  for (uint32_t i = 0; i < K; ++i) {
    const S x0 = a[i], x1 = a[K + i];
    for (uint32_t v = 0; v < NV; ++v) {
      const V y = bt[i * NV + v];
      const V p0 = x0 * y, p1 = x1 * y;  // f16: exact (dot_f32)
      acc[0][v] = p0 + acc[0][v];
      acc[1][v] = p1 + acc[1][v];
    }
  }
}

template <uint32_t NV>
[[gnu::always_inline]] inline void tile_n(uint32_t M, uint32_t K, In t, bool satfinite, const uint8_t* area, const uint32_t* c, uint32_t* d) {
  constexpr uint32_t N = NV * 8;
  if (t == In::F16) {
    const float* half = f16_table();
    float a[512], btf[512];  // A [M][K], B transposed [K][N]
    uint16_t h[1024];
    std::memcpy(h, area, 2 * (M + N) * K);
    for (uint32_t i = 0; i < M * K; ++i) a[i] = half[h[i]];
    for (uint32_t col = 0; col < N; ++col)
      for (uint32_t i = 0; i < K; ++i) btf[i * N + col] = half[h[M * K + col * K + i]];
    v8 bt[64];
    std::memcpy(bt, btf, 4 * K * N);
    for (uint32_t r = 0; r < M; r += 2) {
      v8 acc[2][NV];
      std::memcpy(acc, c + r * N, 4 * 2 * N);
      tile_rows<v8, float, NV>(K, a + r * K, bt, acc);
      uint32_t out[2 * N];
      std::memcpy(out, acc, 4 * 2 * N);
      for (uint32_t j = 0; j < 2 * N; ++j) d[r * N + j] = fref::canonical(out[j]);
    }
    return;
  }
  // s8/u8: the products' sum is exact in 32 bits (at most 16 * 255 * 255).
  int32_t a[512], btf[512];
  const bool s8 = t == In::S8;
  auto value = [&](uint32_t at) { return s8 ? int32_t(int8_t(area[at])) : int32_t(area[at]); };
  for (uint32_t i = 0; i < M * K; ++i) a[i] = value(i);
  for (uint32_t col = 0; col < N; ++col)
    for (uint32_t i = 0; i < K; ++i) btf[i * N + col] = value(M * K + col * K + i);
  v8i bt[64];
  std::memcpy(bt, btf, 4 * K * N);
  for (uint32_t r = 0; r < M; r += 2) {
    v8i acc[2][NV] = {};
    tile_rows<v8i, int32_t, NV>(K, a + r * K, bt, acc);
    int32_t sum[2 * N];
    std::memcpy(sum, acc, 4 * 2 * N);
    for (uint32_t j = 0; j < 2 * N; ++j) {
      const uint32_t cv = c[r * N + j];
      d[r * N + j] = !satfinite ? cv + uint32_t(sum[j])
                                : uint32_t(int32_t(std::clamp<int64_t>(int64_t(int32_t(cv)) + sum[j], INT32_MIN, INT32_MAX)));
    }
  }
}
}  // namespace

// Compiled for AVX2 too where the host has it (eight lanes to a vector
// instruction instead of four); the same operations either way.
[[gnu::target_clones("avx2", "default")]] void tile(const Shape& s, In t, bool satfinite, const uint8_t* area,
                                                    const uint32_t* c, uint32_t* d) {
  switch (s.n) {
    case 8: return tile_n<1>(s.m, s.k, t, satfinite, area, c, d);
    case 16: return tile_n<2>(s.m, s.k, t, satfinite, area, c, d);
    default: return tile_n<4>(s.m, s.k, t, satfinite, area, c, d);
  }
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
