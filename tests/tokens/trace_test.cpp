// The expected trace (docs/tokens.md section 4) of hand-built programs,
// compared token for token with traces derived by hand from the spec's table,
// and of the dot-product sample lowered from its PTX.
#include "build_paths.h"   // qgpu_paths() in CMakeLists.txt

#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>

#include "model_host/tokens/prompt.h"
#include "model_host/tokens/trace.h"
#include "model_host/machine/image.h"
#include "model_host/machine/interpreter.h"
#include "model_host/lower/lower.h"
#include "programs.h"

namespace qgpu::gpu {
namespace {

using namespace test;

// "CTA(0) WARP(0) EXEC(3) VLO(0x5678) D(0x1234) VX(4,1) END" as ids (VX(pc,v)).
std::vector<int64_t> parse(const std::string& text) {
  static const std::map<std::string, Kind> kinds = {
      {"CTA", Kind::CTA}, {"WARP", Kind::WARP},       {"EXEC", Kind::EXEC}, {"VZ", Kind::VZ},
      {"VLO", Kind::VLO}, {"D", Kind::D},             {"BARRIER", Kind::BARRIER},
      {"TRAP", Kind::TRAP}, {"FAULT", Kind::FAULT},   {"END", Kind::END}, {"WMIN", Kind::WMIN},
      {"VX", Kind::VX}, {"VG", Kind::VG},           {"VN", Kind::VN},
      {"VZF", Kind::VZF}, {"VGF", Kind::VGF},       {"VNF", Kind::VNF}, {"DF", Kind::DF},
      {"VH", Kind::VH},   {"VHF", Kind::VHF},     {"VLO1", Kind::VLO1}, {"VLO2", Kind::VLO2},
      {"WARPS", Kind::WARPS}, {"VLO3", Kind::VLO3}, {"VLO4", Kind::VLO4}, {"VLO5", Kind::VLO5}, {"VLO6", Kind::VLO6}};
  std::vector<int64_t> ids;
  std::istringstream in(text);
  std::string t;
  while (in >> t) {
    size_t open = t.find('(');
    uint32_t payload = 0;
    if (open != std::string::npos) payload = uint32_t(std::stoul(t.substr(open + 1), nullptr, 0));
    if (size_t comma = t.find(','); comma != std::string::npos)
      payload = vx_payload(payload, uint32_t(std::stoul(t.substr(comma + 1), nullptr, 0)));
    ids.push_back(token_id(kinds.at(t.substr(0, open)), payload));
  }
  return ids;
}

void expect_trace(const machine::Program& prog, uint32_t threads, uint32_t ctas, const launch::GlobalMemory& global,
                  const std::string& expected) {
  std::vector<int64_t> got = expected_trace(prog, threads, ctas, {}, global);
  EXPECT_EQ(format_token_names(got), format_token_names(parse(expected)));
}

// Runs the oracle to its end and returns it for its results.
std::unique_ptr<TraceOracle> run(const machine::Program& prog, uint32_t threads, uint32_t ctas,
                                 launch::GlobalMemory global) {
  auto o = std::make_unique<TraceOracle>(prog, threads, ctas, std::vector<uint8_t>{}, std::move(global));
  while (!o->done()) o->next();
  return o;
}

TEST(GpuTrace, StraightLineWritesValuesAsVxFallThroughValuesOrVloAndD) {
  machine::Program prog = program({
      blk(alu(Op::MOV, 1, k(5)), jmp(1)),                  // B0
      blk(alu(Op::MOV, 2, k(0x12345678)), jmp(2)),         // B1
      blk(alu(Op::ADD, 3, r(1), r(2)), jmp(3)),            // B2: 0x1234567d, the second in the run: VLO1
      blk(alu(Op::MOV, 4, k(0xffff)), jmp(4)),             // B3: the largest VZ, the third
      blk(alu(Op::ADD, 4, r(4), k(1)), jmp(5)),            // B4: 0x10000, low half 0: VH (a fourth)
      blk(alu(Op::MOV, 5, k(0x1000abcd)), jmp(6)),         // B5: high half 0x1000, VG
      blk(alu(Op::MOV, 6, k(0xfffffffe)), jmp(7)),         // B6: high half 0xffff, VN
      blk(st(Space::Global, r(0), k(kBase + 8), r(3)), exit_()),  // B7: no register written
  });
  expect_trace(prog, 1, 1, global_memory(),
               "CTA(0) WARP(0) EXEC(0) VX(1,5) VLO(0x5678) DF(0x1234) VLO1(0x567d) DF(0x1234) "
               "VZF(0xffff) VH(1) EXEC(5) VGF(0xabcd) VNF(0xfffe) WARP(1) END");
  auto o = run(prog, 1, 1, global_memory());
  EXPECT_EQ(o->steps(), 8u);
  EXPECT_EQ(word(o->memory().bytes, 2), 0x1234567du);
  EXPECT_EQ(o->fault().error, 0);
}

// Fall-through values: three in a row from EXEC (a fourth would leave the
// circuit no marker to count from: vocab.h), and more where a VLO1 .. VLO6
// keeps one in sight.
TEST(GpuTrace, FallThroughValuesRunTheNextBlockWhileTheirCountIsInSight) {
  machine::Program prog = program({
      blk(alu(Op::MOV, 1, k(100)), jmp(1)),              // B0
      blk(alu(Op::MOV, 2, k(200)), jmp(2)),              // B1
      blk(alu(Op::MOV, 3, k(300)), jmp(3)),              // B2: the third in a row
      blk(alu(Op::MOV, 4, k(400)), jmp(4)),              // B3: a fourth would be one too many
      blk(alu(Op::MOV, 5, k(0x10000010)), jmp(5)),       // B4: high half 0x1000
      blk(alu(Op::MOV, 6, k(0x12345678)), jmp(6)),       // B5: after a run of one: VLO1 and DF
      blk(alu(Op::MOV, 7, k(0xfffffff0)), jmp(8)),       // B6: not to the next block
      blk(std::nullopt, exit_()),                        // B7: never reached
      blk(alu(Op::MOV, 8, k(500)), jmp(9)),              // B8
      blk(alu(Op::MOV, 9, k(0x10000020)), br(9, 10, 7)), // B9: br on its result, to the next block
      blk(alu(Op::MOV, 10, k(0xabcdef01)), jmp(11)),     // B10: after a run of two: VLO2 and DF
      blk(alu(Op::MOV, 11, k(600)), jmp(12)),            // B11: a fourth, VLO2 in sight
      blk(alu(Op::MOV, 12, k(700)), jmp(13)),            // B12: a fifth would not see it: VZ
      blk(alu(Op::MOV, 13, k(800)), jmp(14)),            // B13
      blk(alu(Op::MOV, 14, k(0x55556666)), jmp(15)),     // B14: after a run of one: VLO1
      blk(alu(Op::MOV, 15, k(0x77778888)), jmp(16)),     // B15: after a run of two: VLO2
      blk(st(Space::Global, r(0), k(kBase), r(14)), exit_()),  // B16
  });
  expect_trace(prog, 1, 1, global_memory(),
               "CTA(0) WARP(0) EXEC(0) VZF(100) VZF(200) VZF(300) VZ(400) EXEC(4) VGF(0x10) "
               "VLO1(0x5678) DF(0x1234) VN(0xfff0) EXEC(8) VZF(500) VGF(0x20) VLO2(0xef01) DF(0xabcd) "
               "VZF(600) VZ(700) EXEC(13) VZF(800) VLO1(0x6666) DF(0x5555) VLO2(0x8888) DF(0x7777) WARP(1) END");
  auto o = run(prog, 1, 1, global_memory());
  EXPECT_EQ(o->steps(), 16u);
  EXPECT_EQ(word(o->memory().bytes, 0), 0x55556666u);
}

TEST(GpuTrace, AHighHalfAfterANamedBlockFallsThroughAndCountsInTheRun) {
  machine::Program prog = program({
      blk(alu(Op::MOV, 1, k(0x12345678)), jmp(1)),          // B0: named by EXEC: DF
      blk(alu(Op::MOV, 2, k(100)), jmp(2)),                 // B1: the second in the run
      blk(alu(Op::MOV, 3, k(200)), jmp(3)),                 // B2: the third
      blk(alu(Op::MOV, 4, k(300)), jmp(4)),                 // B3: one too many
      blk(st(Space::Global, r(0), k(kBase), r(1)), exit_()),  // B4
  });
  expect_trace(prog, 1, 1, global_memory(),
               "CTA(0) WARP(0) EXEC(0) VLO(0x5678) DF(0x1234) VZF(100) VZF(200) VZ(300) EXEC(4) WARP(1) END");
  auto o = run(prog, 1, 1, global_memory());
  EXPECT_EQ(o->steps(), 5u);
  EXPECT_EQ(word(o->memory().bytes, 0), 0x12345678u);
}

// WARPS (docs/tokens.md section 4): after a thread stops, the next one runs
// in the same token where it goes on at the block the last thread's run began
// at, within a warp group: at a CTA's start every thread begins at B0 (40
// threads: thread 32 begins a group, so its scan token is WARP); after the
// barriers, threads alternate between B4 and B5, so none is WARPS.
TEST(GpuTrace, WarpsRunsTheNextThreadWhereTheLastRunBegan) {
  const machine::Program prog = parity_barriers_program();
  const std::vector<int64_t> t = expected_trace(prog, 40, 1, {}, global_memory());
  int warps = 0;
  std::string pass2;
  bool after_barrier = false;
  for (int64_t id : t) {
    const Token tok = *decode_token(id);
    warps += tok.kind == Kind::WARPS;
    if (tok.kind == Kind::BARRIER) after_barrier = true;
    if (after_barrier && tok.kind == Kind::WARPS) ADD_FAILURE() << "WARPS after the barrier";
  }
  EXPECT_EQ(warps, 31 + 7);  // threads 1..31 and 33..39
  const std::string text = format_token_names(t);
  EXPECT_NE(text.find("VX(3,1) WARPS(2) VX(1,2) VX(2,0) WARPS(3)"), std::string::npos) << text;
  EXPECT_NE(text.find("VX(1,31) VX(3,1) WARP(32) EXEC(0) VX(1,32) VX(2,0) WARPS(33)"), std::string::npos) << text;
  EXPECT_NE(text.find("BARRIER(1) WARP(0) EXEC(4) WARP(1) EXEC(5) VZ(0x0065) WARP(2) EXEC(4) WARP(3) EXEC(5)"),
            std::string::npos)
      << text;
}

// A branch on another register than the block writes: the C record names
// it, so the value token can name the next block (VX, or a fall-through
// value where that block is the next); not so after `sel`, whose c is an
// operand.
TEST(GpuTrace, ABranchOnAnotherRegisterFoldsIntoTheValueToken) {
  const machine::Program prog = branch_on_another_register_program();
  expect_trace(prog, 1, 1, global_memory(),
               "CTA(0) WARP(0) EXEC(0) VX(1,1) VX(2,5) VZF(0x1234) VZF(0x4444) VZ(0x5555) EXEC(8) VZ(7) EXEC(9) "
               "VX(10,0) WARP(1) END");
  // The prompt: B1 .. B4 and B9 name r1 or r0 in a C record; B0 (jmp) and B8 (sel) do not.
  int c_records = 0;
  for (int64_t id : encode_launch(prog, 1, 1, {})) c_records += decode_token(id)->kind == Kind::C;
  EXPECT_EQ(c_records, 5 + 2);  // and B8's c (the immediate 9), B10's store data
}

TEST(GpuTrace, BranchesBothWaysAndALoop) {
  machine::Program prog = program({
      blk(alu(Op::MOV, 1, k(2)), jmp(1)),               // B0
      blk(alu(Op::SUB, 1, r(1), k(1)), br(1, 1, 2)),    // B1: loop while r1 != 0
      blk(std::nullopt, br(1, 3, 4)),                   // B2: br with no register write; r1 = 0
      blk(std::nullopt, exit_()),                       // B3
      blk(alu(Op::MOV, 5, k(0xffffffff)), exit_()),     // B4
  });
  expect_trace(prog, 1, 1, global_memory(),
               "CTA(0) WARP(0) EXEC(0) VX(1,2) VX(1,1) VX(2,0) EXEC(4) VN(0xffff) WARP(1) END");
}

TEST(GpuTrace, VxOnlyForSmallValuesWhoseNextBlockNeedsNoRegisterRead) {
  machine::Program prog = program({
      blk(special(Op::WARP, 2), jmp(1)),              // B0: jmp, 0
      blk(alu(Op::SEL, 1, r(2), k(5), k(3)), br(2, 2, 3)),  // B1: sel (three operands), br on another register: VZ, EXEC
      blk(std::nullopt, exit_()),                     // B2: never reached
      blk(alu(Op::MOV, 1, k(64)), jmp(4)),            // B3: too large for VX (falls through)
      blk(alu(Op::MOV, 1, k(63)), br(1, 5, 2)),       // B4: the largest VX value, br on it
      blk(alu(Op::MOV, 2, k(16)), jmp(6)),            // B5: above one digit
      blk(std::nullopt, exit_()),                     // B6
  });
  expect_trace(prog, 1, 1, global_memory(),
               "CTA(0) WARP(0) EXEC(0) VX(1,0) VZ(3) EXEC(3) VZF(64) VX(5,63) VX(6,16) WARP(1) END");
  EXPECT_EQ(run(prog, 1, 1, global_memory())->steps(), 6u);
}

TEST(GpuTrace, ThreadsRunOneAfterAnotherUntilEachExits) {
  machine::Program prog = program({
      blk(special(Op::WARP, 1), br(1, 2, 1)),  // B0: thread 0 takes the longer way
      blk(alu(Op::MOV, 2, k(7)), jmp(2)),      // B1
      blk(std::nullopt, exit_()),              // B2
  });
  expect_trace(prog, 3, 1, global_memory(),
               "CTA(0) WARP(0) EXEC(0) VX(1,0) VX(2,7) WARPS(1) VX(2,1) WARPS(2) VX(2,2) WARP(3) END");
}

TEST(GpuTrace, BarriersOpenInAlternatingEpochsAndSkipExitedThreads) {
  // Thread 0 reaches the first bar at B3, thread 2 at B2 by a longer way,
  // thread 1 exits before it; after the barrier both run B4 to the second bar.
  machine::Program prog = program({
      blk(special(Op::WARP, 1), br(1, 1, 3)),          // B0
      blk(alu(Op::SUB, 2, r(1), k(1)), br(2, 2, 5)),   // B1: thread 1 -> B5, thread 2 -> B2
      blk(std::nullopt, bar(4)),                       // B2
      blk(alu(Op::MOV, 3, k(9)), bar(4)),              // B3
      blk(alu(Op::ADD, 4, r(1), k(0x100)), bar(6)),    // B4
      blk(std::nullopt, exit_()),                      // B5
      blk(std::nullopt, exit_()),                      // B6
  });
  expect_trace(prog, 3, 1, global_memory(),
               "CTA(0) WARP(0) EXEC(0) VX(3,0) VZ(9) WARPS(1) VX(1,1) VX(5,0) "
               "WARPS(2) VX(1,2) VX(2,1) WARP(3) BARRIER(1) "
               "WARP(0) EXEC(4) VZ(0x100) WARP(1) WARP(2) EXEC(4) VZ(0x102) WARP(3) BARRIER(0) "
               "WARP(0) EXEC(6) WARP(1) WARP(2) EXEC(6) WARP(3) END");
}

TEST(GpuTrace, BarrierOrdersSharedMemoryBetweenThreads) {
  // Thread 1 stores to shared memory before the bar; thread 0 loads after it.
  machine::Program prog = program({
      blk(special(Op::WARP, 1), br(1, 1, 2)),                     // B0
      blk(st(Space::Shared, r(0), k(4), k(0x4242)), bar(3)),      // B1: thread 1
      blk(std::nullopt, bar(3)),                                  // B2: thread 0
      blk(ld(Space::Shared, 2, r(0), k(4)), exit_()),             // B3
  });
  prog.shared_bytes = 8;
  expect_trace(prog, 2, 1, global_memory(),
               "CTA(0) WARP(0) EXEC(0) VX(2,0) WARPS(1) VX(1,1) WARP(2) BARRIER(1) "
               "WARP(0) EXEC(3) VZ(0x4242) WARPS(1) VZ(0x4242) WARP(2) END");
}

TEST(GpuTrace, CtasRunInOrderEachWithItsOwnEpochsAndSharedMemory) {
  machine::Program prog = program({
      blk(special(Op::CTA, 1), jmp(1)),                      // B0
      blk(ld(Space::Shared, 2, r(0), k(0)), jmp(2)),         // B1: zero in every CTA
      blk(st(Space::Shared, r(0), k(0), k(5)), bar(3)),      // B2
      blk(special(Op::WARP, 3), exit_()),                    // B3
  });
  prog.shared_bytes = 4;
  expect_trace(prog, 2, 2, global_memory(),
               "CTA(0) WARP(0) EXEC(0) VX(1,0) VX(2,0) WARPS(1) VX(1,0) VX(2,5) "
               "WARP(2) BARRIER(1) WARP(0) EXEC(3) VZ(0) WARPS(1) VZ(1) WARP(2) "
               "CTA(1) WARP(0) EXEC(0) VX(1,1) VX(2,0) WARPS(1) VX(1,1) VX(2,5) "
               "WARP(2) BARRIER(1) WARP(0) EXEC(3) VZ(0) WARPS(1) VZ(1) WARP(2) END");
}

TEST(GpuTrace, TrapStopsTheLaunchAfterTheBlocksStores) {
  machine::Program prog = program({
      blk(special(Op::WARP, 1), br(1, 2, 1)),                 // B0
      blk(st(Space::Global, r(0), k(kBase), k(42)), trap(710)),  // B1: thread 0
      blk(std::nullopt, exit_()),                             // B2: never reached
  });
  expect_trace(prog, 2, 1, global_memory(), "CTA(0) WARP(0) EXEC(0) VX(1,0) TRAP(710) END");
  auto o = run(prog, 2, 1, global_memory());
  EXPECT_EQ(o->fault().error, 710);
  EXPECT_EQ(o->steps(), 2u);
  EXPECT_EQ(word(o->memory().bytes, 0), 42u);
}

// A value whose low half is 0 is one token of its high half: VHF when its
// block falls through to the next, VH (then EXEC) when it jumps.
TEST(GpuTrace, ValuesWithALowHalfOfZeroAreTheirHighHalf) {
  machine::Program prog = program({
      blk(alu(Op::MOV, 1, k(0x30000)), jmp(1)),                    // B0: falls through
      blk(alu(Op::SUB, 2, r(1), k(0x10000)), jmp(3)),              // B1: 0x20000, jumps
      blk(alu(Op::MOV, 3, k(7)), jmp(3)),                          // B2: not run
      blk(st(Space::Global, r(0), k(kBase), r(2)), exit_()),       // B3
  });
  expect_trace(prog, 1, 1, global_memory(), "CTA(0) WARP(0) EXEC(0) VHF(3) VH(2) EXEC(3) WARP(1) END");
  auto o = run(prog, 1, 1, global_memory());
  EXPECT_EQ(o->steps(), 3u);
  EXPECT_EQ(word(o->memory().bytes, 0), 0x20000u);
}

TEST(GpuTrace, IllegalAndMisalignedAccessesFault) {
  machine::Program illegal = program({
      blk(alu(Op::MOV, 1, k(kBase + machine::model_params().global_bytes)), jmp(1)),  // just past global memory
      blk(ld(Space::Global, 2, r(1), k(0)), exit_()),
  });
  expect_trace(illegal, 1, 1, global_memory(), "CTA(0) WARP(0) EXEC(0) VHF(0x1004) FAULT(0) END");
  auto o = run(illegal, 1, 1, global_memory());
  EXPECT_EQ(o->fault().error, 700);
  EXPECT_EQ(o->steps(), 2u);  // the faulting EXEC counts

  machine::Program misaligned = program({
      blk(st(Space::Global, r(0), k(kBase + 2), k(1)), exit_()),
  });
  expect_trace(misaligned, 2, 1, global_memory(), "CTA(0) WARP(0) EXEC(0) FAULT(1) END");
  o = run(misaligned, 2, 1, global_memory());
  EXPECT_EQ(o->fault().error, 716);
  EXPECT_EQ(word(o->memory().bytes, 0), 0u);
}

TEST(GpuTrace, ContextNamesThreadBlockRegistersAndRecentTokens) {
  machine::Program prog = program({
      blk(alu(Op::MOV, 1, k(0xabcd)), jmp(1)),
      blk(alu(Op::ADD, 2, r(1), k(1)), exit_()),
  });
  TraceOracle o(prog, 1, 1, {}, global_memory());
  for (int i = 0; i < 4; ++i) o.next();  // CTA(0) WARP(0) EXEC(0) VZF(0xabcd)
  std::string c = o.context();
  EXPECT_NE(c.find("CTA 0, thread 0"), std::string::npos) << c;
  EXPECT_NE(c.find("B0: mov r1, 0xabcd"), std::string::npos) << c;
  EXPECT_NE(c.find("r1=0000abcd"), std::string::npos) << c;
  EXPECT_NE(c.find("r31=00000000"), std::string::npos) << c;
  EXPECT_NE(c.find("EXEC(0) VZF(0xabcd)"), std::string::npos) << c;
  while (!o.done()) o.next();
  EXPECT_THROW(o.next(), std::logic_error);
}

Terminator wbar(uint32_t t) { return {Term::WBAR, 0, t, 0, 0}; }

TEST(GpuTrace, ConvergedThreadsMeetAtWbarAndGoOnTogether) {
  // A shuffle's shape: each thread stores its id at its slot, waits at wbar,
  // loads thread 1's slot, waits again, exits.  The first waiter of the warp
  // group writes WMIN; past the last thread, WARP(0) releases.
  machine::Program prog = program({
      blk(special(Op::WARP, 1), jmp(1)),                    // B0
      blk(alu(Op::SHL, 2, r(1), k(2)), jmp(2)),             // B1
      blk(st(Space::Shared, r(2), k(0), r(1)), wbar(3)),    // B2
      blk(ld(Space::Shared, 3, r(0), k(4)), wbar(4)),       // B3
      blk(std::nullopt, exit_()),                           // B4
  });
  expect_trace(prog, 3, 1, global_memory(),
               "CTA(0) WARP(0) EXEC(0) VX(1,0) VX(2,0) WMIN(3) WARP(1) EXEC(0) VX(1,1) VX(2,4) "
               "WARPS(2) VX(1,2) VX(2,8) WARP(3) WARP(0) "
               "EXEC(3) VZ(1) WMIN(4) WARP(1) EXEC(3) VZ(1) WARPS(2) VZ(1) WARP(3) WARP(0) "
               "EXEC(4) WARPS(1) WARPS(2) WARP(3) END");
}

TEST(GpuTrace, DivergentThreadsAtDifferentWbarsGoOnFromTheLeastPc) {
  // Thread 0 waits at B4, thread 1 at B3: the group's minimum B3 goes on
  // first (thread 0 writes its WMIN again in that pass), then both at B4.
  machine::Program prog = program({
      blk(special(Op::WARP, 1), br(1, 1, 2)),    // B0
      blk(std::nullopt, wbar(3)),                // B1: thread 1
      blk(std::nullopt, wbar(4)),                // B2: thread 0
      blk(alu(Op::MOV, 2, k(7)), wbar(4)),       // B3
      blk(std::nullopt, exit_()),                // B4
  });
  expect_trace(prog, 2, 1, global_memory(),
               "CTA(0) WARP(0) EXEC(0) VX(2,0) WMIN(4) WARP(1) EXEC(0) VX(1,1) WMIN(3) WARP(2) "
               "WARP(0) WMIN(4) WARP(1) EXEC(3) VZ(7) WARP(2) "
               "WARP(0) EXEC(4) WARPS(1) WARP(2) END");
}

TEST(GpuTrace, WarpGroupsReleaseOnTheirOwnAndBarWaitsForAll) {
  // 40 threads: group 0 (threads 0-31) and group 1 (32-39).  Thread 33
  // reaches bar early; the rest meet at wbar B2, then at bar B3.
  machine::Program prog = program({
      blk(alu(Op::SEQ, 1, r(0), r(0)), jmp(1)),              // B0
      blk(special(Op::WARP, 2), jmp(5)),                     // B1
      blk(std::nullopt, bar(3)),                             // B2
      blk(special(Op::CTA, 3), exit_()),                     // B3
      blk(std::nullopt, wbar(2)),                            // B4
      blk(alu(Op::SEQ, 4, r(2), k(33)), br(4, 2, 4)),        // B5: thread 33 -> B2
  });
  auto o = run(prog, 40, 2, global_memory());
  EXPECT_EQ(o->fault().error, 0);
  std::vector<int64_t> t = expected_trace(prog, 40, 2, {}, global_memory());
  int wmins = 0, releases = 0, barriers = 0;
  for (size_t i = 0; i < t.size(); ++i) {
    const Token k = *decode_token(t[i]);
    wmins += k.kind == Kind::WMIN;
    barriers += k.kind == Kind::BARRIER;
    releases += k.kind == Kind::WARP && k.payload == 0 && i > 0 && t[i - 1] == token_id(Kind::WARP, 40);
  }
  EXPECT_EQ(wmins, 2 * 2);     // per CTA, one per group in the pass before the release
  EXPECT_EQ(releases, 2 * 1);
  EXPECT_EQ(barriers, 2 * 1);
}

TEST(GpuTrace, LaunchesTheTraceCannotDescribeAreRefused) {
  machine::Program code = program({blk(std::nullopt, trap(1024))});
  EXPECT_THROW(TraceOracle(code, 1, 1, {}, global_memory()), std::invalid_argument);
  machine::Program two = program({blk(alu(Op::MOV, 1, k(1)), exit_())});
  two.blocks[0].instrs.push_back(alu(Op::MOV, 2, k(2)));  // K = 1 on the model's machine
  EXPECT_THROW(TraceOracle(two, 1, 1, {}, global_memory()), std::invalid_argument);
  machine::Program forever = program({blk(std::nullopt, jmp(0))});
  EXPECT_THROW(expected_trace(forever, 1, 1, {}, global_memory(), 1000), std::runtime_error);
}

TEST(GpuTrace, DumpsWriteIdsOrNames) {
  std::vector<int64_t> prompt = {token_id(Kind::NT, 3), token_id(Kind::START)};
  std::vector<int64_t> gen = {token_id(Kind::CTA, 0), token_id(Kind::END)};
  EXPECT_EQ(format_tokens(prompt), std::to_string(248320 + 3) + " " + std::to_string(token_id(Kind::START)));
  EXPECT_EQ(dump_line(prompt, gen), format_tokens(prompt) + " | " + format_tokens(gen));
  EXPECT_EQ(format_token_names(gen), "CTA(0) END");
  EXPECT_EQ(format_tokens({}), "");
}

#ifdef QGPU_DOT_PRODUCT_PTX
// dot<<<1, 3>>> of [1,2,3] and [4,5,6] (samples/dot_product.cu), lowered for
// the model's machine with the default options (the atomicAdd stays an atomic)
// and for the model (a load, an add and a store).
class GpuTraceDotProduct : public testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    std::ifstream in(QGPU_DOT_PRODUCT_PTX);
    ASSERT_TRUE(in) << QGPU_DOT_PRODUCT_PTX;
    std::stringstream ss;
    ss << in.rdbuf();
    const machine::Params& p = machine::model_params();
    img_ = machine::load_module(ss.str(), p);
    a_ = img_.alloc(12);
    b_ = img_.alloc(12);
    result_ = img_.alloc(4);
    img_.mem.bytes.resize(p.global_bytes, 0);  // the daemon's image: all of global memory
    const uint32_t av[3] = {1, 2, 3}, bv[3] = {4, 5, 6};
    std::memcpy(&img_.mem.bytes[a_ - kBase], av, 12);
    std::memcpy(&img_.mem.bytes[b_ - kBase], bv, 12);
    // dot(const int* a, const int* b, int* result, int n): three pointers, then n.
    params_.assign(28, 0);
    std::memcpy(&params_[0], &a_, 8);
    std::memcpy(&params_[8], &b_, 8);
    std::memcpy(&params_[16], &result_, 8);
    params_[24] = 3;
    machine::LowerOptions opts;
    opts.for_model = GetParam();
    prog_ = machine::lower(img_.module, "_Z3dotPKiS0_Pii", {{1, 1, 1}, {3, 1, 1}, 0, img_.symbols}, p, opts);
  }

