// The built-in cuda_fp16.h and mma.h, end to end: kernels compiled by our
// NVRTC and run on the PTX-level reference interpreter.  The half results
// are checked bit for bit against a rounding routine written here from
// IEEE 754's definition (exact value, then one rounding to binary16), which
// shares nothing with the header; the warp matrix products against exact
// integer sums.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <string>
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

// ---- binary16 on the host, bit by bit

uint16_t ref_round(bool neg, u128 m, int e, Mode mode) { return qgpu::test::ref_round16<10>(neg, m, e, mode); }

bool is_nan(uint16_t h) { return (h & 0x7C00) == 0x7C00 && (h & 0x3FF); }

double half_value(uint16_t h) { return qgpu::test::value16<10>(h); }

// A finite half as m * 2^e (m < 2^11, e >= -24).
void half_parts(uint16_t h, bool& neg, uint64_t& m, int& e) { qgpu::test::parts16<10>(h, neg, m, e); }

// A double rounded to binary16 (specials kept; a NaN is 0x7FFF).
uint16_t ref_from_double(double d, Mode mode = kNearest) { return qgpu::test::from_double16<10>(d, mode); }

template <typename Int>
uint16_t ref_from_int(Int v, Mode mode) {
  return qgpu::test::from_int16<10>(v, mode);
}

// A half to an integer type, rounded by `mode`, saturated, a NaN giving 0.
template <typename Int>
Int ref_to_int(uint16_t h, Mode mode) {
  return qgpu::test::to_int16<10, Int>(h, mode);
}

// a * b + c, rounded once (to nearest even).
uint16_t ref_fma(uint16_t a, uint16_t b, uint16_t c) {
  const double exact_or_special = std::fma(half_value(a), half_value(b), half_value(c));
  if (!std::isfinite(half_value(a)) || !std::isfinite(half_value(b)) || !std::isfinite(half_value(c)) ||
      exact_or_special == 0)
    return ref_from_double(exact_or_special);  // specials, and an exact 0 with fma's sign
  bool na, nb, nc;
  uint64_t ma, mb, mc;
  int ea, eb, ec;
  half_parts(a, na, ma, ea), half_parts(b, nb, mb, eb), half_parts(c, nc, mc, ec);
  // In units of 2^-48, where both terms are integers.
  __int128 product = (__int128)(u128(ma * mb) << (ea + eb + 48)), addend = (__int128)(u128(mc) << (ec + 48));
  __int128 sum = (na != nb ? -product : product) + (nc ? -addend : addend);
  return ref_round(sum < 0, u128(sum < 0 ? -sum : sum), -48, kNearest);
}

// a / b, rounded once (to nearest even).
uint16_t ref_div(uint16_t a, uint16_t b) {
  const double va = half_value(a), vb = half_value(b);
  if (!std::isfinite(va) || !std::isfinite(vb) || va == 0 || vb == 0) return ref_from_double(va / vb);
  bool na, nb;
  uint64_t ma, mb;
  int ea, eb;
  half_parts(a, na, ma, ea), half_parts(b, nb, mb, eb);
  u128 q = (u128(ma) << 64) / mb, rest = (u128(ma) << 64) % mb;
  int e = ea - eb - 64;
  if (rest) q = q << 1 | 1, --e;  // a sticky bit below the 53 or more exact ones
  return ref_round(na != nb, q, e, kNearest);
}

// The _sat forms: the rounded result clamped to [0, 1], a NaN giving +0.
uint16_t saturate(uint16_t h) {
  if (is_nan(h) || (h & 0x8000)) return 0;
  return h > 0x3C00 ? 0x3C00 : h;
}

uint16_t ref_max(uint16_t a, uint16_t b, bool max) {
  if (is_nan(a)) return is_nan(b) ? 0x7FFF : b;
  if (is_nan(b)) return a;
  const double va = half_value(a), vb = half_value(b);
  if (va == vb) return max ? a & b : a | b;  // only +0 and -0 differ in their bits
  return (va > vb) == max ? a : b;
}

// Halves to test: random words with the edge cases first.
std::vector<uint16_t> test_halves(size_t n, uint64_t seed) {
  static const uint16_t edges[] = {0x0000, 0x8000, 0x0001, 0x83FF, 0x0400, 0x3C00, 0xBC00, 0x3800, 0x3E00,
                                   0x4100, 0xC100, 0x7BFF, 0xFBFF, 0x7C00, 0xFC00, 0x7E00, 0x7C01, 0x3555};
  std::vector<uint16_t> v(n);
  for (size_t i = 0; i < n; ++i) {
    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    v[i] = uint16_t(seed >> 40);
  }
  for (size_t i = 0; i < sizeof edges / sizeof *edges && i < n; ++i) v[(i * 7) % n] = edges[i];
  return v;
}

