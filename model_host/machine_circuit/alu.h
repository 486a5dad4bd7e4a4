// Stage 4 of the machine circuit: operands, address checks, the data
// memories (global, shared, local, param, print) and the ALU.  Every
// operation's result is folded into one accumulated word as soon as it
// exists, and the wide steps run one after another (wait_for), so that the
// residual holds one result, the operands and the step in progress.
#pragma once

#include "model_host/machine_circuit/builder.h"
#include "model_host/machine_circuit/context.h"
#include "model_host/machine_circuit/registers.h"
#include "model_host/machine_circuit/rom.h"

namespace qgpu::gpu::mc {

struct Alu {
  Digits R;                 // the instruction's result (8 nibbles, some maybe constant)
  ValueId hi_zero = -1;     // its high half is 0
  ValueId fault = -1;       // 0, 1 an illegal address, 2 a misaligned one
};

Alu alu_stage(Builder& b, const Context& c, const Rom& r, const Registers& regs);

}  // namespace qgpu::gpu::mc
