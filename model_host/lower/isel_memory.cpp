// Instruction selection: loads, stores, atomics (isel.h).
#include "model_host/lower/isel.h"
#include "model_host/lower/lower_atomic_float.h"

namespace qgpu::machine::lowering {

void Lowerer::lower_ldst(const ptx::Instr& in) {
  bool load = in.op == ptx::Op::Ld || in.op == ptx::Op::Ldu;
  const ptx::Operand& addr_op = load ? in.ops[1] : in.ops[0];
  const ptx::Operand& val = load ? in.ops[0] : in.ops[1];
  if (ptx::is_float(in.type) && ptx::type_size(in.type) != 2 && ptx::type_size(in.type) != 4 &&
      ptx::type_size(in.type) != 8)
    unsupported(in, "moves a floating-point type the machine does not have");
  uint32_t off;
  Space space;
  Operand addr = address(in, addr_op, off, space);
  uint32_t es = ptx::type_size(in.type);
  if (es > 8) unsupported(in, "moves a 128-bit value");
  std::vector<const ptx::Operand*> elems;
  if (val.kind == ptx::Operand::Kind::Vector)
    for (auto& e : val.elems) elems.push_back(&e);
  else
    elems.push_back(&val);
  // A strong (.relaxed, .acquire, .release, .volatile) access of more than a
  // word to global memory is one access in PTX's memory model, which another
  // CTA sees whole (CUB's decoupled look-back reads a tile's status and value
  // in one v2 load); the machine's words are seen one at a time, so while
  // CTAs run one at a time only (Program::ctas_in_order).  A .cta-scoped
  // access is strong towards its own CTA alone (another CTA's access to the
  // same bytes is a race in PTX's memory model), which sees its words in
  // program order whatever the other CTAs do (cuda::barrier's state words).
  const bool strong = in.opcode.find(".cta") == std::string::npos && (in.opcode.find(".relaxed") != std::string::npos ||
                      in.opcode.find(".acquire") != std::string::npos ||
                      in.opcode.find(".release") != std::string::npos ||
                      in.opcode.find(".volatile") != std::string::npos || in.opcode.find(".mmio") != std::string::npos);
  auto access = [&](Space sp, Operand base) {
    if (strong && sp == Space::Global && es * elems.size() > 4) ctas_in_order_ = true;
    for (size_t i = 0; i < elems.size(); ++i) {
      uint32_t o = off + uint32_t(i) * es;
      if (load) {
        if (elems[i]->kind == ptx::Operand::Kind::Sink) continue;
        V v;
        if (es == 8) {
          v.lo = R(ld(sp, base, o, 4, false));
          v.hi = R(ld(sp, base, o + 4, 4, false));
        } else {
          v.lo = R(ld(sp, base, o, es, ptx::is_signed(in.type)));
          uint32_t rs = elems[i]->kind == ptx::Operand::Kind::Reg
                            ? ptx::type_size(frames_.back()->f->regs[elems[i]->reg].type)
                            : 4;
          if (rs == 8) v.hi = ptx::is_signed(in.type) ? opr(Op::SAR, v.lo, K(31)) : K(0);
        }
        write(*elems[i], in.type, v);
      } else {
        V v = read(in, *elems[i], es == 8 ? Type::B64 : Type::B32);
        if (es == 8) {
          st(sp, base, o, 4, v.lo);
          st(sp, base, o + 4, 4, v.hi);
        } else {
          st(sp, base, o, es, v.lo);
        }
      }
    }
  };
  if (is_generic(in, addr_op))
    dispatch_generic(addr, access);
  else
    access(space, addr);
}

bool Lowerer::is_generic(const ptx::Instr& in, const ptx::Operand& addr_op) {
  return in.space == ptx::Space::None && !addr_op.has_sym && addr_op.reg != ptx::kNoReg;
}

// A generic address is global at or above global_base, else local or shared
// by its window (docs/isa.md, 8): one branch picks the access.
void Lowerer::dispatch_generic(Operand a, const std::function<void(Space, Operand)>& access) {
  uint32_t global = new_label(), window = new_label(), local = new_label(), shared = new_label(), done = new_label();
  br(opr(Op::SLEU, K(p_.global_base), a), global, window);
  place(window);
  br(opr(Op::SLEU, K(kLocalWindow), a), local, shared);
  place(local);
  access(Space::Local, opr(Op::SUB, a, K(kLocalWindow)));
  jmp(done);
  place(shared);
  access(Space::Shared, opr(Op::SUB, a, K(kSharedWindow)));
  jmp(done);
  place(global);
  access(Space::Global, a);
  place(done);
}

void Lowerer::lower_atom(const ptx::Instr& in) {
  bool red = in.op == ptx::Op::Red;
  const bool flt = ptx::is_float(in.type);
  if (flt && !float_atomic_unsupported(in.atom, in.type).empty()) unsupported(in, float_atomic_unsupported(in.atom, in.type));
  if (!flt && ptx::type_size(in.type) != 4 && ptx::type_size(in.type) != 8)
    unsupported(in, "is a " + std::string(ptx::type_name(in.type)) + " atomic: the machine's integer atomics are 32- and 64-bit");
  const ptx::Operand& addr_op = red ? in.ops[0] : in.ops[1];
  uint32_t off;
  Space space;
  Operand addr = address(in, addr_op, off, space);
  if (off) addr = opr(Op::ADD, addr, K(off));
  if (space != Space::Global && space != Space::Shared)
    unsupported(in, "is an atomic outside global and shared memory");
  auto access = [&](Space sp, Operand base) {
    if (flt) return lower_atom_float(in, sp, base);
    if (ptx::type_size(in.type) == 8) return lower_atom64(in, sp, base);
    lower_atom32(in, sp, base);
  };
  if (is_generic(in, addr_op))
    dispatch_generic(addr, access);
  else
    access(space, addr);
}

void Lowerer::lower_atom32(const ptx::Instr& in, Space sp, Operand base) {
  bool red = in.op == ptx::Op::Red;
  bool sign = ptx::is_signed(in.type);
  AtomOp a;
  switch (in.atom) {
    case ptx::AtomOp::Add: a = AtomOp::ADD; break;
    case ptx::AtomOp::Min: a = sign ? AtomOp::MIN : AtomOp::MINU; break;
    case ptx::AtomOp::Max: a = sign ? AtomOp::MAX : AtomOp::MAXU; break;
    case ptx::AtomOp::Exch: a = AtomOp::EXCH; break;
    case ptx::AtomOp::Cas: a = AtomOp::CAS; break;
    case ptx::AtomOp::And: a = AtomOp::AND; break;
    case ptx::AtomOp::Or: a = AtomOp::OR; break;
    case ptx::AtomOp::Xor: a = AtomOp::XOR; break;
    case ptx::AtomOp::Inc: a = AtomOp::INC; break;
    case ptx::AtomOp::Dec: a = AtomOp::DEC; break;
    default: unsupported(in, "is an atomic operation the machine does not have");
  }
  size_t first = red ? 1 : 2;
  Operand b = read32(in, in.ops[first], in.type);
  Operand c = a == AtomOp::CAS ? read32(in, in.ops[first + 1], in.type) : K(0);
  Operand old = atom(sp, a, base, b, c);
  if (!red) write(in.ops[0], in.type, {old, K(0)});
}

// 64-bit atomics from 32-bit ones.  A warp runs without interruption until it
// exits or waits at a barrier (docs/isa.md, "Schedule"), so consecutive blocks
// of one warp are atomic with respect to other warps; within the warp, each
// 32-bit atomic serves its lanes in lane order.  add/exch/and/or/xor act word
// by word (add carries into the high word per lane); cas/min/max serialise
// the lanes, one read-modify-write block per lane (on a one-lane machine,
// just the read-modify-write).
//
// A machine with native floats (the CUDA-sized device) has the native 64-bit
// atomic instead (Op::ATOM64, docs/isa.md section 3.3): one read-modify-write
// of the doubleword, atomic whichever CTAs run beside this one.
void Lowerer::lower_atom64(const ptx::Instr& in, Space sp, Operand addr) {
  bool red = in.op == ptx::Op::Red;
  size_t first = red ? 1 : 2;
  V b = read(in, in.ops[first], in.type);
  // The native 64-bit atomic (Op::ATOM64) is global and shared memory's; a
  // generic address's local branch keeps the two-word sequence (a thread's
  // own memory: nothing else reads it between the words).
  if (opts_.native_float && sp != Space::Local) {
    const bool sign = ptx::is_signed(in.type);
    AtomOp f;
    switch (in.atom) {
      case ptx::AtomOp::Add: f = AtomOp::ADD; break;
      case ptx::AtomOp::Min: f = sign ? AtomOp::MIN : AtomOp::MINU; break;
      case ptx::AtomOp::Max: f = sign ? AtomOp::MAX : AtomOp::MAXU; break;
      case ptx::AtomOp::Exch: f = AtomOp::EXCH; break;
      case ptx::AtomOp::Cas: f = AtomOp::CAS; break;
      case ptx::AtomOp::And: f = AtomOp::AND; break;
      case ptx::AtomOp::Or: f = AtomOp::OR; break;
      case ptx::AtomOp::Xor: f = AtomOp::XOR; break;
      default: unsupported(in, "is a 64-bit atomic operation the machine does not have");
    }
    const V c = in.atom == ptx::AtomOp::Cas ? read(in, in.ops[first + 1], in.type) : V{};
    const V old = atom64(sp, f, addr, b, c);
    if (!red) write(in.ops[0], in.type, old);
    return;
  }
  // Two words, or a lane's read-modify-write: atomic between warps by the
  // schedule, which a CTA running beside this one would not keep.
  if (sp == Space::Global) ctas_in_order_ = true;
  Operand hi_addr = opr(Op::ADD, addr, K(4));
  V old;
  switch (in.atom) {
    case ptx::AtomOp::Add: {
      old.lo = atom(sp, AtomOp::ADD, addr, b.lo);
      Operand carry = opr(Op::SLTU, opr(Op::ADD, old.lo, b.lo), old.lo);
      old.hi = atom(sp, AtomOp::ADD, hi_addr, opr(Op::ADD, b.hi, carry));
      break;
    }
    case ptx::AtomOp::Exch:
    case ptx::AtomOp::And:
    case ptx::AtomOp::Or:
    case ptx::AtomOp::Xor: {
      AtomOp f = in.atom == ptx::AtomOp::Exch  ? AtomOp::EXCH
                 : in.atom == ptx::AtomOp::And ? AtomOp::AND
                 : in.atom == ptx::AtomOp::Or  ? AtomOp::OR
                                               : AtomOp::XOR;
      old.lo = atom(sp, f, addr, b.lo);
      old.hi = atom(sp, f, hi_addr, b.hi);
      break;
    }
    case ptx::AtomOp::Cas:
    case ptx::AtomOp::Min:
    case ptx::AtomOp::Max: {
      V c = in.atom == ptx::AtomOp::Cas ? read(in, in.ops[first + 1], in.type) : V{};
      auto read_modify_write = [&] {
        V o{R(ld(sp, addr, 0, 4, false)), R(ld(sp, hi_addr, 0, 4, false))};
        V nw;
        if (in.atom == ptx::AtomOp::Cas) {
          Operand eq = eq64(o, b);
          nw = {opr(Op::SEL, eq, c.lo, o.lo), opr(Op::SEL, eq, c.hi, o.hi)};
        } else {
          Operand lt = lt64(b, o, ptx::is_signed(in.type), false);
          Operand take_b = in.atom == ptx::AtomOp::Min ? lt : lt64(o, b, ptx::is_signed(in.type), false);
          nw = {opr(Op::SEL, take_b, b.lo, o.lo), opr(Op::SEL, take_b, b.hi, o.hi)};
        }
        st(sp, addr, 0, 4, nw.lo);
        st(sp, hi_addr, 0, 4, nw.hi);
        return o;
      };
      old = lanes_in_turn(read_modify_write);
      break;
    }
    default: unsupported(in, "is a 64-bit atomic operation the machine does not have");
  }
  if (!red) write(in.ops[0], in.type, old);
}

// Float atomics (add on f16, f16x2, f32, f64): each lane in turn loads the
// value, adds in software floating point (lower_atomic_float.h; the
// model's machine: f32 with one ffma) and stores,
// one lane per pass of a loop (on a one-lane machine, just the
// read-modify-write).  As for the 64-bit cas/min/max, the warp runs
// uninterrupted, so the passes are atomic with respect to other warps, and
// the lanes add in lane order.
//
// With native floats, f32 and f64 add are one native atomic each (ATOM
// with FADD, ATOM64 with FADD; docs/isa.md section 3.3), atomic whichever
// CTAs run beside this one.
void Lowerer::lower_atom_float(const ptx::Instr& in, Space sp, Operand addr) {
  const bool red = in.op == ptx::Op::Red;
  const unsigned bytes = float_atomic_bytes(in.type), word = bytes == 2 ? 2 : 4;
  const V b = read(in, in.ops[red ? 1 : 2], in.type);
  if (opts_.native_float && (in.type == ptx::Type::F32 || (in.type == ptx::Type::F64 && sp != Space::Local))) {
    const V old = in.type == ptx::Type::F32 ? V{atom(sp, AtomOp::FADD, addr, b.lo), K(0)}
                                            : atom64(sp, AtomOp::FADD, addr, b);
    if (!red) write(in.ops[0], in.type, old);
    return;
  }
  if (sp == Space::Global) ctas_in_order_ = true;  // as in lower_atom64
  const softfloat::Emit emit = [this](Op o, Operand x, Operand y, Operand z) { return opr(o, x, y, z); };
  auto read_modify_write = [&] {
    V o{R(ld(sp, addr, 0, word, false)), bytes == 8 ? R(ld(sp, addr, 4, 4, false)) : K(0)};
    softfloat::Gen::W nw;
    if (p_.has_native_rn(Op::FFMA) && in.type == ptx::Type::F32) {  // the model's: one ffma, flushed
      softfloat::Gen g = float_gen();
      nw = {g.flush(fnative(Op::FFMA, FloatMod{}, g.flush(o.lo), K(0x3F800000u), g.flush(b.lo))), K(0)};
    } else {
      nw = float_atomic_add(emit, in.type, {o.lo, o.hi}, {b.lo, b.hi});
    }
    st(sp, addr, 0, word, nw.first);
    if (bytes == 8) st(sp, addr, 4, 4, nw.second);
    return o;
  };
  const V old = lanes_in_turn(read_modify_write);
  if (!red) write(in.ops[0], in.type, old);
}

// `body` once for each lane of the machine warp in turn, lane 0 first: a loop
// whose pass i runs the body on lane i alone (on a one-lane machine, the body
// itself).  The warp runs uninterrupted, so each pass is atomic with respect
// to other warps.  Returns the body's value, which each lane keeps from its
// own pass.
V Lowerer::lanes_in_turn(const std::function<V()>& body) {
  if (p_.lanes == 1) return body();
  uint32_t i = op(Op::MOV, K(0));
  uint32_t loop = new_label(), mine = new_label(), next = new_label(), done = new_label();
  place(loop);
  br(opr(Op::SEQ, opr(Op::LANE), R(i)), mine, next);
  place(mine);
  const V v = body();
  place(next);
  opd(i, Op::ADD, R(i), K(1));
  br(opr(Op::SLTU, R(i), K(p_.lanes)), loop, done);
  place(done);
  return v;
}

}  // namespace qgpu::machine::lowering
