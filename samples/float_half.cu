// binary16 through cuda_fp16.h at sm_75: conversions between __half and the
// integers and double in each rounding, negation, absolute value,
// comparisons (scalar and the __half2 masks), and saturated arithmetic (the
// calls cuda_fp16.h also defines for the host).
// Every result is compared bit for bit with the same call on the host, where
// cuda_fp16.h computes it in software.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cuda_fp16.h>
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

#define N 96
#define OUTS 22

struct In {
  int i;
  unsigned u;
  long long ll;
  double d;
  unsigned short h, g, k;  // three halves
};

__host__ __device__ unsigned short bits(__half x) {
  __half_raw r = x;
  return r.x;
}
__host__ __device__ __half half_of(unsigned short b) {
  __half_raw r;
  r.x = b;
  return __half(r);
}
__host__ __device__ unsigned bits2(__half2 x) {
  __half2_raw r = x;
  return unsigned(r.x) | unsigned(r.y) << 16;
}

// The results of one input, the same code on the device and on the host, in
// four parts (four kernels: each fits the model's 1024-block ROM).
__host__ __device__ void to_half(const In& in, unsigned* o) {
  o[0] = bits(__int2half_rn(in.i));
  o[1] = bits(__int2half_rd(in.i));
  o[2] = bits(__uint2half_ru(in.u));
  o[3] = bits(__short2half_rz(short(in.i)));
  o[4] = bits(__ll2half_rd(in.ll));
  o[5] = bits(__ull2half_rn((unsigned long long)in.ll));
  o[6] = bits(__double2half(in.d));
  o[7] = bits(__uint2half_rz(in.u >> (in.u & 31)));
}
__host__ __device__ void from_half(const In& in, unsigned* o) {
  const __half h = half_of(in.h), g = half_of(in.g), k = half_of(in.k);
  o[8] = unsigned(__half2int_rz(h));
  o[9] = unsigned(__half2uint_rz(h));
  o[10] = unsigned(__half2short_rz(g));
  o[11] = unsigned(__half2ll_rz(k) >> 16);
  o[12] = bits(__hneg(h));
  o[13] = bits(__habs(g));
}
__host__ __device__ void compare(const In& in, unsigned* o) {
  const __half h = half_of(in.h), g = half_of(in.g), k = half_of(in.k);
  const __half2 hg = __halves2half2(h, g), gk = __halves2half2(g, k);
  o[14] = __heq(h, g) | __hlt(h, g) << 1 | __hgeu(h, k) << 2 | __hne(g, k) << 3 | __hgtu(g, h) << 4;
  o[15] = __heq2_mask(hg, gk);
  o[16] = __hltu2_mask(hg, gk);
  o[17] = bits2(__hgt2(hg, gk));
  o[18] = bits2(__hisnan2(hg));
}
__host__ __device__ void saturate(const In& in, unsigned* o) {
  const __half h = half_of(in.h), g = half_of(in.g), k = half_of(in.k);
  const __half2 hg = __halves2half2(h, g), gk = __halves2half2(g, k);
  o[19] = bits(__hadd_sat(h, g));
  o[20] = bits(__hmul_sat(h, k));
  o[21] = bits2(__hadd2_sat(hg, gk));
}

__global__ void to_halves(const In* in, unsigned* out) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < N; i += gridDim.x * blockDim.x) to_half(in[i], out + OUTS * i);
}
__global__ void from_halves(const In* in, unsigned* out) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < N; i += gridDim.x * blockDim.x) from_half(in[i], out + OUTS * i);
}
__global__ void compare_halves(const In* in, unsigned* out) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < N; i += gridDim.x * blockDim.x) compare(in[i], out + OUTS * i);
}
__global__ void saturate_halves(const In* in, unsigned* out) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < N; i += gridDim.x * blockDim.x) saturate(in[i], out + OUTS * i);
}

int main() {
  In in[N];
  unsigned long long seed = 0x9E3779B97F4A7C15ull;
  auto next = [&] {
    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    return unsigned(seed >> 32);
  };
  for (int i = 0; i < N; ++i) {
    const unsigned r = next();
    in[i].i = int(next()) >> (r % 32);           // every magnitude, both signs
    in[i].u = next() >> (next() % 32);
    in[i].ll = (long long)(((unsigned long long)next() << 32 | next()) >> (r % 64)) * ((r & 64) ? -1 : 1);
    in[i].d = double(int(next())) * 0x1p-16 / double(1u << (next() % 16));  // around the f16 range
    in[i].h = (unsigned short)next();
    in[i].g = (i % 3 == 0) ? in[i].h : (unsigned short)next();  // equal halves sometimes
    in[i].k = (i % 5 == 0) ? (unsigned short)0x7E00 : (unsigned short)(next() & 0xBFFF);  // a NaN sometimes
  }
  in[0].i = 2049, in[1].i = -2051, in[2].i = 65519, in[3].i = 65520;  // halfway, overflow
  in[4].d = 2049.0, in[5].d = 65520.0, in[6].d = 0x1p-25, in[7].d = 1.0 + 0x1p-11 + 0x1p-40;
  In* d_in;
  unsigned* d_out;
  CHECK(cudaMalloc(&d_in, sizeof in));
  CHECK(cudaMalloc(&d_out, sizeof(unsigned) * OUTS * N));
  CHECK(cudaMemcpy(d_in, in, sizeof in, cudaMemcpyHostToDevice));
  to_halves<<<1, 32>>>(d_in, d_out);
  CHECK(cudaGetLastError());
  from_halves<<<1, 32>>>(d_in, d_out);
  CHECK(cudaGetLastError());
  compare_halves<<<1, 32>>>(d_in, d_out);
  CHECK(cudaGetLastError());
  saturate_halves<<<1, 32>>>(d_in, d_out);
  CHECK(cudaGetLastError());
  static unsigned out[OUTS * N];
  CHECK(cudaMemcpy(out, d_out, sizeof out, cudaMemcpyDeviceToHost));
  int mismatches = 0;
  for (int i = 0; i < N; ++i) {
    unsigned want[OUTS];
    to_half(in[i], want);
    from_half(in[i], want);
    compare(in[i], want);
    saturate(in[i], want);
    for (int j = 0; j < OUTS; ++j)
      if (out[OUTS * i + j] != want[j] && mismatches++ < 10)
        printf("input %d, result %d: device 0x%08x, host 0x%08x\n", i, j, out[OUTS * i + j], want[j]);
  }
  printf("__int2half_rn(2049) = 0x%04x, __double2half(65520) = 0x%04x, __int2half_rn(65519) = 0x%04x\n", out[0],
         out[OUTS * 5 + 6], out[OUTS * 2]);
  printf("%d mismatches\n", mismatches);
  CHECK(cudaFree(d_in));
  CHECK(cudaFree(d_out));
  printf(mismatches ? "FAILED\n" : "PASSED\n");
  return mismatches ? 1 : 0;
}
