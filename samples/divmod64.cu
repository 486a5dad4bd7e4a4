// Signed and unsigned 64-bit division and remainder (div.s64, rem.u64, ...):
// every pair of eight numerators and four divisors, large and negative values
// included.
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

__global__ void divmod64(const long long* num, const long long* den, long long* q,
                         long long* r, unsigned long long* uq, unsigned long long* ur,
                         int n) {
  int i = threadIdx.x;
  if (i >= n) return;
  long long a = num[i], b = den[i];
  q[i] = a / b;
  r[i] = a % b;
  uq[i] = (unsigned long long)a / (unsigned long long)b;
  ur[i] = (unsigned long long)a % (unsigned long long)b;
}

int main() {
  const long long nums[8] = {0LL, 1LL, -1LL, 1000000000000LL, -1000000000000LL,
                             9223372036854775807LL, -9223372036854775807LL, 4294967296LL};
  const long long dens[4] = {3LL, -7LL, 4294967297LL, -1000003LL};
  const int n = 32;
  long long num[n], den[n];
  for (int i = 0; i < n; ++i) {
    num[i] = nums[i / 4];
    den[i] = dens[i % 4];
  }

  long long *d_num, *d_den, *d_q, *d_r;
  unsigned long long *d_uq, *d_ur;
  CHECK(cudaMalloc(&d_num, sizeof(num)));
  CHECK(cudaMalloc(&d_den, sizeof(den)));
  CHECK(cudaMalloc(&d_q, sizeof(num)));
  CHECK(cudaMalloc(&d_r, sizeof(num)));
  CHECK(cudaMalloc(&d_uq, sizeof(num)));
  CHECK(cudaMalloc(&d_ur, sizeof(num)));
  CHECK(cudaMemcpy(d_num, num, sizeof(num), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(d_den, den, sizeof(den), cudaMemcpyHostToDevice));
  divmod64<<<1, n>>>(d_num, d_den, d_q, d_r, d_uq, d_ur, n);
  CHECK(cudaGetLastError());
  long long q[n], r[n];
  unsigned long long uq[n], ur[n];
  CHECK(cudaMemcpy(q, d_q, sizeof(q), cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(r, d_r, sizeof(r), cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(uq, d_uq, sizeof(uq), cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(ur, d_ur, sizeof(ur), cudaMemcpyDeviceToHost));
  CHECK(cudaFree(d_num));
  CHECK(cudaFree(d_den));
  CHECK(cudaFree(d_q));
  CHECK(cudaFree(d_r));
  CHECK(cudaFree(d_uq));
  CHECK(cudaFree(d_ur));

  int bad = 0;
  for (int i = 0; i < n; ++i) {
    if (q[i] != num[i] / den[i] || r[i] != num[i] % den[i]) ++bad;
    if (uq[i] != (unsigned long long)num[i] / (unsigned long long)den[i]) ++bad;
    if (ur[i] != (unsigned long long)num[i] % (unsigned long long)den[i]) ++bad;
  }
  printf("-10^12 / -7 = %lld, -10^12 %% -1000003 = %lld\n", q[4 * 4 + 1], r[4 * 4 + 3]);
  printf("LLONG_MAX / (2^32+1) = %lld, (u64)-1 %% 3 = %llu, %d mismatches\n", q[5 * 4 + 2],
         ur[2 * 4 + 0], bad);
  bool ok = bad == 0;
  printf("%s\n", ok ? "PASSED" : "FAILED");
  return ok ? 0 : 1;
}
