// Qwen's tokenizer.json: byte-level BPE behind the Qwen2 pre-tokenizer
// pattern, with added (special) tokens and the ChatML chat format.
//
// Supported tokenizer.json: model.type "BPE" (vocab, merges as "a b" strings
// or [a, b] pairs, ignore_merges), pre_tokenizer = Split on the Qwen2 pattern
//   (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
// (or its variant with \p{M} beside \p{L}) followed by ByteLevel, or ByteLevel
// alone.  Text is taken as given: the NFC normalizer is not applied, so input
// should already be NFC (as almost all text is).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace qgpu::qwen {

class Tokenizer {
 public:
  // Throws std::runtime_error naming the file and what is not supported.
  static Tokenizer load(const std::string& tokenizer_json_path);

  // Added tokens found in `text` become their ids (when allow_special), the
  // rest is pre-tokenized and BPE-encoded.
  std::vector<int64_t> encode(std::string_view text, bool allow_special = true) const;
  // Inverse of encode for any ids (byte-level tokens are joined into UTF-8).
  std::string decode(const std::vector<int64_t>& ids) const;
  // The pre-tokenizer's pieces of `text` (UTF-8), before byte mapping.
  std::vector<std::string> pre_tokenize(std::string_view text) const;

  std::optional<int64_t> token_id(std::string_view token) const;  // vocabulary or added token
  int64_t vocab_size() const;  // one past the largest id

  struct Message {
    std::string role, content;
  };
  // ChatML: "<|im_start|>{role}\n{content}<|im_end|>\n" per message, then
  // "<|im_start|>assistant\n" when add_generation_prompt.
  static std::string chat_template(const std::vector<Message>& messages, bool add_generation_prompt = true);

 private:
  std::unordered_map<std::string, int64_t> vocab_;       // byte-level token -> id
  std::unordered_map<int64_t, std::string> id_to_token_; // id -> byte-level token or added content
  std::unordered_map<std::string, int> merge_rank_;      // "a b" -> rank
  std::map<std::string, int64_t> added_;                 // added token content -> id
  std::vector<int64_t> added_ids_;
  bool letters_include_marks_ = false;
  bool split_ = true;                                     // pre-tokenizer pattern present
  bool ignore_merges_ = false;

  void bpe(const std::string& piece, std::vector<int64_t>& out) const;
};

}  // namespace qgpu::qwen
