// f32 multiply (mul.rn.f32) over every pair of edge operands: signed
// zeros, denormals, the ends of the normal range, powers of two whose
// products overflow or fall to denormals and zero, a rounding case,
// infinities and NaNs.  Every result is compared bit for bit with the host's
// IEEE-754 multiply; a NaN result (inf * 0 included) must be the canonical
// 0x7fffffff.
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

__global__ void mul(const float* a, const float* b, float* prod) {
  int i = threadIdx.x;
  prod[i] = __fmul_rn(a[i], b[i]);
}

union Bits {
  float f;
  unsigned u;
};
static unsigned bits(float f) {
  Bits v;
  v.f = f;
  return v.u;
}
static float value(unsigned u) {
  Bits v;
  v.u = u;
  return v.f;
}
static unsigned canonical(float f) { return f != f ? 0x7fffffffu : bits(f); }

int main() {
  const unsigned edges[] = {0x00000000, 0x80000000, 0x00000001, 0x807fffff, 0x00800000, 0x3f800000,
                            0xbf800001, 0x33800000, 0x7f7fffff, 0x7f800000, 0xff800000, 0x7fc12345,
                            0x1f800000, 0xdf800000, 0x3fb504f3, 0x20000001};
  const int k = sizeof(edges) / sizeof(edges[0]), n = k * k;
  float a[n], b[n], prod[n];
  for (int i = 0; i < n; ++i) {
    a[i] = value(edges[i / k]);
    b[i] = value(edges[i % k]);
  }
  float *da, *db, *dp;
  CHECK(cudaMalloc(&da, sizeof a));
  CHECK(cudaMalloc(&db, sizeof b));
  CHECK(cudaMalloc(&dp, sizeof prod));
  CHECK(cudaMemcpy(da, a, sizeof a, cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(db, b, sizeof b, cudaMemcpyHostToDevice));
  mul<<<1, n>>>(da, db, dp);
  CHECK(cudaGetLastError());
  CHECK(cudaMemcpy(prod, dp, sizeof prod, cudaMemcpyDeviceToHost));
  int bad = 0;
  for (int i = 0; i < n; ++i) {
    const unsigned w = canonical(a[i] * b[i]);
    if (bits(prod[i]) != w) {
      if (bad++ < 5) printf("%08x %08x: product %08x (want %08x)\n", bits(a[i]), bits(b[i]), bits(prod[i]), w);
    }
  }
  printf("%d pairs, %d wrong\n", n, bad);
  printf(bad ? "FAILED\n" : "PASSED\n");
  CHECK(cudaFree(da));
  CHECK(cudaFree(db));
  CHECK(cudaFree(dp));
  return bad != 0;
}
