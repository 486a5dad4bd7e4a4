// Launches the model's GPU must refuse, each with a clear error:
//   threads512  a block of 512 threads (the model runs at most 256 per CTA)
//   clock       a clock read (the circuit has no clock)
// Prints "<case>: <cudaError name>" and exits 0 when the launch failed.
#include <cstdio>
#include <cstring>
#include <cuda_runtime.h>

__global__ void fill(int* out) { out[threadIdx.x] = int(threadIdx.x); }

__global__ void ticks(long long* out) { out[threadIdx.x] = clock64(); }

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: model_limits threads512|clock\n");
    return 2;
  }
  int* d = nullptr;
  if (cudaMalloc(&d, 512 * sizeof(int)) != cudaSuccess) return 3;
  if (std::strcmp(argv[1], "threads512") == 0)
    fill<<<1, 512>>>(d);
  else if (std::strcmp(argv[1], "clock") == 0)
    ticks<<<1, 32>>>(reinterpret_cast<long long*>(d));
  else
    return 2;
  cudaError_t e = cudaGetLastError();
  if (e == cudaSuccess) e = cudaDeviceSynchronize();
  std::printf("%s: %s\n", argv[1], cudaGetErrorName(e));
  return e == cudaSuccess ? 1 : 0;
}
