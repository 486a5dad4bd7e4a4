// Sum reduction in two launches: each block reduces its 128 elements by a
// shared-memory tree with a barrier per level and writes one partial sum; a
// second launch of one block reduces the partial sums.
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

const int kThreads = 128;

__global__ void reduce(const int* in, int* out, int n) {
  __shared__ int partial[kThreads];
  int t = threadIdx.x;
  int i = blockIdx.x * blockDim.x + t;
  partial[t] = i < n ? in[i] : 0;
  __syncthreads();
  for (int stride = blockDim.x / 2; stride > 0; stride /= 2) {
    if (t < stride) partial[t] += partial[t + stride];
    __syncthreads();
  }
  if (t == 0) out[blockIdx.x] = partial[0];
}

int main() {
  const int n = 1000, blocks = (n + kThreads - 1) / kThreads;
  int in[n];
  for (int i = 0; i < n; ++i) in[i] = (i % 17) * (i % 2 ? 1 : -3) + 5;

  int *d_in, *d_partial, *d_sum;
  CHECK(cudaMalloc(&d_in, sizeof(in)));
  CHECK(cudaMalloc(&d_partial, blocks * sizeof(int)));
  CHECK(cudaMalloc(&d_sum, sizeof(int)));
  CHECK(cudaMemcpy(d_in, in, sizeof(in), cudaMemcpyHostToDevice));
  reduce<<<blocks, kThreads>>>(d_in, d_partial, n);
  CHECK(cudaGetLastError());
  reduce<<<1, kThreads>>>(d_partial, d_sum, blocks);
  CHECK(cudaGetLastError());
  int partial[blocks], sum;
  CHECK(cudaMemcpy(partial, d_partial, sizeof(partial), cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(&sum, d_sum, sizeof(sum), cudaMemcpyDeviceToHost));
  CHECK(cudaFree(d_in));
  CHECK(cudaFree(d_partial));
  CHECK(cudaFree(d_sum));

  int bad = 0, ref = 0;
  for (int b = 0; b < blocks; ++b) {
    int block_ref = 0;
    for (int i = b * kThreads; i < n && i < (b + 1) * kThreads; ++i) block_ref += in[i];
    if (partial[b] != block_ref) ++bad;
    ref += block_ref;
  }
  printf("partials: %d %d %d %d %d %d %d %d\n", partial[0], partial[1], partial[2], partial[3],
         partial[4], partial[5], partial[6], partial[7]);
  printf("sum of %d elements = %d (expected %d)\n", n, sum, ref);
  bool ok = bad == 0 && sum == ref;
  printf("%s\n", ok ? "PASSED" : "FAILED");
  return ok ? 0 : 1;
}
