// The safetensors file format: an 8-byte little-endian header length, a JSON
// header {name: {dtype, shape, data_offsets: [begin, end]}, "__metadata__": {...}},
// then the raw little-endian tensor bytes.
#pragma once

#include <torch/types.h>

#include <functional>
#include <map>
#include <string>

namespace qgpu::qwen::safetensors {

// Calls `visit(name, tensor)` for every tensor in `path`, upcast to fp32
// (F32, F16 and BF16 are accepted).  The tensor owns its memory.  Throws
// std::runtime_error naming the file and the tensor when the file is malformed.
void read(const std::string& path, const std::function<void(const std::string&, torch::Tensor)>& visit);

// Writes `tensors` (any floating dtype in memory) to `path` as `dtype`
// (kFloat32, kFloat16 or kBFloat16), names in ascending order.
void write(const std::string& path, const std::map<std::string, torch::Tensor>& tensors,
           torch::ScalarType dtype);

}  // namespace qgpu::qwen::safetensors
