#include "model_host/qwen/tokenizer.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <fstream>
#include <limits>
#include <sstream>
#include <stdexcept>

namespace qgpu::qwen {
namespace {

struct CodeRange {
  char32_t first, last;
};
#include "model_host/qwen/unicode_tables.inc"

template <size_t N>
bool in_table(const CodeRange (&table)[N], char32_t c) {
  auto it = std::upper_bound(std::begin(table), std::end(table), c,
                             [](char32_t v, const CodeRange& r) { return v < r.first; });
  return it != std::begin(table) && c <= std::prev(it)->last;
}

bool is_letter(char32_t c) { return in_table(kLetters, c); }
bool is_mark(char32_t c) { return in_table(kMarks, c); }
bool is_number(char32_t c) { return in_table(kNumbers, c); }
// Unicode White_Space, which is what \s matches in the tokenizers' regex engine.
bool is_space(char32_t c) {
  return (c >= 0x09 && c <= 0x0D) || c == 0x20 || c == 0x85 || c == 0xA0 || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}
bool is_newline(char32_t c) { return c == '\r' || c == '\n'; }

// The pre-tokenizer patterns this implementation executes (see tokenizer.h).
constexpr std::string_view kQwen2Pattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr std::string_view kQwen2MarksPattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

// UTF-8 text as code points with their byte offsets.  A byte that does not
// start a valid sequence stands for itself (as U+FFFD-like "other"), so every
// byte of the input is kept.
struct Utf8 {
  std::vector<char32_t> cp;
  std::vector<size_t> offset;  // size cp.size() + 1
  explicit Utf8(std::string_view s) {
    size_t i = 0;
    while (i < s.size()) {
      const auto b = static_cast<unsigned char>(s[i]);
      size_t len = b < 0x80 ? 1 : (b >> 5) == 6 ? 2 : (b >> 4) == 14 ? 3 : (b >> 3) == 30 ? 4 : 0;
      char32_t c = len == 1 ? b : len == 2 ? (b & 0x1F) : len == 3 ? (b & 0x0F) : (b & 0x07);
      bool ok = len > 0 && i + len <= s.size();
      for (size_t k = 1; ok && k < len; ++k) {
        const auto cb = static_cast<unsigned char>(s[i + k]);
        ok = (cb & 0xC0) == 0x80;
        c = (c << 6) | (cb & 0x3F);
      }
      if (!ok) {
        len = 1;
        c = 0xFFFD;
      }
      cp.push_back(c);
      offset.push_back(i);
      i += len;
    }
    offset.push_back(s.size());
  }
};

std::string utf8(char32_t c) {
  std::string s;
  if (c < 0x80) {
    s += static_cast<char>(c);
  } else if (c < 0x800) {
    s += static_cast<char>(0xC0 | (c >> 6));
    s += static_cast<char>(0x80 | (c & 0x3F));
  } else if (c < 0x10000) {
    s += static_cast<char>(0xE0 | (c >> 12));
    s += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    s += static_cast<char>(0x80 | (c & 0x3F));
  } else {
    s += static_cast<char>(0xF0 | (c >> 18));
    s += static_cast<char>(0x80 | ((c >> 12) & 0x3F));
    s += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    s += static_cast<char>(0x80 | (c & 0x3F));
  }
  return s;
}

// ---- NFC (the tokenizer.json's normalizer; Unicode UAX #15) ----

#include "model_host/qwen/nfc_tables.inc"

constexpr char32_t kSBase = 0xAC00, kLBase = 0x1100, kVBase = 0x1161, kTBase = 0x11A7;
constexpr char32_t kLCount = 19, kVCount = 21, kTCount = 28, kNCount = kVCount * kTCount, kSCount = kLCount * kNCount;

uint8_t combining_class(char32_t c) {
  auto it = std::lower_bound(std::begin(kCombiningClass), std::end(kCombiningClass), c,
                             [](const CombiningClass& e, char32_t v) { return e.cp < v; });
  return it != std::end(kCombiningClass) && it->cp == c ? it->ccc : 0;
}

void decompose(char32_t c, std::u32string& out) {
  if (c >= kSBase && c < kSBase + kSCount) {
    const char32_t s = c - kSBase;
    out += kLBase + s / kNCount;
    out += kVBase + (s % kNCount) / kTCount;
    if (s % kTCount) out += kTBase + s % kTCount;
    return;
  }
  auto it = std::lower_bound(std::begin(kDecomposition), std::end(kDecomposition), c,
                             [](const Decomposition& e, char32_t v) { return e.cp < v; });
  if (it == std::end(kDecomposition) || it->cp != c) {
    out += c;
    return;
  }
  decompose(it->first, out);
  if (it->second) decompose(it->second, out);
}

std::optional<char32_t> compose(char32_t a, char32_t b) {
  if (a >= kLBase && a < kLBase + kLCount && b >= kVBase && b < kVBase + kVCount)
    return kSBase + ((a - kLBase) * kVCount + (b - kVBase)) * kTCount;
  if (a >= kSBase && a < kSBase + kSCount && (a - kSBase) % kTCount == 0 && b > kTBase && b < kTBase + kTCount)
    return a + (b - kTBase);
  auto it = std::lower_bound(std::begin(kComposition), std::end(kComposition), std::pair{a, b},
                             [](const Composition& e, std::pair<char32_t, char32_t> v) {
                               return e.first != v.first ? e.first < v.first : e.second < v.second;
                             });
  if (it != std::end(kComposition) && it->first == a && it->second == b) return it->cp;
  return std::nullopt;
}

// NFC of UTF-8 text; bytes that are not valid UTF-8 pass through.  Text
// without a character from U+0300 on is its own NFC.
std::string nfc(std::string_view text) {
  bool simple = true;
  for (size_t i = 0; i < text.size() && simple; ++i) {
    const auto b = static_cast<unsigned char>(text[i]);
    simple = b < 0xCC;  // lead bytes from 0xCC start U+0300 and above
  }
  if (simple) return std::string(text);
  std::string out;
  size_t i = 0;
  while (i < text.size()) {
    // A run of valid UTF-8 (up to the next invalid byte), normalized as a whole.
    std::u32string d;
    size_t j = i;
    while (j < text.size()) {
      const auto b = static_cast<unsigned char>(text[j]);
      const size_t len = b < 0x80 ? 1 : (b >> 5) == 6 ? 2 : (b >> 4) == 14 ? 3 : (b >> 3) == 30 ? 4 : 0;
      if (len == 0 || j + len > text.size()) break;
      char32_t c = len == 1 ? b : len == 2 ? (b & 0x1F) : len == 3 ? (b & 0x0F) : (b & 0x07);
      bool ok = true;
      for (size_t k = 1; k < len && ok; ++k) {
        const auto cb = static_cast<unsigned char>(text[j + k]);
        ok = (cb & 0xC0) == 0x80;
        c = (c << 6) | (cb & 0x3F);
      }
      if (!ok) break;
      decompose(c, d);
      j += len;
    }
    // Canonical order: stable sort of each run of non-starters by class.
    for (size_t k = 1; k < d.size(); ++k) {
      const uint8_t cc = combining_class(d[k]);
      if (cc == 0) continue;
      for (size_t m = k; m > 0; --m) {
        const uint8_t prev = combining_class(d[m - 1]);
        if (prev == 0 || prev <= cc) break;
        std::swap(d[m - 1], d[m]);
      }
    }
    // Canonical composition.
    std::u32string r;
    size_t starter = std::u32string::npos;
    for (char32_t c : d) {
      const uint8_t cc = combining_class(c);
      if (starter != std::u32string::npos) {
        const bool adjacent = r.size() - 1 == starter;
        const uint8_t last = adjacent ? 0 : combining_class(r.back());
        if (adjacent || (last != 0 && last < cc))
          if (auto p = compose(r[starter], c)) {
            r[starter] = *p;
            continue;
          }
      }
      if (cc == 0) starter = r.size();
      r += c;
    }
    for (char32_t c : r) out += utf8(c);
    if (j < text.size() && j == i + 0) {
      out += text[j];  // an invalid byte: as it is
      ++j;
    } else if (j < text.size()) {
      // the run ended at an invalid byte: it is handled by the next round
    }
    i = j;
  }
  return out;
}

// GPT-2's byte-level alphabet: printable Latin-1 bytes map to themselves, the
// other bytes to U+0100 onwards in byte order.
struct ByteLevel {
  std::array<std::string, 256> encode;
  std::unordered_map<char32_t, uint8_t> decode;
  ByteLevel() {
    char32_t next = 256;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
      const char32_t c = printable ? static_cast<char32_t>(b) : next++;
      encode[b] = utf8(c);
      decode[c] = static_cast<uint8_t>(b);
    }
  }
};

const ByteLevel& byte_level() {
  static const ByteLevel table;
  return table;
}

[[noreturn]] void unsupported(const std::string& path, const std::string& what) {
  throw std::runtime_error("tokenizer " + path + ": " + what);
}

}  // namespace

