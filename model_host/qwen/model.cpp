#include "model_host/qwen/model.h"

#include "model_host/qwen/equations.h"
#include "model_host/qwen/matrix.h"
#include "model_host/qwen/memo.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <mutex>
#include <optional>
#include <stdexcept>

namespace qgpu::qwen {
namespace {

// 1 / sqrt(mean(x^2) + eps)
inline float inv_rms(const float* x, int64_t n, float eps) { return rms_scale(lane_dot(x, x, n), n, eps); }

// Zero-centred RMSNorm: y = (x * rsqrt(mean(x^2) + eps)) * (1 + w).
// `one_plus_w` holds 1 + w, precomputed in fp32.
void rmsnorm_zc(const float* x, const float* one_plus_w, int64_t n, float eps, float* y) {
  const float r = inv_rms(x, n, eps);
  for (int64_t i = 0; i < n; ++i) y[i] = (x[i] * r) * one_plus_w[i];
}

std::vector<float> to_vector(const torch::Tensor& t) {
  auto c = t.to(torch::kFloat32).contiguous().view({-1});
  return {c.data_ptr<float>(), c.data_ptr<float>() + c.numel()};
}

std::vector<float> one_plus(const torch::Tensor& w) {
  auto v = to_vector(w);
  for (auto& x : v) x = 1.0f + x;
  return v;
}

// Makes `v` hold at least n elements (contents unspecified).
template <class T>
T* grow(std::vector<T>& v, int64_t n) {
  if (static_cast<int64_t>(v.size()) < n) v.resize(n);
  return v.data();
}

// Sets x[t * n + c] to +0 at every column c of vector t of `support`.
void clear_support(float* x, int64_t n, const Support& support) {
  for (int64_t t = 0; t < support.vectors(); ++t)
    for (const int32_t* c = support.begin(t); c != support.end(t); ++c) x[t * n + *c] = 0.0f;
}

// Runs f(i) for i in [0, n) on up to the configured threads when the work is large.
template <class F>
void parallel_items(int64_t n, int64_t work_per_item, F f) {
  // Waking a second thread costs more than small jobs take.
  if (n * work_per_item < (int64_t{1} << 20)) {
    for (int64_t i = 0; i < n; ++i) f(i);
    return;
  }
  const int64_t grain = std::max<int64_t>(1, (int64_t{1} << 18) / std::max<int64_t>(1, work_per_item));
  at::parallel_for(0, n, grain, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) f(i);
  });
}

}  // namespace

// ---- Layer weights in executable form. ----

// A conv channel the executor visits: its output is computed when a live
// head reads it, and its window moves when its input can be non-zero (a
// window that only ever holds zeros need not move).
struct ConvChannel {
  int32_t channel;
  bool output, moves;
};

struct LinearAttention {
  Matrix qkv, z, b, a, out;
  std::vector<float> conv;                  // [conv_dim, kernel]
  std::vector<float> A_log, dt_bias, norm;  // [value_heads], [value_heads], [dv]
  std::vector<int32_t> heads;               // value heads whose state can become non-zero
  std::vector<ConvChannel> conv_channels;   // ascending
  // Sparse executor, when in_proj_qkv is sparse: the channels whose earlier
  // taps are all zero ("current-only") output silu(0 + tap * in) and need no
  // window; in_proj_qkv computes them only where tap * in may reach -91
  // (Matrix::apply_cut; below -90 SiLU gives -0), and conv_channels keeps
  // only the others, which it always computes.
  bool conv_split = false;
  std::vector<uint64_t> conv_now;           // bit per channel: current-only and read by a live head
  std::vector<float> conv_tap;              // per channel, its last tap (dense: four times as many per cache line)
  // Sparse executor: z's rows are computed per head, only for the heads
  // that run on a token (row_values of the head's rows); a
  // skipped head needs its z finite only, which the bound proves: every
  // live head's row has sum |w| <= z_abs_max, so |z| <= z_abs_max max|x|.
  bool lazy_z = false;
  double z_abs_max = 0;
  bool norm_finite = true;  // every weight of the heads' gated norm is finite
  // Sparse executor: no value head is live, so no head ever writes o and the
  // mixer's output is zero on every token (its conv windows are read by no
  // head): the layer's mixer, its norm and its residual addition are skipped.
  bool silent = false;
};

struct FullAttention {
  Matrix q, k, v, o;
  std::vector<float> q_norm, k_norm;  // 1 + w
};

struct Mlp {
  Matrix gate, up, down;
  std::vector<int32_t> units;  // units that can contribute to the output
  // Sparse executor, when gate_proj is sparse: a unit's activation is
  // computed only where its gate may reach -91 (Matrix::apply_cut; below
  // -90 SiLU gives -0), and its up row only where silu(gate) is not 0.
  bool split = false;
  std::vector<uint64_t> unit_bits;   // bit per unit of `units`
};

struct Layer {
  bool full = false;
  std::vector<float> input_norm, post_norm;  // 1 + w
  // Sparse executor: bit per residual entry that a product after the norm
  // reads (a column holding a weight); the norm writes only those entries.
  // Empty: all (a product with dense storage reads every column).
  std::vector<uint64_t> input_reads, post_reads;
  // The one value of 1 + w at every column the norm writes, or NaN when
  // they differ (a compiled circuit's norm weights are uniform): the norm
  // then reads no weight vector.
  float input_uniform = NAN, post_uniform = NAN;
  LinearAttention la;
  FullAttention fa;
  Mlp mlp;
};

// Working memory of one forward pass: buffers sized for the largest batch
// seen so far, the support of the current product's input, and per-thread
// vectors of the GDN heads.  Pooled by the model, so that concurrent calls
// each get their own and a call allocates nothing once the buffers have grown.
struct Workspace {
  std::vector<float> x, normed, y;                  // [T, hidden]
  // Per token, a bit per residual entry that may be non-zero (x_bits), and
  // per row of y that the last mixer or MLP may have made non-zero (y_bits).
  std::vector<uint64_t> x_bits, y_bits;
  // Per token, the squared sum of x, kept exactly while it can be (see body()).
  struct SquaredSum {
    int64_t sum = 0;      // of the squares of the entries that are small integers
    int64_t inexact = 0;  // entries that are not (NaN and infinities included)
  };
  std::vector<SquaredSum> squares;
  std::vector<float> qkv, z, b, a, conv_out, o;     // linear attention
  // Per layer and value head, the last b and a (their bits) a head's gates
  // were computed from, and beta and the decay they gave: a head's b and a
  // are the same on most tokens, and the same inputs give the same gates.
  struct Gates {
    uint32_t b = 0, a = 0;
    bool valid = false;
    float beta = 0, decay = 0;
  };
  std::vector<Gates> gates;
  std::vector<int32_t> run_heads;  // the heads of a layer that may run on a token
  std::vector<uint64_t> qkv_bits;                   // per token, the qkv rows apply_cut computed
  std::vector<uint64_t> now_bits, history_bits;     // memo records: current-only outputs written, other qkv rows
  std::vector<uint64_t> z_bits;                     // per token, the z rows the product wrote
  std::vector<uint8_t> z_finite;                    // per token: every live head's z is provably finite (lazy_z)
  std::vector<int64_t> conv_written;                // entries of conv_out written by this layer (+0 elsewhere)
  std::vector<uint8_t> key_live;                    // per token and key head: query or key may be non-zero
  std::vector<uint8_t> head_out;                    // per token and value head: it wrote its output
  std::vector<float> q, k, v, attn;                 // full attention
  std::vector<float> gate, up, act;                 // MLP
  std::vector<uint64_t> gate_bits;                  // MLP: per token, the gate rows apply_cut computed
  std::vector<int32_t> live_units;                  // MLP: the units whose silu(gate) is not zero
  std::vector<float> live_silu;                     // and that silu(gate)
  std::vector<std::vector<float>> per_thread;       // GDN heads: q, k, kv_mem, d, out per thread
  std::vector<std::vector<int32_t>> per_thread_nz;  // GDN heads: where k and q are not zero, per thread
  Support support;
  Matrix::Scratch scratch;
  // Per layer, the memos of its two stateless sublayers (2 * layer: the
  // linear-attention projections, 2 * layer + 1: the MLP), and last the LM
  // head's argmax (2 * layers), of `memo_capacity` entries each.
  std::vector<SublayerMemo> memo;
  size_t memo_capacity = 0;
  SublayerMemo* memo_for(int64_t index, size_t capacity, int64_t layers) {
    if (capacity == 0) return nullptr;
    const int64_t count = 2 * layers + 1;
    if (memo_capacity != capacity || static_cast<int64_t>(memo.size()) != count) {
      memo.assign(static_cast<size_t>(count), SublayerMemo(capacity));
      memo_capacity = capacity;
    }
    return &memo[static_cast<size_t>(index)];
  }
};

