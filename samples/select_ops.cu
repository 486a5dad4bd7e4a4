// Conditionals that compile to selects and predicated moves: sign, clamp,
// conditional swap, and comparisons of signed against unsigned values.
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

__global__ void selects(const int* a, const int* b, int* out, int n) {
  int i = threadIdx.x;
  if (i >= n) return;
  int x = a[i], y = b[i];
  int* o = out + 6 * i;
  o[0] = (x > 0) - (x < 0);                      // sign
  o[1] = (int)(x < y ? (unsigned)y - x : (unsigned)x - y);  // distance (wraps)
  o[2] = (unsigned)x < (unsigned)y ? 1 : 2;      // unsigned compare
  o[3] = x >= 0 && y >= 0 ? x & y : x | y;       // short-circuit condition
  o[4] = x == y ? 100 : (x < y ? -100 : 50);     // nested select
  o[5] = (x & 1) ? x : y;                        // bit-tested select
}

int main() {
  const int vals[6] = {0, 5, -5, 2147483647, (int)0x80000000, 6};
  const int n = 36;
  int a[n], b[n];
  for (int i = 0; i < n; ++i) {
    a[i] = vals[i / 6];
    b[i] = vals[i % 6];
  }

  int *d_a, *d_b, *d_out;
  CHECK(cudaMalloc(&d_a, sizeof(a)));
  CHECK(cudaMalloc(&d_b, sizeof(b)));
  CHECK(cudaMalloc(&d_out, 6 * n * sizeof(int)));
  CHECK(cudaMemcpy(d_a, a, sizeof(a), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(d_b, b, sizeof(b), cudaMemcpyHostToDevice));
  selects<<<1, n>>>(d_a, d_b, d_out, n);
  CHECK(cudaGetLastError());
  int out[6 * n];
  CHECK(cudaMemcpy(out, d_out, sizeof(out), cudaMemcpyDeviceToHost));
  CHECK(cudaFree(d_a));
  CHECK(cudaFree(d_b));
  CHECK(cudaFree(d_out));

  int bad = 0;
  for (int i = 0; i < n; ++i) {
    int x = a[i], y = b[i];
    int ref[6];
    if (x > 0) ref[0] = 1; else if (x < 0) ref[0] = -1; else ref[0] = 0;
    ref[1] = (int)(x < y ? (unsigned)y - (unsigned)x : (unsigned)x - (unsigned)y);
    ref[2] = (unsigned)x < (unsigned)y ? 1 : 2;
    ref[3] = (x >= 0 && y >= 0) ? (x & y) : (x | y);
    if (x == y) ref[4] = 100; else if (x < y) ref[4] = -100; else ref[4] = 50;
    ref[5] = x % 2 != 0 ? x : y;
    for (int k = 0; k < 6; ++k)
      if (out[6 * i + k] != ref[k]) ++bad;
  }
  printf("sign: %d %d %d; |INT_MIN - INT_MAX| wraps to %d\n", out[0], out[6 * 6], out[6 * 12],
         out[6 * (4 * 6 + 3) + 1]);
  printf("%d mismatches\n", bad);
  bool ok = bad == 0;
  printf("%s\n", ok ? "PASSED" : "FAILED");
  return ok ? 0 : 1;
}
