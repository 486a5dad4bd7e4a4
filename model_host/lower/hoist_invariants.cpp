// Loop-invariant code motion over virtual code (optimize.h).
#include "model_host/lower/optimize.h"

#include <algorithm>
#include <optional>
#include <vector>

#include "model_host/lower/analysis.h"

namespace qgpu::machine::lowering {

// Loop-invariant code motion.  A loop is the run of blocks from a header h
// to the last block that branches back to it (blocks are in code order),
// entered only through h, from the block just before it.  An ALU operation
// (or a native float operation, OpKind::Float, as pure) in it whose destination has no other definition anywhere and whose
// register operands have no definition in the loop computes the same value
// on every iteration: it moves to the end of the block before h (ALU
// operations never fault, so running one the loop might have skipped is
// harmless).  Inner loops go first, so a value can leave several levels.
// Returns how many instructions moved: at most max_hoisted.
uint32_t hoist_invariants(VCode& vc, uint32_t max_hoisted) {
  std::vector<uint32_t> defs(vc.nvregs, 0);
  for (const VI& v : vc.code)
    if (v.kind == VI::Ins && v.in.writes_reg()) defs[v.in.dst]++;
  uint32_t moved_count = 0;
  for (bool moved = true; moved;) {
    moved = false;
    const Cfg cfg = build_cfg(vc.code, vc.nlabels);
    const uint32_t nb = cfg.blocks();
    const std::vector<std::vector<uint32_t>>& pred = cfg.pred;
    // Loops (h, tail), the shortest first.
    std::vector<std::pair<uint32_t, uint32_t>> loops;
    for (uint32_t h = 1; h < nb; ++h) {
      uint32_t tail = h;
      bool back = false;
      for (uint32_t q : pred[h])
        if (q >= h) tail = std::max(tail, q), back = true;
      if (back) loops.push_back({h, tail});
    }
    std::stable_sort(loops.begin(), loops.end(),
                     [](const auto& x, const auto& y) { return x.second - x.first < y.second - y.first; });
    for (const auto& [h, tail] : loops) {
      bool closed = cfg.succ[h - 1].size() == 1 && cfg.succ[h - 1][0] == h;
      for (uint32_t b = h; b <= tail && closed; ++b)
        for (uint32_t q : pred[b])
          if ((q < h || q > tail) && !(b == h && q == h - 1)) closed = false;
      if (!closed) continue;
      const uint32_t begin = cfg.starts[h], end = cfg.end(tail);
      std::vector<bool> in_loop(vc.nvregs, false);
      for (uint32_t i = begin; i < end; ++i)
        if (vc.code[i].kind == VI::Ins && vc.code[i].in.writes_reg()) in_loop[vc.code[i].in.dst] = true;
      std::vector<Instr> hoisted;
      std::vector<VI> body;
      for (uint32_t i = begin; i < end; ++i) {
        const VI& v = vc.code[i];
        bool invariant = v.kind == VI::Ins && (op_info(v.in.op).kind == OpKind::Alu || op_info(v.in.op).kind == OpKind::Float) && v.in.writes_reg() &&
                         defs[v.in.dst] == 1 && !(v.in.dst < vc.cold.size() && vc.cold[v.in.dst]);
        if (invariant)
          for (const Operand* o : sources(v.in)) invariant &= !in_loop[o->v];
        if (invariant && moved_count + hoisted.size() < max_hoisted) {
          hoisted.push_back(v.in);
          in_loop[v.in.dst] = false;
        } else {
          body.push_back(v);
        }
      }
      if (hoisted.empty()) continue;
      // The end of the block before h: before its jump to h, if it has one.
      uint32_t at = begin;
      if (vc.code[at - 1].kind != VI::Ins && vc.code[at - 1].kind != VI::Label) --at;
      std::vector<VI> out(vc.code.begin(), vc.code.begin() + at);
      for (const Instr& in : hoisted) out.push_back({VI::Ins, in});
      out.insert(out.end(), vc.code.begin() + at, vc.code.begin() + begin);
      out.insert(out.end(), body.begin(), body.end());
      out.insert(out.end(), vc.code.begin() + end, vc.code.end());
      vc.code = std::move(out);
      moved_count += static_cast<uint32_t>(hoisted.size());
      moved = true;
      break;  // the blocks moved: find the loops again
    }
  }
  return moved_count;
}

}  // namespace qgpu::machine::lowering
