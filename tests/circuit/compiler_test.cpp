// The IR, the evaluator and the scheduler on their own: lowering rules,
// errors that name the fault, budgets, dimension reuse, determinism.
#include "model_host/circuit/compiler.h"
#include "model_host/circuit/evaluator.h"
#include "model_host/circuit/words.h"
#include "model_host/qwen/model.h"

#include <gtest/gtest.h>

#include <iostream>
#include <optional>
#include <random>

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

// An op with many terms over few slot combinations is evaluated through a
// table filled on first use: every combination gives, the first time and
// every time after, what the op's terms give, a held pass copies its source
// (which the table's index does not hold), and a fault is reported on every token that
// meets it, not only the first.
TEST(CircuitIr, TheEvaluatorsTablesGiveWhatTheTermsGive) {
  Program p;
  ValueId x = p.field("x", 16), y = p.field("y", 16), on = p.field("on", 2);
  for (int i = 0; i < 16; ++i)
    for (int j = 0; j < 16; ++j)
      for (int k = 0; k < 2; ++k)
        p.token("t" + std::to_string(i) + "_" + std::to_string(j) + "_" + std::to_string(k), {{x, i}, {y, j}, {on, k}});
  auto token = [](int i, int j, int k) { return (i * 16 + j) * 2 + k; };
  auto f = [](int a, int b) { return (a * 7 + b * b) % 13; };
  ValueId table = p.lookup("table", 16, {x, y}, [&](const std::vector<int>& v) { return f(v[0], v[1]); });
  // y where `on` holds (a pass), else x where it is 1 to 4 (steps gated off by `on`), else 0.
  std::vector<Step> gated;
  for (int k = 1; k <= 4; ++k) gated.push_back({{{x, k, 1}, {on, 0, 1}}, -1, 0, k});
  ValueId copied = p.mlp("copied", 16, 0, gated, {{{{on, 1}}, y}});
  // Steps that break the one-hot where x is 5: a fault, on every such token.
  std::vector<Step> steps;
  for (int k = 1; k <= 4; ++k) steps.push_back({{{x, k, 1}}, 0, 0, k});
  steps.push_back({{{x, 5, 1}}, 0, 1, 2});
  p.mlp("faulty", 16, 0, steps);
  Evaluator ev(p);
  std::mt19937 rng(3);
  for (int round = 0; round < 4; ++round)
    for (int n = 0; n < 600; ++n) {
      const int i = static_cast<int>(rng() % 16), j = static_cast<int>(rng() % 16), k = static_cast<int>(rng() % 2);
      if (i == 5) {
        EXPECT_THROW(ev.step(token(i, j, k)), std::logic_error);
        ev.reset();
        continue;
      }
      const auto& v = ev.step(token(i, j, k));
      ASSERT_EQ(v[table], f(i, j)) << i << " " << j;
      ASSERT_EQ(v[copied], k ? j : i >= 1 && i <= 4 ? i : 0) << i << " " << j << " " << k;
    }
}

