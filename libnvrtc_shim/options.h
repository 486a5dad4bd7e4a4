// NVRTC compile options: what nvrtcCompileProgram accepts, parsed into the
// settings the in-process Clang compilation needs.
#pragma once

#include <string>
#include <vector>

namespace qgpu::nvrtc {

// The GPU architectures this NVRTC compiles for (NVPTX targets of LLVM 19
// that the CUDA 13 toolkit also supports), as compute capabilities * 10.
const std::vector<int>& supported_archs();

struct CompileOptions {
  int arch = 75;                              // compute capability * 10
  std::string std = "c++17";                  // NVRTC's default dialect
  std::vector<std::string> preprocessor;      // -D / -U, in order, as Clang flags
  std::vector<std::string> include_paths;     // -I, in order
  std::vector<std::string> pre_includes;      // -include files
  bool default_device = false;                // -default-device
  bool syntax_only = false;                   // -fdevice-syntax-only
  bool no_warnings = false;                   // -w
};

struct ParsedOptions {
  CompileOptions options;
  std::string error;  // empty on success; otherwise one line naming the bad option
};

ParsedOptions parse_options(const std::vector<std::string>& args);

}  // namespace qgpu::nvrtc
