// The interpreter's execution model on hand-written programs: divergence and
// reconvergence (minimum next block), block-level memory semantics, atomics
// in lane order, barriers, faults, and the step-by-step record.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>

#include <random>

#include "model_host/machine/api.h"
#include "model_host/machine/interpreter.h"

namespace qgpu::machine {
namespace {

Operand r(uint32_t x) { return Operand::reg(x); }
Operand k(uint32_t x) { return Operand::k(x); }
Instr alu(Op op, uint32_t d, Operand a, Operand b = k(0), Operand c = k(0)) {
  Instr in;
  in.op = op;
  in.dst = d;
  in.a = a;
  in.b = b;
  in.c = c;
  return in;
}
Instr special(Op op, uint32_t d) { return alu(op, d, k(0)); }
Instr mem(Op op, Space sp, uint32_t d, Operand a, Operand b, Operand c = k(0), uint8_t bytes = 4) {
  Instr in = alu(op, d, a, b, c);
  in.space = sp;
  in.bytes = bytes;
  return in;
}
Instr atom(AtomOp f, Space sp, uint32_t d, Operand a, Operand b) {
  Instr in = mem(Op::ATOM, sp, d, a, b);
  in.atom = f;
  return in;
}
Terminator jmp(uint32_t t) { return {Term::JMP, 0, t, 0, 0}; }
Terminator br(uint32_t c, uint32_t t, uint32_t f) { return {Term::BR, c, t, f, 0}; }
Terminator term(Term kind, uint32_t t = 0, uint32_t code = 0) { return {kind, 0, t, 0, code}; }

Params small(uint32_t lanes) {
  Params p;
  p.lanes = lanes;
  return p;
}

launch::GlobalMemory memory(uint32_t bytes = 256) {
  launch::GlobalMemory m;
  m.base = default_params().global_base;
  m.bytes.assign(bytes, 0);
  return m;
}
uint32_t word(const launch::GlobalMemory& m, uint32_t i) {
  uint32_t v;
  std::memcpy(&v, &m.bytes[4 * i], 4);
  return v;
}

// global[tid] = value, where tid = warp * L + lane.
Block store_tid_value(uint32_t lanes, Operand value, Terminator t) {
  Block b;
  b.instrs = {special(Op::WARP, 0),
              special(Op::LANE, 1),
              alu(Op::MUL, 0, r(0), k(lanes)),
              alu(Op::ADD, 0, r(0), r(1)),
              alu(Op::SHL, 0, r(0), k(2)),
              mem(Op::ST, Space::Global, 0, r(0), k(default_params().global_base), value)};
  b.term = t;
  return b;
}

TEST(MachineInterp, DivergentLanesRunLowestBlockFirstAndReconverge) {
  // B0: odd lanes -> B2, even -> B1; B1 and B2 write different values; B3 joins.
  Program prog;
  Block b0;
  b0.instrs = {special(Op::LANE, 1), alu(Op::AND, 2, r(1), k(1))};
  b0.term = br(2, 2, 1);
  prog.blocks = {b0, store_tid_value(4, k(10), jmp(3)), store_tid_value(4, k(20), jmp(3)),
                 Block{{alu(Op::ADD, 5, r(1), k(100))}, term(Term::EXIT)}};
  auto m = memory();
  Interpreter in(prog, small(4), 1, 4, {}, m);
  StepRecord s;
  std::vector<std::pair<uint32_t, uint64_t>> trace;
  while (in.step(&s)) trace.push_back({s.block, s.mask});
  std::vector<std::pair<uint32_t, uint64_t>> want = {{0, 0xF}, {1, 0x5}, {2, 0xA}, {3, 0xF}};
  EXPECT_EQ(trace, want);
  EXPECT_EQ(in.fault().error, 0);
  for (uint32_t t = 0; t < 4; ++t) EXPECT_EQ(word(m, t), t % 2 ? 20u : 10u);
  EXPECT_EQ(in.stats().steps, 4u);
}

TEST(MachineInterp, LoopLanesRunUntilTheyLeave) {
  // Each lane loops lane+1 times adding 1 to r3; the loop block precedes the exit.
  Program prog;
  prog.blocks = {Block{{special(Op::LANE, 1), alu(Op::MOV, 3, k(0))}, jmp(1)},
                 Block{{alu(Op::ADD, 3, r(3), k(1)), alu(Op::SLEU, 4, r(3), r(1))}, br(4, 1, 2)},
                 store_tid_value(8, r(3), term(Term::EXIT))};
  auto m = memory();
  Interpreter in(prog, small(8), 1, 8, {}, m);
  in.run();
  ASSERT_EQ(in.fault().error, 0);
  for (uint32_t t = 0; t < 8; ++t) EXPECT_EQ(word(m, t), t + 1);
  // 1 entry + 8 loop iterations (lanes drop out one by one) + 1 exit block.
  EXPECT_EQ(in.stats().steps, 10u);
}

TEST(MachineInterp, LoadsSeeBlockStartAndStoresCommitInInstructionLaneOrder) {
  const uint32_t g = default_params().global_base;
  Program prog;
  Block b;
  b.instrs = {special(Op::LANE, 1),
              mem(Op::LD, Space::Global, 2, k(g), k(0)),        // every lane reads word 0 (initially 5)
              mem(Op::ST, Space::Global, 0, k(g), k(0), r(1)),  // every lane writes its lane: lane 3 wins
              mem(Op::ST, Space::Global, 0, k(g), k(4), r(2)),  // word 1 = the old word 0
              mem(Op::ST, Space::Global, 0, k(g), k(8), k(1)),
              mem(Op::ST, Space::Global, 0, k(g), k(8), k(2))};  // later instruction wins
  b.term = term(Term::EXIT);
  prog.blocks = {b};
  auto m = memory();
  m.bytes[0] = 5;
  Interpreter in(prog, small(4), 1, 4, {}, m);
  StepRecord s;
  ASSERT_TRUE(in.step(&s));
  EXPECT_EQ(word(m, 0), 3u);
  EXPECT_EQ(word(m, 1), 5u);
  EXPECT_EQ(word(m, 2), 2u);
  // Memory writes reported in commit order, registers per lane.
  ASSERT_EQ(s.mem.size(), 16u);
  EXPECT_EQ(s.mem[0].lane, 0u);
  EXPECT_EQ(s.mem[3].value, 3u);
  EXPECT_EQ(s.regs.size(), 8u);  // two register-writing instructions x 4 lanes
  EXPECT_EQ(s.regs[5].reg, 2u);
  EXPECT_EQ(s.regs[5].value, 5u);
}

TEST(MachineInterp, AtomicsReturnOldValuesInLaneOrder) {
  const uint32_t g = default_params().global_base;
  Program prog;
  prog.blocks = {Block{{atom(AtomOp::ADD, Space::Global, 2, k(g + 252), k(3))}, jmp(1)},
                 store_tid_value(8, r(2), term(Term::EXIT))};
  auto m = memory();
  Interpreter in(prog, small(8), 2, 16, {}, m);  // 2 CTAs of 2 warps
  in.run();
  ASSERT_EQ(in.fault().error, 0);
  // CTA 1 overwrites CTA 0's outputs, and its old values continue the count.
  for (uint32_t t = 0; t < 16; ++t) EXPECT_EQ(word(m, t), 3 * (16 + t));
  EXPECT_EQ(word(m, 63), 3u * 32);
}

TEST(MachineInterp, CtaBarrierOrdersSharedMemory) {
  // Warp 1 writes shared[0] = 42 before the barrier; warp 0 reads it after.
  Program prog;
  prog.blocks = {
      Block{{special(Op::WARP, 1), alu(Op::SEQ, 2, r(1), k(1))}, br(2, 1, 2)},
      Block{{mem(Op::ST, Space::Shared, 0, k(0), k(0), k(42))}, jmp(2)},
      Block{{}, term(Term::BAR, 3)},
      Block{{mem(Op::LD, Space::Shared, 3, k(0), k(0))}, jmp(4)},
      store_tid_value(4, r(3), term(Term::EXIT)),
  };
  prog.shared_bytes = 16;
  auto m = memory();
  Interpreter in(prog, small(4), 1, 8, {}, m);
  in.run();
  ASSERT_EQ(in.fault().error, 0) << in.fault().message;
  for (uint32_t t = 0; t < 8; ++t) EXPECT_EQ(word(m, t), 42u);
}

TEST(MachineInterp, WarpBarrierSpansTheMachineWarpsOfOneCudaWarp) {
  // L = 4: machine warps 0..7 are CUDA warp 0, 8..15 CUDA warp 1.  Each
  // thread writes its id to shared, waits at WBAR, reads its neighbour's
  // (tid ^ 16) within the 32-thread group.
  Program prog;
  Block b0;
  b0.instrs = {special(Op::WARP, 0),        special(Op::LANE, 1),
               alu(Op::MUL, 0, r(0), k(4)), alu(Op::ADD, 0, r(0), r(1)),
               alu(Op::SHL, 4, r(0), k(2)), mem(Op::ST, Space::Shared, 0, r(4), k(0), r(0))};
  b0.term = term(Term::WBAR, 1);
  Block b1;
  b1.instrs = {alu(Op::XOR, 5, r(0), k(16)), alu(Op::SHL, 5, r(5), k(2)), mem(Op::LD, Space::Shared, 6, r(5), k(0))};
  b1.term = jmp(2);
  prog.blocks = {b0, b1, store_tid_value(4, r(6), term(Term::EXIT))};
  prog.shared_bytes = 256;
  auto m = memory();
  Interpreter in(prog, small(4), 1, 64, {}, m);
  in.run();
  ASSERT_EQ(in.fault().error, 0) << in.fault().message;
  for (uint32_t t = 0; t < 64; ++t) EXPECT_EQ(word(m, t), t ^ 16);
}

TEST(MachineInterp, SpecialRegisters) {
  Program prog;
  Block b;
  b.instrs = {special(Op::LANE, 1),        special(Op::WARP, 2),         special(Op::CTA, 3),
              alu(Op::SHL, 2, r(2), k(8)), alu(Op::SHL, 3, r(3), k(16)), alu(Op::OR, 7, r(1), r(2)),
              alu(Op::OR, 7, r(7), r(3))};
  b.term = jmp(1);
  prog.blocks = {b, store_tid_value(8, r(7), term(Term::EXIT))};
  auto m = memory();
  Interpreter in(prog, small(8), 3, 16, {}, m);
  in.run();
  for (uint32_t t = 0; t < 16; ++t) EXPECT_EQ(word(m, t), (t % 8) | ((t / 8) << 8) | (2u << 16));
}

TEST(MachineInterp, ClockCountsTheLaunchsSteps) {
  Program prog;
  prog.blocks = {Block{{special(Op::CLOCK, 1)}, jmp(1)},
                 store_tid_value(4, r(2), term(Term::EXIT))};
  prog.blocks[1].instrs.insert(prog.blocks[1].instrs.begin(),
                               {special(Op::CLOCK, 2), alu(Op::MUL, 1, r(1), k(100)), alu(Op::ADD, 2, r(2), r(1))});
  auto m = memory();
  Interpreter in(prog, small(4), 1, 8, {}, m);
  in.run();
  // Warp 0 runs at steps 0 and 1, warp 1 at steps 2 and 3.
  for (uint32_t t = 0; t < 8; ++t) EXPECT_EQ(word(m, t), t < 4 ? 1u : 203u);
}

TEST(MachineInterp, Faults) {
  const uint32_t g = default_params().global_base;
  auto run = [&](Instr i) {
    Program prog;
    prog.blocks = {Block{{i}, term(Term::EXIT)}};
    auto m = memory(64);
    Interpreter in(prog, small(4), 1, 4, {}, m);
    in.run();
    return in.fault();
  };
  EXPECT_EQ(run(mem(Op::LD, Space::Global, 1, k(g), k(64))).error, 700);
  EXPECT_EQ(run(mem(Op::LD, Space::Global, 1, k(g - 4), k(0))).error, 700);
  EXPECT_EQ(run(mem(Op::LD, Space::Global, 1, k(g), k(2))).error, 716);
  EXPECT_EQ(run(mem(Op::ST, Space::Shared, 0, k(0), k(0), k(1))).error, 700);  // no shared memory declared
  EXPECT_EQ(run(mem(Op::LD, Space::Global, 1, k(g), k(60))).error, 0);
  Fault f = run(mem(Op::LD, Space::Param, 1, k(0), k(0)));
  EXPECT_EQ(f.error, 700);
  EXPECT_NE(f.message.find("param"), std::string::npos) << f.message;

  Program trap;
  trap.blocks = {Block{{}, term(Term::TRAP, 0, 710)}};
  auto m = memory();
  Interpreter in(trap, small(4), 1, 4, {}, m);
  in.run();
  EXPECT_EQ(in.fault().error, 710);
}

// A whole 32-lane warp (the CUDA-sized machine) accessing memory: lane l at
// word l, lanes `bad1` and `bad2` displaced by `d1` and `d2` bytes.  The
// fault names the lowest faulting lane's access, whatever the other's; a
// faulting block commits none of its stores; lanes not running the block
// (the branch keeps lanes >= `run_below`) cannot fault.
TEST(MachineInterp, WholeWarpMemoryFaultsNameTheLowestLane) {
  const uint32_t g = default_params().global_base;
  struct Out {
    Fault f;
    std::vector<uint32_t> words;
  };
  auto run = [&](Space sp, bool load, uint32_t bad1, uint32_t d1, uint32_t bad2, uint32_t d2, uint32_t run_below = 32) {
    const uint32_t base = sp == Space::Global ? g : 0;
    Program prog;
    prog.shared_bytes = sp == Space::Shared ? 128 : 0;
    Block b0{{special(Op::LANE, 1), alu(Op::SLTU, 11, r(1), k(run_below))}, br(11, 1, 2)};
    Block b1{{alu(Op::SHL, 2, r(1), k(2)), alu(Op::ADD, 5, r(2), k(base)), alu(Op::SEQ, 6, r(1), k(bad1)),
              alu(Op::SEQ, 7, r(1), k(bad2)), alu(Op::MUL, 8, r(6), k(d1)), alu(Op::MUL, 9, r(7), k(d2)),
              alu(Op::ADD, 10, r(8), r(9))},
             jmp(2)};
    if (load) b1.instrs.push_back(mem(Op::LD, sp, 3, r(5), r(10)));
    b1.instrs.push_back(mem(Op::ST, sp, 0, r(5), k(0), r(1)));       // in range, before the faulting one
    b1.instrs.push_back(mem(Op::ST, sp, 0, r(5), r(10), k(1000)));  // the one that can fault
    Block b2{{}, term(Term::EXIT)};
    if (sp == Space::Shared) {  // copy shared memory out, lane l's word
      b2.instrs = {alu(Op::SHL, 2, r(1), k(2)), mem(Op::LD, sp, 12, r(2), k(0)),
                   mem(Op::ST, Space::Global, 0, r(2), k(g), r(12))};
    }
    prog.blocks = {b0, b1, b2};
    auto m = memory(128);
    Interpreter in(prog, small(32), 1, 32, {}, m);
    in.run();
    Out o{in.fault(), {}};
    for (uint32_t i = 0; i < 32; ++i) o.words.push_back(word(m, i));
    return o;
  };
  auto hexs = [](uint32_t v) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "0x%x", v);
    return std::string(buf);
  };
  for (Space sp : {Space::Global, Space::Shared}) {
    const std::string s = sp == Space::Global ? "global" : "shared";
    const uint32_t base = sp == Space::Global ? g : 0;
    for (bool load : {true, false}) {
      SCOPED_TRACE(s + (load ? " load" : " store"));
      const std::string what = load ? " load" : " store";
      // No fault: every lane's word, the later store's value.
      Out ok = run(sp, load, 40, 2, 41, 1000);
      ASSERT_EQ(ok.f.error, 0) << ok.f.message;
      for (uint32_t i = 0; i < 32; ++i) EXPECT_EQ(ok.words[i], 1000u);
      // Lane 7 misaligned, lane 20 out of range: lane 7's fault.
      Out a = run(sp, load, 7, 2, 20, 1000);
      EXPECT_EQ(a.f.error, 716);
      EXPECT_EQ(a.f.message.find("misaligned " + s + what + " of 4 bytes at " + hexs(base + 28 + 2) + " "), 0u)
          << a.f.message;
      for (uint32_t i = 0; i < 32; ++i) EXPECT_EQ(a.words[i], 0u) << "lane " << i;  // nothing committed
      // Lane 7 out of range, lane 20 misaligned: lane 7's fault.
      Out b = run(sp, load, 7, 1000, 20, 2);
      EXPECT_EQ(b.f.error, 700);
      EXPECT_EQ(b.f.message.find("out-of-range " + s + what + " of 4 bytes at " + hexs(base + 28 + 1000) + " "), 0u)
          << b.f.message;
      // Below the window (global) or wrapping (shared): out of range.
      Out c = run(sp, load, 3, uint32_t(-16), 40, 0);
      EXPECT_EQ(c.f.error, 700) << c.f.message;
      EXPECT_EQ(c.f.message.find("out-of-range " + s + what + " of 4 bytes at " + hexs(base + 12 - 16) + " "), 0u)
          << c.f.message;
      // Only lanes below 16 run the block: lane 20's bad address is never used.
      Out d = run(sp, load, 20, 2, 40, 0, 16);
      ASSERT_EQ(d.f.error, 0) << d.f.message;
      for (uint32_t i = 0; i < 32; ++i) EXPECT_EQ(d.words[i], i < 16 ? 1000u : 0u) << "lane " << i;
      Out e = run(sp, load, 5, 1000, 40, 0, 16);
      EXPECT_EQ(e.f.error, 700);
      EXPECT_EQ(e.f.message.find("out-of-range " + s + what + " of 4 bytes at " + hexs(base + 20 + 1000) + " "), 0u)
          << e.f.message;
    }
  }
}

