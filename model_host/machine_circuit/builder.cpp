#include "model_host/machine_circuit/builder.h"

#include "model_host/machine/isa.h"

#include <algorithm>
#include <stdexcept>

namespace qgpu::gpu::mc {

std::vector<ValueId> store(Builder& b, const std::string& name, int rows, std::vector<AddrBit> waddr,
                           std::vector<AddrBit> raddr, ValueId we, ValueId reset,
                           std::vector<MemoryOp::Part> parts) {
  MemoryOp m;
  m.name = name;
  m.rows = rows;
  m.write_addr = circuit::Address(std::move(waddr));   // no bits: row 0
  m.read_addr = circuit::Address(std::move(raddr));
  m.write_enable = Operand::value(we);
  if (reset >= 0) m.reset = Operand::value(reset);
  m.zero_default = true;
  m.parts = std::move(parts);
  return b.p.memory(m);
}

Digits outs(const std::vector<ValueId>& v, size_t from, size_t n) {
  Digits d;
  for (size_t i = from; i < from + n; ++i) d.push_back({v.at(i), 0});
  return d;
}

ValueId bitfield(Builder& b, const std::string& name, const Digits& w, int lo, int n) {
  std::vector<Term> t;
  int k = 0;
  for (int i = 0; i < n; ++i) {
    const int bit = lo + i;
    const Dig& d = w.at(bit / 4);
    if (d.v < 0) {
      k += ((d.k >> (bit % 4)) & 1) << i;
      continue;
    }
    for (int s = 1; s < 16; ++s)
      if ((s >> (bit % 4)) & 1) t.push_back({d.v, s, 1 << i});
  }
  return b.p.ladder(name, 1 << n, t, k, [](int s) { return s; });
}

ValueId is_zero(Builder& b, const std::string& name, const Digits& w) {
  std::vector<Term> t;
  for (const Dig& d : w)
    if (d.v >= 0) t.push_back({d.v, 0, 1});
  const int n = int(t.size());
  return b.p.ladder(name, 2, t, 0, [n](int s) { return s == n ? 1 : 0; });
}

Digits increment(Builder& b, const std::string& name, const Digits& w, ValueId cond) {
  Digits out;
  for (size_t i = 0; i < w.size(); ++i) {
    std::vector<Term> t;
    for (int s = 1; s < 16; ++s) t.push_back({w[i].v, s, s});
    int bias = 0;
    if (i == 0) {
      if (cond >= 0)
        t.push_back({cond, 1, 1});
      else
        bias = 1;
    } else {
      std::vector<Term> all15;
      for (size_t j = 0; j < i; ++j) all15.push_back({w[j].v, 15, 1});
      if (cond >= 0) all15.push_back({cond, 1, 1});
      const int n = int(all15.size());
      t.push_back({b.p.ladder(name + ".c" + std::to_string(i), 2, all15, 0, [n](int s) { return s == n ? 1 : 0; }), 1, 1});
    }
    out.push_back({b.p.ladder(name + ".d" + std::to_string(i), 16, t, bias, [](int s) { return s % 16; }), 0});
  }
  return out;
}

int global_address_bits() {
  const uint32_t bytes = machine::model_params().global_bytes;
  int bits = 0;
  while ((1u << bits) < bytes) ++bits;
  if ((1u << bits) != bytes || bytes < machine::kModelMinGlobalBytes || bytes > machine::kModelMaxGlobalBytes)
    throw std::logic_error("gpu circuit: global memory of " + std::to_string(bytes) +
                           " bytes; the circuit takes a power of two from " +
                           std::to_string(machine::kModelMinGlobalBytes >> 10) + " to " +
                           std::to_string(machine::kModelMaxGlobalBytes >> 10) + " KiB");
  return bits;
}

Digits slice(const Digits& d, size_t from, size_t n) { return Digits(d.begin() + from, d.begin() + from + n); }

Digits word_digits(const Word& w) { return Builder::digits(w); }

Digits multiply(Program& p, const std::string& name, const Word& a, const Word& b) {
  const int n = int(a.digits.size());
  if (n != 8 || b.digits.size() != 8) throw std::logic_error("gpu circuit: multiply takes two 32-bit nibble words");
  // Column k holds the low nibbles of a_i * b_j with i + j = k and the high
  // nibbles of those with i + j = k - 1: columns 6..9 hold 13 to 15 products,
  // so the stages narrow where the columns are widest.
  const std::vector<std::vector<int>> stages = {{0, 1, 2, 3, 4, 5}, {6, 7, 8}, {9, 10, 11, 12, 13, 14, 15}};
  Word low{{}, 4}, high{{}, 4};
  high.digits.push_back(p.mlp(name + ".h0", 16, 0, {}));
  ValueId last = -1;
  for (const auto& cols : stages) {
    const size_t first_op = p.ops().size();
    for (int k : cols) {
      std::vector<Term> column;
      auto product = [&](int i, int j, bool hi) {
        const ValueId v = circuit::nibble_product(
            p, name + ".p" + std::to_string(i) + "_" + std::to_string(j) + (hi ? ".hi" : ".lo"), a.digits[i],
            b.digits[j], hi);
        for (int s = 1; s < 16; ++s) column.push_back({v, s, s});
      };
      for (int i = std::max(0, k - (n - 1)); i <= std::min(k, n - 1); ++i) product(i, k - i, false);
      for (int i = std::max(0, k - n); i <= std::min(k - 1, n - 1); ++i) product(i, k - 1 - i, true);
      low.digits.push_back(p.ladder(name + ".l" + std::to_string(k), 16, column, 0, [](int s) { return s & 15; }));
      if (k + 1 < 2 * n)
        high.digits.push_back(p.ladder(name + ".h" + std::to_string(k + 1), 16, column, 0, [](int s) { return s >> 4; }));
    }
    if (last >= 0) p.wait_for(first_op, last);
    last = low.digits.back();
  }
  return Builder::digits(circuit::add(p, name + ".sum", low, high).value);
}

Step conjunction(const std::vector<Lit>& lits, int to) {
  Step st;
  int positive = 0;
  for (const Lit& l : lits) {
    positive += !l.neg;
    for (int s : l.slots) st.form.push_back({l.v, s, l.neg ? -1 : 1});
  }
  st.bias = 1 - positive;
  st.to = to;
  return st;
}
std::vector<int> slots_where(int size, const std::function<bool(int)>& f) {
  std::vector<int> out;
  for (int s = 0; s < size; ++s)
    if (f(s)) out.push_back(s);
  return out;
}

}  // namespace qgpu::gpu::mc
