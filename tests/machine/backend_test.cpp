// The interpreter backend through the launch::Backend contract the daemon
// uses: a launch runs, reports steps and printf output, and a launch the
// machine cannot run fails with the CUDA error and a message naming why.
#include "build_paths.h"   // qgpu_paths() in CMakeLists.txt

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <sstream>

#include "model_host/backends/interpreter.h"
#include "model_host/machine/api.h"
#include "model_host/machine/image.h"
#include "model_host/machine/interpreter.h"

namespace qgpu::machine {
namespace {

std::string kernels() {
  std::ifstream in(QGPU_MACHINE_KERNELS_PTX);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The model's device is the one the compiled checkpoint holds: these sizes
// are what the model, model-trace and interpreter-model backends enforce.
TEST(MachineBackend, ModelDeviceKeepsTheModelsSizes) {
  const launch::DeviceSpec d = model_device();
  EXPECT_EQ(d.warp_size, 32u);
  EXPECT_EQ(d.lanes, 1u);
  EXPECT_EQ(d.global_base, 0x10000000u);
  EXPECT_EQ(d.global_bytes, 256u * 1024);  // docs/isa.md: the model's 256 KiB
  EXPECT_EQ(d.shared_bytes_per_cta, 48u * 1024);   // CUDA's without opting in
  EXPECT_EQ(d.shared_optin_bytes_per_cta, 56u * 1024);  // the machine's 64 KiB less the scratch reserve
  EXPECT_EQ(d.max_threads_per_cta, 1024u);
  EXPECT_EQ(d.registers, 32u);        // a thread's most, up to 256 threads a CTA
  EXPECT_EQ(d.register_file, 8192u);  // split among a CTA's threads: 8 each at 1024
  EXPECT_EQ(d.max_ctas_per_grid, 65535u);
  EXPECT_EQ(d.max_grid[0], 65535u);
  EXPECT_EQ(d.param_bytes, 4096u);
  EXPECT_EQ(d.printf_fifo_bytes, 1024u);
  EXPECT_EQ(d.heap_bytes, 0u);
  EXPECT_FALSE(d.limits_settable);
  EXPECT_NE(d.larger.find("--backend interpreter"), std::string::npos);
}

// The interpreter's device has CUDA's sizes (compute capability 7.5).
TEST(MachineBackend, InterpreterDeviceIsCudaSized) {
  const launch::DeviceSpec d = interpreter_device();
  EXPECT_EQ(d.warp_size, 32u);
  EXPECT_EQ(d.global_base, 0x10000000u);
  EXPECT_EQ(d.global_bytes, 2ull << 30);
  EXPECT_LE(d.global_base + d.global_bytes, uint64_t(1) << 32);  // device pointers fit in 32 bits
  EXPECT_EQ(d.max_threads_per_cta, 1024u);
  EXPECT_EQ(d.registers, 255u);  // CUDA's most per thread
  EXPECT_EQ(d.max_block[0], 1024u);
  EXPECT_EQ(d.max_block[1], 1024u);
  EXPECT_EQ(d.max_block[2], 64u);
  EXPECT_EQ(d.max_grid[0], 2147483647u);
  EXPECT_EQ(d.max_grid[1], 65535u);
  EXPECT_EQ(d.max_grid[2], 65535u);
  EXPECT_EQ(d.shared_bytes_per_cta, 48u * 1024);
  EXPECT_EQ(d.shared_optin_bytes_per_cta, 64u * 1024);
  EXPECT_EQ(d.param_bytes, 32764u);
  EXPECT_EQ(d.const_bytes, 64u * 1024);
  EXPECT_EQ(d.printf_fifo_bytes, 1u << 20);
  EXPECT_EQ(d.heap_bytes, 8u << 20);
  EXPECT_TRUE(d.limits_settable);
  EXPECT_EQ(interpreter_device(512u << 20).global_bytes, 512u << 20);
  EXPECT_THROW(interpreter_device(5ull << 30), std::invalid_argument);
}

TEST(MachineBackend, DeviceMemorySizesParse) {
  EXPECT_EQ(parse_device_memory("2G"), 2ull << 30);
  EXPECT_EQ(parse_device_memory("512M"), 512ull << 20);
  EXPECT_EQ(parse_device_memory("64K"), 64ull << 10);
  EXPECT_EQ(parse_device_memory("1048576"), 1ull << 20);
  EXPECT_EQ(parse_device_memory("3840M"), 3840ull << 20);
  for (const char* bad : {"", "0", "G", "2X", "4G", "-1", "1K5", "100"})
    EXPECT_THROW(parse_device_memory(bad), std::invalid_argument) << bad;
}

// CUDA-sized grids: every block of grids whose linear block index times a
// dimension passes 2^32 (the lowering's exact division by the grid's
// dimensions) sees its own blockIdx, and 1024-thread blocks their threadIdx.
TEST(MachineBackend, LargeGridsIndexEveryBlock) {
  const std::string ptx = kernels();
  auto backend = backends::make_interpreter_backend(backends::MachineKind::Default, 64u << 20);
  struct Shape {
    launch::Dim3 grid, block;
  };
  for (const Shape& sh : {Shape{{100000, 3, 1}, {1, 1, 1}}, Shape{{3, 70001, 5}, {1, 1, 1}},
                          Shape{{2, 3, 1}, {1024, 1, 1}}, Shape{{2, 1, 3}, {8, 16, 8}}}) {
    ModuleImage img = load_module(ptx, cuda_params(64u << 20));
    const uint32_t w = sh.grid.x * sh.block.x, h = sh.grid.y * sh.block.y, d = sh.grid.z * sh.block.z;
    const uint64_t n = uint64_t(w) * h * d;
    const uint64_t out = img.alloc(n * 4);
    launch::LaunchRequest req;
    req.ptx = ptx;
    req.kernel = "_Z6grid3dPii";
    req.grid = sh.grid;
    req.block = sh.block;
    const int32_t pitch = 0;
    req.params.resize(12);
    std::memcpy(req.params.data(), &out, 8);
    std::memcpy(req.params.data() + 8, &pitch, 4);
    req.symbols = img.symbols;
    launch::LaunchProgress progress;  // what `qgpu run`'s progress line shows: CTAs started
    req.progress = &progress;
    launch::LaunchResult r = backend->launch(req, img.mem);
    ASSERT_EQ(r.error, 0) << r.message;
    EXPECT_EQ(progress.cta.load(), sh.grid.count());
    uint64_t bad = 0;
    for (uint32_t z = 0; z < d; ++z)
      for (uint32_t y = 0; y < h; ++y)
        for (uint32_t x = 0; x < w; ++x) {
          int32_t v;
          std::memcpy(&v, &img.mem.bytes[out - img.mem.base + 4 * ((uint64_t(z) * h + y) * w + x)], 4);
          if (v != int32_t(x + 100 * y + 10000 * z) && bad++ < 3)
            ADD_FAILURE() << "grid (" << sh.grid.x << "," << sh.grid.y << "," << sh.grid.z << ") at (" << x << ","
                          << y << "," << z << "): " << v;
        }
    EXPECT_EQ(bad, 0u);
  }
}

// One kernel launched over grids of several shapes on one backend: the
// program lowered for one one-dimensional grid serves the next (it reads
// only %ctaid.x, the CTA index then), and a 2-D grid, where %ctaid.x is the
// index modulo the grid's width, gets its own.  Each thread stores its
// %ctaid.x + 1 at %ctaid.x * %ntid.x + %tid.x.
TEST(MachineBackend, ProgramsAreReusedOnlyForGridsTheyWereLoweredFor) {
  const std::string ptx = R"(.version 8.5
.target sm_75
.address_size 64
.visible .entry k(.param .u64 out)
{
  .reg .b32 %r<5>;
  .reg .b64 %rd<4>;
  ld.param.u64 %rd1, [out];
  mov.u32 %r1, %ctaid.x;
  mov.u32 %r2, %tid.x;
  mov.u32 %r3, %ntid.x;
  mad.lo.s32 %r4, %r1, %r3, %r2;
  mul.wide.u32 %rd2, %r4, 4;
  add.s64 %rd3, %rd1, %rd2;
  add.s32 %r1, %r1, 1;
  st.global.u32 [%rd3], %r1;
  ret;
}
)";
  auto backend = backends::make_interpreter_backend(backends::MachineKind::Default, 64u << 20);
  ModuleImage img = load_module(ptx, cuda_params(64u << 20));
  const uint32_t words = 64, block = 4;
  const uint64_t out = img.alloc(words * 4);
  for (launch::Dim3 grid : {launch::Dim3{3, 1, 1}, launch::Dim3{5, 1, 1}, launch::Dim3{2, 3, 1},
                            launch::Dim3{4, 1, 2}, launch::Dim3{7, 1, 1}}) {
    SCOPED_TRACE("grid " + std::to_string(grid.x) + "," + std::to_string(grid.y) + "," + std::to_string(grid.z));
    std::memset(&img.mem.bytes[out - img.mem.base], 0, words * 4);
    launch::LaunchRequest req;
    req.ptx = ptx;
    req.kernel = "k";
    req.grid = grid;
    req.block = {block, 1, 1};
    req.params.resize(8);
    std::memcpy(req.params.data(), &out, 8);
    req.symbols = img.symbols;
    launch::LaunchResult r = backend->launch(req, img.mem);
    ASSERT_EQ(r.error, 0) << r.message;
    for (uint32_t i = 0; i < words; ++i) {
      uint32_t v;
      std::memcpy(&v, &img.mem.bytes[out - img.mem.base + 4 * i], 4);
      EXPECT_EQ(v, i < grid.x * block ? i / block + 1 : 0u) << "word " << i;
    }
  }
}

// A launch no one waits for any more (LaunchProgress::cancel, set by the
// daemon when the client exited or it is stopping) ends within
// Interpreter::kCancelSteps EXECs, failed with cudaErrorLaunchFailure, where
// it would otherwise run to the step limit: a kernel that loops forever.
TEST(MachineBackend, CancelledLaunchEndsEarly) {
  const std::string ptx = R"(.version 8.5
.target sm_75
.address_size 64
.visible .entry spin(.param .u64 out)
{
  .reg .b32 %r<2>;
  .reg .b64 %rd<2>;
  ld.param.u64 %rd1, [out];
  mov.u32 %r1, 0;
$loop:
  add.s32 %r1, %r1, 1;
  st.global.u32 [%rd1], %r1;
  bra.uni $loop;
}
)";
  auto backend = backends::make_interpreter_backend(backends::MachineKind::Default, 64u << 20);
  ModuleImage img = load_module(ptx, cuda_params(64u << 20));
  const uint64_t out = img.alloc(4);
  launch::LaunchRequest req;
  req.ptx = ptx;
  req.kernel = "spin";
  req.grid = {2, 1, 1};
  req.block = {64, 1, 1};
  req.params.resize(8);
  std::memcpy(req.params.data(), &out, 8);
  launch::LaunchProgress progress;
  progress.cancel = true;
  req.progress = &progress;
  launch::LaunchResult r = backend->launch(req, img.mem);
  EXPECT_EQ(r.error, 719);
  EXPECT_NE(r.message.find("cancelled"), std::string::npos) << r.message;
  // Each of the host threads running its CTAs stops at its first check.
  EXPECT_LE(r.stats.steps, Interpreter::kCancelSteps * Interpreter::cta_threads());
  // It ran until then.
  uint32_t v;
  std::memcpy(&v, &img.mem.bytes[out - img.mem.base], 4);
  EXPECT_GT(v, 0u);
}

// Many CTAs on several host threads hammer the same words with the CUDA-sized
// device's native 64-bit and f32 atomics (Op::ATOM64, AtomOp::FADD): the
// program is not marked ctas_in_order, the CTAs run on every host thread,
// and every read-modify-write counts.  Each thread t adds 2^32 + 1 to a u64
// (carries between the words), 1.0 to an f32 and 0.5 to an f64 (sums exact
// in both), keeps the s64 minimum and maximum of 1000 - t, ors in bit t % 64
// and increments a u64 with its own cas loop.
TEST(MachineBackend, NativeAtomicsHoldAcrossHostThreads) {
  const std::string ptx = R"(.version 8.5
.target sm_75
.address_size 64
.visible .entry hammer(.param .u64 out)
{
  .reg .pred %p<2>;
  .reg .b32 %r<8>;
  .reg .f32 %f<2>;
  .reg .b64 %rd<12>;
  .reg .f64 %fd<2>;
  ld.param.u64 %rd1, [out];
  mov.u32 %r1, %ctaid.x;
  mov.u32 %r2, %ntid.x;
  mov.u32 %r3, %tid.x;
  mad.lo.s32 %r4, %r1, %r2, %r3;
  mov.u64 %rd2, 4294967297;
  red.global.add.u64 [%rd1], %rd2;
  mov.f32 %f1, 0f3F800000;
  atom.global.add.f32 %f0, [%rd1+8], %f1;
  mov.f64 %fd1, 0d3FE0000000000000;
  red.global.add.f64 [%rd1+16], %fd1;
  cvt.s64.s32 %rd3, %r4;
  mov.u64 %rd4, 1000;
  sub.s64 %rd5, %rd4, %rd3;
  atom.global.min.s64 %rd6, [%rd1+24], %rd5;
  atom.global.max.s64 %rd6, [%rd1+32], %rd5;
  and.b32 %r5, %r4, 63;
  mov.u64 %rd7, 1;
  shl.b64 %rd7, %rd7, %r5;
  atom.global.or.b64 %rd6, [%rd1+40], %rd7;
  ld.global.u64 %rd8, [%rd1+48];
$retry:
  add.u64 %rd9, %rd8, 1;
  atom.global.cas.b64 %rd10, [%rd1+48], %rd8, %rd9;
  setp.ne.u64 %p1, %rd10, %rd8;
  mov.u64 %rd8, %rd10;
  @%p1 bra $retry;
  ret;
}
)";
  const uint32_t ctas = 256, threads = 64, n = ctas * threads;
  auto backend = backends::make_interpreter_backend(backends::MachineKind::Default, 64u << 20);
  ModuleImage img = load_module(ptx, cuda_params(64u << 20));
  const uint64_t out = img.alloc(64);
  const int64_t big = INT64_MAX, small = INT64_MIN;
  std::memcpy(&img.mem.bytes[out - img.mem.base + 24], &big, 8);
  std::memcpy(&img.mem.bytes[out - img.mem.base + 32], &small, 8);
  launch::LaunchRequest req;
  req.ptx = ptx;
  req.kernel = "hammer";
  req.grid = {ctas, 1, 1};
  req.block = {threads, 1, 1};
  req.params.resize(8);
  std::memcpy(req.params.data(), &out, 8);
  launch::LaunchResult r = backend->launch(req, img.mem);
  ASSERT_EQ(r.error, 0) << r.message;
  EXPECT_EQ(r.stats.host_threads, std::min<uint32_t>(Interpreter::cta_threads(), ctas));
  auto word = [&](uint32_t off, auto v) {
    std::memcpy(&v, &img.mem.bytes[out - img.mem.base + off], sizeof v);
    return v;
  };
  EXPECT_EQ(word(0, uint64_t(0)), uint64_t(n) * 4294967297ull);
  EXPECT_EQ(word(8, 0.0f), float(n));
  EXPECT_EQ(word(16, 0.0), 0.5 * n);
  EXPECT_EQ(word(24, int64_t(0)), 1000 - int64_t(n - 1));
  EXPECT_EQ(word(32, int64_t(0)), 1000);
  EXPECT_EQ(word(40, uint64_t(0)), ~uint64_t(0));
  EXPECT_EQ(word(48, uint64_t(0)), uint64_t(n));
}

