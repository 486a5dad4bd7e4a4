// Texture fetches and surface accesses on the host: the reference for the
// lowering's machine code (docs/isa.md section 8.3).  Written from the
// definitions there with the host's arithmetic (float_ref for the f32
// operations), independently of model_host/lower/texture.cpp.
#pragma once

#include <array>
#include <cstdint>
#include <functional>

#include "model_host/ptx/ir.h"

namespace qgpu::ptx::texref {

using Geom = TexGeom;

// Reads `bytes` (1, 2 or 4) of device memory at a device address, zero-extended.
using Load = std::function<uint32_t(uint64_t addr, uint32_t bytes)>;

// tex.GEOM.v4.RT.CT: `desc` the descriptor's 16 words, `c` the coordinate
// vector's words (f32 bits, or s32 when `int_coords`), `int_result` for
// .s32/.u32 results.  Returns the four result words.
std::array<uint32_t, 4> tex(const uint32_t desc[16], Geom g, bool int_coords, const uint32_t c[4], bool int_result,
                            const Load& load);

// The byte address of a surface access of `bytes` bytes at coordinates `c`
// (x in bytes), or, out of range: clamped (mode 1) or none (returns false;
// mode 0 trap, mode 2 zero leave the caller to trap or to read 0 / drop the store).
bool surface_address(const uint32_t desc[16], Geom g, const uint32_t c[4], uint32_t bytes, int mode, uint64_t& addr);

}  // namespace qgpu::ptx::texref
