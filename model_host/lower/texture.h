// Texture fetches and surface accesses as machine code (docs/isa.md section
// 8.3): tex, suld.b and sust.b read the object's descriptor
// (model_host/launch/texture.h) from global memory and compute the fetch
// with the machine's integer operations and the software floating point of
// softfloat.h (or the machine's native float operations, isa.h's OpKind::Float).  The lowering passes its own emission; a fetch branches on
// the descriptor's uniform fields (filter, address modes, format) so that a
// warp runs only the path its texture takes.
#pragma once

#include <array>
#include <cstdint>
#include <functional>

#include "model_host/lower/softfloat.h"
#include "model_host/machine/float_eval.h"
#include "model_host/ptx/ir.h"

namespace qgpu::machine::texture {

struct Emitter {
  softfloat::Emit alu;                                          // one ALU operation
  std::function<Operand(Operand addr, uint32_t bytes)> load;    // global load at [addr], zero-extended
  std::function<void(Operand addr, uint32_t bytes, Operand v)> store;  // global store
  std::function<uint32_t()> label;                              // a new label
  std::function<void(uint32_t)> place;                          // the label is here
  std::function<void(uint32_t)> jmp;
  std::function<void(Operand cond, uint32_t t, uint32_t f)> br;
  std::function<void(uint32_t code)> trap;                      // the launch stops with error `code`
  std::function<uint32_t()> var;                                // a register assigned on several paths
  std::function<void(uint32_t var, Operand v)> set;
  // A native float operation (isa.h, OpKind::Float), set for a machine that has
  // them: the fetch's f32 arithmetic then uses them instead of softfloat.h.
  std::function<Operand(Op, const FloatMod&, Operand a, Operand b)> fnative;
};

// tex.GEOM.v4.{f32,s32,u32}.{f32,s32}: `desc` the descriptor's address,
// `c` the coordinate vector (f32 bits, or s32 with `int_coords`).
std::array<Operand, 4> tex(Emitter& e, Operand desc, ptx::TexGeom g, bool int_coords, const std::array<Operand, 4>& c,
                           bool int_result);

// The address of a surface access of `bytes` bytes at `c` (x in bytes);
// mode 0 .trap (out of range traps), 1 .clamp, 2 .zero.  For .zero, `ok`
// is set to 0 when out of range (the address is then clamped: loads read
// there and are replaced by 0, stores are skipped by the caller).
Operand surface_address(Emitter& e, Operand desc, ptx::TexGeom g, const std::array<Operand, 4>& c, uint32_t bytes,
                        int mode, Operand& ok);

}  // namespace qgpu::machine::texture
