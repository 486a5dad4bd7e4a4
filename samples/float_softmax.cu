// Softmax over the rows of a 16 x 32 matrix, one warp a row: the row's
// maximum with __shfl_xor_sync and fmaxf, expf(x - max), the sum with
// __shfl_xor_sync, then one division each, in three kernels.  The maximum
// and the differences x - max are exact IEEE results and are checked bit for
// bit; expf is not correctly rounded on any GPU, so the result is checked
// against a double-precision softmax of those differences within a relative
// 2^-19 (expf's 2 ulp, five rounded additions and one division).
#include <cmath>
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

#define ROWS 16
#define COLS 32

__global__ void shift(const float* x, float* d) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  float v = x[i], m = v;
  for (int mask = 16; mask > 0; mask /= 2) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, mask));
  d[i] = v - m;
}

__global__ void exponentiate(float* e) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  e[i] = expf(e[i]);
}

__global__ void normalise(float* e) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  float v = e[i], s = v;
  for (int mask = 16; mask > 0; mask /= 2) s += __shfl_xor_sync(0xffffffffu, s, mask);
  e[i] = v / s;
}

int main() {
  static float x[ROWS * COLS], d[ROWS * COLS], y[ROWS * COLS];
  unsigned seed = 99;
  for (int i = 0; i < ROWS * COLS; ++i) {
    seed = seed * 1664525u + 1013904223u;
    x[i] = (float(seed >> 8) / 16777216.0f - 0.5f) * float(1 + (i / COLS) % 8) * 4.0f;
  }
  float *dx, *de;
  CHECK(cudaMalloc(&dx, sizeof(x)));
  CHECK(cudaMalloc(&de, sizeof(x)));
  CHECK(cudaMemcpy(dx, x, sizeof(x), cudaMemcpyHostToDevice));
  shift<<<ROWS / 4, 4 * COLS>>>(dx, de);
  CHECK(cudaGetLastError());
  CHECK(cudaMemcpy(d, de, sizeof(d), cudaMemcpyDeviceToHost));
  exponentiate<<<ROWS / 4, 4 * COLS>>>(de);
  CHECK(cudaGetLastError());
  normalise<<<ROWS / 4, 4 * COLS>>>(de);
  CHECK(cudaGetLastError());
  CHECK(cudaMemcpy(y, de, sizeof(y), cudaMemcpyDeviceToHost));
  CHECK(cudaFree(dx));
  CHECK(cudaFree(de));

  int bad = 0;
  double worst = 0;
  for (int r = 0; r < ROWS; ++r) {
    float m = x[r * COLS];
    for (int c = 0; c < COLS; ++c) m = fmaxf(m, x[r * COLS + c]);
    double s = 0, total = 0;
    for (int c = 0; c < COLS; ++c) {
      float diff = x[r * COLS + c] - m;  // exact IEEE subtraction, as on the device
      if (d[r * COLS + c] != diff) ++bad;
      s += exp(double(diff));
    }
    for (int c = 0; c < COLS; ++c) {
      double want = exp(double(d[r * COLS + c])) / s, got = y[r * COLS + c];
      double err = fabs(got - want) / want;
      worst = err > worst ? err : worst;
      if (!(err <= 0x1p-19)) ++bad;
      total += got;
    }
    if (r % 5 == 0) printf("row %d: y[0] = %.6f, sum %.6f\n", r, y[r * COLS], total);
  }
  printf("largest relative error %s 2^-19\n", worst <= 0x1p-19 ? "within" : "beyond");
  printf("%d mismatches\n", bad);
  bool ok = bad == 0;
  printf("%s\n", ok ? "PASSED" : "FAILED");
  return ok ? 0 : 1;
}
