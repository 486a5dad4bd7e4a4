// Integer primitives compiled into Qwen3.5 layers and run through the runtime
// in fp32: every result equals the evaluator's, and the evaluator's equals an
// independent C++ reference.  8-bit binary operations over all byte pairs,
// 16-bit unary ones over all 16-bit values, 32-bit word operations over two
// million random pairs, the multiplies over a million.
#include "bench.h"

#include <bit>
#include <functional>
#include <iostream>
#include <random>
#include <set>

namespace circuit_test {
namespace {

// One observed result: a word (or a flag as a one-digit word) and what it must be.
struct Check {
  std::string name;
  Word word;
  std::function<uint64_t(uint64_t x, uint64_t y)> ref;
};

// A de Bruijn sequence over `k` symbols of order 2, made linear: every
// ordered pair of symbols appears once as consecutive elements.
std::vector<int> de_bruijn_pairs(int k) {
  // An Eulerian circuit of the complete digraph with loops on k nodes
  // (Hierholzer): each edge (a, b) is one pair.
  std::vector<int> next(k, k - 1), path, stack{0};
  while (!stack.empty()) {
    int v = stack.back();
    if (next[v] >= 0) {
      stack.push_back(next[v]--);
    } else {
      path.push_back(v);
      stack.pop_back();
    }
  }
  return {path.rbegin(), path.rend()};
}

// Compiles the bench, runs `bytes` through it, and checks every observed word
// against the evaluator (through the model) and against its reference.
// `xy` gives the two operands of each token from the byte stream.
// How the compiled circuit runs: fp32 throughout (exactness is asserted), or
// as measurements, where mismatches are only counted and printed (decoded
// with a 5% tolerance): the weights but the norms' rounded to bf16, or fp32
// weights with bf16 activations (qwen::Activations::Bf16).
enum class Precision { Fp32, Bf16Weights, Bf16Activations };

void run_checks(ByteBench& b, const std::vector<Check>& checks, const std::vector<int>& bytes,
                const std::function<std::pair<uint64_t, uint64_t>(size_t)>& xy, const char* title,
                Precision precision = Precision::Fp32) {
  const bool bf16 = precision != Precision::Fp32;
  std::vector<ValueId> observed;
  for (const Check& c : checks)
    for (ValueId d : c.word.digits) {
      b.p.keep(d);
      observed.push_back(d);
    }
  Compiled compiled = compile(b.p);
  std::cout << title << "\n" << compiled.report();
  auto weights = compiled.take_checkpoint();
  if (precision == Precision::Bf16Weights)
    for (auto& [name, t] : weights.tensors)   // norm weights stay fp32 (docs/circuit.md, bf16)
      if (name.find("norm") == std::string::npos) t = t.to(torch::kBFloat16).to(torch::kFloat32);
  qgpu::qwen::Model model(weights, qgpu::qwen::Exec::Sparse,
                          precision == Precision::Bf16Activations ? qgpu::qwen::Activations::Bf16
                                                                  : qgpu::qwen::Activations::Fp32);
  std::vector<int> tokens;
  for (size_t t = 0; t < bytes.size(); ++t) tokens.push_back(ByteBench::token(bytes[t], static_cast<int>(t)));
  Comparison r = compare(b.p, compiled, model, tokens, observed, false, bf16 ? 0.05f : 1e-3f);

  size_t k = 0;
  for (const Check& c : checks) {
    int64_t compared = 0, model_wrong = 0, ref_wrong = 0;
    int64_t first = -1;
    for (size_t d = 0; d < c.word.digits.size(); ++d) {
      model_wrong += r.mismatched[k + d];
      if (r.first_mismatch[k + d] >= 0 && (first < 0 || r.first_mismatch[k + d] < first)) first = r.first_mismatch[k + d];
    }
    if (first >= 0) {
      auto [x, y] = xy(first);
      std::cout << "  " << c.name << ": first mismatch at token " << first << ", operands " << std::hex << x << " "
                << y << std::dec << "\n";
    }
    for (size_t t = 0; t < tokens.size(); ++t) {
      std::vector<int> digits(r.expected[t].begin() + k, r.expected[t].begin() + k + c.word.digits.size());
      if (std::find(digits.begin(), digits.end(), kUndefined) != digits.end()) continue;
      ++compared;
      auto [x, y] = xy(t);
      if (value_of(digits, c.word.bits) != c.ref(x, y)) ++ref_wrong;
    }
    if (!bf16) EXPECT_EQ(model_wrong, 0) << c.name << ": model differs from the evaluator";
    EXPECT_EQ(ref_wrong, 0) << c.name << ": evaluator differs from the reference";
    EXPECT_GT(compared, 0) << c.name;
    std::cout << "  " << c.name << ": " << compared << " inputs, " << model_wrong << " model mismatches\n";
    k += c.word.digits.size();
  }
}

Word flag(ValueId v) { return {{v}, 1}; }

TEST(CircuitPrimitives, EightBitPairsAndSixteenBitValuesExhaustive) {
  ByteBench b;
  Word w = b.window(2);
  Word x{{w.digits[0], w.digits[1]}, 4}, y{{w.digits[2], w.digits[3]}, 4};
  Sum s = add(b.p, "add8", x, y), d = add(b.p, "sub8", x, y, true);
  ValueId ltu = less_than(b.p, "ltu8", x, y);
  Word bits = regroup(b.p, "bits16", w, 1);
  auto s8 = [](uint64_t v) { return static_cast<int8_t>(v); };
  // x: this token's byte, y: the byte before; as a 16-bit value, x | y << 8.
  auto v16 = [](uint64_t x, uint64_t y) { return x | y << 8; };
  std::vector<Check> checks = {
      {"add8", s.value, [](uint64_t x, uint64_t y) { return (x + y) & 255; }},
      {"add8.carry", flag(s.carry), [](uint64_t x, uint64_t y) { return (x + y) >> 8; }},
      {"sub8", d.value, [](uint64_t x, uint64_t y) { return (x - y) & 255; }},
      {"sub8.carry", flag(d.carry), [](uint64_t x, uint64_t y) { return x >= y; }},
      {"and8", bitwise(b.p, "and8", Bitwise::And, x, y), [](uint64_t x, uint64_t y) { return x & y; }},
      {"or8", bitwise(b.p, "or8", Bitwise::Or, x, y), [](uint64_t x, uint64_t y) { return x | y; }},
      {"xor8", bitwise(b.p, "xor8", Bitwise::Xor, x, y), [](uint64_t x, uint64_t y) { return x ^ y; }},
      {"ltu8", flag(ltu), [](uint64_t x, uint64_t y) { return x < y; }},
      {"lts8", flag(less_than(b.p, "lts8", x, y, true)), [=](uint64_t x, uint64_t y) { return s8(x) < s8(y); }},
      {"eq8", flag(equal(b.p, "eq8", x, y)), [](uint64_t x, uint64_t y) { return x == y; }},
      {"min8", select(b.p, "min8", ltu, x, y), [](uint64_t x, uint64_t y) { return std::min(x, y); }},
      {"mul8", mul_lo(b.p, "mul8", x, y), [](uint64_t x, uint64_t y) { return (x * y) & 255; }},
      {"mulhu8", mul_hi(b.p, "mulhu8", x, y), [](uint64_t x, uint64_t y) { return (x * y) >> 8; }},
      {"mulhs8", mul_hi(b.p, "mulhs8", x, y, true),
       [=](uint64_t x, uint64_t y) { return static_cast<uint64_t>((s8(x) * s8(y)) >> 8) & 255; }},
      {"popc16", popc(b.p, "popc16", w), [=](uint64_t x, uint64_t y) { return std::popcount(v16(x, y)); }},
      {"clz16", clz(b.p, "clz16", w),
       [=](uint64_t x, uint64_t y) { return std::countl_zero(static_cast<uint16_t>(v16(x, y))); }},
      {"clz16.bits", clz(b.p, "clz16b", bits),
       [=](uint64_t x, uint64_t y) { return std::countl_zero(static_cast<uint16_t>(v16(x, y))); }},
      {"brev16", brev(b.p, "brev16", w),
       [=](uint64_t x, uint64_t y) {
         uint64_t v = v16(x, y), r = 0;
         for (int i = 0; i < 16; ++i) r |= ((v >> i) & 1) << (15 - i);
         return r;
       }},
      {"nibbles->bits16", bits, v16},
      {"bits->nibbles16", regroup(b.p, "nib16", bits, 4), v16},
      {"nibbles->bytes16", regroup(b.p, "bytes16", w, 8), v16},
      {"shl16", shift(b.p, "shl16", bits, x.digits[0], true),
       [=](uint64_t x, uint64_t y) { return (v16(x, y) << (x & 15)) & 0xffff; }},
      {"shr16", shift(b.p, "shr16", bits, x.digits[0], false),
       [=](uint64_t x, uint64_t y) { return v16(x, y) >> (x & 15); }},
  };
  std::vector<int> bytes = de_bruijn_pairs(256);
  ASSERT_EQ(bytes.size(), 65537u);
  std::set<int> pairs;
  for (size_t t = 1; t < bytes.size(); ++t) pairs.insert(bytes[t - 1] << 8 | bytes[t]);
  ASSERT_EQ(pairs.size(), 65536u);
  // Every pair, whatever QGPU_CIRCUIT_TEST_SCALE says: exhaustive is the requirement.
  run_checks(b, checks, bytes,
             [&](size_t t) { return std::pair<uint64_t, uint64_t>(bytes[t], t ? bytes[t - 1] : 0); },
             "8-bit pairs and 16-bit values, exhaustive");
}

// Two 32-bit operands per token: a = the bytes of this token and the 3 before,
// c = the 4 bytes before those (kept in a memory keyed by position mod 8).
struct Operands32 {
  ByteBench b;
  Word a, c;
  Operands32() {
    a = b.window(4);
    ValueId back = b.p.lookup("pos-4", 8, {b.pos}, [](const std::vector<int>& v) { return (v[0] + 4) % 8; });
    MemoryOp hist;
    hist.name = "history";
    hist.rows = 8;
    hist.write_addr = Operand::value(b.pos);
    hist.write_enable = Operand::fixed(1);
    hist.read_addr = Operand::value(back);
    for (ValueId d : a.digits) hist.parts.push_back({d, 0});
    c = {b.p.memory(hist), 4};
  }

