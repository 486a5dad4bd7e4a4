// Every machine operation against an independent reference, on edge values
// (0, 1, -1, INT_MIN, INT_MAX, ...), shift counts 0..40, and exhaustively on
// 8-bit ranges where the operation allows it.
#include <gtest/gtest.h>

#include <climits>
#include <cstdint>
#include <vector>

#include "model_host/machine/isa.h"

namespace qgpu::machine {
namespace {

const std::vector<uint32_t> kEdges = {0u,          1u,          2u,          3u,          0xFFFFFFFFu, 0xFFFFFFFEu,
                                      0x7FFFFFFFu, 0x80000000u, 0x80000001u, 0x12345678u, 0xDEADBEEFu, 31u,
                                      32u,         33u,         255u,        256u};

int64_t S(uint32_t x) { return x >= 0x80000000u ? int64_t(x) - (int64_t(1) << 32) : int64_t(x); }
uint32_t U(int64_t x) { return uint32_t(uint64_t(x) & 0xFFFFFFFFu); }

// Reference semantics written independently of isa.cpp (arithmetic in 64 bits,
// bit loops instead of intrinsics).
uint32_t reference(Op op, uint32_t a, uint32_t b, uint32_t c) {
  switch (op) {
    case Op::MOV: return a;
    case Op::ADD: return U(int64_t(a) + int64_t(b));
    case Op::SUB: return U(int64_t(a) - int64_t(b));
    case Op::MUL: return U(int64_t(uint64_t(a) * uint64_t(b) & 0xFFFFFFFFu));
    case Op::MULHU: return U(int64_t((uint64_t(a) * uint64_t(b)) / 4294967296ull));
    case Op::MULHS: {
      __int128 p = (__int128)S(a) * S(b);
      return U(int64_t(p >> 32));
    }
    case Op::AND: return a & b;
    case Op::OR: return a | b;
    case Op::XOR: return a ^ b;
    case Op::SHL: {
      uint64_t r = a;
      for (uint32_t i = 0; i < b && i < 40; ++i) r = (r << 1) & 0xFFFFFFFFu;
      return b >= 40 ? 0 : uint32_t(r);
    }
    case Op::SHR: {
      uint32_t r = a;
      for (uint32_t i = 0; i < b && i < 40; ++i) r >>= 1;
      return b >= 40 ? 0 : r;
    }
    case Op::SAR: {
      int64_t r = S(a);
      for (uint32_t i = 0; i < b && i < 40; ++i) r = r < 0 ? (r - 1) / 2 : r / 2;
      return U(b >= 40 ? (S(a) < 0 ? -1 : 0) : r);
    }
    case Op::SEQ: return a == b;
    case Op::SNE: return a != b;
    case Op::SLT: return S(a) < S(b);
    case Op::SLE: return S(a) <= S(b);
    case Op::SLTU: return a < b;
    case Op::SLEU: return a <= b;
    case Op::SEL: return a ? b : c;
    case Op::MIN: return S(a) < S(b) ? a : b;
    case Op::MAX: return S(a) < S(b) ? b : a;
    case Op::MINU: return a < b ? a : b;
    case Op::MAXU: return a < b ? b : a;
    case Op::CSUB: return U(int64_t(a) - int64_t(b) < 0 ? int64_t(a) : int64_t(a) - int64_t(b));
    case Op::POPC: {
      uint32_t n = 0;
      for (int i = 0; i < 32; ++i) n += (a >> i) & 1;
      return n;
    }
    case Op::CLZ: {
      uint32_t n = 0;
      for (int i = 31; i >= 0 && !((a >> i) & 1); --i) ++n;
      return n;
    }
    case Op::BREV: {
      uint32_t r = 0;
      for (int i = 0; i < 32; ++i)
        if ((a >> i) & 1) r |= 1u << (31 - i);
      return r;
    }
    default: ADD_FAILURE() << "no reference for " << op_info(op).name; return 0;
  }
}

std::vector<Op> alu_ops() {
  std::vector<Op> v;
  for (int i = 0; i < kOpCount; ++i)
    if (op_info(Op(i)).kind == OpKind::Alu) v.push_back(Op(i));
  return v;
}

TEST(MachineOps, AluOpsOnEdgeValues) {
  for (Op op : alu_ops())
    for (uint32_t a : kEdges)
      for (uint32_t b : kEdges)
        for (uint32_t c : {0u, 7u, 0xFFFFFFFFu})
          ASSERT_EQ(eval_alu(op, a, b, c), reference(op, a, b, c))
              << op_info(op).name << "(" << a << ", " << b << ", " << c << ")";
}

TEST(MachineOps, ShiftCountsZeroToForty) {
  for (uint32_t a : kEdges)
    for (uint32_t n = 0; n <= 40; ++n)
      for (Op op : {Op::SHL, Op::SHR, Op::SAR})
        ASSERT_EQ(eval_alu(op, a, n, 0), reference(op, a, n, 0)) << op_info(op).name << " " << a << " by " << n;
  // Counts far beyond 32 behave like 32.
  EXPECT_EQ(eval_alu(Op::SHL, 1, 0xFFFFFFFFu, 0), 0u);
  EXPECT_EQ(eval_alu(Op::SHR, 0x80000000u, 1000, 0), 0u);
  EXPECT_EQ(eval_alu(Op::SAR, 0x80000000u, 0x80000000u, 0), 0xFFFFFFFFu);
  EXPECT_EQ(eval_alu(Op::SAR, 0x7FFFFFFFu, 64, 0), 0u);
}

TEST(MachineOps, ExhaustiveOnEightBitOperands) {
  // Sign-extended and zero-extended 8-bit values cover both ends of the range.
  for (Op op : alu_ops())
    for (int x = -128; x < 128; ++x)
      for (int y = -128; y < 128; ++y) {
        uint32_t a = uint32_t(x), b = uint32_t(y);
        uint32_t ua = uint32_t(x & 0xFF), ub = uint32_t(y & 0xFF);
        ASSERT_EQ(eval_alu(op, a, b, ua), reference(op, a, b, ua)) << op_info(op).name << " " << x << " " << y;
        ASSERT_EQ(eval_alu(op, ua, ub, a), reference(op, ua, ub, a)) << op_info(op).name << " " << ua << " " << ub;
      }
}

TEST(MachineOps, IntMinAndIntMaxCorners) {
  const uint32_t mn = uint32_t(INT_MIN), mx = uint32_t(INT_MAX);
  EXPECT_EQ(eval_alu(Op::ADD, mx, 1, 0), mn);
  EXPECT_EQ(eval_alu(Op::SUB, mn, 1, 0), mx);
  EXPECT_EQ(eval_alu(Op::MUL, mn, 0xFFFFFFFFu, 0), mn);
  EXPECT_EQ(eval_alu(Op::MULHS, mn, mn, 0), 0x40000000u);
  EXPECT_EQ(eval_alu(Op::MULHU, 0xFFFFFFFFu, 0xFFFFFFFFu, 0), 0xFFFFFFFEu);
  EXPECT_EQ(eval_alu(Op::MULHS, 0xFFFFFFFFu, 0xFFFFFFFFu, 0), 0u);
  EXPECT_EQ(eval_alu(Op::SLT, mn, mx, 0), 1u);
  EXPECT_EQ(eval_alu(Op::SLTU, mn, mx, 0), 0u);
  EXPECT_EQ(eval_alu(Op::MIN, mn, 0, 0), mn);
  EXPECT_EQ(eval_alu(Op::MINU, mn, 0, 0), 0u);
  EXPECT_EQ(eval_alu(Op::CLZ, 0, 0, 0), 32u);
  EXPECT_EQ(eval_alu(Op::POPC, 0xFFFFFFFFu, 0, 0), 32u);
  EXPECT_EQ(eval_alu(Op::BREV, 1, 0, 0), 0x80000000u);
}

// Atomic functions: new = f(old, b, c), PTX semantics.
TEST(MachineOps, AtomicFunctions) {
  for (uint32_t o : kEdges)
    for (uint32_t b : kEdges) {
      EXPECT_EQ(eval_atom(AtomOp::ADD, o, b, 0), U(int64_t(o) + b));
      EXPECT_EQ(eval_atom(AtomOp::MIN, o, b, 0), S(o) < S(b) ? o : b);
      EXPECT_EQ(eval_atom(AtomOp::MAX, o, b, 0), S(o) > S(b) ? o : b);
      EXPECT_EQ(eval_atom(AtomOp::MINU, o, b, 0), o < b ? o : b);
      EXPECT_EQ(eval_atom(AtomOp::MAXU, o, b, 0), o > b ? o : b);
      EXPECT_EQ(eval_atom(AtomOp::EXCH, o, b, 0), b);
      EXPECT_EQ(eval_atom(AtomOp::CAS, o, b, 99), o == b ? 99u : o);
      EXPECT_EQ(eval_atom(AtomOp::AND, o, b, 0), o & b);
      EXPECT_EQ(eval_atom(AtomOp::OR, o, b, 0), o | b);
      EXPECT_EQ(eval_atom(AtomOp::XOR, o, b, 0), o ^ b);
      EXPECT_EQ(eval_atom(AtomOp::INC, o, b, 0), o >= b ? 0u : o + 1);
      EXPECT_EQ(eval_atom(AtomOp::DEC, o, b, 0), (o == 0 || o > b) ? b : o - 1);
    }
}

TEST(MachineOps, EveryOpHasANameAndKind) {
  for (int i = 0; i < kOpCount; ++i) {
    const OpInfo& info = op_info(Op(i));
    ASSERT_NE(info.name, nullptr);
    EXPECT_EQ(info.kind == OpKind::Alu, info.fn != nullptr) << info.name;
    // Three sources at most, but for the f64 ops and atom64 (two words per
    // 64-bit value).
    EXPECT_LE(info.arity, is_f64(Op(i)) || Op(i) == Op::ATOM64 ? kMaxArity : 3) << info.name;
    // The ops every machine has come first; the optional float ops follow,
    // then the optional matrix operation and the native 64-bit atomic.
    EXPECT_EQ(info.kind == OpKind::Float, i >= kBaseOpCount && is_float(Op(i))) << info.name;
    EXPECT_EQ(info.kind == OpKind::Matrix, Op(i) == Op::MMA) << info.name;
    EXPECT_EQ(i >= kBaseOpCount, is_float(Op(i)) || Op(i) == Op::MMA || Op(i) == Op::ATOM64 || Op(i) == Op::ATOMHI)
        << info.name;
  }
}

// The native atomics' functions: f32 add .rn with subnormals flushed, and
// the 64-bit functions (f64 add .rn among them).
TEST(MachineOps, NativeAtomicFunctions) {
  EXPECT_EQ(eval_atom(AtomOp::FADD, 0x3F800000u, 0x40000000u, 0), 0x40400000u);  // 1 + 2 = 3
  EXPECT_EQ(eval_atom(AtomOp::FADD, 0x00000001u, 0x00000000u, 0), 0x00000000u);  // a subnormal input flushed
  EXPECT_EQ(eval_atom(AtomOp::FADD, 0x00800000u, 0x80000001u, 0), 0x00800000u);
  EXPECT_EQ(eval_atom64(AtomOp::ADD, 0xFFFFFFFFull, 1, 0), 0x100000000ull);
  EXPECT_EQ(eval_atom64(AtomOp::MIN, uint64_t(-5), 3, 0), uint64_t(-5));
  EXPECT_EQ(eval_atom64(AtomOp::MINU, uint64_t(-5), 3, 0), 3u);
  EXPECT_EQ(eval_atom64(AtomOp::CAS, 7, 7, 9), 9u);
  EXPECT_EQ(eval_atom64(AtomOp::CAS, 7, 8, 9), 7u);
  EXPECT_EQ(eval_atom64(AtomOp::FADD, 0x3FF0000000000000ull, 0x3FF0000000000000ull, 0), 0x4000000000000000ull);
  EXPECT_FALSE(atom64_valid(AtomOp::INC));
  EXPECT_FALSE(atom64_valid(AtomOp::DEC));
  EXPECT_TRUE(atom64_valid(AtomOp::FADD));
}

}  // namespace
// The native atomics on machines with native floats only; an atomhi after
// an atom64 in its block only.
TEST(MachineOps, NativeAtomicsAreValidatedWhereTheyAre) {
  Params native;
  native.native_float = true;
  Instr a64;
  a64.op = Op::ATOM64;
  a64.dst = 1;
  a64.a = Operand::reg(2);
  a64.b = Operand::reg(3);
  Instr hi;
  hi.op = Op::ATOMHI;
  hi.dst = 4;
  Instr fadd;
  fadd.op = Op::ATOM;
  fadd.atom = AtomOp::FADD;
  fadd.dst = 1;
  fadd.a = Operand::reg(2);
  auto prog = [](std::vector<Instr> ins) {
    Program p;
    p.blocks.push_back({std::move(ins), {}});
    return p;
  };
  EXPECT_NO_THROW(validate(prog({a64, hi}), native));
  EXPECT_NO_THROW(validate(prog({a64}), native));
  EXPECT_NO_THROW(validate(prog({fadd}), native));
  EXPECT_THROW(validate(prog({a64, hi}), default_params()), std::invalid_argument);
  EXPECT_THROW(validate(prog({fadd}), default_params()), std::invalid_argument);
  EXPECT_THROW(validate(prog({hi}), native), std::invalid_argument);
  Instr inc = a64;
  inc.atom = AtomOp::INC;
  EXPECT_THROW(validate(prog({inc, hi}), native), std::invalid_argument);
}

}  // namespace qgpu::machine
