#include "model_host/circuit/float_words.h"

#include <algorithm>
#include <functional>
#include <optional>
#include <set>
#include <stdexcept>

namespace qgpu::circuit {

namespace {

[[noreturn]] void fail(const std::string& msg) { throw std::invalid_argument("circuit: " + msg); }

std::string part(const std::string& name, const char* what, int k) { return name + "." + what + std::to_string(k); }

// A step from `from` to `to` that fires where every literal of `all` holds
// and, when `any` is not empty, at least one of the bits in `any` is set:
//   F = M (sum of all - (k - 1)) + sum of any - M,  M = |any| + 1,
// which is at least 1 exactly then (a literal that fails makes the first
// term <= 0, and the second is at most M - 1).  Without `any`, the plain
// conjunction sum of all - (k - 1).
Step conj(const std::vector<Term>& all, const std::vector<ValueId>& any, int from, int to) {
  Step s;
  s.from = from;
  s.to = to;
  const int k = static_cast<int>(all.size());
  if (any.empty()) {
    s.form = all;
    s.bias = 1 - k;
    return s;
  }
  const int m = static_cast<int>(any.size()) + 1;
  for (const Term& t : all) s.form.push_back({t.v, t.slot, t.coef * m});
  for (ValueId v : any) s.form.push_back({v, 1, 1});
  s.bias = -m * (k - 1) - m;
  return s;
}

// The biased exponent field of an f32 held in nibbles 5..7 (bits 23..30),
// as terms of a form.
std::vector<Term> exponent_terms(const Word& x, int coef = 1) {
  std::vector<Term> t;
  for (int s = 8; s < 16; ++s) t.push_back({x.digits[5], s, coef});
  for (int s = 1; s < 16; ++s) t.push_back({x.digits[6], s, 2 * s * coef});
  for (int s = 0; s < 16; ++s)
    if (s & 7) t.push_back({x.digits[7], s, 32 * (s & 7) * coef});
  return t;
}

// Flags of one operand from its nibbles (one layer): exponent zero, NaN, infinity.
struct Classes {
  ValueId zero_exp, nan, inf;
};
Classes classify(Program& p, const std::string& name, const Word& x) {
  // Nibbles of the fraction that are not zero: at most 6.
  std::vector<Term> nonzero;
  for (int k = 0; k < 5; ++k)
    for (int s = 1; s < 16; ++s) nonzero.push_back({x.digits[k], s, 1});
  for (int s = 0; s < 16; ++s)
    if (s & 7) nonzero.push_back({x.digits[5], s, 1});
  Classes c;
  c.zero_exp = p.ladder(name + ".zexp", 2, exponent_terms(x), 0, [](int s) { return s == 0 ? 1 : 0; });
  // NaN: 7 (e - 254) + nonzero - 7 >= 1, i.e. e = 255 and a fraction.
  std::vector<Term> nan = exponent_terms(x, 7);
  nan.insert(nan.end(), nonzero.begin(), nonzero.end());
  c.nan = p.ladder(name + ".nan", 2, nan, -7 * 254 - 7, [](int s) { return s >= 1 ? 1 : 0; });
  // Infinity: (e - 254) - nonzero >= 1, i.e. e = 255 and no fraction.
  std::vector<Term> inf = exponent_terms(x);
  for (const Term& t : nonzero) inf.push_back({t.v, t.slot, -1});
  c.inf = p.ladder(name + ".inf", 2, inf, -254, [](int s) { return s >= 1 ? 1 : 0; });
  return c;
}

// |a| < |b| over the low 31 bits of two nibble words: per digit a borrow
// (a_k < b_k) and an equality, then a borrow at some digit with every digit
// above it equal.  Two layers.
ValueId magnitude_less(Program& p, const std::string& name, const Word& a, const Word& b) {
  const int n = static_cast<int>(a.digits.size());
  std::vector<ValueId> lt(n), eq(n);
  for (int k = 0; k < n; ++k) {
    const int mask = k == n - 1 ? 7 : 15;
    std::vector<Term> diff;
    for (int s = 0; s < 16; ++s) {
      if (s & mask) diff.push_back({a.digits[k], s, s & mask});
      if (s & mask) diff.push_back({b.digits[k], s, -(s & mask)});
    }
    lt[k] = p.ladder(part(name, "lt", k), 2, diff, 0, [](int s) { return s < 0 ? 1 : 0; });
    eq[k] = p.ladder(part(name, "eq", k), 2, diff, 0, [](int s) { return s == 0 ? 1 : 0; });
  }
  std::vector<Step> steps;
  for (int k = 0; k < n; ++k) {
    std::vector<Term> all{{lt[k], 1, 1}};
    for (int m = k + 1; m < n; ++m) all.push_back({eq[m], 1, 1});
    steps.push_back(conj(all, {}, 0, 1));
  }
  return p.mlp(name, 2, 0, std::move(steps));
}

}  // namespace

Word round_pack32(Program& p, const std::string& name, const Unpacked32& u) {
  const Word& r = u.sig;
  const int w = r.width();
  if (r.bits != 1) fail("round_pack32 '" + name + "': the significand needs 1-bit digits");
  if (w < 27) fail("round_pack32 '" + name + "': a significand of fewer than 27 bits");
  if (p.info(u.room).size != w) fail("round_pack32 '" + name + "': room needs one slot per significand bit");
  const int top = w - 1, hid = w - 2, lsb = w - 25, guard = w - 26;
  auto bit = [&](int i) { return r.digits[i]; };

  // Layer 1: the left shift L = min(leading zeros below the carry, room), 0
  // on a carry: step t fires where room >= t and the carry and the t bits
  // from w - 2 down are all zero.
  std::vector<Step> lsteps;
  for (int t = 1; t < w; ++t) {
    Step s;
    for (int k = t; k < w; ++k) s.form.push_back({u.room, k, 1});
    s.form.push_back({bit(top), 1, -1});
    for (int j = hid; j > hid - t; --j) s.form.push_back({bit(j), 1, -1});
    s.from = t - 1;
    s.to = t;
    lsteps.push_back(std::move(s));
  }
  const ValueId L = p.mlp(name + ".lshift", w, 0, std::move(lsteps));
  std::vector<Term> all_bits;
  for (ValueId d : r.digits) all_bits.push_back({d, 1, 1});
  const ValueId zero = p.ladder(name + ".zero", 2, all_bits, 0, [](int s) { return s == 0 ? 1 : 0; });

  // Layer 2: the normalised bits from `guard` up, the rounding increment and
  // whether it carries out of the fraction, in cases: a carry (one place
  // right, the bits shifted out kept as sticky) or a left shift by sh.
  struct Case {
    std::vector<Term> lits;
    std::function<std::vector<int>(int)> src;   // the R bits normalised bit i is the OR of
  };
  std::vector<Case> cases;
  cases.push_back({{{bit(top), 1, 1}}, [](int i) {
                     return i == 0 ? std::vector<int>{0, 1} : std::vector<int>{i + 1};
                   }});
  for (int sh = 0; sh < w; ++sh) {
    std::vector<Term> lits{{L, sh, 1}};
    if (sh == 0) lits.push_back({bit(top), 0, 1});
    cases.push_back({lits, [sh](int i) { return i - sh >= 0 ? std::vector<int>{i - sh} : std::vector<int>{}; }});
  }
  auto values = [&](const std::vector<int>& idx) {
    std::vector<ValueId> v;
    for (int i : idx) v.push_back(bit(i));
    return v;
  };
  std::vector<ValueId> n(w, -1);   // normalised bits guard .. hid
  for (int i = guard; i <= hid; ++i) {
    std::vector<Step> steps;
    for (const Case& c : cases) {
      const std::vector<int> s = c.src(i);
      if (s.empty()) continue;
      steps.push_back(conj(c.lits, values(s), 0, 1));
    }
    n[i] = p.mlp(part(name, "n", i), 2, 0, std::move(steps));
  }
  std::vector<Step> ru_steps, cf_steps;
  for (const Case& c : cases) {
    const std::vector<int> g = c.src(guard);
    if (g.size() != 1) continue;
    std::set<int> rest;
    for (int i = 0; i < guard; ++i)
      for (int j : c.src(i)) rest.insert(j);
    for (int j : c.src(lsb)) rest.insert(j);
    std::vector<Term> lits = c.lits;
    lits.push_back({bit(g[0]), 1, 1});
    if (!rest.empty()) ru_steps.push_back(conj(lits, values({rest.begin(), rest.end()}), 0, 1));
    // The increment carries out of the fraction: the guard and every fraction bit set.
    bool possible = true;
    for (int i = lsb; i < hid && possible; ++i) {
      const std::vector<int> s = c.src(i);
      if (s.size() != 1) possible = false;
      else lits.push_back({bit(s[0]), 1, 1});
    }
    if (possible) cf_steps.push_back(conj(lits, {}, 0, 1));
  }
  const ValueId ru = p.mlp(name + ".round", 2, 0, std::move(ru_steps));
  const ValueId cf = p.mlp(name + ".round_carry", 2, 0, std::move(cf_steps));
  const ValueId sign = p.lookup(name + ".sign", 2, {zero, u.sign, u.zero_sign},
                                [](const std::vector<int>& v) { return v[0] ? v[2] : v[1]; });

  // Layer 3: the rounded fraction (an increment of the fraction bits), the
  // exponent E + carry - L - 1 + hidden + fraction carry (0 for a zero),
  // clamped to 255, and the overflow.
  std::vector<ValueId> packed;   // bits 0..30
  for (int k = 0; k < hid - lsb; ++k) {
    const ValueId nk = n[lsb + k];
    std::vector<Term> below{{ru, 1, 1}};
    for (int j = 0; j < k; ++j) below.push_back({n[lsb + j], 1, 1});
    std::vector<Step> steps;
    steps.push_back({{{nk, 1, 1}}, 0, 0, 1});
    std::vector<Term> one = below, none = below;
    one.push_back({nk, 1, 1});
    none.push_back({nk, 0, 1});
    steps.push_back(conj(one, {}, 1, 0));
    steps.push_back(conj(none, {}, 0, 1));
    packed.push_back(p.mlp(part(name, "f", k), 2, 0, std::move(steps)));
  }
  std::vector<Term> e = u.exponent;
  e.push_back({bit(top), 1, 1});
  for (int s = 1; s < w; ++s) e.push_back({L, s, -s});
  e.push_back({n[hid], 1, 1});
  e.push_back({cf, 1, 1});
  e.push_back({zero, 1, -1024});
  const int ebias = u.exponent_bias - 1;
  for (int j = 0; j < 8; ++j)
    packed.push_back(p.ladder(part(name, "e", j), 2, e, ebias,
                              [j](int s) { return (std::clamp(s, 0, 255) >> j) & 1; }));
  const ValueId ovf = p.ladder(name + ".overflow", 2, e, ebias, [](int s) { return s >= 255 ? 1 : 0; });
  packed.push_back(sign);

  // Layer 4: nibbles, with the special results: 16 (inf + overflow) + 64 nan
  // added to each nibble's value select the constants.
  constexpr uint32_t kNaN = 0x7FFFFFFFu, kInf = 0x7F800000u;
  Word out{{}, 4};
  for (int k = 0; k < 8; ++k) {
    std::vector<Term> t;
    for (int j = 0; j < 4; ++j) t.push_back({packed[4 * k + j], 1, 1 << j});
    t.push_back({u.inf, 1, 16});
    t.push_back({ovf, 1, 16});
    t.push_back({u.nan, 1, 64});
    const int nanc = (kNaN >> (4 * k)) & 15, infc = (kInf >> (4 * k)) & 15;
    out.digits.push_back(p.ladder(part(name, "d", k), 16, t, 0, [=](int s) {
      if (s >= 64) return nanc;
      if (s >= 16) return infc | (k == 7 ? (s & 8) : 0);
      return s;
    }));
  }
  return out;
}

static Word add32(Program& p, const std::string& name, const Word& a, const Word& b, bool subtract, ValueId negate_b);

Word float_add32(Program& p, const std::string& name, const Word& a, const Word& b, bool subtract) {
  return add32(p, name, a, b, subtract, -1);
}

Word float_add32(Program& p, const std::string& name, const Word& a, const Word& b, ValueId negate_b) {
  if (negate_b < 0 || p.info(negate_b).size != 2) fail("float_add32 '" + name + "': negate_b is not a flag");
  return add32(p, name, a, b, false, negate_b);
}

static Word add32(Program& p, const std::string& name, const Word& a, const Word& b, bool subtract, ValueId negate_b) {
  if (a.bits != 4 || b.bits != 4 || a.digits.size() != 8 || b.digits.size() != 8)
    fail("float_add32 '" + name + "': operands must be words of 8 nibbles");
  constexpr int kW = 28;   // carry, hidden bit, 23 fraction bits, guard, round, sticky

  // Layer 1: operand classes, signs, and whether the magnitudes subtract.
  const Classes ca = classify(p, name + ".a", a), cb = classify(p, name + ".b", b);
  const ValueId sa = apply(p, name + ".sa", 2, a.digits[7], [](int s) { return s >= 8 ? 1 : 0; });
  // b's sign, flipped for a subtraction (`subtract`, or where negate_b holds).
  std::vector<Term> sbt;
  for (int s = 0; s < 16; ++s)
    if ((s >= 8) != subtract) sbt.push_back({b.digits[7], s, 1});
  if (negate_b >= 0) sbt.push_back({negate_b, 1, 1});
  const ValueId sb = p.ladder(name + ".sb", 2, sbt, 0, [](int s) { return s & 1; });
  std::vector<Term> signs = sbt;
  for (int s = 8; s < 16; ++s) signs.push_back({a.digits[7], s, 1});
  const ValueId op = p.ladder(name + ".op", 2, signs, 0, [](int s) { return s & 1; });
  // Layers 1-2: which magnitude is larger; NaN and infinite results.
  const ValueId swap = magnitude_less(p, name + ".swap", a, b);
  const ValueId nan = p.ladder(name + ".nan", 2,
                               {{ca.nan, 1, 3}, {cb.nan, 1, 3}, {ca.inf, 1, 1}, {cb.inf, 1, 1}, {op, 1, 1}}, -2,
                               [](int s) { return s >= 1 ? 1 : 0; });
  const ValueId inf =
      p.ladder(name + ".inf", 2, {{ca.inf, 1, 1}, {cb.inf, 1, 1}}, 0, [](int s) { return s >= 1 ? 1 : 0; });

  // Layer 3: x = the operand of the larger magnitude, y the other, as bits
  // read from the nibbles (bit i of the chosen operand: two steps, one per
  // side of the swap).
  auto pick = [&](const std::string& what, int i, const Word& w0, const Word& w1) {
    std::vector<Step> steps;
    for (int side = 0; side < 2; ++side) {
      const Word& w = side ? w1 : w0;
      Step st;
      st.form.push_back({swap, side, 2});
      for (int v = 0; v < 16; ++v)
        if ((v >> (i % 4)) & 1) st.form.push_back({w.digits[i / 4], v, 1});
      st.bias = -2;
      st.from = 0;
      st.to = 1;
      steps.push_back(std::move(st));
    }
    return p.mlp(part(name, what.c_str(), i), 2, 0, std::move(steps));
  };
  // x's fraction bits wait until layer 5 (below), where they are first read.
  Word x{std::vector<ValueId>(31, -1), 1}, y{{}, 1};
  for (int i = 0; i < 31; ++i) {
    if (i >= 23) x.digits[i] = pick("x", i, a, b);
    y.digits.push_back(pick("y", i, b, a));
  }
  const ValueId zx = p.select(name + ".zx", swap, {ca.zero_exp, cb.zero_exp});
  const ValueId zy = p.select(name + ".zy", swap, {cb.zero_exp, ca.zero_exp});
  const ValueId sx = p.select(name + ".sx", swap, {sa, sb});

  // Layer 4: the exponents (a denormal's is 1), the alignment shift
  // min(ex - ey, 27), the sign of a zero sum.
  std::vector<Term> ex{{zx, 1, 1}}, diff{{zx, 1, 1}, {zy, 1, -1}};
  for (int i = 0; i < 8; ++i) {
    ex.push_back({x.digits[23 + i], 1, 1 << i});
    diff.push_back({x.digits[23 + i], 1, 1 << i});
    diff.push_back({y.digits[23 + i], 1, -(1 << i)});
  }
  const ValueId amount =
      p.ladder(name + ".align", kW, diff, 0, [](int s) { return std::clamp(s, 0, kW - 1); });
  const ValueId zero_sign = p.lookup(name + ".zsign", 2, {sx, op},
                                     [](const std::vector<int>& v) { return v[0] && !v[1] ? 1 : 0; });

  {
    const size_t late = p.ops().size();
    for (int i = 0; i < 23; ++i) x.digits[i] = pick("x", i, a, b);
    p.wait_for(late, amount);
  }

  // Layer 5: y's significand (hidden bit at 26, fraction above three zero
  // bits) shifted right by the amount, every bit shifted out ORed into bit 0.
  auto y_full = [&](int q) -> std::optional<Term> {
    if (q == kW - 2) return Term{zy, 0, 1};
    if (q >= 3 && q < kW - 2) return Term{y.digits[q - 3], 1, 1};
    return std::nullopt;
  };
  Word yal{{}, 1};
  for (int i = 0; i < kW - 1; ++i) {
    std::vector<Step> steps;
    for (int sh = 0; sh < kW; ++sh) {
      if (i == 0) {
        std::vector<Term> any;
        for (int q = 0; q <= std::min(sh, kW - 2); ++q)
          if (auto t = y_full(q)) any.push_back(*t);
        if (any.empty()) continue;
        const int m = static_cast<int>(any.size()) + 1;
        Step s;
        s.form.push_back({amount, sh, m});
        s.form.insert(s.form.end(), any.begin(), any.end());
        s.bias = -m;
        s.from = 0;
        s.to = 1;
        steps.push_back(std::move(s));
      } else if (auto t = y_full(i + sh)) {
        steps.push_back(conj({{amount, sh, 1}, *t}, {}, 0, 1));
      }
    }
    yal.digits.push_back(p.mlp(part(name, "yal", i), 2, 0, std::move(steps)));
  }

  // Layers 6-8: x's significand plus or minus the aligned one (x + ~y + 1),
  // 28 bits with carry lookahead: generate and propagate, carries, sums.
  std::vector<ValueId> g(kW), q(kW);
  for (int i = 0; i < kW; ++i) {
    std::vector<ValueId> in{op};
    std::function<int(const std::vector<int>&)> xv = [](const std::vector<int>&) { return 0; };
    std::function<int(const std::vector<int>&)> yv = [](const std::vector<int>&) { return 0; };
    if (i == kW - 2) {
      in.push_back(zx);
      xv = [](const std::vector<int>& v) { return 1 - v[1]; };
    } else if (i >= 3 && i < kW - 2) {
      in.push_back(x.digits[i - 3]);
      xv = [](const std::vector<int>& v) { return v[1]; };
    }
    if (i < kW - 1) {
      const size_t at = in.size();
      in.push_back(yal.digits[i]);
      yv = [at](const std::vector<int>& v) { return v[at]; };
    }
    g[i] = p.lookup(part(name, "g", i), 2, in, [=](const std::vector<int>& v) { return xv(v) & (yv(v) ^ v[0]); });
    q[i] = p.lookup(part(name, "q", i), 2, in, [=](const std::vector<int>& v) { return xv(v) ^ yv(v) ^ v[0]; });
  }
  std::vector<ValueId> carry(kW);
  carry[0] = op;
  for (int k = 1; k < kW; ++k) {
    std::vector<Step> steps;
    {
      std::vector<Term> all{{op, 1, 1}};
      for (int i = 0; i < k; ++i) all.push_back({q[i], 1, 1});
      steps.push_back(conj(all, {}, 0, 1));
    }
    for (int j = 0; j < k; ++j) {
      std::vector<Term> all{{g[j], 1, 1}};
      for (int i = j + 1; i < k; ++i) all.push_back({q[i], 1, 1});
      steps.push_back(conj(all, {}, 0, 1));
    }
    carry[k] = p.mlp(part(name, "c", k), 2, 0, std::move(steps));
  }
  // The room to normalise left, min(ex - 1, 27), once the sum is on its way
  // (computed earlier it would only occupy the residual).
  const size_t late = p.ops().size();
  const ValueId room = p.ladder(name + ".room", kW, ex, -1, [](int s) { return std::clamp(s, 0, kW - 1); });
  p.wait_for(late, carry[kW - 1]);
  Unpacked32 u;
  u.sig.bits = 1;
  for (int k = 0; k < kW; ++k)
    u.sig.digits.push_back(
        p.ladder(part(name, "r", k), 2, {{q[k], 1, 1}, {carry[k], 1, 1}}, 0, [](int s) { return s & 1; }));
  u.exponent = ex;
  u.room = room;
  u.sign = sx;
  u.zero_sign = zero_sign;
  u.nan = nan;
  u.inf = inf;
  return round_pack32(p, name + ".pack", u);
}

namespace {

// Terms that add `coef` where bit i (0..22) of the fraction of x is set.
std::vector<Term> fraction_bit(const Word& x, int i, int coef = 1) {
  std::vector<Term> t;
  for (int s = 0; s < 16; ++s)
    if ((s >> (i % 4)) & 1) t.push_back({x.digits[i / 4], s, coef});
  return t;
}

// Terms that count (0..3) the parts of x's exponent field that are not
// zero: bit 23, bits 24..27, bits 28..30.  Non-zero exactly where x's
// significand has its hidden bit.
std::vector<Term> hidden_terms(const Word& x, int coef = 1) {
  std::vector<Term> t;
  for (int s = 8; s < 16; ++s) t.push_back({x.digits[5], s, coef});
  for (int s = 1; s < 16; ++s) t.push_back({x.digits[6], s, coef});
  for (int s = 0; s < 16; ++s)
    if (s & 7) t.push_back({x.digits[7], s, coef});
  return t;
}

// Bit i (0..23) of x's significand (23: the hidden bit) times `coef`, as
// terms whose sum lies in [0, 3 coef] and is >= coef exactly where the bit is set.
std::vector<Term> significand_bit(const Word& x, int i, int coef = 1) {
  return i == 23 ? hidden_terms(x, coef) : fraction_bit(x, i, coef);
}

// Flag: x is a zero of either sign (its low 31 bits are zero).
ValueId zero_flag(Program& p, const std::string& name, const Word& x) {
  std::vector<Term> t = exponent_terms(x);
  for (int k = 0; k < 5; ++k)
    for (int s = 1; s < 16; ++s) t.push_back({x.digits[k], s, 1});
  for (int s = 0; s < 16; ++s)
    if (s & 7) t.push_back({x.digits[5], s, 1});
  return p.ladder(name, 2, t, 0, [](int s) { return s == 0 ? 1 : 0; });
}

}  // namespace

namespace {

// The exact product stage of a multiply or fused multiply-add: per operand
// the classes, the zero flags and the sign; the biased exponent sum; and the
// 24 x 24 bit products of the significands counted per column, as the bits of
// each column count.
struct Product {
  Classes ca, cb;
  ValueId za = -1, zb = -1;       // flags: the operand is a zero
  ValueId sign = -1;              // flag: the sign of the product
  std::vector<Term> expo;         // ea' + eb' (a denormal's exponent 1)
  // cbits[k][t]: terms summing to bit t of the column count c_k (k = 0..46),
  // the exact product being sum over k, t of 2^(k + t) cbits[k][t].
  std::vector<std::vector<std::vector<Term>>> cbits;
  ValueId counted = -1;           // a value of the last counting layer
};

// Layer 1: the bit products a_i b_j of the significands, read straight from
// the nibbles (one step each); with two product layers only those of b's low
// 12 bits, the others in layer 3, so that the residual holds half of them at
// a time (the hidden bits' product, which needs both exponents non-zero, is
// made in layer 2 from the flags).  Layer 1 also: operand classes, zero
// flags, the sign.  Layer 2: the column counts c_k = sum of a_i b_j over
// i + j = k (k = 46: the hidden bits' product), of the first half with two
// product layers, whose whole count is made in bits in layer 4.
Product product_stage(Program& p, const std::string& name, const Word& a, const Word& b, int product_layers) {
  static constexpr int kN = 24, kW = 48;   // significand bits; product bits
  Product out;
  std::vector<std::vector<ValueId>> prod(kN, std::vector<ValueId>(kN, -1));
  auto products = [&](int j0, int j1) {
    for (int i = 0; i < kN; ++i)
      for (int j = j0; j < j1; ++j) {
        if (i == 23 && j == 23) continue;
        // 4 [bit i of a] + 4 [bit j of b] - 7 >= 1, with a hidden bit's terms
        // (0..3, at least 1 where it is set) standing in for the literal: the
        // side that is a hidden bit gets coefficient 1 and the other 4.
        Step st;
        st.form = significand_bit(a, i, i == 23 ? 1 : 4);
        const std::vector<Term> tb = significand_bit(b, j, j == 23 ? 1 : 4);
        st.form.insert(st.form.end(), tb.begin(), tb.end());
        st.bias = (i == 23 || j == 23) ? -4 : -7;
        st.from = 0;
        st.to = 1;
        prod[i][j] = p.mlp(name + ".p" + std::to_string(i) + "_" + std::to_string(j), 2, 0, {st});
      }
  };
  // With one product layer, every product is in the first half.
  const int kHalf = product_layers == 2 ? kN / 2 : kN;
  products(0, kHalf);
  out.ca = classify(p, name + ".a", a);
  out.cb = classify(p, name + ".b", b);
  out.za = zero_flag(p, name + ".a.zero", a);
  out.zb = zero_flag(p, name + ".b.zero", b);
  std::vector<Term> signs;
  for (const Word* x : {&a, &b})
    for (int s = 8; s < 16; ++s) signs.push_back({x->digits[7], s, 1});
  out.sign = p.ladder(name + ".sign", 2, signs, 0, [](int s) { return s & 1; });

  out.expo = {{out.ca.zero_exp, 1, 1}, {out.cb.zero_exp, 1, 1}};
  for (const Term& t : exponent_terms(a)) out.expo.push_back(t);
  for (const Term& t : exponent_terms(b)) out.expo.push_back(t);
  const ValueId hidden = p.lookup(name + ".p23_23", 2, {out.ca.zero_exp, out.cb.zero_exp},
                                  [](const std::vector<int>& v) { return !v[0] && !v[1] ? 1 : 0; });
  std::vector<std::vector<std::vector<Term>>>& cbits = out.cbits;
  cbits.assign(kW - 1, {});
  auto categorical_bits = [&](int k, ValueId c, int max) {
    for (int t = 0; (1 << t) <= max; ++t) {
      std::vector<Term> terms;
      for (int v = 1; v <= max; ++v)
        if ((v >> t) & 1) terms.push_back({c, v, 1});
      cbits[k].push_back(std::move(terms));
    }
  };
  auto column = [&](int k, int j0, int j1) {   // the products of column k with b's bit in [j0, j1)
    std::vector<Term> t;
    for (int i = std::max(0, k - (kN - 1)); i <= std::min(k, kN - 1); ++i) {
      const int j = k - i;
      if (j < j0 || j >= j1) continue;
      t.push_back(i == 23 && j == 23 ? Term{hidden, 1, 1} : Term{prod[i][j], 1, 1});
    }
    return t;
  };
  std::vector<ValueId> c1(kW - 1, -1);
  std::vector<int> n1(kW - 1, 0);
  for (int k = 0; k < kW - 1; ++k) {
    const std::vector<Term> first = column(k, 0, kHalf);
    n1[k] = static_cast<int>(first.size());
    if (n1[k] == 0) continue;
    if (first.size() == 1 && first[0].v == hidden) {   // the hidden bits' product alone
      c1[k] = hidden;
      continue;
    }
    c1[k] = p.ladder(part(name, "c1_", k), n1[k] + 1, first, 0, [](int s) { return s; });
  }
  out.counted = c1[0];
  if (product_layers == 1) {
    for (int k = 0; k < kW - 1; ++k) categorical_bits(k, c1[k], n1[k]);
    return out;
  }
  // Layer 3: b's high 12 bits' products, once the first half is counted;
  // layer 4: the whole count in bits (at most 5 ladders), from the first
  // half's count read by its value and the second half's products.
  const size_t second = p.ops().size();
  products(kHalf, kN);
  p.wait_for(second, c1[0]);
  for (int k = 0; k < kW - 1; ++k) {
    std::vector<Term> t = column(k, kHalf, kN);
    if (t.empty()) {
      categorical_bits(k, c1[k], n1[k]);
      continue;
    }
    const int most = n1[k] + static_cast<int>(t.size());
    for (int v = 1; v <= n1[k]; ++v) t.push_back({c1[k], v, v});
    for (int b = 0; (1 << b) <= most; ++b) {
      const ValueId bit =
          p.ladder(part(name, ("c" + std::to_string(b) + "_").c_str(), k), 2, t, 0, [b](int s) { return (s >> b) & 1; });
      cbits[k].push_back({{bit, 1, 1}});
      out.counted = bit;
    }
  }
  return out;
}

// Two rows whose sum is the sum of `bits` (bits[k]: groups of terms, each
// summing to 0 or 1, of weight 2^k), modulo 2^W for W = bits.size(): d_k the
// count of column k, e_k = sum over t of bit t of d_{k-t} (at most 3), rows
// x_k = bit 0 of e_k and y_k = bit 1 of e_{k-1}, then their generate and
// propagate (x xor y); -1 where always 0.  Three layers.
struct Rows {
  std::vector<ValueId> g, q;
};
//
// With `xors` (one per column, or empty), column k also counts the bit
// x_k xor f_k of the pair of flags xors[k] (either -1: none), read by its
// two flags in d_k's ladder: s = (the groups' sum) + 8 f + 16 x, whose
// count is s mod 8 + (bit 3 of s xor bit 4).
Rows two_rows(Program& p, const std::string& name, const std::vector<std::vector<std::vector<Term>>>& bits,
              const std::vector<std::pair<ValueId, ValueId>>& xors = {}) {
  const int w = static_cast<int>(bits.size());
  std::vector<ValueId> d(w, -1);
  std::vector<int> dmax(w, 0);
  for (int k = 0; k < w; ++k) {
    std::vector<Term> t;
    for (const auto& g : bits[k]) t.insert(t.end(), g.begin(), g.end());
    dmax[k] = static_cast<int>(bits[k].size());
    const bool x = k < static_cast<int>(xors.size()) && xors[k].first >= 0;
    if (x) {
      if (dmax[k] > 7) fail("two_rows '" + name + "': a column of more than 7 bits beside a xor");
      t.push_back({xors[k].first, 1, 16});
      t.push_back({xors[k].second, 1, 8});
      ++dmax[k];
      // (min: sums no input reaches, inside the span of the form)
      const int most = dmax[k];
      d[k] = p.ladder(part(name, "d", k), most + 1, t, 0,
                      [most](int s) { return std::min(most, (s & 7) + (((s >> 3) ^ (s >> 4)) & 1)); });
    } else if (!t.empty()) {
      d[k] = p.ladder(part(name, "d", k), dmax[k] + 1, t, 0, [](int s) { return s; });
    }
  }
  std::vector<ValueId> e(w, -1);
  std::vector<int> emax(w, 0);
  for (int k = 0; k < w; ++k) {
    std::vector<Term> t;
    for (int s = 0; s < 8; ++s) {
      const int src = k - s;
      if (src < 0 || d[src] < 0 || dmax[src] < (1 << s)) continue;
      for (int v = 1; v <= dmax[src]; ++v)
        if ((v >> s) & 1) t.push_back({d[src], v, 1});
      ++emax[k];
    }
    if (!t.empty()) e[k] = p.ladder(part(name, "e", k), emax[k] + 1, t, 0, [](int s) { return s; });
    if (emax[k] > 3) fail("two_rows '" + name + "': a reduced column above 3");
  }
  // A row bit that can be set has terms for "is 1" and "is 0"; one that
  // cannot, none.
  auto row_bit = [&](int k, int want, bool high) {
    std::vector<Term> t;
    const int c = high ? k - 1 : k;
    for (int v = 0; c >= 0 && e[c] >= 0 && v <= emax[c]; ++v)
      if (((v >> (high ? 1 : 0)) & 1) == want) t.push_back({e[c], v, 1});
    return t;
  };
  auto can_set = [&](int k, bool high) { return !row_bit(k, 1, high).empty(); };
  auto both = [](std::vector<Term> x, const std::vector<Term>& y) {
    x.insert(x.end(), y.begin(), y.end());
    return x;
  };
  Rows r;
  r.g.assign(w, -1);
  r.q.assign(w, -1);
  for (int k = 0; k < w; ++k) {
    const bool xs = can_set(k, false), ys = can_set(k, true);
    if (xs && ys) {
      r.g[k] = p.mlp(part(name, "g", k), 2, 0, {{both(row_bit(k, 1, false), row_bit(k, 1, true)), -1, 0, 1}});
      r.q[k] = p.mlp(part(name, "q", k), 2, 0,
                     {{both(row_bit(k, 1, false), row_bit(k, 0, true)), -1, 0, 1},
                      {both(row_bit(k, 0, false), row_bit(k, 1, true)), -1, 0, 1}});
    } else if (xs || ys) {
      r.q[k] = p.mlp(part(name, "q", k), 2, 0, {{row_bit(k, 1, ys), 0, 0, 1}});
    }
  }
  return r;
}

// The carry-lookahead terms of the carry into bit k of the rows' sum (carry
// in 0): one conjunction g_j q_{j+1} .. q_{k-1} per j; at most one holds.
std::vector<std::vector<Term>> carry_terms(const Rows& r, int k) {
  std::vector<std::vector<Term>> out;
  for (int j = 0; j < k; ++j) {
    if (r.g[j] < 0) continue;
    std::vector<Term> all{{r.g[j], 1, 1}};
    bool possible = true;
    for (int i = j + 1; i < k && possible; ++i) {
      if (r.q[i] < 0) possible = false;
      else all.push_back({r.q[i], 1, 1});
    }
    if (possible) out.push_back(std::move(all));
  }
  return out;
}

// The carries into each bit of the rows' sum (one layer); -1 where always 0.
std::vector<ValueId> carries(Program& p, const std::string& name, const Rows& r) {
  const int w = static_cast<int>(r.q.size());
  std::vector<ValueId> carry(w, -1);
  for (int k = 1; k < w; ++k) {
    std::vector<Step> steps;
    for (const std::vector<Term>& all : carry_terms(r, k)) steps.push_back(conj(all, {}, 0, 1));
    if (!steps.empty()) carry[k] = p.mlp(part(name, "k", k), 2, 0, std::move(steps));
  }
  return carry;
}

// A step from 0 to 1 where every literal (value, slot) holds; a literal of
// value -1 is a bit that is always 0.  nullopt where it can never fire.
std::optional<Step> literals(const std::vector<std::pair<ValueId, int>>& lits) {
  std::vector<Term> all;
  for (const auto& [v, want] : lits) {
    if (v < 0) {
      if (want) return std::nullopt;
      continue;
    }
    all.push_back({v, want, 1});
  }
  if (all.empty()) fail("literals: a step with no literal");
  return conj(all, {}, 0, 1);
}

}  // namespace

Word float_mul32(Program& p, const std::string& name, const Word& a, const Word& b, int product_layers) {
  if (a.bits != 4 || b.bits != 4 || a.digits.size() != 8 || b.digits.size() != 8)
    fail("float_mul32 '" + name + "': operands must be words of 8 nibbles");
  if (product_layers != 1 && product_layers != 2) fail("float_mul32 '" + name + "': product_layers is 1 or 2");
  static constexpr int kN = 24, kW = 48;   // significand bits; product bits
  static constexpr int kMaxShift = 26;     // amount slot kMaxShift: below half the least denormal

  // Layers 1-2 (1-4 with two product layers): the product's column counts,
  // classes, zero flags and sign; layer 1 also the trailing zeros of each
  // significand (24 for a zero one).
  const Product pr = product_stage(p, name, a, b, product_layers);
  const Classes &ca = pr.ca, &cb = pr.cb;
  auto trailing = [&](const Word& x, const char* what) {
    std::vector<Step> steps;
    for (int t = 1; t <= kN; ++t) {
      Step st;
      for (int i = 0; i < t; ++i) {
        const std::vector<Term> bt = significand_bit(x, i, -1);
        st.form.insert(st.form.end(), bt.begin(), bt.end());
      }
      st.bias = 1;
      st.from = t - 1;
      st.to = t;
      steps.push_back(std::move(st));
    }
    return p.mlp(name + what, kN + 1, 0, std::move(steps));
  };
  const ValueId tza = trailing(a, ".a.tz"), tzb = trailing(b, ".b.tz");

  // Layer 2: the exponent E = ea' + eb' - 127 and the right shift
  // min(1 - E, 26) where the result falls below the normal range; the NaN
  // (a NaN operand, or inf x 0) and infinite results.
  const std::vector<Term>& expo = pr.expo;
  const int ebias = -127;
  std::vector<Term> neg_e;
  for (const Term& t : expo) neg_e.push_back({t.v, t.slot, -t.coef});
  const ValueId amount = p.ladder(name + ".rshift", kMaxShift + 1, neg_e, 1 - ebias,
                                  [](int s) { return std::clamp(s, 0, kMaxShift); });
  const ValueId nan = p.mlp(name + ".nan", 2, 0,
                            {conj({}, {ca.nan, cb.nan}, 0, 1), conj({{ca.inf, 1, 1}, {pr.zb, 1, 1}}, {}, 0, 1),
                             conj({{pr.za, 1, 1}, {cb.inf, 1, 1}}, {}, 0, 1)});
  const ValueId inf = p.ladder(name + ".inf", 2, {{ca.inf, 1, 1}, {cb.inf, 1, 1}}, 0,
                               [](int s) { return s >= 1 ? 1 : 0; });

  // Layers 3-5 (5-7): the column counts' bits reduced to two rows (the
  // product is sum d_k 2^k, d_k the bits of the counts below it, and no
  // column above 47 can hold anything), their generate and propagate;
  // layer 6 (8): the carries.
  std::vector<std::vector<std::vector<Term>>> bits(kW);
  for (int k = 0; k < kW - 1; ++k)
    for (size_t t = 0; t < pr.cbits[k].size(); ++t)
      if (k + static_cast<int>(t) < kW) bits[k + t].push_back(pr.cbits[k][t]);
  const Rows rows = two_rows(p, name, bits);
  const std::vector<ValueId>& q = rows.q;
  const std::vector<ValueId> carry = carries(p, name, rows);

  // Layer 7: the product's bits q_k xor carry_k shifted right by the
  // amount; below bit 22 (where round_pack32 reads only a sticky bit) a
  // shifted product keeps just bit 0, set where the product has a bit below
  // 22 + amount: where tz(a) + tz(b) <= 21 + amount (tz 24, a zero
  // significand, counts 48).  Amount 26 leaves nothing: the result is below
  // half the least denormal, and rounds to zero.  The room to normalise
  // left, min(E - 1, 47) where nothing was shifted, 0 where something was.
  auto sum_bit = [&](int j, int amt) {   // steps setting the result where bit j of the product is set
    std::vector<Step> steps;
    for (const auto& lits : {std::vector<std::pair<ValueId, int>>{{amount, amt}, {q[j], 1}, {carry[j], 0}},
                             std::vector<std::pair<ValueId, int>>{{amount, amt}, {q[j], 0}, {carry[j], 1}}})
      if (auto st = literals(lits)) steps.push_back(*st);
    return steps;
  };
  const size_t late = p.ops().size();
  Unpacked32 u;
  u.sig.bits = 1;
  for (int i = 0; i < kW; ++i) {
    std::vector<Step> steps = sum_bit(i, 0);
    if (i >= 22) {
      for (int amt = 1; amt < kMaxShift && i + amt < kW; ++amt)
        for (Step& st : sum_bit(i + amt, amt)) steps.push_back(std::move(st));
    } else if (i == 0) {
      for (int amt = 1; amt < kMaxShift; ++amt) {
        // 48 ([amount == amt] - 1) + 22 + amt - tz(a) - tz(b) >= 1
        Step st;
        st.form.push_back({amount, amt, 48});
        for (int s = 0; s <= kN; ++s) {
          st.form.push_back({tza, s, -(s == kN ? 48 : s)});
          st.form.push_back({tzb, s, -(s == kN ? 48 : s)});
        }
        st.bias = -48 + 22 + amt;
        st.from = 0;
        st.to = 1;
        steps.push_back(std::move(st));
      }
    }
    u.sig.digits.push_back(p.mlp(part(name, "r", i), 2, 0, std::move(steps)));
  }
  u.exponent = expo;
  for (int amt = 1; amt < kMaxShift; ++amt) u.exponent.push_back({amount, amt, amt});
  u.exponent_bias = ebias;
  u.room = p.ladder(name + ".room", kW, u.exponent, ebias - 1, [](int s) { return std::clamp(s, 0, kW - 1); });
  p.wait_for(late, carry[kW - 1]);
  u.sign = pr.sign;
  u.zero_sign = pr.sign;
  u.nan = nan;
  u.inf = inf;
  return round_pack32(p, name + ".pack", u);
}

namespace {

// The fused multiply-add's frame: W columns, column k of weight 2^(k + Ef -
// 176).  Column 0 holds only c's sticky bit, the product's 48 bits columns
// 3..50, and c's 24-bit significand columns 53 - s .. 76 - s for the
// alignment shift s = clamp(E - ec' + 27, 0, 76); column 77 takes a carry.
constexpr int kFmaW = 78, kFmaP = 3, kFmaC = 53, kFmaMax = 76;
// The frame's exponent Ef = max(E, ec' - 27), or ec' - 27 where the product
// is zero: E + excess - kFmaZ pz, excess in 10 bits.
constexpr int kFmaZ = 410;

// c aligned in the frame (layers 2-3): the shift (0 where the product is
// zero) in two digits, the product-zero flag, and c's bits per column, each
// bit shifted below column 1 ORed into column 0 (c's sticky bit).
struct AlignedC {
  std::vector<ValueId> cal;   // per column 0 .. W - 2
  ValueId pz = -1;
};

AlignedC align_c(Program& p, const std::string& name, const Word& c, const Product& pr,
                 const std::vector<Term>& expo, const std::vector<Term>& ec) {
  std::vector<Term> shift = expo;   // E - ec' + 27 = expo - 127 - ec' + 27
  for (const Term& t : ec) shift.push_back({t.v, t.slot, -t.coef});
  shift.push_back({pr.za, 1, -1000});   // a zero product: shift 0, c at the top
  shift.push_back({pr.zb, 1, -1000});
  // The shift in two digits (8 hi + lo: 18 residual dimensions instead of 77).
  const ValueId amount_hi = p.ladder(name + ".align_hi", kFmaMax / 8 + 1, shift, -100,
                                     [](int s) { return std::clamp(s, 0, kFmaMax) / 8; });
  const ValueId amount_lo =
      p.ladder(name + ".align_lo", 8, shift, -100, [](int s) { return std::clamp(s, 0, kFmaMax) % 8; });
  // Terms adding 2 coef where the shift is s (each digit coef).
  auto shift_is = [&](int s, int coef) {
    return std::vector<Term>{{amount_hi, s / 8, coef}, {amount_lo, s % 8, coef}};
  };
  AlignedC r;
  r.pz = p.ladder(name + ".pz", 2, {{pr.za, 1, 1}, {pr.zb, 1, 1}}, 0, [](int s) { return s >= 1 ? 1 : 0; });
  auto c_bit = [&](int j, int coef) { return significand_bit(c, j, coef); };
  r.cal.assign(kFmaW, -1);
  for (int k = 0; k < kFmaW - 1; ++k) {
    std::vector<Step> steps;
    if (k == 0) {
      for (int s = kFmaC; s <= kFmaMax; ++s) {
        Step st;
        st.form = shift_is(s, 27);
        for (int j = 0; j <= std::min(23, s - kFmaC); ++j) {
          const std::vector<Term> t = c_bit(j, 1);
          st.form.insert(st.form.end(), t.begin(), t.end());
        }
        st.bias = -54;
        st.from = 0;
        st.to = 1;
        steps.push_back(std::move(st));
      }
    } else {
      for (int s = 0; s <= kFmaMax; ++s) {
        const int j = k - kFmaC + s;
        if (j < 0 || j > 23) continue;
        Step st;
        st.form = c_bit(j, j == 23 ? 1 : 4);
        const std::vector<Term> at = shift_is(s, 4);
        st.form.insert(st.form.end(), at.begin(), at.end());
        st.bias = j == 23 ? -8 : -11;
        st.from = 0;
        st.to = 1;
        steps.push_back(std::move(st));
      }
    }
    r.cal[k] = p.mlp(part(name, "cal", k), 2, 0, std::move(steps));
  }
  return r;
}

// Layer 8 beside the carries: ap_k, all of q_0 .. q_{k-1}, where T1 = T0 + 1
// carries into bit k besides; and whether T1 = P - C is negative (its bit
// 77): q_77 xor (carry_77 or ap_77).
ValueId lookahead_and_sign(Program& p, const std::string& name, const Rows& rows, std::vector<ValueId>& ap) {
  const std::vector<ValueId>& q = rows.q;
  ap.assign(kFmaW, -1);
  for (int k = 1; k < kFmaW; ++k) {
    std::vector<std::pair<ValueId, int>> lits;
    bool possible = true;
    for (int i = 0; i < k && possible; ++i) {
      if (q[i] < 0) possible = false;
      else lits.push_back({q[i], 1});
    }
    if (possible) ap[k] = p.mlp(part(name, "ap", k), 2, 0, {*literals(lits)});
  }
  const int top = kFmaW - 1;
  std::vector<std::vector<Term>> ones = carry_terms(rows, top);   // carry_77 or ap_77: at most one holds
  if (ap[top] >= 0) {
    std::vector<Term> all;
    for (int i = 0; i < top; ++i) all.push_back({q[i], 1, 1});
    ones.push_back(std::move(all));
  }
  std::vector<Step> steps;
  if (q[top] >= 0) steps.push_back({{{q[top], 1, 1}}, 0, 0, 1});
  for (std::vector<Term> all : ones) {
    if (q[top] >= 0) {
      std::vector<Term> set = all;
      set.push_back({q[top], 1, 1});
      steps.push_back(conj(set, {}, 1, 0));
      all.push_back({q[top], 0, 1});
    }
    steps.push_back(conj(all, {}, 0, 1));
  }
  return p.mlp(name + ".neg", 2, 0, std::move(steps));
}

// Layer 9: |P +- C| bit by bit: T0 where the magnitudes add; where they
// subtract, T1 = P - C, or ~T0 = C - P where T1 is negative.
std::vector<ValueId> signed_magnitude(Program& p, const std::string& name, const std::vector<ValueId>& q,
                                      const std::vector<ValueId>& carry, const std::vector<ValueId>& ap, ValueId op,
                                      ValueId neg) {
  std::vector<ValueId> r;
  for (int k = 0; k < kFmaW; ++k) {
    const ValueId c0 = carry[k], a1 = ap[k];
    std::vector<Step> steps;
    std::vector<std::vector<std::pair<ValueId, int>>> cases = {
        {{op, 0}, {q[k], 1}, {c0, 0}},
        {{op, 0}, {q[k], 0}, {c0, 1}},
        {{op, 1}, {neg, 0}, {q[k], 1}, {c0, 0}, {a1, 0}},
        {{op, 1}, {neg, 0}, {q[k], 0}, {c0, 1}},
        {{op, 1}, {neg, 0}, {q[k], 0}, {a1, 1}},
        {{op, 1}, {neg, 1}, {q[k], 1}, {c0, 1}},
        {{op, 1}, {neg, 1}, {q[k], 0}, {c0, 0}}};
    if (k == 0) {   // T1's carry into bit 0 is its carry in, 1
      cases.erase(cases.begin() + 2, cases.begin() + 5);
      cases.push_back({{op, 1}, {neg, 0}, {q[k], 0}});
    }
    for (const auto& lits : cases)
      if (auto st = literals(lits)) steps.push_back(*st);
    r.push_back(p.mlp(part(name, "r", k), 2, 0, std::move(steps)));
  }
  return r;
}

// The result's sign, an exact zero's sign, NaN and infinity.  The sign: the
// product's, or c's where the difference is negative; an infinite product's,
// else an infinite c's.  An exact zero is +0 where the magnitudes subtract.
void fma_classes(Program& p, const std::string& name, const Product& pr, const Classes& cc, ValueId sc, ValueId op,
                 ValueId neg, Unpacked32& u) {
  const ValueId pinf = p.ladder(name + ".pinf", 2, {{pr.ca.inf, 1, 1}, {pr.cb.inf, 1, 1}}, 0,
                                [](int s) { return s >= 1 ? 1 : 0; });
  u.sign = p.lookup(name + ".sign", 2, {op, neg, pr.sign, sc, pinf, cc.inf}, [](const std::vector<int>& v) {
    if (v[4]) return v[2];
    if (v[5]) return v[3];
    return v[0] && v[1] ? v[3] : v[2];
  });
  // (round_pack32 takes an infinity's sign from zero_sign where the
  // significand, garbage then, happens to be zero.)
  u.zero_sign = p.lookup(name + ".zsign", 2, {op, pr.sign, sc, pinf, cc.inf}, [](const std::vector<int>& v) {
    if (v[3]) return v[1];
    if (v[4]) return v[2];
    return v[0] ? 0 : v[1];
  });
  // NaN: a NaN operand, inf x 0, or an infinite product and an infinite c
  // whose magnitudes subtract.
  const ValueId pnan = p.mlp(name + ".pnan", 2, 0,
                             {conj({}, {pr.ca.nan, pr.cb.nan}, 0, 1), conj({{pr.ca.inf, 1, 1}, {pr.zb, 1, 1}}, {}, 0, 1),
                              conj({{pr.za, 1, 1}, {pr.cb.inf, 1, 1}}, {}, 0, 1)});
  u.nan = p.lookup(name + ".nan", 2, {pnan, cc.nan, pinf, cc.inf, op}, [](const std::vector<int>& v) {
    return v[0] || v[1] || (v[2] && v[3] && v[4]) ? 1 : 0;
  });
  u.inf = p.ladder(name + ".inf", 2, {{pinf, 1, 1}, {cc.inf, 1, 1}}, 0, [](int s) { return s >= 1 ? 1 : 0; });
}

}  // namespace

Word float_fma32(Program& p, const std::string& name, const Word& a, const Word& b, const Word& c,
                 int product_layers) {
  for (const Word* x : {&a, &b, &c})
    if (x->bits != 4 || x->digits.size() != 8) fail("float_fma32 '" + name + "': operands must be words of 8 nibbles");
  if (product_layers != 1 && product_layers != 2) fail("float_fma32 '" + name + "': product_layers is 1 or 2");
  constexpr int kW = kFmaW;

  // Layers 1-2 (1-4): the product's column counts, classes and signs; c's
  // classes and sign; whether the magnitudes subtract (op).
  const Product pr = product_stage(p, name, a, b, product_layers);
  const Classes cc = classify(p, name + ".c", c);
  std::vector<Term> sc_terms, op_terms;
  for (int s = 8; s < 16; ++s) sc_terms.push_back({c.digits[7], s, 1});
  for (const Word* x : {&a, &b, &c})
    for (int s = 8; s < 16; ++s) op_terms.push_back({x->digits[7], s, 1});
  const ValueId sc = p.ladder(name + ".sc", 2, sc_terms, 0, [](int s) { return s; });
  const ValueId op = p.ladder(name + ".op", 2, op_terms, 0, [](int s) { return s & 1; });

  // The exponent fields as bits (layer 1), so that the operands' nibbles
  // need not stay in the residual until the back end reads the exponent:
  // ea' + eb' and ec' (a denormal's exponent 1) are forms over these flags.
  auto exponent_bits = [&](const Word& x, ValueId zero_exp, const char* what) {
    std::vector<Term> t{{zero_exp, 1, 1}};
    for (int i = 0; i < 8; ++i) {
      const int bit = 23 + i;
      const ValueId f = apply(p, name + what + std::to_string(i), 2, x.digits[bit / 4],
                              [bit](int s) { return (s >> (bit % 4)) & 1; });
      t.push_back({f, 1, 1 << i});
    }
    return t;
  };
  const std::vector<Term> ec = exponent_bits(c, cc.zero_exp, ".c.e");
  std::vector<Term> expo = exponent_bits(a, pr.ca.zero_exp, ".a.e");
  for (const Term& t : exponent_bits(b, pr.cb.zero_exp, ".b.e")) expo.push_back(t);
  const AlignedC al = align_c(p, name, c, pr, expo, ec);

  // Layers 5-7 (with two product layers): the product's count bits and c
  // (or its complement, read as cal xor op) reduced to two rows, modulo
  // 2^78: their sum T0 is P + C where the magnitudes add, P + ~C = P - C - 1
  // where they subtract.
  std::vector<std::vector<std::vector<Term>>> bits(kW);
  for (int k = 0; k < static_cast<int>(pr.cbits.size()); ++k)
    for (size_t t = 0; t < pr.cbits[k].size(); ++t)
      if (kFmaP + k + static_cast<int>(t) < kW) bits[kFmaP + k + t].push_back(pr.cbits[k][t]);
  // c's bits, complemented where the magnitudes subtract (op); column 77
  // holds none of c's, so just op.
  std::vector<std::pair<ValueId, ValueId>> xors(kW, {-1, -1});
  for (int k = 0; k < kW - 1; ++k) xors[k] = {al.cal[k], op};
  bits[kW - 1].push_back({{op, 1, 1}});
  // (The columns above the product's wait for its counts: made as soon as
  // c is aligned, they would only hold residual dimensions.)
  const size_t tree = p.ops().size();
  const Rows rows = two_rows(p, name, bits, xors);
  p.wait_for(tree, pr.counted);
  const std::vector<ValueId>& q = rows.q;

  // Layer 8: the carries of T0 (carry in 0), T1's lookahead and its sign.
  const std::vector<ValueId> carry = carries(p, name, rows);
  std::vector<ValueId> ap;
  const ValueId neg = lookahead_and_sign(p, name, rows, ap);

  // The frame's excess over E, max(0, ec' - 27 - E + kZ pz), in 10 bits,
  // made once the rows are (in the layer of the carries: earlier they would
  // hold residual dimensions through the product stage's widest layers);
  // Eu = Ef + 27 = expo - 127 + 27 + excess - kZ pz, round_pack32's E for a
  // significand of 78 bits (1 to 408).
  const size_t exponent = p.ops().size();
  std::vector<Term> over = ec;
  for (const Term& t : expo) over.push_back({t.v, t.slot, -t.coef});
  over.push_back({al.pz, 1, kFmaZ});
  std::vector<Term> exponent_form = expo;
  for (int i = 0; i < 10; ++i) {
    const ValueId bit = p.ladder(part(name, "excess", i), 2, over, 127 - 27,
                                 [i](int s) { return (std::max(s, 0) >> i) & 1; });
    exponent_form.push_back({bit, 1, 1 << i});
  }
  p.wait_for(exponent, q[kW - 1]);
  exponent_form.push_back({al.pz, 1, -kFmaZ});

  // Layer 9: |P +- C|, its sign and classes.
  const size_t late = p.ops().size();
  Unpacked32 u;
  u.sig.bits = 1;
  u.sig.digits = signed_magnitude(p, name, q, carry, ap, op, neg);
  fma_classes(p, name, pr, cc, sc, op, neg, u);
  // The room to normalise left, min(Eu - 1, 77).
  u.exponent = exponent_form;
  u.exponent_bias = -100;
  u.room = p.ladder(name + ".room", kW, u.exponent, u.exponent_bias - 1,
                    [](int s) { return std::clamp(s, 0, kW - 1); });
  p.wait_for(late, carry[kW - 1]);
  return round_pack32(p, name + ".pack", u);
}

}  // namespace qgpu::circuit
