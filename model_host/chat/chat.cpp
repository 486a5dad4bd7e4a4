#include "model_host/chat/chat.h"

#include "compiler.h"  // libnvrtc_shim: CUDA C++ to PTX with the embedded Clang
#include "model_host/machine/isa.h"

#include <nlohmann/json.hpp>

#include <cctype>
#include <cstring>
#include <fstream>
#include <regex>
#include <sstream>
#include <stdexcept>

namespace qgpu::chat {
namespace {

// ---- expression parsing ----

struct Cursor {
  const std::string& s;
  size_t i = 0;
  void ws() {
    while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
  }
  bool eat(char c) {
    ws();
    if (i < s.size() && s[i] == c) return ++i, true;
    return false;
  }
  bool eat_word(const char* w) {
    ws();
    const size_t n = std::strlen(w);
    if (s.compare(i, n, w) == 0) return i += n, true;
    return false;
  }
  std::optional<int32_t> integer() {
    ws();
    size_t j = i;
    if (j < s.size() && s[j] == '-') ++j;
    const size_t digits = j;
    while (j < s.size() && std::isdigit(static_cast<unsigned char>(s[j]))) ++j;
    if (j == digits || j - digits > 9) return std::nullopt;
    const int32_t v = std::stoi(s.substr(i, j - i));
    i = j;
    return v;
  }
  std::optional<std::vector<int32_t>> vec() {
    if (!eat('[')) return std::nullopt;
    std::vector<int32_t> v;
    do {
      auto x = integer();
      if (!x) return std::nullopt;
      v.push_back(*x);
    } while (eat(','));
    if (!eat(']') || v.size() > 16) return std::nullopt;
    return v;
  }
};

constexpr int kMaxElements = 16;
constexpr uint32_t kOutWords = 16;

// The ready kernels (CUDA C++, compiled once by the embedded Clang).
const char* kReadyKernels = R"(
extern "C" __global__ void dot(const int* a, const int* b, int* out, int n) {
  int acc = 0;
  for (int i = 0; i < n; ++i) acc += a[i] * b[i];
  out[0] = acc;
}
extern "C" __global__ void reduce_sum(const int* a, int* out, int n) {
  int acc = 0;
  for (int i = 0; i < n; ++i) acc += a[i];
  out[0] = acc;
}
extern "C" __global__ void reduce_max(const int* a, int* out, int n) {
  int m = a[0];
  for (int i = 1; i < n; ++i) m = a[i] > m ? a[i] : m;
  out[0] = m;
}
extern "C" __global__ void reduce_min(const int* a, int* out, int n) {
  int m = a[0];
  for (int i = 1; i < n; ++i) m = a[i] < m ? a[i] : m;
  out[0] = m;
}
extern "C" __global__ void ew_add(const int* a, const int* b, int* out, int n) {
  int i = threadIdx.x;
  if (i < n) out[i] = a[i] + b[i];
}
extern "C" __global__ void ew_sub(const int* a, const int* b, int* out, int n) {
  int i = threadIdx.x;
  if (i < n) out[i] = a[i] - b[i];
}
extern "C" __global__ void ew_mul(const int* a, const int* b, int* out, int n) {
  int i = threadIdx.x;
  if (i < n) out[i] = a[i] * b[i];
}
)";

std::string join(const std::vector<int32_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

}  // namespace

std::optional<Expression> parse_expression(const std::string& text) {
  Cursor c{text};
  Expression e{};
  auto done = [&]() { c.ws(); return c.i == text.size(); };
  for (auto [name, kind] : {std::pair{"sum", Expression::Kind::Sum}, {"max", Expression::Kind::Max},
                            {"min", Expression::Kind::Min}}) {
    Cursor d{text};
    if (d.eat_word(name) && d.eat('(')) {
      auto v = d.vec();
      if (v && d.eat(')')) {
        d.ws();
        if (d.i == text.size()) return Expression{kind, *v, {}, false};
      }
      return std::nullopt;
    }
  }
  if (auto a = c.vec()) {
    Expression::Kind k;
    if (c.eat('@')) k = Expression::Kind::Dot;
    else if (c.eat('+')) k = Expression::Kind::Add;
    else if (c.eat('-')) k = Expression::Kind::Sub;
    else if (c.eat('*')) k = Expression::Kind::Mul;
    else return std::nullopt;
    auto b = c.vec();
    if (!b || !done() || a->size() != b->size()) return std::nullopt;
    return Expression{k, *a, *b, false};
  }
  auto a = c.integer();
  if (!a) return std::nullopt;
  Expression::Kind k;
  if (c.eat('+')) k = Expression::Kind::Add;
  else if (c.eat('-')) k = Expression::Kind::Sub;
  else if (c.eat('*')) k = Expression::Kind::Mul;
  else return std::nullopt;
  auto b = c.integer();
  if (!b || !done()) return std::nullopt;
  (void)e;
  return Expression{k, {*a}, {*b}, true};
}

std::optional<Expression> expression_before_equals(const std::string& text) {
  size_t end = text.size();
  while (end > 0 && text[end - 1] == ' ') --end;
  if (end == 0 || text[end - 1] != '=') return std::nullopt;
  if (end >= 2 && (text[end - 2] == '=' || text[end - 2] == '<' || text[end - 2] == '>' || text[end - 2] == '!'))
    return std::nullopt;
  const std::string body = text.substr(0, end - 1);
  // Longest suffix that parses; expressions start at a word boundary.
  const size_t from = body.size() > 200 ? body.size() - 200 : 0;
  for (size_t i = from; i < body.size(); ++i) {
    if (i > 0 && (std::isalnum(static_cast<unsigned char>(body[i - 1])) || body[i - 1] == '-')) continue;
    if (auto e = parse_expression(body.substr(i))) return e;
  }
  return std::nullopt;
}

std::string format_result(const Expression& e, const std::vector<int32_t>& values) {
  const bool list = !e.scalar && (e.kind == Expression::Kind::Add || e.kind == Expression::Kind::Sub ||
                                  e.kind == Expression::Kind::Mul);
  if (list) return join(std::vector<int32_t>(values.begin(), values.begin() + std::ptrdiff_t(e.a.size())));
  return std::to_string(values.at(0));
}

// ---- InnerGpu ----

InnerGpu::InnerGpu(std::shared_ptr<launch::Backend> backend) : backend_(std::move(backend)) {
  Ptx p = compile(kReadyKernels);
  if (!p.ok) throw std::runtime_error("the ready kernels do not compile:\n" + p.log);
  ready_ptx_ = p.ptx;
}

InnerGpu::Ptx InnerGpu::compile(const std::string& source) {
  nvrtc::CompileOptions opts;
  nvrtc::CompileOutput out = nvrtc::compile({"kernel.cu", source, {}}, opts, {});
  return {out.ok, out.ptx, out.log};
}

KernelResult InnerGpu::launch(const std::string& ptx, const std::string& kernel,
                              const std::vector<std::vector<int32_t>>& inputs, uint32_t out_words, uint32_t threads,
                              bool with_n, int32_t n) {
  const machine::Params& p = machine::model_params();
  launch::GlobalMemory mem{p.global_base, {}};
  std::vector<uint64_t> addrs;
  for (const auto& in : inputs) {
    addrs.push_back(mem.base + mem.bytes.size());
    const size_t at = mem.bytes.size();
    mem.bytes.resize(at + in.size() * 4);
    std::memcpy(mem.bytes.data() + at, in.data(), in.size() * 4);
  }
  const uint64_t out_addr = mem.base + mem.bytes.size();
  mem.bytes.resize(mem.bytes.size() + out_words * 4, 0);
  launch::LaunchRequest req;
  req.ptx = ptx;
  req.kernel = kernel;
  req.block = {threads, 1, 1};
  auto push = [&](const void* v, size_t size) {
    while (req.params.size() % size) req.params.push_back(0);
    const size_t at = req.params.size();
    req.params.resize(at + size);
    std::memcpy(req.params.data() + at, v, size);
  };
  for (uint64_t a : addrs) push(&a, 8);
  push(&out_addr, 8);
  if (with_n) push(&n, 4);
  launch::LaunchResult r = backend_->launch(req, mem);
  KernelResult k;
  k.stats = r.stats;
  if (r.error != 0) {
    k.error = "launch failed (CUDA error " + std::to_string(r.error) + "): " + r.message;
    return k;
  }
  k.ok = true;
  k.values.resize(out_words);
  std::memcpy(k.values.data(), mem.bytes.data() + (out_addr - mem.base), out_words * 4);
  return k;
}

KernelResult InnerGpu::evaluate(const Expression& e) {
  using K = Expression::Kind;
  const int32_t n = static_cast<int32_t>(e.a.size());
  if (n == 0 || n > kMaxElements) return {false, "expressions take 1 to 16 elements", {}, {}};
  switch (e.kind) {
    case K::Dot: return launch(ready_ptx_, "dot", {e.a, e.b}, 1, 1, true, n);
    case K::Sum: return launch(ready_ptx_, "reduce_sum", {e.a}, 1, 1, true, n);
    case K::Max: return launch(ready_ptx_, "reduce_max", {e.a}, 1, 1, true, n);
    case K::Min: return launch(ready_ptx_, "reduce_min", {e.a}, 1, 1, true, n);
    case K::Add: return launch(ready_ptx_, "ew_add", {e.a, e.b}, uint32_t(n), uint32_t(n), true, n);
    case K::Sub: return launch(ready_ptx_, "ew_sub", {e.a, e.b}, uint32_t(n), uint32_t(n), true, n);
    case K::Mul: return launch(ready_ptx_, "ew_mul", {e.a, e.b}, uint32_t(n), uint32_t(n), true, n);
  }
  return {};
}

KernelResult InnerGpu::run_source(const std::string& source, uint32_t threads) {
  Ptx p = compile(source);
  if (!p.ok) return {false, p.log.empty() ? "compilation failed" : p.log, {}, {}};
  if (p.ptx.find(".entry kernel(") == std::string::npos)
    return {false, "the program defines no extern \"C\" __global__ void kernel(int* out)", {}, {}};
  return launch(p.ptx, "kernel", {}, kOutWords, threads, false, 0);
}

// ---- sources ----

ScriptedSource::ScriptedSource(const qwen::Tokenizer& tok, std::vector<std::string> replies)
    : tok_(tok), replies_(std::move(replies)) {}

void ScriptedSource::begin_reply() {
  ids_ = turn_ < replies_.size() ? tok_.encode(replies_[turn_], false) : std::vector<int64_t>{};
  ++turn_;
  pos_ = 0;
}

int64_t ScriptedSource::next(int64_t) {
  if (pos_ < ids_.size()) return ids_[pos_++];
  return *tok_.token_id("<|im_end|>");
}

std::string default_system_prompt(Mode mode) {
  if (mode == Mode::Normal)
    return "You are a helpful assistant with a GPU. When an answer needs arithmetic on integers, write the "
           "expression followed by \" =\" and the GPU writes the result, for example: [1, 2, 3] @ [4, 5, 6] = 32. "
           "It knows dot products (a @ b), sum(...), max(...), min(...), element-wise +, - and * of lists, and "
           "+, - and * of two integers.";
  return "You are a helpful assistant with a GPU. To compute something, write a CUDA kernel in a ```cuda block "
         "that defines extern \"C\" __global__ void kernel(int* out); it runs on one block of threads (one thread "
         "unless the block has a line // threads: N, N up to 1024) and out holds 16 ints, zero at the start. After "
         "the block the host shows out in a ```output block, or the compiler's errors in a ```error block.";
}

// ---- session ----

ChatSession::ChatSession(std::shared_ptr<const qwen::Model> model, const qwen::Tokenizer& tok,
                         std::shared_ptr<InnerGpu> gpu, ChatOptions options)
    : model_(std::move(model)), tok_(tok), gpu_(std::move(gpu)), opt_(std::move(options)), state_(model_->new_state()) {
  auto end = tok_.token_id("<|im_end|>");
  if (!end || !tok_.token_id("<|im_start|>"))
    throw std::runtime_error("chat: the tokenizer has no <|im_start|> / <|im_end|> tokens (ChatML)");
  im_end_ = *end;
  eos_ = tok_.token_id("<|endoftext|>").value_or(-1);
  text_vocab_ = tok_.text_vocab_size();
  if (opt_.system_prompt.empty()) opt_.system_prompt = default_system_prompt(opt_.mode);
}

int64_t ChatSession::feed(const std::vector<int64_t>& ids) {
  tokens_.insert(tokens_.end(), ids.begin(), ids.end());
  if (!opt_.mask_circuit || ids.empty()) return model_->forward_argmax(state_, ids);
  if (ids.size() > 1) model_->forward_argmax(state_, std::vector<int64_t>(ids.begin(), ids.end() - 1));
  const torch::Tensor logits = model_->step(state_, ids.back());
  return logits.narrow(0, 0, std::min<int64_t>(text_vocab_, logits.size(0))).argmax().item<int64_t>();
}

Reply ChatSession::ask(const std::string& user, ReplySource& source,
                       const std::function<void(const std::string&)>& stream) {
  std::vector<qwen::Tokenizer::Message> msgs;
  if (!started_) msgs.push_back({"system", opt_.system_prompt});
  msgs.push_back({"user", user});
  std::string prompt = qwen::Tokenizer::chat_template(msgs, true);
  // After the first turn the previous reply ended with <|im_end|>; ChatML puts "\n" after it.
  if (started_) prompt = "\n" + prompt;
  started_ = true;
  int64_t argmax = feed(tok_.encode(prompt, true));
  source.begin_reply();

  Reply reply;
  std::vector<int64_t> ids;            // the reply's tokens (host insertions included)
  size_t shown = 0, scanned_block = 0;
  const int64_t text_vocab = text_vocab_;
  auto show = [&]() {
    const std::string text = tok_.decode(ids);
    // Print only whole UTF-8 characters.
    size_t end = text.size();
    size_t k = end;
    while (k > 0 && (static_cast<unsigned char>(text[k - 1]) & 0xC0) == 0x80) --k;
    if (k > 0) {
      const unsigned char lead = static_cast<unsigned char>(text[k - 1]);
      const size_t need = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC0 ? 2 : 1;
      if (end - (k - 1) < need) end = k - 1;
    }
    if (end > shown && stream) stream(text.substr(shown, end - shown));
    shown = std::max(shown, end);
    reply.text = text;
  };
  auto insert = [&](const std::string& text) {
    const std::vector<int64_t> add = tok_.encode(text, false);
    ids.insert(ids.end(), add.begin(), add.end());
    argmax = feed(add);
    show();
  };
  for (int n = 0;; ++n) {
    if (n >= opt_.max_reply_tokens) {
      reply.stop = "limit";
      feed({im_end_});
      break;
    }
    const int64_t token = source.next(argmax);
    if (token == im_end_ || token == eos_) {
      reply.stop = "end";
      feed({im_end_});
      break;
    }
    if (token < 0 || token >= text_vocab) {
      reply.stop = "token " + std::to_string(token);
      feed({im_end_});
      break;
    }
    ids.push_back(token);
    argmax = feed({token});
    show();
    const std::string& text = reply.text;
    if (opt_.mode == Mode::Normal) {
      if (!text.empty() && text.back() == '=')
        if (auto e = expression_before_equals(text)) {
          KernelResult r = gpu_->evaluate(*e);
          ++reply.kernel_runs;
          reply.results.push_back(r.ok ? format_result(*e, r.values) : "");
          insert(r.ok ? " " + reply.results.back() : " (the GPU failed: " + r.error + ")");
          reply.runs.push_back(std::move(r));
        }
    } else {
      // A closed ```cuda block after the last one handled.
      static const std::regex block("```(?:cuda|cpp|c\\+\\+|cu)[^\\n]*\\n([\\s\\S]*?)```");
      std::smatch m;
      const std::string tail = text.substr(scanned_block);
      if (std::regex_search(tail, m, block)) {
        scanned_block = text.size();
        const std::string code = m[1].str();
        uint32_t threads = 1;
        static const std::regex threads_line("//\\s*threads:\\s*([0-9]+)");
        std::smatch t;
        if (std::regex_search(code, t, threads_line)) threads = uint32_t(std::stoul(t[1].str()));
        KernelResult r;
        if (threads == 0 || threads > machine::model_params().max_threads)
          r = {false, "threads must be 1 to " + std::to_string(machine::model_params().max_threads), {}, {}};
        else
          r = gpu_->run_source(code, threads);
        ++reply.kernel_runs;
        if (r.ok) {
          insert("\n```output\nout = " + join(r.values) + "\n```\n");
        } else {
          insert("\n```error\n" + r.error + (r.error.empty() || r.error.back() != '\n' ? "\n" : "") + "```\n");
        }
        scanned_block = reply.text.size();
        reply.runs.push_back(std::move(r));
      }
    }
  }
  return reply;
}

// ---- scoring ----

bool contains_answer(const std::string& text, const std::string& answer) {
  size_t at = 0;
  while (!answer.empty() && (at = text.find(answer, at)) != std::string::npos) {
    const bool left = at == 0 || !(std::isdigit(static_cast<unsigned char>(text[at - 1])) || text[at - 1] == '-');
    const size_t end = at + answer.size();
    const bool right = end >= text.size() || !std::isdigit(static_cast<unsigned char>(text[end]));
    if (left && right) return true;
    ++at;
  }
  return false;
}

bool normal_item_passes(const Reply& reply, const std::string& answer) {
  for (size_t i = 0; i < reply.runs.size() && i < reply.results.size(); ++i)
    if (reply.runs[i].ok && reply.results[i] == answer) return true;
  return false;
}

bool advanced_item_passes(const Reply& reply, const std::vector<int32_t>& expect) {
  for (const auto& run : reply.runs)
    if (run.ok && run.values.size() >= expect.size() && std::equal(expect.begin(), expect.end(), run.values.begin()))
      return true;
  return false;
}

// ---- a byte-level tokenizer for generated checkpoints ----

void write_byte_tokenizer(const std::string& path) {
  // GPT-2's byte-to-character map: printable bytes stand for themselves, the
  // others map to U+0100 upwards.
  auto utf8 = [](uint32_t cp) {
    std::string s;
    if (cp < 0x80) s += char(cp);
    else if (cp < 0x800) s += char(0xC0 | (cp >> 6)), s += char(0x80 | (cp & 0x3F));
    else s += char(0xE0 | (cp >> 12)), s += char(0x80 | ((cp >> 6) & 0x3F)), s += char(0x80 | (cp & 0x3F));
    return s;
  };
  nlohmann::json vocab = nlohmann::json::object();
  uint32_t extra = 256;
  for (uint32_t b = 0; b < 256; ++b) {
    const bool printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174);
    vocab[utf8(printable ? b : extra++)] = b;
  }
  nlohmann::json j = {
      {"version", "1.0"},
      {"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", nlohmann::json::array()}}},
      {"pre_tokenizer", {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", false}}},
      {"added_tokens",
       {{{"id", 256}, {"content", "<|endoftext|>"}, {"special", true}},
        {{"id", 257}, {"content", "<|im_start|>"}, {"special", true}},
        {{"id", 258}, {"content", "<|im_end|>"}, {"special", true}}}}};
  std::ofstream out(path, std::ios::trunc);
  out << j.dump(1);
  if (!out) throw std::runtime_error("cannot write " + path);
}

}  // namespace qgpu::chat
