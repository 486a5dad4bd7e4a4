#include "model_host/machine_circuit/alu.h"

#include "model_host/circuit/float_words.h"
#include "model_host/machine/isa.h"

#include <algorithm>
#include <optional>
#include <stdexcept>

namespace qgpu::gpu::mc {

using machine::Op;

namespace {

// Shifts by 32 or more: shl/shr give 0, sar the sign everywhere; and the
// bit operations, one case.  The other cases are machine::Op's index.
constexpr int kZeroCase = 64, kOnesCase = 65, kBitsCase = 66;

// What passes between the ALU's steps.
struct AluState {
  Digits A, B, C;
  Word Aw, Bw;
  ValueId alu_case = -1;
  ValueId amount32 = -1;    // b mod 32
  Digits acc;               // the result so far
  ValueId is_mg = -1, is_mp = -1;   // the token is a global / parameter write record
  Digits st_data;           // a store's data (or a prompt record's)
  Digits sum;               // a + b
  ValueId fault = -1;
  // Per result that only some operations read, whether the instruction is
  // one of them (from the ROM's opcode): the result is computed under that
  // guard (Program::Guard), so on other tokens its units stay off.
  struct Guards {
    ValueId sum, bits, sub, eq, signed_cmp, unsigned_cmp, mul, mulhu, ffma;
  } only;
};

// The operands, the case, the multiplier and the address sum.
AluState arithmetic(Builder& b, const Context& c, const Rom& r, const Registers& regs) {
  Program& p = b.p;
  AluState s;
  s.only.sum = op_is(b, r, "uses_sum", {Op::ADD, Op::LD, Op::ST});
  s.only.bits = op_is(b, r, "is_bits", {Op::AND, Op::OR, Op::XOR, Op::SHL, Op::SHR, Op::SAR, Op::BREV, Op::POPC, Op::CLZ});
  s.only.sub = op_is(b, r, "is_sub", {Op::SUB, Op::CSUB});
  s.only.eq = op_is(b, r, "is_eq", {Op::SEQ, Op::SNE});
  s.only.signed_cmp = op_is(b, r, "is_signed_cmp", {Op::SLT, Op::SLE, Op::MIN, Op::MAX});
  s.only.unsigned_cmp = op_is(b, r, "is_unsigned_cmp", {Op::SLTU, Op::SLEU, Op::MINU, Op::MAXU, Op::CSUB});
  s.only.mul = op_is(b, r, "is_mul", {Op::MUL, Op::MULHU});
  s.only.mulhu = op_is(b, r, "is_mulhu", {Op::MULHU});
  s.only.ffma = op_is(b, r, "is_ffma", {Op::FFMA});
  auto operand = [&](const std::string& name, const std::vector<ValueId>& rec, const Digits& reg) {
    const ValueId imm = b.flag(name + ".imm", rec[1], [](int s) { return ((s >> 1) & 1) == 0; });
    Digits immw;
    for (int i = 2; i < 10; ++i) immw.push_back({rec[i]});
    return word_digits(circuit::select(p, name, imm, b.word(immw), b.word(reg)));
  };
  s.C = operand("C", r.r_c, regs.regC);
  s.B = operand("B", r.r_b, regs.regB);
  s.A = operand("A", r.r_a, regs.regA);
  const Digits &A = s.A, &B = s.B;
  s.Aw = b.word(A);
  s.Bw = b.word(B);

  {
    const Program::Guard only(p, {s.only.bits, 1});
    const ValueId amount = bitfield(b, "amount", B, 0, 4);
    std::vector<Term> amount_terms;
    for (int k = 1; k < 16; ++k) amount_terms.push_back({amount, k, k});
    for (int k = 1; k < 16; k += 2) amount_terms.push_back({B[1].v, k, 16});
    s.amount32 = p.ladder("amount32", 32, amount_terms, 0, [](int k) { return k; });
  }
  std::vector<Term> big_terms;
  for (int k = 2; k < 16; ++k) big_terms.push_back({B[1].v, k, 1});
  for (int i = 2; i < 8; ++i)
    for (int k = 1; k < 16; ++k) big_terms.push_back({B[i].v, k, 1});
  const ValueId big = p.ladder("shift_big", 2, big_terms, 0, [](int k) { return k >= 1 ? 1 : 0; });
  const ValueId sign = b.flag("a_sign", A[7].v, [](int k) { return k >= 8; });
  s.alu_case = p.lookup("alu_case", 67, {r.op, big, sign}, [](const std::vector<int>& v) {
    const Op o = Op(v[0]);
    if (v[1] && (o == Op::SHL || o == Op::SHR)) return kZeroCase;
    if (v[1] && o == Op::SAR) return v[2] ? kOnesCase : kZeroCase;
    if (o == Op::AND || o == Op::OR || o == Op::XOR || o == Op::SHL || o == Op::SHR || o == Op::SAR || o == Op::BREV)
      return kBitsCase;
    return v[0];
  });
  s.acc = b.mux("r.first", s.alu_case,
                {{int(Op::MOV), A}, {int(Op::WARP), c.cur_w}, {int(Op::CTA), c.cur_c},
                 {kOnesCase, Digits(8, Dig{-1, 15})}},
                8);
  // The global store's data: a prompt record's two D tokens, or a store's c.
  s.is_mg = b.is_kind(Kind::MG);
  s.is_mp = b.is_kind(Kind::MP);
  Digits mdata = c.prev2P;
  mdata.insert(mdata.end(), c.prevP.begin(), c.prevP.end());
  s.st_data = b.mux("st_data", s.is_mg, {{1, mdata}, {0, s.C}}, 8);

  // Stage 1: the address sum (and ADD).
  {
    const Program::Guard only(p, {s.only.sum, 1});
    s.sum = word_digits(circuit::add(p, "add", s.Aw, s.Bw).value);
  }

  return s;
}

// Address checks on a + b (docs/isa.md section 10; sizes of model_params()),
// the data memories, and the address sum and the loads in one fold.
void memories(Builder& b, const Context& c, const Rom& r, AluState& s) {
  Program& p = b.p;
  const Digits& sum = s.sum;
  const Digits& P = c.P;
  auto digit_is = [&](const std::string& name, const std::vector<std::pair<int, std::function<bool(int)>>>& conds) {
    std::vector<Term> t;
    for (const auto& [i, f] : conds)
      for (int k = 0; k < 16; ++k)
        if (f(k)) t.push_back({sum[i].v, k, 1});
    const int n = int(conds.size());
    return p.ladder(name, 2, t, 0, [n](int k) { return k == n ? 1 : 0; });
  };
  auto zero = [](int k) { return k == 0; };
  auto below = [](int k) { return std::function<bool(int)>([k](int x) { return x < k; }); };
  // Global: 0x10000000 + offset, offset below 2^gbits bytes (gbits 12..18).
  const int gbits = global_address_bits();
  std::vector<std::pair<int, std::function<bool(int)>>> g_conds{{7, [](int k) { return k == 1; }}};
  for (int i = 6; 4 * i >= gbits; --i) g_conds.push_back({i, zero});
  if (gbits % 4) g_conds.push_back({gbits / 4, below(1 << (gbits % 4))});
  const ValueId ok_global = digit_is("ok_global", g_conds);
  // Shared: 64 KiB (model_params().shared_bytes).
  const ValueId ok_shared = digit_is("ok_shared", {{7, zero}, {6, zero}, {5, zero}, {4, zero}});
  // Local: a thread of a CTA of 2^c (rounded) threads has 2^(15 - c) bytes.
  ValueId local_over;
  {
    std::vector<Step> over;
    for (int lc = 0; lc <= 10; ++lc) {
      const int limit_bit = 15 - lc;
      std::vector<Term> t;
      for (int i = 1; i <= 3; ++i)
        for (int k = 1; k < 16; ++k)
          if ((k << (4 * i)) >> limit_bit) t.push_back({sum[i].v, k, 1});
      const ValueId over_c = p.ladder("local_over" + std::to_string(lc), 2, t, 0, [](int k) { return k >= 1 ? 1 : 0; });
      over.push_back({{{c.local_log, lc, 1}, {over_c, 1, 1}}, -1, 0, 1});
    }
    local_over = p.mlp("local_over", 2, 0, std::move(over));
  }
  const ValueId ok_local = [&] {
    std::vector<Term> t{{local_over, 0, 1}};
    for (int i = 4; i < 8; ++i) t.push_back({sum[i].v, 0, 1});
    return p.ladder("ok_local", 2, t, 0, [](int k) { return k == 5 ? 1 : 0; });
  }();
  const ValueId ok_small = digit_is("ok_small", {{7, zero}, {6, zero}, {5, zero}, {4, zero}, {3, zero}, {2, below(4)}});
  const ValueId misaligned = b.flag("misaligned", sum[0].v, [](int k) { return (k & 3) != 0; });
  const ValueId is_mem = b.any("is_mem", {r.is_ld, r.is_st});
  // Parameters: 4 KiB.
  const ValueId ok_param = digit_is("ok_param", {{7, zero}, {6, zero}, {5, zero}, {4, zero}, {3, zero}});
  s.fault = p.lookup("fault", 3, {is_mem, misaligned, r.space, ok_global, ok_shared, ok_local, ok_small, ok_param},
                     [](const std::vector<int>& v) {
                       if (!v[0]) return 0;
                       if (v[1]) return 2;   // misaligned
                       const bool ok = v[2] == kGlobal ? v[3] : v[2] == kShared ? v[4]
                                       : v[2] == kLocal ? v[5] : v[2] == kParam ? v[7]
                                       : v[2] == kPrint ? v[6] : 0;
                       return ok ? 0 : 1;    // illegal address
                     });
  const ValueId faults = b.flag("faults", s.fault, [](int k) { return k != 0; });
  const Digits row_lo = {{bitfield(b, "row0", sum, 2, 4)}, {bitfield(b, "row1", sum, 6, 4)},
                         {bitfield(b, "row2", sum, 10, 4)}};
  auto store_to = [&](const std::string& name, int sp) {
    return b.all(name, {c.is_exec, r.is_st, b.flag(name + ".space", r.space, [sp](int k) { return k == sp; }),
                        b.lnot(name + ".ok", faults)});
  };
  // Global memory: written by MG write records and by stores; word i is row
  // i (bits 2.. of the offset), 2^(gbits - 2) rows.
  const ValueId is_mg = s.is_mg, is_mp = s.is_mp;
  const int g_words_bits = gbits - 2, g_digits = (g_words_bits + 3) / 4;
  Digits g_lo = row_lo;
  for (int i = 3; i < g_digits; ++i) g_lo.push_back({bitfield(b, "row" + std::to_string(i), sum, 2 + 4 * i, 4)});
  g_lo.resize(g_digits);
  // An MG record's row: its payload, the word in the page, below the page
  // the last MGP set (kept in a one-row store for the client's whole life;
  // a model of one page has neither).
  Digits mg_row = slice(P, 0, std::min(g_digits, 4));
  if (g_digits > 4)
    mg_row.push_back(outs(store(b, "mg_page", 1, {}, {}, b.is_kind(Kind::MGP), -1, payload_parts(b, 1, 0)), 0, 1)[0]);
  const Digits g_row = b.mux("g_row", is_mg, {{1, mg_row}, {0, g_lo}}, g_digits);
  const ValueId we_global = b.any("we_global", {is_mg, store_to("st_global", kGlobal)});
  const Digits v_global = outs(store(b, "global", 1 << g_words_bits, Builder::bits(g_row, 0, g_words_bits),
                                     Builder::bits(g_lo, 0, g_words_bits), we_global, -1,
                                     digit_parts(b.pad(s.st_data, 8))), 0, 8);
  // Shared memory: word i is row i (bits 2..15 of the offset), 16384 rows.
  std::vector<AddrBit> s_addr = Builder::bits(row_lo, 0, 12);
  const ValueId row3 = bitfield(b, "srow3", sum, 14, 2);
  s_addr.push_back({row3, 0});
  s_addr.push_back({row3, 1});
  const Digits v_shared = outs(store(b, "shared", 16384, s_addr, s_addr, store_to("st_shared", kShared), c.is_cta,
                                     digit_parts(s.C)), 0, 8);
  // Local row of word i of thread w: i | w << (13 - c).  Bits 0..2 are always
  // the word's (c <= 10); bit j above is word bit j while j < 13 - c, else
  // thread bit j - (13 - c).
  std::vector<AddrBit> l_addr = Builder::bits(row_lo, 0, 3);
  std::vector<ValueId> word_bit(13, -1), thread_bit(10);
  for (int j = 3; j < 13; ++j) word_bit[j] = bitfield(b, "lrow.s" + std::to_string(j), sum, 2 + j, 1);
  for (int i = 0; i < 10; ++i) thread_bit[i] = bitfield(b, "lrow.t" + std::to_string(i), c.cur_w, i, 1);
  for (int j = 3; j < 13; ++j) {
    std::vector<Step> pick;
    for (int lc = 0; lc <= 10; ++lc) {
      const int k = 13 - lc;
      const ValueId src = j < k ? word_bit[j] : thread_bit[j - k];
      pick.push_back({{{c.local_log, lc, 1}, {src, 1, 1}}, -1, 0, 1});
    }
    l_addr.push_back({p.mlp("lrow.b" + std::to_string(j), 2, 0, std::move(pick)), 0});
  }
  const Digits v_local = outs(store(b, "local", 8192, l_addr, l_addr, store_to("st_local", kLocal), c.is_cta,
                                    digit_parts(s.C)), 0, 8);
  // Parameters: written by MP prompt records (the two D tokens before it).
  const Digits v_param = outs(store(b, "param", 1024, Builder::bits(P, 0, 10), Builder::bits(row_lo, 0, 10), is_mp,
                                    r.is_nt, cat(payload_parts(b, 4, 2), payload_parts(b, 4, 1))), 0, 8);
  const Digits v_print = outs(store(b, "print", 256, Builder::bits(row_lo, 0, 8), Builder::bits(row_lo, 0, 8),
                                    store_to("st_print", kPrint), r.is_nt, digit_parts(s.C)), 0, 8);

  // The address sum and the loads, in one fold.
  enum G { kOtherGroup, kAdd, kLdGlobal };
  const ValueId g = p.lookup("group2", 7, {s.alu_case, r.space}, [](const std::vector<int>& v) {
    if (v[0] == int(Op::ADD)) return int(kAdd);
    if (v[0] == int(Op::LD) && v[1] <= kPrint) return int(kLdGlobal) + v[1];
    return int(kOtherGroup);
  });
  s.acc = b.mux("r.loads", g,
                {{kAdd, sum},
                 {int(kLdGlobal) + kGlobal, v_global},
                 {int(kLdGlobal) + kShared, v_shared},
                 {int(kLdGlobal) + kLocal, v_local},
                 {int(kLdGlobal) + kParam, v_param},
                 {int(kLdGlobal) + kPrint, v_print},
                 {kOtherGroup, s.acc}},
                8);
}

// Stage 2b: bit operations, popc and clz, after the loads.
void bit_operations(Builder& b, const Rom& r, AluState& s) {
  Program& p = b.p;
  const size_t stage2b = p.ops().size();
  // The group is read on every token; the results only by these operations.
  enum G { kOtherGroup, kBits, kPopc, kClz };
  const ValueId g = circuit::apply(p, "group2b", 4, s.alu_case, [](int k) {
    return k == kBitsCase ? int(kBits) : k == int(Op::POPC) ? int(kPopc) : k == int(Op::CLZ) ? int(kClz) : int(kOtherGroup);
  });
  std::optional<Program::Guard> only;
  only.emplace(p, circuit::Literal{s.only.bits, 1});
  const Word Ab = circuit::regroup(p, "Ab", s.Aw, 1), Bb = circuit::regroup(p, "Bb", s.Bw, 1);
  // Bit operations, one value per result bit: and, or, xor, shifts by b mod
  // 32 (arithmetic right shifts fill with the sign), bit reversal.
  const ValueId bop = r.bop, amount32 = s.amount32;
  Word bits{{}, 1};
  for (int i = 0; i < 32; ++i) {
    auto a_ = [&](int j) { return Ab.digits[j]; };
    const ValueId bi = Bb.digits[i];
    std::vector<Step> st;
    st.push_back({{{bop, kAnd, 1}, {a_(i), 1, 1}, {bi, 1, 1}}, -2, 0, 1});
    st.push_back({{{bop, kOr, 1}, {a_(i), 1, 1}}, -1, 0, 1});
    st.push_back({{{bop, kOr, 1}, {a_(i), 0, 1}, {bi, 1, 1}}, -2, 0, 1});
    st.push_back({{{bop, kXor, 1}, {a_(i), 1, 1}, {bi, 0, 1}}, -2, 0, 1});
    st.push_back({{{bop, kXor, 1}, {a_(i), 0, 1}, {bi, 1, 1}}, -2, 0, 1});
    for (int sh = 0; sh < 32; ++sh) {
      if (i - sh >= 0) st.push_back({{{bop, kShl, 1}, {amount32, sh, 1}, {a_(i - sh), 1, 1}}, -2, 0, 1});
      if (i + sh < 32) st.push_back({{{bop, kShr, 1}, {amount32, sh, 1}, {a_(i + sh), 1, 1}}, -2, 0, 1});
      st.push_back({{{bop, kSar, 1}, {amount32, sh, 1}, {a_(std::min(i + sh, 31)), 1, 1}}, -2, 0, 1});
    }
    st.push_back({{{bop, kBrev, 1}, {a_(31 - i), 1, 1}}, -1, 0, 1});
    bits.digits.push_back(p.mlp("bits.b" + std::to_string(i), 2, 0, std::move(st)));
  }
  const Digits r_bits = word_digits(circuit::regroup(p, "bits4", bits, 4));
  const Digits r_popc = word_digits(circuit::popc(p, "popc", Ab, 4));
  const Digits r_clz = word_digits(circuit::clz(p, "clz", Ab, 4));
  only.reset();
  p.wait_for(stage2b, s.acc.back().v);
  s.acc = b.mux("r.bits", g, {{kBits, r_bits}, {kPopc, r_popc}, {kClz, r_clz}, {kOtherGroup, s.acc}}, 8);
}

// Stage 3: subtraction, comparisons and the operations that choose an operand
// (CSUB, a - b unless a < b, picks a or the difference by the unsigned
// comparison).
void comparisons(Builder& b, AluState& s) {
  Program& p = b.p;
  const Digits &A = s.A, &B = s.B, &C = s.C;
  const Word &Aw = s.Aw, &Bw = s.Bw;
  const size_t stage3 = p.ops().size();
  auto guarded = [&](ValueId only, auto make) {
    const Program::Guard g(p, {only, 1});
    return make();
  };
  const Digits r_sub = guarded(s.only.sub, [&] { return word_digits(circuit::add(p, "sub", Aw, Bw, true).value); });
  const ValueId eq = guarded(s.only.eq, [&] { return circuit::equal(p, "seq", Aw, Bw); });
  const ValueId lt = guarded(s.only.signed_cmp, [&] { return circuit::less_than(p, "slt", Aw, Bw, true); });
  const ValueId gt = guarded(s.only.signed_cmp, [&] { return circuit::less_than(p, "sgt", Bw, Aw, true); });
  const ValueId ltu = guarded(s.only.unsigned_cmp, [&] { return circuit::less_than(p, "sltu", Aw, Bw, false); });
  const ValueId gtu = guarded(s.only.unsigned_cmp, [&] { return circuit::less_than(p, "sgtu", Bw, Aw, false); });
  const ValueId nzA = b.lnot("a_nonzero", is_zero(b, "a_zero", A));
  p.wait_for(stage3, s.acc.back().v);
  enum G { kOtherGroup, kSub, kSeq, kSne, kSlt, kSle, kSltu, kSleu, kSel, kMin, kMax, kMinu, kMaxu, kCsub };
  const ValueId g = circuit::apply(p, "group3", 14, s.alu_case, [](int k) {
    switch (Op(k)) {
      case Op::SUB: return int(kSub);
      case Op::SEQ: return int(kSeq);
      case Op::SNE: return int(kSne);
      case Op::SLT: return int(kSlt);
      case Op::SLE: return int(kSle);
      case Op::SLTU: return int(kSltu);
      case Op::SLEU: return int(kSleu);
      case Op::SEL: return int(kSel);
      case Op::MIN: return int(kMin);
      case Op::MAX: return int(kMax);
      case Op::MINU: return int(kMinu);
      case Op::MAXU: return int(kMaxu);
      case Op::CSUB: return int(kCsub);
      default: return int(kOtherGroup);
    }
  });
  s.acc = b.mux("r.stage3", g,
                {{kSub, r_sub},
                 {kSeq, {{eq}}},
                 {kSne, {{b.lnot("sne", eq)}}},
                 {kSlt, {{lt}}},
                 {kSle, {{b.lnot("sle", gt)}}},
                 {kSltu, {{ltu}}},
                 {kSleu, {{b.lnot("sleu", gtu)}}},
                 {kSel, B, nzA, 1},
                 {kSel, C, nzA, 0},
                 {kMin, A, lt, 1},
                 {kMin, B, lt, 0},
                 {kMax, B, lt, 1},
                 {kMax, A, lt, 0},
                 {kMinu, A, ltu, 1},
                 {kMinu, B, ltu, 0},
                 {kMaxu, B, ltu, 1},
                 {kMaxu, A, ltu, 0},
                 {kCsub, A, ltu, 1},
                 {kCsub, r_sub, ltu, 0},
                 {kOtherGroup, s.acc}},
                8);
}

// FFMA (.rn, no .ftz or .sat: docs/isa.md), the machine's one float
// operation (the lowering makes an f32 add a * 1 + b, a subtract b * -1 + a
// and a multiply a * b + -0, each the same bit for bit), after the integer
// products, whose tables fill the residual while they are summed: its bit
// products and column counts wait for `ffma_after` (the multiplexed MUL or
// MULHU result) and are made half in each of two layers, and its result
// joins the result last.
void floats(Builder& b, AluState& s, ValueId ffma_after) {
  Program& p = b.p;
  const size_t first = p.ops().size();
  Digits r_ffma;
  {
    const Program::Guard only(p, {s.only.ffma, 1});
    r_ffma = word_digits(circuit::float_fma32(p, "ffma", s.Aw, s.Bw, b.word(s.C), 2));
  }
  p.wait_for(first, ffma_after);
  s.acc = b.mux("r.float", s.only.ffma, {{1, r_ffma}, {0, s.acc}}, 8);
}

// MUL and MULHU (the low and the high half of one 64-bit product), last:
// its nibble products fill the residual while they are summed.  Returns the
// result's last value, which the f32 FFMA waits for (the two products do not
// fit the residual side by side).
ValueId products(Builder& b, AluState& s, ValueId after) {
  Program& p = b.p;
  const size_t first = p.ops().size();
  Digits r_mul;
  {
    const Program::Guard only(p, {s.only.mul, 1});
    const Digits full = multiply(p, "mul", s.Aw, s.Bw);
    r_mul = b.mux("mul.half", s.only.mulhu, {{1, slice(full, 8, 8)}, {0, slice(full, 0, 8)}}, 8);
  }
  p.wait_for(first, after);
  s.acc = b.mux("r.mul", s.only.mul, {{1, r_mul}, {0, s.acc}}, 8);
  return s.acc.back().v;
}

}  // namespace

Alu alu_stage(Builder& b, const Context& c, const Rom& r, const Registers& regs) {
  AluState s = arithmetic(b, c, r, regs);
  memories(b, c, r, s);
  bit_operations(b, r, s);
  const ValueId bits_done = s.acc.back().v;
  comparisons(b, s);
  const ValueId product_done = products(b, s, bits_done);
  floats(b, s, product_done);
  Alu out;
  out.R = s.acc;
  out.hi_zero = is_zero(b, "hi_zero", slice(b.pad(out.R, 8), 4, 4));
  out.fault = s.fault;
  return out;
}

}  // namespace qgpu::gpu::mc
