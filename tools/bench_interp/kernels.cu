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

// Short blocks: a load after a store in a loop (a block ends at each such
// pair), the pattern of a kernel that updates global memory in place.
__global__ void short_blocks(int* g, const int* factor, int iterations) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  for (int k = 0; k < iterations; ++k) g[i] += *factor;
}

// Shared memory, barriers and divergence: a bitonic sort of 1024 keys per
// 512-thread block.
__global__ void bitonic_shared(unsigned* keys) {
  __shared__ unsigned s[1024];
  unsigned* k = keys + blockIdx.x * 1024;
  s[threadIdx.x] = k[threadIdx.x];
  s[threadIdx.x + 512] = k[threadIdx.x + 512];
  for (unsigned size = 2; size <= 1024; size <<= 1) {
    unsigned dir = (threadIdx.x & (size / 2)) != 0;
    for (unsigned stride = size / 2; stride > 0; stride >>= 1) {
      __syncthreads();
      unsigned pos = 2 * threadIdx.x - (threadIdx.x & (stride - 1));
      unsigned a = s[pos], b = s[pos + stride];
      if ((a > b) != dir) {
        s[pos] = b;
        s[pos + stride] = a;
      }
    }
  }
  __syncthreads();
  k[threadIdx.x] = s[threadIdx.x];
  k[threadIdx.x + 512] = s[threadIdx.x + 512];
}

// Shared-memory atomics: a 64-bin histogram per block, merged into global.
__global__ void shared_histogram(const unsigned* in, unsigned* bins, int per_thread) {
  __shared__ unsigned h[64];
  if (threadIdx.x < 64) h[threadIdx.x] = 0;
  __syncthreads();
  const unsigned* p = in + (blockIdx.x * blockDim.x + threadIdx.x) * per_thread;
  for (int j = 0; j < per_thread; ++j) {
    unsigned v = p[j];
    atomicAdd(&h[v & 63], 1u);
    atomicAdd(&h[(v >> 6) & 63], 1u);
  }
  __syncthreads();
  if (threadIdx.x < 64) atomicAdd(&bins[threadIdx.x], h[threadIdx.x]);
}

// Warp shuffles: an inclusive scan of each warp, then of the warp totals.
__global__ void warp_scan(const unsigned* in, unsigned* out) {
  __shared__ unsigned totals[32];
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x, lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  unsigned v = in[i];
  for (int o = 1; o < 32; o <<= 1) {
    unsigned n = __shfl_up_sync(0xffffffffu, v, o);
    if (lane >= o) v += n;
  }
  if (lane == 31) totals[warp] = v;
  __syncthreads();
  if (warp == 0) {
    unsigned t = lane < blockDim.x / 32 ? totals[lane] : 0;
    for (int o = 1; o < 32; o <<= 1) {
      unsigned n = __shfl_up_sync(0xffffffffu, t, o);
      if (lane >= o) t += n;
    }
    totals[lane] = t;
  }
  __syncthreads();
  out[i] = v + (warp ? totals[warp - 1] : 0);
}

// Floating point: a 16x16 shared-memory tile product per block (matrixMul's
// loop: f32 fma from shared memory), then a comparison, a conversion and a
// division on the result.
__global__ void float_tile(const float* a, const float* b, float* c, int tiles) {
  __shared__ float as[16][16], bs[16][16];
  const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
  float acc = 0.0f;
  for (int t = 0; t < tiles; ++t) {
    as[ty][tx] = a[(blockIdx.x * tiles + t) * 256 + threadIdx.x];
    bs[ty][tx] = b[t * 256 + threadIdx.x];
    __syncthreads();
    for (int k = 0; k < 16; ++k) acc += as[ty][k] * bs[k][tx];
    __syncthreads();
  }
  const int q = int(acc * 0.25f);
  c[blockIdx.x * 256 + threadIdx.x] = acc > 1000.0f ? float(q) / acc : acc;
}
