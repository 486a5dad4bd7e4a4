// The software floating point's generators (softfloat.h) evaluated directly
// (constant operands fold every operation), bit for bit against the host's
// IEEE arithmetic (float_ref.h): every edge-value pair and random pairs, per
// operation, rounding mode and .ftz.  QGPU_FLOAT_PAIRS=10000000 runs the full
// count (docs/isa.md, section 11).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "float_cases.h"
#include "model_host/lower/softfloat.h"

namespace qgpu::machine {
namespace {

using floattest::hex;
using ptx::Rnd;
using softfloat::Round;

// `ffma`: the generators of a machine that computes ffma (.rn), as the model's.
softfloat::Gen folding(bool ffma = false) {
  return softfloat::Gen(
      [](Op o, Operand, Operand, Operand) -> Operand {
        ADD_FAILURE() << "an operation on constants did not fold: " << op_info(o).name;
        return Operand::k(0);
      },
      ffma);
}
uint32_t val(Operand o) { return o.v; }
Operand K(uint32_t v) { return Operand::k(v); }

const Round kRounds[] = {Round::Rn, Round::Rz, Round::Rm, Round::Rp};
const Rnd kRnds[] = {Rnd::Rn, Rnd::Rz, Rnd::Rm, Rnd::Rp};
const char* kNames[] = {"rn", "rz", "rm", "rp"};

enum class Bin { Add, Sub, Mul };
uint32_t soft(Bin op, uint32_t a, uint32_t b, int r, bool ftz, bool sat) {
  auto g = folding();
  switch (op) {
    case Bin::Add: return val(g.add(K(a), K(b), kRounds[r], ftz, sat));
    case Bin::Sub: return val(g.sub(K(a), K(b), kRounds[r], ftz, sat));
    default: return val(g.mul(K(a), K(b), kRounds[r], ftz, sat));
  }
}
uint32_t ref(Bin op, uint32_t a, uint32_t b, int r, bool ftz, bool sat) {
  switch (op) {
    case Bin::Add: return ptx::fref::add(a, b, kRnds[r], ftz, sat);
    case Bin::Sub: return ptx::fref::sub(a, b, kRnds[r], ftz, sat);
    default: return ptx::fref::mul(a, b, kRnds[r], ftz, sat);
  }
}

void check_binary(Bin op, const char* name, uint64_t n) {
  floattest::Operands gen(1234 + int(op));
  for (int r = 0; r < 4; ++r)
    for (bool ftz : {false, true}) {
      for (uint32_t a : floattest::edges())
        for (uint32_t b : floattest::edges())
          ASSERT_EQ(hex(soft(op, a, b, r, ftz, false)), hex(ref(op, a, b, r, ftz, false)))
              << name << "." << kNames[r] << (ftz ? ".ftz" : "") << " " << hex(a) << " " << hex(b);
      for (uint64_t i = 0; i < n; ++i) {
        uint32_t a = gen.any(), b = i % 2 ? gen.near(a) : gen.any();
        bool sat = i % 16 == 0;
        ASSERT_EQ(hex(soft(op, a, b, r, ftz, sat)), hex(ref(op, a, b, r, ftz, sat)))
            << name << "." << kNames[r] << (ftz ? ".ftz" : "") << (sat ? ".sat" : "") << " " << hex(a) << " "
            << hex(b);
      }
    }
}

TEST(SoftFloat, Add) { check_binary(Bin::Add, "add", floattest::pairs(200000)); }
TEST(SoftFloat, Sub) { check_binary(Bin::Sub, "sub", floattest::pairs(100000)); }
TEST(SoftFloat, Mul) { check_binary(Bin::Mul, "mul", floattest::pairs(200000)); }

TEST(SoftFloat, Fma) {
  const uint64_t n = floattest::pairs(200000);
  floattest::Operands gen(99);
  auto check = [&](uint32_t a, uint32_t b, uint32_t c, int r, bool ftz, bool sat) {
    auto g = folding();
    uint32_t got = val(g.fma(K(a), K(b), K(c), kRounds[r], ftz, sat));
    uint32_t want = ptx::fref::fma(a, b, c, kRnds[r], ftz, sat);
    ASSERT_EQ(hex(got), hex(want)) << "fma." << kNames[r] << (ftz ? ".ftz" : "") << (sat ? ".sat" : "") << " "
                                   << hex(a) << " " << hex(b) << " " << hex(c);
  };
  const auto& E = floattest::edges();
  for (int r = 0; r < 4; ++r)
    for (bool ftz : {false, true}) {
      for (size_t i = 0; i < E.size(); i += 3)
        for (size_t j = 0; j < E.size(); j += 2)
          for (size_t k = 0; k < E.size(); k += 5) check(E[i], E[j], E[k], r, ftz, false);
      for (uint64_t i = 0; i < n; ++i) {
        uint32_t a = gen.any(), b = gen.any(), c;
        switch (i % 3) {
          case 0: c = gen.any(); break;
          case 1: c = gen.near(ptx::fref::mul(a, b, Rnd::Rn, false, false)); break;  // cancellation
          default: c = ptx::fref::mul(a, b, Rnd::Rz, false, false) ^ 0x80000000u; break;
        }
        check(a, b, c, r, ftz, i % 16 == 0);
      }
    }
}

TEST(SoftFloat, MinMaxAbsNegCopysign) {
  floattest::Operands gen(7);
  const auto& E = floattest::edges();
  auto check = [&](uint32_t a, uint32_t b) {
    for (bool ftz : {false, true}) {
      auto g = folding();
      ASSERT_EQ(hex(val(g.min(K(a), K(b), ftz))), hex(ptx::fref::min(a, b, ftz))) << hex(a) << " " << hex(b);
      ASSERT_EQ(hex(val(g.max(K(a), K(b), ftz))), hex(ptx::fref::max(a, b, ftz))) << hex(a) << " " << hex(b);
      ASSERT_EQ(hex(val(g.abs(K(a), ftz))), hex(ptx::fref::abs(a, ftz))) << hex(a);
      ASSERT_EQ(hex(val(g.neg(K(a), ftz))), hex(ptx::fref::neg(a, ftz))) << hex(a);
    }
    auto g = folding();
    ASSERT_EQ(val(g.copysign(K(a), K(b))), ptx::fref::copysign(a, b));
    for (int k = 1; k <= 6; ++k) ASSERT_EQ(val(g.testp(k, K(a))), ptx::fref::testp(ptx::TestpKind(k), a)) << k;
  };
  for (uint32_t a : E)
    for (uint32_t b : E) check(a, b);
  for (int i = 0; i < 100000; ++i) {
    uint32_t a = gen.any();
    check(a, i % 2 ? gen.near(a) : gen.any());
  }
}

TEST(SoftFloat, Comparisons) {
  using ptx::Cmp;
  const Cmp all[] = {Cmp::Eq,  Cmp::Ne,  Cmp::Lt,  Cmp::Le,  Cmp::Gt,  Cmp::Ge,  Cmp::Equ,
                     Cmp::Neu, Cmp::Ltu, Cmp::Leu, Cmp::Gtu, Cmp::Geu, Cmp::Num, Cmp::Nan};
  floattest::Operands gen(8);
  // Each operand as a register and as an immediate (the generators take
  // other paths for constants), on machines with and without ffma.
  std::vector<uint32_t> regs;
  auto reg = [&](uint32_t x) {
    regs.push_back(x);
    return Operand::reg(uint32_t(regs.size() - 1));
  };
  auto value = [&](Operand o) { return o.imm ? o.v : regs[o.v]; };
  auto evaluating = [&](bool ffma) {
    return softfloat::Gen(
        [&](Op o, Operand x, Operand y, Operand z) {
          return reg(o == Op::FFMA ? ptx::fref::fma(value(x), value(y), value(z), Rnd::Rn, false, false)
                                   : eval_alu(o, value(x), value(y), value(z)));
        },
        ffma);
  };
  auto check = [&](uint32_t a, uint32_t b) {
    for (Cmp c : all)
      for (bool ftz : {false, true}) {
        const uint32_t want = ptx::fref::compare(c, a, b, ftz);
        auto g = folding();
        ASSERT_EQ(val(g.compare(c, K(a), K(b), ftz)), want) << int(c) << (ftz ? " ftz " : " ") << hex(a) << " " << hex(b);
        for (bool ffma : {false, true})
          for (int form = 0; form < 3; ++form) {
            regs.clear();
            auto ge = evaluating(ffma);
            Operand x = form == 1 ? K(a) : reg(a), y = form == 2 ? K(b) : reg(b);
            ASSERT_EQ(value(ge.compare(c, x, y, ftz)), want)
                << int(c) << (ftz ? " ftz " : " ") << (ffma ? "ffma " : "") << "form " << form << " " << hex(a) << " "
                << hex(b);
          }
      }
  };
  for (uint32_t a : floattest::edges())
    for (uint32_t b : floattest::edges()) check(a, b);
  for (int i = 0; i < 100000; ++i) {
    uint32_t a = gen.any();
    check(a, i % 2 ? gen.near(a) : a + uint32_t(gen.rng()() % 3) - 1);
  }
}

TEST(SoftFloat, Conversions) {
  floattest::Operands gen(9);
  const uint64_t n = floattest::pairs(200000);
  for (int r = 0; r < 4; ++r) {
    const Rnd ri[] = {Rnd::Rni, Rnd::Rzi, Rnd::Rmi, Rnd::Rpi};
    auto f2i = [&](uint32_t f) {
      for (bool ftz : {false, true})
        for (unsigned bits : {8u, 16u, 32u})
          for (bool sgn : {false, true}) {
            auto g = folding();
            uint32_t got = val(g.to_int32(K(f), sgn, bits, kRounds[r], ftz));
            uint64_t want = ptx::fref::to_int(f, sgn, bits, ri[r], ftz);
            if (sgn && bits < 32 && (want >> (bits - 1)) & 1) want |= ~uint64_t(0) << bits;  // sign-extended
            ASSERT_EQ(hex(got), hex(uint32_t(want)))
                << "cvt." << kNames[r] << "i." << (sgn ? "s" : "u") << bits << ".f32" << (ftz ? " ftz " : " ")
                << hex(f);
          }
      for (bool ftz : {false, true}) {
        auto g = folding();
        for (bool ffma : {false, true})
          for (bool sat : {false, true})
            ASSERT_EQ(hex(val(folding(ffma).round_int(K(f), true, kRounds[r], ftz, sat))),
                      hex(ptx::fref::round_int(f, ri[r], ftz, sat)))
                << "cvt." << kNames[r] << "i" << (ftz ? ".ftz" : "") << (sat ? ".sat" : "") << ".f32.f32 "
                << hex(f) << (ffma ? " (ffma)" : "");
        ASSERT_EQ(hex(val(g.round_int(K(f), false, kRounds[r], ftz, true))),
                  hex(ptx::fref::round_int(f, Rnd::None, ftz, true)))
            << "cvt.sat.f32.f32 " << hex(f);
      }
    };
    auto i2f = [&](uint64_t v) {
      auto g = folding();
      for (bool sgn : {false, true}) {
        for (bool ffma : {false, true})  // with ffma, .rn is two of them
          ASSERT_EQ(hex(val(folding(ffma).from_int32(K(uint32_t(v)), sgn, kRounds[r]))),
                    hex(ptx::fref::from_int(v, sgn, 32, kRnds[r])))
              << "cvt." << kNames[r] << ".f32." << (sgn ? "s32 " : "u32 ") << uint32_t(v) << (ffma ? " (ffma)" : "");
        ASSERT_EQ(hex(val(g.from_int64(K(uint32_t(v)), K(uint32_t(v >> 32)), sgn, kRounds[r]))),
                  hex(ptx::fref::from_int(v, sgn, 64, kRnds[r])))
            << "cvt." << kNames[r] << ".f32." << (sgn ? "s64 " : "u64 ") << v;
      }
    };
    for (uint32_t f : floattest::edges()) f2i(f);
    for (uint64_t i = 0; i < n / 4; ++i) {
      uint32_t f = gen.any();
      f2i(i % 2 ? f : (f & 0x807FFFFFu) | ((120 + uint32_t(gen.rng()() % 40)) << 23));
      uint64_t v = gen.rng()();
      i2f(v >> (gen.rng()() % 64));
      i2f(uint64_t(int64_t(v) >> (gen.rng()() % 64)));
    }
    for (uint64_t v : {uint64_t(0), uint64_t(1), uint64_t(0x7FFFFFFF), uint64_t(0x80000000), uint64_t(0xFFFFFFFF),
                       uint64_t(0x01000001), uint64_t(0x8000000000000000ull), ~uint64_t(0), uint64_t(0x0080000080000000ull)})
      i2f(v);
  }
}

}  // namespace
}  // namespace qgpu::machine