std::string hex(unsigned v) {
  char s[16];
  std::snprintf(s, sizeof s, "0x%04x", v);
  return s;
}

// Bit for bit, except that any NaN stands for a NaN (PTX leaves the NaN
// that f16 arithmetic gives unspecified).
#define EXPECT_HALF(got, want) \
  EXPECT_TRUE((got) == (want) || (is_nan(got) && is_nan(want))) << #got ": " << hex(got) << ", want " << hex(want)

TEST_F(Device, HalfConversionsRoundAsIeeeSays) {
  build(R"(
#include <cuda_fp16.h>
struct In { int i; unsigned u; long long ll; float f; double d; unsigned short h; };
__device__ unsigned b(__half h) { return __half_as_ushort(h); }
extern "C" __global__ void conversions(const In* in, unsigned* out) {
  const In x = in[threadIdx.x];
  const __half h = __ushort_as_half(x.h);
  unsigned* o = out + 32 * threadIdx.x;
  o[0] = b(__int2half_rn(x.i)), o[1] = b(__int2half_rz(x.i)), o[2] = b(__int2half_rd(x.i)), o[3] = b(__int2half_ru(x.i));
  o[4] = b(__uint2half_rn(x.u)), o[5] = b(__uint2half_rz(x.u)), o[6] = b(__uint2half_rd(x.u)), o[7] = b(__uint2half_ru(x.u));
  o[8] = b(__ll2half_rn(x.ll)), o[9] = b(__ll2half_ru(x.ll)), o[10] = b(__ull2half_rd((unsigned long long)x.ll));
  o[11] = b(__short2half_rz((short)x.i)), o[12] = b(__ushort2half_ru((unsigned short)x.u));
  o[13] = b(__float2half_rn(x.f)), o[14] = b(__float2half_rz(x.f)), o[15] = b(__float2half_rd(x.f));
  o[16] = b(__float2half_ru(x.f)), o[17] = b(__double2half(x.d));
  o[18] = __float_as_int(__half2float(h));
  o[19] = __half2int_rn(h), o[20] = __half2int_rz(h), o[21] = __half2int_rd(h), o[22] = __half2int_ru(h);
  o[23] = __half2uint_rn(h), o[24] = __half2short_rd(h), o[25] = (unsigned)__half2ll_ru(h);
  o[26] = (unsigned)(__half2ll_ru(h) >> 32), o[27] = (unsigned)__half2ull_rz(h), o[28] = __half2ushort_rn(h);
  o[29] = __half2char_rz(h), o[30] = __half2uchar_rz(h);
  __half implicit = x.f;  // the constructors round to nearest, the conversions to integers toward zero
  o[31] = b(implicit) | (unsigned)(int)h << 16;
}
)");
  struct In {
    int32_t i;
    uint32_t u;
    int64_t ll;
    float f;
    double d;
    uint16_t h;
  };
  const unsigned n = 256;
  std::vector<uint32_t> words = qgpu::test::test_words(6 * n);
  std::vector<uint16_t> halves = test_halves(n, 7);
  std::vector<In> in(n);
  for (unsigned t = 0; t < n; ++t) {
    const uint32_t* w = &words[6 * t];
    In& x = in[t];
    x.i = int32_t(w[0]) >> (w[1] % 32);  // every magnitude, both signs
    x.u = w[2] >> (w[1] / 32 % 32);
    x.ll = int64_t((uint64_t(w[3]) << 32 | w[4]) >> (w[1] / 1024 % 64)) * ((w[5] & 1) ? -1 : 1);
    // Floats around the half range, subnormal halves included.
    x.f = std::ldexp(float(w[5] >> 8) / float(1 << 24), int(w[4] % 48) - 30) * ((w[3] & 2) ? -1.0f : 1.0f);
    x.d = std::ldexp(double(uint64_t(w[0]) << 21 | w[2] >> 11) / double(1ull << 53), int(w[2] % 48) - 30) *
          ((w[3] & 4) ? -1.0 : 1.0);
    x.h = halves[t];
  }
  // Ties and the edges of the range.
  in[0].i = 2049, in[1].i = -2051, in[2].i = 65519, in[3].i = 65520, in[4].u = 0xFFFFFFFFu;
  in[5].f = 65504.0f, in[6].f = 65520.0f, in[7].f = 0x1p-25f, in[8].f = 0x1.8p-25f, in[9].f = -0.0f;
  in[10].f = INFINITY, in[11].f = NAN, in[12].f = 1.0f + 0x1p-11f, in[13].f = -(1.0f + 0x1p-11f);
  in[5].d = 2049.0, in[6].d = 65520.0, in[7].d = 0x1p-25, in[8].d = 1.0 + 0x1p-11 + 0x1p-40, in[9].d = -INFINITY;
  in[10].d = 0x1p-26, in[11].d = -0x1.0000000001p-25, in[12].ll = INT64_MIN, in[13].ll = -2049;

  uint64_t d_in = put(in), d_out = alloc(32 * n * 4);
  LaunchResult r = launch("conversions", {1, 1, 1}, {n, 1, 1}, d_in, d_out);
  ASSERT_EQ(r.error, 0) << r.message;
  std::vector<uint32_t> out = get<uint32_t>(d_out, 32 * n);
  const Mode modes[] = {kNearest, kTowardZero, kDown, kUp};
  auto from_float = [](float f, Mode m) { return std::isnan(f) ? uint16_t(0x7FFF) : ref_from_double(f, m); };
  for (unsigned t = 0; t < n; ++t) {
    const In& x = in[t];
    const uint32_t* o = &out[32 * t];
    SCOPED_TRACE("thread " + std::to_string(t) + " h=" + hex(x.h));
    for (int m = 0; m < 4; ++m) {
      EXPECT_EQ(o[m], ref_from_int(x.i, modes[m])) << "int " << x.i << " mode " << m;
      EXPECT_EQ(o[4 + m], ref_from_int(x.u, modes[m])) << "unsigned " << x.u << " mode " << m;
    }
    EXPECT_EQ(o[8], ref_from_int(x.ll, kNearest));
    EXPECT_EQ(o[9], ref_from_int(x.ll, kUp));
    EXPECT_EQ(o[10], ref_from_int(uint64_t(x.ll), kDown));
    EXPECT_EQ(o[11], ref_from_int(int16_t(x.i), kTowardZero));
    EXPECT_EQ(o[12], ref_from_int(uint16_t(x.u), kUp));
    for (int m = 0; m < 4; ++m) EXPECT_HALF(uint16_t(o[13 + m]), from_float(x.f, modes[m])) << " float " << x.f;
    EXPECT_HALF(uint16_t(o[17]), ref_from_double(x.d)) << " double " << x.d;
    float value = float(half_value(x.h));
    uint32_t value_bits;
    std::memcpy(&value_bits, &value, 4);
    if (is_nan(x.h))
      EXPECT_TRUE(std::isnan(value)) << o[18];
    else
      EXPECT_EQ(o[18], value_bits);
    for (int m = 0; m < 4; ++m) EXPECT_EQ(int32_t(o[19 + m]), ref_to_int<int32_t>(x.h, modes[m])) << "mode " << m;
    EXPECT_EQ(o[23], ref_to_int<uint32_t>(x.h, kNearest));
    EXPECT_EQ(int32_t(o[24]), ref_to_int<int16_t>(x.h, kDown));
    const int64_t ll = ref_to_int<int64_t>(x.h, kUp);
    EXPECT_EQ(o[25], uint32_t(ll));
    EXPECT_EQ(o[26], uint32_t(uint64_t(ll) >> 32));
    EXPECT_EQ(o[27], uint32_t(ref_to_int<uint64_t>(x.h, kTowardZero)));
    EXPECT_EQ(o[28], ref_to_int<uint16_t>(x.h, kNearest));
    EXPECT_EQ(int32_t(o[29]), ref_to_int<int8_t>(x.h, kTowardZero));
    EXPECT_EQ(o[30], ref_to_int<uint8_t>(x.h, kTowardZero));
    EXPECT_HALF(uint16_t(o[31]), from_float(x.f, kNearest));
    EXPECT_EQ(int16_t(o[31] >> 16), int16_t(ref_to_int<int32_t>(x.h, kTowardZero)));
  }
}

