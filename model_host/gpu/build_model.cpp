#include "model_host/gpu/build_model.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <stdexcept>

#ifndef QGPU_CIRCUIT_HASH
#error "QGPU_CIRCUIT_HASH (a hash of the sources that determine the compiled weights) must be defined by the build"
#endif

namespace qgpu::gpu {
namespace {

namespace fs = std::filesystem;

constexpr char kConfigFile[] = "config.json";
constexpr char kSideFile[] = "qgpu-sparse.bin";
constexpr char kSafetensors[] = "model.safetensors";

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

// An exclusive lock on a file beside `dir`, held for the object's lifetime.
class DirLock {
 public:
  explicit DirLock(const fs::path& dir) {
    fs::create_directories(dir.parent_path());
    const std::string path = dir.string() + ".lock";
    fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd_ < 0) throw std::runtime_error("cannot create the lock file " + path);
    while (::flock(fd_, LOCK_EX) != 0)
      if (errno != EINTR) throw std::runtime_error("cannot lock " + path);
  }
  ~DirLock() { ::close(fd_); }
  DirLock(const DirLock&) = delete;
  DirLock& operator=(const DirLock&) = delete;

 private:
  int fd_ = -1;
};

// The cache's directory name for the current circuit: model-<16 hex digits>.
std::string cache_entry_name() { return "model-" + circuit_version(); }

// The circuit version recorded in dir's layout, or nullopt when it cannot be read.
std::optional<std::string> recorded_version(const fs::path& dir) {
  try {
    return Layout::from_json(read_text_file(dir / kLayoutFile)).circuit;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

// After a model was written into the cache ($QGPU_MODEL_DIR unset), the
// models of other circuit versions beside it are stale (a full one holds
// gigabytes): removes them.
void prune_cache(const fs::path& written, const Progress& progress) {
  if (const char* d = std::getenv("QGPU_MODEL_DIR"); d && *d) return;
  if (fs::path(default_model_dir()) != written) return;
  static const std::regex entry("model-[0-9a-f]{16}(\\.lock)?");
  for (const auto& e : fs::directory_iterator(written.parent_path())) {
    const std::string name = e.path().filename().string();
    if (name == cache_entry_name() || name == cache_entry_name() + ".lock" || !std::regex_match(name, entry)) continue;
    if (progress) progress("removing " + e.path().string() + " (a model of another circuit version)");
    fs::remove_all(e.path());
  }
}

}  // namespace

std::string circuit_version() { return std::string(QGPU_CIRCUIT_HASH).substr(0, 16); }

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

bool model_complete(const std::string& dir_name, ModelFormat format) {
  fs::path dir(dir_name);
  for (const char* f : {kConfigFile, kSideFile, kLayoutFile})
    if (!fs::is_regular_file(dir / f)) return false;
  if (recorded_version(dir) != circuit_version()) return false;
  return format == ModelFormat::Compact || fs::is_regular_file(dir / kSafetensors);
}

LoadedModel load_model(const std::string& dir_name) {
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
  m.checkpoint = qwen::Checkpoint::load(dir.string());
  const qwen::Config& c = m.checkpoint.config;
  if (m.layout.num_layers != c.num_hidden_layers || m.layout.vocab_size != c.vocab_size)
    throw std::runtime_error((dir / kLayoutFile).string() + " describes " + std::to_string(m.layout.num_layers) +
                             " layers and a vocabulary of " + std::to_string(m.layout.vocab_size) + ", but " +
                             (dir / kConfigFile).string() + " has " + std::to_string(c.num_hidden_layers) + " and " +
                             std::to_string(c.vocab_size));
  return m;
}

std::string default_model_dir() {
  if (const char* d = std::getenv("QGPU_MODEL_DIR"); d && *d) return d;
  fs::path cache;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x)
    cache = x;
  else if (const char* h = std::getenv("HOME"); h && *h)
    cache = fs::path(h) / ".cache";
  else
    throw std::runtime_error("no model cache directory: set QGPU_MODEL_DIR, XDG_CACHE_HOME or HOME");
  return (cache / "qgpu" / cache_entry_name()).string();
}

void ensure_model(const std::string& dir_name, const Progress& progress) {
  fs::path dir(dir_name);
  if (model_complete(dir.string(), ModelFormat::Compact)) return;
  DirLock lock(dir);
  if (model_complete(dir.string(), ModelFormat::Compact)) return;  // another process built it meanwhile
  // Only a model's own files may be overwritten: the directory of an
  // interrupted build, never someone else's.
  static const std::set<std::string> ours = {kConfigFile, kSideFile, kLayoutFile, kSafetensors};
  if (fs::exists(dir))
    for (const auto& e : fs::directory_iterator(dir))
      if (!ours.count(e.path().filename().string()))
        throw std::runtime_error(dir.string() + " holds " + e.path().filename().string() +
                                 " and no complete model; name an empty or new directory for the model");
  if (progress) progress("no compiled GPU model in " + dir.string() + "; building it (once)");
  write_model(dir.string(), ModelFormat::Compact, progress);
}

}  // namespace qgpu::gpu
