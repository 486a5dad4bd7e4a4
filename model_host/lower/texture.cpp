// Texture fetches and surface accesses as machine code (texture.h).
#include "model_host/lower/texture.h"

#include "model_host/launch/errors.h"
#include "model_host/launch/texture.h"

namespace qgpu::machine::texture {

namespace T = qgpu::launch::tex;
using softfloat::Round;
using G = ptx::TexGeom;

namespace {

constexpr uint32_t kOne = 0x3F800000u, kHalfNeg = 0xBF000000u, k256 = 0x43800000u;
Operand K(uint32_t v) { return Operand::k(v); }

struct Fetcher {
  Emitter& e;
  softfloat::Gen f;
  Operand d;  // descriptor address
  explicit Fetcher(Emitter& em, Operand desc) : e(em), f(em.alu), d(desc) {}

  Operand op(Op o, Operand a, Operand b = K(0), Operand c = K(0)) { return e.alu(o, a, b, c); }
  // The fetch's f32 operations: native ones where the machine has them
  // (Emitter::fnative), else softfloat.h's sequences; the same results.
  Operand fl(Op o, FRnd r, Operand a, Operand b = K(0), FCmp c = FCmp::None) {
    FloatMod m;
    m.rnd = r;
    m.cmp = c;
    return e.fnative(o, m, a, b);
  }
  Operand fadd(Operand a, Operand b) {
    return e.fnative ? fl(Op::FADD, FRnd::Rn, a, b) : f.add(a, b, Round::Rn, false, false);
  }
  Operand fsub(Operand a, Operand b) {
    return e.fnative ? fl(Op::FSUB, FRnd::Rn, a, b) : f.sub(a, b, Round::Rn, false, false);
  }
  Operand fmul(Operand a, Operand b) {
    return e.fnative ? fl(Op::FMUL, FRnd::Rn, a, b) : f.mul(a, b, Round::Rn, false, false);
  }
  Operand fdiv(Operand a, Operand b) {
    return e.fnative ? fl(Op::FDIV, FRnd::Rn, a, b) : f.div(a, b, Round::Rn, false, false);
  }
  Operand ffloor(Operand a) {  // cvt.rmi.f32.f32
    return e.fnative ? fl(Op::FRINT, FRnd::Rmi, a) : f.round_int(a, true, Round::Rm, false, false);
  }
  Operand f2i(Operand a, Round r) {  // cvt.rzi/rmi.s32.f32
    return e.fnative ? fl(Op::F2I, r == Round::Rz ? FRnd::Rzi : FRnd::Rmi, a)
                     : f.to_int32(a, true, 32, r, false);
  }
  Operand u2f(Operand a) { return e.fnative ? fl(Op::U2F, FRnd::Rn, a) : f.from_int32(a, false, Round::Rn); }
  Operand fge(Operand a, Operand b) {
    return e.fnative ? fl(Op::FCMP, FRnd::None, a, b, FCmp::Ge) : f.compare(ptx::Cmp::Ge, a, b, false);
  }
  Operand word(uint32_t w) { return e.load(op(Op::ADD, d, K(4 * w)), 4); }
  Operand get(uint32_t v) { return Operand::reg(v); }
  uint32_t var(Operand init) {
    uint32_t v = e.var();
    e.set(v, init);
    return v;
  }
  // if (c) body();
  template <class F>
  void when(Operand c, F body) {
    uint32_t yes = e.label(), done = e.label();
    e.br(c, yes, done);
    e.place(yes);
    body();
    e.jmp(done);
    e.place(done);
  }
  Operand clamp(Operand j, Operand n) { return op(Op::MIN, op(Op::MAX, j, K(0)), op(Op::SUB, n, K(1))); }

