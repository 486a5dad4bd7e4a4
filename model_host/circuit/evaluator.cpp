#include "model_host/circuit/evaluator.h"

#include <algorithm>
#include <climits>
#include <stdexcept>
#include <string>

namespace qgpu::circuit {

Evaluator::Evaluator(const Program& program, std::vector<int> depth) : program_(program), depth_(std::move(depth)) {
  if (!depth_.empty() && depth_.size() != program.values().size())
    throw std::invalid_argument("circuit: evaluator depths do not match the program");
  for (size_t i = 0; i < program.ops().size(); ++i) order_.push_back(i);
  if (!depth_.empty())
    std::stable_sort(order_.begin(), order_.end(), [&](size_t a, size_t b) { return op_depth(a) < op_depth(b); });
  const auto& fields = program.fields();
  for (size_t t = 0; t < program.tokens().size(); ++t) {
    std::vector<int> key;
    for (auto [f, v] : program.output_head()) {
      size_t i = 0;
      while (fields[i] != f) ++i;
      key.push_back(program.tokens()[t].slots[i]);
    }
    output_tokens_.emplace(key, static_cast<int>(t));   // the first token with these slots
  }
  // Tables for the ops where reading the terms costs more than finding the
  // entry: at least 4 terms per value read, at most 2^16 combinations each,
  // 2^24 entries (64 MiB) in all.
  constexpr size_t kMaxCombinations = size_t{1} << 16;
  memo_budget_ = size_t{1} << 24;
  memo_.resize(program.ops().size());
  repeats_.resize(program.ops().size());
  auto same_form = [](const Step& a, const Step& b) {
    return std::equal(a.form.begin(), a.form.end(), b.form.begin(), b.form.end(),
                      [](const Term& x, const Term& y) { return x.v == y.v && x.slot == y.slot && x.coef == y.coef; });
  };
  for (size_t i = 0; i < program.ops().size(); ++i) {
    const auto* m = std::get_if<MlpOp>(&program.ops()[i]);
    if (!m) continue;
    repeats_[i].assign(m->steps.size(), 0);
    for (size_t k = 1; k < m->steps.size(); ++k) repeats_[i][k] = same_form(m->steps[k], m->steps[k - 1]);
    std::vector<ValueId> reads;
    size_t terms = 0;
    for (const Step& st : m->steps) {
      terms += st.form.size();
      for (const Term& t : st.form) reads.push_back(t.v);
    }
    for (const Pass& ps : m->passes)
      for (const Literal& l : ps.when) reads.push_back(l.v);
    std::sort(reads.begin(), reads.end());
    reads.erase(std::unique(reads.begin(), reads.end()), reads.end());
    if (reads.empty() || terms < 4 * reads.size()) continue;
    Memo memo;
    memo.combinations = 1;
    for (ValueId v : reads) {
      memo.sizes.push_back(program.info(v).size);
      memo.combinations *= static_cast<size_t>(memo.sizes.back());
      if (memo.combinations > kMaxCombinations) break;
    }
    if (memo.combinations > kMaxCombinations) continue;
    memo.reads = std::move(reads);
    memo_[i] = std::move(memo);
  }
}

void Evaluator::reset() {
  history_.clear();
  current_.clear();
  stores_.clear();
}

int Evaluator::operand(const Operand& o, const std::vector<int>& vals) const {
  return o.is_value() ? vals[o.v] : o.constant;
}

int Evaluator::row(const Address& a, const std::vector<int>& vals) const {
  int r = 0;
  for (size_t i = 0; i < a.bits.size(); ++i) {
    const AddrBit& b = a.bits[i];
    if (b.is_value() && vals[b.v] == kUndefined) return kUndefined;
    r |= (b.is_value() ? (vals[b.v] >> b.bit) & 1 : b.bit) << i;
  }
  return r;
}

namespace {
// Whether a value the op waits for, or a pass source (its gates read it,
// held or not), is undefined: then so is the op's result.
bool reads_undefined(const MlpOp& op, const std::vector<int>& vals) {
  for (ValueId v : op.after)
    if (vals[v] == kUndefined) return true;
  for (const Pass& ps : op.passes)
    if (vals[ps.src] == kUndefined) return true;
  return false;
}
// The result an outcome stands for: its slot, or what the held pass copies.
int result_of(int outcome, const MlpOp& op, const std::vector<int>& vals) {
  return outcome >= 0 || outcome == kUndefined ? outcome : vals[op.passes[-2 - outcome].src];
}
}  // namespace

int Evaluator::eval_mlp(size_t op_index, const MlpOp& op, const std::vector<int>& vals) const {
  if (reads_undefined(op, vals)) return kUndefined;
  return result_of(mlp_outcome(op_index, op, vals), op, vals);
}

int Evaluator::eval_mlp_memo(size_t op_index, const MlpOp& op, const std::vector<int>& vals) {
  Memo& memo = memo_[op_index];
  if (memo.reads.empty()) return eval_mlp(op_index, op, vals);
  size_t key = 0;
  for (size_t i = 0; i < memo.reads.size(); ++i) {
    const int slot = vals[memo.reads[i]];
    if (slot < 0 || slot >= memo.sizes[i]) return eval_mlp(op_index, op, vals);   // undefined
    key = key * static_cast<size_t>(memo.sizes[i]) + static_cast<size_t>(slot);
  }
  if (reads_undefined(op, vals)) return kUndefined;
  if (memo.table.empty()) {
    if (memo.combinations > memo_budget_) {
      memo.reads.clear();   // no room: evaluated directly from now on
      return eval_mlp(op_index, op, vals);
    }
    memo_budget_ -= memo.combinations;
    memo.table.assign(memo.combinations, kUnknown);
  }
  int& outcome = memo.table[key];
  if (outcome == kUnknown) outcome = mlp_outcome(op_index, op, vals);
  return result_of(outcome, op, vals);
}

int Evaluator::mlp_outcome(size_t op_index, const MlpOp& op, const std::vector<int>& vals) const {
  const std::string& name = program_.info(op.out).name;
  const Pass* held = nullptr;
  for (const Pass& ps : op.passes) {
    bool holds = true;
    for (const Literal& l : ps.when) {
      if (vals[l.v] == kUndefined) return kUndefined;
      holds = holds && vals[l.v] == l.slot;
    }
    if (!holds) continue;
    if (held) throw std::logic_error("circuit: op '" + name + "' holds two passes at once");
    held = &ps;
  }
  const int size = program_.info(op.out).size;
  std::vector<int> code(size, 0);
  code[op.base] = 1;
  bool fired = false;
  const std::vector<char>& repeats = repeats_[op_index];
  int terms = 0;   // the form's sum without the bias; a ladder's steps share it
  for (size_t k = 0; k < op.steps.size(); ++k) {
    const Step& s = op.steps[k];
    if (!repeats[k]) {
      terms = 0;
      for (const Term& t : s.form) {
        if (vals[t.v] == kUndefined) return kUndefined;
        if (t.slot == kAmount) terms += t.coef * vals[t.v];
        else if (vals[t.v] == t.slot) terms += t.coef;
      }
    }
    if (s.bias + terms >= 1) {
      --code[s.from];
      ++code[s.to];
      fired = true;
    }
  }
  if (held) {
    if (fired) throw std::logic_error("circuit: op '" + name + "' fires a step while a pass holds");
    return -2 - static_cast<int>(held - op.passes.data());
  }
  int slot = -1;
  for (int i = 0; i < size; ++i) {
    if (code[i] == 0) continue;
    if (code[i] != 1 || slot >= 0)
      throw std::logic_error("circuit: op '" + name + "' does not produce one slot");
    slot = i;
  }
  if (slot < 0) throw std::logic_error("circuit: op '" + name + "' produces no slot");
  return slot;
}

void Evaluator::eval_memory(size_t op_index, const MemoryOp& op, std::vector<int>& vals) {
  Store& store = stores_[op_index];
  if (store.rows.empty()) store.rows.assign(op.rows, {});
  const int reset = operand(op.reset, vals);
  const int we = operand(op.write_enable, vals);
  const int waddr = row(op.write_addr, vals);
  if (reset == kUndefined || we == kUndefined || (we == 1 && waddr == kUndefined)) {
    // The whole store is unknown from here on.
    store.rows.assign(op.rows, std::vector<int>(op.parts.size(), kUndefined));
  } else {
    if (reset == 1) store.rows.assign(op.rows, {});
    if (we == 1) {
      std::vector<int> record;
      for (const auto& p : op.parts) {
        if (p.age == 0) {
          record.push_back(vals[p.data]);
        } else if (static_cast<int>(history_.size()) >= p.age) {
          record.push_back(history_[history_.size() - p.age][p.data]);
        } else {
          record.push_back(kUndefined);   // before the sequence start
        }
      }
      // The read-back norm couples the parts that share a head: one unknown
      // part makes them all unknown.  Parts from before the sequence start
      // are all zero in the model (the conv window starts at zero): with
      // zero_default a record made only of them reads as a row never
      // written.  Without split_ages every part may share a head with every
      // other; with it, parts of one age are coupled (a superset of the heads
      // they share), and a head of parts from before the start reads as 0.
      auto before_start = [&](size_t i) { return static_cast<int>(history_.size()) < op.parts[i].age; };
      auto coupled = [&](size_t i, size_t j) { return !op.split_ages || op.parts[i].age == op.parts[j].age; };
      bool all_before = true;
      for (size_t i = 0; i < op.parts.size(); ++i) all_before = all_before && before_start(i);
      if (op.zero_default && all_before) {
        record.clear();
      } else {
        std::vector<int> read = record;
        for (size_t i = 0; i < op.parts.size(); ++i) {
          bool unknown = false, group_before = true;
          for (size_t j = 0; j < op.parts.size(); ++j) {
            if (!coupled(i, j)) continue;
            unknown = unknown || record[j] == kUndefined;
            group_before = group_before && before_start(j);
          }
          if (op.zero_default && group_before) read[i] = 0;
          else if (unknown) read[i] = kUndefined;
        }
        record = std::move(read);
      }
      store.rows[waddr] = std::move(record);
    }
  }
  const int raddr = row(op.read_addr, vals);
  for (size_t i = 0; i < op.outs.size(); ++i) {
    if (raddr == kUndefined) vals[op.outs[i]] = kUndefined;
    else if (!store.rows[raddr].empty()) vals[op.outs[i]] = store.rows[raddr][i];
    else vals[op.outs[i]] = op.zero_default ? 0 : kUndefined;   // never written, or reset since
  }
}

void Evaluator::advance() {
  if (!current_.empty()) {
    history_.push_back(std::move(current_));
    if (history_.size() > 3) history_.pop_front();
  }
  current_.assign(program_.values().size(), kUndefined);
}

void Evaluator::blank() { advance(); }

const std::vector<int>& Evaluator::step(int token) {
  if (token < 0 || token >= static_cast<int>(program_.tokens().size()))
    throw std::out_of_range("circuit: token " + std::to_string(token) + " is not a circuit token");
  advance();
  const auto& fields = program_.fields();
  for (size_t i = 0; i < fields.size(); ++i) current_[fields[i]] = program_.tokens()[token].slots[i];
  const auto& ops = program_.ops();
  int poisoned_after = INT_MAX;   // depth of the first undefined value on this token
  for (size_t i : order_) {
    const bool poisoned = !depth_.empty() && op_depth(i) > poisoned_after;
    if (const auto* m = std::get_if<MlpOp>(&ops[i])) {
      current_[m->out] = poisoned ? kUndefined : eval_mlp_memo(i, *m, current_);
      if (current_[m->out] == kUndefined && !depth_.empty()) poisoned_after = std::min(poisoned_after, op_depth(i));
    } else {
      const auto& mem = std::get<MemoryOp>(ops[i]);
      if (poisoned) poison_memory(i, mem, current_);
      else eval_memory(i, mem, current_);
      for (ValueId v : mem.outs)
        if (current_[v] == kUndefined && !depth_.empty()) poisoned_after = std::min(poisoned_after, op_depth(i));
    }
  }
  return current_;
}

int Evaluator::op_depth(size_t op_index) const {
  const Op& op = program_.ops()[op_index];
  const ValueId out = std::holds_alternative<MlpOp>(op) ? std::get<MlpOp>(op).out : std::get<MemoryOp>(op).outs[0];
  return depth_[out];
}

void Evaluator::poison_memory(size_t op_index, const MemoryOp& op, std::vector<int>& vals) {
  Store& store = stores_[op_index];
  if (store.rows.empty()) store.rows.assign(op.rows, {});
  const int reset = operand(op.reset, vals), we = operand(op.write_enable, vals), waddr = row(op.write_addr, vals);
  const std::vector<int> unknown(op.parts.size(), kUndefined);
  if (reset == 0 && we == 0) {
    // Nothing is written.
  } else if (reset == 0 && we == 1 && waddr != kUndefined) {
    store.rows[waddr] = unknown;
  } else {
    store.rows.assign(op.rows, unknown);
  }
  for (ValueId v : op.outs) vals[v] = kUndefined;
}

int Evaluator::emitted() const {
  std::vector<int> key;
  for (auto [f, v] : program_.output_head()) {
    if (current_.empty() || current_[v] == kUndefined) return -1;
    key.push_back(current_[v]);
  }
  auto it = output_tokens_.find(key);
  return it == output_tokens_.end() ? -1 : it->second;
}

}  // namespace qgpu::circuit
