// Chat with the merged model (docs/merge.md section "Chat").
//
// A conversation is one ChatML sequence in one model State.  The host encodes
// the messages, runs the plain greedy loop (argmax, feed back, stop at
// <|im_end|>), and streams the reply.  In between it may add tokens of its own
// to the assistant's reply, computed by the GPU inside the same model:
//
//   normal mode    the reply reaches "EXPR =" for an expression the host knows
//                  (`[1, 2, 3] @ [4, 5, 6]`, `sum([..])`, `max([..])`, `min([..])`,
//                  element-wise `[..] + [..]`, `-`, `*`, and `a + b`, `a - b`, `a * b`
//                  on integers): the host runs the matching ready kernel on the
//                  inner GPU and appends " RESULT" to the reply;
//   advanced mode  the reply closes a ```cuda block: the host compiles it with
//                  the embedded Clang (the NVRTC compiler), runs `kernel(int* out)`
//                  on the inner GPU, and appends a ```output block with out[0..15]
//                  (or a ```error block with the compiler's or the launch's errors).
//
// Kernel launches run in their own State (a fresh sequence on the same Model),
// so the conversation's state holds only the conversation's text: what follows
// a kernel run is what the model writes after that text.
#pragma once

#include "model_host/launch/launch.h"
#include "model_host/machine_circuit/circuit.h"
#include "model_host/qwen/model.h"
#include "model_host/qwen/tokenizer.h"

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace qgpu::chat {

enum class Mode { Normal, Advanced };

// ---- Expressions (normal mode) ---------------------------------------------

struct Expression {
  enum class Kind { Dot, Sum, Max, Min, Add, Sub, Mul } kind;
  std::vector<int32_t> a, b;   // operands (a scalar is a one-element vector)
  bool scalar = false;         // `a + b` on integers: the result is printed as a number
};
// Parses a whole string as an expression (surrounding spaces allowed).
std::optional<Expression> parse_expression(const std::string& text);
// The expression ending `text` just before a trailing "=" (and spaces), with
// the longest match; nullopt when `text` does not end so.
std::optional<Expression> expression_before_equals(const std::string& text);
// The result as the reply shows it: "32", "[5, 7, 9]".
std::string format_result(const Expression& e, const std::vector<int32_t>& values);

// ---- Kernels on the inner GPU ---------------------------------------------

struct KernelResult {
  bool ok = false;
  std::string error;               // the compiler's log or the launch's message
  std::vector<int32_t> values;     // the output array
  launch::LaunchStats stats;
};

class InnerGpu {
 public:
  explicit InnerGpu(std::shared_ptr<launch::Backend> backend);
  // Compiles the ready kernels once (throws std::runtime_error if they do not compile).
  KernelResult evaluate(const Expression& e);
  // Advanced mode: compiles `source` (must define extern "C" __global__ void
  // kernel(int* out)) and runs it on one block of `threads` threads, out = 16
  // zeroed ints.
  KernelResult run_source(const std::string& source, uint32_t threads);
  const launch::Backend& backend() const { return *backend_; }

 private:
  struct Ptx {
    bool ok;
    std::string ptx, log;
  };
  static Ptx compile(const std::string& source);
  KernelResult launch(const std::string& ptx, const std::string& kernel, const std::vector<std::vector<int32_t>>& inputs,
                      uint32_t out_words, uint32_t threads, bool with_n, int32_t n);
  std::shared_ptr<launch::Backend> backend_;
  std::string ready_ptx_;
};

// ---- The conversation -------------------------------------------------------

// Where the assistant's tokens come from: the model's greedy choice, or a
// script (tests, the fixture's reference replies).
class ReplySource {
 public:
  virtual ~ReplySource() = default;
  // The next token of the reply given the model's argmax.
  virtual int64_t next(int64_t argmax) = 0;
  virtual void begin_reply() {}
};
class GreedySource : public ReplySource {
 public:
  int64_t next(int64_t argmax) override { return argmax; }
};
// Replies given as text, one per assistant turn; each ends with <|im_end|>.
class ScriptedSource : public ReplySource {
 public:
  ScriptedSource(const qwen::Tokenizer& tok, std::vector<std::string> replies);
  int64_t next(int64_t argmax) override;
  void begin_reply() override;

 private:
  const qwen::Tokenizer& tok_;
  std::vector<std::string> replies_;
  size_t turn_ = 0, pos_ = 0;
  std::vector<int64_t> ids_;
};

struct ChatOptions {
  Mode mode = Mode::Normal;
  int max_reply_tokens = 512;
  std::string system_prompt;        // empty: the mode's default
  // The greedy choice at text positions is taken over text ids only: ids at
  // or past the tokenizer's text_vocab_size() (a merged model's circuit
  // tokens, docs/merge.md) are masked.
  bool mask_circuit = true;
};
std::string default_system_prompt(Mode mode);

struct Reply {
  std::string text;                 // the whole reply, host insertions included
  int kernel_runs = 0;
  std::vector<KernelResult> runs;
  std::vector<std::string> results; // per run, normal mode: the result as inserted ("32", "[5, 7, 9]"); "" when it failed
  std::string stop;                 // "end" (<|im_end|>), "limit", "token N" (a non-text id)
};

class ChatSession {
 public:
  ChatSession(std::shared_ptr<const qwen::Model> model, const qwen::Tokenizer& tok, std::shared_ptr<InnerGpu> gpu,
              ChatOptions options);
  // One user turn; `stream` receives the reply's text as it grows (new text only).
  Reply ask(const std::string& user, ReplySource& source, const std::function<void(const std::string&)>& stream = {});
  const qwen::State& state() const { return state_; }
  // Every token of the conversation so far.
  const std::vector<int64_t>& tokens() const { return tokens_; }

 private:
  int64_t feed(const std::vector<int64_t>& ids);   // returns the argmax after the last
  std::shared_ptr<const qwen::Model> model_;
  const qwen::Tokenizer& tok_;
  std::shared_ptr<InnerGpu> gpu_;
  ChatOptions opt_;
  qwen::State state_;
  std::vector<int64_t> tokens_;
  bool started_ = false;
  int64_t im_end_ = -1, eos_ = -1, text_vocab_ = 0;
};

// Scoring (qgpu chat-eval, docs/merge.md section 6).  Whether `text` holds
// `answer` as a whole number or list (not inside a longer number).
bool contains_answer(const std::string& text, const std::string& answer);
// A normal-mode item passes only when a kernel run's result, as the host
// inserted it, is the answer (the model's own text does not count).
bool normal_item_passes(const Reply& reply, const std::string& answer);
// An advanced-mode item passes when a kernel the reply wrote ran and its out
// begins with `expect`.
bool advanced_item_passes(const Reply& reply, const std::vector<int32_t>& expect);

// A byte-level tokenizer.json with the ChatML tokens (ids 0..255 bytes,
// 256 <|endoftext|>, 257 <|im_start|>, 258 <|im_end|>), for generated checkpoints.
void write_byte_tokenizer(const std::string& path);

}  // namespace qgpu::chat
