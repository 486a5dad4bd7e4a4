// The machine of docs/tokens.md as a circuit Program.
//
// Stages, in depth order (the compiler places each op at the first layer its
// inputs allow):
//   1. context: one-row memories keep what earlier tokens said (current block,
//      thread, CTA, barrier epoch, launch shape, the ROM row being loaded, the
//      previous token);
//   2. ROM: five 1024-row stores (instruction, operands a/b/c, terminator);
//   3. registers: three read ports over the 8192-row register file
//      (thread x register), all written by the value tokens;
//   4. operands, addresses, data memories (global, shared, local, param,
//      print), the ALU;
//   5. the thread table (scheduler state), the warp groups' running minimum
//      and release pcs of `wbar` (WMIN tokens), the decision of what to write
//      next, and the output head.
#include "model_host/gpu/circuit.h"
#include "model_host/gpu/model_dir.h"

#include "model_host/circuit/compiler.h"
#include "model_host/circuit/words.h"
#include "model_host/tokens/vocab.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <map>
#include <stdexcept>

namespace qgpu::gpu {

using circuit::AddrBit;
using circuit::MemoryOp;
using circuit::Operand;
using circuit::Program;
using circuit::Step;
using circuit::Term;
using circuit::ValueId;
using circuit::Word;
using machine::Op;

namespace {

enum TermKind { kJmp = 0, kBr = 1, kExit = 2, kBar = 3, kWbar = 4, kTrap = 5 };
enum SpaceCode { kGlobal = 0, kShared = 1, kLocal = 2, kParam = 3, kPrint = 4 };

// A digit of a word: a value, or a constant slot.
struct Dig {
  ValueId v = -1;
  int k = 0;
};
using Digits = std::vector<Dig>;

class Builder {
 public:
  Program p;

  ValueId flag(const std::string& name, ValueId in, const std::function<bool(int)>& f) {
    return circuit::apply(p, name, 2, in, [&](int s) { return f(s) ? 1 : 0; });
  }
  ValueId is_kind(Kind k) {
    auto it = kind_flags_.find(k);
    if (it != kind_flags_.end()) return it->second;
    return kind_flags_[k] = flag(std::string("is_") + kind_name(k), kind, [k](int s) { return s == int(k); });
  }
  // Any / all of some flags.
  ValueId any(const std::string& name, const std::vector<ValueId>& fs) {
    std::vector<Term> t;
    for (ValueId f : fs) t.push_back({f, 1, 1});
    return p.ladder(name, 2, t, 0, [](int s) { return s >= 1 ? 1 : 0; });
  }
  ValueId all(const std::string& name, const std::vector<ValueId>& fs) {
    std::vector<Term> t;
    for (ValueId f : fs) t.push_back({f, 1, 1});
    const int n = int(fs.size());
    return p.ladder(name, 2, t, 0, [n](int s) { return s == n ? 1 : 0; });
  }
  ValueId lnot(const std::string& name, ValueId f) { return flag(name, f, [](int s) { return s == 0; }); }
  // A constant value.
  ValueId konst(int size, int slot) {
    auto key = std::make_pair(size, slot);
    auto it = consts_.find(key);
    if (it != consts_.end()) return it->second;
    return consts_[key] = p.mlp("const" + std::to_string(size) + "_" + std::to_string(slot), size, slot, {});
  }
  Word word(const Digits& d) {
    Word w{{}, 4};
    for (const Dig& x : d) w.digits.push_back(x.v >= 0 ? x.v : konst(16, x.k));
    return w;
  }
  static Digits digits(const Word& w) {
    Digits d;
    for (ValueId v : w.digits) d.push_back({v, 0});
    return d;
  }
  static Digits pad(Digits d, size_t n) {
    while (d.size() < n) d.push_back({-1, 0});
    return d;
  }
  // One case of a multiplexer: when the selector holds slot k (and, with a
  // guard, the guard flag holds guard_slot), the output is `w`.
  struct Case {
    int k;
    Digits w;
    ValueId guard = -1;
    int guard_slot = 1;
  };
  // Per digit, the word of the case that holds; 0 where none does.  The cases
  // must exclude each other.
  Digits mux(const std::string& name, ValueId sel, const std::vector<Case>& cases, size_t n) {
    Digits out;
    for (size_t d = 0; d < n; ++d) {
      std::vector<Step> steps;
      std::vector<circuit::Pass> passes;
      for (const Case& c : cases) {
        const Dig x = d < c.w.size() ? c.w[d] : Dig{};
        std::vector<Term> when{{sel, c.k, 1}};
        if (c.guard >= 0) when.push_back({c.guard, c.guard_slot, 1});
        const int bias = 1 - int(when.size());
        if (x.v >= 0 && p.info(x.v).size == 16 && !p.info(x.v).scalar) {   // a pass: one unit per non-zero slot
          circuit::Pass ps{{}, x.v};
          for (const Term& t : when) ps.when.push_back({t.v, t.slot});
          passes.push_back(std::move(ps));
        } else if (x.v >= 0) {
          for (int s = 1; s < p.info(x.v).size; ++s) {
            auto form = when;
            form.push_back({x.v, s, 1});
            steps.push_back({form, bias - 1, 0, s});
          }
        } else if (x.k != 0) {
          steps.push_back({when, bias, 0, x.k});
        }
      }
      if (steps.empty() && passes.empty()) {
        out.push_back({-1, 0});
        continue;
      }
      out.push_back({p.mlp(name + ".d" + std::to_string(d), 16, 0, std::move(steps), std::move(passes)), 0});
    }
    return out;
  }
  // A value with `size` slots from nibble digits: sum of digit[i] << 4i, capped.
  ValueId number(const std::string& name, int size, const Digits& d, int bits = 16) {
    std::vector<Term> t;
    int konst_part = 0;
    for (size_t i = 0; i < d.size(); ++i) {
      const int shift = int(4 * i);
      const int mask = std::min(15, (1 << std::max(0, bits - shift)) - 1);
      if (d[i].v < 0) {
        konst_part += (d[i].k & mask) << shift;
        continue;
      }
      for (int s = 1; s < 16; ++s)
        if (s & mask) t.push_back({d[i].v, s, (s & mask) << shift});
    }
    return p.ladder(name, size, t, konst_part, [size](int s) { return std::min(s, size - 1); });
  }
  // Bits [lo, lo + n) of a nibble word as address bits.
  static std::vector<AddrBit> bits(const Digits& d, int lo, int n) {
    Word w{{}, 4};
    for (const Dig& x : d) {
      if (x.v < 0) throw std::logic_error("gpu circuit: constant address digit");
      w.digits.push_back(x.v);
    }
    return circuit::address_bits(w, lo, n);
  }

  ValueId kind = -1;
  std::vector<ValueId> pay;   // p0..p3

