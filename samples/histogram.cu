// Histogram of 256 bytes into 16 bins: each of two blocks counts its half in
// a shared-memory histogram with atomicAdd, then merges it into the global
// histogram with one atomicAdd per bin.
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

const int kBins = 16;

__global__ void histogram(const unsigned char* data, int n, unsigned* bins) {
  __shared__ unsigned local[kBins];
  int t = threadIdx.x;
  if (t < kBins) local[t] = 0;
  __syncthreads();
  for (int i = blockIdx.x * blockDim.x + t; i < n; i += gridDim.x * blockDim.x)
    atomicAdd(&local[data[i] >> 4], 1u);
  __syncthreads();
  if (t < kBins && local[t] != 0) atomicAdd(&bins[t], local[t]);
}

int main() {
  const int n = 256;
  unsigned char data[n];
  unsigned x = 2024;
  for (int i = 0; i < n; ++i) {
    x = x * 1103515245u + 12345u;
    data[i] = (unsigned char)((x >> 16) & 0xff) & (i % 3 ? 0xff : 0x7f);
  }

  unsigned char* d_data;
  unsigned* d_bins;
  CHECK(cudaMalloc(&d_data, n));
  CHECK(cudaMalloc(&d_bins, kBins * sizeof(unsigned)));
  CHECK(cudaMemcpy(d_data, data, n, cudaMemcpyHostToDevice));
  CHECK(cudaMemset(d_bins, 0, kBins * sizeof(unsigned)));
  histogram<<<2, 64>>>(d_data, n, d_bins);
  CHECK(cudaGetLastError());
  unsigned bins[kBins];
  CHECK(cudaMemcpy(bins, d_bins, sizeof(bins), cudaMemcpyDeviceToHost));
  CHECK(cudaFree(d_data));
  CHECK(cudaFree(d_bins));

  unsigned ref[kBins] = {};
  for (int i = 0; i < n; ++i) ++ref[data[i] / 16];
  int bad = 0;
  printf("bins:");
  for (int b = 0; b < kBins; ++b) {
    printf(" %u", bins[b]);
    if (bins[b] != ref[b]) ++bad;
  }
  printf("\n%d mismatches\n", bad);
  bool ok = bad == 0;
  printf("%s\n", ok ? "PASSED" : "FAILED");
  return ok ? 0 : 1;
}
