// bfloat16 through cuda_bf16.h, built for sm_80 so that the PTX holds the
// bf16 instructions themselves (cvt.rn.bf16.f32, cvt.rz.bf16.f32,
// cvt.rn.bf16x2.f32, fma.rn.bf16 for __hadd and __hmul; for sm_75 nvcc
// writes integer code instead).  Each thread converts two floats, adds and
// multiplies them as bf16, packs the pair and truncates one back to float;
// the host checks every bit with cuda_bf16.h's host functions.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cuda_bf16.h>
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

__global__ void bf16_ops(const float* a, const float* b, unsigned short* sum, unsigned short* prod,
                         unsigned* pair, float* back) {
  const int i = threadIdx.x;
  const __nv_bfloat16 x = __float2bfloat16(a[i]), y = __float2bfloat16(b[i]);
  sum[i] = __bfloat16_as_ushort(__hadd(x, y));
  prod[i] = __bfloat16_as_ushort(__hmul(x, y));
  const __nv_bfloat162 two = __floats2bfloat162_rn(a[i], b[i]);
  memcpy(&pair[i], &two, 4);
  back[i] = __bfloat162float(__float2bfloat16_rz(a[i]));
}

static unsigned short bits16(__nv_bfloat16 h) {
  unsigned short u;
  memcpy(&u, &h, 2);
  return u;
}
static unsigned bits32(float f) {
  unsigned u;
  memcpy(&u, &f, 4);
  return u;
}

int main() {
  const int n = 64;
  float ha[n], hb[n];
  for (int i = 0; i < n; ++i) {
    ha[i] = (i - 20) * 1.3711f + i * 0.0001f;
    hb[i] = 1.0f / (i + 1) - 0.25f;
  }
  ha[3] = 1.0f + 1.0f / 256;  // halfway between two bf16 values: ties to even
  hb[3] = 1.0f + 3.0f / 256;
  ha[5] = 3.0e38f;  // overflows to infinity when added
  hb[5] = 3.0e38f;
  float *da, *db, *dback;
  unsigned short *dsum, *dprod;
  unsigned* dpair;
  CHECK(cudaMalloc(&da, n * 4));
  CHECK(cudaMalloc(&db, n * 4));
  CHECK(cudaMalloc(&dsum, n * 2));
  CHECK(cudaMalloc(&dprod, n * 2));
  CHECK(cudaMalloc(&dpair, n * 4));
  CHECK(cudaMalloc(&dback, n * 4));
  CHECK(cudaMemcpy(da, ha, n * 4, cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(db, hb, n * 4, cudaMemcpyHostToDevice));
  bf16_ops<<<1, n>>>(da, db, dsum, dprod, dpair, dback);
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());
  unsigned short hsum[n], hprod[n];
  unsigned hpair[n];
  float hback[n];
  CHECK(cudaMemcpy(hsum, dsum, n * 2, cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(hprod, dprod, n * 2, cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(hpair, dpair, n * 4, cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(hback, dback, n * 4, cudaMemcpyDeviceToHost));
  int bad = 0;
  for (int i = 0; i < n; ++i) {
    const __nv_bfloat16 x = __float2bfloat16(ha[i]), y = __float2bfloat16(hb[i]);
    const float fx = __bfloat162float(x), fy = __bfloat162float(y);
    // The sums and products of these inputs are exact in float: one rounding.
    const unsigned short want_sum = bits16(__float2bfloat16(fx + fy)), want_prod = bits16(__float2bfloat16(fx * fy));
    const unsigned want_pair = unsigned(bits16(__float2bfloat16(hb[i]))) << 16 | bits16(x);
    const unsigned want_back = bits32(__bfloat162float(__float2bfloat16_rz(ha[i])));
    if (hsum[i] != want_sum || hprod[i] != want_prod || hpair[i] != want_pair || bits32(hback[i]) != want_back) {
      printf("thread %d: sum %04x product %04x pair %08x back %08x, expected %04x %04x %08x %08x\n", i, hsum[i],
             hprod[i], hpair[i], bits32(hback[i]), want_sum, want_prod, want_pair, want_back);
      ++bad;
    }
  }
  printf("bf16 of %d pairs: sum[3] %04x product[3] %04x sum[5] %04x\n", n, hsum[3], hprod[3], hsum[5]);
  printf("%s\n", bad ? "FAILED" : "PASSED");
  return bad ? 1 : 0;
}
