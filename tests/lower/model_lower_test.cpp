// The model lowering (LowerOptions::for_model, docs/tokens.md section 1):
// each expansion against direct expectations computed here, the shape of
// every program it produces, model_unsupported(), and the interpreter
// backend running the model's machine.
#include "build_paths.h"   // qgpu_paths() in CMakeLists.txt

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <functional>
#include <set>
#include <sstream>

#include "model_host/backends/interpreter.h"
#include "model_host/machine/api.h"
#include "model_host/machine/image.h"
#include "model_host/machine/interpreter.h"
#include "model_host/lower/lower.h"
#include "model_host/ptx/float_ref.h"

namespace qgpu::machine {
namespace {

const std::string kHeader = ".version 8.5\n.target sm_75\n.address_size 64\n";

std::string replace(std::string text, const std::string& from, const std::string& to) {
  for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size()))
    text.replace(at, from.size(), to);
  return text;
}

// One module on the model's machine: buffers in its global memory, the
// kernel lowered with the model lowering and run on the interpreter.
class ModelLaunch {
 public:
  explicit ModelLaunch(const std::string& ptx) : img_(load_module(kHeader + ptx, model_params())) {}

  uint64_t buffer(const std::vector<uint8_t>& bytes) {
    uint64_t at = img_.alloc(uint32_t(bytes.size()));
    std::memcpy(&img_.mem.bytes[at - img_.mem.base], bytes.data(), bytes.size());
    return at;
  }
  uint64_t buffer(const std::vector<uint32_t>& words) {
    std::vector<uint8_t> b(words.size() * 4);
    std::memcpy(b.data(), words.data(), b.size());
    return buffer(b);
  }
  std::vector<uint8_t> bytes(uint64_t at, size_t n) const {
    auto from = img_.mem.bytes.begin() + (at - img_.mem.base);
    return {from, from + n};
  }
  std::vector<uint32_t> words(uint64_t at, size_t n) const {
    std::vector<uint32_t> w(n);
    std::memcpy(w.data(), &img_.mem.bytes[at - img_.mem.base], n * 4);
    return w;
  }

  // Lowers and runs `k`; returns the fault (error 0: the launch completed).
  Fault run(launch::Dim3 grid, launch::Dim3 block, std::vector<uint8_t> params) {
    prog_ = lower(img_.module, "k", {grid, block, 0, img_.symbols}, model_params(), {.for_model = true});
    params.resize((params.size() + 3) / 4 * 4);
    Interpreter in(prog_, model_params(), prog_.ctas, prog_.threads, params, img_.mem);
    in.run(10'000'000);
    return in.fault();
  }
  const Program& program() const { return prog_; }

 private:
  ModuleImage img_;
  Program prog_;
};

std::vector<uint8_t> pointers(std::initializer_list<uint64_t> ptrs) {
  std::vector<uint8_t> p;
  for (uint64_t v : ptrs) {
    p.resize(p.size() + 8);
    std::memcpy(p.data() + p.size() - 8, &v, 8);
  }
  return p;
}

// Nothing the model's circuit lacks is left: one instruction per block, only
// 32-bit memory accesses, no atomics, signed high multiplies or lane reads, and no
// store's block ends in a branch.
void expect_model_shape(const Program& prog) {
  for (size_t b = 0; b < prog.blocks.size(); ++b) {
    const Block& blk = prog.blocks[b];
    SCOPED_TRACE("block B" + std::to_string(b));
    ASSERT_LE(blk.instrs.size(), 1u);
    for (const Instr& in : blk.instrs) {
      EXPECT_NE(in.op, Op::ATOM) << to_string(in);
      EXPECT_NE(in.op, Op::MULHS) << to_string(in);
      EXPECT_NE(in.op, Op::LANE) << to_string(in);
      if (in.op == Op::LD || in.op == Op::ST) EXPECT_EQ(in.bytes, 4) << to_string(in);
      if (in.op == Op::ST) EXPECT_NE(blk.term.kind, Term::BR) << to_string(in);
    }
  }
}

// ---- atomics ------------------------------------------------------------------

struct AtomCase {
  const char* ptx;  // the atom instruction: %r5 = old, [ADDR] the cell, %r3 = b, %r4 = c
  std::function<uint32_t(uint32_t old, uint32_t b, uint32_t c)> fn;
};
int32_t s32(uint32_t x) { return int32_t(x); }
const std::vector<AtomCase> kAtomCases = {
    {"atom.SPACE.add.u32 %r5, [ADDR], %r3;", [](uint32_t o, uint32_t b, uint32_t) { return o + b; }},
    {"atom.SPACE.min.s32 %r5, [ADDR], %r3;", [](uint32_t o, uint32_t b, uint32_t) { return s32(b) < s32(o) ? b : o; }},
    {"atom.SPACE.max.s32 %r5, [ADDR], %r3;", [](uint32_t o, uint32_t b, uint32_t) { return s32(b) > s32(o) ? b : o; }},
    {"atom.SPACE.min.u32 %r5, [ADDR], %r3;", [](uint32_t o, uint32_t b, uint32_t) { return b < o ? b : o; }},
    {"atom.SPACE.max.u32 %r5, [ADDR], %r3;", [](uint32_t o, uint32_t b, uint32_t) { return b > o ? b : o; }},
    {"atom.SPACE.exch.b32 %r5, [ADDR], %r3;", [](uint32_t, uint32_t b, uint32_t) { return b; }},
    {"atom.SPACE.cas.b32 %r5, [ADDR], %r3, %r4;", [](uint32_t o, uint32_t b, uint32_t c) { return o == b ? c : o; }},
    {"atom.SPACE.and.b32 %r5, [ADDR], %r3;", [](uint32_t o, uint32_t b, uint32_t) { return o & b; }},
    {"atom.SPACE.or.b32 %r5, [ADDR], %r3;", [](uint32_t o, uint32_t b, uint32_t) { return o | b; }},
    {"atom.SPACE.xor.b32 %r5, [ADDR], %r3;", [](uint32_t o, uint32_t b, uint32_t) { return o ^ b; }},
    // PTX: inc gives (old >= b) ? 0 : old + 1; dec gives (old == 0 || old > b) ? b : old - 1.
    {"atom.SPACE.inc.u32 %r5, [ADDR], %r3;", [](uint32_t o, uint32_t b, uint32_t) { return o >= b ? 0 : o + 1; }},
    {"atom.SPACE.dec.u32 %r5, [ADDR], %r3;",
     [](uint32_t o, uint32_t b, uint32_t) { return o == 0 || o > b ? b : o - 1; }},
};