Tokenizer Tokenizer::load(const std::string& path) {
  std::ifstream in(path);
  if (!in) unsupported(path, "cannot open");
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(in);
  } catch (const std::exception& e) {
    unsupported(path, std::string("not JSON: ") + e.what());
  }
  Tokenizer t;
  const auto& model = j.at("model");
  if (model.value("type", "") != "BPE") unsupported(path, "model.type must be BPE");
  t.ignore_merges_ = model.value("ignore_merges", false);
  for (auto& [token, id] : model.at("vocab").items()) {
    t.vocab_[token] = id.get<int64_t>();
    t.id_to_token_[id.get<int64_t>()] = token;
  }
  int rank = 0;
  for (const auto& m : model.at("merges")) {
    std::string key = m.is_string() ? m.get<std::string>() : m.at(0).get<std::string>() + " " + m.at(1).get<std::string>();
    t.merge_rank_.emplace(std::move(key), rank++);
  }
  for (const auto& a : j.value("added_tokens", nlohmann::json::array())) {
    const auto id = a.at("id").get<int64_t>();
    const auto content = a.at("content").get<std::string>();
    t.added_[content] = id;
    t.id_to_token_[id] = content;
    t.added_ids_[id] = true;
    if (!content.empty()) t.added_first_[static_cast<unsigned char>(content[0])] = true;
    if (std::find(t.added_lengths_.begin(), t.added_lengths_.end(), content.size()) == t.added_lengths_.end())
      t.added_lengths_.push_back(content.size());
  }
  std::sort(t.added_lengths_.rbegin(), t.added_lengths_.rend());
  for (const auto& [id, token] : t.id_to_token_) {
    t.vocab_size_ = std::max(t.vocab_size_, id + 1);
    if (!(t.added_ids_.count(id) && token.rfind("<|qgpu:", 0) == 0)) t.text_vocab_size_ = std::max(t.text_vocab_size_, id + 1);
  }
  // Normalizer: none or NFC (applied to the text between added tokens, as HF tokenizers does).
  if (j.contains("normalizer") && !j["normalizer"].is_null()) {
    const std::string type = j["normalizer"].value("type", "");
    if (type != "NFC") unsupported(path, "unsupported normalizer " + type);
    t.nfc_ = true;
  }
  // Pre-tokenizer: Split(Qwen2 pattern) + ByteLevel, or ByteLevel without its own regex.
  const auto& pre = j.at("pre_tokenizer");
  std::vector<nlohmann::json> steps;
  if (pre.value("type", "") == "Sequence") steps = pre.at("pretokenizers").get<std::vector<nlohmann::json>>();
  else steps = {pre};
  t.split_ = false;
  bool byte_level_seen = false;
  for (const auto& s : steps) {
    const std::string type = s.value("type", "");
    if (type == "Split") {
      const std::string pattern = s.at("pattern").value("Regex", "");
      if (pattern == kQwen2Pattern) t.letters_include_marks_ = false;
      else if (pattern == kQwen2MarksPattern) t.letters_include_marks_ = true;
      else unsupported(path, "unsupported pre-tokenizer pattern " + pattern);
      t.split_ = true;
    } else if (type == "ByteLevel") {
      if (s.value("use_regex", true)) unsupported(path, "ByteLevel with use_regex (the GPT-2 pattern) is not supported");
      byte_level_seen = true;
    } else {
      unsupported(path, "unsupported pre-tokenizer step " + type);
    }
  }
  if (!byte_level_seen) unsupported(path, "pre-tokenizer has no ByteLevel step");
  return t;
}

