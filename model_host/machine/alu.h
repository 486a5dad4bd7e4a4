// The machine's ALU operations (docs/isa.md, 3.1): the one definition of
// each one's semantics.  isa.cpp's operation table points at these
// functions; the reference interpreter calls them inline.
#pragma once

#include <bit>
#include <cstdint>

#include "model_host/machine/isa.h"

namespace qgpu::machine::alu {

inline int32_t s(uint32_t x) { return int32_t(x); }
inline uint32_t shl(uint32_t a, uint32_t b) { return b >= 32 ? 0 : a << b; }
inline uint32_t shr(uint32_t a, uint32_t b) { return b >= 32 ? 0 : a >> b; }
inline uint32_t sar(uint32_t a, uint32_t b) { return uint32_t(s(a) >> (b >= 32 ? 31 : b)); }
inline uint32_t brev(uint32_t a) {
  uint32_t r = 0;
  for (int i = 0; i < 32; ++i) r |= ((a >> i) & 1u) << (31 - i);
  return r;
}

// eval<op>(a, b, c): the result of ALU operation `op`.
template <Op op>
inline uint32_t eval(uint32_t a, uint32_t b, uint32_t c) {
  if constexpr (op == Op::MOV) return a;
  else if constexpr (op == Op::ADD) return a + b;
  else if constexpr (op == Op::SUB) return a - b;
  else if constexpr (op == Op::MUL) return a * b;
  else if constexpr (op == Op::MULHU) return uint32_t((uint64_t(a) * b) >> 32);
  else if constexpr (op == Op::MULHS) return uint32_t(uint64_t(int64_t(s(a)) * s(b)) >> 32);
  else if constexpr (op == Op::AND) return a & b;
  else if constexpr (op == Op::OR) return a | b;
  else if constexpr (op == Op::XOR) return a ^ b;
  else if constexpr (op == Op::SHL) return shl(a, b);
  else if constexpr (op == Op::SHR) return shr(a, b);
  else if constexpr (op == Op::SAR) return sar(a, b);
  else if constexpr (op == Op::SEQ) return uint32_t(a == b);
  else if constexpr (op == Op::SNE) return uint32_t(a != b);
  else if constexpr (op == Op::SLT) return uint32_t(s(a) < s(b));
  else if constexpr (op == Op::SLE) return uint32_t(s(a) <= s(b));
  else if constexpr (op == Op::SLTU) return uint32_t(a < b);
  else if constexpr (op == Op::SLEU) return uint32_t(a <= b);
  else if constexpr (op == Op::SEL) return a != 0 ? b : c;
  else if constexpr (op == Op::MIN) return s(a) < s(b) ? a : b;
  else if constexpr (op == Op::MAX) return s(a) > s(b) ? a : b;
  else if constexpr (op == Op::MINU) return a < b ? a : b;
  else if constexpr (op == Op::MAXU) return a > b ? a : b;
  else if constexpr (op == Op::POPC) return uint32_t(std::popcount(a));
  else if constexpr (op == Op::CLZ) return uint32_t(std::countl_zero(a));
  else if constexpr (op == Op::BREV) return brev(a);
  else if constexpr (op == Op::CSUB) return a >= b ? a - b : a;
  else static_assert(op == Op::MOV, "not an ALU operation");
}

// Calls f.template operator()<op>() for ALU operation `op` (a switch the
// compiler turns into a jump table): the interpreter's dispatch.
template <class F>
inline void dispatch(Op op, F&& f) {
  switch (op) {
#define QGPU_ALU_CASE(o) \
  case Op::o: f.template operator()<Op::o>(); break;
    QGPU_ALU_CASE(MOV) QGPU_ALU_CASE(ADD) QGPU_ALU_CASE(SUB) QGPU_ALU_CASE(MUL) QGPU_ALU_CASE(MULHU)
    QGPU_ALU_CASE(MULHS) QGPU_ALU_CASE(AND) QGPU_ALU_CASE(OR) QGPU_ALU_CASE(XOR) QGPU_ALU_CASE(SHL)
    QGPU_ALU_CASE(SHR) QGPU_ALU_CASE(SAR) QGPU_ALU_CASE(SEQ) QGPU_ALU_CASE(SNE) QGPU_ALU_CASE(SLT)
    QGPU_ALU_CASE(SLE) QGPU_ALU_CASE(SLTU) QGPU_ALU_CASE(SLEU) QGPU_ALU_CASE(SEL) QGPU_ALU_CASE(MIN)
    QGPU_ALU_CASE(MAX) QGPU_ALU_CASE(MINU) QGPU_ALU_CASE(MAXU) QGPU_ALU_CASE(POPC) QGPU_ALU_CASE(CLZ)
    QGPU_ALU_CASE(BREV) QGPU_ALU_CASE(CSUB)
#undef QGPU_ALU_CASE
    default: break;
  }
}

}  // namespace qgpu::machine::alu
