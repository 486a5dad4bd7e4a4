// f32 PTX instructions end to end: a kernel applies one instruction to
// operand triples; the PTX-level interpreter, the lowering run on the
// machine interpreter (8 lanes), the lowering with native float operations
// on the CUDA-sized device (32 lanes) and the model's lowering run on the
// model's machine (what the interpreter-model backend runs) must each give the host's
// IEEE result (float_ref.h) bit for bit, for every edge-value pair and random
// operands.  Also reports machine instructions per operation.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <random>

#include "float_cases.h"
#include "model_host/machine/api.h"
#include "model_host/machine/image.h"
#include "model_host/machine/interpreter.h"
#include "model_host/lower/lower.h"
#include "model_host/ptx/ptx_interp.h"

namespace qgpu::machine {
namespace {

using floattest::hex;
using ptx::Rnd;
namespace fref = ptx::fref;

// %r11..%r13 hold the operands' bits and %f1..%f3 the same as f32; `body`
// leaves the result's bits in %r20.
std::string kernel(const std::string& body) {
  return R"(.version 8.5
.target sm_75
.address_size 64
.visible .entry k(.param .u64 pa, .param .u64 pb, .param .u64 pc, .param .u64 pd, .param .u32 n)
{
  .reg .pred %p<6>;
  .reg .b32 %r<24>;
  .reg .f32 %f<6>;
  .reg .b64 %rd<16>;
  ld.param.u64 %rd1, [pa];
  ld.param.u64 %rd2, [pb];
  ld.param.u64 %rd3, [pc];
  ld.param.u64 %rd4, [pd];
  ld.param.u32 %r5, [n];
  mov.u32 %r1, %ctaid.x;
  mov.u32 %r2, %ntid.x;
  mov.u32 %r3, %tid.x;
  mad.lo.s32 %r4, %r1, %r2, %r3;
  setp.ge.u32 %p1, %r4, %r5;
  @%p1 bra DONE;
  mul.wide.u32 %rd5, %r4, 4;
  add.s64 %rd6, %rd1, %rd5;
  add.s64 %rd7, %rd2, %rd5;
  add.s64 %rd8, %rd3, %rd5;
  add.s64 %rd9, %rd4, %rd5;
  ld.global.u32 %r11, [%rd6];
  ld.global.u32 %r12, [%rd7];
  ld.global.u32 %r13, [%rd8];
  mov.b32 %f1, %r11;
  mov.b32 %f2, %r12;
  mov.b32 %f3, %r13;
)" + body + R"(
  st.global.u32 [%rd9], %r20;
DONE:
  ret;
}
)";
}

struct Case {
  std::string name, body;
  std::function<uint32_t(uint32_t, uint32_t, uint32_t)> ref;
  int kind = 0;  // operands: 0 floats, 1 integers (a = low word, b = high word), 2 doubles {a, b} and {c, b'},
                 // 3 pairs of halves (edge halves, subnormals, random ones)
  // false: one instruction takes more than the model's 1024-block ROM; the
  // model's machine runs it with a larger ROM (same lanes, blocks and lowering).
  bool fits_model = true;
};

const char* kR[] = {"rn", "rz", "rm", "rp"};
const Rnd kRnd[] = {Rnd::Rn, Rnd::Rz, Rnd::Rm, Rnd::Rp};
const Rnd kRndI[] = {Rnd::Rni, Rnd::Rzi, Rnd::Rmi, Rnd::Rpi};

std::vector<Case> cases() {
  std::vector<Case> v;
  auto fres = [](const std::string& in) { return "  " + in + "\n  mov.b32 %r20, %f4;"; };
  for (int r = 0; r < 4; ++r)
    for (bool ftz : {false, true}) {
      const std::string m = std::string(".") + kR[r] + (ftz ? ".ftz" : "");
      const Rnd rr = kRnd[r];
      v.push_back({"add" + m, fres("add" + m + ".f32 %f4, %f1, %f2;"),
                   [=](uint32_t a, uint32_t b, uint32_t) { return fref::add(a, b, rr, ftz, false); }});
      v.push_back({"sub" + m, fres("sub" + m + ".f32 %f4, %f1, %f2;"),
                   [=](uint32_t a, uint32_t b, uint32_t) { return fref::sub(a, b, rr, ftz, false); }});
      v.push_back({"mul" + m, fres("mul" + m + ".f32 %f4, %f1, %f2;"),
                   [=](uint32_t a, uint32_t b, uint32_t) { return fref::mul(a, b, rr, ftz, false); }});
      v.push_back({"fma" + m, fres("fma" + m + ".f32 %f4, %f1, %f2, %f3;"),
                   [=](uint32_t a, uint32_t b, uint32_t c) { return fref::fma(a, b, c, rr, ftz, false); }});
    }
  for (int r = 0; r < 4; ++r)
    for (bool ftz : {false, true}) {
      const std::string m = std::string(".") + kR[r] + (ftz ? ".ftz" : "");
      const Rnd rr = kRnd[r];
      v.push_back({"div" + m, fres("div" + m + ".f32 %f4, %f1, %f2;"),
                   [=](uint32_t a, uint32_t b, uint32_t) { return fref::div(a, b, rr, ftz, false); }});
      v.push_back({"rcp" + m, fres("rcp" + m + ".f32 %f4, %f1;"),
                   [=](uint32_t a, uint32_t, uint32_t) { return fref::div(0x3F800000u, a, rr, ftz, false); }});
      v.push_back({"sqrt" + m, fres("sqrt" + m + ".f32 %f4, %f1;"),
                   [=](uint32_t a, uint32_t, uint32_t) { return fref::sqrt(a, rr, ftz); }});
    }
  v.push_back({"div.full", fres("div.full.f32 %f4, %f1, %f2;"),
               [](uint32_t a, uint32_t b, uint32_t) { return fref::div(a, b, Rnd::Rn, false, false); }});
  v.push_back({"div.approx", fres("div.approx.f32 %f4, %f1, %f2;"), [](uint32_t a, uint32_t b, uint32_t) {
                 const uint32_t ab = b & 0x7FFFFFFFu, aa = a & 0x7FFFFFFFu;
                 if (ab > 0x7E800000u && ab < 0x7F800000u && aa <= 0x7F800000u)
                   return aa == 0x7F800000u ? 0x7FFFFFFFu : (a ^ b) & 0x80000000u;
                 return fref::div(a, b, Rnd::Rn, false, false);
               }});
  v.push_back({"rsqrt.approx.ftz", fres("rsqrt.approx.ftz.f32 %f4, %f1;"), [](uint32_t a, uint32_t, uint32_t) {
                 return fref::div(0x3F800000u, fref::sqrt(a, Rnd::Rn, true), Rnd::Rn, true, false);
               }});
  for (bool ftz : {false, true})
    v.push_back({std::string("ex2.approx") + (ftz ? ".ftz" : ""),
                 fres(std::string("ex2.approx") + (ftz ? ".ftz" : "") + ".f32 %f4, %f1;"),
                 [=](uint32_t a, uint32_t, uint32_t) { return fref::ex2(a, ftz); }});
  for (bool ftz : {false, true}) {
    const std::string m = ftz ? ".ftz" : "";
    v.push_back({"lg2.approx" + m, fres("lg2.approx" + m + ".f32 %f4, %f1;"),
                 [=](uint32_t a, uint32_t, uint32_t) { return fref::lg2(a, ftz); }});
    v.push_back({"sin.approx" + m, fres("sin.approx" + m + ".f32 %f4, %f1;"),
                 [=](uint32_t a, uint32_t, uint32_t) { return fref::sin(a, ftz); }});
    v.push_back({"cos.approx" + m, fres("cos.approx" + m + ".f32 %f4, %f1;"),
                 [=](uint32_t a, uint32_t, uint32_t) { return fref::cos(a, ftz); }});
    v.push_back({"tanh.approx" + m, fres("tanh.approx" + m + ".f32 %f4, %f1;"),
                 [=](uint32_t a, uint32_t, uint32_t) { return fref::tanh(a, ftz); }});
  }
  // binary16: conversions and .f16/.f16x2 arithmetic (each word two halves).
  auto halves = [](uint32_t (*f)(uint32_t, uint32_t, uint32_t), uint32_t a, uint32_t b, uint32_t c) {
    return f(a & 0xFFFF, b & 0xFFFF, c & 0xFFFF) | f(a >> 16, b >> 16, c >> 16) << 16;
  };
  for (int r = 0; r < 4; ++r) {
    const Rnd rr = kRnd[r];
    v.push_back({std::string("cvt.") + kR[r] + ".f16.f32",
                 "  .reg .f16 %h<4>;\n  cvt." + std::string(kR[r]) + ".f16.f32 %h1, %f1;\n  mov.b32 %r20, {%h1, %h1};",
                 [=](uint32_t a, uint32_t, uint32_t) { return fref::f16_from_f32(a, rr) * 0x10001u; }});
  }
  v.push_back({"cvt.rn.f16x2.f32", "  cvt.rn.f16x2.f32 %r20, %f1, %f2;",
               [](uint32_t a, uint32_t b, uint32_t) { return fref::f16_from_f32(a, Rnd::Rn) << 16 | fref::f16_from_f32(b, Rnd::Rn); }});
  v.push_back({"cvt.f32.f16", "  .reg .f16 %h<4>;\n  mov.b32 {%h1, %h2}, %r11;\n  cvt.f32.f16 %f4, %h2;\n  mov.b32 %r20, %f4;",
               [](uint32_t a, uint32_t, uint32_t) { return fref::f32_from_f16(a >> 16); }});
  v.push_back({"add.rn.f16x2", "  add.rn.f16x2 %r20, %r11, %r12;",
               [=](uint32_t a, uint32_t b, uint32_t c) {
                 return halves([](uint32_t x, uint32_t y, uint32_t) { return fref::add16(x, y); }, a, b, c);
               }});
  v.push_back({"sub.f16x2", "  sub.f16x2 %r20, %r11, %r12;", [=](uint32_t a, uint32_t b, uint32_t c) {
                 return halves([](uint32_t x, uint32_t y, uint32_t) { return fref::sub16(x, y); }, a, b, c);
               }});
  v.push_back({"mul.f16x2", "  mul.f16x2 %r20, %r11, %r12;", [=](uint32_t a, uint32_t b, uint32_t c) {
                 return halves([](uint32_t x, uint32_t y, uint32_t) { return fref::mul16(x, y); }, a, b, c);
               }});
  v.push_back({"fma.rn.f16x2", "  fma.rn.f16x2 %r20, %r11, %r12, %r13;", [=](uint32_t a, uint32_t b, uint32_t c) {
                 return halves([](uint32_t x, uint32_t y, uint32_t z) { return fref::fma16(x, y, z); }, a, b, c);
               }});
  v.push_back({"fma.rn.f16",
               "  .reg .f16 %h<8>;\n  mov.b32 {%h1, %h2}, %r11;\n  mov.b32 {%h3, %h4}, %r12;\n  mov.b32 {%h5, %h6}, %r13;\n"
               "  fma.rn.f16 %h7, %h2, %h3, %h5;\n  mov.b32 %r20, {%h7, %h7};",
               [](uint32_t a, uint32_t b, uint32_t c) { return fref::fma16(a >> 16, b & 0xFFFF, c & 0xFFFF) * 0x10001u; }});
  // f16 with .ftz (inputs and results flushed, then .sat), ex2/tanh.approx on
  // f16 and f16x2 (docs/isa.md section 11.1), over pairs of halves (kind 3).
  auto ftz16 = [](uint32_t (*f)(uint32_t, uint32_t, uint32_t), bool sat) {
    return [=](uint32_t a, uint32_t b, uint32_t c) {
      auto one = [&](uint32_t x, uint32_t y, uint32_t z) {
        uint32_t h = fref::flush16(f(fref::flush16(x, true), fref::flush16(y, true), fref::flush16(z, true)), true);
        return sat ? ((h & 0x7FFF) > 0x7C00 || (h & 0x8000) ? 0u : std::min(h, 0x3C00u)) : h;
      };
      return one(a & 0xFFFF, b & 0xFFFF, c & 0xFFFF) | one(a >> 16, b >> 16, c >> 16) << 16;
    };
  };
  v.push_back({"add.rn.ftz.f16x2", "  add.rn.ftz.f16x2 %r20, %r11, %r12;",
               ftz16([](uint32_t x, uint32_t y, uint32_t) { return fref::add16(x, y); }, false), 3});
  v.push_back({"sub.ftz.f16x2", "  sub.ftz.f16x2 %r20, %r11, %r12;",
               ftz16([](uint32_t x, uint32_t y, uint32_t) { return fref::sub16(x, y); }, false), 3});
  v.push_back({"mul.rn.ftz.sat.f16x2", "  mul.rn.ftz.sat.f16x2 %r20, %r11, %r12;",
               ftz16([](uint32_t x, uint32_t y, uint32_t) { return fref::mul16(x, y); }, true), 3});
  v.push_back({"fma.rn.ftz.f16x2", "  fma.rn.ftz.f16x2 %r20, %r11, %r12, %r13;",
               ftz16([](uint32_t x, uint32_t y, uint32_t z) { return fref::fma16(x, y, z); }, false), 3});
  v.push_back({"fma.rn.ftz.sat.f16",
               "  .reg .f16 %h<8>;\n  mov.b32 {%h1, %h2}, %r11;\n  mov.b32 {%h3, %h4}, %r12;\n  mov.b32 {%h5, %h6}, %r13;\n"
               "  fma.rn.ftz.sat.f16 %h7, %h1, %h3, %h5;\n  mov.b32 %r20, {%h7, %h7};",
               [=](uint32_t a, uint32_t b, uint32_t c) {
                 const uint32_t lo = ftz16([](uint32_t x, uint32_t y, uint32_t z) { return fref::fma16(x, y, z); }, true)(a, b, c);
                 return (lo & 0xFFFF) * 0x10001u;
               },
               3});
  for (bool ftz : {false, true}) {
    const std::string m = ftz ? ".ftz" : "";
    v.push_back({"ex2.approx" + m + ".f16x2", "  ex2.approx" + m + ".f16x2 %r20, %r11;",
                 [=](uint32_t a, uint32_t, uint32_t) { return fref::ex2_16(a & 0xFFFF, ftz) | fref::ex2_16(a >> 16, ftz) << 16; },
                 3});
    v.push_back({"tanh.approx" + m + ".f16x2", "  tanh.approx" + m + ".f16x2 %r20, %r11;",
                 [=](uint32_t a, uint32_t, uint32_t) { return fref::tanh16(a & 0xFFFF, ftz) | fref::tanh16(a >> 16, ftz) << 16; },
                 3});
  }
  v.push_back({"ex2.approx.f16", "  .reg .f16 %h<4>;\n  mov.b32 {%h1, %h2}, %r11;\n  ex2.approx.f16 %h3, %h2;\n  mov.b32 %r20, {%h3, %h3};",
               [](uint32_t a, uint32_t, uint32_t) { return fref::ex2_16(a >> 16, false) * 0x10001u; }, 3});
  v.push_back({"tanh.approx.f16", "  .reg .f16 %h<4>;\n  mov.b32 {%h1, %h2}, %r11;\n  tanh.approx.f16 %h3, %h1;\n  mov.b32 %r20, {%h3, %h3};",
               [](uint32_t a, uint32_t, uint32_t) { return fref::tanh16(a & 0xFFFF, false) * 0x10001u; }, 3});
  // bfloat16: conversions (every rounding) and .bf16/.bf16x2 arithmetic.
  for (int r = 0; r < 4; ++r) {
    const Rnd rr = kRnd[r];
    v.push_back({std::string("cvt.") + kR[r] + ".bf16.f32",
                 "  .reg .b16 %h<4>;\n  cvt." + std::string(kR[r]) + ".bf16.f32 %h1, %f1;\n  mov.b32 %r20, {%h1, %h1};",
                 [=](uint32_t a, uint32_t, uint32_t) { return fref::bf16_from_f32(a, rr) * 0x10001u; }});
    v.push_back({std::string("cvt.") + kR[r] + ".bf16x2.f32",
                 "  cvt." + std::string(kR[r]) + ".bf16x2.f32 %r20, %f1, %f2;",
                 [=](uint32_t a, uint32_t b, uint32_t) { return fref::bf16_from_f32(a, rr) << 16 | fref::bf16_from_f32(b, rr); }});
  }
  v.push_back({"cvt.f32.bf16", "  .reg .b16 %h<4>;\n  mov.b32 {%h1, %h2}, %r11;\n  cvt.f32.bf16 %f4, %h2;\n  mov.b32 %r20, %f4;",
               [](uint32_t a, uint32_t, uint32_t) { return fref::f32_from_bf16(a >> 16); }});
  v.push_back({"add.rn.bf16x2", "  add.rn.bf16x2 %r20, %r11, %r12;", [=](uint32_t a, uint32_t b, uint32_t c) {
                 return halves([](uint32_t x, uint32_t y, uint32_t) { return fref::add_bf16(x, y); }, a, b, c);
               }});
  v.push_back({"sub.rn.bf16x2", "  sub.rn.bf16x2 %r20, %r11, %r12;", [=](uint32_t a, uint32_t b, uint32_t c) {
                 return halves([](uint32_t x, uint32_t y, uint32_t) { return fref::sub_bf16(x, y); }, a, b, c);
               }});
  v.push_back({"mul.rn.bf16x2", "  mul.rn.bf16x2 %r20, %r11, %r12;", [=](uint32_t a, uint32_t b, uint32_t c) {
                 return halves([](uint32_t x, uint32_t y, uint32_t) { return fref::mul_bf16(x, y); }, a, b, c);
               }});
  v.push_back({"fma.rn.bf16x2", "  fma.rn.bf16x2 %r20, %r11, %r12, %r13;", [=](uint32_t a, uint32_t b, uint32_t c) {
                 return halves([](uint32_t x, uint32_t y, uint32_t z) { return fref::fma_bf16(x, y, z); }, a, b, c);
               }});
  v.push_back({"fma.rn.bf16 (inline-asm form)",
               "  .reg .b16 %h<8>;\n  mov.b32 {%h1, %h2}, %r11;\n  mov.b32 {%h3, %h4}, %r12;\n"
               "  { .reg .b16 c;\n  mov.b16 c, 0x8000U;\n  fma.rn.bf16 %h7, %h2, %h3, c; }\n  mov.b32 %r20, {%h7, %h7};",
               [](uint32_t a, uint32_t b, uint32_t) { return fref::fma_bf16(a >> 16, b & 0xFFFF, 0x8000) * 0x10001u; }});
  v.push_back({"sqrt.approx", fres("sqrt.approx.f32 %f4, %f1;"),
               [](uint32_t a, uint32_t, uint32_t) { return fref::sqrt(a, Rnd::Rn, false); }});
  v.push_back({"add.f32 (no rounding suffix)", fres("add.f32 %f4, %f1, %f2;"),
               [](uint32_t a, uint32_t b, uint32_t) { return fref::add(a, b, Rnd::Rn, false, false); }});
  v.push_back({"mul.ftz.sat", fres("mul.rn.ftz.sat.f32 %f4, %f1, %f2;"),
               [](uint32_t a, uint32_t b, uint32_t) { return fref::mul(a, b, Rnd::Rn, true, true); }});
  v.push_back({"mad.rn.sat", fres("mad.rn.sat.f32 %f4, %f1, %f2, %f3;"),
               [](uint32_t a, uint32_t b, uint32_t c) { return fref::fma(a, b, c, Rnd::Rn, false, true); }});
  v.push_back({"add literal", fres("add.rn.f32 %f4, %f1, 0f3F800000;"),
               [](uint32_t a, uint32_t, uint32_t) { return fref::add(a, 0x3F800000u, Rnd::Rn, false, false); }});
  for (bool ftz : {false, true}) {
    const std::string m = ftz ? ".ftz" : "";
    v.push_back({"min" + m, fres("min" + m + ".f32 %f4, %f1, %f2;"),
                 [=](uint32_t a, uint32_t b, uint32_t) { return fref::min(a, b, ftz); }});
    v.push_back({"max" + m, fres("max" + m + ".f32 %f4, %f1, %f2;"),
                 [=](uint32_t a, uint32_t b, uint32_t) { return fref::max(a, b, ftz); }});
    v.push_back({"abs" + m, fres("abs" + m + ".f32 %f4, %f1;"),
                 [=](uint32_t a, uint32_t, uint32_t) { return fref::abs(a, ftz); }});
    v.push_back({"neg" + m, fres("neg" + m + ".f32 %f4, %f1;"),
                 [=](uint32_t a, uint32_t, uint32_t) { return fref::neg(a, ftz); }});
  }
  v.push_back({"copysign", fres("copysign.f32 %f4, %f1, %f2;"),
               [](uint32_t a, uint32_t b, uint32_t) { return fref::copysign(a, b); }});
  const char* tp[] = {"", "finite", "infinite", "number", "notanumber", "normal", "subnormal"};
  for (int k = 1; k <= 6; ++k)
    v.push_back({std::string("testp.") + tp[k],
                 std::string("  testp.") + tp[k] + ".f32 %p2, %f1;\n  selp.u32 %r20, 1, 0, %p2;",
                 [=](uint32_t a, uint32_t, uint32_t) { return uint32_t(fref::testp(ptx::TestpKind(k), a)); }});
  using ptx::Cmp;
  const std::pair<const char*, Cmp> cmps[] = {
      {"eq", Cmp::Eq},   {"ne", Cmp::Ne},   {"lt", Cmp::Lt},   {"le", Cmp::Le},   {"gt", Cmp::Gt},
      {"ge", Cmp::Ge},   {"equ", Cmp::Equ}, {"neu", Cmp::Neu}, {"ltu", Cmp::Ltu}, {"leu", Cmp::Leu},
      {"gtu", Cmp::Gtu}, {"geu", Cmp::Geu}, {"num", Cmp::Num}, {"nan", Cmp::Nan}};
  for (auto [name, c] : cmps)
    for (bool ftz : {false, true}) {
      const std::string m = ftz ? ".ftz" : "";
      v.push_back({std::string("setp.") + name + m,
                   std::string("  setp.") + name + m + ".f32 %p2|%p3, %f1, %f2;\n  selp.u32 %r20, 1, 0, %p2;\n"
                                                        "  selp.u32 %r21, 2, 0, %p3;\n  or.b32 %r20, %r20, %r21;",
                   [=](uint32_t a, uint32_t b, uint32_t) {
                     bool x = fref::compare(c, a, b, ftz);
                     return uint32_t(x) | uint32_t(!x) * 2;
                   }});
    }
  // setp.CmpOp{.ftz}.f16x2 p|q: the low halves' comparison in p, the high
  // halves' in q (bits 0 and 1), over pairs of halves; set and neg with .ftz.
  auto cmp16 = [](Cmp c, uint32_t x, uint32_t y, bool ftz) {
    return fref::compare(c, fref::f32_from_f16(fref::flush16(x, ftz)), fref::f32_from_f16(fref::flush16(y, ftz)), false);
  };
  for (auto [name, c] : cmps)
    for (bool ftz : {false, true}) {
      const std::string m = ftz ? ".ftz" : "";
      v.push_back({std::string("setp.") + name + m + ".f16x2",
                   std::string("  setp.") + name + m + ".f16x2 %p2|%p3, %r11, %r12;\n  selp.u32 %r20, 1, 0, %p2;\n"
                                                        "  selp.u32 %r21, 2, 0, %p3;\n  or.b32 %r20, %r20, %r21;",
                   [=](uint32_t a, uint32_t b, uint32_t) {
                     return uint32_t(cmp16(c, a & 0xFFFF, b & 0xFFFF, ftz)) | uint32_t(cmp16(c, a >> 16, b >> 16, ftz)) * 2;
                   },
                   3});
    }
  v.push_back({"setp.ltu.xor.ftz.f16x2",
               "  setp.ne.u32 %p4, %r13, 0;\n  setp.ltu.xor.ftz.f16x2 %p2|%p3, %r11, %r12, !%p4;\n  selp.u32 %r20, 1, 0, %p2;\n"
               "  selp.u32 %r21, 2, 0, %p3;\n  or.b32 %r20, %r20, %r21;",
               [=](uint32_t a, uint32_t b, uint32_t c) {
                 const bool k = c == 0;
                 return uint32_t(cmp16(Cmp::Ltu, a & 0xFFFF, b & 0xFFFF, true) != k) |
                        uint32_t(cmp16(Cmp::Ltu, a >> 16, b >> 16, true) != k) * 2;
               },
               3});
  v.push_back({"setp.gt.f16 p|q",
               "  .reg .f16 %h<4>;\n  mov.b32 {%h1, %h2}, %r11;\n  setp.gt.f16 %p2|%p3, %h2, %h1;\n"
               "  selp.u32 %r20, 1, 0, %p2;\n  selp.u32 %r21, 2, 0, %p3;\n  or.b32 %r20, %r20, %r21;",
               [=](uint32_t a, uint32_t, uint32_t) {
                 const bool x = cmp16(Cmp::Gt, a >> 16, a & 0xFFFF, false);
                 return uint32_t(x) | uint32_t(!x) * 2;
               },
               3});
  v.push_back({"setp.gt.ftz.f16 p|q",
               "  .reg .f16 %h<4>;\n  mov.b32 {%h1, %h2}, %r11;\n  setp.gt.ftz.f16 %p2|%p3, %h2, %h1;\n"
               "  selp.u32 %r20, 1, 0, %p2;\n  selp.u32 %r21, 2, 0, %p3;\n  or.b32 %r20, %r20, %r21;",
               [=](uint32_t a, uint32_t, uint32_t) {
                 const bool x = cmp16(Cmp::Gt, a >> 16, a & 0xFFFF, true);
                 return uint32_t(x) | uint32_t(!x) * 2;
               },
               3});
  v.push_back({"set.le.ftz.f16x2.f16x2", "  set.le.ftz.f16x2.f16x2 %r20, %r11, %r12;",
               [=](uint32_t a, uint32_t b, uint32_t) {
                 return (cmp16(Cmp::Le, a & 0xFFFF, b & 0xFFFF, true) ? 0x3C00u : 0u) |
                        (cmp16(Cmp::Le, a >> 16, b >> 16, true) ? 0x3C000000u : 0u);
               },
               3});
  v.push_back({"set.equ.ftz.u32.f16",
               "  .reg .f16 %h<4>;\n  mov.b32 {%h1, %h2}, %r11;\n  set.equ.ftz.u32.f16 %r20, %h1, %h2;",
               [=](uint32_t a, uint32_t, uint32_t) { return cmp16(Cmp::Equ, a & 0xFFFF, a >> 16, true) ? ~0u : 0u; }, 3});
  v.push_back({"neg.ftz.f16x2 abs.ftz.f16x2", "  neg.ftz.f16x2 %r21, %r11;\n  abs.ftz.f16x2 %r22, %r12;\n  xor.b32 %r20, %r21, %r22;",
               [=](uint32_t a, uint32_t b, uint32_t) {
                 auto one = [](uint32_t h, bool neg) {
                   h = fref::flush16(h, true);
                   if ((h & 0x7FFF) > 0x7C00) return 0x7FFFu;
                   return neg ? h ^ 0x8000u : h & 0x7FFFu;
                 };
                 return (one(a & 0xFFFF, true) | one(a >> 16, true) << 16) ^ (one(b & 0xFFFF, false) | one(b >> 16, false) << 16);
               },
               3});
  v.push_back({"setp.and", "  setp.lt.f32 %p3, %f3, %f1;\n  setp.gtu.and.f32 %p2, %f1, %f2, %p3;\n  selp.u32 %r20, 1, 0, %p2;",
               [](uint32_t a, uint32_t b, uint32_t c) {
                 return uint32_t(fref::compare(Cmp::Gtu, a, b, false) && fref::compare(Cmp::Lt, c, a, false));
               }});
  v.push_back({"set.f32", fres("set.le.f32.f32 %f4, %f1, %f2;"),
               [](uint32_t a, uint32_t b, uint32_t) { return fref::compare(Cmp::Le, a, b, false) ? 0x3F800000u : 0u; }});
  v.push_back({"set.u32", "  set.nan.u32.f32 %r20, %f1, %f2;",
               [](uint32_t a, uint32_t b, uint32_t) { return fref::compare(Cmp::Nan, a, b, false) ? ~0u : 0u; }});
  v.push_back({"selp.f32", fres("setp.lt.u32 %p2, %r13, %r11;\n  selp.f32 %f4, %f1, %f2, %p2;"),
               [](uint32_t a, uint32_t b, uint32_t c) { return c < a ? a : b; }});
  v.push_back({"slct.f32", "  slct.u32.f32 %r20, %r11, %r12, %f3;",
               [](uint32_t a, uint32_t b, uint32_t c) { return fref::compare(Cmp::Ge, c, 0, false) ? a : b; }});
  for (int r = 0; r < 4; ++r) {
    const std::string ri = std::string(".") + kR[r] + "i", rn = std::string(".") + kR[r];
    const Rnd rr = kRnd[r], rri = kRndI[r];
    for (const char* t : {"s32", "u32", "s16", "u16", "s8", "u8"}) {
      const bool sgn = t[0] == 's';
      const unsigned bits = std::atoi(t + 1);
      const std::string ty = bits == 32 ? t : (sgn ? "s32" : "u32");
      v.push_back({std::string("cvt") + ri + "." + t + ".f32",
                   bits == 32 ? std::string("  cvt") + ri + "." + t + ".f32 %r20, %f1;"
                              : std::string("  .reg .") + t + " %h<2>;\n  cvt" + ri + "." + t + ".f32 %h1, %f1;\n  cvt." +
                                    ty + "." + t + " %r20, %h1;",
                   [=](uint32_t a, uint32_t, uint32_t) {
                     uint64_t x = fref::to_int(a, sgn, bits, rri, false);
                     if (sgn && bits < 32 && (x >> (bits - 1)) & 1) x |= ~uint64_t(0) << bits;
                     return uint32_t(x);
                   }});
    }
    v.push_back({std::string("cvt") + ri + ".ftz.s32.f32", std::string("  cvt") + ri + ".ftz.s32.f32 %r20, %f1;",
                 [=](uint32_t a, uint32_t, uint32_t) { return uint32_t(fref::to_int(a, true, 32, rri, true)); }});
    v.push_back({std::string("cvt") + ri + ".f32.f32", fres("cvt" + ri + ".f32.f32 %f4, %f1;"),
                 [=](uint32_t a, uint32_t, uint32_t) { return fref::round_int(a, rri, false, false); }});
    for (const char* t : {"s32", "u32"})
      v.push_back({std::string("cvt") + rn + ".f32." + t, fres("cvt" + rn + ".f32." + t + " %f4, %r11;"),
                   [=](uint32_t a, uint32_t, uint32_t) { return fref::from_int(a, t[0] == 's', 32, rr); },
                   1});
    for (const char* t : {"s64", "u64"})
      v.push_back({std::string("cvt") + rn + ".f32." + t,
                   fres(std::string("mov.b64 %rd10, {%r11, %r12};\n  cvt") + rn + ".f32." + t + " %f4, %rd10;"),
                   [=](uint32_t a, uint32_t b, uint32_t) {
                     return fref::from_int(uint64_t(b) << 32 | a, t[0] == 's', 64, rr);
                   },
                   1});
  }
  for (int r = 0; r < 4; ++r) {
    const std::string ri = std::string(".") + kR[r] + "i";
    const Rnd rri = kRndI[r], rr = kRnd[r];
    for (const char* t : {"s64", "u64"})
      v.push_back({std::string("cvt") + ri + "." + t + ".f32",
                   std::string("  cvt") + ri + "." + t + ".f32 %rd10, %f1;\n  mov.b64 {%r20, %r21}, %rd10;\n"
                                                 "  xor.b32 %r20, %r20, %r21;",
                   [=](uint32_t a, uint32_t, uint32_t) {
                     uint64_t x = fref::to_int(a, t[0] == 's', 64, rri, false);
                     return uint32_t(x) ^ uint32_t(x >> 32);
                   }});
    v.push_back({std::string("cvt.") + kR[r] + ".f32.f64",
                 "  .reg .f64 %fd<2>;\n  mov.b64 %fd1, {%r11, %r12};\n  cvt." + std::string(kR[r]) +
                     ".f32.f64 %f4, %fd1;\n  mov.b32 %r20, %f4;",
                 [=](uint32_t a, uint32_t b, uint32_t) { return fref::from_f64(uint64_t(b) << 32 | a, rr, false, false); },
                 1});
  }
  v.push_back({"cvt.f64.f32", "  .reg .f64 %fd<2>;\n  cvt.f64.f32 %fd1, %f1;\n  mov.b64 {%r20, %r21}, %fd1;\n"
                              "  xor.b32 %r20, %r20, %r21;",
               [](uint32_t a, uint32_t, uint32_t) {
                 uint64_t x = fref::to_f64(a, false);
                 return uint32_t(x) ^ uint32_t(x >> 32);
               }});
  // binary64: x = {a, b}, y = {c, b ^ (c & 0x80F00000)} (y's exponent near x's,
  // either sign); the result folded to one word, lo + 3 hi.
  const std::string f64in =
      "  .reg .f64 %fd<4>;\n  and.b32 %r14, %r13, -2131755008;\n  xor.b32 %r14, %r14, %r12;\n"
      "  mov.b64 %fd1, {%r11, %r12};\n  mov.b64 %fd2, {%r13, %r14};\n";
  const std::string f64out = "\n  mov.b64 {%r20, %r21}, %fd3;\n  mad.lo.s32 %r20, %r21, 3, %r20;";
  auto y64 = [](uint32_t b, uint32_t c) { return uint64_t(b ^ (c & 0x80F00000u)) << 32 | c; };
  auto fold = [](uint64_t x) { return uint32_t(x) + 3 * uint32_t(x >> 32); };
  for (int r = 0; r < 4; ++r) {
    const Rnd rr = kRnd[r];
    const std::string m = std::string(".") + kR[r];
    v.push_back({"add" + m + ".f64", f64in + "  add" + m + ".f64 %fd3, %fd1, %fd2;" + f64out,
                 [=](uint32_t a, uint32_t b, uint32_t c) { return fold(fref::add64(uint64_t(b) << 32 | a, y64(b, c), rr)); },
                 2});
    v.push_back({"sub" + m + ".f64", f64in + "  sub" + m + ".f64 %fd3, %fd1, %fd2;" + f64out,
                 [=](uint32_t a, uint32_t b, uint32_t c) { return fold(fref::sub64(uint64_t(b) << 32 | a, y64(b, c), rr)); },
                 2});
    v.push_back({"mul" + m + ".f64", f64in + "  mul" + m + ".f64 %fd3, %fd1, %fd2;" + f64out,
                 [=](uint32_t a, uint32_t b, uint32_t c) { return fold(fref::mul64(uint64_t(b) << 32 | a, y64(b, c), rr)); },
                 2});
    v.push_back({"div" + m + ".f64", f64in + "  div" + m + ".f64 %fd3, %fd1, %fd2;" + f64out,
                 [=](uint32_t a, uint32_t b, uint32_t c) { return fold(fref::div64(uint64_t(b) << 32 | a, y64(b, c), rr)); },
                 2, false});
    v.push_back({"rcp" + m + ".f64", f64in + "  rcp" + m + ".f64 %fd3, %fd1;" + f64out,
                 [=](uint32_t a, uint32_t b, uint32_t) {
                   return fold(fref::div64(0x3FF0000000000000ull, uint64_t(b) << 32 | a, rr));
                 },
                 2, false});
    v.push_back({"sqrt" + m + ".f64", f64in + "  sqrt" + m + ".f64 %fd3, %fd1;" + f64out,
                 [=](uint32_t a, uint32_t b, uint32_t) { return fold(fref::sqrt64(uint64_t(b) << 32 | a, rr)); }, 2,
                 false});
    v.push_back({"fma" + m + ".f64 x*y+x", f64in + "  fma" + m + ".f64 %fd3, %fd1, %fd2, %fd1;" + f64out,
                 [=](uint32_t a, uint32_t b, uint32_t c) {
                   const uint64_t x = uint64_t(b) << 32 | a;
                   return fold(fref::fma64(x, y64(b, c), x, rr));
                 },
                 2});
    v.push_back({"fma" + m + ".f64 x*x-y", f64in + "  neg.f64 %fd2, %fd2;\n  fma" + m + ".f64 %fd3, %fd1, %fd1, %fd2;" + f64out,
                 [=](uint32_t a, uint32_t b, uint32_t c) {
                   const uint64_t x = uint64_t(b) << 32 | a;
                   return fold(fref::fma64(x, x, y64(b, c) ^ (uint64_t(1) << 63), rr));
                 },
                 2});
  }
  v.push_back({"rcp.approx.ftz.f64", f64in + "  rcp.approx.ftz.f64 %fd3, %fd1;" + f64out,
               [=](uint32_t a, uint32_t b, uint32_t) { return fold(fref::rcp_approx64(uint64_t(b) << 32 | a)); }, 2});
  v.push_back({"rsqrt.approx.ftz.f64", f64in + "  rsqrt.approx.ftz.f64 %fd3, %fd1;" + f64out,
               [=](uint32_t a, uint32_t b, uint32_t) { return fold(fref::rsqrt_approx64(uint64_t(b) << 32 | a)); }, 2});
  for (int r = 0; r < 4; ++r) {
    const Rnd rr = kRnd[r], rri = kRndI[r];
    const std::string m = std::string(".") + kR[r], mi = m + "i";
    for (const char* t : {"s32", "u32", "s64", "u64"}) {
      const bool sgn = t[0] == 's';
      const unsigned bits = std::atoi(t + 1);
      const std::string dreg = bits == 32 ? "%r20" : "%rdi";
      v.push_back({"cvt" + mi + "." + t + ".f64",
                   f64in + "  .reg .b64 %rdi;\n  cvt" + mi + "." + t + ".f64 " + dreg + ", %fd1;\n" +
                       (bits == 32 ? std::string("  mov.b32 %r21, 0;") : std::string("  mov.b64 {%r20, %r21}, %rdi;")) +
                       "\n  mad.lo.s32 %r20, %r21, 3, %r20;",
                   [=](uint32_t a, uint32_t b, uint32_t) {
                     uint64_t x = fref::f64_to_int(uint64_t(b) << 32 | a, sgn, bits, rri);
                     return fold(x);
                   },
                   2});
      v.push_back({"cvt" + m + ".f64." + t,
                   f64in + "  .reg .b64 %rdi;\n  mov.b64 %rdi, %fd1;\n  cvt" + m + ".f64." + t + " %fd3, " +
                       (bits == 32 ? "%r11" : "%rdi") + ";" + f64out,
                   [=](uint32_t a, uint32_t b, uint32_t) {
                     return fold(fref::int_to_f64(bits == 32 ? a : uint64_t(b) << 32 | a, sgn, bits, rr));
                   },
                   2});
    }
    v.push_back({"cvt" + mi + ".f64.f64", f64in + "  cvt" + mi + ".f64.f64 %fd3, %fd1;" + f64out,
                 [=](uint32_t a, uint32_t b, uint32_t) { return fold(fref::round_int_f64(uint64_t(b) << 32 | a, rri)); }, 2});
  }
  // cvt between f16 and every integer or f64, and between f64 and the 8- and
  // 16-bit integers (docs/isa.md section 11.1): the lowering goes through
  // f32; the reference rounds the exact value once (fref::f16_from_int ...).
  // f16 operands are the high halves of random words (kind 1).
  const std::string h16 = "  .reg .f16 %hh<4>;\n  mov.b32 {%hh1, %hh2}, %r11;\n";
  auto widen = [](uint64_t x, bool sgn, unsigned bits) {
    if (sgn && bits < 32 && (x >> (bits - 1)) & 1) x |= ~uint64_t(0) << bits;
    return uint32_t(x);
  };
  for (int r = 0; r < 4; ++r) {
    const Rnd rr = kRnd[r], rri = kRndI[r];
    const std::string m = std::string(".") + kR[r], mi = m + "i";
    for (const char* t : {"s8", "u8", "s16", "u16", "s32", "u32", "s64", "u64"}) {
      const bool sgn = t[0] == 's';
      const unsigned bits = std::atoi(t + 1);
      const std::string wide = sgn ? "s32" : "u32";
      std::string to = h16;
      if (bits == 64)
        to += "  .reg .b64 %rdh;\n  cvt" + mi + "." + t + ".f16 %rdh, %hh2;\n  mov.b64 {%r20, %r21}, %rdh;\n"
              "  xor.b32 %r20, %r20, %r21;";
      else if (bits == 32)
        to += "  cvt" + mi + "." + t + ".f16 %r20, %hh2;";
      else
        to += std::string("  .reg .") + t + " %ih;\n  cvt" + mi + "." + t + ".f16 %ih, %hh2;\n  cvt." + wide + "." + t +
              " %r20, %ih;";
      v.push_back({"cvt" + mi + "." + t + ".f16", to,
                   [=](uint32_t a, uint32_t, uint32_t) {
                     const uint64_t x = fref::int_from_f16(a >> 16, sgn, bits, rri);
                     return bits == 64 ? uint32_t(x) ^ uint32_t(x >> 32) : widen(x, sgn, bits);
                   },
                   1});
      std::string from = h16, src = "%r11";
      if (bits == 64) from += "  .reg .b64 %rdh;\n  mov.b64 %rdh, {%r11, %r12};\n", src = "%rdh";
      if (bits < 32) from += std::string("  .reg .") + t + " %ih;\n  cvt." + t + ".u32 %ih, %r11;\n", src = "%ih";
      for (bool sat : {false, true}) {
        if (sat && r != 0) continue;
        v.push_back({"cvt" + m + (sat ? ".sat" : "") + ".f16." + t,
                     from + "  cvt" + m + (sat ? ".sat" : "") + ".f16." + t + " %hh3, " + src +
                         ";\n  mov.b32 %r20, {%hh3, %hh3};",
                     [=](uint32_t a, uint32_t b, uint32_t) {
                       uint32_t h = fref::f16_from_int(bits == 64 ? uint64_t(b) << 32 | a : a, sgn, bits, rr);
                       if (sat) h = (h & 0x8000u) ? 0u : std::min(h, 0x3C00u);
                       return h * 0x10001u;
                     },
                     1});
      }
      if (bits >= 32) continue;
      v.push_back({"cvt" + mi + "." + t + ".f64",
                   f64in + std::string("  .reg .") + t + " %ih;\n  cvt" + mi + "." + t + ".f64 %ih, %fd1;\n  cvt." + wide +
                       "." + t + " %r20, %ih;",
                   [=](uint32_t a, uint32_t b, uint32_t) {
                     return widen(fref::f64_to_int(uint64_t(b) << 32 | a, sgn, bits, rri), sgn, bits);
                   },
                   2});
      v.push_back({"cvt" + m + ".f64." + t,
                   f64in + std::string("  .reg .") + t + " %ih;\n  cvt." + t + ".u32 %ih, %r11;\n  cvt" + m + ".f64." +
                       t + " %fd3, %ih;" + f64out,
                   [=](uint32_t a, uint32_t, uint32_t) { return fold(fref::int_to_f64(a, sgn, bits, rr)); }, 2});
    }
    v.push_back({"cvt" + m + ".f16.f64",
                 f64in + "  .reg .f16 %hh<2>;\n  cvt" + m + ".f16.f64 %hh1, %fd1;\n  mov.b32 %r20, {%hh1, %hh1};",
                 [=](uint32_t a, uint32_t b, uint32_t) { return fref::f16_from_f64(uint64_t(b) << 32 | a, rr) * 0x10001u; },
                 2});
  }
  // f16 neg, abs, setp, set and .sat arithmetic (cuda_fp16.h's __hneg,
  // __habs, __heq ..., __heq2_mask ..., __hadd_sat, __hfma_sat at sm_75).
  auto f16v = [](uint32_t h) { return fref::f32_from_f16(h & 0xFFFF); };
  auto sat16 = [](uint32_t h) { return (h & 0x7FFF) > 0x7C00 || (h & 0x8000) ? 0u : std::min(h, 0x3C00u); };
  // neg and abs: the sign bit, a NaN half the canonical 0x7FFF.
  auto nan16 = [](uint32_t h, uint32_t r) { return (h & 0x7FFFu) > 0x7C00u ? 0x7FFFu : r; };
  auto neg16 = [=](uint32_t h) { return nan16(h, h ^ 0x8000u); };
  auto abs16 = [=](uint32_t h) { return nan16(h, h & 0x7FFFu); };
  v.push_back({"neg.f16", h16 + "  neg.f16 %hh3, %hh2;\n  mov.b32 %r20, {%hh3, %hh1};",
               [=](uint32_t a, uint32_t, uint32_t) { return neg16(a >> 16) | (a << 16); }, 1});
  v.push_back({"abs.f16", h16 + "  abs.f16 %hh3, %hh2;\n  mov.b32 %r20, {%hh3, %hh1};",
               [=](uint32_t a, uint32_t, uint32_t) { return abs16(a >> 16) | (a << 16); }, 1});
  v.push_back({"neg.f16x2", "  neg.f16x2 %r20, %r11;",
               [=](uint32_t a, uint32_t, uint32_t) { return neg16(a & 0xFFFF) | neg16(a >> 16) << 16; }, 1});
  v.push_back({"abs.f16x2", "  abs.f16x2 %r20, %r11;",
               [=](uint32_t a, uint32_t, uint32_t) { return abs16(a & 0xFFFF) | abs16(a >> 16) << 16; }, 1});
  const std::pair<const char*, Cmp> cmps16[] = {{"eq", Cmp::Eq}, {"ne", Cmp::Ne}, {"lt", Cmp::Lt}, {"le", Cmp::Le},
                                                {"gt", Cmp::Gt}, {"ge", Cmp::Ge}, {"equ", Cmp::Equ}, {"neu", Cmp::Neu},
                                                {"ltu", Cmp::Ltu}, {"leu", Cmp::Leu}, {"gtu", Cmp::Gtu}, {"geu", Cmp::Geu},
                                                {"num", Cmp::Num}, {"nan", Cmp::Nan}};
  for (const auto& [name, c] : cmps16) {
    const Cmp cc = c;
    // b's high half: a's low half, so that equal and unordered pairs occur.
    v.push_back({std::string("setp.") + name + ".f16",
                 h16 + "  setp." + name + ".f16 %p2, %hh2, %hh1;\n  selp.u32 %r20, 1, 0, %p2;",
                 [=](uint32_t a, uint32_t, uint32_t) { return fref::compare(cc, f16v(a >> 16), f16v(a), false) ? 1u : 0u; },
                 1});
    v.push_back({std::string("set.") + name + ".f16x2.f16x2", std::string("  set.") + name + ".f16x2.f16x2 %r20, %r11, %r12;",
                 [=](uint32_t a, uint32_t b, uint32_t) {
                   return (fref::compare(cc, f16v(a), f16v(b), false) ? 0x3C00u : 0u) |
                          (fref::compare(cc, f16v(a >> 16), f16v(b >> 16), false) ? 0x3C000000u : 0u);
                 },
                 1});
    v.push_back({std::string("set.") + name + ".u32.f16x2", std::string("  set.") + name + ".u32.f16x2 %r20, %r11, %r12;",
                 [=](uint32_t a, uint32_t b, uint32_t) {
                   return (fref::compare(cc, f16v(a), f16v(b), false) ? 0xFFFFu : 0u) |
                          (fref::compare(cc, f16v(a >> 16), f16v(b >> 16), false) ? 0xFFFF0000u : 0u);
                 },
                 1});
  }
  v.push_back({"setp.lt.or.f16 p|q", h16 + "  setp.ne.u32 %p4, %r13, 0;\n  setp.lt.or.f16 %p2|%p3, %hh2, %hh1, %p4;\n"
                                           "  selp.u32 %r20, 1, 0, %p2;\n  selp.u32 %r21, 2, 0, %p3;\n  or.b32 %r20, %r20, %r21;",
               [=](uint32_t a, uint32_t, uint32_t c) {
                 const bool t = fref::compare(Cmp::Lt, f16v(a >> 16), f16v(a), false);
                 return ((t || c) ? 1u : 0u) | ((!t || c) ? 2u : 0u);
               },
               1});
  v.push_back({"set.eq.f16.f16", h16 + "  set.eq.f16.f16 %hh3, %hh2, %hh1;\n  mov.b32 %r20, {%hh3, %hh3};",
               [=](uint32_t a, uint32_t, uint32_t) {
                 return fref::compare(Cmp::Eq, f16v(a >> 16), f16v(a), false) ? 0x3C003C00u : 0u;
               },
               1});
  v.push_back({"set.gtu.and.u32.f16", h16 + "  setp.ne.u32 %p4, %r13, 0;\n  set.gtu.and.u32.f16 %r20, %hh2, %hh1, %p4;",
               [=](uint32_t a, uint32_t, uint32_t c) {
                 return fref::compare(Cmp::Gtu, f16v(a >> 16), f16v(a), false) && c ? ~0u : 0u;
               },
               1});
  v.push_back({"add.sat.f16", h16 + "  add.sat.f16 %hh3, %hh2, %hh1;\n  mov.b32 %r20, {%hh3, %hh3};",
               [=](uint32_t a, uint32_t, uint32_t) { return sat16(fref::add16(a >> 16, a & 0xFFFF)) * 0x10001u; }, 1});
  v.push_back({"fma.rn.sat.f16x2", "  fma.rn.sat.f16x2 %r20, %r11, %r12, %r13;", [=](uint32_t a, uint32_t b, uint32_t c) {
                 return sat16(fref::fma16(a & 0xFFFF, b & 0xFFFF, c & 0xFFFF)) |
                        sat16(fref::fma16(a >> 16, b >> 16, c >> 16)) << 16;
               },
               1});
  v.push_back({"cvt.f64.f16", h16 + "  .reg .f64 %fdh;\n  cvt.f64.f16 %fdh, %hh2;\n  mov.b64 {%r20, %r21}, %fdh;\n"
                                    "  mad.lo.s32 %r20, %r21, 3, %r20;",
               [=](uint32_t a, uint32_t, uint32_t) { return fold(fref::f64_from_f16(a >> 16)); }, 1});
  v.push_back({"min.f64", f64in + "  min.f64 %fd3, %fd1, %fd2;" + f64out,
               [=](uint32_t a, uint32_t b, uint32_t c) { return fold(fref::min64(uint64_t(b) << 32 | a, y64(b, c))); }, 2});
  v.push_back({"max.f64", f64in + "  max.f64 %fd3, %fd1, %fd2;" + f64out,
               [=](uint32_t a, uint32_t b, uint32_t c) { return fold(fref::max64(uint64_t(b) << 32 | a, y64(b, c))); }, 2});
  v.push_back({"neg.f64", f64in + "  neg.f64 %fd3, %fd1;" + f64out,
               [=](uint32_t a, uint32_t b, uint32_t) { return fold((uint64_t(b) << 32 | a) ^ (uint64_t(1) << 63)); }, 2});
  for (auto [name, c] : cmps)
    v.push_back({std::string("setp.") + name + ".f64",
                 f64in + "  setp." + name + ".f64 %p2, %fd1, %fd2;\n  selp.u32 %r20, 1, 0, %p2;",
                 [=](uint32_t a, uint32_t b, uint32_t cc) {
                   return uint32_t(fref::compare64(c, uint64_t(b) << 32 | a, y64(b, cc)));
                 },
                 2});
  v.push_back({"cvt.ftz.sat.f32.f32", fres("cvt.ftz.sat.f32.f32 %f4, %f1;"),
               [](uint32_t a, uint32_t, uint32_t) { return fref::round_int(a, Rnd::None, true, true); }});
  return v;
}

constexpr uint32_t kBatch = 768;  // 3 CTAs of 256 threads; 12 KiB of buffers

// Operands for one batch: every edge pair first, then random ones.
void fill(floattest::Operands& gen, uint64_t batch, int kind, std::vector<uint32_t>& a, std::vector<uint32_t>& b,
          std::vector<uint32_t>& c) {
  const auto& E = floattest::edges();
  for (uint32_t i = 0; i < kBatch; ++i) {
    const uint64_t at = batch * kBatch + i;
    if (kind == 2) {  // doubles: words of f32 edge values and random bits, f64 edges
      static const uint32_t hi[] = {0x7FF00000u, 0x7FF80000u, 0x7FEFFFFFu, 0x00100000u, 0x000FFFFFu, 0,
                                    0x3FF00000u, 0x3CA00000u, 0x43300000u, 0x7FF00001u};
      a[i] = gen.rng()() % 4 ? uint32_t(gen.rng()()) : 0u;
      b[i] = gen.rng()() % 3 ? gen.any() : hi[gen.rng()() % 10] | uint32_t(gen.rng()() % 2) << 31;
      c[i] = gen.rng()() % 4 ? uint32_t(gen.rng()()) : 0u;
      continue;
    }
    if (kind == 3) {  // halves: every pair of edge halves (low halves, then high ones shuffled), then random
      static const std::vector<uint32_t> H = [] {
        std::vector<uint32_t> v;
        for (uint32_t e : {0x0000u, 0x0001u, 0x0002u, 0x03FFu, 0x0400u, 0x0401u, 0x3BFFu, 0x3C00u, 0x3C01u, 0x7BFFu,
                           0x7C00u, 0x7C01u, 0x7E00u, 0x7FFFu})
          for (uint32_t sign : {0u, 0x8000u}) v.push_back(e | sign);
        return v;
      }();
      auto any = [&]() -> uint32_t {
        switch (gen.rng()() % 4) {
          case 0: return H[gen.rng()() % H.size()];
          case 1: return uint32_t(gen.rng()() & 0x83FF);                                          // subnormal
          case 2: return uint32_t(gen.rng()() & 0x83FF) | uint32_t(1 + gen.rng()() % 3) << 10;  // tiny normals
          default: return uint32_t(gen.rng()() & 0xFFFF);
        }
      };
      const uint64_t n = H.size();
      if (at < 2 * n * n) {
        const uint64_t k = at % (n * n);
        const uint32_t x = H[k / n], y = H[k % n], z = H[(k * 7) % n];
        a[i] = at < n * n ? any() << 16 | x : x << 16 | any();
        b[i] = at < n * n ? any() << 16 | y : y << 16 | any();
        c[i] = at < n * n ? any() << 16 | z : z << 16 | any();
      } else {
        a[i] = any() << 16 | any(), b[i] = any() << 16 | any(), c[i] = any() << 16 | any();
      }
      continue;
    }
    if (kind == 1) {  // integers: small, large, every sign
      uint64_t x = gen.rng()() >> (gen.rng()() % 64);
      if (gen.rng()() % 2) x = uint64_t(-int64_t(x));
      a[i] = uint32_t(x), b[i] = uint32_t(x >> 32), c[i] = 0;
      continue;
    }
    if (at < E.size() * E.size()) {
      a[i] = E[at / E.size()], b[i] = E[at % E.size()], c[i] = E[(at * 7) % E.size()];
    } else {
      a[i] = gen.any();
      b[i] = at % 2 ? gen.near(a[i]) : gen.any();
      c[i] = at % 3 ? gen.any() : gen.near(fref::mul(a[i], b[i], Rnd::Rn, false, false));
    }
  }
}

struct Runner {
  Params params;
  bool model;
  ModuleImage img;
  Program prog;
  uint64_t pa, pb, pc, pd;
  std::vector<uint8_t> param_bytes;

