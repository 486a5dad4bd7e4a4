// A tiled f32 matrix product C = A * B (24 x 24, 8 x 8 tiles in shared
// memory): each thread accumulates its element with one fmaf per k, in k
// order, so the host's fmaf loop in the same order gives the same bits.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
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

#define N 24
#define TILE 8

__global__ void matmul(const float* a, const float* b, float* c) {
  __shared__ float as[TILE][TILE], bs[TILE][TILE];
  int row = blockIdx.y * TILE + threadIdx.y, col = blockIdx.x * TILE + threadIdx.x;
  float acc = 0.0f;
  for (int t = 0; t < N / TILE; ++t) {
    as[threadIdx.y][threadIdx.x] = a[row * N + t * TILE + threadIdx.x];
    bs[threadIdx.y][threadIdx.x] = b[(t * TILE + threadIdx.y) * N + col];
    __syncthreads();
#pragma unroll 1
    for (int k = 0; k < TILE; ++k) acc = __fmaf_rn(as[threadIdx.y][k], bs[k][threadIdx.x], acc);
    __syncthreads();
  }
  c[row * N + col] = acc;
}

static unsigned bits(float f) {
  union {
    float f;
    unsigned u;
  } v;
  v.f = f;
  return v.u;
}

int main() {
  static float a[N * N], b[N * N], c[N * N];
  unsigned seed = 2026;
  for (int i = 0; i < N * N; ++i) {
    seed = seed * 1664525u + 1013904223u;
    a[i] = float(int(seed >> 20) - 2048) / 1024.0f + 1.0f / 3.0f;
    seed = seed * 1664525u + 1013904223u;
    b[i] = float(int(seed >> 20) - 2048) / 4096.0f - 1.0f / 7.0f;
  }
  float *da, *db, *dc;
  CHECK(cudaMalloc(&da, sizeof(a)));
  CHECK(cudaMalloc(&db, sizeof(b)));
  CHECK(cudaMalloc(&dc, sizeof(c)));
  CHECK(cudaMemcpy(da, a, sizeof(a), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(db, b, sizeof(b), cudaMemcpyHostToDevice));
  matmul<<<dim3(N / TILE, N / TILE), dim3(TILE, TILE)>>>(da, db, dc);
  CHECK(cudaGetLastError());
  CHECK(cudaMemcpy(c, dc, sizeof(c), cudaMemcpyDeviceToHost));
  CHECK(cudaFree(da));
  CHECK(cudaFree(db));
  CHECK(cudaFree(dc));

  int bad = 0;
  for (int i = 0; i < N; ++i)
    for (int j = 0; j < N; ++j) {
      float want = 0.0f;
      for (int k = 0; k < N; ++k) want = fmaf(a[i * N + k], b[k * N + j], want);
      if (bits(c[i * N + j]) != bits(want)) {
        if (bad < 5) printf("c[%d][%d] = %a, expected %a\n", i, j, c[i * N + j], want);
        ++bad;
      }
    }
  printf("c[0][0] = %.9g, c[23][23] = %.9g\n", c[0], c[N * N - 1]);
  printf("%d mismatches\n", bad);
  bool ok = bad == 0;
  printf("%s\n", ok ? "PASSED" : "FAILED");
  return ok ? 0 : 1;
}