  // One axis (texture_ref.cpp's axis()): index and 8-bit fraction.
  void axis(Operand c, Operand nf, Operand mode, Operand norm, Operand linear, bool cube, Operand& i, Operand& a) {
    uint32_t u = var(c);
    auto scale = [&]() { e.set(u, fmul(get(u), nf)); };
    if (cube) {
      scale();
    } else {
      when(norm, [&] {
        when(op(Op::SEQ, mode, K(T::kWrap)), [&] {
          e.set(u, fsub(c, ffloor(c)));
        });
        when(op(Op::SEQ, mode, K(T::kMirror)), [&] {
          Operand flo = ffloor(c);
          Operand fr = fsub(c, flo);
          Operand odd = op(Op::AND, f2i(flo, Round::Rz), K(1));
          e.set(u, op(Op::SEL, odd, fsub(K(kOne), fr), fr));
        });
        scale();
      });
    }
    // Linear: 256 (u - 0.5) (exact scaling), whose floor holds the index and the 8-bit weight.
    when(linear, [&] {
      e.set(u, fmul(fadd(get(u), K(kHalfNeg)), K(k256)));
    });
    Operand fx = f2i(get(u), Round::Rm);
    i = op(Op::SEL, linear, op(Op::SAR, fx, K(8)), fx);
    a = op(Op::AND, fx, K(255));
  }

  // An index after the address mode (texture_ref.cpp's address()); `out`
  // accumulates border misses.
  Operand address(Operand j, Operand n, Operand mode, uint32_t out) {
    Operand neg = op(Op::SLT, j, K(0)), hi = op(Op::SLE, n, j);
    Operand wrap = op(Op::SEL, neg, op(Op::ADD, j, n), op(Op::SEL, hi, op(Op::SUB, j, n), j));
    Operand mir = op(Op::SEL, neg, op(Op::SUB, K(uint32_t(-1)), j),
                     op(Op::SEL, hi, op(Op::SUB, op(Op::SUB, op(Op::ADD, n, n), K(1)), j), j));
    Operand adj = op(Op::SEL, op(Op::SEQ, mode, K(T::kWrap)), wrap, op(Op::SEL, op(Op::SEQ, mode, K(T::kMirror)), mir, j));
    Operand miss = op(Op::AND, op(Op::SEQ, mode, K(T::kBorderMode)), op(Op::OR, neg, hi));
    e.set(out, op(Op::OR, get(out), miss));
    return clamp(adj, n);
  }

  // v / (2^bits - 1) for a `bits`-bit v, correctly rounded: v repeated to
  // 64 bits (the exact quotient's binary expansion) rounded to f32, scaled.
  Operand unorm(Operand v, Operand r_lo, Operand r_hi, Operand scale) {
    Operand lo = op(Op::MUL, v, r_lo);
    Operand hi = op(Op::ADD, op(Op::MULHU, v, r_lo), op(Op::MUL, v, r_hi));
    Operand x = f.from_int64(lo, hi, false, Round::Rn);
    return op(Op::SEL, op(Op::SEQ, x, K(0)), K(0), op(Op::SUB, x, op(Op::SHL, scale, K(23))));
  }

