// bench_gpu: how fast the sparse executor runs the GPU inside the model.
//
// Builds the GPU checkpoint (gpu::build(), or loads a model directory), times
// the construction of qwen::Model from it, then runs one launch of a small
// looping kernel the way the model backend does: batched prefill of the
// launch's prompt, then greedy decoding until END.  Every generated token is
// checked against the reference interpreter's trace (gpu::TraceOracle), so a
// faster executor that changes a single number shows up as a failure here.
// Each repetition runs the launch without the sublayer memo (the baseline)
// and with it (emptied first; --memo entries), and the ratio is printed.
//
// The kernel: each of --threads threads (per CTA, --ctas CTAs) loads its word
// of global memory, adds its thread index --iters times and stores the word
// back.  --words non-zero words of global memory go into the prompt.
#include "model_host/circuit/compiler.h"
#include "model_host/circuit/evaluator.h"
#include "model_host/machine_circuit/circuit.h"
#include "model_host/tokens/prompt.h"
#include "model_host/tokens/trace.h"
#include "model_host/tokens/vocab.h"
#include "model_host/machine/isa.h"
#include "model_host/qwen/model.h"

#include <CLI/CLI.hpp>

#include <chrono>
#include <cstring>
#include <ctime>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <sstream>
#include <stdexcept>

using namespace qgpu;

namespace {

constexpr uint32_t kGlobalBase = 0x10000000;  // the model machine's global base (docs/tokens.md)
constexpr size_t kGlobalBytes = 16 * 1024;    // the largest image a prompt holds

double rss_gib() {
  std::ifstream in("/proc/self/status");
  std::string key;
  while (in >> key)
    if (key == "VmRSS:") {
      double kib;
      in >> kib;
      return kib / (1024.0 * 1024.0);
    }
  return 0;
}

// Wall and process-CPU seconds since construction: on a shared machine the
// CPU time is the steadier measure of the work done.
class Timer {
 public:
  Timer() : wall0_(std::chrono::steady_clock::now()), cpu0_(cpu()) {}
  double wall() const { return std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0_).count(); }
  double cpu_s() const { return cpu() - cpu0_; }

 private:
  static double cpu() {
    timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
  }
  std::chrono::steady_clock::time_point wall0_;
  double cpu0_;
};

machine::Block block(machine::Instr in, machine::Terminator t) {
  machine::Block b;
  b.instrs.push_back(in);
  b.term = t;
  return b;
}

machine::Instr alu(machine::Op op, uint32_t dst, machine::Operand a, machine::Operand b = machine::Operand::k(0),
                   machine::Operand c = machine::Operand::k(0)) {
  machine::Instr in;
  in.op = op;
  in.dst = dst;
  in.a = a;
  in.b = b;
  in.c = c;
  return in;
}

// global[tid] += iters * tid, one instruction per block as the model's machine requires.
machine::Program loop_kernel(uint32_t threads, uint32_t ctas, uint32_t iters) {
  using machine::Op;
  using machine::Operand;
  using machine::Term;
  const auto r = Operand::reg;
  const auto k = Operand::k;
  auto jmp = [](uint32_t t) { return machine::Terminator{Term::JMP, 0, t, 0, 0}; };
  machine::Instr ld = alu(Op::LD, 3, r(2), k(kGlobalBase));
  ld.space = machine::Space::Global;
  machine::Instr st = alu(Op::ST, 0, r(2), k(kGlobalBase), r(3));
  st.space = machine::Space::Global;
  machine::Program p;
  p.kernel = "bench_loop";
  p.threads = threads;
  p.ctas = ctas;
  p.blocks = {
      block(alu(Op::WARP, 1, k(0)), jmp(1)),                            // B0: r1 = thread
      block(alu(Op::SHL, 2, r(1), k(2)), jmp(2)),                       // B1: r2 = 4 * thread
      block(ld, jmp(3)),                                                // B2: r3 = global[thread]
      block(alu(Op::MOV, 4, k(iters)), jmp(4)),                         // B3: r4 = iters
      block(alu(Op::ADD, 3, r(3), r(1)), jmp(5)),                       // B4: r3 += thread
      block(alu(Op::SUB, 4, r(4), k(1)), {Term::BR, 4, 4, 6, 0}),       // B5: loop while --r4
      block(st, {Term::EXIT, 0, 0, 0, 0}),                              // B6: global[thread] = r3
  };
  machine::validate(p, machine::model_params());
  return p;
}

