// Kernels for bench_interp: each stresses one part of the interpreter.
#include <cstdint>

// ALU-bound: a hash chain per thread.
__global__ void alu_chain(const unsigned* in, unsigned* out, int rounds) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  unsigned h = in[i];
  for (int r = 0; r < rounds; ++r) {
    h ^= h << 13;
    h ^= h >> 17;
    h ^= h << 5;
    h = h * 2654435761u + r;
  }
  out[i] = h;
}

// Shared memory and barriers: a tree reduction per 1024-thread block.
__global__ void block_reduce(const int* in, int* out) {
  __shared__ int s[1024];
  unsigned t = threadIdx.x;
  s[t] = in[blockIdx.x * blockDim.x + t];
  __syncthreads();
  for (unsigned stride = blockDim.x / 2; stride > 0; stride /= 2) {
    if (t < stride) s[t] += s[t + stride];
    __syncthreads();
  }
  if (t == 0) out[blockIdx.x] = s[0];
}

// Many small CTAs: one element each, the CTA start-up cost.
__global__ void tiny_ctas(const int* in, int* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = in[i] * 3 + 1;
}

// Divergence: each thread runs its own Collatz sequence.
__global__ void collatz(const unsigned* in, unsigned* out) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  unsigned x = in[i], steps = 0;
  while (x != 1 && steps < 1000) {
    x = (x & 1) ? 3 * x + 1 : x / 2;
    ++steps;
  }
  out[i] = steps;
}

// Memory-bound: a grid-stride copy with a little arithmetic.
__global__ void stride_copy(const int* in, int* out, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) out[i] = in[i] + i;
}
