#include "model_host/chat/merge.h"

#include "model_host/chat/text_kl.h"
#include "model_host/model_cache/build_model.h"
#include "model_host/qwen/safetensors.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <stdexcept>

namespace qgpu::chat {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

using qwen::read_text_file;
using qwen::write_text_file;

// The base's safetensors files; a base without any is refused.
std::vector<fs::path> base_safetensors(const fs::path& dir) {
  auto files = qwen::safetensors_files(dir);
  if (files.empty()) throw std::runtime_error("no safetensors files in " + dir.string());
  return files;
}

// The text section of a config.json: text_config for the vision-language layout.
json& text_section(json& j) { return j.contains("text_config") ? j["text_config"] : j; }

// Which rows and which columns of a matrix hold a non-zero, read through
// written_nonzeros (a lazily zero-filled matrix's unwritten pages stay unread).
struct Lines {
  std::vector<bool> rows, cols;
};
Lines lines(const torch::Tensor& t) {
  Lines l{std::vector<bool>(t.size(0), false), std::vector<bool>(t.size(1), false)};
  for (int64_t i : qwen::written_nonzeros(t).index) l.rows[i / t.size(1)] = l.cols[i % t.size(1)] = true;
  return l;
}

std::string layer_name(int l, const std::string& rest) { return "layers." + std::to_string(l) + "." + rest; }

}  // namespace

std::string MergeReport::text() const {
  std::ostringstream o;
  o << "circuit layers " << circuit_layers << " + amplifier 1 + base layers " << base_layers << " = "
    << circuit_layers + 1 + base_layers << "; vocabulary " << base_vocab << " base ids, " << vocab << " in all\n"
    << "muting: " << free_dims << " residual dimensions free of the circuit, " << mute_dims
    << " carry the mute direction; min projection of a text embedding " << min_projection << "; "
    << muted_rows << " pre-activation rows muted, largest gain " << max_mute_gain << ", " << zero_rows
    << " all-zero embedding rows (safe as they are)"
    << ", every muted pre-activation on text <= " << worst_bound << "\n"
    << "amplifier: " << output_dims << " output dimensions (" << fields << " fields), text suppressed at circuit "
    << "positions by rho = " << suppression << "; circuit LM-head rows scaled by " << kHeadScale << "\n"
    << "ids past the base's at text positions (guarantee): each of the " << circuit_tokens
    << " scores the sink s . h plus at most " << field_bound << " from its fields\n";
  if (sink_dims > 0)
    o << "sink (a measurement, not a guarantee: " << calibration_positions << " calibration positions of random text): "
      << sink_dims << " dimensions, the final states' projection -s_hat . h " << sink_projection_mean << " +- "
      << sink_projection_sd << " (" << sink_projection_mean / sink_projection_sd << " sd; least " << sink_min_projection
      << "), scale " << sink_scale << ", s . h - logsumexp(base logits) <= " << sink_worst_gap
      << " nats, so those ids together take at most " << std::exp(std::log(double(circuit_tokens)) + field_bound + sink_worst_gap)
      << " of the probability there\n";
  else
    o << "sink: none (" << (calibration_positions ? "the base's final states have no consistent sign: projection " + std::to_string(sink_projection_mean) + " +- " + std::to_string(sink_projection_sd) + ", least " + std::to_string(sink_min_projection) : std::string("no calibration"))
      << "); ids past the base's are not suppressed at text positions\n";
  return o.str();
}

BaseModel BaseModel::load(const std::string& dir_name) {
  fs::path dir(dir_name);
  BaseModel b;
  const std::string config_text = read_text_file(dir / "config.json");
  b.config_json = json::parse(config_text);
  try {
    b.text.config = qwen::Config::from_json(b.config_json);
  } catch (const std::exception& e) {
    throw std::runtime_error((dir / "config.json").string() + ": " + e.what());
  }
  const auto files = base_safetensors(dir);
  static const std::string vl = "model.language_model.", text = "model.";
  std::map<torch::ScalarType, int64_t> counts;
  for (const auto& f : files)
    qwen::safetensors::read(f.string(), [&](const std::string& hf, torch::Tensor t, torch::ScalarType stored) {
      std::string name = hf;
      if (hf.rfind(vl, 0) == 0) {
        b.vision_language = true;
        name = hf.substr(vl.size());
        b.text.tensors[name] = std::move(t);
      } else if (hf.rfind("model.visual.", 0) != 0 && hf.rfind(text, 0) == 0) {
        name = hf.substr(text.size());
        b.text.tensors[name] = std::move(t);
      } else if (hf == "lm_head.weight") {
        b.text.tensors[hf] = std::move(t);
      } else {
        b.extra[hf] = std::move(t);
      }
      b.stored_dtypes[name] = stored;
      ++counts[stored];
    });
  b.dtype = std::max_element(counts.begin(), counts.end(), [](const auto& x, const auto& y) {
              return x.second < y.second;
            })->first;
  if (b.config_json.contains("text_config")) b.vision_language = true;
  b.text.validate();
  return b;
}

torch::ScalarType BaseModel::dtype_of(const std::string& name) const {
  const auto it = stored_dtypes.find(name);
  return it == stored_dtypes.end() ? dtype : it->second;
}

