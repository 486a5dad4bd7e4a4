#include "model_host/qwen/config.h"

#include <stdexcept>

namespace qgpu::qwen {
namespace {

using nlohmann::json;

int64_t required_int(const json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_number_integer())
    throw std::invalid_argument(std::string("config: missing or non-integer \"") + key + "\"");
  return it->get<int64_t>();
}

// Number of rotary frequencies per position axis for multimodal rope.  Text
// tokens use the same position on all three axes, which makes interleaved
// multimodal rope equal plain rope; the split is written only so that HF
// accepts the file for any head size ([11, 11, 10] for Qwen3.5's 32).
json mrope_section(int64_t rotary_dim) {
  int64_t half = rotary_dim / 2, a = (half + 2) / 3;
  return json::array({a, a, half - 2 * a});
}

}  // namespace

Config Config::from_json(const json& root) {
  const json& j = root.contains("text_config") ? root.at("text_config") : root;
  Config c;
  c.hidden_size = required_int(j, "hidden_size");
  c.intermediate_size = required_int(j, "intermediate_size");
  c.num_hidden_layers = required_int(j, "num_hidden_layers");
  c.vocab_size = required_int(j, "vocab_size");
  c.linear_num_key_heads = required_int(j, "linear_num_key_heads");
  c.linear_num_value_heads = required_int(j, "linear_num_value_heads");
  c.linear_key_head_dim = required_int(j, "linear_key_head_dim");
  c.linear_value_head_dim = required_int(j, "linear_value_head_dim");
  c.linear_conv_kernel_dim = required_int(j, "linear_conv_kernel_dim");
  c.num_attention_heads = required_int(j, "num_attention_heads");
  c.num_key_value_heads = required_int(j, "num_key_value_heads");
  c.head_dim = j.contains("head_dim") ? required_int(j, "head_dim")
                                      : c.hidden_size / c.num_attention_heads;
  c.rms_norm_eps = j.value("rms_norm_eps", 1e-6);
  // Rope: current transformers nest it in rope_parameters; older files keep
  // rope_theta / partial_rotary_factor at the top (Qwen3-Next defaults otherwise).
  c.rope_theta = j.value("rope_theta", 10000.0);
  c.partial_rotary_factor = j.value("partial_rotary_factor", 0.25);
  if (j.contains("rope_parameters") && j["rope_parameters"].is_object()) {
    const json& r = j["rope_parameters"];
    c.rope_theta = r.value("rope_theta", c.rope_theta);
    c.partial_rotary_factor = r.value("partial_rotary_factor", c.partial_rotary_factor);
  }
  // tie_word_embeddings lives in text_config or, for vision-language files, at the top.
  if (j.contains("tie_word_embeddings")) c.tie_word_embeddings = j["tie_word_embeddings"].get<bool>();
  else c.tie_word_embeddings = root.value("tie_word_embeddings", false);
  if (j.contains("layer_types")) {
    c.layer_types = j["layer_types"].get<std::vector<std::string>>();
  } else {
    int64_t interval = j.value("full_attention_interval", int64_t{4});
    for (int64_t i = 0; i < c.num_hidden_layers; ++i)
      c.layer_types.push_back((i + 1) % interval == 0 ? "full_attention" : "linear_attention");
  }
  c.validate();
  return c;
}

json Config::to_json() const {
  json j;
  j["architectures"] = json::array({"Qwen3_5ForCausalLM"});
  j["model_type"] = "qwen3_5_text";
  j["hidden_size"] = hidden_size;
  j["intermediate_size"] = intermediate_size;
  j["num_hidden_layers"] = num_hidden_layers;
  j["vocab_size"] = vocab_size;
  j["linear_num_key_heads"] = linear_num_key_heads;
  j["linear_num_value_heads"] = linear_num_value_heads;
  j["linear_key_head_dim"] = linear_key_head_dim;
  j["linear_value_head_dim"] = linear_value_head_dim;
  j["linear_conv_kernel_dim"] = linear_conv_kernel_dim;
  j["num_attention_heads"] = num_attention_heads;
  j["num_key_value_heads"] = num_key_value_heads;
  j["head_dim"] = head_dim;
  j["rms_norm_eps"] = rms_norm_eps;
  j["hidden_act"] = "silu";
  j["attn_output_gate"] = true;
  j["attention_bias"] = false;
  j["tie_word_embeddings"] = tie_word_embeddings;
  j["layer_types"] = layer_types;
  j["max_position_embeddings"] = 262144;
  j["rope_parameters"] = {{"rope_type", "default"},
                          {"rope_theta", rope_theta},
                          {"partial_rotary_factor", partial_rotary_factor},
                          {"mrope_interleaved", true},
                          {"mrope_section", mrope_section(rotary_dim())}};
  j["torch_dtype"] = "float32";
  return j;
}

Config Config::qwen35_2b(int64_t num_layers, int64_t vocab_size) {
  Config c;
  c.hidden_size = 2048;
  c.intermediate_size = 6144;
  c.num_hidden_layers = num_layers;
  c.vocab_size = vocab_size;
  c.linear_num_key_heads = 16;
  c.linear_num_value_heads = 16;
  c.linear_key_head_dim = 128;
  c.linear_value_head_dim = 128;
  c.linear_conv_kernel_dim = 4;
  c.num_attention_heads = 8;
  c.num_key_value_heads = 2;
  c.head_dim = 256;
  c.rms_norm_eps = 1e-6;
  c.rope_theta = 1e7;
  c.partial_rotary_factor = 0.25;
  c.tie_word_embeddings = true;
  for (int64_t i = 0; i < num_layers; ++i)
    c.layer_types.push_back((i + 1) % 4 == 0 ? "full_attention" : "linear_attention");
  return c;
}

void Config::validate() const {
  auto fail = [](const std::string& what) { throw std::invalid_argument("config: " + what); };
  for (auto [name, v] : {std::pair<const char*, int64_t>{"hidden_size", hidden_size},
                         {"intermediate_size", intermediate_size},
                         {"num_hidden_layers", num_hidden_layers},
                         {"vocab_size", vocab_size},
                         {"linear_num_key_heads", linear_num_key_heads},
                         {"linear_num_value_heads", linear_num_value_heads},
                         {"linear_key_head_dim", linear_key_head_dim},
                         {"linear_value_head_dim", linear_value_head_dim},
                         {"linear_conv_kernel_dim", linear_conv_kernel_dim},
                         {"num_attention_heads", num_attention_heads},
                         {"num_key_value_heads", num_key_value_heads},
                         {"head_dim", head_dim}})
    if (v <= 0) fail(std::string(name) + " must be positive, got " + std::to_string(v));
  if (static_cast<int64_t>(layer_types.size()) != num_hidden_layers)
    fail("layer_types has " + std::to_string(layer_types.size()) + " entries but num_hidden_layers is " +
         std::to_string(num_hidden_layers));
  for (const auto& t : layer_types)
    if (t != "linear_attention" && t != "full_attention")
      fail("unknown layer type \"" + t + "\" (expected linear_attention or full_attention)");
  if (linear_num_value_heads % linear_num_key_heads != 0)
    fail("linear_num_value_heads must be a multiple of linear_num_key_heads");
  if (num_attention_heads % num_key_value_heads != 0)
    fail("num_attention_heads must be a multiple of num_key_value_heads");
  if (rotary_dim() % 2 != 0 || rotary_dim() > head_dim)
    fail("head_dim * partial_rotary_factor must be even and at most head_dim");
}

}  // namespace qgpu::qwen