namespace qgpu::machine {
namespace {

// The reference itself on values worked out by hand.
TEST(SoftFloat, ReferenceKnownValues) {
  using ptx::fref::add;
  using ptx::fref::mul;
  const uint32_t one = 0x3F800000u, half_ulp = 0x33800000u;  // 1.0, 2^-24
  EXPECT_EQ(add(one, half_ulp, Rnd::Rn, false, false), one);                // tie to even
  EXPECT_EQ(add(0x3F800001u, half_ulp, Rnd::Rn, false, false), 0x3F800002u);  // tie to even, up
  EXPECT_EQ(add(one, half_ulp, Rnd::Rp, false, false), 0x3F800001u);
  EXPECT_EQ(add(one, half_ulp, Rnd::Rz, false, false), one);
  EXPECT_EQ(add(0xBF800000u, 0xB3800000u, Rnd::Rm, false, false), 0xBF800001u);
  EXPECT_EQ(add(one, 0xBF800000u, Rnd::Rn, false, false), 0u);              // x - x = +0
  EXPECT_EQ(add(one, 0xBF800000u, Rnd::Rm, false, false), 0x80000000u);     // ... -0 rounding down
  EXPECT_EQ(mul(1, 0x3FC00000u, Rnd::Rz, false, false), 1u);                // 1.5 * 2^-149
  EXPECT_EQ(mul(1, 0x3FC00000u, Rnd::Rn, false, false), 2u);
  EXPECT_EQ(mul(1, 0x3FC00000u, Rnd::Rn, true, false), 0u);                 // .ftz: input flushed
  EXPECT_EQ(mul(0x00800000u, 0x3F000000u, Rnd::Rn, true, false), 0u);       // .ftz: result flushed
  EXPECT_EQ(mul(0x00800000u, 0xBF000000u, Rnd::Rn, true, false), 0x80000000u);
  EXPECT_EQ(mul(0x7F7FFFFFu, 0x40000000u, Rnd::Rz, false, false), 0x7F7FFFFFu);  // overflow toward zero
  EXPECT_EQ(mul(0x7F7FFFFFu, 0x40000000u, Rnd::Rn, false, false), 0x7F800000u);
  EXPECT_EQ(add(0x7F800000u, 0xFF800000u, Rnd::Rn, false, false), 0x7FFFFFFFu);  // canonical NaN
  EXPECT_EQ(add(0x7FC00001u, one, Rnd::Rn, false, false), 0x7FFFFFFFu);
  EXPECT_EQ(add(0x3F400000u, one, Rnd::Rn, false, true), one);               // .sat: 1.75 -> 1
  EXPECT_EQ(add(0xBF400000u, 0x3E800000u, Rnd::Rn, false, true), 0u);        // .sat: -0.5 -> +0
  EXPECT_EQ(ptx::fref::to_int(0x3FC00000u, true, 32, Rnd::Rni, false), 2u);  // 1.5 -> 2
  EXPECT_EQ(ptx::fref::to_int(0x40200000u, true, 32, Rnd::Rni, false), 2u);  // 2.5 -> 2
  EXPECT_EQ(ptx::fref::to_int(0xBFC00000u, true, 32, Rnd::Rmi, false), 0xFFFFFFFEu);  // -1.5 -> -2
  EXPECT_EQ(ptx::fref::to_int(0x4F000000u, true, 32, Rnd::Rzi, false), 0x7FFFFFFFu);  // 2^31 saturates
  EXPECT_EQ(ptx::fref::to_int(0x7FC00000u, true, 32, Rnd::Rzi, false), 0u);          // NaN -> 0
  EXPECT_EQ(ptx::fref::from_int(0x01000001u, false, 32, Rnd::Rn), 0x4B800000u);       // 2^24+1 -> 2^24
  EXPECT_EQ(ptx::fref::from_int(0x01000001u, false, 32, Rnd::Rp), 0x4B800001u);
}

}  // namespace
}  // namespace qgpu::machine

