#include "model_host/chat/streamed.h"

#include "model_host/qwen/matrix.h"

#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>

namespace qgpu::chat {
namespace {

namespace fs = std::filesystem;

torch::ScalarType dtype_of(const std::string& file, const std::string& name, const std::string& d) {
  if (d == "F32") return torch::kFloat32;
  if (d == "F16") return torch::kFloat16;
  if (d == "BF16") return torch::kBFloat16;
  throw std::runtime_error(file + ": tensor " + name + " has dtype " + d + " (expected F32, F16 or BF16)");
}

// Reads exactly `bytes` at `offset` of `path` into `dst`.
void read_exact(const fs::path& path, uint64_t offset, void* dst, size_t bytes) {
  const int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) throw std::runtime_error(path.string() + ": cannot open: " + std::strerror(errno));
  auto* p = static_cast<char*>(dst);
  while (bytes > 0) {
    const ssize_t n = ::pread(fd, p, bytes, static_cast<off_t>(offset));
    if (n <= 0) {
      ::close(fd);
      throw std::runtime_error(path.string() + ": short read at offset " + std::to_string(offset));
    }
    p += n, offset += static_cast<uint64_t>(n), bytes -= static_cast<size_t>(n);
  }
  ::close(fd);
}

// The canonical name of an HF tensor name of the text model, or "" for the
// others (vision tower, MTP head).
std::string canonical(const std::string& hf) {
  static const std::string vl = "model.language_model.", text = "model.";
  if (hf.rfind(vl, 0) == 0) return hf.substr(vl.size());
  if (hf.rfind("model.visual.", 0) == 0) return "";
  if (hf.rfind(text, 0) == 0) return hf.substr(text.size());
  if (hf == "lm_head.weight") return hf;
  return "";
}

// Per position, a log-partition accumulated block by block: the running
// maximum and the sum of exp(logit - maximum), in fp64.
struct Partition {
  torch::Tensor max, sum;
  explicit Partition(int64_t P)
      : max(torch::full({P}, -std::numeric_limits<double>::infinity(), torch::kFloat64)),
        sum(torch::zeros({P}, torch::kFloat64)) {}
  // Adds a block [P, n]; returns the factor the earlier sums were scaled by
  // and the block's exp(logit - new maximum).
  std::pair<torch::Tensor, torch::Tensor> add(const torch::Tensor& block) {
    const torch::Tensor m = torch::maximum(max, std::get<0>(block.max(1)));
    const torch::Tensor scale = torch::exp(max - m).nan_to_num(0.0);
    const torch::Tensor e = torch::exp(block - m.unsqueeze(1));
    sum = sum * scale + e.sum(1);
    max = m;
    return {scale, e};
  }
  torch::Tensor lse() const { return max + torch::log(sum); }
};

}  // namespace

CheckpointFiles::CheckpointFiles(const std::string& dir) : dir_(dir) {
  try {
    config_ = qwen::Config::from_json(nlohmann::json::parse(qwen::read_text_file(dir_ / "config.json")));
  } catch (const std::exception& e) {
    throw std::runtime_error((dir_ / "config.json").string() + ": " + e.what());
  }
  const auto files = qwen::safetensors_files(dir_);
  if (files.empty()) throw std::runtime_error("no safetensors files in " + dir);
  for (const auto& f : files) {
    uint64_t len = 0;
    read_exact(f, 0, &len, 8);
    if (len > fs::file_size(f)) throw std::runtime_error(f.string() + ": header length exceeds the file");
    std::string text(len, '\0');
    read_exact(f, 8, text.data(), len);
    const nlohmann::json header = nlohmann::json::parse(text);
    for (const auto& [hf, info] : header.items()) {
      if (hf == "__metadata__") continue;
      const std::string name = canonical(hf);
      if (name.empty()) continue;
      Entry e{f, dtype_of(f.string(), hf, info.at("dtype").get<std::string>()),
              info.at("shape").get<std::vector<int64_t>>(), 8 + len + info.at("data_offsets")[0].get<uint64_t>()};
      entries_[name] = std::move(e);
    }
  }
}

const CheckpointFiles::Entry& CheckpointFiles::entry(const std::string& name) const {
  const auto it = entries_.find(name);
  if (it == entries_.end()) throw std::runtime_error(dir_.string() + ": no tensor " + name);
  return it->second;
}

std::vector<int64_t> CheckpointFiles::shape(const std::string& name) const { return entry(name).shape; }
torch::ScalarType CheckpointFiles::stored_dtype(const std::string& name) const { return entry(name).dtype; }

