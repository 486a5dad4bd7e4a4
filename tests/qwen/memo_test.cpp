// SublayerMemo: keys by column and exact value bits, outputs recorded without
// their +0 rows and written back as they were, replacement of the oldest
// entry, and the limits on what is kept.
#include "model_host/qwen/memo.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

using qgpu::qwen::SublayerMemo;

namespace {

std::vector<float> input(std::initializer_list<std::pair<int, float>> at) {
  std::vector<float> x(512, 0.0f);
  for (auto [c, v] : at) x[c] = v;
  return x;
}

TEST(SublayerMemo, FindsAnInputOnlyWithTheSameColumnsAndBits) {
  SublayerMemo memo(4);
  const std::vector<int32_t> cols = {3, 70, 200};
  auto x = input({{3, 1.0f}, {70, -2.5f}, {200, 64.0f}});
  ASSERT_TRUE(memo.set_key(cols.data(), cols.data() + cols.size(), x.data()));
  EXPECT_EQ(memo.find(), nullptr);
  SublayerMemo::Output* out = memo.insert();
  ASSERT_NE(out, nullptr);
  out->values.push_back(7.0f);
  ASSERT_TRUE(memo.set_key(cols.data(), cols.data() + cols.size(), x.data()));
  ASSERT_NE(memo.find(), nullptr);
  EXPECT_EQ(memo.find()->values, std::vector<float>{7.0f});
  // One ulp off, another column, one column fewer: other inputs.
  auto y = x;
  y[70] = std::nextafter(-2.5f, 0.0f);
  ASSERT_TRUE(memo.set_key(cols.data(), cols.data() + cols.size(), y.data()));
  EXPECT_EQ(memo.find(), nullptr);
  const std::vector<int32_t> other = {3, 71, 200};
  auto z = input({{3, 1.0f}, {71, -2.5f}, {200, 64.0f}});
  ASSERT_TRUE(memo.set_key(other.data(), other.data() + other.size(), z.data()));
  EXPECT_EQ(memo.find(), nullptr);
  ASSERT_TRUE(memo.set_key(cols.data(), cols.data() + 2, x.data()));
  EXPECT_EQ(memo.find(), nullptr);
  EXPECT_EQ(memo.hits(), 2);
  EXPECT_EQ(memo.misses(), 4);
}

TEST(SublayerMemo, RecordsTheRowsThatAreNotZeroAndWritesThemBack) {
  // Two sections: 130 rows with a bitmap of 3 words, then 64 rows.
  std::vector<float> y(130, 99.0f), w(64, 99.0f);
  std::vector<uint64_t> bits(3, 0), wbits(1, 0);
  auto set = [](std::vector<uint64_t>& b, std::vector<float>& v, int r, float x) {
    b[r / 64] |= uint64_t{1} << (r % 64);
    v[r] = x;
  };
  set(bits, y, 0, 1.5f);
  set(bits, y, 65, 0.0f);  // written +0: left out
  set(bits, y, 129, -3.0f);
  set(bits, y, 100, NAN);  // not zero
  set(wbits, w, 5, 0.25f);
  SublayerMemo::Output out;
  ASSERT_TRUE(SublayerMemo::record(out, bits.data(), 3, y.data()));
  ASSERT_TRUE(SublayerMemo::record(out, wbits.data(), 1, w.data()));
  out.values.push_back(42.0f);  // a dense tail
  EXPECT_EQ(out.values.size(), 5u);

  std::vector<float> y2(130, -1.0f), w2(64, -1.0f);
  std::vector<uint64_t> bits2(3, 0), wbits2(1, 0);
  size_t v = 0;
  SublayerMemo::replay(out, 0, bits2.data(), y2.data(), v);
  SublayerMemo::replay(out, 1, wbits2.data(), w2.data(), v);
  EXPECT_EQ(v, 4u);
  EXPECT_EQ(out.values[v], 42.0f);
  std::vector<uint64_t> expected = bits;
  expected[1] &= ~(uint64_t{1} << 1);  // row 65
  EXPECT_EQ(bits2, expected);
  EXPECT_EQ(wbits2, wbits);
  EXPECT_EQ(y2[0], 1.5f);
  EXPECT_EQ(y2[129], -3.0f);
  EXPECT_TRUE(std::isnan(y2[100]));
  EXPECT_EQ(y2[65], -1.0f);  // not written
  EXPECT_EQ(w2[5], 0.25f);
  int written = 0;
  for (float f : y2) written += f != -1.0f;
  EXPECT_EQ(written, 3);
}

TEST(SublayerMemo, ReplacesTheOldestEntryWhenFull) {
  SublayerMemo memo(3);
  const int32_t col = 10;
  auto key = [&](float v) {
    auto x = input({{col, v}});
    EXPECT_TRUE(memo.set_key(&col, &col + 1, x.data()));
  };
  for (int i = 0; i < 4; ++i) {
    key(static_cast<float>(i + 1));
    memo.insert()->values.push_back(static_cast<float>(10 * (i + 1)));
  }
  key(1.0f);
  EXPECT_EQ(memo.find(), nullptr);  // replaced by the fourth
  for (int i = 1; i < 4; ++i) {
    key(static_cast<float>(i + 1));
    const SublayerMemo::Output* out = memo.find();
    ASSERT_NE(out, nullptr) << i;
    EXPECT_EQ(out->values, std::vector<float>{static_cast<float>(10 * (i + 1))});
  }
  // An entry forgotten (its output too large) is not found.
  key(9.0f);
  memo.insert();
  memo.forget_last();
  key(9.0f);
  EXPECT_EQ(memo.find(), nullptr);
}

// Many replacements through a small table: every entry held is found with
// its own output, and every entry replaced is gone (the table's deletions
// keep each probe run whole).
TEST(SublayerMemo, FindsEveryHeldEntryThroughManyReplacements) {
  constexpr int kCapacity = 16;
  SublayerMemo memo(kCapacity);
  const int32_t cols[2] = {3, 200};
  auto key = [&](int i) {
    auto x = input({{3, static_cast<float>(i % 37 + 1)}, {200, static_cast<float>(i / 37 + 1)}});
    ASSERT_TRUE(memo.set_key(cols, cols + 2, x.data()));
  };
  for (int i = 0; i < 2000; ++i) {
    key(i);
    SublayerMemo::Output* rec = memo.insert();
    ASSERT_NE(rec, nullptr) << i;
    rec->values.push_back(static_cast<float>(i));
    for (int j = std::max(0, i - kCapacity + 1); j <= i; ++j) {
      key(j);
      const SublayerMemo::Output* out = memo.find();
      ASSERT_NE(out, nullptr) << "entry " << j << " after inserting " << i;
      EXPECT_EQ(out->values, std::vector<float>{static_cast<float>(j)});
    }
    if (i >= kCapacity) {
      key(i - kCapacity);
      EXPECT_EQ(memo.find(), nullptr) << "entry " << i - kCapacity << " after inserting " << i;
    }
  }
}

TEST(SublayerMemo, AMemoWhoseInputsDoNotRecurRecordsOneMissInSixteen) {
  SublayerMemo memo(1024);
  const int32_t col = 0;
  auto miss = [&](int i) {
    auto x = input({{col, static_cast<float>(i + 1)}});
    EXPECT_TRUE(memo.set_key(&col, &col + 1, x.data()));
    EXPECT_EQ(memo.find(), nullptr);
    return memo.insert() != nullptr;
  };
  int recorded = 0;
  for (int i = 0; i < SublayerMemo::kWindow; ++i) recorded += miss(i);
  EXPECT_EQ(recorded, SublayerMemo::kWindow - 1);  // warm until the window's last lookup finds it cold
  recorded = 0;
  for (int i = 0; i < 4 * SublayerMemo::kColdStride; ++i) recorded += miss(1000 + i);
  EXPECT_EQ(recorded, 4);
  // Inputs that recur warm it again: a window with enough hits.
  for (int i = 0; i < SublayerMemo::kWindow; ++i) {
    auto x = input({{col, 1.0f}});
    memo.set_key(&col, &col + 1, x.data());
    EXPECT_NE(memo.find(), nullptr);
  }
  EXPECT_TRUE(miss(5000));
}

TEST(SublayerMemo, KeepsNeitherLongInputsNorLargeOutputs) {
  SublayerMemo memo(2);
  std::vector<int32_t> cols(SublayerMemo::kMaxColumns + 1);
  for (size_t i = 0; i < cols.size(); ++i) cols[i] = static_cast<int32_t>(i);
  std::vector<float> x(cols.size(), 1.0f);
  EXPECT_FALSE(memo.set_key(cols.data(), cols.data() + cols.size(), x.data()));
  EXPECT_TRUE(memo.set_key(cols.data(), cols.data() + cols.size() - 1, x.data()));

  const int64_t words = static_cast<int64_t>(SublayerMemo::kMaxValues / 64 + 1);
  std::vector<uint64_t> bits(static_cast<size_t>(words), ~uint64_t{0});
  std::vector<float> y(static_cast<size_t>(words * 64), 1.0f);
  SublayerMemo::Output out;
  EXPECT_FALSE(SublayerMemo::record(out, bits.data(), words, y.data()));
  EXPECT_TRUE(out.values.empty() && out.word.empty() && out.section_end.empty());
  EXPECT_TRUE(SublayerMemo::record(out, bits.data(), words - 1, y.data()));

  SublayerMemo off(0);
  EXPECT_EQ(off.insert(), nullptr);
}

}  // namespace
