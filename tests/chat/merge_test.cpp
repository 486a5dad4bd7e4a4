// qgpu merge on generated checkpoints of both layouts (text-only and
// vision-language), with a small compiled circuit: the files, the weights
// carried over unchanged, text logits bit-identical to the base's, and the
// circuit still deciding its own tokens through the base layers behind it.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>

#include <nlohmann/json.hpp>

#include "model_host/chat/chat.h"
#include "model_host/chat/merge.h"
#include "model_host/chat/streamed.h"
#include "model_host/chat/text_kl.h"
#include "model_host/circuit/compiler.h"
#include "model_host/circuit/words.h"

namespace {

using namespace qgpu;
namespace fs = std::filesystem;

constexpr int64_t kBaseVocab = 512;

// Token t(i) predicts t((i + 5) mod 16): one MLP op and the output head.
qwen::Checkpoint successor_circuit() {
  circuit::Program p;
  circuit::ValueId x = p.field("x", 16);
  for (int i = 0; i < 16; ++i) p.token("t" + std::to_string(i), {{x, i}});
  circuit::ValueId y = circuit::apply(p, "succ", 16, x, [](int v) { return (v + 5) % 16; });
  p.output({{x, y}});
  circuit::Options o;
  o.token_base = kBaseVocab;
  return circuit::compile(p, o).take_checkpoint();
}

// Every tensor of a checkpoint directory as stored: HF name -> (dtype, bytes).
std::map<std::string, std::pair<std::string, std::string>> raw_tensors(const fs::path& dir) {
  std::map<std::string, std::pair<std::string, std::string>> out;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.path().extension() != ".safetensors") continue;
    std::ifstream in(e.path(), std::ios::binary);
    uint64_t n = 0;
    in.read(reinterpret_cast<char*>(&n), 8);
    std::string header(n, '\0');
    in.read(header.data(), static_cast<std::streamsize>(n));
    const nlohmann::json h = nlohmann::json::parse(header);
    for (const auto& [name, v] : h.items()) {
      if (name == "__metadata__") continue;
      const auto off = v.at("data_offsets").get<std::vector<uint64_t>>();
      std::string bytes(off[1] - off[0], '\0');
      in.seekg(static_cast<std::streamoff>(8 + n + off[0]));
      in.read(bytes.data(), static_cast<std::streamsize>(bytes.size()));
      out[name] = {v.at("dtype").get<std::string>(), std::move(bytes)};
    }
  }
  return out;
}