// A CUDA program's code can be large (CUB's radix sort lowers to thousands of
// blocks): the CUDA-sized device takes a kernel of 1,200 branches, and each
// thread takes the one branch its value selects.
TEST(MachineBackend, CudaSizedDeviceHoldsLargeKernels) {
  constexpr uint32_t kCases = 1200, kThreads = 256;
  std::string ptx =
      ".version 8.5\n.target sm_75\n.address_size 64\n"
      ".visible .entry big(.param .u64 pin, .param .u64 pout)\n{\n"
      "  .reg .pred %p<2>;\n  .reg .b32 %r<8>;\n  .reg .b64 %rd<8>;\n"
      "  ld.param.u64 %rd1, [pin];\n  ld.param.u64 %rd2, [pout];\n"
      "  mov.u32 %r1, %tid.x;\n  mul.wide.u32 %rd3, %r1, 4;\n"
      "  add.u64 %rd4, %rd1, %rd3;\n  add.u64 %rd5, %rd2, %rd3;\n"
      "  ld.global.u32 %r2, [%rd4];\n  mov.u32 %r3, 0;\n";
  for (uint32_t k = 0; k < kCases; ++k)
    ptx += "  setp.ne.u32 %p1, %r2, " + std::to_string(k) + ";\n  @%p1 bra L" + std::to_string(k) +
           ";\n  add.u32 %r3, %r3, " + std::to_string(3 * k + 1) + ";\n  st.global.u32 [%rd5], %r3;\nL" +
           std::to_string(k) + ":\n";
  ptx += "  ret;\n}\n";
  ModuleImage img = load_module(ptx, cuda_params(64u << 20));
  const uint64_t in = img.alloc(kThreads * 4), out = img.alloc(kThreads * 4);
  for (uint32_t t = 0; t < kThreads; ++t) {
    const uint32_t v = (t * 2654435761u) % kCases;
    std::memcpy(&img.mem.bytes[in - img.mem.base + 4 * t], &v, 4);
  }
  launch::LaunchRequest req;
  req.ptx = ptx;
  req.kernel = "big";
  req.block = {kThreads, 1, 1};
  req.params.resize(16);
  std::memcpy(req.params.data(), &in, 8);
  std::memcpy(req.params.data() + 8, &out, 8);
  req.symbols = img.symbols;
  auto backend = backends::make_interpreter_backend(backends::MachineKind::Default, 64u << 20);
  launch::LaunchResult r = backend->launch(req, img.mem);
  ASSERT_EQ(r.error, 0) << r.message;
  for (uint32_t t = 0; t < kThreads; ++t) {
    uint32_t v;
    std::memcpy(&v, &img.mem.bytes[out - img.mem.base + 4 * t], 4);
    EXPECT_EQ(v, 3 * ((t * 2654435761u) % kCases) + 1) << "thread " << t;
  }
}

