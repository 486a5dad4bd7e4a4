// GDN row memories over long random runs, the output head, tokens outside the
// circuit, perturbed norms, bf16 weights, and the cross-check of both
// executors against the Python reference.
#include "build_paths.h"   // qgpu_paths() in CMakeLists.txt

#include "bench.h"

#include <torch/utils.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <random>
#include <unistd.h>

namespace circuit_test {
namespace {

// Tokens W(a, d) write nibble d at address a (and the high address bit d & 1
// for the 256-row store), R(a, d) read, V(d) is what the model answers, X resets.
struct MemoryBench {
  enum Kind { W = 0, R = 1, V = 2, X = 3 };
  Program p;
  ValueId kind, addr, data, ram, big;
  std::vector<ValueId> record;
  int v_tokens = 0, x_token = 0;

  MemoryBench() {
    kind = p.field("kind", 4);
    addr = p.field("addr", 128);
    data = p.field("data", 16);
    for (int k : {W, R})
      for (int a = 0; a < 128; ++a)
        for (int d = 0; d < 16; ++d)
          p.token(std::string(k == W ? "W" : "R") + std::to_string(a) + "," + std::to_string(d),
                  {{kind, k}, {addr, a}, {data, d}});
    v_tokens = static_cast<int>(p.tokens().size());
    for (int d = 0; d < 16; ++d) p.token("V" + std::to_string(d), {{kind, V}, {addr, 0}, {data, d}});
    x_token = p.token("X", {{kind, X}, {addr, 0}, {data, 0}});

    ValueId we = apply(p, "write", 2, kind, [](int k) { return k == W; });
    ValueId reset = apply(p, "reset", 2, kind, [](int k) { return k == X; });
    std::vector<Term> wide;
    for (int a = 1; a < 128; ++a) wide.push_back({addr, a, a});
    for (int d = 1; d < 16; d += 2) wide.push_back({data, d, 128});
    ValueId addr256 = p.ladder("addr256", 256, wide, 0, [](int s) { return s; });

    auto store = [&](const std::string& name, int rows, ValueId address, std::vector<MemoryOp::Part> parts) {
      MemoryOp m;
      m.name = name;
      m.rows = rows;
      m.write_addr = m.read_addr = Operand::value(address);
      m.write_enable = Operand::value(we);
      m.reset = Operand::value(reset);
      m.parts = std::move(parts);
      return p.memory(m);
    };
    ram = store("ram", 128, addr, {{data, 0}})[0];
    // A record assembled by the conv from this token and the three before it.
    record = store("record", 128, addr, {{data, 3}, {data, 2}, {data, 1}, {data, 0}});
    big = store("big", 256, addr256, {{data, 0}})[0];
    p.output({{kind, p.mlp("kind=V", 4, V, {})}, {addr, p.mlp("addr=0", 128, 0, {})}, {data, ram}});
    for (ValueId v : observed()) p.keep(v);
  }

  std::vector<ValueId> observed() const {
    std::vector<ValueId> v{ram, big};
    v.insert(v.end(), record.begin(), record.end());
    return v;
  }
  int w(int a, int d) const { return a * 16 + d; }
  int r(int a, int d) const { return 2048 + a * 16 + d; }

