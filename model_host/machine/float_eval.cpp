// The native floating-point operations' execution (float_eval.h), through
// model_host/ptx/float_ref.h.
#include "model_host/machine/float_eval.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif

#include "model_host/ptx/float_ref.h"

namespace qgpu::machine {
namespace {

namespace fref = ptx::fref;
using ptx::Rnd;

// One operation over the lanes: `f(a, b, c)` for each lane in mask (a full
// CUDA warp in a loop of known length).
template <class F>
inline void over(const uint32_t* a, const uint32_t* b, const uint32_t* c, uint32_t* d, uint32_t n, uint64_t mask,
                 F f) {
  const uint64_t full = n >= 64 ? ~uint64_t(0) : (uint64_t(1) << n) - 1;
  if ((mask & full) == full) {
    if (n == Params::kCudaWarp)
      for (uint32_t l = 0; l < Params::kCudaWarp; ++l) d[l] = f(a[l], b[l], c[l]);
    else
      for (uint32_t l = 0; l < n; ++l) d[l] = f(a[l], b[l], c[l]);
    return;
  }
  for (uint32_t l = 0; l < n; ++l)
    if (mask >> l & 1) d[l] = f(a[l], b[l], c[l]);
}

// fma .rn over a whole CUDA warp with the host's FMA instructions (the same
// exactly rounded result as fmaf, which the baseline x86-64 build calls per
// lane): used when the processor has them.
#if defined(__x86_64__) && defined(__GNUC__)
[[gnu::target("fma")]] void fma_rn_warp_hw(const uint32_t* a, const uint32_t* b, const uint32_t* c, uint32_t* d) {
  // Four lanes at a time; a NaN result becomes the canonical NaN (fref::canonical).
  const __m128i abs = _mm_set1_epi32(0x7FFFFFFF), inf = _mm_set1_epi32(0x7F800000),
                nan = _mm_set1_epi32(int(fref::kNaN32));
  for (uint32_t l = 0; l < Params::kCudaWarp; l += 4) {
    const __m128 x = _mm_loadu_ps(reinterpret_cast<const float*>(a + l));
    const __m128 y = _mm_loadu_ps(reinterpret_cast<const float*>(b + l));
    const __m128 z = _mm_loadu_ps(reinterpret_cast<const float*>(c + l));
    const __m128i r = _mm_castps_si128(_mm_fmadd_ps(x, y, z));
    const __m128i isnan = _mm_cmpgt_epi32(_mm_and_si128(r, abs), inf);
    const __m128i out = _mm_or_si128(_mm_andnot_si128(isnan, r), _mm_and_si128(isnan, nan));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(d + l), out);
  }
}
const bool kHostFma = __builtin_cpu_supports("fma");
#else
void fma_rn_warp_hw(const uint32_t*, const uint32_t*, const uint32_t*, uint32_t*) {}
const bool kHostFma = false;
#endif

}  // namespace

static_assert(int(FRnd::Rpi) == int(ptx::Rnd::Rpi) && int(FRnd::Rn) == int(ptx::Rnd::Rn) &&
              int(FRnd::Rni) == int(ptx::Rnd::Rni));
ptx::Rnd to_ptx(FRnd r) { return ptx::Rnd(uint8_t(r)); }
FRnd from_ptx(ptx::Rnd r) { return FRnd(uint8_t(r)); }

ptx::Cmp to_ptx(FCmp c) {
  using C = ptx::Cmp;
  switch (c) {
    case FCmp::None: return C::None;
    case FCmp::Eq: return C::Eq;
    case FCmp::Ne: return C::Ne;
    case FCmp::Lt: return C::Lt;
    case FCmp::Le: return C::Le;
    case FCmp::Gt: return C::Gt;
    case FCmp::Ge: return C::Ge;
    case FCmp::Equ: return C::Equ;
    case FCmp::Neu: return C::Neu;
    case FCmp::Ltu: return C::Ltu;
    case FCmp::Leu: return C::Leu;
    case FCmp::Gtu: return C::Gtu;
    case FCmp::Geu: return C::Geu;
    case FCmp::Num: return C::Num;
    case FCmp::Nan: return C::Nan;
  }
  return C::None;
}

