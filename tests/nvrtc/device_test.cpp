// The built-in device headers, end to end: kernels compiled by our NVRTC,
// parsed by the PTX front end and run on the PTX-level reference
// interpreter, against references computed here on the host.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <sstream>

#include "device_fixture.h"

namespace {

using qgpu::test::Device;
using qgpu::test::test_words;
using qgpu::launch::LaunchResult;

// ---- host references, written from the CUDA documentation's definitions
uint32_t ref_clz(uint32_t x) {
  uint32_t n = 0;
  for (int b = 31; b >= 0 && !(x >> b & 1); --b) ++n;
  return n;
}
uint32_t ref_brev(uint32_t x) {
  uint32_t r = 0;
  for (int b = 0; b < 32; ++b) r |= (x >> b & 1) << (31 - b);
  return r;
}
uint32_t ref_byte_perm(uint32_t x, uint32_t y, uint32_t s) {
  uint8_t bytes[8];
  for (int i = 0; i < 4; ++i) bytes[i] = uint8_t(x >> 8 * i), bytes[4 + i] = uint8_t(y >> 8 * i);
  uint32_t r = 0;
  for (int i = 0; i < 4; ++i) r |= uint32_t(bytes[(s >> 4 * i) & 7]) << 8 * i;
  return r;
}
uint32_t ref_funnel_l(uint32_t lo, uint32_t hi, uint32_t shift) {
  uint64_t v = (uint64_t(hi) << 32 | lo) << shift;
  return uint32_t(v >> 32);
}
uint32_t ref_funnel_r(uint32_t lo, uint32_t hi, uint32_t shift) {
  return uint32_t((uint64_t(hi) << 32 | lo) >> shift);
}
uint32_t ref_ffs(uint32_t x) {
  for (int b = 0; b < 32; ++b)
    if (x >> b & 1) return b + 1;
  return 0;
}

TEST_F(Device, IntegerIntrinsicsMatchTheirDefinitions) {
  build(R"(
extern "C" __global__ void intrinsics(unsigned* out, const unsigned* in) {
  unsigned i = threadIdx.x, x = in[2 * i], y = in[2 * i + 1];
  unsigned* o = out + 12 * i;
  o[0] = __popc(x);
  o[1] = __clz(x);
  o[2] = __brev(x);
  o[3] = __byte_perm(x, y, (x ^ y) & 0x7777);
  o[4] = __funnelshift_l(x, y, i);
  o[5] = __funnelshift_r(x, y, i);
  o[6] = __funnelshift_lc(x, y, i);
  o[7] = __funnelshift_rc(x, y, i);
  o[8] = __ffs(x);
  o[9] = __umulhi(x, y);
  o[10] = __usad(x, y, i);
  o[11] = __urhadd(x, y);
}
)");
  const unsigned n = 64;
  std::vector<uint32_t> in = test_words(2 * n);
  uint64_t d_in = put(in), d_out = alloc(12 * n * 4);
  LaunchResult r = launch("intrinsics", {1, 1, 1}, {n, 1, 1}, d_out, d_in);
  ASSERT_EQ(r.error, 0) << r.message;
  std::vector<uint32_t> out = get<uint32_t>(d_out, 12 * n);
  for (unsigned i = 0; i < n; ++i) {
    uint32_t x = in[2 * i], y = in[2 * i + 1];
    const uint32_t* o = &out[12 * i];
    SCOPED_TRACE("thread " + std::to_string(i) + " x=" + std::to_string(x) + " y=" + std::to_string(y));
    EXPECT_EQ(o[0], uint32_t(__builtin_popcount(x)));
    EXPECT_EQ(o[1], ref_clz(x));
    EXPECT_EQ(o[2], ref_brev(x));
    EXPECT_EQ(o[3], ref_byte_perm(x, y, (x ^ y) & 0x7777));
    EXPECT_EQ(o[4], ref_funnel_l(x, y, i & 31));
    EXPECT_EQ(o[5], ref_funnel_r(x, y, i & 31));
    EXPECT_EQ(o[6], i >= 32 ? x : ref_funnel_l(x, y, i));
    EXPECT_EQ(o[7], i >= 32 ? y : ref_funnel_r(x, y, i));
    EXPECT_EQ(o[8], ref_ffs(x));
    EXPECT_EQ(o[9], uint32_t((uint64_t(x) * y) >> 32));
    EXPECT_EQ(o[10], (x > y ? x - y : y - x) + i);
    EXPECT_EQ(o[11], uint32_t((uint64_t(x) + y + 1) >> 1));
  }
}

TEST_F(Device, ShufflesVotesAndBlockVotes) {
  build(R"(
#include <cstdint>
extern "C" __global__ void warp(int32_t* out, const int32_t* in) {
  unsigned t = threadIdx.x, lane = t % 32;
  int32_t v = in[t];
  int32_t* o = out + 8 * t;
  o[0] = __shfl_sync(0xffffffffu, v, (lane * 7) & 31);
  o[1] = __shfl_up_sync(0xffffffffu, v, 3);
  o[2] = __shfl_down_sync(0xffffffffu, v, 5);
  o[3] = __shfl_xor_sync(0xffffffffu, v, 6);
  o[4] = __shfl_sync(0xffffffffu, v, 2, 8);
  o[5] = (int32_t)__ballot_sync(0xffffffffu, v & 1);
  o[6] = __any_sync(0xffffffffu, v == 4242) | (__all_sync(0xffffffffu, v >= -1000) << 1);
  o[7] = __syncthreads_count(v & 1);
}
)");
  const unsigned n = 64;
  std::vector<int32_t> in(n);
  for (unsigned i = 0; i < n; ++i) in[i] = int32_t(test_words(n)[i] % 2001) - 1000;
  in[37] = 4242;  // only warp 1 sees it
  uint64_t d_in = put(in), d_out = alloc(8 * n * 4);
  LaunchResult r = launch("warp", {1, 1, 1}, {n, 1, 1}, d_out, d_in);
  ASSERT_EQ(r.error, 0) << r.message;
  std::vector<int32_t> out = get<int32_t>(d_out, 8 * n);
  int block_odd = 0;
  for (int32_t v : in) block_odd += v & 1;
  for (unsigned t = 0; t < n; ++t) {
    unsigned warp = t / 32 * 32, lane = t % 32;
    auto at = [&](unsigned l) { return in[warp + l]; };
    uint32_t ballot = 0;
    bool any = false, all = true;
    for (unsigned l = 0; l < 32; ++l) {
      ballot |= uint32_t(at(l) & 1) << l;
      any |= at(l) == 4242;
      all &= at(l) >= -1000;
    }
    const int32_t* o = &out[8 * t];
    SCOPED_TRACE("thread " + std::to_string(t));
    EXPECT_EQ(o[0], at((lane * 7) & 31));
    EXPECT_EQ(o[1], lane >= 3 ? at(lane - 3) : at(lane));
    EXPECT_EQ(o[2], lane + 5 < 32 ? at(lane + 5) : at(lane));
    EXPECT_EQ(o[3], at(lane ^ 6));
    EXPECT_EQ(o[4], at((lane & ~7u) + 2));
    EXPECT_EQ(uint32_t(o[5]), ballot);
    EXPECT_EQ(o[6], int32_t(any) | int32_t(all) << 1);
    EXPECT_EQ(o[7], block_odd);
  }
}

TEST_F(Device, AtomicsOnGlobalMemory) {
  build(R"(
__device__ unsigned acc[8] = {0, 0, 0xffffffffu, 0, 0, 0, 0xffffffffu, 0};
extern "C" __global__ void atomics(const unsigned* in) {
  unsigned t = blockIdx.x * blockDim.x + threadIdx.x, v = in[t];
  atomicAdd(&acc[0], t + 1);
  atomicMax(&acc[1], v);
  atomicMin(&acc[2], v);
  atomicInc(&acc[3], 9u);
  atomicOr(&acc[4], 1u << (t % 32));
  atomicXor(&acc[5], v);
  atomicAnd(&acc[6], ~(1u << (t % 31)));
  unsigned old;
  do { old = acc[7]; } while (atomicCAS(&acc[7], old, old + 2) != old);
}
)");
  const unsigned blocks = 2, threads = 48, n = blocks * threads;
  std::vector<uint32_t> in = test_words(n);
  uint64_t d_in = put(in);
  LaunchResult r = launch("atomics", {blocks, 1, 1}, {threads, 1, 1}, d_in);
  ASSERT_EQ(r.error, 0) << r.message;
  std::vector<uint32_t> acc = get<uint32_t>(symbol("acc"), 8);
  uint32_t mx = 0, mn = 0xffffffffu, x = 0, orv = 0, andv = 0xffffffffu;
  for (unsigned t = 0; t < n; ++t) {
    mx = std::max(mx, in[t]), mn = std::min(mn, in[t]), x ^= in[t];
    orv |= 1u << (t % 32), andv &= ~(1u << (t % 31));
  }
  EXPECT_EQ(acc[0], n * (n + 1) / 2);
  EXPECT_EQ(acc[1], mx);
  EXPECT_EQ(acc[2], mn);
  EXPECT_EQ(acc[3], n % 10);  // atomicInc wraps to 0 after 9
  EXPECT_EQ(acc[4], orv);
  EXPECT_EQ(acc[5], x);
  EXPECT_EQ(acc[6], andv);
  EXPECT_EQ(acc[7], 2 * n);
}

TEST_F(Device, BuiltInVariablesInTwoDimensions) {
  build(R"(
extern "C" __global__ void where(unsigned* out) {
  dim3 b = blockDim, g = gridDim;
  unsigned block = blockIdx.y * g.x + blockIdx.x;
  unsigned t = block * (b.x * b.y) + threadIdx.y * b.x + threadIdx.x;
  out[t] = blockIdx.x | blockIdx.y << 4 | threadIdx.x << 8 | threadIdx.y << 12 |
           g.x << 16 | g.y << 20 | b.x << 24 | b.y << 28 | (warpSize == 32 ? 0 : 0xf);
}
)");
  const unsigned gx = 2, gy = 3, bx = 4, by = 2;
  uint64_t d_out = alloc(gx * gy * bx * by * 4);
  LaunchResult r = launch("where", {gx, gy, 1}, {bx, by, 1}, d_out);
  ASSERT_EQ(r.error, 0) << r.message;
  std::vector<uint32_t> out = get<uint32_t>(d_out, gx * gy * bx * by);
  unsigned t = 0;
  for (unsigned y = 0; y < gy; ++y)
    for (unsigned x = 0; x < gx; ++x)
      for (unsigned ty = 0; ty < by; ++ty)
        for (unsigned tx = 0; tx < bx; ++tx)
          EXPECT_EQ(out[t++], x | y << 4 | tx << 8 | ty << 12 | gx << 16 | gy << 20 | bx << 24 |
                                  by << 28);
}

TEST_F(Device, SharedMemoryTemplatesAndDefines) {
  build(R"(
template <int N, typename T> __device__ T sum_shared(const T* s) {
  T total = 0;
  for (int i = 0; i < N; ++i) total += s[i];
  return total;
}
extern "C" __global__ void block_sums(long long* out, const long long* in) {
  __shared__ long long s[THREADS];
  s[threadIdx.x] = in[blockIdx.x * THREADS + threadIdx.x] * FACTOR;
  __syncthreads();
  if (threadIdx.x == 0) out[blockIdx.x] = sum_shared<THREADS>(s);
}
)",
        {"-DTHREADS=32", "-DFACTOR=3"});
  std::vector<int64_t> in(96);
  for (size_t i = 0; i < in.size(); ++i) in[i] = int64_t(i) * 1000003 - 40000000;
  uint64_t d_in = put(in), d_out = alloc(3 * 8);
  LaunchResult r = launch("block_sums", {3, 1, 1}, {32, 1, 1}, d_out, d_in);
  ASSERT_EQ(r.error, 0) << r.message;
  std::vector<int64_t> out = get<int64_t>(d_out, 3);
  for (int b = 0; b < 3; ++b) {
    int64_t want = 0;
    for (int i = 0; i < 32; ++i) want += in[b * 32 + i] * 3;
    EXPECT_EQ(out[b], want) << "block " << b;
  }
}

