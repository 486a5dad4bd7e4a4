// The "model-trace" backend (trace_backend.cpp): launches lowered and encoded
// for the model, their trace and memory from the reference interpreter, their
// statistics (prompt and generated tokens, steps) those of the model.
#pragma once

#include <cstdint>
#include <memory>

#include "model_host/engine/backend.h"

namespace qgpu::gpu {

std::unique_ptr<engine::Backend> make_trace_backend(uint64_t max_steps = 100'000'000);

}  // namespace qgpu::gpu
