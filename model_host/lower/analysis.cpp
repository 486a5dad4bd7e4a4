// Control-flow graph and known bits of virtual code (analysis.h).
#include "model_host/lower/analysis.h"

#include <bit>

namespace qgpu::machine::lowering {

Cfg build_cfg(const std::vector<VI>& code, uint32_t nlabels) {
  Cfg g;
  g.n = uint32_t(code.size());
  std::vector<uint32_t> label_pos(nlabels, UINT32_MAX);
  for (uint32_t i = 0; i < g.n; ++i)
    if (code[i].kind == VI::Label) label_pos[code[i].l1] = i;
  for (uint32_t i = 0; i < g.n; ++i) {
    bool leader = i == 0 || code[i].kind == VI::Label;
    if (i > 0) {
      auto k = code[i - 1].kind;
      leader |= k == VI::Jmp || k == VI::Br || k == VI::Exit || k == VI::Trap || k == VI::Bar || k == VI::Wbar;
    }
    if (leader) g.starts.push_back(i);
  }
  const uint32_t nb = g.blocks();
  std::vector<uint32_t> block_of(g.n);
  for (uint32_t b = 0; b < nb; ++b)
    for (uint32_t i = g.starts[b]; i < g.end(b); ++i) block_of[i] = b;
  g.succ.resize(nb);
  for (uint32_t b = 0; b < nb; ++b) {
    const VI& v = code[g.end(b) - 1];
    auto to = [&](uint32_t l) {
      if (label_pos[l] != UINT32_MAX) g.succ[b].push_back(block_of[label_pos[l]]);
    };
    switch (v.kind) {
      case VI::Jmp:
      case VI::Bar:
      case VI::Wbar: to(v.l1); break;
      case VI::Br:
        to(v.l1);
        to(v.l2);
        break;
      case VI::Exit:
      case VI::Trap: break;
      default:
        if (b + 1 < nb) g.succ[b].push_back(b + 1);
    }
  }
  g.pred.resize(nb);
  for (uint32_t b = 0; b < nb; ++b)
    for (uint32_t t : g.succ[b]) g.pred[t].push_back(b);
  return g;
}

// The known bits of an ALU result from those of its operands.
KnownBits known_result(const Instr& in, KnownBits a, KnownBits b, KnownBits c) {
  auto low = [&](uint32_t v) {
    const uint32_t m = KnownBits::low_known(a, b);
    return KnownBits{m, v & m};
  };
  const bool shift_known = b.known == ~0u && b.value < 32;
  const uint32_t s = b.value;
  switch (in.op) {
    case Op::MOV: return a;
    case Op::ADD: return low(a.value + b.value);
    case Op::SUB: return low(a.value - b.value);
    case Op::MUL: {
      KnownBits r = low(a.value * b.value);
      // Trailing zeros add up.
      auto tz = [](KnownBits x) { return uint32_t(__builtin_ctz(~(x.known & ~x.value) | 0x80000000u)); };
      const uint32_t z = std::min(31u, tz(a) + tz(b));
      const uint32_t zm = (1u << z) - 1;
      if ((r.known & zm) != zm) r = {r.known | zm, r.value & ~zm};
      return r;
    }
    case Op::AND: {
      const uint32_t k = (a.known & b.known) | (a.known & ~a.value) | (b.known & ~b.value);
      return {k, a.value & b.value & k};
    }
    case Op::OR: {
      const uint32_t k = (a.known & b.known) | (a.known & a.value) | (b.known & b.value);
      return {k, (a.value | b.value) & k};
    }
    case Op::XOR: return {a.known & b.known, (a.value ^ b.value) & a.known & b.known};
    case Op::SHL:
      if (!shift_known) return {};
      return {(a.known << s) | ((1u << s) - 1), a.value << s};
    case Op::SHR:
      if (!shift_known) return {};
      return {(a.known >> s) | ~(~0u >> s), a.value >> s};
    case Op::SAR: {
      if (!shift_known) return {};
      const uint32_t k = (a.known >> 31) ? uint32_t(int32_t(a.known) >> s) : a.known >> s;
      return {k, uint32_t(int32_t(a.value) >> s) & k};
    }
    case Op::SEQ: case Op::SNE: case Op::SLT: case Op::SLE: case Op::SLTU: case Op::SLEU:
      return {~1u, 0};
    case Op::POPC: case Op::CLZ: return {~63u, 0};
    case Op::SEL: return join(b, c);
    case Op::MIN: case Op::MAX: case Op::MINU: case Op::MAXU: return join(a, b);
    case Op::CSUB: {  // at most a: a's leading known zeros stay
      const int n = std::countl_one(a.known & ~a.value);
      return {n == 0 ? 0u : ~0u << (32 - n), 0};
    }
    default: return {};
  }
}

}  // namespace qgpu::machine::lowering
