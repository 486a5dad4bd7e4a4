// Registration of fatbinaries, kernels and variables, and kernel launches.
#include <algorithm>
#include <vector>

#include "graph.h"
#include "runtime.h"

using namespace qgpu::cudart;

namespace {

struct CallConfig {
  dim3 grid, block;
  size_t smem;
  cudaStream_t stream;
};
thread_local std::vector<CallConfig> t_configs;

// The dynamic shared memory a launch of `k` may ask for.
uint64_t max_dynamic_smem(const Kernel& k, const ResolvedKernel& rk, const qgpu::proto::DeviceInfo& d) {
  if (k.max_dynamic_smem >= 0) return uint64_t(k.max_dynamic_smem);
  return d.shared_bytes_per_cta > rk.layout->static_smem ? d.shared_bytes_per_cta - rk.layout->static_smem : 0;
}

// Queues the launch on its stream (0: the legacy default stream, or the
// calling thread's with the _ptsz entry points) and returns.
cudaError_t launch(Kernel* k, dim3 grid, dim3 block, void** args, size_t smem, cudaStream_t stream, bool per_thread,
                   bool cooperative = false) {
  return guarded([&](Runtime& rt) {
    if (!k || !rt.is_kernel(k))
      return fail(cudaErrorInvalidDeviceFunction, "launch of a function that is not a registered kernel");
    // Dynamic shared memory beyond the default needs the kernel's
    // cudaFuncAttributeMaxDynamicSharedMemorySize, as on a GPU.
    const qgpu::proto::DeviceInfo& d = rt.device();
    const ResolvedKernel rk = rt.resolve(*k);
    const uint64_t allowed = max_dynamic_smem(*k, rk, d);
    if (smem > allowed)
      return fail(cudaErrorInvalidValue,
                  "launch of '" + k->name + "' with " + std::to_string(smem) + " bytes of dynamic shared memory; " +
                      (k->max_dynamic_smem < 0
                           ? "without cudaFuncSetAttribute(cudaFuncAttributeMaxDynamicSharedMemorySize) it may use " +
                                 std::to_string(allowed) + " (the device's " + std::to_string(d.shared_bytes_per_cta) +
                                 " bytes per block less " + std::to_string(rk.layout->static_smem) + " static)"
                           : "its cudaFuncAttributeMaxDynamicSharedMemorySize is " + std::to_string(allowed)));
    StreamPtr st = stream_of(stream, per_thread);
    if (capturing(st) && cooperative)
      return fail(cudaErrorNotSupported, "cudaLaunchCooperativeKernel of '" + k->name +
                                             "' during stream capture: qgpu's graphs have no cooperative kernel nodes; "
                                             "launch it outside the capture");
    if (capturing(st)) return capture_launch(st, k, grid, block, args, smem);  // a kernel node (graph.h)
    return rt.launch(k, grid, block, args, smem, st, cooperative);
  });
}

}  // namespace

