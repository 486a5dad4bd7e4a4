// The interpreter's block compiler (model_host/machine/README.md, "JIT").
//
// A block of a Program is compiled with LLVM (ORC LLJIT, for the host CPU)
// into one native function over a whole CUDA warp (Params::kCudaWarp lanes):
// its ALU and special operations as 32-lane vector code with the operands
// kept in SSA across the block and every register written back under the
// active mask (plain stores when every lane ran), its loads, stores, atomics
// and default-rounding f32 add, sub, mul and fma natively when every active
// lane's access is in range, the
// rest as calls back into the interpreter's own code for that one
// instruction.  Only the unrecorded path of 32-lane machines runs compiled
// blocks (Interpreter::run, step() without a StepRecord); everything else is
// interpreted.
#pragma once

#include <cstdint>

#include "model_host/machine/isa.h"

namespace qgpu::machine::jit {

// What a compiled block sees of the EXEC it runs (field offsets are part of
// the generated code: jit.cpp).
struct Env {
  // A memory space as the warp's loads see it (the interpreter's Window):
  // lane l's access at address x is base[l * stride + x - sub], in range
  // when x - sub + bytes <= size.  `fast` 0: the compiled code leaves every
  // access of the space to the interpreter.
  struct Window {
    uint8_t* base = nullptr;
    uint64_t size = 0;
    uint64_t stride = 0;
    uint32_t sub = 0;
    uint32_t fast = 0;
  };
  Window win[4];           // Space::Global, Shared, Local, Param
  void* interp = nullptr;  // the Interpreter
  uint32_t warp = 0;       // the machine warp in the CTA (Op::WARP)
  uint32_t cta = 0;        // the linear CTA index (Op::CTA)
  uint32_t clock = 0;      // the launch's EXEC count so far (Op::CLOCK)
  uint32_t npending = 0;   // stores of the block so far (the interpreter's pending buffer)
  int host_nearest = -1;   // the interpreter's per-EXEC cache of the host's rounding mode
  uint32_t cond_bits = 0;  // written by a block ending in BR: bit l set when lane l's condition is non-zero
};

// Runs instruction `index` of the block over the lanes of `mask` through the
// interpreter: 1, or 0 when it faulted (the fault is set).
using InstrFn = int (*)(Env* env, uint32_t index, uint64_t mask);

// Appends a store's lanes (those of `mask`, in lane order) to the
// interpreter's pending stores: lane l writes the low `bytes` of vals[l] at
// ptrs[l], an address already checked.
using AppendFn = void (*)(Env* env, const uint64_t* ptrs, const uint32_t* vals, uint64_t mask, uint32_t bytes);

// A compiled block: register r's 32 lanes are at W + 32 r.  Returns the
// number of instructions that completed: the block's length, or the index
// of the instruction that faulted (the registers written before it are in
// W, its stores and those before it are pending, not committed).
using BlockFn = uint32_t (*)(uint32_t* W, uint64_t mask, Env* env);

// QGPU_JIT: "0" off, "always" every block compiled on its first EXEC (for
// tests), anything else (or unset): on, a block compiled once it has run
// threshold() EXECs in a launch.  Read once per process.
enum class Mode { Off, On, Always };
// Whether this build has the compiler (LLVM found at configure time).
bool built_in();
Mode mode();
// EXECs of a block before it is compiled (QGPU_JIT_THRESHOLD, default 8192),
// counted over the launches of the process (Slot); 0 under Mode::Always.
uint32_t threshold();

// The process's record of blocks of one content (keyed by the
// instructions and a BR terminator's condition register): its compiled code once there is one, and the EXECs that
// launches ended before ran of it interpreted, so that a block that each
// launch runs a few times (a library kernel launched again and again) is
// compiled once all of them together reach threshold().  Records live
// until the process exits.
struct Slot {
  BlockFn fn = nullptr;
  bool tried = false;   // compile() ran (fn may still be null)
  uint64_t execs = 0;   // interpreted EXECs of launches that have ended
};
// The record of blocks of `blk`'s content, made on first use; null for an
// empty block (nothing to compile) or when the JIT is not built in.
Slot* slot(const Block& blk);
// What an ended launch adds to a record: EXECs it ran interpreted.
void add_execs(Slot* s, uint64_t execs);
// The prior EXECs of a record (add_execs) as one launch sees them.
uint64_t execs(const Slot* s);

// The block's native function, compiled once per process for blocks of the
// same content (the record `s`); null when the JIT is not built in, LLVM
// cannot target the host, or the block is empty.
BlockFn compile(Slot* s, const Block& blk, InstrFn helper, AppendFn append);
// The same when a block of this content was compiled before, else null
// (compiles nothing).
BlockFn cached(const Slot* s);

// Blocks compiled and their total compile time, for tools.
struct Counters {
  uint64_t compiled = 0;
  double seconds = 0;
};
Counters counters();

}  // namespace qgpu::machine::jit
