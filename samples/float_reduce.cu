// A float sum per block: a tree over each warp with __shfl_down_sync, the
// warps' sums through shared memory, a second tree in the first warp.  Every
// addition is __fadd_rn in a fixed order, so the host computes the same tree
// and the sums agree bit for bit.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
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

__device__ float warp_sum(float v) {
  for (int offset = 16; offset > 0; offset /= 2) v = __fadd_rn(v, __shfl_down_sync(0xffffffffu, v, offset));
  return v;
}

__global__ void block_sum(const float* in, float* out) {
  __shared__ float partial[8];
  int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  float v = warp_sum(in[blockIdx.x * blockDim.x + threadIdx.x]);
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = lane < blockDim.x / 32 ? partial[lane] : 0.0f;
    v = warp_sum(v);
    if (lane == 0) out[blockIdx.x] = v;
  }
}

// The same tree on the host: lane l adds lane l + offset's value.
static float host_warp_sum(const float* v32) {
  float v[32];
  for (int l = 0; l < 32; ++l) v[l] = v32[l];
  for (int offset = 16; offset > 0; offset /= 2)
    for (int l = 0; l < 32; ++l) v[l] = v[l] + (l + offset < 32 ? v[l + offset] : v[l]);
  return v[0];
}

static unsigned bits(float f) {
  union {
    float f;
    unsigned u;
  } v;
  v.f = f;
  return v.u;
}

int main() {
  const int blocks = 4, threads = 256, n = blocks * threads;
  float in[n];
  unsigned seed = 777;
  for (int i = 0; i < n; ++i) {
    seed = seed * 1664525u + 1013904223u;
    in[i] = ldexpf(float(seed >> 8) / 16777216.0f - 0.5f, int(seed % 24) - 12);
  }
  float *din, *dout;
  CHECK(cudaMalloc(&din, sizeof(in)));
  CHECK(cudaMalloc(&dout, blocks * sizeof(float)));
  CHECK(cudaMemcpy(din, in, sizeof(in), cudaMemcpyHostToDevice));
  block_sum<<<blocks, threads>>>(din, dout);
  CHECK(cudaGetLastError());
  float out[blocks];
  CHECK(cudaMemcpy(out, dout, sizeof(out), cudaMemcpyDeviceToHost));
  CHECK(cudaFree(din));
  CHECK(cudaFree(dout));

  int bad = 0;
  for (int b = 0; b < blocks; ++b) {
    float partial[32] = {0};
    for (int w = 0; w < threads / 32; ++w) partial[w] = host_warp_sum(in + b * threads + w * 32);
    float want = host_warp_sum(partial);
    double exact = 0;
    for (int i = 0; i < threads; ++i) exact += in[b * threads + i];
    printf("block %d: sum %.9g (double-precision sum %.9g)\n", b, out[b], exact);
    if (bits(out[b]) != bits(want)) {
      printf("  expected %a, got %a\n", want, out[b]);
      ++bad;
    }
  }
  printf("%d mismatches\n", bad);
  bool ok = bad == 0;
  printf("%s\n", ok ? "PASSED" : "FAILED");
  return ok ? 0 : 1;
}