namespace qgpu::machine {
namespace {

// Division and square root, by the one-bit-a-step generators and by those
// of a machine with ffma (the model's).
TEST(SoftFloat, DivRcpSqrt) {
  const uint64_t n = floattest::pairs(200000) / 4;
  floattest::Operands gen(31);
  for (int r = 0; r < 4; ++r)
    for (bool ftz : {false, true}) {
      auto check = [&](uint32_t a, uint32_t b) {
        for (bool ffma : {false, true}) {
          auto g = folding(ffma);
          const char* how = ffma ? " (ffma) " : " ";
          ASSERT_EQ(hex(val(g.div(K(a), K(b), kRounds[r], ftz, false))),
                    hex(ptx::fref::div(a, b, kRnds[r], ftz, false)))
              << "div." << kNames[r] << (ftz ? ".ftz" : "") << how << hex(a) << " " << hex(b);
          ASSERT_EQ(hex(val(g.sqrt(K(a), kRounds[r], ftz))), hex(ptx::fref::sqrt(a, kRnds[r], ftz)))
              << "sqrt." << kNames[r] << (ftz ? ".ftz" : "") << how << hex(a);
        }
      };
      for (uint32_t a : floattest::edges())
        for (uint32_t b : floattest::edges()) check(a, b);
      for (uint64_t i = 0; i < n; ++i) {
        uint32_t a = gen.any();
        check(a, i % 2 ? gen.near(a) : gen.any());
        // Exact quotients and roots (products and squares), where rounding must not move them.
        uint32_t b = gen.any() & 0xFFFFF000u;
        check(ptx::fref::mul(a & 0xFFFFF000u, b, Rnd::Rn, false, false), b);
        check(ptx::fref::mul(a & 0x7FFFF000u, a & 0x7FFFF000u, Rnd::Rn, false, false), b);
      }
    }
}

// The ffma cores of division and square root (softfloat.cpp states their
// proofs) against integer arithmetic: the reciprocal seed's premise for every
// divisor significand, the root for every radicand (all 2^24 of them: the
// core sees only m, so this is its proof), the quotient on random significand
// pairs and on the pairs whose quotient lies nearest the points where its
// floor or sticky bit changes (200,000 of each; QGPU_FLOAT_EXHAUSTIVE=1: 10 M).
TEST(SoftFloat, FfmaDivisionAndRootCores) {
  const bool all = std::getenv("QGPU_FLOAT_EXHAUSTIVE") != nullptr;
  auto g = folding(true);
  double worst = 0;
  for (uint32_t mb = 1u << 23; mb < 1u << 24; ++mb) {
    const uint32_t y = val(g.reciprocal(K(mb + 0xBF000000u)));
    float yf;
    std::memcpy(&yf, &y, 4);
    const double b = double(mb) / double(1u << 23);
    worst = std::max(worst, std::fabs(1.0 - b * double(yf)));  // exact: 24 x 24 bits
  }
  std::printf("reciprocal seed: largest |1 - b y| = 2^%.2f\n", std::log2(worst));
  ASSERT_LT(worst, std::ldexp(1.0, -14));  // the proof needs 2^-13.5
  for (uint32_t m = 1u << 23; m < 1u << 25; m += (m < 1u << 24 ? 1 : 2)) {
    auto [q, st] = g.root_bits(K(m));
    const uint64_t M = uint64_t(m) << 25;
    uint64_t want = uint64_t(std::sqrt(double(M)));
    while (want * want > M) --want;
    while ((want + 1) * (want + 1) <= M) ++want;
    ASSERT_EQ(val(q), want) << "root of m = " << hex(m);
    ASSERT_EQ(val(st), uint32_t(want * want != M)) << "root of m = " << hex(m);
  }
  auto quotient = [&](uint32_t ma, uint32_t mb) {
    const uint32_t lt = ma < mb;
    auto [q, st] = g.div_bits(K(ma), K(lt), K(mb));
    const uint64_t A = uint64_t(ma) << lt << 24;
    ASSERT_EQ(val(q), A / mb) << hex(ma) << " / " << hex(mb);
    ASSERT_EQ(val(st), uint32_t(A % mb != 0)) << hex(ma) << " / " << hex(mb);
  };
  std::mt19937_64 rng(5);
  const uint64_t n = floattest::pairs(all ? 10000000 : 200000);
  for (uint64_t i = 0; i < n; ++i) {
    const uint32_t ma = (1u << 23) | uint32_t(rng() & 0x7FFFFF), mb = (1u << 23) | uint32_t(rng() & 0x7FFFFF);
    quotient(ma, mb);
    // The dividends nearest B j / 2^24 for an integer j: the quotients
    // closest to the points where floor(x 2^24) and the sticky bit change
    // (odd j: the midpoints of the 24-bit grid).
    const uint64_t j = (rng() & 0xFFFFFF) | (1u << 24);
    const uint64_t A = (j * mb + (1u << 23)) >> 24;
    for (uint64_t a : {A - 1, A, A + 1}) {
      if (a >= (1u << 23) && a < (1u << 24) && a >= mb) quotient(uint32_t(a), mb);
      if (a >= (1u << 24) && a < (1u << 25) && a % 2 == 0 && a / 2 < mb) quotient(uint32_t(a / 2), mb);
    }
  }
}

}  // namespace
}  // namespace qgpu::machine

namespace qgpu::machine {
namespace {

TEST(SoftFloat, Conversions64) {
  floattest::Operands gen(41);
  const uint64_t n = floattest::pairs(200000) / 4;
  const Rnd ri[] = {Rnd::Rni, Rnd::Rzi, Rnd::Rmi, Rnd::Rpi};
  auto f2 = [&](uint32_t f) {
    for (bool ftz : {false, true}) {
      auto g = folding();
      auto [lo, hi] = g.to_f64(K(f), ftz);
      const uint64_t got = uint64_t(val(hi)) << 32 | val(lo);
      ASSERT_EQ(got, ptx::fref::to_f64(f, ftz)) << "cvt.f64.f32 " << hex(f);
      for (int r = 0; r < 4; ++r)
        for (bool sgn : {false, true}) {
          auto [ilo, ihi] = g.to_int64(K(f), sgn, kRounds[r], ftz);
          ASSERT_EQ(uint64_t(val(ihi)) << 32 | val(ilo), ptx::fref::to_int(f, sgn, 64, ri[r], ftz))
              << "cvt." << kNames[r] << "i." << (sgn ? "s64" : "u64") << ".f32 " << hex(f);
        }
    }
  };
  auto d2 = [&](uint64_t d) {
    for (int r = 0; r < 4; ++r)
      for (bool ftz : {false, true}) {
        auto g = folding();
        ASSERT_EQ(hex(val(g.from_f64(K(uint32_t(d)), K(uint32_t(d >> 32)), kRounds[r], ftz, false))),
                  hex(ptx::fref::from_f64(d, kRnds[r], ftz, false)))
            << "cvt." << kNames[r] << ".f32.f64 " << std::hex << d;
      }
  };
  for (uint32_t f : floattest::edges()) {
    f2(f);
    d2(ptx::fref::to_f64(f, false));
  }
  for (uint64_t d : {0ull, 1ull, 0x000FFFFFFFFFFFFFull, 0x7FF0000000000001ull, 0x7FF8000000000000ull,
                     0x47EFFFFFE0000000ull, 0x47EFFFFFF0000000ull, 0x47EFFFFFEFFFFFFFull, 0x3690000000000000ull,
                     0x36A0000000000001ull, 0x380FFFFFF0000000ull, 0x8000000000000000ull})
    d2(d);
  for (uint64_t i = 0; i < n; ++i) {
    uint32_t f = gen.any();
    f2(i % 2 ? f : (f & 0x807FFFFFu) | ((150 + uint32_t(gen.rng()() % 45)) << 23));
    uint64_t d = gen.rng()();
    d2(d);
    // Doubles near the f32 range, its subnormals and its rounding boundaries.
    d2((d & 0x800FFFFFFFFFFFFFull) | ((uint64_t(0x360 + gen.rng()() % 0xA0)) << 52));
    d2(ptx::fref::to_f64(f, false) + (gen.rng()() % 3) - 1);
  }
}

}  // namespace
}  // namespace qgpu::machine

namespace qgpu::machine {
namespace {

// ex2.approx: the generator (here fma's integer sequence for each fused
// multiply-add) against the reference's computation of the same definition
// with the host's fma, and the definition's accuracy against the host's exp2
// in double precision (over every x of a normal result: 0.876 ulp at most,
// docs/isa.md section 11.1).
TEST(SoftFloat, Ex2Approx) {
  floattest::Operands gen(51);
  auto check = [&](uint32_t a) {
    for (bool ftz : {false, true}) {
      auto g = folding();
      ASSERT_EQ(hex(val(g.ex2(K(a), ftz))), hex(ptx::fref::ex2(a, ftz))) << "ex2.approx " << hex(a);
    }
  };
  for (uint32_t a : floattest::edges()) check(a);
  const uint64_t n = floattest::pairs(200000);
  double worst = 0;
  for (uint64_t i = 0; i < n; ++i) {
    uint32_t a = i % 2 ? gen.any() : (uint32_t(gen.rng()()) & 0x807FFFFFu) | ((100 + uint32_t(gen.rng()() % 35)) << 23);
    check(a);
    float x;
    std::memcpy(&x, &a, 4);
    if (!(x > -126.0f && x < 128.0f)) continue;
    const uint32_t r = ptx::fref::ex2(a, false);
    float got;
    std::memcpy(&got, &r, 4);
    const double want = std::exp2(double(x));
    const double ulp = std::ldexp(1.0, std::ilogb(want) - 23);
    worst = std::max(worst, std::fabs(got - want) / ulp);
  }
  EXPECT_LE(worst, 1.0) << "largest error of ex2.approx in ulp";
  std::printf("ex2.approx: largest error %.4f ulp (normal results)\n", worst);
  // 2^x for integral x is exact.
  for (int k = -149; k < 128; ++k) {
    float x = float(k);
    uint32_t a;
    std::memcpy(&a, &x, 4);
    const uint32_t r = ptx::fref::ex2(a, false);
    float got;
    std::memcpy(&got, &r, 4);
    ASSERT_EQ(got, std::ldexp(1.0f, k)) << k;
  }
}

}  // namespace
}  // namespace qgpu::machine

