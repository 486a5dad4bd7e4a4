// Fast and library math in f32, checked against the host within the error
// bounds CUDA documents: expf (2 ulp), __fdividef (2 ulp for divisors of
// magnitude in [2^-126, 2^126]), __logf (2^-21.41 absolute on [0.5, 2], else
// 3 ulp), __sinf and __cosf (2^-21.41 absolute on [-pi, pi]), and sqrtf,
// which IEEE defines: bit for bit with the host's sqrtf.  One kernel per
// function family.
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

#define N 256

__global__ void exp_kernel(const float* x, float* out) {
  int i = threadIdx.x;
  out[i] = expf(x[i]);
}
__global__ void sqrt_kernel(const float* y, float* out) {
  int i = threadIdx.x;
  out[i] = sqrtf(fabsf(y[i]));
}
__global__ void fdivide_kernel(const float* x, const float* y, float* out) {
  int i = threadIdx.x;
  out[i] = __fdividef(x[i], y[i]);
}
__global__ void log_kernel(const float* y, float* out) {
  int i = threadIdx.x;
  out[i] = __logf(fabsf(y[i]));
}
__global__ void sincos_kernel(const float* a, float* s, float* c) {
  int i = threadIdx.x;
  s[i] = __sinf(a[i]);
  c[i] = __cosf(a[i]);
}

// Host helpers (below main).
static double ulps(float got, double want);
static unsigned bits(float f);

int main() {
  static float x[N], y[N], a[N], e[N], r[N], q[N], l[N], s[N], c[N];
  unsigned seed = 2024;
  auto next = [&]() { return seed = seed * 1664525u + 1013904223u; };
  for (int i = 0; i < N; ++i) {
    x[i] = (float(next() >> 8) / 16777216.0f - 0.5f) * 170.0f;  // expf over most of its range
    y[i] = std::ldexp(float(next() >> 8) / 16777216.0f + 0.5f, int(next() % 60) - 30) * ((next() & 4) ? -1.0f : 1.0f);
    a[i] = (float(next() >> 8) / 16777216.0f - 0.5f) * 6.2831853f;  // [-pi, pi)
  }
  x[0] = 0.0f, x[1] = 1.0f, x[2] = -1.0f, x[3] = 88.0f, x[4] = -87.0f;
  y[0] = 1.0f, y[1] = 0.75f, y[2] = 2.0f, y[3] = 1.0e-3f, y[4] = 0x1p-20f;
  a[0] = 0.0f, a[1] = 1.0e-5f, a[2] = 1.5707964f, a[3] = -3.1415925f, a[4] = 0.5f;

  float *dx, *dy, *da, *d1, *d2;
  CHECK(cudaMalloc(&dx, sizeof(x)));
  CHECK(cudaMalloc(&dy, sizeof(y)));
  CHECK(cudaMalloc(&da, sizeof(a)));
  CHECK(cudaMalloc(&d1, sizeof(x)));
  CHECK(cudaMalloc(&d2, sizeof(x)));
  CHECK(cudaMemcpy(dx, x, sizeof(x), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(dy, y, sizeof(y), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(da, a, sizeof(a), cudaMemcpyHostToDevice));
  exp_kernel<<<1, N>>>(dx, d1);
  CHECK(cudaMemcpy(e, d1, sizeof(e), cudaMemcpyDeviceToHost));
  sqrt_kernel<<<1, N>>>(dy, d1);
  CHECK(cudaMemcpy(r, d1, sizeof(r), cudaMemcpyDeviceToHost));
  fdivide_kernel<<<1, N>>>(dx, dy, d1);
  CHECK(cudaMemcpy(q, d1, sizeof(q), cudaMemcpyDeviceToHost));
  log_kernel<<<1, N>>>(dy, d1);
  CHECK(cudaMemcpy(l, d1, sizeof(l), cudaMemcpyDeviceToHost));
  sincos_kernel<<<1, N>>>(da, d1, d2);
  CHECK(cudaMemcpy(s, d1, sizeof(s), cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(c, d2, sizeof(c), cudaMemcpyDeviceToHost));
  CHECK(cudaGetLastError());

  int bad = 0;
  auto fail = [&](const char* what, int i, float in, float got, double want) {
    if (bad < 8) printf("%s(%a) = %a, the host's value is %a\n", what, in, got, want);
    ++bad;
  };
  double worst_exp = 0, worst_div = 0, worst_log = 0, worst_sin = 0, worst_cos = 0;
  const double abs_bound = std::ldexp(1.0, -21) / std::pow(2.0, 0.41);
  for (int i = 0; i < N; ++i) {
    double we = std::exp(double(x[i]));
    if (we < 0x1p-126 || we > 3.4e38) {  // outside the normal range: the library's result is not bounded in ulp
    } else {
      worst_exp = std::fmax(worst_exp, ulps(e[i], we));
      if (ulps(e[i], we) > 2) fail("expf", i, x[i], e[i], we);
    }
    if (bits(r[i]) != bits(std::sqrt(std::fabs(y[i])))) fail("sqrtf", i, y[i], r[i], std::sqrt(std::fabs(y[i])));
    double wq = double(x[i]) / double(y[i]);
    worst_div = std::fmax(worst_div, ulps(q[i], wq));
    if (ulps(q[i], wq) > 2) fail("__fdividef", i, x[i], q[i], wq);
    double ay = std::fabs(double(y[i])), wl = std::log(ay);
    double el = ay >= 0.5 && ay <= 2 ? std::fabs(double(l[i]) - wl) / abs_bound : ulps(l[i], wl) / 3;
    worst_log = std::fmax(worst_log, el);
    if (el > 1) fail("__logf", i, std::fabs(y[i]), l[i], wl);
    double ws = std::sin(double(a[i])), wc = std::cos(double(a[i]));
    worst_sin = std::fmax(worst_sin, std::fabs(double(s[i]) - ws) / abs_bound);
    worst_cos = std::fmax(worst_cos, std::fabs(double(c[i]) - wc) / abs_bound);
    if (std::fabs(double(s[i]) - ws) > abs_bound) fail("__sinf", i, a[i], s[i], ws);
    if (std::fabs(double(c[i]) - wc) > abs_bound) fail("__cosf", i, a[i], c[i], wc);
  }
  printf("expf(1) = %.5f, sqrtf(2) = %.5f, __fdividef(1, 0.75) = %.5f\n", e[1], r[2], q[1]);
  printf("__logf(2) = %.5f, __sinf(0.5) = %.5f, __cosf(0.5) = %.5f\n", l[2], s[4], c[4]);
  printf("%d inputs each: sqrtf bit for bit, the others within CUDA's bounds: %s\n", N,
         worst_exp <= 2 && worst_div <= 2 && worst_log <= 1 && worst_sin <= 1 && worst_cos <= 1 ? "yes" : "no");
  printf("%s\n", bad == 0 ? "PASSED" : "FAILED");
  return bad == 0 ? 0 : 1;
}

// The error of got against the exact value want, in units of the last place
// of an f32 of want's magnitude.
static double ulps(float got, double want) {
  double m = std::fabs(want);
  double ulp = m < 0x1p-126 ? 0x1p-149 : std::ldexp(1.0, std::ilogb(m) - 23);
  return std::fabs(double(got) - want) / ulp;
}
static unsigned bits(float f) {
  unsigned u;
  std::memcpy(&u, &f, 4);
  return u;
}
