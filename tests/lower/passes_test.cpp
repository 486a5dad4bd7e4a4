// The lowering's passes one at a time (model_host/lower/optimize.h,
// allocate.h, blocks.h) on small hand-built virtual code.  Each expected
// listing is worked out by hand from the pass's rule, stated beside it.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "model_host/lower/allocate.h"
#include "model_host/lower/analysis.h"
#include "model_host/lower/blocks.h"
#include "model_host/lower/optimize.h"

namespace qgpu::machine::lowering {
namespace {

using Lines = std::vector<std::string>;

Instr alu(Op o, uint32_t d, Operand a, Operand b = K(0), Operand c = K(0)) {
  Instr in;
  in.op = o;
  in.dst = d;
  in.a = a;
  in.b = b;
  in.c = c;
  return in;
}
Instr ld(Space sp, uint32_t d, Operand a, uint32_t off = 0) {
  Instr in = alu(Op::LD, d, a, K(off));
  in.space = sp;
  return in;
}
Instr st(Space sp, Operand a, uint32_t off, Operand v) {
  Instr in = alu(Op::ST, 0, a, K(off), v);
  in.space = sp;
  return in;
}
Instr atom_add(uint32_t d, Operand a, Operand b) {
  Instr in = alu(Op::ATOM, d, a, b, K(0));
  in.atom = AtomOp::ADD;
  return in;
}
VI I(const Instr& in) { return {VI::Ins, in}; }
VI label(uint32_t l) { return {VI::Label, {}, l}; }
VI jmp(uint32_t l) { return {VI::Jmp, {}, l}; }
VI br(uint32_t cond, uint32_t t, uint32_t f) { return {VI::Br, {}, t, f, cond}; }
VI exit_() { return {VI::Exit}; }

VCode make(std::vector<VI> code, uint32_t nvregs, uint32_t nlabels = 0) {
  VCode vc;
  vc.code = std::move(code);
  vc.nvregs = nvregs;
  vc.nlabels = nlabels;
  return vc;
}

Lines listing(const std::vector<VI>& code) {
  Lines r;
  for (const VI& v : code) {
    switch (v.kind) {
      case VI::Ins: r.push_back(to_string(v.in)); break;
      case VI::Label: r.push_back("L" + std::to_string(v.l1) + ":"); break;
      case VI::Jmp: r.push_back("jmp L" + std::to_string(v.l1)); break;
      case VI::Br:
        r.push_back("br r" + std::to_string(v.cond) + ", L" + std::to_string(v.l1) + ", L" + std::to_string(v.l2));
        break;
      case VI::Exit: r.push_back("exit"); break;
      default: r.push_back("?"); break;
    }
  }
  return r;
}

Lines blocks(const Program& prog) {
  Lines r;
  for (size_t b = 0; b < prog.blocks.size(); ++b) {
    r.push_back("B" + std::to_string(b) + ":");
    for (const Instr& in : prog.blocks[b].instrs) r.push_back("  " + to_string(in));
    r.push_back("  " + to_string(prog.blocks[b].term));
  }
  return r;
}

const Operand r0 = R(0), r1 = R(1), r2 = R(2), r3 = R(3), r4 = R(4), r5 = R(5), r6 = R(6), r7 = R(7), r8 = R(8);

// ---- propagate_copies --------------------------------------------------------

TEST(LowerPasses, PropagateCopiesForwardsASingleDefinitionCopy) {
  // r1 = r0, both defined once, r0 before the copy, r1 used only after it:
  // the uses of r1 read r0 (the copy itself stays for remove_dead_code).
  VCode vc = make({I(ld(Space::Param, 0, K(0))), I(alu(Op::MOV, 1, r0)), I(alu(Op::ADD, 2, r1, K(5))),
                   I(st(Space::Global, r2, 0, r1)), exit_()},
                  3);
  propagate_copies(vc);
  EXPECT_EQ(listing(vc.code), (Lines{"ld.param.u32 r0, [0]", "mov r1, r0", "add r2, r0, 5",
                                     "st.global.b32 [r2], r0", "exit"}));
}

TEST(LowerPasses, PropagateCopiesKeepsCopiesOfRedefinedRegisters) {
  // r1 has a second definition; in the other program the copied r0 has one.
  const std::vector<VI> dst_twice = {I(ld(Space::Param, 0, K(0))), I(alu(Op::MOV, 1, r0)), I(alu(Op::ADD, 1, r1, K(1))),
                                     I(st(Space::Global, r0, 0, r1)), exit_()};
  const std::vector<VI> src_twice = {I(ld(Space::Param, 0, K(0))), I(alu(Op::MOV, 1, r0)), I(alu(Op::ADD, 0, r0, K(1))),
                                     I(st(Space::Global, r1, 0, r0)), exit_()};
  for (const auto& code : {dst_twice, src_twice}) {
    VCode vc = make(code, 2);
    propagate_copies(vc);
    EXPECT_EQ(listing(vc.code), listing(code));
  }
}

TEST(LowerPasses, PropagateCopiesForwardsALoopCountersCopyWithinStraightLineCode) {
  // A loop copies its counter r0 (defined twice) into r1 for two uses, then
  // increments r0: the uses read r0, which no definition separates from the
  // copy.  r3 copies r0 after the increment, and its use follows a label: it
  // stays.
  VCode vc = make({I(alu(Op::MOV, 0, K(0))), label(0), I(alu(Op::MOV, 1, r0)), I(alu(Op::ADD, 2, r1, K(4))),
                   I(st(Space::Global, r2, 0, r1)), I(alu(Op::ADD, 0, r0, K(1))), I(alu(Op::MOV, 3, r0)),
                   br(0, 0, 1), label(1), I(st(Space::Global, r3, 0, r3)), exit_()},
                  4, 2);
  propagate_copies(vc);
  EXPECT_EQ(listing(vc.code), (Lines{"mov r0, 0", "L0:", "mov r1, r0", "add r2, r0, 4", "st.global.b32 [r2], r0",
                                     "add r0, r0, 1", "mov r3, r0", "br r0, L0, L1", "L1:",
                                     "st.global.b32 [r3], r3", "exit"}));
}

// ---- inline_parameters ------------------------------------------------------

TEST(LowerPasses, InlineParametersReadsParameterWordsAsImmediates) {
  // Words 0 (0x1000) and 2 (7) of the buffer, and word 3, of which the
  // buffer holds one byte (a bool parameter last: 1; the prompt's records
  // pad it with zeros); r1 is also a branch condition, so its load stays for
  // the branch; the add of two parameters stays an add (nothing is
  // evaluated).
  const std::vector<uint8_t> params = {0x00, 0x10, 0, 0, 1, 2, 3, 4, 7, 0, 0, 0, 1};
  VCode vc = make({I(ld(Space::Param, 0, K(0))), I(ld(Space::Param, 1, K(8))), I(ld(Space::Param, 2, K(12))),
                   I(alu(Op::ADD, 3, r1, r2)), I(st(Space::Global, r0, 0, r3)), br(1, 0, 0), label(0), exit_()},
                  4, 1);
  inline_parameters(vc, params, 1024);
  EXPECT_EQ(listing(vc.code), (Lines{"ld.param.u32 r0, [0]", "ld.param.u32 r1, [8]", "ld.param.u32 r2, [12]",
                                     "add r3, 7, 1", "st.global.b32 [4096], r3", "br r1, L0, L0", "L0:", "exit"}));
  remove_dead_code(vc);
  EXPECT_EQ(listing(vc.code), (Lines{"ld.param.u32 r1, [8]", "add r3, 7, 1", "st.global.b32 [4096], r3",
                                     "br r1, L0, L0", "L0:", "exit"}));
}

TEST(LowerPasses, InlineParametersLeavesARegisterReadBeforeItsLoad) {
  // r1 is read before the load defines it (a loop's back edge would do
  // that): the read must not see the parameter.
  const std::vector<VI> code = {label(0), I(alu(Op::ADD, 0, r1, K(1))), I(ld(Space::Param, 1, K(0))),
                                I(st(Space::Global, r0, 0, r1)), br(1, 0, 1), label(1), exit_()};
  VCode vc = make(code, 2, 2);
  inline_parameters(vc, {5, 0, 0, 0}, 1024);
  EXPECT_EQ(listing(vc.code), listing(code));
}

TEST(LowerPasses, InlineParametersLeavesProgramsThatStoreToParameters) {
  const std::vector<VI> code = {I(ld(Space::Param, 0, K(0))), I(st(Space::Param, K(4), 0, r0)),
                                I(st(Space::Global, r0, 0, r0)), exit_()};
  VCode vc = make(code, 1);
  inline_parameters(vc, {1, 0, 0, 0}, 1024);
  EXPECT_EQ(listing(vc.code), listing(code));
}

// ---- fold_constants ---------------------------------------------------------

std::vector<VI> constants_program() {
  return {I(alu(Op::MOV, 0, K(6))),                // a constant
          I(alu(Op::MUL, 1, r0, K(7))),            // 6 * 7 once r0 is known
          I(ld(Space::Param, 2, K(0))),            //
          I(alu(Op::ADD, 3, r2, K(0))),            // x + 0: a copy
          I(alu(Op::AND, 4, r2, K(0))),            // x & 0: 0
          I(alu(Op::OR, 5, r2, K(~0u))),           // x | ~0: ~0
          I(alu(Op::LANE, 6, K(0))),                  // 0 on a one-lane warp
          I(st(Space::Global, r2, 0, r1)),         // stores 42
          I(st(Space::Global, r3, 4, r4)),         // stores 0
          I(st(Space::Global, r3, 8, r6)),         //
          exit_()};
}

TEST(LowerPasses, FoldConstantsEvaluatesIdentitiesAndAbsorbingOperands) {
  VCode vc = make(constants_program(), 7);
  fold_constants(vc, 4);
  EXPECT_EQ(listing(vc.code),
            (Lines{"mov r0, 6", "mov r1, 42", "ld.param.u32 r2, [0]", "mov r3, r2", "mov r4, 0", "mov r5, -1",
                   "lane r6", "st.global.b32 [r2], 42", "st.global.b32 [r3+4], 0", "st.global.b32 [r3+8], r6",
                   "exit"}));
}

TEST(LowerPasses, FoldConstantsTakesTheLaneOfAOneLaneWarpAsZero) {
  VCode vc = make(constants_program(), 7);
  fold_constants(vc, 1);
  const Lines l = listing(vc.code);
  EXPECT_EQ(l[6], "mov r6, 0");
  EXPECT_EQ(l[9], "st.global.b32 [r3+8], 0");
}

TEST(LowerPasses, FoldConstantsLeavesRegistersWithTwoDefinitions) {
  const std::vector<VI> code = {I(alu(Op::MOV, 0, K(1))), I(alu(Op::MOV, 0, K(2))), I(alu(Op::ADD, 1, r0, K(3))),
                                I(st(Space::Global, r1, 0, r0)), exit_()};
  VCode vc = make(code, 2);
  fold_constants(vc, 4);
  EXPECT_EQ(listing(vc.code), listing(code));
}

// ---- fold_known_bits -----------------------------------------------------------

TEST(LowerPasses, FoldKnownBitsInStraightLineCode) {
  VCode vc = make({I(ld(Space::Param, 0, K(0))),
                   I(alu(Op::SHL, 1, r0, K(2))),          // low two bits 0
                   I(alu(Op::AND, 2, r1, K(3))),          // every bit known: 0
                   I(alu(Op::AND, 3, r1, K(0xfffffffc))), // keeps every bit r1 may have: r1
                   I(alu(Op::SLTU, 4, r0, K(10))),        // 0 or 1
                   I(alu(Op::SNE, 5, r4, K(0))),          // r4 itself
                   I(alu(Op::SEQ, 6, r4, K(0))),          // r4 ^ 1
                   I(alu(Op::OR, 7, r1, K(1))),           // bit 0 known 1
                   br(7, 0, 1),                           // always taken
                   label(0), exit_(), label(1), exit_()},
                  8, 2);
  fold_known_bits(vc);
  EXPECT_EQ(listing(vc.code),
            (Lines{"ld.param.u32 r0, [0]", "shl r1, r0, 2", "mov r2, 0", "mov r3, r1", "sltu r4, r0, 10",
                   "mov r5, r4", "xor r6, r4, 1", "or r7, r1, 1", "jmp L0", "L0:", "exit", "L1:", "exit"}));
}

TEST(LowerPasses, FoldKnownBitsJoinsThePathsIntoABlock) {
  // r1 is 4 on one path and 8 on the other: bits 0, 1 (and 4..31) are 0 on
  // both, so r1 & 3 is 0, and r1 & 12 keeps every bit r1 may have.
  VCode vc = make({I(ld(Space::Param, 0, K(0))), br(0, 0, 1), label(0), I(alu(Op::MOV, 1, K(4))), jmp(2), label(1),
                   I(alu(Op::MOV, 1, K(8))), label(2), I(alu(Op::AND, 2, r1, K(3))), I(alu(Op::AND, 3, r1, K(12))),
                   I(alu(Op::AND, 4, r1, K(4))), exit_()},
                  5, 3);
  fold_known_bits(vc);
  EXPECT_EQ(listing(vc.code), (Lines{"ld.param.u32 r0, [0]", "br r0, L0, L1", "L0:", "mov r1, 4", "jmp L2", "L1:",
                                     "mov r1, 8", "L2:", "mov r2, 0", "mov r3, r1", "and r4, r1, 4", "exit"}));
}

// ---- simplify_local -------------------------------------------------------------

TEST(LowerPasses, SimplifyLocalRewritesWithinStraightLineCode) {
  VCode vc = make({I(ld(Space::Param, 0, K(0))),
                   I(alu(Op::ADD, 1, K(5), r0)),            // immediate second
                   I(alu(Op::SUB, 2, r1, K(3))),            // (r0 + 5) - 3 = r0 + 2
                   I(alu(Op::ADD, 3, r0, K(2))),            // computed already: r2
                   I(ld(Space::Global, 4, r2, 8)),          // [r0 + 2 + 8]
                   I(alu(Op::AND, 5, r4, K(255))),          //
                   I(alu(Op::AND, 6, r5, K(15))),           // (r4 & 255) & 15 = r4 & 15
                   I(alu(Op::SHL, 7, r5, K(24))),           // the shift drops the bits the mask clears
                   I(alu(Op::SEQ, 8, r4, K(0))),            //
                   br(8, 0, 1),                             // on r4 == 0: on r4, targets swapped
                   label(0), exit_(), label(1), exit_()},
                  9, 2);
  simplify_local(vc);
  EXPECT_EQ(listing(vc.code),
            (Lines{"ld.param.u32 r0, [0]", "add r1, r0, 5", "add r2, r0, 2", "mov r3, r2", "ld.global.u32 r4, [r0+10]",
                   "and r5, r4, 255", "and r6, r4, 15", "shl r7, r4, 24", "seq r8, r4, 0", "br r4, L1, L0", "L0:",
                   "exit", "L1:", "exit"}));
}

TEST(LowerPasses, SimplifyLocalForgetsValuesAtAJoin) {
  // r0 + 1 is computed before L0 and again after it.  When the loop's branch
  // also enters L0, the value before it is not reused; when only the block
  // before it enters L0, it is (and the repeat becomes a copy).
  auto program = [](uint32_t back) {
    return std::vector<VI>{I(ld(Space::Param, 0, K(0))), I(alu(Op::ADD, 1, r0, K(1))), label(0),
                           I(alu(Op::ADD, 2, r0, K(1))), I(st(Space::Global, r0, 0, r2)),
                           I(st(Space::Global, r0, 4, r1)), br(0, back, 1), label(1), exit_()};
  };
  VCode loop = make(program(0), 3, 2);
  simplify_local(loop);
  EXPECT_EQ(listing(loop.code), listing(program(0)));
  VCode straight = make(program(1), 3, 2);
  simplify_local(straight);
  Lines expected = listing(program(1));
  expected[3] = "mov r2, r1";
  EXPECT_EQ(listing(straight.code), expected);
}

// ---- hoist_invariants -----------------------------------------------------------

std::vector<VI> loop_program() {
  return {I(ld(Space::Param, 0, K(0))),
          I(alu(Op::MOV, 1, K(0))),
          label(0),
          I(alu(Op::MUL, 2, r0, K(3))),  // invariant: r0 is not defined in the loop
          I(alu(Op::ADD, 1, r1, r2)),
          I(alu(Op::SLTU, 3, r1, K(100))),
          br(3, 0, 1),
          label(1),
          I(st(Space::Global, r0, 0, r1)),
          exit_()};
}

TEST(LowerPasses, HoistInvariantsMovesLoopInvariantsBeforeTheHeader) {
  VCode vc = make(loop_program(), 4, 2);
  EXPECT_EQ(hoist_invariants(vc, UINT32_MAX), 1u);
  EXPECT_EQ(listing(vc.code), (Lines{"ld.param.u32 r0, [0]", "mov r1, 0", "mul r2, r0, 3", "L0:", "add r1, r1, r2",
                                     "sltu r3, r1, 100", "br r3, L0, L1", "L1:", "st.global.b32 [r0], r1", "exit"}));
}

TEST(LowerPasses, HoistInvariantsRespectsItsCapAndColdValues) {
  VCode capped = make(loop_program(), 4, 2);
  EXPECT_EQ(hoist_invariants(capped, 0), 0u);
  EXPECT_EQ(listing(capped.code), listing(loop_program()));
  VCode cold = make(loop_program(), 4, 2);
  cold.cold = {false, false, true};  // r2 is defined by code that rarely runs
  EXPECT_EQ(hoist_invariants(cold, UINT32_MAX), 0u);
  EXPECT_EQ(listing(cold.code), listing(loop_program()));
}

// ---- remove_unreachable, remove_dead_code ----------------------------------------

TEST(LowerPasses, RemoveUnreachableDropsBlocksNoPathReaches) {
  VCode vc = make({I(alu(Op::MOV, 0, K(1))), jmp(1), label(0), I(st(Space::Global, r0, 0, K(7))), label(1), exit_()},
                  1, 2);
  remove_unreachable(vc);
  EXPECT_EQ(listing(vc.code), (Lines{"mov r0, 1", "jmp L1", "L1:", "exit"}));
}

TEST(LowerPasses, RemoveDeadCodeDropsUnreadResultsButNotStoresOrAtomics) {
  VCode vc = make({I(ld(Space::Param, 0, K(0))), I(alu(Op::ADD, 1, r0, K(1))), I(ld(Space::Global, 2, r0)),
                   I(alu(Op::ADD, 3, r0, K(2))), I(alu(Op::ADD, 4, r3, K(1))), I(atom_add(5, r0, K(1))),
                   I(st(Space::Global, r0, 0, r0)), exit_()},
                  6);
  remove_dead_code(vc);
  EXPECT_EQ(listing(vc.code),
            (Lines{"ld.param.u32 r0, [0]", "atom.global.add r5, [r0], 1, 0", "st.global.b32 [r0], r0", "exit"}));
}

// ---- analysis ---------------------------------------------------------------

TEST(LowerPasses, CfgBlocksSuccessorsAndPredecessors) {
  const std::vector<VI> code = loop_program();
  const Cfg g = build_cfg(code, 2);
  // Blocks start at 0, at the label L0 (2) and at the label L1 (7).
  EXPECT_EQ(g.starts, (std::vector<uint32_t>{0, 2, 7}));
  EXPECT_EQ(g.succ, (std::vector<std::vector<uint32_t>>{{1}, {1, 2}, {}}));
  EXPECT_EQ(g.pred, (std::vector<std::vector<uint32_t>>{{}, {0, 1}, {1}}));
}

TEST(LowerPasses, KnownBitsOfAluResults) {
  const KnownBits x{}, four = KnownBits::constant(4);
  const KnownBits shl = known_result(alu(Op::SHL, 0, r0, K(3)), x, KnownBits::constant(3), {});
  EXPECT_EQ(shl, (KnownBits{7, 0}));
  EXPECT_EQ(known_result(alu(Op::OR, 0, r0, r1), shl, four, {}), (KnownBits{7, 4}));
  EXPECT_EQ(known_result(alu(Op::SLTU, 0, r0, r1), x, x, {}), (KnownBits{~1u, 0}));
  EXPECT_EQ(join(four, KnownBits::constant(6)), (KnownBits{~2u, 4}));
}

// ---- allocate -------------------------------------------------------------------

TEST(LowerPasses, AllocateCoalescesACopyThatEndsItsSource) {
  VCode vc = make({I(ld(Space::Param, 0, K(0))), I(alu(Op::MOV, 1, r0)), I(alu(Op::ADD, 2, r1, K(1))),
                   I(st(Space::Global, r2, 0, r1)), exit_()},
                  3);
  uint32_t local_top = 0;
  Allocation a = allocate(vc, 8, local_top);
  // r0 takes register 0; r1 starts where r0 ends, by a copy: register 0
  // too, and the copy goes; r2 takes the next free register.
  EXPECT_FALSE(a.spilled);
  EXPECT_EQ(local_top, 0u);
  EXPECT_EQ(listing(a.code), (Lines{"ld.param.u32 r0, [0]", "add r1, r0, 1", "st.global.b32 [r1], r0", "exit"}));
}

TEST(LowerPasses, AllocateSpillsThroughTheScratchRegisters) {
  // 4 registers.  Three are allocated and one reloads spilled values: no
  // instruction reads two spilled values, so one reload register is all the
  // code needs (allocate() reserves the fewest that suffice, up to one per
  // source of its widest instruction).  The address r5, r0 and r1 hold all
  // three when r2 starts, and r2 ends last: it is spilled to a word of local
  // memory, stored at its load and reloaded at its use.  (Loads of global
  // words at a register address: values the allocator cannot recompute.)
  VCode vc = make({I(ld(Space::Global, 0, r5)), I(ld(Space::Global, 1, r5, 4)), I(ld(Space::Global, 2, r5, 8)),
                   I(alu(Op::ADD, 3, r0, r1)), I(alu(Op::ADD, 4, r3, r2)), I(st(Space::Global, r4, 0, r4)), exit_()},
                  6);
  uint32_t local_top = 0;
  Allocation a = allocate(vc, 4, local_top);
  EXPECT_TRUE(a.spilled);
  EXPECT_EQ(local_top, 4u);
  EXPECT_EQ(listing(a.code), (Lines{"ld.global.u32 r0, [r1]", "ld.global.u32 r2, [r1+4]", "ld.global.u32 r3, [r1+8]",
                                    "st.local.b32 [0], r3", "add r1, r0, r2", "ld.local.u32 r3, [0]", "add r2, r1, r3",
                                    "st.global.b32 [r2], r2", "exit"}));
}

// An instruction that reads three spilled values needs three reload
// registers: the allocator, finding that one and then two do not suffice,
// reserves three (the widest op's sources) and allocates one.
TEST(LowerPasses, AllocateReservesMoreReloadRegistersWhereAnInstructionNeedsThem) {
  VCode vc = make({I(ld(Space::Global, 0, r8)), I(ld(Space::Global, 1, r8, 4)), I(ld(Space::Global, 2, r8, 8)),
                   I(ld(Space::Global, 4, r8, 12)), I(ld(Space::Global, 5, r8, 16)), I(alu(Op::ADD, 6, r4, r5)),
                   I(st(Space::Global, r8, 20, r6)), I(alu(Op::SEL, 3, r0, r1, r2)), I(st(Space::Global, r3, 0, r3)),
                   exit_()},
                  9);
  uint32_t local_top = 0;
  Allocation a = allocate(vc, 4, local_top);
  EXPECT_TRUE(a.spilled);
  // r0 the one allocated, r1..r3 the reload registers; the sources of
  // `sel` end last, so they were spilled when r4 and r5 started (and r8,
  // read before any definition, with them).
  EXPECT_EQ(listing(a.code),
            (Lines{"ld.local.u32 r1, [12]", "ld.global.u32 r1, [r1]", "st.local.b32 [0], r1", "ld.local.u32 r1, [12]",
                   "ld.global.u32 r1, [r1+4]", "st.local.b32 [4], r1", "ld.local.u32 r1, [12]",
                   "ld.global.u32 r1, [r1+8]", "st.local.b32 [8], r1", "ld.local.u32 r1, [12]",
                   "ld.global.u32 r0, [r1+12]", "ld.local.u32 r1, [12]", "ld.global.u32 r1, [r1+16]",
                   "st.local.b32 [16], r1", "ld.local.u32 r1, [16]", "add r1, r0, r1", "st.local.b32 [20], r1",
                   "ld.local.u32 r1, [12]", "ld.local.u32 r2, [20]", "st.global.b32 [r1+20], r2",
                   "ld.local.u32 r1, [0]", "ld.local.u32 r2, [4]", "ld.local.u32 r3, [8]", "sel r0, r1, r2, r3",
                   "st.global.b32 [r0], r0", "exit"}));
}

// The same with the values loaded from kernel parameters at constant
// offsets: the allocator recomputes a spilled one at its use (a parameter
// load, like a constant, a lane, warp or CTA index, is the same wherever the
// thread runs it), so nothing goes to local memory and nothing is stored.
TEST(LowerPasses, AllocateRecomputesParameterLoadsInsteadOfSpillingThem) {
  VCode vc = make({I(ld(Space::Param, 0, K(0))), I(ld(Space::Param, 1, K(4))), I(ld(Space::Param, 2, K(8))),
                   I(alu(Op::ADD, 3, r0, r1)), I(alu(Op::ADD, 4, r3, r2)), I(st(Space::Global, r4, 0, r4)), exit_()},
                  5);
  uint32_t local_top = 0;
  Allocation a = allocate(vc, 4, local_top);
  EXPECT_FALSE(a.spilled);
  EXPECT_EQ(local_top, 0u);
  EXPECT_EQ(listing(a.code), (Lines{"ld.param.u32 r0, [0]", "ld.param.u32 r1, [4]", "add r2, r0, r1",
                                    "ld.param.u32 r3, [8]", "add r1, r2, r3", "st.global.b32 [r1], r1", "exit"}));
  // A parameter word a store writes is not recomputed: it is spilled.
  VCode written = vc;
  written.code.insert(written.code.begin(), I(st(Space::Param, K(64), 0, K(7))));
  local_top = 0;
  EXPECT_TRUE(allocate(written, 4, local_top).spilled);
}

// A chain of ALU operations of one such value and constants (the warp's
// index shifted and offset: an address the lowering derives from the thread
// index) is recomputed link by link in one reload register at its use.
TEST(LowerPasses, AllocateRecomputesAChainFromTheWarpIndex) {
  VCode vc = make({I(alu(Op::WARP, 0, K(0))), I(alu(Op::SHL, 1, r0, K(7))), I(alu(Op::ADD, 2, r1, K(0x100))),
                   I(ld(Space::Global, 3, r8)), I(ld(Space::Global, 4, r8, 4)), I(ld(Space::Global, 5, r8, 8)),
                   I(alu(Op::ADD, 6, r3, r4)), I(alu(Op::ADD, 6, r6, r5)), I(alu(Op::ADD, 6, r6, r2)),
                   I(st(Space::Global, r6, 0, r6)), exit_()},
                  9);
  uint32_t local_top = 0;
  Allocation a = allocate(vc, 5, local_top);
  EXPECT_FALSE(a.spilled);
  EXPECT_EQ(local_top, 0u);
  // 5 registers, one reserved: r8 and the three loads hold the other four
  // when the chain's value would need one; it is computed again at its use.
  EXPECT_EQ(listing(a.code),
            (Lines{"warp r0", "shl r2, r0, 7", "ld.global.u32 r2, [r1]", "ld.global.u32 r3, [r1+4]",
                   "ld.global.u32 r0, [r1+8]", "add r1, r2, r3", "add r1, r1, r0", "warp r4", "shl r4, r4, 7",
                   "add r4, r4, 256", "add r1, r1, r4", "st.global.b32 [r1], r1", "exit"}));
}

// ---- form_blocks ------------------------------------------------------------------

std::vector<VI> store_then_branch() {
  return {I(ld(Space::Param, 0, K(0))),     I(st(Space::Global, r0, 0, K(1))),
          I(ld(Space::Global, 1, r0, 4)),   I(alu(Op::ADD, 1, r1, K(1))),
          I(st(Space::Global, r0, 4, r1)),  br(1, 0, 1),
          label(0),                         exit_(),
          label(1),                         exit_()};
}

TEST(LowerPasses, FormBlocksKeepsNoLoadAfterAStore) {
  const Program prog = form_blocks(store_then_branch(), 2, 8, false);
  EXPECT_EQ(blocks(prog), (Lines{"B0:", "  ld.param.u32 r0, [0]", "  st.global.b32 [r0], 1", "  jmp B1", "B1:",
                                 "  ld.global.u32 r1, [r0+4]", "  add r1, r1, 1", "  st.global.b32 [r0+4], r1",
                                 "  br r1, B2, B3", "B2:", "  exit", "B3:", "  exit"}));
}

TEST(LowerPasses, FormBlocksForTheModelEndsNoStoreBlockInABranch) {
  const Program prog = form_blocks(store_then_branch(), 2, 8, true);
  EXPECT_EQ(blocks(prog), (Lines{"B0:", "  ld.param.u32 r0, [0]", "  st.global.b32 [r0], 1", "  jmp B1", "B1:",
                                 "  ld.global.u32 r1, [r0+4]", "  add r1, r1, 1", "  st.global.b32 [r0+4], r1",
                                 "  jmp B2", "B2:", "  br r1, B3, B4", "B3:", "  exit", "B4:", "  exit"}));
}

TEST(LowerPasses, FormBlocksCutsAtTheBlockSize) {
  std::vector<VI> code = {I(alu(Op::MOV, 0, K(1)))};
  for (int i = 0; i < 4; ++i) code.push_back(I(alu(Op::ADD, 0, r0, K(1))));
  code.push_back(exit_());
  EXPECT_EQ(blocks(form_blocks(code, 0, 2, false)),
            (Lines{"B0:", "  mov r0, 1", "  add r0, r0, 1", "  jmp B1", "B1:", "  add r0, r0, 1", "  add r0, r0, 1",
                   "  jmp B2", "B2:", "  add r0, r0, 1", "  exit"}));
}

TEST(LowerPasses, FormBlocksThreadsJumpsThroughEmptyBlocks) {
  // B0 jumps to an empty block that jumps to an empty block that exits: B0
  // exits itself, and the empty blocks, no longer reached, go.
  const std::vector<VI> code = {I(alu(Op::MOV, 0, K(1))), jmp(0), label(0), jmp(1), label(1), exit_()};
  EXPECT_EQ(blocks(form_blocks(code, 2, 8, false)), (Lines{"B0:", "  mov r0, 1", "  exit"}));
}

}  // namespace
}  // namespace qgpu::machine::lowering
