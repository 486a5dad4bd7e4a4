// The compiled GPU's model directory and the model cache, without libtorch:
// what a program needs to find a model and tell whether it is complete
// (`qgpu run` checks the cache at every start) without loading the runtime
// that builds and loads one (build_model.h).
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

#include "model_host/machine_circuit/layout_format.h"   // kLayoutFormat

#include <functional>
#include <string>

namespace qgpu::gpu {

enum class ModelFormat { Full, Compact };

inline constexpr char kConfigFile[] = "config.json";
inline constexpr char kLayoutFile[] = "qgpu-gpu.json";
inline constexpr char kSideFile[] = "qgpu-sparse.bin";
inline constexpr char kSafetensors[] = "model.safetensors";

using Progress = std::function<void(const std::string&)>;

// The version of the circuit this build compiles: 16 hex digits of a hash of
// the sources that determine the weights.  save_model records it in the
// layout; a model directory of another version is not complete, and
// load_model refuses it.
std::string circuit_version();

// Whether `dir` holds a complete model in `format`, compiled by this
// circuit version; a Full model is also a complete Compact one.
bool model_complete(const std::string& dir, ModelFormat format);

// The model cache: $QGPU_MODEL_DIR when set, else
// $XDG_CACHE_HOME/qgpu/model-<circuit hash> ($XDG_CACHE_HOME defaults to
// ~/.cache).  The hash covers the sources that determine the weights, so a
// changed circuit gets a new directory instead of a stale model; writing a
// model there (write_model) removes the models of other versions beside it.
std::string default_model_dir();

// After a model was written into `written`: when that is the cache
// ($QGPU_MODEL_DIR unset), the models of other circuit versions beside it
// are stale (a full one holds gigabytes), and are removed.
void prune_cache(const std::string& written, const Progress& progress);

// Makes sure `dir` holds a complete model: when it does not, calls
// `write(dir)`, which writes the Compact format there (build_model.h's
// ensure_model compiles it in this process; `qgpu run` in qgpu-torch).
// Concurrent callers build once (a lock file beside `dir`).  Refuses (throws)
// to write into a non-empty directory that holds files a model does not have.
void ensure_model(const std::string& dir, const Progress& progress,
                  const std::function<void(const std::string& dir)>& write);

}  // namespace qgpu::gpu
