// The circuit IR: a declared computation over circuit tokens, before it is
// placed into layers.
//
// A quantity is a *value* holding one of `size` slots.  A categorical value
// is a one-hot code over `size` residual dimensions (a flag or a bit is a
// value of size 2, a nibble of size 16).  A scalar value holds the integer
// n in [0, size) as the amount n in one dimension beside the anchor, with
// four compensating integers whose squares make up the rest of a fixed
// energy, so that every value's energy is constant: that is what keeps the
// residual's RMS a compile-time constant (docs/circuit.md).  Forms read a
// categorical value by its slots and a scalar by its amount.  Values come from
//   - embedding fields: each circuit token sets one slot of every field;
//   - MLP ops: a base slot plus *steps*, each "if an integer linear form of
//     input slots is >= 1, move the output from one slot to another"; every
//     integer primitive (tables, ladders, carries, logic) lowers to steps,
//     and a step is two SwiGLU units; and *passes*, "where a literal holds,
//     the output is a copy of another value", one unit per copied dimension
//     (Program::select);
//   - memory ops: a store of rows in Gated DeltaNet heads, written with a
//     one-hot key and read back with a one-hot query.
// Integers wider than one value are vectors of values (see words.h).
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace qgpu::circuit {

using ValueId = int;

struct ValueInfo {
  std::string name;
  int size = 0;        // number of slots (a scalar: the integers 0 .. size - 1)
  int producer = -1;   // index into Program::ops(), or -1 for an embedding field
  bool scalar = false;
};

// The slot of a Term that reads a scalar's amount.
inline constexpr int kAmount = -1;

// One term of an integer linear form: contributes `coef` when categorical
// value `v` holds slot `slot`, or coef * n when `slot` is kAmount and v is a
// scalar holding n.
struct Term {
  ValueId v;
  int slot;
  int coef = 1;
  static Term amount(ValueId v, int coef = 1) { return {v, kAmount, coef}; }
};

// If sum(terms) + bias >= 1, the output's one-hot moves: +1 on slot `to`,
// -1 on slot `from`.  On valid inputs the forms are integers, so the step
// is decided at least 1/2 away from its threshold (see compiler.h).
struct Step {
  std::vector<Term> form;
  int bias = 0;
  int from = 0, to = 0;
};

// A literal: categorical value v holds slot `slot`.
struct Literal {
  ValueId v = -1;
  int slot = 1;   // the default: a flag holds
};

// Where every literal of `when` holds, the op's result is the value `src`
// itself (of the output's kind and size: a copy of its code) instead of
// base + steps.  A pass is the exact-product trick, one SwiGLU unit per
// entry x it copies: silu(gain x - offset + G (sum of [when] - n))
// [when[0]] / scale, which is x where the conjunction holds and -0 elsewhere
// (docs/circuit.md, section 2).
struct Pass {
  std::vector<Literal> when;   // a conjunction, at least one
  ValueId src = -1;
};

// An MLP operation: out = e[base] + sum of the steps that fire, or the
// source of the pass that holds.  The steps must keep the result a one-hot
// for every input, at most one pass may hold, and no step may fire while
// one does (all checked by the evaluator).
struct MlpOp {
  ValueId out;
  int base = 0;
  std::vector<Step> steps;
  std::vector<Pass> passes;
  std::vector<ValueId> after;   // values it waits for without reading them (Program::wait_for)
};

// A write enable or reset, or a memory address in its whole-value form:
// either a value or a constant slot.
struct Operand {
  ValueId v = -1;
  int constant = 0;
  static Operand value(ValueId id) { return {id, 0}; }
  static Operand fixed(int slot) { return {-1, slot}; }
  bool is_value() const { return v >= 0; }
};

// One bit of a row address: bit `bit` of value v's slot index, or, for
// v < 0 (AddrBit::fixed), the constant bit `bit` (0 or 1).
struct AddrBit {
  ValueId v = -1;
  int bit = 0;
  static AddrBit fixed(int b) { return {-1, b}; }
  bool is_value() const { return v >= 0; }
};

// A row address: row = sum of bit i << i over `bits` (least significant
// first), the bits drawn from any values (an 8192-row register file is
// addressed by 5 bits of a register value and 8 bits of a thread value).
// Constructed from an Operand, the row is a value's slot (or a constant);
// Program::memory turns that form into the bits of the slot index, so the
// compiler and the evaluator see bits only.
struct Address {
  Address(Operand o) : whole(o) {}
  Address(std::vector<AddrBit> b) : bits(std::move(b)) {}
  std::vector<AddrBit> bits;
  std::optional<Operand> whole;   // the Operand form, until Program::memory expands it
};

// A row store in GDN heads.  Per token, in this order (the GDN equations):
// a reset (slot 1 of `reset`) empties the store; if `write_enable` holds slot
// 1, row `write_addr` becomes the record made of `parts`, each part taken from
// the token `age` positions back (0 = this token; up to 3, through the causal
// conv); then each output reads its part from row `read_addr`.  Each head
// holds 128 channels of one row slice and 128 rows; wider records use several
// heads (slices), more rows several head groups (rows 128g..128g+127 in group
// g); a store with more heads than a layer has spans consecutive layers, whole
// groups per layer.  A row never written (or emptied by a reset) reads as
// undefined, or with `zero_default` as slot 0 in every part.
struct MemoryOp {
  std::string name;
  int rows = 0;
  Address write_addr = Operand::fixed(0), read_addr = Operand::fixed(0);
  Operand write_enable;
  Operand reset = Operand::fixed(0);
  bool zero_default = false;
  // A read row comes back through a per-head norm, which couples the parts
  // that share a head: parts from before the sequence start (all zero in the
  // model) leave the others of their head unknown.  With split_ages, parts of
  // different ages never share a head (more heads), so on the first tokens of
  // a sequence the parts already there read back exactly.
  bool split_ages = false;
  struct Part {
    ValueId data;
    int age = 0;
  };
  std::vector<Part> parts;
  std::vector<ValueId> outs;   // one per part, same sizes
};

using Op = std::variant<MlpOp, MemoryOp>;

struct Token {
  std::string name;
  std::vector<int> slots;      // one per embedding field, in field order
};

// Builds a program.  Builder methods check their arguments and throw
// std::invalid_argument naming what is wrong.
class Program {
 public:
  // Embedding fields must all be declared before the first token.  A
  // token's slot of a scalar field is its integer.
  ValueId field(const std::string& name, int size);
  ValueId scalar_field(const std::string& name, int max);
  // A circuit token: the slot of every embedding field (by field id).
  int token(const std::string& name, const std::vector<std::pair<ValueId, int>>& slots);

  // Low-level MLP op.  With passes the output is of the first source's kind,
  // and every source must be of it (all categorical of `size` slots, or all
  // scalars of maximum size - 1).
  ValueId mlp(const std::string& name, int size, int base, std::vector<Step> steps,
              std::vector<Pass> passes = {});

  // out = f(s) for the integer form s = sum(terms) + bias; f maps every
  // reachable s into [0, size).  One step per change of f along s.
  ValueId ladder(const std::string& name, int size, const std::vector<Term>& terms, int bias,
                 const std::function<int(int)>& f);
  // The same with a scalar out = f(s) in [0, max]: as many steps, but 5
  // residual dimensions instead of max + 1.
  ValueId scalar_ladder(const std::string& name, int max, const std::vector<Term>& terms, int bias,
                        const std::function<int(int)>& f);
  // out = f(x1, ..., xk) over every combination of input slots (categorical
  // inputs); one step per combination whose result differs from the most
  // common one.
  ValueId lookup(const std::string& name, int size, const std::vector<ValueId>& inputs,
                 const std::function<int(const std::vector<int>&)>& f);

  // out = inputs[k] where sel holds slot k: a multiplexer of categorical
  // values of one size, or of scalars of one maximum, made of passes alone
  // (per input: size - 1 units, or 5 for a scalar).
  ValueId select(const std::string& name, ValueId sel, const std::vector<ValueId>& inputs);

  // Returns the outputs, one per part.  Memories store, and are addressed
  // by, categorical values.
  std::vector<ValueId> memory(MemoryOp op);

  // Keeps a value in the residual until the last layer (so it can be read
  // from the final residual); values that nothing uses are otherwise freed.
  void keep(ValueId v);
  // Orders the schedule: every MLP op added since op index `from` (see
  // ops().size()) that reads anything also waits for value `dep`
  // (MlpOp::after: no weight reads it).
  // Placing work after a wide computation instead of beside it keeps the
  // residual from holding both at once.
  void wait_for(size_t from, ValueId dep);
  // Guards.  While a guard is pushed, every step of every MLP op made is
  // conditioned on its literal as well: the literal's slot gets the
  // coefficient K = the most any of the op's step forms can reach on valid
  // inputs (form_range plus bias; one K per op, so that a ladder's steps
  // keep one form), and each bias loses K.  Where the literal holds the
  // forms are what they were; elsewhere they are at most 0, so no step
  // fires and an op without passes holds its base slot.  Work whose result is read only where the
  // literal holds (an ALU operation that a multiplexer picks by the same
  // condition) then leaves every SwiGLU unit at -0 on the other tokens,
  // gates at -96 or below that the sparse executor's bounds skip.  Passes
  // are not conditioned (a select must hold exactly one).  The literal's
  // value must be made before the guarded ops, so that it adds no depth.
  void push_guard(Literal l);
  void pop_guard();
  class Guard {
   public:
    Guard(Program& p, Literal l) : p_(p) { p_.push_guard(l); }
    ~Guard() { p_.pop_guard(); }
    Guard(const Guard&) = delete;
    Guard& operator=(const Guard&) = delete;

   private:
    Program& p_;
  };
  // The LM head: the token whose slots in these embedding fields equal the
  // given computed values wins the argmax.
  void output(const std::vector<std::pair<ValueId, ValueId>>& field_to_value);

  const std::vector<ValueInfo>& values() const { return values_; }
  const ValueInfo& info(ValueId v) const;
  const std::vector<Op>& ops() const { return ops_; }
  const std::vector<ValueId>& fields() const { return fields_; }
  const std::vector<Token>& tokens() const { return tokens_; }
  const std::vector<ValueId>& kept() const { return kept_; }
  const std::vector<std::pair<ValueId, ValueId>>& output_head() const { return output_; }
  // Values an op reads (for an MLP op, the values in its forms).
  std::vector<ValueId> inputs_of(const Op& op) const;
  // Range [lo, hi] that sum(terms) can take on valid inputs.
  std::pair<int, int> form_range(const std::vector<Term>& terms) const;

 private:
  ValueId new_value(const std::string& name, int size, int producer, bool scalar = false);
  ValueId add_field(const std::string& name, int size, bool scalar);
  ValueId make_mlp(const std::string& name, int size, int base, std::vector<Step> steps, bool scalar,
                   std::vector<Pass> passes = {});
  ValueId make_ladder(const std::string& name, int size, const std::vector<Term>& terms, int bias,
                      const std::function<int(int)>& f, bool scalar);
  void check_categorical(ValueId v, const std::string& what) const;
  void check_term(const Term& t, const std::string& what) const;
  void check_value(ValueId v, const char* what) const;
  void check_operand(const Operand& o, int size, const char* what) const;
  void resolve_address(Address& a, int rows, const std::string& what) const;

  std::vector<ValueInfo> values_;
  std::vector<Op> ops_;
  std::vector<Literal> guards_;
  std::vector<ValueId> fields_;
  std::vector<Token> tokens_;
  std::vector<ValueId> kept_;
  std::vector<std::pair<ValueId, ValueId>> output_;
};

}  // namespace qgpu::circuit
