// launch::CudaError (model_host/launch/errors.h) is CUDA's own numbering:
// every value against cudaError_t from the CUDA headers, so a backend's
// error reaches the program as the error CUDA would give.
#include <driver_types.h>
#include <gtest/gtest.h>

#include "model_host/launch/errors.h"

namespace {

using namespace qgpu::launch;

TEST(LaunchErrors, AreCudasOwnValues) {
  const std::pair<CudaError, cudaError_t> pairs[] = {
      {kSuccess, cudaSuccess},
      {kInvalidValue, cudaErrorInvalidValue},
      {kMemoryAllocation, cudaErrorMemoryAllocation},
      {kInitializationError, cudaErrorInitializationError},
      {kInvalidConfiguration, cudaErrorInvalidConfiguration},
      {kLaunchMaxDepthExceeded, cudaErrorLaunchMaxDepthExceeded},
      {kLaunchPendingCountExceeded, cudaErrorLaunchPendingCountExceeded},
      {kInvalidDeviceFunction, cudaErrorInvalidDeviceFunction},
      {kLaunchOutOfResources, cudaErrorLaunchOutOfResources},
      {kUnsupportedLimit, cudaErrorUnsupportedLimit},
      {kInvalidPtx, cudaErrorInvalidPtx},
      {kInvalidResourceHandle, cudaErrorInvalidResourceHandle},
      {kIllegalAddress, cudaErrorIllegalAddress},
      {kLaunchTimeout, cudaErrorLaunchTimeout},
      {kAssert, cudaErrorAssert},
      {kMisalignedAddress, cudaErrorMisalignedAddress},
      {kLaunchFailure, cudaErrorLaunchFailure},
      {kNotPermitted, cudaErrorNotPermitted},
      {kNotSupported, cudaErrorNotSupported},
      {kUnknown, cudaErrorUnknown},
  };
  for (const auto& [ours, cuda] : pairs) EXPECT_EQ(int(ours), int(cuda));
}

}  // namespace
