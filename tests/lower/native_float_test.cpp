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

#include <cfenv>
#include <cmath>
#include <cstdio>
#include <functional>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "float_cases.h"
#include "model_host/lower/lower.h"
#include "model_host/lower/softfloat.h"
#include "model_host/machine/api.h"
#include "model_host/machine/float_eval.h"
#include "model_host/machine/image.h"
#include "model_host/machine/interpreter.h"
#include "model_host/ptx/float_ref.h"

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
        // The lowering passes the integer rounding (cvt.rzi.s32.f32 as f2i.rzi).
        const FloatMod m = mod(kRndIs[r], ftz, false);
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

// ---- f64 (DADD .. DRINT) -------------------------------------------------------
//
// Each native f64 op's 64-bit result (its .lo and .hi instructions) against
// the software floating point's binary64 generators and the PTX-level
// reference (ptx::fref): the edge pairs of floattest::edges64() and random
// operands (kPairs / 4 per operation and rounding, kPairs / 16 for the long
// sequences; QGPU_FLOAT_PAIRS=16000000 compares 4 million and 1 million).

// The op on register operands as the lowering emits it: source k's words in
// operands 2k (low) and 2k + 1 (high); a wide result assembled from the .lo
// and the .hi instruction.
uint64_t native64(Op f, FloatMod m, uint64_t x, uint64_t y = 0, uint64_t z = 0) {
  const Operand regs[kMaxArity] = {Operand::reg(1), Operand::reg(2), Operand::reg(3),
                                   Operand::reg(4), Operand::reg(5), Operand::reg(6)};
  const uint32_t v[kMaxArity] = {uint32_t(x), uint32_t(x >> 32), uint32_t(y), uint32_t(y >> 32),
                                 uint32_t(z), uint32_t(z >> 32)};
  m.hi = false;
  const uint64_t lo = eval_float(make_float(f, 0, regs, m), v);
  if (!has_wide_result(f)) return lo;
  m.hi = true;
  return lo | uint64_t(eval_float(make_float(f, 0, regs, m), v)) << 32;
}
softfloat::Gen::W W64(uint64_t x) { return {K(uint32_t(x)), K(uint32_t(x >> 32))}; }
uint64_t U64(softfloat::Gen::W w) { return uint64_t(w.second.v) << 32 | w.first.v; }
std::string hex64(uint64_t v) {
  char b[24];
  std::snprintf(b, sizeof b, "0x%016llx", (unsigned long long)v);
  return b;
}

// Compares the native op, the generators and the reference on every edge
// pair (edge value, for one operand) and `n` random operand pairs; fma's
// third operand cycles through values that cancel the product.
void check64(const std::string& name, int arity, uint64_t n,
             const std::function<uint64_t(uint64_t, uint64_t, uint64_t)>& nat,
             const std::function<uint64_t(uint64_t, uint64_t, uint64_t)>& soft,
             const std::function<uint64_t(uint64_t, uint64_t, uint64_t)>& ref) {
  const std::vector<uint64_t> E = floattest::edges64();
  std::mt19937_64 rng(std::hash<std::string>()(name));
  uint64_t compared = 0;
  auto one = [&](uint64_t a, uint64_t b, uint64_t c) {
    ++compared;
    const uint64_t x = nat(a, b, c), y = soft(a, b, c), z = ref(a, b, c);
    if (x == y && x == z) return true;
    ADD_FAILURE() << name << " " << hex64(a) << " " << hex64(b) << " " << hex64(c) << ": native " << hex64(x)
                  << ", softfloat " << hex64(y) << ", reference " << hex64(z);
    return false;
  };
  auto third = [&](uint64_t a, uint64_t b, size_t i) -> uint64_t {
    switch (i % 4) {
      case 0: return a ^ b;
      case 1: return ptx::fref::mul64(a, b, Rnd::Rn) ^ 0x8000000000000000ull ^ (b & 3);  // cancels a * b
      case 2: return E[i % E.size()];
      default: return floattest::any64(rng);
    }
  };
  size_t k = 0;
  for (uint64_t a : E) {
    if (arity == 1) {
      if (!one(a, 0, 0)) return;
      continue;
    }
    for (uint64_t b : E)
      if (!one(a, b, arity == 3 ? third(a, b, k++) : 0)) return;
  }
  for (uint64_t i = 0; i < n; ++i) {
    const uint64_t a = floattest::any64(rng);
    uint64_t b;
    switch (i % 3) {
      case 0: b = floattest::any64(rng); break;
      case 1: b = a ^ 0x8000000000000000ull ^ (rng() % 4); break;  // cancellation
      default: b = (a ^ (rng() % 2 ? 0x8000000000000000ull : 0)) + ((rng() % 128) << 52) - (rng() % 1024); break;
    }
    if (!one(a, b, arity == 3 ? third(a, b, i) : 0)) return;
  }
  EXPECT_GT(compared, n);
}

