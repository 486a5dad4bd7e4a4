#include "model_host/engine/backends.h"

#include <cstdlib>

#include "model_host/machine/api.h"
#ifdef QGPU_HAVE_MODEL_BACKEND
#include "model_host/gpu/build_model.h"
#endif

namespace qgpu::engine {

std::string default_backend() {
  const char* env = std::getenv("QGPU_BACKEND");
  return env && *env ? env : "model";
}

std::unique_ptr<Backend> make_backend(const std::string& name, const BackendOptions& options) {
  if (name == "interpreter") return machine::make_interpreter_backend();
  if (name == "interpreter-model") return machine::make_interpreter_backend(machine::MachineKind::Model);
  if (name == "ptx-reference") return make_ptx_reference_backend();
  if (name == "model") {
#ifdef QGPU_HAVE_MODEL_BACKEND
    std::string dir = options.model_dir;
    if (dir.empty()) {
      dir = gpu::default_model_dir();
      gpu::ensure_model(dir, options.progress);
    }
    return gpu::make_model_backend(dir, options.model);
#else
    (void)options;
    throw BackendUnavailable("this build has no model backend (configured without libtorch: QGPU_WITH_TORCH=OFF); "
                             "use --backend interpreter");
#endif
  }
  throw BackendUnavailable("unknown backend '" + name +
                           "' (choose model or interpreter; interpreter-model or ptx-reference for cross-checks)");
}

std::string device_name(const std::string& backend) {
  return backend == "model" ? "qgpu (Qwen3.5 model)" : "qgpu (" + backend + ")";
}

}  // namespace qgpu::engine
