// The sparse matrix product against the dense one, bit for bit: rows with
// few and many non-zeros (several in one lane), cancelling huge values,
// signed-zero and sparse inputs, non-finite weights and inputs, and rows
// dropped later; the rows it reports as written; the product through cuts
// (apply_cut) and what its bounds leave out; argmax against
// torch::argmax of the dense product; and sparse storage built from lazily
// zero-filled memory.
#include <gtest/gtest.h>

#include <sys/mman.h>
#include <unistd.h>

#include <cmath>
#include <algorithm>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "model_host/qwen/checkpoint.h"
#include "model_host/qwen/matrix.h"

namespace {

using qgpu::qwen::Matrix;
using qgpu::qwen::Support;

constexpr float kPool[] = {1.0f, -1.0f, 0.5f, -2.0f, 3.0f, 1e30f, -1e30f, 1e-30f, 0.1f, -0.3f};

bool same_bits(float a, float b) { return std::memcmp(&a, &b, 4) == 0; }

// The support of x[T, n]: its non-zero columns as Support::scan lists them,
// or (with `bitmap`) built column by column with a bitmap beside the list,
// from which the products take only the columns that hold weights.
Support support_of(const torch::Tensor& x, bool bitmap) {
  Support support;
  const int64_t T = x.size(0), n = x.size(1);
  if (!bitmap) {
    support.scan(x.data_ptr<float>(), T, n);
    return support;
  }
  support.clear(n);
  const float* p = x.data_ptr<float>();
  for (int64_t t = 0; t < T; ++t) {
    for (int64_t c = 0; c < n; ++c)
      if (p[t * n + c] != 0.0f || p[t * n + c] != p[t * n + c]) support.add(static_cast<int32_t>(c));
    support.end_vector();
  }
  return support;
}

// The lane scheme written out for one row, over its non-zero weights only
// (sparse storage never multiplies a zero weight, so with a non-finite input
// it differs from the dense product, where 0 * inf is NaN).
__attribute__((optimize("fp-contract=off"))) torch::Tensor reference_product(const torch::Tensor& w,
                                                                              const torch::Tensor& x_row) {
  auto wa = w.accessor<float, 2>();
  auto xa = x_row.accessor<float, 1>();
  torch::Tensor y = torch::empty({w.size(0)});
  for (int64_t r = 0; r < w.size(0); ++r) {
    float acc[32] = {};
    for (int64_t c = 0; c < w.size(1); ++c)
      if (wa[r][c] != 0.0f) acc[c % 32] += wa[r][c] * xa[c];
    for (int width = 16; width >= 1; width /= 2)
      for (int j = 0; j < width; ++j) acc[j] += acc[j + width];
    y[r] = acc[0];
  }
  return y;
}

// A random [out, in] weight: most rows short, some long (up to 60 non-zeros,
// past the scratch's inline slots), columns often in the same lane.
torch::Tensor random_weight(std::mt19937& rng, int64_t out, int64_t in) {
  torch::Tensor w = torch::zeros({out, in});
  auto a = w.accessor<float, 2>();
  for (int64_t r = 0; r < out; ++r) {
    const int n = rng() % 5 == 0 ? rng() % 60 : rng() % 6;
    for (int j = 0; j < n; ++j) {
      const int64_t c = rng() % 3 == 0 ? (rng() % 4) * 32 % in : rng() % in;
      a[r][c] = kPool[rng() % 10];
    }
  }
  return w;
}

// T random inputs; `density` of the entries drawn from the pool, the rest +-0.
torch::Tensor random_input(std::mt19937& rng, int64_t T, int64_t in, double density) {
  torch::Tensor x = torch::zeros({T, in});
  auto a = x.accessor<float, 2>();
  std::uniform_real_distribution<double> u(0, 1);
  for (int64_t t = 0; t < T; ++t)
    for (int64_t c = 0; c < in; ++c) a[t][c] = u(rng) < density ? kPool[rng() % 10] : (rng() % 2 ? -0.0f : 0.0f);
  return x;
}

// apply_cut against `expected(t)` under random cuts, many of them at or
// next to a row's own value: a computed row equals it bit for bit, and any
// other is +0 or below its cut, or never matters (cut +inf).  Returns the
// rows computed.
template <class Expected>
int64_t expect_cut_product(Matrix sparse, const torch::Tensor& x, Expected expected, const std::string& what) {
  if (!sparse.is_sparse()) return 0;
  const int64_t T = x.size(0), out = sparse.rows(), words = Support::words(out);
  const float inf = std::numeric_limits<float>::infinity();
  std::mt19937 rng(static_cast<uint32_t>(out * 7919 + x.size(1)));
  std::vector<torch::Tensor> e;
  for (int64_t t = 0; t < T; ++t) e.push_back(expected(t));
  std::vector<float> cut(out);
  for (int64_t r = 0; r < out; ++r) {
    const float v = e[rng() % T][r].item<float>();
    const float near[3] = {v, std::nextafter(v, inf), std::nextafter(v, -inf)};
    const float c = near[rng() % 3];
    switch (rng() % 5) {
      case 0: cut[r] = -inf; break;
      case 1: cut[r] = rng() % 4 == 0 ? inf : -91.0f; break;
      case 2: cut[r] = -static_cast<float>(rng() % 9) * 0.5f; break;
      default: cut[r] = std::isfinite(c) && c <= 0.0f ? c : -1.0f;
    }
  }
  sparse.prepare_cut(cut);
  int64_t n = 0;
  Matrix::Scratch scratch;
  for (const bool bitmap : {false, true}) {
    const Support support = support_of(x, bitmap);
    const std::string how = what + (bitmap ? " (support with a bitmap)" : "");
    const float unset = 12345.0f;
    std::vector<float> y(T * out, unset);
    std::vector<uint64_t> computed(T * words, 0);
    sparse.apply_cut(x.data_ptr<float>(), support, y.data(), scratch, computed.data());
    for (int64_t t = 0; t < T; ++t)
      for (int64_t r = 0; r < out; ++r) {
        const float v = y[t * out + r], ev = e[t][r].item<float>();
        if ((computed[t * words + r / 64] >> (r % 64)) & 1) {
          n += !bitmap;
          EXPECT_TRUE(same_bits(v, ev)) << how << ": cut product, token " << t << " row " << r << ": " << v << " vs " << ev;
        } else {
          // A row that never matters (cut +inf) is left out whatever its value.
          EXPECT_TRUE(same_bits(ev, 0.0f) || ev < cut[r] || cut[r] == inf)
              << how << ": token " << t << " row " << r << " (" << ev << ", cut " << cut[r] << ") was not computed";
          EXPECT_EQ(v, unset) << how << ": a row not computed was written";
        }
      }
    // The whole product through the index prepare_cut re-sorted, with the
    // same scratch, is unchanged.
    std::vector<float> full(T * out, unset);
    sparse.apply(x.data_ptr<float>(), support, full.data(), scratch);
    for (int64_t t = 0; t < T; ++t)
      for (int64_t r = 0; r < out; ++r)
        EXPECT_TRUE(same_bits(full[t * out + r], e[t][r].item<float>()))
            << how << ": product after prepare_cut, token " << t << " row " << r;
  }
  return n;
}

// y = W x by `sparse` against `expected(t)`, bit for bit; every non-zero row
// must be reported written.  Without a `written` map every row is written;
// with one, a row not reported is +0 and may keep what y held.
template <class Expected>
void expect_product(const Matrix& sparse, const torch::Tensor& x, Expected expected, const std::string& what) {
  const int64_t T = x.size(0), out = sparse.rows(), words = Support::words(out);
  Matrix::Scratch scratch;
  for (const bool bitmap : {false, true}) {
    const Support support = support_of(x, bitmap);
    const std::string how = what + (bitmap ? " (support with a bitmap)" : "");
    const float unset = 12345.0f;
    std::vector<float> y(T * out, unset), all(T * out, unset);
    std::vector<uint64_t> written(T * words, 0);
    sparse.apply(x.data_ptr<float>(), support, y.data(), scratch, written.data());
    sparse.apply(x.data_ptr<float>(), support, all.data(), scratch);
    for (int64_t t = 0; t < T; ++t) {
      const torch::Tensor e = expected(t);
      for (int64_t r = 0; r < out; ++r) {
        const float v = y[t * out + r], ev = e[r].item<float>();
        ASSERT_TRUE(same_bits(all[t * out + r], ev)) << how << ": token " << t << " row " << r << ": "
                                                     << all[t * out + r] << " vs " << ev << " (no written map)";
        if ((written[t * words + r / 64] >> (r % 64)) & 1) {
          ASSERT_TRUE(same_bits(v, ev)) << how << ": token " << t << " row " << r << ": " << v << " vs " << ev;
        } else {
          ASSERT_TRUE(same_bits(ev, 0.0f)) << how << ": row " << r << " (" << ev << ") not reported written";
          ASSERT_TRUE(v == unset || same_bits(v, 0.0f)) << how << ": row " << r << " not reported but written " << v;
        }
      }
    }
  }
  expect_cut_product(sparse, x, expected, what);
}
// Against the dense storage's product (lane_dot over every column).
void expect_same_product(const Matrix& sparse, const Matrix& dense, const torch::Tensor& x, const std::string& what) {
  Support support;
  support.scan(x.data_ptr<float>(), x.size(0), x.size(1));
  Matrix::Scratch scratch;
  torch::Tensor yd = torch::empty({x.size(0), dense.rows()});
  dense.apply(x.data_ptr<float>(), support, yd.data_ptr<float>(), scratch);
  expect_product(sparse, x, [&](int64_t t) { return yd[t]; }, what);
}

TEST(QwenMatrix, SparseEqualsDenseBitForBit) {
  std::mt19937 rng(42);
  for (int trial = 0; trial < 200; ++trial) {
    const int64_t out = 64 + rng() % 64, in = 16 + rng() % 300;
    const torch::Tensor w = random_weight(rng, out, in);
    Matrix sparse(w, true), dense(w, false);
    ASSERT_TRUE(sparse.is_sparse());
    ASSERT_FALSE(dense.is_sparse());
    // Dense inputs (most rows receive many products) and sparse ones (rows
    // receive 0, 1, 2, 3 or a few).
    const torch::Tensor x = random_input(rng, 1 + rng() % 4, in, trial % 2 ? 0.8 : 0.05);
    expect_same_product(sparse, dense, x, "trial " + std::to_string(trial));
    if (trial % 2 == 0) {  // dropping rows keeps the others, and the dropped ones read 0
      std::vector<bool> keep(out);
      for (int64_t r = 0; r < out; ++r) keep[r] = rng() % 2;
      sparse.drop_rows(keep);
      torch::Tensor kept = w.clone();
      for (int64_t r = 0; r < out; ++r)
        if (!keep[r]) kept[r].zero_();
      expect_same_product(sparse, Matrix(kept, false), x, "trial " + std::to_string(trial) + " after drop_rows");
    }
  }
}

// A column most rows read (a circuit's anchor) is streamed apart from the
// others: before, between and after them in column order, in the same lane
// as others, active or not, with rows that receive nothing else, one more
// product or many.
TEST(QwenMatrix, SparseEqualsDenseWithAHubColumn) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 120; ++trial) {
    const int64_t out = 64 + rng() % 200, in = 40 + rng() % 200;
    torch::Tensor w = random_weight(rng, out, in);
    const int64_t hub = trial % 3 == 0 ? 0 : trial % 3 == 1 ? in - 1 : rng() % in;
    auto a = w.accessor<float, 2>();
    for (int64_t r = 0; r < out; ++r)
      if (rng() % 8 != 0) a[r][hub] = kPool[rng() % 10];
    Matrix sparse(w, true), dense(w, false);
    torch::Tensor x = random_input(rng, 1 + rng() % 3, in, trial % 2 ? 0.5 : 0.03);
    for (int64_t t = 0; t < x.size(0); ++t)
      if (rng() % 4 != 0) x[t][hub] = kPool[rng() % 5];
    expect_same_product(sparse, dense, x, "trial " + std::to_string(trial));
    std::vector<bool> keep(out);
    for (int64_t r = 0; r < out; ++r) keep[r] = rng() % 3 != 0;
    sparse.drop_rows(keep);
    for (int64_t r = 0; r < out; ++r)
      if (!keep[r]) w[r].zero_();
    expect_same_product(sparse, Matrix(w, false), x, "trial " + std::to_string(trial) + " after drop_rows");
  }
}

