#include "model_host/circuit/placement.h"

#include <algorithm>
#include <functional>
#include <string>

namespace qgpu::circuit {

HeadPlan plan_heads(const Program& p, const MemoryOp& op, int head_dim) {
  HeadPlan plan;
  plan.groups = (op.rows + head_dim - 1) / head_dim;
  // Parts in order, or by age when ages must not share a head.
  std::vector<int> order(op.parts.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int>(i);
  if (op.split_ages)
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return op.parts[a].age < op.parts[b].age; });
  int used = head_dim;
  for (size_t k = 0; k < order.size(); ++k) {
    const int i = order[k];
    int size = p.info(op.parts[i].data).size;
    const bool new_age = op.split_ages && k > 0 && op.parts[order[k - 1]].age != op.parts[i].age;
    if (used + size > head_dim || new_age) {
      plan.slices.emplace_back();
      plan.offset.emplace_back();
      used = 0;
    }
    plan.slices.back().push_back(static_cast<int>(i));
    plan.offset.back().push_back(used);
    used += size;
  }
  return plan;
}

int mlp_units(const MlpOp& m, const std::vector<ValueInfo>& values) {
  int n = 2 * static_cast<int>(m.steps.size());
  const bool cover = passes_cover(m, values);
  for (const Pass& ps : m.passes)
    n += values[ps.src].scalar ? kScalarDims + (cover ? 0 : 2) : values[ps.src].size - 1;
  return n;
}

namespace {

// A memory op's heads into the first layers with room from `l` on: the
// whole store in one layer when it fits one, else as many whole groups per
// layer as fit.
void place_memory(Placement& pl, HeadPlan& plan, int l, int heads_cap, const std::function<void(int)>& grow) {
  if (plan.heads() <= heads_cap) {
    // The whole store in the first layer with room for it.
    for (grow(l); pl.heads[l] + plan.heads() > heads_cap; grow(++l)) {}
    plan.pieces.push_back({l, pl.heads[l], 0, plan.groups});
    pl.heads[l] += plan.heads();
  } else {
    // More heads than a layer has: as many whole groups per layer as fit.
    for (int g = 0; g < plan.groups; ++l) {
      grow(l);
      const int fit = std::min((heads_cap - pl.heads[l]) / plan.per_group(), plan.groups - g);
      if (fit == 0) continue;
      plan.pieces.push_back({l, pl.heads[l], g, fit});
      pl.heads[l] += fit * plan.per_group();
      g += fit;
    }
  }
}

}  // namespace

Placement place(const Program& program, const LayerBudget& budget, bool fixed, int min_layers) {
  const auto& values = program.values();
  const auto& ops = program.ops();
  const int units_cap = budget.units, heads_cap = budget.heads;
  Placement pl;
  pl.ready.assign(values.size(), -1);
  pl.born.assign(values.size(), -1);
  pl.op_layer.assign(ops.size(), -1);
  pl.plans.resize(ops.size());
  pl.units.assign(1, 2);   // every layer reserves its bias pair
  pl.heads.assign(1, 0);
  auto grow = [&](int layer) {
    while (static_cast<int>(pl.units.size()) <= layer) {
      pl.units.push_back(2);
      pl.heads.push_back(0);
    }
  };
  for (size_t i = 0; i < ops.size(); ++i) {
    int r = -1;
    for (ValueId v : program.inputs_of(ops[i])) r = std::max(r, pl.ready[v]);
    if (const auto* m = std::get_if<MlpOp>(&ops[i])) {
      const int need = mlp_units(*m, values);
      if (need > units_cap - 2)
        budget_error("op '" + values[m->out].name + "' needs " + std::to_string(need) + " units, a layer has " +
                     std::to_string(units_cap - 2));
      int l = first_mlp_layer_after(r);
      for (grow(l); pl.units[l] + need > units_cap; grow(++l)) {}
      pl.units[l] += need;
      pl.op_layer[i] = l;
      pl.ready[m->out] = pl.born[m->out] = mlp_slot(l);
      continue;
    }
    const auto& mem = std::get<MemoryOp>(ops[i]);
    HeadPlan& plan = pl.plans[i];
    plan = plan_heads(program, mem, budget.head_dim);
    if (plan.per_group() > heads_cap)
      budget_error("memory '" + mem.name + "' needs " + std::to_string(plan.per_group()) + " heads per group of " +
                   std::to_string(budget.head_dim) + " rows, a layer has " + std::to_string(heads_cap));
    place_memory(pl, plan, first_attn_layer_after(r), heads_cap, grow);
    // With fixed energies the outs are always preset, so that a layer's
    // two norms see the same live values (and pads).
    plan.preset = fixed || mem.zero_default || plan.pieces.size() > 1;
    const int first = plan.pieces.front().layer;
    pl.op_layer[i] = plan.pieces.back().layer;
    for (ValueId v : mem.outs) {
      pl.ready[v] = attn_slot(pl.op_layer[i]);
      pl.born[v] = !plan.preset ? pl.ready[v] : first == 0 ? -1 : mlp_slot(first - 1);
    }
  }
  int last_op_layer = 0;
  for (int l : pl.op_layer) last_op_layer = std::max(last_op_layer, l);

  // The output head's copies go into the last layer's MLP, after everything.
  const auto& out_head = program.output_head();
  if (!out_head.empty()) {
    int r = -1, out_units = 0;
    for (auto [f, v] : out_head) {
      r = std::max({r, pl.ready[v], pl.ready[f]});
      out_units += 2 * (values[f].size + values[v].size);
    }
    int& out_layer = pl.out_layer;
    out_layer = std::max(last_op_layer, first_mlp_layer_after(r));
    for (grow(out_layer); pl.units[out_layer] + out_units > units_cap; grow(++out_layer)) {}
    pl.units[out_layer] += out_units;
  }
  pl.layers = std::max({static_cast<int>(pl.units.size()), min_layers, pl.out_layer + 1, 1});
  grow(pl.layers - 1);
  return pl;
}

}  // namespace qgpu::circuit
