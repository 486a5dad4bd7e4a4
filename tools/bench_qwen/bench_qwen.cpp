// bench_qwen: tokens/s and memory of the Qwen3.5 runtime on
//   1. a dense Qwen3.5-2B-shaped stack with random weights (dense executor), and
//   2. a circuit-like stack at 2B widths: > 99% zeros, a few live GDN heads and
//      MLP units per layer, a large vocabulary with few live rows, run by both
//      executors; their ratio is the sparse speed-up.
#include "model_host/qwen/model.h"

#include <CLI/CLI.hpp>
#include <torch/utils.h>

#include <chrono>
#include <ctime>
#include <fstream>
#include <iomanip>
#include <iostream>

using namespace qgpu::qwen;

namespace {

double rss_gib() {
  std::ifstream in("/proc/self/status");
  std::string key;
  while (in >> key)
    if (key == "VmRSS:") {
      double kib;
      in >> kib;
      return kib / (1024.0 * 1024.0);
    }
  return 0;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Random dense weights with the usual 1/sqrt(fan_in) scale.
Checkpoint dense_stack(int64_t layers, int64_t vocab) {
  Checkpoint ck;
  ck.config = Config::qwen35_2b(layers, vocab);
  torch::manual_seed(0);
  const Config& c = ck.config;
  auto lin = [](int64_t out, int64_t in) { return torch::randn({out, in}) / std::sqrt(static_cast<double>(in)); };
  const int64_t H = c.hidden_size, I = c.intermediate_size;
  ck.tensors["embed_tokens.weight"] = torch::randn({vocab, H}) * 0.05;
  ck.tensors["norm.weight"] = torch::zeros({H});
  for (int64_t l = 0; l < layers; ++l) {
    const std::string p = "layers." + std::to_string(l) + ".";
    ck.tensors[p + "input_layernorm.weight"] = torch::zeros({H});
    ck.tensors[p + "post_attention_layernorm.weight"] = torch::zeros({H});
    ck.tensors[p + "mlp.gate_proj.weight"] = lin(I, H);
    ck.tensors[p + "mlp.up_proj.weight"] = lin(I, H);
    ck.tensors[p + "mlp.down_proj.weight"] = lin(H, I);
    if (c.is_full_attention(static_cast<int>(l))) {
      const int64_t D = c.head_dim, nh = c.num_attention_heads, nkv = c.num_key_value_heads;
      ck.tensors[p + "self_attn.q_proj.weight"] = lin(nh * D * 2, H);
      ck.tensors[p + "self_attn.k_proj.weight"] = lin(nkv * D, H);
      ck.tensors[p + "self_attn.v_proj.weight"] = lin(nkv * D, H);
      ck.tensors[p + "self_attn.o_proj.weight"] = lin(H, nh * D);
      ck.tensors[p + "self_attn.q_norm.weight"] = torch::zeros({D});
      ck.tensors[p + "self_attn.k_norm.weight"] = torch::zeros({D});
    } else {
      const std::string a = p + "linear_attn.";
      const int64_t C = c.linear_conv_dim(), V = c.linear_value_dim(), nv = c.linear_num_value_heads;
      ck.tensors[a + "in_proj_qkv.weight"] = lin(C, H);
      ck.tensors[a + "in_proj_z.weight"] = lin(V, H);
      ck.tensors[a + "in_proj_b.weight"] = lin(nv, H);
      ck.tensors[a + "in_proj_a.weight"] = lin(nv, H);
      ck.tensors[a + "conv1d.weight"] = torch::randn({C, 1, c.linear_conv_kernel_dim}) * 0.5;
      ck.tensors[a + "out_proj.weight"] = lin(H, V);
      ck.tensors[a + "A_log"] = torch::zeros({nv});
      ck.tensors[a + "dt_bias"] = torch::zeros({nv});
      ck.tensors[a + "norm.weight"] = torch::ones({c.linear_value_head_dim});
    }
  }
  return ck;
}

// Circuit-like: all layers linear attention; per layer `heads` live GDN heads
// (each q/k/v channel reads 4 residual entries), `units` live MLP units, and
// `live_vocab` vocabulary rows of 8 entries.  Zero tensors take no memory.
Checkpoint circuit_stack(int64_t layers, int64_t vocab, int64_t heads, int64_t units, int64_t live_vocab) {
  Checkpoint ck;
  ck.config = Config::qwen35_2b(layers, vocab);
  Config& c = ck.config;
  c.layer_types.assign(layers, "linear_attention");
  const int64_t H = c.hidden_size, I = c.intermediate_size, dk = c.linear_key_head_dim, dv = c.linear_value_head_dim;
  const int64_t C = c.linear_conv_dim(), V = c.linear_value_dim(), nv = c.linear_num_value_heads, kd = c.linear_key_dim();
  torch::manual_seed(1);
  auto fill_rows = [&](torch::Tensor& w, int64_t r0, int64_t n, int64_t per_row) {
    auto acc = w.accessor<float, 2>();
    for (int64_t r = r0; r < r0 + n; ++r)
      for (int64_t j = 0; j < per_row; ++j) acc[r][(r * 131 + j * 517) % w.size(1)] = 1.0f + static_cast<float>(j % 3);
  };
  auto embed = lazy_zeros({vocab, H});
  fill_rows(embed, 0, live_vocab, 8);
  ck.tensors["embed_tokens.weight"] = embed;
  ck.tensors["norm.weight"] = torch::zeros({H});
  for (int64_t l = 0; l < layers; ++l) {
    const std::string p = "layers." + std::to_string(l) + ".", a = p + "linear_attn.";
    ck.tensors[p + "input_layernorm.weight"] = torch::zeros({H});
    ck.tensors[p + "post_attention_layernorm.weight"] = torch::zeros({H});
    auto qkv = lazy_zeros({C, H}), z = lazy_zeros({V, H}), b = lazy_zeros({nv, H}), av = lazy_zeros({nv, H}),
         out = lazy_zeros({H, V});
    for (int64_t h = 0; h < heads; ++h) {
      fill_rows(qkv, h * dk, dk, 4);
      fill_rows(qkv, kd + h * dk, dk, 4);
      fill_rows(qkv, 2 * kd + h * dv, dv, 4);
      fill_rows(z, h * dv, dv, 1);
      fill_rows(b, h, 1, 1);
      fill_rows(av, h, 1, 1);
      auto o = out.accessor<float, 2>();
      for (int64_t j = 0; j < dv; ++j) o[(h * dv + j) % H][h * dv + j] = 1.0f;
    }
    ck.tensors[a + "in_proj_qkv.weight"] = qkv;
    ck.tensors[a + "in_proj_z.weight"] = z;
    ck.tensors[a + "in_proj_b.weight"] = b;
    ck.tensors[a + "in_proj_a.weight"] = av;
    ck.tensors[a + "out_proj.weight"] = out;
    auto conv = torch::zeros({C, 1, c.linear_conv_kernel_dim});
    conv.select(2, c.linear_conv_kernel_dim - 1).fill_(1.0f);
    ck.tensors[a + "conv1d.weight"] = conv;
    ck.tensors[a + "A_log"] = torch::zeros({nv});
    ck.tensors[a + "dt_bias"] = torch::full({nv}, -30.0f);
    ck.tensors[a + "norm.weight"] = torch::ones({dv});
    auto gate = lazy_zeros({I, H}), up = lazy_zeros({I, H}), down = lazy_zeros({H, I});
    fill_rows(gate, 0, units, 4);
    fill_rows(up, 0, units, 1);
    auto d = down.accessor<float, 2>();
    for (int64_t u = 0; u < units; ++u) d[(u * 7) % H][u] = 1.0f;
    ck.tensors[p + "mlp.gate_proj.weight"] = gate;
    ck.tensors[p + "mlp.up_proj.weight"] = up;
    ck.tensors[p + "mlp.down_proj.weight"] = down;
  }
  return ck;
}

// Process CPU seconds (all threads): on a shared machine wall time overstates the cost.
double cpu_seconds() { return static_cast<double>(std::clock()) / CLOCKS_PER_SEC; }

struct Result {
  double decode_tps, decode_cpu_tps, prefill_tps, rss_gib, load_s;
  Model::Stats stats;
};

// Decodes `tokens` one at a time (after a warm-up token) and prefills `prefill` tokens in one batch.
Result measure(const Checkpoint& ck, Exec exec, int64_t tokens, int64_t prefill, int64_t live_vocab) {
  const double rss0 = rss_gib();
  auto t0 = std::chrono::steady_clock::now();
  Model model(ck, exec);
  Result r{};
  r.load_s = seconds_since(t0);
  r.stats = model.stats();
  State s = model.new_state();
  model.step(s, 0);
  t0 = std::chrono::steady_clock::now();
  const double c0 = cpu_seconds();
  for (int64_t i = 0; i < tokens; ++i) model.step(s, (i * 37) % live_vocab);
  r.decode_tps = static_cast<double>(tokens) / seconds_since(t0);
  r.decode_cpu_tps = static_cast<double>(tokens) / (cpu_seconds() - c0);
  std::vector<int64_t> batch;
  for (int64_t i = 0; i < prefill; ++i) batch.push_back((i * 53) % live_vocab);
  State p = model.new_state();
  t0 = std::chrono::steady_clock::now();
  model.forward(p, batch);
  r.prefill_tps = static_cast<double>(prefill) / seconds_since(t0);
  r.rss_gib = rss_gib() - rss0;
  return r;
}

void print(const std::string& what, const Result& r) {
  std::cout << std::left << std::setw(44) << what << std::right << std::fixed << std::setprecision(1)
            << std::setw(8) << r.decode_tps << " tok/s decode (" << r.decode_cpu_tps << " per CPU-s)" << std::setw(8) << r.prefill_tps
            << " tok/s prefill" << std::setprecision(2) << std::setw(8) << r.rss_gib << " GiB RSS added"
            << std::setw(7) << r.load_s << " s build\n";
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Tokens/s and memory of the Qwen3.5 runtime: dense 2B-shaped vs sparse circuit-like stacks"};
  int64_t dense_layers = 4, dense_vocab = 32768, circuit_layers = 45, circuit_vocab = 250000, heads = 2, units = 64,
          live_vocab = 4000, tokens = 64, prefill = 64, dense_exec_tokens = 2;
  int threads = 2;
  app.add_option("--dense-layers", dense_layers, "layers of the dense stack (every 4th full attention)");
  app.add_option("--dense-vocab", dense_vocab, "vocabulary of the dense stack");
  app.add_option("--circuit-layers", circuit_layers, "layers of the circuit-like stack");
  app.add_option("--circuit-vocab", circuit_vocab, "vocabulary of the circuit-like stack");
  app.add_option("--heads", heads, "live GDN heads per circuit layer");
  app.add_option("--units", units, "live MLP units per circuit layer");
  app.add_option("--live-vocab", live_vocab, "non-zero vocabulary rows of the circuit stack");
  app.add_option("--tokens", tokens, "tokens decoded one by one per measurement");
  app.add_option("--prefill", prefill, "tokens in the batched-prefill measurement");
  app.add_option("--dense-exec-tokens", dense_exec_tokens, "tokens for the dense executor on the circuit stack");
  app.add_option("--threads", threads, "intra-op threads (the runtime is meant for at most 2)");
  CLI11_PARSE(app, argc, argv);
  at::set_num_threads(threads);
  std::cout << "threads: " << at::get_num_threads() << "\n";

  Result dense;
  {
    Checkpoint ck = dense_stack(dense_layers, dense_vocab);
    dense = measure(ck, Exec::Dense, std::max<int64_t>(2, tokens / 4), std::max<int64_t>(2, prefill / 4), dense_vocab);
    print("dense 2B-shaped, " + std::to_string(dense_layers) + " layers, dense exec", dense);
  }
  Checkpoint ck = circuit_stack(circuit_layers, circuit_vocab, heads, units, live_vocab);
  Result sparse = measure(ck, Exec::Sparse, tokens, prefill, live_vocab);
  const auto& st = sparse.stats;
  std::cout << "circuit stack: " << circuit_layers << " layers, vocab " << circuit_vocab << ", "
            << std::setprecision(4) << 100.0 * static_cast<double>(st.stored) / static_cast<double>(st.weights)
            << "% of weights non-zero, heads " << st.active_heads << "/" << st.total_heads << ", MLP units "
            << st.active_units << "/" << st.total_units << ", live vocab " << st.active_vocab << "\n";
  print("circuit-like, sparse exec", sparse);
  Result dense_exec = measure(ck, Exec::Dense, dense_exec_tokens, 2, live_vocab);
  print("circuit-like, dense exec", dense_exec);
  std::cout << std::setprecision(1) << "sparse speed-up on the circuit stack: " << sparse.decode_tps / dense_exec.decode_tps
            << "x decode; per layer, sparse circuit vs dense 2B: "
            << (sparse.decode_tps * static_cast<double>(circuit_layers)) / (dense.decode_tps * static_cast<double>(dense_layers))
            << "x\n";
  return 0;
}