 private:
  std::map<Kind, ValueId> kind_flags_;
  std::map<std::pair<int, int>, ValueId> consts_;
};

// One store.  Rows 2^(address bits); zero_default: unwritten rows read 0.
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

}  // namespace

const circuit::MemoryLayout& Layout::memory(const std::string& name) const {
  for (const auto& m : memories)
    if (m.name == name) return m;
  throw std::runtime_error("gpu layout: no memory '" + name + "'");
}

std::string Layout::to_json() const {
  nlohmann::json j;
  j["format"] = kLayoutFormat;
  j["num_layers"] = num_layers;
  j["vocab_size"] = vocab_size;
  if (!circuit.empty()) j["circuit"] = circuit;
  j["memories"] = nlohmann::json::array();
  for (const auto& m : memories) {
    nlohmann::json heads = nlohmann::json::array(), parts = nlohmann::json::array();
    for (const auto& h : m.heads) heads.push_back({h.layer, h.head});
    for (const auto& pt : m.parts) parts.push_back({pt.slice, pt.channel, pt.size});
    j["memories"].push_back({{"name", m.name}, {"rows", m.rows}, {"zero_default", m.zero_default},
                             {"group_rows", m.group_rows}, {"groups", m.groups}, {"slices", m.slices},
                             {"heads", heads}, {"parts", parts}});
  }
  return j.dump(1);
}

Layout Layout::from_json(const std::string& text) {
  try {
    auto j = nlohmann::json::parse(text);
    if (j.at("format") != kLayoutFormat) throw std::runtime_error("unknown format");
    Layout l;
    l.num_layers = j.at("num_layers");
    l.vocab_size = j.at("vocab_size");
    l.circuit = j.value("circuit", std::string());
    for (const auto& m : j.at("memories")) {
      circuit::MemoryLayout ml;
      ml.name = m.at("name");
      ml.rows = m.at("rows");
      ml.zero_default = m.at("zero_default");
      ml.group_rows = m.at("group_rows");
      ml.groups = m.at("groups");
      ml.slices = m.at("slices");
      for (const auto& h : m.at("heads")) ml.heads.push_back({h.at(0).get<int>(), h.at(1).get<int>()});
      for (const auto& pt : m.at("parts"))
        ml.parts.push_back({pt.at(0).get<int>(), pt.at(1).get<int>(), pt.at(2).get<int>()});
      l.memories.push_back(std::move(ml));
    }
    return l;
  } catch (const std::exception& e) {
    throw std::runtime_error(std::string("gpu layout: malformed qgpu-gpu.json: ") + e.what());
  }
}

namespace {


// Bits [lo, lo + n) (n <= 4) of a nibble word as one value of 2^n slots.
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

// w == 0 as a flag.
ValueId is_zero(Builder& b, const std::string& name, const Digits& w) {
  std::vector<Term> t;
  for (const Dig& d : w)
    if (d.v >= 0) t.push_back({d.v, 0, 1});
  const int n = int(t.size());
  return b.p.ladder(name, 2, t, 0, [n](int s) { return s == n ? 1 : 0; });
}

// w + 1 (mod 16^n), digit by digit: digit i gains the carry "every lower digit is 15".
Digits increment(Builder& b, const std::string& name, const Digits& w) {
  Digits out;
  for (size_t i = 0; i < w.size(); ++i) {
    std::vector<Term> t;
    for (int s = 1; s < 16; ++s) t.push_back({w[i].v, s, s});
    int bias = 0;
    if (i == 0) {
      bias = 1;
    } else {
      std::vector<Term> all15;
      for (size_t j = 0; j < i; ++j) all15.push_back({w[j].v, 15, 1});
      const int n = int(i);
      t.push_back({b.p.ladder(name + ".c" + std::to_string(i), 2, all15, 0, [n](int s) { return s == n ? 1 : 0; }), 1, 1});
    }
    out.push_back({b.p.ladder(name + ".d" + std::to_string(i), 16, t, bias, [](int s) { return s % 16; }), 0});
  }
  return out;
}

// Bits of a global memory offset: global_bytes = 2^bits (machine::model_params()).
// MG's 16-bit payload names the word, so at most 2^18 bytes.
int global_address_bits() {
  const uint32_t bytes = machine::model_params().global_bytes;
  int bits = 0;
  while ((1u << bits) < bytes) ++bits;
  if ((1u << bits) != bytes || bits < 12 || bits > 18)
    throw std::logic_error("gpu circuit: global memory of " + std::to_string(bytes) +
                           " bytes; the circuit takes a power of two from 4 KiB to 256 KiB");
  return bits;
}

Digits slice(const Digits& d, size_t from, size_t n) { return Digits(d.begin() + from, d.begin() + from + n); }

Digits word_digits(const Word& w) { return Builder::digits(w); }

// The low 32 bits of a * b for nibble words: nibble products by table,
// column sums by ladder, then one addition; like circuit::mul_lo, but the
// columns are computed in stages, each waiting for the one before, so that
// only one stage's products occupy the residual at a time.
Digits multiply(Program& p, const std::string& name, const Word& a, const Word& b) {
  const int n = int(a.digits.size());
  const std::vector<std::vector<int>> stages = {{0, 1, 2, 3}, {4, 5}, {6}, {7}};
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
      for (int i = 0; i <= k; ++i) product(i, k - i, false);
      for (int i = 0; i <= k - 1; ++i) product(i, k - 1 - i, true);
      low.digits.push_back(p.ladder(name + ".l" + std::to_string(k), 16, column, 0, [](int s) { return s & 15; }));
      if (k + 1 < n)
        high.digits.push_back(p.ladder(name + ".h" + std::to_string(k + 1), 16, column, 0, [](int s) { return s >> 4; }));
    }
    if (last >= 0) p.wait_for(first_op, last);
    last = low.digits.back();
  }
  return Builder::digits(circuit::add(p, name + ".sum", low, high).value);
}

// A literal of a conjunction: value v holds one of `slots`, or with `neg`
// none of them.  (A negated literal weighs only its few slots: a row of the
// MLP is then reached only by tokens that may make it fire.)
struct Lit {
  ValueId v;
  std::vector<int> slots;
  bool neg = false;
};
// The step that moves an output from slot 0 to `to` when every literal
// holds: F = sum of the positive literals - sum of the negated ones + 1 - P
// (P positive literals) is 1 exactly then, and at most 0 otherwise.
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

// Fall-through values since the last EXEC or VX, counting this token
// (0..kFallChain), as far as the token and the 3 before it tell: a
// fall-through value counts itself and those right before it; VZ, VG, VN
// and VLO (the value of the block a chain ran last) count those before them.
// The kinds before come from one-row stores in the first layer (their write
// enable is constant, so they wait for nothing); D after VLO takes VLO's
// count from the store of the token before (`prev`).
ValueId fall_count(Builder& b) {
  static_assert(kFallChain == 3, "the count reads the 3 tokens before");
  // One store per age: a record whose parts all come from before the
  // sequence start reads as never written (slot 0), one that mixes ages
  // would not be clean on the first tokens.
  std::vector<ValueId> k;
  for (int age = 1; age <= 3; ++age) {
    MemoryOp m;
    m.name = "kind_age" + std::to_string(age);
    m.rows = 1;
    m.write_addr = circuit::Address(std::vector<AddrBit>{});
    m.read_addr = circuit::Address(std::vector<AddrBit>{});
    m.write_enable = Operand::fixed(1);
    m.zero_default = true;
    m.parts.push_back({b.kind, age});
    k.push_back(b.p.memory(m).at(0));
  }
  const Lit fall0{b.kind, slots_where(kKindCount, [](int s) { return falls_through(Kind(s)); })};
  const Lit value0{b.kind, slots_where(kKindCount, [](int s) {
                     const Kind t = Kind(s);
                     return t == Kind::VZ || t == Kind::VG || t == Kind::VN || t == Kind::VLO;
                   })};
  auto fall = [&](int age, bool is) {
    return Lit{k[age - 1], slots_where(kKindCount, [](int s) { return falls_through(Kind(s)); }), !is};
  };
  std::vector<Step> st;
  // A fall-through value: 1 + the run of them right before it.
  st.push_back(conjunction({fall0, fall(1, false)}, 1));
  st.push_back(conjunction({fall0, fall(1, true), fall(2, false)}, 2));
  st.push_back(conjunction({fall0, fall(1, true), fall(2, true)}, 3));
  // A value token: the run right before it.
  st.push_back(conjunction({value0, fall(1, true), fall(2, false)}, 1));
  st.push_back(conjunction({value0, fall(1, true), fall(2, true), fall(3, false)}, 2));
  st.push_back(conjunction({value0, fall(1, true), fall(2, true), fall(3, true)}, 3));
  return b.p.mlp("falls", kFallChain + 1, 0, std::move(st));
}

// The block a pass runs, or whose terminator it follows: the last EXEC's or
// VX's (`named`, 3 nibbles, bits 0..9 the block) plus the fall-through
// values since (`falls` of this token, `prev_falls` of the one before for D
// after VLO), in one layer: per output digit, one conjunction per count,
// input digit and carry.
}  // namespace

std::array<ValueId, 3> run_pc(Program& p, ValueId kind, const std::array<ValueId, 3>& named, ValueId falls,
                              ValueId prev_falls) {
  const Lit not_d{kind, {int(Kind::D)}, true};
  const Lit is_d{kind, {int(Kind::D)}};
  std::vector<Step> d0, d1, d2;
  for (const auto& [count, sel] : {std::pair{falls, not_d}, std::pair{prev_falls, is_d}}) {
    for (int j = 0; j <= int(kFallChain); ++j) {
      const Lit cj{count, {j}};
      // Carry out of digit 0: b0 + j >= 16.
      const Lit carry{named[0], slots_where(16, [j](int x) { return x + j >= 16; })};
      const Lit no_carry{named[0], carry.slots, true};
      for (int x = 0; x < 16; ++x) {
        if ((x + j) % 16) d0.push_back(conjunction({sel, cj, {named[0], {x}}}, (x + j) % 16));
        if (x) d1.push_back(conjunction({sel, cj, no_carry, {named[1], {x}}}, x));
        if (!carry.slots.empty() && (x + 1) % 16)
          d1.push_back(conjunction({sel, cj, carry, {named[1], {x}}}, (x + 1) % 16));
      }
      // Digit 2: the block's bits 8..9 (a VX payload has value bits above).
      for (int x = 0; x < 4; ++x) {
        const Lit b2{named[2], slots_where(16, [x](int s) { return (s & 3) == x; })};
        const Lit b1_not15{named[1], {15}, true};
        if (x) {
          d2.push_back(conjunction({sel, cj, b1_not15, b2}, x));
          d2.push_back(conjunction({sel, cj, {named[1], {15}}, no_carry, b2}, x));
        }
        if (!carry.slots.empty() && (x + 1) % 4)
          d2.push_back(conjunction({sel, cj, {named[1], {15}}, carry, b2}, (x + 1) % 4));
      }
    }
  }
  return {p.mlp("run_pc.d0", 16, 0, std::move(d0)), p.mlp("run_pc.d1", 16, 0, std::move(d1)),
          p.mlp("run_pc.d2", 16, 0, std::move(d2))};
}

