// A CTA as large as CUDA's: 1024 threads sharing 32 KiB of shared memory.
// Each thread writes 8 words of the array (word k * 1024 + t), the CTA
// synchronises, each thread sums 8 words that 8 other threads wrote (a
// column of the array read as 1024 x 8), and the CTA reduces the 1024 sums
// in shared memory, a barrier per halving.  Every per-thread sum and the
// total are checked against the host's.  The device reports its register
// file: a CTA of 1024 threads has a share of it (the model's device: 8 of
// 8192 registers a thread), and the kernel runs there all the same.
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

constexpr int kThreads = 1024;
constexpr int kPerThread = 8;
constexpr int kWords = kThreads * kPerThread;  // 8192 words: 32 KiB

__host__ __device__ inline unsigned value(unsigned word) { return (word * 2654435761u) >> 7; }

__global__ void big_cta(unsigned* sums, unsigned* total) {
  __shared__ unsigned s[kWords];
  const unsigned t = threadIdx.x;
  for (unsigned k = 0; k < kPerThread; ++k) s[k * kThreads + t] = value(k * kThreads + t);
  __syncthreads();
  unsigned sum = 0;
  for (unsigned k = 0; k < kPerThread; ++k) sum += s[t * kPerThread + k];
  sums[t] = sum;
  __syncthreads();
  s[t] = sum;
  __syncthreads();
  for (unsigned stride = kThreads / 2; stride > 0; stride >>= 1) {
    if (t < stride) s[t] += s[t + stride];
    __syncthreads();
  }
  if (t == 0) *total = s[0];
}

int main() {
  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, 0));
  printf("device: %d threads per block, %d registers per block, %zu bytes of shared memory per block\n",
         prop.maxThreadsPerBlock, prop.regsPerBlock, prop.sharedMemPerBlock);
  if (prop.maxThreadsPerBlock < kThreads) {
    printf("the device runs at most %d threads per block, fewer than %d\n", prop.maxThreadsPerBlock, kThreads);
    return 1;
  }
  unsigned *d_sums, *d_total;
  CHECK(cudaMalloc(&d_sums, kThreads * sizeof(unsigned)));
  CHECK(cudaMalloc(&d_total, sizeof(unsigned)));
  big_cta<<<1, kThreads>>>(d_sums, d_total);
  CHECK(cudaGetLastError());
  static unsigned sums[kThreads];
  unsigned total = 0;
  CHECK(cudaMemcpy(sums, d_sums, sizeof sums, cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(&total, d_total, sizeof total, cudaMemcpyDeviceToHost));

  int bad = 0;
  unsigned want_total = 0;
  for (unsigned t = 0; t < kThreads; ++t) {
    unsigned want = 0;
    for (unsigned k = 0; k < kPerThread; ++k) want += value(t * kPerThread + k);
    bad += sums[t] != want;
    want_total += want;
  }
  printf("%d threads, %d words of shared memory: wrong sums %d, total %u (host %u)\n", kThreads, kWords, bad, total,
         want_total);
  const bool ok = bad == 0 && total == want_total;
  printf("%s\n", ok ? "PASSED" : "FAILED");
  return ok ? 0 : 1;
}
