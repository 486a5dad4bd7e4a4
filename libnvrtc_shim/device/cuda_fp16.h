// cuda_fp16.h for qgpu's NVRTC: binary16 (`__half`, `__half2`) as CUDA's
// API documents it, for the device only.  Each operation is the inline PTX
// instruction that NVIDIA's header compiles to at sm_75 (`cvt.*.f16`,
// `add.f16`, `fma.rn.f16x2`, `setp.*.f16`, `set.*.f16x2` ...), so programs
// get the same instructions, and so the same results, as with nvcc.  Where
// PTX has no such instruction at sm_75 (division, min/max, the math
// functions) the value goes through f32, which holds every half exactly;
// there `__hdiv`, `hrcp` and `hsqrt` are correctly rounded, where NVIDIA's
// header refines `.approx` results and may differ in the last bit.
// Functions are declared __host__ __device__ as CUDA's are, so that a
// program's own __host__ __device__ helpers may call them; NVRTC compiles
// only their device side.
#pragma once
#pragma clang system_header

#define __CUDA_FP16_H__
#define __CUDA_FP16_HPP__
#define __CUDA_FP16_TYPES_EXIST__

#define __QGPU_HD static __host__ __device__ __inline__ __attribute__((always_inline))
#define __QGPU_MEMBER __host__ __device__ __inline__ __attribute__((always_inline))

// ---------------------------------------------------------------- the types
typedef struct __half_raw { unsigned short x; } __half_raw;
typedef struct __half2_raw { unsigned short x, y; } __half2_raw;

struct __nv_bfloat16;  // cuda_bf16.h's, for the conversion between the two

// `__x` holds the binary16 bits (public here; CUDA's keeps it protected, and
// programs reach the bits through __half_raw or __half_as_ushort).
struct __align__(2) __half {
  unsigned short __x;

  __half() = default;
  __host__ __device__ constexpr __half(const __half_raw& r) : __x(r.x) {}
  __QGPU_MEMBER __half& operator=(const __half_raw& r) { __x = r.x; return *this; }
  __QGPU_MEMBER volatile __half& operator=(const __half_raw& r) volatile { __x = r.x; return *this; }
  __host__ __device__ constexpr operator __half_raw() const { return __half_raw{__x}; }
  __QGPU_MEMBER operator __half_raw() const volatile { return __half_raw{__x}; }

  // Conversions round to nearest even, to integers toward zero (CUDA's
  // choices for the implicit ones).
  __QGPU_MEMBER __half(float f);
  __QGPU_MEMBER __half(double f);
  __QGPU_MEMBER __half(short v);
  __QGPU_MEMBER __half(unsigned short v);
  __QGPU_MEMBER __half(int v);
  __QGPU_MEMBER __half(unsigned int v);
  __QGPU_MEMBER __half(long v);
  __QGPU_MEMBER __half(unsigned long v);
  __QGPU_MEMBER __half(long long v);
  __QGPU_MEMBER __half(unsigned long long v);
  // From bfloat16 through f32, rounded to nearest (defined in cuda_bf16.h).
  explicit __QGPU_MEMBER __half(const __nv_bfloat16 f);
  __QGPU_MEMBER __half& operator=(float f) { return *this = __half(f); }
  __QGPU_MEMBER __half& operator=(double f) { return *this = __half(f); }
  __QGPU_MEMBER __half& operator=(short v) { return *this = __half(v); }
  __QGPU_MEMBER __half& operator=(unsigned short v) { return *this = __half(v); }
  __QGPU_MEMBER __half& operator=(int v) { return *this = __half(v); }
  __QGPU_MEMBER __half& operator=(unsigned int v) { return *this = __half(v); }
  __QGPU_MEMBER __half& operator=(long long v) { return *this = __half(v); }
  __QGPU_MEMBER __half& operator=(unsigned long long v) { return *this = __half(v); }
  __QGPU_MEMBER operator float() const;
  __QGPU_MEMBER operator signed char() const;
  __QGPU_MEMBER operator unsigned char() const;
  __QGPU_MEMBER operator char() const;
  __QGPU_MEMBER operator short() const;
  __QGPU_MEMBER operator unsigned short() const;
  __QGPU_MEMBER operator int() const;
  __QGPU_MEMBER operator unsigned int() const;
  __QGPU_MEMBER operator long() const;
  __QGPU_MEMBER operator unsigned long() const;
  __QGPU_MEMBER operator long long() const;
  __QGPU_MEMBER operator unsigned long long() const;
  __host__ __device__ constexpr operator bool() const { return (__x & 0x7FFFu) != 0; }
};

