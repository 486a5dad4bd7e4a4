// Text left intact: a base model with a trained model's embedding statistics,
// and the next-token KL between a base and its merged model on text.
#pragma once

#include "model_host/chat/merge.h"
#include "model_host/qwen/model.h"

#include <cstdint>
#include <string>
#include <vector>

namespace qgpu::chat {

// A Qwen3.5-2B-shaped checkpoint (hidden 2048, GDN 16 x 128, MLP 6144, full
// attention every 4th layer) with random weights, whose embedding table has
// the statistics of a trained one: per-token norms spread log-normally, a
// shared mean direction, and outlier dimensions with large consistent offsets
// (stored rounded to bf16, as released checkpoints are; the GDN layers' A_log
// and norm weights in F32, as Qwen3.5's are).
struct BaseSpec {
  int layers = 2;
  int full_attention_every = 4;   // layer i is full attention when (i + 1) % this == 0
  int64_t vocab = 4096;
  uint64_t seed = 1;
  bool vision_language = false;   // nest the config under text_config, add vision and MTP tensors
  // Fraction of non-zero weights in the layers' matrices (1: dense, as a
  // trained model).  Plumbing tests use a few percent: the sparse executor
  // then skips most of each base layer, and the embedding stays dense.
  double density = 1.0;
  // Trained-like confidence (docs/merge.md section 4): the last layer's
  // shared direction (its norm in the final residual) and the Zipf-like prior
  // slope of the tied head (0: none, the base's logits stay those of random weights).
  // The shared direction's level is bias_level times the growth of the
  // residual's RMS from the second layer's input to the last layer's
  // (measured on random text), so that it is about the same share of the
  // final state at any depth (depth_scaled_bias; 1 and 2 layers: no growth).
  double bias_level = 100;
  double bias_gain = 1;
  bool depth_scaled_bias = true;
  double prior_slope = 1.5;
  // The final norm's mean gain 1 + w (w ~ N(gain - 1, 0.5 gain / 5)):
  // it scales the spread of the logits the rows' own entries give.
  double final_norm_gain = 2;
};
BaseModel trained_like_base(const BaseSpec& spec);

// Random text: `count` sequences of `length` ids below `vocab`.
std::vector<std::vector<int64_t>> random_text(int count, int length, int64_t vocab, uint64_t seed);

// How confident a model's next-token distributions are (a trained LM's: a
// few nats of entropy, top-1 often above 0.5, logits spread over tens of nats,
// most of the vocabulary never likely).
struct Confidence {
  int64_t positions = 0;
  double entropy_mean = 0, top1_mean = 0, top1_over_half = 0;
  double spread_mean = 0;         // max logit - median logit
  double range_mean = 0;          // max logit - min logit
  torch::Tensor never_likely;     // [vocab]: each token's largest probability over the positions
  // Anisotropy of the final-normed states (add_states): the mean cosine
  // between the states of distinct positions, and their projection on the
  // states' mean direction (mean / sd: how consistent its sign is).
  std::vector<torch::Tensor> states;   // [T, hidden] each
  void add(const torch::Tensor& logits);
  void add_states(const torch::Tensor& final_states) { states.push_back(final_states.to(torch::kFloat64)); }
  std::string text() const;
};

struct KlResult {
  int64_t positions = 0;
  // Over the base's vocabulary (the merged model's text distribution).
  double kl_mean = 0, kl_max = 0;
  double max_logit_diff = 0;      // largest |logit difference| on base ids
  bool identical = false;         // every base-id logit bit-identical
  // Over the merged model's whole vocabulary (circuit tokens included).
  double kl_full_mean = 0, kl_full_max = 0;
  double circuit_mass_mean = 0, circuit_mass_max = 0;   // probability of all circuit tokens together
  Confidence base;                // the base's distributions
  std::string text() const;
};

// Logits of `model` on each sequence (each from a fresh state).
std::vector<torch::Tensor> sequence_logits(const qwen::Model& model, const std::vector<std::vector<int64_t>>& seqs);
// KL(base || merged) per position from the two models' logits.
KlResult compare_logits(const std::vector<torch::Tensor>& base, const std::vector<torch::Tensor>& merged);

}  // namespace qgpu::chat
