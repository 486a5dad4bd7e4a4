// Integer square roots by Newton's method (a loop that runs until the
// estimate stops decreasing) for 32-bit inputs, and 64-bit roots of x*x+x by
// bitwise digit-by-digit search; the host checks r*r <= x < (r+1)*(r+1).
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

__device__ unsigned isqrt32(unsigned x) {
  if (x < 2) return x;
  // x/2 + 1 is at least sqrt(x), so the estimates decrease monotonically to
  // floor(sqrt(x)), and r + x/r cannot overflow.
  unsigned r = x / 2 + 1, next = (r + x / r) / 2;
  while (next < r) {
    r = next;
    next = (r + x / r) / 2;
  }
  return r;
}

__device__ unsigned long long isqrt64(unsigned long long x) {
  unsigned long long r = 0;
  for (int bit = 31; bit >= 0; --bit) {
    unsigned long long candidate = r | (1ULL << bit);
    if (candidate * candidate <= x) r = candidate;
  }
  return r;
}

__global__ void roots(const unsigned* in, unsigned* r32, unsigned long long* r64) {
  int i = threadIdx.x;
  r32[i] = isqrt32(in[i]);
  r64[i] = isqrt64((unsigned long long)in[i] * in[i] + in[i]);
}

int main() {
  const int n = 32;
  unsigned in[n] = {0, 1, 2, 3, 4, 15, 16, 17, 0xffffffffu, 0xfffe0001u, 1000000};
  for (int i = 11; i < n; ++i) in[i] = (0x2545f491u * i) >> (i % 24);

  unsigned *d_in, *d_r32;
  unsigned long long* d_r64;
  CHECK(cudaMalloc(&d_in, sizeof(in)));
  CHECK(cudaMalloc(&d_r32, sizeof(in)));
  CHECK(cudaMalloc(&d_r64, n * sizeof(unsigned long long)));
  CHECK(cudaMemcpy(d_in, in, sizeof(in), cudaMemcpyHostToDevice));
  roots<<<1, n>>>(d_in, d_r32, d_r64);
  CHECK(cudaGetLastError());
  unsigned r32[n];
  unsigned long long r64[n];
  CHECK(cudaMemcpy(r32, d_r32, sizeof(r32), cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(r64, d_r64, sizeof(r64), cudaMemcpyDeviceToHost));
  CHECK(cudaFree(d_in));
  CHECK(cudaFree(d_r32));
  CHECK(cudaFree(d_r64));

  int bad = 0;
  for (int i = 0; i < n; ++i) {
    unsigned long long x = in[i], r = r32[i];
    if (r * r > x || (r + 1) * (r + 1) <= x) ++bad;
    unsigned __int128 y = (unsigned __int128)x * x + x, s = r64[i];
    if (s * s > y || (s + 1) * (s + 1) <= y) ++bad;
  }
  printf("isqrt: %u %u %u %u %u %u %u %u, isqrt(2^32-1) = %u\n", r32[0], r32[1], r32[2], r32[3],
         r32[4], r32[5], r32[6], r32[7], r32[8]);
  printf("isqrt64(x^2+x) for x = 2^32-1: %llu, %d mismatches\n", r64[8], bad);
  bool ok = bad == 0;
  printf("%s\n", ok ? "PASSED" : "FAILED");
  return ok ? 0 : 1;
}
