// The runtime's one summation scheme and the weight matrices that use it.
//
// A sum of n products is accumulated in 32 lanes, lane = column mod 32,
// columns ascending within a lane, and the lanes are then added in a fixed
// tree (lane j += lane j+16, then j+8, 4, 2, 1).  A dense matrix visits every
// column; a sparse (CSR) matrix visits only its non-zero weights.  Since
// adding a zero product leaves a lane unchanged, both give bit-identical sums
// for finite inputs.  A short sparse row goes further and adds only its own
// products, in the order the lane tree would combine them (see Merge).
// Everything here is fp32 and never fused into FMAs.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <vector>

namespace qgpu::qwen {

// sum_i w[i] * x[i] in the lane scheme.
float lane_dot(const float* w, const float* x, int64_t n);

// A Linear weight [out, in] (no bias), stored dense or as CSR of its non-zeros.
class Matrix {
 public:
  Matrix() = default;
  // `sparse` selects CSR unless the matrix is mostly non-zero (then dense
  // storage is faster and gives the same numbers).
  Matrix(const torch::Tensor& weight, bool sparse);

  // y[t, :] = W x[t, :] for t < T; x is [T, in], y is [T, out], both row-major.
  // Rows without stored weights are written as 0.
  void apply(const float* x, int64_t T, float* y) const;
  // Writes row `r` densely into dst[in].
  void row(int64_t r, float* dst) const;
  // Which rows / columns hold a non-zero weight.
  std::vector<bool> row_mask() const;
  std::vector<bool> col_mask() const;
  // Sparse storage only: forgets the rows where keep[r] is false (their
  // outputs become 0).  Dense storage is shared with the checkpoint and left as is.
  void drop_rows(const std::vector<bool>& keep);

  int64_t rows() const { return out_; }
  int64_t cols() const { return in_; }
  // Weights the product visits (all of them when dense).
  int64_t stored() const;
  // Rows with at least one non-zero weight.
  int64_t nonzero_rows() const;
  bool is_sparse() const { return sparse_; }

 private:
  // One addition of a short row's sum: slot[into] += slot[from], where slot k
  // starts as the row's k-th product (into < from, so the sum ends in slot 0).
  struct Merge {
    uint8_t into, from;
  };

  // Plans merge_ for the short rows of the CSR storage.
  void plan_merges();
  // Active row k (an index into active_rows_) times x.
  float row_dot(int64_t k, const float* x) const;

  int64_t out_ = 0, in_ = 0;
  bool sparse_ = false;
  torch::Tensor dense_;               // [out, in] fp32 contiguous (dense storage)
  std::vector<int32_t> active_rows_;  // CSR: rows with non-zeros, ascending
  std::vector<int64_t> row_ptr_;      // CSR: per active row, offset into col_/val_ (size+1)
  std::vector<int32_t> col_;
  std::vector<float> val_;
  // CSR, indexed like col_: a short row's merges, in order, at the first
  // nnz - 1 of its entries (long rows use the 32 lanes and leave theirs unset).
  std::vector<Merge> merge_;
};

}  // namespace qgpu::qwen
