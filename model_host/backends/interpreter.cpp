// The interpreter backend (interpreter.h): the machine run on the host.
#include <algorithm>
#include <chrono>
#include <cstring>
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
namespace dq = launch::device_queue;

constexpr uint64_t kMaxSteps = 200'000'000;  // EXECs before a launch times out

// Lowered programs are cached per module and launch configuration: the
// lowering specialises on block shape, symbol addresses and the rest of
// LaunchShape, and on as much of the grid as the program reads (GridUse):
// a kernel that reads no %nctaid is lowered once for every one-dimensional
// grid, the CTA count going to the interpreter at launch.
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
    auto t0 = std::chrono::steady_clock::now();
    // Device-side launches: a fresh queue for this host launch (docs/isa.md,
    // "Device-side launches").
    const bool queue = device_launches(req);
    if (queue) {
      put32(mem, req.heap_base + dq::kHead, 0);
      put32(mem, req.heap_base + dq::kPending, 0);
      put32(mem, req.heap_base + dq::kDepth, 0);
      put32(mem, req.heap_base + dq::kLimit, req.pending_launch_limit);
    }
    launch::LaunchResult res = run_grid(req, mem);
    if (queue && res.error == 0) run_children(req, mem, 0, res);
    res.stats.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return res;
  }

 private:
  // Whether a launch's kernels may launch kernels themselves: the CUDA-sized
  // machine with a device heap that holds the queue.
  bool device_launches(const launch::LaunchRequest& req) const {
    return !model_ && req.heap_bytes > dq::kHeapHeader && req.ptx.find("__cudaCDP2") != std::string::npos;
  }
  static uint32_t get32(const launch::GlobalMemory& mem, uint64_t addr) {
    uint32_t v = 0;
    if (addr >= mem.base && addr + 4 <= mem.base + mem.bytes.size()) std::memcpy(&v, mem.bytes.data() + (addr - mem.base), 4);
    return v;
  }
  static void put32(launch::GlobalMemory& mem, uint64_t addr, uint32_t v) {
    if (addr >= mem.base && addr + 4 <= mem.base + mem.bytes.size()) std::memcpy(mem.bytes.data() + (addr - mem.base), &v, 4);
  }
  // free() of the device heap, done by the host for a record it has run.
  static void heap_free(launch::GlobalMemory& mem, uint64_t heap_base, uint32_t p) {
    const uint32_t block = p - 16, k = std::min<uint32_t>(get32(mem, block), 26);
    const uint64_t head_at = heap_base + 4 + 4 * k;
    put32(mem, block + 4, get32(mem, head_at));
    put32(mem, head_at, block);
  }

  // Runs the grids the grid `parent` queued (then theirs, depth first) in
  // the queue's order, the tail launches last: every grid of one stream
  // after the one launched before it and its descendants, all before
  // `parent` counts as complete.  The first fault ends the launch with it.
  void run_children(const launch::LaunchRequest& parent, launch::GlobalMemory& mem, uint32_t depth,
                    launch::LaunchResult& res) {
    const uint64_t hb = parent.heap_base;
    std::vector<uint32_t> recs;
    for (uint32_t r = get32(mem, hb + dq::kHead); r && recs.size() <= (1u << 24); r = get32(mem, r + dq::kNext))
      recs.push_back(r);
    put32(mem, hb + dq::kHead, 0);
    std::reverse(recs.begin(), recs.end());
    std::stable_partition(recs.begin(), recs.end(),
                          [&](uint32_t r) { return get32(mem, r + dq::kStream) != dq::kTailLaunch; });
    for (size_t i = 0; i < recs.size(); ++i) {
      const uint32_t r = recs[i];
      put32(mem, hb + dq::kPending, get32(mem, hb + dq::kPending) - 1);
      // Ends the launch: the records not run yet (from `first`) go back to the heap.
      auto fail = [&](size_t first, int error, const std::string& why) {
        res.error = error;
        res.message = why;
        put32(mem, hb + dq::kPending, 0);
        for (size_t j = first; j < recs.size(); ++j) heap_free(mem, hb, recs[j]);
      };
      if (get32(mem, r + dq::kKind) == dq::kKindCopy) {
        const uint64_t dst = get32(mem, r + dq::kCopyDst), src = get32(mem, r + dq::kCopySrc),
                       n = get32(mem, r + dq::kCopyBytes);
        const uint64_t lo = mem.base, hi = mem.base + mem.bytes.size();
        if (dst < lo || src < lo || dst + n > hi || src + n > hi)
          return fail(i, launch::kIllegalAddress, "a cudaMemcpyAsync of " + std::to_string(n) + " bytes from device code (in " +
                                                   parent.kernel + ") outside global memory");
        std::memmove(mem.bytes.data() + (dst - lo), mem.bytes.data() + (src - lo), n);
        heap_free(mem, hb, r);
        continue;
      }
      launch::LaunchRequest child;
      std::string why = child_request(parent, mem, r, child);
      if (!why.empty()) return fail(i, launch::kInvalidDeviceFunction, why);
      put32(mem, hb + dq::kDepth, depth + 1);
      launch::LaunchResult cres = run_grid(child, mem);
      heap_free(mem, hb, r);
      if (cres.error == 0) run_children(child, mem, depth + 1, cres);
      res.printf_output += cres.printf_output;
      res.stats.steps += cres.stats.steps;
      res.stats.lane_instructions += cres.stats.lane_instructions;
      res.stats.host_threads = std::max(res.stats.host_threads, cres.stats.host_threads);
      if (cres.error)
        return fail(i + 1, cres.error, "child grid " + child.kernel + " (depth " + std::to_string(depth + 1) +
                                           ", launched from " + parent.kernel + "): " + cres.message);
    }
    put32(mem, hb + dq::kDepth, depth);
  }

  // The launch a record describes: its kernel (by address in the parent's
  // module, defined there or in another module of the client), shape and
  // parameters.  Empty, or why it cannot run.
  std::string child_request(const launch::LaunchRequest& parent, const launch::GlobalMemory& mem, uint32_t r,
                            launch::LaunchRequest& child) {
    const uint32_t addr = get32(mem, r + dq::kEntry);
    std::shared_ptr<ptx::Module> mod = module(parent.ptx);
    const uint32_t index = (addr - ptx::kFunctionWindow) / 16;
    if (addr < ptx::kFunctionWindow || index >= mod->functions.size() || ptx::function_address(index) != addr ||
        !mod->functions[index].is_entry)
      return "a device-side launch (from " + parent.kernel + ") of address " + std::to_string(addr) +
             ", which is no kernel of the module";
    const std::string name = mod->functions[index].name;
    child.kernel = name;
    if (mod->functions[index].has_body) {
      child.ptx = parent.ptx;
      child.symbols = parent.symbols;
    } else {
      const launch::PeerModule* peer = nullptr;
      for (const auto& p : parent.peers) {
        auto m = module(p.ptx);
        auto fi = m->function_index(name);
        if (fi && m->functions[*fi].is_entry && m->functions[*fi].has_body) peer = &p;
      }
      if (!peer)
        return "a device-side launch (from " + parent.kernel + ") of " + name + ", which no loaded module defines";
      child.ptx = peer->ptx;
      child.symbols = peer->symbols;
    }
    child.peers = parent.peers;
    child.grid = {get32(mem, r + dq::kGrid), get32(mem, r + dq::kGrid + 4), get32(mem, r + dq::kGrid + 8)};
    child.block = {get32(mem, r + dq::kBlock), get32(mem, r + dq::kBlock + 4), get32(mem, r + dq::kBlock + 8)};
    child.dynamic_smem = get32(mem, r + dq::kSmem);
    child.printf_fifo_bytes = parent.printf_fifo_bytes;
    child.heap_base = parent.heap_base;
    child.heap_bytes = parent.heap_bytes;
    child.pending_launch_limit = parent.pending_launch_limit;
    child.progress = parent.progress;
    const ptx::Function& f = mod->functions[index];
    uint64_t bytes = 0;
    for (const ptx::Var& v : f.params) bytes = std::max<uint64_t>(bytes, v.offset + v.size);
    const uint64_t at = uint64_t(r) + dq::kRecordBytes;
    if (at < mem.base || at + bytes > mem.base + mem.bytes.size()) return "a launch record outside global memory";
    child.params.assign(mem.bytes.data() + (at - mem.base), mem.bytes.data() + (at - mem.base) + bytes);
    return {};
  }

  std::shared_ptr<ptx::Module> module(const std::string& ptx) {
    std::lock_guard<std::mutex> lock(mu_);
    auto& mod = modules_[ptx];
    if (!mod) mod = std::make_shared<ptx::Module>(ptx::parse(ptx));
    return mod;
  }

  // One grid, without the grids it launches.
  launch::LaunchResult run_grid(const launch::LaunchRequest& req, launch::GlobalMemory& mem) {
    launch::LaunchResult res;
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
    // A cooperative launch's blocks each run on a host thread of their own,
    // all at once (grid-wide sync); a kernel whose blocks must run one at a
    // time (Program::ctas_in_order: printf, the device heap, wide strong
    // accesses) takes one block.
    const uint64_t ctas = req.grid.count();
    if (req.grid_workspace && ctas > 1 &&
        (prog->ctas_in_order || ctas > Interpreter::cta_threads() || params.lanes != Params::kCudaWarp)) {
      res.error = launch::kCooperativeLaunchTooLarge;
      res.message = "kernel " + req.kernel + ": a cooperative launch of " + std::to_string(ctas) + " blocks; " +
                    (prog->ctas_in_order
                         ? "its printf, device heap or wide strong accesses run its blocks one at a time, so it keeps "
                           "one block resident: launch it with one block"
                         : "the machine keeps " + std::to_string(params.lanes == Params::kCudaWarp ? Interpreter::cta_threads() : 1) +
                               " resident at once");
      return res;
    }
    // The model's parameter memory holds whole words: a widened byte load of
    // the last parameter reads the word around it.
    std::vector<uint8_t> pbytes = req.params;
    if (model_) pbytes.resize((pbytes.size() + 3) / 4 * 4);
    Interpreter interp(*prog, params, uint32_t(req.grid.count()), prog->threads, std::move(pbytes), mem);
    if (req.progress) interp.set_progress(&req.progress->cta);
    // A cooperative launch's CTAs run all at once and wait for each other
    // in grid.sync() by spinning, EXECs that count too: the limit is each
    // CTA's.
    interp.run(req.grid_workspace ? kMaxSteps * std::max<uint64_t>(ctas, 1) : kMaxSteps,
               req.progress ? &req.progress->cancel : nullptr);
    res.error = interp.fault().error;
    res.message = interp.fault().message;
    res.printf_output = format_prints(interp.print_buffer(), mem);
    res.stats.steps = interp.stats().steps;
    res.stats.lane_instructions = interp.stats().lane_instructions;
    res.stats.host_threads = interp.stats().host_threads;
    return res;
  }

  std::shared_ptr<const Program> program(const launch::LaunchRequest& req, const Params& params) {
    std::string key = req.kernel + '\0' + std::to_string(req.block.x) + ',' +
                      std::to_string(req.block.y) + ',' + std::to_string(req.block.z) + ',' +
                      std::to_string(req.dynamic_smem) + ',' + std::to_string(params.print_bytes) + ',' +
                      std::to_string(req.heap_base) + ',' + std::to_string(req.heap_bytes) + ',' +
                      std::to_string(req.grid_workspace);
    for (auto& [name, addr] : req.symbols) key += '\0' + name + '=' + std::to_string(addr);
    key += '\0' + req.ptx;
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<Lowered>& known = programs_[key];
    for (const Lowered& l : known)
      if (same_lowering(l.grid_use, l.grid, req.grid)) {
        check_grid(req.kernel, req.grid, params);  // what lower() would refuse for this grid
        return l.prog;
      }
    auto& mod = modules_[req.ptx];
    if (!mod) mod = std::make_shared<ptx::Module>(ptx::parse(req.ptx));
    LaunchShape shape{req.grid, req.block, req.dynamic_smem, req.symbols, req.heap_base, req.heap_bytes,
                      req.grid_workspace};
    LowerInfo info;
    auto prog = std::make_shared<const Program>(
        lower(*mod, req.kernel, shape, params,
              {.for_model = model_, .native_float = params.native_float, .device_launches = !model_}, &info));
    known.push_back({info.grid, req.grid, prog});
    return prog;
  }

  // A program lowered for `grid`, which it depends on as `grid_use` says.
  struct Lowered {
    GridUse grid_use;
    launch::Dim3 grid;
    std::shared_ptr<const Program> prog;
  };

  const bool model_;
  const Params params_;
  launch::DeviceSpec device_;
  std::mutex mu_;
  std::unordered_map<std::string, std::shared_ptr<ptx::Module>> modules_;
  std::unordered_map<std::string, std::vector<Lowered>> programs_;
};

}  // namespace

std::unique_ptr<launch::Backend> make_interpreter_backend(MachineKind machine, uint64_t global_bytes) {
  return std::make_unique<InterpreterBackend>(machine, global_bytes);
}

}  // namespace qgpu::backends