TEST_F(Device, HalfArithmeticRoundsOnce) {
  build(R"(
#include <cuda_fp16.h>
__device__ unsigned b(__half h) { return __half_as_ushort(h); }
__device__ unsigned w(__half2 h) { return b(h.x) | b(h.y) << 16; }
extern "C" __global__ void arithmetic(const unsigned short* in, unsigned* out) {
  const unsigned t = threadIdx.x, n = blockDim.x;
  const __half a = __ushort_as_half(in[t]), c = __ushort_as_half(in[2 * n + t]);
  __half bb;
  bb = __ushort_as_half(in[n + t]);
  const __half2 ab = __halves2half2(a, bb), bc = __halves2half2(bb, c), ca = __halves2half2(c, a);
  unsigned* o = out + 20 * t;
  o[0] = b(__hadd(a, bb)), o[1] = b(__hsub(a, bb)), o[2] = b(__hmul(a, bb)), o[3] = b(__hfma(a, bb, c));
  o[4] = b(__hdiv(a, bb)), o[5] = b(__hneg(a)), o[6] = b(__habs(bb)), o[7] = b(__hadd_sat(a, bb));
  o[8] = b(__hfma_sat(a, bb, c)), o[9] = b(__hmul_rn(a, bb)), o[10] = b(a * bb + c), o[11] = b(hsqrt(a));
  o[12] = b(__hmax(a, bb)), o[13] = b(__hmin(a, bb)), o[14] = w(__hadd2(ab, bc)), o[15] = w(__hfma2(ab, bc, ca));
  o[16] = w(__h2div(ab, bc)), o[17] = w(-ab / bc), o[18] = b(hfloor(a)) | b(hceil(bb)) << 16;
  __half x = a;
  x -= c;
  x *= bb;
  x++;
  o[19] = b(x);
}
)");
  const unsigned n = 256;
  std::vector<uint16_t> in = test_halves(3 * n, 11);
  // Some operands nearer each other, where sums cancel and products stay in range.
  for (unsigned t = 0; t < n; t += 3) in[n + t] = uint16_t((in[t] & 0x83FF) | (in[n + t] & 0x3C00) | 0x3000);
  uint64_t d_in = put(in), d_out = alloc(20 * n * 4);
  LaunchResult r = launch("arithmetic", {1, 1, 1}, {n, 1, 1}, d_in, d_out);
  ASSERT_EQ(r.error, 0) << r.message;
  std::vector<uint32_t> out = get<uint32_t>(d_out, 20 * n);
  auto exact = [](double v) { return ref_from_double(v); };  // sums and products of halves are exact in double
  auto add = [&](uint16_t x, uint16_t y) { return exact(half_value(x) + half_value(y)); };
  auto sub = [&](uint16_t x, uint16_t y) { return exact(half_value(x) - half_value(y)); };
  auto mul = [&](uint16_t x, uint16_t y) { return exact(half_value(x) * half_value(y)); };
  auto neg = [](uint16_t x) { return uint16_t(x ^ 0x8000); };
  for (unsigned t = 0; t < n; ++t) {
    const uint16_t a = in[t], b = in[n + t], c = in[2 * n + t];
    const uint32_t* o = &out[20 * t];
    SCOPED_TRACE("thread " + std::to_string(t) + " a=" + hex(a) + " b=" + hex(b) + " c=" + hex(c));
    EXPECT_HALF(uint16_t(o[0]), add(a, b));
    EXPECT_HALF(uint16_t(o[1]), sub(a, b));
    EXPECT_HALF(uint16_t(o[2]), mul(a, b));
    EXPECT_HALF(uint16_t(o[3]), ref_fma(a, b, c));
    EXPECT_HALF(uint16_t(o[4]), ref_div(a, b));
    EXPECT_HALF(uint16_t(o[5]), is_nan(a) ? a : neg(a));
    EXPECT_HALF(uint16_t(o[6]), uint16_t(b & 0x7FFF));
    EXPECT_EQ(o[7], saturate(add(a, b)));
    EXPECT_EQ(o[8], saturate(ref_fma(a, b, c)));
    EXPECT_HALF(uint16_t(o[9]), mul(a, b));
    EXPECT_HALF(uint16_t(o[10]), add(mul(a, b), c));
    EXPECT_HALF(uint16_t(o[11]), exact(std::sqrt(half_value(a))));  // double's sqrt rounds innocuously twice
    EXPECT_EQ(o[12], ref_max(a, b, true));
    EXPECT_EQ(o[13], ref_max(a, b, false));
    EXPECT_HALF(uint16_t(o[14]), add(a, b));
    EXPECT_HALF(uint16_t(o[14] >> 16), add(b, c));
    EXPECT_HALF(uint16_t(o[15]), ref_fma(a, b, c));
    EXPECT_HALF(uint16_t(o[15] >> 16), ref_fma(b, c, a));
    EXPECT_HALF(uint16_t(o[16]), ref_div(a, b));
    EXPECT_HALF(uint16_t(o[16] >> 16), ref_div(b, c));
    EXPECT_HALF(uint16_t(o[17]), ref_div(is_nan(a) ? a : neg(a), b));
    EXPECT_HALF(uint16_t(o[17] >> 16), ref_div(is_nan(b) ? b : neg(b), c));
    EXPECT_HALF(uint16_t(o[18]), exact(std::floor(half_value(a))));
    EXPECT_HALF(uint16_t(o[18] >> 16), exact(std::ceil(half_value(b))));
    EXPECT_HALF(uint16_t(o[19]), add(mul(sub(a, c), b), 0x3C00));
  }
}

