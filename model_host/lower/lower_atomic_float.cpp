#include "model_host/lower/lower_atomic_float.h"

namespace qgpu::machine {

std::string float_atomic_unsupported(ptx::AtomOp op, ptx::Type t) {
  if (op != ptx::AtomOp::Add)
    return "is a floating-point atomic other than add: the machine's float atomics are add on f16, f16x2, f32 and f64";
  if (t != ptx::Type::F16 && t != ptx::Type::F16x2 && t != ptx::Type::F32 && t != ptx::Type::F64)
    return std::string("is a ") + ptx::type_name(t) +
           " atomic add: the machine's float atomics are add on f16, f16x2, f32 and f64";
  return {};
}

unsigned float_atomic_bytes(ptx::Type t) { return t == ptx::Type::F16 ? 2 : t == ptx::Type::F64 ? 8 : 4; }

softfloat::Gen::W float_atomic_add(const softfloat::Emit& e, ptx::Type t, softfloat::Gen::W old, softfloat::Gen::W b) {
  softfloat::Gen g(e);
  const Operand zero = Operand::k(0);
  switch (t) {
    case ptx::Type::F64: return g.add64(old, b, softfloat::Round::Rn);
    case ptx::Type::F32: return {g.add(old.first, b.first, softfloat::Round::Rn, true, false), zero};
    case ptx::Type::F16: return {g.add16(old.first, b.first), zero};
    default: {  // f16x2: each half
      auto half = [&](Operand v, int k) {
        return k ? e(Op::SHR, v, Operand::k(16), zero) : e(Op::AND, v, Operand::k(0xFFFF), zero);
      };
      Operand lo = g.add16(half(old.first, 0), half(b.first, 0));
      Operand hi = g.add16(half(old.first, 1), half(b.first, 1));
      return {e(Op::OR, lo, e(Op::SHL, hi, Operand::k(16), zero), zero), zero};
    }
  }
}

}  // namespace qgpu::machine
