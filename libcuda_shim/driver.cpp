// libcuda.so.1: the CUDA driver API entry points NVRTC programs and the
// runtime's users call, on the same model_host client as the runtime shim.
//
// One device (the machine in model_host).  Every call is synchronous, so
// streams are accepted and ignored and synchronisation only reports errors.
// An execution error of a kernel (illegal address, assert, launch failure)
// is sticky, as on a GPU: the launch itself returns CUDA_SUCCESS and every
// later call that needs the context returns the error.
#include <cuda.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <dlfcn.h>
#include <unistd.h>
#include <vector>

#include "driver_error.h"
#include "model_host/launch/texture.h"
#include "module_image.h"
#include "not_supported.h"
#include "qgpu/client.h"

#define QGPU_CU_API extern "C" __attribute__((visibility("default")))

struct CUctx_st {};
// A pending cuLink* invocation: qgpu runs PTX, so "linking" one PTX input
// gives that PTX back as the image cuModuleLoadData takes.
struct CUlinkState_st {
  std::string ptx;
  int inputs = 0;
  char* error_log = nullptr;
  size_t error_log_size = 0;
};

struct CUmod_st {
  std::vector<qgpu::proto::ModuleImage> images;  // one per PTX module of the image
  std::map<std::string, std::unique_ptr<struct CUfunc_st>> functions;
};

struct CUfunc_st {
  CUmod_st* module;
  uint32_t image;  // the daemon's module id
  qgpu::proto::KernelLayout layout;
};

namespace qgpu::driver {
namespace {

// The compute capability the machine presents (as device queries and the
// fatbinary PTX choice in module_image.cpp do).
constexpr int kMajor = 7, kMinor = 5;

struct State {
  std::mutex mu;
  bool initialized = false;
  std::unique_ptr<client::Connection> conn;
  CUctx_st primary;
  int primary_refs = 0;
  std::set<CUlinkState_st*> links;
  std::set<CUctx_st*> contexts;  // live contexts, the primary one while retained
  std::set<CUmod_st*> modules;
  CUresult sticky = CUDA_SUCCESS;
  std::string sticky_message;
  // Access-policy windows set on streams (cuStreamSetAttribute): hints kept
  // to be read back; streams are otherwise ignored.
  std::map<CUstream, CUaccessPolicyWindow> stream_windows;
  // Virtual memory management (cuMemAddressReserve, cuMemCreate, cuMemMap):
  // device memory is one flat space, so a reserved range is carved from the
  // device allocator (its bytes are the range), and mapping a physical
  // allocation gives it that range as its backing.
  struct Reservation {
    CUdeviceptr alloc = 0;  // what the allocator gave (over-allocated for alignment)
    size_t size = 0;
  };
  std::map<CUdeviceptr, Reservation> reservations;  // by start address
  struct Physical {
    CUmemAllocationProp prop{};
    size_t size = 0;
    int refs = 1;               // cuMemCreate's and cuMemRetainAllocationHandle's, less cuMemRelease's
    CUdeviceptr mapped_at = 0;  // 0: not mapped
    std::vector<char> saved;    // its bytes while unmapped after a mapping
  };
  std::map<CUmemGenericAllocationHandle, Physical> physical;
  CUmemGenericAllocationHandle next_handle = 1;
  struct Mapping {
    size_t size = 0;
    CUmemGenericAllocationHandle handle = 0;
    unsigned long long access = CU_MEM_ACCESS_FLAGS_PROT_NONE;
  };
  std::map<CUdeviceptr, Mapping> mappings;  // by start address
};

State& state() {
  static State s;
  return s;
}

thread_local CUctx_st* current = nullptr;
// The calling thread's context stack below `current` (its top):
// cuCtxPushCurrent and cuCtxPopCurrent move contexts between the two.
thread_local std::vector<CUctx_st*> pushed;

// Runs an entry point's body under the driver lock; a failure is printed
// with the entry point's name and returned as a CUresult.
template <typename Body>
CUresult api(const char* entry, Body&& body) {
  std::string message;
  CUresult code;
  try {
    std::lock_guard<std::mutex> lock(state().mu);
    body();
    return CUDA_SUCCESS;
  } catch (const DriverError& e) {
    code = e.code;
    message = e.what();
  } catch (const client::Error& e) {
    code = from_runtime_error(e.code);
    message = e.what();
  } catch (const std::bad_alloc&) {
    code = CUDA_ERROR_OUT_OF_MEMORY;
    message = "out of host memory";
  } catch (const std::exception& e) {
    code = CUDA_ERROR_UNKNOWN;
    message = e.what();
  }
  std::fprintf(stderr, "qgpu libcuda: %s: %s\n", entry, message.c_str());
  return code;
}

void require(bool ok, CUresult code, const std::string& message) {
  if (!ok) throw DriverError(code, message);
}

// qgpu's libcudart.so.13, when the program uses the runtime too: its
// session (NULL until the runtime opened or borrowed one), after the work
// queued on its streams (`wait`).  One session per process serves both
// libraries, as CUDA's runtime works in the driver's primary context.
client::Connection* runtime_session(bool wait) {
  using RuntimeSession = void* (*)(int);
  static auto f = reinterpret_cast<RuntimeSession>(dlsym(RTLD_DEFAULT, "qgpu_cudart_session"));
  return f ? static_cast<client::Connection*>(f(wait ? 1 : 0)) : nullptr;
}

client::Connection& device() {
  State& s = state();
  // A runtime that opened its session has initialised the driver, as
  // CUDA's runtime does: driver calls work without the program's cuInit.
  if (!s.initialized && runtime_session(false)) s.initialized = true;
  require(s.initialized, CUDA_ERROR_NOT_INITIALIZED, "cuInit has not been called");
  if (s.conn) {
    runtime_session(true);  // the runtime's queued work first (it borrowed this session)
    return *s.conn;
  }
  client::Connection* c = runtime_session(true);
  require(c != nullptr, CUDA_ERROR_DEINITIALIZED, "the runtime's session is gone (cudaDeviceReset)");
  return *c;
}

// Whether the runtime shares this process's session: its primary context
// is then current on a thread that has none, as on CUDA after a runtime call.
bool runtime_active() { return runtime_session(false) != nullptr; }

void check_device(CUdevice dev) {
  device();
  require(dev == 0, CUDA_ERROR_INVALID_DEVICE,
          "device " + std::to_string(dev) + " does not exist (qgpu has one device, 0)");
}

// The connection, for calls that need a current context that is still usable.
client::Connection& context() {
  client::Connection& c = device();
  State& s = state();
  if (current == nullptr && pushed.empty() && runtime_active()) {
    if (s.primary_refs++ == 0) s.contexts.insert(&s.primary);
    current = &s.primary;
  }
  require(current != nullptr && s.contexts.count(current), CUDA_ERROR_INVALID_CONTEXT,
          "no current context (call cuCtxCreate, or cuDevicePrimaryCtxRetain and cuCtxSetCurrent)");
  require(s.sticky == CUDA_SUCCESS, s.sticky,
          "the context is unusable after an earlier kernel failure: " + s.sticky_message);
  return c;
}

CUmod_st* module_of(CUmodule m) {
  require(m && state().modules.count(m), CUDA_ERROR_INVALID_HANDLE, "not a loaded module");
  return m;
}

CUfunc_st* function_of(CUfunction f) {
  require(f && state().modules.count(f->module), CUDA_ERROR_INVALID_HANDLE,
          "not a function of a loaded module");
  return f;
}

// Loads every PTX module of an image; on failure nothing stays loaded.
CUmod_st* load(const void* image) {
  client::Connection& c = context();
  auto mod = std::make_unique<CUmod_st>();
  try {
    for (const std::string& ptx : ptx_modules(image)) mod->images.push_back(c.load_module(ptx));
  } catch (...) {
    for (const proto::ModuleImage& m : mod->images) c.unload_module(m.id);
    throw;
  }
  state().modules.insert(mod.get());
  return mod.release();
}

// Packs a launch's parameters as the kernel's .entry signature lays them out.
std::vector<uint8_t> pack_params(const CUfunc_st& f, void** params, void** extra) {
  const auto& layout = f.layout;
  std::vector<uint8_t> buf(layout.param_bytes());
  const std::string count = std::to_string(layout.params.size()) + " parameter" +
                            (layout.params.size() == 1 ? "" : "s");
  require(!(params && extra), CUDA_ERROR_INVALID_VALUE,
          "pass the parameters in kernelParams or in extra, not both");
  if (params) {
    for (size_t i = 0; i < layout.params.size(); ++i) {
      require(params[i] != nullptr, CUDA_ERROR_INVALID_VALUE,
              "kernelParams[" + std::to_string(i) + "] of '" + layout.name + "' is NULL");
      std::memcpy(buf.data() + layout.params[i].offset, params[i], layout.params[i].size);
    }
    return buf;
  }
  if (extra) {
    const void* data = nullptr;
    size_t size = 0;
    bool has_size = false;
    for (size_t i = 0; extra[i] != CU_LAUNCH_PARAM_END; i += 2) {
      if (extra[i] == CU_LAUNCH_PARAM_BUFFER_POINTER) {
        data = extra[i + 1];
      } else if (extra[i] == CU_LAUNCH_PARAM_BUFFER_SIZE) {
        size = *static_cast<size_t*>(extra[i + 1]);
        has_size = true;
      } else {
        throw DriverError(CUDA_ERROR_INVALID_VALUE, "unknown entry in extra");
      }
    }
    require(data && has_size, CUDA_ERROR_INVALID_VALUE,
            "extra needs CU_LAUNCH_PARAM_BUFFER_POINTER and CU_LAUNCH_PARAM_BUFFER_SIZE");
    require(size == buf.size(), CUDA_ERROR_INVALID_VALUE,
            "kernel '" + layout.name + "' takes " + count + " in " + std::to_string(buf.size()) +
                " bytes; the launch passed " + std::to_string(size) + " bytes");
    std::memcpy(buf.data(), data, size);
    return buf;
  }
  require(layout.params.empty(), CUDA_ERROR_INVALID_VALUE,
          "kernel '" + layout.name + "' takes " + count + "; the launch passed none");
  return buf;
}

bool sticky_error(CUresult r) {
  return r == CUDA_ERROR_ILLEGAL_ADDRESS || r == CUDA_ERROR_ASSERT || r == CUDA_ERROR_LAUNCH_FAILED ||
         r == CUDA_ERROR_LAUNCH_TIMEOUT;
}

}  // namespace
}  // namespace qgpu::driver

