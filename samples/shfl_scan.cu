// Inclusive prefix sums within warps by __shfl_up_sync (Hillis-Steele), then
// across the four warps of a block through shared memory: a scan of 128
// elements.
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

__global__ void block_scan(const int* in, int* out) {
  __shared__ int warp_totals[4];
  int t = threadIdx.x, lane = t % 32, warp = t / 32;
  int v = in[t];
  for (int offset = 1; offset < 32; offset *= 2) {
    int up = __shfl_up_sync(0xffffffffu, v, offset);
    if (lane >= offset) v += up;
  }
  if (lane == 31) warp_totals[warp] = v;
  __syncthreads();
  if (warp == 0 && lane < 4) {  // scan the four totals with a 4-wide shuffle
    int total = warp_totals[lane];
    for (int offset = 1; offset < 4; offset *= 2) {
      int up = __shfl_up_sync(0xfu, total, offset, 4);
      if (lane >= offset) total += up;
    }
    warp_totals[lane] = total;
  }
  __syncthreads();
  if (warp > 0) v += warp_totals[warp - 1];
  out[t] = v;
}

int main() {
  const int n = 128;
  int in[n];
  for (int i = 0; i < n; ++i) in[i] = (i % 7) - (i % 3) * 2 + 1;

  int *d_in, *d_out;
  CHECK(cudaMalloc(&d_in, sizeof(in)));
  CHECK(cudaMalloc(&d_out, sizeof(in)));
  CHECK(cudaMemcpy(d_in, in, sizeof(in), cudaMemcpyHostToDevice));
  block_scan<<<1, n>>>(d_in, d_out);
  CHECK(cudaGetLastError());
  int out[n];
  CHECK(cudaMemcpy(out, d_out, sizeof(out), cudaMemcpyDeviceToHost));
  CHECK(cudaFree(d_in));
  CHECK(cudaFree(d_out));

  int bad = 0, running = 0;
  for (int i = 0; i < n; ++i) {
    running += in[i];
    if (out[i] != running) ++bad;
  }
  printf("scan[0..7] = %d %d %d %d %d %d %d %d\n", out[0], out[1], out[2], out[3], out[4],
         out[5], out[6], out[7]);
  printf("scan[31] = %d, scan[63] = %d, scan[127] = %d, %d mismatches\n", out[31], out[63],
         out[127], bad);
  bool ok = bad == 0;
  printf("%s\n", ok ? "PASSED" : "FAILED");
  return ok ? 0 : 1;
}
