// Trial division with `continue` and `break`: each thread tests a range of
// numbers for primality, skipping even candidates and leaving the divisor
// loop at the first factor, and counts primes and the largest prime found.
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

__global__ void count_primes(int per_thread, int* count, int* largest) {
  int t = blockIdx.x * blockDim.x + threadIdx.x;
  int first = t * per_thread, found = 0, last = 0;
  for (int v = first; v < first + per_thread; ++v) {
    if (v < 2) continue;
    if (v != 2 && v % 2 == 0) continue;
    bool prime = true;
    for (int d = 3; d * d <= v; d += 2) {
      if (v % d == 0) {
        prime = false;
        break;
      }
    }
    if (!prime) continue;
    ++found;
    last = v;
  }
  count[t] = found;
  largest[t] = last;
}

int main() {
  const int threads = 32, per_thread = 16, n = threads * per_thread;
  int *d_count, *d_largest;
  CHECK(cudaMalloc(&d_count, threads * sizeof(int)));
  CHECK(cudaMalloc(&d_largest, threads * sizeof(int)));
  count_primes<<<2, threads / 2>>>(per_thread, d_count, d_largest);
  CHECK(cudaGetLastError());
  int count[threads], largest[threads];
  CHECK(cudaMemcpy(count, d_count, sizeof(count), cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(largest, d_largest, sizeof(largest), cudaMemcpyDeviceToHost));
  CHECK(cudaFree(d_count));
  CHECK(cudaFree(d_largest));

  // Reference: a sieve of Eratosthenes.
  bool composite[n] = {true, true};
  for (int p = 2; p * p < n; ++p)
    if (!composite[p])
      for (int m = p * p; m < n; m += p) composite[m] = true;
  int bad = 0, total = 0;
  for (int t = 0; t < threads; ++t) {
    int ref = 0, ref_last = 0;
    for (int v = t * per_thread; v < (t + 1) * per_thread; ++v)
      if (!composite[v]) { ++ref; ref_last = v; }
    if (count[t] != ref || largest[t] != ref_last) ++bad;
    total += count[t];
  }
  printf("primes below %d: %d, largest %d\n", n, total, largest[threads - 1]);
  printf("per thread: %d %d %d %d ..., %d mismatches\n", count[0], count[1], count[2], count[3],
         bad);
  bool ok = bad == 0;
  printf("%s\n", ok ? "PASSED" : "FAILED");
  return ok ? 0 : 1;
}
