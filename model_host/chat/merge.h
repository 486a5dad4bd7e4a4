// The merged model: a compiled circuit's layers in front of a Qwen3.5 base
// model's layers, in one checkpoint (docs/merge.md).
//
//   layers 0 .. C-1        the circuit's layers, muted on text (below)
//   layer  C               the output amplifier (a linear-attention layer whose MLP
//                          scales the circuit's output fields past anything the
//                          base layers add; muted on text as well)
//   layers C+1 .. C+B      the base model's layers, every weight unchanged
//   vocabulary             the base's ids, zero rows up to the circuit's token
//                          base, then the circuit tokens
//
// Muting.  A text token's embedding is the base's, non-zero on every residual
// dimension, so the circuit's weights (written for embeddings that are zero
// outside the circuit) would react to it.  The merge adds to every live
// pre-activation of the circuit (MLP gates, and the z, b and a projections of
// GDN heads) a term -K * (u . n) on residual dimensions U that no circuit token
// ever holds (zero in every circuit embedding row, never written by a circuit
// layer): on circuit tokens that term is a sum of exact zeros, so the circuit
// computes bit for bit what it computed alone; on text tokens u is a direction
// on which every base embedding has a positive projection (a shared mean
// direction, searched for over the whole embedding table), and K is set per
// row from an interval bound of the row's own value over the whole table, so
// that the pre-activation is at most -kMuteLevel for every text token.  Then
// every SiLU returns exactly -0, every write strength sigmoid(b) is exactly 0,
// every decay exp(g) is exactly 1 and every GDN output is exactly 0: the
// residual of a text token leaves the circuit exactly as it entered, and the
// base layers compute what they compute without the circuit.
#pragma once

#include "model_host/machine_circuit/circuit.h"
#include "model_host/tokens/vocab.h"
#include "model_host/qwen/checkpoint.h"

#include <nlohmann/json.hpp>

#include <map>
#include <optional>
#include <string>

namespace qgpu::chat {

// Pre-activations of the circuit on text tokens are at most -kMuteLevel.
inline constexpr float kMuteLevel = 200.f;
// The circuit tokens' rows of the (untied) merged LM head: their output fields times this.
inline constexpr float kHeadScale = 1.f / 16;

// A Qwen3.5 checkpoint as its files hold it: the text model (canonical names,
// fp32), the config.json as written (text-only or vision-language layout), and
// the tensors the text model does not use (vision tower, MTP head) by their HF
// names, carried through a merge untouched.
struct BaseModel {
  qwen::Checkpoint text;
  nlohmann::json config_json;                       // as on disk; null: text layout from text.config
  std::map<std::string, torch::Tensor> extra;       // HF name -> tensor (fp32)
  torch::ScalarType dtype = torch::kFloat32;        // how most of the base's tensors are stored
  // The dtype each tensor is stored in where it differs from `dtype` or is
  // known (canonical names for the text model's tensors, HF names for
  // `extra`): Qwen3.5's checkpoints keep A_log and the GDN norm weights in
  // F32 among BF16 tensors, and a merge writes every base tensor back in the
  // dtype it was read in, byte for byte.
  std::map<std::string, torch::ScalarType> stored_dtypes;
  bool vision_language = false;                     // names under "model.language_model."
  // Rows written after a text-model tensor's own when saved (canonical name
  // -> a sparse matrix of the same width).  A merge for the disk only
  // (MergeOptions::vocab_tails) keeps the merged vocabulary's base rows and
  // the rest apart this way instead of forming the [V, H] matrices.
  std::map<std::string, torch::Tensor> tails;

  // The dtype `name` (as in `stored_dtypes`) is written in.
  torch::ScalarType dtype_of(const std::string& name) const;

