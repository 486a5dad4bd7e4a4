// The operation table (the ALU operations' semantics are alu.h's, the
// atomics' are here), and the block rules of docs/isa.md.
#include "model_host/machine/isa.h"

#include "model_host/machine/alu.h"
#include "model_host/ptx/float_ref.h"

#include <bit>
#include <sstream>
#include <stdexcept>

namespace qgpu::machine {
namespace {

int32_t s(uint32_t x) { return int32_t(x); }

const OpInfo kOps[kOpCount] = {
    {"mov", OpKind::Alu, 1, alu::eval<Op::MOV>},
    {"add", OpKind::Alu, 2, alu::eval<Op::ADD>},
    {"sub", OpKind::Alu, 2, alu::eval<Op::SUB>},
    {"mul", OpKind::Alu, 2, alu::eval<Op::MUL>},
    {"mulhu", OpKind::Alu, 2, alu::eval<Op::MULHU>},
    {"mulhs", OpKind::Alu, 2, alu::eval<Op::MULHS>},
    {"and", OpKind::Alu, 2, alu::eval<Op::AND>},
    {"or", OpKind::Alu, 2, alu::eval<Op::OR>},
    {"xor", OpKind::Alu, 2, alu::eval<Op::XOR>},
    {"shl", OpKind::Alu, 2, alu::eval<Op::SHL>},
    {"shr", OpKind::Alu, 2, alu::eval<Op::SHR>},
    {"sar", OpKind::Alu, 2, alu::eval<Op::SAR>},
    {"seq", OpKind::Alu, 2, alu::eval<Op::SEQ>},
    {"sne", OpKind::Alu, 2, alu::eval<Op::SNE>},
    {"slt", OpKind::Alu, 2, alu::eval<Op::SLT>},
    {"sle", OpKind::Alu, 2, alu::eval<Op::SLE>},
    {"sltu", OpKind::Alu, 2, alu::eval<Op::SLTU>},
    {"sleu", OpKind::Alu, 2, alu::eval<Op::SLEU>},
    {"sel", OpKind::Alu, 3, alu::eval<Op::SEL>},
    {"min", OpKind::Alu, 2, alu::eval<Op::MIN>},
    {"max", OpKind::Alu, 2, alu::eval<Op::MAX>},
    {"minu", OpKind::Alu, 2, alu::eval<Op::MINU>},
    {"maxu", OpKind::Alu, 2, alu::eval<Op::MAXU>},
    {"popc", OpKind::Alu, 1, alu::eval<Op::POPC>},
    {"clz", OpKind::Alu, 1, alu::eval<Op::CLZ>},
    {"brev", OpKind::Alu, 1, alu::eval<Op::BREV>},
    {"csub", OpKind::Alu, 2, alu::eval<Op::CSUB>},
    {"lane", OpKind::Special, 0, nullptr},
    {"warp", OpKind::Special, 0, nullptr},
    {"cta", OpKind::Special, 0, nullptr},
    {"clock", OpKind::Special, 0, nullptr},
    {"ld", OpKind::Load, 2, nullptr},
    {"st", OpKind::Store, 3, nullptr},
    {"atom", OpKind::Atomic, 3, nullptr},
    {"fadd", OpKind::Float, 2, nullptr},
    {"fsub", OpKind::Float, 2, nullptr},
    {"fmul", OpKind::Float, 2, nullptr},
    {"ffma", OpKind::Float, 3, nullptr},
    {"fdiv", OpKind::Float, 2, nullptr},
    {"fsqrt", OpKind::Float, 1, nullptr},
    {"fmin", OpKind::Float, 2, nullptr},
    {"fmax", OpKind::Float, 2, nullptr},
    {"fcmp", OpKind::Float, 2, nullptr},
    {"i2f", OpKind::Float, 1, nullptr},
    {"u2f", OpKind::Float, 1, nullptr},
    {"f2i", OpKind::Float, 1, nullptr},
    {"f2u", OpKind::Float, 1, nullptr},
    {"frint", OpKind::Float, 1, nullptr},
    {"fex2", OpKind::Float, 1, nullptr},
    {"flg2", OpKind::Float, 1, nullptr},
    {"fsin", OpKind::Float, 1, nullptr},
    {"fcos", OpKind::Float, 1, nullptr},
    {"ftanh", OpKind::Float, 1, nullptr},
    {"dadd", OpKind::Float, 4, nullptr},
    {"dsub", OpKind::Float, 4, nullptr},
    {"dmul", OpKind::Float, 4, nullptr},
    {"dfma", OpKind::Float, 6, nullptr},
    {"ddiv", OpKind::Float, 4, nullptr},
    {"dsqrt", OpKind::Float, 2, nullptr},
    {"dmin", OpKind::Float, 4, nullptr},
    {"dmax", OpKind::Float, 4, nullptr},
    {"dcmp", OpKind::Float, 4, nullptr},
    {"f2d", OpKind::Float, 1, nullptr},
    {"d2f", OpKind::Float, 2, nullptr},
    {"l2d", OpKind::Float, 2, nullptr},
    {"ul2d", OpKind::Float, 2, nullptr},
    {"d2i", OpKind::Float, 2, nullptr},
    {"d2u", OpKind::Float, 2, nullptr},
    {"d2l", OpKind::Float, 2, nullptr},
    {"d2ul", OpKind::Float, 2, nullptr},
    {"drint", OpKind::Float, 2, nullptr},
    {"mma", OpKind::Matrix, 3, nullptr},
    {"atom64", OpKind::Atomic, 5, nullptr},
    {"atomhi", OpKind::Special, 0, nullptr},
};

const AtomInfo kAtoms[kAtomOpCount] = {
    {"add", [](uint32_t o, uint32_t b, uint32_t) { return o + b; }},
    {"min", [](uint32_t o, uint32_t b, uint32_t) { return s(o) < s(b) ? o : b; }},
    {"max", [](uint32_t o, uint32_t b, uint32_t) { return s(o) > s(b) ? o : b; }},
    {"minu", [](uint32_t o, uint32_t b, uint32_t) { return o < b ? o : b; }},
    {"maxu", [](uint32_t o, uint32_t b, uint32_t) { return o > b ? o : b; }},
    {"exch", [](uint32_t, uint32_t b, uint32_t) { return b; }},
    {"cas", [](uint32_t o, uint32_t b, uint32_t c) { return o == b ? c : o; }},
    {"and", [](uint32_t o, uint32_t b, uint32_t) { return o & b; }},
    {"or", [](uint32_t o, uint32_t b, uint32_t) { return o | b; }},
    {"xor", [](uint32_t o, uint32_t b, uint32_t) { return o ^ b; }},
    {"inc", [](uint32_t o, uint32_t b, uint32_t) { return o >= b ? 0u : o + 1; }},
    {"dec", [](uint32_t o, uint32_t b, uint32_t) { return (o == 0 || o > b) ? b : o - 1; }},
    {"fadd", [](uint32_t o, uint32_t b, uint32_t) { return ptx::fref::add(o, b, ptx::Rnd::Rn, true, false); }},
};

const char* rnd_name(FRnd r) {
  switch (r) {
    case FRnd::None: return "";
    case FRnd::Rn: return ".rn";
    case FRnd::Rz: return ".rz";
    case FRnd::Rm: return ".rm";
    case FRnd::Rp: return ".rp";
    case FRnd::Rni: return ".rni";
    case FRnd::Rzi: return ".rzi";
    case FRnd::Rmi: return ".rmi";
    case FRnd::Rpi: return ".rpi";
  }
  return nullptr;  // not a rounding
}

const char* cmp_name(FCmp c) {
  switch (c) {
    case FCmp::Eq: return ".eq";
    case FCmp::Ne: return ".ne";
    case FCmp::Lt: return ".lt";
    case FCmp::Le: return ".le";
    case FCmp::Gt: return ".gt";
    case FCmp::Ge: return ".ge";
    case FCmp::Equ: return ".equ";
    case FCmp::Neu: return ".neu";
    case FCmp::Ltu: return ".ltu";
    case FCmp::Leu: return ".leu";
    case FCmp::Gtu: return ".gtu";
    case FCmp::Geu: return ".geu";
    case FCmp::Num: return ".num";
    case FCmp::Nan: return ".nan";
    case FCmp::None: break;
  }
  return nullptr;  // not a comparison
}

// The modifiers a float op takes (docs/isa.md sections 3.4 and 3.5).
enum class Rounds : uint8_t {
  None,            // it does not round: no rounding, or the default .rn (printed, unused)
  Float,           // .rn .rz .rm .rp
  Integral,        // .rni .rzi .rmi .rpi
  IntegralOrNone,  // frint: .rni .rzi .rmi .rpi, or none (flush and saturation only)
};
struct FloatForm {
  Rounds rounds;
  bool ftz, sat;
};
FloatForm float_form(Op op) {
  switch (op) {
    case Op::FADD: case Op::FSUB: case Op::FMUL: case Op::FFMA: case Op::FDIV: return {Rounds::Float, true, true};
    case Op::FSQRT: return {Rounds::Float, true, false};
    case Op::FMIN: case Op::FMAX: case Op::FCMP: case Op::FEX2: case Op::FLG2: case Op::FSIN: case Op::FCOS:
    case Op::FTANH: return {Rounds::None, true, false};
    case Op::I2F: case Op::U2F: return {Rounds::Float, false, true};
    case Op::F2I: case Op::F2U: return {Rounds::Integral, true, false};
    case Op::FRINT: return {Rounds::IntegralOrNone, true, true};
    case Op::DADD: case Op::DSUB: case Op::DMUL: case Op::DFMA: case Op::DDIV: case Op::DSQRT:
      return {Rounds::Float, false, false};
    case Op::DMIN: case Op::DMAX: case Op::DCMP: return {Rounds::None, false, false};
    case Op::F2D: return {Rounds::None, true, true};
    case Op::D2F: return {Rounds::Float, true, true};
    case Op::L2D: case Op::UL2D: return {Rounds::Float, false, true};
    case Op::D2I: case Op::D2U: case Op::D2L: case Op::D2UL: return {Rounds::Integral, false, false};
    case Op::DRINT: return {Rounds::Integral, false, true};
    default: return {Rounds::None, false, false};
  }
}

// Why a float instruction's modifiers do not fit its op, or "" when they do.
std::string float_misfit(const Instr& in) {
  const std::string op = op_info(in.op).name;
  const std::string sec = is_f64(in.op) ? " (docs/isa.md section 3.5)" : " (docs/isa.md section 3.4)";
  const FloatForm f = float_form(in.op);
  const char* rn = rnd_name(in.fmod.rnd);
  if (!rn) return op + " has rounding " + std::to_string(int(in.fmod.rnd)) + ", which is not a rounding modifier";
  const bool none = in.fmod.rnd == FRnd::None || in.fmod.rnd == FRnd::Rn;
  const bool flt = in.fmod.rnd >= FRnd::Rn && in.fmod.rnd <= FRnd::Rp;
  const bool integral = in.fmod.rnd >= FRnd::Rni && in.fmod.rnd <= FRnd::Rpi;
  switch (f.rounds) {
    case Rounds::None:
      if (!none)
        return op + " does not round: " + rn + " is not a modifier of it (it takes none, or the default .rn)" + sec;
      break;
    case Rounds::Float:
      if (!flt) return op + " takes a rounding .rn .rz .rm .rp, not " + (*rn ? rn : "none") + sec;
      break;
    case Rounds::Integral:
      if (!integral)
        return op + " takes an integer rounding .rni .rzi .rmi .rpi, not " + (*rn ? rn : "none") + sec;
      break;
    case Rounds::IntegralOrNone:
      if (!integral && in.fmod.rnd != FRnd::None)
        return op + " takes an integer rounding .rni .rzi .rmi .rpi or none, not " + rn + sec;
      break;
  }
  const bool cmp = in.op == Op::FCMP || in.op == Op::DCMP;
  const char* cn = cmp_name(in.fmod.cmp);
  if (in.fmod.cmp != FCmp::None && !cn)
    return op + " has comparison " + std::to_string(int(in.fmod.cmp)) + ", which is not a comparison modifier";
  if (cmp && !cn) return op + " needs a comparison (.eq .ne .lt .le .gt .ge, .equ ... .geu, .num, .nan)" + sec;
  if (!cmp && cn) return op + " is not a comparison: " + cn + " is not a modifier of it" + sec;
  if (in.fmod.hi && !has_wide_result(in.op)) return op + " has a 32-bit result: .hi is not a modifier of it" + sec;
  if (in.fmod.ftz && !f.ftz) return op + " has no .ftz" + sec;
  if (in.fmod.sat && !f.sat) return op + " has no .sat" + sec;
  return "";
}

}  // namespace

const OpInfo& op_info(Op op) { return kOps[int(op)]; }
const AtomInfo& atom_info(AtomOp op) { return kAtoms[int(op)]; }

bool atom64_valid(AtomOp op) { return int(op) < kAtomOpCount && op != AtomOp::INC && op != AtomOp::DEC; }

uint64_t eval_atom64(AtomOp op, uint64_t o, uint64_t x, uint64_t y) {
  auto sl = [](uint64_t v) { return int64_t(v); };
  switch (op) {
    case AtomOp::ADD: return o + x;
    case AtomOp::MIN: return sl(o) < sl(x) ? o : x;
    case AtomOp::MAX: return sl(o) > sl(x) ? o : x;
    case AtomOp::MINU: return o < x ? o : x;
    case AtomOp::MAXU: return o > x ? o : x;
    case AtomOp::EXCH: return x;
    case AtomOp::CAS: return o == x ? y : o;
    case AtomOp::AND: return o & x;
    case AtomOp::OR: return o | x;
    case AtomOp::XOR: return o ^ x;
    case AtomOp::FADD: return ptx::fref::add64(o, x, ptx::Rnd::Rn);
    default: return o;
  }
}

const char* space_name(Space sp) {
  switch (sp) {
    case Space::Global: return "global";
    case Space::Shared: return "shared";
    case Space::Local: return "local";
    case Space::Param: return "param";
    case Space::Print: return "print";
  }
  return "?";
}

bool Instr::writes_reg() const { return op_info(op).kind != OpKind::Store; }

Instr make_float(Op op, uint32_t dst, Operand a, Operand b, Operand c, const FloatMod& m) {
  Instr in;
  in.op = op;
  in.dst = dst;
  const int n = op_info(op).arity;
  in.a = n >= 1 ? a : Operand::k(0);
  in.b = n >= 2 ? b : Operand::k(0);
  in.c = n >= 3 ? c : Operand::k(0);
  in.fmod = m;
  if (op != Op::FCMP && op != Op::DCMP) in.fmod.cmp = FCmp::None;
  if (!has_wide_result(op)) in.fmod.hi = false;
  return in;
}

Instr make_float(Op op, uint32_t dst, const Operand (&s)[kMaxArity], const FloatMod& m) {
  Instr in = make_float(op, dst, s[0], s[1], s[2], m);
  const int n = op_info(op).arity;
  for (int k = 3; k < n; ++k) in.src(k) = s[k];
  return in;
}

uint64_t Program::instr_count() const {
  uint64_t n = 0;
  for (auto& b : blocks) n += b.instrs.size();
  return n;
}

void validate(const Program& prog, const Params& p, uint32_t threads) {
  if (prog.blocks.empty()) throw std::invalid_argument("program has no blocks");
  // A machine with a register file split among the threads: the registers
  // of a thread of the launch's CTA size (all of them when it is not set).
  if (threads == 0) threads = prog.threads;
  const uint32_t regs = p.regs_for(std::max<uint32_t>(threads, 1));
  const std::string share = regs < p.regs ? " (a thread of a CTA of " + std::to_string(threads) + " threads has " +
                                                std::to_string(regs) + " registers)"
                                          : "";
  if (prog.blocks.size() > p.rom_blocks)
    throw std::invalid_argument("program needs " + std::to_string(prog.blocks.size()) + " blocks; the ROM holds " +
                                std::to_string(p.rom_blocks));
  auto where = [&](size_t bi, size_t ii) {
    return "block " + std::to_string(bi) + " instruction " + std::to_string(ii) + ": ";
  };
  // The ops first: each defined, and a float op only on a machine with them.
  for (size_t bi = 0; bi < prog.blocks.size(); ++bi)
    for (size_t ii = 0; ii < prog.blocks[bi].instrs.size(); ++ii) {
      const Instr& in = prog.blocks[bi].instrs[ii];
      if (int(in.op) >= kOpCount)
        throw std::invalid_argument(where(bi, ii) + "op " + std::to_string(int(in.op)) + " is not defined");
      const bool native_atom = in.op == Op::ATOM64 || in.op == Op::ATOMHI || (in.op == Op::ATOM && in.atom == AtomOp::FADD);
      if (native_atom && !p.native_float)
        throw std::invalid_argument(where(bi, ii) + to_string(in) +
                                    ": a native f32 or 64-bit atomic, which this machine does not have (docs/isa.md "
                                    "section 3.3)");
      if (op_info(in.op).kind == OpKind::Atomic && int(in.atom) >= kAtomOpCount)
        throw std::invalid_argument(where(bi, ii) + "atomic function " + std::to_string(int(in.atom)) + " is not defined");
      if (in.op == Op::ATOM64 && !atom64_valid(in.atom))
        throw std::invalid_argument(where(bi, ii) + to_string(in) + ": not a 64-bit atomic function");
      if (op_info(in.op).kind != OpKind::Float) continue;
      if (!p.native_float && !p.has_native_rn(in.op))
        throw std::invalid_argument(where(bi, ii) + to_string(in) +
                                    ": a native floating-point operation, which this machine does not have (it "
                                    "runs floating point as integer sequences, docs/isa.md section 11)");
      // The model's machine: its native ops .rn only, without .ftz or .sat.
      if (!p.native_float && (in.fmod.rnd != FRnd::Rn || in.fmod.ftz || in.fmod.sat || in.fmod.hi ||
                              in.fmod.cmp != FCmp::None))
        throw std::invalid_argument(where(bi, ii) + to_string(in) +
                                    ": this machine's native float operations are .rn without .ftz or .sat only (other forms "
                                    "run as integer sequences, docs/isa.md section 11)");
      // The modifiers must fit the op: its kind of rounding, a comparison on
      // fcmp and dcmp only, .hi on a 64-bit result only, .ftz and .sat where
      // the op has them.
      const std::string misfit = float_misfit(in);
      if (!misfit.empty())
        throw std::invalid_argument(where(bi, ii) + to_string(in) + ": invalid floating-point modifiers: " + misfit);
    }
  for (size_t bi = 0; bi < prog.blocks.size(); ++bi) {
    const Block& b = prog.blocks[bi];
    if (b.instrs.size() > p.block_instrs)
      throw std::invalid_argument("block " + std::to_string(bi) + " has " + std::to_string(b.instrs.size()) +
                                  " instructions; the limit is " + std::to_string(p.block_instrs));
    bool stored = false;  // a store or atomic came earlier in this block
    bool latched = false;  // an ATOM64 came earlier in this block
    for (size_t ii = 0; ii < b.instrs.size(); ++ii) {
      const Instr& in = b.instrs[ii];
      const OpInfo& info = op_info(in.op);
      for (int k = 0; k < kMaxArity; ++k)
        if (!in.src(k).imm && in.src(k).v >= regs)
          throw std::invalid_argument(where(bi, ii) + "register r" + std::to_string(in.src(k).v) + " out of range" + share);
      if (in.writes_reg() && in.dst >= regs)
        throw std::invalid_argument(where(bi, ii) + "destination r" + std::to_string(in.dst) + " out of range" + share);
      if (info.kind == OpKind::Load || info.kind == OpKind::Store || info.kind == OpKind::Atomic) {
        if (in.bytes != 1 && in.bytes != 2 && in.bytes != 4)
          throw std::invalid_argument(where(bi, ii) + "access width must be 1, 2 or 4 bytes");
      }
      if (info.kind == OpKind::Matrix) {
        if (!p.native_mma)
          throw std::invalid_argument(where(bi, ii) + to_string(in) +
                                      ": the warp matrix operation, which this machine does not have (docs/isa.md "
                                      "section 7.1)");
        const MmaMod& m = in.mma;
        const bool shape = m.k == 16 && ((m.m == 16 && m.n == 16) || (m.m == 32 && m.n == 8) || (m.m == 8 && m.n == 32));
        if (!shape || in.space != Space::Shared || m.in > MmaIn::U8 || (m.satfinite && m.in == MmaIn::F16))
          throw std::invalid_argument(where(bi, ii) + to_string(in) + ": invalid matrix shape, space or modifiers");
      }
      if ((info.kind == OpKind::Load || info.kind == OpKind::Matrix) && stored)
        throw std::invalid_argument(where(bi, ii) + "load after a store or atomic in the same block");
      if (info.kind == OpKind::Atomic) {
        if (stored) throw std::invalid_argument(where(bi, ii) + "atomic after a store or atomic in the same block");
        if (in.bytes != 4) throw std::invalid_argument(where(bi, ii) + "atomics are 32-bit");
      }
      if (in.op == Op::ATOMHI) {
        if (!latched) throw std::invalid_argument(where(bi, ii) + "atomhi without an atom64 before it in the block");
      }
      if (in.op == Op::ATOM64) {
        if (in.space != Space::Global && in.space != Space::Shared)
          throw std::invalid_argument(where(bi, ii) + "atom64 outside global and shared memory");
        latched = true;
      }
      if (info.kind == OpKind::Store || info.kind == OpKind::Atomic) stored = true;
      if ((info.kind == OpKind::Store || info.kind == OpKind::Atomic) && in.space == Space::Param)
        throw std::invalid_argument(where(bi, ii) + "parameter memory is read-only");
    }
    const Terminator& t = b.term;
    auto check_target = [&](uint32_t x) {
      if (x >= prog.blocks.size())
        throw std::invalid_argument("block " + std::to_string(bi) + ": branch target " + std::to_string(x) +
                                    " out of range");
    };
    switch (t.kind) {
      case Term::BR:
        if (t.cond >= regs)
          throw std::invalid_argument("block " + std::to_string(bi) + ": condition register out of range");
        check_target(t.f);
        [[fallthrough]];
      case Term::JMP:
      case Term::BAR:
      case Term::WBAR: check_target(t.t); break;
      case Term::EXIT:
      case Term::TRAP: break;
    }
  }
}

std::string to_string(const Operand& o) {
  if (!o.imm) return "r" + std::to_string(o.v);
  std::ostringstream os;
  if (int32_t(o.v) >= -4096 && int32_t(o.v) <= 4096)
    os << int32_t(o.v);
  else
    os << "0x" << std::hex << o.v;
  return os.str();
}

std::string to_string(const Instr& in) {
  const OpInfo& info = op_info(in.op);
  std::string r;
  auto addr = [&] { return "[" + to_string(in.a) + (in.b.imm && in.b.v == 0 ? "" : "+" + to_string(in.b)) + "]"; };
  std::string width = std::string(".") + (in.sign ? "s" : "u") + std::to_string(in.bytes * 8);
  switch (info.kind) {
    case OpKind::Alu:
      r = std::string(info.name) + " r" + std::to_string(in.dst);
      if (info.arity >= 1) r += ", " + to_string(in.a);
      if (info.arity >= 2) r += ", " + to_string(in.b);
      if (info.arity >= 3) r += ", " + to_string(in.c);
      return r;
    case OpKind::Special: return std::string(info.name) + " r" + std::to_string(in.dst);
    case OpKind::Load:
      return std::string("ld.") + space_name(in.space) + width + " r" + std::to_string(in.dst) + ", " + addr();
    case OpKind::Store:
      return std::string("st.") + space_name(in.space) + ".b" + std::to_string(in.bytes * 8) + " " + addr() + ", " +
             to_string(in.c);
    case OpKind::Atomic:
      if (in.op == Op::ATOM64)
        return std::string("atom64.") + space_name(in.space) + "." + atom_info(in.atom).name + " r" +
               std::to_string(in.dst) + ", [" + to_string(in.a) + "], " + to_string(in.b) + ", " + to_string(in.c) +
               ", " + to_string(in.d) + ", " + to_string(in.e);
      return std::string("atom.") + space_name(in.space) + "." + atom_info(in.atom).name + " r" +
             std::to_string(in.dst) + ", [" + to_string(in.a) + "], " + to_string(in.b) + ", " + to_string(in.c);
    case OpKind::Matrix: {
      const MmaMod& m = in.mma;
      const char* t = m.in == MmaIn::F16 ? ".f32.f16" : m.in == MmaIn::S8 ? ".s32.s8" : ".s32.u8";
      return std::string("mma.m") + std::to_string(m.m) + "n" + std::to_string(m.n) + "k" + std::to_string(m.k) + t +
             (m.satfinite ? ".satfinite" : "") + " r" + std::to_string(in.dst) + ", [" + to_string(in.a) + "], " +
             to_string(in.b) + ", " + to_string(in.c);
    }
    case OpKind::Float: {
      const bool cmp = in.op == Op::FCMP || in.op == Op::DCMP;
      const char* mod = cmp ? cmp_name(in.fmod.cmp) : rnd_name(in.fmod.rnd);
      r = std::string(info.name) + (mod ? mod : ".?");
      if (in.fmod.ftz) r += ".ftz";
      if (in.fmod.sat) r += ".sat";
      if (has_wide_result(in.op)) r += in.fmod.hi ? ".hi" : ".lo";
      r += " r" + std::to_string(in.dst);
      for (int k = 0; k < info.arity; ++k) r += ", " + to_string(in.src(k));
      return r;
    }
  }
  return "?";
}

std::string to_string(const Terminator& t) {
  switch (t.kind) {
    case Term::JMP: return "jmp B" + std::to_string(t.t);
    case Term::BR: return "br r" + std::to_string(t.cond) + ", B" + std::to_string(t.t) + ", B" + std::to_string(t.f);
    case Term::EXIT: return "exit";
    case Term::BAR: return "bar B" + std::to_string(t.t);
    case Term::WBAR: return "wbar B" + std::to_string(t.t);
    case Term::TRAP: return "trap " + std::to_string(t.code);
  }
  return "?";
}

std::string to_string(const Program& prog) {
  std::ostringstream os;
  os << "// " << prog.kernel << ": " << prog.blocks.size() << " blocks, " << prog.instr_count()
     << " instructions, shared " << prog.shared_bytes << " B/CTA, local " << prog.local_bytes << " B/thread\n";
  for (size_t i = 0; i < prog.blocks.size(); ++i) {
    os << "B" << i << ":\n";
    for (auto& in : prog.blocks[i].instrs) os << "  " << to_string(in) << "\n";
    os << "  " << to_string(prog.blocks[i].term) << "\n";
  }
  return os.str();
}

}  // namespace qgpu::machine
