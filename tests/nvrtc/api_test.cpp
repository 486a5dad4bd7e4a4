// The NVRTC C API of libnvrtc.so.13: options, logs, name expressions,
// PTX and CUBIN outputs, and the errors a user sees for bad input.
#include <gtest/gtest.h>
#include <nvrtc.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "cubin_container.h"
#include "nvrtc_harness.h"

namespace {

using qgpu::test::Compiled;
using qgpu::test::compile;

constexpr const char* kAxpy = R"(
extern "C" __global__ void axpy(int* y, const int* x, int a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] += a * x[i];
}
)";

TEST(NvrtcApi, VersionAndArchitectures) {
  int major = 0, minor = -1;
  ASSERT_EQ(nvrtcVersion(&major, &minor), NVRTC_SUCCESS);
  EXPECT_EQ(major, 13);
  EXPECT_EQ(minor, 0);
  int n = 0;
  ASSERT_EQ(nvrtcGetNumSupportedArchs(&n), NVRTC_SUCCESS);
  std::vector<int> archs(n);
  ASSERT_EQ(nvrtcGetSupportedArchs(archs.data()), NVRTC_SUCCESS);
  EXPECT_EQ(archs.front(), 75);  // the default, and CUDA 13's oldest
  EXPECT_EQ(nvrtcVersion(nullptr, &minor), NVRTC_ERROR_INVALID_INPUT);
}

TEST(NvrtcApi, ErrorStringsNameEveryResult) {
  EXPECT_STREQ(nvrtcGetErrorString(NVRTC_SUCCESS), "NVRTC_SUCCESS");
  EXPECT_STREQ(nvrtcGetErrorString(NVRTC_ERROR_COMPILATION), "NVRTC_ERROR_COMPILATION");
  EXPECT_STREQ(nvrtcGetErrorString(NVRTC_ERROR_NAME_EXPRESSION_NOT_VALID),
               "NVRTC_ERROR_NAME_EXPRESSION_NOT_VALID");
  EXPECT_STREQ(nvrtcGetErrorString(static_cast<nvrtcResult>(12345)), "NVRTC_ERROR unknown");
}

TEST(NvrtcApi, CompilesToPtxForTheRequestedArchitecture) {
  Compiled c = compile(kAxpy, {"-arch=compute_75"});
  ASSERT_EQ(c.result, NVRTC_SUCCESS) << c.log;
  EXPECT_NE(c.ptx.find(".target sm_75"), std::string::npos);
  EXPECT_NE(c.ptx.find(".version 8."), std::string::npos);
  EXPECT_NE(c.ptx.find(".visible .entry axpy("), std::string::npos);
  Compiled c86 = compile(kAxpy, {"--gpu-architecture=sm_86"});
  ASSERT_EQ(c86.result, NVRTC_SUCCESS) << c86.log;
  EXPECT_NE(c86.ptx.find(".target sm_86"), std::string::npos);
}

// Types NVIDIA's NVRTC defines without any include.
TEST(NvrtcApi, BuiltInTypesNeedNoInclude) {
  Compiled c = compile(R"(
static_assert(sizeof(clock_t) == sizeof(long), "clock_t is long");
static_assert(sizeof(size_t) == 8, "size_t is 64-bit");
extern "C" __global__ void timed(clock_t* t, ptrdiff_t* d) {
  clock_t start = clock();
  d[0] = &d[1] - &d[0];
  t[0] = clock() - start;
}
)",
                       {});
  ASSERT_EQ(c.result, NVRTC_SUCCESS) << c.log;
  EXPECT_NE(c.ptx.find("%clock;"), std::string::npos) << c.ptx;
}

TEST(NvrtcApi, CubinIsTheContainerTheDriverLoads) {
  nvrtcProgram prog;
  ASSERT_EQ(nvrtcCreateProgram(&prog, kAxpy, "axpy.cu", 0, nullptr, nullptr), NVRTC_SUCCESS);
  ASSERT_EQ(nvrtcCompileProgram(prog, 0, nullptr), NVRTC_SUCCESS);
  size_t ptx_size = 0, cubin_size = 0;
  ASSERT_EQ(nvrtcGetPTXSize(prog, &ptx_size), NVRTC_SUCCESS);
  ASSERT_EQ(nvrtcGetCUBINSize(prog, &cubin_size), NVRTC_SUCCESS);
  std::string ptx(ptx_size, '\0');
  std::vector<char> cubin(cubin_size);
  ASSERT_EQ(nvrtcGetPTX(prog, ptx.data()), NVRTC_SUCCESS);
  ASSERT_EQ(nvrtcGetCUBIN(prog, cubin.data()), NVRTC_SUCCESS);
  EXPECT_EQ(ptx.back(), '\0');  // sizes include the terminating NUL
  ptx.pop_back();
  auto inside = qgpu::rtc_cubin::unwrap(cubin.data());
  ASSERT_TRUE(inside.has_value());
  EXPECT_EQ(std::string(*inside), ptx);
  EXPECT_FALSE(qgpu::rtc_cubin::unwrap(ptx.data()).has_value());
  ASSERT_EQ(nvrtcDestroyProgram(&prog), NVRTC_SUCCESS);
  EXPECT_EQ(prog, nullptr);
}

