// The reference interpreter: the executable form of docs/isa.md.
//
// It runs a Program over one launch deterministically, one EXEC(b, w) at a
// time.  `step()` exposes each EXEC (block, warp, active lanes, registers
// written per lane, memory writes) so that the model backend can compare the
// model's trace against it token by token.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "model_host/launch/launch.h"
#include "model_host/machine/float_eval.h"
#include "model_host/machine/isa.h"
#include "model_host/machine/jit.h"

namespace qgpu::machine {

struct RegWrite {
  uint32_t lane;
  uint32_t reg;
  uint32_t value;
};
struct MemWrite {
  Space space;
  uint32_t lane;
  uint32_t addr;  // device address (global) or offset in the space
  uint32_t bytes;
  uint32_t value;
};

// One EXEC(b, w).
struct StepRecord {
  uint32_t cta = 0, warp = 0, block = 0;
  uint64_t mask = 0;           // lanes that executed the block
  std::vector<RegWrite> regs;  // in (instruction, lane) order
  std::vector<MemWrite> mem;   // in commit order
};

struct InterpStats {
  uint64_t steps = 0;              // EXECs
  uint64_t instructions = 0;       // block instructions executed per EXEC (warp-level)
  uint64_t lane_instructions = 0;  // the same, counted per active lane
  uint32_t host_threads = 1;       // the host threads that ran the CTAs (set_cta_threads)
};

struct Fault {
  int error = 0;  // cudaError_t
  std::string message;
};

class Interpreter {
 public:
  // `mem` must outlive the interpreter; its bytes are read and written in place.
  // A program the machine cannot run (validate(): float ops on a machine
  // without Params::native_float included) is refused.
  Interpreter(const Program& prog, const Params& p, uint32_t ctas, uint32_t threads, std::vector<uint8_t> params,
              launch::GlobalMemory& mem);
  ~Interpreter();
  Interpreter(const Interpreter&) = delete;
  Interpreter& operator=(const Interpreter&) = delete;

  // Runs one EXEC.  Returns false when none is left (the launch has ended or
  // faulted before; `rec` untouched), or when this EXEC faults: then `rec`
  // names the CTA, warp and block that faulted, and fault() the error.
  bool step(StepRecord* rec = nullptr);
  // Runs to completion; a launch that needs more than `max_steps` EXECs
  // faults with cudaErrorLaunchTimeout, and one whose `cancel` is set
  // (looked at every kCancelSteps EXECs) with cudaErrorLaunchFailure.
  void run(uint64_t max_steps = UINT64_MAX, const std::atomic<bool>* cancel = nullptr);
  static constexpr uint64_t kCancelSteps = 1 << 14;

  // The block compiler for this launch (jit.h), in place of QGPU_JIT's
  // choice: Off, On (blocks compiled after jit::threshold() EXECs) or Always
  // (from their first EXEC); `threshold`: On's EXECs before compiling (0:
  // jit::threshold()).  32-lane machines only; before the first step.
  void set_jit(jit::Mode m, uint32_t threshold = 0);

  // run() on the CUDA-sized device (32 lanes) runs a launch's CTAs on up to
  // `n` host threads at once, each taking the next CTA in launch order (a
  // legal CUDA schedule: CTAs are independent, every CTA that starts runs to
  // its end, so one waiting on an earlier CTA's results always sees them
  // come); 1 runs them one at a time as step() does.  Default: cta_threads().
  // Launches of one CTA, of a program that relies on CTAs in order
  // (Program::ctas_in_order: printf among others), and step() always run one
  // CTA at a time.  Before the first step.
  void set_cta_threads(uint32_t n) { cta_threads_ = n ? n : 1; }
  // QGPU_CTA_THREADS, else the host's hardware threads (at most 8).
  static uint32_t cta_threads();
  // Where to show how far the launch has come: the number of CTAs started
  // (1 + the highest started CTA), raised as CTAs start (relaxed atomics;
  // launch::LaunchProgress::cta, which `qgpu run`'s progress line shows).
  void set_progress(std::atomic<uint64_t>* ctas_started) { progress_ = ctas_started; }

