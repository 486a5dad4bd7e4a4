// Passes: the exact-product trick (docs/circuit.md, section 2).  A pass
// copies a value's code where a conjunction of literals holds, one SwiGLU
// unit per copied entry x, silu(gain x - offset + G (sum of the literals -
// n)) [first literal] / scale (gain 64 and scale 64 for a scalar's integers;
// 1120, offset 96 and 1024 for a categorical slot).  Program::select is a
// multiplexer made of passes alone.  Every token of the programs here runs
// through the runtime and is compared with the evaluator, the evaluator with
// the plain integers, and every residual entry is checked to be exact.
#include "bench.h"

#include <iostream>

namespace circuit_test {
namespace {

// Nibbles a and b and a scalar byte c = 16 a + b on all 256 tokens.
struct SelectBench {
  Program p;
  ValueId a, b, c;
  ValueId sel3, parity;      // a % 3, b % 2
  ValueId rev, rot;          // scalars of maximum 255 made from c: 255 - c, (c + 17) % 256
  ValueId pick, high, nib, partial, guarded, guarded_scalar, mixed;

  SelectBench() {
    a = p.field("a", 16);
    b = p.field("b", 16);
    c = p.scalar_field("c", 255);
    for (int x = 0; x < 16; ++x)
      for (int y = 0; y < 16; ++y) p.token("t" + std::to_string(16 * x + y), {{a, x}, {b, y}, {c, 16 * x + y}});
    sel3 = p.ladder("sel3", 3, amount_of(a), 0, [](int v) { return v % 3; });
    parity = p.ladder("parity", 2, amount_of(b), 0, [](int v) { return v % 2; });
    rev = p.scalar_ladder("rev", 255, {Term::amount(c)}, 0, [](int v) { return 255 - v; });
    rot = p.scalar_ladder("rot", 255, {Term::amount(c)}, 0, [](int v) { return (v + 17) % 256; });
    // Scalars: c, 255 - c or (c + 17) % 256 by a % 3; a ladder reads the result.
    pick = p.select("pick", sel3, {c, rev, rot});
    high = p.ladder("high", 2, {Term::amount(pick)}, 0, [](int v) { return v >= 128; });
    // Categorical: a or b by the parity of b.
    nib = p.select("nib", parity, {a, b});
    // Passes that do not cover their selector, beside a step: b where a % 3
    // is 1; else 7 where a is 3 (a step), else the base 5.
    partial = p.mlp("partial", 16, 5, {Step{{{a, 3, 1}, {sel3, 1, -1}}, 0, 5, 7}}, {Pass{{{sel3, 1}}, b}});
    // A pass on a conjunction: a where a % 3 is 2 and b is odd, else 9; and
    // the same on scalars: c there, else 0.
    guarded = p.mlp("guarded", 16, 9, {}, {Pass{{{sel3, 2}, {parity, 1}}, a}});
    guarded_scalar = p.mlp("guarded_scalar", 256, 0, {}, {Pass{{{parity, 1}, {sel3, 2}}, c}});
    // A select of a select's output: (the pick) or c by the parity of b.
    mixed = p.select("mixed", parity, {pick, c});
    for (ValueId v : observed()) p.keep(v);
  }
  // The form sum(i [v == i]) of a nibble.
  static std::vector<Term> amount_of(ValueId v) {
    std::vector<Term> t;
    for (int i = 1; i < 16; ++i) t.push_back({v, i, i});
    return t;
  }
  std::vector<ValueId> observed() const { return {pick, high, nib, partial, guarded, guarded_scalar, mixed}; }
};

TEST(CircuitSelect, EveryByteThroughPassesExact) {
  SelectBench bench;
  Options o;
  o.token_base = 1;
  o.min_layers = 5;   // room after the last op: the values that die are cleared
  Compiled c = compile(bench.p, o);
  std::cout << c.report();
  qgpu::qwen::Model model(c.checkpoint(), qgpu::qwen::Exec::Sparse);
  const std::vector<int> tokens = bytes_twice(11, 5);
  Comparison r = compare(bench.p, c, model, tokens, bench.observed());
  expect_no_mismatch(r, {"pick", "high", "nib", "partial", "guarded", "guarded_scalar", "mixed"}, 460);
  // The evaluator against the plain integers.
  for (size_t t = 0; t < tokens.size(); ++t) {
    if (tokens[t] < 0) continue;
    const int x = tokens[t] / 16, y = tokens[t] % 16, byte = tokens[t];
    const int pick = x % 3 == 0 ? byte : x % 3 == 1 ? 255 - byte : (byte + 17) % 256;
    ASSERT_EQ(r.expected[t][0], pick) << "token " << t;
    ASSERT_EQ(r.expected[t][1], pick >= 128 ? 1 : 0);
    ASSERT_EQ(r.expected[t][2], y % 2 == 0 ? x : y);
    ASSERT_EQ(r.expected[t][3], x % 3 == 1 ? y : x == 3 ? 7 : 5);
    const bool guard = x % 3 == 2 && y % 2 == 1;
    ASSERT_EQ(r.expected[t][4], guard ? x : 9);
    ASSERT_EQ(r.expected[t][5], guard ? byte : 0);
    ASSERT_EQ(r.expected[t][6], y % 2 == 0 ? pick : byte);
  }
  expect_integer_residuals(c, model, tokens, true);
}

// The units an op of passes costs, and the dense executor agreeing with the
// sparse one to the bit.
TEST(CircuitSelect, CostsAUnitPerCopiedEntry) {
  for (bool scalar : {false, true}) {
    Program p;
    ValueId sel = p.field("sel", 4);
    std::vector<ValueId> in;
    for (int k = 0; k < 4; ++k)
      in.push_back(scalar ? p.scalar_field("s" + std::to_string(k), 200) : p.field("f" + std::to_string(k), 10));
    for (int t = 0; t < 40; ++t) {
      std::vector<std::pair<ValueId, int>> slots{{sel, t % 4}};
      for (int k = 0; k < 4; ++k) slots.push_back({in[k], scalar ? (t * 37 + 53 * k) % 201 : (t + 3 * k) % 10});
      p.token("t" + std::to_string(t), slots);
    }
    ValueId out = p.select("out", sel, in);
    p.keep(out);
    Options o;
    o.token_base = 1;
    Compiled c = compile(p, o);
    // The bias pair, and per input one unit per slot but the base (categorical)
    // or per dimension (a scalar: no base to take back).
    EXPECT_EQ(c.layers()[0].units, 2 + 4 * (scalar ? 5 : 9)) << (scalar ? "scalars" : "categorical");
    qgpu::qwen::Model sparse(c.checkpoint(), qgpu::qwen::Exec::Sparse), dense(c.checkpoint(), qgpu::qwen::Exec::Dense);
    std::vector<int> tokens;
    for (int t = 0; t < 40; ++t) tokens.push_back(t);
    Comparison r = compare(p, c, sparse, tokens, {out});
    EXPECT_EQ(r.mismatched[0], 0);
    EXPECT_EQ(r.compared[0], 40);
    for (int t = 0; t < 40; ++t) {
      const int k = t % 4;
      ASSERT_EQ(r.expected[t][0], scalar ? (t * 37 + 53 * k) % 201 : (t + 3 * k) % 10);
    }
    std::vector<int64_t> ids;
    for (int t = 0; t < 40; ++t) ids.push_back(c.token_id(t));
    auto s1 = sparse.new_state(), s2 = dense.new_state();
    EXPECT_TRUE(torch::equal(sparse.forward(s1, ids, {1}).residuals[0], dense.forward(s2, ids, {1}).residuals[0]));
    expect_integer_residuals(c, sparse, tokens, scalar);
  }
}

// A categorical select under bf16 weights and bf16 activations (measured,
// docs/circuit.md section 9): its weights (1120, 2048, -2144, 1/1024) and
// its gates where a pass holds (1024 and -96) are bf16 values.
TEST(CircuitSelect, CategoricalBf16Measured) {
  Program p;
  ValueId sel = p.field("sel", 3);
  std::vector<ValueId> in;
  for (int k = 0; k < 3; ++k) in.push_back(p.field("f" + std::to_string(k), 16));
  for (int t = 0; t < 3 * 16 * 16; ++t)
    p.token("t" + std::to_string(t), {{sel, t % 3}, {in[0], (t / 3) % 16}, {in[1], (t / 48) % 16}, {in[2], (t * 7) % 16}});
  ValueId out = p.select("out", sel, in);
  ValueId again = p.select("again", sel, {out, in[1], out});
  p.keep(again);
  Options o;
  o.token_base = 1;
  Compiled c = compile(p, o);
  for (auto act : {qgpu::qwen::Activations::Fp32, qgpu::qwen::Activations::Bf16}) {
    auto weights = c.checkpoint();
    for (auto& [name, t] : weights.tensors)   // norm weights stay fp32 (docs/circuit.md, bf16)
      if (name.find("norm") == std::string::npos) t = t.to(torch::kBFloat16).to(torch::kFloat32);
    qgpu::qwen::Model model(weights, qgpu::qwen::Exec::Sparse, act);
    std::vector<int> tokens;
    for (int t = 0; t < 3 * 16 * 16; ++t) tokens.push_back(t);
    Comparison r = compare(p, c, model, tokens, {again}, false, 0.05f);
    std::cout << "select, bf16 weights" << (act == qgpu::qwen::Activations::Bf16 ? " and activations" : "") << ": "
              << r.compared[0] << " inputs, " << r.mismatched[0] << " mismatches\n";
    EXPECT_EQ(r.compared[0], 768);
    EXPECT_EQ(r.mismatched[0], 0);   // measured: none; the weights and held gates are bf16 values
  }
}

TEST(CircuitSelect, ErrorsNameTheFault) {
  Program p;
  ValueId sel = p.field("sel", 2);
  ValueId x = p.field("x", 16), y = p.field("y", 8);
  ValueId n = p.scalar_field("n", 40), m = p.scalar_field("m", 41);
  p.token("t", {{sel, 1}, {x, 3}, {y, 2}, {n, 7}, {m, 9}});
  auto message = [](const std::function<void()>& f) {
    try {
      f();
    } catch (const std::exception& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message([&] { p.select("bad", sel, {x, y}); }).find("is not a categorical value of size 16"),
            std::string::npos);
  EXPECT_NE(message([&] { p.select("bad", sel, {n, m}); }).find("is not a scalar of maximum 40"), std::string::npos);
  EXPECT_NE(message([&] { p.select("bad", sel, {x, n}); }).find("'n' is not a categorical"), std::string::npos);
  EXPECT_NE(message([&] { p.select("bad", sel, {x, x, x}); }).find("3 inputs for a selector of size 2"),
            std::string::npos);
  EXPECT_NE(message([&] { p.select("bad", n, {x}); }).find("is a scalar"), std::string::npos);
  EXPECT_NE(message([&] { p.mlp("bad", 16, 0, {}, {Pass{{}, x}}); }).find("a pass without a condition"),
            std::string::npos);
  EXPECT_NE(message([&] { p.mlp("bad", 16, 0, {}, {Pass{{{sel, 2}}, x}}); }).find("slot outside its value"),
            std::string::npos);
  // Two passes holding at once, and a step firing while a pass holds: the evaluator refuses.
  p.mlp("two", 16, 0, {}, {Pass{{{sel, 1}}, x}, Pass{{{sel, 1}}, x}});
  EXPECT_NE(message([&] { Evaluator(p).step(0); }).find("holds two passes at once"), std::string::npos);
  Program q;
  ValueId f = q.field("f", 2), g = q.field("g", 16);
  q.token("t", {{f, 1}, {g, 4}});
  q.mlp("both", 16, 0, {Step{{{g, 4, 1}}, 0, 0, 3}}, {Pass{{{f, 1}}, g}});
  EXPECT_NE(message([&] { Evaluator(q).step(0); }).find("fires a step while a pass holds"), std::string::npos);
}

}  // namespace
}  // namespace circuit_test
