// Loading what the merged-model commands (merge, text-kl, chat, chat-eval) need.
#pragma once

#include <filesystem>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>

#include "model_host/chat/chat.h"
#include "model_host/chat/merge.h"
#include "model_host/backends/model.h"
#include "model_host/model_cache/build_model.h"

namespace qgpu::cli {

struct CircuitModel {
  qwen::Checkpoint checkpoint;
  std::optional<gpu::Layout> layout;
};

// A compiled circuit directory: a GPU model (with its layout) or any circuit
// checkpoint; its large matrices sparse (merge reads them through their entries
// and writes the ones it edits as sparse matrices).
inline CircuitModel load_circuit(const std::string& dir) {
  if (std::filesystem::is_regular_file(std::filesystem::path(dir) / gpu::kLayoutFile)) {
    gpu::LoadedModel m = gpu::load_model(dir, qwen::Storage::Sparse);
    return {std::move(m.checkpoint), std::move(m.layout)};
  }
  return {qwen::Checkpoint::load(dir, qwen::Storage::Sparse), std::nullopt};
}

// The model a chat runs on: a merged directory (--model), or a base and a
// circuit merged in memory (--base, --circuit); its tokenizer; the inner GPU.
struct ChatModel {
  std::shared_ptr<const qwen::Model> model;
  std::optional<qwen::Tokenizer> tokenizer;
  std::shared_ptr<chat::InnerGpu> gpu;
};

inline ChatModel open_chat_model(const std::string& model_dir, const std::string& base_dir,
                                 const std::string& circuit_dir, std::string tokenizer) {
  ChatModel c;
  std::optional<gpu::Layout> layout;
  if (!model_dir.empty()) {
    chat::LoadedMerged m = chat::load_merged(model_dir);
    layout = std::move(m.layout);
    c.model = std::make_shared<const qwen::Model>(m.checkpoint, qwen::Exec::Sparse);
    if (tokenizer.empty()) tokenizer = (std::filesystem::path(model_dir) / "tokenizer.json").string();
  } else {
    if (base_dir.empty() || circuit_dir.empty())
      throw std::invalid_argument("give --model DIR, or --base DIR and --circuit DIR");
    chat::BaseModel base = chat::BaseModel::load(base_dir);
    CircuitModel circuit = load_circuit(circuit_dir);
    chat::Merged m = chat::merge(base, std::move(circuit.checkpoint), std::move(circuit.layout));
    layout = std::move(m.layout);
    c.model = std::make_shared<const qwen::Model>(m.model.text, qwen::Exec::Sparse);
    if (tokenizer.empty()) tokenizer = (std::filesystem::path(base_dir) / "tokenizer.json").string();
  }
  c.tokenizer = qwen::Tokenizer::load(tokenizer);
  if (!layout)
    throw std::runtime_error("the model has no GPU layout (qgpu-gpu.json): merge a circuit built by qgpu build-model");
  backends::ModelOptions opts;
  opts.max_tokens = 200'000;  // a kernel that runs longer is reported as a timeout in the reply
  c.gpu = std::make_shared<chat::InnerGpu>(
      std::shared_ptr<launch::Backend>(backends::make_model_backend(c.model, *layout, opts)));
  return c;
}

}  // namespace qgpu::cli
