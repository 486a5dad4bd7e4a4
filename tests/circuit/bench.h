// Test benches for compiled circuits: programs fed by streams of byte tokens,
// run through the evaluator and through the Qwen3.5 runtime side by side.
#pragma once

#include "model_host/circuit/compiler.h"
#include "model_host/circuit/evaluator.h"
#include "model_host/circuit/words.h"
#include "model_host/qwen/model.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <random>
#include <string>
#include <vector>

namespace circuit_test {

using namespace qgpu::circuit;

// Random-input tests run `n` tokens, scaled by QGPU_CIRCUIT_TEST_SCALE when set
// (a quick look on a loaded machine; the defaults are the required sizes).
inline size_t scaled(size_t n) {
  const char* s = std::getenv("QGPU_CIRCUIT_TEST_SCALE");
  return s ? std::max<size_t>(64, static_cast<size_t>(n * std::atof(s))) : n;
}

// Tokens carry one byte (two nibble fields) and a position modulo 8.
struct ByteBench {
  Program p;
  ValueId lo, hi, pos;

  ByteBench() {
    lo = p.field("lo", 16);
    hi = p.field("hi", 16);
    pos = p.field("pos", 8);
    for (int b = 0; b < 256; ++b)
      for (int q = 0; q < 8; ++q)
        p.token("B" + std::to_string(b) + "@" + std::to_string(q), {{lo, b & 15}, {hi, b >> 4}, {pos, q}});
  }
  static int token(int byte, int position) { return byte * 8 + position % 8; }