using namespace qgpu::driver;
using qgpu::client::Connection;

// ------------------------------------------------------------ initialisation
QGPU_CU_API CUresult CUDAAPI cuInit(unsigned int flags) {
  return api("cuInit", [&] {
    require(flags == 0, CUDA_ERROR_INVALID_VALUE, "flags must be 0");
    State& s = state();
    if (s.initialized) return;
    if (!runtime_session(false)) {  // else the runtime's session serves both
      qgpu::client::Options o;
      char exe[256] = {};
      if (readlink("/proc/self/exe", exe, sizeof exe - 1) > 0) o.program = exe;
      s.conn = Connection::open(o);
    }
    s.initialized = true;
  });
}

QGPU_CU_API CUresult CUDAAPI cuDriverGetVersion(int* version) {
  return api("cuDriverGetVersion", [&] {
    require(version != nullptr, CUDA_ERROR_INVALID_VALUE, "version is NULL");
    *version = CUDA_VERSION;
  });
}

// ------------------------------------------------------------------- devices
QGPU_CU_API CUresult CUDAAPI cuDeviceGetCount(int* count) {
  return api("cuDeviceGetCount", [&] {
    require(count != nullptr, CUDA_ERROR_INVALID_VALUE, "count is NULL");
    device();
    *count = 1;
  });
}

QGPU_CU_API CUresult CUDAAPI cuDeviceGet(CUdevice* dev, int ordinal) {
  return api("cuDeviceGet", [&] {
    require(dev != nullptr, CUDA_ERROR_INVALID_VALUE, "device is NULL");
    check_device(ordinal);
    *dev = 0;
  });
}

QGPU_CU_API CUresult CUDAAPI cuDeviceGetName(char* name, int len, CUdevice dev) {
  return api("cuDeviceGetName", [&] {
    require(name != nullptr && len > 0, CUDA_ERROR_INVALID_VALUE, "name buffer is NULL or empty");
    check_device(dev);
    std::snprintf(name, size_t(len), "%s", device().device().device_name.c_str());
  });
}

QGPU_CU_API CUresult CUDAAPI cuDeviceTotalMem_v2(size_t* bytes, CUdevice dev) {
  return api("cuDeviceTotalMem", [&] {
    require(bytes != nullptr, CUDA_ERROR_INVALID_VALUE, "bytes is NULL");
    check_device(dev);
    *bytes = device().device().global_bytes;
  });
}

QGPU_CU_API CUresult CUDAAPI cuDeviceGetAttribute(int* value, CUdevice_attribute attr, CUdevice dev) {
  return api("cuDeviceGetAttribute", [&] {
    require(value != nullptr, CUDA_ERROR_INVALID_VALUE, "value is NULL");
    require(attr > 0 && attr < CU_DEVICE_ATTRIBUTE_MAX, CUDA_ERROR_INVALID_VALUE,
            "unknown attribute " + std::to_string(int(attr)));
    check_device(dev);
    const qgpu::proto::DeviceInfo& d = device().device();
    switch (attr) {
      case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *value = int(d.max_threads_per_cta); break;
      case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X: *value = int(d.max_block[0]); break;
      case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y: *value = int(d.max_block[1]); break;
      case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z: *value = int(d.max_block[2]); break;
      case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X: *value = int(d.max_grid[0]); break;
      case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y: *value = int(d.max_grid[1]); break;
      case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z: *value = int(d.max_grid[2]); break;
      case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK: *value = int(d.shared_bytes_per_cta); break;
      case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR:
      case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN:
        *value = int(d.shared_optin_bytes_per_cta);
        break;
      case CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY: *value = int(d.const_bytes); break;
      case CU_DEVICE_ATTRIBUTE_WARP_SIZE: *value = int(d.warp_size); break;
      case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK:
      case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR:
        *value = int(d.registers_per_cta());
        break;
      case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR: *value = int(d.max_threads_per_cta); break;
      case CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR: *value = 1; break;
      case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: *value = int(d.multiprocessors()); break;
      case CU_DEVICE_ATTRIBUTE_CLOCK_RATE: *value = int(d.clock_khz); break;  // kHz: how fast clock() advances
      case CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE: *value = 1000; break;      // kHz: a figure; memory has no clock

      case CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH: *value = 32; break;
      case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: *value = kMajor; break;
      case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: *value = kMinor; break;
      case CU_DEVICE_ATTRIBUTE_MAX_PITCH: *value = int(std::min<uint64_t>(d.global_bytes, INT32_MAX)); break;
      case CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT: *value = 256; break;
      case CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING: *value = 1; break;
      case CU_DEVICE_ATTRIBUTE_COMPUTE_MODE: *value = CU_COMPUTEMODE_DEFAULT; break;
      case CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH: *value = d.cooperative_ctas > 0; break;
      // The L2 the device declares; hints about it change no result.
      case CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE: *value = int(d.l2_bytes); break;
      case CU_DEVICE_ATTRIBUTE_MAX_PERSISTING_L2_CACHE_SIZE: *value = int(d.persisting_l2_max_bytes); break;
      case CU_DEVICE_ATTRIBUTE_MAX_ACCESS_POLICY_WINDOW_SIZE: *value = int(d.access_policy_max_window_bytes); break;
      // cuMemAddressReserve/cuMemCreate/cuMemMap (below); no shareable
      // handles, no compression (a compressible cuMemCreate gets ordinary
      // memory, as on a GPU without it).
      case CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED: *value = 1; break;
      default: *value = 0; break;  // features the machine does not have
    }
  });
}

// cuDeviceComputeCapability (deprecated in cuda.h, and still called by
// programs), under a name the entry table can take without a warning.
namespace {
CUresult compute_capability(int* major, int* minor, CUdevice dev) {
  return api("cuDeviceComputeCapability", [&] {
    require(major && minor, CUDA_ERROR_INVALID_VALUE, "major or minor is NULL");
    check_device(dev);
    *major = kMajor;
    *minor = kMinor;
  });
}
}  // namespace

QGPU_CU_API CUresult CUDAAPI cuDeviceComputeCapability(int* major, int* minor, CUdevice dev) {
  return compute_capability(major, minor, dev);
}

// ------------------------------------------------------------------ contexts
QGPU_CU_API CUresult CUDAAPI cuDevicePrimaryCtxRetain(CUcontext* ctx, CUdevice dev) {
  return api("cuDevicePrimaryCtxRetain", [&] {
    require(ctx != nullptr, CUDA_ERROR_INVALID_VALUE, "context is NULL");
    check_device(dev);
    State& s = state();
    ++s.primary_refs;
    s.contexts.insert(&s.primary);
    *ctx = &s.primary;
  });
}

QGPU_CU_API CUresult CUDAAPI cuDevicePrimaryCtxRelease_v2(CUdevice dev) {
  return api("cuDevicePrimaryCtxRelease", [&] {
    check_device(dev);
    State& s = state();
    require(s.primary_refs > 0, CUDA_ERROR_INVALID_CONTEXT, "the primary context is not retained");
    if (--s.primary_refs == 0) {
      s.contexts.erase(&s.primary);
      if (current == &s.primary) current = nullptr;
    }
  });
}

QGPU_CU_API CUresult CUDAAPI cuCtxCreate_v4(CUcontext* ctx, CUctxCreateParams* params,
                                            unsigned int flags, CUdevice dev) {
  (void)params;  // execution affinity and CIG settings do not apply to the machine
  (void)flags;   // scheduling flags: every call is synchronous anyway
  return api("cuCtxCreate", [&] {
    require(ctx != nullptr, CUDA_ERROR_INVALID_VALUE, "context is NULL");
    check_device(dev);
    auto* c = new CUctx_st;
    state().contexts.insert(c);
    if (current) pushed.push_back(current);  // pushed onto the thread's stack
    current = c;
    *ctx = c;
  });
}

// The CUDA 4-11 form, which programs built against older headers (or
// loading libcuda with dlopen) call: no creation parameters.
QGPU_CU_API CUresult CUDAAPI cuCtxCreate_v2(CUcontext* ctx, unsigned int flags, CUdevice dev) {
  return cuCtxCreate_v4(ctx, nullptr, flags, dev);
}

QGPU_CU_API CUresult CUDAAPI cuCtxDestroy_v2(CUcontext ctx) {
  return api("cuCtxDestroy", [&] {
    State& s = state();
    require(ctx && ctx != &s.primary && s.contexts.count(ctx), CUDA_ERROR_INVALID_CONTEXT,
            "not a context created by cuCtxCreate");
    s.contexts.erase(ctx);
    if (current == ctx) {  // popped off the thread's stack
      current = nullptr;
      if (!pushed.empty()) {
        current = pushed.back();
        pushed.pop_back();
      }
    }
    delete ctx;
  });
}

QGPU_CU_API CUresult CUDAAPI cuCtxGetCurrent(CUcontext* ctx) {
  return api("cuCtxGetCurrent", [&] {
    require(ctx != nullptr, CUDA_ERROR_INVALID_VALUE, "context is NULL");
    device();
    if (current == nullptr && pushed.empty() && runtime_active()) context();  // the runtime's primary context
    *ctx = current;
  });
}

QGPU_CU_API CUresult CUDAAPI cuCtxSetCurrent(CUcontext ctx) {
  return api("cuCtxSetCurrent", [&] {
    device();
    require(!ctx || state().contexts.count(ctx), CUDA_ERROR_INVALID_CONTEXT, "not a live context");
    current = ctx;
  });
}

QGPU_CU_API CUresult CUDAAPI cuCtxPushCurrent_v2(CUcontext ctx) {
  return api("cuCtxPushCurrent", [&] {
    device();
    require(ctx && state().contexts.count(ctx), CUDA_ERROR_INVALID_CONTEXT, "not a live context");
    if (current) pushed.push_back(current);
    current = ctx;
  });
}

