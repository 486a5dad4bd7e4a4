// Special registers, warp-level odds and ends, state-space conversions and
// indirect calls in the PTX interpreter, on hand-written PTX.
#include "harness.h"

namespace qgpu::ptx::test {
namespace {

const char* kMisc = R"(
.version 9.0
.target sm_75
.address_size 64
.visible .entry misc(.param .u64 misc_out)
{
  .local .align 4 .b8 buf[8];
  .reg .b32 %r<16>;
  .reg .b64 %rd<10>;
  .reg .pred %p<8>;
  ld.param.u64 %rd1, [misc_out];
  mov.u32 %r1, %tid.x;
  mul.wide.u32 %rd2, %r1, 64;
  add.s64 %rd3, %rd1, %rd2;
  mov.u32 %r2, %laneid;
  st.global.u32 [%rd3], %r2;
  mov.u32 %r3, %warpid;
  st.global.u32 [%rd3+4], %r3;
  mov.u32 %r4, %nwarpid;
  st.global.u32 [%rd3+8], %r4;
  mov.u32 %r5, %lanemask_lt;
  st.global.u32 [%rd3+12], %r5;
  mov.u32 %r6, %lanemask_ge;
  st.global.u32 [%rd3+16], %r6;
  and.b32 %r8, %r1, 3;
  setp.eq.u32 %p1, %r8, %r8;
  vote.sync.uni.pred %p2, %p1, -1;
  selp.u32 %r9, 1, 0, %p2;
  st.global.u32 [%rd3+20], %r9;
  setp.eq.u32 %p3, %r8, 0;
  vote.sync.uni.pred %p4, %p3, -1;
  selp.u32 %r9, 1, 0, %p4;
  st.global.u32 [%rd3+24], %r9;
  shr.u32 %r10, %r1, 5;
  match.all.sync.b32 %r11|%p5, %r10, -1;
  st.global.u32 [%rd3+28], %r11;
  selp.u32 %r9, 1, 0, %p5;
  st.global.u32 [%rd3+32], %r9;
  match.all.sync.b32 %r11|%p5, %r8, -1;
  st.global.u32 [%rd3+36], %r11;
  selp.u32 %r9, 1, 0, %p5;
  st.global.u32 [%rd3+40], %r9;
  bar.warp.sync -1;
  membar.gl;
  fence.acq_rel.gpu;
  nanosleep.u32 10;
  mov.u64 %rd4, %clock64;
  mov.u64 %rd5, %clock64;
  setp.gt.u64 %p6, %rd5, %rd4;
  selp.u32 %r9, 1, 0, %p6;
  st.global.u32 [%rd3+44], %r9;
  mov.u64 %rd6, buf;
  cvta.local.u64 %rd7, %rd6;
  st.u32 [%rd7+4], %r1;
  ld.local.u32 %r12, [buf+4];
  st.global.u32 [%rd3+48], %r12;
  isspacep.local %p7, %rd7;
  selp.u32 %r9, 1, 0, %p7;
  st.global.u32 [%rd3+52], %r9;
  isspacep.global %p7, %rd3;
  selp.u32 %r9, 1, 0, %p7;
  st.global.u32 [%rd3+56], %r9;
  cvta.to.local.u64 %rd8, %rd7;
  sub.s64 %rd9, %rd8, %rd6;
  cvt.u32.u64 %r13, %rd9;
  st.global.u32 [%rd3+60], %r13;
  ret;
}
)";

TEST(PtxInterpMisc, SpecialRegistersWarpOpsAndStateSpaces) {
  Module m = parse(kMisc);
  Device dev;
  const uint32_t n = 40;  // a full warp and a partial one
  uint64_t out = dev.alloc(n * 64);
  Params p(m.functions[0]);
  p.arg(out);
  auto r = run(m, "misc", {1, 1, 1}, {n, 1, 1}, 0, p.bytes(), dev.symbols, dev.mem);
  ASSERT_EQ(r.error, 0) << r.message;
  auto v = dev.download<uint32_t>(out, n * 16);
  for (uint32_t t = 0; t < n; ++t) {
    const uint32_t* o = &v[t * 16];
    uint32_t lane = t % 32, warp_lanes = t < 32 ? 0xFFFFFFFFu : 0xFFu;
    EXPECT_EQ(o[0], lane);
    EXPECT_EQ(o[1], t / 32);
    EXPECT_EQ(o[2], 2u);
    EXPECT_EQ(o[3], (1u << lane) - 1);
    EXPECT_EQ(o[4], ~((1u << lane) - 1));
    EXPECT_EQ(o[5], 1u);       // all equal
    EXPECT_EQ(o[6], 0u);       // tid & 3 == 0 differs across the warp
    EXPECT_EQ(o[7], warp_lanes);
    EXPECT_EQ(o[8], 1u);
    EXPECT_EQ(o[9], 0u);
    EXPECT_EQ(o[10], 0u);
    EXPECT_EQ(o[11], 1u);      // the clock advances
    EXPECT_EQ(o[12], t);       // local memory through a generic pointer
    EXPECT_EQ(o[13], 1u);
    EXPECT_EQ(o[14], 1u);
    EXPECT_EQ(o[15], 0u);      // cvta.to.local undoes cvta.local
  }
}

// A loop laid out as nvcc sometimes lays it out: the latch block before the
// header, entered by backward branches only (one from lanes that skip a
// store).  The parser moves the latch after its last entering branch
// (place_latches), so under the minimum-pc rule the lanes that skip the store
// wait for the others and every ballot sees the whole warp: each lane's sum
// of ballot counts is the number of even i < n.
const char* kLatchFirst = R"(
.version 9.0
.target sm_75
.address_size 64
.visible .entry latch(.param .u64 out, .param .u32 n)
{
  .reg .pred %p<4>;
  .reg .b32 %r<8>;
  .reg .b64 %rd<6>;
  ld.param.u64 %rd1, [out];
  ld.param.u32 %r1, [n];
  mov.u32 %r2, %tid.x;
  mov.u32 %r7, %r2;
  mov.u32 %r3, 0;
  bra.uni HEAD;
LATCH:
  popc.b32 %r5, %r4;
  add.s32 %r3, %r3, %r5;
  add.s32 %r2, %r2, 32;
HEAD:
  setp.lt.u32 %p1, %r2, %r1;
  vote.sync.any.pred %p2, %p1, -1;
  @!%p2 bra DONE;
  and.b32 %r6, %r2, 1;
  setp.eq.u32 %p3, %r6, 0;
  and.pred %p3, %p3, %p1;
  vote.sync.ballot.b32 %r4, %p3, -1;
  @!%p3 bra LATCH;
  mul.wide.u32 %rd2, %r2, 4;
  add.s64 %rd3, %rd1, %rd2;
  st.global.u32 [%rd3], %r2;
  bra.uni LATCH;
DONE:
  mul.wide.u32 %rd4, %r7, 4;
  add.s64 %rd5, %rd1, %rd4;
  st.global.u32 [%rd5+512], %r3;
  ret;
}
)";

