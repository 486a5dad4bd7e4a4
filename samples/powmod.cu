// Modular exponentiation by repeated squaring with 64-bit products and
// remainders: a loop over the exponent's bits, with a multiply only where a
// bit is set.
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

__device__ unsigned powmod(unsigned base, unsigned exp, unsigned mod) {
  unsigned long long result = 1 % mod, b = base % mod;
  while (exp) {
    if (exp & 1) result = result * b % mod;
    b = b * b % mod;
    exp >>= 1;
  }
  return (unsigned)result;
}

__global__ void powmod_kernel(const unsigned* base, const unsigned* exp, unsigned mod,
                              unsigned* out, int n) {
  int i = threadIdx.x;
  if (i < n) out[i] = powmod(base[i], exp[i], mod);
}

int main() {
  const int n = 32;
  const unsigned mod = 1000000007u;
  unsigned base[n], exp[n];
  for (int i = 0; i < n; ++i) {
    base[i] = 2 + 7919u * i;
    exp[i] = i == 0 ? 0 : (i * 2654435761u) >> (i % 16);
  }
  exp[1] = mod - 1;  // Fermat: base^(p-1) = 1 mod p

  unsigned *d_base, *d_exp, *d_out;
  CHECK(cudaMalloc(&d_base, sizeof(base)));
  CHECK(cudaMalloc(&d_exp, sizeof(exp)));
  CHECK(cudaMalloc(&d_out, sizeof(base)));
  CHECK(cudaMemcpy(d_base, base, sizeof(base), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(d_exp, exp, sizeof(exp), cudaMemcpyHostToDevice));
  powmod_kernel<<<1, n>>>(d_base, d_exp, mod, d_out, n);
  CHECK(cudaGetLastError());
  unsigned out[n];
  CHECK(cudaMemcpy(out, d_out, sizeof(out), cudaMemcpyDeviceToHost));
  CHECK(cudaFree(d_base));
  CHECK(cudaFree(d_exp));
  CHECK(cudaFree(d_out));

  // Reference: left-to-right binary exponentiation with 128-bit products.
  int bad = 0;
  for (int i = 0; i < n; ++i) {
    unsigned __int128 r = 1;
    for (int bit = 31; bit >= 0; --bit) {
      r = r * r % mod;
      if ((exp[i] >> bit) & 1) r = r * base[i] % mod;
    }
    if (out[i] != (unsigned)r) ++bad;
  }
  printf("%u^0 = %u, %u^(p-1) = %u, %u^%u = %u mod %u\n", base[0], out[0], base[1], out[1],
         base[5], exp[5], out[5], mod);
  printf("%d mismatches\n", bad);
  bool ok = bad == 0;
  printf("%s\n", ok ? "PASSED" : "FAILED");
  return ok ? 0 : 1;
}