QGPU_CU_API CUresult CUDAAPI cuCtxPopCurrent_v2(CUcontext* ctx) {
  return api("cuCtxPopCurrent", [&] {
    device();
    require(current != nullptr, CUDA_ERROR_INVALID_CONTEXT, "the calling thread has no current context to pop");
    if (ctx) *ctx = current;
    current = nullptr;
    if (!pushed.empty()) {
      current = pushed.back();
      pushed.pop_back();
    }
  });
}

QGPU_CU_API CUresult CUDAAPI cuCtxGetDevice(CUdevice* dev) {
  return api("cuCtxGetDevice", [&] {
    require(dev != nullptr, CUDA_ERROR_INVALID_VALUE, "device is NULL");
    context();
    *dev = 0;
  });
}

QGPU_CU_API CUresult CUDAAPI cuCtxSynchronize() {
  return api("cuCtxSynchronize", [&] { context(); });
}

// Persisting L2 lines: memory is flat, there are none to demote.
QGPU_CU_API CUresult CUDAAPI cuCtxResetPersistingL2Cache() {
  return api("cuCtxResetPersistingL2Cache", [&] { context(); });
}

// Stream attributes: an access-policy window is checked against the device
// and kept to be read back (a hint: it changes no result); the others are
// accepted and read back as their defaults.
namespace {
void stream_attribute(const char* entry, CUstream s, CUstreamAttrID attr, CUstreamAttrValue* get,
                      const CUstreamAttrValue* set) {
  require((get ? (void*)get : (const void*)set) != nullptr, CUDA_ERROR_INVALID_VALUE, "value is NULL");
  const qgpu::proto::DeviceInfo& d = context().device();
  State& st = state();
  if (attr != CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW) {
    require(attr == CU_LAUNCH_ATTRIBUTE_SYNCHRONIZATION_POLICY || attr == CU_LAUNCH_ATTRIBUTE_PRIORITY ||
                attr == CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN,
            CUDA_ERROR_INVALID_VALUE, std::string(entry) + ": attribute " + std::to_string(int(attr)) +
                                          " is not a stream attribute qgpu keeps");
    if (get) *get = CUstreamAttrValue{};
    return;
  }
  if (get) {
    auto it = st.stream_windows.find(s);
    *get = CUstreamAttrValue{};
    if (it != st.stream_windows.end()) get->accessPolicyWindow = it->second;
    return;
  }
  const CUaccessPolicyWindow& w = set->accessPolicyWindow;
  require(w.num_bytes <= d.access_policy_max_window_bytes, CUDA_ERROR_INVALID_VALUE,
          "an access-policy window of " + std::to_string(w.num_bytes) +
              " bytes; the device's CU_DEVICE_ATTRIBUTE_MAX_ACCESS_POLICY_WINDOW_SIZE is " +
              std::to_string(d.access_policy_max_window_bytes));
  require(w.hitRatio >= 0.f && w.hitRatio <= 1.f, CUDA_ERROR_INVALID_VALUE, "hitRatio must be in [0, 1]");
  st.stream_windows[s] = w;
}
}  // namespace

QGPU_CU_API CUresult CUDAAPI cuStreamSetAttribute(CUstream s, CUstreamAttrID attr, const CUstreamAttrValue* value) {
  return api("cuStreamSetAttribute", [&] { stream_attribute("cuStreamSetAttribute", s, attr, nullptr, value); });
}
QGPU_CU_API CUresult CUDAAPI cuStreamGetAttribute(CUstream s, CUstreamAttrID attr, CUstreamAttrValue* value) {
  return api("cuStreamGetAttribute", [&] { stream_attribute("cuStreamGetAttribute", s, attr, value, nullptr); });
}

// -------------------------------------------------------------------- memory
QGPU_CU_API CUresult CUDAAPI cuMemAlloc_v2(CUdeviceptr* ptr, size_t bytes) {
  return api("cuMemAlloc", [&] {
    require(ptr != nullptr, CUDA_ERROR_INVALID_VALUE, "pointer is NULL");
    require(bytes > 0, CUDA_ERROR_INVALID_VALUE, "size is 0");
    *ptr = context().malloc(bytes);
  });
}

QGPU_CU_API CUresult CUDAAPI cuMemFree_v2(CUdeviceptr ptr) {
  return api("cuMemFree", [&] {
    Connection& c = context();
    if (ptr) c.free(ptr);
  });
}

// ------------------------------------------------- virtual memory management
// Device memory is one flat 32-bit space: cuMemAddressReserve carves a range
// from the device allocator (so a reservation uses device memory, and
// cuMemGetInfo counts it), cuMemCreate describes a physical allocation, and
// cuMemMap gives it the reserved range as its backing.  What that cannot
// express is refused with CUDA_ERROR_NOT_SUPPORTED: a physical allocation
// mapped at a second address, or in part (offset, or a size other than
// its own).  A physical allocation unmapped while still held keeps its bytes
// (the shim saves them) for its next mapping.  Access rights are kept and
// read back; they are not enforced on kernels (an access to reserved memory
// that is not mapped, or mapped without access, reads the range's bytes
// instead of faulting).
namespace {

size_t vmm_granularity(const qgpu::proto::DeviceInfo& d) {
  // A GPU's 2 MiB, less on a small device: 1/1024 of its memory, at least 4 KiB.
  size_t g = 4096;
  while (g < (2u << 20) && g * 2 <= d.global_bytes / 1024) g *= 2;
  return g;
}

void check_prop(const CUmemAllocationProp* prop) {
  require(prop != nullptr, CUDA_ERROR_INVALID_VALUE, "prop is NULL");
  require(prop->type == CU_MEM_ALLOCATION_TYPE_PINNED, CUDA_ERROR_INVALID_VALUE,
          "allocation type " + std::to_string(int(prop->type)) + ": only CU_MEM_ALLOCATION_TYPE_PINNED is supported");
  require(prop->location.type == CU_MEM_LOCATION_TYPE_DEVICE && prop->location.id == 0, CUDA_ERROR_INVALID_DEVICE,
          "the location must be device 0 (CU_MEM_LOCATION_TYPE_DEVICE), the one device");
  require(prop->requestedHandleTypes == CU_MEM_HANDLE_TYPE_NONE, CUDA_ERROR_NOT_SUPPORTED,
          "shareable handle types (requestedHandleTypes " + std::to_string(int(prop->requestedHandleTypes)) +
              ") are not supported by qgpu: memory is not shared between processes");
}

State::Physical& physical_of(CUmemGenericAllocationHandle h) {
  State& s = state();
  auto it = s.physical.find(h);
  require(it != s.physical.end() && it->second.refs > 0, CUDA_ERROR_INVALID_VALUE,
          "the handle is not a live physical allocation (never created, or released)");
  return it->second;
}

// The reservation holding [ptr, ptr + size), or nullptr.
const State::Reservation* reservation_of(CUdeviceptr ptr, size_t size) {
  State& s = state();
  auto it = s.reservations.upper_bound(ptr);
  if (it == s.reservations.begin()) return nullptr;
  --it;
  return ptr + size <= it->first + it->second.size ? &it->second : nullptr;
}

// The mappings overlapping [ptr, ptr + size).
std::vector<std::map<CUdeviceptr, State::Mapping>::iterator> mappings_in(CUdeviceptr ptr, size_t size) {
  State& s = state();
  std::vector<std::map<CUdeviceptr, State::Mapping>::iterator> out;
  auto it = s.mappings.upper_bound(ptr);
  if (it != s.mappings.begin() && std::prev(it)->first + std::prev(it)->second.size > ptr) --it;
  for (; it != s.mappings.end() && it->first < ptr + size; ++it) out.push_back(it);
  return out;
}

}  // namespace

QGPU_CU_API CUresult CUDAAPI cuMemGetAllocationGranularity(size_t* granularity, const CUmemAllocationProp* prop,
                                                           CUmemAllocationGranularity_flags option) {
  return api("cuMemGetAllocationGranularity", [&] {
    require(granularity != nullptr, CUDA_ERROR_INVALID_VALUE, "granularity is NULL");
    check_prop(prop);
    require(option == CU_MEM_ALLOC_GRANULARITY_MINIMUM || option == CU_MEM_ALLOC_GRANULARITY_RECOMMENDED,
            CUDA_ERROR_INVALID_VALUE, "unknown granularity option " + std::to_string(int(option)));
    *granularity = vmm_granularity(context().device());
  });
}

QGPU_CU_API CUresult CUDAAPI cuMemAddressReserve(CUdeviceptr* ptr, size_t size, size_t alignment, CUdeviceptr,
                                                 unsigned long long flags) {
  return api("cuMemAddressReserve", [&] {
    require(ptr != nullptr, CUDA_ERROR_INVALID_VALUE, "ptr is NULL");
    Connection& c = context();
    const size_t g = vmm_granularity(c.device());
    require(size > 0 && size % g == 0, CUDA_ERROR_INVALID_VALUE,
            "size " + std::to_string(size) + " is not a positive multiple of the granularity, " + std::to_string(g));
    require(alignment == 0 || (alignment & (alignment - 1)) == 0, CUDA_ERROR_INVALID_VALUE,
            "alignment " + std::to_string(alignment) + " is not a power of two");
    require(flags == 0, CUDA_ERROR_INVALID_VALUE, "flags must be 0");
    // The requested address is a hint (as on a GPU, which may place the
    // range elsewhere): the range is where the allocator has room.
    const size_t align = std::max(alignment, g);
    require(size <= c.device().global_bytes, CUDA_ERROR_OUT_OF_MEMORY,
            "a reservation of " + std::to_string(size) + " bytes: reserved ranges are device memory here, and the "
            "device has " + std::to_string(c.device().global_bytes));
    const CUdeviceptr alloc = c.malloc(size + align - 256);  // the allocator aligns to 256
    const CUdeviceptr start = (alloc + align - 1) / align * align;
    state().reservations[start] = {alloc, size};
    *ptr = start;
  });
}

