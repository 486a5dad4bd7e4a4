// The model machine's rewrites of virtual code (model_expand.h).
#include "model_host/lower/model_expand.h"

#include <algorithm>
#include <stdexcept>

namespace qgpu::machine::lowering {

// ---- the model's machine ------------------------------------------------------------
//
// The model's circuit (docs/tokens.md) has 32-bit loads and stores and every
// ALU operation but mulhs; it runs one instruction of one thread per step,
// and a thread runs until it exits or waits.  So a read-modify-write
// spread over consecutive instructions of one thread is atomic, and the
// operations it lacks become sequences of operations it has.  Each rewrite
// computes into fresh virtual registers and writes the original destination
// last, so sources that name the destination read its old value; copy
// propagation then removes the final `mov`.

namespace {

class ModelExpander : public Emitter {
 public:
  explicit ModelExpander(VCode vc) : Emitter(std::move(vc)) {}
  void run();

 private:
  void expand_atomic(const Instr& in);
  void expand_narrow_load(const Instr& in);
  void expand_narrow_store(const Instr& in);
  void expand_mulhs(const Instr& in);
  void keep_clock();
  std::vector<bool> clock_ahead(const std::vector<VI>& code);
  Operand word_offset(const Instr& in, Operand& addr);
};

void ModelExpander::run() {
  keep_clock();
  std::vector<VI> code = std::move(vc_.code);
  vc_.code.clear();
  for (const VI& v : code) {
    const Instr& in = v.in;
    if (v.kind != VI::Ins)
      vc_.code.push_back(v);
    else if (in.op == Op::ATOM)
      expand_atomic(in);
    else if (in.op == Op::LD && in.bytes < 4)
      expand_narrow_load(in);
    else if (in.op == Op::ST && in.bytes < 4)
      expand_narrow_store(in);
    else if (in.op == Op::MULHS)
      expand_mulhs(in);
    else
      vc_.code.push_back(v);
  }
}

// The circuit has no clock.  A kernel that reads one gets a per-thread
// counter instead (docs/isa.md section 8.1): a virtual register that starts
// at 0 and gains, as each straight run of instructions ends (before a label,
// a branch, a barrier or the code's end), the number of instructions in that
// run; `clock` reads it plus the number of instructions before it in its own
// run.  So it counts the instructions the thread has run, as selected here:
// two reads differ whenever instructions lie between them, and a loop that
// reads it sees it grow by at least one an iteration.  It is 32 bits wide
// (clock64's high word is 0: no model launch runs 2^32 steps).  A run from
// whose end no read can be reached leaves the counter as it is: no read
// would see the sum.
void ModelExpander::keep_clock() {
  const bool reads = std::any_of(vc_.code.begin(), vc_.code.end(),
                                 [](const VI& v) { return v.kind == VI::Ins && v.in.op == Op::CLOCK; });
  if (!reads) return;
  std::vector<VI> code = std::move(vc_.code);
  vc_.code.clear();
  const std::vector<bool> ahead = clock_ahead(code);
  const uint32_t clk = nv();
  opd(clk, Op::MOV, K(0));
  uint32_t before = 0;  // instructions of the current run before this one
  for (size_t i = 0; i < code.size(); ++i) {
    if (code[i].kind != VI::Ins) {
      vc_.code.push_back(code[i]);
      continue;
    }
    if (code[i].in.op == Op::CLOCK)
      opd(code[i].in.dst, Op::ADD, R(clk), K(before));
    else
      vc_.code.push_back(code[i]);
    ++before;
    if (i + 1 == code.size() || code[i + 1].kind != VI::Ins) {  // the run ends
      if (ahead[i + 1]) opd(clk, Op::ADD, R(clk), K(before));
      before = 0;
    }
  }
}

// Per position of `code` (and one past its end): whether a thread going on
// from there can reach a clock read (labels, jumps, branches and barriers
// followed to a fixed point; exit and trap end the way).
std::vector<bool> ModelExpander::clock_ahead(const std::vector<VI>& code) {
  std::vector<size_t> at(vc_.nlabels, code.size());
  for (size_t i = 0; i < code.size(); ++i)
    if (code[i].kind == VI::Label) at[code[i].l1] = i;
  std::vector<bool> ahead(code.size() + 1, false);
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t i = code.size(); i-- > 0;) {
      const VI& v = code[i];
      bool r = false;
      switch (v.kind) {
        case VI::Ins: r = v.in.op == Op::CLOCK || ahead[i + 1]; break;
        case VI::Label: r = ahead[i + 1]; break;
        case VI::Jmp: case VI::Bar: case VI::Wbar: r = ahead[at[v.l1]]; break;
        case VI::Br: r = ahead[at[v.l1]] || ahead[at[v.l2]]; break;
        case VI::Exit: case VI::Trap: r = false; break;
      }
      if (r && !ahead[i]) ahead[i] = changed = true;
    }
  }
  return ahead;
}