FCmp from_ptx(ptx::Cmp c) {
  using C = ptx::Cmp;
  switch (c) {
    case C::Eq: return FCmp::Eq;
    case C::Ne: return FCmp::Ne;
    case C::Lt: return FCmp::Lt;
    case C::Le: return FCmp::Le;
    case C::Gt: return FCmp::Gt;
    case C::Ge: return FCmp::Ge;
    case C::Equ: return FCmp::Equ;
    case C::Neu: return FCmp::Neu;
    case C::Ltu: return FCmp::Ltu;
    case C::Leu: return FCmp::Leu;
    case C::Gtu: return FCmp::Gtu;
    case C::Geu: return FCmp::Geu;
    case C::Num: return FCmp::Num;
    case C::Nan: return FCmp::Nan;
    default: return FCmp::None;
  }
}

uint32_t eval_float(const Instr& in, uint32_t a, uint32_t b, uint32_t c) {
  uint32_t d = 0;
  eval_float_lanes(in, &a, &b, &c, &d, 1, 1);
  return d;
}

void eval_float_lanes(const Instr& in, const uint32_t* a, const uint32_t* b, const uint32_t* c, uint32_t* d,
                      uint32_t n, uint64_t mask, int host_nearest) {
  const FloatMod& m = in.fmod;
  const Rnd r = to_ptx(m.rnd);
  const bool ftz = m.ftz, sat = m.sat;
  const ptx::Cmp cmp = to_ptx(m.cmp);
  auto run = [&](auto f) { over(a, b, c, d, n, mask, f); };
  if ((r == Rnd::None || r == Rnd::Rn) && !ftz && !sat &&
      (host_nearest >= 0 ? host_nearest != 0 : fref::host_rounds_to_nearest())) {
    // The common case inline over the lanes (float_ref.h: the same functions
    // fref::add ... fma use for it).
    switch (in.op) {
      case Op::FADD: return run([](uint32_t x, uint32_t y, uint32_t) { return fref::add_rn(x, y); });
      case Op::FSUB: return run([](uint32_t x, uint32_t y, uint32_t) { return fref::sub_rn(x, y); });
      case Op::FMUL: return run([](uint32_t x, uint32_t y, uint32_t) { return fref::mul_rn(x, y); });
      case Op::FFMA:
        if (kHostFma && n == Params::kCudaWarp && mask == (uint64_t(1) << Params::kCudaWarp) - 1)
          return fma_rn_warp_hw(a, b, c, d);
        return run([](uint32_t x, uint32_t y, uint32_t z) { return fref::fma_rn(x, y, z); });
      default: break;
    }
  }
  switch (in.op) {
    case Op::FADD: return run([&](uint32_t x, uint32_t y, uint32_t) { return fref::add(x, y, r, ftz, sat); });
    case Op::FSUB: return run([&](uint32_t x, uint32_t y, uint32_t) { return fref::sub(x, y, r, ftz, sat); });
    case Op::FMUL: return run([&](uint32_t x, uint32_t y, uint32_t) { return fref::mul(x, y, r, ftz, sat); });
    case Op::FFMA: return run([&](uint32_t x, uint32_t y, uint32_t z) { return fref::fma(x, y, z, r, ftz, sat); });
    case Op::FDIV: return run([&](uint32_t x, uint32_t y, uint32_t) { return fref::div(x, y, r, ftz, sat); });
    case Op::FSQRT: return run([&](uint32_t x, uint32_t, uint32_t) { return fref::sqrt(x, r, ftz); });
    case Op::FMIN: return run([&](uint32_t x, uint32_t y, uint32_t) { return fref::min(x, y, ftz); });
    case Op::FMAX: return run([&](uint32_t x, uint32_t y, uint32_t) { return fref::max(x, y, ftz); });
    case Op::FCMP:
      return run([&](uint32_t x, uint32_t y, uint32_t) { return uint32_t(fref::compare(cmp, x, y, ftz)); });
    case Op::I2F:
      return run([&](uint32_t x, uint32_t, uint32_t) { return fref::saturate(fref::from_int(x, true, 32, r), sat); });
    case Op::U2F:
      return run([&](uint32_t x, uint32_t, uint32_t) { return fref::saturate(fref::from_int(x, false, 32, r), sat); });
    case Op::F2I: return run([&](uint32_t x, uint32_t, uint32_t) { return uint32_t(fref::to_int(x, true, 32, r, ftz)); });
    case Op::F2U:
      return run([&](uint32_t x, uint32_t, uint32_t) { return uint32_t(fref::to_int(x, false, 32, r, ftz)); });
    case Op::FRINT: return run([&](uint32_t x, uint32_t, uint32_t) { return fref::round_int(x, r, ftz, sat); });
    case Op::FEX2: return run([&](uint32_t x, uint32_t, uint32_t) { return fref::ex2(x, ftz); });
    case Op::FLG2: return run([&](uint32_t x, uint32_t, uint32_t) { return fref::lg2(x, ftz); });
    case Op::FSIN: return run([&](uint32_t x, uint32_t, uint32_t) { return fref::sin(x, ftz); });
    case Op::FCOS: return run([&](uint32_t x, uint32_t, uint32_t) { return fref::cos(x, ftz); });
    case Op::FTANH: return run([&](uint32_t x, uint32_t, uint32_t) { return fref::tanh(x, ftz); });
    default: break;  // not a float op
  }
}