// Sums whose order matters only just: weights and inputs on the 2^-4 grid
// and beside it (2^-5, 2^-6), with magnitudes from 2^12 to 2^19, so that a
// row's products are exact in any order below the sparse product's bound
// and round differently by lane order above it; rows of two to forty
// products, many in one lane, with and without a hub.  Every row must still
// equal the dense lane scheme bit for bit.
TEST(QwenMatrix, SumsNearTheExactnessBoundKeepTheLaneOrder) {
  std::mt19937 rng(11);
  auto near_bound = [&]() {
    const float magnitude = std::ldexp(1.0f, 12 + static_cast<int>(rng() % 8));
    const float fraction = std::ldexp(static_cast<float>(1 + rng() % 7), -4 - static_cast<int>(rng() % 3));
    const float v = rng() % 4 == 0 ? fraction : magnitude * (1 + rng() % 3) + fraction;
    return rng() % 2 ? -v : v;
  };
  int64_t order_sensitive = 0;
  for (int trial = 0; trial < 300; ++trial) {
    const int64_t out = 64 + rng() % 64, in = 96 + rng() % 64;
    torch::Tensor w = torch::zeros({out, in});
    auto a = w.accessor<float, 2>();
    const bool hub = trial % 2 == 0;
    for (int64_t r = 0; r < out; ++r) {
      if (hub) a[r][0] = rng() % 4 == 0 ? 0.0f : near_bound();
      const int n = 2 + rng() % 39;
      for (int j = 0; j < n; ++j) a[r][rng() % 3 == 0 ? 1 + (rng() % 3) * 32 : 1 + rng() % (in - 1)] = near_bound();
    }
    torch::Tensor x = torch::zeros({2, in});
    auto xa = x.accessor<float, 2>();
    for (int64_t t = 0; t < 2; ++t)
      for (int64_t c = 0; c < in; ++c)
        if (c == 0 ? hub : rng() % 3 != 0) xa[t][c] = std::ldexp(1.0f, -static_cast<int>(rng() % 3)) * (rng() % 2 ? 1 : -1);
    expect_same_product(Matrix(w, true), Matrix(w, false), x, "trial " + std::to_string(trial));
    // How many rows a plain column-order sum would get wrong: the test's reach.
    for (int64_t t = 0; t < 2; ++t) {
      const torch::Tensor lanes = reference_product(w, x[t]);
      for (int64_t r = 0; r < out; ++r) {
        float plain = 0.0f;
        for (int64_t c = 0; c < in; ++c) plain += a[r][c] * xa[t][c];
        order_sensitive += !same_bits(plain, lanes[r].item<float>());
      }
    }
  }
  EXPECT_GT(order_sensitive, 1000) << "the inputs should include many sums that depend on the order";
}