  // Random bytes in blocks of 4; one block in 8 repeats the one before, so
  // that equal operands occur too.
  void run(const std::vector<Check>& checks, const char* title, size_t tokens, Precision precision,
           unsigned seed = 5) {
    std::mt19937 rng(seed);
    std::vector<int> bytes;
    while (bytes.size() < tokens) {
      bool repeat = bytes.size() >= 4 && rng() % 8 == 0;
      for (int i = 0; i < 4; ++i) bytes.push_back(repeat ? bytes[bytes.size() - 4] : static_cast<int>(rng() % 256));
    }
    auto word_at = [&](size_t t) {   // bytes t-3..t, byte t least significant
      uint64_t v = 0;
      for (int i = 3; i >= 0; --i) v = v << 8 | static_cast<uint64_t>(t >= static_cast<size_t>(i) ? bytes[t - i] : 0);
      return v;
    };
    run_checks(b, checks, bytes,
               [&](size_t t) { return std::pair<uint64_t, uint64_t>(word_at(t), t >= 4 ? word_at(t - 4) : 0); }, title,
               precision);
  }
};

constexpr uint64_t kMask32 = 0xffffffffu;
constexpr size_t kPairsPerPart = 500'000;

// The random streams below run a fifth of the first stream of each test in
// every test run; QGPU_CIRCUIT_ALL_STREAMS=1 runs them all in full
// (docs/circuit.md).
bool all_streams() {
  const char* v = std::getenv("QGPU_CIRCUIT_ALL_STREAMS");
  return v && *v && std::string(v) != "0";
}
size_t stream_size(size_t full) { return all_streams() ? full : full / 5; }

// In fp32, `seed` draws one of the four streams of half a million pairs.
void thirty_two_bit(Precision precision, unsigned seed = 5) {
  Operands32 o;
  Program& p = o.b.p;
  const Word &a = o.a, &c = o.c;
  ValueId ltu = less_than(p, "ltu", a, c);
  Word abits = regroup(p, "abits", a, 1), cbits = regroup(p, "cbits", c, 1);
  ValueId amount = p.lookup("amount", 32, {c.digits[0], c.digits[1]},
                            [](const std::vector<int>& v) { return v[0] | (v[1] & 1) << 4; });
  auto s32 = [](uint64_t v) { return static_cast<int32_t>(v); };
  o.run({
      {"add32", add(p, "add", a, c).value, [](uint64_t x, uint64_t y) { return (x + y) & kMask32; }},
      {"sub32", add(p, "sub", a, c, true).value, [](uint64_t x, uint64_t y) { return (x - y) & kMask32; }},
      {"ltu32", flag(ltu), [](uint64_t x, uint64_t y) { return x < y; }},
      {"lts32", flag(less_than(p, "lts", a, c, true)), [=](uint64_t x, uint64_t y) { return s32(x) < s32(y); }},
      {"eq32", flag(equal(p, "eq", a, c)), [](uint64_t x, uint64_t y) { return x == y; }},
      {"min32", select(p, "min", ltu, a, c), [](uint64_t x, uint64_t y) { return std::min(x, y); }},
      {"and32", bitwise(p, "and", Bitwise::And, abits, cbits), [](uint64_t x, uint64_t y) { return x & y; }},
      {"or32", bitwise(p, "or", Bitwise::Or, abits, cbits), [](uint64_t x, uint64_t y) { return x | y; }},
      {"xor32", bitwise(p, "xor", Bitwise::Xor, abits, cbits), [](uint64_t x, uint64_t y) { return x ^ y; }},
      {"shl32", shift(p, "shl", abits, amount, true), [](uint64_t x, uint64_t y) { return (x << (y & 31)) & kMask32; }},
      {"shr32", shift(p, "shr", abits, amount, false), [](uint64_t x, uint64_t y) { return x >> (y & 31); }},
      {"popc32", popc(p, "popc", a), [](uint64_t x, uint64_t) { return std::popcount(x); }},
      {"clz32", clz(p, "clz", abits), [](uint64_t x, uint64_t) { return std::countl_zero(static_cast<uint32_t>(x)); }},
      {"brev32", brev(p, "brev", a),
       [](uint64_t x, uint64_t) {
         uint64_t r = 0;
         for (int i = 0; i < 32; ++i) r |= ((x >> i) & 1) << (31 - i);
         return r;
       }},
  }, precision == Precision::Bf16Weights       ? "32-bit words, random, bf16 weights (measured)"
     : precision == Precision::Bf16Activations ? "32-bit words, random, bf16 activations (measured)"
                                               : "32-bit words, random",
     precision == Precision::Fp32 ? stream_size(kPairsPerPart) : scaled(5'000), precision, seed);
}

#define QGPU_FIRST_STREAM_UNLESS_ALL(first)                                                     \
  if (GetParam() != (first) && !all_streams())                                                 \
    GTEST_SKIP() << "one stream per test in a default run; QGPU_CIRCUIT_ALL_STREAMS=1 runs all"

// A hundred thousand random pairs for every word operation in every run,
// two million with all four streams of half a million (each about 70 CPU-s
// and 0.8 GB), which two test processes share.
class ThirtyTwoBitRandom : public ::testing::TestWithParam<unsigned> {};
TEST_P(ThirtyTwoBitRandom, RandomPairs) {
  QGPU_FIRST_STREAM_UNLESS_ALL(5u);
  thirty_two_bit(Precision::Fp32, GetParam());
}
INSTANTIATE_TEST_SUITE_P(CircuitPrimitives, ThirtyTwoBitRandom, ::testing::Values(5u, 6u, 7u, 8u));

// bf16 weights, and bf16 activations: the count of mismatches per primitive
// is printed (docs/circuit.md, bf16).
TEST(CircuitPrimitives, ThirtyTwoBitBf16WeightsMeasured) { thirty_two_bit(Precision::Bf16Weights); }
TEST(CircuitPrimitives, ThirtyTwoBitBf16ActivationsMeasured) { thirty_two_bit(Precision::Bf16Activations); }

// A million random pairs for each multiply with all streams, in streams of
// half a million (low half) and a quarter of a million (high halves, about
// three times the work per pair), so that two test processes share them; a
// default run takes a fifth of the first stream of each.  A stream's seed
// draws its pairs.
constexpr size_t kMultiplyPairs = 1'000'000;

class ThirtyTwoBitMultiply : public ::testing::TestWithParam<unsigned> {};
TEST_P(ThirtyTwoBitMultiply, LowHalf) {
  QGPU_FIRST_STREAM_UNLESS_ALL(9u);
  Operands32 o;
  o.run({{"mul32", mul_lo(o.b.p, "mul", o.a, o.c), [](uint64_t x, uint64_t y) { return (x * y) & kMask32; }}},
        "32-bit multiply, random", stream_size(kMultiplyPairs / 2), Precision::Fp32, GetParam());
}
INSTANTIATE_TEST_SUITE_P(CircuitPrimitives, ThirtyTwoBitMultiply, ::testing::Values(9u, 10u));

class ThirtyTwoBitMultiplyHigh : public ::testing::TestWithParam<unsigned> {};
TEST_P(ThirtyTwoBitMultiplyHigh, UnsignedAndSigned) {
  QGPU_FIRST_STREAM_UNLESS_ALL(11u);
  Operands32 o;
  auto s32 = [](uint64_t v) { return static_cast<int64_t>(static_cast<int32_t>(v)); };
  const Word hu = mul_hi(o.b.p, "mulhu", o.a, o.c);
  o.run({{"mulhu32", hu, [](uint64_t x, uint64_t y) { return (x * y) >> 32; }},
         {"mulhs32", signed_high(o.b.p, "mulhs", hu, o.a, o.c),
          [=](uint64_t x, uint64_t y) { return static_cast<uint64_t>((s32(x) * s32(y)) >> 32) & kMask32; }}},
        "32-bit multiply, high half, random", stream_size(kMultiplyPairs / 4), Precision::Fp32, GetParam());
}
INSTANTIATE_TEST_SUITE_P(CircuitPrimitives, ThirtyTwoBitMultiplyHigh, ::testing::Values(11u, 12u, 13u, 14u));

}  // namespace
}  // namespace circuit_test