QGPU_CU_API CUresult CUDAAPI cuMemAddressFree(CUdeviceptr ptr, size_t size) {
  return api("cuMemAddressFree", [&] {
    Connection& c = context();
    State& s = state();
    auto it = s.reservations.find(ptr);
    require(it != s.reservations.end() && it->second.size == size, CUDA_ERROR_INVALID_VALUE,
            "[ptr, ptr + size) is not a range cuMemAddressReserve returned");
    require(mappings_in(ptr, size).empty(), CUDA_ERROR_INVALID_VALUE,
            "the range still has mappings: cuMemUnmap them first");
    c.free(it->second.alloc);
    s.reservations.erase(it);
  });
}

QGPU_CU_API CUresult CUDAAPI cuMemCreate(CUmemGenericAllocationHandle* handle, size_t size,
                                         const CUmemAllocationProp* prop, unsigned long long flags) {
  return api("cuMemCreate", [&] {
    require(handle != nullptr, CUDA_ERROR_INVALID_VALUE, "handle is NULL");
    check_prop(prop);
    require(flags == 0, CUDA_ERROR_INVALID_VALUE, "flags must be 0");
    const size_t g = vmm_granularity(context().device());
    require(size > 0 && size % g == 0, CUDA_ERROR_INVALID_VALUE,
            "size " + std::to_string(size) + " is not a positive multiple of the granularity, " + std::to_string(g));
    State& s = state();
    State::Physical p;
    p.prop = *prop;
    // No compression on this device (CU_DEVICE_ATTRIBUTE_GENERIC_COMPRESSION_SUPPORTED
    // is 0): a compressible request gets ordinary memory, as on such a GPU.
    p.prop.allocFlags.compressionType = 0;
    p.size = size;
    *handle = s.next_handle++;
    s.physical[*handle] = std::move(p);
  });
}

QGPU_CU_API CUresult CUDAAPI cuMemRelease(CUmemGenericAllocationHandle handle) {
  return api("cuMemRelease", [&] {
    context();
    State& s = state();
    State::Physical& p = physical_of(handle);
    if (--p.refs == 0 && !p.mapped_at) s.physical.erase(handle);  // else gone once unmapped
  });
}

QGPU_CU_API CUresult CUDAAPI cuMemGetAllocationPropertiesFromHandle(CUmemAllocationProp* prop,
                                                                    CUmemGenericAllocationHandle handle) {
  return api("cuMemGetAllocationPropertiesFromHandle", [&] {
    require(prop != nullptr, CUDA_ERROR_INVALID_VALUE, "prop is NULL");
    context();
    *prop = physical_of(handle).prop;
  });
}

QGPU_CU_API CUresult CUDAAPI cuMemMap(CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle handle,
                                      unsigned long long flags) {
  return api("cuMemMap", [&] {
    Connection& c = context();
    State& s = state();
    require(flags == 0, CUDA_ERROR_INVALID_VALUE, "flags must be 0");
    State::Physical& p = physical_of(handle);
    const size_t g = vmm_granularity(c.device());
    require(ptr % g == 0 && size > 0 && size % g == 0, CUDA_ERROR_INVALID_VALUE,
            "ptr and size must be multiples of the granularity, " + std::to_string(g));
    require(reservation_of(ptr, size) != nullptr, CUDA_ERROR_INVALID_VALUE,
            "[ptr, ptr + size) is not inside one range of cuMemAddressReserve");
    require(mappings_in(ptr, size).empty(), CUDA_ERROR_INVALID_VALUE, "[ptr, ptr + size) is already mapped");
    require(p.mapped_at == 0, CUDA_ERROR_NOT_SUPPORTED,
            "the physical allocation is already mapped at 0x" + [&] {
              char b[24];
              std::snprintf(b, sizeof b, "%llx", (unsigned long long)p.mapped_at);
              return std::string(b);
            }() + ": qgpu's device memory is flat, so one physical allocation has one address; "
                  "cuMemUnmap it first, or create a second allocation and copy");
    require(offset == 0 && size == p.size, CUDA_ERROR_NOT_SUPPORTED,
            "mapping part of a physical allocation (offset " + std::to_string(offset) + ", size " +
                std::to_string(size) + " of " + std::to_string(p.size) +
                ") is not supported by qgpu: map the whole allocation, or create one per part");
    if (!p.saved.empty()) {
      c.write(ptr, p.saved.data(), p.saved.size());  // its bytes from its last mapping
      p.saved.clear();
      p.saved.shrink_to_fit();
    }
    p.mapped_at = ptr;
    s.mappings[ptr] = {size, handle, CU_MEM_ACCESS_FLAGS_PROT_NONE};
  });
}

QGPU_CU_API CUresult CUDAAPI cuMemUnmap(CUdeviceptr ptr, size_t size) {
  return api("cuMemUnmap", [&] {
    Connection& c = context();
    State& s = state();
    auto ms = mappings_in(ptr, size);
    require(!ms.empty(), CUDA_ERROR_INVALID_VALUE, "nothing is mapped in [ptr, ptr + size)");
    for (auto& m : ms)
      require(m->first >= ptr && m->first + m->second.size <= ptr + size, CUDA_ERROR_INVALID_VALUE,
              "[ptr, ptr + size) covers part of a mapping: unmap whole mappings");
    for (auto& m : ms) {
      State::Physical& p = s.physical.at(m->second.handle);
      if (p.refs == 0) {
        s.physical.erase(m->second.handle);
      } else {
        p.saved.resize(p.size);  // kept for its next mapping
        c.read(p.saved.data(), m->first, p.size);
        p.mapped_at = 0;
      }
      s.mappings.erase(m);
    }
  });
}

QGPU_CU_API CUresult CUDAAPI cuMemSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc* desc, size_t count) {
  return api("cuMemSetAccess", [&] {
    context();
    require(desc != nullptr && count > 0, CUDA_ERROR_INVALID_VALUE, "no access descriptors");
    unsigned long long flags = CU_MEM_ACCESS_FLAGS_PROT_NONE;
    for (size_t i = 0; i < count; ++i) {
      require(desc[i].location.type == CU_MEM_LOCATION_TYPE_DEVICE && desc[i].location.id == 0,
              CUDA_ERROR_INVALID_DEVICE, "an access descriptor's location must be device 0");
      require(desc[i].flags == CU_MEM_ACCESS_FLAGS_PROT_NONE || desc[i].flags == CU_MEM_ACCESS_FLAGS_PROT_READ ||
                  desc[i].flags == CU_MEM_ACCESS_FLAGS_PROT_READWRITE,
              CUDA_ERROR_INVALID_VALUE, "unknown access flags " + std::to_string(int(desc[i].flags)));
      flags = desc[i].flags;
    }
    auto ms = mappings_in(ptr, size);
    CUdeviceptr covered = ptr;
    for (auto& m : ms) {
      require(m->first <= covered, CUDA_ERROR_INVALID_VALUE, "[ptr, ptr + size) is not mapped throughout");
      covered = m->first + m->second.size;
    }
    require(!ms.empty() && covered >= ptr + size, CUDA_ERROR_INVALID_VALUE,
            "[ptr, ptr + size) is not mapped throughout");
    for (auto& m : ms) m->second.access = flags;
  });
}

QGPU_CU_API CUresult CUDAAPI cuMemGetAccess(unsigned long long* flags, const CUmemLocation* location, CUdeviceptr ptr) {
  return api("cuMemGetAccess", [&] {
    context();
    require(flags != nullptr && location != nullptr, CUDA_ERROR_INVALID_VALUE, "flags or location is NULL");
    require(location->type == CU_MEM_LOCATION_TYPE_DEVICE && location->id == 0, CUDA_ERROR_INVALID_DEVICE,
            "the location must be device 0");
    auto ms = mappings_in(ptr, 1);
    require(!ms.empty(), CUDA_ERROR_INVALID_VALUE, "ptr is not mapped");
    *flags = ms[0]->second.access;
  });
}

QGPU_CU_API CUresult CUDAAPI cuMemRetainAllocationHandle(CUmemGenericAllocationHandle* handle, void* addr) {
  return api("cuMemRetainAllocationHandle", [&] {
    context();
    require(handle != nullptr, CUDA_ERROR_INVALID_VALUE, "handle is NULL");
    auto ms = mappings_in(CUdeviceptr(addr), 1);
    require(!ms.empty() && ms[0]->first == CUdeviceptr(addr), CUDA_ERROR_INVALID_VALUE,
            "addr is not the start of a mapping");
    ++state().physical.at(ms[0]->second.handle).refs;
    *handle = ms[0]->second.handle;
  });
}

QGPU_CU_API CUresult CUDAAPI cuMemGetInfo_v2(size_t* free_bytes, size_t* total_bytes) {
  return api("cuMemGetInfo", [&] {
    require(free_bytes && total_bytes, CUDA_ERROR_INVALID_VALUE, "free or total is NULL");
    uint64_t f = 0, t = 0;
    context().mem_info(&f, &t);
    *free_bytes = f;
    *total_bytes = t;
  });
}

QGPU_CU_API CUresult CUDAAPI cuMemcpyHtoD_v2(CUdeviceptr dst, const void* src, size_t bytes) {
  return api("cuMemcpyHtoD", [&] {
    require(src || bytes == 0, CUDA_ERROR_INVALID_VALUE, "source is NULL");
    if (bytes) context().write(dst, src, bytes);
  });
}

QGPU_CU_API CUresult CUDAAPI cuMemcpyDtoH_v2(void* dst, CUdeviceptr src, size_t bytes) {
  return api("cuMemcpyDtoH", [&] {
    require(dst || bytes == 0, CUDA_ERROR_INVALID_VALUE, "destination is NULL");
    if (bytes) context().read(dst, src, bytes);
  });
}

QGPU_CU_API CUresult CUDAAPI cuMemcpyDtoD_v2(CUdeviceptr dst, CUdeviceptr src, size_t bytes) {
  return api("cuMemcpyDtoD", [&] {
    if (bytes) context().copy(dst, src, bytes);
  });
}

QGPU_CU_API CUresult CUDAAPI cuMemsetD8_v2(CUdeviceptr dst, unsigned char value, size_t count) {
  return api("cuMemsetD8", [&] {
    if (count) context().memset(dst, value, count);
  });
}

