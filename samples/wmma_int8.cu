// Warp matrix multiply-add on 8-bit integers (nvcuda::wmma, the tensor-core
// API): s8 x s8 + s32 in 16x16x16 tiles over a 16 x 32 x 32 product (two
// warps, two k steps), u8 x u8 + s32 in one 32x8x16 tile with saturation,
// and s8 in one 8x32x16 tile that wraps, with every load and store layout.
// Each result is checked against the host's exact sums.
#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
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

// D (16 x 32, row-major) = A (16 x 32, row-major) x B (32 x 32, column-major)
// + C (row-major): warp w computes columns 16 w .. 16 w + 15.
__global__ void gemm_s8(const signed char* a, const signed char* b, const int* c, int* d) {
  int n0 = (threadIdx.x / 32) * 16;
  wmma::fragment<wmma::matrix_a, 16, 16, 16, signed char, wmma::row_major> fa;
  wmma::fragment<wmma::matrix_b, 16, 16, 16, signed char, wmma::col_major> fb;
  wmma::fragment<wmma::accumulator, 16, 16, 16, int> acc;
  wmma::load_matrix_sync(acc, c + n0, 32, wmma::mem_row_major);
  for (int k0 = 0; k0 < 32; k0 += 16) {
    wmma::load_matrix_sync(fa, a + k0, 32);
    wmma::load_matrix_sync(fb, b + n0 * 32 + k0, 32);
    wmma::mma_sync(acc, fa, fb, acc);
  }
  wmma::store_matrix_sync(d + n0, acc, 32, wmma::mem_row_major);
}

// D (32 x 8, column-major) = A (32 x 16, column-major) x B (16 x 8,
// row-major) + C (column-major), saturated to the int range.
__global__ void gemm_u8_sat(const unsigned char* a, const unsigned char* b, const int* c, int* d) {
  wmma::fragment<wmma::matrix_a, 32, 8, 16, unsigned char, wmma::col_major> fa;
  wmma::fragment<wmma::matrix_b, 32, 8, 16, unsigned char, wmma::row_major> fb;
  wmma::fragment<wmma::accumulator, 32, 8, 16, int> acc;
  wmma::load_matrix_sync(fa, a, 32);
  wmma::load_matrix_sync(fb, b, 8);
  wmma::load_matrix_sync(acc, c, 32, wmma::mem_col_major);
  wmma::mma_sync(acc, fa, fb, acc, true);
  wmma::store_matrix_sync(d, acc, 32, wmma::mem_col_major);
}

// D (8 x 32, row-major) = A (8 x 16, row-major) x B (16 x 32, row-major) + C,
// wrapping; every element of the accumulator then gets 3 added.
__global__ void gemm_s8_wrap(const signed char* a, const signed char* b, const int* c, int* d) {
  wmma::fragment<wmma::matrix_a, 8, 32, 16, signed char, wmma::row_major> fa;
  wmma::fragment<wmma::matrix_b, 8, 32, 16, signed char, wmma::row_major> fb;
  wmma::fragment<wmma::accumulator, 8, 32, 16, int> acc;
  wmma::load_matrix_sync(fa, a, 16);
  wmma::load_matrix_sync(fb, b, 32);
  wmma::load_matrix_sync(acc, c, 32, wmma::mem_row_major);
  wmma::mma_sync(acc, fa, fb, acc);
  for (int i = 0; i < acc.num_elements; ++i) acc.x[i] += 3;
  wmma::store_matrix_sync(d, acc, 32, wmma::mem_row_major);
}

static unsigned seed = 2026;
static unsigned next() {
  seed = seed * 1664525u + 1013904223u;
  return seed >> 8;
}

static int bad = 0;
static void expect(const char* what, int i, int got, long long want) {
  if (got != (int)want) {
    if (bad < 5) printf("%s[%d] = %d, expected %d\n", what, i, got, (int)want);
    ++bad;
  }
}

