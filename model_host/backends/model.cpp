#include "model_host/launch/errors.h"
#include "model_host/backends/model.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <fstream>
#include <mutex>
#include <optional>
#include <stdexcept>

#include "model_host/backends/registry.h"
#include "model_host/model_cache/build_model.h"
#include "model_host/machine/api.h"
#include "model_host/tokens/prompt.h"
#include "model_host/tokens/trace.h"
#include "model_host/tokens/vocab.h"
#include "model_host/lower/lower.h"
#include "model_host/machine/printf.h"
#include "model_host/ptx/parse.h"
#include "model_host/qwen/model.h"

namespace qgpu::backends {
using namespace qgpu::gpu;
namespace {

// cudaError_t values (driver_types.h).

std::string hex_word(uint32_t v) {
  char b[16];
  std::snprintf(b, sizeof b, "0x%08x", v);
  return b;
}

std::vector<uint8_t> to_bytes(const std::vector<uint32_t>& words) {
  std::vector<uint8_t> b(words.size() * 4);
  std::memcpy(b.data(), words.data(), b.size());
  return b;
}

// Where the model's trace stands, as its own records say: the last CTA,
// WARP and EXEC (or VX) tokens name the thread and block that a TRAP, FAULT or
// divergence belongs to.
struct TracePosition {
  std::optional<uint32_t> cta, thread, block, start;
  bool after_warp = false;

  void see(int64_t id) {
    auto t = decode_token(id);
    if (!t) return;
    if (t->kind == Kind::CTA) cta = t->payload;
    if (t->kind == Kind::WARP) thread = t->payload;
    if (names_block(t->kind)) block = block_of(*t);
    if (t->kind == Kind::EXEC && after_warp) start = t->payload;  // WARPS runs from there
    if (t->kind == Kind::WARPS) thread = t->payload, block = start;
    if (falls_through(t->kind) && block) ++*block;
    after_warp = t->kind == Kind::WARP;
  }
  std::string describe(const machine::Program& prog) const {
    std::string s;
    if (block) {
      s += "block " + std::to_string(*block);
      if (*block < prog.blocks.size()) {
        const machine::Block& b = prog.blocks[*block];
        s += " (";
        for (const auto& in : b.instrs) s += machine::to_string(in) + "; ";
        s += machine::to_string(b.term) + ")";
      }
    }
    if (thread) s += std::string(s.empty() ? "" : ", ") + "thread " + std::to_string(*thread);
    if (cta) s += std::string(s.empty() ? "" : ", ") + "CTA " + std::to_string(*cta);
    return s.empty() ? "before the first CTA" : s;
  }
};

// The first word where two images differ, as a report line; empty when equal.
std::string first_difference(const std::string& what, uint64_t base, const std::vector<uint8_t>& model,
                             const std::vector<uint8_t>& reference) {
  const size_t n = std::min(model.size(), reference.size());
  for (size_t i = 0; i < n; i += 4) {
    uint32_t m = 0, r = 0;
    std::memcpy(&m, model.data() + i, std::min<size_t>(4, n - i));
    std::memcpy(&r, reference.data() + i, std::min<size_t>(4, n - i));
    if (m != r) {
      char addr[24];
      std::snprintf(addr, sizeof addr, "0x%llx", static_cast<unsigned long long>(base + i));
      return what + " word at " + addr + ": the model holds " + hex_word(m) + ", the reference " + hex_word(r);
    }
  }
  return model.size() == reference.size() ? "" : what + " sizes differ";
}

// One weight changed after loading (ModelOptions::perturb).
struct Perturbation {
  std::string tensor;
  int64_t index = 0;
  float value = 0;
};

Perturbation parse_perturbation(const std::string& spec) {
  const size_t a = spec.find(':'), b = spec.rfind(':');
  if (a == std::string::npos || a == b)
    throw std::invalid_argument("perturbation '" + spec + "' is not NAME:INDEX:VALUE");
  Perturbation p;
  p.tensor = spec.substr(0, a);
  try {
    size_t used = 0;
    p.index = std::stoll(spec.substr(a + 1, b - a - 1), &used);
    if (used != b - a - 1) throw std::invalid_argument("index");
    p.value = std::stof(spec.substr(b + 1), &used);
    if (used != spec.size() - b - 1) throw std::invalid_argument("value");
  } catch (const std::exception&) {
    throw std::invalid_argument("perturbation '" + spec + "': INDEX must be an integer and VALUE a number");
  }
  return p;
}

// Why a launch stopped early: a cudaError_t and the message that names why.
struct LaunchFailure {
  int error;
  std::string message;
};

// What the greedy loop produced: the generated tokens (ending in END unless
// `failure`) and where the trace stood.
struct Decoded {
  std::vector<int64_t> generated;
  TracePosition pos;
  std::optional<LaunchFailure> failure;
};

class ModelBackend : public launch::Backend {
 public:
  ModelBackend(LoadedModel loaded, ModelOptions opts)
      : ModelBackend(make_model(std::move(loaded.checkpoint), opts), std::move(loaded.layout), std::move(opts)) {}
  ModelBackend(std::shared_ptr<const qwen::Model> model, Layout layout, ModelOptions opts)
      : layout_(std::move(layout)), model_(std::move(model)), opts_(std::move(opts)), end_(token_id(Kind::END)) {}

