// Memories with thousands of rows, addressed by bits drawn from values, and
// zero-default memories, through the runtime (sparse executor, fp32): every
// read decoded from the final residual equals the evaluator's, the
// evaluator's equals an independent reference, and the rows read back from
// the GDN states through Compiled::memory_layout equal the reference store.
#include "bench.h"

#include <iostream>
#include <optional>
#include <random>

namespace circuit_test {
namespace {

using Words = std::vector<std::optional<uint32_t>>;   // a reference store: a word per row, or never written

// Embedding slots of a 16-bit payload in nibble fields p0..p3.
std::vector<std::pair<ValueId, int>> payload_slots(const Word& payload, uint32_t x) {
  std::vector<std::pair<ValueId, int>> s;
  for (int i = 0; i < 4; ++i) s.push_back({payload.digits[i], static_cast<int>((x >> (4 * i)) & 15)});
  return s;
}

// The word a run of nibble values stands for (least significant first), or
// nothing when one of them is undefined.
std::optional<uint32_t> word_of(const std::vector<int>& slots, const std::vector<ValueId>& digits) {
  uint32_t w = 0;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (slots[digits[i]] == kUndefined) return std::nullopt;
    w |= static_cast<uint32_t>(slots[digits[i]]) << (4 * i);
  }
  return w;
}

// A store's rows read back from the model's GDN states, as words (nothing
// for a row that reads no clean code, or all zero without zero default).
Words read_back(const Compiled& c, const qgpu::qwen::Model& model, const qgpu::qwen::State& state,
                const std::string& name) {
  const MemoryLayout& m = c.memory_layout(name);
  std::vector<torch::Tensor> states;
  for (int l = 0; l < c.num_layers(); ++l) states.push_back(model.recurrent_state(state, l).contiguous());
  Words rows;
  for (int r = 0; r < m.rows; ++r) {
    const auto slots = m.read(r, [&](int layer) { return states.at(layer); });
    std::optional<uint32_t> w = 0;
    for (size_t k = 0; k < slots.size(); ++k) {
      if (slots[k] < 0) w.reset();
      else if (w) *w |= static_cast<uint32_t>(slots[k]) << (4 * k);
    }
    rows.push_back(w);
  }
  return rows;
}

// Heads per layer of a layout.
std::map<int, int> heads_per_layer(const MemoryLayout& m) {
  std::map<int, int> n;
  for (const auto& h : m.heads) ++n[h.layer];
  return n;
}

// Global memory as docs/tokens.md has it: D(x) carries a 16-bit half word,
// ST(w) stores the word D(lo) D(hi) at word w (payload bits 0..11), LD(a)
// loads the word at byte address a (bits 2..13), X resets.  Every token
// reads at bits 2..13 of its payload.  A second store, `small`, without
// zero default, keeps (hi's nibble 1, the ST payload's nibble 0) at row
// 256 + bits 0..7 and reads 256 + bits 2..9: constant address bits.
struct WordBench {
  enum Kind { D = 0, ST = 1, LD = 2, X = 3 };
  Program p;
  ValueId kind;
  Word payload;
  std::vector<ValueId> global, small;   // the stores' reads: 8 nibbles, 2 nibbles
  std::vector<uint32_t> pay;            // per token, its payload
  std::vector<int> kinds;               // per token, its kind
  int d0 = 0, st0 = 0, ld0 = 0, x_token = 0;
  static constexpr int kHalves = 1024;  // D tokens: random half words

