// A multi-MiB allocation: 8 MiB of device memory (2 Mi ints), filled by a
// grid-stride kernel, copied back and checked element by element, with a
// second 4 MiB buffer copied device to device.
#include <cstdio>
#include <cstdlib>
#include <vector>
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

__global__ void fill(unsigned* data, unsigned n, unsigned seed) {
  for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    data[i] = i * 2654435761u + seed;
}

int main() {
  const unsigned n = 2u << 20;  // 2 Mi elements: 8 MiB
  const size_t bytes = n * sizeof(unsigned);
  unsigned *d_a, *d_b;
  CHECK(cudaMalloc(&d_a, bytes));
  CHECK(cudaMalloc(&d_b, bytes / 2));
  fill<<<64, 256>>>(d_a, n, 12345u);
  CHECK(cudaGetLastError());
  CHECK(cudaMemcpy(d_b, d_a + n / 2, bytes / 2, cudaMemcpyDeviceToDevice));
  std::vector<unsigned> a(n), b(n / 2);
  CHECK(cudaMemcpy(a.data(), d_a, bytes, cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(b.data(), d_b, bytes / 2, cudaMemcpyDeviceToHost));
  CHECK(cudaFree(d_a));
  CHECK(cudaFree(d_b));

  unsigned bad = 0;
  for (unsigned i = 0; i < n; ++i)
    if (a[i] != i * 2654435761u + 12345u) ++bad;
  for (unsigned i = 0; i < n / 2; ++i)
    if (b[i] != a[n / 2 + i]) ++bad;
  printf("%u MiB allocated, %u elements checked, %u wrong\n", (unsigned)(bytes >> 20), n + n / 2, bad);
  printf("%s\n", bad == 0 ? "PASSED" : "FAILED");
  return bad == 0 ? 0 : 1;
}