  bool native;  // lowered with the machine's native float operations
  Runner(const std::string& text, const Params& p, bool for_model, bool native_float = false)
      : params(p), model(for_model), img(load_module(text, p)), native(native_float) {
    pa = img.alloc(kBatch * 4), pb = img.alloc(kBatch * 4), pc = img.alloc(kBatch * 4), pd = img.alloc(kBatch * 4);
    for (uint64_t x : {pa, pb, pc, pd}) {
      param_bytes.resize(param_bytes.size() + 8);
      std::memcpy(param_bytes.data() + param_bytes.size() - 8, &x, 8);
    }
    param_bytes.resize(param_bytes.size() + 4);
    std::memcpy(param_bytes.data() + 32, &kBatch, 4);
    prog = lower(img.module, "k", {{3, 1, 1}, {256, 1, 1}, 0, img.symbols}, params,
                 {.for_model = for_model, .native_float = native});
  }
  void put(uint64_t at, const std::vector<uint32_t>& v) {
    std::memcpy(&img.mem.bytes[at - img.mem.base], v.data(), v.size() * 4);
  }
  std::vector<uint32_t> get(uint64_t at) {
    std::vector<uint32_t> v(kBatch);
    std::memcpy(v.data(), &img.mem.bytes[at - img.mem.base], kBatch * 4);
    return v;
  }
  // Returns the results; `instrs` gets the lane instructions executed.
  std::vector<uint32_t> run_machine(uint64_t& instrs) {
    Interpreter in(prog, params, prog.ctas, prog.threads, param_bytes, img.mem);
    in.run(100'000'000);
    EXPECT_EQ(in.fault().error, 0) << in.fault().message;
    instrs = in.stats().lane_instructions;
    return get(pd);
  }
  std::vector<uint32_t> run_ptx() {
    auto r = ptx::run(img.module, "k", {3, 1, 1}, {256, 1, 1}, 0, param_bytes, img.symbols, img.mem);
    EXPECT_EQ(r.error, 0) << r.message;
    return get(pd);
  }
};

// Machine instructions per thread of the kernel without the operation.
uint64_t baseline(const Params& p, bool model, bool native = false) {
  Runner run(kernel("  mov.b32 %r20, %r11;"), p, model, native);
  uint64_t n = 0;
  run.run_machine(n);
  return n;
}

// Groups of instructions, one test each: 0 add/sub/mul/fma, 1 div/rcp/sqrt,
// 2 the rest of f32, 3 f64.
void check_all(uint64_t batches_machine, uint64_t batches_model, int group) {
  const Params machine = default_params(), model = model_params();
  const Params cuda = cuda_params(16u << 20);
  const uint64_t base8 = baseline(machine, false), base_model = baseline(model, true),
                 base_native = baseline(cuda, false, true);
  for (const Case& cs : cases()) {
    const std::string op = cs.name.substr(0, cs.name.find('.'));
    const int g = cs.kind == 2 ? 3
                  : op == "add" || op == "sub" || op == "mul" || op == "fma" || op == "mad"   ? 0
                  : op == "div" || op == "rcp" || op == "sqrt" || op == "rsqrt" || op == "ex2" || op == "lg2" ||
                          op == "sin" || op == "cos" || op == "tanh"
                      ? 1
                                                                                 : 2;
    if (g != group) continue;
    SCOPED_TRACE(cs.name);
    const std::string text = kernel(cs.body);
    Params model_rom = model;
    if (!cs.fits_model) model_rom.rom_blocks = 65536;
    Runner r8(text, machine, false), rm(text, model_rom, true), rn(text, cuda, false, true);
    floattest::Operands gen(std::hash<std::string>()(cs.name));
    std::vector<uint32_t> a(kBatch), b(kBatch), c(kBatch);
    uint64_t per8 = 0, per_model = 0, per_native = 0;
    const uint64_t nb = std::max(batches_machine, batches_model);
    for (uint64_t batch = 0; batch < nb; ++batch) {
      fill(gen, batch, cs.kind, a, b, c);
      std::vector<uint32_t> want(kBatch);
      for (uint32_t i = 0; i < kBatch; ++i) want[i] = cs.ref(a[i], b[i], c[i]);
      auto check = [&](Runner& run, const char* who, bool ptx_level, uint64_t& instrs) {
        run.put(run.pa, a), run.put(run.pb, b), run.put(run.pc, c);
        std::vector<uint32_t> got = ptx_level ? run.run_ptx() : run.run_machine(instrs);
        for (uint32_t i = 0; i < kBatch; ++i)
          if (got[i] != want[i]) {
            ADD_FAILURE() << cs.name << " on " << who << ": " << hex(a[i]) << " " << hex(b[i]) << " " << hex(c[i])
                          << " gives " << hex(got[i]) << ", not " << hex(want[i]);
            return false;
          }
        return true;
      };
      uint64_t ignored;
      if (batch < batches_machine && !(check(r8, "the PTX-level interpreter", true, ignored) &&
                                       check(r8, "the machine (8 lanes)", false, per8) &&
                                       check(rn, "the CUDA-sized device (native floats)", false, per_native)))
        return;
      if (batch < batches_model && !check(rm, "the model's machine", false, per_model)) return;
    }
    std::printf("%-28s lane instructions per op: %6.1f (8 lanes) %6.1f (model's machine) %6.1f (native floats); "
                "ROM: %4zu blocks (8 lanes), %4zu (model)\n",
                cs.name.c_str(), double(per8 - base8) / kBatch, double(per_model - base_model) / kBatch,
                double(per_native - base_native) / kBatch, r8.prog.blocks.size(), rm.prog.blocks.size());
  }
}

// Batches of 768 operand triples; the first 11 batches hold every pair of
// edge values.  The model's machine runs the first 4 (3072 triples).
TEST(FloatMachine, ArithmeticBitForBit) {
  check_all(floattest::pairs(11 * kBatch) / kBatch, floattest::pairs(4 * kBatch) / kBatch, 0);
}
TEST(FloatMachine, DivisionAndRootBitForBit) {
  check_all(floattest::pairs(11 * kBatch) / kBatch, floattest::pairs(4 * kBatch) / kBatch, 1);
}
TEST(FloatMachine, ComparisonsConversionsBitForBit) {
  check_all(floattest::pairs(11 * kBatch) / kBatch, floattest::pairs(4 * kBatch) / kBatch, 2);
}
// setp.CmpOp.f16 over every half against the edge halves (zeros, the
// smallest and largest subnormals and normals, one, the infinities, quiet
// and signalling NaNs, both signs), every comparison at once (one bit each),
// on the 8-lane machine and the CUDA-sized device; the model's machine (whose
// comparisons take the sign of an ffma difference) runs every half against
// the edges in batches of its own.
TEST(FloatMachine, HalfComparisonsEveryHalfAgainstTheEdges) {
  using ptx::Cmp;
  const std::pair<const char*, Cmp> cmps[] = {{"eq", Cmp::Eq},   {"ne", Cmp::Ne},   {"lt", Cmp::Lt},   {"le", Cmp::Le},
                                              {"gt", Cmp::Gt},   {"ge", Cmp::Ge},   {"equ", Cmp::Equ}, {"neu", Cmp::Neu},
                                              {"ltu", Cmp::Ltu}, {"leu", Cmp::Leu}, {"gtu", Cmp::Gtu}, {"geu", Cmp::Geu},
                                              {"num", Cmp::Num}, {"nan", Cmp::Nan}};
  std::string body = "  .reg .f16 %hh<4>;\n  mov.b32 {%hh1, %hh2}, %r11;\n  mov.u32 %r20, 0;\n";
  for (size_t i = 0; i < std::size(cmps); ++i)
    body += std::string("  setp.") + cmps[i].first + ".f16 %p2, %hh2, %hh1;\n  selp.u32 %r21, " +
            std::to_string(1u << i) + ", 0, %p2;\n  or.b32 %r20, %r20, %r21;\n";
  auto want = [&](uint32_t w) {
    const uint32_t x = fref::f32_from_f16(w >> 16), y = fref::f32_from_f16(w & 0xFFFF);
    uint32_t m = 0;
    for (size_t i = 0; i < std::size(cmps); ++i) m |= uint32_t(fref::compare(cmps[i].second, x, y, false)) << i;
    return m;
  };
  std::vector<uint32_t> edges;
  for (uint32_t e : {0x0000u, 0x0001u, 0x0002u, 0x03FFu, 0x0400u, 0x0401u, 0x3BFFu, 0x3C00u, 0x3C01u, 0x7BFFu, 0x7C00u,
                     0x7C01u, 0x7E00u, 0x7FFFu})
    for (uint32_t sign : {0u, 0x8000u}) edges.push_back(e | sign);
  const std::string text = kernel(body);
  Runner r8(text, default_params(), false), rn(text, cuda_params(16u << 20), false, true),
      rm(text, model_params(), true);
  std::vector<uint32_t> a(kBatch), zero(kBatch, 0);
  uint64_t instrs = 0;
  size_t checked = 0, model_checked = 0;
  // Every word (x << 16 | y), x every half, y an edge half, in batches.
  const uint64_t words = uint64_t(65536) * edges.size();
  for (uint64_t at = 0; at < words; at += kBatch) {
    for (uint32_t i = 0; i < kBatch; ++i) {
      const uint64_t k = (at + i) % words;
      a[i] = uint32_t(k / edges.size()) << 16 | edges[k % edges.size()];
    }
    // The model's machine: every 16th batch (every half against some edges).
    const bool model = at / kBatch % 16 == 0;
    for (Runner* r : {&r8, &rn, model ? &rm : nullptr}) {
      if (!r) continue;
      r->put(r->pa, a), r->put(r->pb, zero), r->put(r->pc, zero);
      const std::vector<uint32_t> got = r->run_machine(instrs);
      for (uint32_t i = 0; i < kBatch; ++i)
        ASSERT_EQ(got[i], want(a[i])) << hex(a[i]) << (r == &rm ? " on the model's machine" : r == &rn ? " natively" : "");
      (r == &rm ? model_checked : checked) += kBatch;
    }
  }
  EXPECT_GE(checked, 2 * words);
  EXPECT_GT(model_checked, words / 20);
}

TEST(FloatMachine, Binary64BitForBit) {  // random operands (the generator tests hold the edge pairs)
  check_all(floattest::pairs(4 * kBatch) / kBatch, floattest::pairs(2 * kBatch) / kBatch, 3);
}

// .sat on an f64 destination (PTX: the result clamped to [0.0, 1.0], a NaN
// to +0.0; -0 too, as for f32): cvt.sat.f64.f32, cvt.ftz.sat.f64.f32,
// cvt.RNDI.sat.f64.f64, cvt.sat.f64.f64 and cvt.RND.sat.f64.{s,u}{32,64}, on
// the PTX-level interpreter, the default machine (integer sequences) and the
// CUDA-sized device (native f64 operations), each word of the result against
// a clamp written here on the host's double arithmetic.
uint64_t dbits(double d) {
  uint64_t b;
  std::memcpy(&b, &d, 8);
  return b;
}
double dval(uint64_t b) {
  double d;
  std::memcpy(&d, &b, 8);
  return d;
}
uint64_t clamp01(double x) {
  if (std::isnan(x) || x <= 0.0) return 0;  // NaN, -0 and negative values: +0
  return x >= 1.0 ? dbits(1.0) : dbits(x);
}

// fma and mul .rz/.rm/.rp on the model's machine, whose lowering rounds to
// nearest with ffma and corrects by the exact sign of the remainder where c
// fixes the result's binade or c is zero (isel_float.cpp, directed_fma):
// triples built so that a * b + c lands beside c (c dominating by 0 to 40
// binades, with either sign; exact sums; subnormal c; c at the largest
// finite value, where .rp and .rm overflow), and every kind of triple
// float_cases draws, against the reference (mul ignores c).  The ffma path
// must be the one mostly taken: the test prints the machine instructions per
// operation.
TEST(FloatMachine, DirectedFmaAndMulOnTheModelsMachine) {
  const Params model = model_params();
  const uint64_t base = baseline(model, true);
  const uint64_t batches = floattest::pairs(24 * kBatch) / kBatch;
  // guarded: the instruction under a predicate true on odd threads (the
  // others keep c), as a branch inside a predicated instruction.
  for (bool mul : {false, true})
  for (int ri = 1; ri < 4; ++ri)
    for (int form = 0; form < 3; ++form) {
      const bool sat = form == 1, guarded = form == 2;
      const std::string name = std::string(mul ? "mul." : "fma.") + kR[ri] + (sat ? ".sat" : "");
      SCOPED_TRACE(name + (guarded ? " (guarded)" : ""));
      const std::string instr = name + (mul ? ".f32 %f4, %f1, %f2;" : ".f32 %f4, %f1, %f2, %f3;");
      Runner run(kernel(guarded ? "  and.b32 %r21, %r4, 1;\n  setp.eq.u32 %p2, %r21, 1;\n  mov.b32 %f4, %f3;\n  @%p2 " +
                                      instr + "\n  mov.b32 %r20, %f4;"
                                : "  " + instr + "\n  mov.b32 %r20, %f4;"),
                 model, true);
      floattest::Operands gen(77 + ri);
      auto& rng = gen.rng();
      std::vector<uint32_t> a(kBatch), b(kBatch), c(kBatch);
      uint64_t instrs = 0, total = 0;
      for (uint64_t batch = 0; batch < batches; ++batch) {
        for (uint32_t i = 0; i < kBatch; ++i) {
          const uint32_t sign = uint32_t(rng() % 2) << 31;
          switch ((batch * kBatch + i) % 6) {
            case 0: case 1: case 2: {  // c dominates by k binades
              c[i] = (uint32_t(rng()) & 0x807FFFFFu) | uint32_t(2 + rng() % 250) << 23;
              a[i] = gen.any() & 0x7FFFFFFFu;
              uint32_t q = fref::div(c[i] & 0x7FFFFFFFu, a[i], Rnd::Rn, false, false);
              const uint32_t k = uint32_t(rng() % 41) << 23;
              b[i] = ((q & 0x7F800000u) > k + 0x00800000u && q < 0x7F800000u ? q - k : q) ^ sign ^
                     (uint32_t(rng() % 2) << 31);
              if (rng() % 2) b[i] ^= uint32_t(rng() % 8);  // off the exact quotient
              break;
            }
            case 3: {  // exact small integers: the sum is representable
              a[i] = fref::from_int(rng() % 4096, false, 32, Rnd::Rn);
              b[i] = fref::from_int(rng() % 4096, false, 32, Rnd::Rn) ^ sign;
              c[i] = fref::from_int(rng() % (1u << 24), false, 32, Rnd::Rn) ^ (uint32_t(rng() % 2) << 31);
              break;
            }
            case 4: {  // subnormal c, or c at the largest finite value; a tiny product
              c[i] = (rng() % 2 ? uint32_t(rng()) & 0x007FFFFFu : 0x7F7FFFFFu - uint32_t(rng() % 4)) | sign;
              a[i] = (uint32_t(rng()) & 0x807FFFFFu) | uint32_t(rng() % 40) << 23;
              b[i] = (uint32_t(rng()) & 0x807FFFFFu) | uint32_t(rng() % 140) << 23;
              break;
            }
            default:
              a[i] = gen.any(), b[i] = gen.any();
              c[i] = i % 2 ? gen.any() : gen.near(fref::mul(a[i], b[i], Rnd::Rn, false, false));
          }
        }
        run.put(run.pa, a), run.put(run.pb, b), run.put(run.pc, c);
        uint64_t n = 0;
        std::vector<uint32_t> got = run.run_machine(n);
        instrs += n - base, total += kBatch;
        for (uint32_t i = 0; i < kBatch; ++i)
          ASSERT_EQ(hex(got[i]), hex(guarded && i % 2 == 0 ? c[i]
                                     : mul ? fref::mul(a[i], b[i], kRnd[ri], false, sat)
                                           : fref::fma(a[i], b[i], c[i], kRnd[ri], false, sat)))
              << name << " " << hex(a[i]) << " " << hex(b[i]) << " " << hex(c[i]);
      }
      if (!guarded)
        std::printf("%-12s on the model's machine: %.1f machine instructions per operation over %llu triples\n",
                    name.c_str(), double(instrs) / double(total), (unsigned long long)total);
    }
}

TEST(FloatMachine, SaturatedConversionsToF64) {
  struct Form {
    std::string ptx;  // the instruction, its destination %fd1
    int src;          // 0: f32 a; 1: f64 {a, b}; 2: s32 a; 3: u32 a; 4: s64 {a, b}; 5: u64 {a, b}
    std::function<uint64_t(uint32_t, uint32_t)> want;
    Op native;  // the native op that carries the .sat (MOV: an integer sequence there too)
  };
  auto f32 = [](uint32_t a) {
    float f;
    std::memcpy(&f, &a, 4);
    return double(f);
  };
  auto d64 = [](uint32_t a, uint32_t b) { return dval(uint64_t(b) << 32 | a); };
  std::vector<Form> forms = {
      {"cvt.sat.f64.f32 %fd1, %f1;", 0, [&](uint32_t a, uint32_t) { return clamp01(f32(a)); }, Op::F2D},
      {"cvt.ftz.sat.f64.f32 %fd1, %f1;", 0,
       [&](uint32_t a, uint32_t) { return (a & 0x7F800000u) == 0 ? 0 : clamp01(f32(a)); }, Op::F2D},
      {"cvt.rni.sat.f64.f64 %fd1, %fd2;", 1, [&](uint32_t a, uint32_t b) { return clamp01(std::nearbyint(d64(a, b))); },
       Op::DRINT},
      {"cvt.rzi.sat.f64.f64 %fd1, %fd2;", 1, [&](uint32_t a, uint32_t b) { return clamp01(std::trunc(d64(a, b))); },
       Op::DRINT},
      {"cvt.rmi.sat.f64.f64 %fd1, %fd2;", 1, [&](uint32_t a, uint32_t b) { return clamp01(std::floor(d64(a, b))); },
       Op::DRINT},
      {"cvt.rpi.sat.f64.f64 %fd1, %fd2;", 1, [&](uint32_t a, uint32_t b) { return clamp01(std::ceil(d64(a, b))); },
       Op::DRINT},
      {"cvt.sat.f64.f64 %fd1, %fd2;", 1, [&](uint32_t a, uint32_t b) { return clamp01(d64(a, b)); }, Op::MOV},
      // An integer clamps to +0 (at most 0) or 1 (at least 1), whatever the rounding.
      {"cvt.rn.sat.f64.s32 %fd1, %r11;", 2, [](uint32_t a, uint32_t) { return int32_t(a) >= 1 ? dbits(1.0) : 0; },
       Op::L2D},
      {"cvt.rz.sat.f64.u32 %fd1, %r11;", 3, [](uint32_t a, uint32_t) { return a >= 1 ? dbits(1.0) : 0; }, Op::UL2D},
      {"cvt.rm.sat.f64.s64 %fd1, %rdi;", 4,
       [](uint32_t a, uint32_t b) { return int64_t(uint64_t(b) << 32 | a) >= 1 ? dbits(1.0) : 0; }, Op::L2D},
      {"cvt.rn.sat.f64.u64 %fd1, %rdi;", 5,
       [](uint32_t a, uint32_t b) { return (uint64_t(b) << 32 | a) >= 1 ? dbits(1.0) : 0; }, Op::UL2D},
  };
  // Edge values: NaNs (quiet, signalling, either sign), infinities, zeros,
  // subnormals, values below 0, in (0, 1), 1 and its neighbours, above 1.
  const std::vector<uint32_t> e32 = {
      0x7FC00000u, 0xFFC00000u, 0x7F800001u, 0xFFBFFFFFu, 0x7F800000u, 0xFF800000u, 0x00000000u, 0x80000000u,
      0x00000001u, 0x007FFFFFu, 0x80000001u, 0x807FFFFFu, 0x00800000u, 0x80800000u, 0x3F000000u, 0xBF000000u,
      0x3F7FFFFFu, 0x3F800000u, 0x3F800001u, 0xBF800000u, 0x40000000u, 0xC0000000u, 0x7F7FFFFFu, 0xFF7FFFFFu,
      0x3EAAAAABu, 0x3DCCCCCDu, 0x0DA24260u, 0xB3D6BF95u, 0x4B000001u, 0x3F400000u};
  const std::vector<uint64_t> e64 = {
      0x7FF8000000000000ull, 0xFFF8000000000000ull, 0x7FF0000000000001ull, 0xFFF7FFFFFFFFFFFFull,
      0x7FF0000000000000ull, 0xFFF0000000000000ull, 0x0000000000000000ull, 0x8000000000000000ull,
      0x0000000000000001ull, 0x000FFFFFFFFFFFFFull, 0x8000000000000001ull, 0x800FFFFFFFFFFFFFull,
      0x0010000000000000ull, 0x3FE0000000000000ull, 0x3FDFFFFFFFFFFFFFull, 0x3FE0000000000001ull,
      0xBFE0000000000000ull, 0xBFDFFFFFFFFFFFFFull, 0xBFE0000000000001ull, 0x3FEFFFFFFFFFFFFFull,
      0x3FF0000000000000ull, 0x3FF0000000000001ull, 0xBFF0000000000000ull, 0x3FF8000000000000ull,
      0xBFF8000000000000ull, 0x4004000000000000ull, 0x7FEFFFFFFFFFFFFFull, 0xFFEFFFFFFFFFFFFFull,
      0x3FD5555555555555ull, 0x3FB999999999999Aull, 0x4340000000000001ull, 0x3FE8000000000000ull};
  const std::vector<uint64_t> ei = {0,          1,          2,          0xFFFFFFFFull, 0x7FFFFFFFull, 0x80000000ull,
                                    ~0ull,      ~1ull,      1ull << 63, (1ull << 63) - 1, 1ull << 32, 0xFFFFFFFF00000000ull,
                                    0x100000001ull, 0xFFFFFFFF00000001ull};
  const Params machine = default_params(), cuda = cuda_params(16u << 20);
  std::mt19937_64 rng(7);
  for (const Form& f : forms) {
    SCOPED_TRACE(f.ptx);
    std::vector<uint32_t> a(kBatch), b(kBatch), c(kBatch, 0);
    for (uint32_t i = 0; i < kBatch; ++i) {
      const uint64_t r = rng();
      uint64_t x;
      if (f.src == 0) {
        if (i < e32.size()) x = e32[i];
        else if (i % 2) x = uint32_t(r);  // any bits
        else {                            // a value in (-2, 2)
          const float v = float(int64_t(r % 4000000001ull) - 2000000000) / 1e9f;
          uint32_t w;
          std::memcpy(&w, &v, 4);
          x = w;
        }
      } else if (f.src == 1) {
        if (i < e64.size()) x = e64[i];
        else if (i % 2) x = r;
        else x = dbits(double(int64_t(r % 4000000000001ull) - 2000000000000ll) / 1e12);
      } else {
        x = i < ei.size() ? ei[i] : (i % 2 ? r : r >> (r % 64));
      }
      a[i] = uint32_t(x), b[i] = uint32_t(x >> 32);
    }
    for (bool hi : {false, true}) {
      const std::string body = "  .reg .f64 %fd<3>;\n  .reg .b64 %rdi;\n  mov.b64 %rdi, {%r11, %r12};\n"
                               "  mov.b64 %fd2, %rdi;\n  " +
                               f.ptx + "\n  mov.b64 {%r20, %r21}, %fd1;\n" + (hi ? "  mov.b32 %r20, %r21;\n" : "");
      const std::string text = kernel(body);
      Runner r8(text, machine, false), rn(text, cuda, false, true);
      if (f.native != Op::MOV) {  // the CUDA-sized device runs it as the native op with .sat
        bool found = false;
        for (const Block& bl : rn.prog.blocks)
          for (const Instr& in : bl.instrs) found |= in.op == f.native && in.fmod.sat;
        EXPECT_TRUE(found) << to_string(rn.prog);
      }
      std::vector<uint32_t> want(kBatch);
      for (uint32_t i = 0; i < kBatch; ++i) {
        const uint64_t w = f.want(a[i], b[i]);
        want[i] = uint32_t(hi ? w >> 32 : w);
      }
      auto check = [&](Runner& run, const char* who, bool ptx_level) {
        run.put(run.pa, a), run.put(run.pb, b), run.put(run.pc, c);
        uint64_t ignored = 0;
        std::vector<uint32_t> got = ptx_level ? run.run_ptx() : run.run_machine(ignored);
        int bad = 0;
        for (uint32_t i = 0; i < kBatch && bad < 5; ++i)
          if (got[i] != want[i]) {
            ++bad;
            ADD_FAILURE() << f.ptx << " on " << who << ": " << hex(b[i]) << ":" << hex(a[i]) << " gives "
                          << (hi ? "high" : "low") << " word " << hex(got[i]) << ", not " << hex(want[i]);
          }
      };
      check(r8, "the PTX-level interpreter", true);
      check(r8, "the machine (integer sequences)", false);
      check(rn, "the CUDA-sized device (native floats)", false);
    }
  }
}

// .sat on the f16 conversions PTX gives it (an f16 or f32 destination):
// cvt.rn.sat.f16.f32, cvt.sat.f32.f16 and cvt.sat.f32.bf16, on the same three
// machines, against a clamp written here (the host's _Float16 for the f16
// values).
uint32_t fbits(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}
float fval(uint32_t b) {
  float f;
  std::memcpy(&f, &b, 4);
  return f;
}
float clamp01f(float x) {
  if (std::isnan(x) || x <= 0.0f) return 0.0f;  // +0
  return x >= 1.0f ? 1.0f : x;
}

TEST(FloatMachine, SaturatedHalfConversions) {
  auto h2f = [](uint32_t h) {
    const uint16_t b = uint16_t(h);
    _Float16 x;
    std::memcpy(&x, &b, 2);
    return float(x);
  };
  auto f2h = [](float f) {  // to nearest (the host's rounding)
    const _Float16 x = _Float16(f);
    uint16_t b;
    std::memcpy(&b, &x, 2);
    return uint32_t(b);
  };
  struct Form {
    std::string name, body;
    std::function<uint32_t(uint32_t)> want;
    bool half_in;  // the operand's low half is an f16 / bf16 (else a is an f32)
  };
  const std::vector<Form> forms = {
      {"cvt.rn.sat.f16.f32", "  .reg .b16 %h<3>;\n  cvt.rn.sat.f16.f32 %h1, %f1;\n  mov.b32 %r20, {%h1, %h1};",
       [&](uint32_t a) { return f2h(clamp01f(fval(a))) * 0x10001u; }, false},
      {"cvt.sat.f32.f16", "  .reg .b16 %h<3>;\n  mov.b32 {%h1, %h2}, %r11;\n  cvt.sat.f32.f16 %f4, %h1;\n  mov.b32 %r20, %f4;",
       [&](uint32_t a) { return fbits(clamp01f(h2f(a & 0xFFFF))); }, true},
      {"cvt.sat.f32.bf16",
       "  .reg .b16 %h<3>;\n  mov.b32 {%h1, %h2}, %r11;\n  cvt.sat.f32.bf16 %f4, %h1;\n  mov.b32 %r20, %f4;",
       [&](uint32_t a) { return fbits(clamp01f(fval(a << 16))); }, true},
  };
  const std::vector<uint32_t> e32 = {
      0x7FC00000u, 0xFFC00000u, 0x7F800001u, 0x7F800000u, 0xFF800000u, 0x00000000u, 0x80000000u, 0x00000001u,
      0x80000001u, 0x33000000u, 0x33000001u, 0xB3000001u, 0x38800000u, 0x387FE000u, 0x3F000000u, 0xBF000000u,
      0x3F7FF000u, 0x3F7FFFFFu, 0x3F800000u, 0x3F800001u, 0x3F801000u, 0xBF800000u, 0x477FE000u, 0x7F7FFFFFu};
  const std::vector<uint32_t> e16 = {0x7E00u, 0xFE00u, 0x7C01u, 0x7C00u, 0xFC00u, 0x0000u, 0x8000u, 0x0001u,
                                     0x8001u, 0x03FFu, 0x0400u, 0x3800u, 0xB800u, 0x3BFFu, 0x3C00u, 0x3C01u,
                                     0xBC00u, 0x7BFFu, 0x4000u, 0x7FC0u, 0xFFC0u, 0x7F81u, 0x7F80u, 0xFF80u,
                                     0x3F00u, 0x3F7Fu, 0x3F80u, 0x3F81u, 0xBF80u, 0x0080u, 0x007Fu, 0x807Fu};
  const Params machine = default_params(), cuda = cuda_params(16u << 20);
  std::mt19937_64 rng(11);
  for (const Form& f : forms) {
    SCOPED_TRACE(f.name);
    std::vector<uint32_t> a(kBatch), b(kBatch, 0), c(kBatch, 0);
    const std::vector<uint32_t>& e = f.half_in ? e16 : e32;
    for (uint32_t i = 0; i < kBatch; ++i) {
      const uint64_t r = rng();
      if (i < e.size()) a[i] = e[i];
      else if (i % 2) a[i] = uint32_t(r);
      else a[i] = f.half_in ? f2h(float(int64_t(r % 4000001) - 2000000) / 1e6f) : fbits(float(int64_t(r % 4000001) - 2000000) / 1e6f);
    }
    std::vector<uint32_t> want(kBatch);
    for (uint32_t i = 0; i < kBatch; ++i) want[i] = f.want(a[i]);
    const std::string text = kernel(f.body);
    Runner r8(text, machine, false), rn(text, cuda, false, true);
    auto check = [&](Runner& run, const char* who, bool ptx_level) {
      run.put(run.pa, a), run.put(run.pb, b), run.put(run.pc, c);
      uint64_t ignored = 0;
      std::vector<uint32_t> got = ptx_level ? run.run_ptx() : run.run_machine(ignored);
      int bad = 0;
      for (uint32_t i = 0; i < kBatch && bad < 5; ++i)
        if (got[i] != want[i]) {
          ++bad;
          ADD_FAILURE() << f.name << " on " << who << ": " << hex(a[i]) << " gives " << hex(got[i]) << ", not "
                        << hex(want[i]);
        }
    };
    check(r8, "the PTX-level interpreter", true);
    check(r8, "the machine (integer sequences)", false);
    check(rn, "the CUDA-sized device (native floats)", false);
  }
}

TEST(FloatMachine, NotLoweredNamesTheInstruction) {
  const Params p = default_params();
  for (const char* body : {"  min.f16x2 %r20, %r11, %r12;",
                           "  .reg .b16 %h<2>;\n  mov.b32 {%h0, %h1}, %r11;\n  ex2.approx.ftz.bf16 %h1, %h1;\n"
                           "  mov.b32 %r20, {%h1, %h1};",
                           "  .reg .f64 %fd<2>;\n  cvt.f64.f32 %fd1, %f1;\n  rsqrt.approx.f64 %fd1, %fd1;\n"
                           "  mov.b64 {%r20, %r21}, %fd1;",
                           "  cvt.rn.relu.bf16x2.f32 %r20, %f1, %f2;",
                           "  .reg .b16 %h<2>;\n  cvt.rn.sat.bf16.f32 %h1, %f1;\n  mov.b32 %r20, {%h1, %h1};",
                           "  cvt.rn.sat.f16x2.f32 %r20, %f1, %f2;",
                           "  .reg .b16 %h<2>;\n  cvt.rn.ftz.f16.f32 %h1, %f1;\n  mov.b32 %r20, {%h1, %h1};",
                           "  .reg .b16 %h<2>;\n  cvt.rn.satfinite.bf16.f32 %h1, %f1;\n  mov.b32 %r20, {%h1, %h1};"}) {
    ModuleImage img = load_module(kernel(body), p);
    try {
      lower(img.module, "k", {{1, 1, 1}, {32, 1, 1}, 0, img.symbols}, p);
      ADD_FAILURE() << "lowered " << body;
    } catch (const LowerError& e) {
      EXPECT_EQ(e.error(), 801);
      EXPECT_NE(std::string(e.what()).find("PTX line"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace qgpu::machine
