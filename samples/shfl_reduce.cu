// Warp reductions with shuffles: a tree sum with __shfl_down_sync (the
// result in lane 0) and a butterfly max with __shfl_xor_sync (the result in
// every lane), for two warps.
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

__global__ void warp_reduce(const int* in, int* sums, int* maxima) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int lane = threadIdx.x % 32, warp = i / 32;
  int sum = in[i], mx = in[i];
  for (int offset = 16; offset > 0; offset /= 2) sum += __shfl_down_sync(0xffffffffu, sum, offset);
  for (int mask = 1; mask < 32; mask *= 2) mx = max(mx, __shfl_xor_sync(0xffffffffu, mx, mask));
  if (lane == 0) sums[warp] = sum;
  maxima[i] = mx;  // every lane holds the warp's maximum
}

int main() {
  const int n = 64, warps = n / 32;
  int in[n];
  for (int i = 0; i < n; ++i) in[i] = (i * 73) % 101 - 50;

  int *d_in, *d_sums, *d_max;
  CHECK(cudaMalloc(&d_in, sizeof(in)));
  CHECK(cudaMalloc(&d_sums, warps * sizeof(int)));
  CHECK(cudaMalloc(&d_max, sizeof(in)));
  CHECK(cudaMemcpy(d_in, in, sizeof(in), cudaMemcpyHostToDevice));
  warp_reduce<<<1, n>>>(d_in, d_sums, d_max);
  CHECK(cudaGetLastError());
  int sums[warps], maxima[n];
  CHECK(cudaMemcpy(sums, d_sums, sizeof(sums), cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(maxima, d_max, sizeof(maxima), cudaMemcpyDeviceToHost));
  CHECK(cudaFree(d_in));
  CHECK(cudaFree(d_sums));
  CHECK(cudaFree(d_max));

  int bad = 0;
  for (int w = 0; w < warps; ++w) {
    int s = 0, m = in[32 * w];
    for (int l = 0; l < 32; ++l) {
      s += in[32 * w + l];
      m = in[32 * w + l] > m ? in[32 * w + l] : m;
    }
    if (sums[w] != s) ++bad;
    for (int l = 0; l < 32; ++l)
      if (maxima[32 * w + l] != m) ++bad;
    printf("warp %d: sum %d, max %d\n", w, sums[w], maxima[32 * w]);
  }
  printf("%d mismatches\n", bad);
  bool ok = bad == 0;
  printf("%s\n", ok ? "PASSED" : "FAILED");
  return ok ? 0 : 1;
}
