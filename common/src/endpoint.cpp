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

std::vector<std::string> daemon_environment() {
  std::vector<std::string> env;
  bool has_tunables = false;
  const bool huge = env_or("QGPU_HUGE_PAGES", "1") != "0";
  for (char** e = environ; *e; ++e) {
    std::string entry = *e;
    if (huge && entry.rfind("GLIBC_TUNABLES=", 0) == 0) {
      has_tunables = true;
      if (entry.find("glibc.malloc.hugetlb=") == std::string::npos)
        entry += entry.size() > sizeof("GLIBC_TUNABLES=") - 1 ? ":glibc.malloc.hugetlb=1" : "glibc.malloc.hugetlb=1";
    }
    env.push_back(std::move(entry));
  }
  if (huge && !has_tunables) env.push_back("GLIBC_TUNABLES=glibc.malloc.hugetlb=1");
  return env;
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
