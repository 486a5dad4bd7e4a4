// Removal of unreachable blocks and dead instructions from virtual code (optimize.h).
#include "model_host/lower/optimize.h"

#include <algorithm>
#include <optional>
#include <vector>

#include "model_host/lower/analysis.h"

namespace qgpu::machine::lowering {

// Removes the blocks no path from the entry reaches (behind a branch whose
// condition the known bits decided).
void remove_unreachable(VCode& vc) {
  const Cfg cfg = build_cfg(vc.code, vc.nlabels);
  std::vector<bool> reached(cfg.blocks(), false);
  std::vector<uint32_t> work;
  if (cfg.blocks() > 0) {
    reached[0] = true;
    work.push_back(0);
  }
  while (!work.empty()) {
    const uint32_t b = work.back();
    work.pop_back();
    for (uint32_t s : cfg.succ[b])
      if (!reached[s]) {
        reached[s] = true;
        work.push_back(s);
      }
  }
  std::vector<VI> kept;
  kept.reserve(vc.code.size());
  for (uint32_t b = 0; b < cfg.blocks(); ++b)
    if (reached[b]) kept.insert(kept.end(), vc.code.begin() + cfg.starts[b], vc.code.begin() + cfg.end(b));
  vc.code = std::move(kept);
}

// Removes instructions whose result nothing reads (loads included; stores
// and atomics stay).  This is what drops the high words of 64-bit address
// arithmetic: memory operations read only the low word of an address.
void remove_dead_code(VCode& vc) {
  for (bool changed = true; changed;) {
    changed = false;
    std::vector<uint32_t> uses(vc.nvregs, 0);
    for (const VI& v : vc.code) {
      if (v.kind == VI::Ins)
        for (auto* o : sources(v.in)) uses[o->v]++;
      if (v.kind == VI::Br) uses[v.cond]++;
    }
    size_t out = 0;
    for (size_t i = 0; i < vc.code.size(); ++i) {
      const VI& v = vc.code[i];
      bool dead = v.kind == VI::Ins && !is_mem_write(v.in) && uses[v.in.dst] == 0;
      if (dead) {
        changed = true;
        continue;
      }
      vc.code[out++] = v;
    }
    vc.code.resize(out);
  }
}

}  // namespace qgpu::machine::lowering
