// Kernels for the lowering tests: each runs on the machine interpreter and on
// the PTX-level interpreter, which must agree on every output byte.
#include <cassert>
#include <cstdint>
#include <cstdio>

#define N_VALUES 16
__device__ const int kEdge[N_VALUES] = {0, 1, -1, 2, -2, 7, -7, 31, 32, 33, 0x7fffffff, (int)0x80000000,
                                        0x12345678, (int)0xdeadbeef, 255, -256};

// out[i*N + j]: one operation on every pair of edge values.  blockDim = N*N / grid.
__global__ void arith32(int op, int* out) {
  int t = blockIdx.x * blockDim.x + threadIdx.x;
  int a = kEdge[t / N_VALUES], b = kEdge[t % N_VALUES];
  unsigned ua = a, ub = b;
  int r = 0;
  switch (op) {
    case 0: r = a + b; break;
    case 1: r = a - b; break;
    case 2: r = a * b; break;
    case 3: r = __mulhi(a, b); break;
    case 4: r = __umulhi(ua, ub); break;
    case 5: r = b ? a / b : 0; break;
    case 6: r = b ? a % b : 0; break;
    case 7: r = ub ? ua / ub : 0; break;
    case 8: r = ub ? ua % ub : 0; break;
    case 9: r = a << (b & 63); break;
    case 10: r = a >> (b & 31); break;
    case 11: r = ua >> (ub & 31); break;
    case 12: r = (a < b) | ((a <= b) << 1) | ((ua < ub) << 2) | ((ua <= ub) << 3) | ((a == b) << 4) | ((a != b) << 5); break;
    case 13: r = min(a, b) ^ max(a, b) ^ (int)min(ua, ub) ^ (int)max(ua, ub) * 3; break;
    case 14: r = __popc(a) | (__clz(b) << 8) | (__ffs(a) << 16); break;
    case 15: r = __brev(a) ^ b; break;
    case 16: r = __byte_perm(a, b, 0x5140) ^ __byte_perm(a, b, 0x7632); break;
    case 17: r = __funnelshift_l(a, b, 13) ^ __funnelshift_r(a, b, 45) ^ __funnelshift_lc(a, b, ub); break;
    case 18: r = abs(a) + (~a & b) + (a | b) - (a ^ b); break;
    case 19: r = (a > 0 ? a : b) * 2 + (ua > ub ? 1 : 0); break;
    case 20: r = a / b; break;  // unguarded: division by zero included
    case 21: r = a % b; break;
    case 22: r = ua / ub; break;
    case 23: r = ua % ub; break;
  }
  out[t] = r;
}

__global__ void arith64(int op, long long* out) {
  int t = blockIdx.x * blockDim.x + threadIdx.x;
  long long a = (long long)kEdge[t / N_VALUES] * 0x100000001LL + kEdge[(t + 5) % N_VALUES];
  long long b = (long long)kEdge[t % N_VALUES] * 0x10003LL - kEdge[(t + 3) % N_VALUES];
  unsigned long long ua = a, ub = b;
  long long r = 0;
  switch (op) {
    case 0: r = a + b; break;
    case 1: r = a - b; break;
    case 2: r = a * b; break;
    case 3: r = __mul64hi(a, b); break;
    case 4: r = __umul64hi(ua, ub); break;
    case 5: r = b ? a / b : 0; break;
    case 6: r = b ? a % b : 0; break;
    case 7: r = ub ? ua / ub : 0; break;
    case 8: r = ub ? ua % ub : 0; break;
    case 9: r = a << (b & 63); break;
    case 10: r = a >> (b & 63); break;
    case 11: r = ua >> (ub & 63); break;
    case 12: r = (a < b) | ((a <= b) << 1) | ((ua < ub) << 2) | ((ua <= ub) << 3) | ((a == b) << 4); break;
    case 13: r = min(a, b) ^ max(a, b) ^ (long long)min(ua, ub); break;
    case 14: r = __popcll(a) | (__clzll(b) << 8); break;
    case 15: r = __brevll(a) ^ b; break;
    case 16: r = (long long)(int)a * (long long)(int)b + (long long)((unsigned long long)(unsigned)a * (unsigned)b); break;
    case 17: r = a / (b & 0xff00000000LL); break;  // unguarded: division by zero included
    case 18: r = a % (b & 0xff00000000LL); break;
    case 19: r = ua / (ub & 0xff00000000ULL); break;
  }
  out[t] = r;
}

