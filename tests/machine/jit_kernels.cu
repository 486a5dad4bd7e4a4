// Kernels the JIT test runs with and without the block compiler
// (jit_test.cpp): each takes (in, out, n) and touches out[0 .. 4 n).
#include <cstdio>

// A chain of integer ALU operations of every kind.
__global__ void alu_mix(const unsigned* in, unsigned* out, int n) {
  unsigned t = blockIdx.x * blockDim.x + threadIdx.x;
  unsigned a = in[t % n], b = in[(t * 7 + 3) % n];
  unsigned s = b & 63;
  unsigned r = a * b + (a ^ (b << (s & 31))) - (a >> (s & 7));
  r ^= __umulhi(a, b) + (unsigned)__mulhi((int)a, (int)b);
  r += (int)a >> (s & 31);
  r += __popc(a) + __clz(b) + __brev(a ^ b);
  r += min((int)a, (int)b) + max((int)a, (int)b) + min(a, b) + max(a, b);
  r += ((int)a < (int)b) + (a <= b) + (a == b) + (a != r);
  r = (a & 1) ? r : r * 3;
  out[t] = r;
}

// Divergent branches, loops of lane-dependent length, partial masks.
__global__ void diverge(const unsigned* in, unsigned* out, int n) {
  unsigned t = blockIdx.x * blockDim.x + threadIdx.x;
  unsigned v = in[t % n];
  unsigned r = 0;
  if (threadIdx.x & 1) {
    for (unsigned i = 0; i < (v & 31); ++i) r = r * 31 + (i ^ v);
  } else if (threadIdx.x % 3 == 0) {
    while (v > 1 && r < 100) {
      v = (v & 1) ? 3 * v + 1 : v / 2;
      ++r;
    }
  } else {
    r = v % 7 == 0 ? v / 7 : v * 5;
  }
  out[t] = r;
}

// Shared memory, barriers, narrow loads and stores, local arrays.
__global__ void memory_mix(const unsigned* in, unsigned* out, int n) {
  __shared__ unsigned s[256];
  __shared__ unsigned char c[256];
  unsigned t = threadIdx.x, g = blockIdx.x * blockDim.x + t;
  s[t] = in[g % n];
  c[t] = (unsigned char)(in[(g + 1) % n] >> 3);
  __syncthreads();
  unsigned local[8];
  for (int i = 0; i < 8; ++i) local[i] = s[(t + i * 5) % blockDim.x] + c[(t * 3 + i) % blockDim.x];
  unsigned acc = 0;
  for (int i = 0; i < 8; ++i) acc += local[(i + t) & 7] * (i + 1);
  for (int k = blockDim.x / 2; k > 0; k >>= 1) {
    if (t < k) s[t] += s[t + k];
    __syncthreads();
  }
  out[g] = acc + s[0];
  ((unsigned short*)(out + 2 * n))[g] = (unsigned short)(acc * 3);
  ((signed char*)(out + 3 * n))[g] = (signed char)(acc - 100);
}

// Atomics, float arithmetic and printf.
__global__ void atomics_floats(const unsigned* in, unsigned* out, int n) {
  unsigned t = blockIdx.x * blockDim.x + threadIdx.x;
  unsigned v = in[t % n];
  __shared__ unsigned sh[2];
  if (threadIdx.x < 2) sh[threadIdx.x] = 0;
  __syncthreads();
  atomicAdd(&sh[0], v);
  atomicMax(&sh[1], v);
  unsigned old = atomicAdd(&out[n], 1u);
  float f = (float)(v & 0xffff) / 7.0f;
  f = sqrtf(f) * 1.5f + __fdividef(f, 3.0f);
  double d = (double)v * 0.3 + (double)f;
  out[t] = __float_as_uint(f) ^ (unsigned)(long long)d ^ old * 0;
  __syncthreads();
  if (threadIdx.x == 0) {
    atomicAdd(&out[n + 1], sh[0]);
    atomicMax(&out[n + 2], sh[1]);
    if (blockIdx.x == 0) printf("block %d sum %u\n", blockIdx.x, sh[0]);
  }
}

// Faults: an out-of-range load by one lane, a misaligned store by one lane.
__global__ void bad_load(const unsigned* in, unsigned* out, int n) {
  unsigned t = blockIdx.x * blockDim.x + threadIdx.x;
  out[t] = t + 1;
  unsigned i = t == 37 ? 0x20000000u : t % n;
  out[t] += in[i];
}
__global__ void bad_store(const unsigned* in, unsigned* out, int n) {
  unsigned t = blockIdx.x * blockDim.x + threadIdx.x;
  unsigned v = in[t % n] * 3;
  out[t] = v;
  char* p = (char*)(out + n + t) + (t == 45 ? 2 : 0);
  *(unsigned*)p = v;
}

