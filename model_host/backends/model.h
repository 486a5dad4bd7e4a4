// The model backend: kernels run on the GPU inside the compiled Qwen3.5
// checkpoint (docs/tokens.md).
//
// Per launch the host lowers the kernel for machine::model_params(), encodes
// the prompt, prefills it in one batch, then runs the plain greedy loop:
// append the argmax token, feed it back, stop at END.  After END it reads
// global memory and the printf space back from the GDN states and reports a
// TRAP or FAULT the model wrote as its CUDA error.  It never computes a
// result and never falls back to the interpreter: a kernel the model cannot
// run fails before the prompt with cudaErrorNotSupported (an operation the
// circuit lacks) or cudaErrorInvalidValue (a limit), naming it.
//
// Errors of the model backend itself (beyond the kernel's own):
//   cudaErrorLaunchTimeout (702)  the model wrote `max_tokens` tokens without END
//   cudaErrorUnknown (999)        the model wrote an id outside the circuit vocabulary,
//                                 its memory state does not decode, or (with `check`)
//                                 its trace or memory diverged from the reference
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "model_host/launch/launch.h"

namespace qgpu::qwen {
class Model;
}
namespace qgpu::gpu {
struct Layout;  // circuit.h
}

namespace qgpu::backends {

struct ModelOptions {
  // Run the reference interpreter beside the model (TraceOracle, trace.h):
  // every generated token and, after END, global memory and the printf space
  // must match; the first divergence fails the launch with a report.
  bool check = false;
  // Append one line per launch to this file: the prompt ids, " | ", the
  // generated ids, space-separated.
  std::string dump_tokens;
  uint64_t max_tokens = 5'000'000;  // generated tokens before cudaErrorLaunchTimeout
  bool dense = false;               // the dense executor instead of the sparse one
  bool memo = true;                 // the sparse executor's sublayer memo (qwen/memo.h)
  // Testing: weights changed after loading, each "NAME:INDEX:VALUE" (a
  // canonical tensor name, a flat row-major index, the new value).  Changing
  // one ALU weight must make `check` diverge: the model, not the host, computes.
  std::vector<std::string> perturb;
};

// Loads the model directory (build_model.h) once and applies `perturb`;
// throws std::runtime_error (std::invalid_argument for a malformed
// perturbation) naming what is wrong.
std::unique_ptr<launch::Backend> make_model_backend(const std::string& dir, const ModelOptions& options = {});

// A backend on a model already loaded, shared with its other users (a merged
// model that also chats); `perturb` and `dense` are not applied.
std::unique_ptr<launch::Backend> make_model_backend(std::shared_ptr<const qwen::Model> model, gpu::Layout layout,
                                                    const ModelOptions& options = {});

}  // namespace qgpu::backends
