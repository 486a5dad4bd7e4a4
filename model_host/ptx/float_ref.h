// Floating point as sm_75 computes it (docs/isa.md, section 11), on raw bits.
//
// `float_mods` reads an instruction's rounding, flush-to-zero, saturation and
// precision suffixes from its mnemonic.  `fref` is the reference arithmetic
// that the PTX-level interpreter uses: the host's IEEE-754 arithmetic, with the
// rounding mode set for each operation (fesetround) and flush-to-zero and NaN
// results applied explicitly.  It shares nothing with the lowering's software
// floating point (model_host/lower/softfloat.cpp), which the tests check
// against it.
#pragma once

#include <cstdint>

#include "model_host/ptx/ir.h"

namespace qgpu::ptx {

// .rn .rz .rm .rp (to the nearest even, toward zero, down, up), and the
// round-to-integer forms of cvt .rni .rzi .rmi .rpi.
enum class Rnd : uint8_t { None, Rn, Rz, Rm, Rp, Rni, Rzi, Rmi, Rpi };
// testp's property.
enum class TestpKind : uint8_t { None, Finite, Infinite, Number, NotANumber, Normal, Subnormal };

struct FloatMods {
  Rnd rnd = Rnd::None;
  bool ftz = false, sat = false, approx = false, full = false;
  TestpKind testp = TestpKind::None;
};
FloatMods float_mods(const Instr& in);

// The rounding of a float-to-float or integer-to-float result (.rn when none
// is given); the integer forms map to their float counterparts.
Rnd base_rounding(Rnd r);

namespace fref {

constexpr uint32_t kNaN32 = 0x7FFFFFFFu;  // the canonical NaN f32 arithmetic returns

// add, sub, mul and fma .rn without .ftz or .sat, inline: the host's IEEE
// operation in the host's rounding mode, which the caller guarantees is to
// nearest (the default; the functions below set another only around one
// operation), and the canonical NaN.  add, sub, mul and fma below compute
// these cases through them; the machine interpreter calls them over a
// warp's lanes directly.
inline uint32_t canonical(uint32_t r) { return (r & 0x7FFFFFFFu) > 0x7F800000u ? kNaN32 : r; }
inline float as_float(uint32_t b) { return __builtin_bit_cast(float, b); }
inline uint32_t as_bits(float f) { return __builtin_bit_cast(uint32_t, f); }
inline uint32_t add_rn(uint32_t a, uint32_t b) { return canonical(as_bits(as_float(a) + as_float(b))); }
inline uint32_t sub_rn(uint32_t a, uint32_t b) { return canonical(as_bits(as_float(a) - as_float(b))); }
inline uint32_t mul_rn(uint32_t a, uint32_t b) { return canonical(as_bits(as_float(a) * as_float(b))); }
inline uint32_t fma_rn(uint32_t a, uint32_t b, uint32_t c) {
  return canonical(as_bits(__builtin_fmaf(as_float(a), as_float(b), as_float(c))));
}
// Whether the host rounds to nearest now (the inline functions' condition).
bool host_rounds_to_nearest();

uint32_t add(uint32_t a, uint32_t b, Rnd r, bool ftz, bool sat);
uint32_t sub(uint32_t a, uint32_t b, Rnd r, bool ftz, bool sat);
uint32_t mul(uint32_t a, uint32_t b, Rnd r, bool ftz, bool sat);
uint32_t fma(uint32_t a, uint32_t b, uint32_t c, Rnd r, bool ftz, bool sat);
uint32_t div(uint32_t a, uint32_t b, Rnd r, bool ftz, bool sat);
uint32_t sqrt(uint32_t a, Rnd r, bool ftz);
// ex2.approx{.ftz}.f32 as docs/isa.md section 11.1 defines it: a sequence of
// f32 fused multiply-adds, each rounded to nearest by the host.
uint32_t ex2(uint32_t a, bool ftz);
// lg2.approx{.ftz}.f32 as docs/isa.md section 11.1 defines it: f32 fused
// multiply-adds, each rounded to nearest by the host.
uint32_t lg2(uint32_t a, bool ftz);
// sin.approx{.ftz}.f32 and cos.approx{.ftz}.f32 as docs/isa.md section 11.1
// defines them: f32 fused multiply-adds (a reduction by pi/2 in three parts,
// polynomials in the reduced argument's square), each rounded to nearest by
// the host.
uint32_t sin(uint32_t a, bool ftz);
uint32_t cos(uint32_t a, bool ftz);
// tanh.approx{.ftz}.f32: a for |a| < 2^-10, else 1 - 2 / (ex2(|a| * 2 log2 e) + 1)
// by the reference's own rn operations, with a's sign.
uint32_t tanh(uint32_t a, bool ftz);
uint32_t min(uint32_t a, uint32_t b, bool ftz);
uint32_t max(uint32_t a, uint32_t b, bool ftz);
uint32_t abs(uint32_t a, bool ftz);
uint32_t neg(uint32_t a, bool ftz);
uint32_t copysign(uint32_t a, uint32_t b);
// .sat on an f32 result: clamped to [0, 1], NaN and -0 to +0 (`sat` false: r).
uint32_t saturate(uint32_t r, bool sat);  // |b| with a's sign
bool testp(TestpKind k, uint32_t a);
// setp/set's comparison (eq ... geu, num, nan) of two f32 values.
bool compare(Cmp c, uint32_t a, uint32_t b, bool ftz);
// cvt.RND.f32.{s,u}{8,16,32,64}: the integer (its low `bits` bits) to f32.
uint32_t from_int(uint64_t v, bool is_signed, unsigned bits, Rnd r);
// cvt.RNDI.{s,u}{8,16,32,64}.f32: rounded to an integer, saturated to the
// destination's range (NaN: 0); the result's low `bits` bits.
uint64_t to_int(uint32_t f, bool is_signed, unsigned bits, Rnd r, bool ftz);
// binary64 (no .ftz; NaN results 0x7FFFFFFFFFFFFFFF).
constexpr uint64_t kNaN64 = 0x7FFFFFFFFFFFFFFFull;
uint64_t add64(uint64_t a, uint64_t b, Rnd r);
uint64_t sub64(uint64_t a, uint64_t b, Rnd r);
uint64_t mul64(uint64_t a, uint64_t b, Rnd r);
uint64_t fma64(uint64_t a, uint64_t b, uint64_t c, Rnd r);
uint64_t div64(uint64_t a, uint64_t b, Rnd r);  // div.rnd.f64 (rcp.rnd.f64: a = 1.0)
uint64_t sqrt64(uint64_t a, Rnd r);
uint64_t min64(uint64_t a, uint64_t b);
uint64_t max64(uint64_t a, uint64_t b);
bool compare64(Cmp c, uint64_t a, uint64_t b);
// cvt.RND.f64.{s,u}{32,64}, cvt.RNDI.{s,u}{32,64}.f64 (saturating, NaN: 0),
// cvt.RNDI.f64.f64.
uint64_t int_to_f64(uint64_t v, bool is_signed, unsigned bits, Rnd r);
uint64_t f64_to_int(uint64_t d, bool is_signed, unsigned bits, Rnd r);
uint64_t round_int_f64(uint64_t d, Rnd r);
// .sat on an f64 result (cvt to .f64): clamped to [0, 1], NaN and -0 to +0
// (`sat` false: r).
uint64_t saturate64(uint64_t r, bool sat);

// cvt.f64.f32 (exact; NaN payload kept, quieted) and cvt.RND.f32.f64 (NaN:
// the canonical f32 NaN).
uint64_t to_f64(uint32_t f, bool ftz);
uint32_t from_f64(uint64_t d, Rnd r, bool ftz, bool sat);
// cvt.RNDI.f32.f32: rounded to an integral value (cvt.ftz.f32.f32 without a
// rounding suffix only flushes).
uint32_t round_int(uint32_t f, Rnd r, bool ftz, bool sat);

// binary16 (the host's _Float16 and __float128): cvt.rnd.f16.f32, cvt.f32.f16,
// add sub mul fma .rn.f16; NaN results 0x7FFF (f16) and 0x7FFFFFFF (f32).
uint32_t f16_from_f32(uint32_t f, Rnd r);
uint32_t f32_from_f16(uint32_t h);
// cvt between f16 and the integers (`bits` wide) or f64, each one rounding
// of the exact value by the host (not through f32, as the lowering goes):
// cvt.rnd{.sat}.f16.{s,u}{8,16,32,64} (.sat: saturate() the f16 after),
// cvt.rnd.f16.f64, cvt.rndi.{s,u}{8..64}.f16 (saturated, NaN 0), and
// cvt.f64.f16 (exact; a NaN is the canonical f32 NaN widened, as cvt.f64.f32
// widens it).
uint32_t f16_from_int(uint64_t v, bool is_signed, unsigned bits, Rnd r);
uint32_t f16_from_f64(uint64_t d, Rnd r);
uint64_t int_from_f16(uint32_t h, bool is_signed, unsigned bits, Rnd r);
uint64_t f64_from_f16(uint32_t h);

// bfloat16 (the high half of an f32), by search over the bf16 grid in
// __float128 (not by the lowering's word arithmetic): cvt.rnd.bf16.f32,
// cvt.f32.bf16, add sub mul fma .rn.bf16; NaN results 0x7FFF (bf16) and
// 0x7FFFFFFF (f32).
uint32_t bf16_from_f32(uint32_t f, Rnd r);
uint32_t f32_from_bf16(uint32_t h);
uint32_t add_bf16(uint32_t a, uint32_t b);
uint32_t sub_bf16(uint32_t a, uint32_t b);
uint32_t mul_bf16(uint32_t a, uint32_t b);
uint32_t fma_bf16(uint32_t a, uint32_t b, uint32_t c);
uint32_t add16(uint32_t a, uint32_t b);
uint32_t sub16(uint32_t a, uint32_t b);
uint32_t mul16(uint32_t a, uint32_t b);
uint32_t fma16(uint32_t a, uint32_t b, uint32_t c);
// .ftz on binary16 (the f16 arithmetic, comparisons, neg and abs with .ftz,
// docs/isa.md section 11.1): a subnormal half is a zero of its sign.
inline uint32_t flush16(uint32_t h, bool ftz) { return ftz && (h & 0x7C00u) == 0 ? h & 0x8000u : h; }
// ex2.approx.f16 and tanh.approx.f16 (docs/isa.md section 11.1): the half
// widened to f32 (exact), ex2 or tanh above (without .ftz: a widened half is
// never an f32 subnormal), one rounding to f16 (.rn; NaN 0x7FFF); `ftz`
// flushes the half and the f16 result.
uint32_t ex2_16(uint32_t h, bool ftz);
uint32_t tanh16(uint32_t h, bool ftz);
// rcp.approx.ftz.f64 and rsqrt.approx.ftz.f64 (docs/isa.md section 11.1): from
// a's high word alone, the f32 reciprocal (rcp.rn) or reciprocal square root
// (rcp.rn of sqrt.rn) of its 21-bit significand (doubled for rsqrt when the
// exponent is odd), its top 20 fraction bits under the scaled exponent in the
// high word, the low word 0; subnormal inputs and results flushed, NaN
// 0x7FFFFFFF00000000.
constexpr uint64_t kNaN64Approx = 0x7FFFFFFF00000000ull;
uint64_t rcp_approx64(uint64_t a);
uint64_t rsqrt_approx64(uint64_t a);

}  // namespace fref
}  // namespace qgpu::ptx
