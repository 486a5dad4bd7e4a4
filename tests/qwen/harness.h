// Shared helpers for the Qwen3.5 runtime tests: scratch directories and the
// Python reference (reference.py), which writes random checkpoints and the
// logits and GDN states it computes for them.
#pragma once

#include "build_paths.h"   // qgpu_paths() in CMakeLists.txt

#include "model_host/qwen/checkpoint.h"

#include <gtest/gtest.h>
#include <torch/types.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>
#include <vector>

namespace qwen_test {

// A fresh directory under the test temp dir, removed with everything in it
// (checkpoints at 2B widths are hundreds of MB) when the test ends.
class Scratch {
 public:
  explicit Scratch(const std::string& name)
      : path_((std::filesystem::path(testing::TempDir()) / ("qwen_" + name + "_" + std::to_string(::getpid()))).string()) {
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~Scratch() { std::filesystem::remove_all(path_); }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  // A path inside the directory.
  std::string operator/(const std::string& name) const { return path_ + "/" + name; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

inline void python(const std::string& script, const std::string& args) {
  const std::string cmd = "/usr/bin/python3 " + script + " " + args;
  ASSERT_EQ(std::system(cmd.c_str()), 0) << "failed: " << cmd;
}

inline std::string join(const std::vector<int64_t>& tokens) {
  std::string s;
  for (auto t : tokens) s += (s.empty() ? "" : " ") + std::to_string(t);
  return s;
}

// What the reference computed, token by token.
struct Expected {
  torch::Tensor logits;                              // [T, vocab]
  std::vector<std::vector<torch::Tensor>> states;    // [token][linear layer] -> [heads, dk, dv]
};

// Makes a checkpoint in `dir` with reference.py's `make` flags and runs the
// reference on `tokens`.
inline Expected make_reference(const std::string& dir, const std::string& flags, const std::vector<int64_t>& tokens) {
  const std::string out = dir + ".expected";
  python(QWEN_REFERENCE_PY, "make " + dir + " " + flags + " --tokens \"" + join(tokens) + "\" --out " + out);
  auto ck = qgpu::qwen::Checkpoint::load(dir);
  const auto& c = ck.config;
  std::ifstream in(out, std::ios::binary);
  auto read = [&](std::vector<int64_t> shape) {
    auto t = torch::empty(shape, torch::kFloat32);
    in.read(static_cast<char*>(t.data_ptr()), t.numel() * 4);
    return t;
  };
  Expected e;
  const auto T = static_cast<int64_t>(tokens.size());
  e.logits = read({T, c.vocab_size});
  for (int64_t t = 0; t < T; ++t) {
    e.states.emplace_back();
    for (int64_t l = 0; l < c.num_hidden_layers; ++l)
      if (!c.is_full_attention(static_cast<int>(l)))
        e.states.back().push_back(
            read({c.linear_num_value_heads, c.linear_key_head_dim, c.linear_value_head_dim}));
  }
  EXPECT_TRUE(in.good()) << "reference output " << out << " is shorter than expected";
  return e;
}

inline double max_abs_diff(const torch::Tensor& a, const torch::Tensor& b) {
  return (a - b).abs().max().item<double>();
}

}  // namespace qwen_test
