// Kernels built from CUDA's own libraries (cooperative groups, CUB): the code
// real programs get from headers, for the PTX interpreter tests.
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>

#include <cub/block/block_radix_sort.cuh>
#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>

namespace cg = cooperative_groups;

extern "C" __global__ void cg_tiles(const int* in, int* out) {
  auto tile = cg::tiled_partition<16>(cg::this_thread_block());
  int v = in[threadIdx.x];
  out[threadIdx.x * 4 + 0] = cg::reduce(tile, v, cg::plus<int>());
  out[threadIdx.x * 4 + 1] = tile.shfl_xor(v, 3);
  out[threadIdx.x * 4 + 2] = tile.any(v > 900);
  out[threadIdx.x * 4 + 3] = tile.ballot(v & 1);
}

extern "C" __global__ void cub_reduce_scan(const int* in, int* out) {
  typedef cub::BlockReduce<int, 128> Reduce;
  typedef cub::BlockScan<int, 128> Scan;
  __shared__ typename Reduce::TempStorage rt;
  __shared__ typename Scan::TempStorage st;
  int v = in[threadIdx.x];
  int sum = Reduce(rt).Sum(v);
  int prefix;
  Scan(st).ExclusiveSum(v, prefix);
  if (threadIdx.x == 0) out[128] = sum;
  out[threadIdx.x] = prefix;
}

extern "C" __global__ void cub_radix_sort(unsigned* keys) {
  typedef cub::BlockRadixSort<unsigned, 128, 4> Sort;
  __shared__ typename Sort::TempStorage t;
  unsigned k[4];
  for (int i = 0; i < 4; ++i) k[i] = keys[threadIdx.x * 4 + i];
  Sort(t).Sort(k);
  for (int i = 0; i < 4; ++i) keys[threadIdx.x * 4 + i] = k[i];
}