struct Args {
  std::string model_dir;
  uint32_t threads = 8, ctas = 1, iters = 10, words = 256;
  int torch_threads = 2, repeat = 3;
  size_t max_tokens = 100000;
  bool via_logits = false, bf16_activations = false;
  std::string bf16_weights = "none";  // none | but-norms | all
  bool explain = false;
  size_t memo = qwen::Model::kMemoEntries;  // sublayer memo entries (0: off)
};

// A divergence from the reference trace: the message, and every token the
// model read up to the one after which it wrote the wrong token.
struct Divergence : std::runtime_error {
  Divergence(const std::string& what, std::vector<int64_t> read) : std::runtime_error(what), read(std::move(read)) {}
  std::vector<int64_t> read;
};

// Where the model parts from the circuit's evaluator on the last token of
// `read`: the compiled values that decode differently from the final-layer
// residuals (each at the residual where it is ready), earliest depth first.
void explain(const qwen::Model& model, const std::vector<int64_t>& read) {
  const circuit::Program program = gpu::machine_circuit();
  circuit::Options opt;
  opt.token_base = gpu::kTokenBase;
  opt.vocab_size = gpu::kTokenBase + gpu::circuit_token_count();
  opt.weights = false;   // placement and dimensions only: the same as the checkpoint's
  const circuit::Compiled c = circuit::compile(program, opt);
  circuit::Evaluator ev(program, c.depths());
  std::vector<int> vals;
  for (int64_t id : read) vals = ev.step(static_cast<int>(id - gpu::kTokenBase));
  std::vector<int> layers;
  for (int l = 0; l <= c.num_layers(); ++l) layers.push_back(l);
  qwen::State st = model.new_state();
  const qwen::Outputs out = model.forward(st, read, layers);
  const int64_t last = static_cast<int64_t>(read.size()) - 1;
  struct Miss {
    int depth;
    std::string line;
  };
  std::vector<Miss> misses;
  for (circuit::ValueId v = 0; v < static_cast<circuit::ValueId>(program.values().size()); ++v) {
    const int at = c.capture_index(v);
    if (at < 0 || vals[v] == circuit::kUndefined) continue;
    const torch::Tensor row = out.residuals[at][last].contiguous();
    const int got = c.decode(v, row.data_ptr<float>(), 0.05f);
    if (got == vals[v]) continue;
    std::ostringstream line;
    line << program.info(v).name << " (ready at depth " << c.depths()[v] << ", read entering layer " << at
         << "): evaluator " << vals[v] << ", model " << (got < 0 ? std::string("no clean slot") : std::to_string(got));
    misses.push_back({c.depths()[v], line.str()});
  }
  std::stable_sort(misses.begin(), misses.end(), [](const Miss& x, const Miss& y) { return x.depth < y.depth; });
  std::cerr << "explain: " << misses.size() << " values differ on the last token read ("
            << gpu::token_name(read.back()) << "); the earliest:\n";
  for (size_t i = 0; i < misses.size() && i < 12; ++i) std::cerr << "  " << misses[i].line << "\n";
}

// One launch's timings.
struct Run {
  double prefill_s = 0, prefill_cpu = 0, decode_s = 0, decode_cpu = 0;
  size_t generated = 0;
};

