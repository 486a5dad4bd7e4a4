// Bitonic sort of 128 integers in shared memory: one thread per element,
// log2(128) * (log2(128) + 1) / 2 = 28 compare-exchange stages, each followed
// by a barrier.
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

const int kN = 128;

__global__ void bitonic_sort(int* data) {
  __shared__ int s[kN];
  unsigned t = threadIdx.x;
  s[t] = data[t];
  __syncthreads();
  for (unsigned size = 2; size <= kN; size *= 2) {
    for (unsigned stride = size / 2; stride > 0; stride /= 2) {
      unsigned partner = t ^ stride;
      if (partner > t) {
        bool ascending = (t & size) == 0;
        int a = s[t], b = s[partner];
        if ((a > b) == ascending) {
          s[t] = b;
          s[partner] = a;
        }
      }
      __syncthreads();
    }
  }
  data[t] = s[t];
}

int main() {
  int data[kN];
  unsigned x = 99;
  for (int i = 0; i < kN; ++i) {
    x = x * 1664525u + 1013904223u;
    data[i] = (int)(x >> 20) - 2048;
  }

  int* d_data;
  CHECK(cudaMalloc(&d_data, sizeof(data)));
  CHECK(cudaMemcpy(d_data, data, sizeof(data), cudaMemcpyHostToDevice));
  bitonic_sort<<<1, kN>>>(d_data);
  CHECK(cudaGetLastError());
  int sorted[kN];
  CHECK(cudaMemcpy(sorted, d_data, sizeof(sorted), cudaMemcpyDeviceToHost));
  CHECK(cudaFree(d_data));

  // Reference: insertion sort of the input.
  int ref[kN];
  for (int i = 0; i < kN; ++i) {
    int v = data[i], j = i;
    for (; j > 0 && ref[j - 1] > v; --j) ref[j] = ref[j - 1];
    ref[j] = v;
  }
  int bad = 0;
  for (int i = 0; i < kN; ++i)
    if (sorted[i] != ref[i]) ++bad;
  printf("sorted: %d %d %d %d ... %d %d %d %d\n", sorted[0], sorted[1], sorted[2], sorted[3],
         sorted[kN - 4], sorted[kN - 3], sorted[kN - 2], sorted[kN - 1]);
  printf("%d mismatches\n", bad);
  bool ok = bad == 0;
  printf("%s\n", ok ? "PASSED" : "FAILED");
  return ok ? 0 : 1;
}
