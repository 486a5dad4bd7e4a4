// The machine: its parameters and its instruction set, defined once.
//
// Everything that knows what the machine is (the lowering, the reference
// interpreter, and later the circuit compiler) reads it from here.  Changing a
// parameter is one edit of `Params`' defaults; the lowering and the
// interpreter take a Params so tests can run other machines (other lane
// counts) through the same code.  docs/isa.md is the prose form of this file.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace qgpu::machine {

enum class Op : uint8_t;

struct Params {
  uint32_t lanes = 8;          // lanes per machine warp (divides 32)
  uint32_t regs = 32;          // 32-bit registers per lane
  // When set, the register file of a CTA: this many registers (a power of
  // two), split evenly among the CTA's threads rounded up to a power of two
  // (at most `regs` each): see regs_for.  A kernel launched with more
  // threads is lowered to fewer registers (and spills the rest to local
  // memory), as a GPU's register file bounds registers times threads.
  uint32_t register_rows = 0;
  uint32_t block_instrs = 16;  // K: instructions per block, terminator excluded
  uint32_t rom_blocks = 256;   // program ROM capacity
  uint32_t global_base = 0x10000000;
  uint32_t global_bytes = 16 * 1024;
  uint32_t shared_bytes = 4 * 1024;  // per CTA
  uint32_t local_bytes = 512;        // per thread (spills, local arrays, call frames)
  // When set, local memory is one store of this many bytes per CTA, split
  // evenly among the CTA's threads rounded up to a power of two (at most
  // local_bytes each): see local_bytes_for.
  uint32_t local_store_bytes = 0;
  uint32_t param_bytes = 4 * 1024;   // kernel parameter buffer
  uint32_t print_bytes = 4 * 1024;   // device printf buffer of one launch
  uint32_t max_threads = 256;        // per CTA
  uint32_t max_ctas = 64;            // per grid
  // The optional float operations (OpKind::Float): only a machine that sets
  // this has them; validate() refuses them elsewhere.  The CUDA-sized device
  // of the interpreter backend has them (cuda_params(), api.h); the default
  // machine and the model's do not.
  bool native_float = false;
  // The warp matrix element operation (Op::MMA): the CUDA-sized device has
  // it; elsewhere the lowering computes each element with loads and
  // multiply-adds.
  bool native_mma = false;
  // Without native_float, the float operations a machine still has in
  // their .rn form without .ftz or .sat (the model's machine: FFMA, which
  // its circuit computes, docs/circuit.md, and the lowering uses for f32
  // add, sub and mul too).  validate() refuses
  // every other float op, and these with other modifiers, on such a machine.
  std::vector<Op> native_rn;
  bool has_native_rn(Op op) const { return std::find(native_rn.begin(), native_rn.end(), op) != native_rn.end(); }

  static constexpr uint32_t kCudaWarp = 32;  // what programs see as warpSize
  uint32_t warps_per_group() const { return kCudaWarp / lanes; }
  // The thread count rounded up to a power of two: the share local memory
  // and registers are split into.
  static uint32_t thread_slots(uint32_t threads) {
    uint32_t slots = 1;
    while (slots < threads) slots *= 2;
    return slots;
  }
  // Local memory of each thread of a CTA of `threads` threads.
  uint32_t local_bytes_for(uint32_t threads) const {
    if (local_store_bytes == 0) return local_bytes;
    return std::min(local_bytes, local_store_bytes / thread_slots(threads));
  }
  // Registers of each thread of a CTA of `threads` threads.
  uint32_t regs_for(uint32_t threads) const {
    if (register_rows == 0) return regs;
    return std::min(regs, register_rows / thread_slots(threads));
  }
};

// ---- operations -----------------------------------------------------------

