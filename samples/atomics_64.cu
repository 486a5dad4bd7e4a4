// 64-bit atomics: atomicAdd, atomicMin, atomicMax, atomicAnd/Or/Xor and
// atomicCAS on unsigned long long, and a CAS loop that builds an atomic
// 64-bit "add modulo" the hardware does not provide.
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

const unsigned long long kMod = 1000000000039ULL;

__device__ unsigned long long atomic_add_mod(unsigned long long* addr, unsigned long long v) {
  unsigned long long seen = *addr, assumed;
  do {
    assumed = seen;
    seen = atomicCAS(addr, assumed, (assumed + v) % kMod);
  } while (seen != assumed);
  return seen;
}

__global__ void atomics64(unsigned long long* s) {
  unsigned long long t = blockIdx.x * blockDim.x + threadIdx.x;
  unsigned long long v = (t + 1) * 0x10000000fULL;  // crosses the 32-bit boundary
  atomicAdd(&s[0], v);
  atomicMin(&s[1], v ^ 0x5555555555ULL);
  atomicMax(&s[2], v ^ 0x5555555555ULL);
  atomicAnd(&s[3], ~(1ULL << (t + 8)));
  atomicOr(&s[4], 1ULL << (2 * t % 64));
  atomicXor(&s[5], v);
  atomic_add_mod(&s[6], v * 1000003ULL);
}

int main() {
  const int n = 48;
  unsigned long long init[7] = {0, ~0ULL, 0, ~0ULL, 0, 0, 0};
  unsigned long long* d_s;
  CHECK(cudaMalloc(&d_s, sizeof(init)));
  CHECK(cudaMemcpy(d_s, init, sizeof(init), cudaMemcpyHostToDevice));
  atomics64<<<2, n / 2>>>(d_s);
  CHECK(cudaGetLastError());
  unsigned long long s[7];
  CHECK(cudaMemcpy(s, d_s, sizeof(s), cudaMemcpyDeviceToHost));
  CHECK(cudaFree(d_s));

  unsigned long long ref[7] = {0, ~0ULL, 0, ~0ULL, 0, 0, 0};
  for (unsigned long long t = 0; t < n; ++t) {
    unsigned long long v = (t + 1) * 0x10000000fULL, w = v ^ 0x5555555555ULL;
    ref[0] += v;
    ref[1] = w < ref[1] ? w : ref[1];
    ref[2] = w > ref[2] ? w : ref[2];
    ref[3] &= ~(1ULL << (t + 8));
    ref[4] |= 1ULL << (2 * t % 64);
    ref[5] ^= v;
    ref[6] = (ref[6] + v * 1000003ULL) % kMod;
  }
  int bad = 0;
  for (int k = 0; k < 7; ++k)
    if (s[k] != ref[k]) ++bad;
  printf("add %llu min %llx max %llx\n", s[0], s[1], s[2]);
  printf("and %016llx or %016llx xor %016llx addmod %llu\n", s[3], s[4], s[5], s[6]);
  printf("%d mismatches\n", bad);
  bool ok = bad == 0;
  printf("%s\n", ok ? "PASSED" : "FAILED");
  return ok ? 0 : 1;
}
