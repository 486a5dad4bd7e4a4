// Block formation (README.md): allocated code cut into machine blocks of at
// most `block_instrs` instructions that obey the memory rule (no load or
// atomic after a store or atomic in the same block), each ending in one
// control transfer; for the model's machine a store's block does not end in
// `br`.  Out: a Program's blocks (its other fields are the caller's).
#pragma once

#include <cstdint>
#include <vector>

#include "model_host/lower/vcode.h"

namespace qgpu::machine::lowering {

Program form_blocks(const std::vector<VI>& code, uint32_t nlabels, uint32_t block_instrs, bool for_model);

// Jump threading over blocks with no instruction (form_blocks runs it).
void thread_jumps(Program& prog);

// Removes the blocks no path from B0 reaches and renumbers the rest in order
// (form_blocks runs it).
void drop_unreachable(Program& prog);

}  // namespace qgpu::machine::lowering
