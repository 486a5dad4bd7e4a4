// The built-in cuda_bf16.h, end to end: kernels compiled by our NVRTC and run
// on the PTX-level reference interpreter.  The bfloat16 results are checked
// bit for bit against a rounding routine written here from the definition
// (exact value, then one rounding to 8 significant bits with float's
// exponent range), which shares nothing with the header; every NaN the
// header makes is 0x7FFF, and widening to float keeps a NaN's bits.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "device_fixture.h"
#include "ref_round.h"

namespace {

using qgpu::launch::LaunchResult;
using qgpu::test::Device;
using qgpu::test::kDown;
using qgpu::test::kNearest;
using qgpu::test::kTowardZero;
using qgpu::test::kUp;
using qgpu::test::Mode;
using qgpu::test::u128;

// ---- bfloat16 on the host, bit by bit
constexpr uint16_t kNaN = 0x7FFF;

uint16_t ref_round(bool neg, u128 m, int e, Mode mode) { return qgpu::test::ref_round16<7>(neg, m, e, mode); }

bool is_nan(uint16_t h) { return (h & 0x7FFF) > 0x7F80; }

double bf_value(uint16_t h) { return qgpu::test::value16<7>(h); }

// A finite bfloat16 as (-1)^neg * m * 2^e (m < 2^8).
void bf_parts(uint16_t h, bool& neg, uint64_t& m, int& e) { qgpu::test::parts16<7>(h, neg, m, e); }

// A double rounded to bfloat16 (specials kept; a NaN is 0x7FFF).
uint16_t ref_from_double(double d, Mode mode = kNearest) { return qgpu::test::from_double16<7>(d, mode); }

uint16_t ref_from_float(float f, Mode mode = kNearest) { return ref_from_double(double(f), mode); }

template <typename Int>
uint16_t ref_from_int(Int v, Mode mode) {
  return qgpu::test::from_int16<7>(v, mode);
}

// A bfloat16 to an integer type, rounded by `mode`, saturated, a NaN giving 0.
template <typename Int>
Int ref_to_int(uint16_t h, Mode mode) {
  return qgpu::test::to_int16<7, Int>(h, mode);
}

// x + y, x = (-1)^nx mx 2^ex and y likewise (m < 2^17, not both 0, the sum not
// 0), rounded once to nearest even.  A term whose top bit lies more than 24
// places below the other's last place only tells on which side of that
// one the sum lies, so it is replaced by a smaller one of its sign (2^40
// times below the last place), which keeps the integer sum in 64 bits.
uint16_t ref_sum(bool nx, uint64_t mx, int ex, bool ny, uint64_t my, int ey) {
  if (my == 0) return ref_round(nx, mx, ex, kNearest);
  if (mx == 0) return ref_round(ny, my, ey, kNearest);
  if (ey + 40 < ex) my = 1, ey = ex - 40;
  if (ex + 40 < ey) mx = 1, ex = ey - 40;
  const int e = std::min(ex, ey);
  const __int128 x = (__int128)(u128(mx) << (ex - e)), y = (__int128)(u128(my) << (ey - e));
  const __int128 sum = (nx ? -x : x) + (ny ? -y : y);
  return ref_round(sum < 0, u128(sum < 0 ? -sum : sum), e, kNearest);
}

// The arithmetic.  Specials, and exact zeros with their IEEE signs, come
// from double (a double result of bfloat16 operands is 0 only when the
// exact one is); the rest is rounded from the exact value.
bool special(double r, std::initializer_list<uint16_t> ops) {
  for (uint16_t h : ops)
    if (!std::isfinite(bf_value(h))) return true;
  return r == 0;
}
uint16_t ref_add(uint16_t a, uint16_t b) {
  const double r = bf_value(a) + bf_value(b);
  if (special(r, {a, b})) return ref_from_double(r);
  bool na, nb;
  uint64_t ma, mb;
  int ea, eb;
  bf_parts(a, na, ma, ea), bf_parts(b, nb, mb, eb);
  return ref_sum(na, ma, ea, nb, mb, eb);
}
uint16_t ref_sub(uint16_t a, uint16_t b) { return ref_add(a, is_nan(b) ? b : uint16_t(b ^ 0x8000)); }
uint16_t ref_mul(uint16_t a, uint16_t b) {
  return ref_from_double(bf_value(a) * bf_value(b));  // exact in double: 16 bits, exponents within range
}
uint16_t ref_fma(uint16_t a, uint16_t b, uint16_t c) {
  const double r = std::fma(bf_value(a), bf_value(b), bf_value(c));
  if (special(r, {a, b, c})) return ref_from_double(r);
  bool na, nb, nc;
  uint64_t ma, mb, mc;
  int ea, eb, ec;
  bf_parts(a, na, ma, ea), bf_parts(b, nb, mb, eb), bf_parts(c, nc, mc, ec);
  return ref_sum(na != nb, ma * mb, ea + eb, nc, mc, ec);
}
uint16_t ref_div(uint16_t a, uint16_t b) {
  const double va = bf_value(a), vb = bf_value(b);
  if (!std::isfinite(va) || !std::isfinite(vb) || va == 0 || vb == 0) return ref_from_double(va / vb);
  bool na, nb;
  uint64_t ma, mb;
  int ea, eb;
  bf_parts(a, na, ma, ea), bf_parts(b, nb, mb, eb);
  u128 q = (u128(ma) << 64) / mb, rest = (u128(ma) << 64) % mb;
  int e = ea - eb - 64;
  if (rest) q = q << 1 | 1, --e;  // a sticky bit below the 57 or more exact ones
  return ref_round(na != nb, q, e, kNearest);
}

// The _sat forms: the rounded result clamped to [0, 1], a NaN giving +0.
uint16_t saturate(uint16_t h) {
  if (is_nan(h) || (h & 0x8000)) return 0;
  return h > 0x3F80 ? 0x3F80 : h;
}
uint16_t ref_neg(uint16_t h) { return is_nan(h) ? kNaN : uint16_t(h ^ 0x8000); }
uint16_t ref_abs(uint16_t h) { return is_nan(h) ? kNaN : uint16_t(h & 0x7FFF); }

// max/min: a NaN operand gives the other, two NaNs 0x7FFF, +0 above -0;
// `nan`: a NaN operand gives 0x7FFF.
uint16_t ref_max(uint16_t a, uint16_t b, bool max, bool nan = false) {
  if (is_nan(a) || is_nan(b)) return nan || (is_nan(a) && is_nan(b)) ? kNaN : is_nan(a) ? b : a;
  const double va = bf_value(a), vb = bf_value(b);
  if (va == vb) return max ? a & b : a | b;  // only +0 and -0 differ in their bits
  return (va > vb) == max ? a : b;
}

// bfloat16s to test: random words in classes (any bits, values near 1,
// subnormals and the smallest normals), the edge cases spread among them.
std::vector<uint16_t> test_bf16s(size_t n, uint64_t seed) {
  static const uint16_t edges[] = {0x0000, 0x8000, 0x0001, 0x807F, 0x0080, 0x3F80, 0xBF80, 0x3F00, 0x3FC0, 0x4040,
                                   0xC040, 0x7F7F, 0xFF7F, 0x7F80, 0xFF80, 0x7FC0, 0x7F81, 0xFFFF, 0x3EAB, 0x0040};
  std::vector<uint16_t> v(n);
  for (size_t i = 0; i < n; ++i) {
    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    const uint16_t w = uint16_t(seed >> 40), field = uint16_t(seed >> 56);
    switch (i % 4) {
      case 0: v[i] = w; break;
      case 1: v[i] = uint16_t((w & 0x807F) | (120 + field % 16) << 7); break;  // 2^-7 .. 2^8
      case 2: v[i] = uint16_t((w & 0x807F) | (field % 3) << 7); break;         // subnormal, smallest normals
      default: v[i] = uint16_t((w & 0x807F) | (100 + field % 56) << 7); break;  // 2^-27 .. 2^28
    }
  }
  for (size_t i = 0; i < sizeof edges / sizeof *edges && i < n; ++i) v[(i * 7) % n] = edges[i];
  return v;
}

uint32_t float_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
float bits_float(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

std::string hex(unsigned v) {
  char s[16];
  std::snprintf(s, sizeof s, "0x%04x", v);
  return s;
}

#define EXPECT_BF(got, want) EXPECT_EQ(hex(got), hex(want)) << #got

TEST_F(Device, Bf16FromFloatRoundsInEachMode) {
  build(R"(
#include <cuda_bf16.h>
__device__ unsigned b(__nv_bfloat16 h) { return __bfloat16_as_ushort(h); }
__device__ unsigned w(__nv_bfloat162 h) { __nv_bfloat162_raw r = h; return r.x | (unsigned)r.y << 16; }
extern "C" __global__ void from_float(const float* in, unsigned* out, unsigned n) {
  const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  const float f = in[i], g = in[(i + 1) % n];
  const __nv_bfloat16 implicit = f;
  unsigned* o = out + 5 * i;
  o[0] = b(__float2bfloat16_rn(f)) | b(__float2bfloat16_rz(f)) << 16;
  o[1] = b(__float2bfloat16_rd(f)) | b(__float2bfloat16_ru(f)) << 16;
  o[2] = b(__float2bfloat16(f)) | b(implicit) << 16;
  o[3] = w(__floats2bfloat162_rn(f, g));
  o[4] = __float_as_uint(__bfloat162float(__ushort_as_bfloat16((unsigned short)__float_as_uint(f))));
}
)");
  const unsigned n = 2048;
  std::vector<uint32_t> words = qgpu::test::test_words(n);
  std::vector<float> in(n);
  for (unsigned i = 0; i < n; ++i) {
    uint32_t u = words[i];
    const uint32_t next_to_tie[] = {0x8000u, 0x8001u, 0x7FFFu};
    switch (i % 4) {
      case 0: break;                                                          // any bits: NaNs, infinities too
      case 1: u = (u & 0xFFFF0000u) | next_to_tie[i / 4 % 3]; break;          // ties, next to them
      case 2: u = (u & 0x807FFFFFu) | (words[(i * 5) % n] % 4) << 23; break;  // f32 subnormals, smallest normals
      default: u = (u & 0x807FFFFFu) | (100 + words[(i * 3) % n] % 56) << 23; break;
    }
    in[i] = bits_float(u);
  }
  static const uint32_t edges[] = {
      0x00000000, 0x80000000, 0x00000001, 0x80000001, 0x00008000, 0x00018000, 0x00017FFF, 0x007FFFFF, 0x807FFFFF,
      0x00800000, 0x3F800000, 0x3F808000, 0x3F818000, 0x3F808001, 0xBF808000, 0xBF818000, 0x3F807FFF, 0x7F7F7FFF,
      0x7F7F8000, 0x7F7FFFFF, 0xFF7F8000, 0xFF7FFFFF, 0x7F800000, 0xFF800000, 0x7FC00000, 0x7F800001, 0xFF800001,
      0x7FFFFFFF, 0xFFC00000, 0x7F810000, 0x3EAAAAAB, 0x00400000};
  for (size_t i = 0; i < sizeof edges / sizeof *edges; ++i) in[5 * i + 1] = bits_float(edges[i]);

  uint64_t d_in = put(in), d_out = alloc(5 * n * 4);
  LaunchResult r = launch("from_float", {n / 256, 1, 1}, {256, 1, 1}, d_in, d_out, n);
  ASSERT_EQ(r.error, 0) << r.message;
  std::vector<uint32_t> out = get<uint32_t>(d_out, 5 * n);
  int ties = 0, subnormal = 0, overflow = 0, nans = 0;
  for (unsigned i = 0; i < n; ++i) {
    const float f = in[i], g = in[(i + 1) % n];
    const uint32_t* o = &out[5 * i];
    const uint32_t u = float_bits(f);
    SCOPED_TRACE("i " + std::to_string(i) + " f=0x" + hex(u >> 16) + hex(u & 0xFFFF).substr(2));
    EXPECT_BF(uint16_t(o[0]), ref_from_float(f, kNearest));
    EXPECT_BF(uint16_t(o[0] >> 16), ref_from_float(f, kTowardZero));
    EXPECT_BF(uint16_t(o[1]), ref_from_float(f, kDown));
    EXPECT_BF(uint16_t(o[1] >> 16), ref_from_float(f, kUp));
    EXPECT_BF(uint16_t(o[2]), ref_from_float(f));
    EXPECT_BF(uint16_t(o[2] >> 16), ref_from_float(f));
    EXPECT_BF(uint16_t(o[3]), ref_from_float(f));
    EXPECT_BF(uint16_t(o[3] >> 16), ref_from_float(g));
    EXPECT_EQ(o[4], (u & 0xFFFF) << 16);  // widening: the bits shifted up, a NaN's included
    ties += (u & 0xFFFF) == 0x8000 && (u & 0x7F800000) != 0x7F800000;
    subnormal += (u & 0x7F800000) == 0 && (u & 0x7FFFFF);
    overflow += std::isfinite(f) && std::isinf(bf_value(ref_from_float(f)));
    nans += std::isnan(f);
  }
  EXPECT_GT(ties, 100);
  EXPECT_GT(subnormal, 100);
  EXPECT_GT(overflow, 2);
  EXPECT_GT(nans, 5);
}

TEST_F(Device, Bf16IntegerAndDoubleConversions) {
  build(R"(
#include <cuda_bf16.h>
struct In { int i; unsigned u; long long ll; double d; unsigned short h; };
__device__ unsigned b(__nv_bfloat16 h) { return __bfloat16_as_ushort(h); }
extern "C" __global__ void conversions(const In* in, unsigned* out) {
  const In x = in[threadIdx.x];
  const __nv_bfloat16 h = __ushort_as_bfloat16(x.h);
  const unsigned long long ull = (unsigned long long)x.ll;
  unsigned* o = out + 40 * threadIdx.x;
  o[0] = b(__int2bfloat16_rn(x.i)), o[1] = b(__int2bfloat16_rz(x.i));
  o[2] = b(__int2bfloat16_rd(x.i)), o[3] = b(__int2bfloat16_ru(x.i));
  o[4] = b(__uint2bfloat16_rn(x.u)), o[5] = b(__uint2bfloat16_rz(x.u));
  o[6] = b(__uint2bfloat16_rd(x.u)), o[7] = b(__uint2bfloat16_ru(x.u));
  o[8] = b(__ll2bfloat16_rn(x.ll)), o[9] = b(__ll2bfloat16_rz(x.ll));
  o[10] = b(__ll2bfloat16_rd(x.ll)), o[11] = b(__ll2bfloat16_ru(x.ll));
  o[12] = b(__ull2bfloat16_rn(ull)), o[13] = b(__ull2bfloat16_rz(ull));
  o[14] = b(__ull2bfloat16_rd(ull)), o[15] = b(__ull2bfloat16_ru(ull));
  o[16] = b(__short2bfloat16_rn((short)x.i)), o[17] = b(__short2bfloat16_rd((short)x.i));
  o[18] = b(__ushort2bfloat16_ru((unsigned short)x.u)), o[19] = b(__ushort2bfloat16_rz((unsigned short)x.u));
  o[20] = b(__double2bfloat16(x.d));
  o[21] = __bfloat162int_rn(h), o[22] = __bfloat162int_rz(h);
  o[23] = __bfloat162int_rd(h), o[24] = __bfloat162int_ru(h);
  o[25] = __bfloat162uint_rn(h), o[26] = __bfloat162uint_rz(h), o[27] = __bfloat162uint_rd(h);
  o[28] = __bfloat162uint_ru(h), o[29] = __bfloat162short_rn(h), o[30] = __bfloat162ushort_rd(h);
  o[31] = (unsigned)__bfloat162ll_ru(h), o[32] = (unsigned)(__bfloat162ll_ru(h) >> 32);
  o[33] = (unsigned)__bfloat162ull_rz(h), o[34] = (unsigned)(__bfloat162ull_rz(h) >> 32);
  o[35] = __bfloat162char_rz(h), o[36] = __bfloat162uchar_rz(h);
  // The constructors round to nearest, the conversions to integers go toward zero.
  const __nv_bfloat16 from_int = x.i, from_double = x.d, from_ll = x.ll;
  o[37] = b(from_int) | b(from_double) << 16, o[38] = b(from_ll) | (unsigned)(short)h << 16;
  o[39] = (int)h;
}
)");
  struct In {
    int32_t i;
    uint32_t u;
    int64_t ll;
    double d;
    uint16_t h;
  };
  const unsigned n = 256;
  std::vector<uint32_t> words = qgpu::test::test_words(6 * n);
  std::vector<uint16_t> halves = test_bf16s(n, 7);
  std::vector<In> in(n);
  for (unsigned t = 0; t < n; ++t) {
    const uint32_t* w = &words[6 * t];
    In& x = in[t];
    x.i = int32_t(w[0]) >> (w[1] % 32);  // every magnitude, both signs
    x.u = w[2] >> (w[1] / 32 % 32);
    x.ll = int64_t((uint64_t(w[3]) << 32 | w[4]) >> (w[1] / 1024 % 64)) * ((w[5] & 1) ? -1 : 1);
    // Doubles over and beyond float's range, f32 subnormals and below.
    x.d = std::ldexp(double(uint64_t(w[0]) << 21 | w[2] >> 11) / double(1ull << 53), int(w[2] % 320) - 170) *
          ((w[3] & 4) ? -1.0 : 1.0);
    // bfloat16s with integral parts of every size; the others any.
    x.h = t % 2 ? halves[t] : uint16_t((halves[t] & 0x807F) | (118 + w[5] % 72) << 7);
  }
  // Ties, values whose f32 rounding to nearest would make a tie (or break
  // one) of the bfloat16 rounding, and the edges of the ranges.
  const int32_t ints[] = {257,       -259,       0x01010001, -0x01010001, 0x7FFFFFFF,
                          INT32_MIN, 0x7F800000, 0x00FFFFFF, 0x01808000,  -1};
  for (size_t k = 0; k < sizeof ints / sizeof *ints; ++k) in[k].i = ints[k], in[k + 16].u = uint32_t(ints[k]);
  const int64_t lls[] = {0x0101000000000001ll, -0x0101000000000001ll, INT64_MIN, INT64_MAX, 0x10100000001ll, 257, -1};
  for (size_t k = 0; k < sizeof lls / sizeof *lls; ++k) in[k + 32].ll = lls[k];
  const double ds[] = {1.0 + 0x1p-8 + 0x1p-40, 1.0 + 0x1p-8 - 0x1p-40, 1.0 + 0x1p-8, -(1.0 + 0x1.8p-7 + 0x1p-60),
                       0x1.FFp127, 0x1.FEp127 + 0x1p100, 0x1.FEFFFFFFFFFFFp127, 1e300, -1e300, 0x1p-134,
                       0x1p-134 + 0x1p-200, -0x1p-134, 0x1p-150, 1e-300, -0.0, INFINITY, -INFINITY, NAN,
                       0x1.01p-130, 0x1.0100000001p-130, 0x1.0001p-126};
  for (size_t k = 0; k < sizeof ds / sizeof *ds; ++k) in[k + 48].d = ds[k];
  const uint16_t hs[] = {0x4F00, 0x4F80, 0xCF00, 0xCF01, 0x5F00, 0x5F80, 0xDF00, 0x3F00, 0x3FC0, 0xBFC0,
                         0x4020, 0x4030, 0x7F80, 0xFF80, 0x7FC0, 0x8000, 0x42FE, 0x4300, 0xC300, 0x437F, 0x4380};
  for (size_t k = 0; k < sizeof hs / sizeof *hs; ++k) in[k + 80].h = hs[k];

  uint64_t d_in = put(in), d_out = alloc(40 * n * 4);
  LaunchResult r = launch("conversions", {1, 1, 1}, {n, 1, 1}, d_in, d_out);
  ASSERT_EQ(r.error, 0) << r.message;
  std::vector<uint32_t> out = get<uint32_t>(d_out, 40 * n);
  const Mode modes[] = {kNearest, kTowardZero, kDown, kUp};
  for (unsigned t = 0; t < n; ++t) {
    const In& x = in[t];
    const uint32_t* o = &out[40 * t];
    const uint64_t ull = uint64_t(x.ll);
    SCOPED_TRACE("thread " + std::to_string(t) + " h=" + hex(x.h));
    for (int m = 0; m < 4; ++m) {
      EXPECT_BF(o[m], ref_from_int(x.i, modes[m])) << " int " << x.i << " mode " << m;
      EXPECT_BF(o[4 + m], ref_from_int(x.u, modes[m])) << " unsigned " << x.u << " mode " << m;
      EXPECT_BF(o[8 + m], ref_from_int(x.ll, modes[m])) << " long long " << x.ll << " mode " << m;
      EXPECT_BF(o[12 + m], ref_from_int(ull, modes[m])) << " unsigned long long " << ull << " mode " << m;
    }
    EXPECT_BF(o[16], ref_from_int(int16_t(x.i), kNearest));
    EXPECT_BF(o[17], ref_from_int(int16_t(x.i), kDown));
    EXPECT_BF(o[18], ref_from_int(uint16_t(x.u), kUp));
    EXPECT_BF(o[19], ref_from_int(uint16_t(x.u), kTowardZero));
    EXPECT_BF(o[20], ref_from_double(x.d)) << " double " << x.d;
    for (int m = 0; m < 4; ++m) {
      EXPECT_EQ(int32_t(o[21 + m]), ref_to_int<int32_t>(x.h, modes[m])) << "mode " << m;
      EXPECT_EQ(o[25 + m], ref_to_int<uint32_t>(x.h, modes[m])) << "mode " << m;
    }
    EXPECT_EQ(int32_t(o[29]), ref_to_int<int16_t>(x.h, kNearest));
    EXPECT_EQ(o[30], ref_to_int<uint16_t>(x.h, kDown));
    const int64_t ll = ref_to_int<int64_t>(x.h, kUp);
    const uint64_t ullz = ref_to_int<uint64_t>(x.h, kTowardZero);
    EXPECT_EQ(o[31], uint32_t(ll));
    EXPECT_EQ(o[32], uint32_t(uint64_t(ll) >> 32));
    EXPECT_EQ(o[33], uint32_t(ullz));
    EXPECT_EQ(o[34], uint32_t(ullz >> 32));
    EXPECT_EQ(int32_t(o[35]), ref_to_int<int8_t>(x.h, kTowardZero));
    EXPECT_EQ(o[36], ref_to_int<uint8_t>(x.h, kTowardZero));
    EXPECT_BF(uint16_t(o[37]), ref_from_int(x.i, kNearest));
    EXPECT_BF(uint16_t(o[37] >> 16), ref_from_double(x.d));
    EXPECT_BF(uint16_t(o[38]), ref_from_int(x.ll, kNearest));
    EXPECT_EQ(int16_t(o[38] >> 16), ref_to_int<int16_t>(x.h, kTowardZero));
    EXPECT_EQ(int32_t(o[39]), ref_to_int<int32_t>(x.h, kTowardZero));
  }
}

TEST_F(Device, Bf16ArithmeticRoundsOnce) {
  build(R"(
#include <cuda_bf16.h>
__device__ unsigned b(__nv_bfloat16 h) { return __bfloat16_as_ushort(h); }
__device__ unsigned w(__nv_bfloat162 h) { return b(h.x) | b(h.y) << 16; }
extern "C" __global__ void arithmetic(const unsigned short* in, unsigned* out) {
  const unsigned t = threadIdx.x, n = blockDim.x;
  const __nv_bfloat16 a = __ushort_as_bfloat16(in[t]), c = __ushort_as_bfloat16(in[2 * n + t]);
  __nv_bfloat16 bb;
  bb = __ushort_as_bfloat16(in[n + t]);
  const __nv_bfloat162 ab = __halves2bfloat162(a, bb), bc = make_bfloat162(bb, c), ca = __halves2bfloat162(c, a);
  unsigned* o = out + 25 * t;
  o[0] = b(__hadd(a, bb)) | b(__hadd_rn(bb, c)) << 16, o[1] = b(__hsub(a, bb)) | b(__hsub_rn(c, a)) << 16;
  o[2] = b(__hmul(a, bb)) | b(__hmul_rn(bb, c)) << 16, o[3] = b(__hfma(a, bb, c)) | b(__hfma(bb, c, a)) << 16;
  o[4] = b(__hdiv(a, bb)) | b(__hdiv(c, a)) << 16, o[5] = b(__hneg(a)) | b(__habs(bb)) << 16;
  o[6] = b(__hadd_sat(a, bb)) | b(__hsub_sat(a, c)) << 16, o[7] = b(__hmul_sat(a, bb)) | b(__hfma_sat(a, bb, c)) << 16;
  o[8] = b(a * bb + c) | b(a - c) << 16, o[9] = b(hsqrt(a)) | b(hrcp(bb)) << 16;
  o[10] = b(__hmax(a, bb)) | b(__hmin(a, bb)) << 16, o[11] = b(__hmax_nan(a, bb)) | b(__hmin_nan(a, bb)) << 16;
  o[12] = w(__hadd2(ab, bc)), o[13] = w(__hsub2(ab, bc)), o[14] = w(__hmul2(ab, bc));
  o[15] = w(__hfma2(ab, bc, ca)), o[16] = w(__h2div(ab, bc)), o[17] = w(-ab / bc);
  o[18] = w(__hmax2(ab, bc)), o[19] = w(__hmin2_nan(ab, bc)), o[20] = w(__habs2(ab) + __hneg2(ca));
  o[21] = b(hfloor(a)) | b(hceil(bb)) << 16, o[22] = b(htrunc(a)) | b(hrint(bb)) << 16;
  __nv_bfloat16 x = a;
  x -= c;
  x *= bb;
  x++;
  __nv_bfloat162 y = ab;
  y += ca;
  y /= bc;
  o[23] = b(x) | b(__hfma2_sat(ab, bc, ca).y) << 16, o[24] = w(y);
}
)");
  const unsigned n = 256;
  std::vector<uint16_t> in = test_bf16s(3 * n, 11);
  // Operands near each other, where sums cancel, and addends near -a*b,
  // where the fma cancels.
  for (unsigned t = 0; t < n; t += 3)
    in[n + t] = uint16_t((in[n + t] & 0x807F) | ((in[t] >> 7 & 0xFF) + t % 5) % 255 << 7);
  for (unsigned t = 1; t < n; t += 5) in[2 * n + t] = uint16_t(ref_mul(in[t], in[n + t]) ^ 0x8000 ^ (t % 3));
  // a * b halfway between two bfloat16s and c far below it: rounded once the
  // result goes c's way; rounded to f32 first it would be a tie (1.5 (1 +
  // 2^-7) + 2^-40 and - 2^-40, 1.5 (1 + 3 2^-7) + 2^-40).
  const uint16_t triples[][3] = {{0x3FC0, 0x3F81, 0x2B80}, {0x3FC0, 0x3F81, 0xAB80}, {0x3FC0, 0x3F83, 0x2B80},
                                 {0xBFC0, 0x3F83, 0xAB80}};
  for (unsigned k = 0; k < 4; ++k)
    for (unsigned i = 0; i < 3; ++i) in[i * n + 2 + 5 * k] = triples[k][i];
  // Zeros of both signs and NaNs for max and min.
  const uint16_t pairs[][2] = {
      {0x8000, 0x0000}, {0x0000, 0x8000}, {0x7FC0, 0xFF81}, {0x7F81, 0xBF80}, {0x8000, 0x7FC1}};
  for (unsigned k = 0; k < 5; ++k) in[22 + 5 * k] = pairs[k][0], in[n + 22 + 5 * k] = pairs[k][1];
  uint64_t d_in = put(in), d_out = alloc(25 * n * 4);
  LaunchResult r = launch("arithmetic", {1, 1, 1}, {n, 1, 1}, d_in, d_out);
  ASSERT_EQ(r.error, 0) << r.message;
  std::vector<uint32_t> out = get<uint32_t>(d_out, 25 * n);
  auto exact = [](double v) { return ref_from_double(v); };
  auto lo = [](uint32_t v) { return uint16_t(v); };
  auto hi = [](uint32_t v) { return uint16_t(v >> 16); };
  int cancelled = 0, inexact_fma = 0;
  for (unsigned t = 0; t < n; ++t) {
    const uint16_t a = in[t], b = in[n + t], c = in[2 * n + t];
    const uint32_t* o = &out[25 * t];
    SCOPED_TRACE("thread " + std::to_string(t) + " a=" + hex(a) + " b=" + hex(b) + " c=" + hex(c));
    EXPECT_BF(lo(o[0]), ref_add(a, b));
    EXPECT_BF(hi(o[0]), ref_add(b, c));
    EXPECT_BF(lo(o[1]), ref_sub(a, b));
    EXPECT_BF(hi(o[1]), ref_sub(c, a));
    EXPECT_BF(lo(o[2]), ref_mul(a, b));
    EXPECT_BF(hi(o[2]), ref_mul(b, c));
    EXPECT_BF(lo(o[3]), ref_fma(a, b, c));
    EXPECT_BF(hi(o[3]), ref_fma(b, c, a));
    EXPECT_BF(lo(o[4]), ref_div(a, b));
    EXPECT_BF(hi(o[4]), ref_div(c, a));
    EXPECT_BF(lo(o[5]), ref_neg(a));
    EXPECT_BF(hi(o[5]), ref_abs(b));
    EXPECT_BF(lo(o[6]), saturate(ref_add(a, b)));
    EXPECT_BF(hi(o[6]), saturate(ref_sub(a, c)));
    EXPECT_BF(lo(o[7]), saturate(ref_mul(a, b)));
    EXPECT_BF(hi(o[7]), saturate(ref_fma(a, b, c)));
    EXPECT_BF(lo(o[8]), ref_add(ref_mul(a, b), c));
    EXPECT_BF(hi(o[8]), ref_sub(a, c));
    EXPECT_BF(lo(o[9]), exact(std::sqrt(bf_value(a))));  // double's sqrt rounds innocuously twice
    EXPECT_BF(hi(o[9]), ref_div(0x3F80, b));
    EXPECT_BF(lo(o[10]), ref_max(a, b, true));
    EXPECT_BF(hi(o[10]), ref_max(a, b, false));
    EXPECT_BF(lo(o[11]), ref_max(a, b, true, true));
    EXPECT_BF(hi(o[11]), ref_max(a, b, false, true));
    EXPECT_BF(lo(o[12]), ref_add(a, b));
    EXPECT_BF(hi(o[12]), ref_add(b, c));
    EXPECT_BF(lo(o[13]), ref_sub(a, b));
    EXPECT_BF(hi(o[13]), ref_sub(b, c));
    EXPECT_BF(lo(o[14]), ref_mul(a, b));
    EXPECT_BF(hi(o[14]), ref_mul(b, c));
    EXPECT_BF(lo(o[15]), ref_fma(a, b, c));
    EXPECT_BF(hi(o[15]), ref_fma(b, c, a));
    EXPECT_BF(lo(o[16]), ref_div(a, b));
    EXPECT_BF(hi(o[16]), ref_div(b, c));
    EXPECT_BF(lo(o[17]), ref_div(ref_neg(a), b));
    EXPECT_BF(hi(o[17]), ref_div(ref_neg(b), c));
    EXPECT_BF(lo(o[18]), ref_max(a, b, true));
    EXPECT_BF(hi(o[18]), ref_max(b, c, true));
    EXPECT_BF(lo(o[19]), ref_max(a, b, false, true));
    EXPECT_BF(hi(o[19]), ref_max(b, c, false, true));
    EXPECT_BF(lo(o[20]), ref_add(ref_abs(a), ref_neg(c)));
    EXPECT_BF(hi(o[20]), ref_add(ref_abs(b), ref_neg(a)));
    EXPECT_BF(lo(o[21]), exact(std::floor(bf_value(a))));
    EXPECT_BF(hi(o[21]), exact(std::ceil(bf_value(b))));
    EXPECT_BF(lo(o[22]), exact(std::trunc(bf_value(a))));
    EXPECT_BF(hi(o[22]), exact(std::nearbyint(bf_value(b))));
    EXPECT_BF(lo(o[23]), ref_add(ref_mul(ref_sub(a, c), b), 0x3F80));
    EXPECT_BF(hi(o[23]), saturate(ref_fma(b, c, a)));
    EXPECT_BF(lo(o[24]), ref_div(ref_add(a, c), b));
    EXPECT_BF(hi(o[24]), ref_div(ref_add(b, a), c));
    const double p = bf_value(a) * bf_value(b), s = p + bf_value(c);
    cancelled += std::isfinite(s) && s != 0 && std::fabs(s) < std::fabs(p) / 64;
    inexact_fma += std::isfinite(s) && bf_value(ref_fma(a, b, c)) != s;
  }
  EXPECT_GT(cancelled, 20);
  EXPECT_GT(inexact_fma, 100);
}

// The fused forms (__hfma_relu, __hfma2_relu, __hcmadd), tanh, the
// conversions between bfloat16 and binary16, and the cache-hinted loads and
// stores.
TEST_F(Device, Bf16FusedFormsTanhHalfConversionsAndHints) {
  build(R"(
#include <cuda_bf16.h>
__device__ unsigned b(__nv_bfloat16 h) { return __bfloat16_as_ushort(h); }
__device__ unsigned w(__nv_bfloat162 h) { return b(h.x) | b(h.y) << 16; }
extern "C" __global__ void fused(const unsigned short* in, unsigned* out, const __nv_bfloat16* src, __nv_bfloat16* dst) {
  const unsigned t = threadIdx.x, n = blockDim.x;
  const __nv_bfloat16 a = __ushort_as_bfloat16(in[t]), bb = __ushort_as_bfloat16(in[n + t]),
                      c = __ushort_as_bfloat16(in[2 * n + t]);
  const __nv_bfloat162 ab = __halves2bfloat162(a, bb), bc = make_bfloat162(bb, c), ca = __halves2bfloat162(c, a);
  unsigned* o = out + 6 * t;
  o[0] = b(__hfma_relu(a, bb, c)) | b(__hfma2_relu(ab, bc, ca).y) << 16;
  o[1] = w(__hcmadd(ab, bc, ca));
  o[2] = b(htanh(a)) | b(h2tanh(bc).y) << 16;
  o[3] = __half_as_ushort(__half(a)) | b(__nv_bfloat16(__ushort_as_half(in[n + t]))) << 16;
  o[4] = b(__ldca(src + t)) | b(__ldcs(src + t)) << 16;
  o[5] = b(__ldlu(src + t)) | b(__ldcv(src + t)) << 16;
  __stwb(dst + 4 * t, a), __stcg(dst + 4 * t + 1, bb), __stcs(dst + 4 * t + 2, c);
  __stwt(dst + 4 * t + 3, __ldcg(src + t));
}
)");
  const unsigned n = 256;
  std::vector<uint16_t> in = test_bf16s(3 * n, 23);
  // Products near -c (relu of a cancelled sum, of both signs), and halves
  // at binary16's edges as the second operand's bits.
  for (unsigned t = 1; t < n; t += 4) in[2 * n + t] = uint16_t(ref_mul(in[t], in[n + t]) ^ 0x8000 ^ (t % 3));
  const uint16_t halves[] = {0x7C00, 0xFC00, 0x7BFF, 0x0001, 0x8001, 0x03FF, 0x0400, 0x7E00, 0x3C00, 0x8000, 0x5BFF};
  for (unsigned k = 0; k < sizeof halves / 2; ++k) in[n + 3 + 7 * k] = halves[k];
  in[6] = 0x8000, in[n + 6] = 0x3F80, in[2 * n + 6] = 0x8000;  // -0 * 1 + -0: relu gives +0
  std::vector<uint16_t> src = test_bf16s(n, 29);
  uint64_t d_in = put(in), d_out = alloc(6 * n * 4), d_src = put(src), d_dst = alloc(4 * n * 2);
  LaunchResult r = launch("fused", {1, 1, 1}, {n, 1, 1}, d_in, d_out, d_src, d_dst);
  ASSERT_EQ(r.error, 0) << r.message;
  std::vector<uint32_t> out = get<uint32_t>(d_out, 6 * n);
  std::vector<uint16_t> dst = get<uint16_t>(d_dst, 4 * n);
  auto lo = [](uint32_t v) { return uint16_t(v); };
  auto hi = [](uint32_t v) { return uint16_t(v >> 16); };
  auto relu = [](uint16_t h) { return ref_max(h, 0x0000, true, true); };
  // tanh.approx's error is below 2^-10 relative: after rounding to 8
  // significant bits the result is the correctly rounded one or next to it.
  auto near_tanh = [](uint16_t got, uint16_t x) {
    const uint16_t want = ref_from_double(std::tanh(bf_value(x)));
    if (is_nan(want)) return is_nan(got);
    return got == want || (((got ^ want) & 0x8000) == 0 && (got == want + 1 || got + 1 == want));
  };
  int relu_zeroed = 0, relu_kept = 0;
  for (unsigned t = 0; t < n; ++t) {
    const uint16_t a = in[t], bb = in[n + t], c = in[2 * n + t];
    const uint32_t* o = &out[6 * t];
    SCOPED_TRACE("thread " + std::to_string(t) + " a=" + hex(a) + " b=" + hex(bb) + " c=" + hex(c));
    EXPECT_BF(lo(o[0]), relu(ref_fma(a, bb, c)));
    EXPECT_BF(hi(o[0]), relu(ref_fma(bb, c, a)));
    EXPECT_BF(lo(o[1]), ref_fma(ref_neg(bb), c, ref_fma(a, bb, c)));
    EXPECT_BF(hi(o[1]), ref_fma(bb, bb, ref_fma(a, c, a)));
    EXPECT_TRUE(near_tanh(lo(o[2]), a)) << hex(lo(o[2]));
    EXPECT_TRUE(near_tanh(hi(o[2]), c)) << hex(hi(o[2]));
    EXPECT_BF(lo(o[3]), qgpu::test::from_double16<10>(bf_value(a), kNearest));
    EXPECT_BF(hi(o[3]), ref_from_double(qgpu::test::value16<10>(bb)));
    EXPECT_BF(lo(o[4]), src[t]);
    EXPECT_BF(hi(o[4]), src[t]);
    EXPECT_BF(lo(o[5]), src[t]);
    EXPECT_BF(hi(o[5]), src[t]);
    EXPECT_BF(dst[4 * t], a);
    EXPECT_BF(dst[4 * t + 1], bb);
    EXPECT_BF(dst[4 * t + 2], c);
    EXPECT_BF(dst[4 * t + 3], src[t]);
    const uint16_t f = ref_fma(a, bb, c);
    relu_zeroed += !is_nan(f) && (f & 0x8000) && f != 0x8000;
    relu_kept += !is_nan(f) && !(f & 0x8000) && f != 0;
  }
  EXPECT_GT(relu_zeroed, 30);
  EXPECT_GT(relu_kept, 30);
}

TEST_F(Device, Bf16ComparisonsPairsShufflesAndAtomics) {
  build(R"(
#include <cuda_bf16.h>
__device__ unsigned b(__nv_bfloat16 h) { return __bfloat16_as_ushort(h); }
__device__ unsigned w(__nv_bfloat162 h) { __nv_bfloat162_raw r = h; return r.x | (unsigned)r.y << 16; }
extern "C" __global__ void compare(const unsigned short* in, unsigned* out, __nv_bfloat16* sums,
                                   __nv_bfloat162* sums2) {
  const unsigned t = threadIdx.x, lane = t % 32;
  const __nv_bfloat16 x = __ushort_as_bfloat16(in[2 * t]), y = __ushort_as_bfloat16(in[2 * t + 1]);
  const __nv_bfloat162 p = __halves2bfloat162(x, y), q = __lowhigh2highlow(p);
  unsigned* o = out + 16 * t;
  o[0] = __heq(x, y) | __hne(x, y) << 1 | __hlt(x, y) << 2 | __hle(x, y) << 3 | __hgt(x, y) << 4 |
         __hge(x, y) << 5 | __hequ(x, y) << 6 | __hneu(x, y) << 7 | __hltu(x, y) << 8 | __hleu(x, y) << 9 |
         __hgtu(x, y) << 10 | __hgeu(x, y) << 11 | __hisnan(x) << 12 | (__hisinf(x) + 1) << 13 |
         (x == y) << 15 | (x != y) << 16 | (x < y) << 17 | (x <= y) << 18 | (x > y) << 19 | (x >= y) << 20;
  o[1] = __hlt2_mask(p, q), o[2] = w(__hgeu2(p, q)), o[3] = w(__hisnan2(p));
  o[4] = __hbeq2(p, p) | __hbltu2(p, q) << 1 | __hbne2(p, q) << 2 | (p == q) << 3 | (p != q) << 4;
  o[5] = w(__floats2bfloat162_rn(__low2float(p) * 3.0f, __high2float(p) + 0.1f));
  o[6] = w(q), o[7] = b(__high2bfloat16(p)) | b(__low2bfloat16(q)) << 16;
  o[8] = __float_as_uint(__bfloat1622float2(p).y);
  o[9] = w(__shfl_xor_sync(0xffffffffu, p, 5));
  o[10] = b(__shfl_sync(0xffffffffu, x, (lane * 3) & 31)) | b(__shfl_up_sync(0xffffffffu, y, 3)) << 16;
  o[11] = b(__shfl_down_sync(0xffffffffu, y, 2)) |
          (unsigned)__hbge2(__lows2bfloat162(p, q), __highs2bfloat162(p, q)) << 16;
  o[12] = w(__float2bfloat162_rn(__high2float(p)));
  o[13] = w(__float22bfloat162_rn(make_float2(__low2float(p) / 3.0f, -__high2float(p)))) ^ w(__bfloat162bfloat162(y));
  o[14] = w(__low2bfloat162(p)) ^ w(__high2bfloat162(q)) << 1;
  o[15] = b(__high2bfloat162(p).x) | b(__bfloat162bfloat162(x).y) << 16;
  // Sums exact in bfloat16 whatever the order: multiples of 1/4 below 2^6.
  const __nv_bfloat16 quarter = __int2bfloat16_rn((int)(t % 16)) * __float2bfloat16(0.25f);
  const __nv_bfloat16 eighth = __float2bfloat16(0.125f) * __int2bfloat16_rn((int)(t % 8) * 2);
  atomicAdd(&sums[t % 2], quarter);
  atomicAdd(&sums2[0], __halves2bfloat162(eighth, -eighth));
}
)");
  const unsigned n = 64;
  std::vector<uint16_t> in = test_bf16s(2 * n, 5);
  for (unsigned t = 0; t < n; t += 4) in[2 * t + 1] = in[2 * t];  // equal pairs too
  in[2 * 9] = 0x8000, in[2 * 9 + 1] = 0x0000;                     // -0 == +0
  in[2 * 10] = 0x7FC0, in[2 * 10 + 1] = 0x7FC0;                   // NaN != NaN
  in[2 * 11] = 0x7F80, in[2 * 11 + 1] = 0x7F7F;
  in[2 * 13] = 0xFF80, in[2 * 13 + 1] = 0x3F80;
  in[2 * 14] = 0x0001, in[2 * 14 + 1] = 0x8001;
  uint64_t d_in = put(in), d_out = alloc(16 * n * 4), d_sums = put(std::vector<uint16_t>{0x3F80, 0xC000});
  uint64_t d_sums2 = put(std::vector<uint16_t>{0x0000, 0x4000});
  LaunchResult r = launch("compare", {1, 1, 1}, {n, 1, 1}, d_in, d_out, d_sums, d_sums2);
  ASSERT_EQ(r.error, 0) << r.message;
  std::vector<uint32_t> out = get<uint32_t>(d_out, 16 * n);
  auto cmp = [](uint16_t a, uint16_t b) {  // the 12 comparisons as o[0]'s low bits
    const double x = bf_value(a), y = bf_value(b);
    const bool u = std::isnan(x) || std::isnan(y);
    bool ordered[6] = {x == y, !u && x != y, x < y, x <= y, x > y, x >= y};
    unsigned bits = 0;
    for (int i = 0; i < 6; ++i) bits |= unsigned(ordered[i]) << i | unsigned(ordered[i] || u) << (6 + i);
    return bits;
  };
  auto mask = [](bool lo, bool hi) { return (lo ? 0xFFFFu : 0u) | (hi ? 0xFFFF0000u : 0u); };
  auto word = [](uint16_t lo, uint16_t hi) { return uint32_t(lo) | uint32_t(hi) << 16; };
  for (unsigned t = 0; t < n; ++t) {
    const uint16_t x = in[2 * t], y = in[2 * t + 1];
    const uint32_t* o = &out[16 * t];
    SCOPED_TRACE("thread " + std::to_string(t) + " x=" + hex(x) + " y=" + hex(y));
    const unsigned c = cmp(x, y), inf = x == 0x7F80 ? 2 : x == 0xFF80 ? 0 : 1;
    const unsigned ops = (c & 1) | (c >> 7 & 1) << 1 | (c >> 2 & 0xF) << 2;  // == uses eq, != neu
    EXPECT_EQ(o[0], c | unsigned(is_nan(x)) << 12 | inf << 13 | ops << 15);
    EXPECT_EQ(o[1], mask(cmp(x, y) >> 2 & 1, cmp(y, x) >> 2 & 1));
    EXPECT_EQ(o[2], (cmp(x, y) >> 11 & 1 ? 0x3F80u : 0u) | (cmp(y, x) >> 11 & 1 ? 0x3F800000u : 0u));
    EXPECT_EQ(o[3], (is_nan(x) ? 0x3F80u : 0u) | (is_nan(y) ? 0x3F800000u : 0u));
    const bool beq = !is_nan(x) && !is_nan(y);
    const unsigned both = cmp(x, y) & cmp(y, x);
    EXPECT_EQ(o[4], unsigned(beq) | (both >> 8 & 1) << 1 | (both >> 1 & 1) << 2 | (cmp(x, y) & 1) << 3 |
                        (both >> 7 & 1) << 4);
    const float lo = bits_float(uint32_t(x) << 16) * 3.0f, hi = bits_float(uint32_t(y) << 16) + 0.1f;
    EXPECT_EQ(o[5], word(ref_from_float(lo), ref_from_float(hi)));
    EXPECT_EQ(o[6], word(y, x));
    EXPECT_EQ(o[7], word(y, y));
    EXPECT_EQ(o[8], uint32_t(y) << 16);
    const unsigned base = t / 32 * 32, lane = t % 32, other = base + (lane ^ 5);
    EXPECT_EQ(o[9], word(in[2 * other], in[2 * other + 1]));
    EXPECT_EQ(o[10], word(in[2 * (base + ((lane * 3) & 31))], in[2 * (lane >= 3 ? t - 3 : t) + 1]));
    // __lows2bfloat162(p, q) is (x, y), __highs2bfloat162(p, q) is (y, x).
    EXPECT_EQ(o[11], word(in[2 * (lane + 2 < 32 ? t + 2 : t) + 1], uint16_t(cmp(x, y) >> 5 & cmp(y, x) >> 5 & 1)));
    const uint16_t wide_y = ref_from_float(bits_float(uint32_t(y) << 16));  // y, or 0x7FFF for a NaN
    EXPECT_EQ(o[12], word(wide_y, wide_y));
    EXPECT_EQ(o[13], word(ref_from_float(bits_float(uint32_t(x) << 16) / 3.0f),
                          ref_from_float(-bits_float(uint32_t(y) << 16))) ^ word(y, y));
    EXPECT_EQ(o[14], word(x, x) ^ word(x, x) << 1);
    EXPECT_EQ(o[15], word(y, x));
  }
  // 1 + 4 (0 + 0.5 + ... + 3.5) and -2 + 4 (0.25 + 0.75 + ... + 3.75); 0 and 2 less 8 (0 + 0.25 + ... + 1.75).
  std::vector<uint16_t> sums = get<uint16_t>(d_sums, 2), sums2 = get<uint16_t>(d_sums2, 2);
  double even = 1, odd = -2, all = 0;
  for (unsigned t = 0; t < n; ++t) (t % 2 ? odd : even) += (t % 16) * 0.25, all += (t % 8) * 0.25;
  EXPECT_EQ(sums[0], ref_from_double(even));
  EXPECT_EQ(sums[1], ref_from_double(odd));
  EXPECT_EQ(sums2[0], ref_from_double(all));
  EXPECT_EQ(sums2[1], ref_from_double(2 - all));
}

}  // namespace
