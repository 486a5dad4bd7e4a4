// Exclusive prefix sum of 128 integers in shared memory by the work-efficient
// up-sweep/down-sweep method: 64 threads, two elements each, a barrier
// between every level.
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

const int kN = 128;

__global__ void scan(const int* in, int* out) {
  __shared__ int s[kN];
  int t = threadIdx.x;
  s[2 * t] = in[2 * t];
  s[2 * t + 1] = in[2 * t + 1];
  int offset = 1;
  for (int d = kN / 2; d > 0; d /= 2) {  // up-sweep: build partial sums
    __syncthreads();
    if (t < d) {
      int a = offset * (2 * t + 1) - 1, b = offset * (2 * t + 2) - 1;
      s[b] += s[a];
    }
    offset *= 2;
  }
  if (t == 0) s[kN - 1] = 0;
  for (int d = 1; d < kN; d *= 2) {  // down-sweep: distribute them
    offset /= 2;
    __syncthreads();
    if (t < d) {
      int a = offset * (2 * t + 1) - 1, b = offset * (2 * t + 2) - 1;
      int left = s[a];
      s[a] = s[b];
      s[b] += left;
    }
  }
  __syncthreads();
  out[2 * t] = s[2 * t];
  out[2 * t + 1] = s[2 * t + 1];
}

int main() {
  int in[kN];
  for (int i = 0; i < kN; ++i) in[i] = (i * 13) % 10 - 3;

  int *d_in, *d_out;
  CHECK(cudaMalloc(&d_in, sizeof(in)));
  CHECK(cudaMalloc(&d_out, sizeof(in)));
  CHECK(cudaMemcpy(d_in, in, sizeof(in), cudaMemcpyHostToDevice));
  scan<<<1, kN / 2>>>(d_in, d_out);
  CHECK(cudaGetLastError());
  int out[kN];
  CHECK(cudaMemcpy(out, d_out, sizeof(out), cudaMemcpyDeviceToHost));
  CHECK(cudaFree(d_in));
  CHECK(cudaFree(d_out));

  int bad = 0, running = 0;
  for (int i = 0; i < kN; ++i) {
    if (out[i] != running) ++bad;
    running += in[i];
  }
  printf("scan[0..7] = %d %d %d %d %d %d %d %d\n", out[0], out[1], out[2], out[3], out[4],
         out[5], out[6], out[7]);
  printf("scan[127] = %d, total %d, %d mismatches\n", out[kN - 1], running, bad);
  bool ok = bad == 0;
  printf("%s\n", ok ? "PASSED" : "FAILED");
  return ok ? 0 : 1;
}
