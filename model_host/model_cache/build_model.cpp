#include "model_host/model_cache/build_model.h"

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <stdexcept>

namespace qgpu::gpu {
namespace {

namespace fs = std::filesystem;

using qwen::read_text_file;
using qwen::write_text_file;

// Calls `progress` with `what` and, when `body` returns, the seconds it took.
template <class F>
void phase(const Progress& progress, const std::string& what, F&& body) {
  auto t0 = std::chrono::steady_clock::now();
  if (progress) progress(what);
  body();
  if (progress) {
    char secs[32];
    std::snprintf(secs, sizeof secs, "%.1f", std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    progress(what + ": done in " + secs + " s");
  }
}

}  // namespace

void save_model(const Built& built, const std::string& dir_name, ModelFormat format, const Progress& progress) {
  fs::path dir(dir_name);
  fs::create_directories(dir);
  // Until the layout is rewritten last, the directory reads as incomplete.
  fs::remove(dir / kLayoutFile);
  if (format == ModelFormat::Full)
    phase(progress, "writing the fp32 checkpoint to " + (dir / kSafetensors).string(),
          [&] { built.checkpoint.save(dir.string(), torch::kFloat32); });
  else
    phase(progress, "writing the compact checkpoint to " + (dir / kSideFile).string(),
          [&] { built.checkpoint.save_compact(dir.string()); });
  Layout layout = built.layout;
  layout.circuit = circuit_version();
  write_text_file(dir / kLayoutFile, layout.to_json());
}

std::string write_model(const std::string& dir, ModelFormat format, const Progress& progress) {
  Built built;
  phase(progress, "compiling the GPU into Qwen3.5 layers", [&] { built = build(progress); });
  save_model(built, dir, format, progress);
  prune_cache(dir, progress);
  return built.report;
}

LoadedModel load_model(const std::string& dir_name, qwen::Storage storage) {
  fs::path dir(dir_name);
  if (!fs::is_regular_file(dir / kLayoutFile))
    throw std::runtime_error(dir.string() + " is not a compiled GPU model (no " + kLayoutFile +
                             "); write one with `qgpu build-model --out " + dir.string() + "`");
  LoadedModel m;
  try {
    m.layout = Layout::from_json(read_text_file(dir / kLayoutFile));
  } catch (const std::exception& e) {
    throw std::runtime_error((dir / kLayoutFile).string() + ": " + e.what());
  }
  if (m.layout.circuit != circuit_version())
    throw std::runtime_error(dir.string() + " holds a GPU model compiled by another version of the circuit (" +
                             (m.layout.circuit.empty() ? std::string("unrecorded") : m.layout.circuit) +
                             "; this build compiles " + circuit_version() + "): rebuild it with `qgpu build-model --out " +
                             dir.string() + " --force`");
  m.checkpoint = qwen::Checkpoint::load(dir.string(), storage);
  const qwen::Config& c = m.checkpoint.config;
  if (m.layout.num_layers != c.num_hidden_layers || m.layout.vocab_size != c.vocab_size)
    throw std::runtime_error((dir / kLayoutFile).string() + " describes " + std::to_string(m.layout.num_layers) +
                             " layers and a vocabulary of " + std::to_string(m.layout.vocab_size) + ", but " +
                             (dir / kConfigFile).string() + " has " + std::to_string(c.num_hidden_layers) + " and " +
                             std::to_string(c.vocab_size));
  return m;
}

void ensure_model(const std::string& dir, const Progress& progress) {
  ensure_model(dir, progress, [&](const std::string& d) { write_model(d, ModelFormat::Compact, progress); });
}

}  // namespace qgpu::gpu