// Prefills `prompt` into a fresh state and decodes greedily until END,
// checking every token against the reference trace; throws on a divergence.
Run launch(const qwen::Model& model, const std::vector<int64_t>& prompt, gpu::TraceOracle& oracle, const Args& a) {
  const int64_t end = gpu::token_id(gpu::Kind::END);
  qwen::State state = model.new_state();
  Run r;
  Timer t_prefill;
  int64_t token = -1;
  if (a.via_logits) {
    // Chunks bound the [T, vocab] logits forward() returns.
    constexpr size_t kChunk = 64;
    torch::Tensor logits;
    for (size_t i = 0; i < prompt.size(); i += kChunk) {
      const auto first = prompt.begin() + static_cast<std::ptrdiff_t>(i);
      logits = model.forward(state, {first, first + static_cast<std::ptrdiff_t>(std::min(kChunk, prompt.size() - i))}).logits;
    }
    token = logits[logits.size(0) - 1].argmax().item<int64_t>();
  } else {
    token = model.forward_argmax(state, prompt);
  }
  r.prefill_s = t_prefill.wall();
  r.prefill_cpu = t_prefill.cpu_s();

  Timer t_decode;
  std::vector<int64_t> read = prompt;
  for (;;) {
    ++r.generated;
    const int64_t expected = oracle.next();
    if (token != expected)
      throw Divergence("the model diverged from the reference trace at generated token " +
                           std::to_string(r.generated - 1) + ": expected " + gpu::token_name(expected) + ", got " +
                           gpu::token_name(token),
                       read);
    if (token == end) break;
    if (a.explain) read.push_back(token);
    if (r.generated >= a.max_tokens) throw std::runtime_error("no END after " + std::to_string(r.generated) + " tokens");
    token = a.via_logits ? model.step(state, token).argmax().item<int64_t>() : model.step_argmax(state, token);
  }
  r.decode_s = t_decode.wall();
  r.decode_cpu = t_decode.cpu_s();
  return r;
}

