// Lowering PTX to machine blocks (docs/isa.md, "Lowering").
//
// Four passes:
//   1. expand: every PTX instruction becomes machine operations on virtual
//      32-bit registers (a 64-bit PTX register is a pair, a predicate holds
//      0/1), with labels and branches; device functions are inlined, CUDA
//      warp operations go through a per-warp scratch area in shared memory
//      and the warp-group barrier; for the model's machine, the operations
//      its circuit does not have are then rewritten into ones it has;
//   2. clean up: constant folding, copy propagation, dead-code elimination;
//   3. allocate: linear scan over liveness intervals into the machine's
//      registers, spilling to local memory through reserved scratch registers;
//   4. form blocks: cut the straight-line code into blocks of at most K
//      instructions that obey the memory rule (no load or atomic after a store
//      or atomic in the same block), each ending in one control transfer.
#include "model_host/launch/errors.h"
#include "model_host/machine/lower.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cstring>
#include <functional>
#include <optional>
#include <set>

#include "model_host/machine/printf.h"
#include "model_host/machine/softfloat.h"
#include "model_host/machine/texture.h"
#include "model_host/ptx/float_ref.h"
#include "model_host/ptx/layout.h"

namespace qgpu::machine {
namespace {

using ptx::Type;

constexpr uint32_t kNoV = UINT32_MAX;
constexpr uint32_t kSpillScratch = 3;  // registers reserved for reloading spilled values

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

Operand R(uint32_t v) { return Operand::reg(v); }
Operand K(uint32_t k) { return Operand::k(k); }

bool is_mem_read(const Instr& in) { return in.op == Op::LD || in.op == Op::ATOM; }
bool is_mem_write(const Instr& in) { return in.op == Op::ST || in.op == Op::ATOM; }

// Sources an instruction reads, in operand order.
std::vector<const Operand*> sources(const Instr& in) {
  const Operand* all[3] = {&in.a, &in.b, &in.c};
  std::vector<const Operand*> r;
  int n = op_info(in.op).arity;
  for (int i = 0; i < n; ++i)
    if (!all[i]->imm) r.push_back(all[i]);
  return r;
}

// Thrown when a program should be lowered again with fewer optimisations:
// the fast 64-bit division path when it does not fit the ROM, hoisting when
// it made the allocator spill.  lower() does so.
struct Relower {
  bool compact_division = false;
  uint32_t max_hoisted = UINT32_MAX;  // the cap to lower with (0: no hoisting)
};

// The basic blocks of virtual code (a label or the instruction after a
// control transfer starts one), their successors and predecessors.
struct Cfg {
  uint32_t n = 0;
  std::vector<uint32_t> starts;
  std::vector<std::vector<uint32_t>> succ, pred;
  uint32_t blocks() const { return uint32_t(starts.size()); }
  uint32_t end(uint32_t b) const { return b + 1 < starts.size() ? starts[b + 1] : n; }
};

Cfg build_cfg(const std::vector<VI>& code, uint32_t nlabels) {
  Cfg g;
  g.n = uint32_t(code.size());
  std::vector<uint32_t> label_pos(nlabels, UINT32_MAX);
  for (uint32_t i = 0; i < g.n; ++i)
    if (code[i].kind == VI::Label) label_pos[code[i].l1] = i;
  for (uint32_t i = 0; i < g.n; ++i) {
    bool leader = i == 0 || code[i].kind == VI::Label;
    if (i > 0) {
      auto k = code[i - 1].kind;
      leader |= k == VI::Jmp || k == VI::Br || k == VI::Exit || k == VI::Trap || k == VI::Bar || k == VI::Wbar;
    }
    if (leader) g.starts.push_back(i);
  }
  const uint32_t nb = g.blocks();
  std::vector<uint32_t> block_of(g.n);
  for (uint32_t b = 0; b < nb; ++b)
    for (uint32_t i = g.starts[b]; i < g.end(b); ++i) block_of[i] = b;
  g.succ.resize(nb);
  for (uint32_t b = 0; b < nb; ++b) {
    const VI& v = code[g.end(b) - 1];
    auto to = [&](uint32_t l) {
      if (label_pos[l] != UINT32_MAX) g.succ[b].push_back(block_of[label_pos[l]]);
    };
    switch (v.kind) {
      case VI::Jmp:
      case VI::Bar:
      case VI::Wbar: to(v.l1); break;
      case VI::Br:
        to(v.l1);
        to(v.l2);
        break;
      case VI::Exit:
      case VI::Trap: break;
      default:
        if (b + 1 < nb) g.succ[b].push_back(b + 1);
    }
  }
  g.pred.resize(nb);
  for (uint32_t b = 0; b < nb; ++b)
    for (uint32_t t : g.succ[b]) g.pred[t].push_back(b);
  return g;
}

// What is known of a 32-bit value: the bits set in `known` are those of `value`.
struct KnownBits {
  uint32_t known = 0, value = 0;
  bool operator==(const KnownBits&) const = default;
  static KnownBits constant(uint32_t v) { return {~0u, v}; }
  // Bits 0 .. n-1 known, n the number of low bits known in both.
  static uint32_t low_known(KnownBits a, KnownBits b) {
    const uint32_t both = a.known & b.known;
    return both == ~0u ? ~0u : (1u << __builtin_ctz(~both)) - 1;
  }
  friend KnownBits join(KnownBits a, KnownBits b) {
    const uint32_t k = a.known & b.known & ~(a.value ^ b.value);
    return {k, a.value & k};
  }
};

// The known bits of an ALU result from those of its operands.
KnownBits known_result(const Instr& in, KnownBits a, KnownBits b, KnownBits c) {
  auto low = [&](uint32_t v) {
    const uint32_t m = KnownBits::low_known(a, b);
    return KnownBits{m, v & m};
  };
  const bool shift_known = b.known == ~0u && b.value < 32;
  const uint32_t s = b.value;
  switch (in.op) {
    case Op::MOV: return a;
    case Op::ADD: return low(a.value + b.value);
    case Op::SUB: return low(a.value - b.value);
    case Op::MUL: {
      KnownBits r = low(a.value * b.value);
      // Trailing zeros add up.
      auto tz = [](KnownBits x) { return uint32_t(__builtin_ctz(~(x.known & ~x.value) | 0x80000000u)); };
      const uint32_t z = std::min(31u, tz(a) + tz(b));
      const uint32_t zm = (1u << z) - 1;
      if ((r.known & zm) != zm) r = {r.known | zm, r.value & ~zm};
      return r;
    }
    case Op::AND: {
      const uint32_t k = (a.known & b.known) | (a.known & ~a.value) | (b.known & ~b.value);
      return {k, a.value & b.value & k};
    }
    case Op::OR: {
      const uint32_t k = (a.known & b.known) | (a.known & a.value) | (b.known & b.value);
      return {k, (a.value | b.value) & k};
    }
    case Op::XOR: return {a.known & b.known, (a.value ^ b.value) & a.known & b.known};
    case Op::SHL:
      if (!shift_known) return {};
      return {(a.known << s) | ((1u << s) - 1), a.value << s};
    case Op::SHR:
      if (!shift_known) return {};
      return {(a.known >> s) | ~(~0u >> s), a.value >> s};
    case Op::SAR: {
      if (!shift_known) return {};
      const uint32_t k = (a.known >> 31) ? uint32_t(int32_t(a.known) >> s) : a.known >> s;
      return {k, uint32_t(int32_t(a.value) >> s) & k};
    }
    case Op::SEQ: case Op::SNE: case Op::SLT: case Op::SLE: case Op::SLTU: case Op::SLEU:
      return {~1u, 0};
    case Op::POPC: case Op::CLZ: return {~63u, 0};
    case Op::SEL: return join(b, c);
    case Op::MIN: case Op::MAX: case Op::MINU: case Op::MAXU: return join(a, b);
    default: return {};
  }
}

// One inlined function body.
struct Frame {
  const ptx::Function* f = nullptr;
  uint32_t findex = 0;
  std::vector<std::array<uint32_t, 2>> regs;  // PTX register -> vregs (hi kNoV if <= 32 bits)
  std::vector<uint32_t> labels;               // PTX label -> label id
  std::vector<uint32_t> var_off;              // body .local/.param variable -> local offset
  std::vector<uint32_t> param_off, ret_off;   // inlined .func: its params/rets -> local offsets
  bool kernel = false;
  uint32_t ret_label = 0;
};

class Lowerer {
 public:
  Lowerer(const ptx::Module& m, const LaunchShape& s, const Params& p, const LowerOptions& o)
      : m_(m), shape_(s), p_(p), opts_(o) {}

  Program run(const std::string& kernel);

 private:
  [[noreturn]] void unsupported(const ptx::Instr& in, const std::string& why) {
    throw LowerError(launch::kNotSupported, "PTX line " + std::to_string(in.line) + ": `" + in.opcode + "` " + why);
  }

  // ---- emission -----------------------------------------------------------
  uint32_t nv() { return nvregs_++; }
  uint32_t new_label() { return nlabels_++; }
  void emit(const Instr& in) { code_.push_back({VI::Ins, in}); }
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
  void place(uint32_t l) { code_.push_back({VI::Label, {}, l}); }
  void exit_thread() {
    VI v;
    v.kind = VI::Exit;
    code_.push_back(v);
  }
  void jmp(uint32_t l) { code_.push_back({VI::Jmp, {}, l}); }
  void br(Operand c, uint32_t t, uint32_t f) {
    if (c.imm) return jmp(c.v ? t : f);
    code_.push_back({VI::Br, {}, t, f, c.v});
  }
  void barrier(VI::Kind k) {
    uint32_t next = new_label();
    code_.push_back({k, {}, next});
    place(next);
  }

  // 64-bit helpers on word pairs.
  V add64(V a, V b) {
    Operand lo = opr(Op::ADD, a.lo, b.lo);
    Operand c = opr(Op::SLTU, lo, a.lo);
    return {lo, opr(Op::ADD, opr(Op::ADD, a.hi, b.hi), c)};
  }
  V sub64(V a, V b) {
    Operand bw = opr(Op::SLTU, a.lo, b.lo);
    Operand lo = opr(Op::SUB, a.lo, b.lo);
    return {lo, opr(Op::SUB, opr(Op::SUB, a.hi, b.hi), bw)};
  }
  V neg64(V a) { return sub64({K(0), K(0)}, a); }
  V mul64(V a, V b) {
    Operand lo = opr(Op::MUL, a.lo, b.lo);
    Operand hi = opr(Op::MULHU, a.lo, b.lo);
    hi = opr(Op::ADD, hi, opr(Op::MUL, a.lo, b.hi));
    hi = opr(Op::ADD, hi, opr(Op::MUL, a.hi, b.lo));
    return {lo, hi};
  }
  // High 64 bits of the 128-bit product.
  V mulhi64(V a, V b, bool sign) {
    auto addc = [&](Operand x, Operand y, Operand& carry) {
      Operand s = opr(Op::ADD, x, y);
      carry = opr(Op::ADD, carry, opr(Op::SLTU, s, x));
      return s;
    };
    Operand ll_hi = opr(Op::MULHU, a.lo, b.lo);
    Operand lh_lo = opr(Op::MUL, a.lo, b.hi), lh_hi = opr(Op::MULHU, a.lo, b.hi);
    Operand hl_lo = opr(Op::MUL, a.hi, b.lo), hl_hi = opr(Op::MULHU, a.hi, b.lo);
    Operand hh_lo = opr(Op::MUL, a.hi, b.hi), hh_hi = opr(Op::MULHU, a.hi, b.hi);
    Operand c1 = K(0), c2 = K(0);
    Operand w1 = addc(ll_hi, lh_lo, c1);
    addc(w1, hl_lo, c1);
    Operand w2 = addc(lh_hi, hl_hi, c2);
    w2 = addc(w2, hh_lo, c2);
    w2 = addc(w2, c1, c2);
    V r{w2, opr(Op::ADD, hh_hi, c2)};
    if (sign) {  // signed high = unsigned high - (a<0 ? b : 0) - (b<0 ? a : 0)
      Operand an = opr(Op::SLT, a.hi, K(0)), bn = opr(Op::SLT, b.hi, K(0));
      r = sub64(r, {opr(Op::SEL, an, b.lo, K(0)), opr(Op::SEL, an, b.hi, K(0))});
      r = sub64(r, {opr(Op::SEL, bn, a.lo, K(0)), opr(Op::SEL, bn, a.hi, K(0))});
    }
    return r;
  }
  Operand eq64(V a, V b) { return opr(Op::AND, opr(Op::SEQ, a.lo, b.lo), opr(Op::SEQ, a.hi, b.hi)); }
  Operand lt64(V a, V b, bool sign, bool or_equal) {
    Operand hlt = opr(sign ? Op::SLT : Op::SLTU, a.hi, b.hi);
    Operand heq = opr(Op::SEQ, a.hi, b.hi);
    Operand llt = opr(or_equal ? Op::SLEU : Op::SLTU, a.lo, b.lo);
    return opr(Op::OR, hlt, opr(Op::AND, heq, llt));
  }
  V shl64(V a, Operand n) {
    Operand hi = opr(Op::OR, opr(Op::SHL, a.hi, n), opr(Op::SHR, a.lo, opr(Op::SUB, K(32), n)));
    hi = opr(Op::OR, hi, opr(Op::SHL, a.lo, opr(Op::SUB, n, K(32))));
    return {opr(Op::SHL, a.lo, n), hi};
  }
  V shr64(V a, Operand n, bool sign) {
    Operand lo = opr(Op::OR, opr(Op::SHR, a.lo, n), opr(Op::SHL, a.hi, opr(Op::SUB, K(32), n)));
    Operand over = opr(Op::SUB, n, K(32));
    if (sign)
      lo = opr(Op::OR, lo, opr(Op::SEL, opr(Op::SLTU, K(31), n), opr(Op::SAR, a.hi, over), K(0)));
    else
      lo = opr(Op::OR, lo, opr(Op::SHR, a.hi, over));
    return {lo, opr(sign ? Op::SAR : Op::SHR, a.hi, n)};
  }

  // Division routines (docs/isa.md, "Division"): long division with the
  // divisor aligned under the dividend's top bit, one quotient bit per
  // iteration, as an inline loop over the quotient's bits only.  No quotient
  // bit above i0 = clz(d) - clz(n) can be 1 (n >> (i0 + 1) has fewer bits
  // than d), so the loop compares and subtracts d << i for i = i0 .. 0, and
  // d << i0 has exactly n's bit length: nothing overflows.  n < d gives
  // i0 = -1 (no iteration, r = n); a zero divisor runs every bit (i0 = 31 or
  // 63), subtracting 0 each time: q all ones, r = n.  The loop counts its
  // iterations down to zero and branches on the count itself.  The quotient
  // is only accumulated when it is used.
  //
  // A 32-bit step subtracts with r = minu(r, r - dd): when dd <= r, r - dd is
  // the smaller; when dd > r, r - dd wraps to 2^32 - (dd - r) > r.
  //
  // The quotient costs 3 more operations a bit when the loop accumulates it.
  // A long one (more than kShortQuotient bits) is computed after the loop
  // instead: n - r = q d exactly, so with d = d' 2^s, d' odd, (n - r) >> s =
  // q d' exactly (< 2^32), and q = (q d') x mod 2^32 for x the inverse of d'
  // modulo 2^32 (exact_quotient): about 20 operations once, most of whose
  // values are wide (two tokens each on the model), against 3 a bit.
  static constexpr uint32_t kShortQuotient = 10;
  // With `out` (a register n and d do not read), the result it returns is
  // computed in that register.
  std::pair<Operand, Operand> udiv32(Operand n, Operand d, bool want_q, uint32_t out = kNoV) {
    Operand i0 = opr(Op::MAX, opr(Op::SUB, opr(Op::CLZ, d), opr(Op::CLZ, n)), K(uint32_t(-1)));
    Operand i = opr(Op::SEL, opr(Op::SEQ, d, K(0)), K(31), i0);
    uint32_t dd = op(Op::SHL, d, i);
    uint32_t r = out != kNoV && !want_q ? out : nv(), q = out != kNoV && want_q ? out : nv();
    opd(r, Op::MOV, n);
    if (want_q) opd(q, Op::MOV, K(0));
    uint32_t k = op(Op::ADD, i, K(1));
    // The remainder loop, with the quotient when `with_q`; `out` after the last bit.
    auto steps = [&](bool with_q, uint32_t out) {
      uint32_t loop = new_label();
      br(R(k), loop, out);
      place(loop);
      if (with_q) opd(q, Op::OR, opr(Op::SHL, R(q), K(1)), opr(Op::SLEU, R(dd), R(r)));
      opd(r, Op::MINU, R(r), opr(Op::SUB, R(r), R(dd)));
      opd(dd, Op::SHR, R(dd), K(1));
      opd(k, Op::ADD, R(k), K(uint32_t(-1)));
      br(R(k), loop, out);
    };
    uint32_t done = new_label();
    if (want_q) {
      uint32_t short_q = new_label(), long_q = new_label(), after = new_label();
      br(opr(Op::SLTU, K(kShortQuotient), R(k)), long_q, short_q);
      place(short_q);
      steps(true, done);
      place(long_q);
      steps(false, after);
      place(after);
      opd(q, Op::MOV, exact_quotient(opr(Op::SUB, n, R(r)), d));
    } else {
      steps(false, done);
    }
    place(done);
    return {want_q ? R(q) : K(0), R(r)};
  }
  // (m / d) mod 2^32 for m = m_hi 2^32 + m_lo a multiple of d (see
  // udiv32); all ones for d = 0.
  Operand exact_quotient(Operand m_lo, Operand d, Operand m_hi = K(0)) {
    Operand s = opr(Op::CLZ, opr(Op::BREV, d));
    Operand odd = opr(Op::SHR, d, s);
    Operand x = opr(Op::XOR, opr(Op::MUL, odd, K(3)), K(2));
    for (int step = 0; step < 3; ++step) x = opr(Op::MUL, x, opr(Op::SUB, K(2), opr(Op::MUL, odd, x)));
    Operand shifted = opr(Op::SHR, m_lo, s);
    if (!m_hi.imm || m_hi.v != 0) shifted = opr(Op::OR, shifted, opr(Op::SHL, m_hi, opr(Op::SUB, K(32), s)));
    Operand q = opr(Op::MUL, shifted, x);
    return opr(Op::SEL, opr(Op::SEQ, d, K(0)), K(uint32_t(-1)), q);
  }
  // Division by a normalised divisor dn (bit 31 set) through its reciprocal
  // v = floor((2^64 - 1) / dn) - 2^32 (Moller and Granlund, "Improved
  // division by invariant integers", 2011): (u1 2^32 + u0) / dn for u1 < dn
  // from one 32 x 32 -> 64 product and two corrections.
  std::pair<Operand, Operand> div_preinv(Operand u1, Operand u0, Operand dn, Operand v, bool want_q) {
    Operand p0 = opr(Op::MUL, v, u1), p1 = opr(Op::MULHU, v, u1);
    Operand q0 = opr(Op::ADD, p0, u0);
    Operand q1 = opr(Op::ADD, opr(Op::ADD, p1, u1), opr(Op::ADD, opr(Op::SLTU, q0, p0), K(1)));
    Operand r = opr(Op::SUB, u0, opr(Op::MUL, q1, dn));
    Operand over = opr(Op::SLTU, q0, r);  // the estimate was one too large
    r = opr(Op::ADD, r, opr(Op::SEL, over, dn, K(0)));
    if (want_q) q1 = opr(Op::ADD, opr(Op::SUB, q1, over), opr(Op::SLEU, dn, r));
    return {q1, opr(Op::MINU, r, opr(Op::SUB, r, dn))};
  }
  // Makes recip_v_ the reciprocal of dn (>= 2^31) unless recip_d_ says it
  // is already.  The remainder of (2^64 - 1) / dn comes from restoring
  // division of (~dn, 2^32 - 1), whose high word is below dn, one bit a step
  // (every incoming bit is 1); the quotient, v + 2^32, then from
  // 2^64 - 1 - r = (v + 2^32) dn through exact_quotient.
  void refresh_reciprocal(Operand dn) {
    const uint32_t first = nvregs_;
    uint32_t compute = new_label(), ready = new_label(), loop = new_label(), out = new_label();
    br(opr(Op::SNE, R(recip_d_), dn), compute, ready);
    place(compute);
    uint32_t r = op(Op::XOR, dn, K(~0u)), k = op(Op::MOV, K(32));
    jmp(loop);
    place(loop);
    // 2r + 1 mod 2^32, then less dn where that is at least dn: always when
    // r >= 2^31 (the sum overflowed: 2r + 1 - dn < dn), so the minimum
    // takes the difference there.
    Operand carry = opr(Op::SAR, R(r), K(31));
    Operand twice = opr(Op::ADD, opr(Op::ADD, R(r), R(r)), K(1));
    opd(r, Op::MINU, opr(Op::OR, twice, carry), opr(Op::SUB, twice, dn));
    opd(k, Op::ADD, R(k), K(uint32_t(-1)));
    br(R(k), loop, out);
    place(out);
    opd(recip_v_, Op::MOV, exact_quotient(opr(Op::XOR, R(r), K(~0u)), dn, K(~0u)));
    opd(recip_d_, Op::MOV, dn);
    place(ready);
    // Run once per divisor: hoisting its invariant part out of a loop would
    // only hold more registers across the loop.
    cold_.resize(nvregs_, false);
    std::fill(cold_.begin() + first, cold_.end(), true);
  }
  Operand clz64(V x) {
    return opr(Op::SEL, opr(Op::SEQ, x.hi, K(0)), opr(Op::ADD, opr(Op::CLZ, x.lo), K(32)), opr(Op::CLZ, x.hi));
  }
  // 64-bit division.  A divisor below 2^32 (the common 64-by-32 case, such
  // as a product reduced modulo a 32-bit number) takes a shorter path: a
  // dividend below 2^32 too is divided by udiv32; otherwise, normalised,
  // dn = d << s with s = clz(d), the dividend shifted by s has three words,
  // and two steps of div_preinv divide them (the first only when n_hi >= d:
  // otherwise its quotient is 0 and its remainder the middle word); the
  // remainder is shifted back.  The reciprocal is kept per thread
  // with the divisor it belongs to (recip_d_, recip_v_) and computed again
  // only when the divisor changes: a loop that divides by a fixed modulus
  // pays for it once.  Other divisors run the 64-bit loop.
  // The result it returns is written into `out`'s registers when given
  // (the caller's destination, which n and d must not read), else into
  // registers of its own; each path writes it once, where it ends.
  std::pair<V, V> udiv64(V n, V d, bool want_q, const std::array<uint32_t, 2>* out = nullptr) {
    uint32_t qlo = nv(), qhi = nv(), rlo = nv(), rhi = nv();
    if (out) (want_q ? qlo : rlo) = (*out)[0], (want_q ? qhi : rhi) = (*out)[1];
    uint32_t narrow = new_label(), wide = new_label(), done = new_label();
    if (opts_.compact_division) {
      jmp(wide);
    } else {
      narrow_division_ = true;
      br(opr(Op::OR, d.hi, opr(Op::SEQ, d.lo, K(0))), wide, narrow);
      place(narrow);
      uint32_t word = new_label(), words = new_label();
      br(n.hi, words, word);
      place(word);  // a 32-bit dividend: the 32-bit division, with no reciprocal
      {
        auto [q, r] = udiv32(n.lo, d.lo, want_q);
        if (want_q) {
          opd(qlo, Op::MOV, q);
          opd(qhi, Op::MOV, K(0));
        } else {
          opd(rlo, Op::MOV, r);
          opd(rhi, Op::MOV, K(0));
        }
        jmp(done);
      }
      place(words);
      Operand s = opr(Op::CLZ, d.lo), back = opr(Op::SUB, K(32), s);
      Operand dn = opr(Op::SHL, d.lo, s);
      refresh_reciprocal(dn);
      const Operand v = R(recip_v_);
      Operand w1 = opr(Op::OR, opr(Op::SHL, n.hi, s), opr(Op::SHR, n.lo, back));
      Operand w0 = opr(Op::SHL, n.lo, s);
      uint32_t u1 = op(Op::MOV, w1), q1 = want_q ? op(Op::MOV, K(0)) : 0;
      uint32_t low = new_label(), high = new_label();
      br(opr(Op::SLTU, n.hi, d.lo), low, high);
      place(high);
      auto [qh, rh] = div_preinv(opr(Op::SHR, n.hi, back), w1, dn, v, want_q);
      opd(u1, Op::MOV, rh);
      if (want_q) opd(q1, Op::MOV, qh);
      place(low);
      auto [q0, r0] = div_preinv(R(u1), w0, dn, v, want_q);
      if (want_q) {
        opd(qlo, Op::MOV, q0);
        opd(qhi, Op::MOV, R(q1));
      } else {
        opd(rlo, Op::SHR, r0, s);
        opd(rhi, Op::MOV, K(0));
      }
      jmp(done);
    }

    place(wide);
    {
      opd(rlo, Op::MOV, n.lo);
      opd(rhi, Op::MOV, n.hi);
      if (want_q) {
        opd(qlo, Op::MOV, K(0));
        opd(qhi, Op::MOV, K(0));
      }
      Operand i0 = opr(Op::MAX, opr(Op::SUB, clz64(d), clz64(n)), K(uint32_t(-1)));
      Operand i = opr(Op::SEL, opr(Op::SEQ, opr(Op::OR, d.lo, d.hi), K(0)), K(63), i0);
      V d0 = shl64(d, i);
      uint32_t dlo = op(Op::MOV, d0.lo), dhi = op(Op::MOV, d0.hi);
      uint32_t k = op(Op::ADD, i, K(1));
      uint32_t loop = new_label();
      br(R(k), loop, done);
      place(loop);
      Operand ge = lt64({R(dlo), R(dhi)}, {R(rlo), R(rhi)}, false, true);
      Operand tlo = opr(Op::SEL, ge, R(dlo), K(0)), thi = opr(Op::SEL, ge, R(dhi), K(0));
      Operand borrow = opr(Op::SLTU, R(rlo), tlo);
      opd(rlo, Op::SUB, R(rlo), tlo);
      opd(rhi, Op::SUB, opr(Op::SUB, R(rhi), thi), borrow);
      if (want_q) {
        opd(qhi, Op::OR, opr(Op::SHL, R(qhi), K(1)), opr(Op::SHR, R(qlo), K(31)));
        opd(qlo, Op::OR, opr(Op::SHL, R(qlo), K(1)), ge);
      }
      opd(dlo, Op::OR, opr(Op::SHR, R(dlo), K(1)), opr(Op::SHL, R(dhi), K(31)));
      opd(dhi, Op::SHR, R(dhi), K(1));
      opd(k, Op::ADD, R(k), K(uint32_t(-1)));
      br(R(k), loop, done);
    }
    place(done);
    const V q = want_q ? V{R(qlo), R(qhi)} : V{K(0), K(0)};
    return {q, want_q ? V{K(0), K(0)} : V{R(rlo), R(rhi)}};
  }
  Operand neg_if32(Operand a, Operand neg) { return opr(Op::SEL, neg, opr(Op::SUB, K(0), a), a); }
  V neg_if64(V a, Operand neg) {
    V n = neg64(a);
    return {opr(Op::SEL, neg, n.lo, a.lo), opr(Op::SEL, neg, n.hi, a.hi)};
  }

