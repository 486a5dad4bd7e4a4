// The circuit compiler: schedules a Program into Qwen3.5 linear-attention
// layers, allocates residual dimensions, and emits the weights.  compile()
// runs its passes in order, each in its own file with its own types:
// placement.h (ops into layers), lifetimes.h (last uses and clears),
// dimensions.h (residual dimensions), norms.h (exact norm levels and pads),
// emission.h (the weights); codes.h holds what they share.
//
// Numbers (every one exact in bf16, passes on conjunctions of up to 3
// literals included; docs/circuit.md explains each):
//  - Residual codes: the anchor dimension holds 1 on every circuit token, every
//    live value holds exactly one slot at 1.  The energy sum(x^2) at each norm is
//    therefore a compile-time integer E, and each norm weight (1 + w) is set to
//    sqrt(E / hidden + eps), so the normalised input equals the residual.  A
//    scalar of maximum m holds n and four integers whose squares add up to
//    m^2 - n^2; with scalars every norm is padded to E = 4096 x hidden, where
//    the norm maps every entry to itself (docs/circuit.md, section 4).
//  - A step (form F = sum of terms + bias, integer on valid inputs) is two units
//    with gates 256F - 96 and 256F - 160 and up = anchor; their difference is
//    exactly 0 for F <= 0 (both gates <= -96, where SiLU returns 0) and 64 for
//    F >= 1 (both gates >= 96, where SiLU is the identity); down scales by 1/64.
//    Decision margin: F may be off by 0.3 and the step still saturates.
//  - A pass (a copy of src where a conjunction of n literals holds) is one
//    unit per entry x of src it copies: silu(gain x - offset + G (sum of the
//    literals - n)) [first literal] / scale.  A scalar's integers: gain 64,
//    scale 64, every dimension added.  A categorical 0 or 1: gain 1120,
//    offset 96 and scale 1024 (a 0 gives -96), a unit per slot but the base,
//    moving the output from the base to it.  G is a power of two putting
//    every gate of a pass that does not hold at -96 or below.  Clears of
//    scalars are such units too, silu(64 x) / 64 off each dimension.
//  - Memories: every value channel is silu(256 x - 128) of one slot x: exactly
//    0 for x <= 0.15 (SiLU underflows below -89), the identity above 0.85; the
//    key or query channel of a row is silu(256 s - (256 n - 128)), s the sum of
//    the slots of the n address values that agree with the row's bits: 128
//    when all n agree, exactly 0 otherwise.  Keys are exact one-hots after
//    l2norm and stored rows hold only 0 and ~128 (every overwrite exact,
//    Sterbenz).  Zero-default stores (and stores spanning layers) read into
//    outputs that the layer before set to slot 0: a read row moves them.  beta from b = +-128
//    (sigmoid exactly 1 or 0), decay from A_log = 0 and dt_bias = -30 (exp(g)
//    exactly 1), reset from a = +160 (exp(g) exactly 0), z gain 32.
//  - Output: the final norm is zero outside the output fields; the right token
//    scores kLogitScale per output field, every other at least kLogitScale less.
#pragma once

#include "model_host/circuit/ir.h"
#include "model_host/qwen/checkpoint.h"

#include <functional>
#include <string>
#include <vector>

