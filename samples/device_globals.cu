// __device__ globals shared by several launches: a counter and an array set
// with cudaMemcpyToSymbol, updated by three kernels in turn, and read back
// with cudaMemcpyFromSymbol between and after the launches.
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

__device__ int g_counter;
__device__ int g_values[32];
__device__ unsigned long long g_sum;

__global__ void scale(int factor) {
  int t = threadIdx.x;
  g_values[t] *= factor;
  atomicAdd(&g_counter, 1);
}

__global__ void offset_odd(int delta) {
  int t = threadIdx.x;
  if (t & 1) {
    g_values[t] += delta;
    atomicAdd(&g_counter, 1);
  }
}

__global__ void total() {
  atomicAdd(&g_sum, (unsigned long long)(long long)g_values[threadIdx.x]);
}

int main() {
  const int n = 32;
  int values[n];
  for (int i = 0; i < n; ++i) values[i] = i - 10;
  const int zero = 0;
  const unsigned long long zero64 = 0;
  CHECK(cudaMemcpyToSymbol(g_values, values, sizeof(values)));
  CHECK(cudaMemcpyToSymbol(g_counter, &zero, sizeof(zero)));
  CHECK(cudaMemcpyToSymbol(g_sum, &zero64, sizeof(zero64)));

  scale<<<1, n>>>(3);
  CHECK(cudaGetLastError());
  int after_scale[n];
  CHECK(cudaMemcpyFromSymbol(after_scale, g_values, sizeof(after_scale)));
  offset_odd<<<1, n>>>(100);
  CHECK(cudaGetLastError());
  total<<<1, n>>>();
  CHECK(cudaGetLastError());
  int final_values[n], counter;
  unsigned long long sum;
  CHECK(cudaMemcpyFromSymbol(final_values, g_values, sizeof(final_values)));
  CHECK(cudaMemcpyFromSymbol(&counter, g_counter, sizeof(counter)));
  CHECK(cudaMemcpyFromSymbol(&sum, g_sum, sizeof(sum)));

  int bad = 0;
  long long ref_sum = 0;
  for (int i = 0; i < n; ++i) {
    int v = values[i] * 3;
    if (after_scale[i] != v) ++bad;
    if (i % 2) v += 100;
    if (final_values[i] != v) ++bad;
    ref_sum += v;
  }
  if (counter != n + n / 2 || (long long)sum != ref_sum) ++bad;
  printf("after scale: %d %d %d; final: %d %d %d\n", after_scale[0], after_scale[1],
         after_scale[2], final_values[0], final_values[1], final_values[2]);
  printf("counter %d, sum %lld, %d mismatches\n", counter, (long long)sum, bad);
  bool ok = bad == 0;
  printf("%s\n", ok ? "PASSED" : "FAILED");
  return ok ? 0 : 1;
}
