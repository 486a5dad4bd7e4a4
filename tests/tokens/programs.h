// Hand-built programs for the model's machine (one instruction per block):
// builders shared by the prompt and trace tests.
#pragma once

#include <cstring>
#include <optional>
#include <vector>

#include "model_host/launch/launch.h"
#include "model_host/machine/isa.h"

namespace qgpu::gpu::test {

using machine::Block;
using machine::Instr;
using machine::Op;
using machine::Operand;
using machine::Space;
using machine::Term;
using machine::Terminator;

inline constexpr uint32_t kBase = 0x10000000;  // global_base of docs/tokens.md

inline Operand r(uint32_t x) { return Operand::reg(x); }
inline Operand k(uint32_t x) { return Operand::k(x); }

inline Instr alu(Op op, uint32_t dst, Operand a, Operand b = k(0), Operand c = k(0)) {
  Instr in;
  in.op = op;
  in.dst = dst;
  in.a = a;
  in.b = b;
  in.c = c;
  return in;
}
inline Instr special(Op op, uint32_t dst) { return alu(op, dst, k(0)); }
inline Instr ld(Space sp, uint32_t dst, Operand a, Operand b, uint8_t bytes = 4) {
  Instr in = alu(Op::LD, dst, a, b);
  in.space = sp;
  in.bytes = bytes;
  return in;
}
inline Instr st(Space sp, Operand a, Operand b, Operand value) {
  Instr in = alu(Op::ST, 0, a, b, value);
  in.space = sp;
  return in;
}

inline Terminator jmp(uint32_t t) { return {Term::JMP, 0, t, 0, 0}; }
inline Terminator br(uint32_t c, uint32_t t, uint32_t f) { return {Term::BR, c, t, f, 0}; }
inline Terminator bar(uint32_t t) { return {Term::BAR, 0, t, 0, 0}; }
inline Terminator exit_() { return {Term::EXIT, 0, 0, 0, 0}; }
inline Terminator trap(uint32_t code) { return {Term::TRAP, 0, 0, 0, code}; }

// One block: an optional instruction and its terminator.
inline Block blk(std::optional<Instr> in, Terminator t) {
  Block b;
  if (in) b.instrs.push_back(*in);
  b.term = t;
  return b;
}

inline machine::Program program(std::vector<Block> blocks) {
  machine::Program p;
  p.kernel = "test";
  p.blocks = std::move(blocks);
  return p;
}

// Even and odd threads wait at two barriers that go on at different blocks
// (B4 and B5), then exit: after the barrier, each thread goes on elsewhere
// than the thread before it began (WARPS docs/tokens.md section 4 does not
// apply), while in the first pass every thread starts at B0.
inline machine::Program parity_barriers_program() {
  return program({
      blk(special(Op::WARP, 1), jmp(1)),                   // B0: r1 = thread
      blk(alu(Op::AND, 2, r(1), k(1)), br(2, 3, 2)),       // B1: odd threads to B3
      blk(std::nullopt, bar(4)),                           // B2
      blk(std::nullopt, bar(5)),                           // B3
      blk(std::nullopt, exit_()),                          // B4
      blk(alu(Op::ADD, 3, r(1), k(100)), exit_()),         // B5
  });
}

// Branches on a register other than the one the block writes
// (tokens/prompt.h, branch_condition_in_c): taken and not taken, to the
// block after and elsewhere, with a small result and large ones; a `sel`
// (three operands) whose branch cannot be folded.
inline machine::Program branch_on_another_register_program() {
  return program({
      blk(alu(Op::MOV, 1, k(1)), jmp(1)),                          // B0: r1 = 1
      blk(alu(Op::MOV, 2, k(5)), br(1, 2, 6)),                     // B1: taken, small: VX(2,5)
      blk(alu(Op::MOV, 3, k(0x1234)), br(1, 3, 6)),                // B2: taken, to the next: VZF
      blk(alu(Op::MOV, 4, k(0x4444)), br(0, 6, 4)),                // B3: r0 = 0, to the next: VZF
      blk(alu(Op::MOV, 5, k(0x5555)), br(0, 6, 8)),                // B4: elsewhere: VZ, EXEC(8)
      blk(std::nullopt, exit_()),                                  // B5: never
      blk(std::nullopt, exit_()),                                  // B6: never
      blk(std::nullopt, exit_()),                                  // B7: never
      blk(alu(Op::SEL, 6, r(1), k(7), k(9)), br(1, 9, 6)),         // B8: sel reads c: VZ(7), EXEC(9)
      blk(ld(Space::Global, 7, r(0), k(kBase)), br(1, 10, 6)),     // B9: a load: VX(10,0)
      blk(st(Space::Global, r(0), k(kBase), r(3)), exit_()),       // B10
  });
}

// The client's global memory as the daemon holds it: all of the model's.
inline launch::GlobalMemory global_memory() {
  return {kBase, std::vector<uint8_t>(machine::model_params().global_bytes, 0)};
}
template <class Bytes>  // std::vector<uint8_t> or launch::DeviceBytes
inline uint32_t word(const Bytes& bytes, size_t i) {
  uint32_t v;
  std::memcpy(&v, &bytes[4 * i], 4);
  return v;
}
template <class Bytes>
inline void set_word(Bytes& bytes, size_t i, uint32_t v) { std::memcpy(&bytes[4 * i], &v, 4); }

}  // namespace qgpu::gpu::test