namespace qgpu::circuit {

inline constexpr float kStepGain = 256.f;
inline constexpr float kStepOffLo = 96.f, kStepOffHi = 160.f;   // gate offsets of a step's two units
inline constexpr float kStepLevel = kStepOffHi - kStepOffLo;    // output of a step that fires
inline constexpr float kSlotGain = 256.f, kSlotOffset = 128.f;        // address channel pre-activations
inline constexpr float kKeyLevel = kSlotGain - kSlotOffset;           // a matching address channel
// A stored active channel: chosen so that a read row's channel, kStoredLevel
// times the query's 1 / sqrt(128), is exactly 16 in fp32 (docs/circuit.md,
// section 4: exact arithmetic).  Value channels are silu(kValueGain x - kSlotOffset).
inline constexpr float kStoredLevel = 0x1.6a09e8p+7f;                 // 181.019348...
inline constexpr float kValueGain = kStoredLevel + kSlotOffset;       // exact: kValueGain - kSlotOffset == kStoredLevel
inline constexpr float kZGain = 32.f;                                 // the smallest z gain tried (per head, exact reads)
inline constexpr float kBetaGain = 128.f, kResetGain = 160.f, kDtBias = -30.f;
inline constexpr float kLogitScale = 16.f;

struct Options {
  int64_t token_base = 0;     // vocabulary id of circuit token 0; ids below it embed to zero
  int64_t vocab_size = 0;     // 0: token_base + number of circuit tokens
  bool reuse_dims = true;     // clear dead values so their dimensions can be reused
  bool drop_idle_clears = true;   // ... but not those whose dimensions no later value takes (lifetimes.h)
  int min_layers = 0;         // pad with empty layers up to this depth
  bool weights = true;        // false: place and allocate only (budget planning)
  // Every norm's squared sum padded to exactly 4096 x hidden, so that the
  // norms map every entry to itself (integers beyond 1 included), and every
  // memory's outs preset.  On whenever the program has a scalar.
  bool fixed_energy = false;
  // Residual dimensions left to no value or pad at all (the highest ones),
  // which the circuit then never holds: what a merge into a text model mutes
  // the circuit on (docs/merge.md).  A program that does not fit in the
  // others gets the residual-full error.
  int free_dims = 0;
};

// What one layer uses of its budget.
struct LayerUse {
  int units = 0;        // MLP units, of intermediate_size
  int heads = 0;        // GDN heads, of linear_num_value_heads
  int dims_attn = 0;    // residual dimensions live at the attention input
  int dims_mlp = 0;     // ... at the MLP input
  int mlp_ops = 0, memory_ops = 0, clears = 0;
  int pads = 0;         // pad dimensions holding 1 at both norms (exact norm levels), in the dims above
};

// Where a memory lives in the compiled layers, for reading its rows back from
// the GDN states (Model::recurrent_state(state, layer) is S[head, row, channel]).
// Row r is row r % group_rows of the heads of group r / group_rows; slot x of
// part k is channel parts[k].channel + x of head(group, parts[k].slice).  A
// written row holds, per part, one channel at kStoredLevel and the others at
// 0; a row never written (or emptied by a reset) is all zero.
struct MemoryLayout {
  struct Head {
    int layer = 0, head = 0;
  };
  struct Part {
    int slice = 0, channel = 0, size = 0;
  };
  std::string name;
  int rows = 0;
  bool zero_default = false;
  int group_rows = 0;          // rows per head group (the key head dimension)
  int groups = 0, slices = 0;  // heads: groups x slices
  std::vector<Head> heads;     // [group * slices + slice]; a group's heads share a layer
  std::vector<Part> parts;     // per part of the record
  const Head& head(int group, int slice) const { return heads.at(group * slices + slice); }
  // Row `row` read from the GDN states (state(layer) = Model::recurrent_state
  // of that layer): per part its slot; for an all-zero part, 0 with
  // zero_default and -1 otherwise; -1 where the channels are not a one-hot of
  // kStoredLevel within `tol` relative.
  std::vector<int> read(int row, const std::function<torch::Tensor(int layer)>& state, float tol = 1e-3f) const;
};

class Compiled {
 public:
  const qwen::Checkpoint& checkpoint() const { return checkpoint_; }
  // Moves the weights out (the rest of Compiled stays usable for decoding).
  qwen::Checkpoint take_checkpoint() { return std::move(checkpoint_); }
  const std::vector<LayerUse>& layers() const { return layers_; }
  int num_layers() const { return static_cast<int>(layers_.size()); }
  // The budget table: one line per layer and the totals.
  std::string report() const;

  // Vocabulary id of circuit token t.
  int64_t token_id(int t) const { return token_base_ + t; }
  // The residual capture index (Model::forward's capture_layers) at which
  // value v can be read, or -1 when it is never in a layer-boundary residual.
  int capture_index(ValueId v) const;
  // Reads value v from one captured residual row [hidden]: its slot (a
  // scalar's integer), or -1 when the dimensions do not hold a one-hot (a
  // scalar's code) within `tol`.
  int decode(ValueId v, const float* residual, float tol = 1e-3f) const;
  const std::vector<int>& dims(ValueId v) const { return dims_.at(v); }
  // Per value, the depth slot that produces it (-1 embedding, 2L layer L's
  // token mixer, 2L + 1 its MLP): what Evaluator needs to know.  A memory
  // spanning layers produces its reads in its last layer's token mixer.
  const std::vector<int>& depths() const { return ready_; }
  // The layout of the memory declared with this name; throws
  // std::out_of_range when there is none, std::invalid_argument when two
  // memories share the name.
  const MemoryLayout& memory_layout(const std::string& name) const;

 private:
  friend Compiled compile(const Program&, const Options&);
  qwen::Checkpoint checkpoint_;
  std::vector<LayerUse> layers_;
  std::vector<std::vector<int>> dims_;   // per value
  std::vector<int> ready_, cleared_;     // per value: depth slot produced, slot cleared (INT_MAX: never)
  std::vector<ValueInfo> infos_;         // per value
  std::vector<MemoryLayout> memories_;   // in program order
  int64_t token_base_ = 0;
};

// Throws std::invalid_argument (bad program) or std::runtime_error (a budget
// exceeded), naming the value, op or layer at fault.
Compiled compile(const Program& program, const Options& options = {});

}  // namespace qgpu::circuit