enum class Op : uint8_t {
  // clang-format off
  // Pure 32-bit functions of up to three operands (a, b, c).
  MOV, ADD, SUB, MUL, MULHU, MULHS, AND, OR, XOR, SHL, SHR, SAR,
  SEQ, SNE, SLT, SLE, SLTU, SLEU, SEL, MIN, MAX, MINU, MAXU, POPC, CLZ, BREV,
  // a - b where a >= b (unsigned), else a: one step of restoring division.
  CSUB,
  // Special registers: lane, machine warp in the CTA, linear CTA index, and
  // the launch's EXEC count so far (the machine's clock).
  LANE, WARP, CTA, CLOCK,
  // Memory: LD dst = mem[a + b]; ST mem[a + b] = c; ATOM dst = old, mem[a] = f(old, b, c).
  LD, ST, ATOM,
  // Native f32 operations (OpKind::Float), on machines with
  // Params::native_float only.  Each is a pure function of its operands and
  // its modifiers (Instr::fmod); docs/isa.md section 3.4.
  FADD, FSUB, FMUL, FFMA,  // rounding, .ftz, .sat
  FDIV,                    // a / b, correctly rounded; rounding, .ftz, .sat
  FSQRT,                   // rounding, .ftz
  FMIN, FMAX,              // .ftz (a NaN operand gives the other one)
  FCMP,                    // 0 or 1: the comparison fmod.cmp (ordered and unordered), .ftz
  I2F, U2F,                // s32 / u32 to f32: rounding, .sat
  F2I, F2U,                // f32 to s32 / u32, rounded (.rni .rzi .rmi .rpi) and saturated, NaN 0; .ftz
  FRINT,                   // cvt.f32.f32: rounded to an integral value (.rni ...), or only .ftz/.sat
  FEX2, FLG2, FSIN, FCOS, FTANH,  // the .approx functions of docs/isa.md 11.1; .ftz
  // Native f64 operations (OpKind::Float, native_float machines only;
  // docs/isa.md section 3.5).  Each f64 source is two operands, its low
  // word then its high word: x in (a, b), y in (c, d), z in (e, f).  An op
  // with an f64 (or 64-bit integer) result writes one word of it: the low
  // word, or the high word with fmod.hi.
  DADD, DSUB, DMUL,        // x op y, rounding .rn .rz .rm .rp
  DFMA,                    // x * y + z rounded once
  DDIV,                    // x / y, rounding
  DSQRT,                   // sqrt(x), rounding
  DMIN, DMAX,              // a NaN operand gives the other one
  DCMP,                    // 0 or 1: x fmod.cmp y
  F2D,                     // f32 a to f64 (exact; .ftz)
  D2F,                     // x to f32: rounding, .ftz, .sat
  L2D, UL2D,               // the s64 / u64 integer (a, b) to f64: rounding
  D2I, D2U,                // x to s32 / u32, rounded (.rni .rzi .rmi .rpi) and saturated, NaN 0
  D2L, D2UL,               // x to s64 / u64, the same
  DRINT,                   // x rounded to an integral f64 (.rni .rzi .rmi .rpi)
  // One element of a warp matrix multiply-add (OpKind::Matrix, machines
  // with Params::native_mma only; docs/isa.md section 7.1): element b
  // (row b / n, column b % n) of C + A x B, for c that element of C, A
  // row-major and B column-major in shared memory at a (B right after A).
  // The shape and types are Instr::mma's.
  MMA,
  // Native 64-bit atomics (OpKind::Atomic, machines with
  // Params::native_float only; docs/isa.md section 3.3): ATOM64 dst = the
  // low word of old, mem64[a] = f(old, x, y) as one atomic read-modify-write
  // of the aligned doubleword, for x in (b, c) and y (CAS's new value) in
  // (d, e), low word first; the function is Instr::atom (ADD .. XOR, or FADD
  // for an f64 add .rn).  The high word of old stays in the lane's latch,
  // which ATOMHI dst reads: validate() requires each ATOMHI to follow an
  // ATOM64 in its block (an ATOM64 whose high word is not read needs none).
  ATOM64, ATOMHI,
  // clang-format on
};

// The machine every product path uses.
inline const Params& default_params() {
  static const Params p{};
  return p;
}

// The machine the model backend runs (docs/tokens.md): one lane per machine
// warp and one instruction per block, so that every step the model takes is
// one instruction of one thread, and memories sized to the GDN heads the
// compiled checkpoint spends on them.  The lowering and the interpreter run
// it like any other Params; `--check` compares the model against them.
inline Params& model_params_storage() {
  static Params p = [] {
    Params m;
    m.lanes = 1;
    m.block_instrs = 1;
    m.rom_blocks = 1024;
    m.global_bytes = 256 * 1024;      // 65536 words: 512 GDN heads (docs/circuit.md section 8)
    m.shared_bytes = 64 * 1024;      // 16384 words: 128 GDN heads
    m.local_store_bytes = 32 * 1024;  // 8192 words: 128 B per thread at 256 threads, 32 B at 1024
    m.local_bytes = 32 * 1024;
    m.register_rows = 8192;           // 32 registers per thread up to 256 threads, 16 at 512, 8 at 1024
    m.param_bytes = 4 * 1024;
    m.max_threads = 1024;
    m.max_ctas = 65535;
    m.print_bytes = 1024;
    m.native_rn = {Op::FFMA};
    return m;
  }();
  return p;
}
inline const Params& model_params() { return model_params_storage(); }
// The global memory of the model's device is chosen when the model is built
// (`qgpu build-model --global-kib`, a power of two from kModelMinGlobalBytes
// to kModelMaxGlobalBytes; 256 KiB by default): a process that builds or runs
// another size sets it first, before anything reads it.
inline constexpr uint32_t kModelMinGlobalBytes = 4 * 1024, kModelMaxGlobalBytes = 1024 * 1024;
inline void set_model_global_bytes(uint32_t bytes) { model_params_storage().global_bytes = bytes; }