  // ---- the thread's coordinates ---------------------------------------------
  // The thread's linear index in its CTA, computed once at kernel entry.
  Operand tid_linear() { return R(tid_); }
  // x / d and x % d for x < bound and a launch constant d.  When every
  // x * d < 2^32 one high multiply is exact; otherwise (CUDA-sized grids)
  // the round-up method that is exact for every 32-bit x: t = mulhu(x, m'),
  // x / d = (t + ((x - t) >> 1)) >> (l - 1), l = ceil(log2 d).
  Operand div_const(Operand x, uint32_t d, uint64_t bound) {
    if (d == 1) return x;
    if (std::has_single_bit(d)) return opr(Op::SHR, x, K(std::countr_zero(d)));
    if (bound == 0 || (bound - 1) * d < (uint64_t(1) << 32)) {
      uint32_t m = uint32_t((uint64_t(1) << 32) / d + 1);  // exact for x * d < 2^32
      return opr(Op::MULHU, x, K(m));
    }
    const uint32_t l = uint32_t(std::bit_width(d - 1));
    const uint32_t m = uint32_t(((uint64_t(1) << 32) * ((uint64_t(1) << l) - d)) / d + 1);
    Operand t = opr(Op::MULHU, x, K(m));
    return opr(Op::SHR, opr(Op::ADD, t, opr(Op::SHR, opr(Op::SUB, x, t), K(1))), K(l - 1));
  }
  Operand rem_const(Operand x, uint32_t d, uint64_t bound) {
    if (d == 1) return K(0);
    if (std::has_single_bit(d)) return opr(Op::AND, x, K(d - 1));
    return opr(Op::SUB, x, opr(Op::MUL, div_const(x, d, bound), K(d)));
  }
  // Component c of the linear index `lin` (< dim.count()) of a 3-D shape.
  Operand component(Operand lin, const launch::Dim3& dim, char c) {
    const uint64_t n = dim.count();
    if (c == 'x') return dim.y * dim.z == 1 ? lin : rem_const(lin, dim.x, n);
    if (c == 'y' && dim.z == 1) return div_const(lin, dim.x, n);
    if (c == 'y') return rem_const(div_const(lin, dim.x, n), dim.y, (n + dim.x - 1) / dim.x);
    return div_const(lin, dim.x * dim.y, n);
  }
  static uint32_t dim_of(const launch::Dim3& d, char c) { return c == 'x' ? d.x : c == 'y' ? d.y : d.z; }
  Operand special(const ptx::Instr& in, const ptx::Operand& o);

  // ---- operands -------------------------------------------------------------
  V read(const ptx::Instr& in, const ptx::Operand& o, Type t);
  Operand read32(const ptx::Instr& in, const ptx::Operand& o, Type t) { return read(in, o, t).lo; }
  void write(const ptx::Operand& d, Type t, V v);
  Operand address(const ptx::Instr& in, const ptx::Operand& o, uint32_t& off, Space& sp);
  uint32_t symbol_address(const ptx::Instr& in, const ptx::SymRef& s, ptx::Space* space);
  Space mem_space(const ptx::Instr& in, ptx::Space sp);

  // ---- instructions ---------------------------------------------------------
  void lower_function(Frame& fr);
  void lower_instr(const ptx::Instr& in);
  void lower_guarded(const ptx::Instr& in);
  void lower_setp(const ptx::Instr& in);
  void lower_float(const ptx::Instr& in);
  bool lower_half(const ptx::Instr& in, const ptx::FloatMods& fm);
  static V float_literal(const ptx::Operand& o, uint32_t size);
  void lower_cvt(const ptx::Instr& in);
  void lower_divrem(const ptx::Instr& in);
  const std::array<uint32_t, 2>* direct_destination(const ptx::Instr& in, std::initializer_list<V> srcs,
                                                    uint32_t bytes);
  void lower_ldst(const ptx::Instr& in);
  void lower_atom(const ptx::Instr& in);
  void lower_atom32(const ptx::Instr& in, Space sp, Operand addr);
  void lower_atom64(const ptx::Instr& in, Space sp, Operand addr);
  bool is_generic(const ptx::Instr& in, const ptx::Operand& addr_op);
  void dispatch_generic(Operand a, const std::function<void(Space, Operand)>& access);
  void lower_match(const ptx::Instr& in);
  void lower_call(const ptx::Instr& in);
  void lower_printf(const ptx::Instr& in);
  void lower_assert(const ptx::Instr& in);
  void append_print_record(Operand format, uint32_t bytes, const std::vector<Operand>& words);
  std::string printf_format(const ptx::Instr& call);
  void lower_shfl(const ptx::Instr& in);
  void clear_shfl_slot(Operand area);
  void lower_vote(const ptx::Instr& in);
  void lower_bar_red(const ptx::Instr& in);
  uint32_t local_alloc(uint64_t size, uint32_t align);
  Operand warp_scratch(uint32_t word);  // shared offset of this CUDA warp's scratch word
  Operand warp_ballot(Operand bit_pred);

  // ---- more of PTX's integer instructions (lower_more.*; docs/isa.md 8.2) -----
  // Carry chains, lop3, mul24/mad24, sad, dp4a/dp2a, bmsk/szext, saturating
  // add/sub, redux.sync, every match form, 64-bit bfe/bfi/bfind, prmt's
  // modes, counted and named barriers, device malloc/free and indirect calls.
  // lower_more() takes the instructions it handles and returns true.
  bool lower_more(const ptx::Instr& in);
  // tex, suld.b, sust.b (texture.h; docs/isa.md section 8.3).
  void lower_texture(const ptx::Instr& in);
  Operand special_more(const ptx::Instr& in, const ptx::Operand& o);
  void set_carry(Operand c);
  Operand carry_in();
  void lower_carry(const ptx::Instr& in);
  void lower_lop3(const ptx::Instr& in);
  Operand lop3_expand(uint32_t lut, const std::array<Operand, 3>& x, int var, uint32_t nvars);
  void lower_mul24(const ptx::Instr& in);
  void lower_sad(const ptx::Instr& in);
  void lower_dp(const ptx::Instr& in);
  void lower_sat(const ptx::Instr& in);
  void lower_redux(const ptx::Instr& in);
  void lower_match_any_all(const ptx::Instr& in);
  void lower_bitfield64(const ptx::Instr& in);
  void lower_prmt_mode(const ptx::Instr& in);
  void lower_named_barrier(const ptx::Instr& in);
  void lower_malloc(const ptx::Instr& in);
  void lower_free(const ptx::Instr& in);
  void lower_indirect_call(const ptx::Instr& in);
  void serialize_lanes(const std::function<void()>& body);
  uint32_t carry_ = kNoV;  // vreg: PTX's CC.CF flag (created at its first use)
  bool counted_barriers_ = false;  // every barrier is counted (lower_named_barrier)
  uint32_t barrier_base_ = 0;      // shared offset of the counted barriers' words
  void reserve_barrier_words();
  std::vector<bool> address_taken_;  // per function: the module takes its address

  // ---- the model's machine (pass 1, continued) ------------------------------------
  void expand_for_model();
  void expand_atomic(const Instr& in);
  void expand_narrow_load(const Instr& in);
  void expand_narrow_store(const Instr& in);
  void expand_mulhi(const Instr& in);
  Operand word_offset(const Instr& in, Operand& addr);

  // ---- passes 2 and 3 -----------------------------------------------------------
  bool rename_temp(uint32_t t, uint32_t dst);
  void remove_dead_code();
  void remove_unreachable();
  uint32_t hoist_invariants();
  void propagate_copies();
  void fold_constants();
  void fold_known_bits();
  void simplify_local();
  std::vector<VI> allocate();
  Program form_blocks(const std::vector<VI>& code);
  void thread_jumps(Program& prog);
  static void drop_unreachable(Program& prog);

