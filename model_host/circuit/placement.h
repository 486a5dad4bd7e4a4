// The circuit compiler's first pass: placement.  Each op goes to the first
// layer after its inputs with room (MLP units, GDN heads); a memory with more
// heads than a layer has spans layers by whole groups of rows.  The output
// head's copies go into the last layer's MLP, after everything.
#pragma once

#include "model_host/circuit/codes.h"
#include "model_host/circuit/ir.h"

#include <vector>

namespace qgpu::circuit {

// A layer's budget (from the Qwen3.5 config).
struct LayerBudget {
  int units = 0;      // MLP units (intermediate_size)
  int heads = 0;      // GDN heads (linear_num_value_heads)
  int head_dim = 0;   // rows per head (linear_value_head_dim)
};

// How a memory op's parts are laid into heads: slices of at most one head's
// channels, repeated for every group of head_dim rows; groups placed in layers.
struct HeadPlan {
  // Consecutive groups in one layer, their heads from `head` on.
  struct Piece {
    int layer, head, group0, groups;
  };
  std::vector<std::vector<int>> slices;   // part indices per slice
  std::vector<std::vector<int>> offset;   // channel offset of each part in its slice
  int groups = 1;
  std::vector<Piece> pieces;              // in layer order
  // The outs hold slot 0 from the MLP before the first layer (or the
  // embedding) on, and a read row moves them: a zero-default store, or a
  // store whose groups write the outs in several layers.
  bool preset = false;
  int per_group() const { return static_cast<int>(slices.size()); }
  int heads() const { return groups * per_group(); }
};

// The slices of a memory's parts (no layers yet).
HeadPlan plan_heads(const Program& p, const MemoryOp& op, int head_dim);

// Units of an MLP op: two per step, and per pass: for a categorical source
// one per slot but the base (each moves the output from the base to its
// slot); for a scalar one per dimension, and a step taking the base back
// unless the passes cover a value.
int mlp_units(const MlpOp& m, const std::vector<ValueInfo>& values);

struct Placement {
  // Per value: the depth slot that produces it, and from when it occupies
  // its dimensions (earlier than ready only for the outs of preset memories).
  std::vector<int> ready, born;
  std::vector<int> op_layer;      // per op: its layer (a memory: its last piece's)
  std::vector<HeadPlan> plans;    // per op: a memory's heads (empty for MLP ops)
  std::vector<int> units, heads;  // per layer: used (every layer reserves its bias pair's 2 units)
  int out_layer = -1;             // the output head's layer, -1 without one
  int layers = 0;                 // L
};

// Throws std::runtime_error (budget_error) when one op needs more than a layer has.
// `fixed`: fixed energies (every memory's outs preset); `min_layers` pads the depth.
Placement place(const Program& program, const LayerBudget& budget, bool fixed, int min_layers);

}  // namespace qgpu::circuit
