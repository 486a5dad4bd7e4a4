// The reference interpreter (docs/isa.md, "Execution").
#include "model_host/launch/errors.h"
#include "model_host/machine/interpreter.h"

#include "model_host/machine/alu.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <sstream>

namespace qgpu::machine {
namespace {


std::string hex(uint64_t v) {
  std::ostringstream os;
  os << "0x" << std::hex << v;
  return os.str();
}

}  // namespace

Interpreter::Interpreter(const Program& prog, const Params& p, uint32_t ctas, uint32_t threads,
                         std::vector<uint8_t> params, launch::GlobalMemory& mem)
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
  auto name = [&](const Operand& o) {
    if (!o.imm) nregs_ = std::max(nregs_, o.v + 1);
  };
  for (const Block& b : prog.blocks) {
    for (const Instr& in : b.instrs) {
      nregs_ = std::max(nregs_, in.dst + 1);
      name(in.a);
      name(in.b);
      name(in.c);
    }
    if (b.term.kind == Term::BR) nregs_ = std::max(nregs_, b.term.cond + 1);
  }
  size_t most = 0;  // stores of one block, all lanes
  for (const Block& b : prog.blocks) most = std::max(most, b.instrs.size());
  fast_pending_.resize(most * p.lanes);
}

void Interpreter::set_fault(int error, std::string msg) {
  if (fault_.error == 0) {
    fault_.error = error;
    fault_.message = std::move(msg);
  }
  finished_ = true;
}

std::string Interpreter::where() const {
  return " (CTA " + std::to_string(cta_) + ", warp " + std::to_string(cur_warp_) + ", block B" +
         std::to_string(cur_block_) + ")";
}

