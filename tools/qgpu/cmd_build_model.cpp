// `qgpu build-model`: compiles the GPU into a Qwen3.5 checkpoint directory
// (model_host/gpu/build_model.h), by default the model cache that model_host
// and `qgpu run` use.
#include <filesystem>
#include <iostream>

#include "command.h"
#include "model_host/gpu/build_model.h"

namespace {

struct BuildModelOptions {
  std::string out;
  bool compact = false, force = false;
};

int build_model(const BuildModelOptions& o) {
  using namespace qgpu::gpu;
  const std::string dir = o.out.empty() ? default_model_dir() : o.out;
  const ModelFormat format = o.compact ? ModelFormat::Compact : ModelFormat::Full;
  const char* kind = o.compact ? "compact" : "full";
  if (!o.force && model_complete(dir, format)) {
    std::cerr << "qgpu build-model: " << dir << " already holds a " << kind << " model (--force rebuilds it)\n";
    return 0;
  }
  const std::string report =
      write_model(dir, format, [](const std::string& line) { std::cerr << "qgpu build-model: " << line << std::endl; });
  std::cout << report;
  if (!report.empty() && report.back() != '\n') std::cout << '\n';
  uintmax_t bytes = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.is_regular_file()) bytes += e.file_size();
  std::cerr << "qgpu build-model: wrote a " << kind << " model to " << dir << " (" << (bytes + (1 << 19)) / (1 << 20)
            << " MiB)\n";
  return 0;
}

qgpu::cli::Register reg("build-model", [](CLI::App& app) {
  auto o = std::make_shared<BuildModelOptions>();
  auto* sub = app.add_subcommand("build-model", "Compile the GPU into a Qwen3.5 checkpoint directory");
  sub->add_option("--out", o->out, "the model directory (default: $QGPU_MODEL_DIR, else the model cache)");
  sub->add_flag("--compact", o->compact,
                "write config.json, the sparse side file and the layout only, without the fp32 safetensors");
  sub->add_flag("--force", o->force, "rebuild even when the directory already holds a complete model");
  return [o] { return build_model(*o); };
});

}  // namespace
