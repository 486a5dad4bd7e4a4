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
}

}  // namespace qgpu::machine::lowering
