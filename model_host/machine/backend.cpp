// The machine as model_host sees it (api.h): limits, module inspection, and
// the interpreter backend.
#include <chrono>
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
  explicit InterpreterBackend(MachineKind machine)
      : model_(machine == MachineKind::Model), params_(model_ ? model_params() : default_params()) {}

  std::string name() const override { return model_ ? "interpreter-model" : "interpreter"; }

  engine::LaunchResult launch(const engine::LaunchRequest& req, engine::GlobalMemory& mem) override {
    engine::LaunchResult res;
    auto t0 = std::chrono::steady_clock::now();
    std::shared_ptr<const Program> prog;
    try {
      prog = program(req);
    } catch (const LowerError& e) {
      res.error = e.error();
      res.message = e.what();
      return res;
    } catch (const ptx::ParseError& e) {
      res.error = kErrInvalidPtx;
      res.message = e.what();
      return res;
    }
    if (req.params.size() > params_.param_bytes) {
      res.error = kErrInvalidValue;
      res.message = "kernel " + req.kernel + " has " + std::to_string(req.params.size()) +
                    " bytes of parameters; the machine takes at most " + std::to_string(params_.param_bytes);
      return res;
    }
    // The model's parameter memory holds whole words: a widened byte load of
    // the last parameter reads the word around it.
    std::vector<uint8_t> params = req.params;
    if (model_) params.resize((params.size() + 3) / 4 * 4);
    Interpreter interp(*prog, params_, prog->ctas, prog->threads, std::move(params), mem);
    interp.run(kMaxSteps);
    res.error = interp.fault().error;
    res.message = interp.fault().message;
    res.printf_output = format_prints(interp.print_buffer(), mem);
    res.stats.steps = interp.stats().steps;
    res.stats.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return res;
  }

 private:
  std::shared_ptr<const Program> program(const engine::LaunchRequest& req) {
    std::string key = req.kernel + '\0' + std::to_string(req.grid.x) + ',' + std::to_string(req.grid.y) + ',' +
                      std::to_string(req.grid.z) + ',' + std::to_string(req.block.x) + ',' +
                      std::to_string(req.block.y) + ',' + std::to_string(req.block.z) + ',' +
                      std::to_string(req.dynamic_smem);
    for (auto& [name, addr] : req.symbols) key += '\0' + name + '=' + std::to_string(addr);
    key += '\0' + req.ptx;
    std::lock_guard<std::mutex> lock(mu_);
    auto it = programs_.find(key);
    if (it != programs_.end()) return it->second;
    auto& mod = modules_[req.ptx];
    if (!mod) mod = std::make_shared<ptx::Module>(ptx::parse(req.ptx));
    LaunchShape shape{req.grid, req.block, req.dynamic_smem, req.symbols};
    auto prog = std::make_shared<const Program>(lower(*mod, req.kernel, shape, params_, {.for_model = model_}));
    programs_[key] = prog;
    return prog;
  }

  const bool model_;
  const Params& params_;
  std::mutex mu_;
  std::unordered_map<std::string, std::shared_ptr<ptx::Module>> modules_;
  std::unordered_map<std::string, std::shared_ptr<const Program>> programs_;
};

}  // namespace

Limits limits(const Params& p) {
  Limits r{};
  r.lanes = p.lanes;
  r.warp_size = Params::kCudaWarp;
  r.registers = p.regs;
  r.rom_blocks = p.rom_blocks;
  r.global_base = p.global_base;
  r.global_bytes = p.global_bytes;
  r.shared_bytes_per_cta = p.shared_bytes;
  r.max_threads_per_cta = p.max_threads;
  r.max_ctas_per_grid = p.max_ctas;
  r.max_grid[0] = r.max_grid[1] = r.max_grid[2] = p.max_ctas;
  r.max_block[0] = r.max_block[1] = p.max_threads;
  r.max_block[2] = std::min<uint32_t>(p.max_threads, 64);
  return r;
}

const Limits& limits() {
  static const Limits l = limits(default_params());
  return l;
}

engine::ModuleInfo inspect_module(const std::string& ptx_text) { return ptx::module_info(ptx::parse(ptx_text)); }

std::unique_ptr<engine::Backend> make_interpreter_backend(MachineKind machine) {
  return std::make_unique<InterpreterBackend>(machine);
}

}  // namespace qgpu::machine
