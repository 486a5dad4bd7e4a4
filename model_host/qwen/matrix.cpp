#include "model_host/qwen/matrix.h"

#include "model_host/qwen/checkpoint.h"

#include <ATen/Parallel.h>

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <stdexcept>

namespace qgpu::qwen {
namespace {

constexpr int kLanes = 32;
// Work (multiply-adds) below which a dense product runs on the calling thread.
constexpr int64_t kParallelGrain = 1 << 18;
// Stored rows per argmax block, and at most per cut block.
constexpr int64_t kBlockRows = 64;
constexpr int32_t kArgmaxGroup = 16;  // argmax blocks per group
constexpr int32_t kCutRows = 8;
constexpr int32_t kCutGroup = 8;  // cut blocks per group

// The lane tree, written out step by step so that each step is one vector add.
inline float reduce_lanes(float* acc) {
  for (int j = 0; j < 16; ++j) acc[j] += acc[j + 16];
  for (int j = 0; j < 8; ++j) acc[j] += acc[j + 8];
  for (int j = 0; j < 4; ++j) acc[j] += acc[j + 4];
  for (int j = 0; j < 2; ++j) acc[j] += acc[j + 2];
  return acc[0] + acc[1];
}

// The lane scheme's sum of n >= 1 products given in ascending column order:
// lane(i) is product i's lane, product(i) its value.  Let q = p + 0 (p with
// -0 made +0).  A lane starts at +0, so its first product enters as q, and
// a value that is not -0 gains the same from p as from q; no sum of values
// that are not -0 is -0, and such a value meets an empty (+0) lane
// unchanged.  So one product ends as q; two meet once (in their lane or in
// the tree) as q0 + q1, whatever their lanes (x + y == y + x exactly).  Of
// three, the two that meet first are added first: those in one lane (in
// column order), else the two whose lanes agree in more low bits (the tree
// adds lane j + 16 to lane j first, then j + 8, ..., j + 1).  More are
// added lane by lane as the scheme says.
template <class Lane, class Product>
inline float lane_sum(int64_t n, Lane lane, Product product) {
  if (n == 1) return product(0) + 0.0f;
  if (n == 2) return (product(0) + 0.0f) + (product(1) + 0.0f);
  if (n == 3) {
    const float q0 = product(0) + 0.0f, q1 = product(1) + 0.0f, q2 = product(2) + 0.0f;
    const int l0 = lane(0), l1 = lane(1), l2 = lane(2);
    // Low lane bits two lanes share (32 for the same lane): more meet earlier.
    auto shared = [](int a, int b) { return a == b ? kLanes : __builtin_ctz(a ^ b); };
    const int s01 = shared(l0, l1), s02 = shared(l0, l2), s12 = shared(l1, l2);
    if (s01 >= s02 && s01 >= s12) return (q0 + q1) + q2;
    if (s02 >= s12) return (q0 + q2) + q1;
    return (q1 + q2) + q0;
  }
  float acc[kLanes];
  for (int j = 0; j < kLanes; ++j) acc[j] = 0.0f;
  for (int64_t i = 0; i < n; ++i) acc[lane(i)] += product(i);
  return reduce_lanes(acc);
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

// (column, item) pairs indexed by column: ptr[c]..ptr[c + 1] are column c's
// items in `items`, in the order given.
template <class Ptr, class Item>
void by_column(const std::vector<std::pair<int32_t, Item>>& pairs, int64_t columns, std::vector<Ptr>& ptr,
               std::vector<Item>& items) {
  ptr.assign(columns + 1, 0);
  for (const auto& [c, item] : pairs) ++ptr[c + 1];
  for (int64_t c = 0; c < columns; ++c) ptr[c + 1] += ptr[c];
  items.resize(pairs.size());
  std::vector<Ptr> fill(ptr.begin(), ptr.end() - 1);
  for (const auto& [c, item] : pairs) items[fill[c]++] = item;
}

inline bool isnan_(float v) { return v != v; }

// Whether (v, r) comes before (best, best_row) in torch::argmax's order:
// larger first, a NaN before any number, the lower index among equals.
inline bool before(float v, int64_t r, float best, int64_t best_row) {
  if (best_row < 0) return true;
  if (isnan_(best)) return isnan_(v) && r < best_row;
  if (isnan_(v)) return true;
  return v > best || (v == best && r < best_row);
}

// Products that are multiples of 2^-6 and whose magnitudes sum below 2^18
// have exact partial sums in any order: every sum of some of them is a
// multiple of 2^-6 below 2^18 in magnitude, an integer below 2^24 times
// 2^-6, so no addition rounds and the lane scheme's order gives the same
// value as column order.  (A compiled circuit's products are such values.)
// The row's total of magnitudes is itself such a sum while below 2^18, and
// rounding is monotone, so the fp32 total is below 2^18 exactly when the
// true one is.
constexpr int kGridBits = 6;
constexpr float kExactBound = 0x1p18f;
// The magnitude a product adds to its row's total: |p| when p is a multiple
// of 2^-4 (on the grid), else kOffGrid, which fails the bound.
// (p + 1.5 * 2^19) - 1.5 * 2^19 rounds p to a multiple of 2^-4 when |p| <
// 2^18; a larger |p| fails the bound by itself, and NaN fails both.
constexpr float kGridRound = 0x1.8p19f;
constexpr float kOffGrid = 0x1p30f;
inline float grid_magnitude(float p) { return (p + kGridRound) - kGridRound == p ? std::fabs(p) : kOffGrid; }

// A row bound's terms for one column (argmax and cut_sparse): with weights in
// [lo_w, hi_w] and input xc, the largest product is added to hi[i] and the
// largest magnitude to sz[i]; a bound is then hi + sz * slack + 1e-37
// (bound_of).
inline void add_bound(double* hi, double* sz, int32_t i, float lo_w, float hi_w, double xc) {
  const double a = lo_w * xc, b = hi_w * xc;
  hi[i] += std::max(a, b);
  sz[i] += std::max(std::fabs(a), std::fabs(b));
}
inline double bound_of(double high_sum, double size_sum, double slack) {
  return size_sum < 0x1p100 ? high_sum + size_sum * slack + 1e-37 : std::numeric_limits<double>::infinity();
}

// The fewest fractional bits of v: the least g >= 0 with v * 2^g an integer
// (0 for 0), or kNoGrid when v is not finite or needs more than 32.
constexpr uint8_t kNoGrid = 255;
inline uint8_t fraction_bits(float v) {
  uint32_t bits;
  std::memcpy(&bits, &v, 4);
  const int exponent = static_cast<int>((bits >> 23) & 0xff);
  const uint32_t mantissa = bits & 0x7fffff;
  if (exponent == 0xff) return kNoGrid;
  if (exponent == 0) return mantissa == 0 ? 0 : kNoGrid;  // +-0, or below 2^-126
  // v = +-(2^23 + mantissa) * 2^(exponent - 150)
  const int g = 150 - exponent - __builtin_ctz(mantissa | (uint32_t{1} << 23));
  return g <= 0 ? 0 : g > 32 ? kNoGrid : static_cast<uint8_t>(g);
}

}  // namespace

// A float is not finite exactly when its exponent bits are all set: the
// largest magnitude's bits are then at least those of +inf.
__attribute__((target_clones("avx2", "default")))
bool all_finite(const float* x, int64_t n) {
  uint32_t largest = 0;
  for (int64_t i = 0; i < n; ++i) {
    uint32_t bits;
    std::memcpy(&bits, x + i, 4);
    largest = std::max(largest, bits & 0x7fffffffu);
  }
  return largest < 0x7f800000u;
}

__attribute__((target_clones("avx2", "default")))
float lane_dot(const float* w, const float* x, int64_t n) {
  float acc[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int j = 0; j < kLanes; ++j) acc[j] += w[i + j] * x[i + j];
  for (; i < n; ++i) acc[i % kLanes] += w[i] * x[i];
  return reduce_lanes(acc);
}

float lane_dot(const float* w, const float* x, const int32_t* index, const int32_t* index_end) {
  if (index == index_end) return 0.0f;
  return lane_sum(
      index_end - index, [&](int64_t i) { return index[i] & (kLanes - 1); },
      [&](int64_t i) { return w[index[i]] * x[index[i]]; });
}

float lane_dot(const float* w, const float* x, const uint64_t* bits, int64_t words) {
  float acc[kLanes] = {};
  for (int64_t i = 0; i < words; ++i)
    for (uint64_t b = bits[i]; b != 0; b &= b - 1) {
      const int64_t c = i * 64 + __builtin_ctzll(b);
      acc[c % kLanes] += w[c] * x[c];
    }
  return reduce_lanes(acc);
}

// ---- Support ----

void Support::assign_bits(const uint64_t* bits, int64_t T, int64_t n) {
  clear();
  const int64_t w = words(n);
  for (int64_t t = 0; t < T; ++t) {
    for (int64_t i = 0; i < w; ++i)
      for (uint64_t b = bits[t * w + i]; b != 0; b &= b - 1) cols_.push_back(static_cast<int32_t>(i * 64 + __builtin_ctzll(b)));
    end_vector();
  }
}

void Support::clear(int64_t bitmap_cols) {
  cols_.clear();
  ends_.clear();
  words_ = bitmap_cols > 0 ? words(bitmap_cols) : 0;
  bits_.assign(static_cast<size_t>(words_), 0);
}

void Support::add_nonzero(const float* x, int64_t begin, int64_t end) {
  const size_t at = cols_.size();
  cols_.resize(at + static_cast<size_t>(end - begin));
  int32_t* out = cols_.data() + at;
  int64_t n = 0;
  for (int64_t c = begin; c < end; ++c) {
    out[n] = static_cast<int32_t>(c);
    n += x[c] != 0.0f;  // true for NaN
  }
  cols_.resize(at + static_cast<size_t>(n));
}

void Support::scan(const float* x, int64_t T, int64_t n) {
  clear();
  for (int64_t t = 0; t < T; ++t) {
    add_nonzero(x + t * n, 0, n);
    end_vector();
  }
}

// ---- Matrix ----

Matrix::Matrix(const torch::Tensor& weight, bool sparse) {
  if (weight.dim() != 2) throw std::invalid_argument("Matrix: weight must be 2-D");
  out_ = weight.size(0);
  in_ = weight.size(1);
  if (sparse && (out_ >= std::numeric_limits<int32_t>::max() || in_ >= std::numeric_limits<int32_t>::max()))
    throw std::length_error("Matrix: " + std::to_string(out_) + " x " + std::to_string(in_) +
                            " is too large for sparse storage");
  if (weight.is_sparse()) {
    // Its entries as they are, in row-major order: no dense page is touched.
    row_ptr_.assign(out_ + 1, 0);
    if (sparse) {
      by_row_.reserve(weight._nnz());
      for_each_entry(weight, [&](int64_t r, int64_t c, float v) {
        ++row_ptr_[r + 1];
        by_row_.push_back({static_cast<int32_t>(c), v});
      });
    }
    if (!sparse || static_cast<int64_t>(by_row_.size()) * 2 >= out_ * in_) {
      row_ptr_ = {};
      by_row_ = {};
      dense_ = dense(weight);
      return;
    }
    for (int64_t r = 0; r < out_; ++r) row_ptr_[r + 1] += row_ptr_[r];
    finish_sparse();
    return;
  }
  auto w = weight.to(torch::kFloat32).contiguous();
  dense_ = w;
  if (!sparse) return;
  // One pass, row by row: skip never-written pages, and zero 64-byte chunks
  // on the others, and gather the non-zeros; stop once half are non-zero.
  const float* p = w.data_ptr<float>();
  const auto written = written_pages(p, static_cast<size_t>(out_ * in_) * sizeof(float));
  const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  const uintptr_t first_page = reinterpret_cast<uintptr_t>(p) / page;
  constexpr int64_t kChunk = 16;
  row_ptr_.assign(out_ + 1, 0);
  for (int64_t r = 0; r < out_ && static_cast<int64_t>(by_row_.size()) * 2 < out_ * in_; ++r) {
    row_ptr_[r] = static_cast<int64_t>(by_row_.size());
    const float* row = p + r * in_;
    for (int64_t c = 0; c < in_;) {
      // The part of the row on the page that holds column c.
      const uintptr_t at = reinterpret_cast<uintptr_t>(row + c);
      const int64_t end = std::min<int64_t>(in_, c + static_cast<int64_t>((page - at % page) / sizeof(float)));
      if (written[at / page - first_page])
        for (int64_t c0 = c; c0 < end; c0 += kChunk) {
          const int64_t c1 = std::min(end, c0 + kChunk);
          if (all_zero(row + c0, c1 - c0)) continue;
          for (int64_t i = c0; i < c1; ++i)
            if (row[i] != 0.0f) by_row_.push_back({static_cast<int32_t>(i), row[i]});
        }
      c = end;
    }
  }
  // Mostly non-zero: dense storage is faster and gives the same numbers.
  if (static_cast<int64_t>(by_row_.size()) * 2 >= out_ * in_) {
    row_ptr_ = {};
    by_row_ = {};
    return;
  }
  row_ptr_[out_] = static_cast<int64_t>(by_row_.size());
  finish_sparse();
}

void Matrix::finish_sparse() {
  if (by_row_.size() >= std::numeric_limits<uint32_t>::max())
    throw std::length_error("Matrix: " + std::to_string(by_row_.size()) + " non-zero weights are too many for sparse storage");
  sparse_ = true;
  dense_ = torch::Tensor();
  derive_indexes();
}

void Matrix::derive_indexes() {
  finite_ = std::all_of(by_row_.begin(), by_row_.end(), [](const Entry& e) { return std::isfinite(e.w); });
  active_rows_.clear();
  first_zero_row_ = -1;
  for (int64_t r = 0; r < out_; ++r) {
    if (row_ptr_[r + 1] > row_ptr_[r]) active_rows_.push_back(static_cast<int32_t>(r));
    else if (first_zero_row_ < 0) first_zero_row_ = r;
  }
  col_ptr_.assign(in_ + 1, 0);
  col_used_.assign((in_ + 63) / 64, 0);
  for (const Entry& e : by_row_) {
    ++col_ptr_[e.index + 1];
    col_used_[e.index / 64] |= uint64_t{1} << (e.index % 64);
  }
  for (int64_t c = 0; c < in_; ++c) col_ptr_[c + 1] += col_ptr_[c];
  col_grid_.assign(in_, 0);
  for (const Entry& e : by_row_) col_grid_[e.index] = std::max(col_grid_[e.index], fraction_bits(e.w));
  by_col_.resize(by_row_.size());
  std::vector<uint32_t> fill(col_ptr_.begin(), col_ptr_.end() - 1);
  for (int32_t r : active_rows_)
    for (int64_t i = row_ptr_[r]; i < row_ptr_[r + 1]; ++i) by_col_[fill[by_row_[i].index]++] = {r, by_row_[i].w};
  hub_col_ = -1;
  hub_w_ = {};
  hub_bits_ = {};
  hub_runs_ = {};
  int64_t widest = 0;
  for (int64_t c = 0; c < in_; ++c)
    if (col_ptr_[c + 1] - col_ptr_[c] > widest) {
      widest = col_ptr_[c + 1] - col_ptr_[c];
      hub_col_ = static_cast<int32_t>(c);
    }
  if (widest < kHubRows || widest * 16 < out_) hub_col_ = -1;
  if (hub_col_ >= 0) {
    hub_w_.assign(out_, 0.0f);
    hub_bits_.assign((out_ + 63) / 64, 0);
    for (const Entry *e = &by_col_[col_ptr_[hub_col_]], *end = &by_col_[col_ptr_[hub_col_ + 1]]; e != end; ++e) {
      hub_w_[e->index] = e->w;
      hub_bits_[e->index / 64] |= uint64_t{1} << (e->index % 64);
    }
    for (int32_t r = 0; r < out_; ++r) {
      if (!((hub_bits_[r / 64] >> (r % 64)) & 1)) continue;
      if (!hub_runs_.empty() && r - hub_runs_.back().second < kHubGap) hub_runs_.back().second = r + 1;
      else hub_runs_.push_back({r, r + 1});
    }
  }
  const bool argmax_ready = !block_slack_.empty();
  block_col_ptr_ = {};
  block_ranges_ = {};
  block_slack_ = {};
  argmax_group_slack_ = {};
  argmax_group_col_ptr_ = {};
  argmax_group_ranges_ = {};
  if (argmax_ready) prepare_argmax();
  derive_cut();
}

Matrix::BlockWeights::BlockWeights(int64_t in) : lo(in), hi(in), rows_with(in, 0) {}

int64_t Matrix::gather_block(const int32_t* rows, const int32_t* rows_end, BlockWeights& bw) const {
  int64_t longest = 0;
  for (const int32_t* k = rows; k != rows_end; ++k) {
    const int64_t r = *k;
    longest = std::max(longest, row_ptr_[r + 1] - row_ptr_[r]);
    for (int64_t i = row_ptr_[r]; i < row_ptr_[r + 1]; ++i) {
      const auto [c, w] = by_row_[i];
      if (bw.rows_with[c]++ == 0) {
        bw.used.push_back(c);
        bw.lo[c] = bw.hi[c] = w;
      }
      bw.lo[c] = std::min(bw.lo[c], w);
      bw.hi[c] = std::max(bw.hi[c], w);
    }
  }
  return longest;
}

void Matrix::prepare_argmax() {
  if (!sparse_ || !finite_) return;
  const int64_t n_rows = static_cast<int64_t>(active_rows_.size());
  const int64_t n_blocks = (n_rows + kBlockRows - 1) / kBlockRows;
  BlockWeights bw(in_);
  std::vector<float>& lo = bw.lo;
  std::vector<float>& hi = bw.hi;
  std::vector<int32_t>& rows_with = bw.rows_with;
  std::vector<int32_t>& used = bw.used;
  std::vector<std::pair<int32_t, BlockRange>> ranges;  // (column, range)
  block_slack_.assign(n_blocks, 0.0);
  for (int64_t b = 0; b < n_blocks; ++b) {
    const int64_t k0 = b * kBlockRows, k1 = std::min(n_rows, k0 + kBlockRows);
    const int64_t longest = gather_block(active_rows_.data() + k0, active_rows_.data() + k1, bw);
    for (int32_t c : used) {
      if (rows_with[c] < k1 - k0) {  // a row without this column has weight 0 there
        lo[c] = std::min(lo[c], 0.0f);
        hi[c] = std::max(hi[c], 0.0f);
      }
      ranges.push_back({c, BlockRange{static_cast<int32_t>(b), lo[c], hi[c]}});
      rows_with[c] = 0;
    }
    // A row's fp32 value differs from its exact sum by at most
    // gamma_m * sum |w x| with m <= (its products) + 6 roundings on any path
    // (product, lane additions, five tree levels); the bound's own double
    // sums add at most (columns used) * 2^-53 of the same.  2^-23 per
    // operation covers both with room.
    block_slack_[b] = static_cast<double>(longest + 6 + static_cast<int64_t>(used.size()) + 2) * 0x1p-23;
    used.clear();
  }
  by_column(ranges, in_, block_col_ptr_, block_ranges_);
  argmax_group_slack_.assign((n_blocks + kArgmaxGroup - 1) / kArgmaxGroup, 0.0);
  for (int64_t b = 0; b < n_blocks; ++b)
    argmax_group_slack_[b / kArgmaxGroup] = std::max(argmax_group_slack_[b / kArgmaxGroup], block_slack_[b]);
  group_runs(block_col_ptr_, block_ranges_, n_blocks, kArgmaxGroup, argmax_group_col_ptr_, argmax_group_ranges_);
}

float Matrix::row_dot(int64_t r, const float* x) const {
  const Entry* e = &by_row_[row_ptr_[r]];
  return lane_sum(
      row_ptr_[r + 1] - row_ptr_[r], [&](int64_t i) { return e[i].index & (kLanes - 1); },
      [&](int64_t i) { return e[i].w * x[e[i].index]; });
}

// Visits only the products of non-zero weights with the listed columns,
// column by column, adding each to its row's sum and its magnitude to the
// row's total.  A row whose products are all on the grid
// with a total below the bound then holds the lane scheme's sum (see
// above); any other row it reached is summed again in the lane scheme from
// its stored weights (row_dot: products with unlisted columns are +-0 and
// change nothing).  y starts at +0, which is not -0, and never becomes -0.
// Weights that are not all finite visit every weight (inf * 0 is NaN, not
// a zero product).
void Matrix::apply_sparse(const float* x, const int32_t* nz, const int32_t* nz_end, float* y, Scratch& s,
                          uint64_t* written) const {
  if (!finite_) {
    std::fill(y, y + out_, 0.0f);
    for (int32_t r : active_rows_) {
      y[r] = row_dot(r, x);
      if (written) written[r / 64] |= uint64_t{1} << (r % 64);
    }
    return;
  }
  // When the hub is the first column the support reaches (the anchor, on
  // circuit tokens), its products are y's first values: one dense pass over
  // hub_w_ writes them and zeroes the other rows, instead of a fill and a
  // scatter (w * x + 0 is the product the scatter would give; 0 * x + 0 is
  // +0 for finite x).  Otherwise the hub is scattered as any column.
  const int32_t* first = nz;
  while (first != nz_end && !((col_used_[*first / 64] >> (*first % 64)) & 1)) ++first;
  const bool hub_first = hub_col_ >= 0 && first != nz_end && *first == hub_col_ && std::isfinite(x[*first]);
  const float x_hub = hub_first ? x[hub_col_] : 0.0f;
  // With `written`, it names the rows written with their value (the caller
  // reads no other): the hub's rows here, the rows the scatter reaches
  // below.  The hub's pass is dense and vectorised (+0 where the hub has no
  // weight): a hub reaches at least a sixteenth of the rows, and such a pass
  // costs less than scattering to them.  Without `written` it writes every
  // row; with it, only the runs of rows that hold hub weights (a product
  // whose other rows were dropped, such as z's rows of dead heads, writes
  // only the live ones).
  if (hub_first) {
    if (written) {
      for (const auto& [begin, end] : hub_runs_) hub_pass(x_hub, y, begin, end);
      for (size_t i = 0; i < hub_bits_.size(); ++i) written[i] |= hub_bits_[i];
    } else {
      hub_pass(x_hub, y, 0, out_);
    }
    ++first;
  } else if (!written) {
    std::fill(y, y + out_, 0.0f);
  }
  if (static_cast<int64_t>(s.rows.size()) < out_) s.rows.resize(out_, Scratch::Row{});
  Scratch::Row* rows = s.rows.data();
  size_t n_touched = 0;
  for (const int32_t* c = first; c != nz_end; ++c) {
    if (!((col_used_[*c / 64] >> (*c % 64)) & 1)) continue;  // spares a miss on col_ptr_
    const float xc = x[*c];
    const Entry *e = &by_col_[col_ptr_[*c]], *end = &by_col_[col_ptr_[*c + 1]];
    if (s.touched.size() < n_touched + static_cast<size_t>(end - e))
      s.touched.resize(std::max(n_touched + static_cast<size_t>(end - e), 2 * s.touched.size()));
    int32_t* touched = s.touched.data() + n_touched;
    n_touched += static_cast<size_t>(end - e);
    // Every product of the column is a multiple of 2^-6 when its weights
    // and x[c] have at most kGridBits fractional bits together (the exact
    // product is then one, and it is representable, hence p, while |p| <
    // 2^18; a larger one fails the bound by its magnitude).
    const uint8_t x_bits = fraction_bits(xc);
    const bool on_grid = x_bits != kNoGrid && col_grid_[*c] != kNoGrid && x_bits + col_grid_[*c] <= kGridBits;
    auto scatter = [&](auto magnitude_of) {
      for (; e != end; ++e, ++touched) {
        const float p = e->w * xc;
        Scratch::Row& row = rows[e->index];
        row.sum += p;
        row.magnitude += magnitude_of(p);
        *touched = e->index;
      }
    };
    if (on_grid) scatter([](float p) { return std::fabs(p); });
    else scatter(grid_magnitude);
  }
  // y (+0, or the hub's product) plus the row's sum is exact when the
  // total magnitude is below the bound, whatever the grouping.  With
  // `written`, a row reached first here starts at +0 (at its first
  // occurrence in touched, before its sum is added).
  for (size_t i = 0; i < n_touched; ++i) {
    const auto r = static_cast<uint32_t>(s.touched[i]);
    if (written) {
      uint64_t& word = written[r / 64];
      const uint64_t bit = uint64_t{1} << (r % 64);
      if (!(word & bit)) {
        word |= bit;
        y[r] = 0.0f;
      }
    }
    Scratch::Row& row = rows[r];
    float m = row.magnitude;
    if (m == 0.0f) continue;  // seen already, or only zero products: y is exact
    if (hub_first) m += grid_magnitude(hub_w_[r] * x_hub);
    y[r] = m < kExactBound || short_row(r) ? y[r] + row.sum : row_dot(r, x);
    row = Scratch::Row{};
  }
}

__attribute__((target_clones("avx2", "default")))
void Matrix::hub_pass(float x_hub, float* y, int64_t begin, int64_t end) const {
  const float* hw = hub_w_.data();
  for (int64_t r = begin; r < end; ++r) y[r] = hw[r] * x_hub + 0.0f;
}

std::pair<const int32_t*, const int32_t*> Matrix::columns_of(const Support& support, int64_t t, Scratch& s) const {
  const uint64_t* bits = support.bits(t);
  if (!bits || support.bitmap_words() != static_cast<int64_t>(col_used_.size())) return {support.begin(t), support.end(t)};
  s.listed.clear();
  for (size_t i = 0; i < col_used_.size(); ++i)
    for (uint64_t b = bits[i] & col_used_[i]; b != 0; b &= b - 1)
      s.listed.push_back(static_cast<int32_t>(i * 64 + __builtin_ctzll(b)));
  return {s.listed.data(), s.listed.data() + s.listed.size()};
}

void Matrix::apply(const float* x, const Support& support, float* y, Scratch& scratch, uint64_t* written) const {
  const int64_t T = support.vectors();
  const int64_t words = Support::words(out_);
  if (sparse_) {
    for (int64_t t = 0; t < T; ++t) {
      const auto [nz, nz_end] = columns_of(support, t, scratch);
      apply_sparse(x + t * in_, nz, nz_end, y + t * out_, scratch, written ? written + t * words : nullptr);
    }
    return;
  }
  if (written)
    for (int64_t t = 0; t < T; ++t)
      for (int64_t r = 0; r < out_; ++r) written[t * words + r / 64] |= uint64_t{1} << (r % 64);
  const int64_t grain = std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(1, in_ * T));
  const float* w = dense_.data_ptr<float>();
  at::parallel_for(0, out_, grain, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r)
      for (int64_t t = 0; t < T; ++t) y[t * out_ + r] = lane_dot(w + r * in_, x + t * in_, in_);
  });
}