// x in the low 16 bits of the 32-bit word, y in the high ones (PTX's f16x2).
struct __align__(4) __half2 {
  __half x, y;

  __half2() = default;
  __host__ __device__ constexpr __half2(const __half& a, const __half& b) : x(a), y(b) {}
  __host__ __device__ constexpr __half2(const __half2_raw& r) : x(__half_raw{r.x}), y(__half_raw{r.y}) {}
  __QGPU_MEMBER __half2& operator=(const __half2_raw& r) {
    x = __half_raw{r.x};
    y = __half_raw{r.y};
    return *this;
  }
  __host__ __device__ constexpr operator __half2_raw() const { return __half2_raw{x.__x, y.__x}; }
};

typedef __half half;
typedef __half2 half2;
typedef __half nv_half;
typedef __half2 nv_half2;

// The f16x2 word of a __half2 and back.
__QGPU_HD unsigned int __qgpu_h2_bits(const __half2 h) { return __builtin_bit_cast(unsigned int, h); }
__QGPU_HD __half2 __qgpu_h2_of(unsigned int w) { return __builtin_bit_cast(__half2, w); }
__QGPU_HD __half __qgpu_h_of(unsigned short b) { return __half(__half_raw{b}); }

#define CUDART_INF_FP16 __ushort_as_half((unsigned short)0x7C00u)
#define CUDART_NAN_FP16 __ushort_as_half((unsigned short)0x7FFFu)
#define CUDART_MIN_DENORM_FP16 __ushort_as_half((unsigned short)0x0001u)
#define CUDART_MAX_NORMAL_FP16 __ushort_as_half((unsigned short)0x7BFFu)
#define CUDART_NEG_ZERO_FP16 __ushort_as_half((unsigned short)0x8000u)
#define CUDART_ZERO_FP16 __ushort_as_half((unsigned short)0x0000u)
#define CUDART_ONE_FP16 __ushort_as_half((unsigned short)0x3C00u)

// ----------------------------------------------------------------- bit casts
__QGPU_HD short __half_as_short(const __half h) { return (short)h.__x; }
__QGPU_HD unsigned short __half_as_ushort(const __half h) { return h.__x; }
__QGPU_HD __half __short_as_half(const short i) { return __qgpu_h_of((unsigned short)i); }
__QGPU_HD __half __ushort_as_half(const unsigned short i) { return __qgpu_h_of(i); }

