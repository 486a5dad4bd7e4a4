// model_host's log: timestamped lines on stderr (redirected to a file with
// --log), one mutex so lines from worker threads never interleave.
#pragma once

#include <sstream>
#include <string>

namespace qgpu::daemon {

void log_line(const std::string& line);

template <class... T>
void log(const T&... parts) {
  std::ostringstream s;
  (s << ... << parts);
  log_line(s.str());
}

}  // namespace qgpu::daemon