// A circuit's address decoder, as the keys of a GDN memory: row (h, a, b)
// of head h reads slot a of field A and slot b of field B (256 each) and
// the anchor (-384), so it is 128 where both agree with the address and at
// most -128 elsewhere, which SiLU turns into -0.  With the cut at -91 only
// the blocks of the agreeing rows are computed; the rows that fire are
// among them, exact; the other rows stay as they were.
TEST(QwenMatrix, CutProductComputesOnlyTheRowsThatMayReachTheCut) {
  constexpr int64_t kHeads = 4, kSlots = 8, kRows = kHeads * kSlots * kSlots, kIn = 1 + 2 * kSlots;
  torch::Tensor w = torch::zeros({kRows, kIn});
  auto a = w.accessor<float, 2>();
  for (int64_t r = 0; r < kRows; ++r) {
    a[r][0] = -384.0f;
    a[r][1 + (r / kSlots) % kSlots] = 256.0f;
    a[r][1 + kSlots + r % kSlots] = 256.0f;
  }
  Matrix sparse(w, true);
  sparse.prepare_cut(std::vector<float>(kRows, -91.0f));
  for (int64_t addr = 0; addr < kSlots * kSlots; ++addr) {
    torch::Tensor x = torch::zeros({1, kIn});
    x[0][0] = 1.0f;
    x[0][1 + addr / kSlots] = 1.0f;
    x[0][1 + kSlots + addr % kSlots] = 1.0f;
    const torch::Tensor expected = reference_product(w, x[0]);
    Support support;
    support.scan(x.data_ptr<float>(), 1, kIn);
    Matrix::Scratch scratch;
    std::vector<float> y(kRows, 7.0f);
    std::vector<uint64_t> computed(Support::words(kRows), 0);
    sparse.apply_cut(x.data_ptr<float>(), support, y.data(), scratch, computed.data());
    int64_t n = 0;
    for (int64_t r = 0; r < kRows; ++r) {
      const bool fires = (r % (kSlots * kSlots)) == addr;
      ASSERT_EQ(expected[r].item<float>(), fires ? 128.0f : (r / kSlots) % kSlots == addr / kSlots || r % kSlots == addr % kSlots ? -128.0f : -384.0f);
      if ((computed[r / 64] >> (r % 64)) & 1) {
        ++n;
        ASSERT_TRUE(same_bits(y[r], expected[r].item<float>())) << "address " << addr << " row " << r;
      } else {
        ASSERT_FALSE(fires) << "address " << addr << ": row " << r << " fires but was not computed";
        ASSERT_EQ(y[r], 7.0f);
      }
    }
    // One block of at most 16 rows per head.
    EXPECT_LE(n, kHeads * 16) << "address " << addr << ": the bounds should leave the other blocks out";
    EXPECT_GE(n, kHeads);
  }
  // The rows of a block beside the agreeing one but just reaching the cut
  // (-128 against a cut of -128) are computed too.
  sparse.prepare_cut(std::vector<float>(kRows, -128.0f));
  torch::Tensor x = torch::zeros({1, kIn});
  x[0][0] = 1.0f;
  x[0][1] = 1.0f;
  x[0][1 + kSlots] = 1.0f;
  Support support;
  support.scan(x.data_ptr<float>(), 1, kIn);
  Matrix::Scratch scratch;
  std::vector<float> y(kRows);
  std::vector<uint64_t> computed(Support::words(kRows), 0);
  sparse.apply_cut(x.data_ptr<float>(), support, y.data(), scratch, computed.data());
  for (int64_t r = 0; r < kRows; ++r)
    if ((r / kSlots) % kSlots == 0 || r % kSlots == 0)
      ASSERT_TRUE((computed[r / 64] >> (r % 64)) & 1) << "row " << r << " reaches the cut";
}

