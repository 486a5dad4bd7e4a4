// Integer kernels compiled by clang-19 (NVPTX back end) for the PTX front end
// and interpreter tests.
#include "clang_cuda.h"

__constant__ int bias[4] = {1, 2, 3, 4};
__device__ int* bias_ptr = &bias[2];

__device__ __noinline__ long long mix(long long a, int b) { return a * b + (a >> 3); }

extern "C" __global__ void clang_mix(const int* in, long long* out, int n) {
  __shared__ int tile[64];
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  tile[threadIdx.x] = i < n ? in[i] : 0;
  __syncthreads();
  int v = tile[(threadIdx.x + 1) % blockDim.x];
  v += __nvvm_shfl_sync_down_i32(0xffffffffu, v, 1, 31);
  unsigned ballot = __nvvm_vote_ballot_sync(0xffffffffu, v > 2);
  if (i < n) out[i] = mix(v, bias[i & 3]) + __builtin_popcount(ballot) + (v / (n - i));
}
