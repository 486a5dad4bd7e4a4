// Integer matrix multiply C = A * B for 16x16 matrices, tiled through shared
// memory: a 2x2 grid of 8x8 blocks, each loading one 8x8 tile of A and of B
// per step with a barrier before and after the partial products.
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

const int kN = 16, kTile = 8;

__global__ void matmul(const int* a, const int* b, int* c) {
  __shared__ int ta[kTile][kTile], tb[kTile][kTile];
  int row = blockIdx.y * kTile + threadIdx.y, col = blockIdx.x * kTile + threadIdx.x;
  int acc = 0;
  for (int k0 = 0; k0 < kN; k0 += kTile) {
    ta[threadIdx.y][threadIdx.x] = a[row * kN + k0 + threadIdx.x];
    tb[threadIdx.y][threadIdx.x] = b[(k0 + threadIdx.y) * kN + col];
    __syncthreads();
    for (int k = 0; k < kTile; ++k) acc += ta[threadIdx.y][k] * tb[k][threadIdx.x];
    __syncthreads();
  }
  c[row * kN + col] = acc;
}

int main() {
  const int n = kN * kN;
  int a[n], b[n];
  for (int i = 0; i < n; ++i) {
    a[i] = (i * 7) % 19 - 9;
    b[i] = (i * 11) % 23 - 11;
  }

  int *d_a, *d_b, *d_c;
  CHECK(cudaMalloc(&d_a, sizeof(a)));
  CHECK(cudaMalloc(&d_b, sizeof(b)));
  CHECK(cudaMalloc(&d_c, sizeof(a)));
  CHECK(cudaMemcpy(d_a, a, sizeof(a), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(d_b, b, sizeof(b), cudaMemcpyHostToDevice));
  matmul<<<dim3(kN / kTile, kN / kTile), dim3(kTile, kTile)>>>(d_a, d_b, d_c);
  CHECK(cudaGetLastError());
  int c[n];
  CHECK(cudaMemcpy(c, d_c, sizeof(c), cudaMemcpyDeviceToHost));
  CHECK(cudaFree(d_a));
  CHECK(cudaFree(d_b));
  CHECK(cudaFree(d_c));

  int bad = 0;
  long long trace = 0;
  for (int i = 0; i < kN; ++i) {
    for (int j = 0; j < kN; ++j) {
      int ref = 0;
      for (int k = 0; k < kN; ++k) ref += a[i * kN + k] * b[k * kN + j];
      if (c[i * kN + j] != ref) ++bad;
    }
    trace += c[i * kN + i];
  }
  printf("C[0][0..3] = %d %d %d %d, C[15][15] = %d, trace %lld\n", c[0], c[1], c[2], c[3],
         c[n - 1], trace);
  printf("%d mismatches\n", bad);
  bool ok = bad == 0;
  printf("%s\n", ok ? "PASSED" : "FAILED");
  return ok ? 0 : 1;
}
