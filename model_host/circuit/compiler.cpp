#include "model_host/circuit/compiler.h"

#include "model_host/circuit/codes.h"
#include "model_host/circuit/dimensions.h"
#include "model_host/circuit/emission.h"
#include "model_host/circuit/lifetimes.h"
#include "model_host/circuit/norms.h"
#include "model_host/circuit/placement.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>
#include <stdexcept>

namespace qgpu::circuit {

namespace {

// The output head: each output token must be told apart by its output slots.
void check_output_head(const Program& program) {
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

// Where each memory lives: its heads (layer, head) per group and slice, and
// each part's slice and channel.
MemoryLayout memory_layout_of(const Program& program, const MemoryOp& mem, const HeadPlan& plan, int head_dim) {
  const auto& values = program.values();
  MemoryLayout m;
  m.name = mem.name;
  m.rows = mem.rows;
  m.zero_default = mem.zero_default;
  m.group_rows = head_dim;
  m.groups = plan.groups;
  m.slices = plan.per_group();
  for (const auto& piece : plan.pieces)
    for (int h = 0; h < piece.groups * m.slices; ++h) m.heads.push_back({piece.layer, piece.head + h});
  m.parts.resize(mem.parts.size());
  for (size_t s = 0; s < plan.slices.size(); ++s)
    for (size_t k = 0; k < plan.slices[s].size(); ++k)
      m.parts[plan.slices[s][k]] = {static_cast<int>(s), plan.offset[s][k],
                                    values[mem.parts[plan.slices[s][k]].data].size};
  return m;
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

  int64_t vocab = options.vocab_size ? options.vocab_size
                                     : options.token_base + static_cast<int64_t>(program.tokens().size());
  if (vocab < options.token_base + static_cast<int64_t>(program.tokens().size()))
    throw std::invalid_argument("circuit: vocabulary too small for the circuit tokens");
  qwen::Config cfg = qwen::Config::qwen35_2b(1, vocab);
  const int H = static_cast<int>(cfg.hidden_size);
  const bool fixed = options.fixed_energy ||
                     std::any_of(values.begin(), values.end(), [](const ValueInfo& v) { return v.scalar; });
  const LayerBudget budget{static_cast<int>(cfg.intermediate_size), static_cast<int>(cfg.linear_num_value_heads),
                           static_cast<int>(cfg.linear_value_head_dim)};
  if (cfg.linear_num_key_heads != cfg.linear_num_value_heads || cfg.linear_key_head_dim != budget.head_dim)
    throw std::logic_error("circuit: memories need as many key heads as value heads, of equal size");
  check_output_head(program);

  // The passes: placement, lifetimes (and clears), residual dimensions, exact norms.
  Placement placement = place(program, budget, fixed, options.min_layers);
  Lifetimes lifetimes = plan_lifetimes(program, placement, budget.units, options.reuse_dims);
  const int L = placement.layers;
  Compiled out;
  if (options.free_dims < 0 || options.free_dims >= H)
    throw std::invalid_argument("circuit: free_dims must be in [0, hidden_size)");
  const int usable = H - options.free_dims;
  Dimensions dimensions = allocate_dimensions(values, placement.born, lifetimes.cleared, usable, fixed);
  // Clears that free nothing are dropped; their values then hold their
  // dimensions to the end, which leaves the norms' pads and energies less
  // room: where that makes the norms impossible, every clear is kept.
  const auto plan = [&](const Lifetimes& lt) {
    return plan_norms(values, placement.born, lt.cleared, dimensions.dims, L, H, static_cast<float>(cfg.rms_norm_eps),
                      fixed, usable);
  };
  NormPlan norms;
  if (!options.drop_idle_clears) {
    norms = plan(lifetimes);
  } else {
    Placement dropped_placement = placement;
    Lifetimes dropped = lifetimes;
    drop_idle_clears(program, dimensions.dims, dropped_placement, dropped);
    try {
      norms = plan(dropped);
      placement = std::move(dropped_placement);
      lifetimes = std::move(dropped);
    } catch (const std::runtime_error&) {
      norms = plan(lifetimes);
    }
  }

  cfg.num_hidden_layers = L;
  cfg.layer_types.assign(L, "linear_attention");
  out.checkpoint_.config = cfg;
  out.ready_ = placement.ready;
  out.infos_ = values;
  out.cleared_ = lifetimes.cleared;
  out.token_base_ = options.token_base;
  out.layers_.assign(L, {});
  const std::vector<LayerContents> contents = layer_contents(program, placement);
  for (size_t i = 0; i < ops.size(); ++i)
    if (const auto* mem = std::get_if<MemoryOp>(&ops[i]))
      out.memories_.push_back(memory_layout_of(program, *mem, placement.plans[i], budget.head_dim));
  for (int l = 0; l < L; ++l) {
    LayerUse& use = out.layers_[l];
    const int npads = fixed ? kFixedPads : norms.pads[l];
    use.dims_attn = static_cast<int>(1 + live_at(values, placement.born, lifetimes.cleared, attn_slot(l), true)) + npads;
    use.dims_mlp = static_cast<int>(1 + live_at(values, placement.born, lifetimes.cleared, mlp_slot(l), true)) + npads;
    use.pads = npads;
    use.units = placement.units[l];
    use.heads = placement.heads[l];
    use.clears = static_cast<int>(lifetimes.clears[l].size());
    use.mlp_ops = static_cast<int>(contents[l].mlp_ops.size());
    use.memory_ops = static_cast<int>(contents[l].pieces.size());
  }
  if (options.weights)
    out.checkpoint_.tensors = emit_weights(
        {program, out.checkpoint_.config, options.token_base, fixed, placement, lifetimes, dimensions, norms, contents});
  out.dims_ = std::move(dimensions.dims);
  return out;
}

}  // namespace qgpu::circuit
