// cudaMemset and a pipeline of four launches over the same device buffers:
// memset to a byte pattern, fill, square in place, a neighbour difference
// into a second buffer, and a sum; the host checks every stage's result.
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

__global__ void fill_if_pattern(int* v, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n && v[i] == 0x01010101) v[i] = i - n / 2;  // only where the memset landed
}

__global__ void square(int* v, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) v[i] *= v[i];
}

__global__ void difference(const int* v, int* d, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) d[i] = i + 1 < n ? v[i + 1] - v[i] : 0;
}

__global__ void sum(const int* d, int n, int* total) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) atomicAdd(total, d[i]);
}

int main() {
  const int n = 100, threads = 32, blocks = (n + threads - 1) / threads;
  int *d_v, *d_d, *d_total;
  CHECK(cudaMalloc(&d_v, n * sizeof(int)));
  CHECK(cudaMalloc(&d_d, n * sizeof(int)));
  CHECK(cudaMalloc(&d_total, sizeof(int)));
  CHECK(cudaMemset(d_v, 0x01, n * sizeof(int)));
  CHECK(cudaMemset(d_v + 90, 0, 10 * sizeof(int)));  // the tail stays zero
  CHECK(cudaMemset(d_total, 0, sizeof(int)));

  fill_if_pattern<<<blocks, threads>>>(d_v, n);
  CHECK(cudaGetLastError());
  square<<<blocks, threads>>>(d_v, n);
  CHECK(cudaGetLastError());
  difference<<<blocks, threads>>>(d_v, d_d, n);
  CHECK(cudaGetLastError());
  sum<<<blocks, threads>>>(d_d, n, d_total);
  CHECK(cudaGetLastError());
  int v[n], d[n], total;
  CHECK(cudaMemcpy(v, d_v, sizeof(v), cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(d, d_d, sizeof(d), cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(&total, d_total, sizeof(total), cudaMemcpyDeviceToHost));
  CHECK(cudaFree(d_v));
  CHECK(cudaFree(d_d));
  CHECK(cudaFree(d_total));

  int bad = 0, ref_v[n];
  for (int i = 0; i < n; ++i) ref_v[i] = i < 90 ? (i - n / 2) * (i - n / 2) : 0;
  for (int i = 0; i < n; ++i) {
    if (v[i] != ref_v[i]) ++bad;
    if (d[i] != (i + 1 < n ? ref_v[i + 1] - ref_v[i] : 0)) ++bad;
  }
  // The differences telescope: their sum is v[n-1] - v[0].
  if (total != ref_v[n - 1] - ref_v[0]) ++bad;
  printf("v[0] %d v[50] %d v[89] %d v[90] %d; d[89] %d; total %d\n", v[0], v[50], v[89], v[90],
         d[89], total);
  printf("%d mismatches\n", bad);
  bool ok = bad == 0;
  printf("%s\n", ok ? "PASSED" : "FAILED");
  return ok ? 0 : 1;
}
