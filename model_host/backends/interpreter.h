// The reference-interpreter backend: the machine (model_host/machine) run
// on the host, on the default machine's CUDA-sized device or on the model's.
#pragma once

#include <cstdint>
#include <memory>

#include "model_host/launch/launch.h"
#include "model_host/machine/api.h"

namespace qgpu::backends {

// Which machine the interpreter backend runs: the default machine
// (backend "interpreter"), or the model's machine (model_params(), lowered
// with LowerOptions::for_model; backend "interpreter-model"), which runs
// exactly the programs and schedule the model backend runs, on the
// interpreter.
enum class MachineKind { Default, Model };

// The reference machine.  Lowers the kernel (cached per module), runs it
// deterministically, and fails a launch it cannot run with a CUDA error whose
// message names the instruction or limit.
// `global_bytes` sizes the default machine's device (the model's is fixed).
std::unique_ptr<launch::Backend> make_interpreter_backend(MachineKind machine = MachineKind::Default,
                                                          uint64_t global_bytes = machine::kDefaultDeviceMemory);

}  // namespace qgpu::backends