TEST_F(Device, MinMaxOverloadsAndMemcpy) {
  build(R"(
struct Pair { int a, b; };
extern "C" __global__ void mm(unsigned* out, const int* in) {
  int x = in[threadIdx.x], y = in[threadIdx.x + 4];
  unsigned* o = out + 6 * threadIdx.x;
  o[0] = min(x, y);
  o[1] = max(x, y);
  o[2] = min(x, (unsigned)y);  // mixed: compared as unsigned
  o[3] = max((unsigned)x, y);
  o[4] = umin(x, y);
  Pair p = {x, y}, q;
  memcpy(&q, &p, sizeof q);
  o[5] = q.a - q.b;
}
)");
  std::vector<int32_t> in = {-5, 7, 0, -2147483647 - 1, 3, -7, 0, 2147483647};
  uint64_t d_in = put(in), d_out = alloc(6 * 4 * 4);
  LaunchResult r = launch("mm", {1, 1, 1}, {4, 1, 1}, d_out, d_in);
  ASSERT_EQ(r.error, 0) << r.message;
  std::vector<uint32_t> out = get<uint32_t>(d_out, 24);
  for (int t = 0; t < 4; ++t) {
    int x = in[t], y = in[t + 4];
    uint32_t ux = uint32_t(x), uy = uint32_t(y);
    SCOPED_TRACE("thread " + std::to_string(t));
    EXPECT_EQ(out[6 * t + 0], uint32_t(x < y ? x : y));
    EXPECT_EQ(out[6 * t + 1], uint32_t(x < y ? y : x));
    EXPECT_EQ(out[6 * t + 2], ux < uy ? ux : uy);
    EXPECT_EQ(out[6 * t + 3], ux < uy ? uy : ux);
    EXPECT_EQ(out[6 * t + 4], ux < uy ? ux : uy);
    EXPECT_EQ(out[6 * t + 5], ux - uy);
  }
}

TEST_F(Device, PrintfAndAssert) {
  build(R"(
extern "C" __global__ void talk(const int* in) {
  printf("thread %d has %d\n", threadIdx.x, in[threadIdx.x]);
}
extern "C" __global__ void check(const int* in) {
  assert(in[threadIdx.x] >= 0);
}
)");
  std::vector<int32_t> in = {5, -6, 70, 8};
  uint64_t d_in = put(in);
  LaunchResult r = launch("talk", {1, 1, 1}, {4, 1, 1}, d_in);
  ASSERT_EQ(r.error, 0) << r.message;
  std::vector<std::string> lines;
  std::istringstream printed(r.printf_output);
  for (std::string line; std::getline(printed, line);) lines.push_back(line);
  std::sort(lines.begin(), lines.end());
  EXPECT_EQ(lines, (std::vector<std::string>{"thread 0 has 5", "thread 1 has -6", "thread 2 has 70",
                                             "thread 3 has 8"}));
  LaunchResult failed = launch("check", {1, 1, 1}, {4, 1, 1}, d_in);
  EXPECT_EQ(failed.error, 710);  // cudaErrorAssert
}

}  // namespace
