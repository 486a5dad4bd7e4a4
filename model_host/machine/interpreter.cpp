// The reference interpreter (docs/isa.md, "Execution").
#include "model_host/launch/errors.h"
#include "model_host/machine/interpreter.h"

#include "model_host/ptx/wmma.h"

#include "model_host/machine/alu.h"
#include "model_host/ptx/float_ref.h"

#include <algorithm>
#include <array>
#include <bit>
#include <climits>
#include <cstring>
#include <cstdlib>
#include <exception>
#include <memory>
#include <sstream>
#include <thread>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace qgpu::machine {
namespace {


// std::popcount without a call (a build for x86-64 without POPCNT calls
// libgcc's): the active lanes of a 32-lane mask.
inline uint32_t lanes_in(uint64_t mask) {
  uint64_t x = mask - ((mask >> 1) & 0x5555555555555555ull);
  x = (x & 0x3333333333333333ull) + ((x >> 2) & 0x3333333333333333ull);
  x = (x + (x >> 4)) & 0x0f0f0f0f0f0f0f0full;
  return uint32_t((x * 0x0101010101010101ull) >> 56);
}

std::string hex(uint64_t v) {
  std::ostringstream os;
  os << "0x" << std::hex << v;
  return os.str();
}

// The registers a thread may read before writing them, from block 0: the
// live registers at the kernel's entry, by the usual backward dataflow over
// the blocks (a block reads what its instructions read before they write it,
// its branch condition, and what its successors read that it does not
// write).  Every named source operand counts as read, whatever the op.
std::vector<uint32_t> entry_reads(const Program& prog, uint32_t nregs) {
  const size_t n = prog.blocks.size(), words = (nregs + 63) / 64;
  if (n == 0) return {};
  std::vector<uint64_t> use(n * words, 0), def(n * words, 0), in(n * words, 0);
  auto bit = [&](std::vector<uint64_t>& v, size_t b, uint32_t r) -> void { v[b * words + r / 64] |= uint64_t(1) << (r % 64); };
  auto has = [&](const std::vector<uint64_t>& v, size_t b, uint32_t r) { return (v[b * words + r / 64] >> (r % 64)) & 1; };
  for (size_t b = 0; b < n; ++b) {
    const Block& blk = prog.blocks[b];
    auto read = [&](uint32_t r) {
      if (!has(def, b, r)) bit(use, b, r);
    };
    for (const Instr& in_ : blk.instrs) {
      for (int k = 0; k < kMaxArity; ++k)
        if (!in_.src(k).imm) read(in_.src(k).v);
      if (in_.writes_reg()) bit(def, b, in_.dst);
    }
    if (blk.term.kind == Term::BR) read(blk.term.cond);
  }
  // Each block's successors (at most two; none past the last block).
  std::vector<std::array<uint32_t, 2>> succ(n, {UINT32_MAX, UINT32_MAX});
  for (size_t b = 0; b < n; ++b) {
    const Terminator& t = prog.blocks[b].term;
    if (t.kind == Term::BR) succ[b] = {t.t, t.f};
    if (t.kind == Term::JMP || t.kind == Term::BAR || t.kind == Term::WBAR) succ[b][0] = t.t;
  }
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t b = n; b-- > 0;)
      for (size_t i = 0; i < words; ++i) {
        uint64_t out = 0;
        for (uint32_t s : succ[b])
          if (s < n) out |= in[s * words + i];
        const uint64_t v = use[b * words + i] | (out & ~def[b * words + i]);
        changed |= v != in[b * words + i];
        in[b * words + i] = v;
      }
  }
  std::vector<uint32_t> regs;
  for (uint32_t r = 0; r < nregs; ++r)
    if (has(in, 0, r)) regs.push_back(r);
  return regs;
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
  validate(prog, p, threads);  // a thread's registers: its share at the launch's CTA size
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
      for (int k = 0; k < kMaxArity; ++k) name(in.src(k));
    }
    if (b.term.kind == Term::BR) nregs_ = std::max(nregs_, b.term.cond + 1);
  }
  if (p.lanes == Params::kCudaWarp) {
    zero_regs_ = entry_reads(prog, nregs_);
    zero_all_ = false;
  }
  size_t most = 0;  // stores of one block, all lanes
  for (const Block& b : prog.blocks) most = std::max(most, b.instrs.size());
  fast_pending_.resize(most * p.lanes);
  // Every CTA starts with the same live lanes: its threads.
  live0_.assign(warps_, 0);
  for (uint32_t w = 0; w < warps_; ++w) {
    const uint32_t n = std::min(p.lanes, threads - w * p.lanes);
    live0_[w] = n >= 64 ? ~uint64_t(0) : (uint64_t(1) << n) - 1;
  }
  cta_threads_ = cta_threads();
  set_jit(jit::mode());
}

uint32_t Interpreter::cta_threads() {
  static const uint32_t n = [] {
    if (const char* e = std::getenv("QGPU_CTA_THREADS")) {
      const long v = std::strtol(e, nullptr, 10);
      if (v >= 1) return uint32_t(std::min<long>(v, 64));
    }
    return std::clamp<uint32_t>(std::thread::hardware_concurrency(), 1, 8);
  }();
  return n;
}

void Interpreter::set_jit(jit::Mode m, uint32_t threshold) {
  jit_mode_ = m;
  jit_on_ = p_.lanes == Params::kCudaWarp && m != jit::Mode::Off;
  jit_threshold_ = m == jit::Mode::Always ? 0 : threshold ? threshold : jit::threshold();
  flush_jit_counts();
  jit_.assign(jit_on_ ? prog_.blocks.size() : 0, JitBlock{});
  jit_fn_.assign(jit_on_ ? prog_.blocks.size() : 0, nullptr);
}

Interpreter::~Interpreter() { flush_jit_counts(); }

// This launch's interpreted EXECs of the blocks not compiled, to their
// process-wide records (jit::Slot): later launches count on from there.
void Interpreter::flush_jit_counts() {
  for (JitBlock& j : jit_)
    if (j.slot && j.ran) {
      jit::add_execs(j.slot, j.ran);
      j.ran = 0;
    }
}

// Each field on a cache line of its own: every worker takes `next` at each
// CTA's start, and reading `stop` beside it would wait for that line too.
struct Interpreter::Group {
  alignas(64) std::atomic<uint64_t> next{0};   // the next CTA to start
  alignas(64) std::atomic<uint64_t> steps{0};  // the workers' EXECs, as they publish them
  alignas(64) std::atomic<bool> stop{false};   // a worker faulted: the others stop
};

void Interpreter::set_fault(int error, std::string msg) {
  if (fault_.error == 0) {
    fault_.error = error;
    fault_.message = std::move(msg);
    fault_cta_ = cta_;
    if (group_) group_->stop.store(true, std::memory_order_relaxed);
  }
  finished_ = true;
}

std::string Interpreter::where() const {
  return " (CTA " + std::to_string(cta_) + ", warp " + std::to_string(cur_warp_) + ", block B" +
         std::to_string(cur_block_) + ")";
}

