// Reverse an array through static shared memory: each block loads its
// elements, synchronizes, and writes them back in reverse order; a second
// pass reverses the order of the blocks.
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

const int kBlock = 64;

__global__ void reverse_block(const int* in, int* out) {
  __shared__ int tile[kBlock];
  int t = threadIdx.x;
  int base = blockIdx.x * kBlock;
  tile[t] = in[base + t];
  __syncthreads();
  out[(gridDim.x - 1 - blockIdx.x) * kBlock + t] = tile[kBlock - 1 - t];
}

int main() {
  const int blocks = 4, n = blocks * kBlock;
  int in[n];
  for (int i = 0; i < n; ++i) in[i] = i * i - 3 * i;

  int *d_in, *d_out;
  CHECK(cudaMalloc(&d_in, sizeof(in)));
  CHECK(cudaMalloc(&d_out, sizeof(in)));
  CHECK(cudaMemcpy(d_in, in, sizeof(in), cudaMemcpyHostToDevice));
  reverse_block<<<blocks, kBlock>>>(d_in, d_out);
  CHECK(cudaGetLastError());
  int out[n];
  CHECK(cudaMemcpy(out, d_out, sizeof(out), cudaMemcpyDeviceToHost));
  CHECK(cudaFree(d_in));
  CHECK(cudaFree(d_out));

  int bad = 0;
  for (int i = 0; i < n; ++i)
    if (out[i] != in[n - 1 - i]) ++bad;
  printf("out[0] = %d, out[%d] = %d, out[%d] = %d\n", out[0], kBlock, out[kBlock], n - 1,
         out[n - 1]);
  printf("%d mismatches\n", bad);
  bool ok = bad == 0;
  printf("%s\n", ok ? "PASSED" : "FAILED");
  return ok ? 0 : 1;
}
