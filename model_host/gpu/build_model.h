// The compiled GPU on disk: a model directory, and the cache the daemon uses
// when no directory is named.
//
// A model directory holds
//   config.json        the Qwen3.5 configuration (HF layout, every layer linear attention)
//   qgpu-gpu.json      the Layout: where the memories the host reads back live
//   qgpu-sparse.bin    the checkpoint's non-zero weights (qwen::Checkpoint's side file)
//   model.safetensors  the full fp32 checkpoint, in the Full format only
// The Compact format leaves out the safetensors (gigabytes of zeros), so a
// first run builds and loads it in seconds; both load the same weights.
// qgpu-gpu.json is written last: a directory without it is incomplete.
#pragma once

#include "model_host/gpu/circuit.h"

#include <functional>
#include <string>

namespace qgpu::gpu {

enum class ModelFormat { Full, Compact };

inline constexpr char kLayoutFile[] = "qgpu-gpu.json";

using Progress = std::function<void(const std::string&)>;

// The version of the circuit this build compiles: 16 hex digits of a hash of
// the sources that determine the weights.  save_model records it in the
// layout; a model directory of another version is not complete, and
// load_model refuses it.
std::string circuit_version();

// Writes a built GPU into `dir` (created if needed) in `format`.
// Deterministic: the same Built gives the same bytes, except that the Full
// format's side file records the safetensors' modification time.
void save_model(const Built& built, const std::string& dir, ModelFormat format, const Progress& progress = {});

// Compiles the GPU (build()) and saves it; reports each phase and its time to
// `progress`.  Returns the compiler's report (its budget table).
std::string write_model(const std::string& dir, ModelFormat format, const Progress& progress);

// Whether `dir` holds a complete model in `format`, compiled by this
// circuit version; a Full model is also a complete Compact one.
bool model_complete(const std::string& dir, ModelFormat format);

// A model directory loaded: the checkpoint (fp32) and its layout.  Throws
// std::runtime_error naming the directory and the file at fault, or the two
// versions when another circuit version compiled it.
struct LoadedModel {
  qwen::Checkpoint checkpoint;
  Layout layout;
};
LoadedModel load_model(const std::string& dir);

// The model cache: $QGPU_MODEL_DIR when set, else
// $XDG_CACHE_HOME/qgpu/model-<circuit hash> ($XDG_CACHE_HOME defaults to
// ~/.cache).  The hash covers the sources that determine the weights, so a
// changed circuit gets a new directory instead of a stale model; writing a
// model there (write_model) removes the models of other versions beside it.
std::string default_model_dir();

// Makes sure `dir` holds a complete model: when it does not, compiles the GPU
// and writes the Compact format there, reporting each phase to `progress`.
// Concurrent callers build once (a lock file beside `dir`).  Refuses (throws)
// to write into a non-empty directory that holds files a model does not have.
void ensure_model(const std::string& dir, const Progress& progress);

}  // namespace qgpu::gpu
