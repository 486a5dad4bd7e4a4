#include "model_host/engine/backends.h"

#include "model_host/machine/api.h"

namespace qgpu::engine {

std::string default_backend() { return "interpreter"; }

std::unique_ptr<Backend> make_backend(const std::string& name) {
  if (name == "interpreter") return machine::make_interpreter_backend();
  if (name == "ptx-reference") return make_ptx_reference_backend();
  if (name == "model")
    throw BackendUnavailable(
        "the model backend (the GPU inside the Qwen3.5 checkpoint) is not available yet; "
        "use --backend interpreter");
  throw BackendUnavailable("unknown backend '" + name + "' (choose model or interpreter; ptx-reference for cross-checks)");
}

std::string device_name(const std::string& backend) {
  return backend == "model" ? "qgpu (Qwen3.5 model)" : "qgpu (" + backend + ")";
}

}  // namespace qgpu::engine