TEST(MachineBackend, LaunchRunsAndReportsStepsAndPrintf) {
  std::string ptx = kernels();
  launch::ModuleInfo info = inspect_module(ptx);
  ASSERT_FALSE(info.kernels.empty());
  ModuleImage img = load_module(ptx, default_params());
  uint64_t in = img.alloc(12 * 4);
  for (int i = 0; i < 12; ++i) {
    int v = i * 11;
    std::memcpy(&img.mem.bytes[in - img.mem.base + 4 * i], &v, 4);
  }
  launch::LaunchRequest req;
  req.ptx = ptx;
  req.kernel = "_Z5printPKi";
  req.block = {12, 1, 1};
  req.params.resize(8);
  std::memcpy(req.params.data(), &in, 8);
  req.symbols = img.symbols;
  auto backend = backends::make_interpreter_backend();
  EXPECT_EQ(backend->name(), "interpreter");
  launch::LaunchResult r = backend->launch(req, img.mem);
  ASSERT_EQ(r.error, 0) << r.message;
  EXPECT_GT(r.stats.steps, 0u);
  EXPECT_EQ(r.printf_output,
            "thread 0 value 0 hex 0 big 0\nthread 3 value 33 hex 21 big 283467841536\n"
            "thread 6 value 66 hex 42 big 566935683072\nthread 9 value 99 hex 63 big 850403524608\n");
}

