// One thread steps a 32-bit linear congruential generator N times (argv[1])
// and compares the result with the host's.  The launch's length on the model
// grows with N; with a path argv[2], the program creates that file once the
// launch has been issued (launches are asynchronous) and before it waits.
// Prints "spin N = VALUE" and PASSED.
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

__global__ void spin(unsigned* out, int n) {
  unsigned x = 12345u;
  for (int i = 0; i < n; ++i) x = x * 1664525u + 1013904223u;
  *out = x;
}

int main(int argc, char** argv) {
  if (argc < 2 || argc > 3) {
    std::fprintf(stderr, "usage: spin N [MARKER]\n");
    return 2;
  }
  const int n = std::atoi(argv[1]);
  unsigned* d = nullptr;
  if (cudaMalloc(&d, sizeof(unsigned)) != cudaSuccess) return 3;
  spin<<<1, 1>>>(d, n);
  if (argc == 3) {
    if (FILE* f = std::fopen(argv[2], "w")) std::fclose(f);
  }
  unsigned got = 0;
  if (cudaMemcpy(&got, d, sizeof got, cudaMemcpyDeviceToHost) != cudaSuccess) return 4;
  unsigned want = 12345u;
  for (int i = 0; i < n; ++i) want = want * 1664525u + 1013904223u;
  std::printf("spin %d = %u\n%s\n", n, got, got == want ? "PASSED" : "FAILED");
  return got == want ? 0 : 1;
}
