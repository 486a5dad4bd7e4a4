// Warp-level operations on the GPU inside the model, over a full warp and a
// partial one (40 threads): a rotating __shfl_sync, a ballot, __activemask
// on the two sides of a divergent branch, __syncwarp, and a butterfly sum
// with __shfl_xor_sync in the full warp.  Prints PASSED when every word is
// what CUDA defines.
#include <cstdio>
#include <cuda_runtime.h>

constexpr int kThreads = 40;

__global__ void warp_ops(unsigned* out) {
  const int t = threadIdx.x, lane = t % 32;
  const unsigned v = 3u * t + 1;
  const unsigned rot = __shfl_sync(0xffffffffu, v, (lane + 1) % 32);
  const unsigned odd = __ballot_sync(0xffffffffu, t & 1);
  unsigned side;
  if (t % 3 == 0)
    side = __activemask();
  else
    side = __activemask() | 0x80000000u;
  __syncwarp();
  unsigned sum = v;
  if (t < 32)
    for (int m = 16; m > 0; m /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, m);
  out[4 * t] = t < 32 ? rot : 0;
  out[4 * t + 1] = odd;
  out[4 * t + 2] = side;
  out[4 * t + 3] = sum;
}

int main() {
  unsigned* d = nullptr;
  if (cudaMalloc(&d, 4 * kThreads * sizeof(unsigned)) != cudaSuccess) return 2;
  warp_ops<<<1, kThreads>>>(d);
  unsigned got[4 * kThreads];
  if (cudaMemcpy(got, d, sizeof got, cudaMemcpyDeviceToHost) != cudaSuccess) {
    std::printf("launch failed: %s\n", cudaGetErrorString(cudaGetLastError()));
    return 1;
  }
  int bad = 0;
  for (int t = 0; t < kThreads; ++t) {
    const int w = t / 32, first = 32 * w, last = first + 32 < kThreads ? first + 32 : kThreads;
    unsigned odd = 0, side = 0, sum = 0;
    for (int u = first; u < last; ++u) {
      if (u & 1) odd |= 1u << (u - first);
      if ((u % 3 == 0) == (t % 3 == 0)) side |= 1u << (u - first);
      sum += 3u * u + 1;
    }
    if (t % 3 != 0) side |= 0x80000000u;
    const unsigned want[4] = {t < 32 ? 3u * ((t + 1) % 32) + 1 : 0, odd, side, t < 32 ? sum : 3u * t + 1};
    for (int k = 0; k < 4; ++k)
      if (got[4 * t + k] != want[k]) {
        if (bad < 8) std::printf("thread %d word %d: %08x, want %08x\n", t, k, got[4 * t + k], want[k]);
        ++bad;
      }
  }
  std::printf("warp 0: ballot %08x, sum %u; warp 1: ballot %08x\n", got[1], got[3], got[4 * 32 + 1]);
  std::printf(bad ? "FAILED\n" : "PASSED\n");
  return bad ? 1 : 0;
}
