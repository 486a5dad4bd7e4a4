// How the driver API fails internally: a CUresult and a message that the
// entry point prints (prefixed with its name) before returning the code.
#pragma once

#include <cuda.h>

#include <stdexcept>
#include <string>

namespace qgpu::driver {

struct DriverError : std::runtime_error {
  DriverError(CUresult code, const std::string& message)
      : std::runtime_error(message), code(code) {}
  CUresult code;
};

// The driver API's code for a runtime-API error value (what the daemon and
// the client library report).
CUresult from_runtime_error(int cuda_error);

}  // namespace qgpu::driver
