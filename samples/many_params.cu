// A kernel with twenty parameters of mixed types and sizes (char, unsigned
// char, short, int, unsigned, long long, pointers), which the ABI lays out
// with padding in the parameter buffer.
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

__global__ void many(int* out, char c0, unsigned char u0, short s0, int i0, long long l0,
                     char c1, unsigned short us1, int i1, unsigned u1, long long l1,
                     const int* src, short s2, char c2, int i2, unsigned char u2,
                     long long l2, int i3, short s3, int i4, long long* wide_out) {
  int t = threadIdx.x;
  int v = src[t];
  out[t] = v * c0 + u0 - s0 + i0 * (t & 1) + (int)(l0 >> 32) + c1 * us1 + i1 - (int)u1 +
           (int)(l1 % 1000) + s2 * c2 + i2 + u2 + i3 * s3 + i4;
  if (t == 0) *wide_out = l0 + l1 + l2;
}

int main() {
  const int n = 16;
  int src[n];
  for (int i = 0; i < n; ++i) src[i] = i * 3 - 20;
  const char c0 = -3, c1 = 5, c2 = -7;
  const unsigned char u0 = 200, u2 = 255;
  const short s0 = -1234, s2 = 321, s3 = -2;
  const unsigned short us1 = 60000;
  const int i0 = 111, i1 = -2222, i2 = 33333, i3 = 44, i4 = -55555;
  const unsigned u1 = 4000000000u;
  const long long l0 = 0x123456789abLL, l1 = -987654321012LL, l2 = 1LL << 62;

  int *d_src, *d_out;
  long long* d_wide;
  CHECK(cudaMalloc(&d_src, sizeof(src)));
  CHECK(cudaMalloc(&d_out, sizeof(src)));
  CHECK(cudaMalloc(&d_wide, sizeof(long long)));
  CHECK(cudaMemcpy(d_src, src, sizeof(src), cudaMemcpyHostToDevice));
  many<<<1, n>>>(d_out, c0, u0, s0, i0, l0, c1, us1, i1, u1, l1, d_src, s2, c2, i2, u2, l2, i3,
                 s3, i4, d_wide);
  CHECK(cudaGetLastError());
  int out[n];
  long long wide;
  CHECK(cudaMemcpy(out, d_out, sizeof(out), cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(&wide, d_wide, sizeof(wide), cudaMemcpyDeviceToHost));
  CHECK(cudaFree(d_src));
  CHECK(cudaFree(d_out));
  CHECK(cudaFree(d_wide));

  int bad = 0;
  for (int t = 0; t < n; ++t) {
    int ref = src[t] * c0 + u0 - s0 + i0 * (t & 1) + (int)(l0 >> 32) + c1 * us1 + i1 - (int)u1 +
              (int)(l1 % 1000) + s2 * c2 + i2 + u2 + i3 * s3 + i4;
    if (out[t] != ref) ++bad;
  }
  if (wide != l0 + l1 + l2) ++bad;
  printf("out[0..3] = %d %d %d %d, wide = %lld\n", out[0], out[1], out[2], out[3], wide);
  printf("%d mismatches\n", bad);
  bool ok = bad == 0;
  printf("%s\n", ok ? "PASSED" : "FAILED");
  return ok ? 0 : 1;
}
