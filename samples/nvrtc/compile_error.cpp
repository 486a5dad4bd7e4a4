// A program whose source does not compile: NVRTC reports
// NVRTC_ERROR_COMPILATION and the log names the file, line and problem.
#include "check.h"

static const char* kSource =
    "extern \"C\" __global__ void broken(int* p) {\n"
    "  int i = threadIdx.x +;\n"
    "  p[i] = undeclared_value;\n"
    "}\n";

int main() {
  nvrtcProgram prog;
  CHECK_NVRTC(nvrtcCreateProgram(&prog, kSource, "broken.cu", 0, nullptr, nullptr));
  const char* options[] = {"-arch=compute_75"};
  nvrtcResult r = nvrtcCompileProgram(prog, 1, options);
  std::string log = program_log(prog);
  std::printf("nvrtcCompileProgram: %s\n--- log ---\n%s--- end of log ---\n",
              nvrtcGetErrorString(r), log.c_str());
  size_t ptx_size = 0;
  bool no_ptx = nvrtcGetPTXSize(prog, &ptx_size) != NVRTC_SUCCESS;
  CHECK_NVRTC(nvrtcDestroyProgram(&prog));
  bool ok = r == NVRTC_ERROR_COMPILATION && no_ptx && log.find("broken.cu:2:") != std::string::npos &&
            log.find("broken.cu:3:") != std::string::npos &&
            log.find("undeclared_value") != std::string::npos;
  std::printf(ok ? "PASSED\n" : "FAILED\n");
  return ok ? 0 : 1;
}
