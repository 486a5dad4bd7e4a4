// __activemask inside divergent code: which lanes are active on each side of
// lane-dependent branches, and a ballot over just those lanes.  The masks are
// recorded by the lowest active lane of each branch.
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

__global__ void masks(const int* in, unsigned* out) {
  int lane = threadIdx.x;
  int v = in[lane];
  out[0] = __activemask();  // before any branch: every lane, and all store the same value
  if (lane % 3 == 0) {
    unsigned m = __activemask();
    unsigned big = __ballot_sync(m, v > 10);
    if (lane == 0) {
      out[1] = m;
      out[2] = big;
    }
  } else if (lane < 20) {
    unsigned m = __activemask();
    if (lane == __ffs(m) - 1) out[3] = m;
    if (v & 1) {
      unsigned odd = __activemask();
      if (lane == __ffs(odd) - 1) out[4] = odd;
    }
  } else {
    unsigned m = __activemask();
    int count = __popc(__ballot_sync(m, true));
    if (lane == __ffs(m) - 1) {
      out[5] = m;
      out[6] = count;
    }
  }
}

int main() {
  const int n = 32;
  int in[n];
  for (int i = 0; i < n; ++i) in[i] = (i * 11) % 23;

  int* d_in;
  unsigned* d_out;
  CHECK(cudaMalloc(&d_in, sizeof(in)));
  CHECK(cudaMalloc(&d_out, 7 * sizeof(unsigned)));
  CHECK(cudaMemcpy(d_in, in, sizeof(in), cudaMemcpyHostToDevice));
  masks<<<1, n>>>(d_in, d_out);
  CHECK(cudaGetLastError());
  unsigned out[7];
  CHECK(cudaMemcpy(out, d_out, sizeof(out), cudaMemcpyDeviceToHost));
  CHECK(cudaFree(d_in));
  CHECK(cudaFree(d_out));

  unsigned ref[7] = {0xffffffffu, 0, 0, 0, 0, 0, 0};
  for (int l = 0; l < n; ++l) {
    if (l % 3 == 0) {
      ref[1] |= 1u << l;
      if (in[l] > 10) ref[2] |= 1u << l;
    } else if (l < 20) {
      ref[3] |= 1u << l;
      if (in[l] & 1) ref[4] |= 1u << l;
    } else {
      ref[5] |= 1u << l;
      ++ref[6];
    }
  }
  int bad = 0;
  for (int k = 0; k < 7; ++k)
    if (out[k] != ref[k]) ++bad;
  printf("all %08x | lane%%3==0 %08x big %08x | lane<20 %08x odd %08x | rest %08x count %u\n",
         out[0], out[1], out[2], out[3], out[4], out[5], out[6]);
  printf("%d mismatches\n", bad);
  bool ok = bad == 0;
  printf("%s\n", ok ? "PASSED" : "FAILED");
  return ok ? 0 : 1;
}