float Matrix::row_value(int64_t r, const float* x) const {
  return sparse_ ? row_dot(r, x) : lane_dot(dense_.data_ptr<float>() + r * in_, x, in_);
}

void Matrix::row_values(int64_t first, int64_t last, const float* x, float* out) const {
  if (sparse_) __builtin_prefetch(by_row_.data() + row_ptr_[first]);   // the rows' weights are contiguous
  for (int64_t r = first; r < last; ++r) *out++ = row_value(r, x);
}

double Matrix::abs_row_sum(int64_t r) const {
  double sum = 0;
  if (sparse_) {
    for (int64_t i = row_ptr_[r]; i < row_ptr_[r + 1]; ++i) sum += std::fabs(static_cast<double>(by_row_[i].w));
  } else {
    const float* w = dense_.data_ptr<float>() + r * in_;
    for (int64_t c = 0; c < in_; ++c) sum += std::fabs(static_cast<double>(w[c]));
  }
  return sum;
}

void Matrix::row_values(const int32_t* rows, const int32_t* rows_end, const float* x, float* out) const {
  if (sparse_) {
    for (const int32_t* r = rows; r != rows_end; ++r) __builtin_prefetch(&row_ptr_[*r]);
    for (const int32_t* r = rows; r != rows_end; ++r) __builtin_prefetch(by_row_.data() + row_ptr_[*r]);  // an empty last row points one past the end
  }
  for (const int32_t* r = rows; r != rows_end; ++r) *out++ = row_value(*r, x);
}