TEST(PtxInterpMisc, LatchBeforeHeaderKeepsTheWarpTogether) {
  Module m = parse(kLatchFirst);
  // The latch now follows its last entering branch and jumps to the header.
  const Function& f = m.functions[0];
  uint32_t latch = 0, head = 0;
  for (const Label& l : f.labels) {
    if (l.name == "LATCH") latch = l.target;
    if (l.name == "HEAD") head = l.target;
  }
  EXPECT_LT(head, latch);
  ASSERT_LT(latch + 3, f.body.size());
  EXPECT_EQ(f.body[latch + 3].op, Op::Bra);
  EXPECT_EQ(f.labels[f.body[latch + 3].ops[0].label].name, "HEAD");
  for (uint32_t i = 0; i < f.body.size(); ++i)
    if (f.body[i].op == Op::Bra && f.labels[f.body[i].ops[0].label].name == "LATCH") EXPECT_LT(i, latch);

  Device dev;
  const uint32_t n = 100;
  uint64_t out = dev.alloc(1024);
  Params p(m.functions[0]);
  p.arg(out);
  p.arg(n);
  auto r = run(m, "latch", {1, 1, 1}, {32, 1, 1}, 0, p.bytes(), dev.symbols, dev.mem);
  ASSERT_EQ(r.error, 0) << r.message;
  auto v = dev.download<uint32_t>(out, 256);
  for (uint32_t i = 0; i < n; i += 2) EXPECT_EQ(v[i], i);
  for (uint32_t t = 0; t < 32; ++t) EXPECT_EQ(v[128 + t], n / 2) << "lane " << t;
}

