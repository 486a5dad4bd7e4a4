// Hugging Face-layout Qwen3.5 checkpoints: config.json plus safetensors
// (one file or shards with model.safetensors.index.json), in bf16, fp16 or
// fp32, tensors under "model." (text-only) or "model.language_model."
// (vision-language).  In memory every tensor is fp32 and named without the
// prefix (see TensorMap).
//
// Sparse side file.  Compiled circuit checkpoints are almost all zeros, so
// save() also writes `qgpu-sparse.bin` next to the safetensors, and load()
// reads it instead of the safetensors when it is present and up to date.
// Format (little endian):
//   "QGPUSPR1"                                  magic, 8 bytes
//   u64 config_json_len, config_json bytes      the config.json text it was made with
//   u64 stamp_count, then per safetensors file: u64 name_len, name, u64 size, i64 mtime_ns
//   u64 tensor_count, then per tensor:
//     u64 name_len, name; u32 ndim; i64 dims[ndim]
//     u64 nnz; u64 flat_index[nnz]; f32 value[nnz]   (ascending flat row-major index)
// "Up to date" means: the stored config text equals config.json and every
// stamped safetensors file still has the stored size and mtime.  The side file
// holds the values in fp32, so it reproduces exactly what the safetensors hold.
//
// Compact form.  save_compact() writes config.json and the side file only,
// with an empty stamp list: no safetensors at all, so a circuit checkpoint of
// many GB of zeros costs only its non-zero values on disk.  load() accepts such
// a directory: with no safetensors files present, a side file whose stamp list
// is empty and whose config text matches is up to date.  Its bytes depend only
// on the checkpoint (no file times), so equal checkpoints give equal files.
#pragma once

#include "model_host/qwen/config.h"

#include <torch/types.h>

#include <filesystem>
#include <map>
#include <stdexcept>
#include <string>

namespace qgpu::qwen {

// Canonical, prefix-free tensor names: "embed_tokens.weight", "norm.weight",
// "lm_head.weight" (absent when tied), "layers.N.input_layernorm.weight",
// "layers.N.post_attention_layernorm.weight",
// "layers.N.linear_attn.{in_proj_qkv,in_proj_z,in_proj_b,in_proj_a,conv1d,out_proj}.weight",
// "layers.N.linear_attn.{A_log,dt_bias,norm.weight}",
// "layers.N.mlp.{gate,up,down}_proj.weight",
// "layers.N.self_attn.{q_proj,k_proj,v_proj,o_proj,q_norm,k_norm}.weight".
// Shapes as in HF: Linear weights [out, in], conv1d [channels, 1, kernel].
using TensorMap = std::map<std::string, torch::Tensor>;

// A zero-filled fp32 tensor backed by anonymous memory: pages that are never
// written take no memory, so a mostly-zero circuit checkpoint of many GB costs
// only its non-zero pages.  The sparse side-file loader builds tensors this way.
torch::Tensor lazy_zeros(c10::IntArrayRef shape);

// Per page of the pages that [data, data + bytes) overlaps: false when the
// page is known to read as zero without reading it, true when it may hold
// anything.  A page of a private anonymous mapping that is neither present
// nor swapped out (/proc/self/pagemap) has never been written since it was
// mapped (or was discarded), so it reads as zero; lazy_zeros memory is
// such a mapping.  (A userfaultfd region would break this; the runtime
// registers none.)  When pagemap cannot be read every page may hold anything.
std::vector<bool> written_pages(const void* data, size_t bytes);

// The non-zero entries of a contiguous fp32 tensor (as nonzero() counts
// them: -0 is zero), by flat index in increasing order, reading only pages
// that were ever written (written_pages): a lazily zero-filled tensor's
// other pages stay unread and take no memory.
struct NonZeros {
  std::vector<int64_t> index;
  std::vector<float> value;
};
// A sparse tensor's entries come from its indices (coalesced first).
NonZeros written_nonzeros(const torch::Tensor& t);
// f(row, col, value) for every non-zero entry of a sparse COO matrix (the
// only sparse tensors here, Storage::Sparse), in row-major order, straight
// from its indices.
template <class F>
void for_each_entry(const torch::Tensor& sparse, F&& f) {
  if (!sparse.is_sparse() || sparse.dim() != 2) throw std::invalid_argument("for_each_entry: not a sparse matrix");
  const torch::Tensor c = sparse.coalesce();
  const torch::Tensor idx = c.indices().to(torch::kInt64).contiguous(), val = c.values().to(torch::kFloat32).contiguous();
  const int64_t n = val.numel();
  const int64_t* ix = idx.data_ptr<int64_t>();
  const float* v = val.data_ptr<float>();
  for (int64_t i = 0; i < n; ++i)
    if (v[i] != 0.0f) f(ix[i], ix[n + i], v[i]);
}

// How Checkpoint::load holds the matrices it reads from a side file.
//   Dense   every tensor dense fp32 (lazily zero-filled from the side file).
//   Sparse  the large 2-D ones as coalesced sparse COO tensors (at least
//           kSparseMinElements entries, at most half of them non-zero), which
//           qwen::Matrix reads as they are: loading a compiled GPU then never
//           touches the pages of its mostly zero matrices (the dense form
//           makes about 4 GB of them resident, most of the load time).
//           Whoever needs one of them dense calls dense().
// Tensors read from safetensors are always dense.
enum class Storage { Dense, Sparse };
inline constexpr int64_t kSparseMinElements = int64_t{1} << 20;

// `t` itself when it is dense; a sparse `t` as a lazily zero-filled dense tensor.
torch::Tensor dense(const torch::Tensor& t);
// A coalesced sparse COO fp32 matrix of `rows` x `cols` with the entries of
// `nz` (flat row-major indices, strictly increasing).
torch::Tensor sparse_matrix(int64_t rows, int64_t cols, const NonZeros& nz);

struct Checkpoint {
  Config config;
  TensorMap tensors;

  // Reads `dir` (config.json + safetensors, or the sparse side file when it
  // is up to date), its large matrices held as `storage` says.  Throws
  // std::runtime_error naming the file and tensor at fault.
  static Checkpoint load(const std::string& dir, Storage storage = Storage::Dense);
  // Writes config.json (text layout), model.safetensors (names under
  // "model."; "lm_head.weight" at top level) in `dtype`, and the sparse side
  // file.  Creates `dir` if needed.
  void save(const std::string& dir, torch::ScalarType dtype = torch::kFloat32) const;
  // Writes the compact form (config.json, fp32, and the side file; see above)
  // and removes safetensors a previous save() left in `dir`.
  void save_compact(const std::string& dir) const;

  // Checks that every tensor the config requires is present with its HF
  // shape; throws std::runtime_error naming the first problem.
  void validate() const;
};

// Files of a model directory, shared by everything that reads or writes one.
// The whole file as text; throws std::runtime_error naming the file.
std::string read_text_file(const std::filesystem::path& p);
// Replaces the file with `text`; throws std::runtime_error naming the file.
void write_text_file(const std::filesystem::path& p, const std::string& text);
// The safetensors files of a checkpoint directory: the shards its
// model.safetensors.index.json names, else every *.safetensors, sorted by
// name; none for a compact checkpoint.
std::vector<std::filesystem::path> safetensors_files(const std::filesystem::path& dir);

}  // namespace qgpu::qwen