  bool finished() const { return finished_; }
  const Fault& fault() const { return fault_; }
  const InterpStats& stats() const { return stats_; }
  const std::vector<uint8_t>& print_buffer() const { return print_; }
  // The running CTA's linear index, -1 before the first step.
  int64_t cta() const { return cta_; }
  // The register file of the running CTA, for tests and tracing.
  uint32_t reg(uint32_t thread, uint32_t r) const {
    if (r >= nregs_) return 0;  // a register the program never names stays zero
    return regs_[(size_t(thread / p_.lanes) * nregs_ + r) * p_.lanes + thread % p_.lanes];
  }

 private:
  static constexpr uint32_t kExited = UINT32_MAX;
  enum Wait : uint32_t { kRunnable, kBar, kWbar };

  bool start_next_cta();
  // A run() over several host threads (set_cta_threads): the CTA queue and
  // the launch's totals the workers share.
  struct Group;
  void run_one(uint64_t max_steps, const std::atomic<bool>* cancel);
  void run_group(uint64_t max_steps, const std::atomic<bool>* cancel);
  bool group_check(uint64_t max_steps, const std::atomic<bool>* cancel);
  bool stopped(uint64_t steps, uint64_t max_steps, const std::atomic<bool>* cancel);
  bool release_barriers();
  int pick_warp();
  void refresh(uint32_t w);
  void refresh_all();
  uint32_t warp_block(uint32_t w) const;
  uint64_t warp_mask(uint32_t w, uint32_t b) const;
  void set_fault(int error, std::string msg);
  std::string where() const;
  uint8_t* address(Space sp, uint32_t thread, uint32_t addr, uint32_t bytes, const char* what);
  uint8_t* resolve(Space sp, uint32_t thread, uint32_t addr, uint32_t bytes, const char* what);
  // A memory space as one instruction of a warp sees it: global, shared,
  // local or param (base null for print); at() is the in-range, aligned case.
  struct Window {
    uint8_t* base = nullptr;
    uint64_t size = 0, sub = 0;  // bytes; the address of base[0]
    size_t stride = 0;           // local: bytes per lane
    uint8_t* at(uint32_t lane, uint32_t addr, uint32_t bytes) const {
      const uint64_t off = uint64_t(addr) - sub;  // wraps far past size below sub
      if (off + bytes > size || off + bytes < off || (addr & (bytes - 1)) != 0) return nullptr;  // bytes: 1, 2 or 4
      return base + lane * stride + off;
    }
  };
  Window window(Space sp, size_t t0);
  bool warp_offsets(const Window& win, const Operand& a, const Operand& b, const uint32_t* W, uint64_t mask,
                    uint32_t bytes, uint32_t* off) const;
  template <bool kRecord>
  bool exec(uint32_t w, StepRecord* rec);
  template <bool kRecord>
  bool exec_body(uint32_t w, const Block& blk, uint64_t mask, StepRecord* rec);
  // A run of MMAs (mma_run) computed as one tile of D (ptx::wmma::tile);
  // false, having changed nothing, where the run is not one tile of one area
  // (the instructions then run one at a time).
  bool exec_mma_tile(uint32_t w, const Instr* ins, uint32_t n, uint64_t mask);
  template <bool kRecord>
  bool exec_instr(uint32_t w, const Instr& in, uint64_t mask, bool all, uint32_t active, StepRecord* rec,
                  uint32_t& npending, int& host_nearest);
  // The compiled blocks (jit.h): a block's body through its native code, and
  // the call back for the instructions it leaves to the interpreter.
  bool exec_jit(uint32_t w, const Block& blk, uint64_t mask, jit::BlockFn fn);
  // EXECs of warp w from its block b, compiled as `fn`, while its next
  // blocks are compiled too (exec's chain, in a function of its own: most
  // EXECs of a hot kernel come here straight from step()).
  bool exec_chain(uint32_t w, uint32_t b, jit::BlockFn fn);
  void jit_env_cta();
  static void set_window(jit::Env::Window& e, const Window& win);
  static int jit_instr(jit::Env* env, uint32_t index, uint64_t mask);
  static void jit_append(jit::Env* env, const uint64_t* ptrs, const uint32_t* vals, uint64_t mask, uint32_t bytes);
  // cond_bits: a BR's condition as one bit per lane (jit::Env::cond_bits),
  // when the compiled block computed it; else read from the register.
  void exec_terminator(uint32_t w, const Block& blk, uint64_t mask, const uint32_t* cond_bits = nullptr);

