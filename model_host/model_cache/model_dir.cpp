#include "model_host/model_cache/model_dir.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <stdexcept>

#include <nlohmann/json.hpp>

#ifndef QGPU_CIRCUIT_HASH
#error "QGPU_CIRCUIT_HASH (a hash of the sources that determine the compiled weights) must be defined by the build"
#endif

namespace qgpu::gpu {
namespace {

namespace fs = std::filesystem;

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

// The circuit version recorded in dir's layout, or nullopt when it cannot be
// read.  Only the layout's format (Layout::to_json's) and version are read
// here: Layout and its memories belong to the GPU's libtorch side, and a
// model whose memories do not parse is refused by load_model.
std::optional<std::string> recorded_version(const fs::path& dir) {
  try {
    std::ifstream in(dir / kLayoutFile, std::ios::binary);
    if (!in) return std::nullopt;
    std::stringstream text;
    text << in.rdbuf();
    const auto j = nlohmann::json::parse(text.str());
    if (j.at("format") != kLayoutFormat) return std::nullopt;
    return j.value("circuit", std::string());
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

}  // namespace

std::string circuit_version() { return std::string(QGPU_CIRCUIT_HASH).substr(0, 16); }

bool model_complete(const std::string& dir_name, ModelFormat format) {
  fs::path dir(dir_name);
  for (const char* f : {kConfigFile, kSideFile, kLayoutFile})
    if (!fs::is_regular_file(dir / f)) return false;
  if (recorded_version(dir) != circuit_version()) return false;
  return format == ModelFormat::Compact || fs::is_regular_file(dir / kSafetensors);
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

void prune_cache(const std::string& written_name, const Progress& progress) {
  if (const char* d = std::getenv("QGPU_MODEL_DIR"); d && *d) return;
  const fs::path written(written_name);
  if (fs::path(default_model_dir()) != written) return;
  static const std::regex entry("model-[0-9a-f]{16}(\\.lock)?");
  for (const auto& e : fs::directory_iterator(written.parent_path())) {
    const std::string name = e.path().filename().string();
    if (name == cache_entry_name() || name == cache_entry_name() + ".lock" || !std::regex_match(name, entry)) continue;
    if (progress) progress("removing " + e.path().string() + " (a model of another circuit version)");
    fs::remove_all(e.path());
  }
}

void ensure_model(const std::string& dir_name, const Progress& progress,
                  const std::function<void(const std::string& dir)>& write) {
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
  write(dir.string());
}

}  // namespace qgpu::gpu
