// Runs one long kernel: `spin N` loops N times on the device, then reports
// what cudaDeviceSynchronize returned.
#include <cstdio>
#include <cstdlib>

__global__ void spin(unsigned* out, unsigned n) {
  unsigned x = 1;
  for (unsigned i = 0; i < n; ++i) x = x * 1103515245u + 12345u;
  *out = x;
}

int main(int argc, char** argv) {
  unsigned n = argc > 1 ? unsigned(strtoul(argv[1], nullptr, 10)) : 1000;
  unsigned* d;
  cudaMalloc(&d, sizeof(unsigned));
  printf("launching\n");
  fflush(stdout);
  spin<<<1, 1>>>(d, n);
  cudaError_t e = cudaDeviceSynchronize();
  printf("sync %s\n", cudaGetErrorName(e));
  printf("after %s\n", cudaGetErrorName(cudaMalloc(&d, 4)));
  return e == cudaSuccess ? 0 : 1;
}
