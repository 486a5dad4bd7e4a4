// A 2D grid of 2D blocks (3x2 blocks of 8x4 threads) over a 20x7 image that
// does not divide evenly: each thread computes its global (x, y) from
// blockIdx, blockDim and threadIdx, guards the edges and writes a value
// that encodes where it ran.
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

__global__ void tag(int* image, int width, int height) {
  int x = blockIdx.x * blockDim.x + threadIdx.x;
  int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= width || y >= height) return;
  int block = blockIdx.y * gridDim.x + blockIdx.x;
  int thread = threadIdx.y * blockDim.x + threadIdx.x;
  image[y * width + x] = block * 1000 + thread * 10 + (x + y) % 10;
}

int main() {
  const int width = 20, height = 7, n = width * height;
  dim3 block(8, 4);
  dim3 grid((width + block.x - 1) / block.x, (height + block.y - 1) / block.y);

  int* d_image;
  CHECK(cudaMalloc(&d_image, n * sizeof(int)));
  CHECK(cudaMemset(d_image, 0xff, n * sizeof(int)));
  tag<<<grid, block>>>(d_image, width, height);
  CHECK(cudaGetLastError());
  int image[n];
  CHECK(cudaMemcpy(image, d_image, sizeof(image), cudaMemcpyDeviceToHost));
  CHECK(cudaFree(d_image));

  int bad = 0;
  for (int y = 0; y < height; ++y)
    for (int x = 0; x < width; ++x) {
      int bx = x / 8, by = y / 4, tx = x % 8, ty = y % 4;
      int ref = (by * 3 + bx) * 1000 + (ty * 8 + tx) * 10 + (x + y) % 10;
      if (image[y * width + x] != ref) ++bad;
    }
  printf("grid %ux%u of %ux%u: (0,0) %d, (19,0) %d, (0,6) %d, (19,6) %d\n", grid.x, grid.y,
         block.x, block.y, image[0], image[19], image[6 * width], image[n - 1]);
  printf("%d mismatches\n", bad);
  bool ok = bad == 0;
  printf("%s\n", ok ? "PASSED" : "FAILED");
  return ok ? 0 : 1;
}