// Quotients and remainders of operand pairs of every bit length, unsigned and
// signed, 32- and 64-bit (zero divisors included: docs/isa.md gives them).
__global__ void divide_pairs(const unsigned long long* a, const unsigned long long* b, unsigned long long* out) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  unsigned long long x = a[i], y = b[i];
  unsigned ux = (unsigned)x, uy = (unsigned)y;
  long long sx = (long long)x, sy = (long long)y;
  unsigned long long* o = out + 8 * i;
  o[0] = ux / uy;
  o[1] = ux % uy;
  o[2] = (unsigned)((int)ux / (int)uy);
  o[3] = (unsigned)((int)ux % (int)uy);
  o[4] = x / y;
  o[5] = x % y;
  o[6] = (unsigned long long)(sx / sy);
  o[7] = (unsigned long long)(sx % sy);
}

// A chain of 64-bit products reduced modulo divisors below 2^32 that change
// from step to step or stay (the reciprocal of the 64-by-32 path is kept per
// thread and computed again only for a new divisor), in a loop.
__global__ void modular_chain(const unsigned long long* a, const unsigned* m, unsigned long long* out) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  unsigned long long acc = a[i], q = 0;
#pragma unroll 1
  for (int j = 0; j < 12; ++j) {
    unsigned d = m[(i + j / 3) % 8];
    unsigned long long x = acc * (a[(i + j) % 16] | 1) + j;
    q ^= (x ^ q) / d;
    acc = x % d;
  }
  out[2 * i] = acc;
  out[2 * i + 1] = q;
}

// 64-bit remainders alone (nvcc computes a remainder beside a quotient from
// the quotient): rem.u64 and rem.s64.
__global__ void remainder_pairs(const unsigned long long* a, const unsigned long long* b, unsigned long long* out) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  out[2 * i] = a[i] % b[i];
  out[2 * i + 1] = (unsigned long long)((long long)a[i] % (long long)b[i]);
}

// Small types: char and short arithmetic, sign and zero extension.
__global__ void small_types(const signed char* c, const short* s, const unsigned char* uc, int* out) {
  int t = threadIdx.x;
  signed char x = c[t] * 3 + 1;
  short y = s[t] * s[(t + 1) % blockDim.x];
  unsigned char z = uc[t] + uc[(t + 7) % blockDim.x];
  out[t] = x + y * 7 + z + (s[t] >> 3) + ((unsigned short)s[t] >> 3);
}

// Narrow accesses at every byte offset of a word, where the offset is known
// (shared arrays indexed by a loop counter, stores at 4t + j) and where it
// is not (indices from the thread), with signed and unsigned comparisons of
// narrow values (setp, and set, which compares its source type).
__global__ void narrow_scan(const short* s, const signed char* c, int* out) {
  __shared__ short ss[64];
  __shared__ signed char sc[64];
  __shared__ unsigned char uc[64];
  __shared__ signed char packed[256];
  int t = threadIdx.x;
  ss[t] = s[t];
  sc[t] = c[t];
  uc[t] = (unsigned char)c[(t * 5) % 64];
  __syncthreads();
  short v = ss[t];
  signed char w = sc[t];
  int below = 0, equal = 0, cmix = 0, ubelow = 0, sum = 0;
  for (int j = 0; j < 64; ++j) {
    below += ss[j] < v;
    equal += ss[j] == v || ss[j] >= (short)(v + 3);
    cmix += sc[j] <= w || sc[j] > (signed char)(w ^ 0x40);
    ubelow += uc[j] < (unsigned char)w;
    sum += ss[(j + t) % 64] * (j + 1) + sc[(j * 3 + t) % 64];
  }
  for (int j = 0; j < 4; ++j) packed[4 * t + j] = (signed char)(below * 4 + j - 100);
  __syncthreads();
  unsigned below_next;
  asm("set.lt.u32.s16 %0, %1, %2;" : "=r"(below_next) : "h"(v), "h"(ss[(t + 5) % 64]));
  int* o = out + 7 * t;
  o[0] = below;
  o[1] = equal;
  o[2] = cmix;
  o[3] = ubelow;
  o[4] = sum;
  o[5] = packed[(4 * t + 7) % 256] * 1000 + packed[4 * ((t + 1) % 64) + 1];
  o[6] = (int)below_next;
}