// Every thread t (global index) applies the atomic to cell t % 4 with b[t]
// and c[t] and records the old value.  The shared form copies the cells into
// shared memory first and back afterwards.
const std::string kAtomGlobal = R"(
.visible .entry k(.param .u64 cells, .param .u64 bs, .param .u64 cs, .param .u64 olds)
{
  .reg .b32 %r<8>;
  .reg .b64 %rd<12>;
  ld.param.u64 %rd1, [cells];
  ld.param.u64 %rd2, [bs];
  ld.param.u64 %rd3, [cs];
  ld.param.u64 %rd4, [olds];
  mov.u32 %r1, %tid.x;
  mov.u32 %r6, %ctaid.x;
  mov.u32 %r7, %ntid.x;
  mad.lo.s32 %r1, %r6, %r7, %r1;
  and.b32 %r2, %r1, 3;
  mul.wide.u32 %rd5, %r2, 4;
  add.s64 %rd6, %rd1, %rd5;
  mul.wide.u32 %rd7, %r1, 4;
  add.s64 %rd8, %rd2, %rd7;
  ld.global.u32 %r3, [%rd8];
  add.s64 %rd9, %rd3, %rd7;
  ld.global.u32 %r4, [%rd9];
  ATOM
  add.s64 %rd10, %rd4, %rd7;
  st.global.u32 [%rd10], %r5;
  ret;
}
)";
const std::string kAtomShared = R"(
.visible .entry k(.param .u64 cells, .param .u64 bs, .param .u64 cs, .param .u64 olds)
{
  .reg .pred %p<2>;
  .reg .b32 %r<8>;
  .reg .b64 %rd<12>;
  .shared .align 4 .b8 sh[16];
  ld.param.u64 %rd1, [cells];
  ld.param.u64 %rd2, [bs];
  ld.param.u64 %rd3, [cs];
  ld.param.u64 %rd4, [olds];
  mov.u32 %r1, %tid.x;
  and.b32 %r2, %r1, 3;
  shl.b32 %r6, %r2, 2;
  mov.u32 %r7, sh;
  add.s32 %r7, %r7, %r6;
  setp.lt.u32 %p1, %r1, 4;
  mul.wide.u32 %rd5, %r2, 4;
  add.s64 %rd6, %rd1, %rd5;
  @%p1 ld.global.u32 %r0, [%rd6];
  @%p1 st.shared.u32 [%r7], %r0;
  bar.sync 0;
  mul.wide.u32 %rd7, %r1, 4;
  add.s64 %rd8, %rd2, %rd7;
  ld.global.u32 %r3, [%rd8];
  add.s64 %rd9, %rd3, %rd7;
  ld.global.u32 %r4, [%rd9];
  ATOM
  bar.sync 0;
  @%p1 ld.shared.u32 %r0, [%r7];
  @%p1 st.global.u32 [%rd6], %r0;
  add.s64 %rd10, %rd4, %rd7;
  st.global.u32 [%rd10], %r5;
  ret;
}
)";

TEST(ModelLowering, AtomicsOfEveryFunctionWithCollidingAddresses) {
  const std::vector<uint32_t> edges = {0,          1,          2,          3,          5,          7,         0x7fffffff,
                                       0x80000000, 0x80000001, 0xfffffffe, 0xffffffff, 0x00010000, 0x0000ffff};
  const std::vector<uint32_t> cells0 = {0, 5, 0x80000000, 0xffffffff};
  for (bool shared : {false, true}) {
    const uint32_t ctas = shared ? 1 : 2, threads = 64, n = ctas * threads;
    for (size_t f = 0; f < kAtomCases.size(); ++f) {
      const AtomCase& ac = kAtomCases[f];
      SCOPED_TRACE(std::string(ac.ptx) + (shared ? " (shared)" : " (global)"));
      const bool wraps = std::string(ac.ptx).find(".inc.") != std::string::npos ||
                         std::string(ac.ptx).find(".dec.") != std::string::npos;
      std::vector<uint32_t> b(n), c(n);
      for (uint32_t t = 0; t < n; ++t) {
        b[t] = wraps ? t % 7 : edges[(t * 7) % edges.size()];
        c[t] = edges[(t * 5 + 3) % edges.size()];
      }
      // The model's machine runs the threads one after another, in order.
      std::vector<uint32_t> cells = cells0, olds(n);
      for (uint32_t t = 0; t < n; ++t) {
        olds[t] = cells[t % 4];
        cells[t % 4] = ac.fn(olds[t], b[t], c[t]);
      }
      std::string atom = replace(replace(ac.ptx, "SPACE", shared ? "shared" : "global"), "ADDR", shared ? "%r7" : "%rd6");
      ModelLaunch l(replace(shared ? kAtomShared : kAtomGlobal, "ATOM", atom));
      uint64_t pc = l.buffer(cells0), pb = l.buffer(b), pcs = l.buffer(c), po = l.buffer(std::vector<uint32_t>(n));
      Fault fault = l.run({ctas, 1, 1}, {threads, 1, 1}, pointers({pc, pb, pcs, po}));
      ASSERT_EQ(fault.error, 0) << fault.message;
      expect_model_shape(l.program());
      EXPECT_EQ(model_unsupported(l.program()), std::nullopt);
      EXPECT_EQ(l.words(pc, 4), cells);
      EXPECT_EQ(l.words(po, n), olds);
    }
  }
}

