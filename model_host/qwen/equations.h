// The scalar equations of Qwen3.5 exactly as the runtime's executors compute
// them in fp32 (libqgpu_qwen is built without fused multiply-adds or
// reassociation).  Written once: both executors use them, and the circuit
// compiler uses them to choose constants whose fp32 results are exact.
#pragma once

#include <cmath>
#include <cstdint>

namespace qgpu::qwen {

// sigmoid(x) = 1 / (1 + exp(-x)).  Where the result is a constant it is
// given without the exp: for x > 20, exp(-x) < 2^-28 and 1 + exp(-x) rounds
// to 1; for x < -90, exp(-x) > 3e38 overflows to inf and 1 / inf is 0; and
// sigmoid(+-0) = 1 / (1 + 1) = 0.5.  Compiled circuits saturate their gates,
// so the exp is rarely needed, and the constants are selected without branches.
inline bool sigmoid_is_constant(float x) { return x > 20.0f || x < -90.0f || x == 0.0f; }
inline float sigmoid_constant(float x) { return x > 20.0f ? 1.0f : x < -90.0f ? 0.0f : 0.5f; }
inline float sigmoid(float x) {
  if (__builtin_expect(sigmoid_is_constant(x), 1)) return sigmoid_constant(x);
  return 1.0f / (1.0f + std::exp(-x));
}
// silu(x) = x * sigmoid(x)
inline float silu(float x) { return x * sigmoid(x); }
// softplus as torch computes it (beta 1, threshold 20): x above 20, else log1p(exp(x)).
inline float softplus(float x) { return x > 20.0f ? x : std::log1p(std::exp(x)); }
// 1 / sqrt(mean(x^2) + eps) from the sum of squares of n entries: the scale
// of every RMSNorm (the decoder's, zero-centred, and the gated head norm).
inline float rms_scale(float sum_squares, int64_t n, float eps) {
  return 1.0f / std::sqrt(sum_squares / static_cast<float>(n) + eps);
}
// The GDN's l2norm scale of a key or query whose squared sum is `sum_squares`
// (eps 1e-6 as in Qwen3.5), and the query's 1 / sqrt(head dim).
inline float l2norm_scale(float sum_squares) { return 1.0f / std::sqrt(sum_squares + 1e-6f); }
inline float query_scale(int64_t head_dim) { return 1.0f / std::sqrt(static_cast<float>(head_dim)); }

}  // namespace qgpu::qwen