  machine::ModuleImage img_;
  uint64_t a_ = 0, b_ = 0, result_ = 0;
  std::vector<uint8_t> params_;
  machine::Program prog_;
};

TEST_P(GpuTraceDotProduct, TraceEndsWithTheRightSumAndOneExecPerInterpreterStep) {
  TraceOracle o(prog_, 3, 1, params_, img_.mem);
  std::vector<int64_t> trace;
  while (!o.done()) trace.push_back(o.next());

  launch::GlobalMemory mem = img_.mem;
  machine::Interpreter interp(prog_, machine::model_params(), 1, 3, params_, mem);
  interp.run();
  EXPECT_EQ(interp.fault().error, 0);
  EXPECT_EQ(o.fault().error, 0);
  EXPECT_EQ(o.steps(), interp.stats().steps);
  uint64_t execs = 0;
  for (int64_t id : trace) execs += runs_block(decode_token(id)->kind);
  EXPECT_EQ(execs, o.steps());
  ASSERT_GE(trace.size(), 4u);
  EXPECT_EQ(format_token_names({trace[0], trace[1]}), "CTA(0) WARP(0)");
  EXPECT_EQ(format_token_names({trace[trace.size() - 2], trace.back()}), "WARP(3) END");
  EXPECT_EQ(word(o.memory().bytes, (result_ - kBase) / 4), 32u);
  EXPECT_EQ(word(o.memory().bytes, (a_ - kBase) / 4 + 2), 3u);
  EXPECT_EQ(o.memory().bytes, mem.bytes);  // nothing else differs from the interpreter's run

  if (GetParam()) {
    std::vector<int64_t> prompt = encode_prompt(prog_, 3, 1, params_, img_.mem);
    EXPECT_EQ(format_token_names({prompt[0], prompt[1]}), "NT(3) NC(1)");
    EXPECT_EQ(prompt.back(), token_id(Kind::START));
    std::cout << "dot<<<1, 3>>> for the model: " << prog_.blocks.size() << " blocks, prompt " << prompt.size()
              << " tokens, trace " << trace.size() << " tokens, " << o.steps() << " EXECs\n";
  } else {
    EXPECT_THROW(encode_prompt(prog_, 3, 1, params_, img_.mem), std::invalid_argument);  // the atomic
  }
}

INSTANTIATE_TEST_SUITE_P(Lowering, GpuTraceDotProduct, testing::Values(false, true),
                         [](const testing::TestParamInfo<bool>& i) { return i.param ? "ForModel" : "Default"; });
#endif

}  // namespace
}  // namespace qgpu::gpu
