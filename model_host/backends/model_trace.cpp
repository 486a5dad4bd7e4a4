// The "model-trace" backend: a launch as the model would run it, with the
// trace computed by the reference interpreter instead of the model.
//
// It lowers and encodes a launch exactly as the model backend does, then
// takes the trace from TraceOracle (docs/tokens.md section 4) and the memory
// from the interpreter the oracle runs.  Its statistics are the model's: the
// prompt and generated token counts and the steps, so the cost of a program
// on the model is known without running the model (`qgpu suite-table
// --machine model`).  Like interpreter-model, it is a measuring and
// cross-checking tool chosen by name, never a fallback for the model.
//
// Each client's memory is kept here as the model keeps it in its state, and
// a copy to the device or a memset becomes the write records the model
// backend would append (only the words whose value changes), so that
// --dump-tokens writes the client's whole sequence as the model reads it:
// a line "ids | " per write, "prompt | generated" per launch.
#include "model_host/launch/errors.h"
#include "model_host/backends/model_trace.h"

#include "model_host/machine/api.h"

#include <chrono>
#include <cstring>
#include <mutex>
#include <optional>
#include <stdexcept>

#include "model_host/tokens/prompt.h"
#include "model_host/tokens/trace.h"
#include "model_host/machine/api.h"
#include "model_host/machine/printf.h"

namespace qgpu::backends {
using namespace qgpu::gpu;
namespace {


class TraceBackend : public launch::Backend {
 public:
  TraceBackend(std::string dump_tokens, uint64_t max_steps) : dump_tokens_(std::move(dump_tokens)), max_steps_(max_steps) {}
  std::string name() const override { return "model-trace"; }
  launch::DeviceSpec device() const override {
    launch::DeviceSpec d = machine::model_device();  // the model's device, without the model
    d.name = "qgpu (model-trace)";
    return d;
  }

  std::unique_ptr<launch::DeviceContext> open_context() override { return std::make_unique<Context>(*this); }

  launch::LaunchResult launch(const launch::LaunchRequest& req, launch::GlobalMemory& mem) override {
    const auto t0 = std::chrono::steady_clock::now();
    launch::LaunchResult res;
    try {
      run(req, mem, res);
    } catch (const LaunchRefused& e) {
      res.error = e.error;
      res.message = e.what();
    } catch (const std::logic_error& e) {  // the interpreter and docs/tokens.md disagree
      res.error = launch::kUnknown;
      res.message = e.what();
    }
    res.stats.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return res;
  }

 private:
  // One client's memory, as the model's state would hold it.
  class Context : public launch::DeviceContext {
   public:
    explicit Context(TraceBackend& b) : b_(b) {
      mem_.base = machine::model_params().global_base;
      mem_.bytes.assign(machine::model_params().global_bytes, 0);
    }
    void write(uint64_t offset, const uint8_t* data, uint64_t size) override {
      if (size == 0) return;
      check_range(offset, size, "write");
      const uint64_t first = offset / 4, count = (offset + size - 1) / 4 - first + 1;
      std::vector<uint32_t> old(count);
      std::memcpy(old.data(), mem_.bytes.data() + 4 * first, 4 * count);
      const auto records = changed_words(old, offset, data, size);
      std::memcpy(mem_.bytes.data() + offset, data, size);
      if (records.empty() || b_.dump_tokens_.empty()) return;
      b_.dump(encode_writes(records), {});
    }
    void read(uint64_t offset, uint8_t* out, uint64_t size) override {
      if (size == 0) return;
      check_range(offset, size, "read");
      std::memcpy(out, mem_.bytes.data() + offset, size);
    }
    launch::LaunchResult launch(const launch::LaunchRequest& req) override { return b_.launch(req, mem_); }

   private:
    void check_range(uint64_t offset, uint64_t size, const char* what) const {
      const uint64_t n = mem_.bytes.size();
      if (offset > n || size > n - offset)
        throw std::runtime_error(std::string(what) + " of " + std::to_string(size) + " bytes at offset " +
                                 std::to_string(offset) + " is outside the model's " + std::to_string(n) +
                                 "-byte global memory");
    }
    TraceBackend& b_;
    launch::GlobalMemory mem_;
  };

  void run(const launch::LaunchRequest& req, launch::GlobalMemory& mem, launch::LaunchResult& res) const {
    const machine::Program prog = lower_for_model(req);
    std::vector<int64_t> prompt;
    std::optional<TraceOracle> oracle;
    try {
      prompt = encode_launch(prog, prog.threads, prog.ctas, req.params);  // as the model: memory stays in its state
      oracle.emplace(prog, prog.threads, prog.ctas, req.params, mem);
    } catch (const std::invalid_argument& e) {
      throw LaunchRefused(launch::kInvalidValue, "launch of " + req.kernel + " does not fit the model's GPU: " + e.what());
    }
    res.stats.prompt_tokens = prompt.size();
    std::vector<int64_t> generated;
    while (!oracle->done()) {
      if (oracle->steps() > max_steps_)
        throw LaunchRefused(launch::kLaunchTimeout, "kernel " + req.kernel + " ran more than " +
                                                   std::to_string(max_steps_) + " steps without END");
      generated.push_back(oracle->next());
    }
    res.stats.generated_tokens = generated.size();
    if (!dump_tokens_.empty()) {
      try {
        dump(prompt, generated);
      } catch (const std::runtime_error& e) {
        throw LaunchRefused(launch::kUnknown, e.what());
      }
    }
    res.stats.steps = oracle->steps();
    mem.bytes = oracle->memory().bytes;
    res.printf_output = machine::format_prints(oracle->print_buffer(), mem);
    if (oracle->fault().error != 0) {
      res.error = oracle->fault().error;
      res.message = oracle->fault().message;
    }
  }

  // One line to the dump; concurrent clients' lines stay whole.
  void dump(const std::vector<int64_t>& prompt, const std::vector<int64_t>& generated) const {
    static std::mutex one_at_a_time;
    std::lock_guard<std::mutex> g(one_at_a_time);
    append_dump(dump_tokens_, prompt, generated);
  }

  std::string dump_tokens_;
  uint64_t max_steps_;
};

}  // namespace

std::unique_ptr<launch::Backend> make_trace_backend(const std::string& dump_tokens, uint64_t max_steps) {
  return std::make_unique<TraceBackend>(dump_tokens, max_steps);
}

}  // namespace qgpu::backends