TEST(QwenMatrix, NonFiniteWeightsAndInputs) {
  std::mt19937 rng(7);
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  for (int trial = 0; trial < 40; ++trial) {
    const int64_t out = 50, in = 90;
    torch::Tensor w = random_weight(rng, out, in);
    if (trial % 2) w[rng() % out][rng() % in] = trial % 4 == 1 ? inf : nan;
    torch::Tensor x = random_input(rng, 2, in, 0.1);
    if (trial % 3 == 0) x[rng() % 2][rng() % in] = trial % 2 ? -inf : nan;
    expect_product(Matrix(w, true), x, [&](int64_t t) { return reference_product(w, x[t]); },
                   "trial " + std::to_string(trial));
  }
}

TEST(QwenMatrix, ArgmaxAsTorchArgmaxOfTheProduct) {
  std::mt19937 rng(3);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  Matrix::Scratch scratch;  // one for all heads and calls, as a workspace serves many
  for (int trial = 0; trial < 300; ++trial) {
    // An output head like the circuit's: rows that compare a few one-hot
    // fields, many rows without weights (their entry is +0), repeated rows
    // near and far (ties: the first wins), inputs that make every entry
    // negative, and inputs with two columns of a field set (then a block's
    // bound exceeds every row in it).
    // Every fourth head has several groups of blocks (1024 rows each).
    const int64_t out = trial % 4 == 1 ? 1500 + rng() % 2500 : 200 + rng() % 400, in = 40 + rng() % 40;
    torch::Tensor w = torch::zeros({out, in});
    auto a = w.accessor<float, 2>();
    const int64_t zero_rows = trial % 3 == 0 ? 0 : rng() % out;
    for (int64_t r = zero_rows; r < out; ++r) {
      if (rng() % 7 == 0) continue;
      if (r > zero_rows && rng() % 5 == 0) {
        w[r].copy_(w[rng() % 2 ? r - 1 : zero_rows + rng() % (r - zero_rows)]);
        continue;
      }
      for (int f = 0; f < 5; ++f) a[r][f * 8 + rng() % 8] = trial % 4 == 3 ? kPool[rng() % 10] : 16.0f;
    }
    Matrix head(w, true), unprepared(w, true);
    head.prepare_argmax();
    torch::Tensor x = torch::zeros({2, in});
    auto xa = x.accessor<float, 2>();
    for (int64_t t = 0; t < 2; ++t)
      for (int f = 0; f < 5; ++f) {
        xa[t][f * 8 + rng() % 8] = trial % 5 == 0 ? -1.0f : 1.0f;
        if (trial % 2) xa[t][f * 8 + rng() % 8] = 1.0f;
      }
    if (trial % 11 == 0) xa[1][rng() % in] = nan;
    const Support support = support_of(x, false), with_bitmap = support_of(x, true);
    for (int64_t t = 0; t < 2; ++t) {
      const int64_t expected = reference_product(w, x[t]).argmax().item<int64_t>();
      ASSERT_EQ(head.argmax(x.data_ptr<float>(), support, t, scratch), expected) << "trial " << trial << " token " << t;
      ASSERT_EQ(head.argmax(x.data_ptr<float>(), with_bitmap, t, scratch), expected)
          << "trial " << trial << " token " << t << " (support with a bitmap)";
      ASSERT_EQ(unprepared.argmax(x.data_ptr<float>(), support, t, scratch), expected) << "trial " << trial;
      if (std::isfinite(x[t].sum().item<float>()))  // the dense storage multiplies zero weights too
        ASSERT_EQ(Matrix(w, false).argmax(x.data_ptr<float>(), support, t, scratch), expected) << "trial " << trial;
    }
  }
}

