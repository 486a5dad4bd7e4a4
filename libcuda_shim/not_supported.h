// The fate of driver entry points qgpu does not provide.  Kept apart from
// cuda.h: the generated stubs define those entry points without prototypes.
#pragma once

namespace qgpu::driver {

// Prints "qgpu libcuda: <entry> is not supported" once per entry point and
// returns CUDA_ERROR_NOT_SUPPORTED.
int not_supported(const char* entry);

}  // namespace qgpu::driver