  // Random traffic: writes and reads to a small or the whole address space,
  // answers, rare resets; `blank` is the share of tokens outside the circuit.
  std::vector<int> traffic(size_t n, uint32_t seed, double blank = 0) const {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<double> u(0, 1);
    std::vector<int> t;
    while (t.size() < n) {
      const double x = u(rng);
      const int a = static_cast<int>(rng() % (u(rng) < 0.5 ? 16 : 128)), d = static_cast<int>(rng() % 16);
      if (x < blank) t.push_back(-1);
      else if (x < 0.5) t.push_back(w(a, d));
      else if (x < 0.95) t.push_back(r(a, d));
      else if (x < 0.9995) t.push_back(v_tokens + d);
      else t.push_back(x_token);
    }
    return t;
  }
};

void expect_exact(const MemoryBench& b, const Comparison& r, const std::vector<int>& tokens, const Compiled& c,
                  int64_t min_reads) {
  const char* names[] = {"ram", "big", "record0", "record1", "record2", "record3"};
  for (size_t k = 0; k < r.compared.size(); ++k) {
    EXPECT_EQ(r.mismatched[k], 0) << names[k];
    EXPECT_GE(r.compared[k], min_reads) << names[k];
  }
  int64_t answers = 0, wrong = 0;
  for (size_t t = 0; t < tokens.size(); ++t) {
    if (r.expected_emitted[t] < 0) continue;
    ++answers;
    if (r.emitted[t] != c.token_id(r.expected_emitted[t])) ++wrong;
  }
  EXPECT_EQ(wrong, 0) << "argmax differs from the evaluator's answer";
  EXPECT_GE(answers, min_reads);
  (void)b;
}

TEST(CircuitMemory, HundredThousandRandomWritesAndReads) {
  MemoryBench b;
  Compiled c = compile(b.p);
  std::cout << c.report();
  qgpu::qwen::Model model(c.take_checkpoint(), qgpu::qwen::Exec::Sparse);
  auto tokens = b.traffic(100'000, 11);  // the required length, whatever the scale
  Comparison r = compare(b.p, c, model, tokens, b.observed(), true);
  expect_exact(b, r, tokens, c, static_cast<int64_t>(tokens.size() / 4));
}

// The same traffic with every norm padded to the fixed energy that scalars
// use (and so every memory's outs preset): the reads and answers are still
// exact.
TEST(CircuitMemory, FixedEnergyNormsKeepEveryReadExact) {
  MemoryBench b;
  Options o;
  o.fixed_energy = true;
  Compiled c = compile(b.p, o);
  qgpu::qwen::Model model(c.take_checkpoint(), qgpu::qwen::Exec::Sparse);
  auto tokens = b.traffic(scaled(100'000), 12);
  Comparison r = compare(b.p, c, model, tokens, b.observed(), true);
  expect_exact(b, r, tokens, c, static_cast<int64_t>(tokens.size() / 4));
}

TEST(CircuitMemory, TokensOutsideTheCircuitAddExactlyZero) {
  MemoryBench b;
  Options o;
  o.token_base = 1;   // vocabulary id 0 embeds to zero
  Compiled c = compile(b.p, o);
  qgpu::qwen::Model model(c.take_checkpoint(), qgpu::qwen::Exec::Sparse);
  auto tokens = b.traffic(scaled(6000), 12, 0.1);
  // Every residual of a zero token, entering every layer and after the last, is exactly zero.
  std::vector<int64_t> ids;
  for (int t : tokens) ids.push_back(t < 0 ? 0 : c.token_id(t));
  std::vector<int> all;
  for (int l = 0; l <= c.num_layers(); ++l) all.push_back(l);
  auto state = model.new_state();
  auto out = model.forward(state, ids, all);
  int64_t blanks = 0;
  for (size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] != 0) continue;
    ++blanks;
    for (const auto& res : out.residuals) ASSERT_EQ(res[i].abs().max().item<float>(), 0.f) << "token " << i;
  }
  EXPECT_GT(blanks, static_cast<int64_t>(tokens.size() / 20));
  // And the circuit tokens around them still compute exactly.
  Comparison r = compare(b.p, c, model, tokens, b.observed(), true);
  expect_exact(b, r, tokens, c, static_cast<int64_t>(tokens.size() / 8));
}

// The vocabulary ids of circuit tokens.
std::vector<int64_t> ids_of(const Compiled& c, const std::vector<int>& tokens) {
  std::vector<int64_t> ids;
  for (int t : tokens) ids.push_back(c.token_id(t));
  return ids;
}

// Non-finite activations go through the sparse executor's fallbacks (the
// cut products compute every row; no bound shows z finite): after a
// circuit's traffic, a residual with an infinity and one with a NaN give
// the dense executor's logits bit for bit (NaN where it has NaN).  (The GDN
// states are not promised bit for bit under non-finite activations:
// model_host/qwen/README.md.)
TEST(CircuitMemory, NonFiniteResidualsGiveTheDenseExecutorsResults) {
  MemoryBench b;
  Compiled c = compile(b.p);
  const std::vector<int64_t> ids = ids_of(c, b.traffic(64, 15));
  qgpu::qwen::Model dense(c.checkpoint(), qgpu::qwen::Exec::Dense), sparse(c.checkpoint(), qgpu::qwen::Exec::Sparse);
  auto same = [](const torch::Tensor& x, const torch::Tensor& y) {
    return torch::equal(torch::isnan(x), torch::isnan(y)) &&
           torch::equal(torch::nan_to_num(x, 0.0), torch::nan_to_num(y, 0.0));
  };
  const int64_t H = c.checkpoint().config.hidden_size;
  for (float bad : {std::numeric_limits<float>::infinity(), std::numeric_limits<float>::quiet_NaN()}) {
    auto sd = dense.new_state(), ss = sparse.new_state();
    dense.forward(sd, ids);
    sparse.forward(ss, ids);
    torch::Tensor residual = torch::zeros({2, H});
    residual[0][0] = 1.0f;   // the anchor
    residual[1][0] = 1.0f;
    residual[1][c.dims(b.addr).front()] = bad;
    const auto od = dense.forward_residual(sd, residual), os = sparse.forward_residual(ss, residual);
    EXPECT_TRUE(same(od.logits, os.logits)) << bad;
    EXPECT_GT(torch::isnan(od.logits).sum().item<int64_t>(), 0) << bad;   // the bad entry went through
    EXPECT_TRUE(torch::isfinite(od.logits[0]).all().item<bool>()) << bad;   // the token before it did not
  }
}

// Every norm weight scaled by a random factor within 1 +- 1e-4 (hundreds of
// ulps, far more than a GPU's rsqrt error): every decision still holds.
TEST(CircuitMemory, DecisionsHoldUnderNormNoise) {
  MemoryBench b;
  Compiled c = compile(b.p);
  auto ck = c.take_checkpoint();
  torch::manual_seed(3);
  for (auto& [name, t] : ck.tensors) {
    if (name.find("norm") == std::string::npos) continue;
    t = ((1 + t) * (1 + 1e-4 * (2 * torch::rand_like(t) - 1))) - 1;
  }
  qgpu::qwen::Model model(ck, qgpu::qwen::Exec::Sparse);
  auto tokens = b.traffic(scaled(20'000), 13);
  Comparison r = compare(b.p, c, model, tokens, b.observed(), true);
  expect_exact(b, r, tokens, c, static_cast<int64_t>(tokens.size() / 5));
}

// A compiled circuit through the dense and the sparse executor and through
// the independent Python reference: the same answers, bit-identical between
// the executors, and the same GDN states.
TEST(CircuitMemory, DenseSparseAndPythonReferenceAgree) {
  MemoryBench b;
  Compiled c = compile(b.p);
  const std::vector<int64_t> ids = ids_of(c, b.traffic(24, 14));
  const std::string dir = testing::TempDir() + "/circuit_ref_" + std::to_string(::getpid());
  c.checkpoint().save(dir);
  qgpu::qwen::Model dense(c.checkpoint(), qgpu::qwen::Exec::Dense), sparse(c.checkpoint(), qgpu::qwen::Exec::Sparse);
  auto sd = dense.new_state(), ss = sparse.new_state();
  auto od = dense.forward(sd, ids), os = sparse.forward(ss, ids);
  EXPECT_TRUE(torch::equal(od.logits, os.logits));

  std::string join;
  for (auto id : ids) join += std::to_string(id) + " ";
  const std::string out = dir + ".expected";
  const std::string cmd = std::string("/usr/bin/python3 ") + CIRCUIT_REFERENCE_PY + " run " + dir + " --tokens \"" + join +
                          "\" --out " + out;
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  const auto& cfg = c.checkpoint().config;
  std::ifstream in(out, std::ios::binary);
  auto logits = torch::empty({static_cast<int64_t>(ids.size()), cfg.vocab_size});
  in.read(static_cast<char*>(logits.data_ptr()), logits.numel() * 4);
  std::vector<torch::Tensor> states;
  for (size_t t = 0; t < ids.size() * cfg.num_hidden_layers; ++t) {
    auto s = torch::empty({cfg.linear_num_value_heads, cfg.linear_key_head_dim, cfg.linear_value_head_dim});
    in.read(static_cast<char*>(s.data_ptr()), s.numel() * 4);
    states.push_back(s);
  }
  ASSERT_TRUE(in.good());
  std::filesystem::remove_all(dir);
  std::filesystem::remove(out);
  EXPECT_TRUE(torch::equal(logits.argmax(1), od.logits.argmax(1)));
  EXPECT_LT((logits - od.logits).abs().max().item<float>(), 1e-3f);
  // After the last token: the states the runtime holds equal the reference's.
  for (int l = 0; l < cfg.num_hidden_layers; ++l) {
    const auto& ref = states[(ids.size() - 1) * cfg.num_hidden_layers + l];
    EXPECT_LT((ref - dense.recurrent_state(sd, l)).abs().max().item<float>(), 1e-4f) << "layer " << l;
    EXPECT_TRUE(torch::equal(dense.recurrent_state(sd, l), sparse.recurrent_state(ss, l))) << "layer " << l;
  }
}

// The sublayer memo (model_host/qwen/memo.h) on single-token steps: a
// circuit's traffic repeats the projections' and the MLP's inputs, the memo
// serves them, and every step's logits and the final GDN states are
// bit-identical to the sparse executor without it and to the dense one.
TEST(CircuitMemory, SublayerMemoStepsAreBitIdentical) {
  MemoryBench b;
  Compiled c = compile(b.p);
  auto tokens = b.traffic(120, 14);
  qgpu::qwen::Model dense(c.checkpoint(), qgpu::qwen::Exec::Dense);
  qgpu::qwen::Model plain(c.checkpoint(), qgpu::qwen::Exec::Sparse), memo(c.checkpoint(), qgpu::qwen::Exec::Sparse);
  plain.set_memo_entries(0);
  EXPECT_EQ(memo.memo_entries(), qgpu::qwen::Model::kMemoEntries);
  EXPECT_EQ(dense.memo_entries(), 0u);
  memo.set_memo_entries(8);  // small: entries are replaced too
  auto sd = dense.new_state(), sp = plain.new_state(), sm = memo.new_state();
  int64_t steps = 0;
  for (int t : tokens) {
    const int64_t id = c.token_id(t);
    const auto ld = dense.step(sd, id), lp = plain.step(sp, id), lm = memo.step(sm, id);
    ASSERT_TRUE(torch::equal(lm, lp)) << "step " << steps;
    ASSERT_TRUE(torch::equal(lm, ld)) << "step " << steps;
    ASSERT_EQ(memo.step_argmax(sm, id), plain.step_argmax(sp, id)) << "step " << steps;
    dense.step(sd, id);
    ++steps;
  }
  for (int l = 0; l < c.checkpoint().config.num_hidden_layers; ++l) {
    EXPECT_TRUE(torch::equal(memo.recurrent_state(sm, l), plain.recurrent_state(sp, l))) << "layer " << l;
    EXPECT_TRUE(torch::equal(memo.recurrent_state(sm, l), dense.recurrent_state(sd, l))) << "layer " << l;
  }
  const auto served = memo.memo_stats();
  EXPECT_GT(served.hits, served.misses / 4) << "the traffic's repeated inputs were not served from the memo";
  EXPECT_GT(served.misses, 0);
  EXPECT_EQ(plain.memo_stats().hits + plain.memo_stats().misses, 0);
  memo.clear_memo();
  EXPECT_EQ(memo.memo_stats().hits + memo.memo_stats().misses, 0);
}

// Stores whose records mix ages (this token's byte and the three before it),
// read on the first tokens of many sequences: with split_ages the parts
// already there read back exactly; without it the evaluator calls the
// whole record unknown until the oldest part exists.
TEST(CircuitMemory, SplitAgesReadTheFirstTokensExactly) {
  ByteBench b;
  std::vector<std::vector<ValueId>> outs;   // per store: the parts' outs, age 0 first
  for (int split = 0; split < 2; ++split)
    for (int zero_default = 0; zero_default < 2; ++zero_default) {
      MemoryOp m;
      m.name = "mix" + std::to_string(split) + std::to_string(zero_default);
      m.rows = 1;
      m.write_addr = m.read_addr = Operand::fixed(0);
      m.write_enable = Operand::fixed(1);
      m.zero_default = zero_default;
      m.split_ages = split;
      for (int age = 3; age >= 0; --age) {   // oldest first: the split sorts them
        m.parts.push_back({b.lo, age});
        m.parts.push_back({b.hi, age});
      }
      std::vector<ValueId> o = b.p.memory(m);
      std::reverse(o.begin(), o.end());   // hi, lo of age 0 first
      for (ValueId v : o) b.p.keep(v);
      outs.push_back(o);
    }
  Options opt;
  opt.token_base = 1;
  Compiled c = compile(b.p, opt);
  for (int s = 0; s < 4; ++s)
    EXPECT_EQ(c.memory_layout("mix" + std::to_string(s / 2) + std::to_string(s % 2)).slices, s < 2 ? 1 : 4);
  qgpu::qwen::Model model(c.checkpoint(), qgpu::qwen::Exec::Sparse);
  std::vector<ValueId> observed;
  for (const auto& o : outs) observed.insert(observed.end(), o.begin(), o.end());
  std::mt19937 rng(3);
  // Per store and age: reads compared on the first three tokens, and mismatches.
  std::vector<std::vector<int64_t>> compared(4, std::vector<int64_t>(4, 0)), wrong = compared;
  for (int run = 0; run < 40; ++run) {
    std::vector<int> tokens, bytes;
    for (int t = 0; t < 5; ++t) {
      bytes.push_back(static_cast<int>(rng() % 256));
      tokens.push_back(ByteBench::token(bytes.back(), t));
    }
    Comparison r = compare(b.p, c, model, tokens, observed);
    for (int s = 0; s < 4; ++s)
      for (int age = 0; age < 4; ++age)
        for (int half = 0; half < 2; ++half) {
          const size_t k = 8 * s + 2 * age + half;
          wrong[s][age] += r.mismatched[k];
          for (int t = 0; t < 3; ++t) {
            const int want = r.expected[t][k];
            if (want == kUndefined) continue;
            ++compared[s][age];
            // The evaluator's read: the byte `age` tokens back, or 0 (zero default) before the start.
            const int byte = t >= age ? bytes[t - age] : -1;
            const int expect = byte < 0 ? 0 : half == 0 ? byte >> 4 : byte & 15;
            ASSERT_TRUE(byte >= 0 || s % 2 == 1) << "store " << s << " defined before the start";
            ASSERT_EQ(want, expect) << "store " << s << " age " << age << " token " << t;
          }
        }
  }
  for (int s = 0; s < 4; ++s)
    for (int age = 0; age < 4; ++age) EXPECT_EQ(wrong[s][age], 0) << "store " << s << " age " << age;
  // Unsplit: on the first three tokens a part of the record is from before
  // the start, which makes the whole record unknown: nothing is compared.
  for (int age = 0; age < 4; ++age) {
    EXPECT_EQ(compared[0][age], 0);
    EXPECT_EQ(compared[1][age], 0);
  }
  // Split: age a is there from token a on (3 - a of the first three tokens,
  // over 40 runs, two nibbles each); with the zero default, on all three.
  for (int age = 0; age < 4; ++age) {
    EXPECT_EQ(compared[2][age], 40 * 2 * std::max(0, 3 - age)) << "age " << age;
    EXPECT_EQ(compared[3][age], 40 * 2 * 3) << "age " << age;
  }
}

}  // namespace
}  // namespace circuit_test
