// Stream compaction with a global atomic counter: threads whose element
// passes the filter claim an output slot with atomicAdd.  The order of the
// output depends on the schedule, so the host checks it as a set.
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

__global__ void compact(const int* in, int n, int* out, int* count) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  int v = in[i];
  if (v % 3 == 0 || v < 0) {
    int slot = atomicAdd(count, 1);
    out[slot] = v;
  }
}

int main() {
  const int n = 96;
  int in[n];
  for (int i = 0; i < n; ++i) in[i] = (i * 53) % 101 - 20;

  int *d_in, *d_out, *d_count;
  CHECK(cudaMalloc(&d_in, sizeof(in)));
  CHECK(cudaMalloc(&d_out, sizeof(in)));
  CHECK(cudaMalloc(&d_count, sizeof(int)));
  CHECK(cudaMemcpy(d_in, in, sizeof(in), cudaMemcpyHostToDevice));
  CHECK(cudaMemset(d_count, 0, sizeof(int)));
  compact<<<3, 32>>>(d_in, n, d_out, d_count);
  CHECK(cudaGetLastError());
  int out[n], count;
  CHECK(cudaMemcpy(&count, d_count, sizeof(int), cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(out, d_out, sizeof(out), cudaMemcpyDeviceToHost));
  CHECK(cudaFree(d_in));
  CHECK(cudaFree(d_out));
  CHECK(cudaFree(d_count));

  // Compare as multisets: count occurrences of each value (-20..80).
  int hist[101] = {}, ref_count = 0, bad = 0;
  long long sum = 0;
  for (int i = 0; i < n; ++i)
    if (in[i] % 3 == 0 || in[i] < 0) { ++hist[in[i] + 20]; ++ref_count; }
  for (int k = 0; k < count && k < n; ++k) {
    sum += out[k];
    if (out[k] < -20 || out[k] > 80 || --hist[out[k] + 20] < 0) ++bad;
  }
  if (count != ref_count) ++bad;
  printf("kept %d of %d (expected %d), sum of kept %lld\n", count, n, ref_count, sum);
  printf("%d mismatches\n", bad);
  bool ok = bad == 0;
  printf("%s\n", ok ? "PASSED" : "FAILED");
  return ok ? 0 : 1;
}
