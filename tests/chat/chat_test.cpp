// The GPU circuit merged with a generated base (trained-like embedding
// statistics): text left intact, and chat whose numbers come from kernels run
// on the GPU inside the merged model (normal and advanced mode).
#include "build_paths.h"   // qgpu_paths() in CMakeLists.txt

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "model_host/chat/chat.h"
#include "model_host/chat/merge.h"
#include "model_host/chat/text_kl.h"
#include "model_host/backends/model.h"
#include "model_host/model_cache/build_model.h"
#include "model_host/tokens/vocab.h"

namespace {

using namespace qgpu;
namespace fs = std::filesystem;

constexpr int64_t kBaseVocab = 512;

// Built once for the whole binary: the base, the merged model, the tokenizer.
struct World {
  chat::BaseModel base;
  std::shared_ptr<const qwen::Model> base_model, merged;
  gpu::Layout layout;
  chat::MergeReport report;
  qwen::Tokenizer tok;
  std::string merged_tokenizer_path;  // the byte tokenizer with the merge's circuit token names

  static World& get() {
    static World w = make();
    return w;
  }
  static World make() {
    World w;
    chat::BaseSpec spec;
    spec.layers = 2;  // a linear-attention and a full-attention layer of Qwen3.5-2B's sizes,
    spec.full_attention_every = 2;
    spec.density = 0.02;  // thinned: every token of a chat or a launch runs through them
    spec.vocab = kBaseVocab;
    w.base = chat::trained_like_base(spec);
    gpu::LoadedModel circuit = gpu::load_model(QGPU_CHAT_CIRCUIT, qwen::Storage::Sparse);
    chat::Merged m = chat::merge(w.base, std::move(circuit.checkpoint), std::move(circuit.layout));
    w.report = m.report;
    w.layout = *m.layout;
    w.merged = std::make_shared<const qwen::Model>(m.model.text, qwen::Exec::Sparse);
    w.base_model = std::make_shared<const qwen::Model>(w.base.text, qwen::Exec::Sparse);
    const fs::path tj = fs::temp_directory_path() / ("qgpu_chat_test_tokenizer_" + std::to_string(::getpid()) + ".json");
    chat::write_byte_tokenizer(tj.string());
    w.tok = qwen::Tokenizer::load(tj.string());
    w.merged_tokenizer_path = (fs::temp_directory_path() / ("qgpu_chat_test_merged_tokenizer_" + std::to_string(::getpid()) + ".json")).string();
    {
      std::ifstream in(tj);
      std::ofstream(w.merged_tokenizer_path) << chat::merged_tokenizer(m, nlohmann::json::parse(in)).dump();
    }
    fs::remove(tj);
    return w;
  }
  // The inner GPU on the merged model; `check` runs the reference
  // interpreter beside it and fails a launch at the first token that differs.
  std::shared_ptr<chat::InnerGpu> gpu(bool check = true) const {
    backends::ModelOptions o;
    o.check = check;
    return std::make_shared<chat::InnerGpu>(std::shared_ptr<launch::Backend>(backends::make_model_backend(merged, layout, o)));
  }
};

// Short prompts: with a byte-level tokenizer every byte is a token, and every
// token runs through the base's dense layer.
chat::ChatOptions brief(chat::Mode mode) {
  chat::ChatOptions o;
  o.mode = mode;
  o.system_prompt = "Be brief.";
  return o;
}

// The merged model's logits on base ids are the base's, bit for bit.
void expect_text_intact(const std::vector<int64_t>& tokens) {
  World& w = World::get();
  chat::KlResult kl = chat::compare_logits(chat::sequence_logits(*w.base_model, {tokens}),
                                           chat::sequence_logits(*w.merged, {tokens}));
  std::cout << kl.text();
  EXPECT_TRUE(kl.identical);
  EXPECT_EQ(kl.kl_max, 0.0);
}

TEST(TextIntact, TrainedLikeBaseKlIsZero) {
  World& w = World::get();
  std::cout << w.report.text();
  EXPECT_LE(w.report.worst_bound, -chat::kMuteLevel);
  EXPECT_GT(w.report.min_projection, 0);
  const auto seqs = chat::random_text(2, 32, kBaseVocab, 11);
  chat::KlResult kl = chat::compare_logits(chat::sequence_logits(*w.base_model, seqs), chat::sequence_logits(*w.merged, seqs));
  std::cout << kl.text();
  EXPECT_TRUE(kl.identical);
  EXPECT_EQ(kl.kl_mean, 0.0);
  EXPECT_LE(kl.kl_max, 1e-6);
  // The ids past the base's (reserved rows and circuit tokens) take next to nothing
  // (this thinned base's final states leave the sink out: its logits are spread enough).
  EXPECT_LE(kl.circuit_mass_max, 1e-6);
  EXPECT_LE(kl.kl_full_max, 1e-6);
}

TEST(ChatNormal, ExpressionInAScriptedReplyRunsAKernelOnTheModel) {
  World& w = World::get();
  chat::ChatSession s(w.merged, w.tok, w.gpu(), brief(chat::Mode::Normal));
  chat::ScriptedSource src(w.tok, {"[1, 2, 3] @ [4, 5, 6] =. Done.", "You are welcome."});
  std::string streamed;
  chat::Reply r = s.ask("Dot [1, 2, 3] and [4, 5, 6]?", src,
                        [&](const std::string& t) { streamed += t; });
  EXPECT_EQ(r.text, "[1, 2, 3] @ [4, 5, 6] = 32. Done.");
  EXPECT_EQ(streamed, r.text);
  ASSERT_EQ(r.kernel_runs, 1);
  ASSERT_TRUE(r.runs[0].ok) << r.runs[0].error;
  EXPECT_GT(r.runs[0].stats.generated_tokens, 0u);  // written by the model, checked token by token
  std::cout << "kernel run: " << r.runs[0].stats.prompt_tokens << " prompt + " << r.runs[0].stats.generated_tokens
            << " generated tokens in " << r.runs[0].stats.seconds << " s; conversation " << s.tokens().size()
            << " tokens\n";
  EXPECT_EQ(r.stop, "end");
  chat::Reply r2 = s.ask("Thanks.", src);
  EXPECT_EQ(r2.text, "You are welcome.");
  EXPECT_EQ(r2.kernel_runs, 0);
  // The conversation around the kernel runs is text only, and the merged
  // model reads it exactly as the base does: the runs left no trace in it.
  for (int64_t id : s.tokens()) EXPECT_LT(id, kBaseVocab);
  expect_text_intact(s.tokens());
}

// A backend that runs the launch on the model and then corrupts global
// memory (every word + 1): the harness must score the item as failed.
class WrongResults : public launch::Backend {
 public:
  explicit WrongResults(std::shared_ptr<launch::Backend> inner) : inner_(std::move(inner)) {}
  std::string name() const override { return "wrong-results"; }
  launch::DeviceSpec device() const override { return inner_->device(); }
  launch::LaunchResult launch(const launch::LaunchRequest& req, launch::GlobalMemory& mem) override {
    launch::LaunchResult r = inner_->launch(req, mem);
    for (size_t i = 0; i + 4 <= mem.bytes.size(); i += 4) {
      int32_t v;
      std::memcpy(&v, mem.bytes.data() + i, 4);
      ++v;
      std::memcpy(mem.bytes.data() + i, &v, 4);
    }
    return r;
  }

