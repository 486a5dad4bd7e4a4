// bench_nvrtc: how long nvrtcCompileProgram takes in process, against
// running clang-19 as a subprocess on the same source, with the same
// built-in device headers, target and optimisation level.  Prints the
// median and minimum of each over --iterations runs per source.
#include "build_paths.h"   // qgpu_paths() in CMakeLists.txt

#include <CLI/CLI.hpp>
#include <nvrtc.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

extern char** environ;

namespace {

using Clock = std::chrono::steady_clock;

struct Source {
  const char* name;
  const char* text;
};

const Source kSources[] = {
    {"axpy", R"(
extern "C" __global__ void axpy(int* y, const int* x, int a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] += a * x[i];
}
)"},
    {"reduction", R"(
#include <cstdint>
__device__ int32_t total;
extern "C" __global__ void block_sum(const int32_t* in, int n) {
  __shared__ int32_t partial[4];
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int32_t v = i < n ? in[i] : 0;
  for (int offset = 16; offset > 0; offset /= 2) v += __shfl_down_sync(0xffffffffu, v, offset);
  if (threadIdx.x % 32 == 0) partial[threadIdx.x / 32] = v;
  __syncthreads();
  if (threadIdx.x == 0) atomicAdd(&total, partial[0] + partial[1] + partial[2] + partial[3]);
}
)"},
    {"templates", R"(
template <typename T, int K> __device__ T mix(T x) { return x * K + (x >> 1); }
template <typename T, int K> __global__ void apply(T* d, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) d[i] = mix<T, K>(d[i]) + __popc(i) + __brev(i);
}
template __global__ void apply<int, 3>(int*, int);
template __global__ void apply<unsigned, 5>(unsigned*, int);
template __global__ void apply<long long, 7>(long long*, int);
)"},
};

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// One in-process compilation; returns its time, or a negative value on failure.
double nvrtc_once(const Source& s, int arch) {
  std::string arch_opt = "-arch=compute_" + std::to_string(arch);
  const char* opts[] = {arch_opt.c_str()};
  auto t = Clock::now();
  nvrtcProgram prog;
  if (nvrtcCreateProgram(&prog, s.text, s.name, 0, nullptr, nullptr) != NVRTC_SUCCESS) return -1;
  nvrtcResult r = nvrtcCompileProgram(prog, 1, opts);
  double dt = seconds_since(t);
  nvrtcDestroyProgram(&prog);
  return r == NVRTC_SUCCESS ? dt : -1;
}

// One clang-19 run on the source written to `file`; returns its time, or a
// negative value on failure.
double clang_once(const std::string& file, const std::string& out, int arch) {
  std::string dir = QGPU_RTC_DEVICE_HEADERS;
  std::string gpu = "--cuda-gpu-arch=sm_" + std::to_string(arch);
  std::string prelude = dir + "/qgpu_rtc_runtime.h";
  std::vector<std::string> args = {QGPU_CLANG19, "-x", "cuda", "--cuda-device-only", gpu, "-nocudainc",
                                   "-nocudalib", "-nostdinc", "-Wno-unknown-cuda-version",
                                   "-Xclang", "-fdeclspec", "-isystem", dir, "-include", prelude,
                                   "-std=c++17", "-O3", "-S", file, "-o", out};
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  auto t = Clock::now();
  pid_t pid;
  if (posix_spawn(&pid, argv[0], nullptr, nullptr, argv.data(), environ) != 0) return -1;
  int status = 0;
  waitpid(pid, &status, 0);
  double dt = seconds_since(t);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? dt : -1;
}

struct Summary {
  double median = 0, min = 0;
  bool ok = true;
};

template <typename Run>
Summary measure(int iterations, Run run) {
  std::vector<double> times;
  Summary s;
  for (int i = 0; i < iterations; ++i) {
    double t = run();
    if (t < 0) s.ok = false;
    times.push_back(t);
  }
  std::sort(times.begin(), times.end());
  s.median = times[times.size() / 2];
  s.min = times.front();
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"nvrtcCompileProgram against clang-19 as a subprocess"};
  int iterations = 5, arch = 75;
  app.add_option("-n,--iterations", iterations, "runs per source and compiler")->check(CLI::PositiveNumber);
  app.add_option("--arch", arch, "compute capability * 10");
  CLI11_PARSE(app, argc, argv);

  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / ("bench_nvrtc_" + std::to_string(getpid()));
  fs::create_directories(dir);
  // The first in-process compilation also initialises LLVM: time it apart.
  double first = nvrtc_once(kSources[0], arch);
  std::printf("first nvrtcCompileProgram in the process (LLVM start-up included): %.1f ms\n",
              first * 1e3);
  std::printf("%-10s %22s %22s %8s\n", "source", "nvrtc median/min ms", "clang-19 median/min ms",
              "speedup");
  int failures = first < 0;
  for (const Source& s : kSources) {
    fs::path file = dir / (std::string(s.name) + ".cu");
    std::ofstream(file) << s.text;
    Summary in_process = measure(iterations, [&] { return nvrtc_once(s, arch); });
    Summary subprocess =
        measure(iterations, [&] { return clang_once(file, (dir / "out.ptx").string(), arch); });
    failures += !in_process.ok + !subprocess.ok;
    std::printf("%-10s %11.1f / %8.1f %11.1f / %8.1f %7.1fx%s\n", s.name, in_process.median * 1e3,
                in_process.min * 1e3, subprocess.median * 1e3, subprocess.min * 1e3,
                subprocess.median / in_process.median,
                in_process.ok && subprocess.ok ? "" : "  (a compilation failed)");
  }
  fs::remove_all(dir);
  return failures ? 1 : 0;
}
