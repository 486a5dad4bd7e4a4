// 64-bit integer arithmetic: each thread runs eight rounds of the splitmix64
// generator (64-bit add, xor, shifts and multiplies that wrap) and a 64-bit
// signed comparison chain; the host runs the same generator.
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

__host__ __device__ unsigned long long splitmix64(unsigned long long& state) {
  unsigned long long z = (state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

__global__ void generate(const unsigned long long* seeds, unsigned long long* out,
                         int* negatives, int n) {
  int i = threadIdx.x;
  if (i >= n) return;
  unsigned long long state = seeds[i], acc = 0;
  int neg = 0;
  for (int r = 0; r < 8; ++r) {
    unsigned long long v = splitmix64(state);
    acc = acc * 3 + v;
    if ((long long)v < 0) ++neg;
  }
  out[i] = acc;
  negatives[i] = neg;
}

int main() {
  const int n = 32;
  unsigned long long seeds[n];
  for (int i = 0; i < n; ++i) seeds[i] = (unsigned long long)i * 0x123456789ULL;

  unsigned long long *d_seeds, *d_out;
  int* d_neg;
  CHECK(cudaMalloc(&d_seeds, sizeof(seeds)));
  CHECK(cudaMalloc(&d_out, sizeof(seeds)));
  CHECK(cudaMalloc(&d_neg, n * sizeof(int)));
  CHECK(cudaMemcpy(d_seeds, seeds, sizeof(seeds), cudaMemcpyHostToDevice));
  generate<<<1, n>>>(d_seeds, d_out, d_neg, n);
  CHECK(cudaGetLastError());
  unsigned long long out[n];
  int neg[n];
  CHECK(cudaMemcpy(out, d_out, sizeof(out), cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(neg, d_neg, sizeof(neg), cudaMemcpyDeviceToHost));
  CHECK(cudaFree(d_seeds));
  CHECK(cudaFree(d_out));
  CHECK(cudaFree(d_neg));

  int bad = 0, total_neg = 0;
  for (int i = 0; i < n; ++i) {
    unsigned long long state = seeds[i], acc = 0;
    int ref_neg = 0;
    for (int r = 0; r < 8; ++r) {
      unsigned long long v = splitmix64(state);
      acc = acc * 3 + v;
      if (v >> 63) ++ref_neg;
    }
    if (out[i] != acc || neg[i] != ref_neg) ++bad;
    total_neg += neg[i];
  }
  printf("out[0] = %016llx, out[31] = %016llx, negatives %d\n", out[0], out[31], total_neg);
  printf("%d mismatches\n", bad);
  bool ok = bad == 0;
  printf("%s\n", ok ? "PASSED" : "FAILED");
  return ok ? 0 : 1;
}
