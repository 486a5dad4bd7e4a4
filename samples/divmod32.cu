// Signed and unsigned 32-bit division and remainder: every pair of eight
// numerators and eight divisors, negative operands included (C++ truncates
// toward zero and the remainder takes the numerator's sign).
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

__global__ void divmod(const int* num, const int* den, int* q, int* r, unsigned* uq,
                       unsigned* ur, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  int a = num[i], b = den[i];
  q[i] = a / b;
  r[i] = a % b;
  uq[i] = (unsigned)a / (unsigned)b;
  ur[i] = (unsigned)a % (unsigned)b;
}

int main() {
  const int nums[8] = {0, 1, -1, 100, -100, 2147483647, -2147483647, 123456789};
  const int dens[8] = {1, -1, 3, -3, 7, -10, 65536, 2147483647};
  const int n = 64;
  int num[n], den[n];
  for (int i = 0; i < n; ++i) {
    num[i] = nums[i / 8];
    den[i] = dens[i % 8];
  }

  int *d_num, *d_den, *d_q, *d_r;
  unsigned *d_uq, *d_ur;
  CHECK(cudaMalloc(&d_num, sizeof(num)));
  CHECK(cudaMalloc(&d_den, sizeof(den)));
  CHECK(cudaMalloc(&d_q, sizeof(num)));
  CHECK(cudaMalloc(&d_r, sizeof(num)));
  CHECK(cudaMalloc(&d_uq, sizeof(num)));
  CHECK(cudaMalloc(&d_ur, sizeof(num)));
  CHECK(cudaMemcpy(d_num, num, sizeof(num), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(d_den, den, sizeof(den), cudaMemcpyHostToDevice));
  divmod<<<2, 32>>>(d_num, d_den, d_q, d_r, d_uq, d_ur, n);
  CHECK(cudaGetLastError());
  int q[n], r[n];
  unsigned uq[n], ur[n];
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
    if (uq[i] != (unsigned)num[i] / (unsigned)den[i]) ++bad;
    if (ur[i] != (unsigned)num[i] % (unsigned)den[i]) ++bad;
  }
  // -100 / 3 and -100 % 3; -100 as unsigned / 7.
  printf("-100/3 = %d, -100%%3 = %d, 100/-3 = %d, 100%%-3 = %d\n", q[4 * 8 + 2], r[4 * 8 + 2],
         q[3 * 8 + 3], r[3 * 8 + 3]);
  printf("(unsigned)-100/7 = %u, (unsigned)-100%%7 = %u, %d mismatches\n", uq[4 * 8 + 4],
         ur[4 * 8 + 4], bad);
  bool ok = bad == 0;
  printf("%s\n", ok ? "PASSED" : "FAILED");
  return ok ? 0 : 1;
}
