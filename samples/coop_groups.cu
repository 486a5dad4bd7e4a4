// Cooperative groups: the block is partitioned into thread_block_tile<32>
// and thread_block_tile<16> tiles whose shfl_down reductions and ballots
// compile to warp shuffles and votes.
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

#define CHECK(call)                                                          \
  do {                                                                       \
    cudaError_t err_ = (call);                                               \
    if (err_ != cudaSuccess) {                                               \
      printf("CUDA error at %s:%d: %s\n", __FILE__, __LINE__,                \
             cudaGetErrorString(err_));                                      \
      exit(1);                                                               \
    }                                                                        \
  } while (0)
#include <cooperative_groups.h>

namespace cg = cooperative_groups;

template <unsigned N>
__device__ int tile_sum(cg::thread_block_tile<N> tile, int v) {
  for (int offset = tile.size() / 2; offset > 0; offset /= 2) v += tile.shfl_down(v, offset);
  return v;  // complete in the tile's rank 0
}

__global__ void tiles(const int* in, int* sums32, int* sums16, unsigned* ballots16) {
  cg::thread_block block = cg::this_thread_block();
  int v = in[block.thread_rank()];
  cg::thread_block_tile<32> warp = cg::tiled_partition<32>(block);
  cg::thread_block_tile<16> half = cg::tiled_partition<16>(block);
  int s32 = tile_sum(warp, v);
  int s16 = tile_sum(half, v);
  unsigned b = half.ballot(v > 0);
  if (warp.thread_rank() == 0) sums32[block.thread_rank() / 32] = s32;
  if (half.thread_rank() == 0) {
    sums16[block.thread_rank() / 16] = s16;
    ballots16[block.thread_rank() / 16] = b;
  }
}

int main() {
  const int n = 64;
  int in[n];
  for (int i = 0; i < n; ++i) in[i] = (i * 19) % 41 - 15;

  int *d_in, *d_s32, *d_s16;
  unsigned* d_b16;
  CHECK(cudaMalloc(&d_in, sizeof(in)));
  CHECK(cudaMalloc(&d_s32, 2 * sizeof(int)));
  CHECK(cudaMalloc(&d_s16, 4 * sizeof(int)));
  CHECK(cudaMalloc(&d_b16, 4 * sizeof(unsigned)));
  CHECK(cudaMemcpy(d_in, in, sizeof(in), cudaMemcpyHostToDevice));
  tiles<<<1, n>>>(d_in, d_s32, d_s16, d_b16);
  CHECK(cudaGetLastError());
  int s32[2], s16[4];
  unsigned b16[4];
  CHECK(cudaMemcpy(s32, d_s32, sizeof(s32), cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(s16, d_s16, sizeof(s16), cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(b16, d_b16, sizeof(b16), cudaMemcpyDeviceToHost));
  CHECK(cudaFree(d_in));
  CHECK(cudaFree(d_s32));
  CHECK(cudaFree(d_s16));
  CHECK(cudaFree(d_b16));

  int bad = 0;
  for (int t = 0; t < 4; ++t) {
    int s = 0;
    unsigned b = 0;
    for (int r = 0; r < 16; ++r) {
      s += in[16 * t + r];
      if (in[16 * t + r] > 0) b |= 1u << r;
    }
    if (s16[t] != s || b16[t] != b) ++bad;
  }
  for (int w = 0; w < 2; ++w)
    if (s32[w] != s16[2 * w] + s16[2 * w + 1]) ++bad;
  printf("tile<32> sums %d %d; tile<16> sums %d %d %d %d\n", s32[0], s32[1], s16[0], s16[1],
         s16[2], s16[3]);
  printf("tile<16> ballots %04x %04x %04x %04x, %d mismatches\n", b16[0], b16[1], b16[2], b16[3],
         bad);
  bool ok = bad == 0;
  printf("%s\n", ok ? "PASSED" : "FAILED");
  return ok ? 0 : 1;
}
