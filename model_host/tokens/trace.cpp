// The expected trace (docs/tokens.md section 4): the table "reads -> writes"
// is `after()`, one case per token read.
#include "model_host/launch/errors.h"
#include "model_host/tokens/trace.h"
#include "model_host/tokens/prompt.h"

#include <cstdio>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace qgpu::gpu {
namespace {

using machine::Term;

// The interpreter's fault errors that the trace writes as FAULT.

constexpr size_t kRecentTokens = 12;  // tokens context() shows
constexpr uint32_t kWarpGroup = machine::Params::kCudaWarp;  // threads of one CUDA warp

std::string join(const std::vector<int64_t>& ids, std::string (*one)(int64_t)) {
  std::string s;
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i) s += ' ';
    s += one(ids[i]);
  }
  return s;
}

std::string id_text(int64_t id) { return std::to_string(id); }

}  // namespace

namespace {

// The model's memories have the machine's sizes whatever the program
// declared (the prompt does not carry them), so the reference faults where
// the model does: at the edges of the machine's spaces.
machine::Program machine_sized(machine::Program prog, uint32_t threads) {
  const machine::Params& mp = machine::model_params();
  const uint32_t local = mp.local_bytes_for(threads);
  if (prog.shared_bytes > mp.shared_bytes || prog.local_bytes > local)
    throw std::invalid_argument("the kernel needs " + std::to_string(prog.shared_bytes) + " B of shared and " +
                                std::to_string(prog.local_bytes) + " B of local memory; the model's machine has " +
                                std::to_string(mp.shared_bytes) + " and " + std::to_string(local) + " at " +
                                std::to_string(threads) + " threads per CTA");
  prog.shared_bytes = mp.shared_bytes;
  prog.local_bytes = local;
  return prog;
}

std::vector<uint8_t> machine_sized(std::vector<uint8_t> params) {
  const uint32_t n = machine::model_params().param_bytes;
  if (params.size() > n)
    throw std::invalid_argument("kernel parameters of " + std::to_string(params.size()) +
                                " B do not fit the model's " + std::to_string(n) + " B");
  params.resize(n, 0);
  return params;
}

}  // namespace

TraceOracle::TraceOracle(machine::Program prog, uint32_t threads, uint32_t ctas, std::vector<uint8_t> params,
                         launch::GlobalMemory global)
    : prog_(machine_sized(std::move(prog), threads)),
      threads_(threads),
      ctas_(ctas),
      global_(std::move(global)),
      interp_(prog_, machine::model_params(), ctas, threads, machine_sized(std::move(params)), global_) {
  for (size_t pc = 0; pc < prog_.blocks.size(); ++pc) {
    const machine::Terminator& t = prog_.blocks[pc].term;
    if (t.kind == Term::TRAP && t.code >= payload_size(Kind::TRAP))
      throw std::invalid_argument("block B" + std::to_string(pc) + ": trap code " + std::to_string(t.code) +
                                  " does not fit TRAP");
  }
}

int64_t TraceOracle::next() {
  if (done_) throw std::logic_error("the trace has ended: END was its last token");
  window_ = {last_.kind, window_[0], window_[1]};
  const int64_t id = after(last_);
  last_ = *decode_token(id);
  if (runs_block(last_.kind)) ++steps_;
  if (last_.kind == Kind::END) done_ = true;
  recent_.push_back(id);
  if (recent_.size() > kRecentTokens) recent_.pop_front();
  return id;
}

// Thread w at its WARP in the current pass: never stopped, waiting at `bar`
// from before the last BARRIER, or waiting at `wbar` at the release pc its
// group had at the end of the last pass.
bool TraceOracle::runnable(uint32_t w) const {
  const Thread& t = thread_[w];
  return t.status == Status::Runnable || (t.status == Status::AtBarrier && t.epoch != epoch_) ||
         (t.status == Status::AtWbar && release_[w / kWarpGroup] == int32_t(t.pc));
}

int64_t TraceOracle::start_cta(uint32_t c) {
  cta_ = c;
  epoch_ = 0;
  start_pc_ = 0;
  thread_.assign(threads_, Thread{});
  release_.assign((threads_ + kWarpGroup - 1) / kWarpGroup, kNone);
  wmin_ = kNone;
  wmin_in_pass_ = false;
  return token_id(Kind::CTA, c);
}

