#include "model_host/circuit/emission.h"

#include "model_host/circuit/codes.h"
#include "model_host/circuit/compiler.h"
#include "model_host/qwen/equations.h"
#include "model_host/qwen/matrix.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <stdexcept>
#include <string>

namespace qgpu::circuit {

std::vector<LayerContents> layer_contents(const Program& program, const Placement& pl) {
  const auto& ops = program.ops();
  std::vector<LayerContents> in(pl.layers);
  for (size_t i = 0; i < ops.size(); ++i) {
    if (std::holds_alternative<MlpOp>(ops[i])) {
      in[pl.op_layer[i]].mlp_ops.push_back(i);
      continue;
    }
    for (size_t k = 0; k < pl.plans[i].pieces.size(); ++k) in[pl.plans[i].pieces[k].layer].pieces.push_back({i, k});
    if (pl.plans[i].preset)
      for (ValueId v : std::get<MemoryOp>(ops[i]).outs) in[pl.plans[i].pieces.front().layer].presets.push_back(v);
  }
  return in;
}

namespace {

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

// Mostly-zero tensors on lazily zero-filled memory: untouched pages cost nothing.
torch::Tensor zeros(std::initializer_list<int64_t> shape) { return qwen::lazy_zeros(shape); }

class Emitter {
 public:
  explicit Emitter(const EmissionPlan& plan)
      : e_(plan),
        p_(plan.program),
        values_(plan.program.values()),
        cfg_(plan.config),
        H_(cfg_.hidden_size),
        L_(plan.placement.layers),
        heads_cap_(static_cast<int>(cfg_.linear_num_value_heads)),
        units_cap_(static_cast<int>(cfg_.intermediate_size)),
        head_dim_(static_cast<int>(cfg_.linear_value_head_dim)),
        eps_(static_cast<float>(cfg_.rms_norm_eps)) {}

  qwen::TensorMap run() {
    for (int l = 0; l < L_; ++l) {
      const std::string pre = "layers." + std::to_string(l) + ".";
      T_[pre + "input_layernorm.weight"] = torch::full({H_}, e_.norms.attn_norm[l].w);
      T_[pre + "post_attention_layernorm.weight"] = torch::full({H_}, e_.norms.mlp_norm[l].w);
      token_mixer(l, pre);
      mlp(l, pre);
    }
    embedding();
    final_norm();
    return std::move(T_);
  }

 private:
  int dim_of(ValueId v, int slot) const { return e_.dimensions.dims[v][slot]; }

  // What a value holding `slot` puts on each of its dimensions, as (dimension, entry).
  std::vector<std::pair<int, float>> code(ValueId v, int slot) const {
    std::vector<std::pair<int, float>> c;
    if (!values_[v].scalar) {
      c.push_back({dim_of(v, slot), 1.f});
    } else {
      const auto sc = scalar_code(values_[v], slot);
      for (int i = 0; i < kScalarDims; ++i)
        if (sc[i]) c.push_back({dim_of(v, i), static_cast<float>(sc[i])});
    }
    return c;
  }
  // code(v, to) - code(v, from).
  std::vector<std::pair<int, float>> move(ValueId v, int from, int to) const {
    std::vector<std::pair<int, float>> d = code(v, to);
    for (auto [dim, x] : code(v, from)) d.push_back({dim, -x});
    return d;
  }

  const ReadGains& read_gains(int parts) {
    auto found = read_gains_.find(parts);
    if (found == read_gains_.end()) found = read_gains_.emplace(parts, exact_read(parts, head_dim_, eps_)).first;
    return found->second;
  }

  void token_mixer(int l, const std::string& pre);
  void mlp(int l, const std::string& pre);
  void mlp_op(const MlpOp& m, std::vector<PlacedStep>& steps, std::vector<PlacedUnit>& singles, PlacedStep& bias_pair);
  void write_mlp(int l, const std::string& pre, const std::vector<PlacedStep>& steps,
                 const std::vector<PlacedUnit>& singles);
  void embedding();
  void final_norm();

