#include "model_host/circuit/dimensions.h"

#include "model_host/circuit/codes.h"

#include <algorithm>
#include <map>
#include <string>
#include <utility>

namespace qgpu::circuit {

namespace {

// Names what fills the residual when value v finds no room, largest groups
// (by name prefix) first.
[[noreturn]] void residual_full(const std::vector<ValueInfo>& values, const std::vector<int>& born,
                                const std::vector<int>& cleared, const std::vector<std::vector<int>>& dims, ValueId v) {
  std::map<std::string, int> groups;
  for (ValueId u = 0; u < static_cast<ValueId>(values.size()); ++u)
    if (!dims[u].empty() && born[u] < born[v] + 1 && born[v] <= cleared[u])
      groups[values[u].name.substr(0, values[u].name.find('.'))] += width(values[u]);
  std::vector<std::pair<int, std::string>> by_size;
  for (const auto& [name, n] : groups) by_size.push_back({n, name});
  std::sort(by_size.rbegin(), by_size.rend());
  std::string live_list;
  for (size_t i = 0; i < by_size.size() && i < 40; ++i)
    live_list += (i ? ", " : "") + by_size[i].second + " " + std::to_string(by_size[i].first);
  budget_error("residual full: no " + std::to_string(width(values[v])) + " free dimensions for '" + values[v].name +
               "' at depth slot " + std::to_string(born[v]) + "; live: " + live_list);
}

}  // namespace

Dimensions allocate_dimensions(const std::vector<ValueInfo>& values, const std::vector<int>& born,
                               const std::vector<int>& cleared, int H, bool fixed) {
  const int nvalues = static_cast<int>(values.size());
  Dimensions out;
  out.dims.assign(nvalues, {});
  std::vector<int> order(nvalues);
  for (int v = 0; v < nvalues; ++v) order[v] = v;
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return born[a] < born[b]; });
  std::vector<int> busy_until(H, -2);   // slot of the clear of the dimension's last occupant
  busy_until[kAnchor] = kNever;
  if (fixed)
    for (int k = 1; k <= kFixedPads; ++k) {
      busy_until[k] = kNever;
      out.fixed_pad_dims.push_back(k);
    }
  for (ValueId v : order) {
    for (int d = 0; d < H && static_cast<int>(out.dims[v].size()) < width(values[v]); ++d)
      if (busy_until[d] < born[v]) out.dims[v].push_back(d);
    if (static_cast<int>(out.dims[v].size()) < width(values[v])) residual_full(values, born, cleared, out.dims, v);
    for (int d : out.dims[v]) busy_until[d] = cleared[v];
  }
  return out;
}

}  // namespace qgpu::circuit