namespace {

// An f64 result as sm_75 returns it (fref's DB): NaN canonical.
inline uint64_t canonical64(uint64_t r) {
  return (r & 0x7FFFFFFFFFFFFFFFull) > 0x7FF0000000000000ull ? fref::kNaN64 : r;
}
inline double as_double(uint64_t b) { return __builtin_bit_cast(double, b); }
inline uint64_t as_bits64(double x) { return __builtin_bit_cast(uint64_t, x); }

// One f64 operation over the lanes: `f(l)` is lane l's 64-bit result, of
// which the instruction keeps the word `hi` selects.
// Every lane of a whole CUDA warp in a loop of known length, as over() does.
template <class F>
inline void over64(uint32_t* d, uint32_t n, uint64_t mask, bool hi, F f) {
  const uint64_t full = n >= 64 ? ~uint64_t(0) : (uint64_t(1) << n) - 1;
  if ((mask & full) == full) {
    auto all = [&](uint32_t count) {
      if (hi)
        for (uint32_t l = 0; l < count; ++l) d[l] = uint32_t(f(l) >> 32);
      else
        for (uint32_t l = 0; l < count; ++l) d[l] = uint32_t(f(l));
    };
    if (n == Params::kCudaWarp) return all(Params::kCudaWarp);
    return all(n);
  }
  const unsigned sh = hi ? 32 : 0;
  for (uint32_t l = 0; l < n; ++l)
    if (mask >> l & 1) d[l] = uint32_t(f(l) >> sh);
}

}  // namespace

uint32_t eval_float(const Instr& in, const uint32_t (&v)[kMaxArity]) {
  const uint32_t* s[kMaxArity] = {&v[0], &v[1], &v[2], &v[3], &v[4], &v[5]};
  uint32_t d = 0;
  eval_float_lanes(in, s, &d, 1, 1);
  return d;
}

