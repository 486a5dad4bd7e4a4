// Error checks shared by the NVRTC / driver API samples: a failed call
// prints what failed, where, and exits.
#pragma once

#include <cuda.h>
#include <nvrtc.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#define CHECK_NVRTC(call)                                                                  \
  do {                                                                                     \
    nvrtcResult r_ = (call);                                                               \
    if (r_ != NVRTC_SUCCESS) {                                                             \
      std::printf("%s:%d: %s failed: %s\nFAILED\n", __FILE__, __LINE__, #call,             \
                  nvrtcGetErrorString(r_));                                                \
      std::exit(1);                                                                        \
    }                                                                                      \
  } while (0)

#define CHECK_CU(call)                                                                     \
  do {                                                                                     \
    CUresult r_ = (call);                                                                  \
    if (r_ != CUDA_SUCCESS) {                                                              \
      const char* name_ = "unknown";                                                       \
      cuGetErrorName(r_, &name_);                                                          \
      std::printf("%s:%d: %s failed: %s\nFAILED\n", __FILE__, __LINE__, #call, name_);     \
      std::exit(1);                                                                        \
    }                                                                                      \
  } while (0)

inline std::string program_log(nvrtcProgram prog) {
  size_t size = 0;
  CHECK_NVRTC(nvrtcGetProgramLogSize(prog, &size));
  std::string log(size, '\0');
  CHECK_NVRTC(nvrtcGetProgramLog(prog, log.data()));
  log.resize(size ? size - 1 : 0);
  return log;
}

inline std::string program_ptx(nvrtcProgram prog) {
  size_t size = 0;
  CHECK_NVRTC(nvrtcGetPTXSize(prog, &size));
  std::string ptx(size, '\0');
  CHECK_NVRTC(nvrtcGetPTX(prog, ptx.data()));
  return ptx;
}

// Compiles `source`, printing the log when compilation fails.
inline void compile(nvrtcProgram prog, const std::vector<const char*>& options) {
  nvrtcResult r = nvrtcCompileProgram(prog, int(options.size()), options.data());
  if (r != NVRTC_SUCCESS) {
    std::printf("compilation failed (%s):\n%s\nFAILED\n", nvrtcGetErrorString(r),
                program_log(prog).c_str());
    std::exit(1);
  }
}

// cuInit, device 0 and a fresh context.
inline CUcontext open_device() {
  CUdevice dev;
  CUcontext ctx;
  char name[128];
  CHECK_CU(cuInit(0));
  CHECK_CU(cuDeviceGet(&dev, 0));
  CHECK_CU(cuDeviceGetName(name, sizeof name, dev));
  CHECK_CU(cuCtxCreate(&ctx, nullptr, 0, dev));
  std::printf("device: %s\n", name);
  return ctx;
}