 private:
  std::shared_ptr<launch::Backend> inner_;
};

TEST(ChatNormal, AWrongKernelResultFailsTheItem) {
  World& w = World::get();
  backends::ModelOptions o;
  auto real = std::shared_ptr<launch::Backend>(backends::make_model_backend(w.merged, w.layout, o));
  const std::string question = "What is 12 times 34?", reference = "Let me compute it: 12 * 34 =. So 408 it is.";
  for (bool wrong : {false, true}) {
    auto gpu = std::make_shared<chat::InnerGpu>(wrong ? std::make_shared<WrongResults>(real) : real);
    chat::ChatSession s(w.merged, w.tok, gpu, brief(chat::Mode::Normal));
    chat::ScriptedSource src(w.tok, {reference});
    chat::Reply r = s.ask(question, src);
    ASSERT_EQ(r.kernel_runs, 1);
    EXPECT_EQ(r.text, wrong ? "Let me compute it: 12 * 34 = 409. So 408 it is." : "Let me compute it: 12 * 34 = 408. So 408 it is.");
    // The reply holds 408 either way (the script wrote it); only the kernel's result counts.
    EXPECT_TRUE(chat::contains_answer(r.text, "408"));
    EXPECT_EQ(chat::normal_item_passes(r, "408"), !wrong);
  }
}

// A kernel's trace as the merged model wrote it, decoded by qgpu's tokenizer
// from the merged tokenizer.json: every circuit id is its readable name.
TEST(ChatNormal, KernelTraceDecodesToReadableNames) {
  World& w = World::get();
  const qwen::Tokenizer tok = qwen::Tokenizer::load(w.merged_tokenizer_path);
  EXPECT_EQ(tok.text_vocab_size(), 259);  // the byte tokenizer's ids; the circuit's are not text
  EXPECT_EQ(tok.vocab_size(), gpu::kTokenBase + gpu::circuit_token_count());
  const fs::path dump = fs::temp_directory_path() / ("qgpu_chat_test_dump_" + std::to_string(::getpid()));
  backends::ModelOptions o;
  o.dump_tokens = dump.string();
  chat::InnerGpu inner(std::shared_ptr<launch::Backend>(backends::make_model_backend(w.merged, w.layout, o)));
  chat::KernelResult r = inner.evaluate(*chat::parse_expression("sum([3, 4])"));
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.values.at(0), 7);
  // One line per sequence piece: the write records of the copies ("ids | ")
  // and then the launch ("prompt | generated").
  std::vector<int64_t> generated;
  {
    std::ifstream lines(dump);
    for (std::string line; std::getline(lines, line);) {
      std::vector<int64_t> ids;
      std::istringstream in(line.substr(line.find('|') + 1));
      for (int64_t id; in >> id;) ids.push_back(id);
      if (!ids.empty()) generated = ids;
    }
  }
  fs::remove(dump);
  ASSERT_FALSE(generated.empty());
  std::string names;
  for (int64_t id : generated) names += "<|qgpu:" + gpu::token_name(id) + "|>";
  const std::string decoded = tok.decode(generated);
  EXPECT_EQ(decoded, names);
  EXPECT_NE(decoded.find("<|qgpu:EXEC("), std::string::npos) << decoded.substr(0, 200);
  const std::string end = "<|qgpu:END|>";
  EXPECT_EQ(decoded.compare(decoded.size() - end.size(), end.size(), end), 0) << "the trace ends with END";
  EXPECT_EQ(tok.encode(decoded), generated);  // and back: each name is its added token
  std::cout << "trace of sum([3, 4]): " << generated.size() << " tokens: " << decoded.substr(0, 300) << "...\n";
}