void eval_float_lanes(const Instr& in, const uint32_t* const (&s)[kMaxArity], uint32_t* d, uint32_t n,
                      uint64_t mask, int host_nearest) {
  if (!is_f64(in.op)) return eval_float_lanes(in, s[0], s[1], s[2], d, n, mask, host_nearest);
  const FloatMod& m = in.fmod;
  const Rnd r = to_ptx(m.rnd);
  const bool hi = m.hi;
  // Source k's f64 value (or 64-bit integer) in lane l: words (2k, 2k + 1).
  auto x = [&](int k, uint32_t l) { return uint64_t(s[2 * k][l]) | uint64_t(s[2 * k + 1][l]) << 32; };
  auto run = [&](auto f) { over64(d, n, mask, hi, f); };
  const bool nearest = (r == Rnd::None || r == Rnd::Rn) &&
                       (host_nearest >= 0 ? host_nearest != 0 : fref::host_rounds_to_nearest());
  if (nearest) {
    // Round to nearest in the host's current mode, inline (the same
    // operations fref::add64 ... compute for it).
    auto D = [&](int k, uint32_t l) { return as_double(x(k, l)); };
    switch (in.op) {
      case Op::DADD: return run([&](uint32_t l) { return canonical64(as_bits64(D(0, l) + D(1, l))); });
      case Op::DSUB: return run([&](uint32_t l) { return canonical64(as_bits64(D(0, l) - D(1, l))); });
      case Op::DMUL: return run([&](uint32_t l) { return canonical64(as_bits64(D(0, l) * D(1, l))); });
      case Op::DFMA:
        return run([&](uint32_t l) { return canonical64(as_bits64(__builtin_fma(D(0, l), D(1, l), D(2, l)))); });
      default: break;
    }
  }
  if (in.op == Op::F2D && !m.ftz && !m.sat)  // exact: the host's conversion, as fref::to_f64 (a NaN quieted, its payload kept)
    return run([&](uint32_t l) { return as_bits64(double(fref::as_float(s[0][l]))); });
  switch (in.op) {
    case Op::DADD: return run([&](uint32_t l) { return fref::add64(x(0, l), x(1, l), r); });
    case Op::DSUB: return run([&](uint32_t l) { return fref::sub64(x(0, l), x(1, l), r); });
    case Op::DMUL: return run([&](uint32_t l) { return fref::mul64(x(0, l), x(1, l), r); });
    case Op::DFMA: return run([&](uint32_t l) { return fref::fma64(x(0, l), x(1, l), x(2, l), r); });
    case Op::DDIV: return run([&](uint32_t l) { return fref::div64(x(0, l), x(1, l), r); });
    case Op::DSQRT: return run([&](uint32_t l) { return fref::sqrt64(x(0, l), r); });
    case Op::DMIN: return run([&](uint32_t l) { return fref::min64(x(0, l), x(1, l)); });
    case Op::DMAX: return run([&](uint32_t l) { return fref::max64(x(0, l), x(1, l)); });
    case Op::DCMP: {
      const ptx::Cmp c = to_ptx(m.cmp);
      return run([&](uint32_t l) { return uint64_t(fref::compare64(c, x(0, l), x(1, l))); });
    }
    case Op::F2D: return run([&](uint32_t l) { return fref::saturate64(fref::to_f64(s[0][l], m.ftz), m.sat); });
    case Op::D2F: return run([&](uint32_t l) { return uint64_t(fref::from_f64(x(0, l), r, m.ftz, m.sat)); });
    case Op::L2D: return run([&](uint32_t l) { return fref::saturate64(fref::int_to_f64(x(0, l), true, 64, r), m.sat); });
    case Op::UL2D:
      return run([&](uint32_t l) { return fref::saturate64(fref::int_to_f64(x(0, l), false, 64, r), m.sat); });
    case Op::D2I: return run([&](uint32_t l) { return fref::f64_to_int(x(0, l), true, 32, r); });
    case Op::D2U: return run([&](uint32_t l) { return fref::f64_to_int(x(0, l), false, 32, r); });
    case Op::D2L: return run([&](uint32_t l) { return fref::f64_to_int(x(0, l), true, 64, r); });
    case Op::D2UL: return run([&](uint32_t l) { return fref::f64_to_int(x(0, l), false, 64, r); });
    case Op::DRINT: return run([&](uint32_t l) { return fref::saturate64(fref::round_int_f64(x(0, l), r), m.sat); });
    default: break;
  }
}

}  // namespace qgpu::machine