namespace qgpu::machine {
namespace {

TEST(SoftFloat, Binary64) {
  std::mt19937_64 rng(64);
  using ptx::Cmp;
  const Cmp cmps[] = {Cmp::Eq,  Cmp::Ne,  Cmp::Lt,  Cmp::Le,  Cmp::Gt,  Cmp::Ge,  Cmp::Equ,
                      Cmp::Neu, Cmp::Ltu, Cmp::Leu, Cmp::Gtu, Cmp::Geu, Cmp::Num, Cmp::Nan};
  auto W = [](uint64_t x) { return std::make_pair(K(uint32_t(x)), K(uint32_t(x >> 32))); };
  auto U = [](std::pair<Operand, Operand> w) { return uint64_t(w.second.v) << 32 | w.first.v; };
  auto check = [&](uint64_t a, uint64_t b) {
    auto g = folding();
    for (int r = 0; r < 4; ++r) {
      ASSERT_EQ(U(g.add64(W(a), W(b), kRounds[r])), ptx::fref::add64(a, b, kRnds[r]))
          << "add.f64." << kNames[r] << " " << std::hex << a << " " << b;
      ASSERT_EQ(U(g.sub64(W(a), W(b), kRounds[r])), ptx::fref::sub64(a, b, kRnds[r]))
          << "sub.f64." << kNames[r] << " " << std::hex << a << " " << b;
      ASSERT_EQ(U(g.mul64(W(a), W(b), kRounds[r])), ptx::fref::mul64(a, b, kRnds[r]))
          << "mul.f64." << kNames[r] << " " << std::hex << a << " " << b;
      for (uint64_t c : std::initializer_list<uint64_t>{a ^ b, ptx::fref::mul64(a, b, Rnd::Rn) ^ 0x8000000000000000ull ^ (b & 3), b, 0})
        ASSERT_EQ(U(g.fma64(W(a), W(b), W(c), kRounds[r])), ptx::fref::fma64(a, b, c, kRnds[r]))
            << "fma.f64." << kNames[r] << " " << std::hex << a << " " << b << " " << c;
    }
    ASSERT_EQ(U(g.min64(W(a), W(b))), ptx::fref::min64(a, b)) << std::hex << a << " " << b;
    ASSERT_EQ(U(g.max64(W(a), W(b))), ptx::fref::max64(a, b)) << std::hex << a << " " << b;
    for (Cmp c : cmps)
      ASSERT_EQ(g.compare64(c, W(a), W(b)).v, uint32_t(ptx::fref::compare64(c, a, b)))
          << int(c) << " " << std::hex << a << " " << b;
  };
  const auto E = floattest::edges64();
  for (uint64_t a : E)
    for (uint64_t b : E) check(a, b);
  const uint64_t n = floattest::pairs(200000) / 4;
  for (uint64_t i = 0; i < n; ++i) {
    uint64_t a = floattest::any64(rng), b;
    switch (i % 3) {
      case 0: b = floattest::any64(rng); break;
      case 1: b = a ^ 0x8000000000000000ull ^ (rng() % 4); break;                    // cancellation
      default: b = (a ^ (rng() % 2 ? 0x8000000000000000ull : 0)) + ((rng() % 128) << 52) - (rng() % 1024); break;
    }
    check(a, b);
  }
}

}  // namespace
}  // namespace qgpu::machine

namespace qgpu::machine {
namespace {

TEST(SoftFloat, Binary64Conversions) {
  std::mt19937_64 rng(65);
  auto W = [](uint64_t x) { return std::make_pair(K(uint32_t(x)), K(uint32_t(x >> 32))); };
  auto U = [](std::pair<Operand, Operand> w) { return uint64_t(w.second.v) << 32 | w.first.v; };
  const Rnd ri[] = {Rnd::Rni, Rnd::Rzi, Rnd::Rmi, Rnd::Rpi};
  auto f2i = [&](uint64_t d) {
    auto g = folding();
    for (int r = 0; r < 4; ++r) {
      for (unsigned bits : {32u, 64u})
        for (bool sgn : {false, true}) {
          uint64_t got = U(g.to_int_from64(W(d), sgn, bits, kRounds[r]));
          uint64_t want = ptx::fref::f64_to_int(d, sgn, bits, ri[r]);
          if (bits == 32) got &= 0xFFFFFFFFu;
          ASSERT_EQ(got, want) << "cvt." << kNames[r] << "i." << (sgn ? "s" : "u") << bits << ".f64 " << std::hex << d;
        }
      ASSERT_EQ(U(g.round_int64(W(d), kRounds[r])), ptx::fref::round_int_f64(d, ri[r]))
          << "cvt." << kNames[r] << "i.f64.f64 " << std::hex << d;
    }
  };
  auto i2f = [&](uint64_t v) {
    auto g = folding();
    for (int r = 0; r < 4; ++r)
      for (bool sgn : {false, true}) {
        ASSERT_EQ(U(g.from_int_to64(W(v), sgn, kRounds[r])), ptx::fref::int_to_f64(v, sgn, 64, kRnds[r]))
            << "cvt." << kNames[r] << ".f64." << (sgn ? "s64 " : "u64 ") << std::hex << v;
        const uint32_t w = uint32_t(v);
        const uint32_t ext = sgn && (w >> 31) ? ~0u : 0u;
        ASSERT_EQ(U(g.from_int_to64({K(w), K(ext)}, sgn, kRounds[r])), ptx::fref::int_to_f64(w, sgn, 32, kRnds[r]))
            << "cvt." << kNames[r] << ".f64." << (sgn ? "s32 " : "u32 ") << std::hex << w;
      }
  };
  for (uint64_t d : floattest::edges64()) {
    f2i(d);
    i2f(d);
  }
  const uint64_t n = floattest::pairs(200000) / 8;
  for (uint64_t i = 0; i < n; ++i) {
    uint64_t d = floattest::any64(rng);
    f2i(i % 2 ? d : (d & 0x800FFFFFFFFFFFFFull) | ((1000 + rng() % 90) << 52));  // around 1 .. 2^66
    f2i(floattest::double_bits(double(int64_t(rng() >> (rng() % 64))) + 0.5 * double(rng() % 3)));
    i2f(rng() >> (rng() % 64));
    i2f(uint64_t(int64_t(rng()) >> (rng() % 64)));
  }
}

}  // namespace
}  // namespace qgpu::machine

