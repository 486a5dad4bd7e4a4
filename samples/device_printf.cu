// Device printf: one thread prints a header, then four lanes print in turn
// (one lane per step, with __syncwarp between), so the output order is
// deterministic; the printed values are also written to memory and checked.
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

__global__ void report(const int* in, int* out) {
  int lane = threadIdx.x;
  int v = in[lane] * in[lane] - 1;
  out[lane] = v;
  if (lane == 0) printf("device: %d threads, block %d\n", blockDim.x, blockIdx.x);
  __syncwarp();
  for (int turn = 0; turn < 4; ++turn) {
    if (lane == turn) printf("device: lane %d: %d*%d-1 = %d (%s)\n", lane, in[lane], in[lane], v,
                             v % 2 ? "odd" : "even");
    __syncwarp();
  }
}

int main() {
  const int n = 4;
  int in[n] = {3, -4, 12, 7};
  int *d_in, *d_out;
  CHECK(cudaMalloc(&d_in, sizeof(in)));
  CHECK(cudaMalloc(&d_out, sizeof(in)));
  CHECK(cudaMemcpy(d_in, in, sizeof(in), cudaMemcpyHostToDevice));
  report<<<1, n>>>(d_in, d_out);
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());  // flushes the device printf buffer
  int out[n];
  CHECK(cudaMemcpy(out, d_out, sizeof(out), cudaMemcpyDeviceToHost));
  CHECK(cudaFree(d_in));
  CHECK(cudaFree(d_out));

  int bad = 0;
  for (int i = 0; i < n; ++i)
    if (out[i] != in[i] * in[i] - 1) ++bad;
  printf("host: %d mismatches\n", bad);
  bool ok = bad == 0;
  printf("%s\n", ok ? "PASSED" : "FAILED");
  return ok ? 0 : 1;
}
