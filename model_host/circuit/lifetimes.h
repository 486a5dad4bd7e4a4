// The circuit compiler's second pass: lifetimes.  A value is live from the
// slot that produces it to its last use; with dimension reuse, a step per
// slot (a unit per dimension for a scalar) in the MLP of its last use's layer
// (or a later one with room) clears it, so that its dimensions can be
// reused.  Kept values and the output head's never are.
#pragma once

#include "model_host/circuit/ir.h"
#include "model_host/circuit/placement.h"

#include <vector>

namespace qgpu::circuit {

struct Lifetimes {
  std::vector<int> last_use;                // per value: the last depth slot reading it (-2: none)
  std::vector<int> cleared;                 // per value: the slot that clears it (kNever: never)
  std::vector<std::vector<ValueId>> clears; // per layer: the values its MLP clears
};

// Adds the clears' units to placement.units.  A clear that would fall in
// the last layer is left out (it frees nothing).
Lifetimes plan_lifetimes(const Program& program, Placement& placement, int units_cap, bool reuse_dims);

// After the dimensions are allocated (`dims`, per value): drops every clear
// that frees nothing, a value's whose dimensions no value born after its
// clear occupies, and gives its units back to placement.units.  Such a value
// stays in the residual to the end, where no weight reads it; its clear
// would have been a unit pair firing on every token.  Returns how many.
int drop_idle_clears(const Program& program, const std::vector<std::vector<int>>& dims, Placement& placement,
                     Lifetimes& lifetimes);

}  // namespace qgpu::circuit