const char* kRndNames[] = {".rn", ".rz", ".rm", ".rp"};

TEST(NativeFloat64, AddSubMulFma) {
  for (int r = 0; r < 4; ++r) {
    const FloatMod m = mod(kRnds[r], false, false);
    const Round rr = kRounds[r];
    const Rnd pr = kRnds[r];
    const std::string s = kRndNames[r];
    check64("add.f64" + s, 2, kPairs / 4, [&](uint64_t a, uint64_t b, uint64_t) { return native64(Op::DADD, m, a, b); },
            [&](uint64_t a, uint64_t b, uint64_t) { return U64(folding().add64(W64(a), W64(b), rr)); },
            [&](uint64_t a, uint64_t b, uint64_t) { return ptx::fref::add64(a, b, pr); });
    check64("sub.f64" + s, 2, kPairs / 4, [&](uint64_t a, uint64_t b, uint64_t) { return native64(Op::DSUB, m, a, b); },
            [&](uint64_t a, uint64_t b, uint64_t) { return U64(folding().sub64(W64(a), W64(b), rr)); },
            [&](uint64_t a, uint64_t b, uint64_t) { return ptx::fref::sub64(a, b, pr); });
    check64("mul.f64" + s, 2, kPairs / 4, [&](uint64_t a, uint64_t b, uint64_t) { return native64(Op::DMUL, m, a, b); },
            [&](uint64_t a, uint64_t b, uint64_t) { return U64(folding().mul64(W64(a), W64(b), rr)); },
            [&](uint64_t a, uint64_t b, uint64_t) { return ptx::fref::mul64(a, b, pr); });
    check64("fma.f64" + s, 3, kPairs / 4,
            [&](uint64_t a, uint64_t b, uint64_t c) { return native64(Op::DFMA, m, a, b, c); },
            [&](uint64_t a, uint64_t b, uint64_t c) { return U64(folding().fma64(W64(a), W64(b), W64(c), rr)); },
            [&](uint64_t a, uint64_t b, uint64_t c) { return ptx::fref::fma64(a, b, c, pr); });
  }
}

TEST(NativeFloat64, DivRcpSqrt) {
  const uint64_t n = kPairs / 16;  // the generators' division and root are long sequences
  for (int r = 0; r < 4; ++r) {
    const FloatMod m = mod(kRnds[r], false, false);
    const Round rr = kRounds[r];
    const Rnd pr = kRnds[r];
    const std::string s = kRndNames[r];
    check64("div.f64" + s, 2, n, [&](uint64_t a, uint64_t b, uint64_t) { return native64(Op::DDIV, m, a, b); },
            [&](uint64_t a, uint64_t b, uint64_t) { return U64(folding().div64(W64(a), W64(b), rr)); },
            [&](uint64_t a, uint64_t b, uint64_t) { return ptx::fref::div64(a, b, pr); });
    const uint64_t one = 0x3FF0000000000000ull;  // rcp.f64: 1 / a
    check64("rcp.f64" + s, 1, n, [&](uint64_t a, uint64_t, uint64_t) { return native64(Op::DDIV, m, one, a); },
            [&](uint64_t a, uint64_t, uint64_t) { return U64(folding().div64(W64(one), W64(a), rr)); },
            [&](uint64_t a, uint64_t, uint64_t) { return ptx::fref::div64(one, a, pr); });
    check64("sqrt.f64" + s, 1, n, [&](uint64_t a, uint64_t, uint64_t) { return native64(Op::DSQRT, m, a); },
            [&](uint64_t a, uint64_t, uint64_t) { return U64(folding().sqrt64(W64(a), rr)); },
            [&](uint64_t a, uint64_t, uint64_t) { return ptx::fref::sqrt64(a, pr); });
  }
}

