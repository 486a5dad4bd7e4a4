// The machine as model_host sees it (api.h): limits, module inspection, and
// the interpreter backend.
#include <chrono>
#include <cstdlib>
#include <stdexcept>
#include <mutex>
#include <unordered_map>

#include "model_host/machine/api.h"
#include "model_host/machine/interpreter.h"
#include "model_host/machine/lower.h"
#include "model_host/machine/printf.h"
#include "model_host/ptx/layout.h"
#include "model_host/ptx/parse.h"

namespace qgpu::machine {
namespace {

constexpr int kErrInvalidValue = 1;
constexpr int kErrInvalidPtx = 218;
constexpr uint64_t kMaxSteps = 200'000'000;  // EXECs before a launch times out

// Lowered programs are cached per module and launch configuration: the
// lowering specialises on block and grid shape and on symbol addresses.
class InterpreterBackend : public engine::Backend {
 public:
  InterpreterBackend(MachineKind machine, uint64_t global_bytes)
      : model_(machine == MachineKind::Model),
        params_(model_ ? model_params() : cuda_params(global_bytes)),
        device_(model_ ? model_device() : interpreter_device(global_bytes)) {
    if (model_) device_.name = "qgpu (interpreter-model)";
  }

  std::string name() const override { return model_ ? "interpreter-model" : "interpreter"; }
  engine::DeviceSpec device() const override { return device_; }

  engine::LaunchResult launch(const engine::LaunchRequest& req, engine::GlobalMemory& mem) override {
    engine::LaunchResult res;
    auto t0 = std::chrono::steady_clock::now();
    // The printf buffer is the launch's cudaLimitPrintfFifoSize on the
    // CUDA-sized device; the model's is fixed.
    Params params = params_;
    if (!model_ && req.printf_fifo_bytes) {
      if (req.printf_fifo_bytes > UINT32_MAX / 2) {
        res.error = kErrInvalidValue;
        res.message = "a printf FIFO of " + std::to_string(req.printf_fifo_bytes) + " bytes; the machine takes at most " +
                      std::to_string(UINT32_MAX / 2);
        return res;
      }
      params.print_bytes = uint32_t(req.printf_fifo_bytes);
    }
    std::shared_ptr<const Program> prog;
    try {
      prog = program(req, params);
    } catch (const LowerError& e) {
      res.error = e.error();
      res.message = e.what();
      return res;
    } catch (const ptx::ParseError& e) {
      res.error = kErrInvalidPtx;
      res.message = e.what();
      return res;
    }
    if (req.params.size() > params.param_bytes) {
      res.error = kErrInvalidValue;
      res.message = "kernel " + req.kernel + " has " + std::to_string(req.params.size()) +
                    " bytes of parameters; the machine takes at most " + std::to_string(params.param_bytes);
      return res;
    }
    // The model's parameter memory holds whole words: a widened byte load of
    // the last parameter reads the word around it.
    std::vector<uint8_t> pbytes = req.params;
    if (model_) pbytes.resize((pbytes.size() + 3) / 4 * 4);
    Interpreter interp(*prog, params, prog->ctas, prog->threads, std::move(pbytes), mem);
    interp.run(kMaxSteps);
    res.error = interp.fault().error;
    res.message = interp.fault().message;
    res.printf_output = format_prints(interp.print_buffer(), mem);
    res.stats.steps = interp.stats().steps;
    res.stats.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return res;
  }

 private:
  std::shared_ptr<const Program> program(const engine::LaunchRequest& req, const Params& params) {
    std::string key = req.kernel + '\0' + std::to_string(req.grid.x) + ',' + std::to_string(req.grid.y) + ',' +
                      std::to_string(req.grid.z) + ',' + std::to_string(req.block.x) + ',' +
                      std::to_string(req.block.y) + ',' + std::to_string(req.block.z) + ',' +
                      std::to_string(req.dynamic_smem) + ',' + std::to_string(params.print_bytes) + ',' +
                      std::to_string(req.heap_base) + ',' + std::to_string(req.heap_bytes);
    for (auto& [name, addr] : req.symbols) key += '\0' + name + '=' + std::to_string(addr);
    key += '\0' + req.ptx;
    std::lock_guard<std::mutex> lock(mu_);
    auto it = programs_.find(key);
    if (it != programs_.end()) return it->second;
    auto& mod = modules_[req.ptx];
    if (!mod) mod = std::make_shared<ptx::Module>(ptx::parse(req.ptx));
    LaunchShape shape{req.grid, req.block, req.dynamic_smem, req.symbols, req.heap_base, req.heap_bytes};
    auto prog = std::make_shared<const Program>(lower(*mod, req.kernel, shape, params, {.for_model = model_}));
    programs_[key] = prog;
    return prog;
  }

