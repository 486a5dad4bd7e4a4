// What every pass of the circuit compiler shares (internal to the compiler;
// compiler.h is the interface): depth slots, the anchor, and how a value
// occupies residual dimensions (a one-hot, or a scalar's five integers).
//
// The passes, in order (compile() in compiler.cpp runs them):
//   placement.h   each op at the first layer after its inputs with room;
//   lifetimes.h   when each value is last used, and the clears that free it;
//   dimensions.h  residual dimensions by interval allocation;
//   norms.h       exact norm levels, with pad dimensions where needed;
//   emission.h    the weights.
#pragma once

#include "model_host/circuit/ir.h"

#include <array>
#include <climits>
#include <cstdint>
#include <string>
#include <vector>

namespace qgpu::circuit {

inline constexpr int kNever = INT_MAX;
inline constexpr int kAnchor = 0;   // residual dimension of the anchor

// Depth slots: the embedding is -1, layer L's token mixer 2L, its MLP 2L+1.
inline int attn_slot(int layer) { return 2 * layer; }
inline int mlp_slot(int layer) { return 2 * layer + 1; }
// First layer whose MLP (or token mixer) comes after slot r.
inline int first_mlp_layer_after(int r) { return r < 0 ? 0 : r / 2 + (r % 2); }
inline int first_attn_layer_after(int r) { return r < 0 ? 0 : r / 2 + 1; }

[[noreturn]] void budget_error(const std::string& msg);

// ---- Scalars (docs/circuit.md, section 1).  A scalar of maximum m holding n
// occupies 5 dimensions: n, then four integers whose squares sum to m^2 -
// n^2 (Lagrange's four squares), so its energy is m^2 whatever n is.

// The lexicographically largest a >= b >= c >= d >= 0 with a^2 + b^2 + c^2 + d^2 = m.
std::array<int, 4> four_squares(int m);

inline constexpr int kScalarDims = 5;
inline int width(const ValueInfo& v) { return v.scalar ? kScalarDims : v.size; }
inline int64_t energy(const ValueInfo& v) { return v.scalar ? int64_t{v.size - 1} * (v.size - 1) : 1; }
// What a scalar holding n puts in its dimensions.
std::array<int, kScalarDims> scalar_code(const ValueInfo& v, int n);

// With fixed energies every norm's squared sum is exactly 4096 H = 2^23:
// the mean is then 4096, and eps (1e-6) is below half an ulp of 4096, so the
// scale is exactly 1/64 and (1 + w) = 64 maps every entry to itself,
// integers beyond 1 included (every partial sum of the squares is an integer
// below 2^24, exact in any order).  kFixedPads dimensions hold integers that
// make up the rest.
inline constexpr int64_t kFixedMean = 4096;
inline constexpr int kFixedPads = 4;

// Whether an op's passes each hold on one slot of the same value, every slot
// once: exactly one then holds on every token, so the base is never the result.
bool passes_cover(const MlpOp& m, const std::vector<ValueInfo>& values);

// The live values entering depth slot p (born before p, cleared at p or
// later): their dimensions (count_dims), or their energy (1 for a one-hot,
// m^2 for a scalar of maximum m).
int64_t live_at(const std::vector<ValueInfo>& values, const std::vector<int>& born, const std::vector<int>& cleared,
                int p, bool count_dims);

}  // namespace qgpu::circuit