fs::path scratch(const std::string& name) {
  fs::path d = fs::temp_directory_path() / ("qgpu_merge_test_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

void check_layout(bool vision_language) {
  chat::BaseSpec spec;
  spec.layers = 2;
  spec.full_attention_every = 2;  // one linear-attention and one full-attention layer
  spec.vocab = kBaseVocab;
  spec.vision_language = vision_language;
  chat::BaseModel base = chat::trained_like_base(spec);
  // Unused ids of a released vocabulary may be all-zero rows: safe as they are.
  base.text.tensors["embed_tokens.weight"].narrow(0, kBaseVocab - 12, 12).zero_();
  const fs::path dir = scratch(vision_language ? "vl" : "text");
  const fs::path base_dir = dir / "base", out_dir = dir / "merged";
  base.save(base_dir.string());
  chat::write_byte_tokenizer((base_dir / "tokenizer.json").string());
  { std::ofstream(base_dir / "tokenizer_config.json") << "{\"model_max_length\": 4096}"; }

  chat::BaseModel loaded = chat::BaseModel::load(base_dir.string());
  EXPECT_EQ(loaded.vision_language, vision_language);
  EXPECT_EQ(loaded.dtype, torch::kBFloat16);
  EXPECT_EQ(loaded.extra.size(), vision_language ? 4u : 0u);
  qwen::Checkpoint circ = successor_circuit();
  const int C = static_cast<int>(circ.config.num_hidden_layers);
  const int64_t V = circ.config.vocab_size;
  chat::MergeOptions mo;
  mo.token_base = kBaseVocab;
  chat::Merged m = chat::merge(loaded, std::move(circ), std::nullopt, mo);
  std::cout << m.report.text();
  chat::save_merged(m, out_dir.string(), base_dir.string());

  // Files: config in the base's layout, tokenizer files carried over.
  EXPECT_TRUE(fs::exists(out_dir / "tokenizer.json"));
  EXPECT_TRUE(fs::exists(out_dir / "tokenizer_config.json"));
  nlohmann::json cfg = nlohmann::json::parse(std::ifstream(out_dir / "config.json"));
  const nlohmann::json& text = vision_language ? cfg.at("text_config") : cfg;
  EXPECT_EQ(vision_language, cfg.contains("vision_config"));
  EXPECT_EQ(text.at("num_hidden_layers").get<int>(), C + 1 + 2);
  EXPECT_EQ(text.at("vocab_size").get<int64_t>(), V);
  auto types = text.at("layer_types").get<std::vector<std::string>>();
  ASSERT_EQ(types.size(), size_t(C + 3));
  for (int l = 0; l <= C; ++l) EXPECT_EQ(types[l], "linear_attention");
  EXPECT_EQ(types[C + 1], "linear_attention");
  EXPECT_EQ(types[C + 2], "full_attention");
  nlohmann::json index = nlohmann::json::parse(std::ifstream(out_dir / "model.safetensors.index.json"));
  const std::string prefix = vision_language ? "model.language_model." : "model.";
  EXPECT_TRUE(index["weight_map"].contains(prefix + "layers.0.mlp.gate_proj.weight"));
  EXPECT_TRUE(index["weight_map"].contains(prefix + "layers." + std::to_string(C + 2) + ".self_attn.q_proj.weight"));
  if (vision_language) EXPECT_TRUE(index["weight_map"].contains("model.visual.patch_embed.proj.weight"));

  // Every base weight unchanged (the embedding's base rows included), extras untouched.
  chat::BaseModel merged = chat::BaseModel::load(out_dir.string());
  EXPECT_EQ(merged.vision_language, vision_language);
  for (const auto& [name, t] : base.text.tensors) {
    std::string mname = name;
    if (name.rfind("layers.", 0) == 0) {
      const size_t dot = name.find('.', 7);
      mname = "layers." + std::to_string(std::stoi(name.substr(7, dot - 7)) + C + 1) + name.substr(dot);
    }
    torch::Tensor got = merged.text.tensors.at(mname);
    if (name == "embed_tokens.weight") got = got.narrow(0, 0, kBaseVocab);
    EXPECT_TRUE(torch::equal(got, t)) << name;
  }
  for (const auto& [name, t] : base.extra) EXPECT_TRUE(torch::equal(merged.extra.at(name), t)) << name;

  // Byte for byte: every tensor of the base's files is in the merged files
  // with the same dtype and the same bytes (the embedding's base rows are the
  // first bytes of the merged embedding); the base mixes F32 and BF16.
  const auto base_raw = raw_tensors(base_dir), merged_raw = raw_tensors(out_dir);
  std::set<std::string> dtypes;
  for (const auto& [name, stored] : base_raw) {
    dtypes.insert(stored.first);
    std::string mname = name;
    const size_t at = name.find("layers.");
    if (at != std::string::npos) {
      const size_t dot = name.find('.', at + 7);
      mname = name.substr(0, at) + "layers." + std::to_string(std::stoi(name.substr(at + 7, dot - at - 7)) + C + 1) +
              name.substr(dot);
    }
    ASSERT_TRUE(merged_raw.count(mname)) << name;
    const auto& [dtype, bytes] = merged_raw.at(mname);
    EXPECT_EQ(dtype, stored.first) << name;
    if (name.find("embed_tokens.weight") != std::string::npos)
      EXPECT_TRUE(bytes.compare(0, stored.second.size(), stored.second) == 0) << name;
    else
      EXPECT_TRUE(bytes == stored.second) << name;
  }
  EXPECT_EQ(dtypes, (std::set<std::string>{"BF16", "F32"}));

  // Text: the merged model's logits on base ids equal the base's bit for bit.
  qwen::Model bm(base.text, qwen::Exec::Sparse);
  qwen::Model mm(merged.text, qwen::Exec::Sparse);
  const auto seqs = chat::random_text(2, 24, kBaseVocab, 3);
  chat::KlResult kl = chat::compare_logits(chat::sequence_logits(bm, seqs), chat::sequence_logits(mm, seqs));
  std::cout << kl.text();
  EXPECT_TRUE(kl.identical);
  EXPECT_EQ(kl.kl_mean, 0.0);

  // One layer at a time from the files (what fits at the full vocabulary):
  // the merged model's logits, every row of the head, are the whole model's
  // bit for bit, and so are the base's; compare_streamed's figures agree.
  {
    const chat::CheckpointFiles bf(base_dir.string()), mf(out_dir.string());
    const std::vector<torch::Tensor> whole_m = chat::sequence_logits(mm, seqs), whole_b = chat::sequence_logits(bm, seqs);
    const torch::Tensor hm = torch::cat(chat::streamed_final_states(mf, seqs));
    const torch::Tensor hb = torch::cat(chat::streamed_final_states(bf, seqs));
    std::vector<torch::Tensor> blocks;
    for (int64_t r = 0; r < V; r += 100) blocks.push_back(chat::streamed_head_logits(mf, hm, r, std::min<int64_t>(100, V - r)));
    EXPECT_TRUE(torch::equal(torch::cat(blocks, 1), torch::cat(whole_m))) << "merged";
    EXPECT_TRUE(torch::equal(chat::streamed_head_logits(bf, hb, 0, kBaseVocab), torch::cat(whole_b))) << "base";
    const chat::KlResult s = chat::compare_streamed(bf, mf, seqs, 100);
    EXPECT_TRUE(s.identical);
    EXPECT_EQ(s.max_logit_diff, 0.0);
    EXPECT_EQ(s.kl_max, 0.0);
    EXPECT_EQ(s.positions, kl.positions);
    EXPECT_NEAR(s.circuit_mass_max, kl.circuit_mass_max, 1e-9 * kl.circuit_mass_max + 1e-300);
    EXPECT_NEAR(s.circuit_mass_mean, kl.circuit_mass_mean, 1e-9 * kl.circuit_mass_mean + 1e-300);
    EXPECT_NEAR(s.base.entropy_mean, kl.base.entropy_mean, 1e-12);
    // Two models whose logits differ (another seed): the streamed KL is the
    // one compare_logits computes from the whole logits.
    chat::BaseSpec other = spec;
    other.seed = 2;
    chat::BaseModel b2 = chat::trained_like_base(other);
    b2.save((dir / "base2").string());
    qwen::Model bm2(b2.text, qwen::Exec::Sparse);
    const chat::KlResult want = chat::compare_logits(whole_b, chat::sequence_logits(bm2, seqs));
    const chat::KlResult got = chat::compare_streamed(bf, chat::CheckpointFiles((dir / "base2").string()), seqs, 100);
    EXPECT_FALSE(got.identical);
    EXPECT_GT(want.kl_mean, 0.01);
    EXPECT_NEAR(got.kl_mean, want.kl_mean, 1e-9 * want.kl_mean);
    EXPECT_NEAR(got.kl_max, want.kl_max, 1e-9 * want.kl_max);
    EXPECT_EQ(got.max_logit_diff, want.max_logit_diff);
  }

  // The merge written for the disk only (MergeOptions::vocab_tails: the
  // vocabulary matrices as the base's rows plus a sparse tail, never formed
  // whole) writes the same bytes.
  {
    chat::MergeOptions to = mo;
    to.vocab_tails = true;
    chat::Merged t = chat::merge(loaded, successor_circuit(), std::nullopt, to);
    EXPECT_FALSE(t.model.tails.empty());
    const fs::path tails_dir = dir / "merged_tails";
    chat::save_merged(t, tails_dir.string(), base_dir.string());
    EXPECT_TRUE(raw_tensors(tails_dir) == merged_raw);
  }

  // The circuit through the base layers: after text, each circuit token
  // t(i) makes the merged model predict t(i + 5), and the text after them
  // still predicts as the base (a fresh sequence of text only).
  qwen::State st = mm.new_state();
  mm.forward(st, {5, 77, 300});
  for (int i = 0; i < 16; ++i) {
    torch::Tensor logits = mm.step(st, kBaseVocab + i);
    EXPECT_EQ(logits.argmax().item<int64_t>(), kBaseVocab + (i + 5) % 16) << "token t" << i;
  }
  fs::remove_all(dir);
}

TEST(Merge, TextOnlyLayout) { check_layout(false); }
TEST(Merge, VisionLanguageLayout) { check_layout(true); }

// The sink on a deeper base (docs/merge.md section 4): four dense layers,
// one of them full attention, whose final states vary more than one layer's.
// The merge must find a sink (the ids past the base's are otherwise near 0
// against a log-partition of a few nats and take most of the mass), and on
// text other than its calibration's those ids must take at most 1e-6 at
// every position, with the base's logits bit-identical and the circuit still
// deciding its tokens.
TEST(Merge, SinkHoldsOnAFourLayerBase) {
  chat::BaseSpec spec;
  spec.layers = 4;
  spec.vocab = kBaseVocab;
  const chat::BaseModel base = chat::trained_like_base(spec);
  chat::MergeOptions mo;
  mo.token_base = kBaseVocab;
  chat::Merged m = chat::merge(base, successor_circuit(), std::nullopt, mo);
  std::cout << m.report.text();
  ASSERT_GT(m.report.sink_dims, 0) << "no sink on a 4-layer base";
  EXPECT_GT(m.report.sink_min_projection, 0);
  const auto seqs = chat::random_text(4, 64, kBaseVocab, 7);  // calibration uses seed 3
  qwen::Model bm(base.text, qwen::Exec::Sparse), mm(m.model.text, qwen::Exec::Sparse);
  const chat::KlResult kl = chat::compare_logits(chat::sequence_logits(bm, seqs), chat::sequence_logits(mm, seqs));
  std::cout << kl.text();
  EXPECT_TRUE(kl.identical);
  EXPECT_EQ(kl.positions, 256);
  EXPECT_LE(kl.circuit_mass_max, 1e-6);
  qwen::State st = mm.new_state();
  mm.forward(st, {5, 77, 300});
  for (int i = 0; i < 16; ++i)
    EXPECT_EQ(mm.step(st, kBaseVocab + i).argmax().item<int64_t>(), kBaseVocab + (i + 5) % 16) << "token t" << i;
}

TEST(Merge, RefusesMismatchedSizes) {
  chat::BaseSpec spec;
  spec.layers = 1;
  spec.vocab = 1024;  // reaches past the circuit's token base
  chat::BaseModel base = chat::trained_like_base(spec);
  chat::MergeOptions mo;
  mo.token_base = kBaseVocab;
  EXPECT_THROW(chat::merge(base, successor_circuit(), std::nullopt, mo), std::invalid_argument);
}

TEST(Chat, ScoringCountsOnlyTheKernelsResult) {
  chat::Reply r;
  r.text = "The answer is 32.";  // the model's own text: not a kernel's result
  EXPECT_FALSE(chat::normal_item_passes(r, "32"));
  r.kernel_runs = 1;
  r.runs.push_back({});
  r.runs[0].ok = true;
  r.results.push_back("33");
  r.text = "[1, 2, 3] @ [4, 5, 6] = 33, or 32.";
  EXPECT_FALSE(chat::normal_item_passes(r, "32"));
  r.results[0] = "32";
  EXPECT_TRUE(chat::normal_item_passes(r, "32"));
  r.runs[0].ok = false;
  EXPECT_FALSE(chat::normal_item_passes(r, "32"));
  EXPECT_TRUE(chat::contains_answer("x = -16.", "-16"));
  EXPECT_FALSE(chat::contains_answer("x = 160", "16"));
  EXPECT_FALSE(chat::contains_answer("x = -16", "16"));
}

// No fixture question or reference reply holds its own answer: a reply that
// echoes the question cannot pass by it, and the answer must be computed.
TEST(Chat, FixtureAnswersAreNotInTheirQuestions) {
  std::ifstream in(QGPU_CHAT_FIXTURE);
  ASSERT_TRUE(in) << QGPU_CHAT_FIXTURE;
  const auto fx = nlohmann::json::parse(in);
  ASSERT_GE(fx.at("normal").size(), 20u);
  for (const auto& it : fx.at("normal")) {
    const std::string a = it.at("answer");
    EXPECT_FALSE(chat::contains_answer(it.at("question").get<std::string>(), a)) << it.at("question");
    EXPECT_FALSE(chat::contains_answer(it.at("reference").get<std::string>(), a)) << it.at("reference");
    // The reference's expression computes the answer (an independent oracle: plain C++ arithmetic).
    const std::string ref = it.at("reference");
    auto e = chat::expression_before_equals(ref.substr(0, ref.find(" =") + 2));
    ASSERT_TRUE(e) << ref;
    std::vector<int32_t> v;
    using K = chat::Expression::Kind;
    int64_t acc = 0;
    switch (e->kind) {
      case K::Dot: for (size_t i = 0; i < e->a.size(); ++i) acc += int64_t(e->a[i]) * e->b[i]; v = {int32_t(acc)}; break;
      case K::Sum: for (int32_t x : e->a) acc += x; v = {int32_t(acc)}; break;
      case K::Max: v = {*std::max_element(e->a.begin(), e->a.end())}; break;
      case K::Min: v = {*std::min_element(e->a.begin(), e->a.end())}; break;
      case K::Add: for (size_t i = 0; i < e->a.size(); ++i) v.push_back(e->a[i] + e->b[i]); break;
      case K::Sub: for (size_t i = 0; i < e->a.size(); ++i) v.push_back(e->a[i] - e->b[i]); break;
      case K::Mul: for (size_t i = 0; i < e->a.size(); ++i) v.push_back(e->a[i] * e->b[i]); break;
    }
    EXPECT_EQ(chat::format_result(*e, v), a) << ref;
  }
}

TEST(Chat, ExpressionsParse) {
  using K = chat::Expression::Kind;
  auto e = chat::expression_before_equals("The dot product is [1, 2, 3] @ [4, 5, 6] =");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->kind, K::Dot);
  EXPECT_EQ(e->a, (std::vector<int32_t>{1, 2, 3}));
  EXPECT_EQ(e->b, (std::vector<int32_t>{4, 5, 6}));
  e = chat::expression_before_equals("so sum([3, -5, 7]) = ");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->kind, K::Sum);
  e = chat::expression_before_equals("we get -15 + 40 =");
  ASSERT_TRUE(e);
  EXPECT_TRUE(e->scalar);
  EXPECT_EQ(e->a, (std::vector<int32_t>{-15}));
  e = chat::expression_before_equals("[1, 2] * [3, 4] =");
  ASSERT_TRUE(e);
  EXPECT_EQ(chat::format_result(*e, {3, 8, 0}), "[3, 8]");
  EXPECT_FALSE(chat::expression_before_equals("x = "));
  EXPECT_FALSE(chat::expression_before_equals("a == "));
  EXPECT_FALSE(chat::expression_before_equals("[1, 2] @ [3] ="));
  EXPECT_FALSE(chat::expression_before_equals("[1, 2] @ [3, 4]"));
}

}  // namespace
