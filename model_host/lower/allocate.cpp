// Register allocation of virtual code (allocate.h).
#include "model_host/lower/allocate.h"

#include <algorithm>
#include <iterator>
#include <stdexcept>
#include <string>

#include "model_host/lower/analysis.h"

namespace qgpu::machine::lowering {

// ---- pass 2: register allocation -------------------------------------------------

Allocation allocate(const VCode& vc, uint32_t regs, uint32_t& local_top) {
  // At most one scratch register per source of the instruction with the
  // most (fewer where no instruction reloads that many: below).
  uint32_t scratch = kSpillScratch;
  for (const VI& v : vc.code)
    if (v.kind == VI::Ins) scratch = std::max<uint32_t>(scratch, op_info(v.in.op).arity);
  if (regs <= scratch)
    throw std::invalid_argument("register allocation into " + std::to_string(regs) + " registers: " +
                                std::to_string(scratch) + " are reserved for reloads");
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
  // Liveness (live-in sets per basic block, sorted vectors), iterated to a
  // fixed point: live_in = gen + (live_out - kill), gen the block's uses
  // not after a def of theirs in it, kill its defs.
  std::vector<std::vector<uint32_t>> gen(nb), kill(nb), live_in(nb);
  std::vector<uint32_t> tmp;
  auto sort_unique = [](std::vector<uint32_t>& v) {
    std::sort(v.begin(), v.end());
    v.erase(std::unique(v.begin(), v.end()), v.end());
  };
  std::vector<uint32_t> defined_in(vc.nvregs, UINT32_MAX);  // the block that last defined each vreg so far
  for (uint32_t b = 0; b < nb; ++b) {
    std::vector<uint32_t> defs;
    for (uint32_t i = starts[b]; i < end_of(b); ++i) {
      uses(vc.code[i], tmp);
      for (uint32_t u : tmp)
        if (defined_in[u] != b) gen[b].push_back(u);
      if (uint32_t d = def(vc.code[i]); d != kNoV) {
        defs.push_back(d);
        defined_in[d] = b;
      }
    }
    sort_unique(gen[b]);
    sort_unique(defs);
    kill[b] = std::move(defs);
  }
  auto live_out = [&](uint32_t b) {
    std::vector<uint32_t> out, merged;
    for (uint32_t s : succ[b]) {
      merged.clear();
      std::set_union(out.begin(), out.end(), live_in[s].begin(), live_in[s].end(), std::back_inserter(merged));
      out.swap(merged);
    }
    return out;
  };
  for (bool changed = true; changed;) {
    changed = false;
    for (uint32_t b = nb; b-- > 0;) {
      const std::vector<uint32_t> out = live_out(b);
      std::vector<uint32_t> rest, in;
      std::set_difference(out.begin(), out.end(), kill[b].begin(), kill[b].end(), std::back_inserter(rest));
      std::set_union(gen[b].begin(), gen[b].end(), rest.begin(), rest.end(), std::back_inserter(in));
      if (in != live_in[b]) {
        live_in[b] = std::move(in);
        changed = true;
      }
    }
  }
  // Intervals [first, last] of positions where each vreg is live or touched.
  // Within a block a vreg is live over one run of positions (from its last
  // use or the block's end back to its def or the block's start), so
  // touching the run's ends is touching all of it.
  std::vector<uint32_t> first(vc.nvregs, UINT32_MAX), last(vc.nvregs, 0);
  auto touch = [&](uint32_t v, uint32_t i) {
    first[v] = std::min(first[v], i);
    last[v] = std::max(last[v], i);
  };
  std::vector<char> is_live(vc.nvregs, 0);
  std::vector<uint32_t> live;
  for (uint32_t b = 0; b < nb; ++b) {
    live = live_out(b);
    for (uint32_t v : live) {
      is_live[v] = 1;
      if (end_of(b) > starts[b]) touch(v, end_of(b) - 1);
    }
    for (uint32_t i = end_of(b); i-- > starts[b];) {
      uint32_t d = def(vc.code[i]);
      if (d != kNoV) {
        touch(d, i);
        is_live[d] = 0;
      }
      uses(vc.code[i], tmp);
      for (uint32_t v : tmp) {
        touch(v, i);
        if (!is_live[v]) {
          is_live[v] = 1;
          live.push_back(v);
        }
      }
    }
    for (uint32_t v : live)
      if (is_live[v]) {
        touch(v, starts[b]);
        is_live[v] = 0;
      }
  }
  // Values the allocator may recompute at each use instead of keeping them
  // in local memory: defined once, at the start of their interval, by an
  // instruction whose result is the same wherever the thread runs it: of no
  // register source (a constant, the thread's lane, warp or CTA, a kernel
  // parameter word at a constant offset where nothing writes parameters), or
  // an ALU operation of one such value and constants (a chain, such as
  // `(warp >> 5) * 128 + As`), recomputed link by link in one reload
  // register.  remat[v] is that instruction's position.
  std::vector<uint32_t> remat(vc.nvregs, kNoV);
  {
    std::vector<uint32_t> defs(vc.nvregs, 0);
    bool params_written = false;
    for (const VI& v : vc.code) {
      if (v.kind != VI::Ins) continue;
      if (uint32_t d = def(v); d != kNoV) ++defs[d];
      const OpKind k = op_info(v.in.op).kind;
      params_written |= (k == OpKind::Store || k == OpKind::Atomic) && v.in.space == Space::Param;
    }
    // In code order: a link's source is defined before it (its interval,
    // which holds the link's position, starts at its definition).
    for (uint32_t i = 0; i < vc.code.size(); ++i) {
      const VI& v = vc.code[i];
      const uint32_t d = def(v);
      if (d == kNoV || defs[d] != 1 || first[d] != i) continue;
      const Instr& in = v.in;
      const std::vector<const Operand*> srcs = sources(in);
      const bool same_everywhere =
          (in.op == Op::MOV && in.a.imm) || in.op == Op::LANE || in.op == Op::WARP || in.op == Op::CTA ||
          (in.op == Op::LD && in.space == Space::Param && in.a.imm && in.b.imm && !params_written) ||
          (op_info(in.op).kind == OpKind::Alu && srcs.size() == 1 && remat[srcs[0]->v] != kNoV);
      if (same_everywhere) remat[d] = i;
    }
  }
  constexpr uint32_t kRecomputed = kNoV - 1;  // spill[v] of a value recomputed at its uses

  // Linear scan into `allocatable` registers.
  std::vector<uint32_t> order;
  for (uint32_t v = 0; v < vc.nvregs; ++v)
    if (first[v] != UINT32_MAX) order.push_back(v);
  std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return first[a] < first[b]; });
  bool spilled = false;
  std::vector<uint32_t> where, spill;
  const uint32_t local_base = local_top;
  auto scan = [&](uint32_t allocatable) {
    spilled = false;
    local_top = local_base;
    where.assign(vc.nvregs, kNoV);
    spill.assign(vc.nvregs, kNoV);
    std::vector<uint32_t> active;  // vregs holding a register
    std::vector<uint32_t> free_regs;
    for (uint32_t r = allocatable; r-- > 0;) free_regs.push_back(r);
    // Spill slots, each with the last position of the vreg that holds it: a
    // vreg spilled whole needs a slot over all of [first, last], so it takes
    // one whose holder's interval ended before its first (local memory is
    // small on a machine whose CTAs share one store: docs/isa.md).
    std::vector<std::pair<uint32_t, uint32_t>> slots;  // (local offset, holder's last position)
    auto spill_slot = [&](uint32_t x) {
      for (auto& [offset, held_until] : slots)
        if (held_until < first[x]) {
          held_until = last[x];
          return offset;
        }
      slots.push_back({local_alloc(local_top, 4, 4), last[x]});
      return slots.back().first;
    };
    auto spill_key = [&](uint32_t x) { return std::pair<bool, uint32_t>(remat[x] != kNoV, last[x]); };
    auto spill_whole = [&](uint32_t x) {
      if (remat[x] != kNoV) {
        spill[x] = kRecomputed;
      } else {
        spill[x] = spill_slot(x);
        spilled = true;
      }
    };
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
      // Out of registers: spill a value that can be recomputed if there is
      // one (no local memory, no store), else the one whose interval ends last.
      auto far = std::max_element(active.begin(), active.end(),
                                  [&](uint32_t a, uint32_t b) { return spill_key(a) < spill_key(b); });
      if (spill_key(*far) > spill_key(v)) {
        where[v] = where[*far];
        spill_whole(*far);
        where[*far] = kNoV;
        *far = v;
      } else {
        spill_whole(v);
      }
    }
  };
  // The fewest reserved registers that suffice: a scan into regs - k
  // registers is kept when no instruction reloads more than k spilled values
  // (each reload takes a reserved register; a spilled definition the
  // first), so a machine of few registers (a thread's share of a register
  // file split among 1024 threads: 8) reserves only what its code needs.
  auto reloads_needed = [&] {
    uint32_t most = 0;
    std::vector<uint32_t> seen;
    for (const VI& v : vc.code) {
      seen.clear();
      if (v.kind == VI::Ins) {
        for (const Operand* o : sources(v.in))
          if (spill[o->v] != kNoV && std::find(seen.begin(), seen.end(), o->v) == seen.end()) seen.push_back(o->v);
      } else if (v.kind == VI::Br && spill[v.cond] != kNoV) {
        seen.push_back(v.cond);
      }
      most = std::max<uint32_t>(most, uint32_t(seen.size()));
    }
    return most;
  };
  uint32_t reserved = scratch;  // the safe count: as many as the widest instruction reads
  for (uint32_t k = 1; k < scratch; ++k) {
    scan(regs - k);
    if (reloads_needed() <= k) {
      reserved = k;
      break;
    }
  }
  if (reserved == scratch) scan(regs - scratch);
  const uint32_t allocatable = regs - reserved;

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
      if (spill[vr] == kRecomputed) {  // the chain's links from its first, each into s
        std::vector<uint32_t> chain{remat[vr]};
        for (std::vector<const Operand*> srcs; !(srcs = sources(vc.code[chain.back()].in)).empty();)
          chain.push_back(remat[srcs[0]->v]);
        for (size_t j = chain.size(); j-- > 0;) {
          Instr again = vc.code[chain[j]].in;
          for (int k = 0; k < op_info(again.op).arity; ++k)
            if (!again.src(k).imm) again.src(k).v = s;
          again.dst = s;
          out.push_back({VI::Ins, again});
        }
        reloaded.push_back({vr, s});
        return s;
      }
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
        if (spill[d] == kRecomputed) continue;  // each use computes it
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
