// Scalars beside the anchor (docs/circuit.md, section 1): an integer in one
// dimension with four compensating integers, read by its amount, under
// norms padded to a fixed energy.  Every input of the programs here runs
// through the runtime and is compared with the evaluator, and every residual
// entry at every layer boundary is checked to be an exact integer.
#include "bench.h"

#include <array>
#include <cmath>
#include <iostream>

namespace circuit_test {
namespace {

// Nibbles a and b, and a byte field c = 16 a + b, on all 256 tokens; a
// scalar sum s = a + b, and values computed from scalars alone.
struct ScalarBench {
  Program p;
  ValueId a, b, c, s, carry, low, c_high, total, agree, twice;

  ScalarBench() {
    a = p.field("a", 16);
    b = p.field("b", 16);
    c = p.scalar_field("c", 255);
    for (int x = 0; x < 16; ++x)
      for (int y = 0; y < 16; ++y) p.token("t" + std::to_string(16 * x + y), {{a, x}, {b, y}, {c, 16 * x + y}});
    std::vector<Term> sum;
    for (int i = 1; i < 16; ++i) {
      sum.push_back({a, i, i});
      sum.push_back({b, i, i});
    }
    s = p.scalar_ladder("s", 30, sum, 0, [](int v) { return v; });
    // Categorical values from the scalar's amount.
    carry = p.ladder("carry", 2, {Term::amount(s)}, 0, [](int v) { return v >= 16; });
    low = p.ladder("low", 16, {Term::amount(s)}, 0, [](int v) { return v % 16; });
    c_high = p.ladder("c_high", 16, {Term::amount(c)}, 0, [](int v) { return v / 16; });
    // A scalar from two scalars, and a form mixing a scalar with slots:
    // c - 16 a - b is 0 on every token.
    total = p.scalar_ladder("total", 285, {Term::amount(c), Term::amount(s)}, 0, [](int v) { return v; });
    std::vector<Term> diff{Term::amount(c)};
    for (int i = 1; i < 16; ++i) {
      diff.push_back({a, i, -16 * i});
      diff.push_back({b, i, -i});
    }
    agree = p.ladder("agree", 2, diff, 0, [](int v) { return v == 0; });
    twice = p.scalar_ladder("twice", 60, {Term::amount(s, 2)}, 0, [](int v) { return v; });
    for (ValueId v : {s, carry, low, c_high, total, agree, twice}) p.keep(v);
  }
  std::vector<ValueId> observed() const { return {s, carry, low, c_high, total, agree, twice}; }
};

TEST(CircuitScalars, EveryByteThroughScalarsExact) {
  ScalarBench bench;
  Options o;
  o.token_base = 1;
  o.min_layers = 4;   // room after the last op: the scalars that die are cleared
  o.drop_idle_clears = false;   // even though no later value takes their dimensions
  Compiled c = compile(bench.p, o);
  std::cout << c.report();
  int clears = 0;
  for (const LayerUse& u : c.layers()) clears += u.clears;
  EXPECT_GE(clears, 3);   // a, b and the scalar field c
  for (ValueId v : {bench.s, bench.total, bench.c}) EXPECT_EQ(c.dims(v).size(), 5u) << bench.p.info(v).name;
  qgpu::qwen::Model model(c.checkpoint(), qgpu::qwen::Exec::Sparse);
  // Every token twice, in a shuffled order, with tokens outside the circuit between.
  const std::vector<int> tokens = bytes_twice(5, 7);
  Comparison r = compare(bench.p, c, model, tokens, bench.observed());
  expect_no_mismatch(r, {"s", "carry", "low", "c_high", "total", "agree", "twice"}, 470);
  for (size_t t = 0; t < 256; ++t) {   // the evaluator's values are the integers themselves
    const int x = tokens[t] / 16, y = tokens[t] % 16;
    ASSERT_EQ(r.expected[t][0], x + y);
    ASSERT_EQ(r.expected[t][3], x);
    ASSERT_EQ(r.expected[t][4], 16 * x + y + x + y);
    ASSERT_EQ(r.expected[t][5], 1);
  }

  // Every residual entry entering every layer and after the last is an exact
  // integer (0 outside the circuit), and every circuit token's squared sum
  // is the fixed energy, 4096 x hidden.
  expect_integer_residuals(c, model, tokens, true);
}

// The same program through the dense executor: both give the same residuals.
TEST(CircuitScalars, DenseAndSparseExecutorsAgree) {
  ScalarBench bench;
  Options o;
  o.token_base = 1;
  Compiled c = compile(bench.p, o);
  qgpu::qwen::Model sparse(c.checkpoint(), qgpu::qwen::Exec::Sparse), dense(c.checkpoint(), qgpu::qwen::Exec::Dense);
  std::vector<int64_t> ids;
  for (int t = 0; t < 256; t += 3) ids.push_back(c.token_id(t));
  auto s1 = sparse.new_state(), s2 = dense.new_state();
  auto a = sparse.forward(s1, ids, {c.num_layers()}), b = dense.forward(s2, ids, {c.num_layers()});
  EXPECT_TRUE(torch::equal(a.residuals[0], b.residuals[0]));
}

TEST(CircuitScalars, ErrorsNameTheFault) {
  Program p;
  ValueId x = p.field("x", 16);
  ValueId n = p.scalar_field("n", 40);
  p.token("t", {{x, 3}, {n, 7}});
  auto message = [](const std::function<void()>& f) {
    try {
      f();
    } catch (const std::exception& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message([&] { p.ladder("bad", 2, {{n, 3, 1}}, 0, [](int) { return 0; }); }).find("read by its amount"),
            std::string::npos);
  EXPECT_NE(message([&] { p.lookup("bad", 2, {n}, [](const std::vector<int>&) { return 0; }); }).find("is a scalar"),
            std::string::npos);
  MemoryOp m;
  m.name = "store";
  m.rows = 16;
  m.write_enable = Operand::fixed(1);
  m.parts = {{n, 0}};
  EXPECT_NE(message([&] { p.memory(m); }).find("is a scalar"), std::string::npos);
  m.parts = {{x, 0}};
  m.read_addr = Operand::value(n);
  EXPECT_NE(message([&] { p.memory(m); }).find("is a scalar"), std::string::npos);
  EXPECT_NE(message([&] { p.scalar_field("late", 3); }).find("after the first token"), std::string::npos);
  // Three scalars of maximum 2,000 at once: 12e6 is more than 4096 x 2048.
  Program big;
  ValueId f = big.scalar_field("f", 2000);
  big.token("t", {{f, 5}});
  ValueId g = big.scalar_ladder("g", 2000, {Term::amount(f)}, 0, [](int v) { return v; });
  ValueId h = big.scalar_ladder("h", 2000, {Term::amount(f)}, 0, [](int v) { return 2000 - v; });
  big.keep(f);
  big.keep(g);
  big.keep(h);
  Options o;
  o.weights = false;
  EXPECT_NE(message([&] { compile(big, o); }).find("fewer or smaller scalars"), std::string::npos);
}

// A scalar ladder's steps add (4F - 1.5) c and take back (4F - 2.5) c: over
// a wide form the products grow with F and the lane scheme's partial sums
// outgrow fp32's integers.  The compiler simulates such a row for every
// value of the form and refuses it when a sum would round; the narrow
// ladders of ScalarBench pass the same simulation (they compile above).
TEST(CircuitScalars, LadderSumsThatWouldRoundAreRefused) {
  auto build = [](int max) {
    Program p;
    ValueId f = p.scalar_field("f", max);
    p.token("t", {{f, 5}});
    p.keep(p.scalar_ladder("g", max, {Term::amount(f)}, 0, [](int v) { return v; }));
    return p;
  };
  std::string error;
  try {
    compile(build(2000), Options{});
  } catch (const std::exception& e) {
    error = e.what();
  }
  EXPECT_NE(error.find("residual dimension"), std::string::npos) << error;
  EXPECT_NE(error.find("'g'"), std::string::npos) << error;
  EXPECT_NE(error.find("2^23"), std::string::npos) << error;
  EXPECT_NO_THROW(compile(build(255), Options{}));
}

}  // namespace
}  // namespace circuit_test
