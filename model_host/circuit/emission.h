// The circuit compiler's last pass: emission.  With every op placed, every
// value's dimensions and every norm's level known, the weights of each layer
// (token mixer: the memories' heads; MLP: steps, passes, clears, the output
// head's copies and the bias pair), the embedding and the final norm.
// Every MLP's sums are checked exact (check_mlp_sums).
#pragma once

#include "model_host/circuit/dimensions.h"
#include "model_host/circuit/ir.h"
#include "model_host/circuit/lifetimes.h"
#include "model_host/circuit/norms.h"
#include "model_host/circuit/placement.h"
#include "model_host/qwen/checkpoint.h"
#include "model_host/qwen/config.h"

#include <cstdint>
#include <utility>
#include <vector>

namespace qgpu::circuit {

// What one layer holds: its MLP ops, its memory pieces (op, piece index),
// and the outs of the preset memories whose first layer it is.
struct LayerContents {
  std::vector<size_t> mlp_ops;
  std::vector<std::pair<size_t, size_t>> pieces;
  std::vector<ValueId> presets;
};
std::vector<LayerContents> layer_contents(const Program& program, const Placement& placement);

// Everything the weights follow from.
struct EmissionPlan {
  const Program& program;
  const qwen::Config& config;   // num_hidden_layers and layer_types set
  int64_t token_base;
  bool fixed;                   // fixed energies
  const Placement& placement;
  const Lifetimes& lifetimes;
  const Dimensions& dimensions;
  const NormPlan& norms;
  const std::vector<LayerContents>& contents;
};

// The checkpoint's tensors.  Throws std::runtime_error (budget_error) when a
// layer's MLP sums are not exact, std::logic_error when the units or heads
// emitted differ from what placement counted.
qwen::TensorMap emit_weights(const EmissionPlan& plan);

}  // namespace qgpu::circuit