TEST(ChatNormal, ElementwiseExpression) {
  World& w = World::get();
  chat::ChatSession s(w.merged, w.tok, w.gpu(false), brief(chat::Mode::Normal));
  chat::ScriptedSource src(w.tok, {"[10, 20] - [3, 8] = ok"});
  chat::Reply r = s.ask("Two?", src);
  EXPECT_EQ(r.text, "[10, 20] - [3, 8] = [7, 12] ok");
  EXPECT_EQ(r.kernel_runs, 1);
}

TEST(ChatAdvanced, KernelInAReplyIsCompiledAndRun) {
  World& w = World::get();
  chat::ChatSession s(w.merged, w.tok, w.gpu(), brief(chat::Mode::Advanced));
  chat::ScriptedSource src(
      w.tok, {"```cuda\n// threads: 4\nextern \"C\" __global__ void kernel(int* out) {\n"
              "  int i = threadIdx.x;\n  out[i] = 10 * i + 1;\n}\n```\nDone."});
  chat::Reply r = s.ask("Kernel?", src);
  ASSERT_EQ(r.kernel_runs, 1);
  ASSERT_TRUE(r.runs[0].ok) << r.runs[0].error;
  EXPECT_GT(r.runs[0].stats.generated_tokens, 0u);
  EXPECT_NE(r.text.find("```output\nout = [1, 11, 21, 31, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]\n```\n"), std::string::npos)
      << r.text;
  EXPECT_NE(r.text.find("Done."), std::string::npos);
}

TEST(ChatAdvanced, CompilerErrorsAreFedBack) {
  World& w = World::get();
  chat::ChatSession s(w.merged, w.tok, w.gpu(false), brief(chat::Mode::Advanced));
  chat::ScriptedSource src(w.tok, {"```cuda\nextern \"C\" __global__ void kernel(int* out) {\n  out[0] = undefined_name;\n}\n```\n"
                                   "Fix."});
  chat::Reply r = s.ask("Kernel?", src);
  ASSERT_EQ(r.kernel_runs, 1);
  EXPECT_FALSE(r.runs[0].ok);
  EXPECT_NE(r.text.find("```error\n"), std::string::npos) << r.text;
  EXPECT_NE(r.text.find("undefined_name"), std::string::npos) << r.text;
  EXPECT_NE(r.text.find("Fix."), std::string::npos);
}

}  // namespace
