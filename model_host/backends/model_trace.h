// The "model-trace" backend (trace_backend.cpp): launches lowered and encoded
// for the model, their trace and memory from the reference interpreter, their
// statistics (prompt and generated tokens, steps) those of the model.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "model_host/launch/launch.h"

namespace qgpu::backends {

// With `dump_tokens`, each launch appends its line to that file as the model
// backend's --dump-tokens does (dump_line in trace.h).
std::unique_ptr<launch::Backend> make_trace_backend(const std::string& dump_tokens = {},
                                                    uint64_t max_steps = 100'000'000);

}  // namespace qgpu::backends
