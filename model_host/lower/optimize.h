// The optimisation passes over virtual code (README.md).  Each takes a
// VCode and rewrites it in place, keeping what every thread computes and
// stores: in, a program as instruction selection (and, for the model, the
// model expansion) left it; out, the same program in fewer or cheaper
// instructions, with its register and label numbering unchanged.  lower()
// runs them in the order of lower.cpp.
#pragma once

#include <cstdint>
#include <vector>

#include "model_host/lower/vcode.h"

namespace qgpu::machine::lowering {

// `mov d, s` where d and s each have one definition, s's before the copy and
// every use of d after it: uses of d read s (the copy is left to
// remove_dead_code).
void propagate_copies(VCode& vc);

// A register with one definition whose operands are immediates becomes that
// constant in its uses; identity and absorbing operands make copies and
// constants.  With one lane per warp `lane` is the constant 0.
void fold_constants(VCode& vc, uint32_t lanes);

// Known bits per register and program point, over the control flow: fully
// known results become constants, masks that keep every possibly-set bit
// copies, 0/1 tests of 0/1 values the value or its negation, and branches on
// a known condition jumps.
void fold_known_bits(VCode& vc);

// Rewrites within straight-line code: immediate operands second, added
// constants and masks combined, addresses folded into loads and stores,
// branches on comparisons with 0 or on negations taken directly, repeated
// operations numbered (simplify_local.cpp lists them).
void simplify_local(VCode& vc);

// Kernel parameters as immediates, for a program lowered for one launch
// whose parameter buffer is `params` (the model's: its prompt carries the
// ROM per launch): a register whose only definition loads a parameter word
// at a constant offset, where nothing stores to the parameters, is read as
// that word by the instructions that read it.  Run after the folding
// passes: no operation on a parameter is evaluated, the machine computes it.
void inline_parameters(VCode& vc, const std::vector<uint8_t>& params, uint32_t param_bytes);

// Loop-invariant code motion of at most `max_hoisted` ALU instructions,
// innermost loops first; returns how many moved.
uint32_t hoist_invariants(VCode& vc, uint32_t max_hoisted);

// Drops the blocks no path from the entry reaches.
void remove_unreachable(VCode& vc);

// Drops instructions whose result nothing reads (stores and atomics stay).
void remove_dead_code(VCode& vc);

}  // namespace qgpu::machine::lowering
