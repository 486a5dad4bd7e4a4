// Device memory that lives across launches: 8 words copied in once, three
// launches over them (each adds its launch number to every word and counts
// itself in word 8), one copy back.  Prints the words and "PASSED" when they
// are what three launches make of them.
#include <cstdio>
#include <cuda_runtime.h>

__global__ void step(unsigned* data, unsigned k) {
  data[threadIdx.x] += k * (threadIdx.x + 1);
  if (threadIdx.x == 0) data[8] += 1;
}

int main() {
  unsigned host[9] = {10, 20, 30, 40, 50, 60, 70, 80, 0};
  unsigned* d = nullptr;
  if (cudaMalloc(&d, sizeof host) != cudaSuccess) return 3;
  if (cudaMemcpy(d, host, sizeof host, cudaMemcpyHostToDevice) != cudaSuccess) return 4;
  for (unsigned k = 1; k <= 3; ++k) step<<<1, 8>>>(d, k);
  if (cudaDeviceSynchronize() != cudaSuccess) return 5;
  unsigned out[9];
  if (cudaMemcpy(out, d, sizeof out, cudaMemcpyDeviceToHost) != cudaSuccess) return 6;
  bool ok = out[8] == 3;
  for (unsigned i = 0; i < 8; ++i) {
    std::printf("%u ", out[i]);
    ok = ok && out[i] == host[i] + 6 * (i + 1);
  }
  std::printf("%u\n%s\n", out[8], ok ? "PASSED" : "FAILED");
  return ok ? 0 : 1;
}