// atom dst, [a], b, c: dst = old = ld [a]; st [a], F(old, b, c).
void ModelExpander::expand_atomic(const Instr& in) {
  Operand old = R(ld(in.space, in.a, 0, 4, false));
  Operand b = in.b, c = in.c, nw;
  switch (in.atom) {
    case AtomOp::ADD: nw = opr(Op::ADD, old, b); break;
    case AtomOp::MIN: nw = opr(Op::MIN, old, b); break;
    case AtomOp::MAX: nw = opr(Op::MAX, old, b); break;
    case AtomOp::MINU: nw = opr(Op::MINU, old, b); break;
    case AtomOp::MAXU: nw = opr(Op::MAXU, old, b); break;
    case AtomOp::EXCH: nw = b; break;
    case AtomOp::CAS: nw = opr(Op::SEL, opr(Op::SEQ, old, b), c, old); break;
    case AtomOp::AND: nw = opr(Op::AND, old, b); break;
    case AtomOp::OR: nw = opr(Op::OR, old, b); break;
    case AtomOp::XOR: nw = opr(Op::XOR, old, b); break;
    case AtomOp::INC: nw = opr(Op::SEL, opr(Op::SLEU, b, old), K(0), opr(Op::ADD, old, K(1))); break;
    case AtomOp::DEC:
      nw = opr(Op::SEL, opr(Op::OR, opr(Op::SEQ, old, K(0)), opr(Op::SLTU, b, old)), b, opr(Op::SUB, old, K(1)));
      break;
    case AtomOp::FADD:  // native floats only: the model lowering never selects it
      throw std::invalid_argument("the model lowering has no native f32 atomic: " + to_string(in));
  }
  st(in.space, in.a, 0, 4, nw);
  opd(in.dst, Op::MOV, old);
}

// The 1- or 2-byte access at a + b lies in the aligned word at addr - within:
// `addr` is set to a + b, and the result is `within`, the access's byte offset
// in that word.  A halfword at an odd address keeps its odd word address, so
// the word access faults as misaligned, as the halfword access would.
Operand ModelExpander::word_offset(const Instr& in, Operand& addr) {
  addr = opr(Op::ADD, in.a, in.b);
  return opr(Op::AND, addr, K(4 - in.bytes));
}

// ld.{u,s}{8,16} dst, [a + b]: the word, shifted down (zero-extended) or
// shifted to the top and back (sign-extended).
void ModelExpander::expand_narrow_load(const Instr& in) {
  Operand addr;
  Operand within = word_offset(in, addr);
  Operand word = R(ld(in.space, opr(Op::SUB, addr, within), 0, 4, false));
  Operand shift = opr(Op::SHL, within, K(3));
  const uint32_t bits = 8 * in.bytes;
  Operand v = in.sign ? opr(Op::SAR, opr(Op::SHL, word, opr(Op::SUB, K(32 - bits), shift)), K(32 - bits))
                      : opr(Op::AND, opr(Op::SHR, word, shift), K((1u << bits) - 1));
  opd(in.dst, Op::MOV, v);
}

// st.b{8,16} [a + b], c: the word with the access's bits replaced by c's,
// word ^ ((word ^ (c << shift)) & mask).
void ModelExpander::expand_narrow_store(const Instr& in) {
  Operand addr;
  Operand within = word_offset(in, addr);
  Operand at = opr(Op::SUB, addr, within);
  Operand word = R(ld(in.space, at, 0, 4, false));
  Operand shift = opr(Op::SHL, within, K(3));
  Operand mask = opr(Op::SHL, K((1u << (8 * in.bytes)) - 1), shift);
  Operand diff = opr(Op::AND, opr(Op::XOR, word, opr(Op::SHL, in.c, shift)), mask);
  st(in.space, at, 0, 4, opr(Op::XOR, word, diff));
}

// mulhs from the circuit's mulhu (the high half of the unsigned product):
// mulhs(a, b) = mulhu(a, b) - (a < 0 ? b : 0) - (b < 0 ? a : 0), mod 2^32.
// (The circuit could subtract the corrections in its product columns, 3
// more layers; the suite's traces would be 0.3% shorter.)
void ModelExpander::expand_mulhs(const Instr& in) {
  Operand a = in.a, b = in.b;
  Operand hi = opr(Op::MULHU, a, b);
  hi = opr(Op::SUB, hi, opr(Op::AND, opr(Op::SAR, a, K(31)), b));
  hi = opr(Op::SUB, hi, opr(Op::AND, opr(Op::SAR, b, K(31)), a));
  opd(in.dst, Op::MOV, hi);
}

}  // namespace

void expand_for_model(VCode& vc) {
  ModelExpander e(std::move(vc));
  e.run();
  vc = e.take();
}

}  // namespace qgpu::machine::lowering
