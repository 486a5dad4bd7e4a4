// The runtime's one summation scheme and the weight matrices that use it.
//
// A sum of n products is accumulated in 32 lanes, lane = column mod 32,
// columns ascending within a lane, and the lanes are then added in a fixed
// tree (lane j += lane j+16, then j+8, 4, 2, 1).  A dense matrix visits every
// column; a sparse matrix visits only the products of its non-zero weights
// with the non-zero entries of the input.  A lane starts at +0 and is never
// -0 (a sum is -0 only when both terms are), so adding a zero product (+-0,
// for finite weights and inputs) leaves it unchanged: both give bit-identical
// sums.  A sparse product adds a row's products in column order where that
// is provably the same value: products on the 2^-6 grid whose magnitudes
// sum below 2^18 have exact partial sums in any order; other rows are summed
// in the lane scheme.  Everything here is fp32 and never fused into FMAs.
#pragma once

#include <torch/types.h>

#include <cstdint>
#include <vector>

namespace qgpu::qwen {

// sum_i w[i] * x[i] in the lane scheme.
float lane_dot(const float* w, const float* x, int64_t n);
// The same sum when w[i] * x[i] is +-0 outside the listed indices (ascending).
float lane_dot(const float* w, const float* x, const int32_t* index, const int32_t* index_end);
// The same sum when w[i] * x[i] is +-0 outside the set bits of bits[words]
// (bit i % 64 of word i / 64).
float lane_dot(const float* w, const float* x, const uint64_t* bits, int64_t words);

// Whether x[0..n) holds no infinity and no NaN (vectorised).
bool all_finite(const float* x, int64_t n);

// Where T activation vectors may be non-zero: per vector, columns in
// ascending order.  A sparse product visits only these columns, so a column
// that is listed but holds +-0 costs time and changes nothing, while an
// unlisted column must hold +-0.  Reused across calls: no allocation once it
// has grown to its largest size.
class Support {
 public:
  // Every column of the T rows of x[T, n] that is not +-0 (NaNs included).
  void scan(const float* x, int64_t T, int64_t n);
  // Building vector by vector: clear(), then per vector its columns (add or
  // add_nonzero, ascending) and end_vector().  With bitmap_cols > 0, add()
  // also keeps a bitmap of each vector's columns (of that many columns),
  // from which a sparse product takes the listed columns it holds weights
  // in with a word-wise AND instead of a test per listed column.
  void clear(int64_t bitmap_cols = 0);
  void add(int32_t col) {
    cols_.push_back(col);
    if (words_) bits_[static_cast<size_t>(vectors() * words_ + col / 64)] |= uint64_t{1} << (col % 64);
  }
  // The columns in [begin, end) where x (the vector's full row) is not +-0.
  void add_nonzero(const float* x, int64_t begin, int64_t end);
  void end_vector() {
    ends_.push_back(static_cast<int64_t>(cols_.size()));
    if (words_) bits_.resize(bits_.size() + static_cast<size_t>(words_), 0);
  }
  // The set bits of T bitmaps of n bits (bit c of vector t is bit c % 64 of
  // word t * words(n) + c / 64).
  void assign_bits(const uint64_t* bits, int64_t T, int64_t n);
  static int64_t words(int64_t n) { return (n + 63) / 64; }

  int64_t vectors() const { return static_cast<int64_t>(ends_.size()); }
  const int32_t* begin(int64_t t) const { return cols_.data() + (t == 0 ? 0 : ends_[t - 1]); }
  const int32_t* end(int64_t t) const { return cols_.data() + ends_[t]; }
  // Vector t's bitmap (words(bitmap_cols) words), or null when none is kept.
  const uint64_t* bits(int64_t t) const { return words_ ? bits_.data() + t * words_ : nullptr; }
  int64_t bitmap_words() const { return words_; }