int run(const Args& a) {
  at::set_num_threads(a.torch_threads);
  Timer t_ck;
  qwen::Checkpoint ck;
  if (a.model_dir.empty()) ck = gpu::build().checkpoint;
  else  // sparse as the model backend loads it, unless the weights are rounded below
    ck = qwen::Checkpoint::load(a.model_dir, a.bf16_weights == "none" ? qwen::Storage::Sparse : qwen::Storage::Dense);
  const double ck_s = t_ck.wall();
  if (a.bf16_weights != "none")
    for (auto& [name, t] : ck.tensors)
      if (a.bf16_weights == "all" || name.find("norm") == std::string::npos)
        t = t.to(torch::kBFloat16).to(torch::kFloat32);

  const double rss0 = rss_gib();
  Timer t_load;
  qwen::Model model(ck, qwen::Exec::Sparse, a.bf16_activations ? qwen::Activations::Bf16 : qwen::Activations::Fp32);
  const double load_s = t_load.wall(), load_cpu = t_load.cpu_s();
  const double rss_model = rss_gib() - rss0;

  launch::GlobalMemory global{kGlobalBase, std::vector<uint8_t>(kGlobalBytes, 0)};
  for (uint32_t w = 0; w < a.words && w < kGlobalBytes / 4; ++w) {
    const uint32_t v = 0x1000 + 7 * w;
    std::memcpy(&global.bytes[4 * w], &v, 4);
  }
  const machine::Program prog = loop_kernel(a.threads, a.ctas, a.iters);
  const std::vector<int64_t> prompt = gpu::encode_prompt(prog, a.threads, a.ctas, {}, global);

  // The best of the repetitions: on a shared machine the others measure the
  // neighbours.  Each repetition runs the launch without the sublayer memo
  // (the baseline) and then with it, emptied first.
  Run best, base;
  for (int i = 0; i < 2 * a.repeat; ++i) {
    const bool with_memo = i % 2 == 1;
    if (with_memo && a.memo == 0) continue;
    model.set_memo_entries(with_memo ? a.memo : 0);
    model.clear_memo();
    gpu::TraceOracle oracle(prog, a.threads, a.ctas, {}, global);
    Run r;
    try {
      r = launch(model, prompt, oracle, a);
    } catch (const Divergence& d) {
      std::cerr << "bench_gpu: " << d.what() << (with_memo ? " (with the sublayer memo)" : "") << "\n";
      if (a.explain) explain(model, d.read);
      return 1;
    }
    Run& b = with_memo ? best : base;
    if (i < 2) b = r;
    b.prefill_s = std::min(b.prefill_s, r.prefill_s);
    b.prefill_cpu = std::min(b.prefill_cpu, r.prefill_cpu);
    b.decode_s = std::min(b.decode_s, r.decode_s);
    b.decode_cpu = std::min(b.decode_cpu, r.decode_cpu);
  }
  const qwen::Model::MemoStats memo = model.memo_stats();  // of the last launch
  if (a.memo == 0) best = base;
  const double decode_steps = static_cast<double>(best.generated - 1);  // the first token came from the prefill
  const double prompt_tokens = static_cast<double>(prompt.size());

  const auto s = model.stats();
  std::cout << std::fixed << std::setprecision(2)
            << "checkpoint: " << (a.model_dir.empty() ? "gpu::build()" : a.model_dir) << " in " << ck_s << " s; "
            << s.active_heads << "/" << s.total_heads << " GDN heads, " << s.active_units << "/" << s.total_units
            << " MLP units, " << s.active_vocab << " live vocabulary rows, " << s.stored << " stored weights\n"
            << "launch: " << a.threads << " threads x " << a.ctas << " CTAs, " << a.iters << " iterations; prompt "
            << prompt.size() << " tokens, generated " << best.generated << " (trace checked); best of " << a.repeat
            << (a.via_logits ? ", through the logits" : ", forward_argmax/step_argmax") << "\n"
            << std::setprecision(1) << "load     " << std::setw(8) << load_s << " s      (" << load_cpu
            << " CPU-s, " << std::setprecision(2) << rss_model << " GiB RSS)\n"
            << std::setprecision(1) << "prefill  " << std::setw(8) << prompt_tokens / best.prefill_s << " tok/s  ("
            << prompt_tokens / best.prefill_cpu << " per CPU-s)\n"
            << "decode   " << std::setw(8) << decode_steps / base.decode_s << " tok/s  ("
            << decode_steps / base.decode_cpu << " per CPU-s) without the sublayer memo\n";
  if (a.memo > 0)
    std::cout << "decode   " << std::setw(8) << decode_steps / best.decode_s << " tok/s  ("
              << decode_steps / best.decode_cpu << " per CPU-s) with a " << a.memo
              << "-entry sublayer memo, emptied before each launch: " << std::setprecision(2)
              << base.decode_s / best.decode_s << "x; " << memo.hits << " sublayer steps from the memo, "
              << memo.misses << " computed\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Decode and prefill speed of the sparse executor on the GPU checkpoint, trace-checked"};
  Args a;
  app.add_option("--model-dir", a.model_dir, "load this model directory instead of compiling the GPU");
  app.add_option("--threads", a.threads, "kernel threads per CTA")->check(CLI::Range(1, 1024));
  app.add_option("--ctas", a.ctas, "CTAs")->check(CLI::Range(1, 64));
  app.add_option("--iters", a.iters, "loop iterations per thread")->check(CLI::Range(1, 65535));
  app.add_option("--words", a.words, "non-zero words of global memory in the prompt")->check(CLI::Range(0, 4096));
  app.add_option("--torch-threads", a.torch_threads, "intra-op threads")->check(CLI::Range(1, 64));
  app.add_option("--repeat", a.repeat, "launches to run; the best times are reported")->check(CLI::Range(1, 1000));
  app.add_option("--max-tokens", a.max_tokens, "give up after this many generated tokens");
  app.add_option("--bf16-weights", a.bf16_weights,
                 "round the weights to bf16 first: none, but-norms (the norm weights stay fp32) or all")
      ->check(CLI::IsMember({"none", "but-norms", "all"}));
  app.add_flag("--bf16-activations", a.bf16_activations,
               "store activations in bf16 between operations (qwen::Activations::Bf16): does the trace hold?");
  app.add_flag("--via-logits", a.via_logits,
               "decode through the [vocab] logits (forward()/step() and torch::argmax) instead of "
               "forward_argmax()/step_argmax()");
  app.add_option("--memo", a.memo, "sublayer memo entries per sublayer (0: off; the baseline runs without it)");
  app.add_flag("--explain", a.explain,
               "at a divergence, list the circuit values the model computes differently from the evaluator on "
               "the last token read, earliest depth first (compiles the circuit's placement, about 10 s)");
  CLI11_PARSE(app, argc, argv);
  try {
    return run(a);
  } catch (const std::exception& e) {
    std::cerr << "bench_gpu: " << e.what() << "\n";
    return 1;
  }
}
