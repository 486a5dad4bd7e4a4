// The PTX parser: text -> qgpu::ptx::Module (see ir.h).
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>

#include "model_host/ptx/ir.h"

namespace qgpu::ptx {

// Malformed or unknown PTX.  what() reads "PTX line N: <what is wrong>" and
// names the offending token.
class ParseError : public std::runtime_error {
 public:
  ParseError(int line, const std::string& message);
  int line() const { return line_; }

 private:
  int line_;
};

// Parses a whole module.  Throws ParseError.
Module parse(std::string_view text);

}  // namespace qgpu::ptx