int main() {
  // Buffers reused by the three products (sized for the largest).
  static signed char a[16 * 32], b[32 * 32];
  static int c[16 * 32], d[16 * 32];
  signed char *da, *db;
  int *dc, *dd;
  CHECK(cudaMalloc(&da, sizeof(a)));
  CHECK(cudaMalloc(&db, sizeof(b)));
  CHECK(cudaMalloc(&dc, sizeof(c)));
  CHECK(cudaMalloc(&dd, sizeof(d)));
  auto run = [&](int na, int nb, int nc) {
    CHECK(cudaMemcpy(da, a, na, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(db, b, nb, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(dc, c, nc * 4, cudaMemcpyHostToDevice));
  };

  // s8, 16x16x16 tiles.
  for (int i = 0; i < 16 * 32; ++i) a[i] = (signed char)next();
  for (int i = 0; i < 32 * 32; ++i) b[i] = (signed char)next();
  for (int i = 0; i < 16 * 32; ++i) c[i] = int(next() % 200001) - 100000;
  run(16 * 32, 32 * 32, 16 * 32);
  gemm_s8<<<1, 64>>>(da, db, dc, dd);
  CHECK(cudaGetLastError());
  CHECK(cudaMemcpy(d, dd, 16 * 32 * 4, cudaMemcpyDeviceToHost));
  long long sum1 = 0;
  for (int m = 0; m < 16; ++m)
    for (int n = 0; n < 32; ++n) {
      long long want = c[m * 32 + n];
      for (int k = 0; k < 32; ++k) want += a[m * 32 + k] * b[n * 32 + k];
      expect("s8", m * 32 + n, d[m * 32 + n], want);
      sum1 += d[m * 32 + n];
    }

  // u8, 32x8x16, saturating: C near both ends of the int range.
  unsigned char* ua = (unsigned char*)a;
  unsigned char* ub = (unsigned char*)b;
  for (int i = 0; i < 32 * 16; ++i) ua[i] = (unsigned char)next();
  for (int i = 0; i < 16 * 8; ++i) ub[i] = (unsigned char)next();
  for (int i = 0; i < 32 * 8; ++i) c[i] = i % 3 == 0 ? INT_MAX - int(next() % 600000) : i % 3 == 1 ? INT_MIN + 5 : int(next());
  run(32 * 16, 16 * 8, 32 * 8);
  gemm_u8_sat<<<1, 32>>>((unsigned char*)da, (unsigned char*)db, dc, dd);
  CHECK(cudaGetLastError());
  CHECK(cudaMemcpy(d, dd, 32 * 8 * 4, cudaMemcpyDeviceToHost));
  int saturated = 0;
  for (int m = 0; m < 32; ++m)
    for (int n = 0; n < 8; ++n) {
      long long want = c[n * 32 + m];
      for (int k = 0; k < 16; ++k) want += ua[k * 32 + m] * ub[k * 8 + n];
      if (want > INT_MAX) want = INT_MAX, ++saturated;
      expect("u8", n * 32 + m, d[n * 32 + m], want);
    }

  // s8, 8x32x16, wrapping.
  for (int i = 0; i < 8 * 16; ++i) a[i] = (signed char)next();
  for (int i = 0; i < 16 * 32; ++i) b[i] = (signed char)next();
  for (int i = 0; i < 8 * 32; ++i) c[i] = i % 2 ? INT_MAX - 100 : INT_MIN + 100;
  run(8 * 16, 16 * 32, 8 * 32);
  gemm_s8_wrap<<<1, 32>>>(da, db, dc, dd);
  CHECK(cudaGetLastError());
  CHECK(cudaMemcpy(d, dd, 8 * 32 * 4, cudaMemcpyDeviceToHost));
  for (int m = 0; m < 8; ++m)
    for (int n = 0; n < 32; ++n) {
      unsigned want = unsigned(c[m * 32 + n]) + 3u;
      for (int k = 0; k < 16; ++k) want += unsigned(a[m * 16 + k] * b[k * 32 + n]);
      expect("wrap", m * 32 + n, d[m * 32 + n], (int)want);
    }

  CHECK(cudaFree(da));
  CHECK(cudaFree(db));
  CHECK(cudaFree(dc));
  CHECK(cudaFree(dd));
  printf("s8 sum %lld, u8 saturated %d of 256\n", sum1, saturated);
  printf("%d mismatches\n", bad);
  bool ok = bad == 0 && saturated > 0;
  printf("%s\n", ok ? "PASSED" : "FAILED");
  return ok ? 0 : 1;
}
