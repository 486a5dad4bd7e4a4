// Instruction selection: warp matrix operations, wmma.load, wmma.store and
// wmma.mma (isel.h; docs/isa.md section 7.1).  The fragments follow
// ptx/wmma.h's layout: each lane's elements are one run of a row of A, C
// and D, or of a column of B, so a load or store is the lane's own accesses
// (whole words where the run is contiguous in memory).  An mma stages the
// warp's A and B in its matrix area in shared memory (A row-major, B
// column-major: the lanes' fragment words side by side), waits for the
// warp, and computes each of the lane's elements of D: one MMA each where
// the machine has it (Params::native_mma), else a loop of loads and f32
// fused multiply-adds (or integer multiply-adds) over k.
#include <bit>

#include "model_host/lower/isel.h"
#include "model_host/ptx/wmma.h"

namespace qgpu::machine::lowering {

namespace wm = ptx::wmma;

namespace {
uint32_t log2u(uint32_t x) { return uint32_t(std::countr_zero(x)); }
}  // namespace

// This CUDA warp's matrix area (mma_area_bytes(), after the scratch area).
Operand Lowerer::mma_area() {
  mma_used_ = true;
  Operand cw = opr(Op::SHR, tid_linear(), K(5));
  return opr(Op::ADD, opr(Op::MUL, cw, K(mma_area_bytes())), K(mma_base()));
}

uint32_t Lowerer::mma_base() const {
  const uint32_t cuda_warps = (threads_ + 31) / 32;
  return (scratch_base_ + (cuda_warps * kScratchWords + 1) * 4 + 15) / 16 * 16;
}

void Lowerer::lower_wmma(const ptx::Instr& in) {
  const ptx::WmmaInfo& w = in.wmma;
  const wm::Shape s{w.m, w.n, w.k};
  if (!wm::valid_shape(s)) unsupported(in, "is a wmma shape the machine does not have (m16n16k16, m32n8k16, m8n32k16)");
  if (w.op == ptx::WmmaOp::Mma) return lower_wmma_mma(in);
  const wm::Frag f = w.op == ptx::WmmaOp::LoadA   ? wm::Frag::A
                     : w.op == ptx::WmmaOp::LoadB ? wm::Frag::B
                                                  : wm::Frag::C;
  const bool input = f != wm::Frag::C;
  if (input ? (in.type != Type::F16 && in.type != Type::S8 && in.type != Type::U8)
            : (in.type != Type::F16 && in.type != Type::F32 && in.type != Type::S32))
    unsupported(in, std::string("is a wmma fragment of ") + ptx::type_name(in.type) +
                        " (f16, s8 and u8 inputs, f16, f32 and s32 accumulators)");
  const bool store = w.op == ptx::WmmaOp::StoreD;
  const ptx::Operand& addr_op = in.ops[store ? 0 : 1];
  const ptx::Operand& vec = in.ops[store ? 1 : 0];
  const uint32_t es = ptx::type_size(in.type), E = wm::per_lane(s, f), per = 4 / es, nw = E * es / 4;
  const uint32_t rows = wm::rows(s, f), cols = wm::cols(s, f);
  if (vec.elems.size() < nw) unsupported(in, "has too few fragment registers");
  uint32_t off;
  Space space;
  Operand addr = address(in, addr_op, off, space);
  Operand stride = in.ops.size() > 2 ? read32(in, in.ops[2], Type::U32) : K(w.col ? rows : cols);
  // The first element of the lane's run (row r0, column c0) and the
  // distance in elements between consecutive ones in memory.
  Operand e0 = opr(Op::SHL, opr(Op::AND, tid_linear(), K(31)), K(log2u(E)));
  Operand r0, c0;
  if (f == wm::Frag::B) {
    r0 = opr(Op::AND, e0, K(s.k - 1));
    c0 = opr(Op::SHR, e0, K(log2u(s.k)));
  } else {
    r0 = opr(Op::SHR, e0, K(log2u(cols)));
    c0 = opr(Op::AND, e0, K(cols - 1));
  }
  const bool along_rows = f != wm::Frag::B;  // the run goes along a row (else down a column)
  const bool contiguous = along_rows != w.col;
  Operand first = w.col ? opr(Op::ADD, opr(Op::MUL, c0, stride), r0) : opr(Op::ADD, opr(Op::MUL, r0, stride), c0);
  Operand first_byte = opr(Op::ADD, addr, opr(Op::SHL, first, K(log2u(es))));
  Operand step_bytes = contiguous ? K(es) : opr(Op::SHL, stride, K(log2u(es)));
  std::vector<Operand> regs;
  if (store)
    for (uint32_t j = 0; j < nw; ++j) regs.push_back(read32(in, vec.elems[j], Type::B32));
  auto access = [&](Space sp, Operand base) {
    if (contiguous) {  // whole words: the fragment's registers as they lie in memory
      for (uint32_t j = 0; j < nw; ++j) {
        if (store) st(sp, base, off + 4 * j, 4, regs[j]);
        else write(vec.elems[j], Type::B32, {R(ld(sp, base, off + 4 * j, 4, false)), K(0)});
      }
    } else {
      std::vector<Operand> packed(nw, K(0));
      Operand at = base;
      for (uint32_t i = 0; i < E; ++i) {
        if (i) at = opr(Op::ADD, at, step_bytes);
        const uint32_t sh = (i % per) * es * 8;
        if (store) {
          st(sp, at, off, es, sh ? opr(Op::SHR, regs[i / per], K(sh)) : regs[i / per]);
        } else {
          Operand v = R(ld(sp, at, off, es, false));
          packed[i / per] = i % per ? opr(Op::OR, packed[i / per], opr(Op::SHL, v, K(sh))) : v;
        }
      }
      if (!store)
        for (uint32_t j = 0; j < nw; ++j) write(vec.elems[j], Type::B32, {packed[j], K(0)});
    }
    if (!store)
      for (uint32_t j = nw; j < vec.elems.size(); ++j) write(vec.elems[j], Type::B32, {K(0), K(0)});
  };
  if (is_generic(in, addr_op))
    dispatch_generic(first_byte, access);
  else
    access(space, first_byte);
}

void Lowerer::lower_wmma_mma(const ptx::Instr& in) {
  const ptx::WmmaInfo& w = in.wmma;
  const wm::Shape s{w.m, w.n, w.k};
  const bool flt = w.ab == Type::F16;
  if ((w.ab != Type::F16 && w.ab != Type::S8 && w.ab != Type::U8) ||
      (flt ? (in.type != Type::F16 && in.type != Type::F32) || (in.type2 != Type::F16 && in.type2 != Type::F32) ||
                 w.satfinite
           : in.type != Type::S32 || in.type2 != Type::S32))
    unsupported(in, "is a wmma.mma of types the machine does not have (f16 inputs with f16 or f32 accumulators "
                    "without .satfinite, s8 or u8 inputs with s32 accumulators)");
  const uint32_t es = flt ? 2 : 1;
  const uint32_t Ea = wm::per_lane(s, wm::Frag::A), Eb = wm::per_lane(s, wm::Frag::B), Ec = wm::per_lane(s, wm::Frag::C);
  for (size_t i = 1; i < 4; ++i)
    if (in.ops[i].kind != ptx::Operand::Kind::Vector) unsupported(in, "has a fragment that is not a register vector");
  const uint32_t c_words = in.type2 == Type::F16 ? Ec / 2 : Ec, d_words = in.type == Type::F16 ? Ec / 2 : Ec;
  if (in.ops[1].elems.size() < Ea * es / 4 || in.ops[2].elems.size() < Eb * es / 4 ||
      in.ops[3].elems.size() < c_words || in.ops[0].elems.size() < d_words)
    unsupported(in, "has too few fragment registers");
  // The lane's element i of C as an f32 (or s32) word.
  std::vector<Operand> c;
  for (uint32_t i = 0; i < Ec; ++i) {
    if (in.type2 == Type::F16) {
      Operand word = read32(in, in.ops[3].elems[i / 2], Type::B32);
      Operand h = i % 2 ? opr(Op::SHR, word, K(16)) : opr(Op::AND, word, K(0xFFFF));
      c.push_back(float_gen().f32_from_f16(h));
    } else {
      c.push_back(read32(in, in.ops[3].elems[i], Type::B32));
    }
  }
  Operand area = mma_area();
  Operand lane = opr(Op::AND, tid_linear(), K(31));
  // Without native_mma, f16 inputs are also staged as f32 words: each lane
  // converts its own elements once, in a loop after storing them (the f32
  // region after the halves), instead of every lane converting two elements
  // at every step of each dot product.
  const bool staged_f32 = flt && !p_.native_mma;
  const uint32_t raw_ab = (s.m * s.k + s.k * s.n) * es;
  const uint32_t as = staged_f32 ? 4 : es;  // bytes of an element where the dot products read it
  const uint32_t f_at = staged_f32 ? raw_ab : 0;  // where they read A, then B
  const uint32_t area_a = s.m * s.k * as, area_ab = f_at + area_a + s.k * s.n * as;
  Operand a_at = opr(Op::ADD, area, opr(Op::MUL, lane, K(Ea * es)));
  Operand b_at = opr(Op::ADD, area, opr(Op::ADD, opr(Op::MUL, lane, K(Eb * es)), K(s.m * s.k * es)));
  for (uint32_t j = 0; j < Ea * es / 4; ++j) st(Space::Shared, a_at, 4 * j, 4, read32(in, in.ops[1].elems[j], Type::B32));
  for (uint32_t j = 0; j < Eb * es / 4; ++j) st(Space::Shared, b_at, 4 * j, 4, read32(in, in.ops[2].elems[j], Type::B32));
  if (staged_f32) {
    softfloat::Gen g = float_gen();
    auto convert = [&](Operand from, Operand to, uint32_t n) {
      const uint32_t j = nv(), src = nv(), dst = nv();
      opd(j, Op::MOV, K(0));
      opd(src, Op::MOV, from);
      opd(dst, Op::MOV, to);
      const uint32_t top = new_label(), done = new_label();
      place(top);
      st(Space::Shared, R(dst), 0, 4, g.f32_from_f16(R(ld(Space::Shared, R(src), 0, 2, false))));
      opd(src, Op::ADD, R(src), K(2));
      opd(dst, Op::ADD, R(dst), K(4));
      opd(j, Op::ADD, R(j), K(1));
      br(opr(Op::SLTU, R(j), K(n)), top, done);
      place(done);
    };
    convert(a_at, opr(Op::ADD, area, opr(Op::ADD, opr(Op::MUL, lane, K(Ea * 4)), K(f_at))), Ea);
    convert(b_at, opr(Op::ADD, area, opr(Op::ADD, opr(Op::MUL, lane, K(Eb * 4)), K(f_at + area_a))), Eb);
  }
  MmaMod mm;
  mm.m = uint8_t(s.m), mm.n = uint8_t(s.n), mm.k = uint8_t(s.k);
  mm.in = flt ? MmaIn::F16 : w.ab == Type::S8 ? MmaIn::S8 : MmaIn::U8;
  mm.satfinite = w.satfinite;
  Operand e0 = opr(Op::MUL, lane, K(Ec));
  std::vector<Operand> d(Ec);
  if (p_.native_mma) {
    barrier(VI::Wbar);
    // The element numbers first, so that the MMAs follow one another (the
    // interpreter computes such a run as one tile).
    std::vector<Operand> e(Ec);
    for (uint32_t i = 0; i < Ec; ++i) e[i] = opr(Op::ADD, e0, K(i));
    for (uint32_t i = 0; i < Ec; ++i) {
      Instr x;
      x.op = Op::MMA;
      x.dst = nv();
      x.a = area;
      x.b = e[i];
      x.c = c[i];
      x.space = Space::Shared;
      x.mma = mm;
      emit(x);
      d[i] = R(x.dst);
    }
  } else {
    // C's elements staged after A and B, replaced there by D's in a loop
    // over the lane's elements (the code's size does not grow with them).
    Operand c_at = opr(Op::ADD, area, opr(Op::ADD, opr(Op::MUL, lane, K(Ec * 4)), K(area_ab)));
    for (uint32_t i = 0; i < Ec; ++i) st(Space::Shared, c_at, 4 * i, 4, c[i]);
    barrier(VI::Wbar);
    const uint32_t i = nv(), acc = nv(), kk = nv(), a_ptr = nv(), b_ptr = nv(), c_ptr = nv();
    opd(i, Op::MOV, K(0));
    opd(c_ptr, Op::MOV, c_at);
    const uint32_t top = new_label(), inner = new_label(), next = new_label(), done = new_label();
    place(top);
    {
      Operand e = opr(Op::ADD, e0, R(i));
      Operand row = opr(Op::SHR, e, K(log2u(s.n))), col = opr(Op::AND, e, K(s.n - 1));
      opd(a_ptr, Op::ADD, area, opr(Op::ADD, opr(Op::MUL, row, K(s.k * as)), K(f_at)));
      opd(b_ptr, Op::ADD, area, opr(Op::ADD, opr(Op::MUL, col, K(s.k * as)), K(f_at + area_a)));
      opd(acc, Op::MOV, flt ? R(ld(Space::Shared, R(c_ptr), 0, 4, false)) : K(0));
      // Four steps over k to an iteration where a step is a few
      // instructions (loads at fixed offsets; the model's ROM holds each
      // instruction once, so not all sixteen); one where f16's fma is an
      // integer sequence.
      const bool native_fma = opts_.native_float || p_.has_native_rn(Op::FFMA);
      auto step = [&](uint32_t at) {
        Operand x = R(ld(Space::Shared, R(a_ptr), at, as, w.ab == Type::S8));
        Operand y = R(ld(Space::Shared, R(b_ptr), at, as, w.ab == Type::S8));
        if (!flt) opd(acc, Op::ADD, R(acc), opr(Op::MUL, x, y));
        else if (native_fma) opd(acc, Op::MOV, fnative(Op::FFMA, FloatMod{}, x, y, R(acc)));  // staged as f32
        else opd(acc, Op::MOV, float_gen().fma(x, y, R(acc), softfloat::Round::Rn, false, false));
      };
      const uint32_t unroll = !flt || native_fma ? 4 : 1;
      opd(kk, Op::MOV, K(0));
      place(inner);
      for (uint32_t q = 0; q < unroll; ++q) step(q * as);
      opd(a_ptr, Op::ADD, R(a_ptr), K(unroll * as));
      opd(b_ptr, Op::ADD, R(b_ptr), K(unroll * as));
      opd(kk, Op::ADD, R(kk), K(unroll));
      br(opr(Op::SLTU, R(kk), K(s.k)), inner, next);
      place(next);
      Operand result = R(acc);
      if (!flt) {
        // c + the sum, wrapping; .satfinite: clamped where it overflows (the
        // sum is below 2^21 in magnitude, so only the final add can).
        Operand cv = R(ld(Space::Shared, R(c_ptr), 0, 4, false));
        Operand sum = opr(Op::ADD, cv, R(acc));
        if (w.satfinite) {
          Operand over = opr(Op::SLT, opr(Op::AND, opr(Op::XOR, sum, cv), opr(Op::XOR, sum, R(acc))), K(0));
          Operand clamp = opr(Op::SEL, opr(Op::SLT, cv, K(0)), K(0x80000000u), K(0x7FFFFFFFu));
          sum = opr(Op::SEL, over, clamp, sum);
        }
        result = sum;
      }
      st(Space::Shared, R(c_ptr), 0, 4, result);
      opd(c_ptr, Op::ADD, R(c_ptr), K(4));
      opd(i, Op::ADD, R(i), K(1));
      br(opr(Op::SLTU, R(i), K(Ec)), top, done);
      place(done);
    }
    for (uint32_t j = 0; j < Ec; ++j) d[j] = R(ld(Space::Shared, c_at, 4 * j, 4, false));
  }
  // Every lane has read A and B before any lane's next mma stages its own.
  barrier(VI::Wbar);
  for (uint32_t j = 0; j < d_words; ++j) {
    Operand v = d[j];
    if (in.type == Type::F16) {
      softfloat::Gen g = float_gen();
      v = opr(Op::OR, g.f16_from_f32(d[2 * j], softfloat::Round::Rn),
              opr(Op::SHL, g.f16_from_f32(d[2 * j + 1], softfloat::Round::Rn), K(16)));
    }
    write(in.ops[0].elems[j], Type::B32, {v, K(0)});
  }
}

}  // namespace qgpu::machine::lowering
