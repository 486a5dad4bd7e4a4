// The expected trace of a launch (docs/tokens.md section 4), and token dumps.
//
// TraceOracle runs the reference interpreter on machine::model_params() and
// turns its schedule into the tokens the model must write after `START`, one
// at a time, so that `--check` can compare each generated token as it comes.
// The oracle keeps its own view of the scan the tokens describe (the current
// CTA, the thread the last WARP names, each thread's pc and whether it has
// exited or waits at `bar` (and in which barrier epoch) or at `wbar`, the
// warp groups' release pcs and the running WMIN) and checks every
// interpreter step against it: a step of another CTA, thread or block means
// docs/tokens.md and docs/isa.md disagree, and throws std::logic_error.
#pragma once

#include <cstdint>
#include <array>
#include <deque>
#include <string>
#include <vector>

#include "model_host/launch/launch.h"
#include "model_host/tokens/vocab.h"
#include "model_host/machine/interpreter.h"
#include "model_host/machine/isa.h"

namespace qgpu::gpu {

class TraceOracle {
 public:
  // A launch of `prog` over `ctas` CTAs of `threads` threads.  The oracle
  // keeps its own copies of the program and of `global`, which it updates as
  // the launch runs.  Throws std::invalid_argument when the interpreter
  // refuses the launch (machine::validate() for model_params(), limits), or
  // when the trace cannot describe it: a trap code beyond TRAP's payload.
  TraceOracle(machine::Program prog, uint32_t threads, uint32_t ctas, std::vector<uint8_t> params,
              launch::GlobalMemory global);
  TraceOracle(const TraceOracle&) = delete;
  TraceOracle& operator=(const TraceOracle&) = delete;

  // The token the model must write next.  After END, done() is true and
  // next() throws std::logic_error.
  int64_t next();
  bool done() const { return done_; }

  // EXEC tokens written so far (docs/tokens.md section 5's "steps").  Equal
  // to the interpreter's step count, except that a faulting access is one
  // EXEC more: the interpreter does not count the step it could not finish.
  uint64_t steps() const { return steps_; }

  // Where the trace stands, for divergence reports: CTA, thread and its state,
  // the last block run with its instruction, the thread's registers r0..r31,
  // and the last tokens written.
  std::string context() const;

  // The launch's results once done(): global memory, the printf space, and
  // the fault or trap that stopped it (error 0 when none).
  const launch::GlobalMemory& memory() const { return global_; }
  const std::vector<uint8_t>& print_buffer() const { return interp_.print_buffer(); }
  const machine::Fault& fault() const { return interp_.fault(); }

 private:
  enum class Status : uint8_t { Runnable, AtBarrier, Exited, AtWbar };
  struct Thread {
    uint32_t pc = 0;
    Status status = Status::Runnable;
    uint8_t epoch = 0;  // the barrier epoch it waits in (AtBarrier)
  };

  int64_t after(const Token& read);
  int64_t exec();
  int64_t control();
  int64_t start_cta(uint32_t c);
  bool runnable(uint32_t w) const;
  int64_t stop_at_wbar(uint32_t pc, bool stopped);
  int64_t next_thread();
  [[noreturn]] void mismatch(const std::string& what) const;

  const machine::Program prog_;
  const uint32_t threads_, ctas_;
  launch::GlobalMemory global_;
  machine::Interpreter interp_;

  // The scan the tokens describe.
  uint32_t cta_ = 0;
  uint32_t warp_ = 0;     // the thread of the last WARP
  uint32_t block_ = 0;    // the block run last (by EXEC, VX, WARPS or a fall-through value)
  // The kinds of the token read and the 2 before it: the window of the token
  // written (fall-through values need a marker there: vocab.h).
  std::array<Kind, 3> window_{Kind::END, Kind::END, Kind::END};
  uint32_t start_pc_ = 0; // the block the last EXEC after a WARP named (WARPS runs from it)
  uint32_t falls_ = 0;    // fall-through values since the last EXEC, VX or WARPS
  uint8_t epoch_ = 0;     // of the CTA's last BARRIER, 0 if none
  uint32_t high_ = 0;     // the high half a VLO announces
  bool high_falls_ = false;  // ... and whether it comes as DF
  std::vector<Thread> thread_;
  // Warp groups (docs/tokens.md section 4): per group the release pc the
  // last pass left (kNone: none), the current group's running minimum (the
  // last WMIN since the scan entered the group), and whether this pass wrote
  // a WMIN.
  static constexpr int32_t kNone = -1;
  std::vector<int32_t> release_;
  int32_t wmin_ = kNone;
  bool wmin_in_pass_ = false;
  Token last_{Kind::START};
  bool done_ = false;
  uint64_t steps_ = 0;
  std::deque<int64_t> recent_;  // the last tokens written, for context()
};

// The whole trace after START (ending in END).  Throws std::runtime_error
// when the launch runs more than `max_steps` EXECs, as a kernel that never
// ends would.
std::vector<int64_t> expected_trace(const machine::Program& prog, uint32_t threads, uint32_t ctas,
                                    const std::vector<uint8_t>& params, const launch::GlobalMemory& global,
                                    uint64_t max_steps = 10'000'000);

// Token dumps.  `format_tokens` writes ids separated by spaces: the form of
// `qgpu run --dump-tokens`, whose line per launch is
// `format_tokens(prompt) + " | " + format_tokens(generated)` (dump_line).
// `format_token_names` writes the same sequence as vocabulary names
// ("EXEC(3) VZ(0x0020)"), for people reading a trace.
std::string format_tokens(const std::vector<int64_t>& ids);
std::string format_token_names(const std::vector<int64_t>& ids);
std::string dump_line(const std::vector<int64_t>& prompt, const std::vector<int64_t>& generated);
// Appends dump_line(prompt, generated) and a newline to `file`; throws
// std::runtime_error naming the file when it cannot.
void append_dump(const std::string& file, const std::vector<int64_t>& prompt, const std::vector<int64_t>& generated);

}  // namespace qgpu::gpu