TEST(NativeFloat64, MinMaxCompare) {
  const FloatMod m = mod(Rnd::Rn, false, false);
  check64("min.f64", 2, kPairs / 4, [&](uint64_t a, uint64_t b, uint64_t) { return native64(Op::DMIN, m, a, b); },
          [&](uint64_t a, uint64_t b, uint64_t) { return U64(folding().min64(W64(a), W64(b))); },
          [&](uint64_t a, uint64_t b, uint64_t) { return ptx::fref::min64(a, b); });
  check64("max.f64", 2, kPairs / 4, [&](uint64_t a, uint64_t b, uint64_t) { return native64(Op::DMAX, m, a, b); },
          [&](uint64_t a, uint64_t b, uint64_t) { return U64(folding().max64(W64(a), W64(b))); },
          [&](uint64_t a, uint64_t b, uint64_t) { return ptx::fref::max64(a, b); });
  using C = ptx::Cmp;
  for (C c : {C::Eq, C::Ne, C::Lt, C::Le, C::Gt, C::Ge, C::Equ, C::Neu, C::Ltu, C::Leu, C::Gtu, C::Geu, C::Num,
              C::Nan}) {
    FloatMod cm = m;
    cm.cmp = from_ptx(c);
    check64("setp.f64." + std::to_string(int(c)), 2, kPairs / 16,
            [&](uint64_t a, uint64_t b, uint64_t) { return native64(Op::DCMP, cm, a, b); },
            [&](uint64_t a, uint64_t b, uint64_t) { return uint64_t(folding().compare64(c, W64(a), W64(b)).v); },
            [&](uint64_t a, uint64_t b, uint64_t) { return uint64_t(ptx::fref::compare64(c, a, b)); });
  }
}

