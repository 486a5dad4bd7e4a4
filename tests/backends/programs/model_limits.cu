// Launches at the edge of the model's GPU:
//   params5k    a kernel of 5,000 bytes of parameters (the model's device
//               takes 4 KiB, CUDA's 32,764): prints "params5k: <cudaError
//               name>", exits 0 when refused;
//   clock       clock64() read before and after a loop in each of 32 threads
//               (the circuit has no clock; the model lowering counts the
//               thread's instructions, docs/isa.md 8.1): prints "clock:
//               <cudaError name>, later reads larger in N of 32", exits 0
//               when the launch ran.
#include <cstdio>
#include <cstring>
#include <cuda_runtime.h>

struct Big {
  int words[1250];
};
__global__ void fill(Big big, int* out) { out[threadIdx.x] = big.words[threadIdx.x * 3]; }

__global__ void ticks(long long* out) {
  const long long t0 = clock64();
  int x = threadIdx.x;
  for (int i = 0; i < 4 + int(threadIdx.x % 3); ++i) x = x * 3 + i;
  const long long t1 = clock64();
  out[threadIdx.x] = t1 > t0 ? 1 : 0;
  out[64 + threadIdx.x] = x;
}

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: model_limits params5k|clock\n");
    return 2;
  }
  int* d = nullptr;
  if (cudaMalloc(&d, 512 * sizeof(int)) != cudaSuccess) return 3;
  if (std::strcmp(argv[1], "params5k") == 0)
    fill<<<1, 32>>>(Big{}, d);
  else if (std::strcmp(argv[1], "clock") == 0)
    ticks<<<1, 32>>>(reinterpret_cast<long long*>(d));
  else
    return 2;
  cudaError_t e = cudaGetLastError();
  if (e == cudaSuccess) e = cudaDeviceSynchronize();
  if (std::strcmp(argv[1], "clock") == 0) {
    long long grew[32] = {};
    if (e == cudaSuccess) e = cudaMemcpy(grew, d, sizeof grew, cudaMemcpyDeviceToHost);
    int n = 0;
    for (long long g : grew) n += g == 1;
    std::printf("clock: %s, later reads larger in %d of 32\n", cudaGetErrorName(e), n);
    return e == cudaSuccess ? 0 : 1;
  }
  std::printf("%s: %s\n", argv[1], cudaGetErrorName(e));
  return e == cudaSuccess ? 1 : 0;
}
