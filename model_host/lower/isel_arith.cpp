// Instruction selection: 64-bit arithmetic on word pairs, division, the
// thread's coordinates (isel.h).
#include "model_host/lower/isel.h"

#include <bit>

namespace qgpu::machine::lowering {

// 64-bit helpers on word pairs.
V Lowerer::add64(V a, V b) {
  Operand lo = opr(Op::ADD, a.lo, b.lo);
  Operand c = opr(Op::SLTU, lo, a.lo);
  return {lo, opr(Op::ADD, opr(Op::ADD, a.hi, b.hi), c)};
}

V Lowerer::sub64(V a, V b) {
  Operand bw = opr(Op::SLTU, a.lo, b.lo);
  Operand lo = opr(Op::SUB, a.lo, b.lo);
  return {lo, opr(Op::SUB, opr(Op::SUB, a.hi, b.hi), bw)};
}

V Lowerer::mul64(V a, V b) {
  Operand lo = opr(Op::MUL, a.lo, b.lo);
  Operand hi = opr(Op::MULHU, a.lo, b.lo);
  hi = opr(Op::ADD, hi, opr(Op::MUL, a.lo, b.hi));
  hi = opr(Op::ADD, hi, opr(Op::MUL, a.hi, b.lo));
  return {lo, hi};
}

// High 64 bits of the 128-bit product.
V Lowerer::mulhi64(V a, V b, bool sign) {
  auto addc = [&](Operand x, Operand y, Operand& carry) {
    Operand s = opr(Op::ADD, x, y);
    carry = opr(Op::ADD, carry, opr(Op::SLTU, s, x));
    return s;
  };
  Operand ll_hi = opr(Op::MULHU, a.lo, b.lo);
  Operand lh_lo = opr(Op::MUL, a.lo, b.hi), lh_hi = opr(Op::MULHU, a.lo, b.hi);
  Operand hl_lo = opr(Op::MUL, a.hi, b.lo), hl_hi = opr(Op::MULHU, a.hi, b.lo);
  Operand hh_lo = opr(Op::MUL, a.hi, b.hi), hh_hi = opr(Op::MULHU, a.hi, b.hi);
  Operand c1 = K(0), c2 = K(0);
  Operand w1 = addc(ll_hi, lh_lo, c1);
  addc(w1, hl_lo, c1);
  Operand w2 = addc(lh_hi, hl_hi, c2);
  w2 = addc(w2, hh_lo, c2);
  w2 = addc(w2, c1, c2);
  V r{w2, opr(Op::ADD, hh_hi, c2)};
  if (sign) {  // signed high = unsigned high - (a<0 ? b : 0) - (b<0 ? a : 0)
    Operand an = opr(Op::SLT, a.hi, K(0)), bn = opr(Op::SLT, b.hi, K(0));
    r = sub64(r, {opr(Op::SEL, an, b.lo, K(0)), opr(Op::SEL, an, b.hi, K(0))});
    r = sub64(r, {opr(Op::SEL, bn, a.lo, K(0)), opr(Op::SEL, bn, a.hi, K(0))});
  }
  return r;
}

Operand Lowerer::lt64(V a, V b, bool sign, bool or_equal) {
  Operand hlt = opr(sign ? Op::SLT : Op::SLTU, a.hi, b.hi);
  Operand heq = opr(Op::SEQ, a.hi, b.hi);
  Operand llt = opr(or_equal ? Op::SLEU : Op::SLTU, a.lo, b.lo);
  return opr(Op::OR, hlt, opr(Op::AND, heq, llt));
}

V Lowerer::shl64(V a, Operand n) {
  Operand hi = opr(Op::OR, opr(Op::SHL, a.hi, n), opr(Op::SHR, a.lo, opr(Op::SUB, K(32), n)));
  hi = opr(Op::OR, hi, opr(Op::SHL, a.lo, opr(Op::SUB, n, K(32))));
  return {opr(Op::SHL, a.lo, n), hi};
}

V Lowerer::shr64(V a, Operand n, bool sign) {
  Operand lo = opr(Op::OR, opr(Op::SHR, a.lo, n), opr(Op::SHL, a.hi, opr(Op::SUB, K(32), n)));
  Operand over = opr(Op::SUB, n, K(32));
  if (sign)
    lo = opr(Op::OR, lo, opr(Op::SEL, opr(Op::SLTU, K(31), n), opr(Op::SAR, a.hi, over), K(0)));
  else
    lo = opr(Op::OR, lo, opr(Op::SHR, a.hi, over));
  return {lo, opr(sign ? Op::SAR : Op::SHR, a.hi, n)};
}

// With `out` (a register n and d do not read), the result it returns is
// computed in that register.
std::pair<Operand, Operand> Lowerer::udiv32(Operand n, Operand d, bool want_q, uint32_t out) {
  if (!want_q) {
    // The remainder alone: the step of bit i0 = clz(d) - clz(n) comes before
    // the loop, on n itself (no copy of n), and the loop runs the i0 bits
    // below it.  Where i0 < 0 (n < d) the shift by 2^32 + i0 gives 0 and the
    // step keeps n; d = 0 keeps n at every step (the remainder by 0 is n).
    Operand i0 = opr(Op::SUB, opr(Op::CLZ, d), opr(Op::CLZ, n));
    uint32_t dd = op(Op::SHL, d, i0);
    uint32_t r = out != kNoV ? out : nv();
    opd(r, Op::CSUB, n, R(dd));
    uint32_t k = op(Op::MAX, i0, K(0));
    uint32_t loop = new_label(), done = new_label();
    br(R(k), loop, done);
    place(loop);
    opd(dd, Op::SHR, R(dd), K(1));
    opd(r, Op::CSUB, R(r), R(dd));
    opd(k, Op::ADD, R(k), K(uint32_t(-1)));
    br(R(k), loop, done);
    place(done);
    return {K(0), R(r)};
  }
  Operand i0 = opr(Op::MAX, opr(Op::SUB, opr(Op::CLZ, d), opr(Op::CLZ, n)), K(uint32_t(-1)));
  // d = 0: the quotient is all ones, so its loop runs every bit.
  Operand i = opr(Op::SEL, opr(Op::SEQ, d, K(0)), K(31), i0);
  uint32_t dd = op(Op::SHL, d, i);
  uint32_t r = nv(), q = out != kNoV ? out : nv();
  opd(r, Op::MOV, n);
  opd(q, Op::MOV, K(0));
  uint32_t k = op(Op::ADD, i, K(1));
  // The remainder loop, with the quotient when `with_q` (a quotient of at
  // most kShortQuotient bits; a longer one comes from the remainder after
  // it); `out` after the last bit.
  auto steps = [&](bool with_q, uint32_t out) {
    uint32_t loop = new_label();
    br(R(k), loop, out);
    place(loop);
    if (with_q) opd(q, Op::OR, opr(Op::SHL, R(q), K(1)), opr(Op::SLEU, R(dd), R(r)));
    opd(r, Op::CSUB, R(r), R(dd));
    opd(dd, Op::SHR, R(dd), K(1));
    opd(k, Op::ADD, R(k), K(uint32_t(-1)));
    br(R(k), loop, out);
  };
  uint32_t done = new_label();
  uint32_t short_q = new_label(), long_q = new_label(), after = new_label();
  br(opr(Op::SLTU, K(kShortQuotient), R(k)), long_q, short_q);
  place(short_q);
  steps(true, done);
  place(long_q);
  steps(false, after);
  place(after);
  opd(q, Op::MOV, exact_quotient(opr(Op::SUB, n, R(r)), d));
  place(done);
  return {R(q), R(r)};
}

// (m / d) mod 2^32 for m = m_hi 2^32 + m_lo a multiple of d (see
// udiv32); all ones for d = 0.
Operand Lowerer::exact_quotient(Operand m_lo, Operand d, Operand m_hi) {
  Operand s = opr(Op::CLZ, opr(Op::BREV, d));
  Operand odd = opr(Op::SHR, d, s);
  Operand x = opr(Op::XOR, opr(Op::MUL, odd, K(3)), K(2));
  for (int step = 0; step < 3; ++step) x = opr(Op::MUL, x, opr(Op::SUB, K(2), opr(Op::MUL, odd, x)));
  Operand shifted = opr(Op::SHR, m_lo, s);
  if (!m_hi.imm || m_hi.v != 0) shifted = opr(Op::OR, shifted, opr(Op::SHL, m_hi, opr(Op::SUB, K(32), s)));
  Operand q = opr(Op::MUL, shifted, x);
  return opr(Op::SEL, opr(Op::SEQ, d, K(0)), K(uint32_t(-1)), q);
}

// Division by a normalised divisor dn (bit 31 set) through its reciprocal
// v = floor((2^64 - 1) / dn) - 2^32 (Moller and Granlund, "Improved
// division by invariant integers", 2011): (u1 2^32 + u0) / dn for u1 < dn
// from one 32 x 32 -> 64 product and two corrections.
std::pair<Operand, Operand> Lowerer::div_preinv(Operand u1, Operand u0, Operand dn, Operand v, bool want_q) {
  Operand p0 = opr(Op::MUL, v, u1), p1 = opr(Op::MULHU, v, u1);
  Operand q0 = opr(Op::ADD, p0, u0);
  Operand q1 = opr(Op::ADD, opr(Op::ADD, p1, u1), opr(Op::ADD, opr(Op::SLTU, q0, p0), K(1)));
  Operand r = opr(Op::SUB, u0, opr(Op::MUL, q1, dn));
  Operand over = opr(Op::SLTU, q0, r);  // the estimate was one too large
  r = opr(Op::ADD, r, opr(Op::SEL, over, dn, K(0)));
  if (want_q) q1 = opr(Op::ADD, opr(Op::SUB, q1, over), opr(Op::SLEU, dn, r));
  return {q1, opr(Op::CSUB, r, dn)};
}

// Makes recip_v_ the reciprocal of dn (>= 2^31) unless recip_d_ says it
// is already.  The remainder of (2^64 - 1) / dn comes from restoring
// division of (~dn, 2^32 - 1), whose high word is below dn, one bit a step
// (every incoming bit is 1); the quotient, v + 2^32, then from
// 2^64 - 1 - r = (v + 2^32) dn through exact_quotient.
void Lowerer::refresh_reciprocal(Operand dn) {
  const uint32_t first = vc_.nvregs;
  uint32_t compute = new_label(), ready = new_label(), loop = new_label(), out = new_label();
  br(opr(Op::SNE, R(recip_d_), dn), compute, ready);
  place(compute);
  uint32_t r = op(Op::XOR, dn, K(~0u)), k = op(Op::MOV, K(32));
  jmp(loop);
  place(loop);
  // 2r + 1 mod 2^32, then less dn where that is at least dn: always when
  // r >= 2^31 (the sum overflowed: 2r + 1 - dn < dn), so the minimum
  // takes the difference there.
  Operand carry = opr(Op::SAR, R(r), K(31));
  Operand twice = opr(Op::ADD, opr(Op::ADD, R(r), R(r)), K(1));
  opd(r, Op::MINU, opr(Op::OR, twice, carry), opr(Op::SUB, twice, dn));
  opd(k, Op::ADD, R(k), K(uint32_t(-1)));
  br(R(k), loop, out);
  place(out);
  opd(recip_v_, Op::MOV, exact_quotient(opr(Op::XOR, R(r), K(~0u)), dn, K(~0u)));
  opd(recip_d_, Op::MOV, dn);
  place(ready);
  // Run once per divisor: hoisting its invariant part out of a loop would
  // only hold more registers across the loop.
  vc_.cold.resize(vc_.nvregs, false);
  std::fill(vc_.cold.begin() + first, vc_.cold.end(), true);
}

Operand Lowerer::clz64(V x) {
  return opr(Op::SEL, opr(Op::SEQ, x.hi, K(0)), opr(Op::ADD, opr(Op::CLZ, x.lo), K(32)), opr(Op::CLZ, x.hi));
}

// 64-bit division.  A divisor below 2^32 (the common 64-by-32 case, such
// as a product reduced modulo a 32-bit number) takes a shorter path: a
// dividend below 2^32 too is divided by udiv32; otherwise, normalised,
// dn = d << s with s = clz(d), the dividend shifted by s has three words,
// and two steps of div_preinv divide them (the first only when n_hi >= d:
// otherwise its quotient is 0 and its remainder the middle word); the
// remainder is shifted back.  The reciprocal is kept per thread
// with the divisor it belongs to (recip_d_, recip_v_) and computed again
// only when the divisor changes: a loop that divides by a fixed modulus
// pays for it once.  Other divisors run the 64-bit loop.
// The result it returns is written into `out`'s registers when given
// (the caller's destination, which n and d must not read), else into
// registers of its own; each path writes it once, where it ends.
std::pair<V, V> Lowerer::udiv64(V n, V d, bool want_q, const std::array<uint32_t, 2>* out) {
  uint32_t qlo = nv(), qhi = nv(), rlo = nv(), rhi = nv();
  if (out) (want_q ? qlo : rlo) = (*out)[0], (want_q ? qhi : rhi) = (*out)[1];
  uint32_t narrow = new_label(), wide = new_label(), done = new_label();
  if (opts_.compact_division) {
    jmp(wide);
  } else {
    narrow_division_ = true;
    br(opr(Op::OR, d.hi, opr(Op::SEQ, d.lo, K(0))), wide, narrow);
    place(narrow);
    uint32_t word = new_label(), words = new_label();
    br(n.hi, words, word);
    place(word);  // a 32-bit dividend: the 32-bit division, with no reciprocal
    {
      auto [q, r] = udiv32(n.lo, d.lo, want_q);
      if (want_q) {
        opd(qlo, Op::MOV, q);
        opd(qhi, Op::MOV, K(0));
      } else {
        opd(rlo, Op::MOV, r);
        opd(rhi, Op::MOV, K(0));
      }
      jmp(done);
    }
    place(words);
    Operand s = opr(Op::CLZ, d.lo), back = opr(Op::SUB, K(32), s);
    Operand dn = opr(Op::SHL, d.lo, s);
    refresh_reciprocal(dn);
    const Operand v = R(recip_v_);
    Operand w1 = opr(Op::OR, opr(Op::SHL, n.hi, s), opr(Op::SHR, n.lo, back));
    Operand w0 = opr(Op::SHL, n.lo, s);
    uint32_t u1 = op(Op::MOV, w1), q1 = want_q ? op(Op::MOV, K(0)) : 0;
    uint32_t low = new_label(), high = new_label();
    br(opr(Op::SLTU, n.hi, d.lo), low, high);
    place(high);
    auto [qh, rh] = div_preinv(opr(Op::SHR, n.hi, back), w1, dn, v, want_q);
    opd(u1, Op::MOV, rh);
    if (want_q) opd(q1, Op::MOV, qh);
    place(low);
    auto [q0, r0] = div_preinv(R(u1), w0, dn, v, want_q);
    if (want_q) {
      opd(qlo, Op::MOV, q0);
      opd(qhi, Op::MOV, R(q1));
    } else {
      opd(rlo, Op::SHR, r0, s);
      opd(rhi, Op::MOV, K(0));
    }
    jmp(done);
  }

  place(wide);
  {
    opd(rlo, Op::MOV, n.lo);
    opd(rhi, Op::MOV, n.hi);
    if (want_q) {
      opd(qlo, Op::MOV, K(0));
      opd(qhi, Op::MOV, K(0));
    }
    Operand i0 = opr(Op::MAX, opr(Op::SUB, clz64(d), clz64(n)), K(uint32_t(-1)));
    Operand i = opr(Op::SEL, opr(Op::SEQ, opr(Op::OR, d.lo, d.hi), K(0)), K(63), i0);
    V d0 = shl64(d, i);
    uint32_t dlo = op(Op::MOV, d0.lo), dhi = op(Op::MOV, d0.hi);
    uint32_t k = op(Op::ADD, i, K(1));
    uint32_t loop = new_label();
    br(R(k), loop, done);
    place(loop);
    Operand ge = lt64({R(dlo), R(dhi)}, {R(rlo), R(rhi)}, false, true);
    Operand tlo = opr(Op::SEL, ge, R(dlo), K(0)), thi = opr(Op::SEL, ge, R(dhi), K(0));
    Operand borrow = opr(Op::SLTU, R(rlo), tlo);
    opd(rlo, Op::SUB, R(rlo), tlo);
    opd(rhi, Op::SUB, opr(Op::SUB, R(rhi), thi), borrow);
    if (want_q) {
      opd(qhi, Op::OR, opr(Op::SHL, R(qhi), K(1)), opr(Op::SHR, R(qlo), K(31)));
      opd(qlo, Op::OR, opr(Op::SHL, R(qlo), K(1)), ge);
    }
    opd(dlo, Op::OR, opr(Op::SHR, R(dlo), K(1)), opr(Op::SHL, R(dhi), K(31)));
    opd(dhi, Op::SHR, R(dhi), K(1));
    opd(k, Op::ADD, R(k), K(uint32_t(-1)));
    br(R(k), loop, done);
  }
  place(done);
  const V q = want_q ? V{R(qlo), R(qhi)} : V{K(0), K(0)};
  return {q, want_q ? V{K(0), K(0)} : V{R(rlo), R(rhi)}};
}

V Lowerer::neg_if64(V a, Operand neg) {
  V n = neg64(a);
  return {opr(Op::SEL, neg, n.lo, a.lo), opr(Op::SEL, neg, n.hi, a.hi)};
}

// x / d and x % d for x < bound and a launch constant d.  When every
// x * d < 2^32 one high multiply is exact; otherwise (CUDA-sized grids)
// the round-up method that is exact for every 32-bit x: t = mulhu(x, m'),
// x / d = (t + ((x - t) >> 1)) >> (l - 1), l = ceil(log2 d).
Operand Lowerer::div_const(Operand x, uint32_t d, uint64_t bound) {
  if (d == 1) return x;
  if (std::has_single_bit(d)) return opr(Op::SHR, x, K(std::countr_zero(d)));
  if (bound == 0 || (bound - 1) * d < (uint64_t(1) << 32)) {
    uint32_t m = uint32_t((uint64_t(1) << 32) / d + 1);  // exact for x * d < 2^32
    return opr(Op::MULHU, x, K(m));
  }
  const uint32_t l = uint32_t(std::bit_width(d - 1));
  const uint32_t m = uint32_t(((uint64_t(1) << 32) * ((uint64_t(1) << l) - d)) / d + 1);
  Operand t = opr(Op::MULHU, x, K(m));
  return opr(Op::SHR, opr(Op::ADD, t, opr(Op::SHR, opr(Op::SUB, x, t), K(1))), K(l - 1));
}

Operand Lowerer::rem_const(Operand x, uint32_t d, uint64_t bound) {
  if (d == 1) return K(0);
  if (std::has_single_bit(d)) return opr(Op::AND, x, K(d - 1));
  return opr(Op::SUB, x, opr(Op::MUL, div_const(x, d, bound), K(d)));
}

// Component c of the linear index `lin` (< dim.count()) of a 3-D shape.
Operand Lowerer::component(Operand lin, const launch::Dim3& dim, char c) {
  const uint64_t n = dim.count();
  if (c == 'x') return dim.y * dim.z == 1 ? lin : rem_const(lin, dim.x, n);
  if (c == 'y' && dim.z == 1) return div_const(lin, dim.x, n);
  if (c == 'y') return rem_const(div_const(lin, dim.x, n), dim.y, (n + dim.x - 1) / dim.x);
  return div_const(lin, dim.x * dim.y, n);
}


// An instruction's destination registers when a routine with several paths
// can compute its result there directly (no copies after the paths join): an
// unguarded register of `bytes` bytes that none of the operands `srcs`
// reads; else null.
const std::array<uint32_t, 2>* Lowerer::direct_destination(const ptx::Instr& in, std::initializer_list<V> srcs,
                                                           uint32_t bytes) {
  if (!guard_.imm || guard_.v != 1 || in.ops[0].kind != ptx::Operand::Kind::Reg) return nullptr;
  if (ptx::type_size(frames_.back()->f->regs[in.ops[0].reg].type) != bytes) return nullptr;
  const auto& dst = frames_.back()->regs[in.ops[0].reg];
  for (const V& v : srcs)
    for (Operand o : {v.lo, v.hi})
      if (!o.imm && (o.v == dst[0] || (dst[1] != kNoV && o.v == dst[1]))) return nullptr;
  return &dst;
}

void Lowerer::lower_divrem(const ptx::Instr& in) {
  Type t = in.type;
  bool sign = ptx::is_signed(t), rem = in.op == ptx::Op::Rem;
  if (ptx::is_float(t)) unsupported(in, "divides floating-point values: the machine has no floating point");
  V a = read(in, in.ops[1], t), b = read(in, in.ops[2], t);
  if (ptx::type_size(t) == 8) {
    Operand na = sign ? opr(Op::SLT, a.hi, K(0)) : K(0), nb = sign ? opr(Op::SLT, b.hi, K(0)) : K(0);
    V ua = sign ? neg_if64(a, na) : a, ub = sign ? neg_if64(b, nb) : b;
    if (const auto* out = sign ? nullptr : direct_destination(in, {a, b}, 8)) {
      udiv64(ua, ub, !rem, out);
      return;
    }
    auto [q, r] = udiv64(ua, ub, !rem);
    V res = rem ? r : q;
    if (sign) {
      Operand neg = rem ? na : opr(Op::XOR, na, nb);
      res = neg_if64(res, neg);
      if (!rem) {  // a signed quotient by zero is -1 whatever the dividend's sign
        Operand z = opr(Op::SEQ, opr(Op::OR, b.lo, b.hi), K(0));
        res = {opr(Op::SEL, z, K(0xFFFFFFFFu), res.lo), opr(Op::SEL, z, K(0xFFFFFFFFu), res.hi)};
      }
    }
    write(in.ops[0], t, res);
    return;
  }
  // A remainder takes the dividend's sign only: its divisor's magnitude is
  // max(b, -b) (INT_MIN's is 2^31 either way).
  Operand na = sign ? opr(Op::SLT, a.lo, K(0)) : K(0), nb = sign && !rem ? opr(Op::SLT, b.lo, K(0)) : K(0);
  Operand ua = sign ? neg_if32(a.lo, na) : a.lo;
  Operand ub = !sign ? b.lo : rem ? opr(Op::MAX, b.lo, opr(Op::SUB, K(0), b.lo)) : neg_if32(b.lo, nb);
  if (const auto* out = sign ? nullptr : direct_destination(in, {a, b}, 4)) {
    udiv32(ua, ub, !rem, (*out)[0]);
    return;
  }
  auto [q, r] = udiv32(ua, ub, !rem);
  Operand res = rem ? r : q;
  if (sign) res = neg_if32(res, rem ? na : opr(Op::XOR, na, nb));
  if (sign && !rem) res = opr(Op::SEL, opr(Op::SEQ, b.lo, K(0)), K(0xFFFFFFFFu), res);  // x / 0 == -1
  write(in.ops[0], t, {res, K(0)});
}

}  // namespace qgpu::machine::lowering
