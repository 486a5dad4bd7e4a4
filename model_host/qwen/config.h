// Qwen3.5 text-model configuration: the sizes every other part of the runtime
// reads, parsed from and written to Hugging Face's `config.json` layout.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace qgpu::qwen {

struct Config {
  int64_t hidden_size = 0, intermediate_size = 0, num_hidden_layers = 0, vocab_size = 0;
  // Gated DeltaNet (linear-attention) layers.
  int64_t linear_num_key_heads = 0, linear_num_value_heads = 0, linear_key_head_dim = 0,
          linear_value_head_dim = 0, linear_conv_kernel_dim = 0;
  // Full-attention layers (output-gated, grouped-query).
  int64_t num_attention_heads = 0, num_key_value_heads = 0, head_dim = 0;
  double rms_norm_eps = 1e-6, rope_theta = 1e7, partial_rotary_factor = 0.25;
  bool tie_word_embeddings = true;
  std::vector<std::string> layer_types;  // "linear_attention" | "full_attention", one per layer

  // Accepts the text-only layout (model_type "qwen3_5_text") and the
  // vision-language layout that nests the text model under "text_config".
  // Rope settings are read from "rope_parameters" (current transformers) or
  // from top-level "rope_theta"/"partial_rotary_factor" (older files).
  static Config from_json(const nlohmann::json&);
  // The text-only HF layout (model_type "qwen3_5_text").
  nlohmann::json to_json() const;
  // Qwen3.5-2B's sizes with `num_layers` layers (every 4th full attention,
  // as in the released model) and the given vocabulary.
  static Config qwen35_2b(int64_t num_layers, int64_t vocab_size);

  // Derived sizes.
  int64_t linear_key_dim() const { return linear_num_key_heads * linear_key_head_dim; }
  int64_t linear_value_dim() const { return linear_num_value_heads * linear_value_head_dim; }
  int64_t linear_conv_dim() const { return 2 * linear_key_dim() + linear_value_dim(); }
  int64_t rotary_dim() const { return static_cast<int64_t>(head_dim * partial_rotary_factor); }
  bool is_full_attention(int layer) const { return layer_types.at(layer) == "full_attention"; }

  // Throws std::invalid_argument naming the first inconsistent field.
  void validate() const;
};

}  // namespace qgpu::qwen
