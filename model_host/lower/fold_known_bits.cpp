// Known-bits folding over virtual code (optimize.h).
#include "model_host/lower/optimize.h"

#include <algorithm>
#include <optional>
#include <vector>

#include "model_host/lower/analysis.h"

namespace qgpu::machine::lowering {

// Known bits, per register and program point, over the control flow: a
// forward dataflow to a fixed point, registers unknown at entry.  An ALU
// result whose every bit is known becomes that constant, and a mask that
// keeps every bit that may be set (`and x, m` where x's other bits are known
// zero) becomes a copy.  This makes the byte offset of a narrow access a
// constant where its address's alignment is known (an array at a fixed
// shared offset indexed by a counter that steps by whole words), and drops
// the zero-extension of values that are already narrow.
void fold_known_bits(VCode& vc) {
  auto is_bit = [](KnownBits k) { return (k.known | 1u) == ~0u && (k.value & ~1u) == 0; };
  const Cfg cfg = build_cfg(vc.code, vc.nlabels);
  const uint32_t nb = cfg.blocks();
  // One state of every register per block: beyond 2^24 entries (128 MiB)
  // the pass is skipped (it only removes instructions).
  if (nb == 0 || uint64_t(nb) * vc.nvregs > (uint64_t(1) << 24)) return;
  auto operand = [](const std::vector<KnownBits>& st, const Instr& x, int k) {
    const Operand* ops[3] = {&x.a, &x.b, &x.c};
    if (k >= op_info(x.op).arity) return KnownBits::constant(0);
    return ops[k]->imm ? KnownBits::constant(ops[k]->v) : st[ops[k]->v];
  };
  auto result = [&](const std::vector<KnownBits>& st, const Instr& x) {
    if (x.op == Op::FCMP || x.op == Op::DCMP) return KnownBits{~1u, 0};  // a native comparison: 0 or 1
    return op_info(x.op).kind == OpKind::Alu ? known_result(x, operand(st, x, 0), operand(st, x, 1), operand(st, x, 2))
                                             : KnownBits{};
  };
  std::vector<std::vector<KnownBits>> in(nb);
  std::vector<bool> reached(nb, false), queued(nb, false);
  in[0].assign(vc.nvregs, KnownBits{});
  reached[0] = queued[0] = true;
  std::vector<uint32_t> work{0};
  std::vector<KnownBits> st;
  while (!work.empty()) {
    const uint32_t b = work.back();
    work.pop_back();
    queued[b] = false;
    st = in[b];
    for (uint32_t i = cfg.starts[b]; i < cfg.end(b); ++i)
      if (vc.code[i].kind == VI::Ins && vc.code[i].in.writes_reg()) st[vc.code[i].in.dst] = result(st, vc.code[i].in);
    for (uint32_t s : cfg.succ[b]) {
      bool changed = !reached[s];
      if (!reached[s]) {
        in[s] = st;
        reached[s] = true;
      } else {
        for (uint32_t r = 0; r < vc.nvregs; ++r) {
          const KnownBits j = join(in[s][r], st[r]);
          if (!(j == in[s][r])) {
            in[s][r] = j;
            changed = true;
          }
        }
      }
      if (changed && !queued[s]) {
        queued[s] = true;
        work.push_back(s);
      }
    }
  }
  for (uint32_t b = 0; b < nb; ++b) {
    if (!reached[b]) continue;
    st = in[b];
    for (uint32_t i = cfg.starts[b]; i < cfg.end(b); ++i) {
      if (vc.code[i].kind != VI::Ins || !vc.code[i].in.writes_reg()) continue;
      Instr& x = vc.code[i].in;
      const KnownBits r = result(st, x);
      if (op_info(x.op).kind == OpKind::Alu) {
        if (r.known == ~0u && !(x.op == Op::MOV && x.a.imm)) {
          x = Instr{Op::MOV, x.dst, K(r.value), K(0), K(0)};
        } else if (x.op == Op::AND && x.a.imm != x.b.imm) {
          const Operand reg = x.a.imm ? x.b : x.a, mask = x.a.imm ? x.a : x.b;
          const KnownBits a = st[reg.v];
          if ((~mask.v & ~(a.known & ~a.value)) == 0) x = Instr{Op::MOV, x.dst, reg, K(0), K(0)};
        } else if (!x.a.imm && is_bit(st[x.a.v])) {
          // A 0/1 value p compared with 0 or 1, or p ? 1 : 0 and p ? 0 : 1:
          // p itself, or its negation.
          std::optional<bool> same;
          if ((x.op == Op::SEQ || x.op == Op::SNE) && x.b.imm && x.b.v <= 1) same = (x.op == Op::SEQ) == (x.b.v == 1);
          if (x.op == Op::SEL && x.b.imm && x.c.imm && x.b.v <= 1 && (x.b.v ^ x.c.v) == 1) same = x.b.v == 1;
          if (same) x = *same ? Instr{Op::MOV, x.dst, x.a, K(0), K(0)} : Instr{Op::XOR, x.dst, x.a, K(1), K(0)};
        }
      }
      st[x.dst] = r;
    }
    // A branch whose condition is known: a jump.
    VI& last = vc.code[cfg.end(b) - 1];
    if (last.kind == VI::Br) {
      const KnownBits c = st[last.cond];
      if ((c.known & c.value) != 0) {
        last = VI{VI::Jmp, {}, last.l1};
      } else if (c.known == ~0u) {
        last = VI{VI::Jmp, {}, last.l2};
      }
    }
  }
}

}  // namespace qgpu::machine::lowering
