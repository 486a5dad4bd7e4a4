// The machine circuit's building blocks (internal to the machine circuit:
// circuit.h is the interface).  Values in nibble digits (`Digits`, a digit
// a value or a constant), a Builder over the circuit Program with cached
// flags and constants, and the helpers every stage uses: one-row and wider
// stores, bit fields, increments, the staged multiplier, conjunctions.
//
// The stages, in depth order (machine_circuit() in circuit.cpp runs them;
// the compiler places each op at the first layer its inputs allow, and the
// order they declare ops in is the program's):
//   context.h    what earlier tokens said (block, thread, CTA, launch shape, pass);
//   rom.h        the five 1024-row stores of the launch's program;
//   registers.h  three read ports over the register file;
//   alu.h        operands, address checks, data memories and the ALU;
//   scheduler.h  the thread table and the warp groups;
//   output.h     what to write next, and the output head.
#pragma once

#include "model_host/circuit/ir.h"
#include "model_host/circuit/words.h"
#include "model_host/tokens/vocab.h"

#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace qgpu::gpu::mc {

using circuit::AddrBit;
using circuit::MemoryOp;
using circuit::Operand;
using circuit::Program;
using circuit::Step;
using circuit::Term;
using circuit::ValueId;
using circuit::Word;

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
                           std::vector<MemoryOp::Part> parts);
// Outputs from..from + n of a store as digits.
Digits outs(const std::vector<ValueId>& v, size_t from, size_t n);

// Record parts: payload nibble i of the token `age` back; the first n
// nibbles; two lists joined; a word's digits (age 0).
inline MemoryOp::Part payload_part(const Builder& b, int i, int age) { return MemoryOp::Part{b.pay[i], age}; }
inline std::vector<MemoryOp::Part> payload_parts(const Builder& b, int n, int age) {
  std::vector<MemoryOp::Part> v;
  for (int i = 0; i < n; ++i) v.push_back(payload_part(b, i, age));
  return v;
}
inline std::vector<MemoryOp::Part> cat(std::vector<MemoryOp::Part> a, const std::vector<MemoryOp::Part>& c) {
  a.insert(a.end(), c.begin(), c.end());
  return a;
}
inline std::vector<MemoryOp::Part> digit_parts(const Digits& d) {
  std::vector<MemoryOp::Part> v;
  for (const Dig& x : d) v.push_back({x.v, 0});
  return v;
}

// Bits [lo, lo + n) (n <= 4) of a nibble word as one value of 2^n slots.
ValueId bitfield(Builder& b, const std::string& name, const Digits& w, int lo, int n);
// w == 0 as a flag.
ValueId is_zero(Builder& b, const std::string& name, const Digits& w);
// w + 1 (mod 16^n), digit by digit: digit i gains the carry "every lower digit is 15".
// With `cond` (a flag), w + 1 where it holds and w where it does not.
Digits increment(Builder& b, const std::string& name, const Digits& w, ValueId cond = -1);
// Bits of a global memory offset: global_bytes = 2^bits (machine::model_params(),
// machine::kModelMinGlobalBytes to kModelMaxGlobalBytes).  MG's 16-bit payload
// names the word in its page and MGP the page (tokens/vocab.h).
int global_address_bits();
Digits slice(const Digits& d, size_t from, size_t n);
Digits word_digits(const Word& w);
// The 64-bit product a * b of nibble words, all 16 digits: nibble products
// by table, column sums by ladder, then one addition; like circuit::mul_lo
// and mul_hi, but the columns are computed in stages, each waiting for the
// one before, so that only one stage's products occupy the residual at a time
// (the stages are sized to the GPU's residual where the ALU computes them).
Digits multiply(Program& p, const std::string& name, const Word& a, const Word& b);

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
Step conjunction(const std::vector<Lit>& lits, int to);
std::vector<int> slots_where(int size, const std::function<bool(int)>& f);

}  // namespace qgpu::gpu::mc
