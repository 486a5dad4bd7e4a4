// The Qwen3.5 text model, executed in fp32 exactly as the equations are written
// (the Qwen3.5 layers as HF transformers' qwen3_5 computes them).
//
// Two executors share one arithmetic.  Every long sum (matrix rows, norms,
// attention dots) accumulates into 32 lanes by column index (lane = column
// mod 32, in ascending order within a lane) and then adds the lanes in a fixed
// tree.  The dense executor visits every column; the sparse executor stores
// only the non-zero weights and visits only their products with non-zero
// activations, and skips zero rows, zero conv channels, GDN heads whose keys
// or values are always zero, and MLP units and vocabulary rows that are zero.
// Adding a zero product to a lane leaves it unchanged, so for finite
// activations both executors produce bit-identical numbers, and batched
// prefill is bit-identical to token-by-token decoding.
//
// A Model is immutable once built; its methods may run concurrently on
// different States (each call takes working memory from a pool).
#pragma once

#include "model_host/qwen/checkpoint.h"

#include <torch/types.h>

#include <memory>
#include <vector>

namespace qgpu::qwen {

enum class Exec { Dense, Sparse };

// How activations are stored between operations.  Fp32: everything in fp32.
// Bf16: as an engine that keeps activations in bf16 and accumulates in fp32
// would: every value handed from one operation to the next (embedding rows,
// the residual after each addition, normed inputs, projection outputs, conv
// outputs, the mixers' outputs, MLP activations, the final norm) is rounded
// to bf16 (to nearest, ties to even); sums, norms, the recurrent state and
// the logits stay fp32.  A measurement mode: it shows which circuits a bf16
// engine would still run exactly.
enum class Activations { Fp32, Bf16 };

// x rounded to bf16 (to nearest, ties to even; NaN stays NaN), as fp32.
float round_bf16(float x);

// All per-sequence state: per layer the conv window and the GDN recurrent
// state (linear-attention layers) or the KV cache (full-attention layers).
// Copying a State deep-copies it (a snapshot); assign it back to restore.
struct State {
  int64_t position = 0;                   // tokens consumed so far
  std::vector<torch::Tensor> conv;        // [conv_dim, kernel-1] fp32, per channel oldest first
  std::vector<torch::Tensor> recurrent;   // [value_heads, dk, dv] fp32
  // Full-attention KV cache per layer, row per position: [positions, kv_heads*head_dim];
  // keys after k_norm and rope.
  std::vector<std::vector<float>> keys, values;

  State() = default;
  State(const State& other);
  State& operator=(const State& other);
  State(State&&) = default;
  State& operator=(State&&) = default;
};

struct Outputs {
  torch::Tensor logits;                    // [T, vocab] fp32
  std::vector<torch::Tensor> residuals;    // per requested layer: [T, hidden], the input of that layer
  // forward_residual only: the final-normed hidden states [T, hidden] that
  // the LM head reads (exact at every column the head reads; when the head
  // reads every column, exact everywhere).
  torch::Tensor hidden;
};

class Model {
 public:
  explicit Model(const Checkpoint&, Exec exec = Exec::Dense, Activations activations = Activations::Fp32);
  // The same model from a checkpoint that is not needed afterwards: each
  // tensor is released as soon as it has been read, so the checkpoint's
  // matrices and the model's never all take memory at once (the largest,
  // a compiled GPU's embedding, is read first).  `ck` is left with no tensors.
  explicit Model(Checkpoint&& ck, Exec exec = Exec::Dense, Activations activations = Activations::Fp32);
  ~Model();
  Model(Model&&) noexcept;
  Model& operator=(Model&&) noexcept;

  State new_state() const;
  // Batched prefill of `tokens` after what `state` has seen.  capture_layers:
  // index L < num_hidden_layers captures the residual entering layer L; index
  // num_hidden_layers the residual after the last layer (before the final norm).
  Outputs forward(State&, const std::vector<int64_t>& tokens,
                  const std::vector<int>& capture_layers = {}) const;
  // The same from a residual instead of tokens: `residual` [T, hidden] fp32
  // is the input of layer 0 (as a token's embedding row would be; -0 taken
  // as +0).  The layers compute exactly what they compute when that residual
  // comes from earlier layers of a larger model, so a model run one layer at
  // a time (each layer a one-layer Model fed the last one's residual) gives
  // bit-identical numbers.  Fills Outputs::hidden as well.
  Outputs forward_residual(State&, const torch::Tensor& residual, const std::vector<int>& capture_layers = {}) const;
  // One token; returns its logits [vocab].
  torch::Tensor step(State&, int64_t token) const;
  // Greedy decoding without the [vocab] logits: like forward() / step(), but
  // returns only the index torch::argmax gives for the last token's logits
  // (the first index of the largest logit; a NaN counts as the largest).
  // The sparse executor computes only the vocabulary rows that can hold the
  // maximum (see Matrix::argmax).
  int64_t forward_argmax(State&, const std::vector<int64_t>& tokens) const;
  int64_t step_argmax(State&, int64_t token) const;
  // The GDN state of a linear-attention layer: [value_heads, dk, dv] fp32.
  const torch::Tensor& recurrent_state(const State&, int layer) const;
  const Config& config() const;
  Exec exec() const;

  // What the sparse executor skips, for reports and benchmarks.
  struct Stats {
    int64_t weights = 0;       // weights in all matrices and convs
    int64_t stored = 0;        // weights the executor visits
    int64_t active_heads = 0, total_heads = 0;   // GDN value heads
    int64_t active_units = 0, total_units = 0;   // MLP units
    int64_t active_vocab = 0;                    // LM-head rows computed
  };
  Stats stats() const;

  // The sparse executor's sublayer memo (memo.h): per stateless sublayer,
  // the outputs of its last `entries` distinct inputs on single-token steps,
  // written again when an input recurs (bit-identical to computing them).
  // kMemoEntries by default with Exec::Sparse; 0 turns it off.  Not to be
  // called while another call runs.
  static constexpr size_t kMemoEntries = 256;
  void set_memo_entries(size_t entries);
  size_t memo_entries() const;
  // Forgets every stored output (and the counts below).  Not to be called
  // while another call runs.
  void clear_memo() const;
  // Sublayer steps served from the memo and computed, in idle workspaces.
  struct MemoStats {
    int64_t hits = 0, misses = 0;
  };
  MemoStats memo_stats() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace qgpu::qwen
