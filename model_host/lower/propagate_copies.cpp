// Copy propagation over virtual code (optimize.h).
#include "model_host/lower/optimize.h"

#include <algorithm>
#include <optional>
#include <vector>

#include "model_host/lower/analysis.h"

namespace qgpu::machine::lowering {

// Forwards copies `mov d, s` where d and s each have one definition, s's
// before the copy, and every use of d follows the copy: uses of d read s
// instead, and dead-code removal drops the copy.
void propagate_copies(VCode& vc) {
  const uint32_t none = UINT32_MAX;
  std::vector<uint32_t> defs(vc.nvregs, 0), def_at(vc.nvregs, none), first_use(vc.nvregs, none);
  for (uint32_t i = 0; i < vc.code.size(); ++i) {
    const VI& v = vc.code[i];
    if (v.kind == VI::Ins) {
      for (auto* o : sources(v.in))
        if (first_use[o->v] == none) first_use[o->v] = i;
      if (v.in.writes_reg()) {
        defs[v.in.dst]++;
        def_at[v.in.dst] = i;
      }
    }
    if (v.kind == VI::Br && first_use[v.cond] == none) first_use[v.cond] = i;
  }
  std::vector<uint32_t> repl(vc.nvregs, none);
  for (uint32_t i = 0; i < vc.code.size(); ++i) {
    const VI& v = vc.code[i];
    if (v.kind != VI::Ins || v.in.op != Op::MOV || v.in.a.imm) continue;
    uint32_t d = v.in.dst, src = v.in.a.v;
    while (repl[src] != none) src = repl[src];
    if (defs[d] == 1 && defs[src] == 1 && def_at[src] < i && (first_use[d] == none || first_use[d] > i)) repl[d] = src;
  }
  auto map = [&](uint32_t x) {
    while (repl[x] != none) x = repl[x];
    return x;
  };
  for (VI& v : vc.code) {
    if (v.kind == VI::Ins) {
      for (int k = 0; k < op_info(v.in.op).arity; ++k)
        if (Operand& o = v.in.src(k); !o.imm) o.v = map(o.v);
    }
    if (v.kind == VI::Br) v.cond = map(v.cond);
  }

  // Within straight-line code: a copy `mov d, s` (d defined once) whose every
  // use follows it with no label and no definition of s in between (s may
  // be defined elsewhere: a loop's variable, copied for an address) is
  // forwarded too.  A loop body that copies its counter before the
  // increment thus reads the counter itself.
  std::vector<uint32_t> uses(vc.nvregs, 0);
  for (const VI& v : vc.code) {
    if (v.kind == VI::Ins)
      for (auto* o : sources(v.in)) uses[o->v]++;
    if (v.kind == VI::Br) uses[v.cond]++;
  }
  for (uint32_t i = 0; i < vc.code.size(); ++i) {
    const VI& c = vc.code[i];
    if (c.kind != VI::Ins || c.in.op != Op::MOV || c.in.a.imm) continue;
    const uint32_t d = c.in.dst, s = c.in.a.v;
    if (defs[d] != 1 || d == s || uses[d] == 0) continue;
    std::vector<std::pair<uint32_t, int>> at;  // (position, operand index; -1: a branch's condition)
    for (uint32_t j = i + 1; j < vc.code.size(); ++j) {
      const VI& v = vc.code[j];
      if (v.kind == VI::Label) break;
      if (v.kind == VI::Ins) {
        for (int k = 0; k < op_info(v.in.op).arity; ++k)
          if (const Operand& o = v.in.src(k); !o.imm && o.v == d) at.push_back({j, k});
        if (v.in.writes_reg() && v.in.dst == s) break;
      } else if (v.kind == VI::Br) {
        if (v.cond == d) at.push_back({j, -1});
      } else {
        break;  // jmp, exit, bar, wbar, trap: the straight line ends
      }
    }
    if (at.size() != uses[d]) continue;
    for (auto [j, k] : at) {
      if (k < 0)
        vc.code[j].cond = s;
      else
        vc.code[j].in.src(k).v = s;
    }
    uses[s] += uses[d];
    uses[d] = 0;
  }
}

}  // namespace qgpu::machine::lowering