void Matrix::prepare_cut(const std::vector<float>& cut) {
  if (!sparse_) throw std::logic_error("Matrix::prepare_cut: dense storage computes every row");
  if (static_cast<int64_t>(cut.size()) != out_ ||
      std::any_of(cut.begin(), cut.end(), [](float c) { return isnan_(c) || (c > 0.0f && !std::isinf(c)); }))
    throw std::invalid_argument("Matrix::prepare_cut: one cut per row, each -inf, at most 0 or +inf");
  cut_ = cut;
  derive_cut();
}

void Matrix::derive_cut() {
  cut_blocks_ = {};
  cut_rows_ = {};
  cut_short_ = {};
  cut_col_ptr_ = {};
  cut_ranges_ = {};
  cut_hub_reach_[0] = cut_hub_reach_[1] = {};
  cut_groups_ = {};
  group_col_ptr_ = {};
  group_ranges_ = {};
  if (cut_.empty()) return;
  // The rows that matter, in block order: those that always do (cut -inf)
  // ascending, then those that matter from a cut on, sorted by the columns
  // they read (the hub's apart), each row's listed from the column most rows
  // read to the least: rows that test the same fields share blocks, so an
  // input column reaches few blocks and a block's bound is close to its
  // rows' values.
  constexpr float kInf = std::numeric_limits<float>::infinity();
  std::vector<int32_t> from_cut;
  for (int32_t r : active_rows_)
    if (cut_[r] == -kInf) cut_rows_.push_back(r);
    else if (cut_[r] != kInf) from_cut.push_back(r);
  const size_t n_always = cut_rows_.size();
  {
    auto reads = [&](int32_t c) { return col_ptr_[c + 1] - col_ptr_[c]; };
    std::vector<std::pair<std::vector<int32_t>, int32_t>> keyed;
    keyed.reserve(from_cut.size());
    for (int32_t r : from_cut) {
      std::vector<int32_t> cols;
      for (int64_t i = row_ptr_[r]; i < row_ptr_[r + 1]; ++i)
        if (by_row_[i].index != hub_col_) cols.push_back(by_row_[i].index);
      std::sort(cols.begin(), cols.end(), [&](int32_t a, int32_t b) {
        return reads(a) != reads(b) ? reads(a) > reads(b) : a < b;
      });
      keyed.emplace_back(std::move(cols), r);
    }
    std::sort(keyed.begin(), keyed.end());
    for (const auto& k : keyed) cut_rows_.push_back(k.second);
  }
  cut_short_.resize(cut_rows_.size());
  for (size_t k = 0; k < cut_rows_.size(); ++k) cut_short_[k] = short_row(cut_rows_[k]);
  for (size_t k = 0; k < cut_rows_.size(); ++k) {
    const bool always = k < n_always;
    if (k == 0 || k == n_always || cut_blocks_.back().end - cut_blocks_.back().first >= kCutRows)
      cut_blocks_.push_back({static_cast<int32_t>(k), static_cast<int32_t>(k), always ? -kInf : kInf, 0.0, 0.0f,
                             0.0f, 0, 0});
    CutBlock& b = cut_blocks_.back();
    b.end = static_cast<int32_t>(k + 1);
    b.cut = std::min(b.cut, cut_[cut_rows_[k]]);
  }
  // Each column's entries in block order (rows in no block after them).
  {
    std::vector<int32_t> position(out_, std::numeric_limits<int32_t>::max());
    for (size_t k = 0; k < cut_rows_.size(); ++k) position[cut_rows_[k]] = static_cast<int32_t>(k);
    for (int64_t c = 0; c < in_; ++c)
      std::stable_sort(by_col_.begin() + col_ptr_[c], by_col_.begin() + col_ptr_[c + 1],
                       [&](const Entry& a, const Entry& b) { return position[a.index] < position[b.index]; });
  }
  // Per block, per column it uses: the range of its weights and how many
  // rows have one; those rows' entries are the next ones of the column in
  // by_col_ (in block order there, blocks ascending here).
  BlockWeights bw(in_);
  std::vector<float>& lo = bw.lo;
  std::vector<float>& hi = bw.hi;
  std::vector<int32_t>& rows_with = bw.rows_with;
  std::vector<int32_t>& used = bw.used;
  std::vector<uint32_t> cursor(col_ptr_.begin(), col_ptr_.end() - 1);
  std::vector<std::pair<int32_t, CutRange>> ranges;  // (column, range), the hub's apart
  for (size_t b = 0; b < cut_blocks_.size(); ++b) {
    CutBlock& block = cut_blocks_[b];
    const int64_t longest = gather_block(cut_rows_.data() + block.first, cut_rows_.data() + block.end, bw),
                  rows = block.end - block.first;
    // The allowance of prepare_argmax: the lane scheme's value of a row
    // differs from its exact sum by at most gamma_m sum |w x|.
    block.slack = static_cast<double>(longest + 6 + static_cast<int64_t>(used.size()) + 2) * 0x1p-23;
    for (int32_t c : used) {
      const uint32_t begin = cursor[c];
      cursor[c] += static_cast<uint32_t>(rows_with[c]);
      if (c == hub_col_) {
        // The hub alone: rows without a hub weight then hold +0, so its
        // bound is over the rows that have one.  With x[hub] of sign s it
        // is A |x[hub]| + 1e-37, which reaches the cut for |x[hub]| up to
        // (cut - 1e-37) / A when A < 0, and always otherwise.
        const double m = std::max(std::fabs(lo[c]), std::fabs(hi[c]));
        const double a[2] = {hi[c] + m * block.slack, m * block.slack - lo[c]};
        for (int sign = 0; sign < 2; ++sign)
          if (block.cut != kInf)
            cut_hub_reach_[sign].push_back(
                {a[sign] >= 0.0 || block.cut == -kInf ? std::numeric_limits<double>::infinity()
                                                      : (block.cut - 1e-37) / a[sign],
                 static_cast<int32_t>(b)});
      }
      if (rows_with[c] < rows) {
        lo[c] = std::min(lo[c], 0.0f);
        hi[c] = std::max(hi[c], 0.0f);
      }
      if (c == hub_col_) {
        block.hub_lo = lo[c];
        block.hub_hi = hi[c];
        block.hub_begin = begin;
        block.hub_end = cursor[c];
      } else {
        ranges.push_back({c, CutRange{static_cast<int32_t>(b), lo[c], hi[c], begin, cursor[c]}});
      }
      rows_with[c] = 0;
    }
    used.clear();
  }
  for (auto& reach : cut_hub_reach_)
    std::stable_sort(reach.begin(), reach.end(), [](const HubReach& x, const HubReach& y) { return x.up_to > y.up_to; });
  by_column(ranges, in_, cut_col_ptr_, cut_ranges_);
  // The groups, and per column its runs of ranges by group (a column's
  // ranges are in block order).
  const int64_t n_blocks = static_cast<int64_t>(cut_blocks_.size());
  cut_groups_.assign((n_blocks + kCutGroup - 1) / kCutGroup, CutGroup{kInf, 0.0, kInf, -kInf, false});
  for (int64_t b = 0; b < n_blocks; ++b) {
    const CutBlock& block = cut_blocks_[b];
    CutGroup& g = cut_groups_[b / kCutGroup];
    g.cut = std::min(g.cut, block.cut);
    g.slack = std::max(g.slack, block.slack);
    const bool has_hub = block.hub_begin != block.hub_end;
    g.hub = g.hub || has_hub;
    g.hub_lo = std::min(g.hub_lo, has_hub ? block.hub_lo : 0.0f);
    g.hub_hi = std::max(g.hub_hi, has_hub ? block.hub_hi : 0.0f);
  }
  group_runs(cut_col_ptr_, cut_ranges_, n_blocks, kCutGroup, group_col_ptr_, group_ranges_);
}

