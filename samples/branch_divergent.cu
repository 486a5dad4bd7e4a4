// Divergent branches: nested if/else chains that depend on the lane and on
// the data, so the lanes of one warp take up to eight different paths and
// reconverge before the common tail.
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

__global__ void classify(const int* in, int* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  int lane = threadIdx.x % 32;
  int v = in[i], r;
  if (lane < 16) {
    if (v % 3 == 0) {
      r = v / 3;
    } else if (lane & 1) {
      r = v * 2;
      if (v > 40) r -= 7;
    } else {
      r = -v;
    }
  } else {
    if (lane >= 24) {
      r = (v & 1) ? v + lane : v - lane;
    } else {
      r = 0;
      for (int k = 0; k < (v & 3); ++k) r += k + v;
    }
  }
  out[i] = r * 10 + lane % 4;  // common tail after reconvergence
}

int main() {
  const int n = 64;
  int in[n];
  for (int i = 0; i < n; ++i) in[i] = (i * 37 + 11) % 61;

  int *d_in, *d_out;
  CHECK(cudaMalloc(&d_in, sizeof(in)));
  CHECK(cudaMalloc(&d_out, sizeof(in)));
  CHECK(cudaMemcpy(d_in, in, sizeof(in), cudaMemcpyHostToDevice));
  classify<<<2, 32>>>(d_in, d_out, n);
  CHECK(cudaGetLastError());
  int out[n];
  CHECK(cudaMemcpy(out, d_out, sizeof(out), cudaMemcpyDeviceToHost));
  CHECK(cudaFree(d_in));
  CHECK(cudaFree(d_out));

  int bad = 0, sum = 0;
  for (int i = 0; i < n; ++i) {
    int lane = i % 32, v = in[i], r;
    if (lane < 16 && v % 3 == 0) r = v / 3;
    else if (lane < 16 && lane % 2 == 1) r = v > 40 ? 2 * v - 7 : 2 * v;
    else if (lane < 16) r = -v;
    else if (lane >= 24) r = v % 2 == 1 ? v + lane : v - lane;
    else r = (v % 4) * v + (v % 4) * (v % 4 - 1) / 2;
    r = r * 10 + lane % 4;
    if (out[i] != r) ++bad;
    sum += out[i];
  }
  printf("out[0..7] = %d %d %d %d %d %d %d %d\n", out[0], out[1], out[2], out[3], out[4], out[5],
         out[6], out[7]);
  printf("sum %d, %d mismatches\n", sum, bad);
  bool ok = bad == 0;
  printf("%s\n", ok ? "PASSED" : "FAILED");
  return ok ? 0 : 1;
}