// ---- 8- and 16-bit accesses ------------------------------------------------------

// A byte pattern whose sign bits differ at every offset within a word.
std::vector<uint8_t> pattern(size_t n) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = uint8_t(((i / 4) % 2 ? 0x80 : 0) | ((i * 37 + 11) & 0x7f));
  v[5] = 0xff;
  v[6] = 0x00;
  return v;
}
uint32_t u16_at(const std::vector<uint8_t>& v, size_t i) { return v[i] | uint32_t(v[i + 1]) << 8; }

TEST(ModelLowering, ByteAndHalfwordLoadsAtEveryOffset) {
  ModelLaunch l(R"(
.visible .entry k(.param .u64 src, .param .u64 dst)
{
  .reg .b32 %r<8>;
  .reg .b64 %rd<8>;
  ld.param.u64 %rd1, [src];
  ld.param.u64 %rd2, [dst];
  mov.u32 %r1, %tid.x;
  cvt.u64.u32 %rd3, %r1;
  add.s64 %rd4, %rd1, %rd3;
  ld.global.u8 %r2, [%rd4];
  ld.global.s8 %r3, [%rd4];
  add.s64 %rd5, %rd4, %rd3;
  ld.global.u16 %r4, [%rd5];
  ld.global.s16 %r5, [%rd5];
  mul.wide.u32 %rd6, %r1, 16;
  add.s64 %rd7, %rd2, %rd6;
  st.global.u32 [%rd7], %r2;
  st.global.u32 [%rd7+4], %r3;
  st.global.u32 [%rd7+8], %r4;
  st.global.u32 [%rd7+12], %r5;
  ret;
}
)");
  const uint32_t n = 32;
  std::vector<uint8_t> src = pattern(2 * n);
  uint64_t ps = l.buffer(src), pd = l.buffer(std::vector<uint32_t>(4 * n));
  Fault fault = l.run({1, 1, 1}, {n, 1, 1}, pointers({ps, pd}));
  ASSERT_EQ(fault.error, 0) << fault.message;
  expect_model_shape(l.program());
  std::vector<uint32_t> got = l.words(pd, 4 * n);
  for (uint32_t t = 0; t < n; ++t) {
    SCOPED_TRACE("thread " + std::to_string(t));
    EXPECT_EQ(got[4 * t], src[t]);
    EXPECT_EQ(got[4 * t + 1], uint32_t(int32_t(int8_t(src[t]))));
    EXPECT_EQ(got[4 * t + 2], u16_at(src, 2 * t));
    EXPECT_EQ(got[4 * t + 3], uint32_t(int32_t(int16_t(u16_at(src, 2 * t)))));
  }
}

TEST(ModelLowering, ByteAndHalfwordStoresAtEveryOffsetKeepTheirNeighbours) {
  ModelLaunch l(R"(
.visible .entry k(.param .u64 bytes, .param .u64 halves)
{
  .reg .b32 %r<8>;
  .reg .b64 %rd<8>;
  ld.param.u64 %rd1, [bytes];
  ld.param.u64 %rd2, [halves];
  mov.u32 %r1, %tid.x;
  mul.lo.s32 %r2, %r1, 3;
  cvt.u64.u32 %rd3, %r2;
  add.s64 %rd4, %rd1, %rd3;
  mul.lo.s32 %r3, %r1, -1640531535;
  xor.b32 %r3, %r3, %r1;
  st.global.u8 [%rd4], %r3;
  mul.lo.s32 %r4, %r1, 6;
  cvt.u64.u32 %rd5, %r4;
  add.s64 %rd6, %rd2, %rd5;
  st.global.u16 [%rd6], %r3;
  ret;
}
)");
  const uint32_t n = 32;
  std::vector<uint8_t> bytes = pattern(3 * n), halves = pattern(6 * n);
  uint64_t pb = l.buffer(bytes), ph = l.buffer(halves);
  Fault fault = l.run({1, 1, 1}, {n, 1, 1}, pointers({pb, ph}));
  ASSERT_EQ(fault.error, 0) << fault.message;
  expect_model_shape(l.program());
  for (uint32_t t = 0; t < n; ++t) {
    uint32_t v = (t * 0x9E3779B1u) ^ t;  // stores keep only the low 8 or 16 bits
    bytes[3 * t] = uint8_t(v);
    halves[6 * t] = uint8_t(v);
    halves[6 * t + 1] = uint8_t(v >> 8);
  }
  EXPECT_EQ(l.bytes(pb, bytes.size()), bytes);
  EXPECT_EQ(l.bytes(ph, halves.size()), halves);
}

