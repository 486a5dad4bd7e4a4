// The GPU inside the model: the circuit that executes docs/tokens.md's trace,
// compiled into Qwen3.5 linear-attention layers by the circuit compiler.
//
// `build()` declares the machine as a circuit Program (token decoding, the
// ROM, the register file, the memories, the ALU, the scheduler and the output
// head) and compiles it.  `Layout` records where the memories the host reads
// back after a launch live in the compiled layers; it is saved beside the
// checkpoint as `qgpu-gpu.json`.
#pragma once

#include <array>

#include "model_host/circuit/compiler.h"
#include "model_host/circuit/ir.h"
#include "model_host/machine/isa.h"
#include "model_host/qwen/checkpoint.h"
#include "model_host/qwen/model.h"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace qgpu::gpu {

struct Layout {
  int num_layers = 0;
  int64_t vocab_size = 0;
  std::string circuit;   // the circuit version that compiled the model (circuit_version()), "" if unknown
  // The memories the host reads back (circuit::MemoryLayout: word w is row w,
  // nibble i of the word its part i).
  std::vector<circuit::MemoryLayout> memories;
  const circuit::MemoryLayout& memory(const std::string& name) const;  // throws if absent
  std::string to_json() const;
  static Layout from_json(const std::string& text);           // throws on malformed input
};

// One compiled weight of the ALU, for the negative test (changing it must
// make the model compute wrong results): the MLP down projection onto slot 4
// of the multiplier's lowest product digit.
struct AluWeight {
  std::string tensor;   // e.g. "layers.20.mlp.down_proj.weight"
  int64_t row = 0, col = 0;
  float value = 0;
};

struct Built {
  qwen::Checkpoint checkpoint;
  Layout layout;
  std::string report;   // the compiler's budget table
  AluWeight alu_weight;
};

// The machine as a circuit program, before compilation: circuit token t is
// vocabulary id kTokenBase + t.  Tests run it on circuit::Evaluator (the
// oracle of the compiled layers) against the interpreter's trace.
circuit::Program machine_circuit();

// The block a pass runs, or whose terminator it follows (docs/tokens.md,
// fall-through values), as the circuit computes it in one MLP layer: the
// block of the last EXEC or VX (`named`: payload nibbles 0..2; bits 0..9 are
// the block; or `alt`, the start, where `alt_sel` says a WARPS named the
// block last) plus `falls` (slots 0..kFallChain: fall-through values since,
// counting this token), or plus `prev_falls` (the token before's count) when
// the token is D.  `kind` is the kind field (slots: vocab.h's Kind).
// Returns the block's nibbles 0..2 (digit 2 in 0..3).  Part of
// machine_circuit(); declared here for its exhaustive test.
// Where `alt_sel` (a flag) holds, the base is `alt` instead of `named`
// (the block a WARPS ran: its pc is not in a payload).
std::array<circuit::ValueId, 3> run_pc(circuit::Program& p, circuit::ValueId kind,
                                       const std::array<circuit::ValueId, 3>& named, circuit::ValueId falls,
                                       circuit::ValueId prev_falls, const std::array<circuit::ValueId, 3>& alt = {},
                                       circuit::ValueId alt_sel = -1);

// Residual dimensions the GPU leaves free on every token and in every layer
// (circuit::Options::free_dims): what a merge into a text model mutes the
// circuit on (docs/merge.md).  A GPU that does not fit in the rest fails to
// compile, naming what fills the residual.
inline constexpr int kFreeResidualDims = 36;

// Compiles the GPU.  Deterministic: the same weights every run.  `progress`
// receives one line per phase.
Built build(const std::function<void(const std::string&)>& progress = {});

// Reads `count` words of memory `name`, from word `first` on, back from a
// sequence's GDN state.
// A word whose channels do not hold a clean one-hot per nibble throws
// std::runtime_error naming the memory and word (the state is corrupt).
std::vector<uint32_t> read_words(const Layout& layout, const qwen::Model& model, const qwen::State& state,
                                 const std::string& name, uint32_t count, uint32_t first = 0);

}  // namespace qgpu::gpu
