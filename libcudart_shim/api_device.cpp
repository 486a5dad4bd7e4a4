// Device queries (the machine described honestly) and device management;
// streams, events and synchronization are in api_stream.cpp.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>

#include "runtime.h"

using namespace qgpu::cudart;

namespace {

constexpr int kMemoryClockKHz = 1000;  // a figure for bandwidth printouts; memory has no clock

// Everything here comes from the device the daemon's backend declares
// (proto::DeviceInfo): the model's small device or the interpreter's
// CUDA-sized one.
// `live`: managed and mapped memory are live ranges (mirrors.h).
void fill_props(cudaDeviceProp* p, const qgpu::proto::DeviceInfo& d, bool live) {
  *p = cudaDeviceProp{};
  std::snprintf(p->name, sizeof p->name, "%s", d.device_name.c_str());
  p->totalGlobalMem = d.global_bytes;
  p->sharedMemPerBlock = d.shared_bytes_per_cta;
  p->regsPerBlock = int(d.registers_per_cta());
  p->warpSize = int(d.warp_size);
  p->memPitch = std::min<uint64_t>(d.global_bytes, INT32_MAX);
  p->maxThreadsPerBlock = int(d.max_threads_per_cta);
  for (int i = 0; i < 3; ++i) {
    p->maxThreadsDim[i] = int(d.max_block[i]);
    p->maxGridSize[i] = int(d.max_grid[i]);
  }
  p->totalConstMem = d.const_bytes;
  p->major = kMajor;
  p->minor = kMinor;
  p->textureAlignment = 512;
  p->texturePitchAlignment = 32;
  // A multiprocessor holds one block at a time (the occupancy calls' one
  // block): the device's multiprocessors are the blocks it runs at once,
  // cooperative_ctas (the interpreter's host threads), one where it runs no
  // cooperative launch (the model's device).
  p->multiProcessorCount = int(d.multiprocessors());
  p->surfaceAlignment = 512;
  p->unifiedAddressing = 1;  // device addresses never overlap host ones
  p->memoryBusWidth = 32;
  p->maxThreadsPerMultiProcessor = int(d.max_threads_per_cta);
  p->sharedMemPerMultiprocessor = d.shared_optin_bytes_per_cta;
  p->regsPerMultiprocessor = p->regsPerBlock;
  p->sharedMemPerBlockOptin = d.shared_optin_bytes_per_cta;
  p->maxBlocksPerMultiProcessor = 1;
  p->cooperativeLaunch = d.cooperative_ctas > 0;  // the interpreter's device: a block per multiprocessor
  p->hostRegisterSupported = 1;
  // Managed and mapped memory are coherent at launches and synchronization
  // (mirrors.h): the host must not touch them while the device works, and
  // the device reaches no other host memory; or, where the daemon shares
  // the device memory (live ranges, mirrors.h), coherent at every moment.
  p->managedMemory = 1;
  p->canMapHostMemory = 1;
  p->concurrentManagedAccess = live ? 1 : 0;
  p->pageableMemoryAccess = 0;
  p->pciBusID = 0;
  p->pciDeviceID = 0;
  // The L2 the device declares (launch::DeviceSpec): hints about it are
  // accepted and change no result, as memory is flat.
  p->l2CacheSize = int(d.l2_bytes);
  p->persistingL2CacheMaxSize = int(d.persisting_l2_max_bytes);
  p->accessPolicyMaxWindowSize = int(d.access_policy_max_window_bytes);
}

int attribute(cudaDeviceAttr a, const qgpu::proto::DeviceInfo& d, bool live, bool* known) {
  cudaDeviceProp p;
  fill_props(&p, d, live);
  *known = true;
  switch (a) {
    case cudaDevAttrMaxThreadsPerBlock: return p.maxThreadsPerBlock;
    case cudaDevAttrMaxBlockDimX: return p.maxThreadsDim[0];
    case cudaDevAttrMaxBlockDimY: return p.maxThreadsDim[1];
    case cudaDevAttrMaxBlockDimZ: return p.maxThreadsDim[2];
    case cudaDevAttrMaxGridDimX: return p.maxGridSize[0];
    case cudaDevAttrMaxGridDimY: return p.maxGridSize[1];
    case cudaDevAttrMaxGridDimZ: return p.maxGridSize[2];
    case cudaDevAttrMaxSharedMemoryPerBlock: return int(p.sharedMemPerBlock);
    case cudaDevAttrTotalConstantMemory: return int(p.totalConstMem);
    case cudaDevAttrWarpSize: return p.warpSize;
    case cudaDevAttrMaxPitch: return int(p.memPitch);
    case cudaDevAttrMaxRegistersPerBlock: return p.regsPerBlock;
    case cudaDevAttrClockRate: return int(d.clock_khz);
    case cudaDevAttrMemoryClockRate: return kMemoryClockKHz;
    case cudaDevAttrTextureAlignment: return int(p.textureAlignment);
    case cudaDevAttrTexturePitchAlignment: return int(p.texturePitchAlignment);
    case cudaDevAttrSurfaceAlignment: return int(p.surfaceAlignment);
    case cudaDevAttrMultiProcessorCount: return p.multiProcessorCount;
    case cudaDevAttrComputeMode: return cudaComputeModeDefault;
    case cudaDevAttrGlobalMemoryBusWidth: return p.memoryBusWidth;
    case cudaDevAttrMaxThreadsPerMultiProcessor: return p.maxThreadsPerMultiProcessor;
    case cudaDevAttrUnifiedAddressing: return p.unifiedAddressing;
    case cudaDevAttrComputeCapabilityMajor: return p.major;
    case cudaDevAttrComputeCapabilityMinor: return p.minor;
    case cudaDevAttrMaxSharedMemoryPerMultiprocessor: return int(p.sharedMemPerMultiprocessor);
    case cudaDevAttrMaxRegistersPerMultiprocessor: return p.regsPerMultiprocessor;
    case cudaDevAttrMaxSharedMemoryPerBlockOptin: return int(p.sharedMemPerBlockOptin);
    case cudaDevAttrMaxBlocksPerMultiprocessor: return p.maxBlocksPerMultiProcessor;
    case cudaDevAttrHostRegisterSupported: return 1;
    case cudaDevAttrManagedMemory: return p.managedMemory;
    case cudaDevAttrCanMapHostMemory: return p.canMapHostMemory;
    // Live ranges: host and device on the same bytes at every moment, the
    // device's global atomics atomic operations on them.
    case cudaDevAttrConcurrentManagedAccess: return p.concurrentManagedAccess;
    case cudaDevAttrHostNativeAtomicSupported: return live ? 1 : 0;
    case cudaDevAttrSingleToDoublePrecisionPerfRatio: return 1;
    case cudaDevAttrMemoryPoolsSupported: return 1;  // cudaMallocAsync and pools (api_graph.cpp)
    case cudaDevAttrCooperativeLaunch: return p.cooperativeLaunch;  // a grid of one block (protocol.md)
    case cudaDevAttrL2CacheSize: return p.l2CacheSize;
    case cudaDevAttrMaxPersistingL2CacheSize: return p.persistingL2CacheMaxSize;
    case cudaDevAttrMaxAccessPolicyWindowSize: return p.accessPolicyMaxWindowSize;
    // Capabilities the machine does not have: honest zeros.
    case cudaDevAttrGpuOverlap: case cudaDevAttrKernelExecTimeout: case cudaDevAttrIntegrated:
    case cudaDevAttrConcurrentKernels: case cudaDevAttrEccEnabled:
    case cudaDevAttrPciBusId: case cudaDevAttrPciDeviceId: case cudaDevAttrPciDomainId: case cudaDevAttrTccDriver:
    case cudaDevAttrAsyncEngineCount: case cudaDevAttrStreamPrioritiesSupported:
    case cudaDevAttrGlobalL1CacheSupported: case cudaDevAttrLocalL1CacheSupported:
    case cudaDevAttrIsMultiGpuBoard: case cudaDevAttrMultiGpuBoardGroupID:
    case cudaDevAttrPageableMemoryAccess:
    case cudaDevAttrComputePreemptionSupported: case cudaDevAttrCanUseHostPointerForRegisteredMem:
    case cudaDevAttrCanFlushRemoteWrites:
    case cudaDevAttrPageableMemoryAccessUsesHostPageTables: case cudaDevAttrDirectManagedMemAccessFromHost:
    case cudaDevAttrReservedSharedMemoryPerBlock: case cudaDevAttrSparseCudaArraySupported:
    case cudaDevAttrClusterLaunch: case cudaDevAttrIpcEventSupport:
    case cudaDevAttrMpsEnabled:
      return 0;
    default:
      *known = false;
      return 0;
  }
}

}  // namespace