  WordBench() {
    kind = p.field("kind", 4);
    payload.bits = 4;
    for (int i = 0; i < 4; ++i) payload.digits.push_back(p.field("p" + std::to_string(i), 16));
    auto token = [&](const std::string& name, int k, uint32_t x) {
      auto slots = payload_slots(payload, x);
      slots.push_back({kind, k});
      pay.push_back(x);
      kinds.push_back(k);
      return p.token(name, slots);
    };
    std::mt19937 rng(5);
    d0 = static_cast<int>(p.tokens().size());
    for (int i = 0; i < kHalves; ++i) token("D" + std::to_string(i), D, rng() & 0xffff);
    st0 = static_cast<int>(p.tokens().size());
    for (uint32_t w = 0; w < 4096; ++w) token("ST" + std::to_string(w), ST, w);
    ld0 = static_cast<int>(p.tokens().size());
    for (uint32_t w = 0; w < 4096; ++w) token("LD" + std::to_string(w), LD, 4 * w + (w & 3));
    x_token = token("X", X, 0);

    const ValueId we = apply(p, "we", 2, kind, [](int k) { return k == ST; });
    const ValueId reset = apply(p, "reset", 2, kind, [](int k) { return k == X; });
    MemoryOp g;
    g.name = "global";
    g.rows = 4096;
    g.zero_default = true;
    g.write_addr = address_bits(payload, 0, 12);
    g.read_addr = address_bits(payload, 2, 12);
    g.write_enable = Operand::value(we);
    g.reset = Operand::value(reset);
    for (int age : {2, 1})
      for (ValueId d : payload.digits) g.parts.push_back({d, age});
    global = p.memory(g);

    MemoryOp s;
    s.name = "small";
    s.rows = 512;
    auto high = [](std::vector<AddrBit> b) {
      b.push_back(AddrBit::fixed(1));
      return b;
    };
    s.write_addr = high(address_bits(payload, 0, 8));
    s.read_addr = high(address_bits(payload, 2, 8));
    s.write_enable = Operand::value(we);
    s.reset = Operand::value(reset);
    s.parts = {{payload.digits[1], 1}, {payload.digits[0], 0}};
    small = p.memory(s);
    for (ValueId v : observed()) p.keep(v);
  }

  std::vector<ValueId> observed() const {
    std::vector<ValueId> v = global;
    v.insert(v.end(), small.begin(), small.end());
    return v;
  }

  // Store records D D ST(w) and loads LD(w), three quarters of them to a
  // few hot words, and a reset at a quarter, a half and three quarters of
  // the run.
  std::vector<int> traffic(size_t n, uint32_t seed) const {
    std::mt19937 rng(seed);
    std::vector<uint32_t> hot;
    for (int i = 0; i < 24; ++i) hot.push_back(rng() % 4096);
    auto pick = [&] { return rng() % 4 ? hot[rng() % hot.size()] : rng() % 4096; };
    std::vector<int> t;
    size_t next_reset = n / 4;
    while (t.size() < n) {
      if (t.size() >= next_reset) {
        t.push_back(x_token);
        next_reset += n / 4;
      }
      if (rng() % 2) {
        t.push_back(d0 + static_cast<int>(rng() % kHalves));
        t.push_back(d0 + static_cast<int>(rng() % kHalves));
        t.push_back(st0 + static_cast<int>(pick()));
      } else {
        t.push_back(ld0 + static_cast<int>(pick()));
      }
    }
    return t;
  }
};

// What the stores hold, by the tokens' meaning alone.
struct WordReference {
  Words global = Words(4096, 0u), small = Words(512);
  std::vector<bool> written = std::vector<bool>(4096, false), wiped = std::vector<bool>(4096, false);
  int64_t written_reads = 0, unwritten_reads = 0;   // of words written, of words never written since a reset
  int64_t reads_after_reset = 0;                     // of words a reset emptied