// The fused forms (__hfma_relu, __hfma2_relu, __hcmadd), tanh and the
// cache-hinted loads and stores.
TEST_F(Device, HalfFusedFormsTanhAndHints) {
  build(R"(
#include <cuda_fp16.h>
__device__ unsigned b(__half h) { return __half_as_ushort(h); }
__device__ unsigned w(__half2 h) { return b(h.x) | b(h.y) << 16; }
extern "C" __global__ void fused(const unsigned short* in, unsigned* out, const __half2* src, __half2* dst) {
  const unsigned t = threadIdx.x, n = blockDim.x;
  const __half a = __ushort_as_half(in[t]), bb = __ushort_as_half(in[n + t]), c = __ushort_as_half(in[2 * n + t]);
  const __half2 ab = __halves2half2(a, bb), bc = __halves2half2(bb, c), ca = __halves2half2(c, a);
  unsigned* o = out + 4 * t;
  o[0] = b(__hfma_relu(a, bb, c)) | b(__hfma2_relu(ab, bc, ca).y) << 16;
  o[1] = w(__hcmadd(ab, bc, ca));
  o[2] = b(htanh(a)) | b(htanh_approx(c)) << 16;
  o[3] = w(__ldcv(src + t));
  __stcs(dst + 2 * t, __ldcs(src + t)), __stwt(dst + 2 * t + 1, __ldlu(src + t));
}
)");
  const unsigned n = 256;
  std::vector<uint16_t> in = test_halves(3 * n, 31);
  // Addends near -a*b: relu of cancelled sums of both signs; -0 * 1 + -0.
  for (unsigned t = 1; t < n; t += 4)
    in[2 * n + t] = uint16_t(ref_from_double(half_value(in[t]) * half_value(in[n + t])) ^ 0x8000 ^ (t % 3));
  in[6] = 0x8000, in[n + 6] = 0x3C00, in[2 * n + 6] = 0x8000;
  std::vector<uint32_t> src(n);
  for (unsigned t = 0; t < n; ++t) src[t] = in[t] | uint32_t(in[n + t]) << 16;
  uint64_t d_in = put(in), d_out = alloc(4 * n * 4), d_src = put(src), d_dst = alloc(2 * n * 4);
  LaunchResult r = launch("fused", {1, 1, 1}, {n, 1, 1}, d_in, d_out, d_src, d_dst);
  ASSERT_EQ(r.error, 0) << r.message;
  std::vector<uint32_t> out = get<uint32_t>(d_out, 4 * n), dst = get<uint32_t>(d_dst, 2 * n);
  // relu: NaN stays NaN, a negative result (-0 too) gives +0.
  auto relu = [](uint16_t h) -> uint16_t { return is_nan(h) ? h : (h & 0x8000) ? 0 : h; };
  // tanh.approx's error is below 2^-10 relative: rounded to binary16 the
  // result is the correctly rounded one or next to it.
  auto near_tanh = [](uint16_t got, uint16_t x) {
    const uint16_t want = ref_from_double(std::tanh(half_value(x)));
    if (is_nan(want)) return is_nan(got);
    return got == want || (((got ^ want) & 0x8000) == 0 && (got == want + 1 || got + 1 == want));
  };
  int zeroed = 0;
  for (unsigned t = 0; t < n; ++t) {
    const uint16_t a = in[t], bb = in[n + t], c = in[2 * n + t];
    const uint32_t* o = &out[4 * t];
    SCOPED_TRACE("thread " + std::to_string(t) + " a=" + hex(a) + " b=" + hex(bb) + " c=" + hex(c));
    EXPECT_HALF(uint16_t(o[0]), relu(ref_fma(a, bb, c)));
    EXPECT_HALF(uint16_t(o[0] >> 16), relu(ref_fma(bb, c, a)));
    EXPECT_HALF(uint16_t(o[1]), ref_fma(ref_from_double(-half_value(bb)), c, ref_fma(a, bb, c)));
    EXPECT_HALF(uint16_t(o[1] >> 16), ref_fma(bb, bb, ref_fma(a, c, a)));
    EXPECT_TRUE(near_tanh(uint16_t(o[2]), a)) << hex(uint16_t(o[2]));
    EXPECT_TRUE(near_tanh(uint16_t(o[2] >> 16), c)) << hex(uint16_t(o[2] >> 16));
    EXPECT_EQ(o[3], src[t]);
    EXPECT_EQ(dst[2 * t], src[t]);
    EXPECT_EQ(dst[2 * t + 1], src[t]);
    const uint16_t f = ref_fma(a, bb, c);
    zeroed += !is_nan(f) && (f & 0x8000);
  }
  EXPECT_GT(zeroed, 30);
}

