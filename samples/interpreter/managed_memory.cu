// Managed memory: a cudaMallocManaged buffer written by the host, updated by
// two kernels with a host pass between them, and read by the host after
// cudaDeviceSynchronize; plus a __managed__ global counter.
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

__managed__ unsigned long long total;

__global__ void square_add(int* data, int n, int add) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    data[i] = data[i] * data[i] + add;
    atomicAdd(&total, (unsigned long long)data[i]);
  }
}

int main() {
  const int n = 1 << 16;  // 256 KiB
  int* data = nullptr;
  CHECK(cudaMallocManaged(&data, n * sizeof(int)));
  for (int i = 0; i < n; ++i) data[i] = i % 1000;
  total = 0;
  square_add<<<(n + 255) / 256, 256>>>(data, n, 1);
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());
  const unsigned long long first_total = total;
  for (int i = 0; i < n; ++i) data[i] = data[i] % 977;  // host pass between the kernels
  square_add<<<(n + 255) / 256, 256>>>(data, n, 3);
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());

  unsigned long long expect_first = 0, expect_total = 0;
  int bad = 0;
  for (int i = 0; i < n; ++i) {
    long long v = (long long)(i % 1000) * (i % 1000) + 1;
    expect_first += v;
    v %= 977;
    v = v * v + 3;
    expect_total += v;
    if (data[i] != (int)v) ++bad;
  }
  expect_total += expect_first;
  printf("managed: %d wrong of %d, total %llu after the first kernel (expected %llu), %llu at the end (expected %llu)\n",
         bad, n, first_total, expect_first, total, expect_total);
  const bool ok = bad == 0 && first_total == expect_first && total == expect_total;
  CHECK(cudaFree(data));
  printf("%s\n", ok ? "PASSED" : "FAILED");
  return ok ? 0 : 1;
}
