// The model's machine (docs/tokens.md): virtual code rewritten into the
// operations its circuit has.  In: selected virtual code; out: the same
// program with atomics as load, ALU operations and store, 8/16-bit accesses
// as 32-bit ones, mulhs as mulhu and a sign correction, and the clock as a
// per-thread counter of instructions, in fresh virtual registers
// (model_expand.cpp).
#pragma once

#include "model_host/lower/vcode.h"

namespace qgpu::machine::lowering {

void expand_for_model(VCode& vc);

}  // namespace qgpu::machine::lowering