// Shared memory: the threads' byte and halfword stores share words (a
// read-modify-write each), then each thread reads another thread's values.
TEST(ModelLowering, SharedBytesAndHalfwordsSharedByThreads) {
  ModelLaunch l(R"(
.visible .entry k(.param .u64 dst)
{
  .reg .b32 %r<12>;
  .reg .b64 %rd<4>;
  .shared .align 4 .b8 sb[64];
  .shared .align 4 .b8 sh[128];
  ld.param.u64 %rd1, [dst];
  mov.u32 %r1, %tid.x;
  mov.u32 %r2, sb;
  add.s32 %r3, %r2, %r1;
  mul.lo.s32 %r4, %r1, 37;
  add.s32 %r4, %r4, 91;
  st.shared.u8 [%r3], %r4;
  mov.u32 %r5, sh;
  shl.b32 %r6, %r1, 1;
  add.s32 %r6, %r5, %r6;
  mul.lo.s32 %r7, %r1, 4369;
  add.s32 %r7, %r7, 32768;
  st.shared.u16 [%r6], %r7;
  bar.sync 0;
  xor.b32 %r8, %r1, 63;
  add.s32 %r3, %r2, %r8;
  shl.b32 %r6, %r8, 1;
  add.s32 %r6, %r5, %r6;
  ld.shared.s8 %r9, [%r3];
  ld.shared.u8 %r10, [%r3];
  ld.shared.s16 %r11, [%r6];
  ld.shared.u16 %r4, [%r6];
  mul.wide.u32 %rd2, %r1, 16;
  add.s64 %rd3, %rd1, %rd2;
  st.global.u32 [%rd3], %r9;
  st.global.u32 [%rd3+4], %r10;
  st.global.u32 [%rd3+8], %r11;
  st.global.u32 [%rd3+12], %r4;
  ret;
}
)");
  const uint32_t n = 64;
  uint64_t pd = l.buffer(std::vector<uint32_t>(4 * n));
  Fault fault = l.run({1, 1, 1}, {n, 1, 1}, pointers({pd}));
  ASSERT_EQ(fault.error, 0) << fault.message;
  expect_model_shape(l.program());
  std::vector<uint32_t> got = l.words(pd, 4 * n);
  for (uint32_t t = 0; t < n; ++t) {
    SCOPED_TRACE("thread " + std::to_string(t));
    uint32_t o = t ^ 63;
    uint8_t byte = uint8_t(o * 37 + 91);
    uint16_t half = uint16_t(o * 4369 + 32768);
    EXPECT_EQ(got[4 * t], uint32_t(int32_t(int8_t(byte))));
    EXPECT_EQ(got[4 * t + 1], byte);
    EXPECT_EQ(got[4 * t + 2], uint32_t(int32_t(int16_t(half))));
    EXPECT_EQ(got[4 * t + 3], half);
  }
}

// A loop that scans shared arrays a word at a time reads the byte at +3 and
// the halfword at +2: the known-bits pass knows the addresses' low bits, so
// the byte offset within the word is a constant and no shift amount is
// computed (docs/isa.md section 8, clean-up).
TEST(ModelLowering, NarrowLoadsAtAKnownOffsetShiftByConstants) {
  ModelLaunch l(R"(
.visible .entry k(.param .u64 dst)
{
  .reg .pred %p<2>;
  .reg .b32 %r<12>;
  .reg .b64 %rd<4>;
  .shared .align 4 .b8 sb[64];
  .shared .align 4 .b8 sh[64];
  ld.param.u64 %rd1, [dst];
  mov.u32 %r1, %tid.x;
  shl.b32 %r2, %r1, 2;
  mov.u32 %r3, sb;
  add.s32 %r4, %r3, %r2;
  mul.lo.s32 %r5, %r1, -1640531535;
  st.shared.u32 [%r4], %r5;
  mov.u32 %r6, sh;
  add.s32 %r7, %r6, %r2;
  xor.b32 %r8, %r5, 1515870810;
  st.shared.u32 [%r7], %r8;
  bar.sync 0;
  mov.u32 %r9, 0;
  mov.u32 %r10, 0;
$L:
  add.s32 %r11, %r3, %r10;
  ld.shared.u8 %r2, [%r11+3];
  add.s32 %r9, %r9, %r2;
  add.s32 %r11, %r6, %r10;
  ld.shared.s16 %r2, [%r11+2];
  add.s32 %r9, %r9, %r2;
  add.s32 %r10, %r10, 4;
  setp.lt.u32 %p1, %r10, 64;
  @%p1 bra $L;
  mul.wide.u32 %rd2, %r1, 4;
  add.s64 %rd3, %rd1, %rd2;
  st.global.u32 [%rd3], %r9;
  ret;
}
)");
  const uint32_t n = 16;
  uint64_t pd = l.buffer(std::vector<uint32_t>(n));
  Fault fault = l.run({1, 1, 1}, {n, 1, 1}, pointers({pd}));
  ASSERT_EQ(fault.error, 0) << fault.message;
  expect_model_shape(l.program());
  uint32_t want = 0;
  for (uint32_t j = 0; j < n; ++j) {
    const uint32_t word = j * 0x9e3779b1u;
    want += word >> 24;
    want += uint32_t(int32_t(int16_t((word ^ 0x5a5a5a5au) >> 16)));
  }
  EXPECT_EQ(l.words(pd, n), std::vector<uint32_t>(n, want));
  for (const Block& b : l.program().blocks)
    for (const Instr& in : b.instrs) {
      if (in.op == Op::SHL || in.op == Op::SHR || in.op == Op::SAR)
        EXPECT_TRUE(in.b.imm) << "a shift by a computed amount: " << to_string(in);
      if (in.op == Op::AND) EXPECT_FALSE(in.b.imm && (in.b.v == 2 || in.b.v == 3)) << to_string(in);
    }
}