template <class Range, class Ptr>
void Matrix::group_runs(const std::vector<Ptr>& col_ptr, const std::vector<Range>& ranges, int64_t n_blocks,
                        int32_t per_group, std::vector<uint32_t>& run_ptr, std::vector<CutRange>& runs) {
  const int64_t columns = static_cast<int64_t>(col_ptr.size()) - 1;
  auto group_blocks = [&](int64_t g) { return std::min<int64_t>(per_group, n_blocks - g * per_group); };
  std::vector<std::pair<int32_t, CutRange>> all;
  for (int64_t c = 0; c < columns; ++c)
    for (auto i = static_cast<uint32_t>(col_ptr[c]); i < col_ptr[c + 1];) {
      const int32_t g = ranges[i].block / per_group;
      CutRange run{g, ranges[i].lo, ranges[i].hi, i, i};
      for (; i < col_ptr[c + 1] && ranges[i].block / per_group == g; ++i) {
        run.lo = std::min(run.lo, ranges[i].lo);
        run.hi = std::max(run.hi, ranges[i].hi);
      }
      run.end = i;
      if (run.end - run.begin < group_blocks(g)) {  // a block of the group without the column: weight 0
        run.lo = std::min(run.lo, 0.0f);
        run.hi = std::max(run.hi, 0.0f);
      }
      all.push_back({static_cast<int32_t>(c), run});
    }
  by_column(all, columns, run_ptr, runs);
}