TEST_F(Device, HalfComparisonsPairsAndShuffles) {
  build(R"(
#include <cuda_fp16.h>
__device__ unsigned b(__half h) { return __half_as_ushort(h); }
__device__ unsigned w(__half2 h) { __half2_raw r = h; return r.x | (unsigned)r.y << 16; }
extern "C" __global__ void compare(const unsigned short* in, unsigned* out) {
  const unsigned t = threadIdx.x, lane = t % 32;
  const __half x = __ushort_as_half(in[2 * t]), y = __ushort_as_half(in[2 * t + 1]);
  const __half2 p = __halves2half2(x, y), q = __lowhigh2highlow(p);
  unsigned* o = out + 12 * t;
  o[0] = __heq(x, y) | __hne(x, y) << 1 | __hlt(x, y) << 2 | __hle(x, y) << 3 | __hgt(x, y) << 4 |
         __hge(x, y) << 5 | __hequ(x, y) << 6 | __hneu(x, y) << 7 | __hltu(x, y) << 8 | __hleu(x, y) << 9 |
         __hgtu(x, y) << 10 | __hgeu(x, y) << 11 | __hisnan(x) << 12 | (__hisinf(x) + 1) << 13 |
         (x == y) << 15 | (x != y) << 16 | (x < y) << 17 | (x <= y) << 18 | (x > y) << 19 | (x >= y) << 20;
  o[1] = __hlt2_mask(p, q), o[2] = w(__hgeu2(p, q)), o[3] = w(__hisnan2(p));
  o[4] = __hbeq2(p, p) | __hbltu2(p, q) << 1 | __hbne2(p, q) << 2 | (p == q) << 3;
  o[5] = w(__floats2half2_rn(__low2float(p) * 3.0f, __high2float(p) + 0.1f));
  o[6] = w(q), o[7] = b(__high2half(p)) | b(__low2half(q)) << 16;
  o[8] = __float_as_uint(__half22float2(p).y);
  o[9] = w(__shfl_xor_sync(0xffffffffu, p, 5));
  o[10] = b(__shfl_sync(0xffffffffu, x, (lane * 3) & 31));
  o[11] = b(__shfl_down_sync(0xffffffffu, y, 2));
}
)");
  const unsigned n = 64;
  std::vector<uint16_t> in = test_halves(2 * n, 5);
  for (unsigned t = 0; t < n; t += 4) in[2 * t + 1] = in[2 * t];  // equal pairs too
  in[2 * 9] = 0x8000, in[2 * 9 + 1] = 0x0000;                     // -0 == +0
  uint64_t d_in = put(in), d_out = alloc(12 * n * 4);
  LaunchResult r = launch("compare", {1, 1, 1}, {n, 1, 1}, d_in, d_out);
  ASSERT_EQ(r.error, 0) << r.message;
  std::vector<uint32_t> out = get<uint32_t>(d_out, 12 * n);
  auto cmp = [](uint16_t a, uint16_t b) {  // the 12 comparisons as o[0]'s low bits
    const double x = half_value(a), y = half_value(b);
    const bool u = std::isnan(x) || std::isnan(y);
    bool ordered[6] = {x == y, !u && x != y, x < y, x <= y, x > y, x >= y};
    unsigned bits = 0;
    for (int i = 0; i < 6; ++i) bits |= unsigned(ordered[i]) << i | unsigned(ordered[i] || u) << (6 + i);
    return bits;
  };
  auto mask = [](bool lo, bool hi) { return (lo ? 0xFFFFu : 0u) | (hi ? 0xFFFF0000u : 0u); };
  for (unsigned t = 0; t < n; ++t) {
    const uint16_t x = in[2 * t], y = in[2 * t + 1];
    const uint32_t* o = &out[12 * t];
    SCOPED_TRACE("thread " + std::to_string(t) + " x=" + hex(x) + " y=" + hex(y));
    const unsigned c = cmp(x, y), inf = x == 0x7C00 ? 2 : x == 0xFC00 ? 0 : 1;
    const unsigned ops = (c & 1) | (c >> 7 & 1) << 1 | (c >> 2 & 0xF) << 2;  // == uses eq, != neu
    EXPECT_EQ(o[0], c | unsigned(is_nan(x)) << 12 | inf << 13 | ops << 15);
    EXPECT_EQ(o[1], mask(cmp(x, y) >> 2 & 1, cmp(y, x) >> 2 & 1));
    EXPECT_EQ(o[2], (cmp(x, y) >> 11 & 1 ? 0x3C00u : 0u) | (cmp(y, x) >> 11 & 1 ? 0x3C000000u : 0u));
    EXPECT_EQ(o[3], (is_nan(x) ? 0x3C00u : 0u) | (is_nan(y) ? 0x3C000000u : 0u));
    const bool beq = !is_nan(x) && !is_nan(y);
    EXPECT_EQ(o[4], unsigned(beq) | unsigned((cmp(x, y) & cmp(y, x)) >> 8 & 1) << 1 |
                        unsigned((cmp(x, y) & cmp(y, x)) >> 1 & 1) << 2 | unsigned(cmp(x, y) & 1) << 3);
    const float lo = float(half_value(x)) * 3.0f, hi = float(half_value(y)) + 0.1f;
    EXPECT_HALF(uint16_t(o[5]), ref_from_double(lo));
    EXPECT_HALF(uint16_t(o[5] >> 16), ref_from_double(hi));
    EXPECT_EQ(o[6], uint32_t(y) | uint32_t(x) << 16);
    EXPECT_EQ(o[7], uint32_t(y) | uint32_t(y) << 16);
    float fy;
    std::memcpy(&fy, &o[8], 4);
    if (is_nan(y))
      EXPECT_TRUE(std::isnan(fy));
    else
      EXPECT_EQ(fy, float(half_value(y)));
    const unsigned base = t / 32 * 32, lane = t % 32, other = base + (lane ^ 5);
    EXPECT_EQ(o[9], uint32_t(in[2 * other]) | uint32_t(in[2 * other + 1]) << 16);
    EXPECT_EQ(o[10], in[2 * (base + ((lane * 3) & 31))]);
    EXPECT_EQ(o[11], in[2 * (lane + 2 < 32 ? t + 2 : t) + 1]);
  }
}