// Bit addresses (bits of two values, reversed bit order, a constant top bit)
// and zero-default reads in the evaluator, against arrays indexed by hand.
TEST(CircuitIr, AddressBitsAndZeroDefaultInTheEvaluator) {
  enum { Write, Read, Reset };
  Program p;
  ValueId op = p.field("op", 3), a = p.field("a", 4), b = p.field("b", 8), d = p.field("d", 16);
  for (int o = 0; o < 3; ++o)
    for (int x = 0; x < 4; ++x)
      for (int y = 0; y < 8; ++y)
        for (int z = 0; z < 16; ++z) p.token("t", {{op, o}, {a, x}, {b, y}, {d, z}});
  auto token = [](int o, int x, int y, int z) { return ((o * 4 + x) * 8 + y) * 16 + z; };
  const ValueId we = p.lookup("we", 2, {op}, [](const std::vector<int>& v) { return v[0] == Write; });
  const ValueId reset = p.lookup("reset", 2, {op}, [](const std::vector<int>& v) { return v[0] == Reset; });
  // Write row 16 + 8 (a >> 1) + b, read row 16 + 8 (a >> 1) + reverse3(b).
  auto store = [&](const std::string& name, bool zero_default) {
    MemoryOp m;
    m.name = name;
    m.rows = 32;
    m.zero_default = zero_default;
    m.write_addr = std::vector<AddrBit>{{b, 0}, {b, 1}, {b, 2}, {a, 1}, AddrBit::fixed(1)};
    m.read_addr = std::vector<AddrBit>{{b, 2}, {b, 1}, {b, 0}, {a, 1}, AddrBit::fixed(1)};
    m.write_enable = Operand::value(we);
    m.reset = Operand::value(reset);
    m.parts = {{d, 0}};
    return p.memory(m)[0];
  };
  const ValueId zero = store("zero", true), undef = store("undef", false);
  Evaluator ev(p);
  std::vector<int> rows(32, -1);   // -1: never written since the last reset
  std::mt19937 rng(1);
  int empty_reads = 0, full_reads = 0;
  for (int i = 0; i < 3000; ++i) {
    const int o = i % 500 == 499 ? Reset : static_cast<int>(rng() % 2);
    const int x = static_cast<int>(rng() % 4), y = static_cast<int>(rng() % 8), z = static_cast<int>(rng() % 16);
    if (o == Reset) rows.assign(32, -1);
    if (o == Write) rows[16 + 8 * (x >> 1) + y] = z;
    const int rev = ((y & 1) << 2) | (y & 2) | (y >> 2);
    const int want = rows[16 + 8 * (x >> 1) + rev];
    const auto& v = ev.step(token(o, x, y, z));
    ASSERT_EQ(v[zero], want < 0 ? 0 : want) << "token " << i;
    ASSERT_EQ(v[undef], want < 0 ? kUndefined : want) << "token " << i;
    ++(want < 0 ? empty_reads : full_reads);
  }
  EXPECT_GT(empty_reads, 100);
  EXPECT_GT(full_reads, 1000);
}