class WorkspacePool {
 public:
  // A workspace for the caller's exclusive use, returned on destruction.
  class Lease {
   public:
    Lease(WorkspacePool& pool, std::unique_ptr<Workspace> ws) : pool_(pool), ws_(std::move(ws)) {}
    ~Lease() { pool_.put(std::move(ws_)); }
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    Workspace& operator*() const { return *ws_; }

   private:
    WorkspacePool& pool_;
    std::unique_ptr<Workspace> ws_;
  };

  Lease get() {
    std::lock_guard<std::mutex> lock(mutex_);
    if (free_.empty()) return Lease(*this, std::make_unique<Workspace>());
    auto ws = std::move(free_.back());
    free_.pop_back();
    return Lease(*this, std::move(ws));
  }

  // f(workspace) for each workspace not in use.
  template <class F>
  void for_each_idle(F f) {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto& ws : free_) f(*ws);
  }

 private:
  void put(std::unique_ptr<Workspace> ws) {
    std::lock_guard<std::mutex> lock(mutex_);
    free_.push_back(std::move(ws));
  }
  std::mutex mutex_;
  std::vector<std::unique_ptr<Workspace>> free_;
};

struct Model::Impl {
  Config cfg;
  Exec exec;
  bool bf16 = false;  // Activations::Bf16
  float eps;
  size_t memo_entries = 0;  // per stateless sublayer (0: none)
  // With bf16 activations, rounds the n values at p (a no-op otherwise).
  void store(float* p, int64_t n) const {
    if (bf16)
      for (int64_t i = 0; i < n; ++i) p[i] = round_bf16(p[i]);
  }
  float store(float v) const { return bf16 ? round_bf16(v) : v; }
  Matrix embed;                  // [vocab, hidden]
  std::optional<Matrix> lm_head; // absent when tied
  std::vector<float> final_norm; // 1 + w
  std::vector<uint64_t> final_reads;  // as Layer::input_reads, for the head
  float final_uniform = NAN;          // as Layer::input_uniform
  std::vector<Layer> layers;
  std::vector<float> inv_freq;   // rope: [rotary_dim / 2]
  Stats stats;
  mutable WorkspacePool workspaces;

  const Matrix& head() const { return lm_head ? *lm_head : embed; }

  // Runs `tokens` through the layers after what `st` has seen and leaves the
  // final-normed hidden states in ws.normed [T, hidden] (and, with
  // `capture`, the requested residuals in `out`).
  // `residual` (when not null): [T, hidden] taken as the input of layer 0
  // instead of the tokens' embeddings (`tokens` is then ignored).
  void body(State& st, const int64_t* tokens, int64_t T, const std::vector<int>& capture_layers, Outputs* out,
            Workspace& ws, const float* residual = nullptr) const;
  void linear_attention(const Layer& L, int layer, State& st, int64_t T, Workspace& ws) const;
  void full_attention(const Layer& L, int layer, State& st, int64_t T, Workspace& ws) const;
  void mlp(const Layer& L, int layer, int64_t T, Workspace& ws) const;
  void rope(float* x, int64_t position) const;
  // Model's constructors: reads `ck`, erasing from `release` (when not null)
  // each tensor once it has been read.
  void build(const Checkpoint& ck, TensorMap* release, Exec exec, Activations activations);
};

