// Kernels compiled by nvcc and clang-19 (tests/ptx/kernels), run on the PTX
// interpreter and compared with CPU computations.
#include <algorithm>
#include <cmath>
#include <bit>
#include <numeric>

#include "harness.h"

namespace qgpu::ptx::test {
namespace {

class NvccKernels : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { module_ = new Module(parse(generated_ptx("e2e.ptx"))); }
  static void TearDownTestSuite() {
    delete module_;
    module_ = nullptr;
  }
  void SetUp() override { dev.load(*module_); }

  const Module& m() const { return *module_; }
  Params params(const std::string& k) const { return Params(*m().find_function(k)); }
  launch::LaunchResult launch(const std::string& k, launch::Dim3 grid, launch::Dim3 block, const Params& p,
                              uint32_t dyn = 0) {
    return run(m(), k, grid, block, dyn, p.bytes(), dev.symbols, dev.mem);
  }

  static Module* module_;
  Device dev;
};
Module* NvccKernels::module_ = nullptr;

std::vector<int> sample_ints(size_t n, uint32_t seed) {
  std::vector<int> v(n);
  uint32_t x = seed;
  for (int& e : v) {
    x = x * 1664525u + 1013904223u;
    e = static_cast<int>(x >> 8) % 2001 - 1000;
  }
  return v;
}

TEST_F(NvccKernels, VecAddWithPartialLastBlock) {
  const int n = 300;
  auto a = sample_ints(n, 1), b = sample_ints(n, 2);
  uint64_t da = dev.upload(a), db = dev.upload(b), dc = dev.upload(std::vector<int>(n + 4, 7));
  auto p = params("vec_add");
  p.arg(da).arg(db).arg(dc).arg(n);
  auto r = launch("vec_add", {3, 1, 1}, {128, 1, 1}, p);
  ASSERT_EQ(r.error, 0) << r.message;
  auto c = dev.download<int>(dc, n + 4);
  for (int i = 0; i < n; ++i) EXPECT_EQ(c[i], a[i] + b[i]) << i;
  for (int i = n; i < n + 4; ++i) EXPECT_EQ(c[i], 7);  // beyond n: untouched
}

TEST_F(NvccKernels, SharedMemoryTreeReduction) {
  auto in = sample_ints(4 * 128, 3);
  uint64_t din = dev.upload(in), dout = dev.alloc(16);
  auto p = params("block_reduce");
  p.arg(din).arg(dout);
  auto r = launch("block_reduce", {4, 1, 1}, {128, 1, 1}, p);
  ASSERT_EQ(r.error, 0) << r.message;
  auto out = dev.download<int>(dout, 4);
  for (int b = 0; b < 4; ++b)
    EXPECT_EQ(out[b], std::accumulate(in.begin() + b * 128, in.begin() + (b + 1) * 128, 0));
}

TEST_F(NvccKernels, WarpShuffles) {
  const int n = 64;
  auto in = sample_ints(n, 4);
  uint64_t din = dev.upload(in), dout = dev.alloc(n * 5 * 4), dtot = dev.upload(std::vector<int>{0});
  auto p = params("warp_ops");
  p.arg(din).arg(dout).arg(dtot);
  auto r = launch("warp_ops", {1, 1, 1}, {n, 1, 1}, p);
  ASSERT_EQ(r.error, 0) << r.message;
  auto out = dev.download<int>(dout, n * 5);
  for (int i = 0; i < n; ++i) {
    int w = i / 32 * 32, lane = i % 32;
    // shfl_down tree: lane l accumulates lanes l..l+k within the warp where
    // the source stays in range; computed by simulating the same steps.
    std::vector<int> s(in.begin() + w, in.begin() + w + 32);
    for (int o = 16; o > 0; o >>= 1) {
      std::vector<int> t = s;
      for (int l = 0; l < 32; ++l) t[l] = s[l] + (l + o < 32 ? s[l + o] : s[l]);
      s = t;
    }
    EXPECT_EQ(out[i * 5 + 0], s[lane]) << i;
    EXPECT_EQ(out[i * 5 + 1], in[w + 3]) << i;
    EXPECT_EQ(out[i * 5 + 2], in[w + (lane >= 1 ? lane - 1 : lane)]) << i;
    EXPECT_EQ(out[i * 5 + 3], in[w + (lane ^ 5)]) << i;
    int seg = lane / 8 * 8;  // width 8: stays inside its segment
    EXPECT_EQ(out[i * 5 + 4], in[w + (lane + 2 < seg + 8 ? lane + 2 : lane)]) << i;
  }
  int total = std::accumulate(in.begin(), in.end(), 0);
  EXPECT_EQ(dev.download<int>(dtot, 1)[0], total);
}

TEST_F(NvccKernels, VotesBallotsMatchAndActivemask) {
  const int n = 64;
  auto in = sample_ints(n, 5);
  in[0] = 150;  // one value > 100 in warp 0 only
  for (int i = 32; i < 64; ++i) in[i] = std::min(in[i], 100);
  uint64_t din = dev.upload(in), dout = dev.alloc(n * 6 * 4);
  auto p = params("votes");
  p.arg(din).arg(dout);
  auto r = launch("votes", {1, 1, 1}, {n, 1, 1}, p);
  ASSERT_EQ(r.error, 0) << r.message;
  auto out = dev.download<uint32_t>(dout, n * 6);
  for (int w = 0; w < 2; ++w) {
    uint32_t ballot = 0, odd = 0;
    bool any = false, all = true;
    for (int l = 0; l < 32; ++l) {
      int v = in[w * 32 + l];
      if (v > 0) ballot |= 1u << l;
      if (v & 1) odd |= 1u << l;
      any |= v > 100;
      all &= v > -100;
    }
    for (int l = 0; l < 32; ++l) {
      int i = w * 32 + l;
      EXPECT_EQ(out[i * 6 + 0], ballot) << i;
      EXPECT_EQ(out[i * 6 + 1], uint32_t(any)) << i;
      EXPECT_EQ(out[i * 6 + 2], uint32_t(all)) << i;
      EXPECT_EQ(out[i * 6 + 3], uint32_t(std::popcount(ballot))) << i;
      uint32_t same = 0;
      for (int k = 0; k < 32; ++k)
        if ((in[w * 32 + k] & 3) == (in[i] & 3)) same |= 1u << k;
      EXPECT_EQ(out[i * 6 + 4], same) << i;
      EXPECT_EQ(out[i * 6 + 5], (in[i] & 1) ? odd : 0u) << i;
    }
  }
}

TEST_F(NvccKernels, HistogramWithSharedAndGlobalAtomics) {
  const int n = 1000;
  std::vector<uint8_t> data(n);
  for (int i = 0; i < n; ++i) data[i] = static_cast<uint8_t>(i * 37 + i / 7);
  uint64_t dd = dev.upload(data), bins = dev.upload(std::vector<uint32_t>(16, 0));
  auto p = params("histogram");
  p.arg(dd).arg(n).arg(bins);
  auto r = launch("histogram", {3, 1, 1}, {64, 1, 1}, p);
  ASSERT_EQ(r.error, 0) << r.message;
  std::vector<uint32_t> want(16, 0);
  for (uint8_t d : data) ++want[d & 15];
  EXPECT_EQ(dev.download<uint32_t>(bins, 16), want);
}

TEST_F(NvccKernels, AtomicOperations) {
  const int t = 96;
  std::vector<int> g = {-5, 1000, -1, 0, 0, 0, 0, 0};
  std::vector<uint32_t> u = {0, 3};
  uint64_t dg = dev.upload(g), du = dev.upload(u);
  auto p = params("atomics");
  p.arg(dg).arg(du);
  auto r = launch("atomics", {1, 1, 1}, {t, 1, 1}, p);
  ASSERT_EQ(r.error, 0) << r.message;
  auto out = dev.download<int>(dg, 8);
  auto uo = dev.download<uint32_t>(du, 2);
  int mx = -5, mn = 1000, an = -1, orr = 0, x = 0, smax = -1000;
  for (int i = 0; i < t; ++i) {
    mx = std::max(mx, i * 7 % 23);
    mn = std::min(mn, 50 - i);
    an &= ~(1 << (i % 31));
    orr |= 1 << (i % 31);
    x ^= i;
    smax = std::max(smax, (i * 13) % 37);
  }
  EXPECT_EQ(out[0], mx);
  EXPECT_EQ(out[1], mn);
  EXPECT_EQ(out[2], an);
  EXPECT_EQ(out[3], orr);
  EXPECT_EQ(out[4], x);
  // The CAS chain advances once per thread in execution order (lane order
  // within the warp, warps in order): 0 -> 1 -> ... -> t.
  EXPECT_EQ(out[5], t);
  EXPECT_EQ(out[6], 99);
  EXPECT_EQ(out[7], smax);
  uint32_t inc = 0, dec = 3;
  for (int i = 0; i < t; ++i) {
    inc = inc >= 10 ? 0 : inc + 1;
    dec = (dec == 0 || dec > 7) ? 7 : dec - 1;
  }
  EXPECT_EQ(uo[0], inc);
  EXPECT_EQ(uo[1], dec);
}

TEST_F(NvccKernels, Int64Arithmetic) {
  std::vector<long long> a = {0, 1, -1, LLONG_MIN, LLONG_MAX, 123456789012345LL, -98765432109LL, 7, 1LL << 40, -3};
  std::vector<long long> b = {3, -1, 7, -1, 2, -1000, 0, 64, 65, -(1LL << 33)};
  const int n = static_cast<int>(a.size());
  uint64_t da = dev.upload(a), db = dev.upload(b), dout = dev.alloc(n * 8 * 8);
  auto p = params("int64_math");
  p.arg(da).arg(db).arg(dout);
  auto r = launch("int64_math", {1, 1, 1}, {uint32_t(n), 1, 1}, p);
  ASSERT_EQ(r.error, 0) << r.message;
  auto out = dev.download<long long>(dout, n * 8);
  for (int i = 0; i < n; ++i) {
    long long x = a[i], y = b[i];
    unsigned long long ux = x, uy = y;
    auto s_div = [](long long p, long long q) { return (p == LLONG_MIN && q == -1) ? p : p / q; };
    auto s_rem = [](long long p, long long q) { return (p == LLONG_MIN && q == -1) ? 0 : p % q; };
    EXPECT_EQ(out[i * 8 + 0], y ? s_div(x, y) : 0) << i;
    EXPECT_EQ(out[i * 8 + 1], y ? s_rem(x, y) : 0) << i;
    EXPECT_EQ(out[i * 8 + 2], uy ? (long long)(ux / uy) : 0) << i;
    EXPECT_EQ(out[i * 8 + 3], uy ? (long long)(ux % uy) : 0) << i;
    EXPECT_EQ(out[i * 8 + 4], (long long)(ux * uy)) << i;
    EXPECT_EQ(out[i * 8 + 5], (long long)((__int128)x * y >> 64)) << i;
    EXPECT_EQ(out[i * 8 + 6], (long long)((unsigned __int128)ux * uy >> 64)) << i;
    EXPECT_EQ(out[i * 8 + 7], (x >> (y & 63)) ^ (long long)(ux << (uy & 63))) << i;
  }
}

TEST_F(NvccKernels, BitIntrinsics) {
  std::vector<uint32_t> a = {0, 1, 0xFFFFFFFFu, 0x80000000u, 0x7FFFFFFFu, 0x12345678u, 0xDEADBEEFu, 0x00F000F0u};
  std::vector<uint32_t> b = {5, 0xFFFFFFFFu, 31, 32, 40, 0x87654321u, 8, 0xFFu};
  const int n = static_cast<int>(a.size());
  uint64_t da = dev.upload(a), db = dev.upload(b), dout = dev.alloc(n * 10 * 4);
  auto p = params("bits");
  p.arg(da).arg(db).arg(dout);
  auto r = launch("bits", {1, 1, 1}, {uint32_t(n), 1, 1}, p);
  ASSERT_EQ(r.error, 0) << r.message;
  auto out = dev.download<uint32_t>(dout, n * 10);
  for (int i = 0; i < n; ++i) {
    uint32_t x = a[i], y = b[i];
    uint32_t rev = 0;
    for (int k = 0; k < 32; ++k)
      if (x >> k & 1) rev |= 1u << (31 - k);
    uint32_t sel = 0x5140 + (y & 0x8);
    uint64_t both = (uint64_t(y) << 32) | x;
    uint32_t perm = 0;
    for (int k = 0; k < 4; ++k) perm |= uint32_t((both >> (8 * ((sel >> (4 * k)) & 7))) & 0xFF) << (8 * k);
    unsigned sh = y & 63;
    EXPECT_EQ(out[i * 10 + 0], uint32_t(std::popcount(x))) << i;
    EXPECT_EQ(out[i * 10 + 1], uint32_t(std::countl_zero(x))) << i;
    EXPECT_EQ(out[i * 10 + 2], rev) << i;
    EXPECT_EQ(out[i * 10 + 3], perm) << i;
    EXPECT_EQ(out[i * 10 + 4], uint32_t((both << (sh & 31)) >> 32)) << i;  // __funnelshift_l wraps
    EXPECT_EQ(out[i * 10 + 5], uint32_t(both >> std::min(sh, 32u))) << i;   // __funnelshift_rc clamps
    EXPECT_EQ(out[i * 10 + 6], x ? uint32_t(std::countr_zero(x) + 1) : 0u) << i;
    EXPECT_EQ(out[i * 10 + 7], uint32_t((uint64_t(x) * y) >> 32)) << i;
    EXPECT_EQ(out[i * 10 + 8], 5u + uint32_t(std::llabs((long long)(int)x - (int)y))) << i;
    int64_t x24 = int64_t(uint64_t(x) << 40) >> 40, y24 = int64_t(uint64_t(y) << 40) >> 40;
    EXPECT_EQ(out[i * 10 + 9], uint32_t(x24 * y24)) << i;
  }
}

int collatz(int n, int limit) {
  int steps = 0;
  while (n != 1 && steps < limit) {
    ++steps;
    n = (n & 1) ? 3 * n + 1 : n >> 1;
  }
  return steps;
}

TEST_F(NvccKernels, DeviceFunctionWithLoops) {
  std::vector<int> in(64);
  for (int i = 0; i < 64; ++i) in[i] = i + 1;
  in[5] = 27;  // 111 steps
  in[6] = -7;  // never reaches 1: stops at the limit
  uint64_t din = dev.upload(in), dout = dev.alloc(64 * 4);
  auto p = params("calls");
  p.arg(din).arg(dout);
  auto r = launch("calls", {2, 1, 1}, {32, 1, 1}, p);
  ASSERT_EQ(r.error, 0) << r.message;
  auto out = dev.download<int>(dout, 64);
  for (int i = 0; i < 64; ++i) EXPECT_EQ(out[i], collatz(in[i], 200)) << i;
}

TEST_F(NvccKernels, StructParamsConstantsAndGlobals) {
  struct Pair {
    int a;
    long long b;
    char c;
  };
  static_assert(sizeof(Pair) == 24);
  std::vector<int> ctab = {3, 1, 4, 1, 5, 9, 2, 6};
  std::memcpy(&dev.mem.bytes[dev.symbols.at("ctab") - dev.mem.base], ctab.data(), 32);
  uint64_t dout = dev.alloc(40 * 4);
  Pair pr{100, 1LL << 35 | 7, -3};
  auto p = params("params_and_globals");
  p.arg(pr).arg(dout);
  auto r = launch("params_and_globals", {2, 1, 1}, {20, 1, 1}, p);
  ASSERT_EQ(r.error, 0) << r.message;
  auto out = dev.download<int>(dout, 20);
  int gt[4] = {10, 20, 30, 40};
  for (int t = 0; t < 20; ++t) EXPECT_EQ(out[t], 100 + 7 - 3 + ctab[t & 7] + gt[t & 3]) << t;
  EXPECT_EQ(dev.download<int>(dev.symbols.at("gcounter"), 1)[0], 40);
}

TEST_F(NvccKernels, ParameterReadWithComputedOffset) {
  struct Big {
    int v[64];
  } big;
  for (int k = 0; k < 64; ++k) big.v[k] = k * k - 100;
  uint64_t dout = dev.alloc(64 * 4);
  auto p = params("pick");
  p.arg(big).arg(dout).arg(61);
  auto r = launch("pick", {1, 1, 1}, {64, 1, 1}, p);
  ASSERT_EQ(r.error, 0) << r.message;
  auto out = dev.download<int>(dout, 64);
  for (int t = 0; t < 64; ++t) EXPECT_EQ(out[t], big.v[(61 + t) & 63]) << t;
}

TEST_F(NvccKernels, DynamicSharedMemory) {
  auto in = sample_ints(96, 9);
  uint64_t d = dev.upload(in);
  auto p = params("dyn_smem");
  p.arg(d);
  auto r = launch("dyn_smem", {3, 1, 1}, {32, 1, 1}, p, 32 * 4);
  ASSERT_EQ(r.error, 0) << r.message;
  auto out = dev.download<int>(d, 96);
  for (int b = 0; b < 3; ++b)
    for (int t = 0; t < 32; ++t) EXPECT_EQ(out[b * 32 + t], in[b * 32 + 31 - t]);
  // Without the dynamic allocation the access is out of range.
  auto bad = launch("dyn_smem", {1, 1, 1}, {32, 1, 1}, p, 0);
  EXPECT_EQ(bad.error, 700) << bad.message;
}

TEST_F(NvccKernels, Grid2D) {
  const int w = 12, h = 6;
  uint64_t dout = dev.alloc(w * h * 4);
  auto p = params("grid2d");
  p.arg(dout).arg(w);
  auto r = launch("grid2d", {3, 2, 1}, {4, 3, 1}, p);
  ASSERT_EQ(r.error, 0) << r.message;
  auto out = dev.download<int>(dout, w * h);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) EXPECT_EQ(out[y * w + x], x * 1000 + y);
}

