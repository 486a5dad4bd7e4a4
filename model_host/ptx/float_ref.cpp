// The reference floating point: the host's IEEE-754 arithmetic (docs/isa.md,
// section 11).  Compiled with -frounding-math; every operation runs between
// fesetround calls on volatile operands, so the compiler neither folds nor
// moves it across the mode change.
#include "model_host/ptx/float_ref.h"

#include <cfenv>
#include <cmath>
#include <cstring>
#include <string_view>
#if defined(__x86_64__) && defined(__SSE2__)
#include <xmmintrin.h>
#endif

namespace qgpu::ptx {

FloatMods float_mods(const Instr& in) {
  FloatMods m;
  std::string_view s = in.opcode;
  size_t at = s.find('.');
  while (at != std::string_view::npos) {
    size_t next = s.find('.', at + 1);
    std::string_view p = s.substr(at + 1, next == std::string_view::npos ? std::string_view::npos : next - at - 1);
    at = next;
    if (p == "rn") m.rnd = Rnd::Rn;
    else if (p == "rz") m.rnd = Rnd::Rz;
    else if (p == "rm") m.rnd = Rnd::Rm;
    else if (p == "rp") m.rnd = Rnd::Rp;
    else if (p == "rni") m.rnd = Rnd::Rni;
    else if (p == "rzi") m.rnd = Rnd::Rzi;
    else if (p == "rmi") m.rnd = Rnd::Rmi;
    else if (p == "rpi") m.rnd = Rnd::Rpi;
    else if (p == "ftz") m.ftz = true;
    else if (p == "sat") m.sat = true;
    else if (p == "approx") m.approx = true;
    else if (p == "full") m.full = true;
    else if (p == "finite") m.testp = TestpKind::Finite;
    else if (p == "infinite") m.testp = TestpKind::Infinite;
    else if (p == "number") m.testp = TestpKind::Number;
    else if (p == "notanumber") m.testp = TestpKind::NotANumber;
    else if (p == "normal") m.testp = TestpKind::Normal;
    else if (p == "subnormal") m.testp = TestpKind::Subnormal;
  }
  return m;
}

Rnd base_rounding(Rnd r) {
  switch (r) {
    case Rnd::Rz: case Rnd::Rzi: return Rnd::Rz;
    case Rnd::Rm: case Rnd::Rmi: return Rnd::Rm;
    case Rnd::Rp: case Rnd::Rpi: return Rnd::Rp;
    default: return Rnd::Rn;
  }
}

namespace fref {
namespace {

float F(uint32_t b) {
  float f;
  std::memcpy(&f, &b, 4);
  return f;
}
uint32_t B(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}
bool is_nan(uint32_t a) { return (a & 0x7FFFFFFFu) > 0x7F800000u; }
bool is_sub(uint32_t a) { return (a & 0x7F800000u) == 0 && (a & 0x7FFFFFu) != 0; }
uint32_t flush(uint32_t a, bool ftz) { return ftz && is_sub(a) ? a & 0x80000000u : a; }

int fe_mode(Rnd r) {
  switch (base_rounding(r)) {
    case Rnd::Rz: return FE_TOWARDZERO;
    case Rnd::Rm: return FE_DOWNWARD;
    case Rnd::Rp: return FE_UPWARD;
    default: return FE_TONEAREST;
  }
}

// A value the compiler must compute here: an optimiser may otherwise move
// floating-point arithmetic across the fesetround calls (-frounding-math does
// not stop GCC from doing so), so every operand and result of an operation
// that rounds passes through this barrier.
template <class T>
T fix(T v) {
  asm volatile("" : "+x"(v) : : "memory");
  return v;
}

// The host's rounding mode as fegetround() gives it.  On x86-64 the SSE
// control register's rounding field, which governs the float and double
// arithmetic here, read with one instruction (glibc's fegetround reads the
// x87 control word through a call; fesetround sets both): its two bits are
// the FE_ constants' (nearest 0, down 0x400, up 0x800, towards zero 0xc00)
// three places up.  It was a quarter of the interpreter's time in float
// kernels that call these functions lane by lane.
inline int host_mode() {
#if defined(__x86_64__) && defined(__SSE2__) && FE_TONEAREST == 0 && FE_DOWNWARD == 0x400 && FE_UPWARD == 0x800 && \
    FE_TOWARDZERO == 0xc00
  return int((_mm_getcsr() >> 3) & 0xc00u);
#else
  return std::fegetround();
#endif
}

// Runs `f` with the host rounding mode of `r` (set only when it is not the
// mode already: the machine interpreter's native float operations call
// these functions lane by lane, mostly in the default mode).
template <class Fn>
auto rounded(Rnd r, Fn f) {
  const int old = host_mode();
  if (old == fe_mode(r)) return f();
  std::fesetround(fe_mode(r));
  auto v = f();
  std::fesetround(old);
  return v;
}

// A computed f32 result as sm_75 returns it: NaN canonical, subnormals
// flushed under .ftz (after rounding), clamped to [0, 1] under .sat (NaN: +0).
uint32_t finish(uint32_t r, bool ftz, bool sat) {
  if (is_nan(r)) r = kNaN32;
  r = flush(r, ftz);
  if (sat) {
    if (is_nan(r) || (r & 0x80000000u)) return 0;
    if (F(r) > 1.0f) return 0x3F800000u;
  }
  return r;
}

}  // namespace

bool host_rounds_to_nearest() { return host_mode() == FE_TONEAREST; }

namespace {
// The case add_rn ... fma_rn compute.
bool plain(Rnd r, bool ftz, bool sat) { return base_rounding(r) == Rnd::Rn && !ftz && !sat && host_rounds_to_nearest(); }
}  // namespace

uint32_t add(uint32_t a, uint32_t b, Rnd r, bool ftz, bool sat) {
  if (plain(r, ftz, sat)) return add_rn(a, b);
  volatile float x = F(flush(a, ftz)), y = F(flush(b, ftz));
  return finish(rounded(r, [&] { return B(fix(fix(float(x)) + fix(float(y)))); }), ftz, sat);
}
uint32_t sub(uint32_t a, uint32_t b, Rnd r, bool ftz, bool sat) {
  if (plain(r, ftz, sat)) return sub_rn(a, b);
  volatile float x = F(flush(a, ftz)), y = F(flush(b, ftz));
  return finish(rounded(r, [&] { return B(fix(fix(float(x)) - fix(float(y)))); }), ftz, sat);
}
uint32_t mul(uint32_t a, uint32_t b, Rnd r, bool ftz, bool sat) {
  if (plain(r, ftz, sat)) return mul_rn(a, b);
  volatile float x = F(flush(a, ftz)), y = F(flush(b, ftz));
  return finish(rounded(r, [&] { return B(fix(fix(float(x)) * fix(float(y)))); }), ftz, sat);
}
uint32_t fma(uint32_t a, uint32_t b, uint32_t c, Rnd r, bool ftz, bool sat) {
  if (plain(r, ftz, sat)) return fma_rn(a, b, c);
  volatile float x = F(flush(a, ftz)), y = F(flush(b, ftz)), z = F(flush(c, ftz));
  return finish(rounded(r, [&] { return B(fix(std::fmaf(fix(float(x)), fix(float(y)), fix(float(z))))); }), ftz, sat);
}

uint32_t div(uint32_t a, uint32_t b, Rnd r, bool ftz, bool sat) {
  volatile float x = F(flush(a, ftz)), y = F(flush(b, ftz));
  return finish(rounded(r, [&] { return B(fix(fix(float(x)) / fix(float(y)))); }), ftz, sat);
}
uint32_t sqrt(uint32_t a, Rnd r, bool ftz) {
  volatile float x = F(flush(a, ftz));
  return finish(rounded(r, [&] { return B(fix(std::sqrt(fix(float(x))))); }), ftz, false);
}

// 2^x by f32 fused multiply-adds rounded to nearest (docs/isa.md section
// 11.1): n = x rounded to an integer by adding and taking away 1.5 2^23, f =
// x - n exact in [-1/2, 1/2], 2^f = 1 + f q(f) with q of degree 5 in Horner
// form, then 2^n in two exact halves so that only the last product rounds.
uint32_t ex2(uint32_t a, bool ftz) {
  // tools/softfloat/coefficients.py: (2^f - 1) / f at the 6 Chebyshev nodes of [-1/2, 1/2].
  static const uint32_t q[6] = {0x3F317218u, 0x3E75FDF0u, 0x3D6357B6u, 0x3C1D952Au, 0x3AAF8448u, 0x392209C5u};
  constexpr uint32_t kOne = 0x3F800000u, kShift = 0x4B400000u;  // 1, 1.5 2^23
  a = flush(a, ftz);
  if ((a & 0x7FFFFFFFu) > 0x7F800000u) return kNaN32;
  if (int32_t(a) >= 0x43000000) return 0x7F800000u;  // x >= 128, +inf included
  if (a >= 0xC3180000u) return 0;                     // x <= -152, -inf included
  const uint32_t t = fma_rn(a, kOne, kShift);
  const uint32_t f = fma_rn(fma_rn(t, kOne, kShift | 0x80000000u), kOne | 0x80000000u, a);
  const int32_t n = int32_t(t - kShift), h = n >> 1;
  uint32_t p = q[5];
  for (int i = 4; i >= 0; --i) p = fma_rn(p, f, q[i]);
  p = fma_rn(p, f, kOne);
  const uint32_t r = fma_rn(fma_rn(p, uint32_t(h + 127) << 23, 0x80000000u), uint32_t(n - h + 127) << 23, 0x80000000u);
  return flush(r, ftz);
}

// log2 by f32 fused multiply-adds rounded to nearest (docs/isa.md section
// 11.1): a = m 2^E with m in [sqrt(1/2), sqrt(2)) (a subnormal scaled by 2^24
// first), u = m - 1, log2(a) = E + u c0 + u (u r(u) + c0lo), the smaller term
// first when E is 0 and the larger otherwise.
uint32_t lg2(uint32_t a, bool ftz) {
  // tools/softfloat/coefficients.py: log2(1 + u) / u at the 10 Chebyshev nodes
  // of [sqrt(1/2) - 1, sqrt(2) - 1]; 1/ln 2 less the f32 nearest it.
  static const uint32_t q[10] = {0x3FB8AA3Bu, 0xBF38AA38u, 0x3EF63855u, 0xBEB8AD38u, 0x3E93BD29u,
                                 0xBE755BD5u, 0x3E51C634u, 0xBE43FB51u, 0x3E3D31D0u, 0xBDDC27DBu};
  constexpr uint32_t kC0Lo = 0x32A57060u, kOne = 0x3F800000u, kShift = 0x4B400000u, kNeg = 0x80000000u;
  a = flush(a, ftz);
  const uint32_t abs = a & 0x7FFFFFFFu;
  if (abs > 0x7F800000u || (a >> 31 && abs != 0)) return kNaN32;
  if (abs == 0) return 0xFF800000u;
  if (abs == 0x7F800000u) return 0x7F800000u;
  const bool sub = abs < 0x800000u;
  const uint32_t x = sub ? fma_rn(abs, 0x4B800000u, kNeg) : abs;  // 2^24 |a|, exact
  const uint32_t fr = x & 0x7FFFFFu;
  const bool up = fr > 0x3504F3u;
  const uint32_t u = fma_rn(fr | (up ? 0x3F000000u : kOne), kOne, kOne | kNeg);
  const int32_t E = int32_t(x >> 23) - 127 + (up ? 1 : 0) - (sub ? 24 : 0);
  const uint32_t Ef = fma_rn(uint32_t(E) + kShift, kOne, kShift | kNeg);
  uint32_t r = q[9];
  for (int i = 8; i >= 1; --i) r = fma_rn(r, u, q[i]);
  const uint32_t w = fma_rn(u, r, kC0Lo);
  return E == 0 ? fma_rn(u, q[0], fma_rn(u, w, Ef)) : fma_rn(u, w, fma_rn(u, q[0], Ef));
}

namespace {

// sin (quarter 0) and cos (quarter 1) by f32 fused multiply-adds rounded to
// nearest (docs/isa.md section 11.1).  x = a below 2^22 in magnitude, else a
// zero of a's sign; sin x = x below 2^-12; k = x 2/pi rounded to an integer
// by adding and taking away 1.5 2^23 (+1 for cos, so that the quadrant
// counts from pi/2 on), r = x - k pi/2 by three fused multiply-adds with pi/2
// in three f32 parts (the first exact), z = r^2, and by the quadrant's parity
// r (1 + z S(z)) or 1 + z C(z) as w + (w z) P(z) with w = r or 1, negated in
// quadrants 2 and 3.
uint32_t sincos(uint32_t a, bool ftz, uint32_t quarter) {
  // tools/softfloat/coefficients.py: (sin r / r - 1) / z and (cos r - 1) / z at the
  // 4 Chebyshev nodes of z = r^2 in [0, (pi/4)^2]; pi/2 as P1 + P2 + P3; 2/pi.
  static const uint32_t s[4] = {0xBE2AAAABu, 0x3C088887u, 0xB95009D4u, 0x3636DF04u};
  static const uint32_t c[4] = {0xBF000000u, 0x3D2AAAA6u, 0xBAB60704u, 0x37CD3796u};
  constexpr uint32_t kP1 = 0x3FC90FDBu, kP2 = 0xB33BBD2Eu, kP3 = 0xA6F72CEDu, kTwoOverPi = 0x3F22F983u;
  constexpr uint32_t kOne = 0x3F800000u, kNeg = 0x80000000u;
  a = flush(a, ftz);
  const uint32_t abs = a & 0x7FFFFFFFu;
  if (abs >= 0x7F800000u) return kNaN32;
  const uint32_t x = abs < 0x4A800000u ? a : a & kNeg;
  // |x| < 2^-12: sin x rounds to x (and the sum below would make sin(-0) +0).
  if (quarter == 0 && (x & 0x7FFFFFFFu) < 0x39800000u) return x;
  const uint32_t shift = 0x4B400000u + quarter;  // 1.5 2^23 + quarter (the unit is 1 there)
  const uint32_t t = fma_rn(x, kTwoOverPi, shift);
  const uint32_t k = fma_rn(t, kOne, shift | kNeg);
  uint32_t r = fma_rn(k, kP1 ^ kNeg, x);
  r = fma_rn(k, kP2 ^ kNeg, r);
  r = fma_rn(k, kP3 ^ kNeg, r);
  const uint32_t z = fma_rn(r, r, kNeg);
  const bool odd = t & 1;  // t's bits less 1.5 2^23's (+ quarter) are k (+ quarter)
  const uint32_t* q = odd ? c : s;
  uint32_t p = q[3];
  for (int i = 2; i >= 0; --i) p = fma_rn(p, z, q[i]);
  const uint32_t w = (odd ? kOne : r) ^ ((t & 2) << 30);
  return fma_rn(fma_rn(w, z, kNeg), p, w);
}

}  // namespace

uint32_t sin(uint32_t a, bool ftz) { return sincos(a, ftz, 0); }
uint32_t tanh(uint32_t a, bool ftz) {
  a = flush(a, ftz);
  const uint32_t x = a & 0x7FFFFFFFu;
  if (x > 0x7F800000u) return kNaN32;
  if (x < 0x3A800000u) return a;
  const uint32_t t = ex2(mul(x, 0x4038AA3Bu, Rnd::Rn, ftz, false), ftz);
  const uint32_t q = div(0x40000000u, add(t, 0x3F800000u, Rnd::Rn, ftz, false), Rnd::Rn, ftz, false);
  return sub(0x3F800000u, q, Rnd::Rn, ftz, false) | (a & 0x80000000u);
}
uint32_t cos(uint32_t a, bool ftz) { return sincos(a, ftz, 1); }

uint32_t min(uint32_t a, uint32_t b, bool ftz) {
  a = flush(a, ftz), b = flush(b, ftz);
  if (is_nan(a) && is_nan(b)) return kNaN32;
  if (is_nan(a)) return b;
  if (is_nan(b)) return a;
  if (F(a) == F(b)) return (a | b) & 0x80000000u ? (a | b) : a;  // -0 < +0
  return F(a) < F(b) ? a : b;
}
uint32_t max(uint32_t a, uint32_t b, bool ftz) {
  a = flush(a, ftz), b = flush(b, ftz);
  if (is_nan(a) && is_nan(b)) return kNaN32;
  if (is_nan(a)) return b;
  if (is_nan(b)) return a;
  if (F(a) == F(b)) return a & b;  // +0 > -0
  return F(a) > F(b) ? a : b;
}
uint32_t abs(uint32_t a, bool ftz) { return flush(a, ftz) & 0x7FFFFFFFu; }
uint32_t neg(uint32_t a, bool ftz) { return flush(a, ftz) ^ 0x80000000u; }
uint32_t saturate(uint32_t r, bool sat) { return finish(r, false, sat); }
uint32_t copysign(uint32_t a, uint32_t b) { return (b & 0x7FFFFFFFu) | (a & 0x80000000u); }

bool testp(TestpKind k, uint32_t a) {
  const float f = F(a);
  switch (k) {
    case TestpKind::Finite: return std::isfinite(f);
    case TestpKind::Infinite: return std::isinf(f);
    case TestpKind::Number: return !std::isnan(f);
    case TestpKind::NotANumber: return std::isnan(f);
    case TestpKind::Normal: return std::isnormal(f);
    case TestpKind::Subnormal: return std::fpclassify(f) == FP_SUBNORMAL;
    default: return false;
  }
}

namespace {
// One comparison of PTX's, ordered or unordered, in either precision.
template <typename T>
bool compare_values(Cmp c, T x, T y) {
  const bool u = std::isnan(x) || std::isnan(y);
  switch (c) {
    case Cmp::Eq: return !u && x == y;
    case Cmp::Ne: return !u && x != y;
    case Cmp::Lt: return !u && x < y;
    case Cmp::Le: return !u && x <= y;
    case Cmp::Gt: return !u && x > y;
    case Cmp::Ge: return !u && x >= y;
    case Cmp::Equ: return u || x == y;
    case Cmp::Neu: return u || x != y;
    case Cmp::Ltu: return u || x < y;
    case Cmp::Leu: return u || x <= y;
    case Cmp::Gtu: return u || x > y;
    case Cmp::Geu: return u || x >= y;
    case Cmp::Num: return !u;
    case Cmp::Nan: return u;
    default: return false;
  }
}
}  // namespace

bool compare(Cmp c, uint32_t a, uint32_t b, bool ftz) {
  return compare_values(c, F(flush(a, ftz)), F(flush(b, ftz)));
}

uint32_t from_int(uint64_t v, bool is_signed, unsigned bits, Rnd r) {
  if (bits < 64) v &= (uint64_t(1) << bits) - 1;
  if (is_signed && bits < 64 && (v >> (bits - 1)) & 1) v |= ~uint64_t(0) << bits;
  volatile uint64_t u = v;
  volatile int64_t s = int64_t(v);
  return rounded(r, [&] { return B(fix(is_signed ? float(fix(int64_t(s))) : float(fix(uint64_t(u))))); });
}

uint64_t to_int(uint32_t f, bool is_signed, unsigned bits, Rnd r, bool ftz) {
  const float x = F(flush(f, ftz));
  if (std::isnan(x)) return 0;
  double d = x;  // exact
  switch (r) {
    case Rnd::Rzi: case Rnd::Rz: d = std::trunc(d); break;
    case Rnd::Rmi: case Rnd::Rm: d = std::floor(d); break;
    case Rnd::Rpi: case Rnd::Rp: d = std::ceil(d); break;
    default: d = rounded(Rnd::Rn, [&] { return fix(std::nearbyint(fix(d))); }); break;
  }
  const uint64_t mask = bits == 64 ? ~uint64_t(0) : (uint64_t(1) << bits) - 1;
  if (is_signed) {
    const double hi = std::ldexp(1.0, int(bits) - 1);  // 2^(bits-1)
    if (d >= hi) return mask >> 1;
    if (d < -hi) return (uint64_t(1) << (bits - 1)) & mask;
    return uint64_t(int64_t(d)) & mask;
  }
  const double hi = std::ldexp(1.0, int(bits));
  if (d <= 0) return 0;
  if (d >= hi) return mask;
  return uint64_t(d) & mask;
}

namespace {
double D(uint64_t b) {
  double d;
  std::memcpy(&d, &b, 8);
  return d;
}
uint64_t DB(double d) {
  uint64_t b;
  std::memcpy(&b, &d, 8);
  return std::isnan(d) ? kNaN64 : b;
}
}  // namespace

uint64_t add64(uint64_t a, uint64_t b, Rnd r) {
  volatile double x = D(a), y = D(b);
  return rounded(r, [&] { return DB(fix(fix(double(x)) + fix(double(y)))); });
}
uint64_t sub64(uint64_t a, uint64_t b, Rnd r) {
  volatile double x = D(a), y = D(b);
  return rounded(r, [&] { return DB(fix(fix(double(x)) - fix(double(y)))); });
}
uint64_t mul64(uint64_t a, uint64_t b, Rnd r) {
  volatile double x = D(a), y = D(b);
  return rounded(r, [&] { return DB(fix(fix(double(x)) * fix(double(y)))); });
}
uint64_t fma64(uint64_t a, uint64_t b, uint64_t c, Rnd r) {
  volatile double x = D(a), y = D(b), z = D(c);
  return rounded(r, [&] { return DB(fix(std::fma(fix(double(x)), fix(double(y)), fix(double(z))))); });
}
uint64_t div64(uint64_t a, uint64_t b, Rnd r) {
  volatile double x = D(a), y = D(b);
  return rounded(r, [&] { return DB(fix(fix(double(x)) / fix(double(y)))); });
}
uint64_t sqrt64(uint64_t a, Rnd r) {
  volatile double x = D(a);
  return rounded(r, [&] { return DB(fix(std::sqrt(fix(double(x))))); });
}
uint64_t min64(uint64_t a, uint64_t b) {
  const double x = D(a), y = D(b);
  if (std::isnan(x) && std::isnan(y)) return kNaN64;
  if (std::isnan(x)) return b;
  if (std::isnan(y)) return a;
  if (x == y) return (a | b) >> 63 ? (a | b) : a;
  return x < y ? a : b;
}
uint64_t max64(uint64_t a, uint64_t b) {
  const double x = D(a), y = D(b);
  if (std::isnan(x) && std::isnan(y)) return kNaN64;
  if (std::isnan(x)) return b;
  if (std::isnan(y)) return a;
  if (x == y) return a & b;
  return x > y ? a : b;
}
bool compare64(Cmp c, uint64_t a, uint64_t b) { return compare_values(c, D(a), D(b)); }

uint64_t int_to_f64(uint64_t v, bool is_signed, unsigned bits, Rnd r) {
  if (bits < 64) v &= (uint64_t(1) << bits) - 1;
  if (is_signed && bits < 64 && (v >> (bits - 1)) & 1) v |= ~uint64_t(0) << bits;
  volatile uint64_t u = v;
  volatile int64_t s = int64_t(v);
  return rounded(r, [&] { return DB(fix(is_signed ? double(fix(int64_t(s))) : double(fix(uint64_t(u))))); });
}
uint64_t f64_to_int(uint64_t bits_in, bool is_signed, unsigned bits, Rnd r) {
  double d = D(bits_in);
  if (std::isnan(d)) return 0;
  switch (r) {
    case Rnd::Rzi: case Rnd::Rz: d = std::trunc(d); break;
    case Rnd::Rmi: case Rnd::Rm: d = std::floor(d); break;
    case Rnd::Rpi: case Rnd::Rp: d = std::ceil(d); break;
    default: d = rounded(Rnd::Rn, [&] { return fix(std::nearbyint(fix(d))); }); break;
  }
  const uint64_t mask = bits == 64 ? ~uint64_t(0) : (uint64_t(1) << bits) - 1;
  if (is_signed) {
    const double hi = std::ldexp(1.0, int(bits) - 1);
    if (d >= hi) return mask >> 1;
    if (d < -hi) return (uint64_t(1) << (bits - 1)) & mask;
    return uint64_t(int64_t(d)) & mask;
  }
  if (d <= 0) return 0;
  if (d >= std::ldexp(1.0, int(bits))) return mask;
  return uint64_t(d) & mask;
}
uint64_t round_int_f64(uint64_t bits_in, Rnd r) {
  volatile double x = D(bits_in);
  switch (r) {
    case Rnd::Rzi: return DB(std::trunc(double(x)));
    case Rnd::Rmi: return DB(std::floor(double(x)));
    case Rnd::Rpi: return DB(std::ceil(double(x)));
    default: return rounded(Rnd::Rn, [&] { return DB(fix(std::nearbyint(fix(double(x))))); });
  }
}

uint64_t saturate64(uint64_t r, bool sat) {
  if (!sat) return r;
  const double d = D(r);
  if (std::isnan(d) || std::signbit(d)) return 0;
  return d > 1.0 ? 0x3FF0000000000000ull : r;
}

uint64_t to_f64(uint32_t f, bool ftz) {
  volatile float x = F(flush(f, ftz));
  const double d = fix(double(fix(float(x))));
  uint64_t b;
  std::memcpy(&b, &d, 8);
  return b;
}
uint32_t from_f64(uint64_t bits, Rnd r, bool ftz, bool sat) {
  double d;
  std::memcpy(&d, &bits, 8);
  volatile double x = d;
  return finish(rounded(r, [&] { return B(fix(float(fix(double(x))))); }), ftz, sat);
}

uint32_t round_int(uint32_t f, Rnd r, bool ftz, bool sat) {
  volatile float x = F(flush(f, ftz));
  uint32_t res;
  switch (r) {
    case Rnd::Rni: res = rounded(Rnd::Rn, [&] { return B(fix(::nearbyintf(fix(float(x))))); }); break;
    case Rnd::Rzi: res = B(::truncf(x)); break;
    case Rnd::Rmi: res = B(::floorf(x)); break;
    case Rnd::Rpi: res = B(::ceilf(x)); break;
    default: res = B(x); break;
  }
  return finish(res, ftz, sat);
}

namespace {
_Float16 H(uint32_t h) {
  const uint16_t b = uint16_t(h);
  _Float16 x;
  std::memcpy(&x, &b, 2);
  return x;
}
uint32_t HB(_Float16 x) {
  uint16_t b;
  std::memcpy(&b, &x, 2);
  return x != x ? 0x7FFFu : b;
}
}  // namespace

// The f16 neighbours of an f16 in the order of values (-0 and +0 one point).
static uint32_t step16(uint32_t b, bool up) {
  const bool neg = b & 0x8000u, zero = (b & 0x7FFFu) == 0;
  if (zero) return up ? 0x0001u : 0x8001u;
  return (neg != up) ? b + 1 : b - 1;
}

namespace {
// The f16 of the exact value x (a long double holds every f32, f64 and
// 64-bit integer exactly) in rounding r: the host's one rounding to nearest,
// then a neighbour for the directed ones.
// `neg`: the sign a zero result takes.
uint32_t f16_of(long double x, Rnd r, bool neg) {
  const _Float16 h = _Float16(x);
  const uint32_t hb = HB(h);
  const long double hv = (long double)h;
  if (hv == x || r == Rnd::Rn || r == Rnd::None) return hv == x && x == 0 ? (neg ? 0x8000u : 0u) : hb;
  const uint32_t lower = hv < x ? hb : step16(hb, false), upper = hv > x ? hb : step16(hb, true);
  if (r == Rnd::Rm) return lower;
  if (r == Rnd::Rp) return upper;
  return x > 0 ? lower : upper;  // toward zero
}
}  // namespace

uint32_t f16_from_f32(uint32_t f, Rnd r) {
  const float x = F(f);
  if (x != x) return 0x7FFFu;
  return f16_of(x, r, f >> 31);
}

uint32_t f32_from_f16(uint32_t h) {
  const float v = float(H(h));
  return v != v ? kNaN32 : B(v);
}

uint32_t f16_from_int(uint64_t v, bool is_signed, unsigned bits, Rnd r) {
  if (bits < 64) v &= (uint64_t(1) << bits) - 1;
  if (is_signed && bits < 64 && (v >> (bits - 1)) & 1) v |= ~uint64_t(0) << bits;
  const long double x = is_signed ? (long double)int64_t(v) : (long double)v;  // exact: 64 significand bits
  return f16_of(x, r, false);
}
uint32_t f16_from_f64(uint64_t d, Rnd r) {
  const double x = D(d);
  if (x != x) return 0x7FFFu;
  return f16_of(x, r, d >> 63);
}
uint64_t int_from_f16(uint32_t h, bool is_signed, unsigned bits, Rnd r) {
  const double x = double(H(h));  // exact; a NaN stays one, which f64_to_int makes 0
  uint64_t d;
  std::memcpy(&d, &x, 8);
  return f64_to_int(d, is_signed, bits, r);
}
uint64_t f64_from_f16(uint32_t h) { return to_f64(f32_from_f16(h), false); }
uint32_t add16(uint32_t a, uint32_t b) { return HB(_Float16((__float128)H(a) + (__float128)H(b))); }
uint32_t sub16(uint32_t a, uint32_t b) { return HB(_Float16((__float128)H(a) - (__float128)H(b))); }
uint32_t mul16(uint32_t a, uint32_t b) { return HB(_Float16((__float128)H(a) * (__float128)H(b))); }
uint32_t fma16(uint32_t a, uint32_t b, uint32_t c) {
  return HB(_Float16((__float128)H(a) * (__float128)H(b) + (__float128)H(c)));
}
uint32_t ex2_16(uint32_t h, bool ftz) {
  return flush16(f16_from_f32(ex2(f32_from_f16(flush16(h, ftz)), false), Rnd::Rn), ftz);
}
uint32_t tanh16(uint32_t h, bool ftz) {
  return flush16(f16_from_f32(tanh(f32_from_f16(flush16(h, ftz)), false), Rnd::Rn), ftz);
}

namespace {
// The high word of an approximate f64 result from r in (1/2, 1], the f32 that
// stands for its significand, with sign s and the exponent field `base` that
// r = 1 would have: r's top 20 fraction bits (the rest dropped: the low word
// is 0), a result below the normal range flushed to a zero of sign s.
uint64_t approx64(uint32_t s, int base, uint32_t r) {
  const int ex = base + int(r >> 23) - 127;
  if (ex <= 0) return uint64_t(s) << 32;
  return uint64_t(s | uint32_t(ex) << 20 | (r & 0x7FFFFFu) >> 3) << 32;
}
}  // namespace

uint64_t rcp_approx64(uint64_t a) {
  const uint32_t hi = uint32_t(a >> 32), s = hi & 0x80000000u, ex = (hi >> 20) & 0x7FF, f = hi & 0xFFFFF;
  if (ex == 0x7FF) return f ? kNaN64Approx : uint64_t(s) << 32;  // NaN; +-inf gives +-0
  if (ex == 0) return uint64_t(s | 0x7FF00000u) << 32;            // +-0 and (flushed) subnormals: +-inf
  // a = 2^(ex - 1023) m, m = 1.f in [1, 2): 1/a = 2^(1023 - ex) (1/m).
  const uint32_t r = div(0x3F800000u, 0x3F800000u | f << 3, Rnd::Rn, false, false);
  return approx64(s, 2046 - int(ex), r);
}

uint64_t rsqrt_approx64(uint64_t a) {
  const uint32_t hi = uint32_t(a >> 32), s = hi & 0x80000000u, ex = (hi >> 20) & 0x7FF, f = hi & 0xFFFFF;
  if (ex == 0x7FF && f) return kNaN64Approx;
  if (ex == 0) return uint64_t(s | 0x7FF00000u) << 32;  // +-0 and (flushed) subnormals: +-inf
  if (s) return kNaN64Approx;                           // negative (-inf too)
  if (ex == 0x7FF) return 0;                            // +inf
  // a = 2^(2k) x with x = m or 2m in [1, 4) (odd = the unbiased exponent is
  // odd): 1/sqrt(a) = 2^(-k) rsqrt(x).
  const uint32_t odd = (ex & 1) ^ 1;
  const uint32_t x = (127 + odd) << 23 | f << 3;
  const uint32_t r = div(0x3F800000u, sqrt(x, Rnd::Rn, false), Rnd::Rn, false, false);
  return approx64(0, 1023 - (int(ex) - 1023 - int(odd)) / 2, r);
}

namespace {
using Q = __float128;
// The magnitude of the bf16 pattern t (0 .. 0x7F80); 0x7F80 stands for
// 2^128, the next grid point after the largest finite value (rounding as
// if the exponent were unbounded, then overflow).
Q bf_mag(uint32_t t) { return t >= 0x7F80u ? Q(0x1p128) : Q(F(t << 16)); }
// v + e exactly (e a residual far below v's last bit, or 0) rounded to bf16.
uint32_t bf_round(Q v, Q e, Rnd r) {
  if (v != v) return 0x7FFFu;
  const bool neg = __builtin_signbit(double(v));
  const uint32_t sgn = neg ? 0x8000u : 0;
  if (v == 0) return sgn;
  const Q a = neg ? -v : v, em = neg ? -e : e;
  if (a - a != 0) return sgn | 0x7F80u;  // an infinity
  // T: the largest grid magnitude <= the exact |value|.
  uint32_t lo = 0, hi = 0x7F80u;
  while (lo < hi) {
    const uint32_t mid = (lo + hi + 1) / 2;
    if (bf_mag(mid) <= a) lo = mid; else hi = mid - 1;
  }
  uint32_t T = lo;
  if (bf_mag(T) == a && em < 0) --T;
  const bool exact = bf_mag(T) == a && em == 0;
  if (T >= 0x7F80u) {  // |value| >= 2^128
    const bool to_inf = r == Rnd::Rn || r == Rnd::None || (r == Rnd::Rm && neg) || (r == Rnd::Rp && !neg);
    return sgn | (to_inf ? 0x7F80u : 0x7F7Fu);
  }
  if (exact) return sgn | T;
  const uint32_t U = T + 1;
  const Q M = (bf_mag(T) + bf_mag(U)) / 2;
  const int cmp = a < M ? -1 : a > M ? 1 : em < 0 ? -1 : em > 0 ? 1 : 0;
  switch (r) {
    case Rnd::Rz: return sgn | T;
    case Rnd::Rm: return sgn | (neg ? U : T);
    case Rnd::Rp: return sgn | (neg ? T : U);
    default: return sgn | (cmp < 0 ? T : cmp > 0 ? U : (T & 1) ? U : T);
  }
}
Q bf_val(uint32_t h) { return Q(F((h & 0xFFFFu) << 16)); }
// p + q rounded to bf16, the sum's rounding error recovered (TwoSum).
uint32_t bf_sum(Q p, Q q) {
  const Q s = p + q;
  if (s != s) return 0x7FFFu;
  if (s - s != 0) return bf_round(s, 0, Rnd::Rn);  // an infinity
  const Q bb = s - p;
  const Q err = (p - (s - bb)) + (q - bb);
  return bf_round(s, err, Rnd::Rn);
}
}  // namespace

uint32_t bf16_from_f32(uint32_t f, Rnd r) {
  const float x = F(f);
  if (x != x) return 0x7FFFu;
  if (x == 0) return (f >> 16) & 0x8000u;
  return bf_round(Q(x), 0, r);
}
uint32_t f32_from_bf16(uint32_t h) {
  const float v = F((h & 0xFFFFu) << 16);
  return v != v ? kNaN32 : B(v);
}
uint32_t add_bf16(uint32_t a, uint32_t b) { return bf_sum(bf_val(a), bf_val(b)); }
uint32_t sub_bf16(uint32_t a, uint32_t b) { return bf_sum(bf_val(a), -bf_val(b)); }
uint32_t mul_bf16(uint32_t a, uint32_t b) {
  return bf_round(bf_val(a) * bf_val(b), 0, Rnd::Rn);  // the product is exact (16 significant bits)
}
uint32_t fma_bf16(uint32_t a, uint32_t b, uint32_t c) { return bf_sum(bf_val(a) * bf_val(b), bf_val(c)); }

}  // namespace fref
}  // namespace qgpu::ptx
