#include "model_host/qwen/matrix.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>

namespace qgpu::qwen {
namespace {

constexpr int kLanes = 32;
// Rows with at most this many non-zeros are summed by their merge plan
// (its slot numbers must fit a Merge's uint8_t).
constexpr int kShortRow = 32;
// Work (multiply-adds) below which a product runs on the calling thread.
constexpr int64_t kParallelGrain = 1 << 18;

inline float reduce_lanes(float* acc) {
  for (int width = kLanes / 2; width >= 1; width /= 2)
    for (int j = 0; j < width; ++j) acc[j] += acc[j + width];
  return acc[0];
}

// True when every entry is +0 or -0 (bit patterns without the sign are all zero).
bool all_zero(const float* p, int64_t n) {
  uint32_t any = 0;
  for (int64_t i = 0; i < n; ++i) {
    uint32_t bits;
    std::memcpy(&bits, p + i, 4);
    any |= bits << 1;
  }
  return any == 0;
}

}  // namespace

__attribute__((target_clones("avx2", "default")))
float lane_dot(const float* w, const float* x, int64_t n) {
  float acc[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int j = 0; j < kLanes; ++j) acc[j] += w[i + j] * x[i + j];
  for (; i < n; ++i) acc[i % kLanes] += w[i] * x[i];
  return reduce_lanes(acc);
}

Matrix::Matrix(const torch::Tensor& weight, bool sparse) {
  if (weight.dim() != 2) throw std::invalid_argument("Matrix: weight must be 2-D");
  auto w = weight.to(torch::kFloat32).contiguous();
  out_ = w.size(0);
  in_ = w.size(1);
  dense_ = w;
  if (!sparse) return;
  // One pass: skip all-zero rows quickly, gather the non-zeros of the others.
  const float* p = w.data_ptr<float>();
  row_ptr_.push_back(0);
  for (int64_t r = 0; r < out_; ++r) {
    const float* row = p + r * in_;
    if (all_zero(row, in_)) continue;
    for (int64_t c = 0; c < in_; ++c)
      if (row[c] != 0.0f) {
        col_.push_back(static_cast<int32_t>(c));
        val_.push_back(row[c]);
      }
    active_rows_.push_back(static_cast<int32_t>(r));
    row_ptr_.push_back(static_cast<int64_t>(col_.size()));
    if (static_cast<int64_t>(col_.size()) * 2 >= out_ * in_) break;
  }
  // Mostly non-zero: dense storage is faster and gives the same numbers.
  if (static_cast<int64_t>(col_.size()) * 2 >= out_ * in_) {
    active_rows_ = {};
    row_ptr_ = {};
    col_ = {};
    val_ = {};
    return;
  }
  sparse_ = true;
  dense_ = torch::Tensor();
  plan_merges();
}

// A short row's plan replays the lane scheme on its own products only.  The
// lane scheme adds, per lane, 0 + q_0 + q_1 + ... over all the lane's columns,
// then lane j + lane j+width down the tree.  A lane is never -0 (it starts at
// +0, and a sum is -0 only when both terms are), so the zero-weight products
// (+-0) it skips and the tree additions with an empty (+0) lane change
// nothing.  Dropping the leading "0 +" of a lane can only turn a +0 into -0,
// and a sum whose terms differ from the dense ones only in the sign of zeros
// differs from the dense sum only in the sign of a zero; the final "+ 0.0f"
// makes that sign + as in the dense sum.  Since x + y == y + x exactly, a
// merge may keep the sum in either slot: it keeps the lower, so the whole
// sum ends in slot 0.
void Matrix::plan_merges() {
  merge_.assign(col_.size(), Merge{0, 0});
  for (size_t k = 0; k < active_rows_.size(); ++k) {
    const int64_t b = row_ptr_[k], n = row_ptr_[k + 1] - b;
    if (n > kShortRow) continue;
    Merge* out = &merge_[b];
    // slot[l]: the slot that holds lane l's running sum, or -1 while it is empty.
    int slot[kLanes];
    std::fill(slot, slot + kLanes, -1);
    auto merge = [&](int& into, int from) {
      if (into < 0) {
        into = from;
        return;
      }
      *out++ = Merge{static_cast<uint8_t>(std::min(into, from)), static_cast<uint8_t>(std::max(into, from))};
      into = std::min(into, from);
    };
    for (int64_t i = 0; i < n; ++i) merge(slot[col_[b + i] & (kLanes - 1)], static_cast<int>(i));
    for (int width = kLanes / 2; width >= 1; width /= 2)
      for (int j = 0; j < width; ++j)
        if (slot[j + width] >= 0) merge(slot[j], slot[j + width]);
  }
}

float Matrix::row_dot(int64_t k, const float* x) const {
  const int64_t b = row_ptr_[k], n = row_ptr_[k + 1] - b;
  const int32_t* cols = &col_[b];
  const float* vals = &val_[b];
  if (n > kShortRow) {
    float acc[kLanes] = {};
    for (int64_t i = 0; i < n; ++i) acc[cols[i] & (kLanes - 1)] += vals[i] * x[cols[i]];
    return reduce_lanes(acc);
  }
  float sum[kShortRow];
  for (int64_t i = 0; i < n; ++i) sum[i] = vals[i] * x[cols[i]];
  const Merge* merges = &merge_[b];
  for (int64_t i = 0; i + 1 < n; ++i) sum[merges[i].into] += sum[merges[i].from];
  return sum[0] + 0.0f;
}

std::vector<bool> Matrix::row_mask() const {
  std::vector<bool> mask(out_, false);
  if (sparse_) {
    for (int32_t r : active_rows_) mask[r] = true;
  } else {
    for (int64_t r = 0; r < out_; ++r) mask[r] = !all_zero(dense_.data_ptr<float>() + r * in_, in_);
  }
  return mask;
}

std::vector<bool> Matrix::col_mask() const {
  std::vector<bool> mask(in_, false);
  if (sparse_) {
    for (int32_t c : col_) mask[c] = true;
  } else {
    const float* p = dense_.data_ptr<float>();
    for (int64_t i = 0; i < out_ * in_; ++i)
      if (p[i] != 0.0f) mask[i % in_] = true;
  }
  return mask;
}

void Matrix::drop_rows(const std::vector<bool>& keep) {
  if (!sparse_) return;
  std::vector<int32_t> rows;
  std::vector<int64_t> ptr{0};
  std::vector<int32_t> cols;
  std::vector<float> vals;
  for (size_t k = 0; k < active_rows_.size(); ++k) {
    if (!keep.at(active_rows_[k])) continue;
    rows.push_back(active_rows_[k]);
    cols.insert(cols.end(), col_.begin() + row_ptr_[k], col_.begin() + row_ptr_[k + 1]);
    vals.insert(vals.end(), val_.begin() + row_ptr_[k], val_.begin() + row_ptr_[k + 1]);
    ptr.push_back(static_cast<int64_t>(cols.size()));
  }
  active_rows_ = std::move(rows);
  row_ptr_ = std::move(ptr);
  col_ = std::move(cols);
  val_ = std::move(vals);
  plan_merges();
}

void Matrix::apply(const float* x, int64_t T, float* y) const {
  std::fill(y, y + T * out_, 0.0f);
  const int64_t n_rows = sparse_ ? static_cast<int64_t>(active_rows_.size()) : out_;
  if (n_rows == 0) return;
  const int64_t work_per_row = std::max<int64_t>(1, stored() / n_rows * T);
  const int64_t grain = std::max<int64_t>(1, kParallelGrain / work_per_row);
  at::parallel_for(0, n_rows, grain, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      if (sparse_) {
        const int64_t o = active_rows_[r];
        for (int64_t t = 0; t < T; ++t) y[t * out_ + o] = row_dot(r, x + t * in_);
      } else {
        const float* w = dense_.data_ptr<float>() + r * in_;
        for (int64_t t = 0; t < T; ++t) y[t * out_ + r] = lane_dot(w, x + t * in_, in_);
      }
    }
  });
}

void Matrix::row(int64_t r, float* dst) const {
  if (!sparse_) {
    std::copy_n(dense_.data_ptr<float>() + r * in_, in_, dst);
    return;
  }
  std::fill(dst, dst + in_, 0.0f);
  auto it = std::lower_bound(active_rows_.begin(), active_rows_.end(), static_cast<int32_t>(r));
  if (it == active_rows_.end() || *it != r) return;
  const size_t k = static_cast<size_t>(it - active_rows_.begin());
  for (int64_t i = row_ptr_[k]; i < row_ptr_[k + 1]; ++i) dst[col_[i]] = val_[i];
}

int64_t Matrix::stored() const { return sparse_ ? static_cast<int64_t>(val_.size()) : out_ * in_; }

int64_t Matrix::nonzero_rows() const {
  auto mask = row_mask();
  return std::count(mask.begin(), mask.end(), true);
}

}  // namespace qgpu::qwen
