// The dot product of [1,2,3] and [4,5,6]: three threads each multiply one
// pair and add it into a single integer with atomicAdd.
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

__global__ void dot(const int* a, const int* b, int* result, int n) {
  int i = threadIdx.x;
  if (i < n) atomicAdd(result, a[i] * b[i]);
}

int main() {
  const int n = 3;
  const int a[n] = {1, 2, 3};
  const int b[n] = {4, 5, 6};

  int *d_a, *d_b, *d_result;
  CHECK(cudaMalloc(&d_a, sizeof(a)));
  CHECK(cudaMalloc(&d_b, sizeof(b)));
  CHECK(cudaMalloc(&d_result, sizeof(int)));
  CHECK(cudaMemcpy(d_a, a, sizeof(a), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(d_b, b, sizeof(b), cudaMemcpyHostToDevice));
  CHECK(cudaMemset(d_result, 0, sizeof(int)));

  dot<<<1, n>>>(d_a, d_b, d_result, n);
  CHECK(cudaGetLastError());

  int result = 0;
  CHECK(cudaMemcpy(&result, d_result, sizeof(int), cudaMemcpyDeviceToHost));
  CHECK(cudaFree(d_a));
  CHECK(cudaFree(d_b));
  CHECK(cudaFree(d_result));

  int expected = 0;
  for (int i = 0; i < n; ++i) expected += a[i] * b[i];
  printf("dot([1,2,3],[4,5,6]) = %d\n", result);
  bool ok = result == expected;
  printf("%s\n", ok ? "PASSED" : "FAILED");
  return ok ? 0 : 1;
}