  const ptx::Module& m_;
  const LaunchShape& shape_;
  const Params& p_;
  const LowerOptions& opts_;
  uint32_t kernel_ = 0;
  ptx::SharedLayout shared_;
  uint32_t threads_ = 0;
  std::vector<VI> code_;
  uint32_t nvregs_ = 0, nlabels_ = 0;
  uint32_t local_top_ = 0;
  uint32_t scratch_base_ = 0;  // shared offset of the scratch area
  bool narrow_division_ = false;  // a 64-bit division has its path for divisors below 2^32
  uint32_t recip_d_ = 0, recip_v_ = 0;  // vregs: the normalised divisor whose reciprocal recip_v_ holds (0: none)
  uint32_t hoisted_ = 0;          // instructions hoist_invariants() moved
  bool spilled_ = false;          // the allocator spilled a value
  bool scratch_used_ = false;
  std::vector<Frame*> frames_;
  std::vector<bool> cold_;  // per vreg: defined by code that rarely runs (hoist_invariants leaves it)
  Operand guard_ = K(1);  // pure instructions under a guard write through SEL
  uint32_t mark_ = 0;
  uint32_t tid_ = 0;  // vreg: warp * L + lane     // first vreg created by the current PTX instruction
};

// The scratch area after the program's shared memory: one CTA counter word
// (bar.red), then per 32-thread warp 32 shuffle words and one vote word.
// A lane's shuffle word is 0 except while the lane is in a shuffle, match or
// redux (each lane clears its word after the closing warp barrier), so a
// shuffle that reads a lane not taking part gets 0, as NVIDIA's GPUs give.
constexpr uint32_t kScratchShfl = 0, kScratchVote = 32, kScratchWords = 33;

Operand Lowerer::warp_scratch(uint32_t word) {
  scratch_used_ = true;
  Operand cw = opr(Op::SHR, tid_linear(), K(5));
  return opr(Op::ADD, opr(Op::MUL, cw, K(kScratchWords * 4)), K(scratch_base_ + 4 + word * 4));
}

// After a shuffle-area exchange's closing warp barrier: the lane's word back to 0.
void Lowerer::clear_shfl_slot(Operand area) {
  st(Space::Shared, opr(Op::ADD, area, opr(Op::SHL, opr(Op::AND, tid_linear(), K(31)), K(2))), 0, 4, K(0));
}

Operand Lowerer::special(const ptx::Instr& in, const ptx::Operand& o) {
  const launch::Dim3& b = shape_.block;
  const launch::Dim3& g = shape_.grid;
  switch (o.sreg) {
    case ptx::SReg::Tid: return component(tid_linear(), b, o.component);
    case ptx::SReg::Ntid: return K(dim_of(b, o.component));
    case ptx::SReg::Ctaid: return component(opr(Op::CTA), g, o.component);
    case ptx::SReg::Nctaid: return K(dim_of(g, o.component));
    case ptx::SReg::Laneid: return opr(Op::AND, tid_linear(), K(31));
    case ptx::SReg::Warpid: return opr(Op::SHR, tid_linear(), K(5));
    case ptx::SReg::Nwarpid: return K((threads_ + 31) / 32);
    case ptx::SReg::Smid: return K(0);
    case ptx::SReg::Nsmid: return K(1);
    case ptx::SReg::Gridid: return K(1);
    case ptx::SReg::LanemaskEq: return opr(Op::SHL, K(1), opr(Op::AND, tid_linear(), K(31)));
    case ptx::SReg::LanemaskLt: return opr(Op::SUB, opr(Op::SHL, K(1), opr(Op::AND, tid_linear(), K(31))), K(1));
    case ptx::SReg::LanemaskLe: return opr(Op::SUB, opr(Op::SHL, K(2), opr(Op::AND, tid_linear(), K(31))), K(1));
    case ptx::SReg::LanemaskGe:
      return opr(Op::XOR, opr(Op::SUB, opr(Op::SHL, K(1), opr(Op::AND, tid_linear(), K(31))), K(1)), K(~0u));
    case ptx::SReg::LanemaskGt:
      return opr(Op::XOR, opr(Op::SUB, opr(Op::SHL, K(2), opr(Op::AND, tid_linear(), K(31))), K(1)), K(~0u));
    case ptx::SReg::DynamicSmemSize: return K(shape_.dynamic_smem);
    case ptx::SReg::TotalSmemSize: return K(p_.shared_bytes);
    case ptx::SReg::Clock:
    case ptx::SReg::Clock64:
    case ptx::SReg::Globaltimer:
    case ptx::SReg::GlobaltimerLo: return opr(Op::CLOCK);  // EXECs so far; the high word is 0
    case ptx::SReg::ClockHi:
    case ptx::SReg::GlobaltimerHi: return K(0);
    default: return special_more(in, o);
  }
  unsupported(in, "reads a special register the machine does not have");
}

V Lowerer::read(const ptx::Instr& in, const ptx::Operand& o, Type t) {
  const uint32_t size = ptx::type_size(t);
  V v;
  switch (o.kind) {
    case ptx::Operand::Kind::Reg: {
      auto& r = frames_.back()->regs[o.reg];
      v.lo = R(r[0]);
      v.hi = r[1] == kNoV ? K(0) : R(r[1]);
      if (o.neg) v.lo = opr(Op::XOR, v.lo, K(1));
      uint32_t rsize = ptx::type_size(frames_.back()->f->regs[o.reg].type);
      if (size == 8 && r[1] == kNoV && ptx::is_signed(t)) v.hi = opr(Op::SAR, v.lo, K(31));
      if (size == 1 || size == 2) {
        uint32_t sh = 32 - 8 * size;
        if (ptx::is_signed(t))
          v.lo = opr(Op::SAR, opr(Op::SHL, v.lo, K(sh)), K(sh));
        else if (rsize != size)
          v.lo = opr(Op::AND, v.lo, K((1u << (8 * size)) - 1));
      }
      return v;
    }
    case ptx::Operand::Kind::Imm: {
      uint64_t x = uint64_t(o.imm);
      if (size == 1 || size == 2) {  // an immediate of a narrow type is that many bits, extended by the type
        uint32_t bits = 8 * size;
        x &= (1u << bits) - 1;
        if (ptx::is_signed(t) && (x >> (bits - 1))) x |= ~uint64_t(0) << bits;
      }
      return {K(uint32_t(x)), K(uint32_t(x >> 32))};
    }
    case ptx::Operand::Kind::Sym: {
      ptx::Space sp;
      return {K(symbol_address(in, o.sym, &sp) + uint32_t(o.imm)), K(0)};
    }
    case ptx::Operand::Kind::Special: return {special(in, o), K(0)};
    case ptx::Operand::Kind::Vector: {
      // Packing: {a, b} of 32-bit words into 64 bits, or of 16-bit halves into 32.
      if (o.elems.size() == 2 && size == 8)
        return {read32(in, o.elems[0], Type::B32), read32(in, o.elems[1], Type::B32)};
      uint32_t n = uint32_t(o.elems.size()), w = 8 * size / n;
      if (n < 2 || w < 8 || size > 4) break;
      Type et = w == 8 ? Type::U8 : Type::U16;
      Operand acc = read32(in, o.elems[0], et);
      for (uint32_t i = 1; i < n; ++i) acc = opr(Op::OR, acc, opr(Op::SHL, read32(in, o.elems[i], et), K(i * w)));
      return {acc, K(0)};
    }
    case ptx::Operand::Kind::FImm: return float_literal(o, size);
    default: break;
  }
  unsupported(in, "has an operand form the lowering does not take");
}

void Lowerer::write(const ptx::Operand& d, Type t, V v) {
  if (d.kind == ptx::Operand::Kind::Sink) return;
  if (d.kind == ptx::Operand::Kind::Vector) {
    // Unpacking into 32-bit words or 16/8-bit parts.
    uint32_t n = uint32_t(d.elems.size());
    if (n == 2 && ptx::type_size(t) == 8) {
      write(d.elems[0], Type::B32, {v.lo, K(0)});
      write(d.elems[1], Type::B32, {v.hi, K(0)});
      return;
    }
    uint32_t w = 8 * ptx::type_size(t) / n;
    for (uint32_t i = 0; i < n; ++i)
      write(d.elems[i], w == 8 ? Type::B8 : Type::B16,
            {opr(Op::AND, opr(Op::SHR, v.lo, K(i * w)), K((1u << w) - 1)), K(0)});
    return;
  }
  if (d.kind != ptx::Operand::Kind::Reg) throw LowerError(launch::kNotSupported, "destination is not a register");
  auto& r = frames_.back()->regs[d.reg];
  uint32_t rsize = ptx::type_size(frames_.back()->f->regs[d.reg].type);
  if (frames_.back()->f->regs[d.reg].type == Type::Pred) {
    if (v.lo.imm) v.lo = K(v.lo.v != 0);  // `mov.pred %p, -1`: predicates hold 0 or 1
  } else if (rsize == 1 || rsize == 2) {
    v.lo = opr(Op::AND, v.lo, K((1u << (8 * rsize)) - 1));
  }
  auto put = [&](uint32_t dst, Operand val) {
    if (!guard_.imm || guard_.v != 1) {
      opd(dst, Op::SEL, guard_, val, R(dst));
      return;
    }
    if (!val.imm && val.v >= mark_ && !(v.lo.v == v.hi.v && !v.lo.imm && !v.hi.imm) && rename_temp(val.v, dst)) return;
    opd(dst, Op::MOV, val);
  };
  put(r[0], v.lo);
  if (r[1] != kNoV) put(r[1], v.hi);
}

// Makes the code of the current PTX instruction compute temporary `t`
// directly into `dst` instead of copying it there afterwards: possible when
// nothing after t's definition reads or writes dst.
bool Lowerer::rename_temp(uint32_t t, uint32_t dst) {
  size_t k = code_.size();
  std::vector<size_t> readers;
  while (k-- > 0) {
    VI& vi = code_[k];
    if (vi.kind != VI::Ins) return false;  // stay within straight-line code
    // t's definition may read dst: it reads before it writes (`x = x >> 1`).
    const bool defines_t = vi.in.writes_reg() && vi.in.dst == t;
    for (auto* o : sources(vi.in)) {
      if (o->v == dst && !defines_t) return false;
      if (o->v == t) readers.push_back(k);
    }
    if (defines_t) break;
    if (vi.in.writes_reg() && vi.in.dst == dst) return false;
  }
  if (k == size_t(-1)) return false;
  for (size_t r : readers) {
    Operand* ops[3] = {&code_[r].in.a, &code_[r].in.b, &code_[r].in.c};
    for (int i = 0; i < op_info(code_[r].in.op).arity; ++i)
      if (!ops[i]->imm && ops[i]->v == t) ops[i]->v = dst;
  }
  code_[k].in.dst = dst;
  return true;
}

// Forwards copies `mov d, s` where d and s each have one definition, s's
// before the copy, and every use of d follows the copy: uses of d read s
// instead, and dead-code removal drops the copy.
void Lowerer::propagate_copies() {
  const uint32_t none = UINT32_MAX;
  std::vector<uint32_t> defs(nvregs_, 0), def_at(nvregs_, none), first_use(nvregs_, none);
  for (uint32_t i = 0; i < code_.size(); ++i) {
    const VI& v = code_[i];
    if (v.kind == VI::Ins) {
      for (auto* o : sources(v.in))
        if (first_use[o->v] == none) first_use[o->v] = i;
      if (v.in.writes_reg()) {
        defs[v.in.dst]++;
        def_at[v.in.dst] = i;
      }
    }
    if (v.kind == VI::Br && first_use[v.cond] == none) first_use[v.cond] = i;
  }
  std::vector<uint32_t> repl(nvregs_, none);
  for (uint32_t i = 0; i < code_.size(); ++i) {
    const VI& v = code_[i];
    if (v.kind != VI::Ins || v.in.op != Op::MOV || v.in.a.imm) continue;
    uint32_t d = v.in.dst, src = v.in.a.v;
    while (repl[src] != none) src = repl[src];
    if (defs[d] == 1 && defs[src] == 1 && def_at[src] < i && (first_use[d] == none || first_use[d] > i)) repl[d] = src;
  }
  auto map = [&](uint32_t x) {
    while (repl[x] != none) x = repl[x];
    return x;
  };
  for (VI& v : code_) {
    if (v.kind == VI::Ins) {
      Operand* ops[3] = {&v.in.a, &v.in.b, &v.in.c};
      for (int k = 0; k < op_info(v.in.op).arity; ++k)
        if (!ops[k]->imm) ops[k]->v = map(ops[k]->v);
    }
    if (v.kind == VI::Br) v.cond = map(v.cond);
  }
}

// Constant folding over the virtual code: a register with a single
// definition whose operands are all immediates holds a constant, which its
// uses take as an immediate; operations with an identity operand become
// copies, with an absorbing one constants.  Values are computed by the machine's own operation table.
void Lowerer::fold_constants() {
  for (bool changed = true; changed;) {
    changed = false;
    std::vector<uint32_t> defs(nvregs_, 0);
    for (const VI& v : code_)
      if (v.kind == VI::Ins && v.in.writes_reg()) defs[v.in.dst]++;
    std::vector<bool> known(nvregs_, false);
    std::vector<uint32_t> value(nvregs_, 0);
    for (VI& v : code_) {
      if (v.kind == VI::Ins && v.in.op == Op::LANE && p_.lanes == 1)
        v.in = Instr{Op::MOV, v.in.dst, K(0), K(0), K(0)};  // the only lane of a one-lane warp
      if (v.kind != VI::Ins || op_info(v.in.op).kind != OpKind::Alu) continue;
      Instr& in = v.in;
      auto srcs = sources(in);
      if (srcs.empty()) {
        uint32_t x = eval_alu(in.op, in.a.v, in.b.v, in.c.v);
        if (in.op != Op::MOV || in.a.v != x) changed = true;
        in = Instr{Op::MOV, in.dst, K(x), K(0), K(0)};
        if (defs[in.dst] == 1) {
          known[in.dst] = true;
          value[in.dst] = x;
        }
        continue;
      }
      // x + 0, x - 0, x | 0, x ^ 0, x << 0, x >> 0, x * 1, x & ~0: a copy of x.
      const uint32_t b = in.b.v;
      bool identity = in.a.imm == false && in.b.imm &&
                      (((in.op == Op::ADD || in.op == Op::SUB || in.op == Op::OR || in.op == Op::XOR ||
                         in.op == Op::SHL || in.op == Op::SHR || in.op == Op::SAR) &&
                        b == 0) ||
                       (in.op == Op::MUL && b == 1) || (in.op == Op::AND && b == ~0u));
      // x & 0, x * 0, x | ~0: a constant.
      bool absorbing = in.a.imm == false && in.b.imm &&
                       (((in.op == Op::AND || in.op == Op::MUL) && b == 0) || (in.op == Op::OR && b == ~0u));
      if (identity || absorbing) {
        in = Instr{Op::MOV, in.dst, identity ? in.a : K(b), K(0), K(0)};
        changed = true;
      }
    }
    for (VI& v : code_) {
      if (v.kind != VI::Ins) continue;
      Operand* ops[3] = {&v.in.a, &v.in.b, &v.in.c};
      for (int k = 0; k < op_info(v.in.op).arity; ++k)
        if (!ops[k]->imm && known[ops[k]->v]) {
          *ops[k] = K(value[ops[k]->v]);
          changed = true;
        }
    }
  }
}

// Known bits, per register and program point, over the control flow: a
// forward dataflow to a fixed point, registers unknown at entry.  An ALU
// result whose every bit is known becomes that constant, and a mask that
// keeps every bit that may be set (`and x, m` where x's other bits are known
// zero) becomes a copy.  This makes the byte offset of a narrow access a
// constant where its address's alignment is known (an array at a fixed
// shared offset indexed by a counter that steps by whole words), and drops
// the zero-extension of values that are already narrow.
void Lowerer::fold_known_bits() {
  auto is_bit = [](KnownBits k) { return (k.known | 1u) == ~0u && (k.value & ~1u) == 0; };
  const Cfg cfg = build_cfg(code_, nlabels_);
  const uint32_t nb = cfg.blocks();
  // One state of every register per block: beyond 2^24 entries (128 MiB)
  // the pass is skipped (it only removes instructions).
  if (nb == 0 || uint64_t(nb) * nvregs_ > (uint64_t(1) << 24)) return;
  auto operand = [](const std::vector<KnownBits>& st, const Instr& x, int k) {
    const Operand* ops[3] = {&x.a, &x.b, &x.c};
    if (k >= op_info(x.op).arity) return KnownBits::constant(0);
    return ops[k]->imm ? KnownBits::constant(ops[k]->v) : st[ops[k]->v];
  };
  auto result = [&](const std::vector<KnownBits>& st, const Instr& x) {
    return op_info(x.op).kind == OpKind::Alu ? known_result(x, operand(st, x, 0), operand(st, x, 1), operand(st, x, 2))
                                             : KnownBits{};
  };
  std::vector<std::vector<KnownBits>> in(nb);
  std::vector<bool> reached(nb, false), queued(nb, false);
  in[0].assign(nvregs_, KnownBits{});
  reached[0] = queued[0] = true;
  std::vector<uint32_t> work{0};
  std::vector<KnownBits> st;
  while (!work.empty()) {
    const uint32_t b = work.back();
    work.pop_back();
    queued[b] = false;
    st = in[b];
    for (uint32_t i = cfg.starts[b]; i < cfg.end(b); ++i)
      if (code_[i].kind == VI::Ins && code_[i].in.writes_reg()) st[code_[i].in.dst] = result(st, code_[i].in);
    for (uint32_t s : cfg.succ[b]) {
      bool changed = !reached[s];
      if (!reached[s]) {
        in[s] = st;
        reached[s] = true;
      } else {
        for (uint32_t r = 0; r < nvregs_; ++r) {
          const KnownBits j = join(in[s][r], st[r]);
          if (!(j == in[s][r])) {
            in[s][r] = j;
            changed = true;
          }
        }
      }
      if (changed && !queued[s]) {
        queued[s] = true;
        work.push_back(s);
      }
    }
  }
  for (uint32_t b = 0; b < nb; ++b) {
    if (!reached[b]) continue;
    st = in[b];
    for (uint32_t i = cfg.starts[b]; i < cfg.end(b); ++i) {
      if (code_[i].kind != VI::Ins || !code_[i].in.writes_reg()) continue;
      Instr& x = code_[i].in;
      const KnownBits r = result(st, x);
      if (op_info(x.op).kind == OpKind::Alu) {
        if (r.known == ~0u && !(x.op == Op::MOV && x.a.imm)) {
          x = Instr{Op::MOV, x.dst, K(r.value), K(0), K(0)};
        } else if (x.op == Op::AND && x.a.imm != x.b.imm) {
          const Operand reg = x.a.imm ? x.b : x.a, mask = x.a.imm ? x.a : x.b;
          const KnownBits a = st[reg.v];
          if ((~mask.v & ~(a.known & ~a.value)) == 0) x = Instr{Op::MOV, x.dst, reg, K(0), K(0)};
        } else if (!x.a.imm && is_bit(st[x.a.v])) {
          // A 0/1 value p compared with 0 or 1, or p ? 1 : 0 and p ? 0 : 1:
          // p itself, or its negation.
          std::optional<bool> same;
          if ((x.op == Op::SEQ || x.op == Op::SNE) && x.b.imm && x.b.v <= 1) same = (x.op == Op::SEQ) == (x.b.v == 1);
          if (x.op == Op::SEL && x.b.imm && x.c.imm && x.b.v <= 1 && (x.b.v ^ x.c.v) == 1) same = x.b.v == 1;
          if (same) x = *same ? Instr{Op::MOV, x.dst, x.a, K(0), K(0)} : Instr{Op::XOR, x.dst, x.a, K(1), K(0)};
        }
      }
      st[x.dst] = r;
    }
    // A branch whose condition is known: a jump.
    VI& last = code_[cfg.end(b) - 1];
    if (last.kind == VI::Br) {
      const KnownBits c = st[last.cond];
      if ((c.known & c.value) != 0) {
        last = VI{VI::Jmp, {}, last.l1};
      } else if (c.known == ~0u) {
        last = VI{VI::Jmp, {}, last.l2};
      }
    }
  }
}

// Local simplification over straight-line code (between labels and
// terminators), tracking which definitions still hold their value:
//   - commutative operations take an immediate as their second operand;
//   - (y & m1) & m2 becomes y & (m1 & m2), and (y & m) << k becomes y << k
//     when m keeps every bit the shift keeps;
//   - x - k becomes x + (-k), and (y + k1) + k2 becomes y + (k1 + k2), in
//     ALU additions and in the a + b of loads and stores;
//   - a load or store at [p + 0] where p = x + y (two registers) addresses
//     [x + y] itself, so the addition goes when nothing else reads p;
//   - a branch on x != 0 branches on x, one on x == 0 or on !p (p a
//     comparison) on x or p with its targets swapped, so the comparison
//     goes when nothing else reads it;
//   - an operation already computed on the same operands (none redefined
//     since) becomes a copy of that result (value numbering), which copy
//     propagation then removes.
void Lowerer::simplify_local() {
  struct Def {
    uint32_t reg;
    Instr in;
  };
  std::vector<Def> live;  // this segment's definitions whose operands still hold
  auto find = [&](uint32_t reg) -> const Instr* {
    for (const Def& d : live)
      if (d.reg == reg) return &d.in;
    return nullptr;
  };
  auto same = [](const Operand& x, const Operand& y) { return x.imm == y.imm && x.v == y.v; };
  auto commutative = [](Op o) {
    return o == Op::ADD || o == Op::MUL || o == Op::AND || o == Op::OR || o == Op::XOR || o == Op::MIN ||
           o == Op::MAX || o == Op::MINU || o == Op::MAXU || o == Op::SEQ || o == Op::SNE;
  };
  // Whether reg holds 0 or 1: a comparison, x & 1, x >> 31, or p ^ 1 of such a p.
  auto is_predicate = [&](uint32_t reg) {
    const Instr* d = find(reg);
    while (d && d->op == Op::XOR && same(d->b, K(1)) && !d->a.imm) d = find(d->a.v);
    return d && (d->op == Op::SEQ || d->op == Op::SNE || d->op == Op::SLT || d->op == Op::SLE ||
                 d->op == Op::SLTU || d->op == Op::SLEU || (d->op == Op::AND && same(d->b, K(1))) ||
                 (d->op == Op::SHR && same(d->b, K(31))));
  };
  const Cfg cfg = build_cfg(code_, nlabels_);
  for (uint32_t i = 0, b = 0; i < code_.size(); ++i) {
    if (b + 1 < cfg.blocks() && i == cfg.starts[b + 1]) {
      // A block that only the one before it enters (falling through, or by
      // its jmp, bar or wbar) continues its segment: registers keep their
      // values across barriers.
      ++b;
      if (!(cfg.pred[b].size() == 1 && cfg.pred[b][0] == b - 1 && code_[i - 1].kind != VI::Br)) live.clear();
    }
    VI& v = code_[i];
    if (v.kind == VI::Br) {
      // A branch on x != 0 branches on x; on x == 0 or on !p (p 0 or 1,
      // p ^ 1), on x or p with the targets swapped.
      for (const Instr* d; (d = find(v.cond)) && !d->a.imm && d->b.imm;) {
        const bool on_x = (d->op == Op::SNE || d->op == Op::SEQ) && d->b.v == 0;
        const bool not_p = d->op == Op::XOR && d->b.v == 1 && is_predicate(d->a.v);
        if (!on_x && !not_p) break;
        if (d->op != Op::SNE) std::swap(v.l1, v.l2);
        v.cond = d->a.v;
      }
    }
    if (v.kind != VI::Ins) continue;
    Instr& in = v.in;
    const bool alu = op_info(in.op).kind == OpKind::Alu;
    const bool access = in.op == Op::LD || in.op == Op::ST;
    if ((access || (alu && commutative(in.op))) && in.a.imm && !in.b.imm) std::swap(in.a, in.b);
    if (alu && in.op == Op::SUB && !in.a.imm && in.b.imm) {
      in.op = Op::ADD;
      in.b = K(0u - in.b.v);
    }
    if ((access || (alu && in.op == Op::ADD)) && !in.a.imm && in.b.imm) {
      const Instr* inner = find(in.a.v);
      if (inner && inner->op == Op::ADD && !inner->a.imm && inner->b.imm) {
        in.b = K(inner->b.v + in.b.v);
        in.a = inner->a;
      }
    }
    if (access && !in.a.imm && in.b.imm && in.b.v == 0) {
      const Instr* inner = find(in.a.v);
      if (inner && inner->op == Op::ADD && !inner->a.imm && !inner->b.imm) {
        in.a = inner->a;
        in.b = inner->b;
      }
    }
    if (alu && !in.a.imm && in.b.imm) {
      const Instr* inner = find(in.a.v);
      if (inner && inner->op == Op::AND && !inner->a.imm && inner->b.imm) {
        const uint32_t m = inner->b.v;
        if (in.op == Op::AND) {
          in.a = inner->a;
          in.b = K(m & in.b.v);
        } else if (in.op == Op::SHL && in.b.v < 32 && (m | ~(~0u >> in.b.v)) == ~0u) {
          in.a = inner->a;
        }
      }
    }
    if (alu && in.op != Op::MOV) {
      for (const Def& d : live)
        if (d.in.op == in.op && same(d.in.a, in.a) && same(d.in.b, in.b) && same(d.in.c, in.c)) {
          in = Instr{Op::MOV, in.dst, R(d.reg), K(0), K(0)};
          break;
        }
    }
    if (!in.writes_reg()) continue;
    const uint32_t dst = in.dst;
    std::erase_if(live, [&](const Def& d) {
      const Operand* ops[3] = {&d.in.a, &d.in.b, &d.in.c};
      for (int k = 0; k < op_info(d.in.op).arity; ++k)
        if (!ops[k]->imm && ops[k]->v == dst) return true;
      return d.reg == dst;
    });
    bool reads_dst = false;
    for (auto* o : sources(in)) reads_dst |= o->v == dst;
    if (alu && !reads_dst) live.push_back({dst, in});
  }
}

// Loop-invariant code motion.  A loop is the run of blocks from a header h
// to the last block that branches back to it (blocks are in code order),
// entered only through h, from the block just before it.  An ALU operation
// in it whose destination has no other definition anywhere and whose
// register operands have no definition in the loop computes the same value
// on every iteration: it moves to the end of the block before h (ALU
// operations never fault, so running one the loop might have skipped is
// harmless).  Inner loops go first, so a value can leave several levels.
// Returns how many instructions moved: at most opts_.max_hoisted.
uint32_t Lowerer::hoist_invariants() {
  std::vector<uint32_t> defs(nvregs_, 0);
  for (const VI& v : code_)
    if (v.kind == VI::Ins && v.in.writes_reg()) defs[v.in.dst]++;
  uint32_t moved_count = 0;
  for (bool moved = true; moved;) {
    moved = false;
    const Cfg cfg = build_cfg(code_, nlabels_);
    const uint32_t nb = cfg.blocks();
    const std::vector<std::vector<uint32_t>>& pred = cfg.pred;
    // Loops (h, tail), the shortest first.
    std::vector<std::pair<uint32_t, uint32_t>> loops;
    for (uint32_t h = 1; h < nb; ++h) {
      uint32_t tail = h;
      bool back = false;
      for (uint32_t q : pred[h])
        if (q >= h) tail = std::max(tail, q), back = true;
      if (back) loops.push_back({h, tail});
    }
    std::stable_sort(loops.begin(), loops.end(),
                     [](const auto& x, const auto& y) { return x.second - x.first < y.second - y.first; });
    for (const auto& [h, tail] : loops) {
      bool closed = cfg.succ[h - 1].size() == 1 && cfg.succ[h - 1][0] == h;
      for (uint32_t b = h; b <= tail && closed; ++b)
        for (uint32_t q : pred[b])
          if ((q < h || q > tail) && !(b == h && q == h - 1)) closed = false;
      if (!closed) continue;
      const uint32_t begin = cfg.starts[h], end = cfg.end(tail);
      std::vector<bool> in_loop(nvregs_, false);
      for (uint32_t i = begin; i < end; ++i)
        if (code_[i].kind == VI::Ins && code_[i].in.writes_reg()) in_loop[code_[i].in.dst] = true;
      std::vector<Instr> hoisted;
      std::vector<VI> body;
      for (uint32_t i = begin; i < end; ++i) {
        const VI& v = code_[i];
        bool invariant = v.kind == VI::Ins && op_info(v.in.op).kind == OpKind::Alu && v.in.writes_reg() &&
                         defs[v.in.dst] == 1 && !(v.in.dst < cold_.size() && cold_[v.in.dst]);
        if (invariant)
          for (const Operand* o : sources(v.in)) invariant &= !in_loop[o->v];
        if (invariant && moved_count + hoisted.size() < opts_.max_hoisted) {
          hoisted.push_back(v.in);
          in_loop[v.in.dst] = false;
        } else {
          body.push_back(v);
        }
      }
      if (hoisted.empty()) continue;
      // The end of the block before h: before its jump to h, if it has one.
      uint32_t at = begin;
      if (code_[at - 1].kind != VI::Ins && code_[at - 1].kind != VI::Label) --at;
      std::vector<VI> out(code_.begin(), code_.begin() + at);
      for (const Instr& in : hoisted) out.push_back({VI::Ins, in});
      out.insert(out.end(), code_.begin() + at, code_.begin() + begin);
      out.insert(out.end(), body.begin(), body.end());
      out.insert(out.end(), code_.begin() + end, code_.end());
      code_ = std::move(out);
      moved_count += static_cast<uint32_t>(hoisted.size());
      moved = true;
      break;  // the blocks moved: find the loops again
    }
  }
  return moved_count;
}

// Removes the blocks no path from the entry reaches (behind a branch whose
// condition the known bits decided).
void Lowerer::remove_unreachable() {
  const Cfg cfg = build_cfg(code_, nlabels_);
  std::vector<bool> reached(cfg.blocks(), false);
  std::vector<uint32_t> work;
  if (cfg.blocks() > 0) {
    reached[0] = true;
    work.push_back(0);
  }
  while (!work.empty()) {
    const uint32_t b = work.back();
    work.pop_back();
    for (uint32_t s : cfg.succ[b])
      if (!reached[s]) {
        reached[s] = true;
        work.push_back(s);
      }
  }
  std::vector<VI> kept;
  kept.reserve(code_.size());
  for (uint32_t b = 0; b < cfg.blocks(); ++b)
    if (reached[b]) kept.insert(kept.end(), code_.begin() + cfg.starts[b], code_.begin() + cfg.end(b));
  code_ = std::move(kept);
}

// Removes instructions whose result nothing reads (loads included; stores
// and atomics stay).  This is what drops the high words of 64-bit address
// arithmetic: memory operations read only the low word of an address.
void Lowerer::remove_dead_code() {
  for (bool changed = true; changed;) {
    changed = false;
    std::vector<uint32_t> uses(nvregs_, 0);
    for (const VI& v : code_) {
      if (v.kind == VI::Ins)
        for (auto* o : sources(v.in)) uses[o->v]++;
      if (v.kind == VI::Br) uses[v.cond]++;
    }
    size_t out = 0;
    for (size_t i = 0; i < code_.size(); ++i) {
      const VI& v = code_[i];
      bool dead = v.kind == VI::Ins && v.in.op != Op::ST && v.in.op != Op::ATOM && uses[v.in.dst] == 0;
      if (dead) {
        changed = true;
        continue;
      }
      code_[out++] = v;
    }
    code_.resize(out);
  }
}

uint32_t Lowerer::symbol_address(const ptx::Instr& in, const ptx::SymRef& s, ptx::Space* space) {
  Frame& fr = *frames_.back();
  switch (s.kind) {
    case ptx::SymKind::ModuleVar: {
      const ptx::Var& var = m_.vars[s.index];
      *space = var.space;
      if (var.space == ptx::Space::Shared) {
        auto it = shared_.module_vars.find(s.index);
        if (it == shared_.module_vars.end()) unsupported(in, "names a shared variable outside the kernel's layout");
        return uint32_t(it->second);
      }
      auto it = shape_.symbols.find(var.name);
      if (it == shape_.symbols.end())
        throw LowerError(launch::kInvalidValue, "PTX line " + std::to_string(in.line) + ": module variable `" + var.name +
                                               "` has no device address");
      return uint32_t(it->second);
    }
    case ptx::SymKind::Param:
      if (fr.kernel) {
        *space = ptx::Space::Param;
        return uint32_t(fr.f->params[s.index].offset);
      }
      *space = ptx::Space::Local;
      return fr.param_off[s.index];
    case ptx::SymKind::Ret: *space = ptx::Space::Local; return fr.ret_off[s.index];
    case ptx::SymKind::LocalVar: {
      const ptx::Var& var = fr.f->vars[s.index];
      if (var.space == ptx::Space::Shared) {
        *space = ptx::Space::Shared;
        auto it = shared_.function_vars.find({fr.findex, s.index});
        if (it == shared_.function_vars.end()) unsupported(in, "names a shared variable outside the kernel's layout");
        return uint32_t(it->second);
      }
      *space = ptx::Space::Local;
      return fr.var_off[s.index];
    }
    case ptx::SymKind::Func: *space = ptx::Space::Global; return ptx::function_address(s.index);
  }
  unsupported(in, "names a symbol the lowering does not know");
}

Space Lowerer::mem_space(const ptx::Instr& in, ptx::Space sp) {
  switch (sp) {
    case ptx::Space::None:  // generic: the lowering treats generic accesses as global (docs/isa.md)
    case ptx::Space::Global:
    case ptx::Space::Const: return Space::Global;
    case ptx::Space::Shared: return Space::Shared;
    case ptx::Space::Local: return Space::Local;
    case ptx::Space::Param: return frames_.back()->kernel ? Space::Param : Space::Local;
    default: break;
  }
  unsupported(in, "uses a state space the machine does not have");
}

// The address operand [base + imm] as a machine operand plus a constant
// offset, and the machine space it addresses: a symbol's own space (a call's
// .param variables live in local memory), else the instruction's.
Operand Lowerer::address(const ptx::Instr& in, const ptx::Operand& o, uint32_t& off, Space& sp) {
  off = uint32_t(o.imm);
  if (o.kind != ptx::Operand::Kind::Addr) unsupported(in, "has a malformed address operand");
  sp = mem_space(in, in.space);
  if (o.has_sym) {
    ptx::Space symspace;
    uint32_t a = symbol_address(in, o.sym, &symspace);
    sp = mem_space(in, symspace);
    return K(a);
  }
  if (o.reg == ptx::kNoReg) return K(0);
  auto& r = frames_.back()->regs[o.reg];
  return R(r[0]);  // addresses are 32-bit (docs/isa.md, "64-bit values")
}

uint32_t Lowerer::local_alloc(uint64_t size, uint32_t align) {
  align = std::max<uint32_t>(align, 4);
  local_top_ = (local_top_ + align - 1) / align * align;
  uint32_t at = local_top_;
  local_top_ += uint32_t(size);
  return at;
}

void Lowerer::lower_function(Frame& fr) {
  frames_.push_back(&fr);
  const ptx::Function& f = *fr.f;
  for (auto& r : f.regs) {
    uint32_t lo = nv();
    fr.regs.push_back({lo, ptx::type_size(r.type) == 8 ? nv() : kNoV});
  }
  for (size_t i = 0; i < f.labels.size(); ++i) fr.labels.push_back(new_label());
  for (auto& v : f.vars) fr.var_off.push_back(v.space == ptx::Space::Shared ? 0 : local_alloc(v.size, v.align));
  // Labels sorted by target position, placed as the body is walked.
  std::vector<std::pair<uint32_t, uint32_t>> at;
  for (size_t i = 0; i < f.labels.size(); ++i) at.push_back({f.labels[i].target, fr.labels[i]});
  std::sort(at.begin(), at.end());
  size_t li = 0;
  for (uint32_t i = 0; i < f.body.size(); ++i) {
    while (li < at.size() && at[li].first == i) place(at[li++].second);
    lower_guarded(f.body[i]);
  }
  while (li < at.size()) place(at[li++].second);
  if (fr.kernel)
    exit_thread();
  else
    jmp(fr.ret_label);
  frames_.pop_back();
}

// Instructions that a guard can turn into a conditional write (`sel`) of
// their results: those whose only effect is writing registers.  Division and
// remainder are excluded only because skipping their loop is cheaper.
bool is_pure(ptx::Op op) {
  switch (op) {
    case ptx::Op::Ld:
    case ptx::Op::Ldu:
    case ptx::Op::St:
    case ptx::Op::Atom:
    case ptx::Op::Red:
    case ptx::Op::Bra:
    case ptx::Op::Call:
    case ptx::Op::Ret:
    case ptx::Op::Exit:
    case ptx::Op::Trap:
    case ptx::Op::Bar:
    case ptx::Op::BarWarp:
    case ptx::Op::Shfl:
    case ptx::Op::Vote:
    case ptx::Op::Activemask:
    case ptx::Op::Match:
    case ptx::Op::Redux:
    case ptx::Op::Div:
    case ptx::Op::Rem: return false;
    default: return true;
  }
}

void Lowerer::lower_guarded(const ptx::Instr& in) {
  mark_ = nvregs_;
  if (in.guard.reg == ptx::kNoReg) return lower_instr(in);
  Operand g = R(frames_.back()->regs[in.guard.reg][0]);
  if (in.op == ptx::Op::Bra) {
    uint32_t next = new_label();
    uint32_t target = frames_.back()->labels[in.ops[0].label];
    if (in.guard.neg)
      br(g, next, target);
    else
      br(g, target, next);
    place(next);
    return;
  }
  if (is_pure(in.op)) {
    guard_ = in.guard.neg ? opr(Op::XOR, g, K(1)) : g;
    lower_instr(in);
    guard_ = K(1);
    return;
  }
  uint32_t run = new_label(), skip = new_label();
  if (in.guard.neg)
    br(g, skip, run);
  else
    br(g, run, skip);
  place(run);
  lower_instr(in);
  jmp(skip);
  place(skip);
}

void Lowerer::lower_setp(const ptx::Instr& in) {
  // set.CMP.dtype.stype compares stype values (type2); setp has one type.
  Type t = in.op == ptx::Op::Set ? in.type2 : in.type;
  if (ptx::is_float(t) || ptx::is_float(in.type))
    unsupported(in, "compares floating-point values: the machine has no floating point");
  bool sign = ptx::is_signed(t);
  bool wide = ptx::type_size(t) == 8;
  V a, b;
  if (const uint32_t size = ptx::type_size(t); size == 1 || size == 2) {
    // Narrow registers hold their values zero-extended (write()): equality
    // compares them as they are, and the signed order is the unsigned order
    // of the values with their sign bit flipped.
    const Type u = size == 1 ? Type::U8 : Type::U16;
    a = read(in, in.ops[1], u);
    b = read(in, in.ops[2], u);
    const ptx::Cmp c = in.cmp;
    if (sign && (c == ptx::Cmp::Lt || c == ptx::Cmp::Le || c == ptx::Cmp::Gt || c == ptx::Cmp::Ge)) {
      const uint32_t top = 1u << (8 * size - 1);
      a.lo = opr(Op::XOR, a.lo, K(top));
      b.lo = opr(Op::XOR, b.lo, K(top));
    }
    sign = false;
  } else {
    a = read(in, in.ops[1], t);
    b = read(in, in.ops[2], t);
  }
  auto lt = [&](V x, V y, bool s, bool le) -> Operand {
    if (wide) return lt64(x, y, s, le);
    return opr(le ? (s ? Op::SLE : Op::SLEU) : (s ? Op::SLT : Op::SLTU), x.lo, y.lo);
  };
  Operand r;
  switch (in.cmp) {
    case ptx::Cmp::Eq: r = wide ? eq64(a, b) : opr(Op::SEQ, a.lo, b.lo); break;
    case ptx::Cmp::Ne: r = wide ? opr(Op::XOR, eq64(a, b), K(1)) : opr(Op::SNE, a.lo, b.lo); break;
    case ptx::Cmp::Lt: r = lt(a, b, sign, false); break;
    case ptx::Cmp::Le: r = lt(a, b, sign, true); break;
    case ptx::Cmp::Gt: r = lt(b, a, sign, false); break;
    case ptx::Cmp::Ge: r = lt(b, a, sign, true); break;
    case ptx::Cmp::Lo: r = lt(a, b, false, false); break;
    case ptx::Cmp::Ls: r = lt(a, b, false, true); break;
    case ptx::Cmp::Hi: r = lt(b, a, false, false); break;
    case ptx::Cmp::Hs: r = lt(b, a, false, true); break;
    default: unsupported(in, "uses a comparison the machine does not have");
  }
  if (in.bool_op != ptx::BoolOp::None) {
    Operand c = read32(in, in.ops[3], Type::Pred);
    Op bo = in.bool_op == ptx::BoolOp::And ? Op::AND : in.bool_op == ptx::BoolOp::Or ? Op::OR : Op::XOR;
    r = opr(bo, r, c);
  }
  if (in.op == ptx::Op::Set) {  // set: all ones for true
    write(in.ops[0], in.type, {opr(Op::SUB, K(0), r), K(0)});
    return;
  }
  const ptx::Operand& d = in.ops[0];
  if (d.kind == ptx::Operand::Kind::PredPair) {
    Operand nr = opr(Op::XOR, r, K(1));
    ptx::Operand p = d, q = d;
    p.kind = q.kind = ptx::Operand::Kind::Reg;
    q.reg = d.reg2;
    write(p, Type::Pred, {r, K(0)});
    write(q, Type::Pred, {nr, K(0)});
    return;
  }
  write(d, Type::Pred, {r, K(0)});
}

void Lowerer::lower_cvt(const ptx::Instr& in) {
  Type dt = in.type, stype = in.type2;
  if (ptx::is_float(dt) || ptx::is_float(stype))
    unsupported(in, "converts floating-point values: the machine has no floating point");
  if (in.sat) unsupported(in, "saturates: the machine has no saturating conversion");
  V v = read(in, in.ops[1], stype);
  uint32_t ds = ptx::type_size(dt), ss = ptx::type_size(stype);
  if (ds == 8) {
    if (ss < 8) v.hi = ptx::is_signed(stype) ? opr(Op::SAR, v.lo, K(31)) : K(0);
  } else {
    v.hi = K(0);
    if (ds < 4) {  // truncate, then extend as the destination type says
      uint32_t sh = 32 - 8 * ds;
      v.lo = ptx::is_signed(dt) ? opr(Op::SAR, opr(Op::SHL, v.lo, K(sh)), K(sh))
                                : opr(Op::AND, v.lo, K((1u << (8 * ds)) - 1));
    }
  }
  write(in.ops[0], dt, v);
}

// ---- floating point ------------------------------------------------------------
//
// Every f32 operation is a branch-free integer sequence (softfloat.h); f16,
// bf16, f64 and the .approx functions are not lowered.

// binary16: cvt between f16 and f32, and add, sub, mul, fma .rn on .f16 and
// .f16x2 (each half), computed through f32 (softfloat.h).  False when the
// instruction is not one of these.
bool Lowerer::lower_half(const ptx::Instr& in, const ptx::FloatMods& fm) {
  using PO = ptx::Op;
  const bool h = in.type == Type::F16 || in.type == Type::F16x2;
  const bool cvt = in.op == PO::Cvt && ((in.type == Type::F16 && in.type2 == Type::F32) ||
                                        (in.type == Type::F32 && in.type2 == Type::F16));
  if (!cvt && !(h && (in.op == PO::Add || in.op == PO::Sub || (in.op == PO::Mul && in.mul == ptx::MulMode::None) ||
                      in.op == PO::Fma)))
    return false;
  softfloat::Gen g([this](Op o, Operand a, Operand b, Operand c) { return opr(o, a, b, c); });
  if (cvt) {
    if (fm.ftz || fm.sat) unsupported(in, "converts f16 with .ftz or .sat, which the machine's software floating point does not have");
    if (in.type == Type::F32) {
      write(in.ops[0], Type::F32, {g.f32_from_f16(read32(in, in.ops[1], Type::F16)), K(0)});
      return true;
    }
    const softfloat::Round r = ptx::base_rounding(fm.rnd) == ptx::Rnd::Rz   ? softfloat::Round::Rz
                               : ptx::base_rounding(fm.rnd) == ptx::Rnd::Rm ? softfloat::Round::Rm
                               : ptx::base_rounding(fm.rnd) == ptx::Rnd::Rp ? softfloat::Round::Rp
                                                                            : softfloat::Round::Rn;
    write(in.ops[0], Type::F16, {g.f16_from_f32(read32(in, in.ops[1], Type::F32), r), K(0)});
    return true;
  }
  if (fm.ftz || fm.sat || (fm.rnd != ptx::Rnd::None && fm.rnd != ptx::Rnd::Rn))
    unsupported(in, "is an f16 operation with .ftz, .sat or a directed rounding, which the machine's software "
                    "floating point does not have (it has .rn)");
  const bool x2 = in.type == Type::F16x2;
  auto one = [&](Operand a, Operand b, Operand c) {
    switch (in.op) {
      case PO::Add: return g.add16(a, b);
      case PO::Sub: return g.sub16(a, b);
      case PO::Mul: return g.mul16(a, b);
      default: return g.fma16(a, b, c);
    }
  };
  const size_t n = in.op == PO::Fma ? 3 : 2;
  Operand src[3] = {K(0), K(0), K(0)};
  for (size_t i = 0; i < n; ++i) src[i] = read32(in, in.ops[i + 1], x2 ? Type::B32 : Type::F16);
  auto half = [&](Operand v, int k) { return k ? opr(Op::SHR, v, K(16)) : opr(Op::AND, v, K(0xFFFF)); };
  Operand lo = one(half(src[0], 0), half(src[1], 0), half(src[2], 0));
  if (!x2) {
    write(in.ops[0], Type::F16, {lo, K(0)});
    return true;
  }
  Operand hi = one(half(src[0], 1), half(src[1], 1), half(src[2], 1));
  write(in.ops[0], Type::B32, {opr(Op::OR, lo, opr(Op::SHL, hi, K(16))), K(0)});
  return true;
}

// A float literal's bits: 0f/0d literals as written, a decimal literal (a
// double) in an f32 operand rounded to f32.
V Lowerer::float_literal(const ptx::Operand& o, uint32_t size) {
  uint64_t raw = uint64_t(o.imm);
  if (size == 4 && o.fbits == 64) {
    double d;
    std::memcpy(&d, &raw, 8);
    const float f = float(d);
    uint32_t b;
    std::memcpy(&b, &f, 4);
    raw = b;
  }
  return {K(uint32_t(raw)), K(uint32_t(raw >> 32))};
}

void Lowerer::lower_float(const ptx::Instr& in) {
  using PO = ptx::Op;
  const ptx::FloatMods fm = ptx::float_mods(in);
  if (lower_half(in, fm)) return;
  const bool f32_f64 = in.op == PO::Cvt && ((in.type == Type::F64 && in.type2 == Type::F32) ||
                                            (in.type == Type::F32 && in.type2 == Type::F64));
  // cvt between f64 and 32/64-bit integers, and f64 rounded to an integral f64.
  const bool integral = fm.rnd == ptx::Rnd::Rni || fm.rnd == ptx::Rnd::Rzi || fm.rnd == ptx::Rnd::Rmi ||
                        fm.rnd == ptx::Rnd::Rpi;
  auto word_int = [](Type x) { return !ptx::is_float(x) && (ptx::type_size(x) == 4 || ptx::type_size(x) == 8); };
  const bool cvt64 = in.op == PO::Cvt && ((in.type == Type::F64 && word_int(in.type2)) ||
                                         (word_int(in.type) && in.type2 == Type::F64) ||
                                         (in.type == Type::F64 && in.type2 == Type::F64 && integral));
  // binary64: add, sub, mul, min, max, abs, neg and comparisons.
  const Type ft = in.op == PO::Set ? in.type2 : in.type;
  const bool f64 = ft == Type::F64 && (in.op == PO::Add || in.op == PO::Sub || (in.op == PO::Mul && in.mul == ptx::MulMode::None) ||
                                      in.op == PO::Fma || in.op == PO::Mad ||
                                      ((in.op == PO::Div || in.op == PO::Sqrt || in.op == PO::Rcp) && !fm.approx) ||
                                      in.op == PO::Min || in.op == PO::Max || in.op == PO::Abs || in.op == PO::Neg ||
                                      in.op == PO::Setp || in.op == PO::Set);
  for (Type x : {in.type, in.type2})
    if (ptx::is_float(x) && x != Type::F32 && !f32_f64 && !cvt64 && !(f64 && x == Type::F64))
      unsupported(in, std::string("operates on ") + ptx::type_name(x) +
                          " values in a way the machine's software floating point does not have (docs/isa.md section 11)");
  const bool defined_approx = in.op == PO::Div || in.op == PO::Rcp || in.op == PO::Sqrt || in.op == PO::Rsqrt ||
                              in.op == PO::Ex2 || in.op == PO::Lg2 || in.op == PO::Sin || in.op == PO::Cos ||
                              in.op == PO::Tanh;
  if ((fm.approx || fm.full) && !defined_approx)
    unsupported(in, "is an approximate floating-point function the machine's software floating point does not "
                    "have (it has div, rcp, sqrt, rsqrt, ex2, lg2, sin, cos and tanh, docs/isa.md section 11)");
  softfloat::Gen g([this](Op o, Operand a, Operand b, Operand c) { return opr(o, a, b, c); });
  const softfloat::Round r = [&] {
    switch (ptx::base_rounding(fm.rnd)) {
      case ptx::Rnd::Rz: return softfloat::Round::Rz;
      case ptx::Rnd::Rm: return softfloat::Round::Rm;
      case ptx::Rnd::Rp: return softfloat::Round::Rp;
      default: return softfloat::Round::Rn;
    }
  }();
  auto f = [&](size_t i) { return read32(in, in.ops[i], Type::F32); };
  auto out = [&](Operand v) { write(in.ops[0], Type::F32, {v, K(0)}); };
  auto w = [&](size_t i) {
    V v = read(in, in.ops[i], Type::F64);
    return softfloat::Gen::W{v.lo, v.hi};
  };
  auto out64 = [&](softfloat::Gen::W x) { write(in.ops[0], Type::F64, {x.first, x.second}); };
  if (cvt64) {
    const Type dt = in.type, st = in.type2;
    if (dt == Type::F64 && st == Type::F64) return out64(g.round_int64(w(1), r));
    if (dt == Type::F64) {
      V v = read(in, in.ops[1], st);
      if (ptx::type_size(st) == 4) v.hi = ptx::is_signed(st) ? opr(Op::SAR, v.lo, K(31)) : K(0);
      return out64(g.from_int_to64({v.lo, v.hi}, ptx::is_signed(st), r));
    }
    auto [lo, hi] = g.to_int_from64(w(1), ptx::is_signed(dt), 8 * ptx::type_size(dt), r);
    return write(in.ops[0], dt, V{lo, hi});
  }
  if (f64 && in.op != PO::Setp && in.op != PO::Set) {
    switch (in.op) {
      case PO::Add: return out64(g.add64(w(1), w(2), r));
      case PO::Sub: return out64(g.sub64(w(1), w(2), r));
      case PO::Mul: return out64(g.mul64(w(1), w(2), r));
      case PO::Fma:
      case PO::Mad: return out64(g.fma64(w(1), w(2), w(3), r));
      case PO::Div: return out64(g.div64(w(1), w(2), r));
      case PO::Rcp: return out64(g.div64({K(0), K(0x3FF00000u)}, w(1), r));
      case PO::Sqrt: return out64(g.sqrt64(w(1), r));
      case PO::Min: return out64(g.min64(w(1), w(2)));
      case PO::Max: return out64(g.max64(w(1), w(2)));
      case PO::Abs: {
        auto [lo, hi] = w(1);
        return out64({lo, opr(Op::AND, hi, K(0x7FFFFFFFu))});
      }
      default: {
        auto [lo, hi] = w(1);
        return out64({lo, opr(Op::XOR, hi, K(0x80000000u))});
      }
    }
  }
  switch (in.op) {
    case PO::Add: return out(g.add(f(1), f(2), r, fm.ftz, fm.sat));
    case PO::Sub: return out(g.sub(f(1), f(2), r, fm.ftz, fm.sat));
    case PO::Mul:
      if (in.mul != ptx::MulMode::None) break;
      return out(g.mul(f(1), f(2), r, fm.ftz, fm.sat));
    case PO::Fma:
    case PO::Mad: return out(g.fma(f(1), f(2), f(3), r, fm.ftz, fm.sat));
    case PO::Div: {
      Operand a = f(1), b = f(2);
      Operand q = g.div(a, b, fm.approx || fm.full ? softfloat::Round::Rn : r, fm.ftz, fm.sat);
      if (fm.approx) {  // a divisor above 2^126 gives 0 (NaN for an infinite dividend)
        Operand ab = opr(Op::AND, b, K(0x7FFFFFFFu));
        Operand big = opr(Op::AND, opr(Op::SLTU, K(0x7E800000u), ab), opr(Op::SLTU, ab, K(0x7F800000u)));
        Operand zero = opr(Op::SEL, opr(Op::SEQ, opr(Op::AND, a, K(0x7FFFFFFFu)), K(0x7F800000u)), K(0x7FFFFFFFu),
                           opr(Op::AND, opr(Op::XOR, a, b), K(0x80000000u)));
        q = opr(Op::SEL, opr(Op::AND, big, opr(Op::SLEU, opr(Op::AND, a, K(0x7FFFFFFFu)), K(0x7F800000u))), zero, q);
      }
      return out(q);
    }
    case PO::Rcp: return out(g.div(K(0x3F800000u), f(1), fm.approx ? softfloat::Round::Rn : r, fm.ftz, false));
    case PO::Sqrt: return out(g.sqrt(f(1), fm.approx ? softfloat::Round::Rn : r, fm.ftz));
    case PO::Rsqrt:
      return out(g.div(K(0x3F800000u), g.sqrt(f(1), softfloat::Round::Rn, fm.ftz), softfloat::Round::Rn, fm.ftz,
                       false));
    case PO::Ex2: return out(g.ex2(f(1), fm.ftz));
    case PO::Lg2: return out(g.lg2(f(1), fm.ftz));
    case PO::Sin: return out(g.sin(f(1), fm.ftz));
    case PO::Cos: return out(g.cos(f(1), fm.ftz));
    case PO::Tanh: return out(g.tanh(f(1), fm.ftz));
    case PO::Min: return out(g.min(f(1), f(2), fm.ftz));
    case PO::Max: return out(g.max(f(1), f(2), fm.ftz));
    case PO::Abs: return out(g.abs(f(1), fm.ftz));
    case PO::Neg: return out(g.neg(f(1), fm.ftz));
    case PO::Copysign: return out(g.copysign(f(1), f(2)));
    case PO::Testp: return write(in.ops[0], Type::Pred, {g.testp(int(fm.testp), f(1)), K(0)});
    case PO::Slct: {
      Operand c = g.compare(ptx::Cmp::Ge, f(3), K(0), fm.ftz);
      V a = read(in, in.ops[1], in.type), b = read(in, in.ops[2], in.type);
      const bool wide = ptx::type_size(in.type) == 8;
      return write(in.ops[0], in.type, {opr(Op::SEL, c, a.lo, b.lo), wide ? opr(Op::SEL, c, a.hi, b.hi) : K(0)});
    }
    case PO::Setp:
    case PO::Set: {
      Operand res = f64 ? g.compare64(in.cmp, w(1), w(2)) : g.compare(in.cmp, f(1), f(2), fm.ftz);
      if (in.bool_op != ptx::BoolOp::None) {
        Operand c = read32(in, in.ops[3], Type::Pred);
        Op bo = in.bool_op == ptx::BoolOp::And ? Op::AND : in.bool_op == ptx::BoolOp::Or ? Op::OR : Op::XOR;
        Operand nres = opr(bo, opr(Op::XOR, res, K(1)), c);
        res = opr(bo, res, c);
        if (in.op == PO::Setp && in.ops[0].kind == ptx::Operand::Kind::PredPair) {
          ptx::Operand p = in.ops[0], q = in.ops[0];
          p.kind = q.kind = ptx::Operand::Kind::Reg;
          q.reg = in.ops[0].reg2;
          write(p, Type::Pred, {res, K(0)});
          write(q, Type::Pred, {nres, K(0)});
          return;
        }
      }
      if (in.op == PO::Set) {  // 1.0f, or all ones for an integer destination
        if (in.type == Type::F32) return out(opr(Op::SEL, res, K(0x3F800000u), K(0)));
        return write(in.ops[0], in.type, {opr(Op::SUB, K(0), res), K(0)});
      }
      const ptx::Operand& d = in.ops[0];
      if (d.kind == ptx::Operand::Kind::PredPair) {
        Operand nres = opr(Op::XOR, res, K(1));
        ptx::Operand p = d, q = d;
        p.kind = q.kind = ptx::Operand::Kind::Reg;
        q.reg = d.reg2;
        write(p, Type::Pred, {res, K(0)});
        write(q, Type::Pred, {nres, K(0)});
        return;
      }
      return write(d, Type::Pred, {res, K(0)});
    }
    case PO::Cvt: {
      const Type dt = in.type, st = in.type2;
      if (dt == Type::F32 && st == Type::F32) return out(g.round_int(f(1), integral, r, fm.ftz, fm.sat));
      if (dt == Type::F64) {
        auto [lo, hi] = g.to_f64(f(1), fm.ftz);
        return write(in.ops[0], dt, {lo, hi});
      }
      if (st == Type::F64) {
        V v = read(in, in.ops[1], st);
        return out(g.from_f64(v.lo, v.hi, r, fm.ftz, fm.sat));
      }
      if (dt == Type::F32) {
        V v = read(in, in.ops[1], st);
        Operand res = ptx::type_size(st) == 8 ? g.from_int64(v.lo, v.hi, ptx::is_signed(st), r)
                                               : g.from_int32(v.lo, ptx::is_signed(st), r);
        return out(fm.sat ? g.saturate(res) : res);
      }
      if (ptx::type_size(dt) == 8) {
        auto [lo, hi] = g.to_int64(f(1), ptx::is_signed(dt), r, fm.ftz);
        return write(in.ops[0], dt, {lo, hi});
      }
      Operand res = g.to_int32(f(1), ptx::is_signed(dt), 8 * ptx::type_size(dt), r, fm.ftz);
      return write(in.ops[0], dt, {res, K(0)});
    }
    default: break;
  }
  unsupported(in, "is a floating-point operation the machine's software floating point does not have");
}

// An instruction's destination registers when a routine with several paths
// can compute its result there directly (no copies after the paths join): an
// unguarded register of `bytes` bytes that none of the operands `srcs`
// reads; else null.
const std::array<uint32_t, 2>* Lowerer::direct_destination(const ptx::Instr& in, std::initializer_list<V> srcs,
                                                           uint32_t bytes) {
  if (!guard_.imm || guard_.v != 1 || in.ops[0].kind != ptx::Operand::Kind::Reg) return nullptr;
  if (ptx::type_size(frames_.back()->f->regs[in.ops[0].reg].type) != bytes) return nullptr;
  const auto& dst = frames_.back()->regs[in.ops[0].reg];
  for (const V& v : srcs)
    for (Operand o : {v.lo, v.hi})
      if (!o.imm && (o.v == dst[0] || (dst[1] != kNoV && o.v == dst[1]))) return nullptr;
  return &dst;
}

void Lowerer::lower_divrem(const ptx::Instr& in) {
  Type t = in.type;
  bool sign = ptx::is_signed(t), rem = in.op == ptx::Op::Rem;
  if (ptx::is_float(t)) unsupported(in, "divides floating-point values: the machine has no floating point");
  V a = read(in, in.ops[1], t), b = read(in, in.ops[2], t);
  if (ptx::type_size(t) == 8) {
    Operand na = sign ? opr(Op::SLT, a.hi, K(0)) : K(0), nb = sign ? opr(Op::SLT, b.hi, K(0)) : K(0);
    V ua = sign ? neg_if64(a, na) : a, ub = sign ? neg_if64(b, nb) : b;
    if (const auto* out = sign ? nullptr : direct_destination(in, {a, b}, 8)) {
      udiv64(ua, ub, !rem, out);
      return;
    }
    auto [q, r] = udiv64(ua, ub, !rem);
    V res = rem ? r : q;
    if (sign) {
      Operand neg = rem ? na : opr(Op::XOR, na, nb);
      res = neg_if64(res, neg);
      if (!rem) {  // a signed quotient by zero is -1 whatever the dividend's sign
        Operand z = opr(Op::SEQ, opr(Op::OR, b.lo, b.hi), K(0));
        res = {opr(Op::SEL, z, K(0xFFFFFFFFu), res.lo), opr(Op::SEL, z, K(0xFFFFFFFFu), res.hi)};
      }
    }
    write(in.ops[0], t, res);
    return;
  }
  Operand na = sign ? opr(Op::SLT, a.lo, K(0)) : K(0), nb = sign ? opr(Op::SLT, b.lo, K(0)) : K(0);
  Operand ua = sign ? neg_if32(a.lo, na) : a.lo, ub = sign ? neg_if32(b.lo, nb) : b.lo;
  if (const auto* out = sign ? nullptr : direct_destination(in, {a, b}, 4)) {
    udiv32(ua, ub, !rem, (*out)[0]);
    return;
  }
  auto [q, r] = udiv32(ua, ub, !rem);
  Operand res = rem ? r : q;
  if (sign) res = neg_if32(res, rem ? na : opr(Op::XOR, na, nb));
  if (sign && !rem) res = opr(Op::SEL, opr(Op::SEQ, b.lo, K(0)), K(0xFFFFFFFFu), res);  // x / 0 == -1
  write(in.ops[0], t, {res, K(0)});
}

void Lowerer::lower_ldst(const ptx::Instr& in) {
  bool load = in.op == ptx::Op::Ld || in.op == ptx::Op::Ldu;
  const ptx::Operand& addr_op = load ? in.ops[1] : in.ops[0];
  const ptx::Operand& val = load ? in.ops[0] : in.ops[1];
  if (ptx::is_float(in.type) && ptx::type_size(in.type) != 2 && ptx::type_size(in.type) != 4 &&
      ptx::type_size(in.type) != 8)
    unsupported(in, "moves a floating-point type the machine does not have");
  uint32_t off;
  Space space;
  Operand addr = address(in, addr_op, off, space);
  uint32_t es = ptx::type_size(in.type);
  if (es > 8) unsupported(in, "moves a 128-bit value");
  std::vector<const ptx::Operand*> elems;
  if (val.kind == ptx::Operand::Kind::Vector)
    for (auto& e : val.elems) elems.push_back(&e);
  else
    elems.push_back(&val);
  auto access = [&](Space sp, Operand base) {
    for (size_t i = 0; i < elems.size(); ++i) {
      uint32_t o = off + uint32_t(i) * es;
      if (load) {
        if (elems[i]->kind == ptx::Operand::Kind::Sink) continue;
        V v;
        if (es == 8) {
          v.lo = R(ld(sp, base, o, 4, false));
          v.hi = R(ld(sp, base, o + 4, 4, false));
        } else {
          v.lo = R(ld(sp, base, o, es, ptx::is_signed(in.type)));
          uint32_t rs = elems[i]->kind == ptx::Operand::Kind::Reg
                            ? ptx::type_size(frames_.back()->f->regs[elems[i]->reg].type)
                            : 4;
          if (rs == 8) v.hi = ptx::is_signed(in.type) ? opr(Op::SAR, v.lo, K(31)) : K(0);
        }
        write(*elems[i], in.type, v);
      } else {
        V v = read(in, *elems[i], es == 8 ? Type::B64 : Type::B32);
        if (es == 8) {
          st(sp, base, o, 4, v.lo);
          st(sp, base, o + 4, 4, v.hi);
        } else {
          st(sp, base, o, es, v.lo);
        }
      }
    }
  };
  if (is_generic(in, addr_op))
    dispatch_generic(addr, access);
  else
    access(space, addr);
}

bool Lowerer::is_generic(const ptx::Instr& in, const ptx::Operand& addr_op) {
  return in.space == ptx::Space::None && !addr_op.has_sym && addr_op.reg != ptx::kNoReg;
}

// A generic address is global at or above global_base, else local or shared
// by its window (docs/isa.md, 8): one branch picks the access.
void Lowerer::dispatch_generic(Operand a, const std::function<void(Space, Operand)>& access) {
  uint32_t global = new_label(), window = new_label(), local = new_label(), shared = new_label(), done = new_label();
  br(opr(Op::SLEU, K(p_.global_base), a), global, window);
  place(window);
  br(opr(Op::SLEU, K(kLocalWindow), a), local, shared);
  place(local);
  access(Space::Local, opr(Op::SUB, a, K(kLocalWindow)));
  jmp(done);
  place(shared);
  access(Space::Shared, opr(Op::SUB, a, K(kSharedWindow)));
  jmp(done);
  place(global);
  access(Space::Global, a);
  place(done);
}

void Lowerer::lower_atom(const ptx::Instr& in) {
  bool red = in.op == ptx::Op::Red;
  if ((ptx::type_size(in.type) != 4 && ptx::type_size(in.type) != 8) || ptx::is_float(in.type))
    unsupported(in, "is a " + std::string(ptx::type_name(in.type)) + " atomic: the machine's atomics are integer");
  const ptx::Operand& addr_op = red ? in.ops[0] : in.ops[1];
  uint32_t off;
  Space space;
  Operand addr = address(in, addr_op, off, space);
  if (off) addr = opr(Op::ADD, addr, K(off));
  if (space != Space::Global && space != Space::Shared)
    unsupported(in, "is an atomic outside global and shared memory");
  auto access = [&](Space sp, Operand base) {
    if (ptx::type_size(in.type) == 8) return lower_atom64(in, sp, base);
    lower_atom32(in, sp, base);
  };
  if (is_generic(in, addr_op))
    dispatch_generic(addr, access);
  else
    access(space, addr);
}

void Lowerer::lower_atom32(const ptx::Instr& in, Space sp, Operand base) {
  bool red = in.op == ptx::Op::Red;
  bool sign = ptx::is_signed(in.type);
  AtomOp a;
  switch (in.atom) {
    case ptx::AtomOp::Add: a = AtomOp::ADD; break;
    case ptx::AtomOp::Min: a = sign ? AtomOp::MIN : AtomOp::MINU; break;
    case ptx::AtomOp::Max: a = sign ? AtomOp::MAX : AtomOp::MAXU; break;
    case ptx::AtomOp::Exch: a = AtomOp::EXCH; break;
    case ptx::AtomOp::Cas: a = AtomOp::CAS; break;
    case ptx::AtomOp::And: a = AtomOp::AND; break;
    case ptx::AtomOp::Or: a = AtomOp::OR; break;
    case ptx::AtomOp::Xor: a = AtomOp::XOR; break;
    case ptx::AtomOp::Inc: a = AtomOp::INC; break;
    case ptx::AtomOp::Dec: a = AtomOp::DEC; break;
    default: unsupported(in, "is an atomic operation the machine does not have");
  }
  size_t first = red ? 1 : 2;
  Operand b = read32(in, in.ops[first], in.type);
  Operand c = a == AtomOp::CAS ? read32(in, in.ops[first + 1], in.type) : K(0);
  Operand old = atom(sp, a, base, b, c);
  if (!red) write(in.ops[0], in.type, {old, K(0)});
}

// 64-bit atomics from 32-bit ones.  A warp runs without interruption until it
// exits or waits at a barrier (docs/isa.md, "Schedule"), so consecutive blocks
// of one warp are atomic with respect to other warps; within the warp, each
// 32-bit atomic serves its lanes in lane order.  add/exch/and/or/xor act word
// by word (add carries into the high word per lane); cas/min/max serialise
// the lanes, one read-modify-write block per lane (on a one-lane machine,
// just the read-modify-write).
void Lowerer::lower_atom64(const ptx::Instr& in, Space sp, Operand addr) {
  bool red = in.op == ptx::Op::Red;
  size_t first = red ? 1 : 2;
  V b = read(in, in.ops[first], in.type);
  Operand hi_addr = opr(Op::ADD, addr, K(4));
  V old;
  switch (in.atom) {
    case ptx::AtomOp::Add: {
      old.lo = atom(sp, AtomOp::ADD, addr, b.lo);
      Operand carry = opr(Op::SLTU, opr(Op::ADD, old.lo, b.lo), old.lo);
      old.hi = atom(sp, AtomOp::ADD, hi_addr, opr(Op::ADD, b.hi, carry));
      break;
    }
    case ptx::AtomOp::Exch:
    case ptx::AtomOp::And:
    case ptx::AtomOp::Or:
    case ptx::AtomOp::Xor: {
      AtomOp f = in.atom == ptx::AtomOp::Exch  ? AtomOp::EXCH
                 : in.atom == ptx::AtomOp::And ? AtomOp::AND
                 : in.atom == ptx::AtomOp::Or  ? AtomOp::OR
                                               : AtomOp::XOR;
      old.lo = atom(sp, f, addr, b.lo);
      old.hi = atom(sp, f, hi_addr, b.hi);
      break;
    }
    case ptx::AtomOp::Cas:
    case ptx::AtomOp::Min:
    case ptx::AtomOp::Max: {
      V c = in.atom == ptx::AtomOp::Cas ? read(in, in.ops[first + 1], in.type) : V{};
      auto read_modify_write = [&] {
        V o{R(ld(sp, addr, 0, 4, false)), R(ld(sp, hi_addr, 0, 4, false))};
        V nw;
        if (in.atom == ptx::AtomOp::Cas) {
          Operand eq = eq64(o, b);
          nw = {opr(Op::SEL, eq, c.lo, o.lo), opr(Op::SEL, eq, c.hi, o.hi)};
        } else {
          Operand lt = lt64(b, o, ptx::is_signed(in.type), false);
          Operand take_b = in.atom == ptx::AtomOp::Min ? lt : lt64(o, b, ptx::is_signed(in.type), false);
          nw = {opr(Op::SEL, take_b, b.lo, o.lo), opr(Op::SEL, take_b, b.hi, o.hi)};
        }
        st(sp, addr, 0, 4, nw.lo);
        st(sp, hi_addr, 0, 4, nw.hi);
        return o;
      };
      if (p_.lanes == 1) {
        old = read_modify_write();
        break;
      }
      uint32_t i = op(Op::MOV, K(0));
      uint32_t loop = new_label(), mine = new_label(), next = new_label(), done = new_label();
      place(loop);
      br(opr(Op::SEQ, opr(Op::LANE), R(i)), mine, next);
      place(mine);
      old = read_modify_write();
      place(next);
      opd(i, Op::ADD, R(i), K(1));
      br(opr(Op::SLTU, R(i), K(p_.lanes)), loop, done);
      place(done);
      break;
    }
    default: unsupported(in, "is a 64-bit atomic operation the machine does not have");
  }
  if (!red) write(in.ops[0], in.type, old);
}

// match.any.sync.b32 d, a, membermask: the lanes of the 32-thread warp whose a equals this thread's.
void Lowerer::lower_match(const ptx::Instr& in) {
  if (in.match != ptx::MatchMode::Any || ptx::type_size(in.type) != 4)
    unsupported(in, "is a match form the lowering does not take (match.any.b32 only)");
  Operand a = read32(in, in.ops[1], Type::B32);
  Operand present = warp_ballot(K(1));
  Operand area = warp_scratch(kScratchShfl);
  st(Space::Shared, opr(Op::ADD, area, opr(Op::SHL, opr(Op::AND, tid_linear(), K(31)), K(2))), 0, 4, a);
  barrier(VI::Wbar);
  Operand acc = K(0);
  for (uint32_t j = 0; j < 32; ++j) {
    Operand w = R(ld(Space::Shared, area, 4 * j, 4, false));
    acc = opr(Op::OR, acc, opr(Op::SHL, opr(Op::SEQ, w, a), K(j)));
  }
  barrier(VI::Wbar);
  clear_shfl_slot(area);
  write(in.ops[0], Type::B32, {opr(Op::AND, acc, present), K(0)});
}

void Lowerer::lower_call(const ptx::Instr& in) {
  const ptx::Operand& callee = in.ops[1];
  if (callee.kind != ptx::Operand::Kind::Sym || callee.sym.kind != ptx::SymKind::Func)
    unsupported(in, "is an indirect call: the machine inlines device functions and has no indirect calls");
  const ptx::Function& f = m_.functions[callee.sym.index];
  if (f.name == "__assertfail") return lower_assert(in);
  if (f.name == "vprintf") return lower_printf(in);
  if (!f.has_body) unsupported(in, "calls `" + f.name + "`, which has no body the machine can run");
  for (auto* fr : frames_)
    if (fr->findex == callee.sym.index) unsupported(in, "is a recursive call: device functions are inlined");
  Frame fr;
  fr.f = &f;
  fr.findex = callee.sym.index;
  fr.ret_label = new_label();
  const ptx::Operand& rets = in.ops[0];
  const ptx::Operand& args = in.ops[2];
  // Call-site parameters are local variables of the caller; the callee's
  // parameters and return values alias them.
  auto slot = [&](const ptx::Operand& o) -> uint32_t {
    if (o.kind != ptx::Operand::Kind::Sym) unsupported(in, "passes an argument that is not a .param variable");
    ptx::Space sp;
    return symbol_address(in, o.sym, &sp);
  };
  for (size_t i = 0; i < f.params.size(); ++i)
    fr.param_off.push_back(i < args.elems.size() ? slot(args.elems[i])
                                                 : local_alloc(f.params[i].size, f.params[i].align));
  for (size_t i = 0; i < f.rets.size(); ++i)
    fr.ret_off.push_back(i < rets.elems.size() ? slot(rets.elems[i]) : local_alloc(f.rets[i].size, f.rets[i].align));
  uint32_t ret = fr.ret_label;
  lower_function(fr);
  place(ret);
}

// The format string of a vprintf call, found statically: the value stored
// into the call's first argument is the address of a module string (through
// mov and cvta).
std::string Lowerer::printf_format(const ptx::Instr& call) {
  const ptx::Function& f = *frames_.back()->f;
  size_t at = size_t(&call - f.body.data());
  const ptx::Operand& arg = call.ops[2].elems.at(0);
  auto fail = [&]() -> std::string { unsupported(call, "passes a printf format the lowering cannot find statically"); };
  uint32_t reg = ptx::kNoReg;
  for (size_t j = at; j-- > 0;) {
    const ptx::Instr& s = f.body[j];
    if (s.op == ptx::Op::St && s.ops[0].has_sym && s.ops[0].sym.kind == arg.sym.kind &&
        s.ops[0].sym.index == arg.sym.index) {
      if (s.ops[1].kind != ptx::Operand::Kind::Reg) return fail();
      reg = s.ops[1].reg;
      at = j;
      break;
    }
  }
  while (reg != ptx::kNoReg) {
    size_t j = at;
    while (j-- > 0 && !(f.body[j].ops.size() > 1 && f.body[j].ops[0].kind == ptx::Operand::Kind::Reg &&
                        f.body[j].ops[0].reg == reg)) {
    }
    if (j == size_t(-1)) return fail();
    const ptx::Instr& d = f.body[j];
    if (d.op != ptx::Op::Mov && d.op != ptx::Op::Cvta) return fail();
    const ptx::Operand& src = d.ops[1];
    if (src.kind == ptx::Operand::Kind::Sym && src.sym.kind == ptx::SymKind::ModuleVar) {
      const auto& init = m_.vars[src.sym.index].init;
      std::string str(init.begin(), init.end());
      return str.substr(0, str.find('\0'));
    }
    if (src.kind != ptx::Operand::Kind::Reg) return fail();
    reg = src.reg;
    at = j;
  }
  return fail();
}

// vprintf(format, args): append a record to the print space (printf.h).
void Lowerer::lower_printf(const ptx::Instr& in) {
  const ptx::Operand& args = in.ops[2];
  if (args.elems.size() != 2) unsupported(in, "calls vprintf with an unexpected argument list");
  uint32_t n;
  try {
    n = printf_arg_bytes(printf_format(in));
  } catch (const std::invalid_argument& e) {
    unsupported(in, std::string("has a printf format the machine cannot format: ") + e.what());
  }
  ptx::Space sp;
  uint32_t fmt_slot = symbol_address(in, args.elems[0].sym, &sp);
  uint32_t arg_slot = symbol_address(in, args.elems[1].sym, &sp);
  Operand fmt = R(ld(Space::Local, K(fmt_slot), 0, 4, false));
  Operand argp = opr(Op::SUB, R(ld(Space::Local, K(arg_slot), 0, 4, false)), K(kLocalWindow));
  std::vector<Operand> vals;
  for (uint32_t i = 0; i < (n + 3) / 4; ++i) vals.push_back(R(ld(Space::Local, argp, 4 * i, 4, false)));
  append_print_record(fmt, n, vals);
}

// __assertfail(message, file, line, function, size): a print record that the
// backend formats as CUDA's assertion message, then trap 710.
void Lowerer::lower_assert(const ptx::Instr& in) {
  const ptx::Operand& args = in.ops[2];
  if (args.elems.size() < 4) unsupported(in, "calls __assertfail with an unexpected argument list");
  std::vector<Operand> words;
  for (int i = 0; i < 4; ++i) {
    ptx::Space sp;
    words.push_back(R(ld(Space::Local, K(symbol_address(in, args.elems[i].sym, &sp)), 0, 4, false)));
  }
  for (char c : {'x', 'y', 'z'}) words.push_back(component(opr(Op::CTA), shape_.grid, c));
  for (char c : {'x', 'y', 'z'}) words.push_back(component(tid_linear(), shape_.block, c));
  append_print_record(K(kAssertRecord), uint32_t(4 * words.size()), words);
  code_.push_back({VI::Trap, {}, 0, 0, 0, uint32_t(launch::kAssert)});
  place(new_label());
}

// Appends [format][bytes][words...] to the print space, or nothing when it is full.
void Lowerer::append_print_record(Operand format, uint32_t bytes, const std::vector<Operand>& words) {
  const uint32_t rec = 8 + 4 * uint32_t(words.size());
  Operand off = atom(Space::Print, AtomOp::ADD, K(0), K(rec));
  uint32_t write = new_label(), skip = new_label();
  br(opr(Op::SLEU, opr(Op::ADD, off, K(4 + rec)), K(p_.print_bytes)), write, skip);
  place(write);
  Operand at = opr(Op::ADD, off, K(4));
  st(Space::Print, at, 0, 4, format);
  st(Space::Print, at, 4, 4, K(bytes));
  for (size_t i = 0; i < words.size(); ++i) st(Space::Print, at, 8 + 4 * uint32_t(i), 4, words[i]);
  place(skip);
}

// Bit i of the result: the predicate of CUDA lane i, over the converged
// threads of this thread's 32-thread warp.  The first wbar gathers them
// before anyone sets a bit (threads of another branch may wait at another
// wbar meanwhile); each thread sets and, after everyone has read, clears only
// its own bit, so back-to-back votes need no reset phase (docs/isa.md, 7).
Operand Lowerer::warp_ballot(Operand pred) {
  Operand me = opr(Op::SHL, K(1), opr(Op::AND, tid_linear(), K(31)));
  Operand bit = opr(Op::SEL, pred, me, K(0));
  Operand addr = warp_scratch(kScratchVote);
  barrier(VI::Wbar);
  atom(Space::Shared, AtomOp::OR, addr, bit);
  barrier(VI::Wbar);
  Operand v = R(ld(Space::Shared, addr, 0, 4, false));
  barrier(VI::Wbar);
  atom(Space::Shared, AtomOp::AND, addr, opr(Op::XOR, bit, K(~0u)));
  return v;
}

void Lowerer::lower_vote(const ptx::Instr& in) {
  if (in.op == ptx::Op::Activemask) {
    write(in.ops[0], Type::B32, {warp_ballot(K(1)), K(0)});
    return;
  }
  Operand p = read32(in, in.ops[1], Type::Pred);
  Operand member = in.ops.size() > 2 ? read32(in, in.ops[2], Type::B32) : K(~0u);
  switch (in.vote) {
    case ptx::VoteMode::Ballot: write(in.ops[0], Type::B32, {opr(Op::AND, warp_ballot(p), member), K(0)}); return;
    case ptx::VoteMode::Any: write(in.ops[0], Type::Pred, {opr(Op::SNE, warp_ballot(p), K(0)), K(0)}); return;
    case ptx::VoteMode::All:
      write(in.ops[0], Type::Pred, {opr(Op::SEQ, warp_ballot(opr(Op::XOR, p, K(1))), K(0)), K(0)});
      return;
    case ptx::VoteMode::Uni: {
      Operand yes = warp_ballot(p), no = warp_ballot(opr(Op::XOR, p, K(1)));
      write(in.ops[0], Type::Pred, {opr(Op::OR, opr(Op::SEQ, yes, K(0)), opr(Op::SEQ, no, K(0))), K(0)});
      return;
    }
    default: unsupported(in, "is a vote mode the machine does not have");
  }
}

void Lowerer::lower_shfl(const ptx::Instr& in) {
  // shfl.sync.mode.b32 d[|p], a, b, c, membermask
  const ptx::Operand& d = in.ops[0];
  Operand a = read32(in, in.ops[1], Type::B32);
  Operand b = opr(Op::AND, read32(in, in.ops[2], Type::B32), K(31));
  Operand c = read32(in, in.ops[3], Type::B32);
  Operand lane = opr(Op::AND, tid_linear(), K(31));
  Operand cval = opr(Op::AND, c, K(31));
  Operand segmask = opr(Op::AND, opr(Op::SHR, c, K(8)), K(31));
  Operand notseg = opr(Op::XOR, segmask, K(~0u));
  Operand minlane = opr(Op::AND, lane, segmask);
  Operand maxlane = opr(Op::OR, minlane, opr(Op::AND, cval, notseg));
  Operand j, ok;
  switch (in.shfl) {
    case ptx::ShflMode::Up:
      j = opr(Op::SUB, lane, b);
      ok = opr(Op::SLE, maxlane, j);
      break;
    case ptx::ShflMode::Down:
      j = opr(Op::ADD, lane, b);
      ok = opr(Op::SLE, j, maxlane);
      break;
    case ptx::ShflMode::Bfly:
      j = opr(Op::XOR, lane, b);
      ok = opr(Op::SLE, j, maxlane);
      break;
    case ptx::ShflMode::Idx:
      j = opr(Op::OR, minlane, opr(Op::AND, b, notseg));
      ok = opr(Op::SLE, j, maxlane);
      break;
    default: unsupported(in, "is a shuffle mode the machine does not have");
  }
  Operand src = opr(Op::SEL, ok, j, lane);
  Operand area = warp_scratch(kScratchShfl);
  st(Space::Shared, opr(Op::ADD, area, opr(Op::SHL, lane, K(2))), 0, 4, a);
  barrier(VI::Wbar);
  Operand v = R(ld(Space::Shared, opr(Op::ADD, area, opr(Op::SHL, src, K(2))), 0, 4, false));
  barrier(VI::Wbar);
  clear_shfl_slot(area);
  if (d.kind == ptx::Operand::Kind::PredPair) {
    ptx::Operand dv = d, dp = d;
    dv.kind = dp.kind = ptx::Operand::Kind::Reg;
    dp.reg = d.reg2;
    write(dv, Type::B32, {v, K(0)});
    write(dp, Type::Pred, {ok, K(0)});
  } else {
    write(d, Type::B32, {v, K(0)});
  }
}

// bar.red.{popc,and,or}: every thread adds its contribution to a CTA counter,
// waits, reads, waits, and takes its contribution back out.
void Lowerer::lower_bar_red(const ptx::Instr& in) {
  scratch_used_ = true;
  const ptx::Operand& pop = in.ops.back();
  Operand p = read32(in, pop, Type::Pred);
  if (in.atom != ptx::AtomOp::Popc) p = in.atom == ptx::AtomOp::And ? opr(Op::XOR, p, K(1)) : p;
  Operand a = K(scratch_base_);
  atom(Space::Shared, AtomOp::ADD, a, p);
  barrier(VI::Bar);
  Operand n = R(ld(Space::Shared, a, 0, 4, false));
  barrier(VI::Bar);
  atom(Space::Shared, AtomOp::ADD, a, opr(Op::SUB, K(0), p));
  Operand r = in.atom == ptx::AtomOp::Popc  ? n
              : in.atom == ptx::AtomOp::And ? opr(Op::SEQ, n, K(0))
                                            : opr(Op::SNE, n, K(0));
  write(in.ops[0], in.atom == ptx::AtomOp::Popc ? Type::U32 : Type::Pred, {r, K(0)});
}

void Lowerer::lower_instr(const ptx::Instr& in) {
  if (in.op == ptx::Op::Tex || in.op == ptx::Op::Suld || in.op == ptx::Op::Sust) return lower_texture(in);
  if (lower_more(in)) return;
  using PO = ptx::Op;
  Type t = in.type;
  const uint32_t size = ptx::type_size(t);
  const bool wide = size == 8;
  const bool sign = ptx::is_signed(t);
  if ((ptx::is_float(t) || ptx::is_float(in.type2)) && in.op != PO::Ld && in.op != PO::St && in.op != PO::Mov &&
      in.op != PO::Ldu && in.op != PO::Selp)
    return lower_float(in);  // software floating point (softfloat.h)
  auto bin32 = [&](Op o) {
    V a = read(in, in.ops[1], t), b = read(in, in.ops[2], t);
    if (wide)
      write(in.ops[0], t, {opr(o, a.lo, b.lo), opr(o, a.hi, b.hi)});
    else
      write(in.ops[0], t, {opr(o, a.lo, b.lo), K(0)});
  };
  switch (in.op) {
    case PO::Mov: {
      if (in.ops[1].kind == ptx::Operand::Kind::Sym && in.ops[1].sym.kind == ptx::SymKind::Func)
        unsupported(in, "takes the address of a function (indirect calls are not supported)");
      write(in.ops[0], t, read(in, in.ops[1], t));
      return;
    }
    case PO::Add:
    case PO::Sub: {
      if (in.sat || in.cc) unsupported(in, "uses a carry or saturation form the lowering does not take");
      V a = read(in, in.ops[1], t), b = read(in, in.ops[2], t);
      bool add = in.op == PO::Add;
      if (wide)
        write(in.ops[0], t, add ? add64(a, b) : sub64(a, b));
      else
        write(in.ops[0], t, {opr(add ? Op::ADD : Op::SUB, a.lo, b.lo), K(0)});
      return;
    }
    case PO::Mul:
    case PO::Mad: {
      V a = read(in, in.ops[1], t), b = read(in, in.ops[2], t);
      V r;
      Type rt = t;
      if (in.mul == ptx::MulMode::Wide) {
        if (size == 2) {
          r.lo = opr(Op::MUL, a.lo, b.lo);
          rt = sign ? Type::S32 : Type::U32;
        } else if (size == 4) {
          r = {opr(Op::MUL, a.lo, b.lo), opr(sign ? Op::MULHS : Op::MULHU, a.lo, b.lo)};
          rt = sign ? Type::S64 : Type::U64;
        } else {
          unsupported(in, "is a 64x64 wide multiply");
        }
      } else if (in.mul == ptx::MulMode::Hi) {
        if (wide)
          r = mulhi64(a, b, sign);
        else if (size == 4)
          r.lo = opr(sign ? Op::MULHS : Op::MULHU, a.lo, b.lo);
        else
          r.lo = opr(Op::SHR, opr(Op::MUL, a.lo, b.lo), K(16));
      } else {
        if (wide)
          r = mul64(a, b);
        else
          r.lo = opr(Op::MUL, a.lo, b.lo);
      }
      if (in.op == PO::Mad) {
        if (in.sat || in.cc) unsupported(in, "uses a carry or saturation form the lowering does not take");
        V c = read(in, in.ops[3], rt);
        r = ptx::type_size(rt) == 8 ? add64(r, c) : V{opr(Op::ADD, r.lo, c.lo), K(0)};
      }
      write(in.ops[0], rt, r);
      return;
    }
    case PO::Div:
    case PO::Rem: lower_divrem(in); return;
    case PO::Abs:
    case PO::Neg: {
      V a = read(in, in.ops[1], t);
      if (wide) {
        Operand n = in.op == PO::Neg ? K(1) : opr(Op::SLT, a.hi, K(0));
        write(in.ops[0], t, neg_if64(a, n));
      } else {
        Operand n = in.op == PO::Neg ? K(1) : opr(Op::SLT, a.lo, K(0));
        write(in.ops[0], t, {neg_if32(a.lo, n), K(0)});
      }
      return;
    }
    case PO::Min:
    case PO::Max: {
      V a = read(in, in.ops[1], t), b = read(in, in.ops[2], t);
      bool mn = in.op == PO::Min;
      if (wide) {
        Operand lt = lt64(a, b, sign, false);
        Operand take_a = mn ? lt : opr(Op::XOR, lt, K(1));
        write(in.ops[0], t, {opr(Op::SEL, take_a, a.lo, b.lo), opr(Op::SEL, take_a, a.hi, b.hi)});
      } else {
        Op o = mn ? (sign ? Op::MIN : Op::MINU) : (sign ? Op::MAX : Op::MAXU);
        write(in.ops[0], t, {opr(o, a.lo, b.lo), K(0)});
      }
      return;
    }
    case PO::Popc:
    case PO::Clz:
    case PO::Brev: {
      V a = read(in, in.ops[1], t);
      if (in.op == PO::Popc)
        write(in.ops[0], Type::U32,
              {wide ? opr(Op::ADD, opr(Op::POPC, a.lo), opr(Op::POPC, a.hi)) : opr(Op::POPC, a.lo), K(0)});
      else if (in.op == PO::Clz)
        write(
            in.ops[0], Type::U32,
            {wide ? opr(Op::SEL, opr(Op::SEQ, a.hi, K(0)), opr(Op::ADD, opr(Op::CLZ, a.lo), K(32)), opr(Op::CLZ, a.hi))
                  : opr(Op::CLZ, a.lo),
             K(0)});
      else
        write(in.ops[0], t, wide ? V{opr(Op::BREV, a.hi), opr(Op::BREV, a.lo)} : V{opr(Op::BREV, a.lo), K(0)});
      return;
    }
    case PO::Bfind: {
      if (wide) unsupported(in, "is a 64-bit bfind");
      Operand a = read32(in, in.ops[1], t);
      Operand x = sign ? opr(Op::SEL, opr(Op::SLT, a, K(0)), opr(Op::XOR, a, K(~0u)), a) : a;
      Operand clz = opr(Op::CLZ, x);
      Operand r = in.shiftamt ? opr(Op::SEL, opr(Op::SEQ, x, K(0)), K(~0u), clz) : opr(Op::SUB, K(31), clz);
      write(in.ops[0], Type::U32, {r, K(0)});
      return;
    }
    case PO::Bfe: {
      if (wide) unsupported(in, "is a 64-bit bfe");
      Operand a = read32(in, in.ops[1], t);
      Operand pos = opr(Op::AND, read32(in, in.ops[2], Type::U32), K(0xff));
      Operand len = opr(Op::AND, read32(in, in.ops[3], Type::U32), K(0xff));
      Operand r;
      if (sign) {
        Operand top = opr(Op::MINU, opr(Op::ADD, pos, len), K(32));
        Operand x = opr(Op::SHL, a, opr(Op::SUB, K(32), top));
        r = opr(Op::SAR, x, opr(Op::ADD, opr(Op::SUB, K(32), top), pos));
        r = opr(Op::SEL, opr(Op::SEQ, len, K(0)), K(0), r);
      } else {
        r = opr(Op::AND, opr(Op::SHR, a, pos), opr(Op::SUB, opr(Op::SHL, K(1), len), K(1)));
      }
      write(in.ops[0], t, {r, K(0)});
      return;
    }
    case PO::Bfi: {
      if (wide) unsupported(in, "is a 64-bit bfi");
      Operand f = read32(in, in.ops[1], t), b = read32(in, in.ops[2], t);
      Operand pos = opr(Op::AND, read32(in, in.ops[3], Type::U32), K(0xff));
      Operand len = opr(Op::AND, read32(in, in.ops[4], Type::U32), K(0xff));
      Operand mask = opr(Op::SHL, opr(Op::SUB, opr(Op::SHL, K(1), len), K(1)), pos);
      Operand r = opr(Op::OR, opr(Op::AND, b, opr(Op::XOR, mask, K(~0u))), opr(Op::AND, opr(Op::SHL, f, pos), mask));
      write(in.ops[0], t, {r, K(0)});
      return;
    }
    case PO::Prmt: {
      if (in.prmt != ptx::PrmtMode::None) unsupported(in, "is a prmt mode the lowering does not take");
      Operand a = read32(in, in.ops[1], Type::B32), b = read32(in, in.ops[2], Type::B32);
      Operand c = read32(in, in.ops[3], Type::B32);
      Operand r = K(0);
      for (uint32_t i = 0; i < 4; ++i) {
        // Selector nibble i: bits 0-2 pick one of the 8 bytes of {b, a}, bit 3 replicates its sign.
        Operand byte;
        if (c.imm) {
          uint32_t s = (c.v >> (4 * i)) & 7, msb = (c.v >> (4 * i + 3)) & 1;
          byte = opr(Op::AND, opr(Op::SHR, s < 4 ? a : b, K((s & 3) * 8)), K(0xff));
          if (msb) byte = opr(Op::AND, opr(Op::SUB, K(0), opr(Op::SHR, byte, K(7))), K(0xff));
        } else {
          Operand nib = opr(Op::SHR, c, K(4 * i));
          Operand src = opr(Op::SEL, opr(Op::AND, nib, K(4)), b, a);
          byte = opr(Op::AND, opr(Op::SHR, src, opr(Op::SHL, opr(Op::AND, nib, K(3)), K(3))), K(0xff));
          Operand sign = opr(Op::AND, opr(Op::SUB, K(0), opr(Op::SHR, byte, K(7))), K(0xff));
          byte = opr(Op::SEL, opr(Op::AND, nib, K(8)), sign, byte);
        }
        r = opr(Op::OR, r, opr(Op::SHL, byte, K(8 * i)));
      }
      write(in.ops[0], Type::B32, {r, K(0)});
      return;
    }
    case PO::Shf: {
      Operand a = read32(in, in.ops[1], Type::B32), b = read32(in, in.ops[2], Type::B32);
      Operand c = read32(in, in.ops[3], Type::U32);
      Operand n = in.shf_mode == ptx::ShfMode::Clamp ? opr(Op::MINU, c, K(32)) : opr(Op::AND, c, K(31));
      Operand r = in.shf_dir == ptx::ShfDir::L
                      ? opr(Op::OR, opr(Op::SHL, b, n), opr(Op::SHR, a, opr(Op::SUB, K(32), n)))
                      : opr(Op::OR, opr(Op::SHR, a, n), opr(Op::SHL, b, opr(Op::SUB, K(32), n)));
      write(in.ops[0], Type::B32, {r, K(0)});
      return;
    }
    case PO::Shl:
    case PO::Shr: {
      V a = read(in, in.ops[1], t);
      Operand n = read32(in, in.ops[2], Type::U32);
      if (wide) {
        write(in.ops[0], t, in.op == PO::Shl ? shl64(a, n) : shr64(a, n, sign));
      } else {
        Op o = in.op == PO::Shl ? Op::SHL : sign ? Op::SAR : Op::SHR;
        write(in.ops[0], t, {opr(o, a.lo, n), K(0)});
      }
      return;
    }
    case PO::And: bin32(Op::AND); return;
    case PO::Or: bin32(Op::OR); return;
    case PO::Xor: bin32(Op::XOR); return;
    case PO::Not: {
      V a = read(in, in.ops[1], t);
      uint32_t ones = t == Type::Pred ? 1u : ~0u;
      write(in.ops[0], t, {opr(Op::XOR, a.lo, K(ones)), wide ? opr(Op::XOR, a.hi, K(ones)) : K(0)});
      return;
    }
    case PO::Cnot: {
      V a = read(in, in.ops[1], t);
      write(in.ops[0], t, {opr(Op::SEQ, wide ? opr(Op::OR, a.lo, a.hi) : a.lo, K(0)), K(0)});
      return;
    }
    case PO::Cvt: lower_cvt(in); return;
    case PO::Cvta: {
      V a = read(in, in.ops[1], t);
      uint32_t window = in.space == ptx::Space::Shared  ? kSharedWindow
                        : in.space == ptx::Space::Local ? kLocalWindow
                                                        : 0;
      if (window) a.lo = opr(in.to ? Op::SUB : Op::ADD, a.lo, K(window));
      write(in.ops[0], t, {a.lo, K(0)});
      return;
    }
    case PO::Selp: {
      V a = read(in, in.ops[1], t), b = read(in, in.ops[2], t);
      Operand c = read32(in, in.ops[3], Type::Pred);
      write(in.ops[0], t, {opr(Op::SEL, c, a.lo, b.lo), wide ? opr(Op::SEL, c, a.hi, b.hi) : K(0)});
      return;
    }
    case PO::Slct: {
      if (ptx::is_float(in.type2)) unsupported(in, "selects on a floating-point value");
      V a = read(in, in.ops[1], t), b = read(in, in.ops[2], t);
      Operand c = opr(Op::SLE, K(0), read32(in, in.ops[3], Type::S32));
      write(in.ops[0], t, {opr(Op::SEL, c, a.lo, b.lo), wide ? opr(Op::SEL, c, a.hi, b.hi) : K(0)});
      return;
    }
    case PO::Setp:
    case PO::Set: lower_setp(in); return;
    case PO::Ld:
    case PO::Ldu:
    case PO::St: lower_ldst(in); return;
    case PO::Atom:
    case PO::Red: lower_atom(in); return;
    case PO::Bra: jmp(frames_.back()->labels[in.ops[0].label]); return;
    case PO::Ret:
      if (frames_.back()->kernel)
        exit_thread();
      else
        jmp(frames_.back()->ret_label);
      place(new_label());
      return;
    case PO::Exit:
      exit_thread();
      place(new_label());
      return;
    case PO::Trap:
      code_.push_back({VI::Trap, {}, 0, 0, 0, uint32_t(launch::kLaunchFailure)});
      place(new_label());
      return;
    case PO::Call: lower_call(in); return;
    case PO::Bar:
      if (in.bar == ptx::BarKind::Red) return lower_bar_red(in);
      if (in.bar == ptx::BarKind::Arrive) unsupported(in, "is bar.arrive: the machine's barriers wait");
      barrier(VI::Bar);
      return;
    case PO::BarWarp: barrier(VI::Wbar); return;
    case PO::Membar:
    case PO::Fence:
    case PO::Prefetch:
    case PO::Nanosleep: return;  // one thread at a time: memory is always coherent
    case PO::Shfl: lower_shfl(in); return;
    case PO::Vote:
    case PO::Activemask: lower_vote(in); return;
    case PO::Match: lower_match(in); return;
    default: break;
  }
  unsupported(in, "is not supported by the machine");
}

// ---- more of PTX's integer instructions ------------------------------------------------
//
// docs/isa.md, section 8.2.  Each form becomes operations every machine has,
// so it runs on every backend, the model's machine included.

bool Lowerer::lower_more(const ptx::Instr& in) {
  using PO = ptx::Op;
  if (ptx::is_float(in.type)) return false;
  const bool wide = ptx::type_size(in.type) == 8;
  switch (in.op) {
    case PO::Add:
    case PO::Sub:
      if (in.cc) return lower_carry(in), true;
      if (in.sat && in.type == Type::S32) return lower_sat(in), true;
      return false;
    case PO::Mad:
      if (in.cc && in.mul != ptx::MulMode::Wide) return lower_carry(in), true;
      return false;
    case PO::Addc:
    case PO::Subc:
    case PO::Madc: lower_carry(in); return true;
    case PO::Mul24:
    case PO::Mad24: lower_mul24(in); return true;
    case PO::Sad: lower_sad(in); return true;
    case PO::Lop3: lower_lop3(in); return true;
    case PO::Dp4a: lower_dp(in); return true;
    case PO::Bmsk:
    case PO::Szext: lower_bitfield64(in); return true;
    case PO::Redux: lower_redux(in); return true;
    case PO::Match: lower_match_any_all(in); return true;
    case PO::Bfe:
    case PO::Bfi:
    case PO::Bfind:
      if (wide) return lower_bitfield64(in), true;
      return false;
    case PO::Prmt:
      if (in.prmt != ptx::PrmtMode::None) return lower_prmt_mode(in), true;
      return false;
    case PO::Bar:
      if (counted_barriers_) return lower_named_barrier(in), true;
      return false;
    case PO::Call: {
      const ptx::Operand& callee = in.ops[1];
      if (callee.kind == ptx::Operand::Kind::Reg) return lower_indirect_call(in), true;
      if (callee.kind != ptx::Operand::Kind::Sym || callee.sym.kind != ptx::SymKind::Func) return false;
      const std::string& name = m_.functions[callee.sym.index].name;
      if (name == "malloc" && !m_.functions[callee.sym.index].has_body) return lower_malloc(in), true;
      if (name == "free" && !m_.functions[callee.sym.index].has_body) return lower_free(in), true;
      return false;
    }
    case PO::Mov:
      if (in.ops[1].kind == ptx::Operand::Kind::Sym && in.ops[1].sym.kind == ptx::SymKind::Func) {
        write(in.ops[0], in.type, {K(ptx::function_address(in.ops[1].sym.index)), K(0)});
        return true;
      }
      return false;
    default: return false;
  }
}

// The other predefined identifiers: no driver environment, performance
// counters, reserved shared memory or graph; every CTA its own 1x1x1 cluster.
Operand Lowerer::special_more(const ptx::Instr& in, const ptx::Operand& o) {
  switch (o.sreg) {
    case ptx::SReg::AggrSmemSize:
      return K(std::max<uint32_t>(shared_.static_size, shared_.dynamic_offset + shape_.dynamic_smem));
    case ptx::SReg::Envreg:
    case ptx::SReg::Pm:
    case ptx::SReg::Pm64:
    case ptx::SReg::CurrentGraphExec:
    case ptx::SReg::ReservedSmemOffsetBegin:
    case ptx::SReg::ReservedSmemOffsetEnd:
    case ptx::SReg::ReservedSmemOffsetCap:
    case ptx::SReg::ReservedSmemOffset:
    case ptx::SReg::IsExplicitCluster:
    case ptx::SReg::ClusterCtaid:
    case ptx::SReg::ClusterCtarank: return K(0);
    case ptx::SReg::ClusterNctaid:
    case ptx::SReg::ClusterNctarank: return K(1);
    case ptx::SReg::Clusterid: return component(opr(Op::CTA), shape_.grid, o.component);
    case ptx::SReg::Nclusterid: return K(dim_of(shape_.grid, o.component));
    default: break;
  }
  unsupported(in, "reads a special register the machine does not have");
}

// CC.CF: one virtual register per thread, written through the guard like
// any destination.
void Lowerer::set_carry(Operand c) {
  if (carry_ == kNoV) carry_ = nv();
  if (!guard_.imm || guard_.v != 1)
    opd(carry_, Op::SEL, guard_, c, R(carry_));
  else
    opd(carry_, Op::MOV, c);
}
Operand Lowerer::carry_in() {
  if (carry_ == kNoV) carry_ = nv();
  return R(carry_);
}

// add.cc, addc, sub.cc, subc (CC.CF a borrow), mad.cc and madc, 32- and
// 64-bit: with s = x + y + cin, the carry out is s < x, or s = x with a carry
// in; a borrow out of x - y - bin is x < y, or x = y with a borrow in.
void Lowerer::lower_carry(const ptx::Instr& in) {
  using PO = ptx::Op;
  const Type t = in.type;
  const bool wide = ptx::type_size(t) == 8;
  if (in.sat) unsupported(in, "saturates a carry chain");
  const bool with_cin = in.op == PO::Addc || in.op == PO::Subc || in.op == PO::Madc;
  const Operand cin = with_cin ? carry_in() : K(0);
  V a = read(in, in.ops[1], t), b = read(in, in.ops[2], t);
  auto ltu = [&](V x, V y) { return wide ? lt64(x, y, false, false) : opr(Op::SLTU, x.lo, y.lo); };
  auto equ = [&](V x, V y) { return wide ? eq64(x, y) : opr(Op::SEQ, x.lo, y.lo); };
  auto plus = [&](V x, V y) { return wide ? add64(x, y) : V{opr(Op::ADD, x.lo, y.lo), K(0)}; };
  auto minus = [&](V x, V y) { return wide ? sub64(x, y) : V{opr(Op::SUB, x.lo, y.lo), K(0)}; };
  V r;
  Operand out;
  if (in.op == PO::Sub || in.op == PO::Subc) {
    r = minus(minus(a, b), {cin, K(0)});
    out = opr(Op::OR, ltu(a, b), opr(Op::AND, cin, equ(a, b)));
  } else {
    V x = a, y = b;
    if (in.op == PO::Mad || in.op == PO::Madc) {
      const bool sign = ptx::is_signed(t);
      if (in.mul == ptx::MulMode::Hi)
        x = wide ? mulhi64(a, b, sign) : V{opr(sign ? Op::MULHS : Op::MULHU, a.lo, b.lo), K(0)};
      else
        x = wide ? mul64(a, b) : V{opr(Op::MUL, a.lo, b.lo), K(0)};
      y = read(in, in.ops[3], t);
    }
    r = plus(plus(x, y), {cin, K(0)});
    out = opr(Op::OR, ltu(r, x), opr(Op::AND, cin, equ(r, x)));
  }
  if (!wide) r.hi = K(0);
  write(in.ops[0], t, r);
  if (in.cc) set_carry(out);
}

// add.sat.s32 / sub.sat.s32: the wrapped result, or the bound on the side
// of a's sign when the operation overflowed.
void Lowerer::lower_sat(const ptx::Instr& in) {
  Operand a = read32(in, in.ops[1], in.type), b = read32(in, in.ops[2], in.type);
  const bool add = in.op == ptx::Op::Add;
  Operand s = opr(add ? Op::ADD : Op::SUB, a, b);
  Operand ov = add ? opr(Op::AND, opr(Op::XOR, s, a), opr(Op::XOR, s, b))
                   : opr(Op::AND, opr(Op::XOR, a, b), opr(Op::XOR, a, s));
  Operand bound = opr(Op::XOR, opr(Op::SAR, a, K(31)), K(0x7fffffff));
  write(in.ops[0], in.type, {opr(Op::SEL, opr(Op::SHR, ov, K(31)), bound, s), K(0)});
}

// lop3.b32 d, a, b, c, lut: the function whose truth table is lut (bit
// 4a + 2b + c), by Shannon expansion on a, b, c in turn; constant and
// single-variable cofactors become and/or/xor of the variable.
Operand Lowerer::lop3_expand(uint32_t lut, const std::array<Operand, 3>& x, int var, uint32_t nvars) {
  const uint32_t size = 1u << nvars, all = size == 32 ? ~0u : (1u << size) - 1;
  lut &= all;
  if (lut == 0) return K(0);
  if (lut == all) return K(~0u);
  // Split on x[var], the highest index bit of the remaining table.
  const uint32_t half = size / 2, hmask = (1u << half) - 1;
  const uint32_t t0 = lut & hmask, t1 = (lut >> half) & hmask;
  const Operand v = x[var];
  if (t0 == t1) return lop3_expand(t0, x, var + 1, nvars - 1);
  if (t0 == 0) return opr(Op::AND, v, lop3_expand(t1, x, var + 1, nvars - 1));
  if (t1 == 0) return opr(Op::AND, opr(Op::XOR, v, K(~0u)), lop3_expand(t0, x, var + 1, nvars - 1));
  if (t0 == hmask) return opr(Op::OR, opr(Op::XOR, v, K(~0u)), lop3_expand(t1, x, var + 1, nvars - 1));
  if (t1 == hmask) return opr(Op::OR, v, lop3_expand(t0, x, var + 1, nvars - 1));
  Operand g0 = lop3_expand(t0, x, var + 1, nvars - 1);
  if ((t0 ^ t1) == hmask) return opr(Op::XOR, v, g0);
  Operand g1 = lop3_expand(t1, x, var + 1, nvars - 1);
  return opr(Op::XOR, g0, opr(Op::AND, v, opr(Op::XOR, g0, g1)));
}
void Lowerer::lower_lop3(const ptx::Instr& in) {
  if (in.ops.size() != 5 || in.ops[4].kind != ptx::Operand::Kind::Imm)
    unsupported(in, "is a lop3 form the lowering does not take (lop3.b32 d, a, b, c, immLut)");
  std::array<Operand, 3> x = {read32(in, in.ops[1], Type::B32), read32(in, in.ops[2], Type::B32),
                              read32(in, in.ops[3], Type::B32)};
  write(in.ops[0], Type::B32, {lop3_expand(uint32_t(in.ops[4].imm) & 0xff, x, 0, 3), K(0)});
}

// mul24/mad24: the 48-bit product of the low 24 bits (sign-extended for
// .s32); .lo its low 32 bits, .hi bits 16..47.
void Lowerer::lower_mul24(const ptx::Instr& in) {
  if (in.sat) unsupported(in, "saturates a 24-bit multiply");
  const bool sign = ptx::is_signed(in.type);
  auto narrow = [&](Operand v) {
    return sign ? opr(Op::SAR, opr(Op::SHL, v, K(8)), K(8)) : opr(Op::AND, v, K(0xffffff));
  };
  Operand a = narrow(read32(in, in.ops[1], in.type)), b = narrow(read32(in, in.ops[2], in.type));
  Operand r = opr(Op::MUL, a, b);
  if (in.mul == ptx::MulMode::Hi)
    r = opr(Op::OR, opr(Op::SHR, r, K(16)), opr(Op::SHL, opr(sign ? Op::MULHS : Op::MULHU, a, b), K(16)));
  if (in.op == ptx::Op::Mad24) r = opr(Op::ADD, r, read32(in, in.ops[3], in.type));
  write(in.ops[0], in.type, {r, K(0)});
}

// sad d, a, b, c: c + |a - b|.
void Lowerer::lower_sad(const ptx::Instr& in) {
  const Type t = in.type;
  const bool sign = ptx::is_signed(t);
  V a = read(in, in.ops[1], t), b = read(in, in.ops[2], t), c = read(in, in.ops[3], t);
  if (ptx::type_size(t) == 8) {
    Operand gt = lt64(b, a, sign, false);
    V d1 = sub64(a, b), d2 = sub64(b, a);
    write(in.ops[0], t, add64(c, {opr(Op::SEL, gt, d1.lo, d2.lo), opr(Op::SEL, gt, d1.hi, d2.hi)}));
    return;
  }
  Operand gt = opr(sign ? Op::SLT : Op::SLTU, b.lo, a.lo);
  Operand d = opr(Op::SEL, gt, opr(Op::SUB, a.lo, b.lo), opr(Op::SUB, b.lo, a.lo));
  write(in.ops[0], t, {opr(Op::ADD, c.lo, d), K(0)});
}

// dp4a.atype.btype d, a, b, c: c + the four products of a's and b's bytes.
void Lowerer::lower_dp(const ptx::Instr& in) {
  Operand a = read32(in, in.ops[1], Type::B32), b = read32(in, in.ops[2], Type::B32);
  Operand acc = read32(in, in.ops[3], Type::B32);
  auto byte = [&](Operand v, uint32_t i, bool sign) {
    return sign ? opr(Op::SAR, opr(Op::SHL, v, K(24 - 8 * i)), K(24)) : opr(Op::AND, opr(Op::SHR, v, K(8 * i)), K(0xff));
  };
  for (uint32_t i = 0; i < 4; ++i)
    acc = opr(Op::ADD, acc,
              opr(Op::MUL, byte(a, i, ptx::is_signed(in.type)), byte(b, i, ptx::is_signed(in.type2))));
  write(in.ops[0], Type::B32, {acc, K(0)});
}

// 64-bit bfe, bfi and bfind, and bmsk/szext (32-bit), as the PTX ISA defines
// them: positions and lengths are taken mod 256 and may pass the top bit.
void Lowerer::lower_bitfield64(const ptx::Instr& in) {
  using PO = ptx::Op;
  const Type t = in.type;
  const bool sign = ptx::is_signed(t);
  const V ones{K(~0u), K(~0u)};
  auto not64 = [&](V x) { return V{opr(Op::XOR, x.lo, K(~0u)), opr(Op::XOR, x.hi, K(~0u))}; };
  auto and64 = [&](V x, V y) { return V{opr(Op::AND, x.lo, y.lo), opr(Op::AND, x.hi, y.hi)}; };
  auto or64 = [&](V x, V y) { return V{opr(Op::OR, x.lo, y.lo), opr(Op::OR, x.hi, y.hi)}; };
  switch (in.op) {
    case PO::Bmsk: {
      Operand a = read32(in, in.ops[1], Type::U32), b = read32(in, in.ops[2], Type::U32);
      const bool wrap = in.shf_mode == ptx::ShfMode::Wrap;
      a = wrap ? opr(Op::AND, a, K(31)) : opr(Op::MINU, a, K(32));
      b = wrap ? opr(Op::AND, b, K(31)) : opr(Op::MINU, b, K(32));
      Operand lo = opr(Op::SHL, K(~0u), a), hi = opr(Op::SHL, K(~0u), opr(Op::ADD, a, b));
      write(in.ops[0], Type::B32, {opr(Op::AND, lo, opr(Op::XOR, hi, K(~0u))), K(0)});
      return;
    }
    case PO::Szext: {
      Operand a = read32(in, in.ops[1], Type::B32), b = read32(in, in.ops[2], Type::U32);
      b = in.shf_mode == ptx::ShfMode::Wrap ? opr(Op::AND, b, K(31)) : opr(Op::MINU, b, K(32));
      Operand r;
      if (sign) {
        Operand up = opr(Op::SUB, K(32), b);  // 32 for b = 0: the shift left gives 0
        r = opr(Op::SAR, opr(Op::SHL, a, up), opr(Op::AND, up, K(31)));
      } else {
        r = opr(Op::AND, a, opr(Op::SUB, opr(Op::SHL, K(1), b), K(1)));
      }
      write(in.ops[0], t, {r, K(0)});
      return;
    }
    case PO::Bfind: {
      V a = read(in, in.ops[1], t);
      Operand neg = sign ? opr(Op::SLT, a.hi, K(0)) : K(0);
      V x = sign ? V{opr(Op::SEL, neg, opr(Op::XOR, a.lo, K(~0u)), a.lo), opr(Op::SEL, neg, opr(Op::XOR, a.hi, K(~0u)), a.hi)}
                 : a;
      Operand clz = clz64(x);
      Operand zero = opr(Op::SEQ, opr(Op::OR, x.lo, x.hi), K(0));
      Operand r = in.shiftamt ? opr(Op::SEL, zero, K(~0u), clz) : opr(Op::SUB, K(63), clz);
      write(in.ops[0], Type::U32, {r, K(0)});
      return;
    }
    case PO::Bfe: {
      V a = read(in, in.ops[1], t);
      Operand pos = opr(Op::AND, read32(in, in.ops[2], Type::U32), K(0xff));
      Operand len = opr(Op::AND, read32(in, in.ops[3], Type::U32), K(0xff));
      V r;
      if (sign) {
        Operand top = opr(Op::MINU, opr(Op::ADD, pos, len), K(64));
        Operand up = opr(Op::SUB, K(64), top);
        r = shr64(shl64(a, up), opr(Op::ADD, up, pos), true);
        Operand none = opr(Op::SEQ, len, K(0));
        r = {opr(Op::SEL, none, K(0), r.lo), opr(Op::SEL, none, K(0), r.hi)};
      } else {
        r = and64(shr64(a, pos, false), not64(shl64(ones, len)));
      }
      write(in.ops[0], t, r);
      return;
    }
    case PO::Bfi: {
      V f = read(in, in.ops[1], t), b = read(in, in.ops[2], t);
      Operand pos = opr(Op::AND, read32(in, in.ops[3], Type::U32), K(0xff));
      Operand len = opr(Op::AND, read32(in, in.ops[4], Type::U32), K(0xff));
      V mask = shl64(not64(shl64(ones, len)), pos);
      write(in.ops[0], t, or64(and64(b, not64(mask)), and64(shl64(f, pos), mask)));
      return;
    }
    default: unsupported(in, "is not supported by the machine");
  }
}

// prmt.b32.MODE d, a, b, c: byte i of d is byte idx(c & 3, i) of {b, a}
// (bytes 0-3 from a, 4-7 from b), from the mode's table.
void Lowerer::lower_prmt_mode(const ptx::Instr& in) {
  static const uint8_t f4e[4][4] = {{0, 1, 2, 3}, {1, 2, 3, 4}, {2, 3, 4, 5}, {3, 4, 5, 6}};
  static const uint8_t b4e[4][4] = {{0, 7, 6, 5}, {1, 0, 7, 6}, {2, 1, 0, 7}, {3, 2, 1, 0}};
  static const uint8_t rc8[4][4] = {{0, 0, 0, 0}, {1, 1, 1, 1}, {2, 2, 2, 2}, {3, 3, 3, 3}};
  static const uint8_t ecl[4][4] = {{0, 1, 2, 3}, {1, 1, 2, 3}, {2, 2, 2, 3}, {3, 3, 3, 3}};
  static const uint8_t ecr[4][4] = {{0, 0, 0, 0}, {0, 1, 1, 1}, {0, 1, 2, 2}, {0, 1, 2, 3}};
  static const uint8_t rc16[4][4] = {{0, 1, 0, 1}, {2, 3, 2, 3}, {0, 1, 0, 1}, {2, 3, 2, 3}};
  const uint8_t(*table)[4] = nullptr;
  switch (in.prmt) {
    case ptx::PrmtMode::F4e: table = f4e; break;
    case ptx::PrmtMode::B4e: table = b4e; break;
    case ptx::PrmtMode::Rc8: table = rc8; break;
    case ptx::PrmtMode::Ecl: table = ecl; break;
    case ptx::PrmtMode::Ecr: table = ecr; break;
    case ptx::PrmtMode::Rc16: table = rc16; break;
    default: unsupported(in, "is a prmt mode the lowering does not take");
  }
  Operand a = read32(in, in.ops[1], Type::B32), b = read32(in, in.ops[2], Type::B32);
  Operand c = read32(in, in.ops[3], Type::B32);
  Operand sel = opr(Op::AND, c, K(3));
  Operand r = K(0);
  for (uint32_t i = 0; i < 4; ++i) {
    Operand idx;
    if (c.imm) {
      idx = K(table[c.v & 3][i]);
    } else {
      uint32_t packed = 0;  // the column i of the table, a nibble per selector value
      for (uint32_t s = 0; s < 4; ++s) packed |= uint32_t(table[s][i]) << (4 * s);
      idx = opr(Op::AND, opr(Op::SHR, K(packed), opr(Op::SHL, sel, K(2))), K(7));
    }
    Operand src = opr(Op::SEL, opr(Op::AND, idx, K(4)), b, a);
    Operand byte = opr(Op::AND, opr(Op::SHR, src, opr(Op::SHL, opr(Op::AND, idx, K(3)), K(3))), K(0xff));
    r = opr(Op::OR, r, opr(Op::SHL, byte, K(8 * i)));
  }
  write(in.ops[0], Type::B32, {r, K(0)});
}

// redux.sync.OP.type d, a, membermask: every member stores a in its shuffle
// word; after the warp-group barrier each reads the 32 words and combines
// those of the member lanes present (docs/isa.md, section 7).
void Lowerer::lower_redux(const ptx::Instr& in) {
  const Type t = in.type;
  const bool sign = ptx::is_signed(t);
  if (ptx::type_size(t) != 4) unsupported(in, "is a redux of a type the lowering does not take (32-bit only)");
  Operand a = read32(in, in.ops[1], t);
  Operand member = in.ops.size() > 2 ? read32(in, in.ops[2], Type::B32) : K(~0u);
  Op combine;
  uint32_t identity = 0;
  switch (in.atom) {
    case ptx::AtomOp::Add: combine = Op::ADD; break;
    case ptx::AtomOp::And: combine = Op::AND, identity = ~0u; break;
    case ptx::AtomOp::Or: combine = Op::OR; break;
    case ptx::AtomOp::Xor: combine = Op::XOR; break;
    case ptx::AtomOp::Min: combine = sign ? Op::MIN : Op::MINU, identity = sign ? 0x7fffffffu : ~0u; break;
    case ptx::AtomOp::Max: combine = sign ? Op::MAX : Op::MAXU, identity = sign ? 0x80000000u : 0u; break;
    default: unsupported(in, "is a redux operation the machine does not have");
  }
  Operand present = opr(Op::AND, warp_ballot(K(1)), member);
  Operand area = warp_scratch(kScratchShfl);
  st(Space::Shared, opr(Op::ADD, area, opr(Op::SHL, opr(Op::AND, tid_linear(), K(31)), K(2))), 0, 4, a);
  barrier(VI::Wbar);
  Operand acc = K(identity);
  for (uint32_t j = 0; j < 32; ++j) {
    Operand w = R(ld(Space::Shared, area, 4 * j, 4, false));
    acc = opr(Op::SEL, opr(Op::AND, present, K(1u << j)), opr(combine, acc, w), acc);
  }
  barrier(VI::Wbar);
  clear_shfl_slot(area);
  write(in.ops[0], t, {acc, K(0)});
}

// match.{any,all}.sync.{b32,b64} d[|p], a, membermask: the member lanes
// present whose a equals this thread's; .all gives them all when every one
// is equal (p), else 0.  A 64-bit value is compared a word at a time.
void Lowerer::lower_match_any_all(const ptx::Instr& in) {
  const Type t = in.type;
  const uint32_t size = ptx::type_size(t);
  if (size != 4 && size != 8) unsupported(in, "is a match of a type the lowering does not take");
  V a = read(in, in.ops[1], t);
  Operand member = in.ops.size() > 2 ? read32(in, in.ops[2], Type::B32) : K(~0u);
  Operand present = opr(Op::AND, warp_ballot(K(1)), member);
  Operand area = warp_scratch(kScratchShfl);
  Operand slot = opr(Op::ADD, area, opr(Op::SHL, opr(Op::AND, tid_linear(), K(31)), K(2)));
  Operand eq = present;
  for (Operand word : size == 8 ? std::vector<Operand>{a.lo, a.hi} : std::vector<Operand>{a.lo}) {
    st(Space::Shared, slot, 0, 4, word);
    barrier(VI::Wbar);
    Operand acc = K(0);
    for (uint32_t j = 0; j < 32; ++j) {
      Operand w = R(ld(Space::Shared, area, 4 * j, 4, false));
      acc = opr(Op::OR, acc, opr(Op::SHL, opr(Op::SEQ, w, word), K(j)));
    }
    barrier(VI::Wbar);
    eq = opr(Op::AND, eq, acc);
  }
  clear_shfl_slot(area);
  Operand all = opr(Op::SEQ, eq, present);
  Operand d = in.match == ptx::MatchMode::All ? opr(Op::SEL, all, present, K(0)) : eq;
  const ptx::Operand& dst = in.ops[0];
  if (dst.kind == ptx::Operand::Kind::PredPair) {
    ptx::Operand dv = dst, dp = dst;
    dv.kind = dp.kind = ptx::Operand::Kind::Reg;
    dp.reg = dst.reg2;
    write(dv, Type::B32, {d, K(0)});
    write(dp, Type::Pred, {all, K(0)});
  } else {
    write(dst, Type::B32, {d, K(0)});
  }
}

// Runs `body` for the active lanes one at a time, in lane order: on the
// machine a warp runs until it exits or waits, so with no barrier inside,
// each lane's `body` is atomic with respect to every other thread.
void Lowerer::serialize_lanes(const std::function<void()>& body) {
  if (p_.lanes == 1) return body();
  uint32_t i = op(Op::MOV, K(0));
  uint32_t loop = new_label(), mine = new_label(), next = new_label(), done = new_label();
  place(loop);
  br(opr(Op::SEQ, opr(Op::LANE), R(i)), mine, next);
  place(mine);
  body();
  place(next);
  opd(i, Op::ADD, R(i), K(1));
  br(opr(Op::SLTU, R(i), K(p_.lanes)), loop, done);
  place(done);
}

// The device heap (docs/isa.md, 8.2): a header of kHeapHeader bytes at
// heap_base (word 0: bytes handed out so far; word 1 + k: the first free
// block of class k), then blocks of 16 << k bytes, each a 16-byte header
// (word 0: k; word 1: the next free block while free) and the user's bytes.
// Memory is zero before the first launch, which is an empty heap.
constexpr uint32_t kHeapHeader = 128, kHeapClasses = 27;

// malloc(size): a block of the smallest class k that holds size + 16 bytes,
// from its free list, else from the untouched end, else split from the first
// free block of a larger class; NULL when none fits.  Blocks are not merged
// again: freed small blocks serve only requests of their class.
void Lowerer::lower_malloc(const ptx::Instr& in) {
  const ptx::Operand& rets = in.ops[0];
  const ptx::Operand& args = in.ops[2];
  if (args.elems.size() != 1 || rets.elems.size() != 1) unsupported(in, "calls malloc with an unexpected argument list");
  auto slot = [&](const ptx::Operand& o) {
    if (o.kind != ptx::Operand::Kind::Sym) unsupported(in, "passes an argument that is not a .param variable");
    ptx::Space sp;
    return symbol_address(in, o.sym, &sp);
  };
  const uint32_t arg = slot(args.elems[0]), ret = slot(rets.elems[0]);
  const uint32_t base = uint32_t(shape_.heap_base), bytes = shape_.heap_bytes;
  uint32_t result = op(Op::MOV, K(0));
  if (bytes > kHeapHeader) {
    Operand lo = R(ld(Space::Local, K(arg), 0, 4, false)), hi = R(ld(Space::Local, K(arg), 4, 4, false));
    // Requests of 2^30 bytes or more never fit (nor does any with a high word).
    Operand ok = opr(Op::AND, opr(Op::SEQ, hi, K(0)), opr(Op::SLTU, lo, K(1u << 30)));
    Operand need = opr(Op::ADD, lo, K(16));
    Operand bits = opr(Op::SUB, K(32), opr(Op::CLZ, opr(Op::SUB, need, K(1))));  // need <= 2^bits
    Operand k = opr(Op::MAX, opr(Op::SUB, bits, K(4)), K(0));
    Operand size = opr(Op::SHL, K(16), k);
    Operand head_at = opr(Op::ADD, opr(Op::SHL, k, K(2)), K(base + 4));
    uint32_t go = new_label(), skip = new_label();
    br(ok, go, skip);
    place(go);
    serialize_lanes([&] {
      uint32_t reuse = new_label(), fresh = new_label(), search = new_label(), done = new_label();
      Operand head = R(ld(Space::Global, head_at, 0, 4, false));
      br(head, reuse, fresh);
      place(reuse);
      st(Space::Global, head_at, 0, 4, R(ld(Space::Global, head, 4, 4, false)));
      opd(result, Op::ADD, head, K(16));
      jmp(done);
      place(fresh);
      Operand top = R(ld(Space::Global, K(base), 0, 4, false));
      Operand end = opr(Op::ADD, top, size);
      uint32_t fits = new_label();
      br(opr(Op::SLEU, end, K(bytes - kHeapHeader)), fits, search);
      place(fits);
      Operand block = opr(Op::ADD, top, K(base + kHeapHeader));
      st(Space::Global, K(base), 0, 4, end);
      st(Space::Global, block, 0, 4, k);
      opd(result, Op::ADD, block, K(16));
      jmp(done);
      // No room left: the first free block of a larger class, split in
      // halves down to class k (each upper half to its class's list).
      place(search);
      uint32_t j = op(Op::ADD, k, K(1));
      uint32_t sloop = new_label(), sbody = new_label(), take = new_label(), snext = new_label();
      place(sloop);
      br(opr(Op::SLTU, R(j), K(kHeapClasses)), sbody, done);
      place(sbody);
      Operand hj_at = opr(Op::ADD, opr(Op::SHL, R(j), K(2)), K(base + 4));
      Operand hj = R(ld(Space::Global, hj_at, 0, 4, false));
      br(hj, take, snext);
      place(snext);
      opd(j, Op::ADD, R(j), K(1));
      jmp(sloop);
      place(take);
      st(Space::Global, hj_at, 0, 4, R(ld(Space::Global, hj, 4, 4, false)));
      uint32_t split = new_label(), split_body = new_label(), split_done = new_label();
      place(split);
      br(opr(Op::SLTU, k, R(j)), split_body, split_done);
      place(split_body);
      opd(j, Op::ADD, R(j), K(uint32_t(-1)));
      Operand half = opr(Op::ADD, hj, opr(Op::SHL, K(16), R(j)));
      Operand hh_at = opr(Op::ADD, opr(Op::SHL, R(j), K(2)), K(base + 4));
      Operand old = R(ld(Space::Global, hh_at, 0, 4, false));
      st(Space::Global, half, 0, 4, R(j));
      st(Space::Global, half, 4, 4, old);
      st(Space::Global, hh_at, 0, 4, half);
      jmp(split);
      place(split_done);
      st(Space::Global, hj, 0, 4, k);
      opd(result, Op::ADD, hj, K(16));
      place(done);
    });
    place(skip);
  }
  st(Space::Local, K(ret), 0, 4, R(result));
  st(Space::Local, K(ret), 4, 4, K(0));
}

// free(p): the block goes to the front of its class's free list; free(NULL)
// does nothing.
void Lowerer::lower_free(const ptx::Instr& in) {
  const ptx::Operand& args = in.ops[2];
  if (args.elems.size() != 1) unsupported(in, "calls free with an unexpected argument list");
  if (args.elems[0].kind != ptx::Operand::Kind::Sym) unsupported(in, "passes an argument that is not a .param variable");
  ptx::Space sp;
  const uint32_t arg = symbol_address(in, args.elems[0].sym, &sp);
  if (shape_.heap_bytes <= kHeapHeader) return;
  const uint32_t base = uint32_t(shape_.heap_base);
  Operand p = R(ld(Space::Local, K(arg), 0, 4, false));
  uint32_t go = new_label(), skip = new_label();
  br(p, go, skip);
  place(go);
  Operand block = opr(Op::SUB, p, K(16));
  Operand k = R(ld(Space::Global, block, 0, 4, false));
  Operand head_at = opr(Op::ADD, opr(Op::SHL, opr(Op::MINU, k, K(kHeapClasses - 1)), K(2)), K(base + 4));
  serialize_lanes([&] {
    Operand head = R(ld(Space::Global, head_at, 0, 4, false));
    st(Space::Global, block, 4, 4, head);
    st(Space::Global, head_at, 0, 4, block);
  });
  place(skip);
}

// call (rets), %target, (args), prototype: a test of the target against the
// address of every function the module takes the address of with the call's
// numbers of parameters and returns, each followed by that function inlined
// (those being inlined already excluded); no match traps.
// Counted barriers (docs/isa.md, 8.2).  A kernel with bar.arrive, or with a
// bar.sync whose thread count may be below the CTA's, runs every barrier
// through two shared words per barrier id (16 ids): arrivals and a
// generation.  reserve_barrier_words() decides, at kernel entry, and puts
// the words before the warp scratch area (shared memory starts zeroed).
void Lowerer::reserve_barrier_words() {
  for (const ptx::Function& f : m_.functions)
    for (const ptx::Instr& x : f.body) {
      if (x.op != ptx::Op::Bar || x.bar == ptx::BarKind::Red) continue;
      if (x.bar == ptx::BarKind::Arrive) counted_barriers_ = true;
      if (x.ops.size() >= 2 && !(x.ops[1].kind == ptx::Operand::Kind::Imm && uint64_t(x.ops[1].imm) >= threads_))
        counted_barriers_ = true;
    }
  if (!counted_barriers_) return;
  barrier_base_ = scratch_base_;
  scratch_base_ += 16 * 8;
}

// bar.sync / bar.arrive id, count (count: the CTA's threads when absent):
// read the id's generation, add one arrival; the arrival that makes the
// count resets it and starts the next generation; bar.sync's other threads
// wait at the CTA barrier until the generation changes (each time the CTA
// barrier opens, they look again).
void Lowerer::lower_named_barrier(const ptx::Instr& in) {
  if (in.bar == ptx::BarKind::Red) unsupported(in, "is bar.red in a kernel with counted barriers");
  Operand id = opr(Op::AND, read32(in, in.ops[0], Type::U32), K(15));
  Operand count = in.ops.size() >= 2 ? read32(in, in.ops[1], Type::U32) : K(threads_);
  Operand cnt_at = opr(Op::ADD, opr(Op::SHL, id, K(3)), K(barrier_base_));
  Operand gen = R(ld(Space::Shared, cnt_at, 4, 4, false));
  Operand old = atom(Space::Shared, AtomOp::ADD, cnt_at, K(1));
  uint32_t complete = new_label(), wait = new_label(), out = new_label();
  br(opr(Op::SLEU, count, opr(Op::ADD, old, K(1))), complete, in.bar == ptx::BarKind::Sync ? wait : out);
  place(complete);
  st(Space::Shared, cnt_at, 0, 4, K(0));
  st(Space::Shared, cnt_at, 4, 4, opr(Op::ADD, gen, K(1)));
  jmp(out);
  if (in.bar == ptx::BarKind::Sync) {
    place(wait);
    uint32_t again = new_label();
    place(again);
    barrier(VI::Bar);
    Operand now = R(ld(Space::Shared, cnt_at, 4, 4, false));
    br(opr(Op::SEQ, now, gen), again, out);
  }
  place(out);
}

void Lowerer::lower_indirect_call(const ptx::Instr& in) {
  const ptx::Operand& callee = in.ops[1];
  Operand target = R(frames_.back()->regs[callee.reg][0]);
  if (address_taken_.empty()) {
    address_taken_.assign(m_.functions.size(), false);
    auto mark = [&](const ptx::Operand& o, auto&& self) -> void {
      if ((o.kind == ptx::Operand::Kind::Sym || o.kind == ptx::Operand::Kind::Addr) && o.has_sym &&
          o.sym.kind == ptx::SymKind::Func)
        address_taken_[o.sym.index] = true;
      for (const auto& e : o.elems) self(e, self);
    };
    for (const ptx::Function& f : m_.functions)
      for (const ptx::Instr& x : f.body)
        for (size_t i = 0; i < x.ops.size(); ++i)
          if (!(x.op == ptx::Op::Call && i == 1)) mark(x.ops[i], mark);
    for (const ptx::Var& v : m_.vars)
      for (const auto& r : v.relocs)
        if (auto fi = m_.function_index(r.symbol)) address_taken_[*fi] = true;
  }
  uint32_t done = new_label();
  for (uint32_t fi = 0; fi < m_.functions.size(); ++fi) {
    const ptx::Function& f = m_.functions[fi];
    if (!address_taken_[fi] || !f.has_body || f.is_entry) continue;
    if (f.params.size() != in.ops[2].elems.size() || f.rets.size() != in.ops[0].elems.size()) continue;
    bool active = false;
    for (auto* fr : frames_) active |= fr->findex == fi;
    if (active) continue;
    uint32_t yes = new_label(), no = new_label();
    br(opr(Op::SEQ, target, K(ptx::function_address(fi))), yes, no);
    place(yes);
    ptx::Instr direct = in;
    direct.ops[1].kind = ptx::Operand::Kind::Sym;
    direct.ops[1].has_sym = true;
    direct.ops[1].sym = {ptx::SymKind::Func, fi};
    lower_call(direct);
    jmp(done);
    place(no);
  }
  code_.push_back({VI::Trap, {}, 0, 0, 0, uint32_t(launch::kLaunchFailure)});
  place(done);
}

// ---- the model's machine ------------------------------------------------------------
//
// The model's circuit (docs/tokens.md) has 32-bit loads and stores and every
// ALU operation but mulhu/mulhs; it runs one instruction of one thread per
// step, and a thread runs until it exits or waits.  So a read-modify-write
// spread over consecutive instructions of one thread is atomic, and the
// operations it lacks become sequences of operations it has.  Each rewrite
// computes into fresh virtual registers and writes the original destination
// last, so sources that name the destination read its old value; copy
// propagation then removes the final `mov`.

void Lowerer::expand_for_model() {
  std::vector<VI> code = std::move(code_);
  code_.clear();
  for (const VI& v : code) {
    const Instr& in = v.in;
    if (v.kind != VI::Ins)
      code_.push_back(v);
    else if (in.op == Op::ATOM)
      expand_atomic(in);
    else if (in.op == Op::LD && in.bytes < 4)
      expand_narrow_load(in);
    else if (in.op == Op::ST && in.bytes < 4)
      expand_narrow_store(in);
    else if (in.op == Op::MULHU || in.op == Op::MULHS)
      expand_mulhi(in);
    else
      code_.push_back(v);
  }
}

// atom dst, [a], b, c: dst = old = ld [a]; st [a], F(old, b, c).
void Lowerer::expand_atomic(const Instr& in) {
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
  }
  st(in.space, in.a, 0, 4, nw);
  opd(in.dst, Op::MOV, old);
}

// The 1- or 2-byte access at a + b lies in the aligned word at addr - within:
// `addr` is set to a + b, and the result is `within`, the access's byte offset
// in that word.  A halfword at an odd address keeps its odd word address, so
// the word access faults as misaligned, as the halfword access would.
Operand Lowerer::word_offset(const Instr& in, Operand& addr) {
  addr = opr(Op::ADD, in.a, in.b);
  return opr(Op::AND, addr, K(4 - in.bytes));
}

// ld.{u,s}{8,16} dst, [a + b]: the word, shifted down (zero-extended) or
// shifted to the top and back (sign-extended).
void Lowerer::expand_narrow_load(const Instr& in) {
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
void Lowerer::expand_narrow_store(const Instr& in) {
  Operand addr;
  Operand within = word_offset(in, addr);
  Operand at = opr(Op::SUB, addr, within);
  Operand word = R(ld(in.space, at, 0, 4, false));
  Operand shift = opr(Op::SHL, within, K(3));
  Operand mask = opr(Op::SHL, K((1u << (8 * in.bytes)) - 1), shift);
  Operand diff = opr(Op::AND, opr(Op::XOR, word, opr(Op::SHL, in.c, shift)), mask);
  st(in.space, at, 0, 4, opr(Op::XOR, word, diff));
}

// mulhu from the four 16x16-bit partial products, each exact in 32 bits
// (a = ah:al, b = bh:bl), summed column by column with the carries kept:
//   t = ah*bl + (al*bl >> 16)            (< 2^32)
//   m = al*bh + (t & 0xffff)             (< 2^32)
//   mulhu = ah*bh + (t >> 16) + (m >> 16)
// mulhs(a, b) = mulhu(a, b) - (a < 0 ? b : 0) - (b < 0 ? a : 0).
void Lowerer::expand_mulhi(const Instr& in) {
  Operand a = in.a, b = in.b;
  Operand al = opr(Op::AND, a, K(0xffff)), ah = opr(Op::SHR, a, K(16));
  Operand bl = opr(Op::AND, b, K(0xffff)), bh = opr(Op::SHR, b, K(16));
  Operand t = opr(Op::ADD, opr(Op::MUL, ah, bl), opr(Op::SHR, opr(Op::MUL, al, bl), K(16)));
  Operand m = opr(Op::ADD, opr(Op::MUL, al, bh), opr(Op::AND, t, K(0xffff)));
  Operand hi = opr(Op::ADD, opr(Op::ADD, opr(Op::MUL, ah, bh), opr(Op::SHR, t, K(16))), opr(Op::SHR, m, K(16)));
  if (in.op == Op::MULHS) {
    hi = opr(Op::SUB, hi, opr(Op::AND, opr(Op::SAR, a, K(31)), b));
    hi = opr(Op::SUB, hi, opr(Op::AND, opr(Op::SAR, b, K(31)), a));
  }
  opd(in.dst, Op::MOV, hi);
}

// ---- pass 2: register allocation -------------------------------------------------

std::vector<VI> Lowerer::allocate() {
  const uint32_t allocatable = p_.regs - kSpillScratch;
  // Basic blocks of the virtual code.
  const Cfg cfg = build_cfg(code_, nlabels_);
  const std::vector<uint32_t>& starts = cfg.starts;
  const std::vector<std::vector<uint32_t>>& succ = cfg.succ;
  const uint32_t nb = cfg.blocks();
  auto end_of = [&](uint32_t b) { return cfg.end(b); };
  auto uses = [&](const VI& v, std::vector<uint32_t>& out) {
    out.clear();
    if (v.kind == VI::Ins)
      for (auto* o : sources(v.in)) out.push_back(o->v);
    if (v.kind == VI::Br) out.push_back(v.cond);
  };
  auto def = [&](const VI& v) -> uint32_t { return v.kind == VI::Ins && v.in.writes_reg() ? v.in.dst : kNoV; };
  // Liveness (live-in sets per basic block), iterated to a fixed point.
  std::vector<std::set<uint32_t>> live_in(nb);
  std::vector<uint32_t> tmp;
  for (bool changed = true; changed;) {
    changed = false;
    for (uint32_t b = nb; b-- > 0;) {
      std::set<uint32_t> live;
      for (uint32_t s : succ[b]) live.insert(live_in[s].begin(), live_in[s].end());
      for (uint32_t i = end_of(b); i-- > starts[b];) {
        uint32_t d = def(code_[i]);
        if (d != kNoV) live.erase(d);
        uses(code_[i], tmp);
        live.insert(tmp.begin(), tmp.end());
      }
      if (live != live_in[b]) {
        live_in[b] = std::move(live);
        changed = true;
      }
    }
  }
  // Intervals [first, last] of positions where each vreg is live or touched.
  std::vector<uint32_t> first(nvregs_, UINT32_MAX), last(nvregs_, 0);
  auto touch = [&](uint32_t v, uint32_t i) {
    first[v] = std::min(first[v], i);
    last[v] = std::max(last[v], i);
  };
  for (uint32_t b = 0; b < nb; ++b) {
    std::set<uint32_t> live;
    for (uint32_t s : succ[b]) live.insert(live_in[s].begin(), live_in[s].end());
    for (uint32_t i = end_of(b); i-- > starts[b];) {
      for (uint32_t v : live) touch(v, i);
      uint32_t d = def(code_[i]);
      if (d != kNoV) {
        touch(d, i);
        live.erase(d);
      }
      uses(code_[i], tmp);
      for (uint32_t v : tmp) {
        touch(v, i);
        live.insert(v);
      }
    }
    for (uint32_t v : live) touch(v, starts[b]);
  }
  // Linear scan.
  std::vector<uint32_t> order;
  for (uint32_t v = 0; v < nvregs_; ++v)
    if (first[v] != UINT32_MAX) order.push_back(v);
  std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return first[a] < first[b]; });
  std::vector<uint32_t> where(nvregs_, kNoV), spill(nvregs_, kNoV);
  std::vector<uint32_t> active;  // vregs holding a register
  std::vector<uint32_t> free_regs;
  for (uint32_t r = allocatable; r-- > 0;) free_regs.push_back(r);
  for (uint32_t v : order) {
    for (size_t k = 0; k < active.size();) {
      if (last[active[k]] < first[v]) {
        free_regs.push_back(where[active[k]]);
        active[k] = active.back();
        active.pop_back();
      } else {
        ++k;
      }
    }
    // A copy `mov v, s` that ends s's interval and starts v's: v takes s's
    // register, and the copy disappears (coalescing).
    if (const VI& at = code_[first[v]]; at.kind == VI::Ins && at.in.op == Op::MOV && !at.in.a.imm &&
                                        at.in.dst == v && last[at.in.a.v] == first[v]) {
      const uint32_t s = at.in.a.v;
      auto it = std::find(active.begin(), active.end(), s);
      if (it != active.end()) {
        where[v] = where[s];
        *it = v;
        continue;
      }
    }
    if (!free_regs.empty()) {
      where[v] = free_regs.back();
      free_regs.pop_back();
      active.push_back(v);
      continue;
    }
    auto far =
        std::max_element(active.begin(), active.end(), [&](uint32_t a, uint32_t b) { return last[a] < last[b]; });
    if (last[*far] > last[v]) {
      where[v] = where[*far];
      spill[*far] = local_alloc(4, 4);
      spilled_ = true;
      where[*far] = kNoV;
      *far = v;
    } else {
      spill[v] = local_alloc(4, 4);
      spilled_ = true;
    }
  }
  // Rewrite with machine registers; spilled values go through the scratch registers.
  std::vector<VI> out;
  out.reserve(code_.size());
  const uint32_t scratch0 = allocatable;
  for (const VI& v0 : code_) {
    VI v = v0;
    std::vector<std::pair<uint32_t, uint32_t>> reloaded;  // vreg -> scratch
    auto map_use = [&](uint32_t vr) -> uint32_t {
      if (spill[vr] == kNoV) return where[vr];
      for (auto& [x, s] : reloaded)
        if (x == vr) return s;
      uint32_t s = scratch0 + uint32_t(reloaded.size());
      Instr l;
      l.op = Op::LD;
      l.dst = s;
      l.a = K(spill[vr]);
      l.b = K(0);
      l.space = Space::Local;
      out.push_back({VI::Ins, l});
      reloaded.push_back({vr, s});
      return s;
    };
    if (v.kind == VI::Ins) {
      Operand* ops[3] = {&v.in.a, &v.in.b, &v.in.c};
      int arity = op_info(v.in.op).arity;
      for (int k = 0; k < arity; ++k)
        if (!ops[k]->imm) ops[k]->v = map_use(ops[k]->v);
      if (v.in.writes_reg()) {
        uint32_t d = v.in.dst;
        if (spill[d] != kNoV) {
          v.in.dst = scratch0;
          out.push_back(v);
          Instr s;
          s.op = Op::ST;
          s.a = K(spill[d]);
          s.b = K(0);
          s.c = R(scratch0);
          s.space = Space::Local;
          out.push_back({VI::Ins, s});
          continue;
        }
        v.in.dst = where[d] == kNoV ? scratch0 : where[d];  // a dead definition
        if (v.in.op == Op::MOV && !v.in.a.imm && v.in.a.v == v.in.dst) continue;  // coalesced
      }
    } else if (v.kind == VI::Br) {
      v.cond = map_use(v.cond);
    }
    out.push_back(v);
  }
  return out;
}

