// State of the libcudart.so.13 drop-in: the connection to model_host,
// registered fatbinaries, kernels and variables, and CUDA's error rules.
//
// Execution is synchronous: a launch returns when the daemon has run it.
// CUDA's asynchronous contract is kept where programs can observe it: an
// execution error (assert, illegal address, ...) is sticky and surfaces at
// the next synchronizing call and every call after; device printf output is
// written to stdout at synchronization.
#pragma once

#include <cuda_runtime_api.h>

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "qgpu/client.h"
#include "qgpu/fatbin.h"

namespace qgpu::cudart {

// The compute capability devices report; PTX is chosen for it.
constexpr int kMajor = 7, kMinor = 5;

// One translation unit's PTX, loaded into the daemon on first use.
struct Module {
  std::string ptx;
  int ptx_version = 0;  // major * 10 + minor
  bool loaded = false;
  proto::ModuleImage image;
};

struct Fatbin {
  std::vector<std::unique_ptr<Module>> units;
  std::string error;  // why the fatbinary yields no runnable PTX
};

struct Kernel {
  Fatbin* fatbin = nullptr;
  std::string name;  // mangled .entry name
  // cudaFuncAttributeMaxDynamicSharedMemorySize; -1: not set (the device's
  // shared memory per block less the kernel's static shared memory).
  int max_dynamic_smem = -1;
};

struct Variable {
  Fatbin* fatbin = nullptr;
  std::string name;
  size_t size = 0;
};

// A kernel resolved to its loaded module, ready to launch.
struct ResolvedKernel {
  Module* module;
  const proto::KernelLayout* layout;
};

class Runtime {
 public:
  static Runtime& get();

  // The connection, opened (and model_host spawned) on first use.  Throws
  // client::Error, and keeps failing the same way once it failed.
  client::Connection& conn();
  const proto::DeviceInfo& device() { return conn().device(); }
  bool is_device_pointer(const void* p);

  // Registration (called from program constructors, before main).
  Fatbin* register_fatbin(const void* wrapper);
  void unregister_fatbin(Fatbin* fb);
  void register_kernel(Fatbin* fb, const void* host_fun, const char* name);
  void register_variable(Fatbin* fb, const void* host_var, const char* name, size_t size);

  Kernel* find_kernel(const void* host_fun);
  bool is_kernel(const Kernel* k);
  // Throws client::Error (cudaErrorNoKernelImageForDevice, ...) naming what is wrong.
  ResolvedKernel resolve(Kernel& k);
  // Device address and size of a registered variable.
  std::pair<uint64_t, size_t> symbol(const void* host_var);

  cudaError_t launch(Kernel* k, dim3 grid, dim3 block, void** args, size_t smem);

  // Synchronization: writes pending device printf output, returns the
  // sticky error if any.
  cudaError_t synchronize();
  cudaError_t sticky() const { return sticky_; }
  // Makes `e` sticky: every later call returns it (execution errors, a lost daemon).
  void make_sticky(cudaError_t e);
  void reset();  // cudaDeviceReset: a fresh session, errors cleared

 private:
  Runtime() = default;
  Module& load(Module& m);

  std::recursive_mutex mu_;
  std::unique_ptr<client::Connection> conn_;
  std::unique_ptr<client::Error> conn_error_;
  std::vector<std::unique_ptr<Fatbin>> fatbins_;
  std::map<const void*, std::unique_ptr<Kernel>> kernels_;
  std::map<const void*, Variable> variables_;
  cudaError_t sticky_ = cudaSuccess;
  std::string pending_printf_;
};

// Records `e` (unless it is cudaSuccess) as the calling thread's last error
// and returns it.
cudaError_t set_error(cudaError_t e);
// cudaGetLastError / cudaPeekAtLastError for the calling thread.
cudaError_t last_error_take();
cudaError_t last_error_peek();
// Prints "qgpu: <message>" on stderr and records the error.
cudaError_t fail(cudaError_t e, const std::string& message);
// Runs `body`, turning client::Error into a recorded CUDA error; returns the
// sticky error first when there is one.
template <class F>
cudaError_t guarded(F&& body) {
  Runtime& rt = Runtime::get();
  if (rt.sticky() != cudaSuccess) return set_error(rt.sticky());
  try {
    return set_error(body(rt));
  } catch (const client::Error& e) {
    if (e.lost) rt.make_sticky(cudaError_t(e.code));
    return fail(cudaError_t(e.code), e.what());
  }
}

}  // namespace qgpu::cudart