TEST(PtxInterpMisc, IndirectCallThroughAFunctionPointer) {
  Module m = parse(R"(
.version 9.0
.target sm_75
.address_size 64
.func (.param .b32 r) twice(.param .b32 x)
{
  .reg .b32 %r<3>;
  ld.param.b32 %r1, [x];
  add.s32 %r2, %r1, %r1;
  st.param.b32 [r], %r2;
  ret;
}
.func (.param .b32 r) thrice(.param .b32 x)
{
  .reg .b32 %r<3>;
  ld.param.b32 %r1, [x];
  mul.lo.s32 %r2, %r1, 3;
  st.param.b32 [r], %r2;
  ret;
}
.visible .entry k(.param .u64 k_out)
{
  .reg .b64 %rd<5>;
  .reg .b32 %r<4>;
  .reg .pred %p;
  ld.param.u64 %rd3, [k_out];
  mov.u32 %r2, %tid.x;
  mov.u64 %rd1, twice;
  mov.u64 %rd2, thrice;
  and.b32 %r3, %r2, 1;
  setp.eq.u32 %p, %r3, 1;
  @%p mov.u64 %rd1, %rd2;
  {
  .param .b32 param0;
  st.param.b32 [param0], %r2;
  .param .b32 retval0;
  prototype_0 : .callprototype (.param .b32 _) _ (.param .b32 _);
  call (retval0), %rd1, (param0), prototype_0;
  ld.param.b32 %r1, [retval0];
  }
  mul.wide.u32 %rd4, %r2, 4;
  add.s64 %rd4, %rd3, %rd4;
  st.global.u32 [%rd4], %r1;
  ret;
})");
  Device dev;
  uint64_t out = dev.alloc(32 * 4);
  Params p(*m.find_function("k"));
  p.arg(out);
  auto r = run(m, "k", {1, 1, 1}, {32, 1, 1}, 0, p.bytes(), dev.symbols, dev.mem);
  ASSERT_EQ(r.error, 0) << r.message;
  auto v = dev.download<int>(out, 32);
  for (int t = 0; t < 32; ++t) EXPECT_EQ(v[t], (t & 1) ? 3 * t : 2 * t) << t;
}

TEST(PtxInterpMisc, FloatAndUnusualInstructionsParse) {
  // A module mixing such code with integer kernels loads; only running it fails.
  Module m = parse(R"(
.version 9.0
.target sm_75
.address_size 64
.global .texref tex0;
.visible .entry f(.param .u64 f_p)
{
  .reg .f32 %f<4>;
  .reg .f64 %fd<3>;
  .reg .b32 %r<6>;
  .reg .b64 %rd<3>;
  .reg .pred %p<2>;
  fma.rn.f32 %f1, %f2, %f3, %f1;
  rsqrt.approx.f64 %fd1, %fd2;
  sqrt.rn.f32 %f1, %f1;
  ex2.approx.ftz.f32 %f2, %f1;
  cvt.rn.f32.s32 %f3, %r1;
  cvt.rzi.s32.f32 %r1, %f3;
  testp.finite.f32 %p1, %f1;
  setp.gtu.f32 %p1, %f1, 0f00000000;
  min.NaN.f32 %f1, %f2, %f3;
  tex.1d.v4.s32.s32 {%r1, %r2, %r3, %r4}, [tex0, {%r5}];
  cp.async.ca.shared.global [%rd1], [%rd2], 16;
  prmt.b32.f4e %r1, %r2, %r3, %r4;
  ret;
})");
  const Function& f = m.functions[0];
  ASSERT_EQ(f.body.size(), 13u);
  EXPECT_EQ(f.body[0].op, Op::Fma);
  EXPECT_EQ(f.body[1].op, Op::Rsqrt);
  EXPECT_EQ(f.body[1].type, Type::F64);
  EXPECT_EQ(f.body[4].type, Type::F32);
  EXPECT_EQ(f.body[4].type2, Type::S32);
  EXPECT_EQ(f.body[6].op, Op::Testp);
  EXPECT_EQ(f.body[7].cmp, Cmp::Gtu);
  EXPECT_EQ(f.body[9].op, Op::Other);
  EXPECT_EQ(f.body[9].opcode, "tex.1d.v4.s32.s32");
  EXPECT_EQ(f.body[10].op, Op::Other);
  EXPECT_EQ(f.body[11].prmt, PrmtMode::F4e);
  EXPECT_TRUE(module_info(m).vars.empty());  // a texref is not memory
  Device dev;
  Params p(f);
  p.arg(dev.alloc(8));
  auto r = run(m, "f", {1, 1, 1}, {1, 1, 1}, 0, p.bytes(), dev.symbols, dev.mem);
  EXPECT_EQ(r.error, 801);
  // f32 arithmetic runs; the f64 reciprocal square root without .ftz does not.
  EXPECT_NE(r.message.find("rsqrt.approx.f64"), std::string::npos) << r.message;
}

}  // namespace
}  // namespace qgpu::ptx::test