// ---- pass 3: blocks ---------------------------------------------------------------

Program Lowerer::form_blocks(const std::vector<VI>& code) {
  Program prog;
  // Terminator targets are label ids until every block exists; a fall-through
  // into the next block is recorded as that block's index directly.
  std::vector<uint32_t> label_block(nlabels_, UINT32_MAX);
  std::vector<bool> by_label;  // per block: t/f are label ids
  bool open = false, stored = false;
  auto start = [&]() {
    prog.blocks.emplace_back();
    by_label.push_back(false);
    open = true;
    stored = false;
  };
  auto fall_through = [&]() {
    prog.blocks.back().term = {Term::JMP, 0, uint32_t(prog.blocks.size()), 0, 0};
    start();
  };
  start();
  for (const VI& v : code) {
    if (v.kind == VI::Label) {
      if (!open)
        start();
      else if (!prog.blocks.back().instrs.empty())
        fall_through();
      label_block[v.l1] = uint32_t(prog.blocks.size() - 1);
      continue;
    }
    if (!open) start();  // code after a transfer that no label reaches
    Block& blk = prog.blocks.back();
    if (v.kind == VI::Ins) {
      if (blk.instrs.size() >= p_.block_instrs || (stored && is_mem_read(v.in))) fall_through();
      prog.blocks.back().instrs.push_back(v.in);
      stored |= is_mem_write(v.in);
      continue;
    }
    Terminator t;
    switch (v.kind) {
      case VI::Jmp: t = {Term::JMP, 0, v.l1, 0, 0}; break;
      case VI::Br: t = {Term::BR, v.cond, v.l1, v.l2, 0}; break;
      case VI::Exit: t = {Term::EXIT, 0, 0, 0, 0}; break;
      case VI::Bar: t = {Term::BAR, 0, v.l1, 0, 0}; break;
      case VI::Wbar: t = {Term::WBAR, 0, v.l1, 0, 0}; break;
      case VI::Trap: t = {Term::TRAP, 0, 0, 0, v.code}; break;
      default: break;
    }
    // On the model's machine a store's block does not end in `br`
    // (docs/tokens.md, section 1): the branch gets a block of its own.
    if (opts_.for_model && t.kind == Term::BR && !blk.instrs.empty() && !blk.instrs.back().writes_reg())
      fall_through();
    prog.blocks.back().term = t;
    by_label.back() = true;
    open = false;
  }
  if (open) prog.blocks.back().term = {Term::EXIT, 0, 0, 0, 0};
  for (size_t b = 0; b < prog.blocks.size(); ++b) {
    if (!by_label[b]) continue;
    Terminator& t = prog.blocks[b].term;
    if (t.kind == Term::JMP || t.kind == Term::BR || t.kind == Term::BAR || t.kind == Term::WBAR)
      t.t = label_block[t.t];
    if (t.kind == Term::BR) t.f = label_block[t.f];
  }
  thread_jumps(prog);
  drop_unreachable(prog);
  return prog;
}

