// Loops whose trip counts differ per lane, with `continue` and `break` inside
// divergent branches, and a warp-level reconvergence check afterwards: every
// lane must arrive at the final ballot.
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

__global__ void digit_sums(const unsigned* in, int* out, unsigned* arrived) {
  int lane = threadIdx.x;
  unsigned v = in[lane];
  int odd_digits = 0, steps = 0;
  while (v != 0) {
    unsigned d = v % 10;
    v /= 10;
    ++steps;
    if (d % 2 == 0) continue;
    odd_digits += d;
    if (odd_digits > 20) break;
  }
  out[lane] = odd_digits * 100 + steps;
  unsigned all = __ballot_sync(0xffffffffu, true);
  if (lane == 0) *arrived = all;
}

int main() {
  const int n = 32;
  unsigned in[n];
  unsigned x = 7;
  for (int i = 0; i < n; ++i) {
    x = x * 1664525u + 1013904223u;
    in[i] = x >> (i % 28);
  }
  in[0] = 0;

  unsigned *d_in, *d_arrived;
  int* d_out;
  CHECK(cudaMalloc(&d_in, sizeof(in)));
  CHECK(cudaMalloc(&d_out, n * sizeof(int)));
  CHECK(cudaMalloc(&d_arrived, sizeof(unsigned)));
  CHECK(cudaMemcpy(d_in, in, sizeof(in), cudaMemcpyHostToDevice));
  digit_sums<<<1, n>>>(d_in, d_out, d_arrived);
  CHECK(cudaGetLastError());
  int out[n];
  unsigned arrived;
  CHECK(cudaMemcpy(out, d_out, sizeof(out), cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(&arrived, d_arrived, sizeof(arrived), cudaMemcpyDeviceToHost));
  CHECK(cudaFree(d_in));
  CHECK(cudaFree(d_out));
  CHECK(cudaFree(d_arrived));

  int bad = 0;
  for (int i = 0; i < n; ++i) {
    char digits[16];
    int len = snprintf(digits, sizeof(digits), "%u", in[i]);
    if (in[i] == 0) len = 0;
    int odd = 0, steps = 0;
    for (int k = len - 1; k >= 0; --k) {
      int d = digits[k] - '0';
      ++steps;
      if (d % 2 == 1) {
        odd += d;
        if (odd > 20) break;
      }
    }
    if (out[i] != odd * 100 + steps) ++bad;
  }
  printf("out[0..3] = %d %d %d %d, ballot %08x\n", out[0], out[1], out[2], out[3], arrived);
  printf("%d mismatches\n", bad);
  bool ok = bad == 0 && arrived == 0xffffffffu;
  printf("%s\n", ok ? "PASSED" : "FAILED");
  return ok ? 0 : 1;
}
