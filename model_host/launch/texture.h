// Texture and surface objects: the descriptor a handle points to.
//
// A cudaTextureObject_t / cudaSurfaceObject_t (and the driver API's
// CUtexObject / CUsurfObject) is the device address of a 64-byte descriptor
// in global memory that the runtime writes when the object is created.  The
// lowering (model_host/lower/texture.cpp) and the PTX-level interpreter
// (model_host/ptx/texture_ref.cpp) read the same words, so a fetch needs no
// launch-time information.  docs/isa.md section 8.3 gives the semantics.
//
// A CUDA array is device memory in this layout: texel (x, y, z) of an array
// (z: the depth slice, the layer, or the cube face 6 * layer + face) is at
// base + z * slice_pitch + y * row_pitch + x * texel_bytes, rows packed
// (row_pitch = width * texel_bytes) and slices packed (slice_pitch =
// row_pitch * height).  Pitched linear memory has its own row pitch.
#pragma once

#include <cstdint>
#include <cstring>

namespace qgpu::launch::tex {

inline constexpr uint32_t kDescBytes = 64;

// Word indices.
enum Word : uint32_t {
  kBase = 0,        // low 32 bits of the first texel's device address
  kRowPitch = 1,    // bytes from one row to the next
  kSlicePitch = 2,  // bytes from one slice (depth, layer, face) to the next
  kWidth = 3,       // texels
  kHeight = 4,      // rows (1 for one-dimensional resources)
  kDepth = 5,       // slices: depth, layers, or 6 * layers for cube maps (1 when none)
  kWidthF = 6,      // width, height, depth as f32 (normalised coordinates scale by them)
  kHeightF = 7,
  kDepthF = 8,
  kMode = 9,        // address modes, filter, normalised coordinates (below)
  kFormat = 10,     // channels, channel size, kind (below)
  kTexelBytes = 11,
  kBorder = 12,     // 12..15: the border colour's four words
};

// kMode: bits 2k..2k+1 the address mode of axis k (x, y, z); bit 8 linear
// filtering; bit 9 normalised coordinates.  Wrap and mirror are stored only
// with normalised coordinates (CUDA clamps unnormalised ones).
enum AddressMode : uint32_t { kWrap = 0, kClamp = 1, kMirror = 2, kBorderMode = 3 };
inline constexpr uint32_t kLinear = 1u << 8, kNormalized = 1u << 9;

// kFormat: bits 0..2 the channel count (1, 2 or 4), bits 4..5 log2 of the
// channel's bytes (0, 1, 2), bits 8..10 the kind: how a channel becomes the
// value tex returns.
enum Kind : uint32_t {
  kBits = 0,      // 32-bit channels returned as they are (float, or 32-bit integers)
  kHalf = 1,      // binary16 channels, returned as f32
  kUnsigned = 2,  // 8/16-bit unsigned integers (zero-extended)
  kSigned = 3,    // 8/16-bit signed integers (sign-extended)
  kUnorm = 4,     // 8/16-bit unsigned integers read as f32 in [0, 1]: v / (2^b - 1)
  kSnorm = 5,     // 8/16-bit signed integers read as f32 in [-1, 1]: max(v / (2^(b-1) - 1), -1)
};

inline uint32_t format_word(uint32_t channels, uint32_t channel_bytes, Kind kind) {
  uint32_t lg = channel_bytes == 4 ? 2 : channel_bytes == 2 ? 1 : 0;
  return channels | (lg << 4) | (uint32_t(kind) << 8);
}

inline uint32_t f32_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

// The descriptor's words for a resource of `width` x `height` x `depth`
// texels at `base`.
struct Desc {
  uint32_t w[16] = {};
  Desc() = default;
  Desc(uint64_t base, uint32_t row_pitch, uint32_t slice_pitch, uint32_t width, uint32_t height, uint32_t depth,
       uint32_t format, uint32_t texel_bytes) {
    w[kBase] = uint32_t(base);
    w[kRowPitch] = row_pitch;
    w[kSlicePitch] = slice_pitch;
    w[kWidth] = width;
    w[kHeight] = height ? height : 1;
    w[kDepth] = depth ? depth : 1;
    w[kWidthF] = f32_bits(float(w[kWidth]));
    w[kHeightF] = f32_bits(float(w[kHeight]));
    w[kDepthF] = f32_bits(float(w[kDepth]));
    w[kFormat] = format;
    w[kTexelBytes] = texel_bytes;
  }
};

}  // namespace qgpu::launch::tex