bool Interpreter::start_next_cta() {
  if (group_) {
    if (group_->stop.load(std::memory_order_relaxed)) return false;
    const uint64_t next = group_->next.fetch_add(1, std::memory_order_relaxed);
    if (next >= ctas_) return false;
    cta_ = int64_t(next);
  } else {
    if (uint64_t(cta_ + 1) >= ctas_) return false;
    ++cta_;
  }
  const size_t slots = size_t(warps_) * p_.lanes;
  if (zero_all_ || regs_.size() != slots * nregs_) {
    regs_.assign(slots * nregs_, 0);
  } else {
    // Registers start at zero in every CTA; one that no thread reads before
    // writing it keeps the last CTA's values unseen (scan's 11 million CTAs
    // of 256 threads cleared 30 KB each).
    for (uint32_t w = 0; w < warps_; ++w)
      for (uint32_t r : zero_regs_) std::fill_n(regs_.data() + (size_t(w) * nregs_ + r) * p_.lanes, p_.lanes, 0u);
  }
  pc_.assign(slots, 0);
  for (size_t t = threads_; t < slots; ++t) pc_[t] = kExited;  // lanes past the CTA's threads
  wait_.assign(slots, kRunnable);
  shared_.assign(prog_.shared_bytes, 0);
  local_.assign(slots * prog_.local_bytes, 0);
  live_ = live0_;
  all_wait_.assign(warps_, kExited);
  // The most CTAs started, whichever thread started the last: at every 16th
  // CTA and the last one (a display's figure; each update takes the line
  // from the other workers).
  if (progress_ && ((cta_ & 15) == 0 || uint64_t(cta_) + 1 == ctas_)) {
    const uint64_t started = uint64_t(cta_) + 1;
    uint64_t seen = progress_->load(std::memory_order_relaxed);
    while (seen < started && !progress_->compare_exchange_weak(seen, started, std::memory_order_relaxed)) {
    }
  }
  if (jit_on_) jit_env_cta();
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

// warp_block and warp_mask in two branch-free passes over the warp's lanes.
void Interpreter::refresh(uint32_t w) {
  const uint32_t L = p_.lanes;
  const uint32_t* pc = pc_.data() + size_t(w) * L;
  const uint32_t* wait = wait_.data() + size_t(w) * L;
#if defined(__SSE2__)
  if (L == Params::kCudaWarp) {
    // A whole CUDA warp, four lanes to a vector.  A lane at the CTA barrier
    // counts as exited (its pc ORed with all ones); the minimum is a signed
    // one of the pcs with their top bit flipped (SSE2 has no unsigned one).
    const __m128i flip = _mm_set1_epi32(INT32_MIN), bar = _mm_set1_epi32(int(kBar));
    __m128i m = _mm_set1_epi32(INT32_MAX);  // kExited, flipped
    for (uint32_t i = 0; i < Params::kCudaWarp; i += 4) {
      const __m128i p = _mm_loadu_si128(reinterpret_cast<const __m128i*>(pc + i));
      const __m128i c = _mm_or_si128(p, _mm_cmpeq_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(wait + i)), bar));
      const __m128i cf = _mm_xor_si128(c, flip);
      const __m128i lt = _mm_cmplt_epi32(cf, m);
      m = _mm_or_si128(_mm_and_si128(lt, cf), _mm_andnot_si128(lt, m));
    }
    for (int sh : {8, 4}) {  // the least of the four
      const __m128i o = _mm_srli_si128(m, sh);
      const __m128i lt = _mm_cmplt_epi32(o, m);
      m = _mm_or_si128(_mm_and_si128(lt, o), _mm_andnot_si128(lt, m));
    }
    const uint32_t b = uint32_t(_mm_cvtsi128_si32(m)) ^ 0x80000000u;
    uint64_t mask = 0;
    if (b != kExited) {
      const __m128i bv = _mm_set1_epi32(int(b)), run = _mm_set1_epi32(int(kRunnable));
      for (uint32_t i = 0; i < Params::kCudaWarp; i += 4) {
        const __m128i at = _mm_cmpeq_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(pc + i)), bv);
        const __m128i go = _mm_cmpeq_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(wait + i)), run);
        mask |= uint64_t(_mm_movemask_ps(_mm_castsi128_ps(_mm_and_si128(at, go)))) << i;
      }
    }
    wblock_[w] = b;
    wmask_[w] = mask;
    return;
  }
#endif
  uint32_t b = kExited;
  for (uint32_t l = 0; l < L; ++l) {
    const uint32_t c = wait[l] != kBar ? pc[l] : kExited;  // an exited lane's pc is kExited
    b = c < b ? c : b;
  }
  uint64_t mask = 0;
  if (b != kExited)
    for (uint32_t l = 0; l < L; ++l) mask |= uint64_t((pc[l] == b) & (wait[l] == kRunnable)) << l;
  wblock_[w] = b;
  wmask_[w] = mask;
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
  bool live = false;
  for (uint32_t w = 0; w < warps_; ++w) live |= live_[w] != 0;
  if (!live) return false;
  // wblock_ holds each warp's minimum pc over its lanes neither exited nor
  // at the CTA barrier: a group's minimum is the least of its warps'.
  bool released = false;
  const uint32_t L = p_.lanes, group = std::max(1u, Params::kCudaWarp / L);
#if defined(__SSE2__)
  if (L == Params::kCudaWarp) {
    // One machine warp per group: its lanes at its own next block that
    // wait at WBAR go on, four lanes to a vector (wblock_ and wmask_ are
    // up to date, so a warp where none goes on keeps them).
    const __m128i wbar = _mm_set1_epi32(int(kWbar)), run = _mm_set1_epi32(int(kRunnable));
    for (uint32_t w = 0; w < warps_; ++w) {
      const uint32_t m = wblock_[w];
      if (m == kExited) continue;
      if (all_wait_[w] == m) {
        // Every live lane waits at WBAR at m (a warp at BAR has no block):
        // they all go on.
        std::fill_n(wait_.data() + size_t(w) * L, L, uint32_t(kRunnable));
        wmask_[w] = live_[w];
        all_wait_[w] = kExited;
        released = true;
        continue;
      }
      const __m128i mv = _mm_set1_epi32(int(m));
      uint32_t* pc = pc_.data() + size_t(w) * L;
      uint32_t* wait = wait_.data() + size_t(w) * L;
      int any = 0;
      for (uint32_t i = 0; i < Params::kCudaWarp; i += 4) {
        __m128i* wp = reinterpret_cast<__m128i*>(wait + i);
        const __m128i wt = _mm_loadu_si128(wp);
        const __m128i go = _mm_and_si128(_mm_cmpeq_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(pc + i)), mv),
                                         _mm_cmpeq_epi32(wt, wbar));
        _mm_storeu_si128(wp, _mm_or_si128(_mm_and_si128(go, run), _mm_andnot_si128(go, wt)));
        any |= _mm_movemask_ps(_mm_castsi128_ps(go));
      }
      if (any) {
        released = true;
        refresh(w);
      }
    }
  } else
#endif
  for (uint32_t g = 0; g < warps_; g += group) {
    const uint32_t end = std::min(warps_, g + group);
    uint32_t m = kExited;
    for (uint32_t w = g; w < end; ++w) m = std::min(m, wblock_[w]);
    if (m == kExited) continue;
    for (uint32_t w = g; w < end; ++w) {
      if (wblock_[w] != m) continue;
      all_wait_[w] = kExited;
      for (uint32_t l = 0; l < L; ++l) {
        const size_t t = size_t(w) * L + l;
        if (pc_[t] == m && wait_[t] == kWbar) {
          wait_[t] = kRunnable;
          released = true;
        }
      }
      refresh(w);
    }
  }
  if (released) {
    scan_from_ = 0;
    return true;
  }
  // The CTA barrier opens: every live lane waits at BAR.
  std::fill(wait_.begin(), wait_.end(), uint32_t(kRunnable));
  for (uint32_t w = 0; w < warps_; ++w) {
    if (all_wait_[w] != kExited) {
      wblock_[w] = all_wait_[w];
      wmask_[w] = live_[w];
      all_wait_[w] = kExited;
    } else {
      refresh(w);
    }
  }
  scan_from_ = 0;
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
  if (off + bytes <= size && off + bytes > off && (addr & (bytes - 1)) == 0) return base + off;
  return address(sp, thread, addr, bytes, what);
}

