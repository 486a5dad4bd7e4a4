// A 3D grid of 3D blocks (2x2x2 blocks of 4x2x3 threads) over a 7x4x5
// volume: every thread reads its six index registers, computes a linear
// index and writes a 3D stencil of its coordinates.
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

__global__ void volume(int* out, int nx, int ny, int nz) {
  int x = blockIdx.x * blockDim.x + threadIdx.x;
  int y = blockIdx.y * blockDim.y + threadIdx.y;
  int z = blockIdx.z * blockDim.z + threadIdx.z;
  if (x >= nx || y >= ny || z >= nz) return;
  int block = (blockIdx.z * gridDim.y + blockIdx.y) * gridDim.x + blockIdx.x;
  out[(z * ny + y) * nx + x] = x * x + 10 * y - 3 * z + 1000 * block;
}

int main() {
  const int nx = 7, ny = 4, nz = 5, n = nx * ny * nz;
  dim3 block(4, 2, 3);
  dim3 grid(2, 2, 2);

  int* d_out;
  CHECK(cudaMalloc(&d_out, n * sizeof(int)));
  volume<<<grid, block>>>(d_out, nx, ny, nz);
  CHECK(cudaGetLastError());
  int out[n];
  CHECK(cudaMemcpy(out, d_out, sizeof(out), cudaMemcpyDeviceToHost));
  CHECK(cudaFree(d_out));

  int bad = 0;
  long long sum = 0;
  for (int z = 0; z < nz; ++z)
    for (int y = 0; y < ny; ++y)
      for (int x = 0; x < nx; ++x) {
        int b = ((z / 3) * 2 + y / 2) * 2 + x / 4;
        int v = out[(z * ny + y) * nx + x];
        if (v != x * x + 10 * y - 3 * z + 1000 * b) ++bad;
        sum += v;
      }
  printf("out(0,0,0) %d, out(6,3,4) %d, sum %lld\n", out[0], out[n - 1], sum);
  printf("%d mismatches\n", bad);
  bool ok = bad == 0;
  printf("%s\n", ok ? "PASSED" : "FAILED");
  return ok ? 0 : 1;
}
