#include "model_host/circuit/ir.h"

#include <algorithm>
#include <bit>
#include <cstdint>
#include <map>
#include <stdexcept>

namespace qgpu::circuit {

namespace {
[[noreturn]] void fail(const std::string& msg) { throw std::invalid_argument("circuit: " + msg); }
}  // namespace

ValueId Program::new_value(const std::string& name, int size, int producer, bool scalar) {
  if (size < 1) fail("value '" + name + "' needs at least one slot");
  if (scalar && size < 2) fail("scalar '" + name + "' needs a maximum of at least 1");
  values_.push_back({name, size, producer, scalar});
  return static_cast<ValueId>(values_.size() - 1);
}

const ValueInfo& Program::info(ValueId v) const {
  check_value(v, "value");
  return values_[v];
}

void Program::check_value(ValueId v, const char* what) const {
  if (v < 0 || v >= static_cast<ValueId>(values_.size()))
    fail(std::string(what) + ": no value with id " + std::to_string(v));
}

void Program::check_categorical(ValueId v, const std::string& what) const {
  check_value(v, what.c_str());
  if (values_[v].scalar) fail(what + ": '" + values_[v].name + "' is a scalar; a categorical value is needed");
}

void Program::check_operand(const Operand& o, int size, const char* what) const {
  if (o.is_value()) {
    check_categorical(o.v, what);
    if (values_[o.v].size > size)
      fail(std::string(what) + " '" + values_[o.v].name + "' has " +
           std::to_string(values_[o.v].size) + " slots, more than " + std::to_string(size));
  } else if (o.constant < 0 || o.constant >= size) {
    fail(std::string(what) + ": constant slot " + std::to_string(o.constant) + " outside [0, " +
         std::to_string(size) + ")");
  }
}

ValueId Program::add_field(const std::string& name, int size, bool scalar) {
  if (!tokens_.empty()) fail("field '" + name + "' declared after the first token");
  ValueId v = new_value(name, size, -1, scalar);
  fields_.push_back(v);
  return v;
}

ValueId Program::field(const std::string& name, int size) { return add_field(name, size, false); }

ValueId Program::scalar_field(const std::string& name, int max) { return add_field(name, max + 1, true); }

int Program::token(const std::string& name, const std::vector<std::pair<ValueId, int>>& slots) {
  Token t{name, std::vector<int>(fields_.size(), -1)};
  for (auto [f, s] : slots) {
    auto it = std::find(fields_.begin(), fields_.end(), f);
    if (it == fields_.end()) fail("token '" + name + "': value " + std::to_string(f) + " is not a field");
    if (s < 0 || s >= values_[f].size)
      fail("token '" + name + "': slot " + std::to_string(s) + " outside field '" + values_[f].name + "'");
    t.slots[it - fields_.begin()] = s;
  }
  for (size_t i = 0; i < fields_.size(); ++i)
    if (t.slots[i] < 0) fail("token '" + name + "' sets no slot of field '" + values_[fields_[i]].name + "'");
  tokens_.push_back(std::move(t));
  return static_cast<int>(tokens_.size() - 1);
}

ValueId Program::mlp(const std::string& name, int size, int base, std::vector<Step> steps,
                     std::vector<Pass> passes) {
  if (!passes.empty()) check_value(passes.front().src, ("op '" + name + "'").c_str());
  const bool scalar = !passes.empty() && values_[passes.front().src].scalar;   // the first source's kind
  return make_mlp(name, size, base, std::move(steps), scalar, std::move(passes));
}

ValueId Program::make_mlp(const std::string& name, int size, int base, std::vector<Step> steps, bool scalar,
                          std::vector<Pass> passes) {
  const std::string what = "op '" + name + "'";
  if (base < 0 || base >= size) fail(what + ": base slot outside the value");
  for (const Step& s : steps) {
    if (s.from < 0 || s.from >= size || s.to < 0 || s.to >= size || s.from == s.to)
      fail(what + ": a step moves between invalid slots");
    for (const Term& t : s.form) {
      check_term(t, what);
    }
  }
  for (const Pass& ps : passes) {
    check_value(ps.src, what.c_str());
    if (ps.when.empty()) fail(what + ": a pass without a condition");
    for (const Literal& l : ps.when) {
      check_categorical(l.v, what + ": a pass's condition");
      if (l.slot < 0 || l.slot >= values_[l.v].size) fail(what + ": a pass's slot outside its value");
    }
    if (values_[ps.src].scalar != scalar || values_[ps.src].size != size)
      fail(what + ": pass source '" + values_[ps.src].name + "' is not a " +
           (scalar ? "scalar of maximum " + std::to_string(size - 1) : "categorical value of size " + std::to_string(size)));
  }
  // One K for the op's steps, the most any of their forms reaches, so that
  // steps that shared a form (a ladder's: one form, biases apart) still do.
  for (const Literal& g : guards_) {
    int k = 0;
    for (const Step& s : steps) k = std::max(k, form_range(s.form).second + s.bias);
    if (k < 1) continue;   // no step ever fires
    for (Step& s : steps) {
      s.form.push_back({g.v, g.slot, k});
      s.bias -= k;
    }
  }
  ValueId out = new_value(name, size, static_cast<int>(ops_.size()), scalar);
  ops_.push_back(MlpOp{out, base, std::move(steps), std::move(passes), {}});
  return out;
}

void Program::push_guard(Literal l) {
  check_categorical(l.v, "a guard");
  if (l.slot < 0 || l.slot >= values_[l.v].size) fail("a guard's slot outside its value");
  guards_.push_back(l);
}

void Program::pop_guard() {
  if (guards_.empty()) fail("pop_guard without a guard");
  guards_.pop_back();
}

ValueId Program::select(const std::string& name, ValueId sel, const std::vector<ValueId>& inputs) {
  const std::string what = "select '" + name + "'";
  check_categorical(sel, what + ": the selector");
  if (static_cast<int>(inputs.size()) != values_[sel].size)
    fail(what + ": " + std::to_string(inputs.size()) + " inputs for a selector of size " +
         std::to_string(values_[sel].size));
  for (ValueId v : inputs) check_value(v, what.c_str());
  const ValueInfo& first = values_[inputs.front()];
  std::vector<Pass> passes;
  for (size_t k = 0; k < inputs.size(); ++k) passes.push_back({{{sel, static_cast<int>(k)}}, inputs[k]});
  return make_mlp(name, first.size, 0, {}, first.scalar, std::move(passes));
}

void Program::check_term(const Term& t, const std::string& what) const {
  check_value(t.v, what.c_str());
  if (values_[t.v].scalar) {
    if (t.slot != kAmount) fail(what + ": scalar '" + values_[t.v].name + "' is read by its amount");
  } else if (t.slot < 0 || t.slot >= values_[t.v].size) {
    fail(what + ": term slot outside its value");
  }
}

std::pair<int, int> Program::form_range(const std::vector<Term>& terms) const {
  // Each value holds exactly one slot: its contribution ranges over the sums
  // of the coefficients given to each of its slots (0 for slots not named).
  std::map<ValueId, std::vector<int>> per_slot;
  int lo = 0, hi = 0;
  for (const Term& t : terms) {
    check_term(t, "form");
    if (values_[t.v].scalar) {   // coef * n for n in [0, size)
      const int far = t.coef * (values_[t.v].size - 1);
      lo += std::min(0, far);
      hi += std::max(0, far);
      continue;
    }
    auto& v = per_slot[t.v];
    if (v.empty()) v.assign(values_.at(t.v).size, 0);
    v.at(t.slot) += t.coef;
  }
  for (auto& [v, coefs] : per_slot) {
    lo += *std::min_element(coefs.begin(), coefs.end());
    hi += *std::max_element(coefs.begin(), coefs.end());
  }
  return {lo, hi};
}

ValueId Program::ladder(const std::string& name, int size, const std::vector<Term>& terms, int bias,
                        const std::function<int(int)>& f) {
  return make_ladder(name, size, terms, bias, f, false);
}

ValueId Program::scalar_ladder(const std::string& name, int max, const std::vector<Term>& terms, int bias,
                               const std::function<int(int)>& f) {
  return make_ladder(name, max + 1, terms, bias, f, true);
}

ValueId Program::make_ladder(const std::string& name, int size, const std::vector<Term>& terms, int bias,
                             const std::function<int(int)>& f, bool scalar) {
  auto [lo, hi] = form_range(terms);
  lo += bias;
  hi += bias;
  auto at = [&](int s) {
    int r = f(s);
    if (r < 0 || r >= size)
      fail("ladder '" + name + "' maps " + std::to_string(s) + " to slot " + std::to_string(r) +
           " outside [0, " + std::to_string(size) + ")");
    return r;
  };
  std::vector<Step> steps;
  int prev = at(lo);
  for (int s = lo + 1; s <= hi; ++s) {
    int cur = at(s);
    // Fires iff form + bias >= s, i.e. form + (bias - s + 1) >= 1.
    if (cur != prev) steps.push_back({terms, bias - s + 1, prev, cur});
    prev = cur;
  }
  return make_mlp(name, size, at(lo), std::move(steps), scalar);
}

ValueId Program::lookup(const std::string& name, int size, const std::vector<ValueId>& inputs,
                        const std::function<int(const std::vector<int>&)>& f) {
  if (inputs.empty()) fail("lookup '" + name + "' has no inputs");
  size_t combos = 1;
  for (ValueId v : inputs) {
    check_categorical(v, "lookup '" + name + "'");
    combos *= values_[v].size;
  }
  if (combos > (1u << 20)) fail("lookup '" + name + "' has more than 2^20 input combinations");
  std::vector<int> result(combos), idx(inputs.size(), 0), count(size, 0);
  for (size_t c = 0; c < combos; ++c) {
    size_t rest = c;
    for (size_t i = 0; i < inputs.size(); ++i) {
      idx[i] = static_cast<int>(rest % values_[inputs[i]].size);
      rest /= values_[inputs[i]].size;
    }
    int r = f(idx);
    if (r < 0 || r >= size) fail("lookup '" + name + "' returns slot " + std::to_string(r) + " outside the value");
    result[c] = r;
    ++count[r];
  }
  int base = static_cast<int>(std::max_element(count.begin(), count.end()) - count.begin());
  std::vector<Step> steps;
  for (size_t c = 0; c < combos; ++c) {
    if (result[c] == base) continue;
    Step s;
    size_t rest = c;
    for (ValueId v : inputs) {
      s.form.push_back({v, static_cast<int>(rest % values_[v].size), 1});
      rest /= values_[v].size;
    }
    s.bias = 1 - static_cast<int>(inputs.size());   // all k literals hold
    s.from = base;
    s.to = result[c];
    steps.push_back(std::move(s));
  }
  return mlp(name, size, base, std::move(steps));
}

void Program::resolve_address(Address& a, int rows, const std::string& what) const {
  // Bits needed for row numbers 0..max.
  auto width = [](int max) { return max > 0 ? static_cast<int>(std::bit_width(static_cast<unsigned>(max))) : 0; };
  if (a.whole) {
    const Operand o = *a.whole;
    check_operand(o, rows, what.c_str());
    a.bits.clear();
    if (o.is_value()) {
      for (int i = 0; i < width(values_[o.v].size - 1); ++i) a.bits.push_back({o.v, i});
    } else {
      for (int i = 0; i < width(rows - 1); ++i) a.bits.push_back(AddrBit::fixed((o.constant >> i) & 1));
    }
    a.whole.reset();
    return;
  }
  if (a.bits.size() > 30) fail(what + " has " + std::to_string(a.bits.size()) + " bits");
  int64_t reach = 0;   // the highest row the bits can name
  for (size_t i = 0; i < a.bits.size(); ++i) {
    const AddrBit& b = a.bits[i];
    const std::string which = what + " bit " + std::to_string(i);
    if (b.is_value()) {
      check_categorical(b.v, which);
      if (b.bit < 0 || b.bit > 30 || (1 << b.bit) >= values_[b.v].size)
        fail(which + ": bit " + std::to_string(b.bit) + " of '" + values_[b.v].name + "' (" +
             std::to_string(values_[b.v].size) + " slots) is always 0");
    } else if (b.bit != 0 && b.bit != 1) {
      fail(which + ": a constant bit is 0 or 1, not " + std::to_string(b.bit));
    }
    if (b.is_value() || b.bit) reach += int64_t{1} << i;
  }
  if (reach >= rows)
    fail(what + " reaches row " + std::to_string(reach) + ", the store has " + std::to_string(rows) + " rows");
}

std::vector<ValueId> Program::memory(MemoryOp op) {
  if (op.rows < 1) fail("memory '" + op.name + "' needs at least one row");
  if (op.parts.empty()) fail("memory '" + op.name + "' stores nothing");
  resolve_address(op.write_addr, op.rows, "memory '" + op.name + "': write address");
  resolve_address(op.read_addr, op.rows, "memory '" + op.name + "': read address");
  check_operand(op.write_enable, 2, "write enable");
  check_operand(op.reset, 2, "reset");
  for (const auto& p : op.parts) {
    check_categorical(p.data, "memory '" + op.name + "' data");
    if (p.age < 0 || p.age > 3) fail("memory '" + op.name + "': a part is " + std::to_string(p.age) +
                                     " tokens back; the conv reaches 3");
    if (values_[p.data].size > 128) fail("memory '" + op.name + "': a part wider than one head (128)");
  }
  op.outs.clear();
  int producer = static_cast<int>(ops_.size());
  for (size_t i = 0; i < op.parts.size(); ++i)
    op.outs.push_back(new_value(op.name + ".read" + std::to_string(i), values_[op.parts[i].data].size, producer));
  std::vector<ValueId> outs = op.outs;
  ops_.push_back(std::move(op));
  return outs;
}

void Program::wait_for(size_t from, ValueId dep) {
  check_value(dep, "wait_for");
  for (size_t i = from; i < ops_.size(); ++i)
    if (auto* m = std::get_if<MlpOp>(&ops_[i]); m && (!m->steps.empty() || !m->passes.empty())) m->after.push_back(dep);
}

void Program::keep(ValueId v) {
  check_value(v, "keep");
  if (std::find(kept_.begin(), kept_.end(), v) == kept_.end()) kept_.push_back(v);
}

void Program::output(const std::vector<std::pair<ValueId, ValueId>>& field_to_value) {
  for (auto [f, v] : field_to_value) {
    if (std::find(fields_.begin(), fields_.end(), f) == fields_.end()) fail("output: value is not a field");
    check_categorical(f, "output");
    check_categorical(v, "output");
    if (values_[v].size != values_[f].size)
      fail("output: value '" + values_[v].name + "' and field '" + values_[f].name + "' differ in size");
  }
  output_ = field_to_value;
}

std::vector<ValueId> Program::inputs_of(const Op& op) const {
  std::vector<ValueId> in;
  if (const auto* m = std::get_if<MlpOp>(&op)) {
    for (const Step& s : m->steps)
      for (const Term& t : s.form) in.push_back(t.v);
    for (const Pass& ps : m->passes) {
      for (const Literal& l : ps.when) in.push_back(l.v);
      in.push_back(ps.src);
    }
    in.insert(in.end(), m->after.begin(), m->after.end());
  } else {
    const auto& mem = std::get<MemoryOp>(op);
    for (const Operand* o : {&mem.write_enable, &mem.reset})
      if (o->is_value()) in.push_back(o->v);
    for (const Address* a : {&mem.write_addr, &mem.read_addr})
      for (const AddrBit& b : a->bits)
        if (b.is_value()) in.push_back(b.v);
    for (const auto& p : mem.parts) in.push_back(p.data);
  }
  std::sort(in.begin(), in.end());
  in.erase(std::unique(in.begin(), in.end()), in.end());
  return in;
}

}  // namespace qgpu::circuit
