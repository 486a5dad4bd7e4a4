#include "model_host/circuit/lifetimes.h"

#include <algorithm>

namespace qgpu::circuit {

Lifetimes plan_lifetimes(const Program& program, Placement& pl, int units_cap, bool reuse_dims) {
  const auto& values = program.values();
  const auto& ops = program.ops();
  const int nvalues = static_cast<int>(values.size());
  const int L = pl.layers;
  Lifetimes lt;
  lt.last_use.assign(nvalues, -2);
  for (size_t i = 0; i < ops.size(); ++i) {
    const int slot = std::holds_alternative<MlpOp>(ops[i]) ? mlp_slot(pl.op_layer[i]) : attn_slot(pl.op_layer[i]);
    for (ValueId v : program.inputs_of(ops[i])) lt.last_use[v] = std::max(lt.last_use[v], slot);
  }
  lt.cleared.assign(nvalues, kNever);
  std::vector<bool> pinned(nvalues, false);
  for (ValueId v : program.kept()) pinned[v] = true;
  for (auto [f, v] : program.output_head()) pinned[f] = pinned[v] = true;
  lt.clears.assign(L, {});
  if (!reuse_dims) return lt;
  for (ValueId v = 0; v < nvalues; ++v) {
    if (pinned[v]) continue;
    int l = lt.last_use[v] >= 0 ? lt.last_use[v] / 2 : first_mlp_layer_after(pl.ready[v]);
    // A step per slot (a categorical value), or a unit per dimension (a scalar).
    const int need = values[v].scalar ? kScalarDims : 2 * values[v].size;
    while (l < L - 1 && pl.units[l] + need > units_cap) ++l;
    if (l >= L - 1) continue;   // clearing in the last layer frees nothing
    pl.units[l] += need;
    lt.clears[l].push_back(v);
    lt.cleared[v] = mlp_slot(l);
  }
  return lt;
}

}  // namespace qgpu::circuit