TEST_F(NvccKernels, BarrierReductions) {
  std::vector<int> in = sample_ints(96, 11);
  uint64_t din = dev.upload(in), dout = dev.alloc(12);
  auto p = params("sync_reductions");
  p.arg(din).arg(dout);
  auto r = launch("sync_reductions", {1, 1, 1}, {96, 1, 1}, p);
  ASSERT_EQ(r.error, 0) << r.message;
  auto out = dev.download<int>(dout, 3);
  int c = 0;
  bool a = true, o = false;
  for (int v : in) {
    c += v > 0;
    a &= v > -5;
    o |= v > 40;
  }
  EXPECT_EQ(out[0], c);
  EXPECT_EQ(out[1], int(a));
  EXPECT_EQ(out[2], int(o));
}

TEST_F(NvccKernels, DevicePrintf) {
  auto p = params("say");
  p.arg(7);
  auto r = launch("say", {1, 1, 1}, {2, 1, 1}, p);
  ASSERT_EQ(r.error, 0) << r.message;
  EXPECT_EQ(r.printf_output,
            "thread 0 x=7 hex=6f9 ll=60129542144 s=ok c=A %\n"
            "thread 1 x=7 hex=6f9 ll=60129542144 s=ok c=B %\n");
}

TEST_F(NvccKernels, DeviceAssert) {
  auto p = params("check");
  p.arg(5);
  EXPECT_EQ(launch("check", {1, 1, 1}, {4, 1, 1}, p).error, 0);
  auto r = launch("check", {1, 1, 1}, {8, 1, 1}, p);
  EXPECT_EQ(r.error, 710);
  EXPECT_NE(r.message.find("thread: [5,0,0]"), std::string::npos) << r.message;
  EXPECT_NE(r.message.find("Assertion `x != (int)threadIdx.x` failed"), std::string::npos) << r.message;
  EXPECT_NE(r.message.find("e2e.cu"), std::string::npos) << r.message;
}

