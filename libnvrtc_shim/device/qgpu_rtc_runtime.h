// The device runtime every NVRTC program sees, force-included before the
// user's source (as NVRTC does with its own built-in headers).  It is compiled
// into libnvrtc.so, so no CUDA headers are needed at run time.  Everything
// maps onto Clang's NVPTX builtins or plain PTX; nothing here depends on a
// host C library.
#pragma once

#define __CUDACC__ 1
#define __CUDACC_RTC__ 1
#define __CUDACC_VER_MAJOR__ 13
#define __CUDACC_VER_MINOR__ 0
#define __CUDACC_VER_BUILD__ 0

#define __host__ __attribute__((host))
#define __device__ __attribute__((device))
#define __global__ __attribute__((global))
#define __shared__ __attribute__((shared))
#define __constant__ __attribute__((constant))
#define __managed__ __attribute__((managed))
#define __launch_bounds__(...) __attribute__((launch_bounds(__VA_ARGS__)))
#define __forceinline__ __inline__ __attribute__((always_inline))
#define __align__(n) __attribute__((aligned(n)))
#define __restrict__ __restrict
#define __grid_constant__ __attribute__((grid_constant))
#define CUDART_INF_F __builtin_huge_valf()

#define __QGPU_FN static __device__ __inline__ __attribute__((always_inline))

typedef __SIZE_TYPE__ size_t;
typedef __PTRDIFF_TYPE__ ptrdiff_t;
#ifndef NULL
#define NULL nullptr
#endif

// ---------------------------------------------------------------- vector types
#define __QGPU_VEC(T, N, A)                                                   \
  struct __attribute__((aligned(A))) N##1 { T x; };                           \
  struct __attribute__((aligned(2 * A))) N##2 { T x, y; };                    \
  struct N##3 { T x, y, z; };                                                 \
  struct __attribute__((aligned(4 * A > 16 ? 16 : 4 * A))) N##4 { T x, y, z, w; }; \
  __QGPU_FN N##1 make_##N##1(T x) { return N##1{x}; }                         \
  __QGPU_FN N##2 make_##N##2(T x, T y) { return N##2{x, y}; }                 \
  __QGPU_FN N##3 make_##N##3(T x, T y, T z) { return N##3{x, y, z}; }         \
  __QGPU_FN N##4 make_##N##4(T x, T y, T z, T w) { return N##4{x, y, z, w}; }
__QGPU_VEC(signed char, char, 1)
__QGPU_VEC(unsigned char, uchar, 1)
__QGPU_VEC(short, short, 2)
__QGPU_VEC(unsigned short, ushort, 2)
__QGPU_VEC(int, int, 4)
__QGPU_VEC(unsigned int, uint, 4)
__QGPU_VEC(long, long, 8)
__QGPU_VEC(unsigned long, ulong, 8)
__QGPU_VEC(long long, longlong, 8)
__QGPU_VEC(unsigned long long, ulonglong, 8)
__QGPU_VEC(float, float, 4)
__QGPU_VEC(double, double, 8)
#undef __QGPU_VEC

struct dim3 {
  unsigned int x, y, z;
  __host__ __device__ constexpr dim3(unsigned int vx = 1, unsigned int vy = 1, unsigned int vz = 1)
      : x(vx), y(vy), z(vz) {}
  __host__ __device__ constexpr dim3(uint3 v) : x(v.x), y(v.y), z(v.z) {}
  __host__ __device__ constexpr operator uint3() const { return uint3{x, y, z}; }
};