// Every op of the instruction set.
constexpr int kOpCount = int(Op::ATOMHI) + 1;
// The most source operands an op reads (DFMA's three f64 values; ATOM64's
// address and two 64-bit values).
constexpr int kMaxArity = 6;
// The ops every machine has, the model's included: MOV .. ATOM.  The model's
// circuit and token vocabulary (docs/tokens.md) know these only.
constexpr int kBaseOpCount = int(Op::ATOM) + 1;

// Float: a pure function of its operands like Alu, but with modifiers and
// without an AluFn (the lowering's passes neither fold nor combine it
// through the ALU table).  Matrix: MMA, a read of shared memory (a load for
// the block rules) that computes.
enum class OpKind : uint8_t { Alu, Special, Load, Store, Atomic, Float, Matrix };

using AluFn = uint32_t (*)(uint32_t a, uint32_t b, uint32_t c);

struct OpInfo {
  const char* name;
  OpKind kind;
  uint8_t arity;  // source operands read
  AluFn fn;       // Alu only
};
const OpInfo& op_info(Op op);

enum class Space : uint8_t { Global, Shared, Local, Param, Print };
const char* space_name(Space s);

// Atomic read-modify-write functions: new = fn(old, b, c).  FADD is the f32
// add of PTX's atom.add.f32 (.rn, subnormal inputs and result flushed to
// zero), on machines with Params::native_float only; on ATOM64, the f64 add
// (.rn).
enum class AtomOp : uint8_t { ADD, MIN, MAX, MINU, MAXU, EXCH, CAS, AND, OR, XOR, INC, DEC, FADD };
constexpr int kAtomOpCount = int(AtomOp::FADD) + 1;
struct AtomInfo {
  const char* name;
  AluFn fn;  // (old, b, c) -> new
};
const AtomInfo& atom_info(AtomOp op);
// ATOM64's functions: new = f(old, x, y) on 64-bit values (ADD .. XOR with
// MIN/MAX signed and MINU/MAXU unsigned, CAS: old == x ? y : old, FADD the
// f64 add); atom64_valid() says which AtomOps ATOM64 takes (not INC, DEC).
bool atom64_valid(AtomOp op);
uint64_t eval_atom64(AtomOp op, uint64_t old, uint64_t x, uint64_t y);

// A float operation's modifiers, PTX's (model_host/ptx/float_ref.h has their
// semantics).  rnd: None and Rn round to nearest even, Rz Rm Rp towards
// zero, -inf, +inf; F2I, F2U and FRINT take the integer forms Rni .. Rpi.
enum class FRnd : uint8_t { None, Rn, Rz, Rm, Rp, Rni, Rzi, Rmi, Rpi };
// FCMP's comparison: ordered, unordered (..u: true when either is NaN),
// Num (neither is NaN) and Nan (either is).
enum class FCmp : uint8_t { None, Eq, Ne, Lt, Le, Gt, Ge, Equ, Neu, Ltu, Leu, Gtu, Geu, Num, Nan };
struct FloatMod {
  FRnd rnd = FRnd::Rn;
  bool ftz = false;  // subnormal inputs and results flushed to zero
  bool sat = false;  // the result clamped to [0, 1]
  FCmp cmp = FCmp::None;  // FCMP and DCMP only
  bool hi = false;        // ops with a 64-bit result: write its high word (else its low word)
};

// MMA's shape and types: A is m x k, B k x n, both of `in`; C and the
// result are f32 (F16 inputs) or s32 (S8, U8; with satfinite the exact sum
// clamped to the s32 range, else wrapping).
enum class MmaIn : uint8_t { F16, S8, U8 };
struct MmaMod {
  uint8_t m = 16, n = 16, k = 16;
  MmaIn in = MmaIn::F16;
  bool satfinite = false;
  uint32_t in_bytes() const { return in == MmaIn::F16 ? 2 : 1; }
  // Bytes of A and B in shared memory.
  uint32_t area_bytes() const { return (uint32_t(m) * k + uint32_t(k) * n) * in_bytes(); }
};