TEST_F(NvccKernels, FloatingPointKernelRuns) {
  uint64_t d = dev.upload(std::vector<float>{1.0f, -0.5f, 3.0e38f, std::ldexp(1.0f, -149)});
  auto p = params("scale");
  p.arg(d).arg(2.0f);
  auto r = launch("scale", {1, 1, 1}, {4, 1, 1}, p);
  EXPECT_EQ(r.error, 0) << r.message;
  // IEEE products: exact, overflowing to infinity, a subnormal doubled.
  EXPECT_EQ(dev.download<float>(d, 4), (std::vector<float>{2.0f, -1.0f, INFINITY, std::ldexp(1.0f, -148)}));
}

TEST(ClangKernels, MixedKernel) {
  Module m = parse(generated_ptx("clang_kernels.ptx"));
  Device dev;
  dev.load(m);
  const int n = 100;
  auto in = sample_ints(n, 13);
  uint64_t din = dev.upload(in), dout = dev.alloc(n * 8);
  Params p(*m.find_function("clang_mix"));
  p.arg(din).arg(dout).arg(n);
  auto r = run(m, "clang_mix", {2, 1, 1}, {64, 1, 1}, 0, p.bytes(), dev.symbols, dev.mem);
  ASSERT_EQ(r.error, 0) << r.message;
  auto out = dev.download<long long>(dout, n);
  const int bias[4] = {1, 2, 3, 4};
  for (int b = 0; b < 2; ++b) {
    std::vector<int> tile(64), v(64);
    for (int t = 0; t < 64; ++t) tile[t] = b * 64 + t < n ? in[b * 64 + t] : 0;
    for (int t = 0; t < 64; ++t) v[t] = tile[(t + 1) % 64];
    std::vector<int> v2(64);
    for (int t = 0; t < 64; ++t) v2[t] = v[t] + ((t % 32) + 1 < 32 ? v[t + 1] : v[t]);
    for (int t = 0; t < 64; ++t) {
      int i = b * 64 + t;
      if (i >= n) continue;
      uint32_t ballot = 0;
      for (int l = 0; l < 32; ++l)
        if (v2[t / 32 * 32 + l] > 2) ballot |= 1u << l;
      long long a = v2[t];
      long long want = a * bias[i & 3] + (a >> 3) + std::popcount(ballot) + (v2[t] / (n - i));
      EXPECT_EQ(out[i], want) << i;
    }
  }
}

}  // namespace
}  // namespace qgpu::ptx::test

