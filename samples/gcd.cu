// Greatest common divisors and least common multiples by Euclid's algorithm:
// a remainder loop with a data-dependent trip count, then a 64-bit lcm.
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

__device__ unsigned gcd(unsigned a, unsigned b) {
  while (b != 0) {
    unsigned t = a % b;
    a = b;
    b = t;
  }
  return a;
}

__global__ void gcd_lcm(const unsigned* a, const unsigned* b, unsigned* g,
                        unsigned long long* l, int n) {
  int i = threadIdx.x;
  if (i >= n) return;
  unsigned d = gcd(a[i], b[i]);
  g[i] = d;
  l[i] = d == 0 ? 0 : (unsigned long long)(a[i] / d) * b[i];
}

int main() {
  const int n = 48;
  unsigned a[n], b[n];
  unsigned x = 12345;
  for (int i = 0; i < n; ++i) {
    x = x * 1103515245u + 12345u;
    a[i] = (x >> 8) % 100000 * (i % 5 + 1);
    x = x * 1103515245u + 12345u;
    b[i] = (x >> 8) % 100000 * (i % 3 + 1);
  }
  a[0] = 0;  // gcd(0, b) = b
  b[1] = 0;  // gcd(a, 0) = a

  unsigned *d_a, *d_b, *d_g;
  unsigned long long* d_l;
  CHECK(cudaMalloc(&d_a, sizeof(a)));
  CHECK(cudaMalloc(&d_b, sizeof(b)));
  CHECK(cudaMalloc(&d_g, sizeof(a)));
  CHECK(cudaMalloc(&d_l, n * sizeof(unsigned long long)));
  CHECK(cudaMemcpy(d_a, a, sizeof(a), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(d_b, b, sizeof(b), cudaMemcpyHostToDevice));
  gcd_lcm<<<1, n>>>(d_a, d_b, d_g, d_l, n);
  CHECK(cudaGetLastError());
  unsigned g[n];
  unsigned long long l[n];
  CHECK(cudaMemcpy(g, d_g, sizeof(g), cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(l, d_l, sizeof(l), cudaMemcpyDeviceToHost));
  CHECK(cudaFree(d_a));
  CHECK(cudaFree(d_b));
  CHECK(cudaFree(d_g));
  CHECK(cudaFree(d_l));

  // Reference: the binary (Stein) algorithm, a different method from the kernel's.
  int bad = 0;
  for (int i = 0; i < n; ++i) {
    unsigned u = a[i], v = b[i], shift = 0, ref;
    if (u == 0 || v == 0) {
      ref = u | v;
    } else {
      while (((u | v) & 1) == 0) { u >>= 1; v >>= 1; ++shift; }
      while ((u & 1) == 0) u >>= 1;
      while (v != 0) {
        while ((v & 1) == 0) v >>= 1;
        if (u > v) { unsigned t = u; u = v; v = t; }
        v -= u;
      }
      ref = u << shift;
    }
    unsigned long long ref_l = ref == 0 ? 0 : (unsigned long long)(a[i] / ref) * b[i];
    if (g[i] != ref || l[i] != ref_l) ++bad;
  }
  printf("gcd(%u,%u) = %u, lcm = %llu\n", a[2], b[2], g[2], l[2]);
  printf("gcd(0,%u) = %u, gcd(%u,0) = %u, %d mismatches\n", b[0], g[0], a[1], g[1], bad);
  bool ok = bad == 0;
  printf("%s\n", ok ? "PASSED" : "FAILED");
  return ok ? 0 : 1;
}
