// The interpreter's block compiler (jit.h).
#include "model_host/machine/jit.h"

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>

#include <unistd.h>

#if QGPU_HAVE_JIT
#include <llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/ExecutionEngine/Orc/ThreadSafeModule.h>
#include <llvm/IR/Constants.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/IntrinsicsX86.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/MDBuilder.h>
#include <llvm/IR/Module.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/FileSystem.h>
#include <llvm/Support/raw_ostream.h>
#endif

namespace qgpu::machine::jit {

Mode mode() {
  static const Mode m = [] {
    const char* e = std::getenv("QGPU_JIT");
    if (e && std::strcmp(e, "0") == 0) return Mode::Off;
    if (e && std::strcmp(e, "always") == 0) return Mode::Always;
    return Mode::On;
  }();
  return m;
}

uint32_t threshold() {
  static const uint32_t t = [] {
    if (mode() == Mode::Always) return 0u;
    const char* e = std::getenv("QGPU_JIT_THRESHOLD");
    return e && *e ? uint32_t(std::strtoul(e, nullptr, 10)) : 8192u;
  }();
  return t;
}

#if QGPU_HAVE_JIT
bool built_in() { return true; }
#else
bool built_in() { return false; }
#endif

#if !QGPU_HAVE_JIT

Slot* slot(const Block&) { return nullptr; }
void add_execs(Slot*, uint64_t) {}
uint64_t execs(const Slot*) { return 0; }
BlockFn compile(Slot*, const Block&, InstrFn, AppendFn) { return nullptr; }
BlockFn cached(const Slot*) { return nullptr; }
Counters counters() { return {}; }

#else

namespace {

// Everything an instruction is, as bytes: the cache's key.
std::string key_of(const Block& blk) {
  std::string k;
  k.reserve(blk.instrs.size() * 48);
  auto put = [&](uint32_t v) { k.append(reinterpret_cast<const char*>(&v), 4); };
  for (const Instr& in : blk.instrs) {
    put(uint32_t(in.op) | uint32_t(in.space) << 8 | uint32_t(in.bytes) << 16 | uint32_t(in.sign) << 24);
    put(in.dst);
    put(uint32_t(in.atom) | uint32_t(in.fmod.rnd) << 8 | uint32_t(in.fmod.cmp) << 16 | uint32_t(in.fmod.ftz) << 24 |
        uint32_t(in.fmod.sat) << 25 | uint32_t(in.fmod.hi) << 26);
    put(uint32_t(in.mma.m) | uint32_t(in.mma.n) << 8 | uint32_t(in.mma.k) << 16 | uint32_t(in.mma.in) << 24 |
        uint32_t(in.mma.satfinite) << 28);
    for (int s = 0; s < kMaxArity; ++s) {
      put(in.src(s).imm);
      put(in.src(s).v);
    }
  }
  // A BR's condition register: the compiled code reports its lanes as bits.
  put(blk.term.kind == Term::BR ? blk.term.cond + 1 : 0);
  return k;
}

struct State {
  std::mutex mu;
  std::unique_ptr<llvm::orc::LLJIT> jit;
  bool tried = false;
  std::unordered_map<std::string, Slot> cache;  // node-based: a Slot's address is stable
  uint64_t names = 0;
  Counters counters;
};
// Never destroyed: compiled code may run until the process exits.
State& state() {
  static State* s = new State;
  return *s;
}

bool init(State& s) {
  if (s.tried) return s.jit != nullptr;
  s.tried = true;
  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();
  auto jtmb = llvm::orc::JITTargetMachineBuilder::detectHost();  // the host's CPU and features
  if (!jtmb) {
    llvm::consumeError(jtmb.takeError());
    return false;
  }
  // The IR is built already optimised (straight-line vector code in SSA):
  // no IR passes, the code generator's default level (None compiles in half
  // the time, its code runs 10-20% slower).
  jtmb->setCodeGenOptLevel(llvm::CodeGenOptLevel::Default);
  auto j = llvm::orc::LLJITBuilder().setJITTargetMachineBuilder(std::move(*jtmb)).create();
  if (!j) {
    llvm::consumeError(j.takeError());
    return false;
  }
  s.jit = std::move(*j);
  return true;
}

constexpr uint32_t N = Params::kCudaWarp;
// The strides of the store groups' strided rows (build(): a vector store of
// four or two words a lane, split into its words by the lowering; loads take
// the four-word one alone).
constexpr uint32_t kStrides[2] = {16, 8};

// Whether the host has AVX-512's two-source permute (the loads' span path).
bool has_permute() {
#if defined(__x86_64__)
  static const bool yes = __builtin_cpu_supports("avx512f");
  return yes;
#else
  return false;
#endif
}

// The block as LLVM IR: one function `name`.
std::unique_ptr<llvm::Module> build(llvm::LLVMContext& C, const std::string& name, const Block& blk, InstrFn helper,
                                    AppendFn append) {
  using namespace llvm;
  auto mod = std::make_unique<Module>("qgpu_jit", C);
  Type* i32 = Type::getInt32Ty(C);
  Type* i64 = Type::getInt64Ty(C);
  Type* ptr = PointerType::getUnqual(C);
  auto* V = FixedVectorType::get(i32, N);
  auto* V64 = FixedVectorType::get(i64, N);
  auto* M = FixedVectorType::get(Type::getInt1Ty(C), N);
  FunctionType* fty = FunctionType::get(i32, {ptr, i64, ptr}, false);
  Function* F = Function::Create(fty, Function::ExternalLinkage, name, mod.get());
  F->addFnAttr(Attribute::NoUnwind);
  BasicBlock* bb = BasicBlock::Create(C, "entry", F);
  IRBuilder<> B(bb);
  Value* W = F->getArg(0);
  Value* mask64 = F->getArg(1);
  Value* env = F->getArg(2);
  Value* active = B.CreateBitCast(B.CreateTrunc(mask64, i32), M);

  // Each register's current value (all 32 lanes; the inactive lanes'
  // values are never observed: write-backs are masked) and whether it
  // differs from W.
  std::map<uint32_t, Value*> val;
  std::map<uint32_t, bool> dirty;
  auto regptr = [&](uint32_t r) { return B.CreateConstInBoundsGEP1_64(i32, W, uint64_t(r) * N); };
  auto splat = [&](uint32_t k) -> Value* { return ConstantVector::getSplat(ElementCount::getFixed(N), B.getInt32(k)); };
  auto get = [&](const Operand& o) -> Value* {
    if (o.imm) return splat(o.v);
    auto it = val.find(o.v);
    if (it != val.end()) return it->second;
    Value* v = B.CreateAlignedLoad(V, regptr(o.v), Align(4));
    val[o.v] = v;
    return v;
  };
  auto flush = [&] {
    for (auto& [r, d] : dirty)
      if (d) B.CreateMaskedStore(val[r], regptr(r), Align(4), active);
    dirty.clear();
  };
  // A field of Env, loaded once at the function's entry: the compiled code
  // reads the CTA's windows, warp, clock and rounding flag, which nothing
  // changes while the block runs (the interpreter's calls change only
  // npending), so each is one load however many instructions use it.
  Instruction* entry_pt = cast<Instruction>(B.CreateTrunc(mask64, i32));
  std::map<size_t, Value*> fields;
  auto field = [&](size_t off, Type* t) -> Value* {
    auto it = fields.find(off);
    if (it != fields.end()) return it->second;
    IRBuilder<> E(entry_pt);
    Value* v = E.CreateAlignedLoad(t, E.CreateConstInBoundsGEP1_64(E.getInt8Ty(), env, off), Align(4));
    fields[off] = v;
    return v;
  };
  auto env_field = [&](size_t off) -> Value* { return B.CreateVectorSplat(N, field(off, i32)); };
  auto bool32 = [&](Value* c) { return B.CreateZExt(c, V); };
  // f32 bit patterns over the lanes: .ftz's flush (a subnormal keeps its
  // sign only), the NaN test, and a NaN made the canonical one.
  auto flush_ftz = [&](Value* v, bool ftz) -> Value* {
    if (!ftz) return v;
    Value* sub = B.CreateAnd(B.CreateICmpEQ(B.CreateAnd(v, splat(0x7F800000u)), splat(0)),
                             B.CreateICmpNE(B.CreateAnd(v, splat(0x007FFFFFu)), splat(0)));
    return B.CreateSelect(sub, B.CreateAnd(v, splat(0x80000000u)), v);
  };
  auto is_nan = [&](Value* v) { return B.CreateICmpUGT(B.CreateAnd(v, splat(0x7FFFFFFFu)), splat(0x7F800000u)); };
  auto canonical = [&](Value* v) { return B.CreateSelect(is_nan(v), splat(0x7FFFFFFFu), v); };
  auto intr = [&](Intrinsic::ID id, std::vector<Value*> args) {
    Function* f = Intrinsic::getDeclaration(mod.get(), id, {V});
    return B.CreateCall(f, args);
  };
  FunctionType* hty = FunctionType::get(i32, {ptr, i32, i64}, false);
  Value* hfn = ConstantExpr::getIntToPtr(B.getInt64(uint64_t(reinterpret_cast<uintptr_t>(helper))), ptr);

  const uint32_t n = uint32_t(blk.instrs.size());
  const bool permute = has_permute();
  // Stores wait until the block's end (the interpreter's commit point), as
  // SSA values: their addresses and values.  While every one of them is in
  // range and aligned (`pend` 0) they are written there by the compiled
  // code, in order; the first that is not (or a print store) appends the
  // earlier ones to the interpreter's pending stores, runs through the
  // interpreter (faulting as it does), and sets `pend`: the later stores
  // then run through the interpreter too, and the interpreter commits them.
  struct Deferred {
    uint32_t index, bytes;
    Value *ptrs, *vals, *row, *base0;  // row: a coalesced row (then base0: its first address)
    Value* off = nullptr;              // the lanes' offsets in the window (4-byte global and shared stores)
  };
  std::vector<Deferred> deferred;
  AllocaInst* pend = B.CreateAlloca(i32);
  B.CreateStore(B.getInt32(0), pend);
  AllocaInst* ptrbuf = B.CreateAlloca(FixedVectorType::get(i64, N));
  AllocaInst* valbuf = B.CreateAlloca(V);
  FunctionType* aty = FunctionType::get(B.getVoidTy(), {ptr, ptr, ptr, i64, i32}, false);
  Value* afn = ConstantExpr::getIntToPtr(B.getInt64(uint64_t(reinterpret_cast<uintptr_t>(append))), ptr);
  auto store_dirty = [&] {
    for (auto& [reg, d] : dirty)
      if (d) B.CreateMaskedStore(val[reg], regptr(reg), Align(4), active);
  };
  // Instruction k through the interpreter where a compiled fast path cannot
  // run it: the dirty registers written back (they stay dirty: the fast path
  // did not write them), a fault returns k, the result register is read
  // back, and the path branches to `merge`.  Returns the value and its block.
  auto interpreted = [&](uint32_t k, uint32_t dst, BasicBlock* merge, bool may_fault) {
    store_dirty();
    Value* ok = B.CreateCall(hty, hfn, {env, B.getInt32(k), mask64});
    if (may_fault) {
      BasicBlock* failb = BasicBlock::Create(C, "fault", F);
      BasicBlock* resumed = BasicBlock::Create(C, "resumed", F);
      B.CreateCondBr(B.CreateICmpEQ(ok, B.getInt32(0)), failb, resumed);
      B.SetInsertPoint(failb);
      B.CreateRet(B.getInt32(k));
      B.SetInsertPoint(resumed);
    }
    Value* back = B.CreateAlignedLoad(V, regptr(dst), Align(4));
    BasicBlock* from = B.GetInsertBlock();
    B.CreateBr(merge);
    return std::pair<Value*, BasicBlock*>{back, from};
  };
  // The result register after a fast and an interpreted path meet at `merge`.
  auto join = [&](uint32_t dst, BasicBlock* merge, Value* fast, BasicBlock* from_fast,
                  std::pair<Value*, BasicBlock*> slow) {
    B.SetInsertPoint(merge);
    PHINode* phi = B.CreatePHI(V, 2);
    phi->addIncoming(fast, from_fast);
    phi->addIncoming(slow.first, slow.second);
    val[dst] = phi;
    dirty[dst] = true;
  };
  auto win_field = [&](Space sp, size_t off, Type* t) {
    return field(offsetof(Env, win) + sizeof(Env::Window) * size_t(sp) + off, t);
  };
  // An access of `bytes` at `addr` in window `sp` (the interpreter's
  // warp_offsets check): each lane's offset in the window, and `slow`, true
  // when an active lane is out of range or misaligned or the window has no
  // fast path (then the interpreter's own code runs the instruction).
  struct Access {
    Value *base, *off, *slow;
  };
  auto access = [&](Space sp, Value* addr, uint32_t bytes) {
    Value* base = win_field(sp, offsetof(Env::Window, base), ptr);
    Value* size = B.CreateTrunc(win_field(sp, offsetof(Env::Window, size), i64), i32);
    Value* sub = win_field(sp, offsetof(Env::Window, sub), i32);
    Value* fast = win_field(sp, offsetof(Env::Window, fast), i32);
    Value* off = B.CreateSub(addr, B.CreateVectorSplat(N, sub));
    Value* lim = B.CreateVectorSplat(N, B.CreateSub(size, B.getInt32(bytes)));
    Value* bad = B.CreateICmpUGT(off, lim);
    if (bytes > 1) bad = B.CreateOr(bad, B.CreateICmpNE(B.CreateAnd(addr, splat(bytes - 1u)), splat(0)));
    bad = B.CreateAnd(bad, active);
    return Access{base, off, B.CreateOr(B.CreateOrReduce(bad), B.CreateICmpEQ(fast, B.getInt32(0)))};
  };
  // The lanes' byte offsets from the window's base: local memory's lanes
  // are `stride` apart.
  auto lane_offsets = [&](Space sp, Value* off) {
    Value* off64 = B.CreateZExt(off, V64);
    if (sp != Space::Local) return off64;
    Value* stride = B.CreateVectorSplat(N, win_field(sp, offsetof(Env::Window, stride), i64));
    std::vector<Constant*> lanes;
    for (uint32_t l = 0; l < N; ++l) lanes.push_back(B.getInt64(l));
    return B.CreateAdd(off64, B.CreateMul(ConstantVector::get(lanes), stride));
  };
  // Load groups: 4-byte loads of a global, shared or param window at one
  // register plus immediates that agree modulo 4, the register unchanged
  // between them (an unrolled loop's loads of one row or column).  Their
  // range and alignment test is one, at the first: the lanes' offsets at
  // the least immediate in range for an access reaching the greatest.  So
  // is the row or span classification, which adding a constant to every
  // lane leaves unchanged.  A member whose group passes loads without a
  // test of its own; otherwise it takes the single load's path below.
  struct Group {
    Space sp;
    uint32_t reg;
    int64_t lo = 0, hi = 0;  // the least and greatest immediate (as signed)
    uint32_t members = 0;
    Value *ok = nullptr, *cls = nullptr, *off = nullptr, *off0 = nullptr, *least = nullptr, *idx = nullptr;
    Value *hlo0 = nullptr, *hlo1 = nullptr, *hidx0 = nullptr, *hidx1 = nullptr;
    // The group may be a strided row of stride 16 (a four-word vector's words).
    bool strided = false;
  };
  // Each load's and store's address as one register (at its version: how
  // many writes to it the block made before) plus an immediate, where it is
  // one: a register and an immediate, or two registers whose sum an `add`
  // earlier in the block left in a register that still holds it (the
  // lowering folds `add x, a, b` into the access at x + 0 as [a + b], beside
  // the accesses at [x + 4], [x + 8], ... of the same vector).
  struct Addr {
    bool ok = false;
    uint32_t reg = 0, version = 0;
    int64_t imm = 0;
  };
  std::vector<Addr> addr_of(n);
  {
    std::map<uint32_t, uint32_t> version;
    std::map<std::tuple<uint32_t, uint32_t, uint32_t, uint32_t>, std::pair<uint32_t, uint32_t>> sums;
    for (uint32_t k = 0; k < n; ++k) {
      const Instr& in = blk.instrs[k];
      const OpKind kind = op_info(in.op).kind;
      if (kind == OpKind::Load || kind == OpKind::Store) {
        if (in.a.imm != in.b.imm) {
          const uint32_t reg = in.a.imm ? in.b.v : in.a.v;
          addr_of[k] = {true, reg, version[reg], int64_t(int32_t(in.a.imm ? in.a.v : in.b.v))};
        } else if (!in.a.imm) {
          for (const auto& key : {std::tuple{in.a.v, version[in.a.v], in.b.v, version[in.b.v]},
                                  std::tuple{in.b.v, version[in.b.v], in.a.v, version[in.a.v]}}) {
            const auto it = sums.find(key);
            if (it != sums.end() && version[it->second.first] == it->second.second) {
              addr_of[k] = {true, it->second.first, it->second.second, 0};
              break;
            }
          }
        }
      }
      if (in.writes_reg()) version[in.dst]++;
      if (in.op == Op::ADD && !in.a.imm && !in.b.imm && in.dst != in.a.v && in.dst != in.b.v)
        sums[{in.a.v, version[in.a.v], in.b.v, version[in.b.v]}] = {in.dst, version[in.dst]};
    }
  }
  std::vector<Group> groups;
  std::vector<int> group_of(n, -1);
  std::vector<int64_t> imm_of(n, 0);
  {
    std::map<std::tuple<int, uint32_t, uint32_t, uint32_t>, int> open;
    for (uint32_t k = 0; k < n; ++k) {
      const Instr& in = blk.instrs[k];
      if (op_info(in.op).kind == OpKind::Load && in.bytes == 4 &&
          (in.space == Space::Global || in.space == Space::Shared || in.space == Space::Param) && addr_of[k].ok) {
        const uint32_t reg = addr_of[k].reg;
        const uint32_t k32 = uint32_t(addr_of[k].imm);
        const int64_t imm = addr_of[k].imm;
        auto [it, fresh] = open.try_emplace({int(in.space), reg, addr_of[k].version, k32 & 3u}, int(groups.size()));
        if (fresh) groups.push_back(Group{in.space, reg, imm, imm});
        Group& g = groups[size_t(it->second)];
        g.lo = std::min(g.lo, imm);
        g.hi = std::max(g.hi, imm);
        g.members++;
        group_of[k] = it->second;
        imm_of[k] = imm;
      }
    }
    for (uint32_t k = 0; k < n; ++k)
      if (group_of[k] >= 0 && groups[size_t(group_of[k])].members < 2) group_of[k] = -1;
    // Only groups shaped as a four-word vector access's words (three or
    // more, the immediates reaching 12 past the least) get the strided
    // class, which costs code to compile.  (Two-word ones at 8 bytes a lane
    // are the half-warps' spans already, on hosts with AVX-512.)
    for (Group& g : groups)
      g.strided = g.sp != Space::Param && g.hi - g.lo == 12 && g.members >= 3;
  }
  // Store groups: S / 4 consecutive stores of the block (no other store
  // between them) of 4 bytes to global or shared memory at one register,
  // unchanged between them, plus immediates at exactly 0, 4, .., S - 4 from
  // the least, for a stride S of kStrides.  Where their lanes form the
  // strided row they write the S * 32 bytes from the first lane's offset,
  // each lane's words once: one contiguous store of those bytes, the
  // members' values interleaved, writes what the stores in order would.
  struct StoreGroup {
    uint32_t stride;
    std::vector<uint32_t> members;  // instruction indexes, by immediate
  };
  std::vector<StoreGroup> store_groups;
  std::vector<int> store_group_of(n, -1);
  {
    struct Member {
      uint32_t k, reg, version;
      Space sp;
      int64_t imm;
    };
    std::vector<Member> run;  // the stores since the last that could not join one
    auto close = [&] {
      for (size_t at = 0; at < run.size();) {
        bool made = false;
        for (uint32_t S : kStrides) {
          const size_t m = S / 4;
          if (at + m > run.size()) continue;
          bool same = true;
          for (size_t j = at + 1; j < at + m; ++j)
            same = same && run[j].sp == run[at].sp && run[j].reg == run[at].reg && run[j].version == run[at].version;
          if (!same) continue;
          int64_t lo = run[at].imm;
          for (size_t j = at; j < at + m; ++j) lo = std::min(lo, run[j].imm);
          std::vector<int> slot(m, -1);
          bool exact = true;
          for (size_t j = at; j < at + m && exact; ++j) {
            const int64_t dist = run[j].imm - lo;
            exact = dist % 4 == 0 && dist / 4 < int64_t(m) && slot[size_t(dist / 4)] < 0;
            if (exact) slot[size_t(dist / 4)] = int(run[j].k);
          }
          if (!exact) continue;
          StoreGroup sg{S, {}};
          for (int k : slot) {
            sg.members.push_back(uint32_t(k));
            store_group_of[size_t(k)] = int(store_groups.size());
          }
          store_groups.push_back(std::move(sg));
          at += m;
          made = true;
          break;
        }
        if (!made) ++at;
      }
      run.clear();
    };
    for (uint32_t k = 0; k < n; ++k) {
      const Instr& in = blk.instrs[k];
      if (op_info(in.op).kind == OpKind::Store) {
        if (in.bytes == 4 && (in.space == Space::Global || in.space == Space::Shared) && addr_of[k].ok)
          run.push_back({k, addr_of[k].reg, addr_of[k].version, in.space, addr_of[k].imm});
        else
          close();
      }
    }
    close();
  }
  // Every lane active, lane l at the first lane's offset `off0` + S l.
  auto strided_test = [&](Value* off, Value* off0, uint32_t S) -> Value* {
    std::vector<Constant*> row;
    for (uint32_t l = 0; l < N; ++l) row.push_back(B.getInt32(S * l));
    return B.CreateAnd(
        B.CreateAndReduce(B.CreateICmpEQ(off, B.CreateAdd(B.CreateVectorSplat(N, off0), ConstantVector::get(row)))),
        B.CreateICmpEQ(mask64, B.getInt64(0xffffffffu)));
  };
  // A coalesced row (stride 4).  Returns the first lane's offset and the test.
  auto row_test = [&](Value* off) -> std::pair<Value*, Value*> {
    Value* off0 = B.CreateExtractElement(off, uint64_t(0));
    return {off0, strided_test(off, off0, 4)};
  };
  // The warp's span: every active lane's word among the 32 from the least
  // active offset on (a broadcast, rows of a tile, a row read twice), the
  // 128 bytes (reaching `ext` bytes further) inside the window of `size`
  // bytes: the least offset, each lane's word number from it, the test.
  struct Span {
    Value *ok, *least, *idx;
  };
  auto span_test = [&](Value* off, Value* size, uint64_t ext) {
    Value* least = B.CreateUnaryIntrinsic(Intrinsic::vector_reduce_umin, B.CreateSelect(active, off, splat(~0u)));
    Value* rel = B.CreateSub(off, B.CreateVectorSplat(N, least));
    Value* inside = B.CreateAndReduce(B.CreateOr(B.CreateICmpULE(rel, splat(4 * N - 4)), B.CreateNot(active)));
    Value* room = B.CreateAnd(B.CreateICmpUGE(size, B.getInt64(4 * N + ext)),
                              B.CreateICmpULE(B.CreateAdd(B.CreateZExt(least, i64), B.getInt64(ext)),
                                              B.CreateSub(size, B.getInt64(4 * N))));
    return Span{B.CreateAnd(inside, room), least, B.CreateLShr(rel, splat(2))};
  };
  // The half-warps' spans: each half's active lanes' words among the 32
  // from that half's least active offset, both halves with active lanes and
  // both spans (reaching `ext` bytes further) inside the window of `size`
  // bytes: a tile's rows read by 16-lane rows, which a single span misses.
  struct Halves {
    Value *ok, *lo0, *lo1, *idx0, *idx1;
  };
  auto halves = [&](Value* off, Value* size, uint64_t ext) {
    std::vector<int> h0, h1;
    for (int l = 0; l < 16; ++l) h0.push_back(l), h1.push_back(16 + l);
    Halves h{};
    Value* ok = B.CreateICmpUGE(size, B.getInt64(4 * N + ext));
    Value* los[2];
    Value* idxs[2];
    for (int k = 0; k < 2; ++k) {
      const std::vector<int>& hk = k ? h1 : h0;
      Value* o = B.CreateShuffleVector(off, hk);
      Value* a = B.CreateShuffleVector(active, hk);
      Value* lo = B.CreateUnaryIntrinsic(Intrinsic::vector_reduce_umin,
                                         B.CreateSelect(a, o, ConstantVector::getSplat(ElementCount::getFixed(16),
                                                                                       B.getInt32(~0u))));
      Value* rel = B.CreateSub(o, B.CreateVectorSplat(16, lo));
      Value* inside = B.CreateAndReduce(
          B.CreateOr(B.CreateICmpULE(rel, ConstantVector::getSplat(ElementCount::getFixed(16), B.getInt32(4 * N - 4))),
                     B.CreateNot(a)));
      Value* room = B.CreateICmpULE(B.CreateAdd(B.CreateZExt(lo, i64), B.getInt64(ext)),
                                    B.CreateSub(size, B.getInt64(4 * N)));
      ok = B.CreateAnd(ok, B.CreateAnd(B.CreateOrReduce(a), B.CreateAnd(inside, room)));
      los[k] = lo;
      idxs[k] = B.CreateLShr(rel, ConstantVector::getSplat(ElementCount::getFixed(16), B.getInt32(2)));
    }
    h.ok = ok;
    h.lo0 = los[0];
    h.lo1 = los[1];
    h.idx0 = idxs[0];
    h.idx1 = idxs[1];
    return h;
  };
  // Four 64-byte loads, two at each half's least offset plus `d`, and each
  // half's lanes' words picked by its own permute.
  auto halves_load = [&](Value* base, const Halves& h, uint32_t d) -> Value* {
    auto* V16 = FixedVectorType::get(i32, 16);
    Function* perm = Intrinsic::getDeclaration(mod.get(), Intrinsic::x86_avx512_vpermi2var_d_512);
    Value* p[2];
    for (int k = 0; k < 2; ++k) {
      Value* at = B.CreateGEP(B.getInt8Ty(), base, B.CreateZExt(B.CreateAdd(k ? h.lo1 : h.lo0, B.getInt32(d)), i64));
      Value* w0 = B.CreateAlignedLoad(V16, at, Align(4));
      Value* w1 = B.CreateAlignedLoad(V16, B.CreateConstInBoundsGEP1_64(B.getInt8Ty(), at, 64), Align(4));
      p[k] = B.CreateCall(perm, {w0, k ? h.idx1 : h.idx0, w1});
    }
    std::vector<int> both;
    for (int l = 0; l < 32; ++l) both.push_back(l);
    return B.CreateShuffleVector(p[0], p[1], both);
  };
  // Strided rows (S > 4): the S * 32 bytes from the first lane's offset
  // hold every lane's S bytes (a vector access of S / 4 words a lane, split
  // into its words by the lowering): one contiguous load (or store) of them
  // and a shuffle take the place of a gather (or scatter).
  // The S * 32 bytes at `at`, and lane l's word at byte S l + d of them.
  auto strided_load = [&](Value* at, uint32_t S, uint32_t d) -> Value* {
    Value* all = B.CreateAlignedLoad(FixedVectorType::get(i32, S * N / 4), at, Align(4));
    std::vector<int> pick;
    for (uint32_t l = 0; l < N; ++l) pick.push_back(int((S * l + d) / 4));
    return B.CreateShuffleVector(all, pick);
  };
  // The group's test and classification, at its first member (on the
  // block's straight path, so every later member sees them): `ok`, and
  // `cls` 0 a coalesced row, 1 a span (permute), 2 a gather, 3 the
  // half-warps' spans.
  auto group_head = [&](Group& g) {
    Value* size = win_field(g.sp, offsetof(Env::Window, size), i64);
    Value* sub = win_field(g.sp, offsetof(Env::Window, sub), i32);
    Value* fast = win_field(g.sp, offsetof(Env::Window, fast), i32);
    const uint64_t ext = uint64_t(g.hi - g.lo);
    Value* addr = B.CreateAdd(get(Operand::reg(g.reg)), splat(uint32_t(g.lo)));
    Value* off = B.CreateSub(addr, B.CreateVectorSplat(N, sub));
    Value* big = B.CreateICmpUGE(size, B.getInt64(4 + ext));
    Value* lim64 = B.CreateSub(size, B.getInt64(4 + ext));
    Value* lim = B.CreateTrunc(B.CreateSelect(B.CreateICmpUGT(lim64, B.getInt64(0xffffffffu)),
                                              B.getInt64(0xffffffffu), lim64),
                               i32);
    Value* bad = B.CreateOr(B.CreateICmpUGT(off, B.CreateVectorSplat(N, lim)),
                            B.CreateICmpNE(B.CreateAnd(addr, splat(3)), splat(0)));
    bad = B.CreateOrReduce(B.CreateAnd(bad, active));
    g.ok = B.CreateAnd(B.CreateAnd(big, B.CreateNot(bad)), B.CreateICmpNE(fast, B.getInt32(0)));
    g.off = off;
    Value* is_row;
    std::tie(g.off0, is_row) = row_test(off);
    Value* cls = B.CreateSelect(is_row, B.getInt32(0), B.getInt32(2));
    if (permute) {
      const Span sp = span_test(off, size, ext);
      g.least = sp.least, g.idx = sp.idx;
      const Halves h = halves(off, size, ext);
      g.hlo0 = h.lo0, g.hlo1 = h.lo1, g.hidx0 = h.idx0, g.hidx1 = h.idx1;
      cls = B.CreateSelect(is_row, B.getInt32(0),
                           B.CreateSelect(sp.ok, B.getInt32(1), B.CreateSelect(h.ok, B.getInt32(3), B.getInt32(2))));
    }
    // Class 4: the strided row of stride 16.  Its 512 bytes are inside the
    // window wherever `ok` holds: the members reach 12 bytes past the
    // least, so lane 31's last word ends the 512 bytes.
    if (g.strided) cls = B.CreateSelect(strided_test(off, g.off0, 16), B.getInt32(4), cls);
    g.cls = cls;
  };
  // Two 16-word loads from `at` and each lane's word picked by `idx` (its
  // word's number from `at`, below 32): the span path.
  auto span_load = [&](Value* at, Value* idx) -> Value* {
    auto* V16 = FixedVectorType::get(i32, 16);
    Value* w0 = B.CreateAlignedLoad(V16, at, Align(4));
    Value* w1 = B.CreateAlignedLoad(V16, B.CreateConstInBoundsGEP1_64(B.getInt8Ty(), at, 64), Align(4));
    Function* perm = Intrinsic::getDeclaration(mod.get(), Intrinsic::x86_avx512_vpermi2var_d_512);
    std::vector<int> half0, half1, both;
    for (int l = 0; l < 16; ++l) half0.push_back(l), half1.push_back(16 + l);
    for (int l = 0; l < 32; ++l) both.push_back(l);
    Value* p0 = B.CreateCall(perm, {w0, B.CreateShuffleVector(idx, half0), w1});
    Value* p1 = B.CreateCall(perm, {w0, B.CreateShuffleVector(idx, half1), w1});
    return B.CreateShuffleVector(p0, p1, both);
  };
  for (uint32_t k = 0; k < n; ++k) {
    const Instr& in = blk.instrs[k];
    const OpInfo& info = op_info(in.op);
    Value* r = nullptr;
    if (info.kind == OpKind::Alu) {
      Value* a = get(in.a);
      Value* b = info.arity >= 2 ? get(in.b) : nullptr;
      Value* c = info.arity >= 3 ? get(in.c) : nullptr;
      Value* k32 = splat(32);
      switch (in.op) {
        case Op::MOV: r = a; break;
        case Op::ADD: r = B.CreateAdd(a, b); break;
        case Op::SUB: r = B.CreateSub(a, b); break;
        case Op::MUL: r = B.CreateMul(a, b); break;
        case Op::MULHU:
          r = B.CreateTrunc(B.CreateLShr(B.CreateMul(B.CreateZExt(a, V64), B.CreateZExt(b, V64)), 32), V);
          break;
        case Op::MULHS:
          r = B.CreateTrunc(B.CreateLShr(B.CreateMul(B.CreateSExt(a, V64), B.CreateSExt(b, V64)), 32), V);
          break;
        case Op::AND: r = B.CreateAnd(a, b); break;
        case Op::OR: r = B.CreateOr(a, b); break;
        case Op::XOR: r = B.CreateXor(a, b); break;
        case Op::SHL:  // b >= 32: 0
          r = B.CreateSelect(B.CreateICmpUGE(b, k32), splat(0), B.CreateShl(a, B.CreateAnd(b, splat(31))));
          break;
        case Op::SHR:
          r = B.CreateSelect(B.CreateICmpUGE(b, k32), splat(0), B.CreateLShr(a, B.CreateAnd(b, splat(31))));
          break;
        case Op::SAR:  // b >= 32: by 31
          r = B.CreateAShr(a, B.CreateSelect(B.CreateICmpUGE(b, k32), splat(31), b));
          break;
        case Op::SEQ: r = bool32(B.CreateICmpEQ(a, b)); break;
        case Op::SNE: r = bool32(B.CreateICmpNE(a, b)); break;
        case Op::SLT: r = bool32(B.CreateICmpSLT(a, b)); break;
        case Op::SLE: r = bool32(B.CreateICmpSLE(a, b)); break;
        case Op::SLTU: r = bool32(B.CreateICmpULT(a, b)); break;
        case Op::SLEU: r = bool32(B.CreateICmpULE(a, b)); break;
        case Op::SEL: r = B.CreateSelect(B.CreateICmpNE(a, splat(0)), b, c); break;
        case Op::MIN: r = B.CreateSelect(B.CreateICmpSLT(a, b), a, b); break;
        case Op::MAX: r = B.CreateSelect(B.CreateICmpSGT(a, b), a, b); break;
        case Op::MINU: r = B.CreateSelect(B.CreateICmpULT(a, b), a, b); break;
        case Op::MAXU: r = B.CreateSelect(B.CreateICmpUGT(a, b), a, b); break;
        case Op::CSUB: r = B.CreateSelect(B.CreateICmpUGE(a, b), B.CreateSub(a, b), a); break;
        case Op::POPC: r = intr(Intrinsic::ctpop, {a}); break;
        case Op::CLZ: r = intr(Intrinsic::ctlz, {a, B.getFalse()}); break;  // 0: 32
        case Op::BREV: r = intr(Intrinsic::bitreverse, {a}); break;
        default: break;
      }
    } else if (info.kind == OpKind::Special) {
      switch (in.op) {
        case Op::LANE: {
          std::vector<Constant*> lanes;
          for (uint32_t l = 0; l < N; ++l) lanes.push_back(B.getInt32(l));
          r = ConstantVector::get(lanes);
          break;
        }
        case Op::WARP: r = env_field(offsetof(Env, warp)); break;
        case Op::CTA: r = env_field(offsetof(Env, cta)); break;
        case Op::CLOCK: r = env_field(offsetof(Env, clock)); break;
        default: break;
      }
    }
    if (r) {
      val[in.dst] = r;
      dirty[in.dst] = true;
      continue;
    }
    if (in.op == Op::FCMP && in.fmod.cmp != FCmp::None) {
      // A comparison does not round: the host's ordered or unordered
      // predicate (float_ref.cpp's compare), inputs flushed under .ftz.
      auto* VF = FixedVectorType::get(B.getFloatTy(), N);
      auto operand = [&](Value* v) { return B.CreateBitCast(flush_ftz(v, in.fmod.ftz), VF); };
      Value* x = operand(get(in.a));
      Value* y = operand(get(in.b));
      CmpInst::Predicate pr = CmpInst::FCMP_FALSE;
      switch (in.fmod.cmp) {
        case FCmp::Eq: pr = CmpInst::FCMP_OEQ; break;
        case FCmp::Ne: pr = CmpInst::FCMP_ONE; break;
        case FCmp::Lt: pr = CmpInst::FCMP_OLT; break;
        case FCmp::Le: pr = CmpInst::FCMP_OLE; break;
        case FCmp::Gt: pr = CmpInst::FCMP_OGT; break;
        case FCmp::Ge: pr = CmpInst::FCMP_OGE; break;
        case FCmp::Equ: pr = CmpInst::FCMP_UEQ; break;
        case FCmp::Neu: pr = CmpInst::FCMP_UNE; break;
        case FCmp::Ltu: pr = CmpInst::FCMP_ULT; break;
        case FCmp::Leu: pr = CmpInst::FCMP_ULE; break;
        case FCmp::Gtu: pr = CmpInst::FCMP_UGT; break;
        case FCmp::Geu: pr = CmpInst::FCMP_UGE; break;
        case FCmp::Num: pr = CmpInst::FCMP_ORD; break;
        case FCmp::Nan: pr = CmpInst::FCMP_UNO; break;
        case FCmp::None: break;
      }
      val[in.dst] = bool32(B.CreateFCmp(pr, x, y));
      dirty[in.dst] = true;
      continue;
    }
    // Minimum and maximum, f32 to a 32-bit integer and f32 to an integral
    // f32 round in a way fixed by the instruction, never by the host's mode
    // (float_ref.cpp's min, max, to_int and round_int): compiled in every
    // case.  FRINT without an integer rounding (cvt.ftz/.sat.f32.f32) only
    // flushes and saturates.
    const bool integral = in.fmod.rnd == FRnd::Rni || in.fmod.rnd == FRnd::Rzi || in.fmod.rnd == FRnd::Rmi ||
                          in.fmod.rnd == FRnd::Rpi;
    if (((in.op == Op::FMIN || in.op == Op::FMAX) && !in.fmod.sat) ||
        ((in.op == Op::F2I || in.op == Op::F2U) && !in.fmod.sat) || in.op == Op::FRINT) {
      auto* VF = FixedVectorType::get(B.getFloatTy(), N);
      auto flushed = [&](Value* v) { return flush_ftz(v, in.fmod.ftz); };
      auto rounded = [&](Value* x) -> Value* {  // an integral f32, exactly
        Intrinsic::ID id = Intrinsic::roundeven;
        switch (in.fmod.rnd) {
          case FRnd::Rzi: case FRnd::Rz: id = Intrinsic::trunc; break;
          case FRnd::Rmi: case FRnd::Rm: id = Intrinsic::floor; break;
          case FRnd::Rpi: case FRnd::Rp: id = Intrinsic::ceil; break;
          default: break;  // to nearest, ties to even
        }
        return B.CreateCall(Intrinsic::getDeclaration(mod.get(), id, {VF}), {x});
      };
      Value* a = flushed(get(in.a));
      Value* res = nullptr;
      if (in.op == Op::FMIN || in.op == Op::FMAX) {
        // A NaN operand gives the other one, two give the canonical NaN;
        // -0 is below +0.
        Value* b = flushed(get(in.b));
        const bool mn = in.op == Op::FMIN;
        Value* x = B.CreateBitCast(a, VF);
        Value* y = B.CreateBitCast(b, VF);
        Value* either = B.CreateOr(a, b);
        Value* tie = mn ? B.CreateSelect(B.CreateICmpNE(B.CreateAnd(either, splat(0x80000000u)), splat(0)), either, a)
                        : B.CreateAnd(a, b);
        Value* first = B.CreateFCmp(mn ? CmpInst::FCMP_OLT : CmpInst::FCMP_OGT, x, y);
        res = B.CreateSelect(B.CreateFCmpOEQ(x, y), tie, B.CreateSelect(first, a, b));
        Value* na = is_nan(a);
        Value* nb = is_nan(b);
        res = B.CreateSelect(nb, a, res);
        res = B.CreateSelect(na, b, res);
        res = B.CreateSelect(B.CreateAnd(na, nb), splat(0x7FFFFFFFu), res);
      } else if (in.op == Op::FRINT) {
        // Then float_ref's finish: NaN canonical, .ftz, .sat to [0, 1].
        res = integral ? B.CreateBitCast(rounded(B.CreateBitCast(a, VF)), V) : a;
        res = flushed(canonical(res));
        if (in.fmod.sat) {
          Value* low = B.CreateOr(is_nan(res), B.CreateICmpNE(B.CreateAnd(res, splat(0x80000000u)), splat(0)));
          Value* high = B.CreateFCmp(CmpInst::FCMP_OGT, B.CreateBitCast(res, VF),
                                     ConstantFP::get(VF, 1.0));
          res = B.CreateSelect(low, splat(0), B.CreateSelect(high, splat(0x3F800000u), res));
        }
      } else {
        // Saturated to the integer's range, NaN 0: the saturating conversions.
        const Intrinsic::ID id = in.op == Op::F2I ? Intrinsic::fptosi_sat : Intrinsic::fptoui_sat;
        res = B.CreateCall(Intrinsic::getDeclaration(mod.get(), id, {V, VF}), {rounded(B.CreateBitCast(a, VF))});
      }
      val[in.dst] = res;
      dirty[in.dst] = true;
      continue;
    }
    if (info.kind == OpKind::Float &&
        (in.op == Op::FADD || in.op == Op::FSUB || in.op == Op::FMUL || in.op == Op::FFMA || in.op == Op::FDIV ||
         in.op == Op::I2F || in.op == Op::U2F) &&
        (in.fmod.rnd == FRnd::None || in.fmod.rnd == FRnd::Rn) && !in.fmod.ftz && !in.fmod.sat) {
      // Round to nearest without .ftz or .sat while the host rounds to
      // nearest (float_eval.cpp's inline case): the host's IEEE operation,
      // a NaN made canonical; else the interpreter's.
      Value* hn = field(offsetof(Env, host_nearest), i32);
      BasicBlock* fastb = BasicBlock::Create(C, "f.fast", F);
      BasicBlock* slowb = BasicBlock::Create(C, "f.slow", F);
      BasicBlock* merge = BasicBlock::Create(C, "f.done", F);
      const bool convert = in.op == Op::I2F || in.op == Op::U2F;
      Value* a = get(in.a);
      Value* b = convert ? nullptr : get(in.b);
      Value* c = in.op == Op::FFMA ? get(in.c) : nullptr;
      B.CreateCondBr(B.CreateICmpEQ(hn, B.getInt32(1)), fastb, slowb, MDBuilder(C).createBranchWeights(1 << 20, 1));
      B.SetInsertPoint(fastb);
      auto* VF = FixedVectorType::get(B.getFloatTy(), N);
      Value* x = B.CreateBitCast(a, VF);
      Value* y = convert ? nullptr : B.CreateBitCast(b, VF);
      Value* f = in.op == Op::I2F   ? B.CreateSIToFP(a, VF)  // rounded by the host's mode: to nearest here
                 : in.op == Op::U2F ? B.CreateUIToFP(a, VF)
                 : in.op == Op::FADD ? B.CreateFAdd(x, y)
                 : in.op == Op::FSUB ? B.CreateFSub(x, y)
                 : in.op == Op::FMUL ? B.CreateFMul(x, y)
                 : in.op == Op::FDIV ? B.CreateFDiv(x, y)  // correctly rounded, as float_ref.cpp's div
                                     : static_cast<Value*>(B.CreateCall(
                                           Intrinsic::getDeclaration(mod.get(), Intrinsic::fma, {VF}),
                                           {x, y, B.CreateBitCast(c, VF)}));
      Value* bits = B.CreateBitCast(f, V);
      Value* fv = canonical(bits);
      B.CreateBr(merge);
      B.SetInsertPoint(slowb);
      const auto slow = interpreted(k, in.dst, merge, false);  // float operations do not fault
      join(in.dst, merge, fv, fastb, slow);
      continue;
    }
    if (info.kind == OpKind::Store) {
      Value* good = B.getFalse();
      Deferred d{k, in.bytes, nullptr, nullptr, B.getFalse(), nullptr};
      if (int(in.space) < 4) {
        const Access ac = access(in.space, B.CreateAdd(get(in.a), get(in.b)), in.bytes);
        Value* base = ac.base;
        Value* off = ac.off;
        good = B.CreateNot(ac.slow);
        Value* off64 = lane_offsets(in.space, off);
        if (in.space != Space::Local && in.bytes == 4) {
          Value* off0;
          std::tie(off0, d.row) = row_test(off);
          d.base0 = B.CreateGEP(B.getInt8Ty(), base, B.CreateZExt(off0, i64));
          d.off = off;
        }
        d.ptrs = B.CreateGEP(B.getInt8Ty(), base, off64);
        Value* v = get(in.c);
        if (in.bytes < 4) v = B.CreateAnd(v, splat((1u << (8 * in.bytes)) - 1));
        d.vals = v;
      }
      Value* go_slow = B.CreateOr(B.CreateNot(good), B.CreateICmpNE(B.CreateLoad(i32, pend), B.getInt32(0)));
      BasicBlock* slowb = BasicBlock::Create(C, "st.slow", F);
      BasicBlock* spillb = BasicBlock::Create(C, "st.spill", F);
      BasicBlock* execb = BasicBlock::Create(C, "st.exec", F);
      BasicBlock* failb = BasicBlock::Create(C, "st.fault", F);
      BasicBlock* okb = BasicBlock::Create(C, "st.ok", F);
      BasicBlock* next = BasicBlock::Create(C, "st.next", F);
      B.CreateCondBr(go_slow, slowb, next, MDBuilder(C).createBranchWeights(1, 1 << 20));
      B.SetInsertPoint(slowb);
      B.CreateCondBr(B.CreateICmpNE(B.CreateLoad(i32, pend), B.getInt32(0)), execb, spillb);
      B.SetInsertPoint(spillb);  // the earlier stores, all in range, to the pending ones
      for (const Deferred& e : deferred) {
        if (!e.ptrs) continue;  // a print store: pend is set whenever one ran
        B.CreateStore(B.CreatePtrToInt(e.ptrs, FixedVectorType::get(i64, N)), ptrbuf);
        B.CreateStore(e.vals, valbuf);
        B.CreateCall(aty, afn, {env, ptrbuf, valbuf, mask64, B.getInt32(e.bytes)});
      }
      B.CreateBr(execb);
      B.SetInsertPoint(execb);
      store_dirty();
      Value* ok = B.CreateCall(hty, hfn, {env, B.getInt32(k), mask64});
      B.CreateCondBr(B.CreateICmpEQ(ok, B.getInt32(0)), failb, okb);
      B.SetInsertPoint(failb);
      B.CreateRet(B.getInt32(k));
      B.SetInsertPoint(okb);
      B.CreateStore(B.getInt32(1), pend);
      B.CreateBr(next);
      B.SetInsertPoint(next);
      if (d.ptrs) deferred.push_back(d);
      else deferred.push_back({k, in.bytes, nullptr, nullptr, nullptr, nullptr});  // never fast: pend is set
      continue;
    }
    if (info.kind == OpKind::Atomic && int(in.space) < 4) {
      // Every active lane's word in range and aligned (the interpreter's
      // check): the lanes one after another in lane order, each seeing the
      // ones before it; in global memory each read-modify-write is one
      // compare-and-swap loop (seq_cst), as the interpreter's atomic_rmw,
      // elsewhere a plain read and write.  Else the interpreter's own.
      const Access ac = access(in.space, get(in.a), 4);
      Value* any = ac.slow;
      Value* bv = get(in.b);
      Value* cv = get(in.c);
      BasicBlock* fastb = BasicBlock::Create(C, "at.fast", F);
      BasicBlock* headb = BasicBlock::Create(C, "at.lane", F);
      BasicBlock* bodyb = BasicBlock::Create(C, "at.body", F);
      BasicBlock* latchb = BasicBlock::Create(C, "at.next", F);
      BasicBlock* endb = BasicBlock::Create(C, "at.end", F);
      BasicBlock* slowb = BasicBlock::Create(C, "at.slow", F);
      BasicBlock* merge = BasicBlock::Create(C, "at.done", F);
      AllocaInst* res = nullptr;
      {
        IRBuilder<> E(&F->getEntryBlock(), F->getEntryBlock().begin());
        res = E.CreateAlloca(V);
      }
      B.CreateCondBr(any, slowb, fastb, MDBuilder(C).createBranchWeights(1, 1 << 20));
      B.SetInsertPoint(fastb);
      Value* ptrs = B.CreateGEP(B.getInt8Ty(), ac.base, lane_offsets(in.space, ac.off));
      B.CreateAlignedStore(Constant::getNullValue(V), res, Align(4));  // the inactive lanes: defined, never written back
      B.CreateBr(headb);
      B.SetInsertPoint(headb);
      PHINode* l = B.CreatePHI(i32, 2);
      l->addIncoming(B.getInt32(0), fastb);
      Value* bit = B.CreateTrunc(B.CreateLShr(mask64, B.CreateZExt(l, i64)), B.getInt1Ty());
      B.CreateCondBr(bit, bodyb, latchb);
      B.SetInsertPoint(bodyb);
      Value* p = B.CreateExtractElement(ptrs, l);
      Value* bl = B.CreateExtractElement(bv, l);
      Value* cl = B.CreateExtractElement(cv, l);
      auto f = [&](Value* o) -> Value* {
        switch (in.atom) {
          case AtomOp::ADD: return B.CreateAdd(o, bl);
          case AtomOp::MIN: return B.CreateSelect(B.CreateICmpSLT(o, bl), o, bl);
          case AtomOp::MAX: return B.CreateSelect(B.CreateICmpSGT(o, bl), o, bl);
          case AtomOp::MINU: return B.CreateSelect(B.CreateICmpULT(o, bl), o, bl);
          case AtomOp::MAXU: return B.CreateSelect(B.CreateICmpUGT(o, bl), o, bl);
          case AtomOp::EXCH: return bl;
          case AtomOp::CAS: return B.CreateSelect(B.CreateICmpEQ(o, bl), cl, o);
          case AtomOp::AND: return B.CreateAnd(o, bl);
          case AtomOp::OR: return B.CreateOr(o, bl);
          case AtomOp::XOR: return B.CreateXor(o, bl);
          case AtomOp::INC: return B.CreateSelect(B.CreateICmpUGE(o, bl), B.getInt32(0), B.CreateAdd(o, B.getInt32(1)));
          case AtomOp::DEC:
            return B.CreateSelect(B.CreateOr(B.CreateICmpEQ(o, B.getInt32(0)), B.CreateICmpUGT(o, bl)), bl,
                                  B.CreateSub(o, B.getInt32(1)));
          case AtomOp::FADD: break;  // never compiled (slot())
        }
        return o;
      };
      Value* old = nullptr;
      if (in.space == Space::Global) {
        LoadInst* first = B.CreateAlignedLoad(i32, p, Align(4));
        first->setAtomic(AtomicOrdering::Monotonic);
        BasicBlock* casb = BasicBlock::Create(C, "at.cas", F);
        BasicBlock* from = B.GetInsertBlock();
        B.CreateBr(casb);
        B.SetInsertPoint(casb);
        PHINode* o = B.CreatePHI(i32, 2);
        o->addIncoming(first, from);
        Value* pair = B.CreateAtomicCmpXchg(p, o, f(o), MaybeAlign(4), AtomicOrdering::SequentiallyConsistent,
                                            AtomicOrdering::Monotonic);
        Value* seen = B.CreateExtractValue(pair, 0);
        o->addIncoming(seen, casb);
        BasicBlock* doneb = BasicBlock::Create(C, "at.cas.done", F);
        B.CreateCondBr(B.CreateExtractValue(pair, 1), doneb, casb);
        B.SetInsertPoint(doneb);
        old = o;
      } else {
        old = B.CreateAlignedLoad(i32, p, Align(4));
        B.CreateAlignedStore(f(old), p, Align(4));
      }
      B.CreateStore(old, B.CreateInBoundsGEP(i32, res, l));
      B.CreateBr(latchb);
      B.SetInsertPoint(latchb);
      Value* l1 = B.CreateAdd(l, B.getInt32(1));
      l->addIncoming(l1, latchb);
      B.CreateCondBr(B.CreateICmpULT(l1, B.getInt32(N)), headb, endb);
      B.SetInsertPoint(endb);
      Value* got = B.CreateAlignedLoad(V, res, Align(4));
      B.CreateBr(merge);
      B.SetInsertPoint(slowb);
      const auto slow = interpreted(k, in.dst, merge, true);
      join(in.dst, merge, got, endb, slow);
      continue;
    }
    if (info.kind == OpKind::Load && int(in.space) < 4) {
      BasicBlock* merge = BasicBlock::Create(C, "ld.done", F);
      // A member of a load group whose test passed: its row, span or gather
      // at its immediate's distance from the group's least.
      Value* gval = nullptr;
      BasicBlock* gfrom = nullptr;
      if (group_of[k] >= 0) {
        Group& g = groups[size_t(group_of[k])];
        if (!g.ok) group_head(g);
        const uint32_t d = uint32_t(imm_of[k] - g.lo);
        Value* base = win_field(in.space, offsetof(Env::Window, base), ptr);
        BasicBlock* gb = BasicBlock::Create(C, "ldg", F);
        BasicBlock* own = BasicBlock::Create(C, "ldg.own", F);
        B.CreateCondBr(g.ok, gb, own, MDBuilder(C).createBranchWeights(1 << 20, 1));
        B.SetInsertPoint(gb);
        BasicBlock* rowb = BasicBlock::Create(C, "ldg.row", F);
        BasicBlock* spanb = BasicBlock::Create(C, "ldg.span", F);
        BasicBlock* gatherb = BasicBlock::Create(C, "ldg.gather", F);
        BasicBlock* joinb = BasicBlock::Create(C, "ldg.join", F);
        BasicBlock* halfb = BasicBlock::Create(C, "ldg.halves", F);
        SwitchInst* sw = B.CreateSwitch(g.cls, gatherb, 4);
        sw->addCase(B.getInt32(0), rowb);
        if (permute) sw->addCase(B.getInt32(1), spanb);
        if (permute) sw->addCase(B.getInt32(3), halfb);
        Value* tv = nullptr;
        BasicBlock* stridedb = nullptr;
        if (g.strided) {
          stridedb = BasicBlock::Create(C, "ldg.strided", F);
          sw->addCase(B.getInt32(4), stridedb);
          IRBuilderBase::InsertPointGuard keep(B);
          B.SetInsertPoint(stridedb);
          tv = strided_load(B.CreateGEP(B.getInt8Ty(), base, B.CreateZExt(g.off0, i64)), 16, d);
          B.CreateBr(joinb);
        }
        B.SetInsertPoint(rowb);
        Value* at0 = B.CreateGEP(B.getInt8Ty(), base, B.CreateZExt(B.CreateAdd(g.off0, B.getInt32(d)), i64));
        Value* rv = B.CreateAlignedLoad(V, at0, Align(4));
        B.CreateBr(joinb);
        Value* sv = nullptr;
        B.SetInsertPoint(spanb);
        if (permute) {
          Value* at = B.CreateGEP(B.getInt8Ty(), base, B.CreateZExt(B.CreateAdd(g.least, B.getInt32(d)), i64));
          sv = span_load(at, g.idx);
          B.CreateBr(joinb);
        } else {
          B.CreateUnreachable();
        }
        Value* hv = nullptr;
        B.SetInsertPoint(halfb);
        if (permute) {
          hv = halves_load(base, Halves{nullptr, g.hlo0, g.hlo1, g.hidx0, g.hidx1}, d);
          B.CreateBr(joinb);
        } else {
          B.CreateUnreachable();
        }
        B.SetInsertPoint(gatherb);
        Value* ptrs = B.CreateGEP(B.getInt8Ty(), base, B.CreateZExt(B.CreateAdd(g.off, splat(d)), V64));
        Value* gv = B.CreateMaskedGather(V, ptrs, Align(4), active, Constant::getNullValue(V));
        B.CreateBr(joinb);
        B.SetInsertPoint(joinb);
        PHINode* gp = B.CreatePHI(V, 5);
        gp->addIncoming(rv, rowb);
        if (permute) gp->addIncoming(sv, spanb);
        if (permute) gp->addIncoming(hv, halfb);
        gp->addIncoming(gv, gatherb);
        if (stridedb) gp->addIncoming(tv, stridedb);
        if (!permute) spanb->eraseFromParent(), halfb->eraseFromParent();
        gval = gp;
        gfrom = joinb;
        B.CreateBr(merge);
        B.SetInsertPoint(own);
      }
      // In range and aligned over the active lanes (the interpreter's
      // warp_offsets): a gather; else the interpreter's own load.
      const Access ac = access(in.space, B.CreateAdd(get(in.a), get(in.b)), in.bytes);
      Value* base = ac.base;
      Value* off = ac.off;
      Value* any = ac.slow;
      BasicBlock* fastb = BasicBlock::Create(C, "ld.fast", F);
      BasicBlock* slowb = BasicBlock::Create(C, "ld.slow", F);
      B.CreateCondBr(any, slowb, fastb, MDBuilder(C).createBranchWeights(1, 1 << 20));
      B.SetInsertPoint(fastb);
      Value* off64 = lane_offsets(in.space, off);
      Value* g = nullptr;
      BasicBlock* from_fast = fastb;
      if (in.bytes == 4 && in.space != Space::Local) {
        // A coalesced row: one vector load; else the span, the half-warps'
        // spans or a gather.
        const auto [off0, is_row] = row_test(off);
        BasicBlock* rowb = BasicBlock::Create(C, "ld.row", F);
        BasicBlock* spanq = BasicBlock::Create(C, "ld.span?", F);
        BasicBlock* spanb = BasicBlock::Create(C, "ld.span", F);
        BasicBlock* halfq = BasicBlock::Create(C, "ld.halves?", F);
        BasicBlock* halfb = BasicBlock::Create(C, "ld.halves", F);
        BasicBlock* gatherb = BasicBlock::Create(C, "ld.gather", F);
        BasicBlock* joinb = BasicBlock::Create(C, "ld.join", F);
        B.CreateCondBr(is_row, rowb, permute ? spanq : gatherb);
        B.SetInsertPoint(rowb);
        Value* rv = B.CreateAlignedLoad(V, B.CreateGEP(B.getInt8Ty(), base, B.CreateZExt(off0, i64)), Align(4));
        B.CreateBr(joinb);
        Value* sv = nullptr;
        Value* hv = nullptr;
        if (permute) {
          // The warp's span: two vector loads, each lane's word picked by a
          // two-source permute, instead of a gather.
          B.SetInsertPoint(spanq);
          Value* size = win_field(in.space, offsetof(Env::Window, size), i64);
          const Span sp = span_test(off, size, 0);
          B.CreateCondBr(sp.ok, spanb, halfq);
          B.SetInsertPoint(spanb);
          sv = span_load(B.CreateGEP(B.getInt8Ty(), base, B.CreateZExt(sp.least, i64)), sp.idx);
          B.CreateBr(joinb);
          B.SetInsertPoint(halfq);
          const Halves h = halves(off, size, 0);
          B.CreateCondBr(h.ok, halfb, gatherb);
          B.SetInsertPoint(halfb);
          hv = halves_load(base, h, 0);
          B.CreateBr(joinb);
        }
        B.SetInsertPoint(gatherb);
        Value* ptrs = B.CreateGEP(B.getInt8Ty(), base, off64);
        Value* gv = B.CreateMaskedGather(V, ptrs, Align(4), active, Constant::getNullValue(V));
        B.CreateBr(joinb);
        B.SetInsertPoint(joinb);
        PHINode* gp = B.CreatePHI(V, permute ? 4 : 2);
        gp->addIncoming(rv, rowb);
        if (permute) gp->addIncoming(sv, spanb);
        if (permute) gp->addIncoming(hv, halfb);
        gp->addIncoming(gv, gatherb);
        g = gp;
        from_fast = joinb;
        if (!permute)
          spanq->eraseFromParent(), spanb->eraseFromParent(), halfq->eraseFromParent(), halfb->eraseFromParent();
      } else {
        Value* ptrs = B.CreateGEP(B.getInt8Ty(), base, off64);
        Type* et = B.getIntNTy(8 * in.bytes);
        auto* vt = FixedVectorType::get(et, N);
        g = B.CreateMaskedGather(vt, ptrs, Align(in.bytes), active, Constant::getNullValue(vt));
        if (in.bytes < 4) g = in.sign ? B.CreateSExt(g, V) : B.CreateZExt(g, V);
      }
      B.CreateBr(merge);
      B.SetInsertPoint(slowb);
      const auto slow = interpreted(k, in.dst, merge, true);
      join(in.dst, merge, g, from_fast, slow);
      if (gval) cast<PHINode>(val[in.dst])->addIncoming(gval, gfrom);
      continue;
    }
    // Through the interpreter: the registers it reads are written back
    // first; the one it writes is read again after it.
    flush();
    Value* ok = B.CreateCall(hty, hfn, {env, B.getInt32(k), mask64});
    BasicBlock* fail = BasicBlock::Create(C, "fault", F);
    BasicBlock* next = BasicBlock::Create(C, "next", F);
    B.CreateCondBr(B.CreateICmpEQ(ok, B.getInt32(0)), fail, next);
    B.SetInsertPoint(fail);
    B.CreateRet(B.getInt32(k));
    B.SetInsertPoint(next);
    if (in.writes_reg()) val.erase(in.dst);
  }
  if (!deferred.empty()) {
    // Every store was in range (pend 0): written here, in order, each one's
    // lanes in lane order (a scatter writes lanes in that order too).
    BasicBlock* writeb = BasicBlock::Create(C, "st.write", F);
    BasicBlock* endb = BasicBlock::Create(C, "end", F);
    B.CreateCondBr(B.CreateICmpEQ(B.CreateLoad(i32, pend), B.getInt32(0)), writeb, endb);
    B.SetInsertPoint(writeb);
    // One store's lanes: a row or a scatter.
    auto write_one = [&](const Deferred& e) {
      Type* et = B.getIntNTy(8 * e.bytes);
      auto* vt = FixedVectorType::get(et, N);
      Value* v = e.bytes < 4 ? B.CreateTrunc(e.vals, vt) : e.vals;
      if (e.base0) {
        BasicBlock* rowb = BasicBlock::Create(C, "st.row", F);
        BasicBlock* scatb = BasicBlock::Create(C, "st.scatter", F);
        BasicBlock* joinb = BasicBlock::Create(C, "st.join", F);
        B.CreateCondBr(e.row, rowb, scatb);
        B.SetInsertPoint(rowb);
        B.CreateAlignedStore(v, e.base0, Align(4));
        B.CreateBr(joinb);
        B.SetInsertPoint(scatb);
        B.CreateMaskedScatter(v, e.ptrs, Align(e.bytes), active);
        B.CreateBr(joinb);
        B.SetInsertPoint(joinb);
      } else {
        B.CreateMaskedScatter(v, e.ptrs, Align(e.bytes), active);
      }
    };
    std::map<uint32_t, const Deferred*> by_index;
    for (const Deferred& e : deferred) by_index[e.index] = &e;
    std::vector<bool> written(store_groups.size(), false);
    for (const Deferred& e : deferred) {
      if (!e.ptrs) continue;  // a print store: pend is set whenever one ran
      const int sgi = store_group_of[e.index];
      if (sgi < 0) {
        write_one(e);
        continue;
      }
      if (written[size_t(sgi)]) continue;  // with its group's first
      written[size_t(sgi)] = true;
      const StoreGroup& sg = store_groups[size_t(sgi)];
      const Deferred& first = *by_index.at(sg.members[0]);  // the least immediate
      BasicBlock* sb = BasicBlock::Create(C, "st.strided", F);
      BasicBlock* eachb = BasicBlock::Create(C, "st.each", F);
      BasicBlock* joinb = BasicBlock::Create(C, "st.group", F);
      B.CreateCondBr(strided_test(first.off, B.CreateExtractElement(first.off, uint64_t(0)), sg.stride), sb, eachb);
      B.SetInsertPoint(sb);
      // The members' values side by side, then word S l / 4 + j of the
      // bytes from member j's lane l.
      std::vector<Value*> parts;
      for (uint32_t k : sg.members) parts.push_back(by_index.at(k)->vals);
      while (parts.size() > 1) {
        std::vector<Value*> next;
        for (size_t j = 0; j < parts.size(); j += 2) {
          const uint32_t w = cast<FixedVectorType>(parts[j]->getType())->getNumElements();
          std::vector<int> both;
          for (uint32_t x = 0; x < 2 * w; ++x) both.push_back(int(x));
          next.push_back(B.CreateShuffleVector(parts[j], parts[j + 1], both));
        }
        parts = std::move(next);
      }
      const uint32_t m = sg.stride / 4;
      std::vector<int> interleave;
      for (uint32_t q = 0; q < m * N; ++q) interleave.push_back(int((q % m) * N + q / m));
      B.CreateAlignedStore(B.CreateShuffleVector(parts[0], interleave), first.base0, Align(4));
      B.CreateBr(joinb);
      B.SetInsertPoint(eachb);
      for (uint32_t k : sg.members) write_one(*by_index.at(k));
      B.CreateBr(joinb);
      B.SetInsertPoint(joinb);
    }
    B.CreateBr(endb);
    B.SetInsertPoint(endb);
  }
  if (blk.term.kind == Term::BR) {
    // The condition's lanes as bits, for the terminator: reading the
    // register back right after its masked store would wait for the store.
    Value* c = get(Operand::reg(blk.term.cond));
    Value* bits = B.CreateBitCast(B.CreateICmpNE(c, splat(0)), i32);
    B.CreateAlignedStore(bits, B.CreateConstInBoundsGEP1_64(B.getInt8Ty(), env, offsetof(Env, cond_bits)), Align(4));
  }
  // The registers written back: a whole warp's with plain stores (the next
  // EXEC's loads of them take their values from the store buffer, which a
  // masked store does not forward), a partial warp's under the mask.
  bool any_dirty = false;
  for (auto& [r, d] : dirty) any_dirty |= d;
  if (any_dirty) {
    BasicBlock* fullb = BasicBlock::Create(C, "wb.full", F);
    BasicBlock* partb = BasicBlock::Create(C, "wb.part", F);
    BasicBlock* endb = BasicBlock::Create(C, "wb.done", F);
    B.CreateCondBr(B.CreateICmpEQ(mask64, B.getInt64(0xffffffffu)), fullb, partb);
    B.SetInsertPoint(fullb);
    for (auto& [r, d] : dirty)
      if (d) B.CreateAlignedStore(val[r], regptr(r), Align(4));
    B.CreateBr(endb);
    B.SetInsertPoint(partb);
    flush();
    B.CreateBr(endb);
    B.SetInsertPoint(endb);
  }
  B.CreateRet(B.getInt32(n));
  return mod;
}

}  // namespace

Slot* slot(const Block& blk) {
  if (blk.instrs.empty()) return nullptr;
  // The native f32 and 64-bit atomics stay interpreted: their blocks are not
  // compiled.
  for (const Instr& in : blk.instrs)
    if (in.op == Op::ATOM64 || in.op == Op::ATOMHI || (in.op == Op::ATOM && in.atom == AtomOp::FADD)) return nullptr;
  const std::string key = key_of(blk);
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  return &s.cache[key];
}

void add_execs(Slot* sl, uint64_t n) {
  if (!sl) return;
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  sl->execs += n;
}

uint64_t execs(const Slot* sl) {
  if (!sl) return 0;
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  return sl->execs;
}

BlockFn cached(const Slot* sl) {
  if (!sl) return nullptr;
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  return sl->fn;
}

BlockFn compile(Slot* sl, const Block& blk, InstrFn helper, AppendFn append) {
  if (!sl || blk.instrs.empty()) return nullptr;
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  if (sl->tried) return sl->fn;
  sl->tried = true;
  BlockFn fn = nullptr;
  if (init(s)) {
    const auto t0 = std::chrono::steady_clock::now();
    const std::string name = "qgpu_block" + std::to_string(++s.names);
    auto ctx = std::make_unique<llvm::LLVMContext>();
    auto mod = build(*ctx, name, blk, helper, append);
    mod->setDataLayout(s.jit->getDataLayout());
    if (const char* dir = std::getenv("QGPU_JIT_DUMP"); dir && *dir) {
      // For reading the generated code: DIR/PID-NAME.ll (llc turns it into
      // the host's assembly; names restart in each process).
      std::error_code ec;
      llvm::raw_fd_ostream os(std::string(dir) + "/" + std::to_string(getpid()) + "-" + name + ".ll", ec);
      if (!ec) mod->print(os, nullptr);
    }
    if (auto err = s.jit->addIRModule(llvm::orc::ThreadSafeModule(std::move(mod), std::move(ctx)))) {
      llvm::consumeError(std::move(err));
    } else if (auto sym = s.jit->lookup(name)) {
      fn = sym->toPtr<BlockFn>();
      if (const char* dir = std::getenv("QGPU_JIT_DUMP"); dir && *dir) {
        // The blocks' entry addresses, for matching a profile's samples.
        std::error_code ec;
        llvm::raw_fd_ostream os(std::string(dir) + "/" + std::to_string(getpid()) + "-addresses.txt", ec,
                                llvm::sys::fs::OF_Append);
        if (!ec) os << name << " " << reinterpret_cast<const void*>(fn) << "\n";
      }
    } else {
      llvm::consumeError(sym.takeError());
    }
    s.counters.compiled += fn != nullptr;
    s.counters.seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  sl->fn = fn;
  return fn;
}

Counters counters() {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  return s.counters;
}

#endif

}  // namespace qgpu::machine::jit