// Divergence: nested lane-dependent branches and data-dependent loops.
__device__ __noinline__ int collatz_steps(unsigned v) {
  int n = 0;
  while (v > 1 && n < 200) {
    v = (v & 1) ? 3 * v + 1 : v / 2;
    ++n;
  }
  return n;
}
__global__ void divergence(const int* in, int* out) {
  int t = blockIdx.x * blockDim.x + threadIdx.x;
  int v = in[t];
  int r = 0;
  if (t & 1) {
    if (v % 3 == 0) r = collatz_steps(v);
    else r = -v;
  } else {
    for (int i = 0; i < (v & 15); ++i) {
      if (i == 7) continue;
      if (i * v > 1000) break;
      r += i * v;
    }
  }
  switch (v & 3) {
    case 0: r += 100; break;
    case 1: r *= 2; break;
    case 2: r -= 5; break;
    default: break;
  }
  out[t] = r;
}

// Shared memory and barriers: tree reduction, then a reversal.
__global__ void shared_reduce(const int* in, int* out) {
  __shared__ int s[256];
  int t = threadIdx.x;
  s[t] = in[blockIdx.x * blockDim.x + t];
  __syncthreads();
  for (int k = blockDim.x / 2; k > 0; k >>= 1) {
    if (t < k) s[t] += s[t + k];
    __syncthreads();
  }
  int total = s[0];
  __syncthreads();
  s[blockDim.x - 1 - t] = in[blockIdx.x * blockDim.x + t] + total;
  __syncthreads();
  out[blockIdx.x * blockDim.x + t] = s[t];
}

// Atomics on global and shared memory.
__global__ void atomics(const int* in, int* out) {
  __shared__ int sh[4];
  int t = threadIdx.x;
  if (t < 4) sh[t] = t == 1 ? 0x7fffffff : 0;
  __syncthreads();
  int v = in[blockIdx.x * blockDim.x + t];
  atomicAdd(&sh[0], v);
  atomicMin(&sh[1], v);
  atomicMax(&sh[2], v);
  atomicOr(&sh[3], 1 << (t & 31));
  int old = atomicAdd(&out[0], 1);
  atomicMax(&out[1], old);
  atomicXor(&out[2], v);
  atomicAnd(&out[3], ~(1 << (t & 31)));
  atomicCAS(&out[4], t, t + 1);
  atomicExch(&out[5], t);
  atomicInc((unsigned*)&out[6], 5);
  atomicDec((unsigned*)&out[7], 3);
  atomicMin((unsigned*)&out[8], (unsigned)v);
  __syncthreads();
  if (t == 0) {
    atomicAdd(&out[9], sh[0]);
    atomicAdd(&out[10], sh[1]);
    atomicAdd(&out[11], sh[2]);
    atomicAdd(&out[12], sh[3]);
  }
}

// Warp operations: shuffles of every mode and width, votes, ballots.
__global__ void warp_ops(const int* in, int* out) {
  int t = blockIdx.x * blockDim.x + threadIdx.x;
  int v = in[t];
  int lane = threadIdx.x & 31;
  int s = v;
  for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffff, s, o);
  int up = __shfl_up_sync(0xffffffff, v, 3);
  int down = __shfl_down_sync(0xffffffff, v, 5, 16);
  int idx = __shfl_sync(0xffffffff, v, (lane * 7) & 31, 8);
  unsigned ballot = __ballot_sync(0xffffffff, v & 1);
  int any = __any_sync(0xffffffff, v > 40);
  int all = __all_sync(0xffffffff, v >= 0);
  int scan = v;
  for (int o = 1; o < 32; o <<= 1) {
    int n = __shfl_up_sync(0xffffffff, scan, o);
    if (lane >= o) scan += n;
  }
  out[t * 8 + 0] = s;
  out[t * 8 + 1] = up;
  out[t * 8 + 2] = down;
  out[t * 8 + 3] = idx;
  out[t * 8 + 4] = ballot;
  out[t * 8 + 5] = any | (all << 1);
  out[t * 8 + 6] = scan;
  out[t * 8 + 7] = __activemask();
}

// __syncthreads_count/and/or and __syncwarp.
__global__ void block_votes(const int* in, int* out) {
  int t = threadIdx.x;
  int v = in[t];
  int c = __syncthreads_count(v & 1);
  int a = __syncthreads_and(v >= 0);
  int o = __syncthreads_or(v > 90);
  int c2 = __syncthreads_count(v > 10);
  out[t] = c | (a << 10) | (o << 11) | (c2 << 12);
}