// Jump threading over blocks with no instruction: a `jmp` to one takes its
// terminator (`exit`, `trap`, or a `jmp` onward), and a branch target that
// is one ending in `jmp` becomes that jmp's target.  A store followed by the
// kernel's shared exit thus exits in its own block, one step fewer.
void Lowerer::thread_jumps(Program& prog) {
  auto bare = [&](uint32_t b, bool exits_too) {
    const Block& blk = prog.blocks[b];
    const Term k = blk.term.kind;
    return blk.instrs.empty() && (k == Term::JMP || (exits_too && (k == Term::EXIT || k == Term::TRAP)));
  };
  const size_t n = prog.blocks.size();
  for (size_t b = 0; b < n; ++b) {
    Terminator& t = prog.blocks[b].term;
    // At most n hops: a cycle of empty blocks is left as it is.
    for (size_t hop = 0; hop < n && t.kind == Term::JMP && t.t != b && bare(t.t, true); ++hop) t = prog.blocks[t.t].term;
    if (t.kind != Term::BR) continue;
    for (uint32_t* to : {&t.t, &t.f})
      for (size_t hop = 0; hop < n && *to != b && bare(*to, false) && prog.blocks[*to].term.t != *to; ++hop)
        *to = prog.blocks[*to].term.t;
  }
}

