// The circuit compiler's third pass: residual dimensions, by interval
// allocation in order of the slot from which each value occupies them
// (Placement::born) to the slot that clears it (Lifetimes::cleared).
// Dimension 0 is the anchor; with fixed energies dimensions 1..kFixedPads
// hold the pads' integers throughout.
#pragma once

#include "model_host/circuit/ir.h"

#include <vector>

namespace qgpu::circuit {

struct Dimensions {
  std::vector<std::vector<int>> dims;   // per value: its dimensions (width(value) of them), ascending
  std::vector<int> fixed_pad_dims;      // with fixed energies: 1..kFixedPads
};

// Throws std::runtime_error (budget_error, naming what fills the residual)
// when a value finds too few free dimensions among `hidden`.
Dimensions allocate_dimensions(const std::vector<ValueInfo>& values, const std::vector<int>& born,
                               const std::vector<int>& cleared, int hidden, bool fixed);

}  // namespace qgpu::circuit