void BaseModel::save(const std::string& dir_name, const std::vector<std::string>& fp32_tensors) const {
  fs::path dir(dir_name);
  if (tails.empty()) {
    text.validate();
  } else {
    for (const auto& [name, tail] : tails) {
      const auto it = text.tensors.find(name);
      if (it == text.tensors.end() || it->second.size(0) + tail.size(0) != text.config.vocab_size)
        throw std::invalid_argument("BaseModel::save: the rows of " + name + " and its tail do not make the vocabulary");
    }
  }
  fs::create_directories(dir);
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ".safetensors" || e.path().filename() == "model.safetensors.index.json" ||
        e.path().filename() == "qgpu-sparse.bin")
      fs::remove(e.path());
  json cj = config_json;
  if (cj.is_null()) {
    cj = text.config.to_json();
    cj["torch_dtype"] = dtype == torch::kBFloat16 ? "bfloat16" : dtype == torch::kFloat16 ? "float16" : "float32";
  }
  write_text_file(dir / "config.json", cj.dump(2));
  const std::set<std::string> wide(fp32_tensors.begin(), fp32_tensors.end());
  const std::string prefix = vision_language ? "model.language_model." : "model.";
  std::map<std::string, std::vector<torch::Tensor>> narrow_part, wide_part;
  std::map<std::string, torch::ScalarType> stored;  // HF name -> dtype, for the narrow part
  for (const auto& [name, t] : text.tensors) {
    const std::string hf = name == "lm_head.weight" ? name : prefix + name;
    auto& parts = (wide.count(name) ? wide_part : narrow_part)[hf];
    parts.push_back(t);
    if (const auto tail = tails.find(name); tail != tails.end()) parts.push_back(tail->second);
    if (!wide.count(name)) stored[hf] = dtype_of(name);
  }
  for (const auto& [name, t] : extra) narrow_part[name] = {t}, stored[name] = dtype_of(name);
  if (wide_part.empty()) {
    qwen::safetensors::write_parts((dir / "model.safetensors").string(), narrow_part, dtype, stored);
    return;
  }
  const std::string a = "model-00001-of-00002.safetensors", b = "model-00002-of-00002.safetensors";
  qwen::safetensors::write_parts((dir / a).string(), narrow_part, dtype, stored);
  qwen::safetensors::write_parts((dir / b).string(), wide_part, torch::kFloat32, {});
  json index;
  uint64_t total = 0;
  auto numel = [](const std::vector<torch::Tensor>& parts) {
    uint64_t n = 0;
    for (const auto& t : parts) n += static_cast<uint64_t>(t.numel());
    return n;
  };
  for (const auto& [n, parts] : narrow_part)
    index["weight_map"][n] = a, total += numel(parts) * qwen::safetensors::element_bytes(stored.at(n));
  for (const auto& [n, parts] : wide_part) index["weight_map"][n] = b, total += numel(parts) * 4;
  index["metadata"]["total_size"] = total;
  write_text_file(dir / "model.safetensors.index.json", index.dump(2));
}

