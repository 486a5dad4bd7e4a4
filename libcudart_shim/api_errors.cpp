// Error names and strings, the last-error rules, and the report printed by
// entry points qgpu does not implement.
#include <cstdio>
#include <mutex>

#include "runtime.h"

using namespace qgpu::cudart;

namespace {

struct Name {
  int value;
  const char* name;
};
constexpr Name kNames[] = {
#include "error_names.inc"
};

// The descriptions programs print most, as CUDA words them.
const char* description(cudaError_t e) {
  switch (e) {
    case cudaSuccess: return "no error";
    case cudaErrorInvalidValue: return "invalid argument";
    case cudaErrorMemoryAllocation: return "out of memory";
    case cudaErrorInitializationError: return "initialization error";
    case cudaErrorInvalidConfiguration: return "invalid configuration argument";
    case cudaErrorInvalidMemcpyDirection: return "invalid copy direction for memcpy";
    case cudaErrorMissingConfiguration: return "__global__ function call is not configured";
    case cudaErrorNoDevice: return "no CUDA-capable device is detected";
    case cudaErrorInvalidDevice: return "invalid device ordinal";
    case cudaErrorNoKernelImageForDevice: return "no kernel image is available for execution on the device";
    case cudaErrorInvalidPtx: return "a PTX JIT compilation failed";
    case cudaErrorInvalidSymbol: return "invalid device symbol";
    case cudaErrorInvalidResourceHandle: return "invalid resource handle";
    case cudaErrorInvalidDeviceFunction: return "invalid device function";
    case cudaErrorNotReady: return "device not ready";
    case cudaErrorIllegalAddress: return "an illegal memory access was encountered";
    case cudaErrorLaunchOutOfResources: return "too many resources requested for launch";
    case cudaErrorLaunchTimeout: return "the launch timed out and was terminated";
    case cudaErrorAssert: return "device-side assert triggered";
    case cudaErrorMisalignedAddress: return "misaligned address";
    case cudaErrorIllegalInstruction: return "an illegal instruction was encountered";
    case cudaErrorLaunchFailure: return "unspecified launch failure";
    case cudaErrorNotPermitted: return "operation not permitted";
    case cudaErrorNotSupported: return "operation not supported";
    case cudaErrorUnsupportedLimit: return "limit is not supported on this architecture";
    case cudaErrorUnknown: return "unknown error";
    default: return nullptr;
  }
}

}  // namespace

extern "C" {

const char* cudaGetErrorName(cudaError_t error) {
  for (const Name& n : kNames)
    if (n.value == int(error)) return n.name;
  return "cudaErrorUnknown";
}

const char* cudaGetErrorString(cudaError_t error) {
  if (const char* d = description(error)) return d;
  for (const Name& n : kNames)
    if (n.value == int(error)) return n.name;
  return "unrecognized error code";
}

cudaError_t cudaGetLastError(void) {
  cudaError_t sticky = Runtime::get().sticky();
  cudaError_t e = last_error_take();
  return sticky != cudaSuccess ? sticky : e;
}

cudaError_t cudaPeekAtLastError(void) {
  cudaError_t sticky = Runtime::get().sticky();
  return sticky != cudaSuccess ? sticky : last_error_peek();
}

// Host-only helper that returns a struct, so it cannot be a generic stub.
cudaChannelFormatDesc cudaCreateChannelDesc(int x, int y, int z, int w, cudaChannelFormatKind f) {
  return cudaChannelFormatDesc{x, y, z, w, f};
}

// Called by the generated stubs (stubs.c).
int qgpu_cudart_not_supported(const char* name, int* once) {
  static std::mutex mu;
  {
    std::lock_guard<std::mutex> g(mu);
    if (!*once) {
      *once = 1;
      std::fprintf(stderr, "qgpu: %s is not supported by qgpu's CUDA runtime (returning cudaErrorNotSupported)\n", name);
    }
  }
  return int(set_error(cudaErrorNotSupported));
}

}  // extern "C"