TEST(QwenMatrix, ArgmaxOverRowsTheInputDoesNotReach) {
  // Rows [0, 100) read only column 0, which the input leaves at zero: their
  // blocks are not reached and hold +0, the largest entry when every row
  // the input reaches is negative, and the first of the largest when those
  // are +0 too.  The other rows read columns 1 and 2 (1 * 1 + s * 1).
  for (const float s : {-2.0f, -1.0f, 0.5f}) {
    const int64_t out = 300, in = 4;
    torch::Tensor w = torch::zeros({out, in});
    auto a = w.accessor<float, 2>();
    for (int64_t r = 0; r < out; ++r) {
      if (r < 100) {
        a[r][0] = 1.0f;
      } else {
        a[r][1] = 1.0f;
        a[r][2] = s;
      }
    }
    Matrix head(w, true);
    head.prepare_argmax();
    torch::Tensor x = torch::zeros({1, in});
    x[0][1] = 1.0f;
    x[0][2] = 1.0f;
    Support support;
    support.scan(x.data_ptr<float>(), 1, in);
    Matrix::Scratch scratch;
    const int64_t expected = reference_product(w, x[0]).argmax().item<int64_t>();
    EXPECT_EQ(expected, s > 0.0f ? 100 : 0);
    EXPECT_EQ(head.argmax(x.data_ptr<float>(), support, 0, scratch), expected) << "s = " << s;
  }
}