// ------------------------------------------------------ built-in variables
// threadIdx.x and friends read PTX special registers through properties, so
// `threadIdx` itself occupies no storage.
#define __QGPU_SREG(Type, Reg)                                                            \
  struct Type {                                                                           \
    __declspec(property(get = __x)) unsigned int x;                                       \
    __declspec(property(get = __y)) unsigned int y;                                       \
    __declspec(property(get = __z)) unsigned int z;                                       \
    static __device__ __inline__ unsigned int __x() { return __nvvm_read_ptx_sreg_##Reg##_x(); } \
    static __device__ __inline__ unsigned int __y() { return __nvvm_read_ptx_sreg_##Reg##_y(); } \
    static __device__ __inline__ unsigned int __z() { return __nvvm_read_ptx_sreg_##Reg##_z(); } \
    __device__ operator uint3() const { return uint3{__x(), __y(), __z()}; }              \
    __device__ operator dim3() const { return dim3(__x(), __y(), __z()); }                \
  };
__QGPU_SREG(__qgpu_threadIdx_t, tid)
__QGPU_SREG(__qgpu_blockIdx_t, ctaid)
__QGPU_SREG(__qgpu_blockDim_t, ntid)
__QGPU_SREG(__qgpu_gridDim_t, nctaid)
#undef __QGPU_SREG
extern const __device__ __qgpu_threadIdx_t threadIdx;
extern const __device__ __qgpu_blockIdx_t blockIdx;
extern const __device__ __qgpu_blockDim_t blockDim;
extern const __device__ __qgpu_gridDim_t gridDim;
static constexpr int warpSize = 32;

// ------------------------------------------------------------ synchronization
// __syncthreads() is a Clang builtin.
__QGPU_FN int __syncthreads_count(int p) { return __nvvm_bar0_popc(p); }
__QGPU_FN int __syncthreads_and(int p) { return __nvvm_bar0_and(p); }
__QGPU_FN int __syncthreads_or(int p) { return __nvvm_bar0_or(p); }
__QGPU_FN void __syncwarp(unsigned int mask = 0xffffffffu) { __nvvm_bar_warp_sync(mask); }
__QGPU_FN void __threadfence_block() { __nvvm_membar_cta(); }
__QGPU_FN void __threadfence() { __nvvm_membar_gl(); }
__QGPU_FN void __threadfence_system() { __nvvm_membar_sys(); }

// ------------------------------------------------------------------- atomics
__QGPU_FN int atomicAdd(int* p, int v) { return __nvvm_atom_add_gen_i(p, v); }
__QGPU_FN unsigned int atomicAdd(unsigned int* p, unsigned int v) {
  return (unsigned int)__nvvm_atom_add_gen_i((int*)p, (int)v);
}
__QGPU_FN unsigned long long atomicAdd(unsigned long long* p, unsigned long long v) {
  return (unsigned long long)__nvvm_atom_add_gen_ll((long long*)p, (long long)v);
}
__QGPU_FN float atomicAdd(float* p, float v) { return __nvvm_atom_add_gen_f(p, v); }
__QGPU_FN double atomicAdd(double* p, double v) { return __nvvm_atom_add_gen_d(p, v); }
__QGPU_FN int atomicSub(int* p, int v) { return __nvvm_atom_add_gen_i(p, -v); }
__QGPU_FN unsigned int atomicSub(unsigned int* p, unsigned int v) {
  return (unsigned int)__nvvm_atom_add_gen_i((int*)p, -(int)v);
}
__QGPU_FN int atomicExch(int* p, int v) { return __nvvm_atom_xchg_gen_i(p, v); }
__QGPU_FN unsigned int atomicExch(unsigned int* p, unsigned int v) {
  return (unsigned int)__nvvm_atom_xchg_gen_i((int*)p, (int)v);
}
__QGPU_FN unsigned long long atomicExch(unsigned long long* p, unsigned long long v) {
  return (unsigned long long)__nvvm_atom_xchg_gen_ll((long long*)p, (long long)v);
}
__QGPU_FN float atomicExch(float* p, float v) {
  return __builtin_bit_cast(float, __nvvm_atom_xchg_gen_i((int*)p, __builtin_bit_cast(int, v)));
}
__QGPU_FN int atomicMin(int* p, int v) { return __nvvm_atom_min_gen_i(p, v); }
__QGPU_FN unsigned int atomicMin(unsigned int* p, unsigned int v) { return __nvvm_atom_min_gen_ui(p, v); }
__QGPU_FN long long atomicMin(long long* p, long long v) { return __nvvm_atom_min_gen_ll(p, v); }
__QGPU_FN unsigned long long atomicMin(unsigned long long* p, unsigned long long v) {
  return __nvvm_atom_min_gen_ull(p, v);
}
__QGPU_FN int atomicMax(int* p, int v) { return __nvvm_atom_max_gen_i(p, v); }
__QGPU_FN unsigned int atomicMax(unsigned int* p, unsigned int v) { return __nvvm_atom_max_gen_ui(p, v); }
__QGPU_FN long long atomicMax(long long* p, long long v) { return __nvvm_atom_max_gen_ll(p, v); }
__QGPU_FN unsigned long long atomicMax(unsigned long long* p, unsigned long long v) {
  return __nvvm_atom_max_gen_ull(p, v);
}
__QGPU_FN unsigned int atomicInc(unsigned int* p, unsigned int v) { return __nvvm_atom_inc_gen_ui(p, v); }
__QGPU_FN unsigned int atomicDec(unsigned int* p, unsigned int v) { return __nvvm_atom_dec_gen_ui(p, v); }
__QGPU_FN int atomicCAS(int* p, int cmp, int v) { return __nvvm_atom_cas_gen_i(p, cmp, v); }
__QGPU_FN unsigned int atomicCAS(unsigned int* p, unsigned int cmp, unsigned int v) {
  return (unsigned int)__nvvm_atom_cas_gen_i((int*)p, (int)cmp, (int)v);
}
__QGPU_FN unsigned long long atomicCAS(unsigned long long* p, unsigned long long cmp,
                                       unsigned long long v) {
  return (unsigned long long)__nvvm_atom_cas_gen_ll((long long*)p, (long long)cmp, (long long)v);
}
#define __QGPU_ATOMIC_BITS(Name, Op)                                                      \
  __QGPU_FN int Name(int* p, int v) { return __nvvm_atom_##Op##_gen_i(p, v); }           \
  __QGPU_FN unsigned int Name(unsigned int* p, unsigned int v) {                          \
    return (unsigned int)__nvvm_atom_##Op##_gen_i((int*)p, (int)v);                       \
  }                                                                                       \
  __QGPU_FN unsigned long long Name(unsigned long long* p, unsigned long long v) {        \
    return (unsigned long long)__nvvm_atom_##Op##_gen_ll((long long*)p, (long long)v);    \
  }
__QGPU_ATOMIC_BITS(atomicAnd, and)
__QGPU_ATOMIC_BITS(atomicOr, or)
__QGPU_ATOMIC_BITS(atomicXor, xor)
#undef __QGPU_ATOMIC_BITS

// ------------------------------------------------------- warp shuffles, votes
// The last operand of shfl.sync packs the segment mask (from `width`) and
// the lane clamp, as the PTX ISA defines it.
#define __QGPU_SHFL(Name, Kind, Lane, Clamp)                                              \
  __QGPU_FN int Name(unsigned int m, int v, Lane, int width = warpSize) {                 \
    return __nvvm_shfl_sync_##Kind##_i32(m, v, __qgpu_lane, ((warpSize - width) << 8) | (Clamp)); \
  }                                                                                       \
  __QGPU_FN unsigned int Name(unsigned int m, unsigned int v, Lane, int width = warpSize) { \
    return (unsigned int)Name(m, (int)v, __qgpu_lane, width);                             \
  }                                                                                       \
  __QGPU_FN float Name(unsigned int m, float v, Lane, int width = warpSize) {             \
    return __builtin_bit_cast(float, Name(m, __builtin_bit_cast(int, v), __qgpu_lane, width)); \
  }                                                                                       \
  __QGPU_FN long long Name(unsigned int m, long long v, Lane, int width = warpSize) {     \
    unsigned long long u = (unsigned long long)v;                                         \
    unsigned int lo = Name(m, (unsigned int)u, __qgpu_lane, width);                       \
    unsigned int hi = Name(m, (unsigned int)(u >> 32), __qgpu_lane, width);               \
    return (long long)(((unsigned long long)hi << 32) | lo);                              \
  }                                                                                       \
  __QGPU_FN unsigned long long Name(unsigned int m, unsigned long long v, Lane,           \
                                    int width = warpSize) {                               \
    return (unsigned long long)Name(m, (long long)v, __qgpu_lane, width);                 \
  }                                                                                       \
  __QGPU_FN long Name(unsigned int m, long v, Lane, int width = warpSize) {               \
    return (long)Name(m, (long long)v, __qgpu_lane, width);                               \
  }                                                                                       \
  __QGPU_FN unsigned long Name(unsigned int m, unsigned long v, Lane, int width = warpSize) { \
    return (unsigned long)Name(m, (long long)v, __qgpu_lane, width);                      \
  }                                                                                       \
  __QGPU_FN double Name(unsigned int m, double v, Lane, int width = warpSize) {           \
    return __builtin_bit_cast(double, Name(m, __builtin_bit_cast(long long, v), __qgpu_lane, width)); \
  }
__QGPU_SHFL(__shfl_sync, idx, int __qgpu_lane, 0x1f)
__QGPU_SHFL(__shfl_up_sync, up, unsigned int __qgpu_lane, 0)
__QGPU_SHFL(__shfl_down_sync, down, unsigned int __qgpu_lane, 0x1f)
__QGPU_SHFL(__shfl_xor_sync, bfly, int __qgpu_lane, 0x1f)
#undef __QGPU_SHFL

__QGPU_FN int __all_sync(unsigned int m, int p) { return __nvvm_vote_all_sync(m, p); }
__QGPU_FN int __any_sync(unsigned int m, int p) { return __nvvm_vote_any_sync(m, p); }
__QGPU_FN int __uni_sync(unsigned int m, int p) { return __nvvm_vote_uni_sync(m, p); }
__QGPU_FN unsigned int __ballot_sync(unsigned int m, int p) { return __nvvm_vote_ballot_sync(m, p); }
__QGPU_FN unsigned int __activemask() { return __nvvm_activemask(); }
__QGPU_FN unsigned int __lanemask_lt() { return __nvvm_read_ptx_sreg_lanemask_lt(); }
__QGPU_FN unsigned int __match_any_sync(unsigned int m, unsigned int v) {
  return __nvvm_match_any_sync_i32(m, v);
}
__QGPU_FN unsigned int __match_any_sync(unsigned int m, int v) {
  return __nvvm_match_any_sync_i32(m, (unsigned int)v);
}
__QGPU_FN unsigned int __match_any_sync(unsigned int m, unsigned long long v) {
  return __nvvm_match_any_sync_i64(m, (long long)v);
}
__QGPU_FN unsigned int __match_any_sync(unsigned int m, long long v) {
  return __nvvm_match_any_sync_i64(m, v);
}
__QGPU_FN unsigned int __match_all_sync(unsigned int m, unsigned int v, int* pred) {
  return __nvvm_match_all_sync_i32p(m, v, pred);
}
__QGPU_FN unsigned int __match_all_sync(unsigned int m, int v, int* pred) {
  return __nvvm_match_all_sync_i32p(m, (unsigned int)v, pred);
}

// -------------------------------------------------------- integer intrinsics
__QGPU_FN int __popc(unsigned int x) { return __builtin_popcount(x); }
__QGPU_FN int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
__QGPU_FN int __clz(int x) { return x == 0 ? 32 : __builtin_clz((unsigned int)x); }
__QGPU_FN int __clzll(long long x) { return x == 0 ? 64 : __builtin_clzll((unsigned long long)x); }
__QGPU_FN int __ffs(int x) { return __builtin_ffs(x); }
__QGPU_FN int __ffsll(long long x) { return __builtin_ffsll(x); }
__QGPU_FN unsigned int __brev(unsigned int x) { return __builtin_bitreverse32(x); }
__QGPU_FN unsigned long long __brevll(unsigned long long x) { return __builtin_bitreverse64(x); }
__QGPU_FN unsigned int __byte_perm(unsigned int x, unsigned int y, unsigned int s) {
  return __nvvm_prmt(x, y, s);
}
// Funnel shifts: the "wrap" forms take the shift modulo 32, the "c" forms
// clamp it to 32; PTX has both as shf.{l,r}.{wrap,clamp}.b32.
#define __QGPU_FUNNEL(Name, Dir, Mode)                                                    \
  __QGPU_FN unsigned int Name(unsigned int lo, unsigned int hi, unsigned int s) {         \
    unsigned int r;                                                                       \
    asm("shf." #Dir "." #Mode ".b32 %0, %1, %2, %3;" : "=r"(r) : "r"(lo), "r"(hi), "r"(s)); \
    return r;                                                                             \
  }
__QGPU_FUNNEL(__funnelshift_l, l, wrap)
__QGPU_FUNNEL(__funnelshift_r, r, wrap)
__QGPU_FUNNEL(__funnelshift_lc, l, clamp)
__QGPU_FUNNEL(__funnelshift_rc, r, clamp)
#undef __QGPU_FUNNEL
__QGPU_FN int __mul24(int a, int b) { return __nvvm_mul24_i(a, b); }
__QGPU_FN unsigned int __umul24(unsigned int a, unsigned int b) { return __nvvm_mul24_ui(a, b); }
__QGPU_FN int __mulhi(int a, int b) { return __nvvm_mulhi_i(a, b); }
__QGPU_FN unsigned int __umulhi(unsigned int a, unsigned int b) { return __nvvm_mulhi_ui(a, b); }
__QGPU_FN long long __mul64hi(long long a, long long b) { return __nvvm_mulhi_ll(a, b); }
__QGPU_FN unsigned long long __umul64hi(unsigned long long a, unsigned long long b) {
  return __nvvm_mulhi_ull(a, b);
}
__QGPU_FN unsigned int __sad(int a, int b, unsigned int c) { return __nvvm_sad_i(a, b, c); }
__QGPU_FN unsigned int __usad(unsigned int a, unsigned int b, unsigned int c) {
  return __nvvm_sad_ui(a, b, c);
}
__QGPU_FN int __hadd(int a, int b) { return (int)(((long long)a + b) >> 1); }
__QGPU_FN int __rhadd(int a, int b) { return (int)(((long long)a + b + 1) >> 1); }
__QGPU_FN unsigned int __uhadd(unsigned int a, unsigned int b) {
  return (unsigned int)(((unsigned long long)a + b) >> 1);
}
__QGPU_FN unsigned int __urhadd(unsigned int a, unsigned int b) {
  return (unsigned int)(((unsigned long long)a + b + 1) >> 1);
}

#define __QGPU_MINMAX(T)                                         \
  __QGPU_FN T min(T a, T b) { return a < b ? a : b; }           \
  __QGPU_FN T max(T a, T b) { return a < b ? b : a; }
__QGPU_MINMAX(int)
__QGPU_MINMAX(unsigned int)
__QGPU_MINMAX(long)
__QGPU_MINMAX(unsigned long)
__QGPU_MINMAX(long long)
__QGPU_MINMAX(unsigned long long)
#undef __QGPU_MINMAX
// Mixed signedness compares as unsigned, as CUDA's overloads do.
#define __QGPU_MINMAX_MIXED(S, U)                                                        \
  __QGPU_FN U min(S a, U b) { return min((U)a, b); }                                     \
  __QGPU_FN U min(U a, S b) { return min(a, (U)b); }                                     \
  __QGPU_FN U max(S a, U b) { return max((U)a, b); }                                     \
  __QGPU_FN U max(U a, S b) { return max(a, (U)b); }
__QGPU_MINMAX_MIXED(int, unsigned int)
__QGPU_MINMAX_MIXED(long long, unsigned long long)
#undef __QGPU_MINMAX_MIXED
__QGPU_FN float min(float a, float b) { return __builtin_fminf(a, b); }
__QGPU_FN float max(float a, float b) { return __builtin_fmaxf(a, b); }
__QGPU_FN double min(double a, double b) { return __builtin_fmin(a, b); }
__QGPU_FN double max(double a, double b) { return __builtin_fmax(a, b); }
__QGPU_FN unsigned int umin(unsigned int a, unsigned int b) { return a < b ? a : b; }
__QGPU_FN unsigned int umax(unsigned int a, unsigned int b) { return a < b ? b : a; }
__QGPU_FN long long llmin(long long a, long long b) { return a < b ? a : b; }
__QGPU_FN long long llmax(long long a, long long b) { return a < b ? b : a; }
__QGPU_FN unsigned long long ullmin(unsigned long long a, unsigned long long b) { return a < b ? a : b; }
__QGPU_FN unsigned long long ullmax(unsigned long long a, unsigned long long b) { return a < b ? b : a; }
__QGPU_FN int abs(int a) { return a < 0 ? -a : a; }
__QGPU_FN long long llabs(long long a) { return a < 0 ? -a : a; }

// Floating-point operations that NVPTX lowers to single instructions.
__QGPU_FN float fabsf(float x) { return __builtin_fabsf(x); }
__QGPU_FN float fminf(float a, float b) { return __builtin_fminf(a, b); }
__QGPU_FN float fmaxf(float a, float b) { return __builtin_fmaxf(a, b); }
__QGPU_FN float sqrtf(float x) { return __builtin_sqrtf(x); }
__QGPU_FN float floorf(float x) { return __builtin_floorf(x); }
__QGPU_FN float ceilf(float x) { return __builtin_ceilf(x); }
__QGPU_FN float truncf(float x) { return __builtin_truncf(x); }
__QGPU_FN float fmaf(float a, float b, float c) { return __builtin_fmaf(a, b, c); }
__QGPU_FN float __fmaf_rn(float a, float b, float c) { return __nvvm_fma_rn_f(a, b, c); }
__QGPU_FN float __fadd_rn(float a, float b) { return __nvvm_add_rn_f(a, b); }
__QGPU_FN float __fmul_rn(float a, float b) { return __nvvm_mul_rn_f(a, b); }
__QGPU_FN float __fsub_rn(float a, float b) { return __nvvm_add_rn_f(a, -b); }
__QGPU_FN double __fma_rn(double a, double b, double c) { return __nvvm_fma_rn_d(a, b, c); }
__QGPU_FN double __dadd_rn(double a, double b) { return __nvvm_add_rn_d(a, b); }
__QGPU_FN float __fdividef(float a, float b) { return __nvvm_div_approx_f(a, b); }
__QGPU_FN float rsqrtf(float x) { return __nvvm_rsqrt_approx_f(x); }
__QGPU_FN float rintf(float x) { return __builtin_rintf(x); }
__QGPU_FN float __expf(float x) { return __nvvm_ex2_approx_f(x * 1.44269504f); }
__QGPU_FN float __logf(float x) { return __nvvm_lg2_approx_f(x) * 0.693147181f; }
__QGPU_FN float __sinf(float x) { return __nvvm_sin_approx_f(x); }
__QGPU_FN float __cosf(float x) { return __nvvm_cos_approx_f(x); }
// e^x = 2^j * 2^(r log2 e) with j = rint(x log2 e) and r = x - j ln 2 in two
// fma steps (ln 2 split in a high part exact in f32 and the rest); the scale
// 2^j applied in two halves so that j = 128 or -150 does not overflow the
// exponent field.
__QGPU_FN float expf(float x) {
  float j = __builtin_rintf(x * 1.44269504f);
  float r = __builtin_fmaf(j, -0.693145752f, x);
  r = __builtin_fmaf(j, -1.42860677e-6f, r);
  float p = __nvvm_ex2_approx_f(r * 1.44269504f);
  int k = (int)__builtin_fmaxf(__builtin_fminf(j, 300.0f), -300.0f);
  float h1 = __builtin_bit_cast(float, ((k / 2) + 127) << 23), h2 = __builtin_bit_cast(float, ((k - k / 2) + 127) << 23);
  return x < -104.0f ? 0.0f : x > 89.0f ? __builtin_inff() : p * h1 * h2;
}
__QGPU_FN int __float_as_int(float x) { return __builtin_bit_cast(int, x); }
__QGPU_FN float __int_as_float(int x) { return __builtin_bit_cast(float, x); }
__QGPU_FN unsigned int __float_as_uint(float x) { return __builtin_bit_cast(unsigned int, x); }
__QGPU_FN float __uint_as_float(unsigned int x) { return __builtin_bit_cast(float, x); }
__QGPU_FN double fabs(double x) { return __builtin_fabs(x); }
__QGPU_FN double fmin(double a, double b) { return __builtin_fmin(a, b); }
__QGPU_FN double fmax(double a, double b) { return __builtin_fmax(a, b); }
__QGPU_FN double sqrt(double x) { return __builtin_sqrt(x); }
__QGPU_FN double floor(double x) { return __builtin_floor(x); }
__QGPU_FN double ceil(double x) { return __builtin_ceil(x); }
__QGPU_FN double trunc(double x) { return __builtin_trunc(x); }
__QGPU_FN double fma(double a, double b, double c) { return __builtin_fma(a, b, c); }

// ------------------------------------------------------------- clocks, loads
__QGPU_FN long long clock64() { return __nvvm_read_ptx_sreg_clock64(); }
// clock_t is defined without includes, as NVIDIA's NVRTC does; clock()
// sign-extends the 32-bit %clock, as CUDA's does.
typedef long clock_t;
__QGPU_FN clock_t clock() { return (clock_t)(int)__nvvm_read_ptx_sreg_clock(); }
__QGPU_FN unsigned int __laneid() { return __nvvm_read_ptx_sreg_laneid(); }
template <typename T>
__QGPU_FN T __ldg(const T* p) { return *p; }

// ------------------------------------------------------------ memory blocks
// NVPTX expands these builtins into loads and stores.
extern "C" __device__ __inline__ void* memcpy(void* dst, const void* src, size_t n) {
  return __builtin_memcpy(dst, src, n);
}
extern "C" __device__ __inline__ void* memset(void* dst, int value, size_t n) {
  return __builtin_memset(dst, value, n);
}

// -------------------------------------------------------- printf and assert
// Clang lowers device printf to PTX vprintf calls.  Declared for the host too,
// as CUDA's is: a host function of the program may call it (only its device
// side is compiled here).
extern "C" __host__ __device__ int printf(const char* format, ...);
extern "C" __device__ void __assertfail(const char* message, const char* file, unsigned int line,
                                        const char* function, size_t char_size);
#ifdef NDEBUG
#define assert(e) ((void)0)
#else
#define assert(e) \
  ((e) ? (void)0 : __assertfail(#e, __FILE__, __LINE__, __PRETTY_FUNCTION__, sizeof(char)))
#endif

#undef __QGPU_FN