// An operand is a register of the lane or a 32-bit immediate.
struct Operand {
  bool imm = true;
  uint32_t v = 0;
  static Operand reg(uint32_t r) { return {false, r}; }
  static Operand k(uint32_t value) { return {true, value}; }
};

struct Instr {
  Op op = Op::MOV;
  uint32_t dst = 0;  // written by Alu, Special, Load, Atomic
  Operand a, b, c;
  // Memory ops only.
  Space space = Space::Global;
  uint8_t bytes = 4;  // 1, 2 or 4
  bool sign = false;  // loads: sign-extend
  AtomOp atom = AtomOp::ADD;
  // Float ops only.
  FloatMod fmod{};
  // The fourth to sixth source operands: f64 ops only.
  Operand d, e, f;
  // MMA only.
  MmaMod mma{};

  bool writes_reg() const;
  // Source operand k (0 .. kMaxArity-1): a, b, c, d, e, f.
  Operand& src(int k) { return const_cast<Operand&>(std::as_const(*this).src(k)); }
  const Operand& src(int k) const {
    switch (k) {
      case 0: return a;
      case 1: return b;
      case 2: return c;
      case 3: return d;
      case 4: return e;
      default: return f;
    }
  }
};

// A float instruction: the operands past the op's arity are zero, cmp is
// kept for FCMP only.
Instr make_float(Op op, uint32_t dst, Operand a, Operand b, Operand c, const FloatMod& m);
// The same with up to kMaxArity operands (the f64 ops).
Instr make_float(Op op, uint32_t dst, const Operand (&s)[kMaxArity], const FloatMod& m);
inline bool is_float(Op op) { return op >= Op::FADD && op <= Op::DRINT; }
// The native f64 operations (DADD .. DRINT), and those of them whose result
// is 64 bits wide (written a word at a time, FloatMod::hi).
inline bool is_f64(Op op) { return op >= Op::DADD && op <= Op::DRINT; }
inline bool has_wide_result(Op op) {
  return is_f64(op) && op != Op::DCMP && op != Op::D2F && op != Op::D2I && op != Op::D2U;
}

// How a block ends.  Each lane computes its own next block; see docs/isa.md.
enum class Term : uint8_t {
  JMP,   // next = t
  BR,    // next = reg[cond] != 0 ? t : f
  EXIT,  // the lane is done
  BAR,   // wait for every live thread of the CTA, then next = t
  WBAR,  // wait for every live thread of the 32-thread warp group, then next = t
  TRAP,  // stop the launch with error `code`
};
struct Terminator {
  Term kind = Term::EXIT;
  uint32_t cond = 0;
  uint32_t t = 0, f = 0;
  uint32_t code = 0;
};

struct Block {
  std::vector<Instr> instrs;
  Terminator term;
};

// A kernel lowered for one launch configuration.
struct Program {
  std::string kernel;
  std::vector<Block> blocks;  // block 0 is the entry
  uint32_t shared_bytes = 0;  // per CTA, scratch included
  uint32_t local_bytes = 0;   // per thread
  uint32_t threads = 0;       // per CTA, as lowered for
  uint32_t ctas = 0;
  // The code relies on CTAs running one at a time (docs/isa.md, section 5)
  // for the atomicity of a sequence of accesses: 64-bit atomics, float
  // atomics, the device heap, device-side launches (lanes taken in turn, a
  // warp's consecutive blocks atomic with respect to every other warp) or
  // strong accesses of more than a word to global memory, or for its printf
  // output to keep the CTAs' order.  Interpreter::run() then
  // never runs two of its CTAs at once.
  bool ctas_in_order = false;
  uint64_t instr_count() const;
};

// Checks the block rules every program must obey (block length, register
// numbers, targets, no load or atomic after a store or atomic within a block,
// at most one atomic per block, ops defined, float ops only where
// Params::native_float is set, with valid modifiers).  Throws std::invalid_argument naming the
// block and instruction.
// `threads`: the CTA size the program is launched with (0: prog.threads),
// which sets a thread's registers on a machine with Params::register_rows.
void validate(const Program& prog, const Params& p, uint32_t threads = 0);

std::string to_string(const Operand& o);
std::string to_string(const Instr& in);
std::string to_string(const Terminator& t);
std::string to_string(const Program& prog);

// Executes an Alu op on its operand values (the single definition of every
// op's semantics).
inline uint32_t eval_alu(Op op, uint32_t a, uint32_t b, uint32_t c) { return op_info(op).fn(a, b, c); }
inline uint32_t eval_atom(AtomOp op, uint32_t old, uint32_t b, uint32_t c) { return atom_info(op).fn(old, b, c); }

}  // namespace qgpu::machine
