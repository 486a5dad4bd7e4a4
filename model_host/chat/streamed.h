// A checkpoint evaluated one layer at a time, straight from its files
// (docs/merge.md section 4): the merged model at Qwen3.5's full vocabulary
// holds a 929,609-row embedding and LM head and a circuit shard of many GB
// of zeros, more than a machine's memory as one qwen::Model.  Here only one
// decoder layer's weights are in memory at a time (read from the safetensors
// into fp32, each in the dtype it is stored in), every position goes
// through it, and it is released; the LM head is read in blocks of rows.
// Every number is the one qwen::Model computes on the whole checkpoint:
// a layer is a one-layer Model fed the previous layer's residual
// (Model::forward_residual), and the head's blocks are Matrix products of the
// final-normed states, whose rows the lane scheme computes independently.
#pragma once

#include "model_host/chat/text_kl.h"
#include "model_host/qwen/model.h"

#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace qgpu::chat {

// The tensors of a checkpoint directory's safetensors files (single or
// sharded), by canonical name (checkpoint.h; "model." and
// "model.language_model." prefixes dropped, the vision tower and MTP
// tensors left out), read on demand with pread: nothing stays mapped, so
// only what a caller keeps takes memory.
class CheckpointFiles {
 public:
  explicit CheckpointFiles(const std::string& dir);
  const qwen::Config& config() const { return config_; }
  bool has(const std::string& name) const { return entries_.count(name) != 0; }
  std::vector<int64_t> shape(const std::string& name) const;
  torch::ScalarType stored_dtype(const std::string& name) const;
  // The whole tensor, fp32 (F16 and BF16 values are exact in fp32).
  torch::Tensor read(const std::string& name) const;
  // Rows [first, first + count) of a tensor (along its first dimension), fp32.
  torch::Tensor read_rows(const std::string& name, int64_t first, int64_t count) const;
  // Canonical names under "layers.N.".
  std::vector<std::string> layer_tensors(int layer) const;

 private:
  struct Entry {
    std::filesystem::path file;
    torch::ScalarType dtype;
    std::vector<int64_t> shape;
    uint64_t offset;  // of the tensor's bytes in the file
  };
  const Entry& entry(const std::string& name) const;
  std::filesystem::path dir_;
  qwen::Config config_;
  std::map<std::string, Entry> entries_;
};

// The final-normed hidden states [T, hidden] of each sequence (from a fresh
// state), computed one layer at a time; `progress(layer, layers)` after each.
std::vector<torch::Tensor> streamed_final_states(const CheckpointFiles& files,
                                                 const std::vector<std::vector<int64_t>>& seqs,
                                                 const std::function<void(int, int)>& progress = {});
// The logits of the LM head's rows [first, first + count) for the stacked
// final states `hidden` [P, hidden]: [P, count].
torch::Tensor streamed_head_logits(const CheckpointFiles& files, const torch::Tensor& hidden, int64_t first,
                                   int64_t count);

// KL(base || merged) and the mass of the ids past the base's at text
// positions, with the merged model's logits computed block by block of LM-head
// rows (`block_rows`): base-id blocks compared bit for bit with the base's,
// per-position log-partitions accumulated across blocks; no [positions x
// merged vocabulary] matrix is formed.  The base's logits are formed per
// sequence for its confidence figures.
KlResult compare_streamed(const CheckpointFiles& base, const CheckpointFiles& merged,
                          const std::vector<std::vector<int64_t>>& seqs, int64_t block_rows = 16384,
                          const std::function<void(const std::string&)>& progress = {});

}  // namespace qgpu::chat
