// What cuModuleLoadData and friends accept, reduced to PTX modules: PTX
// text, the container qgpu's NVRTC returns as a "CUBIN", an nvcc fatbinary,
// or a registered fatbinary wrapper (one module per translation unit).
#pragma once

#include <string>
#include <vector>

#include "driver_error.h"

namespace qgpu::driver {

// The PTX modules an image holds.  Throws DriverError (CUDA_ERROR_INVALID_IMAGE
// or CUDA_ERROR_NO_BINARY_FOR_GPU) naming what is wrong with it.
std::vector<std::string> ptx_modules(const void* image);

}  // namespace qgpu::driver