// A whole warp's loads in the shapes the interpreter reads at once (every
// lane at one address; lane l at the first lane's + 4 l) and in shapes one
// word off them, in each width, signed and unsigned: every lane's value is
// the memory's bytes at its address, whether the launch runs unrecorded or
// step by step with a record.
TEST(MachineInterp, WholeWarpLoadsOfOneAddressOrOneRowReadEachLanesBytes) {
  const uint32_t g = default_params().global_base;
  constexpr uint32_t kIn = 512;  // input bytes; the results follow them, 32 words per load
  struct Shape {
    uint32_t scale, first, odd_lane, odd_off;  // address of lane l: first + scale * l, lane odd_lane + odd_off
  };
  const Shape shapes[] = {{0, 64, 99, 0}, {0, 66, 99, 0}, {4, 8, 99, 0}, {4, 8, 31, 4},
                          {4, 8, 0, 4},   {0, 64, 17, 4}, {2, 6, 99, 0}, {1, 3, 99, 0}};
  for (const Shape& sh : shapes)
    for (uint8_t bytes : {uint8_t(1), uint8_t(2), uint8_t(4)})
      for (bool sign : {false, true}) {
        if ((sh.first | sh.scale | sh.odd_off) % bytes) continue;
        SCOPED_TRACE("scale " + std::to_string(sh.scale) + " first " + std::to_string(sh.first) + " odd lane " +
                     std::to_string(sh.odd_lane) + " bytes " + std::to_string(bytes) + (sign ? " signed" : ""));
        Program prog;
        Instr ld = mem(Op::LD, Space::Global, 3, r(2), k(g));
        ld.bytes = bytes;
        ld.sign = sign;
        prog.blocks = {Block{{special(Op::LANE, 1), alu(Op::MUL, 2, r(1), k(sh.scale)),
                              alu(Op::ADD, 2, r(2), k(sh.first)), alu(Op::SEQ, 4, r(1), k(sh.odd_lane)),
                              alu(Op::MUL, 4, r(4), k(sh.odd_off)), alu(Op::ADD, 2, r(2), r(4)), ld,
                              alu(Op::SHL, 5, r(1), k(2)),
                              mem(Op::ST, Space::Global, 0, r(5), k(g + kIn), r(3))},
                             term(Term::EXIT)}};
        auto fresh = [&] {
          auto m = memory(kIn + 128);
          for (uint32_t i = 0; i < kIn; ++i) m.bytes[i] = uint8_t(i * 37 + 0x81);  // both signs
          return m;
        };
        auto unrecorded = fresh(), recorded = fresh();
        Interpreter a(prog, small(32), 1, 32, {}, unrecorded);
        a.run();
        ASSERT_EQ(a.fault().error, 0) << a.fault().message;
        Interpreter b(prog, small(32), 1, 32, {}, recorded);
        StepRecord rec;
        while (b.step(&rec)) {
        }
        ASSERT_EQ(b.fault().error, 0) << b.fault().message;
        for (uint32_t l = 0; l < 32; ++l) {
          const uint32_t at = sh.first + sh.scale * l + (l == sh.odd_lane ? sh.odd_off : 0);
          uint32_t want = 0;
          for (uint32_t i = 0; i < bytes; ++i) want |= uint32_t(recorded.bytes[at + i]) << (8 * i);
          if (sign && bytes < 4 && (want >> (8 * bytes - 1) & 1)) want |= ~0u << (8 * bytes);
          EXPECT_EQ(word(unrecorded, kIn / 4 + l), want) << "lane " << l;
          EXPECT_EQ(word(recorded, kIn / 4 + l), want) << "lane " << l;
        }
      }
}