  // Reads `ck` up, releasing each tensor once it is read (qwen::Model(Checkpoint&&)).
  static std::shared_ptr<const qwen::Model> make_model(qwen::Checkpoint&& ck, const ModelOptions& opts) {
    auto model = std::make_shared<qwen::Model>(std::move(ck), opts.dense ? qwen::Exec::Dense : qwen::Exec::Sparse);
    if (!opts.memo) model->set_memo_entries(0);
    return model;
  }

  std::string name() const override { return "model"; }
  // The model is immutable (qwen::Model runs concurrently on its own
  // workspaces) and every launch has its own state, trace and oracle.
  bool concurrent() const override { return true; }
  // The device the compiled checkpoint holds (machine::model_params()).
  launch::DeviceSpec device() const override { return machine::model_device(); }

  // One launch on a fresh sequence: the image's non-zero words as write
  // records, the launch, and the whole global memory read back.
  launch::LaunchResult launch(const launch::LaunchRequest& req, launch::GlobalMemory& mem) override {
    const machine::Params& p = machine::model_params();
    launch::LaunchResult res;
    if (mem.base != p.global_base || mem.bytes.size() > p.global_bytes) {
      res.error = launch::kInvalidValue;
      res.message = "global memory image of " + std::to_string(mem.bytes.size()) + " bytes at " +
                    hex_word(uint32_t(mem.base)) + "; the model's GPU holds " + std::to_string(p.global_bytes) +
                    " bytes at " + hex_word(p.global_base);
      return res;
    }
    Context ctx(*this);
    try {
      ctx.write(0, mem.bytes.data(), mem.bytes.size());
    } catch (const std::exception& e) {
      res.error = launch::kUnknown;
      res.message = e.what();
      return res;
    }
    res = ctx.launch(req);
    // A kernel's own end (END, a trap, a fault, a timeout) leaves memory as
    // a GPU would; a divergent or garbled trace leaves the image untouched.
    if (res.stats.generated_tokens > 0 && res.error != launch::kUnknown) {
      try {
        ctx.read(0, mem.bytes.data(), mem.bytes.size());
      } catch (const std::exception& e) {
        if (res.error == 0) {
          res.error = launch::kUnknown;
          res.message = e.what();
        }
      }
    }
    return res;
  }

  std::unique_ptr<launch::DeviceContext> open_context() override { return std::make_unique<Context>(*this); }

 private:
  // One client's device memory: the sequence the model has read so far, whose
  // GDN states hold the global memory (docs/tokens.md section 3).  With
  // `check`, a mirror of the memory feeds the reference interpreter.
  class Context : public launch::DeviceContext {
   public:
    explicit Context(const ModelBackend& b) : b_(b), state_(b.model_->new_state()) {
      if (b_.opts_.check) {
        mirror_.base = machine::model_params().global_base;
        mirror_.bytes.assign(machine::model_params().global_bytes, 0);
      }
    }

