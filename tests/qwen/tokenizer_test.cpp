// Tokenizer: a tiny BPE trained by make_tokenizer.py in Qwen's tokenizer.json
// format; pieces and ids are checked against that script's independent
// encoder (Python's regex engine on the same pattern), plus hand-derived splits.
#include "build_paths.h"   // qgpu_paths() in CMakeLists.txt

#include "harness.h"
#include "model_host/qwen/tokenizer.h"

#include <nlohmann/json.hpp>

using namespace qgpu::qwen;
using namespace qwen_test;

namespace {

class QwenTokenizer : public testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new Scratch("tokenizer");
    python(QWEN_TOKENIZER_PY, dir_->path());
  }
  static void TearDownTestSuite() { delete dir_; }
  static Scratch* dir_;
};
Scratch* QwenTokenizer::dir_ = nullptr;

}  // namespace

TEST_F(QwenTokenizer, MatchesIndependentEncoder) {
  Tokenizer tok = Tokenizer::load(*dir_ / "tokenizer.json");
  std::ifstream in(*dir_ / "cases.json");
  auto cases = nlohmann::json::parse(in);
  ASSERT_GE(cases.size(), 10u);
  for (const auto& c : cases) {
    const auto text = c["text"].get<std::string>();
    SCOPED_TRACE(text);
    // The Python pieces split the special tokens as plain text; compare where there are none.
    // Text is NFC-normalized (the tokenizer.json's normalizer) before it is split.
    const auto normal = c["nfc"].get<std::string>();
    if (text.find("<|") == std::string::npos) EXPECT_EQ(tok.pre_tokenize(normal), c["pieces"].get<std::vector<std::string>>());
    EXPECT_EQ(tok.encode(text), c["ids"].get<std::vector<int64_t>>());
    EXPECT_EQ(tok.decode(tok.encode(text)), normal);
    EXPECT_EQ(tok.decode(tok.encode(text, false)), normal);
  }
}

TEST_F(QwenTokenizer, KnownSplits) {
  Tokenizer tok = Tokenizer::load(*dir_ / "tokenizer.json");
  using V = std::vector<std::string>;
  EXPECT_EQ(tok.pre_tokenize("Hello world's 123!!\n\n  x"),
            (V{"Hello", " world", "'s", " ", "1", "2", "3", "!!\n\n", " ", " x"}));
  EXPECT_EQ(tok.pre_tokenize("a  \n\tb "), (V{"a", "  \n", "\tb", " "}));
  EXPECT_EQ(tok.pre_tokenize("I'M ok'd"), (V{"I", "'M", " ok", "'d"}));
  EXPECT_EQ(tok.pre_tokenize(""), V{});
}

TEST_F(QwenTokenizer, SpecialTokensAndChatTemplate) {
  Tokenizer tok = Tokenizer::load(*dir_ / "tokenizer.json");
  const int64_t start = *tok.token_id("<|im_start|>"), end = *tok.token_id("<|im_end|>");
  EXPECT_EQ(tok.vocab_size(), *tok.token_id("<|im_end|>") + 1);
  const std::string prompt = Tokenizer::chat_template({{"system", "Be brief."}, {"user", "2+2?"}});
  EXPECT_EQ(prompt, "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\n2+2?<|im_end|>\n<|im_start|>assistant\n");
  auto ids = tok.encode(prompt);
  EXPECT_EQ(std::count(ids.begin(), ids.end(), start), 3);
  EXPECT_EQ(std::count(ids.begin(), ids.end(), end), 2);
  EXPECT_EQ(ids.front(), start);
  EXPECT_EQ(tok.decode(ids), prompt);
  // Without special-token parsing the markers are ordinary text.
  auto plain = tok.encode(prompt, false);
  EXPECT_EQ(std::count(plain.begin(), plain.end(), start), 0);
  EXPECT_THROW(tok.decode({tok.vocab_size()}), std::out_of_range);
}

TEST_F(QwenTokenizer, RejectsUnsupportedFiles) {
  auto j = nlohmann::json::parse(std::ifstream(*dir_ / "tokenizer.json"));
  j["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] = "\\w+";
  std::ofstream(*dir_ / "bad.json") << j.dump();
  EXPECT_THROW(Tokenizer::load(*dir_ / "bad.json"), std::runtime_error);
  EXPECT_THROW(Tokenizer::load(*dir_ / "missing.json"), std::runtime_error);
}
