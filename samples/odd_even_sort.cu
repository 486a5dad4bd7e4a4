// Odd-even transposition sort of 64 elements by 32 threads: 64 phases that
// alternately compare even and odd pairs, with a barrier after each phase,
// then a block-wide check that the result is ordered (__syncthreads_and).
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

const int kN = 64;

__global__ void odd_even_sort(int* data, int* sorted_flag) {
  __shared__ int s[kN];
  int t = threadIdx.x;
  s[2 * t] = data[2 * t];
  s[2 * t + 1] = data[2 * t + 1];
  __syncthreads();
  for (int phase = 0; phase < kN; ++phase) {
    int i = 2 * t + (phase & 1);
    if (i + 1 < kN && s[i] > s[i + 1]) {
      int tmp = s[i];
      s[i] = s[i + 1];
      s[i + 1] = tmp;
    }
    __syncthreads();
  }
  data[2 * t] = s[2 * t];
  data[2 * t + 1] = s[2 * t + 1];
  bool ordered = s[2 * t] <= s[2 * t + 1] && (t == kN / 2 - 1 || s[2 * t + 1] <= s[2 * t + 2]);
  int all = __syncthreads_and(ordered);
  if (t == 0) *sorted_flag = all;
}

int main() {
  int data[kN];
  for (int i = 0; i < kN; ++i) data[i] = (i * 45 + 7) % 67 - 30;

  int *d_data, *d_flag;
  CHECK(cudaMalloc(&d_data, sizeof(data)));
  CHECK(cudaMalloc(&d_flag, sizeof(int)));
  CHECK(cudaMemcpy(d_data, data, sizeof(data), cudaMemcpyHostToDevice));
  odd_even_sort<<<1, kN / 2>>>(d_data, d_flag);
  CHECK(cudaGetLastError());
  int sorted[kN], flag;
  CHECK(cudaMemcpy(sorted, d_data, sizeof(sorted), cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(&flag, d_flag, sizeof(flag), cudaMemcpyDeviceToHost));
  CHECK(cudaFree(d_data));
  CHECK(cudaFree(d_flag));

  // Reference: counting sort over the value range -30..36.
  int counts[67] = {}, bad = 0, k = 0;
  for (int i = 0; i < kN; ++i) ++counts[data[i] + 30];
  for (int v = 0; v < 67; ++v)
    for (int c = 0; c < counts[v]; ++c)
      if (sorted[k++] != v - 30) ++bad;
  printf("sorted: %d %d %d %d ... %d %d, device says ordered: %d\n", sorted[0], sorted[1],
         sorted[2], sorted[3], sorted[kN - 2], sorted[kN - 1], flag);
  printf("%d mismatches\n", bad);
  bool ok = bad == 0 && flag == 1;
  printf("%s\n", ok ? "PASSED" : "FAILED");
  return ok ? 0 : 1;
}