    // Only the words the bytes touch, and of those only the ones whose value
    // changes (the state says what they hold), become records.
    void write(uint64_t offset, const uint8_t* data, uint64_t size) override {
      if (size == 0) return;
      check_range(offset, size, "write");
      const uint32_t first = uint32_t(offset / 4), last = uint32_t((offset + size - 1) / 4);
      const std::vector<std::pair<uint32_t, uint32_t>> records =
          changed_words(b_.words(state_, first, last - first + 1), offset, data, size);
      if (!mirror_.bytes.empty()) std::memcpy(mirror_.bytes.data() + offset, data, size);
      if (records.empty()) return;
      const std::vector<int64_t> tokens = encode_writes(records);
      b_.prefill(state_, tokens);
      if (!b_.opts_.dump_tokens.empty()) append_dump(b_.opts_.dump_tokens, tokens, {});  // a line "ids | "
      if (mirror_.bytes.empty()) return;
      // --check: the written words now read back as the mirror holds them.
      const std::vector<uint32_t> now = b_.words(state_, first, last - first + 1);
      for (uint32_t w = first; w <= last; ++w) {
        uint32_t m = 0;
        std::memcpy(&m, mirror_.bytes.data() + 4 * uint64_t(w), 4);
        if (now[w - first] != m)
          throw std::runtime_error("--check: after its write records the model's global word " + std::to_string(w) +
                                   " holds " + hex_word(now[w - first]) + ", the copy wrote " + hex_word(m));
      }
    }

    void read(uint64_t offset, uint8_t* out, uint64_t size) override {
      if (size == 0) return;
      check_range(offset, size, "read");
      const uint32_t first = uint32_t(offset / 4), last = uint32_t((offset + size - 1) / 4);
      const std::vector<uint8_t> bytes = to_bytes(b_.words(state_, first, last - first + 1));
      std::memcpy(out, bytes.data() + (offset - uint64_t(first) * 4), size);
    }

    launch::LaunchResult launch(const launch::LaunchRequest& req) override {
      const auto t0 = std::chrono::steady_clock::now();
      launch::LaunchResult res;
      try {
        b_.run(req, state_, mirror_, res);
      } catch (const LaunchFailure& f) {
        res.error = f.error;
        res.message = f.message;
      }
      res.stats.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      return res;
    }

   private:
    static void check_range(uint64_t offset, uint64_t size, const char* what) {
      const uint64_t n = machine::model_params().global_bytes;
      if (offset > n || size > n - offset)
        throw std::runtime_error(std::string(what) + " of " + std::to_string(size) + " bytes at offset " +
                                 std::to_string(offset) + " is outside the model's " + std::to_string(n) +
                                 "-byte global memory");
    }

    const ModelBackend& b_;
    qwen::State state_;
    launch::GlobalMemory mirror_;  // --check only
  };

  // Words [first, first + count) of global memory, from the state.
  std::vector<uint32_t> words(const qwen::State& state, uint32_t first, uint32_t count) const {
    return read_words(layout_, *model_, state, "global", count, first);
  }

 private:
  // One launch continuing `state`; throws LaunchFailure.  `mirror` (empty
  // without check) is the memory the reference interpreter starts from, and
  // becomes what it leaves.
  void run(const launch::LaunchRequest& req, qwen::State& state, launch::GlobalMemory& mirror,
           launch::LaunchResult& res) const {
    machine::Program prog;
    try {
      prog = lower_for_model(req);
    } catch (const LaunchRefused& e) {
      throw LaunchFailure{e.error, e.what()};
    }
    std::vector<int64_t> prompt;
    try {
      prompt = encode_launch(prog, prog.threads, prog.ctas, req.params);
    } catch (const std::invalid_argument& e) {
      throw LaunchFailure{launch::kInvalidValue, "launch of " + req.kernel + " does not fit the model's GPU: " + e.what()};
    }
    std::optional<TraceOracle> oracle;
    try {
      if (opts_.check) oracle.emplace(prog, prog.threads, prog.ctas, req.params, mirror);
    } catch (const std::invalid_argument& e) {
      throw LaunchFailure{launch::kNotSupported, "--check cannot follow kernel " + req.kernel + ": " + e.what()};
    }

    Decoded d = decode(state, prompt, oracle ? &*oracle : nullptr, prog, req.progress);
    res.stats.prompt_tokens = prompt.size();
    res.stats.generated_tokens = d.generated.size();
    for (int64_t id : d.generated)
      if (auto t = decode_token(id); t && runs_block(t->kind)) ++res.stats.steps;
    if (!opts_.dump_tokens.empty()) dump(prompt, d.generated);
    // The memory is where the model left it, in the state: after END, and
    // after a timeout (as a real GPU's partial writes stay).  The printf
    // space is read back, and with --check both are compared.
    if (d.failure && d.failure->error != launch::kLaunchTimeout) throw *d.failure;
    read_back(state, req.kernel, res, d.failure ? nullptr : oracle ? &*oracle : nullptr);
    if (oracle && !d.failure) mirror = oracle->memory();
    if (d.failure) throw *d.failure;

    // The kernel's own end: a TRAP or FAULT record just before END.
    const auto last = d.generated.size() >= 2 ? decode_token(d.generated[d.generated.size() - 2]) : std::nullopt;
    if (last && last->kind == Kind::TRAP)
      throw LaunchFailure{int(last->payload), "kernel " + req.kernel + " trapped with code " +
                                                  std::to_string(last->payload) + " in " + d.pos.describe(prog)};
    if (last && last->kind == Kind::FAULT) {
      const bool misaligned = last->payload == uint32_t(Fault::Misaligned);
      throw LaunchFailure{misaligned ? launch::kMisalignedAddress : launch::kIllegalAddress,
                          std::string(misaligned ? "misaligned" : "out-of-range") + " memory access by kernel " +
                              req.kernel + " in " + d.pos.describe(prog)};
    }
  }