  const Program& prog_;
  Params p_;
  uint32_t ctas_, threads_, warps_;
  uint32_t nregs_ = 1;  // registers the program names (the highest + 1): the rest stay zero
  // The registers zeroed when a CTA starts after the first (whose file is
  // zeroed whole): on the CUDA-sized device, those a thread may read before
  // it writes them (entry_reads()), the only ones whose starting value can
  // be seen; on the other machines, every one (empty: zero_all_).
  std::vector<uint32_t> zero_regs_;
  bool zero_all_ = true;
  std::vector<uint8_t> params_;
  launch::GlobalMemory& mem_;

  int64_t cta_ = -1;
  // Registers of the running CTA, warp by warp, register by register, lane
  // by lane: a register's lanes are adjacent.
  std::vector<uint32_t> regs_, pc_;
  std::vector<uint32_t> wait_;  // per lane: Wait (a word, so refresh() reads it beside pc_)
  std::vector<uint8_t> shared_, local_, print_;
  // Each warp's next block (warp_block) and runnable lanes at it (warp_mask),
  // kept up to date as lanes move; the warps below scan_from_ cannot run.
  std::vector<uint32_t> wblock_;
  std::vector<uint64_t> wmask_;
  std::vector<uint64_t> live_;  // per warp: the lanes that have not exited
  std::vector<uint64_t> live0_;  // the same when a CTA starts
  // Per warp: the pc at which every live lane waits (at BAR or WBAR) after
  // the warp ran a block with all of them; kExited otherwise.  Releasing such
  // a warp needs no refresh(): its lanes go on together from there.
  std::vector<uint32_t> all_wait_;
  uint32_t scan_from_ = 0;
  uint32_t cur_warp_ = 0, cur_block_ = 0;  // the EXEC running, for fault messages
  struct Pending {
    uint8_t* p;
    MemWrite w;
  };
  std::vector<Pending> pending_;  // stores of the block, recorded (step with a StepRecord)
  struct FastPending {
    uint8_t* p;
    uint32_t value, bytes;
  };
  std::vector<FastPending> fast_pending_;  // the same, unrecorded
  // Per lane: the high word of the old value of the block's ATOM64, which
  // its ATOMHI reads (both in one EXEC, so one latch per host thread).
  uint32_t atom_hi_[Params::kCudaWarp] = {};
  // The JIT (32-lane machines only): each block's EXECs so far and its
  // compiled code, once it has run jit_threshold_ EXECs (jit::Slot).
  bool jit_on_ = false;
  uint32_t jit_threshold_ = 0;
  struct JitBlock {
    enum State : uint8_t { kNew, kCounting, kNoCode };
    State state = kNew;
    uint32_t left = 0;          // interpreted EXECs before it is compiled
    uint64_t ran = 0;           // interpreted EXECs in this launch, for its record
    jit::Slot* slot = nullptr;  // the process's record of its content
  };
  std::vector<JitBlock> jit_;
  std::vector<jit::BlockFn> jit_fn_;
  void flush_jit_counts();
  // run() in progress: exec() goes on with the warp's compiled blocks
  // (below chain_limit_ EXECs, up to the next cancel check).
  bool chain_ = false;
  uint64_t chain_limit_ = UINT64_MAX;
  jit::Env jit_env_;  // the compiled blocks' environment (jit_env_cta, exec_jit)
  uint32_t cta_threads_ = 1;
  std::atomic<uint64_t>* progress_ = nullptr;  // set_progress
  Group* group_ = nullptr;     // a worker of a run over several threads
  uint64_t published_ = 0;     // its steps added to the group's count
  int64_t fault_cta_ = -1;     // the CTA that faulted
  jit::Mode jit_mode_ = jit::Mode::Off;
  // Op::MMA's f16 A and B as f32: converted once per EXEC for the area its
  // lanes read (memory does not change within an EXEC).
  struct MmaCache {
    const uint8_t* at = nullptr;
    uint64_t step = ~uint64_t(0);
    uint32_t na = 0;
    float a[512], b[512];
  };
  MmaCache mma_cache_;
  bool finished_ = false;
  Fault fault_;
  InterpStats stats_;
};

}  // namespace qgpu::machine
