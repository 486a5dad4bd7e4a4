#include "model_host/circuit/compiler.h"

#include "model_host/qwen/equations.h"
#include "model_host/qwen/matrix.h"

#include <algorithm>
#include <array>
#include <climits>
#include <cmath>
#include <map>
#include <optional>
#include <sstream>
#include <stdexcept>

namespace qgpu::circuit {

namespace {

constexpr int kNever = INT_MAX;
constexpr int kAnchor = 0;   // residual dimension of the anchor

// Depth slots: the embedding is -1, layer L's token mixer 2L, its MLP 2L+1.
int attn_slot(int layer) { return 2 * layer; }
int mlp_slot(int layer) { return 2 * layer + 1; }
// First layer whose MLP (or token mixer) comes after slot r.
int first_mlp_layer_after(int r) { return r < 0 ? 0 : r / 2 + (r % 2); }
int first_attn_layer_after(int r) { return r < 0 ? 0 : r / 2 + 1; }

[[noreturn]] void budget_error(const std::string& msg) { throw std::runtime_error("circuit: " + msg); }

// How a memory op's parts are laid into heads: slices of at most one head's
// channels, repeated for every group of 128 rows; groups placed in layers.
struct HeadPlan {
  // Consecutive groups in one layer, their heads from `head` on.
  struct Piece {
    int layer, head, group0, groups;
  };
  std::vector<std::vector<int>> slices;   // part indices per slice
  std::vector<std::vector<int>> offset;   // channel offset of each part in its slice
  int groups = 1;
  std::vector<Piece> pieces;              // in layer order
  // The outs hold slot 0 from the MLP before the first layer (or the
  // embedding) on, and a read row moves them: a zero-default store, or a
  // store whose groups write the outs in several layers.
  bool preset = false;
  int per_group() const { return static_cast<int>(slices.size()); }
  int heads() const { return groups * per_group(); }
};

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

// Weights of the key (or query) channels of one head of group g (rows
// g * head_dim.., channels from `base` on) into `w`, times `scale` (the
// inverse of the norm's level).  The channel of row r is
// silu(256 s - (256 n - 128)), where n is the number of values the address
// bits draw from and s the sum of the slots of those values that agree with
// r's bits: s = n (all agree) gives 128, any other s at most -128, which SiLU
// turns into exactly 0.  Rows whose constant bits differ from the address's,
// or that no slot combination names, get no weights (their channel is 0).
void address_weights(const Program& p, const std::vector<AddrBit>& bits, int rows, int g, int head_dim,
                     const std::vector<std::vector<int>>& dims, torch::TensorAccessor<float, 2> w, int64_t base,
                     float scale) {
  std::vector<ValueId> involved;
  for (const AddrBit& b : bits)
    if (b.is_value() && std::find(involved.begin(), involved.end(), b.v) == involved.end()) involved.push_back(b.v);
  const int n = static_cast<int>(bits.size());
  std::vector<std::pair<ValueId, int>> agree;   // (value, slot) for the row at hand
  for (int c = 0; c < head_dim; ++c) {
    const int64_t r = static_cast<int64_t>(g) * head_dim + c;
    if (r >= rows || (r >> n) != 0) break;
    bool named = true;
    for (int i = 0; i < n && named; ++i)
      named = bits[i].is_value() || bits[i].bit == ((r >> i) & 1);
    agree.clear();
    for (size_t k = 0; k < involved.size() && named; ++k) {
      const ValueId v = involved[k];
      const size_t before = agree.size();
      for (int s = 0; s < p.info(v).size; ++s) {
        bool ok = true;
        for (int i = 0; i < n && ok; ++i)
          ok = bits[i].v != v || ((s >> bits[i].bit) & 1) == ((r >> i) & 1);
        if (ok) agree.push_back({v, s});
      }
      named = agree.size() > before;
    }
    if (!named) continue;
    for (auto [v, s] : agree) w[base + c][dims[v][s]] = kSlotGain * scale;
    w[base + c][kAnchor] = (kKeyLevel - kSlotGain * static_cast<float>(involved.size())) * scale;
  }
}

// A form's coefficients per value and slot (0 for the slots it does not
// name; a scalar's one coefficient, of its amount), values in order of
// first appearance.
std::vector<std::pair<ValueId, std::vector<int>>> per_value(const std::vector<Term>& form, const Program& p) {
  std::vector<std::pair<ValueId, std::vector<int>>> out;
  for (const Term& t : form) {
    const ValueInfo& info = p.info(t.v);
    auto it = std::find_if(out.begin(), out.end(), [&](const auto& e) { return e.first == t.v; });
    if (it == out.end()) it = out.insert(out.end(), {t.v, std::vector<int>(info.scalar ? 1 : info.size, 0)});
    it->second[info.scalar ? 0 : t.slot] += t.coef;
  }
  return out;
}

// ---- Scalars (docs/circuit.md, section 1).  A scalar of maximum m holding n
// occupies 5 dimensions: n, then four integers whose squares sum to m^2 -
// n^2 (Lagrange's four squares), so its energy is m^2 whatever n is.

// The lexicographically largest a >= b >= c >= d >= 0 with a^2 + b^2 + c^2 + d^2 = m.
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

constexpr int kScalarDims = 5;
int width(const ValueInfo& v) { return v.scalar ? kScalarDims : v.size; }
int64_t energy(const ValueInfo& v) { return v.scalar ? int64_t{v.size - 1} * (v.size - 1) : 1; }
// What a scalar holding n puts in its dimensions.
std::array<int, kScalarDims> scalar_code(const ValueInfo& v, int n) {
  const int m = v.size - 1;
  const auto sq = four_squares(m * m - n * n);
  return {n, sq[0], sq[1], sq[2], sq[3]};
}

// With fixed energies every norm's squared sum is exactly 4096 H = 2^23:
// the mean is then 4096, and eps (1e-6) is below half an ulp of 4096, so the
// scale is exactly 1/64 and (1 + w) = 64 maps every entry to itself,
// integers beyond 1 included (every partial sum of the squares is an integer
// below 2^24, exact in any order).  kFixedPads dimensions hold integers that
// make up the rest.
constexpr int64_t kFixedMean = 4096;
constexpr int kFixedPads = 4;

// The coefficient most of a value's slots share (0 among equals).  A value
// holds exactly one slot, so subtracting it from every slot's coefficient
// and adding it to the bias leaves the form's value unchanged on every valid
// input, while only the slots that differ from it keep a weight: a literal
// that holds on most slots ("kind is not D") weighs the few that falsify it.
// Fewer weights mean fewer MLP rows that a residual entry reaches, which is
// what the sparse executor pays for.
int most_common(const std::vector<int>& coefs) {
  std::map<int, int> count;
  for (int c : coefs) ++count[c];
  int best = 0, best_count = count[0];
  for (auto [c, n] : count)
    if (n > best_count) {
      best = c;
      best_count = n;
    }
  return best;
}

// An MLP step in placed form: weights on residual dimensions.
struct PlacedStep {
  std::vector<std::pair<int, float>> gate;   // dim -> coefficient of F (anchor carries the bias)
  float bias = 0;
  std::vector<std::pair<int, float>> down;   // dim -> output when the step fires
  // For the exactness check (check_mlp_sums): the largest F, the largest
  // sum of |coefficient x entry| over the gate's terms and the bias, and
  // the op the step belongs to (-1: the layer's own bias pair, a clear).
  double reach = 1, size = 1;
  ValueId op = -1;
  double low = 1;   // the least F (a ladder's steps share their form and differ by bias)
};

// One SwiGLU unit on its own, silu(gate . x + bias) x[up], spread by its down
// weights: the passes and the clears of scalars (docs/circuit.md, section 2).
// In residual units; the emission divides by the norm's level.
struct PlacedUnit {
  std::vector<std::pair<int, float>> gate;
  float bias = 0;
  int up = kAnchor;
  std::vector<std::pair<int, float>> down;
  double reach = 1;   // the largest gate (where every literal holds)
  ValueId op = -1;
};

// Whether the down row of dimension d, which the steps of one ladder `op`
// (one form, F = phi + bias) and steps that always fire with F = 1 (the bias
// pair) write, sums exactly in the runtime's lane scheme (the dense
// product's order, and the sparse one's above its exactness bound) for
// every value phi of the form: the products computed in fp32 as the runtime
// does, summed by qwen::lane_dot, against their exact sum.
bool ladder_row_exact(int d, ValueId op, const std::vector<PlacedStep>& steps) {
  std::vector<int32_t> units;
  std::vector<float> w(2 * steps.size(), 0.0f), act(2 * steps.size(), 0.0f);
  std::vector<double> bias(steps.size(), 0.0);
  double lo = 0, hi = 0;
  bool first = true;
  for (size_t k = 0; k < steps.size(); ++k)
    for (auto [dim, c] : steps[k].down) {
      if (dim != d) continue;
      if (steps[k].op == op) {
        if (first) {
          lo = steps[k].low - steps[k].bias;
          hi = steps[k].reach - steps[k].bias;
          first = false;
        }
      } else if (!(steps[k].gate.empty() && steps[k].bias == 1)) {
        return false;   // another input-dependent writer
      }
      units.push_back(static_cast<int32_t>(2 * k));
      units.push_back(static_cast<int32_t>(2 * k + 1));
      w[2 * k] += c / kStepLevel;
      w[2 * k + 1] -= c / kStepLevel;
    }
  std::sort(units.begin(), units.end());
  units.erase(std::unique(units.begin(), units.end()), units.end());
  if (hi - lo > (1 << 20)) return false;
  for (double phi = lo; phi <= hi; ++phi) {
    double exact = 0;
    for (int32_t u : units) {
      const PlacedStep& s = steps[u / 2];
      const double F = s.op == op ? phi + s.bias : 1.0;
      const float gate = static_cast<float>(kStepGain * F - (u % 2 ? kStepOffHi : kStepOffLo));
      act[u] = qgpu::qwen::silu(gate);
      exact += static_cast<double>(w[u]) * act[u];
    }
    if (static_cast<double>(qgpu::qwen::lane_dot(w.data(), act.data(), units.data(), units.data() + units.size())) != exact)
      return false;
  }
  return true;
}

// The MLP of layer `l` computes every sum exactly when its steps' gates
// stay below 2^24 (integers) and, per residual dimension, the products its
// units may add there sum below 2^23 in magnitude (multiples of 1/2: a
// step's two units add (4F - 1.5) c and -(4F - 2.5) c): then every partial
// sum is representable, in any order.  A ladder's row above that bound (a
// scalar ladder: its steps' products grow with F) is exact when the lane
// scheme's sum is, for every value of its form (ladder_row_exact; the
// runtime's sparse product sums such a row in that scheme too).  Throws
// naming the dimension's largest writer otherwise.
void check_mlp_sums(int l, const std::vector<PlacedStep>& steps, const std::vector<PlacedUnit>& singles, int64_t H,
                    const std::vector<ValueInfo>& values) {
  auto name = [&](ValueId v) { return v >= 0 ? "'" + values[v].name + "'" : std::string("the layer's bias pair or clears"); };
  std::vector<double> total(H, 0.0), largest(H, 0.0);
  std::vector<ValueId> who(H, -1);
  auto add = [&](int d, double magnitude, ValueId op) {
    total[d] += magnitude;
    if (magnitude > largest[d]) {
      largest[d] = magnitude;
      who[d] = op;
    }
  };
  for (const PlacedStep& s : steps) {
    const double gate = kStepGain * s.size + kStepOffHi;
    if (gate >= 0x1p24)
      budget_error("layer " + std::to_string(l) + ": a step of " + name(s.op) + " has gates up to " +
                   std::to_string(static_cast<int64_t>(gate)) + ", beyond 2^24 where fp32 integers are exact");
    const double pair =
        (std::max(0.0, kStepGain * s.reach - kStepOffLo) + std::max(0.0, kStepGain * s.reach - kStepOffHi)) / kStepLevel;
    for (auto [d, c] : s.down) add(d, pair * std::fabs(c), s.op);
  }
  for (const PlacedUnit& u : singles)
    for (auto [d, c] : u.down) add(d, std::max(0.0, u.reach) * std::fabs(c), u.op);
  std::vector<bool> single_writes(H, false);
  for (const PlacedUnit& u : singles)
    for (auto [d, c] : u.down) single_writes[d] = true;
  for (int64_t d = 0; d < H; ++d)
    if (total[d] >= 0x1p23 && (single_writes[d] || !ladder_row_exact(static_cast<int>(d), who[d], steps)))
      budget_error("layer " + std::to_string(l) + ": the MLP may add up to " +
                   std::to_string(static_cast<int64_t>(total[d])) + " in magnitude to residual dimension " +
                   std::to_string(d) + " (most from " + name(who[d]) +
                   "); its sums are exact only below 2^23 (docs/circuit.md, section 4)");
}

// How a pass (or a clear) reads one dimension x of a code: its gate is
// gain x - offset, SiLU is the identity on it where x is not 0, and down
// divides by `scale`.  A scalar's entries are any integers >= 0: gain 64,
// no offset (silu(64 x) == 64 x, and 0 gives 0), an error in x passes at
// gain 1.  A categorical entry is 0 or 1: gain 1120 and offset 96, so a 1
// gives exactly 1024 and a 0 gives -96, where SiLU gives -0 and the sparse
// executor skips the row (an error in x passes at gain 1120/1024).
struct Reading {
  float gain, offset, scale;
};
Reading reading(const ValueInfo& v) { return v.scalar ? Reading{64.f, 0.f, 64.f} : Reading{1120.f, 96.f, 1024.f}; }

// A pass's cut weight G over its source: the least power of two from 128
// with gain x - offset - G <= -96 for every entry x of the source's code,
// so a pass with a literal that is false has gates of -96 or below.
float pass_cut(const ValueInfo& src) {
  const int top = src.scalar ? src.size - 1 : 1;   // a scalar's entries: n and the four integers, all <= max
  const Reading r = reading(src);
  float g = 128.f;
  while (r.gain * static_cast<float>(top) - r.offset - g > -96.f) g *= 2.f;
  return g;
}

// Whether an op's passes each hold on one slot of the same value, every slot
// once: exactly one then holds on every token, so the base is never the result.
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

// Units of an MLP op: two per step, and per pass: for a categorical source
// one per slot but the base (each moves the output from the base to its
// slot); for a scalar one per dimension, and a step taking the base back
// unless the passes cover a value.
int mlp_units(const MlpOp& m, const std::vector<ValueInfo>& values) {
  int n = 2 * static_cast<int>(m.steps.size());
  const bool cover = passes_cover(m, values);
  for (const Pass& ps : m.passes)
    n += values[ps.src].scalar ? kScalarDims + (cover ? 0 : 2) : values[ps.src].size - 1;
  return n;
}

// ---- Exact fp32 levels (docs/circuit.md, section 4).  Every residual entry
// of a circuit token is exactly 0 or 1, so each layer's norm sees a squared
// sum known at compile time, E; its (1 + w) is chosen so that the runtime's
// fp32 norm maps 1 to exactly a power of two, the norm's level, and the
// weights reading the normed input are divided by that level (exactly).

struct NormChoice {
  float w = 0;        // the stored norm weight: (1 + w) in fp32 is the factor
  float level = 1;    // what an entry 1 becomes, exactly
};

// The norm weight that maps 1 to exactly `level` when the squared sum is
// `energy`, as the runtime computes (x * r) * (1 + w); none if no fp32 one does.
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

// The smallest power-of-two level (from 1 on) that a norm of squared sum
// `energy` can give exactly.
std::optional<NormChoice> exact_norm(int energy, int64_t H, float eps) {
  for (int k = 0; k <= 20; ++k) {
    const float level = std::ldexp(1.0f, k);
    if (auto w = exact_norm_weight(static_cast<float>(energy), H, eps, level)) return NormChoice{*w, level};
  }
  return std::nullopt;
}

// The z gain and out_proj weight of a head whose read row holds `parts`
// active channels, each kStoredLevel: the runtime computes the channel as
// S^T q = kStoredLevel * q (q = 1 / sqrt(head_dim) on the row's key), the
// gated head norm (o * r) * 1 (norm weight 1), times silu(z) = z, times the
// out_proj weight; the gain pair makes that exactly 1.
struct ReadGains {
  float z = kZGain, back = 0;
};
ReadGains exact_read(int parts, int64_t head_dim, float eps) {
  const float q = (kKeyLevel * qwen::l2norm_scale(kKeyLevel * kKeyLevel)) * qwen::query_scale(head_dim);
  const float o = kStoredLevel * q;
  const float sum = static_cast<float>(parts) * (o * o);
  if (static_cast<double>(o) * o * parts != static_cast<double>(sum))
    throw std::logic_error("circuit: a read row's squared sum is not exact in fp32");
  const float a = 1.0f * (o * qwen::rms_scale(sum, head_dim, eps));
  for (float z = kZGain; z < 2 * kZGain; z = std::nextafter(z, INFINITY)) {
    if (qwen::silu(z) != z) continue;
    const float b = a * qwen::silu(z);
    for (const float toward : {INFINITY, 0.0f}) {
      float back = 1.0f / b;
      for (int k = 0; k < 4; ++k, back = std::nextafter(back, toward))
        if (b * back == 1.0f) return {z, back};
    }
  }
  throw std::logic_error("circuit: no z gain makes a read of " + std::to_string(parts) + " parts exact");
}

}  // namespace

std::vector<int> MemoryLayout::read(int row, const std::function<torch::Tensor(int)>& state, float tol) const {
  if (row < 0 || row >= rows)
    throw std::out_of_range("circuit: memory '" + name + "' has no row " + std::to_string(row));
  std::vector<int> slots;
  for (const Part& part : parts) {
    const Head& h = head(row / group_rows, part.slice);
    const torch::Tensor S = state(h.layer).contiguous();
    if (S.dim() != 3 || S.size(0) <= h.head || S.size(1) != group_rows || S.size(2) < part.channel + part.size)
      throw std::invalid_argument("circuit: memory '" + name + "': the state of layer " + std::to_string(h.layer) +
                                  " does not have the compiled head shape");
    const float* ch = S.data_ptr<float>() + (h.head * S.size(1) + row % group_rows) * S.size(2) + part.channel;
    int slot = -1, hot = 0;
    bool clean = true;
    for (int x = 0; x < part.size; ++x) {
      const float y = ch[x] / kStoredLevel;
      if (std::fabs(y - 1.f) <= tol) {
        slot = x;
        ++hot;
      } else if (std::fabs(y) > tol) {
        clean = false;
      }
    }
    if (!clean || hot > 1) slots.push_back(-1);
    else if (hot == 0) slots.push_back(zero_default ? 0 : -1);
    else slots.push_back(slot);
  }
  return slots;
}

const MemoryLayout& Compiled::memory_layout(const std::string& name) const {
  const MemoryLayout* found = nullptr;
  for (const MemoryLayout& m : memories_) {
    if (m.name != name) continue;
    if (found) throw std::invalid_argument("circuit: two memories are named '" + name + "'");
    found = &m;
  }
  if (!found) throw std::out_of_range("circuit: no memory named '" + name + "'");
  return *found;
}

int Compiled::capture_index(ValueId v) const {
  const int r = ready_.at(v);
  const int layer = r < 0 ? 0 : r / 2 + 1;          // first layer boundary after slot r
  if (layer > num_layers()) return -1;
  const int boundary = attn_slot(layer);            // the residual entering `layer`
  return cleared_.at(v) >= boundary ? layer : -1;
}

int Compiled::decode(ValueId v, const float* residual, float tol) const {
  int slot = -1;
  const auto& d = dims_.at(v);
  if (infos_.at(v).scalar) {
    const float n = std::nearbyint(residual[d[0]]);
    if (std::fabs(residual[d[0]] - n) > tol || n < 0 || n >= infos_[v].size) return -1;
    const auto code = scalar_code(infos_[v], static_cast<int>(n));
    for (int i = 1; i < kScalarDims; ++i)
      if (std::fabs(residual[d[i]] - static_cast<float>(code[i])) > tol) return -1;
    return static_cast<int>(n);
  }
  for (size_t i = 0; i < d.size(); ++i) {
    float x = residual[d[i]];
    if (std::fabs(x - 1.f) <= tol) {
      if (slot >= 0) return -1;
      slot = static_cast<int>(i);
    } else if (std::fabs(x) > tol) {
      return -1;
    }
  }
  return slot;
}

std::string Compiled::report() const {
  const auto& c = checkpoint_.config;
  std::ostringstream os;
  os << "layer  units/" << c.intermediate_size << "  heads/" << c.linear_num_value_heads << "  dims(attn,mlp)/"
     << c.hidden_size << "  mlp-ops  memories  clears\n";
  int units = 0, heads = 0, peak = 0, pads = 0;
  for (size_t l = 0; l < layers_.size(); ++l) {
    const LayerUse& u = layers_[l];
    char line[160];
    std::snprintf(line, sizeof line, "%5zu  %10d  %8d  %8d,%-6d  %7d  %8d  %6d\n", l, u.units, u.heads, u.dims_attn,
                  u.dims_mlp, u.mlp_ops, u.memory_ops, u.clears);
    os << line;
    units += u.units;
    heads += u.heads;
    peak = std::max({peak, u.dims_attn, u.dims_mlp});
    pads += u.pads;
  }
  os << "total  " << units << " units, " << heads << " heads, peak " << peak << " dims, " << layers_.size()
     << " layers";
  if (pads) os << ", " << pads << " norm pads";
  os << "\n";
  return os.str();
}

Compiled compile(const Program& program, const Options& options) {
  const auto& values = program.values();
  const auto& ops = program.ops();
  const int nvalues = static_cast<int>(values.size());

  int64_t vocab = options.vocab_size ? options.vocab_size
                                     : options.token_base + static_cast<int64_t>(program.tokens().size());
  if (vocab < options.token_base + static_cast<int64_t>(program.tokens().size()))
    throw std::invalid_argument("circuit: vocabulary too small for the circuit tokens");
  qwen::Config cfg = qwen::Config::qwen35_2b(1, vocab);
  const int H = static_cast<int>(cfg.hidden_size);
  const bool fixed = options.fixed_energy ||
                     std::any_of(values.begin(), values.end(), [](const ValueInfo& v) { return v.scalar; });
  const int units_cap = static_cast<int>(cfg.intermediate_size);
  const int heads_cap = static_cast<int>(cfg.linear_num_value_heads);
  const int head_dim = static_cast<int>(cfg.linear_value_head_dim);
  if (cfg.linear_num_key_heads != cfg.linear_num_value_heads || cfg.linear_key_head_dim != head_dim)
    throw std::logic_error("circuit: memories need as many key heads as value heads, of equal size");

  // The output head: each output token must be told apart by its output slots.
  {
    std::map<std::vector<int>, int> seen;
    const auto& fields = program.fields();
    for (size_t t = 0; t < program.tokens().size(); ++t) {
      std::vector<int> key;
      for (auto [f, v] : program.output_head())
        key.push_back(program.tokens()[t].slots[std::find(fields.begin(), fields.end(), f) - fields.begin()]);
      if (program.output_head().empty()) break;
      auto [it, fresh] = seen.emplace(key, static_cast<int>(t));
      if (!fresh)
        throw std::invalid_argument("circuit: tokens '" + program.tokens()[it->second].name + "' and '" +
                                    program.tokens()[t].name + "' look the same to the output head");
    }
  }

  // ---- Placement: each op at the first layer after its inputs with room.
  // ready: the depth slot that produces a value; born: from when it occupies
  // its dimensions (earlier than ready only for the outs of preset memories).
  std::vector<int> ready(nvalues, -1), born(nvalues, -1), op_layer(ops.size(), -1);
  std::vector<HeadPlan> plans(ops.size());
  std::vector<int> units(1, 2), heads(1, 0);   // every layer reserves its bias pair
  auto grow = [&](int layer) {
    while (static_cast<int>(units.size()) <= layer) {
      units.push_back(2);
      heads.push_back(0);
    }
  };
  for (size_t i = 0; i < ops.size(); ++i) {
    int r = -1;
    for (ValueId v : program.inputs_of(ops[i])) r = std::max(r, ready[v]);
    if (const auto* m = std::get_if<MlpOp>(&ops[i])) {
      const int need = mlp_units(*m, values);
      if (need > units_cap - 2)
        budget_error("op '" + values[m->out].name + "' needs " + std::to_string(need) + " units, a layer has " +
                     std::to_string(units_cap - 2));
      int l = first_mlp_layer_after(r);
      for (grow(l); units[l] + need > units_cap; grow(++l)) {}
      units[l] += need;
      op_layer[i] = l;
      ready[m->out] = born[m->out] = mlp_slot(l);
    } else {
      const auto& mem = std::get<MemoryOp>(ops[i]);
      HeadPlan& plan = plans[i];
      plan = plan_heads(program, mem, head_dim);
      if (plan.per_group() > heads_cap)
        budget_error("memory '" + mem.name + "' needs " + std::to_string(plan.per_group()) + " heads per group of " +
                     std::to_string(head_dim) + " rows, a layer has " + std::to_string(heads_cap));
      int l = first_attn_layer_after(r);
      if (plan.heads() <= heads_cap) {
        // The whole store in the first layer with room for it.
        for (grow(l); heads[l] + plan.heads() > heads_cap; grow(++l)) {}
        plan.pieces.push_back({l, heads[l], 0, plan.groups});
        heads[l] += plan.heads();
      } else {
        // More heads than a layer has: as many whole groups per layer as fit.
        for (int g = 0; g < plan.groups; ++l) {
          grow(l);
          const int fit = std::min((heads_cap - heads[l]) / plan.per_group(), plan.groups - g);
          if (fit == 0) continue;
          plan.pieces.push_back({l, heads[l], g, fit});
          heads[l] += fit * plan.per_group();
          g += fit;
        }
      }
      // With fixed energies the outs are always preset, so that a layer's
      // two norms see the same live values (and pads).
      plan.preset = fixed || mem.zero_default || plan.pieces.size() > 1;
      const int first = plan.pieces.front().layer;
      op_layer[i] = plan.pieces.back().layer;
      for (ValueId v : mem.outs) {
        ready[v] = attn_slot(op_layer[i]);
        born[v] = !plan.preset ? ready[v] : first == 0 ? -1 : mlp_slot(first - 1);
      }
    }
  }
  int last_op_layer = 0;
  for (int l : op_layer) last_op_layer = std::max(last_op_layer, l);

  // The output head's copies go into the last layer's MLP, after everything.
  const auto& out_head = program.output_head();
  int out_layer = -1, out_units = 0;
  if (!out_head.empty()) {
    int r = -1;
    for (auto [f, v] : out_head) {
      r = std::max({r, ready[v], ready[f]});
      out_units += 2 * (values[f].size + values[v].size);
    }
    out_layer = std::max(last_op_layer, first_mlp_layer_after(r));
    for (grow(out_layer); units[out_layer] + out_units > units_cap; grow(++out_layer)) {}
    units[out_layer] += out_units;
  }
  const int L = std::max({static_cast<int>(units.size()), options.min_layers, out_layer + 1, 1});
  grow(L - 1);

  // ---- Lifetimes and clears.
  std::vector<int> last_use(nvalues, -2);
  for (size_t i = 0; i < ops.size(); ++i) {
    const int slot = std::holds_alternative<MlpOp>(ops[i]) ? mlp_slot(op_layer[i]) : attn_slot(op_layer[i]);
    for (ValueId v : program.inputs_of(ops[i])) last_use[v] = std::max(last_use[v], slot);
  }
  std::vector<int> cleared(nvalues, kNever);
  std::vector<bool> pinned(nvalues, false);
  for (ValueId v : program.kept()) pinned[v] = true;
  for (auto [f, v] : out_head) pinned[f] = pinned[v] = true;
  std::vector<std::vector<ValueId>> clears(L);
  if (options.reuse_dims) {
    for (ValueId v = 0; v < nvalues; ++v) {
      if (pinned[v]) continue;
      int l = last_use[v] >= 0 ? last_use[v] / 2 : first_mlp_layer_after(ready[v]);
      // A step per slot (a categorical value), or a unit per dimension (a scalar).
      const int need = values[v].scalar ? kScalarDims : 2 * values[v].size;
      while (l < L - 1 && units[l] + need > units_cap) ++l;
      if (l >= L - 1) continue;   // clearing in the last layer frees nothing
      units[l] += need;
      clears[l].push_back(v);
      cleared[v] = mlp_slot(l);
    }
  }

  // ---- Residual dimensions: interval allocation by production slot.
  Compiled out;
  out.dims_.assign(nvalues, {});
  std::vector<int> order(nvalues);
  for (int v = 0; v < nvalues; ++v) order[v] = v;
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return born[a] < born[b]; });
  std::vector<int> busy_until(H, -2);   // slot of the clear of the dimension's last occupant
  busy_until[kAnchor] = kNever;
  std::vector<int> fixed_pad_dims;   // with fixed energies: dimensions 1..kFixedPads, throughout
  if (fixed)
    for (int k = 1; k <= kFixedPads; ++k) {
      busy_until[k] = kNever;
      fixed_pad_dims.push_back(k);
    }
  for (ValueId v : order) {
    for (int d = 0; d < H && static_cast<int>(out.dims_[v].size()) < width(values[v]); ++d)
      if (busy_until[d] < born[v]) out.dims_[v].push_back(d);
    if (static_cast<int>(out.dims_[v].size()) < width(values[v])) {
      // Name what fills the residual there, largest groups first (by name prefix).
      std::map<std::string, int> groups;
      for (ValueId u = 0; u < nvalues; ++u)
        if (!out.dims_[u].empty() && born[u] < born[v] + 1 && born[v] <= cleared[u])
          groups[values[u].name.substr(0, values[u].name.find('.'))] += width(values[u]);
      std::vector<std::pair<int, std::string>> by_size;
      for (const auto& [name, n] : groups) by_size.push_back({n, name});
      std::sort(by_size.rbegin(), by_size.rend());
      std::string live_list;
      for (size_t i = 0; i < by_size.size() && i < 40; ++i)
        live_list += (i ? ", " : "") + by_size[i].second + " " + std::to_string(by_size[i].first);
      budget_error("residual full: no " + std::to_string(width(values[v])) + " free dimensions for '" +
                   values[v].name + "' at depth slot " + std::to_string(born[v]) + "; live: " + live_list);
    }
    for (int d : out.dims_[v]) busy_until[d] = cleared[v];
  }

  // The live values entering depth slot p: their dimensions, or their
  // energy (1 for a one-hot, m^2 for a scalar of maximum m).
  auto live = [&](int p, bool count_dims) {
    int64_t n = 0;
    for (ValueId v = 0; v < nvalues; ++v)
      if (born[v] < p && p <= cleared[v]) n += count_dims ? width(values[v]) : energy(values[v]);
    return n;
  };

  // ---- Exact norms.  Per layer, pads[l] pad dimensions hold 1 at both its
  // norms (set by the MLP before, or the embedding, and cleared by the layer's
  // MLP unless the next layer keeps them), so that both squared sums,
  // 1 + live values + pads, have an exact level.
  constexpr int kMaxPads = 4;
  const float eps = static_cast<float>(cfg.rms_norm_eps);
  std::vector<int> pads(L, 0);
  std::vector<NormChoice> attn_norm(L), mlp_norm(L);
  // With fixed energies: per layer boundary (L: the final norm) the pads'
  // integers, and one norm for all.
  std::vector<std::array<int, 4>> fixed_pads;
  const int64_t fixed_energy = kFixedMean * H;
  for (int l = 0; fixed && l <= L; ++l) {
    const int64_t e = 1 + live(l < L ? attn_slot(l) : kNever - 1, false);
    if (l < L && e != 1 + live(mlp_slot(l), false))
      throw std::logic_error("circuit: layer " + std::to_string(l) + "'s norms see different energies");
    if (e > fixed_energy)
      budget_error("energy " + std::to_string(e) + " at layer " + std::to_string(l) + " is above " +
                   std::to_string(fixed_energy) + " (4096 x hidden): fewer or smaller scalars live at once");
    fixed_pads.push_back(four_squares(static_cast<int>(fixed_energy - e)));
  }
  for (int l = 0; l < L; ++l) {
    if (fixed) {
      const auto n = exact_norm(static_cast<int>(fixed_energy), H, eps);
      if (!n || n->level != 1.0f) throw std::logic_error("circuit: the fixed energy's norm is not the identity");
      attn_norm[l] = mlp_norm[l] = *n;
      continue;
    }
    const int ea = static_cast<int>(1 + live(attn_slot(l), false)), em = static_cast<int>(1 + live(mlp_slot(l), false));
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
    pads[l] = p;
    attn_norm[l] = *a;
    mlp_norm[l] = *m;
  }
  // Pad k occupies one dimension over each run of layers [a, b] with
  // pads > k: from the MLP of layer a - 1 (the embedding for a = 0) to the
  // MLP of layer b.  pad_dim[k][l] is its dimension in layer l, or -1.
  std::vector<std::vector<int>> pad_dim(kMaxPads, std::vector<int>(L, -1));
  {
    std::vector<std::vector<std::pair<int, int>>> busy(H);   // per dimension: (born, cleared] intervals
    busy[kAnchor].push_back({-2, kNever});
    for (ValueId v = 0; v < nvalues; ++v)
      for (int d : out.dims_[v]) busy[d].push_back({born[v], cleared[v]});
    for (int k = 0; k < kMaxPads; ++k)
      for (int a = 0; a < L; ++a) {
        if (pads[a] <= k || (a > 0 && pads[a - 1] > k)) continue;
        int b = a;
        while (b + 1 < L && pads[b + 1] > k) ++b;
        const int from = mlp_slot(a - 1), to = mlp_slot(b);
        int d = 1;
        for (; d < H; ++d) {
          bool free = true;
          for (auto [lo, hi] : busy[d]) free = free && (from > hi || lo > to);
          if (free) break;
        }
        if (d == H)
          budget_error("residual full: no free dimension for a norm pad in layers " + std::to_string(a) + ".." +
                       std::to_string(b));
        busy[d].push_back({from, to});
        for (int l = a; l <= b; ++l) pad_dim[k][l] = d;
      }
  }

  // ---- Emission.
  cfg.num_hidden_layers = L;
  cfg.layer_types.assign(L, "linear_attention");
  qwen::TensorMap& T = out.checkpoint_.tensors;
  out.checkpoint_.config = cfg;
  out.ready_ = ready;
  out.infos_ = values;
  out.cleared_ = cleared;
  out.token_base_ = options.token_base;
  const int64_t Q = cfg.linear_key_dim(), V = cfg.linear_value_dim(), conv = cfg.linear_conv_dim();
  // Mostly-zero tensors on lazily zero-filled memory: untouched pages cost nothing.
  auto zeros = [](std::initializer_list<int64_t> shape) { return qwen::lazy_zeros(shape); };
  auto dim_of = [&](ValueId v, int slot) { return out.dims_[v][slot]; };
  out.layers_.assign(L, {});

  // Per layer: its MLP ops, its memory pieces (op, piece index), and the
  // outs of the preset memories whose first layer it is.
  std::vector<std::vector<size_t>> ops_in(L);
  std::vector<std::vector<std::pair<size_t, size_t>>> pieces_in(L);
  std::vector<std::vector<ValueId>> presets(L);
  for (size_t i = 0; i < ops.size(); ++i) {
    if (std::holds_alternative<MlpOp>(ops[i])) {
      ops_in[op_layer[i]].push_back(i);
      continue;
    }
    for (size_t k = 0; k < plans[i].pieces.size(); ++k) pieces_in[plans[i].pieces[k].layer].push_back({i, k});
    if (plans[i].preset)
      for (ValueId v : std::get<MemoryOp>(ops[i]).outs) presets[plans[i].pieces.front().layer].push_back(v);
  }

  // Memory layouts.
  for (size_t i = 0; i < ops.size(); ++i) {
    const auto* mem = std::get_if<MemoryOp>(&ops[i]);
    if (!mem) continue;
    const HeadPlan& plan = plans[i];
    MemoryLayout m;
    m.name = mem->name;
    m.rows = mem->rows;
    m.zero_default = mem->zero_default;
    m.group_rows = head_dim;
    m.groups = plan.groups;
    m.slices = plan.per_group();
    for (const auto& piece : plan.pieces)
      for (int h = 0; h < piece.groups * m.slices; ++h) m.heads.push_back({piece.layer, piece.head + h});
    m.parts.resize(mem->parts.size());
    for (size_t s = 0; s < plan.slices.size(); ++s)
      for (size_t k = 0; k < plan.slices[s].size(); ++k)
        m.parts[plan.slices[s][k]] = {static_cast<int>(s), plan.offset[s][k],
                                      values[mem->parts[plan.slices[s][k]].data].size};
    out.memories_.push_back(std::move(m));
  }

  for (int l = 0; l < L; ++l) {
    LayerUse& use = out.layers_[l];
    const int npads = fixed ? kFixedPads : pads[l];
    use.dims_attn = static_cast<int>(1 + live(attn_slot(l), true)) + npads;
    use.dims_mlp = static_cast<int>(1 + live(mlp_slot(l), true)) + npads;
    use.pads = npads;
    use.units = units[l];
    use.heads = heads[l];
    use.clears = static_cast<int>(clears[l].size());
    use.mlp_ops = static_cast<int>(ops_in[l].size());
    use.memory_ops = static_cast<int>(pieces_in[l].size());
  }
  if (!options.weights) return out;

  std::map<int, ReadGains> read_gains;   // by the parts a head's read row holds
  for (int l = 0; l < L; ++l) {
    const std::string pre = "layers." + std::to_string(l) + ".";
    T[pre + "input_layernorm.weight"] = torch::full({H}, attn_norm[l].w);
    T[pre + "post_attention_layernorm.weight"] = torch::full({H}, mlp_norm[l].w);
    const float in_a = 1.0f / attn_norm[l].level, in_m = 1.0f / mlp_norm[l].level;   // exact: powers of two

    // Token mixer.
    auto qkv = zeros({conv, H}), z = zeros({V, H}), b = zeros({heads_cap, H}), a = zeros({heads_cap, H});
    auto conv_w = zeros({conv, 1, 4}), out_proj = zeros({H, V});
    auto qkv_a = qkv.accessor<float, 2>(), z_a = z.accessor<float, 2>(), b_a = b.accessor<float, 2>(),
         a_a = a.accessor<float, 2>(), o_a = out_proj.accessor<float, 2>();
    auto c_a = conv_w.accessor<float, 3>();
    for (int64_t ch = 0; ch < 2 * Q; ++ch) c_a[ch][0][3] = 1.f;   // q and k: the current token only
    int used_heads = 0;
    for (auto [i, pk] : pieces_in[l]) {
      const auto* mem = &std::get<MemoryOp>(ops[i]);
      const HeadPlan& plan = plans[i];
      const HeadPlan::Piece& piece = plan.pieces[pk];
      int head = piece.head;
      for (int g = piece.group0; g < piece.group0 + piece.groups; ++g) {
        for (size_t s = 0; s < plan.slices.size(); ++s, ++head, ++used_heads) {
          const int64_t h0 = static_cast<int64_t>(head) * head_dim;
          address_weights(program, mem->read_addr.bits, mem->rows, g, head_dim, out.dims_, qkv_a, h0, in_a);
          address_weights(program, mem->write_addr.bits, mem->rows, g, head_dim, out.dims_, qkv_a, Q + h0, in_a);
          if (mem->write_enable.is_value()) {
            b_a[head][dim_of(mem->write_enable.v, 1)] = kBetaGain * in_a;
            b_a[head][dim_of(mem->write_enable.v, 0)] = -kBetaGain * in_a;
          } else {
            b_a[head][kAnchor] = (mem->write_enable.constant ? kBetaGain : -kBetaGain) * in_a;
          }
          if (mem->reset.is_value()) a_a[head][dim_of(mem->reset.v, 1)] = kResetGain * in_a;
          else if (mem->reset.constant) a_a[head][kAnchor] = kResetGain * in_a;
          // Values: each part one-hot, through conv tap 3 - age.  A read row
          // holds one active channel per part at kStoredLevel; the z gain and
          // out_proj weight bring each back to exactly 1.
          const int parts_here = static_cast<int>(plan.slices[s].size());
          auto found = read_gains.find(parts_here);
          if (found == read_gains.end()) found = read_gains.emplace(parts_here, exact_read(parts_here, head_dim, eps)).first;
          const ReadGains& gains = found->second;
          const float back = gains.back;
          for (size_t k = 0; k < plan.slices[s].size(); ++k) {
            const auto& part = mem->parts[plan.slices[s][k]];
            const ValueId outv = mem->outs[plan.slices[s][k]];
            for (int slot = 0; slot < values[part.data].size; ++slot) {
              const int64_t ch = h0 + plan.offset[s][k] + slot;
              qkv_a[2 * Q + ch][dim_of(part.data, slot)] = kValueGain * in_a;
              qkv_a[2 * Q + ch][kAnchor] = -kSlotOffset * in_a;
              c_a[2 * Q + ch][0][3 - part.age] = 1.f;
              z_a[ch][kAnchor] = gains.z * in_a;
              if (!plan.preset) {
                o_a[dim_of(outv, slot)][ch] = back;
              } else if (slot > 0) {   // moves the preset slot 0 to `slot`
                o_a[dim_of(outv, slot)][ch] = back;
                o_a[dim_of(outv, 0)][ch] = -back;
              }
            }
          }
        }
      }
    }
    if (used_heads != heads[l]) throw std::logic_error("circuit: head accounting out of step with placement");
    T[pre + "linear_attn.in_proj_qkv.weight"] = qkv;
    T[pre + "linear_attn.in_proj_z.weight"] = z;
    T[pre + "linear_attn.in_proj_b.weight"] = b;
    T[pre + "linear_attn.in_proj_a.weight"] = a;
    T[pre + "linear_attn.conv1d.weight"] = conv_w;
    T[pre + "linear_attn.out_proj.weight"] = out_proj;
    T[pre + "linear_attn.A_log"] = zeros({heads_cap});
    T[pre + "linear_attn.dt_bias"] = torch::full({heads_cap}, kDtBias);
    T[pre + "linear_attn.norm.weight"] = torch::ones({head_dim});

    // MLP: the bias pair (base slots), then the steps of each op, clears, output copies.
    std::vector<PlacedStep> steps;
    std::vector<PlacedUnit> singles;
    PlacedStep bias_pair;
    bias_pair.bias = 1;   // always fires on circuit tokens
    if (l + 1 < L)
      for (ValueId v : presets[l + 1]) bias_pair.down.push_back({dim_of(v, 0), 1.f});
    for (int k = 0; k < kMaxPads; ++k) {   // pads: set for the next layer, cleared after this one
      const int now = pad_dim[k][l], next = l + 1 < L ? pad_dim[k][l + 1] : -1;
      if (now != next && now >= 0) bias_pair.down.push_back({now, -1.f});
      if (now != next && next >= 0) bias_pair.down.push_back({next, 1.f});
    }
    for (int k = 0; fixed && k < kFixedPads; ++k)   // the next boundary's integers
      if (const int delta = fixed_pads[l + 1][k] - fixed_pads[l][k])
        bias_pair.down.push_back({fixed_pad_dims[k], static_cast<float>(delta)});
    // What a value holding `slot` puts on each of its dimensions, as (dimension, entry).
    auto code = [&](ValueId v, int slot) {
      std::vector<std::pair<int, float>> c;
      if (!values[v].scalar) {
        c.push_back({dim_of(v, slot), 1.f});
      } else {
        const auto sc = scalar_code(values[v], slot);
        for (int i = 0; i < kScalarDims; ++i)
          if (sc[i]) c.push_back({dim_of(v, i), static_cast<float>(sc[i])});
      }
      return c;
    };
    // code(v, to) - code(v, from).
    auto move = [&](ValueId v, int from, int to) {
      std::vector<std::pair<int, float>> d = code(v, to);
      for (auto [dim, x] : code(v, from)) d.push_back({dim, -x});
      return d;
    };
    for (size_t i : ops_in[l]) {
      const auto* m = &std::get<MlpOp>(ops[i]);
      const bool scalar = values[m->out].scalar, no_base = scalar && passes_cover(*m, values);
      if (!no_base)
        for (const auto& e : code(m->out, m->base)) bias_pair.down.push_back(e);
      for (const Pass& ps : m->passes) {
        // Per entry x, silu(gain x - offset + G (sum of [when] - n)) [when[0]]
        // / level: x where every literal holds, -0 elsewhere.  A categorical
        // source's slot s moves the output from the base to s; a scalar's
        // entries are added, and the base taken back by a step.
        const float cut = pass_cut(values[ps.src]);
        const Reading r = reading(values[ps.src]);
        std::vector<std::pair<int, float>> when;
        for (const Literal& lit : ps.when) when.push_back({dim_of(lit.v, lit.slot), 1.f});
        const float bias = -r.offset - cut * static_cast<float>(when.size());
        // The largest gate: the largest entry, every literal holding.
        const double reach = r.gain * (values[ps.src].scalar ? values[ps.src].size - 1 : 1) - r.offset;
        auto gate = [&](int src_dim) {
          std::vector<std::pair<int, float>> g{{src_dim, r.gain}};
          for (auto [dim, c] : when) g.push_back({dim, cut});
          return g;
        };
        if (!scalar) {
          for (int s = 0; s < values[ps.src].size; ++s)
            if (s != m->base)
              singles.push_back({gate(dim_of(ps.src, s)), bias, when.front().first,
                                 {{dim_of(m->out, s), 1.f / r.scale}, {dim_of(m->out, m->base), -1.f / r.scale}},
                                 reach, m->out});
          continue;
        }
        for (int d = 0; d < kScalarDims; ++d)
          singles.push_back({gate(dim_of(ps.src, d)), bias, when.front().first, {{dim_of(m->out, d), 1.f / r.scale}},
                             reach, m->out});
        if (!no_base) {   // the conjunction as a step's form: sum of the literals - (n - 1)
          const double n = static_cast<double>(when.size());
          PlacedStep back{when, 1.f - static_cast<float>(when.size()), {}, 1, 2 * n - 1, m->out};
          for (auto [dim, x] : code(m->out, m->base)) back.down.push_back({dim, -x});
          steps.push_back(std::move(back));
        }
      }
      for (const Step& s : m->steps) {
        PlacedStep p;
        p.op = m->out;
        p.reach = p.size = 0;
        int bias = s.bias;
        for (const auto& [v, coefs] : per_value(s.form, program)) {
          if (values[v].scalar) {   // the amount, on the scalar's first dimension
            if (coefs[0]) p.gate.push_back({dim_of(v, 0), static_cast<float>(coefs[0])});
            const double far = static_cast<double>(coefs[0]) * (values[v].size - 1);
            p.reach += std::max(0.0, far);
            p.size += std::fabs(far);
            continue;
          }
          const int k = most_common(coefs);
          bias += k;
          for (int slot = 0; slot < static_cast<int>(coefs.size()); ++slot)
            if (coefs[slot] != k) p.gate.push_back({dim_of(v, slot), static_cast<float>(coefs[slot] - k)});
          // One slot holds: the term is one of coefs[slot] - k.
          double top = 0, widest = 0;
          for (int c : coefs) {
            top = std::max(top, static_cast<double>(c - k));
            widest = std::max(widest, std::fabs(static_cast<double>(c - k)));
          }
          p.reach += top;
          p.size += widest;
        }
        p.low = static_cast<double>(program.form_range(s.form).first) + s.bias;
        p.reach += bias;
        p.size += std::abs(bias);
        p.bias = static_cast<float>(bias);
        p.down = move(m->out, s.from, s.to);
        steps.push_back(std::move(p));
      }
    }
    for (ValueId v : clears[l]) {
      if (values[v].scalar) {   // silu(64 x) / 64 off each dimension
        const Reading r = reading(values[v]);
        for (int d = 0; d < kScalarDims; ++d)
          singles.push_back({{{dim_of(v, d), r.gain}},
                             -r.offset,
                             kAnchor,
                             {{dim_of(v, d), -1.f / r.scale}},
                             r.gain * (values[v].size - 1) - r.offset});
        continue;
      }
      for (int slot = 0; slot < values[v].size; ++slot)
        steps.push_back({{{dim_of(v, slot), 1.f}}, 0.f, {{dim_of(v, slot), -1.f}}});
    }
    if (l == out_layer) {
      for (auto [f, v] : out_head) {
        for (int slot = 0; slot < values[f].size; ++slot)   // remove the input token's own code
          steps.push_back({{{dim_of(f, slot), 1.f}}, 0.f, {{dim_of(f, slot), -1.f}}});
        for (int slot = 0; slot < values[v].size; ++slot)
          steps.push_back({{{dim_of(v, slot), 1.f}}, 0.f, {{dim_of(f, slot), 1.f}}});
      }
    }
    steps.push_back(std::move(bias_pair));
    if (2 * static_cast<int>(steps.size()) + static_cast<int>(singles.size()) != units[l])
      throw std::logic_error("circuit: unit accounting out of step with placement");
    check_mlp_sums(l, steps, singles, H, values);
    auto gate = zeros({units_cap, H}), up = zeros({units_cap, H}), down = zeros({H, units_cap});
    auto g_a = gate.accessor<float, 2>(), u_a = up.accessor<float, 2>(), d_a = down.accessor<float, 2>();
    for (size_t k = 0; k < steps.size(); ++k) {
      const PlacedStep& s = steps[k];
      const int64_t ua = 2 * k, ub = 2 * k + 1;
      for (auto [d, c] : s.gate) {
        g_a[ua][d] += kStepGain * c * in_m;
        g_a[ub][d] += kStepGain * c * in_m;
      }
      g_a[ua][kAnchor] += (kStepGain * s.bias - kStepOffLo) * in_m;
      g_a[ub][kAnchor] += (kStepGain * s.bias - kStepOffHi) * in_m;
      u_a[ua][kAnchor] = in_m;
      u_a[ub][kAnchor] = in_m;
      for (auto [d, c] : s.down) {
        d_a[d][ua] += c / kStepLevel;
        d_a[d][ub] -= c / kStepLevel;
      }
    }
    for (size_t k = 0; k < singles.size(); ++k) {
      const PlacedUnit& s = singles[k];
      const int64_t u = 2 * static_cast<int64_t>(steps.size()) + static_cast<int64_t>(k);
      for (auto [d, c] : s.gate) g_a[u][d] += c * in_m;
      g_a[u][kAnchor] += s.bias * in_m;
      u_a[u][s.up] = in_m;
      for (auto [d, c] : s.down) d_a[d][u] += c;
    }
    T[pre + "mlp.gate_proj.weight"] = gate;
    T[pre + "mlp.up_proj.weight"] = up;
    T[pre + "mlp.down_proj.weight"] = down;
  }

  // Embedding: the anchor, one slot per field, the presets of layer 0.
  auto embed = zeros({vocab, H});
  auto e_a = embed.accessor<float, 2>();
  const auto& fields = program.fields();
  for (size_t t = 0; t < program.tokens().size(); ++t) {
    const int64_t row = options.token_base + static_cast<int64_t>(t);
    e_a[row][kAnchor] = 1.f;
    for (size_t f = 0; f < fields.size(); ++f) {
      const ValueId v = fields[f];
      const int slot = program.tokens()[t].slots[f];
      if (!values[v].scalar) {
        e_a[row][dim_of(v, slot)] = 1.f;
        continue;
      }
      const auto sc = scalar_code(values[v], slot);
      for (int i = 0; i < kScalarDims; ++i) e_a[row][dim_of(v, i)] = static_cast<float>(sc[i]);
    }
    for (int k = 0; fixed && k < kFixedPads; ++k) e_a[row][fixed_pad_dims[k]] = static_cast<float>(fixed_pads[0][k]);
    for (ValueId v : presets[0]) e_a[row][dim_of(v, 0)] = 1.f;   // preset memories in layer 0
    for (int k = 0; k < pads[0]; ++k) e_a[row][pad_dim[k][0]] = 1.f;
  }
  T["embed_tokens.weight"] = embed;
  // Final norm: only the output fields reach the tied LM head.
  auto final_norm = torch::full({H}, -1.f);
  if (!out_head.empty()) {
    const double energy = fixed ? static_cast<double>(fixed_energy) : 1.0 + static_cast<double>(live(kNever - 1, false));
    const float w = static_cast<float>(kLogitScale * std::sqrt(energy / H + cfg.rms_norm_eps) - 1.0);
    for (auto [f, v] : out_head)
      for (int d : out.dims_[f]) final_norm[d] = w;
  }
  T["norm.weight"] = final_norm;

  return out;
}

}  // namespace qgpu::circuit
