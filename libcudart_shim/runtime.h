// State of the libcudart.so.13 drop-in: the connection to model_host,
// registered fatbinaries, kernels and variables, streams and events, host
// memory the device can reach (managed, mapped), and CUDA's error rules.
//
// Execution is asynchronous as CUDA's is: a launch, an asynchronous copy or
// memset, an event record or a host callback is queued on its stream and the
// call returns; each stream has a runtime thread that issues its operations
// to the daemon in order (streams.h).  Errors follow CUDA: a launch
// configuration the machine cannot run fails the launch call itself, and an
// asynchronous copy or memset outside the process's allocations fails its
// call; an execution error (assert, illegal address, ...) is sticky and
// surfaces at the next synchronizing call and every call after; any other
// error of queued work (the daemon refusing what the shim accepted) is
// reported once, by the next synchronizing call.  Device printf output is
// written to stdout at synchronization.
#pragma once

#include <cuda_runtime_api.h>

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "mirrors.h"
#include "qgpu/client.h"
#include "qgpu/fatbin.h"
#include "streams.h"

namespace qgpu::cudart {

// The compute capability devices report; PTX is chosen for it.
constexpr int kMajor = 7, kMinor = 5;

// One translation unit's PTX, loaded into the daemon on first use.
struct Module {
  std::string ptx;
  int ptx_version = 0;  // the PTX's virtual architecture (compute_75: 75), as cudaFuncAttributes::ptxVersion reports it
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
  void** managed_ptr = nullptr;  // __managed__: where the program reads the variable's address
};

// A kernel resolved to its loaded module, ready to launch.
struct ResolvedKernel {
  Module* module;
  const proto::KernelLayout* layout;
};

// Whether `e` is an execution error (sticky, as CUDA's are).
bool is_execution_error(int e);

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
  void register_variable(Fatbin* fb, const void* host_var, const char* name, size_t size, void** managed_ptr = nullptr);
  // __cudaInitModule: loads the fatbinary's modules, so that its __managed__
  // variables have their host addresses.
  void init_module(Fatbin* fb);

  Kernel* find_kernel(const void* host_fun);
  const void* host_function(const Kernel* k);  // the address the program registered it by
  bool is_kernel(const Kernel* k);
  // Throws client::Error (cudaErrorNoKernelImageForDevice, ...) naming what is wrong.
  ResolvedKernel resolve(Kernel& k);
  // Device address and size of a registered variable.
  std::pair<uint64_t, size_t> symbol(const void* host_var);

  // Checks the launch against the machine and queues it on `stream`.
  // Returns a configuration error at once; the kernel's own error arrives
  // later (sticky).
  cudaError_t launch(Kernel* k, dim3 grid, dim3 block, void** args, size_t smem, const StreamPtr& stream,
                     bool cooperative = false);
  // The same checks; the launch as an operation, not queued yet (graphs).
  // cooperative: cudaLaunchCooperativeKernel (every block resident at once).
  cudaError_t make_launch(Kernel* k, dim3 grid, dim3 block, void** args, size_t smem, Op* out,
                          bool cooperative = false);

  // What a synchronizing call returns once the work it waits for is done:
  // writes pending device printf output, makes managed and mapped memory
  // current on the host, returns the sticky error, else the first error of
  // an asynchronous operation not reported yet.
  cudaError_t synchronize();
  cudaError_t sticky() const { return sticky_.load(); }
  // Makes `e` sticky: every later call returns it (execution errors, a lost daemon).
  void make_sticky(cudaError_t e);
  // An asynchronous operation failed: the next synchronizing call reports it.
  void defer_error(cudaError_t e);
  void add_printf(const std::string& s);
  void reset();  // cudaDeviceReset: a fresh session, errors cleared
  // The session (NULL before the first call that opens it) for the driver
  // API shim; with `wait`, once the work queued so far has completed.
  client::Connection* session_for_driver(bool wait);

  // Device allocations as this process made them (cudaMalloc, managed and
  // mapped memory, module variables): an asynchronous copy or memset is
  // checked against them when it is made, as CUDA's are, rather than only
  // when the daemon runs it.
  void note_allocation(uint64_t addr, uint64_t size);
  void note_free(uint64_t addr);
  // Throws client::Error (cudaErrorInvalidValue) naming what is wrong unless
  // [addr, addr + n) lies inside one live allocation.
  void check_device_range(uint64_t addr, uint64_t n, const std::string& what);

  Streams& streams() { return streams_; }
  Mirrors& mirrors() { return mirrors_; }

 private:
  Runtime();
  Module& load(Module& m);
  void flush_printf();

  std::recursive_mutex mu_;
  std::unique_ptr<client::Connection> conn_;
  std::atomic<client::Connection*> conn_ptr_{nullptr};
  std::unique_ptr<client::Error> conn_error_;
  std::vector<std::unique_ptr<Fatbin>> fatbins_;
  std::map<const void*, std::unique_ptr<Kernel>> kernels_;
  std::map<const void*, Variable> variables_;
  std::atomic<cudaError_t> sticky_{cudaSuccess};
  std::mutex deferred_mu_;
  cudaError_t deferred_ = cudaSuccess;
  std::mutex allocations_mu_;
  std::map<uint64_t, uint64_t> allocations_;  // device address -> size
  std::mutex printf_mu_;
  std::string pending_printf_;
  Streams streams_;
  Mirrors mirrors_;
};

// The stream a handle names (see Streams::find); throws client::Error
// (cudaErrorInvalidResourceHandle) for one that is not a live stream.
StreamPtr stream_of(cudaStream_t handle, bool per_thread);
// Checks an access-policy window (a stream's, a launch's or a kernel node's
// attribute) against the device: cudaSuccess, or the error with its message
// set for `call`.
cudaError_t check_access_policy(const cudaAccessPolicyWindow& w, const char* call);
// A copy or a memset run now, on the calling (runtime) thread: what a
// queued copy or memset operation does (api_memory.cpp).
cudaError_t copy_now(Runtime& rt, void* dst, const void* src, size_t n, cudaMemcpyKind kind, double& seconds);
cudaError_t memset_now(Runtime& rt, void* p, int value, size_t n, double& seconds);
// A 3D copy between pitched pointers (positions and width in bytes) and a 2D
// memset, row by row, run now (api_memory.cpp): graph nodes and the 2D/3D
// copies and memsets (api_texture.cpp) queue them.
cudaError_t copy3d(Runtime& rt, const cudaMemcpy3DParms& p, double& seconds);
cudaError_t memset2d(Runtime& rt, const cudaMemsetParams& p, double& seconds);
// cudaMemcpy3D's parameters with CUDA arrays as pitched pointers, positions
// and width in bytes (api_texture.cpp); throws client::Error for a handle
// that is not a live array.
cudaMemcpy3DParms array_copy_bytes(const cudaMemcpy3DParms& p);
// A synchronizing call: waits for the points, then Runtime::synchronize().
cudaError_t wait_and_synchronize(const std::vector<Mark>& marks);

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