  // The texel at in-range indices; out: the border colour instead.
  std::array<uint32_t, 4> texel(Operand x, Operand y, Operand z, Operand out, bool int_result, const Operand* fmt) {
    Operand nch = op(Op::AND, fmt[0], K(7)), lg = op(Op::AND, op(Op::SHR, fmt[0], K(4)), K(3));
    Operand kind = op(Op::AND, op(Op::SHR, fmt[0], K(8)), K(7));
    std::array<uint32_t, 4> r = {var(K(0)), var(K(0)), var(K(0)), var(K(int_result ? 1 : kOne))};
    Operand at = op(Op::ADD, fmt[1], op(Op::ADD, op(Op::MUL, z, fmt[2]), op(Op::ADD, op(Op::MUL, y, fmt[3]),
                                                                           op(Op::MUL, x, fmt[4]))));
    uint32_t border = e.label(), inside = e.label(), done = e.label();
    e.br(out, border, inside);
    e.place(border);
    for (uint32_t ch = 0; ch < 4; ++ch)
      e.set(r[ch], op(Op::SEL, op(Op::SLTU, K(ch), nch), word(T::kBorder + ch), get(r[ch])));
    e.jmp(done);
    e.place(inside);
    uint32_t words = e.label(), narrow = e.label();
    e.br(op(Op::SEQ, lg, K(2)), words, narrow);
    e.place(words);  // 32-bit channels: their bits
    for (uint32_t ch = 0; ch < 4; ++ch) {
      Operand has = op(Op::SLTU, K(ch), nch);
      Operand v = e.load(op(Op::ADD, at, op(Op::SEL, has, K(4 * ch), K(0))), 4);
      e.set(r[ch], op(Op::SEL, has, v, get(r[ch])));
    }
    e.jmp(done);
    e.place(narrow);  // 8/16-bit channels
    {
      Operand b = op(Op::SHL, K(1), lg), bits = op(Op::SHL, K(8), lg);
      Operand up = op(Op::SUB, K(32), bits);
      Operand snorm = op(Op::SEQ, kind, K(T::kSnorm));
      // The repetition constants: 8 bits 0x0101010101010101 (scale 64),
      // 16 bits 0x0001000100010001 (64), 7 bits 0x0102040810204081 (63),
      // 15 bits 0x0000200040008001 (60).
      Operand is8 = op(Op::SEQ, lg, K(0));
      Operand r_lo = op(Op::SEL, is8, op(Op::SEL, snorm, K(0x10204081u), K(0x01010101u)),
                        op(Op::SEL, snorm, K(0x40008001u), K(0x00010001u)));
      Operand r_hi = op(Op::SEL, is8, op(Op::SEL, snorm, K(0x01020408u), K(0x01010101u)),
                        op(Op::SEL, snorm, K(0x00002000u), K(0x00010001u)));
      Operand scale = op(Op::SEL, snorm, op(Op::SEL, is8, K(63), K(60)), K(64));
      for (uint32_t ch = 0; ch < 4; ++ch) {
        Operand has = op(Op::SLTU, K(ch), nch);
        Operand a = op(Op::ADD, at, op(Op::SEL, has, op(Op::MUL, b, K(ch)), K(0)));
        Operand w = e.load(op(Op::AND, a, K(~3u)), 4);
        Operand raw = op(Op::SHR, op(Op::SHL, op(Op::SHR, w, op(Op::SHL, op(Op::AND, a, K(3)), K(3))), up), up);
        Operand sv = op(Op::SAR, op(Op::SHL, raw, up), up);
        Operand v = op(Op::SEL, op(Op::SEQ, kind, K(T::kSigned)), sv, raw);
        if (!int_result) {
          Operand neg = op(Op::SLT, sv, K(0));
          Operand m = op(Op::SEL, neg, op(Op::SUB, K(0), sv), sv);
          Operand lim = op(Op::SUB, op(Op::SHR, op(Op::SHL, K(1), bits), K(1)), K(1));
          Operand un = unorm(op(Op::SEL, snorm, op(Op::MINU, m, lim), raw), r_lo, r_hi, scale);
          Operand sn = op(Op::OR, op(Op::SEL, op(Op::SLEU, lim, m), K(kOne), un), op(Op::SHL, neg, K(31)));
          v = op(Op::SEL, op(Op::SEQ, kind, K(T::kHalf)), f.f32_from_f16(op(Op::AND, raw, K(0xFFFF))), v);
          v = op(Op::SEL, op(Op::SEQ, kind, K(T::kUnorm)), un, v);
          v = op(Op::SEL, snorm, sn, v);
        }
        e.set(r[ch], op(Op::SEL, has, v, get(r[ch])));
      }
    }
    e.jmp(done);
    e.place(done);
    return r;
  }