  // Reads config.json and the safetensors (single or sharded).
  static BaseModel load(const std::string& dir);
  // Writes config.json and safetensors: text-model tensors (and extras) in
  // their stored dtype (dtype_of), except those named in `fp32_tensors`
  // (canonical names), which go to a second shard in fp32.
  void save(const std::string& dir, const std::vector<std::string>& fp32_tensors = {}) const;
};

struct MergeOptions {
  int64_t token_base = gpu::kTokenBase;   // id of the circuit's first token
  int mute_dims = 64;                      // at most this many dimensions of U carry the mute term
  float amplifier_gain = 4096.f;           // down weight of the amplifier (times 1 / (1 + w) of the final norm)
  // The sink (docs/merge.md section 4): at most this many dimensions (any
  // but the circuit's output fields, the mute direction's and the anchor),
  // chosen on the base's final hidden states over random text.
  int sink_dims = 32;
  int calibration_sequences = 8, calibration_length = 64;
  uint64_t calibration_seed = 3;
  double sink_gap = 64;      // nats below the base's log-partition at every calibration position
  double sink_margin = 2;    // the projection taken as the least seen at calibration divided by this
  double sink_level = 1;     // what the amplifier writes on the sink direction, relative to a field
  // The merged embedding and LM head as the base's rows (shared, not copied)
  // plus a sparse tail of the rows past the base's (BaseModel::tails), for
  // save_merged only: the merged model is then not runnable in memory.  At
  // Qwen3.5's vocabulary the whole matrices would take over 10 GB in fp32.
  bool vocab_tails = false;
};

struct MergeReport {
  int circuit_layers = 0, base_layers = 0;
  int64_t base_vocab = 0, vocab = 0;
  int free_dims = 0;            // |U|
  int mute_dims = 0;            // dimensions u uses
  double min_projection = 0;    // min over text tokens of u . (embedding / rms)
  double max_mute_gain = 0;     // largest K
  int64_t muted_rows = 0;       // pre-activation rows that got the term
  int64_t zero_rows = 0;        // base embedding rows that are all zero (need no mute)
  double worst_bound = 0;       // largest bound of a muted pre-activation on text (<= -kMuteLevel)
  int output_dims = 0;          // circuit output dimensions the amplifier scales
  int fields = 0;               // output fields (one-hot each)
  double suppression = 0;       // rho: the amplifier's -rho u at circuit positions, relative to a field's level
  int64_t circuit_tokens = 0;  // ids past the base's: reserved rows and circuit tokens
  double field_bound = 0;       // largest |fields . h| a circuit token gets at a text position (guarantee)
  int sink_dims = 0;            // dimensions the sink uses (0: none)
  int64_t calibration_positions = 0;
  double sink_min_projection = 0;   // min over calibration positions of -s_hat . h
  double sink_projection_mean = 0, sink_projection_sd = 0;
  double sink_scale = 0;        // lambda
  double sink_worst_gap = 0;    // max over calibration positions of s . h - logsumexp(base logits)
  std::string text() const;
};

struct Merged {
  BaseModel model;                      // the merged checkpoint, in the base's layout
  std::optional<gpu::Layout> layout;    // the circuit's Layout with the merged sizes, when it had one
  std::vector<std::string> circuit_tensors;   // canonical names of the circuit's and amplifier's tensors
  int64_t token_base = gpu::kTokenBase;        // the circuit's first token id
  MergeReport report;
};

// Merges; `circuit` is consumed (its tensors are modified in place).  Throws
// std::invalid_argument when the two do not fit together (sizes, vocabulary),
// std::runtime_error when no mute direction exists for this base.
Merged merge(const BaseModel& base, qwen::Checkpoint circuit, std::optional<gpu::Layout> layout,
             const MergeOptions& options = {});

// Writes the merged model to `dir`: config.json, safetensors (base tensors in
// the base's dtype, circuit tensors in fp32), qgpu-gpu.json when there is a
// layout, and the tokenizer files found in `tokenizer_dir`: tokenizer.json
// with every circuit token added by name (circuit_token_name), and
// generation_config.json (the base's, or a new one) whose suppress_tokens
// lists every id past the base's, so that text generation never picks one.
void save_merged(const Merged& merged, const std::string& dir, const std::string& tokenizer_dir);
// "<|qgpu:EXEC(12)|>" for the GPU's tokens (names of model_host/tokens/vocab.h),
// "<|qgpu:t7|>" (the 7th circuit token) for a circuit without a GPU layout.
std::string circuit_token_name(const Merged& merged, int64_t id);
// The merged tokenizer.json: the base's `tokenizer_json` with an added token
// for every circuit id.
nlohmann::json merged_tokenizer(const Merged& merged, nlohmann::json tokenizer_json);

// Reads a model directory as a checkpoint plus its Layout when it has one.
struct LoadedMerged {
  qwen::Checkpoint checkpoint;
  std::optional<gpu::Layout> layout;
};
LoadedMerged load_merged(const std::string& dir);

}  // namespace qgpu::chat