namespace {

struct MachineProgram {
  Program program;
  std::vector<std::string> readable;   // memories the host reads back
};

MachineProgram machine_program() {
  Builder b;
  Program& p = b.p;
  b.kind = p.field("kind", kKindCount);
  for (int i = 0; i < 4; ++i) b.pay.push_back(p.field("p" + std::to_string(i), 16));
  for (int k = 0; k < kKindCount; ++k)
    for (uint32_t x = 0; x < payload_size(Kind(k)); ++x) {
      std::vector<std::pair<ValueId, int>> slots{{b.kind, k}};
      for (int i = 0; i < 4; ++i) slots.push_back({b.pay[i], int((x >> (4 * i)) & 15)});
      p.token(token_name(token_id(Kind(k), x)), slots);
    }
  const Digits P = {{b.pay[0]}, {b.pay[1]}, {b.pay[2]}, {b.pay[3]}};
  auto part = [&](int i, int age) { return MemoryOp::Part{b.pay[i], age}; };
  auto payload_parts = [&](int n, int age) {
    std::vector<MemoryOp::Part> v;
    for (int i = 0; i < n; ++i) v.push_back(part(i, age));
    return v;
  };
  auto cat = [](std::vector<MemoryOp::Part> a, const std::vector<MemoryOp::Part>& c) {
    a.insert(a.end(), c.begin(), c.end());
    return a;
  };
  auto digit_parts = [](const Digits& d) {
    std::vector<MemoryOp::Part> v;
    for (const Dig& x : d) v.push_back({x.v, 0});
    return v;
  };

  // ---- 1. context: what earlier tokens said ---------------------------------
  const ValueId one = b.konst(2, 1);
  const ValueId is_cta = b.is_kind(Kind::CTA);
  const ValueId falls = fall_count(b);
  const auto prev = store(b, "prev", 1, {}, {}, one, -1, cat({{b.kind, 1}, {falls, 1}}, payload_parts(4, 1)));
  const ValueId prev_kind = prev[0], prev_falls = prev[1];
  const Digits prevP = outs(prev, 2, 4);
  const Digits prev2P = outs(store(b, "prev2", 1, {}, {}, one, -1, payload_parts(4, 2)), 0, 4);
  // The block being run: EXEC's payload, or VX's (whose bits 10.. are its
  // value; only bits 0..9 address the ROM), plus the fall-through values
  // (VZF, VGF, VNF, DF) since then: each runs the block after the last one run.
  const ValueId names = b.flag("names_block", b.kind, [](int s) { return names_block(Kind(s)); });
  const Digits named_pc = outs(store(b, "ctx_exec", 1, {}, {}, names, -1, payload_parts(3, 0)), 0, 3);
  const Digits cur_w = outs(store(b, "ctx_warp", 1, {}, {}, b.is_kind(Kind::WARP), -1, payload_parts(3, 0)), 0, 3);
  // CTA indices and counts: 16 bits (up to 65,535 CTAs).
  const Digits cur_c = outs(store(b, "ctx_cta", 1, {}, {}, is_cta, -1, payload_parts(4, 0)), 0, 4);
  const ValueId epoch = store(b, "ctx_epoch", 1, {}, {}, b.is_kind(Kind::BARRIER), is_cta, {part(0, 0)})[0];
  const Digits n_threads = outs(store(b, "ctx_nt", 1, {}, {}, b.is_kind(Kind::NT), -1, payload_parts(3, 0)), 0, 3);
  const Digits n_ctas = outs(store(b, "ctx_nc", 1, {}, {}, b.is_kind(Kind::NC), -1, payload_parts(4, 0)), 0, 4);
  // The local store is split among the CTA's threads rounded up to a power of
  // two, 2^c with c = ceil(log2 NT) (machine::Params::local_bytes_for): c, from
  // NT's low two nibbles (both zero only for NT(256), c = 8).
  const ValueId nt_log = p.lookup("nt_log2", 9, {b.pay[1], b.pay[0]}, [](const std::vector<int>& v) {
    const int t = v[0] * 16 + v[1];
    int c = 0;
    while (t > 0 && (1 << c) < t) ++c;
    return t == 0 ? 8 : c;
  });
  const ValueId local_log = store(b, "ctx_tlog", 1, {}, {}, b.is_kind(Kind::NT), -1, {{nt_log, 0}})[0];
  const Digits rom_sel = outs(store(b, "ctx_rom", 1, {}, {}, b.is_kind(Kind::ROM), -1, payload_parts(3, 0)), 0, 3);
  const auto pc_digits = run_pc(p, b.kind, {named_pc[0].v, named_pc[1].v, named_pc[2].v}, falls, prev_falls);
  const Digits cur_pc = {{pc_digits[0]}, {pc_digits[1]}, {pc_digits[2]}};
  // The block after it, for the fall-through values; and whether one more
  // of them may follow.
  const Digits next_pc = increment(b, "next_pc", cur_pc);
  const ValueId may_fall = b.flag("may_fall", falls, [](int s) { return s < int(kFallChain); });

  // Which pass this is (docs/tokens.md section 4).
  enum Pass { kOther, kExec, kHi, kCtrl, kWarp, kStart, kToWarp0, kToEnd, kWmin, kPassCount };
  const ValueId pass = p.lookup("pass", kPassCount, {b.kind, prev_kind}, [](const std::vector<int>& v) {
    switch (Kind(v[0])) {
      case Kind::EXEC: case Kind::VX: case Kind::VZF: case Kind::VGF: case Kind::VNF: case Kind::DF: return int(kExec);
      case Kind::VLO: return int(kHi);
      case Kind::VZ: case Kind::VG: case Kind::VN: return int(kCtrl);
      case Kind::D: return Kind(v[1]) == Kind::VLO ? int(kCtrl) : int(kOther);
      case Kind::WARP: return int(kWarp);
      case Kind::WMIN: return int(kWmin);
      case Kind::START: return int(kStart);
      case Kind::CTA: case Kind::BARRIER: return int(kToWarp0);
      case Kind::TRAP: case Kind::FAULT: return int(kToEnd);
      default: return int(kOther);
    }
  });
  const ValueId is_exec = b.flag("is_exec_pass", pass, [](int s) { return s == kExec; });
  const ValueId is_ctrl = b.flag("is_ctrl_pass", pass, [](int s) { return s == kCtrl; });
  // The high half of a value: D after VLO, or DF.
  const ValueId is_vhi = p.lookup("is_vhi", 2, {b.kind, prev_kind}, [](const std::vector<int>& v) {
    return (Kind(v[0]) == Kind::D && Kind(v[1]) == Kind::VLO) || Kind(v[0]) == Kind::DF ? 1 : 0;
  });

  // ---- 2. ROM ---------------------------------------------------------------
  const auto rom_w = Builder::bits(rom_sel, 0, 10), rom_r = Builder::bits(cur_pc, 0, 10);
  // The launch's stores start empty at its NT (the client's sequence goes on
  // over many launches: docs/tokens.md section 3): a field a launch does not
  // send reads as zero.
  const ValueId is_nt = b.is_kind(Kind::NT);
  auto rom = [&](const std::string& name, Kind k, std::vector<MemoryOp::Part> parts) {
    return store(b, name, 1024, rom_w, rom_r, b.is_kind(k), is_nt, std::move(parts));
  };
  const Digits opP = outs(rom("rom_op", Kind::OP, payload_parts(4, 0)), 0, 4);
  const auto imm_parts = cat(payload_parts(2, 0), cat(payload_parts(4, 2), payload_parts(4, 1)));
  const auto r_a = rom("rom_a", Kind::A, imm_parts);
  const auto r_b = rom("rom_b", Kind::B, imm_parts);
  const auto r_c = rom("rom_c", Kind::C, imm_parts);
  const auto r_t = rom("rom_t", Kind::T, cat(payload_parts(2, 0), cat(payload_parts(3, 2), payload_parts(3, 1))));

  const ValueId op = b.number("op", 64, {opP[2], opP[3]}, 6);          // payload bits 8..13
  enum BitOp { kNoBitOp, kAnd, kOr, kXor, kShl, kShr, kSar, kBrev };
  const ValueId bop = circuit::apply(p, "bitop", 8, op, [](int s) {
    switch (Op(s)) {
      case Op::AND: return int(kAnd);
      case Op::OR: return int(kOr);
      case Op::XOR: return int(kXor);
      case Op::SHL: return int(kShl);
      case Op::SHR: return int(kShr);
      case Op::SAR: return int(kSar);
      case Op::BREV: return int(kBrev);
      default: return int(kNoBitOp);
    }
  });
  const ValueId space = circuit::apply(p, "space", 8, opP[1].v, [](int s) { return s >> 1; });
  const ValueId tkind = circuit::apply(p, "tkind", 8, r_t[1], [](int s) { return s >> 1; });
  const Digits t_target = outs(r_t, 2, 3), f_target = outs(r_t, 5, 3);
  auto op_is = [&](const std::string& name, std::initializer_list<Op> ops) {
    return b.flag(name, op, [ops](int s) {
      for (Op o : ops)
        if (s == int(o)) return true;
      return false;
    });
  };
  const ValueId is_ld = op_is("is_ld", {Op::LD}), is_st = op_is("is_st", {Op::ST});
  const ValueId has_dst = b.flag("has_dst", op, [](int s) {
    return s != int(kNoInstruction) && s != int(Op::ST) && s != int(Op::ATOM);
  });

  // ---- 3. registers ---------------------------------------------------------
  // The value tokens write register dst of the current thread: VZ(lo) and
  // VZF(lo) write (lo, 0), VG(lo) and VGF(lo) (lo, 0x1000), VN(lo) and VNF(lo)
  // (lo, 0xffff); D(hi) or DF(hi) after VLO(lo) writes (lo, hi); VX(pc, v)
  // writes (v, 0).
  // dst is the destination of the block the token before ran (EXEC, VX or a
  // fall-through value before VZ, VX and the fall-through values, and VLO,
  // whose block is still the current one, before D and DF), kept one token
  // in a one-row store: on a VX pass the ROM already
  // reads the next block.
  std::vector<Term> vx_terms;
  for (int s = 1; s < 16; ++s) {
    if (s >> 2) vx_terms.push_back({b.pay[2], s, s >> 2});
    if (s & 3) vx_terms.push_back({b.pay[3], s, (s & 3) << 2});
  }
  const ValueId vx_value = p.ladder("vx_value", 16, vx_terms, 0, [](int s) { return std::min(s, 15); });
  // v's bits 4..5 (payload bits 14..15).
  const ValueId vx_value_hi = circuit::apply(p, "vx_value_hi", 4, b.pay[3], [](int s) { return s >> 2; });
  const ValueId reg_src = circuit::apply(p, "reg_src", 3, b.kind, [](int s) {
    const Kind k = Kind(s);
    // D and DF take the low half from VLO, the token before (0).
    return k == Kind::VZ || k == Kind::VG || k == Kind::VN || k == Kind::VZF || k == Kind::VGF || k == Kind::VNF ? 1
           : k == Kind::VX                                                                                    ? 2
                                                                                                              : 0;
  });
  const Digits reg_lo = b.mux("reg_lo", reg_src, {{1, P}, {2, {{vx_value}, {vx_value_hi}}}, {0, prevP}}, 4);
  const ValueId is_vg = b.flag("high_global", b.kind, [](int s) { return Kind(s) == Kind::VG || Kind(s) == Kind::VGF; });
  const ValueId is_vn = b.flag("high_negative", b.kind, [](int s) { return Kind(s) == Kind::VN || Kind(s) == Kind::VNF; });
  // The tokens that write a register (with is_vhi for D after VLO): VZ, VG,
  // VN, VX and the fall-through values (DF's low half is VLO's payload).
  const ValueId writes_reg = b.flag("writes_reg", b.kind, [](int s) {
    const Kind k = Kind(s);
    return k == Kind::VZ || k == Kind::VG || k == Kind::VN || k == Kind::VX || falls_through(k);
  });
  const ValueId hi_src = p.lookup("reg_hi_src", 4, {is_vhi, is_vg, is_vn}, [](const std::vector<int>& v) {
    return v[0] ? 1 : v[1] ? 2 : v[2] ? 3 : 0;
  });
  auto high_digits = [](uint32_t h) {
    Digits d;
    for (int i = 0; i < 4; ++i) d.push_back({-1, int((h >> (4 * i)) & 15)});
    return d;
  };
  const Digits reg_hi = b.mux("reg_hi", hi_src, {{1, P}, {2, high_digits(kGlobalHigh)}, {3, high_digits(kNegativeHigh)}}, 4);
  std::vector<MemoryOp::Part> reg_rec = digit_parts(b.pad(reg_lo, 4));
  for (const Dig& d : reg_hi) reg_rec.push_back({d.v >= 0 ? d.v : b.konst(16, 0), 0});
  for (auto& part_ : reg_rec)
    if (part_.data < 0) part_.data = b.konst(16, 0);
  auto reg_addr = [&](ValueId lo4, ValueId bit4) {
    std::vector<AddrBit> a;
    for (int i = 0; i < 4; ++i) a.push_back({lo4, i});
    a.push_back({bit4, 0});
    auto w = Builder::bits(cur_w, 0, 8);
    a.insert(a.end(), w.begin(), w.end());
    return a;
  };
  const auto prev_dst = store(b, "prev_dst", 1, {}, {}, one, -1, {{opP[0].v, 1}, {opP[1].v, 1}});
  const auto reg_w = reg_addr(prev_dst[0], prev_dst[1]);
  // Port A also reads the branch condition: on the control pass, and on the
  // EXEC pass of a block with no instruction (the lowering never ends a
  // store's block in br, so no other block needs both).
  const ValueId is_nop = b.flag("is_nop", op, [](int s) { return s == int(kNoInstruction); });
  const ValueId read_cond = b.any("read_cond", {is_ctrl, is_nop});
  const Digits ra = b.mux("ra", read_cond, {{1, {{r_t[0]}, {r_t[1]}}}, {0, {{r_a[0]}, {r_a[1]}}}}, 2);
  auto reg_port = [&](const std::string& name, ValueId lo4, ValueId bit4) {
    return outs(store(b, name, 8192, reg_w, reg_addr(lo4, bit4), b.any("reg_we", {writes_reg, is_vhi}), is_cta, reg_rec),
                0, 8);
  };
  const Digits regC = reg_port("regs_c", r_c[0], r_c[1]);
  const Digits regB = reg_port("regs_b", r_b[0], r_b[1]);
  const Digits regA = reg_port("regs_a", ra[0].v, ra[1].v);

  // ---- 4. operands, memories, ALU --------------------------------------------
  auto operand = [&](const std::string& name, const std::vector<ValueId>& r, const Digits& reg) {
    const ValueId imm = b.flag(name + ".imm", r[1], [](int s) { return ((s >> 1) & 1) == 0; });
    Digits immw;
    for (int i = 2; i < 10; ++i) immw.push_back({r[i]});
    return word_digits(circuit::select(p, name, imm, b.word(immw), b.word(reg)));
  };
  const Digits C = operand("C", r_c, regC), B = operand("B", r_b, regB), A = operand("A", r_a, regA);
  const Word Aw = b.word(A), Bw = b.word(B);

  // The ALU.  Every operation's result is folded into one accumulated word as
  // soon as it exists (fold: "this operation ? its result : what came
  // before"), and the wide steps run one after another (wait_for), so the
  // residual holds one result, the operands and the step in progress.
  const ValueId amount = bitfield(b, "amount", B, 0, 4);
  std::vector<Term> amount_terms;
  for (int s = 1; s < 16; ++s) amount_terms.push_back({amount, s, s});
  for (int s = 1; s < 16; s += 2) amount_terms.push_back({B[1].v, s, 16});
  const ValueId amount32 = p.ladder("amount32", 32, amount_terms, 0, [](int s) { return s; });
  std::vector<Term> big_terms;
  for (int s = 2; s < 16; ++s) big_terms.push_back({B[1].v, s, 1});
  for (int i = 2; i < 8; ++i)
    for (int s = 1; s < 16; ++s) big_terms.push_back({B[i].v, s, 1});
  const ValueId big = p.ladder("shift_big", 2, big_terms, 0, [](int s) { return s >= 1 ? 1 : 0; });
  const ValueId sign = b.flag("a_sign", A[7].v, [](int s) { return s >= 8; });
  // Shifts by 32 or more: shl/shr give 0, sar the sign everywhere.
  constexpr int kZeroCase = 64, kOnesCase = 65, kBitsCase = 66;
  const ValueId alu_case = p.lookup("alu_case", 67, {op, big, sign}, [](const std::vector<int>& v) {
    const Op o = Op(v[0]);
    if (v[1] && (o == Op::SHL || o == Op::SHR)) return kZeroCase;
    if (v[1] && o == Op::SAR) return v[2] ? kOnesCase : kZeroCase;
    if (o == Op::AND || o == Op::OR || o == Op::XOR || o == Op::SHL || o == Op::SHR || o == Op::SAR || o == Op::BREV)
      return kBitsCase;
    return v[0];
  });
  auto is_case = [&](const std::string& name, int k) { return b.flag(name, alu_case, [k](int s) { return s == k; }); };
  Digits acc = b.mux("r.first", alu_case,
                     {{int(Op::MOV), A}, {int(Op::WARP), cur_w}, {int(Op::CTA), cur_c},
                      {kOnesCase, Digits(8, Dig{-1, 15})}},
                     8);
  auto fold = [&](const std::string& name, ValueId when, std::vector<Builder::Case> cases) {
    cases.push_back({0, acc});
    acc = b.mux("r." + name, when, cases, 8);
  };
  // The global store's data: a prompt record's two D tokens, or a store's c.
  const ValueId is_mg = b.is_kind(Kind::MG), is_mp = b.is_kind(Kind::MP);
  Digits mdata = prev2P;
  mdata.insert(mdata.end(), prevP.begin(), prevP.end());
  const Digits st_data = b.mux("st_data", is_mg, {{1, mdata}, {0, C}}, 8);

  const Digits r_mul = multiply(p, "mul", Aw, Bw);
  fold("mul", is_case("is_mul", int(Op::MUL)), {{1, r_mul}});

  // Stage 1: the address sum (and ADD), the operands as bits.
  const size_t stage1 = p.ops().size();
  const Digits sum = word_digits(circuit::add(p, "add", Aw, Bw).value);
  p.wait_for(stage1, acc.back().v);

  // Stage 2: memories, bit operations, popc and clz.
  // Address checks on a + b (docs/isa.md section 10; sizes of model_params()).
  auto digit_is = [&](const std::string& name, const std::vector<std::pair<int, std::function<bool(int)>>>& conds) {
    std::vector<Term> t;
    for (const auto& [i, f] : conds)
      for (int s = 0; s < 16; ++s)
        if (f(s)) t.push_back({sum[i].v, s, 1});
    const int n = int(conds.size());
    return p.ladder(name, 2, t, 0, [n](int s) { return s == n ? 1 : 0; });
  };
  auto zero = [](int s) { return s == 0; };
  auto below = [](int k) { return std::function<bool(int)>([k](int s) { return s < k; }); };
  // Global: 0x10000000 + offset, offset below 2^gbits bytes (gbits 12..18).
  const int gbits = global_address_bits();
  std::vector<std::pair<int, std::function<bool(int)>>> g_conds{{7, [](int s) { return s == 1; }}};
  for (int i = 6; 4 * i >= gbits; --i) g_conds.push_back({i, zero});
  if (gbits % 4) g_conds.push_back({gbits / 4, below(1 << (gbits % 4))});
  const ValueId ok_global = digit_is("ok_global", g_conds);
  const ValueId ok_shared = digit_is("ok_shared", {{7, zero}, {6, zero}, {5, zero}, {4, zero}, {3, zero}});
  // Local: a thread of a CTA of 2^c (rounded) threads has 2^(14 - c) bytes.
  ValueId local_over;
  {
    std::vector<Step> over;
    for (int c = 0; c <= 8; ++c) {
      const int limit_bit = 14 - c;
      std::vector<Term> t;
      for (int i = 1; i <= 3; ++i)
        for (int s = 1; s < 16; ++s)
          if ((s << (4 * i)) >> limit_bit) t.push_back({sum[i].v, s, 1});
      const ValueId over_c = p.ladder("local_over" + std::to_string(c), 2, t, 0, [](int s) { return s >= 1 ? 1 : 0; });
      over.push_back({{{local_log, c, 1}, {over_c, 1, 1}}, -1, 0, 1});
    }
    local_over = p.mlp("local_over", 2, 0, std::move(over));
  }
  const ValueId ok_local = [&] {
    std::vector<Term> t{{local_over, 0, 1}};
    for (int i = 4; i < 8; ++i) t.push_back({sum[i].v, 0, 1});
    return p.ladder("ok_local", 2, t, 0, [](int s) { return s == 5 ? 1 : 0; });
  }();
  const ValueId ok_small = digit_is("ok_small", {{7, zero}, {6, zero}, {5, zero}, {4, zero}, {3, zero}, {2, below(4)}});
  const ValueId misaligned = b.flag("misaligned", sum[0].v, [](int s) { return (s & 3) != 0; });
  const ValueId is_mem = b.any("is_mem", {is_ld, is_st});
  // Parameters: 4 KiB.
  const ValueId ok_param = digit_is("ok_param", {{7, zero}, {6, zero}, {5, zero}, {4, zero}, {3, zero}});
  const ValueId fault = p.lookup("fault", 3, {is_mem, misaligned, space, ok_global, ok_shared, ok_local, ok_small, ok_param},
                                 [](const std::vector<int>& v) {
                                   if (!v[0]) return 0;
                                   if (v[1]) return 2;   // misaligned
                                   const bool ok = v[2] == kGlobal ? v[3] : v[2] == kShared ? v[4]
                                                   : v[2] == kLocal ? v[5] : v[2] == kParam ? v[7]
                                                   : v[2] == kPrint ? v[6] : 0;
                                   return ok ? 0 : 1;    // illegal address
                                 });
  const ValueId faults = b.flag("faults", fault, [](int s) { return s != 0; });
  const Digits row_lo = {{bitfield(b, "row0", sum, 2, 4)}, {bitfield(b, "row1", sum, 6, 4)},
                         {bitfield(b, "row2", sum, 10, 4)}};
  auto store_to = [&](const std::string& name, int sp) {
    return b.all(name, {is_exec, is_st, b.flag(name + ".space", space, [sp](int s) { return s == sp; }),
                        b.lnot(name + ".ok", faults)});
  };
  // Global memory: written by MG write records and by stores; word i is row
  // i (bits 2.. of the offset), 2^(gbits - 2) rows.
  const int g_words_bits = gbits - 2, g_digits = (g_words_bits + 3) / 4;
  Digits g_lo = row_lo;
  for (int i = 3; i < g_digits; ++i) g_lo.push_back({bitfield(b, "row" + std::to_string(i), sum, 2 + 4 * i, 4)});
  g_lo.resize(g_digits);
  const Digits g_row = b.mux("g_row", is_mg, {{1, slice(P, 0, g_digits)}, {0, g_lo}}, g_digits);
  const ValueId we_global = b.any("we_global", {is_mg, store_to("st_global", kGlobal)});
  const Digits v_global = outs(store(b, "global", 1 << g_words_bits, Builder::bits(g_row, 0, g_words_bits),
                                     Builder::bits(g_lo, 0, g_words_bits), we_global, -1,
                                     digit_parts(b.pad(st_data, 8))), 0, 8);
  const Digits v_shared = outs(store(b, "shared", 1024, Builder::bits(row_lo, 0, 10), Builder::bits(row_lo, 0, 10),
                                     store_to("st_shared", kShared), is_cta, digit_parts(C)), 0, 8);
  // Local row of word i of thread w: i | w << (12 - c).  Bits 0..3 are always
  // the word's (c <= 8); bit j above is word bit j while j < 12 - c, else
  // thread bit j - (12 - c).
  std::vector<AddrBit> l_addr = Builder::bits(row_lo, 0, 4);
  std::vector<ValueId> word_bit(12, -1), thread_bit(8);
  for (int j = 4; j < 12; ++j) word_bit[j] = bitfield(b, "lrow.s" + std::to_string(j), sum, 2 + j, 1);
  for (int i = 0; i < 8; ++i) thread_bit[i] = bitfield(b, "lrow.t" + std::to_string(i), cur_w, i, 1);
  for (int j = 4; j < 12; ++j) {
    std::vector<Step> pick;
    for (int c = 0; c <= 8; ++c) {
      const int k = 12 - c;
      const ValueId src = j < k ? word_bit[j] : thread_bit[j - k];
      pick.push_back({{{local_log, c, 1}, {src, 1, 1}}, -1, 0, 1});
    }
    l_addr.push_back({p.mlp("lrow.b" + std::to_string(j), 2, 0, std::move(pick)), 0});
  }
  const Digits v_local = outs(store(b, "local", 4096, l_addr, l_addr, store_to("st_local", kLocal), is_cta,
                                    digit_parts(C)), 0, 8);
  // Parameters: written by MP prompt records (the two D tokens before it).
  const Digits v_param = outs(store(b, "param", 1024, Builder::bits(P, 0, 10), Builder::bits(row_lo, 0, 10), is_mp, is_nt,
                                    cat(payload_parts(4, 2), payload_parts(4, 1))), 0, 8);
  const Digits v_print = outs(store(b, "print", 256, Builder::bits(row_lo, 0, 8), Builder::bits(row_lo, 0, 8),
                                    store_to("st_print", kPrint), is_nt, digit_parts(C)), 0, 8);

  // The address sum and the loads, in one fold.
  {
    enum G { kOther, kAdd, kLdGlobal };
    const ValueId g = p.lookup("group2", 7, {alu_case, space}, [](const std::vector<int>& v) {
      if (v[0] == int(Op::ADD)) return int(kAdd);
      if (v[0] == int(Op::LD) && v[1] <= kPrint) return int(kLdGlobal) + v[1];
      return int(kOther);
    });
    acc = b.mux("r.loads", g,
                {{kAdd, sum},
                 {int(kLdGlobal) + kGlobal, v_global},
                 {int(kLdGlobal) + kShared, v_shared},
                 {int(kLdGlobal) + kLocal, v_local},
                 {int(kLdGlobal) + kParam, v_param},
                 {int(kLdGlobal) + kPrint, v_print},
                 {kOther, acc}},
                8);
  }

  // Stage 2b: bit operations, popc and clz, after the loads.
  const size_t stage2b = p.ops().size();
  const Word Ab = circuit::regroup(p, "Ab", Aw, 1), Bb = circuit::regroup(p, "Bb", Bw, 1);
  // Bit operations, one value per result bit: and, or, xor, shifts by b mod
  // 32 (arithmetic right shifts fill with the sign), bit reversal.
  Word bits{{}, 1};
  for (int i = 0; i < 32; ++i) {
    auto a_ = [&](int j) { return Ab.digits[j]; };
    const ValueId bi = Bb.digits[i];
    std::vector<Step> st;
    st.push_back({{{bop, kAnd, 1}, {a_(i), 1, 1}, {bi, 1, 1}}, -2, 0, 1});
    st.push_back({{{bop, kOr, 1}, {a_(i), 1, 1}}, -1, 0, 1});
    st.push_back({{{bop, kOr, 1}, {a_(i), 0, 1}, {bi, 1, 1}}, -2, 0, 1});
    st.push_back({{{bop, kXor, 1}, {a_(i), 1, 1}, {bi, 0, 1}}, -2, 0, 1});
    st.push_back({{{bop, kXor, 1}, {a_(i), 0, 1}, {bi, 1, 1}}, -2, 0, 1});
    for (int sh = 0; sh < 32; ++sh) {
      if (i - sh >= 0) st.push_back({{{bop, kShl, 1}, {amount32, sh, 1}, {a_(i - sh), 1, 1}}, -2, 0, 1});
      if (i + sh < 32) st.push_back({{{bop, kShr, 1}, {amount32, sh, 1}, {a_(i + sh), 1, 1}}, -2, 0, 1});
      st.push_back({{{bop, kSar, 1}, {amount32, sh, 1}, {a_(std::min(i + sh, 31)), 1, 1}}, -2, 0, 1});
    }
    st.push_back({{{bop, kBrev, 1}, {a_(31 - i), 1, 1}}, -1, 0, 1});
    bits.digits.push_back(p.mlp("bits.b" + std::to_string(i), 2, 0, std::move(st)));
  }
  {
    enum G { kOther, kBits, kPopc, kClz };
    const ValueId g = circuit::apply(p, "group2b", 4, alu_case, [](int s) {
      return s == kBitsCase ? int(kBits) : s == int(Op::POPC) ? int(kPopc) : s == int(Op::CLZ) ? int(kClz) : int(kOther);
    });
    const Digits r_bits = word_digits(circuit::regroup(p, "bits4", bits, 4));
    const Digits r_popc = word_digits(circuit::popc(p, "popc", Ab, 4));
    const Digits r_clz = word_digits(circuit::clz(p, "clz", Ab, 4));
    p.wait_for(stage2b, acc.back().v);
    acc = b.mux("r.bits", g, {{kBits, r_bits}, {kPopc, r_popc}, {kClz, r_clz}, {kOther, acc}}, 8);
  }

  // Stage 3: subtraction, comparisons and the operations that choose an operand.
  const size_t stage3 = p.ops().size();
  const Digits r_sub = word_digits(circuit::add(p, "sub", Aw, Bw, true).value);
  const ValueId eq = circuit::equal(p, "seq", Aw, Bw);
  const ValueId lt = circuit::less_than(p, "slt", Aw, Bw, true), gt = circuit::less_than(p, "sgt", Bw, Aw, true);
  const ValueId ltu = circuit::less_than(p, "sltu", Aw, Bw, false), gtu = circuit::less_than(p, "sgtu", Bw, Aw, false);
  const ValueId nzA = b.lnot("a_nonzero", is_zero(b, "a_zero", A));
  p.wait_for(stage3, acc.back().v);
  {
    enum G { kOther, kSub, kSeq, kSne, kSlt, kSle, kSltu, kSleu, kSel, kMin, kMax, kMinu, kMaxu };
    const ValueId g = circuit::apply(p, "group3", 13, alu_case, [](int s) {
      switch (Op(s)) {
        case Op::SUB: return int(kSub);
        case Op::SEQ: return int(kSeq);
        case Op::SNE: return int(kSne);
        case Op::SLT: return int(kSlt);
        case Op::SLE: return int(kSle);
        case Op::SLTU: return int(kSltu);
        case Op::SLEU: return int(kSleu);
        case Op::SEL: return int(kSel);
        case Op::MIN: return int(kMin);
        case Op::MAX: return int(kMax);
        case Op::MINU: return int(kMinu);
        case Op::MAXU: return int(kMaxu);
        default: return int(kOther);
      }
    });
    acc = b.mux("r.stage3", g,
                {{kSub, r_sub},
                 {kSeq, {{eq}}},
                 {kSne, {{b.lnot("sne", eq)}}},
                 {kSlt, {{lt}}},
                 {kSle, {{b.lnot("sle", gt)}}},
                 {kSltu, {{ltu}}},
                 {kSleu, {{b.lnot("sleu", gtu)}}},
                 {kSel, B, nzA, 1},
                 {kSel, C, nzA, 0},
                 {kMin, A, lt, 1},
                 {kMin, B, lt, 0},
                 {kMax, B, lt, 1},
                 {kMax, A, lt, 0},
                 {kMinu, A, ltu, 1},
                 {kMinu, B, ltu, 0},
                 {kMaxu, B, ltu, 1},
                 {kMaxu, A, ltu, 0},
                 {kOther, acc}},
                8);
  }
  const Digits R = acc;
  const ValueId hi_zero = is_zero(b, "hi_zero", slice(b.pad(R, 8), 4, 4));

  // ---- 5. scheduler and output -------------------------------------------------
  // Thread table: per thread of the CTA, how it stopped (0 never, 1 exit,
  // 2 bar, 3 wbar), the epoch it waits in, and where it continues.
  const ValueId stops = b.flag("stops", tkind, [](int s) { return s == kExit || s == kBar || s == kWbar; });
  // (A faulting access ends the launch, so whether its block's terminator
  // also updates the table does not matter: the table does not wait for the
  // address checks.)
  const ValueId ctrl_here = p.lookup("ctrl_here", 2, {pass, has_dst}, [](const std::vector<int>& v) {
    return v[0] == kCtrl || (v[0] == kExec && !v[1]) ? 1 : 0;
  });
  const ValueId stop_pass = b.all("stop_pass", {ctrl_here, stops});
  const ValueId status = circuit::apply(p, "status", 4, tkind,
                                       [](int s) { return s == kExit ? 1 : s == kBar ? 2 : s == kWbar ? 3 : 0; });
  const auto ws = store(b, "threads", 256, Builder::bits(cur_w, 0, 8), Builder::bits(P, 0, 8), stop_pass, is_cta,
                        cat({{status, 0}, {epoch, 0}}, digit_parts(t_target)));
  const ValueId ws_status = ws[0], ws_epoch = ws[1];
  const Digits ws_pc = outs(ws, 2, 3);
  const ValueId is_barrier = b.is_kind(Kind::BARRIER);
  const ValueId bar_stop = b.all("bar_stop", {stop_pass, b.flag("tk_bar", tkind, [](int s) { return s == kBar; })});
  const ValueId barf = store(b, "barrier_waiting", 1, {}, {}, b.any("barf_we", {bar_stop, is_barrier}), is_cta,
                             {{b.lnot("barf_set", is_barrier), 0}})[0];

  const Digits w_in = slice(P, 0, 3);
  const ValueId w_is_end = circuit::equal(p, "w_is_end", b.word(w_in), b.word(n_threads));

  // Warp groups (docs/tokens.md section 4): the running minimum of the group
  // the scan is in (the last WMIN since the WARP that entered it), whether
  // this pass wrote a WMIN, and per group the release pc the last pass left:
  // the running minimum as the scan leaves the group (read one token later,
  // on the WARP that leaves it, through the conv).
  const ValueId is_warp = b.is_kind(Kind::WARP), is_wmin = b.is_kind(Kind::WMIN);
  const ValueId group_start = p.lookup("group_start", 2, {b.kind, b.pay[0], b.pay[1]}, [](const std::vector<int>& v) {
    return v[0] == int(Kind::WARP) && v[1] == 0 && v[2] % 2 == 0 ? 1 : 0;
  });
  const ValueId warp0 = b.all("warp0", {is_warp, is_zero(b, "pay_zero", P)});
  const auto wm = store(b, "wmin", 1, {}, {}, is_wmin, group_start, cat({{is_wmin, 0}}, payload_parts(3, 0)));
  const ValueId wm_valid = wm[0];
  const Digits wm_pc = outs(wm, 1, 3);
  const ValueId wmin_pass = store(b, "wmin_pass", 1, {}, {}, b.any("wmin_pass_we", {is_wmin, warp0}), -1,
                                  {{is_wmin, 0}})[0];
  // WARP(w) leaves group (w - 1) / 32 when w % 32 == 0 (w > 0) or w == threads.
  std::vector<Term> left_terms{{b.pay[2], 1, 256}, {b.pay[0], 0, -1}};
  for (int s = 1; s < 16; ++s) left_terms.push_back({b.pay[1], s, 16 * s});
  const ValueId group_left = p.ladder("group_left", 8, left_terms, 0, [](int s) { return std::clamp(s, 0, 255) / 32; });
  const ValueId leaves = p.lookup("group_leaves", 2, {is_warp, group_start, warp0, w_is_end},
                                  [](const std::vector<int>& v) { return v[0] && ((v[1] && !v[2]) || v[3]) ? 1 : 0; });
  const auto rel = store(b, "wmin_release", 8, {{group_left, 0}, {group_left, 1}, {group_left, 2}},
                         {{b.pay[1], 1}, {b.pay[1], 2}, {b.pay[1], 3}}, leaves, is_cta,
                         {{wm_valid, 1}, {wm_pc[0].v, 1}, {wm_pc[1].v, 1}, {wm_pc[2].v, 1}});
  const ValueId released = b.all("released", {rel[0], circuit::equal(p, "rel_eq", b.word(ws_pc), b.word(outs(rel, 1, 3)))});
  auto below_wmin = [&](const std::string& name, const Digits& pc) {
    const ValueId lt = circuit::less_than(p, name + ".lt", b.word(pc), b.word(wm_pc));
    return p.lookup(name, 2, {wm_valid, lt}, [](const std::vector<int>& v) { return !v[0] || v[1] ? 1 : 0; });
  };
  const ValueId wmin_ws = b.all("wmin_ws", {b.flag("ws_wbar", ws_status, [](int s) { return s == 3; }),
                                            below_wmin("ws_below", ws_pc)});
  const ValueId wmin_t = below_wmin("t_below", t_target);

  const ValueId runnable = p.lookup("runnable", 2, {ws_status, ws_epoch, epoch, released}, [](const std::vector<int>& v) {
    return v[0] == 0 || (v[0] == 2 && v[1] != v[2]) || (v[0] == 3 && v[3]) ? 1 : 0;
  });
  const Digits w_next = increment(b, "w_next", w_in);
  const Digits cur_w_next = increment(b, "cur_w_next", cur_w);
  const Digits cta_next = increment(b, "cta_next", cur_c);
  const ValueId cta_more = circuit::less_than(p, "cta_more", b.word(cta_next), b.word(n_ctas));
  const ValueId cond_nz = b.lnot("cond_nz", is_zero(b, "cond_zero", regA));

  enum Out { kEnd, kFault, kVz, kVlo, kHiTok, kExecT, kExecF, kExecWs, kWarpCur, kWarpIn, kWarp0, kTrapTok, kBarrier,
             kCtaNext, kCta0, kWminWs, kWminT, kVxT, kVxF, kVg, kVn, kVzf, kVgf, kVnf, kHiFall, kOutCount };
  const ValueId ctrl_case = p.lookup("ctrl_case", kOutCount, {tkind, cond_nz, wmin_t}, [](const std::vector<int>& v) {
    switch (v[0]) {
      case kJmp: return int(kExecT);
      case kBr: return int(v[1] ? kExecT : kExecF);
      case kExit: case kBar: return int(kWarpCur);
      case kWbar: return int(v[2] ? kWminT : kWarpCur);
      case kTrap: return int(kTrapTok);
      default: return int(kEnd);
    }
  });
  // VX: a result below 64 and a terminator that does not read the register
  // file (jmp, or br on the register the block writes: its condition is the
  // result).  Which of the two depends on the ROM alone.
  const ValueId cond_is_dst =
      b.all("cond_is_dst", {p.lookup("cond_dst_lo", 2, {r_t[0], opP[0].v},
                                     [](const std::vector<int>& v) { return v[0] == v[1] ? 1 : 0; }),
                            p.lookup("cond_dst_hi", 2, {r_t[1], opP[1].v},
                                     [](const std::vector<int>& v) { return (v[0] & 1) == (v[1] & 1) ? 1 : 0; })});
  const ValueId vx_term = p.lookup("vx_term", 3, {tkind, cond_is_dst}, [](const std::vector<int>& v) {
    return v[0] == kJmp ? 1 : v[0] == kBr && v[1] ? 2 : 0;
  });
  const Digits Rp = b.pad(R, 8);
  if (Rp[0].v < 0 || Rp[1].v < 0) throw std::logic_error("gpu circuit: a low digit of the result is a constant");
  // Each in one ladder over the digits (no layer of flags before it):
  // r_small: digits 2..7 are 0 and digit 1 is below 4 (the result is below
  // 64); r_nz: digit 0 or 1 is not 0.
  std::vector<Term> small_terms, nz_terms;
  for (int i = 2; i < 8; ++i) small_terms.push_back({Rp[i].v, 0, 1});
  for (int s = 0; s < 4; ++s) small_terms.push_back({Rp[1].v, s, 1});
  for (int s = 1; s < 16; ++s) {
    nz_terms.push_back({Rp[0].v, s, 1});
    nz_terms.push_back({Rp[1].v, s, 1});
  }
  const ValueId r_small = p.ladder("r_small", 2, small_terms, 0, [](int s) { return s == 7 ? 1 : 0; });
  const ValueId r_nz = p.ladder("r_low_nonzero", 2, nz_terms, 0, [](int s) { return s >= 1 ? 1 : 0; });
  const ValueId vx_case = p.lookup("vx_case", 3, {vx_term, r_small, r_nz}, [](const std::vector<int>& v) {
    if (!v[1] || !v[0]) return 0;
    return v[0] == 1 || v[2] ? 1 : 2;  // 1: the t target, 2: the f target
  });
  // The high half: 0 (VZ), kGlobalHigh (VG), kNegativeHigh (VN), or other (VLO, D).
  auto high_is = [&](const std::string& name, uint32_t h) {
    std::vector<Term> t;
    for (int i = 0; i < 4; ++i) t.push_back({Rp[4 + i].v, int((h >> (4 * i)) & 15), 1});
    return p.ladder(name, 2, t, 0, [](int s) { return s == 4 ? 1 : 0; });
  };
  for (int i = 4; i < 8; ++i)
    if (Rp[i].v < 0) throw std::logic_error("gpu circuit: a digit of the result's high half is a constant");
  const ValueId hi_class = p.lookup("hi_class", 4, {hi_zero, high_is("hi_global", kGlobalHigh),
                                                    high_is("hi_negative", kNegativeHigh)},
                                    [](const std::vector<int>& v) { return v[0] ? 1 : v[1] ? 2 : v[2] ? 3 : 0; });
  // A fall-through value: the block goes on to the block after it (jmp
  // there, or br there on its result, which is not 0 when VX is not
  // written), and fewer than kFallChain of them ran since the last EXEC or VX.
  const ValueId falls_on = p.lookup("falls_on", 2, {vx_term, may_fall, circuit::equal(p, "t_is_next", b.word(t_target), b.word(next_pc))},
                                    [](const std::vector<int>& v) { return v[0] != 0 && v[1] && v[2] ? 1 : 0; });
  const ValueId exec_case = p.lookup("exec_case", kOutCount, {fault, has_dst, hi_class, ctrl_case, vx_case, falls_on},
                                     [](const std::vector<int>& v) {
                                       if (v[0]) return int(kFault);
                                       if (v[1] && v[4]) return int(v[4] == 1 ? kVxT : kVxF);
                                       if (v[1] && v[5] && v[2] != 0)
                                         return int(v[2] == 1 ? kVzf : v[2] == 2 ? kVgf : kVnf);
                                       if (v[1]) return int(v[2] == 1 ? kVz : v[2] == 2 ? kVg : v[2] == 3 ? kVn : kVlo);
                                       return v[3];
                                     });
  const ValueId warp_case = p.lookup("warp_case", kOutCount, {w_is_end, runnable, barf, cta_more, wmin_pass, wmin_ws},
                                     [](const std::vector<int>& v) {
                                       if (!v[0]) return int(v[1] ? kExecWs : v[5] ? kWminWs : kWarpIn);
                                       if (v[4]) return int(kWarp0);   // the wbar release
                                       if (v[2]) return int(kBarrier);
                                       return int(v[3] ? kCtaNext : kEnd);
                                     });
  // What to write: one step per (pass, case); the base slot is END.
  std::vector<Step> oc_steps;
  for (int k = 1; k < kOutCount; ++k) {
    oc_steps.push_back({{{pass, kExec, 1}, {exec_case, k, 1}}, -1, kEnd, k});
    oc_steps.push_back({{{pass, kCtrl, 1}, {ctrl_case, k, 1}}, -1, kEnd, k});
    oc_steps.push_back({{{pass, kWarp, 1}, {warp_case, k, 1}}, -1, kEnd, k});
  }
  // After VLO: D, or DF when the block falls through and EXEC or VX named it.
  const ValueId hi_falls = p.lookup("hi_falls", 2, {falls_on, falls},
                                    [](const std::vector<int>& v) { return v[0] && v[1] == 0 ? 1 : 0; });
  oc_steps.push_back({{{pass, kHi, 1}, {hi_falls, 0, 1}}, -1, kEnd, kHiTok});
  oc_steps.push_back({{{pass, kHi, 1}, {hi_falls, 1, 1}}, -1, kEnd, kHiFall});
  oc_steps.push_back({{{pass, kStart, 1}}, 0, kEnd, kCta0});
  oc_steps.push_back({{{pass, kToWarp0, 1}}, 0, kEnd, kWarp0});
  oc_steps.push_back({{{pass, kWmin, 1}}, 0, kEnd, kWarpCur});
  const ValueId oc = p.mlp("out_case", kOutCount, kEnd, std::move(oc_steps));
  const ValueId out_kind = circuit::apply(p, "out_kind", kKindCount, oc, [](int s) {
    switch (Out(s)) {
      case kFault: return int(Kind::FAULT);
      case kVz: return int(Kind::VZ);
      case kVlo: return int(Kind::VLO);
      case kVxT: case kVxF: return int(Kind::VX);
      case kVg: return int(Kind::VG);
      case kVn: return int(Kind::VN);
      case kVzf: return int(Kind::VZF);
      case kVgf: return int(Kind::VGF);
      case kVnf: return int(Kind::VNF);
      case kHiFall: return int(Kind::DF);
      case kHiTok: return int(Kind::D);
      case kExecT: case kExecF: case kExecWs: return int(Kind::EXEC);
      case kWminWs: case kWminT: return int(Kind::WMIN);
      case kWarpCur: case kWarpIn: case kWarp0: return int(Kind::WARP);
      case kTrapTok: return int(Kind::TRAP);
      case kBarrier: return int(Kind::BARRIER);
      case kCtaNext: case kCta0: return int(Kind::CTA);
      default: return int(Kind::END);
    }
  });
  const ValueId fault_kind = b.flag("fault_kind", fault, [](int s) { return s == 2; });
  // Control payloads depend only on the ROM, the thread table and the
  // context: chosen as soon as those are known, so that only the choice
  // stays in the residual while the ALU works.
  // WARP passes: warp_case; WMIN passes: the next WARP; the others: ctrl_case.
  const ValueId ctrl_pass = b.flag("ctrl_payload_pass", pass, [](int s) { return s != kWarp && s != kWmin; });
  std::vector<Step> pre_steps{{{{pass, kWmin, 1}}, 0, kEnd, kWarpCur}};
  for (int k = 1; k < kOutCount; ++k) {
    pre_steps.push_back({{{ctrl_pass, 1, 1}, {ctrl_case, k, 1}}, -1, kEnd, k});
    pre_steps.push_back({{{pass, kWarp, 1}, {warp_case, k, 1}}, -1, kEnd, k});
  }
  const ValueId pre_case = p.mlp("pre_case", kOutCount, kEnd, std::move(pre_steps));
  const Digits ctrl_pay = b.mux("ctrl_payload", pre_case,
                                {{kExecT, t_target},
                                 {kExecF, f_target},
                                 {kExecWs, ws_pc},
                                 {kWarpCur, cur_w_next},
                                 {kWarpIn, w_next},
                                 {kTrapTok, t_target},
                                 {kBarrier, {{b.lnot("next_epoch", epoch)}}},
                                 {kCtaNext, cta_next},
                                 {kWminWs, ws_pc},
                                 {kWminT, t_target}},
                                4);
  std::vector<Builder::Case> out_cases = {{kFault, {{fault_kind}}},
                                          {kVz, slice(Rp, 0, 4)},
                                          {kVlo, slice(Rp, 0, 4)},
                                          {kVg, slice(Rp, 0, 4)},
                                          {kVn, slice(Rp, 0, 4)},
                                          {kVzf, slice(Rp, 0, 4)},
                                          {kVgf, slice(Rp, 0, 4)},
                                          {kVnf, slice(Rp, 0, 4)},
                                          {kHiTok, slice(Rp, 4, 4)},
                                          {kHiFall, slice(Rp, 4, 4)}};
  for (int k : {kExecT, kExecF, kExecWs, kWarpCur, kWarpIn, kTrapTok, kBarrier, kCtaNext, kWminWs, kWminT})
    out_cases.push_back({k, ctrl_pay});
  // VX(target, v): the target's 10 bits, then v's 6 (vx_payload).  Payload
  // digit 2 is the target's bits 8..9 and v's bits 0..1, digit 3 v's bits
  // 2..5 (result digit 1 is below 4 when VX is written).
  auto vx_pay = [&](const std::string& name, const Digits& target) {
    std::vector<Term> t, t3;
    for (int s = 1; s < 16; ++s) {
      if (s & 3) {
        t.push_back({target[2].v, s, s & 3});
        t.push_back({Rp[0].v, s, (s & 3) << 2});
      }
      if (s >> 2) t3.push_back({Rp[0].v, s, s >> 2});
      t3.push_back({Rp[1].v, s, s << 2});
    }
    const ValueId d2 = p.ladder(name, 16, t, 0, [](int s) { return std::min(s, 15); });
    const ValueId d3 = p.ladder(name + ".hi", 16, t3, 0, [](int s) { return std::min(s, 15); });
    return Digits{target[0], target[1], {d2}, {d3}};
  };
  out_cases.push_back({kVxT, vx_pay("vx_t", t_target)});
  out_cases.push_back({kVxF, vx_pay("vx_f", f_target)});
  const Digits out_pay = b.mux("out_payload", oc, out_cases, 4);
  std::vector<std::pair<ValueId, ValueId>> head{{b.kind, out_kind}};
  for (int i = 0; i < 4; ++i) head.push_back({b.pay[i], out_pay[i].v >= 0 ? out_pay[i].v : b.konst(16, 0)});
  p.output(head);
  return {std::move(p), {"global", "print"}};
}

}  // namespace