 private:
  std::vector<int32_t> cols_;
  std::vector<int64_t> ends_;  // per vector, one past its last column in cols_
  int64_t words_ = 0;          // bitmap words per vector (0: no bitmap)
  std::vector<uint64_t> bits_;
};

// A Linear weight [out, in] (no bias), stored dense or sparse (its non-zeros
// by row and by column).
class Matrix {
 public:
  // Working memory of the sparse products.  One per thread that runs them;
  // it grows to the largest matrix it serves and is then reused.
  class Scratch {
    friend class Matrix;
    // Per output row, the sum of the products it received in this call and
    // of their magnitudes (|p|, or more than the exactness bound for a
    // product off the grid); all +0 between calls.
    struct Row {
      float sum, magnitude;
    };
    std::vector<Row> rows;
    std::vector<int32_t> touched;    // rows that received a product, in order (with repeats)
    std::vector<double> high, size;  // argmax: per block of rows, bound terms (0 between calls)
    std::vector<double> argmax_group_high, argmax_group_size;  // argmax: per group of blocks, bound terms
    // apply_cut, per cut block: bound terms and state (0 untouched, 1
    // reached, 2 computed), all 0 between calls; the blocks reached, and
    // those computed.
    std::vector<double> cut_high, cut_size;
    std::vector<uint8_t> cut_state;
    std::vector<int32_t> reached, computed, columns;  // columns: the listed ones with weights, but the hub
    // The same per group of blocks (state 0 untouched, 1 reached, 2 its
    // blocks are bounded and scattered); the groups reached.
    std::vector<double> group_high, group_size;
    std::vector<uint8_t> group_state;
    std::vector<int32_t> groups_reached;
    std::vector<int32_t> listed;  // the support's columns that hold weights (from its bitmap)
  };

  Matrix() = default;
  // `sparse` selects sparse storage unless the matrix is mostly non-zero
  // (then dense storage is faster and gives the same numbers).  Pages of a
  // private anonymous mapping that were never written (lazy_zeros) are known
  // to be zero without reading them, so a mostly-zero checkpoint of many GB
  // costs only its written pages.  A sparse COO weight (Storage::Sparse) is
  // read from its entries and made dense (lazily) only for dense storage.
  Matrix(const torch::Tensor& weight, bool sparse);

  // y[t, :] = W x[t, :] for the T vectors of `support` (without `written`,
  // or with dense storage, every row of y[T, out] is written, rows without
  // stored weights as +0); x is [T, in].  With
  // `written` (T bitmaps of `out` bits, laid out as in Support::assign_bits,
  // clear on entry), sets the bits of the rows that may be non-zero, and
  // sparse storage writes those rows; the others are +0, and y there keeps
  // what it held or holds +0.  No entry of y is -0.
  void apply(const float* x, const Support& support, float* y, Scratch& scratch,
             uint64_t* written = nullptr) const;
  // A product whose row r matters only where its value may reach cut[r] <=
  // 0 (the rows of a SiLU's input: below -90 it gives -0): -inf for a row
  // that always matters, +inf for one that never does.  Sparse storage
  // only; kept across drop_rows.
  void prepare_cut(const std::vector<float>& cut);
  bool has_cut() const { return !cut_.empty(); }
  // y = W x at the rows whose bit it sets in `computed` (T bitmaps as
  // above); a row whose bit is clear holds +0, or a value below its cut, or
  // never matters (cut +inf: such rows are computed only when every row
  // is, for non-finite weights or inputs), and its entry of y is left as it
  // was.  Blocks of rows whose bound (from
  // per-block weight ranges, as argmax's) stays below the block's cut are
  // not computed.  Needs prepare_cut().
  void apply_cut(const float* x, const Support& support, float* y, Scratch& scratch, uint64_t* computed) const;
  // Row r of W x[in] alone, in the lane scheme: one entry of apply()'s output.
  float row_value(int64_t r, const float* x) const;
  // The sum of |w| over row r's weights (in double).
  double abs_row_sum(int64_t r) const;
  // row_value(rows[k], x) into out[k] for each listed row; the rows' indexes
  // and weights are requested first, so that their cache misses overlap.
  void row_values(const int32_t* rows, const int32_t* rows_end, const float* x, float* out) const;
  // The same for the rows [first, last).
  void row_values(int64_t first, int64_t last, const float* x, float* out) const;
  // The first index of the largest entry of W x for vector `t` of `support`,
  // exactly as torch::argmax gives it for apply()'s output (a NaN counts as
  // larger than any number, so the first NaN wins).  Computes only the rows
  // that can be the largest when prepare_argmax() has been called.
  int64_t argmax(const float* x, const Support& support, int64_t t, Scratch& scratch) const;
  // Indexes the sparse rows in blocks with per-column weight ranges, from
  // which argmax() bounds a block's largest entry and skips blocks that
  // cannot hold the maximum.
  void prepare_argmax();

