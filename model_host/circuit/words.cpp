#include "model_host/circuit/words.h"

#include <algorithm>
#include <bit>
#include <map>
#include <stdexcept>

namespace qgpu::circuit {

namespace {

[[noreturn]] void fail(const std::string& msg) { throw std::invalid_argument("circuit: " + msg); }

std::string digit_name(const std::string& name, const char* part, size_t k) {
  return name + "." + part + std::to_string(k);
}

void check_same(const Word& a, const Word& b, const std::string& name) {
  if (a.bits != b.bits || a.digits.size() != b.digits.size())
    fail("'" + name + "': operands differ in digits (" + std::to_string(a.width()) + " bits of " +
         std::to_string(a.bits) + " vs " + std::to_string(b.width()) + " bits of " + std::to_string(b.bits) + ")");
  if (a.digits.empty()) fail("'" + name + "': empty word");
}

// Terms giving digit d the integer value val(slot).
void add_digit(std::vector<Term>& terms, ValueId d, int base, const std::function<int(int)>& val) {
  for (int s = 0; s < base; ++s)
    if (val(s) != 0) terms.push_back({d, s, val(s)});
}

int ident(int s) { return s; }

// A value that always holds slot 0 (costs no unit: the layer's bias pair writes it).
ValueId zero(Program& p, const std::string& name, int size) { return p.mlp(name, size, 0, {}); }

// First layer of an adder: per digit the sum digit without incoming carry (u),
// generate (g: the digit sum overflows) and propagate (q: it is base - 1).
// For subtraction b's digits count as base-1-s and the carry into digit 0 is 1;
// `flip_top` reads the top digits with their sign bit inverted (signed compare).
struct Lanes {
  std::vector<ValueId> u, g, q;
};
Lanes first_layer(Program& p, const std::string& name, const Word& a, const Word& b, bool subtract, bool flip_top,
                  bool need_u) {
  const int B = a.base();
  const size_t n = a.digits.size();
  Lanes out;
  for (size_t k = 0; k < n; ++k) {
    const bool top = flip_top && k + 1 == n;
    auto va = [&](int s) { return top ? s ^ (B / 2) : s; };
    auto vb = [&](int s) { return subtract ? B - 1 - va(s) : va(s); };
    std::vector<Term> terms;
    add_digit(terms, a.digits[k], B, va);
    add_digit(terms, b.digits[k], B, vb);
    const int cin = (k == 0 && subtract) ? 1 : 0;
    if (need_u) out.u.push_back(p.ladder(digit_name(name, "u", k), B, terms, cin, [B](int s) { return s % B; }));
    out.g.push_back(p.ladder(digit_name(name, "g", k), 2, terms, cin, [B](int s) { return s >= B ? 1 : 0; }));
    out.q.push_back(k == 0 ? -1 : p.ladder(digit_name(name, "q", k), 2, terms, 0, [B](int s) { return s == B - 1; }));
  }
  return out;
}

// Carry into digit k: some lower digit j generates and every digit between
// propagates.  The terms exclude each other, so their steps never overlap.
ValueId carry_into(Program& p, const std::string& name, const Lanes& lanes, size_t k, bool inverted) {
  std::vector<Step> steps;
  for (size_t j = 0; j < k; ++j) {
    Step s;
    s.form.push_back({lanes.g[j], 1, 1});
    for (size_t i = j + 1; i < k; ++i) s.form.push_back({lanes.q[i], 1, 1});
    s.bias = 1 - static_cast<int>(s.form.size());
    s.from = inverted ? 1 : 0;
    s.to = inverted ? 0 : 1;
    steps.push_back(std::move(s));
  }
  return p.mlp(digit_name(name, inverted ? "nc" : "c", k), 2, inverted ? 1 : 0, std::move(steps));
}

}  // namespace

std::vector<int> digits_of(uint64_t x, int width, int bits) {
  std::vector<int> d(width / bits);
  for (size_t i = 0; i < d.size(); ++i) d[i] = static_cast<int>((x >> (i * bits)) & ((1u << bits) - 1));
  return d;
}

uint64_t value_of(const std::vector<int>& digits, int bits) {
  uint64_t x = 0;
  for (size_t i = digits.size(); i-- > 0;) x = (x << bits) | static_cast<uint64_t>(digits[i]);
  return x;
}

std::vector<AddrBit> address_bits(const Word& w, int first, int count) {
  if (first < 0 || count < 0 || first + count > w.width())
    fail("address bits [" + std::to_string(first) + ", " + std::to_string(first + count) + ") outside a word of " +
         std::to_string(w.width()) + " bits");
  std::vector<AddrBit> bits;
  for (int i = first; i < first + count; ++i) bits.push_back({w.digits[i / w.bits], i % w.bits});
  return bits;
}

ValueId apply(Program& p, const std::string& name, int size, ValueId in, const std::function<int(int)>& f) {
  const int n = p.info(in).size;
  int changes = 0;
  std::map<int, int> count;
  for (int s = 0; s < n; ++s) {
    if (s > 0 && f(s) != f(s - 1)) ++changes;
    ++count[f(s)];
  }
  int most = 0;
  for (auto [r, c] : count) most = std::max(most, c);
  if (changes <= n - most) {
    std::vector<Term> terms;
    add_digit(terms, in, n, ident);
    return p.ladder(name, size, terms, 0, f);
  }
  return p.lookup(name, size, {in}, [&](const std::vector<int>& v) { return f(v[0]); });
}

Word regroup(Program& p, const std::string& name, const Word& w, int bits) {
  if (bits < 1 || bits > 8 || !std::has_single_bit(static_cast<unsigned>(bits)))
    fail("regroup '" + name + "': digits of " + std::to_string(bits) + " bits");
  if (w.width() % bits) fail("regroup '" + name + "': width not a multiple of the digit");
  if (bits == w.bits) return w;
  Word out{{}, bits};
  const int mask = (1 << bits) - 1;
  if (bits < w.bits) {
    for (size_t i = 0; i < w.digits.size(); ++i)
      for (int j = 0; j < w.bits / bits; ++j)
        out.digits.push_back(apply(p, digit_name(name, "d", out.digits.size()), 1 << bits, w.digits[i],
                                   [=](int s) { return (s >> (j * bits)) & mask; }));
  } else {
    const int r = bits / w.bits;
    for (size_t k = 0; k * r < w.digits.size(); ++k) {
      std::vector<Term> terms;
      for (int m = 0; m < r; ++m)
        add_digit(terms, w.digits[k * r + m], w.base(), [&](int s) { return s << (m * w.bits); });
      out.digits.push_back(p.ladder(digit_name(name, "d", k), 1 << bits, terms, 0, ident));
    }
  }
  return out;
}

Sum add(Program& p, const std::string& name, const Word& a, const Word& b, bool subtract) {
  check_same(a, b, name);
  const int B = a.base();
  const size_t n = a.digits.size();
  Lanes lanes = first_layer(p, name, a, b, subtract, false, true);
  Sum out{{{}, a.bits}, -1};
  out.value.digits.push_back(lanes.u[0]);
  for (size_t k = 1; k < n; ++k) {
    ValueId c = carry_into(p, name, lanes, k, false);
    std::vector<Term> terms;
    add_digit(terms, lanes.u[k], B, ident);
    terms.push_back({c, 1, 1});
    out.value.digits.push_back(p.ladder(digit_name(name, "r", k), B, terms, 0, [B](int s) { return s % B; }));
  }
  out.carry = carry_into(p, name, lanes, n, false);
  return out;
}

ValueId less_than(Program& p, const std::string& name, const Word& a, const Word& b, bool is_signed) {
  check_same(a, b, name);
  // a - b borrows exactly when a < b: the inverted carry out of a + ~b + 1.
  Lanes lanes = first_layer(p, name, a, b, true, is_signed, false);
  return carry_into(p, name, lanes, a.digits.size(), true);
}

ValueId equal(Program& p, const std::string& name, const Word& a, const Word& b) {
  check_same(a, b, name);
  std::vector<Term> all;
  for (size_t k = 0; k < a.digits.size(); ++k) {
    std::vector<Term> diff;
    add_digit(diff, a.digits[k], a.base(), ident);
    add_digit(diff, b.digits[k], b.base(), [](int s) { return -s; });
    all.push_back({p.ladder(digit_name(name, "e", k), 2, diff, 0, [](int s) { return s == 0; }), 1, 1});
  }
  const int n = static_cast<int>(a.digits.size());
  return p.ladder(name, 2, all, 0, [n](int s) { return s == n; });
}

Word select(Program& p, const std::string& name, ValueId c, const Word& a, const Word& b) {
  check_same(a, b, name);
  if (p.info(c).size != 2) fail("select '" + name + "': the condition is not a flag");
  Word out{{}, a.bits};
  for (size_t k = 0; k < a.digits.size(); ++k)
    out.digits.push_back(p.select(digit_name(name, "d", k), c, {b.digits[k], a.digits[k]}));
  return out;
}

Word bitwise(Program& p, const std::string& name, Bitwise op, const Word& a, const Word& b) {
  check_same(a, b, name);
  Word out{{}, a.bits};
  for (size_t k = 0; k < a.digits.size(); ++k)
    out.digits.push_back(p.lookup(digit_name(name, "d", k), a.base(), {a.digits[k], b.digits[k]},
                                  [op](const std::vector<int>& v) {
                                    switch (op) {
                                      case Bitwise::And: return v[0] & v[1];
                                      case Bitwise::Or: return v[0] | v[1];
                                      case Bitwise::Xor: return v[0] ^ v[1];
                                    }
                                    return 0;
                                  }));
  return out;
}

namespace {
// Output digits for a count in [0, max].
int count_digits(int max, int bits) {
  int n = 1;
  while ((1 << (n * bits)) <= max) ++n;
  return n;
}
}  // namespace

Word popc(Program& p, const std::string& name, const Word& a, int out_bits) {
  std::vector<Term> terms;
  for (ValueId d : a.digits) add_digit(terms, d, a.base(), [](int s) { return std::popcount(static_cast<unsigned>(s)); });
  Word out{{}, out_bits};
  const int mask = (1 << out_bits) - 1;
  for (int j = 0; j < count_digits(a.width(), out_bits); ++j)
    out.digits.push_back(p.ladder(digit_name(name, "d", j), 1 << out_bits, terms, 0,
                                  [=](int s) { return (s >> (j * out_bits)) & mask; }));
  return out;
}

Word clz(Program& p, const std::string& name, const Word& a, int out_bits) {
  // Cases: digit k is the highest non-zero digit and its top set bit is t;
  // the digits above it are zero.  At most one case holds; none for a == 0.
  struct Case {
    std::vector<Term> form;
    int bias;
    int result;
  };
  std::vector<Case> cases;
  const int n = static_cast<int>(a.digits.size());
  for (int k = n - 1; k >= 0; --k) {
    for (int t = 0; t < a.bits; ++t) {
      Case c;
      for (int m = k + 1; m < n; ++m) c.form.push_back({a.digits[m], 0, 1});
      for (int s = 1 << t; s < (2 << t); ++s) c.form.push_back({a.digits[k], s, 1});   // top bit t
      c.bias = 1 - (n - k);   // n - 1 - k zero digits and digit k in range
      c.result = (n - 1 - k) * a.bits + (a.bits - 1 - t);
      cases.push_back(std::move(c));
    }
  }
  Word out{{}, out_bits};
  const int mask = (1 << out_bits) - 1;
  for (int j = 0; j < count_digits(a.width(), out_bits); ++j) {
    const int base = (a.width() >> (j * out_bits)) & mask;
    std::vector<Step> steps;
    for (const Case& c : cases) {
      const int d = (c.result >> (j * out_bits)) & mask;
      if (d != base) steps.push_back({c.form, c.bias, base, d});
    }
    out.digits.push_back(p.mlp(digit_name(name, "d", j), 1 << out_bits, base, std::move(steps)));
  }
  return out;
}

Word brev(Program& p, const std::string& name, const Word& a) {
  Word out{{a.digits.rbegin(), a.digits.rend()}, a.bits};
  if (a.bits == 1) return out;
  const int bits = a.bits;
  for (size_t k = 0; k < out.digits.size(); ++k)
    out.digits[k] = apply(p, digit_name(name, "d", k), a.base(), out.digits[k], [bits](int s) {
      int r = 0;
      for (int i = 0; i < bits; ++i) r |= ((s >> i) & 1) << (bits - 1 - i);
      return r;
    });
  return out;
}

Word shift(Program& p, const std::string& name, const Word& a, ValueId amount, bool left) {
  if (a.bits != 1) fail("shift '" + name + "': needs a word of 1-bit digits");
  const int n = a.width();
  if (p.info(amount).size > n) fail("shift '" + name + "': amount has more slots than the width");
  Word out{{}, 1};
  for (int i = 0; i < n; ++i) {
    std::vector<Step> steps;
    for (int sh = 0; sh < p.info(amount).size; ++sh) {
      const int src = left ? i - sh : i + sh;
      if (src < 0 || src >= n) continue;
      steps.push_back({{{amount, sh, 1}, {a.digits[src], 1, 1}}, -1, 0, 1});
    }
    out.digits.push_back(p.mlp(digit_name(name, "d", i), 2, 0, std::move(steps)));
  }
  return out;
}

ValueId nibble_product(Program& p, const std::string& name, ValueId x, ValueId y, bool high) {
  return p.lookup(name, 16, {x, y}, [high](const std::vector<int>& v) {
    return high ? (v[0] * v[1]) >> 4 : (v[0] * v[1]) & 15;
  });
}

Word mul_lo(Program& p, const std::string& name, const Word& a, const Word& b) {
  check_same(a, b, name);
  if (a.bits != 4) fail("mul_lo '" + name + "': needs nibble words");
  const int n = static_cast<int>(a.digits.size());
  // Column k collects the low nibbles of a_i * b_j with i + j = k and the high
  // nibbles of those with i + j = k - 1.
  std::vector<std::vector<Term>> column(n);
  for (int i = 0; i < n; ++i) {
    for (int j = 0; i + j < n; ++j) {
      const std::string pair = name + ".p" + std::to_string(i) + "_" + std::to_string(j);
      add_digit(column[i + j], nibble_product(p, pair + ".lo", a.digits[i], b.digits[j], false), 16, ident);
      if (i + j + 1 < n)
        add_digit(column[i + j + 1], nibble_product(p, pair + ".hi", a.digits[i], b.digits[j], true), 16, ident);
    }
  }
  // Column sums (at most 15 * (2k + 1)) split into a low word and a high word
  // one digit up; their sum is the product.
  Word low{{}, 4}, high{{}, 4};
  high.digits.push_back(zero(p, name + ".h0", 16));
  for (int k = 0; k < n; ++k) {
    low.digits.push_back(p.ladder(digit_name(name, "l", k), 16, column[k], 0, [](int s) { return s & 15; }));
    if (k + 1 < n)
      high.digits.push_back(p.ladder(digit_name(name, "h", k + 1), 16, column[k], 0, [](int s) { return s >> 4; }));
  }
  return add(p, name + ".sum", low, high).value;
}

// Columns of mul_hi's product computed side by side: three columns' products
// (at most 45 values of 16 slots) occupy the residual at a time.
constexpr int kColumnsPerStage = 3;

Word mul_hi(Program& p, const std::string& name, const Word& a, const Word& b, bool is_signed) {
  check_same(a, b, name);
  if (a.bits != 4) fail("mul_hi '" + name + "': needs nibble words");
  const int n = static_cast<int>(a.digits.size());
  if (n > 8) fail("mul_hi '" + name + "': at most 8 digits (a column sum must stay below 256)");
  // Column k of the 2n-digit product: the low nibbles of a_i * b_j with
  // i + j = k and the high nibbles of those with i + j = k - 1; at most
  // 2n - 1 terms of at most 15.
  Word low{{}, 4}, high{{}, 4};
  high.digits.push_back(zero(p, name + ".h0", 16));
  ValueId last = -1;   // the previous stage's last digit, which this stage waits for
  size_t first_op = p.ops().size();
  for (int k = 0; k < 2 * n; ++k) {
    std::vector<Term> column;
    for (int i = 0; i < n; ++i) {
      const std::string pair = name + ".p" + std::to_string(i) + "_";
      const int j = k - i, jh = k - 1 - i;
      if (j >= 0 && j < n)
        add_digit(column, nibble_product(p, pair + std::to_string(j) + ".lo", a.digits[i], b.digits[j], false), 16,
                  ident);
      if (jh >= 0 && jh < n)
        add_digit(column, nibble_product(p, pair + std::to_string(jh) + ".hi", a.digits[i], b.digits[jh], true), 16,
                  ident);
    }
    low.digits.push_back(p.ladder(digit_name(name, "l", k), 16, column, 0, [](int s) { return s & 15; }));
    if (k + 1 < 2 * n)
      high.digits.push_back(p.ladder(digit_name(name, "h", k + 1), 16, column, 0, [](int s) { return s >> 4; }));
    if (k % kColumnsPerStage == kColumnsPerStage - 1 || k == 2 * n - 1) {  // a stage ends
      if (last >= 0) p.wait_for(first_op, last);
      last = low.digits.back();
      first_op = p.ops().size();
    }
  }
  const Word product = add(p, name + ".sum", low, high).value;
  Word hi{std::vector<ValueId>(product.digits.begin() + n, product.digits.end()), 4};
  return is_signed ? signed_high(p, name, hi, a, b) : hi;
}

Word signed_high(Program& p, const std::string& name, const Word& unsigned_high, const Word& a, const Word& b) {
  check_same(a, b, name);
  check_same(unsigned_high, a, name);
  const int n = static_cast<int>(a.digits.size());
  Word hi = unsigned_high;
  auto negative = [&](const Word& w, const std::string& what) {
    return p.lookup(name + "." + what + "_neg", 2, {w.digits.back()},
                    [](const std::vector<int>& v) { return v[0] >= 8 ? 1 : 0; });
  };
  Word zeros{{}, 4};
  for (int i = 0; i < n; ++i) zeros.digits.push_back(zero(p, name + ".z" + std::to_string(i), 16));
  const Word fix_a = select(p, name + ".fix_a", negative(a, "a"), b, zeros);
  const Word fix_b = select(p, name + ".fix_b", negative(b, "b"), a, zeros);
  hi = add(p, name + ".sub_a", hi, fix_a, true).value;
  return add(p, name + ".sub_b", hi, fix_b, true).value;
}

}  // namespace qgpu::circuit