namespace qgpu::machine {
namespace {

// lg2.approx, sin.approx and cos.approx: the generators against the
// reference's computation of the same definitions (docs/isa.md section
// 11.1), and the definitions' accuracy against the host's libm in double
// precision: lg2 on random inputs of every exponent plus the edge classes,
// sin and cos on a dense sample of their documented range, or every f32
// input there with QGPU_FLOAT_EXHAUSTIVE=1 (a few minutes of one core).
enum class Tr { Lg2, Sin, Cos };
uint32_t tr_ref(Tr f, uint32_t a, bool ftz) {
  return f == Tr::Lg2 ? ptx::fref::lg2(a, ftz) : f == Tr::Sin ? ptx::fref::sin(a, ftz) : ptx::fref::cos(a, ftz);
}
double tr_host(Tr f, double x) { return f == Tr::Lg2 ? std::log2(x) : f == Tr::Sin ? std::sin(x) : std::cos(x); }
const char* tr_name(Tr f) { return f == Tr::Lg2 ? "lg2.approx" : f == Tr::Sin ? "sin.approx" : "cos.approx"; }

struct Accuracy {
  double worst_ulp = 0, worst_abs = 0;
  uint32_t worst_in = 0;
  uint64_t n = 0;
  // Error of got for the input a: in units of the last place of the exact
  // value (the ulp of a normal f32 of its magnitude; 2^-149 below), and
  // absolute.  Special values must match exactly.
  void add(Tr f, uint32_t a) {
    const uint32_t r = tr_ref(f, a, false);
    float x, got;
    std::memcpy(&x, &a, 4);
    std::memcpy(&got, &r, 4);
    const double want = tr_host(f, double(x));
    ++n;
    if (std::isnan(want) || std::isinf(want)) {
      if (std::isnan(want)) {
        EXPECT_EQ(hex(r), hex(0x7FFFFFFFu)) << tr_name(f) << " " << hex(a);
      } else {
        EXPECT_EQ(double(got), want) << tr_name(f) << " " << hex(a);
      }
      return;
    }
    const double mag = std::fabs(want);
    const double ulp = mag < 0x1p-126 ? 0x1p-149 : std::ldexp(1.0, std::ilogb(mag) - 23);
    const double err = std::fabs(double(got) - want);
    if (err / ulp > worst_ulp) worst_ulp = err / ulp, worst_in = a;
    worst_abs = std::max(worst_abs, err);
  }
};

uint32_t tr_input(floattest::Operands& gen, uint64_t i) {
  switch (i % 4) {
    case 0: return gen.any();
    case 1: return uint32_t(gen.rng()());
    default:  // |x| in [2^-4, 2^8): where sin/cos and __logf are used
      return (uint32_t(gen.rng()()) & 0x807FFFFFu) | ((123 + uint32_t(gen.rng()() % 12)) << 23);
  }
}

TEST(SoftFloat, Lg2SinCosApprox) {
  floattest::Operands gen(77);
  const uint64_t n = floattest::pairs(50000);
  for (Tr f : {Tr::Lg2, Tr::Sin, Tr::Cos}) {
    auto check = [&](uint32_t a) {
      for (bool ftz : {false, true}) {
        auto g = folding();
        const uint32_t got = val(f == Tr::Lg2 ? g.lg2(K(a), ftz) : f == Tr::Sin ? g.sin(K(a), ftz) : g.cos(K(a), ftz));
        ASSERT_EQ(hex(got), hex(tr_ref(f, a, ftz))) << tr_name(f) << (ftz ? ".ftz " : " ") << hex(a);
      }
    };
    for (uint32_t a : floattest::edges()) check(a);
    for (int k = -149; k < 128; ++k) check(uint32_t(k + 150) << 23 & 0x7F800000u);  // powers of two
    for (uint64_t i = 0; i < n; ++i) check(tr_input(gen, i));
    if (f == Tr::Lg2) continue;
    // sin and cos around multiples of pi/4 (the quadrant changes at the odd
    // ones, the zeros are at multiples of pi/2) and the thresholds 2^-12 and
    // 2^22, each word and its neighbours, both signs.
    std::vector<uint32_t> near;
    for (int m = 1; m < 512; ++m) near.push_back(floattest::float_bits(float(m * 0.78539816339744830962)));
    for (int m = 0; m < 8; ++m) near.push_back(floattest::float_bits(float(0x1p21 + m * 0.78539816339744830962)));
    near.push_back(0x39800000u), near.push_back(0x4A800000u);
    for (uint32_t c : near)
      for (uint32_t d = 0; d < 5; ++d)
        for (uint32_t sign : {0u, 0x80000000u}) check((c + d - 2) | sign);
  }
}

// The documented bound of lg2 (docs/isa.md section 11.1): within 1.12 ulp
// (f32 operations: every normal input gives 1.109 at most, every subnormal
// 1.000), so within 2^-23.8 absolute for inputs in [1/2, 2) (PTX: 2^-22.6).
TEST(SoftFloat, Lg2ApproxAccuracy) {
  const bool all = std::getenv("QGPU_FLOAT_EXHAUSTIVE") != nullptr;
  const uint64_t n = floattest::pairs(2000000);
  Accuracy acc;
  floattest::Operands gen(78);
  for (uint32_t a : floattest::edges()) acc.add(Tr::Lg2, a);
  if (all) {
    for (uint64_t a = 0; a < (uint64_t(1) << 32); ++a) acc.add(Tr::Lg2, uint32_t(a));
  } else {
    for (uint64_t i = 0; i < n; ++i) acc.add(Tr::Lg2, tr_input(gen, i));
  }
  std::printf("lg2.approx: %llu inputs, largest error %.4f ulp (at %s), %.3g absolute\n", (unsigned long long)acc.n,
              acc.worst_ulp, hex(acc.worst_in).c_str(), acc.worst_abs);
  EXPECT_LE(acc.worst_ulp, 1.12) << "lg2.approx at " << hex(acc.worst_in);
}

// The documented bounds of sin and cos (docs/isa.md section 11.1), against
// the host's sin and cos in double: on [-2 pi, 2 pi], PTX's range for its
// bound of 2^-20.5, within 1.44 ulp and 2^-23.7 absolute (every input there:
// sin 1.4301 ulp and 2^-23.94, cos 1.4305 ulp and 2^-23.75); on the rest of
// |a| < 2^22 within 2^-23.3 absolute (every input: 2^-23.34 and 2^-23.31),
// the reduction's error growing with the quadrant's index.  The sample takes
// every 257th f32 of each range and sign (every one with
// QGPU_FLOAT_EXHAUSTIVE=1: about 6 minutes of one core).  Outside, the
// definition's values: a zero of a's sign (sin) and 1 (cos) from 2^22 on,
// the canonical NaN for infinities and NaNs, sin a = a below 2^-12 (-0 and
// subnormals included, zeros under .ftz), cos 1 there.
TEST(SoftFloat, SinCosApproxAccuracy) {
  const uint32_t step = std::getenv("QGPU_FLOAT_EXHAUSTIVE") != nullptr ? 1 : 257;
  constexpr uint32_t kTwoPi = 0x40C90FDBu, kBig = 0x4A800000u;  // the f32 nearest 2 pi (just above it); 2^22
  for (Tr f : {Tr::Sin, Tr::Cos}) {
    Accuracy inner, outer;
    for (uint32_t sign : {0u, 0x80000000u}) {
      for (uint32_t a = 0; a <= kTwoPi; a += step) inner.add(f, a | sign);
      for (uint32_t a = kTwoPi + 1; a < kBig; a += step) outer.add(f, a | sign);
    }
    std::printf("%s: [-2pi, 2pi]: %llu inputs, largest error %.4f ulp (at %s), 2^%.2f absolute; "
                "2pi < |a| < 2^22: %llu inputs, 2^%.2f absolute\n",
                tr_name(f), (unsigned long long)inner.n, inner.worst_ulp, hex(inner.worst_in).c_str(),
                std::log2(inner.worst_abs), (unsigned long long)outer.n, std::log2(outer.worst_abs));
    EXPECT_LE(inner.worst_ulp, 1.44) << tr_name(f) << " at " << hex(inner.worst_in);
    EXPECT_LE(inner.worst_abs, std::exp2(-23.7)) << tr_name(f);
    EXPECT_LE(outer.worst_abs, std::exp2(-23.3)) << tr_name(f);
    EXPECT_LE(inner.worst_abs, std::exp2(-20.5)) << tr_name(f) << ": PTX's bound";
  }
  // The values outside the accurate range, for both .ftz settings.
  for (bool ftz : {false, true}) {
    for (uint32_t sign : {0u, 0x80000000u}) {
      for (uint32_t a : {kBig, kBig + 1, 0x4B000000u, 0x5F000000u, 0x7F7FFFFFu}) {
        EXPECT_EQ(hex(ptx::fref::sin(a | sign, ftz)), hex(sign)) << hex(a | sign);
        EXPECT_EQ(hex(ptx::fref::cos(a | sign, ftz)), hex(0x3F800000u)) << hex(a | sign);
      }
      for (uint32_t a : {0x7F800000u, 0x7FC00000u, 0x7F800001u, 0x7FFFFFFFu}) {
        EXPECT_EQ(hex(ptx::fref::sin(a | sign, ftz)), hex(0x7FFFFFFFu)) << hex(a | sign);
        EXPECT_EQ(hex(ptx::fref::cos(a | sign, ftz)), hex(0x7FFFFFFFu)) << hex(a | sign);
      }
      for (uint32_t a : {0u, 1u, 0x7FFFFFu, 0x800000u, 0x39000000u, 0x397FFFFFu}) {
        const uint32_t in = a | sign, flushed = ftz && a < 0x800000u ? sign : in;
        EXPECT_EQ(hex(ptx::fref::sin(in, ftz)), hex(flushed)) << hex(in);
        EXPECT_EQ(hex(ptx::fref::cos(in, ftz)), hex(0x3F800000u)) << hex(in);
      }
    }
  }
}

}  // namespace
}  // namespace qgpu::machine

namespace qgpu::machine {
namespace {

// div.rnd.f64, rcp.rnd.f64 and sqrt.rnd.f64: bit for bit against the host's
// IEEE division and square root in each rounding mode, on every edge pair and
// random operands (quotients near 1 and exact ones among them).
TEST(SoftFloat, Binary64DivSqrt) {
  std::mt19937_64 rng(66);
  auto W = [](uint64_t x) { return std::make_pair(K(uint32_t(x)), K(uint32_t(x >> 32))); };
  auto U = [](std::pair<Operand, Operand> w) { return uint64_t(w.second.v) << 32 | w.first.v; };
  auto check = [&](uint64_t a, uint64_t b) {
    auto g = folding();
    for (int r = 0; r < 4; ++r) {
      ASSERT_EQ(U(g.div64(W(a), W(b), kRounds[r])), ptx::fref::div64(a, b, kRnds[r]))
          << "div.f64." << kNames[r] << " " << std::hex << a << " " << b;
      ASSERT_EQ(U(g.sqrt64(W(a), kRounds[r])), ptx::fref::sqrt64(a, kRnds[r]))
          << "sqrt.f64." << kNames[r] << " " << std::hex << a;
    }
  };
  const auto E = floattest::edges64();
  for (uint64_t a : E)
    for (uint64_t b : E) check(a, b);
  const uint64_t n = floattest::pairs(200000) / 8;
  for (uint64_t i = 0; i < n; ++i) {
    uint64_t a = floattest::any64(rng), b;
    switch (i % 4) {
      case 0: b = floattest::any64(rng); break;
      case 1: b = (a & 0xFFF0000000000000ull) | (rng() & 0x000FFFFFFFFFFFFFull); break;  // quotients near 1
      case 2: {  // an exact quotient: a = b * q with small q
        b = floattest::any64(rng) & 0x7FFFFFFFFFFFF000ull;
        double q = double(rng() % 4096), bd, ad;
        std::memcpy(&bd, &b, 8);
        ad = bd * q;
        std::memcpy(&a, &ad, 8);
        break;
      }
      default: {  // a perfect square
        double x = double(rng() % (uint64_t(1) << 26)) * std::ldexp(1.0, int(rng() % 200) - 100);
        double sq = x * x;
        std::memcpy(&a, &sq, 8);
        b = floattest::any64(rng);
        break;
      }
    }
    check(a, b);
  }
}

}  // namespace
}  // namespace qgpu::machine

