// Software floating point: IEEE-754 binary32 operations as sequences of the
// machine's integer ALU operations (docs/isa.md, section 11).
//
// Each generator emits a branch-free sequence through `Emit` (one ALU
// operation, its result returned as an operand) and returns the operand that
// holds the result's bits.  The lowering passes its own emission; the tests
// pass one that evaluates at once.  Operations whose operands are all
// immediates are folded here.  The semantics are those of sm_75 (canonical
// NaN 0x7FFFFFFF, .ftz flushing subnormal inputs and results after rounding,
// .sat clamping to [0, 1]); model_host/ptx/float_ref.cpp is the independent
// reference they are tested against.
#pragma once

#include <cstdint>
#include <functional>
#include <utility>

#include "model_host/machine/isa.h"
#include "model_host/ptx/ir.h"

namespace qgpu::machine::softfloat {

using Emit = std::function<Operand(Op, Operand, Operand, Operand)>;

enum class Round : uint8_t { Rn, Rz, Rm, Rp };

class Gen {
 public:
  // `ffma`: the machine computes `ffma` (.rn, docs/isa.md section 3.4), which
  // the emission may then use (Op::FFMA, default FloatMod): division and the
  // square root find their quotient and root with it instead of one bit a
  // step (section 11.2).
  explicit Gen(Emit e, bool ffma = false) : emit_(std::move(e)), ffma_(ffma) {}