TEST(MachineInterp, StepLimitFaultsWithATimeout) {
  // Each lane runs 3 loop blocks plus entry and exit: 5 steps.
  auto run = [](uint64_t limit) {
    Program prog;
    prog.blocks = {Block{{alu(Op::MOV, 1, k(0))}, jmp(1)},
                   Block{{alu(Op::ADD, 1, r(1), k(1)), alu(Op::SLTU, 2, r(1), k(3))}, br(2, 1, 2)},
                   Block{{}, term(Term::EXIT)}};
    auto m = memory();
    Interpreter in(prog, small(4), 1, 4, {}, m);
    in.run(limit);
    return in.fault().error;
  };
  EXPECT_EQ(run(5), 0);
  EXPECT_EQ(run(4), 702);
}

TEST(MachineInterp, ValidateEnforcesTheBlockRules) {
  const Params p = small(8);
  const uint32_t g = p.global_base;
  auto check = [&](std::vector<Instr> is) {
    Program prog;
    prog.blocks = {Block{is, term(Term::EXIT)}};
    validate(prog, p);
  };
  EXPECT_NO_THROW(check({mem(Op::LD, Space::Global, 1, k(g), k(0)), mem(Op::ST, Space::Global, 0, k(g), k(0), k(1))}));
  EXPECT_THROW(check({mem(Op::ST, Space::Global, 0, k(g), k(0), k(1)), mem(Op::LD, Space::Global, 1, k(g), k(0))}),
               std::invalid_argument);
  EXPECT_THROW(
      check({atom(AtomOp::ADD, Space::Global, 1, k(g), k(1)), atom(AtomOp::ADD, Space::Global, 2, k(g), k(1))}),
      std::invalid_argument);
  EXPECT_THROW(check({alu(Op::ADD, 32, k(1), k(1))}), std::invalid_argument);
  EXPECT_THROW(check({mem(Op::ST, Space::Param, 0, k(0), k(0), k(1))}), std::invalid_argument);
  EXPECT_THROW(check(std::vector<Instr>(p.block_instrs + 1, alu(Op::ADD, 1, k(1), k(1)))), std::invalid_argument);
  Program bad;
  bad.blocks = {Block{{}, jmp(5)}};
  EXPECT_THROW(validate(bad, p), std::invalid_argument);
}

