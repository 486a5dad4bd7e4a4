// f32 add, subtract, multiply and fused multiply-add (float_words.h) compared bit for bit with the PTX
// reference's f32 arithmetic (model_host/ptx/float_ref.h): the edge classes
// crossed with each other and random pairs, through the evaluator, and a
// smaller crossing through the compiled layers in the Qwen3.5 runtime.
//
// The evaluator test crosses 84 edge values and runs 8,000 random pairs of
// each kind by default (a few seconds): uniform bit patterns, and a stream
// of words with close exponents (a quarter of its pairs two whole such
// words, the rest mixtures of their bytes).  QGPU_FLOAT_PAIRS=N crosses all
// 458 edge values and runs N pairs of each kind; the full count (about 45
// minutes on a shared 2-core machine):
//   QGPU_FLOAT_PAIRS=10000000 build/bin/circuit_tests --gtest_filter='CircuitFloat.Add*Evaluated'
// The multiply's test crosses 94 edge values by default (the add's specials,
// halfway products, powers of two whose products cross the ends of the
// normal and denormal ranges and overflow) and runs 6,000 random pairs of
// each of three kinds: uniform, close exponents, and exponent sums at the
// ends of the range (underflow and overflow, one word in 8 a denormal); the
// uniform and range-end pairs also through the circuit with two product
// layers (about 10 s in all).  QGPU_FLOAT_PAIRS=N crosses 760 edge values and
// runs N pairs of each kind; the full count:
//   QGPU_FLOAT_PAIRS=10000000 build/bin/circuit_tests --gtest_filter='CircuitFloat.Mul*Evaluated'
// The fused multiply-add's test crosses every ordered triple of 20 edge
// values (8,000 triples and the words between) and runs 250 random triples
// of each of four kinds (uniform; c close to -(a * b), cancelling most or
// all of the significand; c's exponent within -80..+30 of the product's,
// every alignment; products at the ends of the range with small c), two of
// them also through the circuit with two product layers (about 15 s).
// QGPU_FLOAT_PAIRS=N crosses 46 edge values and runs N / 12 triples of each
// kind:
//   QGPU_FLOAT_PAIRS=10000000 build/bin/circuit_tests --gtest_filter='CircuitFloat.Fma*Evaluated'
#include "bench.h"

#include "model_host/circuit/float_words.h"
#include "model_host/ptx/float_ref.h"

#include <cfenv>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <random>
#include <set>
#include <sstream>

