// Collatz stopping times: a loop whose trip count depends on each thread's
// data, so the lanes of a warp leave it at different iterations.
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

__global__ void stopping_time(const unsigned* start, int* steps, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  unsigned x = start[i];
  int count = 0;
  while (x != 1) {
    x = (x & 1) ? 3 * x + 1 : x / 2;
    ++count;
  }
  steps[i] = count;
}

int main() {
  const int n = 64;
  unsigned start[n];
  for (int i = 0; i < n; ++i) start[i] = i + 1;

  unsigned* d_start;
  int* d_steps;
  CHECK(cudaMalloc(&d_start, sizeof(start)));
  CHECK(cudaMalloc(&d_steps, n * sizeof(int)));
  CHECK(cudaMemcpy(d_start, start, sizeof(start), cudaMemcpyHostToDevice));
  stopping_time<<<2, 32>>>(d_start, d_steps, n);
  CHECK(cudaGetLastError());
  int steps[n];
  CHECK(cudaMemcpy(steps, d_steps, sizeof(steps), cudaMemcpyDeviceToHost));
  CHECK(cudaFree(d_start));
  CHECK(cudaFree(d_steps));

  int bad = 0, longest = 0;
  for (int i = 0; i < n; ++i) {
    unsigned x = start[i];
    int count = 0;
    for (; x != 1; ++count) x = x % 2 ? 3 * x + 1 : x / 2;
    if (steps[i] != count) ++bad;
    if (steps[i] > steps[longest]) longest = i;
  }
  printf("steps(1..8) = %d %d %d %d %d %d %d %d\n", steps[0], steps[1], steps[2], steps[3],
         steps[4], steps[5], steps[6], steps[7]);
  printf("longest below %d: %u with %d steps, %d mismatches\n", n + 1, start[longest],
         steps[longest], bad);
  bool ok = bad == 0;
  printf("%s\n", ok ? "PASSED" : "FAILED");
  return ok ? 0 : 1;
}
