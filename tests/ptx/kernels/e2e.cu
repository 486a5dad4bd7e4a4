// Integer kernels for the PTX front end and the PTX interpreter tests: each
// is run on the interpreter and checked against a CPU computation in
// tests/ptx/interp_e2e_test.cpp.
#include <cassert>
#include <cstdio>

struct Pair {
  int a;
  long long b;
  char c;
};

__constant__ int ctab[8];
__device__ int gcounter;
__device__ int gtable[4] = {10, 20, 30, 40};

extern "C" __global__ void vec_add(const int* a, const int* b, int* c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}

extern "C" __global__ void block_reduce(const int* in, int* out) {
  __shared__ int s[128];
  unsigned t = threadIdx.x;
  s[t] = in[blockIdx.x * blockDim.x + t];
  __syncthreads();
  for (unsigned stride = blockDim.x / 2; stride > 0; stride >>= 1) {
    if (t < stride) s[t] += s[t + stride];
    __syncthreads();
  }
  if (t == 0) out[blockIdx.x] = s[0];
}

extern "C" __global__ void warp_ops(const int* in, int* out, int* total) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int v = in[i];
  int sum = v;
  for (int o = 16; o > 0; o >>= 1) sum += __shfl_down_sync(0xffffffffu, sum, o);
  int bcast = __shfl_sync(0xffffffffu, v, 3);
  int up = __shfl_up_sync(0xffffffffu, v, 1);
  int x = __shfl_xor_sync(0xffffffffu, v, 5);
  int seg = __shfl_down_sync(0xffffffffu, v, 2, 8);
  out[i * 5 + 0] = sum;
  out[i * 5 + 1] = bcast;
  out[i * 5 + 2] = up;
  out[i * 5 + 3] = x;
  out[i * 5 + 4] = seg;
  if ((threadIdx.x & 31) == 0) atomicAdd(total, sum);
}

extern "C" __global__ void votes(const int* in, unsigned* out) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int v = in[i];
  unsigned ballot = __ballot_sync(0xffffffffu, v > 0);
  out[i * 6 + 0] = ballot;
  out[i * 6 + 1] = __any_sync(0xffffffffu, v > 100);
  out[i * 6 + 2] = __all_sync(0xffffffffu, v > -100);
  out[i * 6 + 3] = __popc(ballot);
  out[i * 6 + 4] = __match_any_sync(0xffffffffu, v & 3);
  unsigned active = 0;
  if (v & 1) active = __activemask();
  out[i * 6 + 5] = active;
}

extern "C" __global__ void histogram(const unsigned char* data, int n, unsigned* bins) {
  __shared__ unsigned local[16];
  if (threadIdx.x < 16) local[threadIdx.x] = 0;
  __syncthreads();
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    atomicAdd(&local[data[i] & 15], 1u);
  __syncthreads();
  if (threadIdx.x < 16) atomicAdd(&bins[threadIdx.x], local[threadIdx.x]);
}

extern "C" __global__ void atomics(int* g, unsigned* u) {
  __shared__ int smax;
  if (threadIdx.x == 0) smax = -1000;
  __syncthreads();
  int t = threadIdx.x;
  atomicMax(&g[0], t * 7 % 23);
  atomicMin(&g[1], 50 - t);
  atomicAnd(&g[2], ~(1 << (t % 31)));
  atomicOr(&g[3], 1 << (t % 31));
  atomicXor(&g[4], t);
  atomicCAS(&g[5], t, t + 1);  // a chain: only the thread that sees its own id advances it
  atomicInc(&u[0], 10u);
  atomicDec(&u[1], 7u);
  atomicMax(&smax, (t * 13) % 37);
  atomicExch(&g[6], 99);
  __syncthreads();
  if (t == 0) g[7] = smax;
}

extern "C" __global__ void int64_math(const long long* a, const long long* b, long long* out) {
  int i = threadIdx.x;
  long long x = a[i], y = b[i];
  unsigned long long ux = x, uy = y;
  out[i * 8 + 0] = y ? x / y : 0;
  out[i * 8 + 1] = y ? x % y : 0;
  out[i * 8 + 2] = uy ? (long long)(ux / uy) : 0;
  out[i * 8 + 3] = uy ? (long long)(ux % uy) : 0;
  out[i * 8 + 4] = x * y;
  out[i * 8 + 5] = __mul64hi(x, y);
  out[i * 8 + 6] = (long long)__umul64hi(ux, uy);
  out[i * 8 + 7] = (x >> (y & 63)) ^ (long long)(ux << (uy & 63));
}

extern "C" __global__ void bits(const unsigned* a, const unsigned* b, unsigned* out) {
  int i = threadIdx.x;
  unsigned x = a[i], y = b[i];
  out[i * 10 + 0] = __popc(x);
  out[i * 10 + 1] = __clz(x);
  out[i * 10 + 2] = __brev(x);
  out[i * 10 + 3] = __byte_perm(x, y, 0x5140 + (y & 0x8));
  out[i * 10 + 4] = __funnelshift_l(x, y, y & 63);
  out[i * 10 + 5] = __funnelshift_rc(x, y, y & 63);
  out[i * 10 + 6] = __ffs(x);
  out[i * 10 + 7] = __umulhi(x, y);
  out[i * 10 + 8] = __sad((int)x, (int)y, 5u);
  out[i * 10 + 9] = __mul24((int)x, (int)y);
}

__device__ __noinline__ int collatz_steps(int n, int limit) {
  int steps = 0;
  while (n != 1) {
    if (steps >= limit) break;
    ++steps;
    if (n & 1) {
      n = 3 * n + 1;
      continue;
    }
    n >>= 1;
  }
  return steps;
}

extern "C" __global__ void calls(const int* in, int* out) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  out[i] = collatz_steps(in[i], 200);
}

extern "C" __global__ void params_and_globals(Pair p, int* out) {
  int t = threadIdx.x;
  out[t] = p.a + (int)p.b + p.c + ctab[t & 7] + gtable[t & 3];
  atomicAdd(&gcounter, 1);
}

extern "C" __global__ void dyn_smem(int* data) {
  extern __shared__ int buf[];
  unsigned t = threadIdx.x;
  buf[t] = data[blockIdx.x * blockDim.x + t];
  __syncthreads();
  data[blockIdx.x * blockDim.x + t] = buf[blockDim.x - 1 - t];
}

extern "C" __global__ void grid2d(int* out, int width) {
  int x = blockIdx.x * blockDim.x + threadIdx.x;
  int y = blockIdx.y * blockDim.y + threadIdx.y;
  out[y * width + x] = x * 1000 + y + threadIdx.z;
}

extern "C" __global__ void sync_reductions(const int* in, int* out) {
  int v = in[threadIdx.x];
  int c = __syncthreads_count(v > 0);
  int a = __syncthreads_and(v > -5);
  int o = __syncthreads_or(v > 40);
  if (threadIdx.x == 0) {
    out[0] = c;
    out[1] = a;
    out[2] = o;
  }
}

extern "C" __global__ void say(int x) {
  printf("thread %d x=%u hex=%x ll=%lld s=%s c=%c %%\n", (int)threadIdx.x, x, x * 255, (long long)x << 33, "ok", 'A' + (int)threadIdx.x);
}

extern "C" __global__ void check(int x) {
  assert(x != (int)threadIdx.x);
}

extern "C" __global__ void scale(float* v, float f) {
  v[threadIdx.x] = v[threadIdx.x] * f;
}

struct Big {
  int v[64];
};

extern "C" __global__ void pick(Big b, int* out, int i) { out[threadIdx.x] = b.v[(i + threadIdx.x) & 63]; }