torch::Tensor CheckpointFiles::read(const std::string& name) const {
  const Entry& e = entry(name);
  return read_rows(name, 0, e.shape.empty() ? 1 : e.shape[0]);
}

torch::Tensor CheckpointFiles::read_rows(const std::string& name, int64_t first, int64_t count) const {
  const Entry& e = entry(name);
  if (e.shape.empty()) {  // a scalar
    torch::Tensor t = torch::empty({}, torch::TensorOptions().dtype(e.dtype));
    read_exact(e.file, e.offset, t.data_ptr(), t.element_size());
    return t.to(torch::kFloat32);
  }
  if (first < 0 || count < 0 || first + count > e.shape[0])
    throw std::out_of_range(name + ": rows " + std::to_string(first) + " + " + std::to_string(count) + " of " +
                            std::to_string(e.shape[0]));
  std::vector<int64_t> shape = e.shape;
  shape[0] = count;
  torch::Tensor t = torch::empty(shape, torch::TensorOptions().dtype(e.dtype));
  const int64_t row_bytes = t.numel() == 0 ? 0 : t.numel() / count * t.element_size();
  read_exact(e.file, e.offset + static_cast<uint64_t>(first * row_bytes), t.data_ptr(),
             static_cast<size_t>(count * row_bytes));
  return e.dtype == torch::kFloat32 ? t : t.to(torch::kFloat32);
}

std::vector<std::string> CheckpointFiles::layer_tensors(int layer) const {
  const std::string p = "layers." + std::to_string(layer) + ".";
  std::vector<std::string> out;
  for (auto it = entries_.lower_bound(p); it != entries_.end() && it->first.rfind(p, 0) == 0; ++it)
    out.push_back(it->first);
  return out;
}

std::vector<torch::Tensor> streamed_final_states(const CheckpointFiles& files,
                                                 const std::vector<std::vector<int64_t>>& seqs,
                                                 const std::function<void(int, int)>& progress) {
  torch::NoGradGuard no_grad;
  const qwen::Config& c = files.config();
  const int64_t H = c.hidden_size;
  // The residual entering layer 0: the tokens' embedding rows.
  std::vector<torch::Tensor> x;
  for (const auto& s : seqs) {
    torch::Tensor e = torch::empty({static_cast<int64_t>(s.size()), H});
    for (size_t t = 0; t < s.size(); ++t) {
      if (s[t] < 0 || s[t] >= c.vocab_size)
        throw std::out_of_range("token " + std::to_string(s[t]) + " is outside the vocabulary");
      e[static_cast<int64_t>(t)].copy_(files.read_rows("embed_tokens.weight", s[t], 1)[0]);
    }
    x.push_back(e);
  }
  const torch::Tensor norm = files.read("norm.weight");
  std::vector<torch::Tensor> hidden(seqs.size());
  const int L = static_cast<int>(c.num_hidden_layers);
  for (int l = 0; l < L; ++l) {
    // Layer l alone: a one-layer checkpoint whose head is one row of ones
    // (dense, so the final norm writes every column: Outputs::hidden is exact).
    qwen::Checkpoint ck;
    ck.config = c;
    ck.config.num_hidden_layers = 1;
    ck.config.layer_types = {c.layer_types.at(l)};
    ck.config.vocab_size = 1;
    ck.config.tie_word_embeddings = true;
    ck.tensors["embed_tokens.weight"] = torch::ones({1, H});
    ck.tensors["norm.weight"] = norm;
    const std::string p = "layers." + std::to_string(l) + ".";
    for (const std::string& name : files.layer_tensors(l))
      ck.tensors["layers.0." + name.substr(p.size())] = files.read(name);
    const qwen::Model model(ck, qwen::Exec::Sparse);
    ck.tensors.clear();
    for (size_t s = 0; s < seqs.size(); ++s) {
      qwen::State st = model.new_state();
      qwen::Outputs o = model.forward_residual(st, x[s], {1});
      x[s] = o.residuals.at(0);
      if (l == L - 1) hidden[s] = o.hidden;
    }
    if (progress) progress(l + 1, L);
  }
  return hidden;
}

torch::Tensor streamed_head_logits(const CheckpointFiles& files, const torch::Tensor& hidden, int64_t first,
                                   int64_t count) {
  const std::string name =
      files.config().tie_word_embeddings || !files.has("lm_head.weight") ? "embed_tokens.weight" : "lm_head.weight";
  const qwen::Matrix head(files.read_rows(name, first, count), /*sparse=*/true);
  const torch::Tensor h = hidden.to(torch::kFloat32).contiguous();
  const int64_t P = h.size(0), H = h.size(1);
  qwen::Support support;
  support.scan(h.data_ptr<float>(), P, H);
  qwen::Matrix::Scratch scratch;
  torch::Tensor out = torch::empty({P, count});
  head.apply(h.data_ptr<float>(), support, out.data_ptr<float>(), scratch);
  return out;
}