  // Writes row `r` densely into dst[in].
  void row(int64_t r, float* dst) const;
  // Which rows / columns hold a non-zero weight.
  std::vector<bool> row_mask() const;
  std::vector<bool> col_mask() const;
  // Sparse storage: bit per column, set where the column holds a weight.
  const std::vector<uint64_t>& column_bits() const { return col_used_; }
  // Sparse storage only: forgets the rows where keep[r] is false (their
  // outputs become 0).  Dense storage is shared with the checkpoint and left as is.
  void drop_rows(const std::vector<bool>& keep);

  int64_t rows() const { return out_; }
  int64_t cols() const { return in_; }
  // Weights a product may visit (all of them when dense).
  int64_t stored() const;
  // Rows with at least one non-zero weight.
  int64_t nonzero_rows() const;
  bool is_sparse() const { return sparse_; }

 private:
  // A stored weight: its column in the row-major index, its row in the column-major one.
  struct Entry {
    int32_t index;
    float w;
  };
  // Sparse storage: the row-major index is the source; the column-major
  // index, the list of rows that hold weights and the argmax blocks are derived.
  void derive_indexes();
  // With by_row_ and row_ptr_ filled: checks the count, marks the storage
  // sparse, drops the dense tensor and derives the indexes.
  void finish_sparse();
  // Row r times x, over all its weights.
  float row_dot(int64_t r, const float* x) const;
  // Whether row r holds at most two weights: its products then sum to the
  // lane scheme's value in any order (one product p gives p + 0 either way;
  // two give q0 + q1, q = p + 0, for x + y == y + x).
  bool short_row(int64_t r) const { return row_ptr_[r + 1] - row_ptr_[r] <= 2; }
  // y[r] = hub weight(r) * x_hub + 0 for the rows [begin, end).
  void hub_pass(float x_hub, float* y, int64_t begin, int64_t end) const;
  // Vector t's listed columns for a sparse product: all of them, or, when
  // the support keeps a bitmap, only those that hold weights (the others
  // add nothing), in the same ascending order.
  std::pair<const int32_t*, const int32_t*> columns_of(const Support& support, int64_t t, Scratch& s) const;
  // One vector through the sparse storage; y[out] is fully written without
  // `written`, and with it only at the rows whose bits it sets.
  void apply_sparse(const float* x, const int32_t* nz, const int32_t* nz_end, float* y, Scratch& s,
                    uint64_t* written) const;
  // The weights of the rows [rows, rows_end):
  // the columns they use (in `used`, in order of first use), per column the
  // range of its weights and how many of the rows have one.  Returns the
  // longest row's weights.  The caller resets rows_with and used.
  struct BlockWeights {
    explicit BlockWeights(int64_t in);
    std::vector<float> lo, hi;
    std::vector<int32_t> rows_with, used;
  };
  int64_t gather_block(const int32_t* rows, const int32_t* rows_end, BlockWeights& bw) const;
  // Builds the cut blocks from cut_.
  void derive_cut();
  // One vector of apply_cut.
  void cut_sparse(const float* x, const int32_t* nz, const int32_t* nz_end, float* y, Scratch& s,
                  uint64_t* computed) const;
  // The first-index maximum of stored rows [k0, k1) (indices into
  // active_rows_) of W x folded into (best, best_row).
  void fold_rows(int64_t k0, int64_t k1, const float* x, float& best, int64_t& best_row) const;

