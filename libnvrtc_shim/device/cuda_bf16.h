// cuda_bf16.h for qgpu's NVRTC: bfloat16 (`__nv_bfloat16`, `__nv_bfloat162`)
// as CUDA's API documents it, for the device only.  A bfloat16 is the high
// half of an f32 (sign, 8 exponent bits, 7 fraction bits), so widening is a
// shift.  The conversions from f32 and the arithmetic are the PTX bf16
// instructions (`cvt.rn.bf16.f32`, `cvt.rn.bf16x2.f32`, `add.rn.bf16`,
// `fma.rn.bf16x2` ...), each the exact result rounded once; what PTX has no
// bf16 instruction for (division, comparisons, min/max, neg/abs, the
// integer and f64 conversions, the math functions) goes through f32, which
// holds every bfloat16 exactly, or works on the bits.  Every NaN result is
// the canonical 0x7FFF, but widening to f32 keeps a NaN's bits.
// Where NVIDIA's header compiled for sm_75 rounds twice (its `__hfma` is an
// f32 fma then a rounding to bf16) the results here are the correctly
// rounded ones and may differ in the last bit.
// Functions are declared __host__ __device__ as CUDA's are, so that a
// program's own __host__ __device__ helpers may call them; NVRTC compiles
// only their device side.
#pragma once
#pragma clang system_header

#define __CUDA_BF16_H__
#define __CUDA_BF16_HPP__
#define __CUDA_BF16_TYPES_EXIST__

// __half and its operations, for the conversions between the two (as CUDA's
// cuda_bf16.h brings them in).
#include <cuda_fp16.h>

#define __QGPU_HD static __host__ __device__ __inline__ __attribute__((always_inline))
#define __QGPU_MEMBER __host__ __device__ __inline__ __attribute__((always_inline))

// ---------------------------------------------------------------- the types
typedef struct __nv_bfloat16_raw { unsigned short x; } __nv_bfloat16_raw;
typedef struct __nv_bfloat162_raw { unsigned short x, y; } __nv_bfloat162_raw;

// `__x` holds the bfloat16 bits (public here; CUDA's keeps it protected, and
// programs reach the bits through __nv_bfloat16_raw or __bfloat16_as_ushort).
struct __align__(2) __nv_bfloat16 {
  unsigned short __x;

  __nv_bfloat16() = default;
  __host__ __device__ constexpr __nv_bfloat16(const __nv_bfloat16_raw& r) : __x(r.x) {}
  __QGPU_MEMBER __nv_bfloat16& operator=(const __nv_bfloat16_raw& r) { __x = r.x; return *this; }
  __QGPU_MEMBER volatile __nv_bfloat16& operator=(const __nv_bfloat16_raw& r) volatile { __x = r.x; return *this; }
  __host__ __device__ constexpr operator __nv_bfloat16_raw() const { return __nv_bfloat16_raw{__x}; }
  __QGPU_MEMBER operator __nv_bfloat16_raw() const volatile { return __nv_bfloat16_raw{__x}; }

  // Conversions round to nearest even, to integers toward zero (CUDA's
  // choices for the implicit ones).
  __QGPU_MEMBER __nv_bfloat16(float f);
  __QGPU_MEMBER __nv_bfloat16(double f);
  explicit __QGPU_MEMBER __nv_bfloat16(const __half f);  // through f32, rounded to nearest
  __QGPU_MEMBER __nv_bfloat16(short v);
  __QGPU_MEMBER __nv_bfloat16(unsigned short v);
  __QGPU_MEMBER __nv_bfloat16(int v);
  __QGPU_MEMBER __nv_bfloat16(unsigned int v);
  __QGPU_MEMBER __nv_bfloat16(long v);
  __QGPU_MEMBER __nv_bfloat16(unsigned long v);
  __QGPU_MEMBER __nv_bfloat16(long long v);
  __QGPU_MEMBER __nv_bfloat16(unsigned long long v);
  __QGPU_MEMBER __nv_bfloat16& operator=(float f) { return *this = __nv_bfloat16(f); }
  __QGPU_MEMBER __nv_bfloat16& operator=(double f) { return *this = __nv_bfloat16(f); }
  __QGPU_MEMBER __nv_bfloat16& operator=(short v) { return *this = __nv_bfloat16(v); }
  __QGPU_MEMBER __nv_bfloat16& operator=(unsigned short v) { return *this = __nv_bfloat16(v); }
  __QGPU_MEMBER __nv_bfloat16& operator=(int v) { return *this = __nv_bfloat16(v); }
  __QGPU_MEMBER __nv_bfloat16& operator=(unsigned int v) { return *this = __nv_bfloat16(v); }
  __QGPU_MEMBER __nv_bfloat16& operator=(long long v) { return *this = __nv_bfloat16(v); }
  __QGPU_MEMBER __nv_bfloat16& operator=(unsigned long long v) { return *this = __nv_bfloat16(v); }
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

// x in the low 16 bits of the 32-bit word, y in the high ones (PTX's bf16x2).
struct __align__(4) __nv_bfloat162 {
  __nv_bfloat16 x, y;