circuit::Program machine_circuit() { return machine_program().program; }

Built build(const std::function<void(const std::string&)>& progress) {
  auto say = [&](const std::string& s) {
    if (progress) progress(s);
  };
  say("declaring the machine circuit");
  MachineProgram mp = machine_program();
  say("compiling " + std::to_string(mp.program.ops().size()) + " ops over " +
      std::to_string(mp.program.tokens().size()) + " tokens");
  circuit::Options opt;
  opt.token_base = kTokenBase;
  opt.vocab_size = kTokenBase + circuit_token_count();
  circuit::Compiled c = circuit::compile(mp.program, opt);
  Built out;
  out.report = c.report();
  out.layout.num_layers = c.num_layers();
  out.layout.vocab_size = opt.vocab_size;
  for (const std::string& name : mp.readable) out.layout.memories.push_back(c.memory_layout(name));
  {
    const auto& values = mp.program.values();
    ValueId v = -1;
    for (size_t i = 0; i < values.size(); ++i)
      if (values[i].name == "mul.l0") v = ValueId(i);
    if (v < 0) throw std::logic_error("gpu: the multiplier's digit 'mul.l0' is missing");
    const int layer = c.depths().at(v) / 2;
    AluWeight& w = out.alu_weight;
    w.tensor = "layers." + std::to_string(layer) + ".mlp.down_proj.weight";
    w.row = c.dims(v).at(4);
    const torch::Tensor down = c.checkpoint().tensors.at(w.tensor);
    const torch::Tensor nz = down[w.row].nonzero();
    if (nz.size(0) == 0) throw std::logic_error("gpu: no unit writes slot 4 of 'mul.l0'");
    w.col = nz[0][0].item<int64_t>();
    w.value = down[w.row][w.col].item<float>();
  }
  say("compiled: " + std::to_string(c.num_layers()) + " layers");
  out.checkpoint = c.take_checkpoint();
  return out;
}

std::vector<uint32_t> read_words(const Layout& layout, const qwen::Model& model, const qwen::State& state,
                                 const std::string& name, uint32_t count, uint32_t first) {
  const circuit::MemoryLayout& m = layout.memory(name);
  if (first > uint32_t(m.rows) || count > uint32_t(m.rows) - first)
    throw std::runtime_error("gpu: memory '" + name + "' has only " + std::to_string(m.rows) + " words");
  auto layer_state = [&](int layer) { return model.recurrent_state(state, layer); };
  std::vector<uint32_t> words(count, 0);
  for (uint32_t w = 0; w < count; ++w) {
    const std::vector<int> nibbles = m.read(int(first + w), layer_state);
    for (size_t i = 0; i < nibbles.size(); ++i) {
      if (nibbles[i] < 0)
        throw std::runtime_error("gpu: memory '" + name + "' word " + std::to_string(first + w) +
                                 " does not hold a clean code in the model's state");
      words[w] |= uint32_t(nibbles[i]) << (4 * i);
    }
  }
  return words;
}

}  // namespace qgpu::gpu
