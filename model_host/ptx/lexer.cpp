#include "model_host/ptx/lexer.h"

#include "model_host/ptx/parse.h"

namespace qgpu::ptx::detail {
namespace {

bool is_word_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '$';
}
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_hex(char c) {
  return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

std::string printable(char c) {
  if (c >= 0x20 && c < 0x7f) return std::string("'") + c + "'";
  static const char* hex = "0123456789abcdef";
  unsigned char u = static_cast<unsigned char>(c);
  return std::string("byte 0x") + hex[u >> 4] + hex[u & 15];
}

}  // namespace

std::vector<Token> tokenize(std::string_view s) {
  std::vector<Token> out;
  int line = 1;
  size_t i = 0;
  const size_t n = s.size();
  auto push = [&](Token::Kind k, size_t b, size_t e) { out.push_back({k, s.substr(b, e - b), line}); };
  while (i < n) {
    char c = s[i];
    if (c == '\n') { ++line; ++i; continue; }
    if (c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v') { ++i; continue; }
    if (c == '/' && i + 1 < n && s[i + 1] == '/') {
      while (i < n && s[i] != '\n') ++i;
      continue;
    }
    if (c == '/' && i + 1 < n && s[i + 1] == '*') {
      int start = line;
      i += 2;
      while (i + 1 < n && !(s[i] == '*' && s[i + 1] == '/')) {
        if (s[i] == '\n') ++line;
        ++i;
      }
      if (i + 1 >= n) throw ParseError(start, "unterminated /* comment");
      i += 2;
      continue;
    }
    size_t b = i;
    if (c == '"') {
      ++i;
      while (i < n && s[i] != '"' && s[i] != '\n') {
        if (s[i] == '\\' && i + 1 < n && s[i + 1] != '\n') ++i;
        ++i;
      }
      if (i >= n || s[i] != '"') throw ParseError(line, "unterminated string");
      out.push_back({Token::Kind::String, s.substr(b + 1, i - b - 1), line});
      ++i;
      continue;
    }
    if (c == '.' && i + 1 < n && (is_word_char(s[i + 1]))) {
      ++i;
      while (i < n) {
        if (is_word_char(s[i])) ++i;
        else if (s[i] == ':' && i + 2 < n && s[i + 1] == ':' && is_word_char(s[i + 2])) i += 2;
        else break;
      }
      push(Token::Kind::Dotted, b, i);
      continue;
    }
    if (is_digit(c) || (c == '.' && i + 1 < n && is_digit(s[i + 1]))) {
      // 0f/0d: raw float bits.
      if (c == '0' && i + 1 < n && (s[i + 1] == 'f' || s[i + 1] == 'F' || s[i + 1] == 'd' || s[i + 1] == 'D')) {
        size_t want = (s[i + 1] == 'f' || s[i + 1] == 'F') ? 8 : 16;
        i += 2;
        size_t h = i;
        while (i < n && is_hex(s[i])) ++i;
        if (i - h != want)
          throw ParseError(line, "malformed float literal '" + std::string(s.substr(b, i - b)) + "'");
        push(Token::Kind::Float, b, i);
        continue;
      }
      bool is_float = false;
      if (c == '0' && i + 1 < n && (s[i + 1] == 'x' || s[i + 1] == 'X')) {
        i += 2;
        while (i < n && is_hex(s[i])) ++i;
      } else {
        while (i < n && (is_digit(s[i]) || s[i] == '.' || s[i] == 'e' || s[i] == 'E' ||
                         ((s[i] == '+' || s[i] == '-') && (s[i - 1] == 'e' || s[i - 1] == 'E')))) {
          if (!is_digit(s[i])) is_float = true;
          ++i;
        }
        // 0b101 binary
        if (i < n && i == b + 1 && c == '0' && (s[i] == 'b' || s[i] == 'B')) {
          ++i;
          while (i < n && (s[i] == '0' || s[i] == '1')) ++i;
        }
      }
      if (!is_float && i < n && (s[i] == 'U' || s[i] == 'u')) ++i;
      if (i < n && is_word_char(s[i]))
        throw ParseError(line, "malformed number '" + std::string(s.substr(b, i - b + 1)) + "'");
      push(is_float ? Token::Kind::Float : Token::Kind::Int, b, i);
      continue;
    }
    if (is_word_char(c) || c == '%') {
      ++i;
      while (i < n && is_word_char(s[i])) ++i;
      push(Token::Kind::Ident, b, i);
      continue;
    }
    switch (c) {
      case ',': case ';': case ':': case '{': case '}': case '[': case ']': case '(': case ')':
      case '+': case '-': case '!': case '|': case '@': case '<': case '>': case '=':
        ++i;
        push(Token::Kind::Punct, b, i);
        continue;
      default:
        throw ParseError(line, "unexpected character " + printable(c));
    }
  }
  out.push_back({Token::Kind::End, std::string_view(), line});
  return out;
}

}  // namespace qgpu::ptx::detail