// Removes blocks no path from B0 reaches (code after a return, say) and
// renumbers the rest, keeping their order.
void Lowerer::drop_unreachable(Program& prog) {
  const size_t n = prog.blocks.size();
  std::vector<bool> seen(n, false);
  std::vector<uint32_t> work = {0};
  seen[0] = true;
  while (!work.empty()) {
    const Terminator& t = prog.blocks[work.back()].term;
    work.pop_back();
    auto visit = [&](uint32_t b) {
      if (!seen[b]) {
        seen[b] = true;
        work.push_back(b);
      }
    };
    if (t.kind == Term::JMP || t.kind == Term::BR || t.kind == Term::BAR || t.kind == Term::WBAR) visit(t.t);
    if (t.kind == Term::BR) visit(t.f);
  }
  std::vector<uint32_t> index(n);
  std::vector<Block> kept;
  for (size_t b = 0; b < n; ++b)
    if (seen[b]) {
      index[b] = uint32_t(kept.size());
      kept.push_back(std::move(prog.blocks[b]));
    }
  for (Block& b : kept) {
    b.term.t = index[b.term.t];
    if (b.term.kind == Term::BR) b.term.f = index[b.term.f];
  }
  prog.blocks = std::move(kept);
}

Program Lowerer::run(const std::string& kernel) {
  auto idx = m_.function_index(kernel);
  if (!idx || !m_.functions[*idx].is_entry || !m_.functions[*idx].has_body)
    throw LowerError(launch::kInvalidValue, "no kernel named `" + kernel + "` in the module");
  kernel_ = *idx;
  const launch::Dim3& b = shape_.block;
  const launch::Dim3& g = shape_.grid;
  uint64_t threads = b.count(), ctas = g.count();
  if (threads == 0 || threads > p_.max_threads)
    throw LowerError(launch::kInvalidValue, "launch of " + kernel + " with " + std::to_string(threads) +
                                           " threads per block: the machine runs at most " +
                                           std::to_string(p_.max_threads));
  if (ctas == 0 || ctas > p_.max_ctas)
    throw LowerError(launch::kInvalidValue, "launch of " + kernel + " with " + std::to_string(ctas) +
                                           " blocks: the machine runs at most " + std::to_string(p_.max_ctas) +
                                           " blocks per grid");
  threads_ = uint32_t(threads);
  shared_ = ptx::shared_layout(m_, kernel_);
  // Shared memory: the program's own, then dynamic, then the scratch area.
  uint32_t own = std::max<uint32_t>(shared_.static_size, shared_.dynamic_offset + shape_.dynamic_smem);
  scratch_base_ = (own + 3) / 4 * 4;
  reserve_barrier_words();
  Frame top;
  top.f = &m_.functions[kernel_];
  top.findex = kernel_;
  top.kernel = true;
  tid_ = op(Op::ADD, opr(Op::MUL, opr(Op::WARP), K(p_.lanes)), opr(Op::LANE));
  recip_d_ = op(Op::MOV, K(0));  // dead unless a 64-bit division reads them
  recip_v_ = op(Op::MOV, K(0));
  lower_function(top);
  if (opts_.for_model) expand_for_model();

  for (int round = 0; round < 3; ++round) {
    fold_constants();
    if (round < 2) fold_known_bits();
    simplify_local();
    propagate_copies();
  }
  if (opts_.hoist_invariants && opts_.max_hoisted > 0 && (hoisted_ = hoist_invariants()) > 0) {
    simplify_local();  // the values hoisted beside each other, numbered
    propagate_copies();
  }
  remove_unreachable();
  remove_dead_code();
  std::vector<VI> code = allocate();
  if (spilled_ && hoisted_ > 0) throw Relower{.max_hoisted = hoisted_ / 2};
  local_top_ = (local_top_ + 3) / 4 * 4;  // whole words: a byte access may be widened to its word
  uint32_t cuda_warps = (threads_ + 31) / 32;
  uint32_t total = scratch_base_ + (scratch_used_ ? (cuda_warps * kScratchWords + 1) * 4 : 0);
  if (total > p_.shared_bytes)
    throw LowerError(launch::kInvalidValue, "kernel " + kernel + " needs " + std::to_string(total) +
                                           " bytes of shared memory per block; the machine has " +
                                           std::to_string(p_.shared_bytes));
  if (local_top_ > p_.local_bytes_for(threads_))
    throw LowerError(launch::kInvalidValue,
                     "kernel " + kernel + " needs " + std::to_string(local_top_) +
                         " bytes of local memory per thread (variables and spilled registers); the machine has " +
                         std::to_string(p_.local_bytes_for(threads_)) +
                         (p_.local_store_bytes ? " at " + std::to_string(threads_) + " threads per block" : ""));
  Program prog = form_blocks(code);
  prog.kernel = kernel;
  prog.shared_bytes = total;
  prog.local_bytes = local_top_;
  prog.threads = threads_;
  prog.ctas = uint32_t(ctas);
  if (prog.blocks.size() > p_.rom_blocks && narrow_division_) throw Relower{.compact_division = true};
  if (prog.blocks.size() > p_.rom_blocks)
    throw LowerError(launch::kNotSupported, "kernel " + kernel + " lowers to " + std::to_string(prog.blocks.size()) +
                                           " blocks; the machine's ROM holds " + std::to_string(p_.rom_blocks));
  validate(prog, p_);
  return prog;
}

}  // namespace