  Operand add(Operand a, Operand b, Round r, bool ftz, bool sat);
  Operand sub(Operand a, Operand b, Round r, bool ftz, bool sat);
  Operand mul(Operand a, Operand b, Round r, bool ftz, bool sat);
  Operand fma(Operand a, Operand b, Operand c, Round r, bool ftz, bool sat);
  // Correctly rounded a / b and square root (restoring division and
  // digit-by-digit root, one result bit per step: about 200 and 290
  // operations; with ffma, about 95 and 110).
  Operand div(Operand a, Operand b, Round r, bool ftz, bool sat);
  // ex2.approx: 2^x by f32 fused multiply-adds, x = n + f with a degree-6
  // polynomial in f (docs/isa.md section 11.1; ptx::fref::ex2 computes the
  // same definition with the host's fma).
  Operand ex2(Operand a, bool ftz);
  Operand sqrt(Operand a, Round r, bool ftz);
  // lg2.approx: log2 by f32 fused multiply-adds, a = m 2^E and a degree-10
  // polynomial in m - 1 (docs/isa.md section 11.1; ptx::fref::lg2 computes the
  // same definition with the host's fma).
  Operand lg2(Operand a, bool ftz);
  // sin.approx, cos.approx: f32 fused multiply-adds, a reduction by pi/2 in
  // three parts and degree-3 polynomials in r^2 chosen by the quadrant
  // (docs/isa.md section 11.1; ptx::fref::sin and cos compute the same
  // definitions with the host's fma).
  Operand sin(Operand a, bool ftz) { return sincos(a, ftz, 0); }
  Operand cos(Operand a, bool ftz) { return sincos(a, ftz, 1); }
  // tanh.approx: |a| below 2^-10 gives a, else 1 - 2 / (ex2(|a| * 2 log2 e) + 1)
  // by this file's rn operations, with a's sign (docs/isa.md section 11.1).
  Operand tanh(Operand a, bool ftz);
  Operand min(Operand a, Operand b, bool ftz);
  Operand max(Operand a, Operand b, bool ftz);
  Operand abs(Operand a, bool ftz);
  Operand neg(Operand a, bool ftz);
  Operand copysign(Operand a, Operand b);  // |b| with a's sign
  // 0 or 1.  testp's kinds: 1 finite, 2 infinite, 3 number, 4 notanumber,
  // 5 normal, 6 subnormal (ptx::TestpKind's order).
  Operand testp(int kind, Operand a);
  Operand compare(ptx::Cmp c, Operand a, Operand b, bool ftz);
  // Integer (32-bit word, or 64-bit as lo/hi) to f32.
  Operand from_int32(Operand v, bool is_signed, Round r);
  Operand from_int64(Operand lo, Operand hi, bool is_signed, Round r);
  // f32 to an integer of `bits` (8, 16, 32) bits, rounded (Rn/Rz/Rm/Rp as
  // rni/rzi/rmi/rpi) and saturated; NaN gives 0.  The result is the value
  // sign- or zero-extended to 32 bits.
  Operand to_int32(Operand f, bool is_signed, unsigned bits, Round r, bool ftz);
  // f32 to a 64-bit integer, rounded and saturated (NaN: 0): {lo, hi}.
  std::pair<Operand, Operand> to_int64(Operand f, bool is_signed, Round r, bool ftz);
  // f32 to f64 (exact; a NaN keeps its payload, quieted): {lo, hi}.
  std::pair<Operand, Operand> to_f64(Operand f, bool ftz);
  // f64 {lo, hi} to f32, rounded (a NaN gives the canonical NaN).
  Operand from_f64(Operand lo, Operand hi, Round r, bool ftz, bool sat);
  // f32 rounded to an integral f32 (cvt.rni.f32.f32 ...); `integral` false:
  // cvt.f32.f32 without a rounding suffix (flush and saturation only).
  Operand round_int(Operand f, bool integral, Round r, bool ftz, bool sat);
  Operand saturate(Operand x);
  Operand flush(Operand x);  // .ftz: a subnormal becomes zero of its sign
  // With ffma: y close to 1 / b for b in [1, 2), given as nb = -b (the
  // division's seed and Newton steps): |1 - b y| stays below 2^-20, which
  // the division's proof needs (tests/lower/softfloat_test.cpp checks every b).
  Operand reciprocal(Operand nb);
  // The cores of div and sqrt: {floor(x 2^24), whether that drops a nonzero
  // part} for x = A / B (div_bits: A = ma << lt, B = mb, ma and mb with their
  // leading 1 at bit 23, lt = ma < mb, so x is in [1, 2)) and x = sqrt(m /
  // 2^23) (root_bits: m in [2^23, 2^25)).
  std::pair<Operand, Operand> div_bits(Operand ma, Operand lt, Operand mb);
  std::pair<Operand, Operand> root_bits(Operand m);
  // binary16 in the low half of a word (docs/isa.md section 11.1): cvt.rnd.f16.f32,
  // cvt.f32.f16 (exact), and add, sub, mul, fma .rn.f16 (computed in f32: one
  // rounding to f32 then to f16 for add, sub and mul, which is exact
  // rounding there; fma rounds to f32 to odd first).  NaN results: 0x7FFF.
  Operand f16_from_f32(Operand f, Round r);
  Operand f32_from_f16(Operand h);
  // cvt between f16 and the integers ({lo, hi}; an integer of `bits` <= 32
  // in lo, extended) or f64, through f32, which holds every f16: f16 to f32
  // then on (exact); an integer rounded to f32 in r, then to f16 in r (exact
  // below 2^24, where f32 holds it; from 2^24 on both roundings overflow f16
  // alike); f64 rounded to f32 to odd, then to f16 in r (24 bits against 11).
  // .sat (f16 destinations) clamps the f32 before its rounding to f16.
  Operand f16_from_int(std::pair<Operand, Operand> v, bool is_signed, unsigned bits, Round r, bool sat);
  Operand f16_from_f64(Operand lo, Operand hi, Round r, bool sat);
  // {lo, hi}: bits 64 gives both words; else lo, extended, and hi 0.
  std::pair<Operand, Operand> int_from_f16(Operand h, bool is_signed, unsigned bits, Round r);
  std::pair<Operand, Operand> f64_from_f16(Operand h);
  Operand add16(Operand a, Operand b);
  Operand sub16(Operand a, Operand b);
  Operand mul16(Operand a, Operand b);
  Operand fma16(Operand a, Operand b, Operand c);
  // .ftz on binary16: a subnormal half becomes a zero of its sign.
  Operand flush16(Operand h);
  // An f32 function of one operand: the machine's native operation, where
  // the lowering has one, in place of this file's sequence.
  using Unary = std::function<Operand(Operand)>;
  // ex2.approx.f16 and tanh.approx.f16 (docs/isa.md section 11.1): the half
  // widened to f32, ex2 or tanh (without .ftz; `f32` where given), rounded to
  // f16 (.rn); `ftz` flushes the half and the result (ptx::fref::ex2_16 ...).
  Operand ex2_16(Operand h, bool ftz, const Unary& f32 = nullptr);
  Operand tanh16(Operand h, bool ftz, const Unary& f32 = nullptr);
  // bfloat16 (the high half of an f32) in the low half of a word:
  // cvt.rnd.bf16.f32 (rounding the f32's low 16 bits away; NaN: 0x7FFF),
  // cvt.f32.bf16 (exact; NaN: the canonical f32 NaN), and add, sub, mul,
  // fma .rn.bf16 computed in f32 as for binary16 (24 >= 2 * 8 + 2).
  Operand bf16_from_f32(Operand f, Round r);
  Operand f32_from_bf16(Operand h);
  Operand add_bf16(Operand a, Operand b);
  Operand sub_bf16(Operand a, Operand b);
  Operand mul_bf16(Operand a, Operand b);
  Operand fma_bf16(Operand a, Operand b, Operand c);

