// The PTX-level reference interpreter (see ptx_interp.h).
//
// Integer semantics follow the PTX ISA; where the ISA leaves a result to the
// machine, the interpreter gives what NVIDIA GPUs give:
//   * add/sub/mul/mad wrap modulo 2^n; .sat (s32 only) clamps to
//     [INT32_MIN, INT32_MAX].
//   * div.u by zero yields all ones (0xFFFFFFFF, 0xFFFF...FF); div.s by zero
//     yields -1; rem by zero yields the dividend.  div.s of INT_MIN by -1
//     yields INT_MIN and rem.s yields 0.  rem.s takes the dividend's sign.
//   * shl/shr: shift amounts are unsigned and clamp at the operand width:
//     shl and shr.u give 0, shr.s gives the sign fill (0 or -1).
//   * shf.wrap shifts by c mod 32; shf.clamp by min(c, 32).
//   * abs of INT_MIN is INT_MIN; neg wraps.
//   * bfe/bfi take position and length from the low 8 bits of their
//     operands; bits beyond the operand are the sign bit (bfe.s) or 0.
//   * bfind returns 0xFFFFFFFF when no bit is found (also with .shiftamt).
//   * clz(0) = width, popc counts bits.
//   * mul24 uses the low 24 bits of each operand (sign-extended for .s32);
//     .hi returns bits 47..16 of the 48-bit product.
// Floating point runs with the host's IEEE arithmetic as PTX defines it
// (float_ref.h; docs/isa.md, section 11 lists the instructions: f32, f64,
// f16 and bf16 forms, the .approx functions as defined algorithms); any other
// fails with cudaErrorNotSupported naming the instruction.  Float loads,
// stores, moves and selects of any type run: they only move bits.
#include "model_host/launch/errors.h"
#include "model_host/ptx/ptx_interp.h"

#include "model_host/ptx/float_ref.h"

#include <algorithm>
#include <bit>
#include <cctype>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <limits>

#include "model_host/ptx/layout.h"
#include "model_host/ptx/texture_ref.h"
#include "model_host/ptx/wmma.h"

namespace qgpu::ptx {
namespace {

// CUDA error codes the interpreter reports.

// Generic-address windows of the non-global state spaces.  Global memory
// must not overlap them (checked at launch).
constexpr uint64_t kSharedWindow = 0xF100000000000000ull;
constexpr uint64_t kLocalWindow = 0xF200000000000000ull;
constexpr uint64_t kParamWindow = 0xF300000000000000ull;
constexpr uint64_t kFuncWindow = 0xF400000000000000ull;
constexpr uint64_t kWindowSize = 0x0100000000000000ull;

constexpr uint32_t kWarp = 32;

struct Fault {
  int code;
  std::string message;
};

uint64_t mask_bits(unsigned bits) { return bits >= 64 ? ~uint64_t(0) : (uint64_t(1) << bits) - 1; }
int64_t sext(uint64_t v, unsigned bits) {
  if (bits == 0) return 0;
  if (bits >= 64) return static_cast<int64_t>(v);
  uint64_t m = uint64_t(1) << (bits - 1);
  v &= mask_bits(bits);
  return static_cast<int64_t>((v ^ m) - m);
}
unsigned bits_of(Type t) { return t == Type::Pred ? 1 : type_size(t) * 8; }
Type wide_type(Type t) {
  switch (t) {
    case Type::S16: return Type::S32;
    case Type::U16: return Type::U32;
    case Type::S32: return Type::S64;
    case Type::U32: case Type::B32: return Type::U64;
    default: return Type::None;
  }
}

struct Frame {
  uint32_t func = 0;
  uint32_t pc = 0;
  std::vector<uint64_t> regs;
  uint64_t local_base = 0;                  // offset of this frame in the thread's local memory
  std::vector<std::vector<uint8_t>> params;  // .func parameters (callee side)
  std::vector<std::vector<uint8_t>> rets;    // .func return parameters
  std::vector<std::vector<uint8_t>> pvars;   // .param variables declared in the body
};

struct Thread {
  uint32_t tid[3] = {0, 0, 0};
  uint32_t linear = 0, lane = 0, warp = 0;
  bool exited = false;
  bool waiting = false;        // at a barrier
  const Instr* bar = nullptr;  // the barrier instruction waited on (for bar.red)
  bool bar_pred = false;
  bool carry = false;          // CC.CF for add.cc/addc/sub.cc/subc/mad.cc/madc
  int named = -1;              // waiting at this counted barrier (bar.sync id, count)
  std::vector<Frame> frames;
  std::vector<uint8_t> local;
};

class Interp {
 public:
  Interp(const Module& m, uint32_t kernel, launch::Dim3 grid, launch::Dim3 block, uint32_t dyn,
         const std::vector<uint8_t>& params, const std::map<std::string, uint64_t>& symbols,
         launch::GlobalMemory& mem, const InterpOptions& opt)
      : m_(m), kernel_(kernel), grid_(grid), block_(block), dyn_(dyn), params_(params),
        symbols_(symbols), mem_(mem), opt_(opt), layout_(shared_layout(m, kernel)) {
    local_off_.resize(m.functions.size());
    local_size_.resize(m.functions.size());
    for (uint32_t f = 0; f < m.functions.size(); ++f) {
      uint64_t off = 0;
      for (const Var& v : m.functions[f].vars) {
        uint64_t o = 0;
        if (v.space == Space::Local) {
          off = (off + v.align - 1) / v.align * v.align;
          o = off;
          off += v.size;
        }
        local_off_[f].push_back(o);
      }
      local_size_[f] = (off + 15) / 16 * 16;
    }
  }

  launch::LaunchResult run() {
    launch::LaunchResult res;
    try {
      check_launch();
      for (uint32_t z = 0; z < grid_.z; ++z)
        for (uint32_t y = 0; y < grid_.y; ++y)
          for (uint32_t x = 0; x < grid_.x; ++x) run_cta(x, y, z);
    } catch (const Fault& f) {
      res.error = f.code;
      res.message = f.message;
    }
    res.printf_output = std::move(printf_);
    res.stats.steps = steps_;
    return res;
  }

 private:
  const Module& m_;
  uint32_t kernel_;
  launch::Dim3 grid_, block_;
  uint32_t dyn_;
  const std::vector<uint8_t>& params_;
  const std::map<std::string, uint64_t>& symbols_;
  launch::GlobalMemory& mem_;
  InterpOptions opt_;
  SharedLayout layout_;
  std::vector<std::vector<uint64_t>> local_off_;
  std::vector<uint64_t> local_size_;

  uint32_t cta_[3] = {0, 0, 0};
  std::vector<uint8_t> shared_;
  std::vector<Thread> threads_;
  uint32_t named_[16] = {};  // arrivals at each counted barrier
  uint64_t steps_ = 0;
  std::string printf_;

  // -- launch ---------------------------------------------------------------
  void check_launch() {
    const Function& k = m_.functions[kernel_];
    uint64_t need = 0;
    for (const Var& p : k.params) need = std::max<uint64_t>(need, p.offset + p.size);
    if (params_.size() < need)
      throw Fault{launch::kInvalidValue, "kernel '" + k.name + "' needs " + std::to_string(need) +
                                        " bytes of parameters, got " + std::to_string(params_.size())};
    if (block_.count() == 0 || grid_.count() == 0)
      throw Fault{launch::kInvalidValue, "empty grid or block"};
    uint64_t lo = mem_.base, hi = mem_.base + mem_.bytes.size();
    if (hi > kSharedWindow && lo < kFuncWindow + kWindowSize)
      throw Fault{launch::kInvalidValue, "global memory overlaps the interpreter's shared/local/param windows"};
  }

  void run_cta(uint32_t x, uint32_t y, uint32_t z) {
    cta_[0] = x; cta_[1] = y; cta_[2] = z;
    shared_.assign(uint64_t(layout_.dynamic_offset) + dyn_, 0);
    std::fill(std::begin(named_), std::end(named_), 0u);
    uint32_t n = static_cast<uint32_t>(block_.count());
    threads_.assign(n, Thread{});
    for (uint32_t i = 0; i < n; ++i) {
      Thread& t = threads_[i];
      t.linear = i;
      t.tid[0] = i % block_.x;
      t.tid[1] = (i / block_.x) % block_.y;
      t.tid[2] = i / (block_.x * block_.y);
      t.lane = i % kWarp;
      t.warp = i / kWarp;
      push_frame(t, kernel_);
    }
    uint32_t warps = (n + kWarp - 1) / kWarp;
    for (;;) {
      for (uint32_t w = 0; w < warps; ++w)
        while (step(w)) {}
      bool any_live = false, any_runnable = false;
      for (Thread& t : threads_) any_live |= !t.exited, any_runnable |= !t.exited && !t.waiting;
      if (!any_live) return;
      if (any_runnable) continue;  // a counted barrier released a warp already passed
      release_barrier();
    }
  }

  void push_frame(Thread& t, uint32_t func) {
    const Function& f = m_.functions[func];
    Frame fr;
    fr.func = func;
    fr.regs.assign(f.regs.size(), 0);
    fr.local_base = t.frames.empty() ? 0 : t.frames.back().local_base + local_size_[t.frames.back().func];
    t.local.resize(fr.local_base + local_size_[func], 0);
    for (const Var& p : f.params) fr.params.emplace_back(p.size, 0);
    for (const Var& r : f.rets) fr.rets.emplace_back(r.size, 0);
    for (const Var& v : f.vars) fr.pvars.emplace_back(v.space == Space::Param ? v.size : 0, 0);
    t.frames.push_back(std::move(fr));
  }

  void counted_barrier(const Instr& in, Thread& t) {
    const uint32_t id = static_cast<uint32_t>(read(in.ops[0], Type::U32, t, in)) & 15;
    const uint64_t count = read(in.ops[1], Type::U32, t, in);
    if (++named_[id] >= count) {
      named_[id] = 0;
      for (Thread& o : threads_)
        if (o.waiting && o.named == int(id)) o.waiting = false, o.named = -1;
    } else if (in.bar == BarKind::Sync) {
      t.waiting = true;
      t.named = int(id);
    }
  }

  // Every live thread waits at a barrier: open it, completing bar.red.  A
  // thread at a counted barrier has not arrived at this one: nothing can
  // run again, which is a deadlock.
  void release_barrier() {
    for (Thread& t : threads_)
      if (!t.exited && t.named >= 0)
        throw Fault{launch::kLaunchFailure, "deadlock: every live thread waits at a barrier, thread (" +
                                           std::to_string(t.tid[0]) + "," + std::to_string(t.tid[1]) + "," +
                                           std::to_string(t.tid[2]) + ") at barrier " + std::to_string(t.named) +
                                           ", which too few threads reached"};
    uint32_t popc = 0;
    bool all = true, any = false;
    for (Thread& t : threads_) {
      if (t.exited) continue;
      popc += t.bar_pred;
      all &= t.bar_pred;
      any |= t.bar_pred;
    }
    for (Thread& t : threads_) {
      if (t.exited) continue;
      if (t.bar && t.bar->bar == BarKind::Red) {
        uint64_t v = t.bar->atom == AtomOp::Popc ? popc : t.bar->atom == AtomOp::And ? all : any;
        write(t.bar->ops[0], t.bar->type, v, t);
      }
      t.waiting = false;
      t.bar = nullptr;
      t.bar_pred = false;
    }
  }

  // -- scheduling -----------------------------------------------------------
  static bool key_less(const Thread& a, const Thread& b) {
    size_t n = std::min(a.frames.size(), b.frames.size());
    for (size_t i = 0; i < n; ++i) {
      uint64_t ka = (uint64_t(a.frames[i].func) << 32) | a.frames[i].pc;
      uint64_t kb = (uint64_t(b.frames[i].func) << 32) | b.frames[i].pc;
      if (ka != kb) return ka < kb;
    }
    return a.frames.size() < b.frames.size();
  }
  static bool key_equal(const Thread& a, const Thread& b) { return !key_less(a, b) && !key_less(b, a); }

  // Runs one instruction of warp w; false when no thread of it can run.
  bool step(uint32_t w) {
    uint32_t lo = w * kWarp, hi = std::min<uint32_t>(lo + kWarp, static_cast<uint32_t>(threads_.size()));
    Thread* best = nullptr;
    for (uint32_t i = lo; i < hi; ++i) {
      Thread& t = threads_[i];
      if (t.exited || t.waiting) continue;
      if (!best || key_less(t, *best)) best = &t;
    }
    if (!best) return false;
    std::vector<Thread*> group;
    for (uint32_t i = lo; i < hi; ++i) {
      Thread& t = threads_[i];
      if (!t.exited && !t.waiting && key_equal(t, *best)) group.push_back(&t);
    }
    if (++steps_ > opt_.max_steps)
      throw Fault{launch::kLaunchTimeout, "kernel '" + m_.functions[kernel_].name + "' exceeded " +
                                         std::to_string(opt_.max_steps) + " warp instructions"};
    const Frame& fr = best->frames.back();
    const Function& fn = m_.functions[fr.func];
    if (fr.pc >= fn.body.size()) {  // falling off the end returns
      for (Thread* t : group) do_return(*t);
      return true;
    }
    execute(fn.body[fr.pc], group);
    return true;
  }

