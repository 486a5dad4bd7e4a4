// The reference interpreter (docs/isa.md, "Execution").
#include "model_host/machine/interpreter.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <sstream>

namespace qgpu::machine {
namespace {

constexpr int kErrIllegalAddress = 700;
constexpr int kErrMisaligned = 716;
constexpr int kErrTimeout = 702;

std::string hex(uint64_t v) {
  std::ostringstream os;
  os << "0x" << std::hex << v;
  return os.str();
}

}  // namespace

Interpreter::Interpreter(const Program& prog, const Params& p, uint32_t ctas, uint32_t threads,
                         std::vector<uint8_t> params, engine::GlobalMemory& mem)
    : prog_(prog),
      p_(p),
      ctas_(ctas),
      threads_(threads),
      warps_((threads + p.lanes - 1) / p.lanes),
      params_(std::move(params)),
      mem_(mem),
      print_(p.print_bytes, 0) {
  validate(prog, p);
  if (threads == 0 || threads > p.max_threads) throw std::invalid_argument("threads per CTA out of range");
  if (ctas == 0 || ctas > p.max_ctas) throw std::invalid_argument("CTAs per grid out of range");
  if (prog.shared_bytes > p.shared_bytes)
    throw std::invalid_argument("program needs more shared memory than a CTA has");
  if (prog.local_bytes > p.local_bytes_for(threads))
    throw std::invalid_argument("program needs more local memory than a thread has");
  if (params_.size() > p.param_bytes) throw std::invalid_argument("parameter buffer exceeds the machine's limit");
}

void Interpreter::set_fault(int error, std::string msg) {
  if (fault_.error == 0) {
    fault_.error = error;
    fault_.message = std::move(msg);
  }
  finished_ = true;
}

bool Interpreter::start_next_cta() {
  if (uint64_t(cta_ + 1) >= ctas_) return false;
  ++cta_;
  const size_t slots = size_t(warps_) * p_.lanes;
  regs_.assign(slots * p_.regs, 0);
  pc_.assign(slots, 0);
  for (size_t t = threads_; t < slots; ++t) pc_[t] = kExited;  // lanes past the CTA's threads
  wait_.assign(slots, kRunnable);
  shared_.assign(prog_.shared_bytes, 0);
  local_.assign(slots * prog_.local_bytes, 0);
  return true;
}

// The warp's next block: the minimum pc over its lanes that are neither
// exited nor waiting at the CTA barrier (lanes waiting at a warp barrier
// count, so the other lanes cannot run past their reconvergence point).
uint32_t Interpreter::warp_block(uint32_t w) const {
  uint32_t b = kExited;
  for (uint32_t l = 0; l < p_.lanes; ++l) {
    size_t t = size_t(w) * p_.lanes + l;
    if (pc_[t] != kExited && wait_[t] != kBar) b = std::min(b, pc_[t]);
  }
  return b;
}

uint64_t Interpreter::warp_mask(uint32_t w, uint32_t b) const {
  uint64_t mask = 0;
  for (uint32_t l = 0; l < p_.lanes; ++l) {
    size_t t = size_t(w) * p_.lanes + l;
    if (pc_[t] == b && wait_[t] == kRunnable) mask |= uint64_t(1) << l;
  }
  return mask;
}

int Interpreter::pick_warp() const {
  for (uint32_t w = 0; w < warps_; ++w) {
    uint32_t b = warp_block(w);
    if (b != kExited && warp_mask(w, b)) return int(w);
  }
  return -1;
}

// Called when no lane of the CTA can run.  Returns false when the CTA has
// finished (no live lanes).  Otherwise, in each warp group (the machine warps
// of one 32-thread warp) the threads waiting at WBAR at the group's minimum pc
// (over threads not waiting at the CTA barrier) go on together: they are the
// converged threads of the CUDA warp.  Such threads exist in every group that
// has a live thread outside the CTA barrier (that thread holds the minimum and
// cannot run, so it waits at WBAR); when no group has one, every live thread
// waits at the CTA barrier, and the barrier opens.
bool Interpreter::release_barriers() {
  const size_t slots = size_t(warps_) * p_.lanes;
  bool live = false;
  for (size_t t = 0; t < slots; ++t) live |= pc_[t] != kExited;
  if (!live) return false;
  bool released = false;
  const size_t group = Params::kCudaWarp;
  for (size_t g = 0; g < slots; g += group) {
    const size_t end = std::min(slots, g + group);
    uint32_t m = kExited;
    for (size_t t = g; t < end; ++t)
      if (pc_[t] != kExited && wait_[t] != kBar) m = std::min(m, pc_[t]);
    for (size_t t = g; t < end; ++t)
      if (pc_[t] == m && wait_[t] == kWbar) {
        wait_[t] = kRunnable;
        released = true;
      }
  }
  if (!released)
    for (size_t t = 0; t < slots; ++t) wait_[t] = kRunnable;
  return true;
}

uint8_t* Interpreter::address(Space sp, uint32_t thread, uint32_t addr, uint32_t bytes, const char* what) {
  if (addr % bytes != 0) {
    set_fault(kErrMisaligned, std::string("misaligned ") + space_name(sp) + " " + what + " of " +
                                  std::to_string(bytes) + " bytes at " + hex(addr) + fault_where_);
    return nullptr;
  }
  uint8_t* base = nullptr;
  uint64_t size = 0, off = addr;
  switch (sp) {
    case Space::Global:
      base = mem_.bytes.data();
      size = mem_.bytes.size();
      off = uint64_t(addr) - mem_.base;
      if (addr < mem_.base) off = UINT64_MAX;
      break;
    case Space::Shared:
      base = shared_.data();
      size = shared_.size();
      break;
    case Space::Local:
      base = local_.data() + size_t(thread) * prog_.local_bytes;
      size = prog_.local_bytes;
      break;
    case Space::Param:
      base = params_.data();
      size = params_.size();
      break;
    case Space::Print:
      base = print_.data();
      size = print_.size();
      break;
  }
  if (off == UINT64_MAX || off + bytes > size) {
    set_fault(kErrIllegalAddress, std::string("out-of-range ") + space_name(sp) + " " + what + " of " +
                                      std::to_string(bytes) + " bytes at " + hex(addr) + fault_where_);
    return nullptr;
  }
  return base + off;
}

namespace {
uint32_t read_bytes(const uint8_t* p, uint32_t bytes, bool sign) {
  uint32_t v = 0;
  std::memcpy(&v, p, bytes);
  if (sign && bytes < 4) {
    uint32_t shift = 32 - 8 * bytes;
    v = uint32_t(int32_t(v << shift) >> shift);
  }
  return v;
}
void write_bytes(uint8_t* p, uint32_t bytes, uint32_t v) { std::memcpy(p, &v, bytes); }
}  // namespace

bool Interpreter::step(StepRecord* rec) {
  if (finished_) return false;
  int w = -1;
  for (;;) {
    if (cta_ >= 0) {
      w = pick_warp();
      if (w >= 0) break;
      if (release_barriers()) continue;
    }
    if (!start_next_cta()) {
      finished_ = true;
      return false;
    }
  }
  const uint32_t L = p_.lanes, R = p_.regs;
  const size_t t0 = size_t(w) * L;
  const uint32_t b = warp_block(uint32_t(w));
  const uint64_t mask = warp_mask(uint32_t(w), b);
  const Block& blk = prog_.blocks[b];
  fault_where_ =
      " (CTA " + std::to_string(cta_) + ", warp " + std::to_string(w) + ", block B" + std::to_string(b) + ")";

  StepRecord local_rec;
  StepRecord& r = rec ? *rec : local_rec;
  r = StepRecord{};
  r.cta = uint32_t(cta_);
  r.warp = uint32_t(w);
  r.block = b;
  r.mask = mask;

  struct Pending {
    uint8_t* p;
    MemWrite w;
  };
  std::vector<Pending> pending;
  auto val = [&](size_t t, const Operand& o) { return o.imm ? o.v : regs_[t * R + o.v]; };
  for (const Instr& in : blk.instrs) {
    const OpInfo& info = op_info(in.op);
    for (uint32_t l = 0; l < L; ++l) {
      if (!(mask >> l & 1)) continue;
      const size_t t = t0 + l;
      uint32_t out = 0;
      switch (info.kind) {
        case OpKind::Alu: out = info.fn(val(t, in.a), val(t, in.b), val(t, in.c)); break;
        case OpKind::Special:
          out = in.op == Op::LANE   ? l
                : in.op == Op::WARP ? uint32_t(w)
                : in.op == Op::CTA  ? uint32_t(cta_)
                                    : uint32_t(stats_.steps);
          break;
        case OpKind::Load: {
          uint8_t* p = address(in.space, uint32_t(t), val(t, in.a) + val(t, in.b), in.bytes, "load");
          if (!p) return false;
          out = read_bytes(p, in.bytes, in.sign);
          break;
        }
        case OpKind::Store: {
          uint32_t a = val(t, in.a) + val(t, in.b);
          uint8_t* p = address(in.space, uint32_t(t), a, in.bytes, "store");
          if (!p) return false;
          uint32_t v = val(t, in.c);
          if (in.bytes < 4) v &= (1u << (8 * in.bytes)) - 1;
          pending.push_back({p, {in.space, l, a, in.bytes, v}});
          continue;
        }
        case OpKind::Atomic: {
          // The block's only write so far (validate()), so applying it now
          // in lane order equals committing it at block end.
          uint32_t a = val(t, in.a);
          uint8_t* p = address(in.space, uint32_t(t), a, 4, "atomic");
          if (!p) return false;
          out = read_bytes(p, 4, false);
          uint32_t nv = eval_atom(in.atom, out, val(t, in.b), val(t, in.c));
          write_bytes(p, 4, nv);
          r.mem.push_back({in.space, l, a, 4, nv});
          break;
        }
      }
      regs_[t * R + in.dst] = out;
      r.regs.push_back({l, in.dst, out});
    }
    stats_.instructions++;
    stats_.lane_instructions += std::popcount(mask);
  }
  for (auto& pw : pending) {
    write_bytes(pw.p, pw.w.bytes, pw.w.value);
    r.mem.push_back(pw.w);
  }
  const Terminator& term = blk.term;
  for (uint32_t l = 0; l < L; ++l) {
    if (!(mask >> l & 1)) continue;
    const size_t t = t0 + l;
    switch (term.kind) {
      case Term::JMP: pc_[t] = term.t; break;
      case Term::BR: pc_[t] = regs_[t * R + term.cond] != 0 ? term.t : term.f; break;
      case Term::EXIT: pc_[t] = kExited; break;
      case Term::BAR:
        pc_[t] = term.t;
        wait_[t] = kBar;
        break;
      case Term::WBAR:
        pc_[t] = term.t;
        wait_[t] = kWbar;
        break;
      case Term::TRAP: set_fault(int(term.code), "trap " + std::to_string(term.code) + fault_where_); break;
    }
  }
  stats_.steps++;
  return true;
}

void Interpreter::run(uint64_t max_steps) {
  while (step()) {
    if (stats_.steps > max_steps) {
      set_fault(kErrTimeout, "launch exceeded " + std::to_string(max_steps) + " machine steps");
      return;
    }
  }
}

}  // namespace qgpu::machine
