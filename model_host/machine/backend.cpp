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
  std::string name() const override { return "interpreter"; }

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
    const Params& p = default_params();
    if (req.params.size() > p.param_bytes) {
      res.error = kErrInvalidValue;
      res.message = "kernel " + req.kernel + " has " + std::to_string(req.params.size()) +
                    " bytes of parameters; the machine takes at most " + std::to_string(p.param_bytes);
      return res;
    }
    Interpreter interp(*prog, p, prog->ctas, prog->threads, req.params, mem);
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
    auto prog = std::make_shared<const Program>(lower(*mod, req.kernel, shape, default_params()));
    programs_[key] = prog;
    return prog;
  }

  std::mutex mu_;
  std::unordered_map<std::string, std::shared_ptr<ptx::Module>> modules_;
  std::unordered_map<std::string, std::shared_ptr<const Program>> programs_;
};

}  // namespace

const Limits& limits() {
  static const Limits l = [] {
    const Params& p = default_params();
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
  }();
  return l;
}

engine::ModuleInfo inspect_module(const std::string& ptx_text) { return ptx::module_info(ptx::parse(ptx_text)); }

std::unique_ptr<engine::Backend> make_interpreter_backend() { return std::make_unique<InterpreterBackend>(); }

}  // namespace qgpu::machine
