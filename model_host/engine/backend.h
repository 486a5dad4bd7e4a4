// The execution-backend contract of model_host.
//
// The daemon owns clients, allocations and modules; a Backend only runs one
// kernel launch to completion over a client's global-memory image.  Two
// backends implement it: "interpreter" (the reference machine) and "model"
// (the GPU inside the Qwen3.5 checkpoint).  Neither may fall back to the
// other: a launch a backend cannot run fails with a CUDA error and a message
// that names what is missing.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace qgpu::engine {

struct Dim3 {
  uint32_t x = 1, y = 1, z = 1;
  uint64_t count() const { return uint64_t(x) * y * z; }
};

// One client's device global memory as the machine sees it: a flat byte
// image whose byte 0 is device address `base`.  __device__ and __constant__
// variables live in it too (their addresses are in LaunchRequest::symbols).
struct GlobalMemory {
  uint64_t base = 0;
  std::vector<uint8_t> bytes;
};

struct LaunchRequest {
  std::string ptx;                          // the whole PTX module text
  std::string kernel;                       // .entry name (mangled)
  Dim3 grid, block;
  uint32_t dynamic_smem = 0;                // bytes of extern __shared__
  std::vector<uint8_t> params;              // packed as the .entry signature lays them out
  std::map<std::string, uint64_t> symbols;  // module globals -> device address
};

struct LaunchStats {
  uint64_t prompt_tokens = 0;     // model backend
  uint64_t generated_tokens = 0;  // model backend
  uint64_t steps = 0;             // machine blocks executed (EXEC count)
  double seconds = 0;
};

struct LaunchResult {
  int error = 0;               // a cudaError_t value; 0 is cudaSuccess
  std::string message;         // names the limit or the missing feature
  std::string printf_output;   // device printf output, in order
  LaunchStats stats;
};

// One client's device memory kept by the backend itself, for the client's
// whole life (the model keeps it in the recurrent state of the client's
// sequence, docs/tokens.md section 3): the daemon then holds no copy of it
// and sends every write, read and launch here.  Offsets are bytes from the
// global base; the daemon has checked them against the client's allocations.
// write() and read() throw std::runtime_error naming what failed.
class DeviceContext {
 public:
  virtual ~DeviceContext() = default;
  virtual void write(uint64_t offset, const uint8_t* data, uint64_t size) = 0;
  virtual void read(uint64_t offset, uint8_t* out, uint64_t size) = 0;
  virtual LaunchResult launch(const LaunchRequest& req) = 0;
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;
  // Runs one launch to completion; `mem` is read and updated in place.
  virtual LaunchResult launch(const LaunchRequest& req, GlobalMemory& mem) = 0;
  // A new client's device memory, all zero, when this backend keeps it
  // itself; nullptr when the daemon keeps the image and passes it to
  // launch().
  virtual std::unique_ptr<DeviceContext> open_context() { return nullptr; }
};

// What a module declares, for the daemon: module-scope variables to allocate
// and initialise, and each kernel's parameter layout.
// An address-of-symbol initializer (`__device__ int* p = &x;`): once every
// variable has its address, the `size` bytes at `offset` in the variable hold
// the device address of `symbol` plus `addend`.
struct Reloc {
  uint64_t offset = 0;
  uint32_t size = 8;
  std::string symbol;
  int64_t addend = 0;
};
struct ModuleVar {
  std::string name;
  std::string space;           // "global" or "const"
  uint64_t size = 0;
  uint32_t align = 1;
  std::vector<uint8_t> init;   // empty: zero-filled
  std::vector<Reloc> relocs;
};
struct KernelParam {
  uint32_t offset = 0, size = 0, align = 1;
};
struct KernelInfo {
  std::string name;
  std::vector<KernelParam> params;
  uint32_t static_smem = 0;
};
struct ModuleInfo {
  std::vector<ModuleVar> vars;
  std::vector<KernelInfo> kernels;
};

}  // namespace qgpu::engine
