#include "model_host/machine_circuit/context.h"

#include <algorithm>
#include <optional>

#include "model_host/machine_circuit/circuit.h"

namespace qgpu::gpu::mc {

namespace {

// Fall-through values since the last EXEC, VX or WARPS, counting this token
// (0..kFallChain), from the nearest marker among the 3 tokens before
// (vocab.h: EXEC, VX, WARPS and VLO say 0, VLO1 .. VLO6 their count) and
// the fall-through values after it: a fall-through value counts itself too,
// VZ, VG, VN, VH and VLO (the value of the block a run ran last) those
// before them; VLO1 .. VLO6 carry their count in their kind.  D after a VLO
// takes the VLO's count from the store of the token before (`prev`).

// The kinds of the 3 tokens before, from one-row stores in the first layer
// (their write enable is constant, so they wait for nothing).
std::vector<ValueId> kinds_before(Builder& b) {
  // One store per age: a record whose parts all come from before the
  // sequence start reads as never written (slot 0), one that mixes ages
  // would not be clean on the first tokens.
  std::vector<ValueId> k;
  for (int age = 1; age <= 3; ++age) {
    MemoryOp m;
    m.name = "kind_age" + std::to_string(age);
    m.rows = 1;
    m.write_addr = circuit::Address(std::vector<AddrBit>{});
    m.read_addr = circuit::Address(std::vector<AddrBit>{});
    m.write_enable = Operand::fixed(1);
    m.zero_default = true;
    m.parts.push_back({b.kind, age});
    k.push_back(b.p.memory(m).at(0));
  }
  return k;
}

ValueId fall_count(Builder& b, const std::vector<ValueId>& k) {
  static_assert(kFallChain == 6, "counts 0..6 from a marker at most 3 tokens back");
  const Lit fall0{b.kind, slots_where(kKindCount, [](int s) { return falls_through(Kind(s)); })};
  const Lit value0{b.kind, slots_where(kKindCount, [](int s) {
                     const Kind t = Kind(s);
                     return t == Kind::VZ || t == Kind::VG || t == Kind::VN || t == Kind::VH || t == Kind::VLO;
                   })};
  auto fall = [&](int age) {
    return Lit{k[age - 1], slots_where(kKindCount, [](int s) { return falls_through(Kind(s)); })};
  };
  auto marker = [&](int age, int m) {
    return Lit{k[age - 1], slots_where(kKindCount, [m](int s) { return marker_count(Kind(s)) == m; })};
  };
  std::vector<Step> st;
  // The nearest marker (vocab.h) at age j, fall-through values between: a
  // fall-through value counts m + j, a value token m + j - 1.  A count
  // beyond kFallChain does not occur (no fall-through value is written
  // there).  A window of 3 fall-through values: a value token after a run
  // of 3 from EXEC, VX or WARPS (a fall-through value beyond a third is
  // written only with a marker among the 2 tokens before it, so a longer
  // run keeps one in the window; may_fall below).
  for (int j = 1; j <= 3; ++j)
    for (int m = 0; m <= int(kFallChain); ++m) {
      std::vector<Lit> run;
      for (int a = 1; a < j; ++a) run.push_back(fall(a));
      run.push_back(marker(j, m));
      auto with = [&](const Lit& self) {
        std::vector<Lit> l = run;
        l.push_back(self);
        return l;
      };
      if (m + j <= int(kFallChain)) st.push_back(conjunction(with(fall0), m + j));
      if (m + j - 1 >= 1 && m + j - 1 <= int(kFallChain)) st.push_back(conjunction(with(value0), m + j - 1));
    }
  st.push_back(conjunction({value0, fall(1), fall(2), fall(3)}, 3));
  // VLO1 .. VLO6: their kind.
  for (int c = 1; c <= int(kFallChain); ++c) st.push_back(conjunction({{b.kind, {int(vlo_kind(uint32_t(c)))}}}, c));
  return b.p.mlp("falls", kFallChain + 1, 0, std::move(st));
}

}  // namespace

void declare_tokens(Builder& b) {
  Program& p = b.p;
  b.kind = p.field("kind", kKindCount);
  for (int i = 0; i < 4; ++i) b.pay.push_back(p.field("p" + std::to_string(i), 16));
  for (int k = 0; k < kKindCount; ++k)
    for (uint32_t x = 0; x < payload_size(Kind(k)); ++x) {
      std::vector<std::pair<ValueId, int>> slots{{b.kind, k}};
      for (int i = 0; i < 4; ++i) slots.push_back({b.pay[i], int((x >> (4 * i)) & 15)});
      p.token(token_name(token_id(Kind(k), x)), slots);
    }
}

Context context_stage(Builder& b) {
  Program& p = b.p;
  Context c;
  c.P = {{b.pay[0]}, {b.pay[1]}, {b.pay[2]}, {b.pay[3]}};
  c.one = b.konst(2, 1);
  c.is_cta = b.is_kind(Kind::CTA);
  const std::vector<ValueId> before = kinds_before(b);
  c.falls = fall_count(b, before);
  const auto prev = store(b, "prev", 1, {}, {}, c.one, -1, cat({{b.kind, 1}, {c.falls, 1}}, payload_parts(b, 4, 1)));
  c.prev_kind = prev[0];
  c.prev_falls = prev[1];
  c.prevP = outs(prev, 2, 4);
  c.prev2P = outs(store(b, "prev2", 1, {}, {}, c.one, -1, payload_parts(b, 4, 2)), 0, 4);
  // The block being run: EXEC's payload, or VX's (whose bits 10.. are its
  // value; only bits 0..9 address the ROM), plus the fall-through values
  // (VZF, VGF, VNF, VHF, DF) since then: each runs the block after the last one run.
  const ValueId names = b.flag("names_block", b.kind, [](int s) { return names_block(Kind(s)); });
  const Digits named_pc = outs(store(b, "ctx_exec", 1, {}, {}, names, -1, payload_parts(b, 3, 0)), 0, 3);
  // WARPS(w) names no block in its payload: it runs the block the EXEC right
  // after the last WARP named (the start of the scan's last thread run), and
  // the fall-through values after it count from there.
  const ValueId is_warps = b.is_kind(Kind::WARPS);
  // (Each write enable one lookup of the kinds: the stores sit in the second
  // layer, beside the others run_pc reads.)
  const ValueId started = p.lookup("start_we", 2, {b.kind, before[0]}, [](const std::vector<int>& v) {
    return Kind(v[0]) == Kind::EXEC && Kind(v[1]) == Kind::WARP ? 1 : 0;
  });
  c.start_pc = outs(store(b, "ctx_start", 1, {}, {}, started, c.is_cta, payload_parts(b, 3, 0)), 0, 3);
  const ValueId namer = b.flag("namer", b.kind, [](int s) { return names_block(Kind(s)) || Kind(s) == Kind::WARPS; });
  const ValueId by_warps = store(b, "ctx_named_by_warps", 1, {}, {}, namer, -1, {{is_warps, 0}})[0];
  const ValueId warp_we = b.flag("warp_we", b.kind, [](int s) { return Kind(s) == Kind::WARP || Kind(s) == Kind::WARPS; });
  c.cur_w = outs(store(b, "ctx_warp", 1, {}, {}, warp_we, -1, payload_parts(b, 3, 0)), 0, 3);
  // CTA indices and counts: 16 bits (up to 65,535 CTAs).
  c.cur_c = outs(store(b, "ctx_cta", 1, {}, {}, c.is_cta, -1, payload_parts(b, 4, 0)), 0, 4);
  c.epoch = store(b, "ctx_epoch", 1, {}, {}, b.is_kind(Kind::BARRIER), c.is_cta, {payload_part(b, 0, 0)})[0];
  c.n_threads = outs(store(b, "ctx_nt", 1, {}, {}, b.is_kind(Kind::NT), -1, payload_parts(b, 3, 0)), 0, 3);
  c.n_ctas = outs(store(b, "ctx_nc", 1, {}, {}, b.is_kind(Kind::NC), -1, payload_parts(b, 4, 0)), 0, 4);
  // The local store and the register file are split among the CTA's
  // threads rounded up to a power of two, 2^c with c = ceil(log2 NT)
  // (machine::Params::local_bytes_for, regs_for), c = 0..10: from NT's low
  // two nibbles (c of the low byte, 9 when it is zero), then with the third.
  const ValueId lo_log = p.lookup("nt_log2.lo", 10, {b.pay[1], b.pay[0]}, [](const std::vector<int>& v) {
    const int t = v[0] * 16 + v[1];
    int c = 0;
    while (t > 0 && (1 << c) < t) ++c;
    return t == 0 ? 9 : c;
  });
  // NT = hi << 8 | lo: hi 0 is lo's c; 1 is c 8 (lo 0: NT 256) or 9; 2 is 9
  // (NT 512) or 10; 3 and 4 (NT 1024) are 10.
  const ValueId nt_log = p.lookup("nt_log2", 11, {b.pay[2], lo_log}, [](const std::vector<int>& v) {
    const int hi = v[0], lo = v[1];
    if (hi == 0) return std::min(lo, 8);
    if (hi == 1) return lo == 9 ? 8 : 9;
    if (hi == 2) return lo == 9 ? 9 : 10;
    return 10;
  });
  c.local_log = store(b, "ctx_tlog", 1, {}, {}, b.is_kind(Kind::NT), -1, {{nt_log, 0}})[0];
  c.rom_sel = outs(store(b, "ctx_rom", 1, {}, {}, b.is_kind(Kind::ROM), -1, payload_parts(b, 3, 0)), 0, 3);
  const auto pc_digits = run_pc(p, b.kind, {named_pc[0].v, named_pc[1].v, named_pc[2].v}, c.falls, c.prev_falls,
                                {c.start_pc[0].v, c.start_pc[1].v, c.start_pc[2].v}, by_warps);
  c.cur_pc = {{pc_digits[0]}, {pc_digits[1]}, {pc_digits[2]}};
  // The block after it, for the fall-through values; and whether one more
  // of them may follow.
  c.next_pc = increment(b, "next_pc", c.cur_pc);
  // One more fall-through value may follow: fewer than kFallChain ran, and
  // either fewer than 3, or a marker is this token or the one before (the
  // next one's count then comes from it: fall_count).
  const ValueId marker_near = p.lookup("marker_near", 2, {b.kind, before[0]}, [](const std::vector<int>& v) {
    return marker_count(Kind(v[0])) >= 0 || marker_count(Kind(v[1])) >= 0 ? 1 : 0;
  });
  c.may_fall = p.lookup("may_fall", 2, {c.falls, marker_near}, [](const std::vector<int>& v) {
    return v[0] < int(kFallChain) && (v[0] < 3 || v[1]) ? 1 : 0;
  });

  // Which pass this is (docs/tokens.md section 4).
  c.pass = p.lookup("pass", kPassCount, {b.kind, c.prev_kind}, [](const std::vector<int>& v) {
    switch (Kind(v[0])) {
      case Kind::EXEC: case Kind::VX: case Kind::VZF: case Kind::VGF: case Kind::VNF: case Kind::DF: case Kind::VHF:
      case Kind::WARPS:
        return int(kExec);
      case Kind::VLO: case Kind::VLO1: case Kind::VLO2: case Kind::VLO3: case Kind::VLO4: case Kind::VLO5:
      case Kind::VLO6: return int(kHi);
      case Kind::VZ: case Kind::VG: case Kind::VN: case Kind::VH: return int(kCtrl);
      case Kind::D: return is_vlo(Kind(v[1])) ? int(kCtrl) : int(kOther);
      case Kind::WARP: return int(kWarp);
      case Kind::WMIN: return int(kWmin);
      case Kind::START: return int(kStart);
      case Kind::CTA: case Kind::BARRIER: return int(kToWarp0);
      case Kind::TRAP: case Kind::FAULT: return int(kToEnd);
      default: return int(kOther);
    }
  });
  c.is_exec = b.flag("is_exec_pass", c.pass, [](int s) { return s == kExec; });
  c.is_ctrl = b.flag("is_ctrl_pass", c.pass, [](int s) { return s == kCtrl; });
  // The high half of a value: D after VLO, or DF.
  c.is_vhi = p.lookup("is_vhi", 2, {b.kind, c.prev_kind}, [](const std::vector<int>& v) {
    return (Kind(v[0]) == Kind::D && is_vlo(Kind(v[1]))) || Kind(v[0]) == Kind::DF ? 1 : 0;
  });
  return c;
}

}  // namespace qgpu::gpu::mc

