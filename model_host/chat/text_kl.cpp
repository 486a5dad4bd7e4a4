#include "model_host/chat/text_kl.h"

#include <ATen/CPUGeneratorImpl.h>
#include <torch/utils.h>

#include <cmath>
#include <sstream>

namespace qgpu::chat {

BaseModel trained_like_base(const BaseSpec& spec) {
  torch::NoGradGuard no_grad;
  torch::Generator gen = at::detail::createCPUGenerator(spec.seed);
  auto randn = [&](std::vector<int64_t> shape, double sd) {
    return torch::randn(shape, gen, torch::TensorOptions().dtype(torch::kFloat32)).mul_(sd);
  };
  // Rounds a large matrix to bf16 in place, a block of rows at a time (no
  // copy of it: at Qwen3.5's vocabulary the embedding alone takes 2 GB in fp32).
  auto bf16_rows = [](torch::Tensor& t) {
    for (int64_t r = 0; r < t.size(0); r += 8192) {
      torch::Tensor b = t.narrow(0, r, std::min<int64_t>(8192, t.size(0) - r));
      b.copy_(b.to(torch::kBFloat16).to(torch::kFloat32));
    }
  };
  auto bf16 = [](torch::Tensor t) { return t.to(torch::kBFloat16).to(torch::kFloat32); };
  // A layer matrix: N(0, sd), thinned to `density`.
  auto weight = [&](std::vector<int64_t> shape, double sd) {
    torch::Tensor w = randn(shape, sd);
    if (spec.density < 1) w *= torch::rand(shape, gen).lt(spec.density).to(torch::kFloat32);
    return bf16(w);
  };
  BaseModel b;
  b.dtype = torch::kBFloat16;
  b.vision_language = spec.vision_language;
  qwen::Config c = qwen::Config::qwen35_2b(spec.layers, spec.vocab);
  for (int i = 0; i < spec.layers; ++i)
    c.layer_types[i] = (i + 1) % spec.full_attention_every == 0 ? "full_attention" : "linear_attention";
  b.text.config = c;
  const int64_t H = c.hidden_size, I = c.intermediate_size;
  auto& t = b.text.tensors;

  // Embeddings: noise of 0.02 per entry; a shared mean direction (dense, a
  // third of a typical row's norm); 24 outlier dimensions with offsets of
  // 5-10 sigma and three times the spread; per-token scale log-normal.
  const double sigma = 0.02;
  torch::Tensor E = randn({spec.vocab, H}, sigma);
  torch::Tensor mu = randn({H}, 1.0);
  mu = mu / mu.norm() * (0.33 * sigma * std::sqrt(double(H)));
  E += mu;
  torch::Tensor outliers = torch::randperm(H, gen).narrow(0, 0, 24);
  for (int64_t i = 0; i < 24; ++i) {
    const int64_t d = outliers[i].item<int64_t>();
    const double offset = (i % 2 ? -1 : 1) * sigma * (5 + 5 * torch::rand({1}, gen).item<double>());
    E.select(1, d).mul_(3).add_(offset);
  }
  E *= torch::exp(randn({spec.vocab, 1}, 0.3));
  bf16_rows(E);
  t["embed_tokens.weight"] = std::move(E);
  // The final norm's gain (spec.final_norm_gain): trained models' final
  // norms scale above the layers' (logits of a tied head then spread over
  // tens of nats).
  t["norm.weight"] = bf16((spec.final_norm_gain - 1) + randn({H}, 0.1 * spec.final_norm_gain));
  for (int l = 0; l < spec.layers; ++l) {
    const std::string p = "layers." + std::to_string(l) + ".";
    t[p + "input_layernorm.weight"] = bf16(randn({H}, 0.05));
    t[p + "post_attention_layernorm.weight"] = bf16(randn({H}, 0.05));
    t[p + "mlp.gate_proj.weight"] = weight({I, H}, 0.02);
    t[p + "mlp.up_proj.weight"] = weight({I, H}, 0.02);
    t[p + "mlp.down_proj.weight"] = weight({H, I}, 0.02);
    if (c.is_full_attention(l)) {
      const int64_t D = c.head_dim;
      t[p + "self_attn.q_proj.weight"] = weight({c.num_attention_heads * D * 2, H}, 0.02);
      t[p + "self_attn.k_proj.weight"] = weight({c.num_key_value_heads * D, H}, 0.02);
      t[p + "self_attn.v_proj.weight"] = weight({c.num_key_value_heads * D, H}, 0.02);
      t[p + "self_attn.o_proj.weight"] = weight({H, c.num_attention_heads * D}, 0.02);
      t[p + "self_attn.q_norm.weight"] = bf16(randn({D}, 0.05));
      t[p + "self_attn.k_norm.weight"] = bf16(randn({D}, 0.05));
    } else {
      const std::string a = p + "linear_attn.";
      const int64_t nv = c.linear_num_value_heads;
      t[a + "in_proj_qkv.weight"] = weight({c.linear_conv_dim(), H}, 0.02);
      t[a + "in_proj_z.weight"] = weight({c.linear_value_dim(), H}, 0.02);
      t[a + "in_proj_b.weight"] = weight({nv, H}, 0.02);
      t[a + "in_proj_a.weight"] = weight({nv, H}, 0.02);
      t[a + "conv1d.weight"] = bf16(randn({c.linear_conv_dim(), 1, c.linear_conv_kernel_dim}, 0.3));
      t[a + "out_proj.weight"] = weight({H, c.linear_value_dim()}, 0.02);
      // Stored in F32 among BF16 tensors, as Qwen3.5's checkpoints store them.
      t[a + "A_log"] = torch::log(1 + 15 * torch::rand({nv}, gen));
      t[a + "dt_bias"] = bf16(torch::ones({nv}));
      t[a + "norm.weight"] = 1 + randn({c.linear_value_head_dim}, 0.05);
      b.stored_dtypes[a + "A_log"] = b.stored_dtypes[a + "norm.weight"] = torch::kFloat32;
    }
  }
  // Anisotropic final hidden states: trained models' last-layer states share
  // a dominant direction (random positions' states have cosines well above 0).
  // Here 64 units of the last layer's MLP with gate = up (their output
  // (r.x)^2 sigmoid(r.x) is never negative, whatever the input) write one
  // fixed dense direction v, at a level that grows with the residual
  // (depth_scaled_bias), so that the direction's share of the final state
  // does not fade with depth.
  {
    const std::string p = "layers." + std::to_string(spec.layers - 1) + ".mlp.";
    constexpr int64_t kBiasUnits = 64;
    torch::Tensor units = torch::randperm(I, gen).narrow(0, 0, kBiasUnits);
    torch::Tensor v = randn({H}, 1.0);
    v = v / v.norm();
    for (int64_t j = 0; j < kBiasUnits; ++j) {
      const int64_t i = units[j].item<int64_t>();
      torch::Tensor r = weight({H}, 0.02 * spec.bias_gain);
      t[p + "gate_proj.weight"][i].copy_(r);
      t[p + "up_proj.weight"][i].copy_(r);
    }
    double growth = 1;
    if (spec.depth_scaled_bias && spec.layers > 2) {
      // The RMS of the last layer's input over that of the second layer's
      // (the final residual of a one-layer base, before its shared
      // direction), on random text: a deeper stack of random layers adds to
      // the residual, and the direction grows with it.
      b.text.validate();
      // (The dense executor for a dense base: one fp32 copy of the weights,
      // bit-identical to the sparse one's numbers.)
      const qwen::Model model(b.text, spec.density < 1 ? qwen::Exec::Sparse : qwen::Exec::Dense);
      double first = 0, last = 0;
      for (const auto& s : random_text(2, 32, spec.vocab, spec.seed + 2000)) {
        qwen::State st = model.new_state();
        const auto out = model.forward(st, s, {1, spec.layers - 1});
        first += out.residuals.at(0).pow(2).mean().item<double>();
        last += out.residuals.at(1).pow(2).mean().item<double>();
      }
      growth = std::sqrt(last / first);
    }
    for (int64_t j = 0; j < kBiasUnits; ++j)
      t[p + "down_proj.weight"].select(1, units[j].item<int64_t>()).copy_(bf16(v * (spec.bias_level * growth / kBiasUnits)));
  }
  b.text.validate();
  // A trained model's confidence (docs/merge.md section 4): the tied head
  // gives each token a prior logit b_t = -prior_slope * ln(rank_t + 1) (a
  // Zipf-like frequency order, rank a random permutation) along the final
  // hidden states' mean direction m: the embedding rows get (b_t / a) m, a
  // the mean projection of a final hidden state on m, measured on random
  // text through the layers as generated.  Tokens of low rank are then never
  // likely (the tail), and the rows' own entries spread the rest.
  if (spec.prior_slope > 0) {
    qwen::Model model(b.text, spec.density < 1 ? qwen::Exec::Sparse : qwen::Exec::Dense);
    const auto seqs = random_text(2, 32, spec.vocab, spec.seed + 1000);
    std::vector<torch::Tensor> hs;
    for (const auto& s : seqs) {
      qwen::State st = model.new_state();
      torch::Tensor x = model.forward(st, s, {spec.layers}).residuals.at(0);
      hs.push_back(x * torch::rsqrt(x.pow(2).mean(1, true) + c.rms_norm_eps) * (1 + t["norm.weight"]));
    }
    torch::Tensor h = torch::cat(hs);
    torch::Tensor m = h.mean(0);
    m = m / m.norm();
    const double a = h.matmul(m).mean().item<double>();
    torch::Tensor rank = torch::randperm(spec.vocab, gen).to(torch::kFloat32);
    torch::Tensor prior = -spec.prior_slope * torch::log(rank + 1) / a;
    torch::Tensor& emb = t["embed_tokens.weight"];
    for (int64_t r = 0; r < spec.vocab; r += 8192) {
      const int64_t n = std::min<int64_t>(8192, spec.vocab - r);
      emb.narrow(0, r, n).add_(prior.narrow(0, r, n).unsqueeze(1) * m.unsqueeze(0));
    }
    bf16_rows(emb);
  }
  if (spec.vision_language) {
    nlohmann::json text = c.to_json();
    text.erase("architectures");
    text["torch_dtype"] = "bfloat16";
    b.config_json = {{"architectures", {"Qwen3_5ForConditionalGeneration"}},
                     {"model_type", "qwen3_5"},
                     {"text_config", text},
                     {"vision_config", {{"depth", 1}, {"hidden_size", 64}, {"model_type", "qwen3_5"}}},
                     {"image_token_id", 248056},
                     {"tie_word_embeddings", true},
                     {"torch_dtype", "bfloat16"}};
    b.extra["model.visual.patch_embed.proj.weight"] = bf16(randn({64, 3, 2, 16, 16}, 0.02));
    b.extra["model.visual.blocks.0.attn.qkv.weight"] = bf16(randn({192, 64}, 0.02));
    b.extra["model.visual.merger.linear_fc2.weight"] = bf16(randn({H, 256}, 0.02));
    b.extra["mtp.fc.weight"] = bf16(randn({H, 2 * H}, 0.02));
  }
  b.text.validate();
  return b;
}

std::vector<std::vector<int64_t>> random_text(int count, int length, int64_t vocab, uint64_t seed) {
  torch::Generator gen = at::detail::createCPUGenerator(seed);
  std::vector<std::vector<int64_t>> out;
  for (int i = 0; i < count; ++i) {
    torch::Tensor ids = torch::randint(vocab, {length}, gen, torch::kInt64);
    out.emplace_back(ids.data_ptr<int64_t>(), ids.data_ptr<int64_t>() + length);
  }
  return out;
}

std::vector<torch::Tensor> sequence_logits(const qwen::Model& model, const std::vector<std::vector<int64_t>>& seqs) {
  std::vector<torch::Tensor> out;
  for (const auto& s : seqs) {
    qwen::State st = model.new_state();
    out.push_back(model.forward(st, s).logits);
  }
  return out;
}

KlResult compare_logits(const std::vector<torch::Tensor>& base, const std::vector<torch::Tensor>& merged) {
  KlResult r;
  r.identical = true;
  double kl_sum = 0, full_sum = 0, mass_sum = 0;
  for (size_t i = 0; i < base.size(); ++i) {
    const int64_t Vb = base[i].size(1);
    torch::Tensor mb = merged[i].narrow(1, 0, Vb);
    r.identical = r.identical && torch::equal(mb, base[i]);
    r.max_logit_diff = std::max(r.max_logit_diff, (mb - base[i]).abs().max().item<double>());
    torch::Tensor lp = torch::log_softmax(base[i].to(torch::kFloat64), 1);
    torch::Tensor lq = torch::log_softmax(mb.to(torch::kFloat64), 1);
    torch::Tensor lf = torch::log_softmax(merged[i].to(torch::kFloat64), 1).narrow(1, 0, Vb);
    torch::Tensor p = lp.exp();
    torch::Tensor kl = (p * (lp - lq)).sum(1).clamp_min(0), klf = (p * (lp - lf)).sum(1).clamp_min(0);
    kl_sum += kl.sum().item<double>();
    full_sum += klf.sum().item<double>();
    r.kl_max = std::max(r.kl_max, kl.max().item<double>());
    r.kl_full_max = std::max(r.kl_full_max, klf.max().item<double>());
    torch::Tensor mass = torch::log_softmax(merged[i].to(torch::kFloat64), 1).narrow(1, Vb, merged[i].size(1) - Vb)
                             .exp().sum(1);
    mass_sum += mass.sum().item<double>();
    r.circuit_mass_max = std::max(r.circuit_mass_max, mass.max().item<double>());
    r.base.add(base[i]);
    r.positions += base[i].size(0);
  }
  r.kl_mean = kl_sum / double(std::max<int64_t>(1, r.positions));
  r.kl_full_mean = full_sum / double(std::max<int64_t>(1, r.positions));
  r.circuit_mass_mean = mass_sum / double(std::max<int64_t>(1, r.positions));
  return r;
}

std::string KlResult::text() const {
  std::ostringstream o;
  o.precision(3);
  o << "next-token KL(base || merged) over " << positions << " text positions, base vocabulary: mean " << kl_mean
    << ", max " << kl_max << " (logits " << (identical ? "bit-identical" : "differ") << ", max |diff| "
    << max_logit_diff << ")\n"
    << "over the merged vocabulary (circuit tokens included): mean " << kl_full_mean << ", max " << kl_full_max
    << "; circuit tokens' probability together: mean " << circuit_mass_mean << ", max " << circuit_mass_max << "\n"
    << "the base's next-token distributions: " << base.text() << "\n";
  return o.str();
}

void Confidence::add(const torch::Tensor& logits) {
  torch::Tensor z = logits.to(torch::kFloat64);
  torch::Tensor lp = torch::log_softmax(z, 1), p = lp.exp();
  torch::Tensor entropy = -(p * lp).sum(1);
  torch::Tensor top = std::get<0>(p.max(1));
  torch::Tensor spread = std::get<0>(z.max(1)) - std::get<0>(z.median(1));
  torch::Tensor range = std::get<0>(z.max(1)) - std::get<0>(z.min(1));
  const double n = double(positions), k = double(z.size(0));
  auto avg = [&](double& acc, const torch::Tensor& v) { acc = (acc * n + v.sum().item<double>()) / (n + k); };
  avg(entropy_mean, entropy);
  avg(top1_mean, top);
  avg(top1_over_half, top.gt(0.5).to(torch::kFloat64));
  avg(spread_mean, spread);
  avg(range_mean, range);
  torch::Tensor peak = std::get<0>(p.max(0));
  never_likely = never_likely.defined() ? torch::maximum(never_likely, peak) : peak;
  positions += z.size(0);
}

std::string Confidence::text() const {
  std::ostringstream o;
  o.precision(3);
  const double tail = never_likely.defined() ? never_likely.lt(1e-6).to(torch::kFloat64).mean().item<double>() : 0;
  o << positions << " positions, entropy mean " << entropy_mean << " nats, top-1 probability mean " << top1_mean
    << " (> 0.5 at " << 100 * top1_over_half << "%), logit max - median " << spread_mean << ", max - min "
    << range_mean << "; " << 100 * tail << "% of the vocabulary never above 1e-6";
  if (!states.empty()) {
    torch::Tensor h = torch::cat(states);
    torch::Tensor unit = h / h.norm(2, 1, true);
    const double n = double(h.size(0));
    const double cos = n > 1 ? ((unit.sum(0).pow(2).sum().item<double>() - n) / (n * (n - 1))) : 0;
    torch::Tensor m = h.mean(0);
    torch::Tensor proj = h.matmul(m / m.norm());
    o << "; final states: mean cosine between positions " << cos << ", projection on their mean direction "
      << proj.mean().item<double>() << " +- " << proj.std().item<double>() << " (least " << proj.min().item<double>() << ")";
  }
  return o.str();
}

}  // namespace qgpu::chat
