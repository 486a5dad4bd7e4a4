// The CUDA errors a launch, an allocation or a module load can end with, in
// the CUDA runtime's own numbering (cudaError_t), so that the daemon and the
// shim pass them on unchanged.  One enum for every library below the daemon
// (which need not see CUDA's headers); tests/protocol/errors_test.cpp holds
// each value against CUDA's.
#pragma once

namespace qgpu::launch {

enum CudaError : int {
  kSuccess = 0,
  kInvalidValue = 1,
  kMemoryAllocation = 2,
  kInitializationError = 3,
  kInvalidConfiguration = 9,
  kLaunchMaxDepthExceeded = 65,
  kLaunchPendingCountExceeded = 69,
  kInvalidDeviceFunction = 98,
  kUnsupportedLimit = 215,
  kInvalidPtx = 218,
  kInvalidResourceHandle = 400,
  kIllegalAddress = 700,
  kLaunchOutOfResources = 701,
  kLaunchTimeout = 702,
  kAssert = 710,
  kMisalignedAddress = 716,
  kLaunchFailure = 719,
  kCooperativeLaunchTooLarge = 720,
  kNotPermitted = 800,
  kNotSupported = 801,
  kUnknown = 999,
};

}  // namespace qgpu::launch
