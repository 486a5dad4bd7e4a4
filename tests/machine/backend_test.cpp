// The interpreter backend through the engine::Backend contract the daemon
// uses: a launch runs, reports steps and printf output, and a launch the
// machine cannot run fails with the CUDA error and a message naming why.
#include "build_paths.h"   // qgpu_paths() in CMakeLists.txt

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <sstream>

#include "model_host/machine/api.h"
#include "model_host/machine/image.h"

namespace qgpu::machine {
namespace {

std::string kernels() {
  std::ifstream in(QGPU_MACHINE_KERNELS_PTX);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(MachineBackend, LimitsDescribeTheMachine) {
  const Limits& l = limits();
  EXPECT_EQ(l.warp_size, 32u);
  EXPECT_EQ(32 % l.lanes, 0u);
  EXPECT_GE(l.registers, 31u);
  EXPECT_GE(l.rom_blocks, 256u);
  EXPECT_GE(l.global_bytes, 2048u * 4);
  EXPECT_GE(l.max_threads_per_cta, 256u);
  EXPECT_EQ(l.global_base, 0x10000000u);
  EXPECT_LE(l.global_base + l.global_bytes, uint64_t(1) << 32);  // device pointers fit in 32 bits
}

TEST(MachineBackend, LaunchRunsAndReportsStepsAndPrintf) {
  std::string ptx = kernels();
  engine::ModuleInfo info = inspect_module(ptx);
  ASSERT_FALSE(info.kernels.empty());
  ModuleImage img = load_module(ptx, default_params());
  uint64_t in = img.alloc(12 * 4);
  for (int i = 0; i < 12; ++i) {
    int v = i * 11;
    std::memcpy(&img.mem.bytes[in - img.mem.base + 4 * i], &v, 4);
  }
  engine::LaunchRequest req;
  req.ptx = ptx;
  req.kernel = "_Z5printPKi";
  req.block = {12, 1, 1};
  req.params.resize(8);
  std::memcpy(req.params.data(), &in, 8);
  req.symbols = img.symbols;
  auto backend = make_interpreter_backend();
  EXPECT_EQ(backend->name(), "interpreter");
  engine::LaunchResult r = backend->launch(req, img.mem);
  ASSERT_EQ(r.error, 0) << r.message;
  EXPECT_GT(r.stats.steps, 0u);
  EXPECT_EQ(r.printf_output,
            "thread 0 value 0 hex 0 big 0\nthread 3 value 33 hex 21 big 283467841536\n"
            "thread 6 value 66 hex 42 big 566935683072\nthread 9 value 99 hex 63 big 850403524608\n");
}

TEST(MachineBackend, LaunchesTheMachineCannotRunFailWithNamedErrors) {
  auto backend = make_interpreter_backend();
  engine::GlobalMemory mem{default_params().global_base, std::vector<uint8_t>(1024)};
  engine::LaunchRequest req;
  req.ptx = kernels();
  req.kernel = "_Z13shared_reducePKiPi";
  req.block = {1024, 1, 1};
  req.params.resize(16);
  engine::LaunchResult r = backend->launch(req, mem);
  EXPECT_EQ(r.error, 1);
  EXPECT_NE(r.message.find("threads per block"), std::string::npos) << r.message;

  req.block = {32, 1, 1};
  req.params.assign(8192, 0);
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
  auto backend = make_interpreter_backend();
  std::string ptx = kernels();
  ModuleImage img = load_module(ptx, default_params());
  engine::LaunchRequest req;
  req.ptx = ptx;
  req.kernel = "_Z13shared_reducePKiPi";
  req.block = {32, 1, 1};
  req.symbols = img.symbols;
  uint64_t bad = 0x20000000, out = img.alloc(128);
  req.params.resize(16);
  std::memcpy(&req.params[0], &bad, 8);
  std::memcpy(&req.params[8], &out, 8);
  engine::LaunchResult r = backend->launch(req, img.mem);
  EXPECT_EQ(r.error, 700);
  EXPECT_NE(r.message.find("0x20000000"), std::string::npos) << r.message;
}

}  // namespace
}  // namespace qgpu::machine