float round_bf16(float x) {
  uint32_t u;
  std::memcpy(&u, &x, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return x;  // NaN
  u += 0x7fffu + ((u >> 16) & 1u);
  u &= 0xffff0000u;
  float r;
  std::memcpy(&r, &u, 4);
  return r;
}

namespace {
// The columns that the products of `mats` read, as a bitmap; empty (all)
// when one of them has dense storage.
std::vector<uint64_t> reads_of(std::initializer_list<const Matrix*> mats) {
  std::vector<uint64_t> bits;
  for (const Matrix* m : mats) {
    if (!m->is_sparse()) return {};
    const std::vector<uint64_t>& used = m->column_bits();
    bits.resize(std::max(bits.size(), used.size()), 0);
    for (size_t i = 0; i < used.size(); ++i) bits[i] |= used[i];
  }
  return bits;
}

// The one value of w at every column of `reads` (every column when it is
// empty), or NaN when they differ.
float uniform_of(const std::vector<float>& w, const std::vector<uint64_t>& reads) {
  float value = NAN;
  bool first = true;
  for (size_t c = 0; c < w.size(); ++c) {
    if (!reads.empty() && (c / 64 >= reads.size() || !((reads[c / 64] >> (c % 64)) & 1))) continue;
    if (first) value = w[c];
    else if (std::memcmp(&value, &w[c], 4) != 0) return NAN;
    first = false;
  }
  return value;
}
}  // namespace

Model::Model(const Checkpoint& ck, Exec exec, Activations activations) : impl_(std::make_unique<Impl>()) {
  impl_->build(ck, nullptr, exec, activations);
}

Model::Model(Checkpoint&& ck, Exec exec, Activations activations) : impl_(std::make_unique<Impl>()) {
  impl_->build(ck, &ck.tensors, exec, activations);
  ck.tensors.clear();
}

void Model::Impl::build(const Checkpoint& ck, TensorMap* release, Exec exec, Activations activations) {
  ck.validate();
  if (at::get_num_threads() > 2) at::set_num_threads(2);
  Impl& m = *this;
  m.cfg = ck.config;
  m.exec = exec;
  m.memo_entries = exec == Exec::Sparse ? kMemoEntries : 0;
  m.bf16 = activations == Activations::Bf16;
  const Config& c = m.cfg;
  m.eps = static_cast<float>(c.rms_norm_eps);
  const bool sparse = exec == Exec::Sparse;
  auto T = [&](const std::string& name) -> const torch::Tensor& { return ck.tensors.at(name); };
  // A matrix of the checkpoint; with `release`, its tensor is dropped once read.
  auto M = [&](const std::string& name) {
    Matrix mat(T(name), sparse);
    if (release) release->erase(name);
    return mat;
  };
  auto count = [&](const Matrix& mat) {
    m.stats.weights += mat.rows() * mat.cols();
    m.stats.stored += mat.stored();
  };

  m.embed = M("embed_tokens.weight");
  if (!c.tie_word_embeddings) m.lm_head.emplace(M("lm_head.weight"));
  count(m.head());
  m.stats.active_vocab = sparse ? m.head().nonzero_rows() : c.vocab_size;
  m.final_norm = one_plus(T("norm.weight"));

  // Rope inverse frequencies as HF computes them in fp32: 1 / theta^(2i / rotary_dim).
  const int64_t rot = c.rotary_dim();
  for (int64_t i = 0; i < rot / 2; ++i)
    m.inv_freq.push_back(1.0f / std::pow(static_cast<float>(c.rope_theta),
                                         static_cast<float>(2 * i) / static_cast<float>(rot)));

  for (int64_t l = 0; l < c.num_hidden_layers; ++l) {
    const std::string p = "layers." + std::to_string(l) + ".";
    Layer L;
    L.full = c.is_full_attention(static_cast<int>(l));
    L.input_norm = one_plus(T(p + "input_layernorm.weight"));
    L.post_norm = one_plus(T(p + "post_attention_layernorm.weight"));
    if (L.full) {
      const std::string a = p + "self_attn.";
      L.fa.q = M(a + "q_proj.weight");
      L.fa.k = M(a + "k_proj.weight");
      L.fa.v = M(a + "v_proj.weight");
      L.fa.o = M(a + "o_proj.weight");
      L.fa.q_norm = one_plus(T(a + "q_norm.weight"));
      L.fa.k_norm = one_plus(T(a + "k_norm.weight"));
      for (auto* mat : {&L.fa.q, &L.fa.k, &L.fa.v, &L.fa.o}) count(*mat);
    } else {
      const std::string a = p + "linear_attn.";
      auto& la = L.la;
      la.qkv = M(a + "in_proj_qkv.weight");
      la.z = M(a + "in_proj_z.weight");
      la.b = M(a + "in_proj_b.weight");
      la.a = M(a + "in_proj_a.weight");
      la.out = M(a + "out_proj.weight");
      la.conv = to_vector(T(a + "conv1d.weight"));
      la.A_log = to_vector(T(a + "A_log"));
      la.dt_bias = to_vector(T(a + "dt_bias"));
      la.norm = to_vector(T(a + "norm.weight"));
      la.norm_finite = std::all_of(la.norm.begin(), la.norm.end(), [](float w) { return std::isfinite(w); });
      for (auto* mat : {&la.qkv, &la.z, &la.b, &la.a, &la.out}) count(*mat);
      m.stats.weights += static_cast<int64_t>(la.conv.size());
      // A channel whose in_proj row is zero always reads 0 and keeps a zero
      // conv window; its output is silu(0) = 0, as it is when its taps are zero.
      const auto row_nz = la.qkv.row_mask();
      std::vector<bool> live(c.linear_conv_dim());
      for (int64_t ch = 0; ch < c.linear_conv_dim(); ++ch) {
        const int64_t K = c.linear_conv_kernel_dim;
        const bool taps = std::any_of(&la.conv[ch * K], &la.conv[ch * K] + K, [](float w) { return w != 0.0f; });
        live[ch] = !sparse || (row_nz[ch] && taps);
      }
      // A value head whose key channels or value channels are all dead keeps
      // S = 0 forever (zero key: l2norm gives 0, nothing is written; zero
      // value: d = beta * (0 - S^T k) = 0), so its output o = S^T q is 0.
      const int64_t dk = c.linear_key_head_dim, dv = c.linear_value_head_dim;
      const int64_t group = c.linear_num_value_heads / c.linear_num_key_heads;
      for (int64_t h = 0; h < c.linear_num_value_heads; ++h) {
        const int64_t k0 = c.linear_key_dim() + (h / group) * dk, v0 = 2 * c.linear_key_dim() + h * dv;
        bool k_live = false, v_live = false;
        for (int64_t i = 0; i < dk; ++i) k_live = k_live || live[k0 + i];
        for (int64_t i = 0; i < dv; ++i) v_live = v_live || live[v0 + i];
        if (k_live && v_live) la.heads.push_back(static_cast<int32_t>(h));
      }
      // z is read only at the live heads' rows: the others are dropped.
      if (sparse) {
        std::vector<bool> keep(c.linear_value_dim(), false);
        for (int32_t h : la.heads) std::fill(keep.begin() + h * dv, keep.begin() + (h + 1) * dv, true);
        m.stats.stored -= la.z.stored();
        la.z.drop_rows(keep);
        m.stats.stored += la.z.stored();
        la.lazy_z = la.z.is_sparse() && la.z.rows() == c.linear_value_dim();
        for (int64_t r = 0; r < c.linear_value_dim(); ++r) {
          if (!keep[r]) continue;
          const double sum = la.z.abs_row_sum(r);
          // A NaN or infinite weight leaves no bound (infinity: every head computes its z).
          la.z_abs_max = std::isfinite(sum) ? std::max(la.z_abs_max, sum) : std::numeric_limits<double>::infinity();
        }
      }
      // The conv outputs the live heads read: their query and key channels and their value channels.
      std::vector<bool> read(c.linear_conv_dim(), false);
      for (int32_t h : la.heads) {
        const int64_t kh = h / group;
        for (int64_t i = 0; i < dk; ++i) read[kh * dk + i] = read[c.linear_key_dim() + kh * dk + i] = true;
        for (int64_t i = 0; i < dv; ++i) read[2 * c.linear_key_dim() + h * dv + i] = true;
      }
      const int64_t K = c.linear_conv_kernel_dim;
      la.conv_split = sparse && la.qkv.is_sparse();
      if (la.conv_split) {
        la.conv_now.assign(Support::words(c.linear_conv_dim()), 0);
        la.conv_tap.resize(c.linear_conv_dim());
        for (int64_t ch = 0; ch < c.linear_conv_dim(); ++ch) la.conv_tap[ch] = la.conv[ch * K + K - 1];
      }
      // The cut of each in_proj_qkv row: a current-only channel with tap > 0
      // matters where tap * in may reach -91; the others the conv reads or
      // moves always; the rest never.
      constexpr float kInf = std::numeric_limits<float>::infinity();
      std::vector<float> cut(c.linear_conv_dim(), kInf);
      for (int64_t ch = 0; ch < c.linear_conv_dim(); ++ch) {
        const bool moves = !sparse || row_nz[ch];
        const bool history = std::any_of(&la.conv[ch * K], &la.conv[ch * K] + K - 1, [](float w) { return w != 0.0f; });
        if (la.conv_split && !history) {
          if (!read[ch]) continue;
          la.conv_now[ch / 64] |= uint64_t{1} << (ch % 64);
          const float tap = la.conv[ch * K + K - 1];
          cut[ch] = tap > 0.0f ? std::nextafter(static_cast<float>(-91.0 / tap), -kInf) : tap < 0.0f ? -kInf : kInf;
        } else if (read[ch] || moves) {
          la.conv_channels.push_back({static_cast<int32_t>(ch), read[ch], moves});
          cut[ch] = -kInf;
        }
        if (read[ch]) m.stats.stored += K;
      }
      if (la.conv_split) la.qkv.prepare_cut(cut);
      la.silent = sparse && la.heads.empty();
      m.stats.total_heads += c.linear_num_value_heads;
      m.stats.active_heads += static_cast<int64_t>(la.heads.size());
    }
    // MLP: unit u contributes down[:, u] * silu(gate[u] x) * up[u] x, which
    // is 0 when any of the three is zero; the sparse executor drops such
    // units' gate and up rows so they are never computed.
    L.mlp.gate = M(p + "mlp.gate_proj.weight");
    L.mlp.up = M(p + "mlp.up_proj.weight");
    L.mlp.down = M(p + "mlp.down_proj.weight");
    std::vector<bool> unit(c.intermediate_size, true);
    if (sparse) {
      const auto g = L.mlp.gate.row_mask(), u = L.mlp.up.row_mask(), d = L.mlp.down.col_mask();
      for (int64_t i = 0; i < c.intermediate_size; ++i) unit[i] = g[i] && u[i] && d[i];
      L.mlp.gate.drop_rows(unit);
      L.mlp.up.drop_rows(unit);
    }
    for (int64_t i = 0; i < c.intermediate_size; ++i)
      if (unit[i]) L.mlp.units.push_back(static_cast<int32_t>(i));
    L.mlp.split = sparse && L.mlp.gate.is_sparse();
    if (L.mlp.split) {
      L.mlp.unit_bits.assign(Support::words(c.intermediate_size), 0);
      std::vector<float> cut(c.intermediate_size, std::numeric_limits<float>::infinity());
      for (int32_t i : L.mlp.units) {
        L.mlp.unit_bits[i / 64] |= uint64_t{1} << (i % 64);
        cut[i] = -91.0f;
      }
      L.mlp.gate.prepare_cut(cut);
    }
    for (auto* mat : {&L.mlp.gate, &L.mlp.up, &L.mlp.down}) count(*mat);
    if (L.full) L.input_reads = reads_of({&L.fa.q, &L.fa.k, &L.fa.v});
    else L.input_reads = reads_of({&L.la.qkv, &L.la.z, &L.la.b, &L.la.a});
    L.post_reads = reads_of({&L.mlp.gate, &L.mlp.up});
    L.input_uniform = uniform_of(L.input_norm, L.input_reads);
    L.post_uniform = uniform_of(L.post_norm, L.post_reads);
    m.stats.total_units += c.intermediate_size;
    m.stats.active_units += static_cast<int64_t>(L.mlp.units.size());
    m.layers.push_back(std::move(L));
  }
  if (sparse) (m.lm_head ? *m.lm_head : m.embed).prepare_argmax();
  m.final_reads = reads_of({&m.head()});
  m.final_uniform = uniform_of(m.final_norm, m.final_reads);
}

Model::~Model() = default;
Model::Model(Model&&) noexcept = default;
Model& Model::operator=(Model&&) noexcept = default;

const Config& Model::config() const { return impl_->cfg; }
Exec Model::exec() const { return impl_->exec; }
Model::Stats Model::stats() const { return impl_->stats; }
void Model::set_memo_entries(size_t entries) { impl_->memo_entries = impl_->exec == Exec::Sparse ? entries : 0; }
size_t Model::memo_entries() const { return impl_->memo_entries; }
void Model::clear_memo() const {
  impl_->workspaces.for_each_idle([](Workspace& ws) { ws.memo.clear(); });
}
Model::MemoStats Model::memo_stats() const {
  MemoStats s;
  impl_->workspaces.for_each_idle([&](Workspace& ws) {
    for (const SublayerMemo& m : ws.memo) {
      s.hits += m.hits();
      s.misses += m.misses();
    }
  });
  return s;
}

State::State(const State& o) : position(o.position), keys(o.keys), values(o.values) {
  for (const auto& t : o.conv) conv.push_back(t.defined() ? t.clone() : t);
  for (const auto& t : o.recurrent) recurrent.push_back(t.defined() ? t.clone() : t);
}

State& State::operator=(const State& o) {
  if (this != &o) *this = State(o);
  return *this;
}

State Model::new_state() const {
  const Config& c = impl_->cfg;
  State s;
  s.conv.resize(c.num_hidden_layers);
  s.recurrent.resize(c.num_hidden_layers);
  s.keys.resize(c.num_hidden_layers);
  s.values.resize(c.num_hidden_layers);
  for (int64_t l = 0; l < c.num_hidden_layers; ++l) {
    if (impl_->layers[l].full) continue;
    s.conv[l] = torch::zeros({c.linear_conv_dim(), c.linear_conv_kernel_dim - 1}, torch::kFloat32);
    s.recurrent[l] = torch::zeros({c.linear_num_value_heads, c.linear_key_head_dim, c.linear_value_head_dim},
                                  torch::kFloat32);
  }
  return s;
}

const torch::Tensor& Model::recurrent_state(const State& s, int layer) const {
  if (layer < 0 || layer >= impl_->cfg.num_hidden_layers)
    throw std::out_of_range("recurrent_state: layer " + std::to_string(layer) + " out of range");
  if (impl_->layers[layer].full)
    throw std::invalid_argument("recurrent_state: layer " + std::to_string(layer) +
                                " is a full-attention layer and has no recurrent state");
  return s.recurrent.at(layer);
}

// Gated DeltaNet token mixer for the T rows of ws.normed (whose support is
// ws.support); output rows into ws.y.
void Model::Impl::linear_attention(const Layer& L, int layer, State& st, int64_t T, Workspace& ws) const {
  const LinearAttention& la = L.la;
  const int64_t C = cfg.linear_conv_dim(), K = cfg.linear_conv_kernel_dim, VD = cfg.linear_value_dim();
  const int64_t nv = cfg.linear_num_value_heads, dk = cfg.linear_key_head_dim, dv = cfg.linear_value_head_dim;
  const int64_t group = nv / cfg.linear_num_key_heads, key_dim = cfg.linear_key_dim(), H = cfg.hidden_size;
  const float* n = ws.normed.data();
  float* qkv = grow(ws.qkv, T * C);
  float* z = grow(ws.z, T * VD);
  float* b = grow(ws.b, T * nv);
  float* a = grow(ws.a, T * nv);
  float* conv_out = grow(ws.conv_out, T * C);
  // Only live heads write o; the rest must read as zero.  o is +-0
  // throughout between calls (cleared after use at its support, which
  // holds every entry that is not).
  float* o = grow(ws.o, T * VD);
  const int64_t cwords = Support::words(C);
  // z is read only at the live heads' rows.  With lazy_z (the sparse
  // executor) a head's rows are computed in the head loop when it runs;
  // otherwise those rows start at +0 and the product writes the rows it
  // reaches (a written map).  The memo's key (see below) is made and its
  // slot requested first, so that its miss overlaps the work before the lookup.
  SublayerMemo* memo = T == 1 && la.conv_split ? ws.memo_for(2 * layer, memo_entries, cfg.num_hidden_layers) : nullptr;
  if (memo && !memo->set_key(ws.support.begin(0), ws.support.end(0), n)) memo = nullptr;
  if (memo) memo->prefetch();
  // Per token, whether every live head's z is provably finite (no weight or
  // input is large enough for a row to overflow): a head that neither reads
  // nor writes then is skipped without computing its z.
  ws.z_finite.assign(T, 0);
  if (la.lazy_z) {
    for (int64_t t = 0; t < T; ++t) {
      float x_max = 0.0f;
      bool finite = true;
      for (const int32_t* c = ws.support.begin(t); c != ws.support.end(t) && finite; ++c) {
        finite = std::isfinite(n[t * H + *c]);
        x_max = std::max(x_max, std::fabs(n[t * H + *c]));
      }
      ws.z_finite[t] = finite && la.z_abs_max * static_cast<double>(x_max) < 1e37;
    }
  } else {
    for (int64_t t = 0; t < T; ++t)
      for (int32_t h : la.heads) std::fill(z + t * VD + h * dv, z + t * VD + (h + 1) * dv, 0.0f);
    ws.z_bits.assign(T * Support::words(VD), 0);
    la.z.apply(n, ws.support, z, ws.scratch, ws.z_bits.data());
    store(z, T * VD);
  }
  // Causal depthwise conv, then SiLU: c[t] = silu(sum_j w[ch, j] * in[t-K+1+j]),
  // with the K-1 previous inputs kept in the state (oldest first).  Outputs
  // are computed for the channels the live heads read; the window moves for
  // every channel whose input can be non-zero.
  //
  // With conv_split, qkv holds the rows apply_cut computed (qkv_bits); any
  // other row is +0 or, for a current-only channel, below its cut.  A
  // current-only channel has acc = +0 + tap * in: the earlier taps' products
  // are +-0 and the sum starts at +0.  Its output is written only where it
  // is not zero, at the computed rows: below the cut, acc is below -90 and
  // SiLU gives -0.  Every channel's output is written only where it is not
  // +-0 (most are zero on most tokens); conv_out holds +0 at every other
  // entry (cleared after use), which stands for either zero: q, k and v are
  // only ever tested against zero or added to.
  float* windows = st.conv[layer].data_ptr<float>();
  for (int64_t e : ws.conv_written) conv_out[e] = 0.0f;
  ws.conv_written.clear();
  // Per token and key head, whether its query or key can be non-zero: with
  // conv_split, only the entries written here are.
  const int64_t nk = cfg.linear_num_key_heads;
  ws.key_live.assign(T * nk, !la.conv_split);
  // A conv output that is not +-0 (a zero stays the +0 conv_out holds).
  auto put = [&](int64_t t, int64_t ch, float v) {
    conv_out[t * C + ch] = v;
    ws.conv_written.push_back(t * C + ch);
    if (ch < 2 * key_dim) ws.key_live[t * nk + (ch < key_dim ? ch : ch - key_dim) / dk] = 1;
  };
  // From the memo when this input recurs: the current-only channels' conv
  // outputs (functions of this token's qkv rows and their taps alone), the
  // other channels' qkv rows the conv reads (their windows are state), b and a.
  if (la.conv_split) ws.qkv_bits.assign(T * cwords, 0);
  if (const SublayerMemo::Output* out = memo ? memo->find() : nullptr) {
    size_t v = 0;
    SublayerMemo::visit(*out, 0, v, [&](int64_t ch, float value) { put(0, ch, value); });
    SublayerMemo::replay(*out, 1, ws.qkv_bits.data(), qkv, v);
    std::copy(&out->values[v], &out->values[v] + nv, b);
    std::copy(&out->values[v + nv], &out->values[v + nv] + nv, a);
  } else {
    if (la.conv_split) la.qkv.apply_cut(n, ws.support, qkv, ws.scratch, ws.qkv_bits.data());
    else la.qkv.apply(n, ws.support, qkv, ws.scratch);
    la.b.apply(n, ws.support, b, ws.scratch);
    la.a.apply(n, ws.support, a, ws.scratch);
    store(qkv, T * C);
    store(b, T * nv);
    store(a, T * nv);
    // The current-only channels, at the rows computed (with a memo, the
    // outputs written are marked in now_bits).
    if (memo) ws.now_bits.assign(cwords, 0);
    for (int64_t t = 0; t < T && la.conv_split; ++t) {
      const uint64_t* bits = &ws.qkv_bits[t * cwords];
      for (int64_t i = 0; i < cwords; ++i)
        for (uint64_t w = bits[i] & la.conv_now[i]; w != 0; w &= w - 1) {
          const int64_t ch = i * 64 + __builtin_ctzll(w);
          const float v = store(silu(0.0f + la.conv_tap[ch] * qkv[t * C + ch]));
          if (v == 0.0f) continue;
          put(t, ch, v);
          if (memo) ws.now_bits[i] |= w & -w;
        }
    }
    if (SublayerMemo::Output* rec = memo ? memo->insert() : nullptr) {
      // The other channels' rows: qkv_bits without the current-only ones.
      ws.history_bits.resize(cwords);
      for (int64_t i = 0; i < cwords; ++i) ws.history_bits[i] = ws.qkv_bits[i] & ~la.conv_now[i];
      if (SublayerMemo::record(*rec, ws.now_bits.data(), cwords, conv_out) &&
          SublayerMemo::record(*rec, ws.history_bits.data(), cwords, qkv)) {
        rec->values.insert(rec->values.end(), b, b + nv);
        rec->values.insert(rec->values.end(), a, a + nv);
      } else {
        memo->forget_last();
      }
    }
  }
  for (int64_t t = 0; t < T; ++t)
    for (const ConvChannel& cc : la.conv_channels) {
      float* window = windows + cc.channel * (K - 1);
      const bool computed = !la.conv_split || ((ws.qkv_bits[t * cwords + cc.channel / 64] >> (cc.channel % 64)) & 1);
      const float in = computed ? qkv[t * C + cc.channel] : 0.0f;
      if (cc.output) {
        const float* w = &la.conv[cc.channel * K];
        float acc = 0.0f;
        for (int64_t j = 0; j < K - 1; ++j) acc += w[j] * window[j];
        acc += w[K - 1] * in;
        const float v = store(silu(acc));
        if (v != 0.0f) put(t, cc.channel, v);
      }
      if (cc.moves) {
        if (K == 4) {  // Qwen3.5's kernel, written out (a loop here becomes a memmove call)
          window[0] = window[1];
          window[1] = window[2];
          window[2] = in;
        } else {
          for (int64_t j = 0; j + 1 < K - 1; ++j) window[j] = window[j + 1];
          window[K - 2] = in;
        }
      }
    }

  // The gated delta rule per value head, token by token, in fp32.
  const float scale = query_scale(dk);
  float* S_all = st.recurrent[layer].data_ptr<float>();
  ws.head_out.assign(T * nv, 0);
  ws.gates.resize(static_cast<size_t>(cfg.num_hidden_layers * nv));
  ws.per_thread.resize(std::max<size_t>(ws.per_thread.size(), static_cast<size_t>(at::get_num_threads())));
  ws.per_thread_nz.resize(ws.per_thread.size());
  // The heads that may run.  On a single token, a head whose key head is
  // not live, whose b and a are those its gates were last computed from
  // with a decay of exactly 1, and whose z is provably finite, is skipped
  // below without a test more: it is left out here, before the per-head
  // work begins (most heads of a compiled circuit, on most tokens).
  const std::vector<int32_t>* heads = &la.heads;
  if (T == 1 && la.lazy_z && ws.z_finite[0]) {
    ws.run_heads.clear();
    for (int32_t h : la.heads) {
      const Workspace::Gates& g = ws.gates[layer * nv + h];
      uint32_t b_bits, a_bits;
      std::memcpy(&b_bits, &b[h], 4);
      std::memcpy(&a_bits, &a[h], 4);
      if (!ws.key_live[h / group] && g.valid && g.b == b_bits && g.a == a_bits && g.decay == 1.0f) continue;
      ws.run_heads.push_back(h);
    }
    heads = &ws.run_heads;
  }
  parallel_items(static_cast<int64_t>(heads->size()), T * dk * dv * 4, [&](int64_t hi) {
    const int64_t h = (*heads)[hi], kh = h / group;
    float* S = S_all + h * dk * dv;
    float* q = grow(ws.per_thread[at::get_thread_num()], 2 * dk + 3 * dv);
    float *k = q + dk, *kv_mem = k + dk, *d = kv_mem + dv, *out = d + dv;
    int32_t* k_nz = grow(ws.per_thread_nz[at::get_thread_num()], 2 * dk);
    int32_t* q_nz = k_nz + dk;
    Workspace::Gates& gates = ws.gates[layer * nv + h];
    for (int64_t t = 0; t < T; ++t) {
      const float* row = &conv_out[t * C];
      const float* qr = row + kh * dk;
      const float* kr = row + key_dim + kh * dk;
      const float* v = row + 2 * key_dim + h * dv;
      float* zr = &z[t * VD + h * dv];
      // beta = sigmoid(b); g = -exp(A_log) * softplus(a + dt_bias); decay = exp(g).
      uint32_t b_bits, a_bits;
      std::memcpy(&b_bits, &b[t * nv + h], 4);
      std::memcpy(&a_bits, &a[t * nv + h], 4);
      if (!gates.valid || gates.b != b_bits || gates.a != a_bits) {
        const float A = std::exp(la.A_log[h]);
        gates = {b_bits, a_bits, true, sigmoid(b[t * nv + h]), std::exp(-A * softplus(a[t * nv + h] + la.dt_bias[h]))};
      }
      const float beta = gates.beta, decay = gates.decay;
      // A head whose query and key are zero on this token, with an open
      // gate, leaves S as it is and outputs (w * (0 * r)) * silu(z), a zero
      // for finite z: o keeps its +0 (a circuit memory not addressed here).
      // With lazy_z, the head's z rows are computed here, once it runs (or
      // when the bound cannot show them finite): each is row_value, the
      // lane scheme's sum that the product writes (+0 for -0: the product's
      // rows never hold -0).
      bool z_ready = !la.lazy_z;
      auto make_z = [&] {
        la.z.row_values(h * dv, (h + 1) * dv, n + t * H, zr);
        for (int64_t j = 0; j < dv; ++j) zr[j] = store(zr[j] + 0.0f);
        z_ready = true;
      };
      if (!ws.key_live[t * nk + kh] && decay == 1.0f) {
        if (la.lazy_z && ws.z_finite[t]) continue;
        if (!z_ready) make_z();
        if (all_finite(zr, dv)) continue;
      }
      // With z provably finite (and the norm's weights finite), only the
      // rows of z where the head's output is not zero are computed (below).
      bool z_where_out = !z_ready && ws.z_finite[t] && la.norm_finite;
      if (!z_ready && !z_where_out) make_z();
      // l2norm(x) = x * rsqrt(sum(x^2) + 1e-6); q is then scaled by 1/sqrt(dk).
      const float rq = l2norm_scale(lane_dot(qr, qr, dk));
      const float rk = l2norm_scale(lane_dot(kr, kr, dk));
      // The entries of q and k that are not zero, ascending.
      int32_t* k_at = k_nz;
      int32_t* q_at = q_nz;
      for (int64_t i = 0; i < dk; ++i) {
        q[i] = (qr[i] * rq) * scale;
        k[i] = kr[i] * rk;
        if (k[i] != 0.0f) *k_at++ = static_cast<int32_t>(i);
        if (q[i] != 0.0f) *q_at++ = static_cast<int32_t>(i);
      }
      // S = decay * S; d = beta * (v - S^T k); S = S + k d^T; o = S^T q.
      // Sums run over i ascending; a term with k[i] = 0 (or q[i] = 0) adds
      // +-0 to a value that is never changed by it (at most the sign of a
      // zero), so it is skipped: a row of S with k[i] = 0 is not touched, and
      // a head whose key and query are zero on this token (a circuit memory
      // not addressed by it) costs nothing.  A decay of exactly 1 (the
      // circuit's open gate) leaves S unchanged and is skipped too.
      if (decay != 1.0f)
        for (int64_t i = 0; i < dk * dv; ++i) S[i] *= decay;
      if (k_at != k_nz) {
        std::fill(kv_mem, kv_mem + dv, 0.0f);
        for (const int32_t* i = k_nz; i != k_at; ++i)
          for (int64_t j = 0; j < dv; ++j) kv_mem[j] += S[*i * dv + j] * k[*i];
        for (int64_t j = 0; j < dv; ++j) d[j] = (v[j] - kv_mem[j]) * beta;
        for (const int32_t* i = k_nz; i != k_at; ++i) {
          float* Si = S + *i * dv;
          for (int64_t j = 0; j < dv; ++j) Si[j] += k[*i] * d[j];
        }
      }
      std::fill(out, out + dv, 0.0f);
      for (const int32_t* i = q_nz; i != q_at; ++i) {
        const float* Si = S + *i * dv;
        for (int64_t j = 0; j < dv; ++j) out[j] += Si[j] * q[*i];
      }
      // Gated RMSNorm per head (weight not zero-centred):
      // o = (w * (o * rsqrt(mean(o^2) + eps))) * silu(z).
      const float r = inv_rms(out, dv, eps);
      // A non-finite r (a NaN or infinity the state holds, a zero eps) makes
      // (w * (0 * r)) * silu(z) NaN where out is zero: every row then.
      if (z_where_out && !std::isfinite(r)) {
        make_z();
        z_where_out = false;
      }
      float* dst = &o[t * VD + h * dv];
      if (z_where_out) {
        // Where out[j] is +-0, (w * (out[j] * r)) * silu(z) is a zero for
        // finite z, w and r, which dst holds already (o is +-0 between calls, and the
        // support below leaves zeros out): z's row is needed only where out
        // is not zero (NaN included).
        for (int64_t j = 0; j < dv; ++j)
          if (out[j] != 0.0f) {
            const float zj = store(la.z.row_value(h * dv + j, n + t * H) + 0.0f);
            dst[j] = store((la.norm[j] * (out[j] * r)) * silu(zj));
          }
      } else {
        for (int64_t j = 0; j < dv; ++j) dst[j] = store((la.norm[j] * (out[j] * r)) * silu(zr[j]));
      }
      ws.head_out[t * nv + h] = 1;
    }
  });
  ws.support.clear();
  for (int64_t t = 0; t < T; ++t) {
    for (int32_t h : la.heads)
      if (ws.head_out[t * nv + h]) ws.support.add_nonzero(o + t * VD, h * dv, (h + 1) * dv);
    ws.support.end_vector();
  }
  la.out.apply(o, ws.support, ws.y.data(), ws.scratch, ws.y_bits.data());
  clear_support(o, VD, ws.support);
}

// Rotary embedding on the first rotary_dim entries of one head at `position`:
// x' = x * cos + rotate_half(x) * sin, rotate_half(x) = [-x2, x1].
void Model::Impl::rope(float* x, int64_t position) const {
  const int64_t half = static_cast<int64_t>(inv_freq.size());
  for (int64_t i = 0; i < half; ++i) {
    const float angle = static_cast<float>(position) * inv_freq[i];
    const float c = std::cos(angle), s = std::sin(angle);
    const float x1 = x[i], x2 = x[i + half];
    x[i] = x1 * c + (-x2) * s;
    x[i + half] = x2 * c + x1 * s;
  }
}

// Output-gated grouped-query attention for the T rows of ws.normed (support
// ws.support); output rows into ws.y.
void Model::Impl::full_attention(const Layer& L, int layer, State& st, int64_t T, Workspace& ws) const {
  const FullAttention& fa = L.fa;
  const int64_t nh = cfg.num_attention_heads, nkv = cfg.num_key_value_heads, D = cfg.head_dim;
  const int64_t group = nh / nkv;
  const float* n = ws.normed.data();
  float* q = grow(ws.q, T * nh * 2 * D);
  float* k = grow(ws.k, T * nkv * D);
  float* v = grow(ws.v, T * nkv * D);
  float* out = grow(ws.attn, T * nh * D);
  fa.q.apply(n, ws.support, q, ws.scratch);
  fa.k.apply(n, ws.support, k, ws.scratch);
  fa.v.apply(n, ws.support, v, ws.scratch);
  store(q, T * nh * 2 * D);
  store(k, T * nkv * D);
  store(v, T * nkv * D);
  auto& keys = st.keys[layer];
  auto& values = st.values[layer];
  const int64_t start = st.position;
  // Keys: k_norm (zero-centred RMSNorm over head_dim), then rope.
  for (int64_t t = 0; t < T; ++t)
    for (int64_t g = 0; g < nkv; ++g) {
      float* kr = &k[(t * nkv + g) * D];
      rmsnorm_zc(kr, fa.k_norm.data(), D, eps, kr);
      rope(kr, start + t);
    }
  keys.insert(keys.end(), k, k + T * nkv * D);
  values.insert(values.end(), v, v + T * nkv * D);
  const float scaling = 1.0f / std::sqrt(static_cast<float>(D));
  ws.per_thread.resize(std::max<size_t>(ws.per_thread.size(), static_cast<size_t>(at::get_num_threads())));
  parallel_items(nh, T * (start + T) * D * 2, [&](int64_t h) {
    float* qh = grow(ws.per_thread[at::get_thread_num()], 2 * D + start + T);
    float *acc = qh + D, *scores = acc + D;
    const int64_t g = h / group;
    for (int64_t t = 0; t < T; ++t) {
      const int64_t pos = start + t;
      // q_proj gives per head [query (D), gate (D)].
      const float* qg = &q[(t * nh + h) * 2 * D];
      rmsnorm_zc(qg, fa.q_norm.data(), D, eps, qh);
      rope(qh, pos);
      // softmax(q k^T * scaling) over positions 0..pos, then the weighted sum of values.
      float mx = -INFINITY;
      for (int64_t s = 0; s <= pos; ++s) {
        scores[s] = lane_dot(qh, &keys[(s * nkv + g) * D], D) * scaling;
        mx = std::max(mx, scores[s]);
      }
      float sum = 0.0f;
      for (int64_t s = 0; s <= pos; ++s) {
        scores[s] = std::exp(scores[s] - mx);
        sum += scores[s];
      }
      std::fill(acc, acc + D, 0.0f);
      for (int64_t s = 0; s <= pos; ++s) {
        const float p = scores[s] / sum;
        const float* vr = &values[(s * nkv + g) * D];
        for (int64_t j = 0; j < D; ++j) acc[j] += p * vr[j];
      }
      // Output gate: attn * sigmoid(gate).
      float* dst = &out[(t * nh + h) * D];
      for (int64_t j = 0; j < D; ++j) dst[j] = store(acc[j] * sigmoid(qg[D + j]));
    }
  });
  ws.support.scan(out, T, nh * D);
  fa.o.apply(out, ws.support, ws.y.data(), ws.scratch, ws.y_bits.data());
}

// SwiGLU MLP on the T rows of ws.normed: ws.y = down(silu(gate(m)) * up(m)).
void Model::Impl::mlp(const Layer& L, int layer, int64_t T, Workspace& ws) const {
  const int64_t I = cfg.intermediate_size, H = cfg.hidden_size;
  const float* m = ws.normed.data();
  float* g = grow(ws.gate, T * I);
  // Only units write act; the rest must read as zero.  act is +-0
  // throughout between calls (cleared after use at its support).
  float* act = grow(ws.act, T * I);
  const int64_t words = Support::words(I);
  const Mlp& mlp = L.mlp;
  // The output (y at y_bits) from the memo when this input recurs.
  SublayerMemo* memo = T == 1 && mlp.split ? ws.memo_for(2 * layer + 1, memo_entries, cfg.num_hidden_layers) : nullptr;
  if (memo && !memo->set_key(ws.support.begin(0), ws.support.end(0), m)) memo = nullptr;
  if (const SublayerMemo::Output* out = memo ? memo->find() : nullptr) {
    size_t v = 0;
    SublayerMemo::replay(*out, 0, ws.y_bits.data(), ws.y.data(), v);
    return;
  }
  auto put = [&](int64_t t, int32_t i, float v) {
    act[t * I + i] = v;
    if (v != 0.0f || v != v) ws.support.add(i);
  };
  if (!mlp.split) {
    float* u = grow(ws.up, T * I);
    mlp.gate.apply(m, ws.support, g, ws.scratch);
    mlp.up.apply(m, ws.support, u, ws.scratch);
    store(g, T * I);
    store(u, T * I);
    ws.support.clear();
    for (int64_t t = 0; t < T; ++t) {
      for (int32_t i : mlp.units) put(t, i, store(silu(g[t * I + i]) * u[t * I + i]));
      ws.support.end_vector();
    }
  } else {
    // The gate where it may reach its cut; elsewhere silu(gate) is -0, and
    // so is it where the gate was computed below -90: the activation is
    // then silu(gate) * up = +-0 (up is finite: finite weights and inputs),
    // and the up row is not computed.
    ws.gate_bits.assign(T * words, 0);
    mlp.gate.apply_cut(m, ws.support, g, ws.scratch, ws.gate_bits.data());
    ws.support.clear();
    for (int64_t t = 0; t < T; ++t) {
      // The units whose silu(gate) is not zero, then their up rows together.
      ws.live_units.clear();
      ws.live_silu.clear();
      const uint64_t* bits = &ws.gate_bits[t * words];
      for (int64_t w = 0; w < words; ++w)
        for (uint64_t b = bits[w] & mlp.unit_bits[w]; b != 0; b &= b - 1) {
          const int32_t i = static_cast<int32_t>(w * 64 + __builtin_ctzll(b));
          const float sg = silu(store(g[t * I + i]));
          if (sg == 0.0f) continue;
          ws.live_units.push_back(i);
          ws.live_silu.push_back(sg);
        }
      const size_t n_live = ws.live_units.size();
      float* up = grow(ws.up, static_cast<int64_t>(n_live));
      mlp.up.row_values(ws.live_units.data(), ws.live_units.data() + n_live, m + t * H, up);
      for (size_t k = 0; k < n_live; ++k) put(t, ws.live_units[k], store(ws.live_silu[k] * store(up[k])));
      ws.support.end_vector();
    }
  }
  mlp.down.apply(act, ws.support, ws.y.data(), ws.scratch, ws.y_bits.data());
  clear_support(act, I, ws.support);
  if (SublayerMemo::Output* rec = memo ? memo->insert() : nullptr)
    if (!SublayerMemo::record(*rec, ws.y_bits.data(), Support::words(H), ws.y.data())) memo->forget_last();
}

void Model::Impl::body(State& st, const int64_t* tokens, int64_t T, const std::vector<int>& capture_layers,
                       Outputs* result, Workspace& ws, const float* residual) const {
  const int64_t H = cfg.hidden_size;
  if (st.recurrent.size() != static_cast<size_t>(cfg.num_hidden_layers))
    throw std::invalid_argument("forward: state was not made by this model's new_state()");
  for (int layer : capture_layers)
    if (layer < 0 || layer > cfg.num_hidden_layers)
      throw std::out_of_range("forward: capture layer " + std::to_string(layer) + " is outside 0.." +
                              std::to_string(cfg.num_hidden_layers));
  for (int64_t t = 0; t < T && !residual; ++t)
    if (tokens[t] < 0 || tokens[t] >= cfg.vocab_size)
      throw std::out_of_range("forward: token " + std::to_string(tokens[t]) + " is outside the vocabulary of " +
                              std::to_string(cfg.vocab_size));
  float* x = grow(ws.x, T * H);
  float* normed = grow(ws.normed, T * H);
  float* y = grow(ws.y, T * H);
  const int64_t words = Support::words(H);
  ws.x_bits.assign(T * words, 0);
  ws.y_bits.resize(T * words);
  auto capture = [&](int index) {
    for (size_t i = 0; i < capture_layers.size(); ++i)
      if (capture_layers[i] == index) result->residuals[i] = torch::from_blob(x, {T, H}).clone();
  };
  // Only the entries x_bits names are visited.  Outside them x is +0 and so
  // is normed: normed starts zero, is written on x_bits, and is set to +0
  // where an entry leaves x_bits.
  std::fill(normed, normed + T * H, 0.0f);
  // rms-normalise every row of x with weight (1 + w) into ws.normed.  Its
  // support is the entries whose normed value is not +0 (an entry of x_bits
  // whose (1 + w) is 0 drops out), which are all the projections visit.
  // With `reads` (non-empty), only the entries the next products read are
  // normalised and listed; the others of normed are not read before the
  // next norm writes them (or they leave x_bits and become +0).
  //
  // The squared sum the norm needs is kept per token as x changes: when
  // every entry is an integer of magnitude below 2^12 (its square an integer
  // below 2^24) and the sum is below 2^24, every partial sum of the lane
  // scheme is an integer below 2^24, exact in fp32, so lane_dot(x, x) is the
  // sum itself whatever the order of its terms, and the norm takes the kept
  // sum instead of adding the squares again.  (A compiled circuit's residual
  // holds integers whose squares sum to 2^23.)  Otherwise it sums them.
  ws.squares.assign(T, {});
  auto account = [](float v, Workspace::SquaredSum& s, int64_t sign) {
    if (std::fabs(v) < 4096.0f && static_cast<float>(static_cast<int32_t>(v)) == v) {
      const auto i = static_cast<int64_t>(v);
      s.sum += sign * i * i;
    } else {
      s.inexact += sign;
    }
  };
  auto norm = [&](const std::vector<float>& one_plus_w, const std::vector<uint64_t>& reads, float uniform) {
    ws.support.clear(H);
    const bool all = reads.empty();
    for (int64_t t = 0; t < T; ++t) {
      const float* xt = &x[t * H];
      const uint64_t* xb = &ws.x_bits[t * words];
      const Workspace::SquaredSum& sq = ws.squares[t];
      const float squares = sq.inexact == 0 && sq.sum < (int64_t{1} << 24) ? static_cast<float>(sq.sum)
                                                                             : lane_dot(xt, xt, xb, words);
      const float r = rms_scale(squares, H, eps);
      auto each = [&](auto weight) {
        for (int64_t i = 0; i < words; ++i)
          for (uint64_t b = xb[i] & (all ? ~uint64_t{0} : reads[i]); b != 0; b &= b - 1) {
            const int64_t c = i * 64 + __builtin_ctzll(b);
            const float v = store((xt[c] * r) * weight(c));
            normed[t * H + c] = v;
            if (v != 0.0f || v != v) ws.support.add(static_cast<int32_t>(c));
          }
      };
      if (uniform == uniform) each([uniform](int64_t) { return uniform; });
      else each([&one_plus_w](int64_t c) { return one_plus_w[c]; });
      ws.support.end_vector();
    }
  };
  // x += y on the rows the last product wrote (elsewhere y is +0, and x + 0
  // is x, since no entry of x is -0).  An entry that becomes +0 (a one-hot
  // slot left) leaves x_bits, and its normed entry is set to +0 with it.
  auto add_residual = [&] {
    for (int64_t t = 0; t < T; ++t)
      for (int64_t i = 0; i < words; ++i) {
        const uint64_t bits = ws.y_bits[t * words + i];
        uint64_t& xb = ws.x_bits[t * words + i];
        xb |= bits;
        for (uint64_t b = bits; b != 0; b &= b - 1) {
          const int64_t c = t * H + i * 64 + __builtin_ctzll(b);
          account(x[c], ws.squares[t], -1);
          x[c] = store(x[c] + store(y[c]));
          account(x[c], ws.squares[t], 1);
          if (x[c] == 0.0f) {
            xb &= ~(b & -b);
            normed[c] = 0.0f;
          }
        }
      }
  };

  // The embeddings (or the given residual), with -0 made +0 as the first
  // residual addition would.
  for (int64_t t = 0; t < T; ++t) {
    if (residual) std::copy(residual + t * H, residual + (t + 1) * H, &x[t * H]);
    else embed.row(tokens[t], &x[t * H]);
    store(&x[t * H], H);
    for (int64_t c = 0; c < H; ++c) {
      x[t * H + c] += 0.0f;
      if (x[t * H + c] != 0.0f || x[t * H + c] != x[t * H + c]) {
        ws.x_bits[t * words + c / 64] |= uint64_t{1} << (c % 64);
        account(x[t * H + c], ws.squares[t], 1);
      }
    }
  }
  for (int l = 0; l < cfg.num_hidden_layers; ++l) {
    const Layer& L = layers[l];
    capture(l);
    if (L.full || !L.la.silent) {
      norm(L.input_norm, L.input_reads, L.input_uniform);
      std::fill(ws.y_bits.begin(), ws.y_bits.end(), 0);
      if (L.full) full_attention(L, l, st, T, ws);
      else linear_attention(L, l, st, T, ws);
      add_residual();
    }
    norm(L.post_norm, L.post_reads, L.post_uniform);
    std::fill(ws.y_bits.begin(), ws.y_bits.end(), 0);
    mlp(L, l, T, ws);
    add_residual();
  }
  capture(static_cast<int>(cfg.num_hidden_layers));
  norm(final_norm, final_reads, final_uniform);
  st.position += T;
}

Outputs Model::forward(State& st, const std::vector<int64_t>& tokens, const std::vector<int>& capture_layers) const {
  const Impl& m = *impl_;
  auto lease = m.workspaces.get();
  Workspace& ws = *lease;
  const int64_t T = static_cast<int64_t>(tokens.size());
  Outputs result;
  result.residuals.resize(capture_layers.size());
  m.body(st, tokens.data(), T, capture_layers, &result, ws);
  result.logits = torch::empty({T, m.cfg.vocab_size}, torch::kFloat32);
  m.head().apply(ws.normed.data(), ws.support, result.logits.data_ptr<float>(), ws.scratch);
  return result;
}

Outputs Model::forward_residual(State& st, const torch::Tensor& residual, const std::vector<int>& capture_layers) const {
  const Impl& m = *impl_;
  const int64_t H = m.cfg.hidden_size;
  if (residual.dim() != 2 || residual.size(1) != H)
    throw std::invalid_argument("forward_residual: the residual must be [T, " + std::to_string(H) + "]");
  const torch::Tensor r = residual.to(torch::kFloat32).contiguous();
  auto lease = m.workspaces.get();
  Workspace& ws = *lease;
  const int64_t T = r.size(0);
  Outputs result;
  result.residuals.resize(capture_layers.size());
  m.body(st, nullptr, T, capture_layers, &result, ws, r.data_ptr<float>());
  result.hidden = torch::from_blob(ws.normed.data(), {T, H}).clone();
  result.logits = torch::empty({T, m.cfg.vocab_size}, torch::kFloat32);
  m.head().apply(ws.normed.data(), ws.support, result.logits.data_ptr<float>(), ws.scratch);
  return result;
}

torch::Tensor Model::step(State& st, int64_t token) const { return forward(st, {token}).logits[0]; }

int64_t Model::forward_argmax(State& st, const std::vector<int64_t>& tokens) const {
  if (tokens.empty()) throw std::invalid_argument("forward_argmax: no tokens");
  const Impl& m = *impl_;
  auto lease = m.workspaces.get();
  Workspace& ws = *lease;
  const int64_t T = static_cast<int64_t>(tokens.size());
  m.body(st, tokens.data(), T, {}, nullptr, ws);
  return m.head().argmax(ws.normed.data(), ws.support, T - 1, ws.scratch);
}

int64_t Model::step_argmax(State& st, int64_t token) const {
  const Impl& m = *impl_;
  auto lease = m.workspaces.get();
  Workspace& ws = *lease;
  m.body(st, &token, 1, {}, nullptr, ws);
  // The argmax is a function of the final normed entries the head reads
  // (the support, which the final norm limits to them): from the memo when
  // they recur, as a sublayer's output.
  SublayerMemo* memo = m.head().is_sparse() ? ws.memo_for(2 * m.cfg.num_hidden_layers, m.memo_entries, m.cfg.num_hidden_layers) : nullptr;
  if (memo && !memo->set_key(ws.support.begin(0), ws.support.end(0), ws.normed.data())) memo = nullptr;
  if (const SublayerMemo::Output* out = memo ? memo->find() : nullptr) return out->row;
  const int64_t row = m.head().argmax(ws.normed.data(), ws.support, 0, ws.scratch);
  if (SublayerMemo::Output* rec = memo ? memo->insert() : nullptr) rec->row = row;
  return row;
}

}  // namespace qgpu::qwen
