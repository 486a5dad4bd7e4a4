// Integer primitives over multi-digit words, built from IR steps.
//
// A Word is an unsigned integer as little-endian digits of `bits` bits each
// (1: bits, 2, 4: nibbles, 8: bytes); each digit is a value with 2^bits slots.
// Costs (units, layers) are listed in docs/circuit.md and measured by the tests.
#pragma once

#include "model_host/circuit/ir.h"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace qgpu::circuit {

struct Word {
  std::vector<ValueId> digits;   // least significant first
  int bits = 4;
  int width() const { return static_cast<int>(digits.size()) * bits; }
  int base() const { return 1 << bits; }
};

// The digits of `x` for a word of `width` bits in `bits`-bit digits.
std::vector<int> digits_of(uint64_t x, int width, int bits);
// The integer a vector of digit slots stands for.
uint64_t value_of(const std::vector<int>& digits, int bits);

// Bits [first, first + count) of a word as memory address bits (least
// significant first): bit i of the word is bit i % bits of digit i / bits.
std::vector<AddrBit> address_bits(const Word& w, int first, int count);

// out = f(in) for a single value; picks the cheaper of a ladder (steps where f
// changes along the slots) and a table (steps where f differs from its most
// common result).  One MLP layer.
ValueId apply(Program& p, const std::string& name, int size, ValueId in, const std::function<int(int)>& f);

// The same integer in other digits (bits must be a power of two up to 8).  One layer.
Word regroup(Program& p, const std::string& name, const Word& w, int bits);

struct Sum {
  Word value;          // (a + b + carry_in) mod 2^width, or (a - b) mod 2^width
  ValueId carry;       // carry out (for subtraction: 1 when a >= b, unsigned)
};
// a + b, or a - b as a + ~b + 1, with carry-lookahead: three layers (the
// carry alone, two).  a and b must have the same digits.
Sum add(Program& p, const std::string& name, const Word& a, const Word& b, bool subtract = false);
// a < b (unsigned or two's-complement signed) as a flag (slot 1 = true); two layers.
ValueId less_than(Program& p, const std::string& name, const Word& a, const Word& b, bool is_signed = false);
// a == b as a flag; two layers.
ValueId equal(Program& p, const std::string& name, const Word& a, const Word& b);
// c ? a : b digit by digit (c a flag); one layer.
Word select(Program& p, const std::string& name, ValueId c, const Word& a, const Word& b);

enum class Bitwise { And, Or, Xor };
// Digit-wise table; cheapest on 1-bit digits.  One layer.
Word bitwise(Program& p, const std::string& name, Bitwise op, const Word& a, const Word& b);
// Number of set bits, as a word of `out_bits`-bit digits wide enough for width + 1 values.  One layer.
Word popc(Program& p, const std::string& name, const Word& a, int out_bits = 4);
// Leading zeros (width for zero), same output form.  One layer.
Word clz(Program& p, const std::string& name, const Word& a, int out_bits = 4);
// Bit reversal: free on 1-bit digits (a relabelling), one layer otherwise.
Word brev(Program& p, const std::string& name, const Word& a);
// a << s or a >> s (logical) for a word of 1-bit digits and an amount value
// with `width` slots (amount = slot).  One layer.
Word shift(Program& p, const std::string& name, const Word& a, ValueId amount, bool left);
// One nibble of the byte product x * y of two nibble values (16 slots each):
// the low nibble, or with `high` the high one.  A table: one layer.  The
// multipliers below are made of these.
ValueId nibble_product(Program& p, const std::string& name, ValueId x, ValueId y, bool high);
// The low `width` bits of a * b for nibble words: nibble products by table,
// column sums by ladder, then the carry-lookahead adder.
Word mul_lo(Program& p, const std::string& name, const Word& a, const Word& b);
// The high `width` bits of the full product a * b (unsigned, or with
// `is_signed` of the two's-complement operands) for nibble words of at most
// 8 digits: all n^2 nibble products, the 2n column sums computed three
// columns at a time (each stage waits for the one before, so that only its
// products occupy the residual), one 2n-digit addition; the signed form
// subtracts (a < 0 ? b : 0) and (b < 0 ? a : 0).
Word mul_hi(Program& p, const std::string& name, const Word& a, const Word& b, bool is_signed = false);
// The signed high half from the unsigned one (two subtractions and two
// selects), so that both can share one product.
Word signed_high(Program& p, const std::string& name, const Word& unsigned_high, const Word& a, const Word& b);

}  // namespace qgpu::circuit