TEST(CircuitIr, AddressErrorsNameTheFault) {
  Program p;
  ValueId x = p.field("x", 16), big = p.field("big", 300);
  p.token("t", {{x, 0}, {big, 0}});
  auto memory = [&](int rows, std::vector<AddrBit> bits) {
    MemoryOp m;
    m.name = "m";
    m.rows = rows;
    m.write_addr = m.read_addr = std::move(bits);
    m.write_enable = Operand::fixed(1);
    m.parts = {{x, 0}};
    return p.memory(m);
  };
  auto message = [&](int rows, std::vector<AddrBit> bits) {
    try {
      memory(rows, std::move(bits));
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message(32, {{x, 4}}).find("bit 4 of 'x' (16 slots) is always 0"), std::string::npos);
  EXPECT_NE(message(32, {{x, 0}, AddrBit::fixed(2)}).find("constant bit is 0 or 1"), std::string::npos);
  EXPECT_NE(message(2048, {{x, 0}, {x, 1}, {x, 2}, {x, 3}, {big, 0}, {big, 1}, {big, 2}, {big, 3}, {big, 4},
                           {big, 5}, {big, 6}, {big, 7}})
                .find("reaches row 4095, the store has 2048 rows"),
            std::string::npos);
  // Bits 0..8 of a 300-slot value name rows up to 511, although slot 299 is its last.
  EXPECT_NE(message(300, {{big, 0}, {big, 1}, {big, 2}, {big, 3}, {big, 4}, {big, 5}, {big, 6}, {big, 7}, {big, 8}})
                .find("reaches row 511"),
            std::string::npos);
  EXPECT_EQ(memory(512, {{big, 0}, {big, 1}, {big, 2}, {big, 3}, {big, 4}, {big, 5}, {big, 6}, {big, 7}, {big, 8}})
                .size(),
            1u);
}

// Stores wider than a layer take as many whole row groups per layer as fit;
// the layout names every head, and the layout query names what is missing.
TEST(CircuitScheduler, WideStoresSpanLayersByWholeGroups) {
  Program p;
  ValueId x = p.field("x", 16), t = p.field("t", 256), r = p.field("r", 32);
  p.token("tok", {{x, 0}, {t, 0}, {r, 0}});
  auto bits = [](ValueId v, int n) {
    std::vector<AddrBit> b;
    for (int i = 0; i < n; ++i) b.push_back({v, i});
    return b;
  };
  auto cat = [](std::vector<AddrBit> a, const std::vector<AddrBit>& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
  };
  auto memory = [&](const std::string& name, int rows, std::vector<AddrBit> address, int parts) {
    MemoryOp m;
    m.name = name;
    m.rows = rows;
    m.write_addr = m.read_addr = std::move(address);
    m.write_enable = Operand::fixed(1);
    for (int i = 0; i < parts; ++i) m.parts.push_back({x, 0});
    p.memory(m);
  };
  memory("first", 512, cat(bits(t, 8), bits(r, 1)), 1);    // 4 groups x 1 slice
  memory("wide", 4096, cat(bits(t, 8), bits(r, 4)), 8);    // 32 groups x 1 slice (8 x 16 channels)
  memory("regs", 8192, cat(bits(r, 5), bits(t, 8)), 12);   // 64 groups x 2 slices (192 channels)
  Options plan;
  plan.weights = false;
  Compiled c = compile(p, plan);

  using Head = std::pair<int, int>;
  auto heads_of = [&](const std::string& name) {
    std::vector<Head> h;
    for (const auto& x : c.memory_layout(name).heads) h.push_back({x.layer, x.head});
    return h;
  };
  // Expected: heads taken in order, a group never split across layers.
  std::vector<int> used(16, 0);
  auto expect = [&](int groups, int slices) {
    std::vector<Head> h;
    int layer = 0;
    for (int g = 0; g < groups; ++g) {
      while (used[layer] + slices > 16) ++layer;
      for (int s = 0; s < slices; ++s) h.push_back({layer, used[layer]++});
    }
    return h;
  };
  EXPECT_EQ(heads_of("first"), expect(4, 1));
  EXPECT_EQ(heads_of("wide"), expect(32, 1));
  EXPECT_EQ(heads_of("regs"), expect(64, 2));
  // 4 + 32 + 128 heads: 10 full layers and 4 heads in the last (2 groups of 2 slices).
  ASSERT_EQ(c.num_layers(), 11);
  for (int l = 0; l < 10; ++l) EXPECT_EQ(c.layers()[l].heads, 16) << "layer " << l;
  EXPECT_EQ(c.layers()[10].heads, 4);
  EXPECT_EQ(c.memory_layout("wide").heads[12].layer, 1);   // groups 0..11 fill layer 0 after `first`
  EXPECT_EQ(c.memory_layout("wide").heads[0].head, 4);

  const MemoryLayout& regs = c.memory_layout("regs");
  EXPECT_EQ(regs.groups, 64);
  EXPECT_EQ(regs.slices, 2);
  EXPECT_EQ(regs.group_rows, 128);
  ASSERT_EQ(regs.parts.size(), 12u);
  for (int k = 0; k < 12; ++k) {
    EXPECT_EQ(regs.parts[k].slice, k / 8);
    EXPECT_EQ(regs.parts[k].channel, 16 * (k % 8));
    EXPECT_EQ(regs.parts[k].size, 16);
  }
  EXPECT_THROW(c.memory_layout("nothing"), std::out_of_range);
  memory("first", 1, {}, 1);
  EXPECT_THROW(compile(p, plan).memory_layout("first"), std::invalid_argument);
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

// Options::free_dims: the highest dimensions hold no value; a program that
// needs them does not compile, and the error names what fills the residual.
TEST(CircuitScheduler, FreeDimensionsHoldNoValue) {
  Program p;
  ValueId x = p.field("x", 100);
  for (int i = 0; i < 100; ++i) p.token("t" + std::to_string(i), {{x, i}});
  ValueId v = x;
  for (int i = 0; i < 4; ++i)
    v = p.lookup("f" + std::to_string(i), 100, {v}, [](const std::vector<int>& s) { return (s[0] * 7 + 1) % 100; });
  p.keep(v);
  Options plan;
  plan.weights = false;
  plan.reuse_dims = false;   // x and f0..f3 all live: 501 dimensions with the anchor
  for (int free : {0, 1000, 1547}) {
    plan.free_dims = free;
    Compiled c = compile(p, plan);
    int top = 0;
    for (ValueId w = 0; w < static_cast<ValueId>(p.values().size()); ++w)
      for (int d : c.dims(w)) top = std::max(top, d);
    EXPECT_LT(top, 2048 - free) << free;
  }
  plan.free_dims = 1548;
  try {
    compile(p, plan);
    ADD_FAILURE() << "500 values' dimensions fitted in 499";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("residual full"), std::string::npos) << e.what();
  }
  plan.free_dims = 2048;
  EXPECT_THROW(compile(p, plan), std::invalid_argument);
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

// Exact arithmetic (docs/circuit.md section 4): with n live flags the
// norms' squared sums run over a range that includes energies no fp32 norm
// weight maps exactly to a power of two (39, 44 and 45 among them), where the
// compiler adds pad dimensions.  For every n, every residual entry of every
// token, entering every layer and after the last, is exactly 0 or 1, and the
// computed value is the evaluator's.
TEST(CircuitEmission, ResidualsAreExactlyZeroOrOneWithPadsWhereNeeded) {
  int padded = 0;
  for (int n = 34; n <= 48; ++n) {
    Program p;
    std::vector<ValueId> flags;
    for (int i = 0; i < n; ++i) flags.push_back(p.field("f" + std::to_string(i), 2));
    for (int t = 0; t < 64; ++t) {
      std::vector<std::pair<ValueId, int>> slots;
      for (int i = 0; i < n; ++i) slots.push_back({flags[i], ((t * 2654435761u) >> (i % 29)) & 1});
      p.token("t" + std::to_string(t), slots);
    }
    for (ValueId f : flags) p.keep(f);
    ValueId x = p.lookup("x", 2, {flags[0], flags[1]}, [](const std::vector<int>& s) { return s[0] ^ s[1]; });
    p.keep(x);
    Options o;
    o.min_layers = 3;
    Compiled c = compile(p, o);
    for (const LayerUse& u : c.layers()) padded += u.pads;
    qgpu::qwen::Model model(c.take_checkpoint(), qgpu::qwen::Exec::Sparse);
    std::vector<int64_t> ids;
    std::mt19937 rng(n);
    for (int i = 0; i < 40; ++i) ids.push_back(c.token_id(static_cast<int>(rng() % 64)));
    std::vector<int> all;
    for (int l = 0; l <= c.num_layers(); ++l) all.push_back(l);
    auto st = model.new_state();
    auto out = model.forward(st, ids, all);
    for (const auto& res : out.residuals)
      ASSERT_EQ((res.ne(0) & res.ne(1)).sum().item<int64_t>(), 0) << n << " flags";
    Evaluator ev(p);
    const auto& last = out.residuals.back();
    for (size_t t = 0; t < ids.size(); ++t) {
      const int want = ev.step(static_cast<int>(ids[t] - c.token_id(0)))[x];
      EXPECT_EQ(c.decode(x, last[t].data_ptr<float>()), want) << n << " flags, token " << t;
    }
  }
  std::cout << "norm pads over the 15 programs: " << padded << "\n";
  EXPECT_GT(padded, 0) << "no program of the range needed a pad";
}


// A literal that holds on most slots of a value ("kind is not 26", written
// as 26 positive terms) is emitted as a weight on the slot that falsifies
// it, and a value whose slots mostly share a coefficient keeps weights only
// where they differ from it: fewer MLP rows for each residual entry to
// reach, the same integer form on every token.  Every token of the program
// runs through the model and matches the evaluator.
TEST(CircuitEmission, LiteralsWeighTheSlotsThatFalsifyThem) {
  Program p;
  ValueId kind = p.field("kind", 27), x = p.field("x", 16);
  for (int k = 0; k < 27; ++k)
    for (int i = 0; i < 16; ++i) p.token("t" + std::to_string(k * 16 + i), {{kind, k}, {x, i}});
  std::vector<Term> not26_and_5{{x, 5, 1}};
  for (int k = 0; k < 26; ++k) not26_and_5.push_back({kind, k, 1});
  ValueId hit = p.mlp("hit", 2, 0, {Step{not26_and_5, -1, 0, 1}});
  // 2 on fourteen slots of x, 3 on slot 14, 0 on slot 15: fires unless x is 15.
  std::vector<Term> mostly_two{{x, 14, 3}};
  for (int i = 0; i < 14; ++i) mostly_two.push_back({x, i, 2});
  ValueId below15 = p.mlp("below15", 2, 0, {Step{mostly_two, -1, 0, 1}});
  p.keep(hit);
  p.keep(below15);
  Compiled c = compile(p);
  const auto& gate = c.checkpoint().tensors.at("layers.0.mlp.gate_proj.weight");
  auto weights_on = [&](int64_t unit, ValueId v) {
    int n = 0;
    for (int d : c.dims(v)) n += gate[unit][d].item<float>() != 0.0f;
    return n;
  };
  // The ops' steps are the layer's first units, two per step.
  EXPECT_EQ(weights_on(0, kind), 1);
  EXPECT_EQ(weights_on(0, x), 1);
  EXPECT_EQ(weights_on(2, x), 2);   // slots 14 (+1) and 15 (-2)
  EXPECT_EQ(weights_on(2, kind), 0);
  qgpu::qwen::Model model(c.checkpoint(), qgpu::qwen::Exec::Sparse);
  std::vector<int64_t> ids;
  for (int t = 0; t < static_cast<int>(p.tokens().size()); ++t) ids.push_back(c.token_id(t));
  auto st = model.new_state();
  auto out = model.forward(st, ids, {c.num_layers()});
  Evaluator ev(p);
  int hits = 0;
  for (size_t t = 0; t < ids.size(); ++t) {
    const auto& v = ev.step(static_cast<int>(t));
    hits += v[hit];
    EXPECT_EQ(v[hit], t / 16 != 26 && t % 16 == 5) << "token " << t;
    EXPECT_EQ(v[below15], t % 16 != 15) << "token " << t;
    const float* res = out.residuals[0][t].data_ptr<float>();
    EXPECT_EQ(c.decode(hit, res), v[hit]) << "token " << t;
    EXPECT_EQ(c.decode(below15, res), v[below15]) << "token " << t;
  }
  EXPECT_EQ(hits, 26);
}


// Program::Guard: every step made under a guard is conditioned on its
// literal.  Where the literal holds the ops compute what they compute
// unguarded; elsewhere no step fires (every unit is at -96 or below) and
// each op holds its base slot.  The compiled layers agree with the
// evaluator on every token.
TEST(CircuitEmission, GuardedStepsFireOnlyWhereTheirGuardHolds) {
  auto build = [](Program& p, bool guarded) {
    const ValueId op = p.field("op", 4), a = p.field("a", 16), b = p.field("b", 16);
    for (int o = 0; o < 4; ++o)
      for (int i = 0; i < 16; ++i)
        for (int j = 0; j < 16; ++j) p.token("t", {{op, o}, {a, i}, {b, j}});
    const ValueId is_two = p.lookup("is_two", 2, {op}, [](const std::vector<int>& v) { return v[0] == 2; });
    std::optional<Program::Guard> g;
    if (guarded) g.emplace(p, Literal{is_two, 1});
    std::vector<Term> sum;
    for (int k = 1; k < 16; ++k) {
      sum.push_back({a, k, k});
      sum.push_back({b, k, k});
    }
    const ValueId carry = p.ladder("carry", 2, sum, 0, [](int s) { return s >= 16; });
    const ValueId low = p.ladder("low", 16, sum, 0, [](int s) { return s % 16; });
    const ValueId prod = p.lookup("prod", 16, {a, b}, [](const std::vector<int>& v) { return v[0] * v[1] % 16; });
    g.reset();
    const ValueId after = p.lookup("after", 2, {a}, [](const std::vector<int>& v) { return v[0] == 3; });   // unguarded
    for (ValueId v : {carry, low, prod, after}) p.keep(v);
    return std::vector<ValueId>{op, carry, low, prod, after};
  };
  Program p, plain;
  const std::vector<ValueId> v = build(p, true);
  build(plain, false);
  const ValueId op = v[0], carry = v[1], low = v[2], prod = v[3], after = v[4];
  // Steps that fire on a token (F >= 1, from the evaluator's slots).
  auto firing = [](const Program& prog, const std::vector<int>& vals, ValueId out) {
    const MlpOp& m = std::get<MlpOp>(prog.ops()[prog.info(out).producer]);
    int n = 0;
    for (const Step& s : m.steps) {
      int F = s.bias;
      for (const Term& t : s.form) F += vals[t.v] == t.slot ? t.coef : 0;
      n += F >= 1;
    }
    return n;
  };
  Compiled c = compile(p);
  qgpu::qwen::Model model(c.checkpoint(), qgpu::qwen::Exec::Sparse);
  std::vector<int64_t> ids;
  for (int t = 0; t < static_cast<int>(p.tokens().size()); ++t) ids.push_back(c.token_id(t));
  auto st = model.new_state();
  const auto out = model.forward(st, ids, {c.num_layers()});
  Evaluator ev(p), ev_plain(plain);
  int off_firing_unguarded = 0;
  for (size_t t = 0; t < ids.size(); ++t) {
    const auto& g = ev.step(static_cast<int>(t));
    const auto& u = ev_plain.step(static_cast<int>(t));
    const int i = static_cast<int>(t / 16 % 16), j = static_cast<int>(t % 16);
    const bool on = g[op] == 2;
    EXPECT_EQ(g[carry], on ? (i + j >= 16) : 0) << t;
    EXPECT_EQ(g[low], on ? (i + j) % 16 : 0) << t;
    EXPECT_EQ(g[prod], on ? i * j % 16 : 0) << t;   // 0 is the table's most common result: its base
    EXPECT_EQ(g[after], i == 3) << t;
    EXPECT_EQ(u[carry], i + j >= 16) << t;   // unguarded: computed on every token
    EXPECT_EQ(u[low], (i + j) % 16) << t;
    EXPECT_EQ(u[prod], i * j % 16) << t;
    for (ValueId w : {carry, low, prod}) {
      if (!on) EXPECT_EQ(firing(p, g, w), 0) << t;
      if (on) EXPECT_EQ(firing(p, g, w), firing(plain, u, w)) << t;
      if (!on) off_firing_unguarded += firing(plain, u, w);
    }
    const float* res = out.residuals[0][t].data_ptr<float>();
    for (ValueId w : {carry, low, prod, after}) EXPECT_EQ(c.decode(w, res), g[w]) << "token " << t;
  }
  EXPECT_GT(off_firing_unguarded, 1000);   // what the guard spares
  // A guard is a categorical literal, and pops match pushes.
  Program q;
  const ValueId f = q.field("f", 2), s = q.scalar_field("s", 3);
  q.token("t", {{f, 0}, {s, 1}});
  EXPECT_THROW(q.push_guard({s, 1}), std::invalid_argument);
  EXPECT_THROW(q.push_guard({f, 2}), std::invalid_argument);
  EXPECT_THROW(q.pop_guard(), std::invalid_argument);
}

}  // namespace
}  // namespace circuit_test