QGPU_CU_API CUresult CUDAAPI cuMemsetD32_v2(CUdeviceptr dst, unsigned int value, size_t count) {
  return api("cuMemsetD32", [&] {
    require(dst % 4 == 0, CUDA_ERROR_INVALID_VALUE, "destination is not 4-byte aligned");
    if (!count) return;
    Connection& c = context();
    const unsigned int byte = value & 0xff;
    if (value == byte * 0x01010101u) {
      c.memset(dst, uint8_t(byte), count * 4);
    } else {
      std::vector<unsigned int> words(count, value);
      c.write(dst, words.data(), count * 4);
    }
  });
}

// ---------------------------------------------- arrays, 2D/3D copies, texture objects
// A CUDA array is device memory in the layout of model_host/launch/texture.h
// (texels in packed rows, rows in packed slices); a texture or surface
// object is the device address of the 64-byte descriptor written at its
// creation (docs/isa.md section 8.3), as in the runtime.
struct CUarray_st {
  CUdeviceptr dev = 0;
  CUarray_format format{};
  unsigned channels = 1, bytes = 4, flags = 0;
  size_t width = 0, height = 0, depth = 0;  // as created
  size_t pitch = 0, rows = 1, slices = 1;
};

namespace {
std::set<CUarray_st*> g_arrays;
std::set<CUdeviceptr> g_objects;

unsigned format_bytes(CUarray_format f) {
  switch (f) {
    case CU_AD_FORMAT_UNSIGNED_INT8: case CU_AD_FORMAT_SIGNED_INT8: return 1;
    case CU_AD_FORMAT_UNSIGNED_INT16: case CU_AD_FORMAT_SIGNED_INT16: case CU_AD_FORMAT_HALF: return 2;
    case CU_AD_FORMAT_UNSIGNED_INT32: case CU_AD_FORMAT_SIGNED_INT32: case CU_AD_FORMAT_FLOAT: return 4;
    default: throw DriverError(CUDA_ERROR_INVALID_VALUE, "array format " + std::to_string(int(f)) +
                                                             ": qgpu takes 8/16/32-bit integers, half and float");
  }
}

CUarray make_array(CUarray_format f, unsigned channels, size_t w, size_t h, size_t d, unsigned flags) {
  require(channels == 1 || channels == 2 || channels == 4, CUDA_ERROR_INVALID_VALUE, "arrays have 1, 2 or 4 channels");
  require(w > 0, CUDA_ERROR_INVALID_VALUE, "array width 0");
  auto a = std::make_unique<CUarray_st>();
  a->format = f;
  a->channels = channels;
  a->bytes = format_bytes(f);
  a->flags = flags;
  a->width = w, a->height = h, a->depth = d;
  a->pitch = w * channels * a->bytes;
  a->rows = std::max<size_t>(h, 1);
  a->slices = std::max<size_t>(d, 1);
  a->dev = context().malloc(a->pitch * a->rows * a->slices + 16);
  g_arrays.insert(a.get());
  return a.release();
}

CUarray_st* array_of(CUarray a) {
  require(a && g_arrays.count(a), CUDA_ERROR_INVALID_HANDLE, "not a CUDA array of this context");
  return a;
}

// One side of a 2D/3D copy: host memory, device memory, or an array.
struct Side {
  CUmemorytype type;
  const void* host;
  CUdeviceptr dev;
  size_t pitch, height;  // bytes a row, rows a slice
};
Side side(CUmemorytype t, const void* host, CUdeviceptr dev, CUarray arr, size_t pitch, size_t height) {
  if (t == CU_MEMORYTYPE_ARRAY) {
    CUarray_st* a = array_of(arr);
    return {CU_MEMORYTYPE_DEVICE, nullptr, a->dev, a->pitch, a->rows};
  }
  if (t == CU_MEMORYTYPE_UNIFIED) t = CU_MEMORYTYPE_DEVICE;
  require(t == CU_MEMORYTYPE_HOST || t == CU_MEMORYTYPE_DEVICE, CUDA_ERROR_INVALID_VALUE, "copy memory type");
  return {t, host, dev, pitch, height};
}

void copy_rows(const Side& s, size_t sx, size_t sy, size_t sz, const Side& d, size_t dx, size_t dy, size_t dz,
               size_t width, size_t height, size_t depth) {
  Connection& c = context();
  for (size_t z = 0; z < std::max<size_t>(depth, 1); ++z)
    for (size_t y = 0; y < std::max<size_t>(height, 1); ++y) {
      size_t so = ((sz + z) * s.height + sy + y) * s.pitch + sx, doff = ((dz + z) * d.height + dy + y) * d.pitch + dx;
      const bool sh = s.type == CU_MEMORYTYPE_HOST, dh = d.type == CU_MEMORYTYPE_HOST;
      if (sh && dh) std::memcpy(static_cast<char*>(const_cast<void*>(d.host)) + doff, static_cast<const char*>(s.host) + so, width);
      else if (sh) c.write(d.dev + doff, static_cast<const char*>(s.host) + so, width);
      else if (dh) c.read(static_cast<char*>(const_cast<void*>(d.host)) + doff, s.dev + so, width);
      else c.copy(d.dev + doff, s.dev + so, width);
    }
}

CUdeviceptr make_object(const CUDA_RESOURCE_DESC* r, const CUDA_TEXTURE_DESC* t) {
  namespace T = qgpu::launch::tex;
  require(r != nullptr, CUDA_ERROR_INVALID_VALUE, "resource description is NULL");
  CUarray_format f{};
  unsigned n = 1;
  T::Desc d;
  auto bytes = [&] { return format_bytes(f) * n; };
  switch (r->resType) {
    case CU_RESOURCE_TYPE_ARRAY: {
      CUarray_st* a = array_of(r->res.array.hArray);
      f = a->format, n = a->channels;
      d = T::Desc(a->dev, uint32_t(a->pitch), uint32_t(a->pitch * a->rows), uint32_t(a->width), uint32_t(a->rows),
                  uint32_t(a->slices), 0, bytes());
      break;
    }
    case CU_RESOURCE_TYPE_LINEAR:
      f = r->res.linear.format, n = r->res.linear.numChannels;
      d = T::Desc(r->res.linear.devPtr, uint32_t(r->res.linear.sizeInBytes), uint32_t(r->res.linear.sizeInBytes),
                  uint32_t(r->res.linear.sizeInBytes / bytes()), 1, 1, 0, bytes());
      break;
    case CU_RESOURCE_TYPE_PITCH2D:
      f = r->res.pitch2D.format, n = r->res.pitch2D.numChannels;
      d = T::Desc(r->res.pitch2D.devPtr, uint32_t(r->res.pitch2D.pitchInBytes),
                  uint32_t(r->res.pitch2D.pitchInBytes * r->res.pitch2D.height), uint32_t(r->res.pitch2D.width),
                  uint32_t(r->res.pitch2D.height), 1, 0, bytes());
      break;
    default:
      throw DriverError(CUDA_ERROR_NOT_SUPPORTED, "texture of a mipmapped array: qgpu's resources are arrays, linear and pitched memory");
  }
  const unsigned b = format_bytes(f);
  const bool is_int = f != CU_AD_FORMAT_FLOAT && f != CU_AD_FORMAT_HALF;
  const bool is_signed = f == CU_AD_FORMAT_SIGNED_INT8 || f == CU_AD_FORMAT_SIGNED_INT16 || f == CU_AD_FORMAT_SIGNED_INT32;
  // The driver API reads 8/16-bit integers as normalised floats unless CU_TRSF_READ_AS_INTEGER.
  const bool as_int = !t || (t->flags & CU_TRSF_READ_AS_INTEGER);
  T::Kind kind = b == 4 ? T::kBits
                 : !is_int ? T::kHalf
                 : is_signed ? (as_int ? T::kSigned : T::kSnorm)
                             : (as_int ? T::kUnsigned : T::kUnorm);
  d.w[T::kFormat] = T::format_word(n, b, kind);
  if (t) {
    require(!(t->filterMode == CU_TR_FILTER_MODE_LINEAR && is_int && (as_int || b == 4)), CUDA_ERROR_INVALID_VALUE,
            "linear filtering of integer texels read as integers");
    const bool norm = t->flags & CU_TRSF_NORMALIZED_COORDINATES;
    uint32_t mode = 0;
    for (int k = 0; k < 3; ++k) {
      uint32_t m = uint32_t(t->addressMode[k]) & 3;
      if (!norm && (m == T::kWrap || m == T::kMirror)) m = T::kClamp;
      if (r->resType == CU_RESOURCE_TYPE_LINEAR) m = T::kBorderMode;
      mode |= m << (2 * k);
    }
    if (t->filterMode == CU_TR_FILTER_MODE_LINEAR) mode |= T::kLinear;
    if (norm) mode |= T::kNormalized;
    d.w[T::kMode] = mode;
    for (int k = 0; k < 4; ++k)
      d.w[T::kBorder + k] = r->resType == CU_RESOURCE_TYPE_LINEAR ? 0 : T::f32_bits(t->borderColor[k]);
  }
  Connection& c = context();
  CUdeviceptr at = c.malloc(T::kDescBytes);
  c.write(at, d.w, T::kDescBytes);
  g_objects.insert(at);
  return at;
}
}  // namespace

QGPU_CU_API CUresult CUDAAPI cuArrayCreate_v2(CUarray* out, const CUDA_ARRAY_DESCRIPTOR* d) {
  return api("cuArrayCreate", [&] {
    require(out && d, CUDA_ERROR_INVALID_VALUE, "array or descriptor is NULL");
    *out = make_array(d->Format, d->NumChannels, d->Width, d->Height, 0, 0);
  });
}

QGPU_CU_API CUresult CUDAAPI cuArray3DCreate_v2(CUarray* out, const CUDA_ARRAY3D_DESCRIPTOR* d) {
  return api("cuArray3DCreate", [&] {
    require(out && d, CUDA_ERROR_INVALID_VALUE, "array or descriptor is NULL");
    *out = make_array(d->Format, d->NumChannels, d->Width, d->Height, d->Depth, d->Flags);
  });
}

QGPU_CU_API CUresult CUDAAPI cuArrayDestroy(CUarray a) {
  return api("cuArrayDestroy", [&] {
    CUarray_st* p = array_of(a);
    context().free(p->dev);
    g_arrays.erase(p);
    delete p;
  });
}

