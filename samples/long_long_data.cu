// Arrays of long long: a running 64-bit product modulo a large prime, a
// 64-bit block-wide minimum and maximum through shared memory, and
// conversions between long long and int in both directions.
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

const int kN = 64;

__global__ void stats(const long long* in, long long* products, long long* extremes,
                      int* low_words) {
  __shared__ long long lo[kN], hi[kN];
  int t = threadIdx.x;
  long long v = in[t];
  long long p = 1;
  for (int k = 0; k <= t % 8; ++k) p = (p * (v % 1000003 + 1000003)) % 998244353LL;
  products[t] = p;
  low_words[t] = (int)v;  // truncation to the low 32 bits
  lo[t] = v;
  hi[t] = v;
  __syncthreads();
  for (int stride = kN / 2; stride > 0; stride /= 2) {
    if (t < stride) {
      lo[t] = min(lo[t], lo[t + stride]);
      hi[t] = max(hi[t], hi[t + stride]);
    }
    __syncthreads();
  }
  if (t == 0) {
    extremes[0] = lo[0];
    extremes[1] = hi[0];
  }
}

int main() {
  long long in[kN];
  for (int i = 0; i < kN; ++i)
    in[i] = (long long)(0x9e3779b97f4a7c15ULL * (i + 1)) >> (i % 20);

  long long *d_in, *d_prod, *d_ext;
  int* d_low;
  CHECK(cudaMalloc(&d_in, sizeof(in)));
  CHECK(cudaMalloc(&d_prod, sizeof(in)));
  CHECK(cudaMalloc(&d_ext, 2 * sizeof(long long)));
  CHECK(cudaMalloc(&d_low, kN * sizeof(int)));
  CHECK(cudaMemcpy(d_in, in, sizeof(in), cudaMemcpyHostToDevice));
  stats<<<1, kN>>>(d_in, d_prod, d_ext, d_low);
  CHECK(cudaGetLastError());
  long long prod[kN], ext[2];
  int low[kN];
  CHECK(cudaMemcpy(prod, d_prod, sizeof(prod), cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(ext, d_ext, sizeof(ext), cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(low, d_low, sizeof(low), cudaMemcpyDeviceToHost));
  CHECK(cudaFree(d_in));
  CHECK(cudaFree(d_prod));
  CHECK(cudaFree(d_ext));
  CHECK(cudaFree(d_low));

  int bad = 0;
  long long mn = in[0], mx = in[0];
  for (int t = 0; t < kN; ++t) {
    long long p = 1, f = in[t] % 1000003 + 1000003;
    for (int k = 0; k <= t % 8; ++k) p = p * f % 998244353LL;
    if (prod[t] != p) ++bad;
    if (low[t] != (int)(unsigned)(in[t] & 0xffffffffLL)) ++bad;
    mn = in[t] < mn ? in[t] : mn;
    mx = in[t] > mx ? in[t] : mx;
  }
  if (ext[0] != mn || ext[1] != mx) ++bad;
  printf("min %lld, max %lld, prod[7] %lld, low[1] %d\n", ext[0], ext[1], prod[7], low[1]);
  printf("%d mismatches\n", bad);
  bool ok = bad == 0;
  printf("%s\n", ok ? "PASSED" : "FAILED");
  return ok ? 0 : 1;
}