TEST(NativeFloat64, Conversions) {
  const uint64_t n = kPairs / 16;
  for (int r = 0; r < 4; ++r) {
    const Round rr = kRounds[r];
    const std::string s = kRndNames[r];
    // cvt.rnd.f32.f64 (.ftz, .sat)
    for (bool ftz : {false, true})
      for (bool sat : {false, true}) {
        const FloatMod m = mod(kRnds[r], ftz, sat);
        check64(std::string("cvt") + s + (ftz ? ".ftz" : "") + (sat ? ".sat" : "") + ".f32.f64", 1, n,
                [&](uint64_t a, uint64_t, uint64_t) { return native64(Op::D2F, m, a); },
                [&](uint64_t a, uint64_t, uint64_t) {
                  return uint64_t(folding().from_f64(K(uint32_t(a)), K(uint32_t(a >> 32)), rr, ftz, sat).v);
                },
                [&](uint64_t a, uint64_t, uint64_t) { return uint64_t(ptx::fref::from_f64(a, kRnds[r], ftz, sat)); });
      }
    // cvt.rnd{.sat}.f64.{s,u}64 and .{s,u}32 (the lowering extends a 32-bit source)
    for (bool sgn : {false, true})
      for (bool sat : {false, true}) {
        const FloatMod m = mod(kRnds[r], false, sat);
        const Op op = sgn ? Op::L2D : Op::UL2D;
        const std::string ss = s + (sat ? ".sat" : "");
        auto gsat = [sat](softfloat::Gen::W x) { return sat ? folding().saturate64(x) : x; };
        check64(std::string("cvt") + ss + ".f64." + (sgn ? "s64" : "u64"), 1, n,
                [&](uint64_t a, uint64_t, uint64_t) { return native64(op, m, a); },
                [&](uint64_t a, uint64_t, uint64_t) { return U64(gsat(folding().from_int_to64(W64(a), sgn, rr))); },
                [&](uint64_t a, uint64_t, uint64_t) {
                  return ptx::fref::saturate64(ptx::fref::int_to_f64(a, sgn, 64, kRnds[r]), sat);
                });
        auto ext = [sgn](uint64_t a) {
          return sgn ? uint64_t(int64_t(int32_t(uint32_t(a)))) : uint64_t(uint32_t(a));
        };
        check64(std::string("cvt") + ss + ".f64." + (sgn ? "s32" : "u32"), 1, n,
                [&](uint64_t a, uint64_t, uint64_t) { return native64(op, m, ext(a)); },
                [&](uint64_t a, uint64_t, uint64_t) {
                  return U64(gsat(folding().from_int_to64(W64(ext(a)), sgn, rr)));
                },
                [&](uint64_t a, uint64_t, uint64_t) {
                  return ptx::fref::saturate64(ptx::fref::int_to_f64(a, sgn, 32, kRnds[r]), sat);
                });
      }
    // cvt.rndi.{s,u}{32,64}.f64 and cvt.rndi.f64.f64
    const FloatMod mi = mod(kRndIs[r], false, false);
    for (unsigned bits : {32u, 64u})
      for (bool sgn : {false, true}) {
        const Op op = bits == 32 ? (sgn ? Op::D2I : Op::D2U) : (sgn ? Op::D2L : Op::D2UL);
        check64(std::string("cvt") + s + "i." + (sgn ? "s" : "u") + std::to_string(bits) + ".f64", 1, n,
                [&](uint64_t a, uint64_t, uint64_t) { return native64(op, mi, a); },
                [&](uint64_t a, uint64_t, uint64_t) {
                  const uint64_t v = U64(folding().to_int_from64(W64(a), sgn, bits, rr));
                  return bits == 32 ? v & 0xFFFFFFFFu : v;
                },
                [&](uint64_t a, uint64_t, uint64_t) { return ptx::fref::f64_to_int(a, sgn, bits, kRndIs[r]); });
      }
    check64(std::string("cvt") + s + "i.f64.f64", 1, n,
            [&](uint64_t a, uint64_t, uint64_t) { return native64(Op::DRINT, mi, a); },
            [&](uint64_t a, uint64_t, uint64_t) { return U64(folding().round_int64(W64(a), rr)); },
            [&](uint64_t a, uint64_t, uint64_t) { return ptx::fref::round_int_f64(a, kRndIs[r]); });
    const FloatMod mis = mod(kRndIs[r], false, true);
    check64(std::string("cvt") + s + "i.sat.f64.f64", 1, n,
            [&](uint64_t a, uint64_t, uint64_t) { return native64(Op::DRINT, mis, a); },
            [&](uint64_t a, uint64_t, uint64_t) { return U64(folding().saturate64(folding().round_int64(W64(a), rr))); },
            [&](uint64_t a, uint64_t, uint64_t) {
              return ptx::fref::saturate64(ptx::fref::round_int_f64(a, kRndIs[r]), true);
            });
  }
  // cvt.f64.f32 (.ftz, .sat): every f32 edge value and random ones.
  for (bool ftz : {false, true})
    for (bool sat : {false, true}) {
      const FloatMod m = mod(Rnd::Rn, ftz, sat);
      floattest::Operands gen(ftz);
      std::vector<uint32_t> fs = floattest::edges();
      for (uint64_t i = 0; i < n; ++i) fs.push_back(gen.any());
      for (uint32_t f : fs) {
        const uint64_t x = native64(Op::F2D, m, f);
        auto [lo, hi] = folding().to_f64(K(f), ftz);
        if (sat) std::tie(lo, hi) = folding().saturate64({lo, hi});
        const std::string name = std::string("cvt") + (ftz ? ".ftz" : "") + (sat ? ".sat" : "") + ".f64.f32 ";
        ASSERT_EQ(hex64(x), hex64(uint64_t(hi.v) << 32 | lo.v)) << name << hex(f);
        ASSERT_EQ(hex64(x), hex64(ptx::fref::saturate64(ptx::fref::to_f64(f, ftz), sat))) << name << hex(f);
      }
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

// validate() refuses a float instruction whose modifiers do not fit its op
// (docs/isa.md section 3.5, "Modifiers"), naming the instruction and the
// modifier; the fitting forms next to them pass.
TEST(NativeFloat, ValidateRefusesModifiersThatDoNotFitTheOp) {
  struct M {
    Op op;
    FRnd rnd;
    bool ftz = false, sat = false, hi = false;
    FCmp cmp = FCmp::None;
  };
  struct Misfit {
    M m;
    const char* name;      // the op, as printed
    const char* modifier;  // the modifier that does not fit
  };
  auto instr = [](const M& x) {
    const Operand s[kMaxArity] = {Operand::reg(1), Operand::reg(2), Operand::reg(3),
                                  Operand::reg(4), Operand::reg(5), Operand::reg(6)};
    Instr in;
    in.op = x.op;
    in.dst = 1;
    for (int k = 0; k < op_info(x.op).arity; ++k) in.src(k) = s[k];
    in.fmod.rnd = x.rnd;
    in.fmod.ftz = x.ftz;
    in.fmod.sat = x.sat;
    in.fmod.hi = x.hi;
    in.fmod.cmp = x.cmp;
    return in;
  };
  const Params cuda = cuda_params(1u << 20);
  const Misfit misfits[] = {
      // A rounding of the other kind, or one on an op that does not round.
      {{Op::FADD, FRnd::Rni}, "fadd", ".rni"},
      {{Op::FFMA, FRnd::Rpi}, "ffma", ".rpi"},
      {{Op::FDIV, FRnd::None}, "fdiv", "none"},
      {{Op::FSQRT, FRnd::Rzi}, "fsqrt", ".rzi"},
      {{Op::I2F, FRnd::Rmi}, "i2f", ".rmi"},
      {{Op::DADD, FRnd::Rni}, "dadd", ".rni"},
      {{Op::D2F, FRnd::Rzi}, "d2f", ".rzi"},
      {{Op::L2D, FRnd::Rpi}, "l2d", ".rpi"},
      {{Op::F2I, FRnd::Rz}, "f2i", ".rz"},
      {{Op::F2U, FRnd::Rn}, "f2u", ".rn"},
      {{Op::D2I, FRnd::Rm}, "d2i", ".rm"},
      {{Op::D2UL, FRnd::None, false, false, true}, "d2ul", "none"},
      {{Op::DRINT, FRnd::Rp, false, false, true}, "drint", ".rp"},
      {{Op::FRINT, FRnd::Rn}, "frint", ".rn"},
      {{Op::FMIN, FRnd::Rz}, "fmin", ".rz"},
      {{Op::FEX2, FRnd::Rni}, "fex2", ".rni"},
      {{Op::FCMP, FRnd::Rm, false, false, false, FCmp::Lt}, "fcmp", ".rm"},
      {{Op::DMAX, FRnd::Rp}, "dmax", ".rp"},
      {{Op::F2D, FRnd::Rz}, "f2d", ".rz"},
      {{Op::FADD, FRnd(uint8_t(FRnd::Rpi) + 1)}, "fadd", "not a rounding"},
      // A comparison on an op that is not one, and none on one that is.
      {{Op::FADD, FRnd::Rn, false, false, false, FCmp::Lt}, "fadd", ".lt"},
      {{Op::DSUB, FRnd::Rn, false, false, false, FCmp::Nan}, "dsub", ".nan"},
      {{Op::FCMP, FRnd::Rn}, "fcmp", "comparison"},
      {{Op::DCMP, FRnd::Rn}, "dcmp", "comparison"},
      {{Op::FCMP, FRnd::Rn, false, false, false, FCmp(uint8_t(FCmp::Nan) + 1)}, "fcmp", "not a comparison"},
      // .hi on a one-word result.
      {{Op::FADD, FRnd::Rn, false, false, true}, "fadd", ".hi"},
      {{Op::D2F, FRnd::Rn, false, false, true}, "d2f", ".hi"},
      {{Op::DCMP, FRnd::Rn, false, false, true, FCmp::Eq}, "dcmp", ".hi"},
      {{Op::D2I, FRnd::Rzi, false, false, true}, "d2i", ".hi"},
      // .sat where the op has none.
      {{Op::FSQRT, FRnd::Rn, false, true}, "fsqrt", ".sat"},
      {{Op::FMIN, FRnd::Rn, false, true}, "fmin", ".sat"},
      {{Op::FCMP, FRnd::Rn, false, true, false, FCmp::Ge}, "fcmp", ".sat"},
      {{Op::F2I, FRnd::Rni, false, true}, "f2i", ".sat"},
      {{Op::FSIN, FRnd::Rn, false, true}, "fsin", ".sat"},
      {{Op::DADD, FRnd::Rn, false, true}, "dadd", ".sat"},
      {{Op::DFMA, FRnd::Rz, false, true, true}, "dfma", ".sat"},
      {{Op::DMIN, FRnd::Rn, false, true}, "dmin", ".sat"},
      {{Op::D2L, FRnd::Rzi, false, true}, "d2l", ".sat"},
      // .ftz where the op has none.
      {{Op::I2F, FRnd::Rn, true}, "i2f", ".ftz"},
      {{Op::U2F, FRnd::Rz, true}, "u2f", ".ftz"},
      {{Op::DMUL, FRnd::Rn, true}, "dmul", ".ftz"},
      {{Op::DSQRT, FRnd::Rn, true}, "dsqrt", ".ftz"},
      {{Op::L2D, FRnd::Rn, true}, "l2d", ".ftz"},
      {{Op::DRINT, FRnd::Rni, true}, "drint", ".ftz"},
      {{Op::D2U, FRnd::Rni, true}, "d2u", ".ftz"},
  };
  for (const Misfit& x : misfits) {
    Program bad = add_program();
    bad.blocks[0].instrs[4] = instr(x.m);
    const std::string printed = to_string(bad.blocks[0].instrs[4]);
    try {
      validate(bad, cuda);
      ADD_FAILURE() << printed << " passed validation";
    } catch (const std::invalid_argument& e) {
      const std::string w = e.what();
      EXPECT_NE(w.find("block 0 instruction 4: " + printed), std::string::npos) << w;
      EXPECT_NE(w.find(std::string(x.name) + " "), std::string::npos) << w;
      EXPECT_NE(w.find(x.modifier), std::string::npos) << w;
    }
  }
  // The forms that fit pass.
  const M fits[] = {
      {Op::FADD, FRnd::Rz, true, true},         {Op::FFMA, FRnd::Rp, true, true},
      {Op::FDIV, FRnd::Rm, true, true},         {Op::FSQRT, FRnd::Rz, true},
      {Op::FMIN, FRnd::Rn, true},               {Op::FMAX, FRnd::None, true},
      {Op::FCMP, FRnd::None, true, false, false, FCmp::Geu},
      {Op::I2F, FRnd::Rm, false, true},         {Op::U2F, FRnd::Rp, false, true},
      {Op::F2I, FRnd::Rzi, true},               {Op::F2U, FRnd::Rpi, true},
      {Op::FRINT, FRnd::None, true, true},      {Op::FRINT, FRnd::Rmi, true, true},
      {Op::FTANH, FRnd::Rn, true},              {Op::DADD, FRnd::Rm, false, false, true},
      {Op::DFMA, FRnd::Rp},                     {Op::DSQRT, FRnd::Rz, false, false, true},
      {Op::DMIN, FRnd::Rn, false, false, true}, {Op::DCMP, FRnd::Rn, false, false, false, FCmp::Num},
      {Op::F2D, FRnd::Rn, true, true, true},    {Op::D2F, FRnd::Rz, true, true},
      {Op::L2D, FRnd::Rm, false, true, true},   {Op::UL2D, FRnd::Rn, false, true},
      {Op::D2I, FRnd::Rzi},                     {Op::D2UL, FRnd::Rmi, false, false, true},
      {Op::DRINT, FRnd::Rpi, false, true, true},
  };
  for (const M& x : fits) {
    Program good = add_program();
    good.blocks[0].instrs[4] = instr(x);
    EXPECT_NO_THROW(validate(good, cuda)) << to_string(good.blocks[0].instrs[4]);
  }
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


// f64 through the whole lowering: a kernel of every native f64 op kind run
// by a warp, lowered with native floats and with integer sequences, on the
// CUDA-sized machine and on one of 12 registers (where the f64 ops' operands
// spill, six sources reloaded through scratch registers): the same memory.
TEST(NativeFloat64, LoweringMatchesIntegerSequences) {
  const std::string ptx = R"(.version 8.5
.target sm_75
.address_size 64
.visible .entry k(.param .u64 p)
{
  .reg .pred %p<2>;
  .reg .b32 %r<5>;
  .reg .f32 %f<3>;
  .reg .f64 %fd<16>;
  .reg .b64 %rd<6>;
  ld.param.u64 %rd1, [p];
  mov.u32 %r1, %tid.x;
  cvt.rn.f64.u32 %fd1, %r1;
  add.s32 %r2, %r1, -7;
  cvt.rn.f64.s32 %fd2, %r2;
  div.rn.f64 %fd3, %fd1, %fd2;
  fma.rn.f64 %fd4, %fd3, %fd2, %fd1;
  sqrt.rn.f64 %fd5, %fd4;
  mul.rz.f64 %fd6, %fd5, 0d3FB999999999999A;
  sub.rm.f64 %fd7, %fd6, %fd3;
  min.f64 %fd8, %fd7, %fd5;
  max.f64 %fd9, %fd8, %fd2;
  rcp.rn.f64 %fd10, %fd9;
  fma.rp.f64 %fd11, %fd10, %fd6, %fd7;
  setp.gtu.f64 %p1, %fd11, %fd6;
  selp.f64 %fd12, %fd11, %fd7, %p1;
  cvt.rn.f32.f64 %f1, %fd12;
  cvt.f64.f32 %fd13, %f1;
  add.rn.f64 %fd13, %fd13, %fd12;
  cvt.rzi.s32.f64 %r3, %fd13;
  cvt.rmi.f64.f64 %fd14, %fd13;
  mul.rn.f64 %fd14, %fd14, 0d43E0000000000000;
  cvt.rpi.s64.f64 %rd2, %fd14;
  cvt.rn.f64.s64 %fd15, %rd2;
  div.rz.f64 %fd15, %fd15, %fd13;
  mul.wide.u32 %rd3, %r1, 40;
  add.s64 %rd3, %rd1, %rd3;
  st.global.f64 [%rd3], %fd15;
  st.global.u32 [%rd3+8], %r3;
  st.global.f32 [%rd3+12], %f1;
  st.global.u64 [%rd3+16], %rd2;
  st.global.f64 [%rd3+24], %fd11;
  st.global.f64 [%rd3+32], %fd4;
  ret;
}
)";
  for (uint32_t regs : {255u, 12u}) {
    Params p = cuda_params(1u << 20);
    p.regs = regs;
    ModuleImage img = load_module(ptx, p);
    const uint64_t out = img.alloc(32 * 40);
    std::vector<uint8_t> params(8);
    std::memcpy(params.data(), &out, 8);
    std::vector<uint8_t> result[2];
    uint64_t lane_instrs[2] = {0, 0};
    for (bool nat : {false, true}) {
      const Program prog = lower(img.module, "k", {{1, 1, 1}, {32, 1, 1}, 0, img.symbols}, p, {.native_float = nat});
      size_t f64_ops = 0, reloaded = 0;  // f64 ops, and those reading a spill scratch register
      for (const Block& b : prog.blocks)
        for (const Instr& in : b.instrs) {
          if (!is_f64(in.op)) continue;
          ++f64_ops;
          bool scratch = false;
          for (int k = 0; k < op_info(in.op).arity; ++k)
            scratch |= !in.src(k).imm && in.src(k).v >= regs - kMaxArity;
          reloaded += scratch;
        }
      EXPECT_EQ(f64_ops > 0, nat);
      if (nat && regs == 12) {
        EXPECT_GT(prog.local_bytes, 0u) << "nothing spilled";
        EXPECT_GT(reloaded, 0u) << "no f64 operation read a reloaded operand";
      }
      launch::GlobalMemory mem = img.mem;
      Interpreter in(prog, p, prog.ctas, prog.threads, params, mem);
      in.run();
      ASSERT_EQ(in.fault().error, 0) << in.fault().message;
      lane_instrs[nat] = in.stats().lane_instructions;
      result[nat].assign(&mem.bytes[out - mem.base], &mem.bytes[out - mem.base] + 32 * 40);
    }
    for (uint32_t t = 0; t < 32; ++t)
      for (uint32_t w = 0; w < 10; ++w) {
        uint32_t a, b;
        std::memcpy(&a, &result[0][40 * t + 4 * w], 4);
        std::memcpy(&b, &result[1][40 * t + 4 * w], 4);
        EXPECT_EQ(hex(b), hex(a)) << "thread " << t << " word " << w << ", " << regs << " registers";
      }
    // The first fma.rn as the host computes it: t / (t - 7) * (t - 7) + t.
    for (uint32_t t = 0; t < 32; ++t) {
      const double q = double(t) / (double(t) - 7.0), want = std::fma(q, double(t) - 7.0, double(t));
      uint64_t got;
      std::memcpy(&got, &result[1][40 * t + 32], 8);
      EXPECT_EQ(hex64(got), hex64(std::isnan(want) ? ptx::fref::kNaN64 : floattest::double_bits(want)))
          << "thread " << t;
    }
    EXPECT_LT(lane_instrs[1] * 4, lane_instrs[0]) << regs << " registers";
    std::printf("%u registers: lane instructions %llu (integer sequences), %llu (native f64)\n", regs,
                (unsigned long long)lane_instrs[0], (unsigned long long)lane_instrs[1]);
  }
}

// The model's machine (Params::native_rn) has ffma .rn without .ftz or .sat,
// and no other float op or modifier.
TEST(NativeFloat, TheModelsMachineHasFfmaRoundToNearestOnly) {
  auto one = [](Op op, const FloatMod& m) {
    Program prog;
    prog.blocks.resize(1);
    prog.blocks[0].instrs.push_back(make_float(op, 1, Operand::reg(2), Operand::reg(3), Operand::reg(4), m));
    prog.blocks[0].term.kind = Term::EXIT;
    prog.threads = 1;
    prog.ctas = 1;
    return prog;
  };
  const FloatMod rn = mod(Rnd::Rn, false, false);
  EXPECT_FALSE(model_params().native_float);
  EXPECT_TRUE(default_params().native_rn.empty());
  for (Op op : {Op::FFMA}) {
    EXPECT_TRUE(model_params().has_native_rn(op)) << op_info(op).name;
    EXPECT_NO_THROW(validate(one(op, rn), model_params())) << op_info(op).name;
    EXPECT_THROW(validate(one(op, rn), default_params()), std::invalid_argument) << op_info(op).name;
    for (const FloatMod& m : {mod(Rnd::Rz, false, false), mod(Rnd::Rm, false, false), mod(Rnd::Rp, false, false),
                              mod(Rnd::Rn, true, false), mod(Rnd::Rn, false, true)})
      try {
        validate(one(op, m), model_params());
        ADD_FAILURE() << to_string(one(op, m).blocks[0].instrs[0]) << " passed on the model's machine";
      } catch (const std::invalid_argument& e) {
        EXPECT_NE(std::string(e.what()).find(".rn without .ftz or .sat only"), std::string::npos) << e.what();
      }
  }
  for (Op op : {Op::FADD, Op::FSUB, Op::FMUL, Op::FDIV, Op::FMIN, Op::FCMP, Op::I2F, Op::DADD})
    EXPECT_THROW(validate(one(op, rn), model_params()), std::invalid_argument) << op_info(op).name;
}

TEST(NativeFloat64, OnlyMachinesWithThemRunThem) {
  Program prog = add_program();
  // i2f.rn r1 becomes f2d.lo r1 of the f32 r4 (any f64 op).
  FloatMod m = mod(Rnd::Rn, false, false);
  const Operand s[kMaxArity] = {Operand::reg(4), K(0), K(0), K(0), K(0), K(0)};
  prog.blocks[0].instrs[4] = make_float(Op::F2D, 1, s, m);
  EXPECT_NO_THROW(validate(prog, cuda_params(1u << 20)));
  EXPECT_EQ(to_string(prog.blocks[0].instrs[4]), "f2d.rn.lo r1, r4");
  for (const Params& p : {default_params(), model_params()})
    EXPECT_THROW(validate(prog, p), std::invalid_argument);
  // Six sources, each register checked.
  const Operand s6[kMaxArity] = {Operand::reg(1), Operand::reg(2), Operand::reg(3),
                                 Operand::reg(4), Operand::reg(5), Operand::reg(6)};
  m.hi = true;
  prog.blocks[0].instrs[4] = make_float(Op::DFMA, 1, s6, m);
  EXPECT_EQ(to_string(prog.blocks[0].instrs[4]), "dfma.rn.hi r1, r1, r2, r3, r4, r5, r6");
  EXPECT_NO_THROW(validate(prog, cuda_params(1u << 20)));
  Program one;  // dfma alone: r0 = r1 .. r6, on a machine of 6 registers (r6 out of range)
  one.blocks.resize(1);
  one.blocks[0].instrs.push_back(make_float(Op::DFMA, 0, s6, m));
  Params few = cuda_params(1u << 20);
  few.regs = 7;
  EXPECT_NO_THROW(validate(one, few));
  few.regs = 6;
  try {
    validate(one, few);
    ADD_FAILURE() << "register r6 of 6 passed validation";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("register r6 out of range"), std::string::npos) << e.what();
  }
  // .hi only on a wide result, no .ftz or .sat on f64 arithmetic.
  Program bad = prog;
  bad.blocks[0].instrs[4].fmod.ftz = true;
  EXPECT_THROW(validate(bad, cuda_params(1u << 20)), std::invalid_argument);
  bad = prog;
  bad.blocks[0].instrs[4].op = Op::DCMP;
  bad.blocks[0].instrs[4].fmod.cmp = FCmp::Lt;
  EXPECT_THROW(validate(bad, cuda_params(1u << 20)), std::invalid_argument);  // .hi on a comparison
  bad.blocks[0].instrs[4].fmod.hi = false;
  EXPECT_NO_THROW(validate(bad, cuda_params(1u << 20)));
}

// The reference's operations under every host rounding mode (a process that
// set one with fesetround): the host's mode is read as fesetround left it,
// the default-rounding shortcut is taken only under round-to-nearest, and
// every operation rounds as its modifier says whatever the host's mode.
TEST(NativeFloat, HostRoundingModeIsReadAsSet) {
  const int old = std::fegetround();
  const uint32_t one = 0x3F800000u, third = 0x3EAAAAABu, tiny = 0x33800000u;  // 1, ~1/3, 2^-24
  for (const int mode : {FE_TONEAREST, FE_DOWNWARD, FE_UPWARD, FE_TOWARDZERO}) {
    ASSERT_EQ(std::fesetround(mode), 0);
    EXPECT_EQ(ptx::fref::host_rounds_to_nearest(), mode == FE_TONEAREST) << mode;
    // 1 + 2^-24 is halfway between 1 and its successor: .rn gives 1 (even), .rp the successor.
    EXPECT_EQ(ptx::fref::add(one, tiny, ptx::Rnd::Rn, false, false), one) << mode;
    EXPECT_EQ(ptx::fref::add(one, tiny, ptx::Rnd::Rp, false, false), one + 1) << mode;
    EXPECT_EQ(ptx::fref::add(one, tiny, ptx::Rnd::Rz, false, false), one) << mode;
    // 1 / 3: .rn and .rp round up to 0x3EAAAAAB, .rz and .rm down.
    EXPECT_EQ(ptx::fref::div(one, 0x40400000u, ptx::Rnd::Rn, false, false), third) << mode;
    EXPECT_EQ(ptx::fref::div(one, 0x40400000u, ptx::Rnd::Rz, false, false), third - 1) << mode;
    EXPECT_EQ(ptx::fref::div(one, 0x40400000u, ptx::Rnd::Rm, false, false), third - 1) << mode;
    EXPECT_EQ(std::fegetround(), mode) << "the operations leave the host's mode as they found it";
  }
  std::fesetround(old);
}

}  // namespace
}  // namespace qgpu::machine