KlResult compare_streamed(const CheckpointFiles& base, const CheckpointFiles& merged,
                          const std::vector<std::vector<int64_t>>& seqs, int64_t block_rows,
                          const std::function<void(const std::string&)>& progress) {
  torch::NoGradGuard no_grad;
  const int64_t Vb = base.config().vocab_size, V = merged.config().vocab_size;
  if (V < Vb) throw std::invalid_argument("the merged model's vocabulary is smaller than the base's");
  auto say = [&](const std::string& s) {
    if (progress) progress(s);
  };
  auto layers = [&](const char* which) {
    return [&, which](int l, int n) { say(std::string(which) + ": layer " + std::to_string(l) + " of " + std::to_string(n)); };
  };
  const torch::Tensor hb = torch::cat(streamed_final_states(base, seqs, layers("base")));
  const torch::Tensor hm = torch::cat(streamed_final_states(merged, seqs, layers("merged")));
  const int64_t P = hb.size(0);
  KlResult r;
  r.identical = true;
  torch::Tensor base_logits = torch::empty({P, Vb});  // for the base's confidence figures
  // Per position: the base's partition, the merged model's over the base's
  // ids and over the rest, and A = sum_i exp(b_i - max) (b_i - z_i), so that
  // sum_i p_i (b_i - z_i) = A / sum_i exp(b_i - max).
  Partition pb(P), pq(P), pt(P);
  torch::Tensor A = torch::zeros({P}, torch::kFloat64);
  for (int64_t first = 0; first < Vb; first += block_rows) {
    const int64_t n = std::min(block_rows, Vb - first);
    const torch::Tensor b = streamed_head_logits(base, hb, first, n);
    const torch::Tensor z = streamed_head_logits(merged, hm, first, n);
    base_logits.narrow(1, first, n).copy_(b);
    r.identical = r.identical && torch::equal(b, z);
    r.max_logit_diff = std::max(r.max_logit_diff, (b - z).abs().max().item<double>());
    const torch::Tensor bd = b.to(torch::kFloat64), zd = z.to(torch::kFloat64);
    auto [scale, e] = pb.add(bd);
    A = A * scale + (e * (bd - zd)).sum(1);
    pq.add(zd);
    if ((first / block_rows) % 4 == 0) say("head: base ids " + std::to_string(first + n) + " of " + std::to_string(Vb));
  }
  for (int64_t first = Vb; first < V; first += block_rows) {
    const int64_t n = std::min(block_rows, V - first);
    pt.add(streamed_head_logits(merged, hm, first, n).to(torch::kFloat64));
    if (((first - Vb) / block_rows) % 8 == 0)
      say("head: ids past the base's " + std::to_string(first + n - Vb) + " of " + std::to_string(V - Vb));
  }
  const torch::Tensor lse_b = pb.lse(), lse_q = pq.lse(), lse_t = pt.lse();
  // KL(p || q) = sum_i p_i (b_i - z_i) - lse_b + lse_q over the base's ids
  // (exactly 0 when every logit is equal: A is 0 and both partitions come
  // from the same numbers by the same steps); over the merged vocabulary the
  // log-partition is lse_q + log1p(exp(lse_t - lse_q)).
  const torch::Tensor S = A / pb.sum + (lse_q - lse_b);
  const torch::Tensor d = lse_t - lse_q;
  const torch::Tensor kl = S.clamp_min(0), kl_full = (S + torch::log1p(torch::exp(d))).clamp_min(0);
  const torch::Tensor mass = torch::sigmoid(d);
  r.positions = P;
  r.kl_mean = kl.mean().item<double>();
  r.kl_max = kl.max().item<double>();
  r.kl_full_mean = kl_full.mean().item<double>();
  r.kl_full_max = kl_full.max().item<double>();
  r.circuit_mass_mean = mass.mean().item<double>();
  r.circuit_mass_max = mass.max().item<double>();
  int64_t at = 0;
  for (const auto& s : seqs) {
    const int64_t T = static_cast<int64_t>(s.size());
    r.base.add(base_logits.narrow(0, at, T));
    at += T;
  }
  return r;
}

}  // namespace qgpu::chat