// Groups of blocks are bounded before their blocks; a block that lacks a
// column the rest of its group reads has weight 0 there, which the group's
// bound must count (else the group below is pruned wrongly).
TEST(QwenMatrix, GroupBoundsCountBlocksThatLackAColumn) {
  // Cut: the first `negative` of `out` rows read column 0 (-200), the other
  // 8 column 2 (+100); both columns set, every cut -91: those 8 reach it.
  auto expect_positive_rows_computed = [](int64_t out, int64_t negative, const std::string& what) {
    torch::Tensor w = torch::zeros({out, 3});
    for (int64_t r = 0; r < out; ++r) {
      if (r < negative) w[r][0] = -200.0f;
      else w[r][2] = 100.0f;
    }
    Matrix m(w, true);
    m.prepare_cut(std::vector<float>(out, -91.0f));
    torch::Tensor x = torch::zeros({1, 3});
    x[0][0] = 1.0f;
    x[0][2] = 1.0f;
    Support support;
    support.scan(x.data_ptr<float>(), 1, 3);
    Matrix::Scratch scratch;
    std::vector<float> y(out, 0.0f);
    std::vector<uint64_t> computed(Support::words(out), 0);
    m.apply_cut(x.data_ptr<float>(), support, y.data(), scratch, computed.data());
    for (int64_t r = negative; r < out; ++r) {
      EXPECT_TRUE((computed[r / 64] >> (r % 64)) & 1) << "row " << r << " reaches its cut" << what;
      EXPECT_EQ(y[r], 100.0f);
    }
  };
  // One group of 8 blocks, no hub (56 rows < kHubRows).
  expect_positive_rows_computed(64, 56, "");
  // Column 0 is a hub (112 rows): rows 112..119 are a block without hub
  // weights in a group of blocks with them.
  expect_positive_rows_computed(120, 112, " (hub case)");
  {  // Argmax: two groups of 1024 rows.  Group 0: column 0 at -1, but its
     // last block reads column 1 alone (+0); group 1: column 0 at -0.5.
    const int64_t out = 2048;
    torch::Tensor w = torch::zeros({out, 2});
    for (int64_t r = 0; r < out; ++r) {
      if (r < 960) w[r][0] = -1.0f;
      else if (r < 1024) w[r][1] = 1.0f;
      else w[r][0] = -0.5f;
    }
    Matrix head(w, true);
    head.prepare_argmax();
    torch::Tensor x = torch::zeros({1, 2});
    x[0][0] = 1.0f;
    Support support;
    support.scan(x.data_ptr<float>(), 1, 2);
    Matrix::Scratch scratch;
    EXPECT_EQ(reference_product(w, x[0]).argmax().item<int64_t>(), 960);
    EXPECT_EQ(head.argmax(x.data_ptr<float>(), support, 0, scratch), 960);
  }
}

