// Instruction selection: the walk over a kernel's PTX and the dispatch over
// instruction families (isel.h).
#include "model_host/lower/isel.h"

#include <algorithm>

namespace qgpu::machine::lowering {

Selection Lowerer::select(const std::string& kernel) {
  auto idx = m_.function_index(kernel);
  if (!idx || !m_.functions[*idx].is_entry || !m_.functions[*idx].has_body)
    throw LowerError(launch::kInvalidValue, "no kernel named `" + kernel + "` in the module");
  kernel_ = *idx;
  const launch::Dim3& b = shape_.block;
  const uint64_t threads = b.count();
  if (threads == 0 || threads > p_.max_threads)
    throw LowerError(launch::kInvalidValue, "launch of " + kernel + " with " + std::to_string(threads) +
                                           " threads per block: the machine runs at most " +
                                           std::to_string(p_.max_threads));
  check_grid(kernel, shape_.grid, p_);
  threads_ = uint32_t(threads);
  if (!p_.native_mma)  // mma_area_bytes: the f32 copy of f16 inputs
    for (const ptx::Function& f : m_.functions)
      for (const ptx::Instr& in : f.body)
        if (in.wmma.op == ptx::WmmaOp::Mma && in.wmma.ab == ptx::Type::F16) mma_f16_ = true;
  shared_ = ptx::shared_layout(m_, kernel_);
  // Shared memory: the program's own, then dynamic, then the scratch area.
  uint32_t own = std::max<uint32_t>(shared_.static_size, shared_.dynamic_offset + shape_.dynamic_smem);
  scratch_base_ = (own + 3) / 4 * 4;
  reserve_barrier_words();
  Frame top;
  top.f = &m_.functions[kernel_];
  top.findex = kernel_;
  top.kernel = true;
  tid_ = op(Op::ADD, opr(Op::MUL, opr(Op::WARP), K(p_.lanes)), opr(Op::LANE));
  recip_d_ = op(Op::MOV, K(0));  // dead unless a 64-bit division reads them
  recip_v_ = op(Op::MOV, K(0));
  start_device_runtime();
  lower_function(top);
  Selection sel{take(),          threads_,        local_top_, scratch_base_,
                scratch_used_,   0,               0,          narrow_division_,
                ctas_in_order_,  grid_use_};
  if (mma_used_) {
    sel.mma_base = mma_base();
    sel.mma_bytes = (threads_ + 31) / 32 * mma_area_bytes();
  }
  return sel;
}

void Lowerer::lower_function(Frame& fr) {
  frames_.push_back(&fr);
  const ptx::Function& f = *fr.f;
  for (auto& r : f.regs) {
    uint32_t lo = nv();
    fr.regs.push_back({lo, ptx::type_size(r.type) == 8 ? nv() : kNoV});
  }
  for (size_t i = 0; i < f.labels.size(); ++i) fr.labels.push_back(new_label());
  for (auto& v : f.vars) fr.var_off.push_back(v.space == ptx::Space::Shared ? 0 : local_alloc(v.size, v.align));
  // Labels sorted by target position, placed as the body is walked.
  std::vector<std::pair<uint32_t, uint32_t>> at;
  for (size_t i = 0; i < f.labels.size(); ++i) at.push_back({f.labels[i].target, fr.labels[i]});
  std::sort(at.begin(), at.end());
  size_t li = 0;
  for (uint32_t i = 0; i < f.body.size(); ++i) {
    while (li < at.size() && at[li].first == i) place(at[li++].second);
    lower_guarded(f.body[i]);
  }
  while (li < at.size()) place(at[li++].second);
  if (fr.kernel)
    exit_thread();
  else
    jmp(fr.ret_label);
  frames_.pop_back();
}

// Instructions that a guard can turn into a conditional write (`sel`) of
// their results: those whose only effect is writing registers.  Division and
// remainder are excluded only because skipping their loop is cheaper.
bool is_pure(ptx::Op op) {
  switch (op) {
    case ptx::Op::Ld:
    case ptx::Op::Ldu:
    case ptx::Op::St:
    case ptx::Op::Atom:
    case ptx::Op::Red:
    case ptx::Op::Bra:
    case ptx::Op::Call:
    case ptx::Op::Ret:
    case ptx::Op::Exit:
    case ptx::Op::Trap:
    case ptx::Op::Bar:
    case ptx::Op::BarWarp:
    case ptx::Op::Shfl:
    case ptx::Op::Vote:
    case ptx::Op::Activemask:
    case ptx::Op::Match:
    case ptx::Op::Redux:
    case ptx::Op::Wmma:
    case ptx::Op::Div:
    case ptx::Op::Rem: return false;
    default: return true;
  }
}

void Lowerer::lower_guarded(const ptx::Instr& in) {
  mark_ = vc_.nvregs;
  if (in.guard.reg == ptx::kNoReg) return lower_instr(in);
  Operand g = R(frames_.back()->regs[in.guard.reg][0]);
  if (in.op == ptx::Op::Bra) {
    uint32_t next = new_label();
    uint32_t target = frames_.back()->labels[in.ops[0].label];
    if (in.guard.neg)
      br(g, next, target);
    else
      br(g, target, next);
    place(next);
    return;
  }
  if (is_pure(in.op)) {
    guard_ = in.guard.neg ? opr(Op::XOR, g, K(1)) : g;
    lower_instr(in);
    guard_ = K(1);
    return;
  }
  uint32_t run = new_label(), skip = new_label();
  if (in.guard.neg)
    br(g, skip, run);
  else
    br(g, run, skip);
  place(run);
  lower_instr(in);
  jmp(skip);
  place(skip);
}

void Lowerer::lower_setp(const ptx::Instr& in) {
  // set.CMP.dtype.stype compares stype values (type2); setp has one type.
  Type t = in.op == ptx::Op::Set ? in.type2 : in.type;
  if (ptx::is_float(t) || ptx::is_float(in.type))
    unsupported(in, "compares floating-point values: the machine has no floating point");
  bool sign = ptx::is_signed(t);
  bool wide = ptx::type_size(t) == 8;
  V a, b;
  if (const uint32_t size = ptx::type_size(t); size == 1 || size == 2) {
    // Narrow registers hold their values zero-extended (write()): equality
    // compares them as they are, and the signed order is the unsigned order
    // of the values with their sign bit flipped.
    const Type u = size == 1 ? Type::U8 : Type::U16;
    a = read(in, in.ops[1], u);
    b = read(in, in.ops[2], u);
    const ptx::Cmp c = in.cmp;
    if (sign && (c == ptx::Cmp::Lt || c == ptx::Cmp::Le || c == ptx::Cmp::Gt || c == ptx::Cmp::Ge)) {
      const uint32_t top = 1u << (8 * size - 1);
      a.lo = opr(Op::XOR, a.lo, K(top));
      b.lo = opr(Op::XOR, b.lo, K(top));
    }
    sign = false;
  } else {
    a = read(in, in.ops[1], t);
    b = read(in, in.ops[2], t);
  }
  auto lt = [&](V x, V y, bool s, bool le) -> Operand {
    if (wide) return lt64(x, y, s, le);
    return opr(le ? (s ? Op::SLE : Op::SLEU) : (s ? Op::SLT : Op::SLTU), x.lo, y.lo);
  };
  Operand r;
  switch (in.cmp) {
    case ptx::Cmp::Eq: r = wide ? eq64(a, b) : opr(Op::SEQ, a.lo, b.lo); break;
    case ptx::Cmp::Ne: r = wide ? opr(Op::XOR, eq64(a, b), K(1)) : opr(Op::SNE, a.lo, b.lo); break;
    case ptx::Cmp::Lt: r = lt(a, b, sign, false); break;
    case ptx::Cmp::Le: r = lt(a, b, sign, true); break;
    case ptx::Cmp::Gt: r = lt(b, a, sign, false); break;
    case ptx::Cmp::Ge: r = lt(b, a, sign, true); break;
    case ptx::Cmp::Lo: r = lt(a, b, false, false); break;
    case ptx::Cmp::Ls: r = lt(a, b, false, true); break;
    case ptx::Cmp::Hi: r = lt(b, a, false, false); break;
    case ptx::Cmp::Hs: r = lt(b, a, false, true); break;
    default: unsupported(in, "uses a comparison the machine does not have");
  }
  if (in.bool_op != ptx::BoolOp::None) {
    Operand c = read32(in, in.ops[3], Type::Pred);
    Op bo = in.bool_op == ptx::BoolOp::And ? Op::AND : in.bool_op == ptx::BoolOp::Or ? Op::OR : Op::XOR;
    r = opr(bo, r, c);
  }
  if (in.op == ptx::Op::Set) {  // set: all ones for true
    write(in.ops[0], in.type, {opr(Op::SUB, K(0), r), K(0)});
    return;
  }
  const ptx::Operand& d = in.ops[0];
  if (d.kind == ptx::Operand::Kind::PredPair) {
    Operand nr = opr(Op::XOR, r, K(1));
    ptx::Operand p = d, q = d;
    p.kind = q.kind = ptx::Operand::Kind::Reg;
    q.reg = d.reg2;
    write(p, Type::Pred, {r, K(0)});
    write(q, Type::Pred, {nr, K(0)});
    return;
  }
  write(d, Type::Pred, {r, K(0)});
}

void Lowerer::lower_cvt(const ptx::Instr& in) {
  Type dt = in.type, stype = in.type2;
  if (ptx::is_float(dt) || ptx::is_float(stype))
    unsupported(in, "converts floating-point values: the machine has no floating point");
  uint32_t ds = ptx::type_size(dt), ss = ptx::type_size(stype);
  if (in.sat && (ds == 8 || ss == 8))
    unsupported(in, "saturates a 64-bit integer conversion: the machine saturates conversions of 32 bits and fewer");
  V v = read(in, in.ops[1], stype);
  if (in.sat) {  // clamp the source's value (read extended as its type says) to the destination's range
    const uint32_t bits = 8 * ds;
    if (ptx::is_signed(stype)) {
      const int64_t lo = ptx::is_signed(dt) ? -(int64_t(1) << (bits - 1)) : 0;
      const int64_t hi = ptx::is_signed(dt) ? (int64_t(1) << (bits - 1)) - 1 : (int64_t(1) << bits) - 1;
      if (lo > INT32_MIN) v.lo = opr(Op::MAX, v.lo, K(uint32_t(lo)));
      if (hi < INT32_MAX) v.lo = opr(Op::MIN, v.lo, K(uint32_t(hi)));
    } else {
      const uint64_t hi = ptx::is_signed(dt) ? (uint64_t(1) << (bits - 1)) - 1 : (uint64_t(1) << bits) - 1;
      if (hi < UINT32_MAX) v.lo = opr(Op::MINU, v.lo, K(uint32_t(hi)));
    }
  }
  if (ds == 8) {
    if (ss < 8) v.hi = ptx::is_signed(stype) ? opr(Op::SAR, v.lo, K(31)) : K(0);
  } else {
    v.hi = K(0);
    if (ds < 4) {  // truncate, then extend as the destination type says
      uint32_t sh = 32 - 8 * ds;
      v.lo = ptx::is_signed(dt) ? opr(Op::SAR, opr(Op::SHL, v.lo, K(sh)), K(sh))
                                : opr(Op::AND, v.lo, K((1u << (8 * ds)) - 1));
    }
  }
  write(in.ops[0], dt, v);
}

// One PTX instruction: the forms lower_more takes, floating point, then by
// family.
void Lowerer::lower_instr(const ptx::Instr& in) {
  if (in.op == ptx::Op::Tex || in.op == ptx::Op::Suld || in.op == ptx::Op::Sust) return lower_texture(in);
  if (lower_more(in)) return;
  using PO = ptx::Op;
  if ((ptx::is_float(in.type) || ptx::is_float(in.type2)) && in.op != PO::Ld && in.op != PO::St && in.op != PO::Mov &&
      in.op != PO::Ldu && in.op != PO::Selp && in.op != PO::Atom && in.op != PO::Red &&  // float atomics: lower_atom
      in.op != PO::Wmma)
    return lower_float(in);  // software floating point (softfloat.h)
  switch (in.op) {
    case PO::Mov:
    case PO::Add:
    case PO::Sub:
    case PO::Mul:
    case PO::Mad:
    case PO::Abs:
    case PO::Neg:
    case PO::Min:
    case PO::Max: lower_int_arith(in); return;
    case PO::Popc:
    case PO::Clz:
    case PO::Brev:
    case PO::Bfind:
    case PO::Bfe:
    case PO::Bfi:
    case PO::Prmt:
    case PO::Shf:
    case PO::Shl:
    case PO::Shr:
    case PO::And:
    case PO::Or:
    case PO::Xor:
    case PO::Not:
    case PO::Cnot: lower_bit_op(in); return;
    case PO::Cvta:
    case PO::Selp:
    case PO::Slct: lower_select(in); return;
    case PO::Bra:
    case PO::Ret:
    case PO::Exit:
    case PO::Trap:
    case PO::Bar:
    case PO::BarWarp:
    case PO::Membar:
    case PO::Fence:
    case PO::Prefetch:
    case PO::Nanosleep: lower_control(in); return;
    case PO::Div:
    case PO::Rem: lower_divrem(in); return;
    case PO::Cvt: lower_cvt(in); return;
    case PO::Setp:
    case PO::Set: lower_setp(in); return;
    case PO::Ld:
    case PO::Ldu:
    case PO::St: lower_ldst(in); return;
    case PO::Atom:
    case PO::Red: lower_atom(in); return;
    case PO::Call: lower_call(in); return;
    case PO::Shfl: lower_shfl(in); return;
    case PO::Wmma: lower_wmma(in); return;
    case PO::Vote:
    case PO::Activemask: lower_vote(in); return;
    case PO::Match: lower_match(in); return;
    default: break;
  }
  if (in.opcode.rfind("wmma.", 0) == 0)  // a form the parser does not decode (ptx::Instr::wmma)
    unsupported(in, "is a wmma form the machine does not have: f16, s8 and u8 fragments in the shapes m16n16k16, "
                    "m32n8k16 and m8n32k16 only (not the sub-byte, bf16, tf32 or f64 ones; docs/isa.md section 7.1)");
  unsupported(in, "is not supported by the machine");
}

// mov, add, sub, mul, mad, abs, neg, min, max on integers of 8 to 64 bits.
void Lowerer::lower_int_arith(const ptx::Instr& in) {
  using PO = ptx::Op;
  Type t = in.type;
  const uint32_t size = ptx::type_size(t);
  const bool wide = size == 8;
  const bool sign = ptx::is_signed(t);
  switch (in.op) {
    case PO::Mov: {
      if (in.ops[1].kind == ptx::Operand::Kind::Sym && in.ops[1].sym.kind == ptx::SymKind::Func)
        unsupported(in, "takes the address of a function (indirect calls are not supported)");
      write(in.ops[0], t, read(in, in.ops[1], t));
      return;
    }
    case PO::Add:
    case PO::Sub: {
      if (in.sat || in.cc) unsupported(in, "uses a carry or saturation form the lowering does not take");
      V a = read(in, in.ops[1], t), b = read(in, in.ops[2], t);
      bool add = in.op == PO::Add;
      if (wide)
        write(in.ops[0], t, add ? add64(a, b) : sub64(a, b));
      else
        write(in.ops[0], t, {opr(add ? Op::ADD : Op::SUB, a.lo, b.lo), K(0)});
      return;
    }
    case PO::Mul:
    case PO::Mad: {
      V a = read(in, in.ops[1], t), b = read(in, in.ops[2], t);
      V r;
      Type rt = t;
      if (in.mul == ptx::MulMode::Wide) {
        if (size == 2) {
          r.lo = opr(Op::MUL, a.lo, b.lo);
          rt = sign ? Type::S32 : Type::U32;
        } else if (size == 4) {
          r = {opr(Op::MUL, a.lo, b.lo), opr(sign ? Op::MULHS : Op::MULHU, a.lo, b.lo)};
          rt = sign ? Type::S64 : Type::U64;
        } else {
          unsupported(in, "is a 64x64 wide multiply");
        }
      } else if (in.mul == ptx::MulMode::Hi) {
        if (wide)
          r = mulhi64(a, b, sign);
        else if (size == 4)
          r.lo = opr(sign ? Op::MULHS : Op::MULHU, a.lo, b.lo);
        else
          r.lo = opr(Op::SHR, opr(Op::MUL, a.lo, b.lo), K(16));
      } else {
        if (wide)
          r = mul64(a, b);
        else
          r.lo = opr(Op::MUL, a.lo, b.lo);
      }
      if (in.op == PO::Mad) {
        if (in.sat || in.cc) unsupported(in, "uses a carry or saturation form the lowering does not take");
        V c = read(in, in.ops[3], rt);
        r = ptx::type_size(rt) == 8 ? add64(r, c) : V{opr(Op::ADD, r.lo, c.lo), K(0)};
      }
      write(in.ops[0], rt, r);
      return;
    }
    case PO::Abs:
    case PO::Neg: {
      V a = read(in, in.ops[1], t);
      if (wide) {
        Operand n = in.op == PO::Neg ? K(1) : opr(Op::SLT, a.hi, K(0));
        write(in.ops[0], t, neg_if64(a, n));
      } else {
        Operand n = in.op == PO::Neg ? K(1) : opr(Op::SLT, a.lo, K(0));
        write(in.ops[0], t, {neg_if32(a.lo, n), K(0)});
      }
      return;
    }
    case PO::Min:
    case PO::Max: {
      V a = read(in, in.ops[1], t), b = read(in, in.ops[2], t);
      bool mn = in.op == PO::Min;
      if (wide) {
        Operand lt = lt64(a, b, sign, false);
        Operand take_a = mn ? lt : opr(Op::XOR, lt, K(1));
        write(in.ops[0], t, {opr(Op::SEL, take_a, a.lo, b.lo), opr(Op::SEL, take_a, a.hi, b.hi)});
      } else {
        Op o = mn ? (sign ? Op::MIN : Op::MINU) : (sign ? Op::MAX : Op::MAXU);
        write(in.ops[0], t, {opr(o, a.lo, b.lo), K(0)});
      }
      return;
    }
    default: break;
  }
  unsupported(in, "is not supported by the machine");
}

// Bit operations: popc, clz, brev, bfind, bfe, bfi, prmt, shf, shifts and logic.
void Lowerer::lower_bit_op(const ptx::Instr& in) {
  using PO = ptx::Op;
  Type t = in.type;
  const uint32_t size = ptx::type_size(t);
  const bool wide = size == 8;
  const bool sign = ptx::is_signed(t);
  auto bin32 = [&](Op o) {
    V a = read(in, in.ops[1], t), b = read(in, in.ops[2], t);
    if (wide)
      write(in.ops[0], t, {opr(o, a.lo, b.lo), opr(o, a.hi, b.hi)});
    else
      write(in.ops[0], t, {opr(o, a.lo, b.lo), K(0)});
  };
  switch (in.op) {
    case PO::Popc:
    case PO::Clz:
    case PO::Brev: {
      V a = read(in, in.ops[1], t);
      if (in.op == PO::Popc)
        write(in.ops[0], Type::U32,
              {wide ? opr(Op::ADD, opr(Op::POPC, a.lo), opr(Op::POPC, a.hi)) : opr(Op::POPC, a.lo), K(0)});
      else if (in.op == PO::Clz)
        write(
            in.ops[0], Type::U32,
            {wide ? opr(Op::SEL, opr(Op::SEQ, a.hi, K(0)), opr(Op::ADD, opr(Op::CLZ, a.lo), K(32)), opr(Op::CLZ, a.hi))
                  : opr(Op::CLZ, a.lo),
             K(0)});
      else
        write(in.ops[0], t, wide ? V{opr(Op::BREV, a.hi), opr(Op::BREV, a.lo)} : V{opr(Op::BREV, a.lo), K(0)});
      return;
    }
    case PO::Bfind: {
      if (wide) unsupported(in, "is a 64-bit bfind");
      Operand a = read32(in, in.ops[1], t);
      Operand x = sign ? opr(Op::SEL, opr(Op::SLT, a, K(0)), opr(Op::XOR, a, K(~0u)), a) : a;
      Operand clz = opr(Op::CLZ, x);
      Operand r = in.shiftamt ? opr(Op::SEL, opr(Op::SEQ, x, K(0)), K(~0u), clz) : opr(Op::SUB, K(31), clz);
      write(in.ops[0], Type::U32, {r, K(0)});
      return;
    }
    case PO::Bfe: {
      if (wide) unsupported(in, "is a 64-bit bfe");
      Operand a = read32(in, in.ops[1], t);
      Operand pos = opr(Op::AND, read32(in, in.ops[2], Type::U32), K(0xff));
      Operand len = opr(Op::AND, read32(in, in.ops[3], Type::U32), K(0xff));
      Operand r;
      if (sign) {
        Operand top = opr(Op::MINU, opr(Op::ADD, pos, len), K(32));
        Operand x = opr(Op::SHL, a, opr(Op::SUB, K(32), top));
        r = opr(Op::SAR, x, opr(Op::ADD, opr(Op::SUB, K(32), top), pos));
        r = opr(Op::SEL, opr(Op::SEQ, len, K(0)), K(0), r);
      } else {
        r = opr(Op::AND, opr(Op::SHR, a, pos), opr(Op::SUB, opr(Op::SHL, K(1), len), K(1)));
      }
      write(in.ops[0], t, {r, K(0)});
      return;
    }
    case PO::Bfi: {
      if (wide) unsupported(in, "is a 64-bit bfi");
      Operand f = read32(in, in.ops[1], t), b = read32(in, in.ops[2], t);
      Operand pos = opr(Op::AND, read32(in, in.ops[3], Type::U32), K(0xff));
      Operand len = opr(Op::AND, read32(in, in.ops[4], Type::U32), K(0xff));
      Operand mask = opr(Op::SHL, opr(Op::SUB, opr(Op::SHL, K(1), len), K(1)), pos);
      Operand r = opr(Op::OR, opr(Op::AND, b, opr(Op::XOR, mask, K(~0u))), opr(Op::AND, opr(Op::SHL, f, pos), mask));
      write(in.ops[0], t, {r, K(0)});
      return;
    }
    case PO::Prmt: {
      if (in.prmt != ptx::PrmtMode::None) unsupported(in, "is a prmt mode the lowering does not take");
      Operand a = read32(in, in.ops[1], Type::B32), b = read32(in, in.ops[2], Type::B32);
      Operand c = read32(in, in.ops[3], Type::B32);
      Operand r = K(0);
      for (uint32_t i = 0; i < 4; ++i) {
        // Selector nibble i: bits 0-2 pick one of the 8 bytes of {b, a}, bit 3 replicates its sign.
        Operand byte;
        if (c.imm) {
          uint32_t s = (c.v >> (4 * i)) & 7, msb = (c.v >> (4 * i + 3)) & 1;
          byte = opr(Op::AND, opr(Op::SHR, s < 4 ? a : b, K((s & 3) * 8)), K(0xff));
          if (msb) byte = opr(Op::AND, opr(Op::SUB, K(0), opr(Op::SHR, byte, K(7))), K(0xff));
        } else {
          Operand nib = opr(Op::SHR, c, K(4 * i));
          Operand src = opr(Op::SEL, opr(Op::AND, nib, K(4)), b, a);
          byte = opr(Op::AND, opr(Op::SHR, src, opr(Op::SHL, opr(Op::AND, nib, K(3)), K(3))), K(0xff));
          Operand sign = opr(Op::AND, opr(Op::SUB, K(0), opr(Op::SHR, byte, K(7))), K(0xff));
          byte = opr(Op::SEL, opr(Op::AND, nib, K(8)), sign, byte);
        }
        r = opr(Op::OR, r, opr(Op::SHL, byte, K(8 * i)));
      }
      write(in.ops[0], Type::B32, {r, K(0)});
      return;
    }
    case PO::Shf: {
      Operand a = read32(in, in.ops[1], Type::B32), b = read32(in, in.ops[2], Type::B32);
      Operand c = read32(in, in.ops[3], Type::U32);
      Operand n = in.shf_mode == ptx::ShfMode::Clamp ? opr(Op::MINU, c, K(32)) : opr(Op::AND, c, K(31));
      Operand r = in.shf_dir == ptx::ShfDir::L
                      ? opr(Op::OR, opr(Op::SHL, b, n), opr(Op::SHR, a, opr(Op::SUB, K(32), n)))
                      : opr(Op::OR, opr(Op::SHR, a, n), opr(Op::SHL, b, opr(Op::SUB, K(32), n)));
      write(in.ops[0], Type::B32, {r, K(0)});
      return;
    }
    case PO::Shl:
    case PO::Shr: {
      V a = read(in, in.ops[1], t);
      Operand n = read32(in, in.ops[2], Type::U32);
      if (wide) {
        write(in.ops[0], t, in.op == PO::Shl ? shl64(a, n) : shr64(a, n, sign));
      } else {
        Op o = in.op == PO::Shl ? Op::SHL : sign ? Op::SAR : Op::SHR;
        write(in.ops[0], t, {opr(o, a.lo, n), K(0)});
      }
      return;
    }
    case PO::And: bin32(Op::AND); return;
    case PO::Or: bin32(Op::OR); return;
    case PO::Xor: bin32(Op::XOR); return;
    case PO::Not: {
      V a = read(in, in.ops[1], t);
      uint32_t ones = t == Type::Pred ? 1u : ~0u;
      write(in.ops[0], t, {opr(Op::XOR, a.lo, K(ones)), wide ? opr(Op::XOR, a.hi, K(ones)) : K(0)});
      return;
    }
    case PO::Cnot: {
      V a = read(in, in.ops[1], t);
      write(in.ops[0], t, {opr(Op::SEQ, wide ? opr(Op::OR, a.lo, a.hi) : a.lo, K(0)), K(0)});
      return;
    }
    default: break;
  }
  unsupported(in, "is not supported by the machine");
}

// cvta between generic and window addresses; selp and slct.
void Lowerer::lower_select(const ptx::Instr& in) {
  using PO = ptx::Op;
  Type t = in.type;
  const uint32_t size = ptx::type_size(t);
  const bool wide = size == 8;
  switch (in.op) {
    case PO::Cvta: {
      V a = read(in, in.ops[1], t);
      uint32_t window = in.space == ptx::Space::Shared  ? kSharedWindow
                        : in.space == ptx::Space::Local ? kLocalWindow
                                                        : 0;
      if (window) a.lo = opr(in.to ? Op::SUB : Op::ADD, a.lo, K(window));
      write(in.ops[0], t, {a.lo, K(0)});
      return;
    }
    case PO::Selp: {
      V a = read(in, in.ops[1], t), b = read(in, in.ops[2], t);
      Operand c = read32(in, in.ops[3], Type::Pred);
      write(in.ops[0], t, {opr(Op::SEL, c, a.lo, b.lo), wide ? opr(Op::SEL, c, a.hi, b.hi) : K(0)});
      return;
    }
    case PO::Slct: {
      if (ptx::is_float(in.type2)) unsupported(in, "selects on a floating-point value");
      V a = read(in, in.ops[1], t), b = read(in, in.ops[2], t);
      Operand c = opr(Op::SLE, K(0), read32(in, in.ops[3], Type::S32));
      write(in.ops[0], t, {opr(Op::SEL, c, a.lo, b.lo), wide ? opr(Op::SEL, c, a.hi, b.hi) : K(0)});
      return;
    }
    default: break;
  }
  unsupported(in, "is not supported by the machine");
}

// Control: branches, return, exit, trap, barriers; fences do nothing (one thread
// at a time: memory is always coherent).
void Lowerer::lower_control(const ptx::Instr& in) {
  using PO = ptx::Op;
  switch (in.op) {
    case PO::Bra: jmp(frames_.back()->labels[in.ops[0].label]); return;
    case PO::Ret:
      if (frames_.back()->kernel)
        exit_thread();
      else
        jmp(frames_.back()->ret_label);
      place(new_label());
      return;
    case PO::Exit:
      exit_thread();
      place(new_label());
      return;
    case PO::Trap:
      vc_.code.push_back({VI::Trap, {}, 0, 0, 0, uint32_t(launch::kLaunchFailure)});
      place(new_label());
      return;
    case PO::Bar:
      if (in.bar == ptx::BarKind::Red) return lower_bar_red(in);
      if (in.bar == ptx::BarKind::Arrive) unsupported(in, "is bar.arrive: the machine's barriers wait");
      barrier(VI::Bar);
      return;
    case PO::BarWarp: barrier(VI::Wbar); return;
    case PO::Membar:
    case PO::Fence:
    case PO::Prefetch:
    case PO::Nanosleep: return;  // one thread at a time: memory is always coherent
    default: break;
  }
  unsupported(in, "is not supported by the machine");
}

}  // namespace qgpu::machine::lowering