TEST(MachineBackend, LaunchesTheMachineCannotRunFailWithNamedErrors) {
  auto backend = backends::make_interpreter_backend();
  launch::GlobalMemory mem{default_params().global_base, std::vector<uint8_t>(1024)};
  launch::LaunchRequest req;
  req.ptx = kernels();
  req.kernel = "_Z13shared_reducePKiPi";
  req.block = {1025, 1, 1};  // CUDA's most is 1024
  req.params.resize(16);
  launch::LaunchResult r = backend->launch(req, mem);
  EXPECT_EQ(r.error, 1);
  EXPECT_NE(r.message.find("threads per block"), std::string::npos) << r.message;

  req.block = {32, 1, 1};
  req.params.assign(32768, 0);  // CUDA's most is 32,764
  r = backend->launch(req, mem);
  EXPECT_EQ(r.error, 1);
  EXPECT_NE(r.message.find("parameters"), std::string::npos) << r.message;

  req.ptx = ".version 8.5\n.target sm_75\n.address_size 64\n.visible .entry k()\n{\n  frobnicate;\n}\n";
  req.kernel = "k";
  req.params.clear();
  r = backend->launch(req, mem);
  EXPECT_EQ(r.error, 218);
  EXPECT_NE(r.message.find("line 6"), std::string::npos) << r.message;
}

TEST(MachineBackend, OutOfRangeAccessIsAnIllegalAddress) {
  auto backend = backends::make_interpreter_backend();
  std::string ptx = kernels();
  ModuleImage img = load_module(ptx, default_params());
  launch::LaunchRequest req;
  req.ptx = ptx;
  req.kernel = "_Z13shared_reducePKiPi";
  req.block = {32, 1, 1};
  req.symbols = img.symbols;
  uint64_t bad = 0x20000000, out = img.alloc(128);
  req.params.resize(16);
  std::memcpy(&req.params[0], &bad, 8);
  std::memcpy(&req.params[8], &out, 8);
  launch::LaunchResult r = backend->launch(req, img.mem);
  EXPECT_EQ(r.error, 700);
  EXPECT_NE(r.message.find("0x20000000"), std::string::npos) << r.message;
}

}  // namespace
}  // namespace qgpu::machine