  // binary64, on {lo, hi} register pairs (no .ftz: PTX's f64 keeps
  // subnormals); NaN results are the canonical 0x7FFFFFFFFFFFFFFF.
  using W = std::pair<Operand, Operand>;
  W add64(W a, W b, Round r);
  W sub64(W a, W b, Round r);
  W mul64(W a, W b, Round r);
  W fma64(W a, W b, W c, Round r);
  // Correctly rounded a / b and square root (restoring division and the
  // digit-by-digit root, one result bit per step: about 950 and 1500
  // operations).
  W div64(W a, W b, Round r);
  W sqrt64(W a, Round r);
  W min64(W a, W b);
  W max64(W a, W b);
  Operand compare64(ptx::Cmp c, W a, W b);
  // Integers (lo, hi; a 32-bit one has hi = its extension) to f64, rounded.
  W from_int_to64(W v, bool is_signed, Round r);
  // f64 to an integer of 32 or 64 bits, rounded (Rn/Rz/Rm/Rp as rni/rzi/rmi/
  // rpi) and saturated; NaN gives 0.
  W to_int_from64(W f, bool is_signed, unsigned bits, Round r);
  // cvt.rndi.f64.f64.
  W round_int64(W f, Round r);
  // .sat on an f64 result (cvt to .f64): clamped to [0, 1], NaN and -0 to +0.
  W saturate64(W x);
  // rcp.approx.ftz.f64 and rsqrt.approx.ftz.f64 (docs/isa.md section 11.1;
  // ptx::fref::rcp_approx64 ...): from a's high word, the f32 rcp.rn (rsqrt:
  // rcp.rn of sqrt.rn) of its significand as an f32 in [1, 2) (rsqrt: [1, 4)),
  // `f32` where given, else div (and sqrt) here; the low word 0.
  W rcp_approx64(W a, const Unary& f32 = nullptr);
  W rsqrt_approx64(W a, const Unary& f32 = nullptr);

 private:
  Operand e(Op o, Operand a, Operand b = Operand::k(0), Operand c = Operand::k(0));
  Operand ffma(Operand a, Operand b, Operand c) { return e(Op::FFMA, a, b, c); }
  // a * b + c rounded to nearest: the machine's ffma, or fma's integer sequence.
  Operand fma_rn(Operand a, Operand b, Operand c) {
    return ffma_ ? ffma(a, b, c) : fma(a, b, c, Round::Rn, false, false);
  }
  bool compare_by_difference(ptx::Cmp c, Operand a, Operand b, Operand& r);
  Operand round_pack(Operand s, Operand ex, Operand m, Operand st, Round r, bool ftz);
  Operand sig_of(Operand abs, Operand ex);
  W round_pack64(Operand s, Operand ex, W m, Operand st, Round r);
  W shl64(W x, Operand n);
  W shr64(W x, Operand n);
  Operand shr64_lost(W x, Operand n);
  Operand clz64(W x);
  Operand nan64(W x);
  Operand fma_to_odd32(Operand A, Operand B, Operand C);
 public:
  // A value rounded to f32 to odd, from its roundings down and up: the one
  // toward zero, its last bit set when they differ (inexact); a NaN stays.
  Operand to_odd32(Operand down, Operand up);
 private:
  W unpack64(W x, Operand& ex);
  Operand inf64(W x);
  Operand zero64(W x);
  Operand sincos(Operand a, bool ftz, int quarter);
  Operand approx64_hi(Operand s, Operand base, Operand r);
  Emit emit_;
  bool ffma_ = false;
};

}  // namespace qgpu::machine::softfloat
