// The IR, the evaluator and the scheduler on their own: lowering rules,
// errors that name the fault, budgets, dimension reuse, determinism.
#include "model_host/circuit/compiler.h"
#include "model_host/circuit/evaluator.h"
#include "model_host/circuit/words.h"

#include <gtest/gtest.h>

namespace circuit_test {
namespace {

using namespace qgpu::circuit;

TEST(CircuitIr, LadderAndLookupStepCounts) {
  Program p;
  ValueId x = p.field("x", 16), y = p.field("y", 16);
  for (int i = 0; i < 16; ++i) p.token("t" + std::to_string(i), {{x, i}, {y, 15 - i}});
  std::vector<Term> sum;
  for (int s = 1; s < 16; ++s) {
    sum.push_back({x, s, s});
    sum.push_back({y, s, s});
  }
  // (x + y) >= 16 changes once along 0..30: one step.
  ValueId carry = p.ladder("carry", 2, sum, 0, [](int s) { return s >= 16; });
  EXPECT_EQ(std::get<MlpOp>(p.ops()[p.info(carry).producer]).steps.size(), 1u);
  // x == 3: a table with one entry away from the most common result.
  ValueId is3 = p.lookup("is3", 2, {x}, [](const std::vector<int>& v) { return v[0] == 3; });
  EXPECT_EQ(std::get<MlpOp>(p.ops()[p.info(is3).producer]).steps.size(), 1u);
  Evaluator ev(p);
  for (int t = 0; t < 16; ++t) {
    const auto& v = ev.step(t);
    EXPECT_EQ(v[carry], 0);   // x + y = 15 on every token
    EXPECT_EQ(v[is3], t == 3);
  }
}

TEST(CircuitIr, ErrorsNameTheFault) {
  Program p;
  ValueId x = p.field("x", 4);
  p.token("t", {{x, 1}});
  EXPECT_THROW(p.field("late", 2), std::invalid_argument);
  EXPECT_THROW(p.token("partial", {}), std::invalid_argument);
  EXPECT_THROW(p.lookup("bad", 2, {x}, [](const std::vector<int>& v) { return v[0]; }), std::invalid_argument);
  MemoryOp m;
  m.name = "far";
  m.rows = 4;
  m.write_addr = m.read_addr = Operand::value(x);
  m.write_enable = Operand::fixed(1);
  m.parts = {{x, 4}};
  EXPECT_THROW(p.memory(m), std::invalid_argument);
  // Two steps that fire together break the one-hot: the evaluator reports it.
  p.mlp("overlap", 3, 0, {{{{x, 1, 1}}, 0, 0, 1}, {{{x, 1, 1}}, 0, 0, 2}});
  Evaluator ev(p);
  try {
    ev.step(0);
    FAIL() << "no error";
  } catch (const std::logic_error& e) {
    EXPECT_NE(std::string(e.what()).find("overlap"), std::string::npos) << e.what();
  }
}

TEST(CircuitScheduler, BudgetsAreEnforced) {
  Program p;
  ValueId x = p.field("x", 128), small = p.field("small", 8);
  p.token("t", {{x, 0}, {small, 0}});
  Options plan;
  plan.weights = false;
  // 3072 steps need 6144 units, but every layer keeps two for its bias pair.
  std::vector<Step> steps;
  for (int i = 0; i < 3072; ++i) steps.push_back({{{x, i % 128, 1}}, 0, 0, 1});
  Program q = p;
  q.mlp("huge", 2, 0, steps);
  EXPECT_THROW(compile(q, plan), std::runtime_error);
  // 17 parts of 128 channels need 17 heads.
  MemoryOp m;
  m.name = "wide";
  m.rows = 1;
  m.write_addr = m.read_addr = Operand::fixed(0);
  m.write_enable = Operand::fixed(1);
  for (int i = 0; i < 17; ++i) m.parts.push_back({x, 0});
  Program r = p;
  r.memory(m);
  EXPECT_THROW(compile(r, plan), std::runtime_error);
  // 16 heads fit (here 16 groups of 128 rows), and two such memories take two layers.
  m.rows = 2048;
  m.parts = {{small, 0}};
  r = p;
  r.memory(m);
  r.memory(m);
  Compiled c = compile(r, plan);
  ASSERT_EQ(c.num_layers(), 2);
  EXPECT_EQ(c.layers()[0].heads, 16);
  EXPECT_EQ(c.layers()[1].heads, 16);
}

TEST(CircuitScheduler, DeadValuesFreeTheirDimensions) {
  // A chain of 12 dependent 100-slot tables: each value dies once the next is made.
  Program p;
  ValueId x = p.field("x", 100);
  for (int i = 0; i < 100; ++i) p.token("t" + std::to_string(i), {{x, i}});
  ValueId v = x;
  for (int i = 0; i < 12; ++i)
    v = p.lookup("f" + std::to_string(i), 100, {v}, [](const std::vector<int>& s) { return (s[0] * 7 + 1) % 100; });
  p.keep(v);
  Options plan;
  plan.weights = false;
  Compiled reuse = compile(p, plan);
  plan.reuse_dims = false;
  Compiled keep_all = compile(p, plan);
  auto peak = [](const Compiled& c) {
    int m = 0;
    for (const auto& l : c.layers()) m = std::max({m, l.dims_attn, l.dims_mlp});
    return m;
  };
  EXPECT_EQ(reuse.num_layers(), 12);
  EXPECT_EQ(peak(keep_all), 1 + 12 * 100);   // x and f0..f10 entering the last MLP
  EXPECT_LE(peak(reuse), 1 + 3 * 100);
  // Dimensions of the first value are taken again by a later one.
  bool shared = false;
  for (ValueId w = 2; w < static_cast<ValueId>(p.values().size()); ++w)
    shared |= reuse.dims(w) == reuse.dims(x);
  EXPECT_TRUE(shared);
  EXPECT_EQ(reuse.capture_index(v), 12);
  EXPECT_EQ(reuse.capture_index(x), 0);
}

TEST(CircuitEmission, DeterministicAndExactInBf16) {
  Program p;
  ValueId x = p.field("x", 16), y = p.field("y", 16);
  for (int i = 0; i < 256; ++i) p.token("t" + std::to_string(i), {{x, i & 15}, {y, i >> 4}});
  Word a{{x}, 4}, b{{y}, 4};
  p.keep(add(p, "add", a, b).value.digits[0]);
  Compiled one = compile(p), two = compile(p);
  const auto& t1 = one.checkpoint().tensors;
  const auto& t2 = two.checkpoint().tensors;
  ASSERT_EQ(t1.size(), t2.size());
  for (const auto& [name, t] : t1) EXPECT_TRUE(torch::equal(t, t2.at(name))) << name;
  // Projections, convs and the embedding hold small integers and powers of two.
  for (const auto& [name, t] : t1) {
    if (name.find("norm") != std::string::npos || name.find("out_proj") != std::string::npos) continue;
    EXPECT_TRUE(torch::equal(t, t.to(torch::kBFloat16).to(torch::kFloat32))) << name;
  }
}

}  // namespace
}  // namespace circuit_test
