// Shuffles that move data rather than reduce it: a broadcast from a
// data-chosen lane (__shfl_sync), a rotation by a lane-varying source, and
// sub-warp shuffles with width 8 (each group of eight lanes on its own).
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

__global__ void shuffles(const int* in, int src_lane, int* out) {
  int lane = threadIdx.x;
  int v = in[lane];
  out[lane] = __shfl_sync(0xffffffffu, v, src_lane);            // broadcast
  out[32 + lane] = __shfl_sync(0xffffffffu, v, (lane + 5) % 32);  // rotate left by 5
  out[64 + lane] = __shfl_sync(0xffffffffu, v, 0, 8);            // first of each group
  out[96 + lane] = __shfl_down_sync(0xffffffffu, v, 3, 8);        // down within groups
  out[128 + lane] = __shfl_up_sync(0xffffffffu, v, 2, 8);         // up within groups
  out[160 + lane] = __shfl_xor_sync(0xffffffffu, v, 5, 8);        // xor within groups
}

int main() {
  const int n = 32, src = 13;
  int in[n];
  for (int i = 0; i < n; ++i) in[i] = 1000 + i * i;

  int *d_in, *d_out;
  CHECK(cudaMalloc(&d_in, sizeof(in)));
  CHECK(cudaMalloc(&d_out, 6 * n * sizeof(int)));
  CHECK(cudaMemcpy(d_in, in, sizeof(in), cudaMemcpyHostToDevice));
  shuffles<<<1, n>>>(d_in, src, d_out);
  CHECK(cudaGetLastError());
  int out[6 * n];
  CHECK(cudaMemcpy(out, d_out, sizeof(out), cudaMemcpyDeviceToHost));
  CHECK(cudaFree(d_in));
  CHECK(cudaFree(d_out));

  int bad = 0;
  for (int l = 0; l < n; ++l) {
    int group = l & ~7, sub = l & 7;
    int ref[6] = {in[src],
                  in[(l + 5) % 32],
                  in[group],
                  in[sub + 3 < 8 ? l + 3 : l],  // out-of-group sources keep their own value
                  in[sub >= 2 ? l - 2 : l],
                  in[group + (sub ^ 5)]};
    for (int k = 0; k < 6; ++k)
      if (out[32 * k + l] != ref[k]) ++bad;
  }
  printf("broadcast %d, rotate[0] %d, group heads %d %d %d %d\n", out[0], out[32], out[64],
         out[72], out[80], out[88]);
  printf("down[5..7] %d %d %d, up[0..2] %d %d %d, %d mismatches\n", out[101], out[102], out[103],
         out[128], out[129], out[130], bad);
  bool ok = bad == 0;
  printf("%s\n", ok ? "PASSED" : "FAILED");
  return ok ? 0 : 1;
}
