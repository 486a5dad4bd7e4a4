// Real nvcc-built programs under libcudart.so.13 with a model_host of their
// own: both ways of loading the drop-in, fatbinary forms, bad input, sticky
// errors, printf, a daemon that dies mid-launch, and `qgpu run`.
#include "build_paths.h"   // qgpu_paths() in CMakeLists.txt

#include <pty.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <thread>

#include "elf_sections.h"
#include "process.h"
#include "temp_files.h"

namespace fs = std::filesystem;
using qgpu::test::run;

namespace {

const std::string kPrograms = QGPU_TEST_PROGRAMS;
const std::string kSamples = QGPU_SAMPLES_DIR;
const std::string kCudart = QGPU_CUDART_LIB;

using qgpu::test::slurp;

using qgpu::test::TempDir;

// A model_host serving one test.
class Daemon {
 public:
  Daemon() {
    endpoint = "ipc://" + (dir.path / "model_host.sock").string();
    log = dir.path / "model_host.log";
    pid = qgpu::test::start({QGPU_MODEL_HOST_BIN, "--endpoint", endpoint, "--log", log.string(),
                             "--client-timeout-ms", "3000"},
                            {});
    for (int i = 0; i < 200 && !fs::exists(dir.path / "model_host.sock"); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ~Daemon() { stop(SIGTERM); }
  void stop(int sig) {
    if (pid <= 0) return;
    kill(pid, sig);
    waitpid(pid, nullptr, 0);
    pid = -1;
  }
  std::map<std::string, std::string> preload() const { return {{"LD_PRELOAD", kCudart}, {"QGPU_DAEMON", endpoint}}; }
  std::map<std::string, std::string> library_path() const {
    return {{"LD_LIBRARY_PATH", fs::path(kCudart).parent_path().string()}, {"QGPU_DAEMON", endpoint}};
  }
  TempDir dir;
  std::string endpoint;
  fs::path log;
  pid_t pid = -1;
};

std::string program(const std::string& name) { return kPrograms + "/" + name; }

void expect_passed(const qgpu::test::Result& r, const std::string& what) {
  EXPECT_FALSE(r.timed_out) << what;
  EXPECT_EQ(r.status, 0) << what << "\nstdout:\n" << r.out << "\nstderr:\n" << r.err;
  EXPECT_NE(r.out.find("PASSED"), std::string::npos) << what << "\nstdout:\n" << r.out << "\nstderr:\n" << r.err;
  EXPECT_EQ(r.err.find("no version information"), std::string::npos) << r.err;
}

// "<key> <value>" lines as a map (other lines are ignored).
std::map<std::string, std::string> lines_as_map(const std::string& out) {
  std::map<std::string, std::string> m;
  std::istringstream in(out);
  for (std::string line; std::getline(in, line);) {
    std::istringstream l(line);
    std::string k, v, rest;
    if (l >> k >> v && !(l >> rest)) m[k] = v;
  }
  return m;
}

}  // namespace

TEST(Shim, PreloadRunsAProgram) {
  Daemon d;
  expect_passed(run({program("basic")}, d.preload()), "basic under LD_PRELOAD");
}

TEST(Shim, LibraryPathReplacesTheRealRuntime) {
  Daemon d;
  auto env = d.library_path();
  env["LD_DEBUG"] = "libs";
  auto r = run({program("basic")}, env);
  expect_passed(r, "basic under LD_LIBRARY_PATH");
  // Every libcudart the loader initialises is ours; the real one never loads.
  std::string ours = fs::canonical(kCudart).string();
  int inits = 0;
  std::istringstream in(r.err);
  for (std::string line; std::getline(in, line);) {
    if (line.find("calling init:") == std::string::npos || line.find("libcudart") == std::string::npos) continue;
    ++inits;
    std::string path = line.substr(line.find("calling init:") + 14);
    EXPECT_EQ(fs::canonical(path).string(), ours) << line;
  }
  EXPECT_EQ(inits, 1);
  EXPECT_EQ(r.err.find(fs::canonical(QGPU_REAL_CUDART).string()), std::string::npos);
}

TEST(Shim, EveryFatbinaryFormRuns) {
  Daemon d;
  for (const char* name : {"basic_rdc", "basic_compress_all", "basic_lz4", "basic_no_compress", "basic_two_ptx",
                           "two_units", "two_units_rdc"})
    expect_passed(run({program(name)}, d.preload()), name);
}

TEST(Shim, SamplesRunBothWays) {
  if (kSamples.empty() || !fs::exists(kSamples + "/dot_product")) GTEST_SKIP() << "samples are not built";
  Daemon d;
  expect_passed(run({kSamples + "/dot_product"}, d.library_path()), "dot_product under LD_LIBRARY_PATH");
  for (const char* name : {"dot_product", "dot_product_rdc", "dot_product_compress_all", "dot_product_no_compress",
                           "two_units", "dot_product_cmake"})
    if (fs::exists(kSamples + "/" + name)) expect_passed(run({kSamples + "/" + name}, d.preload()), name);
}

TEST(Shim, SeveralProgramsShareOneDaemon) {
  Daemon d;
  std::vector<qgpu::test::Result> results(4);
  std::vector<std::thread> threads;
  for (auto& r : results) threads.emplace_back([&] { r = run({program("basic")}, d.preload()); });
  for (auto& t : threads) t.join();
  for (auto& r : results) expect_passed(r, "concurrent basic");
}

TEST(Shim, BadInputGetsCudaErrors) {
  Daemon d;
  auto r = run({program("errors")}, d.preload());
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  auto m = lines_as_map(r.out);
  EXPECT_EQ(m["malloc"], "cudaSuccess");
  EXPECT_EQ(m["malloc_too_big"], "cudaErrorMemoryAllocation");
  EXPECT_EQ(m["copy_past_end"], "cudaErrorInvalidValue");
  EXPECT_EQ(m["read_past_end"], "cudaErrorInvalidValue");
  EXPECT_EQ(m["memset_past_end"], "cudaErrorInvalidValue");
  EXPECT_EQ(m["copy_never_allocated"], "cudaErrorInvalidValue");
  EXPECT_EQ(m["free"], "cudaSuccess");
  EXPECT_EQ(m["copy_to_freed"], "cudaErrorInvalidValue");
  EXPECT_EQ(m["free_twice"], "cudaErrorInvalidValue");
  EXPECT_EQ(m["launch_not_a_kernel"], "cudaErrorInvalidDeviceFunction");
  EXPECT_EQ(m["symbol_not_registered"], "cudaErrorInvalidSymbol");
  EXPECT_EQ(m["unsupported_call"], "cudaErrorNotSupported");
  EXPECT_EQ(m["unsupported_again"], "cudaErrorNotSupported");
  EXPECT_EQ(m["sync"], "cudaSuccess");  // none of these is an execution error
  EXPECT_EQ(r.out.substr(r.out.size() - 5), "done\n");
  // Messages name what is wrong; the missing entry point is named once.
  EXPECT_NE(r.err.find("global memory is"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("runs past the end of the allocation"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("not inside any live allocation"), std::string::npos) << r.err;
  size_t first = r.err.find("cudaMallocMipmappedArray is not supported");
  ASSERT_NE(first, std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("cudaMallocMipmappedArray is not supported", first + 1), std::string::npos) << r.err;
}

TEST(Shim, BinaryWithoutPtxIsToldToRebuild) {
  Daemon d;
  auto r = run({program("basic_sass_only")}, d.preload());
  EXPECT_FALSE(r.timed_out);
  EXPECT_EQ(r.status, 1) << r.out << r.err;  // the program's own failure, not a crash
  EXPECT_NE(r.out.find("FAILED"), std::string::npos);
  EXPECT_NE(r.err.find("rebuild with -arch=sm_75"), std::string::npos) << r.err;
}

TEST(Shim, CorruptFatbinaryFailsCleanly) {
  Daemon d;
  TempDir t;
  fs::path copy = t.path / "basic_corrupt";
  fs::copy_file(program("basic"), copy);
  {
    qgpu::test::ElfFile elf(copy.string());
    auto [off, size] = elf.section(".nv_fatbin");
    ASSERT_GT(size, 64u);
    // Scramble the tail of the section: the compressed PTX of the program.
    std::fstream f(copy, std::ios::in | std::ios::out | std::ios::binary);
    for (size_t i = off + size - 200; i < off + size - 8; ++i) {
      f.seekp(std::streamoff(i));
      f.put(char(0xa5 ^ (i & 0xff)));
    }
  }
  auto r = run({copy.string()}, d.preload());
  EXPECT_FALSE(r.timed_out);
  EXPECT_EQ(r.status, 1) << r.out << r.err;
  EXPECT_NE(r.err.find("unreadable"), std::string::npos) << r.err;
}

TEST(Shim, AssertIsStickyAndPrintfArrivesAtSync) {
  Daemon d;
  auto r = run({program("assert_printf")}, d.preload());
  ASSERT_FALSE(r.timed_out);
  size_t before = r.out.find("before sync"), hello = r.out.find("hello from the device: 42"),
         sync1 = r.out.find("sync1 cudaSuccess");
  ASSERT_NE(hello, std::string::npos) << r.out << r.err;
  EXPECT_LT(before, hello);
  EXPECT_LT(hello, sync1);
  auto m = lines_as_map(r.out);
  EXPECT_EQ(m["sync2"], "cudaErrorAssert") << r.out << r.err;
  EXPECT_EQ(m["malloc_after"], "cudaErrorAssert");
  EXPECT_EQ(m["last_after"], "cudaErrorAssert");
  EXPECT_EQ(m["last_again"], "cudaErrorAssert");
}

TEST(Shim, DaemonKilledMidLaunchDoesNotHangTheProgram) {
  Daemon d;
  auto env = d.preload();
  env["QGPU_HEARTBEAT_TIMEOUT_MS"] = "1500";
  qgpu::test::Result r;
  std::thread t([&] { r = run({program("spin"), "4000000000"}, env, 30); });
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  d.stop(SIGKILL);
  t.join();
  EXPECT_FALSE(r.timed_out) << r.out << r.err;
  EXPECT_LT(r.seconds, 15);
  EXPECT_NE(r.out.find("sync cudaErrorUnknown"), std::string::npos) << r.out << r.err;
  EXPECT_NE(r.out.find("after cudaErrorUnknown"), std::string::npos) << r.out << r.err;
  EXPECT_NE(r.err.find("lost the model_host daemon"), std::string::npos) << r.err;
}

TEST(Shim, SpawnsModelHostWhenNoneAnswers) {
  TempDir runtime;
  auto r = run({program("basic")}, {{"LD_PRELOAD", kCudart},
                                    {"QGPU_DAEMON", ""},
                                    {"XDG_RUNTIME_DIR", runtime.path.string()},
                                    {"QGPU_MODEL_HOST", QGPU_MODEL_HOST_BIN}});
  expect_passed(r, "basic with a spawned daemon");
  std::string log = slurp(runtime.path / "qgpu" / "model_host.log");
  std::smatch m;
  ASSERT_TRUE(std::regex_search(log, m, std::regex("listening on ipc://\\S+ \\(pid (\\d+)\\)"))) << log;
  kill(pid_t(std::stol(m[1])), SIGTERM);
}

TEST(QgpuRun, StatsLineOnTheInterpreter) {
  auto r = run({QGPU_CLI_BIN, "run", "--backend", "interpreter", "--stats", "--", program("basic")});
  expect_passed(r, "qgpu run --stats");
  EXPECT_TRUE(std::regex_search(
      r.out, std::regex("qgpu stats: launches=1 steps=[1-9][0-9]* tokens: prompt=0 generated=0 \\(0\\.0 tok/s\\) "
                        "wall=[0-9]+\\.[0-9]+ s\n")))
      << r.out;
}

// model-trace: the model's machine and tokens, the trace from the reference
// interpreter.  Its stats count what its dump holds: one line per launch,
// prompt ids, " | ", generated ids; and, as the model backend writes them, a
// line per copy to the device, its write records, " | ", nothing.
TEST(QgpuRun, ModelTraceCountsTheTokensItDumps) {
  const fs::path dump = fs::temp_directory_path() / ("qgpu_model_trace_" + std::to_string(getpid()) + ".txt");
  fs::remove(dump);
  auto r = run({QGPU_CLI_BIN, "run", "--backend", "model-trace", "--stats", "--dump-tokens", dump.string(), "--",
                program("basic")});
  expect_passed(r, "qgpu run --backend model-trace");
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.out, m, std::regex("launches=(\\d+) steps=(\\d+) tokens: prompt=(\\d+) generated=(\\d+)")))
      << r.out;
  std::ifstream in(dump);
  uint64_t launches = 0, writes = 0, prompt = 0, generated = 0;
  for (std::string line; std::getline(in, line);) {
    const size_t bar = line.find(" |");
    ASSERT_NE(bar, std::string::npos) << line;
    const bool launch = line.find_first_not_of(' ', bar + 2) != std::string::npos;
    std::istringstream a(line.substr(0, bar)), b(line.substr(bar + 2));
    uint64_t ids = 0;
    for (int64_t id; a >> id;) ids += id >= 248320;
    for (int64_t id; b >> id;) generated += id >= 248320;
    (launch ? launches : writes) += 1;
    if (launch) prompt += ids;
  }
  fs::remove(dump);
  EXPECT_EQ(launches, std::stoull(m[1]));
  EXPECT_GT(writes, 0u);  // the program's copies to the device
  EXPECT_GT(std::stoull(m[2]), 0u);
  EXPECT_EQ(prompt, std::stoull(m[3]));
  EXPECT_EQ(generated, std::stoull(m[4]));
  EXPECT_GT(generated, std::stoull(m[2]));  // every step is a token, and the scan writes more
}

// Runs `argv` on a pseudo-terminal (stdout and stderr both); returns what
// the terminal received.
std::string run_on_terminal(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env) {
  int master = -1;
  pid_t pid = forkpty(&master, nullptr, nullptr, nullptr);
  if (pid == 0) {
    for (auto& [k, v] : env) setenv(k.c_str(), v.c_str(), 1);
    std::vector<char*> a;
    for (auto& x : argv) a.push_back(const_cast<char*>(x.c_str()));
    a.push_back(nullptr);
    execv(a[0], a.data());
    _exit(127);
  }
  std::string out;
  char buf[4096];
  for (ssize_t n; (n = read(master, buf, sizeof buf)) > 0;) out.append(buf, size_t(n));  // EIO once the child is gone
  close(master);
  waitpid(pid, nullptr, 0);
  return out;
}

// On a terminal a long launch shows one line, redrawn in place and erased at
// the end; not on pipes, and not with --quiet.
TEST(QgpuRun, ProgressLineOnATerminalOnly) {
  const std::map<std::string, std::string> env = {{"QGPU_PROGRESS_AFTER_MS", "200"}, {"QGPU_BACKEND", "interpreter"}};
  const std::vector<std::string> cmd = {QGPU_CLI_BIN, "run", "--backend", "interpreter", "--", program("spin"), "200000000"};
  std::string t = run_on_terminal(cmd, env);
  // The interpreter says how many of the launch's CTAs have started.
  std::regex line("\rqgpu: launch 1 \\(spin\\), CTA 1/1, ([0-9]+\\.[0-9]) s\x1b\\[K");
  std::vector<double> seconds;
  for (auto it = std::sregex_iterator(t.begin(), t.end(), line); it != std::sregex_iterator(); ++it)
    seconds.push_back(std::stod((*it)[1]));
  ASSERT_GE(seconds.size(), 2u) << t;
  EXPECT_TRUE(std::is_sorted(seconds.begin(), seconds.end())) << t;
  EXPECT_GE(seconds.front(), 0.2) << t;
  // Erased before the program's own next line.
  size_t erased = t.rfind("\r\x1b[K");
  ASSERT_NE(erased, std::string::npos) << t;
  EXPECT_NE(t.find("sync cudaSuccess", erased), std::string::npos) << t;

  std::vector<std::string> quiet = cmd;
  quiet.insert(quiet.begin() + 2, "--quiet");
  t = run_on_terminal(quiet, env);
  EXPECT_NE(t.find("sync cudaSuccess"), std::string::npos) << t;
  EXPECT_EQ(t.find("qgpu: launch"), std::string::npos) << t;

  auto r = run(cmd, env);
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.err.find("qgpu: launch"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find('\r'), std::string::npos) << r.err;
}

TEST(QgpuRun, ModelOnlyOptionsAreRejectedOnTheInterpreter) {
  for (const char* flag : {"--check", "--model=/nonexistent", "--dump-tokens=/tmp/x"}) {
    auto r = run({QGPU_CLI_BIN, "run", "--backend", "interpreter", flag, "--", program("basic")});
    EXPECT_NE(r.status, 0) << flag;
    EXPECT_NE(r.err.find("needs the model backend"), std::string::npos) << flag << ": " << r.err;
    EXPECT_EQ(r.out.find("PASSED"), std::string::npos);
  }
}

// What the runtime reports is the backend's device: CUDA's sizes on the
// interpreter (with --device-memory's global memory), the model's on the
// model's device (interpreter-model runs it without the model), where asking
// for more fails with CUDA's error and names the way out.
TEST(QgpuRun, DeviceQueriesReportTheBackendsDevice) {
  auto lines = [](const std::string& out) {
    std::map<std::string, std::string> m;
    std::istringstream in(out);
    for (std::string l; std::getline(in, l);)
      if (auto eq = l.find('='); eq != std::string::npos) m[l.substr(0, eq)] = l.substr(eq + 1);
    return m;
  };
  auto r = run({QGPU_CLI_BIN, "run", "--backend", "interpreter", "--device-memory", "512M", "--", program("device_query")});
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  auto m = lines(r.out);
  EXPECT_EQ(m["totalGlobalMem"], std::to_string(512u << 20));
  EXPECT_EQ(m["sharedMemPerBlock"], "49152");
  EXPECT_EQ(m["sharedMemPerBlockOptin"], "65536");
  EXPECT_EQ(m["totalConstMem"], "65536");
  EXPECT_EQ(m["maxThreadsPerBlock"], "1024");
  EXPECT_EQ(m["maxThreadsDim"], "1024,1024,64");
  EXPECT_EQ(m["maxGridSize"], "2147483647,65535,65535");
  EXPECT_EQ(m["warpSize"], "32");
  EXPECT_EQ(m["regsPerBlock"], "261120");  // 255 registers for each of 1024 threads
  EXPECT_EQ(m["func.numRegs"], "255");
  EXPECT_EQ(m["func.maxThreadsPerBlock"], "1024");
  EXPECT_EQ(m["attr.MaxThreadsPerBlock"], "1024 (cudaSuccess)");
  EXPECT_EQ(m["attr.MaxGridDimX"], "2147483647 (cudaSuccess)");
  EXPECT_EQ(m["attr.MaxGridDimY"], "65535 (cudaSuccess)");
  EXPECT_EQ(m["attr.MaxSharedMemoryPerBlock"], "49152 (cudaSuccess)");
  EXPECT_EQ(m["attr.MaxSharedMemoryPerBlockOptin"], "65536 (cudaSuccess)");
  EXPECT_EQ(m["attr.TotalConstantMemory"], "65536 (cudaSuccess)");
  EXPECT_EQ(m["attr.ClockRate"], "1000 (cudaSuccess)");  // kHz: the clock counts the launch's EXECs
  EXPECT_EQ(m["memTotal"], std::to_string(512u << 20));
  EXPECT_EQ(m["memFree"], std::to_string((512u << 20) - (8u << 20)));  // less the device heap
  EXPECT_EQ(m["printfFifo"], std::to_string(1u << 20));
  EXPECT_EQ(m["mallocHeap"], std::to_string(8u << 20));
  EXPECT_EQ(m["setPrintfFifo2M"], "cudaSuccess");
  EXPECT_EQ(m["malloc1M"], "cudaSuccess");
  // An L2 of 1/64 of the memory, at most 4 MiB, three quarters of it
  // persisting; windows up to 128 MiB.
  EXPECT_EQ(m["l2CacheSize"], std::to_string(4u << 20));
  EXPECT_EQ(m["persistingL2CacheMaxSize"], std::to_string(3u << 20));
  EXPECT_EQ(m["accessPolicyMaxWindowSize"], std::to_string(128u << 20));
  EXPECT_EQ(m["attr.L2CacheSize"], std::to_string(4u << 20) + " (cudaSuccess)");
  EXPECT_EQ(m["attr.MaxPersistingL2CacheSize"], std::to_string(3u << 20) + " (cudaSuccess)");
  EXPECT_EQ(m["attr.MaxAccessPolicyWindowSize"], std::to_string(128u << 20) + " (cudaSuccess)");
  EXPECT_EQ(m["setPersistingL2Max"], "cudaSuccess");
  EXPECT_EQ(m["persistingL2"], std::to_string(3u << 20));
  EXPECT_EQ(m["setPersistingL2Over"], "cudaErrorInvalidValue");
  EXPECT_EQ(m["setWindow"], "cudaSuccess");
  EXPECT_EQ(m["getWindow"], "4096,0.50,2 (cudaSuccess)");  // cudaAccessPropertyPersisting
  EXPECT_EQ(m["setWindowOver"], "cudaErrorInvalidValue");
  EXPECT_EQ(m["resetPersisting"], "cudaSuccess");

  r = run({QGPU_CLI_BIN, "run", "--backend", "interpreter-model", "--", program("device_query")});
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  m = lines(r.out);
  EXPECT_EQ(m["totalGlobalMem"], "262144");
  EXPECT_EQ(m["sharedMemPerBlock"], "49152");
  EXPECT_EQ(m["sharedMemPerBlockOptin"], "57344");
  EXPECT_EQ(m["maxThreadsPerBlock"], "1024");
  EXPECT_EQ(m["maxThreadsDim"], "1024,1024,64");
  EXPECT_EQ(m["maxGridSize"], "65535,65535,65535");
  EXPECT_EQ(m["attr.MaxThreadsPerBlock"], "1024 (cudaSuccess)");
  EXPECT_EQ(m["regsPerBlock"], "8192");  // a register file split among the threads
  EXPECT_EQ(m["func.numRegs"], "8");       // a thread's share at 1024 threads
  EXPECT_EQ(m["func.maxThreadsPerBlock"], "1024");
  EXPECT_EQ(m["attr.ClockRate"], "1 (cudaSuccess)");  // kHz: the thread's instructions, at the model's pace
  EXPECT_EQ(m["memTotal"], "262144");
  EXPECT_EQ(m["memFree"], "262144");
  EXPECT_EQ(m["printfFifo"], "1024");
  EXPECT_EQ(m["mallocHeap"], "0");
  EXPECT_EQ(m["setPrintfFifo2M"], "cudaErrorUnsupportedLimit");
  EXPECT_EQ(m["malloc1M"], "cudaErrorMemoryAllocation");
  EXPECT_EQ(m["l2CacheSize"], "4096");  // 1/64 of 256 KiB
  EXPECT_EQ(m["persistingL2CacheMaxSize"], "3072");
  EXPECT_EQ(m["accessPolicyMaxWindowSize"], "262144");
  EXPECT_EQ(m["setWindowOver"], "cudaErrorInvalidValue");
  EXPECT_NE(r.err.find("--backend interpreter"), std::string::npos) << r.err;
}