TEST(NvrtcApi, DefinesAndUndefinesApplyInOrder) {
  const char* src = R"(
#ifndef A
#error A is not defined
#endif
#ifdef B
#error B is still defined
#endif
extern "C" __global__ void k(int* p) { p[0] = A + C; }
)";
  Compiled ok = compile(src, {"-DA=4", "-D", "B", "--define-macro=C=5", "-UB"});
  EXPECT_EQ(ok.result, NVRTC_SUCCESS) << ok.log;
  Compiled bad = compile(src, {"-DA=4", "-DB", "-DC=1"});
  EXPECT_EQ(bad.result, NVRTC_ERROR_COMPILATION);
  EXPECT_NE(bad.log.find("B is still defined"), std::string::npos) << bad.log;
}

TEST(NvrtcApi, HeadersFromMemoryFromDiskAndBuiltIn) {
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / ("qgpu_nvrtc_inc_" + std::to_string(getpid()));
  fs::create_directories(dir / "sub");
  std::ofstream(dir / "sub" / "disk.h") << "#define FROM_DISK 11\n";
  const char* src = R"(
#include <cstdint>
#include <climits>
#include "mem.h"
#include "sub/disk.h"
extern "C" __global__ void k(int32_t* p) { p[0] = FROM_MEMORY + FROM_DISK + (INT_MAX > 0); }
)";
  Compiled c = compile(src, {("-I" + dir.string()).c_str()}, {}, {{"mem.h", "#define FROM_MEMORY 7\n"}});
  EXPECT_EQ(c.result, NVRTC_SUCCESS) << c.log;
  fs::remove_all(dir);
}

// A copy of the toolkit's cooperative_groups.h on an include path (what
// matrixMul_nvrtc's build puts beside the program for NVIDIA's NVRTC) does
// not replace the built-in one; other headers there are found as before.
TEST(NvrtcApi, BuiltInToolkitHeadersComeBeforeIncludePaths) {
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / ("qgpu_nvrtc_cg_" + std::to_string(getpid()));
  fs::create_directories(dir);
  for (const char* name : {"cooperative_groups.h", "cuda_fp16.h", "cuda_bf16.h", "mma.h"})
    std::ofstream(dir / name) << "#error \"the include path's copy was used\"\n";
  std::ofstream(dir / "local.h") << "#define FROM_DISK 5\n";
  const char* src = R"(
#include <cooperative_groups.h>
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <mma.h>
#include "local.h"
extern "C" __global__ void k(int* p) {
  cooperative_groups::thread_block b = cooperative_groups::this_thread_block();
  p[b.thread_rank()] = FROM_DISK + __half2int_rz(__float2half(1.0f)) + __bfloat162int_rz(__float2bfloat16(1.0f));
  cooperative_groups::sync(b);
}
)";
  Compiled c = compile(src, {("--include-path=" + dir.string()).c_str()});
  EXPECT_EQ(c.result, NVRTC_SUCCESS) << c.log;
  fs::remove_all(dir);
}

TEST(NvrtcApi, DefaultDeviceMakesPlainFunctionsCallable) {
  const char* src = R"(
int triple(int x) { return 3 * x; }
extern "C" __global__ void k(int* p) { p[0] = triple(p[0]); }
)";
  Compiled without = compile(src, {});
  EXPECT_EQ(without.result, NVRTC_ERROR_COMPILATION);
  EXPECT_NE(without.log.find("triple"), std::string::npos) << without.log;
  for (const char* opt : {"-default-device", "--device-as-default-execution-space"}) {
    Compiled with = compile(src, {opt});
    EXPECT_EQ(with.result, NVRTC_SUCCESS) << opt << "\n" << with.log;
  }
}

TEST(NvrtcApi, AcceptedCodegenOptionsAndDialects) {
  Compiled c = compile(kAxpy, {"-lineinfo", "--use_fast_math", "-ftz=true", "--fmad=false",
                               "-maxrregcount=32", "-std=c++20", "-w", "-G"});
  EXPECT_EQ(c.result, NVRTC_SUCCESS) << c.log;
  Compiled c11 = compile(kAxpy, {"--std=c++11"});
  EXPECT_EQ(c11.result, NVRTC_SUCCESS) << c11.log;
  Compiled checked = compile(kAxpy, {"-fdevice-syntax-only"});
  EXPECT_EQ(checked.result, NVRTC_SUCCESS) << checked.log;
  EXPECT_TRUE(checked.ptx.empty());
  Compiled wrong = compile("__global__ void k() { undeclared(); }\n", {"-fdevice-syntax-only"});
  EXPECT_EQ(wrong.result, NVRTC_ERROR_COMPILATION);
}

