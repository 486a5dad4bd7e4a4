// Double precision: a dot product of 256 doubles in one block of 128 threads,
// each thread accumulating two products with __fma_rn, then a tree over the
// warp with __shfl_down_sync and __dadd_rn and one over the warps in shared
// memory; also every x rounded to float.  The host does the same operations
// in the same order: the results agree bit for bit.  The loops stay loops
// (#pragma unroll 1) so that the kernel fits the model's 1024-instruction ROM.
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

#define N 256
#define THREADS 128

__global__ void dot(const double* x, const double* y, double* out, float* narrowed) {
  __shared__ double partial[THREADS / 32];
  int t = threadIdx.x;
  double acc = 0.0;
#pragma unroll 1
  for (int i = t; i < N; i += THREADS) {
    acc = __fma_rn(x[i], y[i], acc);
    narrowed[i] = (float)x[i];
  }
#pragma unroll 1
  for (int offset = 16; offset > 0; offset /= 2) acc = __dadd_rn(acc, __shfl_down_sync(0xffffffffu, acc, offset));
  if (t % 32 == 0) partial[t / 32] = acc;
  __syncthreads();
  if (t == 0) {
    double s = partial[0];
#pragma unroll 1
    for (int w = 1; w < THREADS / 32; ++w) s = __dadd_rn(s, partial[w]);
    out[0] = s;
  }
}

static unsigned long long bits(double d) {
  union {
    double d;
    unsigned long long u;
  } v;
  v.d = d;
  return v.u;
}

int main() {
  static double x[N], y[N];
  static float narrowed[N];
  unsigned long long seed = 31337;
  for (int i = 0; i < N; ++i) {
    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    x[i] = ldexp(double(seed >> 11) / 9007199254740992.0 - 0.5, int(seed % 20) - 10);
    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    y[i] = ldexp(double(seed >> 11) / 9007199254740992.0 - 0.25, int(seed % 16) - 8);
  }
  double *dx, *dy, *dout;
  float* dn;
  CHECK(cudaMalloc(&dx, sizeof(x)));
  CHECK(cudaMalloc(&dy, sizeof(y)));
  CHECK(cudaMalloc(&dout, sizeof(double)));
  CHECK(cudaMalloc(&dn, sizeof(narrowed)));
  CHECK(cudaMemcpy(dx, x, sizeof(x), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(dy, y, sizeof(y), cudaMemcpyHostToDevice));
  dot<<<1, THREADS>>>(dx, dy, dout, dn);
  CHECK(cudaGetLastError());
  double result;
  CHECK(cudaMemcpy(&result, dout, sizeof(double), cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(narrowed, dn, sizeof(narrowed), cudaMemcpyDeviceToHost));
  CHECK(cudaFree(dx));
  CHECK(cudaFree(dy));
  CHECK(cudaFree(dout));
  CHECK(cudaFree(dn));

  // The same tree on the host.
  double acc[THREADS];
  for (int t = 0; t < THREADS; ++t) {
    acc[t] = 0.0;
    for (int i = t; i < N; i += THREADS) acc[t] = fma(x[i], y[i], acc[t]);
  }
  for (int w = 0; w < THREADS / 32; ++w) {
    double* v = acc + 32 * w;
    for (int offset = 16; offset > 0; offset /= 2)
      for (int l = 0; l < 32; ++l) v[l] = v[l] + (l + offset < 32 ? v[l + offset] : v[l]);
  }
  double want = acc[0];
  for (int w = 1; w < THREADS / 32; ++w) want = want + acc[32 * w];
  int bad = bits(result) != bits(want);
  for (int i = 0; i < N; ++i)
    if (narrowed[i] != (float)x[i]) ++bad;
  printf("dot = %.17g (host %.17g)\n", result, want);
  printf("%d mismatches\n", bad);
  bool ok = bad == 0;
  printf("%s\n", ok ? "PASSED" : "FAILED");
  return ok ? 0 : 1;
}
