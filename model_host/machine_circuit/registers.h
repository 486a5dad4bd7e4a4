// Stage 3 of the machine circuit: the register file.  8192 rows (thread x
// register), written by the value tokens at the destination of the block
// the token before ran, read by three ports (a, b, c; port a also reads a
// branch's condition).
#pragma once

#include "model_host/machine_circuit/builder.h"
#include "model_host/machine_circuit/context.h"
#include "model_host/machine_circuit/rom.h"

namespace qgpu::gpu::mc {

struct Registers {
  Digits regA, regB, regC;   // 8 nibbles each
};

Registers registers_stage(Builder& b, const Context& c, const Rom& r);

}  // namespace qgpu::gpu::mc
