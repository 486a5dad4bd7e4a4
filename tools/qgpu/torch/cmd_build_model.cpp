// `qgpu build-model`: compiles the GPU into a Qwen3.5 checkpoint directory
// (model_host/model_cache/build_model.h), by default the model cache that model_host
// and `qgpu run` use.  What is written: the compact form the daemon loads
// (config.json, the sparse side file, the layout; about 100 MB) into the
// cache; the Hugging Face checkpoint (fp32 safetensors besides, over 20 GB of
// mostly zeros) only when asked for: --hf, or --out DIR without --compact.  And `qgpu-torch write-model`, through which `qgpu run`
// builds the cache on first use (the qgpu program does not load libtorch).
#include <filesystem>
#include <iostream>
#include <stdexcept>

#include "command.h"
#include "model_host/model_cache/build_model.h"
#include "torch_commands.h"

namespace {

struct BuildModelOptions {
  std::string out;
  bool compact = false, hf = false, force = false;
  uint32_t global_kib = 0;   // 0: the default (machine::model_params())
};

int build_model(const BuildModelOptions& o) {
  using namespace qgpu::gpu;
  const std::string dir = o.out.empty() ? default_model_dir() : o.out;
  if (o.global_kib) {
    if (o.out.empty())
      throw std::invalid_argument("--global-kib builds a model of another size: give it its own directory with --out");
    const uint32_t lo = qgpu::machine::kModelMinGlobalBytes >> 10, hi = qgpu::machine::kModelMaxGlobalBytes >> 10;
    if (o.global_kib < lo || o.global_kib > hi || (o.global_kib & (o.global_kib - 1)))
      throw std::invalid_argument("--global-kib " + std::to_string(o.global_kib) +
                                  ": the model's global memory is a power of two from " + std::to_string(lo) + " to " +
                                  std::to_string(hi) + " KiB");
    qgpu::machine::set_model_global_bytes(o.global_kib * 1024);
  }
  if (o.compact && o.hf) throw std::invalid_argument("--compact and --hf ask for two different models; give one");
  // The cache holds what the daemon needs; a directory named with --out is a
  // checkpoint for other tools unless --compact says otherwise.
  const bool full = o.hf || (!o.out.empty() && !o.compact);
  const ModelFormat format = full ? ModelFormat::Full : ModelFormat::Compact;
  const char* kind = full ? "full" : "compact";
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

qgpu::cli::Register reg(qgpu::cli::kBuildModel.name, [](CLI::App& app) {
  auto o = std::make_shared<BuildModelOptions>();
  auto* sub = app.add_subcommand(qgpu::cli::kBuildModel.name, qgpu::cli::kBuildModel.description);
  sub->add_option("--out", o->out, "the model directory (default: $QGPU_MODEL_DIR, else the model cache)");
  sub->add_flag("--compact", o->compact,
                "write config.json, the sparse side file and the layout only (what the daemon loads; the default "
                "for the model cache)");
  sub->add_flag("--hf", o->hf,
                "also write the Hugging Face checkpoint (fp32 safetensors, over 20 GB; the default with --out)");
  sub->add_flag("--force", o->force, "rebuild even when the directory already holds a complete model");
  sub->add_option("--global-kib", o->global_kib,
                  "global memory of the model's device in KiB, a power of two from 4 to 1024 (default 256; needs "
                  "--out): more costs GDN heads and layers (docs/circuit.md section 8)");
  return [o] { return build_model(*o); };
});

// `qgpu-torch write-model --for COMMAND DIR`: the compact model written into
// DIR as a step of `qgpu COMMAND` (model_dir.h's ensure_model, which holds
// the cache's lock meanwhile): only the progress lines, as that command's,
// so that its output stays its own.  Not in the help: an interface between
// qgpu's two programs.
qgpu::cli::Register reg_write("write-model", [](CLI::App& app) {
  auto dir = std::make_shared<std::string>();
  auto command = std::make_shared<std::string>();
  auto* sub = app.add_subcommand("write-model", "Write the compact model as a step of another qgpu subcommand");
  sub->group("");
  sub->add_option("dir", *dir, "the model directory")->required();
  sub->add_option("--for", *command, "the qgpu subcommand")->required();
  return [dir, command] {
    try {
      qgpu::gpu::write_model(*dir, qgpu::gpu::ModelFormat::Compact, [&](const std::string& line) {
        std::cerr << "qgpu " << *command << ": " << line << std::endl;
      });
    } catch (const std::exception& e) {
      std::cerr << "qgpu " << *command << ": " << e.what() << "\n";
      return 1;
    }
    return 0;
  };
});

}  // namespace
