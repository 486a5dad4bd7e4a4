// A multi-block sum of 512 integers in one launch: each warp reduces with
// __shfl_down_sync, the warp sums meet in shared memory, the first warp
// reduces those, and one atomicAdd per block combines the blocks.
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

const int kThreads = 128, kWarps = kThreads / 32;

__device__ int warp_sum(int v) {
  for (int offset = 16; offset > 0; offset /= 2) v += __shfl_down_sync(0xffffffffu, v, offset);
  return v;
}

__global__ void block_sum(const int* in, int n, int* total, int* block_sums) {
  __shared__ int warp_sums[kWarps];
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  int v = warp_sum(i < n ? in[i] : 0);
  if (lane == 0) warp_sums[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = warp_sum(lane < kWarps ? warp_sums[lane] : 0);
    if (lane == 0) {
      block_sums[blockIdx.x] = v;
      atomicAdd(total, v);
    }
  }
}

int main() {
  const int n = 500, blocks = (n + kThreads - 1) / kThreads;
  int in[n];
  for (int i = 0; i < n; ++i) in[i] = (i * 2654435761u) % 2001 - 1000;

  int *d_in, *d_total, *d_blocks;
  CHECK(cudaMalloc(&d_in, sizeof(in)));
  CHECK(cudaMalloc(&d_total, sizeof(int)));
  CHECK(cudaMalloc(&d_blocks, blocks * sizeof(int)));
  CHECK(cudaMemcpy(d_in, in, sizeof(in), cudaMemcpyHostToDevice));
  CHECK(cudaMemset(d_total, 0, sizeof(int)));
  block_sum<<<blocks, kThreads>>>(d_in, n, d_total, d_blocks);
  CHECK(cudaGetLastError());
  int total, block_sums[blocks];
  CHECK(cudaMemcpy(&total, d_total, sizeof(total), cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(block_sums, d_blocks, sizeof(block_sums), cudaMemcpyDeviceToHost));
  CHECK(cudaFree(d_in));
  CHECK(cudaFree(d_total));
  CHECK(cudaFree(d_blocks));

  int bad = 0, ref = 0;
  for (int b = 0; b < blocks; ++b) {
    int s = 0;
    for (int i = b * kThreads; i < (b + 1) * kThreads && i < n; ++i) s += in[i];
    if (block_sums[b] != s) ++bad;
    ref += s;
  }
  printf("block sums %d %d %d %d\n", block_sums[0], block_sums[1], block_sums[2], block_sums[3]);
  printf("total %d (expected %d), %d mismatches\n", total, ref, bad);
  bool ok = bad == 0 && total == ref;
  printf("%s\n", ok ? "PASSED" : "FAILED");
  return ok ? 0 : 1;
}