namespace {

// ---- The stages of a merge (docs/merge.md), in the order merge() runs them.

// 1. The base and the circuit fit together: same layer sizes, the circuit all
// linear attention, the base's vocabulary below the circuit's token base.
void check_compatible(const qwen::Config& bc, const qwen::Config& cc, const MergeOptions& opt) {
  auto mismatch = [](const std::string& what, int64_t b, int64_t c) {
    if (b != c)
      throw std::invalid_argument("merge: the base has " + what + " " + std::to_string(b) + ", the circuit " +
                                  std::to_string(c));
  };
  mismatch("hidden_size", bc.hidden_size, cc.hidden_size);
  mismatch("intermediate_size", bc.intermediate_size, cc.intermediate_size);
  mismatch("linear_num_key_heads", bc.linear_num_key_heads, cc.linear_num_key_heads);
  mismatch("linear_num_value_heads", bc.linear_num_value_heads, cc.linear_num_value_heads);
  mismatch("linear_key_head_dim", bc.linear_key_head_dim, cc.linear_key_head_dim);
  mismatch("linear_value_head_dim", bc.linear_value_head_dim, cc.linear_value_head_dim);
  mismatch("linear_conv_kernel_dim", bc.linear_conv_kernel_dim, cc.linear_conv_kernel_dim);
  if (bc.rms_norm_eps != cc.rms_norm_eps) throw std::invalid_argument("merge: rms_norm_eps differs");
  for (int l = 0; l < cc.num_hidden_layers; ++l)
    if (cc.is_full_attention(l)) throw std::invalid_argument("merge: circuit layer " + std::to_string(l) + " is not linear attention");
  if (bc.vocab_size > opt.token_base)
    throw std::invalid_argument("merge: the base's vocabulary (" + std::to_string(bc.vocab_size) +
                                ") reaches past the circuit's first token id " + std::to_string(opt.token_base));
  if (cc.vocab_size <= opt.token_base) throw std::invalid_argument("merge: the circuit has no tokens at or after its token base");
}

// A circuit tensor, dense or sparse (Storage::Sparse): the matrices are read
// through written_nonzeros only, and those edited become sparse (mute).
torch::Tensor& circuit_tensor(qwen::Checkpoint& circuit, const std::string& n) {
  auto it = circuit.tensors.find(n);
  if (it == circuit.tensors.end()) throw std::invalid_argument("merge: the circuit has no tensor " + n);
  return it->second;
}

// 2. What the circuit holds: its tokens' embedding entries, the residual
// dimensions its tokens and layers use, and its output fields.
struct CircuitFootprint {
  int64_t H = 0, Vb = 0, V = 0, token_base = 0;
  // The circuit rows' entries: row (from 0 = token_base), column, value.
  std::vector<int64_t> crow, ccol;
  std::vector<float> cval;
  torch::Tensor cr, cc, cv;   // the same as tensors
  torch::Tensor out_dims;     // where the circuit's final norm is non-zero (its output fields)
  torch::Tensor free_dims;    // U: no circuit token holds them, no circuit layer writes them
  int64_t fields = 0;         // one-hot output fields (the first token's entries but the anchor)
};

CircuitFootprint read_footprint(qwen::Checkpoint& circuit, int64_t Vb, int64_t token_base) {
  CircuitFootprint f;
  const qwen::Config& cc = circuit.config;
  f.H = cc.hidden_size, f.Vb = Vb, f.V = cc.vocab_size, f.token_base = token_base;
  const int64_t H = f.H, ncirc = f.V - token_base;
  const auto circuit_embed = circuit.tensors.find("embed_tokens.weight");
  if (circuit_embed == circuit.tensors.end()) throw std::invalid_argument("merge: the circuit has no tensor embed_tokens.weight");
  // Read through written_nonzeros: the circuit's lazily zero-filled tensors
  // span many GB whose unwritten pages must stay unread.
  {
    const qwen::NonZeros nz = qwen::written_nonzeros(circuit_embed->second);
    for (size_t i = 0; i < nz.index.size(); ++i)
      if (nz.index[i] / H >= token_base) {
        f.crow.push_back(nz.index[i] / H - token_base);
        f.ccol.push_back(nz.index[i] % H);
        f.cval.push_back(nz.value[i]);
      }
  }
  {
    int64_t anchors = 0;
    for (size_t i = 0; i < f.ccol.size(); ++i) anchors += f.ccol[i] == 0 && f.cval[i] == 1.f;
    if (anchors != ncirc)
      throw std::invalid_argument("merge: the circuit's anchor (dimension 0) is not 1 on every circuit token");
  }
  // Dimensions the circuit holds on its tokens: its embedding's columns and
  // every row a circuit layer writes.
  torch::Tensor used = torch::zeros({H}, torch::kBool);
  {
    auto u = used.accessor<bool, 1>();
    for (int64_t c : f.ccol) u[c] = true;
    for (int l = 0; l < cc.num_hidden_layers; ++l)
      for (const char* w : {"linear_attn.out_proj.weight", "mlp.down_proj.weight"}) {
        const std::vector<bool> rows = lines(circuit_tensor(circuit, layer_name(l, w))).rows;
        for (int64_t d = 0; d < H; ++d) u[d] = u[d] || rows[d];
      }
  }
  f.cr = torch::tensor(f.crow, torch::kInt64), f.cc = torch::tensor(f.ccol, torch::kInt64);
  f.cv = torch::tensor(f.cval, torch::kFloat32);
  f.out_dims = (circuit_tensor(circuit, "norm.weight") + 1).ne(0).nonzero().view({-1});
  f.free_dims = used.logical_not().nonzero().view({-1});
  if (f.free_dims.numel() == 0)
    throw std::runtime_error("merge: the circuit holds every residual dimension; nothing is left to mute it on");
  f.fields = std::count(f.crow.begin(), f.crow.end(), int64_t{0}) - 1;  // the first token's, but the anchor
  return f;
}

// 3. The mute direction u (docs/merge.md section 2): on free dimensions
// `sel`, every live text embedding normalised by its RMS projects on it by at
// least min_projection > 0; lo and hi bound each dimension of those
// normalised embeddings over the whole table.
struct MuteDirection {
  torch::Tensor lo, hi;       // [H]
  torch::Tensor sel, u;       // the dimensions and the unit direction on them
  double min_projection = 0;
  int64_t zero_rows = 0;      // all-zero embedding rows: safe as they are
};

constexpr int64_t kChunk = 8192;

MuteDirection find_mute_direction(const torch::Tensor& E, const torch::Tensor& free_dims, int mute_dims, double eps) {
  const int64_t Vb = E.size(0), H = E.size(1);
  MuteDirection md;
  md.lo = torch::full({H}, INFINITY), md.hi = torch::full({H}, -INFINITY);
  torch::Tensor sum = torch::zeros({H}, torch::kFloat64), sumsq = torch::zeros({H}, torch::kFloat64);
  auto normalised = [&](int64_t r0, int64_t n) {
    torch::Tensor x = E.narrow(0, r0, n).to(torch::kFloat32);
    return x * torch::rsqrt(x.pow(2).mean(1, true) + eps);
  };
  for (int64_t r = 0; r < Vb; r += kChunk) {
    torch::Tensor y = normalised(r, std::min(kChunk, Vb - r));
    md.lo = torch::minimum(md.lo, std::get<0>(y.min(0)));
    md.hi = torch::maximum(md.hi, std::get<0>(y.max(0)));
    sum += y.sum(0).to(torch::kFloat64);
    sumsq += y.pow(2).sum(0).to(torch::kFloat64);
  }
  // On the free dimensions with the strongest shared mean (relative to
  // spread), then a max-min search over the whole table.
  torch::Tensor mean = (sum / double(Vb)).to(torch::kFloat32);
  torch::Tensor sd = (sumsq / double(Vb) - (sum / double(Vb)).pow(2)).clamp_min(1e-12).sqrt().to(torch::kFloat32);
  torch::Tensor score = (mean.abs() / sd).index_select(0, free_dims);
  const int64_t k = std::min<int64_t>(mute_dims, free_dims.numel());
  md.sel = free_dims.index_select(0, std::get<1>(score.topk(k)));
  torch::Tensor Y = torch::empty({Vb, k});
  for (int64_t r = 0; r < Vb; r += kChunk) {
    const int64_t n = std::min(kChunk, Vb - r);
    Y.narrow(0, r, n).copy_(normalised(r, n).index_select(1, md.sel));
  }
  // All-zero rows (unused ids) are safe by construction: a zero input gives
  // zero pre-activations, so the circuit adds exactly 0 for them as it does
  // alone.  The mute direction is needed for the others.
  torch::Tensor live_rows = torch::zeros({Vb}, torch::kBool);
  for (int64_t r = 0; r < Vb; r += kChunk) {
    const int64_t n = std::min(kChunk, Vb - r);
    live_rows.narrow(0, r, n).copy_(E.narrow(0, r, n).ne(0).any(1));
  }
  md.zero_rows = Vb - live_rows.sum().item<int64_t>();
  Y = Y.index_select(0, live_rows.nonzero().view({-1}));
  torch::Tensor u = mean.index_select(0, md.sel);
  u = u / u.norm();
  torch::Tensor best = u.clone();
  double best_min = (Y.matmul(u)).min().item<double>();
  for (int it = 0; it < 3000; ++it) {
    torch::Tensor proj = Y.matmul(u);
    const int64_t worst = proj.argmin().item<int64_t>();
    const double m = proj[worst].item<double>();
    if (m > best_min) best_min = m, best = u.clone();
    torch::Tensor row = Y[worst];
    u = u + (0.2 / (1 + it / 20.0)) * row / row.norm();
    u = u / u.norm();
  }
  md.u = best;
  md.min_projection = best_min;
  if (best_min <= 0)
    throw std::runtime_error("merge: no direction on the circuit's free dimensions (" + std::to_string(k) + " of " +
                             std::to_string(free_dims.numel()) + " used) has a positive projection for every "
                             "text embedding of this base (best minimum " + std::to_string(best_min) +
                             "); the circuit cannot be muted on text");
  return md;
}

// 4. The sink (docs/merge.md section 4): every row past the base's in the LM
// head also holds s on a few dimensions, any but the circuit's output
// dimensions, the mute direction's and the anchor.  At a circuit position
// the amplifier writes sink_level * s_hat there (below), far above what the
// circuit or a base layer leaves on them, so s adds about lambda * L to
// every circuit token alike; at a text position s reads the base's own
// final hidden state, which on these dimensions has a consistent sign
// (trained models' final states share a direction, and their outlier
// dimensions keep their sign): the dimensions (the most consistent over
// the whole width: free dimensions alone are too few on a deeper base),
// s's direction and lambda come from the base run on random text
// (calibration), lambda such that s . h is at least sink_gap nats below the
// base's log-partition at every calibration position, with the projection
// taken as its least seen value divided by sink_margin.
struct Sink {
  torch::Tensor dims = torch::empty({0}, torch::kInt64), hat = torch::empty({0});
  torch::Tensor values = torch::empty({0});  // lambda * s_hat, as stored (the base's dtype)
};

Sink calibrate_sink(const BaseModel& base, const CircuitFootprint& f, const MuteDirection& md,
                    torch::ScalarType head_dtype, const MergeOptions& opt, MergeReport& rep) {
  Sink sink;
  if (opt.sink_dims <= 0 || opt.calibration_sequences <= 0) return sink;
  const qwen::Config& bc = base.text.config;
  const int64_t H = f.H, Vb = f.Vb;
  std::vector<bool> taken(H, false);
  for (int64_t j = 0; j < md.sel.numel(); ++j) taken[md.sel[j].item<int64_t>()] = true;
  for (int64_t j = 0; j < f.out_dims.numel(); ++j) taken[f.out_dims[j].item<int64_t>()] = true;
  taken[0] = true;
  std::vector<int64_t> cand;
  for (int64_t d = 0; d < H; ++d)
    if (!taken[d]) cand.push_back(d);
  if (cand.empty()) return sink;
  const torch::Tensor cd = torch::tensor(cand, torch::kInt64);
  const torch::Tensor base_final = base.text.tensors.at("norm.weight") + 1;
  std::vector<torch::Tensor> hs, lses;
  {
    // Dense: a trained base has few zero weights, and the dense executor
    // keeps one fp32 copy of each (the sparse one an index as well); the two
    // give bit-identical numbers.
    qwen::Model bm(base.text, qwen::Exec::Dense);
    for (const auto& seq : random_text(opt.calibration_sequences, opt.calibration_length, Vb, opt.calibration_seed)) {
      qwen::State st = bm.new_state();
      qwen::Outputs o = bm.forward(st, seq, {static_cast<int>(bc.num_hidden_layers)});
      const torch::Tensor x = o.residuals.at(0);
      hs.push_back((x * torch::rsqrt(x.pow(2).mean(1, true) + bc.rms_norm_eps) * base_final).index_select(1, cd));
      lses.push_back(torch::logsumexp(o.logits.narrow(1, 0, Vb).to(torch::kFloat64), 1));
    }
  }
  const torch::Tensor h = torch::cat(hs).to(torch::kFloat64), lse = torch::cat(lses);
  rep.calibration_positions = h.size(0);
  const torch::Tensor mu = h.mean(0), sd = h.std(0).clamp_min(1e-12);
  const int64_t k = std::min<int64_t>(opt.sink_dims, cd.numel());
  const torch::Tensor pick = std::get<1>((mu.abs() / sd).topk(k));
  torch::Tensor w = -(mu / sd.pow(2)).index_select(0, pick);  // Fisher's direction, pointing against the states
  w = w / w.norm();
  const torch::Tensor a = -h.index_select(1, pick).matmul(w);  // > 0 wanted at every position
  rep.sink_min_projection = a.min().item<double>();
  rep.sink_projection_mean = a.mean().item<double>();
  rep.sink_projection_sd = a.std().item<double>();
  // Positions not seen here: the projection taken as at least the least
  // seen divided by sink_margin, the log-partition as the least seen.
  // A measurement, not a guarantee: text whose final state projects
  // lower is not covered.
  const double a_low = rep.sink_min_projection / opt.sink_margin;
  if (a_low <= 0) return sink;
  const double lambda = (opt.sink_gap - lse.min().item<double>()) / a_low;
  if (lambda <= 0) return sink;
  sink.dims = cd.index_select(0, pick);
  sink.hat = w.to(torch::kFloat32);
  sink.values = (sink.hat * float(lambda)).to(head_dtype).to(torch::kFloat32);
  rep.sink_scale = lambda;
  rep.sink_dims = static_cast<int>(k);
  const torch::Tensor gap = h.index_select(1, pick).matmul(sink.values.to(torch::kFloat64)) - lse;
  rep.sink_worst_gap = gap.max().item<double>();
  return sink;
}

// 5. rho (docs/merge.md section 3): at circuit positions the amplifier also
// writes -rho * u on the mute dimensions, where every text embedding has a
// positive projection, so every text token scores below the right circuit
// token.  From the whole table of the base's LM-head rows, with F fields,
// P_t = the largest sum of F positive entries of e_t on output dimensions
// (plus what the sink's dimensions give it), q_t = u . e_t > 0: rho >= 1.25
// max P_t / q_t makes every text logit at most 0 there.
double text_suppression(const torch::Tensor& head_rows, const CircuitFootprint& f, const MuteDirection& md,
                        const Sink& sink, const MergeOptions& opt) {
  double rho = 1;
  const int64_t Vb = f.Vb, F = std::min<int64_t>(f.fields, f.out_dims.numel());
  for (int64_t r = 0; r < Vb; r += kChunk) {
    const int64_t n = std::min(kChunk, Vb - r);
    torch::Tensor e = head_rows.narrow(0, r, n).to(torch::kFloat64);
    torch::Tensor q = e.index_select(1, md.sel).matmul(md.u.to(torch::kFloat64));
    torch::Tensor P = std::get<0>(e.index_select(1, f.out_dims).clamp_min(0).topk(F, 1)).sum(1);
    if (sink.dims.numel() > 0)  // what the sink's dimensions give a text token at a circuit position
      P = P + (opt.sink_level * e.index_select(1, sink.dims).matmul(sink.hat.to(torch::kFloat64))).clamp_min(0);
    const torch::Tensor live = e.ne(0).any(1);
    if (q.le(0).logical_and(live).any().item<bool>())
      throw std::runtime_error("merge: a row of the base's LM head has no positive projection on the mute direction; "
                               "text tokens could not be suppressed at circuit positions");
    torch::Tensor ratio = (P / q).masked_fill(live.logical_not(), 0);
    rho = std::max(rho, 1.25 * ratio.max().item<double>());
  }
  return rho;
}

// 6. The output amplifier (layer `A`, docs/merge.md section 3): GDN weights
// zero; per output dimension one MLP unit scaling the field, per mute
// dimension one writing -rho u, per sink dimension one writing sink_level
// s_hat, each divided by the base's final norm gain there.
void add_amplifier(qwen::Checkpoint& circuit, int A, const CircuitFootprint& f, const MuteDirection& md,
                   const Sink& sink, double rho, const torch::Tensor& base_final, const MergeOptions& opt) {
  const qwen::Config& cc = circuit.config;
  auto& ct = circuit.tensors;
  const int64_t H = f.H, I = cc.intermediate_size, nv = cc.linear_num_value_heads;
  const std::string p = "layers." + std::to_string(A) + ".";
  const std::string a = p + "linear_attn.";
  const int64_t conv = cc.linear_conv_dim();
  ct[a + "in_proj_qkv.weight"] = qwen::lazy_zeros({conv, H});
  ct[a + "in_proj_z.weight"] = qwen::lazy_zeros({cc.linear_value_dim(), H});
  ct[a + "in_proj_b.weight"] = torch::zeros({nv, H});
  ct[a + "in_proj_a.weight"] = torch::zeros({nv, H});
  ct[a + "conv1d.weight"] = torch::zeros({conv, 1, cc.linear_conv_kernel_dim});
  ct[a + "out_proj.weight"] = qwen::lazy_zeros({H, cc.linear_value_dim()});
  ct[a + "A_log"] = torch::zeros({nv});
  ct[a + "dt_bias"] = torch::zeros({nv});
  ct[a + "norm.weight"] = torch::ones({cc.linear_value_head_dim});
  ct[p + "input_layernorm.weight"] = torch::zeros({H});
  ct[p + "post_attention_layernorm.weight"] = torch::zeros({H});
  const torch::Tensor& out_dims = f.out_dims;
  if (out_dims.numel() + md.sel.numel() + sink.dims.numel() > I)
    throw std::runtime_error("merge: the amplifier needs more MLP units than the layer has");
  torch::Tensor gate = qwen::lazy_zeros({I, H}), up = qwen::lazy_zeros({I, H}), down = qwen::lazy_zeros({H, I});
  auto final_gain = [&](int64_t d, const char* what) {
    const float wf = base_final[d].item<float>();
    if (std::abs(wf) < 1e-3f)
      throw std::runtime_error(std::string("merge: the base's final norm weight is 0 on ") + what + " " + std::to_string(d));
    return wf;
  };
  for (int64_t j = 0; j < out_dims.numel(); ++j) {
    const int64_t d = out_dims[j].item<int64_t>();
    const float wf = final_gain(d, "circuit output dimension");
    gate[j][d].fill_(512.f);
    gate[j][0].fill_(-256.f);
    up[j][0].fill_(1.f);
    down[d][j].fill_(opt.amplifier_gain / wf);
  }
  for (int64_t j = 0; j < md.sel.numel(); ++j) {
    const int64_t d = md.sel[j].item<int64_t>(), unit = out_dims.numel() + j;
    const float wf = final_gain(d, "mute dimension");
    gate[unit][0].fill_(256.f);
    up[unit][0].fill_(1.f);
    down[d][unit].fill_(float(-rho * md.u[j].item<double>() * opt.amplifier_gain / wf));
  }
  for (int64_t j = 0; j < sink.dims.numel(); ++j) {
    const int64_t d = sink.dims[j].item<int64_t>(), unit = out_dims.numel() + md.sel.numel() + j;
    const float wf = final_gain(d, "sink dimension");
    gate[unit][0].fill_(256.f);
    up[unit][0].fill_(1.f);
    down[d][unit].fill_(float(opt.sink_level * sink.hat[j].item<double>() * opt.amplifier_gain / wf));
  }
  ct[p + "mlp.gate_proj.weight"] = gate;
  ct[p + "mlp.up_proj.weight"] = up;
  ct[p + "mlp.down_proj.weight"] = down;
}

// 7. Muting (docs/merge.md section 2): the mute term added to rows `rows` of
// matrix `M` [rows, H] read through norm weight `w` (1 + weight); `offset` is
// added to each row's value (dt_bias).  M becomes a sparse matrix of its
// entries and the term's: its entries are read through written_nonzeros, so
// the pages of a lazily zero-filled M that were never written stay unread
// (reading one would make it resident; the circuit's matrices span many GB).
void mute_rows(torch::Tensor& M, const std::vector<int64_t>& rows, const torch::Tensor& w, const torch::Tensor& offset,
               const MuteDirection& md, double m_eff, MergeReport& rep) {
  if (rows.empty()) return;
  const int64_t H = M.size(1);
  const torch::Tensor &sel = md.sel, &u = md.u;
  const int64_t n = M.size(0), m = static_cast<int64_t>(rows.size());
  const qwen::NonZeros nz = qwen::written_nonzeros(M);
  std::vector<int64_t> slot(n, -1);
  for (int64_t i = 0; i < m; ++i) slot[rows[i]] = i;
  torch::Tensor c = torch::zeros({m, H});
  float* cp = c.data_ptr<float>();
  for (size_t i = 0; i < nz.index.size(); ++i)
    if (const int64_t k = slot[nz.index[i] / H]; k >= 0) cp[k * H + nz.index[i] % H] = nz.value[i];
  torch::Tensor lo_l = torch::minimum(md.lo * w, md.hi * w), hi_l = torch::maximum(md.lo * w, md.hi * w);
  torch::Tensor bound = (c.clamp_min(0) * hi_l + c.clamp_max(0) * lo_l).sum(1) + offset;
  bound = bound + bound.abs() * 1e-5 + 1e-3;  // rounding of the runtime's sums
  torch::Tensor K = ((bound + (kMuteLevel + 16)) / m_eff).clamp_min(0);  // 16: slack for fp32 rounding here
  torch::Tensor wsel = w.index_select(0, sel);
  if (wsel.eq(0).any().item<bool>()) throw std::runtime_error("merge: a circuit norm weight is 0 on a free dimension");
  torch::Tensor add = -K.unsqueeze(1) * (u / wsel).unsqueeze(0);  // [rows, k]
  const torch::Tensor cols = (c.index_select(1, sel) + add).contiguous();
  // The entries: M's, but on the muted rows' mute columns, where the sums are.
  std::vector<bool> on_sel(H, false);
  const auto* sp = sel.data_ptr<int64_t>();
  for (int64_t j = 0; j < sel.numel(); ++j) on_sel[sp[j]] = true;
  std::vector<std::pair<int64_t, float>> e;
  e.reserve(nz.index.size() + m * sel.numel());
  for (size_t i = 0; i < nz.index.size(); ++i)
    if (slot[nz.index[i] / H] < 0 || !on_sel[nz.index[i] % H]) e.push_back({nz.index[i], nz.value[i]});
  const float* vp = cols.data_ptr<float>();
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < sel.numel(); ++j)
      if (const float v = vp[i * sel.numel() + j]; v != 0.f) e.push_back({rows[i] * H + sp[j], v});
  std::sort(e.begin(), e.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  qwen::NonZeros out;
  for (const auto& [i, v] : e) out.index.push_back(i), out.value.push_back(v);
  M = qwen::sparse_matrix(n, H, out);
  rep.muted_rows += m;
  rep.max_mute_gain = std::max(rep.max_mute_gain, K.max().item<double>());
  rep.worst_bound = std::max(rep.worst_bound, (bound - K * m_eff).max().item<double>());
}

// Every live pre-activation of the circuit's layers and the amplifier (layers
// 0 .. last): MLP gate rows of units whose gate, up and down are all
// non-zero; the z rows, b and a of every GDN head with value or output weights.
void mute_circuit(qwen::Checkpoint& circuit, int last, const MuteDirection& md, MergeReport& rep) {
  const qwen::Config& cc = circuit.config;
  const int64_t I = cc.intermediate_size, nv = cc.linear_num_value_heads, dv = cc.linear_value_head_dim;
  const int64_t key_dim = cc.linear_key_dim();
  const double m_eff = md.min_projection * (1 - 1e-4);
  auto T = [&](const std::string& n) -> torch::Tensor& { return circuit_tensor(circuit, n); };
  rep.worst_bound = -INFINITY;
  for (int l = 0; l <= last; ++l) {
    const torch::Tensor w_in = T(layer_name(l, "input_layernorm.weight")) + 1;
    const torch::Tensor w_post = T(layer_name(l, "post_attention_layernorm.weight")) + 1;
    torch::Tensor& gate_w = T(layer_name(l, "mlp.gate_proj.weight"));
    const Lines gate = lines(gate_w), up = lines(T(layer_name(l, "mlp.up_proj.weight"))),
                down = lines(T(layer_name(l, "mlp.down_proj.weight")));
    std::vector<int64_t> units;
    for (int64_t i = 0; i < I; ++i)
      if (gate.rows[i] && up.rows[i] && down.cols[i]) units.push_back(i);
    mute_rows(gate_w, units, w_post, torch::zeros({int64_t(units.size())}), md, m_eff, rep);
    const std::string a = layer_name(l, "linear_attn.");
    const Lines qkv = lines(T(a + "in_proj_qkv.weight")), outp = lines(T(a + "out_proj.weight")),
                z = lines(T(a + "in_proj_z.weight"));
    std::vector<int64_t> heads, zrows;
    for (int64_t h = 0; h < nv; ++h) {
      bool active = false;
      for (int64_t j = 0; j < dv; ++j) active = active || qkv.rows[2 * key_dim + h * dv + j] || outp.cols[h * dv + j];
      if (!active) continue;
      heads.push_back(h);
      for (int64_t j = 0; j < dv; ++j)
        if (z.rows[h * dv + j]) zrows.push_back(h * dv + j);
    }
    const torch::Tensor hrows = torch::tensor(heads, torch::kInt64);
    mute_rows(T(a + "in_proj_z.weight"), zrows, w_in, torch::zeros({int64_t(zrows.size())}), md, m_eff, rep);
    mute_rows(T(a + "in_proj_b.weight"), heads, w_in, torch::zeros({hrows.numel()}), md, m_eff, rep);
    mute_rows(T(a + "in_proj_a.weight"), heads, w_in, T(a + "dt_bias").index_select(0, hrows), md, m_eff, rep);
  }
  if (!std::isfinite(rep.worst_bound) || rep.worst_bound > -kMuteLevel + 1e-3)
    throw std::runtime_error("merge: the mute bound did not hold (" + std::to_string(rep.worst_bound) + ")");
}

// 8. The merged vocabulary matrices.  A merged [V, H] matrix: the base's rows
// `base_rows`, zero rows up to the token base, then the circuit tokens'
// entries with values `vals`.  Sparse when that is the smaller form (a base
// whose rows are few next to the circuit's: the circuit rows hold about 9
// non-zeros of 2048, and a dense row costs a written page), else lazily
// zero-filled dense.  `shared`: entries (dimension, value) every row past the
// base's holds (the sink, on dimensions no circuit token uses): the reserved
// rows up to the token base and the circuit tokens.
using Shared = std::vector<std::pair<int64_t, float>>;

torch::Tensor vocab_matrix(const CircuitFootprint& f, const torch::Tensor& base_rows, const torch::Tensor& vals,
                           const Shared& shared) {
  const int64_t H = f.H, Vb = f.Vb, V = f.V;
  const auto* v = vals.data_ptr<float>();
  const int64_t circuit_entries = static_cast<int64_t>(f.crow.size() + (V - Vb) * shared.size());
  if ((Vb * H + circuit_entries) * 5 < V * H) {  // COO: 20 bytes an entry, dense: 4
    qwen::NonZeros nz = qwen::written_nonzeros(base_rows.to(torch::kFloat32).contiguous());
    std::vector<std::pair<int64_t, float>> e;
    e.reserve(circuit_entries);
    for (size_t i = 0; i < f.crow.size(); ++i)
      if (v[i] != 0.f) e.push_back({(f.crow[i] + f.token_base) * H + f.ccol[i], v[i]});
    for (int64_t r = Vb; r < V; ++r)
      for (const auto& [d, x] : shared) e.push_back({r * H + d, x});
    std::sort(e.begin(), e.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    for (const auto& [i, x] : e) nz.index.push_back(i), nz.value.push_back(x);
    return qwen::sparse_matrix(V, H, nz);
  }
  torch::Tensor e = qwen::lazy_zeros({V, H});
  e.narrow(0, 0, Vb).copy_(base_rows);
  // Only the circuit rows' non-zeros: the rest stays lazily zero.
  e.index_put_({f.cr + f.token_base, f.cc}, vals);
  for (const auto& [d, x] : shared) e.narrow(0, Vb, V - Vb).select(1, d).fill_(x);
  return e;
}

// The rows past the base's of a merged vocabulary matrix alone, sparse
// [V - Vb, H] (MergeOptions::vocab_tails): its circuit entries and `shared`.
torch::Tensor vocab_tail(const CircuitFootprint& f, const torch::Tensor& vals, const Shared& shared) {
  const int64_t H = f.H, Vb = f.Vb, V = f.V;
  const auto* v = vals.data_ptr<float>();
  std::vector<std::pair<int64_t, float>> e;
  e.reserve(f.crow.size() + (V - Vb) * shared.size());
  for (size_t i = 0; i < f.crow.size(); ++i)
    if (v[i] != 0.f) e.push_back({(f.crow[i] + f.token_base - Vb) * H + f.ccol[i], v[i]});
  for (int64_t r = 0; r < V - Vb; ++r)
    for (const auto& [d, x] : shared) e.push_back({r * H + d, x});
  std::sort(e.begin(), e.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  qwen::NonZeros nz;
  nz.index.reserve(e.size());
  nz.value.reserve(e.size());
  for (const auto& [i, x] : e) nz.index.push_back(i), nz.value.push_back(x);
  e = {};
  return qwen::sparse_matrix(V - Vb, H, nz);
}

// 9. The merged checkpoint: the circuit's layers and the amplifier, the base's
// layers after them (every tensor as the base stored it), the merged
// embedding, and the untied LM head (the base's rows, then the circuit
// tokens' output fields scaled by kHeadScale and the sink).
void assemble(Merged& out, const BaseModel& base, qwen::Checkpoint& circuit, const CircuitFootprint& f,
              const Sink& sink, const torch::Tensor& head_rows, torch::ScalarType head_dtype,
              const MergeOptions& opt, MergeReport& rep) {
  const qwen::Config& bc = base.text.config;
  const int C = static_cast<int>(circuit.config.num_hidden_layers);
  BaseModel& m = out.model;
  m.dtype = base.dtype;
  m.vision_language = base.vision_language;
  m.extra = base.extra;
  for (const auto& [name, t] : base.extra) m.stored_dtypes[name] = base.dtype_of(name);
  qwen::Config mc = bc;
  mc.num_hidden_layers = C + 1 + bc.num_hidden_layers;
  mc.vocab_size = f.V;
  mc.layer_types.assign(C + 1, "linear_attention");
  for (const auto& t : bc.layer_types) mc.layer_types.push_back(t);
  m.text.config = mc;
  auto& mt = m.text.tensors;
  for (auto& [name, t] : circuit.tensors) {
    if (name.rfind("layers.", 0) != 0) continue;
    mt[name] = t;
    out.circuit_tensors.push_back(name);
  }
  for (const auto& [name, t] : base.text.tensors) {
    if (name.rfind("layers.", 0) == 0) {
      const size_t dot = name.find('.', 7);
      const int l = std::stoi(name.substr(7, dot - 7));
      const std::string moved = "layers." + std::to_string(l + C + 1) + name.substr(dot);
      mt[moved] = t;
      m.stored_dtypes[moved] = base.dtype_of(name);
    } else if (name == "embed_tokens.weight") {
      if (opt.vocab_tails) mt[name] = t, m.tails[name] = vocab_tail(f, f.cv, {});
      else mt[name] = vocab_matrix(f, t, f.cv, {});
      m.stored_dtypes[name] = base.dtype_of(name);
    } else if (name != "lm_head.weight") {
      mt[name] = t;
      m.stored_dtypes[name] = base.dtype_of(name);
    }
  }
  {
    torch::Tensor vals = f.cv * kHeadScale;
    vals.masked_fill_(f.cc.eq(0), 0.f);  // no anchor
    Shared shared;
    for (int64_t j = 0; j < sink.dims.numel(); ++j)
      shared.push_back({sink.dims[j].item<int64_t>(), sink.values[j].item<float>()});
    if (opt.vocab_tails) mt["lm_head.weight"] = head_rows, m.tails["lm_head.weight"] = vocab_tail(f, vals, shared);
    else mt["lm_head.weight"] = vocab_matrix(f, head_rows, vals, shared);
    m.stored_dtypes["lm_head.weight"] = head_dtype;
    // What a text position can give a circuit token beyond the sink: its
    // fields' entries times the final hidden state, |x / rms(x)| <= sqrt(H).
    const torch::Tensor base_final = base.text.tensors.at("norm.weight") + 1;
    torch::Tensor sq = torch::zeros({f.V - f.token_base}, torch::kFloat64);
    sq.index_add_(0, f.cr, (vals * base_final.index_select(0, f.cc)).to(torch::kFloat64).pow(2));
    rep.field_bound = std::sqrt(double(f.H)) * sq.max().sqrt().item<double>();
    rep.circuit_tokens = f.V - f.Vb;
    mc.tie_word_embeddings = false;
    m.text.config = mc;
  }
  if (!base.config_json.is_null()) {
    m.config_json = base.config_json;
    json& s = text_section(m.config_json);
    s["num_hidden_layers"] = mc.num_hidden_layers;
    s["layer_types"] = mc.layer_types;
    s["vocab_size"] = mc.vocab_size;
    s["tie_word_embeddings"] = false;
    if (m.config_json.contains("tie_word_embeddings")) m.config_json["tie_word_embeddings"] = false;
    if (m.config_json.contains("text_config") && m.config_json.contains("vocab_size"))
      m.config_json["vocab_size"] = mc.vocab_size;
  }
  if (!opt.vocab_tails) m.text.validate();
}

}  // namespace

Merged merge(const BaseModel& base, qwen::Checkpoint circuit, std::optional<gpu::Layout> layout,
             const MergeOptions& opt) {
  const qwen::Config& bc = base.text.config;
  check_compatible(bc, circuit.config, opt);
  const int C = static_cast<int>(circuit.config.num_hidden_layers);  // also the amplifier's index

  MergeReport rep;
  rep.circuit_layers = C;
  rep.base_layers = static_cast<int>(bc.num_hidden_layers);
  rep.base_vocab = bc.vocab_size;
  rep.vocab = circuit.config.vocab_size;

  const CircuitFootprint f = read_footprint(circuit, bc.vocab_size, opt.token_base);
  rep.output_dims = static_cast<int>(f.out_dims.numel());
  rep.free_dims = static_cast<int>(f.free_dims.numel());
  rep.fields = static_cast<int>(f.fields);

  const MuteDirection md = find_mute_direction(base.text.tensors.at("embed_tokens.weight"), f.free_dims,
                                               opt.mute_dims, bc.rms_norm_eps);
  rep.mute_dims = static_cast<int>(md.sel.numel());
  rep.zero_rows = md.zero_rows;
  rep.min_projection = md.min_projection;

  // The base's LM-head rows (its own head, or the tied embedding).
  const auto own_head = base.text.tensors.find("lm_head.weight");
  const bool tied = own_head == base.text.tensors.end();
  const torch::Tensor head_rows = tied ? base.text.tensors.at("embed_tokens.weight") : own_head->second;
  const torch::ScalarType head_dtype = base.dtype_of(tied ? "embed_tokens.weight" : "lm_head.weight");

  const Sink sink = calibrate_sink(base, f, md, head_dtype, opt, rep);
  rep.suppression = text_suppression(head_rows, f, md, sink, opt);
  add_amplifier(circuit, C, f, md, sink, rep.suppression, base.text.tensors.at("norm.weight") + 1, opt);
  mute_circuit(circuit, C, md, rep);

  Merged out;
  out.token_base = opt.token_base;
  assemble(out, base, circuit, f, sink, head_rows, head_dtype, opt, rep);
  out.report = rep;
  if (layout) {
    out.layout = std::move(layout);
    out.layout->num_layers = static_cast<int>(out.model.text.config.num_hidden_layers);
    out.layout->vocab_size = f.V;
  }
  return out;
}

std::string circuit_token_name(const Merged& merged, int64_t id) {
  if (merged.layout) return "<|qgpu:" + gpu::token_name(id - merged.token_base + gpu::kTokenBase) + "|>";
  return "<|qgpu:t" + std::to_string(id - merged.token_base) + "|>";
}

json merged_tokenizer(const Merged& merged, json tj) {
  json& added = tj["added_tokens"];
  if (!added.is_array()) added = json::array();
  const int64_t V = merged.model.text.config.vocab_size;
  for (int64_t id = merged.token_base; id < V; ++id)
    added.push_back({{"id", id},
                     {"content", circuit_token_name(merged, id)},
                     {"single_word", false},
                     {"lstrip", false},
                     {"rstrip", false},
                     {"normalized", false},
                     {"special", true}});
  return tj;
}

void save_merged(const Merged& merged, const std::string& dir_name, const std::string& tokenizer_dir) {
  fs::path dir(dir_name);
  fs::create_directories(dir);
  fs::remove(dir / gpu::kLayoutFile);
  merged.model.save(dir.string(), merged.circuit_tensors);
  json generation = json::object();
  if (!tokenizer_dir.empty())
    for (const auto& e : fs::directory_iterator(tokenizer_dir)) {
      const std::string n = e.path().filename().string();
      if (!e.is_regular_file() || e.path().extension() == ".safetensors" || n == "config.json" ||
          n == "model.safetensors.index.json" || n == "qgpu-sparse.bin" || n == gpu::kLayoutFile)
        continue;
      if (n == "tokenizer.json") {
        write_text_file(dir / n, merged_tokenizer(merged, json::parse(read_text_file(e.path()))).dump());
      } else if (n == "generation_config.json") {
        generation = json::parse(read_text_file(e.path()));
      } else {
        fs::copy_file(e.path(), dir / n, fs::copy_options::overwrite_existing);
      }
    }
  // Text generation (HF transformers' generate) keeps off every id past the
  // base's: suppress_tokens is applied as one mask over the vocabulary per
  // step; bad_words_ids would take one list per id.
  const int64_t Vb = merged.report.base_vocab, V = merged.model.text.config.vocab_size;
  json suppress = json::array();
  for (int64_t id = Vb; id < V; ++id) suppress.push_back(id);
  generation["suppress_tokens"] = std::move(suppress);
  write_text_file(dir / "generation_config.json", generation.dump());
  if (merged.layout) write_text_file(dir / gpu::kLayoutFile, merged.layout->to_json());
}

LoadedMerged load_merged(const std::string& dir_name) {
  fs::path dir(dir_name);
  LoadedMerged m{qwen::Checkpoint::load(dir.string()), std::nullopt};
  if (fs::is_regular_file(dir / gpu::kLayoutFile)) m.layout = gpu::Layout::from_json(read_text_file(dir / gpu::kLayoutFile));
  return m;
}

}  // namespace qgpu::chat
