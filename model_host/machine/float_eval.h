// The execution of the machine's native float operations (isa.h's
// OpKind::Float, FADD .. FTANH), and the conversions between their
// modifiers and PTX's.
//
// The semantics are model_host/ptx/float_ref.h's (sm_75: canonical NaN
// 0x7FFFFFFF, .ftz flushing inputs and results after rounding, .sat clamping
// to [0, 1]), the same definition the PTX interpreter runs and the softfloat
// sequences are tested against.
#pragma once

#include <cstdint>

#include "model_host/machine/isa.h"
#include "model_host/ptx/float_ref.h"
#include "model_host/ptx/ir.h"

namespace qgpu::machine {

// isa.h's FRnd and FCmp are PTX's roundings and float comparisons.
ptx::Rnd to_ptx(FRnd r);
ptx::Cmp to_ptx(FCmp c);
FRnd from_ptx(ptx::Rnd r);
FCmp from_ptx(ptx::Cmp c);  // a float comparison (Eq .. Nan), else FCmp::None

// The result of float instruction `in` on operand values a, b, c.
uint32_t eval_float(const Instr& in, uint32_t a, uint32_t b, uint32_t c);
// The same over `n` lanes: d[l] = eval_float(in, a[l], b[l], c[l]) for the
// lanes set in `mask` (the others keep d's value).  `host_nearest`: whether
// the host rounds to nearest now (ptx::fref::host_rounds_to_nearest()), when
// the caller knows it (1 or 0; -1: ask the host).
void eval_float_lanes(const Instr& in, const uint32_t* a, const uint32_t* b, const uint32_t* c, uint32_t* d,
                      uint32_t n, uint64_t mask, int host_nearest = -1);

// Any float instruction, the f64 ones (DADD .. DRINT) included, on its
// operand values: v[k] is source k (a .. f); the operands past the op's
// arity are ignored.
uint32_t eval_float(const Instr& in, const uint32_t (&v)[kMaxArity]);
// The same over `n` lanes: s[k] points at source k's lane values (those past
// the op's arity are not read).
void eval_float_lanes(const Instr& in, const uint32_t* const (&s)[kMaxArity], uint32_t* d, uint32_t n,
                      uint64_t mask, int host_nearest = -1);

}  // namespace qgpu::machine
