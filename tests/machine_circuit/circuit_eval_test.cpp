// The machine circuit (model_host/machine_circuit/circuit.cpp) run on circuit::Evaluator,
// the plain-integer oracle of the compiled layers, teacher-forced on the
// reference interpreter's trace: after every token the circuit's output head
// must select exactly the token the trace writes next (docs/tokens.md).
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <random>

#include "model_host/circuit/evaluator.h"
#include "model_host/ptx/float_ref.h"
#include "model_host/qwen/model.h"
#include "model_host/machine_circuit/circuit.h"
#include "model_host/tokens/prompt.h"
#include "model_host/tokens/trace.h"
#include "model_host/tokens/vocab.h"
#include "programs.h"

namespace qgpu::gpu {
namespace {

using namespace test;

// The block a pass runs (run_pc) for every block a payload can name, every
// count of fall-through values since, for D (the count of the token before)
// and for another kind (its own count); the count that does not apply is set
// to another value, which must not matter.  Every digit is checked against
// (block + count) mod 1024, and the VX value bits above bit 9 are ignored.
TEST(GpuCircuitEval, RunPcAddsTheFallThroughCountToEveryBlock) {
  circuit::Program p;
  const circuit::ValueId kind = p.field("kind", kKindCount);
  const std::array<circuit::ValueId, 3> named = {p.field("n0", 16), p.field("n1", 16), p.field("n2", 16)};
  const circuit::ValueId falls = p.field("falls", kFallChain + 1), prev = p.field("prev_falls", kFallChain + 1);
  const auto pc = run_pc(p, kind, named, falls, prev);
  struct Case {
    uint32_t block, count;
    bool d;
  };
  std::vector<Case> cases;
  for (Kind k : {Kind::D, Kind::VZF})
    for (uint32_t payload = 0; payload < 4096; ++payload)  // blocks 0..1023, and value bits 10..11 above them
      for (uint32_t c = 0; c <= kFallChain; ++c) {
        const uint32_t other = (c + 1 + payload % 3) % (kFallChain + 1);
        p.token("t" + std::to_string(cases.size()),
                {{kind, int(k)}, {named[0], int(payload & 15)}, {named[1], int(payload >> 4 & 15)},
                 {named[2], int(payload >> 8)}, {falls, int(k == Kind::D ? other : c)},
                 {prev, int(k == Kind::D ? c : other)}});
        cases.push_back({payload & 1023, c, k == Kind::D});
      }
  circuit::Evaluator ev(p);
  int wrong = 0;
  for (size_t t = 0; t < cases.size(); ++t) {
    const std::vector<int>& v = ev.step(int(t));
    const uint32_t want = (cases[t].block + cases[t].count) % 1024;
    const uint32_t got = uint32_t(v[pc[0]]) | uint32_t(v[pc[1]]) << 4 | uint32_t(v[pc[2]]) << 8;
    if (got != want && ++wrong <= 5)
      ADD_FAILURE() << "block " << cases[t].block << " + " << cases[t].count << (cases[t].d ? " (D)" : "")
                    << ": got " << got << ", want " << want;
  }
  EXPECT_EQ(wrong, 0);
}

const circuit::Program& machine() {
  static const circuit::Program p = machine_circuit();
  return p;
}

// The circuit's values on the last token, for failure reports: the output
// head, and the first values (in program order) that are undefined.
std::string explain(const std::vector<int>& vals) {
  const circuit::Program& p = machine();
  std::string s = "output head:";
  for (auto [field, v] : p.output_head()) s += " " + p.info(v).name + "=" + std::to_string(vals[v]);
  for (size_t v = 0; v < vals.size(); ++v)
    for (const char* name : {"pass", "op", "tkind", "ctrl_case", "exec_case", "warp_case", "out_case", "fault"})
      if (p.info(int(v)).name == name) s += std::string(" ") + name + "=" + std::to_string(vals[v]);
  int shown = 0;
  for (size_t v = 0; v < vals.size() && shown < 12; ++v)
    if (vals[v] == circuit::kUndefined) {
      s += (shown++ ? ", " : "\nundefined: ") + p.info(int(v)).name;
    }
  return s;
}

// The compiled GPU, built once per test binary.
struct Compiled {
  Built built = build();
  qwen::Model model{std::move(built.checkpoint), qwen::Exec::Sparse};  // the dense tensors go as they are read
};
const Compiled& compiled() {
  static const Compiled c;
  return c;
}

// The compiled model, greedy-decoding on its own from the prompt, against the
// trace: every generated token must be the trace's, and the memory read back
// from the GDN state must be the interpreter's.  Returns the tokens checked.
size_t run_model(const machine::Program& prog, uint32_t threads, uint32_t ctas, const std::vector<uint8_t>& params,
                 const launch::GlobalMemory& global) {
  const Compiled& c = compiled();
  qwen::State st = c.model.new_state();
  std::vector<int64_t> prompt = encode_prompt(prog, threads, ctas, params, global);
  torch::Tensor logits = c.model.forward(st, prompt).logits;
  int64_t next = logits[logits.size(0) - 1].argmax().item<int64_t>();
  TraceOracle oracle(prog, threads, ctas, params, global);
  size_t n = 0;
  while (!oracle.done()) {
    const int64_t want = oracle.next();
    if (next != want) {
      ADD_FAILURE() << "generated token " << n << ": model writes " << token_name(next) << ", trace "
                    << token_name(want) << "\n"
                    << oracle.context();
      return n;
    }
    ++n;
    if (oracle.done()) break;
    next = c.model.step(st, next).argmax().item<int64_t>();
  }
  const uint32_t nw = machine::model_params().global_bytes / 4;
  const std::vector<uint32_t> words = read_words(c.built.layout, c.model, st, "global", nw);
  for (uint32_t w = 0; w < nw; ++w)
    if (words[w] != word(oracle.memory().bytes, w)) {
      ADD_FAILURE() << "global word " << w << ": model " << words[w] << ", interpreter " << word(oracle.memory().bytes, w);
      break;
    }
  return n;
}

// Feeds prompt and trace; returns the number of generated tokens checked.
size_t lockstep(const machine::Program& prog, uint32_t threads, uint32_t ctas, const std::vector<uint8_t>& params,
                const launch::GlobalMemory& global) {
  circuit::Evaluator ev(machine());
  std::vector<int> vals;
  for (int64_t id : encode_prompt(prog, threads, ctas, params, global)) vals = ev.step(int(id - kTokenBase));
  TraceOracle oracle(prog, threads, ctas, params, global);
  size_t n = 0;
  while (!oracle.done()) {
    const int64_t want = oracle.next();
    const int got = ev.emitted();
    if (got < 0 || got + kTokenBase != want) {
      ADD_FAILURE() << "generated token " << n << ": circuit writes "
                    << (got < 0 ? std::string("nothing") : token_name(got + kTokenBase)) << ", trace "
                    << token_name(want) << "\n"
                    << oracle.context() << "\n" << explain(vals);
      return n;
    }
    vals = ev.step(int(want - kTokenBase));
    ++n;
  }
  return n;
}

// The evaluator and the compiled model on the same launch.
size_t both(const machine::Program& prog, uint32_t threads, uint32_t ctas, const std::vector<uint8_t>& params,
            const launch::GlobalMemory& global) {
  const size_t n = lockstep(prog, threads, ctas, params, global);
  EXPECT_EQ(run_model(prog, threads, ctas, params, global), n);
  return n;
}

TEST(GpuCircuitEval, StraightLineValuesBranchesAndLoops) {
  machine::Program prog = program({
      blk(alu(Op::MOV, 1, k(5)), jmp(1)),                    // B0
      blk(alu(Op::MOV, 2, k(0x12345678)), jmp(2)),           // B1
      blk(alu(Op::ADD, 3, r(1), r(2)), jmp(3)),              // B2
      blk(alu(Op::MOV, 4, k(3)), jmp(4)),                    // B3
      blk(alu(Op::SUB, 4, r(4), k(1)), br(4, 4, 5)),         // B4: loop
      blk(std::nullopt, br(3, 6, 7)),                        // B5: br with no register write
      blk(st(Space::Global, r(0), k(kBase + 8), r(3)), exit_()),  // B6
      blk(std::nullopt, exit_()),                            // B7
  });
  // CTA(0) WARP(0) EXEC(0) VX(1,5) VLO DF (B1 was named by VX: B2 runs) VLO1
  // DF (B3 runs) VX(4,3) VX(4,2) VX(4,1) VX(5,0) EXEC(6) WARP(1) END
  EXPECT_EQ(both(prog, 1, 1, {}, global_memory()), 15u);
}

// Exact arithmetic (docs/circuit.md section 4): on every token the trace
// writes, every residual entry entering every layer, and after the last, is
// exactly 0 or 1 in fp32 (the sparse executor then visits only the live
// slots).  Prompt and trace go through one batched forward.
TEST(GpuCircuitEval, ResidualsOfTheTraceAreExactlyZeroOrOne) {
  machine::Program prog = program({
      blk(special(Op::WARP, 1), jmp(1)),                                  // B0: r1 = thread
      blk(alu(Op::MUL, 2, r(1), k(0x9e3779b9)), jmp(2)),                   // B1
      blk(alu(Op::MOV, 4, k(3)), jmp(3)),                                  // B2
      blk(alu(Op::XOR, 2, r(2), r(4)), jmp(4)),                            // B3: loop
      blk(alu(Op::SUB, 4, r(4), k(1)), br(4, 3, 5)),                       // B4
      blk(alu(Op::SHL, 5, r(1), k(2)), jmp(6)),                            // B5
      blk(st(Space::Global, r(5), k(kBase), r(2)), jmp(7)),                // B6
      blk(ld(Space::Global, 6, r(5), k(kBase)), jmp(8)),                   // B7
      blk(st(Space::Shared, r(5), k(0), r(6)), exit_()),                   // B8
  });
  const Compiled& c = compiled();
  std::vector<int64_t> ids = encode_prompt(prog, 3, 2, {}, global_memory());
  const size_t prompt = ids.size();
  TraceOracle oracle(prog, 3, 2, {}, global_memory());
  while (!oracle.done()) ids.push_back(oracle.next());
  ids.pop_back();   // END is written, never read
  std::vector<int> all;
  for (int l = 0; l <= c.built.checkpoint.config.num_hidden_layers; ++l) all.push_back(l);
  qwen::State st = c.model.new_state();
  const auto out = c.model.forward(st, ids, all);
  int64_t inexact = 0, entries = 0, ones = 0;
  for (const auto& res : out.residuals) {
    const torch::Tensor trace = res.narrow(0, int64_t(prompt), int64_t(ids.size() - prompt));
    entries += trace.numel();
    ones += trace.eq(1).sum().item<int64_t>();
    inexact += (trace.ne(0) & trace.ne(1)).sum().item<int64_t>();
  }
  EXPECT_EQ(inexact, 0) << "of " << entries << " residual entries over " << ids.size() - prompt << " trace tokens";
  EXPECT_GT(ones, int64_t(ids.size() - prompt) * 100);
}

// The client's sequence goes on over many launches (docs/tokens.md section
// 3): launch A writes global memory, the parameter buffer, the printf space
// and 11 ROM rows; write records then change one word; launch B, whose prompt
// holds no memory record, reads what A and the records left from the state,
// and finds its own parameters, printf space and unsent ROM fields empty
// (block 1's address offset is the immediate 0, not sent, where A's block 1
// had 0x55).  Evaluator and compiled model, every token against the
// interpreter started from the memory A left; the words B reads and writes
// also against values worked out by hand.
// Prompt or record tokens fed to the evaluator.
void feed_tokens(circuit::Evaluator& ev, const std::vector<int64_t>& ids) {
  for (int64_t id : ids) ev.step(int(id - kTokenBase));
}

// A trace followed token by token: each token the circuit writes is compared
// with the trace's before it is fed (END too: the sequence goes on after it).
bool follow_trace(circuit::Evaluator& ev, const std::vector<int64_t>& trace, const char* which) {
  for (size_t n = 0; n < trace.size(); ++n) {
    const int got = ev.emitted();
    if (got < 0 || got + kTokenBase != trace[n]) {
      ADD_FAILURE() << which << ", generated token " << n << ": circuit writes "
                    << (got < 0 ? std::string("nothing") : token_name(got + kTokenBase)) << ", trace "
                    << token_name(trace[n]);
      return false;
    }
    ev.step(int(trace[n] - kTokenBase));
  }
  return true;
}

TEST(GpuCircuitEval, MemoryStaysInTheSequenceAcrossLaunches) {
  const machine::Program a = program({
      blk(special(Op::CTA, 1), jmp(1)),                        // B0: r1 = CTA
      blk(alu(Op::ADD, 7, r(0), k(0x55)), jmp(2)),             // B1
      blk(special(Op::WARP, 2), jmp(3)),                       // B2: r2 = thread
      blk(alu(Op::SHL, 4, r(1), k(3)), jmp(4)),                // B3
      blk(alu(Op::SHL, 5, r(2), k(2)), jmp(5)),                // B4
      blk(alu(Op::ADD, 4, r(4), r(5)), jmp(6)),                // B5: byte offset 8 cta + 4 thread
      blk(ld(Space::Param, 6, r(0), k(0)), jmp(7)),            // B6
      blk(alu(Op::ADD, 6, r(6), r(4)), jmp(8)),                // B7
      blk(st(Space::Global, r(4), k(kBase), r(6)), jmp(9)),    // B8
      blk(st(Space::Print, r(4), k(0), r(6)), jmp(10)),        // B9
      blk(std::nullopt, exit_()),                              // B10
  });
  const machine::Program b = program({
      blk(ld(Space::Param, 1, r(0), k(0)), jmp(1)),            // B0: 0, no parameters
      blk(ld(Space::Print, 2, r(0), k(0)), jmp(2)),            // B1: 0, a new printf space
      blk(ld(Space::Global, 3, r(0), k(kBase + 400)), jmp(3)), // B2: the write record's word
      blk(ld(Space::Global, 4, r(0), k(kBase + 8)), jmp(4)),   // B3: A's CTA 1, thread 0
      blk(alu(Op::ADD, 5, r(1), r(2)), jmp(5)),
      blk(alu(Op::ADD, 5, r(5), r(3)), jmp(6)),
      blk(alu(Op::ADD, 5, r(5), r(4)), jmp(7)),
      blk(st(Space::Global, r(0), k(kBase + 64), r(5)), jmp(8)),
      blk(std::nullopt, exit_()),
  });
  const std::vector<uint8_t> params_a = {0x00, 0x01, 0, 0};   // 0x100
  const std::vector<std::pair<uint32_t, uint32_t>> writes = {{100, 0xdeadbeef}};

  // The sequence, and the memory each launch starts from.
  std::vector<int64_t> prompt_a = encode_launch(a, 2, 2, params_a);
  TraceOracle oracle_a(a, 2, 2, params_a, global_memory());
  std::vector<int64_t> trace_a;
  while (!oracle_a.done()) trace_a.push_back(oracle_a.next());
  launch::GlobalMemory after_a = oracle_a.memory();
  for (uint32_t w = 0; w < 4; ++w) EXPECT_EQ(word(after_a.bytes, w), 0x100 + 4 * w);
  launch::GlobalMemory before_b = after_a;
  for (auto [w, v] : writes) set_word(before_b.bytes, w, v);
  const std::vector<int64_t> records = encode_writes(writes);
  const std::vector<int64_t> prompt_b = encode_launch(b, 1, 1, {});
  for (int64_t id : prompt_b) EXPECT_NE(decode_token(id)->kind, Kind::MG) << token_name(id);
  TraceOracle oracle_b(b, 1, 1, {}, before_b);
  std::vector<int64_t> trace_b;
  while (!oracle_b.done()) trace_b.push_back(oracle_b.next());
  EXPECT_EQ(word(oracle_b.memory().bytes, 16), 0xdeadbeefu + 0x108u);

  // The evaluator: prompts and records fed, each trace token compared before
  // it is fed (END too: the sequence goes on after it).
  {
    circuit::Evaluator ev(machine());
    feed_tokens(ev, prompt_a);
    ASSERT_TRUE(follow_trace(ev, trace_a, "launch A"));
    feed_tokens(ev, records);
    feed_tokens(ev, prompt_b);
    ASSERT_TRUE(follow_trace(ev, trace_b, "launch B"));
  }
  // The compiled model: greedy decoding on one state.
  const Compiled& c = compiled();
  qwen::State st = c.model.new_state();
  auto decode = [&](const std::vector<int64_t>& prompt, const std::vector<int64_t>& trace, const char* which) {
    int64_t next = c.model.forward_argmax(st, prompt);
    for (size_t n = 0; n < trace.size(); ++n) {
      if (next != trace[n]) {
        ADD_FAILURE() << which << ", generated token " << n << ": model writes " << token_name(next) << ", trace "
                      << token_name(trace[n]);
        return false;
      }
      next = c.model.step_argmax(st, next);
    }
    return true;
  };
  ASSERT_TRUE(decode(prompt_a, trace_a, "launch A"));
  c.model.forward_argmax(st, records);
  ASSERT_TRUE(decode(prompt_b, trace_b, "launch B"));
  const uint32_t n = machine::model_params().global_bytes / 4;
  const std::vector<uint32_t> words = read_words(c.built.layout, c.model, st, "global", n);
  for (uint32_t w = 0; w < n; ++w)
    ASSERT_EQ(words[w], word(oracle_b.memory().bytes, w)) << "global word " << w;
  EXPECT_EQ(words[16], 0xdeadbeefu + 0x108u);
  EXPECT_EQ(words[100], 0xdeadbeefu);
}

// The circuit of a model built with 1 MiB of global memory (`qgpu
// build-model --global-kib 1024`: 262,144 words, four MG pages) on the
// evaluator, in its own process (ctest's machine_circuit_1mib: the circuit
// is compiled once per process, at the size set first).  A prompt's image and
// later write records reach words in every page; loads and stores at
// addresses past 256 KiB; a record after records of another page goes to its
// own page (the encoder sets the page again); launch B reads it all back, so
// its trace shows every value.
TEST(GpuCircuitEval1MiB, PagesOfGlobalMemoryAcrossLaunches) {
  machine::set_model_global_bytes(1u << 20);
  ASSERT_EQ(global_memory().bytes.size(), size_t(1) << 20);
  auto at = [](uint32_t word) { return k(kBase + 4 * word); };
  const machine::Program a = program({
      blk(ld(Space::Global, 1, r(0), at(70000)), jmp(1)),     // B0: page 1, from the image
      blk(ld(Space::Global, 2, r(0), at(262143)), jmp(2)),    // B1: the last word, page 3
      blk(alu(Op::ADD, 3, r(1), r(2)), jmp(3)),               // B2
      blk(special(Op::WARP, 4), jmp(4)),                      // B3: r4 = thread
      blk(alu(Op::SHL, 5, r(4), k(2)), jmp(5)),               // B4
      blk(alu(Op::ADD, 3, r(3), r(4)), jmp(6)),               // B5
      blk(st(Space::Global, r(5), at(131072), r(3)), jmp(7)), // B6: words 131072 + thread, page 2
      blk(std::nullopt, exit_()),                             // B7
  });
  const machine::Program b = program({
      blk(ld(Space::Global, 1, r(0), at(131073)), jmp(1)),    // B0: A's store of thread 1
      blk(ld(Space::Global, 2, r(0), at(65543)), jmp(2)),     // B1: a record, page 1
      blk(ld(Space::Global, 3, r(0), at(250000)), jmp(3)),    // B2: a record, page 3
      blk(ld(Space::Global, 4, r(0), at(9)), jmp(4)),         // B3: a record, page 0, after page 3's
      blk(ld(Space::Global, 5, r(0), at(196617)), jmp(5)),    // B4: page 3's word 9: untouched
      blk(alu(Op::ADD, 6, r(1), r(2)), jmp(6)),
      blk(alu(Op::ADD, 6, r(6), r(3)), jmp(7)),
      blk(alu(Op::ADD, 6, r(6), r(4)), jmp(8)),
      blk(alu(Op::ADD, 6, r(6), r(5)), jmp(9)),
      blk(st(Space::Global, r(0), at(262000), r(6)), jmp(10)),
      blk(ld(Space::Global, 7, r(0), at(262000)), jmp(11)),   // B10: the store, read back
      blk(std::nullopt, exit_()),
  });
  launch::GlobalMemory image = global_memory();
  set_word(image.bytes, 70000, 0x12345678);
  set_word(image.bytes, 262143, 0x01010101);
  set_word(image.bytes, 196617, 0x5a5a);
  const std::vector<std::pair<uint32_t, uint32_t>> writes1 = {{65543, 0x777}, {250000, 0xabcd0000}};
  const std::vector<std::pair<uint32_t, uint32_t>> writes2 = {{9, 0x99}};

  const std::vector<int64_t> prompt_a = encode_prompt(a, 2, 1, {}, image);
  TraceOracle oracle_a(a, 2, 1, {}, image);
  std::vector<int64_t> trace_a;
  while (!oracle_a.done()) trace_a.push_back(oracle_a.next());
  launch::GlobalMemory before_b = oracle_a.memory();
  EXPECT_EQ(word(before_b.bytes, 131073), 0x12345678u + 0x01010101u + 1);
  for (const auto* w : {&writes1, &writes2})
    for (auto [i, v] : *w) set_word(before_b.bytes, i, v);
  const std::vector<int64_t> records1 = encode_writes(writes1), records2 = encode_writes(writes2);
  const std::vector<int64_t> prompt_b = encode_launch(b, 1, 1, {});
  TraceOracle oracle_b(b, 1, 1, {}, before_b);
  std::vector<int64_t> trace_b;
  while (!oracle_b.done()) trace_b.push_back(oracle_b.next());
  EXPECT_EQ(word(oracle_b.memory().bytes, 262000),
            0x12345678u + 0x01010101u + 1 + 0x777 + 0xabcd0000u + 0x99 + 0x5a5a);

  circuit::Evaluator ev(machine());
  feed_tokens(ev, prompt_a);
  ASSERT_TRUE(follow_trace(ev, trace_a, "launch A"));
  feed_tokens(ev, records1);
  feed_tokens(ev, records2);
  feed_tokens(ev, prompt_b);
  ASSERT_TRUE(follow_trace(ev, trace_b, "launch B"));
}

TEST(GpuCircuitEval, ThreadsBarriersAndCtas) {
  machine::Program prog = program({
      blk(special(Op::WARP, 1), br(1, 1, 3)),          // B0
      blk(alu(Op::SUB, 2, r(1), k(1)), br(2, 2, 5)),   // B1
      blk(st(Space::Shared, r(0), k(4), k(0x4242)), bar(4)),  // B2
      blk(alu(Op::MOV, 3, k(9)), bar(4)),              // B3
      blk(ld(Space::Shared, 4, r(0), k(4)), bar(6)),   // B4
      blk(special(Op::CTA, 5), exit_()),               // B5
      blk(std::nullopt, exit_()),                      // B6
  });
  EXPECT_GT(both(prog, 3, 2, {}, global_memory()), 40u);
}

TEST(GpuCircuitEval, MemorySpacesAndParameters) {
  std::vector<uint8_t> params(8, 0);
  set_word(params, 0, kBase + 64);
  set_word(params, 1, 0xdeadbeef);
  launch::GlobalMemory g = global_memory();
  set_word(g.bytes, 16, 0x00c0ffee);
  machine::Program prog = program({
      blk(ld(Space::Param, 1, r(0), k(0)), jmp(1)),          // B0: pointer
      blk(ld(Space::Param, 2, r(0), k(4)), jmp(2)),          // B1
      blk(ld(Space::Global, 3, r(1), k(0)), jmp(3)),         // B2: 0x00c0ffee
      blk(st(Space::Local, r(0), k(60), r(2)), jmp(4)),      // B3
      blk(ld(Space::Local, 4, r(0), k(60)), jmp(5)),         // B4
      blk(st(Space::Print, r(0), k(8), r(4)), jmp(6)),       // B5
      blk(ld(Space::Print, 5, r(0), k(8)), jmp(7)),          // B6
      blk(st(Space::Global, r(1), k(4092), r(5)), jmp(8)),   // B7: the last global word
      blk(ld(Space::Global, 6, r(1), k(4092)), exit_()),     // B8
  });
  EXPECT_GT(both(prog, 2, 1, params, g), 20u);
}

// Local memory is the CTA's 8192-word store split among its threads rounded
// up to a power of two (machine::Params::local_bytes_for).  For one thread
// count of each split (2^c threads for c = 0..10), every thread writes its
// first, a middle and its last local word, reads them back and sums them into
// global memory: rows that overlapped between threads would read another
// thread's words.  One word past the end faults.
TEST(GpuCircuitEval, LocalMemorySplitAmongTheThreadsOfEveryLaunchShape) {
  for (uint32_t threads : {1u, 2u, 3u, 8u, 9u, 32u, 33u, 100u, 129u, 256u, 257u, 512u, 700u, 1024u}) {
    SCOPED_TRACE(threads);
    const uint32_t bytes = machine::model_params().local_bytes_for(threads);
    machine::Program prog = program({
        blk(special(Op::WARP, 1), jmp(1)),                          // B0
        blk(alu(Op::MUL, 2, r(1), k(0x00010003)), jmp(2)),          // B1: a value with a high half
        blk(st(Space::Local, r(0), k(bytes - 4), r(1)), jmp(3)),    // B2: the last word
        blk(st(Space::Local, r(0), k(0), r(2)), jmp(4)),            // B3: the first
        blk(st(Space::Local, r(0), k(bytes / 2 + 4), r(2)), jmp(5)),  // B4: one past the middle
        blk(ld(Space::Local, 3, r(0), k(bytes - 4)), jmp(6)),       // B5
        blk(ld(Space::Local, 4, r(0), k(0)), jmp(7)),               // B6
        blk(ld(Space::Local, 5, r(0), k(bytes / 2 + 4)), jmp(8)),   // B7
        blk(alu(Op::ADD, 3, r(3), r(4)), jmp(9)),                   // B8
        blk(alu(Op::XOR, 3, r(3), r(5)), jmp(10)),                  // B9
        blk(alu(Op::SHL, 6, r(1), k(2)), jmp(11)),                  // B10
        blk(st(Space::Global, r(6), k(kBase), r(3)), exit_()),      // B11
    });
    prog.threads = threads;
    const size_t n = threads <= 9 ? both(prog, threads, 1, {}, global_memory())
                                  : lockstep(prog, threads, 1, {}, global_memory());
    EXPECT_GE(n, 13 * threads);  // per thread its WARP and 12 blocks, at least
    machine::Program past = program({blk(ld(Space::Local, 1, r(0), k(bytes)), exit_())});
    EXPECT_EQ(lockstep(past, threads, 1, {}, global_memory()), 5u);
  }
}

// The register file is 8192 rows split among the CTA's threads
// (machine::Params::regs_for: 32 a thread up to 256 threads, 16 up to 512, 8
// up to 1024), with one row map for every shape (docs/tokens.md section 1).
// Every thread writes every register it has (a value of its own with a high
// half), the CTA waits at a barrier, and every thread then reads them all
// back and stores their XOR: two threads' registers sharing a row would
// read another's value, which the trace (every value in it) catches.  Shapes
// of each split, the last thread of each the highest of its shape.
TEST(GpuCircuitEval, RegistersOfEveryThreadInCtasOfUpTo1024Threads) {
  for (uint32_t threads : {256u, 300u, 512u, 1024u}) {
    SCOPED_TRACE(threads);
    const uint32_t regs = machine::model_params().regs_for(threads);
    ASSERT_EQ(regs, threads <= 256 ? 32u : threads <= 512 ? 16u : 8u);
    std::vector<machine::Block> blocks{blk(special(Op::WARP, 1), jmp(1))};  // r1 = w; r0 stays 0
    for (uint32_t j = 2; j < regs; ++j) {
      const uint32_t next = uint32_t(blocks.size()) + 1;
      blocks.push_back(blk(alu(Op::MUL, j, r(1), k(0x01000193u * j + 0x9e37u)), j + 1 == regs ? bar(next) : jmp(next)));
    }
    for (uint32_t j = 3; j < regs; ++j) {
      const uint32_t next = uint32_t(blocks.size()) + 1;
      blocks.push_back(blk(alu(Op::XOR, 2, r(2), r(j)), jmp(next)));
    }
    const uint32_t next = uint32_t(blocks.size()) + 1;
    blocks.push_back(blk(alu(Op::SHL, 3, r(1), k(2)), jmp(next)));
    blocks.push_back(blk(st(Space::Global, r(3), k(kBase), r(2)), exit_()));
    machine::Program prog = program(blocks);
    prog.threads = threads;
    EXPECT_GT(lockstep(prog, threads, 1, {}, global_memory()), (2 * regs) * threads);
  }
}

// 300 CTAs (CTA indices past the 8 bits of 256), each reading the last word
// of a 4 KiB parameter buffer; a read just past it faults.
TEST(GpuCircuitEval, ManyCtasAndAFourKiBParameterBuffer) {
  machine::Program prog = program({
      blk(special(Op::CTA, 1), jmp(1)),                       // B0: r1 = CTA
      blk(alu(Op::SHL, 2, r(1), k(2)), jmp(2)),               // B1
      blk(ld(Space::Param, 3, r(0), k(4092)), jmp(3)),        // B2: parameter word 1023
      blk(alu(Op::ADD, 3, r(3), r(1)), jmp(4)),               // B3
      blk(st(Space::Global, r(2), k(kBase), r(3)), jmp(5)),   // B4
      blk(std::nullopt, exit_()),                             // B5
  });
  std::vector<uint8_t> params(4096, 0);
  params[4093] = 0x10;   // word 1023 = 0x1000
  EXPECT_GT(both(prog, 1, 300, params, global_memory()), 300u * 6);
  TraceOracle oracle(prog, 1, 300, params, global_memory());
  while (!oracle.done()) oracle.next();
  for (uint32_t c = 0; c < 300; ++c) ASSERT_EQ(word(oracle.memory().bytes, c), 0x1000 + c) << "CTA " << c;
  machine::Program past = program({blk(ld(Space::Param, 1, r(0), k(4096)), exit_())});
  EXPECT_EQ(lockstep(past, 1, 1, params, global_memory()), 5u);
}

TEST(GpuCircuitEval, FaultsAndTraps) {
  machine::Program illegal = program({blk(ld(Space::Global, 2, r(0), k(kBase + machine::model_params().global_bytes)), exit_())});
  EXPECT_EQ(both(illegal, 1, 1, {}, global_memory()), 5u);
  machine::Program misaligned = program({blk(st(Space::Shared, r(0), k(2), k(1)), exit_())});
  EXPECT_EQ(both(misaligned, 1, 1, {}, global_memory()), 5u);
  machine::Program trapping = program({blk(alu(Op::MOV, 1, k(1)), trap(719))});
  EXPECT_EQ(both(trapping, 1, 1, {}, global_memory()), 6u);
}

Terminator wbar(uint32_t t) { return {Term::WBAR, 0, t, 0, 0}; }

// A shuffle as the lowering writes it (docs/isa.md section 7): each thread
// stores its value at its slot, waits at wbar, loads the slot of lane
// (lane + 1) % 32 of its warp, waits again and writes the value to global
// memory.  A full warp, and a full and a partial warp in two CTAs.
machine::Program rotate_program() {
  machine::Program prog = program({
      blk(special(Op::WARP, 1), jmp(1)),                      // B0
      blk(alu(Op::SHL, 2, r(1), k(2)), jmp(2)),               // B1: own slot
      blk(alu(Op::MUL, 5, r(1), k(0x01010101)), jmp(3)),      // B2: a value with a high half
      blk(st(Space::Shared, r(2), k(0), r(5)), wbar(4)),      // B3
      blk(alu(Op::ADD, 3, r(2), k(4)), jmp(5)),               // B4
      blk(alu(Op::AND, 3, r(3), k(0x7c)), jmp(6)),            // B5: lane + 1 mod 32
      blk(alu(Op::AND, 4, r(2), k(~0x7cu)), jmp(7)),          // B6: the warp's first slot
      blk(alu(Op::OR, 3, r(3), r(4)), jmp(8)),                // B7
      blk(ld(Space::Shared, 6, r(3), k(0)), wbar(9)),         // B8
      blk(special(Op::CTA, 7), jmp(10)),                      // B9
      blk(alu(Op::MUL, 7, r(7), k(256)), jmp(11)),            // B10: CTA c writes words 64c..
      blk(alu(Op::ADD, 7, r(7), r(2)), jmp(12)),              // B11
      blk(st(Space::Global, r(7), k(kBase), r(6)), exit_()),  // B12
  });
  prog.shared_bytes = 256;
  return prog;
}

TEST(GpuCircuitEval, ShuffleInAFullWarp) {
  EXPECT_GT(both(rotate_program(), 32, 1, {}, global_memory()), 500u);
}

TEST(GpuCircuitEval, ShuffleInAFullAndAPartialWarpOverTwoCtas) {
  EXPECT_GT(lockstep(rotate_program(), 40, 2, {}, global_memory()), 1000u);
}

// Warp groups up to the 32 of a 1024-thread CTA: 1000 threads (the last
// group partial) shuffle as above, each group's release pc kept in its own
// row (a row shared by two groups would release one at the other's pc).
TEST(GpuCircuitEval, ShuffleInEveryWarpOfA1000ThreadCta) {
  machine::Program prog = rotate_program();
  prog.shared_bytes = 4000;
  EXPECT_GT(lockstep(prog, 1000, 1, {}, global_memory()), 12000u);
}

// A divergent warp: odd threads wait at wbar B3, even ones at wbar B5; B3
// (the least pc) goes on first, then the even threads, and both sides meet at
// the ballot: each thread ORs its bit into a shared word (load, or, store: an
// atomic in the model lowering), waits at wbar, reads the word, waits at the
// CTA barrier and writes it.  Two warp groups (40 threads), a thread of the
// second exits early, and the first wbar of the second group is met by
// threads in another order.
machine::Program divergent_program() {
  machine::Program prog = program({
      blk(special(Op::WARP, 1), jmp(1)),                      // B0
      blk(alu(Op::AND, 2, r(1), k(1)), br(2, 2, 4)),          // B1
      blk(alu(Op::ADD, 3, r(1), k(100)), wbar(3)),            // B2: odd
      blk(alu(Op::ADD, 3, r(3), k(1000)), jmp(6)),            // B3
      blk(alu(Op::SEQ, 4, r(1), k(34)), br(4, 15, 14)),       // B4: even; thread 34 exits
      blk(alu(Op::ADD, 3, r(3), k(2000)), jmp(6)),            // B5
      blk(alu(Op::AND, 8, r(1), k(31)), jmp(7)),              // B6: the ballot
      blk(alu(Op::SHL, 8, k(1), r(8)), jmp(8)),               // B7
      blk(ld(Space::Shared, 9, r(0), k(0)), jmp(9)),          // B8
      blk(alu(Op::OR, 9, r(9), r(8)), jmp(10)),               // B9
      blk(st(Space::Shared, r(0), k(0), r(9)), wbar(11)),     // B10
      blk(ld(Space::Shared, 10, r(0), k(0)), bar(12)),        // B11
      blk(alu(Op::SHL, 11, r(1), k(3)), jmp(13)),             // B12
      blk(st(Space::Global, r(11), k(kBase), r(10)), jmp(16)),// B13
      blk(alu(Op::ADD, 3, r(1), k(200)), wbar(5)),            // B14: even
      blk(std::nullopt, exit_()),                             // B15
      blk(st(Space::Global, r(11), k(kBase + 4), r(3)), exit_()),  // B16
  });
  prog.shared_bytes = 4;
  return prog;
}

// Tokens of a kind in the trace; releases: WARP(0) right after WARP(threads).
int count(const std::vector<int64_t>& trace, Kind kind) {
  int n = 0;
  for (int64_t id : trace) n += decode_token(id)->kind == kind;
  return n;
}
int releases(const std::vector<int64_t>& trace, uint32_t threads) {
  int n = 0;
  for (size_t i = 1; i < trace.size(); ++i)
    n += trace[i] == token_id(Kind::WARP, 0) && trace[i - 1] == token_id(Kind::WARP, threads);
  return n;
}

// WARPS where the next thread begins where the last run began (every thread
// of the first pass, 40 threads, two warp groups), WARP where it does not
// (after the barriers, the threads alternate between two blocks): the
// circuit's reading of the thread table at the next thread, in lockstep.
TEST(GpuCircuitEval, WarpsOnlyWhereTheNextThreadBeginsWhereTheLastRunBegan) {
  const machine::Program prog = parity_barriers_program();
  const std::vector<int64_t> t = expected_trace(prog, 40, 1, {}, global_memory());
  EXPECT_EQ(count(t, Kind::WARPS), 38);
  EXPECT_EQ(both(prog, 40, 1, {}, global_memory()), t.size());
}

// A branch on another register than the block writes, whose condition the
// pass reads through the C record: in lockstep (docs/tokens.md section 3).
TEST(GpuCircuitEval, BranchOnAnotherRegisterFoldsIntoTheValueToken) {
  const machine::Program prog = branch_on_another_register_program();
  const std::vector<int64_t> t = expected_trace(prog, 1, 1, {}, global_memory());
  EXPECT_EQ(count(t, Kind::VX), 3);
  EXPECT_EQ(count(t, Kind::VZF), 2);
  EXPECT_EQ(both(prog, 1, 1, {}, global_memory()), t.size());
}

// WARPS into every kind of block: a run of fall-through values and a VLO
// counted from the start (B0), a br on the C record's register after a load
// within the run (B2), a barrier whose threads go on at a block with no
// instruction (B5) and one at a store (B8), four threads of one group.
TEST(GpuCircuitEval, WarpsStartsEveryKindOfBlock) {
  const machine::Program prog = program({
      blk(alu(Op::MOV, 1, k(0x12345678)), jmp(1)),                  // B0: VLO, DF from WARPS's start
      blk(alu(Op::MOV, 2, k(300)), br(3, 9, 2)),                    // B1: r3 = 0: the C record picks B2
      blk(ld(Space::Global, 4, r(0), k(kBase)), br(3, 9, 3)),       // B2: a load, br on r3: VX or VZF
      blk(special(Op::WARP, 5), jmp(4)),                            // B3: r5 = thread
      blk(st(Space::Global, r(0), k(kBase), r(5)), bar(5)),         // B4: a store, then the barrier
      blk(std::nullopt, br(1, 6, 9)),                               // B5: no instruction: br on r1
      blk(alu(Op::ADD, 6, r(5), k(0x20000)), jmp(7)),               // B6: VLO..
      blk(alu(Op::ADD, 7, r(6), k(1)), bar(8)),                     // B7
      blk(st(Space::Global, r(0), k(kBase + 4), r(7)), exit_()),    // B8: a store after the barrier
      blk(std::nullopt, exit_()),                                   // B9: never
  });
  const std::vector<int64_t> t = expected_trace(prog, 4, 1, {}, global_memory());
  std::vector<Kind> kinds;
  for (int64_t id : t) kinds.push_back(decode_token(id)->kind);
  auto after_warps = [&](Kind k) {
    int n = 0;
    for (size_t i = 0; i + 1 < kinds.size(); ++i) n += kinds[i] == Kind::WARPS && kinds[i + 1] == k;
    return n;
  };
  EXPECT_EQ(after_warps(Kind::VLO), 3);   // B0's value, threads 1..3
  EXPECT_EQ(after_warps(Kind::EXEC), 3);  // B5 (no instruction) after the first barrier
  EXPECT_GE(count(t, Kind::WARPS), 9);    // and B8 after the second
  EXPECT_EQ(both(prog, 4, 1, {}, global_memory()), t.size());
}

TEST(GpuCircuitEval, DivergentWarpsMeetAtDifferentWbarsThenVote) {
  const machine::Program prog = divergent_program();
  const std::vector<int64_t> t = expected_trace(prog, 40, 1, {}, global_memory());
  // WMINs per group: pass 1 meets B5 (thread 0), then B3 (thread 1); pass 2
  // (B3 goes on) meets B5 again first, B11 is not below it; pass 3 (B5 goes
  // on) meets B11; pass 4 (B11) ends at bar.
  EXPECT_EQ(count(t, Kind::WMIN), 2 * (2 + 1 + 1));
  EXPECT_EQ(releases(t, 40), 3);
  EXPECT_EQ(count(t, Kind::BARRIER), 1);
  EXPECT_EQ(both(prog, 40, 1, {}, global_memory()), t.size());
}

// Every ALU operation on edge values and random values, with register and
// immediate operands (on the evaluator: the model runs the test below).
TEST(GpuCircuitEval, EveryAluOperation) {
  const Op ops[] = {Op::MOV, Op::ADD, Op::SUB, Op::MUL, Op::MULHU, Op::AND, Op::OR, Op::XOR, Op::SHL, Op::SHR,
                    Op::SAR, Op::SEQ, Op::SNE, Op::SLT, Op::SLE, Op::SLTU, Op::SLEU, Op::SEL, Op::MIN, Op::MAX,
                    Op::MINU, Op::MAXU, Op::POPC, Op::CLZ, Op::BREV, Op::CSUB};
  std::vector<uint32_t> values = {0, 1, 2, 31, 32, 33, 0x7fffffff, 0x80000000, 0xffffffff, 0xfffffffe, 0x10000,
                                  0xffff};
  std::mt19937 rng(7);
  for (int i = 0; i < 12; ++i) values.push_back(rng());
  std::vector<Block> blocks;
  auto next = [&] { return uint32_t(blocks.size() + 1); };
  for (Op op : ops)
    for (size_t i = 0; i < values.size(); i += 3) {
      const uint32_t a = values[i], b = values[(i + 5) % values.size()], c = values[(i + 7) % values.size()];
      blocks.push_back(blk(alu(Op::MOV, 1, k(a)), jmp(next())));
      blocks.push_back(blk(alu(Op::MOV, 2, k(b)), jmp(next())));
      blocks.push_back(blk(alu(op, 3, r(1), r(2), k(c)), jmp(next())));
      blocks.push_back(blk(alu(op, 4, k(b), r(1), r(2)), jmp(next())));
    }
  // A value with a low half of 0 whose block jumps over the next: VH.
  blocks.push_back(blk(alu(Op::MOV, 1, k(0x50000)), jmp(next() + 1)));
  blocks.push_back(blk(alu(Op::MOV, 1, k(1)), jmp(next())));
  blocks.push_back(blk(std::nullopt, exit_()));
  ASSERT_LE(blocks.size(), 1024u);
  // Its values take every value token: those with a low half of 0 (0x10000,
  // 0x80000000, 0x50000) as VH and VHF among them.
  const machine::Program prog = program(blocks);
  const std::vector<int64_t> t = expected_trace(prog, 1, 1, {}, global_memory());
  for (Kind k : {Kind::VX, Kind::VZ, Kind::VZF, Kind::VN, Kind::VNF, Kind::VLO, Kind::DF, Kind::VH, Kind::VHF})
    EXPECT_GT(count(t, k), 0) << kind_name(k);
  EXPECT_GT(lockstep(prog, 1, 1, {}, global_memory()), blocks.size());
}

// Runs of fall-through values (docs/tokens.md section 4): 1,000 blocks whose
// values take every value token in random order, most of them jumping to the
// block after them, in lockstep with the interpreter.  The circuit counts a
// run through the conv's window of 3 tokens, from the nearest marker there
// (EXEC, VX, VLO, VLO1 .. VLO6): each such pattern occurs, and every block
// the trace runs is the interpreter's.
TEST(GpuCircuitEval, FallThroughRunsOfEveryValueKind) {
  std::mt19937 rng(29);
  auto value = [&](int cls) -> uint32_t {
    const uint32_t lo = 1 + rng() % 0xffff, hi = 1 + rng() % 0xffe;  // hi not 0, 0x1000 or 0xffff
    switch (cls) {
      case 0: return rng() % 64;                      // VX
      case 1: return 64 + rng() % (0x10000 - 64);     // VZ
      case 2: return kGlobalHigh << 16 | lo;          // VG
      case 3: return kNegativeHigh << 16 | lo;        // VN
      case 4: return (hi == kGlobalHigh ? 2 : hi) << 16;  // VH
      default: return (hi == kGlobalHigh ? 2 : hi) << 16 | lo;  // VLO
    }
  };
  std::vector<Block> blocks;
  const uint32_t n = 1000;
  for (uint32_t i = 0; i < n; ++i) {
    const uint32_t pick = rng() % 10, cls = pick < 5 ? 5 : pick - 5;  // half of them VLO
    const uint32_t to = std::min(n, rng() % 8 == 0 ? i + 2 : i + 1);
    blocks.push_back(blk(alu(Op::MOV, 1 + i % 8, k(value(int(cls)))), jmp(to)));
  }
  blocks.push_back(blk(std::nullopt, exit_()));
  const machine::Program prog = program(blocks);
  const std::vector<int64_t> t = expected_trace(prog, 1, 1, {}, global_memory());
  std::vector<Kind> kinds;
  for (int64_t id : t) kinds.push_back(decode_token(id)->kind);
  auto occurs = [&](const std::vector<std::function<bool(Kind)>>& pattern) {
    int found = 0;
    for (size_t i = 0; i + pattern.size() <= kinds.size(); ++i) {
      bool all = true;
      for (size_t j = 0; j < pattern.size() && all; ++j) all = pattern[j](kinds[i + j]);
      found += all;
    }
    return found;
  };
  auto is = [](Kind k) { return std::function<bool(Kind)>([k](Kind x) { return x == k; }); };
  const auto fall = std::function<bool(Kind)>(falls_through);
  const auto value0 = std::function<bool(Kind)>(
      [](Kind x) { return x == Kind::VZ || x == Kind::VG || x == Kind::VN || x == Kind::VH || x == Kind::VLO; });
  EXPECT_GT(occurs({is(Kind::VLO1), is(Kind::DF), fall}), 0);          // the run's third
  EXPECT_GT(occurs({is(Kind::VLO1), is(Kind::DF), fall, value0}), 0);  // the value after three
  EXPECT_GT(occurs({is(Kind::VLO1), is(Kind::DF), value0}), 0);
  EXPECT_GT(occurs({is(Kind::VLO2), is(Kind::DF), value0}), 0);
  EXPECT_GT(occurs({fall, fall, is(Kind::VLO2), is(Kind::DF)}), 0);
  EXPECT_GT(occurs({is(Kind::VLO1), is(Kind::D)}), 0);                // a VLO1 whose block jumps
  // A run of three from EXEC or VX (the value after it sees no marker, the
  // count is 3), a run going on past a VLO3, one that ends at six.
  const auto names = std::function<bool(Kind)>([](Kind x) { return x == Kind::EXEC || x == Kind::VX; });
  EXPECT_GT(occurs({names, fall, fall, fall, value0}), 0);
  EXPECT_GT(occurs({is(Kind::VLO2), is(Kind::DF), fall, value0}), 0);  // 4: VLO2 three back
  EXPECT_GT(occurs({is(Kind::VLO3), is(Kind::DF)}), 0);
  EXPECT_GT(occurs({is(Kind::VLO4), is(Kind::DF), fall}), 0);
  EXPECT_GT(occurs({is(Kind::VLO6), is(Kind::D)}), 0);  // a run of six: no seventh
  EXPECT_GT(lockstep(prog, 1, 1, {}, global_memory()), blocks.size());
}

// The multiplier's two halves (MUL and MULHU read one 64-bit product of 16
// nibble columns): every pair of edge values, whose columns carry the most,
// and random pairs, in lockstep with the interpreter (every value the trace
// holds is checked).
TEST(GpuCircuitEval, LowAndHighHalvesOfTheProduct) {
  const uint32_t edges[] = {0,          1,          2,          0xf,        0x10,       0xffff,     0x10000,
                            0x7fffffff, 0x80000000, 0x80000001, 0xfffffffe, 0xffffffff, 0x12345678, 0xfedcba98};
  std::vector<std::pair<uint32_t, uint32_t>> pairs;
  for (uint32_t a : edges)
    for (uint32_t b : edges) pairs.push_back({a, b});
  std::mt19937 rng(19);
  while (pairs.size() < 300) pairs.push_back({rng(), rng()});
  std::vector<Block> blocks;
  auto next = [&] { return uint32_t(blocks.size() + 1); };
  for (auto [a, b] : pairs) {
    blocks.push_back(blk(alu(Op::MOV, 1, k(a)), jmp(next())));
    blocks.push_back(blk(alu(Op::MULHU, 3, r(1), k(b)), jmp(next())));
    blocks.push_back(blk(alu(Op::MUL, 4, k(b), r(1)), jmp(next())));
  }
  blocks.push_back(blk(std::nullopt, exit_()));
  ASSERT_LE(blocks.size(), 1024u);
  const machine::Program prog = program(blocks);
  // The interpreter computes what the trace must hold (the lockstep compares
  // the circuit with it): check it against the host's 64-bit product first.
  for (size_t i = 0; i < pairs.size(); ++i) {
    const uint64_t p = uint64_t(pairs[i].first) * pairs[i].second;
    ASSERT_EQ(machine::eval_alu(Op::MULHU, pairs[i].first, pairs[i].second, 0), uint32_t(p >> 32));
    ASSERT_EQ(machine::eval_alu(Op::MUL, pairs[i].second, pairs[i].first, 0), uint32_t(p));
  }
  EXPECT_GT(lockstep(prog, 1, 1, {}, global_memory()), blocks.size());
}

// CSUB (a - b where a >= b unsigned, else a) on every pair of edge values and
// their neighbours (equal operands, one above, one below, across the sign bit
// and the halves), in lockstep with the interpreter, whose result is first
// checked against the host's.
TEST(GpuCircuitEval, ConditionalSubtractOnEdgePairs) {
  const uint32_t edges[] = {0, 1, 0xf, 0x10, 0xffff, 0x10000, 0x7fffffff, 0x80000000, 0xffffffff, 0x12345678};
  std::vector<uint32_t> values;
  for (uint32_t e : edges)
    for (uint32_t d : {0u, 1u, ~0u}) values.push_back(e + d);
  std::vector<std::pair<uint32_t, uint32_t>> pairs;
  for (uint32_t a : values)
    for (uint32_t b : values) pairs.push_back({a, b});
  std::mt19937 rng(23);
  while (pairs.size() < 1000) {
    const uint32_t a = rng(), shift = rng() % 32;
    pairs.push_back({a, rng() >> shift});  // divisors of every length, as a division's loop meets them
  }
  int subtracted = 0;
  for (auto [a, b] : pairs) {
    const uint32_t want = uint64_t(a) >= uint64_t(b) ? uint32_t(uint64_t(a) - b) : a;
    ASSERT_EQ(machine::eval_alu(Op::CSUB, a, b, 0), want) << a << " " << b;
    subtracted += a >= b;
  }
  EXPECT_GT(subtracted, 300);
  EXPECT_LT(subtracted, 700);
  // 1,000 pairs in three programs of the ROM's 1,024 blocks.
  for (size_t from = 0; from < pairs.size(); from += 340) {
    std::vector<Block> blocks;
    auto next = [&] { return uint32_t(blocks.size() + 1); };
    for (size_t i = from; i < std::min(pairs.size(), from + 340); ++i) {
      const auto [a, b] = pairs[i];
      blocks.push_back(blk(alu(Op::MOV, 1, k(a)), jmp(next())));
      blocks.push_back(blk(alu(i % 2 ? Op::CSUB : Op::MOV, 2, i % 2 ? r(1) : k(b), k(b)), jmp(next())));
      blocks.push_back(blk(alu(Op::CSUB, 3, r(1), i % 2 ? k(b) : r(2)), jmp(next())));
    }
    blocks.push_back(blk(std::nullopt, exit_()));
    ASSERT_LE(blocks.size(), 1024u);
    EXPECT_GT(lockstep(program(blocks), 1, 1, {}, global_memory()), blocks.size());
  }
}

// The ALU's guards (docs/circuit.md section 2): a result that only some
// operations read is computed under a flag of the opcode, so on every token
// of a program without those operations none of its steps fires (F >= 1 on
// the evaluator's slots).  The program runs every integer operation but MUL
// and MULHU, in lockstep with the interpreter; the f32 multiply-add's and the integer
// multiplier's steps stay off on every token, while the operations that run
// fire steps of their own.
TEST(GpuCircuitEval, GuardedResultsFireOnlyForTheOperationsThatReadThem) {
  const circuit::Program& p = machine();
  // Per op-name prefix, the steps that fire on these slots.
  auto firing = [&](const std::vector<int>& vals, const std::string& prefix) {
    int n = 0;
    for (const circuit::Op& op : p.ops()) {
      const auto* m = std::get_if<circuit::MlpOp>(&op);
      if (!m || p.info(m->out).name.rfind(prefix, 0) != 0) continue;
      for (const circuit::Step& st : m->steps) {
        int F = st.bias;
        bool known = true;
        for (const circuit::Term& t : st.form) {
          if (vals[t.v] < 0) known = false;
          F += t.slot == circuit::kAmount ? t.coef * vals[t.v] : (vals[t.v] == t.slot ? t.coef : 0);
        }
        n += known && F >= 1;
      }
    }
    return n;
  };
  const Op ops[] = {Op::MOV, Op::ADD, Op::SUB, Op::AND, Op::OR, Op::XOR, Op::SHL, Op::SHR, Op::SAR, Op::SEQ,
                    Op::SLT, Op::SLTU, Op::SEL, Op::MIN, Op::MAXU, Op::POPC, Op::CLZ, Op::BREV};
  const uint32_t values[] = {0, 1, 33, 0x7fffffff, 0x80000000, 0xffffffff, 0x12345678, 0xdeadbeef};
  std::vector<Block> blocks;
  auto next = [&] { return uint32_t(blocks.size() + 1); };
  for (Op op : ops)
    for (size_t i = 0; i + 1 < std::size(values); i += 2) {
      blocks.push_back(blk(alu(Op::MOV, 1, k(values[i])), jmp(next())));
      blocks.push_back(blk(alu(op, 3, r(1), k(values[i + 1]), k(values[i])), jmp(next())));
    }
  blocks.push_back(blk(std::nullopt, exit_()));
  const machine::Program prog = program(blocks);
  circuit::Evaluator ev(p);
  std::vector<int> vals;
  for (int64_t id : encode_prompt(prog, 1, 1, {}, global_memory())) vals = ev.step(int(id - kTokenBase));
  // The guards' flags, and per flag the ops whose steps all read it.
  const std::vector<std::string> flags = {"uses_sum", "is_bits", "is_sub", "is_eq", "is_signed_cmp",
                                          "is_unsigned_cmp", "is_mul", "is_ffma"};
  std::vector<circuit::ValueId> flag_of(flags.size(), -1);
  for (circuit::ValueId v = 0; v < circuit::ValueId(p.values().size()); ++v)
    for (size_t f = 0; f < flags.size(); ++f)
      if (p.info(v).name == flags[f]) {
        EXPECT_EQ(flag_of[f], -1) << flags[f] << " named twice";
        flag_of[f] = v;
      }
  std::vector<std::vector<const circuit::MlpOp*>> guarded(flags.size());
  for (const circuit::Op& op : p.ops())
    if (const auto* m = std::get_if<circuit::MlpOp>(&op); m && !m->steps.empty())
      for (size_t f = 0; f < flags.size(); ++f) {
        const bool all = std::all_of(m->steps.begin(), m->steps.end(), [&](const circuit::Step& st) {
          return std::any_of(st.form.begin(), st.form.end(), [&](const circuit::Term& t) { return t.v == flag_of[f]; });
        });
        if (all) guarded[f].push_back(m);
      }
  for (size_t f = 0; f < flags.size(); ++f) {
    ASSERT_GE(flag_of[f], 0) << flags[f];
    EXPECT_GT(guarded[f].size(), 0u) << flags[f] << " guards no op";
  }
  auto fires = [&](const std::vector<int>& vals, const circuit::MlpOp& m) {
    int n = 0;
    for (const circuit::Step& st : m.steps) {
      int F = st.bias;
      for (const circuit::Term& t : st.form)
        F += t.slot == circuit::kAmount ? t.coef * vals[t.v] : (vals[t.v] == t.slot ? t.coef : 0);
      n += F >= 1;
    }
    return n;
  };
  TraceOracle oracle(prog, 1, 1, {}, global_memory());
  int tokens = 0, ffma = 0, mul = 0, sub = 0, bits = 0;
  std::vector<std::array<int, 2>> flag_tokens(flags.size(), {0, 0});
  std::vector<int> off_firing(flags.size(), 0);
  while (!oracle.done()) {
    const int64_t want = oracle.next();
    ASSERT_EQ(ev.emitted() + kTokenBase, want) << "generated token " << tokens << "\n" << oracle.context();
    vals = ev.step(int(want - kTokenBase));
    ++tokens;
    ffma += firing(vals, "ffma.");
    mul += firing(vals, "mul.");
    sub += firing(vals, "sub.");
    bits += firing(vals, "bits.");
    for (size_t f = 0; f < flags.size(); ++f) {
      const int on = vals[flag_of[f]];
      ASSERT_TRUE(on == 0 || on == 1) << flags[f];
      ++flag_tokens[f][on];
      if (!on)
        for (const circuit::MlpOp* m : guarded[f]) off_firing[f] += fires(vals, *m);
    }
  }
  EXPECT_GT(tokens, 100);
  EXPECT_EQ(ffma, 0);
  EXPECT_EQ(mul, 0);
  EXPECT_GT(sub, 0);    // SUB runs: its steps fire on its tokens
  EXPECT_GT(bits, 0);   // so do the bit operations'
  for (size_t f = 0; f < flags.size(); ++f) {
    EXPECT_EQ(off_firing[f], 0) << flags[f] << ": a guarded op fires where its flag is off";
    EXPECT_GT(flag_tokens[f][0], 0) << flags[f] << " holds on every token";
    if (flags[f] != "is_mul" && flags[f] != "is_ffma") EXPECT_GT(flag_tokens[f][1], 0) << flags[f] << " never holds";
  }
}

// f32 add and subtract as the lowering makes them, FFMA (.rn) a * 1 + b and
// b * -1 + a, on every ordered pair of f32 edge values (signed zeros,
// denormals, the normal range's ends, halfway cases against 1.0,
// infinities, NaNs with payloads), register and immediate operands, on the
// evaluator in lockstep with the interpreter (whose float_eval is the host's
// fused multiply-add).
TEST(GpuCircuitEval, FfmaAsAddAndSubOnEdgeValues) {
  const std::vector<uint32_t> values = {0x00000000, 0x80000000, 0x00000001, 0x807fffff, 0x00800000,
                                        0x3f800000, 0xbf800001, 0x33800000, 0x33800001, 0x7f7fffff,
                                        0xff7fffff, 0x7f800000, 0xff800000, 0x7fc12345};
  std::vector<Block> blocks;
  auto next = [&] { return uint32_t(blocks.size() + 1); };
  for (uint32_t a : values)
    for (uint32_t b : values) {
      blocks.push_back(blk(alu(Op::MOV, 1, k(a)), jmp(next())));
      blocks.push_back(blk(alu(Op::FFMA, 3, r(1), k(0x3f800000), k(b)), jmp(next())));
      blocks.push_back(blk(alu(Op::FFMA, 4, r(1), k(0xbf800000), k(b)), jmp(next())));
    }
  blocks.push_back(blk(std::nullopt, exit_()));
  ASSERT_LE(blocks.size(), 1024u);
  EXPECT_GT(lockstep(program(blocks), 1, 1, {}, global_memory()), blocks.size());
}

// FFMA (.rn) on every ordered pair of f32 edge values (signed zeros,
// denormals, the normal range's ends, powers of two whose products overflow
// or underflow to denormals and zero, a rounding case, infinities, NaNs with
// payloads) as a * b + -0 (the lowering's f32 multiply), and as b * a + c
// with c alternately the rounded product negated (cancellation: the exact
// product's rounding error, or zero) and another edge value, register and
// immediate operands, on the evaluator in lockstep with the interpreter
// (whose float_eval is the host's fused multiply-add).
TEST(GpuCircuitEval, FfmaOnEdgeValues) {
  const std::vector<uint32_t> values = {0x00000000, 0x80000000, 0x00000001, 0x807fffff, 0x00800000, 0x3f800000,
                                        0xbf800001, 0x33800000, 0x7f7fffff, 0xff7fffff, 0x7f800000, 0xff800000,
                                        0x7fc12345, 0x1f800000, 0xdf800000, 0x3fb504f3, 0x20000001, 0x00400001};
  std::vector<Block> blocks;
  auto next = [&] { return uint32_t(blocks.size() + 1); };
  for (size_t i = 0; i < values.size(); ++i)
    for (size_t j = 0; j < values.size(); ++j) {
      const uint32_t a = values[i], b = values[j];
      const uint32_t c = (i + j) % 2 ? ptx::fref::mul_rn(a, b) ^ 0x80000000u : values[(i + 2 * j + 1) % values.size()];
      blocks.push_back(blk(alu(Op::MOV, 1, k(a)), jmp(next())));
      blocks.push_back(blk(alu(Op::FFMA, 3, r(1), k(b), k(0x80000000u)), jmp(next())));
      blocks.push_back(blk(alu(Op::FFMA, 4, k(b), r(1), k(c)), jmp(next())));
    }
  blocks.push_back(blk(std::nullopt, exit_()));
  ASSERT_LE(blocks.size(), 1024u);
  EXPECT_GT(lockstep(program(blocks), 1, 1, {}, global_memory()), blocks.size());
}

// The compiled model on one instance of every ALU operation with random operands.
TEST(GpuCircuitEval, EveryAluOperationOnTheModel) {
  const Op ops[] = {Op::ADD, Op::SUB, Op::MUL, Op::MULHU, Op::AND, Op::OR, Op::XOR, Op::SHL, Op::SHR, Op::SAR,
                    Op::SEQ, Op::SNE, Op::SLT, Op::SLE, Op::SLTU, Op::SLEU, Op::SEL, Op::MIN, Op::MAX, Op::MINU,
                    Op::MAXU, Op::POPC, Op::CLZ, Op::BREV, Op::CSUB, Op::FFMA};
  std::mt19937 rng(11);
  std::vector<Block> blocks;
  auto next = [&] { return uint32_t(blocks.size() + 1); };
  for (Op op : ops) {
    const uint32_t a = rng(), bv = op == Op::SHL || op == Op::SHR || op == Op::SAR ? rng() % 40 : rng();
    blocks.push_back(blk(alu(Op::MOV, 1, k(a)), jmp(next())));
    blocks.push_back(blk(alu(op, 3, r(1), k(bv), r(1)), jmp(next())));
  }
  blocks.push_back(blk(std::nullopt, exit_()));
  EXPECT_GT(both(program(blocks), 1, 1, {}, global_memory()), blocks.size());
}

}  // namespace
}  // namespace qgpu::gpu
