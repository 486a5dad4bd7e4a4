// Register allocation of virtual code (allocate.h).
#include "model_host/lower/allocate.h"

#include <algorithm>
#include <set>

#include "model_host/lower/analysis.h"

namespace qgpu::machine::lowering {

// ---- pass 2: register allocation -------------------------------------------------

Allocation allocate(const VCode& vc, uint32_t regs, uint32_t& local_top) {
  // One scratch register per source of the instruction with the most.
  uint32_t scratch = kSpillScratch;
  for (const VI& v : vc.code)
    if (v.kind == VI::Ins) scratch = std::max<uint32_t>(scratch, op_info(v.in.op).arity);
  const uint32_t allocatable = regs - scratch;
  // Basic blocks of the virtual code.
  const Cfg cfg = build_cfg(vc.code, vc.nlabels);
  const std::vector<uint32_t>& starts = cfg.starts;
  const std::vector<std::vector<uint32_t>>& succ = cfg.succ;
  const uint32_t nb = cfg.blocks();
  auto end_of = [&](uint32_t b) { return cfg.end(b); };
  auto uses = [&](const VI& v, std::vector<uint32_t>& out) {
    out.clear();
    if (v.kind == VI::Ins)
      for (auto* o : sources(v.in)) out.push_back(o->v);
    if (v.kind == VI::Br) out.push_back(v.cond);
  };
  auto def = [&](const VI& v) -> uint32_t { return v.kind == VI::Ins && v.in.writes_reg() ? v.in.dst : kNoV; };
  // Liveness (live-in sets per basic block), iterated to a fixed point.
  std::vector<std::set<uint32_t>> live_in(nb);
  std::vector<uint32_t> tmp;
  for (bool changed = true; changed;) {
    changed = false;
    for (uint32_t b = nb; b-- > 0;) {
      std::set<uint32_t> live;
      for (uint32_t s : succ[b]) live.insert(live_in[s].begin(), live_in[s].end());
      for (uint32_t i = end_of(b); i-- > starts[b];) {
        uint32_t d = def(vc.code[i]);
        if (d != kNoV) live.erase(d);
        uses(vc.code[i], tmp);
        live.insert(tmp.begin(), tmp.end());
      }
      if (live != live_in[b]) {
        live_in[b] = std::move(live);
        changed = true;
      }
    }
  }
  // Intervals [first, last] of positions where each vreg is live or touched.
  std::vector<uint32_t> first(vc.nvregs, UINT32_MAX), last(vc.nvregs, 0);
  auto touch = [&](uint32_t v, uint32_t i) {
    first[v] = std::min(first[v], i);
    last[v] = std::max(last[v], i);
  };
  for (uint32_t b = 0; b < nb; ++b) {
    std::set<uint32_t> live;
    for (uint32_t s : succ[b]) live.insert(live_in[s].begin(), live_in[s].end());
    for (uint32_t i = end_of(b); i-- > starts[b];) {
      for (uint32_t v : live) touch(v, i);
      uint32_t d = def(vc.code[i]);
      if (d != kNoV) {
        touch(d, i);
        live.erase(d);
      }
      uses(vc.code[i], tmp);
      for (uint32_t v : tmp) {
        touch(v, i);
        live.insert(v);
      }
    }
    for (uint32_t v : live) touch(v, starts[b]);
  }
  // Linear scan.
  bool spilled = false;
  std::vector<uint32_t> order;
  for (uint32_t v = 0; v < vc.nvregs; ++v)
    if (first[v] != UINT32_MAX) order.push_back(v);
  std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return first[a] < first[b]; });
  std::vector<uint32_t> where(vc.nvregs, kNoV), spill(vc.nvregs, kNoV);
  std::vector<uint32_t> active;  // vregs holding a register
  std::vector<uint32_t> free_regs;
  for (uint32_t r = allocatable; r-- > 0;) free_regs.push_back(r);
  for (uint32_t v : order) {
    for (size_t k = 0; k < active.size();) {
      if (last[active[k]] < first[v]) {
        free_regs.push_back(where[active[k]]);
        active[k] = active.back();
        active.pop_back();
      } else {
        ++k;
      }
    }
    // A copy `mov v, s` that ends s's interval and starts v's: v takes s's
    // register, and the copy disappears (coalescing).
    if (const VI& at = vc.code[first[v]]; at.kind == VI::Ins && at.in.op == Op::MOV && !at.in.a.imm &&
                                        at.in.dst == v && last[at.in.a.v] == first[v]) {
      const uint32_t s = at.in.a.v;
      auto it = std::find(active.begin(), active.end(), s);
      if (it != active.end()) {
        where[v] = where[s];
        *it = v;
        continue;
      }
    }
    if (!free_regs.empty()) {
      where[v] = free_regs.back();
      free_regs.pop_back();
      active.push_back(v);
      continue;
    }
    auto far =
        std::max_element(active.begin(), active.end(), [&](uint32_t a, uint32_t b) { return last[a] < last[b]; });
    if (last[*far] > last[v]) {
      where[v] = where[*far];
      spill[*far] = local_alloc(local_top, 4, 4);
      spilled = true;
      where[*far] = kNoV;
      *far = v;
    } else {
      spill[v] = local_alloc(local_top, 4, 4);
      spilled = true;
    }
  }
  // Rewrite with machine registers; spilled values go through the scratch registers.
  std::vector<VI> out;
  out.reserve(vc.code.size());
  const uint32_t scratch0 = allocatable;
  for (const VI& v0 : vc.code) {
    VI v = v0;
    std::vector<std::pair<uint32_t, uint32_t>> reloaded;  // vreg -> scratch
    auto map_use = [&](uint32_t vr) -> uint32_t {
      if (spill[vr] == kNoV) return where[vr];
      for (auto& [x, s] : reloaded)
        if (x == vr) return s;
      uint32_t s = scratch0 + uint32_t(reloaded.size());
      Instr l;
      l.op = Op::LD;
      l.dst = s;
      l.a = K(spill[vr]);
      l.b = K(0);
      l.space = Space::Local;
      out.push_back({VI::Ins, l});
      reloaded.push_back({vr, s});
      return s;
    };
    if (v.kind == VI::Ins) {
      int arity = op_info(v.in.op).arity;
      for (int k = 0; k < arity; ++k)
        if (!v.in.src(k).imm) v.in.src(k).v = map_use(v.in.src(k).v);
      if (v.in.writes_reg()) {
        uint32_t d = v.in.dst;
        if (spill[d] != kNoV) {
          v.in.dst = scratch0;
          out.push_back(v);
          Instr s;
          s.op = Op::ST;
          s.a = K(spill[d]);
          s.b = K(0);
          s.c = R(scratch0);
          s.space = Space::Local;
          out.push_back({VI::Ins, s});
          continue;
        }
        v.in.dst = where[d] == kNoV ? scratch0 : where[d];  // a dead definition
        if (v.in.op == Op::MOV && !v.in.a.imm && v.in.a.v == v.in.dst) continue;  // coalesced
      }
    } else if (v.kind == VI::Br) {
      v.cond = map_use(v.cond);
    }
    out.push_back(v);
  }
  return {std::move(out), spilled};
}

}  // namespace qgpu::machine::lowering
