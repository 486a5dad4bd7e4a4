// Backend selection by name.  "model" (the default) is the GPU inside the
// compiled Qwen3.5 checkpoint; "interpreter" is the reference machine.
// "interpreter-model" is the interpreter running the model's machine (one
// lane, one instruction per block, the model lowering).  "ptx-reference" runs
// the PTX itself on the PTX-level interpreter, for tests that cross-check the
// machine.
#pragma once

#include <functional>
#include <memory>
#include <stdexcept>
#include <string>

#include "model_host/launch/launch.h"
#include "model_host/backends/model.h"

namespace qgpu::backends {

using namespace qgpu::launch;  // every backend speaks the launch contract

struct BackendUnavailable : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// What a backend is made from: the model backend's checkpoint and options,
// the CUDA-sized device's memory.
struct BackendOptions {
  // The compiled checkpoint (model_cache/build_model.h); empty: the model cache,
  // built there on first use.
  std::string model_dir;
  backends::ModelOptions model;
  // Receives the progress of a first-use build.
  std::function<void(const std::string&)> progress;
  // Global memory of the CUDA-sized device ("interpreter", "ptx-reference"):
  // model_host --device-memory, $QGPU_DEVICE_MEMORY, 2 GiB by default.  The
  // model's device is fixed.
  uint64_t device_memory = 2ull << 30;
};

// The backend used when none is named: $QGPU_BACKEND when set, else "model".
std::string default_backend();

// What the daemon needs to know of a backend before making it, so that it
// never compares names: whether BackendOptions::device_memory sizes its
// device, whether it runs the compiled checkpoint (slow to load: the daemon
// serves clients meanwhile, and the checkpoint's layout fixes the device's
// global memory), and whether it writes the token dump (ModelOptions::dump_tokens).
struct BackendTraits {
  bool sized_device = false;
  bool runs_checkpoint = false;
  bool dumps_tokens = false;
};
// Throws BackendUnavailable for an unknown name (as make_backend does).
BackendTraits backend_traits(const std::string& name);

// Creates the named backend; throws BackendUnavailable naming what is
// missing (an unknown name, a backend this build does not have), or
// std::runtime_error when the model cannot be loaded.
std::unique_ptr<Backend> make_backend(const std::string& name, const BackendOptions& options = {});

std::unique_ptr<Backend> make_ptx_reference_backend(uint64_t device_memory = 2ull << 30);

}  // namespace qgpu::backends
