// The sparse matrix product against the dense one, bit for bit, on rows with
// few non-zeros where the summation plans matter: several non-zeros in one
// lane, cancelling huge values, signed-zero inputs, and rows dropped later.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "model_host/qwen/matrix.h"

namespace {

using qgpu::qwen::Matrix;

TEST(QwenMatrix, SparseEqualsDenseBitForBitOnShortRows) {
  std::mt19937 rng(42);
  const float pool[] = {1.0f, -1.0f, 0.5f, -2.0f, 3.0f, 1e30f, -1e30f, 1e-30f, 0.1f, -0.3f};
  int64_t checked = 0;
  for (int trial = 0; trial < 300; ++trial) {
    const int64_t out = 64, in = 16 + rng() % 300;
    torch::Tensor w = torch::zeros({out, in});
    auto a = w.accessor<float, 2>();
    for (int64_t r = 0; r < out; ++r) {
      int n = rng() % 5 == 0 ? rng() % 40 : rng() % 6;
      for (int j = 0; j < n; ++j) {
        int64_t c = rng() % 3 == 0 ? (rng() % 4) * 32 % in : rng() % in;  // often the same lane
        a[r][c] = pool[rng() % 10];
      }
    }
    const int64_t T = 1 + rng() % 4;
    torch::Tensor x = torch::zeros({T, in});
    auto xa = x.accessor<float, 2>();
    for (int64_t t = 0; t < T; ++t)
      for (int64_t c = 0; c < in; ++c) {
        int k = rng() % 14;
        xa[t][c] = k < 10 ? pool[k] : (k < 12 ? -0.0f : 0.0f);
      }
    Matrix sparse(w, true), dense(w, false);
    std::vector<float> ys(T * out), yd(T * out);
    qgpu::qwen::Support support;
    support.scan(x.data_ptr<float>(), T, in);
    Matrix::Scratch scratch;
    sparse.apply(x.data_ptr<float>(), support, ys.data(), scratch);
    dense.apply(x.data_ptr<float>(), support, yd.data(), scratch);
    for (int64_t i = 0; i < T * out; ++i, ++checked)
      ASSERT_EQ(std::memcmp(&ys[i], &yd[i], 4), 0) << "trial " << trial << " output " << i << ": " << ys[i]
                                                    << " vs " << yd[i];
    if (trial % 2 == 0) {  // dropping rows keeps the remaining rows' plans right
      std::vector<bool> keep(out);
      for (int64_t r = 0; r < out; ++r) keep[r] = rng() % 2;
      sparse.drop_rows(keep);
      sparse.apply(x.data_ptr<float>(), support, ys.data(), scratch);
      for (int64_t t = 0; t < T; ++t)
        for (int64_t r = 0; r < out; ++r, ++checked) {
          float e = keep[r] ? yd[t * out + r] : 0.0f;
          ASSERT_EQ(std::memcmp(&ys[t * out + r], &e, 4), 0) << "trial " << trial << " after drop_rows";
        }
    }
  }
  EXPECT_GT(checked, 50000);
}

}  // namespace
