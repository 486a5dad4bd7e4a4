// Warp matrix multiply-add on halves (nvcuda::wmma, the tensor-core API):
// f16 x f16 + f32 in 16x16x16 tiles over a 32 x 32 x 32 product with the
// accumulator scaled afterwards (D = alpha * (A B) + beta * C, as CUDA's
// GEMM samples do), and f16 x f16 + f16 in one 32x8x16 tile.  Their inputs
// are small multiples of a power of two, so every sum is exact in any order
// and the host's double-precision result is the only right one.  A third
// product of arbitrary halves is checked to a relative 1e-5 (tensor cores
// may add in any order).
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <mma.h>

using namespace nvcuda;

#define CHECK(call)                                                          \
  do {                                                                       \
    cudaError_t err_ = (call);                                               \
    if (err_ != cudaSuccess) {                                               \
      printf("CUDA error at %s:%d: %s\n", __FILE__, __LINE__,                \
             cudaGetErrorString(err_));                                      \
      exit(1);                                                               \
    }                                                                        \
  } while (0)

#define N 32

// D = alpha * A B + beta * C, all 32 x 32: A row-major, B column-major, C
// and D row-major (D may be C: each warp reads its tile of C before it
// writes the same tile of D); warp w of 4 computes the tile (w / 2, w % 2).
__global__ void gemm_f32(const half* a, const half* b, const float* c, float* d, float alpha, float beta) {
  int w = threadIdx.x / 32, m0 = (w / 2) * 16, n0 = (w % 2) * 16;
  wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> fa;
  wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::col_major> fb;
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc, fc;
  wmma::fill_fragment(acc, 0.0f);
  for (int k0 = 0; k0 < N; k0 += 16) {
    wmma::load_matrix_sync(fa, a + m0 * N + k0, N);
    wmma::load_matrix_sync(fb, b + n0 * N + k0, N);
    wmma::mma_sync(acc, fa, fb, acc);
  }
  wmma::load_matrix_sync(fc, c + m0 * N + n0, N, wmma::mem_row_major);
  for (int i = 0; i < fc.num_elements; ++i) fc.x[i] = alpha * acc.x[i] + beta * fc.x[i];
  wmma::store_matrix_sync(d + m0 * N + n0, fc, N, wmma::mem_row_major);
}

// D (32 x 8, row-major halves) = A (32 x 16, column-major) x B (16 x 8,
// row-major) + 1.5 everywhere.
__global__ void gemm_f16(const half* a, const half* b, half* d) {
  wmma::fragment<wmma::matrix_a, 32, 8, 16, half, wmma::col_major> fa;
  wmma::fragment<wmma::matrix_b, 32, 8, 16, half, wmma::row_major> fb;
  wmma::fragment<wmma::accumulator, 32, 8, 16, half> acc;
  wmma::fill_fragment(acc, __float2half(1.5f));
  wmma::load_matrix_sync(fa, a, 32);
  wmma::load_matrix_sync(fb, b, 8);
  wmma::mma_sync(acc, fa, fb, acc);
  wmma::store_matrix_sync(d, acc, 8, wmma::mem_row_major);
}

static unsigned seed = 2026;
static int next(int range) {  // -range .. range
  seed = seed * 1664525u + 1013904223u;
  return int((seed >> 8) % unsigned(2 * range + 1)) - range;
}

