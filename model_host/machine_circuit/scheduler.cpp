#include "model_host/machine_circuit/scheduler.h"

#include <algorithm>

namespace qgpu::gpu::mc {

Schedule scheduler_stage(Builder& b, const Context& c, const Rom& r, const Registers& regs) {
  Program& p = b.p;
  const Digits& P = c.P;
  const Digits& cur_w = c.cur_w;
  Schedule s;
  // The scheduler's work follows the register reads: it is needed only by
  // the output, and beside the reads the residual is full.
  const size_t first = p.ops().size();
  // Thread table: per thread of the CTA, how it stopped (0 never, 1 exit,
  // 2 bar, 3 wbar), the epoch it waits in, and where it continues.
  const ValueId stops = b.flag("stops", r.tkind, [](int k) { return k == kExit || k == kBar || k == kWbar; });
  // (A faulting access ends the launch, so whether its block's terminator
  // also updates the table does not matter: the table does not wait for the
  // address checks.)
  const ValueId ctrl_here = p.lookup("ctrl_here", 2, {c.pass, r.has_dst}, [](const std::vector<int>& v) {
    return v[0] == kCtrl || (v[0] == kExec && !v[1]) ? 1 : 0;
  });
  const ValueId stop_pass = b.all("stop_pass", {ctrl_here, stops});
  const ValueId status = circuit::apply(p, "status", 4, r.tkind,
                                       [](int k) { return k == kExit ? 1 : k == kBar ? 2 : k == kWbar ? 3 : 0; });
  // Read at thread w on WARP(w); elsewhere at the thread after the current
  // one, for WARPS (where the current thread stops, whether the next one
  // runs from the block the scan's last thread run began at).
  // (On WARP(w) the current thread is w: the key is the current thread, plus
  // one unless the token is WARP.)
  const ValueId is_warp = b.is_kind(Kind::WARP), is_wmin = b.is_kind(Kind::WMIN);
  const Digits w_key = increment(b, "thread_key", cur_w, b.lnot("not_warp", is_warp));
  s.cur_w_next = w_key;  // where it is read (a thread stops; WMIN), the token is not WARP
  const auto ws = store(b, "threads", 1024, Builder::bits(cur_w, 0, 10), Builder::bits(w_key, 0, 10), stop_pass,
                        c.is_cta, cat({{status, 0}, {c.epoch, 0}}, digit_parts(r.t_target)));
  const ValueId ws_status = ws[0], ws_epoch = ws[1];
  s.ws_pc = outs(ws, 2, 3);
  const ValueId is_barrier = b.is_kind(Kind::BARRIER);
  const ValueId bar_stop = b.all("bar_stop", {stop_pass, b.flag("tk_bar", r.tkind, [](int k) { return k == kBar; })});
  s.barf = store(b, "barrier_waiting", 1, {}, {}, b.any("barf_we", {bar_stop, is_barrier}), c.is_cta,
                 {{b.lnot("barf_set", is_barrier), 0}})[0];

  const Digits w_in = slice(P, 0, 3);
  s.w_is_end = circuit::equal(p, "w_is_end", b.word(w_in), b.word(c.n_threads));

  // Warp groups (docs/tokens.md section 4): the running minimum of the group
  // the scan is in (the last WMIN since the WARP that entered it), whether
  // this pass wrote a WMIN, and per group the release pc the last pass left:
  // the running minimum as the scan leaves the group (read one token later,
  // on the WARP that leaves it, through the conv).
  const ValueId group_start = p.lookup("group_start", 2, {b.kind, b.pay[0], b.pay[1]}, [](const std::vector<int>& v) {
    return v[0] == int(Kind::WARP) && v[1] == 0 && v[2] % 2 == 0 ? 1 : 0;
  });
  const ValueId warp0 = b.all("warp0", {is_warp, is_zero(b, "pay_zero", P)});
  const auto wm = store(b, "wmin", 1, {}, {}, is_wmin, group_start, cat({{is_wmin, 0}}, payload_parts(b, 3, 0)));
  const ValueId wm_valid = wm[0];
  const Digits wm_pc = outs(wm, 1, 3);
  s.wmin_pass = store(b, "wmin_pass", 1, {}, {}, b.any("wmin_pass_we", {is_wmin, warp0}), -1, {{is_wmin, 0}})[0];
  // WARP(w) leaves group (w - 1) / 32 when w % 32 == 0 (w > 0) or w == threads.
  std::vector<Term> left_terms{{b.pay[0], 0, -1}};
  for (int k = 1; k < 16; ++k) left_terms.push_back({b.pay[1], k, 16 * k});
  for (int k = 1; k <= 4; ++k) left_terms.push_back({b.pay[2], k, 256 * k});
  const ValueId group_left = p.ladder("group_left", 32, left_terms, 0, [](int k) { return std::clamp(k, 0, 1023) / 32; });
  const ValueId leaves = p.lookup("group_leaves", 2, {is_warp, group_start, warp0, s.w_is_end},
                                  [](const std::vector<int>& v) { return v[0] && ((v[1] && !v[2]) || v[3]) ? 1 : 0; });
  // Per group (32 of them: 1024 threads), read at the group of the thread
  // the table is read at (bits 5..9 of the key).
  std::vector<AddrBit> rel_w, rel_r{{w_key[1].v, 1}, {w_key[1].v, 2}, {w_key[1].v, 3}, {w_key[2].v, 0}, {w_key[2].v, 1}};
  for (int i = 0; i < 5; ++i) rel_w.push_back({group_left, i});
  const auto rel = store(b, "wmin_release", 32, rel_w, rel_r, leaves, c.is_cta,
                         {{wm_valid, 1}, {wm_pc[0].v, 1}, {wm_pc[1].v, 1}, {wm_pc[2].v, 1}});
  const ValueId released =
      b.all("released", {rel[0], circuit::equal(p, "rel_eq", b.word(s.ws_pc), b.word(outs(rel, 1, 3)))});
  auto below_wmin = [&](const std::string& name, const Digits& pc) {
    const ValueId lt = circuit::less_than(p, name + ".lt", b.word(pc), b.word(wm_pc));
    return p.lookup(name, 2, {wm_valid, lt}, [](const std::vector<int>& v) { return !v[0] || v[1] ? 1 : 0; });
  };
  s.wmin_ws = b.all("wmin_ws", {b.flag("ws_wbar", ws_status, [](int k) { return k == 3; }),
                                below_wmin("ws_below", s.ws_pc)});
  s.wmin_t = below_wmin("t_below", r.t_target);

  s.runnable = p.lookup("runnable", 2, {ws_status, ws_epoch, c.epoch, released}, [](const std::vector<int>& v) {
    return v[0] == 0 || (v[0] == 2 && v[1] != v[2]) || (v[0] == 3 && v[3]) ? 1 : 0;
  });
  s.w_next = increment(b, "w_next", w_in);
  // WARPS(w + 1) after the current thread w stops: w + 1 is a thread of the
  // CTA, not the first of its warp group (the scan's group bookkeeping is on
  // WARP), runnable (the table read at w + 1 above), and it continues at the
  // block the last thread run began at.
  const ValueId next_is_end = circuit::equal(p, "next_is_end", b.word(w_key), b.word(c.n_threads));
  const ValueId next_group_start = p.lookup("next_group_start", 2, {w_key[0].v, w_key[1].v},
                                            [](const std::vector<int>& v) { return v[0] == 0 && v[1] % 2 == 0 ? 1 : 0; });
  const ValueId same_start = circuit::equal(p, "next_same_start", b.word(s.ws_pc), b.word(c.start_pc));
  s.warps_next = p.lookup("warps_next", 2, {next_is_end, next_group_start, s.runnable, same_start},
                          [](const std::vector<int>& v) { return !v[0] && !v[1] && v[2] && v[3] ? 1 : 0; });
  s.cta_next = increment(b, "cta_next", c.cur_c);
  s.cta_more = circuit::less_than(p, "cta_more", b.word(s.cta_next), b.word(c.n_ctas));
  s.cond_nz = b.lnot("cond_nz", is_zero(b, "cond_zero", regs.regA));
  s.c_nz = b.lnot("c_nz", is_zero(b, "c_zero", regs.regC));
  p.wait_for(first, regs.regC.back().v);
  return s;
}

}  // namespace qgpu::gpu::mc