void Matrix::apply_cut(const float* x, const Support& support, float* y, Scratch& scratch, uint64_t* computed) const {
  if (cut_.empty()) throw std::logic_error("Matrix::apply_cut: prepare_cut() was not called");
  const int64_t words = Support::words(out_);
  for (int64_t t = 0; t < support.vectors(); ++t) {
    const auto [nz, nz_end] = columns_of(support, t, scratch);
    cut_sparse(x + t * in_, nz, nz_end, y + t * out_, scratch, computed + t * words);
  }
}

// A block's rows are bounded as argmax bounds them: each row's value is at
// most sum over the listed columns c of max(lo_c x_c, hi_c x_c), plus the
// rounding allowance times sum max(|lo_c|, |hi_c|) |x_c|, plus 1e-37 for
// products that underflow.  A block the input does not reach holds +0
// throughout; one whose bound is below its cut holds no row that reaches
// its own.  Groups of blocks are bounded the same way first, and only the
// blocks of groups that reach their cut are bounded one by one (a group's
// bound is at least each of its blocks').  Blocks reached by a column
// other than the hub are bounded with the hub's term added; those the hub
// alone reaches come from the hub's list (see derive_cut).  The blocks
// computed receive every product of their rows (their runs of each listed
// column) and are finished as apply_sparse finishes a row.
void Matrix::cut_sparse(const float* x, const int32_t* nz, const int32_t* nz_end, float* y, Scratch& s,
                        uint64_t* computed) const {
  const bool finite_x = std::all_of(nz, nz_end, [&](int32_t c) { return std::isfinite(x[c]); });
  if (!finite_ || !finite_x) {  // no bound: every row
    apply_sparse(x, nz, nz_end, y, s, nullptr);
    for (int64_t r = 0; r < out_; ++r) computed[r / 64] |= uint64_t{1} << (r % 64);
    return;
  }
  const size_t n_blocks = cut_blocks_.size(), n_groups = cut_groups_.size();
  if (s.cut_state.size() < n_blocks) {
    s.cut_high.resize(n_blocks, 0.0);
    s.cut_size.resize(n_blocks, 0.0);
    s.cut_state.resize(n_blocks, 0);
  }
  if (s.group_state.size() < n_groups) {
    s.group_high.resize(n_groups, 0.0);
    s.group_size.resize(n_groups, 0.0);
    s.group_state.resize(n_groups, 0);
  }
  double* high = s.cut_high.data();
  double* size = s.cut_size.data();
  uint8_t* state = s.cut_state.data();
  double* group_high = s.group_high.data();
  double* group_size = s.group_size.data();
  uint8_t* group_state = s.group_state.data();
  s.reached.clear();
  s.computed.clear();
  s.columns.clear();
  s.groups_reached.clear();
  const float x_hub = hub_col_ >= 0 ? x[hub_col_] : 0.0f;  // +-0 when not listed
  const double xh = x_hub;
  // The bound of each group the input reaches; the groups that may hold a
  // row reaching its cut are then bounded block by block.  The columns'
  // runs are scattered over the matrix's indexes (a cache miss each): they
  // are all requested first, so that their misses overlap.
  for (const int32_t* c = nz; c != nz_end; ++c)
    if (*c != hub_col_ && ((col_used_[*c / 64] >> (*c % 64)) & 1)) s.columns.push_back(*c);
  for (int32_t c : s.columns) __builtin_prefetch(&group_ranges_[group_col_ptr_[c]]);
  for (int32_t c : s.columns) {
    const double xc = x[c];
    for (const CutRange *r = &group_ranges_[group_col_ptr_[c]], *end = &group_ranges_[group_col_ptr_[c + 1]]; r != end;
         ++r) {
      if (group_state[r->block] == 0) {
        group_state[r->block] = 1;
        s.groups_reached.push_back(r->block);
      }
      add_bound(group_high, group_size, r->block, r->lo, r->hi, xc);
    }
  }
  bool any_group = false;
  for (int32_t g : s.groups_reached) {
    const CutGroup& group = cut_groups_[g];
    if (xh != 0.0 && group.hub) add_bound(group_high, group_size, g, group.hub_lo, group.hub_hi, xh);
    if (!(bound_of(group_high[g], group_size[g], group.slack) < group.cut)) {
      group_state[g] = 2;
      any_group = true;
    }
  }
  if (any_group)
    for (int32_t c : s.columns)
      for (const CutRange *g = &group_ranges_[group_col_ptr_[c]], *g_end = &group_ranges_[group_col_ptr_[c + 1]];
           g != g_end; ++g)
        if (group_state[g->block] == 2) __builtin_prefetch(&cut_ranges_[g->begin]);
  if (any_group)
    for (int32_t c : s.columns) {
      const double xc = x[c];
      for (const CutRange *g = &group_ranges_[group_col_ptr_[c]], *g_end = &group_ranges_[group_col_ptr_[c + 1]];
           g != g_end; ++g) {
        if (group_state[g->block] != 2) continue;
        for (const CutRange *r = &cut_ranges_[g->begin], *end = &cut_ranges_[g->end]; r != end; ++r) {
          if (state[r->block] == 0) {
            state[r->block] = 1;
            s.reached.push_back(r->block);
          }
          __builtin_prefetch(&by_col_[r->begin]);  // scattered below if the block is computed
          add_bound(high, size, r->block, r->lo, r->hi, xc);
        }
      }
    }
  for (int32_t b : s.reached) {
    const CutBlock& block = cut_blocks_[b];
    if (xh != 0.0 && block.hub_begin != block.hub_end) add_bound(high, size, b, block.hub_lo, block.hub_hi, xh);
    if (!(bound_of(high[b], size[b], block.slack) < block.cut)) {
      state[b] = 2;
      s.computed.push_back(b);
      __builtin_prefetch(&cut_rows_[block.first]);
      if (xh != 0.0 && block.hub_begin != block.hub_end) __builtin_prefetch(&by_col_[block.hub_begin]);
    }
  }
  // Blocks the hub alone may lift; their groups' runs are scattered too.
  if (xh != 0.0)
    for (const HubReach& h : cut_hub_reach_[xh > 0.0 ? 0 : 1]) {
      if (h.up_to < std::fabs(xh)) break;
      if (state[h.block] == 0) {
        state[h.block] = 2;
        s.computed.push_back(h.block);
      }
      const int32_t g = h.block / kCutGroup;
      if (group_state[g] == 0) s.groups_reached.push_back(g);
      group_state[g] = 2;
    }
  if (!s.computed.empty()) {
    if (static_cast<int64_t>(s.rows.size()) < out_) s.rows.resize(out_, Scratch::Row{});
    Scratch::Row* rows = s.rows.data();
    auto scatter = [&](float xc, uint8_t weight_bits, const Entry* e, const Entry* end) {
      const uint8_t x_bits = fraction_bits(xc);
      if (x_bits != kNoGrid && weight_bits != kNoGrid && x_bits + weight_bits <= kGridBits) {
        for (; e != end; ++e) {
          const float p = e->w * xc;
          rows[e->index].sum += p;
          rows[e->index].magnitude += std::fabs(p);
        }
      } else {
        for (; e != end; ++e) {
          const float p = e->w * xc;
          rows[e->index].sum += p;
          rows[e->index].magnitude += grid_magnitude(p);
        }
      }
    };
    for (int32_t c : s.columns)
      for (const CutRange *g = &group_ranges_[group_col_ptr_[c]], *g_end = &group_ranges_[group_col_ptr_[c + 1]];
           g != g_end; ++g) {
        if (group_state[g->block] != 2) continue;
        for (const CutRange *r = &cut_ranges_[g->begin], *end = &cut_ranges_[g->end]; r != end; ++r)
          if (state[r->block] == 2) scatter(x[c], col_grid_[c], &by_col_[r->begin], &by_col_[r->end]);
      }
    if (xh != 0.0)
      for (int32_t b : s.computed)
        scatter(x_hub, col_grid_[hub_col_], &by_col_[cut_blocks_[b].hub_begin], &by_col_[cut_blocks_[b].hub_end]);
    // A row's sum starts at +0 and is never -0; below the bound it is exact.
    for (int32_t b : s.computed) {
      const CutBlock& block = cut_blocks_[b];
      for (int32_t k = block.first; k != block.end; ++k) {
        const auto r = static_cast<uint32_t>(cut_rows_[k]);
        Scratch::Row& row = rows[r];
        const Scratch::Row done = row;
        row = Scratch::Row{};
        y[r] = done.magnitude < kExactBound || cut_short_[k] ? done.sum : row_dot(r, x);
        computed[r / 64] |= uint64_t{1} << (r % 64);
      }
      state[b] = 0;
    }
  }
  for (int32_t b : s.reached) {
    high[b] = size[b] = 0.0;
    state[b] = 0;
  }
  for (int32_t g : s.groups_reached) {
    group_high[g] = group_size[g] = 0.0;
    group_state[g] = 0;
  }
}