TEST(NvrtcApi, BadOptionsFailWithALogLine) {
  struct Case {
    std::vector<const char*> options;
    const char* in_log;
  } cases[] = {
      {{"--frobnicate"}, "unrecognized option '--frobnicate'"},
      {{"-arch=compute_52"}, "invalid GPU architecture 'compute_52'"},
      {{"-arch=gfx90a"}, "invalid GPU architecture 'gfx90a'"},
      {{"-std=c++98"}, "invalid C++ dialect 'c++98'"},
      {{"-arch"}, "option '-arch' needs a value"},
      {{"-rdc=true"}, "not supported"},
      {{"-dlto"}, "not supported"},
  };
  for (const Case& c : cases) {
    Compiled out = compile(kAxpy, c.options);
    EXPECT_EQ(out.result, NVRTC_ERROR_INVALID_OPTION) << c.options[0];
    EXPECT_NE(out.log.find(c.in_log), std::string::npos) << out.log;
    EXPECT_EQ(out.log.rfind("nvrtc: error: ", 0), 0u) << out.log;
  }
}

TEST(NvrtcApi, SyntaxErrorsComeWithFileLineColumnAndSource) {
  const char* src =
      "extern \"C\" __global__ void k(int* p) {\n"
      "  p[0] = 1\n"
      "  p[1] = missing;\n"
      "}\n";
  Compiled c = compile(src, {}, {}, {}, "bad.cu");
  EXPECT_EQ(c.result, NVRTC_ERROR_COMPILATION);
  EXPECT_NE(c.log.find("bad.cu:2:11: error: expected ';'"), std::string::npos) << c.log;
  EXPECT_NE(c.log.find("bad.cu:3:10: error: use of undeclared identifier 'missing'"),
            std::string::npos)
      << c.log;
  EXPECT_NE(c.log.find("  p[1] = missing;\n         ^\n"), std::string::npos) << c.log;
  EXPECT_TRUE(c.ptx.empty());
}

TEST(NvrtcApi, ErrorsInHeadersNameTheHeader) {
  Compiled c = compile("#include \"h.h\"\n", {}, {}, {{"h.h", "\n\nint x = ;\n"}});
  EXPECT_EQ(c.result, NVRTC_ERROR_COMPILATION);
  EXPECT_NE(c.log.find("h.h:3:9: error: expected expression"), std::string::npos) << c.log;
}

TEST(NvrtcApi, MissingHeaderIsAFatalError) {
  Compiled c = compile("#include \"absent.h\"\n", {}, {}, {}, "prog.cu");
  EXPECT_EQ(c.result, NVRTC_ERROR_COMPILATION);
  EXPECT_NE(c.log.find("prog.cu:1:10: fatal error: 'absent.h' file not found"), std::string::npos)
      << c.log;
}

TEST(NvrtcApi, NameExpressionsGiveLoweredNames) {
  const char* src = R"(
namespace kern {
template <typename T, int K> __global__ void apply(T* data, int n) { data[n] *= K; }
}
template <typename T, int K> __global__ void fill(T* out) { out[threadIdx.x] = K; }
namespace ns { __device__ int value; }
extern "C" __global__ void plain() {}
)";
  Compiled c = compile(src, {}, {"kern::apply<int, 3>", "&fill<unsigned int, 5>", "&ns::value",
                                 "plain"});
  ASSERT_EQ(c.result, NVRTC_SUCCESS) << c.log;
  EXPECT_EQ(c.lowered.at("kern::apply<int, 3>"), "_ZN4kern5applyIiLi3EEEvPT_i");
  EXPECT_EQ(c.lowered.at("&fill<unsigned int, 5>"), "_Z4fillIjLi5EEvPT_");
  EXPECT_EQ(c.lowered.at("&ns::value"), "_ZN2ns5valueE");
  EXPECT_EQ(c.lowered.at("plain"), "plain");
  // The instantiations exist in the PTX under those names.
  EXPECT_NE(c.ptx.find(".entry _ZN4kern5applyIiLi3EEEvPT_i("), std::string::npos);
  EXPECT_NE(c.ptx.find(".entry _Z4fillIjLi5EEvPT_("), std::string::npos);
}