  const bool model_;
  const Params params_;
  engine::DeviceSpec device_;
  std::mutex mu_;
  std::unordered_map<std::string, std::shared_ptr<ptx::Module>> modules_;
  std::unordered_map<std::string, std::shared_ptr<const Program>> programs_;
};

}  // namespace

Params cuda_params(uint64_t global_bytes) {
  if (global_bytes < 4096 || global_bytes > kMaxDeviceMemory)
    throw std::invalid_argument("device memory of " + std::to_string(global_bytes) + " bytes: the machine takes 4096 to " +
                                std::to_string(kMaxDeviceMemory) + " (device addresses are 32-bit)");
  Params p = default_params();  // the ISA: lanes, registers, block length, ROM
  p.global_bytes = uint32_t(global_bytes);
  // The opt-in ceiling plus the lowering's scratch area (shuffles, votes) for
  // 32 CUDA warps.
  p.shared_bytes = kCudaOptinSharedBytes + 8 * 1024;
  p.local_bytes = 512 * 1024;  // CUDA's most per thread; a CTA holds what its kernel uses
  p.local_store_bytes = 0;
  p.param_bytes = 32764;
  p.print_bytes = uint32_t(kCudaPrintfFifoBytes);
  p.max_threads = 1024;
  p.max_ctas = UINT32_MAX;  // the CTA register is 32-bit
  return p;
}

namespace {

engine::DeviceSpec spec_of(const Params& p) {
  engine::DeviceSpec d;
  d.lanes = p.lanes;
  d.warp_size = Params::kCudaWarp;
  d.registers = p.regs;
  d.rom_blocks = p.rom_blocks;
  d.global_base = p.global_base;
  d.global_bytes = p.global_bytes;
  d.max_threads_per_cta = p.max_threads;
  d.max_block[0] = d.max_block[1] = p.max_threads;
  d.max_block[2] = std::min<uint32_t>(p.max_threads, 64);
  d.max_ctas_per_grid = p.max_ctas;
  d.max_grid[0] = d.max_grid[1] = d.max_grid[2] = p.max_ctas;
  d.shared_bytes_per_cta = d.shared_optin_bytes_per_cta = p.shared_bytes;
  d.param_bytes = p.param_bytes;
  d.const_bytes = p.global_bytes;  // __constant__ variables live in global memory
  d.local_bytes_per_thread = p.local_store_bytes ? p.local_bytes_for(p.max_threads) : p.local_bytes;
  d.printf_fifo_bytes = p.print_bytes;
  return d;
}

}  // namespace

engine::DeviceSpec model_device() {
  engine::DeviceSpec d = spec_of(model_params());
  d.name = "qgpu (Qwen3.5 model)";
  d.larger = d.more_memory =
      "run it with --backend interpreter (the reference machine as a CUDA-sized device: qgpu run --backend "
      "interpreter, or QGPU_BACKEND=interpreter)";
  if (d.global_bytes < 256 * 1024)   // a model built with less (qgpu build-model --global-kib)
    d.more_memory = "build the model with more (qgpu build-model --out DIR --global-kib 256, then --model DIR), or " +
                    d.more_memory;
  return d;
}

engine::DeviceSpec interpreter_device(uint64_t global_bytes) {
  const Params p = cuda_params(global_bytes);
  engine::DeviceSpec d = spec_of(p);
  d.name = "qgpu (interpreter)";
  d.max_grid[0] = 0x7fffffff;
  d.max_grid[1] = d.max_grid[2] = 65535;
  d.shared_bytes_per_cta = kCudaStaticSharedBytes;
  d.shared_optin_bytes_per_cta = kCudaOptinSharedBytes;
  d.const_bytes = kCudaConstBytes;
  d.heap_bytes = kCudaHeapBytes;
  d.limits_settable = true;
  d.more_memory = global_bytes < kMaxDeviceMemory
                 ? "give the device more memory with model_host --device-memory / qgpu run --device-memory "
                   "(or QGPU_DEVICE_MEMORY), up to " + std::to_string(kMaxDeviceMemory >> 20) + " MiB"
                 : "";
  return d;
}

uint64_t parse_device_memory(const std::string& text) {
  size_t used = 0;
  uint64_t v = 0;
  try {
    v = std::stoull(text, &used, 10);
  } catch (const std::exception&) {
    used = 0;
  }
  uint64_t unit = 1;
  std::string rest = text.substr(used);
  if (rest == "K" || rest == "k" || rest == "KiB") unit = 1ull << 10;
  else if (rest == "M" || rest == "m" || rest == "MiB") unit = 1ull << 20;
  else if (rest == "G" || rest == "g" || rest == "GiB") unit = 1ull << 30;
  else if (!rest.empty()) used = 0;
  if (used == 0 || v == 0 || v > kMaxDeviceMemory / unit || v * unit < 4096 || v * unit > kMaxDeviceMemory)
    throw std::invalid_argument("device memory '" + text + "': give bytes or a size such as 512M or 2G, from 4K to " +
                                std::to_string(kMaxDeviceMemory >> 20) + "M (device addresses are 32-bit)");
  return v * unit;
}

uint64_t default_device_memory() {
  const char* env = std::getenv("QGPU_DEVICE_MEMORY");
  if (!env || !*env) return kDefaultDeviceMemory;
  try {
    return parse_device_memory(env);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(std::string("QGPU_DEVICE_MEMORY: ") + e.what());
  }
}

engine::ModuleInfo inspect_module(const std::string& ptx_text) { return ptx::module_info(ptx::parse(ptx_text)); }

std::unique_ptr<engine::Backend> make_interpreter_backend(MachineKind machine, uint64_t global_bytes) {
  return std::make_unique<InterpreterBackend>(machine, global_bytes);
}

}  // namespace qgpu::machine
