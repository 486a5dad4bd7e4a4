// 32-bit integer arithmetic with wraparound: add, sub, mul, neg, not and mad
// on edge values (0, 1, -1, INT_MIN, INT_MAX, ...), one pair per thread.
// Signed overflow wraps on the GPU; the kernel computes in unsigned
// arithmetic so the C++ semantics match.
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

const int kOps = 6;

__host__ __device__ void arith(int a, int b, int* r) {
  unsigned ua = a, ub = b;
  r[0] = (int)(ua + ub);
  r[1] = (int)(ua - ub);
  r[2] = (int)(ua * ub);
  r[3] = (int)(0u - ua);
  r[4] = ~a ^ b;
  r[5] = (int)(ua * ub + ua);
}

__global__ void arith_kernel(const int* a, const int* b, int* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) arith(a[i], b[i], out + i * kOps);
}

int main() {
  const int vals[8] = {0, 1, -1, 2147483647, (int)0x80000000, 65536, -46341, 123456789};
  const int n = 64;
  int a[n], b[n];
  for (int i = 0; i < n; ++i) {
    a[i] = vals[i / 8];
    b[i] = vals[i % 8];
  }

  int *d_a, *d_b, *d_out;
  CHECK(cudaMalloc(&d_a, sizeof(a)));
  CHECK(cudaMalloc(&d_b, sizeof(b)));
  CHECK(cudaMalloc(&d_out, n * kOps * sizeof(int)));
  CHECK(cudaMemcpy(d_a, a, sizeof(a), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(d_b, b, sizeof(b), cudaMemcpyHostToDevice));
  arith_kernel<<<2, 32>>>(d_a, d_b, d_out, n);
  CHECK(cudaGetLastError());
  int out[n * kOps];
  CHECK(cudaMemcpy(out, d_out, sizeof(out), cudaMemcpyDeviceToHost));
  CHECK(cudaFree(d_a));
  CHECK(cudaFree(d_b));
  CHECK(cudaFree(d_out));

  int bad = 0;
  unsigned sum = 0;
  for (int i = 0; i < n; ++i) {
    int ref[kOps];
    arith(a[i], b[i], ref);
    for (int k = 0; k < kOps; ++k) {
      sum = sum * 31u + (unsigned)out[i * kOps + k];
      if (out[i * kOps + k] != ref[k]) ++bad;
    }
  }
  printf("INT_MAX+1 = %d, INT_MIN-1 = %d, INT_MAX*INT_MAX = %d\n", out[(3 * 8 + 1) * kOps + 0],
         out[(4 * 8 + 1) * kOps + 1], out[(3 * 8 + 3) * kOps + 2]);
  printf("checksum %08x, %d mismatches\n", sum, bad);
  bool ok = bad == 0;
  printf("%s\n", ok ? "PASSED" : "FAILED");
  return ok ? 0 : 1;
}