// Local memory: each thread's bytes and halfwords land in its own words.
TEST(ModelLowering, LocalBytesAndHalfwords) {
  ModelLaunch l(R"(
.visible .entry k(.param .u64 dst)
{
  .local .align 4 .b8 buf[16];
  .reg .b32 %r<12>;
  .reg .b64 %rd<4>;
  ld.param.u64 %rd1, [dst];
  mov.u32 %r1, %tid.x;
  mov.u32 %r2, buf;
  and.b32 %r3, %r1, 7;
  add.s32 %r3, %r2, %r3;
  mul.lo.s32 %r4, %r1, 29;
  add.s32 %r4, %r4, 200;
  st.local.u8 [%r3], %r4;
  and.b32 %r5, %r1, 3;
  shl.b32 %r5, %r5, 1;
  add.s32 %r5, %r2, %r5;
  mul.lo.s32 %r6, %r1, 1021;
  st.local.u16 [%r5+8], %r6;
  ld.local.u32 %r7, [buf];
  ld.local.u32 %r8, [buf+4];
  ld.local.u32 %r9, [buf+8];
  ld.local.u32 %r10, [buf+12];
  ld.local.s8 %r11, [%r3];
  ld.local.s16 %r4, [%r5+8];
  mul.wide.u32 %rd2, %r1, 24;
  add.s64 %rd3, %rd1, %rd2;
  st.global.u32 [%rd3], %r7;
  st.global.u32 [%rd3+4], %r8;
  st.global.u32 [%rd3+8], %r9;
  st.global.u32 [%rd3+12], %r10;
  st.global.u32 [%rd3+16], %r11;
  st.global.u32 [%rd3+20], %r4;
  ret;
}
)");
  const uint32_t n = 16;
  uint64_t pd = l.buffer(std::vector<uint32_t>(6 * n));
  Fault fault = l.run({1, 1, 1}, {n, 1, 1}, pointers({pd}));
  ASSERT_EQ(fault.error, 0) << fault.message;
  expect_model_shape(l.program());
  std::vector<uint32_t> got = l.words(pd, 6 * n);
  for (uint32_t t = 0; t < n; ++t) {
    SCOPED_TRACE("thread " + std::to_string(t));
    uint8_t local[16] = {};
    uint8_t byte = uint8_t(t * 29 + 200);
    uint16_t half = uint16_t(t * 1021);
    local[t % 8] = byte;
    local[8 + 2 * (t % 4)] = uint8_t(half);
    local[8 + 2 * (t % 4) + 1] = uint8_t(half >> 8);
    for (int w = 0; w < 4; ++w) {
      uint32_t word;
      std::memcpy(&word, local + 4 * w, 4);
      EXPECT_EQ(got[6 * t + w], word) << "word " << w;
    }
    EXPECT_EQ(got[6 * t + 4], uint32_t(int32_t(int8_t(byte))));
    EXPECT_EQ(got[6 * t + 5], uint32_t(int32_t(int16_t(half))));
  }
}

TEST(ModelLowering, MisalignedHalfwordAccessesFault) {
  for (const char* access : {"ld.global.u16 %r1, [%rd1+1];", "st.global.u16 [%rd1+3], %r1;"}) {
    SCOPED_TRACE(access);
    ModelLaunch l(replace(R"(
.visible .entry k(.param .u64 p)
{
  .reg .b32 %r<4>;
  .reg .b64 %rd<4>;
  ld.param.u64 %rd1, [p];
  mov.u32 %r1, 7;
  ACCESS
  st.global.u32 [%rd1], %r1;
  ret;
}
)",
                          "ACCESS", access));
    uint64_t p = l.buffer(std::vector<uint32_t>(2));
    EXPECT_EQ(l.run({1, 1, 1}, {1, 1, 1}, pointers({p})).error, 716);  // cudaErrorMisalignedAddress
  }
}

// ---- high multiplies ------------------------------------------------------------------

