// suite_ptx <sample.cu> <out.ptx>: compiles a kernel-suite program's device
// code with our NVRTC.  NVRTC compiles device code, not whole programs: the
// program's text before `int main(` is taken (its kernels, device functions,
// variables, types and macros), and includes of host headers that the
// built-in device headers do not provide are dropped.  Template kernels
// instantiated only by main are out of reach; the suite has none.
#include <nvrtc.h>

#include <cstdio>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: suite_ptx <sample.cu> <out.ptx>\n");
    return 2;
  }
  std::ifstream in(argv[1]);
  std::stringstream text;
  text << in.rdbuf();
  std::string source = text.str();
  size_t main_at = source.find("int main(");
  if (main_at != std::string::npos) source.resize(main_at);

  static const std::set<std::string> device_headers = {
      "cstdint", "stdint.h", "climits", "limits.h", "cstddef", "stddef.h", "cassert", "assert.h",
      "cstdio", "stdio.h", "cstring", "string.h", "cuda_runtime.h", "cooperative_groups.h",
      "cuda_fp16.h", "cuda_bf16.h", "mma.h"};
  const std::regex include(R"(^\s*#\s*include\s*[<"]([^>"]+)[>"])");
  std::istringstream lines(source);
  std::string device_part;
  for (std::string line; std::getline(lines, line);) {
    std::smatch m;
    if (std::regex_search(line, m, include) && !device_headers.count(m[1].str())) line = "// " + line;
    device_part += line + "\n";
  }

  nvrtcProgram prog;
  nvrtcCreateProgram(&prog, device_part.c_str(), argv[1], 0, nullptr, nullptr);
  const char* options[] = {"-arch=compute_75"};
  nvrtcResult r = nvrtcCompileProgram(prog, 1, options);
  size_t size = 0;
  nvrtcGetProgramLogSize(prog, &size);
  std::vector<char> log(size);
  nvrtcGetProgramLog(prog, log.data());
  if (r != NVRTC_SUCCESS) {
    std::fprintf(stderr, "%s: %s\n%s", argv[1], nvrtcGetErrorString(r), log.data());
    return 1;
  }
  nvrtcGetPTXSize(prog, &size);
  std::vector<char> ptx(size);
  nvrtcGetPTX(prog, ptx.data());
  nvrtcDestroyProgram(&prog);
  std::ofstream(argv[2]) << ptx.data();
  return 0;
}