namespace qgpu::gpu {

// The block a pass runs, or whose terminator it follows: the last EXEC's or
// VX's (`named`, 3 nibbles, bits 0..9 the block) plus the fall-through
// values since (`falls` of this token, `prev_falls` of the one before for D
// after VLO), in one layer: per output digit, one conjunction per count,
// input digit and carry.
std::array<circuit::ValueId, 3> run_pc(circuit::Program& p, circuit::ValueId kind,
                                       const std::array<circuit::ValueId, 3>& named, circuit::ValueId falls,
                                       circuit::ValueId prev_falls, const std::array<circuit::ValueId, 3>& alt,
                                       circuit::ValueId alt_sel) {
  using mc::Lit;
  using mc::slots_where;
  using circuit::Step;
  const Lit not_d{kind, {int(Kind::D)}, true};
  const Lit is_d{kind, {int(Kind::D)}};
  std::vector<Step> d0, d1, d2;
  // The base: `named`, or where alt_sel holds, `alt` (each conjunction below
  // once per base, with the selector as one more literal).
  std::vector<std::pair<std::array<circuit::ValueId, 3>, std::optional<Lit>>> bases{{named, std::nullopt}};
  if (alt_sel >= 0) bases = {{named, Lit{alt_sel, {0}}}, {alt, Lit{alt_sel, {1}}}};
  for (const auto& [base, base_lit] : bases)
  for (const auto& [count, sel_] : {std::pair{falls, not_d}, std::pair{prev_falls, is_d}}) {
    const auto& named = base;
    const Lit sel = sel_;
    auto conjunction = [&](std::vector<Lit> lits, int to) {
      if (base_lit) lits.push_back(*base_lit);
      return mc::conjunction(lits, to);
    };
    for (int j = 0; j <= int(kFallChain); ++j) {
      const Lit cj{count, {j}};
      // Carry out of digit 0: b0 + j >= 16.
      const Lit carry{named[0], slots_where(16, [j](int x) { return x + j >= 16; })};
      const Lit no_carry{named[0], carry.slots, true};
      for (int x = 0; x < 16; ++x) {
        if ((x + j) % 16) d0.push_back(conjunction({sel, cj, {named[0], {x}}}, (x + j) % 16));
        if (x) d1.push_back(conjunction({sel, cj, no_carry, {named[1], {x}}}, x));
        if (!carry.slots.empty() && (x + 1) % 16)
          d1.push_back(conjunction({sel, cj, carry, {named[1], {x}}}, (x + 1) % 16));
      }
      // Digit 2: the block's bits 8..9 (a VX payload has value bits above).
      for (int x = 0; x < 4; ++x) {
        const Lit b2{named[2], slots_where(16, [x](int s) { return (s & 3) == x; })};
        const Lit b1_not15{named[1], {15}, true};
        if (x) {
          d2.push_back(conjunction({sel, cj, b1_not15, b2}, x));
          d2.push_back(conjunction({sel, cj, {named[1], {15}}, no_carry, b2}, x));
        }
        if (!carry.slots.empty() && (x + 1) % 4)
          d2.push_back(conjunction({sel, cj, {named[1], {15}}, carry, b2}, (x + 1) % 4));
      }
    }
  }
  return {p.mlp("run_pc.d0", 16, 0, std::move(d0)), p.mlp("run_pc.d1", 16, 0, std::move(d1)),
          p.mlp("run_pc.d2", 16, 0, std::move(d2))};
}

}  // namespace qgpu::gpu