TEST(ModelLowering, HighMultipliesOnEdgePairs) {
  ModelLaunch l(R"(
.visible .entry k(.param .u64 as, .param .u64 bs, .param .u64 out)
{
  .reg .b32 %r<8>;
  .reg .b64 %rd<12>;
  ld.param.u64 %rd1, [as];
  ld.param.u64 %rd2, [bs];
  ld.param.u64 %rd3, [out];
  mov.u32 %r1, %tid.x;
  mul.wide.u32 %rd4, %r1, 4;
  add.s64 %rd5, %rd1, %rd4;
  ld.global.u32 %r2, [%rd5];
  add.s64 %rd6, %rd2, %rd4;
  ld.global.u32 %r3, [%rd6];
  mul.hi.u32 %r4, %r2, %r3;
  mul.hi.s32 %r5, %r2, %r3;
  mul.wide.s32 %rd7, %r2, %r3;
  mul.wide.u32 %rd8, %r2, %r3;
  mul.wide.u32 %rd9, %r1, 24;
  add.s64 %rd10, %rd3, %rd9;
  st.global.u32 [%rd10], %r4;
  st.global.u32 [%rd10+4], %r5;
  st.global.u64 [%rd10+8], %rd7;
  st.global.u64 [%rd10+16], %rd8;
  ret;
}
)");
  const std::vector<uint32_t> edges = {0,          1,          2,          0x7fff,     0x8000,     0xffff,     0x10000,
                                       0x7fffffff, 0x80000000, 0x80000001, 0xfffffffe, 0xffffffff, 0x12345678, 0x9abcdef0};
  std::vector<uint32_t> a, b;
  for (uint32_t x : edges)
    for (uint32_t y : edges) {
      a.push_back(x);
      b.push_back(y);
    }
  const uint32_t n = uint32_t(a.size());
  uint64_t pa = l.buffer(a), pb = l.buffer(b), po = l.buffer(std::vector<uint32_t>(6 * n));
  Fault fault = l.run({1, 1, 1}, {n, 1, 1}, pointers({pa, pb, po}));
  ASSERT_EQ(fault.error, 0) << fault.message;
  expect_model_shape(l.program());
  // The four high halves are the circuit's mulhu (the signed ones with their
  // sign corrections; one, as the optimiser shares them), not 16-bit partial
  // products (four mul each).
  int mulhu = 0, mul = 0;
  for (const Block& blk : l.program().blocks)
    for (const Instr& in : blk.instrs) {
      mulhu += in.op == Op::MULHU;
      mul += in.op == Op::MUL;
    }
  EXPECT_GE(mulhu, 1);
  EXPECT_LE(mulhu, 4);
  EXPECT_LE(mul, 3);
  std::vector<uint32_t> got = l.words(po, 6 * n);
  for (uint32_t t = 0; t < n; ++t) {
    SCOPED_TRACE(std::to_string(a[t]) + " * " + std::to_string(b[t]));
    uint64_t u = uint64_t(a[t]) * b[t];
    uint64_t s = uint64_t(int64_t(int32_t(a[t])) * int32_t(b[t]));
    EXPECT_EQ(got[6 * t], uint32_t(u >> 32));
    EXPECT_EQ(got[6 * t + 1], uint32_t(s >> 32));
    EXPECT_EQ(got[6 * t + 2] | uint64_t(got[6 * t + 3]) << 32, s);
    EXPECT_EQ(got[6 * t + 4] | uint64_t(got[6 * t + 5]) << 32, u);
  }
}

// ---- f32 add, sub, mul and fma: FFMA on the model's machine ------------------------

