// The cases of the op table (ops_table.h): integer arithmetic, logic,
// shifts, comparisons, selects, high multiplies, division, bit operations,
// conversions, special registers, memory in every space, atomics, warp
// operations, barriers, traps, and floating point through the software
// sequences.
#include "ops_table.h"

namespace qgpu::opstable {
namespace {

// The model's documented refusals (docs/isa.md section 8.1, model_unsupported).
const Refusal kModelRom{launch::kNotSupported, "the machine's ROM holds 1024"};

// A case whose kernel is more code than the model's ROM holds: the backends
// of the model's machine refuse it, naming the ROM.
Case full_only(Case c) {
  c.model_run = ModelRun::FullOnly;
  return c;
}

Case beyond_model_rom(Case c) {
  c.refusals = {{"interpreter-model", kModelRom}, {"model-trace", kModelRom}, {"model", kModelRom}};
  return c;
}

std::string in3() { return ld_in("%r0", 0) + ld_in("%r1", 1) + ld_in("%r2", 2); }

// A 32-bit case over rows (a, b, c) of edge pairs and random words.
Case int32(std::string name, std::vector<std::string> covers, std::string instrs, uint32_t out_words,
           uint64_t seed, uint32_t model_rows = 4) {
  Case c;
  c.name = std::move(name);
  c.covers = std::move(covers);
  c.body = in3() + instrs;
  c.in_words = 3;
  c.out_words = out_words;
  c.in = int_rows(3, seed);
  c.model = {true, {1, 1, 1}, {4, 1, 1}, model_rows};
  return c;
}

// A 64-bit case over rows (a, b, c) of 64-bit words: %rd0 %rd1 %rd2.
// A 32-bit case over rows of `in_words` words (the first three in %r0..%r2).
Case int32x(std::string name, std::vector<std::string> covers, uint32_t in_words, std::string instrs,
            uint32_t out_words, uint64_t seed, uint32_t model_rows = 4) {
  Case c = int32(std::move(name), std::move(covers), std::move(instrs), out_words, seed, model_rows);
  c.in_words = in_words;
  c.in = int_rows(in_words, seed);
  return c;
}

Case int64(std::string name, std::vector<std::string> covers, std::string instrs, uint32_t out_words,
           uint64_t seed, uint32_t model_rows = 4) {
  Case c;
  c.name = std::move(name);
  c.covers = std::move(covers);
  c.body = ld_in("%rd0", 0, "b64") + ld_in("%rd1", 2, "b64") + ld_in("%rd2", 4, "b64") + instrs;
  c.in_words = 6;
  c.out_words = out_words;
  // Pairs of edge words make 64-bit values with edge halves; the shuffle
  // mixes high and low halves.
  std::vector<uint32_t> w = int_rows(6, seed);
  c.in = w;
  c.model = {true, {1, 1, 1}, {2, 1, 1}, model_rows};
  return c;
}

Case shift32(std::string name, std::vector<std::string> covers, std::string instrs, uint32_t out_words, uint64_t seed) {
  Case c = int32(std::move(name), std::move(covers), std::move(instrs), out_words, seed);
  c.in = shift_rows(seed);
  return c;
}

// A float case over rows of `in_words` f32 words in %f0.. (and the same
// bits in %r0..).
Case f32(std::string name, std::vector<std::string> covers, std::string instrs, uint32_t in_words,
         uint32_t out_words, uint64_t seed, uint32_t model_rows = 3) {
  Case c;
  c.name = std::move(name);
  c.covers = std::move(covers);
  for (uint32_t i = 0; i < in_words; ++i)
    c.body += ld_in("%f" + std::to_string(i), i, "f32") + ld_in("%r" + std::to_string(i), i);
  c.body += instrs;
  c.in_words = in_words;
  c.out_words = out_words;
  c.in = float_rows(in_words, seed);
  c.model = {true, {1, 1, 1}, {1, 1, 1}, model_rows};
  return c;
}

Case f64(std::string name, std::vector<std::string> covers, std::string instrs, uint32_t doubles,
         uint32_t out_words, uint64_t seed, uint32_t model_rows = 2) {
  Case c;
  c.name = std::move(name);
  c.covers = std::move(covers);
  for (uint32_t i = 0; i < doubles; ++i) c.body += ld_in("%fd" + std::to_string(i), 2 * i, "f64");
  c.body += instrs;
  c.in_words = 2 * doubles;
  c.out_words = out_words;
  c.in = double_rows(doubles, seed);
  c.model = {true, {1, 1, 1}, {1, 1, 1}, model_rows};
  return c;
}

// One row per thread: `threads` threads in CTAs of `block` (the model: one
// warp group of `model_threads`).
Case threads(std::string name, std::vector<std::string> covers, std::string body, uint32_t in_words,
             uint32_t out_words, uint32_t grid, uint32_t block, uint32_t model_threads, uint64_t seed) {
  Case c;
  c.name = std::move(name);
  c.covers = std::move(covers);
  c.body = std::move(body);
  c.in_words = in_words;
  c.out_words = out_words;
  c.shape = {false, {grid, 1, 1}, {block, 1, 1}, 0};
  c.model = {false, {1, 1, 1}, {model_threads, 1, 1}, 0};
  std::vector<uint32_t> w = int_rows(in_words ? in_words : 1, seed, grid * block);
  c.in.assign(w.begin(), w.begin() + size_t(grid) * block * in_words);
  return c;
}

std::string setp_sel(const std::string& cmp, const std::string& type, uint32_t word) {
  const std::string r = "%r" + std::to_string(10 + word);
  return "  setp." + cmp + "." + type + " %p1, %r0, %r1;\n  selp.u32 " + r + ", 1, 0, %p1;\n" + st_out(r, word);
}

std::vector<Case> build() {
  std::vector<Case> v;
  // ---- integer arithmetic ----
  v.push_back(int32("add.s32", {"add"}, "  add.s32 %r3, %r0, %r1;\n" + st_out("%r3", 0), 1, 1));
  v.push_back(int32("sub.s32 neg.s32", {"sub"},
                    "  sub.s32 %r3, %r0, %r1;\n" + st_out("%r3", 0) + "  neg.s32 %r4, %r2;\n" + st_out("%r4", 1), 2, 2));
  v.push_back(int32("add.sat.s32 sub.sat.s32", {"add", "sub"},
                    "  add.sat.s32 %r3, %r0, %r1;\n" + st_out("%r3", 0) + "  sub.sat.s32 %r4, %r0, %r1;\n" +
                        st_out("%r4", 1), 2, 3));
  v.push_back(int32("mul.lo.s32 mad.lo.s32", {"mul"},
                    "  mul.lo.s32 %r3, %r0, %r1;\n" + st_out("%r3", 0) + "  mad.lo.s32 %r4, %r0, %r1, %r2;\n" +
                        st_out("%r4", 1), 2, 4));
  v.push_back(int32("mul.hi.u32 mad.hi.u32", {"mulhu"},
                    "  mul.hi.u32 %r3, %r0, %r1;\n" + st_out("%r3", 0) + "  mad.hi.u32 %r4, %r0, %r1, %r2;\n" +
                        st_out("%r4", 1), 2, 5));
  v.push_back(int32("mul.hi.s32", {"mulhs"}, "  mul.hi.s32 %r3, %r0, %r1;\n" + st_out("%r3", 0), 1, 6));
  v.push_back(int32("mul.wide.u32 mul.wide.s32", {"mul", "mulhu", "mulhs"},
                    "  mul.wide.u32 %rd3, %r0, %r1;\n" + st_out("%rd3", 0, "b64") + "  mul.wide.s32 %rd4, %r0, %r1;\n" +
                        st_out("%rd4", 2, "b64"), 4, 7));
  v.push_back(int32("mul24 sad", {"mul"},
                    "  mul24.lo.s32 %r3, %r0, %r1;\n" + st_out("%r3", 0) + "  mul24.hi.u32 %r4, %r0, %r1;\n" +
                        st_out("%r4", 1) + "  sad.u32 %r5, %r0, %r1, %r2;\n" + st_out("%r5", 2), 3, 8));
  v.push_back(int32("div.u32 rem.u32", {"sub", "shl", "sltu", "csub"},
                    "  div.u32 %r3, %r0, %r1;\n" + st_out("%r3", 0) + "  rem.u32 %r4, %r0, %r1;\n" + st_out("%r4", 1), 2,
                    9, 6));
  v.push_back(int32("div.s32 rem.s32", {"sub", "sltu", "csub"},
                    "  div.s32 %r3, %r0, %r1;\n" + st_out("%r3", 0) + "  rem.s32 %r4, %r0, %r1;\n" + st_out("%r4", 1), 2,
                    10, 6));
  v.push_back(int32("add.cc addc sub.cc subc", {"add", "sltu"},
                    "  add.cc.u32 %r3, %r0, %r1;\n  addc.cc.u32 %r4, %r2, %r0;\n  addc.u32 %r5, %r1, %r2;\n" +
                        st_out("%r3", 0) + st_out("%r4", 1) + st_out("%r5", 2) +
                        "  sub.cc.u32 %r6, %r0, %r1;\n  subc.u32 %r7, %r2, %r0;\n" + st_out("%r6", 3) + st_out("%r7", 4),
                    5, 11));
  v.push_back(int32("16-bit arithmetic", {"add", "sar", "and"},
                    "  cvt.u16.u32 %h0, %r0;\n  cvt.u16.u32 %h1, %r1;\n  add.s16 %h2, %h0, %h1;\n"
                    "  mul.lo.s16 %h3, %h0, %h1;\n  shr.s16 %h4, %h0, 3;\n  min.s16 %h5, %h0, %h1;\n"
                    "  setp.lt.s16 %p1, %h0, %h1;\n  selp.u32 %r8, 1, 0, %p1;\n  mul.wide.s16 %r9, %h0, %h1;\n"
                    "  mad.lo.u16 %h6, %h0, %h1, %h0;\n  cvt.s32.s16 %r3, %h2;\n  cvt.u32.u16 %r4, %h3;\n"
                    "  cvt.s32.s16 %r5, %h4;\n  cvt.s32.s16 %r6, %h5;\n  cvt.u32.u16 %r7, %h6;\n" +
                        st_out("%r3", 0) + st_out("%r4", 1) + st_out("%r5", 2) + st_out("%r6", 3) + st_out("%r7", 4) +
                        st_out("%r8", 5) + st_out("%r9", 6),
                    7, 24));
  v.push_back(int32("dp4a bmsk szext", {"mul", "add"},
                    "  dp4a.s32.u32 %r3, %r0, %r1, %r2;\n  dp4a.u32.s32 %r4, %r0, %r1, %r2;\n"
                    "  and.b32 %r8, %r1, 63;\n  bmsk.clamp.b32 %r5, %r8, %r2;\n  szext.wrap.s32 %r6, %r0, %r8;\n" +
                        st_out("%r3", 0) + st_out("%r4", 1) + st_out("%r5", 2) + st_out("%r6", 3),
                    4, 25));
  v.push_back(int32("setp with bool ops, slct", {"sel", "slt"},
                    "  and.b32 %r5, %r2, 1;\n  setp.ne.u32 %p2, %r5, 0;\n  setp.lt.and.s32 %p1, %r0, %r1, %p2;\n"
                    "  selp.u32 %r3, 1, 0, %p1;\n  setp.ge.xor.u32 %p3|%p4, %r0, %r1, %p2;\n  selp.u32 %r4, 1, 0, %p3;\n"
                    "  selp.u32 %r6, 1, 0, %p4;\n  slct.s32.s32 %r7, %r0, %r1, %r2;\n" +
                        st_out("%r3", 0) + st_out("%r4", 1) + st_out("%r6", 2) + st_out("%r7", 3),
                    4, 26));
  // ---- logic, shifts ----
  v.push_back(int32("and or xor not lop3", {"and", "or", "xor"},
                    "  and.b32 %r3, %r0, %r1;\n  or.b32 %r4, %r0, %r1;\n  xor.b32 %r5, %r0, %r1;\n  not.b32 %r6, %r2;\n"
                    "  lop3.b32 %r7, %r0, %r1, %r2, 0xE8;\n" +
                        st_out("%r3", 0) + st_out("%r4", 1) + st_out("%r5", 2) + st_out("%r6", 3) + st_out("%r7", 4),
                    5, 12));
  // Predicate logic with immediates: a predicate holds one bit, so
  // `xor.pred p, q, -1` is `not.pred` (nvcc writes it for !cond).
  v.push_back(int32("xor.pred and.pred or.pred with immediates", {"xor"},
                    "  setp.lt.u32 %p1, %r0, %r1;\n  xor.pred %p2, %p1, -1;\n  and.pred %p3, %p1, 1;\n"
                    "  or.pred %p4, %p1, 0;\n  xor.pred %p5, %p1, 1;\n  selp.u32 %r3, 1, 0, %p2;\n"
                    "  selp.u32 %r4, 1, 0, %p3;\n  selp.u32 %r5, 1, 0, %p4;\n  selp.u32 %r6, 1, 0, %p5;\n" +
                        st_out("%r3", 0) + st_out("%r4", 1) + st_out("%r5", 2) + st_out("%r6", 3),
                    4, 131));
  v.push_back(shift32("shl.b32 shr.u32 shr.s32", {"shl", "shr", "sar"},
                      "  shl.b32 %r3, %r0, %r1;\n  shr.u32 %r4, %r0, %r1;\n  shr.s32 %r5, %r0, %r1;\n" + st_out("%r3", 0) +
                          st_out("%r4", 1) + st_out("%r5", 2),
                      3, 13));
  v.push_back(shift32("shf.l shf.r", {"shl", "shr", "or"},
                      "  shf.l.wrap.b32 %r3, %r0, %r2, %r1;\n  shf.r.clamp.b32 %r4, %r0, %r2, %r1;\n" + st_out("%r3", 0) +
                          st_out("%r4", 1),
                      2, 14));
  // ---- comparisons, selects, min/max ----
  v.push_back(int32("setp.s32 selp", {"seq", "sne", "slt", "sle"},
                    setp_sel("eq", "s32", 0) + setp_sel("ne", "s32", 1) + setp_sel("lt", "s32", 2) +
                        setp_sel("le", "s32", 3) + setp_sel("gt", "s32", 4) + setp_sel("ge", "s32", 5),
                    6, 15));
  v.push_back(int32("setp.u32 selp", {"sltu", "sleu"},
                    setp_sel("lt", "u32", 0) + setp_sel("le", "u32", 1) + setp_sel("gt", "u32", 2) +
                        setp_sel("ge", "u32", 3) + setp_sel("hi", "u32", 4) + setp_sel("ls", "u32", 5),
                    6, 16));
  v.push_back(int32("selp.b32 set.s32", {"sel"},
                    "  and.b32 %r5, %r2, 1;\n  setp.ne.u32 %p2, %r5, 0;\n  selp.b32 %r3, %r0, %r1, %p2;\n" +
                        st_out("%r3", 0) + "  set.lt.u32.s32 %r4, %r0, %r1;\n" + st_out("%r4", 1),
                    2, 17));
  v.push_back(int32("min max s32 u32", {"min", "max", "minu", "maxu"},
                    "  min.s32 %r3, %r0, %r1;\n  max.s32 %r4, %r0, %r1;\n  min.u32 %r5, %r0, %r1;\n"
                    "  max.u32 %r6, %r0, %r1;\n" +
                        st_out("%r3", 0) + st_out("%r4", 1) + st_out("%r5", 2) + st_out("%r6", 3),
                    4, 18));
  v.push_back(int32("abs.s32", {"sub"}, "  abs.s32 %r3, %r0;\n" + st_out("%r3", 0), 1, 19));
  // ---- bit operations ----
  v.push_back(int32("popc clz brev bfind", {"popc", "clz", "brev"},
                    "  popc.b32 %r3, %r0;\n  clz.b32 %r4, %r0;\n  brev.b32 %r5, %r0;\n  bfind.u32 %r6, %r1;\n"
                    "  bfind.s32 %r7, %r1;\n" +
                        st_out("%r3", 0) + st_out("%r4", 1) + st_out("%r5", 2) + st_out("%r6", 3) + st_out("%r7", 4),
                    5, 20));
  v.push_back(int32("bfe bfi", {"shl", "shr", "sar"},
                    "  and.b32 %r8, %r1, 63;\n  shr.u32 %r9, %r1, 8;\n  and.b32 %r9, %r9, 63;\n"
                    "  bfe.u32 %r3, %r0, %r8, %r9;\n  bfe.s32 %r4, %r0, %r8, %r9;\n  bfi.b32 %r5, %r2, %r0, %r8, %r9;\n" +
                        st_out("%r3", 0) + st_out("%r4", 1) + st_out("%r5", 2),
                    3, 21));
  v.push_back(int32("prmt", {"shr", "or"},
                    "  prmt.b32 %r3, %r0, %r1, %r2;\n  prmt.b32.ecl %r4, %r0, %r1, %r2;\n" + st_out("%r3", 0) +
                        st_out("%r4", 1),
                    2, 22));
  // ---- conversions ----
  v.push_back(int32("cvt integer widths", {"shl", "sar", "and"},
                    "  cvt.s32.s8 %r3, %r0;\n  cvt.s32.s16 %r4, %r0;\n  cvt.u32.u8 %r5, %r0;\n  cvt.u16.u32 %h1, %r1;\n"
                    "  cvt.s32.s16 %r6, %h1;\n  cvt.s64.s32 %rd3, %r2;\n  cvt.s8.s32 %r7, %r1;\n" +
                        st_out("%r3", 0) + st_out("%r4", 1) + st_out("%r5", 2) + st_out("%r6", 3) +
                        st_out("%rd3", 4, "b64") + st_out("%r7", 6),
                    8, 23));
  v.push_back(int32("cvt.sat integer", {"min", "max", "minu"},
                    "  cvt.sat.s8.s32 %r3, %r0;\n  cvt.sat.u8.s32 %r4, %r1;\n  cvt.sat.u32.s32 %r5, %r0;\n"
                    "  cvt.sat.s32.u32 %r6, %r1;\n  cvt.sat.s16.u32 %r7, %r2;\n  cvt.u16.u32 %h1, %r0;\n"
                    "  cvt.sat.u16.s16 %h2, %h1;\n  cvt.u32.u16 %r8, %h2;\n  cvt.sat.s8.u16 %r9, %h1;\n" +
                        st_out("%r3", 0) + st_out("%r4", 1) + st_out("%r5", 2) + st_out("%r6", 3) + st_out("%r7", 4) +
                        st_out("%r8", 5) + st_out("%r9", 6),
                    7, 27));
  {
    // 64-bit saturating conversions: the machine refuses them, naming them.
    const Refusal sat64{launch::kNotSupported, "saturates a 64-bit integer conversion"};
    Case c = int32("cvt.sat 64-bit refused", {}, "  cvt.s64.s32 %rd3, %r0;\n  cvt.sat.s32.s64 %r3, %rd3;\n" + st_out("%r3", 0),
                   1, 28);
    c.refusals = {{"interpreter", sat64}, {"interpreter-model", sat64}, {"model-trace", sat64}, {"model", sat64}};
    v.push_back(c);
  }
  // ---- 64-bit integer ----
  v.push_back(int64("add.s64 sub.s64 mul.lo.u64", {"add", "sltu", "mulhu"},
                    "  add.s64 %rd3, %rd0, %rd1;\n  sub.s64 %rd4, %rd0, %rd1;\n  mul.lo.u64 %rd5, %rd0, %rd1;\n" +
                        st_out("%rd3", 0, "b64") + st_out("%rd4", 2, "b64") + st_out("%rd5", 4, "b64"),
                    6, 30));
  v.push_back(int64("mul.hi.u64 mul.hi.s64", {"mulhu"},
                    "  mul.hi.u64 %rd3, %rd0, %rd1;\n  mul.hi.s64 %rd4, %rd0, %rd1;\n" + st_out("%rd3", 0, "b64") +
                        st_out("%rd4", 2, "b64"),
                    4, 31, 2));
  {
    Case c = int64("shl.b64 shr.u64 shr.s64", {"shl", "shr", "sar"},
                   "  cvt.u32.u64 %r0, %rd1;\n  shl.b64 %rd3, %rd0, %r0;\n  shr.u64 %rd4, %rd0, %r0;\n"
                   "  shr.s64 %rd5, %rd0, %r0;\n" +
                       st_out("%rd3", 0, "b64") + st_out("%rd4", 2, "b64") + st_out("%rd5", 4, "b64"),
                   6, 32);
    for (size_t r = 0; r * 6 < c.in.size(); ++r) c.in[r * 6 + 2] = uint32_t(r % 70);  // counts 0..69
    v.push_back(c);
  }
  v.push_back(int64("setp.s64 setp.u64 min.s64", {"slt", "sltu", "seq"},
                    "  setp.lt.s64 %p1, %rd0, %rd1;\n  selp.u32 %r3, 1, 0, %p1;\n  setp.ge.u64 %p2, %rd0, %rd1;\n"
                    "  selp.u32 %r4, 1, 0, %p2;\n  setp.eq.s64 %p3, %rd0, %rd2;\n  selp.u32 %r5, 1, 0, %p3;\n"
                    "  min.s64 %rd3, %rd0, %rd1;\n  max.u64 %rd4, %rd0, %rd1;\n" +
                        st_out("%r3", 0) + st_out("%r4", 1) + st_out("%r5", 2) + st_out("%rd3", 4, "b64") +
                        st_out("%rd4", 6, "b64"),
                    8, 33));
  v.push_back(int64("popc.b64 clz.b64 brev.b64", {"popc", "clz", "brev"},
                    "  popc.b64 %r3, %rd0;\n  clz.b64 %r4, %rd0;\n  brev.b64 %rd3, %rd0;\n" + st_out("%r3", 0) +
                        st_out("%r4", 1) + st_out("%rd3", 2, "b64"),
                    4, 34));
  v.push_back(full_only(int64("div.u64 rem.s64", {"sub", "sltu"},
                    "  div.u64 %rd3, %rd0, %rd1;\n  rem.s64 %rd4, %rd0, %rd2;\n" + st_out("%rd3", 0, "b64") +
                        st_out("%rd4", 2, "b64"),
                    4, 35, 1)));
  // ---- control: divergent branches, a value live across them ----
  v.push_back(int32("divergent if/else", {"mov", "term.br", "term.jmp"},
                    "  mov.u32 %r3, %r2;\n  setp.lt.s32 %p1, %r0, %r1;\n  @%p1 bra THEN;\n  mul.lo.s32 %r3, %r3, 3;\n"
                    "  sub.s32 %r4, %r0, %r1;\n  bra JOIN;\nTHEN:\n  add.s32 %r3, %r3, 7;\n  sub.s32 %r4, %r1, %r0;\n"
                    "JOIN:\n" +
                        st_out("%r3", 0) + st_out("%r4", 1),
                    2, 40));
  // ---- special registers ----
  {
    Case c = threads("tid ctaid laneid warpid", {"lane", "warp", "cta"},
                     "  mov.u32 %r1, %laneid;\n  mov.u32 %r2, %warpid;\n  mov.u32 %r3, %nctaid.x;\n" + st_out("%ti1", 0) +
                         st_out("%ti2", 1) + st_out("%r1", 2) + st_out("%r2", 3) + st_out("%r3", 4) +
                         st_out("%ti0", 5),
                     0, 6, 3, 40, 8, 41);
    c.model = {false, {2, 1, 1}, {5, 1, 1}, 0};
    v.push_back(c);
  }
  {
    // The clock: monotonic over work (docs/isa.md 8); its values differ by
    // backend (the model's machine counts the thread's instructions, 8.1),
    // and the model computes them as the interpreter-model backend does.
    Case c = int32("clock", {"clock"},
                   "  mov.u32 %r5, %clock;\n  mov.u64 %rd5, %clock64;\n  mul.lo.s32 %r3, %r0, %r1;\n"
                   "  mov.u32 %r9, 0;\nSPIN:\n  add.u32 %r9, %r9, 1;\n  xor.b32 %r3, %r3, %r9;\n"
                   "  setp.lt.u32 %p3, %r9, 20;\n  @%p3 bra SPIN;\n" + st_out("%r3", 1) +
                       "  mov.u32 %r6, %clock;\n  mov.u64 %rd6, %clock64;\n  setp.gt.u32 %p1, %r6, %r5;\n"
                       "  selp.u32 %r7, 1, 0, %p1;\n  setp.gt.u64 %p2, %rd6, %rd5;\n  selp.u32 %r8, 1, 0, %p2;\n" +
                       st_out("%r7", 0) + st_out("%r8", 2),
                   3, 42, 2);
    v.push_back(c);
  }
  // ---- memory ----
  v.push_back(int32x("ld.global widths and offsets", {"ld.global"}, 4,
                    "  ld.global.u8 %r3, [%rin+1];\n  ld.global.s8 %r4, [%rin+3];\n  ld.global.u16 %r5, [%rin+2];\n"
                    "  ld.global.s16 %r6, [%rin+6];\n  ld.global.u64 %rd3, [%rin];\n  ld.global.v2.u32 {%r7, %r8}, [%rin];\n"
                    "  ld.global.s8 %h1, [%rin+9];\n  cvt.s32.s16 %r9, %h1;\n" +
                        st_out("%r3", 0) + st_out("%r4", 1) + st_out("%r5", 2) + st_out("%r6", 3) +
                        st_out("%rd3", 4, "b64") + st_out("%r8", 6) + st_out("%r7", 7) + st_out("%r9", 8),
                    10, 50));
  v.push_back(int32("st.global widths and offsets", {"st.global"},
                    "  st.global.u32 [%rout], %r2;\n  st.global.u8 [%rout+1], %r0;\n  st.global.u16 [%rout+6], %r1;\n"
                    "  st.global.u8 [%rout+7], %r0;\n  cvt.u64.u32 %rd3, %r1;\n  shl.b64 %rd3, %rd3, 24;\n"
                    "  st.global.u64 [%rout+8], %rd3;\n  st.global.v2.u32 [%rout+16], {%r1, %r0};\n",
                    6, 51));
  {
    Case c = int32("ld.const indexed", {"ld.global"},
                   "  and.b32 %r3, %r0, 15;\n  shl.b32 %r3, %r3, 2;\n  mov.u64 %rd3, table;\n  cvt.u64.u32 %rd4, %r3;\n"
                   "  add.u64 %rd3, %rd3, %rd4;\n  ld.const.u32 %r4, [%rd3];\n  ld.const.u8 %r5, [%rd3+1];\n" +
                       st_out("%r4", 0) + st_out("%r5", 1),
                   2, 52);
    c.prelude = ".const .align 4 .b32 table[16] = {0, 1, -1, 2147483647, -2147483648, 2, 4, 8, 16, 3, 5, 7, 0x12345678, "
                "0xdeadbeef, 65535, 65536};\n";
    v.push_back(c);
  }
  {
    Case c = int32("ld.param", {"ld.param"}, "  ld.param.u32 %r3, [pn];\n  add.u32 %r3, %r3, %r0;\n" + st_out("%r3", 0), 1, 53);
    v.push_back(c);
  }
  {
    // A local array indexed by the input: stores then loads of every width.
    Case c = int32("ld.local st.local", {"ld.local", "st.local"},
                   "  mov.u64 %rd3, arr;\n  and.b32 %r3, %r1, 7;\n  shl.b32 %r3, %r3, 2;\n  cvt.u64.u32 %rd4, %r3;\n"
                   "  add.u64 %rd4, %rd3, %rd4;\n  st.local.u32 [%rd3], %r2;\n  st.local.u32 [%rd3+28], %r2;\n"
                   "  st.local.u32 [%rd4], %r0;\n  st.local.u8 [%rd3+5], %r1;\n  st.local.u16 [%rd3+10], %r0;\n"
                   "  ld.local.u32 %r4, [%rd3];\n  ld.local.u32 %r5, [%rd3+4];\n  ld.local.s16 %r6, [%rd3+10];\n"
                   "  ld.local.u32 %r7, [%rd3+28];\n  ld.local.s8 %r8, [%rd4+1];\n" +
                       st_out("%r4", 0) + st_out("%r5", 1) + st_out("%r6", 2) + st_out("%r7", 3) + st_out("%r8", 4),
                   5, 54);
    c.locals = "  .local .align 8 .b8 arr[32];\n";
    v.push_back(c);
  }
  {
    // Each thread stores into shared memory (every width); after the
    // barrier it reads its neighbours' values.
    Case c = threads("ld.shared st.shared bar.sync", {"ld.shared", "st.shared", "term.bar"},
                     ld_in("%r0", 0) + ld_in("%r1", 1) +
                         "  mov.u32 %r2, sh;\n  shl.b32 %r3, %ti1, 3;\n  add.u32 %r3, %r2, %r3;\n"
                         "  st.shared.u32 [%r3], %r0;\n  st.shared.u16 [%r3+4], %r1;\n  st.shared.u8 [%r3+7], %r0;\n"
                         "  bar.sync 0;\n  add.u32 %r4, %ti1, 1;\n  rem.u32 %r4, %r4, %ti3;\n  shl.b32 %r4, %r4, 3;\n"
                         "  add.u32 %r4, %r2, %r4;\n  ld.shared.u32 %r5, [%r4];\n  ld.shared.s16 %r6, [%r4+4];\n"
                         "  ld.shared.u8 %r7, [%r4+7];\n  ld.shared.u32 %r8, [%r3+4];\n" +
                         st_out("%r5", 0) + st_out("%r6", 1) + st_out("%r7", 2) + st_out("%r8", 3),
                     2, 4, 2, 64, 6, 60);
    c.locals = "  .shared .align 8 .b8 sh[512];\n";
    v.push_back(c);
  }
  {
    // Generic addresses of shared and global memory, told apart at run time.
    Case c = threads("generic ld st", {"ld.shared", "ld.global", "st.shared"},
                     ld_in("%r0", 0) + "  mov.u64 %rd1, gsh;\n  cvta.shared.u64 %rd1, %rd1;\n"
                         "  mul.wide.u32 %rd2, %ti1, 4;\n  add.u64 %rd1, %rd1, %rd2;\n  st.u32 [%rd1], %r0;\n"
                         "  bar.sync 0;\n  and.b32 %r1, %r0, 1;\n  setp.ne.u32 %p1, %r1, 0;\n"
                         "  cvta.global.u64 %rd3, %rin;\n  selp.b64 %rd4, %rd1, %rd3, %p1;\n  ld.u32 %r2, [%rd4];\n" +
                         st_out("%r2", 0),
                     1, 1, 2, 32, 4, 61);
    c.locals = "  .shared .align 4 .b32 gsh[32];\n";
    v.push_back(c);
  }
  {
    Case c;
    c.name = "printf";
    c.covers = {"st.print"};
    c.prelude = ".extern .func (.param .b32 func_retval0) vprintf(.param .b64 vprintf_param_0, .param .b64 "
                "vprintf_param_1);\n.global .align 1 .b8 fmt[17] = {114, 37, 117, 32, 37, 100, 32, 37, 120, 32, 37, "
                "99, 37, 37, 10, 0, 0};\n";
    c.locals = "  .local .align 8 .b8 pbuf[16];\n";
    c.body = in3() +
             "  mov.u64 %rd1, pbuf;\n  cvta.local.u64 %rd2, %rd1;\n  st.local.u32 [%rd1], %ti0;\n"
             "  st.local.u32 [%rd1+4], %r0;\n  st.local.u32 [%rd1+8], %r1;\n  and.b32 %r3, %r2, 63;\n"
             "  add.u32 %r3, %r3, 48;\n  st.local.u32 [%rd1+12], %r3;\n  mov.u64 %rd3, fmt;\n"
             "  cvta.global.u64 %rd4, %rd3;\n"
             "  {\n  .param .b64 param0;\n  st.param.b64 [param0+0], %rd4;\n  .param .b64 param1;\n"
             "  st.param.b64 [param1+0], %rd2;\n  .param .b32 retval0;\n"
             "  call.uni (retval0), vprintf, (param0, param1);\n  ld.param.b32 %r4, [retval0+0];\n  }\n" +
             st_out("%r4", 0);
    c.in_words = 3;
    c.out_words = 1;
    c.in = int_rows(3, 62, 0);
    c.shape.rows = 40;
    // One row per thread: with several, the order of the lines follows each
    // machine's schedule (the model's machine runs a thread until it exits),
    // which CUDA leaves open.
    c.model = {true, {1, 1, 1}, {3, 1, 1}, 3};
    v.push_back(c);
  }
  // ---- atomics: one word per row (the old value and the new one) ----
  auto atom = [&](const std::string& name, const std::string& form, const std::string& key, bool three, uint64_t seed) {
    Case c = int32(name, {key},
                   "  st.global.u32 [%rout], %r0;\n  atom.global." + form + " %r3, [%rout], %r1" +
                       (three ? ", %r2" : "") + ";\n" + st_out("%r3", 1),
                   2, seed, 6);
    return c;
  };
  v.push_back(atom("atom.add.u32", "add.u32", "atom.add", false, 70));
  v.push_back(atom("atom.min.s32", "min.s32", "atom.min", false, 71));
  v.push_back(atom("atom.max.s32", "max.s32", "atom.max", false, 72));
  v.push_back(atom("atom.min.u32", "min.u32", "atom.minu", false, 73));
  v.push_back(atom("atom.max.u32", "max.u32", "atom.maxu", false, 74));
  v.push_back(atom("atom.exch.b32", "exch.b32", "atom.exch", false, 75));
  v.push_back(atom("atom.cas.b32", "cas.b32", "atom.cas", true, 76));
  v.push_back(atom("atom.and.b32", "and.b32", "atom.and", false, 77));
  v.push_back(atom("atom.or.b32", "or.b32", "atom.or", false, 78));
  v.push_back(atom("atom.xor.b32", "xor.b32", "atom.xor", false, 79));
  v.push_back(atom("atom.inc.u32", "inc.u32", "atom.inc", false, 80));
  v.push_back(atom("atom.dec.u32", "dec.u32", "atom.dec", false, 81));
  {
    // Rows whose old value equals the compare operand, so cas swaps.
    Case c = atom("atom.cas.b32 equal", "cas.b32", "atom.cas", true, 82);
    for (size_t r = 0; r * 3 < c.in.size(); r += 2) c.in[r * 3 + 1] = c.in[r * 3];
    v.push_back(c);
  }
  {
    // Shared-memory and generic atomics: each thread its own word.
    Case c = threads("atom.shared and generic", {"atom.cas", "atom.exch", "atom.min", "atom.inc", "atom.maxu"},
                     ld_in("%r0", 0) + ld_in("%r1", 1) + ld_in("%r2", 2) +
                         "  mov.u32 %r3, aw;\n  shl.b32 %r4, %ti1, 2;\n  add.u32 %r3, %r3, %r4;\n"
                         "  st.shared.u32 [%r3], %r0;\n  atom.shared.cas.b32 %r5, [%r3], %r0, %r1;\n"
                         "  atom.shared.exch.b32 %r6, [%r3], %r2;\n  atom.shared.min.s32 %r7, [%r3], %r1;\n"
                         "  atom.shared.inc.u32 %r8, [%r3], %r2;\n  ld.shared.u32 %r9, [%r3];\n"
                         "  st.global.u32 [%rout+20], %r0;\n  cvta.global.u64 %rd1, %rout;\n"
                         "  atom.max.u32 %r10, [%rd1+20], %r1;\n  cvt.u64.u32 %rd2, %r3;\n  cvta.shared.u64 %rd2, %rd2;\n"
                         "  atom.add.u32 %r11, [%rd2], %r2;\n" +
                         st_out("%r5", 0) + st_out("%r6", 1) + st_out("%r7", 2) + st_out("%r8", 3) + st_out("%r9", 4) +
                         st_out("%r10", 6) + st_out("%r11", 7),
                     3, 8, 2, 64, 6, 85);
    c.locals = "  .shared .align 4 .b32 aw[64];\n";
    for (size_t r = 0; r * 3 < c.in.size(); r += 3) c.in[r * 3 + 1] = c.in[r * 3];  // some cas swap
    v.push_back(c);
  }
  v.push_back(int32("red.global min max and or xor", {"atom.min", "atom.maxu", "atom.and", "atom.or", "atom.xor"},
                    "  st.global.u32 [%rout], %r0;\n  st.global.u32 [%rout+4], %r0;\n  st.global.u32 [%rout+8], %r0;\n"
                    "  red.global.min.s32 [%rout], %r1;\n  red.global.max.u32 [%rout+4], %r1;\n"
                    "  red.global.and.b32 [%rout+8], %r2;\n  red.global.or.b32 [%rout+8], %r1;\n"
                    "  red.global.xor.b32 [%rout+8], %r0;\n",
                    3, 86));
  v.push_back(int64("atom.add.u64 atom.cas.b64", {"atom64.add", "atom64.cas", "atomhi"},
                    "  st.global.u64 [%rout], %rd0;\n  atom.global.add.u64 %rd3, [%rout], %rd1;\n"
                    "  st.global.u64 [%rout+8], %rd0;\n  atom.global.cas.b64 %rd4, [%rout+8], %rd0, %rd2;\n" +
                        st_out("%rd3", 4, "b64") + st_out("%rd4", 6, "b64"),
                    8, 83, 3));
  // The native 64-bit atomics of the interpreter's machine (ATOM64 and
  // ATOMHI): each function on its own doubleword, the old value after it.
  auto atom64 = [](const std::vector<std::string>& forms) {
    std::string b;
    for (size_t k = 0; k < forms.size(); ++k) {
      const std::string at = "[%rout+" + std::to_string(16 * k) + "]", old = "%rd" + std::to_string(4 + k);
      b += "  st.global.u64 " + at + ", %rd0;\n  atom.global." + forms[k] + " " + old + ", " + at + ", %rd1" +
           (forms[k].rfind("cas", 0) == 0 ? ", %rd2" : "") + ";\n" + st_out(old, uint32_t(4 * k + 2), "b64");
    }
    return b;
  };
  v.push_back(int64("atom.min.max.s64.u64", {"atom64.min", "atom64.max", "atom64.minu", "atom64.maxu", "atomhi"},
                    atom64({"min.s64", "max.s64", "min.u64", "max.u64"}), 16, 87, 2));
  v.push_back(int64("atom.exch.and.or.xor.b64", {"atom64.exch", "atom64.and", "atom64.or", "atom64.xor", "atomhi"},
                    atom64({"exch.b64", "and.b64", "or.b64", "xor.b64"}) +
                        "  st.global.u64 [%rout+64], %rd0;\n  red.global.add.u64 [%rout+64], %rd1;\n"
                        "  atom.global.cas.b64 %rd9, [%rout+64], %rd0, %rd2;\n" + st_out("%rd9", 18, "b64"),
                    20, 88, 2));
  // f32 and f64 add: the native atomics on the interpreter's machine
  // (.rn, f32 with subnormals flushed).
  v.push_back(f32("atom.add.f32 red.add.f32", {"atom.fadd"},
                  "  st.global.f32 [%rout], %f0;\n  atom.global.add.f32 %f4, [%rout], %f1;\n" +
                      st_out("%f4", 1, "f32") + "  st.global.f32 [%rout+8], %f0;\n  red.global.add.f32 [%rout+8], %f1;\n",
                  2, 3, 89, 2));
  v.push_back(f64("atom.add.f64 red.add.f64", {"atom64.fadd", "atomhi"},
                  "  st.global.f64 [%rout], %fd0;\n  atom.global.add.f64 %fd4, [%rout], %fd1;\n" +
                      st_out("%fd4", 2, "f64") + "  st.global.f64 [%rout+16], %fd0;\n  red.global.add.f64 [%rout+16], %fd1;\n",
                  2, 6, 91, 1));
  {
    // Every thread adds into one word (global and shared): the sums, and
    // the old values in the machines' serial order.
    Case c = threads("contended atom.add red.add", {"atom.add", "ld.shared"},
                     ld_in("%r0", 0) + "  mov.u32 %r1, cnt;\n  atom.shared.add.u32 %r2, [%r1], %r0;\n"
                                       "  mov.u64 %rd1, gcnt;\n  red.global.add.u32 [%rd1], %r0;\n  bar.sync 0;\n"
                                       "  ld.shared.u32 %r3, [%r1];\n" +
                         st_out("%r2", 0) + st_out("%r3", 1) +
                         "  and.b32 %r4, %r0, 0xff;\n  atom.global.add.u32 %r5, [%rd1+4], %r4;\n" + st_out("%r5", 2),
                     1, 3, 2, 32, 4, 84);
    c.locals = "  .shared .align 4 .b32 cnt;\n";
    c.prelude = ".global .align 4 .b32 gcnt[2];\n";
    v.push_back(c);
  }
  // ---- warp operations ----
  {
    Case c = threads("vote ballot any all uni activemask", {"term.wbar"},
                     ld_in("%r0", 0) +
                         "  and.b32 %r1, %r0, 1;\n  setp.ne.u32 %p1, %r1, 0;\n  vote.sync.ballot.b32 %r2, %p1, -1;\n"
                         "  vote.sync.any.pred %p2, %p1, -1;\n  vote.sync.all.pred %p3, %p1, -1;\n"
                         "  vote.sync.uni.pred %p4, %p1, -1;\n  selp.u32 %r3, 1, 0, %p2;\n  selp.u32 %r4, 1, 0, %p3;\n"
                         "  selp.u32 %r5, 1, 0, %p4;\n  activemask.b32 %r6;\n"
                         "  setp.lt.u32 %p5, %ti1, 4;\n  @%p5 bra SKIPV;\n  vote.sync.ballot.b32 %r7, %p1, -1;\n"
                         "  st.global.u32 [%rout+20], %r7;\nSKIPV:\n" +
                         st_out("%r2", 0) + st_out("%r3", 1) + st_out("%r4", 2) + st_out("%r5", 3) + st_out("%r6", 4),
                     1, 6, 2, 64, 32, 90);
    for (size_t t = 32; t < 64; ++t) c.in[t] = 1;  // second warp: every predicate set
    c.model = {false, {1, 1, 1}, {8, 1, 1}, 0};
    v.push_back(c);
  }
  {
    Case c = threads("shfl idx up down bfly", {"term.wbar"},
                     ld_in("%r0", 0) + ld_in("%r1", 1) +
                         "  and.b32 %r1, %r1, 31;\n  shfl.sync.idx.b32 %r2, %r0, %r1, 31, -1;\n"
                         "  shfl.sync.up.b32 %r3|%p1, %r0, 3, 0, -1;\n  shfl.sync.down.b32 %r4|%p2, %r0, 5, 31, -1;\n"
                         "  shfl.sync.bfly.b32 %r5, %r0, 9, 31, -1;\n  shfl.sync.idx.b32 %r6, %r0, %r1, 0x0f07, -1;\n"
                         "  selp.u32 %r7, 1, 0, %p1;\n  selp.u32 %r8, 2, 0, %p2;\n  or.b32 %r7, %r7, %r8;\n" +
                         st_out("%r2", 0) + st_out("%r3", 1) + st_out("%r4", 2) + st_out("%r5", 3) + st_out("%r6", 4) +
                         st_out("%r7", 5),
                     2, 6, 2, 64, 8, 91);
    v.push_back(c);
  }
  {
    Case c = threads("match.any match.all", {"term.wbar"},
                     ld_in("%r0", 0) +
                         "  and.b32 %r1, %r0, 3;\n  match.any.sync.b32 %r2, %r1, -1;\n"
                         "  match.all.sync.b32 %r3|%p1, %r1, -1;\n  selp.u32 %r4, 1, 0, %p1;\n" +
                         st_out("%r2", 0) + st_out("%r3", 1) + st_out("%r4", 2),
                     1, 3, 2, 64, 6, 92);
    for (size_t t = 32; t < 64; ++t) c.in[t] = 6;  // second warp: every value equal
    v.push_back(c);
    Case d = threads("redux add min", {"term.wbar"},
                     ld_in("%r0", 0) + "  redux.sync.add.u32 %r5, %r0, -1;\n  redux.sync.min.s32 %r6, %r0, 0x0000ffff;\n" +
                         st_out("%r5", 0) + st_out("%r6", 1),
                     1, 2, 2, 64, 4, 95);
    v.push_back(d);
    Case e = threads("redux max xor and or", {"term.wbar"},
                     ld_in("%r0", 0) +
                         "  redux.sync.max.u32 %r7, %r0, -1;\n  redux.sync.xor.b32 %r8, %r0, 0x0000ffff;\n"
                         "  redux.sync.and.b32 %r9, %r0, -1;\n  redux.sync.or.b32 %r10, %r0, -1;\n" +
                         st_out("%r7", 0) + st_out("%r8", 1) + st_out("%r9", 2) + st_out("%r10", 3),
                     1, 4, 2, 64, 4, 96);
    v.push_back(full_only(e));
  }
  {
    // Warp matrix multiply-adds from fragments of random words (every
    // element of every lane's registers, f16 inputs of every kind: NaN,
    // infinity, subnormal), 16x16x16, two CTAs of two warps: s8 with
    // .satfinite over random accumulators (edge words among them), f16 into
    // f32.  The model's machine computes each element with a loop of loads
    // and multiply-adds (docs/isa.md section 7.1): tens of thousands of
    // steps for the warp, so on the model in the full run only.
    std::string s8 = "  wmma.mma.sync.aligned.row.col.m16n16k16.s32.s8.s8.s32.satfinite "
                     "{%r12, %r13, %r14, %r15, %r16, %r17, %r18, %r19}, {%r0, %r1}, {%r2, %r3}, "
                     "{%r4, %r5, %r6, %r7, %r8, %r9, %r10, %r11};\n";
    std::string body;
    for (uint32_t i = 0; i < 12; ++i) body += ld_in("%r" + std::to_string(i), i);
    for (uint32_t i = 0; i < 8; ++i) s8 += st_out("%r" + std::to_string(12 + i), i);
    v.push_back(full_only(threads("wmma.mma s8 satfinite", {"mma", "term.wbar"}, body + s8, 12, 8, 2, 64, 32, 201)));
    std::string f16 = "  wmma.mma.sync.aligned.row.col.m16n16k16.f32.f32 "
                      "{%f8, %f9, %f10, %f11, %f12, %f13, %f14, %f15}, "
                      "{%r0, %r1, %r2, %r3, %r4, %r5, %r6, %r7}, {%r8, %r9, %r10, %r11, %r12, %r13, %r14, %r15}, "
                      "{%f0, %f1, %f2, %f3, %f4, %f5, %f6, %f7};\n";
    body.clear();
    for (uint32_t i = 0; i < 16; ++i) body += ld_in("%r" + std::to_string(i), i);
    for (uint32_t i = 0; i < 8; ++i) body += ld_in("%f" + std::to_string(i), 16 + i, "f32");
    for (uint32_t i = 0; i < 8; ++i) f16 += st_out("%f" + std::to_string(8 + i), i, "f32");
    v.push_back(full_only(threads("wmma.mma f16 f32", {"mma"}, body + f16, 24, 8, 2, 64, 32, 202)));
  }
  {
    Case c = threads("bar.red bar.warp.sync", {"term.bar", "term.wbar"},
                     ld_in("%r0", 0) +
                         "  and.b32 %r1, %r0, 1;\n  setp.ne.u32 %p1, %r1, 0;\n  bar.red.popc.u32 %r2, 0, %p1;\n"
                         "  bar.red.and.pred %p2, 0, %p1;\n  bar.red.or.pred %p3, 0, %p1;\n  selp.u32 %r3, 1, 0, %p2;\n"
                         "  selp.u32 %r4, 1, 0, %p3;\n  bar.warp.sync -1;\n" +
                         st_out("%r2", 0) + st_out("%r3", 1) + st_out("%r4", 2),
                     1, 3, 2, 64, 6, 93);
    v.push_back(c);
  }
  {
    // A trap on one row: every backend stops the launch with
    // cudaErrorLaunchFailure (719).
    Case c = int32("trap", {"term.trap", "term.exit"},
                   "  add.s32 %r3, %r0, %r1;\n" + st_out("%r3", 0) +
                       "  setp.eq.u32 %p1, %ti0, 3;\n  @!%p1 bra NOTRAP;\n  trap;\nNOTRAP:\n",
                   1, 94);
    c.error = 719;
    v.push_back(c);
  }
  // ---- floating point (software sequences, docs/isa.md section 11; native
  // float operations on the interpreter's machine, isa.h's OpKind::Float) ----
  auto fout = [](uint32_t n) {
    std::string s;
    for (uint32_t i = 0; i < n; ++i) s += st_out("%f" + std::to_string(4 + i), i, "f32");
    return s;
  };
  v.push_back(f32("add.rn.f32 sub.rn.f32", {"fadd", "fsub"},
                  "  add.rn.f32 %f4, %f0, %f1;\n  sub.rn.f32 %f5, %f0, %f1;\n" + fout(2), 2, 2, 100, 2));
  v.push_back(full_only(f32("add.rz.f32 add.rm.f32", {},
                  "  add.rz.f32 %f4, %f0, %f1;\n  add.rm.f32 %f5, %f0, %f1;\n" + fout(2), 2, 2, 101, 2)));
  v.push_back(full_only(f32("add.rp.f32 add.ftz.f32", {},
                  "  add.rp.f32 %f4, %f0, %f1;\n  add.rn.ftz.f32 %f5, %f0, %f1;\n" + fout(2), 2, 2, 102, 2)));
  v.push_back(full_only(f32("mul.rn.f32 mul.rz.f32", {"fmul"},
                  "  mul.rn.f32 %f4, %f0, %f1;\n  mul.rz.f32 %f5, %f0, %f1;\n" + fout(2), 2, 2, 103, 2)));
  v.push_back(full_only(f32("fma.rn.f32", {"ffma"}, "  fma.rn.f32 %f4, %f0, %f1, %f2;\n" + fout(1), 3, 1, 104, 2)));
  v.push_back(f32("div.rn.f32", {"fdiv"}, "  div.rn.f32 %f4, %f0, %f1;\n" + fout(1), 2, 1, 105, 1));
  v.push_back(full_only(f32("rcp.rn.f32", {}, "  rcp.rn.f32 %f4, %f0;\n" + fout(1), 1, 1, 106, 2)));
  v.push_back(full_only(f32("sqrt.rn.f32", {"fsqrt"}, "  sqrt.rn.f32 %f4, %f0;\n" + fout(1), 1, 1, 107, 2)));
  v.push_back(full_only(f32("div.full.f32", {}, "  div.full.f32 %f4, %f0, %f1;\n" + fout(1), 2, 1, 108, 1)));
  v.push_back(full_only(f32("div.approx.f32", {}, "  div.approx.f32 %f4, %f0, %f1;\n" + fout(1), 2, 1, 109, 1)));
  v.push_back(full_only(f32("rcp.approx.ftz.f32", {}, "  rcp.approx.ftz.f32 %f4, %f0;\n" + fout(1), 1, 1, 110, 2)));
  v.push_back(full_only(f32("rsqrt.approx.f32", {}, "  rsqrt.approx.f32 %f4, %f0;\n" + fout(1), 1, 1, 111, 2)));
  v.push_back(full_only(f32("ex2.approx.ftz.f32", {"fex2"}, "  ex2.approx.ftz.f32 %f4, %f0;\n" + fout(1), 1, 1, 112, 2)));
  v.push_back(full_only(f32("lg2.approx.f32", {"flg2"}, "  lg2.approx.f32 %f4, %f0;\n" + fout(1), 1, 1, 113, 2)));
  v.push_back(full_only(f32("sin.approx.f32", {"fsin"}, "  sin.approx.f32 %f4, %f0;\n" + fout(1), 1, 1, 114, 1)));
  v.push_back(full_only(f32("cos.approx.f32", {"fcos"}, "  cos.approx.f32 %f4, %f0;\n" + fout(1), 1, 1, 115, 1)));
  v.push_back(full_only(f32("tanh.approx.f32", {"ftanh"}, "  tanh.approx.f32 %f4, %f0;\n" + fout(1), 1, 1, 124, 1)));
  v.push_back(f32("testp copysign neg.f64 abs.f64", {},
                  "  testp.finite.f32 %p1, %f0;\n  selp.u32 %r4, 1, 0, %p1;\n  testp.subnormal.f32 %p2, %f1;\n"
                  "  selp.u32 %r5, 1, 0, %p2;\n  copysign.f32 %f6, %f0, %f1;\n  cvt.f64.f32 %fd1, %f0;\n"
                  "  neg.f64 %fd2, %fd1;\n  abs.f64 %fd3, %fd2;\n" +
                      st_out("%r4", 0) + st_out("%r5", 1) + st_out("%f6", 2, "f32") + st_out("%fd2", 4, "f64") +
                      st_out("%fd3", 6, "f64"),
                  2, 8, 123, 2));
  v.push_back(f32("setp.f32 min max abs neg", {"fcmp", "fmin", "fmax"},
                  "  setp.lt.f32 %p1, %f0, %f1;\n  selp.u32 %r4, 1, 0, %p1;\n  setp.equ.f32 %p2, %f0, %f1;\n"
                  "  selp.u32 %r5, 1, 0, %p2;\n  setp.nan.f32 %p3, %f0, %f1;\n  selp.u32 %r6, 1, 0, %p3;\n"
                  "  min.f32 %f7, %f0, %f1;\n  max.f32 %f8, %f0, %f1;\n  abs.f32 %f9, %f0;\n  neg.f32 %f10, %f1;\n" +
                      st_out("%r4", 0) + st_out("%r5", 1) + st_out("%r6", 2) + st_out("%f7", 3, "f32") +
                      st_out("%f8", 4, "f32") + st_out("%f9", 5, "f32") + st_out("%f10", 6, "f32"),
                  2, 7, 116, 3));
  v.push_back(f32("cvt s32 u32 from f32", {"f2i", "f2u"},
                  "  cvt.rni.s32.f32 %r4, %f0;\n  cvt.rzi.u32.f32 %r5, %f1;\n" + st_out("%r4", 0) + st_out("%r5", 1),
                  2, 2, 117, 2));
  v.push_back(f32("cvt f32 from s32 u32", {"i2f", "u2f"},
                  "  cvt.rn.f32.s32 %f4, %r0;\n  cvt.rz.f32.u32 %f5, %r1;\n" + fout(2), 2, 2, 118, 2));
  v.push_back(f32("cvt.rmi.f32.f32", {"frint"}, "  cvt.rmi.f32.f32 %f4, %f0;\n" + fout(1), 1, 1, 119, 2));
  v.push_back(full_only(f32("cvt s64 f32", {},
                  "  cvt.rzi.s64.f32 %rd4, %f0;\n  cvt.rn.f32.s64 %f4, %rd4;\n" + st_out("%rd4", 0, "b64") +
                      st_out("%f4", 2, "f32"),
                  1, 4, 120, 1)));
  v.push_back(f32("cvt f16", {},
                  "  cvt.rn.f16.f32 %h1, %f0;\n  cvt.f32.f16 %f4, %h1;\n  cvt.u32.u16 %r4, %h1;\n" +
                      st_out("%f4", 0, "f32") + st_out("%r4", 1),
                  1, 2, 121, 2));
  v.push_back(full_only(f32("cvt f64 f32", {"f2d", "d2f"},
                  "  cvt.f64.f32 %fd4, %f0;\n  cvt.rn.f32.f64 %f5, %fd4;\n  mul.rn.f64 %fd5, %fd4, 0d3FB999999999999A;\n"
                  "  cvt.rn.f32.f64 %f6, %fd5;\n" +
                      st_out("%fd4", 0, "f64") + st_out("%f5", 2, "f32") + st_out("%f6", 3, "f32"),
                  1, 4, 122, 1)));
  // f16 .approx functions (each half: the f32 function, one rounding to
  // f16), setp on f16x2 (low halves into p, high ones into q) and the .ftz
  // arithmetic, over the halves of the float rows' words.
  v.push_back(full_only(f32("ex2.approx.f16x2 tanh.approx.f16", {},
                  "  mov.b32 %r4, %f0;\n  ex2.approx.f16x2 %r5, %r4;\n  mov.b32 {%h1, %h2}, %r4;\n"
                  "  tanh.approx.f16 %h3, %h2;\n  mov.b32 %r6, {%h3, %h1};\n" +
                      st_out("%r5", 0) + st_out("%r6", 1),
                  1, 2, 125, 1)));
  v.push_back(f32("setp.f16x2 add.ftz.f16x2 neg.ftz.f16x2", {},
                  "  mov.b32 %r4, %f0;\n  mov.b32 %r5, %f1;\n  setp.ltu.ftz.f16x2 %p1|%p2, %r4, %r5;\n"
                  "  selp.u32 %r6, 1, 0, %p1;\n  selp.u32 %r7, 2, 0, %p2;\n  or.b32 %r6, %r6, %r7;\n"
                  "  add.rn.ftz.f16x2 %r8, %r4, %r5;\n  neg.ftz.f16x2 %r9, %r4;\n" +
                      st_out("%r6", 0) + st_out("%r8", 1) + st_out("%r9", 2),
                  2, 3, 126, 2));
  v.push_back(full_only(f64("rcp.approx.ftz.f64 rsqrt.approx.ftz.f64", {},
                  "  rcp.approx.ftz.f64 %fd4, %fd0;\n  rsqrt.approx.ftz.f64 %fd5, %fd1;\n" + st_out("%fd4", 0, "f64") +
                      st_out("%fd5", 2, "f64"),
                  2, 4, 138, 1)));
  v.push_back(full_only(f64("add.rn.f64 sub.rn.f64", {"dadd", "dsub"},
                  "  add.rn.f64 %fd4, %fd0, %fd1;\n  sub.rn.f64 %fd5, %fd0, %fd1;\n" + st_out("%fd4", 0, "f64") +
                      st_out("%fd5", 2, "f64"),
                  2, 4, 130, 1)));
  v.push_back(full_only(f64("mul.rn.f64", {"dmul"}, "  mul.rn.f64 %fd4, %fd0, %fd1;\n" + st_out("%fd4", 0, "f64"), 2, 2, 131, 1)));
  v.push_back(full_only(f64("fma.rn.f64", {"dfma"}, "  fma.rn.f64 %fd4, %fd0, %fd1, %fd2;\n" + st_out("%fd4", 0, "f64"), 3, 2, 132, 1)));
  v.push_back(beyond_model_rom(
      f64("div.rn.f64", {"ddiv"}, "  div.rn.f64 %fd4, %fd0, %fd1;\n" + st_out("%fd4", 0, "f64"), 2, 2, 133, 1)));
  v.push_back(beyond_model_rom(f64("sqrt.rn.f64", {"dsqrt"}, "  sqrt.rn.f64 %fd4, %fd0;\n" + st_out("%fd4", 0, "f64"), 1, 2, 134, 1)));
  v.push_back(full_only(f64("setp.f64 cvt.rni.s32.f64", {"dcmp", "d2i"},
                  "  cvt.rni.s32.f64 %r4, %fd1;\n  setp.lt.f64 %p1, %fd0, %fd1;\n  selp.u32 %r5, 1, 0, %p1;\n" +
                      st_out("%r4", 0) + st_out("%r5", 1),
                  2, 2, 135, 2)));
  v.push_back(full_only(f64("min.f64 max.f64 cvt.rpi.f64.f64", {"dmin", "dmax", "drint"},
                  "  min.f64 %fd4, %fd0, %fd1;\n  max.f64 %fd5, %fd0, %fd1;\n  cvt.rpi.f64.f64 %fd6, %fd0;\n" +
                      st_out("%fd4", 0, "f64") + st_out("%fd5", 2, "f64") + st_out("%fd6", 4, "f64"),
                  2, 6, 136, 1)));
  v.push_back(full_only(f64("cvt f64 from and to 64-bit integers", {"d2l", "d2ul", "d2u", "l2d", "ul2d"},
                  "  cvt.rzi.s64.f64 %rd4, %fd0;\n  cvt.rmi.u64.f64 %rd5, %fd1;\n  cvt.rni.u32.f64 %r4, %fd1;\n"
                  "  cvt.rn.f64.s64 %fd4, %rd5;\n  cvt.rz.f64.u64 %fd5, %rd4;\n" +
                      st_out("%rd4", 0, "b64") + st_out("%rd5", 2, "b64") + st_out("%fd4", 4, "f64") +
                      st_out("%fd5", 6, "f64") + st_out("%r4", 8) + st_out("%r4", 9),
                  2, 10, 137, 1)));
  return v;
}

}  // namespace

const std::vector<Case>& cases() {
  static const std::vector<Case> v = build();
  return v;
}

}  // namespace qgpu::opstable