QGPU_CU_API CUresult CUDAAPI cuArrayGetDescriptor_v2(CUDA_ARRAY_DESCRIPTOR* d, CUarray a) {
  return api("cuArrayGetDescriptor", [&] {
    require(d != nullptr, CUDA_ERROR_INVALID_VALUE, "descriptor is NULL");
    CUarray_st* p = array_of(a);
    d->Format = p->format;
    d->NumChannels = p->channels;
    d->Width = p->width;
    d->Height = p->height;
  });
}

QGPU_CU_API CUresult CUDAAPI cuMemcpy2D_v2(const CUDA_MEMCPY2D* p) {
  return api("cuMemcpy2D", [&] {
    require(p != nullptr, CUDA_ERROR_INVALID_VALUE, "parameters are NULL");
    Side s = side(p->srcMemoryType, p->srcHost, p->srcDevice, p->srcArray, p->srcPitch, 0);
    Side d = side(p->dstMemoryType, p->dstHost, p->dstDevice, p->dstArray, p->dstPitch, 0);
    copy_rows(s, p->srcXInBytes, p->srcY, 0, d, p->dstXInBytes, p->dstY, 0, p->WidthInBytes, p->Height, 1);
  });
}

QGPU_CU_API CUresult CUDAAPI cuMemcpy2DUnaligned_v2(const CUDA_MEMCPY2D* p) { return cuMemcpy2D_v2(p); }

QGPU_CU_API CUresult CUDAAPI cuMemcpy3D_v2(const CUDA_MEMCPY3D* p) {
  return api("cuMemcpy3D", [&] {
    require(p != nullptr, CUDA_ERROR_INVALID_VALUE, "parameters are NULL");
    Side s = side(p->srcMemoryType, p->srcHost, p->srcDevice, p->srcArray, p->srcPitch, p->srcHeight);
    Side d = side(p->dstMemoryType, p->dstHost, p->dstDevice, p->dstArray, p->dstPitch, p->dstHeight);
    copy_rows(s, p->srcXInBytes, p->srcY, p->srcZ, d, p->dstXInBytes, p->dstY, p->dstZ, p->WidthInBytes, p->Height,
              p->Depth);
  });
}

QGPU_CU_API CUresult CUDAAPI cuTexObjectCreate(CUtexObject* out, const CUDA_RESOURCE_DESC* r, const CUDA_TEXTURE_DESC* t,
                                               const CUDA_RESOURCE_VIEW_DESC* view) {
  return api("cuTexObjectCreate", [&] {
    require(out && t, CUDA_ERROR_INVALID_VALUE, "texture object or description is NULL");
    require(!view, CUDA_ERROR_NOT_SUPPORTED, "resource views: qgpu reads the resource as it is");
    *out = make_object(r, t);
  });
}

QGPU_CU_API CUresult CUDAAPI cuTexObjectDestroy(CUtexObject o) {
  return api("cuTexObjectDestroy", [&] {
    require(g_objects.count(o), CUDA_ERROR_INVALID_VALUE, "not a texture object");
    context().free(o);
    g_objects.erase(o);
  });
}

QGPU_CU_API CUresult CUDAAPI cuSurfObjectCreate(CUsurfObject* out, const CUDA_RESOURCE_DESC* r) {
  return api("cuSurfObjectCreate", [&] {
    require(out && r && r->resType == CU_RESOURCE_TYPE_ARRAY, CUDA_ERROR_INVALID_VALUE, "surfaces are CUDA arrays");
    *out = make_object(r, nullptr);
  });
}

QGPU_CU_API CUresult CUDAAPI cuSurfObjectDestroy(CUsurfObject o) {
  return api("cuSurfObjectDestroy", [&] {
    require(g_objects.count(o), CUDA_ERROR_INVALID_VALUE, "not a surface object");
    context().free(o);
    g_objects.erase(o);
  });
}

// ------------------------------------------------------------------- modules
QGPU_CU_API CUresult CUDAAPI cuModuleLoadData(CUmodule* module, const void* image) {
  return api("cuModuleLoadData", [&] {
    require(module != nullptr, CUDA_ERROR_INVALID_VALUE, "module is NULL");
    *module = load(image);
  });
}

QGPU_CU_API CUresult CUDAAPI cuModuleLoadDataEx(CUmodule* module, const void* image,
                                                unsigned int num_options, CUjit_option* options,
                                                void** values) {
  // JIT options tune code generation for real GPUs; only the log buffers
  // mean something here: the error log receives the failure message.
  char* error_log = nullptr;
  size_t error_log_size = 0;
  for (unsigned int i = 0; options && values && i < num_options; ++i) {
    if (options[i] == CU_JIT_ERROR_LOG_BUFFER) error_log = static_cast<char*>(values[i]);
    if (options[i] == CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES)
      error_log_size = reinterpret_cast<uintptr_t>(values[i]);
  }
  std::string failure;
  CUresult r = api("cuModuleLoadDataEx", [&] {
    require(module != nullptr, CUDA_ERROR_INVALID_VALUE, "module is NULL");
    try {
      *module = load(image);
    } catch (const std::exception& e) {
      failure = e.what();
      throw;
    }
  });
  if (error_log && error_log_size > 0) std::snprintf(error_log, error_log_size, "%s", failure.c_str());
  return r;
}

QGPU_CU_API CUresult CUDAAPI cuModuleLoadFatBinary(CUmodule* module, const void* fatbin) {
  return api("cuModuleLoadFatBinary", [&] {
    require(module != nullptr, CUDA_ERROR_INVALID_VALUE, "module is NULL");
    *module = load(fatbin);
  });
}

QGPU_CU_API CUresult CUDAAPI cuModuleUnload(CUmodule module) {
  return api("cuModuleUnload", [&] {
    Connection& c = device();
    CUmod_st* m = module_of(module);
    state().modules.erase(m);
    std::unique_ptr<CUmod_st> owned(m);
    for (const qgpu::proto::ModuleImage& image : m->images) c.unload_module(image.id);
  });
}

// -------------------------------------------------------------------- linker
// cuLinkCreate/AddData/AddFile/Complete/Destroy for one input: PTX text, a
// fatbinary with PTX, or qgpu's NVRTC CUBIN.  The "linked image" is that
// PTX, which cuModuleLoadData loads.  Several inputs would need a device
// linker (relocatable device code across modules), which qgpu does not have.
namespace {

void link_logs(unsigned int n, CUjit_option* options, void** values, CUlinkState_st* st) {
  for (unsigned int i = 0; options && values && i < n; ++i) {
    if (options[i] == CU_JIT_INFO_LOG_BUFFER || options[i] == CU_JIT_ERROR_LOG_BUFFER) {
      char* buf = static_cast<char*>(values[i]);
      if (buf) buf[0] = '\0';
      if (st && options[i] == CU_JIT_ERROR_LOG_BUFFER) st->error_log = buf;
    }
    if (st && options[i] == CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES)
      st->error_log_size = static_cast<size_t>(reinterpret_cast<uintptr_t>(values[i]));
  }
}

CUlinkState_st* link_state(CUlinkState st) {
  require(st && state().links.count(st), CUDA_ERROR_INVALID_HANDLE, "not a live link state (cuLinkCreate)");
  return st;
}

void link_add(CUlinkState_st* st, CUjitInputType type, const void* data, size_t size, const std::string& what) {
  require(data != nullptr, CUDA_ERROR_INVALID_VALUE, "no data");
  require(st->inputs == 0, CUDA_ERROR_NOT_SUPPORTED,
          "qgpu links one input per module (it has no device linker for relocatable code across inputs); "
          "the second input is " + what);
  std::string ptx;
  if (type == CU_JIT_INPUT_PTX) {
    ptx.assign(static_cast<const char*>(data), strnlen(static_cast<const char*>(data), size));
  } else if (type == CU_JIT_INPUT_FATBINARY || type == CU_JIT_INPUT_CUBIN) {
    std::vector<std::string> modules = ptx_modules(data);
    require(modules.size() == 1, CUDA_ERROR_NOT_SUPPORTED, what + " holds several modules; qgpu links one");
    ptx = modules[0];
  } else {
    throw DriverError(CUDA_ERROR_NOT_SUPPORTED,
                      what + ": qgpu links PTX, a fatbinary with PTX or its NVRTC's CUBIN (CUjitInputType " +
                          std::to_string(static_cast<int>(type)) + " is not one of them)");
  }
  st->ptx = std::move(ptx);
  ++st->inputs;
}

template <typename Body>
CUresult link_api(const char* entry, CUlinkState st, Body&& body) {
  CUresult r = api(entry, body);
  if (r != CUDA_SUCCESS && st && state().links.count(st) && st->error_log && st->error_log_size > 0)
    std::snprintf(st->error_log, st->error_log_size, "%s failed (error %d); see qgpu's message on stderr", entry,
                  static_cast<int>(r));
  return r;
}

}  // namespace

QGPU_CU_API CUresult CUDAAPI cuLinkCreate_v2(unsigned int num_options, CUjit_option* options, void** values,
                                             CUlinkState* state_out) {
  return api("cuLinkCreate", [&] {
    require(state_out != nullptr, CUDA_ERROR_INVALID_VALUE, "state is NULL");
    device();
    auto* st = new CUlinkState_st;
    link_logs(num_options, options, values, st);
    state().links.insert(st);
    *state_out = st;
  });
}

QGPU_CU_API CUresult CUDAAPI cuLinkAddData_v2(CUlinkState st, CUjitInputType type, void* data, size_t size,
                                              const char* name, unsigned int num_options, CUjit_option* options,
                                              void** values) {
  return link_api("cuLinkAddData", st, [&] {
    link_logs(num_options, options, values, nullptr);
    link_add(link_state(st), type, data, size, name && *name ? std::string(name) : std::string("the data"));
  });
}

QGPU_CU_API CUresult CUDAAPI cuLinkAddFile_v2(CUlinkState st, CUjitInputType type, const char* path,
                                              unsigned int num_options, CUjit_option* options, void** values) {
  return link_api("cuLinkAddFile", st, [&] {
    link_logs(num_options, options, values, nullptr);
    require(path != nullptr, CUDA_ERROR_INVALID_VALUE, "path is NULL");
    std::ifstream in(path, std::ios::binary);
    require(in.good(), CUDA_ERROR_FILE_NOT_FOUND, std::string("cannot open ") + path);
    std::ostringstream text;
    text << in.rdbuf();
    std::string bytes = text.str();
    link_add(link_state(st), type, bytes.c_str(), bytes.size() + 1, path);
  });
}

