// 32 KB of kernel parameters (CUDA 12.1+ on sm_70+ allows 32,764 bytes): a
// struct of 8,000 ints passed by value plus a pointer; every thread reads a
// strided part of it and the sums are checked.
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

constexpr int kWords = 8000;  // 32,000 bytes
struct Big {
  int v[kWords];
};
static_assert(sizeof(Big) + sizeof(int*) <= 32764, "over the parameter limit");

__global__ void read_params(const Big big, int* out) {
  int sum = 0;
  for (int i = threadIdx.x; i < kWords; i += blockDim.x) sum += big.v[i] ^ i;
  out[threadIdx.x] = sum;
}

int main() {
  static Big big;
  for (int i = 0; i < kWords; ++i) big.v[i] = i * 7919 - 3 * (i % 13);
  const int threads = 64;
  int* d_out;
  CHECK(cudaMalloc(&d_out, threads * sizeof(int)));
  read_params<<<1, threads>>>(big, d_out);
  CHECK(cudaGetLastError());
  int out[threads];
  CHECK(cudaMemcpy(out, d_out, sizeof(out), cudaMemcpyDeviceToHost));
  CHECK(cudaFree(d_out));

  int bad = 0;
  for (int t = 0; t < threads; ++t) {
    int expected = 0;
    for (int i = t; i < kWords; i += threads) expected += big.v[i] ^ i;
    if (out[t] != expected) ++bad;
  }
  printf("%d bytes of parameters, %d of %d threads wrong\n", (int)(sizeof(Big) + sizeof(int*)), bad, threads);
  printf("%s\n", bad == 0 ? "PASSED" : "FAILED");
  return bad == 0 ? 0 : 1;
}
