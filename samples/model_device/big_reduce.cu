// A 200 KiB buffer (51,200 words) copied to the device once and summed over
// several launches: four launches of one CTA of 256 threads each add a
// quarter of the buffer into the threads' 256 partial sums (which stay on the
// device between launches), and a last launch adds the partial sums up.
// Nothing is copied between launches.  The host checks the sum it copies
// back.
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

__global__ void partial(const unsigned* data, unsigned* part, unsigned begin, unsigned end) {
  unsigned s = 0;
  for (unsigned i = begin + threadIdx.x; i < end; i += blockDim.x) s += data[i];
  part[threadIdx.x] += s;
}

__global__ void total(unsigned* part, unsigned n) {
  unsigned s = 0;
  for (unsigned i = 0; i < n; ++i) s += part[i];
  part[n] = s;
}

int main() {
  const unsigned n = 51200;   // 200 KiB
  static unsigned host[n];
  unsigned long long expect = 0;
  for (unsigned i = 0; i < n; ++i) {
    host[i] = (i * 2654435761u) >> 12;
    expect += host[i];
  }
  unsigned *d = nullptr, *part = nullptr;
  CHECK(cudaMalloc(&d, sizeof host));
  CHECK(cudaMalloc(&part, 257 * sizeof(unsigned)));
  CHECK(cudaMemset(part, 0, 257 * sizeof(unsigned)));
  CHECK(cudaMemcpy(d, host, sizeof host, cudaMemcpyHostToDevice));
  const unsigned quarter = n / 4;
  int launches = 0;
  for (unsigned q = 0; q < 4; ++q, ++launches) {
    partial<<<1, 256>>>(d, part, q * quarter, (q + 1) * quarter);
    CHECK(cudaGetLastError());
  }
  total<<<1, 1>>>(part, 256);
  CHECK(cudaGetLastError());
  ++launches;
  unsigned sum = 0;
  CHECK(cudaMemcpy(&sum, part + 256, sizeof sum, cudaMemcpyDeviceToHost));
  printf("%u words (%u KiB), %d launches, sum %u (expected %u)\n", n, unsigned(sizeof host / 1024), launches, sum,
         unsigned(expect));
  bool ok = sum == unsigned(expect);
  printf("%s\n", ok ? "PASSED" : "FAILED");
  return ok ? 0 : 1;
}
