// Instruction selection: warp operations (shuffle, vote, match, redux) and
// barriers (isel.h).
#include "model_host/lower/isel.h"

namespace qgpu::machine::lowering {

Operand Lowerer::warp_scratch(uint32_t word) {
  scratch_used_ = true;
  Operand cw = opr(Op::SHR, tid_linear(), K(5));
  return opr(Op::ADD, opr(Op::MUL, cw, K(kScratchWords * 4)), K(scratch_base_ + 4 + word * 4));
}

// After a shuffle-area exchange's closing warp barrier: the lane's word back to 0.
void Lowerer::clear_shfl_slot(Operand area) {
  st(Space::Shared, opr(Op::ADD, area, opr(Op::SHL, opr(Op::AND, tid_linear(), K(31)), K(2))), 0, 4, K(0));
}

// match.any.sync.b32 d, a, membermask: the lanes of the 32-thread warp whose a equals this thread's.
void Lowerer::lower_match(const ptx::Instr& in) {
  if (in.match != ptx::MatchMode::Any || ptx::type_size(in.type) != 4)
    unsupported(in, "is a match form the lowering does not take (match.any.b32 only)");
  Operand a = read32(in, in.ops[1], Type::B32);
  Operand present = warp_ballot(K(1));
  Operand area = warp_scratch(kScratchShfl);
  st(Space::Shared, opr(Op::ADD, area, opr(Op::SHL, opr(Op::AND, tid_linear(), K(31)), K(2))), 0, 4, a);
  barrier(VI::Wbar);
  Operand acc = K(0);
  for (uint32_t j = 0; j < 32; ++j) {
    Operand w = R(ld(Space::Shared, area, 4 * j, 4, false));
    acc = opr(Op::OR, acc, opr(Op::SHL, opr(Op::SEQ, w, a), K(j)));
  }
  barrier(VI::Wbar);
  clear_shfl_slot(area);
  write(in.ops[0], Type::B32, {opr(Op::AND, acc, present), K(0)});
}

// Bit i of the result: the predicate of CUDA lane i, over the converged
// threads of this thread's 32-thread warp.  The first wbar gathers them
// before anyone sets a bit (threads of another branch may wait at another
// wbar meanwhile); each thread sets and, after everyone has read, clears only
// its own bit, so back-to-back votes need no reset phase (docs/isa.md, 7).
Operand Lowerer::warp_ballot(Operand pred) {
  Operand me = opr(Op::SHL, K(1), opr(Op::AND, tid_linear(), K(31)));
  Operand bit = opr(Op::SEL, pred, me, K(0));
  Operand addr = warp_scratch(kScratchVote);
  barrier(VI::Wbar);
  atom(Space::Shared, AtomOp::OR, addr, bit);
  barrier(VI::Wbar);
  Operand v = R(ld(Space::Shared, addr, 0, 4, false));
  barrier(VI::Wbar);
  atom(Space::Shared, AtomOp::AND, addr, opr(Op::XOR, bit, K(~0u)));
  return v;
}

void Lowerer::lower_vote(const ptx::Instr& in) {
  if (in.op == ptx::Op::Activemask) {
    write(in.ops[0], Type::B32, {warp_ballot(K(1)), K(0)});
    return;
  }
  Operand p = read32(in, in.ops[1], Type::Pred);
  Operand member = in.ops.size() > 2 ? read32(in, in.ops[2], Type::B32) : K(~0u);
  switch (in.vote) {
    case ptx::VoteMode::Ballot: write(in.ops[0], Type::B32, {opr(Op::AND, warp_ballot(p), member), K(0)}); return;
    case ptx::VoteMode::Any: write(in.ops[0], Type::Pred, {opr(Op::SNE, warp_ballot(p), K(0)), K(0)}); return;
    case ptx::VoteMode::All:
      write(in.ops[0], Type::Pred, {opr(Op::SEQ, warp_ballot(opr(Op::XOR, p, K(1))), K(0)), K(0)});
      return;
    case ptx::VoteMode::Uni: {
      Operand yes = warp_ballot(p), no = warp_ballot(opr(Op::XOR, p, K(1)));
      write(in.ops[0], Type::Pred, {opr(Op::OR, opr(Op::SEQ, yes, K(0)), opr(Op::SEQ, no, K(0))), K(0)});
      return;
    }
    default: unsupported(in, "is a vote mode the machine does not have");
  }
}

void Lowerer::lower_shfl(const ptx::Instr& in) {
  // shfl.sync.mode.b32 d[|p], a, b, c, membermask
  const ptx::Operand& d = in.ops[0];
  Operand a = read32(in, in.ops[1], Type::B32);
  Operand b = opr(Op::AND, read32(in, in.ops[2], Type::B32), K(31));
  Operand c = read32(in, in.ops[3], Type::B32);
  Operand lane = opr(Op::AND, tid_linear(), K(31));
  Operand cval = opr(Op::AND, c, K(31));
  Operand segmask = opr(Op::AND, opr(Op::SHR, c, K(8)), K(31));
  Operand notseg = opr(Op::XOR, segmask, K(~0u));
  Operand minlane = opr(Op::AND, lane, segmask);
  Operand maxlane = opr(Op::OR, minlane, opr(Op::AND, cval, notseg));
  Operand j, ok;
  switch (in.shfl) {
    case ptx::ShflMode::Up:
      j = opr(Op::SUB, lane, b);
      ok = opr(Op::SLE, maxlane, j);
      break;
    case ptx::ShflMode::Down:
      j = opr(Op::ADD, lane, b);
      ok = opr(Op::SLE, j, maxlane);
      break;
    case ptx::ShflMode::Bfly:
      j = opr(Op::XOR, lane, b);
      ok = opr(Op::SLE, j, maxlane);
      break;
    case ptx::ShflMode::Idx:
      j = opr(Op::OR, minlane, opr(Op::AND, b, notseg));
      ok = opr(Op::SLE, j, maxlane);
      break;
    default: unsupported(in, "is a shuffle mode the machine does not have");
  }
  Operand src = opr(Op::SEL, ok, j, lane);
  Operand area = warp_scratch(kScratchShfl);
  st(Space::Shared, opr(Op::ADD, area, opr(Op::SHL, lane, K(2))), 0, 4, a);
  barrier(VI::Wbar);
  Operand v = R(ld(Space::Shared, opr(Op::ADD, area, opr(Op::SHL, src, K(2))), 0, 4, false));
  barrier(VI::Wbar);
  clear_shfl_slot(area);
  if (d.kind == ptx::Operand::Kind::PredPair) {
    ptx::Operand dv = d, dp = d;
    dv.kind = dp.kind = ptx::Operand::Kind::Reg;
    dp.reg = d.reg2;
    write(dv, Type::B32, {v, K(0)});
    write(dp, Type::Pred, {ok, K(0)});
  } else {
    write(d, Type::B32, {v, K(0)});
  }
}

// bar.red.{popc,and,or}: every thread adds its contribution to a CTA counter,
// waits, reads, waits, and takes its contribution back out.
void Lowerer::lower_bar_red(const ptx::Instr& in) {
  scratch_used_ = true;
  const ptx::Operand& pop = in.ops.back();
  Operand p = read32(in, pop, Type::Pred);
  if (in.atom != ptx::AtomOp::Popc) p = in.atom == ptx::AtomOp::And ? opr(Op::XOR, p, K(1)) : p;
  Operand a = K(scratch_base_);
  atom(Space::Shared, AtomOp::ADD, a, p);
  barrier(VI::Bar);
  Operand n = R(ld(Space::Shared, a, 0, 4, false));
  barrier(VI::Bar);
  atom(Space::Shared, AtomOp::ADD, a, opr(Op::SUB, K(0), p));
  Operand r = in.atom == ptx::AtomOp::Popc  ? n
              : in.atom == ptx::AtomOp::And ? opr(Op::SEQ, n, K(0))
                                            : opr(Op::SNE, n, K(0));
  write(in.ops[0], in.atom == ptx::AtomOp::Popc ? Type::U32 : Type::Pred, {r, K(0)});
}

// redux.sync.OP.type d, a, membermask: every member stores a in its shuffle
// word; after the warp-group barrier each reads the 32 words and combines
// those of the member lanes present (docs/isa.md, section 7).
void Lowerer::lower_redux(const ptx::Instr& in) {
  const Type t = in.type;
  const bool sign = ptx::is_signed(t);
  if (ptx::type_size(t) != 4) unsupported(in, "is a redux of a type the lowering does not take (32-bit only)");
  Operand a = read32(in, in.ops[1], t);
  Operand member = in.ops.size() > 2 ? read32(in, in.ops[2], Type::B32) : K(~0u);
  Op combine;
  uint32_t identity = 0;
  switch (in.atom) {
    case ptx::AtomOp::Add: combine = Op::ADD; break;
    case ptx::AtomOp::And: combine = Op::AND, identity = ~0u; break;
    case ptx::AtomOp::Or: combine = Op::OR; break;
    case ptx::AtomOp::Xor: combine = Op::XOR; break;
    case ptx::AtomOp::Min: combine = sign ? Op::MIN : Op::MINU, identity = sign ? 0x7fffffffu : ~0u; break;
    case ptx::AtomOp::Max: combine = sign ? Op::MAX : Op::MAXU, identity = sign ? 0x80000000u : 0u; break;
    default: unsupported(in, "is a redux operation the machine does not have");
  }
  Operand present = opr(Op::AND, warp_ballot(K(1)), member);
  Operand area = warp_scratch(kScratchShfl);
  st(Space::Shared, opr(Op::ADD, area, opr(Op::SHL, opr(Op::AND, tid_linear(), K(31)), K(2))), 0, 4, a);
  barrier(VI::Wbar);
  Operand acc = K(identity);
  for (uint32_t j = 0; j < 32; ++j) {
    Operand w = R(ld(Space::Shared, area, 4 * j, 4, false));
    acc = opr(Op::SEL, opr(Op::AND, present, K(1u << j)), opr(combine, acc, w), acc);
  }
  barrier(VI::Wbar);
  clear_shfl_slot(area);
  write(in.ops[0], t, {acc, K(0)});
}

// match.{any,all}.sync.{b32,b64} d[|p], a, membermask: the member lanes
// present whose a equals this thread's; .all gives them all when every one
// is equal (p), else 0.  A 64-bit value is compared a word at a time.
void Lowerer::lower_match_any_all(const ptx::Instr& in) {
  const Type t = in.type;
  const uint32_t size = ptx::type_size(t);
  if (size != 4 && size != 8) unsupported(in, "is a match of a type the lowering does not take");
  V a = read(in, in.ops[1], t);
  Operand member = in.ops.size() > 2 ? read32(in, in.ops[2], Type::B32) : K(~0u);
  Operand present = opr(Op::AND, warp_ballot(K(1)), member);
  Operand area = warp_scratch(kScratchShfl);
  Operand slot = opr(Op::ADD, area, opr(Op::SHL, opr(Op::AND, tid_linear(), K(31)), K(2)));
  Operand eq = present;
  for (Operand word : size == 8 ? std::vector<Operand>{a.lo, a.hi} : std::vector<Operand>{a.lo}) {
    st(Space::Shared, slot, 0, 4, word);
    barrier(VI::Wbar);
    Operand acc = K(0);
    for (uint32_t j = 0; j < 32; ++j) {
      Operand w = R(ld(Space::Shared, area, 4 * j, 4, false));
      acc = opr(Op::OR, acc, opr(Op::SHL, opr(Op::SEQ, w, word), K(j)));
    }
    barrier(VI::Wbar);
    eq = opr(Op::AND, eq, acc);
  }
  clear_shfl_slot(area);
  Operand all = opr(Op::SEQ, eq, present);
  Operand d = in.match == ptx::MatchMode::All ? opr(Op::SEL, all, present, K(0)) : eq;
  const ptx::Operand& dst = in.ops[0];
  if (dst.kind == ptx::Operand::Kind::PredPair) {
    ptx::Operand dv = dst, dp = dst;
    dv.kind = dp.kind = ptx::Operand::Kind::Reg;
    dp.reg = dst.reg2;
    write(dv, Type::B32, {d, K(0)});
    write(dp, Type::Pred, {all, K(0)});
  } else {
    write(dst, Type::B32, {d, K(0)});
  }
}

// call (rets), %target, (args), prototype: a test of the target against the
// address of every function the module takes the address of with the call's
// numbers of parameters and returns, each followed by that function inlined
// (those being inlined already excluded); no match traps.
// Counted barriers (docs/isa.md, 8.2).  A kernel with bar.arrive, or with a
// bar.sync whose thread count may be below the CTA's, runs every barrier
// through two shared words per barrier id (16 ids): arrivals and a
// generation.  reserve_barrier_words() decides, at kernel entry, and puts
// the words before the warp scratch area (shared memory starts zeroed).
void Lowerer::reserve_barrier_words() {
  for (const ptx::Function& f : m_.functions)
    for (const ptx::Instr& x : f.body) {
      if (x.op != ptx::Op::Bar || x.bar == ptx::BarKind::Red) continue;
      if (x.bar == ptx::BarKind::Arrive) counted_barriers_ = true;
      if (x.ops.size() >= 2 && !(x.ops[1].kind == ptx::Operand::Kind::Imm && uint64_t(x.ops[1].imm) >= threads_))
        counted_barriers_ = true;
    }
  if (!counted_barriers_) return;
  barrier_base_ = scratch_base_;
  scratch_base_ += 16 * 8;
}

// bar.sync / bar.arrive id, count (count: the CTA's threads when absent):
// read the id's generation, add one arrival; the arrival that makes the
// count resets it and starts the next generation; bar.sync's other threads
// wait at the CTA barrier until the generation changes (each time the CTA
// barrier opens, they look again).
void Lowerer::lower_named_barrier(const ptx::Instr& in) {
  if (in.bar == ptx::BarKind::Red) unsupported(in, "is bar.red in a kernel with counted barriers");
  Operand id = opr(Op::AND, read32(in, in.ops[0], Type::U32), K(15));
  Operand count = in.ops.size() >= 2 ? read32(in, in.ops[1], Type::U32) : K(threads_);
  Operand cnt_at = opr(Op::ADD, opr(Op::SHL, id, K(3)), K(barrier_base_));
  Operand gen = R(ld(Space::Shared, cnt_at, 4, 4, false));
  Operand old = atom(Space::Shared, AtomOp::ADD, cnt_at, K(1));
  uint32_t complete = new_label(), wait = new_label(), out = new_label();
  br(opr(Op::SLEU, count, opr(Op::ADD, old, K(1))), complete, in.bar == ptx::BarKind::Sync ? wait : out);
  place(complete);
  st(Space::Shared, cnt_at, 0, 4, K(0));
  st(Space::Shared, cnt_at, 4, 4, opr(Op::ADD, gen, K(1)));
  jmp(out);
  if (in.bar == ptx::BarKind::Sync) {
    place(wait);
    uint32_t again = new_label();
    place(again);
    barrier(VI::Bar);
    Operand now = R(ld(Space::Shared, cnt_at, 4, 4, false));
    br(opr(Op::SEQ, now, gen), again, out);
  }
  place(out);
}

}  // namespace qgpu::machine::lowering
