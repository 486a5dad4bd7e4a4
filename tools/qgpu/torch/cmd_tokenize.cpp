// `qgpu tokenize`: a text through a tokenizer.json (model_host/qwen/tokenizer.h):
// one line per token, its id and its piece (the bytes it stands for, escaped
// where they are not printable), or the text of given ids (--decode).
#include <fstream>
#include <iostream>
#include <sstream>

#include "command.h"
#include "torch_commands.h"
#include "model_host/qwen/tokenizer.h"

namespace {

using namespace qgpu;

std::string escaped(const std::string& s) {
  std::string o;
  for (unsigned char c : s) {
    if (c == '\n') o += "\\n";
    else if (c == '\t') o += "\\t";
    else if (c == '\r') o += "\\r";
    else if (c == '\\') o += "\\\\";
    else if (c < 0x20 || c == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      o += buf;
    } else o += char(c);
  }
  return o;
}

struct Args {
  std::string tokenizer, text, file;
  std::vector<int64_t> decode;
  bool no_special = false;
};

int run(const Args& a) {
  const qwen::Tokenizer tok = qwen::Tokenizer::load(a.tokenizer);
  if (!a.decode.empty()) {
    std::cout << tok.decode(a.decode) << "\n";
    return 0;
  }
  std::string text = a.text;
  if (!a.file.empty()) {
    std::ifstream in(a.file, std::ios::binary);
    if (!in) throw std::runtime_error("cannot read " + a.file);
    std::ostringstream s;
    s << in.rdbuf();
    text = s.str();
  }
  const std::vector<int64_t> ids = tok.encode(text, !a.no_special);
  for (int64_t id : ids) std::cout << id << "\t" << escaped(tok.decode({id})) << "\n";
  std::cerr << "qgpu tokenize: " << ids.size() << " tokens, " << text.size() << " bytes\n";
  return 0;
}

cli::Register reg(cli::kTokenize.name, [](CLI::App& app) {
  auto a = std::make_shared<Args>();
  auto* sub = app.add_subcommand(cli::kTokenize.name, cli::kTokenize.description);
  sub->add_option("--tokenizer", a->tokenizer, "tokenizer.json (a Qwen model's or a merged model's)")->required();
  sub->add_option("text", a->text, "the text");
  sub->add_option("--file", a->file, "read the text from this file instead");
  sub->add_option("--decode", a->decode, "instead: print the text of these ids")->expected(1, -1);
  sub->add_flag("--no-special", a->no_special, "added tokens in the text are plain text");
  return [a] { return run(*a); };
});

}  // namespace
