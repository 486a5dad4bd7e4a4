// The format name of a Layout's JSON (Layout::to_json writes it,
// Layout::from_json and model_cache's model_complete check it), without
// libtorch.
#pragma once

namespace qgpu::gpu {

// The layout file's "format".
inline constexpr char kLayoutFormat[] = "qgpu-gpu-layout-1";

}  // namespace qgpu::gpu
