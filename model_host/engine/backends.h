// Backend selection by name.  "model" is the GPU inside the Qwen3.5
// checkpoint (not built yet); "interpreter" is the reference machine and the
// default until the model backend exists.  "ptx-reference" runs the PTX
// itself on the PTX-level interpreter, for tests that cross-check the machine.
#pragma once

#include <memory>
#include <stdexcept>
#include <string>

#include "model_host/engine/backend.h"

namespace qgpu::engine {

struct BackendUnavailable : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The backend used when none is named.
std::string default_backend();

// Creates the named backend; throws BackendUnavailable naming what is
// missing (an unknown name, or a backend this build does not have yet).
std::unique_ptr<Backend> make_backend(const std::string& name);

std::unique_ptr<Backend> make_ptx_reference_backend();

// What device queries call the device a backend runs on.
std::string device_name(const std::string& backend);

}  // namespace qgpu::engine