  int64_t out_ = 0, in_ = 0;
  bool sparse_ = false;
  bool finite_ = true;                 // all weights finite: zero inputs may be skipped
  torch::Tensor dense_;                // [out, in] fp32 contiguous (dense storage)
  std::vector<int64_t> row_ptr_;       // per row (all out_), its range in by_row_
  std::vector<Entry> by_row_;          // index = column, ascending within a row
  std::vector<uint32_t> col_ptr_;      // per column, its range in by_col_
  std::vector<Entry> by_col_;          // index = row
  std::vector<uint64_t> col_used_;     // bit per column: it holds a weight
  std::vector<uint8_t> col_grid_;      // per column, the most fractional bits of its weights (255: too many)
  // The hub: a column that many rows read (a compiled circuit's anchor),
  // written by one dense pass in apply_sparse when it is the first column
  // the input reaches; -1 when no column is read by at least kHubRows rows
  // and a sixteenth of them.  hub_w_ holds each row's weight there (+0 for
  // none).
  static constexpr int64_t kHubRows = 64;
  int32_t hub_col_ = -1;
  std::vector<float> hub_w_;
  std::vector<uint64_t> hub_bits_;     // the rows with a hub weight, as a bitmap
  // The rows with a hub weight as runs [first, second) of consecutive rows,
  // runs less than kHubGap rows apart joined (the rows between hold no hub
  // weight): with a written map, the hub's pass writes these only.
  static constexpr int32_t kHubGap = 32;
  std::vector<std::pair<int32_t, int32_t>> hub_runs_;
  std::vector<int32_t> active_rows_;   // rows holding weights, ascending
  int64_t first_zero_row_ = -1;        // first row without weights (its entry is +0), or -1
  // argmax blocks of kBlockRows consecutive active rows (see
  // prepare_argmax): per column the blocks that use it with the range of its
  // weights in the block (0 included when a row of the block lacks it), and
  // per block a relative rounding allowance.
  struct BlockRange {
    int32_t block;
    float lo, hi;
  };
  std::vector<int64_t> block_col_ptr_;
  std::vector<BlockRange> block_ranges_;
  std::vector<double> block_slack_;
  // Groups of argmax blocks, bounded first as cut groups are (see
  // cut_groups_): per group its largest allowance, and per column its runs
  // of block_ranges_ by group.
  std::vector<double> argmax_group_slack_;
  std::vector<uint32_t> argmax_group_col_ptr_;
  // Cut blocks (see derive_cut): runs of up to kCutRows rows of cut_rows_,
  // all that always matter or all that matter from a cut on (rows that
  // never matter are in none).  cut_rows_ lists the rows that always matter
  // in ascending order, then those that matter from a cut, ordered so that
  // rows reading the same columns share blocks; each column's run of
  // by_col_ follows that order (rows in no block last).  Per block its rows
  // cut_rows_[first, end), its cut (the least of its rows'; -inf when they
  // always matter),
  // rounding allowance, and the hub's weights there: their range (0
  // included when a row of the block lacks one) and their run of by_col_.
  // Per column other than the hub, the blocks it reaches with the range of
  // its weights there and their run of by_col_.  Per sign of x[hub], the
  // blocks that the hub's products alone may lift to their cut, by the
  // largest |x[hub]| that does (descending).
  std::vector<float> cut_;             // per row (empty: not prepared)
  struct CutBlock {
    int32_t first, end;
    float cut;
    double slack;
    float hub_lo, hub_hi;
    uint32_t hub_begin, hub_end;
  };
  struct CutRange {
    int32_t block;
    float lo, hi;
    uint32_t begin, end;
  };
  struct HubReach {
    double up_to;
    int32_t block;
  };
  std::vector<HubReach> cut_hub_reach_[2];  // [0]: x[hub] > 0, [1]: x[hub] < 0
  std::vector<CutBlock> cut_blocks_;
  std::vector<int32_t> cut_rows_;
  std::vector<uint8_t> cut_short_;     // per entry of cut_rows_: short_row() of its row
  std::vector<uint32_t> cut_col_ptr_;
  std::vector<CutRange> cut_ranges_;
  // Groups of kCutGroup consecutive cut blocks, bounded first: a group's
  // cut is the least of its blocks', its allowance the largest, its hub
  // range and its per-column ranges the union of its blocks' (0 included
  // where a block lacks the column), so its bound is at least each of its
  // blocks' and a group below its cut holds no block that reaches its own.
  // Per column, its groups with the range of its weights there and, in
  // begin/end, its run of cut_ranges_ (the column's blocks in the group).
  struct CutGroup {
    float cut;
    double slack;
    float hub_lo, hub_hi;
    bool hub;  // a block of the group holds hub weights
  };
  std::vector<CutGroup> cut_groups_;
  std::vector<uint32_t> group_col_ptr_;
  std::vector<CutRange> group_ranges_;
  std::vector<CutRange> argmax_group_ranges_;  // as group_ranges_, into block_ranges_
  // Per column, its ranges (in block order, column by column as col_ptr
  // gives them) in runs by group of `per_group` blocks: each run's range is
  // the union of its blocks' (0 included where a block of the group lacks
  // the column), begin/end its place in `ranges`.
  template <class Range, class Ptr>
  static void group_runs(const std::vector<Ptr>& col_ptr, const std::vector<Range>& ranges, int64_t n_blocks,
                         int32_t per_group, std::vector<uint32_t>& run_ptr, std::vector<CutRange>& runs);
};

}  // namespace qgpu::qwen