QGPU_CU_API CUresult CUDAAPI cuLinkComplete(CUlinkState st, void** image_out, size_t* size_out) {
  return link_api("cuLinkComplete", st, [&] {
    CUlinkState_st* s = link_state(st);
    require(image_out != nullptr, CUDA_ERROR_INVALID_VALUE, "image is NULL");
    require(s->inputs == 1, CUDA_ERROR_INVALID_VALUE, "nothing was added to the link (cuLinkAddData/cuLinkAddFile)");
    *image_out = s->ptx.data();
    if (size_out) *size_out = s->ptx.size() + 1;
  });
}

QGPU_CU_API CUresult CUDAAPI cuLinkDestroy(CUlinkState st) {
  return api("cuLinkDestroy", [&] {
    delete link_state(st);
    state().links.erase(st);
  });
}

QGPU_CU_API CUresult CUDAAPI cuModuleGetFunction(CUfunction* fn, CUmodule module, const char* name) {
  return api("cuModuleGetFunction", [&] {
    require(fn && name, CUDA_ERROR_INVALID_VALUE, "function or name is NULL");
    context();
    CUmod_st* m = module_of(module);
    if (auto it = m->functions.find(name); it != m->functions.end()) {
      *fn = it->second.get();
      return;
    }
    std::string known;
    for (const qgpu::proto::ModuleImage& image : m->images) {
      for (const qgpu::proto::KernelLayout& k : image.kernels) {
        if (k.name == name) {
          auto f = std::make_unique<CUfunc_st>(CUfunc_st{m, image.id, k});
          *fn = f.get();
          m->functions.emplace(name, std::move(f));
          return;
        }
        known += (known.empty() ? "" : ", ") + k.name;
      }
    }
    throw DriverError(CUDA_ERROR_NOT_FOUND, std::string("the module has no kernel named '") + name +
                                                "' (its kernels: " + (known.empty() ? "none" : known) +
                                                "; template kernels need their lowered name)");
  });
}

QGPU_CU_API CUresult CUDAAPI cuModuleGetGlobal_v2(CUdeviceptr* ptr, size_t* bytes, CUmodule module,
                                                  const char* name) {
  return api("cuModuleGetGlobal", [&] {
    require(name != nullptr, CUDA_ERROR_INVALID_VALUE, "name is NULL");
    context();
    for (const qgpu::proto::ModuleImage& image : module_of(module)->images)
      for (const qgpu::proto::ModuleImage::Var& v : image.vars)
        if (v.name == name) {
          if (ptr) *ptr = v.addr;
          if (bytes) *bytes = v.size;
          return;
        }
    throw DriverError(CUDA_ERROR_NOT_FOUND,
                      std::string("the module has no __device__ or __constant__ variable named '") +
                          name + "'");
  });
}

// ------------------------------------------------------------------ launches
namespace {
// cuLaunchKernel, and cuLaunchCooperativeKernel (`cooperative`: every block
// resident at once, for grid-wide sync; the daemon checks the device's limit).
CUresult launch_kernel(const char* entry, CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz,
                       unsigned int bx, unsigned int by, unsigned int bz, unsigned int shared_bytes, void** params,
                       void** extra, bool cooperative) {
  return api(entry, [&] {
    Connection& c = context();
    CUfunc_st* fn = function_of(f);
    require(gx && gy && gz && bx && by && bz, CUDA_ERROR_INVALID_VALUE,
            "grid and block dimensions must be non-zero");
    qgpu::proto::LaunchArgs args;
    args.module = fn->image;
    args.kernel = fn->layout.name;
    args.grid[0] = gx, args.grid[1] = gy, args.grid[2] = gz;
    args.block[0] = bx, args.block[1] = by, args.block[2] = bz;
    args.dynamic_smem = shared_bytes;
    args.params = pack_params(*fn, params, extra);
    args.cooperative = cooperative ? 1 : 0;
    qgpu::proto::LaunchOutcome out = c.launch(args);
    if (!out.printf_output.empty()) {
      std::fwrite(out.printf_output.data(), 1, out.printf_output.size(), stdout);
      std::fflush(stdout);
    }
    if (out.error != 0) {
      CUresult r = from_runtime_error(out.error);
      if (sticky_error(r)) {
        // An execution error: the launch itself succeeded, as on a GPU,
        // and the next call that uses the context reports it (sticky).
        state().sticky = r;
        state().sticky_message = out.message;
        std::fprintf(stderr, "qgpu libcuda: %s: kernel '%s': %s\n", entry, fn->layout.name.c_str(),
                     out.message.c_str());
        return;
      }
      throw DriverError(r, "kernel '" + fn->layout.name + "': " + out.message);
    }
  });
}
}  // namespace

QGPU_CU_API CUresult CUDAAPI cuLaunchKernel(CUfunction f, unsigned int gx, unsigned int gy,
                                            unsigned int gz, unsigned int bx, unsigned int by,
                                            unsigned int bz, unsigned int shared_bytes,
                                            CUstream stream, void** params, void** extra) {
  (void)stream;  // launches run to completion in order: every stream is the same one
  return launch_kernel("cuLaunchKernel", f, gx, gy, gz, bx, by, bz, shared_bytes, params, extra, false);
}

QGPU_CU_API CUresult CUDAAPI cuLaunchCooperativeKernel(CUfunction f, unsigned int gx, unsigned int gy,
                                                       unsigned int gz, unsigned int bx, unsigned int by,
                                                       unsigned int bz, unsigned int shared_bytes,
                                                       CUstream stream, void** params) {
  (void)stream;  // launches run to completion in order: every stream is the same one
  return launch_kernel("cuLaunchCooperativeKernel", f, gx, gy, gz, bx, by, bz, shared_bytes, params, nullptr, true);
}

QGPU_CU_API CUresult CUDAAPI cuLaunchCooperativeKernel_ptsz(CUfunction f, unsigned int gx, unsigned int gy,
                                                            unsigned int gz, unsigned int bx, unsigned int by,
                                                            unsigned int bz, unsigned int shared_bytes,
                                                            CUstream stream, void** params) {
  return cuLaunchCooperativeKernel(f, gx, gy, gz, bx, by, bz, shared_bytes, stream, params);
}

QGPU_CU_API CUresult CUDAAPI cuLaunchKernel_ptsz(CUfunction f, unsigned int gx, unsigned int gy,
                                                 unsigned int gz, unsigned int bx, unsigned int by,
                                                 unsigned int bz, unsigned int shared_bytes,
                                                 CUstream stream, void** params, void** extra) {
  return cuLaunchKernel(f, gx, gy, gz, bx, by, bz, shared_bytes, stream, params, extra);
}

// ----------------------------------------------------------------- occupancy
// The device runs one CTA at a time on its one multiprocessor (as the
// runtime's cudaOccupancy* report): a block is resident when its threads and
// its shared memory (static and dynamic) fit.
namespace {
bool block_fits(const qgpu::proto::DeviceInfo& d, const CUfunc_st& f, long threads, size_t dynamic_smem) {
  return threads > 0 && uint64_t(threads) <= d.max_threads_per_cta &&
         uint64_t(f.layout.static_smem) + dynamic_smem <= d.shared_optin_bytes_per_cta;
}
}  // namespace

QGPU_CU_API CUresult CUDAAPI cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(int* blocks, CUfunction func,
                                                                                  int block_size,
                                                                                  size_t dynamic_smem,
                                                                                  unsigned int flags) {
  (void)flags;  // the caching override: the machine has no caches
  return api("cuOccupancyMaxActiveBlocksPerMultiprocessor", [&] {
    require(blocks != nullptr, CUDA_ERROR_INVALID_VALUE, "numBlocks is NULL");
    const qgpu::proto::DeviceInfo& d = context().device();
    *blocks = block_fits(d, *function_of(func), block_size, dynamic_smem) ? 1 : 0;
  });
}

QGPU_CU_API CUresult CUDAAPI cuOccupancyMaxActiveBlocksPerMultiprocessor(int* blocks, CUfunction func,
                                                                         int block_size, size_t dynamic_smem) {
  return cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(blocks, func, block_size, dynamic_smem, 0);
}

// The largest block that is resident (the limit, then whole warps below it),
// with its shared memory from `smem_of` (block size -> dynamic bytes) or
// `dynamic_smem`; the grid that fills the device is then one block.  When no
// block fits, both are 0, as on CUDA.
QGPU_CU_API CUresult CUDAAPI cuOccupancyMaxPotentialBlockSizeWithFlags(int* min_grid, int* block_size, CUfunction func,
                                                                       CUoccupancyB2DSize smem_of,
                                                                       size_t dynamic_smem, int limit,
                                                                       unsigned int flags) {
  (void)flags;  // the caching override: the machine has no caches
  return api("cuOccupancyMaxPotentialBlockSize", [&] {
    require(min_grid && block_size, CUDA_ERROR_INVALID_VALUE, "minGridSize or blockSize is NULL");
    const qgpu::proto::DeviceInfo& d = context().device();
    const CUfunc_st& f = *function_of(func);
    const long warp = d.warp_size ? d.warp_size : 32;
    long t = long(d.max_threads_per_cta);
    if (limit > 0) t = std::min<long>(t, limit);
    int best = 0;
    while (t > 0) {
      if (block_fits(d, f, t, smem_of ? smem_of(int(t)) : dynamic_smem)) {
        best = int(t);
        break;
      }
      t = t % warp ? t / warp * warp : t - warp;
    }
    *block_size = best;
    *min_grid = best ? int(d.multiprocessors()) : 0;  // a block on each multiprocessor
  });
}

QGPU_CU_API CUresult CUDAAPI cuOccupancyMaxPotentialBlockSize(int* min_grid, int* block_size, CUfunction func,
                                                              CUoccupancyB2DSize smem_of, size_t dynamic_smem,
                                                              int limit) {
  return cuOccupancyMaxPotentialBlockSizeWithFlags(min_grid, block_size, func, smem_of, dynamic_smem, limit, 0);
}