// -------------------------------------------------------------- conversions
// To half: `cvt.RND.f16.TYPE` (RND rn, rz, rm for _rd, rp for _ru).
#define __QGPU_TO_HALF(Name, Rnd, Type, T, C)                                   \
  __QGPU_HD __half Name(const T v) {                                            \
    __half r;                                                                   \
    asm("cvt." #Rnd ".f16." #Type " %0, %1;" : "=h"(r.__x) : C(v));             \
    return r;                                                                   \
  }
#define __QGPU_TO_HALF_4(Prefix, Type, T, C)                                    \
  __QGPU_TO_HALF(Prefix##_rn, rn, Type, T, C)                                   \
  __QGPU_TO_HALF(Prefix##_rz, rz, Type, T, C)                                   \
  __QGPU_TO_HALF(Prefix##_rd, rm, Type, T, C)                                   \
  __QGPU_TO_HALF(Prefix##_ru, rp, Type, T, C)
__QGPU_TO_HALF_4(__float2half, f32, float, "f")
__QGPU_TO_HALF_4(__int2half, s32, int, "r")
__QGPU_TO_HALF_4(__uint2half, u32, unsigned int, "r")
__QGPU_TO_HALF_4(__short2half, s16, short, "h")
__QGPU_TO_HALF_4(__ushort2half, u16, unsigned short, "h")
__QGPU_TO_HALF_4(__ll2half, s64, long long, "l")
__QGPU_TO_HALF_4(__ull2half, u64, unsigned long long, "l")
__QGPU_TO_HALF(__double2half, rn, f64, double, "d")
#undef __QGPU_TO_HALF_4
#undef __QGPU_TO_HALF
__QGPU_HD __half __float2half(const float f) { return __float2half_rn(f); }

// From half: `cvt.RNDi.TYPE.f16`, saturating to the type's range (a NaN
// gives 0).
#define __QGPU_FROM_HALF(Name, Rnd, Type, T, C)                                 \
  __QGPU_HD T Name(const __half h) {                                            \
    T r;                                                                        \
    asm("cvt." #Rnd ".f16 %0, %1;" : C(r) : "h"(h.__x));                        \
    return r;                                                                   \
  }
#define __QGPU_FROM_HALF_4(Prefix, Type, T, C)                                  \
  __QGPU_FROM_HALF(Prefix##_rn, rni.Type, Type, T, C)                           \
  __QGPU_FROM_HALF(Prefix##_rz, rzi.Type, Type, T, C)                           \
  __QGPU_FROM_HALF(Prefix##_rd, rmi.Type, Type, T, C)                           \
  __QGPU_FROM_HALF(Prefix##_ru, rpi.Type, Type, T, C)
__QGPU_FROM_HALF_4(__half2int, s32, int, "=r")
__QGPU_FROM_HALF_4(__half2uint, u32, unsigned int, "=r")
__QGPU_FROM_HALF_4(__half2short, s16, short, "=h")
__QGPU_FROM_HALF_4(__half2ushort, u16, unsigned short, "=h")
__QGPU_FROM_HALF_4(__half2ll, s64, long long, "=l")
__QGPU_FROM_HALF_4(__half2ull, u64, unsigned long long, "=l")
#undef __QGPU_FROM_HALF_4
#undef __QGPU_FROM_HALF
// 8-bit results in a 16-bit register (PTX's cvt sign- or zero-extends them).
__QGPU_HD signed char __half2char_rz(const __half h) {
  short r;
  asm("cvt.rzi.s8.f16 %0, %1;" : "=h"(r) : "h"(h.__x));
  return (signed char)r;
}
__QGPU_HD unsigned char __half2uchar_rz(const __half h) {
  unsigned short r;
  asm("cvt.rzi.u8.f16 %0, %1;" : "=h"(r) : "h"(h.__x));
  return (unsigned char)r;
}

__QGPU_HD float __half2float(const __half h) {
  float r;
  asm("cvt.f32.f16 %0, %1;" : "=f"(r) : "h"(h.__x));
  return r;
}

// Pairs.  cvt.rn.f16x2.f32 is sm_80's, so two conversions, as at sm_75.
__QGPU_HD __half2 __halves2half2(const __half a, const __half b) { return __half2(a, b); }
__QGPU_HD __half2 make_half2(const __half a, const __half b) { return __half2(a, b); }
__QGPU_HD __half2 __half2half2(const __half a) { return __half2(a, a); }
__QGPU_HD __half2 __float2half2_rn(const float f) { return __half2half2(__float2half_rn(f)); }
__QGPU_HD __half2 __floats2half2_rn(const float a, const float b) {
  return __half2(__float2half_rn(a), __float2half_rn(b));
}
__QGPU_HD __half2 __float22half2_rn(const float2 f) { return __floats2half2_rn(f.x, f.y); }
__QGPU_HD float __low2float(const __half2 h) { return __half2float(h.x); }
__QGPU_HD float __high2float(const __half2 h) { return __half2float(h.y); }
__QGPU_HD float2 __half22float2(const __half2 h) { return float2{__low2float(h), __high2float(h)}; }
__QGPU_HD __half __low2half(const __half2 h) { return h.x; }
__QGPU_HD __half __high2half(const __half2 h) { return h.y; }
__QGPU_HD __half2 __low2half2(const __half2 h) { return __half2(h.x, h.x); }
__QGPU_HD __half2 __high2half2(const __half2 h) { return __half2(h.y, h.y); }
__QGPU_HD __half2 __lows2half2(const __half2 a, const __half2 b) { return __half2(a.x, b.x); }
__QGPU_HD __half2 __highs2half2(const __half2 a, const __half2 b) { return __half2(a.y, b.y); }
__QGPU_HD __half2 __lowhigh2highlow(const __half2 h) { return __half2(h.y, h.x); }

// ---------------------------------------------------------------- arithmetic
// `add.f16` (which a GPU's assembler may fuse with a multiply) and
// `add.rn.f16` (never fused) round alike here.
#define __QGPU_H_UNARY(Name, Instr)                                             \
  __QGPU_HD __half Name(const __half a) {                                       \
    __half r;                                                                   \
    asm(Instr ".f16 %0, %1;" : "=h"(r.__x) : "h"(a.__x));                       \
    return r;                                                                   \
  }                                                                             \
  __QGPU_HD __half2 Name##2(const __half2 a) {                                  \
    unsigned int r;                                                             \
    asm(Instr ".f16x2 %0, %1;" : "=r"(r) : "r"(__qgpu_h2_bits(a)));             \
    return __qgpu_h2_of(r);                                                     \
  }
#define __QGPU_H_BINARY(Name, Name2, Instr)                                     \
  __QGPU_HD __half Name(const __half a, const __half b) {                       \
    __half r;                                                                   \
    asm(Instr ".f16 %0, %1, %2;" : "=h"(r.__x) : "h"(a.__x), "h"(b.__x));       \
    return r;                                                                   \
  }                                                                             \
  __QGPU_HD __half2 Name2(const __half2 a, const __half2 b) {                   \
    unsigned int r;                                                             \
    asm(Instr ".f16x2 %0, %1, %2;" : "=r"(r) : "r"(__qgpu_h2_bits(a)), "r"(__qgpu_h2_bits(b))); \
    return __qgpu_h2_of(r);                                                     \
  }
#define __QGPU_H_TERNARY(Name, Name2, Instr)                                    \
  __QGPU_HD __half Name(const __half a, const __half b, const __half c) {       \
    __half r;                                                                   \
    asm(Instr ".f16 %0, %1, %2, %3;" : "=h"(r.__x) : "h"(a.__x), "h"(b.__x), "h"(c.__x)); \
    return r;                                                                   \
  }                                                                             \
  __QGPU_HD __half2 Name2(const __half2 a, const __half2 b, const __half2 c) {  \
    unsigned int r;                                                             \
    asm(Instr ".f16x2 %0, %1, %2, %3;"                                          \
        : "=r"(r)                                                               \
        : "r"(__qgpu_h2_bits(a)), "r"(__qgpu_h2_bits(b)), "r"(__qgpu_h2_bits(c))); \
    return __qgpu_h2_of(r);                                                     \
  }
__QGPU_H_UNARY(__hneg, "neg")
__QGPU_H_UNARY(__habs, "abs")
__QGPU_H_BINARY(__hadd, __hadd2, "add")
__QGPU_H_BINARY(__hsub, __hsub2, "sub")
__QGPU_H_BINARY(__hmul, __hmul2, "mul")
__QGPU_H_BINARY(__hadd_rn, __hadd2_rn, "add.rn")
__QGPU_H_BINARY(__hsub_rn, __hsub2_rn, "sub.rn")
__QGPU_H_BINARY(__hmul_rn, __hmul2_rn, "mul.rn")
__QGPU_H_BINARY(__hadd_sat, __hadd2_sat, "add.sat")
__QGPU_H_BINARY(__hsub_sat, __hsub2_sat, "sub.sat")
__QGPU_H_BINARY(__hmul_sat, __hmul2_sat, "mul.sat")
__QGPU_H_TERNARY(__hfma, __hfma2, "fma.rn")
__QGPU_H_TERNARY(__hfma_sat, __hfma2_sat, "fma.rn.sat")
#undef __QGPU_H_UNARY
#undef __QGPU_H_BINARY
#undef __QGPU_H_TERNARY

// Division: the quotient of the halves in f32, correctly rounded there and
// then to binary16, which is the correctly rounded quotient (24 >= 2 * 11 + 2
// bits, so the double rounding is innocuous).
__QGPU_HD __half __hdiv(const __half a, const __half b) {
  return __float2half_rn(__half2float(a) / __half2float(b));
}
__QGPU_HD __half2 __h2div(const __half2 a, const __half2 b) {
  return __half2(__hdiv(a.x, b.x), __hdiv(a.y, b.y));
}
__QGPU_HD __half __hdiv_rn(const __half a, const __half b) { return __hdiv(a, b); }

// ---------------------------------------------------------------- comparisons
// Scalar: `setp.OP.f16` into a scoped predicate, then 0 or 1.  Pairs:
// `set.OP.f16x2.f16x2` (1.0 or 0.0 per half) and `set.OP.u32.f16x2` (0xFFFF or
// 0 per half, the _mask forms); the __hb forms hold when both halves do.
#define __QGPU_H_COMPARE(Op)                                                    \
  __QGPU_HD bool __h##Op(const __half a, const __half b) {                      \
    unsigned short r;                                                           \
    asm("{ .reg .pred __qgpu_p;\n\tsetp." #Op ".f16 __qgpu_p, %1, %2;\n\t"      \
        "selp.u16 %0, 1, 0, __qgpu_p;\n\t}"                                     \
        : "=h"(r)                                                               \
        : "h"(a.__x), "h"(b.__x));                                              \
    return r != 0;                                                              \
  }                                                                             \
  __QGPU_HD __half2 __h##Op##2(const __half2 a, const __half2 b) {              \
    unsigned int r;                                                             \
    asm("set." #Op ".f16x2.f16x2 %0, %1, %2;" : "=r"(r) : "r"(__qgpu_h2_bits(a)), "r"(__qgpu_h2_bits(b))); \
    return __qgpu_h2_of(r);                                                     \
  }                                                                             \
  __QGPU_HD unsigned int __h##Op##2_mask(const __half2 a, const __half2 b) {    \
    unsigned int r;                                                             \
    asm("set." #Op ".u32.f16x2 %0, %1, %2;" : "=r"(r) : "r"(__qgpu_h2_bits(a)), "r"(__qgpu_h2_bits(b))); \
    return r;                                                                   \
  }                                                                             \
  __QGPU_HD bool __hb##Op##2(const __half2 a, const __half2 b) {                \
    return __h##Op##2_mask(a, b) == 0xFFFFFFFFu;                                \
  }
__QGPU_H_COMPARE(eq)
__QGPU_H_COMPARE(ne)
__QGPU_H_COMPARE(lt)
__QGPU_H_COMPARE(le)
__QGPU_H_COMPARE(gt)
__QGPU_H_COMPARE(ge)
__QGPU_H_COMPARE(equ)
__QGPU_H_COMPARE(neu)
__QGPU_H_COMPARE(ltu)
__QGPU_H_COMPARE(leu)
__QGPU_H_COMPARE(gtu)
__QGPU_H_COMPARE(geu)
#undef __QGPU_H_COMPARE

__QGPU_HD bool __hisnan(const __half a) {
  unsigned short r;
  asm("{ .reg .pred __qgpu_p;\n\tsetp.nan.f16 __qgpu_p, %1, %1;\n\tselp.u16 %0, 1, 0, __qgpu_p;\n\t}"
      : "=h"(r)
      : "h"(a.__x));
  return r != 0;
}
__QGPU_HD __half2 __hisnan2(const __half2 a) {
  unsigned int r;
  asm("set.nan.f16x2.f16x2 %0, %1, %1;" : "=r"(r) : "r"(__qgpu_h2_bits(a)));
  return __qgpu_h2_of(r);
}
// -1 for -inf, 1 for +inf, else 0.
__QGPU_HD int __hisinf(const __half a) { return a.__x == 0xFC00u ? -1 : a.__x == 0x7C00u ? 1 : 0; }

// max and min (PTX has them for f16 only from sm_80): a NaN operand gives the
// other one, two NaNs the canonical NaN, and +0 is above -0.  The _nan forms
// give the canonical NaN when either operand is one.
__QGPU_HD __half __hmax(const __half a, const __half b) {
  if (__hisnan(a)) return __hisnan(b) ? CUDART_NAN_FP16 : b;
  if (__hisnan(b)) return a;
  if (__heq(a, b)) return __qgpu_h_of(a.__x & b.__x);  // equal: the bits differ only for +-0
  return __hgt(a, b) ? a : b;
}
__QGPU_HD __half __hmin(const __half a, const __half b) {
  if (__hisnan(a)) return __hisnan(b) ? CUDART_NAN_FP16 : b;
  if (__hisnan(b)) return a;
  if (__heq(a, b)) return __qgpu_h_of(a.__x | b.__x);
  return __hlt(a, b) ? a : b;
}
__QGPU_HD __half __hmax_nan(const __half a, const __half b) {
  return __hisnan(a) || __hisnan(b) ? CUDART_NAN_FP16 : __hmax(a, b);
}
__QGPU_HD __half __hmin_nan(const __half a, const __half b) {
  return __hisnan(a) || __hisnan(b) ? CUDART_NAN_FP16 : __hmin(a, b);
}
__QGPU_HD __half2 __hmax2(const __half2 a, const __half2 b) { return __half2(__hmax(a.x, b.x), __hmax(a.y, b.y)); }
__QGPU_HD __half2 __hmin2(const __half2 a, const __half2 b) { return __half2(__hmin(a.x, b.x), __hmin(a.y, b.y)); }
__QGPU_HD __half2 __hmax2_nan(const __half2 a, const __half2 b) {
  return __half2(__hmax_nan(a.x, b.x), __hmax_nan(a.y, b.y));
}
__QGPU_HD __half2 __hmin2_nan(const __half2 a, const __half2 b) {
  return __half2(__hmin_nan(a.x, b.x), __hmin_nan(a.y, b.y));
}

// ------------------------------------------------------------ math functions
// Through f32: sqrt and the roundings are exact there (the f32 result rounds
// correctly to binary16); the others use the f32 approximations (ex2, lg2,
// sin, cos, rsqrt .approx), as CUDA's half functions do, and may differ from
// the correctly rounded half in the last bit.
#define __QGPU_H_MATH(Name, Expr)                                               \
  __QGPU_HD __half h##Name(const __half a) {                                    \
    const float x = __half2float(a);                                            \
    return __float2half_rn(Expr);                                               \
  }                                                                             \
  __QGPU_HD __half2 h2##Name(const __half2 a) { return __half2(h##Name(a.x), h##Name(a.y)); }
__QGPU_HD float __qgpu_tanh_approx(const float x) {
  float r;
  asm("tanh.approx.f32 %0, %1;" : "=f"(r) : "f"(x));
  return r;
}
__QGPU_H_MATH(sqrt, __builtin_sqrtf(x))
__QGPU_H_MATH(rsqrt, __nvvm_rsqrt_approx_f(x))
__QGPU_H_MATH(rcp, 1.0f / x)
__QGPU_H_MATH(exp, __nvvm_ex2_approx_f(x * 1.44269504f))
__QGPU_H_MATH(exp2, __nvvm_ex2_approx_f(x))
__QGPU_H_MATH(exp10, __nvvm_ex2_approx_f(x * 3.32192809f))
__QGPU_H_MATH(log, __nvvm_lg2_approx_f(x) * 0.693147181f)
__QGPU_H_MATH(log2, __nvvm_lg2_approx_f(x))
__QGPU_H_MATH(log10, __nvvm_lg2_approx_f(x) * 0.301029996f)
__QGPU_H_MATH(sin, __nvvm_sin_approx_f(x))
__QGPU_H_MATH(tanh, __qgpu_tanh_approx(x))
__QGPU_H_MATH(tanh_approx, __qgpu_tanh_approx(x))  // at sm_75 CUDA's is htanh
__QGPU_H_MATH(cos, __nvvm_cos_approx_f(x))
__QGPU_H_MATH(trunc, __builtin_truncf(x))
__QGPU_H_MATH(ceil, __builtin_ceilf(x))
__QGPU_H_MATH(floor, __builtin_floorf(x))
__QGPU_H_MATH(rint, __builtin_rintf(x))
#undef __QGPU_H_MATH

// -------------------------------------------------- the members' conversions
__QGPU_MEMBER __half::__half(float f) : __x(__float2half_rn(f).__x) {}
__QGPU_MEMBER __half::__half(double f) : __x(__double2half(f).__x) {}
__QGPU_MEMBER __half::__half(short v) : __x(__short2half_rn(v).__x) {}
__QGPU_MEMBER __half::__half(unsigned short v) : __x(__ushort2half_rn(v).__x) {}
__QGPU_MEMBER __half::__half(int v) : __x(__int2half_rn(v).__x) {}
__QGPU_MEMBER __half::__half(unsigned int v) : __x(__uint2half_rn(v).__x) {}
__QGPU_MEMBER __half::__half(long v) : __x(__ll2half_rn(v).__x) {}
__QGPU_MEMBER __half::__half(unsigned long v) : __x(__ull2half_rn(v).__x) {}
__QGPU_MEMBER __half::__half(long long v) : __x(__ll2half_rn(v).__x) {}
__QGPU_MEMBER __half::__half(unsigned long long v) : __x(__ull2half_rn(v).__x) {}
__QGPU_MEMBER __half::operator float() const { return __half2float(*this); }
__QGPU_MEMBER __half::operator signed char() const { return __half2char_rz(*this); }
__QGPU_MEMBER __half::operator unsigned char() const { return __half2uchar_rz(*this); }
__QGPU_MEMBER __half::operator char() const { return (char)__half2char_rz(*this); }
__QGPU_MEMBER __half::operator short() const { return __half2short_rz(*this); }
__QGPU_MEMBER __half::operator unsigned short() const { return __half2ushort_rz(*this); }
__QGPU_MEMBER __half::operator int() const { return __half2int_rz(*this); }
__QGPU_MEMBER __half::operator unsigned int() const { return __half2uint_rz(*this); }
__QGPU_MEMBER __half::operator long() const { return __half2ll_rz(*this); }
__QGPU_MEMBER __half::operator unsigned long() const { return __half2ull_rz(*this); }
__QGPU_MEMBER __half::operator long long() const { return __half2ll_rz(*this); }
__QGPU_MEMBER __half::operator unsigned long long() const { return __half2ull_rz(*this); }

// ----------------------------------------------------------------- operators
__QGPU_HD __half operator+(const __half& a, const __half& b) { return __hadd(a, b); }
__QGPU_HD __half operator-(const __half& a, const __half& b) { return __hsub(a, b); }
__QGPU_HD __half operator*(const __half& a, const __half& b) { return __hmul(a, b); }
__QGPU_HD __half operator/(const __half& a, const __half& b) { return __hdiv(a, b); }
__QGPU_HD __half& operator+=(__half& a, const __half& b) { return a = __hadd(a, b); }
__QGPU_HD __half& operator-=(__half& a, const __half& b) { return a = __hsub(a, b); }
__QGPU_HD __half& operator*=(__half& a, const __half& b) { return a = __hmul(a, b); }
__QGPU_HD __half& operator/=(__half& a, const __half& b) { return a = __hdiv(a, b); }
__QGPU_HD __half& operator++(__half& h) { return h = __hadd(h, CUDART_ONE_FP16); }
__QGPU_HD __half& operator--(__half& h) { return h = __hsub(h, CUDART_ONE_FP16); }
__QGPU_HD __half operator++(__half& h, int) {
  const __half old = h;
  h = __hadd(h, CUDART_ONE_FP16);
  return old;
}
__QGPU_HD __half operator--(__half& h, int) {
  const __half old = h;
  h = __hsub(h, CUDART_ONE_FP16);
  return old;
}
__QGPU_HD __half operator+(const __half& h) { return h; }
__QGPU_HD __half operator-(const __half& h) { return __hneg(h); }
// != is unordered (true when either is a NaN), the others ordered, as in C++.
__QGPU_HD bool operator==(const __half& a, const __half& b) { return __heq(a, b); }
__QGPU_HD bool operator!=(const __half& a, const __half& b) { return __hneu(a, b); }
__QGPU_HD bool operator<(const __half& a, const __half& b) { return __hlt(a, b); }
__QGPU_HD bool operator<=(const __half& a, const __half& b) { return __hle(a, b); }
__QGPU_HD bool operator>(const __half& a, const __half& b) { return __hgt(a, b); }
__QGPU_HD bool operator>=(const __half& a, const __half& b) { return __hge(a, b); }

__QGPU_HD __half2 operator+(const __half2& a, const __half2& b) { return __hadd2(a, b); }
__QGPU_HD __half2 operator-(const __half2& a, const __half2& b) { return __hsub2(a, b); }
__QGPU_HD __half2 operator*(const __half2& a, const __half2& b) { return __hmul2(a, b); }
__QGPU_HD __half2 operator/(const __half2& a, const __half2& b) { return __h2div(a, b); }
__QGPU_HD __half2& operator+=(__half2& a, const __half2& b) { return a = __hadd2(a, b); }
__QGPU_HD __half2& operator-=(__half2& a, const __half2& b) { return a = __hsub2(a, b); }
__QGPU_HD __half2& operator*=(__half2& a, const __half2& b) { return a = __hmul2(a, b); }
__QGPU_HD __half2& operator/=(__half2& a, const __half2& b) { return a = __h2div(a, b); }
__QGPU_HD __half2& operator++(__half2& h) { return h = __hadd2(h, __half2half2(CUDART_ONE_FP16)); }
__QGPU_HD __half2& operator--(__half2& h) { return h = __hsub2(h, __half2half2(CUDART_ONE_FP16)); }
__QGPU_HD __half2 operator++(__half2& h, int) {
  const __half2 old = h;
  h = __hadd2(h, __half2half2(CUDART_ONE_FP16));
  return old;
}
__QGPU_HD __half2 operator--(__half2& h, int) {
  const __half2 old = h;
  h = __hsub2(h, __half2half2(CUDART_ONE_FP16));
  return old;
}
__QGPU_HD __half2 operator+(const __half2& h) { return h; }
__QGPU_HD __half2 operator-(const __half2& h) { return __hneg2(h); }
__QGPU_HD bool operator==(const __half2& a, const __half2& b) { return __hbeq2(a, b); }
__QGPU_HD bool operator!=(const __half2& a, const __half2& b) { return __hbneu2(a, b); }
__QGPU_HD bool operator<(const __half2& a, const __half2& b) { return __hblt2(a, b); }
__QGPU_HD bool operator<=(const __half2& a, const __half2& b) { return __hble2(a, b); }
__QGPU_HD bool operator>(const __half2& a, const __half2& b) { return __hbgt2(a, b); }
__QGPU_HD bool operator>=(const __half2& a, const __half2& b) { return __hbge2(a, b); }

// ----------------------------------------------------------- fused forms
// __hfma_relu: the fma, then the larger of it and +0 with a NaN kept as the
// canonical one (-0 gives +0), which is how NVIDIA's header computes it
// below sm_80.  __hcmadd: (a.x + i a.y)(b.x + i b.y) + (c.x + i c.y) as
// CUDA's four fmas: re = fma(-a.y, b.y, fma(a.x, b.x, c.x)), im = fma(a.y,
// b.x, fma(a.x, b.y, c.y)).
__QGPU_HD __half __hfma_relu(const __half a, const __half b, const __half c) {
  return __hmax_nan(__hfma(a, b, c), CUDART_ZERO_FP16);
}
__QGPU_HD __half2 __hfma2_relu(const __half2 a, const __half2 b, const __half2 c) {
  return __hmax2_nan(__hfma2(a, b, c), __half2half2(CUDART_ZERO_FP16));
}
__QGPU_HD __half2 __hcmadd(const __half2 a, const __half2 b, const __half2 c) {
  const __half re = __hfma(__hneg(a.y), b.y, __hfma(a.x, b.x, c.x));
  const __half im = __hfma(a.y, b.x, __hfma(a.x, b.y, c.y));
  return __half2(re, im);
}

// ------------------------------------------------------ warp shuffles, loads
// A __half2 moves as its 32-bit word, a __half in the low half of one.
#define __QGPU_H_SHFL(Name, Lane)                                               \
  static __device__ __inline__ __half2 Name(unsigned int m, __half2 v, Lane l, int width = warpSize) { \
    return __qgpu_h2_of(Name(m, __qgpu_h2_bits(v), l, width));                  \
  }                                                                             \
  static __device__ __inline__ __half Name(unsigned int m, __half v, Lane l, int width = warpSize) { \
    return __qgpu_h_of((unsigned short)Name(m, (unsigned int)v.__x, l, width)); \
  }
__QGPU_H_SHFL(__shfl_sync, int)
__QGPU_H_SHFL(__shfl_up_sync, unsigned int)
__QGPU_H_SHFL(__shfl_down_sync, unsigned int)
__QGPU_H_SHFL(__shfl_xor_sync, int)
#undef __QGPU_H_SHFL

// Loads and stores with a cache hint: the machine has no caches, so each is
// the plain access (__ldcv, "fetch again", after a compiler barrier, so that
// no earlier load of the address stands for it).
#define __QGPU_H_LDST(T)                                                        \
  static __device__ __inline__ T __ldca(const T* p) { return *p; }            \
  static __device__ __inline__ T __ldcg(const T* p) { return *p; }            \
  static __device__ __inline__ T __ldcs(const T* p) { return *p; }            \
  static __device__ __inline__ T __ldlu(const T* p) { return *p; }            \
  static __device__ __inline__ T __ldcv(const T* p) { asm volatile("" ::: "memory"); return *p; } \
  static __device__ __inline__ void __stwb(T* p, T v) { *p = v; }             \
  static __device__ __inline__ void __stcg(T* p, T v) { *p = v; }             \
  static __device__ __inline__ void __stcs(T* p, T v) { *p = v; }             \
  static __device__ __inline__ void __stwt(T* p, T v) { *p = v; }
__QGPU_H_LDST(__half)
__QGPU_H_LDST(__half2)

// ------------------------------------------------------------------- atomics
// atom.add.noftz.f16x2 (sm_60) and .f16 (sm_70), generic addresses.
static __device__ __inline__ __half2 atomicAdd(__half2* p, __half2 v) {
  unsigned int r;
  asm volatile("atom.add.noftz.f16x2 %0, [%1], %2;" : "=r"(r) : "l"(p), "r"(__qgpu_h2_bits(v)) : "memory");
  return __qgpu_h2_of(r);
}
static __device__ __inline__ __half atomicAdd(__half* p, __half v) {
  __half r;
  asm volatile("atom.add.noftz.f16 %0, [%1], %2;" : "=h"(r.__x) : "l"(p), "h"(v.__x) : "memory");
  return r;
}

#undef __QGPU_HD
#undef __QGPU_MEMBER