  // Prefill, then the plain greedy loop: append the argmax, feed it back,
  // stop at END.  With an oracle, every token is compared as it comes.
  // The state then holds END too: the client's sequence is every prompt and
  // write record and every generated token, in order.
  Decoded decode(qwen::State& state, const std::vector<int64_t>& prompt, TraceOracle* oracle,
                 const machine::Program& prog,
                 launch::LaunchProgress* progress) const {
    Decoded d{{}, {}, {}};
    for (int64_t token = prefill(state, prompt);; token = model_->step_argmax(state, token)) {
      d.generated.push_back(token);
      d.pos.see(token);
      if (progress) {
        progress->generated_tokens.store(d.generated.size(), std::memory_order_relaxed);
        if (d.pos.cta) progress->cta.store(uint64_t(*d.pos.cta) + 1, std::memory_order_relaxed);
        // No one waits for this launch any more: one relaxed load a token
        // (a token costs a forward pass) ends it at the next token.
        if (progress->cancel.load(std::memory_order_relaxed)) {
          d.failure = LaunchFailure{launch::kLaunchFailure,
                                    "launch cancelled after " + std::to_string(d.generated.size()) +
                                        " generated tokens: no one waits for it (its client exited, or model_host "
                                        "is stopping)"};
          return d;
        }
      }
      const size_t at = d.generated.size() - 1;
      if (oracle) {
        const int64_t expected = oracle->next();
        if (token != expected) {
          d.failure = LaunchFailure{launch::kUnknown, "--check: the model diverged from the reference interpreter at generated token " +
                                                     std::to_string(at) + " (sequence position " +
                                                     std::to_string(prompt.size() + at) + "): expected " +
                                                     token_name(expected) + ", the model wrote " + token_name(token) +
                                                     "\n" + oracle->context()};
          return d;
        }
      }
      if (!decode_token(token)) {
        d.failure = LaunchFailure{launch::kUnknown, "the model wrote token id " + std::to_string(token) +
                                                   ", outside the circuit vocabulary, at generated token " +
                                                   std::to_string(at) + " (" + d.pos.describe(prog) + ")"};
        return d;
      }
      if (token == end_) {
        model_->step_argmax(state, token);
        return d;
      }
      if (d.generated.size() >= opts_.max_tokens) {
        d.failure = LaunchFailure{launch::kLaunchTimeout, "kernel " + prog.kernel + " ran " +
                                                         std::to_string(d.generated.size()) +
                                                         " generated tokens without END (the limit is " +
                                                         std::to_string(opts_.max_tokens) + ")"};
        return d;
      }
    }
  }

  // Batched prefill of the prompt; returns the argmax after its last token
  // (the numbers do not depend on the chunking: batched and token-by-token
  // forward passes are bit-identical).
  int64_t prefill(qwen::State& state, const std::vector<int64_t>& prompt) const {
    constexpr size_t kChunk = 256;
    int64_t next = -1;
    for (size_t i = 0; i < prompt.size(); i += kChunk) {
      const auto first = prompt.begin() + std::ptrdiff_t(i);
      next = model_->forward_argmax(state, {first, first + std::ptrdiff_t(std::min(kChunk, prompt.size() - i))});
    }
    return next;
  }