Program lower(const ptx::Module& m, const std::string& kernel, const LaunchShape& shape, const Params& p,
              const LowerOptions& opts) {
  // Widened accesses and expanded atomics are atomic only when nothing runs
  // between a thread's consecutive instructions: one lane per warp.
  if (opts.for_model && p.lanes != 1)
    throw std::invalid_argument("lowering for the model needs a one-lane machine; Params::lanes is " +
                                std::to_string(p.lanes));
  LowerOptions o = opts;
  for (;;) {  // each retry turns one option off, so this ends
    try {
      return Lowerer(m, shape, p, o).run(kernel);
    } catch (const Relower& r) {
      if (r.compact_division) o.compact_division = true;
      o.max_hoisted = std::min(o.max_hoisted, r.max_hoisted);
    }
  }
}

std::optional<std::string> model_unsupported(const Program& prog) {
  const Params& p = model_params();
  if (prog.blocks.size() > p.rom_blocks)
    return "kernel " + prog.kernel + " has " + std::to_string(prog.blocks.size()) + " blocks; the model's ROM holds " +
           std::to_string(p.rom_blocks);
  try {
    validate(prog, p);
  } catch (const std::invalid_argument& e) {
    return std::string("not a program of the model's machine: ") + e.what();
  }
  for (size_t b = 0; b < prog.blocks.size(); ++b) {
    const Block& blk = prog.blocks[b];
    auto at = [&](const std::string& text, const std::string& why) {
      return "block B" + std::to_string(b) + ": `" + text + "`: " + why;
    };
    for (const Instr& in : blk.instrs) {
      std::string why;
      switch (in.op) {
        case Op::CLOCK: why = "the clock is not in the model's circuit yet"; break;
        case Op::MULHU:
        case Op::MULHS: why = "high multiplies are not in the model's circuit yet"; break;
        case Op::ATOM: why = "atomics are not in the model's circuit (the model lowering expands them)"; break;
        case Op::LD:
        case Op::ST:
          if (in.bytes != 4) why = "the model's circuit accesses memory in 32-bit words (the model lowering widens this)";
          break;
        default: break;
      }
      if (!why.empty()) return at(to_string(in), why);
    }
    if (blk.term.kind == Term::BR && !blk.instrs.empty() && !blk.instrs.back().writes_reg())
      return at(to_string(blk.instrs.back()) + "; " + to_string(blk.term),
                "a store's block ends in a branch (the model lowering splits it)");
  }
  return std::nullopt;
}

}  // namespace qgpu::machine

