// A grid of 10,000 CTAs of one thread (more than the 64 the model took
// before): CTA b writes b * 7 + 1 to out[b] and counts itself in a counter
// word with atomicAdd.  The host checks every word.
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

__global__ void mark(unsigned* out, unsigned* count) {
  out[blockIdx.x] = blockIdx.x * 7u + 1u;
  atomicAdd(count, 1u);
}

int main() {
  const int n = 10000;
  unsigned *d_out, *d_count;
  CHECK(cudaMalloc(&d_out, n * sizeof(unsigned)));
  CHECK(cudaMalloc(&d_count, sizeof(unsigned)));
  CHECK(cudaMemset(d_count, 0, sizeof(unsigned)));
  mark<<<n, 1>>>(d_out, d_count);
  CHECK(cudaGetLastError());
  static unsigned out[n];
  unsigned count = 0;
  CHECK(cudaMemcpy(out, d_out, sizeof out, cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(&count, d_count, sizeof count, cudaMemcpyDeviceToHost));
  int bad = 0;
  for (int b = 0; b < n; ++b) bad += out[b] != unsigned(b) * 7u + 1u;
  printf("CTAs %d, counted %u, wrong words %d, out[9999] = %u\n", n, count, bad, out[n - 1]);
  bool ok = bad == 0 && count == unsigned(n);
  printf("%s\n", ok ? "PASSED" : "FAILED");
  return ok ? 0 : 1;
}