  __nv_bfloat162() = default;
  __host__ __device__ constexpr __nv_bfloat162(const __nv_bfloat16& a, const __nv_bfloat16& b) : x(a), y(b) {}
  __host__ __device__ constexpr __nv_bfloat162(const __nv_bfloat162_raw& r)
      : x(__nv_bfloat16_raw{r.x}), y(__nv_bfloat16_raw{r.y}) {}
  __QGPU_MEMBER __nv_bfloat162& operator=(const __nv_bfloat162_raw& r) {
    x = __nv_bfloat16_raw{r.x};
    y = __nv_bfloat16_raw{r.y};
    return *this;
  }
  __host__ __device__ constexpr operator __nv_bfloat162_raw() const { return __nv_bfloat162_raw{x.__x, y.__x}; }
};

typedef __nv_bfloat16 nv_bfloat16;
typedef __nv_bfloat162 nv_bfloat162;

// The bf16x2 word of a __nv_bfloat162 and back; a bfloat16 of its bits.
__QGPU_HD unsigned int __qgpu_bf2_bits(const __nv_bfloat162 h) { return __builtin_bit_cast(unsigned int, h); }
__QGPU_HD __nv_bfloat162 __qgpu_bf2_of(unsigned int w) { return __builtin_bit_cast(__nv_bfloat162, w); }
__QGPU_HD __nv_bfloat16 __qgpu_bf_of(unsigned short b) { return __nv_bfloat16(__nv_bfloat16_raw{b}); }
// The f32 whose high half is the bfloat16 (its value, exactly).
__QGPU_HD float __qgpu_bf_wide(const __nv_bfloat16 h) { return __builtin_bit_cast(float, (unsigned int)h.__x << 16); }

#define CUDART_INF_BF16 __ushort_as_bfloat16((unsigned short)0x7F80u)
#define CUDART_NAN_BF16 __ushort_as_bfloat16((unsigned short)0x7FFFu)
#define CUDART_MIN_DENORM_BF16 __ushort_as_bfloat16((unsigned short)0x0001u)
#define CUDART_MAX_NORMAL_BF16 __ushort_as_bfloat16((unsigned short)0x7F7Fu)
#define CUDART_NEG_ZERO_BF16 __ushort_as_bfloat16((unsigned short)0x8000u)
#define CUDART_ZERO_BF16 __ushort_as_bfloat16((unsigned short)0x0000u)
#define CUDART_ONE_BF16 __ushort_as_bfloat16((unsigned short)0x3F80u)

// ----------------------------------------------------------------- bit casts
__QGPU_HD short __bfloat16_as_short(const __nv_bfloat16 h) { return (short)h.__x; }
__QGPU_HD unsigned short __bfloat16_as_ushort(const __nv_bfloat16 h) { return h.__x; }
__QGPU_HD __nv_bfloat16 __short_as_bfloat16(const short i) { return __qgpu_bf_of((unsigned short)i); }
__QGPU_HD __nv_bfloat16 __ushort_as_bfloat16(const unsigned short i) { return __qgpu_bf_of(i); }

// -------------------------------------------------------------- conversions
// From f32: `cvt.RND.bf16.f32` (RND rn, rz, rm for _rd, rp for _ru; a NaN
// gives 0x7FFF).
#define __QGPU_F2BF(Name, Rnd)                                                  \
  __QGPU_HD __nv_bfloat16 Name(const float f) {                                 \
    __nv_bfloat16 r;                                                            \
    asm("cvt." #Rnd ".bf16.f32 %0, %1;" : "=h"(r.__x) : "f"(f));                \
    return r;                                                                   \
  }
__QGPU_F2BF(__float2bfloat16_rn, rn)
__QGPU_F2BF(__float2bfloat16_rz, rz)
__QGPU_F2BF(__float2bfloat16_rd, rm)
__QGPU_F2BF(__float2bfloat16_ru, rp)
#undef __QGPU_F2BF
__QGPU_HD __nv_bfloat16 __float2bfloat16(const float f) { return __float2bfloat16_rn(f); }

// To f32: exact, the bits shifted up (a NaN keeps its bits).
__QGPU_HD float __bfloat162float(const __nv_bfloat16 h) { return __qgpu_bf_wide(h); }

// From f64 and the wide integers: the value rounded to f32 *to odd*
// (`cvt.rz.f32.TYPE`, its last bit set when that was inexact, which the
// conversion back `cvt.TYPE.f32` tells), then `cvt.RND.bf16.f32`.  f32's 24
// bits against bfloat16's 8 make the second rounding the correctly rounded
// one in every mode (an f32 overflow under .rz is the largest f32, which
// rounds on as the value would).  16-bit integers are exact in f32.
__QGPU_HD float __qgpu_odd(float z, bool inexact) {
  return inexact ? __builtin_bit_cast(float, __builtin_bit_cast(unsigned int, z) | 1u) : z;
}
__QGPU_HD float __qgpu_f32_odd(const double d) {
  float z;
  double back;
  asm("cvt.rz.f32.f64 %0, %1;" : "=f"(z) : "d"(d));
  asm("cvt.f64.f32 %0, %1;" : "=d"(back) : "f"(z));
  return __qgpu_odd(z, !(back == d));  // a NaN stays one
}
#define __QGPU_F32_ODD(Type, T, C)                                              \
  __QGPU_HD float __qgpu_f32_odd(const T v) {                                   \
    float z;                                                                    \
    T back;                                                                     \
    asm("cvt.rz.f32." #Type " %0, %1;" : "=f"(z) : C(v));                       \
    asm("cvt.rzi." #Type ".f32 %0, %1;" : "=" C(back) : "f"(z));                \
    return __qgpu_odd(z, back != v);                                            \
  }
__QGPU_F32_ODD(s32, int, "r")
__QGPU_F32_ODD(u32, unsigned int, "r")
__QGPU_F32_ODD(s64, long long, "l")
__QGPU_F32_ODD(u64, unsigned long long, "l")
#undef __QGPU_F32_ODD
__QGPU_HD float __qgpu_f32_odd(const short v) { return (float)v; }
__QGPU_HD float __qgpu_f32_odd(const unsigned short v) { return (float)v; }
#define __QGPU_TO_BF(Name, Rnd, T)                                              \
  __QGPU_HD __nv_bfloat16 Name(const T v) {                                     \
    __nv_bfloat16 r;                                                            \
    asm("cvt." #Rnd ".bf16.f32 %0, %1;" : "=h"(r.__x) : "f"(__qgpu_f32_odd(v))); \
    return r;                                                                   \
  }
#define __QGPU_TO_BF_4(Prefix, T)                                               \
  __QGPU_TO_BF(Prefix##_rn, rn, T)                                              \
  __QGPU_TO_BF(Prefix##_rz, rz, T)                                              \
  __QGPU_TO_BF(Prefix##_rd, rm, T)                                              \
  __QGPU_TO_BF(Prefix##_ru, rp, T)
__QGPU_TO_BF_4(__int2bfloat16, int)
__QGPU_TO_BF_4(__uint2bfloat16, unsigned int)
__QGPU_TO_BF_4(__short2bfloat16, short)
__QGPU_TO_BF_4(__ushort2bfloat16, unsigned short)
__QGPU_TO_BF_4(__ll2bfloat16, long long)
__QGPU_TO_BF_4(__ull2bfloat16, unsigned long long)
__QGPU_TO_BF(__double2bfloat16, rn, double)
#undef __QGPU_TO_BF_4
#undef __QGPU_TO_BF

// To integers: the exact f32 through `cvt.RNDi.TYPE.f32`, saturating to the
// type's range (a NaN gives 0).
#define __QGPU_FROM_BF(Name, Rnd, T, C)                                         \
  __QGPU_HD T Name(const __nv_bfloat16 h) {                                     \
    T r;                                                                        \
    asm("cvt." #Rnd ".f32 %0, %1;" : C(r) : "f"(__qgpu_bf_wide(h)));            \
    return r;                                                                   \
  }
#define __QGPU_FROM_BF_4(Prefix, Type, T, C)                                    \
  __QGPU_FROM_BF(Prefix##_rn, rni.Type, T, C)                                   \
  __QGPU_FROM_BF(Prefix##_rz, rzi.Type, T, C)                                   \
  __QGPU_FROM_BF(Prefix##_rd, rmi.Type, T, C)                                   \
  __QGPU_FROM_BF(Prefix##_ru, rpi.Type, T, C)
__QGPU_FROM_BF_4(__bfloat162int, s32, int, "=r")
__QGPU_FROM_BF_4(__bfloat162uint, u32, unsigned int, "=r")
__QGPU_FROM_BF_4(__bfloat162short, s16, short, "=h")
__QGPU_FROM_BF_4(__bfloat162ushort, u16, unsigned short, "=h")
__QGPU_FROM_BF_4(__bfloat162ll, s64, long long, "=l")
__QGPU_FROM_BF_4(__bfloat162ull, u64, unsigned long long, "=l")
#undef __QGPU_FROM_BF_4
#undef __QGPU_FROM_BF
// 8-bit results in a 16-bit register (PTX's cvt sign- or zero-extends them).
__QGPU_HD signed char __bfloat162char_rz(const __nv_bfloat16 h) {
  short r;
  asm("cvt.rzi.s8.f32 %0, %1;" : "=h"(r) : "f"(__qgpu_bf_wide(h)));
  return (signed char)r;
}
__QGPU_HD unsigned char __bfloat162uchar_rz(const __nv_bfloat16 h) {
  unsigned short r;
  asm("cvt.rzi.u8.f32 %0, %1;" : "=h"(r) : "f"(__qgpu_bf_wide(h)));
  return (unsigned char)r;
}

// Pairs.  `cvt.rn.bf16x2.f32 d, a, b` puts a in the high half, b in the low.
__QGPU_HD __nv_bfloat162 __halves2bfloat162(const __nv_bfloat16 a, const __nv_bfloat16 b) {
  return __nv_bfloat162(a, b);
}
__QGPU_HD __nv_bfloat162 make_bfloat162(const __nv_bfloat16 a, const __nv_bfloat16 b) { return __nv_bfloat162(a, b); }
__QGPU_HD __nv_bfloat162 __bfloat162bfloat162(const __nv_bfloat16 a) { return __nv_bfloat162(a, a); }
__QGPU_HD __nv_bfloat162 __floats2bfloat162_rn(const float a, const float b) {
  unsigned int r;
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(b), "f"(a));
  return __qgpu_bf2_of(r);
}
__QGPU_HD __nv_bfloat162 __float2bfloat162_rn(const float f) { return __floats2bfloat162_rn(f, f); }
__QGPU_HD __nv_bfloat162 __float22bfloat162_rn(const float2 f) { return __floats2bfloat162_rn(f.x, f.y); }
__QGPU_HD float __low2float(const __nv_bfloat162 h) { return __bfloat162float(h.x); }
__QGPU_HD float __high2float(const __nv_bfloat162 h) { return __bfloat162float(h.y); }
__QGPU_HD float2 __bfloat1622float2(const __nv_bfloat162 h) { return float2{__low2float(h), __high2float(h)}; }
__QGPU_HD __nv_bfloat16 __low2bfloat16(const __nv_bfloat162 h) { return h.x; }
__QGPU_HD __nv_bfloat16 __high2bfloat16(const __nv_bfloat162 h) { return h.y; }
__QGPU_HD __nv_bfloat162 __low2bfloat162(const __nv_bfloat162 h) { return __nv_bfloat162(h.x, h.x); }
__QGPU_HD __nv_bfloat162 __high2bfloat162(const __nv_bfloat162 h) { return __nv_bfloat162(h.y, h.y); }
__QGPU_HD __nv_bfloat162 __lows2bfloat162(const __nv_bfloat162 a, const __nv_bfloat162 b) {
  return __nv_bfloat162(a.x, b.x);
}
__QGPU_HD __nv_bfloat162 __highs2bfloat162(const __nv_bfloat162 a, const __nv_bfloat162 b) {
  return __nv_bfloat162(a.y, b.y);
}
__QGPU_HD __nv_bfloat162 __lowhigh2highlow(const __nv_bfloat162 h) { return __nv_bfloat162(h.y, h.x); }

// ---------------------------------------------------------------- arithmetic
// `add.rn.bf16`, `sub.rn.bf16`, `mul.rn.bf16`, `fma.rn.bf16` and their
// `.bf16x2` forms: the exact result rounded once to nearest even.  The plain
// and the _rn names are the same instructions.
#define __QGPU_BF_BINARY(Name, Name2, Instr)                                    \
  __QGPU_HD __nv_bfloat16 Name(const __nv_bfloat16 a, const __nv_bfloat16 b) {  \
    __nv_bfloat16 r;                                                            \
    asm(Instr ".bf16 %0, %1, %2;" : "=h"(r.__x) : "h"(a.__x), "h"(b.__x));      \
    return r;                                                                   \
  }                                                                             \
  __QGPU_HD __nv_bfloat162 Name2(const __nv_bfloat162 a, const __nv_bfloat162 b) { \
    unsigned int r;                                                             \
    asm(Instr ".bf16x2 %0, %1, %2;" : "=r"(r) : "r"(__qgpu_bf2_bits(a)), "r"(__qgpu_bf2_bits(b))); \
    return __qgpu_bf2_of(r);                                                    \
  }
__QGPU_BF_BINARY(__hadd, __hadd2, "add.rn")
__QGPU_BF_BINARY(__hsub, __hsub2, "sub.rn")
__QGPU_BF_BINARY(__hmul, __hmul2, "mul.rn")
__QGPU_BF_BINARY(__hadd_rn, __hadd2_rn, "add.rn")
__QGPU_BF_BINARY(__hsub_rn, __hsub2_rn, "sub.rn")
__QGPU_BF_BINARY(__hmul_rn, __hmul2_rn, "mul.rn")
#undef __QGPU_BF_BINARY
__QGPU_HD __nv_bfloat16 __hfma(const __nv_bfloat16 a, const __nv_bfloat16 b, const __nv_bfloat16 c) {
  __nv_bfloat16 r;
  asm("fma.rn.bf16 %0, %1, %2, %3;" : "=h"(r.__x) : "h"(a.__x), "h"(b.__x), "h"(c.__x));
  return r;
}
__QGPU_HD __nv_bfloat162 __hfma2(const __nv_bfloat162 a, const __nv_bfloat162 b, const __nv_bfloat162 c) {
  unsigned int r;
  asm("fma.rn.bf16x2 %0, %1, %2, %3;"
      : "=r"(r)
      : "r"(__qgpu_bf2_bits(a)), "r"(__qgpu_bf2_bits(b)), "r"(__qgpu_bf2_bits(c)));
  return __qgpu_bf2_of(r);
}

// The _sat forms: the rounded result clamped to [0, 1], a NaN and -0 giving
// +0 (the same as clamping before the rounding: 0 and 1 are bfloat16 values
// and rounding is monotonic).  PTX has no .sat on bf16 arithmetic.
__QGPU_HD __nv_bfloat16 __qgpu_bf_sat(const __nv_bfloat16 h) {
  return __qgpu_bf_of((h.__x & 0x8000u) || h.__x > 0x7F80u ? 0 : h.__x > 0x3F80u ? 0x3F80u : h.__x);
}
__QGPU_HD __nv_bfloat162 __qgpu_bf2_sat(const __nv_bfloat162 h) {
  return __nv_bfloat162(__qgpu_bf_sat(h.x), __qgpu_bf_sat(h.y));
}
__QGPU_HD __nv_bfloat16 __hadd_sat(const __nv_bfloat16 a, const __nv_bfloat16 b) { return __qgpu_bf_sat(__hadd(a, b)); }
__QGPU_HD __nv_bfloat16 __hsub_sat(const __nv_bfloat16 a, const __nv_bfloat16 b) { return __qgpu_bf_sat(__hsub(a, b)); }
__QGPU_HD __nv_bfloat16 __hmul_sat(const __nv_bfloat16 a, const __nv_bfloat16 b) { return __qgpu_bf_sat(__hmul(a, b)); }
__QGPU_HD __nv_bfloat16 __hfma_sat(const __nv_bfloat16 a, const __nv_bfloat16 b, const __nv_bfloat16 c) {
  return __qgpu_bf_sat(__hfma(a, b, c));
}
__QGPU_HD __nv_bfloat162 __hadd2_sat(const __nv_bfloat162 a, const __nv_bfloat162 b) {
  return __qgpu_bf2_sat(__hadd2(a, b));
}
__QGPU_HD __nv_bfloat162 __hsub2_sat(const __nv_bfloat162 a, const __nv_bfloat162 b) {
  return __qgpu_bf2_sat(__hsub2(a, b));
}
__QGPU_HD __nv_bfloat162 __hmul2_sat(const __nv_bfloat162 a, const __nv_bfloat162 b) {
  return __qgpu_bf2_sat(__hmul2(a, b));
}
__QGPU_HD __nv_bfloat162 __hfma2_sat(const __nv_bfloat162 a, const __nv_bfloat162 b, const __nv_bfloat162 c) {
  return __qgpu_bf2_sat(__hfma2(a, b, c));
}

// Division: the quotient of the exact f32 values, correctly rounded there
// and then to bfloat16, which is the correctly rounded quotient (24 >= 2 * 8
// + 2 bits, so the double rounding is innocuous).
__QGPU_HD __nv_bfloat16 __hdiv(const __nv_bfloat16 a, const __nv_bfloat16 b) {
  return __float2bfloat16_rn(__qgpu_bf_wide(a) / __qgpu_bf_wide(b));
}
__QGPU_HD __nv_bfloat16 __hdiv_rn(const __nv_bfloat16 a, const __nv_bfloat16 b) { return __hdiv(a, b); }
__QGPU_HD __nv_bfloat162 __h2div(const __nv_bfloat162 a, const __nv_bfloat162 b) {
  return __nv_bfloat162(__hdiv(a.x, b.x), __hdiv(a.y, b.y));
}

// neg and abs on the sign bit (PTX's neg/abs.bf16 are sm_80's); a NaN gives
// the canonical 0x7FFF, as the f16 forms do.
__QGPU_HD __nv_bfloat16 __hneg(const __nv_bfloat16 a) {
  return __qgpu_bf_of((a.__x & 0x7FFFu) > 0x7F80u ? 0x7FFFu : a.__x ^ 0x8000u);
}
__QGPU_HD __nv_bfloat16 __habs(const __nv_bfloat16 a) {
  return __qgpu_bf_of((a.__x & 0x7FFFu) > 0x7F80u ? 0x7FFFu : a.__x & 0x7FFFu);
}
__QGPU_HD __nv_bfloat162 __hneg2(const __nv_bfloat162 a) { return __nv_bfloat162(__hneg(a.x), __hneg(a.y)); }
__QGPU_HD __nv_bfloat162 __habs2(const __nv_bfloat162 a) { return __nv_bfloat162(__habs(a.x), __habs(a.y)); }

// ---------------------------------------------------------------- comparisons
// Scalar: `setp.OP.f32` of the exact f32 values into a scoped predicate, then
// 0 or 1 (PTX's setp.bf16 is sm_90's).  Pairs: each half compared so, 1.0 or
// 0.0 per half (0xFFFF or 0 for the _mask forms); the __hb forms hold when
// both halves do.
#define __QGPU_BF_COMPARE(Op)                                                   \
  __QGPU_HD bool __h##Op(const __nv_bfloat16 a, const __nv_bfloat16 b) {        \
    unsigned short r;                                                           \
    asm("{ .reg .pred __qgpu_p;\n\tsetp." #Op ".f32 __qgpu_p, %1, %2;\n\t"      \
        "selp.u16 %0, 1, 0, __qgpu_p;\n\t}"                                     \
        : "=h"(r)                                                               \
        : "f"(__qgpu_bf_wide(a)), "f"(__qgpu_bf_wide(b)));                      \
    return r != 0;                                                              \
  }                                                                             \
  __QGPU_HD unsigned int __h##Op##2_mask(const __nv_bfloat162 a, const __nv_bfloat162 b) { \
    return (__h##Op(a.x, b.x) ? 0xFFFFu : 0u) | (__h##Op(a.y, b.y) ? 0xFFFF0000u : 0u); \
  }                                                                             \
  __QGPU_HD __nv_bfloat162 __h##Op##2(const __nv_bfloat162 a, const __nv_bfloat162 b) { \
    return __qgpu_bf2_of(__h##Op##2_mask(a, b) & 0x3F803F80u);                  \
  }                                                                             \
  __QGPU_HD bool __hb##Op##2(const __nv_bfloat162 a, const __nv_bfloat162 b) {  \
    return __h##Op(a.x, b.x) && __h##Op(a.y, b.y);                              \
  }
__QGPU_BF_COMPARE(eq)
__QGPU_BF_COMPARE(ne)
__QGPU_BF_COMPARE(lt)
__QGPU_BF_COMPARE(le)
__QGPU_BF_COMPARE(gt)
__QGPU_BF_COMPARE(ge)
__QGPU_BF_COMPARE(equ)
__QGPU_BF_COMPARE(neu)
__QGPU_BF_COMPARE(ltu)
__QGPU_BF_COMPARE(leu)
__QGPU_BF_COMPARE(gtu)
__QGPU_BF_COMPARE(geu)
#undef __QGPU_BF_COMPARE

__QGPU_HD bool __hisnan(const __nv_bfloat16 a) { return (a.__x & 0x7FFFu) > 0x7F80u; }
__QGPU_HD __nv_bfloat162 __hisnan2(const __nv_bfloat162 a) {
  return __qgpu_bf2_of((__hisnan(a.x) ? 0x3F80u : 0u) | (__hisnan(a.y) ? 0x3F800000u : 0u));
}
// -1 for -inf, 1 for +inf, else 0.
__QGPU_HD int __hisinf(const __nv_bfloat16 a) { return a.__x == 0xFF80u ? -1 : a.__x == 0x7F80u ? 1 : 0; }

// max and min: `max.f32`/`min.f32` of the exact f32 values, whose high half is
// the result: a NaN operand gives the other one, two NaNs the canonical NaN
// (0x7FFFFFFF, so 0x7FFF), and +0 is above -0.  The _nan forms give the
// canonical NaN when either operand is one.
__QGPU_HD __nv_bfloat16 __hmax(const __nv_bfloat16 a, const __nv_bfloat16 b) {
  float r;
  asm("max.f32 %0, %1, %2;" : "=f"(r) : "f"(__qgpu_bf_wide(a)), "f"(__qgpu_bf_wide(b)));
  return __qgpu_bf_of((unsigned short)(__builtin_bit_cast(unsigned int, r) >> 16));
}
__QGPU_HD __nv_bfloat16 __hmin(const __nv_bfloat16 a, const __nv_bfloat16 b) {
  float r;
  asm("min.f32 %0, %1, %2;" : "=f"(r) : "f"(__qgpu_bf_wide(a)), "f"(__qgpu_bf_wide(b)));
  return __qgpu_bf_of((unsigned short)(__builtin_bit_cast(unsigned int, r) >> 16));
}
__QGPU_HD __nv_bfloat16 __hmax_nan(const __nv_bfloat16 a, const __nv_bfloat16 b) {
  return __hisnan(a) || __hisnan(b) ? CUDART_NAN_BF16 : __hmax(a, b);
}
__QGPU_HD __nv_bfloat16 __hmin_nan(const __nv_bfloat16 a, const __nv_bfloat16 b) {
  return __hisnan(a) || __hisnan(b) ? CUDART_NAN_BF16 : __hmin(a, b);
}
__QGPU_HD __nv_bfloat162 __hmax2(const __nv_bfloat162 a, const __nv_bfloat162 b) {
  return __nv_bfloat162(__hmax(a.x, b.x), __hmax(a.y, b.y));
}
__QGPU_HD __nv_bfloat162 __hmin2(const __nv_bfloat162 a, const __nv_bfloat162 b) {
  return __nv_bfloat162(__hmin(a.x, b.x), __hmin(a.y, b.y));
}
__QGPU_HD __nv_bfloat162 __hmax2_nan(const __nv_bfloat162 a, const __nv_bfloat162 b) {
  return __nv_bfloat162(__hmax_nan(a.x, b.x), __hmax_nan(a.y, b.y));
}
__QGPU_HD __nv_bfloat162 __hmin2_nan(const __nv_bfloat162 a, const __nv_bfloat162 b) {
  return __nv_bfloat162(__hmin_nan(a.x, b.x), __hmin_nan(a.y, b.y));
}

// ------------------------------------------------------------ math functions
// Through f32: sqrt, the reciprocal and the roundings to integers are exact
// there or correctly rounded (so correctly rounded to bfloat16, 24 >= 2 * 8
// + 2); the others use the f32 approximations (ex2, lg2, sin, cos, rsqrt
// .approx) and may differ from the correctly rounded bfloat16 in the last bit.
#define __QGPU_BF_MATH(Name, Expr)                                              \
  __QGPU_HD __nv_bfloat16 h##Name(const __nv_bfloat16 a) {                      \
    const float x = __qgpu_bf_wide(a);                                          \
    return __float2bfloat16_rn(Expr);                                           \
  }                                                                             \
  __QGPU_HD __nv_bfloat162 h2##Name(const __nv_bfloat162 a) {                   \
    return __nv_bfloat162(h##Name(a.x), h##Name(a.y));                          \
  }
__QGPU_BF_MATH(sqrt, __builtin_sqrtf(x))
__QGPU_BF_MATH(tanh, __qgpu_tanh_approx(x))
__QGPU_BF_MATH(tanh_approx, __qgpu_tanh_approx(x))  // at sm_75 CUDA's is htanh
__QGPU_BF_MATH(rsqrt, __nvvm_rsqrt_approx_f(x))
__QGPU_BF_MATH(rcp, 1.0f / x)
__QGPU_BF_MATH(exp, __nvvm_ex2_approx_f(x * 1.44269504f))
__QGPU_BF_MATH(exp2, __nvvm_ex2_approx_f(x))
__QGPU_BF_MATH(exp10, __nvvm_ex2_approx_f(x * 3.32192809f))
__QGPU_BF_MATH(log, __nvvm_lg2_approx_f(x) * 0.693147181f)
__QGPU_BF_MATH(log2, __nvvm_lg2_approx_f(x))
__QGPU_BF_MATH(log10, __nvvm_lg2_approx_f(x) * 0.301029996f)
__QGPU_BF_MATH(sin, __nvvm_sin_approx_f(x))
__QGPU_BF_MATH(cos, __nvvm_cos_approx_f(x))
__QGPU_BF_MATH(trunc, __builtin_truncf(x))
__QGPU_BF_MATH(ceil, __builtin_ceilf(x))
__QGPU_BF_MATH(floor, __builtin_floorf(x))
__QGPU_BF_MATH(rint, __builtin_rintf(x))
#undef __QGPU_BF_MATH

// -------------------------------------------------- the members' conversions
__QGPU_MEMBER __nv_bfloat16::__nv_bfloat16(float f) : __x(__float2bfloat16_rn(f).__x) {}
__QGPU_MEMBER __nv_bfloat16::__nv_bfloat16(double f) : __x(__double2bfloat16(f).__x) {}
__QGPU_MEMBER __nv_bfloat16::__nv_bfloat16(short v) : __x(__short2bfloat16_rn(v).__x) {}
__QGPU_MEMBER __nv_bfloat16::__nv_bfloat16(unsigned short v) : __x(__ushort2bfloat16_rn(v).__x) {}
__QGPU_MEMBER __nv_bfloat16::__nv_bfloat16(int v) : __x(__int2bfloat16_rn(v).__x) {}
__QGPU_MEMBER __nv_bfloat16::__nv_bfloat16(unsigned int v) : __x(__uint2bfloat16_rn(v).__x) {}
__QGPU_MEMBER __nv_bfloat16::__nv_bfloat16(long v) : __x(__ll2bfloat16_rn(v).__x) {}
__QGPU_MEMBER __nv_bfloat16::__nv_bfloat16(unsigned long v) : __x(__ull2bfloat16_rn(v).__x) {}
__QGPU_MEMBER __nv_bfloat16::__nv_bfloat16(long long v) : __x(__ll2bfloat16_rn(v).__x) {}
__QGPU_MEMBER __nv_bfloat16::__nv_bfloat16(unsigned long long v) : __x(__ull2bfloat16_rn(v).__x) {}
__QGPU_MEMBER __nv_bfloat16::operator float() const { return __bfloat162float(*this); }
__QGPU_MEMBER __nv_bfloat16::operator signed char() const { return __bfloat162char_rz(*this); }
__QGPU_MEMBER __nv_bfloat16::operator unsigned char() const { return __bfloat162uchar_rz(*this); }
__QGPU_MEMBER __nv_bfloat16::operator char() const { return (char)__bfloat162char_rz(*this); }
__QGPU_MEMBER __nv_bfloat16::operator short() const { return __bfloat162short_rz(*this); }
__QGPU_MEMBER __nv_bfloat16::operator unsigned short() const { return __bfloat162ushort_rz(*this); }
__QGPU_MEMBER __nv_bfloat16::operator int() const { return __bfloat162int_rz(*this); }
__QGPU_MEMBER __nv_bfloat16::operator unsigned int() const { return __bfloat162uint_rz(*this); }
__QGPU_MEMBER __nv_bfloat16::operator long() const { return __bfloat162ll_rz(*this); }
__QGPU_MEMBER __nv_bfloat16::operator unsigned long() const { return __bfloat162ull_rz(*this); }
__QGPU_MEMBER __nv_bfloat16::operator long long() const { return __bfloat162ll_rz(*this); }
__QGPU_MEMBER __nv_bfloat16::operator unsigned long long() const { return __bfloat162ull_rz(*this); }

// ----------------------------------------------------------------- operators
__QGPU_HD __nv_bfloat16 operator+(const __nv_bfloat16& a, const __nv_bfloat16& b) { return __hadd(a, b); }
__QGPU_HD __nv_bfloat16 operator-(const __nv_bfloat16& a, const __nv_bfloat16& b) { return __hsub(a, b); }
__QGPU_HD __nv_bfloat16 operator*(const __nv_bfloat16& a, const __nv_bfloat16& b) { return __hmul(a, b); }
__QGPU_HD __nv_bfloat16 operator/(const __nv_bfloat16& a, const __nv_bfloat16& b) { return __hdiv(a, b); }
__QGPU_HD __nv_bfloat16& operator+=(__nv_bfloat16& a, const __nv_bfloat16& b) { return a = __hadd(a, b); }
__QGPU_HD __nv_bfloat16& operator-=(__nv_bfloat16& a, const __nv_bfloat16& b) { return a = __hsub(a, b); }
__QGPU_HD __nv_bfloat16& operator*=(__nv_bfloat16& a, const __nv_bfloat16& b) { return a = __hmul(a, b); }
__QGPU_HD __nv_bfloat16& operator/=(__nv_bfloat16& a, const __nv_bfloat16& b) { return a = __hdiv(a, b); }
__QGPU_HD __nv_bfloat16& operator++(__nv_bfloat16& h) { return h = __hadd(h, CUDART_ONE_BF16); }
__QGPU_HD __nv_bfloat16& operator--(__nv_bfloat16& h) { return h = __hsub(h, CUDART_ONE_BF16); }
__QGPU_HD __nv_bfloat16 operator++(__nv_bfloat16& h, int) {
  const __nv_bfloat16 old = h;
  h = __hadd(h, CUDART_ONE_BF16);
  return old;
}
__QGPU_HD __nv_bfloat16 operator--(__nv_bfloat16& h, int) {
  const __nv_bfloat16 old = h;
  h = __hsub(h, CUDART_ONE_BF16);
  return old;
}
__QGPU_HD __nv_bfloat16 operator+(const __nv_bfloat16& h) { return h; }
__QGPU_HD __nv_bfloat16 operator-(const __nv_bfloat16& h) { return __hneg(h); }
// != is unordered (true when either is a NaN), the others ordered, as in C++.
__QGPU_HD bool operator==(const __nv_bfloat16& a, const __nv_bfloat16& b) { return __heq(a, b); }
__QGPU_HD bool operator!=(const __nv_bfloat16& a, const __nv_bfloat16& b) { return __hneu(a, b); }
__QGPU_HD bool operator<(const __nv_bfloat16& a, const __nv_bfloat16& b) { return __hlt(a, b); }
__QGPU_HD bool operator<=(const __nv_bfloat16& a, const __nv_bfloat16& b) { return __hle(a, b); }
__QGPU_HD bool operator>(const __nv_bfloat16& a, const __nv_bfloat16& b) { return __hgt(a, b); }
__QGPU_HD bool operator>=(const __nv_bfloat16& a, const __nv_bfloat16& b) { return __hge(a, b); }

__QGPU_HD __nv_bfloat162 operator+(const __nv_bfloat162& a, const __nv_bfloat162& b) { return __hadd2(a, b); }
__QGPU_HD __nv_bfloat162 operator-(const __nv_bfloat162& a, const __nv_bfloat162& b) { return __hsub2(a, b); }
__QGPU_HD __nv_bfloat162 operator*(const __nv_bfloat162& a, const __nv_bfloat162& b) { return __hmul2(a, b); }
__QGPU_HD __nv_bfloat162 operator/(const __nv_bfloat162& a, const __nv_bfloat162& b) { return __h2div(a, b); }
__QGPU_HD __nv_bfloat162& operator+=(__nv_bfloat162& a, const __nv_bfloat162& b) { return a = __hadd2(a, b); }
__QGPU_HD __nv_bfloat162& operator-=(__nv_bfloat162& a, const __nv_bfloat162& b) { return a = __hsub2(a, b); }
__QGPU_HD __nv_bfloat162& operator*=(__nv_bfloat162& a, const __nv_bfloat162& b) { return a = __hmul2(a, b); }
__QGPU_HD __nv_bfloat162& operator/=(__nv_bfloat162& a, const __nv_bfloat162& b) { return a = __h2div(a, b); }
__QGPU_HD __nv_bfloat162& operator++(__nv_bfloat162& h) {
  return h = __hadd2(h, __bfloat162bfloat162(CUDART_ONE_BF16));
}
__QGPU_HD __nv_bfloat162& operator--(__nv_bfloat162& h) {
  return h = __hsub2(h, __bfloat162bfloat162(CUDART_ONE_BF16));
}
__QGPU_HD __nv_bfloat162 operator++(__nv_bfloat162& h, int) {
  const __nv_bfloat162 old = h;
  h = __hadd2(h, __bfloat162bfloat162(CUDART_ONE_BF16));
  return old;
}
__QGPU_HD __nv_bfloat162 operator--(__nv_bfloat162& h, int) {
  const __nv_bfloat162 old = h;
  h = __hsub2(h, __bfloat162bfloat162(CUDART_ONE_BF16));
  return old;
}
__QGPU_HD __nv_bfloat162 operator+(const __nv_bfloat162& h) { return h; }
__QGPU_HD __nv_bfloat162 operator-(const __nv_bfloat162& h) { return __hneg2(h); }
__QGPU_HD bool operator==(const __nv_bfloat162& a, const __nv_bfloat162& b) { return __hbeq2(a, b); }
__QGPU_HD bool operator!=(const __nv_bfloat162& a, const __nv_bfloat162& b) { return __hbneu2(a, b); }
__QGPU_HD bool operator<(const __nv_bfloat162& a, const __nv_bfloat162& b) { return __hblt2(a, b); }
__QGPU_HD bool operator<=(const __nv_bfloat162& a, const __nv_bfloat162& b) { return __hble2(a, b); }
__QGPU_HD bool operator>(const __nv_bfloat162& a, const __nv_bfloat162& b) { return __hbgt2(a, b); }
__QGPU_HD bool operator>=(const __nv_bfloat162& a, const __nv_bfloat162& b) { return __hbge2(a, b); }

// ----------------------------------------------------------- fused forms
// As cuda_fp16.h's: __hfma_relu is the fma then the larger of it and +0, a
// NaN kept as the canonical one; __hcmadd is CUDA's four fmas.
__QGPU_HD __nv_bfloat16 __hfma_relu(const __nv_bfloat16 a, const __nv_bfloat16 b, const __nv_bfloat16 c) {
  return __hmax_nan(__hfma(a, b, c), CUDART_ZERO_BF16);
}
__QGPU_HD __nv_bfloat162 __hfma2_relu(const __nv_bfloat162 a, const __nv_bfloat162 b, const __nv_bfloat162 c) {
  return __hmax2_nan(__hfma2(a, b, c), __nv_bfloat162(CUDART_ZERO_BF16, CUDART_ZERO_BF16));
}
__QGPU_HD __nv_bfloat162 __hcmadd(const __nv_bfloat162 a, const __nv_bfloat162 b, const __nv_bfloat162 c) {
  const __nv_bfloat16 re = __hfma(__hneg(a.y), b.y, __hfma(a.x, b.x, c.x));
  const __nv_bfloat16 im = __hfma(a.y, b.x, __hfma(a.x, b.y, c.y));
  return __nv_bfloat162(re, im);
}

// ------------------------------------------------ bfloat16 and binary16
// Each way through f32, which holds both exactly: one rounding to nearest.
__QGPU_MEMBER __half::__half(const __nv_bfloat16 f) : __x(__float2half_rn(__qgpu_bf_wide(f)).__x) {}
__QGPU_MEMBER __nv_bfloat16::__nv_bfloat16(const __half f) : __x(__float2bfloat16_rn(__half2float(f)).__x) {}

// Loads and stores with a cache hint, as cuda_fp16.h's.
__QGPU_H_LDST(__nv_bfloat16)
__QGPU_H_LDST(__nv_bfloat162)
#undef __QGPU_H_LDST

// ------------------------------------------------------------- warp shuffles
// A __nv_bfloat162 moves as its 32-bit word, a __nv_bfloat16 in the low half
// of one.
#define __QGPU_BF_SHFL(Name, Lane)                                              \
  static __device__ __inline__ __nv_bfloat162 Name(unsigned int m, __nv_bfloat162 v, Lane l, int width = warpSize) { \
    return __qgpu_bf2_of(Name(m, __qgpu_bf2_bits(v), l, width));                \
  }                                                                             \
  static __device__ __inline__ __nv_bfloat16 Name(unsigned int m, __nv_bfloat16 v, Lane l, int width = warpSize) { \
    return __qgpu_bf_of((unsigned short)Name(m, (unsigned int)v.__x, l, width)); \
  }
__QGPU_BF_SHFL(__shfl_sync, int)
__QGPU_BF_SHFL(__shfl_up_sync, unsigned int)
__QGPU_BF_SHFL(__shfl_down_sync, unsigned int)
__QGPU_BF_SHFL(__shfl_xor_sync, int)
#undef __QGPU_BF_SHFL

// ------------------------------------------------------------------- atomics
// PTX's atom.add.bf16 and .bf16x2 are sm_90's: a compare-and-swap loop on the
// 32-bit word holding the value (`atom.cas.b32`), the sum rounded as __hadd.
static __device__ __inline__ __nv_bfloat162 atomicAdd(__nv_bfloat162* p, __nv_bfloat162 v) {
  unsigned int* const w = (unsigned int*)p;
  unsigned int old = *w, assumed;
  do {
    assumed = old;
    old = atomicCAS(w, assumed, __qgpu_bf2_bits(__hadd2(__qgpu_bf2_of(assumed), v)));
  } while (old != assumed);
  return __qgpu_bf2_of(old);
}
static __device__ __inline__ __nv_bfloat16 atomicAdd(__nv_bfloat16* p, __nv_bfloat16 v) {
  unsigned int* const w = (unsigned int*)((unsigned long long)p & ~3ull);
  const unsigned int shift = ((unsigned int)(unsigned long long)p & 2u) * 8u;
  unsigned int old = *w, assumed;
  do {
    assumed = old;
    const unsigned int sum = __hadd(__qgpu_bf_of((unsigned short)(assumed >> shift)), v).__x;
    old = atomicCAS(w, assumed, (assumed & ~(0xFFFFu << shift)) | sum << shift);
  } while (old != assumed);
  return __qgpu_bf_of((unsigned short)(old >> shift));
}

#undef __QGPU_HD
#undef __QGPU_MEMBER
