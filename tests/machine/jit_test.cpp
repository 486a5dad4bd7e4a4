// The interpreter's block compiler (model_host/machine/jit.h): launches run
// with every block compiled from its first EXEC and with none compiled end
// with the same memory, registers, printf output, stats and faults.
#include "build_paths.h"  // qgpu_paths() in CMakeLists.txt

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <array>
#include <atomic>
#include <fstream>
#include <random>
#include <sstream>
#include <tuple>

#include "model_host/launch/errors.h"
#include "model_host/lower/lower.h"
#include "model_host/machine/api.h"
#include "model_host/machine/image.h"
#include "model_host/machine/interpreter.h"
#include "model_host/machine/jit.h"

namespace qgpu::machine {
namespace {

struct Outcome {
  launch::GlobalMemory mem;
  InterpStats stats;
  Fault fault;
  std::vector<uint8_t> print;
  std::vector<uint32_t> regs;  // the last CTA's, thread by thread
  uint64_t out = 0;            // kernel_on_threads: the output's offset in mem
};

Outcome run(const Program& prog, const Params& p, const std::vector<uint8_t>& params, const launch::GlobalMemory& mem0,
            jit::Mode mode, uint32_t threshold = 0, uint64_t max_steps = UINT64_MAX,
            const std::atomic<bool>* cancel = nullptr) {
  Outcome o;
  o.mem = mem0;
  Interpreter in(prog, p, prog.ctas, prog.threads, params, o.mem);
  in.set_jit(mode, threshold);
  in.set_cta_threads(1);  // the schedule of step(): the last CTA's registers, racing lanes' order
  in.run(max_steps, cancel);
  o.stats = in.stats();
  o.fault = in.fault();
  o.print = in.print_buffer();
  for (uint32_t t = 0; t < prog.threads; ++t)
    for (uint32_t r = 0; r < p.regs; ++r) o.regs.push_back(in.reg(t, r));
  return o;
}

// Runs `prog` interpreted and compiled and expects the same outcome; returns
// the interpreted one.
Outcome same_both_ways(const Program& prog, const Params& p, const std::vector<uint8_t>& params,
                       const launch::GlobalMemory& mem0, const std::string& what) {
  Outcome a = run(prog, p, params, mem0, jit::Mode::Off);
  // Every block compiled from its first EXEC, and blocks compiled after a
  // few EXECs (a warp's EXECs interpreted and compiled in turn); a block
  // compiled earlier in the process is found compiled at once.
  for (const uint32_t threshold : {3u, 0u}) {
    const Outcome b = run(prog, p, params, mem0, threshold ? jit::Mode::On : jit::Mode::Always, threshold);
    const std::string how = what + (threshold ? " (compiled after 3 EXECs)" : " (compiled)");
    EXPECT_EQ(a.stats.steps, b.stats.steps) << how;
    EXPECT_EQ(a.stats.instructions, b.stats.instructions) << how;
    EXPECT_EQ(a.stats.lane_instructions, b.stats.lane_instructions) << how;
    EXPECT_EQ(a.fault.error, b.fault.error) << how;
    EXPECT_EQ(a.fault.message, b.fault.message) << how;
    EXPECT_EQ(a.print, b.print) << how;
    EXPECT_TRUE(a.mem.bytes == b.mem.bytes) << how << ": global memory differs";
    size_t bad = 0;
    for (size_t i = 0; i < a.regs.size(); ++i)
      if (a.regs[i] != b.regs[i] && bad++ < 5)
        ADD_FAILURE() << how << ": thread " << i / p.regs << " r" << i % p.regs << ": " << a.regs[i] << " vs "
                      << b.regs[i];
  }
  return a;
}

Operand R(uint32_t x) { return Operand::reg(x); }
Operand K(uint32_t x) { return Operand::k(x); }

// Appends `op d, a, b, c` to a block; the new instruction.
Instr* ins(Block& b, Op op, uint32_t d, Operand a, Operand bb = K(0), Operand c = K(0)) {
  Instr in;
  in.op = op;
  in.dst = d;
  in.a = a;
  in.b = bb;
  in.c = c;
  b.instrs.push_back(in);
  return &b.instrs.back();
}

// Random ALU, special and f32 add/sub/mul/fma/div/compare/min/max/conversion instructions over registers
// 1 .. 12 with operands at the edges (shift counts past 31, signed
// extremes, infinities, NaNs, subnormals), in blocks entered by
// lanes split on their lane bits: every op under full and partial masks.
TEST(Jit, RandomAluProgramsMatchTheInterpreter) {
  if (!jit::built_in()) GTEST_SKIP() << "built without LLVM";
  Params p = cuda_params(1u << 20);
  std::mt19937 rng(12345);
  const uint32_t kRegs = 13, threads = 96, ctas = 2;
  const uint32_t edges[] = {0, 1, 2, 31, 32, 33, 63, 0x7fffffff, 0x80000000, 0xffffffff, 0xfffffffe, 12345678,
                            0x7f800000, 0xff800000, 0x7fc00001, 0x00000003, 0x3f800000, 0x7f7fffff,
                            0x80000005, 0x00800000, 0x40400000};  // floats too: subnormals, the least normal, 3
  auto operand = [&](bool allow_imm) {
    if (allow_imm && rng() % 4 == 0) return K(rng() % 2 ? edges[rng() % std::size(edges)] : uint32_t(rng()));
    return R(1 + rng() % (kRegs - 1));
  };
  auto random_block = [&](uint32_t n) {
    Block b;
    for (uint32_t i = 0; i < n; ++i) {
      Instr in;
      const uint32_t pick = rng() % 45;
      if (pick < 26) in.op = Op(pick);  // MOV .. BREV
      else if (pick < 30) in.op = Op(int(Op::LANE) + pick - 26);  // LANE WARP CTA CLOCK
      else
        in.op = std::array{Op::FADD, Op::FSUB, Op::FMUL, Op::FFMA, Op::FDIV, Op::FDIV, Op::FCMP, Op::FCMP,
                           Op::FMIN, Op::FMAX, Op::I2F, Op::U2F, Op::F2I, Op::F2U, Op::FRINT}[pick - 30];
      if (in.op == Op::FCMP) {  // every comparison, sometimes .ftz (all compiled)
        in.fmod.rnd = FRnd::None;
        in.fmod.cmp = FCmp(1 + rng() % 14);  // Eq .. Nan
        in.fmod.ftz = rng() % 3 == 0;
      } else if (in.op == Op::FMIN || in.op == Op::FMAX) {  // sometimes .ftz (all compiled)
        in.fmod.rnd = FRnd::None;
        in.fmod.ftz = rng() % 3 == 0;
      } else if (in.op == Op::F2I || in.op == Op::F2U || in.op == Op::FRINT) {  // every integer rounding (compiled)
        in.fmod.rnd = std::array{FRnd::Rni, FRnd::Rzi, FRnd::Rmi, FRnd::Rpi, FRnd::None}[rng() % (in.op == Op::FRINT ? 5 : 4)];
        in.fmod.ftz = rng() % 3 == 0;
        in.fmod.sat = in.op == Op::FRINT && rng() % 3 == 0;
      } else if (in.op == Op::I2F || in.op == Op::U2F) {  // .rn compiled, else the interpreter's; sometimes .sat
        in.fmod.rnd = rng() % 2 ? FRnd::Rn : std::array{FRnd::Rz, FRnd::Rm, FRnd::Rp}[rng() % 3];
        in.fmod.sat = rng() % 5 == 0;
      } else if (is_float(in.op)) {  // mostly the default rounding (compiled), else another (run by the interpreter); sometimes .ftz or .sat
        in.fmod.rnd = rng() % 2 ? FRnd::Rn : std::array{FRnd::Rz, FRnd::Rm, FRnd::Rp}[rng() % 3];
        in.fmod.ftz = rng() % 5 == 0;
        in.fmod.sat = rng() % 7 == 0;
      }
      in.dst = 1 + rng() % (kRegs - 1);
      in.a = operand(true);
      in.b = operand(true);
      in.c = operand(true);
      b.instrs.push_back(in);
    }
    return b;
  };
  for (int seed = 0; seed < 60; ++seed) {
    Program prog;
    prog.kernel = "random" + std::to_string(seed);
    prog.threads = threads;
    prog.ctas = ctas;
    const uint32_t K0 = p.block_instrs;
    // B0: registers from the lane and CTA, then a split on lane bits.
    Block b0;
    ins(b0, Op::LANE, 1, K(0));
    ins(b0, Op::MUL, 2, R(1), K(0x9e3779b9u + seed));
    ins(b0, Op::CTA, 3, K(0));
    ins(b0, Op::XOR, 4, R(2), R(3));
    ins(b0, Op::SHL, 5, R(1), K(27));
    ins(b0, Op::ADD, 6, R(4), K(uint32_t(rng())));
    ins(b0, Op::AND, 12, R(1), K(1u + rng() % 31));
    b0.term = {Term::BR, 12, 1, 2, 0};
    Block b1 = random_block(1 + rng() % K0), b2 = random_block(1 + rng() % K0), b3 = random_block(1 + rng() % (K0 - 1));
    b1.term = {Term::JMP, 0, 3, 0, 0};
    b2.term = {Term::JMP, 0, 3, 0, 0};
    // B3 then B4: a second split on another lane bit (the lanes in one
    // warp differ), then B5 stores every register: global[(tid * 16 + r) * 4].
    ins(b3, Op::AND, 11, R(1), K(2u + rng() % 30));
    b3.term = {Term::BR, 11, 4, 5, 0};
    Block b4 = random_block(1 + rng() % K0);
    b4.term = {Term::JMP, 0, 5, 0, 0};
    Block b5;
    ins(b5, Op::LANE, 13, K(0));
    ins(b5, Op::WARP, 14, K(0));
    ins(b5, Op::MUL, 14, R(14), K(32));
    ins(b5, Op::ADD, 13, R(13), R(14));
    ins(b5, Op::MUL, 13, R(13), K(64));
    ins(b5, Op::ADD, 13, R(13), K(p.global_base));
    b5.term = {Term::JMP, 0, 6, 0, 0};
    Block b6;
    for (uint32_t r = 1; r < kRegs; ++r) {
      Instr st;
      st.op = Op::ST;
      st.space = Space::Global;
      st.a = R(13);
      st.b = K(4 * r);
      st.c = R(r);
      b6.instrs.push_back(st);
    }
    b6.term = {Term::EXIT, 0, 0, 0, 0};
    prog.blocks = {b0, b1, b2, b3, b4, b5, b6};
    launch::GlobalMemory mem;
    mem.base = p.global_base;
    mem.bytes.assign(threads * 64, 0);
    const Outcome o = same_both_ways(prog, p, {}, mem, prog.kernel);
    EXPECT_EQ(o.fault.error, 0) << o.fault.message;
  }
}

// Appends a load, store or atomic of space `sp` to a block.
void mem_op(Block& b, Op op, Space sp, uint32_t d, Operand a, Operand off, Operand v = K(0)) {
  ins(b, op, d, a, off, v)->space = sp;
}

// Block 0 of the load tests: r1 the lane, r3 the thread (CTA * 32 + lane),
// r4 the global address of its 16-byte table entry (at 16 r3), r5 of its
// output (`out_stride` bytes at `out`), r6 on the entry's first `words`
// words; shared word i set to 0x01000193 i + 7; then to block 1 past the
// CTA barrier.
Block table_prologue(const Params& p, uint32_t out, uint32_t out_stride, uint32_t words, uint32_t shared_bytes) {
  Block b0;
  ins(b0, Op::LANE, 1, K(0));
  ins(b0, Op::CTA, 2, K(0));
  ins(b0, Op::MUL, 3, R(2), K(32));
  ins(b0, Op::ADD, 3, R(3), R(1));
  ins(b0, Op::MUL, 4, R(3), K(16));
  ins(b0, Op::ADD, 4, R(4), K(p.global_base));
  ins(b0, Op::MUL, 5, R(3), K(out_stride));
  ins(b0, Op::ADD, 5, R(5), K(p.global_base + out));
  for (uint32_t j = 0; j < words; ++j) mem_op(b0, Op::LD, Space::Global, 6 + j, R(4), K(4 * j));
  ins(b0, Op::MUL, 10, R(1), K(4));
  ins(b0, Op::MUL, 11, R(1), K(0x01000193u));
  for (uint32_t j = 0; j < shared_bytes / 128; ++j) {
    ins(b0, Op::ADD, 12, R(11), K(0x01000193u * 32 * j + 7));
    mem_op(b0, Op::ST, Space::Shared, 0, R(10), K(128 * j), R(12));
  }
  b0.term = {Term::BAR, 0, 1, 0, 0};
  return b0;
}

// Lane l's byte offset from `start` under access pattern k, one of
// kLanePatterns: the ways a warp's words meet the JIT's row, span, half-warp
// span and gather paths (jit.cpp), all within 1,024 bytes from `start`.
// `perm` is a permutation of 0..31.
constexpr uint32_t kLanePatterns = 14;
uint32_t lane_pattern(uint32_t k, uint32_t l, uint32_t start, const std::vector<uint32_t>& perm) {
  switch (k) {
    case 0: return start + 4 * l;                                   // a row
    case 1: return start + 40;                                      // one word for all
    case 2: return start + 4 * (l % 16);                            // a half row twice
    case 3: return start + 64 * (l / 16) + 8;                       // two words, one per half
    case 4: return start + 4 * (31 - l);                            // a row backwards
    case 5: return start + 4 * perm[l];                             // a permutation of the span
    case 6: return start + 4 * l + (l == 31 ? 4 : 0);               // 132 bytes
    case 7: return start + 20 * l;                                  // strided
    case 8: return start + 4 * (uint32_t(l * 2654435761u) >> 27);   // repeats inside the span
    case 9: return start + 124 - 4 * (l % 3);                       // the span's last words
    case 10: return start + 4 * (l % 16) + 512 * (l / 16);          // a half row each, 512 bytes apart
    case 11: return l < 16 ? start + 4 * perm[l] % 64 : start + 768 + 4 * (31 - l);  // a permutation, a row backwards
    case 12: return start + 8 * (l % 16) + 640 * (l / 16);          // each half strided inside its span
    default: return l < 16 ? start + 8 * l : start + 384 + 4 * perm[l - 16] % 64;  // a stride, a permutation
  }
}

std::vector<uint32_t> lane_permutation(uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint32_t> perm(32);
  for (uint32_t l = 0; l < 32; ++l) perm[l] = l;
  std::shuffle(perm.begin(), perm.end(), rng);
  return perm;
}

// A launch of one 32-thread CTA per `ctas` over `blocks`.
Program warp_program(const char* name, uint32_t ctas, uint32_t shared_bytes, std::vector<Block> blocks) {
  Program prog;
  prog.kernel = name;
  prog.threads = 32;
  prog.ctas = ctas;
  prog.shared_bytes = shared_bytes;
  prog.blocks = std::move(blocks);
  return prog;
}

uint32_t word_at(const launch::GlobalMemory& m, uint32_t byte) {
  uint32_t v;
  std::memcpy(&v, &m.bytes[byte], 4);
  return v;
}

// The words the load tests read: global byte b of the data area holds
// global_word(b); shared byte b (table_prologue's words) shared_word(b).
uint32_t global_word(uint32_t byte) { return 0x9e3779b9u * byte + 17; }
uint32_t shared_word(uint32_t byte) { return 0x01000193u * (byte / 4) + 7; }

// `bytes` of global memory, zero below `data` and global_word from there on.
launch::GlobalMemory filled_memory(const Params& p, uint32_t bytes, uint32_t data) {
  launch::GlobalMemory mem;
  mem.base = p.global_base;
  mem.bytes.assign(bytes, 0);
  for (uint32_t b = data; b < bytes; b += 4) {
    const uint32_t v = global_word(b);
    std::memcpy(&mem.bytes[b], &v, 4);
  }
  return mem;
}

// Loads whose lanes read words of one 128-byte span (a broadcast, the rows
// of a tile, a row read twice, a permutation: the compiled code's two
// vector loads and permutes), a row, and spans it must gather instead (132
// bytes, the window's last 64 bytes, strided), from global and shared
// memory, by every lane and by a quarter of them while the others hold
// offsets far outside the window.  One CTA per pattern; each lane stores
// what it read.
TEST(Jit, LoadSpansMatchTheInterpreter) {
  if (!jit::built_in()) GTEST_SKIP() << "built without LLVM";
  Params p = cuda_params(1u << 20);
  constexpr uint32_t kPatterns = kLanePatterns + 1, kShared = 2048;
  const uint32_t data = 16 * 1024, mem_bytes = 32 * 1024;  // global: the table, the output, the data words
  const std::vector<uint32_t> perm = lane_permutation(99);
  // Lane l's byte offset under pattern k from a window's `start`, `end` its
  // size: lane_pattern's, and the window's last 64 bytes.
  auto offset = [&](uint32_t k, uint32_t l, uint32_t start, uint32_t end) -> uint32_t {
    return k < kLanePatterns ? lane_pattern(k, l, start, perm) : end - 64 + 4 * (l % 16);
  };
  launch::GlobalMemory mem = filled_memory(p, mem_bytes, data);
  auto word = [&](uint32_t byte, uint32_t v) { std::memcpy(&mem.bytes[byte], &v, 4); };
  // The table: per (pattern, lane) four offsets: global all lanes, shared all
  // lanes, global a quarter, shared a quarter (the others far outside).
  for (uint32_t k = 0; k < kPatterns; ++k)
    for (uint32_t l = 0; l < 32; ++l) {
      const uint32_t at = (k * 32 + l) * 16;
      const bool on = l % 4 == 1;
      word(at + 0, p.global_base + offset(k, l, data, mem_bytes));
      word(at + 4, offset(k, l, 0, kShared));
      word(at + 8, on ? p.global_base + offset(k, l, data + 256, mem_bytes) : 0xFFFFFF00u);
      word(at + 12, on ? offset(k, l, 256, kShared) : 0xFFFFFF00u);
    }
  const uint32_t out = 8 * 1024;  // 16 bytes a thread
  Block b0 = table_prologue(p, out, 16, 4, kShared), b1, b2, b3;
  mem_op(b1, Op::LD, Space::Global, 13, R(6), K(0));
  mem_op(b1, Op::LD, Space::Shared, 14, R(7), K(0));
  mem_op(b1, Op::ST, Space::Global, 0, R(5), K(0), R(13));
  mem_op(b1, Op::ST, Space::Global, 0, R(5), K(4), R(14));
  ins(b1, Op::AND, 15, R(1), K(3));
  ins(b1, Op::SEQ, 15, R(15), K(1));
  b1.term = {Term::BR, 15, 2, 3, 0};
  mem_op(b2, Op::LD, Space::Global, 16, R(8), K(0));
  mem_op(b2, Op::LD, Space::Shared, 17, R(9), K(0));
  mem_op(b2, Op::ST, Space::Global, 0, R(5), K(8), R(16));
  mem_op(b2, Op::ST, Space::Global, 0, R(5), K(12), R(17));
  b2.term = {Term::JMP, 0, 3, 0, 0};
  b3.term = {Term::EXIT, 0, 0, 0, 0};
  const Program prog = warp_program("load_spans", kPatterns, kShared, {b0, b1, b2, b3});
  const Outcome o = same_both_ways(prog, p, {}, mem, prog.kernel);
  ASSERT_EQ(o.fault.error, 0) << o.fault.message;
  // And what the loads read, from the definition.
  auto got = [&](uint32_t t, uint32_t j) { return word_at(o.mem, out + 16 * t + 4 * j); };
  for (uint32_t k = 0; k < kPatterns; ++k)
    for (uint32_t l = 0; l < 32; ++l) {
      const uint32_t t = k * 32 + l, g = offset(k, l, data, mem_bytes), sh = offset(k, l, 0, kShared);
      EXPECT_EQ(got(t, 0), global_word(g)) << "pattern " << k << " lane " << l;
      EXPECT_EQ(got(t, 1), shared_word(sh)) << "pattern " << k << " lane " << l;
      if (l % 4 == 1) {
        const uint32_t g2 = offset(k, l, data + 256, mem_bytes), s2 = offset(k, l, 256, kShared);
        EXPECT_EQ(got(t, 2), global_word(g2)) << "pattern " << k << " lane " << l;
        EXPECT_EQ(got(t, 3), shared_word(s2)) << "pattern " << k << " lane " << l;
      }
    }
}

// Groups of loads at one register plus immediates (jit.cpp: one range test
// and one row/span classification for the group): every lane pattern of
// LoadSpansMatchTheInterpreter at immediates from -256 to +252, in global
// and shared memory, under a full and a partial mask, with the register
// rewritten inside a run of loads and an immediate first operand; and a
// group that runs past the window's end or starts misaligned faults where
// the interpreter does.
TEST(Jit, LoadGroupsMatchTheInterpreter) {
  if (!jit::built_in()) GTEST_SKIP() << "built without LLVM";
  Params p = cuda_params(1u << 20);
  constexpr uint32_t kPatterns = kLanePatterns, kShared = 2048;
  const uint32_t data = 64 * 1024, mem_bytes = 80 * 1024;  // the table, the output, the data words
  const uint32_t gstart = data + 1024, sstart = 512;
  const std::vector<uint32_t> imms = {0xFFFFFF00u, 0, 4, 12, 64, 132, 252};  // -256 first
  const std::vector<uint32_t> perm = lane_permutation(7);
  auto offset = [&](uint32_t k, uint32_t l, uint32_t start) { return lane_pattern(k, l, start, perm); };
  const uint32_t out = 8 * 1024;  // 128 bytes a thread
  launch::GlobalMemory mem = filled_memory(p, mem_bytes, data);
  auto word = [&](uint32_t byte, uint32_t v) { std::memcpy(&mem.bytes[byte], &v, 4); };
  for (uint32_t k = 0; k < kPatterns; ++k)
    for (uint32_t l = 0; l < 32; ++l) {
      word((k * 32 + l) * 16 + 0, p.global_base + offset(k, l, gstart));
      word((k * 32 + l) * 16 + 4, offset(k, l, sstart));
    }
  {
    // Block 1, every lane: the groups, each value stored; a run where the
    // register changes in the middle; then lanes l % 4 == 1 go to block 2.
    Block b0 = table_prologue(p, out, 128, 2, kShared), b1, b2, b3;
    uint32_t r = 20, slot = 0;
    std::vector<std::pair<uint32_t, uint32_t>> stored;  // (register, output slot)
    for (uint32_t j = 0; j < imms.size(); ++j) {
      mem_op(b1, Op::LD, Space::Global, r, R(6), K(imms[j]));
      stored.push_back({r++, slot++});
      if (j == 3)
        mem_op(b1, Op::LD, Space::Shared, r, K(imms[j]), R(7));  // the immediate first
      else
        mem_op(b1, Op::LD, Space::Shared, r, R(7), K(imms[j]));
      stored.push_back({r++, slot++});
    }
    // A group in param memory (its words at 0, 8 and 12).
    ins(b1, Op::MOV, 49, K(0));
    for (uint32_t j = 0; j < 3; ++j) mem_op(b1, Op::LD, Space::Param, 50 + j, R(49), K(j ? 4 + 4 * j : 0));
    for (auto [reg, at] : stored) mem_op(b1, Op::ST, Space::Global, 0, R(5), K(4 * at), R(reg));
    for (uint32_t j = 0; j < 3; ++j) mem_op(b1, Op::ST, Space::Global, 0, R(5), K(4 * (20 + j)), R(50 + j));
    ins(b1, Op::AND, 15, R(1), K(3));
    ins(b1, Op::SEQ, 15, R(15), K(1));
    b1.term = {Term::BR, 15, 2, 3, 0};
    // Block 2, a quarter of the lanes: a group, the register moved by 4,
    // the same immediates again (a second group); then the register moved
    // by 4 again by an instruction the compiled code leaves to the
    // interpreter (f32 add rounding toward zero: the offsets are subnormal
    // f32s, whose sum is the sum of their bits), and a third group.
    mem_op(b2, Op::LD, Space::Shared, 40, R(7), K(8));
    mem_op(b2, Op::LD, Space::Shared, 41, R(7), K(0xFFFFFFF8u));
    ins(b2, Op::ADD, 7, R(7), K(4));
    mem_op(b2, Op::LD, Space::Shared, 42, R(7), K(8));
    mem_op(b2, Op::LD, Space::Shared, 43, R(7), K(0xFFFFFFF8u));
    FloatMod rz;
    rz.rnd = FRnd::Rz;
    b2.instrs.push_back(make_float(Op::FADD, 7, R(7), K(4), K(0), rz));
    mem_op(b2, Op::LD, Space::Shared, 44, R(7), K(8));
    mem_op(b2, Op::LD, Space::Shared, 45, R(7), K(0xFFFFFFF8u));
    for (uint32_t j = 0; j < 6; ++j) mem_op(b2, Op::ST, Space::Global, 0, R(5), K(4 * (slot + j)), R(40 + j));
    b2.term = {Term::JMP, 0, 3, 0, 0};
    b3.term = {Term::EXIT, 0, 0, 0, 0};
    const Program prog = warp_program("load_groups", kPatterns, kShared, {b0, b1, b2, b3});
    std::vector<uint8_t> params(16);
    for (uint32_t j = 0; j < 4; ++j) {
      const uint32_t v = 0x51ed270bu * (j + 1);
      std::memcpy(&params[4 * j], &v, 4);
    }
    const Outcome o = same_both_ways(prog, p, params, mem, prog.kernel);
    ASSERT_EQ(o.fault.error, 0) << o.fault.message;
    auto got = [&](uint32_t t, uint32_t j) { return word_at(o.mem, out + 128 * t + 4 * j); };
    for (uint32_t k = 0; k < kPatterns; ++k)
      for (uint32_t l = 0; l < 32; ++l) {
        const uint32_t t = k * 32 + l, g = offset(k, l, gstart), sh = offset(k, l, sstart);
        for (uint32_t j = 0; j < imms.size(); ++j) {
          EXPECT_EQ(got(t, 2 * j), global_word(g + imms[j])) << "pattern " << k << " lane " << l << " imm " << j;
          EXPECT_EQ(got(t, 2 * j + 1), shared_word(sh + imms[j])) << "pattern " << k << " lane " << l << " imm " << j;
        }
        if (l % 4 == 1) {
          EXPECT_EQ(got(t, slot + 0), shared_word(sh + 8)) << "pattern " << k << " lane " << l;
          EXPECT_EQ(got(t, slot + 1), shared_word(sh - 8)) << "pattern " << k << " lane " << l;
          EXPECT_EQ(got(t, slot + 2), shared_word(sh + 12)) << "pattern " << k << " lane " << l;
          EXPECT_EQ(got(t, slot + 3), shared_word(sh - 4)) << "pattern " << k << " lane " << l;
          EXPECT_EQ(got(t, slot + 4), shared_word(sh + 16)) << "pattern " << k << " lane " << l;
          EXPECT_EQ(got(t, slot + 5), shared_word(sh)) << "pattern " << k << " lane " << l;
        }
        for (uint32_t j = 0; j < 3; ++j) EXPECT_EQ(got(t, 20 + j), 0x51ed270bu * (j ? 2 + j : 1)) << "param " << j;
      }
  }
  // Faults: a group whose last member runs past the window's end (the
  // earlier members in range), and one whose register is misaligned.
  for (const auto& [what, gbase, sbase] : {std::tuple<const char*, uint32_t, uint32_t>{"past the end", mem_bytes - 16, 0},
                                           {"past the shared end", gstart, kShared - 16},
                                           {"misaligned", gstart + 2, 0}}) {
    launch::GlobalMemory m2 = mem;
    auto w2 = [&](uint32_t byte, uint32_t v) { std::memcpy(&m2.bytes[byte], &v, 4); };
    for (uint32_t l = 0; l < 32; ++l) {
      w2(l * 16 + 0, p.global_base + gbase);
      w2(l * 16 + 4, sbase);
    }
    Block b0 = table_prologue(p, out, 128, 2, kShared), b1, b2;
    for (uint32_t j = 0; j < 4; ++j) mem_op(b1, Op::LD, Space::Global, 20 + j, R(6), K(4 * j + 4));
    for (uint32_t j = 0; j < 4; ++j) mem_op(b1, Op::LD, Space::Shared, 24 + j, R(7), K(4 * j + 4));
    for (uint32_t j = 0; j < 8; ++j) mem_op(b1, Op::ST, Space::Global, 0, R(5), K(4 * j), R(20 + j));
    b1.term = {Term::JMP, 0, 2, 0, 0};
    b2.term = {Term::EXIT, 0, 0, 0, 0};
    const Program prog = warp_program("load_group_fault", 1, kShared, {b0, b1, b2});
    const Outcome o = same_both_ways(prog, p, {}, m2, std::string("load group ") + what);
    EXPECT_NE(o.fault.error, 0) << what;
  }
}

// Strided rows (jit.cpp): the words of a vector access of four words a lane
// (uint4, float4), which the lowering splits into loads or stores at one
// register plus 0, 4, 8, 12, and stores of two words a lane: every lane
// active at 16 (or 8) bytes from the lane before reads (writes) the 512
// (256) bytes from the first lane's offset, one contiguous access and a
// shuffle.  Each lane
// pattern per CTA (the two strides, one lane off the stride, overlapping
// lanes, backwards, a wider stride, the window's last bytes), in global and
// shared memory: groups of four and two loads and stores, immediates out of
// order, three stores (not a group), the first access folded to [a + b]
// beside [a + b + 4] (and the same after b changed: not the same address),
// and under a partial mask; and groups at a window's end.
TEST(Jit, StridedRowsMatchTheInterpreter) {
  if (!jit::built_in()) GTEST_SKIP() << "built without LLVM";
  Params p = cuda_params(1u << 20);
  constexpr uint32_t kShared = 2048, kArea = 6 * 1024;
  constexpr uint32_t table = 0, out = 4 * 1024, stores = 24 * 1024, data = 72 * 1024, mem_bytes = 80 * 1024;
  auto pattern = [](uint32_t k, uint32_t l, uint32_t start) -> uint32_t {
    switch (k) {
      case 0: return start + 16 * l;                     // uint4 a lane
      case 1: return start + 8 * l;                      // uint2 a lane
      case 2: return start + 16 * l + (l == 9 ? 4 : 0);  // one lane off the stride (overlapping its neighbour)
      case 3: return start + 16 * (31 - l);              // backwards
      case 4: return start + 32 * l;                     // a wider stride
      default: return start + 16 * (l / 2);              // two lanes on each 16 bytes
    }
  };
  constexpr uint32_t kPatterns = 6;
  launch::GlobalMemory mem = filled_memory(p, mem_bytes, data);
  auto word = [&](uint32_t byte, uint32_t v) { std::memcpy(&mem.bytes[byte], &v, 4); };
  for (uint32_t k = 0; k < kPatterns; ++k)
    for (uint32_t l = 0; l < 32; ++l) {
      const uint32_t at = table + (k * 32 + l) * 16;
      word(at + 0, p.global_base + pattern(k, l, data));
      word(at + 4, pattern(k, l, 0));
      word(at + 8, p.global_base + stores + k * kArea + pattern(k, l, 0));
    }
  // r6: the global load address, r7: the shared one, r8: the store address.
  Block b0 = table_prologue(p, out, 64, 3, kShared), b1, b2, b3, b4, b5;
  // Block 1, every lane: a group of four and one of two loads (a copy of
  // r6: another group), in global and shared memory; stored as groups of
  // four (global and shared), of two, out of order, and three.
  for (uint32_t j = 0; j < 4; ++j) mem_op(b1, Op::LD, Space::Global, 20 + j, R(6), K(4 * j));
  for (uint32_t j = 0; j < 4; ++j) mem_op(b1, Op::LD, Space::Shared, 24 + j, R(7), K(4 * j));
  ins(b1, Op::MOV, 30, R(6));
  mem_op(b1, Op::LD, Space::Global, 28, R(30), K(4));
  mem_op(b1, Op::LD, Space::Global, 29, R(30), K(0));
  for (uint32_t j = 0; j < 4; ++j) mem_op(b1, Op::ST, Space::Global, 0, R(8), K(4 * j), R(20 + j));
  mem_op(b1, Op::ST, Space::Global, 0, R(8), K(1024), R(28));
  mem_op(b1, Op::ST, Space::Global, 0, R(8), K(1028), R(29));
  for (uint32_t j : {2u, 0u, 3u, 1u}) mem_op(b1, Op::ST, Space::Global, 0, R(8), K(2048 + 4 * j), R(24 + j));
  for (uint32_t j = 0; j < 3; ++j) mem_op(b1, Op::ST, Space::Global, 0, R(8), K(3072 + 4 * j), R(20 + j));
  for (uint32_t j = 0; j < 4; ++j) mem_op(b1, Op::ST, Space::Shared, 0, R(7), K(4 * j), R(23 - j));
  b1.term = {Term::JMP, 0, 2, 0, 0};
  // Block 2, every lane: the first load at [r6 + r34] beside [r33 + 4], ...
  // with r33 = r6 + r34; then r35 = r6 + r34 and r34 changed before
  // [r6 + r34], which is no longer [r35 + 0].  Stored the same way, the
  // first at [r8 + r40] with r41 = r8 + r40 beside it.  The shared words
  // block 1 stored, read back.
  ins(b2, Op::MOV, 34, K(16));
  ins(b2, Op::ADD, 33, R(6), R(34));
  mem_op(b2, Op::LD, Space::Global, 36, R(6), R(34));
  for (uint32_t j = 1; j < 4; ++j) mem_op(b2, Op::LD, Space::Global, 36 + j, R(33), K(4 * j));
  ins(b2, Op::ADD, 35, R(6), R(34));
  ins(b2, Op::MOV, 34, K(32));
  mem_op(b2, Op::LD, Space::Global, 42, R(6), R(34));
  for (uint32_t j = 1; j < 4; ++j) mem_op(b2, Op::LD, Space::Global, 42 + j, R(35), K(4 * j));
  // r55 = r6 + r34, then r55 changed: [r6 + r34] and [r34 + r6] are not
  // [r55 + 0].
  ins(b2, Op::ADD, 55, R(6), R(34));
  ins(b2, Op::ADD, 55, R(6), K(8));
  mem_op(b2, Op::LD, Space::Global, 56, R(6), R(34));
  mem_op(b2, Op::LD, Space::Global, 57, R(34), R(6));
  ins(b2, Op::MOV, 40, K(4096));
  ins(b2, Op::ADD, 41, R(8), R(40));
  mem_op(b2, Op::ST, Space::Global, 0, R(8), R(40), R(36));
  for (uint32_t j = 1; j < 4; ++j) mem_op(b2, Op::ST, Space::Global, 0, R(41), K(4 * j), R(36 + j));
  for (uint32_t j = 0; j < 4; ++j) mem_op(b2, Op::ST, Space::Global, 0, R(5), K(4 * j), R(42 + j));
  for (uint32_t j = 0; j < 4; ++j) mem_op(b2, Op::ST, Space::Global, 0, R(5), K(32 + 4 * j), R(20 + j));
  mem_op(b2, Op::ST, Space::Global, 0, R(5), K(48), R(56));
  mem_op(b2, Op::ST, Space::Global, 0, R(5), K(52), R(57));
  b2.term = {Term::JMP, 0, 3, 0, 0};
  // Block 3: the shared words block 1 stored, read back.
  for (uint32_t j = 0; j < 4; ++j) mem_op(b3, Op::LD, Space::Shared, 46 + j, R(7), K(4 * j));
  for (uint32_t j = 0; j < 4; ++j) mem_op(b3, Op::ST, Space::Global, 0, R(5), K(16 + 4 * j), R(46 + j));
  ins(b3, Op::AND, 15, R(1), K(3));
  ins(b3, Op::SEQ, 15, R(15), K(1));
  b3.term = {Term::BR, 15, 4, 5, 0};
  // Block 4, a quarter of the lanes: a group of four loads and stores.
  for (uint32_t j = 0; j < 4; ++j) mem_op(b4, Op::LD, Space::Global, 50 + j, R(6), K(4 * j + 4));
  for (uint32_t j = 0; j < 4; ++j) mem_op(b4, Op::ST, Space::Global, 0, R(8), K(5120 + 4 * j), R(50 + j));
  b4.term = {Term::JMP, 0, 5, 0, 0};
  b5.term = {Term::EXIT, 0, 0, 0, 0};
  const Program prog = warp_program("strided_rows", kPatterns, kShared, {b0, b1, b2, b3, b4, b5});
  const Outcome o = same_both_ways(prog, p, {}, mem, prog.kernel);
  ASSERT_EQ(o.fault.error, 0) << o.fault.message;
  // And from the definition: what each lane read, and what the groups
  // stored where the lanes' words lie apart (patterns 0, 3 and 4; pattern 1
  // for its groups of two).
  auto got = [&](const Outcome& x, uint32_t at) { return word_at(x.mem, at); };
  for (uint32_t k = 0; k < kPatterns; ++k)
    for (uint32_t l = 0; l < 32; ++l) {
      const uint32_t t = k * 32 + l, g = pattern(k, l, data), sh = pattern(k, l, 0);
      const std::string where = "pattern " + std::to_string(k) + " lane " + std::to_string(l);
      for (uint32_t j = 0; j < 4; ++j) {
        EXPECT_EQ(got(o, out + 64 * t + 4 * j), global_word(j == 0 ? g + 32 : g + 16 + 4 * j)) << where;
        EXPECT_EQ(got(o, out + 64 * t + 32 + 4 * j), global_word(g + 4 * j)) << where;
      }
      EXPECT_EQ(got(o, out + 64 * t + 48), global_word(g + 32)) << where;
      EXPECT_EQ(got(o, out + 64 * t + 52), global_word(g + 32)) << where;
      const uint32_t st = stores + k * kArea + pattern(k, l, 0);
      if (k == 0 || k == 3 || k == 4) {
        for (uint32_t j = 0; j < 4; ++j) {
          EXPECT_EQ(got(o, st + 4 * j), global_word(g + 4 * j)) << where;
          EXPECT_EQ(got(o, st + 2048 + 4 * j), shared_word(sh + 4 * j)) << where;
          if (j < 3) EXPECT_EQ(got(o, st + 3072 + 4 * j), global_word(g + 4 * j)) << where;
          EXPECT_EQ(got(o, st + 4096 + 4 * j), global_word(g + 16 + 4 * j)) << where;
          EXPECT_EQ(got(o, out + 64 * t + 16 + 4 * j), global_word(g + 12 - 4 * j)) << where;  // shared, read back
          if (l % 4 == 1) EXPECT_EQ(got(o, st + 5120 + 4 * j), global_word(g + 4 + 4 * j)) << where;
        }
      }
      if (k == 0 || k == 1 || k == 3 || k == 4) {
        EXPECT_EQ(got(o, st + 1024), global_word(g + 4)) << where;
        EXPECT_EQ(got(o, st + 1028), global_word(g)) << where;
      }
    }
  // At a window's end: a group of four loads at 16 bytes a lane whose row
  // ends with the window (the strided row), and a group of two (not a
  // vector's four words: another path): the same values.
  for (const Space sp : {Space::Global, Space::Shared})
    for (const uint32_t members : {4u, 2u}) {
      const uint32_t end = sp == Space::Global ? mem_bytes : kShared, start = end - (members == 4 ? 512 : 504);
      launch::GlobalMemory m2 = mem;
      auto w2 = [&](uint32_t byte, uint32_t v) { std::memcpy(&m2.bytes[byte], &v, 4); };
      for (uint32_t l = 0; l < 32; ++l) {
        w2(table + l * 16, p.global_base + start + 16 * l);
        w2(table + l * 16 + 4, start + 16 * l);
      }
      Block c0 = table_prologue(p, out, 64, 2, kShared), c1, c2;
      for (uint32_t j = 0; j < members; ++j) mem_op(c1, Op::LD, sp, 20 + j, R(sp == Space::Global ? 6 : 7), K(4 * j));
      for (uint32_t j = 0; j < members; ++j) mem_op(c1, Op::ST, Space::Global, 0, R(5), K(4 * j), R(20 + j));
      c1.term = {Term::JMP, 0, 2, 0, 0};
      c2.term = {Term::EXIT, 0, 0, 0, 0};
      const Program prog2 = warp_program("strided_rows_at_the_end", 1, kShared, {c0, c1, c2});
      const std::string what = std::string(space_name(sp)) + ", " + std::to_string(members) + " loads at the end";
      const Outcome o2 = same_both_ways(prog2, p, {}, m2, what);
      ASSERT_EQ(o2.fault.error, 0) << o2.fault.message;
      for (uint32_t l = 0; l < 32; ++l)
        for (uint32_t j = 0; j < members; ++j) {
          const uint32_t at = start + 16 * l + 4 * j;
          EXPECT_EQ(got(o2, out + 64 * l + 4 * j), sp == Space::Global ? global_word(at) : shared_word(at))
              << what << ", lane " << l;
        }
    }
}

std::string jit_kernels() {
  std::ifstream in(QGPU_JIT_KERNELS_PTX);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// nvcc-built kernels (jit_kernels.cu) lowered for the interpreter's device:
// each takes (in, out, n) with `input` as in, n its length, and 16 n bytes
// of out.
struct KernelLaunch {
  ModuleImage img;
  Program prog;
  std::vector<uint8_t> params;
  uint64_t out = 0;  // the output's offset in img.mem
};
KernelLaunch prepare(const std::string& kernel, uint32_t ctas, uint32_t threads, const std::vector<uint32_t>& input) {
  const Params p = cuda_params(64u << 20);
  KernelLaunch k{load_module(jit_kernels(), p), {}, std::vector<uint8_t>(20), 0};
  const uint32_t n = uint32_t(input.size());
  const uint64_t in = k.img.alloc(4 * n), out = k.img.alloc(16 * n);
  std::memcpy(&k.img.mem.bytes[in - k.img.mem.base], input.data(), 4 * n);
  const int32_t nn = int32_t(n);
  std::memcpy(k.params.data(), &in, 8);
  std::memcpy(k.params.data() + 8, &out, 8);
  std::memcpy(k.params.data() + 16, &nn, 4);
  k.out = out - k.img.mem.base;
  LowerOptions opts;
  opts.native_float = true;
  k.prog = lower(k.img.module, kernel, {{ctas, 1, 1}, {threads, 1, 1}, 0, k.img.symbols}, p, opts);
  return k;
}

Outcome kernel_both_ways(const std::string& kernel, uint32_t ctas, uint32_t threads) {
  std::mt19937 rng(7);
  std::vector<uint32_t> input(1000);
  for (uint32_t& v : input) v = rng() % 3 == 0 ? rng() : rng() % 1000;
  const KernelLaunch k = prepare(kernel, ctas, threads, input);
  return same_both_ways(k.prog, cuda_params(64u << 20), k.params, k.img.mem, kernel);
}

TEST(Jit, KernelsMatchTheInterpreter) {
  if (!jit::built_in()) GTEST_SKIP() << "built without LLVM";
  const uint64_t compiled0 = jit::counters().compiled;
  for (const char* k : {"_Z7alu_mixPKjPji", "_Z7divergePKjPji", "_Z10memory_mixPKjPji", "_Z14atomics_floatsPKjPji",
                        "_Z11atomics_allPKjPji"}) {
    const Outcome o = kernel_both_ways(k, 3, 160);
    EXPECT_EQ(o.fault.error, 0) << k << ": " << o.fault.message;
    EXPECT_GT(o.stats.lane_instructions, 0u);
  }
  EXPECT_GT(jit::counters().compiled, compiled0);
  // CTAs of 100 threads: their last warp has 4 live lanes.
  const Outcome o = kernel_both_ways("_Z14atomics_floatsPKjPji", 2, 100);
  EXPECT_EQ(o.fault.error, 0) << o.fault.message;
  const Outcome a = kernel_both_ways("_Z11atomics_allPKjPji", 2, 100);
  EXPECT_EQ(a.fault.error, 0) << a.fault.message;
}

// run() on several host threads (Interpreter::set_cta_threads): CTAs run at
// once over the same global memory.  Kernels whose result does not depend
// on the CTAs' order give the same memory and counts as one thread (compiled
// or interpreted); CTAs that meet through atomics and a fence see each
// other's writes; a fault is the lowest faulting CTA's; the step limit and
// the cancel flag still end the launch.
// 2000 words: memory_mix's three outputs (words, halfwords from word 2 n,
// bytes from word 3 n) stay apart for up to 2 n threads.
std::vector<uint32_t> kernel_input() {
  std::mt19937 rng(11);
  std::vector<uint32_t> v(2000);
  for (uint32_t& x : v) x = rng() % 3 == 0 ? rng() : rng() % 1000;
  return v;
}

uint32_t out_word(const Outcome& o, uint32_t i) {
  uint32_t v;
  std::memcpy(&v, &o.mem.bytes[o.out + 4 * i], 4);
  return v;
}

Outcome kernel_on_threads(const std::string& kernel, uint32_t ctas, uint32_t threads, uint32_t host_threads,
                          jit::Mode mode, uint64_t max_steps = UINT64_MAX, const std::atomic<bool>* cancel = nullptr) {
  KernelLaunch k = prepare(kernel, ctas, threads, kernel_input());
  Outcome o;
  o.mem = k.img.mem;
  o.out = k.out;
  Interpreter interp(k.prog, cuda_params(64u << 20), k.prog.ctas, k.prog.threads, k.params, o.mem);
  interp.set_jit(mode);
  interp.set_cta_threads(host_threads);
  interp.run(max_steps, cancel);
  o.stats = interp.stats();
  o.fault = interp.fault();
  return o;
}

// Registers start at zero in every CTA, though a CTA after a worker's first
// zeroes only those a thread may read before writing them (the interpreter's
// entry_reads): a register read first as a branch condition (r2), as a
// store's value (r4), as an ALU operand (r5), or as an f64 operation's third
// and fourth operands (r6, r7: DADD's y) reads 0 in each of eight CTAs, after
// the CTA before wrote it; one CTA after another on one host thread, and on
// four, interpreted and compiled.
TEST(CtaThreads, RegistersReadBeforeWrittenStartAtZeroInEveryCta) {
  Params p = cuda_params(1u << 20);
  const uint32_t ctas = 8, threads = 64;
  Program prog;
  prog.kernel = "reads_before_writes";
  prog.ctas = ctas;
  prog.threads = threads;
  Block b0, b1, b2, b3;
  ins(b0, Op::CTA, 1, K(0));
  ins(b0, Op::SHL, 3, R(1), K(2));
  ins(b0, Op::ADD, 3, R(3), K(p.global_base));   // r3: this CTA's word in each table
  b0.term = {Term::BR, 2, 1, 2, 0};              // r2 != 0: B1, else B2
  mem_op(b1, Op::ST, Space::Global, 0, R(3), K(0), K(0xbad));
  b1.term = {Term::JMP, 0, 3, 0, 0};
  mem_op(b2, Op::ST, Space::Global, 0, R(3), K(64), R(4));   // r4 as a store's value
  b2.term = {Term::JMP, 0, 3, 0, 0};
  ins(b3, Op::ADD, 5, R(5), K(1));                           // r5 as an operand
  mem_op(b3, Op::ST, Space::Global, 0, R(3), K(128), R(5));
  const Operand y[kMaxArity] = {K(0), K(0x3ff00000), R(6), R(7), K(0), K(0)};  // 1.0 + (r6, r7)
  b3.instrs.push_back(make_float(Op::DADD, 8, y, FloatMod{.rnd = FRnd::Rn, .hi = true}));
  mem_op(b3, Op::ST, Space::Global, 0, R(3), K(192), R(8));
  ins(b3, Op::MOV, 2, K(1));
  ins(b3, Op::MOV, 4, K(0x77));
  ins(b3, Op::MOV, 6, K(0));
  ins(b3, Op::MOV, 7, K(0x40000000));   // y = 2.0 for a CTA that saw it
  b3.term = {Term::EXIT, 0, 0, 0, 0};
  prog.blocks = {b0, b1, b2, b3};
  launch::GlobalMemory mem0;
  mem0.base = p.global_base;
  mem0.bytes.assign(256, 0);
  for (const jit::Mode mode : {jit::Mode::Off, jit::Mode::Always}) {
    if (mode != jit::Mode::Off && !jit::built_in()) continue;
    for (const uint32_t host_threads : {1u, 4u}) {
      SCOPED_TRACE(std::string(mode == jit::Mode::Off ? "interpreted" : "compiled") + " on " +
                   std::to_string(host_threads) + " host threads");
      launch::GlobalMemory mem = mem0;
      Interpreter in(prog, p, ctas, threads, {}, mem);
      in.set_jit(mode, 0);
      in.set_cta_threads(host_threads);
      in.run(UINT64_MAX, nullptr);
      ASSERT_EQ(in.fault().error, 0) << in.fault().message;
      auto at = [&](uint32_t off) {
        uint32_t v;
        std::memcpy(&v, &mem.bytes[off], 4);
        return v;
      };
      for (uint32_t c = 0; c < ctas; ++c) {
        EXPECT_EQ(at(4 * c), 0u) << "CTA " << c << " took the branch on r2";
        EXPECT_EQ(at(64 + 4 * c), 0u) << "CTA " << c << " stored r4";
        EXPECT_EQ(at(128 + 4 * c), 1u) << "CTA " << c << " r5 + 1";
        EXPECT_EQ(at(192 + 4 * c), 0x3ff00000u) << "CTA " << c << " 1.0 + (r6, r7)'s high word";
      }
    }
  }
}

TEST(CtaThreads, SameResultsAsOneThread) {
  for (const jit::Mode mode : {jit::Mode::Off, jit::Mode::Always}) {
    if (mode != jit::Mode::Off && !jit::built_in()) continue;
    for (const char* k : {"_Z7alu_mixPKjPji", "_Z7divergePKjPji", "_Z10memory_mixPKjPji", "_Z9ctas_meetPKjPji"}) {
      SCOPED_TRACE(std::string(k) + (mode == jit::Mode::Off ? " interpreted" : " compiled"));
      const Outcome one = kernel_on_threads(k, 24, 160, 1, mode);
      const Outcome four = kernel_on_threads(k, 24, 160, 4, mode);
      EXPECT_EQ(one.fault.error, 0) << one.fault.message;
      EXPECT_EQ(four.fault.error, 0) << four.fault.message;
      EXPECT_EQ(one.stats.host_threads, 1u);
      EXPECT_EQ(four.stats.host_threads, 4u);
      EXPECT_EQ(one.stats.steps, four.stats.steps);
      EXPECT_EQ(one.stats.instructions, four.stats.instructions);
      EXPECT_EQ(one.stats.lane_instructions, four.stats.lane_instructions);
      EXPECT_TRUE(one.mem.bytes == four.mem.bytes) << "global memory differs";
    }
  }
  // ctas_meet's totals, known without the machine: every thread counted
  // once, every CTA's ticket taken, and the CTA that took the last one saw
  // every other CTA's partial sum.
  const Outcome o = kernel_on_threads("_Z9ctas_meetPKjPji", 24, 160, 4, jit::Mode::Always);
  ASSERT_EQ(o.fault.error, 0) << o.fault.message;
  const std::vector<uint32_t> in = kernel_input();
  uint32_t sum = 0, most = 0;
  for (uint32_t i = 0; i < 24 * 160; ++i) {
    sum += in[i % in.size()];
    most = std::max(most, in[i % in.size()]);
  }
  EXPECT_EQ(out_word(o, 0), 24u * 160u);
  EXPECT_EQ(out_word(o, 1) + out_word(o, 2) + out_word(o, 3) + out_word(o, 4), sum);
  EXPECT_EQ(out_word(o, 5), most);
  EXPECT_EQ(out_word(o, 7), 24u);
  EXPECT_EQ(out_word(o, 8), sum);
}

// 64-bit and f64 atomics at generic addresses: the global and shared
// branches are the native atomics, the local one the two-word sequence (the
// native op is global and shared memory's), and all three lower and run.
TEST(CtaThreads, GenericWideAtomicsOnEverySpace) {
  const Params p = cuda_params(64u << 20);
  const std::string text = R"(.version 8.5
.target sm_75
.address_size 64
.visible .entry k(.param .u64 p)
{
  .reg .b64 %rd<16>;
  .reg .f64 %fd<8>;
  .local .align 8 .b8 loc[16];
  .shared .align 8 .b8 sh[16];
  ld.param.u64 %rd1, [p];
  atom.add.u64 %rd2, [%rd1], 5;
  atom.cas.b64 %rd3, [%rd1+8], 7, 9;
  atom.add.f64 %fd1, [%rd1+16], 0d3FF8000000000000;
  atom.min.s64 %rd4, [%rd1+24], -3;
  mov.u64 %rd5, loc;
  cvta.local.u64 %rd6, %rd5;
  st.local.u64 [loc], 100;
  st.local.f64 [loc+8], 0d4000000000000000;
  atom.add.u64 %rd7, [%rd6], 11;
  atom.add.f64 %fd2, [%rd6+8], 0d3FF8000000000000;
  ld.local.u64 %rd8, [loc];
  ld.local.f64 %fd3, [loc+8];
  mov.u64 %rd9, sh;
  cvta.shared.u64 %rd10, %rd9;
  st.shared.u64 [sh], 40;
  atom.exch.b64 %rd11, [%rd10], 41;
  ld.shared.u64 %rd12, [sh];
  st.global.u64 [%rd1+32], %rd2;
  st.global.u64 [%rd1+40], %rd3;
  st.global.f64 [%rd1+48], %fd1;
  st.global.u64 [%rd1+56], %rd4;
  st.global.u64 [%rd1+64], %rd7;
  st.global.u64 [%rd1+72], %rd8;
  st.global.f64 [%rd1+80], %fd2;
  st.global.f64 [%rd1+88], %fd3;
  st.global.u64 [%rd1+96], %rd11;
  st.global.u64 [%rd1+104], %rd12;
  ret;
}
)";
  ModuleImage m = load_module(text, p);
  const uint64_t buf = m.alloc(112);
  auto at = [&](uint32_t off) { return &m.mem.bytes[buf - m.mem.base + off]; };
  const uint64_t init[4] = {1, 7, 0, 2};
  const double half = 0.25;
  std::memcpy(at(0), &init[0], 8);
  std::memcpy(at(8), &init[1], 8);
  std::memcpy(at(16), &half, 8);
  std::memcpy(at(24), &init[3], 8);
  std::vector<uint8_t> params(8);
  std::memcpy(params.data(), &buf, 8);
  LowerOptions opts;
  opts.native_float = true;
  const Program prog = lower(m.module, "k", {{1, 1, 1}, {1, 1, 1}, 0, m.symbols}, p, opts);
  Interpreter in(prog, p, 1, 1, params, m.mem);
  in.run(1'000'000);
  ASSERT_EQ(in.fault().error, 0) << in.fault().message;
  auto u64 = [&](uint32_t off) {
    uint64_t v;
    std::memcpy(&v, at(off), 8);
    return v;
  };
  auto f64 = [&](uint32_t off) {
    double v;
    std::memcpy(&v, at(off), 8);
    return v;
  };
  EXPECT_EQ(u64(0), 6u);
  EXPECT_EQ(u64(8), 9u);
  EXPECT_EQ(f64(16), 1.75);
  EXPECT_EQ(int64_t(u64(24)), -3);
  EXPECT_EQ(u64(32), 1u);
  EXPECT_EQ(u64(40), 7u);
  EXPECT_EQ(f64(48), 0.25);
  EXPECT_EQ(u64(56), 2u);
  EXPECT_EQ(u64(64), 100u);   // local: the old value
  EXPECT_EQ(u64(72), 111u);   // and the new
  EXPECT_EQ(f64(80), 2.0);
  EXPECT_EQ(f64(88), 3.5);
  EXPECT_EQ(u64(96), 40u);    // shared
  EXPECT_EQ(u64(104), 41u);
}

// A program whose accesses rely on CTAs running one at a time (strong loads
// of two words) is lowered so (Program::ctas_in_order); one without such
// sequences is not.  The 64-bit atomics and f32/f64 adds of atomics_wide
// are native atomics on the CUDA-sized device (docs/isa.md section 3.3):
// not marked, its CTAs run on 4 threads, and its sums are the host's.
TEST(CtaThreads, SequencesAtomicByTheScheduleKeepCtasInOrder) {
  const Params p = cuda_params(64u << 20);
  ModuleImage img = load_module(jit_kernels(), p);
  LowerOptions opts;
  opts.native_float = true;
  EXPECT_FALSE(lower(img.module, "_Z12atomics_widePKjPji", {{24, 1, 1}, {160, 1, 1}, 0, img.symbols}, p, opts)
                   .ctas_in_order);
  EXPECT_FALSE(lower(img.module, "_Z9ctas_meetPKjPji", {{24, 1, 1}, {160, 1, 1}, 0, img.symbols}, p, opts)
                   .ctas_in_order);
  // A strong load of two words (a tile status and its value, as CUB reads
  // them) is one access to other CTAs; the same load without .relaxed is
  // not, nor one whose scope is its own CTA (cuda::barrier's state).
  for (const char* q : {"ld.relaxed.gpu.global.v2.u32", "ld.volatile.global.u64", "ld.acquire.gpu.b64",
                        "ld.global.v2.u32", "ld.acquire.cta.b64", "ld.relaxed.cta.global.v2.u32"}) {
    const bool strong = std::string(q).find(".cta") == std::string::npos &&
                        (std::string(q).find("relaxed") != std::string::npos ||
                         std::string(q).find("volatile") != std::string::npos ||
                         std::string(q).find("acquire") != std::string::npos);
    const bool wide64 = std::string(q).find("64") != std::string::npos;
    const std::string text = std::string(".version 8.5\n.target sm_75\n.address_size 64\n") +
                             ".visible .entry k(.param .u64 p)\n{\n  .reg .b32 %r<4>;\n  .reg .b64 %rd<4>;\n" +
                             "  ld.param.u64 %rd1, [p];\n  " + q + (wide64 ? " %rd2, [%rd1];\n  st.global.u64 [%rd1+8], %rd2;\n"
                                                                               : " {%r1, %r2}, [%rd1];\n  st.global.v2.u32 [%rd1+8], {%r1, %r2};\n") +
                             "  ret;\n}\n";
    ModuleImage m = load_module(text, p);
    EXPECT_EQ(lower(m.module, "k", {{4, 1, 1}, {32, 1, 1}, 0, m.symbols}, p, opts).ctas_in_order, strong) << q;
  }
  for (const jit::Mode mode : {jit::Mode::Off, jit::Mode::Always}) {
    if (mode != jit::Mode::Off && !jit::built_in()) continue;
    const Outcome o = kernel_on_threads("_Z12atomics_widePKjPji", 24, 160, 4, mode);
    ASSERT_EQ(o.fault.error, 0) << o.fault.message;
    EXPECT_EQ(o.stats.host_threads, 4u);
    const std::vector<uint32_t> in = kernel_input();
    uint64_t sum = 0, most = 0;
    for (uint32_t i = 0; i < 24 * 160; ++i) {
      const uint64_t v = in[i % in.size()] % 1000;
      sum += v;
      most = std::max(most, v << 33);
    }
    EXPECT_EQ(out_word(o, 0), 24u * 160u);  // the counter's two words
    EXPECT_EQ(out_word(o, 1), 24u * 160u);
    EXPECT_EQ(uint64_t(out_word(o, 3)) << 32 | out_word(o, 2), most);
    float f;
    const uint32_t fw = out_word(o, 4);
    std::memcpy(&f, &fw, 4);
    EXPECT_EQ(double(f), double(sum));
    double d;
    const uint64_t dw = uint64_t(out_word(o, 7)) << 32 | out_word(o, 6);
    std::memcpy(&d, &dw, 8);
    EXPECT_EQ(d, double(sum));
  }
}

TEST(CtaThreads, FaultIsTheLowestFaultingCtas) {
  for (const jit::Mode mode : {jit::Mode::Off, jit::Mode::Always}) {
    if (mode != jit::Mode::Off && !jit::built_in()) continue;
    const Outcome one = kernel_on_threads("_Z8bad_loadPKjPji", 9, 64, 1, mode);
    const Outcome four = kernel_on_threads("_Z8bad_loadPKjPji", 9, 64, 4, mode);
    EXPECT_EQ(one.fault.error, launch::kIllegalAddress);
    EXPECT_EQ(four.fault.error, one.fault.error);
    EXPECT_EQ(four.fault.message, one.fault.message);
    EXPECT_NE(four.fault.message.find("CTA 0,"), std::string::npos) << four.fault.message;
  }
}

TEST(CtaThreads, StepLimitAndCancelEndTheLaunch) {
  const Outcome limited = kernel_on_threads("_Z9long_loopPKjPji", 24, 160, 4, jit::Mode::Off, 20000);
  EXPECT_EQ(limited.fault.error, launch::kLaunchTimeout) << limited.fault.message;
  EXPECT_LE(limited.stats.steps, 20000u + 4 * Interpreter::kCancelSteps);
  std::atomic<bool> cancel{true};
  const Outcome cancelled = kernel_on_threads("_Z9long_loopPKjPji", 24, 160, 4, jit::Mode::Off, UINT64_MAX, &cancel);
  EXPECT_LE(cancelled.stats.steps, 4 * Interpreter::kCancelSteps);
  EXPECT_EQ(cancelled.fault.error, launch::kLaunchFailure) << cancelled.fault.message;
  EXPECT_NE(cancelled.fault.message.find("cancelled"), std::string::npos) << cancelled.fault.message;
}

// A lane's out-of-range load and a lane's misaligned store fault with the
// interpreter's error and message, the block's earlier stores uncommitted.
TEST(Jit, FaultsMatchTheInterpreter) {
  if (!jit::built_in()) GTEST_SKIP() << "built without LLVM";
  const Outcome ld = kernel_both_ways("_Z8bad_loadPKjPji", 2, 64);
  EXPECT_EQ(ld.fault.error, launch::kIllegalAddress);
  EXPECT_NE(ld.fault.message.find("out-of-range global load of 4 bytes"), std::string::npos) << ld.fault.message;
  const Outcome st = kernel_both_ways("_Z9bad_storePKjPji", 2, 64);
  EXPECT_EQ(st.fault.error, launch::kMisalignedAddress);
  EXPECT_NE(st.fault.message.find("misaligned global store of 4 bytes"), std::string::npos) << st.fault.message;
}

// run() goes on with a warp's compiled blocks without going back to its
// loop (exec()'s chain): the step limit and the cancel flag still end the
// launch at the same EXEC, with the same stats, registers and memory.
TEST(Jit, StepLimitAndCancelStopAtTheSameExec) {
  if (!jit::built_in()) GTEST_SKIP() << "built without LLVM";
  const Params p = cuda_params(1u << 20);
  auto add = [](Block& b, Op op, uint32_t d, Operand a, Operand bb = K(0)) {
    Instr in;
    in.op = op;
    in.dst = d;
    in.a = a;
    in.b = bb;
    b.instrs.push_back(in);
  };
  // Each thread counts to 3000 + 7 * lane in B1, a block per iteration
  // (the warp's lanes leave the loop one by one), then stores its count.
  Program prog;
  prog.kernel = "count";
  prog.threads = 80;  // the last warp has 16 lanes
  prog.ctas = 3;
  Block b0, b1, b2;
  ins(b0, Op::LANE, 1, K(0));
  ins(b0, Op::MUL, 4, R(1), K(7));
  ins(b0, Op::ADD, 4, R(4), K(3000));
  ins(b0, Op::MOV, 2, K(0));
  b0.term = {Term::JMP, 0, 1, 0, 0};
  ins(b1, Op::ADD, 2, R(2), K(1));
  ins(b1, Op::CLOCK, 5, K(0));
  ins(b1, Op::SLTU, 3, R(2), R(4));
  b1.term = {Term::BR, 3, 1, 2, 0};
  ins(b2, Op::WARP, 6, K(0));
  ins(b2, Op::MUL, 6, R(6), K(32));
  ins(b2, Op::ADD, 6, R(6), R(1));
  ins(b2, Op::MUL, 6, R(6), K(4));
  ins(b2, Op::ADD, 6, R(6), K(p.global_base));
  Instr st;
  st.op = Op::ST;
  st.a = R(6);
  st.b = K(0);
  st.c = R(5);
  b2.instrs.push_back(st);
  b2.term = {Term::EXIT, 0, 0, 0, 0};
  prog.blocks = {b0, b1, b2};
  launch::GlobalMemory mem;
  mem.base = p.global_base;
  mem.bytes.assign(4 * 96, 0);
  const std::atomic<bool> cancel{true};
  for (const uint64_t limit : {uint64_t(1), uint64_t(5), uint64_t(3003), uint64_t(16384 + 2), UINT64_MAX}) {
    for (const std::atomic<bool>* c : {static_cast<const std::atomic<bool>*>(nullptr), &cancel}) {
      const Outcome a = run(prog, p, {}, mem, jit::Mode::Off, 0, limit, c);
      for (const uint32_t threshold : {3u, 0u}) {
        const Outcome b = run(prog, p, {}, mem, threshold ? jit::Mode::On : jit::Mode::Always, threshold, limit, c);
        const std::string how = "limit " + std::to_string(limit) + (c ? ", cancelled" : "") + ", threshold " +
                                std::to_string(threshold);
        EXPECT_EQ(a.stats.steps, b.stats.steps) << how;
        EXPECT_EQ(a.stats.lane_instructions, b.stats.lane_instructions) << how;
        EXPECT_EQ(a.fault.error, b.fault.error) << how;
        EXPECT_EQ(a.fault.message, b.fault.message) << how;
        EXPECT_TRUE(a.mem.bytes == b.mem.bytes) << how;
        EXPECT_EQ(a.regs, b.regs) << how;
      }
      if (c) {  // cancelled at the first check
        EXPECT_EQ(a.stats.steps, limit < Interpreter::kCancelSteps ? limit + 1 : Interpreter::kCancelSteps) << limit;
        EXPECT_EQ(a.fault.error, limit < Interpreter::kCancelSteps ? launch::kLaunchTimeout : launch::kLaunchFailure);
      } else if (limit == UINT64_MAX) {
        EXPECT_EQ(a.fault.error, 0) << a.fault.message;
      } else {
        EXPECT_EQ(a.stats.steps, limit + 1);
        EXPECT_EQ(a.fault.error, launch::kLaunchTimeout);
      }
    }
  }
}

// Every f32 comparison (with and without .ftz), division (.rn compiled;
// .ftz, .sat and .rz through the interpreter), minimum and maximum, integer
// to f32 (.rn compiled), f32 to integer and f32 to f32 (every integer
// rounding, or none, .ftz and .sat, compiled) on every pair of edge values
// (zeros, subnormals, the least normal, infinities, NaNs, extremes, halves
// and the integer ranges' ends), one pair per thread, compiled and
// interpreted.
TEST(Jit, FloatOperationsOnEdgeValues) {
  if (!jit::built_in()) GTEST_SKIP() << "built without LLVM";
  const Params p = cuda_params(1u << 20);
  const uint32_t edges[] = {0x00000000, 0x80000000, 0x00000001, 0x80000005, 0x007fffff, 0x00800000, 0x3f800000,
                            0xbf800000, 0x40400000, 0x7f7fffff, 0xff7fffff, 0x7f800000, 0xff800000, 0x7fc00000,
                            0xffc00001, 0x7f800001, 0x33800000,
                            // 0.5, 1.5, 2.5, -1.5, -0.5, just below 1, 2^31 - 128, 2^31, -2^31, below -2^31,
                            // 2^32, just below 2^32; as integers: 2^24 + 1, INT_MAX, -1
                            0x3f000000, 0x3fc00000, 0x40200000, 0xbfc00000, 0xbf000000, 0x3f7fffff, 0x4effffff,
                            0x4f000000, 0xcf000000, 0xcf000001, 0x4f800000, 0x4f7fffff, 0x01000001, 0x7fffffff,
                            0xffffffff};
  const uint32_t E = std::size(edges), pairs = E * E, threads = (pairs + 31) / 32 * 32;
  struct Form {
    Op op;
    FloatMod m;
  };
  std::vector<Form> forms;
  for (int c = 1; c <= 14; ++c)
    for (const bool ftz : {false, true}) {
      FloatMod m;
      m.rnd = FRnd::None;
      m.cmp = FCmp(c);
      m.ftz = ftz;
      forms.push_back({Op::FCMP, m});
    }
  for (const FRnd r : {FRnd::Rn, FRnd::Rz})
    for (const bool ftz : {false, true})
      for (const bool sat : {false, true}) {
        FloatMod m;
        m.rnd = r;
        m.ftz = ftz;
        m.sat = sat;
        forms.push_back({Op::FDIV, m});
      }
  auto form = [&](Op op, FRnd r, bool ftz, bool sat) {
    FloatMod m;
    m.rnd = r;
    m.ftz = ftz;
    m.sat = sat;
    forms.push_back({op, m});
    return forms.size() - 1;
  };
  const size_t min_at = forms.size();
  for (const Op op : {Op::FMIN, Op::FMAX})
    for (const bool ftz : {false, true}) form(op, FRnd::None, ftz, false);
  const size_t to_float_at = forms.size();
  for (const Op op : {Op::I2F, Op::U2F})
    for (const FRnd r : {FRnd::Rn, FRnd::Rz})
      for (const bool sat : {false, true}) form(op, r, false, sat);
  const size_t to_int_at = forms.size();
  for (const Op op : {Op::F2I, Op::F2U})
    for (const FRnd r : {FRnd::Rni, FRnd::Rzi, FRnd::Rmi, FRnd::Rpi})
      for (const bool ftz : {false, true}) form(op, r, ftz, false);
  const size_t rint_at = forms.size();
  for (const FRnd r : {FRnd::Rni, FRnd::Rzi, FRnd::Rmi, FRnd::Rpi, FRnd::None})
    for (const bool ftz : {false, true})
      for (const bool sat : {false, true}) form(Op::FRINT, r, ftz, sat);
  Program prog;
  prog.kernel = "edges";
  prog.threads = threads;
  prog.ctas = 1;
  const uint32_t in_at = p.global_base, out_at = p.global_base + 8 * threads;
  Block b0;  // r3: the thread, r4/r5: its pair, r6: its first result's address
  ins(b0, Op::WARP, 1, K(0));
  ins(b0, Op::MUL, 1, R(1), K(32));
  ins(b0, Op::LANE, 2, K(0));
  ins(b0, Op::ADD, 3, R(1), R(2));
  ins(b0, Op::MUL, 7, R(3), K(8));
  Instr* l = ins(b0, Op::LD, 4, R(7), K(in_at));
  l->space = Space::Global;
  l = ins(b0, Op::LD, 5, R(7), K(in_at + 4));
  l->space = Space::Global;
  ins(b0, Op::MUL, 6, R(3), K(4));
  ins(b0, Op::ADD, 6, R(6), K(out_at));
  b0.term = {Term::JMP, 0, 1, 0, 0};
  prog.blocks.push_back(b0);
  for (size_t k = 0; k < forms.size(); ++k) {
    Block b;
    b.instrs.push_back(make_float(forms[k].op, 8, R(4), R(5), K(0), forms[k].m));
    Instr* st = ins(b, Op::ST, 0, R(6), K(uint32_t(4 * threads * k)), R(8));
    st->space = Space::Global;
    b.term = {Term::JMP, 0, uint32_t(k + 2), 0, 0};
    prog.blocks.push_back(b);
  }
  Block last;
  last.term = {Term::EXIT, 0, 0, 0, 0};
  prog.blocks.back().term = {Term::EXIT, 0, 0, 0, 0};
  launch::GlobalMemory mem;
  mem.base = p.global_base;
  mem.bytes.assign(8 * threads + 4 * threads * forms.size(), 0);
  for (uint32_t t = 0; t < threads; ++t) {
    const uint32_t a = edges[(t % pairs) % E], b = edges[(t % pairs) / E];
    std::memcpy(&mem.bytes[8 * t], &a, 4);
    std::memcpy(&mem.bytes[8 * t + 4], &b, 4);
  }
  const Outcome o = same_both_ways(prog, p, {}, mem, prog.kernel);
  EXPECT_EQ(o.fault.error, 0) << o.fault.message;
  // The interpreter's results are the reference's (float_ref.h) for a few pairs.
  auto result = [&](size_t k, uint32_t t) {
    uint32_t v;
    std::memcpy(&v, &o.mem.bytes[8 * threads + 4 * (threads * k + t)], 4);
    return v;
  };
  // Form 2 (c - 1) + ftz is comparison c (Eq 1 .. Nan 14); thread t the pair (edges[t % E], edges[t / E]).
  EXPECT_EQ(result(2 * (2 - 1), 0), 0u);        // 0 .ne 0: false
  EXPECT_EQ(result(0, 1), 1u);                  // -0 .eq 0
  EXPECT_EQ(result(0, E * 13 + 13), 0u);        // NaN .eq NaN: false (ordered)
  EXPECT_EQ(result(2 * (2 - 1), E * 13 + 13), 0u);  // NaN .ne NaN: false (ordered)
  EXPECT_EQ(result(2 * (8 - 1), E * 13 + 13), 1u);  // NaN .neu NaN
  EXPECT_EQ(result(2 * (13 - 1), 2), 1u);       // .num of a subnormal and 0
  EXPECT_EQ(result(1, 2), 1u);                  // .eq.ftz: a subnormal is 0
  EXPECT_EQ(result(0, 2), 0u);                  // .eq: it is not
  // Edge indexes: 0 +0, 1 -0, 2 subnormal, 8 3.0, 11 +inf, 13 NaN, 17 0.5, 18 1.5, 19 2.5, 20 -1.5,
  // 21 -0.5, 24 2^31, 25 -2^31, 26 below -2^31, 27 2^32, 29 2^24 + 1, 30 INT_MAX, 31 -1.
  auto at = [&](size_t a, size_t b) { return uint32_t(b * E + a); };
  EXPECT_EQ(result(min_at, at(1, 0)), 0x80000000u);        // min(-0, +0) = -0
  EXPECT_EQ(result(min_at, at(0, 1)), 0x80000000u);
  EXPECT_EQ(result(min_at + 2, at(1, 0)), 0u);             // max(-0, +0) = +0
  EXPECT_EQ(result(min_at + 2, at(13, 8)), 0x40400000u);   // max(NaN, 3) = 3
  EXPECT_EQ(result(min_at, at(13, 13)), 0x7fffffffu);      // min(NaN, NaN): the canonical NaN
  EXPECT_EQ(result(min_at + 1, at(2, 0)), 0u);             // min.ftz(subnormal, +0): +0
  EXPECT_EQ(result(to_float_at, at(29, 0)), 0x4b800000u);  // cvt.rn.f32.s32(2^24 + 1) = 2^24 (ties to even)
  EXPECT_EQ(result(to_float_at + 4, at(31, 0)), 0x4f800000u);  // cvt.rn.f32.u32(2^32 - 1) = 2^32
  EXPECT_EQ(result(to_float_at, at(31, 0)), 0xbf800000u);  // cvt.rn.f32.s32(-1) = -1
  EXPECT_EQ(result(to_int_at, at(19, 0)), 2u);             // cvt.rni.s32.f32(2.5) = 2
  EXPECT_EQ(result(to_int_at + 2, at(20, 0)), uint32_t(-1));  // cvt.rzi.s32.f32(-1.5) = -1
  EXPECT_EQ(result(to_int_at + 4, at(20, 0)), uint32_t(-2));  // cvt.rmi.s32.f32(-1.5) = -2
  EXPECT_EQ(result(to_int_at + 6, at(17, 0)), 1u);         // cvt.rpi.s32.f32(0.5) = 1
  EXPECT_EQ(result(to_int_at + 7, at(2, 0)), 0u);          // cvt.rpi.ftz.s32.f32(subnormal) = 0
  EXPECT_EQ(result(to_int_at + 6, at(2, 0)), 1u);          // without .ftz: 1
  EXPECT_EQ(result(to_int_at, at(24, 0)), 0x7fffffffu);    // 2^31 saturates
  EXPECT_EQ(result(to_int_at, at(26, 0)), 0x80000000u);    // below -2^31 saturates
  EXPECT_EQ(result(to_int_at, at(13, 0)), 0u);             // NaN: 0
  EXPECT_EQ(result(to_int_at + 8, at(27, 0)), 0xffffffffu);  // cvt.rni.u32.f32(2^32) saturates
  EXPECT_EQ(result(to_int_at + 8 + 4, at(20, 0)), 0u);     // cvt.rmi.u32.f32(-1.5) = 0
  EXPECT_EQ(result(rint_at + 8, at(21, 0)), 0xbf800000u);  // cvt.rmi.f32.f32(-0.5) = -1
  EXPECT_EQ(result(rint_at + 4, at(21, 0)), 0x80000000u);  // cvt.rzi.f32.f32(-0.5) = -0
  EXPECT_EQ(result(rint_at + 5, at(21, 0)), 0u);           // with .sat: +0
  EXPECT_EQ(result(rint_at, at(19, 0)), 0x40000000u);      // cvt.rni.f32.f32(2.5) = 2
  EXPECT_EQ(result(rint_at + 1, at(8, 0)), 0x3f800000u);   // cvt.rni.sat.f32.f32(3) = 1
  EXPECT_EQ(result(rint_at, at(15, 0)), 0x7fffffffu);      // a signalling NaN: the canonical NaN
  EXPECT_EQ(result(rint_at + 17, at(8, 0)), 0x3f800000u);  // cvt.sat.f32.f32(3) = 1
  EXPECT_EQ(result(rint_at + 18, at(3, 0)), 0x80000000u);  // cvt.ftz.f32.f32(-subnormal) = -0
  EXPECT_EQ(result(rint_at + 16, at(3, 0)), 0x80000005u);  // cvt.f32.f32 keeps it
}

}  // namespace
}  // namespace qgpu::machine
