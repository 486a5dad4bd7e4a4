// Instruction selection: floating point (isel.h).
#include "model_host/lower/isel.h"

#include <optional>

#include "model_host/lower/softfloat.h"
#include "model_host/ptx/float_ref.h"

namespace qgpu::machine::lowering {

// ---- floating point ------------------------------------------------------------
//
// Every f32 operation is a branch-free integer sequence (softfloat.h); so
// are the f16, bf16 and f64 operations below.  On a machine with native
// floats (LowerOptions::native_float) the f32 arithmetic, comparisons,
// min/max, the approximate functions and the conversions between f32 and
// 32-bit integers are one native float operation each (isa.h, OpKind::Float)
// instead, and so are the f64 arithmetic, comparisons, min/max and
// conversions (the ops DADD .. DRINT, each f64 result two instructions: its
// low word and its high word).

// The software floating point, emitting here; on a machine that computes
// ffma (.rn) its division and square root use it.
softfloat::Gen Lowerer::float_gen() {
  return softfloat::Gen(
      [this](Op o, Operand a, Operand b, Operand c) {
        return o == Op::FFMA ? fnative(o, FloatMod{}, a, b, c) : opr(o, a, b, c);
      },
      p_.has_native_rn(Op::FFMA));
}

// fma.rz/.rm/.rp and mul.rz/.rm/.rp (no .ftz) on a machine with ffma .rn
// only: r = RN(x) for x = a b + c (a mul: c = -0, so x = a b and r = RN(a b)
// with a zero product's sign), then, where r is finite and nonzero and c - r
// is exact (c_zero: -r; else r shares c's sign and exponent field: Sterbenz,
// or both subnormal: one grid), u = RN(a b + (c - r)) = RN(x - r) has the
// sign bit of x - r exactly (a rounding keeps the sign, an underflow gives a
// zero of it, and an exact zero is +0 since the exact c - r is +0 or the
// negation of a b then), and likewise v = RN(-a b + (r - c)) = RN(r - x).
// The directed result is r, or its neighbour below (x < r, .rm; toward zero
// for .rz) or above (x > r, .rp): the word minus or plus one, with r's sign
// (past the largest finite value that is the infinity .rp and .rm give).
// Otherwise (c far from r, zero results, infinities, NaNs) `integer()`, the
// integer sequence.  The ffma path is 10 to 17 steps against about 80 (mul)
// and 170 (fma); libdevice's expf rounds down a sum dominated by a constant
// c this way.
Operand Lowerer::directed_fma(Operand a, Operand b, Operand c, bool c_zero, softfloat::Round rnd,
                              const std::function<Operand()>& integer) {
  auto ffma = [&](Operand x, Operand y, Operand z) { return fnative(Op::FFMA, FloatMod{}, x, y, z); };
  Operand r = ffma(a, b, c);
  Operand take = opr(Op::SLTU, opr(Op::SUB, opr(Op::AND, r, K(0x7FFFFFFFu)), K(1)), K(0x7F7FFFFFu));
  if (!c_zero) take = opr(Op::AND, take, opr(Op::SLTU, opr(Op::XOR, r, c), K(0x00800000u)));
  const uint32_t res = nv(), fast = new_label(), slow = new_label(), done = new_label();
  br(take, fast, slow);
  place(fast);
  auto below = [&] {  // x < r
    Operand d = c_zero ? opr(Op::XOR, r, K(0x80000000u)) : ffma(r, K(0xBF800000u), c);
    return opr(Op::SHR, ffma(a, b, d), K(31));
  };
  auto above = [&] {  // x > r
    Operand nd = c_zero ? r : ffma(c, K(0xBF800000u), r);
    return opr(Op::SHR, ffma(opr(Op::XOR, a, K(0x80000000u)), b, nd), K(31));
  };
  Operand dir = opr(Op::OR, opr(Op::SAR, r, K(31)), K(1));  // +1 for r >= 0, -1 below
  switch (rnd) {
    case softfloat::Round::Rm: opd(res, Op::SUB, r, opr(Op::SEL, below(), dir, K(0))); break;
    case softfloat::Round::Rp: opd(res, Op::ADD, r, opr(Op::SEL, above(), dir, K(0))); break;
    default: {  // toward zero: the magnitude's word less one
      Operand lo = below(), hi = above();
      opd(res, Op::SUB, r, opr(Op::SEL, opr(Op::SHR, r, K(31)), hi, lo));
      break;
    }
  }
  jmp(done);
  place(slow);
  opd(res, Op::MOV, integer());
  place(done);
  return R(res);
}

Operand Lowerer::fnative(Op f, const FloatMod& m, Operand a, Operand b, Operand c) {
  Instr in = make_float(f, 0, a, b, c, m);
  if (in.a.imm && in.b.imm && in.c.imm) return K(eval_float(in, in.a.v, in.b.v, in.c.v));
  in.dst = nv();
  emit(in);
  return R(in.dst);
}

V Lowerer::dnative(Op f, const FloatMod& m, V x, V y, V z) {
  const Operand s[kMaxArity] = {x.lo, x.hi, y.lo, y.hi, z.lo, z.hi};
  auto one = [&](bool hi) {
    FloatMod mm = m;
    mm.hi = hi;
    Instr in = make_float(f, 0, s, mm);
    const int n = op_info(f).arity;
    bool konst = true;
    uint32_t v[kMaxArity] = {};
    for (int k = 0; k < n; ++k) {
      konst &= in.src(k).imm;
      v[k] = in.src(k).v;
    }
    if (konst) return K(eval_float(in, v));
    in.dst = nv();
    emit(in);
    return R(in.dst);
  };
  if (!has_wide_result(f)) return {one(false), K(0)};
  Operand lo = one(false);
  return {lo, one(true)};
}

namespace {
// The generators' rounding for a PTX rounding modifier (.rni ... as .rn ...;
// none as .rn).
softfloat::Round soft_round(ptx::Rnd rnd) {
  switch (ptx::base_rounding(rnd)) {
    case ptx::Rnd::Rz: return softfloat::Round::Rz;
    case ptx::Rnd::Rm: return softfloat::Round::Rm;
    case ptx::Rnd::Rp: return softfloat::Round::Rp;
    default: return softfloat::Round::Rn;
  }
}
}  // namespace

// binary16 and bfloat16: cvt between f16/bf16 and f32 (and cvt.rnd.f16x2.f32,
// cvt.rnd.bf16x2.f32: a in the high half, b in the low one), and add, sub,
// mul, fma .rn on .f16, .f16x2, .bf16 and .bf16x2 (each half), computed
// through f32 (softfloat.h).  False when the instruction is not one of these.
bool Lowerer::lower_half(const ptx::Instr& in, const ptx::FloatMods& fm) {
  using PO = ptx::Op;
  auto is16 = [](Type x) { return x == Type::F16 || x == Type::BF16; };
  auto is16x2 = [](Type x) { return x == Type::F16x2 || x == Type::BF16x2; };
  const bool h = is16(in.type) || is16x2(in.type);
  const bool cvt = in.op == PO::Cvt && (((is16(in.type) || is16x2(in.type)) && in.type2 == Type::F32) ||
                                        (in.type == Type::F32 && is16(in.type2)));
  if (!cvt && !(h && (in.op == PO::Add || in.op == PO::Sub || (in.op == PO::Mul && in.mul == ptx::MulMode::None) ||
                      in.op == PO::Fma)))
    return false;
  const bool bf = in.type == Type::BF16 || in.type == Type::BF16x2 || in.type2 == Type::BF16;
  const char* name = bf ? "bf16" : "f16";
  if (in.opcode.find(".relu") != std::string::npos || in.opcode.find(".satfinite") != std::string::npos)
    unsupported(in, std::string("converts to ") + name + " with .relu or .satfinite, which the machine's software floating point does not have");
  softfloat::Gen g = float_gen();
  if (cvt) {
    // .sat (PTX: f16, f32 and f64 destinations) on cvt.sat.f32.f16,
    // cvt.sat.f32.bf16 and cvt.rnd.sat.f16.f32; PTX's conversions to bf16 and
    // the x2 forms have none.
    if (fm.ftz || (fm.sat && (in.type == Type::BF16 || is16x2(in.type))))
      unsupported(in, std::string("converts ") + name + " with .ftz or .sat, which the machine's software floating point does not have");
    if (in.type == Type::F32) {
      Operand v = read32(in, in.ops[1], in.type2);
      Operand x = bf ? g.f32_from_bf16(opr(Op::AND, v, K(0xFFFF))) : g.f32_from_f16(v);
      write(in.ops[0], Type::F32, {fm.sat ? g.saturate(x) : x, K(0)});
      return true;
    }
    const softfloat::Round r = soft_round(fm.rnd);
    auto conv = [&](size_t i) {
      Operand f = read32(in, in.ops[i], Type::F32);
      // .sat: clamping before the rounding is clamping after it (0 and 1 are
      // f16 values, and rounding is monotonic); NaN and -0 give +0.
      if (fm.sat) f = g.saturate(f);
      return bf ? g.bf16_from_f32(f, r) : g.f16_from_f32(f, r);
    };
    if (is16x2(in.type)) {
      if (in.ops.size() != 3) unsupported(in, std::string("is a cvt to ") + name + "x2 without two f32 sources");
      write(in.ops[0], Type::B32, {opr(Op::OR, opr(Op::SHL, conv(1), K(16)), conv(2)), K(0)});
      return true;
    }
    write(in.ops[0], in.type, {conv(1), K(0)});
    return true;
  }
  if (((fm.ftz || fm.sat) && bf) || (fm.rnd != ptx::Rnd::None && fm.rnd != ptx::Rnd::Rn))
    unsupported(in, std::string("is an ") + name + " operation with .ftz, .sat or a directed rounding, which the machine's "
                    "software floating point does not have (it has .rn, and .ftz and .sat on f16)");
  const bool x2 = is16x2(in.type);
  // .ftz (f16): subnormal halves in and out become zeros of their sign.
  auto fl = [&](Operand h) { return fm.ftz ? g.flush16(h) : h; };
  auto one = [&](Operand a, Operand b, Operand c) {
    a = fl(a), b = fl(b);
    if (in.op == PO::Fma) c = fl(c);
    Operand h;
    switch (in.op) {
      case PO::Add: h = bf ? g.add_bf16(a, b) : g.add16(a, b); break;
      case PO::Sub: h = bf ? g.sub_bf16(a, b) : g.sub16(a, b); break;
      case PO::Mul: h = bf ? g.mul_bf16(a, b) : g.mul16(a, b); break;
      default: h = bf ? g.fma_bf16(a, b, c) : g.fma16(a, b, c); break;
    }
    h = fl(h);
    return fm.sat ? sat16(h) : h;
  };
  const size_t n = in.op == PO::Fma ? 3 : 2;
  Operand src[3] = {K(0), K(0), K(0)};
  for (size_t i = 0; i < n; ++i) src[i] = read32(in, in.ops[i + 1], x2 ? Type::B32 : in.type);
  auto half = [&](Operand v, int k) { return k ? opr(Op::SHR, v, K(16)) : opr(Op::AND, v, K(0xFFFF)); };
  Operand lo = one(half(src[0], 0), half(src[1], 0), half(src[2], 0));
  if (!x2) {
    write(in.ops[0], in.type, {lo, K(0)});
    return true;
  }
  Operand hi = one(half(src[0], 1), half(src[1], 1), half(src[2], 1));
  write(in.ops[0], Type::B32, {opr(Op::OR, lo, opr(Op::SHL, hi, K(16))), K(0)});
  return true;
}

// An f16 clamped to [0, 1] (.sat): a NaN and negative values (-0 too) to +0,
// above 1.0 (0x3C00) to 1.0.
Operand Lowerer::sat16(Operand h) {
  Operand zero = opr(Op::OR, opr(Op::SLTU, K(0x7C00), opr(Op::AND, h, K(0x7FFF))), opr(Op::SHR, h, K(15)));
  return opr(Op::SEL, zero, K(0), opr(Op::MINU, h, K(0x3C00)));
}

// f16 and f16x2 neg and abs (the sign bit of each half; a NaN half gives the
// canonical 0x7FFF), setp.CmpOp{.BoolOp}.f16 and .f16x2 p|q (the low halves'
// comparison in p, the high halves' in q; each half compared as the f32 of
// its bits shifted to the top: same order) and
// set.CmpOp{.BoolOp}.dtype.{f16,f16x2} (per half 1.0 for an f16 destination,
// else all ones; 0xFFFF a half from f16x2).  False when the instruction is
// not one of these (docs/isa.md section 11.1).
bool Lowerer::lower_half_misc(const ptx::Instr& in, const ptx::FloatMods& fm) {
  using PO = ptx::Op;
  const Type dt = in.type, st = in.op == PO::Set ? in.type2 : in.type;
  const bool x2 = st == Type::F16x2;
  bool ours = false;
  if (in.op == PO::Neg || in.op == PO::Abs) ours = st == Type::F16 || x2;
  if (in.op == PO::Setp) ours = st == Type::F16 || x2;
  if (in.op == PO::Set)
    ours = (st == Type::F16 || x2) && (x2 ? (dt == Type::F16x2 || ptx::type_size(dt) == 4)
                                          : (dt != Type::F16x2 && dt != Type::BF16x2)) &&
           dt != Type::BF16 && dt != Type::F64;
  if (!ours) return false;
  // .ftz: subnormal halves are zeros of their sign (flush16 on a half,
  // the same test on the f32 of its bits below).
  softfloat::Gen g = float_gen();
  if (in.op == PO::Neg || in.op == PO::Abs) {
    Operand v = read32(in, in.ops[1], dt);
    auto one = [&](Operand h) {  // h: one half in the low bits
      if (fm.ftz) h = g.flush16(h);
      Operand nan = opr(Op::SLTU, K(0x7C00), opr(Op::AND, h, K(0x7FFF)));
      return opr(Op::SEL, nan, K(0x7FFF), in.op == PO::Neg ? opr(Op::XOR, h, K(0x8000)) : opr(Op::AND, h, K(0x7FFF)));
    };
    Operand lo = one(opr(Op::AND, v, K(0xFFFF)));
    write(in.ops[0], dt, {x2 ? opr(Op::OR, lo, opr(Op::SHL, one(opr(Op::SHR, v, K(16))), K(16))) : lo, K(0)});
    return true;
  }
  Operand a = read32(in, in.ops[1], x2 ? Type::B32 : st), b = read32(in, in.ops[2], x2 ? Type::B32 : st);
  Operand c = in.bool_op != ptx::BoolOp::None ? read32(in, in.ops[3], Type::Pred) : K(0);
  const Op bo = in.bool_op == ptx::BoolOp::And ? Op::AND : in.bool_op == ptx::BoolOp::Or ? Op::OR : Op::XOR;
  auto comb = [&](Operand x) { return in.bool_op == ptx::BoolOp::None ? x : opr(bo, x, c); };
  // A half k of v as the f32 whose top 16 bits are its bits: the same sign
  // and the same order of magnitudes (both formats order their non-NaN bit
  // patterns by sign and magnitude), so compared as f32 values they compare
  // as the halves do; a NaN half becomes the f32 NaN.
  auto as32 = [&](Operand v, int k) {
    Operand w = k ? opr(Op::AND, v, K(0xFFFF0000u)) : opr(Op::SHL, v, K(16));
    if (fm.ftz) w = opr(Op::SEL, opr(Op::AND, w, K(0x7C000000u)), w, opr(Op::AND, w, K(0x80000000u)));
    Operand nan = opr(Op::SLTU, K(0x7C00FFFFu), opr(Op::AND, w, K(0x7FFFFFFFu)));
    return opr(Op::SEL, nan, K(0x7FC00000u), w);
  };
  auto cmp = [&](int k) { return g.compare(in.cmp, as32(a, k), as32(b, k), false); };
  if (in.op == PO::Setp) {
    Operand r = cmp(0);
    const ptx::Operand& d = in.ops[0];
    if (d.kind == ptx::Operand::Kind::PredPair) {
      ptx::Operand p = d, q = d;
      p.kind = q.kind = ptx::Operand::Kind::Reg;
      q.reg = d.reg2;
      // Both values before either write: writing p may take r's register.
      Operand pv = comb(r), qv = comb(x2 ? cmp(1) : opr(Op::XOR, r, K(1)));
      write(p, Type::Pred, {pv, K(0)});
      write(q, Type::Pred, {qv, K(0)});
    } else {
      write(d, Type::Pred, {comb(r), K(0)});
    }
    return true;
  }
  if (x2) {
    const uint32_t one = dt == Type::F16x2 ? 0x3C00u : 0xFFFFu;
    Operand lo = opr(Op::SEL, comb(cmp(0)), K(one), K(0)), hi = opr(Op::SEL, comb(cmp(1)), K(one << 16), K(0));
    write(in.ops[0], dt, {opr(Op::OR, lo, hi), K(0)});
    return true;
  }
  Operand r = comb(cmp(0));
  if (dt == Type::F16 || dt == Type::F32) {
    write(in.ops[0], dt, {opr(Op::SEL, r, K(dt == Type::F16 ? 0x3C00u : 0x3F800000u), K(0)), K(0)});
  } else {
    Operand all = opr(Op::SUB, K(0), r);
    write(in.ops[0], dt, {all, ptx::type_size(dt) == 8 ? all : K(0)});
  }
  return true;
}

// ex2.approx{.ftz}.f16{x2} and tanh.approx{.ftz}.f16{x2} (each half: the f32
// function, one rounding to f16), rcp.approx.ftz.f64 and rsqrt.approx.ftz.f64
// (from the high word, through the f32 rcp and rsqrt), docs/isa.md section
// 11.1.  The f32 function is the native operation on a machine with native
// floats (as the f32 instructions take it), else the generator's sequence.
// False when the instruction is not one of these.
bool Lowerer::lower_defined_approx(const ptx::Instr& in, const ptx::FloatMods& fm) {
  using PO = ptx::Op;
  const bool half = (in.op == PO::Ex2 || in.op == PO::Tanh) && (in.type == Type::F16 || in.type == Type::F16x2);
  const bool wide = (in.op == PO::Rcp || in.op == PO::Rsqrt) && in.type == Type::F64 && fm.ftz;
  if (!fm.approx || !(half || wide)) return false;
  softfloat::Gen g = float_gen();
  const bool nat = opts_.native_float;
  FloatMod rn;
  rn.rnd = from_ptx(ptx::Rnd::Rn);
  softfloat::Gen::Unary f32 = nullptr;
  if (nat && in.op == PO::Ex2) f32 = [&](Operand x) { return fnative(Op::FEX2, rn, x); };
  if (nat && in.op == PO::Tanh) f32 = [&](Operand x) { return fnative(Op::FTANH, rn, x); };
  if (nat && in.op == PO::Rcp) f32 = [&](Operand x) { return fnative(Op::FDIV, rn, K(0x3F800000u), x); };
  if (nat && in.op == PO::Rsqrt)
    f32 = [&](Operand x) { return fnative(Op::FDIV, rn, K(0x3F800000u), fnative(Op::FSQRT, rn, x)); };
  if (wide) {
    V v = read(in, in.ops[1], Type::F64);
    softfloat::Gen::W r = in.op == PO::Rcp ? g.rcp_approx64({v.lo, v.hi}, f32) : g.rsqrt_approx64({v.lo, v.hi}, f32);
    write(in.ops[0], Type::F64, {r.first, r.second});
    return true;
  }
  const bool x2 = in.type == Type::F16x2;
  Operand v = read32(in, in.ops[1], x2 ? Type::B32 : in.type);
  auto one = [&](Operand h) { return in.op == PO::Ex2 ? g.ex2_16(h, fm.ftz, f32) : g.tanh16(h, fm.ftz, f32); };
  Operand lo = one(opr(Op::AND, v, K(0xFFFF)));
  write(in.ops[0], x2 ? Type::B32 : in.type,
        {x2 ? opr(Op::OR, lo, opr(Op::SHL, one(opr(Op::SHR, v, K(16))), K(16))) : lo, K(0)});
  return true;
}

// cvt between f16 and the integers or f64 (docs/isa.md section 11.1), through
// f32 (softfloat.h: Gen::f16_from_int ...).  False when the instruction is
// not one of these.
bool Lowerer::lower_half_wide(const ptx::Instr& in, const ptx::FloatMods& fm) {
  using PO = ptx::Op;
  auto is_int = [](Type x) { return !ptx::is_float(x) && x != Type::Pred; };
  const Type dt = in.type, st = in.type2;
  if (in.op != PO::Cvt || !((st == Type::F16 && (is_int(dt) || dt == Type::F64)) ||
                            (dt == Type::F16 && (is_int(st) || st == Type::F64))))
    return false;
  if (fm.ftz || in.opcode.find(".relu") != std::string::npos || in.opcode.find(".satfinite") != std::string::npos)
    unsupported(in, "converts f16 with .ftz, .relu or .satfinite, which the machine's software floating point does not have");
  softfloat::Gen g = float_gen();
  const softfloat::Round r = soft_round(fm.rnd);
  if (st == Type::F16) {
    const Operand h = opr(Op::AND, read32(in, in.ops[1], st), K(0xFFFF));
    softfloat::Gen::W w = dt == Type::F64 ? g.f64_from_f16(h)
                                          : g.int_from_f16(h, ptx::is_signed(dt), 8 * ptx::type_size(dt), r);
    if (dt == Type::F64 && fm.sat) w = g.saturate64(w);
    write(in.ops[0], dt, {w.first, w.second});
    return true;
  }
  V v = read(in, in.ops[1], st);
  // .sat: clamping before the rounding is clamping after it (as in lower_half).
  write(in.ops[0], dt,
        {st == Type::F64 ? g.f16_from_f64(v.lo, v.hi, r, fm.sat)
                         : g.f16_from_int({v.lo, v.hi}, ptx::is_signed(st), 8 * ptx::type_size(st), r, fm.sat),
         K(0)});
  return true;
}

// A float literal's bits: 0f/0d literals as written, a decimal literal (a
// double) in an f32 operand rounded to f32.
V Lowerer::float_literal(const ptx::Operand& o, uint32_t size) {
  uint64_t raw = uint64_t(o.imm);
  if (size == 4 && o.fbits == 64) {
    double d;
    std::memcpy(&d, &raw, 8);
    const float f = float(d);
    uint32_t b;
    std::memcpy(&b, &f, 4);
    raw = b;
  }
  return {K(uint32_t(raw)), K(uint32_t(raw >> 32))};
}

void Lowerer::lower_float(const ptx::Instr& in) {
  using PO = ptx::Op;
  const ptx::FloatMods fm = ptx::float_mods(in);
  if (lower_half(in, fm) || lower_half_misc(in, fm) || lower_half_wide(in, fm) || lower_defined_approx(in, fm)) return;
  const bool f32_f64 = in.op == PO::Cvt && ((in.type == Type::F64 && in.type2 == Type::F32) ||
                                            (in.type == Type::F32 && in.type2 == Type::F64));
  // cvt between f64 and 32/64-bit integers, f64 rounded to an integral f64,
  // and cvt.sat.f64.f64 (only saturated).
  const bool integral = fm.rnd == ptx::Rnd::Rni || fm.rnd == ptx::Rnd::Rzi || fm.rnd == ptx::Rnd::Rmi ||
                        fm.rnd == ptx::Rnd::Rpi;
  auto int_type = [](Type x) { return !ptx::is_float(x) && x != Type::Pred; };
  const bool cvt64 = in.op == PO::Cvt && ((in.type == Type::F64 && int_type(in.type2)) ||
                                         (int_type(in.type) && in.type2 == Type::F64) ||
                                         (in.type == Type::F64 && in.type2 == Type::F64 &&
                                          (integral || (fm.rnd == ptx::Rnd::None && fm.sat))));
  // binary64: add, sub, mul, min, max, abs, neg and comparisons.
  const Type ft = in.op == PO::Set ? in.type2 : in.type;
  const bool f64 = ft == Type::F64 && (in.op == PO::Add || in.op == PO::Sub || (in.op == PO::Mul && in.mul == ptx::MulMode::None) ||
                                      in.op == PO::Fma || in.op == PO::Mad ||
                                      ((in.op == PO::Div || in.op == PO::Sqrt || in.op == PO::Rcp) && !fm.approx) ||
                                      in.op == PO::Min || in.op == PO::Max || in.op == PO::Abs || in.op == PO::Neg ||
                                      in.op == PO::Setp || in.op == PO::Set);
  for (Type x : {in.type, in.type2})
    if (ptx::is_float(x) && x != Type::F32 && !f32_f64 && !cvt64 && !(f64 && x == Type::F64))
      unsupported(in, std::string("operates on ") + ptx::type_name(x) +
                          " values in a way the machine's software floating point does not have (docs/isa.md section 11)");
  const bool defined_approx = in.op == PO::Div || in.op == PO::Rcp || in.op == PO::Sqrt || in.op == PO::Rsqrt ||
                              in.op == PO::Ex2 || in.op == PO::Lg2 || in.op == PO::Sin || in.op == PO::Cos ||
                              in.op == PO::Tanh;
  if ((fm.approx || fm.full) && !defined_approx)
    unsupported(in, "is an approximate floating-point function the machine's software floating point does not "
                    "have (it has div, rcp, sqrt, rsqrt, ex2, lg2, sin, cos and tanh, docs/isa.md section 11)");
  softfloat::Gen g = float_gen();
  const softfloat::Round r = soft_round(fm.rnd);
  const bool nat = opts_.native_float;
  const ptx::Rnd br = ptx::base_rounding(fm.rnd);  // Rn Rz Rm Rp
  // The same as an integer rounding (f2i, d2i ...: Rni Rzi Rmi Rpi).
  const ptx::Rnd bri = br == ptx::Rnd::Rz ? ptx::Rnd::Rzi
                       : br == ptx::Rnd::Rm ? ptx::Rnd::Rmi
                       : br == ptx::Rnd::Rp ? ptx::Rnd::Rpi
                                            : ptx::Rnd::Rni;
  // A machine with only some float ops .rn (Params::native_rn; the model's
  // has FFMA alone): add, sub, mul and fma/mad .rn without .ftz or .sat are
  // one such op each, FFMA standing in for the others: a + b = a * 1 + b,
  // a - b = b * -1 + a and a * b = a * b + -0, rounded once, bit for bit
  // (NaN results canonical either way).  Their .ftz, .sat and directed
  // forms on the model's machine: ffma_form below.
  const bool plain_rn = br == ptx::Rnd::Rn && !fm.ftz && !fm.sat;
  auto has_rn = [&](Op o) { return plain_rn && p_.has_native_rn(o); };
  auto nm = [&](ptx::Rnd rr, bool sat) {
    FloatMod x;
    x.rnd = from_ptx(rr);
    x.ftz = fm.ftz;
    x.sat = sat;
    return x;
  };
  auto ncmp = [&](ptx::Cmp c) {
    FloatMod x;
    x.ftz = fm.ftz;
    x.cmp = from_ptx(c);
    return x;
  };
  auto f = [&](size_t i) { return read32(in, in.ops[i], Type::F32); };
  auto out = [&](Operand v) { write(in.ops[0], Type::F32, {v, K(0)}); };
  auto w = [&](size_t i) {
    V v = read(in, in.ops[i], Type::F64);
    return softfloat::Gen::W{v.lo, v.hi};
  };
  auto out64 = [&](softfloat::Gen::W x) { write(in.ops[0], Type::F64, {x.first, x.second}); };
  auto wv = [&](size_t i) { return read(in, in.ops[i], Type::F64); };
  // The f64 ops' modifiers: a rounding only (PTX's f64 arithmetic has no .ftz
  // or .sat), and .sat on the conversions to f64 (`sat`).
  auto nm64 = [&](ptx::Rnd rr, bool sat = false) {
    FloatMod x;
    x.rnd = from_ptx(rr);
    x.sat = sat;
    return x;
  };
  auto outv = [&](V v) { write(in.ops[0], Type::F64, v); };
  // .sat on an f64 destination: clamped to [0, 1], NaN and -0 to +0.
  auto sat64 = [&](softfloat::Gen::W x) { return fm.sat ? g.saturate64(x) : x; };
  if (cvt64) {
    const Type dt = in.type, st = in.type2;
    if (dt == Type::F64 && st == Type::F64) {
      if (!integral) return out64(g.saturate64(w(1)));  // cvt.sat.f64.f64: saturated only
      if (nat) return outv(dnative(Op::DRINT, nm64(fm.rnd, fm.sat), wv(1)));
      return out64(sat64(g.round_int64(w(1), r)));
    }
    if (dt == Type::F64) {
      V v = read(in, in.ops[1], st);  // an 8- or 16-bit source read extended to 32 bits
      if (ptx::type_size(st) <= 4) v.hi = ptx::is_signed(st) ? opr(Op::SAR, v.lo, K(31)) : K(0);
      if (nat) return outv(dnative(ptx::is_signed(st) ? Op::L2D : Op::UL2D, nm64(br, fm.sat), v));
      return out64(sat64(g.from_int_to64({v.lo, v.hi}, ptx::is_signed(st), r)));
    }
    const bool sg = ptx::is_signed(dt);
    V res;
    if (nat) {
      const Op o = ptx::type_size(dt) == 8 ? (sg ? Op::D2L : Op::D2UL) : (sg ? Op::D2I : Op::D2U);
      res = dnative(o, nm64(bri), wv(1));
    } else {
      auto [lo, hi] = g.to_int_from64(w(1), sg, ptx::type_size(dt) == 8 ? 64 : 32, r);
      res = V{lo, hi};
    }
    // An 8- or 16-bit destination: the 32-bit result (saturated, NaN 0)
    // clamped to its range, which clamping the rounded value is.
    if (ptx::type_size(dt) < 4) {
      const uint32_t bits = 8 * ptx::type_size(dt);
      res.lo = sg ? opr(Op::MAX, opr(Op::MIN, res.lo, K((1u << (bits - 1)) - 1)), K(uint32_t(-(int32_t(1) << (bits - 1)))))
                  : opr(Op::MINU, res.lo, K((1u << bits) - 1));
    }
    return write(in.ops[0], dt, res);
  }
  if (f64 && nat && in.op != PO::Setp && in.op != PO::Set && in.op != PO::Abs && in.op != PO::Neg) {
    const FloatMod m = nm64(br);
    switch (in.op) {
      case PO::Add: return outv(dnative(Op::DADD, m, wv(1), wv(2)));
      case PO::Sub: return outv(dnative(Op::DSUB, m, wv(1), wv(2)));
      case PO::Mul: return outv(dnative(Op::DMUL, m, wv(1), wv(2)));
      case PO::Fma:
      case PO::Mad: return outv(dnative(Op::DFMA, m, wv(1), wv(2), wv(3)));
      case PO::Div: return outv(dnative(Op::DDIV, m, wv(1), wv(2)));
      case PO::Rcp: return outv(dnative(Op::DDIV, m, V{K(0), K(0x3FF00000u)}, wv(1)));
      case PO::Sqrt: return outv(dnative(Op::DSQRT, m, wv(1)));
      case PO::Min: return outv(dnative(Op::DMIN, nm64(ptx::Rnd::Rn), wv(1), wv(2)));
      case PO::Max: return outv(dnative(Op::DMAX, nm64(ptx::Rnd::Rn), wv(1), wv(2)));
      default: break;
    }
  }
  if (f64 && in.op != PO::Setp && in.op != PO::Set) {
    switch (in.op) {
      case PO::Add: return out64(g.add64(w(1), w(2), r));
      case PO::Sub: return out64(g.sub64(w(1), w(2), r));
      case PO::Mul: return out64(g.mul64(w(1), w(2), r));
      case PO::Fma:
      case PO::Mad: return out64(g.fma64(w(1), w(2), w(3), r));
      case PO::Div: return out64(g.div64(w(1), w(2), r));
      case PO::Rcp: return out64(g.div64({K(0), K(0x3FF00000u)}, w(1), r));
      case PO::Sqrt: return out64(g.sqrt64(w(1), r));
      case PO::Min: return out64(g.min64(w(1), w(2)));
      case PO::Max: return out64(g.max64(w(1), w(2)));
      case PO::Abs: {
        auto [lo, hi] = w(1);
        return out64({lo, opr(Op::AND, hi, K(0x7FFFFFFFu))});
      }
      default: {
        auto [lo, hi] = w(1);
        return out64({lo, opr(Op::XOR, hi, K(0x80000000u))});
      }
    }
  }
  // The model's machine (ffma .rn its only float op) beyond plain .rn: the
  // .ftz and .sat forms of .rn are that ffma on flushed operands, its result
  // flushed and saturated; mul and fma .rz/.rm/.rp (no .ftz) take
  // directed_fma's path.  Everything else is the integer sequence.
  const bool ffma_only = !nat && p_.has_native_rn(Op::FFMA);
  auto ffma_form = [&](Operand a, Operand b, Operand c, bool c_zero,
                       const std::function<Operand()>& integer) -> std::optional<Operand> {
    if (!ffma_only) return std::nullopt;
    auto fl = [&](Operand x) { return fm.ftz ? g.flush(x) : x; };
    Operand x;
    if (r == softfloat::Round::Rn)
      x = fl(fnative(Op::FFMA, FloatMod{}, fl(a), fl(b), fl(c)));
    else if (!fm.ftz && (c_zero || in.op == PO::Fma || in.op == PO::Mad))
      x = directed_fma(a, b, c, c_zero, r, integer);
    else
      return std::nullopt;
    return fm.sat ? g.saturate(x) : x;
  };
  switch (in.op) {
    case PO::Add:
      if (nat || has_rn(Op::FADD)) return out(fnative(Op::FADD, nm(br, fm.sat), f(1), f(2)));
      if (auto x = ffma_form(f(1), K(0x3F800000u), f(2), false, nullptr)) return out(*x);
      return out(g.add(f(1), f(2), r, fm.ftz, fm.sat));
    case PO::Sub:
      if (nat || has_rn(Op::FSUB)) return out(fnative(Op::FSUB, nm(br, fm.sat), f(1), f(2)));
      if (auto x = ffma_form(f(2), K(0xBF800000u), f(1), false, nullptr)) return out(*x);
      return out(g.sub(f(1), f(2), r, fm.ftz, fm.sat));
    case PO::Mul:
      if (in.mul != ptx::MulMode::None) break;
      if (nat || has_rn(Op::FMUL)) return out(fnative(Op::FMUL, nm(br, fm.sat), f(1), f(2)));
      if (auto x = ffma_form(f(1), f(2), K(0x80000000u), true, [&] { return g.mul(f(1), f(2), r, false, false); }))
        return out(*x);
      return out(g.mul(f(1), f(2), r, fm.ftz, fm.sat));
    case PO::Fma:
    case PO::Mad:
      if (nat) return out(fnative(Op::FFMA, nm(br, fm.sat), f(1), f(2), f(3)));
      if (auto x = ffma_form(f(1), f(2), f(3), false, [&] { return g.fma(f(1), f(2), f(3), r, false, false); }))
        return out(*x);
      return out(g.fma(f(1), f(2), f(3), r, fm.ftz, fm.sat));
    case PO::Div: {
      Operand a = f(1), b = f(2);
      const bool nearest = fm.approx || fm.full;
      Operand q = nat ? fnative(Op::FDIV, nm(nearest ? ptx::Rnd::Rn : br, fm.sat), a, b)
                      : g.div(a, b, nearest ? softfloat::Round::Rn : r, fm.ftz, fm.sat);
      if (fm.approx) {  // a divisor above 2^126 gives 0 (NaN for an infinite dividend)
        Operand ab = opr(Op::AND, b, K(0x7FFFFFFFu));
        Operand big = opr(Op::AND, opr(Op::SLTU, K(0x7E800000u), ab), opr(Op::SLTU, ab, K(0x7F800000u)));
        Operand zero = opr(Op::SEL, opr(Op::SEQ, opr(Op::AND, a, K(0x7FFFFFFFu)), K(0x7F800000u)), K(0x7FFFFFFFu),
                           opr(Op::AND, opr(Op::XOR, a, b), K(0x80000000u)));
        q = opr(Op::SEL, opr(Op::AND, big, opr(Op::SLEU, opr(Op::AND, a, K(0x7FFFFFFFu)), K(0x7F800000u))), zero, q);
      }
      return out(q);
    }
    case PO::Rcp:
      if (nat) return out(fnative(Op::FDIV, nm(fm.approx ? ptx::Rnd::Rn : br, false), K(0x3F800000u), f(1)));
      return out(g.div(K(0x3F800000u), f(1), fm.approx ? softfloat::Round::Rn : r, fm.ftz, false));
    case PO::Sqrt:
      if (nat) return out(fnative(Op::FSQRT, nm(fm.approx ? ptx::Rnd::Rn : br, false), f(1)));
      return out(g.sqrt(f(1), fm.approx ? softfloat::Round::Rn : r, fm.ftz));
    case PO::Rsqrt:
      if (nat)
        return out(fnative(Op::FDIV, nm(ptx::Rnd::Rn, false), K(0x3F800000u),
                           fnative(Op::FSQRT, nm(ptx::Rnd::Rn, false), f(1))));
      return out(g.div(K(0x3F800000u), g.sqrt(f(1), softfloat::Round::Rn, fm.ftz), softfloat::Round::Rn, fm.ftz,
                       false));
    case PO::Ex2: return out(nat ? fnative(Op::FEX2, nm(ptx::Rnd::Rn, false), f(1)) : g.ex2(f(1), fm.ftz));
    case PO::Lg2: return out(nat ? fnative(Op::FLG2, nm(ptx::Rnd::Rn, false), f(1)) : g.lg2(f(1), fm.ftz));
    case PO::Sin: return out(nat ? fnative(Op::FSIN, nm(ptx::Rnd::Rn, false), f(1)) : g.sin(f(1), fm.ftz));
    case PO::Cos: return out(nat ? fnative(Op::FCOS, nm(ptx::Rnd::Rn, false), f(1)) : g.cos(f(1), fm.ftz));
    case PO::Tanh: return out(nat ? fnative(Op::FTANH, nm(ptx::Rnd::Rn, false), f(1)) : g.tanh(f(1), fm.ftz));
    case PO::Min:
      return out(nat ? fnative(Op::FMIN, nm(ptx::Rnd::Rn, false), f(1), f(2)) : g.min(f(1), f(2), fm.ftz));
    case PO::Max:
      return out(nat ? fnative(Op::FMAX, nm(ptx::Rnd::Rn, false), f(1), f(2)) : g.max(f(1), f(2), fm.ftz));
    case PO::Abs: return out(g.abs(f(1), fm.ftz));
    case PO::Neg: return out(g.neg(f(1), fm.ftz));
    case PO::Copysign: return out(g.copysign(f(1), f(2)));
    case PO::Testp: return write(in.ops[0], Type::Pred, {g.testp(int(fm.testp), f(1)), K(0)});
    case PO::Slct: {
      Operand c = nat ? fnative(Op::FCMP, ncmp(ptx::Cmp::Ge), f(3), K(0)) : g.compare(ptx::Cmp::Ge, f(3), K(0), fm.ftz);
      V a = read(in, in.ops[1], in.type), b = read(in, in.ops[2], in.type);
      const bool wide = ptx::type_size(in.type) == 8;
      return write(in.ops[0], in.type, {opr(Op::SEL, c, a.lo, b.lo), wide ? opr(Op::SEL, c, a.hi, b.hi) : K(0)});
    }
    case PO::Setp:
    case PO::Set: {
      FloatMod dc;
      dc.cmp = from_ptx(in.cmp);
      Operand res = f64 && nat ? dnative(Op::DCMP, dc, wv(1), wv(2)).lo
                    : f64      ? g.compare64(in.cmp, w(1), w(2))
                    : nat ? fnative(Op::FCMP, ncmp(in.cmp), f(1), f(2))
                          : g.compare(in.cmp, f(1), f(2), fm.ftz);
      if (in.bool_op != ptx::BoolOp::None) {
        Operand c = read32(in, in.ops[3], Type::Pred);
        Op bo = in.bool_op == ptx::BoolOp::And ? Op::AND : in.bool_op == ptx::BoolOp::Or ? Op::OR : Op::XOR;
        Operand nres = opr(bo, opr(Op::XOR, res, K(1)), c);
        res = opr(bo, res, c);
        if (in.op == PO::Setp && in.ops[0].kind == ptx::Operand::Kind::PredPair) {
          ptx::Operand p = in.ops[0], q = in.ops[0];
          p.kind = q.kind = ptx::Operand::Kind::Reg;
          q.reg = in.ops[0].reg2;
          write(p, Type::Pred, {res, K(0)});
          write(q, Type::Pred, {nres, K(0)});
          return;
        }
      }
      if (in.op == PO::Set) {  // 1.0f, or all ones for an integer destination
        if (in.type == Type::F32) return out(opr(Op::SEL, res, K(0x3F800000u), K(0)));
        return write(in.ops[0], in.type, {opr(Op::SUB, K(0), res), K(0)});
      }
      const ptx::Operand& d = in.ops[0];
      if (d.kind == ptx::Operand::Kind::PredPair) {
        Operand nres = opr(Op::XOR, res, K(1));
        ptx::Operand p = d, q = d;
        p.kind = q.kind = ptx::Operand::Kind::Reg;
        q.reg = d.reg2;
        write(p, Type::Pred, {res, K(0)});
        write(q, Type::Pred, {nres, K(0)});
        return;
      }
      return write(d, Type::Pred, {res, K(0)});
    }
    case PO::Cvt: {
      const Type dt = in.type, st = in.type2;
      if (dt == Type::F32 && st == Type::F32) {
        // Only .rni ... round; without them (or with a float rounding) frint only flushes and saturates.
        if (nat) return out(fnative(Op::FRINT, nm(integral ? fm.rnd : ptx::Rnd::None, fm.sat), f(1)));
        return out(g.round_int(f(1), integral, r, fm.ftz, fm.sat));
      }
      if (dt == Type::F64) {
        if (nat) return write(in.ops[0], dt, dnative(Op::F2D, nm(ptx::Rnd::Rn, fm.sat), V{f(1), K(0)}));
        auto [lo, hi] = sat64(g.to_f64(f(1), fm.ftz));
        return write(in.ops[0], dt, {lo, hi});
      }
      if (st == Type::F64) {
        V v = read(in, in.ops[1], st);
        if (nat) return out(dnative(Op::D2F, nm(br, fm.sat), v).lo);
        return out(g.from_f64(v.lo, v.hi, r, fm.ftz, fm.sat));
      }
      if (dt == Type::F32 && nat && ptx::type_size(st) == 4) {
        V v = read(in, in.ops[1], st);
        FloatMod m = nm(br, fm.sat);
        m.ftz = false;  // an integer source has no subnormals, and i2f no .ftz
        return out(fnative(ptx::is_signed(st) ? Op::I2F : Op::U2F, m, v.lo));
      }
      if (dt == Type::F32) {
        V v = read(in, in.ops[1], st);
        Operand res = ptx::type_size(st) == 8 ? g.from_int64(v.lo, v.hi, ptx::is_signed(st), r)
                                               : g.from_int32(v.lo, ptx::is_signed(st), r);
        return out(fm.sat ? g.saturate(res) : res);
      }
      if (ptx::type_size(dt) == 8) {
        auto [lo, hi] = g.to_int64(f(1), ptx::is_signed(dt), r, fm.ftz);
        return write(in.ops[0], dt, {lo, hi});
      }
      if (nat && ptx::type_size(dt) == 4)
        return write(in.ops[0], dt, {fnative(ptx::is_signed(dt) ? Op::F2I : Op::F2U, nm(bri, false), f(1)), K(0)});
      Operand res = g.to_int32(f(1), ptx::is_signed(dt), 8 * ptx::type_size(dt), r, fm.ftz);
      return write(in.ops[0], dt, {res, K(0)});
    }
    default: break;
  }
  unsupported(in, "is a floating-point operation the machine's software floating point does not have");
}

}  // namespace qgpu::machine::lowering