namespace qgpu::ptx::test {
namespace {

class LibraryKernels : public ::testing::Test {
 protected:
  void SetUp() override {
    m = parse(generated_ptx("library.ptx"));
    dev.load(m);
  }
  launch::LaunchResult launch(const std::string& k, uint32_t threads, uint64_t arg0, uint64_t arg1 = 0) {
    Params p(*m.find_function(k));
    p.arg(arg0);
    if (m.find_function(k)->params.size() > 1) p.arg(arg1);
    return run(m, k, {1, 1, 1}, {threads, 1, 1}, 0, p.bytes(), dev.symbols, dev.mem);
  }
  Module m;
  Device dev;
};

TEST_F(LibraryKernels, CooperativeGroupsTiles) {
  auto in = sample_ints(64, 21);
  uint64_t din = dev.upload(in), dout = dev.alloc(64 * 16);
  auto r = launch("cg_tiles", 64, din, dout);
  ASSERT_EQ(r.error, 0) << r.message;
  auto out = dev.download<int>(dout, 64 * 4);
  for (int t = 0; t < 64; ++t) {
    int base = t / 16 * 16, sum = 0, any = 0;
    unsigned ballot = 0;
    for (int l = 0; l < 16; ++l) {
      sum += in[base + l];
      any |= in[base + l] > 900;
      if (in[base + l] & 1) ballot |= 1u << l;
    }
    EXPECT_EQ(out[t * 4 + 0], sum) << t;
    EXPECT_EQ(out[t * 4 + 1], in[base + ((t % 16) ^ 3)]) << t;
    EXPECT_EQ(out[t * 4 + 2], any) << t;
    EXPECT_EQ(unsigned(out[t * 4 + 3]), ballot) << t;
  }
}

TEST_F(LibraryKernels, CubBlockReduceAndScan) {
  auto in = sample_ints(128, 22);
  uint64_t din = dev.upload(in), dout = dev.alloc(129 * 4);
  auto r = launch("cub_reduce_scan", 128, din, dout);
  ASSERT_EQ(r.error, 0) << r.message;
  auto out = dev.download<int>(dout, 129);
  int prefix = 0;
  for (int t = 0; t < 128; ++t) {
    EXPECT_EQ(out[t], prefix) << t;
    prefix += in[t];
  }
  EXPECT_EQ(out[128], prefix);
}

TEST_F(LibraryKernels, CubBlockRadixSort) {
  std::vector<uint32_t> keys(512);
  uint32_t x = 12345;
  for (uint32_t& k : keys) k = x = x * 2654435761u + 97;
  keys[7] = 0;
  keys[8] = 0xFFFFFFFFu;
  uint64_t d = dev.upload(keys);
  auto r = launch("cub_radix_sort", 128, d);
  ASSERT_EQ(r.error, 0) << r.message;
  std::sort(keys.begin(), keys.end());
  EXPECT_EQ(dev.download<uint32_t>(d, 512), keys);
}

}  // namespace
}  // namespace qgpu::ptx::test
