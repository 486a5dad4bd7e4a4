// A program from two translation units, each with its own kernels (and so its
// own fatbinary): this file fills a vector and sums it; two_units_kernels.cu
// squares it.  Built without -rdc, so each unit registers separately.
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

#define CHECK(call)                                                          \
  do {                                                                       \
    cudaError_t err_ = (call);                                               \
    if (err_ != cudaSuccess) {                                               \
      printf("CUDA error at %s:%d: %s\n", __FILE__, __LINE__,               \
             cudaGetErrorString(err_));                                      \
      exit(1);                                                               \
    }                                                                        \
  } while (0)

// Defined in two_units_kernels.cu: launches its kernel on v[0..n).
void square_on_device(int* v, int n);

__global__ void iota(int* v, int n) {
  int i = threadIdx.x;
  if (i < n) v[i] = i + 1;
}

__global__ void sum(const int* v, int n, int* out) {
  int i = threadIdx.x;
  if (i < n) atomicAdd(out, v[i]);
}

int main() {
  const int n = 8;
  int *d_v, *d_sum;
  CHECK(cudaMalloc(&d_v, n * sizeof(int)));
  CHECK(cudaMalloc(&d_sum, sizeof(int)));
  CHECK(cudaMemset(d_sum, 0, sizeof(int)));

  iota<<<1, n>>>(d_v, n);
  CHECK(cudaGetLastError());
  square_on_device(d_v, n);
  sum<<<1, n>>>(d_v, n, d_sum);
  CHECK(cudaGetLastError());

  int total = 0;
  CHECK(cudaMemcpy(&total, d_sum, sizeof(int), cudaMemcpyDeviceToHost));
  CHECK(cudaFree(d_v));
  CHECK(cudaFree(d_sum));

  int expected = 0;
  for (int i = 1; i <= n; ++i) expected += i * i;
  printf("sum of squares 1..%d = %d\n", n, total);
  bool ok = total == expected;
  printf("%s\n", ok ? "PASSED" : "FAILED");
  return ok ? 0 : 1;
}
