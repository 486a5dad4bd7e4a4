// The circuit compiler's passes on their own (model_host/circuit/placement.h,
// lifetimes.h, dimensions.h, norms.h), each on a small program whose
// expected schedule is worked out by hand from the depth-slot rules: the
// embedding is slot -1, layer L's token mixer slot 2L and its MLP 2L + 1; an
// MLP op goes to the first MLP after its inputs, a memory to the first token
// mixer after them.  Emission is tested through the runtime
// (compiler_test.cpp: CircuitEmission).
#include "model_host/circuit/codes.h"
#include "model_host/circuit/dimensions.h"
#include "model_host/circuit/lifetimes.h"
#include "model_host/circuit/norms.h"
#include "model_host/circuit/placement.h"
#include "model_host/qwen/equations.h"

#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>

namespace circuit_test {
namespace {

using namespace qgpu::circuit;

// One step: out moves from slot 0 to 1 when `in` holds slot 1 (2 units).
ValueId follow(Program& p, const std::string& name, ValueId in) {
  return p.mlp(name, 2, 0, {{{{in, 1, 1}}, 0, 0, 1}});
}

MemoryOp store_of(const std::string& name, int rows, ValueId addr, ValueId data) {
  MemoryOp m;
  m.name = name;
  m.rows = rows;
  m.write_addr = m.read_addr = Operand::value(addr);
  m.write_enable = Operand::fixed(1);
  m.parts = {{data, 0}};
  return m;
}

const LayerBudget kRoomy{6144, 16, 128};

TEST(CircuitPlacement, EachOpAtTheFirstSlotAfterItsInputs) {
  Program p;
  const ValueId x = p.field("x", 4);
  for (int i = 0; i < 4; ++i) p.token("t" + std::to_string(i), {{x, i}});
  const ValueId a = follow(p, "a", x);                                     // x: slot -1 -> MLP 0 (slot 1)
  const ValueId b = follow(p, "b", a);                                     // a: slot 1 -> MLP 1 (slot 3)
  const ValueId m1 = p.memory(store_of("m1", 4, x, x)).at(0);              // x -> token mixer 0 (slot 0)
  const ValueId m2 = p.memory(store_of("m2", 2, a, x)).at(0);              // a: slot 1 -> token mixer 1 (slot 2)
  const ValueId c = p.ladder("c", 2, {{m2, 1, 1}, {m1, 1, 1}}, 0, [](int s) { return s >= 2 ? 1 : 0; });  // MLP 1
  const Placement pl = place(p, kRoomy, false, 0);
  EXPECT_EQ(pl.ready[x], -1);
  EXPECT_EQ(pl.ready[a], 1);
  EXPECT_EQ(pl.ready[b], 3);
  EXPECT_EQ(pl.ready[m1], 0);
  EXPECT_EQ(pl.ready[m2], 2);
  EXPECT_EQ(pl.ready[c], 3);
  EXPECT_EQ(pl.born, pl.ready);   // no preset memory without fixed energies or zero defaults
  EXPECT_EQ(pl.layers, 2);
  // Layer 0: the bias pair and a's step; layer 1: the bias pair, b's and c's steps.
  EXPECT_EQ(pl.units, (std::vector<int>{4, 6}));
  EXPECT_EQ(pl.heads, (std::vector<int>{1, 1}));
  EXPECT_EQ(pl.out_layer, -1);
  // With fixed energies the memories' outs are preset: born in the MLP before
  // their first layer (the embedding for layer 0).
  const Placement fixed = place(p, kRoomy, true, 5);
  EXPECT_EQ(fixed.born[m1], -1);
  EXPECT_EQ(fixed.born[m2], 1);
  EXPECT_EQ(fixed.ready[m2], 2);
  EXPECT_EQ(fixed.layers, 5);
}

TEST(CircuitPlacement, FullLayersSpillIntoTheNext) {
  Program p;
  const ValueId x = p.field("x", 2);
  p.token("t0", {{x, 0}});
  p.token("t1", {{x, 1}});
  // Six units a layer: the bias pair and two steps; the third goes to layer 1.
  const ValueId a = follow(p, "a", x), b = follow(p, "b", x), c = follow(p, "c", x);
  const Placement pl = place(p, {6, 16, 128}, false, 0);
  EXPECT_EQ(pl.ready[a], 1);
  EXPECT_EQ(pl.ready[b], 1);
  EXPECT_EQ(pl.ready[c], 3);
  EXPECT_EQ(pl.units, (std::vector<int>{6, 4}));
  // An op larger than a layer names itself.
  Program q;
  const ValueId y = q.field("y", 2);
  q.token("t", {{y, 0}});
  q.mlp("wide", 4, 0, {{{{y, 1, 1}}, 0, 0, 1}, {{{y, 1, 1}}, 0, 0, 2}, {{{y, 1, 1}}, 0, 0, 3}});
  try {
    place(q, {6, 16, 128}, false, 0);
    FAIL() << "no error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("'wide' needs 6 units"), std::string::npos) << e.what();
  }
}

TEST(CircuitPlacement, AStoreWiderThanALayerSpansLayersByWholeGroups) {
  Program p;
  const ValueId x = p.field("x", 4), y = p.field("y", 8);
  for (int i = 0; i < 8; ++i) p.token("t" + std::to_string(i), {{x, i % 4}, {y, i}});
  // 8 rows in heads of 4 rows: 2 groups of one 4-channel slice; one head a layer.
  const ValueId out = p.memory(store_of("wide", 8, y, x)).at(0);
  const Placement pl = place(p, {6144, 1, 4}, false, 0);
  const HeadPlan& plan = pl.plans.at(0);
  EXPECT_EQ(plan.groups, 2);
  EXPECT_EQ(plan.per_group(), 1);
  ASSERT_EQ(plan.pieces.size(), 2u);
  EXPECT_EQ(plan.pieces[0].layer, 0);
  EXPECT_EQ(plan.pieces[0].group0, 0);
  EXPECT_EQ(plan.pieces[1].layer, 1);
  EXPECT_EQ(plan.pieces[1].group0, 1);
  EXPECT_TRUE(plan.preset);         // written in two layers: the outs are preset
  EXPECT_EQ(pl.ready[out], 2);      // read in the last piece's token mixer
  EXPECT_EQ(pl.born[out], -1);      // preset by the embedding (first piece in layer 0)
  EXPECT_EQ(pl.op_layer.at(0), 1);
}

// A field x of 4 slots, a = follow(x), b = follow(a), b kept.
struct Chain {
  Program p;
  ValueId x, a, b;
  Chain() {
    x = p.field("x", 4);
    for (int i = 0; i < 4; ++i) p.token("t" + std::to_string(i), {{x, i}});
    a = follow(p, "a", x);
    b = follow(p, "b", a);
    p.keep(b);
  }
};

TEST(CircuitLifetimes, ValuesAreClearedInTheLayerOfTheirLastUse) {
  Chain chain;
  Program& p = chain.p;
  const ValueId x = chain.x, a = chain.a, b = chain.b;
  Placement pl = place(p, kRoomy, false, 4);
  ASSERT_EQ(pl.units, (std::vector<int>{4, 4, 2, 2}));
  const Lifetimes lt = plan_lifetimes(p, pl, kRoomy.units, true);
  EXPECT_EQ(lt.last_use[x], 1);   // read by a in MLP 0
  EXPECT_EQ(lt.last_use[a], 3);   // read by b in MLP 1
  EXPECT_EQ(lt.last_use[b], -2);  // read by nothing, but kept
  EXPECT_EQ(lt.cleared[x], 1);
  EXPECT_EQ(lt.cleared[a], 3);
  EXPECT_EQ(lt.cleared[b], kNever);
  EXPECT_EQ(lt.clears, (std::vector<std::vector<ValueId>>{{x}, {a}, {}, {}}));
  // A clear is a step per slot: x's 4 slots, a's 2.
  EXPECT_EQ(pl.units, (std::vector<int>{12, 8, 2, 2}));

  // Without reuse nothing is cleared; in a two-layer program a's clear would
  // fall in the last layer, where it frees nothing.
  Placement again = place(p, kRoomy, false, 4);
  EXPECT_EQ(plan_lifetimes(p, again, kRoomy.units, false).cleared, std::vector<int>(3, kNever));
  Placement short_pl = place(p, kRoomy, false, 0);
  ASSERT_EQ(short_pl.layers, 2);
  const Lifetimes st = plan_lifetimes(p, short_pl, kRoomy.units, true);
  EXPECT_EQ(st.cleared[x], 1);
  EXPECT_EQ(st.cleared[a], kNever);
  // A full layer pushes a clear to the next one with room.
  Placement tight = place(p, kRoomy, false, 4);
  const Lifetimes tl = plan_lifetimes(p, tight, 10, true);   // layer 0: 4 + 8 > 10
  EXPECT_EQ(tl.cleared[x], 5);   // layers 0 and 1 are full for x's 8 units: MLP 2
  EXPECT_EQ(tl.cleared[a], 3);   // layer 1 has room for a's 4
}

// drop_idle_clears: after the dimensions are allocated, a clear whose
// dimensions no later value takes is dropped, its units given back.
TEST(CircuitLifetimes, ClearsThatFreeNothingAreDropped) {
  Chain chain;
  Program& p = chain.p;
  const ValueId x = chain.x, a = chain.a, b = chain.b;
  Placement pl = place(p, kRoomy, false, 4);
  Lifetimes lt = plan_lifetimes(p, pl, kRoomy.units, true);
  ASSERT_EQ(lt.clears, (std::vector<std::vector<ValueId>>{{x}, {a}, {}, {}}));
  ASSERT_EQ(pl.units, (std::vector<int>{12, 8, 2, 2}));
  const Dimensions d = allocate_dimensions(p.values(), pl.born, lt.cleared, 16, false);
  // b (born in MLP 1) takes two of x's dimensions, cleared in MLP 0; a's,
  // cleared in MLP 1, no value takes again.
  ASSERT_EQ(d.dims[x], (std::vector<int>{1, 2, 3, 4}));
  ASSERT_EQ(d.dims[a], (std::vector<int>{5, 6}));
  ASSERT_EQ(d.dims[b], (std::vector<int>{1, 2}));
  EXPECT_EQ(drop_idle_clears(p, d.dims, pl, lt), 1);
  EXPECT_EQ(lt.cleared[x], 1);
  EXPECT_EQ(lt.cleared[a], kNever);
  EXPECT_EQ(lt.clears, (std::vector<std::vector<ValueId>>{{x}, {}, {}, {}}));
  EXPECT_EQ(pl.units, (std::vector<int>{12, 4, 2, 2}));   // a's clear: a step per slot, 2 units each
  EXPECT_EQ(drop_idle_clears(p, d.dims, pl, lt), 0);
}

ValueInfo categorical(const std::string& name, int size) { return {name, size, -1, false}; }

TEST(CircuitDimensions, IntervalsReuseTheDimensionsOfClearedValues) {
  const std::vector<ValueInfo> values{categorical("v0", 3), categorical("v1", 2), categorical("v2", 2),
                                      {"s", 16, -1, true}};
  const std::vector<int> born{-1, 1, 3, 3}, cleared{1, kNever, kNever, 5};
  const Dimensions d = allocate_dimensions(values, born, cleared, 16, false);
  EXPECT_EQ(d.dims[0], (std::vector<int>{1, 2, 3}));          // after the anchor
  EXPECT_EQ(d.dims[1], (std::vector<int>{4, 5}));             // v0 is still there at slot 1
  EXPECT_EQ(d.dims[2], (std::vector<int>{1, 2}));             // v0 is gone after slot 1
  EXPECT_EQ(d.dims[3], (std::vector<int>{3, 6, 7, 8, 9}));    // a scalar: 5 dimensions
  EXPECT_TRUE(d.fixed_pad_dims.empty());
  // Fixed energies hold dimensions 1..4 for the pads throughout.
  const Dimensions f = allocate_dimensions(values, born, cleared, 16, true);
  EXPECT_EQ(f.fixed_pad_dims, (std::vector<int>{1, 2, 3, 4}));
  EXPECT_EQ(f.dims[0], (std::vector<int>{5, 6, 7}));
  EXPECT_EQ(f.dims[2], (std::vector<int>{5, 6}));
  // Too few: the error names the value and what is live.
  try {
    allocate_dimensions(values, born, cleared, 6, false);
    FAIL() << "no error";
  } catch (const std::runtime_error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("no 5 free dimensions for 's'"), std::string::npos) << what;
    EXPECT_NE(what.find("v1 2"), std::string::npos) << what;
  }
}

TEST(CircuitNorms, FixedEnergyNormsAreTheIdentity) {
  // 4096 x 2048 = 2^23: the mean square is 4096, the scale 1/64, so (1 + w) = 64.
  const auto n = exact_norm(4096 * 2048, 2048, 1e-6f);
  ASSERT_TRUE(n.has_value());
  EXPECT_EQ(n->level, 1.0f);
  EXPECT_EQ(1.0f + n->w, 64.0f);
}

TEST(CircuitNorms, PadsMakeEveryNormExactAndTakeFreeDimensions) {
  constexpr int H = 2048;
  constexpr float eps = 1e-6f;
  // An energy (of at least 10) that no norm weight maps to a power of two.
  int bad = -1;
  for (int e = 10; e < 4000 && bad < 0; ++e)
    if (!exact_norm(e, H, eps).has_value()) bad = e;
  ASSERT_GT(bad, 0) << "every energy has an exact norm: nothing to pad";
  // Layers 0 and 1 see bad = 1 (anchor) + (bad - 1) one-slot values; layer 2 sees fewer.
  std::vector<ValueInfo> values;
  std::vector<int> born, cleared;
  for (int i = 0; i < bad - 1; ++i) {
    values.push_back(categorical("v" + std::to_string(i), 1));
    born.push_back(-1);
    cleared.push_back(i < 8 ? 3 : kNever);   // eight of them cleared in MLP 1
  }
  const Dimensions d = allocate_dimensions(values, born, cleared, H, false);
  const NormPlan np = plan_norms(values, born, cleared, d.dims, 3, H, eps, false);
  for (int l = 0; l < 3; ++l) {
    const int live = l < 2 ? bad - 1 : bad - 9;
    for (const auto& [choice, what] : {std::pair{np.attn_norm[l], "attn"}, std::pair{np.mlp_norm[l], "mlp"}}) {
      // The runtime's norm of an entry 1 with 1 + live + pads ones: exactly the level, a power of two.
      const float r = qgpu::qwen::rms_scale(static_cast<float>(1 + live + np.pads[l]), H, eps);
      EXPECT_EQ((1.0f * r) * (1.0f + choice.w), choice.level) << "layer " << l << " " << what;
      int exp = 0;
      EXPECT_EQ(std::frexp(choice.level, &exp), 0.5f) << choice.level;
    }
  }
  EXPECT_GT(np.pads[0], 0);
  EXPECT_EQ(np.pads[0], np.pads[1]);   // the same energies
  // Each pad's dimension: not the anchor, no value's, the same over a run of layers.
  for (int k = 0; k < kMaxPads; ++k)
    for (int l = 0; l < 3; ++l) {
      const int dim = np.pad_dim[k][l];
      EXPECT_EQ(dim >= 0, k < np.pads[l]) << "pad " << k << " layer " << l;
      if (dim < 0) continue;
      EXPECT_NE(dim, kAnchor);
      for (size_t v = 0; v < values.size(); ++v)
        if (cleared[v] >= mlp_slot(l - 1)) EXPECT_NE(d.dims[v][0], dim) << "pad " << k << " on value " << v;
      if (l > 0 && k < np.pads[l - 1]) EXPECT_EQ(np.pad_dim[k][l - 1], dim);
    }
}

}  // namespace
}  // namespace circuit_test
