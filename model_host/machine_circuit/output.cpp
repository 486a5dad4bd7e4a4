#include "model_host/machine_circuit/output.h"

#include <algorithm>
#include <stdexcept>

namespace qgpu::gpu::mc {

namespace {

enum Out { kEnd, kFault, kVz, kVlo, kHiTok, kExecT, kExecF, kExecWs, kWarpCur, kWarpIn, kWarp0, kTrapTok, kBarrier,
           kCtaNext, kCta0, kWminWs, kWminT, kVxT, kVxF, kVg, kVn, kVzf, kVgf, kVnf, kHiFall, kVh, kVhf,
           kVlo1, kVlo2, kVlo3, kVlo4, kVlo5, kVlo6, kWarpsNext, kOutCount };
// The low half of a value after n fall-through values (VLO, VLO1 .. VLO6).
constexpr Out vlo_out(int n) { return n == 0 ? kVlo : Out(int(kVlo1) + n - 1); }

// The cases the terminator and a WARP pass choose among, as categoricals of
// their own (their slot i is the case kCtrlOuts[i], kWarpOuts[i]): both are
// chosen early and stay in the residual while the ALU works, where every
// dimension counts.
constexpr Out kCtrlOuts[] = {kEnd, kExecT, kExecF, kWarpCur, kWarpsNext, kWminT, kTrapTok};
constexpr Out kWarpOuts[] = {kEnd, kExecWs, kWminWs, kWarpIn, kWarp0, kBarrier, kCtaNext};
template <size_t N>
int slot_of(const Out (&outs)[N], Out o) {
  for (size_t i = 0; i < N; ++i)
    if (outs[i] == o) return int(i);
  throw std::logic_error("gpu circuit: an output case outside its categorical");
}

// The cases a pass chooses among, and the result's digits (padded to 8).
struct Decision {
  Digits Rp;
  ValueId ctrl_case = -1;   // a slot of kCtrlOuts, as the terminator decides
  ValueId warp_case = -1;   // a slot of kWarpOuts, on a WARP pass
  ValueId oc = -1;          // Out: what to write
  ValueId out_kind = -1;    // its Kind
};

// Per pass the case to write: the EXEC pass by the result and the fault,
// the control pass by the terminator, the WARP pass by the thread table.
Decision decide(Builder& b, const Context& c, const Rom& r, const Alu& alu, const Schedule& s) {
  Program& p = b.p;
  Decision d;
  const ValueId pass = c.pass;
  // A thread that stops hands the scan to the next: WARPS(w + 1) where that
  // one runs from the block the last thread run began at, else WARP(w + 1).
  d.ctrl_case = p.lookup("ctrl_case", int(std::size(kCtrlOuts)), {r.tkind, s.cond_nz, s.wmin_t, s.warps_next},
                         [](const std::vector<int>& v) {
                           const Out next = v[3] ? kWarpsNext : kWarpCur;
                           auto slot = [](Out o) { return slot_of(kCtrlOuts, o); };
                           switch (v[0]) {
                             case kJmp: return slot(kExecT);
                             case kBr: return slot(v[1] ? kExecT : kExecF);
                             case kExit: case kBar: return slot(next);
                             case kWbar: return slot(v[2] ? kWminT : next);
                             case kTrap: return slot(kTrapTok);
                             default: return slot(kEnd);
                           }
                         });
  // VX: a result below 64 and a terminator that does not wait for the
  // register file (jmp; br on the register the block writes: its condition is
  // the result; br on the register the C record names, which the pass read
  // with the operands: tokens/prompt.h, branch_condition_in_c).  Which of the
  // three depends on the ROM alone.
  const ValueId cond_is_dst =
      b.all("cond_is_dst", {p.lookup("cond_dst_lo", 2, {r.r_t[0], r.opP[0].v},
                                     [](const std::vector<int>& v) { return v[0] == v[1] ? 1 : 0; }),
                            p.lookup("cond_dst_hi", 2, {r.r_t[1], r.opP[1].v},
                                     [](const std::vector<int>& v) { return (v[0] & 1) == (v[1] & 1) ? 1 : 0; })});
  const ValueId vx_term = p.lookup("vx_term", 4, {r.tkind, cond_is_dst, r.op}, [](const std::vector<int>& v) {
    if (v[0] == kJmp) return 1;
    if (v[0] != kBr) return 0;
    if (v[1]) return 2;
    const bool reg = v[2] < machine::kOpCount && v[2] != int(machine::Op::ST) && v[2] != int(machine::Op::ATOM);
    return reg && machine::op_info(machine::Op(v[2])).arity < 3 ? 3 : 0;
  });
  d.Rp = b.pad(alu.R, 8);
  const Digits& Rp = d.Rp;
  if (Rp[0].v < 0 || Rp[1].v < 0) throw std::logic_error("gpu circuit: a low digit of the result is a constant");
  // Each in one ladder over the digits (no layer of flags before it):
  // r_small: digits 2..7 are 0 and digit 1 is below 4 (the result is below
  // 64); r_nz: digit 0 or 1 is not 0.
  std::vector<Term> small_terms, nz_terms;
  for (int i = 2; i < 8; ++i) small_terms.push_back({Rp[i].v, 0, 1});
  for (int k = 0; k < 4; ++k) small_terms.push_back({Rp[1].v, k, 1});
  for (int k = 1; k < 16; ++k) {
    nz_terms.push_back({Rp[0].v, k, 1});
    nz_terms.push_back({Rp[1].v, k, 1});
  }
  const ValueId r_small = p.ladder("r_small", 2, small_terms, 0, [](int k) { return k == 7 ? 1 : 0; });
  const ValueId r_nz = p.ladder("r_low_nonzero", 2, nz_terms, 0, [](int k) { return k >= 1 ? 1 : 0; });
  const ValueId vx_case = p.lookup("vx_case", 3, {vx_term, r_small, r_nz, s.c_nz}, [](const std::vector<int>& v) {
    if (!v[1] || !v[0]) return 0;
    if (v[0] == 3) return v[3] ? 1 : 2;
    return v[0] == 1 || v[2] ? 1 : 2;  // 1: the t target, 2: the f target
  });
  // The high half: 0 (VZ), kGlobalHigh (VG), kNegativeHigh (VN), or other
  // with a low half of 0 (VH), or other (VLO, D).
  auto high_is = [&](const std::string& name, uint32_t h) {
    std::vector<Term> t;
    for (int i = 0; i < 4; ++i) t.push_back({Rp[4 + i].v, int((h >> (4 * i)) & 15), 1});
    return p.ladder(name, 2, t, 0, [](int k) { return k == 4 ? 1 : 0; });
  };
  for (int i = 4; i < 8; ++i)
    if (Rp[i].v < 0) throw std::logic_error("gpu circuit: a digit of the result's high half is a constant");
  for (int i = 0; i < 4; ++i)
    if (Rp[i].v < 0) throw std::logic_error("gpu circuit: a digit of the result's low half is a constant");
  const ValueId lo_zero = is_zero(b, "lo_zero", slice(Rp, 0, 4));
  const ValueId hi_class = p.lookup("hi_class", 5, {alu.hi_zero, high_is("hi_global", kGlobalHigh),
                                                    high_is("hi_negative", kNegativeHigh), lo_zero},
                                    [](const std::vector<int>& v) { return v[0] ? 1 : v[1] ? 2 : v[2] ? 3 : v[3] ? 4 : 0; });
  // A fall-through value: the block goes on to the block after it (jmp
  // there, br there on its result, which is not 0 when VX is not written, or
  // br on the C record's register whose value picks it), and one more may
  // follow (may_fall: the count and a marker in sight, vocab.h).
  const ValueId falls_on =
      p.lookup("falls_on", 2,
               {vx_term, c.may_fall, circuit::equal(p, "t_is_next", b.word(r.t_target), b.word(c.next_pc)),
                circuit::equal(p, "f_is_next", b.word(r.f_target), b.word(c.next_pc)), s.c_nz},
               [](const std::vector<int>& v) {
                 if (v[0] == 3) return v[1] && (v[4] ? v[2] : v[3]) ? 1 : 0;
                 return v[0] != 0 && v[1] && v[2] ? 1 : 0;
               });
  const ValueId exec_case = p.lookup("exec_case", kOutCount, {alu.fault, r.has_dst, hi_class, d.ctrl_case, vx_case, falls_on},
                                     [](const std::vector<int>& v) {
                                       if (v[0]) return int(kFault);
                                       if (v[1] && v[4]) return int(v[4] == 1 ? kVxT : kVxF);
                                       if (v[1] && v[5] && v[2] != 0)
                                         return int(v[2] == 1 ? kVzf : v[2] == 2 ? kVgf : v[2] == 3 ? kVnf : kVhf);
                                       if (v[1])
                                         return int(v[2] == 1   ? kVz
                                                    : v[2] == 2 ? kVg
                                                    : v[2] == 3 ? kVn
                                                    : v[2] == 4 ? kVh
                                                                : kVlo);
                                       return int(kCtrlOuts[v[3]]);
                                     });
  d.warp_case = p.lookup("warp_case", int(std::size(kWarpOuts)),
                         {s.w_is_end, s.runnable, s.barf, s.cta_more, s.wmin_pass, s.wmin_ws},
                         [](const std::vector<int>& v) {
                           auto slot = [](Out o) { return slot_of(kWarpOuts, o); };
                           if (!v[0]) return slot(v[1] ? kExecWs : v[5] ? kWminWs : kWarpIn);
                           if (v[4]) return slot(kWarp0);   // the wbar release
                           if (v[2]) return slot(kBarrier);
                           return slot(v[3] ? kCtaNext : kEnd);
                         });
  // What to write: one step per (pass, case); the base slot is END.
  std::vector<Step> oc_steps;
  for (int k = 1; k < kOutCount; ++k) {
    if (k >= kVlo1 && k <= kVlo6) continue;
    if (k == kVlo) {
      // The low half's kind carries the fall-through values since the last
      // EXEC, VX or WARPS (VLO none, VLOn n).
      static_assert(kFallChain == 6, "VLO .. VLO6 name the counts 0..6");
      for (int n = 0; n <= int(kFallChain); ++n)
        oc_steps.push_back({{{pass, kExec, 1}, {exec_case, kVlo, 1}, {c.falls, n, 1}}, -2, kEnd, vlo_out(n)});
    } else {
      oc_steps.push_back({{{pass, kExec, 1}, {exec_case, k, 1}}, -1, kEnd, k});
    }
  }
  for (size_t i = 1; i < std::size(kCtrlOuts); ++i)
    oc_steps.push_back({{{pass, kCtrl, 1}, {d.ctrl_case, int(i), 1}}, -1, kEnd, kCtrlOuts[i]});
  for (size_t i = 1; i < std::size(kWarpOuts); ++i)
    oc_steps.push_back({{{pass, kWarp, 1}, {d.warp_case, int(i), 1}}, -1, kEnd, kWarpOuts[i]});
  // After VLO .. VLO6: D, or DF when the block falls through (falls_on: fewer
  // than kFallChain fall-through values before it; the VLO is a marker).
  oc_steps.push_back({{{pass, kHi, 1}, {falls_on, 0, 1}}, -1, kEnd, kHiTok});
  oc_steps.push_back({{{pass, kHi, 1}, {falls_on, 1, 1}}, -1, kEnd, kHiFall});
  oc_steps.push_back({{{pass, kStart, 1}}, 0, kEnd, kCta0});
  oc_steps.push_back({{{pass, kToWarp0, 1}}, 0, kEnd, kWarp0});
  oc_steps.push_back({{{pass, kWmin, 1}}, 0, kEnd, kWarpCur});
  d.oc = p.mlp("out_case", kOutCount, kEnd, std::move(oc_steps));
  d.out_kind = circuit::apply(p, "out_kind", kKindCount, d.oc, [](int k) {
    switch (Out(k)) {
      case kFault: return int(Kind::FAULT);
      case kVz: return int(Kind::VZ);
      case kVlo: return int(Kind::VLO);
      case kVlo1: case kVlo2: case kVlo3: case kVlo4: case kVlo5: case kVlo6:
        return int(Kind::VLO1) + (k - int(kVlo1));
      case kVxT: case kVxF: return int(Kind::VX);
      case kVg: return int(Kind::VG);
      case kVn: return int(Kind::VN);
      case kVzf: return int(Kind::VZF);
      case kVgf: return int(Kind::VGF);
      case kVnf: return int(Kind::VNF);
      case kHiFall: return int(Kind::DF);
      case kVh: return int(Kind::VH);
      case kVhf: return int(Kind::VHF);
      case kHiTok: return int(Kind::D);
      case kExecT: case kExecF: case kExecWs: return int(Kind::EXEC);
      case kWminWs: case kWminT: return int(Kind::WMIN);
      case kWarpCur: case kWarpIn: case kWarp0: return int(Kind::WARP);
      case kWarpsNext: return int(Kind::WARPS);
      case kTrapTok: return int(Kind::TRAP);
      case kBarrier: return int(Kind::BARRIER);
      case kCtaNext: case kCta0: return int(Kind::CTA);
      default: return int(Kind::END);
    }
  });
  return d;
}

// The payload of the case chosen, and the output head.
void payload(Builder& b, const Context& c, const Rom& r, const Alu& alu, const Schedule& s, const Decision& d) {
  Program& p = b.p;
  const ValueId pass = c.pass;
  const Digits& Rp = d.Rp;
  const Digits &t_target = r.t_target, &f_target = r.f_target;
  const ValueId fault_kind = b.flag("fault_kind", alu.fault, [](int k) { return k == 2; });
  // Control payloads depend only on the ROM, the thread table and the
  // context: chosen as soon as those are known, so that only the choice
  // stays in the residual while the ALU works.
  // WARP passes: warp_case; WMIN passes: the next WARP; the others: ctrl_case.
  const ValueId ctrl_pass = b.flag("ctrl_payload_pass", pass, [](int k) { return k != kWarp && k != kWmin; });
  std::vector<Step> pre_steps{{{{pass, kWmin, 1}}, 0, kEnd, kWarpCur}};
  for (size_t i = 1; i < std::size(kCtrlOuts); ++i)
    pre_steps.push_back({{{ctrl_pass, 1, 1}, {d.ctrl_case, int(i), 1}}, -1, kEnd, kCtrlOuts[i]});
  for (size_t i = 1; i < std::size(kWarpOuts); ++i)
    pre_steps.push_back({{{pass, kWarp, 1}, {d.warp_case, int(i), 1}}, -1, kEnd, kWarpOuts[i]});
  const ValueId pre_case = p.mlp("pre_case", kOutCount, kEnd, std::move(pre_steps));
  const Digits ctrl_pay = b.mux("ctrl_payload", pre_case,
                                {{kExecT, t_target},
                                 {kExecF, f_target},
                                 {kExecWs, s.ws_pc},
                                 {kWarpCur, s.cur_w_next},
                                 {kWarpsNext, s.cur_w_next},
                                 {kWarpIn, s.w_next},
                                 {kTrapTok, t_target},
                                 {kBarrier, {{b.lnot("next_epoch", c.epoch)}}},
                                 {kCtaNext, s.cta_next},
                                 {kWminWs, s.ws_pc},
                                 {kWminT, t_target}},
                                4);
  std::vector<Builder::Case> out_cases = {{kFault, {{fault_kind}}},
                                          {kVz, slice(Rp, 0, 4)},
                                          {kVlo, slice(Rp, 0, 4)},
                                          {kVlo1, slice(Rp, 0, 4)},
                                          {kVlo2, slice(Rp, 0, 4)},
                                          {kVlo3, slice(Rp, 0, 4)},
                                          {kVlo4, slice(Rp, 0, 4)},
                                          {kVlo5, slice(Rp, 0, 4)},
                                          {kVlo6, slice(Rp, 0, 4)},
                                          {kVg, slice(Rp, 0, 4)},
                                          {kVn, slice(Rp, 0, 4)},
                                          {kVzf, slice(Rp, 0, 4)},
                                          {kVgf, slice(Rp, 0, 4)},
                                          {kVnf, slice(Rp, 0, 4)},
                                          {kHiTok, slice(Rp, 4, 4)},
                                          {kHiFall, slice(Rp, 4, 4)},
                                          {kVh, slice(Rp, 4, 4)},
                                          {kVhf, slice(Rp, 4, 4)}};
  for (int k : {kExecT, kExecF, kExecWs, kWarpCur, kWarpsNext, kWarpIn, kTrapTok, kBarrier, kCtaNext, kWminWs, kWminT})
    out_cases.push_back({k, ctrl_pay});
  // VX(target, v): the target's 10 bits, then v's 6 (vx_payload).  Payload
  // digit 2 is the target's bits 8..9 and v's bits 0..1, digit 3 v's bits
  // 2..5 (result digit 1 is below 4 when VX is written).
  auto vx_pay = [&](const std::string& name, const Digits& target) {
    std::vector<Term> t, t3;
    for (int k = 1; k < 16; ++k) {
      if (k & 3) {
        t.push_back({target[2].v, k, k & 3});
        t.push_back({Rp[0].v, k, (k & 3) << 2});
      }
      if (k >> 2) t3.push_back({Rp[0].v, k, k >> 2});
      t3.push_back({Rp[1].v, k, k << 2});
    }
    const ValueId d2 = p.ladder(name, 16, t, 0, [](int k) { return std::min(k, 15); });
    const ValueId d3 = p.ladder(name + ".hi", 16, t3, 0, [](int k) { return std::min(k, 15); });
    return Digits{target[0], target[1], {d2}, {d3}};
  };
  out_cases.push_back({kVxT, vx_pay("vx_t", t_target)});
  out_cases.push_back({kVxF, vx_pay("vx_f", f_target)});
  const Digits out_pay = b.mux("out_payload", d.oc, out_cases, 4);
  std::vector<std::pair<ValueId, ValueId>> head{{b.kind, d.out_kind}};
  for (int i = 0; i < 4; ++i) head.push_back({b.pay[i], out_pay[i].v >= 0 ? out_pay[i].v : b.konst(16, 0)});
  p.output(head);
}

}  // namespace

void output_stage(Builder& b, const Context& c, const Rom& r, const Alu& alu, const Schedule& s) {
  payload(b, c, r, alu, s, decide(b, c, r, alu, s));
}

}  // namespace qgpu::gpu::mc
