// SAXPY in f32: y = a*x + y with one rounding (fmaf), over values that reach
// the subnormal range, signed zeros and overflow to infinity; every result
// is compared bit for bit with the host's fmaf.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
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

__global__ void saxpy(int n, float a, const float* x, float* y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = __fmaf_rn(a, x[i], y[i]);
}

static unsigned bits(float f) {
  union {
    float f;
    unsigned u;
  } v;
  v.f = f;
  return v.u;
}

int main() {
  const int n = 512;
  const float a = -1.75f;
  float x[n], y[n], want[n];
  unsigned seed = 12345;
  for (int i = 0; i < n; ++i) {
    seed = seed * 1664525u + 1013904223u;
    int e = int(seed >> 27) - 16;                       // exponents -16..15
    x[i] = ldexpf(float((seed >> 8) & 0xFFFF) / 65536.0f + 0.5f, e) * ((seed & 1) ? -1.0f : 1.0f);
    seed = seed * 1664525u + 1013904223u;
    y[i] = ldexpf(float((seed >> 8) & 0xFFFFF) / 1048576.0f, int(seed >> 28) - 8);
  }
  x[0] = 0.0f, y[0] = -0.0f;                    // -1.75 * 0 + -0 = -0
  x[1] = ldexpf(1.0f, -140), y[1] = ldexpf(1.0f, -149);  // subnormal result
  x[2] = 3.0e38f, y[2] = 1.0f;                  // overflow: -inf
  x[3] = 1.0f, y[3] = 1.75f;                    // exact cancellation: +0
  for (int i = 0; i < n; ++i) want[i] = fmaf(a, x[i], y[i]);

  float *dx, *dy;
  CHECK(cudaMalloc(&dx, sizeof(x)));
  CHECK(cudaMalloc(&dy, sizeof(y)));
  CHECK(cudaMemcpy(dx, x, sizeof(x), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(dy, y, sizeof(y), cudaMemcpyHostToDevice));
  saxpy<<<(n + 127) / 128, 128>>>(n, a, dx, dy);
  CHECK(cudaGetLastError());
  CHECK(cudaMemcpy(y, dy, sizeof(y), cudaMemcpyDeviceToHost));
  CHECK(cudaFree(dx));
  CHECK(cudaFree(dy));

  int bad = 0;
  for (int i = 0; i < n; ++i)
    if (bits(y[i]) != bits(want[i])) {
      if (bad < 5) printf("y[%d] = %a, expected %a\n", i, y[i], want[i]);
      ++bad;
    }
  printf("y[0..3] = %g %g %g %g, y[100] = %.9g\n", y[0], y[1], y[2], y[3], y[100]);
  printf("%d mismatches\n", bad);
  bool ok = bad == 0;
  printf("%s\n", ok ? "PASSED" : "FAILED");
  return ok ? 0 : 1;
}