// --------------------------------------------------------- errors, lookups
namespace {

struct ErrorName {
  CUresult code;
  const char* name;
};
// Every CUresult of cuda.h, generated at build time from the header.
const ErrorName kErrorNames[] = {
#include "cuda_error_names.inc"
};

const char* error_description(CUresult r) {
  switch (r) {
    case CUDA_SUCCESS: return "no error";
    case CUDA_ERROR_INVALID_VALUE: return "invalid argument";
    case CUDA_ERROR_OUT_OF_MEMORY: return "out of memory";
    case CUDA_ERROR_NOT_INITIALIZED: return "initialization error";
    case CUDA_ERROR_NO_DEVICE: return "no CUDA-capable device is detected";
    case CUDA_ERROR_INVALID_DEVICE: return "invalid device ordinal";
    case CUDA_ERROR_INVALID_IMAGE: return "device kernel image is invalid";
    case CUDA_ERROR_INVALID_CONTEXT: return "invalid device context";
    case CUDA_ERROR_NO_BINARY_FOR_GPU: return "no kernel image is available for execution on the device";
    case CUDA_ERROR_INVALID_PTX: return "a PTX JIT compilation failed";
    case CUDA_ERROR_INVALID_HANDLE: return "invalid resource handle";
    case CUDA_ERROR_NOT_FOUND: return "named symbol not found";
    case CUDA_ERROR_ILLEGAL_ADDRESS: return "an illegal memory access was encountered";
    case CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES: return "too many resources requested for launch";
    case CUDA_ERROR_LAUNCH_TIMEOUT: return "the launch timed out and was terminated";
    case CUDA_ERROR_ASSERT: return "device-side assert triggered";
    case CUDA_ERROR_LAUNCH_FAILED: return "unspecified launch failure";
    case CUDA_ERROR_NOT_SUPPORTED: return "operation not supported";
    default: return nullptr;
  }
}

const char* error_name(CUresult r) {
  for (const ErrorName& e : kErrorNames)
    if (e.code == r) return e.name;
  return nullptr;
}

// The implemented entry points, for cuGetProcAddress, by their exported names.
struct Entry {
  const char* name;
  void* fn;
};
#define QGPU_ENTRY(f) {#f, reinterpret_cast<void*>(&f)}
const Entry kEntries[] = {
    QGPU_ENTRY(cuInit), QGPU_ENTRY(cuDriverGetVersion), QGPU_ENTRY(cuDeviceGetCount),
    QGPU_ENTRY(cuDeviceGet), QGPU_ENTRY(cuDeviceGetName), QGPU_ENTRY(cuDeviceTotalMem_v2),
    QGPU_ENTRY(cuDeviceGetAttribute), QGPU_ENTRY(cuDevicePrimaryCtxRetain),
    QGPU_ENTRY(cuDevicePrimaryCtxRelease_v2), QGPU_ENTRY(cuCtxCreate_v4), QGPU_ENTRY(cuCtxCreate_v2),
    QGPU_ENTRY(cuCtxDestroy_v2), QGPU_ENTRY(cuCtxGetCurrent), QGPU_ENTRY(cuCtxSetCurrent),
    QGPU_ENTRY(cuCtxPushCurrent_v2), QGPU_ENTRY(cuCtxPopCurrent_v2),
    QGPU_ENTRY(cuCtxGetDevice), QGPU_ENTRY(cuCtxSynchronize), QGPU_ENTRY(cuCtxResetPersistingL2Cache),
    QGPU_ENTRY(cuStreamSetAttribute), QGPU_ENTRY(cuStreamGetAttribute), QGPU_ENTRY(cuMemAlloc_v2),
    QGPU_ENTRY(cuMemGetAllocationGranularity), QGPU_ENTRY(cuMemAddressReserve), QGPU_ENTRY(cuMemAddressFree),
    QGPU_ENTRY(cuMemCreate), QGPU_ENTRY(cuMemRelease), QGPU_ENTRY(cuMemGetAllocationPropertiesFromHandle),
    QGPU_ENTRY(cuMemMap), QGPU_ENTRY(cuMemUnmap), QGPU_ENTRY(cuMemSetAccess), QGPU_ENTRY(cuMemGetAccess),
    QGPU_ENTRY(cuMemRetainAllocationHandle),
    QGPU_ENTRY(cuMemFree_v2), QGPU_ENTRY(cuMemGetInfo_v2), QGPU_ENTRY(cuMemcpyHtoD_v2),
    QGPU_ENTRY(cuMemcpyDtoH_v2), QGPU_ENTRY(cuMemcpyDtoD_v2), QGPU_ENTRY(cuMemsetD8_v2),
    QGPU_ENTRY(cuMemsetD32_v2), QGPU_ENTRY(cuModuleLoadData), QGPU_ENTRY(cuModuleLoadDataEx),
    QGPU_ENTRY(cuModuleLoadFatBinary), QGPU_ENTRY(cuModuleUnload), QGPU_ENTRY(cuModuleGetFunction),
    QGPU_ENTRY(cuModuleGetGlobal_v2), QGPU_ENTRY(cuLaunchKernel), QGPU_ENTRY(cuGetErrorString),
    QGPU_ENTRY(cuGetErrorName), QGPU_ENTRY(cuGetProcAddress_v2), QGPU_ENTRY(cuLinkCreate_v2),
    QGPU_ENTRY(cuLinkAddData_v2), QGPU_ENTRY(cuLinkAddFile_v2), QGPU_ENTRY(cuLinkComplete),
    QGPU_ENTRY(cuLinkDestroy), {"cuDeviceComputeCapability", reinterpret_cast<void*>(&compute_capability)},
    QGPU_ENTRY(cuOccupancyMaxActiveBlocksPerMultiprocessor),
    QGPU_ENTRY(cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags),
    QGPU_ENTRY(cuOccupancyMaxPotentialBlockSize), QGPU_ENTRY(cuOccupancyMaxPotentialBlockSizeWithFlags),
    QGPU_ENTRY(cuLaunchCooperativeKernel),
    QGPU_ENTRY(cuArrayCreate_v2), QGPU_ENTRY(cuArray3DCreate_v2),
    QGPU_ENTRY(cuArrayDestroy), QGPU_ENTRY(cuArrayGetDescriptor_v2), QGPU_ENTRY(cuMemcpy2D_v2),
    QGPU_ENTRY(cuMemcpy2DUnaligned_v2), QGPU_ENTRY(cuMemcpy3D_v2), QGPU_ENTRY(cuTexObjectCreate),
    QGPU_ENTRY(cuTexObjectDestroy), QGPU_ENTRY(cuSurfObjectCreate), QGPU_ENTRY(cuSurfObjectDestroy),
};
#undef QGPU_ENTRY

// cuGetProcAddress names entry points without their ABI suffix ("cuMemAlloc"
// for cuMemAlloc_v2): the newest implemented version is the one returned.
void* find_entry(const std::string& symbol) {
  for (const char* suffix : {"_v4", "_v3", "_v2", ""})
    for (const Entry& e : kEntries)
      if (symbol + suffix == e.name) return e.fn;
  return nullptr;
}

}  // namespace

QGPU_CU_API CUresult CUDAAPI cuGetErrorString(CUresult error, const char** str) {
  if (!str) return CUDA_ERROR_INVALID_VALUE;
  const char* name = error_name(error);
  if (!name) {
    *str = nullptr;
    return CUDA_ERROR_INVALID_VALUE;
  }
  const char* description = error_description(error);
  *str = description ? description : name;
  return CUDA_SUCCESS;
}

QGPU_CU_API CUresult CUDAAPI cuGetErrorName(CUresult error, const char** str) {
  if (!str) return CUDA_ERROR_INVALID_VALUE;
  *str = error_name(error);
  return *str ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

QGPU_CU_API CUresult CUDAAPI cuGetProcAddress_v2(const char* symbol, void** fn, int cuda_version,
                                                 cuuint64_t flags,
                                                 CUdriverProcAddressQueryResult* status) {
  (void)cuda_version;  // one version of each entry point is implemented
  (void)flags;         // per-thread default streams are the default stream here
  if (!symbol || !fn) return CUDA_ERROR_INVALID_VALUE;
  *fn = find_entry(symbol);
  if (status) *status = *fn ? CU_GET_PROC_ADDRESS_SUCCESS : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  return *fn ? CUDA_SUCCESS : CUDA_ERROR_NOT_FOUND;
}

// The driver's own session (NULL when it has none: before cuInit, or when
// it uses the runtime's), for qgpu's libcudart.so.13: found with dlsym, so
// that a program using both APIs has one session.
QGPU_CU_API void* qgpu_driver_session() {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  return s.initialized ? s.conn.get() : nullptr;
}

// ----------------------------------------------------------- error helpers
namespace qgpu::driver {

CUresult from_runtime_error(int e) {
  switch (e) {
    // Runtime and driver share these values.
    case 0: case 1: case 2: case 3: case 46: case 100: case 200: case 218: case 400: case 500:
    case 600: case 700: case 701: case 702: case 710: case 719: case 720: case 801: case 909: case 999:
      return static_cast<CUresult>(e);
    case 9: return CUDA_ERROR_INVALID_VALUE;     // cudaErrorInvalidConfiguration
    case 13: return CUDA_ERROR_NOT_FOUND;        // cudaErrorInvalidSymbol
    case 17: return CUDA_ERROR_INVALID_VALUE;    // cudaErrorInvalidDevicePointer
    case 98: return CUDA_ERROR_NOT_FOUND;        // cudaErrorInvalidDeviceFunction
    default: return CUDA_ERROR_UNKNOWN;
  }
}

int not_supported(const char* entry) {
  static std::mutex mu;
  static std::set<std::string> reported;
  std::lock_guard<std::mutex> lock(mu);
  if (reported.insert(entry).second)
    std::fprintf(stderr,
                 "qgpu libcuda: %s is not supported (qgpu's driver API covers devices, contexts, "
                 "modules, memory and kernel launches)\n",
                 entry);
  return CUDA_ERROR_NOT_SUPPORTED;
}

}  // namespace qgpu::driver