void Matrix::fold_rows(int64_t k0, int64_t k1, const float* x, float& best, int64_t& best_row) const {
  for (int64_t k = k0; k < k1; ++k) {
    const int64_t r = active_rows_[k];
    const float v = row_dot(r, x);
    if (before(v, r, best, best_row)) {
      best = v;
      best_row = r;
    }
  }
}

// The blocks' bounds: a row's exact sum is at most sum over the listed
// columns c of max(lo_c x_c, hi_c x_c), since its weight at c lies in
// [lo_c, hi_c]; its fp32 value exceeds the exact sum by at most slack *
// sum max(|lo_c|, |hi_c|) |x_c| (see prepare_argmax), plus 1e-37 for
// products that underflow.  A block whose bound is below a value already
// found holds no row that torch::argmax could pick.  Non-finite inputs, and
// blocks whose magnitudes could overflow, are computed in full.
int64_t Matrix::argmax(const float* x, const Support& support, int64_t t, Scratch& s) const {
  const float* xt = x + t * in_;
  float best = 0.0f;
  int64_t best_row = -1;
  if (!sparse_) {
    const float* w = dense_.data_ptr<float>();
    for (int64_t r = 0; r < out_; ++r) {
      const float v = lane_dot(w + r * in_, xt, in_);
      if (before(v, r, best, best_row)) {
        best = v;
        best_row = r;
      }
    }
    return best_row;
  }
  const auto [nz, nz_end] = columns_of(support, t, s);
  const int64_t n_rows = static_cast<int64_t>(active_rows_.size());
  const int64_t n_blocks = static_cast<int64_t>(block_slack_.size());
  const bool finite_x = std::all_of(nz, nz_end, [&](int32_t c) { return std::isfinite(xt[c]); });
  if (n_blocks == 0 || !finite_x) {
    fold_rows(0, n_rows, xt, best, best_row);
  } else {
    // Groups of blocks are bounded first, then the blocks of each group that
    // is not pruned, the most promising group first and in it the most
    // promising block first, so that its value prunes the others.
    const int64_t n_groups = static_cast<int64_t>(argmax_group_slack_.size());
    if (static_cast<int64_t>(s.high.size()) < n_blocks) {
      s.high.resize(n_blocks, 0.0);
      s.size.resize(n_blocks, 0.0);
    }
    s.argmax_group_high.assign(n_groups, 0.0);
    s.argmax_group_size.assign(n_groups, 0.0);
    double* high = s.high.data();
    double* size = s.size.data();
    double* group_bound = s.argmax_group_high.data();
    double* group_size = s.argmax_group_size.data();
    for (const int32_t* c = nz; c != nz_end; ++c)
      for (uint32_t e = argmax_group_col_ptr_[*c]; e < argmax_group_col_ptr_[*c + 1]; ++e) {
        const CutRange& r = argmax_group_ranges_[e];
        add_bound(group_bound, group_size, r.block, r.lo, r.hi, xt[*c]);
      }
    int64_t first_group = 0;
    for (int64_t g = 0; g < n_groups; ++g) {
      group_bound[g] = bound_of(group_bound[g], group_size[g], argmax_group_slack_[g]);
      if (group_bound[g] > group_bound[first_group]) first_group = g;
    }
    auto pruned = [&](double bound) { return bound < static_cast<double>(best) && !isnan_(best); };
    auto fold_block = [&](int64_t b) {
      fold_rows(b * kBlockRows, std::min(n_rows, (b + 1) * kBlockRows), xt, best, best_row);
    };
    auto visit_group = [&](int64_t g) {
      const int64_t b0 = g * kArgmaxGroup, b1 = std::min(n_blocks, b0 + kArgmaxGroup);
      for (const int32_t* c = nz; c != nz_end; ++c) {
        // The column's run in group g, if any (a column's runs are in group order).
        const CutRange *run = &argmax_group_ranges_[argmax_group_col_ptr_[*c]],
                       *end = &argmax_group_ranges_[argmax_group_col_ptr_[*c + 1]];
        run = std::lower_bound(run, end, g, [](const CutRange& x, int64_t v) { return x.block < v; });
        if (run == end || run->block != g) continue;
        for (uint32_t i = run->begin; i < run->end; ++i)
          add_bound(high, size, block_ranges_[i].block, block_ranges_[i].lo, block_ranges_[i].hi, xt[*c]);
      }
      int64_t first = b0;
      for (int64_t b = b0; b < b1; ++b) {
        high[b] = bound_of(high[b], size[b], block_slack_[b]);
        size[b] = 0.0;
        if (high[b] > high[first]) first = b;
      }
      if (best_row < 0 || !pruned(high[first])) fold_block(first);
      for (int64_t b = b0; b < b1; ++b) {
        if (b != first && !pruned(high[b])) fold_block(b);
        high[b] = 0.0;
      }
    };
    visit_group(first_group);
    for (int64_t g = 0; g < n_groups; ++g)
      if (g != first_group && !pruned(group_bound[g])) visit_group(g);
  }
  // Rows without weights are +0; the first of them stands for all.
  if (first_zero_row_ >= 0 && before(0.0f, first_zero_row_, best, best_row)) best_row = first_zero_row_;
  return best_row;
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
    for (int64_t c = 0; c < in_; ++c) mask[c] = (col_used_[c / 64] >> (c % 64)) & 1;
  } else {
    const float* p = dense_.data_ptr<float>();
    for (int64_t i = 0; i < out_ * in_; ++i)
      if (p[i] != 0.0f) mask[i % in_] = true;
  }
  return mask;
}