// The current thread waits at `wbar` at pc: below its group's running
// minimum (or the first waiter the scan meets in its group), WMIN(pc).  Else
// the scan moves on: from a thread that has just stopped there (`stopped`),
// as next_thread() says; from a WARP pass at a waiting thread, WARP(w + 1).
int64_t TraceOracle::stop_at_wbar(uint32_t pc, bool stopped) {
  if (wmin_ == kNone || int32_t(pc) < wmin_) return token_id(Kind::WMIN, pc);
  return stopped ? next_thread() : token_id(Kind::WARP, warp_ + 1);
}

// The current thread stopped: the scan moves on to the next one, WARPS(w + 1)
// where that one runs from start_pc_ (runnable, within the warp group the
// scan is in), else WARP(w + 1).
int64_t TraceOracle::next_thread() {
  const uint32_t w = warp_ + 1;
  if (w < threads_ && w % kWarpGroup != 0 && runnable(w) && thread_[w].pc == start_pc_)
    return token_id(Kind::WARPS, w);
  return token_id(Kind::WARP, w);
}

int64_t TraceOracle::after(const Token& read) {
  switch (read.kind) {
    case Kind::START: return start_cta(0);
    case Kind::CTA:
    case Kind::BARRIER: return token_id(Kind::WARP, 0);
    case Kind::WARP: {
      warp_ = read.payload;
      // The scan leaves a warp group: its running minimum becomes its
      // release pc; entering one, the running minimum starts empty.
      if (warp_ > 0 && (warp_ % kWarpGroup == 0 || warp_ == threads_)) release_[(warp_ - 1) / kWarpGroup] = wmin_;
      if (warp_ % kWarpGroup == 0) wmin_ = kNone;
      if (warp_ == 0) wmin_in_pass_ = false;
      if (warp_ < threads_) {
        Thread& t = thread_[warp_];
        if (runnable(warp_)) {
          t.status = Status::Runnable;  // it leaves the barrier, if it waited
          start_pc_ = t.pc;
          return token_id(Kind::EXEC, t.pc);
        }
        if (t.status == Status::AtWbar) return stop_at_wbar(t.pc, false);
        return token_id(Kind::WARP, warp_ + 1);
      }
      // Past the last thread: each live thread ran until it stopped, so all
      // of them wait, at `wbar` or at `bar` in the current epoch.
      bool waiting = false;
      for (uint32_t w = 0; w < threads_; ++w) {
        const Thread& t = thread_[w];
        if (t.status == Status::Runnable || (t.status == Status::AtBarrier && t.epoch != epoch_))
          mismatch("thread " + std::to_string(w) + " is still runnable past the last thread");
        const int32_t r = release_[w / kWarpGroup];
        if (t.status == Status::AtWbar && (r == kNone || int32_t(t.pc) < r))
          mismatch("thread " + std::to_string(w) + " waits at wbar B" + std::to_string(t.pc) +
                   " below its warp group's minimum");
        waiting |= t.status == Status::AtBarrier;
      }
      // Threads wait at `wbar`: in every group those at its release pc go on.
      if (wmin_in_pass_) return token_id(Kind::WARP, 0);
      if (waiting) {
        epoch_ ^= 1;
        return token_id(Kind::BARRIER, epoch_);
      }
      if (cta_ + 1 < ctas_) return start_cta(cta_ + 1);
      machine::StepRecord rec;
      if (interp_.step(&rec))
        mismatch("the interpreter runs block B" + std::to_string(rec.block) + " of CTA " + std::to_string(rec.cta) +
                 ", thread " + std::to_string(rec.warp) + " after the last CTA ended");
      if (interp_.fault().error != 0) mismatch("the interpreter stopped with: " + interp_.fault().message);
      return token_id(Kind::END);
    }
    case Kind::EXEC:
    case Kind::VX:
      block_ = block_of(read);
      falls_ = 0;
      return exec();
    case Kind::WARPS:  // as WARP(w) for a runnable thread w, then its EXEC
      warp_ = read.payload;
      thread_[warp_].status = Status::Runnable;
      block_ = start_pc_;
      falls_ = 0;
      return exec();
    case Kind::VZF:
    case Kind::VGF:
    case Kind::VNF:
    case Kind::DF:
    case Kind::VHF:
      ++block_;
      ++falls_;
      return exec();
    case Kind::WMIN:
      wmin_ = int32_t(read.payload);
      wmin_in_pass_ = true;
      return token_id(Kind::WARP, warp_ + 1);
    case Kind::VLO:
    case Kind::VLO1:
    case Kind::VLO2:
    case Kind::VLO3:
    case Kind::VLO4:
    case Kind::VLO5:
    case Kind::VLO6: return token_id(high_falls_ ? Kind::DF : Kind::D, high_);
    case Kind::VZ:
    case Kind::VG:
    case Kind::VN:
    case Kind::VH:
    case Kind::D: return control();
    case Kind::TRAP:
    case Kind::FAULT: return token_id(Kind::END);
    default: break;
  }
  throw std::logic_error(std::string("the trace never writes ") + kind_name(read.kind));
}