// 2D and 3D indexing.
__global__ void grid3d(int* out, int pitch) {
  int x = blockIdx.x * blockDim.x + threadIdx.x;
  int y = blockIdx.y * blockDim.y + threadIdx.y;
  int z = blockIdx.z * blockDim.z + threadIdx.z;
  int w = gridDim.x * blockDim.x, h = gridDim.y * blockDim.y;
  out[(z * h + y) * w + x] = x + 100 * y + 10000 * z + pitch * (threadIdx.x + blockDim.x * threadIdx.y);
}

// Many and struct parameters, device functions with 64-bit arguments.
struct Pair {
  char tag;
  long long big;
  short s[3];
};
__device__ __noinline__ long long combine(long long a, int b, Pair p) { return a * b + p.big - p.s[1] + p.tag; }
__global__ void params(Pair p, int a0, char a1, long long a2, short a3, unsigned a4, long long* out) {
  int t = threadIdx.x;
  out[t] = combine(a2 + t, a0 * a1 + a3, p) + a4;
}

// Local arrays (indexed dynamically) and many live values: register pressure and spills.
__global__ void pressure(const int* in, int* out) {
  int t = threadIdx.x;
  int local[24];
  for (int i = 0; i < 24; ++i) local[i] = in[(t + i) % blockDim.x] * (i + 1);
  int acc = 0;
  for (int i = 0; i < 24; ++i) acc += local[(i * 5 + t) % 24] ^ local[i];
  int a = in[t], b = a * 3, c = b ^ 5, d = c + a, e = d * d, f = e - b, g = f ^ c, h = g + e;
  int i2 = h * a, j = i2 - g, k = j ^ f, l = k + d, m = l * c, n = m - b, o = n ^ a, p = o + i2;
  out[t] = acc + a + b + c + d + e + f + g + h + i2 + j + k + l + m + n + o + p + a * p + b * o + c * n + d * m + e * l;
}

// Device printf.
__global__ void print(const int* in) {
  int t = threadIdx.x;
  if (t % 3 == 0) printf("thread %d value %d hex %x big %lld\n", t, in[t], in[t], (long long)in[t] << 33);
}

// 64-bit atomics and match.any.
__global__ void atomics64(const long long* in, unsigned long long* out) {
  int t = threadIdx.x;
  long long v = in[t];
  unsigned long long old = atomicAdd(&out[0], (unsigned long long)v);
  atomicMin((long long*)&out[1], v);
  atomicMax((long long*)&out[2], v);
  atomicMin(&out[3], (unsigned long long)v);
  atomicAnd(&out[4], (unsigned long long)v | 0xF0F0F0F00000000FULL);
  atomicOr(&out[5], (unsigned long long)v << (t & 7));
  atomicXor(&out[6], (unsigned long long)v);
  atomicCAS(&out[7], (unsigned long long)t, (unsigned long long)t + 0x100000001ULL);
  out[8 + t] = old + atomicExch(&out[8 + blockDim.x], (unsigned long long)t);
}

__global__ void match_any(const int* in, unsigned* out) {
  int t = threadIdx.x;
  out[t] = __match_any_sync(0xffffffff, in[t] % 5);
}

// Warp operations in divergent code: the converged threads take part.
__global__ void divergent_warp_ops(const int* in, unsigned* out) {
  int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
  int v = in[threadIdx.x];
  unsigned* o = out + w * 8;
  o[0] = __activemask();
  if (lane % 3 == 0) {
    unsigned m = __activemask();
    unsigned big = __ballot_sync(m, v > 10);
    if (lane == 0) {
      o[1] = m;
      o[2] = big;
    }
  } else if (lane < 20) {
    unsigned m = __activemask();
    if (lane == __ffs(m) - 1) o[3] = m;
    if (v & 1) {
      unsigned odd = __activemask();
      if (lane == __ffs(odd) - 1) o[4] = odd;
    }
  } else {
    unsigned m = __activemask();
    int count = __popc(__ballot_sync(m, true));
    if (lane == __ffs(m) - 1) {
      o[5] = m;
      o[6] = count;
    }
  }
  if (lane < 4) {
    int total = v;
    for (int offset = 1; offset < 4; offset *= 2) {
      int up = __shfl_up_sync(0xfu, total, offset, 4);
      if (lane >= offset) total += up;
    }
    if (lane == 3) o[7] = total;
  }
}

