// The execution-backend contract of model_host.
//
// The daemon owns clients, allocations and modules; a Backend only runs one
// kernel launch to completion over a client's global-memory image.  Two
// backends implement it: "interpreter" (the reference machine) and "model"
// (the GPU inside the Qwen3.5 checkpoint).  Neither may fall back to the
// other: a launch a backend cannot run fails with a CUDA error and a message
// that names what is missing.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "model_host/launch/device_bytes.h"

namespace qgpu::launch {

struct Dim3 {
  uint32_t x = 1, y = 1, z = 1;
  uint64_t count() const { return uint64_t(x) * y * z; }
};

// One client's device global memory as the machine sees it: a flat byte
// image whose byte 0 is device address `base`.  __device__ and __constant__
// variables live in it too (their addresses are in LaunchRequest::symbols).
struct GlobalMemory {
  uint64_t base = 0;
  DeviceBytes bytes;
};

// How far a running launch has come, for progress displays: the backend
// updates it as it goes, other threads read it (relaxed atomics).
struct LaunchProgress {
  std::atomic<uint64_t> generated_tokens{0};  // model backends
  std::atomic<uint64_t> cta{0};               // 1 + the CTA running now (interpreters: the highest started, updated every 16 CTAs and at the last); 0: not known
  // Set when no one waits for the launch any more (its client exited, the
  // daemon is stopping): a backend that checks it ends the launch early,
  // failed with cudaErrorLaunchFailure.  Never cleared.
  std::atomic<bool> cancel{false};
};

// The device a backend runs: what device queries report and what the daemon
// enforces before a launch reaches the backend.  Each backend declares its
// own (Backend::device()); docs/protocol.md lists how the CUDA queries map to
// it.
struct DeviceSpec {
  std::string name;                      // cudaDeviceProp::name
  uint32_t lanes = 1;                    // lanes per machine warp
  uint32_t warp_size = 32;               // what programs see
  uint32_t registers = 0;                // 32-bit registers per thread
  uint32_t register_file = 0;            // registers of one CTA, split among its threads (0: `registers` each at any size)
  uint32_t rom_blocks = 0;               // program ROM capacity in blocks (0: no limit)
  uint64_t global_base = 0;              // device address of global byte 0
  uint64_t global_bytes = 0;             // all allocations, module variables and the device heap
  uint32_t max_threads_per_cta = 0;
  uint32_t max_block[3] = {0, 0, 0};
  uint32_t max_grid[3] = {0, 0, 0};
  uint64_t max_ctas_per_grid = 0;        // total CTAs of one launch
  uint32_t shared_bytes_per_cta = 0;     // static + dynamic __shared__ without opting in
  uint32_t shared_optin_bytes_per_cta = 0;  // the most after cudaFuncAttributeMaxDynamicSharedMemorySize
  uint32_t param_bytes = 0;              // kernel parameters of one launch
  uint32_t const_bytes = 0;              // __constant__ variables of one module
  uint32_t local_bytes_per_thread = 0;   // local memory (stack, local arrays) per thread
  uint64_t printf_fifo_bytes = 0;        // cudaLimitPrintfFifoSize at start
  uint64_t heap_bytes = 0;               // cudaLimitMallocHeapSize at start (0: no device heap)
  bool limits_settable = false;          // cudaDeviceSetLimit may change the two above
  // The way out named in the messages of launches (`larger`) and of
  // allocations (`more_memory`) beyond this device; empty: there is none
  // (the limit is CUDA's own).
  std::string larger, more_memory;
  // The most CTAs of a cooperative launch (grid-wide sync needs every CTA
  // resident at once); 0: the backend runs no cooperative launches.
  uint32_t cooperative_ctas = 0;
  // The L2 cache a GPU of this size would have, as the device queries report
  // it (cudaDeviceProp::l2CacheSize, persistingL2CacheMaxSize,
  // accessPolicyMaxWindowSize).  Memory is flat: no access is faster or
  // slower for it, so the persisting-L2 limit and access-policy windows are
  // accepted as the hints they are and change no result.
  uint32_t l2_bytes = 0, persisting_l2_max_bytes = 0, access_policy_max_window_bytes = 0;
  // How fast `clock()` advances, in kHz (cudaDevAttrClockRate): programs
  // that spin until a number of clocks has passed wait that many divided by
  // this.  The model's device counts a thread's instructions at about a
  // thousand a second (docs/isa.md, "The clock").
  uint32_t clock_khz = 1000;
};

// The device heap of a launch: [heap_base, heap_base + heap_bytes) of global
// memory, the top `heap_bytes` of the device's global memory (docs/isa.md,
// "Device heap").  The daemon reserves it; the lowering's malloc allocates in
// it.  heap_bytes 0: the device has no heap.

// Device-side launches (CUDA dynamic parallelism; docs/isa.md, "Device-side
// launches"): the lowering appends a record per launch to a queue in the
// device heap, the interpreter backend runs the queued grids after the grid
// that launched them.  The heap header's last four words hold the queue.
namespace device_queue {
constexpr uint32_t kHeapHeader = 128;       // the device heap's header (malloc's words 0..27, then these)
constexpr uint32_t kHead = 112;             // the newest record (0: empty); each links to the one before
constexpr uint32_t kPending = 116;          // records queued and not yet started, at every depth
constexpr uint32_t kDepth = 120;            // nesting depth of the running grid (0: launched by the host)
constexpr uint32_t kLimit = 124;            // cudaLimitDevRuntimePendingLaunchCount
// A record is a heap block: these bytes, then the child's parameters.
constexpr uint32_t kRecordBytes = 64;
constexpr uint32_t kNext = 0, kEntry = 4, kGrid = 8, kBlock = 20, kSmem = 32, kStream = 36, kKind = 40;
constexpr uint32_t kCopyDst = 8, kCopySrc = 12, kCopyBytes = 16;  // a copy's fields (kind kCopy)
constexpr uint32_t kKindLaunch = 1, kKindCopy = 2;
constexpr uint32_t kMaxDepth = 24;          // CUDA's nesting depth
constexpr uint32_t kDefaultPending = 2048;  // CUDA's default pending launch count
constexpr uint32_t kTailLaunch = 3, kFireAndForget = 4;  // cudaStreamTailLaunch, cudaStreamFireAndForget
}  // namespace device_queue

// Another module of the same client, for device-side launches of its kernels
// (with -rdc a translation unit launches kernels another one defines).
struct PeerModule {
  std::string ptx;
  std::map<std::string, uint64_t> symbols;
};

struct LaunchRequest {
  std::string ptx;                          // the whole PTX module text
  std::string kernel;                       // .entry name (mangled)
  Dim3 grid, block;
  uint32_t dynamic_smem = 0;                // bytes of extern __shared__
  std::vector<uint8_t> params;              // packed as the .entry signature lays them out
  std::map<std::string, uint64_t> symbols;  // module globals -> device address
  LaunchProgress* progress = nullptr;       // where to report progress (may be null)
  uint64_t printf_fifo_bytes = 0;           // device printf buffer (cudaLimitPrintfFifoSize); 0: the device's
  uint64_t heap_base = 0, heap_bytes = 0;   // the device heap (see above)
  // A cooperative launch's grid workspace (the word cooperative groups'
  // grid.sync() counts arrivals in), read by the kernel as %envreg1 (high
  // word) and %envreg2 (low word); 0 for other launches.
  uint64_t grid_workspace = 0;
  // Device-side launches: cudaLimitDevRuntimePendingLaunchCount and the
  // client's other modules (filled when the module launches kernels itself).
  uint32_t pending_launch_limit = device_queue::kDefaultPending;
  std::vector<PeerModule> peers;
};

struct LaunchStats {
  uint64_t prompt_tokens = 0;     // model backend
  uint64_t generated_tokens = 0;  // model backend
  uint64_t steps = 0;             // machine blocks executed (EXEC count)
  uint64_t lane_instructions = 0; // interpreter backends: instructions executed, counted per thread
  uint32_t host_threads = 0;      // interpreter backends: the most host threads that ran its CTAs at once
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
  // The device this backend runs (sizes and limits).
  virtual DeviceSpec device() const = 0;
  // Runs one launch to completion; `mem` is read and updated in place.
  virtual LaunchResult launch(const LaunchRequest& req, GlobalMemory& mem) = 0;
  // A new client's device memory, all zero, when this backend keeps it
  // itself; nullptr when the daemon keeps the image and passes it to
  // launch().
  virtual std::unique_ptr<DeviceContext> open_context() { return nullptr; }
  // Whether launches over different memory images may run at the same time
  // (the daemon then runs different clients' launches in parallel).
  virtual bool concurrent() const { return false; }
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

}  // namespace qgpu::launch
