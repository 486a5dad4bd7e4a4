// A grid-stride loop: a small grid (4 blocks of 32 threads) covers 1000
// elements, each thread visiting every 128th one; computes a saturating
// 8-bit add of two byte arrays.
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

__global__ void add_saturate(const unsigned char* a, const unsigned char* b, unsigned char* out,
                             int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {
    int s = a[i] + b[i];
    out[i] = s > 255 ? 255 : (unsigned char)s;
  }
}

int main() {
  const int n = 1000;
  unsigned char a[n], b[n];
  for (int i = 0; i < n; ++i) {
    a[i] = (unsigned char)(i * 7);
    b[i] = (unsigned char)(i * 13 + 5);
  }

  unsigned char *d_a, *d_b, *d_out;
  CHECK(cudaMalloc(&d_a, n));
  CHECK(cudaMalloc(&d_b, n));
  CHECK(cudaMalloc(&d_out, n));
  CHECK(cudaMemcpy(d_a, a, n, cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(d_b, b, n, cudaMemcpyHostToDevice));
  add_saturate<<<4, 32>>>(d_a, d_b, d_out, n);
  CHECK(cudaGetLastError());
  unsigned char out[n];
  CHECK(cudaMemcpy(out, d_out, n, cudaMemcpyDeviceToHost));
  CHECK(cudaFree(d_a));
  CHECK(cudaFree(d_b));
  CHECK(cudaFree(d_out));

  int bad = 0, saturated = 0;
  unsigned sum = 0;
  for (int i = 0; i < n; ++i) {
    int s = a[i] + b[i];
    if (out[i] != (s > 255 ? 255 : s)) ++bad;
    saturated += out[i] == 255;
    sum += out[i];
  }
  printf("out[0..3] = %u %u %u %u, out[999] = %u\n", out[0], out[1], out[2], out[3], out[999]);
  printf("sum %u, saturated %d, %d mismatches\n", sum, saturated, bad);
  bool ok = bad == 0;
  printf("%s\n", ok ? "PASSED" : "FAILED");
  return ok ? 0 : 1;
}