TEST(QwenMatrix, SupportListsNonZeroColumnsAscending) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<float> x = {0.0f, -0.0f, 2.0f, 0.0f, nan, -1.0f, 0.0f, 0.0f, 3.0f, -0.0f};
  Support s;
  s.scan(x.data(), 2, 5);
  ASSERT_EQ(s.vectors(), 2);
  EXPECT_EQ(std::vector<int32_t>(s.begin(0), s.end(0)), (std::vector<int32_t>{2, 4}));
  EXPECT_EQ(std::vector<int32_t>(s.begin(1), s.end(1)), (std::vector<int32_t>{0, 3}));
  std::vector<uint64_t> bits(2 * Support::words(130), 0);
  for (int c : {0, 63, 64, 129}) bits[c / 64] |= uint64_t{1} << (c % 64);
  bits[Support::words(130) + 1] = 1;  // vector 1: column 64
  s.assign_bits(bits.data(), 2, 130);
  EXPECT_EQ(std::vector<int32_t>(s.begin(0), s.end(0)), (std::vector<int32_t>{0, 63, 64, 129}));
  EXPECT_EQ(std::vector<int32_t>(s.begin(1), s.end(1)), (std::vector<int32_t>{64}));
  // The sum over listed indices is lane_dot's.
  std::mt19937 rng(5);
  for (int trial = 0; trial < 100; ++trial) {
    const int64_t n = 1 + rng() % 200;
    torch::Tensor a = random_input(rng, 1, n, 0.2), b = random_input(rng, 1, n, 1.0);
    Support support;
    support.scan(a.data_ptr<float>(), 1, n);
    const float full = qgpu::qwen::lane_dot(a.data_ptr<float>(), b.data_ptr<float>(), n);
    const float listed = qgpu::qwen::lane_dot(a.data_ptr<float>(), b.data_ptr<float>(), support.begin(0), support.end(0));
    ASSERT_TRUE(same_bits(full, listed)) << full << " vs " << listed;
  }
}

// all_finite against std::isfinite, for every length up to 70 (the vector
// loop's body and its tail) and every special value at every position.
TEST(QwenMatrix, AllFiniteFindsEveryInfinityAndNaN) {
  using L = std::numeric_limits<float>;
  const std::vector<float> special = {L::infinity(), -L::infinity(), L::quiet_NaN(), -L::quiet_NaN(),
                                      L::signaling_NaN(), L::max(), -L::max(), L::denorm_min(), -0.0f};
  EXPECT_TRUE(qgpu::qwen::all_finite(nullptr, 0));
  for (int64_t n = 1; n <= 70; ++n)
    for (int64_t at = 0; at < n; ++at)
      for (float v : special) {
        std::vector<float> x(n, 1.5f);
        x[at] = v;
        ASSERT_EQ(qgpu::qwen::all_finite(x.data(), n), std::isfinite(v)) << "n " << n << ", " << v << " at " << at;
      }
}