extern "C" {

void** __cudaRegisterFatBinary(void* fatCubin) {
  return reinterpret_cast<void**>(Runtime::get().register_fatbin(fatCubin));
}

void __cudaRegisterFatBinaryEnd(void**) {}

void __cudaUnregisterFatBinary(void** handle) { Runtime::get().unregister_fatbin(reinterpret_cast<Fatbin*>(handle)); }

void __cudaRegisterFunction(void** handle, const char* hostFun, char*, const char* deviceName, int, uint3*, uint3*,
                            dim3*, dim3*, int*) {
  Runtime::get().register_kernel(reinterpret_cast<Fatbin*>(handle), hostFun, deviceName);
}

void __cudaRegisterVar(void** handle, char* hostVar, char*, const char* deviceName, int, size_t size, int, int) {
  Runtime::get().register_variable(reinterpret_cast<Fatbin*>(handle), hostVar, deviceName, size);
}

void __cudaRegisterManagedVar(void** handle, void** hostVarPtrAddress, char*, const char* deviceName, int, size_t size,
                              int, int) {
  Runtime::get().register_variable(reinterpret_cast<Fatbin*>(handle), hostVarPtrAddress, deviceName, size,
                                   hostVarPtrAddress);
}

// Called before the host first touches a __managed__ variable: the module
// is loaded and the variable's pointer set (Runtime::load).
char __cudaInitModule(void** handle) {
  cudaError_t e = guarded([&](Runtime& rt) {
    rt.init_module(reinterpret_cast<Fatbin*>(handle));
    return cudaSuccess;
  });
  return e == cudaSuccess;
}

unsigned __cudaPushCallConfiguration(dim3 gridDim, dim3 blockDim, size_t sharedMem, struct CUstream_st* stream) {
  t_configs.push_back({gridDim, blockDim, sharedMem, stream});
  return 0;
}

cudaError_t __cudaPopCallConfiguration(dim3* gridDim, dim3* blockDim, size_t* sharedMem, void* stream) {
  if (t_configs.empty()) return set_error(cudaErrorMissingConfiguration);
  CallConfig c = t_configs.back();
  t_configs.pop_back();
  *gridDim = c.grid;
  *blockDim = c.block;
  *sharedMem = c.smem;
  *static_cast<cudaStream_t*>(stream) = c.stream;
  return cudaSuccess;
}

cudaError_t __cudaGetKernel(cudaKernel_t* kernel, const void* func) {
  Kernel* k = Runtime::get().find_kernel(func);
  if (!k) return set_error(cudaErrorInvalidDeviceFunction);
  *kernel = reinterpret_cast<cudaKernel_t>(k);
  return cudaSuccess;
}

cudaError_t __cudaLaunchKernel(cudaKernel_t kernel, dim3 gridDim, dim3 blockDim, void** args, size_t sharedMem,
                               cudaStream_t stream) {
  return launch(reinterpret_cast<Kernel*>(kernel), gridDim, blockDim, args, sharedMem, stream, false);
}

cudaError_t __cudaLaunchKernel_ptsz(cudaKernel_t kernel, dim3 gridDim, dim3 blockDim, void** args, size_t sharedMem,
                                    cudaStream_t stream) {
  return launch(reinterpret_cast<Kernel*>(kernel), gridDim, blockDim, args, sharedMem, stream, true);
}

cudaError_t cudaLaunchKernel(const void* func, dim3 gridDim, dim3 blockDim, void** args, size_t sharedMem,
                             cudaStream_t stream) {
  return launch(Runtime::get().find_kernel(func), gridDim, blockDim, args, sharedMem, stream, false);
}

cudaError_t cudaLaunchKernel_ptsz(const void* func, dim3 gridDim, dim3 blockDim, void** args, size_t sharedMem,
                                  cudaStream_t stream) {
  return launch(Runtime::get().find_kernel(func), gridDim, blockDim, args, sharedMem, stream, true);
}

// Cooperative launches (grid-wide sync): every block of the grid resident at
// once, at most the device's cooperative_ctas (the daemon gives the launch a
// grid workspace, docs/protocol.md).
cudaError_t cudaLaunchCooperativeKernel(const void* func, dim3 gridDim, dim3 blockDim, void** args, size_t sharedMem,
                                        cudaStream_t stream) {
  return launch(Runtime::get().find_kernel(func), gridDim, blockDim, args, sharedMem, stream, false, true);
}

cudaError_t cudaLaunchCooperativeKernel_ptsz(const void* func, dim3 gridDim, dim3 blockDim, void** args,
                                             size_t sharedMem, cudaStream_t stream) {
  return launch(Runtime::get().find_kernel(func), gridDim, blockDim, args, sharedMem, stream, true, true);
}

// cudaLaunchAttributeCooperative among a cudaLaunchKernelEx's attributes.
static bool cooperative_attr(const cudaLaunchConfig_t* config) {
  for (unsigned i = 0; config->attrs && i < config->numAttrs; ++i)
    if (config->attrs[i].id == cudaLaunchAttributeCooperative && config->attrs[i].val.cooperative) return true;
  return false;
}

// A launch's access-policy windows are hints (memory is flat), checked
// against the device as a stream's are; other attributes change nothing the
// machine runs.
static cudaError_t check_launch_attrs(const cudaLaunchConfig_t* config) {
  return guarded([&](Runtime&) {
    for (unsigned i = 0; config->attrs && i < config->numAttrs; ++i)
      if (config->attrs[i].id == cudaLaunchAttributeAccessPolicyWindow)
        if (cudaError_t e = check_access_policy(config->attrs[i].val.accessPolicyWindow, "cudaLaunchKernelEx")) return e;
    return cudaSuccess;
  });
}

cudaError_t cudaLaunchKernelExC(const cudaLaunchConfig_t* config, const void* func, void** args) {
  if (!config) return set_error(cudaErrorInvalidValue);
  if (cudaError_t e = check_launch_attrs(config)) return e;
  return launch(Runtime::get().find_kernel(func), config->gridDim, config->blockDim, args, config->dynamicSmemBytes,
                config->stream, false, cooperative_attr(config));
}

cudaError_t cudaLaunchKernelExC_ptsz(const cudaLaunchConfig_t* config, const void* func, void** args) {
  if (!config) return set_error(cudaErrorInvalidValue);
  if (cudaError_t e = check_launch_attrs(config)) return e;
  return launch(Runtime::get().find_kernel(func), config->gridDim, config->blockDim, args, config->dynamicSmemBytes,
                config->stream, true, cooperative_attr(config));
}

cudaError_t cudaFuncGetAttributes(cudaFuncAttributes* attr, const void* func) {
  if (!attr) return set_error(cudaErrorInvalidValue);
  return guarded([&](Runtime& rt) {
    Kernel* k = rt.find_kernel(func);
    if (!k) return set_error(cudaErrorInvalidDeviceFunction);
    ResolvedKernel rk = rt.resolve(*k);
    const qgpu::proto::DeviceInfo& d = rt.device();
    *attr = cudaFuncAttributes{};
    attr->sharedSizeBytes = rk.layout->static_smem;
    attr->maxThreadsPerBlock = int(d.max_threads_per_cta);
    // A thread's registers at the largest block (a register file split
    // among the threads gives fewer there): numRegs x maxThreadsPerBlock
    // stays within regsPerBlock, as on a GPU.
    attr->numRegs = int(std::min(d.registers, d.registers_per_cta() / std::max(d.max_threads_per_cta, 1u)));
    attr->ptxVersion = rk.module->ptx_version;
    attr->binaryVersion = kMajor * 10 + kMinor;
    attr->maxDynamicSharedSizeBytes = int(max_dynamic_smem(*k, rk, d));
    return cudaSuccess;
  });
}

cudaError_t cudaFuncGetParamInfo(const void* func, size_t paramIndex, size_t* paramOffset, size_t* paramSize) {
  return guarded([&](Runtime& rt) {
    Kernel* k = rt.find_kernel(func);
    if (!k) return set_error(cudaErrorInvalidDeviceFunction);
    ResolvedKernel rk = rt.resolve(*k);
    if (paramIndex >= rk.layout->params.size()) return set_error(cudaErrorInvalidValue);
    if (paramOffset) *paramOffset = rk.layout->params[paramIndex].offset;
    if (paramSize) *paramSize = rk.layout->params[paramIndex].size;
    return cudaSuccess;
  });
}

cudaError_t cudaFuncSetAttribute(const void* func, cudaFuncAttribute attr, int value) {
  return guarded([&](Runtime& rt) {
    Kernel* k = rt.find_kernel(func);
    if (!k) return set_error(cudaErrorInvalidDeviceFunction);
    switch (attr) {
      case cudaFuncAttributeMaxDynamicSharedMemorySize: {
        const qgpu::proto::DeviceInfo& d = rt.device();
        ResolvedKernel rk = rt.resolve(*k);
        if (value < 0 || uint64_t(value) + rk.layout->static_smem > d.shared_optin_bytes_per_cta)
          return fail(cudaErrorInvalidValue,
                      "cudaFuncSetAttribute(" + k->name + ", cudaFuncAttributeMaxDynamicSharedMemorySize, " +
                          std::to_string(value) + "): the device has " + std::to_string(d.shared_optin_bytes_per_cta) +
                          " bytes of shared memory per block at most, and the kernel has " +
                          std::to_string(rk.layout->static_smem) + " static");
        k->max_dynamic_smem = value;
        return cudaSuccess;
      }
      case cudaFuncAttributePreferredSharedMemoryCarveout:
        return value >= -1 && value <= 100 ? cudaSuccess : set_error(cudaErrorInvalidValue);
      default:
        return set_error(cudaErrorInvalidValue);
    }
  });
}

cudaError_t cudaFuncSetCacheConfig(const void* func, cudaFuncCache) {
  return Runtime::get().find_kernel(func) ? cudaSuccess : set_error(cudaErrorInvalidDeviceFunction);
}

// Occupancy: the machine runs one CTA at a time per multiprocessor.
cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(int* numBlocks, const void* func, int blockSize,
                                                                   size_t, unsigned int) {
  if (!numBlocks) return set_error(cudaErrorInvalidValue);
  return guarded([&](Runtime& rt) {
    if (!rt.find_kernel(func)) return set_error(cudaErrorInvalidDeviceFunction);
    *numBlocks = blockSize > 0 && uint32_t(blockSize) <= rt.device().max_threads_per_cta ? 1 : 0;
    return cudaSuccess;
  });
}

cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessor(int* numBlocks, const void* func, int blockSize,
                                                          size_t dynamicSMemSize) {
  return cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(numBlocks, func, blockSize, dynamicSMemSize, 0);
}

}  // extern "C"
