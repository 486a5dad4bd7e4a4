// Shifts by every count from 0 to 31 (32-bit) and 0 to 63 (64-bit): left,
// arithmetic right on signed values, logical right on unsigned values.  The
// counts come from memory, so the compiler cannot fold them.
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

struct Shifted {
  int shl, sar;
  unsigned shr;
  long long shl64, sar64;
  unsigned long long shr64;
};

__global__ void shift_all(const int* counts, int x, long long y, Shifted* out) {
  int i = threadIdx.x;
  int s = counts[i];
  out[i].shl = (int)((unsigned)x << s);
  out[i].sar = x >> s;
  out[i].shr = (unsigned)x >> s;
  int s64 = 2 * s + (i & 1);
  out[i].shl64 = (long long)((unsigned long long)y << s64);
  out[i].sar64 = y >> s64;
  out[i].shr64 = (unsigned long long)y >> s64;
}

int main() {
  const int n = 32;
  int counts[n];
  for (int i = 0; i < n; ++i) counts[i] = i;
  const int x = (int)0x9abcdef1;
  const long long y = (long long)0xf123456789abcdefULL;

  int* d_counts;
  Shifted* d_out;
  CHECK(cudaMalloc(&d_counts, sizeof(counts)));
  CHECK(cudaMalloc(&d_out, n * sizeof(Shifted)));
  CHECK(cudaMemcpy(d_counts, counts, sizeof(counts), cudaMemcpyHostToDevice));
  shift_all<<<1, n>>>(d_counts, x, y, d_out);
  CHECK(cudaGetLastError());
  Shifted out[n];
  CHECK(cudaMemcpy(out, d_out, sizeof(out), cudaMemcpyDeviceToHost));
  CHECK(cudaFree(d_counts));
  CHECK(cudaFree(d_out));

  int bad = 0;
  for (int s = 0; s < n; ++s) {
    if (out[s].shl != (int)((unsigned)x << s)) ++bad;
    if (out[s].sar != x >> s) ++bad;
    if (out[s].shr != (unsigned)x >> s) ++bad;
    int s64 = 2 * s + (s & 1);
    if (out[s].shl64 != (long long)((unsigned long long)y << s64)) ++bad;
    if (out[s].sar64 != y >> s64) ++bad;
    if (out[s].shr64 != (unsigned long long)y >> s64) ++bad;
  }
  printf("x>>31 = %d, (unsigned)x>>31 = %u, x<<31 = %d\n", out[31].sar, out[31].shr, out[31].shl);
  printf("y>>63 = %lld, (u64)y>>63 = %llu, %d mismatches\n", out[31].sar64, out[31].shr64, bad);
  bool ok = bad == 0;
  printf("%s\n", ok ? "PASSED" : "FAILED");
  return ok ? 0 : 1;
}
