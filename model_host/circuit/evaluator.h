// The oracle: the IR executed with plain integers, token by token.
#pragma once

#include "model_host/circuit/ir.h"

#include <climits>
#include <deque>
#include <map>
#include <vector>

namespace qgpu::circuit {

// A slot of a value on one token, or kUndefined: the value depends on a
// memory row never written (unless the memory reads such rows as zero) or
// written from tokens before the sequence start; the compiled model promises
// nothing about such values.
inline constexpr int kUndefined = -1;

class Evaluator {
 public:
  // With `depth` (Compiled::depths()), the evaluator also knows what the
  // compiled model cannot promise: an undefined value in the residual changes
  // the norms of everything computed after it on that token, so every value
  // produced at a later depth on that token is undefined too (and so are the
  // rows a memory writes there).
  explicit Evaluator(const Program& program, std::vector<int> depth = {});

  // Feeds one circuit token (an index into Program::tokens()); returns the
  // slot of every value on it (a scalar's integer).  Throws std::logic_error
  // when an MLP op's steps do not leave exactly one slot (a bug in the
  // program's lowering).
  const std::vector<int>& step(int token);
  // The token the output head selects on the last token fed, or -1 when no
  // token carries the computed slots (or a computed slot is undefined).
  int emitted() const;
  // Feeds a token outside the circuit (all circuit fields zero): its values
  // are undefined and it occupies a place in the conv window.
  void blank();
  // Back to the empty sequence.
  void reset();

 private:
  struct Store {
    std::vector<std::vector<int>> rows;   // per row, one slot per part; empty = never written
  };
  void advance();
  int operand(const Operand& o, const std::vector<int>& vals) const;
  int row(const Address& a, const std::vector<int>& vals) const;   // or kUndefined
  int eval_mlp(size_t op_index, const MlpOp& op, const std::vector<int>& vals) const;
  // eval_mlp through the op's table of results when it has one (see Memo).
  int eval_mlp_memo(size_t op_index, const MlpOp& op, const std::vector<int>& vals);
  // Which result eval_mlp gives: a slot (>= 0), or -2 - k when pass k holds.
  int mlp_outcome(size_t op_index, const MlpOp& op, const std::vector<int>& vals) const;
  void eval_memory(size_t op_index, const MemoryOp& op, std::vector<int>& vals);
  void poison_memory(size_t op_index, const MemoryOp& op, std::vector<int>& vals);
  int op_depth(size_t op_index) const;

  const Program& program_;
  std::vector<int> depth_;                 // per value, or empty
  std::vector<size_t> order_;              // ops by depth (program order without depths)
  std::deque<std::vector<int>> history_;   // values of up to 3 previous tokens, newest last
  std::vector<int> current_;
  std::map<size_t, Store> stores_;         // by op index
  std::map<std::vector<int>, int> output_tokens_;   // output-field slots -> token
  // An MLP op is a pure function of the slots its forms and literals read
  // (its pass sources only give the value a held pass copies).  An op with
  // many terms over few slot combinations keeps its outcomes in a table
  // indexed by those slots, filled on first use by eval_mlp itself: the
  // same results, without rereading every term on every token.
  struct Memo {
    std::vector<ValueId> reads;   // the values its forms and literals read
    std::vector<int> sizes;       // their slot counts
    std::vector<int> table;       // outcome per combination, or kUnknown; allocated on first use
    size_t combinations = 0;
  };
  static constexpr int kUnknown = INT_MIN;
  std::vector<Memo> memo_;                 // per op; empty reads: evaluated directly
  size_t memo_budget_ = 0;                 // table entries still allowed
  std::vector<std::vector<char>> repeats_;   // per op, per step: its form is the step before's
};

}  // namespace qgpu::circuit
