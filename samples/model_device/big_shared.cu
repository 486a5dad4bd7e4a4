// Shared memory as large as CUDA's: a CTA of 128 threads with 48 KiB of
// static shared memory (CUDA's limit without opting in) and a second kernel
// with 56 KiB of dynamic shared memory after cudaFuncSetAttribute.
// Each thread writes words spread over the whole array (the first and the
// last included), the CTA synchronises, and each thread sums the words
// another thread wrote; the host recomputes every sum.  Asking for more
// dynamic shared memory than the device's opt-in limit must fail.
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

constexpr int kThreads = 128;
constexpr int kPerThread = 6;
constexpr int kStaticWords = 48 * 1024 / 4;    // 12288
constexpr int kDynamicWords = 56 * 1024 / 4;   // 14336

// The word thread t writes in step k of an array of n words: steps spread
// over the array, thread 0's first word is 0 and thread kThreads-1's last is
// n - 1.
__host__ __device__ inline int slot(int t, int k, int n) {
  const int span = n / kPerThread;            // each step covers its own span
  return k * span + (t * (span - 1)) / (kThreads - 1);
}
__host__ __device__ inline unsigned value(int t, int k, unsigned seed) {
  return (unsigned(t) * 2654435761u) ^ (unsigned(k) * 40503u) ^ seed;
}

__device__ void fill_and_sum(unsigned* s, int n, unsigned seed, unsigned* out) {
  const int t = threadIdx.x;
  for (int k = 0; k < kPerThread; ++k) s[slot(t, k, n)] = value(t, k, seed);
  __syncthreads();
  const int other = kThreads - 1 - t;
  unsigned sum = 0;
  for (int k = 0; k < kPerThread; ++k) sum += s[slot(other, k, n)] * unsigned(k + 1);
  out[t] = sum;
}

__global__ void static_shared(unsigned* out) {
  __shared__ unsigned s[kStaticWords];
  fill_and_sum(s, kStaticWords, 0x1234u, out);
}

__global__ void dynamic_shared(unsigned* out) {
  extern __shared__ unsigned d[];
  fill_and_sum(d, kDynamicWords, 0xBEEFu, out);
}

static int check(const char* what, const unsigned* got, int n, unsigned seed) {
  int bad = 0;
  for (int t = 0; t < kThreads; ++t) {
    const int other = kThreads - 1 - t;
    unsigned want = 0;
    for (int k = 0; k < kPerThread; ++k) want += value(other, k, seed) * unsigned(k + 1);
    bad += got[t] != want;
  }
  printf("%s: %d words of shared memory, %d threads, wrong sums %d, out[0] = %u\n", what, n, kThreads, bad, got[0]);
  return bad;
}

int main() {
  int optin = 0;
  CHECK(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, 0));
  unsigned* d_out;
  CHECK(cudaMalloc(&d_out, kThreads * sizeof(unsigned)));
  unsigned out[kThreads];
  int bad = 0;

  static_shared<<<1, kThreads>>>(d_out);
  CHECK(cudaGetLastError());
  CHECK(cudaMemcpy(out, d_out, sizeof out, cudaMemcpyDeviceToHost));
  bad += check("static", out, kStaticWords, 0x1234u);

  const int dyn_bytes = kDynamicWords * 4;
  if (optin < dyn_bytes) {
    printf("the device opts in to %d bytes of shared memory per block, fewer than %d\n", optin, dyn_bytes);
    return 1;
  }
  CHECK(cudaFuncSetAttribute(dynamic_shared, cudaFuncAttributeMaxDynamicSharedMemorySize, dyn_bytes));
  dynamic_shared<<<1, kThreads, dyn_bytes>>>(d_out);
  CHECK(cudaGetLastError());
  CHECK(cudaMemcpy(out, d_out, sizeof out, cudaMemcpyDeviceToHost));
  bad += check("dynamic", out, kDynamicWords, 0xBEEFu);

  // Beyond the opt-in limit: refused, as a GPU refuses it.
  const cudaError_t over = cudaFuncSetAttribute(dynamic_shared, cudaFuncAttributeMaxDynamicSharedMemorySize, optin + 4096);
  printf("opting in to %d bytes: %s\n", optin + 4096, cudaGetErrorName(over));
  const bool ok = bad == 0 && over == cudaErrorInvalidValue;
  printf("%s\n", ok ? "PASSED" : "FAILED");
  return ok ? 0 : 1;
}
