// Block-wide votes at a barrier: __syncthreads_count, __syncthreads_and and
// __syncthreads_or over 128 threads (four warps), for predicates that hold for
// none, some and all threads.
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

__global__ void block_votes(const int* in, int* out) {
  int v = in[threadIdx.x];
  int* o = out + 3 * blockIdx.x * 3;
  // Each block tests three predicates: v negative (never), v even, v below a bound.
  o[0] = __syncthreads_count(v < 0);
  o[1] = __syncthreads_and(v < 0);
  o[2] = __syncthreads_or(v < 0);
  o[3] = __syncthreads_count(v % 2 == 0);
  o[4] = __syncthreads_and(v % 2 == 0);
  o[5] = __syncthreads_or(v % 2 == 0);
  o[6] = __syncthreads_count(v < 1000 + (int)blockIdx.x);
  o[7] = __syncthreads_and(v < 1000 + (int)blockIdx.x);
  o[8] = __syncthreads_or(v < 1000 + (int)blockIdx.x);
}

int main() {
  const int n = 128, blocks = 2;
  int in[n];
  for (int i = 0; i < n; ++i) in[i] = i == 77 ? 1000 : (i * 29) % 97 + (i % 5 == 0 ? 2 : 1);

  int *d_in, *d_out;
  CHECK(cudaMalloc(&d_in, sizeof(in)));
  CHECK(cudaMalloc(&d_out, 9 * blocks * sizeof(int)));
  CHECK(cudaMemcpy(d_in, in, sizeof(in), cudaMemcpyHostToDevice));
  block_votes<<<blocks, n>>>(d_in, d_out);
  CHECK(cudaGetLastError());
  int out[9 * blocks];
  CHECK(cudaMemcpy(out, d_out, sizeof(out), cudaMemcpyDeviceToHost));
  CHECK(cudaFree(d_in));
  CHECK(cudaFree(d_out));

  int bad = 0;
  for (int b = 0; b < blocks; ++b) {
    int count[3] = {};
    for (int i = 0; i < n; ++i) {
      count[0] += in[i] < 0;
      count[1] += in[i] % 2 == 0;
      count[2] += in[i] < 1000 + b;
    }
    for (int p = 0; p < 3; ++p) {
      const int* o = out + 9 * b + 3 * p;
      if (o[0] != count[p] || o[1] != (count[p] == n) || o[2] != (count[p] > 0)) ++bad;
    }
    printf("block %d: negative %d/%d/%d even %d/%d/%d below %d: %d/%d/%d\n", b, out[9 * b],
           out[9 * b + 1], out[9 * b + 2], out[9 * b + 3], out[9 * b + 4], out[9 * b + 5],
           1000 + b, out[9 * b + 6], out[9 * b + 7], out[9 * b + 8]);
  }
  printf("%d mismatches\n", bad);
  bool ok = bad == 0;
  printf("%s\n", ok ? "PASSED" : "FAILED");
  return ok ? 0 : 1;
}
