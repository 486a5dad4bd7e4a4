// Tokens of PTX text, for the parser.  Internal to qgpu_ptx.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace qgpu::ptx::detail {

struct Token {
  enum class Kind : unsigned char {
    Ident,      // foo, %r1, $L__BB0_1, _
    Dotted,     // .u32, .L2::cache_hint (text includes the dot)
    Int,        // 12, 0x1f, 017, 0b101, with an optional U suffix
    Float,      // 0f3F800000, 0d..., 1.5, 2e3
    String,     // "..." (text without quotes)
    Punct,      // one of , ; : { } [ ] ( ) + - ! | @ < > =
    End,
  };
  Kind kind = Kind::End;
  std::string_view text;
  int line = 0;
};

// Splits `src` into tokens; comments are dropped.  Throws ParseError on a
// character that cannot start a token or on an unterminated comment/string.
std::vector<Token> tokenize(std::string_view src);

}  // namespace qgpu::ptx::detail