// Every atomic operation on global and shared memory, many lanes on one
// word (each lane sees the ones before it) and lanes apart, under full and
// partial masks; the old values are stored.
__global__ void atomics_all(const unsigned* in, unsigned* out, int n) {
  __shared__ unsigned sh[64];
  const int t = threadIdx.x, i = blockIdx.x * blockDim.x + t;
  const unsigned v = in[i % n];
  if (t < 64) sh[t] = v * 3u;
  __syncthreads();
  unsigned* g = out + 2 * n;  // 64 words of contention
  unsigned acc = 0;
  const int w = t % 7;  // the word: seven lanes share each
  if (v % 3 != 0) {  // a partial mask
    acc += atomicAdd(&g[w], v);
    acc ^= atomicAdd(&sh[w], v);
  }
  acc += atomicMin(reinterpret_cast<int*>(&g[8 + w]), int(v) - 500);
  acc += atomicMax(reinterpret_cast<int*>(&sh[8 + w]), int(v) - 500);
  acc ^= atomicMin(&g[16 + w], v);
  acc ^= atomicMax(&sh[16 + w], v);
  acc += atomicExch(&g[24 + w], v);
  acc += atomicExch(&sh[24 + w], v + 1);
  acc ^= atomicCAS(&g[32 + w], v % 4, v);
  acc ^= atomicCAS(&sh[32 + w], sh[32 + w], v);
  acc += atomicAnd(&g[40 + w], ~v) + atomicOr(&g[48 + w], v) + atomicXor(&g[56 + w], v);
  acc += atomicAnd(&sh[40 + w], ~v) + atomicOr(&sh[48 + w], v) + atomicXor(&sh[56 + w], v);
  if (t & 1) {
    acc += atomicInc(&g[4 * w + 1], 5u + w);
    acc += atomicDec(&sh[4 * w + 1], 3u + w);
  } else {
    acc += atomicInc(&sh[4 * w + 2], v % 9);
    acc += atomicDec(&g[4 * w + 2], v % 7);
  }
  __syncthreads();
  out[i] = acc;
  if (t < 64) out[n + blockIdx.x * 64 + t] = sh[t];
}

// CTAs that meet in global memory: atomics from every CTA, and the CTA that
// takes the last ticket (after a fence) sums what every CTA wrote.  Its
// result is the same in any order the CTAs run, one at a time or at once.
__global__ void ctas_meet(const unsigned* in, unsigned* out, int n) {
  const unsigned t = threadIdx.x, i = blockIdx.x * blockDim.x + t;
  const unsigned v = in[i % n];
  unsigned* partial = out + 16;  // one word per CTA
  __shared__ unsigned sum;
  __shared__ bool last;
  if (t == 0) sum = 0;
  __syncthreads();
  atomicAdd(&out[0], 1u);
  atomicAdd(&out[1 + blockIdx.x % 4], v);
  atomicMax(&out[5], v);
  atomicOr(&out[6], 1u << (v % 32));
  atomicAdd(&sum, v);
  __syncthreads();
  if (t == 0) {
    partial[blockIdx.x] = sum;
    __threadfence();
    last = atomicAdd(&out[7], 1u) == gridDim.x - 1;
  }
  __syncthreads();
  if (last && t == 0) {
    unsigned total = 0;
    for (unsigned b = 0; b < gridDim.x; ++b) total += ((volatile unsigned*)partial)[b];
    out[8] = total;
  }
}

// A long loop in every thread, for the step limit and the cancel flag.
__global__ void long_loop(const unsigned* in, unsigned* out, int n) {
  const unsigned t = blockIdx.x * blockDim.x + threadIdx.x;
  unsigned v = in[t % n];
  for (int i = 0; i < 20000; ++i) v = v * 1664525u + (v >> 7);
  out[t] = v;
}

// 64-bit and float atomics (64-bit cas and max, f32 and f64 adds): native
// atomics on the CUDA-sized device, sequences of accesses atomic only while
// CTAs run one at a time elsewhere.  Every CTA adds to the same words.  The float values are small integers, so every order of
// the adds gives the same sums.
__global__ void atomics_wide(const unsigned* in, unsigned* out, int n) {
  const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  const unsigned v = in[i % n] % 1000;
  unsigned long long* w = reinterpret_cast<unsigned long long*>(out);
  unsigned long long old = w[0], assumed;
  do {  // a 64-bit counter by compare-and-swap
    assumed = old;
    old = atomicCAS(&w[0], assumed, assumed + 0x100000001ull);
  } while (old != assumed);
  atomicMax(&w[1], (unsigned long long)v << 33);
  atomicAdd(reinterpret_cast<float*>(&out[4]), float(v));
  atomicAdd(reinterpret_cast<double*>(&w[3]), double(v));
}
