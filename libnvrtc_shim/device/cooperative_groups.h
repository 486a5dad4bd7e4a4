// Cooperative groups, the part that compiles to barriers, shuffles and votes:
// the thread block, and warp tiles of 1 to 32 threads (thread_block_tile<N>,
// tiled_partition<N>).
#pragma once

namespace cooperative_groups {

class thread_block {
 public:
  __device__ void sync() const { __syncthreads(); }
  __device__ unsigned int thread_rank() const {
    return (threadIdx.z * blockDim.y + threadIdx.y) * blockDim.x + threadIdx.x;
  }
  __device__ unsigned int size() const { return blockDim.x * blockDim.y * blockDim.z; }
  __device__ unsigned int num_threads() const { return size(); }
  __device__ dim3 group_index() const { return blockIdx; }
  __device__ dim3 thread_index() const { return threadIdx; }
  __device__ dim3 group_dim() const { return blockDim; }
};

__device__ inline thread_block this_thread_block() { return thread_block(); }

// N consecutive lanes of a warp (N a power of two, at most 32).
template <unsigned int N>
class thread_block_tile {
  static_assert(N >= 1 && N <= 32 && (N & (N - 1)) == 0, "tile size must be a power of two <= 32");

 public:
  __device__ unsigned int thread_rank() const { return lane() % N; }
  __device__ static constexpr unsigned int size() { return N; }
  __device__ static constexpr unsigned int num_threads() { return N; }
  __device__ unsigned int meta_group_rank() const { return thread_block().thread_rank() / N; }
  __device__ unsigned int meta_group_size() const { return (thread_block().size() + N - 1) / N; }
  __device__ void sync() const { __syncwarp(mask()); }

  template <typename T> __device__ T shfl(T v, int src) const { return __shfl_sync(mask(), v, src, N); }
  template <typename T> __device__ T shfl_down(T v, unsigned int d) const {
    return __shfl_down_sync(mask(), v, d, N);
  }
  template <typename T> __device__ T shfl_up(T v, unsigned int d) const {
    return __shfl_up_sync(mask(), v, d, N);
  }
  template <typename T> __device__ T shfl_xor(T v, int m) const { return __shfl_xor_sync(mask(), v, m, N); }

  // Votes over the tile; ballot bits are numbered by tile rank.
  __device__ unsigned int ballot(int p) const { return __ballot_sync(mask(), p) >> offset(); }
  __device__ int any(int p) const { return ballot(p) != 0; }
  __device__ int all(int p) const { return ballot(p) == (N == 32 ? 0xffffffffu : (1u << N) - 1); }

 private:
  __device__ static unsigned int lane() { return __nvvm_read_ptx_sreg_laneid(); }
  __device__ static unsigned int offset() { return lane() / N * N; }
  __device__ static unsigned int mask() {
    return N == 32 ? 0xffffffffu : ((1u << N) - 1) << offset();
  }
};

template <unsigned int N>
__device__ thread_block_tile<N> tiled_partition(const thread_block&) {
  return thread_block_tile<N>();
}

// cooperative_groups::sync(g): the group's own sync().
template <typename Group>
__device__ void sync(const Group& g) {
  g.sync();
}

}  // namespace cooperative_groups
