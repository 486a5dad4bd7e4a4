// The machine's native floating-point operations (docs/isa.md, section 3.5):
// an optional family of f32 operations that a machine declaring
// `Features::native_float` executes in one instruction each, where the
// others run the lowering's integer sequences (model_host/lower/softfloat.h).
//
// isa.h is the definition the model's circuit is compiled from, and the
// compiled model's version is a hash of it (cmake/circuit_version.cmake), so
// this family lives beside it without changing it: the float operations are
// Op values from kFloatOpBase up, past isa.h's table and past every value
// the model's token vocabulary encodes; their modifiers travel in the Instr
// fields that only memory instructions use otherwise (accessors below); and
// the functions here (info, writes_reg, to_string, validate) are isa.h's
// counterparts that know them.  Code that may see a float operation calls
// these, never op_info() or Instr::writes_reg(), which index isa.h's table.
//
// The semantics are model_host/ptx/float_ref.h's (sm_75: canonical NaN
// 0x7FFFFFFF, .ftz flushing inputs and results after rounding, .sat clamping
// to [0, 1]), the same definition the PTX interpreter runs and the softfloat
// sequences are tested against.
#pragma once

#include <cstdint>
#include <string>

#include "model_host/machine/isa.h"
#include "model_host/ptx/float_ref.h"
#include "model_host/ptx/ir.h"

namespace qgpu::machine {

// The optional instruction families of a machine, beside its Params.  The
// CUDA-sized device of the interpreter backend has native floats
// (cuda_features(), api.h); the default machine and the model's do not.
struct Features {
  bool native_float = false;
};

// clang-format off
enum class FOp : uint8_t {
  ADD, SUB, MUL, FMA,   // rounding, .ftz, .sat
  DIV,                  // a / b, correctly rounded; rounding, .ftz, .sat
  SQRT,                 // rounding, .ftz
  MIN, MAX,             // .ftz (a NaN operand gives the other one)
  CMP,                  // 0 or 1: setp's comparison `cmp` (ordered and unordered), .ftz
  I2F, U2F,             // s32 / u32 to f32: rounding, .sat
  F2I, F2U,             // f32 to s32 / u32, rounded (.rni .rzi .rmi .rpi) and saturated, NaN 0; .ftz
  RINT,                 // cvt.f32.f32: rounded to an integral value (.rni ...), or only .ftz/.sat
  EX2, LG2, SIN, COS, TANH,  // the .approx functions of docs/isa.md 11.1; .ftz
};
// clang-format on
constexpr int kFOpCount = int(FOp::TANH) + 1;

// The Op value of float operation 0.  isa.h's ops are below 64, and so is
// every op value the model's vocabulary carries (tokens/vocab.h).
constexpr uint8_t kFloatOpBase = 64;
// The kind info() reports for a float operation: a pure function of its
// operands like OpKind::Alu, but without an AluFn (the lowering's passes
// neither fold nor combine it through the ALU table).
constexpr OpKind kFloatKind = OpKind(5);

inline Op float_op(FOp f) { return Op(kFloatOpBase + uint8_t(f)); }
inline bool is_float(Op op) { return uint8_t(op) >= kFloatOpBase && uint8_t(op) < kFloatOpBase + kFOpCount; }
inline FOp fop_of(Op op) { return FOp(uint8_t(op) - kFloatOpBase); }

// A float instruction's modifiers.  rnd: ptx::Rnd (None and Rn round to
// nearest; F2I/F2U/RINT take the integer forms Rni ... Rpi).  cmp: CMP only.
struct FloatMod {
  ptx::Rnd rnd = ptx::Rnd::Rn;
  bool ftz = false, sat = false;
  ptx::Cmp cmp = ptx::Cmp::None;
};
// Stored in Instr::bytes (rnd | ftz << 4 | sat << 5) and Instr::atom (cmp).
FloatMod float_mod(const Instr& in);
Instr make_float(FOp f, uint32_t dst, Operand a, Operand b, Operand c, const FloatMod& m);

// isa.h's op_info, writes_reg and to_string, for every op including the
// float ones.
const OpInfo& info(Op op);
inline bool writes_reg(const Instr& in) { return is_float(in.op) || in.writes_reg(); }
std::string to_string_any(const Instr& in);
std::string to_string_any(const Program& prog);

// The result of float instruction `in` on operand values a, b, c.
uint32_t eval_float(const Instr& in, uint32_t a, uint32_t b, uint32_t c);
// The same over `n` lanes: d[l] = eval_float(in, a[l], b[l], c[l]) for the
// lanes set in `mask` (the others keep d's value).  `host_nearest`: whether
// the host rounds to nearest now (ptx::fref::host_rounds_to_nearest()), when
// the caller knows it (1 or 0; -1: ask the host).
void eval_float_lanes(const Instr& in, const uint32_t* a, const uint32_t* b, const uint32_t* c, uint32_t* d,
                      uint32_t n, uint64_t mask, int host_nearest = -1);

// isa.h's validate, plus: a float operation on a machine without
// native_float is refused (std::invalid_argument naming the block and
// instruction), as is an op value neither table defines.
void validate(const Program& prog, const Params& p, const Features& f);

}  // namespace qgpu::machine
