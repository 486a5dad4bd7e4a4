// `qgpu chat` and `qgpu chat-eval`: conversations with the merged model whose
// numbers are computed by the GPU inside it (model_host/chat/chat.h).
#include <fstream>
#include <iostream>
#include <regex>
#include <sstream>

#include <nlohmann/json.hpp>

#include "command.h"
#include "torch_commands.h"
#include "merged_model.h"

namespace {

using namespace qgpu;

struct ModelArgs {
  std::string model, base, circuit, tokenizer, mode = "normal", system;
  int max_tokens = 512;
};

void add_model_options(CLI::App* sub, ModelArgs& a) {
  sub->add_option("--model", a.model, "a merged model directory (qgpu merge)");
  sub->add_option("--base", a.base, "instead of --model: a Qwen3.5 checkpoint, merged in memory with --circuit");
  sub->add_option("--circuit", a.circuit, "with --base: the compiled circuit (qgpu build-model --out DIR)");
  sub->add_option("--tokenizer", a.tokenizer, "tokenizer.json (default: the model's or the base's)");
  sub->add_option("--max-tokens", a.max_tokens, "tokens per reply at most");
  sub->add_option("--system", a.system, "the system prompt (default: the mode's, which explains the conventions)");
}

chat::Mode parse_mode(const std::string& m) {
  if (m == "normal") return chat::Mode::Normal;
  if (m == "advanced") return chat::Mode::Advanced;
  throw std::invalid_argument("--mode must be normal or advanced, not " + m);
}

struct ChatArgs : ModelArgs {
  std::string script;
};

int run_chat(const ChatArgs& a) {
  cli::ChatModel cm = cli::open_chat_model(a.model, a.base, a.circuit, a.tokenizer);
  chat::ChatOptions opt;
  opt.mode = parse_mode(a.mode);
  opt.max_reply_tokens = a.max_tokens;
  opt.system_prompt = a.system;
  chat::ChatSession session(cm.model, *cm.tokenizer, cm.gpu, opt);
  std::unique_ptr<chat::ReplySource> source;
  if (!a.script.empty()) {
    std::ifstream in(a.script);
    if (!in) throw std::runtime_error("cannot read " + a.script);
    auto j = nlohmann::json::parse(in);
    source = std::make_unique<chat::ScriptedSource>(*cm.tokenizer, j.get<std::vector<std::string>>());
  } else {
    source = std::make_unique<chat::GreedySource>();
  }
  std::cerr << "qgpu chat: " << a.mode << " mode; ids from " << cm.tokenizer->text_vocab_size()
            << " on (circuit tokens, not text) are masked at text positions; one message per line, end with EOF\n";
  std::string line;
  while (std::cout << "user> " << std::flush, std::getline(std::cin, line)) {
    if (line.empty()) continue;
    std::cout << "assistant> " << std::flush;
    chat::Reply r = session.ask(line, *source, [](const std::string& s) { std::cout << s << std::flush; });
    std::cout << "\n";
    for (const auto& run : r.runs)
      std::cerr << "qgpu chat: kernel run on the model: " << (run.ok ? "ok" : "failed") << ", "
                << run.stats.prompt_tokens << " prompt + " << run.stats.generated_tokens << " generated tokens, "
                << run.stats.seconds << " s\n";
  }
  return 0;
}

struct EvalArgs : ModelArgs {
  std::string fixture;
  bool scripted = false;
  int limit = -1, advanced_limit = -1;
};

int run_eval(const EvalArgs& a) {
  std::ifstream in(a.fixture);
  if (!in) throw std::runtime_error("cannot read " + a.fixture);
  const auto fx = nlohmann::json::parse(in);
  cli::ChatModel cm = cli::open_chat_model(a.model, a.base, a.circuit, a.tokenizer);
  int score[2] = {0, 0}, total[2] = {0, 0};
  const char* names[2] = {"normal", "advanced"};
  for (int mode = 0; mode < 2; ++mode) {
    const auto& items = fx.at(names[mode]);
    const int limit = mode == 0 ? a.limit : a.advanced_limit;
    for (size_t i = 0; i < items.size() && (limit < 0 || int(i) < limit); ++i) {
      const auto& it = items[i];
      chat::ChatOptions opt;
      opt.mode = mode == 0 ? chat::Mode::Normal : chat::Mode::Advanced;
      opt.max_reply_tokens = a.max_tokens;
      opt.system_prompt = a.system;
      chat::ChatSession session(cm.model, *cm.tokenizer, cm.gpu, opt);
      std::unique_ptr<chat::ReplySource> source;
      if (a.scripted) source = std::make_unique<chat::ScriptedSource>(*cm.tokenizer, std::vector<std::string>{it.at("reference").get<std::string>()});
      else source = std::make_unique<chat::GreedySource>();
      chat::Reply r = session.ask(it.at("question"), *source);
      const bool ok = mode == 0 ? chat::normal_item_passes(r, it.at("answer").get<std::string>())
                                : chat::advanced_item_passes(r, it.at("expect").get<std::vector<int32_t>>());
      ++total[mode];
      score[mode] += ok;
      std::string shown = r.text;
      for (auto& c : shown)
        if (c == '\n') c = ' ';
      if (shown.size() > 160) shown = shown.substr(0, 157) + "...";
      std::cout << names[mode] << " " << i + 1 << " " << (ok ? "PASS" : "FAIL") << " (" << r.kernel_runs
                << " kernel runs): " << shown << "\n";
    }
  }
  std::cout << "score: normal " << score[0] << "/" << total[0] << ", advanced " << score[1] << "/" << total[1] << "\n";
  return 0;
}

cli::Register reg_chat(cli::kChat.name, [](CLI::App& app) {
  auto a = std::make_shared<ChatArgs>();
  auto* sub = app.add_subcommand(cli::kChat.name, cli::kChat.description);
  add_model_options(sub, *a);
  sub->add_option("--mode", a->mode, "normal (ready kernels for expressions) or advanced (the model writes CUDA)");
  sub->add_option("--script", a->script, "a JSON list of assistant replies to use instead of the model's (testing)");
  return [a] { return run_chat(*a); };
});

cli::Register reg_eval(cli::kChatEval.name, [](CLI::App& app) {
  auto a = std::make_shared<EvalArgs>();
  auto* sub = app.add_subcommand(cli::kChatEval.name, cli::kChatEval.description);
  add_model_options(sub, *a);
  sub->add_option("--fixture", a->fixture, "the fixture (tests/chat/fixture.json)")->required();
  sub->add_flag("--scripted", a->scripted, "replay the fixture's reference replies instead of the model's (plumbing)");
  sub->add_option("--limit", a->limit, "score only the first N normal-mode questions");
  sub->add_option("--advanced-limit", a->advanced_limit, "score only the first N advanced-mode tasks");
  return [a] { return run_eval(*a); };
});

}  // namespace
