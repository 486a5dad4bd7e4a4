// Order-preserving stream compaction with ballots: each lane finds its
// output position from the popcount of the ballot bits below it, and one
// lane per warp reserves the warp's range with a single atomicAdd.  Within a
// warp the kept elements keep their order.
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

__global__ void compact(const int* in, int* out, int* count, int* warp_base) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int lane = threadIdx.x % 32;
  int v = in[i];
  bool keep = v % 4 != 0;
  unsigned kept = __ballot_sync(0xffffffffu, keep);
  int base = 0;
  if (lane == 0) base = atomicAdd(count, __popc(kept));
  base = __shfl_sync(0xffffffffu, base, 0);
  if (lane == 0) warp_base[i / 32] = base;
  unsigned below = (1u << lane) - 1;
  if (keep) out[base + __popc(kept & below)] = v;
}

int main() {
  const int n = 96, warps = n / 32;
  int in[n];
  for (int i = 0; i < n; ++i) in[i] = (i * 7 + i / 5) % 29;

  int *d_in, *d_out, *d_count, *d_base;
  CHECK(cudaMalloc(&d_in, sizeof(in)));
  CHECK(cudaMalloc(&d_out, sizeof(in)));
  CHECK(cudaMalloc(&d_count, sizeof(int)));
  CHECK(cudaMalloc(&d_base, warps * sizeof(int)));
  CHECK(cudaMemcpy(d_in, in, sizeof(in), cudaMemcpyHostToDevice));
  CHECK(cudaMemset(d_count, 0, sizeof(int)));
  compact<<<1, n>>>(d_in, d_out, d_count, d_base);
  CHECK(cudaGetLastError());
  int out[n], count, base[warps];
  CHECK(cudaMemcpy(out, d_out, sizeof(out), cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(&count, d_count, sizeof(count), cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(base, d_base, sizeof(base), cudaMemcpyDeviceToHost));
  CHECK(cudaFree(d_in));
  CHECK(cudaFree(d_out));
  CHECK(cudaFree(d_count));
  CHECK(cudaFree(d_base));

  // The warps may reserve their ranges in any order; each range must hold
  // that warp's kept elements in their original order.
  int bad = 0, total = 0, sum = 0;
  for (int k = 0; k < count && k < n; ++k) sum += out[k];
  for (int w = 0; w < warps; ++w) {
    int k = base[w];
    for (int l = 0; l < 32; ++l) {
      int v = in[32 * w + l];
      if (v % 4 == 0) continue;
      if (k >= n || out[k++] != v) ++bad;
      ++total;
    }
  }
  if (count != total) ++bad;
  // The bases depend on the order in which the warps ran, so only the count
  // and the sum are printed.
  printf("kept %d of %d, sum of kept %d\n", count, n, sum);
  printf("%d mismatches\n", bad);
  bool ok = bad == 0;
  printf("%s\n", ok ? "PASSED" : "FAILED");
  return ok ? 0 : 1;
}
