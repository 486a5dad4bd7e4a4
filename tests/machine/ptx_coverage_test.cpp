// PTX's less common integer instructions, predefined identifiers, device
// malloc/free and indirect calls: each snippet runs on the PTX-level
// interpreter (the oracle) and, lowered, on machines of 4, 8 and 32 lanes and
// on the model's machine; every output word must agree.  Inputs are edge
// values and random ones; small spaces are covered exhaustively (every lop3
// table, every prmt selector).  Some tests also check the oracle's own
// results against a direct computation.
#include "build_paths.h"  // qgpu_paths() in CMakeLists.txt

#include <gtest/gtest.h>

#include <algorithm>
#include <climits>
#include <cstring>
#include <fstream>
#include <sstream>
#include <random>
#include <string>
#include <vector>

#include "model_host/machine/api.h"
#include "model_host/machine/image.h"
#include "model_host/machine/interpreter.h"
#include "model_host/lower/lower.h"
#include "model_host/ptx/ptx_interp.h"

namespace qgpu::machine {
namespace {

// Machines to lower for: lanes, or 0 for the model's machine and lowering.
const std::vector<uint32_t> kLanes = {4, 8, 32, 0};
constexpr uint32_t kHeapBytes = 64 * 1024;

Params machine_params(uint32_t lanes) {
  Params p = lanes ? default_params() : model_params();
  if (lanes) p.lanes = lanes;
  p.global_bytes = 1 << 20;
  // A warp's matrix area without native mma is 4,864 bytes (wmma tests).
  p.shared_bytes = std::max<uint32_t>(p.shared_bytes, 16 * 1024);
  return p;
}

// A kernel k(.param .u64 in, .param .u64 out): thread i (over the grid)
// reads its `in_words` words at in + 4 in_words i (base %rin) and writes its
// `out_words` words at out + 4 out_words i (base %rout); `body` is the rest.
std::string kernel_text(const std::string& body, uint32_t in_words, uint32_t out_words,
                        const std::string& prelude = "") {
  return ".version 8.5\n.target sm_75\n.address_size 64\n" + prelude +
         ".visible .entry k(.param .u64 pin, .param .u64 pout)\n{\n"
         "  .reg .pred %p<16>;\n  .reg .b32 %r<96>;\n  .reg .b64 %rd<96>;\n"
         "  .reg .b32 %ti<4>;\n  .reg .b64 %rin, %rout, %roff;\n"
         "  ld.param.u64 %rin, [pin];\n  ld.param.u64 %rout, [pout];\n"
         "  cvta.to.global.u64 %rin, %rin;\n  cvta.to.global.u64 %rout, %rout;\n"
         "  mov.u32 %ti1, %tid.x;\n  mov.u32 %ti2, %ctaid.x;\n  mov.u32 %ti3, %ntid.x;\n"
         "  mad.lo.u32 %ti1, %ti2, %ti3, %ti1;\n"
         "  mul.wide.u32 %roff, %ti1, " + std::to_string(4 * in_words) + ";\n"
         "  add.u64 %rin, %rin, %roff;\n"
         "  mul.wide.u32 %roff, %ti1, " + std::to_string(4 * out_words) + ";\n"
         "  add.u64 %rout, %rout, %roff;\n" + body + "  ret;\n}\n";
}

struct Outcome {
  int error = 0;
  std::string message;
  std::vector<uint32_t> out;
};

// Lays out in, out (and the heap) the same way for every run.
struct Placed {
  ModuleImage img;
  uint64_t in = 0, out = 0, heap = 0;
  std::vector<uint8_t> params;
};
Placed place(const std::string& ptx, const Params& p, const std::vector<uint32_t>& in, size_t out_words) {
  Placed r{load_module(ptx, p)};
  r.in = r.img.alloc(uint32_t(std::max<size_t>(4, in.size() * 4)));
  std::memcpy(&r.img.mem.bytes[r.in - r.img.mem.base], in.data(), in.size() * 4);
  r.out = r.img.alloc(uint32_t(out_words * 4));
  r.heap = r.img.alloc(kHeapBytes);
  r.params.resize(16);
  std::memcpy(&r.params[0], &r.in, 8);
  std::memcpy(&r.params[8], &r.out, 8);
  return r;
}
std::vector<uint32_t> output(const Placed& p, size_t words) {
  std::vector<uint32_t> v(words);
  std::memcpy(v.data(), &p.img.mem.bytes[p.out - p.img.mem.base], words * 4);
  return v;
}

Outcome run_reference(const std::string& ptx, launch::Dim3 grid, launch::Dim3 block, const std::vector<uint32_t>& in,
                      size_t out_words, const std::string& kernel = "k") {
  Placed p = place(ptx, machine_params(8), in, out_words);
  ptx::InterpOptions opts;
  opts.heap_base = p.heap;
  opts.heap_bytes = kHeapBytes;
  launch::LaunchResult r = ptx::run(p.img.module, kernel, grid, block, 0, p.params, p.img.symbols, p.img.mem, opts);
  return {r.error, r.message, output(p, out_words)};
}

Outcome run_on(const std::string& ptx, const Params& params, uint32_t lanes, launch::Dim3 grid, launch::Dim3 block,
              const std::vector<uint32_t>& in, size_t out_words, const std::string& kernel = "k") {
  Placed p = place(ptx, params, in, out_words);
  LaunchShape shape{grid, block, 0, p.img.symbols};
  shape.heap_base = p.heap;
  shape.heap_bytes = kHeapBytes;
  Program prog = lower(p.img.module, kernel, shape, params, {.for_model = lanes == 0});
  if (lanes == 0) {  // the model's circuit runs every operation of it
    auto why = model_unsupported(prog);
    EXPECT_FALSE(why.has_value()) << *why;
  }
  Interpreter interp(prog, params, prog.ctas, prog.threads, p.params, p.img.mem);
  interp.set_cta_threads(1);  // CTAs in launch order, as the PTX interpreter runs them (atomics' old values)
  interp.run(50'000'000);
  return {interp.fault().error, interp.fault().message, output(p, out_words)};
}
Outcome run_machine(const std::string& ptx, uint32_t lanes, launch::Dim3 grid, launch::Dim3 block,
                    const std::vector<uint32_t>& in, size_t out_words, const std::string& kernel = "k") {
  return run_on(ptx, machine_params(lanes), lanes, grid, block, in, out_words, kernel);
}

std::string machine_name(uint32_t lanes) { return lanes ? std::to_string(lanes) + " lanes" : "the model's machine"; }

// Runs `ptx` on the oracle and every machine; returns the oracle's output.
std::vector<uint32_t> cross_check(const std::string& ptx, uint32_t threads, const std::vector<uint32_t>& in,
                                  uint32_t out_words, uint32_t block = 64, const std::string& kernel = "k") {
  const launch::Dim3 grid{(threads + block - 1) / block, 1, 1}, blk{std::min(threads, block), 1, 1};
  const size_t n = size_t(out_words) * grid.x * blk.x;
  Outcome ref = run_reference(ptx, grid, blk, in, n, kernel);
  EXPECT_EQ(ref.error, 0) << ref.message;
  for (uint32_t lanes : kLanes) {
    SCOPED_TRACE(machine_name(lanes));
    Outcome got = run_machine(ptx, lanes, grid, blk, in, n, kernel);
    EXPECT_EQ(got.error, 0) << got.message;
    if (got.error) continue;
    for (size_t i = 0; i < n; ++i)
      if (got.out[i] != ref.out[i]) {
        ADD_FAILURE() << "word " << i << " (thread " << i / out_words << ", output " << i % out_words << "): got 0x"
                      << std::hex << got.out[i] << ", the PTX interpreter 0x" << ref.out[i];
        break;
      }
  }
  return ref.out;
}

// Edge values, then random values of random bit lengths.
std::vector<uint32_t> inputs(size_t n, uint64_t seed) {
  static const uint32_t edges[] = {0u,          1u,          2u,          0x7fffffffu, 0x80000000u, 0x80000001u,
                                   0xffffffffu, 0xfffffffeu, 0x00ffffffu, 0x00800000u, 0xff800000u, 0x01000000u,
                                   0x0000ffffu, 0x00010000u, 0xf0f0f0f0u, 0xccccccccu, 0xaaaaaaaau, 63u, 64u, 255u};
  std::mt19937_64 rng(seed);
  std::vector<uint32_t> v(n);
  for (size_t i = 0; i < n; ++i) {
    if (i < std::size(edges) * 3 && rng() % 2) {
      v[i] = edges[rng() % std::size(edges)];
    } else {
      const int bits = int(rng() % 33);
      v[i] = bits == 0 ? 0 : uint32_t(rng()) >> (32 - bits);
      if (rng() % 4 == 0) v[i] = ~v[i];
    }
  }
  return v;
}

std::string ld_in(const std::string& reg, uint32_t word, const std::string& type = "b32") {
  return "  ld.global." + type + " " + reg + ", [%rin+" + std::to_string(4 * word) + "];\n";
}
std::string st_out(const std::string& reg, uint32_t word, const std::string& type = "b32") {
  return "  st.global." + type + " [%rout+" + std::to_string(4 * word) + "], " + reg + ";\n";
}

// ---- predefined identifiers ----------------------------------------------------

TEST(PtxCoverage, PredefinedIdentifiers) {
  std::string body =
      "  mov.u32 %r1, WARP_SZ;\n" + st_out("%r1", 0) +
      "  add.u32 %r2, %ti1, WARP_SZ;\n" + st_out("%r2", 1) +
      "  mov.u32 %r3, %envreg3;\n" + st_out("%r3", 2) +
      "  mov.u32 %r4, %pm2;\n" + st_out("%r4", 3) +
      "  mov.u64 %rd4, %pm5_64;\n" + st_out("%rd4", 4, "b64") +
      "  mov.u32 %r5, %clusterid.x;\n" + st_out("%r5", 6) +
      "  mov.u32 %r6, %nclusterid.x;\n" + st_out("%r6", 7) +
      "  mov.u32 %r7, %cluster_ctaid.x;\n" + st_out("%r7", 8) +
      "  mov.u32 %r8, %cluster_nctaid.y;\n" + st_out("%r8", 9) +
      "  mov.u32 %r9, %cluster_ctarank;\n" + st_out("%r9", 10) +
      "  mov.u32 %r10, %cluster_nctarank;\n" + st_out("%r10", 11) +
      "  mov.u32 %r11, %is_explicit_cluster;\n" + st_out("%r11", 12) +
      "  mov.u32 %r12, %reserved_smem_offset_begin;\n" + st_out("%r12", 13) +
      "  mov.u32 %r13, %reserved_smem_offset_1;\n" + st_out("%r13", 14) +
      "  mov.u64 %rd5, %current_graph_exec;\n" + st_out("%rd5", 16, "b64");
  std::vector<uint32_t> out = cross_check(kernel_text(body, 1, 18), 128, {}, 18);
  for (uint32_t t = 0; t < 128; ++t) {
    EXPECT_EQ(out[18 * t + 0], 32u);
    EXPECT_EQ(out[18 * t + 1], t + 32);
    EXPECT_EQ(out[18 * t + 6], t / 64);  // this CTA is its own cluster
    EXPECT_EQ(out[18 * t + 7], 2u);
    EXPECT_EQ(out[18 * t + 8], 0u);
    EXPECT_EQ(out[18 * t + 9], 1u);
    EXPECT_EQ(out[18 * t + 11], 1u);
  }
}

// %clock, %clock64 and %globaltimer never go back, and advance over work: on
// every machine, the model's (a per-thread count of instructions) included.
TEST(PtxCoverage, ClocksAreMonotonic) {
  std::string body = "  mov.u64 %rd1, %clock64;\n  mov.u32 %r1, %clock;\n  mov.u64 %rd2, %globaltimer;\n" +
                     ld_in("%r2", 0) +
                     "  mov.u32 %r3, 0;\nLOOP:\n  add.u32 %r3, %r3, 1;\n  setp.lt.u32 %p1, %r3, 20;\n"
                     "  @%p1 bra LOOP;\n"
                     "  mov.u64 %rd3, %clock64;\n  mov.u32 %r4, %clock;\n  mov.u64 %rd4, %globaltimer;\n"
                     "  setp.gt.u64 %p2, %rd3, %rd1;\n  selp.u32 %r5, 1, 0, %p2;\n" + st_out("%r5", 0) +
                     "  setp.gt.u32 %p3, %r4, %r1;\n  selp.u32 %r6, 1, 0, %p3;\n" + st_out("%r6", 1) +
                     "  setp.gt.u64 %p4, %rd4, %rd2;\n  selp.u32 %r7, 1, 0, %p4;\n" + st_out("%r7", 2);
  const std::string ptx = kernel_text(body, 1, 3);
  for (uint32_t lanes : {0u, 4u, 8u, 32u}) {
    Outcome r = run_machine(ptx, lanes, {2, 1, 1}, {64, 1, 1}, std::vector<uint32_t>(128), 3 * 128);
    ASSERT_EQ(r.error, 0) << r.message;
    for (uint32_t v : r.out) EXPECT_EQ(v, 1u) << machine_name(lanes);
  }
  Outcome ref = run_reference(ptx, {2, 1, 1}, {64, 1, 1}, std::vector<uint32_t>(128), 3 * 128);
  for (uint32_t v : ref.out) EXPECT_EQ(v, 1u) << "the PTX interpreter";
}

// ---- lop3: all 256 tables ------------------------------------------------------

TEST(PtxCoverage, Lop3EveryTable) {
  const uint32_t threads = 64;
  std::vector<uint32_t> in = inputs(3 * threads, 3);
  in[0] = 0xf0f0f0f0u, in[1] = 0xccccccccu, in[2] = 0xaaaaaaaau;  // the PTX ISA's ta, tb, tc
  for (uint32_t first = 0; first < 256; first += 32) {
    SCOPED_TRACE("tables from " + std::to_string(first));
    std::string body = ld_in("%r1", 0) + ld_in("%r2", 1) + ld_in("%r3", 2);
    for (uint32_t i = 0; i < 32; ++i)
      body += "  lop3.b32 %r" + std::to_string(10 + i) + ", %r1, %r2, %r3, " + std::to_string(first + i) + ";\n" +
              st_out("%r" + std::to_string(10 + i), i);
    std::vector<uint32_t> out = cross_check(kernel_text(body, 3, 32), threads, in, 32);
    // On ta, tb, tc the result is the table itself, in every byte.
    for (uint32_t i = 0; i < 32; ++i) EXPECT_EQ(out[i], (first + i) * 0x01010101u) << "table " << first + i;
    // Bit by bit against the table (immediate operands fold differently: this
    // checks the oracle on random inputs too).
    for (uint32_t t = 1; t < threads; ++t)
      for (uint32_t i = 0; i < 32; ++i) {
        uint32_t want = 0, lut = first + i;
        for (int b = 0; b < 32; ++b) {
          uint32_t idx = ((in[3 * t] >> b) & 1) << 2 | ((in[3 * t + 1] >> b) & 1) << 1 | ((in[3 * t + 2] >> b) & 1);
          want |= ((lut >> idx) & 1) << b;
        }
        ASSERT_EQ(out[32 * t + i], want) << "table " << lut << " thread " << t;
      }
  }
}

// ---- carry chains ----------------------------------------------------------------

// 128-bit addition and subtraction through add.cc/addc.cc/addc and
// sub.cc/subc.cc/subc, 64-bit ones through the .u64 forms, and a 64 x 64 ->
// 128-bit product through mad.lo.cc/madc.hi.cc/madc: checked against
// __int128 arithmetic as well as against the PTX interpreter.
TEST(PtxCoverage, CarryChains) {
  const uint32_t threads = 256;
  std::vector<uint32_t> in = inputs(8 * threads, 11);
  for (uint32_t t = 0; t < 8; ++t)  // carries through every word
    for (uint32_t w = 0; w < 8; ++w) in[8 * t + w] = (t & 1) ? 0xffffffffu : (w < 4 ? 0xffffffffu : (t >> 1));
  std::string body;
  for (uint32_t w = 0; w < 8; ++w) body += ld_in("%r" + std::to_string(w), w);
  body +=
      // 128-bit add
      "  add.cc.u32 %r10, %r0, %r4;\n  addc.cc.u32 %r11, %r1, %r5;\n  addc.cc.u32 %r12, %r2, %r6;\n"
      "  addc.u32 %r13, %r3, %r7;\n"
      // 128-bit sub
      "  sub.cc.u32 %r14, %r0, %r4;\n  subc.cc.u32 %r15, %r1, %r5;\n  subc.cc.u32 %r16, %r2, %r6;\n"
      "  subc.u32 %r17, %r3, %r7;\n"
      // carry out of the top word as a value
      "  add.cc.u32 %r18, %r0, %r4;\n  addc.cc.u32 %r19, %r1, %r5;\n  addc.cc.u32 %r20, %r2, %r6;\n"
      "  addc.cc.u32 %r21, %r3, %r7;\n  addc.u32 %r22, 0, 0;\n"
      "  sub.cc.u32 %r23, %r0, %r4;\n  subc.cc.u32 %r24, %r1, %r5;\n  subc.cc.u32 %r25, %r2, %r6;\n"
      "  subc.cc.u32 %r26, %r3, %r7;\n  subc.u32 %r27, 0, 0;\n"
      // 64-bit forms
      "  mov.b64 %rd1, {%r0, %r1};\n  mov.b64 %rd2, {%r2, %r3};\n  mov.b64 %rd3, {%r4, %r5};\n"
      "  mov.b64 %rd4, {%r6, %r7};\n"
      "  add.cc.u64 %rd5, %rd1, %rd3;\n  addc.u64 %rd6, %rd2, %rd4;\n"
      "  sub.cc.s64 %rd7, %rd1, %rd3;\n  subc.s64 %rd8, %rd2, %rd4;\n"
      // (r1:r0) * (r5:r4), 128 bits, from 32-bit products
      "  mul.lo.u32 %r30, %r0, %r4;\n"
      "  mul.hi.u32 %r31, %r0, %r4;\n"
      "  mad.lo.cc.u32 %r31, %r1, %r4, %r31;\n  madc.hi.u32 %r32, %r1, %r4, 0;\n"
      "  mad.lo.cc.u32 %r31, %r0, %r5, %r31;\n  madc.hi.cc.u32 %r32, %r0, %r5, %r32;\n  addc.u32 %r33, 0, 0;\n"
      "  mad.lo.cc.u32 %r32, %r1, %r5, %r32;\n  madc.hi.u32 %r33, %r1, %r5, %r33;\n"
      // guarded carry: the guard off keeps the flag
      "  setp.ne.u32 %p1, %r0, %r0;\n  add.cc.u32 %r40, 0xffffffff, 1;\n  @%p1 add.cc.u32 %r41, 0, 0;\n"
      "  addc.u32 %r42, 0, 0;\n" +
      st_out("%r10", 0) + st_out("%r11", 1) + st_out("%r12", 2) + st_out("%r13", 3) + st_out("%r14", 4) +
      st_out("%r15", 5) + st_out("%r16", 6) + st_out("%r17", 7) + st_out("%r22", 8) + st_out("%r27", 9) +
      st_out("%rd5", 10, "b64") + st_out("%rd6", 12, "b64") + st_out("%rd7", 14, "b64") + st_out("%rd8", 16, "b64") +
      st_out("%r30", 18) + st_out("%r31", 19) + st_out("%r32", 20) + st_out("%r33", 21) + st_out("%r42", 22);
  std::vector<uint32_t> out = cross_check(kernel_text(body, 8, 24), threads, in, 24);
  using u128 = unsigned __int128;
  auto word128 = [](const uint32_t* w) {
    return u128(w[0]) | u128(w[1]) << 32 | u128(w[2]) << 64 | u128(w[3]) << 96;
  };
  for (uint32_t t = 0; t < threads; ++t) {
    const uint32_t* x = &in[8 * t];
    const uint32_t* o = &out[24 * t];
    u128 a = word128(x), b = word128(x + 4);
    EXPECT_EQ(word128(o), a + b) << t;
    EXPECT_EQ(word128(o + 4), a - b) << t;
    EXPECT_EQ(o[8], uint32_t(a + b < a)) << t;
    EXPECT_EQ(o[9], a < b ? 0xffffffffu : 0u) << t;
    EXPECT_EQ(word128(o + 10), a + b) << t;
    EXPECT_EQ(word128(o + 14), a - b) << t;
    const u128 p = u128(uint64_t(a)) * u128(uint64_t(b));
    EXPECT_EQ(word128(o + 18), p) << t;
    EXPECT_EQ(o[22], 1u) << t;
  }
}

// add.sat.s32 / sub.sat.s32.
TEST(PtxCoverage, SaturatingAddAndSub) {
  const uint32_t threads = 256;
  std::vector<uint32_t> in = inputs(2 * threads, 5);
  std::string body = ld_in("%r1", 0) + ld_in("%r2", 1) + "  add.sat.s32 %r3, %r1, %r2;\n  sub.sat.s32 %r4, %r1, %r2;\n" +
                     st_out("%r3", 0) + st_out("%r4", 1);
  std::vector<uint32_t> out = cross_check(kernel_text(body, 2, 2), threads, in, 2);
  for (uint32_t t = 0; t < threads; ++t) {
    int64_t a = int32_t(in[2 * t]), b = int32_t(in[2 * t + 1]);
    auto clamp = [](int64_t v) { return uint32_t(int32_t(std::clamp<int64_t>(v, INT32_MIN, INT32_MAX))); };
    EXPECT_EQ(out[2 * t], clamp(a + b));
    EXPECT_EQ(out[2 * t + 1], clamp(a - b));
  }
}

// ---- mul24, mad24, sad, dp4a ---------------------------------------------------

TEST(PtxCoverage, Mul24Mad24SadDp4a) {
  const uint32_t threads = 256;
  std::vector<uint32_t> in = inputs(8 * threads, 17);
  std::string body = ld_in("%r1", 0) + ld_in("%r2", 1) + ld_in("%r3", 2) + ld_in("%rd1", 4, "b64") +
                     ld_in("%rd2", 6, "b64") +
                     "  mul24.lo.u32 %r10, %r1, %r2;\n  mul24.hi.u32 %r11, %r1, %r2;\n"
                     "  mul24.lo.s32 %r12, %r1, %r2;\n  mul24.hi.s32 %r13, %r1, %r2;\n"
                     "  mad24.lo.u32 %r14, %r1, %r2, %r3;\n  mad24.hi.u32 %r15, %r1, %r2, %r3;\n"
                     "  mad24.lo.s32 %r16, %r1, %r2, %r3;\n  mad24.hi.s32 %r17, %r1, %r2, %r3;\n"
                     "  sad.u32 %r18, %r1, %r2, %r3;\n  sad.s32 %r19, %r1, %r2, %r3;\n"
                     "  sad.u64 %rd10, %rd1, %rd2, %rd1;\n  sad.s64 %rd11, %rd1, %rd2, %rd2;\n"
                     "  sad.u16 %rs1, %rs2, %rs3, %rs2;\n"
                     "  dp4a.u32.u32 %r20, %r1, %r2, %r3;\n  dp4a.s32.s32 %r21, %r1, %r2, %r3;\n"
                     "  dp4a.s32.u32 %r22, %r1, %r2, %r3;\n  dp4a.u32.s32 %r23, %r1, %r2, %r3;\n";
  // sad.u16 on the low halves
  body = "  .reg .b16 %rs<4>;\n" + body;
  body.insert(body.find("  sad.u16"), "  cvt.u16.u32 %rs2, %r1;\n  cvt.u16.u32 %rs3, %r2;\n");
  body += "  cvt.u32.u16 %r24, %rs1;\n";
  for (uint32_t i = 0; i < 15; ++i) body += st_out("%r" + std::to_string(10 + i), i);
  body += st_out("%rd10", 16, "b64") + st_out("%rd11", 18, "b64");
  std::vector<uint32_t> out = cross_check(kernel_text(body, 8, 20), threads, in, 20);
  for (uint32_t t = 0; t < threads; ++t) {
    const uint32_t a = in[8 * t], b = in[8 * t + 1], c = in[8 * t + 2];
    const uint64_t ua = a & 0xffffff, ub = b & 0xffffff;
    const int64_t sa = int32_t(a << 8) >> 8, sb = int32_t(b << 8) >> 8;
    EXPECT_EQ(out[20 * t + 0], uint32_t(ua * ub));
    EXPECT_EQ(out[20 * t + 1], uint32_t((ua * ub) >> 16));
    EXPECT_EQ(out[20 * t + 2], uint32_t(sa * sb));
    EXPECT_EQ(out[20 * t + 3], uint32_t(uint64_t(sa * sb) >> 16));
    EXPECT_EQ(out[20 * t + 8], c + (a > b ? a - b : b - a));
  }
}

// Under a guard (true in some threads, false in others) each form writes
// its destination, or the carry flag, only where the guard holds.
TEST(PtxCoverage, GuardedForms) {
  const uint32_t threads = 128;
  std::vector<uint32_t> in = inputs(4 * threads, 47);
  std::string body = ld_in("%r1", 0) + ld_in("%r2", 1) + ld_in("%r3", 2) + ld_in("%r4", 3) +
                     "  and.b32 %r5, %r4, 1;\n  setp.ne.u32 %p1, %r5, 0;\n"
                     "  mov.u32 %r10, 11;\n  mov.u32 %r11, 12;\n  mov.u32 %r12, 13;\n  mov.u32 %r13, 14;\n"
                     "  mov.u32 %r14, 15;\n  mov.u32 %r15, 16;\n  mov.u64 %rd10, 17;\n  mov.u32 %r16, 18;\n"
                     "  @%p1 lop3.b32 %r10, %r1, %r2, %r3, 0xe8;\n"
                     "  @!%p1 mul24.hi.s32 %r11, %r1, %r2;\n"
                     "  @%p1 sad.s32 %r12, %r1, %r2, %r3;\n"
                     "  @!%p1 prmt.b32.ecl %r13, %r1, %r2, %r3;\n"
                     "  @%p1 add.sat.s32 %r14, %r1, %r2;\n"
                     "  mov.b64 %rd1, {%r1, %r2};\n  @!%p1 bfe.s64 %rd10, %rd1, %r3, %r4;\n"
                     "  add.cc.u32 %r20, %r1, %r2;\n  @%p1 add.cc.u32 %r21, 0, 0;\n  addc.u32 %r15, 0, 0;\n"
                     "  @!%p1 redux.sync.add.u32 %r16, %r1, -1;\n" +
                     st_out("%r10", 0) + st_out("%r11", 1) + st_out("%r12", 2) + st_out("%r13", 3) + st_out("%r14", 4) +
                     st_out("%r15", 5) + st_out("%rd10", 6, "b64");
  // redux under a guard that differs by lane would need a member mask per
  // branch: only its guard-false threads' value is checked (word 8).
  body += st_out("%r16", 8);
  std::vector<uint32_t> out = cross_check(kernel_text(body, 4, 10), threads, in, 10);
  for (uint32_t t = 0; t < threads; ++t) {
    const bool p = in[4 * t + 3] & 1;
    const uint32_t a = in[4 * t], b = in[4 * t + 1];
    if (!p) {
      EXPECT_EQ(out[10 * t + 0], 11u);
      EXPECT_EQ(out[10 * t + 2], 13u);
      EXPECT_EQ(out[10 * t + 4], 15u);
      EXPECT_EQ(out[10 * t + 5], uint32_t(uint64_t(a) + b > 0xffffffffu)) << t;
    } else {
      EXPECT_EQ(out[10 * t + 0], (a & b) | (a & in[4 * t + 2]) | (b & in[4 * t + 2])) << t;  // 0xe8: majority
      EXPECT_EQ(out[10 * t + 1], 12u);
      EXPECT_EQ(out[10 * t + 3], 14u);
      EXPECT_EQ(out[10 * t + 5], 0u) << t;
    }
  }
}

// ---- bit fields and permutations ---------------------------------------------------

TEST(PtxCoverage, BitFields64) {
  const uint32_t threads = 256;
  std::vector<uint32_t> in = inputs(6 * threads, 23);
  std::mt19937 rng(7);
  for (uint32_t t = 0; t < threads; ++t) {  // positions and lengths: mostly in range, some past 64 and 255
    in[6 * t + 4] = rng() % 4 == 0 ? rng() : rng() % 72;
    in[6 * t + 5] = rng() % 4 == 0 ? rng() : rng() % 72;
  }
  std::string body = ld_in("%rd1", 0, "b64") + ld_in("%rd2", 2, "b64") + ld_in("%r1", 4) + ld_in("%r2", 5) +
                     "  bfe.u64 %rd3, %rd1, %r1, %r2;\n  bfe.s64 %rd4, %rd1, %r1, %r2;\n"
                     "  bfi.b64 %rd5, %rd1, %rd2, %r1, %r2;\n"
                     "  bfind.u64 %r3, %rd1;\n  bfind.s64 %r4, %rd1;\n"
                     "  bfind.shiftamt.u64 %r5, %rd1;\n  bfind.shiftamt.s64 %r6, %rd1;\n"
                     "  bfe.u64 %rd6, %rd1, 60, 8;\n  bfe.s64 %rd7, %rd1, 3, 61;\n"
                     "  bfi.b64 %rd8, %rd1, %rd2, 40, 30;\n"
                     "  bmsk.clamp.b32 %r7, %r1, %r2;\n  bmsk.wrap.b32 %r8, %r1, %r2;\n"
                     "  szext.clamp.s32 %r9, %r1, %r2;\n  szext.wrap.u32 %r10, %r1, %r2;\n"
                     "  cvt.u32.u64 %r11, %rd1;\n  szext.clamp.s32 %r12, %r11, %r1;\n"
                     "  szext.wrap.s32 %r13, %r11, %r2;\n  szext.clamp.u32 %r14, %r11, %r1;\n" +
                     st_out("%rd3", 0, "b64") + st_out("%rd4", 2, "b64") + st_out("%rd5", 4, "b64") + st_out("%r3", 6) +
                     st_out("%r4", 7) + st_out("%r5", 8) + st_out("%r6", 9) + st_out("%rd6", 10, "b64") +
                     st_out("%rd7", 12, "b64") + st_out("%rd8", 14, "b64") + st_out("%r7", 16) + st_out("%r8", 17) +
                     st_out("%r9", 18) + st_out("%r10", 19) + st_out("%r12", 20) + st_out("%r13", 21) +
                     st_out("%r14", 22);
  std::vector<uint32_t> out = cross_check(kernel_text(body, 6, 24), threads, in, 24);
  for (uint32_t t = 0; t < threads; ++t) {
    uint64_t a = uint64_t(in[6 * t]) | uint64_t(in[6 * t + 1]) << 32;
    uint32_t pos = in[6 * t + 4] & 0xff, len = in[6 * t + 5] & 0xff;
    uint64_t want = 0;
    for (uint32_t i = 0; i < len && pos + i < 64; ++i) want |= ((a >> (pos + i)) & 1) << i;
    EXPECT_EQ(out[24 * t] | uint64_t(out[24 * t + 1]) << 32, want) << t;
    uint32_t top = a ? 63 - __builtin_clzll(a) : 0xffffffffu;
    EXPECT_EQ(out[24 * t + 6], top) << t;
  }
}

// Every position and length from 0 to 66 (past the top bit and the
// register), for 64-bit bfe (both signs) and bfi, on two values whose top
// bits differ: 4489 threads.
TEST(PtxCoverage, BitFields64EveryPositionAndLength) {
  const uint32_t span = 67, threads = span * span;
  std::vector<uint32_t> in(4 * threads);
  for (uint32_t t = 0; t < threads; ++t) {
    in[4 * t] = t / span, in[4 * t + 1] = t % span;
    in[4 * t + 2] = (t & 1) ? 0x9e3779b9u : 0x7f4a7c15u, in[4 * t + 3] = (t & 2) ? 0xf39cc060u : 0x1b873593u;
  }
  std::string body = ld_in("%r1", 0) + ld_in("%r2", 1) + ld_in("%rd1", 2, "b64") +
                     "  not.b64 %rd2, %rd1;\n"
                     "  bfe.u64 %rd3, %rd1, %r1, %r2;\n  bfe.s64 %rd4, %rd1, %r1, %r2;\n"
                     "  bfi.b64 %rd5, %rd1, %rd2, %r1, %r2;\n" +
                     st_out("%rd3", 0, "b64") + st_out("%rd4", 2, "b64") + st_out("%rd5", 4, "b64");
  std::vector<uint32_t> out = cross_check(kernel_text(body, 4, 6), threads, in, 6, 256);
  for (uint32_t t = 0; t < threads; ++t) {
    const uint32_t pos = t / span, len = t % span;
    const uint64_t a = uint64_t(in[4 * t + 3]) << 32 | in[4 * t + 2];
    uint64_t u = 0, ins = ~a;
    for (uint32_t i = 0; i < len && pos + i < 64; ++i) {
      u |= ((a >> (pos + i)) & 1) << i;
      ins = (ins & ~(uint64_t(1) << (pos + i))) | (((a >> i) & 1) << (pos + i));
    }
    uint64_t sgn = u;
    if (len > 0) {
      const uint64_t bit = (a >> std::min(pos + len - 1, 63u)) & 1;
      for (uint32_t i = std::min(len, pos < 64 ? 64 - pos : 0u); i < 64; ++i) sgn |= bit << i;
    }
    auto at = [&](int w) { return uint64_t(out[6 * t + w + 1]) << 32 | out[6 * t + w]; };
    ASSERT_EQ(at(0), u) << "bfe.u64 pos " << pos << " len " << len;
    ASSERT_EQ(at(2), sgn) << "bfe.s64 pos " << pos << " len " << len;
    ASSERT_EQ(at(4), ins) << "bfi.b64 pos " << pos << " len " << len;
  }
}

TEST(PtxCoverage, PrmtEveryMode) {
  const uint32_t threads = 256;
  std::vector<uint32_t> in = inputs(3 * threads, 29);
  for (uint32_t t = 0; t < 16; ++t) in[3 * t + 2] = t;  // every selector, then random ones
  std::string body = ld_in("%r1", 0) + ld_in("%r2", 1) + ld_in("%r3", 2);
  const char* modes[] = {"", ".f4e", ".b4e", ".rc8", ".ecl", ".ecr", ".rc16"};
  uint32_t w = 0;
  for (const char* m : modes) {
    body += "  prmt.b32" + std::string(m) + " %r10, %r1, %r2, %r3;\n" + st_out("%r10", w++);
    if (*m)
      for (uint32_t s = 0; s < 4; ++s)
        body += "  prmt.b32" + std::string(m) + " %r11, %r1, %r2, " + std::to_string(s) + ";\n" + st_out("%r11", w++);
  }
  for (uint32_t s : {0x3210u, 0x7654u, 0x0123u, 0x8888u, 0xba98u, 0x4c1fu})
    body += "  prmt.b32 %r12, %r1, %r2, " + std::to_string(s) + ";\n" + st_out("%r12", w++);
  std::vector<uint32_t> out = cross_check(kernel_text(body, 3, w), threads, in, w);
  // The default mode, directly: each nibble picks a byte of {b, a}, bit 3 its sign.
  for (uint32_t t = 0; t < threads; ++t) {
    const uint64_t bytes = uint64_t(in[3 * t + 1]) << 32 | in[3 * t];
    uint32_t want = 0;
    for (int i = 0; i < 4; ++i) {
      uint32_t nib = (in[3 * t + 2] >> (4 * i)) & 0xf, v = uint32_t(bytes >> (8 * (nib & 7))) & 0xff;
      if (nib & 8) v = (v & 0x80) ? 0xff : 0;
      want |= v << (8 * i);
    }
    EXPECT_EQ(out[w * t], want) << t;
  }
}

// ---- warp collectives ---------------------------------------------------------------

// redux.sync of every operation and signedness, over the whole warp and over
// the even lanes only (in a branch the odd lanes skip).
TEST(PtxCoverage, ReduxEveryOperation) {
  const uint32_t threads = 128;
  std::vector<uint32_t> in = inputs(threads, 31);
  const char* ops[] = {"add.u32", "add.s32", "min.u32", "min.s32", "max.u32", "max.s32", "and.b32", "or.b32", "xor.b32"};
  for (const char* o : ops)
    for (bool even : {false, true}) {
      SCOPED_TRACE(std::string(o) + (even ? " over the even lanes" : ""));
      std::string body = ld_in("%r1", 0);
      if (even) body += "  and.b32 %r2, %ti1, 1;\n  setp.ne.u32 %p1, %r2, 0;\n  @%p1 bra SKIP;\n";
      body += "  redux.sync." + std::string(o) + " %r10, %r1, " + (even ? "0x55555555" : "-1") + ";\n" + st_out("%r10", 0);
      if (even) body += "SKIP:\n";
      std::vector<uint32_t> out = cross_check(kernel_text(body, 1, 1), threads, in, 1);
      if (std::string(o) != "add.u32" || even) continue;
      for (uint32_t warp = 0; warp < threads / 32; ++warp) {
        uint32_t sum = 0;
        for (uint32_t l = 0; l < 32; ++l) sum += in[32 * warp + l];
        for (uint32_t l = 0; l < 32; ++l) EXPECT_EQ(out[32 * warp + l], sum);
      }
    }
}

// A shuffle whose source lane does not take part (it branched around the
// shuffle, or exited) reads 0, as NVIDIA's GPUs give (PTX leaves the value
// unpredictable): the final warp of a block reduction that lets only its
// first k lanes run a shfl.down tree (cuda-samples' reduce7) relies on it.
// A full-warp shuffle runs first, so every lane has had a value in flight.
TEST(PtxCoverage, ShuffleFromLanesNotTakingPartReadsZero) {
  const uint32_t threads = 128;
  std::vector<uint32_t> in = inputs(threads, 41);
  for (uint32_t k : {1u, 3u, 8u, 17u, 32u})
    for (bool exit : {false, true}) {
      SCOPED_TRACE("first " + std::to_string(k) + " lanes" + (exit ? ", the others exited" : ""));
      const std::string mask = std::to_string(k == 32 ? 0xffffffffu : (1u << k) - 1);
      std::string body = ld_in("%r1", 0) + "  shfl.sync.bfly.b32 %r2, %r1, 1, 31, -1;\n" + st_out("%r2", 1) +
                         st_out("%r1", 0) + "  and.b32 %r4, %ti1, 31;\n  setp.ge.u32 %p1, %r4, " +
                         std::to_string(k) + ";\n" + (exit ? "  @%p1 exit;\n" : "  @%p1 bra SKIP;\n");
      for (int o = 16; o > 0; o /= 2)
        body += "  shfl.sync.down.b32 %r5|%p2, %r1, " + std::to_string(o) + ", 31, " + mask +
                ";\n  add.s32 %r1, %r1, %r5;\n";
      body += st_out("%r1", 0) + "SKIP:\n";
      std::vector<uint32_t> out = cross_check(kernel_text(body, 1, 2), threads, in, 2);
      for (uint32_t warp = 0; warp < threads / 32; ++warp) {
        uint32_t sum = 0;
        for (uint32_t l = 0; l < k; ++l) sum += in[32 * warp + l];
        EXPECT_EQ(out[2 * 32 * warp], sum) << "warp " << warp;
        EXPECT_EQ(out[2 * (32 * warp + 1) + 1], in[32 * warp]);  // the full-warp butterfly
      }
    }
}

// wmma (docs/isa.md section 7.1): one warp loads A, B and C from memory
// with strides past the matrices' widths, multiplies and stores D, in every
// shape, for f16 into f32 and into f16, s8 with .satfinite and u8, every
// layout of A and B (C and D in A's), inputs random words (f16 NaNs,
// infinities and subnormals among them).  The machines of 4, 8 and 32
// lanes and the model's compute each element with loads and multiply-adds;
// their D must be the oracle's bit for bit (the CUDA-sized device's MMA is
// checked against the same oracle by the samples and the op table).  The
// oracle's D for s8 is also the host's own sums.
TEST(PtxCoverage, WarpMatrixEveryShapeTypeAndLayout) {
  struct Shape {
    uint32_t m, n, k;
  };
  struct Types {
    const char *ab, *c, *d;
    uint32_t in_bytes, c_bytes, d_bytes;
    bool sat;
  };
  const Types types[] = {{"f16", "f32", "f32", 2, 4, 4, false},
                         {"f16", "f16", "f16", 2, 2, 2, false},
                         {"s8", "s32", "s32", 1, 4, 4, true},
                         {"u8", "s32", "s32", 1, 4, 4, false}};
  std::vector<uint32_t> in = inputs(4096, 53);
  // Accumulators at the ends of the s32 range, for .satfinite and wrapping.
  for (uint32_t w = 0; w < 1536; w += 2) in[2048 + w] = w % 4 ? 0x7FFFFF00u + w % 200 : 0x80000000u + w % 150;
  constexpr uint32_t kB = 4096, kC = 8192, kPad = 16;  // byte offsets of B and C in the input; stride padding
  for (const Shape s : {Shape{16, 16, 16}, Shape{32, 8, 16}, Shape{8, 32, 16}})
    for (const Types& t : types)
      for (bool a_col : {false, true})
        for (bool b_col : {false, true}) {
          const std::string shape = "m" + std::to_string(s.m) + "n" + std::to_string(s.n) + "k" + std::to_string(s.k);
          SCOPED_TRACE(shape + " " + t.ab + "->" + t.d + (a_col ? " A col" : " A row") + (b_col ? " B col" : " B row"));
          const char* la = a_col ? "col" : "row";
          const char* lb = b_col ? "col" : "row";
          const uint32_t sa = (a_col ? s.m : s.k) + kPad, sb = (b_col ? s.k : s.n) + kPad, sc = (a_col ? s.m : s.n) + kPad;
          // Fragment registers: A and B as many as PTX gives them, C and D one
          // per element (f32, s32) or pair (f16).
          auto regs = [](uint32_t first, uint32_t n) {
            std::string r = "{";
            for (uint32_t i = 0; i < n; ++i) r += (i ? ", %r" : "%r") + std::to_string(first + i);
            return r + "}";
          };
          const uint32_t na = t.in_bytes == 2 ? 8 : s.m * s.k / 128, nb = t.in_bytes == 2 ? 8 : s.k * s.n / 128;
          const uint32_t nc = t.c_bytes == 2 ? 4 : 8, nd = t.d_bytes == 2 ? 4 : 8;
          const std::string ra = regs(0, na), rb = regs(10, nb), rc = regs(20, nc), rd = regs(30, nd);
          std::string body;
          body += "  wmma.load.a.sync.aligned." + std::string(la) + "." + shape + ".global." + t.ab + " " + ra +
                  ", [%rin], " + std::to_string(sa) + ";\n";
          body += "  wmma.load.b.sync.aligned." + std::string(lb) + "." + shape + ".global." + t.ab + " " + rb +
                  ", [%rin+" + std::to_string(kB) + "], " + std::to_string(sb) + ";\n";
          body += "  wmma.load.c.sync.aligned." + std::string(la) + "." + shape + ".global." + t.c + " " + rc +
                  ", [%rin+" + std::to_string(kC) + "], " + std::to_string(sc) + ";\n";
          const std::string types_text = t.in_bytes == 2 ? std::string(".") + t.d + "." + t.c
                                                         : std::string(".s32.") + t.ab + "." + t.ab + ".s32";
          body += "  wmma.mma.sync.aligned." + std::string(la) + "." + lb + "." + shape + types_text +
                  (t.sat ? ".satfinite " : " ") + rd + ", " + ra + ", " + rb + ", " + rc + ";\n";
          body += "  wmma.store.d.sync.aligned." + std::string(la) + "." + shape + ".global." + t.d + " [%rout], " +
                  rd + ", " + std::to_string(sc) + ";\n";
          // D's elements with its padding: 24 words a thread cover the largest.
          const std::string ptx = kernel_text(body, 0, 0);
          const std::vector<uint32_t> out = cross_check(ptx, 32, in, 24, 32);
          // The CUDA-sized device's mma, with 255 registers and with so few
          // that values spill between its mmas (a spill's store must not
          // share a block with the next mma: the block rules).
          for (uint32_t regs : {255u, 12u}) {
            Params cuda = cuda_params(1u << 20);
            cuda.regs = regs;
            const Outcome got = run_on(ptx, cuda, 32, {1, 1, 1}, {32, 1, 1}, in, 24 * 32);
            ASSERT_EQ(got.error, 0) << regs << " registers: " << got.message;
            for (size_t i = 0; i < out.size(); ++i)
              ASSERT_EQ(got.out[i], out[i]) << "the CUDA-sized device with " << regs << " registers, word " << i;
          }
          if (std::string(t.ab) != "s8") continue;
          const uint8_t* bytes = reinterpret_cast<const uint8_t*>(in.data());
          auto a_at = [&](uint32_t r, uint32_t c) { return int8_t(bytes[a_col ? c * sa + r : r * sa + c]); };
          auto b_at = [&](uint32_t r, uint32_t c) { return int8_t(bytes[kB + (b_col ? c * sb + r : r * sb + c)]); };
          for (uint32_t r = 0; r < s.m; ++r)
            for (uint32_t c = 0; c < s.n; ++c) {
              const uint32_t at = a_col ? c * sc + r : r * sc + c;
              int64_t want = int32_t(in[kC / 4 + at]);
              for (uint32_t k = 0; k < s.k; ++k) want += a_at(r, k) * b_at(k, c);
              want = std::clamp<int64_t>(want, INT32_MIN, INT32_MAX);
              ASSERT_EQ(int32_t(out[at]), want) << "D[" << r << "][" << c << "]";
            }
        }
}

// match.any and match.all, 32- and 64-bit, on values with repeats.
TEST(PtxCoverage, MatchAnyAndAll) {
  const uint32_t threads = 128;
  std::vector<uint32_t> in(2 * threads);
  std::mt19937 rng(37);
  for (uint32_t t = 0; t < threads; ++t) {
    const uint32_t warp = t / 32;
    in[2 * t] = warp == 2 ? 7 : rng() % 3;                       // warp 2: all equal
    in[2 * t + 1] = warp == 3 ? 1 : (warp == 2 ? 5 : rng() % 2);  // warp 3: all equal high words
  }
  const char* forms[] = {"match.any.sync.b32 %r10, %r1, -1",
                         "match.any.sync.b64 %r10, %rd1, -1",
                         "match.all.sync.b32 %r10|%p1, %r1, -1",
                         "match.all.sync.b64 %r10|%p1, %rd1, -1",
                         "match.all.sync.b32 %r10, %r1, 0xffff",
                         "match.any.sync.b32 %r10, %r1, 0x0f0f0f0f"};
  for (const char* f : forms) {
    SCOPED_TRACE(f);
    const bool pred = std::string(f).find('|') != std::string::npos;
    std::string body = ld_in("%r1", 0) + ld_in("%rd1", 0, "b64") + "  setp.eq.u32 %p1, %r1, %r1;\n  " + f + ";\n" +
                       "  selp.u32 %r11, 1, 0, %p1;\n" + st_out("%r10", 0) + st_out("%r11", 1);
    std::vector<uint32_t> out = cross_check(kernel_text(body, 2, 2), threads, in, 2);
    if (pred)  // warp 2: every value equal
      for (uint32_t t = 64; t < 96; ++t) {
        EXPECT_EQ(out[2 * t], 0xffffffffu);
        EXPECT_EQ(out[2 * t + 1], 1u);
      }
  }
}

// ---- named barriers --------------------------------------------------------------

// Producers (warps 0-1) and consumers (warps 2-3) hand a shared buffer back
// and forth through bar.arrive and bar.sync with counts; each half also
// synchronises alone on a barrier of its own (64 threads), and everyone
// meets at __syncthreads.  The consumers read exactly what was produced
// for the round.
TEST(PtxCoverage, NamedBarriersProducerConsumer) {
  std::string body =
      "  .shared .align 4 .b32 buf[64];\n"
      "  mov.u32 %r1, %tid.x;\n  mov.u32 %r2, buf;\n"
      "  bar.sync 0;\n"
      "  setp.ge.u32 %p1, %r1, 64;\n  @%p1 bra CONSUMER;\n"
      // producer: round 1
      "  shl.b32 %r3, %r1, 2;\n  add.u32 %r4, %r2, %r3;\n  mul.lo.u32 %r5, %r1, 7;\n  st.shared.u32 [%r4], %r5;\n"
      "  bar.sync 3, 64;\n"
      "  bar.arrive 1, 128;\n"
      "  bar.sync 2, 128;\n"
      // round 2, after the consumers have read round 1
      "  add.u32 %r5, %r5, 1000;\n  st.shared.u32 [%r4], %r5;\n"
      "  bar.arrive 1, 128;\n"
      "  mov.u32 %r10, 0;\n  mov.u32 %r11, 0;\n  bra DONE;\n"
      "CONSUMER:\n"
      "  sub.u32 %r6, %r1, 64;\n  shl.b32 %r3, %r6, 2;\n  add.u32 %r4, %r2, %r3;\n"
      "  bar.sync 4, 64;\n"
      "  bar.sync 1, 128;\n  ld.shared.u32 %r10, [%r4];\n"
      "  bar.arrive 2, 128;\n"
      "  bar.sync 1, 128;\n  ld.shared.u32 %r11, [%r4];\n"
      "DONE:\n"
      "  bar.sync 0;\n" +
      st_out("%r10", 0) + st_out("%r11", 1);
  std::vector<uint32_t> out = cross_check(kernel_text(body, 1, 2), 128, {}, 2, 128);
  for (uint32_t t = 64; t < 128; ++t) {
    EXPECT_EQ(out[2 * t], (t - 64) * 7) << t;
    EXPECT_EQ(out[2 * t + 1], (t - 64) * 7 + 1000) << t;
  }
}

// A counted barrier that too few threads reach is a deadlock: the launch
// fails instead of running forever on the oracle.
TEST(PtxCoverage, CountedBarrierDeadlockFails) {
  std::string body = "  bar.sync 1, 96;\n" + st_out("%ti1", 0);
  Outcome ref = run_reference(kernel_text(body, 1, 1), {1, 1, 1}, {64, 1, 1}, {}, 64);
  EXPECT_EQ(ref.error, 719);
  EXPECT_NE(ref.message.find("deadlock"), std::string::npos) << ref.message;
}

// ---- device malloc and free, and indirect calls ---------------------------------

const std::string kHeapDecls =
    ".extern .func (.param .b64 func_retval0) malloc(.param .b64 malloc_param_0);\n"
    ".extern .func free(.param .b64 free_param_0);\n";
std::string call_malloc(const std::string& dst, const std::string& size) {
  return "  {\n  .param .b64 pm0;\n  st.param.b64 [pm0], " + size +
         ";\n  .param .b64 rv0;\n  call.uni (rv0), malloc, (pm0);\n  ld.param.b64 " + dst + ", [rv0];\n  }\n";
}
std::string call_free(const std::string& p) {
  return "  {\n  .param .b64 pf0;\n  st.param.b64 [pf0], " + p + ";\n  call.uni free, (pf0);\n  }\n";
}

// Every thread allocates a block of its own size, fills it, frees it, then
// allocates again; the blocks of one round do not overlap (each thread
// checks its bytes after everyone has written), and after a free the heap
// serves again.  Requests beyond the heap return NULL.
TEST(PtxCoverage, DeviceMallocAndFree) {
  const uint32_t threads = 128;
  std::vector<uint32_t> in(threads);
  for (uint32_t t = 0; t < threads; ++t) in[t] = 1 + (t * 37) % 200;
  std::string body = ld_in("%r1", 0) + "  cvt.u64.u32 %rd1, %r1;\n" + call_malloc("%rd2", "%rd1") +
                     "  setp.ne.u64 %p1, %rd2, 0;\n  selp.u32 %r2, 1, 0, %p1;\n" + st_out("%r2", 0) +
                     "  and.b64 %rd9, %rd2, 15;\n  cvt.u32.u64 %r9, %rd9;\n" + st_out("%r9", 4) +
                     // fill with the thread's number
                     "  mov.u32 %r3, 0;\nFILL:\n  cvt.u64.u32 %rd3, %r3;\n  add.u64 %rd4, %rd2, %rd3;\n"
                     "  st.u8 [%rd4], %ti1;\n  add.u32 %r3, %r3, 1;\n  setp.lt.u32 %p2, %r3, %r1;\n  @%p2 bra FILL;\n"
                     "  bar.sync 0;\n"
                     // count the bytes still ours
                     "  mov.u32 %r3, 0;\n  mov.u32 %r4, 0;\n  and.b32 %r8, %ti1, 255;\n"
                     "CHECK:\n  cvt.u64.u32 %rd3, %r3;\n  add.u64 %rd4, %rd2, %rd3;\n"
                     "  ld.u8 %r5, [%rd4];\n  setp.eq.u32 %p3, %r5, %r8;\n  selp.u32 %r6, 1, 0, %p3;\n"
                     "  add.u32 %r4, %r4, %r6;\n  add.u32 %r3, %r3, 1;\n  setp.lt.u32 %p2, %r3, %r1;\n"
                     "  @%p2 bra CHECK;\n" +
                     st_out("%r4", 1) + "  bar.sync 0;\n" + call_free("%rd2") + "  bar.sync 0;\n" +
                     call_malloc("%rd5", "%rd1") + "  setp.ne.u64 %p4, %rd5, 0;\n  selp.u32 %r7, 1, 0, %p4;\n" +
                     st_out("%r7", 2) + call_free("%rd5") +
                     // far too much: NULL
                     "  mov.u64 %rd6, 0x100000000;\n" + call_malloc("%rd7", "%rd6") +
                     "  mov.u64 %rd8, 60000;\n" + call_malloc("%rd10", "%rd8") +
                     "  or.b64 %rd7, %rd7, %rd10;\n  setp.eq.u64 %p5, %rd7, 0;\n  selp.u32 %r10, 1, 0, %p5;\n" +
                     call_free("%rd10") + st_out("%r10", 3);
  std::vector<uint32_t> out = cross_check(kernel_text(body, 1, 5, kHeapDecls), threads, in, 5);
  for (uint32_t t = 0; t < threads; ++t) {
    EXPECT_EQ(out[5 * t + 0], 1u) << t;
    EXPECT_EQ(out[5 * t + 1], in[t]) << t;
    EXPECT_EQ(out[5 * t + 2], 1u) << t;
    EXPECT_EQ(out[5 * t + 4], 0u) << t;  // 16-byte aligned
  }
}

// A heap that runs out: some of 64 blocks of 4000 bytes are served (64 KiB
// hold at most 16), the rest get NULL; once they are freed, 64 blocks of 100
// bytes are all served (from the space and from the freed blocks).
TEST(PtxCoverage, DeviceMallocRunsOutAndRecovers) {
  const uint32_t threads = 64;
  std::string body = "  mov.u64 %rd1, 4000;\n" + call_malloc("%rd2", "%rd1") +
                     "  setp.ne.u64 %p1, %rd2, 0;\n  selp.u32 %r2, 1, 0, %p1;\n" + st_out("%r2", 0) + "  bar.sync 0;\n" +
                     call_free("%rd2") + "  bar.sync 0;\n  mov.u64 %rd3, 100;\n" + call_malloc("%rd4", "%rd3") +
                     "  setp.ne.u64 %p2, %rd4, 0;\n  selp.u32 %r3, 1, 0, %p2;\n" + st_out("%r3", 1);
  const std::string ptx = kernel_text(body, 1, 2, kHeapDecls);
  auto check = [&](const Outcome& r, const std::string& who) {
    ASSERT_EQ(r.error, 0) << who << ": " << r.message;
    uint32_t served = 0;
    for (uint32_t t = 0; t < threads; ++t) {
      served += r.out[2 * t];
      EXPECT_EQ(r.out[2 * t + 1], 1u) << who << " thread " << t;
    }
    EXPECT_GE(served, 8u) << who;
    EXPECT_LE(served, kHeapBytes / 4016) << who;
  };
  check(run_reference(ptx, {1, 1, 1}, {threads, 1, 1}, {}, 2 * threads), "the PTX interpreter");
  for (uint32_t lanes : kLanes) check(run_machine(ptx, lanes, {1, 1, 1}, {threads, 1, 1}, {}, 2 * threads), machine_name(lanes));
}

// Calls through a register: a table of function addresses in global memory
// (as virtual tables are) and a function address moved into a register.
TEST(PtxCoverage, IndirectCalls) {
  const std::string prelude =
      ".func (.param .b32 r) twice(.param .b32 x)\n{\n  .reg .b32 %a<3>;\n  ld.param.b32 %a1, [x];\n"
      "  shl.b32 %a2, %a1, 1;\n  st.param.b32 [r], %a2;\n  ret;\n}\n"
      ".func (.param .b32 r) square(.param .b32 x)\n{\n  .reg .b32 %a<3>;\n  ld.param.b32 %a1, [x];\n"
      "  mul.lo.u32 %a2, %a1, %a1;\n  st.param.b32 [r], %a2;\n  ret;\n}\n"
      ".func (.param .b32 r) negate(.param .b32 x)\n{\n  .reg .b32 %a<3>;\n  ld.param.b32 %a1, [x];\n"
      "  neg.s32 %a2, %a1;\n  st.param.b32 [r], %a2;\n  ret;\n}\n"
      ".func sink(.param .b64 p, .param .b32 v)\n{\n  .reg .b64 %q<2>;\n  .reg .b32 %b<2>;\n"
      "  ld.param.b64 %q1, [p];\n  ld.param.b32 %b1, [v];\n  st.global.u32 [%q1+4], %b1;\n  ret;\n}\n"
      ".global .align 8 .u64 table[2] = {twice, square};\n";
  std::string body = ld_in("%r1", 0) +
                     "  and.b32 %r2, %ti1, 1;\n  mul.wide.u32 %rd1, %r2, 8;\n  mov.u64 %rd2, table;\n"
                     "  add.u64 %rd3, %rd2, %rd1;\n  ld.global.u64 %rd4, [%rd3];\n"
                     "  setp.eq.u32 %p1, %r2, 0;\n  and.b32 %r9, %ti1, 2;\n  setp.ne.u32 %p2, %r9, 0;\n"
                     "  mov.u64 %rd5, negate;\n  @%p2 mov.u64 %rd4, %rd5;\n"
                     "  {\n  .param .b32 a0;\n  st.param.b32 [a0], %r1;\n  .param .b32 r0;\n"
                     "  prototype_1 : .callprototype (.param .b32 _) _ (.param .b32 _);\n"
                     "  call (r0), %rd4, (a0), prototype_1;\n  ld.param.b32 %r3, [r0];\n  }\n" +
                     st_out("%r3", 0) +
                     // no return value, as a virtual void method: sink(out, x + 1)
                     "  mov.u64 %rd6, sink;\n  add.u32 %r4, %r1, 1;\n"
                     "  {\n  .param .b64 b0;\n  st.param.b64 [b0], %rout;\n  .param .b32 b1;\n  st.param.b32 [b1], %r4;\n"
                     "  prototype_2 : .callprototype ()_ (.param .b64 _, .param .b32 _);\n"
                     "  call\n  %rd6,\n  (\n  b0,\n  b1\n  )\n  , prototype_2;\n  }\n";
  const uint32_t threads = 64;
  std::vector<uint32_t> in = inputs(threads, 41);
  std::vector<uint32_t> out = cross_check(kernel_text(body, 1, 2, prelude), threads, in, 2);
  for (uint32_t t = 0; t < threads; ++t) {
    const uint32_t x = in[t];
    const uint32_t want = (t & 2) ? 0u - x : (t & 1) ? x * x : 2 * x;
    EXPECT_EQ(out[2 * t], want) << t;
    EXPECT_EQ(out[2 * t + 1], x + 1) << t;
  }
}

// nvcc's own shape of device new/delete and virtual calls (kernels.cu):
// virtual tables in global memory, operator new through malloc, virtual
// destructors through indirect calls to functions that call free.
TEST(PtxCoverage, NvccVirtualCallsWithNewAndDelete) {
  std::ifstream f(QGPU_MACHINE_KERNELS_PTX);
  std::stringstream ss;
  ss << f.rdbuf();
  const uint32_t threads = 128;
  std::vector<uint32_t> in = inputs(threads, 43);
  for (auto& x : in) x &= 0xfff;
  std::vector<uint32_t> out = cross_check(ss.str(), threads, in, 2, 64, "_Z18virtual_new_deletePKiPi");
  for (uint32_t t = 0; t < threads; ++t) {
    const int32_t x = int32_t(in[t]);
    EXPECT_EQ(int32_t(out[2 * t]), (t & 1) ? x * x : x * x / 2 + int32_t(t)) << t;
    EXPECT_EQ(int32_t(out[2 * t + 1]), 2 * x + 3) << t;
  }
}

}  // namespace
}  // namespace qgpu::machine