void Matrix::drop_rows(const std::vector<bool>& keep) {
  if (!sparse_) return;
  std::vector<int64_t> ptr(out_ + 1, 0);
  std::vector<Entry> entries;
  for (int64_t r = 0; r < out_; ++r) {
    ptr[r] = static_cast<int64_t>(entries.size());
    if (keep.at(r)) entries.insert(entries.end(), by_row_.begin() + row_ptr_[r], by_row_.begin() + row_ptr_[r + 1]);
  }
  ptr[out_] = static_cast<int64_t>(entries.size());
  row_ptr_ = std::move(ptr);
  by_row_ = std::move(entries);
  derive_indexes();
}

void Matrix::row(int64_t r, float* dst) const {
  if (!sparse_) {
    std::copy_n(dense_.data_ptr<float>() + r * in_, in_, dst);
    return;
  }
  std::fill(dst, dst + in_, 0.0f);
  for (int64_t i = row_ptr_[r]; i < row_ptr_[r + 1]; ++i) dst[by_row_[i].index] = by_row_[i].w;
}

int64_t Matrix::stored() const { return sparse_ ? static_cast<int64_t>(by_row_.size()) : out_ * in_; }

int64_t Matrix::nonzero_rows() const {
  auto mask = row_mask();
  return std::count(mask.begin(), mask.end(), true);
}

}  // namespace qgpu::qwen
