// Instruction selection: operands, special registers, addresses (isel.h).
#include "model_host/lower/isel.h"

namespace qgpu::machine::lowering {

Operand Lowerer::special(const ptx::Instr& in, const ptx::Operand& o) {
  const launch::Dim3& b = shape_.block;
  switch (o.sreg) {
    case ptx::SReg::Tid: return component(tid_linear(), b, o.component);
    case ptx::SReg::Ntid: return K(dim_of(b, o.component));
    case ptx::SReg::Ctaid: return grid_component(o.component);
    case ptx::SReg::Nctaid: return K(grid_dim(o.component));
    case ptx::SReg::Laneid: return opr(Op::AND, tid_linear(), K(31));
    case ptx::SReg::Warpid: return opr(Op::SHR, tid_linear(), K(5));
    case ptx::SReg::Nwarpid: return K((threads_ + 31) / 32);
    case ptx::SReg::Smid: return K(0);
    case ptx::SReg::Nsmid: return K(1);
    case ptx::SReg::Gridid: return K(1);
    case ptx::SReg::LanemaskEq: return opr(Op::SHL, K(1), opr(Op::AND, tid_linear(), K(31)));
    case ptx::SReg::LanemaskLt: return opr(Op::SUB, opr(Op::SHL, K(1), opr(Op::AND, tid_linear(), K(31))), K(1));
    case ptx::SReg::LanemaskLe: return opr(Op::SUB, opr(Op::SHL, K(2), opr(Op::AND, tid_linear(), K(31))), K(1));
    case ptx::SReg::LanemaskGe:
      return opr(Op::XOR, opr(Op::SUB, opr(Op::SHL, K(1), opr(Op::AND, tid_linear(), K(31))), K(1)), K(~0u));
    case ptx::SReg::LanemaskGt:
      return opr(Op::XOR, opr(Op::SUB, opr(Op::SHL, K(2), opr(Op::AND, tid_linear(), K(31))), K(1)), K(~0u));
    case ptx::SReg::DynamicSmemSize: return K(shape_.dynamic_smem);
    case ptx::SReg::TotalSmemSize: return K(p_.shared_bytes);
    case ptx::SReg::Clock:
    case ptx::SReg::Clock64:
    case ptx::SReg::Globaltimer:
    case ptx::SReg::GlobaltimerLo: return opr(Op::CLOCK);  // EXECs so far; the high word is 0
    case ptx::SReg::ClockHi:
    case ptx::SReg::GlobaltimerHi: return K(0);
    default: return special_more(in, o);
  }
  unsupported(in, "reads a special register the machine does not have");
}

V Lowerer::read(const ptx::Instr& in, const ptx::Operand& o, Type t) {
  const uint32_t size = ptx::type_size(t);
  V v;
  switch (o.kind) {
    case ptx::Operand::Kind::Reg: {
      auto& r = frames_.back()->regs[o.reg];
      v.lo = R(r[0]);
      v.hi = r[1] == kNoV ? K(0) : R(r[1]);
      if (o.neg) v.lo = opr(Op::XOR, v.lo, K(1));
      uint32_t rsize = ptx::type_size(frames_.back()->f->regs[o.reg].type);
      if (size == 8 && r[1] == kNoV && ptx::is_signed(t)) v.hi = opr(Op::SAR, v.lo, K(31));
      if (size == 1 || size == 2) {
        uint32_t sh = 32 - 8 * size;
        if (ptx::is_signed(t))
          v.lo = opr(Op::SAR, opr(Op::SHL, v.lo, K(sh)), K(sh));
        else if (rsize != size)
          v.lo = opr(Op::AND, v.lo, K((1u << (8 * size)) - 1));
      }
      return v;
    }
    case ptx::Operand::Kind::Imm: {
      uint64_t x = uint64_t(o.imm);
      if (t == Type::Pred) return {K(uint32_t(x & 1)), K(0)};  // a predicate holds 0/1: `xor.pred p, q, -1` is not
      if (size == 1 || size == 2) {  // an immediate of a narrow type is that many bits, extended by the type
        uint32_t bits = 8 * size;
        x &= (1u << bits) - 1;
        if (ptx::is_signed(t) && (x >> (bits - 1))) x |= ~uint64_t(0) << bits;
      }
      return {K(uint32_t(x)), K(uint32_t(x >> 32))};
    }
    case ptx::Operand::Kind::Sym: {
      ptx::Space sp;
      return {K(symbol_address(in, o.sym, &sp) + uint32_t(o.imm)), K(0)};
    }
    case ptx::Operand::Kind::Special: return {special(in, o), K(0)};
    case ptx::Operand::Kind::Vector: {
      // Packing: {a, b} of 32-bit words into 64 bits, or of 16-bit halves into 32.
      if (o.elems.size() == 2 && size == 8)
        return {read32(in, o.elems[0], Type::B32), read32(in, o.elems[1], Type::B32)};
      uint32_t n = uint32_t(o.elems.size()), w = 8 * size / n;
      if (n < 2 || w < 8 || size > 4) break;
      Type et = w == 8 ? Type::U8 : Type::U16;
      Operand acc = read32(in, o.elems[0], et);
      for (uint32_t i = 1; i < n; ++i) acc = opr(Op::OR, acc, opr(Op::SHL, read32(in, o.elems[i], et), K(i * w)));
      return {acc, K(0)};
    }
    case ptx::Operand::Kind::FImm: return float_literal(o, size);
    default: break;
  }
  unsupported(in, "has an operand form the lowering does not take");
}

void Lowerer::write(const ptx::Operand& d, Type t, V v) {
  if (d.kind == ptx::Operand::Kind::Sink) return;
  if (d.kind == ptx::Operand::Kind::Vector) {
    // Unpacking into 32-bit words or 16/8-bit parts.
    uint32_t n = uint32_t(d.elems.size());
    if (n == 2 && ptx::type_size(t) == 8) {
      write(d.elems[0], Type::B32, {v.lo, K(0)});
      write(d.elems[1], Type::B32, {v.hi, K(0)});
      return;
    }
    uint32_t w = 8 * ptx::type_size(t) / n;
    for (uint32_t i = 0; i < n; ++i)
      write(d.elems[i], w == 8 ? Type::B8 : Type::B16,
            {opr(Op::AND, opr(Op::SHR, v.lo, K(i * w)), K((1u << w) - 1)), K(0)});
    return;
  }
  if (d.kind != ptx::Operand::Kind::Reg) throw LowerError(launch::kNotSupported, "destination is not a register");
  auto& r = frames_.back()->regs[d.reg];
  uint32_t rsize = ptx::type_size(frames_.back()->f->regs[d.reg].type);
  if (frames_.back()->f->regs[d.reg].type == Type::Pred) {
    if (v.lo.imm) v.lo = K(v.lo.v != 0);  // `mov.pred %p, -1`: predicates hold 0 or 1
  } else if (rsize == 1 || rsize == 2) {
    v.lo = opr(Op::AND, v.lo, K((1u << (8 * rsize)) - 1));
  }
  auto put = [&](uint32_t dst, Operand val) {
    if (!guard_.imm || guard_.v != 1) {
      opd(dst, Op::SEL, guard_, val, R(dst));
      return;
    }
    if (!val.imm && val.v >= mark_ && !(v.lo.v == v.hi.v && !v.lo.imm && !v.hi.imm) && rename_temp(val.v, dst)) return;
    opd(dst, Op::MOV, val);
  };
  put(r[0], v.lo);
  if (r[1] != kNoV) put(r[1], v.hi);
}

// Makes the code of the current PTX instruction compute temporary `t`
// directly into `dst` instead of copying it there afterwards: possible when
// nothing after t's definition reads or writes dst.
bool Lowerer::rename_temp(uint32_t t, uint32_t dst) {
  size_t k = vc_.code.size();
  std::vector<size_t> readers;
  while (k-- > 0) {
    VI& vi = vc_.code[k];
    if (vi.kind != VI::Ins) return false;  // stay within straight-line code
    // t's definition may read dst: it reads before it writes (`x = x >> 1`).
    const bool defines_t = vi.in.writes_reg() && vi.in.dst == t;
    for (auto* o : sources(vi.in)) {
      if (o->v == dst && !defines_t) return false;
      if (o->v == t) readers.push_back(k);
    }
    if (defines_t) break;
    if (vi.in.writes_reg() && vi.in.dst == dst) return false;
  }
  if (k == size_t(-1)) return false;
  for (size_t r : readers) {
    Instr& x = vc_.code[r].in;
    for (int i = 0; i < op_info(x.op).arity; ++i)
      if (!x.src(i).imm && x.src(i).v == t) x.src(i).v = dst;
  }
  vc_.code[k].in.dst = dst;
  return true;
}

uint32_t Lowerer::symbol_address(const ptx::Instr& in, const ptx::SymRef& s, ptx::Space* space) {
  Frame& fr = *frames_.back();
  switch (s.kind) {
    case ptx::SymKind::ModuleVar: {
      const ptx::Var& var = m_.vars[s.index];
      *space = var.space;
      if (var.space == ptx::Space::Shared) {
        auto it = shared_.module_vars.find(s.index);
        if (it == shared_.module_vars.end()) unsupported(in, "names a shared variable outside the kernel's layout");
        return uint32_t(it->second);
      }
      auto it = shape_.symbols.find(var.name);
      if (it == shape_.symbols.end())
        throw LowerError(launch::kInvalidValue, "PTX line " + std::to_string(in.line) + ": module variable `" + var.name +
                                               "` has no device address");
      return uint32_t(it->second);
    }
    case ptx::SymKind::Param:
      if (fr.kernel) {
        *space = ptx::Space::Param;
        return uint32_t(fr.f->params[s.index].offset);
      }
      *space = ptx::Space::Local;
      return fr.param_off[s.index];
    case ptx::SymKind::Ret: *space = ptx::Space::Local; return fr.ret_off[s.index];
    case ptx::SymKind::LocalVar: {
      const ptx::Var& var = fr.f->vars[s.index];
      if (var.space == ptx::Space::Shared) {
        *space = ptx::Space::Shared;
        auto it = shared_.function_vars.find({fr.findex, s.index});
        if (it == shared_.function_vars.end()) unsupported(in, "names a shared variable outside the kernel's layout");
        return uint32_t(it->second);
      }
      *space = ptx::Space::Local;
      return fr.var_off[s.index];
    }
    case ptx::SymKind::Func: *space = ptx::Space::Global; return ptx::function_address(s.index);
  }
  unsupported(in, "names a symbol the lowering does not know");
}

Space Lowerer::mem_space(const ptx::Instr& in, ptx::Space sp) {
  switch (sp) {
    case ptx::Space::None:  // generic: the lowering treats generic accesses as global (docs/isa.md)
    case ptx::Space::Global:
    case ptx::Space::Const: return Space::Global;
    case ptx::Space::Shared: return Space::Shared;
    case ptx::Space::Local: return Space::Local;
    case ptx::Space::Param: return frames_.back()->kernel ? Space::Param : Space::Local;
    default: break;
  }
  unsupported(in, "uses a state space the machine does not have");
}

// The address operand [base + imm] as a machine operand plus a constant
// offset, and the machine space it addresses: a symbol's own space (a call's
// .param variables live in local memory), else the instruction's.
Operand Lowerer::address(const ptx::Instr& in, const ptx::Operand& o, uint32_t& off, Space& sp) {
  off = uint32_t(o.imm);
  if (o.kind != ptx::Operand::Kind::Addr) unsupported(in, "has a malformed address operand");
  sp = mem_space(in, in.space);
  if (o.has_sym) {
    ptx::Space symspace;
    uint32_t a = symbol_address(in, o.sym, &symspace);
    sp = mem_space(in, symspace);
    return K(a);
  }
  if (o.reg == ptx::kNoReg) return K(0);
  auto& r = frames_.back()->regs[o.reg];
  return R(r[0]);  // addresses are 32-bit (docs/isa.md, "64-bit values")
}

uint32_t Lowerer::local_alloc(uint64_t size, uint32_t align) {
  align = std::max<uint32_t>(align, 4);
  local_top_ = (local_top_ + align - 1) / align * align;
  uint32_t at = local_top_;
  local_top_ += uint32_t(size);
  return at;
}

}  // namespace qgpu::machine::lowering
