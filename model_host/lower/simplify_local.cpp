// Local simplification over straight-line virtual code (optimize.h).
#include "model_host/lower/optimize.h"

#include <algorithm>
#include <optional>
#include <unordered_map>
#include <vector>

#include "model_host/lower/analysis.h"

namespace qgpu::machine::lowering {

// Local simplification over straight-line code (between labels and
// terminators), tracking which definitions still hold their value:
//   - commutative operations take an immediate as their second operand;
//   - (y & m1) & m2 becomes y & (m1 & m2), and (y & m) << k becomes y << k
//     when m keeps every bit the shift keeps;
//   - x - k becomes x + (-k), and (y + k1) + k2 becomes y + (k1 + k2), in
//     ALU additions and in the a + b of loads and stores;
//   - a load or store at [p + 0] where p = x + y (two registers) addresses
//     [x + y] itself, so the addition goes when nothing else reads p;
//   - a branch on x != 0 branches on x, one on x == 0 or on !p (p a
//     comparison) on x or p with its targets swapped, so the comparison
//     goes when nothing else reads it;
//   - an operation already computed on the same operands (none redefined
//     since) becomes a copy of that result (value numbering), which copy
//     propagation then removes.
void simplify_local(VCode& vc) {
  // This segment's definitions whose operands still hold, by register; the
  // registers each of them reads (to drop them when one is redefined); and
  // the first of them for each operation and operands (value numbering).
  // Hash maps: a segment of unrolled code holds tens of thousands.
  struct ValueKey {
    Op op;
    Operand a, b, c;
    bool operator==(const ValueKey& o) const {
      auto same = [](const Operand& x, const Operand& y) { return x.imm == y.imm && x.v == y.v; };
      return op == o.op && same(a, o.a) && same(b, o.b) && same(c, o.c);
    }
  };
  struct ValueHash {
    size_t operator()(const ValueKey& k) const {
      uint64_t h = uint64_t(k.op) * 0x9E3779B97F4A7C15ull;
      for (const Operand* o : {&k.a, &k.b, &k.c}) h = (h ^ (uint64_t(o->v) << 1 | o->imm)) * 0xBF58476D1CE4E5B9ull;
      return size_t(h ^ (h >> 31));
    }
  };
  std::unordered_map<uint32_t, Instr> live;
  std::unordered_map<uint32_t, std::vector<uint32_t>> readers;
  std::unordered_map<ValueKey, uint32_t, ValueHash> values;
  auto find = [&](uint32_t reg) -> const Instr* {
    auto it = live.find(reg);
    return it == live.end() ? nullptr : &it->second;
  };
  auto clear = [&] {
    live.clear();
    readers.clear();
    values.clear();
  };
  auto kill = [&](uint32_t reg) {
    auto it = live.find(reg);
    if (it == live.end()) return;
    const Instr& d = it->second;
    auto v = values.find(ValueKey{d.op, d.a, d.b, d.c});
    if (v != values.end() && v->second == reg) values.erase(v);
    live.erase(it);
  };
  auto reads = [](const Instr& d, uint32_t reg) {
    for (int k = 0; k < op_info(d.op).arity; ++k)
      if (!d.src(k).imm && d.src(k).v == reg) return true;
    return false;
  };
  auto same = [](const Operand& x, const Operand& y) { return x.imm == y.imm && x.v == y.v; };
  auto commutative = [](Op o) {
    return o == Op::ADD || o == Op::MUL || o == Op::AND || o == Op::OR || o == Op::XOR || o == Op::MIN ||
           o == Op::MAX || o == Op::MINU || o == Op::MAXU || o == Op::SEQ || o == Op::SNE;
  };
  // Whether reg holds 0 or 1: a comparison, x & 1, x >> 31, or p ^ 1 of such a p.
  auto is_predicate = [&](uint32_t reg) {
    const Instr* d = find(reg);
    while (d && d->op == Op::XOR && same(d->b, K(1)) && !d->a.imm) d = find(d->a.v);
    return d && (d->op == Op::SEQ || d->op == Op::SNE || d->op == Op::SLT || d->op == Op::SLE ||
                 d->op == Op::SLTU || d->op == Op::SLEU || (d->op == Op::AND && same(d->b, K(1))) ||
                 (d->op == Op::SHR && same(d->b, K(31))));
  };
  const Cfg cfg = build_cfg(vc.code, vc.nlabels);
  for (uint32_t i = 0, b = 0; i < vc.code.size(); ++i) {
    if (b + 1 < cfg.blocks() && i == cfg.starts[b + 1]) {
      // A block that only the one before it enters (falling through, or by
      // its jmp, bar or wbar) continues its segment: registers keep their
      // values across barriers.
      ++b;
      if (!(cfg.pred[b].size() == 1 && cfg.pred[b][0] == b - 1 && vc.code[i - 1].kind != VI::Br)) clear();
    }
    VI& v = vc.code[i];
    if (v.kind == VI::Br) {
      // A branch on x != 0 branches on x; on x == 0 or on !p (p 0 or 1,
      // p ^ 1), on x or p with the targets swapped.
      for (const Instr* d; (d = find(v.cond)) && !d->a.imm && d->b.imm;) {
        const bool on_x = (d->op == Op::SNE || d->op == Op::SEQ) && d->b.v == 0;
        const bool not_p = d->op == Op::XOR && d->b.v == 1 && is_predicate(d->a.v);
        if (!on_x && !not_p) break;
        if (d->op != Op::SNE) std::swap(v.l1, v.l2);
        v.cond = d->a.v;
      }
    }
    if (v.kind != VI::Ins) continue;
    Instr& in = v.in;
    const bool alu = op_info(in.op).kind == OpKind::Alu;
    const bool access = in.op == Op::LD || in.op == Op::ST;
    if ((access || (alu && commutative(in.op))) && in.a.imm && !in.b.imm) std::swap(in.a, in.b);
    if (alu && in.op == Op::SUB && !in.a.imm && in.b.imm) {
      in.op = Op::ADD;
      in.b = K(0u - in.b.v);
    }
    if ((access || (alu && in.op == Op::ADD)) && !in.a.imm && in.b.imm) {
      const Instr* inner = find(in.a.v);
      if (inner && inner->op == Op::ADD && !inner->a.imm && inner->b.imm) {
        in.b = K(inner->b.v + in.b.v);
        in.a = inner->a;
      }
    }
    if (access && !in.a.imm && in.b.imm && in.b.v == 0) {
      const Instr* inner = find(in.a.v);
      if (inner && inner->op == Op::ADD && !inner->a.imm && !inner->b.imm) {
        in.a = inner->a;
        in.b = inner->b;
      }
    }
    if (alu && !in.a.imm && in.b.imm) {
      const Instr* inner = find(in.a.v);
      if (inner && inner->op == Op::AND && !inner->a.imm && inner->b.imm) {
        const uint32_t m = inner->b.v;
        if (in.op == Op::AND) {
          in.a = inner->a;
          in.b = K(m & in.b.v);
        } else if (in.op == Op::SHL && in.b.v < 32 && (m | ~(~0u >> in.b.v)) == ~0u) {
          in.a = inner->a;
        }
      }
    }
    if (alu && in.op != Op::MOV) {
      auto v = values.find(ValueKey{in.op, in.a, in.b, in.c});
      if (v != values.end()) in = Instr{Op::MOV, in.dst, R(v->second), K(0), K(0)};
    }
    if (!in.writes_reg()) continue;
    const uint32_t dst = in.dst;
    kill(dst);
    if (auto r = readers.find(dst); r != readers.end()) {
      for (uint32_t reader : r->second)
        if (const Instr* d = find(reader); d && reads(*d, dst)) kill(reader);
      readers.erase(r);
    }
    bool reads_dst = false;
    for (auto* o : sources(in)) reads_dst |= o->v == dst;
    if (alu && !reads_dst) {
      live[dst] = in;
      values.emplace(ValueKey{in.op, in.a, in.b, in.c}, dst);
      for (auto* o : sources(in)) readers[o->v].push_back(dst);
    }
  }
}

}  // namespace qgpu::machine::lowering