// Executes the Qwen2 pattern (tokenizer.h) leftmost-first, as a backtracking
// regex engine would, one match at a time.
std::vector<std::string> Tokenizer::pre_tokenize(std::string_view text) const {
  if (!split_) return {std::string(text)};
  const Utf8 u(text);
  const auto& c = u.cp;
  const size_t n = c.size();
  auto letter = [&](size_t i) { return i < n && (is_letter(c[i]) || (letters_include_marks_ && is_mark(c[i]))); };
  auto number = [&](size_t i) { return i < n && is_number(c[i]); };
  auto space = [&](size_t i) { return i < n && is_space(c[i]); };
  auto other = [&](size_t i) { return i < n && !is_space(c[i]) && !letter(i) && !is_number(c[i]); };
  auto lower = [&](size_t i) { return i < n && c[i] < 128 ? static_cast<char>(std::tolower(static_cast<int>(c[i]))) : '\0'; };

  std::vector<std::string> pieces;
  size_t i = 0;
  while (i < n) {
    size_t end = i;
    // (?i:'s|'t|'re|'ve|'m|'ll|'d)
    if (c[i] == '\'') {
      const char a = lower(i + 1), b = lower(i + 2);
      if (a == 's' || a == 't' || a == 'm' || a == 'd') end = i + 2;
      else if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) end = i + 3;
    }
    // [^\r\n\p{L}\p{N}]?\p{L}+
    if (end == i) {
      size_t j = i;
      if (!letter(j) && !is_newline(c[j]) && !number(j) && letter(j + 1)) ++j;
      if (letter(j)) {
        while (letter(j)) ++j;
        end = j;
      }
    }
    // \p{N}
    if (end == i && number(i)) end = i + 1;
    // ' '?[^\s\p{L}\p{N}]+[\r\n]*
    if (end == i) {
      size_t j = i;
      if (c[j] == ' ' && other(j + 1)) ++j;
      if (other(j)) {
        while (other(j)) ++j;
        while (j < n && is_newline(c[j])) ++j;
        end = j;
      }
    }
    if (end == i && space(i)) {
      size_t run = i;
      while (space(run)) ++run;
      // \s*[\r\n]+ : the whitespace up to and including the run's last newline.
      for (size_t k = run; k > i; --k)
        if (is_newline(c[k - 1])) {
          end = k;
          break;
        }
      // \s+(?!\S) : the run, minus its last character when text follows.
      if (end == i) end = run == n ? run : run - 1;
      // \s+
      if (end == i) end = run;
    }
    pieces.emplace_back(text.substr(u.offset[i], u.offset[end] - u.offset[i]));
    i = end;
  }
  return pieces;
}