  // -- faults ---------------------------------------------------------------
  [[noreturn]] void fault(int code, const Instr& in, const Thread& t, const std::string& what) const {
    throw Fault{code, what + " in '" + in.opcode + "' (PTX line " + std::to_string(in.line) + ", function '" +
                          m_.functions[t.frames.back().func].name + "', block (" + std::to_string(cta_[0]) +
                          "," + std::to_string(cta_[1]) + "," + std::to_string(cta_[2]) + "), thread (" +
                          std::to_string(t.tid[0]) + "," + std::to_string(t.tid[1]) + "," +
                          std::to_string(t.tid[2]) + "))"};
  }
  [[noreturn]] void unsupported(const Instr& in, const Thread& t, const std::string& why) const {
    fault(launch::kNotSupported, in, t, why + " is not supported by the PTX interpreter");
  }

  static std::string hex(uint64_t v) {
    char b[32];
    std::snprintf(b, sizeof b, "0x%" PRIx64, v);
    return b;
  }

  // -- operands -------------------------------------------------------------
  uint64_t sreg(const Operand& o, const Thread& t) const {
    int c = o.component == 'y' ? 1 : o.component == 'z' ? 2 : 0;
    uint32_t bdim[3] = {block_.x, block_.y, block_.z}, gdim[3] = {grid_.x, grid_.y, grid_.z};
    uint64_t le = (uint64_t(2) << t.lane) - 1, lt = (uint64_t(1) << t.lane) - 1;
    switch (o.sreg) {
      case SReg::Tid: return t.tid[c];
      case SReg::Ntid: return bdim[c];
      case SReg::Ctaid: return cta_[c];
      case SReg::Nctaid: return gdim[c];
      case SReg::Laneid: return t.lane;
      case SReg::Warpid: return t.warp;
      case SReg::Nwarpid: return (threads_.size() + kWarp - 1) / kWarp;
      case SReg::Smid: return 0;
      case SReg::Nsmid: return 1;
      case SReg::Gridid: return 0;
      case SReg::LanemaskEq: return uint64_t(1) << t.lane;
      case SReg::LanemaskLe: return le;
      case SReg::LanemaskLt: return lt;
      case SReg::LanemaskGe: return ~lt & 0xFFFFFFFFu;
      case SReg::LanemaskGt: return ~le & 0xFFFFFFFFu;
      // Clocks count warp instructions executed: monotonic and deterministic.
      case SReg::Clock: return steps_ & 0xFFFFFFFFu;
      case SReg::ClockHi: return steps_ >> 32;
      case SReg::Clock64: return steps_;
      case SReg::Globaltimer: return steps_ * 1000;
      case SReg::GlobaltimerLo: return (steps_ * 1000) & 0xFFFFFFFFu;
      case SReg::GlobaltimerHi: return (steps_ * 1000) >> 32;
      case SReg::DynamicSmemSize: return dyn_;
      case SReg::TotalSmemSize: return layout_.dynamic_offset + dyn_;
      case SReg::AggrSmemSize: return layout_.dynamic_offset + dyn_;
      // The driver environment: a cooperative launch's grid workspace in
      // %envreg1 (high word) and %envreg2 (low word).  No performance
      // counters, reserved shared memory or graph.
      case SReg::Envreg:
        return o.imm == 1 ? opt_.grid_workspace >> 32 : o.imm == 2 ? opt_.grid_workspace & 0xFFFFFFFFu : 0;
      case SReg::Pm: case SReg::Pm64: case SReg::CurrentGraphExec:
      case SReg::ReservedSmemOffsetBegin: case SReg::ReservedSmemOffsetEnd:
      case SReg::ReservedSmemOffsetCap: case SReg::ReservedSmemOffset: return 0;
      // Every CTA is its own implicit 1x1x1 cluster.
      case SReg::IsExplicitCluster: return 0;
      case SReg::Clusterid: return cta_[c];
      case SReg::Nclusterid: return gdim[c];
      case SReg::ClusterCtaid: return 0;
      case SReg::ClusterNctaid: return 1;
      case SReg::ClusterCtarank: return 0;
      case SReg::ClusterNctarank: return 1;
    }
    return 0;
  }

  // Address of a symbol in its own state space (global/const: device
  // address; shared: CTA offset; local: thread offset; kernel param: param
  // window; function: function window).
  uint64_t sym_address(const Operand& o, const Thread& t, const Instr& in) const {
    const Frame& fr = t.frames.back();
    switch (o.sym.kind) {
      case SymKind::ModuleVar: {
        const Var& v = m_.vars[o.sym.index];
        if (v.space == Space::Shared) {
          auto it = layout_.module_vars.find(o.sym.index);
          if (it == layout_.module_vars.end()) fault(launch::kIllegalAddress, in, t, "shared variable '" + v.name + "' not laid out");
          return it->second;
        }
        auto it = symbols_.find(v.name);
        if (it == symbols_.end()) fault(launch::kIllegalAddress, in, t, "module variable '" + v.name + "' has no device address");
        return it->second;
      }
      case SymKind::LocalVar: {
        const Var& v = m_.functions[fr.func].vars[o.sym.index];
        if (v.space == Space::Shared) return layout_.function_vars.at({fr.func, o.sym.index});
        if (v.space == Space::Local) return fr.local_base + local_off_[fr.func][o.sym.index];
        unsupported(in, t, "taking the address of '" + v.name + "'");
      }
      case SymKind::Param:
        if (fr.func == kernel_) return kParamWindow + m_.functions[kernel_].params[o.sym.index].offset;
        unsupported(in, t, "taking the address of .func parameter '" + o.name + "'");
      case SymKind::Ret:
        unsupported(in, t, "taking the address of return parameter '" + o.name + "'");
      case SymKind::Func:
        return function_address(o.sym.index);
    }
    return 0;
  }

  uint64_t read(const Operand& o, Type ty, const Thread& t, const Instr& in) const {
    uint64_t v = 0;
    switch (o.kind) {
      case Operand::Kind::Reg:
        v = t.frames.back().regs[o.reg];
        if (o.neg) v = !v;
        break;
      case Operand::Kind::Imm: case Operand::Kind::FImm: v = static_cast<uint64_t>(o.imm); break;
      case Operand::Kind::Sym: v = sym_address(o, t, in) + static_cast<uint64_t>(o.imm); break;
      case Operand::Kind::Special: v = sreg(o, t); break;
      case Operand::Kind::Vector: {  // mov.b64 d, {a, b}: pack, element 0 lowest
        unsigned eb = bits_of(ty) / static_cast<unsigned>(o.elems.size());
        for (size_t i = 0; i < o.elems.size(); ++i)
          v |= (read(o.elems[i], Type::None, t, in) & mask_bits(eb)) << (eb * i);
        return v;
      }
      default: fault(launch::kNotSupported, in, t, "unexpected operand");
    }
    return ty == Type::None ? v : v & mask_bits(bits_of(ty));
  }

  // Writes `v` (a value of type `ty`) to a register, extending or truncating
  // it to the register's width.
  void write(const Operand& o, Type ty, uint64_t v, Thread& t) const {
    if (o.kind == Operand::Kind::Sink) return;
    if (o.kind != Operand::Kind::Reg && o.kind != Operand::Kind::PredPair)
      throw Fault{launch::kNotSupported, "destination is not a register"};
    uint32_t reg = o.reg;
    Type rt = m_.functions[t.frames.back().func].regs[reg].type;
    if (rt == Type::Pred) { t.frames.back().regs[reg] = (v & 1); return; }
    unsigned tb = bits_of(ty), rb = bits_of(rt);
    uint64_t x = v & mask_bits(tb);
    if (rb > tb && is_signed(ty)) x = static_cast<uint64_t>(sext(x, tb));
    t.frames.back().regs[reg] = x & mask_bits(rb);
  }

  // -- memory ---------------------------------------------------------------
  // Bytes at `addr` in `space` (None: generic), `size` long.
  uint8_t* memory(Space space, uint64_t addr, uint32_t size, bool is_write, Thread& t, const Instr& in) {
    auto bad = [&](const char* where) -> uint8_t* {
      fault(launch::kIllegalAddress, in, t, std::string("illegal address: ") + std::to_string(size) + "-byte " +
                                           (is_write ? "write" : "read") + " at " + hex(addr) + " (" + where + ")");
    };
    if (size > 1 && addr % size != 0)
      fault(launch::kMisalignedAddress, in, t, "misaligned " + std::to_string(size) + "-byte access at " + hex(addr));
    if (space == Space::None) {
      if (addr >= kSharedWindow && addr < kSharedWindow + kWindowSize) { space = Space::Shared; addr -= kSharedWindow; }
      else if (addr >= kLocalWindow && addr < kLocalWindow + kWindowSize) { space = Space::Local; addr -= kLocalWindow; }
      else if (addr >= kParamWindow && addr < kParamWindow + kWindowSize) { space = Space::Param; }
      else space = Space::Global;
    }
    switch (space) {
      case Space::Global: case Space::Const:
        if (space == Space::Const && is_write) bad("write to constant memory");
        if (addr < mem_.base || addr - mem_.base > mem_.bytes.size() || mem_.bytes.size() - (addr - mem_.base) < size)
          bad("outside global memory");
        return mem_.bytes.data() + (addr - mem_.base);
      case Space::Shared:
        if (addr > shared_.size() || shared_.size() - addr < size) bad("outside shared memory");
        return shared_.data() + addr;
      case Space::Local:
        if (addr > t.local.size() || t.local.size() - addr < size) bad("outside local memory");
        return t.local.data() + addr;
      case Space::Param: {
        if (is_write) bad("write to kernel parameters");
        uint64_t off = addr - kParamWindow;
        if (addr < kParamWindow || off > params_.size() || params_.size() - off < size) bad("outside kernel parameters");
        return const_cast<uint8_t*>(params_.data()) + off;
      }
      default:
        break;
    }
    return bad("unsupported state space");
  }

  // The bytes an address operand names: frame storage for .func params,
  // return params and call-site params; memory otherwise.
  uint8_t* address(const Instr& in, const Operand& a, uint32_t size, bool is_write, Thread& t) {
    if (a.kind != Operand::Kind::Addr) fault(launch::kNotSupported, in, t, "expected an address");
    Frame& fr = t.frames.back();
    if (a.has_sym) {
      std::vector<uint8_t>* store = nullptr;
      if (a.sym.kind == SymKind::Param && fr.func != kernel_) store = &fr.params[a.sym.index];
      else if (a.sym.kind == SymKind::Ret) store = &fr.rets[a.sym.index];
      else if (a.sym.kind == SymKind::LocalVar && m_.functions[fr.func].vars[a.sym.index].space == Space::Param)
        store = &fr.pvars[a.sym.index];
      if (store) {
        if (a.imm < 0 || uint64_t(a.imm) + size > store->size())
          fault(launch::kIllegalAddress, in, t, "access outside parameter '" + a.name + "'");
        return store->data() + a.imm;
      }
      return memory(in.space, sym_address(a, t, in) + static_cast<uint64_t>(a.imm), size, is_write, t, in);
    }
    uint64_t base = a.reg == kNoReg ? 0 : t.frames.back().regs[a.reg];
    uint64_t addr = base + static_cast<uint64_t>(a.imm);
    // A computed kernel-parameter address comes from the parameter's symbol,
    // so it is already in the parameter window.
    if (in.space == Space::Param && fr.func != kernel_) unsupported(in, t, "a computed .func parameter address");
    return memory(in.space, addr, size, is_write, t, in);
  }