Interpreter::Window Interpreter::window(Space sp, size_t t0) {
  Window w;
  switch (sp) {
    case Space::Global:
      w.base = mem_.bytes.data();
      w.size = mem_.bytes.size();
      w.sub = mem_.base;
      break;
    case Space::Shared:
      w.base = shared_.data();
      w.size = shared_.size();
      break;
    case Space::Local:
      w.base = local_.data() + t0 * prog_.local_bytes;
      w.size = prog_.local_bytes;
      w.stride = prog_.local_bytes;
      break;
    case Space::Param:
      w.base = params_.data();
      w.size = params_.size();
      break;
    default: break;
  }
  return w;
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
template <uint32_t kBytes>
inline uint32_t load_lane(const uint8_t* p, bool sign) {
  if constexpr (kBytes == 4) {
    uint32_t v;
    std::memcpy(&v, p, 4);
    return v;
  } else if constexpr (kBytes == 2) {
    uint16_t h;
    std::memcpy(&h, p, 2);
    return sign ? uint32_t(int32_t(int16_t(h))) : h;
  } else {
    return sign ? uint32_t(int32_t(int8_t(*p))) : *p;
  }
}
// An atomic's read-modify-write of the aligned word at p: (old, new).  In
// global memory it is one atomic operation, so that another process's
// atomics on the same bytes (a client's on memory it maps live) cannot come
// between the read and the write; elsewhere a plain read and write.
inline std::pair<uint32_t, uint32_t> atomic_rmw(uint8_t* p, AtomOp op, uint32_t b, uint32_t c) {
  auto* w = reinterpret_cast<uint32_t*>(p);
  uint32_t old = __atomic_load_n(w, __ATOMIC_RELAXED), nv;
  do {
    nv = eval_atom(op, old, b, c);
  } while (!__atomic_compare_exchange_n(w, &old, nv, false, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED));
  return {old, nv};
}
// ATOM64's read-modify-write of the aligned doubleword at p: its old value.
// In global memory one atomic operation, elsewhere a plain read and write.
inline uint64_t atomic_rmw64(uint8_t* p, AtomOp op, uint64_t x, uint64_t y) {
  auto* w = reinterpret_cast<uint64_t*>(p);
  uint64_t old = __atomic_load_n(w, __ATOMIC_RELAXED);
  while (!__atomic_compare_exchange_n(w, &old, eval_atom64(op, old, x, y), false, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED)) {
  }
  return old;
}
inline uint64_t plain_rmw64(uint8_t* p, AtomOp op, uint64_t x, uint64_t y) {
  uint64_t old;
  std::memcpy(&old, p, 8);
  const uint64_t nv = eval_atom64(op, old, x, y);
  std::memcpy(p, &nv, 8);
  return old;
}
inline std::pair<uint32_t, uint32_t> plain_rmw(uint8_t* p, AtomOp op, uint32_t b, uint32_t c) {
  uint32_t old;
  std::memcpy(&old, p, 4);
  const uint32_t nv = eval_atom(op, old, b, c);
  std::memcpy(p, &nv, 4);
  return {old, nv};
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

// The addresses a + b of a whole CUDA warp (Params::kCudaWarp lanes) as
// offsets into `win`, and whether every active lane's access of `bytes` is
// in range and aligned: one pass without branches (a maximum and an OR over
// the active lanes).  False also when the window does not fit the 32-bit
// check (then the per-lane path decides).
bool Interpreter::warp_offsets(const Window& win, const Operand& a, const Operand& b, const uint32_t* W,
                               uint64_t mask, uint32_t bytes, uint32_t* off) const {
  // Four lanes to a vector (GCC's vector extension: SSE2 on x86-64, whatever
  // the build's -march): eight vectors make the warp.
  using v4 = uint32_t __attribute__((vector_size(16)));
  constexpr uint32_t N = Params::kCudaWarp, V = N / 4;
  if (win.size < bytes || win.sub + win.size > (uint64_t(1) << 32)) return false;
  // In 32 bits: an address below sub wraps to at least 2^32 - sub >= size,
  // past the limit, as one above the window does.
  const uint32_t sub = uint32_t(win.sub), lim = uint32_t(win.size - bytes);
  auto ld = [](const uint32_t* p) {
    v4 v;
    std::memcpy(&v, p, sizeof v);
    return v;
  };
  v4 o[V];
  if (!a.imm && !b.imm) {
    const uint32_t *x = W + size_t(a.v) * N, *y = W + size_t(b.v) * N;
    for (uint32_t i = 0; i < V; ++i) o[i] = ld(x + 4 * i) + ld(y + 4 * i) - sub;
  } else if (!a.imm || !b.imm) {
    const uint32_t* x = W + size_t(a.imm ? b.v : a.v) * N;
    const uint32_t k = (a.imm ? a.v : b.v) - sub;
    for (uint32_t i = 0; i < V; ++i) o[i] = ld(x + 4 * i) + k;
  } else {
    const uint32_t k = a.v + b.v - sub;
    for (uint32_t i = 0; i < V; ++i) o[i] = v4{k, k, k, k};
  }
  std::memcpy(off, o, sizeof o);
  // Over the active lanes: any offset past the limit, any address (offset
  // + sub: sub need not be aligned) with a low bit set.
  const v4 limv = v4{lim, lim, lim, lim}, align = v4{1, 1, 1, 1} * (bytes - 1);
  v4 bad = {};
  if (mask == (uint64_t(1) << N) - 1) {
    for (uint32_t i = 0; i < V; ++i) bad |= v4(o[i] > limv) | ((o[i] + sub) & align);
  } else {
    const uint32_t m32 = uint32_t(mask);
    const v4 mv = v4{m32, m32, m32, m32};
    for (uint32_t i = 0; i < V; ++i) {
      const uint32_t s = 4 * i;
      const v4 on = v4((mv & v4{1u << s, 2u << s, 4u << s, 8u << s}) != 0);
      bad |= (v4(o[i] > limv) | ((o[i] + sub) & align)) & on;
    }
  }
  return (bad[0] | bad[1] | bad[2] | bad[3]) == 0;
}

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
  if (!rec && jit_on_)
    if (const jit::BlockFn fn = jit_fn_[wblock_[w]]) return exec_chain(uint32_t(w), wblock_[w], fn);
  return rec ? exec<true>(uint32_t(w), rec) : exec<false>(uint32_t(w), nullptr);
}

// One EXEC(b, w).  A register's lanes are adjacent (regs_), so each
// instruction runs as a loop over the lanes of its operands; immediates are
// spread over a lane-wide buffer first.  Stores wait in pending_ and commit
// at the end of the block (validate() keeps loads and atomics before them).
namespace {
ptx::wmma::In wmma_in(MmaIn t) {
  return t == MmaIn::F16 ? ptx::wmma::In::F16 : t == MmaIn::S8 ? ptx::wmma::In::S8 : ptx::wmma::In::U8;
}
}  // namespace

template <bool kRecord>
bool Interpreter::exec(uint32_t w, StepRecord* rec) {
  const uint32_t b = wblock_[w];
  const uint64_t mask = wmask_[w];
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
  if constexpr (!kRecord) {
    if (jit_on_) {
      jit::BlockFn fn = jit_fn_[b];
      if (!fn) {
        // Compiled already (by an earlier launch): at once; else once it
        // has run jit_threshold_ EXECs in this process (the earlier
        // launches' EXECs counted); kNoCode: it stays interpreted.
        JitBlock& j = jit_[b];
        if (j.state == JitBlock::kNew) {
          // A block with MMAs stays interpreted: exec_body computes a run
          // of them as one tile, compiled code would call them one by one.
          // So do blocks with the native f32 and 64-bit atomics, which the
          // JIT does not compile.
          const bool mma = std::any_of(blk.instrs.begin(), blk.instrs.end(), [](const Instr& x) {
            return x.op == Op::MMA || x.op == Op::ATOM64 || x.op == Op::ATOMHI ||
                   (x.op == Op::ATOM && x.atom == AtomOp::FADD);
          });
          j.slot = mma ? nullptr : jit::slot(blk);
          j.state = j.slot ? JitBlock::kCounting : JitBlock::kNoCode;
          if (j.slot && jit_threshold_ > 0) fn = jit::cached(j.slot);
          const uint64_t prior = jit::execs(j.slot);
          j.left = prior >= jit_threshold_ ? 0 : uint32_t(jit_threshold_ - prior);
        }
        if (fn) {
        } else if (j.state != JitBlock::kCounting) {
        } else if (j.left > 0) {
          --j.left;
          ++j.ran;
        } else {
          fn = jit::compile(j.slot, blk, &Interpreter::jit_instr, &Interpreter::jit_append);
          if (!fn) j.state = JitBlock::kNoCode;
        }
        if (fn) {
          jit_fn_[b] = fn;
          j.state = JitBlock::kNoCode;  // nothing more to count
          j.ran = 0;
        }
      }
      if (fn) return exec_chain(w, b, fn);
    }
  }
  if (!exec_body<kRecord>(w, blk, mask, rec)) return false;
  exec_terminator(w, blk, mask);
  stats_.steps++;
  return true;
}

// Under run(), the next EXECs too while their blocks are compiled: the warp
// that ran stays the one pick_warp() chooses while it has runnable lanes
// (the warps below it cannot run until a barrier opens); when it has none,
// the warp step() would pick next, after the barrier release step() would
// make, within the CTA.  Back to run() at its checks (the step limit, every
// kCancelSteps EXECs), at a fault and at the CTA's end.  A block of only a
// terminator (never compiled: there is nothing to compile) is run in the
// chain too, as exec_body would run it: its terminator alone.
bool Interpreter::exec_chain(uint32_t w, uint32_t b, jit::BlockFn fn) {
  cur_warp_ = w;
  cur_block_ = b;
  const Block* bp = &prog_.blocks[b];
  uint64_t m = wmask_[w];
  for (;;) {
    if (fn && !exec_jit(w, *bp, m, fn)) return false;
    exec_terminator(w, *bp, m, fn ? &jit_env_.cond_bits : nullptr);
    stats_.steps++;
    if (!chain_ || finished_ || stats_.steps > chain_limit_ || stats_.steps % kCancelSteps == 0) return true;
    m = wmask_[w];
    if (!m) {
      int next = pick_warp();
      if (next < 0) {
        if (!release_barriers()) return true;  // the CTA has ended: step() starts the next
        next = pick_warp();
        if (next < 0) return true;
      }
      w = uint32_t(next);
      cur_warp_ = w;
      m = wmask_[w];
    }
    const uint32_t nb = wblock_[w];
    fn = jit_fn_[nb];
    bp = &prog_.blocks[nb];
    if (!fn && !bp->instrs.empty()) return true;
    cur_block_ = nb;
  }
}

// One instruction of a block over the lanes in `mask` (its stores added to
// the pending ones); false on a fault.  exec_body's loop, and the JIT's
// calls for the instructions it does not compile (jit.h).
template <bool kRecord>
[[gnu::always_inline]] inline bool Interpreter::exec_instr(uint32_t w, const Instr& in, uint64_t mask, bool all,
                                                          uint32_t active, StepRecord* rec, uint32_t& npending,
                                                          int& host_nearest) {
  const uint32_t L = p_.lanes, R = nregs_;
  uint32_t* W = regs_.data() + size_t(w) * R * L;
  const size_t t0 = size_t(w) * L;
  uint32_t imm[kMaxArity][64];
  auto lanes_of = [&](const Operand& o, int k) -> const uint32_t* {
    if (!o.imm) return W + size_t(o.v) * L;
    std::fill_n(imm[k], L, o.v);
    return imm[k];
  };
  (void)active;
  {
    const OpInfo& info = op_info(in.op);
    uint32_t* dst = W + size_t(in.dst) * L;
    if (info.kind == OpKind::Float) {  // a native float operation (float_eval.h)
      const uint32_t* a = lanes_of(in.a, 0);
      const uint32_t* bb = info.arity >= 2 ? lanes_of(in.b, 1) : a;
      const uint32_t* c = info.arity >= 3 ? lanes_of(in.c, 2) : a;
      // The host's rounding mode, asked once per EXEC (the operations that
      // round otherwise set and restore it around themselves).
      if (host_nearest < 0) host_nearest = ptx::fref::host_rounds_to_nearest();
      if (info.arity > 3 || is_f64(in.op)) {  // the f64 ops: up to six source words
        const uint32_t* src[kMaxArity] = {a, bb, c, a, a, a};
        for (int k = 3; k < info.arity; ++k) src[k] = lanes_of(in.src(k), k);
        eval_float_lanes(in, src, dst, L, mask, host_nearest);
      } else {
        eval_float_lanes(in, a, bb, c, dst, L, mask, host_nearest);
      }
      if constexpr (kRecord)
        for (uint32_t l = 0; l < L; ++l)
          if (mask >> l & 1) rec->regs.push_back({l, in.dst, dst[l]});
      return true;
    }
    switch (info.kind) {
      case OpKind::Alu: {
        if (all && !kRecord && info.arity == 2 && !in.a.imm && in.b.imm) {
          // A register and an immediate over every lane.
          const uint32_t* a = W + size_t(in.a.v) * L;
          const uint32_t k = in.b.v;
          alu::dispatch(in.op, [&]<Op op>() {
            if (L == Params::kCudaWarp)
              for (uint32_t l = 0; l < Params::kCudaWarp; ++l) dst[l] = alu::eval<op>(a[l], k, k);
            else
              for (uint32_t l = 0; l < L; ++l) dst[l] = alu::eval<op>(a[l], k, k);
          });
          break;
        }
        const uint32_t* a = lanes_of(in.a, 0);
        const uint32_t* bb = info.arity >= 2 ? lanes_of(in.b, 1) : a;
        const uint32_t* c = info.arity >= 3 ? lanes_of(in.c, 2) : a;
        // One switch per instruction, then the operation inline over the
        // lanes (alu.h: the same functions as op_info(op).fn).
        alu::dispatch(in.op, [&]<Op op>() {
          if (!kRecord && L == Params::kCudaWarp) {
            // A whole CUDA warp: a loop of known length the compiler
            // vectorises; with lanes off, every lane computes (the operations
            // are pure) and only the active ones keep the result.
            if (all) {
              for (uint32_t l = 0; l < Params::kCudaWarp; ++l) dst[l] = alu::eval<op>(a[l], bb[l], c[l]);
            } else if (active <= 4) {  // a few lanes: only those
              for (uint64_t m = mask; m; m &= m - 1) {
                const int l = std::countr_zero(m);
                dst[l] = alu::eval<op>(a[l], bb[l], c[l]);
              }
            } else {
              const uint32_t m32 = uint32_t(mask);
              for (uint32_t l = 0; l < Params::kCudaWarp; ++l) {
                const uint32_t v = alu::eval<op>(a[l], bb[l], c[l]);
                dst[l] = (m32 >> l & 1) ? v : dst[l];
              }
            }
          } else if (all && !kRecord) {
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
          dst[l] = in.op == Op::LANE     ? l
                   : in.op == Op::WARP   ? w
                   : in.op == Op::CTA    ? uint32_t(cta_)
                   : in.op == Op::ATOMHI ? atom_hi_[l]
                                         : uint32_t(stats_.steps);
          if constexpr (kRecord) rec->regs.push_back({l, in.dst, dst[l]});
        }
        break;
      case OpKind::Load: {
        const uint32_t bytes = in.bytes;
        const Window win = window(in.space, t0);
        if (win.base && !kRecord && L == Params::kCudaWarp) {
          // A whole CUDA warp: every address at once, one range and
          // alignment check over the active lanes, then the loads without
          // per-lane checks.  A fault falls through to the loop below,
          // which finds the first faulting lane and reports it.
          uint32_t off[Params::kCudaWarp];
          if (warp_offsets(win, in.a, in.b, W, mask, bytes, off)) {
            const uint8_t* base = win.base;
            const size_t stride = win.stride;
            if (all && stride == 0) {
              // The usual shapes of a warp's access: every lane at one
              // address (a broadcast), or lane l at the first lane's + 4 l
              // (a coalesced row): one load, or one copy of the row.
              const uint32_t o0 = off[0];
              uint32_t same = 0, row = 0;
              for (uint32_t l = 0; l < Params::kCudaWarp; ++l) {
                same |= off[l] ^ o0;
                row |= off[l] ^ (o0 + 4 * l);
              }
              if (same == 0) {
                const uint32_t v = read_bytes(base + o0, bytes, in.sign);
                for (uint32_t l = 0; l < Params::kCudaWarp; ++l) dst[l] = v;
                break;
              }
              if (row == 0 && bytes == 4) {
                std::memcpy(dst, base + o0, 4 * Params::kCudaWarp);
                break;
              }
            }
            auto gather = [&]<uint32_t kBytes>() {
              if (all) {
                for (uint32_t l = 0; l < Params::kCudaWarp; ++l)
                  dst[l] = load_lane<kBytes>(base + l * stride + off[l], in.sign);
              } else {
                for (uint64_t m = mask; m; m &= m - 1) {
                  const uint32_t l = uint32_t(std::countr_zero(m));
                  dst[l] = load_lane<kBytes>(base + l * stride + off[l], in.sign);
                }
              }
            };
            if (bytes == 4) gather.template operator()<4>();
            else if (bytes == 2) gather.template operator()<2>();
            else gather.template operator()<1>();
            break;
          }
        }
        const uint32_t* a = lanes_of(in.a, 0);
        const uint32_t* bb = lanes_of(in.b, 1);
        if (win.base && !kRecord) {
          // The common case: global, shared, local or param memory.
          for (uint64_t m = mask; m; m &= m - 1) {
            const uint32_t l = uint32_t(std::countr_zero(m));
            const uint32_t addr = a[l] + bb[l];
            const uint8_t* ptr = win.at(l, addr, bytes);
            if (!ptr) ptr = address(in.space, uint32_t(t0 + l), addr, bytes, "load");
            if (!ptr) return false;
            if (bytes == 4) std::memcpy(&dst[l], ptr, 4);
            else dst[l] = read_bytes(ptr, bytes, in.sign);
          }
          break;
        }
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
        const Window win = window(in.space, t0);
        if (win.base && !kRecord && L == Params::kCudaWarp) {
          // A whole CUDA warp: as for loads, one check, then the pending
          // writes (committed at block end) without per-lane checks.
          uint32_t off[Params::kCudaWarp];
          const uint32_t bytes = in.bytes;
          if (warp_offsets(win, in.a, in.b, W, mask, bytes, off)) {
            const uint32_t keep = bytes < 4 ? (1u << (8 * bytes)) - 1 : ~0u;
            uint8_t* base = win.base;
            const size_t stride = win.stride;
            FastPending* out = fast_pending_.data() + npending;
            if (in.c.imm) {
              const uint32_t v = in.c.v & keep;
              for (uint64_t m = mask; m; m &= m - 1) {
                const uint32_t l = uint32_t(std::countr_zero(m));
                *out++ = {base + l * stride + off[l], v, bytes};
              }
            } else {
              const uint32_t* c = W + size_t(in.c.v) * L;
              for (uint64_t m = mask; m; m &= m - 1) {
                const uint32_t l = uint32_t(std::countr_zero(m));
                *out++ = {base + l * stride + off[l], c[l] & keep, bytes};
              }
            }
            npending = uint32_t(out - fast_pending_.data());
            return true;
          }
        }
        const uint32_t* a = lanes_of(in.a, 0);
        const uint32_t* bb = lanes_of(in.b, 1);
        const uint32_t* c = lanes_of(in.c, 2);
        if (win.base && !kRecord) {
          const uint32_t bytes = in.bytes;
          const uint32_t keep = bytes < 4 ? (1u << (8 * bytes)) - 1 : ~0u;
          for (uint64_t m = mask; m; m &= m - 1) {
            const uint32_t l = uint32_t(std::countr_zero(m));
            const uint32_t addr = a[l] + bb[l];
            uint8_t* ptr = win.at(l, addr, bytes);
            if (!ptr) ptr = address(in.space, uint32_t(t0 + l), addr, bytes, "store");
            if (!ptr) return false;
            fast_pending_[npending++] = {ptr, c[l] & keep, bytes};
          }
          return true;
        }
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
        return true;
      }
      case OpKind::Atomic: {
        // The block's only write so far (validate()), so applying it now
        // in lane order equals committing it at block end.
        const uint32_t* a = lanes_of(in.a, 0);
        const uint32_t* bb = lanes_of(in.b, 1);
        const uint32_t* c = lanes_of(in.c, 2);
        if (in.op == Op::ATOM64) {
          // The whole doubleword at once (one host atomic in global
          // memory); the high word of old waits in the lane's latch for
          // the ATOMHI after it.
          const uint32_t* d = lanes_of(in.d, 3);
          const uint32_t* e = lanes_of(in.e, 4);
          for (uint32_t l = 0; l < L; ++l) {
            if (!(mask >> l & 1)) continue;
            uint8_t* ptr = resolve(in.space, uint32_t(t0 + l), a[l], 8, "atomic");
            if (!ptr) return false;
            const uint64_t x = uint64_t(c[l]) << 32 | bb[l], y = uint64_t(e[l]) << 32 | d[l];
            const uint64_t old = in.space == Space::Global ? atomic_rmw64(ptr, in.atom, x, y)
                                                           : plain_rmw64(ptr, in.atom, x, y);
            if constexpr (kRecord) {
              const uint64_t nv = eval_atom64(in.atom, old, x, y);
              rec->mem.push_back({in.space, l, a[l], 4, uint32_t(nv)});
              rec->mem.push_back({in.space, l, a[l] + 4, 4, uint32_t(nv >> 32)});
            }
            dst[l] = uint32_t(old);
            atom_hi_[l] = uint32_t(old >> 32);
            if constexpr (kRecord) rec->regs.push_back({l, in.dst, uint32_t(old)});
          }
          break;
        }
        const Window win = window(in.space, t0);
        if (win.base && !kRecord) {
          for (uint64_t m = mask; m; m &= m - 1) {
            const uint32_t l = uint32_t(std::countr_zero(m));
            uint8_t* ptr = win.at(l, a[l], 4);
            if (!ptr) ptr = address(in.space, uint32_t(t0 + l), a[l], 4, "atomic");
            if (!ptr) return false;
            dst[l] = in.space == Space::Global ? atomic_rmw(ptr, in.atom, bb[l], c[l]).first
                                               : plain_rmw(ptr, in.atom, bb[l], c[l]).first;
          }
          break;
        }
        for (uint32_t l = 0; l < L; ++l) {
          if (!(mask >> l & 1)) continue;
          const uint32_t addr = a[l];
          uint8_t* ptr = resolve(in.space, uint32_t(t0 + l), addr, 4, "atomic");
          if (!ptr) return false;
          const auto [old, nv] = in.space == Space::Global ? atomic_rmw(ptr, in.atom, bb[l], c[l])
                                                            : plain_rmw(ptr, in.atom, bb[l], c[l]);
          if constexpr (kRecord) rec->mem.push_back({in.space, l, addr, 4, nv});
          dst[l] = old;
          if constexpr (kRecord) rec->regs.push_back({l, in.dst, old});
        }
        break;
      }
      case OpKind::Matrix: {
        // One element of D per lane (ptx/wmma.h has the arithmetic).  The
        // lanes of a warp share one area, and an mma's elements are
        // consecutive MMAs of one EXEC: its f16 inputs are converted to f32
        // once (mma_cache_).
        const uint32_t* a = lanes_of(in.a, 0);
        const uint32_t* bb = lanes_of(in.b, 1);
        const uint32_t* c = lanes_of(in.c, 2);
        const MmaMod& mm = in.mma;
        const uint32_t K = mm.k, es = mm.in_bytes(), a_bytes = uint32_t(mm.m) * K * es;
        const ptx::wmma::In it = wmma_in(mm.in);
        // f16: the lanes' rows and columns gathered, then their dot products
        // together (ptx::wmma::dot_f32_many).
        const float* rows_of[64];
        const float* cols_of[64];
        uint32_t cs[64], ds[64], lanes[64], n16 = 0;
        for (uint32_t l = 0; l < L; ++l) {
          if (!(mask >> l & 1)) continue;
          const uint8_t* p = resolve(Space::Shared, uint32_t(t0 + l), a[l], 4, "matrix operation");
          if (!p || !resolve(Space::Shared, uint32_t(t0 + l), a[l] + mm.area_bytes() - 4, 4, "matrix operation"))
            return false;
          const uint32_t e = bb[l];
          if (e >= uint32_t(mm.m) * mm.n) {
            set_fault(launch::kLaunchFailure, "matrix operation on element " + std::to_string(e) + " of " +
                                                  std::to_string(mm.m * mm.n) + where());
            return false;
          }
          const uint32_t row = e / mm.n, col = e % mm.n;
          if (it == ptx::wmma::In::F16) {
            MmaCache& mc = mma_cache_;
            const uint32_t na = uint32_t(mm.m) * K, nb = uint32_t(mm.n) * K;
            if (mc.at != p || mc.step != stats_.steps || mc.na != na) {
              if (n16) {  // another area (a warp's lanes share one): the lanes so far first
                ptx::wmma::dot_f32_many(K, rows_of, cols_of, cs, ds, n16);
                for (uint32_t j = 0; j < n16; ++j) dst[lanes[j]] = ds[j];
                n16 = 0;
              }
              uint16_t h[1024];
              std::memcpy(h, p, mm.area_bytes());
              const float* half = ptx::wmma::f16_table();
              for (uint32_t i = 0; i < na; ++i) mc.a[i] = half[h[i]];
              for (uint32_t i = 0; i < nb; ++i) mc.b[i] = half[h[na + i]];
              mc.at = p, mc.step = stats_.steps, mc.na = na;
            }
            rows_of[n16] = mc.a + row * K, cols_of[n16] = mc.b + col * K, cs[n16] = c[l], lanes[n16++] = l;
          } else {
            dst[l] = ptx::wmma::dot(K, it, mm.satfinite, p + row * K * es, p + a_bytes + col * K * es, c[l]);
          }
        }
        if (n16) {
          ptx::wmma::dot_f32_many(K, rows_of, cols_of, cs, ds, n16);
          for (uint32_t j = 0; j < n16; ++j) dst[lanes[j]] = ds[j];
        }
        if constexpr (kRecord)
          for (uint32_t l = 0; l < L; ++l)
            if (mask >> l & 1) rec->regs.push_back({l, in.dst, dst[l]});
        break;
      }
      case OpKind::Float: break;  // run above
    }
  }
  return true;
}


namespace {
// The MMAs from `in` on that read one area with one shape and type, none
// reading a register an earlier one of them writes: computing them together
// from the registers as they are before the first gives what running them
// one after the other gives.
uint32_t mma_run(const Instr* in, size_t left) {
  uint32_t n = 0;
  auto written = [&](const Operand& o) {
    if (o.imm) return false;
    for (uint32_t j = 0; j < n; ++j)
      if (in[j].dst == o.v) return true;
    return false;
  };
  for (left = std::min<size_t>(left, 64); n < left; ++n) {  // exec_mma_tile takes 64 at most
    const Instr& x = in[n];
    if (x.op != Op::MMA || x.a.imm != in[0].a.imm || x.a.v != in[0].a.v || x.mma.m != in[0].mma.m ||
        x.mma.n != in[0].mma.n || x.mma.k != in[0].mma.k || x.mma.in != in[0].mma.in ||
        x.mma.satfinite != in[0].mma.satfinite || written(x.a) || written(x.b) || written(x.c))
      break;
  }
  return n;
}
}  // namespace

bool Interpreter::exec_mma_tile(uint32_t w, const Instr* ins, uint32_t n, uint64_t mask) {
  const uint32_t L = p_.lanes, R = nregs_;
  uint32_t* W = regs_.data() + size_t(w) * R * L;
  const MmaMod& mm = ins[0].mma;
  const uint32_t elems = uint32_t(mm.m) * mm.n;
  if (!mask || elems > 1024 || n > 64) return false;
  uint32_t imm[2][64], c[1024], d[1024], e_of[64][64];
  auto lanes_of = [&](const Operand& o, uint32_t* buf) -> const uint32_t* {
    if (!o.imm) return W + size_t(o.v) * L;
    std::fill_n(buf, L, o.v);
    return buf;
  };
  // One area for every lane.
  const uint32_t* as = lanes_of(ins[0].a, imm[0]);
  const uint32_t area = as[std::countr_zero(mask)];
  for (uint64_t m = mask; m; m &= m - 1)
    if (as[std::countr_zero(m)] != area) return false;
  // Outside shared memory: the MMAs one at a time report it.
  if (area % 4 || uint64_t(area) + mm.area_bytes() > shared_.size()) return false;
  const uint8_t* p = shared_.data() + area;
  // Each element of the tile named by at most one (MMA, lane): its C.
  uint8_t owned[1024];
  std::fill_n(owned, elems, uint8_t(0));
  std::fill_n(c, elems, 0u);
  for (uint32_t j = 0; j < n; ++j) {
    const uint32_t* bs = lanes_of(ins[j].b, imm[0]);
    const uint32_t* cs = lanes_of(ins[j].c, imm[1]);
    for (uint64_t m = mask; m; m &= m - 1) {
      const uint32_t l = uint32_t(std::countr_zero(m)), e = bs[l];
      if (e >= elems || owned[e]) return false;
      owned[e] = 1;
      e_of[j][l] = e;
      c[e] = cs[l];
    }
  }
  ptx::wmma::tile({mm.m, mm.n, mm.k}, wmma_in(mm.in), mm.satfinite, p, c, d);
  // Written after every element was read (mma_run).
  for (uint32_t j = 0; j < n; ++j) {
    uint32_t* dst = W + size_t(ins[j].dst) * L;
    for (uint64_t m = mask; m; m &= m - 1) {
      const uint32_t l = uint32_t(std::countr_zero(m));
      dst[l] = d[e_of[j][l]];
    }
  }
  return true;
}

// The block's instructions over the lanes in `mask`, then its stores
// committed; false on a fault.
template <bool kRecord>
[[gnu::always_inline]] inline bool Interpreter::exec_body(uint32_t w, const Block& blk, uint64_t mask, StepRecord* rec) {
  const uint32_t L = p_.lanes;
  const uint64_t full = L >= 64 ? ~uint64_t(0) : (uint64_t(1) << L) - 1;
  const bool all = mask == full;
  if constexpr (kRecord) pending_.clear();
  uint32_t npending = 0;
  const uint32_t active = lanes_in(mask);
  int host_nearest = -1;
  const Instr* const instrs = blk.instrs.data();
  for (size_t i = 0, n = blk.instrs.size(); i < n; ++i) {
    const Instr& in = instrs[i];
    if constexpr (!kRecord) {
      if (in.op == Op::MMA) {
        const uint32_t run = mma_run(instrs + i, n - i);
        if (run > 1 && exec_mma_tile(w, instrs + i, run, mask)) {
          stats_.instructions += run;
          stats_.lane_instructions += uint64_t(active) * run;
          i += run - 1;
          continue;
        }
      }
    }
    if (!exec_instr<kRecord>(w, in, mask, all, active, rec, npending, host_nearest)) return false;
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
  return true;
}

// A block's body through its compiled code: the same registers, pending
// stores, stats and faults as exec_body<false>.
bool Interpreter::exec_jit(uint32_t w, const Block& blk, uint64_t mask, jit::BlockFn fn) {
  // The CTA's windows (jit_env_cta()); per EXEC: the warp, the clock and
  // the warp's local window.
  jit::Env& env = jit_env_;
  env.warp = w;
  env.clock = uint32_t(stats_.steps);
  env.npending = 0;
  env.win[int(Space::Local)].base = local_.data() + size_t(w) * Params::kCudaWarp * prog_.local_bytes;
  uint32_t* W = regs_.data() + size_t(w) * nregs_ * Params::kCudaWarp;
  const uint32_t done = fn(W, mask, &env);
  stats_.instructions += done;
  stats_.lane_instructions += uint64_t(done) * lanes_in(mask);
  if (done < blk.instrs.size()) return false;
  for (uint32_t i = 0; i < env.npending; ++i)
    write_bytes(fast_pending_[i].p, fast_pending_[i].bytes, fast_pending_[i].value);
  return true;
}

void Interpreter::set_window(jit::Env::Window& e, const Window& win) {
  e.base = win.base;
  e.size = win.size;
  e.stride = win.stride;
  e.sub = uint32_t(win.sub);
  e.fast = win.base && win.size >= 4 && win.sub + win.size <= (uint64_t(1) << 32);  // warp_offsets' conditions
}

// The compiled blocks' environment for the CTA that starts: its shared,
// local (warp 0's; exec_jit moves it to the warp's), param and global
// windows, and whether the host rounds to nearest (the compiled float
// operations' condition), asked once per CTA.
void Interpreter::jit_env_cta() {
  jit::Env& env = jit_env_;
  env = jit::Env{};
  env.interp = this;
  env.cta = uint32_t(cta_);
  env.host_nearest = ptx::fref::host_rounds_to_nearest();
  for (int s = 0; s < 4; ++s) set_window(env.win[s], window(Space(s), 0));
}

int Interpreter::jit_instr(jit::Env* env, uint32_t index, uint64_t mask) {
  auto* self = static_cast<Interpreter*>(env->interp);
  const Instr& in = self->prog_.blocks[self->cur_block_].instrs[index];
  const uint32_t active = lanes_in(mask);
  return self->exec_instr<false>(env->warp, in, mask, active == Params::kCudaWarp, active, nullptr, env->npending,
                                 env->host_nearest);
}

void Interpreter::jit_append(jit::Env* env, const uint64_t* ptrs, const uint32_t* vals, uint64_t mask,
                             uint32_t bytes) {
  auto* self = static_cast<Interpreter*>(env->interp);
  for (uint64_t m = mask; m; m &= m - 1) {
    const int l = std::countr_zero(m);
    self->fast_pending_[env->npending++] = {reinterpret_cast<uint8_t*>(ptrs[l]), vals[l], bytes};
  }
}

// The terminator: each lane's next block (pc_) and barrier wait; when every
// live lane of the warp ran the block, its next block and lanes follow from
// the terminator alone, else refresh() finds them.
[[gnu::always_inline]] inline void Interpreter::exec_terminator(uint32_t w, const Block& blk, uint64_t mask,
                                                                 const uint32_t* cond_bits) {
  const uint32_t L = p_.lanes;
  const size_t t0 = size_t(w) * L;
  const uint32_t* W = regs_.data() + size_t(w) * nregs_ * L;
  // The terminator: one switch, then the lanes.
  const Terminator& term = blk.term;
  uint32_t* pc = pc_.data() + t0;
  uint32_t* wait = wait_.data() + t0;
  uint64_t taken = 0;  // BR: the lanes of `mask` whose condition holds
#if defined(__SSE2__)
  if (L == Params::kCudaWarp && term.kind != Term::TRAP) {
    // A whole CUDA warp, four lanes to a vector, without a loop over the
    // lanes of `mask`: each lane's new pc (and wait) chosen under its bit;
    // one loop per kind of terminator, and none of the choosing when every
    // lane ran.
    const __m128i bits = _mm_set_epi32(8, 4, 2, 1), zero = _mm_setzero_si128();
    const __m128i tv = _mm_set1_epi32(int(term.t)), fv = _mm_set1_epi32(int(term.f));
    const uint32_t* cond = W + size_t(term.cond) * L;
    const uint32_t cbits = cond_bits ? *cond_bits : 0;  // read once: the pc stores below may alias it
    const bool full = uint32_t(mask) == 0xffffffffu;
    auto lanes = [&]<Term kind>() {
      const __m128i target = _mm_set1_epi32(int(kind == Term::EXIT ? kExited : term.t));
      const __m128i wk = _mm_set1_epi32(int(kind == Term::BAR ? kBar : kWbar));
      for (uint32_t i = 0; i < Params::kCudaWarp; i += 4) {
        __m128i* pp = reinterpret_cast<__m128i*>(pc + i);
        __m128i nv = target;
        __m128i on = zero;
        if (!full) {
          const __m128i nib = _mm_set1_epi32(int(uint32_t(mask >> i) & 15));
          on = _mm_cmpeq_epi32(_mm_and_si128(nib, bits), bits);
        }
        if constexpr (kind == Term::BR) {
          // The lanes whose condition is false: from the compiled block's
          // bits where it ran (the register's lanes may still be in its
          // masked stores), else from the register.
          const __m128i c =
              cond_bits ? _mm_cmpeq_epi32(_mm_and_si128(_mm_set1_epi32(int((cbits >> i) & 15)), bits), zero)
                        : _mm_cmpeq_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(cond + i)), zero);
          nv = _mm_or_si128(_mm_and_si128(c, fv), _mm_andnot_si128(c, tv));
          const __m128i t = full ? c : _mm_or_si128(c, _mm_xor_si128(on, _mm_cmpeq_epi32(zero, zero)));
          taken |= uint64_t(~_mm_movemask_ps(_mm_castsi128_ps(t)) & 15) << i;  // on and not false
        }
        if (full) {
          _mm_storeu_si128(pp, nv);
          if constexpr (kind == Term::BAR || kind == Term::WBAR)
            _mm_storeu_si128(reinterpret_cast<__m128i*>(wait + i), wk);
        } else {
          _mm_storeu_si128(pp, _mm_or_si128(_mm_and_si128(on, nv), _mm_andnot_si128(on, _mm_loadu_si128(pp))));
          if constexpr (kind == Term::BAR || kind == Term::WBAR) {
            __m128i* wp = reinterpret_cast<__m128i*>(wait + i);
            _mm_storeu_si128(wp, _mm_or_si128(_mm_and_si128(on, wk), _mm_andnot_si128(on, _mm_loadu_si128(wp))));
          }
        }
      }
    };
    switch (term.kind) {
      case Term::JMP: lanes.template operator()<Term::JMP>(); break;
      case Term::BR: lanes.template operator()<Term::BR>(); break;
      case Term::EXIT: lanes.template operator()<Term::EXIT>(); break;
      case Term::BAR: lanes.template operator()<Term::BAR>(); break;
      case Term::WBAR: lanes.template operator()<Term::WBAR>(); break;
      case Term::TRAP: break;
    }
  } else
#endif
  switch (term.kind) {
    case Term::JMP:
      for (uint64_t m = mask; m; m &= m - 1) pc[std::countr_zero(m)] = term.t;
      break;
    case Term::BR: {
      const uint32_t* cond = W + size_t(term.cond) * L;
      for (uint64_t m = mask; m; m &= m - 1) {
        const int l = std::countr_zero(m);
        pc[l] = cond[l] != 0 ? term.t : term.f;
        taken |= uint64_t(cond[l] != 0) << l;
      }
      break;
    }
    case Term::EXIT:
      for (uint64_t m = mask; m; m &= m - 1) pc[std::countr_zero(m)] = kExited;
      break;
    case Term::BAR:
    case Term::WBAR: {
      const uint32_t wk = term.kind == Term::BAR ? kBar : kWbar;
      for (uint64_t m = mask; m; m &= m - 1) {
        const int l = std::countr_zero(m);
        pc[l] = term.t;
        wait[l] = wk;
      }
      break;
    }
    case Term::TRAP:
      if (mask) set_fault(int(term.code), "trap " + std::to_string(term.code) + where());
      break;
  }
  if (mask == live_[w] && term.kind != Term::TRAP) {
    // Every live lane of the warp ran the block: its next block and lanes
    // follow from the terminator alone (what refresh() would find).
    switch (term.kind) {
      case Term::JMP:
        wblock_[w] = term.t;
        break;
      case Term::BR: {
        const uint64_t other = mask & ~taken;
        if (term.t == term.f || !other) {
          wblock_[w] = term.t;
        } else if (!taken) {
          wblock_[w] = term.f;
        } else {
          wblock_[w] = std::min(term.t, term.f);
          wmask_[w] = term.t < term.f ? taken : other;
        }
        break;
      }
      case Term::EXIT:
        live_[w] = 0;
        wblock_[w] = kExited;
        wmask_[w] = 0;
        break;
      case Term::BAR:  // every lane waits at the CTA barrier
        wblock_[w] = kExited;
        wmask_[w] = 0;
        all_wait_[w] = term.t;
        break;
      case Term::WBAR:  // every lane waits at the warp barrier, at term.t
        wblock_[w] = term.t;
        wmask_[w] = 0;
        all_wait_[w] = term.t;
        break;
      case Term::TRAP: break;
    }
    return;
  }
  if (term.kind == Term::EXIT) live_[w] &= ~mask;
  refresh(w);
}

void Interpreter::run(uint64_t max_steps, const std::atomic<bool>* cancel) {
  if (cta_ < 0 && !finished_ && cta_threads_ > 1 && ctas_ > 1 && p_.lanes == Params::kCudaWarp && !prog_.ctas_in_order)
    run_group(max_steps, cancel);
  else
    run_one(max_steps, cancel);
}

void Interpreter::run_one(uint64_t max_steps, const std::atomic<bool>* cancel) {
  chain_ = true;
  chain_limit_ = max_steps;
  struct Unchain {
    bool& c;
    ~Unchain() { c = false; }
  } unchain{chain_};
  while (step()) {
    if (group_) {
      if (stats_.steps - published_ >= kCancelSteps && !group_check(max_steps, cancel)) return;
      continue;
    }
    if (stopped(stats_.steps, max_steps, stats_.steps % kCancelSteps == 0 ? cancel : nullptr)) return;
  }
  if (group_) group_->steps.fetch_add(stats_.steps - published_, std::memory_order_relaxed);
  published_ = stats_.steps;
}

// The launch's step limit and cancel flag (null: not looked at now), over
// `steps` EXECs: true, with the fault set, when it ends here.
bool Interpreter::stopped(uint64_t steps, uint64_t max_steps, const std::atomic<bool>* cancel) {
  if (steps > max_steps) {
    set_fault(launch::kLaunchTimeout, "launch exceeded " + std::to_string(max_steps) + " machine steps");
    return true;
  }
  if (cancel && cancel->load(std::memory_order_relaxed)) {
    set_fault(launch::kLaunchFailure, "launch cancelled after " + std::to_string(steps) +
                                          " machine steps: no one waits for it (its client exited, or model_host is stopping)");
    return true;
  }
  return false;
}

// A worker's checks, every kCancelSteps of its EXECs: its steps added to the
// group's, the launch's step limit over all of them, the cancel flag, and
// another worker's fault.  False when it is to stop.
bool Interpreter::group_check(uint64_t max_steps, const std::atomic<bool>* cancel) {
  const uint64_t total = group_->steps.fetch_add(stats_.steps - published_, std::memory_order_relaxed) +
                         (stats_.steps - published_);
  published_ = stats_.steps;
  if (stopped(total, max_steps, cancel)) return false;
  if (group_->stop.load(std::memory_order_relaxed)) {
    finished_ = true;  // another worker faulted; its fault is the launch's
    return false;
  }
  return true;
}

// The CTAs on cta_threads_ host threads: this interpreter and helpers like
// it, each with its own CTA state (registers, shared and local memory) over
// the same global memory and parameters, taking CTAs from one queue in
// launch order.  Global atomics are compare-and-swap loops on the shared
// bytes (atomic_rmw, the compiled blocks' atomics), so they stay atomic
// between workers.  The launch's fault is that of the lowest CTA that
// faulted; its statistics are the workers' sums.
void Interpreter::run_group(uint64_t max_steps, const std::atomic<bool>* cancel) {
  Group group;
  const uint32_t n = uint32_t(std::min<uint64_t>(cta_threads_, ctas_));
  std::vector<std::unique_ptr<Interpreter>> helpers;
  for (uint32_t i = 1; i < n; ++i) {
    helpers.push_back(std::make_unique<Interpreter>(prog_, p_, ctas_, threads_, params_, mem_));
    helpers.back()->set_jit(jit_mode_, jit_threshold_);
    helpers.back()->group_ = &group;
    helpers.back()->progress_ = progress_;
  }
  group_ = &group;
  std::vector<std::exception_ptr> errors(n);
  {
    std::vector<std::jthread> threads;
    for (uint32_t i = 1; i < n; ++i)
      threads.emplace_back([&, i] {
        try {
          helpers[i - 1]->run_one(max_steps, cancel);
        } catch (...) {
          errors[i] = std::current_exception();
          group.stop.store(true);
        }
      });
    try {
      run_one(max_steps, cancel);
    } catch (...) {
      errors[0] = std::current_exception();
      group.stop.store(true);
    }
  }
  group_ = nullptr;
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
  const Interpreter* first = fault_.error ? this : nullptr;
  for (auto& h : helpers) {
    stats_.steps += h->stats_.steps;
    stats_.instructions += h->stats_.instructions;
    stats_.lane_instructions += h->stats_.lane_instructions;
    if (h->fault_.error && (!first || h->fault_cta_ < first->fault_cta_)) first = h.get();
  }
  stats_.host_threads = n;
  if (first && first != this) {
    fault_ = first->fault_;
    fault_cta_ = first->fault_cta_;
  }
  finished_ = true;
}

}  // namespace qgpu::machine
