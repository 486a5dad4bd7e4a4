#include "qgpu/endpoint.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

namespace qgpu::endpoint {

std::string env_or(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::string(v) : fallback;
}

std::string runtime_dir() {
  std::string base = env_or("XDG_RUNTIME_DIR", "");
  std::string dir = base.empty() ? "/tmp/qgpu-" + std::to_string(getuid()) : base + "/qgpu";
  if (mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST)
    throw std::runtime_error("cannot create the runtime directory " + dir + ": " + std::strerror(errno));
  return dir;
}

std::string default_endpoint() { return "ipc://" + runtime_dir() + "/model_host.sock"; }

std::string ipc_path(const std::string& endpoint) {
  return endpoint.rfind("ipc://", 0) == 0 ? endpoint.substr(6) : std::string();
}

bool is_tcp(const std::string& endpoint) { return endpoint.rfind("tcp://", 0) == 0; }

}  // namespace qgpu::endpoint
