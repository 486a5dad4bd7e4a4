// Division by run-time invariant divisors through multiplication: the host
// precomputes a "magic" multiplier per divisor (Granlund and Montgomery's
// method), and the kernel divides with __umulhi, an add, and shifts, then
// checks itself against the hardware division it replaces.
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

struct Divisor {
  unsigned d, magic, shift;  // shift = ceil(log2(d)) - 1, unused for d == 1
};

__device__ unsigned divide(unsigned n, Divisor v) {
  if (v.d == 1) return n;
  unsigned t = __umulhi(v.magic, n);
  return (t + ((n - t) >> 1)) >> v.shift;
}

__global__ void divide_all(const unsigned* numerators, const Divisor* divisors, unsigned* quotients,
                           int* disagreements, int nd) {
  int i = threadIdx.x;
  unsigned n = numerators[i];
  int wrong = 0;
  for (int k = 0; k < nd; ++k) {
    unsigned q = divide(n, divisors[k]);
    quotients[i * nd + k] = q;
    wrong += q != n / divisors[k].d;
  }
  disagreements[i] = wrong;
}

Divisor make_divisor(unsigned d) {
  unsigned l = 0;
  while ((1ULL << l) < d) ++l;  // l = ceil(log2(d))
  unsigned long long magic = (((1ULL << l) - d) << 32) / d + 1;
  return {d, (unsigned)magic, l == 0 ? 0 : l - 1};
}

int main() {
  const int nn = 32, nd = 8;
  const unsigned ds[nd] = {1, 2, 3, 7, 10, 641, 65537, 0x80000001u};
  unsigned numerators[nn] = {0, 1, 2, 6, 7, 0xffffffffu, 0xfffffffeu, 0x80000000u};
  for (int i = 8; i < nn; ++i) numerators[i] = 0x9e3779b9u * i ^ (i << 20);
  Divisor divisors[nd];
  for (int k = 0; k < nd; ++k) divisors[k] = make_divisor(ds[k]);

  unsigned *d_num, *d_q;
  Divisor* d_div;
  int* d_wrong;
  CHECK(cudaMalloc(&d_num, sizeof(numerators)));
  CHECK(cudaMalloc(&d_div, sizeof(divisors)));
  CHECK(cudaMalloc(&d_q, nn * nd * sizeof(unsigned)));
  CHECK(cudaMalloc(&d_wrong, nn * sizeof(int)));
  CHECK(cudaMemcpy(d_num, numerators, sizeof(numerators), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(d_div, divisors, sizeof(divisors), cudaMemcpyHostToDevice));
  divide_all<<<1, nn>>>(d_num, d_div, d_q, d_wrong, nd);
  CHECK(cudaGetLastError());
  unsigned q[nn * nd];
  int wrong[nn];
  CHECK(cudaMemcpy(q, d_q, sizeof(q), cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(wrong, d_wrong, sizeof(wrong), cudaMemcpyDeviceToHost));
  CHECK(cudaFree(d_num));
  CHECK(cudaFree(d_div));
  CHECK(cudaFree(d_q));
  CHECK(cudaFree(d_wrong));

  int bad = 0, device_wrong = 0;
  for (int i = 0; i < nn; ++i) {
    device_wrong += wrong[i];
    for (int k = 0; k < nd; ++k)
      if (q[i * nd + k] != numerators[i] / ds[k]) ++bad;
  }
  printf("magic(7) = %08x shift %u, magic(641) = %08x shift %u\n", divisors[3].magic,
         divisors[3].shift, divisors[5].magic, divisors[5].shift);
  printf("0xffffffff / 7 = %u, / 65537 = %u, / 0x80000001 = %u\n", q[5 * nd + 3], q[5 * nd + 6],
         q[5 * nd + 7]);
  printf("%d mismatches, %d device disagreements\n", bad, device_wrong);
  bool ok = bad == 0 && device_wrong == 0;
  printf("%s\n", ok ? "PASSED" : "FAILED");
  return ok ? 0 : 1;
}
