// qgpu logits: run a Qwen3.5 checkpoint on token ids and show what it predicts.
#include <fstream>
#include <iomanip>
#include <iostream>
#include <memory>
#include <sstream>

#include "command.h"
#include "torch_commands.h"
#include "model_host/qwen/model.h"

namespace {

struct LogitsArgs {
  std::string model, tokens, dump;
  bool sparse = false;
};

std::vector<int64_t> parse_tokens(const std::string& text) {
  std::istringstream in(text);
  std::vector<int64_t> ids;
  std::string word;
  while (in >> word) {
    size_t used = 0;
    int64_t id = -1;
    try {
      id = std::stoll(word, &used);
    } catch (const std::exception&) {
    }
    if (used != word.size() || id < 0) throw std::invalid_argument("--tokens: \"" + word + "\" is not a token id");
    ids.push_back(id);
  }
  if (ids.empty()) throw std::invalid_argument("--tokens: no token ids given");
  return ids;
}

int run_logits(const LogitsArgs& a) {
  using namespace qgpu::qwen;
  const std::vector<int64_t> tokens = parse_tokens(a.tokens);
  Model model(Checkpoint::load(a.model), a.sparse ? Exec::Sparse : Exec::Dense);
  State state = model.new_state();
  torch::Tensor logits = model.forward(state, tokens).logits;  // [T, vocab]
  const int64_t k = std::min<int64_t>(5, logits.size(1));
  auto [values, ids] = logits.topk(k, 1);
  std::cout << std::setprecision(6);
  for (int64_t t = 0; t < logits.size(0); ++t) {
    std::cout << "pos " << t << " token " << tokens[t] << ":";
    for (int64_t j = 0; j < k; ++j)
      std::cout << "  " << ids[t][j].item<int64_t>() << " " << values[t][j].item<float>();
    std::cout << "\n";
  }
  if (!a.dump.empty()) {
    std::ofstream out(a.dump, std::ios::binary | std::ios::trunc);
    out.write(static_cast<const char*>(logits.contiguous().data_ptr()),
              static_cast<std::streamsize>(logits.numel() * sizeof(float)));
    if (!out) throw std::runtime_error("cannot write " + a.dump);
    std::cout << "wrote " << logits.size(0) << " x " << logits.size(1) << " fp32 logits to " << a.dump << "\n";
  }
  return 0;
}

qgpu::cli::Register reg(qgpu::cli::kLogits.name, [](CLI::App& app) {
  auto args = std::make_shared<LogitsArgs>();
  auto* sub = app.add_subcommand(qgpu::cli::kLogits.name, qgpu::cli::kLogits.description);
  sub->add_option("--model", args->model, "checkpoint directory (config.json + safetensors)")->required();
  sub->add_option("--tokens", args->tokens, "token ids, space separated, e.g. \"1 2 3\"")->required();
  sub->add_option("--dump", args->dump, "write all logits as raw little-endian fp32, positions x vocabulary");
  sub->add_flag("--sparse", args->sparse, "use the sparse executor (same numbers, skips zero weights)");
  return [args] { return run_logits(*args); };
});

}  // namespace
