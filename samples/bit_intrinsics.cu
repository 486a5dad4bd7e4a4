// Bit-counting intrinsics on 32- and 64-bit values: __popc, __popcll,
// __clz, __clzll, __brev, __brevll, __ffs and __ffsll, zero and all-ones
// included; the host counts bit by bit.
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

struct Bits {
  int popc, clz, ffs, popcll, clzll, ffsll;
  unsigned brev;
  unsigned long long brevll;
};

__global__ void bits(const unsigned* in, Bits* out) {
  int i = threadIdx.x;
  unsigned x = in[i];
  unsigned long long y = ((unsigned long long)x << (i % 33)) ^ (unsigned long long)i;
  out[i].popc = __popc(x);
  out[i].clz = __clz((int)x);
  out[i].ffs = __ffs((int)x);
  out[i].brev = __brev(x);
  out[i].popcll = __popcll(y);
  out[i].clzll = __clzll((long long)y);
  out[i].ffsll = __ffsll((long long)y);
  out[i].brevll = __brevll(y);
}

int main() {
  const int n = 32;
  unsigned in[n] = {0u, 1u, 0xffffffffu, 0x80000000u, 0x7fffffffu, 0x00010000u};
  for (int i = 6; i < n; ++i) in[i] = (0x9e3779b9u * i) >> (i % 13);

  unsigned* d_in;
  Bits* d_out;
  CHECK(cudaMalloc(&d_in, sizeof(in)));
  CHECK(cudaMalloc(&d_out, n * sizeof(Bits)));
  CHECK(cudaMemcpy(d_in, in, sizeof(in), cudaMemcpyHostToDevice));
  bits<<<1, n>>>(d_in, d_out);
  CHECK(cudaGetLastError());
  Bits out[n];
  CHECK(cudaMemcpy(out, d_out, sizeof(out), cudaMemcpyDeviceToHost));
  CHECK(cudaFree(d_in));
  CHECK(cudaFree(d_out));

  int bad = 0;
  for (int i = 0; i < n; ++i) {
    unsigned x = in[i];
    unsigned long long y = ((unsigned long long)x << (i % 33)) ^ (unsigned long long)i;
    Bits r = {};
    r.clz = 32;
    r.clzll = 64;
    for (int b = 0; b < 32; ++b) {
      if (!(x >> b & 1)) continue;
      ++r.popc;
      r.clz = 31 - b;
      if (r.ffs == 0) r.ffs = b + 1;
      r.brev |= 1u << (31 - b);
    }
    for (int b = 0; b < 64; ++b) {
      if (!(y >> b & 1)) continue;
      ++r.popcll;
      r.clzll = 63 - b;
      if (r.ffsll == 0) r.ffsll = b + 1;
      r.brevll |= 1ULL << (63 - b);
    }
    const Bits& o = out[i];
    if (o.popc != r.popc || o.clz != r.clz || o.ffs != r.ffs || o.brev != r.brev) ++bad;
    if (o.popcll != r.popcll || o.clzll != r.clzll || o.ffsll != r.ffsll || o.brevll != r.brevll)
      ++bad;
  }
  printf("x=0: popc %d clz %d ffs %d; x=0x80000000: clz %d ffs %d brev %08x\n", out[0].popc,
         out[0].clz, out[0].ffs, out[3].clz, out[3].ffs, out[3].brev);
  printf("y[5]: popcll %d clzll %d ffsll %d brevll %016llx, %d mismatches\n", out[5].popcll,
         out[5].clzll, out[5].ffsll, out[5].brevll, bad);
  bool ok = bad == 0;
  printf("%s\n", ok ? "PASSED" : "FAILED");
  return ok ? 0 : 1;
}
