// The machine's native float operations (isa.h's OpKind::Float, executed by
// model_host/machine/float_eval.h)
// against the software floating point's generators (softfloat.h, evaluated
// directly: constant operands fold every operation), bit for bit: every pair
// of edge values (signed zeros, subnormals, extremes, infinities, NaNs,
// halfway cases) and random operands, per operation, rounding mode, .ftz and
// .sat.  The random count per operation and modifier set is
// QGPU_FLOAT_PAIRS (default 20000 here; QGPU_FLOAT_PAIRS=10000000 is the full
// run, docs/isa.md section 11).  Also: validate() keeps the float ops off
// machines without them, the interpreter runs them over a whole warp and a
// partial one, and the lowering emits them only when asked.
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "float_cases.h"
#include "model_host/lower/lower.h"
#include "model_host/lower/softfloat.h"
#include "model_host/machine/api.h"
#include "model_host/machine/float_eval.h"
#include "model_host/machine/image.h"
#include "model_host/machine/interpreter.h"

namespace qgpu::machine {
namespace {

using floattest::hex;
using ptx::Rnd;
using softfloat::Round;

softfloat::Gen folding() {
  return softfloat::Gen([](Op o, Operand, Operand, Operand) -> Operand {
    ADD_FAILURE() << "an operation on constants did not fold: " << op_info(o).name;
    return Operand::k(0);
  });
}
Operand K(uint32_t v) { return Operand::k(v); }

const Round kRounds[] = {Round::Rn, Round::Rz, Round::Rm, Round::Rp};
const Rnd kRnds[] = {Rnd::Rn, Rnd::Rz, Rnd::Rm, Rnd::Rp};
const Rnd kRndIs[] = {Rnd::Rni, Rnd::Rzi, Rnd::Rmi, Rnd::Rpi};

uint32_t native(Op f, const FloatMod& m, uint32_t a, uint32_t b = 0, uint32_t c = 0) {
  // Register operands: the instruction as the lowering emits it.
  const Instr in = make_float(f, 0, Operand::reg(1), Operand::reg(2), Operand::reg(3), m);
  return eval_float(in, a, b, c);
}
FloatMod mod(Rnd r, bool ftz, bool sat) {
  FloatMod m;
  m.rnd = from_ptx(r);
  m.ftz = ftz;
  m.sat = sat;
  return m;
}

// Integer operands for the conversions: zero, ±1, the extremes, values
// around 2^24 and 2^31 where f32 rounds (halfway cases included).
std::vector<uint32_t> int_edges() {
  std::vector<uint32_t> v = {0u, 1u, 2u, 3u, 0x7FFFFFFFu, 0x80000000u, 0x80000001u, 0xFFFFFFFFu, 0xFFFFFFFEu,
                             0x00FFFFFFu, 0x01000000u, 0x01000001u, 0x01000002u, 0x01000003u, 0x02000002u,
                             0x02000006u, 0x7FFFFF80u, 0x7FFFFFC0u, 0x7FFFFF7Fu, 0xFFFFFF80u, 0xFFFFFF7Fu,
                             0x00800001u, 0x12345678u};
  const size_t n = v.size();
  for (size_t i = 0; i < n; ++i) v.push_back(0u - v[i]);
  return v;
}

// Compares native and softfloat on every edge pair (or edge value, for one
// operand; for fma, edge pairs with a third edge value cycling) and `n`
// random operand sets.
void check(const std::string& name, int arity, bool int_operands, uint64_t n,
           const std::function<uint32_t(uint32_t, uint32_t, uint32_t)>& nat,
           const std::function<uint32_t(uint32_t, uint32_t, uint32_t)>& soft) {
  const std::vector<uint32_t> edges = int_operands ? int_edges() : floattest::edges();
  floattest::Operands gen(std::hash<std::string>()(name));
  uint64_t compared = 0;
  auto one = [&](uint32_t a, uint32_t b, uint32_t c) {
    ++compared;
    const uint32_t x = nat(a, b, c), y = soft(a, b, c);
    if (x == y) return true;
    ADD_FAILURE() << name << " " << hex(a) << " " << hex(b) << " " << hex(c) << ": native " << hex(x)
                  << ", softfloat " << hex(y);
    return false;
  };
  size_t k = 0;
  for (uint32_t a : edges) {
    if (arity == 1) {
      if (!one(a, 0, 0)) return;
      continue;
    }
    for (uint32_t b : edges)
      if (!one(a, b, edges[k++ % edges.size()])) return;
  }
  for (uint64_t i = 0; i < n; ++i) {
    const uint32_t a = int_operands && i % 2 ? uint32_t(gen.rng()()) : gen.any();
    const uint32_t b = i % 2 ? gen.near(a) : gen.any();
    const uint32_t c = i % 3 ? gen.any() : gen.near(a);
    if (!one(a, b, c)) return;
  }
  EXPECT_GT(compared, n);
}

const uint64_t kPairs = floattest::pairs(20000);

TEST(NativeFloat, AddSubMulFma) {
  for (int r = 0; r < 4; ++r)
    for (bool ftz : {false, true})
      for (bool sat : {false, true}) {
        const FloatMod m = mod(kRnds[r], ftz, sat);
        const Round rr = kRounds[r];
        const std::string s = std::string(".") + "r" + "nzmp"[r] + (ftz ? ".ftz" : "") + (sat ? ".sat" : "");
        check("add" + s, 2, false, kPairs, [&](uint32_t a, uint32_t b, uint32_t) { return native(Op::FADD, m, a, b); },
              [&](uint32_t a, uint32_t b, uint32_t) { return folding().add(K(a), K(b), rr, ftz, sat).v; });
        check("sub" + s, 2, false, kPairs, [&](uint32_t a, uint32_t b, uint32_t) { return native(Op::FSUB, m, a, b); },
              [&](uint32_t a, uint32_t b, uint32_t) { return folding().sub(K(a), K(b), rr, ftz, sat).v; });
        check("mul" + s, 2, false, kPairs, [&](uint32_t a, uint32_t b, uint32_t) { return native(Op::FMUL, m, a, b); },
              [&](uint32_t a, uint32_t b, uint32_t) { return folding().mul(K(a), K(b), rr, ftz, sat).v; });
        check("fma" + s, 3, false, kPairs,
              [&](uint32_t a, uint32_t b, uint32_t c) { return native(Op::FFMA, m, a, b, c); },
              [&](uint32_t a, uint32_t b, uint32_t c) { return folding().fma(K(a), K(b), K(c), rr, ftz, sat).v; });
      }
}

TEST(NativeFloat, DivSqrt) {
  const uint64_t n = kPairs / 4;  // the generators' division and root are long sequences
  for (int r = 0; r < 4; ++r)
    for (bool ftz : {false, true})
      for (bool sat : {false, true}) {
        const FloatMod m = mod(kRnds[r], ftz, sat);
        const Round rr = kRounds[r];
        const std::string s = std::string(".") + "r" + "nzmp"[r] + (ftz ? ".ftz" : "") + (sat ? ".sat" : "");
        check("div" + s, 2, false, n, [&](uint32_t a, uint32_t b, uint32_t) { return native(Op::FDIV, m, a, b); },
              [&](uint32_t a, uint32_t b, uint32_t) { return folding().div(K(a), K(b), rr, ftz, sat).v; });
        if (sat) continue;
        check("sqrt" + s, 1, false, n, [&](uint32_t a, uint32_t, uint32_t) { return native(Op::FSQRT, m, a); },
              [&](uint32_t a, uint32_t, uint32_t) { return folding().sqrt(K(a), rr, ftz).v; });
      }
}

TEST(NativeFloat, MinMaxCompare) {
  for (bool ftz : {false, true}) {
    const FloatMod m = mod(Rnd::Rn, ftz, false);
    const std::string s = ftz ? ".ftz" : "";
    check("min" + s, 2, false, kPairs, [&](uint32_t a, uint32_t b, uint32_t) { return native(Op::FMIN, m, a, b); },
          [&](uint32_t a, uint32_t b, uint32_t) { return folding().min(K(a), K(b), ftz).v; });
    check("max" + s, 2, false, kPairs, [&](uint32_t a, uint32_t b, uint32_t) { return native(Op::FMAX, m, a, b); },
          [&](uint32_t a, uint32_t b, uint32_t) { return folding().max(K(a), K(b), ftz).v; });
    using C = ptx::Cmp;
    for (C c : {C::Eq, C::Ne, C::Lt, C::Le, C::Gt, C::Ge, C::Equ, C::Neu, C::Ltu, C::Leu, C::Gtu, C::Geu, C::Num,
                C::Nan}) {
      FloatMod cm = m;
      cm.cmp = from_ptx(c);
      check("setp." + std::to_string(int(c)) + s, 2, false, kPairs / 4,
            [&](uint32_t a, uint32_t b, uint32_t) { return native(Op::FCMP, cm, a, b); },
            [&](uint32_t a, uint32_t b, uint32_t) { return folding().compare(c, K(a), K(b), ftz).v; });
    }
  }
}

TEST(NativeFloat, Conversions) {
  for (int r = 0; r < 4; ++r) {
    const Round rr = kRounds[r];
    const std::string s = std::string(".") + "r" + "nzmp"[r];
    for (bool sgn : {false, true})
      for (bool sat : {false, true}) {
        const FloatMod m = mod(kRnds[r], false, sat);
        check(std::string("cvt") + s + (sat ? ".sat" : "") + ".f32." + (sgn ? "s32" : "u32"), 1, true, kPairs,
              [&](uint32_t a, uint32_t, uint32_t) { return native(sgn ? Op::I2F : Op::U2F, m, a); },
              [&](uint32_t a, uint32_t, uint32_t) {
                auto g = folding();
                Operand x = g.from_int32(K(a), sgn, rr);
                return sat ? g.saturate(x).v : x.v;
              });
      }
    for (bool ftz : {false, true})
      for (bool sgn : {false, true}) {
        // The lowering passes the plain rounding (cvt.rzi.s32.f32 as .rz).
        const FloatMod m = mod(kRnds[r], ftz, false);
        check(std::string("cvt") + s + "i" + (ftz ? ".ftz" : "") + (sgn ? ".s32" : ".u32") + ".f32", 1, false, kPairs,
              [&](uint32_t a, uint32_t, uint32_t) { return native(sgn ? Op::F2I : Op::F2U, m, a); },
              [&](uint32_t a, uint32_t, uint32_t) { return folding().to_int32(K(a), sgn, 32, rr, ftz).v; });
      }
    for (bool ftz : {false, true})
      for (bool sat : {false, true}) {
        const FloatMod m = mod(kRndIs[r], ftz, sat);
        check(std::string("cvt") + s + "i" + (ftz ? ".ftz" : "") + (sat ? ".sat" : "") + ".f32.f32", 1, false, kPairs,
              [&](uint32_t a, uint32_t, uint32_t) { return native(Op::FRINT, m, a); },
              [&](uint32_t a, uint32_t, uint32_t) { return folding().round_int(K(a), true, rr, ftz, sat).v; });
      }
  }
  for (bool ftz : {false, true})
    for (bool sat : {false, true}) {
      const FloatMod m = mod(Rnd::None, ftz, sat);
      check(std::string("cvt") + (ftz ? ".ftz" : "") + (sat ? ".sat" : "") + ".f32.f32", 1, false, kPairs,
            [&](uint32_t a, uint32_t, uint32_t) { return native(Op::FRINT, m, a); },
            [&](uint32_t a, uint32_t, uint32_t) { return folding().round_int(K(a), false, Round::Rn, ftz, sat).v; });
    }
}

TEST(NativeFloat, ApproximateFunctions) {
  const uint64_t n = kPairs / 4;
  for (bool ftz : {false, true}) {
    const FloatMod m = mod(Rnd::Rn, ftz, false);
    const std::string s = ftz ? ".ftz" : "";
    check("ex2" + s, 1, false, n, [&](uint32_t a, uint32_t, uint32_t) { return native(Op::FEX2, m, a); },
          [&](uint32_t a, uint32_t, uint32_t) { return folding().ex2(K(a), ftz).v; });
    check("lg2" + s, 1, false, n, [&](uint32_t a, uint32_t, uint32_t) { return native(Op::FLG2, m, a); },
          [&](uint32_t a, uint32_t, uint32_t) { return folding().lg2(K(a), ftz).v; });
    check("sin" + s, 1, false, n, [&](uint32_t a, uint32_t, uint32_t) { return native(Op::FSIN, m, a); },
          [&](uint32_t a, uint32_t, uint32_t) { return folding().sin(K(a), ftz).v; });
    check("cos" + s, 1, false, n, [&](uint32_t a, uint32_t, uint32_t) { return native(Op::FCOS, m, a); },
          [&](uint32_t a, uint32_t, uint32_t) { return folding().cos(K(a), ftz).v; });
    check("tanh" + s, 1, false, n, [&](uint32_t a, uint32_t, uint32_t) { return native(Op::FTANH, m, a); },
          [&](uint32_t a, uint32_t, uint32_t) { return folding().tanh(K(a), ftz).v; });
  }
}

// A one-block program for machine warps of `lanes`: thread t stores
// fadd.rz(i2f(t), 1/3) at word t.
Program add_program(uint32_t lanes = 32) {
  Program prog;
  prog.kernel = "k";
  Block b;
  Instr lane, warp, tid;
  lane.op = Op::LANE;
  lane.dst = 6;
  warp.op = Op::WARP;
  warp.dst = 7;
  tid.op = Op::MUL;  // r4 = warp * lanes + lane
  tid.dst = 7;
  tid.a = Operand::reg(7);
  tid.b = K(lanes);
  b.instrs.push_back(lane);
  b.instrs.push_back(warp);
  b.instrs.push_back(tid);
  tid.op = Op::ADD;
  tid.dst = 4;
  tid.a = Operand::reg(7);
  tid.b = Operand::reg(6);
  b.instrs.push_back(tid);
  b.instrs.push_back(make_float(Op::I2F, 1, Operand::reg(4), K(0), K(0), mod(Rnd::Rn, false, false)));
  b.instrs.push_back(make_float(Op::FADD, 3, Operand::reg(1), K(0x3EAAAAABu), K(0), mod(Rnd::Rz, false, false)));
  Instr addr;
  addr.op = Op::SHL;
  addr.dst = 5;
  addr.a = Operand::reg(4);
  addr.b = K(2);
  b.instrs.push_back(addr);
  Instr st;
  st.op = Op::ST;
  st.space = Space::Global;
  st.a = Operand::reg(5);
  st.b = K(default_params().global_base);
  st.c = Operand::reg(3);
  b.instrs.push_back(st);
  b.term.kind = Term::EXIT;
  prog.blocks.push_back(b);
  prog.threads = 32;
  prog.ctas = 1;
  return prog;
}

TEST(NativeFloat, OnlyMachinesWithThemRunThem) {
  const Program prog = add_program();
  EXPECT_NO_THROW(validate(prog, cuda_params(1u << 20)));
  Params cuda_without = cuda_params(1u << 20);
  cuda_without.native_float = false;
  for (const Params& p : {default_params(), model_params(), cuda_without})
    try {
      validate(prog, p);
      ADD_FAILURE() << "a float operation passed validation on a machine without native floats";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("native floating-point operation"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("block 0 instruction 4: i2f.rn r1, r4"), std::string::npos) << e.what();
    }
  launch::GlobalMemory mem;
  mem.base = default_params().global_base;
  mem.bytes = launch::DeviceBytes(1u << 20);
  EXPECT_THROW(Interpreter(prog, cuda_without, 1, 32, {}, mem), std::invalid_argument);
  // An op value past the table, and invalid modifiers.
  Program bad = prog;
  bad.blocks[0].instrs[4].op = Op(kOpCount);
  EXPECT_THROW(validate(bad, cuda_params(1u << 20)), std::invalid_argument);
  bad.blocks[0].instrs[4].op = Op(255);
  EXPECT_THROW(validate(bad, cuda_params(1u << 20)), std::invalid_argument);
  bad = prog;
  bad.blocks[0].instrs[4].fmod.rnd = FRnd(uint8_t(FRnd::Rpi) + 1);
  EXPECT_THROW(validate(bad, cuda_params(1u << 20)), std::invalid_argument);
  bad = prog;
  bad.blocks[0].instrs[4] = make_float(Op::FCMP, 1, Operand::reg(4), Operand::reg(4), Operand::k(0), FloatMod{});
  EXPECT_THROW(validate(bad, cuda_params(1u << 20)), std::invalid_argument);  // no comparison
  bad.blocks[0].instrs[4].fmod.cmp = FCmp::Lt;
  EXPECT_NO_THROW(validate(bad, cuda_params(1u << 20)));
}

TEST(NativeFloat, InterpreterRunsWarpsAndRecords) {
  for (uint32_t lanes : {32u, 8u})
    for (bool record : {false, true}) {
      const Program prog = add_program(lanes);
      Params p = cuda_params(1u << 20);
      p.lanes = lanes;
      launch::GlobalMemory mem;
      mem.base = p.global_base;
      mem.bytes = launch::DeviceBytes(1u << 20);
      Interpreter in(prog, p, 1, 20, {}, mem);  // 20 threads: a partial warp
      StepRecord rec;
      if (record)
        while (in.step(&rec)) {
        }
      else
        in.run();
      ASSERT_EQ(in.fault().error, 0) << in.fault().message;
      for (uint32_t t = 0; t < 32; ++t) {
        uint32_t got;
        std::memcpy(&got, &mem.bytes[4 * t], 4);
        const uint32_t want = t < 20 ? ptx::fref::add(ptx::fref::from_int(t, true, 32, Rnd::Rn), 0x3EAAAAABu, Rnd::Rz,
                                                      false, false)
                                     : 0;
        EXPECT_EQ(hex(got), hex(want)) << "thread " << t << ", " << lanes << " lanes";
      }
    }
}

// The lowering emits native float operations only when asked, and then
// fewer instructions.
TEST(NativeFloat, LoweringEmitsThemWhenAsked) {
  const std::string ptx = R"(.version 8.5
.target sm_75
.address_size 64
.visible .entry k(.param .u64 p)
{
  .reg .pred %p<2>;
  .reg .b32 %r<4>;
  .reg .f32 %f<6>;
  .reg .b64 %rd<3>;
  ld.param.u64 %rd1, [p];
  mov.u32 %r1, %tid.x;
  cvt.rn.f32.u32 %f1, %r1;
  fma.rn.f32 %f2, %f1, %f1, 0f3F800000;
  setp.gtu.f32 %p1, %f2, 0f41200000;
  selp.f32 %f3, %f2, %f1, %p1;
  cvt.rzi.s32.f32 %r2, %f3;
  mul.wide.u32 %rd2, %r1, 4;
  add.s64 %rd2, %rd1, %rd2;
  st.global.u32 [%rd2], %r2;
  ret;
}
)";
  const Params p = cuda_params(1u << 20);
  ModuleImage img = load_module(ptx, p);
  const uint64_t out = img.alloc(32 * 4);
  std::vector<uint8_t> params(8);
  std::memcpy(params.data(), &out, 8);
  uint64_t lane_instrs[2] = {0, 0};
  for (bool nat : {false, true}) {
    const Program prog = lower(img.module, "k", {{1, 1, 1}, {32, 1, 1}, 0, img.symbols}, p, {.native_float = nat});
    size_t floats = 0;
    for (const Block& b : prog.blocks)
      for (const Instr& in : b.instrs) floats += is_float(in.op);
    EXPECT_EQ(floats > 0, nat);
    if (nat) {
      Params without = p;
      without.native_float = false;
      EXPECT_THROW(validate(prog, without), std::invalid_argument);
    }
    launch::GlobalMemory mem = img.mem;
    Interpreter in(prog, p, prog.ctas, prog.threads, params, mem);
    in.run();
    ASSERT_EQ(in.fault().error, 0) << in.fault().message;
    lane_instrs[nat] = in.stats().lane_instructions;
    for (uint32_t t = 0; t < 32; ++t) {
      int32_t got;
      std::memcpy(&got, &mem.bytes[out - mem.base + 4 * t], 4);
      const float f = float(t), f2 = f * f + 1.0f;
      EXPECT_EQ(got, int32_t(f2 > 10.0f ? f2 : f)) << "thread " << t << (nat ? " (native)" : " (softfloat)");
    }
  }
  EXPECT_LT(lane_instrs[1] * 4, lane_instrs[0]);
  std::printf("lane instructions: %llu (integer sequences), %llu (native floats)\n",
              (unsigned long long)lane_instrs[0], (unsigned long long)lane_instrs[1]);
}

}  // namespace
}  // namespace qgpu::machine
