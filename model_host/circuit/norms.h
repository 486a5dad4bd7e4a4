// The circuit compiler's fourth pass: exact norm levels (docs/circuit.md,
// section 4).  Every residual entry of a circuit token is exactly 0 or 1 (or
// a scalar's integer), so each layer's norm sees a squared sum known at
// compile time, E; its (1 + w) is chosen so that the runtime's fp32 norm maps
// 1 to exactly a power of two, the norm's level, and the weights reading the
// normed input are divided by that level (exactly).  Where no weight does,
// pad dimensions holding 1 at both norms of a layer (at most kMaxPads) raise
// E until one does.  With fixed energies every norm's squared sum is padded
// to 4096 x hidden instead, by kFixedPads integers, and every norm is the
// identity.
#pragma once

#include "model_host/circuit/ir.h"

#include <array>
#include <cstdint>
#include <optional>
#include <vector>

namespace qgpu::circuit {

inline constexpr int kMaxPads = 4;

struct NormChoice {
  float w = 0;        // the stored norm weight: (1 + w) in fp32 is the factor
  float level = 1;    // what an entry 1 becomes, exactly
};

// The norm weight that maps 1 to exactly `level` when the squared sum is
// `energy`, as the runtime computes (x * r) * (1 + w); none if no fp32 one does.
std::optional<float> exact_norm_weight(float energy, int64_t H, float eps, float level);
// The smallest power-of-two level (from 1 on) that a norm of squared sum
// `energy` can give exactly.
std::optional<NormChoice> exact_norm(int energy, int64_t H, float eps);

struct NormPlan {
  std::vector<int> pads;                         // per layer: pad dimensions at both its norms
  std::vector<NormChoice> attn_norm, mlp_norm;   // per layer
  // Pad k occupies one dimension over each run of layers [a, b] with
  // pads > k: from the MLP of layer a - 1 (the embedding for a = 0) to the
  // MLP of layer b.  pad_dim[k][l] is its dimension in layer l, or -1.
  std::vector<std::vector<int>> pad_dim;
  // With fixed energies: per layer boundary (L: the final norm) the pads'
  // integers; and the energy every norm sees.
  std::vector<std::array<int, 4>> fixed_pads;
  int64_t fixed_energy = 0;
};

// `dims`: every value's dimensions (the pads take free ones, below
// `usable`: all of `hidden` when negative).  Throws std::runtime_error
// (budget_error) when the energy or the residual is exceeded,
// std::logic_error when no exact level exists.
NormPlan plan_norms(const std::vector<ValueInfo>& values, const std::vector<int>& born,
                    const std::vector<int>& cleared, const std::vector<std::vector<int>>& dims, int layers, int hidden,
                    float eps, bool fixed, int usable = -1);

}  // namespace qgpu::circuit
