// Software floating point (docs/isa.md, section 11): every f32 operation as a
// branch-free sequence of 32-bit integer operations.
//
// Notation.  An f32 value is unpacked into its sign bit s (0 or 0x80000000),
// its magnitude bits |x|, its exponent field ex and its significand: 24 bits
// with the implicit bit for a normal number, the fraction for a subnormal
// one, whose exponent counts as 1.  An exact intermediate result is carried
// as (s, e, m, st): m a 32-bit significand with its leading 1 at bit 31, e a
// signed exponent such that the value is m / 2^31 * 2^(e - 127), and st a
// sticky bit for any nonzero bits below m.  round_pack() rounds that to f32.
// The machine's shifts by 32 or more give 0 (docs/isa.md, section 3.1), which
// the sequences rely on for their boundary cases.
#include "model_host/lower/softfloat.h"

#include <array>

#include "model_host/ptx/float_ref.h"

namespace qgpu::machine::softfloat {
namespace {

Operand K(uint32_t v) { return Operand::k(v); }
constexpr uint32_t kNaN = 0x7FFFFFFFu, kInf = 0x7F800000u, kSign = 0x80000000u, kAbs = 0x7FFFFFFFu;
// (2^f - 1) / f at the 6 Chebyshev nodes of [-1/2, 1/2], as f32 (tools/softfloat/coefficients.py).
constexpr uint32_t kEx2F32[6] = {0x3F317218u, 0x3E75FDF0u, 0x3D6357B6u, 0x3C1D952Au, 0x3AAF8448u, 0x392209C5u};
// log2(1 + u) / u at the 10 Chebyshev nodes of [sqrt(1/2) - 1, sqrt(2) - 1], as f32,
// and 1/ln 2 less the f32 nearest it (tools/softfloat/coefficients.py).
constexpr uint32_t kLg2F32[10] = {0x3FB8AA3Bu, 0xBF38AA38u, 0x3EF63855u, 0xBEB8AD38u, 0x3E93BD29u,
                                  0xBE755BD5u, 0x3E51C634u, 0xBE43FB51u, 0x3E3D31D0u, 0xBDDC27DBu};
constexpr uint32_t kLg2C0Lo = 0x32A57060u;
// sin r = r + r z S(z) and cos r = 1 + z C(z), z = r^2: S and C of degree 3
// interpolating (sin r / r - 1) / z and (cos r - 1) / z at the 4 Chebyshev
// nodes of [0, (pi/4)^2]; pi/2 as three f32 parts (each the f32 nearest what
// the earlier ones leave) and the f32 nearest 2/pi (tools/softfloat/coefficients.py).
constexpr uint32_t kSinF32[4] = {0xBE2AAAABu, 0x3C088887u, 0xB95009D4u, 0x3636DF04u};
constexpr uint32_t kCosF32[4] = {0xBF000000u, 0x3D2AAAA6u, 0xBAB60704u, 0x37CD3796u};
constexpr uint32_t kPiOver2[3] = {0x3FC90FDBu, 0xB33BBD2Eu, 0xA6F72CEDu};
constexpr uint32_t kTwoOverPiF32 = 0x3F22F983u;

}  // namespace

Operand Gen::e(Op o, Operand a, Operand b, Operand c) {
  if (o == Op::FFMA) {
    if (a.imm && b.imm && c.imm) return K(ptx::fref::fma(a.v, b.v, c.v, ptx::Rnd::Rn, false, false));
    return emit_(o, a, b, c);
  }
  const int n = op_info(o).arity;
  if (a.imm && (n < 2 || b.imm) && (n < 3 || c.imm)) return K(eval_alu(o, a.v, b.v, c.v));
  if (o == Op::SEL && a.imm) return a.v ? b : c;
  return emit_(o, a, b, c);
}

// A subnormal (magnitude below 2^-126) becomes zero of its sign.
Operand Gen::flush(Operand x) {
  return e(Op::SEL, e(Op::SLTU, e(Op::AND, x, K(kAbs)), K(0x800000)), e(Op::AND, x, K(kSign)), x);
}

// The significand of |x| with exponent field ex: the implicit bit when ex != 0.
Operand Gen::sig_of(Operand abs, Operand ex) {
  return e(Op::SEL, ex, e(Op::OR, e(Op::AND, abs, K(0x7FFFFF)), K(0x800000)), abs);
}

Operand Gen::saturate(Operand x) {
  x = e(Op::SEL, e(Op::SLTU, K(kInf), e(Op::AND, x, K(kAbs))), K(0), x);  // NaN -> +0
  x = e(Op::SEL, e(Op::SLT, x, K(0)), K(0), x);                            // negative, -0 included -> +0
  return e(Op::MINU, x, K(0x3F800000u));                                   // above 1 -> 1
}

// (s, ex, m, st) rounded to f32.  A result below 2^-126 is shifted right into
// the subnormal range first (its lost bits join the sticky bit), so that the
// exponent field of the packed word is max(ex, 1) - 1 and the significand's
// implicit bit, added to it, makes it ex (or 1 when a subnormal rounds up to
// the smallest normal).  A carry of the rounding increment out of the
// significand likewise increments the exponent; reaching 0x7F800000 is
// overflow.
Operand Gen::round_pack(Operand s, Operand ex, Operand m, Operand st, Round r, bool ftz) {
  Operand sh = e(Op::MAX, e(Op::SUB, K(1), ex), K(0));
  Operand mt = e(Op::SHR, m, sh);
  st = e(Op::OR, st, e(Op::SNE, e(Op::SHL, mt, sh), m));
  Operand eb = e(Op::MIN, e(Op::SUB, e(Op::MAX, ex, K(1)), K(1)), K(255));
  Operand base = e(Op::ADD, e(Op::SHL, eb, K(23)), e(Op::SHR, mt, K(8)));
  Operand rest = e(Op::AND, mt, K(0xFF));
  Operand inc = K(0);
  switch (r) {
    case Round::Rn: {  // round bit and (sticky or lsb): rest + (sticky | lsb) > 0x80
      Operand lsb = e(Op::AND, e(Op::SHR, mt, K(8)), K(1));
      inc = e(Op::SLTU, K(0x80), e(Op::ADD, rest, e(Op::OR, st, lsb)));
      break;
    }
    case Round::Rz: break;
    case Round::Rm:
    case Round::Rp: {
      Operand inexact = e(Op::SNE, e(Op::OR, rest, st), K(0));
      Operand neg = e(Op::SHR, s, K(31));
      inc = e(Op::AND, inexact, r == Round::Rm ? neg : e(Op::XOR, neg, K(1)));
      break;
    }
  }
  Operand res = e(Op::ADD, base, inc);
  Operand ovf_val;
  switch (r) {
    case Round::Rn: ovf_val = K(kInf); break;
    case Round::Rz: ovf_val = K(0x7F7FFFFFu); break;
    case Round::Rm: ovf_val = e(Op::SEL, s, K(kInf), K(0x7F7FFFFFu)); break;
    case Round::Rp: ovf_val = e(Op::SEL, s, K(0x7F7FFFFFu), K(kInf)); break;
  }
  res = e(Op::SEL, e(Op::SLEU, K(kInf), res), ovf_val, res);
  res = e(Op::SEL, m, res, K(0));
  if (ftz) res = e(Op::SEL, e(Op::SLTU, res, K(0x800000)), K(0), res);
  return e(Op::OR, res, s);
}

// a + b: the operands ordered by magnitude (B >= S), S's significand shifted
// right by the exponent difference with a sticky bit, then added or, for
// operands of opposite signs, subtracted.  Both significands sit at bits
// 30..7, leaving a carry bit and seven guard bits.  With a sticky bit the
// subtraction takes one more unit off (the exact difference lies strictly
// between that and the next integer, and the sticky bit says so); that only
// happens for an exponent difference of 2 or more, where the result needs a
// normalising shift of at most 2, so the sticky bits stay below the round
// bit.  An exact zero difference is +0 (-0 rounding down).
Operand Gen::add(Operand a, Operand b, Round r, bool ftz, bool sat) {
  if (ftz) a = flush(a), b = flush(b);
  Operand absa = e(Op::AND, a, K(kAbs)), absb = e(Op::AND, b, K(kAbs));
  Operand swap = e(Op::SLTU, absa, absb);
  Operand big = e(Op::SEL, swap, b, a);
  Operand absB = e(Op::MAXU, absa, absb), absS = e(Op::MINU, absa, absb);
  Operand sB = e(Op::AND, big, K(kSign));
  Operand subtract = e(Op::SHR, e(Op::XOR, a, b), K(31));
  Operand exB = e(Op::SHR, absB, K(23)), exS = e(Op::SHR, absS, K(23));
  Operand mB = e(Op::SHL, sig_of(absB, exB), K(7)), mS = e(Op::SHL, sig_of(absS, exS), K(7));
  Operand eB = e(Op::MAX, exB, K(1));
  Operand d = e(Op::SUB, eB, e(Op::MAX, exS, K(1)));
  Operand mSs = e(Op::SHR, mS, d);
  Operand st = e(Op::SNE, e(Op::SHL, mSs, d), mS);
  Operand v = e(Op::SEL, subtract, e(Op::SUB, e(Op::SUB, mB, mSs), st), e(Op::ADD, mB, mSs));
  Operand n = e(Op::CLZ, v);
  Operand m = e(Op::SHL, v, n);
  Operand ex = e(Op::SUB, e(Op::ADD, eB, K(1)), n);
  Operand s = e(Op::SEL, e(Op::AND, subtract, e(Op::SEQ, v, K(0))), K(r == Round::Rm ? kSign : 0), sB);
  Operand res = round_pack(s, ex, m, st, r, ftz);
  // B infinite or NaN: B, or NaN for a NaN or inf - inf.
  Operand nan = e(Op::OR, e(Op::SLTU, K(kInf), absB), e(Op::AND, subtract, e(Op::SEQ, absS, K(kInf))));
  res = e(Op::SEL, e(Op::SLEU, K(kInf), absB), big, res);
  res = e(Op::SEL, nan, K(kNaN), res);
  return sat ? saturate(res) : res;
}

Operand Gen::sub(Operand a, Operand b, Round r, bool ftz, bool sat) {
  return add(a, e(Op::XOR, b, K(kSign)), r, ftz, sat);
}

// a * b: subnormal significands normalised (leading 1 at bit 31, exponent
// lowered by the shift), the 64-bit product from mul and mulhu, its top word
// normalised (the product's leading 1 is at bit 62 or 63), the rest sticky.
Operand Gen::mul(Operand a, Operand b, Round r, bool ftz, bool sat) {
  if (ftz) a = flush(a), b = flush(b);
  Operand s = e(Op::AND, e(Op::XOR, a, b), K(kSign));
  Operand absa = e(Op::AND, a, K(kAbs)), absb = e(Op::AND, b, K(kAbs));
  Operand exa = e(Op::SHR, absa, K(23)), exb = e(Op::SHR, absb, K(23));
  Operand sa = sig_of(absa, exa), sb = sig_of(absb, exb);
  Operand za = e(Op::CLZ, sa), zb = e(Op::CLZ, sb);
  Operand A = e(Op::SHL, sa, za), B = e(Op::SHL, sb, zb);
  Operand hi = e(Op::MULHU, A, B), lo = e(Op::MUL, A, B);
  Operand n = e(Op::CLZ, hi);
  Operand m = e(Op::OR, e(Op::SHL, hi, n), e(Op::SHR, lo, e(Op::SUB, K(32), n)));
  Operand st = e(Op::SNE, e(Op::SHL, lo, n), K(0));
  // value = A/2^31 * 2^(ea - (za - 8) - 127) * B/2^31 * 2^(eb - (zb - 8) - 127)
  Operand ex = e(Op::SUB, e(Op::SUB, e(Op::ADD, e(Op::MAX, exa, K(1)), e(Op::MAX, exb, K(1))), e(Op::ADD, za, zb)),
                 e(Op::ADD, n, K(110)));
  Operand res = round_pack(s, ex, m, st, r, ftz);
  Operand hi_abs = e(Op::MAXU, absa, absb);
  Operand inf = e(Op::SEQ, hi_abs, K(kInf));  // an infinite operand and no NaN
  Operand nan = e(Op::OR, e(Op::SLTU, K(kInf), hi_abs), e(Op::AND, inf, e(Op::SEQ, e(Op::MINU, absa, absb), K(0))));
  res = e(Op::SEL, inf, e(Op::OR, s, K(kInf)), res);
  res = e(Op::SEL, nan, K(kNaN), res);
  return sat ? saturate(res) : res;
}

// a * b + c with one rounding: the exact product (48 bits) and c as 64-bit
// significands (hi, lo) with their leading 1 at bit 62 and exponents Ep, Ec
// (value M / 2^62 * 2^(E - 127); a zero gets E = -1000), ordered by (E, M),
// the smaller shifted right with a sticky bit, added or subtracted (two's
// complement with the sticky borrow, as in add()), normalised to bit 63, and
// the top word rounded with the rest as sticky.  The product has at least 14
// zero low bits and c 39, so a shift by 0 or 1, where cancellation can be
// massive, is exact.
Operand Gen::fma(Operand a, Operand b, Operand c, Round r, bool ftz, bool sat) {
  if (ftz) a = flush(a), b = flush(b), c = flush(c);
  Operand sp = e(Op::AND, e(Op::XOR, a, b), K(kSign)), sc = e(Op::AND, c, K(kSign));
  Operand absa = e(Op::AND, a, K(kAbs)), absb = e(Op::AND, b, K(kAbs)), absc = e(Op::AND, c, K(kAbs));
  Operand exa = e(Op::SHR, absa, K(23)), exb = e(Op::SHR, absb, K(23)), exc = e(Op::SHR, absc, K(23));
  Operand sa = sig_of(absa, exa), sb = sig_of(absb, exb), sgc = sig_of(absc, exc);
  Operand za = e(Op::CLZ, sa), zb = e(Op::CLZ, sb), zc = e(Op::CLZ, sgc);
  Operand A = e(Op::SHL, sa, za), B = e(Op::SHL, sb, zb);
  Operand ph = e(Op::MULHU, A, B), pl = e(Op::MUL, A, B);
  // Leading 1 of the product at bit 63 (t = 1) or 62: bring it to 62.
  Operand t = e(Op::SHR, ph, K(31));
  Operand Ph = e(Op::SHR, ph, t), Pl = e(Op::OR, e(Op::SHR, pl, t), e(Op::SHL, ph, e(Op::SUB, K(32), t)));
  // value = (A*B)/2^62 * 2^(ea + eb - za - zb + 16 - 254) = P/2^62 * 2^(Ep - 127)
  Operand Ep = e(Op::ADD, e(Op::SUB, e(Op::ADD, e(Op::MAX, exa, K(1)), e(Op::MAX, exb, K(1))), e(Op::ADD, za, zb)),
                 e(Op::SUB, t, K(111)));
  Ep = e(Op::SEL, ph, Ep, K(uint32_t(-1000)));
  Operand C = e(Op::SHL, sgc, zc);
  Operand Ch = e(Op::SHR, C, K(1)), Cl = e(Op::SHL, C, K(31));
  Operand Ec = e(Op::SEL, C, e(Op::SUB, e(Op::MAX, exc, K(1)), e(Op::SUB, zc, K(8))), K(uint32_t(-1000)));
  // Order: c is the bigger one when (Ec, C) > (Ep, P).
  Operand lt_m = e(Op::OR, e(Op::SLTU, Ph, Ch), e(Op::AND, e(Op::SEQ, Ph, Ch), e(Op::SLTU, Pl, Cl)));
  Operand cbig = e(Op::OR, e(Op::SLT, Ep, Ec), e(Op::AND, e(Op::SEQ, Ep, Ec), lt_m));
  Operand Bh = e(Op::SEL, cbig, Ch, Ph), Bl = e(Op::SEL, cbig, Cl, Pl), EB = e(Op::SEL, cbig, Ec, Ep);
  Operand Sh = e(Op::SEL, cbig, Ph, Ch), Sl = e(Op::SEL, cbig, Pl, Cl), ES = e(Op::SEL, cbig, Ep, Ec);
  Operand sB = e(Op::SEL, cbig, sc, sp);
  Operand d = e(Op::SUB, EB, ES);
  // S >> d (64-bit) and the sticky bit of what it loses.
  Operand Shs = e(Op::SHR, Sh, d);
  Operand Sls = e(Op::OR, e(Op::OR, e(Op::SHR, Sl, d), e(Op::SHL, Sh, e(Op::SUB, K(32), d))),
                  e(Op::SHR, Sh, e(Op::SUB, d, K(32))));
  Operand lost_l = e(Op::SEL, e(Op::SLTU, K(32), d), Sl, e(Op::SHL, Sl, e(Op::SUB, K(32), d)));
  Operand lost_h = e(Op::SEL, e(Op::SLTU, K(64), d), Sh, e(Op::SHL, Sh, e(Op::SUB, K(64), d)));
  Operand st = e(Op::SNE, e(Op::OR, lost_l, lost_h), K(0));
  // B + S or B - S - st (as B + ~S + 1 - st).
  Operand subtract = e(Op::SHR, e(Op::XOR, sp, sc), K(31));
  Operand Xl = e(Op::SEL, subtract, e(Op::XOR, Sls, K(~0u)), Sls);
  Operand Xh = e(Op::SEL, subtract, e(Op::XOR, Shs, K(~0u)), Shs);
  Operand cin = e(Op::AND, subtract, e(Op::XOR, st, K(1)));
  Operand l1 = e(Op::ADD, Bl, Xl);
  Operand l2 = e(Op::ADD, l1, cin);
  Operand h = e(Op::ADD, e(Op::ADD, e(Op::ADD, Bh, Xh), e(Op::SLTU, l1, Bl)), e(Op::SLTU, l2, cin));
  // Normalise (h, l2) to bit 63.
  Operand hz = e(Op::SEQ, h, K(0));
  Operand n = e(Op::SEL, hz, e(Op::ADD, e(Op::CLZ, l2), K(32)), e(Op::CLZ, h));
  Operand m = e(Op::OR, e(Op::OR, e(Op::SHL, h, n), e(Op::SHR, l2, e(Op::SUB, K(32), n))),
                e(Op::SHL, l2, e(Op::SUB, n, K(32))));
  st = e(Op::OR, st, e(Op::SNE, e(Op::SHL, l2, n), K(0)));
  Operand ex = e(Op::SUB, e(Op::ADD, EB, K(1)), n);
  Operand zero = e(Op::AND, subtract, e(Op::AND, hz, e(Op::SEQ, l2, K(0))));
  Operand s = e(Op::SEL, zero, K(r == Round::Rm ? kSign : 0), sB);
  Operand res = round_pack(s, ex, m, st, r, ftz);
  // Infinities and NaNs.
  Operand absab = e(Op::MAXU, absa, absb);
  Operand pinf = e(Op::SEQ, absab, K(kInf));
  Operand cinf = e(Op::SEQ, absc, K(kInf));
  Operand nan = e(Op::OR, e(Op::SLTU, K(kInf), e(Op::MAXU, absab, absc)),
                  e(Op::AND, pinf, e(Op::OR, e(Op::SEQ, e(Op::MINU, absa, absb), K(0)), e(Op::AND, cinf, subtract))));
  res = e(Op::SEL, cinf, c, res);
  res = e(Op::SEL, pinf, e(Op::OR, sp, K(kInf)), res);
  res = e(Op::SEL, nan, K(kNaN), res);
  return sat ? saturate(res) : res;
}

// a / b: significands normalised to [2^23, 2^24), a's doubled when below b's
// so the quotient lies in [1, 2); 25 steps of restoring division give its
// 24 bits and the round bit, the remainder the sticky bit.
// The quotient's 25 bits: q = floor(A 2^24 / B) for A = ma << lt, B = mb
// (A / B in [1, 2)), and the sticky bit (a nonzero remainder).
//
// Without ffma: restoring division, one quotient bit per step.
//
// With ffma (every value below is .rn, and every one is a normal f32, far
// from overflow and underflow): a = A and b = B as floats in [1, 4) and
// [1, 2) (Q = a / b in [1, 2 - 2^-24]), y = reciprocal(-b) with |1 - b y| =
// d < 2^-14, then t0 = a y, r = a - b t0, t = t0 + r y.  |Q - t0| <= 2d +
// 2^-23, r = b (Q - t0) (1 + e) with |e| <= 2^-24, so t0 + r y misses Q by
// at most |Q - t0| (d + 2^-24) (1 + d) < 2^-26 before its rounding: t is in
// [1, 2] and |Q - t| < 2^-24 + 2^-26.  Then z = (Q - t) 2^24 lies in (-2, 2),
// and with T = t 2^24 (an integer: t is on the grid of 2^-23) q = T +
// floor(z).  The remainder r2 = a - b t is exact (a multiple of 2^-46 below
// 2^-22 in magnitude: 24 bits), so one more ffma each gives, with the exact
// sign a rounding to nearest keeps (+0 for an exact zero), r2 - b 2^-24 >= 0
// iff z >= 1, r2 >= 0 iff z >= 0, r2 + b 2^-24 >= 0 iff z >= -1: floor(z) is
// those three less 2.  z is never a nonzero integer (Q would be a quotient of
// 24-bit significands on a midpoint of the 24-bit grid, which has 25
// significant bits), so the remainder is nonzero iff r2 is.  With
// reciprocal()'s d below 2^-16.3, |z| often passes 1: the three tests are
// needed.
std::pair<Operand, Operand> Gen::div_bits(Operand ma, Operand lt, Operand mb) {
  if (!ffma_) {
    Operand rem = e(Op::SHL, ma, lt);
    Operand q = K(0);
    for (int i = 0; i < 25; ++i) {
      Operand ge = e(Op::SLEU, mb, rem);
      rem = e(Op::SUB, rem, e(Op::SEL, ge, mb, K(0)));
      q = e(Op::OR, e(Op::SHL, q, K(1)), ge);
      if (i < 24) rem = e(Op::SHL, rem, K(1));
    }
    return {q, e(Op::SNE, rem, K(0))};
  }
  // The implicit bit (2^23) adds the last unit of exponent: 1.f is
  // 0x3F800000 + f, 2^lt times that 0x3F800000 + f + lt 2^23.
  Operand fa = e(Op::ADD, e(Op::ADD, ma, K(0x3F000000u)), e(Op::SHL, lt, K(23)));
  Operand nb = e(Op::ADD, mb, K(0xBF000000u));  // -b
  Operand y = reciprocal(nb);
  Operand t0 = ffma(fa, y, K(kSign));
  Operand t = ffma(ffma(nb, t0, fa), y, t0);
  Operand r2 = ffma(nb, t, fa);
  Operand up = ffma(nb, K(0x33800000u), r2);    // r2 - b 2^-24
  Operand down = ffma(nb, K(0xB3800000u), r2);  // r2 + b 2^-24
  // T + 1 = 2 bits(t) - 0x7E000000 + 1 (t in [1, 2]: bits 0x3F800000 + t's fraction, 2.0 is 0x40000000).
  Operand q = e(Op::SUB, e(Op::SHL, t, K(1)), K(0x7DFFFFFFu));
  for (Operand x : {up, r2, down}) q = e(Op::SUB, q, e(Op::SHR, x, K(31)));
  return {q, e(Op::SNE, r2, K(0))};
}

// y0 = 24/17 - 8/17 b (relative error at most 1/17 on [1, 2]), then two
// Newton steps y + y (1 - b y): 1/17 -> 2^-8.2 -> 2^-16.3 (the largest over
// every b, tests/lower/softfloat_test.cpp).
Operand Gen::reciprocal(Operand nb) {
  Operand y = ffma(nb, K(0x3EF0F0F1u), K(0x3FB4B4B5u));
  for (int i = 0; i < 2; ++i) y = ffma(y, ffma(nb, y, K(0x3F800000u)), y);
  return y;
}

// The root's 25 bits: q = floor(sqrt(m 2^25)), m in [2^23, 2^25), and the
// sticky bit (a nonzero remainder m 2^25 - q^2).
//
// Without ffma: digit by digit, two radicand bits a step.
//
// With ffma: x = m / 2^23 in [1, 4), so q = floor(sqrt(x) 2^24).  A seed of
// 1 / sqrt(x) from the exponent-halving constant (relative error below
// 2^-4.8) and two coupled Newton steps on s ~ sqrt(x) and h ~ 1 / (2
// sqrt(x)), kept as -h: r = 1/2 - s h, s += s r, h += h r (2^-4.8 -> 2^-9 ->
// 2^-17); then t = s + (x - s^2) h, in [1, 2] and within about 2^-24 of
// sqrt(x).  d2 = t^2 - x is a multiple of 2^-46 (exact when below 2^-22 in
// magnitude).  With z = (sqrt(x) - t) 2^24, z >= 1 iff x >= (t + 2^-24)^2
// iff d2 + t 2^-23 + 2^-48 <= 0 iff d2 + t 2^-23 < 0 (a nonzero value on the
// grid of 2^-46 keeps its sign when 2^-48 is added, and one ffma gives that
// sign exactly, +0 for an exact zero), z >= 0 iff d2 <= 0, z >= -1 iff d2 -
// t 2^-23 < 0, and q = T + floor(z) with T = t 2^24.  x is never the square
// of a 25-bit value whose last bit is set (that square needs 2^-48), so the
// remainder is nonzero iff d2 is.  The core sees only m, and
// tests/lower/softfloat_test.cpp checks it for every m: that is its proof.
std::pair<Operand, Operand> Gen::root_bits(Operand m) {
  if (!ffma_) {
    Operand rem = K(0), q = K(0);
    for (int i = 24; i >= 0; --i) {
      // Bits 2i+1, 2i of m * 2^25.
      Operand pair = 2 * i - 25 >= 0 ? e(Op::AND, e(Op::SHR, m, K(uint32_t(2 * i - 25))), K(3))
                     : 2 * i - 25 == -1 ? e(Op::AND, e(Op::SHL, m, K(1)), K(2))
                                        : K(0);
      rem = e(Op::OR, e(Op::SHL, rem, K(2)), pair);
      Operand t = e(Op::OR, e(Op::SHL, q, K(2)), K(1));
      Operand ge = e(Op::SLEU, t, rem);
      rem = e(Op::SUB, rem, e(Op::SEL, ge, t, K(0)));
      q = e(Op::OR, e(Op::SHL, q, K(1)), ge);
    }
    return {q, e(Op::SNE, rem, K(0))};
  }
  // m in [2^23, 2^24): 1.f = 0x3F000000 + m; in [2^24, 2^25): 2 (1.f) = 0x3F800000 + m / 2 (m even there).
  Operand big = e(Op::SHR, m, K(24));
  Operand x = e(Op::ADD, e(Op::SHR, m, big), e(Op::ADD, e(Op::SHL, big, K(23)), K(0x3F000000u)));
  Operand half = e(Op::SHR, x, K(1));
  Operand s = ffma(x, e(Op::SUB, K(0x5F3759DFu), half), K(kSign));
  Operand nh = e(Op::SUB, K(0xDEB759DFu), half);  // -(seed / 2)
  for (int i = 0; i < 2; ++i) {
    Operand r = ffma(s, nh, K(0x3F000000u));
    s = ffma(s, r, s);
    nh = ffma(nh, r, nh);
  }
  Operand nx = e(Op::XOR, x, K(kSign));
  Operand t = ffma(ffma(s, s, nx), nh, s);
  Operand d2 = ffma(t, t, nx);
  // T - 2 = 2 bits(t) - 0x7E000000 - 2.
  Operand q = e(Op::SUB, e(Op::SHL, t, K(1)), K(0x7E000002u));
  q = e(Op::ADD, q, e(Op::SHR, ffma(t, K(0x34000000u), d2), K(31)));   // d2 + t 2^-23 < 0
  q = e(Op::ADD, q, e(Op::SLT, d2, K(1)));                            // d2 <= 0
  q = e(Op::ADD, q, e(Op::SHR, ffma(t, K(0xB4000000u), d2), K(31)));  // d2 - t 2^-23 < 0
  return {q, e(Op::SNE, d2, K(0))};
}

Operand Gen::div(Operand a, Operand b, Round r, bool ftz, bool sat) {
  if (ftz) a = flush(a), b = flush(b);
  Operand s = e(Op::AND, e(Op::XOR, a, b), K(kSign));
  Operand absa = e(Op::AND, a, K(kAbs)), absb = e(Op::AND, b, K(kAbs));
  Operand exa = e(Op::SHR, absa, K(23)), exb = e(Op::SHR, absb, K(23));
  Operand sa = sig_of(absa, exa), sb = sig_of(absb, exb);
  Operand za = e(Op::SUB, e(Op::CLZ, sa), K(8)), zb = e(Op::SUB, e(Op::CLZ, sb), K(8));
  Operand ma = e(Op::SHL, sa, za), mb = e(Op::SHL, sb, zb);
  Operand lt = e(Op::SLTU, ma, mb);
  auto [q, st] = div_bits(ma, lt, mb);
  // value = (ma / mb) * 2^(ea - za - eb + zb) = q / 2^24 * 2^(... - lt)
  Operand ex = e(Op::ADD, e(Op::SUB, e(Op::SUB, e(Op::MAX, exa, K(1)), za), e(Op::SUB, e(Op::MAX, exb, K(1)), zb)),
                 e(Op::SUB, K(127), lt));
  Operand res = round_pack(s, ex, e(Op::SHL, q, K(7)), st, r, ftz);
  // Zeros, infinities and NaNs.
  Operand za0 = e(Op::SEQ, absa, K(0)), zb0 = e(Op::SEQ, absb, K(0));
  Operand ia = e(Op::SEQ, absa, K(kInf)), ib = e(Op::SEQ, absb, K(kInf));
  Operand nan = e(Op::OR, e(Op::SLTU, K(kInf), e(Op::MAXU, absa, absb)),
                  e(Op::OR, e(Op::AND, za0, zb0), e(Op::AND, ia, ib)));
  res = e(Op::SEL, e(Op::OR, za0, ib), s, res);
  res = e(Op::SEL, e(Op::OR, ia, zb0), e(Op::OR, s, K(kInf)), res);
  res = e(Op::SEL, nan, K(kNaN), res);
  return sat ? saturate(res) : res;
}

// 2^x as ptx::fref::ex2 defines it (docs/isa.md section 11.1): f32 fused
// multiply-adds rounded to nearest (the machine's ffma, or fma's integer
// sequence), integer operations for n and the powers of two.  t = x + 1.5
// 2^23 rounds x to the integer n (t's bits less 1.5 2^23's are n, t lying in
// [2^23, 2^24) for |x| < 152), t - 1.5 2^23 and x - n are exact, 2^f = 1 + f
// q(f); 2^n = 2^h 2^(n - h) with h = n >> 1, both normal, so that p 2^h is
// exact and only the last product rounds.
Operand Gen::ex2(Operand a, bool ftz) {
  constexpr uint32_t kOne = 0x3F800000u, kShift = 0x4B400000u;
  if (ftz) a = flush(a);
  Operand t = fma_rn(a, K(kOne), K(kShift));
  Operand f = fma_rn(fma_rn(t, K(kOne), K(kShift | kSign)), K(kOne | kSign), a);
  Operand n = e(Op::SUB, t, K(kShift)), h = e(Op::SAR, n, K(1));
  Operand p = K(kEx2F32[5]);
  for (int i = 4; i >= 0; --i) p = fma_rn(p, f, K(kEx2F32[i]));
  p = fma_rn(p, f, K(kOne));
  auto pow2 = [&](Operand k) { return e(Op::SHL, e(Op::ADD, k, K(127)), K(23)); };
  Operand res = fma_rn(fma_rn(p, pow2(h), K(kSign)), pow2(e(Op::SUB, n, h)), K(kSign));
  if (ftz) res = flush(res);
  // x >= 128 (+inf included): +inf; x <= -152 (-inf included): +0; NaN.
  res = e(Op::SEL, e(Op::SLT, K(0x42FFFFFFu), a), K(kInf), res);
  res = e(Op::SEL, e(Op::SLTU, K(0xC317FFFFu), a), K(0), res);
  return e(Op::SEL, e(Op::SLTU, K(kInf), e(Op::AND, a, K(kAbs))), K(kNaN), res);
}

// f32 to f16: the 24-bit significand shifted right onto the f16 grid of
// the value's binade (sh = max(13, 126 - ex): 2^-24 below 2^-14), rounded
// with the round and sticky bits; the packed word ((field - 1) << 10) + N
// carries a rounding increment into the exponent as round_pack does.
Operand Gen::f16_from_f32(Operand f, Round r) {
  Operand s16 = e(Op::SHR, e(Op::AND, f, K(kSign)), K(16));
  Operand abs = e(Op::AND, f, K(kAbs));
  Operand ex = e(Op::SHR, abs, K(23));
  Operand sg = sig_of(abs, ex);
  Operand exm = e(Op::MAX, ex, K(1));
  Operand sh = e(Op::MAX, e(Op::SUB, K(126), exm), K(13));
  Operand N = e(Op::SHR, sg, sh);
  Operand rb = e(Op::AND, e(Op::SHR, sg, e(Op::SUB, sh, K(1))), K(1));
  Operand st = e(Op::SEL, e(Op::SLTU, K(32), sh), e(Op::SNE, sg, K(0)),
                 e(Op::SNE, e(Op::SHL, sg, e(Op::SUB, K(33), sh)), K(0)));
  Operand field = e(Op::MAX, e(Op::SUB, ex, K(112)), K(1));
  Operand base = e(Op::ADD, e(Op::SHL, e(Op::SUB, field, K(1)), K(10)), N);
  Operand neg = e(Op::SHR, f, K(31));
  Operand inexact = e(Op::OR, rb, st);
  Operand inc = K(0);
  switch (r) {
    case Round::Rn: inc = e(Op::AND, rb, e(Op::OR, st, e(Op::AND, N, K(1)))); break;
    case Round::Rz: break;
    case Round::Rm: inc = e(Op::AND, inexact, neg); break;
    case Round::Rp: inc = e(Op::AND, inexact, e(Op::XOR, neg, K(1))); break;
  }
  Operand res = e(Op::ADD, base, inc);
  Operand ovf_val = r == Round::Rn   ? K(0x7C00)
                    : r == Round::Rz ? K(0x7BFF)
                    : r == Round::Rm ? e(Op::SEL, neg, K(0x7C00), K(0x7BFF))
                                     : e(Op::SEL, neg, K(0x7BFF), K(0x7C00));
  res = e(Op::SEL, e(Op::SLEU, K(0x7C00), res), ovf_val, res);
  res = e(Op::SEL, e(Op::SEQ, abs, K(kInf)), K(0x7C00), res);
  res = e(Op::OR, res, s16);
  return e(Op::SEL, e(Op::SLTU, K(kInf), abs), K(0x7FFF), res);
}

// f16 to f32, exact: a subnormal's fraction normalised with clz; a NaN
// gives the canonical f32 NaN.
Operand Gen::f32_from_f16(Operand h) {
  Operand s = e(Op::SHL, e(Op::AND, h, K(0x8000)), K(16));
  Operand e5 = e(Op::AND, e(Op::SHR, h, K(10)), K(31));
  Operand fr = e(Op::AND, h, K(0x3FF));
  Operand normal = e(Op::OR, e(Op::SHL, e(Op::ADD, e5, K(112)), K(23)), e(Op::SHL, fr, K(13)));
  Operand n = e(Op::CLZ, fr);
  Operand sub = e(Op::OR, e(Op::SHL, e(Op::SUB, K(134), n), K(23)),
                  e(Op::SHR, e(Op::SHL, fr, e(Op::ADD, n, K(1))), K(9)));
  sub = e(Op::SEL, fr, sub, K(0));
  Operand res = e(Op::SEL, e5, normal, sub);
  res = e(Op::SEL, e(Op::SEQ, e5, K(31)), K(kInf), res);
  res = e(Op::OR, res, s);
  return e(Op::SEL, e(Op::AND, e(Op::SEQ, e5, K(31)), e(Op::SNE, fr, K(0))), K(kNaN), res);
}

Operand Gen::add16(Operand a, Operand b) {
  return f16_from_f32(add(f32_from_f16(a), f32_from_f16(b), Round::Rn, false, false), Round::Rn);
}
Operand Gen::sub16(Operand a, Operand b) {
  return f16_from_f32(sub(f32_from_f16(a), f32_from_f16(b), Round::Rn, false, false), Round::Rn);
}
Operand Gen::mul16(Operand a, Operand b) {
  return f16_from_f32(mul(f32_from_f16(a), f32_from_f16(b), Round::Rn, false, false), Round::Rn);
}
// a b + c (f32 operands) rounded to odd in f32: the value toward zero, its
// last bit set when inexact (fma rounded down and up differ exactly then).
// The narrow fmas round this once more, to nearest: with 24 bits against
// their 11 (f16) or 8 (bf16), the double rounding is exact.
Operand Gen::f16_from_int(std::pair<Operand, Operand> v, bool is_signed, unsigned bits, Round r, bool sat) {
  Operand x = bits == 64 ? from_int64(v.first, v.second, is_signed, r) : from_int32(v.first, is_signed, r);
  return f16_from_f32(sat ? saturate(x) : x, r);
}
Operand Gen::f16_from_f64(Operand lo, Operand hi, Round r, bool sat) {
  Operand x = to_odd32(from_f64(lo, hi, Round::Rm, false, false), from_f64(lo, hi, Round::Rp, false, false));
  return f16_from_f32(sat ? saturate(x) : x, r);
}
std::pair<Operand, Operand> Gen::int_from_f16(Operand h, bool is_signed, unsigned bits, Round r) {
  Operand x = f32_from_f16(h);
  if (bits == 64) return to_int64(x, is_signed, r, false);
  return {to_int32(x, is_signed, bits, r, false), K(0)};
}
std::pair<Operand, Operand> Gen::f64_from_f16(Operand h) { return to_f64(f32_from_f16(h), false); }

Operand Gen::fma_to_odd32(Operand A, Operand B, Operand C) {
  return to_odd32(fma(A, B, C, Round::Rm, false, false), fma(A, B, C, Round::Rp, false, false));
}
Operand Gen::to_odd32(Operand lo, Operand hi) {
  // An exact zero: rounded down -0 and up +0 for opposite signs; +0 is the
  // nearest rounding's zero.
  Operand zero = e(Op::SEQ, e(Op::AND, e(Op::OR, lo, hi), K(kAbs)), K(0));
  Operand rz = e(Op::SEL, e(Op::OR, e(Op::SHR, hi, K(31)), zero), hi, lo);
  return e(Op::OR, rz, e(Op::AND, e(Op::SNE, lo, hi), e(Op::XOR, zero, K(1))));
}
// The product of two f16 is exact in f32.
Operand Gen::fma16(Operand a, Operand b, Operand c) {
  return f16_from_f32(fma_to_odd32(f32_from_f16(a), f32_from_f16(b), f32_from_f16(c)), Round::Rn);
}

// f32 to bf16: bf16 is the f32's high half, so rounding adds to the whole
// word and shifts: .rn adds 0x7FFF plus the kept half's last bit (a carry
// out of the significand increments the exponent; the largest finite values
// reach infinity exactly when they should), .rz only shifts, .rm/.rp add one
// to the kept half when any dropped bit is set and the sign says so (the
// largest finite value plus one is infinity).  A NaN gives 0x7FFF.
Operand Gen::flush16(Operand h) { return e(Op::SEL, e(Op::AND, h, K(0x7C00)), h, e(Op::AND, h, K(0x8000))); }
Operand Gen::ex2_16(Operand h, bool ftz, const Unary& f32) {
  if (ftz) h = flush16(h);
  Operand x = f32_from_f16(h);
  Operand r = f16_from_f32(f32 ? f32(x) : ex2(x, false), Round::Rn);
  return ftz ? flush16(r) : r;
}
Operand Gen::tanh16(Operand h, bool ftz, const Unary& f32) {
  if (ftz) h = flush16(h);
  Operand x = f32_from_f16(h);
  Operand r = f16_from_f32(f32 ? f32(x) : tanh(x, false), Round::Rn);
  return ftz ? flush16(r) : r;
}

Operand Gen::bf16_from_f32(Operand f, Round r) {
  Operand hi = e(Op::SHR, f, K(16));
  Operand res = hi;
  switch (r) {
    case Round::Rn:
      res = e(Op::SHR, e(Op::ADD, e(Op::ADD, f, K(0x7FFF)), e(Op::AND, hi, K(1))), K(16));
      break;
    case Round::Rz: break;
    case Round::Rm: case Round::Rp: {
      Operand inexact = e(Op::SNE, e(Op::AND, f, K(0xFFFF)), K(0));
      Operand neg = e(Op::SHR, f, K(31));
      Operand dir = r == Round::Rm ? neg : e(Op::XOR, neg, K(1));
      res = e(Op::ADD, hi, e(Op::AND, inexact, dir));
      break;
    }
  }
  return e(Op::SEL, e(Op::SLTU, K(kInf), e(Op::AND, f, K(kAbs))), K(0x7FFF), res);
}

// bf16 to f32: the half shifted up (exact); a NaN gives the canonical NaN.
Operand Gen::f32_from_bf16(Operand h) {
  Operand w = e(Op::SHL, h, K(16));
  return e(Op::SEL, e(Op::SLTU, K(kInf), e(Op::AND, w, K(kAbs))), K(kNaN), w);
}

Operand Gen::add_bf16(Operand a, Operand b) {
  return bf16_from_f32(add(f32_from_bf16(a), f32_from_bf16(b), Round::Rn, false, false), Round::Rn);
}
Operand Gen::sub_bf16(Operand a, Operand b) {
  return bf16_from_f32(sub(f32_from_bf16(a), f32_from_bf16(b), Round::Rn, false, false), Round::Rn);
}
Operand Gen::mul_bf16(Operand a, Operand b) {
  return bf16_from_f32(mul(f32_from_bf16(a), f32_from_bf16(b), Round::Rn, false, false), Round::Rn);
}
// The product of two bf16 is exact in f32, as for fma16.
Operand Gen::fma_bf16(Operand a, Operand b, Operand c) {
  return bf16_from_f32(fma_to_odd32(f32_from_bf16(a), f32_from_bf16(b), f32_from_bf16(c)), Round::Rn);
}

// log2(a) as ptx::fref::lg2 defines it (docs/isa.md section 11.1): a
// subnormal is first scaled by 2^24 (exactly, by an ffma); a = m 2^E with m
// in [sqrt(1/2), sqrt(2)) from the bits (the significand halved, E
// incremented, when it is above 0x3504F3), u = m - 1 exact, E as an f32 from
// 1.5 2^23 + E, r = q's terms of degree 1 to 9 by Horner, w = u r + (1/ln 2 -
// c0) with c0 the f32 nearest 1/ln 2, and log2(a) = E + u c0 + u w in two
// ffmas, the term u w first when E is 0 and u c0 first otherwise.
Operand Gen::lg2(Operand a, bool ftz) {
  constexpr uint32_t kOne = 0x3F800000u, kShift = 0x4B400000u;
  if (ftz) a = flush(a);
  Operand abs = e(Op::AND, a, K(kAbs));
  Operand sub = e(Op::SLTU, abs, K(0x800000u));
  Operand x = e(Op::SEL, sub, fma_rn(abs, K(0x4B800000u), K(kSign)), abs);  // 2^24 |a| if subnormal
  Operand fr = e(Op::AND, x, K(0x7FFFFFu));
  Operand up = e(Op::SLTU, K(0x3504F3u), fr);
  Operand u = fma_rn(e(Op::OR, fr, e(Op::SUB, K(kOne), e(Op::SHL, up, K(23)))), K(kOne), K(kOne | kSign));
  Operand E = e(Op::SUB, e(Op::ADD, e(Op::SHR, x, K(23)), up), e(Op::SEL, sub, K(151), K(127)));
  Operand Ef = fma_rn(e(Op::ADD, E, K(kShift)), K(kOne), K(kShift | kSign));
  Operand r = K(kLg2F32[9]);
  for (int i = 8; i >= 1; --i) r = fma_rn(r, u, K(kLg2F32[i]));
  Operand w = fma_rn(u, r, K(kLg2C0Lo));
  Operand e0 = e(Op::SEQ, E, K(0));
  Operand first = e(Op::SEL, e0, w, K(kLg2F32[0])), second = e(Op::SEL, e0, K(kLg2F32[0]), w);
  Operand res = fma_rn(u, second, fma_rn(u, first, Ef));
  // +-0: -inf; +inf; NaN and negative numbers: NaN.
  res = e(Op::SEL, abs, res, K(0xFF800000u));
  res = e(Op::SEL, e(Op::SEQ, a, K(kInf)), K(kInf), res);
  Operand nan = e(Op::OR, e(Op::SLTU, K(kInf), abs), e(Op::AND, e(Op::SHR, a, K(31)), e(Op::SNE, abs, K(0))));
  return e(Op::SEL, nan, K(kNaN), res);
}

// sin(a) (quarter 0) and cos(a) (quarter 1) as ptx::fref::sin and cos define
// them (docs/isa.md section 11.1): f32 fused multiply-adds rounded to nearest,
// integer operations for the selects.  x = a where |a| < 2^22, else a zero of
// a's sign (with ffma, a 0 + -0, which also makes an infinity or a NaN the
// NaN that then runs through every ffma; without, the NaN is selected at the
// end).  t = x 2/pi + 1.5 2^23 (+ quarter) rounds to the integer k (+
// quarter), t lying in [2^23, 2^24) for |x| < 2^22, so t's low bits are the
// quadrant; k = t - (1.5 2^23 + quarter) is exact, and so is x - k P1 (k = 0,
// or |x| > 3/4: x and k P1 are multiples of 2^-24, and of 2^-23 where |x| >=
// 1, and their difference is below 1.1); then r = x - k (P1 + P2 + P3) with
// two more roundings.  The quadrant's parity picks sin r = w + w z
// S(z) with w = r or cos r = w + w z C(z) with w = 1 (one Horner chain whose
// coefficients are selected), and its second bit negates w.  sin of |x| <
// 2^-12 is x: the correctly rounded value, and the sum w + (w z) S would be
// +0 for x = -0 (a product of -0 and S(0) < 0 is +0, and +0 + -0 is +0).
Operand Gen::sincos(Operand a, bool ftz, int quarter) {
  constexpr uint32_t kOne = 0x3F800000u;
  // a * b rounded to nearest: ffma with c = -0, or mul's integer sequence,
  // which gives the same bits at about half fma's cost.
  auto mul_rn = [&](Operand x, Operand y) { return ffma_ ? ffma(x, y, K(kSign)) : mul(x, y, Round::Rn, false, false); };
  if (ftz) a = flush(a);
  Operand abs = e(Op::AND, a, K(kAbs));
  Operand zero = ffma_ ? ffma(a, K(0), K(kSign)) : e(Op::AND, a, K(kSign));
  Operand x = e(Op::SEL, e(Op::SLTU, abs, K(0x4A800000u)), a, zero);
  const uint32_t shift = 0x4B400000u + uint32_t(quarter);
  Operand t = fma_rn(x, K(kTwoOverPiF32), K(shift));
  // k exactly: t - shift by ffma, or without it t's bits less shift's (the
  // integer k) converted, which is exact below 2^24.
  Operand k = ffma_ ? ffma(t, K(kOne), K(shift | kSign)) : from_int32(e(Op::SUB, t, K(shift)), true, Round::Rn);
  Operand r = x;
  for (uint32_t part : kPiOver2) r = fma_rn(k, K(part ^ kSign), r);
  Operand z = mul_rn(r, r);
  Operand odd = e(Op::AND, t, K(1));
  Operand p = e(Op::SEL, odd, K(kCosF32[3]), K(kSinF32[3]));
  for (int i = 2; i >= 0; --i) p = fma_rn(p, z, e(Op::SEL, odd, K(kCosF32[i]), K(kSinF32[i])));
  Operand w = e(Op::XOR, e(Op::SEL, odd, K(kOne), r), e(Op::SHL, e(Op::AND, t, K(2)), K(30)));
  Operand res = fma_rn(mul_rn(w, z), p, w);
  if (quarter == 0) res = e(Op::SEL, e(Op::SLTU, e(Op::AND, x, K(kAbs)), K(0x39800000u)), x, res);
  if (!ffma_) res = e(Op::SEL, e(Op::SLEU, K(kInf), abs), K(kNaN), res);
  return res;
}

Operand Gen::tanh(Operand a, bool ftz) {
  if (ftz) a = flush(a);
  Operand x = e(Op::AND, a, K(kAbs));
  // x * y + z rounded to nearest as one .rn{.ftz} operation: the machine's
  // ffma between flushes (mul, add and sub as fused multiply-adds: x y - 0,
  // x 1 + z, x (-1) + z), or this file's integer sequence for the operation.
  auto rn = [&](Operand x, Operand y, Operand z, Operand (Gen::*op)(Operand, Operand, Round, bool, bool), Operand p,
                Operand q) {
    if (!ffma_) return (this->*op)(p, q, Round::Rn, ftz, false);
    if (!ftz) return ffma(x, y, z);
    return flush(ffma(flush(x), flush(y), flush(z)));
  };
  constexpr uint32_t kTwoLog2e = 0x4038AA3Bu, kOne = 0x3F800000u;
  Operand t = ex2(rn(x, K(kTwoLog2e), K(kSign), &Gen::mul, x, K(kTwoLog2e)), ftz);
  Operand q = div(K(0x40000000u), rn(t, K(kOne), K(kOne), &Gen::add, t, K(kOne)), Round::Rn, ftz, false);
  Operand r = rn(q, K(kOne | kSign), K(kOne), &Gen::sub, K(kOne), q);
  r = e(Op::SEL, e(Op::SLTU, x, K(0x3A800000u)), x, r);  // |a| < 2^-10
  r = e(Op::OR, r, e(Op::AND, a, K(kSign)));
  return e(Op::SEL, e(Op::SLTU, K(kInf), x), K(kNaN), r);
}

// sqrt(a): the significand normalised, doubled when the unbiased exponent
// is odd, then the integer square root of m * 2^25 (a 25-bit root: 24 bits
// and the round bit) digit by digit, two bits of the radicand a step; the
// remainder gives the sticky bit.  -0 stays -0; other negatives are NaN.
Operand Gen::sqrt(Operand a, Round r, bool ftz) {
  if (ftz) a = flush(a);
  Operand abs = e(Op::AND, a, K(kAbs));
  Operand ex = e(Op::SHR, abs, K(23));
  Operand sg = sig_of(abs, ex);
  Operand z = e(Op::SUB, e(Op::CLZ, sg), K(8));
  Operand m = e(Op::SHL, sg, z);
  Operand E = e(Op::SUB, e(Op::SUB, e(Op::MAX, ex, K(1)), z), K(127));  // unbiased exponent
  Operand odd = e(Op::AND, E, K(1));
  m = e(Op::SHL, m, odd);
  E = e(Op::SUB, E, odd);
  auto [q, st] = root_bits(m);
  Operand res = round_pack(K(0), e(Op::ADD, e(Op::SAR, E, K(1)), K(127)), e(Op::SHL, q, K(7)), st, r, ftz);
  res = e(Op::SEL, abs, res, a);                                  // +-0
  res = e(Op::SEL, e(Op::SEQ, a, K(kInf)), K(kInf), res);         // +inf
  Operand nan = e(Op::OR, e(Op::SLTU, K(kInf), abs), e(Op::AND, e(Op::SLT, a, K(0)), e(Op::SNE, abs, K(0))));
  return e(Op::SEL, nan, K(kNaN), res);
}

// min/max order the values by a key that is the signed order of the floats
// with -0 below +0: negative values get their magnitude bits inverted.  A NaN
// operand gives the other one; two NaNs the canonical NaN.
Operand Gen::min(Operand a, Operand b, bool ftz) {
  if (ftz) a = flush(a), b = flush(b);
  auto key = [&](Operand x) { return e(Op::SEL, e(Op::SLT, x, K(0)), e(Op::XOR, x, K(kAbs)), x); };
  Operand res = e(Op::SEL, e(Op::SLT, key(b), key(a)), b, a);
  Operand na = e(Op::SLTU, K(kInf), e(Op::AND, a, K(kAbs))), nb = e(Op::SLTU, K(kInf), e(Op::AND, b, K(kAbs)));
  res = e(Op::SEL, na, b, res);
  res = e(Op::SEL, nb, a, res);
  return e(Op::SEL, e(Op::AND, na, nb), K(kNaN), res);
}
Operand Gen::max(Operand a, Operand b, bool ftz) {
  if (ftz) a = flush(a), b = flush(b);
  auto key = [&](Operand x) { return e(Op::SEL, e(Op::SLT, x, K(0)), e(Op::XOR, x, K(kAbs)), x); };
  Operand res = e(Op::SEL, e(Op::SLT, key(a), key(b)), b, a);
  Operand na = e(Op::SLTU, K(kInf), e(Op::AND, a, K(kAbs))), nb = e(Op::SLTU, K(kInf), e(Op::AND, b, K(kAbs)));
  res = e(Op::SEL, na, b, res);
  res = e(Op::SEL, nb, a, res);
  return e(Op::SEL, e(Op::AND, na, nb), K(kNaN), res);
}
Operand Gen::abs(Operand a, bool ftz) { return e(Op::AND, ftz ? flush(a) : a, K(kAbs)); }
Operand Gen::neg(Operand a, bool ftz) { return e(Op::XOR, ftz ? flush(a) : a, K(kSign)); }
Operand Gen::copysign(Operand a, Operand b) {
  return e(Op::OR, e(Op::AND, b, K(kAbs)), e(Op::AND, a, K(kSign)));
}

Operand Gen::testp(int kind, Operand a) {
  Operand x = e(Op::AND, a, K(kAbs));
  switch (kind) {
    case 1: return e(Op::SLTU, x, K(kInf));
    case 2: return e(Op::SEQ, x, K(kInf));
    case 3: return e(Op::SLEU, x, K(kInf));
    case 4: return e(Op::SLTU, K(kInf), x);
    case 5: return e(Op::SLTU, e(Op::SUB, x, K(0x800000)), K(kInf - 0x800000));
    case 6: return e(Op::SLTU, e(Op::SUB, x, K(1)), K(0x7FFFFF));
    default: return K(0);
  }
}

// Comparisons: the signed order of keys where a negative value is minus its
// magnitude (so -0 == +0), and unordered when either operand is a NaN.
// Comparisons.  With ffma, most take the sign of one difference, which a
// rounding to nearest keeps exactly (see compare_by_difference); the rest
// map each value to a signed key (negative values to minus their magnitude,
// so -0 = +0) and compare keys.
Operand Gen::compare(ptx::Cmp c, Operand a, Operand b, bool ftz) {
  if (ftz) a = flush(a), b = flush(b);
  if (ffma_ && c != ptx::Cmp::Nan && c != ptx::Cmp::Num)
    if (Operand r; compare_by_difference(c, a, b, r)) return r;
  Operand un = e(Op::SLTU, K(kInf), e(Op::MAXU, e(Op::AND, a, K(kAbs)), e(Op::AND, b, K(kAbs))));
  if (c == ptx::Cmp::Nan) return un;
  if (c == ptx::Cmp::Num) return e(Op::XOR, un, K(1));
  auto key = [&](Operand x) { return e(Op::SEL, e(Op::SLT, x, K(0)), e(Op::SUB, K(kSign), x), x); };
  Operand ka = key(a), kb = key(b);
  Operand r;
  bool unordered = false;
  switch (c) {
    case ptx::Cmp::Equ: unordered = true; [[fallthrough]];
    case ptx::Cmp::Eq: r = e(Op::SEQ, ka, kb); break;
    case ptx::Cmp::Neu: unordered = true; [[fallthrough]];
    case ptx::Cmp::Ne: r = e(Op::SNE, ka, kb); break;
    case ptx::Cmp::Ltu: unordered = true; [[fallthrough]];
    case ptx::Cmp::Lt: r = e(Op::SLT, ka, kb); break;
    case ptx::Cmp::Leu: unordered = true; [[fallthrough]];
    case ptx::Cmp::Le: r = e(Op::SLE, ka, kb); break;
    case ptx::Cmp::Gtu: unordered = true; [[fallthrough]];
    case ptx::Cmp::Gt: r = e(Op::SLT, kb, ka); break;
    case ptx::Cmp::Geu: unordered = true; [[fallthrough]];
    case ptx::Cmp::Ge: r = e(Op::SLE, kb, ka); break;
    default: return K(0);
  }
  if (unordered) return e(Op::OR, r, un);
  return e(Op::AND, r, e(Op::XOR, un, K(1)));
}

// D = y - x by one ffma (x * -1 + y) has the sign of the exact difference
// (overflow gives an infinity of that sign), is zero exactly when x = y
// numerically, and is the canonical NaN 0x7FFFFFFF (positive as a signed
// word) when x or y is a NaN, and also when x = y = the same infinity.
// Its zero is +0 unless x = +0 and y = -0.
//
// Against a finite constant C (y = C, read as +0 when it is -0): D is never
// -0 nor a NaN from equal infinities, so x > C iff D < 0, x >= C iff D <= 0
// (signed: +0 or negative), x == C iff D = 0, x <= C iff D is in [0, +inf],
// x < C iff D is in [1, +inf]; each unordered comparison is the negation of
// the ordered one it excludes (ltu = !ge ...).  Two registers: x < y iff D
// is in [1, +inf] and x > y iff D is in [-0 + 1 ulp, -inf] (equal infinities
// and -0 fall outside both, as they should); the rest use keys.  false: no
// such form (r untouched).
bool Gen::compare_by_difference(ptx::Cmp c, Operand a, Operand b, Operand& r) {
  using C = ptx::Cmp;
  auto finite = [](Operand o) { return o.imm && (o.v & kAbs) < kInf; };
  auto in_range = [&](Operand d, uint32_t lo, uint32_t n) {  // lo <= d < lo + n, unsigned
    return e(Op::SLTU, e(Op::SUB, d, K(lo)), K(n));
  };
  if (!finite(a) && !finite(b)) {
    if (c != C::Lt && c != C::Gt) return false;
    Operand d = ffma(a, K(0xBF800000u), b);
    r = c == C::Lt ? in_range(d, 1, kInf) : in_range(d, kSign + 1, kInf);
    return true;
  }
  if (!finite(b)) {  // the constant on the left: x = b, and the comparison mirrored
    std::swap(a, b);
    switch (c) {
      case C::Lt: c = C::Gt; break;
      case C::Gt: c = C::Lt; break;
      case C::Le: c = C::Ge; break;
      case C::Ge: c = C::Le; break;
      case C::Ltu: c = C::Gtu; break;
      case C::Gtu: c = C::Ltu; break;
      case C::Leu: c = C::Geu; break;
      case C::Geu: c = C::Leu; break;
      default: break;
    }
  }
  if ((b.v & kAbs) == 0) b = K(0);
  Operand d = ffma(a, K(0xBF800000u), b);  // C - x
  switch (c) {
    case C::Gt: r = e(Op::SLT, d, K(0)); break;
    case C::Leu: r = e(Op::SLT, K(0xFFFFFFFFu), d); break;
    case C::Ge: r = e(Op::SLT, d, K(1)); break;
    case C::Ltu: r = e(Op::SLT, K(0), d); break;
    case C::Le: r = e(Op::SLEU, d, K(kInf)); break;
    case C::Gtu: r = e(Op::SLTU, K(kInf), d); break;
    case C::Lt: r = in_range(d, 1, kInf); break;
    case C::Geu: r = e(Op::SLEU, K(kInf), e(Op::SUB, d, K(1))); break;
    case C::Eq: r = e(Op::SEQ, d, K(0)); break;
    case C::Neu: r = e(Op::SNE, d, K(0)); break;
    case C::Ne: r = e(Op::AND, e(Op::SNE, d, K(0)), e(Op::SNE, d, K(kNaN))); break;
    case C::Equ: r = e(Op::OR, e(Op::SEQ, d, K(0)), e(Op::SEQ, d, K(kNaN))); break;
    default: return false;
  }
  return true;
}

// With ffma, .rn: v = hi 2^16 + lo (lo the low half, unsigned), the floats
// X = 1.5 2^23 + hi (bits 0x4B400000 + hi) and Y = 2^23 + lo (bits
// 0x4B000000 | lo) are exact, so is u = X 2^16 - (1.5 2^39 + 2^23) = (hi -
// 128) 2^16, and Y + u = v is rounded once.
Operand Gen::from_int32(Operand v, bool is_signed, Round r) {
  if (ffma_ && r == Round::Rn) {
    Operand x = e(Op::ADD, e(is_signed ? Op::SAR : Op::SHR, v, K(16)), K(0x4B400000u));
    Operand y = e(Op::OR, e(Op::AND, v, K(0xFFFF)), K(0x4B000000u));
    return ffma(y, K(0x3F800000u), ffma(x, K(0x47800000u), K(0xD3400080u)));
  }
  Operand s = is_signed ? e(Op::AND, v, K(kSign)) : K(0);
  Operand mag = is_signed ? e(Op::SEL, s, e(Op::SUB, K(0), v), v) : v;
  Operand n = e(Op::CLZ, mag);
  // mag = (mag << n) / 2^31 * 2^(31 - n)
  return round_pack(s, e(Op::SUB, K(158), n), e(Op::SHL, mag, n), K(0), r, false);
}

Operand Gen::from_int64(Operand lo, Operand hi, bool is_signed, Round r) {
  Operand s = is_signed ? e(Op::AND, hi, K(kSign)) : K(0);
  if (is_signed) {  // the magnitude: negate when negative
    Operand nl = e(Op::SUB, K(0), lo);
    Operand nh = e(Op::SUB, e(Op::SUB, K(0), hi), e(Op::SNE, lo, K(0)));
    lo = e(Op::SEL, s, nl, lo);
    hi = e(Op::SEL, s, nh, hi);
  }
  Operand hz = e(Op::SEQ, hi, K(0));
  Operand n = e(Op::SEL, hz, e(Op::ADD, e(Op::CLZ, lo), K(32)), e(Op::CLZ, hi));
  Operand m = e(Op::OR, e(Op::OR, e(Op::SHL, hi, n), e(Op::SHR, lo, e(Op::SUB, K(32), n))),
                e(Op::SHL, lo, e(Op::SUB, n, K(32))));
  Operand st = e(Op::SNE, e(Op::SHL, lo, n), K(0));
  return round_pack(s, e(Op::SUB, K(190), n), m, st, r, false);
}

// |f| = m / 2^31 * 2^(ex - 127) with m = significand << 8: its integer part
// is m >> (158 - ex), the next bit the round bit, the rest sticky.
Operand Gen::to_int32(Operand f, bool is_signed, unsigned bits, Round r, bool ftz) {
  if (ftz) f = flush(f);
  Operand neg = e(Op::SHR, f, K(31));
  Operand abs = e(Op::AND, f, K(kAbs));
  Operand ex = e(Op::SHR, abs, K(23));
  Operand m = e(Op::SHL, sig_of(abs, ex), K(8));
  Operand sh = e(Op::SUB, K(158), e(Op::MAX, ex, K(1)));
  Operand ip = e(Op::SHR, m, sh);
  Operand rb = e(Op::AND, e(Op::SHR, m, e(Op::SUB, sh, K(1))), K(1));
  Operand st = e(Op::SEL, e(Op::SLTU, K(32), sh), e(Op::SNE, m, K(0)),
                 e(Op::SNE, e(Op::SHL, m, e(Op::SUB, K(33), sh)), K(0)));
  Operand inc = K(0);
  switch (r) {
    case Round::Rn: inc = e(Op::AND, rb, e(Op::OR, st, e(Op::AND, ip, K(1)))); break;
    case Round::Rz: break;
    case Round::Rm: inc = e(Op::AND, neg, e(Op::OR, rb, st)); break;
    case Round::Rp: inc = e(Op::AND, e(Op::XOR, neg, K(1)), e(Op::OR, rb, st)); break;
  }
  Operand mag = e(Op::ADD, ip, inc);
  Operand big = e(Op::SLT, K(158), ex);  // |f| >= 2^32, infinities and NaNs
  Operand res;
  if (is_signed) {
    const uint32_t top = 1u << (bits - 1);
    Operand pos = e(Op::SEL, e(Op::OR, big, e(Op::SLTU, K(top - 1), mag)), K(top - 1), mag);
    Operand ng = e(Op::SEL, e(Op::OR, big, e(Op::SLTU, K(top), mag)), K(uint32_t(-int64_t(top))),
                   e(Op::SUB, K(0), mag));
    res = e(Op::SEL, neg, ng, pos);
  } else {
    const uint32_t all = bits == 32 ? ~0u : (1u << bits) - 1;
    Operand pos = e(Op::SEL, e(Op::OR, big, e(Op::SLTU, K(all), mag)), K(all), mag);
    res = e(Op::SEL, neg, K(0), pos);
  }
  return e(Op::SEL, e(Op::SLTU, K(kInf), abs), K(0), res);
}

// Up to 2^32 as to_int32's magnitude; above, the significand shifted left
// (exact); then the sign and saturation.
std::pair<Operand, Operand> Gen::to_int64(Operand f, bool is_signed, Round r, bool ftz) {
  if (ftz) f = flush(f);
  Operand neg = e(Op::SHR, f, K(31));
  Operand abs = e(Op::AND, f, K(kAbs));
  Operand ex = e(Op::SHR, abs, K(23));
  Operand m = e(Op::SHL, sig_of(abs, ex), K(8));
  Operand sh = e(Op::SUB, K(158), e(Op::MAX, ex, K(1)));
  Operand ip = e(Op::SHR, m, sh);
  Operand rb = e(Op::AND, e(Op::SHR, m, e(Op::SUB, sh, K(1))), K(1));
  Operand st = e(Op::SEL, e(Op::SLTU, K(32), sh), e(Op::SNE, m, K(0)),
                 e(Op::SNE, e(Op::SHL, m, e(Op::SUB, K(33), sh)), K(0)));
  Operand inc = K(0);
  switch (r) {
    case Round::Rn: inc = e(Op::AND, rb, e(Op::OR, st, e(Op::AND, ip, K(1)))); break;
    case Round::Rz: break;
    case Round::Rm: inc = e(Op::AND, neg, e(Op::OR, rb, st)); break;
    case Round::Rp: inc = e(Op::AND, e(Op::XOR, neg, K(1)), e(Op::OR, rb, st)); break;
  }
  Operand small = e(Op::ADD, ip, inc);  // below 2^31 unless sh = 0, where nothing rounds
  Operand k = e(Op::SUB, ex, K(158));   // the left shift when ex > 158
  Operand big_hi = e(Op::OR, e(Op::SHR, m, e(Op::SUB, K(32), k)), e(Op::SHL, m, e(Op::SUB, k, K(32))));
  Operand big_lo = e(Op::SHL, m, k);
  Operand is_big = e(Op::SLT, K(158), ex);
  Operand hi = e(Op::SEL, is_big, big_hi, K(0)), lo = e(Op::SEL, is_big, big_lo, small);
  Operand nan = e(Op::SLTU, K(kInf), abs);
  if (is_signed) {
    Operand over = e(Op::SLT, K(189), ex);  // |f| >= 2^63
    Operand nl = e(Op::SUB, K(0), lo), nh = e(Op::SUB, e(Op::SUB, K(0), hi), e(Op::SNE, lo, K(0)));
    lo = e(Op::SEL, neg, nl, lo), hi = e(Op::SEL, neg, nh, hi);
    lo = e(Op::SEL, over, e(Op::SEL, neg, K(0), K(~0u)), lo);
    hi = e(Op::SEL, over, e(Op::SEL, neg, K(kSign), K(kAbs)), hi);
  } else {
    Operand over = e(Op::SLT, K(190), ex);  // |f| >= 2^64
    lo = e(Op::SEL, over, K(~0u), lo), hi = e(Op::SEL, over, K(~0u), hi);
    lo = e(Op::SEL, neg, K(0), lo), hi = e(Op::SEL, neg, K(0), hi);
  }
  return {e(Op::SEL, nan, K(0), lo), e(Op::SEL, nan, K(0), hi)};
}

// f32 to f64: the significand normalised (a subnormal f32 is a normal f64),
// the exponent rebiased; the 23 fraction bits become the top of the 52.
std::pair<Operand, Operand> Gen::to_f64(Operand f, bool ftz) {
  if (ftz) f = flush(f);
  Operand s = e(Op::AND, f, K(kSign));
  Operand abs = e(Op::AND, f, K(kAbs));
  Operand ex = e(Op::SHR, abs, K(23));
  Operand sg = sig_of(abs, ex);
  Operand z = e(Op::SUB, e(Op::CLZ, sg), K(8));
  Operand frac = e(Op::AND, e(Op::SHL, sg, z), K(0x7FFFFF));
  Operand E = e(Op::ADD, e(Op::SUB, e(Op::MAX, ex, K(1)), z), K(1023 - 127));
  Operand hi = e(Op::OR, e(Op::SHL, E, K(20)), e(Op::SHR, frac, K(3)));
  Operand lo = e(Op::SHL, frac, K(29));
  // Zero; infinity and NaN (exponent all ones, the payload's top bit set for a NaN).
  Operand zero = e(Op::SEQ, abs, K(0)), special = e(Op::SLEU, K(kInf), abs);
  Operand ffrac = e(Op::AND, abs, K(0x7FFFFF));
  Operand shi = e(Op::OR, K(0x7FF00000u), e(Op::SHR, ffrac, K(3)));
  shi = e(Op::SEL, ffrac, e(Op::OR, shi, K(0x00080000u)), shi);
  hi = e(Op::SEL, special, shi, e(Op::SEL, zero, K(0), hi));
  lo = e(Op::SEL, special, e(Op::SHL, ffrac, K(29)), e(Op::SEL, zero, K(0), lo));
  return {lo, e(Op::OR, hi, s)};
}

// f64 to f32: the 53-bit significand's top 32 bits (leading 1 at bit 31)
// and the rest as sticky; an f64 subnormal is far below the f32 range and
// only rounds (to 0 or the smallest subnormal).
Operand Gen::from_f64(Operand lo, Operand hi, Round r, bool ftz, bool sat) {
  Operand s = e(Op::AND, hi, K(kSign));
  Operand ahi = e(Op::AND, hi, K(kAbs));
  Operand ex = e(Op::SHR, ahi, K(20));
  Operand fh = e(Op::AND, ahi, K(0xFFFFF));
  Operand m = e(Op::OR, e(Op::OR, e(Op::SHL, fh, K(11)), e(Op::SHR, lo, K(21))), K(kSign));
  Operand st = e(Op::SNE, e(Op::SHL, lo, K(11)), K(0));
  Operand nonzero = e(Op::OR, ahi, lo);
  Operand ef = e(Op::SEL, ex, e(Op::SUB, ex, K(1023 - 127)), K(uint32_t(-2000)));
  m = e(Op::SEL, nonzero, m, K(0));
  Operand res = round_pack(s, ef, m, st, r, ftz);
  Operand inf = e(Op::AND, e(Op::SEQ, ahi, K(0x7FF00000u)), e(Op::SEQ, lo, K(0)));
  Operand nan = e(Op::OR, e(Op::SLTU, K(0x7FF00000u), ahi), e(Op::AND, e(Op::SEQ, ahi, K(0x7FF00000u)), e(Op::SNE, lo, K(0))));
  res = e(Op::SEL, inf, e(Op::OR, s, K(kInf)), res);
  res = e(Op::SEL, nan, K(kNaN), res);
  return sat ? saturate(res) : res;
}

// Below 2^23 the value is rounded as in to_int32 (an integer below 2^24,
// converted back exactly, keeping the sign: -0.25 rounds to -0); from 2^23 on
// it is integral already.
Operand Gen::round_int(Operand f, bool integral, Round r, bool ftz, bool sat) {
  if (ftz) f = flush(f);
  Operand res = f;
  Operand abs = e(Op::AND, f, K(kAbs));
  if (integral && ffma_) {
    // With ffma: the magnitude below 2^23 plus 2^23 is rounded to an
    // integer, ties to even, so q = (|f| + 2^23) - 2^23 = rint(|f|) exactly;
    // d = |f| - q has its exact sign (+0 when equal), so q is one too high
    // (d < 0) or too low (d > 0) for the other roundings of the magnitude,
    // which .rm and .rp choose by f's sign; the result has f's sign.
    Operand s = e(Op::AND, f, K(kSign));
    Operand q = ffma(K(0x4B000000u), K(0xBF800000u), ffma(abs, K(0x3F800000u), K(0x4B000000u)));
    if (r != Round::Rn) {
      Operand d = ffma(q, K(0xBF800000u), abs);
      Operand down = e(Op::SEL, e(Op::SHR, d, K(31)), K(0xBF800000u), K(0));      // -1 where q > |f|
      Operand up = e(Op::SEL, e(Op::SLT, K(0), d), K(0x3F800000u), K(0));        // +1 where q < |f|
      Operand step = r == Round::Rz ? down
                     : e(Op::SEL, s, r == Round::Rm ? up : down, r == Round::Rm ? down : up);
      q = ffma(step, K(0x3F800000u), q);
    }
    res = e(Op::SEL, e(Op::SLTU, abs, K(0x4B000000u)), e(Op::OR, q, s), f);  // below 2^23
  } else if (integral) {
    Operand s = e(Op::AND, f, K(kSign));
    Operand neg = e(Op::SHR, f, K(31));
    Operand ex = e(Op::SHR, abs, K(23));
    Operand m = e(Op::SHL, sig_of(abs, ex), K(8));
    Operand sh = e(Op::SUB, K(158), e(Op::MAX, ex, K(1)));  // >= 9 below 2^23
    Operand ip = e(Op::SHR, m, sh);
    Operand rb = e(Op::AND, e(Op::SHR, m, e(Op::SUB, sh, K(1))), K(1));
    Operand st = e(Op::SEL, e(Op::SLTU, K(32), sh), e(Op::SNE, m, K(0)),
                   e(Op::SNE, e(Op::SHL, m, e(Op::SUB, K(33), sh)), K(0)));
    Operand inc = K(0);
    switch (r) {
      case Round::Rn: inc = e(Op::AND, rb, e(Op::OR, st, e(Op::AND, ip, K(1)))); break;
      case Round::Rz: break;
      case Round::Rm: inc = e(Op::AND, neg, e(Op::OR, rb, st)); break;
      case Round::Rp: inc = e(Op::AND, e(Op::XOR, neg, K(1)), e(Op::OR, rb, st)); break;
    }
    Operand mag = e(Op::ADD, ip, inc);
    Operand n = e(Op::CLZ, mag);
    // mag = (mag << n) / 2^31 * 2^(31 - n): exponent field 158 - n, the implicit bit adding 1 to 157 - n.
    Operand packed = e(Op::ADD, e(Op::SHL, e(Op::SUB, K(157), n), K(23)), e(Op::SHR, e(Op::SHL, mag, n), K(8)));
    packed = e(Op::OR, e(Op::SEL, mag, packed, K(0)), s);
    res = e(Op::SEL, e(Op::SLTU, abs, K(0x4B000000u)), packed, f);  // below 2^23
  }
  res = e(Op::SEL, e(Op::SLTU, K(kInf), abs), K(kNaN), res);
  return sat ? saturate(res) : res;
}

// ---- binary64 ---------------------------------------------------------------
//
// The same scheme on register pairs {lo, hi}: a significand with its leading
// 1 at bit 63 and value m / 2^63 * 2^(e - 1023); eleven guard bits below the
// 53 that are kept.

Gen::W Gen::shl64(W x, Operand n) {
  auto [l, h] = x;
  return {e(Op::SHL, l, n), e(Op::OR, e(Op::OR, e(Op::SHL, h, n), e(Op::SHR, l, e(Op::SUB, K(32), n))),
                              e(Op::SHL, l, e(Op::SUB, n, K(32))))};
}
Gen::W Gen::shr64(W x, Operand n) {
  auto [l, h] = x;
  return {e(Op::OR, e(Op::OR, e(Op::SHR, l, n), e(Op::SHL, h, e(Op::SUB, K(32), n))), e(Op::SHR, h, e(Op::SUB, n, K(32)))),
          e(Op::SHR, h, n)};
}
// 1 when x >> n drops a nonzero bit.
Operand Gen::shr64_lost(W x, Operand n) {
  auto [l, h] = x;
  Operand lost_l = e(Op::SEL, e(Op::SLTU, K(32), n), l, e(Op::SHL, l, e(Op::SUB, K(32), n)));
  Operand lost_h = e(Op::SEL, e(Op::SLTU, K(64), n), h, e(Op::SHL, h, e(Op::SUB, K(64), n)));
  return e(Op::SNE, e(Op::OR, lost_l, lost_h), K(0));
}
Operand Gen::clz64(W x) {
  return e(Op::SEL, e(Op::SEQ, x.second, K(0)), e(Op::ADD, e(Op::CLZ, x.first), K(32)), e(Op::CLZ, x.second));
}
Operand Gen::nan64(W x) {
  Operand ah = e(Op::AND, x.second, K(kAbs));
  return e(Op::OR, e(Op::SLTU, K(0x7FF00000u), ah), e(Op::AND, e(Op::SEQ, ah, K(0x7FF00000u)), e(Op::SNE, x.first, K(0))));
}

Gen::W Gen::round_pack64(Operand s, Operand ex, W m, Operand st, Round r) {
  Operand sh = e(Op::MAX, e(Op::SUB, K(1), ex), K(0));
  st = e(Op::OR, st, shr64_lost(m, sh));
  W mt = shr64(m, sh);
  Operand eb = e(Op::MIN, e(Op::SUB, e(Op::MAX, ex, K(1)), K(1)), K(2047));
  Operand blo = e(Op::OR, e(Op::SHR, mt.first, K(11)), e(Op::SHL, mt.second, K(21)));
  Operand bhi = e(Op::ADD, e(Op::SHL, eb, K(20)), e(Op::SHR, mt.second, K(11)));
  Operand rest = e(Op::AND, mt.first, K(0x7FF));
  Operand inc = K(0);
  switch (r) {
    case Round::Rn:
      inc = e(Op::SLTU, K(0x400), e(Op::ADD, rest, e(Op::OR, st, e(Op::AND, blo, K(1)))));
      break;
    case Round::Rz: break;
    case Round::Rm:
    case Round::Rp: {
      Operand inexact = e(Op::SNE, e(Op::OR, rest, st), K(0));
      Operand neg = e(Op::SHR, s, K(31));
      inc = e(Op::AND, inexact, r == Round::Rm ? neg : e(Op::XOR, neg, K(1)));
      break;
    }
  }
  Operand lo = e(Op::ADD, blo, inc);
  Operand hi = e(Op::ADD, bhi, e(Op::SLTU, lo, inc));
  // Overflow: infinity or the largest finite value, as the rounding says.
  Operand to_inf = r == Round::Rn   ? K(1)
                   : r == Round::Rz ? K(0)
                   : r == Round::Rm ? e(Op::SHR, s, K(31))
                                    : e(Op::XOR, e(Op::SHR, s, K(31)), K(1));
  Operand ovf = e(Op::SLEU, K(0x7FF00000u), hi);
  lo = e(Op::SEL, ovf, e(Op::SEL, to_inf, K(0), K(~0u)), lo);
  hi = e(Op::SEL, ovf, e(Op::SEL, to_inf, K(0x7FF00000u), K(0x7FEFFFFFu)), hi);
  Operand nz = e(Op::OR, m.first, m.second);
  lo = e(Op::SEL, nz, lo, K(0));
  hi = e(Op::SEL, nz, hi, K(0));
  return {lo, e(Op::OR, hi, s)};
}

Gen::W Gen::add64(W a, W b, Round r) {
  Operand ah = e(Op::AND, a.second, K(kAbs)), bh = e(Op::AND, b.second, K(kAbs));
  // |a| < |b| as 64-bit magnitudes: b is the bigger one.
  Operand swap = e(Op::OR, e(Op::SLTU, ah, bh), e(Op::AND, e(Op::SEQ, ah, bh), e(Op::SLTU, a.first, b.first)));
  W big = {e(Op::SEL, swap, b.first, a.first), e(Op::SEL, swap, b.second, a.second)};
  W sml = {e(Op::SEL, swap, a.first, b.first), e(Op::SEL, swap, a.second, b.second)};
  Operand sB = e(Op::AND, big.second, K(kSign));
  Operand subtract = e(Op::SHR, e(Op::XOR, a.second, b.second), K(31));
  auto unpack = [&](W x, Operand& ex) -> W {
    Operand h = e(Op::AND, x.second, K(kAbs));
    Operand xe = e(Op::SHR, h, K(20));
    ex = e(Op::MAX, xe, K(1));
    Operand fh = e(Op::AND, h, K(0xFFFFF));
    return shl64({x.first, e(Op::SEL, xe, e(Op::OR, fh, K(0x100000)), fh)}, K(10));  // leading 1 at bit 62
  };
  Operand eB, eS;
  W mB = unpack(big, eB), mS = unpack(sml, eS);
  Operand d = e(Op::SUB, eB, eS);
  Operand st = shr64_lost(mS, d);
  W ms = shr64(mS, d);
  // B + S, or B - S - st as B + ~S + 1 - st.
  Operand xl = e(Op::SEL, subtract, e(Op::XOR, ms.first, K(~0u)), ms.first);
  Operand xh = e(Op::SEL, subtract, e(Op::XOR, ms.second, K(~0u)), ms.second);
  Operand cin = e(Op::AND, subtract, e(Op::XOR, st, K(1)));
  Operand l1 = e(Op::ADD, mB.first, xl);
  Operand l2 = e(Op::ADD, l1, cin);
  Operand h = e(Op::ADD, e(Op::ADD, e(Op::ADD, mB.second, xh), e(Op::SLTU, l1, mB.first)), e(Op::SLTU, l2, cin));
  W v = {l2, h};
  Operand n = clz64(v);
  W m = shl64(v, n);
  Operand ex = e(Op::SUB, e(Op::ADD, eB, K(1)), n);
  Operand zero = e(Op::AND, subtract, e(Op::SEQ, e(Op::OR, l2, h), K(0)));
  Operand s = e(Op::SEL, zero, K(r == Round::Rm ? kSign : 0), sB);
  W res = round_pack64(s, ex, m, st, r);
  // B infinite or NaN: B; NaN for a NaN or inf - inf.
  Operand bigh = e(Op::AND, big.second, K(kAbs));
  Operand special = e(Op::SLEU, K(0x7FF00000u), bigh);
  Operand smlinf = e(Op::AND, e(Op::SEQ, e(Op::AND, sml.second, K(kAbs)), K(0x7FF00000u)), e(Op::SEQ, sml.first, K(0)));
  Operand nan = e(Op::OR, nan64(big), e(Op::AND, subtract, smlinf));
  Operand lo = e(Op::SEL, special, big.first, res.first), hi = e(Op::SEL, special, big.second, res.second);
  return {e(Op::SEL, nan, K(~0u), lo), e(Op::SEL, nan, K(kAbs), hi)};
}

Gen::W Gen::sub64(W a, W b, Round r) { return add64(a, {b.first, e(Op::XOR, b.second, K(kSign))}, r); }

// a * b: significands normalised to bit 63, the 128-bit product from four
// 32x32 products, its top 64 bits normalised, the rest sticky.
Gen::W Gen::mul64(W a, W b, Round r) {
  Operand s = e(Op::AND, e(Op::XOR, a.second, b.second), K(kSign));
  auto unpack = [&](W x, Operand& ex) -> W {
    Operand h = e(Op::AND, x.second, K(kAbs));
    Operand xe = e(Op::SHR, h, K(20));
    Operand fh = e(Op::AND, h, K(0xFFFFF));
    W sig = {x.first, e(Op::SEL, xe, e(Op::OR, fh, K(0x100000)), fh)};
    Operand z = clz64(sig);
    ex = e(Op::SUB, e(Op::MAX, xe, K(1)), e(Op::SUB, z, K(11)));
    return shl64(sig, z);
  };
  Operand ea, eb;
  W A = unpack(a, ea), B = unpack(b, eb);
  Operand w0 = e(Op::MUL, A.first, B.first), c0 = e(Op::MULHU, A.first, B.first);
  Operand lh_lo = e(Op::MUL, A.first, B.second), lh_hi = e(Op::MULHU, A.first, B.second);
  Operand hl_lo = e(Op::MUL, A.second, B.first), hl_hi = e(Op::MULHU, A.second, B.first);
  Operand hh_lo = e(Op::MUL, A.second, B.second), hh_hi = e(Op::MULHU, A.second, B.second);
  Operand t1 = e(Op::ADD, c0, lh_lo);
  Operand k1 = e(Op::SLTU, t1, c0);
  Operand w1 = e(Op::ADD, t1, hl_lo);
  k1 = e(Op::ADD, k1, e(Op::SLTU, w1, t1));
  Operand t2 = e(Op::ADD, lh_hi, hl_hi);
  Operand k2 = e(Op::SLTU, t2, lh_hi);
  Operand t3 = e(Op::ADD, t2, hh_lo);
  k2 = e(Op::ADD, k2, e(Op::SLTU, t3, t2));
  Operand w2 = e(Op::ADD, t3, k1);
  k2 = e(Op::ADD, k2, e(Op::SLTU, w2, t3));
  Operand w3 = e(Op::ADD, hh_hi, k2);
  Operand n = e(Op::CLZ, w3);  // 0 or 1 (32: a zero operand)
  W m = {e(Op::OR, e(Op::SHL, w2, n), e(Op::SHR, w1, e(Op::SUB, K(32), n))),
         e(Op::OR, e(Op::SHL, w3, n), e(Op::SHR, w2, e(Op::SUB, K(32), n)))};
  Operand st = e(Op::SNE, e(Op::OR, e(Op::SHL, w1, n), w0), K(0));
  // value = (A / 2^63)(B / 2^63) 2^(ea + eb - 2046) = m / 2^63 * 2^(ea + eb - 2046 + 1 - n)
  Operand ex = e(Op::SUB, e(Op::ADD, ea, eb), e(Op::ADD, n, K(1023 - 1)));
  W res = round_pack64(s, ex, m, st, r);
  Operand ah = e(Op::AND, a.second, K(kAbs)), bh = e(Op::AND, b.second, K(kAbs));
  Operand ainf = e(Op::AND, e(Op::SEQ, ah, K(0x7FF00000u)), e(Op::SEQ, a.first, K(0)));
  Operand binf = e(Op::AND, e(Op::SEQ, bh, K(0x7FF00000u)), e(Op::SEQ, b.first, K(0)));
  Operand azero = e(Op::SEQ, e(Op::OR, ah, a.first), K(0)), bzero = e(Op::SEQ, e(Op::OR, bh, b.first), K(0));
  Operand inf = e(Op::OR, ainf, binf);
  Operand nan = e(Op::OR, e(Op::OR, nan64(a), nan64(b)), e(Op::OR, e(Op::AND, ainf, bzero), e(Op::AND, binf, azero)));
  Operand lo = e(Op::SEL, inf, K(0), res.first), hi = e(Op::SEL, inf, e(Op::OR, s, K(0x7FF00000u)), res.second);
  return {e(Op::SEL, nan, K(~0u), lo), e(Op::SEL, nan, K(kAbs), hi)};
}

Gen::W Gen::from_int_to64(W v, bool is_signed, Round r) {
  Operand s = is_signed ? e(Op::AND, v.second, K(kSign)) : K(0);
  if (is_signed) {
    Operand nl = e(Op::SUB, K(0), v.first), nh = e(Op::SUB, e(Op::SUB, K(0), v.second), e(Op::SNE, v.first, K(0)));
    v = {e(Op::SEL, s, nl, v.first), e(Op::SEL, s, nh, v.second)};
  }
  Operand n = clz64(v);
  return round_pack64(s, e(Op::SUB, K(1023 + 63), n), shl64(v, n), K(0), r);
}

// The magnitude rounded to an integer: with M the significand at bit 63,
// |f| = M * 2^(ex - 1086), so the integer part is M >> (1086 - ex), the next
// bit the round bit and the rest sticky; then the sign and saturation.

Gen::W Gen::to_int_from64(W f, bool is_signed, unsigned bits, Round r) {
  Operand h = e(Op::AND, f.second, K(kAbs));
  Operand xe = e(Op::SHR, h, K(20));
  Operand fh = e(Op::AND, h, K(0xFFFFF));
  W M = shl64({f.first, e(Op::SEL, xe, e(Op::OR, fh, K(0x100000)), fh)}, K(11));
  Operand neg = e(Op::SHR, f.second, K(31));
  Operand sh = e(Op::SUB, K(1086), e(Op::MAX, xe, K(1)));
  W ip = shr64(M, sh);
  Operand sh1 = e(Op::SUB, sh, K(1));
  Operand rb = e(Op::AND, shr64(M, sh1).first, K(1));
  Operand st = e(Op::AND, shr64_lost(M, sh1), e(Op::SNE, sh, K(0)));
  Operand inc = K(0);
  switch (r) {
    case Round::Rn: inc = e(Op::AND, rb, e(Op::OR, st, e(Op::AND, ip.first, K(1)))); break;
    case Round::Rz: break;
    case Round::Rm: inc = e(Op::AND, neg, e(Op::OR, rb, st)); break;
    case Round::Rp: inc = e(Op::AND, e(Op::XOR, neg, K(1)), e(Op::OR, rb, st)); break;
  }
  Operand lo = e(Op::ADD, ip.first, inc);
  Operand hi = e(Op::ADD, ip.second, e(Op::SLTU, lo, inc));
  Operand big = e(Op::SLT, K(1086), xe);  // |f| >= 2^64, infinities and NaNs
  Operand nan = nan64(f);
  W res;
  if (bits == 64) {
    if (is_signed) {  // at most 2^63 - 1, or 2^63 for a negative value
      Operand over = e(Op::OR, big, e(Op::SLTU, e(Op::ADD, K(0x7FFFFFFFu), neg), hi));
      over = e(Op::OR, over, e(Op::AND, neg, e(Op::AND, e(Op::SEQ, hi, K(0x80000000u)), e(Op::SNE, lo, K(0)))));
      Operand nl = e(Op::SUB, K(0), lo), nh = e(Op::SUB, e(Op::SUB, K(0), hi), e(Op::SNE, lo, K(0)));
      res = {e(Op::SEL, neg, nl, lo), e(Op::SEL, neg, nh, hi)};
      res = {e(Op::SEL, over, e(Op::SEL, neg, K(0), K(~0u)), res.first),
             e(Op::SEL, over, e(Op::SEL, neg, K(kSign), K(kAbs)), res.second)};
    } else {
      Operand over = big;
      res = {e(Op::SEL, over, K(~0u), lo), e(Op::SEL, over, K(~0u), hi)};
      res = {e(Op::SEL, neg, K(0), res.first), e(Op::SEL, neg, K(0), res.second)};
    }
  } else {
    Operand wide = e(Op::OR, big, e(Op::SNE, hi, K(0)));
    Operand v;
    if (is_signed) {
      Operand pos = e(Op::SEL, e(Op::OR, wide, e(Op::SLTU, K(0x7FFFFFFFu), lo)), K(0x7FFFFFFFu), lo);
      Operand ng = e(Op::SEL, e(Op::OR, wide, e(Op::SLTU, K(0x80000000u), lo)), K(0x80000000u), e(Op::SUB, K(0), lo));
      v = e(Op::SEL, neg, ng, pos);
    } else {
      v = e(Op::SEL, neg, K(0), e(Op::SEL, wide, K(~0u), lo));
    }
    res = {v, K(0)};
  }
  return {e(Op::SEL, nan, K(0), res.first), e(Op::SEL, nan, K(0), res.second)};
}

Gen::W Gen::saturate64(W x) {
  // NaN or the sign bit set (-0 included): +0; otherwise above 1.0 (a high word
  // above 0x3FF00000, or equal with a nonzero low word): 1.0.
  Operand zero = e(Op::OR, nan64(x), e(Op::SLT, x.second, K(0)));
  Operand one = e(Op::OR, e(Op::SLTU, K(0x3FF00000u), x.second),
                  e(Op::AND, e(Op::SEQ, x.second, K(0x3FF00000u)), e(Op::SNE, x.first, K(0))));
  Operand lo = e(Op::SEL, e(Op::OR, zero, one), K(0), x.first);
  Operand hi = e(Op::SEL, zero, K(0), e(Op::SEL, one, K(0x3FF00000u), x.second));
  return {lo, hi};
}

// The high word of an approximate f64 result (rcp_approx64, rsqrt_approx64):
// r in (1/2, 1] the f32 of its significand, s its sign, `base` the exponent
// field r = 1 would have; r's top 20 fraction bits (the low word is 0), and
// a zero of sign s below the normal range (flushed).
Operand Gen::approx64_hi(Operand s, Operand base, Operand r) {
  Operand ex = e(Op::ADD, base, e(Op::SUB, e(Op::SHR, r, K(23)), K(127)));
  Operand w = e(Op::OR, e(Op::OR, s, e(Op::SHL, ex, K(20))), e(Op::SHR, e(Op::AND, r, K(0x7FFFFF)), K(3)));
  return e(Op::SEL, e(Op::SLT, ex, K(1)), s, w);
}

// 1/a = 2^(1023 - ex) (1/m) for a = 2^(ex - 1023) m, m = 1.f from the high
// word's 20 fraction bits (exact in f32); ex = 0 (zeros, flushed subnormals)
// gives +-inf, ex = 0x7FF +-0 or (f != 0) the NaN.
Gen::W Gen::rcp_approx64(W a, const Unary& f32) {
  Operand hi = a.second;
  Operand s = e(Op::AND, hi, K(kSign)), ex = e(Op::AND, e(Op::SHR, hi, K(20)), K(0x7FF)), f = e(Op::AND, hi, K(0xFFFFF));
  Operand m = e(Op::OR, e(Op::SHL, f, K(3)), K(0x3F800000u));
  Operand r = f32 ? f32(m) : div(K(0x3F800000u), m, Round::Rn, false, false);
  Operand res = approx64_hi(s, e(Op::SUB, K(2046), ex), r);
  res = e(Op::SEL, e(Op::SEQ, ex, K(0)), e(Op::OR, s, K(0x7FF00000u)), res);
  res = e(Op::SEL, e(Op::SEQ, ex, K(0x7FF)), e(Op::SEL, f, K(0x7FFFFFFFu), s), res);
  return {K(0), res};
}

// 1/sqrt(a) = 2^(-k) rsqrt(x) for a = 2^(2k) x, x = m or 2m in [1, 4) (2m when
// ex - 1023 is odd, which is ex even); ex = 0 gives +-inf, a NaN or a
// negative a (-inf too) the NaN, +inf +0.
Gen::W Gen::rsqrt_approx64(W a, const Unary& f32) {
  Operand hi = a.second;
  Operand s = e(Op::AND, hi, K(kSign)), ex = e(Op::AND, e(Op::SHR, hi, K(20)), K(0x7FF)), f = e(Op::AND, hi, K(0xFFFFF));
  Operand odd = e(Op::XOR, e(Op::AND, ex, K(1)), K(1));
  Operand x = e(Op::OR, e(Op::SHL, e(Op::ADD, odd, K(127)), K(23)), e(Op::SHL, f, K(3)));
  Operand r = f32 ? f32(x) : div(K(0x3F800000u), sqrt(x, Round::Rn, false), Round::Rn, false, false);
  Operand base = e(Op::SUB, K(1023), e(Op::SAR, e(Op::SUB, e(Op::SUB, ex, K(1023)), odd), K(1)));
  Operand top = e(Op::SEQ, ex, K(0x7FF));
  Operand nan = e(Op::OR, s, e(Op::AND, top, e(Op::SNE, f, K(0))));
  Operand res = e(Op::SEL, nan, K(0x7FFFFFFFu), e(Op::SEL, top, K(0), approx64_hi(K(0), base, r)));
  res = e(Op::SEL, e(Op::SEQ, ex, K(0)), e(Op::OR, s, K(0x7FF00000u)), res);
  return {K(0), res};
}

Gen::W Gen::round_int64(W f, Round r) {
  Operand h = e(Op::AND, f.second, K(kAbs));
  Operand xe = e(Op::SHR, h, K(20));
  // Below 2^52 the rounded magnitude (an integer below 2^53) converts back exactly.
  W mag = to_int_from64({f.first, h}, false, 64, r == Round::Rm ? Round::Rp : r == Round::Rp ? Round::Rm : r);
  Operand s = e(Op::AND, f.second, K(kSign));
  // to_int_from64 rounded the magnitude; the direction of rm/rp depends on the sign.
  W magm = to_int_from64({f.first, h}, false, 64, r);
  if (r == Round::Rm || r == Round::Rp) {
    mag = {e(Op::SEL, s, mag.first, magm.first), e(Op::SEL, s, mag.second, magm.second)};
  } else {
    mag = magm;
  }
  W back = from_int_to64(mag, false, Round::Rz);
  Operand small = e(Op::SLTU, xe, K(1075));
  Operand lo = e(Op::SEL, small, back.first, f.first);
  Operand hi = e(Op::SEL, small, e(Op::OR, back.second, s), f.second);
  Operand nan = nan64(f);
  return {e(Op::SEL, nan, K(~0u), lo), e(Op::SEL, nan, K(kAbs), hi)};
}

// a * b + c with one rounding: the exact 128-bit product and c as 128-bit
// significands with their leading 1 at bit 126 (value X / 2^126 * 2^(E - 1023),
// a zero with E = -5000), ordered by (E, X), the smaller shifted right by
// any distance with a sticky bit (whole words selected by the distance / 32,
// then bits), added or subtracted as in add64, normalised to bit 127, and the
// top 64 bits rounded with the rest sticky.  The product has at least 21 zero
// low bits and c 63, so shifts by 0 or 1 are exact.
Gen::W Gen::fma64(W a, W b, W c, Round r) {
  using X = std::array<Operand, 4>;
  Operand sp = e(Op::AND, e(Op::XOR, a.second, b.second), K(kSign)), sc = e(Op::AND, c.second, K(kSign));
  auto unpack = [&](W x, Operand& ex) -> W {
    Operand h = e(Op::AND, x.second, K(kAbs));
    Operand xe = e(Op::SHR, h, K(20));
    Operand fh = e(Op::AND, h, K(0xFFFFF));
    W sig = {x.first, e(Op::SEL, xe, e(Op::OR, fh, K(0x100000)), fh)};
    Operand z = clz64(sig);
    ex = e(Op::SUB, e(Op::MAX, xe, K(1)), e(Op::SUB, z, K(11)));
    return shl64(sig, z);
  };
  Operand ea, eb, ec;
  W A = unpack(a, ea), B = unpack(b, eb), C = unpack(c, ec);
  // The product's four words.
  Operand w0 = e(Op::MUL, A.first, B.first), c0 = e(Op::MULHU, A.first, B.first);
  Operand lh_lo = e(Op::MUL, A.first, B.second), lh_hi = e(Op::MULHU, A.first, B.second);
  Operand hl_lo = e(Op::MUL, A.second, B.first), hl_hi = e(Op::MULHU, A.second, B.first);
  Operand hh_lo = e(Op::MUL, A.second, B.second), hh_hi = e(Op::MULHU, A.second, B.second);
  Operand t1 = e(Op::ADD, c0, lh_lo);
  Operand k1 = e(Op::SLTU, t1, c0);
  Operand w1 = e(Op::ADD, t1, hl_lo);
  k1 = e(Op::ADD, k1, e(Op::SLTU, w1, t1));
  Operand t2 = e(Op::ADD, lh_hi, hl_hi);
  Operand k2 = e(Op::SLTU, t2, lh_hi);
  Operand t3 = e(Op::ADD, t2, hh_lo);
  k2 = e(Op::ADD, k2, e(Op::SLTU, t3, t2));
  Operand w2 = e(Op::ADD, t3, k1);
  k2 = e(Op::ADD, k2, e(Op::SLTU, w2, t3));
  Operand w3 = e(Op::ADD, hh_hi, k2);
  // Leading 1 at bit 127 (t = 1) or 126: bring it to 126.
  Operand t = e(Op::SHR, w3, K(31));
  Operand ts = e(Op::SUB, K(32), t);
  X P = {e(Op::OR, e(Op::SHR, w0, t), e(Op::SHL, w1, ts)), e(Op::OR, e(Op::SHR, w1, t), e(Op::SHL, w2, ts)),
         e(Op::OR, e(Op::SHR, w2, t), e(Op::SHL, w3, ts)), e(Op::SHR, w3, t)};
  Operand Ep = e(Op::SEL, w3, e(Op::ADD, e(Op::ADD, ea, eb), e(Op::SUB, t, K(1023))), K(uint32_t(-5000)));
  X Cx = {K(0), e(Op::SHL, C.first, K(31)), e(Op::OR, e(Op::SHR, C.first, K(1)), e(Op::SHL, C.second, K(31))),
          e(Op::SHR, C.second, K(1))};
  Operand Ec = e(Op::SEL, e(Op::OR, C.first, C.second), ec, K(uint32_t(-5000)));
  // c the bigger one when (Ec, Cx) > (Ep, P).
  Operand lt = K(0);
  for (int i = 0; i < 4; ++i)  // from the low word up: the highest differing word decides
    lt = e(Op::SEL, e(Op::SEQ, P[i], Cx[i]), lt, e(Op::SLTU, P[i], Cx[i]));
  Operand cbig = e(Op::OR, e(Op::SLT, Ep, Ec), e(Op::AND, e(Op::SEQ, Ep, Ec), lt));
  X Bx, Sx;
  for (int i = 0; i < 4; ++i) Bx[i] = e(Op::SEL, cbig, Cx[i], P[i]), Sx[i] = e(Op::SEL, cbig, P[i], Cx[i]);
  Operand EB = e(Op::SEL, cbig, Ec, Ep), ES = e(Op::SEL, cbig, Ep, Ec);
  Operand sB = e(Op::SEL, cbig, sc, sp);
  // S >> d: whole words (ws = d / 32, at most 4), then bits.
  Operand d = e(Op::SUB, EB, ES);
  Operand ws = e(Op::MINU, e(Op::SHR, d, K(5)), K(4)), bs = e(Op::AND, d, K(31));
  Operand is[4];
  for (int k = 0; k < 4; ++k) is[k] = e(Op::SEQ, ws, K(uint32_t(k)));
  Operand y[5];
  for (int m = 0; m < 5; ++m) {
    Operand v = K(0);
    for (int k = 3; k >= 0; --k) v = e(Op::SEL, is[k], m + k < 4 ? Sx[m + k] : K(0), v);
    y[m] = v;
  }
  Operand bsc = e(Op::SUB, K(32), bs);
  X Ss;
  for (int j = 0; j < 4; ++j) Ss[j] = e(Op::OR, e(Op::SHR, y[j], bs), e(Op::SHL, y[j + 1], bsc));
  Operand lost = e(Op::AND, y[0], e(Op::SUB, e(Op::SHL, K(1), bs), K(1)));
  for (int k = 0; k < 4; ++k) lost = e(Op::OR, lost, e(Op::SEL, e(Op::SLTU, K(uint32_t(k)), ws), Sx[k], K(0)));
  Operand st = e(Op::SNE, lost, K(0));
  // B + S, or B + ~S + 1 - st.
  Operand subtract = e(Op::SHR, e(Op::XOR, sp, sc), K(31));
  Operand carry = e(Op::AND, subtract, e(Op::XOR, st, K(1)));
  X R;
  for (int j = 0; j < 4; ++j) {
    Operand xj = e(Op::SEL, subtract, e(Op::XOR, Ss[j], K(~0u)), Ss[j]);
    Operand s1 = e(Op::ADD, Bx[j], xj);
    Operand c1 = e(Op::SLTU, s1, Bx[j]);
    R[j] = e(Op::ADD, s1, carry);
    carry = e(Op::ADD, c1, e(Op::SLTU, R[j], carry));
  }
  // Normalise to bit 127: n = clz of the 128 bits, a shift left by n.
  Operand n = e(Op::CLZ, R[3]);
  n = e(Op::SEL, R[3], n, e(Op::ADD, K(32), e(Op::CLZ, R[2])));
  n = e(Op::SEL, e(Op::OR, R[3], R[2]), n, e(Op::ADD, K(64), e(Op::CLZ, R[1])));
  n = e(Op::SEL, e(Op::OR, e(Op::OR, R[3], R[2]), R[1]), n, e(Op::ADD, K(96), e(Op::CLZ, R[0])));
  Operand nw = e(Op::MINU, e(Op::SHR, n, K(5)), K(4)), nb = e(Op::AND, n, K(31));
  Operand isn[4];
  for (int k = 0; k < 4; ++k) isn[k] = e(Op::SEQ, nw, K(uint32_t(k)));
  // z[m] = R[m - nw] (0 below word 0), for m = -1 .. 3.
  Operand z[5];
  for (int m = 0; m < 5; ++m) {
    Operand v = K(0);
    for (int k = 3; k >= 0; --k) v = e(Op::SEL, isn[k], m - 1 - k >= 0 ? R[m - 1 - k] : K(0), v);
    z[m] = v;
  }
  Operand nbc = e(Op::SUB, K(32), nb);
  X M;
  for (int j = 0; j < 4; ++j) M[j] = e(Op::OR, e(Op::SHL, z[j + 1], nb), e(Op::SHR, z[j], nbc));
  st = e(Op::OR, st, e(Op::SNE, e(Op::OR, M[0], M[1]), K(0)));
  Operand ex = e(Op::SUB, e(Op::ADD, EB, K(1)), n);
  Operand zero = e(Op::AND, subtract, e(Op::SEQ, e(Op::OR, e(Op::OR, R[0], R[1]), e(Op::OR, R[2], R[3])), K(0)));
  Operand s = e(Op::SEL, zero, K(r == Round::Rm ? kSign : 0), sB);
  W res = round_pack64(s, ex, {M[2], M[3]}, st, r);
  // Infinities and NaNs.
  auto inf = [&](W x) {
    return e(Op::AND, e(Op::SEQ, e(Op::AND, x.second, K(kAbs)), K(0x7FF00000u)), e(Op::SEQ, x.first, K(0)));
  };
  auto is_zero = [&](W x) { return e(Op::SEQ, e(Op::OR, e(Op::AND, x.second, K(kAbs)), x.first), K(0)); };
  Operand ai = inf(a), bi = inf(b), ci = inf(c);
  Operand pinf = e(Op::OR, ai, bi);
  Operand nan = e(Op::OR, e(Op::OR, nan64(a), nan64(b)), nan64(c));
  nan = e(Op::OR, nan, e(Op::OR, e(Op::AND, ai, is_zero(b)), e(Op::AND, bi, is_zero(a))));
  nan = e(Op::OR, nan, e(Op::AND, e(Op::AND, pinf, ci), subtract));
  Operand lo = e(Op::SEL, ci, c.first, res.first), hi = e(Op::SEL, ci, c.second, res.second);
  lo = e(Op::SEL, pinf, K(0), lo), hi = e(Op::SEL, pinf, e(Op::OR, sp, K(0x7FF00000u)), hi);
  return {e(Op::SEL, nan, K(~0u), lo), e(Op::SEL, nan, K(kAbs), hi)};
}

// The significand of x with its leading 1 at bit 63 and ex such that
// |x| = sig / 2^63 * 2^(ex - 1023) (a subnormal normalised, ex below 1).
Gen::W Gen::unpack64(W x, Operand& ex) {
  Operand h = e(Op::AND, x.second, K(kAbs));
  Operand xe = e(Op::SHR, h, K(20));
  Operand fh = e(Op::AND, h, K(0xFFFFF));
  W sig = {x.first, e(Op::SEL, xe, e(Op::OR, fh, K(0x100000)), fh)};
  Operand z = clz64(sig);
  ex = e(Op::SUB, e(Op::MAX, xe, K(1)), e(Op::SUB, z, K(11)));
  return shl64(sig, z);
}
Operand Gen::inf64(W x) {
  return e(Op::AND, e(Op::SEQ, e(Op::AND, x.second, K(kAbs)), K(0x7FF00000u)), e(Op::SEQ, x.first, K(0)));
}
Operand Gen::zero64(W x) { return e(Op::SEQ, e(Op::OR, e(Op::AND, x.second, K(kAbs)), x.first), K(0)); }

// a / b: 53-bit significands (the dividend's doubled when below the
// divisor's, so the quotient lies in [1, 2)), 54 steps of restoring division
// on register pairs (22 quotient bits into the high word, 32 into the low),
// the remainder sticky.
Gen::W Gen::div64(W a, W b, Round r) {
  Operand s = e(Op::AND, e(Op::XOR, a.second, b.second), K(kSign));
  Operand ea, eb;
  W A = shr64(unpack64(a, ea), K(11)), B = shr64(unpack64(b, eb), K(11));
  Operand lt = e(Op::OR, e(Op::SLTU, A.second, B.second),
                 e(Op::AND, e(Op::SEQ, A.second, B.second), e(Op::SLTU, A.first, B.first)));
  W rem = shl64(A, lt);
  Operand qh = K(0), ql = K(0);
  for (int i = 0; i < 54; ++i) {
    Operand ge = e(Op::OR, e(Op::SLTU, B.second, rem.second),
                   e(Op::AND, e(Op::SEQ, B.second, rem.second), e(Op::SLEU, B.first, rem.first)));
    Operand sl = e(Op::SEL, ge, B.first, K(0)), sh = e(Op::SEL, ge, B.second, K(0));
    Operand borrow = e(Op::SLTU, rem.first, sl);
    rem = {e(Op::SUB, rem.first, sl), e(Op::SUB, e(Op::SUB, rem.second, sh), borrow)};
    if (i < 22) qh = e(Op::OR, e(Op::SHL, qh, K(1)), ge);
    else ql = e(Op::OR, e(Op::SHL, ql, K(1)), ge);
    if (i < 53) rem = {e(Op::SHL, rem.first, K(1)), e(Op::OR, e(Op::SHL, rem.second, K(1)), e(Op::SHR, rem.first, K(31)))};
  }
  // q / 2^53 * 2^(ea - eb - lt): m = q << 10.
  W m = shl64({ql, qh}, K(10));
  Operand st = e(Op::SNE, e(Op::OR, rem.first, rem.second), K(0));
  W res = round_pack64(s, e(Op::SUB, e(Op::ADD, e(Op::SUB, ea, eb), K(1023)), lt), m, st, r);
  Operand za = zero64(a), zb = zero64(b), ia = inf64(a), ib = inf64(b);
  Operand nan = e(Op::OR, e(Op::OR, nan64(a), nan64(b)), e(Op::OR, e(Op::AND, za, zb), e(Op::AND, ia, ib)));
  Operand zero = e(Op::OR, za, ib), inf = e(Op::OR, ia, zb);
  Operand lo = e(Op::SEL, e(Op::OR, zero, inf), K(0), res.first);
  Operand hi = e(Op::SEL, zero, s, e(Op::SEL, inf, e(Op::OR, s, K(0x7FF00000u)), res.second));
  return {e(Op::SEL, nan, K(~0u), lo), e(Op::SEL, nan, K(kAbs), hi)};
}

// sqrt(a): the 53-bit significand, doubled when the unbiased exponent is
// odd, times 2^54 has a 54-bit integer square root (53 bits and the round
// bit), computed digit by digit on register pairs; the remainder sticky.
Gen::W Gen::sqrt64(W a, Round r) {
  Operand ex;
  W M = shr64(unpack64(a, ex), K(11));
  Operand E = e(Op::SUB, ex, K(1023));
  Operand odd = e(Op::AND, E, K(1));
  M = shl64(M, odd);
  E = e(Op::SUB, E, odd);
  W rem = {K(0), K(0)};
  Operand qh = K(0), ql = K(0);
  for (int i = 53; i >= 0; --i) {
    const int p = 2 * i - 54;  // the radicand's bits 2i+1, 2i are M's bits p+1, p
    Operand pair = p < 0 ? K(0) : p < 32 ? e(Op::AND, e(Op::SHR, M.first, K(uint32_t(p))), K(3))
                                       : e(Op::AND, e(Op::SHR, M.second, K(uint32_t(p - 32))), K(3));
    rem = {e(Op::OR, e(Op::SHL, rem.first, K(2)), pair), e(Op::OR, e(Op::SHL, rem.second, K(2)), e(Op::SHR, rem.first, K(30)))};
    W t = {e(Op::OR, e(Op::SHL, ql, K(2)), K(1)), e(Op::OR, e(Op::SHL, qh, K(2)), e(Op::SHR, ql, K(30)))};
    Operand ge = e(Op::OR, e(Op::SLTU, t.second, rem.second),
                   e(Op::AND, e(Op::SEQ, t.second, rem.second), e(Op::SLEU, t.first, rem.first)));
    Operand sl = e(Op::SEL, ge, t.first, K(0)), sh = e(Op::SEL, ge, t.second, K(0));
    Operand borrow = e(Op::SLTU, rem.first, sl);
    rem = {e(Op::SUB, rem.first, sl), e(Op::SUB, e(Op::SUB, rem.second, sh), borrow)};
    qh = e(Op::OR, e(Op::SHL, qh, K(1)), e(Op::SHR, ql, K(31)));
    ql = e(Op::OR, e(Op::SHL, ql, K(1)), ge);
  }
  W m = shl64({ql, qh}, K(10));
  Operand st = e(Op::SNE, e(Op::OR, rem.first, rem.second), K(0));
  W res = round_pack64(K(0), e(Op::ADD, e(Op::SAR, E, K(1)), K(1023)), m, st, r);
  // +-0 stay; +inf; NaN and negative numbers: NaN.
  Operand z = zero64(a);
  Operand lo = e(Op::SEL, z, a.first, res.first), hi = e(Op::SEL, z, a.second, res.second);
  Operand pinf = e(Op::AND, inf64(a), e(Op::SLT, K(~0u), a.second));  // a.second >= 0
  lo = e(Op::SEL, pinf, K(0), lo), hi = e(Op::SEL, pinf, K(0x7FF00000u), hi);
  Operand nan = e(Op::OR, nan64(a), e(Op::AND, e(Op::SHR, a.second, K(31)), e(Op::XOR, z, K(1))));
  return {e(Op::SEL, nan, K(~0u), lo), e(Op::SEL, nan, K(kAbs), hi)};
}

// Comparisons on keys: a negative value is minus its magnitude (64-bit two's
// complement), so -0 = +0.
Operand Gen::compare64(ptx::Cmp c, W a, W b) {
  Operand un = e(Op::OR, nan64(a), nan64(b));
  if (c == ptx::Cmp::Nan) return un;
  if (c == ptx::Cmp::Num) return e(Op::XOR, un, K(1));
  auto key = [&](W x) -> W {
    Operand neg = e(Op::SLT, x.second, K(0));
    Operand h = e(Op::AND, x.second, K(kAbs));
    Operand nl = e(Op::SUB, K(0), x.first), nh = e(Op::SUB, e(Op::SUB, K(0), h), e(Op::SNE, x.first, K(0)));
    return {e(Op::SEL, neg, nl, x.first), e(Op::SEL, neg, nh, h)};
  };
  W ka = key(a), kb = key(b);
  auto lt = [&](W x, W y, bool le) {
    Operand hl = e(Op::SLT, x.second, y.second), he = e(Op::SEQ, x.second, y.second);
    return e(Op::OR, hl, e(Op::AND, he, e(le ? Op::SLEU : Op::SLTU, x.first, y.first)));
  };
  Operand eq = e(Op::AND, e(Op::SEQ, ka.first, kb.first), e(Op::SEQ, ka.second, kb.second));
  Operand r;
  bool unordered = false;
  switch (c) {
    case ptx::Cmp::Equ: unordered = true; [[fallthrough]];
    case ptx::Cmp::Eq: r = eq; break;
    case ptx::Cmp::Neu: unordered = true; [[fallthrough]];
    case ptx::Cmp::Ne: r = e(Op::XOR, eq, K(1)); break;
    case ptx::Cmp::Ltu: unordered = true; [[fallthrough]];
    case ptx::Cmp::Lt: r = lt(ka, kb, false); break;
    case ptx::Cmp::Leu: unordered = true; [[fallthrough]];
    case ptx::Cmp::Le: r = lt(ka, kb, true); break;
    case ptx::Cmp::Gtu: unordered = true; [[fallthrough]];
    case ptx::Cmp::Gt: r = lt(kb, ka, false); break;
    case ptx::Cmp::Geu: unordered = true; [[fallthrough]];
    case ptx::Cmp::Ge: r = lt(kb, ka, true); break;
    default: return K(0);
  }
  if (unordered) return e(Op::OR, r, un);
  return e(Op::AND, r, e(Op::XOR, un, K(1)));
}

// min/max: -0 below +0 (keys with the magnitude bits of negative values
// inverted); a NaN operand gives the other; two NaNs the canonical NaN.
Gen::W Gen::min64(W a, W b) {
  auto key = [&](W x) -> W {
    Operand neg = e(Op::SLT, x.second, K(0));
    return {e(Op::SEL, neg, e(Op::XOR, x.first, K(~0u)), x.first), e(Op::SEL, neg, e(Op::XOR, x.second, K(kAbs)), x.second)};
  };
  W ka = key(a), kb = key(b);
  Operand b_lt = e(Op::OR, e(Op::SLT, kb.second, ka.second),
                   e(Op::AND, e(Op::SEQ, kb.second, ka.second), e(Op::SLTU, kb.first, ka.first)));
  Operand na = nan64(a), nb = nan64(b);
  Operand take_b = e(Op::AND, e(Op::OR, b_lt, na), e(Op::XOR, nb, K(1)));
  Operand both = e(Op::AND, na, nb);
  Operand lo = e(Op::SEL, take_b, b.first, a.first), hi = e(Op::SEL, take_b, b.second, a.second);
  return {e(Op::SEL, both, K(~0u), lo), e(Op::SEL, both, K(kAbs), hi)};
}
Gen::W Gen::max64(W a, W b) {
  auto key = [&](W x) -> W {
    Operand neg = e(Op::SLT, x.second, K(0));
    return {e(Op::SEL, neg, e(Op::XOR, x.first, K(~0u)), x.first), e(Op::SEL, neg, e(Op::XOR, x.second, K(kAbs)), x.second)};
  };
  W ka = key(a), kb = key(b);
  Operand a_lt = e(Op::OR, e(Op::SLT, ka.second, kb.second),
                   e(Op::AND, e(Op::SEQ, ka.second, kb.second), e(Op::SLTU, ka.first, kb.first)));
  Operand na = nan64(a), nb = nan64(b);
  Operand take_b = e(Op::AND, e(Op::OR, a_lt, na), e(Op::XOR, nb, K(1)));
  Operand both = e(Op::AND, na, nb);
  Operand lo = e(Op::SEL, take_b, b.first, a.first), hi = e(Op::SEL, take_b, b.second, a.second);
  return {e(Op::SEL, both, K(~0u), lo), e(Op::SEL, both, K(kAbs), hi)};
}

}  // namespace qgpu::machine::softfloat
