#include "model_host/backends/registry.h"

#include <dlfcn.h>

#include <cstdlib>

#include "model_host/backends/interpreter.h"
#include "model_host/backends/model_trace.h"
#include "model_host/machine/api.h"

#ifdef QGPU_HAVE_MODEL_BACKEND
#include "build_paths.h"   // QGPU_GPU_LIBRARY: qgpu_paths() in CMakeLists.txt
#endif

namespace qgpu::backends {

std::string default_backend() {
  const char* env = std::getenv("QGPU_BACKEND");
  return env && *env ? env : "model";
}

namespace {
const char kChoices[] = "choose model or interpreter; interpreter-model, model-trace or ptx-reference for cross-checks";
}  // namespace

BackendTraits backend_traits(const std::string& name) {
  if (name == "interpreter" || name == "ptx-reference") return {.sized_device = true};
  if (name == "interpreter-model") return {};
  if (name == "model-trace") return {.dumps_tokens = true};
  if (name == "model") return {.runs_checkpoint = true, .dumps_tokens = true};
  throw BackendUnavailable("unknown backend '" + name + "' (" + kChoices + ")");
}

std::unique_ptr<Backend> make_backend(const std::string& name, const BackendOptions& options) {
  if (name == "interpreter")
    return backends::make_interpreter_backend(backends::MachineKind::Default, options.device_memory);
  if (name == "interpreter-model") return backends::make_interpreter_backend(backends::MachineKind::Model);
  if (name == "ptx-reference") return make_ptx_reference_backend(options.device_memory);
  if (name == "model-trace") return backends::make_trace_backend(options.model.dump_tokens);
  if (name == "model") {
#ifdef QGPU_HAVE_MODEL_BACKEND
    // The model backend's library (and with it libtorch) is loaded here, once per process.
    void* lib = dlopen(QGPU_GPU_LIBRARY, RTLD_NOW | RTLD_GLOBAL);
    if (!lib) throw BackendUnavailable(std::string("the model backend's library did not load: ") + dlerror());
    using Make = Backend* (*)(const BackendOptions&);
    auto make = reinterpret_cast<Make>(dlsym(lib, "qgpu_make_model_backend"));
    if (!make) throw BackendUnavailable(std::string(QGPU_GPU_LIBRARY) + " has no qgpu_make_model_backend");
    return std::unique_ptr<Backend>(make(options));
#else
    (void)options;
    throw BackendUnavailable("this build has no model backend (configured without libtorch: QGPU_WITH_TORCH=OFF); "
                             "use --backend interpreter");
#endif
  }
  throw BackendUnavailable("unknown backend '" + name + "' (" + kChoices + ")");
}

}  // namespace qgpu::backends