// EXEC(block_) for thread warp_: one interpreter step, which must be that one.
int64_t TraceOracle::exec() {
  machine::StepRecord rec;
  const bool ran = interp_.step(&rec);
  const int error = interp_.fault().error;
  const bool faulted = !ran && (error == launch::kIllegalAddress || error == launch::kMisalignedAddress);
  if (!ran && !faulted)
    mismatch(error ? "the interpreter stopped with: " + interp_.fault().message
                   : std::string("the interpreter has no step left"));
  if (rec.cta != cta_ || rec.warp != warp_ || rec.block != block_)
    mismatch("the trace runs block B" + std::to_string(block_) + " of CTA " + std::to_string(cta_) + ", thread " +
             std::to_string(warp_) + "; the interpreter runs block B" + std::to_string(rec.block) + " of CTA " +
             std::to_string(rec.cta) + ", thread " + std::to_string(rec.warp));
  if (faulted)
    return token_id(Kind::FAULT, uint32_t(error == launch::kIllegalAddress ? Fault::IllegalAddress : Fault::Misaligned));

  const machine::Block& b = prog_.blocks[block_];
  if (b.instrs.empty() || !b.instrs.front().writes_reg()) return control();
  if (rec.regs.size() != 1) mismatch("the step wrote " + std::to_string(rec.regs.size()) + " registers, not 1");
  const uint32_t v = rec.regs.front().value;
  // A small value with a next block that does not wait for the register
  // file: jmp, or br on the register just written, or br on the register
  // the block's C record names (read with the operands).
  const machine::Terminator& term = b.term;
  const uint32_t dst = b.instrs.front().dst;
  const bool cond_in_c = branch_condition_in_c(b);
  const bool known = term.kind == Term::JMP || (term.kind == Term::BR && term.cond == dst) || cond_in_c;
  const uint32_t next = term.kind == Term::JMP                                     ? term.t
                        : (cond_in_c ? interp_.reg(warp_, term.cond) : v) != 0 ? term.t
                                                                                  : term.f;
  if (v < kVxValues && known) {
    thread_[warp_].pc = next;
    return token_id(Kind::VX, vx_payload(next, v));
  }
  // The next block is the one after this: the value token also runs it.
  // (A value in one token falls through as the third of its run at most, or
  // where the token read or the one before is a marker, which the circuit
  // then counts from: vocab.h; a DF always has its VLO.)
  const bool falls_on = known && next == block_ + 1 && falls_ < kFallChain;
  const bool falls = falls_on && (falls_ < 3 || marker_count(window_[0]) >= 0 || marker_count(window_[1]) >= 0);
  const uint32_t hi = v >> 16;
  if (falls && (hi == 0 || hi == kGlobalHigh || hi == kNegativeHigh)) {
    thread_[warp_].pc = next;
    return token_id(hi == 0 ? Kind::VZF : hi == kGlobalHigh ? Kind::VGF : Kind::VNF, v & 0xffff);
  }
  if (v < (1u << 16)) return token_id(Kind::VZ, v);
  if (hi == kGlobalHigh) return token_id(Kind::VG, v & 0xffff);
  if (hi == kNegativeHigh) return token_id(Kind::VN, v & 0xffff);
  // A low half of 0: the high half alone, falling through as above.
  if ((v & 0xffff) == 0) {
    if (falls) thread_[warp_].pc = next;
    return token_id(falls ? Kind::VHF : Kind::VH, hi);
  }
  // The high half falls through (DF) as the other values do; the low half's
  // kind carries the count of fall-through values before it.
  high_falls_ = falls_on;
  if (high_falls_) thread_[warp_].pc = next;
  high_ = v >> 16;
  return token_id(vlo_kind(falls_), v & 0xffff);
}

