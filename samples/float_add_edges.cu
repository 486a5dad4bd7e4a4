// f32 add and subtract (add.rn.f32, sub.rn.f32) over every pair of edge
// operands: signed zeros, denormals, the ends of the normal range, halfway
// cases against 1.0, infinities and NaNs.  Every result is compared bit for
// bit with the host's IEEE-754 add and subtract; a NaN result must be the
// canonical 0x7fffffff.
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

__global__ void add_sub(const float* a, const float* b, float* sum, float* diff) {
  int i = threadIdx.x;
  sum[i] = __fadd_rn(a[i], b[i]);
  diff[i] = __fsub_rn(a[i], b[i]);
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
                            0xbf800001, 0x33800000, 0x7f7fffff, 0x7f800000, 0xff800000, 0x7fc12345};
  const int k = sizeof(edges) / sizeof(edges[0]), n = k * k;
  float a[n], b[n], sum[n], diff[n];
  for (int i = 0; i < n; ++i) {
    a[i] = value(edges[i / k]);
    b[i] = value(edges[i % k]);
  }
  float *da, *db, *ds, *dd;
  CHECK(cudaMalloc(&da, sizeof a));
  CHECK(cudaMalloc(&db, sizeof b));
  CHECK(cudaMalloc(&ds, sizeof sum));
  CHECK(cudaMalloc(&dd, sizeof diff));
  CHECK(cudaMemcpy(da, a, sizeof a, cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(db, b, sizeof b, cudaMemcpyHostToDevice));
  add_sub<<<1, n>>>(da, db, ds, dd);
  CHECK(cudaGetLastError());
  CHECK(cudaMemcpy(sum, ds, sizeof sum, cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(diff, dd, sizeof diff, cudaMemcpyDeviceToHost));
  int bad = 0;
  for (int i = 0; i < n; ++i) {
    const unsigned ws = canonical(a[i] + b[i]), wd = canonical(a[i] - b[i]);
    if (bits(sum[i]) != ws || bits(diff[i]) != wd) {
      if (bad++ < 5)
        printf("%08x %08x: sum %08x (want %08x), difference %08x (want %08x)\n", bits(a[i]), bits(b[i]),
               bits(sum[i]), ws, bits(diff[i]), wd);
    }
  }
  printf("%d pairs, %d wrong\n", n, bad);
  printf(bad ? "FAILED\n" : "PASSED\n");
  CHECK(cudaFree(da));
  CHECK(cudaFree(db));
  CHECK(cudaFree(ds));
  CHECK(cudaFree(dd));
  return bad != 0;
}