// Generic pointers into global, shared and local memory, through non-inlined
// device functions.
__device__ __noinline__ void bump(int* p, int v) {
  atomicAdd(p, v);
  p[1] += v;
}
__device__ __noinline__ int sum3(const int* p) { return p[0] + p[1] * 2 + p[2] * 3; }
__global__ void generic_pointers(const int* in, int* out) {
  __shared__ int sh[2 * 64];
  int local[4];
  int t = threadIdx.x;
  sh[2 * t] = 0;
  sh[2 * t + 1] = t;
  for (int i = 0; i < 4; ++i) local[i] = in[(t + i) % blockDim.x] + i;
  __syncthreads();
  bump((t & 1) ? &sh[2 * t] : &out[2 * t], in[t]);
  __syncthreads();  // sum3 reads the slots other threads' bump wrote
  int s = sum3(local + (t & 1)) + sum3(&sh[2 * (t % 63)]) + sum3(in + (t % 60));
  __syncthreads();
  out[128 + t] = sh[2 * t] + sh[2 * t + 1] + s;
}

// A device assertion that fails in one thread of the second block.
__global__ void check_assert(const int* in) { assert(in[blockIdx.x * blockDim.x + threadIdx.x] < 50); }

// Device new/delete and virtual calls: objects of two classes made with new,
// a virtual method called through the virtual table, an array made with
// new[]; both deleted (the virtual destructor is an indirect call too).
struct Shape {
  __device__ virtual int area(int s) const = 0;
  __device__ virtual ~Shape() {}
};
struct Square : Shape {
  __device__ int area(int s) const override { return s * s; }
};
struct Tri : Shape {
  int k;
  __device__ explicit Tri(int k) : k(k) {}
  __device__ int area(int s) const override { return s * s / 2 + k; }
};
__global__ void virtual_new_delete(const int* in, int* out) {
  int t = blockIdx.x * blockDim.x + threadIdx.x;
  Shape* s = (t & 1) ? static_cast<Shape*>(new Square()) : static_cast<Shape*>(new Tri(t));
  int* buf = new int[4];
  for (int i = 0; i < 4; ++i) buf[i] = in[t] + i;
  out[2 * t] = s ? s->area(in[t]) : -1;
  out[2 * t + 1] = buf ? buf[0] + buf[3] : -1;
  delete s;
  delete[] buf;
}

// Floating-point atomics (atom/red .add on f32, f64, f16, f16x2; global,
// shared and generic): each thread adds once to each cell, so every
// interpreter adds in thread order, CTA by CTA.  Outputs: out (f32 cells),
// dout (f64 cells), hout (f16 cell at hout[0]'s low half, f16x2 cell at
// hout[1]), fold/dold/hold the old values returned.
__global__ void float_atomics(const float* f, const double* d, const unsigned* h, float* out, double* dout,
                              unsigned* hout, float* fold, double* dold, unsigned* hold) {
  __shared__ float sf[2];
  __shared__ double sd;
  int t = threadIdx.x, n = gridDim.x * blockDim.x, g = blockIdx.x * blockDim.x + t;
  if (t == 0) sf[0] = sf[1] = 0.f, sd = 0.0;
  __syncthreads();
  fold[g] = atomicAdd(&out[0], f[g]);
  atomicAdd(&out[1 + (t & 1)], f[g]);
  dold[g] = atomicAdd(&dout[0], d[g]);
  atomicAdd(&dout[1], d[g]);
  fold[n + g] = atomicAdd(&sf[0], f[g]);
  dold[n + g] = atomicAdd(&sd, d[g]);
  float* p = (t & 2) ? &sf[1] : &out[3];  // generic: shared or global
  atomicAdd(p, f[g]);
  unsigned short ho;
  asm volatile("atom.global.add.noftz.f16 %0, [%1], %2;" : "=h"(ho) : "l"(hout), "h"((unsigned short)h[g]) : "memory");
  hold[g] = ho;
  asm volatile("red.global.add.noftz.f16x2 [%0], %1;" ::"l"(hout + 1), "r"(h[g]) : "memory");
  __syncthreads();
  if (t == 0) {
    out[4 + 2 * blockIdx.x] = sf[0];
    out[5 + 2 * blockIdx.x] = sf[1];
    dout[2 + blockIdx.x] = sd;
  }
}

// The float atomics the model's machine holds in its ROM: f32 and f64 adds.
__global__ void float_atomics_model(const float* f, const double* d, float* out, double* dout, float* fold) {
  int g = blockIdx.x * blockDim.x + threadIdx.x;
  fold[g] = atomicAdd(&out[0], f[g]);
  atomicAdd(&dout[0], d[g]);
}
