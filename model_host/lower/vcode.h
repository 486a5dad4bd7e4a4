// Virtual code: what instruction selection produces and the optimisation
// passes, the model expansion and the register allocator work on (README.md).
// Machine operations on unboundedly many virtual 32-bit registers, with
// labels and control transfers between them; `Emitter` appends to it.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "model_host/machine/float_eval.h"
#include "model_host/machine/isa.h"

namespace qgpu::machine::lowering {

constexpr uint32_t kNoV = UINT32_MAX;
// Registers reserved for reloading spilled values: one per source of an
// instruction, kSpillScratch unless the code has an op of more sources (the
// f64 ops, up to kMaxArity; allocate() reserves as many as the code needs).
constexpr uint32_t kSpillScratch = 3;

// A virtual instruction: a machine operation on virtual registers, or a
// label or control transfer.
struct VI {
  enum Kind : uint8_t { Ins, Label, Jmp, Br, Exit, Bar, Wbar, Trap } kind = Ins;
  Instr in;
  uint32_t l1 = 0, l2 = 0;  // Label: its id; Jmp/Bar/Wbar: target; Br: true/false targets
  uint32_t cond = 0;        // Br: condition vreg
  uint32_t code = 0;        // Trap
};

// A PTX value: one or two 32-bit words.
struct V {
  Operand lo = Operand::k(0), hi = Operand::k(0);
};

inline Operand R(uint32_t v) { return Operand::reg(v); }
inline Operand K(uint32_t k) { return Operand::k(k); }

inline bool is_mem_read(const Instr& in) {
  return in.op == Op::LD || in.op == Op::ATOM || in.op == Op::ATOM64 || in.op == Op::MMA;
}
inline bool is_mem_write(const Instr& in) { return in.op == Op::ST || in.op == Op::ATOM || in.op == Op::ATOM64; }

// Sources an instruction reads, in operand order.
inline std::vector<const Operand*> sources(const Instr& in) {
  std::vector<const Operand*> r;
  int n = op_info(in.op).arity;
  for (int i = 0; i < n; ++i)
    if (!in.src(i).imm) r.push_back(&in.src(i));
  return r;
}

// A program in virtual code: its instructions, and how many virtual
// registers and labels it numbers (each below its count).
struct VCode {
  std::vector<VI> code;
  uint32_t nvregs = 0, nlabels = 0;
  // Per vreg (may be shorter than nvregs): defined by code that rarely runs
  // (hoist_invariants leaves it).
  std::vector<bool> cold;
};

// `size` bytes of per-thread local memory at `align` (at least 4) above
// `top`, which grows past them; returns their offset.
inline uint32_t local_alloc(uint32_t& top, uint64_t size, uint32_t align) {
  align = align < 4 ? 4 : align;
  top = (top + align - 1) / align * align;
  uint32_t at = top;
  top += uint32_t(size);
  return at;
}

// Appends virtual code: operations into fresh virtual registers, labels and
// control transfers.
class Emitter {
 public:
  explicit Emitter(VCode vc = {}) : vc_(std::move(vc)) {}
  VCode take() { return std::move(vc_); }

 protected:
  uint32_t nv() { return vc_.nvregs++; }
  uint32_t new_label() { return vc_.nlabels++; }
  void emit(const Instr& in) { vc_.code.push_back({VI::Ins, in}); }
  uint32_t op(Op o, Operand a = K(0), Operand b = K(0), Operand c = K(0)) {
    uint32_t d = nv();
    opd(d, o, a, b, c);
    return d;
  }
  void opd(uint32_t d, Op o, Operand a = K(0), Operand b = K(0), Operand c = K(0)) {
    Instr in;
    in.op = o;
    in.dst = d;
    in.a = a;
    in.b = b;
    in.c = c;
    emit(in);
  }
  Operand opr(Op o, Operand a = K(0), Operand b = K(0), Operand c = K(0)) { return R(op(o, a, b, c)); }
  uint32_t ld(Space sp, Operand addr, uint32_t off, uint32_t bytes, bool sign) {
    Instr in;
    in.op = Op::LD;
    in.dst = nv();
    in.a = addr;
    in.b = K(off);
    in.space = sp;
    in.bytes = uint8_t(bytes);
    in.sign = sign && bytes < 4;  // extending a full word changes nothing: one canonical form
    emit(in);
    return in.dst;
  }
  void st(Space sp, Operand addr, uint32_t off, uint32_t bytes, Operand v) {
    Instr in;
    in.op = Op::ST;
    in.a = addr;
    in.b = K(off);
    in.c = v;
    in.space = sp;
    in.bytes = uint8_t(bytes);
    emit(in);
  }
  Operand atom(Space sp, AtomOp a, Operand addr, Operand b, Operand c = K(0)) {
    Instr in;
    in.op = Op::ATOM;
    in.dst = nv();
    in.a = addr;
    in.b = b;
    in.c = c;
    in.space = sp;
    in.atom = a;
    emit(in);
    return R(in.dst);
  }
  // The native 64-bit atomic (Op::ATOM64) and the ATOMHI right after it
  // that reads the high word of the old value; form_blocks keeps the two in
  // one block.
  V atom64(Space sp, AtomOp a, Operand addr, V x, V y = {}) {
    Instr in;
    in.op = Op::ATOM64;
    in.dst = nv();
    in.a = addr;
    in.b = x.lo;
    in.c = x.hi;
    in.d = y.lo;
    in.e = y.hi;
    in.space = sp;
    in.atom = a;
    emit(in);
    return {R(in.dst), R(op(Op::ATOMHI))};
  }
  void place(uint32_t l) { vc_.code.push_back({VI::Label, {}, l}); }
  void exit_thread() {
    VI v;
    v.kind = VI::Exit;
    vc_.code.push_back(v);
  }
  void jmp(uint32_t l) { vc_.code.push_back({VI::Jmp, {}, l}); }
  void br(Operand c, uint32_t t, uint32_t f) {
    if (c.imm) return jmp(c.v ? t : f);
    vc_.code.push_back({VI::Br, {}, t, f, c.v});
  }
  void barrier(VI::Kind k) {
    uint32_t next = new_label();
    vc_.code.push_back({k, {}, next});
    place(next);
  }

  VCode vc_;
};

}  // namespace qgpu::machine::lowering
