// Floating-point atomics for the lowering (docs/isa.md, 8): the value a float
// `atom.add`/`red.add` stores, as software floating point on the machine's
// integer operations.  The lowering serialises the lanes of a warp around it
// (one load, this sequence, one store per lane): lanes add in lane order,
// warps in schedule order (docs/isa.md, 8), the PTX-level interpreter's order
// on a 32-lane machine.
#pragma once

#include <string>

#include "model_host/lower/softfloat.h"
#include "model_host/ptx/ir.h"

namespace qgpu::machine {

// Empty when the machine has this atomic (add on f16, f16x2, f32, f64), else
// what it lacks, for the lowering's error message.
std::string float_atomic_unsupported(ptx::AtomOp op, ptx::Type t);

// Bytes the atomic reads and writes (2 for f16, 4 for f32/f16x2, 8 for f64).
unsigned float_atomic_bytes(ptx::Type t);

// old + b as the atomic computes it: f32 rounds to nearest even and flushes
// subnormal inputs and results to zero (PTX's atom.add.f32), f64 rounds to
// nearest even, f16 and each half of f16x2 round to nearest even (.noftz).
// Values are {lo, hi} words (hi 0 for 32 bits and less).
softfloat::Gen::W float_atomic_add(const softfloat::Emit& e, ptx::Type t, softfloat::Gen::W old, softfloat::Gen::W b);

}  // namespace qgpu::machine