TEST(NvrtcApi, NameExpressionErrors) {
  nvrtcProgram prog;
  ASSERT_EQ(nvrtcCreateProgram(&prog, "__global__ void k() {}\nint host_only;\n", "p.cu", 0,
                               nullptr, nullptr),
            NVRTC_SUCCESS);
  const char* lowered = nullptr;
  EXPECT_EQ(nvrtcGetLoweredName(prog, "k", &lowered), NVRTC_ERROR_NO_LOWERED_NAMES_BEFORE_COMPILATION);
  ASSERT_EQ(nvrtcAddNameExpression(prog, "k"), NVRTC_SUCCESS);
  ASSERT_EQ(nvrtcAddNameExpression(prog, "&host_only"), NVRTC_SUCCESS);
  ASSERT_EQ(nvrtcCompileProgram(prog, 0, nullptr), NVRTC_SUCCESS);
  EXPECT_EQ(nvrtcGetLoweredName(prog, "k", &lowered), NVRTC_SUCCESS);
  EXPECT_STREQ(lowered, "_Z1kv");
  EXPECT_EQ(nvrtcGetLoweredName(prog, "&host_only", &lowered), NVRTC_ERROR_NAME_EXPRESSION_NOT_VALID);
  EXPECT_EQ(nvrtcGetLoweredName(prog, "never_added", &lowered), NVRTC_ERROR_NAME_EXPRESSION_NOT_VALID);
  EXPECT_EQ(nvrtcAddNameExpression(prog, "k"), NVRTC_ERROR_NO_NAME_EXPRESSIONS_AFTER_COMPILATION);
  nvrtcDestroyProgram(&prog);

  Compiled unknown = compile("__global__ void k() {}\n", {}, {"&no_such_kernel"});
  EXPECT_EQ(unknown.result, NVRTC_ERROR_COMPILATION);
  EXPECT_NE(unknown.log.find("<name expressions>:1:"), std::string::npos) << unknown.log;
  EXPECT_NE(unknown.log.find("no_such_kernel"), std::string::npos) << unknown.log;
}

TEST(NvrtcApi, ProgramsCompileConcurrently) {
  std::vector<Compiled> out(4);
  std::vector<std::thread> threads;
  for (size_t i = 0; i < out.size(); ++i)
    threads.emplace_back([&out, i] {
      std::string define = "-DK=" + std::to_string(i);
      out[i] = compile("extern \"C\" __global__ void k(int* p) { p[0] = K; }\n", {define.c_str()});
    });
  for (std::thread& t : threads) t.join();
  for (size_t i = 0; i < out.size(); ++i) {
    ASSERT_EQ(out[i].result, NVRTC_SUCCESS) << out[i].log;
    // Each program stores its own constant and no other program's.
    for (size_t j = 0; j < out.size(); ++j)
      EXPECT_EQ(out[i].ptx.find(", " + std::to_string(j) + ";\n") != std::string::npos, i == j)
          << out[i].ptx;
  }
}

TEST(NvrtcApi, InvalidHandlesAndInputs) {
  size_t size;
  EXPECT_EQ(nvrtcCompileProgram(nullptr, 0, nullptr), NVRTC_ERROR_INVALID_PROGRAM);
  EXPECT_EQ(nvrtcGetPTXSize(nullptr, &size), NVRTC_ERROR_INVALID_PROGRAM);
  EXPECT_EQ(nvrtcDestroyProgram(nullptr), NVRTC_ERROR_INVALID_PROGRAM);
  nvrtcProgram prog;
  EXPECT_EQ(nvrtcCreateProgram(&prog, nullptr, "x", 0, nullptr, nullptr), NVRTC_ERROR_INVALID_INPUT);
  EXPECT_EQ(nvrtcCreateProgram(&prog, "", "x", 1, nullptr, nullptr), NVRTC_ERROR_INVALID_INPUT);
  // No PTX before a successful compilation.
  ASSERT_EQ(nvrtcCreateProgram(&prog, kAxpy, nullptr, 0, nullptr, nullptr), NVRTC_SUCCESS);
  EXPECT_EQ(nvrtcGetPTXSize(prog, &size), NVRTC_ERROR_INVALID_PROGRAM);
  nvrtcDestroyProgram(&prog);
}

TEST(NvrtcApi, UnprovidedEntryPointsFail) {
  nvrtcProgram prog;
  ASSERT_EQ(nvrtcCreateProgram(&prog, kAxpy, "a.cu", 0, nullptr, nullptr), NVRTC_SUCCESS);
  size_t size;
  EXPECT_EQ(nvrtcGetLTOIRSize(prog, &size), NVRTC_ERROR_INVALID_INPUT);
  EXPECT_EQ(nvrtcGetOptiXIRSize(prog, &size), NVRTC_ERROR_INVALID_INPUT);
  EXPECT_EQ(nvrtcSetPCHHeapSize(1 << 20), NVRTC_ERROR_INVALID_INPUT);
  nvrtcDestroyProgram(&prog);
}

}  // namespace