// The norm's squared sum kept as the residual changes (Model's body): when
// every entry is an integer below 2^12 in magnitude and the squares sum
// below 2^24, the lane scheme gives exactly that integer sum, whatever the
// entries, so a sum kept term by term is the one lane_dot would give.
TEST(QwenMatrix, SquaredSumsOfSmallIntegersAreExactInTheLaneScheme) {
  std::mt19937 rng(5);
  const int64_t n = 2048, words = Support::words(n);
  for (int trial = 0; trial < 2000; ++trial) {
    std::vector<float> x(n, 0.0f);
    std::vector<uint64_t> bits(words, 0);
    // Up to the bound: a few large entries (a circuit's anchors) and many
    // small ones, in random places, until the next would pass 2^24.
    const int64_t limit = (trial % 3 == 0) ? (int64_t{1} << 23) : (int64_t{1} << 24) - 1;
    int64_t exact = 0;
    const int large = trial % 5;
    for (int k = 0; k < 1500; ++k) {
      const int magnitude = k < large ? 4095 - static_cast<int>(rng() % 64) : 1 + static_cast<int>(rng() % (trial % 2 ? 64 : 600));
      const int64_t c = static_cast<int64_t>(rng() % n);
      const int64_t old = static_cast<int64_t>(x[c]);
      const int64_t next = exact - old * old + int64_t{magnitude} * magnitude;
      if (next > limit) continue;
      exact = next;
      x[c] = (rng() & 1) ? static_cast<float>(magnitude) : -static_cast<float>(magnitude);
      bits[c / 64] |= uint64_t{1} << (c % 64);
    }
    const float kept = static_cast<float>(exact);
    ASSERT_TRUE(same_bits(qgpu::qwen::lane_dot(x.data(), x.data(), bits.data(), words), kept)) << "trial " << trial;
    ASSERT_TRUE(same_bits(qgpu::qwen::lane_dot(x.data(), x.data(), n), kept)) << "trial " << trial;
  }
  // Past the bound the lane scheme rounds: 2^24 + 1 is not a float.
  std::vector<float> x = {4096.0f, 1.0f};
  EXPECT_EQ(qgpu::qwen::lane_dot(x.data(), x.data(), 2), 16777216.0f);
}

// Sparse storage skips pages of lazily zero-filled memory that were never
// written, and still finds values on pages that were: written and cleared
// again, only read (then the kernel maps a zero page), or written.
TEST(QwenMatrix, SparseStorageFromLazilyZeroFilledMemory) {
  const int64_t page_floats = sysconf(_SC_PAGESIZE) / 4;
  const int64_t out = 300, in = 2 * page_floats + 7;  // rows straddle pages
  torch::Tensor lazy = qgpu::qwen::lazy_zeros({out, in});
  auto a = lazy.accessor<float, 2>();
  a[0][0] = 1.0f;
  a[5][in - 1] = -2.0f;
  a[100][page_floats] = 3.0f;
  a[101][3] = 4.0f;
  a[101][3] = 0.0f;                           // written, then zero again
  volatile float sink = a[200][page_floats];  // read only
  (void)sink;
  a[299][in / 2] = 5.0f;
  a[299][in / 2 + 1] = 6.0f;
  // Building the matrix brings no page in: the untouched ones stay absent.
  const size_t page = sysconf(_SC_PAGESIZE), bytes = out * in * 4;
  auto resident = [&] {
    std::vector<unsigned char> in_core((bytes + page - 1) / page);
    EXPECT_EQ(mincore(lazy.data_ptr(), bytes, in_core.data()), 0);
    return std::count_if(in_core.begin(), in_core.end(), [](unsigned char c) { return c & 1; });
  };
  const auto before = resident();
  Matrix sparse(lazy, true);
  EXPECT_EQ(resident(), before);
  EXPECT_LT(before, static_cast<long>(bytes / page / 4));
  EXPECT_EQ(sparse.stored(), 5);
  EXPECT_EQ(sparse.nonzero_rows(), 4);
  std::mt19937 rng(9);
  expect_same_product(sparse, Matrix(lazy.clone(), false), random_input(rng, 2, in, 0.5), "lazy");
}

}  // namespace
