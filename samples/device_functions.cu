// Device-function calls: a chain of __noinline__ functions (real calls in the
// PTX, with parameters and return values), a function returning a struct and
// one writing through pointer arguments, mixed with inlined helpers.
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

struct MinMax {
  int lo, hi;
};

__device__ __noinline__ int mix(int a, int b, int c) { return a * 31 + (b ^ c); }

__device__ __noinline__ MinMax range3(int a, int b, int c) {
  MinMax r = {min(a, min(b, c)), max(a, max(b, c))};
  return r;
}

__device__ __noinline__ void divide(int num, int den, int* q, int* r) {
  *q = num / den;
  *r = num % den;
}

__device__ __noinline__ int chain(int x, int depth) {
  // Calls three other functions; called itself once per thread.
  MinMax m = range3(x, x * 3 - 40, 17 - x);
  int q, r;
  divide(m.hi - m.lo + depth, depth + 2, &q, &r);
  return mix(q, r, m.lo);
}

__device__ __forceinline__ int square(int x) { return x * x; }

__global__ void calls(const int* in, int* out) {
  int i = threadIdx.x;
  out[i] = chain(in[i], i % 5) + square(i);
}

int main() {
  const int n = 32;
  int in[n];
  for (int i = 0; i < n; ++i) in[i] = (i * 17) % 29 - 14;

  int *d_in, *d_out;
  CHECK(cudaMalloc(&d_in, sizeof(in)));
  CHECK(cudaMalloc(&d_out, sizeof(in)));
  CHECK(cudaMemcpy(d_in, in, sizeof(in), cudaMemcpyHostToDevice));
  calls<<<1, n>>>(d_in, d_out);
  CHECK(cudaGetLastError());
  int out[n];
  CHECK(cudaMemcpy(out, d_out, sizeof(out), cudaMemcpyDeviceToHost));
  CHECK(cudaFree(d_in));
  CHECK(cudaFree(d_out));

  int bad = 0;
  for (int i = 0; i < n; ++i) {
    int x = in[i], depth = i % 5;
    int v[3] = {x, x * 3 - 40, 17 - x}, lo = v[0], hi = v[0];
    for (int k = 1; k < 3; ++k) {
      lo = v[k] < lo ? v[k] : lo;
      hi = v[k] > hi ? v[k] : hi;
    }
    int span = hi - lo + depth;
    int ref = (span / (depth + 2)) * 31 + ((span % (depth + 2)) ^ lo) + i * i;
    if (out[i] != ref) ++bad;
  }
  printf("out[0..5] = %d %d %d %d %d %d\n", out[0], out[1], out[2], out[3], out[4], out[5]);
  printf("%d mismatches\n", bad);
  bool ok = bad == 0;
  printf("%s\n", ok ? "PASSED" : "FAILED");
  return ok ? 0 : 1;
}
