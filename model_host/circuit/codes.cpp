#include "model_host/circuit/codes.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace qgpu::circuit {

void budget_error(const std::string& msg) { throw std::runtime_error("circuit: " + msg); }

std::array<int, 4> four_squares(int m) {
  auto root = [](int x) {
    int r = static_cast<int>(std::sqrt(static_cast<double>(x)));
    while (r * r > x) --r;
    while ((r + 1) * (r + 1) <= x) ++r;
    return r;
  };
  for (int a = root(m); a >= 0; --a)
    for (int b = std::min(a, root(m - a * a)); b >= 0; --b)
      for (int c = std::min(b, root(m - a * a - b * b)); c >= 0; --c) {
        const int rest = m - a * a - b * b - c * c, d = root(rest);
        if (d * d == rest && d <= c) return {a, b, c, d};
      }
  throw std::logic_error("circuit: no four squares for " + std::to_string(m));
}

std::array<int, kScalarDims> scalar_code(const ValueInfo& v, int n) {
  const int m = v.size - 1;
  const auto sq = four_squares(m * m - n * n);
  return {n, sq[0], sq[1], sq[2], sq[3]};
}

bool passes_cover(const MlpOp& m, const std::vector<ValueInfo>& values) {
  if (m.passes.empty() || m.passes.front().when.size() != 1) return false;
  const ValueId sel = m.passes.front().when.front().v;
  std::vector<bool> seen(values[sel].size, false);
  for (const Pass& ps : m.passes) {
    if (ps.when.size() != 1 || ps.when.front().v != sel || seen[ps.when.front().slot]) return false;
    seen[ps.when.front().slot] = true;
  }
  return std::find(seen.begin(), seen.end(), false) == seen.end();
}

int64_t live_at(const std::vector<ValueInfo>& values, const std::vector<int>& born, const std::vector<int>& cleared,
                int p, bool count_dims) {
  int64_t n = 0;
  for (size_t v = 0; v < values.size(); ++v)
    if (born[v] < p && p <= cleared[v]) n += count_dims ? width(values[v]) : energy(values[v]);
  return n;
}

}  // namespace qgpu::circuit