  const EmissionPlan& e_;
  const Program& p_;
  const std::vector<ValueInfo>& values_;
  const qwen::Config& cfg_;
  const int64_t H_;
  const int L_, heads_cap_, units_cap_, head_dim_;
  const float eps_;
  std::map<int, ReadGains> read_gains_;   // by the parts a head's read row holds
  qwen::TensorMap T_;
};

// The memories' heads: keys and queries from the address bits, beta from the
// write enable, a from the reset, values through the conv's taps by age, and
// z and out_proj bringing a read row back to exactly 1 per part.
void Emitter::token_mixer(int l, const std::string& pre) {
  const auto& ops = p_.ops();
  const int64_t Q = cfg_.linear_key_dim(), V = cfg_.linear_value_dim(), conv = cfg_.linear_conv_dim();
  const float in_a = 1.0f / e_.norms.attn_norm[l].level;   // exact: a power of two
  auto qkv = zeros({conv, H_}), z = zeros({V, H_}), b = zeros({heads_cap_, H_}), a = zeros({heads_cap_, H_});
  auto conv_w = zeros({conv, 1, 4}), out_proj = zeros({H_, V});
  auto qkv_a = qkv.accessor<float, 2>(), z_a = z.accessor<float, 2>(), b_a = b.accessor<float, 2>(),
       a_a = a.accessor<float, 2>(), o_a = out_proj.accessor<float, 2>();
  auto c_a = conv_w.accessor<float, 3>();
  for (int64_t ch = 0; ch < 2 * Q; ++ch) c_a[ch][0][3] = 1.f;   // q and k: the current token only
  int used_heads = 0;
  for (auto [i, pk] : e_.contents[l].pieces) {
    const auto* mem = &std::get<MemoryOp>(ops[i]);
    const HeadPlan& plan = e_.placement.plans[i];
    const HeadPlan::Piece& piece = plan.pieces[pk];
    int head = piece.head;
    for (int g = piece.group0; g < piece.group0 + piece.groups; ++g) {
      for (size_t s = 0; s < plan.slices.size(); ++s, ++head, ++used_heads) {
        const int64_t h0 = static_cast<int64_t>(head) * head_dim_;
        address_weights(p_, mem->read_addr.bits, mem->rows, g, head_dim_, e_.dimensions.dims, qkv_a, h0, in_a);
        address_weights(p_, mem->write_addr.bits, mem->rows, g, head_dim_, e_.dimensions.dims, qkv_a, Q + h0, in_a);
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
        const ReadGains& gains = read_gains(static_cast<int>(plan.slices[s].size()));
        const float back = gains.back;
        for (size_t k = 0; k < plan.slices[s].size(); ++k) {
          const auto& part = mem->parts[plan.slices[s][k]];
          const ValueId outv = mem->outs[plan.slices[s][k]];
          for (int slot = 0; slot < values_[part.data].size; ++slot) {
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
  if (used_heads != e_.placement.heads[l])
    throw std::logic_error("circuit: head accounting out of step with placement");
  T_[pre + "linear_attn.in_proj_qkv.weight"] = qkv;
  T_[pre + "linear_attn.in_proj_z.weight"] = z;
  T_[pre + "linear_attn.in_proj_b.weight"] = b;
  T_[pre + "linear_attn.in_proj_a.weight"] = a;
  T_[pre + "linear_attn.conv1d.weight"] = conv_w;
  T_[pre + "linear_attn.out_proj.weight"] = out_proj;
  T_[pre + "linear_attn.A_log"] = zeros({heads_cap_});
  T_[pre + "linear_attn.dt_bias"] = torch::full({heads_cap_}, kDtBias);
  T_[pre + "linear_attn.norm.weight"] = torch::ones({head_dim_});
}

// One MLP op's units: its passes (singles, and a step taking a scalar's base
// back), its steps, and its base slot on the bias pair.
void Emitter::mlp_op(const MlpOp& m_, std::vector<PlacedStep>& steps, std::vector<PlacedUnit>& singles,
                     PlacedStep& bias_pair) {
  const auto* m = &m_;
  const bool scalar = values_[m->out].scalar, no_base = scalar && passes_cover(*m, values_);
  if (!no_base)
    for (const auto& e : code(m->out, m->base)) bias_pair.down.push_back(e);
  for (const Pass& ps : m->passes) {
    // Per entry x, silu(gain x - offset + G (sum of [when] - n)) [when[0]]
    // / level: x where every literal holds, -0 elsewhere.  A categorical
    // source's slot s moves the output from the base to s; a scalar's
    // entries are added, and the base taken back by a step.
    const float cut = pass_cut(values_[ps.src]);
    const Reading r = reading(values_[ps.src]);
    std::vector<std::pair<int, float>> when;
    for (const Literal& lit : ps.when) when.push_back({dim_of(lit.v, lit.slot), 1.f});
    const float bias = -r.offset - cut * static_cast<float>(when.size());
    // The largest gate: the largest entry, every literal holding.
    const double reach = r.gain * (values_[ps.src].scalar ? values_[ps.src].size - 1 : 1) - r.offset;
    auto gate = [&](int src_dim) {
      std::vector<std::pair<int, float>> g{{src_dim, r.gain}};
      for (auto [dim, c] : when) g.push_back({dim, cut});
      return g;
    };
    if (!scalar) {
      for (int s = 0; s < values_[ps.src].size; ++s)
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
    for (const auto& [v, coefs] : per_value(s.form, p_)) {
      if (values_[v].scalar) {   // the amount, on the scalar's first dimension
        if (coefs[0]) p.gate.push_back({dim_of(v, 0), static_cast<float>(coefs[0])});
        const double far = static_cast<double>(coefs[0]) * (values_[v].size - 1);
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
    p.low = static_cast<double>(p_.form_range(s.form).first) + s.bias;
    p.reach += bias;
    p.size += std::abs(bias);
    p.bias = static_cast<float>(bias);
    p.down = move(m->out, s.from, s.to);
    steps.push_back(std::move(p));
  }
}

// The MLP: the bias pair (base slots), then the steps of each op, clears,
// output copies.
void Emitter::mlp(int l, const std::string& pre) {
  const auto& ops = p_.ops();
  const NormPlan& np = e_.norms;
  std::vector<PlacedStep> steps;
  std::vector<PlacedUnit> singles;
  PlacedStep bias_pair;
  bias_pair.bias = 1;   // always fires on circuit tokens
  if (l + 1 < L_)
    for (ValueId v : e_.contents[l + 1].presets) bias_pair.down.push_back({dim_of(v, 0), 1.f});
  for (int k = 0; k < kMaxPads; ++k) {   // pads: set for the next layer, cleared after this one
    const int now = np.pad_dim[k][l], next = l + 1 < L_ ? np.pad_dim[k][l + 1] : -1;
    if (now != next && now >= 0) bias_pair.down.push_back({now, -1.f});
    if (now != next && next >= 0) bias_pair.down.push_back({next, 1.f});
  }
  for (int k = 0; e_.fixed && k < kFixedPads; ++k)   // the next boundary's integers
    if (const int delta = np.fixed_pads[l + 1][k] - np.fixed_pads[l][k])
      bias_pair.down.push_back({e_.dimensions.fixed_pad_dims[k], static_cast<float>(delta)});
  for (size_t i : e_.contents[l].mlp_ops) mlp_op(std::get<MlpOp>(ops[i]), steps, singles, bias_pair);
  for (ValueId v : e_.lifetimes.clears[l]) {
    if (values_[v].scalar) {   // silu(64 x) / 64 off each dimension
      const Reading r = reading(values_[v]);
      for (int d = 0; d < kScalarDims; ++d)
        singles.push_back({{{dim_of(v, d), r.gain}},
                           -r.offset,
                           kAnchor,
                           {{dim_of(v, d), -1.f / r.scale}},
                           r.gain * (values_[v].size - 1) - r.offset});
      continue;
    }
    for (int slot = 0; slot < values_[v].size; ++slot)
      steps.push_back({{{dim_of(v, slot), 1.f}}, 0.f, {{dim_of(v, slot), -1.f}}});
  }
  if (l == e_.placement.out_layer) {
    for (auto [f, v] : p_.output_head()) {
      for (int slot = 0; slot < values_[f].size; ++slot)   // remove the input token's own code
        steps.push_back({{{dim_of(f, slot), 1.f}}, 0.f, {{dim_of(f, slot), -1.f}}});
      for (int slot = 0; slot < values_[v].size; ++slot)
        steps.push_back({{{dim_of(v, slot), 1.f}}, 0.f, {{dim_of(f, slot), 1.f}}});
    }
  }
  steps.push_back(std::move(bias_pair));
  if (2 * static_cast<int>(steps.size()) + static_cast<int>(singles.size()) != e_.placement.units[l])
    throw std::logic_error("circuit: unit accounting out of step with placement");
  check_mlp_sums(l, steps, singles, H_, values_);
  write_mlp(l, pre, steps, singles);
}

// A step is two units with gates 256F - 96 and 256F - 160, up the anchor,
// down their difference / 64; a single unit as it is.  Divided by the norm's level.
void Emitter::write_mlp(int l, const std::string& pre, const std::vector<PlacedStep>& steps,
                        const std::vector<PlacedUnit>& singles) {
  const float in_m = 1.0f / e_.norms.mlp_norm[l].level;   // exact: a power of two
  auto gate = zeros({units_cap_, H_}), up = zeros({units_cap_, H_}), down = zeros({H_, units_cap_});
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
  T_[pre + "mlp.gate_proj.weight"] = gate;
  T_[pre + "mlp.up_proj.weight"] = up;
  T_[pre + "mlp.down_proj.weight"] = down;
}

// Embedding: the anchor, one slot per field, the presets of layer 0.
void Emitter::embedding() {
  const int64_t vocab = cfg_.vocab_size;
  auto embed = zeros({vocab, H_});
  auto e_a = embed.accessor<float, 2>();
  const auto& fields = p_.fields();
  const NormPlan& np = e_.norms;
  for (size_t t = 0; t < p_.tokens().size(); ++t) {
    const int64_t row = e_.token_base + static_cast<int64_t>(t);
    e_a[row][kAnchor] = 1.f;
    for (size_t f = 0; f < fields.size(); ++f) {
      const ValueId v = fields[f];
      const int slot = p_.tokens()[t].slots[f];
      if (!values_[v].scalar) {
        e_a[row][dim_of(v, slot)] = 1.f;
        continue;
      }
      const auto sc = scalar_code(values_[v], slot);
      for (int i = 0; i < kScalarDims; ++i) e_a[row][dim_of(v, i)] = static_cast<float>(sc[i]);
    }
    for (int k = 0; e_.fixed && k < kFixedPads; ++k)
      e_a[row][e_.dimensions.fixed_pad_dims[k]] = static_cast<float>(np.fixed_pads[0][k]);
    for (ValueId v : e_.contents[0].presets) e_a[row][dim_of(v, 0)] = 1.f;   // preset memories in layer 0
    for (int k = 0; k < np.pads[0]; ++k) e_a[row][np.pad_dim[k][0]] = 1.f;
  }
  T_["embed_tokens.weight"] = embed;
}

// Final norm: only the output fields reach the tied LM head.
void Emitter::final_norm() {
  auto final_norm = torch::full({H_}, -1.f);
  const auto& out_head = p_.output_head();
  if (!out_head.empty()) {
    const double energy =
        e_.fixed ? static_cast<double>(e_.norms.fixed_energy)
                 : 1.0 + static_cast<double>(live_at(values_, e_.placement.born, e_.lifetimes.cleared, kNever - 1, false));
    const float w = static_cast<float>(kLogitScale * std::sqrt(energy / H_ + cfg_.rms_norm_eps) - 1.0);
    for (auto [f, v] : out_head)
      for (int d : e_.dimensions.dims[f]) final_norm[d] = w;
  }
  T_["norm.weight"] = final_norm;
}

}  // namespace

qwen::TensorMap emit_weights(const EmissionPlan& plan) { return Emitter(plan).run(); }

}  // namespace qgpu::circuit
