// Warp-level operations on the GPU inside the model, over a full warp and a
// partial one (40 threads): a rotating __shfl_sync, a ballot, __activemask
// on the two sides of a divergent branch and __syncwarp.  Prints PASSED when
// every word is what CUDA defines.
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
  out[3 * t] = t < 32 ? rot : 0;
  out[3 * t + 1] = odd;
  out[3 * t + 2] = side;
}

int main() {
  unsigned* d = nullptr;
  if (cudaMalloc(&d, 3 * kThreads * sizeof(unsigned)) != cudaSuccess) return 2;
  warp_ops<<<1, kThreads>>>(d);
  unsigned got[3 * kThreads];
  if (cudaMemcpy(got, d, sizeof got, cudaMemcpyDeviceToHost) != cudaSuccess) {
    std::printf("launch failed: %s\n", cudaGetErrorString(cudaGetLastError()));
    return 1;
  }
  int bad = 0;
  for (int t = 0; t < kThreads; ++t) {
    const int w = t / 32, first = 32 * w, last = first + 32 < kThreads ? first + 32 : kThreads;
    unsigned odd = 0, side = 0;
    for (int u = first; u < last; ++u) {
      if (u & 1) odd |= 1u << (u - first);
      if ((u % 3 == 0) == (t % 3 == 0)) side |= 1u << (u - first);
    }
    if (t % 3 != 0) side |= 0x80000000u;
    const unsigned want[3] = {t < 32 ? 3u * ((t + 1) % 32) + 1 : 0, odd, side};
    for (int k = 0; k < 3; ++k)
      if (got[3 * t + k] != want[k]) {
        if (bad < 8) std::printf("thread %d word %d: %08x, want %08x\n", t, k, got[3 * t + k], want[k]);
        ++bad;
      }
  }
  std::printf("warp 0: ballot %08x; warp 1: ballot %08x\n", got[1], got[3 * 32 + 1]);
  std::printf(bad ? "FAILED\n" : "PASSED\n");
  return bad ? 1 : 0;
}