namespace circuit_test {
namespace {

namespace fref = qgpu::ptx::fref;

// QGPU_FLOAT_PAIRS, or 0 when not set.
size_t float_pairs() {
  const char* s = std::getenv("QGPU_FLOAT_PAIRS");
  return s && *s ? static_cast<size_t>(std::atoll(s)) : 0;
}

// Two f32 operands per token: a = the bytes of this token and the 3 before
// (this token's byte least significant), c = the 4 bytes before those (b, for
// the fused multiply-add, whose c is the 4 bytes before b).  A stream of
// words w0, w1, ... (bytes most significant first) gives the pair (w_k,
// w_{k-1}) at the last byte of w_k (the triple (w_k, w_{k-1}, w_{k-2})), and
// mixtures of neighbouring words at the tokens between.
enum class Kind { AddSub, Mul, Fma };
struct FloatBench {
  ByteBench b;
  Word a, c, c2, sum, diff, prod, fused;
  explicit FloatBench(Kind kind = Kind::AddSub, int product_layers = 1) {
    a = b.window(4);
    c = history(a, "history");
    if (kind == Kind::Mul) {
      prod = float_mul32(b.p, "fmul", a, c, product_layers);
    } else if (kind == Kind::Fma) {
      c2 = history(c, "history2");
      fused = float_fma32(b.p, "ffma", a, c, c2, product_layers);
    } else {
      sum = float_add32(b.p, "fadd", a, c);
      diff = float_add32(b.p, "fsub", a, c, true);
    }
  }
  // The word w of 4 tokens before.
  Word history(const Word& w, const char* name) {
    ValueId back = b.p.lookup(std::string(name) + ".pos-4", 8, {b.pos},
                              [](const std::vector<int>& v) { return (v[0] + 4) % 8; });
    MemoryOp hist;
    hist.name = name;
    hist.rows = 8;
    hist.write_addr = Operand::value(b.pos);
    hist.write_enable = Operand::fixed(1);
    hist.read_addr = Operand::value(back);
    for (ValueId d : w.digits) hist.parts.push_back({d, 0});
    return {b.p.memory(hist), 4};
  }
};

std::vector<int> bytes_of(const std::vector<uint32_t>& words) {
  std::vector<int> bytes;
  for (uint32_t w : words)
    for (int k = 3; k >= 0; --k) bytes.push_back(static_cast<int>((w >> (8 * k)) & 255));
  return bytes;
}

uint32_t word_at(const std::vector<int>& bytes, size_t t) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = v << 8 | static_cast<uint32_t>(bytes[t - i]);
  return v;
}

// Every ordered pair of `values` as consecutive words (a de Bruijn sequence
// of order 2 made linear, by Hierholzer's walk of the complete digraph).
std::vector<uint32_t> all_pairs(const std::vector<uint32_t>& values) {
  const int k = static_cast<int>(values.size());
  std::vector<int> next(k, k - 1), path, stack{0};
  while (!stack.empty()) {
    const int v = stack.back();
    if (next[v] >= 0) {
      stack.push_back(next[v]--);
    } else {
      path.push_back(v);
      stack.pop_back();
    }
  }
  std::vector<uint32_t> words;
  for (auto it = path.rbegin(); it != path.rend(); ++it) words.push_back(values[*it]);
  return words;
}

// The edge classes, both signs: zeros, denormals, normals at the ends of
// the range, infinities, NaNs with payloads (quiet and signalling), and
// values 2^-k below 1.0 (k = 0..40) with fractions that make exact halfway
// and sticky cases against 1.0 and its neighbours.
std::vector<uint32_t> edge_values(bool small) {
  std::vector<uint32_t> v = {0x00000000, 0x00000001, 0x00000002, 0x00000003, 0x00400000, 0x007FFFFF,
                             0x00800000, 0x00800001, 0x00FFFFFF, 0x01000000, 0x3F800000, 0x3F800001,
                             0x3FFFFFFF, 0x3FC00000, 0x4B000001, 0x7F000000, 0x7F7FFFFE, 0x7F7FFFFF,
                             0x7F800000, 0x7F800001, 0x7FC00000, 0x7FFFFFFF, 0x7FC12345, 0x7FA00001};
  const std::vector<uint32_t> fractions = small ? std::vector<uint32_t>{0, 0x400001}
                                                : std::vector<uint32_t>{0, 1, 0x400000, 0x400001, 0x7FFFFF};
  for (int k = small ? 20 : 0; k <= (small ? 28 : 40); ++k)
    for (uint32_t f : fractions) v.push_back((static_cast<uint32_t>(127 - k) << 23) | f);
  const size_t n = v.size();
  for (size_t i = 0; i < n; ++i) v.push_back(v[i] ^ 0x80000000u);
  return v;
}

// The multiply's extra edge values, both signs: powers of two and
// neighbours whose products cross 2^-126, 2^-149, 2^-150 and 2^128, and
// significands whose products are halfway or just off it.
std::vector<uint32_t> mul_edge_values(bool small) {
  std::vector<uint32_t> v;
  if (small) {   // the specials of edge_values, without its values below 1.0
    for (uint32_t x : edge_values(true))
      if ((x & 0x7FFFFFFFu) >> 23 < 99 || (x & 0x7FFFFFFFu) >> 23 > 107) v.push_back(x);
  } else {
    v = edge_values(false);
  }
  std::vector<uint32_t> m = {0x3F800800, 0x3F800801, 0x3FB504F3, 0x00000100, 0x00400001};
  if (!small) m.insert(m.end(), {0x3F801000, 0x3FB504F4, 0x3F7FFFFF, 0x3FFFFFFE, 0x00001000, 0x00600000});
  const std::vector<int> exps = small ? std::vector<int>{1, 24, 25, 102, 103, 127, 153, 229, 253}
                                      : std::vector<int>{1, 2, 3, 22, 23, 24, 25, 26, 27, 50, 100, 101, 102, 103, 104, 105,
                                                         126, 127, 128, 150, 151, 152, 153, 154, 200, 226, 227, 228, 229,
                                                         230, 250, 251, 252, 253, 254};
  const std::vector<uint32_t> fractions = small ? std::vector<uint32_t>{0, 0x7FFFFF}
                                                : std::vector<uint32_t>{0, 0x400000, 0x7FFFFF, 0x3504F3};
  for (int e : exps)
    for (uint32_t f : fractions) m.push_back(static_cast<uint32_t>(e) << 23 | f);
  for (uint32_t x : m) {
    v.push_back(x);
    v.push_back(x ^ 0x80000000u);
  }
  return v;
}

// Random words: uniform bit patterns, or with exponents within 3 of one
// base exponent (cancellation and carries), which changes every 64 words.
std::vector<uint32_t> random_words(size_t n, bool close, unsigned seed) {
  std::mt19937 rng(seed);
  std::vector<uint32_t> w;
  uint32_t base = 0;
  for (size_t i = 0; i < n; ++i) {
    uint32_t x = rng();
    if (close) {
      if (i % 64 == 0) base = 1 + rng() % 253;
      const int e = static_cast<int>(base) + static_cast<int>(rng() % 7) - 3;
      x = (x & 0x807FFFFFu) | (static_cast<uint32_t>(std::clamp(e, 0, 255)) << 23);
    }
    w.push_back(x);
  }
  return w;
}

// Random words for the multiply whose neighbours' exponents sum to the ends
// of the range: the pair's product exponent near or below the least normal
// one (sums 90..130) or near overflow (sums 375..385), a base and sum
// changing every 64 words; one word in 8 a denormal.
std::vector<uint32_t> boundary_words(size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::vector<uint32_t> w;
  int sum = 0, base = 0;
  for (size_t i = 0; i < n; ++i) {
    if (i % 64 == 0) {
      sum = rng() % 2 ? 90 + static_cast<int>(rng() % 41) : 375 + static_cast<int>(rng() % 11);
      const int lo = std::max(0, sum - 254), hi = std::min(254, sum);
      base = lo + static_cast<int>(rng() % static_cast<uint32_t>(hi - lo + 1));
    }
    int e = (i % 2 ? sum - base : base) + static_cast<int>(rng() % 3) - 1;
    if (rng() % 8 == 0) e = 0;
    w.push_back((rng() & 0x807FFFFFu) | (static_cast<uint32_t>(std::clamp(e, 0, 254)) << 23));
  }
  return w;
}

struct Tally {
  int64_t compared = 0, wrong = 0;
};

// Runs the bytes through the evaluator: every token from the eighth on is a
// pair, compared with the reference's add and sub.
void evaluate(FloatBench& fb, const std::vector<int>& bytes, Tally& add, Tally& sub, const char* what) {
  Evaluator ev(fb.b.p);
  for (size_t t = 0; t < bytes.size(); ++t) {
    const auto& v = ev.step(ByteBench::token(bytes[t], static_cast<int>(t)));
    if (t < 7) continue;
    const uint32_t x = word_at(bytes, t), y = word_at(bytes, t - 4);
    auto check = [&](const Word& w, uint32_t want, Tally& tl, const char* op) {
      std::vector<int> d;
      for (ValueId id : w.digits) d.push_back(v[id]);
      const uint32_t got = static_cast<uint32_t>(value_of(d, 4));
      ++tl.compared;
      if (got != want && tl.wrong++ < 5)
        ADD_FAILURE() << what << ", token " << t << ": " << op << "(" << std::hex << x << ", " << y << ") = " << got << ", reference "
                      << want << std::dec;
    };
    check(fb.sum, fref::add_rn(x, y), add, "add");
    check(fb.diff, fref::sub_rn(x, y), sub, "sub");
  }
}

TEST(CircuitFloat, AddAndSubEdgeClassesAndRandomPairsEvaluated) {
  ASSERT_EQ(std::fegetround(), FE_TONEAREST);   // add_rn and sub_rn round as the host does
  FloatBench fb;
  Tally add, sub;
  const size_t full = float_pairs(), n = full ? full : 8'000;
  const std::vector<uint32_t> edges = edge_values(full == 0);
  evaluate(fb, bytes_of(all_pairs(edges)), add, sub, "edge classes");
  const int64_t edge_pairs = add.compared;
  // Uniform: every token is a pair of random words.
  evaluate(fb, bytes_of(random_words(n / 4 + 2, false, 21)), add, sub, "uniform");
  // Close exponents: the pairs at word boundaries (a quarter of the tokens)
  // are two such words; the tokens between mix their bytes.
  evaluate(fb, bytes_of(random_words(n / 4 + 2, true, 22)), add, sub, "close exponents");
  std::cout << edges.size() << " edge values, " << edge_pairs << " pairs in their crossing; " << add.compared
            << " pairs in all, " << add.wrong << " add and " << sub.wrong << " sub mismatches\n";
  EXPECT_GE(edge_pairs, static_cast<int64_t>(edges.size() * edges.size()));
  EXPECT_EQ(add.wrong, 0);
  EXPECT_EQ(sub.wrong, 0);
}

// Runs the bytes through the evaluator and compares each product with
// mul_rn, or, on the fused multiply-add's bench, each result with fma_rn
// (the triple's third word is the one 8 bytes back).
void evaluate_product(FloatBench& fb, const std::vector<int>& bytes, Tally& tally, const char* what) {
  const bool fused = !fb.fused.digits.empty();
  const Word& out = fused ? fb.fused : fb.prod;
  Evaluator ev(fb.b.p);
  for (size_t t = 0; t < bytes.size(); ++t) {
    const auto& v = ev.step(ByteBench::token(bytes[t], static_cast<int>(t)));
    if (t < (fused ? 11u : 7u)) continue;
    const uint32_t x = word_at(bytes, t), y = word_at(bytes, t - 4), z = fused ? word_at(bytes, t - 8) : 0;
    std::vector<int> d;
    for (ValueId id : out.digits) d.push_back(v[id]);
    const uint32_t got = static_cast<uint32_t>(value_of(d, 4));
    const uint32_t want = fused ? fref::fma_rn(x, y, z) : fref::mul_rn(x, y);
    ++tally.compared;
    if (got != want && tally.wrong++ < 5) {
      std::ostringstream call;
      call << std::hex << (fused ? "fma(" : "mul(") << x << ", " << y;
      if (fused) call << ", " << z;
      ADD_FAILURE() << what << ", token " << t << ": " << call.str() << ") = " << std::hex << got << ", reference "
                    << want << std::dec;
    }
  }
}

TEST(CircuitFloat, MulEdgeClassesAndRandomPairsEvaluated) {
  ASSERT_EQ(std::fegetround(), FE_TONEAREST);   // mul_rn rounds as the host does
  FloatBench fb(Kind::Mul);
  Tally mul;
  const size_t full = float_pairs(), n = full ? full : 6'000;
  const std::vector<uint32_t> edges = mul_edge_values(full == 0);
  evaluate_product(fb, bytes_of(all_pairs(edges)), mul, "edge classes");
  const int64_t edge_pairs = mul.compared;
  evaluate_product(fb, bytes_of(random_words(n / 4 + 2, false, 31)), mul, "uniform");
  evaluate_product(fb, bytes_of(random_words(n / 4 + 2, true, 32)), mul, "close exponents");
  evaluate_product(fb, bytes_of(boundary_words(n / 4 + 2, 33)), mul, "range ends");
  // The same circuit with its products made over two layers.
  FloatBench split(Kind::Mul, 2);
  evaluate_product(split, bytes_of(random_words(n / 4 + 2, false, 35)), mul, "two product layers, uniform");
  evaluate_product(split, bytes_of(boundary_words(n / 4 + 2, 36)), mul, "two product layers, range ends");
  std::cout << edges.size() << " edge values, " << edge_pairs << " pairs in their crossing; " << mul.compared
            << " pairs in all, " << mul.wrong << " mul mismatches\n";
  EXPECT_GE(edge_pairs, static_cast<int64_t>(edges.size() * edges.size()));
  EXPECT_EQ(mul.wrong, 0);
}

// Every ordered triple of `values` as consecutive words: a de Bruijn
// sequence of order 3 (the concatenated Lyndon words whose length divides
// 3, in order), made linear by repeating its first two words.
std::vector<uint32_t> all_triples(const std::vector<uint32_t>& values) {
  const int k = static_cast<int>(values.size());
  std::vector<int> a(4, 0), seq;
  std::function<void(int, int)> db = [&](int t, int per) {
    if (t > 3) {
      if (3 % per == 0)
        for (int i = 1; i <= per; ++i) seq.push_back(a[i]);
      return;
    }
    a[t] = a[t - per];
    db(t + 1, per);
    for (int j = a[t - per] + 1; j < k; ++j) {
      a[t] = j;
      db(t + 1, t);
    }
  };
  db(1, 1);
  seq.push_back(seq[0]);
  seq.push_back(seq[1]);
  std::vector<uint32_t> words;
  for (int i : seq) words.push_back(values[i]);
  return words;
}

// Random triples for the fused multiply-add, as words c, b, a (the triple
// read at a's last byte):
//   0: uniform bit patterns;
//   1: c close to -(a * b) (the rounded product with its low bits changed, of
//      either sign): cancellation of most or all of the significand;
//   2: c's exponent within -80..+30 of the product's: every alignment shift,
//      c dominating, or c only sticky;
//   3: products at the ends of the range (underflow, overflow, one operand
//      in 8 a denormal) with small or denormal c.
std::vector<uint32_t> fma_words(size_t triples, int kind, unsigned seed) {
  std::mt19937 rng(seed);
  auto normal = [&](int lo, int hi) {
    return (rng() & 0x807FFFFFu) | static_cast<uint32_t>(lo + static_cast<int>(rng() % (hi - lo + 1))) << 23;
  };
  std::vector<uint32_t> w;
  for (size_t i = 0; i < triples; ++i) {
    uint32_t a = rng(), b = rng(), c = rng();
    if (kind == 1) {
      a = normal(64, 190);
      b = normal(64, 190);
      c = fref::mul_rn(a, b) ^ 0x80000000u;
      c ^= rng() & ((1u << (rng() % 12)) - 1);
      if (rng() % 4 == 0) c ^= 0x80000000u;
    } else if (kind == 2) {
      a = normal(40, 210);
      b = normal(40, 210);
      const int e = static_cast<int>((a >> 23) & 255) + static_cast<int>((b >> 23) & 255) - 127 - 80 +
                    static_cast<int>(rng() % 111);
      c = (rng() & 0x807FFFFFu) | static_cast<uint32_t>(std::clamp(e, 0, 254)) << 23;
    } else if (kind == 3) {
      const int sum = rng() % 2 ? 90 + static_cast<int>(rng() % 41) : 375 + static_cast<int>(rng() % 11);
      const int ea = std::max(0, sum - 254) + static_cast<int>(rng() % (std::min(254, sum) - std::max(0, sum - 254) + 1));
      a = (rng() & 0x807FFFFFu) | static_cast<uint32_t>(rng() % 8 ? ea : 0) << 23;
      b = (rng() & 0x807FFFFFu) | static_cast<uint32_t>(std::clamp(sum - ea + static_cast<int>(rng() % 3) - 1, 0, 254)) << 23;
      c = (rng() & 0x807FFFFFu) | static_cast<uint32_t>(rng() % 2 ? 0 : rng() % 40) << 23;
    }
    w.insert(w.end(), {c, b, a});
  }
  return w;
}


// The fused multiply-add's edge values: zeros, the least and greatest
// denormal and normal, 1.0 and its neighbours, a value whose square is
// halfway, a power of two near underflow, infinities and NaNs, both signs.
std::vector<uint32_t> fma_edge_values(bool small) {
  std::vector<uint32_t> v = {0x00000000, 0x00000001, 0x007FFFFF, 0x00800000, 0x3F800000, 0x3F800001,
                             0x3F7FFFFF, 0x7F7FFFFF, 0x7F800000, 0x7FC00000};
  if (!small)
    v.insert(v.end(), {0x00000003, 0x00400000, 0x00800001, 0x3FB504F3, 0x3F800800, 0x1F800000, 0x20000000,
                       0x33800000, 0x34000000, 0x4B800000, 0x5F800000, 0x7F000000, 0x7FA00001});
  const size_t n = v.size();
  for (size_t i = 0; i < n; ++i) v.push_back(v[i] ^ 0x80000000u);
  return v;
}

TEST(CircuitFloat, FmaEdgeClassesAndRandomTriplesEvaluated) {
  ASSERT_EQ(std::fegetround(), FE_TONEAREST);   // fma_rn rounds as the host does
  FloatBench fb(Kind::Fma);
  Tally fma;
  const size_t full = float_pairs(), n = full ? full : 3'000;
  const std::vector<uint32_t> edges = fma_edge_values(full == 0);
  evaluate_product(fb, bytes_of(all_triples(edges)), fma, "edge classes");
  const int64_t edge_triples = fma.compared;
  const char* kinds[] = {"uniform", "cancellation", "alignment", "range ends"};
  for (int kind = 0; kind < 4; ++kind)
    evaluate_product(fb, bytes_of(fma_words(n / 12 + 1, kind, 41 + kind)), fma, kinds[kind]);
  FloatBench split(Kind::Fma, 2);
  evaluate_product(split, bytes_of(fma_words(n / 12 + 1, 1, 47)), fma, "two product layers, cancellation");
  evaluate_product(split, bytes_of(fma_words(n / 12 + 1, 3, 48)), fma, "two product layers, range ends");
  std::cout << edges.size() << " edge values, " << edge_triples << " triples in their crossing; " << fma.compared
            << " triples in all, " << fma.wrong << " fma mismatches\n";
  EXPECT_GE(edge_triples, static_cast<int64_t>(edges.size() * edges.size() * edges.size()));
  EXPECT_EQ(fma.wrong, 0);
}

// The compiled layers in the runtime (fp32, sparse executor): every output
// digit of `words` (the bench's kept output words, in order) equals the
// evaluator's, and `right(bytes, t, outputs)` holds at every token t from
// the 12th on, the outputs' digits as the evaluator gives them (8 nibbles a
// word).
template <class Right>
void through_the_model(FloatBench& fb, const std::vector<const Word*>& outputs, const char* what,
                       std::vector<uint32_t> words, Right right) {
  std::vector<ValueId> observed;
  for (const Word* w : outputs)
    for (ValueId d : w->digits) {
      fb.b.p.keep(d);
      observed.push_back(d);
    }
  Compiled compiled = compile(fb.b.p);
  std::cout << what << " (and the operand bench)\n" << compiled.report();
  qgpu::qwen::Model model(compiled.take_checkpoint(), qgpu::qwen::Exec::Sparse);
  const std::vector<int> bytes = bytes_of(words);
  std::vector<int> tokens;
  for (size_t t = 0; t < bytes.size(); ++t) tokens.push_back(ByteBench::token(bytes[t], static_cast<int>(t)));
  Comparison r = compare(fb.b.p, compiled, model, tokens, observed);
  for (size_t k = 0; k < observed.size(); ++k) {
    EXPECT_EQ(r.mismatched[k], 0) << "digit " << k << ", first at token " << r.first_mismatch[k];
    EXPECT_GT(r.compared[k], static_cast<int64_t>(bytes.size()) - 12);
  }
  int64_t wrong = 0, compared = 0;
  for (size_t t = 11; t < bytes.size(); ++t) {
    std::vector<uint32_t> out;
    for (size_t o = 0; o < outputs.size(); ++o)
      out.push_back(value_of(std::vector<int>(r.expected[t].begin() + 8 * o, r.expected[t].begin() + 8 * (o + 1)), 4));
    ++compared;
    if (!right(bytes, t, out)) ++wrong;
  }
  std::cout << compared << " pairs through the model\n";
  EXPECT_EQ(wrong, 0);
}

TEST(CircuitFloat, AddAndSubThroughTheModel) {
  FloatBench fb;
  std::vector<uint32_t> words = all_pairs(edge_values(true));
  const std::vector<uint32_t> random = random_words(1000, true, 23);
  words.insert(words.end(), random.begin(), random.end());
  through_the_model(fb, {&fb.sum, &fb.diff}, "f32 add and sub", words,
                    [](const std::vector<int>& bytes, size_t t, const std::vector<uint32_t>& out) {
                      const uint32_t x = word_at(bytes, t), y = word_at(bytes, t - 4);
                      return out[0] == fref::add_rn(x, y) && out[1] == fref::sub_rn(x, y);
                    });
}

TEST(CircuitFloat, MulThroughTheModel) {
  FloatBench fb(Kind::Mul);
  std::vector<uint32_t> words = all_pairs(mul_edge_values(true));
  const std::vector<uint32_t> random = boundary_words(1000, 34);
  words.insert(words.end(), random.begin(), random.end());
  through_the_model(fb, {&fb.prod}, "f32 mul", words,
                    [](const std::vector<int>& bytes, size_t t, const std::vector<uint32_t>& out) {
                      return out[0] == fref::mul_rn(word_at(bytes, t), word_at(bytes, t - 4));
                    });
}

TEST(CircuitFloat, FmaThroughTheModel) {
  FloatBench fb(Kind::Fma, 2);
  // Seven of the edge values, both signs: 2,744 triples.
  std::vector<uint32_t> edges;
  for (uint32_t x : fma_edge_values(true))
    if (std::set<uint32_t>{0x00000000, 0x00000001, 0x00800000, 0x3F800001, 0x7F7FFFFF, 0x7F800000, 0x7FC00000}.count(
            x & 0x7FFFFFFFu))
      edges.push_back(x);
  std::vector<uint32_t> words = all_triples(edges);
  for (int kind = 1; kind < 4; ++kind) {
    const std::vector<uint32_t> random = fma_words(150, kind, 51 + kind);
    words.insert(words.end(), random.begin(), random.end());
  }
  through_the_model(fb, {&fb.fused}, "f32 fma", words, [](const std::vector<int>& bytes, size_t t, const std::vector<uint32_t>& out) {
    return out[0] == fref::fma_rn(word_at(bytes, t), word_at(bytes, t - 4), word_at(bytes, t - 8));
  });
}

}  // namespace
}  // namespace circuit_test
