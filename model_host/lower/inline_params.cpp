// Kernel parameters as immediates (optimize.h).
#include "model_host/lower/optimize.h"

#include <algorithm>
#include <cstring>
#include <vector>

namespace qgpu::machine::lowering {

// A parameter word loaded at a constant offset by a register's only
// definition, before any read of the register, where nothing stores to the
// parameters, is read as that word's value by every instruction that reads
// the register (the load is left to remove_dead_code if nothing else reads
// it: a branch condition must be a register).  It runs after the folding
// passes, so no operation on parameters is evaluated here: the machine
// computes each one.
void inline_parameters(VCode& vc, const std::vector<uint8_t>& params, uint32_t param_bytes) {
  std::vector<uint32_t> defs(vc.nvregs, 0), first_use(vc.nvregs, UINT32_MAX);
  for (uint32_t i = 0; i < vc.code.size(); ++i) {
    const VI& v = vc.code[i];
    if (v.kind == VI::Br) first_use[v.cond] = std::min(first_use[v.cond], i);
    if (v.kind != VI::Ins) continue;
    const OpKind k = op_info(v.in.op).kind;
    if ((k == OpKind::Store || k == OpKind::Atomic) && v.in.space == Space::Param) return;
    for (auto* o : sources(v.in)) first_use[o->v] = std::min(first_use[o->v], i);
    if (v.in.writes_reg()) defs[v.in.dst]++;
  }
  std::vector<bool> known(vc.nvregs, false);
  std::vector<uint32_t> value(vc.nvregs, 0);
  for (uint32_t i = 0; i < vc.code.size(); ++i) {
    const VI& v = vc.code[i];
    const Instr& in = v.in;
    if (v.kind != VI::Ins || in.op != Op::LD || in.space != Space::Param || !in.a.imm || !in.b.imm ||
        in.bytes != 4 || defs[in.dst] != 1 || first_use[in.dst] < i)
      continue;
    const uint64_t at = uint64_t(in.a.v) + in.b.v;
    if (at % 4 != 0 || at + 4 > param_bytes) continue;  // the load faults: keep it
    // The bytes of the buffer in the word, zeros beyond it: the word the
    // prompt's parameter records hold (a last parameter narrower than a
    // word, read as its whole word, keeps its bytes).
    uint32_t w = 0;
    if (at < params.size()) std::memcpy(&w, &params[at], std::min<size_t>(4, params.size() - at));
    known[in.dst] = true;
    value[in.dst] = w;
  }
  for (VI& v : vc.code) {
    if (v.kind != VI::Ins) continue;
    for (int k = 0; k < op_info(v.in.op).arity; ++k)
      if (Operand& o = v.in.src(k); !o.imm && known[o.v]) o = Operand::k(value[o.v]);
  }
}

}  // namespace qgpu::machine::lowering