// The terminator of block_ for thread warp_, after the block's register write.
int64_t TraceOracle::control() {
  const machine::Terminator& term = prog_.blocks[block_].term;
  Thread& t = thread_[warp_];
  switch (term.kind) {
    case Term::JMP: t.pc = term.t; return token_id(Kind::EXEC, t.pc);
    case Term::BR:
      t.pc = interp_.reg(warp_, term.cond) != 0 ? term.t : term.f;
      return token_id(Kind::EXEC, t.pc);
    case Term::EXIT: t.status = Status::Exited; return next_thread();
    case Term::BAR:
      t.pc = term.t;
      t.status = Status::AtBarrier;
      t.epoch = epoch_;
      return next_thread();
    case Term::WBAR:
      t.pc = term.t;
      t.status = Status::AtWbar;
      return stop_at_wbar(t.pc, true);
    case Term::TRAP:
      if (interp_.fault().error != int(term.code))
        mismatch("the interpreter did not stop with trap " + std::to_string(term.code));
      return token_id(Kind::TRAP, term.code);
  }
  throw std::logic_error("block B" + std::to_string(block_) + ": no token for terminator " + to_string(term));
}

void TraceOracle::mismatch(const std::string& what) const {
  throw std::logic_error("the interpreter and the trace of docs/tokens.md disagree: " + what + "\n" + context());
}

std::string TraceOracle::context() const {
  std::ostringstream os;
  os << "CTA " << cta_ << ", ";
  if (warp_ < thread_.size()) {
    const Thread& t = thread_[warp_];
    os << "thread " << warp_ << " (pc B" << t.pc << ", "
       << (t.status == Status::Exited      ? "exited"
           : t.status == Status::AtBarrier ? "at bar, epoch " + std::to_string(t.epoch)
           : t.status == Status::AtWbar    ? std::string("at wbar")
                                           : std::string("runnable"))
       << ")";
    if (warp_ / kWarpGroup < release_.size()) {
      const int32_t r = release_[warp_ / kWarpGroup];
      os << ", its warp group's release pc " << (r == kNone ? std::string("none") : "B" + std::to_string(r))
         << ", running WMIN " << (wmin_ == kNone ? std::string("none") : "B" + std::to_string(wmin_));
    }
  } else {
    os << "past the last thread (" << threads_ << ")";
  }
  os << ", barrier epoch " << int(epoch_) << ", " << steps_ << " EXECs\n";
  if (steps_ > 0) {
    const machine::Block& b = prog_.blocks[block_];
    os << "last block B" << block_ << ": ";
    for (const machine::Instr& in : b.instrs) os << machine::to_string(in) << "; ";
    os << machine::to_string(b.term) << "\n";
  }
  if (interp_.cta() == int64_t(cta_) && warp_ < threads_) {
    const uint32_t regs = machine::model_params().regs;
    for (uint32_t r = 0; r < regs; ++r) {
      char buf[24];
      std::snprintf(buf, sizeof buf, "r%u=%08x", r, interp_.reg(warp_, r));
      os << buf << (r % 8 == 7 || r + 1 == regs ? "\n" : " ");
    }
  } else if (warp_ < threads_) {
    os << "registers: all zero (the CTA has not run yet)\n";
  }
  os << "last tokens:";
  for (int64_t id : recent_) os << ' ' << token_name(id);
  return os.str();
}

std::vector<int64_t> expected_trace(const machine::Program& prog, uint32_t threads, uint32_t ctas,
                                    const std::vector<uint8_t>& params, const launch::GlobalMemory& global,
                                    uint64_t max_steps) {
  TraceOracle oracle(prog, threads, ctas, params, global);
  std::vector<int64_t> trace;
  while (!oracle.done()) {
    if (oracle.steps() > max_steps)
      throw std::runtime_error("kernel " + prog.kernel + " runs more than " + std::to_string(max_steps) + " steps");
    trace.push_back(oracle.next());
  }
  return trace;
}

std::string format_tokens(const std::vector<int64_t>& ids) { return join(ids, id_text); }
std::string format_token_names(const std::vector<int64_t>& ids) { return join(ids, token_name); }
std::string dump_line(const std::vector<int64_t>& prompt, const std::vector<int64_t>& generated) {
  return format_tokens(prompt) + " | " + format_tokens(generated);
}

void append_dump(const std::string& file, const std::vector<int64_t>& prompt, const std::vector<int64_t>& generated) {
  std::ofstream out(file, std::ios::app);
  out << dump_line(prompt, generated) << "\n";
  if (!out) throw std::runtime_error("cannot append to the token dump " + file);
}

}  // namespace qgpu::gpu