  // The printf space from the model's state into the launch's printf output
  // (a %s reads its string from global memory, in the state too); with an
  // oracle, global memory and the printf space must equal the reference
  // interpreter's.
  void read_back(const qwen::State& state, const std::string& kernel, launch::LaunchResult& res,
                 const TraceOracle* oracle) const {
    const machine::Params& p = machine::model_params();
    std::vector<uint8_t> print;
    launch::GlobalMemory global{p.global_base, {}};
    try {
      print = to_bytes(read_words(layout_, *model_, state, "print", p.print_bytes / 4));
      const bool printed = std::any_of(print.begin(), print.end(), [](uint8_t x) { return x != 0; });
      if (printed || oracle) global.bytes = to_bytes(words(state, 0, p.global_bytes / 4));
      if (printed) res.printf_output = machine::format_prints(print, global);
    } catch (const std::exception& e) {
      throw LaunchFailure{launch::kUnknown, "reading the model's memory back after kernel " + kernel + " failed: " + e.what()};
    }
    if (!oracle) return;
    std::string diff = first_difference("global memory", global.base, global.bytes.vector(), oracle->memory().bytes.vector());
    if (diff.empty()) diff = first_difference("printf space", 0, print, oracle->print_buffer());
    if (!diff.empty())
      throw LaunchFailure{launch::kUnknown, "--check: after END the model's memory differs from the reference interpreter's: " + diff};
  }

  void dump(const std::vector<int64_t>& prompt, const std::vector<int64_t>& generated) const {
    static std::mutex one_at_a_time;  // concurrent launches: whole lines
    std::lock_guard<std::mutex> g(one_at_a_time);
    try {
      append_dump(opts_.dump_tokens, prompt, generated);
    } catch (const std::runtime_error& e) {
      throw LaunchFailure{launch::kUnknown, e.what()};
    }
  }

  Layout layout_;
  std::shared_ptr<const qwen::Model> model_;
  ModelOptions opts_;
  int64_t end_;
};

}  // namespace

std::unique_ptr<launch::Backend> make_model_backend(const std::string& dir, const ModelOptions& options) {
  LoadedModel loaded = load_model(dir, qwen::Storage::Sparse);
  // The device's global memory is the size this model was built with.
  machine::set_model_global_bytes(uint32_t(loaded.layout.memory("global").rows) * 4);
  for (const std::string& spec : options.perturb) {
    const Perturbation p = parse_perturbation(spec);
    auto it = loaded.checkpoint.tensors.find(p.tensor);
    if (it == loaded.checkpoint.tensors.end())
      throw std::runtime_error("perturbation: the checkpoint in " + dir + " has no tensor " + p.tensor);
    it->second = qwen::dense(it->second);  // edited in place below
    torch::Tensor flat = it->second.view({-1});
    if (p.index < 0 || p.index >= flat.numel())
      throw std::runtime_error("perturbation: index " + std::to_string(p.index) + " is outside " + p.tensor + " (" +
                               std::to_string(flat.numel()) + " weights)");
    flat[p.index].fill_(p.value);
  }
  return std::make_unique<ModelBackend>(std::move(loaded), options);
}

std::unique_ptr<launch::Backend> make_model_backend(std::shared_ptr<const qwen::Model> model, gpu::Layout layout,
                                                    const ModelOptions& options) {
  return std::make_unique<ModelBackend>(std::move(model), std::move(layout), options);
}

}  // namespace qgpu::backends

// The model backend as backends::make_backend loads it (model_host/backends/registry.cpp):
// the model directory of `options`, or the model cache, built there on first use.
extern "C" qgpu::launch::Backend* qgpu_make_model_backend(const qgpu::backends::BackendOptions& options) {
  std::string dir = options.model_dir;
  if (dir.empty()) {
    dir = qgpu::gpu::default_model_dir();
    qgpu::gpu::ensure_model(dir, options.progress);
  }
  return qgpu::backends::make_model_backend(dir, options.model).release();
}
