// The interpreter backend (interpreter.h): the machine run on the host.
#include <chrono>
#include <cstdlib>
#include <stdexcept>
#include <mutex>
#include <unordered_map>

#include "model_host/launch/errors.h"
#include "model_host/backends/interpreter.h"
#include "model_host/machine/api.h"
#include "model_host/machine/interpreter.h"
#include "model_host/lower/lower.h"
#include "model_host/machine/printf.h"
#include "model_host/ptx/layout.h"
#include "model_host/ptx/parse.h"

namespace qgpu::backends {
using namespace qgpu::machine;
namespace {

constexpr uint64_t kMaxSteps = 200'000'000;  // EXECs before a launch times out

// Lowered programs are cached per module and launch configuration: the
// lowering specialises on block and grid shape and on symbol addresses.
class InterpreterBackend : public launch::Backend {
 public:
  InterpreterBackend(MachineKind machine, uint64_t global_bytes)
      : model_(machine == MachineKind::Model),
        params_(model_ ? model_params() : cuda_params(global_bytes)),
        device_(model_ ? model_device() : interpreter_device(global_bytes)) {
    if (model_) device_.name = "qgpu (interpreter-model)";
  }

  std::string name() const override { return model_ ? "interpreter-model" : "interpreter"; }
  launch::DeviceSpec device() const override { return device_; }

  launch::LaunchResult launch(const launch::LaunchRequest& req, launch::GlobalMemory& mem) override {
    launch::LaunchResult res;
    auto t0 = std::chrono::steady_clock::now();
    // The printf buffer is the launch's cudaLimitPrintfFifoSize on the
    // CUDA-sized device; the model's is fixed.
    Params params = params_;
    if (!model_ && req.printf_fifo_bytes) {
      if (req.printf_fifo_bytes > UINT32_MAX / 2) {
        res.error = launch::kInvalidValue;
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
      res.error = launch::kInvalidPtx;
      res.message = e.what();
      return res;
    }
    if (req.params.size() > params.param_bytes) {
      res.error = launch::kInvalidValue;
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
  std::shared_ptr<const Program> program(const launch::LaunchRequest& req, const Params& params) {
    std::string key = req.kernel + '\0' + std::to_string(req.grid.x) + ',' + std::to_string(req.grid.y) + ',' +
                      std::to_string(req.grid.z) + ',' + std::to_string(req.block.x) + ',' +
                      std::to_string(req.block.y) + ',' + std::to_string(req.block.z) + ',' +
                      std::to_string(req.dynamic_smem) + ',' + std::to_string(params.print_bytes) + ',' +
                      std::to_string(req.heap_base) + ',' + std::to_string(req.heap_bytes) + ',' +
                      std::to_string(req.grid_workspace);
    for (auto& [name, addr] : req.symbols) key += '\0' + name + '=' + std::to_string(addr);
    key += '\0' + req.ptx;
    std::lock_guard<std::mutex> lock(mu_);
    auto it = programs_.find(key);
    if (it != programs_.end()) return it->second;
    auto& mod = modules_[req.ptx];
    if (!mod) mod = std::make_shared<ptx::Module>(ptx::parse(req.ptx));
    LaunchShape shape{req.grid, req.block, req.dynamic_smem, req.symbols, req.heap_base, req.heap_bytes,
                      req.grid_workspace};
    auto prog = std::make_shared<const Program>(lower(*mod, req.kernel, shape, params,
                                                            {.for_model = model_, .native_float = params.native_float}));
    programs_[key] = prog;
    return prog;
  }

  const bool model_;
  const Params params_;
  launch::DeviceSpec device_;
  std::mutex mu_;
  std::unordered_map<std::string, std::shared_ptr<ptx::Module>> modules_;
  std::unordered_map<std::string, std::shared_ptr<const Program>> programs_;
};

}  // namespace

std::unique_ptr<launch::Backend> make_interpreter_backend(MachineKind machine, uint64_t global_bytes) {
  return std::make_unique<InterpreterBackend>(machine, global_bytes);
}

}  // namespace qgpu::backends
