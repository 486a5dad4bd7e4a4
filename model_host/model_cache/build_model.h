// The compiled GPU on disk: writing a model directory (model_dir.h describes
// its files and the cache) and loading one, and building the cache's model
// when it is missing.
#pragma once

#include "model_host/machine_circuit/circuit.h"
#include "model_host/model_cache/model_dir.h"

#include <string>

namespace qgpu::gpu {

// Writes a built GPU into `dir` (created if needed) in `format`.
// Deterministic: the same Built gives the same bytes, except that the Full
// format's side file records the safetensors' modification time.
void save_model(const Built& built, const std::string& dir, ModelFormat format, const Progress& progress = {});

// Compiles the GPU (build()) and saves it; reports each phase and its time to
// `progress`.  Returns the compiler's report (its budget table).
std::string write_model(const std::string& dir, ModelFormat format, const Progress& progress);

// A model directory loaded: the checkpoint (fp32) and its layout.  Throws
// std::runtime_error naming the directory and the file at fault, or the two
// versions when another circuit version compiled it.  `storage`: as
// qwen::Checkpoint::load holds the large matrices (Sparse for a model that is
// run or merged, Dense for code that edits or scans the tensors densely).
struct LoadedModel {
  qwen::Checkpoint checkpoint;
  Layout layout;
};
LoadedModel load_model(const std::string& dir, qwen::Storage storage = qwen::Storage::Dense);

// model_dir.h's ensure_model, compiling the GPU in this process (write_model,
// the Compact format) and reporting each phase to `progress`.
void ensure_model(const std::string& dir, const Progress& progress);

}  // namespace qgpu::gpu
