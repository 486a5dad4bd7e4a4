// A 100,000-CTA grid: 100,000 blocks of 32 threads, each block writing its
// linear index (from a 2-D grid of 400 x 250) and counting itself in a
// global atomic; every entry and the count are checked.
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

__global__ void mark(unsigned* out, unsigned* count) {
  const unsigned block = blockIdx.y * gridDim.x + blockIdx.x;
  const unsigned lanes = __popc(__ballot_sync(0xffffffffu, true));
  if (threadIdx.x == 0) {
    out[block] = block * 3u + lanes;
    atomicAdd(count, 1u);
  }
}

int main() {
  const dim3 grid(400, 250);
  const unsigned n = grid.x * grid.y;  // 100,000 CTAs
  unsigned *d_out, *d_count;
  CHECK(cudaMalloc(&d_out, n * sizeof(unsigned)));
  CHECK(cudaMalloc(&d_count, sizeof(unsigned)));
  CHECK(cudaMemset(d_out, 0, n * sizeof(unsigned)));
  CHECK(cudaMemset(d_count, 0, sizeof(unsigned)));
  mark<<<grid, 32>>>(d_out, d_count);
  CHECK(cudaGetLastError());
  std::vector<unsigned> out(n);
  unsigned count = 0;
  CHECK(cudaMemcpy(out.data(), d_out, n * sizeof(unsigned), cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(&count, d_count, sizeof(unsigned), cudaMemcpyDeviceToHost));
  CHECK(cudaFree(d_out));
  CHECK(cudaFree(d_count));

  unsigned bad = 0;
  for (unsigned i = 0; i < n; ++i)
    if (out[i] != i * 3u + 32u) ++bad;
  printf("%u CTAs ran (expected %u), %u wrong entries\n", count, n, bad);
  const bool ok = bad == 0 && count == n;
  printf("%s\n", ok ? "PASSED" : "FAILED");
  return ok ? 0 : 1;
}
