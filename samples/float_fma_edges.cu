// f32 fused multiply-add (fma.rn.f32) over every triple of edge operands:
// signed zeros, a denormal, a value next to -1.0, infinities; and over
// every pair of other operands (a NaN with a payload among them) with
// c the rounded product negated, so that the sum is the product's rounding
// error (cancellation of the whole significand) or an exact zero.  Every
// result is compared bit for bit with the host's fused multiply-add; a NaN
// result (inf * 0, inf - inf) must be the canonical 0x7fffffff.
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

__global__ void fused(const float* a, const float* b, const float* c, float* out) {
  int i = threadIdx.x;
  out[i] = __fmaf_rn(a[i], b[i], c[i]);
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
  const unsigned edges[] = {0x00000000, 0x80000000, 0x00000001, 0xbf800001, 0x7f800000, 0xff800000};
  const unsigned factors[] = {0x3fb504f3, 0xbf7fffff, 0x00400001, 0x1f800000, 0x7fc12345, 0x3eaaaaab};
  const int k = sizeof(edges) / sizeof(edges[0]), m = sizeof(factors) / sizeof(factors[0]);
  const int triples = k * k * k, n = triples + m * m;
  static float a[k * k * k + m * m], b[k * k * k + m * m], c[k * k * k + m * m], out[k * k * k + m * m];
  for (int i = 0; i < triples; ++i) {
    a[i] = value(edges[i / (k * k)]);
    b[i] = value(edges[i / k % k]);
    c[i] = value(edges[i % k]);
  }
  for (int i = 0; i < m * m; ++i) {
    a[triples + i] = value(factors[i / m]);
    b[triples + i] = value(factors[i % m]);
    c[triples + i] = -(a[triples + i] * b[triples + i]);
  }
  float *da, *db, *dc, *dout;
  CHECK(cudaMalloc(&da, sizeof a));
  CHECK(cudaMalloc(&db, sizeof b));
  CHECK(cudaMalloc(&dc, sizeof c));
  CHECK(cudaMalloc(&dout, sizeof out));
  CHECK(cudaMemcpy(da, a, sizeof a, cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(db, b, sizeof b, cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(dc, c, sizeof c, cudaMemcpyHostToDevice));
  fused<<<1, n>>>(da, db, dc, dout);
  CHECK(cudaGetLastError());
  CHECK(cudaMemcpy(out, dout, sizeof out, cudaMemcpyDeviceToHost));
  int bad = 0;
  for (int i = 0; i < n; ++i) {
    const unsigned w = canonical(std::fma(a[i], b[i], c[i]));
    if (bits(out[i]) != w) {
      if (bad++ < 5)
        printf("%08x %08x %08x: %08x (want %08x)\n", bits(a[i]), bits(b[i]), bits(c[i]), bits(out[i]), w);
    }
  }
  printf("%d triples, %d wrong\n", n, bad);
  printf(bad ? "FAILED\n" : "PASSED\n");
  CHECK(cudaFree(da));
  CHECK(cudaFree(db));
  CHECK(cudaFree(dc));
  CHECK(cudaFree(dout));
  return bad != 0;
}
