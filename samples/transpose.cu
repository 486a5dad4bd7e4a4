// Matrix transpose through a shared-memory tile: a 2D grid of 8x8 blocks
// over a 24x16 matrix; reads and writes are both row-contiguous, and the
// tile is padded by one column, as bank-conflict-free transposes are.
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

const int kTile = 8;

__global__ void transpose(const int* in, int* out, int rows, int cols) {
  __shared__ int tile[kTile][kTile + 1];
  int x = blockIdx.x * kTile + threadIdx.x;  // column in `in`
  int y = blockIdx.y * kTile + threadIdx.y;  // row in `in`
  if (x < cols && y < rows) tile[threadIdx.y][threadIdx.x] = in[y * cols + x];
  __syncthreads();
  x = blockIdx.y * kTile + threadIdx.x;      // column in `out`
  y = blockIdx.x * kTile + threadIdx.y;      // row in `out`
  if (x < rows && y < cols) out[y * rows + x] = tile[threadIdx.x][threadIdx.y];
}

int main() {
  const int rows = 24, cols = 16, n = rows * cols;
  int in[n];
  for (int i = 0; i < n; ++i) in[i] = (i / cols) * 100 + i % cols;

  int *d_in, *d_out;
  CHECK(cudaMalloc(&d_in, sizeof(in)));
  CHECK(cudaMalloc(&d_out, sizeof(in)));
  CHECK(cudaMemcpy(d_in, in, sizeof(in), cudaMemcpyHostToDevice));
  dim3 block(kTile, kTile);
  dim3 grid(cols / kTile, rows / kTile);
  transpose<<<grid, block>>>(d_in, d_out, rows, cols);
  CHECK(cudaGetLastError());
  int out[n];
  CHECK(cudaMemcpy(out, d_out, sizeof(out), cudaMemcpyDeviceToHost));
  CHECK(cudaFree(d_in));
  CHECK(cudaFree(d_out));

  int bad = 0;
  for (int r = 0; r < cols; ++r)
    for (int c = 0; c < rows; ++c)
      if (out[r * rows + c] != in[c * cols + r]) ++bad;
  printf("out row 0: %d %d %d ... %d\n", out[0], out[1], out[2], out[rows - 1]);
  printf("out row %d: %d %d %d ... %d\n", cols - 1, out[(cols - 1) * rows],
         out[(cols - 1) * rows + 1], out[(cols - 1) * rows + 2], out[n - 1]);
  printf("%d mismatches\n", bad);
  bool ok = bad == 0;
  printf("%s\n", ok ? "PASSED" : "FAILED");
  return ok ? 0 : 1;
}
