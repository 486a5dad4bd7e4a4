// CUDA C++ to PTX, in process, with Clang/LLVM 19's NVPTX back end.
//
// The program's source, its in-memory headers and the built-in device
// headers live in a virtual file system laid over the real one (so -I paths
// on disk still work).  Diagnostics come back as "file:line:col: error: ..."
// lines with the offending source line and a caret.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "options.h"

namespace qgpu::nvrtc {

struct Source {
  std::string name;                               // shown in diagnostics
  std::string text;
  std::vector<std::pair<std::string, std::string>> headers;  // include name -> contents
};

struct CompileOutput {
  bool ok = false;
  std::string ptx;
  std::string log;
  // Name expression -> lowered (mangled) name, for each expression that
  // names a __global__ function or a __device__/__constant__ variable.
  std::map<std::string, std::string> lowered_names;
};

CompileOutput compile(const Source& source, const CompileOptions& options,
                      const std::vector<std::string>& name_expressions);

// The built-in device headers compiled into the library: include name -> text.
const std::map<std::string, std::string>& builtin_headers();

}  // namespace qgpu::nvrtc
