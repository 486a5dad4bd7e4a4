// 1024-thread CTAs: each of 8 blocks of 1024 threads sums its slice in shared
// memory (a tree over 1024 entries with __syncthreads between levels) and
// records the largest thread index it saw.
#include <cstdio>
#include <cstdlib>
#include <vector>
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

__global__ void block_sum(const int* in, int* sums, int* max_tid) {
  __shared__ int s[1024];
  const unsigned t = threadIdx.x;
  s[t] = in[blockIdx.x * blockDim.x + t];
  __syncthreads();
  for (unsigned stride = blockDim.x / 2; stride > 0; stride /= 2) {
    if (t < stride) s[t] += s[t + stride];
    __syncthreads();
  }
  if (t == 0) sums[blockIdx.x] = s[0];
  atomicMax(&max_tid[blockIdx.x], (int)t);
}

int main() {
  const int blocks = 8, threads = 1024, n = blocks * threads;
  std::vector<int> in(n);
  for (int i = 0; i < n; ++i) in[i] = (i * 37) % 1001 - 500;
  int *d_in, *d_sums, *d_max;
  CHECK(cudaMalloc(&d_in, n * sizeof(int)));
  CHECK(cudaMalloc(&d_sums, blocks * sizeof(int)));
  CHECK(cudaMalloc(&d_max, blocks * sizeof(int)));
  CHECK(cudaMemcpy(d_in, in.data(), n * sizeof(int), cudaMemcpyHostToDevice));
  CHECK(cudaMemset(d_max, 0, blocks * sizeof(int)));
  block_sum<<<blocks, threads>>>(d_in, d_sums, d_max);
  CHECK(cudaGetLastError());
  int sums[blocks], maxes[blocks];
  CHECK(cudaMemcpy(sums, d_sums, sizeof(sums), cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(maxes, d_max, sizeof(maxes), cudaMemcpyDeviceToHost));
  CHECK(cudaFree(d_in));
  CHECK(cudaFree(d_sums));
  CHECK(cudaFree(d_max));

  bool ok = true;
  for (int b = 0; b < blocks; ++b) {
    int expected = 0;
    for (int t = 0; t < threads; ++t) expected += in[b * threads + t];
    printf("block %d: sum %d (expected %d), highest thread %d\n", b, sums[b], expected, maxes[b]);
    ok = ok && sums[b] == expected && maxes[b] == threads - 1;
  }
  printf("%s\n", ok ? "PASSED" : "FAILED");
  return ok ? 0 : 1;
}