namespace qgpu::machine {
namespace {

// binary16: every f16 to f32; f32 to f16 in each rounding mode on the edge
// values, every f16 value and its f32 neighbours (halfway cases) and random
// words; add, sub, mul and fma on edge halves and random pairs: the
// generators bit for bit against the host's _Float16 arithmetic (exact
// values in __float128, one rounding).
// cvt between f16 and the integers or f64: the generators (through f32:
// exact steps, or a rounding to f32 in the same mode, or to odd) bit for bit
// against the reference's one rounding of the exact value (the host's
// conversion to _Float16): every f16 to every integer type and rounding and
// to f64; every 16-bit integer, every 32-bit one in [-2^17, 2^17] and random
// ones of every width (magnitudes spread over all exponents) to f16; f64
// values on, beside and halfway between f16 values, and random ones, to f16.
TEST(SoftFloat, HalfWideConversions) {
  const Rnd kInt[] = {Rnd::Rni, Rnd::Rzi, Rnd::Rmi, Rnd::Rpi};
  struct T {
    bool sgn;
    unsigned bits;
  };
  const T types[] = {{true, 8}, {false, 8}, {true, 16}, {false, 16}, {true, 32}, {false, 32}, {true, 64}, {false, 64}};
  auto extended = [](uint64_t x, bool sgn, unsigned bits) {  // the reference's masked value as the generator holds it
    if (bits == 64) return x;
    if (sgn && (x >> (bits - 1)) & 1) x |= ~uint64_t(0) << bits;
    return uint64_t(uint32_t(x));
  };
  for (uint32_t h = 0; h < 0x10000; ++h) {
    auto g = folding();
    auto w = g.f64_from_f16(K(h));
    ASSERT_EQ(uint64_t(val(w.second)) << 32 | val(w.first), ptx::fref::f64_from_f16(h)) << "cvt.f64.f16 " << hex(h);
    for (int r = 0; r < 4; ++r)
      for (const T& t : types) {
        auto x = g.int_from_f16(K(h), t.sgn, t.bits, kRounds[r]);
        ASSERT_EQ(uint64_t(val(x.second)) << 32 | val(x.first),
                  extended(ptx::fref::int_from_f16(h, t.sgn, t.bits, kInt[r]), t.sgn, t.bits))
            << "cvt." << kNames[r] << "i." << (t.sgn ? "s" : "u") << t.bits << ".f16 " << hex(h);
      }
  }
  auto from_int = [&](uint64_t v, const T& t) {
    for (int r = 0; r < 4; ++r)
      for (bool sat : {false, true}) {
        auto g = folding();
        uint32_t want = ptx::fref::f16_from_int(v, t.sgn, t.bits, kRnds[r]);
        if (sat) want = (want & 0x8000u) ? 0u : std::min(want, 0x3C00u);
        const uint64_t in = t.bits == 64 ? v : extended(v & ((uint64_t(1) << t.bits) - 1), t.sgn, t.bits);
        ASSERT_EQ(hex(val(g.f16_from_int({K(uint32_t(in)), K(uint32_t(in >> 32))}, t.sgn, t.bits, kRounds[r], sat))),
                  hex(want))
            << "cvt." << kNames[r] << (sat ? ".sat" : "") << ".f16." << (t.sgn ? "s" : "u") << t.bits << " " << v;
      }
  };
  for (uint32_t v = 0; v < 0x10000; ++v) from_int(v, types[2]), from_int(v, types[3]);
  for (int64_t v = -(1 << 17); v <= (1 << 17); ++v) from_int(uint64_t(v), types[4]);
  std::mt19937_64 rng(17);
  for (int i = 0; i < 50000; ++i) {
    const uint64_t v = rng() >> (rng() % 64);
    const uint64_t sv = (rng() & 1) ? uint64_t(0) - v : v;
    for (const T& t : types) from_int(t.bits == 64 ? sv : sv & ((uint64_t(1) << t.bits) - 1), t);
  }
  auto from_f64 = [&](double d) {
    uint64_t x;
    std::memcpy(&x, &d, 8);
    for (int r = 0; r < 4; ++r)
      for (bool sat : {false, true}) {
        auto g = folding();
        uint32_t want = ptx::fref::f16_from_f64(x, kRnds[r]);
        if (sat) want = (want & 0x7FFFu) > 0x7C00u || (want & 0x8000u) ? 0u : std::min(want, 0x3C00u);
        ASSERT_EQ(hex(val(g.f16_from_f64(K(uint32_t(x)), K(uint32_t(x >> 32)), kRounds[r], sat))), hex(want))
            << "cvt." << kNames[r] << (sat ? ".sat" : "") << ".f16.f64 " << std::hexfloat << d;
      }
  };
  auto f16_value = [](uint32_t h) {
    double d;
    const uint64_t b = ptx::fref::f64_from_f16(h);
    std::memcpy(&d, &b, 8);
    return d;
  };
  for (uint32_t h = 0; h < 0x7C00; ++h) {  // every finite f16, both signs, and its neighbours in f64
    for (double sign : {1.0, -1.0}) {
      const double v = sign * f16_value(h), next = sign * f16_value(h + 1);
      const double mid = (v + next) / 2;  // exact
      for (double d : {v, mid, std::nextafter(mid, 0.0), std::nextafter(mid, 2 * mid), std::nextafter(v, 0.0),
                       std::nextafter(v, 2 * next)})
        from_f64(d);
    }
  }
  for (uint64_t x : floattest::edges64()) {
    double d;
    std::memcpy(&d, &x, 8);
    from_f64(d);
  }
  for (int i = 0; i < 50000; ++i) {
    const uint64_t x = rng();
    double d;
    std::memcpy(&d, &x, 8);
    from_f64(d);
    from_f64(std::ldexp(double(int64_t(rng()) >> 11), -int(rng() % 90)));  // around the f16 range
  }
}

TEST(SoftFloat, Half) {
  std::mt19937_64 rng(16);
  for (uint32_t h = 0; h < 0x10000; ++h) {
    auto g = folding();
    ASSERT_EQ(hex(val(g.f32_from_f16(K(h)))), hex(ptx::fref::f32_from_f16(h))) << "cvt.f32.f16 " << hex(h);
  }
  auto to16 = [&](uint32_t f) {
    for (int r = 0; r < 4; ++r) {
      auto g = folding();
      ASSERT_EQ(hex(val(g.f16_from_f32(K(f), kRounds[r]))), hex(ptx::fref::f16_from_f32(f, kRnds[r])))
          << "cvt." << kNames[r] << ".f16.f32 " << hex(f);
    }
  };
  for (uint32_t a : floattest::edges()) to16(a);
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const uint32_t f = ptx::fref::f32_from_f16(h);
    for (uint32_t d : {0u, 1u, 0x1000u, 0xFFFu, 0x1001u, 0x2000u}) to16(f + d), to16(f - d);
  }
  const uint64_t n = floattest::pairs(200000);
  for (uint64_t i = 0; i < n; ++i) to16(uint32_t(rng()));
  std::vector<uint32_t> he = {0x0000, 0x0001, 0x03FF, 0x0400, 0x3C00, 0x3C01, 0x3BFF, 0x7BFF, 0x7C00, 0x7C01, 0x7E00,
                              0x7FFF, 0x1400, 0x5800, 0x0200};
  for (size_t i = 0, m = he.size(); i < m; ++i) he.push_back(he[i] | 0x8000);
  auto bin = [&](uint32_t a, uint32_t b, uint32_t c) {
    auto g = folding();
    ASSERT_EQ(hex(val(g.add16(K(a), K(b)))), hex(ptx::fref::add16(a, b))) << "add.f16 " << hex(a) << " " << hex(b);
    ASSERT_EQ(hex(val(g.sub16(K(a), K(b)))), hex(ptx::fref::sub16(a, b))) << "sub.f16 " << hex(a) << " " << hex(b);
    ASSERT_EQ(hex(val(g.mul16(K(a), K(b)))), hex(ptx::fref::mul16(a, b))) << "mul.f16 " << hex(a) << " " << hex(b);
    ASSERT_EQ(hex(val(g.fma16(K(a), K(b), K(c)))), hex(ptx::fref::fma16(a, b, c)))
        << "fma.f16 " << hex(a) << " " << hex(b) << " " << hex(c);
  };
  for (uint32_t a : he)
    for (uint32_t b : he)
      for (uint32_t c : {0x0000u, 0x8000u, 0x0001u, 0x3C00u, 0xFC00u, a, b ^ 0x8000u}) bin(a, b, c);
  for (uint64_t i = 0; i < n / 4; ++i) {
    const uint32_t a = uint32_t(rng()) & 0xFFFF, b = uint32_t(rng()) & 0xFFFF;
    // c: random, or the negated rounded product (cancellation), or a tiny value
    uint32_t c = uint32_t(rng()) & 0xFFFF;
    if (i % 3 == 1) c = ptx::fref::mul16(a, b) ^ 0x8000 ^ uint32_t(rng() % 3);
    if (i % 3 == 2) c = uint32_t(rng()) & 0x83FF;
    bin(a, b, c);
  }
}

}  // namespace
}  // namespace qgpu::machine

