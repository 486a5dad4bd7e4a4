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

int drop_idle_clears(const Program& program, const std::vector<std::vector<int>>& dims, Placement& pl,
                     Lifetimes& lt) {
  const auto& values = program.values();
  const int nvalues = static_cast<int>(values.size());
  // Per dimension, the latest slot from which a value occupies it.
  std::vector<int> last_born;
  for (ValueId v = 0; v < nvalues; ++v)
    for (int d : dims[v]) {
      if (d >= static_cast<int>(last_born.size())) last_born.resize(d + 1, -2);
      last_born[d] = std::max(last_born[d], pl.born[v]);
    }
  int dropped = 0;
  for (size_t l = 0; l < lt.clears.size(); ++l) {
    std::vector<ValueId>& clears = lt.clears[l];
    auto idle = [&](ValueId v) {
      for (int d : dims[v])
        if (last_born[d] >= lt.cleared[v]) return false;   // a later value takes it
      return true;
    };
    const auto kept_end = std::stable_partition(clears.begin(), clears.end(), [&](ValueId v) { return !idle(v); });
    for (auto it = kept_end; it != clears.end(); ++it) {
      pl.units[l] -= values[*it].scalar ? kScalarDims : 2 * values[*it].size;
      lt.cleared[*it] = kNever;
      ++dropped;
    }
    clears.erase(kept_end, clears.end());
  }
  return dropped;
}

}  // namespace qgpu::circuit