void Tokenizer::bpe(const std::string& piece, std::vector<int64_t>& out) const {
  const auto& bl = byte_level();
  std::vector<std::string> symbols;
  std::string whole;
  for (unsigned char b : piece) {
    symbols.push_back(bl.encode[b]);
    whole += bl.encode[b];
  }
  if (ignore_merges_)
    if (auto it = vocab_.find(whole); it != vocab_.end()) {
      out.push_back(it->second);
      return;
    }
  // Repeatedly merge every occurrence (left to right) of the lowest-ranked adjacent pair.
  while (symbols.size() > 1) {
    int best = std::numeric_limits<int>::max();
    for (size_t k = 0; k + 1 < symbols.size(); ++k)
      if (auto it = merge_rank_.find(symbols[k] + " " + symbols[k + 1]); it != merge_rank_.end())
        best = std::min(best, it->second);
    if (best == std::numeric_limits<int>::max()) break;
    std::vector<std::string> merged;
    for (size_t k = 0; k < symbols.size(); ++k) {
      if (k + 1 < symbols.size()) {
        auto it = merge_rank_.find(symbols[k] + " " + symbols[k + 1]);
        if (it != merge_rank_.end() && it->second == best) {
          merged.push_back(symbols[k] + symbols[k + 1]);
          ++k;
          continue;
        }
      }
      merged.push_back(symbols[k]);
    }
    symbols = std::move(merged);
  }
  for (const auto& s : symbols) {
    auto it = vocab_.find(s);
    if (it == vocab_.end()) throw std::runtime_error("tokenizer: symbol \"" + s + "\" is not in the vocabulary");
    out.push_back(it->second);
  }
}