namespace qgpu::machine {
namespace {

// A third formula for f32 to bf16, in double: the value scaled to its bf16
// grid unit (2^(e-7), e no less than -126), rounded to an integer by the
// host's nearbyint (ties to even), trunc, floor or ceil, scaled back.
uint32_t bf16_by_scaling(uint32_t f, int r) {
  float x;
  std::memcpy(&x, &f, 4);
  if (x != x) return 0x7FFF;
  if (x == 0 || std::isinf(x)) return f >> 16;
  const double d = x, unit = std::ldexp(1.0, std::max(std::ilogb(d), -126) - 7);
  const double k = r == 0 ? std::nearbyint(d / unit) : r == 1 ? std::trunc(d / unit) : r == 2 ? std::floor(d / unit)
                                                                                              : std::ceil(d / unit);
  const float q = float(k * unit);  // exact on the grid; 2^128 becomes infinity
  uint32_t b;
  std::memcpy(&b, &q, 4);
  return (b >> 16) | ((f >> 16) & 0x8000u);
}

// bfloat16: every bf16 to f32 (against the shifted word); f32 to bf16 in
// each rounding mode on the edge values, every bf16 value with the f32
// patterns around it and its halfway point (every rounding boundary class)
// and random words: generator, reference (grid search in __float128) and
// the scaling formula; add, sub, mul and fma on edge halves and random pairs:
// generator against reference.
TEST(SoftFloat, BFloat16) {
  std::mt19937_64 rng(1616);
  for (uint32_t h = 0; h < 0x10000; ++h) {
    auto g = folding();
    const uint32_t w = h << 16, want = (w & 0x7FFFFFFFu) > 0x7F800000u ? 0x7FFFFFFFu : w;
    ASSERT_EQ(hex(val(g.f32_from_bf16(K(h)))), hex(want)) << "cvt.f32.bf16 " << hex(h);
    ASSERT_EQ(hex(ptx::fref::f32_from_bf16(h)), hex(want)) << "cvt.f32.bf16 " << hex(h);
  }
  uint64_t checked = 0;
  auto to16 = [&](uint32_t f) {
    for (int r = 0; r < 4; ++r) {
      auto g = folding();
      const uint32_t want = bf16_by_scaling(f, r);
      ASSERT_EQ(hex(val(g.bf16_from_f32(K(f), kRounds[r]))), hex(want)) << "cvt." << kNames[r] << ".bf16.f32 " << hex(f);
      ASSERT_EQ(hex(ptx::fref::bf16_from_f32(f, kRnds[r])), hex(want)) << "cvt." << kNames[r] << ".bf16.f32 " << hex(f);
    }
    ++checked;
  };
  for (uint32_t a : floattest::edges()) to16(a);
  for (uint32_t h = 0; h < 0x10000; ++h)
    for (uint32_t d : {0x0000u, 0x0001u, 0x7FFFu, 0x8000u, 0x8001u, 0xFFFFu}) to16(h << 16 | d);
  const uint64_t n = floattest::pairs(200000);
  for (uint64_t i = 0; i < 4 * n; ++i) to16(uint32_t(rng()));
  std::printf("f32 to bf16: %llu words, 4 roundings each, 3 formulas agree\n", (unsigned long long)checked);
  std::vector<uint32_t> he = {0x0000, 0x0001, 0x007F, 0x0080, 0x3F80, 0x3F81, 0x3F7F, 0x7F7F, 0x7F80, 0x7F81, 0x7FC0,
                              0x7FFF, 0x0100, 0x4B00, 0x0040, 0x3400, 0x4000};
  for (size_t i = 0, m = he.size(); i < m; ++i) he.push_back(he[i] | 0x8000);
  auto bin = [&](uint32_t a, uint32_t b, uint32_t c) {
    auto g = folding();
    ASSERT_EQ(hex(val(g.add_bf16(K(a), K(b)))), hex(ptx::fref::add_bf16(a, b))) << "add.bf16 " << hex(a) << " " << hex(b);
    ASSERT_EQ(hex(val(g.sub_bf16(K(a), K(b)))), hex(ptx::fref::sub_bf16(a, b))) << "sub.bf16 " << hex(a) << " " << hex(b);
    ASSERT_EQ(hex(val(g.mul_bf16(K(a), K(b)))), hex(ptx::fref::mul_bf16(a, b))) << "mul.bf16 " << hex(a) << " " << hex(b);
    ASSERT_EQ(hex(val(g.fma_bf16(K(a), K(b), K(c)))), hex(ptx::fref::fma_bf16(a, b, c)))
        << "fma.bf16 " << hex(a) << " " << hex(b) << " " << hex(c);
  };
  for (uint32_t a : he)
    for (uint32_t b : he)
      for (uint32_t c : {0x0000u, 0x8000u, 0x0001u, 0x3F80u, 0xFF80u, a, b ^ 0x8000u}) bin(a, b, c);
  for (uint64_t i = 0; i < n / 4; ++i) {
    const uint32_t a = uint32_t(rng()) & 0xFFFF, b = uint32_t(rng()) & 0xFFFF;
    // b: sometimes near a (cancellation); c: random, the negated rounded
    // product (cancellation), or a tiny value (a product on a halfway point)
    const uint32_t b2 = i % 5 == 4 ? (a ^ 0x8000u) + uint32_t(rng() % 5) - 2 : b;
    uint32_t c = uint32_t(rng()) & 0xFFFF;
    if (i % 3 == 1) c = ptx::fref::mul_bf16(a, b2) ^ 0x8000 ^ uint32_t(rng() % 3);
    if (i % 3 == 2) c = uint32_t(rng()) & 0x807F;
    bin(a, b2 & 0xFFFF, c);
  }
}

}  // namespace
}  // namespace qgpu::machine

