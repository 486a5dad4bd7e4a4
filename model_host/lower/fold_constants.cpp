// Constant folding over virtual code (optimize.h).
#include "model_host/lower/optimize.h"

#include <algorithm>
#include <optional>
#include <vector>

#include "model_host/lower/analysis.h"

namespace qgpu::machine::lowering {

// Constant folding over the virtual code: a register with a single
// definition whose operands are all immediates holds a constant, which its
// uses take as an immediate; operations with an identity operand become
// copies, with an absorbing one constants.  Values are computed by the machine's own operation table.
void fold_constants(VCode& vc, uint32_t lanes) {
  for (bool changed = true; changed;) {
    changed = false;
    std::vector<uint32_t> defs(vc.nvregs, 0);
    for (const VI& v : vc.code)
      if (v.kind == VI::Ins && v.in.writes_reg()) defs[v.in.dst]++;
    std::vector<bool> known(vc.nvregs, false);
    std::vector<uint32_t> value(vc.nvregs, 0);
    for (VI& v : vc.code) {
      if (v.kind == VI::Ins && v.in.op == Op::LANE && lanes == 1)
        v.in = Instr{Op::MOV, v.in.dst, K(0), K(0), K(0)};  // the only lane of a one-lane warp
      if (v.kind != VI::Ins || op_info(v.in.op).kind != OpKind::Alu) continue;
      Instr& in = v.in;
      auto srcs = sources(in);
      if (srcs.empty()) {
        uint32_t x = eval_alu(in.op, in.a.v, in.b.v, in.c.v);
        if (in.op != Op::MOV || in.a.v != x) changed = true;
        in = Instr{Op::MOV, in.dst, K(x), K(0), K(0)};
        if (defs[in.dst] == 1) {
          known[in.dst] = true;
          value[in.dst] = x;
        }
        continue;
      }
      // x + 0, x - 0, x | 0, x ^ 0, x << 0, x >> 0, x * 1, x & ~0: a copy of x.
      const uint32_t b = in.b.v;
      bool identity = in.a.imm == false && in.b.imm &&
                      (((in.op == Op::ADD || in.op == Op::SUB || in.op == Op::OR || in.op == Op::XOR ||
                         in.op == Op::SHL || in.op == Op::SHR || in.op == Op::SAR) &&
                        b == 0) ||
                       (in.op == Op::MUL && b == 1) || (in.op == Op::AND && b == ~0u));
      // x & 0, x * 0, x | ~0: a constant.
      bool absorbing = in.a.imm == false && in.b.imm &&
                       (((in.op == Op::AND || in.op == Op::MUL) && b == 0) || (in.op == Op::OR && b == ~0u));
      if (identity || absorbing) {
        in = Instr{Op::MOV, in.dst, identity ? in.a : K(b), K(0), K(0)};
        changed = true;
      }
    }
    for (VI& v : vc.code) {
      if (v.kind != VI::Ins) continue;
      for (int k = 0; k < op_info(v.in.op).arity; ++k)
        if (Operand& o = v.in.src(k); !o.imm && known[o.v]) {
          o = K(value[o.v]);
          changed = true;
        }
    }
  }
}

}  // namespace qgpu::machine::lowering
