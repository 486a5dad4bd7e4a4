// A 1D stencil with dynamic shared memory (extern __shared__, size given at
// launch): each block loads its tile plus a halo of `radius` elements on each
// side, then sums the window around every element.
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

__global__ void stencil(const int* in, int* out, int n, int radius) {
  extern __shared__ int tile[];  // blockDim.x + 2 * radius ints
  int g = blockIdx.x * blockDim.x + threadIdx.x;
  int l = threadIdx.x + radius;
  tile[l] = g < n ? in[g] : 0;
  if (threadIdx.x < radius) {
    int left = g - radius, right = g + blockDim.x;
    tile[l - radius] = left >= 0 ? in[left] : 0;
    tile[l + blockDim.x] = right < n ? in[right] : 0;
  }
  __syncthreads();
  if (g >= n) return;
  int sum = 0;
  for (int k = -radius; k <= radius; ++k) sum += tile[l + k];
  out[g] = sum;
}

int main() {
  const int n = 200, threads = 64, radius = 3;
  const int blocks = (n + threads - 1) / threads;
  int in[n];
  for (int i = 0; i < n; ++i) in[i] = (i * 7) % 23 - 11;

  int *d_in, *d_out;
  CHECK(cudaMalloc(&d_in, sizeof(in)));
  CHECK(cudaMalloc(&d_out, sizeof(in)));
  CHECK(cudaMemcpy(d_in, in, sizeof(in), cudaMemcpyHostToDevice));
  size_t smem = (threads + 2 * radius) * sizeof(int);
  stencil<<<blocks, threads, smem>>>(d_in, d_out, n, radius);
  CHECK(cudaGetLastError());
  int out[n];
  CHECK(cudaMemcpy(out, d_out, sizeof(out), cudaMemcpyDeviceToHost));
  CHECK(cudaFree(d_in));
  CHECK(cudaFree(d_out));

  int bad = 0, total = 0;
  for (int i = 0; i < n; ++i) {
    int ref = 0;
    for (int j = i - radius; j <= i + radius; ++j)
      if (j >= 0 && j < n) ref += in[j];
    if (out[i] != ref) ++bad;
    total += out[i];
  }
  printf("out[0..3] = %d %d %d %d, out[%d] = %d, total %d\n", out[0], out[1], out[2], out[3],
         threads, out[threads], total);
  printf("%d mismatches\n", bad);
  bool ok = bad == 0;
  printf("%s\n", ok ? "PASSED" : "FAILED");
  return ok ? 0 : 1;
}