  // The bytes of this token and the n - 1 before it, as one nibble word
  // (this token's byte least significant), assembled by the conv into one
  // memory row and read back at once.
  Word window(int n) {
    MemoryOp m;
    m.name = "window" + std::to_string(n);
    m.rows = 1;
    m.write_addr = m.read_addr = Operand::fixed(0);
    m.write_enable = Operand::fixed(1);
    for (int age = 0; age < n; ++age) {
      m.parts.push_back({lo, age});
      m.parts.push_back({hi, age});
    }
    return {p.memory(m), 4};
  }
};

// Per token, the evaluator's slot of every observed value.
using Slots = std::vector<std::vector<int>>;

struct Comparison {
  Slots expected;                       // evaluator, per token per observed value
  std::vector<int64_t> compared, mismatched;   // per observed value
  std::vector<int64_t> first_mismatch;         // token index per observed value, or -1
  std::vector<int64_t> emitted;         // argmax token per token (when `argmax`)
  std::vector<int> expected_emitted;    // evaluator's emitted token, or -1
};

// Runs `tokens` (circuit token indices, or -1 for the token below token_base)
// through the evaluator and the model (batched prefill in chunks), decoding
// each observed value from the final residual.  With `final_state`, the
// model's state after the last token is moved there.
inline Comparison compare(const Program& p, const Compiled& c, const qgpu::qwen::Model& model,
                          const std::vector<int>& tokens, const std::vector<ValueId>& observed, bool argmax = false,
                          float tol = 1e-3f, qgpu::qwen::State* final_state = nullptr) {
  Comparison r;
  r.compared.assign(observed.size(), 0);
  r.mismatched.assign(observed.size(), 0);
  r.first_mismatch.assign(observed.size(), -1);
  Evaluator ev(p, c.depths());
  for (int t : tokens) {
    if (t < 0) {
      ev.blank();
      r.expected.emplace_back(observed.size(), kUndefined);
      r.expected_emitted.push_back(-1);
      continue;
    }
    const auto& v = ev.step(t);
    std::vector<int> row;
    for (ValueId o : observed) row.push_back(v[o]);
    r.expected.push_back(std::move(row));
    r.expected_emitted.push_back(ev.emitted());
  }
  auto state = model.new_state();
  const int final_layer = c.num_layers();
  // Observed values are kept (Program::keep), so the final residual holds them all.
  // Prefill in chunks of 64 tokens: a chunk's activations stay in cache
  // (4,096-token chunks made the random-pair tests 1.2 to 1.6 times slower).
  constexpr size_t kChunk = 64;
  for (size_t start = 0; start < tokens.size(); start += kChunk) {
    std::vector<int64_t> ids;
    for (size_t i = start; i < std::min(tokens.size(), start + kChunk); ++i)
      ids.push_back(tokens[i] < 0 ? c.token_id(0) - 1 : c.token_id(tokens[i]));
    auto out = model.forward(state, ids, {final_layer});
    auto res = out.residuals[0].contiguous();
    const float* base = res.data_ptr<float>();
    const int64_t H = res.size(1);
    for (size_t i = 0; i < ids.size(); ++i) {
      const auto& want = r.expected[start + i];
      for (size_t k = 0; k < observed.size(); ++k) {
        if (want[k] == kUndefined) continue;
        ++r.compared[k];
        if (c.decode(observed[k], base + i * H, tol) == want[k]) continue;
        if (r.mismatched[k]++ == 0) r.first_mismatch[k] = static_cast<int64_t>(start + i);
      }
    }
    if (argmax) {
      auto am = out.logits.argmax(1);
      for (int64_t i = 0; i < am.size(0); ++i) r.emitted.push_back(am[i].item<int64_t>());
    }
  }
  if (final_state) *final_state = std::move(state);
  return r;
}

// The 256 byte tokens in a shuffled order, then again in order with every
// `blank_every`-th replaced by a token outside the circuit (-1).
inline std::vector<int> bytes_twice(unsigned seed, int blank_every) {
  std::vector<int> tokens;
  for (int t = 0; t < 256; ++t) tokens.push_back(t);
  std::mt19937 rng(seed);
  std::shuffle(tokens.begin(), tokens.end(), rng);
  for (int t = 0; t < 256; ++t) tokens.push_back(t % blank_every == 0 ? -1 : t);
  return tokens;
}

// Every observed value (named in order) compared at least `min` times, and
// always equal to the evaluator's.
inline void expect_no_mismatch(const Comparison& r, const std::vector<std::string>& names, int64_t min) {
  for (size_t k = 0; k < r.compared.size(); ++k) {
    EXPECT_EQ(r.mismatched[k], 0) << names.at(k) << ", first at token " << r.first_mismatch[k];
    EXPECT_GE(r.compared[k], min) << names.at(k);
  }
}

// Runs `tokens` (-1: the token below token_base) through the model and
// checks every residual entry entering every layer, and after the last: an
// exact integer, 0 on tokens outside the circuit, and, with `fixed_energy`,
// every circuit token's squared sum exactly 4096 x hidden.
inline void expect_integer_residuals(const Compiled& c, const qgpu::qwen::Model& model, const std::vector<int>& tokens,
                                     bool fixed_energy) {
  std::vector<int> all;
  for (int l = 0; l <= c.num_layers(); ++l) all.push_back(l);
  std::vector<int64_t> ids;
  for (int t : tokens) ids.push_back(t < 0 ? c.token_id(0) - 1 : c.token_id(t));
  auto st = model.new_state();
  auto out = model.forward(st, ids, all);
  for (size_t l = 0; l < out.residuals.size(); ++l) {
    const auto& res = out.residuals[l];
    ASSERT_TRUE(torch::equal(res, res.round())) << "layer boundary " << l;
    for (size_t t = 0; t < ids.size(); ++t) {
      if (tokens[t] < 0) {
        ASSERT_EQ(res[t].abs().sum().item<float>(), 0.0f) << "token " << t << ", boundary " << l;
      } else if (fixed_energy) {
        ASSERT_EQ(res[t].pow(2).sum().item<double>(), 4096.0 * static_cast<double>(res.size(1)))
            << "boundary " << l << " token " << t;
      }
    }
  }
}

}  // namespace circuit_test
