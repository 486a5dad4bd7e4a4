// The subcommands of `qgpu` that need libtorch.  They live in a second
// program, qgpu-torch (tools/qgpu/torch/), beside qgpu: qgpu lists them in
// its help and runs qgpu-torch for them, so that its other subcommands start
// without loading libtorch (half a second per process).  Each name and
// description is given here once, for both programs.
#pragma once

#include <filesystem>

namespace qgpu::cli {

struct TorchCommand {
  const char* name;
  const char* description;
};

inline constexpr TorchCommand kBuildModel{"build-model", "Compile the GPU into a Qwen3.5 checkpoint directory"};
inline constexpr TorchCommand kChat{"chat", "Chat with the merged model; numbers are computed by the GPU inside it"};
inline constexpr TorchCommand kChatEval{"chat-eval",
                                        "Score the merged model on the chat fixture (normal and advanced mode)"};
inline constexpr TorchCommand kLogits{"logits",
                                      "Run a Qwen3.5 checkpoint on token ids; print the top-5 logits per position"};
inline constexpr TorchCommand kMakeBase{"make-base",
                                        "Write a Qwen3.5-2B-shaped checkpoint with random weights and trained-like "
                                        "embedding statistics (and a byte-level ChatML tokenizer)"};
inline constexpr TorchCommand kMerge{"merge", "Put a compiled circuit's layers in front of a Qwen3.5 model's layers"};
inline constexpr TorchCommand kTextKl{"text-kl",
                                      "Merge a circuit with a base and measure the next-token KL between them on text"};

inline constexpr TorchCommand kTokenize{"tokenize",
                                        "Encode a text with a tokenizer.json (a merged model's names its circuit "
                                        "tokens); print ids and pieces, or decode ids"};

inline constexpr TorchCommand kTorchCommands[] = {kBuildModel, kChat,  kChatEval, kLogits,
                                                  kMakeBase,   kMerge, kTextKl,   kTokenize};

// The directory of the running program (build/bin: qgpu, qgpu-torch,
// model_host).
inline std::filesystem::path program_dir() { return std::filesystem::read_symlink("/proc/self/exe").parent_path(); }

// qgpu-torch: beside the running program (qgpu or qgpu-torch itself).
inline std::filesystem::path torch_program() { return program_dir() / "qgpu-torch"; }

}  // namespace qgpu::cli