TEST_F(Device, WarpMatrixFragmentsOfHalvesAndBytes) {
  build(R"(
#include <mma.h>
using namespace nvcuda;
static_assert(wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major>::num_elements == 16, "");
static_assert(wmma::fragment<wmma::accumulator, 32, 8, 16, half>::num_elements == 8, "");
static_assert(wmma::fragment<wmma::matrix_a, 32, 8, 16, signed char, wmma::row_major>::num_elements == 16, "");
static_assert(wmma::fragment<wmma::matrix_b, 32, 8, 16, unsigned char, wmma::col_major>::num_elements == 4, "");
static_assert(wmma::fragment<wmma::matrix_a, 8, 32, 16, unsigned char, wmma::col_major>::num_elements == 4, "");
static_assert(sizeof(wmma::fragment<wmma::accumulator, 8, 32, 16, int>::element_type) == 4, "");

// D (16 x 16, column-major) = 2 (A B) + C: A row-major, B row-major, C row-major.
extern "C" __global__ void f32(const half* a, const half* b, const float* c, float* d) {
  wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> fa;
  wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::row_major> fb;
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc, fc;
  wmma::fill_fragment(acc, 0.0f);
  wmma::load_matrix_sync(fa, a, 16);
  wmma::load_matrix_sync(fb, b, 16);
  wmma::load_matrix_sync(fc, c, 16, wmma::mem_row_major);
  wmma::mma_sync(acc, fa, fb, acc);
  for (int i = 0; i < acc.num_elements; ++i) acc.x[i] = 2.0f * acc.x[i] + fc.x[i];
  wmma::store_matrix_sync(d, acc, 16, wmma::mem_col_major);
}
// D (8 x 32, row-major halves) = A (8 x 16, col-major) B (16 x 32, col-major) + 0.5.
extern "C" __global__ void f16(const half* a, const half* b, half* d) {
  wmma::fragment<wmma::matrix_a, 8, 32, 16, half, wmma::col_major> fa;
  wmma::fragment<wmma::matrix_b, 8, 32, 16, half, wmma::col_major> fb;
  wmma::fragment<wmma::accumulator, 8, 32, 16, half> acc;
  wmma::fill_fragment(acc, __float2half(0.5f));
  wmma::load_matrix_sync(fa, a, 8);
  wmma::load_matrix_sync(fb, b, 16);
  wmma::mma_sync(acc, fa, fb, acc);
  wmma::store_matrix_sync(d, acc, 32, wmma::mem_row_major);
}
// D (32 x 8, row-major) = A (32 x 16 u8, row-major) B (16 x 8 u8, col-major) + C (col-major), saturated;
// E the same with signed bytes (A's and B's bits), wrapping.
extern "C" __global__ void i8(const unsigned char* a, const unsigned char* b, const int* c, int* d, int* e) {
  wmma::fragment<wmma::matrix_a, 32, 8, 16, unsigned char, wmma::row_major> ua;
  wmma::fragment<wmma::matrix_b, 32, 8, 16, unsigned char, wmma::col_major> ub;
  wmma::fragment<wmma::matrix_a, 32, 8, 16, signed char, wmma::row_major> sa;
  wmma::fragment<wmma::matrix_b, 32, 8, 16, signed char, wmma::col_major> sb;
  wmma::fragment<wmma::accumulator, 32, 8, 16, int> fc, acc;
  wmma::load_matrix_sync(ua, a, 16);
  wmma::load_matrix_sync(ub, b, 16);
  wmma::load_matrix_sync(sa, (const signed char*)a, 16);
  wmma::load_matrix_sync(sb, (const signed char*)b, 16);
  wmma::load_matrix_sync(fc, c, 32, wmma::mem_col_major);
  wmma::mma_sync(acc, ua, ub, fc, true);
  wmma::store_matrix_sync(d, acc, 8, wmma::mem_row_major);
  wmma::mma_sync(acc, sa, sb, fc);
  wmma::store_matrix_sync(e, acc, 8, wmma::mem_row_major);
}
)");
  auto half_of = [](int quarters) { return ref_from_double(quarters / 4.0); };
  std::vector<uint32_t> words = qgpu::test::test_words(2048);
  size_t next = 6;
  auto small = [&](int range) { return int(words[next++ % words.size()] % (2 * range + 1)) - range; };

  // f32 accumulator: multiples of 1/4 up to 4, so every sum is exact.
  std::vector<uint16_t> a(256), b(256);
  std::vector<float> c(256);
  for (int i = 0; i < 256; ++i) a[i] = half_of(small(16)), b[i] = half_of(small(16)), c[i] = small(1000) / 8.0f;
  uint64_t da = put(a), db = put(b), dc = put(c), dd = alloc(256 * 4);
  LaunchResult r = launch("f32", {1, 1, 1}, {32, 1, 1}, da, db, dc, dd);
  ASSERT_EQ(r.error, 0) << r.message;
  std::vector<float> d = get<float>(dd, 256);
  for (int m = 0; m < 16; ++m)
    for (int nn = 0; nn < 16; ++nn) {
      double want = c[m * 16 + nn];
      for (int k = 0; k < 16; ++k) want += 2 * half_value(a[m * 16 + k]) * half_value(b[k * 16 + nn]);
      EXPECT_EQ(d[nn * 16 + m], want) << "f32 d[" << m << "][" << nn << "]";
    }

  // f16 accumulator: sums of 16 products of quarters below 2, exact in half.
  std::vector<uint16_t> a16(8 * 16), b16(16 * 32);
  for (auto& v : a16) v = half_of(small(4));
  for (auto& v : b16) v = half_of(small(4));
  uint64_t da16 = put(a16), db16 = put(b16), dd16 = alloc(8 * 32 * 2);
  r = launch("f16", {1, 1, 1}, {32, 1, 1}, da16, db16, dd16);
  ASSERT_EQ(r.error, 0) << r.message;
  std::vector<uint16_t> d16 = get<uint16_t>(dd16, 8 * 32);
  for (int m = 0; m < 8; ++m)
    for (int nn = 0; nn < 32; ++nn) {
      double want = 0.5;
      for (int k = 0; k < 16; ++k) want += half_value(a16[k * 8 + m]) * half_value(b16[nn * 16 + k]);
      EXPECT_EQ(d16[m * 32 + nn], ref_from_double(want)) << "f16 d[" << m << "][" << nn << "]";
    }

  // 8-bit inputs: unsigned saturating near INT_MAX, signed wrapping.
  std::vector<uint8_t> a8(32 * 16), b8(16 * 8);
  std::vector<int32_t> c8(32 * 8);
  for (auto& v : a8) v = uint8_t(words[next++ % words.size()]);
  for (auto& v : b8) v = uint8_t(words[next++ % words.size()]);
  for (size_t i = 0; i < c8.size(); ++i)
    c8[i] = i % 3 == 0 ? INT32_MAX - small(300000) - 300000 : i % 3 == 1 ? INT32_MIN + 7 : int32_t(words[i]);
  uint64_t da8 = put(a8), db8 = put(b8), dc8 = put(c8), dd8 = alloc(32 * 8 * 4), de8 = alloc(32 * 8 * 4);
  r = launch("i8", {1, 1, 1}, {32, 1, 1}, da8, db8, dc8, dd8, de8);
  ASSERT_EQ(r.error, 0) << r.message;
  std::vector<int32_t> d8 = get<int32_t>(dd8, 32 * 8), e8 = get<int32_t>(de8, 32 * 8);
  int saturated = 0;
  for (int m = 0; m < 32; ++m)
    for (int nn = 0; nn < 8; ++nn) {
      int64_t sum = c8[nn * 32 + m];
      uint32_t wrapped = uint32_t(c8[nn * 32 + m]);
      for (int k = 0; k < 16; ++k) {
        sum += int64_t(a8[m * 16 + k]) * b8[nn * 16 + k];
        wrapped += uint32_t(int32_t(int8_t(a8[m * 16 + k])) * int8_t(b8[nn * 16 + k]));
      }
      if (sum > INT32_MAX) sum = INT32_MAX, ++saturated;
      EXPECT_EQ(d8[m * 8 + nn], int32_t(sum)) << "u8 d[" << m << "][" << nn << "]";
      EXPECT_EQ(e8[m * 8 + nn], int32_t(wrapped)) << "s8 e[" << m << "][" << nn << "]";
    }
  EXPECT_GT(saturated, 0);
}

}  // namespace
