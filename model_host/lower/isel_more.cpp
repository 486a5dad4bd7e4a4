// Instruction selection: more of PTX's integer instructions (carry chains,
// lop3, mul24, sad, dp4a, saturation, 64-bit bit fields, prmt modes; isel.h).
#include "model_host/lower/isel.h"

namespace qgpu::machine::lowering {

// ---- more of PTX's integer instructions ------------------------------------------------
//
// docs/isa.md, section 8.2.  Each form becomes operations every machine has,
// so it runs on every backend, the model's machine included.

bool Lowerer::lower_more(const ptx::Instr& in) {
  using PO = ptx::Op;
  if (ptx::is_float(in.type)) return false;
  const bool wide = ptx::type_size(in.type) == 8;
  switch (in.op) {
    case PO::Add:
    case PO::Sub:
      if (in.cc) return lower_carry(in), true;
      if (in.sat && in.type == Type::S32) return lower_sat(in), true;
      return false;
    case PO::Mad:
      if (in.cc && in.mul != ptx::MulMode::Wide) return lower_carry(in), true;
      return false;
    case PO::Addc:
    case PO::Subc:
    case PO::Madc: lower_carry(in); return true;
    case PO::Mul24:
    case PO::Mad24: lower_mul24(in); return true;
    case PO::Sad: lower_sad(in); return true;
    case PO::Lop3: lower_lop3(in); return true;
    case PO::Dp4a: lower_dp(in); return true;
    case PO::Bmsk:
    case PO::Szext: lower_bitfield64(in); return true;
    case PO::Redux: lower_redux(in); return true;
    case PO::Match: lower_match_any_all(in); return true;
    case PO::Bfe:
    case PO::Bfi:
    case PO::Bfind:
      if (wide) return lower_bitfield64(in), true;
      return false;
    case PO::Prmt:
      if (in.prmt != ptx::PrmtMode::None) return lower_prmt_mode(in), true;
      return false;
    case PO::Bar:
      if (counted_barriers_) return lower_named_barrier(in), true;
      return false;
    case PO::Call: {
      const ptx::Operand& callee = in.ops[1];
      if (callee.kind == ptx::Operand::Kind::Reg) return lower_indirect_call(in), true;
      if (callee.kind != ptx::Operand::Kind::Sym || callee.sym.kind != ptx::SymKind::Func) return false;
      const std::string& name = m_.functions[callee.sym.index].name;
      if (name == "malloc" && !m_.functions[callee.sym.index].has_body) return lower_malloc(in), true;
      if (name == "free" && !m_.functions[callee.sym.index].has_body) return lower_free(in), true;
      return false;
    }
    case PO::Mov:
      if (in.ops[1].kind == ptx::Operand::Kind::Sym && in.ops[1].sym.kind == ptx::SymKind::Func) {
        write(in.ops[0], in.type, {K(ptx::function_address(in.ops[1].sym.index)), K(0)});
        return true;
      }
      return false;
    default: return false;
  }
}

// The other predefined identifiers: the driver environment holds a
// cooperative launch's grid workspace (%envreg1 high word, %envreg2 low
// word); no performance counters, reserved shared memory or graph; every CTA
// its own 1x1x1 cluster.
Operand Lowerer::special_more(const ptx::Instr& in, const ptx::Operand& o) {
  if (o.sreg == ptx::SReg::Envreg && (o.imm == 1 || o.imm == 2))
    return K(o.imm == 1 ? uint32_t(shape_.grid_workspace >> 32) : uint32_t(shape_.grid_workspace));
  switch (o.sreg) {
    case ptx::SReg::AggrSmemSize:
      return K(std::max<uint32_t>(shared_.static_size, shared_.dynamic_offset + shape_.dynamic_smem));
    case ptx::SReg::Envreg:
    case ptx::SReg::Pm:
    case ptx::SReg::Pm64:
    case ptx::SReg::CurrentGraphExec:
    case ptx::SReg::ReservedSmemOffsetBegin:
    case ptx::SReg::ReservedSmemOffsetEnd:
    case ptx::SReg::ReservedSmemOffsetCap:
    case ptx::SReg::ReservedSmemOffset:
    case ptx::SReg::IsExplicitCluster:
    case ptx::SReg::ClusterCtaid:
    case ptx::SReg::ClusterCtarank: return K(0);
    case ptx::SReg::ClusterNctaid:
    case ptx::SReg::ClusterNctarank: return K(1);
    case ptx::SReg::Clusterid: return grid_component(o.component);
    case ptx::SReg::Nclusterid: return K(grid_dim(o.component));
    default: break;
  }
  unsupported(in, "reads a special register the machine does not have");
}

// CC.CF: one virtual register per thread, written through the guard like
// any destination.
void Lowerer::set_carry(Operand c) {
  if (carry_ == kNoV) carry_ = nv();
  if (!guard_.imm || guard_.v != 1)
    opd(carry_, Op::SEL, guard_, c, R(carry_));
  else
    opd(carry_, Op::MOV, c);
}
Operand Lowerer::carry_in() {
  if (carry_ == kNoV) carry_ = nv();
  return R(carry_);
}

// add.cc, addc, sub.cc, subc (CC.CF a borrow), mad.cc and madc, 32- and
// 64-bit: with s = x + y + cin, the carry out is s < x, or s = x with a carry
// in; a borrow out of x - y - bin is x < y, or x = y with a borrow in.
void Lowerer::lower_carry(const ptx::Instr& in) {
  using PO = ptx::Op;
  const Type t = in.type;
  const bool wide = ptx::type_size(t) == 8;
  if (in.sat) unsupported(in, "saturates a carry chain");
  const bool with_cin = in.op == PO::Addc || in.op == PO::Subc || in.op == PO::Madc;
  const Operand cin = with_cin ? carry_in() : K(0);
  V a = read(in, in.ops[1], t), b = read(in, in.ops[2], t);
  auto ltu = [&](V x, V y) { return wide ? lt64(x, y, false, false) : opr(Op::SLTU, x.lo, y.lo); };
  auto equ = [&](V x, V y) { return wide ? eq64(x, y) : opr(Op::SEQ, x.lo, y.lo); };
  auto plus = [&](V x, V y) { return wide ? add64(x, y) : V{opr(Op::ADD, x.lo, y.lo), K(0)}; };
  auto minus = [&](V x, V y) { return wide ? sub64(x, y) : V{opr(Op::SUB, x.lo, y.lo), K(0)}; };
  V r;
  Operand out;
  if (in.op == PO::Sub || in.op == PO::Subc) {
    r = minus(minus(a, b), {cin, K(0)});
    out = opr(Op::OR, ltu(a, b), opr(Op::AND, cin, equ(a, b)));
  } else {
    V x = a, y = b;
    if (in.op == PO::Mad || in.op == PO::Madc) {
      const bool sign = ptx::is_signed(t);
      if (in.mul == ptx::MulMode::Hi)
        x = wide ? mulhi64(a, b, sign) : V{opr(sign ? Op::MULHS : Op::MULHU, a.lo, b.lo), K(0)};
      else
        x = wide ? mul64(a, b) : V{opr(Op::MUL, a.lo, b.lo), K(0)};
      y = read(in, in.ops[3], t);
    }
    r = plus(plus(x, y), {cin, K(0)});
    out = opr(Op::OR, ltu(r, x), opr(Op::AND, cin, equ(r, x)));
  }
  if (!wide) r.hi = K(0);
  write(in.ops[0], t, r);
  if (in.cc) set_carry(out);
}

// add.sat.s32 / sub.sat.s32: the wrapped result, or the bound on the side
// of a's sign when the operation overflowed.
void Lowerer::lower_sat(const ptx::Instr& in) {
  Operand a = read32(in, in.ops[1], in.type), b = read32(in, in.ops[2], in.type);
  const bool add = in.op == ptx::Op::Add;
  Operand s = opr(add ? Op::ADD : Op::SUB, a, b);
  Operand ov = add ? opr(Op::AND, opr(Op::XOR, s, a), opr(Op::XOR, s, b))
                   : opr(Op::AND, opr(Op::XOR, a, b), opr(Op::XOR, a, s));
  Operand bound = opr(Op::XOR, opr(Op::SAR, a, K(31)), K(0x7fffffff));
  write(in.ops[0], in.type, {opr(Op::SEL, opr(Op::SHR, ov, K(31)), bound, s), K(0)});
}

// lop3.b32 d, a, b, c, lut: the function whose truth table is lut (bit
// 4a + 2b + c), by Shannon expansion on a, b, c in turn; constant and
// single-variable cofactors become and/or/xor of the variable.
Operand Lowerer::lop3_expand(uint32_t lut, const std::array<Operand, 3>& x, int var, uint32_t nvars) {
  const uint32_t size = 1u << nvars, all = size == 32 ? ~0u : (1u << size) - 1;
  lut &= all;
  if (lut == 0) return K(0);
  if (lut == all) return K(~0u);
  // Split on x[var], the highest index bit of the remaining table.
  const uint32_t half = size / 2, hmask = (1u << half) - 1;
  const uint32_t t0 = lut & hmask, t1 = (lut >> half) & hmask;
  const Operand v = x[var];
  if (t0 == t1) return lop3_expand(t0, x, var + 1, nvars - 1);
  if (t0 == 0) return opr(Op::AND, v, lop3_expand(t1, x, var + 1, nvars - 1));
  if (t1 == 0) return opr(Op::AND, opr(Op::XOR, v, K(~0u)), lop3_expand(t0, x, var + 1, nvars - 1));
  if (t0 == hmask) return opr(Op::OR, opr(Op::XOR, v, K(~0u)), lop3_expand(t1, x, var + 1, nvars - 1));
  if (t1 == hmask) return opr(Op::OR, v, lop3_expand(t0, x, var + 1, nvars - 1));
  Operand g0 = lop3_expand(t0, x, var + 1, nvars - 1);
  if ((t0 ^ t1) == hmask) return opr(Op::XOR, v, g0);
  Operand g1 = lop3_expand(t1, x, var + 1, nvars - 1);
  return opr(Op::XOR, g0, opr(Op::AND, v, opr(Op::XOR, g0, g1)));
}
void Lowerer::lower_lop3(const ptx::Instr& in) {
  if (in.ops.size() != 5 || in.ops[4].kind != ptx::Operand::Kind::Imm)
    unsupported(in, "is a lop3 form the lowering does not take (lop3.b32 d, a, b, c, immLut)");
  std::array<Operand, 3> x = {read32(in, in.ops[1], Type::B32), read32(in, in.ops[2], Type::B32),
                              read32(in, in.ops[3], Type::B32)};
  write(in.ops[0], Type::B32, {lop3_expand(uint32_t(in.ops[4].imm) & 0xff, x, 0, 3), K(0)});
}

// mul24/mad24: the 48-bit product of the low 24 bits (sign-extended for
// .s32); .lo its low 32 bits, .hi bits 16..47.
void Lowerer::lower_mul24(const ptx::Instr& in) {
  if (in.sat) unsupported(in, "saturates a 24-bit multiply");
  const bool sign = ptx::is_signed(in.type);
  auto narrow = [&](Operand v) {
    return sign ? opr(Op::SAR, opr(Op::SHL, v, K(8)), K(8)) : opr(Op::AND, v, K(0xffffff));
  };
  Operand a = narrow(read32(in, in.ops[1], in.type)), b = narrow(read32(in, in.ops[2], in.type));
  Operand r = opr(Op::MUL, a, b);
  if (in.mul == ptx::MulMode::Hi)
    r = opr(Op::OR, opr(Op::SHR, r, K(16)), opr(Op::SHL, opr(sign ? Op::MULHS : Op::MULHU, a, b), K(16)));
  if (in.op == ptx::Op::Mad24) r = opr(Op::ADD, r, read32(in, in.ops[3], in.type));
  write(in.ops[0], in.type, {r, K(0)});
}

// sad d, a, b, c: c + |a - b|.
void Lowerer::lower_sad(const ptx::Instr& in) {
  const Type t = in.type;
  const bool sign = ptx::is_signed(t);
  V a = read(in, in.ops[1], t), b = read(in, in.ops[2], t), c = read(in, in.ops[3], t);
  if (ptx::type_size(t) == 8) {
    Operand gt = lt64(b, a, sign, false);
    V d1 = sub64(a, b), d2 = sub64(b, a);
    write(in.ops[0], t, add64(c, {opr(Op::SEL, gt, d1.lo, d2.lo), opr(Op::SEL, gt, d1.hi, d2.hi)}));
    return;
  }
  Operand gt = opr(sign ? Op::SLT : Op::SLTU, b.lo, a.lo);
  Operand d = opr(Op::SEL, gt, opr(Op::SUB, a.lo, b.lo), opr(Op::SUB, b.lo, a.lo));
  write(in.ops[0], t, {opr(Op::ADD, c.lo, d), K(0)});
}

// dp4a.atype.btype d, a, b, c: c + the four products of a's and b's bytes.
void Lowerer::lower_dp(const ptx::Instr& in) {
  Operand a = read32(in, in.ops[1], Type::B32), b = read32(in, in.ops[2], Type::B32);
  Operand acc = read32(in, in.ops[3], Type::B32);
  auto byte = [&](Operand v, uint32_t i, bool sign) {
    return sign ? opr(Op::SAR, opr(Op::SHL, v, K(24 - 8 * i)), K(24)) : opr(Op::AND, opr(Op::SHR, v, K(8 * i)), K(0xff));
  };
  for (uint32_t i = 0; i < 4; ++i)
    acc = opr(Op::ADD, acc,
              opr(Op::MUL, byte(a, i, ptx::is_signed(in.type)), byte(b, i, ptx::is_signed(in.type2))));
  write(in.ops[0], Type::B32, {acc, K(0)});
}

// 64-bit bfe, bfi and bfind, and bmsk/szext (32-bit), as the PTX ISA defines
// them: positions and lengths are taken mod 256 and may pass the top bit.
void Lowerer::lower_bitfield64(const ptx::Instr& in) {
  using PO = ptx::Op;
  const Type t = in.type;
  const bool sign = ptx::is_signed(t);
  const V ones{K(~0u), K(~0u)};
  auto not64 = [&](V x) { return V{opr(Op::XOR, x.lo, K(~0u)), opr(Op::XOR, x.hi, K(~0u))}; };
  auto and64 = [&](V x, V y) { return V{opr(Op::AND, x.lo, y.lo), opr(Op::AND, x.hi, y.hi)}; };
  auto or64 = [&](V x, V y) { return V{opr(Op::OR, x.lo, y.lo), opr(Op::OR, x.hi, y.hi)}; };
  switch (in.op) {
    case PO::Bmsk: {
      Operand a = read32(in, in.ops[1], Type::U32), b = read32(in, in.ops[2], Type::U32);
      const bool wrap = in.shf_mode == ptx::ShfMode::Wrap;
      a = wrap ? opr(Op::AND, a, K(31)) : opr(Op::MINU, a, K(32));
      b = wrap ? opr(Op::AND, b, K(31)) : opr(Op::MINU, b, K(32));
      Operand lo = opr(Op::SHL, K(~0u), a), hi = opr(Op::SHL, K(~0u), opr(Op::ADD, a, b));
      write(in.ops[0], Type::B32, {opr(Op::AND, lo, opr(Op::XOR, hi, K(~0u))), K(0)});
      return;
    }
    case PO::Szext: {
      Operand a = read32(in, in.ops[1], Type::B32), b = read32(in, in.ops[2], Type::U32);
      b = in.shf_mode == ptx::ShfMode::Wrap ? opr(Op::AND, b, K(31)) : opr(Op::MINU, b, K(32));
      Operand r;
      if (sign) {
        Operand up = opr(Op::SUB, K(32), b);  // 32 for b = 0: the shift left gives 0
        r = opr(Op::SAR, opr(Op::SHL, a, up), opr(Op::AND, up, K(31)));
      } else {
        r = opr(Op::AND, a, opr(Op::SUB, opr(Op::SHL, K(1), b), K(1)));
      }
      write(in.ops[0], t, {r, K(0)});
      return;
    }
    case PO::Bfind: {
      V a = read(in, in.ops[1], t);
      Operand neg = sign ? opr(Op::SLT, a.hi, K(0)) : K(0);
      V x = sign ? V{opr(Op::SEL, neg, opr(Op::XOR, a.lo, K(~0u)), a.lo), opr(Op::SEL, neg, opr(Op::XOR, a.hi, K(~0u)), a.hi)}
                 : a;
      Operand clz = clz64(x);
      Operand zero = opr(Op::SEQ, opr(Op::OR, x.lo, x.hi), K(0));
      Operand r = in.shiftamt ? opr(Op::SEL, zero, K(~0u), clz) : opr(Op::SUB, K(63), clz);
      write(in.ops[0], Type::U32, {r, K(0)});
      return;
    }
    case PO::Bfe: {
      V a = read(in, in.ops[1], t);
      Operand pos = opr(Op::AND, read32(in, in.ops[2], Type::U32), K(0xff));
      Operand len = opr(Op::AND, read32(in, in.ops[3], Type::U32), K(0xff));
      V r;
      if (sign) {
        Operand top = opr(Op::MINU, opr(Op::ADD, pos, len), K(64));
        Operand up = opr(Op::SUB, K(64), top);
        r = shr64(shl64(a, up), opr(Op::ADD, up, pos), true);
        Operand none = opr(Op::SEQ, len, K(0));
        r = {opr(Op::SEL, none, K(0), r.lo), opr(Op::SEL, none, K(0), r.hi)};
      } else {
        r = and64(shr64(a, pos, false), not64(shl64(ones, len)));
      }
      write(in.ops[0], t, r);
      return;
    }
    case PO::Bfi: {
      V f = read(in, in.ops[1], t), b = read(in, in.ops[2], t);
      Operand pos = opr(Op::AND, read32(in, in.ops[3], Type::U32), K(0xff));
      Operand len = opr(Op::AND, read32(in, in.ops[4], Type::U32), K(0xff));
      V mask = shl64(not64(shl64(ones, len)), pos);
      write(in.ops[0], t, or64(and64(b, not64(mask)), and64(shl64(f, pos), mask)));
      return;
    }
    default: unsupported(in, "is not supported by the machine");
  }
}

// prmt.b32.MODE d, a, b, c: byte i of d is byte idx(c & 3, i) of {b, a}
// (bytes 0-3 from a, 4-7 from b), from the mode's table.
void Lowerer::lower_prmt_mode(const ptx::Instr& in) {
  static const uint8_t f4e[4][4] = {{0, 1, 2, 3}, {1, 2, 3, 4}, {2, 3, 4, 5}, {3, 4, 5, 6}};
  static const uint8_t b4e[4][4] = {{0, 7, 6, 5}, {1, 0, 7, 6}, {2, 1, 0, 7}, {3, 2, 1, 0}};
  static const uint8_t rc8[4][4] = {{0, 0, 0, 0}, {1, 1, 1, 1}, {2, 2, 2, 2}, {3, 3, 3, 3}};
  static const uint8_t ecl[4][4] = {{0, 1, 2, 3}, {1, 1, 2, 3}, {2, 2, 2, 3}, {3, 3, 3, 3}};
  static const uint8_t ecr[4][4] = {{0, 0, 0, 0}, {0, 1, 1, 1}, {0, 1, 2, 2}, {0, 1, 2, 3}};
  static const uint8_t rc16[4][4] = {{0, 1, 0, 1}, {2, 3, 2, 3}, {0, 1, 0, 1}, {2, 3, 2, 3}};
  const uint8_t(*table)[4] = nullptr;
  switch (in.prmt) {
    case ptx::PrmtMode::F4e: table = f4e; break;
    case ptx::PrmtMode::B4e: table = b4e; break;
    case ptx::PrmtMode::Rc8: table = rc8; break;
    case ptx::PrmtMode::Ecl: table = ecl; break;
    case ptx::PrmtMode::Ecr: table = ecr; break;
    case ptx::PrmtMode::Rc16: table = rc16; break;
    default: unsupported(in, "is a prmt mode the lowering does not take");
  }
  Operand a = read32(in, in.ops[1], Type::B32), b = read32(in, in.ops[2], Type::B32);
  Operand c = read32(in, in.ops[3], Type::B32);
  Operand sel = opr(Op::AND, c, K(3));
  Operand r = K(0);
  for (uint32_t i = 0; i < 4; ++i) {
    Operand idx;
    if (c.imm) {
      idx = K(table[c.v & 3][i]);
    } else {
      uint32_t packed = 0;  // the column i of the table, a nibble per selector value
      for (uint32_t s = 0; s < 4; ++s) packed |= uint32_t(table[s][i]) << (4 * s);
      idx = opr(Op::AND, opr(Op::SHR, K(packed), opr(Op::SHL, sel, K(2))), K(7));
    }
    Operand src = opr(Op::SEL, opr(Op::AND, idx, K(4)), b, a);
    Operand byte = opr(Op::AND, opr(Op::SHR, src, opr(Op::SHL, opr(Op::AND, idx, K(3)), K(3))), K(0xff));
    r = opr(Op::OR, r, opr(Op::SHL, byte, K(8 * i)));
  }
  write(in.ops[0], Type::B32, {r, K(0)});
}

}  // namespace qgpu::machine::lowering
