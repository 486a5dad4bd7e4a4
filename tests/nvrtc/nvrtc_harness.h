// Compiling through libnvrtc.so.13's C API in tests.
#pragma once

#include <nvrtc.h>

#include <map>
#include <string>
#include <utility>
#include <vector>

namespace qgpu::test {

struct Compiled {
  nvrtcResult result = NVRTC_SUCCESS;
  std::string ptx, log;
  std::map<std::string, std::string> lowered;  // name expression -> lowered name
};

// Creates, compiles and destroys one program; everything it produced is kept.
inline Compiled compile(const std::string& source, const std::vector<const char*>& options,
                        const std::vector<std::string>& name_expressions = {},
                        const std::vector<std::pair<std::string, std::string>>& headers = {},
                        const char* name = "test.cu") {
  std::vector<const char*> texts, names;
  for (const auto& [n, t] : headers) {
    names.push_back(n.c_str());
    texts.push_back(t.c_str());
  }
  nvrtcProgram prog;
  Compiled out;
  out.result = nvrtcCreateProgram(&prog, source.c_str(), name, int(headers.size()), texts.data(),
                                  names.data());
  if (out.result != NVRTC_SUCCESS) return out;
  for (const std::string& e : name_expressions) nvrtcAddNameExpression(prog, e.c_str());
  out.result = nvrtcCompileProgram(prog, int(options.size()), options.data());
  size_t size = 0;
  if (nvrtcGetProgramLogSize(prog, &size) == NVRTC_SUCCESS) {
    out.log.resize(size);
    nvrtcGetProgramLog(prog, out.log.data());
    out.log.resize(size ? size - 1 : 0);
  }
  if (out.result == NVRTC_SUCCESS && nvrtcGetPTXSize(prog, &size) == NVRTC_SUCCESS) {
    out.ptx.resize(size);
    nvrtcGetPTX(prog, out.ptx.data());
    out.ptx.resize(size ? size - 1 : 0);
  }
  for (const std::string& e : name_expressions) {
    const char* lowered = nullptr;
    if (nvrtcGetLoweredName(prog, e.c_str(), &lowered) == NVRTC_SUCCESS) out.lowered[e] = lowered;
  }
  nvrtcDestroyProgram(&prog);
  return out;
}

}  // namespace qgpu::test