int main() {
  static half a[N * N], b[N * N], dh[32 * 8];
  static float fa[N * N], fb[N * N], c[N * N], d[N * N];
  // 8 KiB of device memory: C and D share a buffer, which holds the f16
  // product's D too.
  half *da, *db;
  float* dc;
  CHECK(cudaMalloc(&da, sizeof(a)));
  CHECK(cudaMalloc(&db, sizeof(b)));
  CHECK(cudaMalloc(&dc, sizeof(c)));
  float* dd = dc;
  half* ddh = (half*)dc;
  int bad = 0;

  // Exact: a in multiples of 1/8, b of 1/16, c of 1/4.
  for (int i = 0; i < N * N; ++i) {
    fa[i] = next(64) / 8.0f, fb[i] = next(64) / 16.0f, c[i] = next(400) / 4.0f;
    a[i] = __float2half(fa[i]), b[i] = __float2half(fb[i]);
  }
  CHECK(cudaMemcpy(da, a, sizeof(a), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(db, b, sizeof(b), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(dc, c, sizeof(c), cudaMemcpyHostToDevice));
  gemm_f32<<<1, 128>>>(da, db, dc, dd, 2.0f, -0.5f);
  CHECK(cudaGetLastError());
  CHECK(cudaMemcpy(d, dd, sizeof(d), cudaMemcpyDeviceToHost));
  double total = 0;
  for (int m = 0; m < N; ++m)
    for (int n = 0; n < N; ++n) {
      double s = 0;
      for (int k = 0; k < N; ++k) s += double(fa[m * N + k]) * fb[n * N + k];
      double want = 2.0 * s - 0.5 * c[m * N + n];
      if (d[m * N + n] != want) {
        if (bad < 5) printf("f32 d[%d][%d] = %.9g, expected %.9g\n", m, n, d[m * N + n], want);
        ++bad;
      }
      total += d[m * N + n];
    }
  printf("f32 accumulator: sum of D = %.6f\n", total);

  // Exact in f16: a and b in multiples of 1/4 up to 1, sums below 64.
  for (int i = 0; i < 32 * 16; ++i) fa[i] = next(4) / 4.0f, a[i] = __float2half(fa[i]);
  for (int i = 0; i < 16 * 8; ++i) fb[i] = next(4) / 4.0f, b[i] = __float2half(fb[i]);
  CHECK(cudaMemcpy(da, a, sizeof(a), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(db, b, sizeof(b), cudaMemcpyHostToDevice));
  gemm_f16<<<1, 32>>>(da, db, ddh);
  CHECK(cudaGetLastError());
  CHECK(cudaMemcpy(dh, ddh, sizeof(dh), cudaMemcpyDeviceToHost));
  double total16 = 0;
  for (int m = 0; m < 32; ++m)
    for (int n = 0; n < 8; ++n) {
      double want = 1.5;
      for (int k = 0; k < 16; ++k) want += double(fa[k * 32 + m]) * fb[k * 8 + n];
      float got = __half2float(dh[m * 8 + n]);
      if (got != want) {
        if (bad < 5) printf("f16 d[%d][%d] = %.9g, expected %.9g\n", m, n, got, want);
        ++bad;
      }
      total16 += got;
    }
  printf("f16 accumulator: sum of D = %.4f\n", total16);

  // Arbitrary halves: within a relative 1e-5 of the exact result.
  for (int i = 0; i < N * N; ++i) {
    a[i] = __float2half(next(30000) / 7777.0f), b[i] = __float2half(next(30000) / 3333.0f);
    fa[i] = __half2float(a[i]), fb[i] = __half2float(b[i]), c[i] = next(30000) / 999.0f;
  }
  CHECK(cudaMemcpy(da, a, sizeof(a), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(db, b, sizeof(b), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(dc, c, sizeof(c), cudaMemcpyHostToDevice));
  gemm_f32<<<1, 128>>>(da, db, dc, dd, 1.0f, 1.0f);
  CHECK(cudaGetLastError());
  CHECK(cudaMemcpy(d, dd, sizeof(d), cudaMemcpyDeviceToHost));
  int far = 0;
  for (int m = 0; m < N; ++m)
    for (int n = 0; n < N; ++n) {
      double want = c[m * N + n], mag = std::fabs(want);
      for (int k = 0; k < N; ++k) {
        want += double(fa[m * N + k]) * fb[n * N + k];
        mag += std::fabs(double(fa[m * N + k]) * fb[n * N + k]);
      }
      if (std::fabs(d[m * N + n] - want) > 1e-5 * mag) {
        if (far < 5) printf("d[%d][%d] = %.9g, expected %.9g\n", m, n, d[m * N + n], want);
        ++far;
      }
    }
  bad += far;
  unsigned hash = 2166136261u;  // FNV-1a of D's bits: the backends' results must agree bit for bit
  for (int i = 0; i < N * N; ++i) {
    unsigned u;
    memcpy(&u, &d[i], 4);
    hash = (hash ^ u) * 16777619u;
  }
  printf("arbitrary halves: D's bits hash to %08x\n", hash);

  CHECK(cudaFree(da));
  CHECK(cudaFree(db));
  CHECK(cudaFree(dc));
  printf("%d mismatches\n", bad);
  bool ok = bad == 0;
  printf("%s\n", ok ? "PASSED" : "FAILED");
  return ok ? 0 : 1;
}
