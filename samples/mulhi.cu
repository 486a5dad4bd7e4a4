// The high halves of products: __mulhi, __umulhi, __mul64hi, __umul64hi, and
// the widening 32x32->64 multiply, checked against 64- and 128-bit host
// arithmetic.
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

struct Products {
  int hi;
  unsigned uhi;
  long long wide;
  long long hi64;
  unsigned long long uhi64;
};

__global__ void products(const int* a, const int* b, Products* out, int n) {
  int i = threadIdx.x;
  if (i >= n) return;
  int x = a[i], y = b[i];
  long long x64 = (long long)x * 0x10001LL, y64 = (long long)y * 0x7fffLL;
  out[i].hi = __mulhi(x, y);
  out[i].uhi = __umulhi((unsigned)x, (unsigned)y);
  out[i].wide = (long long)x * y;
  out[i].hi64 = __mul64hi(x64, y64);
  out[i].uhi64 = __umul64hi((unsigned long long)x64, (unsigned long long)y64);
}

int main() {
  const int vals[6] = {0, 1, -1, 2147483647, (int)0x80000000, -123456789};
  const int n = 36;
  int a[n], b[n];
  for (int i = 0; i < n; ++i) {
    a[i] = vals[i / 6];
    b[i] = vals[i % 6];
  }

  int *d_a, *d_b;
  Products* d_out;
  CHECK(cudaMalloc(&d_a, sizeof(a)));
  CHECK(cudaMalloc(&d_b, sizeof(b)));
  CHECK(cudaMalloc(&d_out, n * sizeof(Products)));
  CHECK(cudaMemcpy(d_a, a, sizeof(a), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(d_b, b, sizeof(b), cudaMemcpyHostToDevice));
  products<<<1, n>>>(d_a, d_b, d_out, n);
  CHECK(cudaGetLastError());
  Products out[n];
  CHECK(cudaMemcpy(out, d_out, sizeof(out), cudaMemcpyDeviceToHost));
  CHECK(cudaFree(d_a));
  CHECK(cudaFree(d_b));
  CHECK(cudaFree(d_out));

  int bad = 0;
  for (int i = 0; i < n; ++i) {
    long long x = a[i], y = b[i];
    long long x64 = x * 0x10001LL, y64 = y * 0x7fffLL;
    if (out[i].hi != (int)((x * y) >> 32)) ++bad;
    if (out[i].uhi != (unsigned)(((unsigned long long)(unsigned)a[i] * (unsigned)b[i]) >> 32)) ++bad;
    if (out[i].wide != x * y) ++bad;
    if (out[i].hi64 != (long long)(((__int128)x64 * y64) >> 64)) ++bad;
    if (out[i].uhi64 != (unsigned long long)(((unsigned __int128)(unsigned long long)x64 *
                                              (unsigned long long)y64) >> 64))
      ++bad;
  }
  const Products& p = out[3 * 6 + 4];  // INT_MAX * INT_MIN
  printf("INT_MAX*INT_MIN: hi %d, uhi %u, wide %lld, hi64 %lld, uhi64 %llu\n", p.hi, p.uhi,
         p.wide, p.hi64, p.uhi64);
  printf("%d mismatches\n", bad);
  bool ok = bad == 0;
  printf("%s\n", ok ? "PASSED" : "FAILED");
  return ok ? 0 : 1;
}
