#include "model_host/daemon/log.h"

#include <chrono>
#include <cstdio>
#include <ctime>
#include <mutex>

namespace qgpu::daemon {

void log_line(const std::string& line) {
  static std::mutex mu;
  auto now = std::chrono::system_clock::now();
  std::time_t t = std::chrono::system_clock::to_time_t(now);
  int ms = int(std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000);
  std::tm tm{};
  localtime_r(&t, &tm);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%H:%M:%S", &tm);
  std::lock_guard<std::mutex> g(mu);
  std::fprintf(stderr, "[model_host %s.%03d] %s\n", stamp, ms, line.c_str());
  std::fflush(stderr);
}

}  // namespace qgpu::daemon
