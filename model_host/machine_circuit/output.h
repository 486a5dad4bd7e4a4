// Stage 6 of the machine circuit: what to write next.  Per pass the case
// (a value token, VX, EXEC of a target, WARP, WMIN, BARRIER, CTA, FAULT,
// END, ...), its kind and payload, and the output head that copies them into
// the output fields.
#pragma once

#include "model_host/machine_circuit/alu.h"
#include "model_host/machine_circuit/builder.h"
#include "model_host/machine_circuit/context.h"
#include "model_host/machine_circuit/rom.h"
#include "model_host/machine_circuit/scheduler.h"

namespace qgpu::gpu::mc {

void output_stage(Builder& b, const Context& c, const Rom& r, const Alu& alu, const Schedule& s);

}  // namespace qgpu::gpu::mc
