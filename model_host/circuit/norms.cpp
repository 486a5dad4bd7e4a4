#include "model_host/circuit/norms.h"

#include "model_host/circuit/codes.h"
#include "model_host/qwen/equations.h"

#include <cmath>
#include <stdexcept>
#include <string>
#include <utility>

namespace qgpu::circuit {

std::optional<float> exact_norm_weight(float energy, int64_t H, float eps, float level) {
  const float r = qwen::rms_scale(energy, H, eps);
  const float c0 = level / r;
  for (const float toward : {INFINITY, 0.0f}) {
    float c = c0;
    for (int k = 0; k < 8; ++k, c = std::nextafter(c, toward)) {
      const float w = c - 1.0f;
      if ((1.0f * r) * (1.0f + w) == level) return w;
    }
  }
  return std::nullopt;
}

std::optional<NormChoice> exact_norm(int energy, int64_t H, float eps) {
  for (int k = 0; k <= 20; ++k) {
    const float level = std::ldexp(1.0f, k);
    if (auto w = exact_norm_weight(static_cast<float>(energy), H, eps, level)) return NormChoice{*w, level};
  }
  return std::nullopt;
}

namespace {

// Per layer, pads[l] pad dimensions hold 1 at both its norms (set by the MLP
// before, or the embedding, and cleared by the layer's MLP unless the next
// layer keeps them), so that both squared sums, 1 + live values + pads, have
// an exact level; or with fixed energies one norm for all.
void choose_levels(NormPlan& np, const std::vector<ValueInfo>& values, const std::vector<int>& born,
                   const std::vector<int>& cleared, int L, int H, float eps, bool fixed) {
  auto live = [&](int p) { return live_at(values, born, cleared, p, false); };
  np.fixed_energy = kFixedMean * H;
  for (int l = 0; fixed && l <= L; ++l) {
    const int64_t e = 1 + live(l < L ? attn_slot(l) : kNever - 1);
    if (l < L && e != 1 + live(mlp_slot(l)))
      throw std::logic_error("circuit: layer " + std::to_string(l) + "'s norms see different energies");
    if (e > np.fixed_energy)
      budget_error("energy " + std::to_string(e) + " at layer " + std::to_string(l) + " is above " +
                   std::to_string(np.fixed_energy) + " (4096 x hidden): fewer or smaller scalars live at once");
    np.fixed_pads.push_back(four_squares(static_cast<int>(np.fixed_energy - e)));
  }
  for (int l = 0; l < L; ++l) {
    if (fixed) {
      const auto n = exact_norm(static_cast<int>(np.fixed_energy), H, eps);
      if (!n || n->level != 1.0f) throw std::logic_error("circuit: the fixed energy's norm is not the identity");
      np.attn_norm[l] = np.mlp_norm[l] = *n;
      continue;
    }
    const int ea = static_cast<int>(1 + live(attn_slot(l))), em = static_cast<int>(1 + live(mlp_slot(l)));
    int p = 0;
    std::optional<NormChoice> a, m;
    for (; p <= kMaxPads; ++p) {
      a = exact_norm(ea + p, H, eps);
      m = exact_norm(em + p, H, eps);
      if (a && m) break;
    }
    if (p > kMaxPads)
      throw std::logic_error("circuit: no exact norm level for layer " + std::to_string(l) + " (energies " +
                             std::to_string(ea) + ", " + std::to_string(em) + ")");
    np.pads[l] = p;
    np.attn_norm[l] = *a;
    np.mlp_norm[l] = *m;
  }
}

// The pads' dimensions: for each run of layers that needs pad k, the first
// dimension free over the whole run.
void place_pads(NormPlan& np, const std::vector<int>& born, const std::vector<int>& cleared,
                const std::vector<std::vector<int>>& dims, int L, int H, int usable) {
  std::vector<std::vector<std::pair<int, int>>> busy(H);   // per dimension: (born, cleared] intervals
  busy[kAnchor].push_back({-2, kNever});
  for (size_t v = 0; v < dims.size(); ++v)
    for (int d : dims[v]) busy[d].push_back({born[v], cleared[v]});
  for (int k = 0; k < kMaxPads; ++k)
    for (int a = 0; a < L; ++a) {
      if (np.pads[a] <= k || (a > 0 && np.pads[a - 1] > k)) continue;
      int b = a;
      while (b + 1 < L && np.pads[b + 1] > k) ++b;
      const int from = mlp_slot(a - 1), to = mlp_slot(b);
      int d = 1;
      for (; d < usable; ++d) {
        bool free = true;
        for (auto [lo, hi] : busy[d]) free = free && (from > hi || lo > to);
        if (free) break;
      }
      if (d == usable)
        budget_error("residual full: no free dimension for a norm pad in layers " + std::to_string(a) + ".." +
                     std::to_string(b));
      busy[d].push_back({from, to});
      for (int l = a; l <= b; ++l) np.pad_dim[k][l] = d;
    }
}

}  // namespace

NormPlan plan_norms(const std::vector<ValueInfo>& values, const std::vector<int>& born,
                    const std::vector<int>& cleared, const std::vector<std::vector<int>>& dims, int L, int H,
                    float eps, bool fixed, int usable) {
  NormPlan np;
  np.pads.assign(L, 0);
  np.attn_norm.assign(L, {});
  np.mlp_norm.assign(L, {});
  np.pad_dim.assign(kMaxPads, std::vector<int>(L, -1));
  choose_levels(np, values, born, cleared, L, H, eps, fixed);
  place_pads(np, born, cleared, dims, L, H, usable < 0 ? H : usable);
  return np;
}

}  // namespace qgpu::circuit
