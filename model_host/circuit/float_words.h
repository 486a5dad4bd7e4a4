// IEEE-754 binary32 arithmetic over words, built from IR steps (words.h).
//
// Operands and results are 32-bit words of nibbles (the bit patterns of
// floats); the arithmetic is round to nearest even without flush to zero:
// denormal operands and results, signed zeros, infinities, and every NaN
// result the canonical 0x7FFFFFFF (the PTX reference's f32 arithmetic,
// model_host/ptx/float_ref.h, which the tests compare with bit for bit).
// Costs (units, layers) are listed in docs/circuit.md and measured by the tests.
#pragma once

#include "model_host/circuit/words.h"

#include <vector>

namespace qgpu::circuit {

// What the back end rounds and packs: a non-negative significand `sig` of
// 1-bit digits, `w` = sig.width() >= 27 bits, whose value is
//   sig x 2^(E - 127 - (w - 2))
// for the integer E = sum(exponent) + exponent_bias >= 1: E is the biased
// exponent the result would have with its leading one at bit w - 2 (E = 1
// with bits below that: a denormal scale).  Bit w - 1 is a carry (a sum that
// grew by one place); every bit below w - 26 counts only as sticky.
struct Unpacked32 {
  Word sig;                       // 1-bit digits
  std::vector<Term> exponent;     // the integer form E - exponent_bias
  int exponent_bias = 0;
  ValueId room = -1;              // min(E - 1, w - 1), a value of w slots
  ValueId sign = -1;              // flag: the sign of a non-zero result
  ValueId zero_sign = -1;         // flag: the sign when sig is 0 (an exact zero)
  ValueId nan = -1;               // flag: the result is the canonical NaN
  ValueId inf = -1;               // flag (unless nan): the result is an infinity of `sign`
};

// The back end of f32 arithmetic, reusable by a multiply or fused
// multiply-add: normalise (one place right on a carry, or left by the
// leading zeros but no further than the exponent allows, which leaves a
// denormal), round to nearest even, carry the rounding into the exponent,
// overflow to infinity, and pack with the special results.  Four layers;
// the result is a word of 8 nibbles.
Word round_pack32(Program& p, const std::string& name, const Unpacked32& u);

// a + b for f32 bit patterns (words of 8 nibbles), .rn without .ftz: twelve
// layers (docs/circuit.md).  `subtract` computes a - b as a + (-b), which is
// the same bit for bit (a NaN result is canonical either way).
Word float_add32(Program& p, const std::string& name, const Word& a, const Word& b, bool subtract = false);
// The same, subtracting where the flag `negate_b` holds (one circuit for
// add.rn.f32 and sub.rn.f32).
Word float_add32(Program& p, const std::string& name, const Word& a, const Word& b, ValueId negate_b);

// a * b for f32 bit patterns (words of 8 nibbles), .rn without .ftz: the
// exact 48-bit product of the significands (bit products, column counts
// reduced to two rows, carry lookahead), right-shifted with sticky where the
// result is below the normal range, then round_pack32: eleven layers
// (docs/circuit.md).  Denormal operands, signed zeros, inf * 0 = NaN, every
// NaN result the canonical 0x7FFFFFFF, overflow to infinity, underflow to
// denormals or zero.  With product_layers = 2 the products of b's low 12
// bits are made and counted before those of its high 12 bits, and the whole
// count is made in bits: the residual holds half the 575 bit products (2
// dimensions each) at a time, for two more layers (thirteen).
Word float_mul32(Program& p, const std::string& name, const Word& a, const Word& b, int product_layers = 1);

// a * b + c for f32 bit patterns (words of 8 nibbles), rounded once, .rn
// without .ftz (fma.rn.f32): the exact product of float_mul32's product
// stage and c's significand, aligned to it, in one 78-bit frame (c's bits
// below it kept as a sticky bit), summed as two rows with the carries of
// both P + ~C and P - C, then round_pack32 (docs/circuit.md).  Denormal
// operands and results, signed zeros (an exact zero sum of opposite signs is
// +0), inf * 0 and inf - inf the canonical NaN 0x7FFFFFFF, every NaN operand
// likewise.  a * b + (-0) is a * b rounded, bit for bit.
Word float_fma32(Program& p, const std::string& name, const Word& a, const Word& b, const Word& c,
                 int product_layers = 1);

}  // namespace qgpu::circuit