  // Linear interpolation of the existing channels: p * (1 - a) + q * a.
  // The weights (1 - a/256, a/256) as f32 (exact).
  std::pair<Operand, Operand> weights(Operand a) {
    auto weight = [&](Operand k) {
      Operand x = u2f(k);
      return op(Op::SEL, op(Op::SEQ, k, K(0)), K(0), op(Op::SUB, x, K(8u << 23)));
    };
    return {weight(op(Op::SUB, K(256), a)), weight(a)};
  }
  std::array<uint32_t, 4> lerp(const std::array<uint32_t, 4>& p, const std::array<uint32_t, 4>& q,
                               std::pair<Operand, Operand> w, Operand nch) {
    const Operand w0 = w.first, w1 = w.second;
    std::array<uint32_t, 4> r = {var(get(p[0])), var(get(p[1])), var(get(p[2])), var(get(p[3]))};
    auto blend = [&](uint32_t ch) {
      e.set(r[ch], fadd(fmul(get(p[ch]), w0), fmul(get(q[ch]), w1)));
    };
    blend(0);
    when(op(Op::SLTU, K(1), nch), [&] { blend(1); });
    when(op(Op::SLTU, K(3), nch), [&] {
      blend(2);
      blend(3);
    });
    return r;
  }
};

}  // namespace

std::array<Operand, 4> tex(Emitter& e, Operand desc, G g, bool int_coords, const std::array<Operand, 4>& c,
                           bool int_result) {
  Fetcher t(e, desc);
  auto op = [&](Op o, Operand a, Operand b = K(0), Operand cc = K(0)) { return t.op(o, a, b, cc); };
  Operand mode = t.word(T::kMode);
  Operand fmt[5] = {t.word(T::kFormat), t.word(T::kBase), t.word(T::kSlicePitch), t.word(T::kRowPitch),
                    t.word(T::kTexelBytes)};
  Operand size[3] = {t.word(T::kWidth), t.word(T::kHeight), t.word(T::kDepth)};
  Operand norm = op(Op::AND, op(Op::SHR, mode, K(9)), K(1));
  Operand linear = int_result || int_coords ? K(0) : op(Op::AND, op(Op::SHR, mode, K(8)), K(1));
  Operand am[3] = {op(Op::AND, mode, K(3)), op(Op::AND, op(Op::SHR, mode, K(2)), K(3)),
                   op(Op::AND, op(Op::SHR, mode, K(4)), K(3))};
  Operand coord[3] = {K(0), K(0), K(0)};
  int dims = 1;
  bool sliced = false, cube = false;
  Operand slice = K(0);
  auto layer_of = [&](Operand l, uint32_t per) {
    Operand layers = per == 1 ? size[2] : op(Op::MULHU, size[2], K(0xAAAAAAABu));  // depth / 6 = (depth * ceil(2^34/6)) >> 34
    if (per != 1) layers = op(Op::SHR, layers, K(2));
    Operand last = op(Op::SEL, op(Op::SEQ, layers, K(0)), K(0), op(Op::SUB, layers, K(1)));
    return op(Op::MUL, op(Op::MINU, l, last), K(per));
  };
  switch (g) {
    case G::D1: coord[0] = c[0]; break;
    case G::D2: coord[0] = c[0]; coord[1] = c[1]; dims = 2; break;
    case G::D3: coord[0] = c[0]; coord[1] = c[1]; coord[2] = c[2]; dims = 3; break;
    case G::A1D: slice = layer_of(c[0], 1); coord[0] = c[1]; sliced = true; break;
    case G::A2D: slice = layer_of(c[0], 1); coord[0] = c[1]; coord[1] = c[2]; dims = 2; sliced = true; break;
    case G::Cube: case G::ACube: {
      const Operand* v = g == G::Cube ? c.data() : c.data() + 1;
      Operand ax = op(Op::AND, v[0], K(0x7FFFFFFF)), ay = op(Op::AND, v[1], K(0x7FFFFFFF)),
              az = op(Op::AND, v[2], K(0x7FFFFFFF));
      auto ge = [&](Operand p, Operand q) { return t.fge(p, q); };
      auto neg = [&](Operand p) { return op(Op::XOR, p, K(0x80000000u)); };
      Operand px = ge(v[0], K(0)), py = ge(v[1], K(0)), pz = ge(v[2], K(0));
      Operand isx = op(Op::AND, ge(ax, ay), ge(ax, az));
      Operand isy = op(Op::AND, op(Op::XOR, isx, K(1)), ge(ay, az));
      auto pick = [&](Operand xv, Operand yv, Operand zv) { return op(Op::SEL, isx, xv, op(Op::SEL, isy, yv, zv)); };
      Operand face = pick(op(Op::SEL, px, K(0), K(1)), op(Op::SEL, py, K(2), K(3)), op(Op::SEL, pz, K(4), K(5)));
      Operand m = pick(ax, ay, az);
      Operand s = pick(op(Op::SEL, px, neg(v[2]), v[2]), v[0], op(Op::SEL, pz, v[0], neg(v[0])));
      Operand tt = pick(neg(v[1]), op(Op::SEL, py, v[2], neg(v[2])), neg(v[1]));
      auto st = [&](Operand p) {
        return t.fmul(t.fadd(t.fdiv(p, m), K(kOne)), K(0x3F000000u));
      };
      coord[0] = st(s);
      coord[1] = st(tt);
      dims = 2;
      sliced = cube = true;
      slice = op(Op::ADD, g == G::ACube ? layer_of(c[0], 6) : K(0), face);
      am[0] = am[1] = K(T::kClamp);
      break;
    }
    default: break;
  }
  Operand nf[3] = {t.word(T::kWidthF), t.word(T::kHeightF), t.word(T::kDepthF)};
  Operand i[3] = {K(0), K(0), K(0)}, a[3] = {K(0), K(0), K(0)};
  for (int k = 0; k < dims; ++k) {
    if (int_coords) {
      i[k] = coord[k];
      // Integer coordinates: wrap and mirror clamp.
      Operand wm = op(Op::OR, op(Op::SEQ, am[k], K(T::kWrap)), op(Op::SEQ, am[k], K(T::kMirror)));
      am[k] = op(Op::SEL, wm, K(T::kClamp), am[k]);
    } else {
      t.axis(coord[k], nf[k], am[k], norm, linear, cube, i[k], a[k]);
    }
  }
  Operand nch = op(Op::AND, fmt[0], K(7));
  auto at = [&](uint32_t dx, uint32_t dy, uint32_t dz) {
    uint32_t out = t.var(K(0));
    Operand xx = t.address(op(Op::ADD, i[0], K(dx)), size[0], am[0], out);
    Operand yy = dims >= 2 ? t.address(op(Op::ADD, i[1], K(dy)), size[1], am[1], out) : K(0);
    Operand zz = dims >= 3 ? t.address(op(Op::ADD, i[2], K(dz)), size[2], am[2], out) : sliced ? slice : K(0);
    return t.texel(xx, yy, zz, t.get(out), int_result, fmt);
  };
  std::array<uint32_t, 4> res = {e.var(), e.var(), e.var(), e.var()};
  auto take = [&](const std::array<uint32_t, 4>& v) {
    for (int k = 0; k < 4; ++k) e.set(res[k], t.get(v[k]));
  };
  uint32_t lin = e.label(), point = e.label(), done = e.label();
  e.br(linear, lin, point);
  e.place(point);
  take(at(0, 0, 0));
  e.jmp(done);
  e.place(lin);
  if (!int_result && !int_coords) {
    std::pair<Operand, Operand> w[3];
    for (int k = 0; k < dims; ++k) w[k] = t.weights(a[k]);
    auto row = [&](uint32_t dy, uint32_t dz) { return t.lerp(at(0, dy, dz), at(1, dy, dz), w[0], nch); };
    auto plane = [&](uint32_t dz) { return dims == 1 ? row(0, dz) : t.lerp(row(0, dz), row(1, dz), w[1], nch); };
    take(dims == 3 ? t.lerp(plane(0), plane(1), w[2], nch) : plane(0));
  }
  e.jmp(done);
  e.place(done);
  return {t.get(res[0]), t.get(res[1]), t.get(res[2]), t.get(res[3])};
}

Operand surface_address(Emitter& e, Operand desc, G g, const std::array<Operand, 4>& c, uint32_t bytes, int mode,
                        Operand& ok) {
  Fetcher t(e, desc);
  auto op = [&](Op o, Operand a, Operand b = K(0)) { return t.op(o, a, b); };
  Operand x = K(0), y = K(0), z = K(0);
  switch (g) {
    case G::D1: x = c[0]; break;
    case G::D2: x = c[0]; y = c[1]; break;
    case G::D3: x = c[0]; y = c[1]; z = c[2]; break;
    case G::A1D: z = c[0]; x = c[1]; break;
    case G::A2D: z = c[0]; x = c[1]; y = c[2]; break;
    default: break;
  }
  Operand wb = op(Op::SUB, op(Op::MUL, t.word(T::kWidth), t.word(T::kTexelBytes)), K(bytes));
  Operand h = t.word(T::kHeight), dep = t.word(T::kDepth);
  ok = op(Op::AND, op(Op::AND, op(Op::SLE, K(0), x), op(Op::SLE, x, wb)),
          op(Op::AND, op(Op::SLTU, y, h), op(Op::SLTU, z, dep)));
  if (mode == 0) {
    uint32_t bad = e.label(), good = e.label();
    e.br(ok, good, bad);
    e.place(bad);
    e.trap(launch::kIllegalAddress);
    e.place(good);
  }
  x = op(Op::MIN, op(Op::MAX, x, K(0)), op(Op::MAX, wb, K(0)));
  y = t.clamp(y, h);
  z = t.clamp(z, dep);
  return op(Op::ADD, t.word(T::kBase), op(Op::ADD, op(Op::MUL, z, t.word(T::kSlicePitch)),
                                          op(Op::ADD, op(Op::MUL, y, t.word(T::kRowPitch)), x)));
}

}  // namespace qgpu::machine::texture