// Every f32 add, sub, mul and fma form on the model's machine, whose one
// float op is ffma .rn: the count of ffma each lowers to (docs/isa.md 3.4 and
// 11.2: one for .rn, with its .ftz and .sat forms around it; mul and fma
// .rz/.rm/.rp the ffmas of directed_fma's path; add and sub .rz/.rm/.rp and
// the directed .ftz forms none, integer sequences), and the results on edge
// pairs against the reference.
TEST(ModelLowering, F32ArithmeticIsFfmaWhereTheModelsMachineCan) {
  struct Form {
    const char* instr;      // %r4 = f(%r2, %r3) or f(%r2, %r3, %r2)
    int ffma;               // the FFMAs it must lower to
  };
  const std::vector<Form> forms = {
      {"add.f32 %r4, %r2, %r3;", 1},       {"add.rn.f32 %r4, %r2, %r3;", 1},
      {"sub.f32 %r4, %r2, %r3;", 1},       {"sub.rn.f32 %r4, %r2, %r3;", 1},
      {"add.rz.f32 %r4, %r2, %r3;", 0},    {"add.rm.f32 %r4, %r2, %r3;", 0},
      {"add.rp.f32 %r4, %r2, %r3;", 0},    {"add.ftz.f32 %r4, %r2, %r3;", 1},
      {"add.sat.f32 %r4, %r2, %r3;", 1},   {"add.rn.ftz.sat.f32 %r4, %r2, %r3;", 1},
      {"add.rz.ftz.f32 %r4, %r2, %r3;", 0},
      {"sub.rz.f32 %r4, %r2, %r3;", 0},    {"sub.ftz.f32 %r4, %r2, %r3;", 1},
      {"mul.f32 %r4, %r2, %r3;", 1},       {"mul.rn.f32 %r4, %r2, %r3;", 1},
      {"mul.rz.f32 %r4, %r2, %r3;", 3},    {"mul.rm.f32 %r4, %r2, %r3;", 2},
      {"mul.rp.sat.f32 %r4, %r2, %r3;", 2}, {"mul.rz.ftz.f32 %r4, %r2, %r3;", 0},
      {"mul.ftz.f32 %r4, %r2, %r3;", 1},
      {"mul.sat.f32 %r4, %r2, %r3;", 1},   {"fma.rn.f32 %r4, %r2, %r3, %r2;", 1},
      {"mad.rn.f32 %r4, %r2, %r3, %r2;", 1}, {"fma.rz.f32 %r4, %r2, %r3, %r2;", 5},
      {"fma.rm.f32 %r4, %r2, %r3, %r2;", 3}, {"fma.rp.f32 %r4, %r2, %r3, %r2;", 3},
      {"fma.rz.ftz.f32 %r4, %r2, %r3, %r2;", 0}, {"fma.rm.sat.f32 %r4, %r2, %r3, %r2;", 3},
      {"fma.rn.ftz.f32 %r4, %r2, %r3, %r2;", 1}, {"fma.rn.sat.f32 %r4, %r2, %r3, %r2;", 1},
      {"fma.rn.ftz.sat.f32 %r4, %r2, %r3, %r2;", 1},
  };
  const std::vector<uint32_t> edges = {0x00000000, 0x80000000, 0x00000001, 0x807FFFFF, 0x00800000, 0x3F800000,
                                       0xBF800001, 0x33800000, 0x7F7FFFFF, 0xFF7FFFFF, 0x7F800000, 0xFF800000,
                                       0x7FC00000, 0xFFA12345};
  std::vector<uint32_t> a, b;
  for (uint32_t x : edges)
    for (uint32_t y : edges) a.push_back(x), b.push_back(y);
  const uint32_t n = uint32_t(a.size());
  for (const Form& form : forms) {
    SCOPED_TRACE(form.instr);
    ModelLaunch l(std::string(R"(
.visible .entry k(.param .u64 as, .param .u64 bs, .param .u64 out)
{
  .reg .b32 %r<8>;
  .reg .b64 %rd<12>;
  ld.param.u64 %rd1, [as];
  ld.param.u64 %rd2, [bs];
  ld.param.u64 %rd3, [out];
  mov.u32 %r1, %tid.x;
  mul.wide.u32 %rd4, %r1, 4;
  add.s64 %rd5, %rd1, %rd4;
  ld.global.u32 %r2, [%rd5];
  add.s64 %rd6, %rd2, %rd4;
  ld.global.u32 %r3, [%rd6];
  )") + form.instr + R"(
  add.s64 %rd7, %rd3, %rd4;
  st.global.u32 [%rd7], %r4;
  ret;
}
)");
    uint64_t pa = l.buffer(a), pb = l.buffer(b), po = l.buffer(std::vector<uint32_t>(n));
    Fault fault = l.run({1, 1, 1}, {n, 1, 1}, pointers({pa, pb, po}));
    ASSERT_EQ(fault.error, 0) << fault.message;
    expect_model_shape(l.program());
    EXPECT_FALSE(model_unsupported(l.program()).has_value());
    int ffma = 0, other = 0;
    for (const Block& blk : l.program().blocks)
      for (const Instr& in : blk.instrs) {
        if (in.op == Op::FFMA) {
          EXPECT_EQ(in.fmod.rnd, FRnd::Rn) << to_string(in);
          EXPECT_FALSE(in.fmod.ftz || in.fmod.sat) << to_string(in);
        }
        ffma += in.op == Op::FFMA;
        other += op_info(in.op).kind == OpKind::Float && in.op != Op::FFMA;
      }
    EXPECT_EQ(ffma, form.ffma);
    EXPECT_EQ(other, 0);
    const std::string op = form.instr;
    const bool sub = op.rfind("sub", 0) == 0, mul = op.rfind("mul", 0) == 0;
    const bool fused = op.rfind("fma", 0) == 0 || op.rfind("mad", 0) == 0;
    const bool ftz = op.find(".ftz") != std::string::npos, sat = op.find(".sat") != std::string::npos;
    const ptx::Rnd r = op.find(".rz") != std::string::npos   ? ptx::Rnd::Rz
                       : op.find(".rm") != std::string::npos ? ptx::Rnd::Rm
                       : op.find(".rp") != std::string::npos ? ptx::Rnd::Rp
                                                             : ptx::Rnd::Rn;
    const std::vector<uint32_t> got = l.words(po, n);
    for (uint32_t t = 0; t < n; ++t) {
      const uint32_t want = sub     ? ptx::fref::sub(a[t], b[t], r, ftz, sat)
                            : mul   ? ptx::fref::mul(a[t], b[t], r, ftz, sat)
                            : fused ? ptx::fref::fma(a[t], b[t], a[t], r, ftz, sat)
                                    : ptx::fref::add(a[t], b[t], r, ftz, sat);
      EXPECT_EQ(got[t], want) << std::hex << a[t] << " " << b[t];
    }
  }
}

// ---- the programs' shape and model_unsupported --------------------------------------

const std::string& kernels_ptx() {
  static const std::string text = [] {
    std::ifstream in(QGPU_MACHINE_KERNELS_PTX);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }();
  return text;
}

// Every kernel of the lowering tests, lowered for the model: the shape holds,
// and model_unsupported finds nothing (what the circuit lacks is expanded, the
// clock into a counter; warp operations end blocks in wbar, which the circuit
// runs).
TEST(ModelLowering, EveryTestKernelHasTheModelsShape) {
  // Beyond the model's ROM (lower_test.cpp checks the message).
  const std::set<std::string> too_big = {"_Z13float_atomicsPKfPKdPKjPfPdPjS5_S6_S7_"};
  ModuleImage img = load_module(kernels_ptx(), model_params());
  int lowered = 0, wbars = 0;
  for (auto& f : img.module.functions) {
    if (!f.is_entry || !f.has_body) continue;
    SCOPED_TRACE(f.name);
    Program prog;
    try {
      prog = lower(img.module, f.name, {{2, 1, 1}, {64, 1, 1}, 0, img.symbols}, model_params(), {.for_model = true});
    } catch (const LowerError& e) {
      EXPECT_TRUE(too_big.count(f.name)) << e.what();
      continue;
    }
    EXPECT_FALSE(too_big.count(f.name));
    ++lowered;
    expect_model_shape(prog);
    for (const Block& b : prog.blocks) {
      wbars += b.term.kind == Term::WBAR;
      for (const Instr& in : b.instrs) EXPECT_NE(in.op, Op::CLOCK);
    }
    EXPECT_EQ(model_unsupported(prog), std::nullopt);
  }
  EXPECT_GE(lowered, 15);
  EXPECT_GT(wbars, 0);
}

TEST(ModelLowering, NeedsAOneLaneMachine) {
  ModuleImage img = load_module(kernels_ptx(), default_params());
  EXPECT_THROW(lower(img.module, "_Z13shared_reducePKiPi", {{1, 1, 1}, {32, 1, 1}, 0, img.symbols}, default_params(),
                     {.for_model = true}),
               std::invalid_argument);
}

Program one_block(Instr in, Terminator term = {}) {
  Program p;
  p.kernel = "k";
  p.blocks.push_back({{in}, term});
  p.blocks.push_back({{}, {}});
  return p;
}
Instr instr(Op op, uint8_t bytes = 4) {
  Instr in;
  in.op = op;
  in.dst = 3;
  in.a = Operand::reg(1);
  in.b = Operand::reg(2);
  in.c = Operand::k(9);
  in.bytes = bytes;
  return in;
}

TEST(ModelUnsupported, NamesTheBlockTheInstructionAndWhy) {
  struct Case {
    Program prog;
    std::vector<std::string> words;
  };
  Program many;
  many.kernel = "big";
  many.blocks.assign(1025, Block{{}, {Term::JMP, 0, 0, 0, 0}});
  const std::vector<Case> cases = {
      {one_block(instr(Op::CLOCK)), {"block B0", "`clock r3`", "clock"}},
      {one_block(instr(Op::MULHS)), {"block B0", "`mulhs r3, r1, r2`", "signed high multipl"}},
      {one_block(instr(Op::ATOM)), {"block B0", "`atom.global.add r3, [r1], r2, 9`", "atomic"}},
      {one_block(instr(Op::LD, 1)), {"block B0", "`ld.global.u8 r3, [r1+r2]`", "32-bit"}},
      {one_block(instr(Op::ST, 2)), {"block B0", "`st.global.b16 [r1+r2], 9`", "32-bit"}},
      {one_block(instr(Op::ST), {Term::BR, 4, 1, 1, 0}), {"block B0", "st.global.b32 [r1+r2], 9", "br r4", "branch"}},
      {many, {"big", "1025 blocks", "1024"}},
  };
  for (const Case& c : cases) {
    auto why = model_unsupported(c.prog);
    ASSERT_TRUE(why.has_value()) << c.words[1];
    for (const std::string& w : c.words) EXPECT_NE(why->find(w), std::string::npos) << *why << " lacks " << w;
  }
  EXPECT_EQ(model_unsupported(one_block(instr(Op::ADD), {Term::BR, 3, 1, 1, 0})), std::nullopt);
  EXPECT_EQ(model_unsupported(one_block(instr(Op::MULHU))), std::nullopt);  // the circuit's high product
  EXPECT_EQ(model_unsupported(one_block(instr(Op::ST))), std::nullopt);
  EXPECT_EQ(model_unsupported(one_block(instr(Op::ST), {Term::WBAR, 0, 1, 0, 0})), std::nullopt);  // warp operations run
}

// ---- the interpreter backend on the model's machine ---------------------------------------

// Parameters of 1- and 2-byte types at every offset of a word, and a last
// byte parameter whose word extends past the parameter buffer (the backend
// pads the model's parameter memory to whole words).
TEST(ModelBackend, RunsTheModelsMachineWithNarrowParameters) {
  const std::string ptx = kHeader + R"(
.visible .entry k(.param .u64 dst, .param .u8 a0, .param .s8 a1, .param .u8 a2, .param .s8 a3,
                  .param .u16 h0, .param .s16 h1, .param .u8 last)
{
  .reg .b32 %r<8>;
  .reg .b64 %rd<2>;
  ld.param.u64 %rd1, [dst];
  ld.param.u8 %r1, [a0];
  ld.param.s8 %r2, [a1];
  ld.param.u8 %r3, [a2];
  ld.param.s8 %r4, [a3];
  ld.param.u16 %r5, [h0];
  ld.param.s16 %r6, [h1];
  ld.param.u8 %r7, [last];
  st.global.u32 [%rd1], %r1;
  st.global.u32 [%rd1+4], %r2;
  st.global.u32 [%rd1+8], %r3;
  st.global.u32 [%rd1+12], %r4;
  st.global.u32 [%rd1+16], %r5;
  st.global.u32 [%rd1+20], %r6;
  st.global.u32 [%rd1+24], %r7;
  ret;
}
)";
  ModuleImage img = load_module(ptx, model_params());
  uint64_t dst = img.alloc(28);
  launch::LaunchRequest req;
  req.ptx = ptx;
  req.kernel = "k";
  req.symbols = img.symbols;
  req.params = pointers({dst});
  for (uint8_t b : {0xf1, 0x92, 0x7f, 0x80, 0xfe, 0xff, 0x01, 0x80, 0xc3}) req.params.push_back(b);
  ASSERT_EQ(req.params.size(), 17u);
  auto backend = backends::make_interpreter_backend(backends::MachineKind::Model);
  EXPECT_EQ(backend->name(), "interpreter-model");
  launch::LaunchResult r = backend->launch(req, img.mem);
  ASSERT_EQ(r.error, 0) << r.message;
  EXPECT_GT(r.stats.steps, 0u);
  uint32_t got[7];
  std::memcpy(got, &img.mem.bytes[dst - img.mem.base], sizeof got);
  EXPECT_EQ(got[0], 0xf1u);
  EXPECT_EQ(got[1], 0xffffff92u);
  EXPECT_EQ(got[2], 0x7fu);
  EXPECT_EQ(got[3], 0xffffff80u);
  EXPECT_EQ(got[4], 0xfffeu);
  EXPECT_EQ(got[5], 0xffff8001u);
  EXPECT_EQ(got[6], 0xc3u);
}

}  // namespace
}  // namespace qgpu::machine