bool Interpreter::start_next_cta() {
  if (uint64_t(cta_ + 1) >= ctas_) return false;
  ++cta_;
  const size_t slots = size_t(warps_) * p_.lanes;
  regs_.assign(slots * nregs_, 0);
  pc_.assign(slots, 0);
  for (size_t t = threads_; t < slots; ++t) pc_[t] = kExited;  // lanes past the CTA's threads
  wait_.assign(slots, kRunnable);
  shared_.assign(prog_.shared_bytes, 0);
  local_.assign(slots * prog_.local_bytes, 0);
  refresh_all();
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

void Interpreter::refresh(uint32_t w) {
  const uint32_t b = warp_block(w);
  wblock_[w] = b;
  wmask_[w] = b == kExited ? 0 : warp_mask(w, b);
}

void Interpreter::refresh_all() {
  wblock_.resize(warps_);
  wmask_.resize(warps_);
  for (uint32_t w = 0; w < warps_; ++w) refresh(w);
  scan_from_ = 0;
}

// The lowest-numbered warp with runnable lanes.  Only the warp that ran
// changes between two picks (barrier releases and new CTAs refresh every
// warp and scan from 0), so the warps below the last pick stay unable to run.
int Interpreter::pick_warp() {
  for (uint32_t w = scan_from_; w < warps_; ++w)
    if (wmask_[w]) {
      scan_from_ = w;
      return int(w);
    }
  scan_from_ = warps_;
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
  refresh_all();
  return true;
}

uint8_t* Interpreter::address(Space sp, uint32_t thread, uint32_t addr, uint32_t bytes, const char* what) {
  if (addr % bytes != 0) {
    set_fault(launch::kMisalignedAddress, std::string("misaligned ") + space_name(sp) + " " + what + " of " +
                                  std::to_string(bytes) + " bytes at " + hex(addr) + where());
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
    set_fault(launch::kIllegalAddress, std::string("out-of-range ") + space_name(sp) + " " + what + " of " +
                                      std::to_string(bytes) + " bytes at " + hex(addr) + where());
    return nullptr;
  }
  return base + off;
}

// The bytes of an access: the common case (aligned, in range) inline, the
// rest through address(), which faults.
inline uint8_t* Interpreter::resolve(Space sp, uint32_t thread, uint32_t addr, uint32_t bytes, const char* what) {
  uint8_t* base;
  uint64_t size, off = addr;
  switch (sp) {
    case Space::Global:
      base = mem_.bytes.data();
      size = mem_.bytes.size();
      off = uint64_t(addr) - mem_.base;  // wraps far past `size` below the base
      break;
    case Space::Shared:
      base = shared_.data();
      size = shared_.size();
      break;
    case Space::Local:
      base = local_.data() + size_t(thread) * prog_.local_bytes;
      size = prog_.local_bytes;
      break;
    default: return address(sp, thread, addr, bytes, what);
  }
  if (off + bytes <= size && off + bytes > off && addr % bytes == 0) return base + off;
  return address(sp, thread, addr, bytes, what);
}

namespace {
inline uint32_t read_bytes(const uint8_t* p, uint32_t bytes, bool sign) {
  uint32_t v = 0;
  switch (bytes) {
    case 4: std::memcpy(&v, p, 4); return v;
    case 2: {
      uint16_t h;
      std::memcpy(&h, p, 2);
      return sign ? uint32_t(int32_t(int16_t(h))) : h;
    }
    default: return sign ? uint32_t(int32_t(int8_t(*p))) : *p;
  }
}
inline void write_bytes(uint8_t* p, uint32_t bytes, uint32_t v) {
  switch (bytes) {
    case 4: std::memcpy(p, &v, 4); break;
    case 2: {
      uint16_t h = uint16_t(v);
      std::memcpy(p, &h, 2);
      break;
    }
    default: *p = uint8_t(v);
  }
}
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
  return rec ? exec<true>(uint32_t(w), rec) : exec<false>(uint32_t(w), nullptr);
}

// One EXEC(b, w).  A register's lanes are adjacent (regs_), so each
// instruction runs as a loop over the lanes of its operands; immediates are
// spread over a lane-wide buffer first.  Stores wait in pending_ and commit
// at the end of the block (validate() keeps loads and atomics before them).
template <bool kRecord>
bool Interpreter::exec(uint32_t w, StepRecord* rec) {
  const uint32_t L = p_.lanes, R = nregs_;
  const uint32_t b = wblock_[w];
  const uint64_t mask = wmask_[w];
  const uint64_t full = L >= 64 ? ~uint64_t(0) : (uint64_t(1) << L) - 1;
  const bool all = mask == full;
  const Block& blk = prog_.blocks[b];
  cur_warp_ = w;
  cur_block_ = b;
  if constexpr (kRecord) {
    *rec = StepRecord{};
    rec->cta = uint32_t(cta_);
    rec->warp = w;
    rec->block = b;
    rec->mask = mask;
  }
  uint32_t* W = regs_.data() + size_t(w) * R * L;
  const size_t t0 = size_t(w) * L;
  uint32_t imm[3][64];
  auto lanes_of = [&](const Operand& o, int k) -> const uint32_t* {
    if (!o.imm) return W + size_t(o.v) * L;
    std::fill_n(imm[k], L, o.v);
    return imm[k];
  };
  if constexpr (kRecord) pending_.clear();
  uint32_t npending = 0;
  const uint32_t active = uint32_t(std::popcount(mask));
  for (const Instr& in : blk.instrs) {
    const OpInfo& info = op_info(in.op);
    uint32_t* dst = W + size_t(in.dst) * L;
    switch (info.kind) {
      case OpKind::Alu: {
        const uint32_t* a = lanes_of(in.a, 0);
        const uint32_t* bb = info.arity >= 2 ? lanes_of(in.b, 1) : a;
        const uint32_t* c = info.arity >= 3 ? lanes_of(in.c, 2) : a;
        // One switch per instruction, then the operation inline over the
        // lanes (alu.h: the same functions as op_info(op).fn).
        alu::dispatch(in.op, [&]<Op op>() {
          if (all && !kRecord) {
            for (uint32_t l = 0; l < L; ++l) dst[l] = alu::eval<op>(a[l], bb[l], c[l]);
          } else {
            for (uint32_t l = 0; l < L; ++l) {
              if (!(mask >> l & 1)) continue;
              dst[l] = alu::eval<op>(a[l], bb[l], c[l]);
              if constexpr (kRecord) rec->regs.push_back({l, in.dst, dst[l]});
            }
          }
        });
        break;
      }
      case OpKind::Special:
        for (uint32_t l = 0; l < L; ++l) {
          if (!(mask >> l & 1)) continue;
          dst[l] = in.op == Op::LANE   ? l
                   : in.op == Op::WARP ? w
                   : in.op == Op::CTA  ? uint32_t(cta_)
                                       : uint32_t(stats_.steps);
          if constexpr (kRecord) rec->regs.push_back({l, in.dst, dst[l]});
        }
        break;
      case OpKind::Load: {
        const uint32_t* a = lanes_of(in.a, 0);
        const uint32_t* bb = lanes_of(in.b, 1);
        const uint32_t bytes = in.bytes;
        for (uint32_t l = 0; l < L; ++l) {
          if (!(mask >> l & 1)) continue;
          const uint8_t* ptr = resolve(in.space, uint32_t(t0 + l), a[l] + bb[l], bytes, "load");
          if (!ptr) return false;
          dst[l] = read_bytes(ptr, bytes, in.sign);
          if constexpr (kRecord) rec->regs.push_back({l, in.dst, dst[l]});
        }
        break;
      }
      case OpKind::Store: {
        const uint32_t* a = lanes_of(in.a, 0);
        const uint32_t* bb = lanes_of(in.b, 1);
        const uint32_t* c = lanes_of(in.c, 2);
        for (uint32_t l = 0; l < L; ++l) {
          if (!(mask >> l & 1)) continue;
          const uint32_t addr = a[l] + bb[l];
          uint8_t* ptr = resolve(in.space, uint32_t(t0 + l), addr, in.bytes, "store");
          if (!ptr) return false;
          uint32_t v = c[l];
          if (in.bytes < 4) v &= (1u << (8 * in.bytes)) - 1;
          if constexpr (kRecord) pending_.push_back({ptr, {in.space, l, addr, in.bytes, v}});
          else fast_pending_[npending++] = {ptr, v, in.bytes};
        }
        stats_.instructions++;
        stats_.lane_instructions += active;
        continue;  // writes no register
      }
      case OpKind::Atomic: {
        // The block's only write so far (validate()), so applying it now
        // in lane order equals committing it at block end.
        const uint32_t* a = lanes_of(in.a, 0);
        const uint32_t* bb = lanes_of(in.b, 1);
        const uint32_t* c = lanes_of(in.c, 2);
        for (uint32_t l = 0; l < L; ++l) {
          if (!(mask >> l & 1)) continue;
          const uint32_t addr = a[l];
          uint8_t* ptr = resolve(in.space, uint32_t(t0 + l), addr, 4, "atomic");
          if (!ptr) return false;
          const uint32_t old = read_bytes(ptr, 4, false);
          const uint32_t nv = eval_atom(in.atom, old, bb[l], c[l]);
          write_bytes(ptr, 4, nv);
          if constexpr (kRecord) rec->mem.push_back({in.space, l, addr, 4, nv});
          dst[l] = old;
          if constexpr (kRecord) rec->regs.push_back({l, in.dst, old});
        }
        break;
      }
    }
    stats_.instructions++;
    stats_.lane_instructions += active;
  }
  if constexpr (kRecord) {
    for (auto& pw : pending_) {
      write_bytes(pw.p, pw.w.bytes, pw.w.value);
      rec->mem.push_back(pw.w);
    }
  } else {
    for (uint32_t i = 0; i < npending; ++i) write_bytes(fast_pending_[i].p, fast_pending_[i].bytes, fast_pending_[i].value);
  }
  const Terminator& term = blk.term;
  const uint32_t* cond = term.kind == Term::BR ? W + size_t(term.cond) * L : nullptr;
  for (uint32_t l = 0; l < L; ++l) {
    if (!(mask >> l & 1)) continue;
    const size_t t = t0 + l;
    switch (term.kind) {
      case Term::JMP: pc_[t] = term.t; break;
      case Term::BR: pc_[t] = cond[l] != 0 ? term.t : term.f; break;
      case Term::EXIT: pc_[t] = kExited; break;
      case Term::BAR:
        pc_[t] = term.t;
        wait_[t] = kBar;
        break;
      case Term::WBAR:
        pc_[t] = term.t;
        wait_[t] = kWbar;
        break;
      case Term::TRAP: set_fault(int(term.code), "trap " + std::to_string(term.code) + where()); break;
    }
  }
  refresh(w);
  stats_.steps++;
  return true;
}

void Interpreter::run(uint64_t max_steps) {
  while (step()) {
    if (stats_.steps > max_steps) {
      set_fault(launch::kLaunchTimeout, "launch exceeded " + std::to_string(max_steps) + " machine steps");
      return;
    }
  }
}

}  // namespace qgpu::machine