  static uint64_t load_le(const uint8_t* p, uint32_t n) {
    uint64_t v = 0;
    for (uint32_t i = 0; i < n; ++i) v |= uint64_t(p[i]) << (8 * i);
    return v;
  }
  static void store_le(uint8_t* p, uint32_t n, uint64_t v) {
    for (uint32_t i = 0; i < n; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
  }

  // -- execution ------------------------------------------------------------
  bool guard(const Instr& in, const Thread& t) const {
    if (in.guard.reg == kNoReg) return true;
    bool p = t.frames.back().regs[in.guard.reg] != 0;
    return in.guard.neg ? !p : p;
  }

  void execute(const Instr& in, std::vector<Thread*>& group) {
    std::vector<Thread*> active;
    for (Thread* t : group)
      if (guard(in, *t)) active.push_back(t);
    Thread& t0 = *group[0];
    if (in.op == Op::Tex || in.op == Op::Suld || in.op == Op::Sust) {
      for (Thread* t : active) texture(in, *t);
      for (Thread* t : group) ++t->frames.back().pc;
      return;
    }
    // Float-typed loads, stores, moves and selects only move bits: they run.
    // Float atomics are scalar() read-modify-writes with the float add.
    bool moves_bits = in.op == Op::Ld || in.op == Op::Ldu || in.op == Op::St || in.op == Op::Mov || in.op == Op::Selp ||
                      in.op == Op::Atom || in.op == Op::Red || in.op == Op::Wmma;
    if ((is_float(in.type) || is_float(in.type2)) && !moves_bits) {
      if (!float_supported(in)) unsupported(in, t0, "floating-point instruction '" + in.opcode + "'");
      for (Thread* t : active) float_scalar(in, *t);
      for (Thread* t : group) ++t->frames.back().pc;
      return;
    }
    switch (in.op) {
      case Op::Bra:
        for (Thread* t : group) {
          Frame& fr = t->frames.back();
          fr.pc = guard(in, *t) ? m_.functions[fr.func].labels[in.ops[0].label].target : fr.pc + 1;
        }
        return;
      case Op::Call:
        for (Thread* t : group) {
          if (guard(in, *t)) do_call(in, *t);
          else ++t->frames.back().pc;
        }
        return;
      case Op::Ret:
        for (Thread* t : group) {
          if (guard(in, *t)) do_return(*t);
          else ++t->frames.back().pc;
        }
        return;
      case Op::Exit:
        for (Thread* t : group) {
          if (guard(in, *t)) t->exited = true;
          else ++t->frames.back().pc;
        }
        return;
      case Op::Trap:
        if (!active.empty()) fault(launch::kLaunchFailure, in, *active[0], "trap");
        break;
      case Op::Brkpt:
        if (!active.empty()) fault(launch::kLaunchFailure, in, *active[0], "breakpoint");
        break;
      case Op::Bar:
        // A barrier with a thread count (bar.sync id, count; bar.arrive)
        // completes when that many threads have arrived at its id; one
        // without waits for all live threads of the CTA.
        if (in.bar != BarKind::Red && (in.bar == BarKind::Arrive || in.ops.size() >= 2)) {
          for (Thread* t : active) counted_barrier(in, *t);
          break;
        }
        for (Thread* t : active) {
          t->waiting = true;
          t->bar = &in;
          if (in.bar == BarKind::Red) t->bar_pred = read(in.ops.back(), Type::Pred, *t, in) != 0;
        }
        break;
      case Op::BarWarp: case Op::Membar: case Op::Fence: case Op::Nanosleep: case Op::Prefetch:
        break;
      case Op::Shfl: shfl(in, active); break;
      case Op::Vote: vote(in, active); break;
      case Op::Match: match(in, active); break;
      case Op::Activemask: {
        uint32_t m = lanes(active);
        for (Thread* t : active) write(in.ops[0], Type::B32, m, *t);
        break;
      }
      case Op::Redux: redux(in, active); break;
      case Op::Wmma: wmma_op(in, active); break;
      default:
        for (Thread* t : active) scalar(in, *t);
    }
    for (Thread* t : group) ++t->frames.back().pc;
  }

  static uint32_t lanes(const std::vector<Thread*>& ts) {
    uint32_t m = 0;
    for (Thread* t : ts) m |= 1u << t->lane;
    return m;
  }
  Thread* lane_thread(const Thread& t, uint32_t lane) {
    uint32_t i = t.warp * kWarp + lane;
    return i < threads_.size() ? &threads_[i] : nullptr;
  }

  void shfl(const Instr& in, const std::vector<Thread*>& active) {
    // d|p, a, b, c, membermask (the mask is checked by real hardware only for
    // convergence; here the active threads are the participants).  A source
    // lane in range that does not take part (inactive or exited) gives 0, as
    // NVIDIA's GPUs do (PTX leaves the value unpredictable).
    struct R { uint64_t v; bool p; };
    std::vector<R> res;
    uint32_t present = 0;
    for (Thread* t : active) present |= 1u << t->lane;
    for (Thread* t : active) {
      uint32_t b = static_cast<uint32_t>(read(in.ops[2], Type::U32, *t, in)) & 31;
      uint32_t c = static_cast<uint32_t>(read(in.ops[3], Type::U32, *t, in));
      uint32_t cval = c & 31, segmask = (c >> 8) & 31;
      int lane = static_cast<int>(t->lane);
      int max_lane = (lane & segmask) | (cval & ~segmask);
      int min_lane = lane & segmask;
      int j = lane;
      bool p = false;
      switch (in.shfl) {
        case ShflMode::Up: j = lane - int(b); p = j >= max_lane; break;
        case ShflMode::Down: j = lane + int(b); p = j <= max_lane; break;
        case ShflMode::Bfly: j = lane ^ int(b); p = j <= max_lane; break;
        case ShflMode::Idx: j = min_lane | (int(b) & ~int(segmask)); p = j <= max_lane; break;
        case ShflMode::None: break;
      }
      if (!p) j = lane;
      Thread* src = lane_thread(*t, uint32_t(j));
      if (!src || !(present >> j & 1)) {
        res.push_back({0, p});
        continue;
      }
      res.push_back({read(in.ops[1], Type::B32, *src, in), p});
    }
    for (size_t i = 0; i < active.size(); ++i) {
      Thread& t = *active[i];
      const Operand& d = in.ops[0];
      write(d, Type::B32, res[i].v, t);
      if (d.kind == Operand::Kind::PredPair) {
        Operand p;
        p.kind = Operand::Kind::Reg;
        p.reg = d.reg2;
        write(p, Type::Pred, res[i].p, t);
      }
    }
  }

  // The threads a warp-collective operation of `t` combines: the active
  // threads whose lanes are in t's membermask operand (all active threads for
  // the forms without one).
  std::vector<Thread*> members(const Instr& in, size_t mask_operand, const std::vector<Thread*>& active, Thread& t) {
    uint32_t mask = in.ops.size() > mask_operand ? static_cast<uint32_t>(read(in.ops[mask_operand], Type::B32, t, in))
                                                 : 0xFFFFFFFFu;
    std::vector<Thread*> out;
    for (Thread* a : active)
      if (mask >> a->lane & 1) out.push_back(a);
    return out;
  }

  void vote(const Instr& in, const std::vector<Thread*>& active) {
    std::vector<uint64_t> results;
    for (Thread* t : active) {
      uint32_t ballot = 0;
      bool all = true, any = false;
      for (Thread* o : members(in, 2, active, *t)) {
        bool p = read(in.ops[1], Type::Pred, *o, in) != 0;
        if (p) ballot |= 1u << o->lane;
        all &= p;
        any |= p;
      }
      switch (in.vote) {
        case VoteMode::Ballot: results.push_back(ballot); break;
        case VoteMode::Any: results.push_back(any); break;
        case VoteMode::All: results.push_back(all); break;
        case VoteMode::Uni: results.push_back(all || !any); break;
        case VoteMode::None: unsupported(in, *t, "vote without a mode");
      }
    }
    Type dt = in.vote == VoteMode::Ballot ? Type::B32 : Type::Pred;
    for (size_t i = 0; i < active.size(); ++i) write(in.ops[0], dt, results[i], *active[i]);
  }

  void match(const Instr& in, const std::vector<Thread*>& active) {
    struct R { uint32_t mask; bool all_equal; };
    std::vector<R> results;
    for (Thread* t : active) {
      uint64_t mine = read(in.ops[1], in.type, *t, in);
      uint32_t m = 0;
      bool all_equal = true;
      for (Thread* o : members(in, 2, active, *t)) {
        if (read(in.ops[1], in.type, *o, in) == mine) m |= 1u << o->lane;
        else all_equal = false;
      }
      results.push_back({in.match == MatchMode::All && !all_equal ? 0u : m, all_equal});
    }
    for (size_t i = 0; i < active.size(); ++i) {
      const Operand& d = in.ops[0];
      write(d, Type::B32, results[i].mask, *active[i]);
      if (d.kind == Operand::Kind::PredPair) {
        Operand p;
        p.kind = Operand::Kind::Reg;
        p.reg = d.reg2;
        write(p, Type::Pred, results[i].all_equal, *active[i]);
      }
    }
  }

  // wmma (wmma.h has the fragment layout and the arithmetic): a load or
  // store is each thread's own elements; an mma gathers the warp's A and B
  // fragments into the matrices and gives each thread its elements of D.
  struct WmmaFrag {
    wmma::Frag frag = wmma::Frag::A;
    uint32_t esize = 0, per_lane = 0, rows = 0, cols = 0;
  };
  WmmaFrag wmma_frag(const Instr& in, wmma::Frag f, Type ty, const Thread& t) const {
    const wmma::Shape s{in.wmma.m, in.wmma.n, in.wmma.k};
    if (!wmma::valid_shape(s)) unsupported(in, t, "this wmma shape (m16n16k16, m32n8k16 and m8n32k16 only)");
    const bool input = f != wmma::Frag::C;
    const bool ok = input ? (ty == Type::F16 || ty == Type::S8 || ty == Type::U8)
                          : (ty == Type::F16 || ty == Type::F32 || ty == Type::S32);
    if (!ok) unsupported(in, t, std::string("a wmma fragment of ") + type_name(ty));
    return {f, type_size(ty), wmma::per_lane(s, f), wmma::rows(s, f), wmma::cols(s, f)};
  }
  // Slot i of a fragment register vector: its bits.
  uint32_t slot(const std::vector<uint32_t>& regs, uint32_t esize, uint32_t i) const {
    const uint32_t per = 4 / esize, sh = (i % per) * esize * 8;
    return esize == 4 ? regs[i] : (regs[i / per] >> sh) & ((1u << (esize * 8)) - 1);
  }
  std::vector<uint32_t> fragment_regs(const Instr& in, const Operand& v, const WmmaFrag& fr, const Thread& t) const {
    if (v.elems.size() * 4 < fr.per_lane * fr.esize) unsupported(in, t, "a wmma fragment with too few registers");
    std::vector<uint32_t> r;
    for (const Operand& e : v.elems) r.push_back(uint32_t(read(e, Type::B32, t, in)));
    return r;
  }
  void wmma_op(const Instr& in, const std::vector<Thread*>& active) {
    const WmmaInfo& w = in.wmma;
    if (w.op == WmmaOp::Mma) return wmma_mma(in, active);
    const wmma::Frag f = w.op == WmmaOp::LoadA ? wmma::Frag::A : w.op == WmmaOp::LoadB ? wmma::Frag::B : wmma::Frag::C;
    const bool store = w.op == WmmaOp::StoreD;
    for (Thread* t : active) {
      const WmmaFrag fr = wmma_frag(in, f, in.type, *t);
      const Operand& addr = in.ops[store ? 0 : 1];
      const Operand& v = in.ops[store ? 1 : 0];
      const uint64_t stride = in.ops.size() > 2 ? read(in.ops[2], Type::U32, *t, in) : (w.col ? fr.rows : fr.cols);
      if (v.elems.size() * 4 < fr.per_lane * fr.esize) unsupported(in, *t, "a wmma fragment with too few registers");
      std::vector<uint32_t> regs = store ? fragment_regs(in, v, fr, *t) : std::vector<uint32_t>(v.elems.size(), 0);
      for (uint32_t i = 0; i < fr.per_lane; ++i) {
        uint32_t r, c;
        wmma::element({w.m, w.n, w.k}, f, t->lane, i, r, c);
        Operand at = addr;
        at.imm += int64_t((w.col ? c * stride + r : r * stride + c) * fr.esize);
        uint8_t* p = address(in, at, fr.esize, store, *t);
        if (store) {
          store_le(p, fr.esize, slot(regs, fr.esize, i));
        } else {
          const uint32_t per = 4 / fr.esize;
          regs[i / per] |= uint32_t(load_le(p, fr.esize)) << ((i % per) * fr.esize * 8);
        }
      }
      if (!store)
        for (size_t j = 0; j < v.elems.size(); ++j) write(v.elems[j], Type::B32, regs[j], *t);
    }
  }
  void wmma_mma(const Instr& in, const std::vector<Thread*>& active) {
    if (active.empty()) return;
    if (active.size() != kWarp)
      unsupported(in, *active[0], "wmma.mma with only part of the warp (it is .sync.aligned: all 32 threads execute it)");
    const WmmaInfo& w = in.wmma;
    const Thread& t0 = *active[0];
    const wmma::Shape s{w.m, w.n, w.k};
    const WmmaFrag fa = wmma_frag(in, wmma::Frag::A, w.ab, t0), fb = wmma_frag(in, wmma::Frag::B, w.ab, t0);
    const WmmaFrag fc = wmma_frag(in, wmma::Frag::C, in.type2, t0), fd = wmma_frag(in, wmma::Frag::C, in.type, t0);
    const bool flt = w.ab == Type::F16;
    if (flt == (in.type == Type::S32) || flt == (in.type2 == Type::S32) || (flt && w.satfinite))
      unsupported(in, t0, "this combination of wmma.mma types");
    const wmma::In it = w.ab == Type::F16 ? wmma::In::F16 : w.ab == Type::S8 ? wmma::In::S8 : wmma::In::U8;
    // A row-major and B column-major, as the lanes hold them.
    std::vector<uint8_t> a(s.m * s.k * fa.esize), b(s.k * s.n * fb.esize);
    for (Thread* t : active) {
      const auto ra = fragment_regs(in, in.ops[1], fa, *t), rb = fragment_regs(in, in.ops[2], fb, *t);
      for (uint32_t i = 0; i < fa.per_lane; ++i)
        store_le(a.data() + (t->lane * fa.per_lane + i) * fa.esize, fa.esize, slot(ra, fa.esize, i));
      for (uint32_t i = 0; i < fb.per_lane; ++i)
        store_le(b.data() + (t->lane * fb.per_lane + i) * fb.esize, fb.esize, slot(rb, fb.esize, i));
    }
    for (Thread* t : active) {
      const auto rc = fragment_regs(in, in.ops[3], fc, *t);
      std::vector<uint32_t> rd(in.ops[0].elems.size(), 0);
      if (rd.size() * 4 < fd.per_lane * fd.esize) unsupported(in, *t, "a wmma fragment with too few registers");
      for (uint32_t i = 0; i < fd.per_lane; ++i) {
        uint32_t row, col;
        wmma::element(s, wmma::Frag::C, t->lane, i, row, col);
        uint32_t c = slot(rc, fc.esize, i);
        if (in.type2 == Type::F16) c = fref::f32_from_f16(c);
        uint32_t d = wmma::dot(s.k, it, w.satfinite, a.data() + row * s.k * fa.esize, b.data() + col * s.k * fb.esize, c);
        if (in.type == Type::F16) {
          d = fref::f16_from_f32(d, Rnd::Rn);
          rd[i / 2] |= d << (16 * (i % 2));
        } else {
          rd[i] = d;
        }
      }
      for (size_t j = 0; j < rd.size(); ++j) write(in.ops[0].elems[j], Type::B32, rd[j], *t);
    }
  }

  void redux(const Instr& in, const std::vector<Thread*>& active) {
    bool s = is_signed(in.type);
    std::vector<uint64_t> results;
    for (Thread* t : active) {
      std::vector<Thread*> group = members(in, 2, active, *t);
      if (group.empty()) fault(launch::kLaunchFailure, in, *t, "executing thread is not in the membermask");
      uint64_t acc = read(in.ops[1], in.type, *group[0], in);
      for (size_t i = 1; i < group.size(); ++i) {
        uint64_t v = read(in.ops[1], in.type, *group[i], in);
        switch (in.atom) {
          case AtomOp::Add: acc += v; break;
          case AtomOp::And: acc &= v; break;
          case AtomOp::Or: acc |= v; break;
          case AtomOp::Xor: acc ^= v; break;
          case AtomOp::Min: acc = (s ? sext(v, 32) < sext(acc, 32) : v < acc) ? v : acc; break;
          case AtomOp::Max: acc = (s ? sext(v, 32) > sext(acc, 32) : v > acc) ? v : acc; break;
          default: unsupported(in, *t, "this redux operation");
        }
      }
      results.push_back(acc);
    }
    for (size_t i = 0; i < active.size(); ++i) write(in.ops[0], in.type, results[i], *active[i]);
  }

  // -- calls ----------------------------------------------------------------
  // The bytes of one call argument (a .param variable, a register or an immediate).
  std::vector<uint8_t> arg_bytes(const Instr& in, const Operand& a, uint64_t size, Thread& t) {
    Frame& fr = t.frames.back();
    if (a.kind == Operand::Kind::Sym && a.sym.kind == SymKind::LocalVar &&
        m_.functions[fr.func].vars[a.sym.index].space == Space::Param) {
      std::vector<uint8_t> b = fr.pvars[a.sym.index];
      b.resize(size, 0);
      return b;
    }
    if (a.kind == Operand::Kind::Reg || a.kind == Operand::Kind::Imm) {
      std::vector<uint8_t> b(size, 0);
      store_le(b.data(), static_cast<uint32_t>(std::min<uint64_t>(size, 8)), read(a, Type::None, t, in));
      return b;
    }
    unsupported(in, t, "this call argument");
  }

  void do_call(const Instr& in, Thread& t) {
    const Operand& callee = in.ops[1];
    uint32_t f;
    if (callee.kind == Operand::Kind::Sym) {
      f = callee.sym.index;
    } else {
      uint64_t addr = read(callee, Type::U64, t, in);
      const uint64_t index = (addr - kFunctionWindow) / 16;
      if (addr < kFunctionWindow || index >= m_.functions.size() || function_address(uint32_t(index)) != addr)
        fault(launch::kIllegalAddress, in, t, "indirect call to " + hex(addr) + ", which is not a function");
      f = static_cast<uint32_t>(index);
    }
    const Function& fn = m_.functions[f];
    const auto& args = in.ops[2].elems;
    const auto& rets = in.ops[0].elems;
    std::vector<std::vector<uint8_t>> argv;
    for (size_t i = 0; i < args.size(); ++i)
      argv.push_back(arg_bytes(in, args[i], i < fn.params.size() ? fn.params[i].size : 8, t));
    if (!fn.has_body) {
      std::vector<uint8_t> ret = builtin(in, fn, argv, t);
      if (!rets.empty()) store_return(in, rets[0], ret, t);
      ++t.frames.back().pc;
      return;
    }
    if (argv.size() != fn.params.size())
      fault(launch::kLaunchFailure, in, t, "call to '" + fn.name + "' passes " + std::to_string(argv.size()) +
                                         " arguments, it takes " + std::to_string(fn.params.size()));
    if (t.frames.size() >= 1024) fault(launch::kLaunchFailure, in, t, "call stack overflow");
    push_frame(t, f);
    t.frames.back().params = std::move(argv);
  }

  void store_return(const Instr& in, const Operand& dst, const std::vector<uint8_t>& bytes, Thread& t) {
    Frame& fr = t.frames.back();
    if (dst.kind == Operand::Kind::Sym && dst.sym.kind == SymKind::LocalVar &&
        m_.functions[fr.func].vars[dst.sym.index].space == Space::Param) {
      std::vector<uint8_t>& s = fr.pvars[dst.sym.index];
      std::copy_n(bytes.begin(), std::min(bytes.size(), s.size()), s.begin());
      return;
    }
    if (dst.kind == Operand::Kind::Reg) {
      write(dst, m_.functions[fr.func].regs[dst.reg].type,
            load_le(bytes.data(), static_cast<uint32_t>(std::min<size_t>(bytes.size(), 8))), t);
      return;
    }
    unsupported(in, t, "this call return operand");
  }

  void do_return(Thread& t) {
    if (t.frames.size() == 1) {
      t.exited = true;
      return;
    }
    Frame callee = std::move(t.frames.back());
    t.frames.pop_back();
    t.local.resize(callee.local_base);
    Frame& caller = t.frames.back();
    const Instr& call = m_.functions[caller.func].body[caller.pc];
    const auto& rets = call.ops[0].elems;
    for (size_t i = 0; i < rets.size() && i < callee.rets.size(); ++i) store_return(call, rets[i], callee.rets[i], t);
    ++caller.pc;
  }

  // -- device runtime functions ---------------------------------------------
  std::vector<uint8_t> builtin(const Instr& in, const Function& fn, const std::vector<std::vector<uint8_t>>& argv,
                               Thread& t) {
    auto arg64 = [&](size_t i) -> uint64_t {
      if (i >= argv.size()) fault(launch::kLaunchFailure, in, t, "missing argument " + std::to_string(i) + " to '" + fn.name + "'");
      return load_le(argv[i].data(), static_cast<uint32_t>(std::min<size_t>(argv[i].size(), 8)));
    };
    if (fn.name == "vprintf") {
      int32_t n = device_printf(in, arg64(0), arg64(1), t);
      std::vector<uint8_t> r(4);
      store_le(r.data(), 4, static_cast<uint32_t>(n));
      return r;
    }
    if (fn.name == "__assertfail") {
      std::string msg = c_string(in, arg64(0), t), file = c_string(in, arg64(1), t);
      std::string func = c_string(in, arg64(3), t);
      uint32_t line = static_cast<uint32_t>(arg64(2));
      throw Fault{launch::kAssert, file + ":" + std::to_string(line) + ": " + func + ": block: [" +
                                  std::to_string(cta_[0]) + "," + std::to_string(cta_[1]) + "," +
                                  std::to_string(cta_[2]) + "], thread: [" + std::to_string(t.tid[0]) + "," +
                                  std::to_string(t.tid[1]) + "," + std::to_string(t.tid[2]) +
                                  "] Assertion `" + msg + "` failed."};
    }
    if (fn.name == "malloc") {
      std::vector<uint8_t> r(8);
      store_le(r.data(), 8, heap_malloc(in, arg64(0), t));
      return r;
    }
    if (fn.name == "free") {
      heap_free(in, arg64(0), t);
      return {};
    }
    if (fn.name.rfind("__cudaCDP2", 0) == 0)
      unsupported(in, t, "calling '" + fn.name + "' (the CUDA device runtime: device-side kernel launches, dynamic "
                         "parallelism; they run on the interpreter backend: run it with --backend interpreter)");
    unsupported(in, t, "calling external function '" + fn.name + "'");
  }

  // The heap: word 0 (8 bytes) the bytes handed out from its start, word 1
  // the first free block; a block is [size][next free] (8 bytes each) and
  // then the user's bytes, a multiple of 16.  malloc takes the first free
  // block that is large enough (what it does not need stays free when that
  // is at least 32 bytes), else new space; NULL when none fits.
  uint64_t heap_word(const Instr& in, uint64_t addr, Thread& t) {
    return load_le(memory(Space::Global, addr, 8, false, t, in), 8);
  }
  void set_heap_word(const Instr& in, uint64_t addr, uint64_t v, Thread& t) {
    store_le(memory(Space::Global, addr, 8, true, t, in), 8, v);
  }
  uint64_t heap_malloc(const Instr& in, uint64_t size, Thread& t) {
    const uint64_t base = opt_.heap_base, start = base + 16;
    if (opt_.heap_bytes < 64 || size > opt_.heap_bytes) return 0;
    const uint64_t need = (size + 15) / 16 * 16;
    uint64_t prev = base + 8;
    for (uint64_t b = heap_word(in, prev, t); b != 0; prev = b + 8, b = heap_word(in, prev, t))
      if (const uint64_t have = heap_word(in, b, t); have >= need) {
        uint64_t next = heap_word(in, b + 8, t);
        if (have >= need + 32) {  // the rest stays free, in b's place in the list
          const uint64_t rest = b + 16 + need;
          set_heap_word(in, rest, have - need - 16, t);
          set_heap_word(in, rest + 8, next, t);
          set_heap_word(in, b, need, t);
          next = rest;
        }
        set_heap_word(in, prev, next, t);
        return b + 16;
      }
    const uint64_t used = heap_word(in, base, t);
    if (16 + used + 16 + need > opt_.heap_bytes) return 0;
    set_heap_word(in, base, used + 16 + need, t);
    set_heap_word(in, start + used, need, t);
    return start + used + 16;
  }
  void heap_free(const Instr& in, uint64_t p, Thread& t) {
    if (p == 0) return;
    const uint64_t b = p - 16;
    set_heap_word(in, b + 8, heap_word(in, opt_.heap_base + 8, t), t);
    set_heap_word(in, opt_.heap_base + 8, b, t);
  }

  std::string c_string(const Instr& in, uint64_t addr, Thread& t) {
    std::string s;
    if (addr == 0) return "(null)";
    for (;;) {
      char c = static_cast<char>(*memory(Space::None, addr + s.size(), 1, false, t, in));
      if (c == 0) return s;
      s.push_back(c);
      if (s.size() > (1u << 20)) fault(launch::kIllegalAddress, in, t, "unterminated string at " + hex(addr));
    }
  }

  // Formats like CUDA's device printf: arguments are packed in the buffer
  // at `args`, each aligned to its own size (int and char promote to 4
  // bytes; long, long long, pointers and doubles take 8).  Returns the
  // number of arguments.
  int32_t device_printf(const Instr& in, uint64_t fmt_addr, uint64_t args, Thread& t) {
    std::string fmt = c_string(in, fmt_addr, t);
    uint64_t off = 0;
    int32_t count = 0;
    auto take = [&](uint32_t size) {
      off = (off + size - 1) / size * size;
      uint64_t v = load_le(memory(Space::None, args + off, size, false, t, in), size);
      off += size;
      ++count;
      return v;
    };
    std::string out;
    for (size_t i = 0; i < fmt.size(); ++i) {
      if (fmt[i] != '%') { out.push_back(fmt[i]); continue; }
      size_t start = i++;
      if (i < fmt.size() && fmt[i] == '%') { out.push_back('%'); continue; }
      while (i < fmt.size() && std::strchr("-+ #0", fmt[i])) ++i;
      while (i < fmt.size() && (std::isdigit(static_cast<unsigned char>(fmt[i])) || fmt[i] == '.')) ++i;
      int longs = 0;
      while (i < fmt.size() && std::strchr("hlLqjzt", fmt[i])) {
        if (fmt[i] == 'l' || fmt[i] == 'L' || fmt[i] == 'q' || fmt[i] == 'j' || fmt[i] == 'z' || fmt[i] == 't') ++longs;
        ++i;
      }
      if (i >= fmt.size()) { out += fmt.substr(start); break; }
      char conv = fmt[i];
      // The spec without length modifiers, re-issued with host types.
      std::string spec;
      for (size_t k = start; k < i; ++k)
        if (!std::strchr("hlLqjzt", fmt[k])) spec.push_back(fmt[k]);
      char buf[512];
      switch (conv) {
        case 'd': case 'i': {
          int64_t v = longs ? static_cast<int64_t>(take(8)) : sext(take(4), 32);
          std::snprintf(buf, sizeof buf, (spec + "lld").c_str(), static_cast<long long>(v));
          out += buf;
          break;
        }
        case 'u': case 'x': case 'X': case 'o': {
          uint64_t v = longs ? take(8) : take(4);
          std::snprintf(buf, sizeof buf, (spec + "ll" + conv).c_str(), static_cast<unsigned long long>(v));
          out += buf;
          break;
        }
        case 'c':
          std::snprintf(buf, sizeof buf, (spec + "c").c_str(), static_cast<int>(static_cast<char>(take(4))));
          out += buf;
          break;
        case 's': {
          std::string s = c_string(in, take(8), t);
          std::vector<char> big(s.size() + 512);
          std::snprintf(big.data(), big.size(), (spec + "s").c_str(), s.c_str());
          out += big.data();
          break;
        }
        case 'p': {
          uint64_t v = take(8);
          std::snprintf(buf, sizeof buf, "0x%" PRIx64, v);
          out += buf;
          break;
        }
        case 'f': case 'F': case 'e': case 'E': case 'g': case 'G': case 'a': case 'A': {
          uint64_t raw = take(8);
          double d;
          std::memcpy(&d, &raw, 8);
          std::snprintf(buf, sizeof buf, (spec + conv).c_str(), d);
          out += buf;
          break;
        }
        default:
          out += fmt.substr(start, i - start + 1);
      }
    }
    printf_ += out;
    return count;
  }

  // -- textures and surfaces (texture_ref.h; docs/isa.md section 8.3) -------
  void texture(const Instr& in, Thread& t) {
    const bool store = in.op == Op::Sust;
    const Operand& handle = in.ops[store ? 0 : 1];
    const Operand& coords = in.ops[store ? 1 : 2];
    const Operand& data = in.ops[store ? 2 : 0];
    uint64_t h = read(handle, Type::U64, t, in);
    uint32_t desc[16];
    for (uint32_t k = 0; k < 16; ++k) desc[k] = uint32_t(load_le(memory(Space::Global, h + 4 * k, 4, false, t, in), 4));
    uint32_t c[4] = {0, 0, 0, 0};
    for (size_t k = 0; k < coords.elems.size() && k < 4; ++k)
      if (coords.elems[k].kind != Operand::Kind::Sink) c[k] = uint32_t(read(coords.elems[k], Type::B32, t, in));
    std::vector<const Operand*> d;
    if (data.kind == Operand::Kind::Vector)
      for (const Operand& x : data.elems) d.push_back(&x);
    else
      d.push_back(&data);
    texref::Load load = [&](uint64_t a, uint32_t n) {
      return uint32_t(load_le(memory(Space::Global, a, n, false, t, in), n));
    };
    if (in.op == Op::Tex) {
      if ((in.type != Type::F32 && in.type != Type::S32 && in.type != Type::U32) ||
          (in.type2 != Type::F32 && in.type2 != Type::S32))
        unsupported(in, t, "tex of these types");
      auto r = texref::tex(desc, in.geom, in.type2 == Type::S32, c, in.type != Type::F32, load);
      for (size_t k = 0; k < d.size() && k < 4; ++k)
        if (d[k]->kind != Operand::Kind::Sink) write(*d[k], Type::B32, r[k], t);
      return;
    }
    if (in.geom == TexGeom::Cube || in.geom == TexGeom::ACube) unsupported(in, t, "a surface access of a cube map");
    const uint32_t es = type_size(in.type);
    uint64_t a = 0;
    bool ok = texref::surface_address(desc, in.geom, c, es * uint32_t(d.size()), in.surf_clamp, a);
    if (!ok && in.surf_clamp == 0)
      fault(launch::kIllegalAddress, in, t, "surface access out of range (.trap)");
    for (size_t k = 0; k < d.size(); ++k) {
      if (in.op == Op::Suld) {
        uint64_t v = ok ? load_le(memory(Space::Global, a + k * es, es, false, t, in), es) : 0;
        if (d[k]->kind != Operand::Kind::Sink) write(*d[k], in.type, v, t);
      } else if (ok) {
        store_le(memory(Space::Global, a + k * es, es, true, t, in), es, read(*d[k], in.type, t, in));
      }
    }
  }

  // -- scalar instructions --------------------------------------------------
  // Integer arithmetic and bit operations; the rest in scalar_data().
  void scalar(const Instr& in, Thread& t) {
    const Type ty = in.type;
    const unsigned n = bits_of(ty);
    const bool s = is_signed(ty);
    auto op = [&](size_t i, Type k = Type::None) { return read(in.ops[i], k == Type::None ? ty : k, t, in); };
    auto sx = [&](uint64_t v) { return sext(v, n); };
    auto dst = [&](uint64_t v, Type k = Type::None) { write(in.ops[0], k == Type::None ? ty : k, v, t); };
    auto clamp_s32 = [](int64_t v) -> uint64_t {
      return static_cast<uint64_t>(std::clamp<int64_t>(v, INT32_MIN, INT32_MAX));
    };
    switch (in.op) {
      case Op::Add: case Op::Addc: {
        uint64_t a = op(1), b = op(2), cin = in.op == Op::Addc && t.carry;
        if (in.sat && ty == Type::S32) { dst(clamp_s32(sx(a) + sx(b))); break; }
        uint64_t r = (a + b + cin) & mask_bits(n);
        if (in.cc) t.carry = n == 64 ? (r < a || (cin && r == a)) : ((a + b + cin) >> n) & 1;
        dst(r);
        break;
      }
      case Op::Sub: case Op::Subc: {
        // sub.cc / subc: CC.CF is a borrow.
        uint64_t a = op(1), b = op(2), bin = in.op == Op::Subc && t.carry;
        if (in.sat && ty == Type::S32) { dst(clamp_s32(sx(a) - sx(b))); break; }
        uint64_t r = (a - b - bin) & mask_bits(n);
        if (in.cc) t.carry = a < b || (a - b) < bin;
        dst(r);
        break;
      }
      case Op::Mul: {
        uint64_t a = op(1), b = op(2);
        if (in.mul == MulMode::Wide) {
          if (wide_type(ty) == Type::None) unsupported(in, t, "mul.wide of this type");
          dst(product(a, b, n, s) & mask_bits(2 * n), wide_type(ty));
          break;
        }
        dst(in.mul == MulMode::Hi ? mul_hi(a, b, n, s) : a * b);
        break;
      }
      case Op::Mad: case Op::Madc: {
        uint64_t a = op(1), b = op(2), cin = in.op == Op::Madc && t.carry;
        if (in.mul == MulMode::Wide) {
          Type w = wide_type(ty);
          if (w == Type::None) unsupported(in, t, "mad.wide of this type");
          uint64_t c = op(3, w);
          dst(product(a, b, n, s) + c + cin, w);
          break;
        }
        uint64_t c = op(3);
        uint64_t p = in.mul == MulMode::Hi ? mul_hi(a, b, n, s) : (a * b) & mask_bits(n);
        if (in.sat && ty == Type::S32 && in.mul == MulMode::Hi) { dst(clamp_s32(sx(p) + sx(c))); break; }
        uint64_t r = (p + c + cin) & mask_bits(n);
        if (in.cc) t.carry = n == 64 ? (r < p || (cin && r == p)) : ((p + c + cin) >> n) & 1;
        dst(r);
        break;
      }
      case Op::Mul24: case Op::Mad24: {
        int64_t a = s ? sext(op(1), 24) : int64_t(op(1) & 0xFFFFFF);
        int64_t b = s ? sext(op(2), 24) : int64_t(op(2) & 0xFFFFFF);
        uint64_t p = static_cast<uint64_t>(a * b);
        uint64_t r = in.mul == MulMode::Hi ? (p >> 16) : p;
        if (in.op == Op::Mad24) r += op(3);
        dst(r);
        break;
      }
      case Op::Sad: {
        uint64_t a = op(1), b = op(2);
        uint64_t d = s ? (sx(a) > sx(b) ? a - b : b - a) : (a > b ? a - b : b - a);
        dst(op(3) + d);
        break;
      }
      case Op::Div: case Op::Rem: {
        uint64_t a = op(1), b = op(2);
        uint64_t r;
        if (b == 0) {
          r = in.op == Op::Rem ? a : (s ? ~uint64_t(0) : mask_bits(n));
        } else if (s) {
          int64_t x = sx(a), y = sx(b);
          if (x == sext(uint64_t(1) << (n - 1), n) && y == -1) r = in.op == Op::Div ? a : 0;
          else r = static_cast<uint64_t>(in.op == Op::Div ? x / y : x % y);
        } else {
          r = in.op == Op::Div ? a / b : a % b;
        }
        dst(r);
        break;
      }
      case Op::Abs: { uint64_t a = op(1); dst(s && sx(a) < 0 ? uint64_t(0) - a : a); break; }
      case Op::Neg: dst(uint64_t(0) - op(1)); break;
      case Op::Min: case Op::Max: {
        uint64_t a = op(1), b = op(2);
        bool less = s ? sx(a) < sx(b) : a < b;
        dst((in.op == Op::Min) == less ? a : b);
        break;
      }
      case Op::Popc: dst(std::popcount(op(1)), Type::U32); break;
      case Op::Clz: {
        uint64_t a = op(1);
        dst(a == 0 ? n : static_cast<uint64_t>(std::countl_zero(a) - (64 - int(n))), Type::U32);
        break;
      }
      case Op::Bfind: {
        uint64_t a = op(1);
        if (s && sx(a) < 0) a = ~a & mask_bits(n);
        uint64_t r = a == 0 ? 0xFFFFFFFFu : uint64_t(63 - std::countl_zero(a));
        if (in.shiftamt && a != 0) r = (n - 1) - r;
        dst(r, Type::U32);
        break;
      }
      case Op::Brev: {
        uint64_t a = op(1), r = 0;
        for (unsigned i = 0; i < n; ++i) r |= ((a >> i) & 1) << (n - 1 - i);
        dst(r);
        break;
      }
      case Op::Bfe: {
        uint64_t a = op(1);
        unsigned pos = op(2, Type::U32) & 0xFF, len = op(3, Type::U32) & 0xFF;
        uint64_t sbit = 0;
        if (s && len != 0) sbit = (a >> std::min(pos + len - 1, n - 1)) & 1;
        uint64_t r = 0;
        for (unsigned i = 0; i < n; ++i) {
          uint64_t bit = (i < len && pos + i < n) ? (a >> (pos + i)) & 1 : sbit;
          r |= bit << i;
        }
        dst(r);
        break;
      }
      case Op::Bfi: {
        uint64_t a = op(1), r = op(2);
        unsigned pos = op(3, Type::U32) & 0xFF, len = op(4, Type::U32) & 0xFF;
        for (unsigned i = 0; i < len && pos + i < n; ++i)
          r = (r & ~(uint64_t(1) << (pos + i))) | (((a >> i) & 1) << (pos + i));
        dst(r);
        break;
      }
      case Op::Prmt: dst(prmt(in.prmt, op(1, Type::B32), op(2, Type::B32), op(3, Type::B32)), Type::B32); break;
      case Op::Shf: {
        uint64_t a = op(1, Type::B32), b = op(2, Type::B32), c = op(3, Type::U32);
        unsigned k = in.shf_mode == ShfMode::Clamp ? unsigned(std::min<uint64_t>(c, 32)) : unsigned(c & 31);
        uint64_t both = (b << 32) | a;
        dst(in.shf_dir == ShfDir::L ? ((both << k) >> 32) : (both >> k), Type::B32);
        break;
      }
      case Op::Shl: case Op::Shr: {
        uint64_t a = op(1), k = op(2, Type::U32);
        uint64_t r;
        if (in.op == Op::Shl) r = k >= n ? 0 : a << k;
        else if (s) r = static_cast<uint64_t>(sx(a) >> std::min<uint64_t>(k, n - 1));
        else r = k >= n ? 0 : a >> k;
        dst(r);
        break;
      }
      case Op::And: dst(op(1) & op(2)); break;
      case Op::Or: dst(op(1) | op(2)); break;
      case Op::Xor: dst(op(1) ^ op(2)); break;
      case Op::Not: dst(~op(1)); break;
      case Op::Cnot: dst(op(1) == 0 ? 1 : 0); break;
      case Op::Lop3: {
        uint64_t a = op(1), b = op(2), c = op(3), lut = op(4, Type::U32), r = 0;
        for (unsigned i = 0; i < n; ++i) {
          unsigned idx = unsigned(((a >> i) & 1) << 2 | ((b >> i) & 1) << 1 | ((c >> i) & 1));
          r |= ((lut >> idx) & 1) << i;
        }
        dst(r);
        break;
      }
      case Op::Bmsk: {
        // A mask of b ones starting at bit a; .wrap takes both mod 32, .clamp
        // limits both to 32.
        uint64_t a = op(1, Type::U32), b = op(2, Type::U32);
        if (in.shf_mode == ShfMode::Wrap) a &= 31, b &= 31;
        else a = std::min<uint64_t>(a, 32), b = std::min<uint64_t>(b, 32);
        uint64_t lo = a >= 32 ? 0 : (0xFFFFFFFFull << a) & 0xFFFFFFFFull;
        uint64_t hi = a + b >= 32 ? 0 : (0xFFFFFFFFull << (a + b)) & 0xFFFFFFFFull;
        dst(lo & ~hi, Type::B32);
        break;
      }
      case Op::Szext: {
        // Sign- (.s32) or zero- (.u32) extends the low b bits of a; b = 0 gives 0.
        uint64_t a = op(1), b = op(2, Type::U32);
        b = in.shf_mode == ShfMode::Wrap ? (b & 31) : std::min<uint64_t>(b, 32);
        dst(b == 0 ? 0 : s ? static_cast<uint64_t>(sext(a, unsigned(b))) : a & mask_bits(unsigned(b)));
        break;
      }
      case Op::Dp4a: {
        // dp4a.atype.btype d, a, b, c: c + sum of the four byte products.
        uint64_t a = op(1), b = op(2, in.type2);
        int64_t acc = sext(op(3), 32);
        for (int i = 0; i < 4; ++i) {
          int64_t x = s ? sext(a >> (8 * i), 8) : int64_t((a >> (8 * i)) & 0xFF);
          int64_t y = is_signed(in.type2) ? sext(b >> (8 * i), 8) : int64_t((b >> (8 * i)) & 0xFF);
          acc += x * y;
        }
        dst(static_cast<uint64_t>(acc), Type::B32);
        break;
      }
      default:
        scalar_data(in, t);
    }
  }

  // Moves, conversions, comparisons, loads, stores and atomics.
  void scalar_data(const Instr& in, Thread& t) {
    const Type ty = in.type;
    const unsigned n = bits_of(ty);
    const bool s = is_signed(ty);
    auto op = [&](size_t i, Type k = Type::None) { return read(in.ops[i], k == Type::None ? ty : k, t, in); };
    auto sx = [&](uint64_t v) { return sext(v, n); };
    auto dst = [&](uint64_t v, Type k = Type::None) { write(in.ops[0], k == Type::None ? ty : k, v, t); };
    switch (in.op) {
      case Op::Mov: {
        const Operand& d = in.ops[0];
        if (d.kind == Operand::Kind::Vector) {  // unpack: element 0 lowest
          uint64_t v = op(1);
          unsigned eb = n / static_cast<unsigned>(d.elems.size());
          for (size_t i = 0; i < d.elems.size(); ++i)
            write(d.elems[i], Type::B64, (v >> (eb * i)) & mask_bits(eb), t);
          break;
        }
        dst(op(1));
        break;
      }
      case Op::Cvt: {
        uint64_t a = op(1, in.type2);
        int64_t v = is_signed(in.type2) ? sext(a, bits_of(in.type2)) : static_cast<int64_t>(a);
        if (in.sat) {
          unsigned db = bits_of(ty);
          bool src_neg = is_signed(in.type2) && v < 0;
          if (is_signed(ty)) {
            int64_t hi = static_cast<int64_t>(mask_bits(db - 1)), lo = -hi - 1;
            if (!is_signed(in.type2) && a > uint64_t(hi)) v = hi;
            else v = std::clamp(v, lo, hi);
          } else {
            uint64_t hi = mask_bits(db);
            if (src_neg) v = 0;
            else if (uint64_t(v) > hi) v = static_cast<int64_t>(hi);
          }
        }
        dst(static_cast<uint64_t>(v));
        break;
      }
      case Op::Cvta: {
        uint64_t a = op(1);
        uint64_t window = in.space == Space::Shared ? kSharedWindow : in.space == Space::Local ? kLocalWindow : 0;
        dst(in.to ? a - window : a + window);
        break;
      }
      case Op::Isspacep: {
        uint64_t a = op(1, Type::U64);
        bool r = false;
        if (in.space == Space::Shared) r = a >= kSharedWindow && a < kSharedWindow + kWindowSize;
        else if (in.space == Space::Local) r = a >= kLocalWindow && a < kLocalWindow + kWindowSize;
        else if (in.space == Space::Global || in.space == Space::Const) r = a >= mem_.base && a - mem_.base < mem_.bytes.size();
        else if (in.space == Space::Param) r = a >= kParamWindow && a < kParamWindow + kWindowSize;
        dst(r, Type::Pred);
        break;
      }
      case Op::Selp: dst(op(3, Type::Pred) ? op(1) : op(2)); break;
      case Op::Slct: dst(sext(op(3, in.type2), bits_of(in.type2)) >= 0 ? op(1) : op(2)); break;
      case Op::Setp: case Op::Set: {
        Type ct = in.op == Op::Set ? in.type2 : ty;
        bool r = compare(in, op(1, ct), op(2, ct), ct, t);
        bool nr = !r;
        if (in.bool_op != BoolOp::None) {
          bool c = op(3, Type::Pred) != 0;
          auto comb = [&](bool x) {
            return in.bool_op == BoolOp::And ? (x && c) : in.bool_op == BoolOp::Or ? (x || c) : (x != c);
          };
          r = comb(r);
          nr = comb(nr);
        }
        if (in.op == Op::Set) { dst(r ? mask_bits(n) : 0); break; }
        const Operand& d = in.ops[0];
        write(d, Type::Pred, r, t);
        if (d.kind == Operand::Kind::PredPair) {
          Operand q;
          q.kind = Operand::Kind::Reg;
          q.reg = d.reg2;
          write(q, Type::Pred, nr, t);
        }
        break;
      }
      case Op::Ld: case Op::Ldu: {
        uint32_t es = type_size(ty);
        const Operand& d = in.ops[0];
        uint8_t* p = address(in, in.ops[1], es * in.vec, false, t);
        if (d.kind == Operand::Kind::Vector) {
          for (size_t i = 0; i < d.elems.size(); ++i) write(d.elems[i], ty, load_le(p + es * i, es), t);
        } else {
          dst(load_le(p, es));
        }
        break;
      }
      case Op::St: {
        uint32_t es = type_size(ty);
        const Operand& v = in.ops[1];
        uint8_t* p = address(in, in.ops[0], es * in.vec, true, t);
        if (v.kind == Operand::Kind::Vector) {
          for (size_t i = 0; i < v.elems.size(); ++i) store_le(p + es * i, es, read(v.elems[i], ty, t, in));
        } else {
          store_le(p, es, op(1));
        }
        break;
      }
      case Op::Atom: case Op::Red: {
        bool is_atom = in.op == Op::Atom;
        size_t ai = is_atom ? 1 : 0;
        uint32_t es = type_size(ty);
        if (es != 4 && es != 8 && ty != Type::F16) unsupported(in, t, std::to_string(es * 8) + "-bit atomics");
        if (is_float(ty) && (in.atom != AtomOp::Add || ty == Type::BF16 || ty == Type::BF16x2))
          unsupported(in, t, "this floating-point atomic (add on f16, f16x2, f32 and f64 only)");
        uint8_t* p = address(in, in.ops[ai], es, true, t);
        uint64_t old = load_le(p, es), b = op(ai + 1);
        uint64_t r;
        switch (in.atom) {
          case AtomOp::Add:
            // Floating-point add (docs/isa.md, 8): f32 .rn with subnormal
            // inputs and result flushed, f64 .rn, f16 and each half of f16x2 .rn.
            if (ty == Type::F32) r = fref::add(uint32_t(old), uint32_t(b), Rnd::Rn, true, false);
            else if (ty == Type::F64) r = fref::add64(old, b, Rnd::Rn);
            else if (ty == Type::F16) r = fref::add16(uint32_t(old), uint32_t(b));
            else if (ty == Type::F16x2)
              r = fref::add16(uint32_t(old) & 0xFFFF, uint32_t(b) & 0xFFFF) |
                  (uint64_t(fref::add16(uint32_t(old) >> 16, uint32_t(b) >> 16)) << 16);
            else r = old + b;
            break;
          case AtomOp::And: r = old & b; break;
          case AtomOp::Or: r = old | b; break;
          case AtomOp::Xor: r = old ^ b; break;
          case AtomOp::Exch: r = b; break;
          case AtomOp::Min: r = (s ? sx(b) < sx(old) : b < old) ? b : old; break;
          case AtomOp::Max: r = (s ? sx(b) > sx(old) : b > old) ? b : old; break;
          case AtomOp::Inc: r = old >= b ? 0 : old + 1; break;
          case AtomOp::Dec: r = (old == 0 || old > b) ? b : old - 1; break;
          case AtomOp::Cas: r = old == b ? op(ai + 2) : old; break;
          default: unsupported(in, t, "this atomic operation");
        }
        store_le(p, es, r);
        if (is_atom) dst(old);
        break;
      }
      default:
        unsupported(in, t, "instruction '" + in.opcode + "'");
    }
  }

  // -- floating point (f32; float_ref.h: the host's IEEE arithmetic) ---------
  static bool float_supported(const Instr& in) {
    if (half_op(in) || half_misc(in) || half_approx(in) || f64_approx(in)) return true;
    const bool f32 = in.type == Type::F32 || in.type2 == Type::F32;
    const bool f32_f64 = in.op == Op::Cvt && ((in.type == Type::F64 && in.type2 == Type::F32) ||
                                              (in.type == Type::F32 && in.type2 == Type::F64));
    if (half_wide(in)) return true;
    auto word_int = [](Type x) { return !is_float(x) && x != Type::Pred; };
    const Rnd rnd = float_mods(in).rnd;
    const bool integral = rnd == Rnd::Rni || rnd == Rnd::Rzi || rnd == Rnd::Rmi || rnd == Rnd::Rpi;
    if (in.op == Op::Cvt && ((in.type == Type::F64 && word_int(in.type2)) || (word_int(in.type) && in.type2 == Type::F64) ||
                             (in.type == Type::F64 && in.type2 == Type::F64 &&
                              (integral || (rnd == Rnd::None && float_mods(in).sat)))))
      return true;
    const Type ft = in.op == Op::Set ? in.type2 : in.type;
    if (ft == Type::F64 && !float_mods(in).approx &&
        (in.op == Op::Add || in.op == Op::Sub || (in.op == Op::Mul && in.mul == MulMode::None) || in.op == Op::Fma ||
         (in.op == Op::Mad && in.mul == MulMode::None) || in.op == Op::Min || in.op == Op::Div ||
         in.op == Op::Sqrt || in.op == Op::Rcp ||
         in.op == Op::Max || in.op == Op::Abs || in.op == Op::Neg || in.op == Op::Setp || in.op == Op::Set))
      return true;
    if (!f32) return false;
    if (is_float(in.type) && in.type != Type::F32 && !f32_f64) return false;
    if (is_float(in.type2) && in.type2 != Type::F32 && !f32_f64) return false;
    const bool defined_approx = in.op == Op::Div || in.op == Op::Rcp || in.op == Op::Sqrt || in.op == Op::Rsqrt ||
                                in.op == Op::Ex2 || in.op == Op::Lg2 || in.op == Op::Sin || in.op == Op::Cos ||
                                in.op == Op::Tanh;
    if ((float_mods(in).approx || float_mods(in).full) && !defined_approx) return false;
    switch (in.op) {
      case Op::Add: case Op::Sub: case Op::Mul: case Op::Fma: case Op::Mad: case Op::Min: case Op::Max:
      case Op::Abs: case Op::Neg: case Op::Copysign: case Op::Testp: case Op::Setp: case Op::Set:
      case Op::Cvt: case Op::Slct: case Op::Div: case Op::Rcp: case Op::Sqrt: case Op::Rsqrt: case Op::Ex2:
      case Op::Lg2: case Op::Sin: case Op::Cos: case Op::Tanh:
        return in.op != Op::Mul || in.mul == MulMode::None;
      default: return false;
    }
  }
  // binary16 and bfloat16: cvt between f16/bf16 and f32 (cvt.rnd.f16x2.f32 and
  // cvt.rnd.bf16x2.f32: a to the high half, b to the low one); add, sub, mul,
  // fma .rn on .f16, .f16x2, .bf16 and .bf16x2.
  static bool is16(Type x) { return x == Type::F16 || x == Type::BF16; }
  static bool is16x2(Type x) { return x == Type::F16x2 || x == Type::BF16x2; }
  static bool half_op(const Instr& in) {
    const FloatMods fm = float_mods(in);
    if (in.opcode.find(".relu") != std::string::npos || in.opcode.find(".satfinite") != std::string::npos) return false;
    if (in.op == Op::Cvt && (((is16(in.type) || is16x2(in.type)) && in.type2 == Type::F32) ||
                             (in.type == Type::F32 && is16(in.type2))))
      return !fm.ftz && (!fm.sat || (!is16x2(in.type) && in.type != Type::BF16)) &&
             (!is16x2(in.type) || in.ops.size() == 3);
    // .sat and .ftz: f16 arithmetic only (PTX gives bf16 arithmetic neither).
    const bool f16 = in.type == Type::F16 || in.type == Type::F16x2;
    return (is16(in.type) || is16x2(in.type)) && (!fm.ftz || f16) && (!fm.sat || f16) &&
           (fm.rnd == Rnd::None || fm.rnd == Rnd::Rn) &&
           (in.op == Op::Add || in.op == Op::Sub || (in.op == Op::Mul && in.mul == MulMode::None) || in.op == Op::Fma);
  }
  // An f16 clamped to [0, 1]: a NaN and negative values (-0 too) to +0, above 1 to 1.0.
  static uint32_t sat16(uint32_t h) { return (h & 0x7FFF) > 0x7C00 || (h & 0x8000) ? 0u : h > 0x3C00u ? 0x3C00u : h; }
  // f16 and f16x2 neg, abs (the sign bit of each half; a NaN half gives the
  // canonical 0x7FFF, as cuda_fp16.h's host __hneg and __habs), setp.CmpOp{.BoolOp}.f16
  // (the halves compared as the f32 values they are) and
  // set.CmpOp{.BoolOp}.dtype.{f16,f16x2}: per half 1.0 (an f16 destination) or
  // all ones (an integer one; 0xFFFF a half for f16x2 sources), else 0.
  // .ftz flushes subnormal halves (operands, and neg's and abs's results) to
  // zeros of their sign; setp.CmpOp{.BoolOp}{.ftz}.f16x2 p|q compares the low
  // halves into p and the high ones into q.
  static bool half_misc(const Instr& in) {
    if (in.op == Op::Neg || in.op == Op::Abs) return in.type == Type::F16 || in.type == Type::F16x2;
    if (in.op == Op::Setp) return in.type == Type::F16 || in.type == Type::F16x2;
    if (in.op == Op::Set)
      return (in.type2 == Type::F16 || in.type2 == Type::F16x2) &&
             (in.type2 == Type::F16x2 ? (in.type == Type::F16x2 || type_size(in.type) == 4) : !is16x2(in.type)) &&
             in.type != Type::BF16 && in.type != Type::F64;
    return false;
  }
  void half_misc_scalar(const Instr& in, Thread& t) {
    if (in.op == Op::Neg || in.op == Op::Abs) {
      const uint32_t v = uint32_t(read(in.ops[1], in.type, t, in));
      auto one = [&](uint32_t h) -> uint32_t {
        h = fref::flush16(h, float_mods(in).ftz);
        if ((h & 0x7FFF) > 0x7C00) return 0x7FFF;  // NaN: the canonical one
        return in.op == Op::Neg ? h ^ 0x8000 : h & 0x7FFF;
      };
      write(in.ops[0], in.type, in.type == Type::F16x2 ? one(v & 0xFFFF) | one(v >> 16) << 16 : one(v & 0xFFFF), t);
      return;
    }
    const Type st = in.op == Op::Set ? in.type2 : in.type;
    const uint32_t a = uint32_t(read(in.ops[1], st, t, in)), b = uint32_t(read(in.ops[2], st, t, in));
    const bool c = in.bool_op != BoolOp::None && read(in.ops[3], Type::Pred, t, in) != 0;
    auto comb = [&](bool x) {
      return in.bool_op == BoolOp::None ? x : in.bool_op == BoolOp::And ? (x && c) : in.bool_op == BoolOp::Or ? (x || c) : (x != c);
    };
    const bool ftz = float_mods(in).ftz;
    auto cmp = [&](int k) {
      return fref::compare(in.cmp, fref::f32_from_f16(fref::flush16((a >> (16 * k)) & 0xFFFF, ftz)),
                           fref::f32_from_f16(fref::flush16((b >> (16 * k)) & 0xFFFF, ftz)), false);
    };
    if (in.op == Op::Setp) {
      const Operand& d = in.ops[0];
      write(d, Type::Pred, comb(cmp(0)), t);
      if (d.kind == Operand::Kind::PredPair) {  // f16: the negation; f16x2: the high halves
        Operand q;
        q.kind = Operand::Kind::Reg;
        q.reg = d.reg2;
        write(q, Type::Pred, st == Type::F16x2 ? comb(cmp(1)) : comb(!cmp(0)), t);
      }
      return;
    }
    const Type dt = in.type;
    if (st == Type::F16x2) {
      const uint32_t one = dt == Type::F16x2 ? 0x3C00u : 0xFFFFu;
      write(in.ops[0], dt, (comb(cmp(0)) ? one : 0u) | (comb(cmp(1)) ? one << 16 : 0u), t);
    } else {
      const bool r = comb(cmp(0));
      write(in.ops[0], dt, !r ? 0 : dt == Type::F16 ? 0x3C00u : dt == Type::F32 ? 0x3F800000u : mask_bits(bits_of(dt)), t);
    }
  }
  void half_scalar(const Instr& in, Thread& t) {
    const Rnd r = base_rounding(float_mods(in).rnd);
    const bool bf = in.type == Type::BF16 || in.type == Type::BF16x2 || in.type2 == Type::BF16;
    if (in.op == Op::Cvt) {
      const bool sat = float_mods(in).sat;  // cvt.sat.f32.{f16,bf16}, cvt.rnd.sat.f16.f32: clamped to [0, 1]
      if (in.type == Type::F32) {
        const uint32_t v = uint32_t(read(in.ops[1], in.type2, t, in)) & 0xFFFF;
        write(in.ops[0], Type::F32, fref::saturate(bf ? fref::f32_from_bf16(v) : fref::f32_from_f16(v), sat), t);
        return;
      }
      auto conv = [&](size_t i) {
        const uint32_t v = uint32_t(read(in.ops[i], Type::F32, t, in));
        const uint32_t h = bf ? fref::bf16_from_f32(v, r) : fref::f16_from_f32(v, r);
        // The f16 result clamped to [0, 1]: NaN and negative values (-0 too) to +0, above 1 to 1.0 (0x3C00).
        if (!sat) return h;
        if ((h & 0x7FFF) > 0x7C00 || (h & 0x8000)) return 0u;
        return h > 0x3C00u ? 0x3C00u : h;
      };
      if (is16x2(in.type)) write(in.ops[0], Type::B32, conv(1) << 16 | conv(2), t);
      else write(in.ops[0], in.type, conv(1), t);
      return;
    }
    const bool x2 = is16x2(in.type);
    const Type rt = x2 ? Type::B32 : in.type;
    uint32_t src[3] = {0, 0, 0};
    for (size_t i = 1; i < in.ops.size() && i <= 3; ++i) src[i - 1] = uint32_t(read(in.ops[i], rt, t, in));
    const bool ftz = float_mods(in).ftz;  // f16 only: inputs and result flushed
    auto one = [&](int k) {
      uint32_t a = (src[0] >> (16 * k)) & 0xFFFF, b = (src[1] >> (16 * k)) & 0xFFFF, c = (src[2] >> (16 * k)) & 0xFFFF;
      a = fref::flush16(a, ftz), b = fref::flush16(b, ftz), c = fref::flush16(c, ftz);
      uint32_t h;
      switch (in.op) {
        case Op::Add: h = bf ? fref::add_bf16(a, b) : fref::add16(a, b); break;
        case Op::Sub: h = bf ? fref::sub_bf16(a, b) : fref::sub16(a, b); break;
        case Op::Mul: h = bf ? fref::mul_bf16(a, b) : fref::mul16(a, b); break;
        default: h = bf ? fref::fma_bf16(a, b, c) : fref::fma16(a, b, c); break;
      }
      h = fref::flush16(h, ftz);
      return float_mods(in).sat ? sat16(h) : h;
    };
    if (x2) write(in.ops[0], Type::B32, one(0) | (one(1) << 16), t);
    else write(in.ops[0], in.type, one(0), t);
  }
  // ex2.approx{.ftz}.f16{x2} and tanh.approx{.ftz}.f16{x2} (each half;
  // docs/isa.md section 11.1: the f32 function, one rounding to f16).  PTX
  // spells no .ftz on them; it is taken (flushing halves) as for the
  // arithmetic.
  static bool half_approx(const Instr& in) {
    return (in.op == Op::Ex2 || in.op == Op::Tanh) && (in.type == Type::F16 || in.type == Type::F16x2) &&
           float_mods(in).approx;
  }
  void half_approx_scalar(const Instr& in, Thread& t) {
    const bool x2 = in.type == Type::F16x2, ftz = float_mods(in).ftz;
    const uint32_t v = uint32_t(read(in.ops[1], x2 ? Type::B32 : in.type, t, in));
    auto one = [&](uint32_t h) { return in.op == Op::Ex2 ? fref::ex2_16(h, ftz) : fref::tanh16(h, ftz); };
    if (x2) write(in.ops[0], Type::B32, one(v & 0xFFFF) | one(v >> 16) << 16, t);
    else write(in.ops[0], in.type, one(v & 0xFFFF), t);
  }
  // rcp.approx.ftz.f64 and rsqrt.approx.ftz.f64 (docs/isa.md section 11.1).
  static bool f64_approx(const Instr& in) {
    const FloatMods fm = float_mods(in);
    return (in.op == Op::Rcp || in.op == Op::Rsqrt) && in.type == Type::F64 && fm.approx && fm.ftz;
  }
  // cvt between f16 and the integers or f64 (docs/isa.md section 11.1): one
  // rounding of the exact value each (fref; the lowering goes through f32).
  static bool half_wide(const Instr& in) {
    auto is_int = [](Type x) { return !is_float(x) && x != Type::Pred; };
    if (in.op != Op::Cvt || float_mods(in).ftz || in.opcode.find(".relu") != std::string::npos ||
        in.opcode.find(".satfinite") != std::string::npos)
      return false;
    return (in.type2 == Type::F16 && (is_int(in.type) || in.type == Type::F64)) ||
           (in.type == Type::F16 && (is_int(in.type2) || in.type2 == Type::F64));
  }
  void half_wide_scalar(const Instr& in, Thread& t) {
    const FloatMods fm = float_mods(in);
    const Rnd r = base_rounding(fm.rnd);
    const Type dt = in.type, st = in.type2;
    const uint64_t v = read(in.ops[1], st, t, in);
    if (st == Type::F16) {
      const uint32_t h = uint32_t(v) & 0xFFFF;
      if (dt == Type::F64) write(in.ops[0], dt, fref::saturate64(fref::f64_from_f16(h), fm.sat), t);
      else write(in.ops[0], dt, fref::int_from_f16(h, is_signed(dt), bits_of(dt), fm.rnd), t);
      return;
    }
    uint32_t h = st == Type::F64 ? fref::f16_from_f64(v, r) : fref::f16_from_int(v, is_signed(st), bits_of(st), r);
    // .sat: NaN and negative values (-0 too) to +0, above 1 to 1.0 (0x3C00).
    if (fm.sat) h = (h & 0x7FFF) > 0x7C00 || (h & 0x8000) ? 0u : h > 0x3C00u ? 0x3C00u : h;
    write(in.ops[0], dt, h, t);
  }
  void float_scalar(const Instr& in, Thread& t) {
    if (half_op(in)) return half_scalar(in, t);
    if (half_misc(in)) return half_misc_scalar(in, t);
    if (half_wide(in)) return half_wide_scalar(in, t);
    if (half_approx(in)) return half_approx_scalar(in, t);
    if (f64_approx(in)) {
      const uint64_t a = read(in.ops[1], Type::F64, t, in);
      write(in.ops[0], Type::F64, in.op == Op::Rcp ? fref::rcp_approx64(a) : fref::rsqrt_approx64(a), t);
      return;
    }
    const FloatMods fm = float_mods(in);
    const Rnd r = base_rounding(fm.rnd);
    // An f32 operand: its bits (a decimal literal is a double, rounded to f32).
    auto f = [&](size_t i) -> uint32_t {
      const Operand& o = in.ops[i];
      if (o.kind == Operand::Kind::FImm && o.fbits == 64) {
        double d;
        uint64_t raw = static_cast<uint64_t>(o.imm);
        std::memcpy(&d, &raw, 8);
        float x = static_cast<float>(d);
        uint32_t b;
        std::memcpy(&b, &x, 4);
        return b;
      }
      return static_cast<uint32_t>(read(o, Type::B32, t, in));
    };
    auto dst = [&](uint64_t v, Type k) { write(in.ops[0], k, v, t); };
    const Type ft = in.op == Op::Set ? in.type2 : in.type;
    if (in.op == Op::Cvt && (in.type == Type::F64 || in.type2 == Type::F64) &&
        !(in.type == Type::F32 || in.type2 == Type::F32)) {
      const Type dt = in.type, st = in.type2;
      const uint64_t v = read(in.ops[1], st, t, in);
      // .sat on an f64 destination clamps to [0, 1] (NaN and -0: +0); cvt.sat.f64.f64
      // without a rounding suffix only saturates.
      if (dt == Type::F64 && st == Type::F64)
        dst(fref::saturate64(fm.rnd == Rnd::None ? v : fref::round_int_f64(v, fm.rnd), fm.sat), Type::F64);
      else if (dt == Type::F64) dst(fref::saturate64(fref::int_to_f64(v, is_signed(st), bits_of(st), r), fm.sat), Type::F64);
      else dst(fref::f64_to_int(v, is_signed(dt), bits_of(dt), fm.rnd), dt);
      return;
    }
    if (ft == Type::F64) {
      auto d = [&](size_t i) { return read(in.ops[i], Type::F64, t, in); };
      switch (in.op) {
        case Op::Add: dst(fref::add64(d(1), d(2), r), Type::F64); return;
        case Op::Sub: dst(fref::sub64(d(1), d(2), r), Type::F64); return;
        case Op::Mul: dst(fref::mul64(d(1), d(2), r), Type::F64); return;
        case Op::Fma: case Op::Mad: dst(fref::fma64(d(1), d(2), d(3), r), Type::F64); return;
        case Op::Div: dst(fref::div64(d(1), d(2), r), Type::F64); return;
        case Op::Rcp: dst(fref::div64(0x3FF0000000000000ull, d(1), r), Type::F64); return;
        case Op::Sqrt: dst(fref::sqrt64(d(1), r), Type::F64); return;
        case Op::Min: dst(fref::min64(d(1), d(2)), Type::F64); return;
        case Op::Max: dst(fref::max64(d(1), d(2)), Type::F64); return;
        case Op::Abs: dst(d(1) & ~(uint64_t(1) << 63), Type::F64); return;
        case Op::Neg: dst(d(1) ^ (uint64_t(1) << 63), Type::F64); return;
        default: break;  // setp, set: below
      }
    }
    switch (in.op) {
      case Op::Add: dst(fref::add(f(1), f(2), r, fm.ftz, fm.sat), Type::F32); return;
      case Op::Sub: dst(fref::sub(f(1), f(2), r, fm.ftz, fm.sat), Type::F32); return;
      case Op::Mul: dst(fref::mul(f(1), f(2), r, fm.ftz, fm.sat), Type::F32); return;
      case Op::Fma: case Op::Mad: dst(fref::fma(f(1), f(2), f(3), r, fm.ftz, fm.sat), Type::F32); return;
      case Op::Div: {  // div.full and div.approx: the correctly rounded quotient (docs/isa.md 11.1)
        const uint32_t a = f(1), b = f(2);
        uint32_t q = fref::div(a, b, fm.approx || fm.full ? Rnd::Rn : r, fm.ftz, fm.sat);
        const uint32_t ab = b & 0x7FFFFFFFu;
        if (fm.approx && ab > 0x7E800000u && ab < 0x7F800000u && (a & 0x7FFFFFFFu) <= 0x7F800000u)
          q = (a & 0x7FFFFFFFu) == 0x7F800000u ? fref::kNaN32 : (a ^ b) & 0x80000000u;
        dst(q, Type::F32);
        return;
      }
      case Op::Ex2: dst(fref::ex2(f(1), fm.ftz), Type::F32); return;
      case Op::Lg2: dst(fref::lg2(f(1), fm.ftz), Type::F32); return;
      case Op::Sin: dst(fref::sin(f(1), fm.ftz), Type::F32); return;
      case Op::Cos: dst(fref::cos(f(1), fm.ftz), Type::F32); return;
      case Op::Tanh: dst(fref::tanh(f(1), fm.ftz), Type::F32); return;
      case Op::Rcp: dst(fref::div(0x3F800000u, f(1), fm.approx ? Rnd::Rn : r, fm.ftz, false), Type::F32); return;
      case Op::Sqrt: dst(fref::sqrt(f(1), fm.approx ? Rnd::Rn : r, fm.ftz), Type::F32); return;
      case Op::Rsqrt:
        dst(fref::div(0x3F800000u, fref::sqrt(f(1), Rnd::Rn, fm.ftz), Rnd::Rn, fm.ftz, false), Type::F32);
        return;
      case Op::Min: dst(fref::min(f(1), f(2), fm.ftz), Type::F32); return;
      case Op::Max: dst(fref::max(f(1), f(2), fm.ftz), Type::F32); return;
      case Op::Abs: dst(fref::abs(f(1), fm.ftz), Type::F32); return;
      case Op::Neg: dst(fref::neg(f(1), fm.ftz), Type::F32); return;
      case Op::Copysign: dst(fref::copysign(f(1), f(2)), Type::F32); return;
      case Op::Testp: dst(fref::testp(fm.testp, f(1)), Type::Pred); return;
      case Op::Slct: {  // slct.dtype.f32 d, a, b, c: c >= 0 (-0 included) ? a : b
        dst(fref::compare(Cmp::Ge, f(3), 0, fm.ftz) ? read(in.ops[1], in.type, t, in) : read(in.ops[2], in.type, t, in), in.type);
        return;
      }
      case Op::Setp: case Op::Set: {
        bool res = ft == Type::F64 ? fref::compare64(in.cmp, read(in.ops[1], Type::F64, t, in), read(in.ops[2], Type::F64, t, in))
                                   : fref::compare(in.cmp, f(1), f(2), fm.ftz);
        bool nres = !res;
        if (in.bool_op != BoolOp::None) {
          bool c = read(in.ops[3], Type::Pred, t, in) != 0;
          auto comb = [&](bool x) {
            return in.bool_op == BoolOp::And ? (x && c) : in.bool_op == BoolOp::Or ? (x || c) : (x != c);
          };
          res = comb(res);
          nres = comb(nres);
        }
        if (in.op == Op::Set) {
          if (in.type == Type::F32) dst(res ? 0x3F800000u : 0u, Type::F32);
          else dst(res ? mask_bits(bits_of(in.type)) : 0, in.type);
          return;
        }
        const Operand& d = in.ops[0];
        write(d, Type::Pred, res, t);
        if (d.kind == Operand::Kind::PredPair) {
          Operand q;
          q.kind = Operand::Kind::Reg;
          q.reg = d.reg2;
          write(q, Type::Pred, nres, t);
        }
        return;
      }
      case Op::Cvt: {
        const Type dt = in.type, st = in.type2;
        if (dt == Type::F32 && st == Type::F32) {
          dst(fref::round_int(f(1), fm.rnd, fm.ftz, fm.sat), Type::F32);
        } else if (dt == Type::F64) {
          dst(fref::saturate64(fref::to_f64(f(1), fm.ftz), fm.sat), Type::F64);
        } else if (st == Type::F64) {
          dst(fref::from_f64(read(in.ops[1], Type::F64, t, in), r, fm.ftz, fm.sat), Type::F32);
        } else if (dt == Type::F32) {
          const uint64_t v = read(in.ops[1], st, t, in);
          dst(fref::saturate(fref::from_int(v, is_signed(st), bits_of(st), r), fm.sat), Type::F32);
        } else {
          dst(fref::to_int(f(1), is_signed(dt), bits_of(dt), fm.rnd, fm.ftz), dt);
        }
        return;
      }
      default: unsupported(in, t, "floating-point instruction '" + in.opcode + "'");
    }
  }

  bool compare(const Instr& in, uint64_t a, uint64_t b, Type ct, const Thread& t) const {
    unsigned n = bits_of(ct);
    bool s = is_signed(ct);
    int64_t x = sext(a, n), y = sext(b, n);
    switch (in.cmp) {
      case Cmp::Eq: return a == b;
      case Cmp::Ne: return a != b;
      case Cmp::Lt: return s ? x < y : a < b;
      case Cmp::Le: return s ? x <= y : a <= b;
      case Cmp::Gt: return s ? x > y : a > b;
      case Cmp::Ge: return s ? x >= y : a >= b;
      case Cmp::Lo: return a < b;
      case Cmp::Ls: return a <= b;
      case Cmp::Hi: return a > b;
      case Cmp::Hs: return a >= b;
      default: unsupported(in, t, "this comparison");
    }
  }

  static uint64_t product(uint64_t a, uint64_t b, unsigned n, bool s) {
    if (s) return static_cast<uint64_t>(sext(a, n) * sext(b, n));
    return a * b;
  }
  static uint64_t mul_hi(uint64_t a, uint64_t b, unsigned n, bool s) {
    if (s) {
      __int128 p = static_cast<__int128>(sext(a, n)) * sext(b, n);
      return static_cast<uint64_t>(p >> n) & mask_bits(n);
    }
    unsigned __int128 p = static_cast<unsigned __int128>(a) * b;
    return static_cast<uint64_t>(p >> n) & mask_bits(n);
  }

  static uint64_t prmt(PrmtMode mode, uint64_t a, uint64_t b, uint64_t c) {
    uint64_t bytes = (b << 32) | a;  // bytes 0-3 from a, 4-7 from b
    auto byte = [&](unsigned i) { return (bytes >> (8 * (i & 7))) & 0xFF; };
    uint64_t r = 0;
    unsigned sel = c & 3;
    static const unsigned f4e[4][4] = {{0, 1, 2, 3}, {1, 2, 3, 4}, {2, 3, 4, 5}, {3, 4, 5, 6}};
    static const unsigned b4e[4][4] = {{0, 7, 6, 5}, {1, 0, 7, 6}, {2, 1, 0, 7}, {3, 2, 1, 0}};
    static const unsigned ecl[4][4] = {{0, 1, 2, 3}, {1, 1, 2, 3}, {2, 2, 2, 3}, {3, 3, 3, 3}};
    static const unsigned ecr[4][4] = {{0, 0, 0, 0}, {0, 1, 1, 1}, {0, 1, 2, 2}, {0, 1, 2, 3}};
    static const unsigned rc16[4][4] = {{0, 1, 0, 1}, {2, 3, 2, 3}, {0, 1, 0, 1}, {2, 3, 2, 3}};
    for (unsigned i = 0; i < 4; ++i) {
      uint64_t v = 0;
      switch (mode) {
        case PrmtMode::None: {
          unsigned s = (c >> (4 * i)) & 0xF;
          v = byte(s & 7);
          if (s & 8) v = (v & 0x80) ? 0xFF : 0;  // replicate the sign bit
          break;
        }
        case PrmtMode::F4e: v = byte(f4e[sel][i]); break;
        case PrmtMode::B4e: v = byte(b4e[sel][i]); break;
        case PrmtMode::Rc8: v = byte(sel); break;
        case PrmtMode::Ecl: v = byte(ecl[sel][i]); break;
        case PrmtMode::Ecr: v = byte(ecr[sel][i]); break;
        case PrmtMode::Rc16: v = byte(rc16[sel][i]); break;
      }
      r |= v << (8 * i);
    }
    return r;
  }
};

}  // namespace

launch::LaunchResult run(const Module& module, std::string_view kernel, launch::Dim3 grid, launch::Dim3 block,
                         uint32_t dynamic_smem, const std::vector<uint8_t>& params,
                         const std::map<std::string, uint64_t>& symbols, launch::GlobalMemory& mem,
                         const InterpOptions& options) {
  auto k = module.function_index(kernel);
  if (!k || !module.functions[*k].is_entry || !module.functions[*k].has_body) {
    launch::LaunchResult r;
    r.error = launch::kInvalidDeviceFunction;
    r.message = "no kernel named '" + std::string(kernel) + "' in the module";
    return r;
  }
  return Interp(module, *k, grid, block, dynamic_smem, params, symbols, mem, options).run();
}

}  // namespace qgpu::ptx