namespace qgpu::machine {

// ---- textures and surfaces (texture.h; docs/isa.md section 8.3) -------------------

void Lowerer::lower_texture(const ptx::Instr& in) {
  using PO = ptx::Op;
  texture::Emitter e;
  e.alu = [this](Op o, Operand a, Operand b, Operand c) { return opr(o, a, b, c); };
  e.load = [this](Operand a, uint32_t bytes) { return R(ld(Space::Global, a, 0, bytes, false)); };
  e.store = [this](Operand a, uint32_t bytes, Operand v) { st(Space::Global, a, 0, bytes, v); };
  e.label = [this] { return new_label(); };
  e.place = [this](uint32_t l) { place(l); };
  e.jmp = [this](uint32_t l) { jmp(l); };
  e.br = [this](Operand c, uint32_t t, uint32_t f) { br(c, t, f); };
  e.trap = [this](uint32_t code) { code_.push_back({VI::Trap, {}, 0, 0, 0, code}); };
  e.var = [this] { return nv(); };
  e.set = [this](uint32_t v, Operand x) { opd(v, Op::MOV, x); };
  const bool store = in.op == PO::Sust;
  const ptx::Operand& handle = in.ops[store ? 0 : 1];
  const ptx::Operand& coords = in.ops[store ? 1 : 2];
  const ptx::Operand& data = in.ops[store ? 2 : 0];
  Operand desc = read(in, handle, Type::U64).lo;
  std::array<Operand, 4> c = {K(0), K(0), K(0), K(0)};
  for (size_t k = 0; k < coords.elems.size() && k < 4; ++k)
    if (coords.elems[k].kind != ptx::Operand::Kind::Sink) c[k] = read(in, coords.elems[k], Type::B32).lo;
  auto elems = [&](const ptx::Operand& o) {
    std::vector<const ptx::Operand*> v;
    if (o.kind == ptx::Operand::Kind::Vector)
      for (auto& x : o.elems) v.push_back(&x);
    else
      v.push_back(&o);
    return v;
  };
  if (in.op == PO::Tex) {
    if (in.type != Type::F32 && in.type != Type::S32 && in.type != Type::U32)
      unsupported(in, "returns a type tex does not have here (f32, s32, u32; docs/isa.md section 8.3)");
    if (in.type2 != Type::F32 && in.type2 != Type::S32)
      unsupported(in, "has coordinates of a type other than f32 and s32");
    auto r = texture::tex(e, desc, in.geom, in.type2 == Type::S32, c, in.type != Type::F32);
    auto d = elems(data);
    for (size_t k = 0; k < d.size() && k < 4; ++k) write(*d[k], Type::B32, {r[k], K(0)});
    return;
  }
  if (in.geom == ptx::TexGeom::Cube || in.geom == ptx::TexGeom::ACube)
    unsupported(in, "is a surface access of a cube map (surfaces here are 1d, 2d, 3d, a1d and a2d)");
  const uint32_t es = ptx::type_size(in.type);
  auto d = elems(data);
  Operand ok = K(1);
  Operand a = texture::surface_address(e, desc, in.geom, c, es * uint32_t(d.size()), in.surf_clamp, ok);
  if (in.surf_clamp != 2) ok = K(1);  // .trap has trapped, .clamp clamped: only .zero drops the access
  if (in.op == PO::Suld) {
    for (size_t k = 0; k < d.size(); ++k) {
      V v;
      v.lo = opr(Op::SEL, ok, R(ld(Space::Global, a, uint32_t(k * es), std::min<uint32_t>(es, 4), false)), K(0));
      if (es == 8) v.hi = opr(Op::SEL, ok, R(ld(Space::Global, a, uint32_t(k * es + 4), 4, false)), K(0));
      write(*d[k], in.type, v);
    }
    return;
  }
  uint32_t go = new_label(), done = new_label();
  br(ok, go, done);
  place(go);
  for (size_t k = 0; k < d.size(); ++k) {
    V v = read(in, *d[k], in.type);
    st(Space::Global, a, uint32_t(k * es), std::min<uint32_t>(es, 4), v.lo);
    if (es == 8) st(Space::Global, a, uint32_t(k * es + 4), 4, v.hi);
  }
  jmp(done);
  place(done);
}

}  // namespace qgpu::machine
