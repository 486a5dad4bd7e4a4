// f32 math functions across three kernels: sqrtf, x / y and 1 / y (IEEE:
// correctly rounded, compared bit for bit with the host), floorf, ceilf,
// truncf, rintf, fminf, fmaxf, fabsf and int/float conversions (exact,
// bit for bit), and the fast __fdividef and rsqrtf, checked against their
// documented error bounds.
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

#define N 128

__global__ void roots_quotients(const float* x, const float* y, float* root, float* quot) {
  int i = threadIdx.x;
  root[i] = sqrtf(fabsf(x[i]));
  quot[i] = x[i] / y[i];
}

__global__ void reciprocals_rounding(const float* x, const float* y, float* rcp, float* fast, float* rounded) {
  int i = threadIdx.x;
  rcp[i] = 1.0f / y[i];
  fast[i] = __fdividef(x[i], y[i]);
  rounded[4 * i] = floorf(x[i]);
  rounded[4 * i + 1] = ceilf(x[i]);
  rounded[4 * i + 2] = truncf(x[i]);
  rounded[4 * i + 3] = rintf(x[i]);
}

__global__ void rsqrt_conversions(const float* x, const float* y, float* rs, float* mm, int* conv) {
  int i = threadIdx.x;
  rs[i] = rsqrtf(fabsf(y[i]));
  mm[2 * i] = fminf(x[i], y[i]);
  mm[2 * i + 1] = fmaxf(x[i], y[i]);
  int k = (int)x[i];
  conv[2 * i] = k;
  conv[2 * i + 1] = __float_as_int((float)(k * 7919 + i));
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
  static float x[N], y[N], root[N], quot[N], rcp[N], fast[N], rounded[4 * N], rs[N], mm[2 * N];
  static int conv[2 * N];
  unsigned seed = 4242;
  for (int i = 0; i < N; ++i) {
    seed = seed * 1664525u + 1013904223u;
    x[i] = ldexpf(float(seed >> 8) / 16777216.0f - 0.5f, int(seed % 40) - 8);
    seed = seed * 1664525u + 1013904223u;
    y[i] = ldexpf(float(seed >> 8) / 16777216.0f + 0.25f, int(seed % 30) - 15) * ((seed & 2) ? -1.0f : 1.0f);
  }
  x[0] = 2.5f, x[1] = -2.5f, x[2] = 0.5f, x[3] = -0.0f, x[4] = 1.0e-40f, y[5] = 3.0f;  // ties, zeros, a subnormal

  float *dx, *dy, *d1, *d2, *d3;
  int* di;
  CHECK(cudaMalloc(&dx, sizeof(x)));
  CHECK(cudaMalloc(&dy, sizeof(y)));
  CHECK(cudaMalloc(&d1, sizeof(rounded)));
  CHECK(cudaMalloc(&d2, sizeof(mm)));
  CHECK(cudaMalloc(&d3, sizeof(mm)));
  CHECK(cudaMalloc(&di, sizeof(conv)));
  CHECK(cudaMemcpy(dx, x, sizeof(x), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(dy, y, sizeof(y), cudaMemcpyHostToDevice));
  roots_quotients<<<1, N>>>(dx, dy, d1, d2);
  CHECK(cudaGetLastError());
  CHECK(cudaMemcpy(root, d1, sizeof(root), cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(quot, d2, sizeof(quot), cudaMemcpyDeviceToHost));
  reciprocals_rounding<<<1, N>>>(dx, dy, d2, d3, d1);
  CHECK(cudaGetLastError());
  CHECK(cudaMemcpy(rcp, d2, sizeof(rcp), cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(fast, d3, sizeof(fast), cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(rounded, d1, sizeof(rounded), cudaMemcpyDeviceToHost));
  rsqrt_conversions<<<1, N>>>(dx, dy, d1, d2, di);
  CHECK(cudaGetLastError());
  CHECK(cudaMemcpy(rs, d1, sizeof(rs), cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(mm, d2, sizeof(mm), cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(conv, di, sizeof(conv), cudaMemcpyDeviceToHost));
  CHECK(cudaFree(dx));
  CHECK(cudaFree(dy));
  CHECK(cudaFree(d1));
  CHECK(cudaFree(d2));
  CHECK(cudaFree(d3));
  CHECK(cudaFree(di));

  int bad = 0;
  auto same = [&](const char* what, int i, float got, float want) {
    if (bits(got) != bits(want)) {
      if (bad < 8) printf("%s[%d] = %a, expected %a\n", what, i, got, want);
      ++bad;
    }
  };
  auto near = [&](const char* what, int i, float got, double want, double rel) {
    if (!(fabs(got - want) <= rel * fabs(want))) {
      if (bad < 8) printf("%s[%d] = %a, expected %a within %g\n", what, i, got, want, rel);
      ++bad;
    }
  };
  for (int i = 0; i < N; ++i) {
    same("sqrtf", i, root[i], sqrtf(fabsf(x[i])));
    same("x / y", i, quot[i], x[i] / y[i]);
    same("1 / y", i, rcp[i], 1.0f / y[i]);
    near("__fdividef", i, fast[i], double(x[i]) / y[i], 0x1p-22);  // 2 ulp
    same("floorf", i, rounded[4 * i], floorf(x[i]));
    same("ceilf", i, rounded[4 * i + 1], ceilf(x[i]));
    same("truncf", i, rounded[4 * i + 2], truncf(x[i]));
    same("rintf", i, rounded[4 * i + 3], rintf(x[i]));
    near("rsqrtf", i, rs[i], 1.0 / sqrt(fabs(double(y[i]))), 0x1p-22);
    same("fminf", i, mm[2 * i], fminf(x[i], y[i]));
    same("fmaxf", i, mm[2 * i + 1], fmaxf(x[i], y[i]));
    int k = (int)x[i];
    if (conv[2 * i] != k || conv[2 * i + 1] != (int)bits((float)(k * 7919 + i))) ++bad;
  }
  printf("sqrtf(%g) = %.9g, %g / %g = %.9g, rintf(2.5) = %g, rintf(-2.5) = %g\n", x[0], root[0], x[5], y[5],
         quot[5], rounded[3], rounded[7]);
  printf("%d mismatches\n", bad);
  bool ok = bad == 0;
  printf("%s\n", ok ? "PASSED" : "FAILED");
  return ok ? 0 : 1;
}