TEST(MachineInterp, ExitedLanesAndPartialWarps) {
  // 6 threads on L = 4: the second warp has two lanes past the CTA.
  Program prog;
  prog.blocks = {store_tid_value(4, k(7), term(Term::EXIT))};
  auto m = memory();
  Interpreter in(prog, small(4), 1, 6, {}, m);
  StepRecord s;
  ASSERT_TRUE(in.step(&s));
  EXPECT_EQ(s.mask, 0xFu);
  ASSERT_TRUE(in.step(&s));
  EXPECT_EQ(s.mask, 0x3u);
  EXPECT_FALSE(in.step(&s));
  for (uint32_t t = 0; t < 8; ++t) EXPECT_EQ(word(m, t), t < 6 ? 7u : 0u);
}

// A warp's run of MMAs is computed as one tile (exec_mma_tile) where that
// equals running them one at a time; the recorded step runs them one at a
// time.  Runs that must split or fall back: an MMA reading an earlier one's
// result, two writing one register, one overwriting the area register, an
// element named twice, an element outside the tile.  Both ways must leave
// the same registers.
TEST(MachineInterp, MmaRunsAsATileOnlyWhereThatIsTheSame) {
  Params p = cuda_params(1u << 16);
  const uint32_t g = p.global_base;
  auto mma = [](uint32_t d, Operand area, Operand e, Operand c, MmaIn t) {
    Instr in = alu(Op::MMA, d, area, e, c);
    in.space = Space::Shared;
    in.mma.in = t;
    return in;
  };
  for (MmaIn t : {MmaIn::F16, MmaIn::S8}) {
    SCOPED_TRACE(t == MmaIn::F16 ? "f16" : "s8");
    // Block 0: area (shared 0) from global words 0..319, by lane; r1 lane,
    // r2 = 8 lane, r3.. element numbers, r20.. accumulators.
    Block b0;
    b0.instrs = {special(Op::LANE, 1), alu(Op::SHL, 2, r(1), k(3)), alu(Op::SHL, 9, r(1), k(2))};
    // (The loads first: a block loads nothing after a store.)
    for (uint32_t i = 0; i < 10; ++i) b0.instrs.push_back(mem(Op::LD, Space::Global, 40 + i, r(9), k(g + 128 * i)));
    for (uint32_t i = 0; i < 8; ++i) b0.instrs.push_back(mem(Op::LD, Space::Global, 20 + i, r(9), k(g + 2048 + 128 * i)));
    for (uint32_t i = 0; i < 10; ++i) b0.instrs.push_back(mem(Op::ST, Space::Shared, 0, r(9), k(128 * i), r(40 + i)));
    for (uint32_t i = 0; i < 8; ++i) b0.instrs.push_back(alu(Op::ADD, 3 + i, r(2), k(i)));
    b0.instrs.push_back(alu(Op::MOV, 5 + 10, k(0)));  // r15: the area
    // In blocks of at most block_instrs, the last going on to the runs.
    std::vector<Block> blocks;
    for (size_t i = 0; i < b0.instrs.size(); i += p.block_instrs) {
      Block b;
      b.instrs.assign(b0.instrs.begin() + i, b0.instrs.begin() + std::min<size_t>(b0.instrs.size(), i + p.block_instrs));
      b.term = jmp(uint32_t(blocks.size() + 1));
      blocks.push_back(b);
    }
    const uint32_t runs = uint32_t(blocks.size());
    // Block 1: the runs.
    Block b1;
    b1.instrs = {
        mma(30, r(15), r(3), r(20), t), mma(31, r(15), r(4), r(21), t),   // a run of two
        mma(32, r(15), r(5), r(30), t),                                   // reads 30: a new run
        mma(33, r(15), r(6), r(22), t), mma(33, r(15), r(7), r(23), t),   // 33 written twice
        mma(15, r(15), r(8), r(24), t), mma(34, k(0), r(9), r(15), t),    // the area register overwritten, then read
        mma(35, k(0), r(10), r(26), t), mma(36, k(0), r(10), r(27), t),   // one element named twice
        mma(37, k(0), k(7), r(20), t),                                    // every lane one element
    };
    b1.term = jmp(runs + 1);
    // Block 2: r30..r38 and r15 to global 4096 + 40 lane + 4 i.
    Block b2;
    b2.instrs = {special(Op::LANE, 1), alu(Op::MUL, 9, r(1), k(40))};
    const uint32_t outs[] = {30, 31, 32, 33, 15, 34, 35, 36, 37};
    for (uint32_t i = 0; i < std::size(outs); ++i)
      b2.instrs.push_back(mem(Op::ST, Space::Global, 0, r(9), k(g + 4096 + 4 * i), r(outs[i])));
    b2.term = term(Term::EXIT);
    Program prog;
    blocks.push_back(b1);
    blocks.push_back(b2);
    prog.blocks = blocks;
    prog.shared_bytes = 4096;
    std::mt19937 rng(7);
    launch::GlobalMemory init = memory(4096 + 32 * 40);
    init.base = g;
    for (uint32_t i = 0; i < 1024; ++i) {
      // f16 words: small halves (no NaN), s8: any bytes; accumulators small.
      const uint32_t v = rng();
      const uint32_t w = t == MmaIn::F16 ? (v & 0x3FFF3FFFu) : v;
      std::memcpy(&init.bytes[4 * i], &w, 4);
    }
    auto run = [&](bool record) {
      launch::GlobalMemory m = init;
      Interpreter in(prog, p, 1, 32, {}, m);
      if (record) {
        StepRecord s;
        while (in.step(&s)) {
        }
      } else {
        in.run();
      }
      EXPECT_EQ(in.fault().error, 0) << in.fault().message;
      return m.bytes;
    };
    const auto fast = run(false), one_by_one = run(true);
    EXPECT_EQ(fast, one_by_one);
  }
}

}  // namespace
}  // namespace qgpu::machine