std::vector<int64_t> Tokenizer::encode(std::string_view text, bool allow_special) const {
  std::vector<int64_t> ids;
  auto encode_plain = [&](std::string_view part) {
    const std::string normal = nfc_ ? nfc(part) : std::string(part);
    for (const auto& piece : pre_tokenize(normal)) bpe(piece, ids);
  };
  size_t start = 0, i = 0;
  while (i < text.size()) {
    // The longest added token starting at i.
    size_t best_len = 0;
    int64_t best_id = -1;
    if (allow_special && added_first_[static_cast<unsigned char>(text[i])])
      for (size_t len : added_lengths_)
        if (i + len <= text.size())
          if (auto it = added_.find(std::string(text.substr(i, len))); it != added_.end()) {
            best_len = len;
            best_id = it->second;
            break;
          }
    if (best_len == 0) {
      ++i;
      continue;
    }
    encode_plain(text.substr(start, i - start));
    ids.push_back(best_id);
    i += best_len;
    start = i;
  }
  encode_plain(text.substr(start));
  return ids;
}

std::string Tokenizer::decode(const std::vector<int64_t>& ids) const {
  const auto& bl = byte_level();
  std::string out;
  for (int64_t id : ids) {
    auto it = id_to_token_.find(id);
    if (it == id_to_token_.end()) throw std::out_of_range("tokenizer: no token has id " + std::to_string(id));
    if (added_ids_.count(id)) {
      out += it->second;
      continue;
    }
    const Utf8 u(it->second);
    for (char32_t c : u.cp) {
      auto b = bl.decode.find(c);
      if (b == bl.decode.end()) throw std::runtime_error("tokenizer: token " + std::to_string(id) + " is not byte-level");
      out += static_cast<char>(b->second);
    }
  }
  return out;
}

std::optional<int64_t> Tokenizer::token_id(std::string_view token) const {
  if (auto it = added_.find(std::string(token)); it != added_.end()) return it->second;
  if (auto it = vocab_.find(std::string(token)); it != vocab_.end()) return it->second;
  return std::nullopt;
}

int64_t Tokenizer::vocab_size() const { return vocab_size_; }
int64_t Tokenizer::text_vocab_size() const { return text_vocab_size_; }

std::optional<std::string> Tokenizer::token(int64_t id) const {
  auto it = id_to_token_.find(id);
  if (it == id_to_token_.end()) return std::nullopt;
  return it->second;
}

std::string Tokenizer::chat_template(const std::vector<Message>& messages, bool add_generation_prompt) {
  std::string s;
  for (const auto& m : messages) s += "<|im_start|>" + m.role + "\n" + m.content + "<|im_end|>\n";
  if (add_generation_prompt) s += "<|im_start|>assistant\n";
  return s;
}

}  // namespace qgpu::qwen
