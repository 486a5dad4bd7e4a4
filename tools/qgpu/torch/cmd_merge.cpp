// `qgpu merge`, `qgpu make-base`, `qgpu text-kl`: the merged model (a
// compiled circuit in front of a Qwen3.5 base model) and how intact its text is.
#include <chrono>
#include <filesystem>
#include <iostream>

#include "command.h"
#include "torch_commands.h"
#include "merged_model.h"
#include "model_host/chat/chat.h"
#include "model_host/chat/streamed.h"
#include "model_host/chat/text_kl.h"

namespace {

namespace fs = std::filesystem;
using namespace qgpu;

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

struct MergeArgs {
  std::string base, circuit, out;
  int mute_dims = 32;
};

int run_merge(const MergeArgs& a) {
  auto t0 = std::chrono::steady_clock::now();
  chat::BaseModel base = chat::BaseModel::load(a.base);
  cli::CircuitModel circuit = cli::load_circuit(a.circuit);
  std::cerr << "qgpu merge: read the base (" << base.text.config.num_hidden_layers << " layers, "
            << (base.vision_language ? "vision-language" : "text-only") << " layout) and the circuit ("
            << circuit.checkpoint.config.num_hidden_layers << " layers) in " << seconds_since(t0) << " s\n";
  chat::MergeOptions opt;
  opt.mute_dims = a.mute_dims;
  opt.vocab_tails = true;  // only written: the vocabulary matrices are never formed whole
  chat::Merged m = chat::merge(base, std::move(circuit.checkpoint), std::move(circuit.layout), opt);
  std::cout << m.report.text();
  chat::save_merged(m, a.out, a.base);
  std::cerr << "qgpu merge: wrote " << a.out << " in " << seconds_since(t0) << " s\n";
  return 0;
}

struct MakeBaseArgs {
  std::string out;
  chat::BaseSpec spec;
  bool report = false;
  int sequences = 4, length = 64;
};

int run_make_base(const MakeBaseArgs& a) {
  chat::BaseModel b = chat::trained_like_base(a.spec);
  if (a.report) {
    // The base's own next-token distributions on random text (the same text
    // text-kl uses).
    const qwen::Model model(b.text, a.spec.density < 1 ? qwen::Exec::Sparse : qwen::Exec::Dense);
    chat::Confidence c;
    for (const auto& s : chat::random_text(a.sequences, a.length, std::min<int64_t>(a.spec.vocab, 248320), 7)) {
      qwen::State st = model.new_state();
      const auto out = model.forward(st, s, {a.spec.layers});
      c.add(out.logits);
      const torch::Tensor& x = out.residuals.at(0);
      c.add_states(x * torch::rsqrt(x.pow(2).mean(1, true) + b.text.config.rms_norm_eps) *
                   (1 + b.text.tensors.at("norm.weight")));
    }
    std::cout << "the base's next-token distributions: " << c.text() << "\n";
  }
  if (a.out.empty()) return 0;
  b.save(a.out);
  chat::write_byte_tokenizer((fs::path(a.out) / "tokenizer.json").string());
  std::cerr << "qgpu make-base: wrote a " << a.spec.layers << "-layer, " << a.spec.vocab << "-token "
            << (a.spec.vision_language ? "vision-language" : "text-only") << " base to " << a.out << "\n";
  return 0;
}

struct TextKlArgs {
  std::string base, circuit, model;
  int64_t block_rows = 16384;
  chat::BaseSpec spec;
  int sequences = 4, length = 64;
  bool synthetic = false, head_only = false;
};

// A merged directory against its base directory, one layer at a time
// (chat::compare_streamed): what fits in memory at the full vocabulary.
int run_text_kl_streamed(const TextKlArgs& a) {
  auto t0 = std::chrono::steady_clock::now();
  const chat::CheckpointFiles base(a.base), merged(a.model);
  const int64_t Vb = base.config().vocab_size;
  std::cout << "streamed: base " << a.base << " (" << base.config().num_hidden_layers << " layers, vocabulary " << Vb
            << "), merged " << a.model << " (" << merged.config().num_hidden_layers << " layers, vocabulary "
            << merged.config().vocab_size << "); one layer in memory at a time, LM head in blocks of " << a.block_rows
            << " rows\n"
            << std::flush;
  const auto seqs = chat::random_text(a.sequences, a.length, std::min<int64_t>(Vb, 248320), 7);
  const chat::KlResult r = chat::compare_streamed(base, merged, seqs, a.block_rows, [&](const std::string& s) {
    std::cerr << "qgpu text-kl: " << s << " (" << seconds_since(t0) << " s)\n";
  });
  std::cout << r.text();
  return 0;
}

int run_text_kl(const TextKlArgs& a) {
  if (!a.model.empty()) return run_text_kl_streamed(a);
  auto t0 = std::chrono::steady_clock::now();
  chat::BaseModel base = a.synthetic ? chat::trained_like_base(a.spec) : chat::BaseModel::load(a.base);
  const int64_t Vb = base.text.config.vocab_size;
  std::cerr << "qgpu text-kl: base of " << base.text.config.num_hidden_layers << " layers, vocabulary " << Vb << " ("
            << seconds_since(t0) << " s)\n";
  const auto seqs = chat::random_text(a.sequences, a.length, std::min<int64_t>(Vb, 248320), 7);
  std::vector<torch::Tensor> ref, finals;  // finals: the base's final hidden states (--head-only)
  {
    qwen::Model bm(base.text, qwen::Exec::Sparse);
    for (const auto& s : seqs) {
      qwen::State st = bm.new_state();
      qwen::Outputs o = bm.forward(st, s, {static_cast<int>(base.text.config.num_hidden_layers)});
      ref.push_back(o.logits);
      if (a.head_only) {
        const torch::Tensor x = o.residuals.at(0);
        finals.push_back(x * torch::rsqrt(x.pow(2).mean(1, true) + base.text.config.rms_norm_eps) *
                         (1 + base.text.tensors.at("norm.weight")));
      }
    }
  }
  std::cerr << "qgpu text-kl: base logits (" << seconds_since(t0) << " s)\n";
  cli::CircuitModel circuit = cli::load_circuit(a.circuit);
  chat::Merged m = chat::merge(base, std::move(circuit.checkpoint), std::move(circuit.layout));
  std::cout << m.report.text() << std::flush;
  base = {};  // only the merged model from here on
  std::vector<torch::Tensor> got;
  if (a.head_only) {
    // The merged LM head's rows past the base's times the base's final states
    // (what the merged model's head reads at a text position, the muting
    // being exact); the base's own logits for the base ids.
    torch::Tensor head = m.model.text.tensors.at("lm_head.weight");
    m.model.text.tensors.clear();  // only the head from here on
    if (head.is_sparse()) head = head.to_dense();
    const int64_t V = head.size(0);
    for (size_t i = 0; i < seqs.size(); ++i) {
      std::vector<torch::Tensor> parts{ref[i]};
      for (int64_t r = Vb; r < V; r += 65536)
        parts.push_back(finals[i].matmul(head.narrow(0, r, std::min<int64_t>(65536, V - r)).t()));
      got.push_back(torch::cat(parts, 1));
    }
    std::cout << "(--head-only: logits past the base's from the merged LM head and the base's final states; the "
                 "merged model was not run)\n";
  } else {
    qwen::Model mm(m.model.text, qwen::Exec::Sparse);
    got = chat::sequence_logits(mm, seqs);
  }
  std::cerr << "qgpu text-kl: merged logits (" << seconds_since(t0) << " s)\n";
  std::cout << chat::compare_logits(ref, got).text();
  return 0;
}

cli::Register reg_merge(cli::kMerge.name, [](CLI::App& app) {
  auto a = std::make_shared<MergeArgs>();
  auto* sub = app.add_subcommand(cli::kMerge.name, cli::kMerge.description);
  sub->add_option("--base", a->base, "the Qwen3.5 checkpoint (config.json, safetensors, tokenizer files)")->required();
  sub->add_option("--circuit", a->circuit, "the compiled circuit (qgpu build-model --out DIR)")->required();
  sub->add_option("--out", a->out, "the merged model's directory")->required();
  sub->add_option("--mute-dims", a->mute_dims, "at most this many free dimensions carry the mute term");
  return [a] { return run_merge(*a); };
});

void add_spec(CLI::App* sub, chat::BaseSpec& s) {
  sub->add_option("--layers", s.layers, "layers");
  sub->add_option("--full-attention-every", s.full_attention_every, "layer i is full attention when (i + 1) % N == 0");
  sub->add_option("--vocab", s.vocab, "vocabulary size");
  sub->add_option("--seed", s.seed, "random seed");
  sub->add_option("--density", s.density, "fraction of non-zero weights in the layers (1: dense)");
  sub->add_flag("!--no-depth-scaled-bias", s.depth_scaled_bias, "keep the shared direction's level fixed whatever the depth (the earlier base)");
  sub->add_option("--final-norm-gain", s.final_norm_gain, "mean gain 1 + w of the final norm (trained-like confidence)");
  sub->add_option("--prior-slope", s.prior_slope, "slope of the head's Zipf-like prior logit -slope ln(rank + 1)");
  sub->add_option("--bias-level", s.bias_level, "level of the last layer's shared direction (times the residual's growth through the layers)");
}

cli::Register reg_base(cli::kMakeBase.name, [](CLI::App& app) {
  auto a = std::make_shared<MakeBaseArgs>();
  auto* sub = app.add_subcommand(cli::kMakeBase.name, cli::kMakeBase.description);
  sub->add_option("--out", a->out, "directory (none: only --report)");
  add_spec(sub, a->spec);
  sub->add_flag("--report", a->report, "print the base's next-token distributions on random text (as text-kl does)");
  sub->add_option("--sequences", a->sequences, "--report: random text sequences");
  sub->add_option("--length", a->length, "--report: tokens per sequence");
  sub->add_flag("--vision-language", a->spec.vision_language, "the vision-language layout (text_config, vision tensors)");
  return [a] { return run_make_base(*a); };
});

cli::Register reg_kl(cli::kTextKl.name, [](CLI::App& app) {
  auto a = std::make_shared<TextKlArgs>();
  a->spec.layers = 24;
  a->spec.vocab = 248320;
  auto* sub = app.add_subcommand(cli::kTextKl.name, cli::kTextKl.description);
  sub->add_option("--circuit", a->circuit, "the compiled circuit (merged in memory)");
  sub->add_option("--base", a->base, "the base checkpoint");
  sub->add_option("--model", a->model,
                  "instead of --circuit: a merged directory (qgpu merge), compared with --base one layer at a time "
                  "straight from the files (what fits in memory at the full vocabulary)");
  sub->add_option("--block-rows", a->block_rows, "--model: LM-head rows per block");
  sub->add_flag("--synthetic", a->synthetic,
                "instead of --base: a Qwen3.5-2B-shaped base with trained-like embedding statistics "
                "(default 24 layers, vocabulary 248320)");
  add_spec(sub, a->spec);
  sub->add_option("--sequences", a->sequences, "random text sequences");
  sub->add_option("--length", a->length, "tokens per sequence");
  sub->add_flag("--head-only", a->head_only,
                "do not run the merged model (in memory it needs about 24 GB at the full vocabulary; --model runs it from "
                "its files in a few GB): the logits past the "
                "base's from the merged LM head times the base's final states; base ids as the base's");
  return [a] {
    if (a->synthetic == !a->base.empty()) throw CLI::ValidationError("text-kl", "give exactly one of --base and --synthetic");
    if (a->model.empty() == a->circuit.empty()) throw CLI::ValidationError("text-kl", "give exactly one of --circuit and --model");
    if (!a->model.empty() && a->synthetic) throw CLI::ValidationError("text-kl", "--model needs --base (the base it was merged from)");
    return run_text_kl(*a);
  };
});

}  // namespace