  // Applies token i of `tokens`; returns the words the stores read on it.
  std::pair<std::optional<uint32_t>, std::optional<uint32_t>> step(const WordBench& b, const std::vector<int>& tokens,
                                                                   size_t i) {
    const int t = tokens[i];
    const uint32_t x = b.pay[t];
    if (b.kinds[t] == WordBench::X) {
      for (size_t r = 0; r < global.size(); ++r) {
        wiped[r] = wiped[r] || written[r];
        written[r] = false;
        global[r] = 0u;
      }
      small.assign(small.size(), std::nullopt);
    }
    if (b.kinds[t] == WordBench::ST) {
      const uint32_t lo = b.pay[tokens[i - 2]], hi = b.pay[tokens[i - 1]];
      global[x & 0xfff] = lo | hi << 16;
      written[x & 0xfff] = true;
      wiped[x & 0xfff] = false;
      small[256 + (x & 0xff)] = ((hi >> 4) & 15) | (x & 15) << 4;
    }
    const uint32_t row = (x >> 2) & 0xfff;
    ++(written[row] ? written_reads : unwritten_reads);
    reads_after_reset += wiped[row];
    return {global[row], small[256 + (row & 0xff)]};
  }
};

TEST(CircuitWideMemory, FourThousandWordsByAddressBitsWithZeroDefault) {
  WordBench b;
  Compiled c = compile(b.p);
  std::cout << c.report();
  // 32 groups of one slice: layers 1 and 2 (after the write enable's MLP),
  // 16 heads each; `small` (4 groups) in the next layer.
  const MemoryLayout& g = c.memory_layout("global");
  EXPECT_EQ(g.groups, 32);
  EXPECT_EQ(g.slices, 1);
  EXPECT_EQ(heads_per_layer(g), (std::map<int, int>{{1, 16}, {2, 16}}));
  const MemoryLayout& s = c.memory_layout("small");
  EXPECT_EQ(s.groups * s.slices, 4);
  EXPECT_EQ(heads_per_layer(s), (std::map<int, int>{{3, 4}}));
  for (size_t k = 0; k < g.parts.size(); ++k) {
    EXPECT_EQ(g.parts[k].slice, 0);
    EXPECT_EQ(g.parts[k].channel, 16 * static_cast<int>(k));
  }

  // Conjunction keys and queries (gates 256 per slot, 128 - 256 n on the
  // anchor, over the norm's power-of-two level) are exact in bf16; the value
  // channels' gain kValueGain is not (docs/circuit.md section 4).
  const int64_t qk_rows = 2 * c.checkpoint().config.linear_key_dim();
  for (const auto& [name, t] : c.checkpoint().tensors)
    if (name.find("in_proj_qkv") != std::string::npos) {
      const torch::Tensor qk = t.narrow(0, 0, qk_rows);
      EXPECT_TRUE(torch::equal(qk, qk.to(torch::kBFloat16).to(torch::kFloat32))) << name;
    }

  qgpu::qwen::Model model(c.take_checkpoint(), qgpu::qwen::Exec::Sparse);
  const auto tokens = b.traffic(scaled(60'000), 21);
  qgpu::qwen::State state;
  Comparison r = compare(b.p, c, model, tokens, b.observed(), false, 1e-3f, &state);

  // The evaluator against the reference: zero-default reads always defined.
  WordReference ref;
  int64_t small_reads = 0;
  for (size_t i = 0; i < tokens.size(); ++i) {
    const auto [gw, sw] = ref.step(b, tokens, i);
    std::vector<int> slots(b.p.values().size(), kUndefined);
    const auto obs = b.observed();
    for (size_t k = 0; k < obs.size(); ++k) slots[obs[k]] = r.expected[i][k];
    ASSERT_EQ(word_of(slots, b.global), gw) << "token " << i;
    ASSERT_EQ(word_of(slots, b.small), sw) << "token " << i;
    small_reads += sw.has_value();
  }
  // The model against the evaluator: every read exact.
  for (size_t k = 0; k < r.compared.size(); ++k) EXPECT_EQ(r.mismatched[k], 0) << "observed value " << k;
  for (size_t k = 0; k < b.global.size(); ++k) EXPECT_EQ(r.compared[k], static_cast<int64_t>(tokens.size()));
  EXPECT_GE(small_reads, static_cast<int64_t>(tokens.size() / 10));
  EXPECT_GE(ref.written_reads, static_cast<int64_t>(tokens.size() / 10));
  EXPECT_GE(ref.unwritten_reads, static_cast<int64_t>(tokens.size() / 10));
  EXPECT_GE(ref.reads_after_reset, 1);
  std::cout << tokens.size() << " tokens: " << ref.written_reads << " reads of written words, "
            << ref.unwritten_reads << " of words never written, " << ref.reads_after_reset
            << " of words a reset emptied, " << small_reads << " reads of written rows of `small`\n";

  // The stores read back from the GDN states.
  EXPECT_EQ(read_back(c, model, state, "global"), ref.global);
  EXPECT_EQ(read_back(c, model, state, "small"), ref.small);
}

// A register file: 8192 rows keyed by 5 bits of a register value and 8 bits
// of a thread value, 64 heads over 4 layers from layer 0 (the write enable
// is an embedding field), without zero default.  D D W(t, r) writes a word,
// every token reads its (t, r).
struct RegisterBench {
  Program p;
  ValueId we, thread, reg;
  Word payload;
  std::vector<ValueId> regs;
  std::vector<uint32_t> pay;
  std::vector<int> row;   // per token: its (t, r) row
  int d0 = 0, w0 = 0, r0 = 0;
  static constexpr int kHalves = 1024;

  RegisterBench() {
    we = p.field("we", 2);
    thread = p.field("thread", 256);
    reg = p.field("reg", 32);
    for (int i = 0; i < 4; ++i) payload.digits.push_back(p.field("p" + std::to_string(i), 16));
    auto token = [&](const std::string& name, int write, int t, int r, uint32_t x) {
      auto slots = payload_slots(payload, x);
      slots.insert(slots.end(), {{we, write}, {thread, t}, {reg, r}});
      pay.push_back(x);
      row.push_back(t * 32 + r);
      p.token(name, slots);
    };
    std::mt19937 rng(6);
    for (int i = 0; i < kHalves; ++i) token("D" + std::to_string(i), 0, 0, 0, rng() & 0xffff);
    w0 = static_cast<int>(p.tokens().size());
    for (int t = 0; t < 256; ++t)
      for (int r = 0; r < 32; ++r) token("W" + std::to_string(t) + "," + std::to_string(r), 1, t, r, 0);
    r0 = static_cast<int>(p.tokens().size());
    for (int t = 0; t < 256; ++t)
      for (int r = 0; r < 32; ++r) token("R" + std::to_string(t) + "," + std::to_string(r), 0, t, r, 0);

    MemoryOp m;
    m.name = "regs";
    m.rows = 8192;
    std::vector<AddrBit> a;
    for (int i = 0; i < 5; ++i) a.push_back({reg, i});
    for (int i = 0; i < 8; ++i) a.push_back({thread, i});
    m.write_addr = m.read_addr = a;
    m.write_enable = Operand::value(we);
    for (int age : {2, 1})
      for (ValueId d : payload.digits) m.parts.push_back({d, age});
    regs = p.memory(m);
    for (ValueId v : regs) p.keep(v);
  }

  std::vector<int> traffic(size_t n, uint32_t seed) const {
    std::mt19937 rng(seed);
    std::vector<int> hot;
    for (int i = 0; i < 32; ++i) hot.push_back(static_cast<int>(rng() % 8192));
    auto pick = [&] { return rng() % 4 ? hot[rng() % hot.size()] : static_cast<int>(rng() % 8192); };
    std::vector<int> t;
    while (t.size() < n) {
      if (rng() % 2) {
        t.push_back(static_cast<int>(rng() % kHalves));
        t.push_back(static_cast<int>(rng() % kHalves));
        t.push_back(w0 + pick());
      } else {
        t.push_back(r0 + pick());
      }
    }
    return t;
  }
};

TEST(CircuitWideMemory, RegisterFileOfEightThousandRowsFromTwoValues) {
  RegisterBench b;
  Compiled c = compile(b.p);
  std::cout << c.report();
  const MemoryLayout& m = c.memory_layout("regs");
  EXPECT_EQ(m.groups, 64);
  EXPECT_EQ(m.slices, 1);
  EXPECT_EQ(heads_per_layer(m), (std::map<int, int>{{0, 16}, {1, 16}, {2, 16}, {3, 16}}));
  for (int l = 0; l < 4; ++l) EXPECT_EQ(c.layers()[l].heads, 16);

  qgpu::qwen::Model model(c.take_checkpoint(), qgpu::qwen::Exec::Sparse);
  const auto tokens = b.traffic(scaled(60'000), 22);
  qgpu::qwen::State state;
  Comparison r = compare(b.p, c, model, tokens, b.regs, false, 1e-3f, &state);

  Words ref(8192);
  int64_t reads = 0;
  for (size_t i = 0; i < tokens.size(); ++i) {
    const int t = tokens[i];
    if (t >= b.w0 && t < b.r0) ref[b.row[t]] = b.pay[tokens[i - 2]] | b.pay[tokens[i - 1]] << 16;
    std::vector<int> slots(b.p.values().size(), kUndefined);
    for (size_t k = 0; k < b.regs.size(); ++k) slots[b.regs[k]] = r.expected[i][k];
    ASSERT_EQ(word_of(slots, b.regs), ref[b.row[t]]) << "token " << i;   // never written: undefined
    reads += ref[b.row[t]].has_value();
  }
  for (size_t k = 0; k < b.regs.size(); ++k) {
    EXPECT_EQ(r.mismatched[k], 0) << "nibble " << k;
    EXPECT_EQ(r.compared[k], reads);
  }
  EXPECT_GE(reads, static_cast<int64_t>(tokens.size() / 3));
  std::cout << tokens.size() << " tokens, " << reads << " reads of written registers\n";
  EXPECT_EQ(read_back(c, model, state, "regs"), ref);
}

}  // namespace
}  // namespace circuit_test
