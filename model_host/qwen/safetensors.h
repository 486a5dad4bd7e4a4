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
// The same, also telling the dtype each tensor is stored in (the tensor is
// still fp32: converting it back to that dtype gives the stored bytes, since
// F16 and BF16 values are exact in fp32).
void read(const std::string& path,
          const std::function<void(const std::string&, torch::Tensor, torch::ScalarType stored)>& visit);

// Writes `tensors` (any floating dtype in memory) to `path` as `dtype`
// (kFloat32, kFloat16 or kBFloat16), names in ascending order.
void write(const std::string& path, const std::map<std::string, torch::Tensor>& tensors,
           torch::ScalarType dtype);
// The same, a tensor named in `stored` written in the dtype given there
// instead of `dtype` (a checkpoint of mixed dtypes written back as it was).
void write(const std::string& path, const std::map<std::string, torch::Tensor>& tensors,
           torch::ScalarType dtype, const std::map<std::string, torch::ScalarType>& stored);

// The same, each tensor given as parts stacked along their first dimension
// (equal trailing shapes): a matrix written without ever being formed whole
// (the merged vocabulary: the base's rows, then a sparse block of the rest).
// Tensors are converted and written one at a time, in blocks of rows, so
// writing takes little memory beyond the tensors themselves; pages of a
// lazily zero-filled tensor that were never written are written as zeros
// without being read.
void write_parts(const std::string& path, const std::map<std::string, std::vector<torch::Tensor>>& tensors,
                 torch::ScalarType dtype, const std::map<std::string, torch::ScalarType>& stored);

// Bytes per element of a dtype this format stores (F32, F16, BF16).
int64_t element_bytes(torch::ScalarType dtype);

}  // namespace qgpu::qwen::safetensors