extern "C" {

cudaError_t cudaGetDeviceCount(int* count) {
  if (!count) return set_error(cudaErrorInvalidValue);
  *count = 0;
  return guarded([&](Runtime& rt) {
    rt.conn();
    *count = 1;
    return cudaSuccess;
  });
}

cudaError_t cudaGetDevice(int* device) {
  if (!device) return set_error(cudaErrorInvalidValue);
  *device = 0;
  return cudaSuccess;
}

cudaError_t cudaSetDevice(int device) {
  return device == 0 ? guarded([](Runtime& rt) { rt.conn(); return cudaSuccess; }) : set_error(cudaErrorInvalidDevice);
}

cudaError_t cudaInitDevice(int device, unsigned int, unsigned int) { return cudaSetDevice(device); }

cudaError_t cudaChooseDevice(int* device, const cudaDeviceProp*) {
  if (!device) return set_error(cudaErrorInvalidValue);
  *device = 0;
  return cudaSuccess;
}

cudaError_t cudaSetDeviceFlags(unsigned int) { return cudaSuccess; }
cudaError_t cudaGetDeviceFlags(unsigned int* flags) {
  if (!flags) return set_error(cudaErrorInvalidValue);
  *flags = 0;
  return cudaSuccess;
}

cudaError_t cudaGetDeviceProperties(cudaDeviceProp* prop, int device) {
  if (!prop) return set_error(cudaErrorInvalidValue);
  if (device != 0) return set_error(cudaErrorInvalidDevice);
  return guarded([&](Runtime& rt) {
    fill_props(prop, rt.device(), rt.mirrors().live());
    return cudaSuccess;
  });
}

cudaError_t cudaDeviceGetAttribute(int* value, cudaDeviceAttr attr, int device) {
  if (!value) return set_error(cudaErrorInvalidValue);
  if (device != 0) return set_error(cudaErrorInvalidDevice);
  return guarded([&](Runtime& rt) {
    bool known;
    const qgpu::proto::DeviceInfo& d = rt.device();
    *value = attribute(attr, d, rt.mirrors().live(), &known);
    return known ? cudaSuccess : set_error(cudaErrorInvalidValue);
  });
}

cudaError_t cudaDeviceCanAccessPeer(int* canAccessPeer, int, int) {
  if (!canAccessPeer) return set_error(cudaErrorInvalidValue);
  *canAccessPeer = 0;
  return cudaSuccess;
}

cudaError_t cudaDeviceGetStreamPriorityRange(int* leastPriority, int* greatestPriority) {
  if (leastPriority) *leastPriority = 0;
  if (greatestPriority) *greatestPriority = 0;
  return cudaSuccess;
}

// The persisting-L2 set-aside: a hint (memory is flat), kept so that
// cudaDeviceGetLimit reads back what was set.
static std::atomic<size_t> g_persisting_l2{0};

// The printf FIFO and the device heap are the session's (the daemon's Limit
// request); the stack is the device's local memory per thread.
cudaError_t cudaDeviceSetLimit(cudaLimit limit, size_t value) {
  return guarded([&](Runtime& rt) {
    const qgpu::proto::DeviceInfo& d = rt.device();
    switch (limit) {
      case cudaLimitPrintfFifoSize: rt.conn().limit(qgpu::proto::kLimitPrintfFifo, value); return cudaSuccess;
      case cudaLimitMallocHeapSize: rt.conn().limit(qgpu::proto::kLimitMallocHeap, value); return cudaSuccess;
      case cudaLimitDevRuntimePendingLaunchCount:
        rt.conn().limit(qgpu::proto::kLimitPendingLaunches, value);
        return cudaSuccess;
      case cudaLimitStackSize:
        if (value <= d.local_bytes_per_thread) return cudaSuccess;
        return fail(cudaErrorInvalidValue, "cudaDeviceSetLimit(cudaLimitStackSize, " + std::to_string(value) +
                                               "): the device has " + std::to_string(d.local_bytes_per_thread) +
                                               " bytes of local memory per thread");
      case cudaLimitPersistingL2CacheSize:
        if (value > d.persisting_l2_max_bytes)
          return fail(cudaErrorInvalidValue, "cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, " +
                                                 std::to_string(value) + "): at most persistingL2CacheMaxSize, " +
                                                 std::to_string(d.persisting_l2_max_bytes) + " bytes");
        g_persisting_l2 = value;
        return cudaSuccess;
      default: return set_error(cudaErrorUnsupportedLimit);
    }
  });
}
cudaError_t cudaDeviceGetLimit(size_t* value, cudaLimit limit) {
  if (!value) return set_error(cudaErrorInvalidValue);
  return guarded([&](Runtime& rt) {
    switch (limit) {
      case cudaLimitPrintfFifoSize:
        *value = rt.conn().limit(qgpu::proto::kLimitPrintfFifo, qgpu::proto::kQueryLimit);
        return cudaSuccess;
      case cudaLimitMallocHeapSize:
        *value = rt.conn().limit(qgpu::proto::kLimitMallocHeap, qgpu::proto::kQueryLimit);
        return cudaSuccess;
      case cudaLimitDevRuntimePendingLaunchCount:
        *value = rt.conn().limit(qgpu::proto::kLimitPendingLaunches, qgpu::proto::kQueryLimit);
        return cudaSuccess;
      case cudaLimitStackSize: *value = rt.device().local_bytes_per_thread; return cudaSuccess;
      case cudaLimitPersistingL2CacheSize: *value = g_persisting_l2; return cudaSuccess;
      default: return set_error(cudaErrorUnsupportedLimit);
    }
  });
}
// Demotes persisting L2 lines to normal ones: there are none to demote.
cudaError_t cudaCtxResetPersistingL2Cache(void) {
  return guarded([](Runtime& rt) {
    rt.conn();
    return cudaSuccess;
  });
}

cudaError_t cudaDeviceSetCacheConfig(cudaFuncCache) { return cudaSuccess; }
cudaError_t cudaDeviceGetCacheConfig(cudaFuncCache* c) {
  if (!c) return set_error(cudaErrorInvalidValue);
  *c = cudaFuncCachePreferNone;
  return cudaSuccess;
}

cudaError_t cudaDeviceReset(void) {
  Runtime::get().reset();
  return cudaSuccess;
}

cudaError_t cudaRuntimeGetVersion(int* v) {
  if (!v) return set_error(cudaErrorInvalidValue);
  *v = CUDART_VERSION;
  return cudaSuccess;
}

cudaError_t cudaDriverGetVersion(int* v) {
  if (!v) return set_error(cudaErrorInvalidValue);
  *v = CUDART_VERSION;
  return cudaSuccess;
}

cudaError_t cudaProfilerStart(void) { return cudaSuccess; }
cudaError_t cudaProfilerStop(void) { return cudaSuccess; }

}  // extern "C"