namespace qgpu::machine {
namespace {

// tanh.approx: the generator against the reference's composition of the same
// rn operations, and the definition's relative error against the host's
// tanh: within 2^-11 (PTX's bound for tanh.approx.f32) on 1 M random inputs
// of every exponent and the edge values.
TEST(SoftFloat, TanhApprox) {
  floattest::Operands gen(80);
  const uint64_t n = floattest::pairs(1000000);
  double worst = 0;
  uint32_t worst_in = 0;
  for (uint64_t i = 0; i < n + floattest::edges().size(); ++i) {
    const uint32_t a = i < floattest::edges().size() ? floattest::edges()[i] : tr_input(gen, i);
    if (i % 16 == 0 || i < floattest::edges().size())
      for (bool ftz : {false, true}) {
        auto g = folding();
        ASSERT_EQ(hex(val(g.tanh(K(a), ftz))), hex(ptx::fref::tanh(a, ftz))) << "tanh.approx " << hex(a);
      }
    const uint32_t r = ptx::fref::tanh(a, false);
    float x, got;
    std::memcpy(&x, &a, 4);
    std::memcpy(&got, &r, 4);
    if (std::isnan(x)) {
      ASSERT_EQ(r, 0x7FFFFFFFu);
      continue;
    }
    const double want = std::tanh(double(x));
    const double rel = want == 0 ? std::fabs(double(got)) : std::fabs(double(got) - want) / std::fabs(want);
    if (rel > worst) worst = rel, worst_in = a;
  }
  std::printf("tanh.approx: largest relative error 2^%.2f (at %s)\n", std::log2(worst), hex(worst_in).c_str());
  EXPECT_LE(worst, std::ldexp(1.0, -11)) << hex(worst_in);
}


// The edge halves: zeros, the smallest and largest subnormals, the smallest
// normals, one and its neighbours, the largest finite value, infinities,
// quiet and signalling NaNs, both signs.
std::vector<uint32_t> half_edges() {
  std::vector<uint32_t> v;
  for (uint32_t e : {0x0000u, 0x0001u, 0x0002u, 0x03FFu, 0x0400u, 0x0401u, 0x3BFFu, 0x3C00u, 0x3C01u, 0x7BFFu, 0x7C00u,
                     0x7C01u, 0x7E00u, 0x7FFFu})
    for (uint32_t sign : {0u, 0x8000u}) v.push_back(e | sign);
  return v;
}
double half_value(uint32_t h) {
  uint32_t f = ptx::fref::f32_from_f16(h);
  float x;
  std::memcpy(&x, &f, 4);
  return x;
}

// ex2.approx.f16 and tanh.approx.f16 (docs/isa.md section 11.1): the
// generators (folded, with and without ffma) against the reference on every
// half, with and without .ftz, and the definitions against the host's exp2
// and tanh in double: PTX's bounds are a relative error of 2^-9.9 for ex2
// and an absolute one of 2^-10.987 for tanh.
TEST(SoftFloat, HalfApprox) {
  double ex2_rel = 0, ex2_sub = 0, tanh_abs = 0;
  uint32_t ex2_at = 0, tanh_at = 0;
  for (uint32_t h = 0; h < 0x10000; ++h) {
    for (bool ftz : {false, true}) {
      const uint32_t e = ptx::fref::ex2_16(h, ftz), t = ptx::fref::tanh16(h, ftz);
      for (bool ffma : {false, true}) {
        if (ffma && h % 4) continue;  // the ffma sequences on every fourth half
        auto g = folding(ffma);
        ASSERT_EQ(hex(val(g.ex2_16(K(h), ftz))), hex(e)) << "ex2.approx" << (ftz ? ".ftz" : "") << ".f16 " << hex(h);
        ASSERT_EQ(hex(val(g.tanh16(K(h), ftz))), hex(t)) << "tanh.approx" << (ftz ? ".ftz" : "") << ".f16 " << hex(h);
      }
      if (ftz) {  // flushed: a subnormal half is read as a zero, a subnormal result is one
        ASSERT_EQ(e, ptx::fref::flush16(ptx::fref::ex2_16(ptx::fref::flush16(h, true), false), true)) << hex(h);
        ASSERT_EQ(ptx::fref::flush16(e, true), e);
      }
    }
    const double x = half_value(h);
    const uint32_t e = ptx::fref::ex2_16(h, false), t = ptx::fref::tanh16(h, false);
    if (std::isnan(x)) {
      ASSERT_EQ(e, 0x7FFFu);
      ASSERT_EQ(t, 0x7FFFu);
      continue;
    }
    const double want = std::exp2(x), got = half_value(e);
    if (want >= 65520.0) {  // rounds to infinity in f16
      ASSERT_EQ(e, 0x7C00u) << hex(h);
    } else if (want >= std::ldexp(1.0, -14)) {
      const double rel = std::fabs(got - want) / want;
      if (rel > ex2_rel) ex2_rel = rel, ex2_at = h;
    } else {  // subnormal results: absolute error in units of 2^-24
      ex2_sub = std::max(ex2_sub, std::fabs(got - want) * std::ldexp(1.0, 24));
    }
    const double th = std::fabs(half_value(t) - std::tanh(x));
    if (th > tanh_abs) tanh_abs = th, tanh_at = h;
    if (x == 0) ASSERT_EQ(t, h);  // tanh(+-0) = +-0
  }
  std::printf("ex2.approx.f16: largest relative error 2^%.2f (at %s) over normal results, %.3f units of 2^-24 over "
              "subnormal ones; tanh.approx.f16: largest absolute error 2^%.2f (at %s)\n",
              std::log2(ex2_rel), hex(ex2_at).c_str(), ex2_sub, std::log2(tanh_abs), hex(tanh_at).c_str());
  EXPECT_LE(ex2_rel, std::ldexp(1.0, -9.9));
  EXPECT_LE(ex2_sub, 0.5 + 1e-6);
  EXPECT_LE(tanh_abs, std::ldexp(1.0, -10.987));
}

// .ftz on f16 (docs/isa.md section 11.1): flush16 against the reference on
// every half, and the flushed arithmetic (inputs and result flushed, then
// .sat) on every pair of edge halves and random pairs (fma: a third half).
TEST(SoftFloat, HalfFlushToZero) {
  auto g = folding();
  for (uint32_t h = 0; h < 0x10000; ++h) {
    ASSERT_EQ(val(g.flush16(K(h))), ptx::fref::flush16(h, true)) << hex(h);
    ASSERT_EQ(ptx::fref::flush16(h, true), (h & 0x7C00u) ? h : h & 0x8000u);
  }
  namespace fr = ptx::fref;
  auto soft = [&](int op, uint32_t a, uint32_t b, uint32_t c) {
    Operand x = g.flush16(K(a)), y = g.flush16(K(b)), z = g.flush16(K(c));
    Operand r = op == 0 ? g.add16(x, y) : op == 1 ? g.sub16(x, y) : op == 2 ? g.mul16(x, y) : g.fma16(x, y, z);
    return val(g.flush16(r));
  };
  auto ref = [](int op, uint32_t a, uint32_t b, uint32_t c) {
    a = fr::flush16(a, true), b = fr::flush16(b, true), c = fr::flush16(c, true);
    const uint32_t r = op == 0 ? fr::add16(a, b) : op == 1 ? fr::sub16(a, b) : op == 2 ? fr::mul16(a, b) : fr::fma16(a, b, c);
    return fr::flush16(r, true);
  };
  const std::vector<uint32_t> E = half_edges();
  std::mt19937_64 rng(91);
  const uint64_t n = floattest::pairs(50000);
  auto any = [&] {
    switch (rng() % 4) {
      case 0: return E[rng() % E.size()];
      case 1: return uint32_t(rng() & 0x83FF);  // subnormal
      case 2: return uint32_t(rng() & 0x83FF) | uint32_t(1 + rng() % 3) << 10;  // smallest binades: subnormal results
      default: return uint32_t(rng() & 0xFFFF);
    }
  };
  for (int op = 0; op < 4; ++op) {
    for (uint32_t a : E)
      for (uint32_t b : E) {
        const uint32_t c = E[(a * 7 + b) % E.size()];
        ASSERT_EQ(hex(soft(op, a, b, c)), hex(ref(op, a, b, c))) << op << " " << hex(a) << " " << hex(b) << " " << hex(c);
      }
    for (uint64_t i = 0; i < n; ++i) {
      const uint32_t a = any(), b = any(), c = any();
      const uint32_t r = ref(op, a, b, c);
      ASSERT_EQ(hex(soft(op, a, b, c)), hex(r)) << op << " " << hex(a) << " " << hex(b) << " " << hex(c);
      ASSERT_TRUE((r & 0x7C00u) || (r & 0x7FFFu) == 0) << "a subnormal result under .ftz: " << hex(r);
    }
  }
}

std::string hex64(uint64_t v) {
  char b[24];
  std::snprintf(b, sizeof b, "0x%016llx", (unsigned long long)v);
  return b;
}

// rcp.approx.ftz.f64 and rsqrt.approx.ftz.f64 (docs/isa.md section 11.1):
// the generators (folded, with and without ffma) against the reference on
// the f64 edge values, every power of two's neighbourhood and random inputs
// (QGPU_FLOAT_PAIRS scales them: a million for the full count), and the
// definition against the host's 1/x and 1/sqrt(x) of the high word's value in
// long double: the relative error stays below 2^-20 + 2^-22.9 (PTX gives
// none: "a fast, gross approximation" on the high word).
TEST(SoftFloat, Binary64ApproxRcpRsqrt) {
  std::mt19937_64 rng(92);
  const uint64_t n = floattest::pairs(100000);
  std::vector<uint64_t> in = floattest::edges64();
  for (int ex = 0; ex < 2047; ex += 1)
    for (uint64_t f : {0ull, 1ull, 0xFFFFFull, 0x80000ull})
      for (uint64_t s : {0ull, 1ull}) in.push_back(s << 63 | uint64_t(ex) << 52 | f << 32 | (rng() & 0xFFFFFFFFu));
  const size_t fixed = in.size();
  for (uint64_t i = 0; i < n; ++i) in.push_back(i % 2 ? floattest::any64(rng) : rng());
  double worst[2] = {0, 0};
  uint64_t worst_at[2] = {0, 0};
  for (size_t i = 0; i < in.size(); ++i) {
    const uint64_t a = in[i];
    const uint64_t want[2] = {ptx::fref::rcp_approx64(a), ptx::fref::rsqrt_approx64(a)};
    for (bool ffma : {false, true}) {
      if (ffma && i >= fixed && i % 4) continue;
      auto g = folding(ffma);
      const softfloat::Gen::W x{K(uint32_t(a)), K(uint32_t(a >> 32))};
      const auto r = g.rcp_approx64(x), q = g.rsqrt_approx64(x);
      ASSERT_EQ(hex64(uint64_t(val(r.second)) << 32 | val(r.first)), hex64(want[0])) << "rcp.approx.ftz.f64 " << hex64(a);
      ASSERT_EQ(hex64(uint64_t(val(q.second)) << 32 | val(q.first)), hex64(want[1])) << "rsqrt.approx.ftz.f64 " << hex64(a);
    }
    ASSERT_EQ(uint32_t(want[0]), 0u);
    ASSERT_EQ(uint32_t(want[1]), 0u);
    // The value the instructions read: the high word, a subnormal flushed.
    const uint64_t top = a & 0xFFFFFFFF00000000ull;
    double x;
    std::memcpy(&x, &top, 8);
    if (std::isnan(x)) {
      ASSERT_EQ(want[0], ptx::fref::kNaN64Approx);
      ASSERT_EQ(want[1], ptx::fref::kNaN64Approx);
      continue;
    }
    if (std::fpclassify(x) == FP_SUBNORMAL) x = std::copysign(0.0, x);
    for (int k = 0; k < 2; ++k) {
      double got;
      std::memcpy(&got, &want[k], 8);
      if (k == 1 && x < 0) {
        ASSERT_EQ(want[1], ptx::fref::kNaN64Approx) << hex64(a);
        continue;
      }
      const long double exact = k == 0 ? 1.0L / (long double)x : 1.0L / std::sqrt((long double)x);
      if (std::isinf(x) || x == 0) {
        ASSERT_EQ(got, (double)exact) << hex64(a);  // +-0, +-inf exactly (with their signs)
        ASSERT_EQ(std::signbit(got), std::signbit((double)exact)) << hex64(a);
        continue;
      }
      if (std::fabs(exact) < 0x1p-1022L) {  // flushed
        ASSERT_EQ(got, 0.0) << hex64(a);
        continue;
      }
      const double rel = double(std::fabs(((long double)got - exact) / exact));
      if (rel > worst[k]) worst[k] = rel, worst_at[k] = a;
    }
  }
  std::printf("rcp.approx.ftz.f64: largest relative error 2^%.2f (at %s); rsqrt.approx.ftz.f64: 2^%.2f (at %s); %zu inputs\n",
              std::log2(worst[0]), hex64(worst_at[0]).c_str(), std::log2(worst[1]), hex64(worst_at[1]).c_str(), in.size());
  EXPECT_LE(worst[0], std::ldexp(1.0, -20) + std::ldexp(1.0, -22.9));
  EXPECT_LE(worst[1], std::ldexp(1.0, -20) + std::ldexp(1.0, -22.9));
}

}  // namespace
}  // namespace qgpu::machine
