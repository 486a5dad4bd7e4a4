// CUDA programs on the GPU inside the compiled checkpoint: `qgpu run` and
// model_host with the model backend, under the real libcudart.so.13 drop-in.
// The model comes from the cache in the build tree, which the
// backends.build_model fixture fills once.
//
// What is checked: the dot product prints 32 with --check (every generated
// token and the memory equal to the reference interpreter's), so do warp
// operations (shuffles, ballot, activemask, __syncwarp), the
// --dump-tokens and --stats formats agree with each other and with the
// vocabulary, launches the model cannot hold fail with errors naming why, the
// shim-spawned daemon runs the model by default, two clients' launches run
// at the same time, a client's exit cancels its launch, two builds give the
// same bytes, and a changed ALU weight makes --check report a divergence and
// the result go wrong: the model, not the host, computes.
#include "build_paths.h"   // qgpu_paths() in CMakeLists.txt

#include <algorithm>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <thread>

#include "model_host/model_cache/build_model.h"
#include "model_host/tokens/vocab.h"
#include "process.h"
#include "temp_files.h"

namespace fs = std::filesystem;
using qgpu::test::run;

namespace {

const std::string kQgpu = QGPU_CLI_BIN;
const std::string kModelHost = QGPU_MODEL_HOST_BIN;
const std::string kCudart = QGPU_CUDART_LIB;
const std::string kDotProduct = std::string(QGPU_SAMPLES_DIR) + "/dot_product";
const std::string kLimits = std::string(QGPU_TEST_PROGRAMS) + "/model_limits";
const std::string kWarpOps = std::string(QGPU_TEST_PROGRAMS) + "/warp_ops";
const std::string kPersistent = std::string(QGPU_TEST_PROGRAMS) + "/persistent";
const std::string kSpin = std::string(QGPU_TEST_PROGRAMS) + "/spin";
constexpr double kTimeout = 600;


// Every program here, and model_host spawned by the shim, finds the model in
// the test cache; nothing from the caller's environment picks another.
[[maybe_unused]] const bool kEnvironment = [] {
  setenv("XDG_CACHE_HOME", QGPU_TEST_MODEL_CACHE, 1);
  unsetenv("QGPU_MODEL_DIR");
  unsetenv("QGPU_BACKEND");
  return true;
}();

using qgpu::test::TempDir;

using qgpu::test::slurp;

std::string report(const qgpu::test::Result& r) { return "\nstdout:\n" + r.out + "\nstderr:\n" + r.err; }

std::vector<int64_t> ids(const std::string& text) {
  std::istringstream in(text);
  std::vector<int64_t> v;
  for (int64_t id; in >> id;) v.push_back(id);
  EXPECT_TRUE(in.eof()) << "not a list of ids: " << text;
  return v;
}

// The lines of a token dump that generated something (launches), in order.
std::vector<std::string> launch_lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    const size_t bar = line.find(" |");
    EXPECT_NE(bar, std::string::npos) << line;
    if (bar != std::string::npos && line.find_first_not_of(' ', bar + 2) != std::string::npos) out.push_back(line);
  }
  return out;
}

// A model_host with the model backend, serving one test.
class Daemon {
 public:
  explicit Daemon(std::vector<std::string> extra) {
    endpoint = "ipc://" + (dir.path / "model_host.sock").string();
    log = dir.path / "model_host.log";
    std::vector<std::string> argv = {kModelHost, "--endpoint", endpoint, "--log", log.string(), "--backend", "model",
                                     "--model", qgpu::gpu::default_model_dir()};
    argv.insert(argv.end(), extra.begin(), extra.end());
    pid = qgpu::test::start(argv, {});
    for (int i = 0; i < 200 && !fs::exists(dir.path / "model_host.sock"); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ~Daemon() {
    kill(pid, SIGTERM);
    waitpid(pid, nullptr, 0);
  }
  std::map<std::string, std::string> env() const { return {{"LD_PRELOAD", kCudart}, {"QGPU_DAEMON", endpoint}}; }
  TempDir dir;
  std::string endpoint;
  fs::path log;
  pid_t pid = -1;
};

// The weight the negative test changes, as NAME:INDEX:VALUE (see
// backends::ModelOptions::perturb): the compiled ALU weight the circuit names
// (the multiplier's down projection onto slot 4 of its lowest product digit),
// set to zero.
std::string alu_perturbation() {
  const qgpu::gpu::Built built = qgpu::gpu::build();
  const qgpu::gpu::AluWeight& w = built.alu_weight;
  EXPECT_NE(w.value, 0.0f) << w.tensor;
  const int64_t cols = built.checkpoint.tensors.at(w.tensor).size(1);
  return w.tensor + ":" + std::to_string(w.row * cols + w.col) + ":0";
}

}  // namespace

TEST(ModelRun, DotProductIsCheckedTokenByToken) {
  TempDir t;
  const fs::path dump = t.path / "tokens.txt";
  auto r = run({kQgpu, "run", "--check", "--stats", "--dump-tokens", dump.string(), "--", kDotProduct}, {}, kTimeout);
  ASSERT_EQ(r.status, 0) << report(r);
  EXPECT_NE(r.out.find("dot([1,2,3],[4,5,6]) = 32\nPASSED\n"), std::string::npos) << report(r);
  EXPECT_EQ(r.err.find("diverged"), std::string::npos) << report(r);

  std::smatch s;
  ASSERT_TRUE(std::regex_search(r.out, s,
                                std::regex("qgpu stats: launches=1 steps=(\\d+) tokens: prompt=(\\d+) generated=(\\d+) "
                                           "\\(([0-9.]+) tok/s\\) wall=[0-9.]+ s\n")))
      << report(r);
  const uint64_t steps = std::stoull(s[1]), prompt_n = std::stoull(s[2]), generated_n = std::stoull(s[3]);
  EXPECT_GT(std::stod(s[4]), 0.0);

  // One line per launch: prompt ids, " | ", generated ids; and before it one
  // line per copy to the device: its write records, " | ", nothing.
  const std::vector<std::string> lines = launch_lines(slurp(dump));
  ASSERT_EQ(lines.size(), 1u) << slurp(dump);
  const std::string& text = lines[0];
  const size_t bar = text.find(" | ");
  ASSERT_NE(bar, std::string::npos) << text;
  const auto prompt = ids(text.substr(0, bar)), generated = ids(text.substr(bar + 3));
  EXPECT_EQ(prompt.size(), prompt_n);
  EXPECT_EQ(generated.size(), generated_n);
  using qgpu::gpu::Kind;
  using qgpu::gpu::token_id;
  ASSERT_GE(prompt.size(), 3u);
  EXPECT_EQ(prompt[0], token_id(Kind::NT, 3));
  EXPECT_EQ(prompt[1], token_id(Kind::NC, 1));
  EXPECT_EQ(prompt.back(), token_id(Kind::START));
  ASSERT_GE(generated.size(), 2u);
  EXPECT_EQ(generated.front(), token_id(Kind::CTA, 0));
  EXPECT_EQ(generated.back(), token_id(Kind::END));
  uint64_t execs = 0;
  for (int64_t id : generated) {
    auto tok = qgpu::gpu::decode_token(id);
    ASSERT_TRUE(tok) << "generated id " << id << " is not a circuit token";
    execs += runs_block(tok->kind);
  }
  EXPECT_EQ(execs, steps);
}

// Device memory lives in the model's state for the client's whole life: the
// copy to the device becomes write records (a dump line with nothing
// generated), the three launches' prompts hold no memory record, and the copy
// back reads the state (the daemon keeps no image), with --check comparing
// every token and, after each launch, every word with the interpreter.
TEST(ModelRun, MemoryLivesInTheStateAcrossLaunches) {
  TempDir t;
  const fs::path dump = t.path / "tokens.txt";
  auto r = run({kQgpu, "run", "--check", "--stats", "--dump-tokens", dump.string(), "--", kPersistent}, {}, kTimeout);
  ASSERT_EQ(r.status, 0) << report(r);
  EXPECT_NE(r.out.find("16 32 48 64 80 96 112 128 3\nPASSED\n"), std::string::npos) << report(r);
  const std::string text = slurp(dump);
  using qgpu::gpu::Kind;
  std::istringstream in(text);
  int writes = 0, launches = 0;
  for (std::string line; std::getline(in, line);) {
    const size_t bar = line.find(" |");
    ASSERT_NE(bar, std::string::npos) << line;
    const auto prompt = ids(line.substr(0, bar));
    const bool launch = line.find_first_not_of(' ', bar + 2) != std::string::npos;
    int mg = 0;
    for (int64_t id : prompt) mg += qgpu::gpu::decode_token(id)->kind == Kind::MG;
    if (launch) {
      ++launches;
      EXPECT_EQ(mg, 0) << "launch " << launches << "'s prompt holds memory records: " << line;
      EXPECT_EQ(prompt.front(), qgpu::gpu::token_id(Kind::NT, 8));
    } else {
      ++writes;
      EXPECT_EQ(launches, 0) << "a write record after the first launch: " << line;
      EXPECT_EQ(mg * 3, int(prompt.size())) << line;   // D D MG records only
    }
  }
  EXPECT_EQ(launches, 3) << text;
  EXPECT_EQ(writes, 1) << text;   // the one cudaMemcpy to the device (its 8 non-zero words)
}

// The model-trace backend keeps each client's memory as the model keeps it,
// so its token dump is the model's sequence line for line: the copy's write
// records, then every launch's prompt and generated tokens (what
// tools/bench_trace replays through the model).
TEST(ModelRun, TheTraceBackendDumpsTheModelsWholeSequence) {
  TempDir t;
  const fs::path model = t.path / "model.txt", trace = t.path / "trace.txt";
  auto r = run({kQgpu, "run", "--dump-tokens", model.string(), "--", kPersistent}, {}, kTimeout);
  ASSERT_EQ(r.status, 0) << report(r);
  r = run({kQgpu, "run", "--backend", "model-trace", "--dump-tokens", trace.string(), "--", kPersistent}, {}, kTimeout);
  ASSERT_EQ(r.status, 0) << report(r);
  EXPECT_NE(r.out.find("16 32 48 64 80 96 112 128 3\nPASSED\n"), std::string::npos) << report(r);
  const std::string from_model = slurp(model);
  EXPECT_EQ(std::count(from_model.begin(), from_model.end(), '\n'), 4) << from_model;  // one write, three launches
  EXPECT_EQ(slurp(trace), from_model);
}

TEST(ModelRun, ShimSpawnedDaemonRunsTheModelByDefault) {
  TempDir runtime;
  auto r = run({kDotProduct}, {{"LD_PRELOAD", kCudart},
                               {"QGPU_DAEMON", ""},
                               {"XDG_RUNTIME_DIR", runtime.path.string()},
                               {"QGPU_MODEL_HOST", kModelHost}},
               kTimeout);
  EXPECT_EQ(r.status, 0) << report(r);
  EXPECT_NE(r.out.find("= 32\nPASSED"), std::string::npos) << report(r);
  const std::string log = slurp(runtime.path / "qgpu" / "model_host.log");
  EXPECT_NE(log.find("backend: model"), std::string::npos) << log;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(log, m, std::regex("listening on ipc://\\S+ \\(pid (\\d+)\\)"))) << log;
  kill(pid_t(std::stol(m[1])), SIGTERM);
}

// Two programs on one daemon: the model backend runs their launches at the
// same time (the model is immutable; each launch has its own state), each
// checked token by token.  A long launch starts first; a short one is issued
// once the long one's launch has been issued.  The daemon's log gives each
// launch's end and the backend's own seconds (waiting for the model or another
// launch left out): the two launches' spans overlap, which one launch at a
// time could not give.  An order of events, not a ratio of times.  The long launch
// (1,600 generator steps) runs for several times the short client's start-up
// (process, module, connection), so that start-up, stretched by a loaded
// machine, still ends inside it.
TEST(ModelRun, TwoClientsLaunchAtTheSameTime) {
  Daemon d({"--check"});
  for (int i = 0; i < 2400 && slurp(d.log).find("the model is ready") == std::string::npos; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  const fs::path issued = d.dir.path / "long-launch-issued";
  qgpu::test::Result a, b;
  std::thread other([&] { a = run({kSpin, "1600", issued.string()}, d.env(), kTimeout); });
  for (int i = 0; i < 2400 && !fs::exists(issued); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  const bool long_issued = fs::exists(issued);
  if (long_issued) b = run({kSpin, "20"}, d.env(), kTimeout);
  other.join();
  ASSERT_TRUE(long_issued) << report(a);
  EXPECT_EQ(a.status, 0) << report(a);
  EXPECT_NE(a.out.find("spin 1600 = "), std::string::npos) << report(a);
  EXPECT_EQ(b.status, 0) << report(b);
  EXPECT_NE(b.out.find("spin 20 = "), std::string::npos) << report(b);
  for (const auto* r : {&a, &b}) EXPECT_NE(r->out.find("\nPASSED"), std::string::npos) << report(*r);
  const std::string log = slurp(d.log);
  std::regex line("\\[model_host (\\d+):(\\d+):([0-9.]+)\\] session \\S+ \\([^)]*\\): \\S+ grid .*: ok, (\\d+) steps in ([0-9.e+-]+) s");
  struct Span { long steps; double start, end; };
  std::vector<Span> spans;
  for (auto it = std::sregex_iterator(log.begin(), log.end(), line); it != std::sregex_iterator(); ++it) {
    const double end = std::stod((*it)[1]) * 3600 + std::stod((*it)[2]) * 60 + std::stod((*it)[3]);
    spans.push_back({std::stol((*it)[4]), end - std::stod((*it)[5]), end});
  }
  ASSERT_EQ(spans.size(), 2u) << log;
  for (auto& s : spans)  // across midnight
    if (std::max(spans[0].end, spans[1].end) - s.end > 43200) s.start += 86400, s.end += 86400;
  if (spans[0].steps < spans[1].steps) std::swap(spans[0], spans[1]);
  const Span& longer = spans[0];
  const Span& shorter = spans[1];
  ASSERT_GT(longer.steps, 10 * shorter.steps) << log;
  // Each launch ran for its own seconds inside [end - seconds, end] (the
  // backend's seconds leave out any wait, so the span may start after the
  // launch did, never before).  One launch at a time makes the two spans
  // disjoint, in either order; running together, they overlap.  The log's
  // millisecond stamps and the moment each line is written allow a few
  // milliseconds, taken against the overlap.  (Comparing the starts alone
  // failed once on a loaded machine: the long launch's span began 65 ms after
  // the short one's, though the long launch was issued first.)
  constexpr double kSlack = 0.05;
  EXPECT_GT(shorter.end, longer.start + kSlack) << log;
  EXPECT_LT(shorter.start, longer.end - kSlack) << log;
}

// A client that exits while its launch runs on the model: the daemon sees its
// process gone and cancels the launch, and the model backend ends it at the
// next token (LaunchProgress::cancel), where it would otherwise write its
// millions of tokens on.  The client is killed once the daemon reports its
// request running (`--progress-s 1`: a launch issued is not yet a launch
// received, nor one that runs before the model is ready).  The log names the
// cancelled launch; the waits are bounds for a hung daemon, not measured times.
TEST(ModelRun, AClientThatExitsHasItsLaunchCancelled) {
  Daemon d({"--progress-s", "1"});
  for (int i = 0; i < 2400 && slurp(d.log).find("the model is ready") == std::string::npos; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  const fs::path issued = d.dir.path / "launch-issued";
  const pid_t client = qgpu::test::start({kSpin, "1000000", issued.string()}, d.env());
  ASSERT_GT(client, 0);
  for (int i = 0; i < 2400 && !fs::exists(issued); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  const bool launched = fs::exists(issued);
  bool running = false;
  for (int i = 0; launched && i < 2400 && !running; ++i) {
    running = slurp(d.log).find("request still running after") != std::string::npos;
    if (!running) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  kill(client, SIGKILL);
  waitpid(client, nullptr, 0);
  ASSERT_TRUE(launched) << slurp(d.log);
  ASSERT_TRUE(running) << slurp(d.log);
  const std::regex cancelled("_Z4spinPji grid 1 x 1 threads: error 719 \\(launch cancelled after (\\d+) generated tokens");
  std::smatch m;
  std::string log;
  for (int i = 0; i < 2400; ++i) {
    log = slurp(d.log);
    if (std::regex_search(log, m, cancelled)) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_FALSE(m.empty()) << log;
  EXPECT_LT(std::stoull(m[1]), 1000000u) << log;   // the whole launch: over two tokens a step
  EXPECT_NE(log.find("process exited; its running launch is cancelled"), std::string::npos) << log;
}

TEST(ModelRun, RefusesWhatTheModelCannotHold) {
  Daemon d({});
  auto r = run({kLimits, "params5k"}, d.env(), kTimeout);
  EXPECT_EQ(r.status, 0) << report(r);
  EXPECT_NE(r.out.find("params5k: cudaErrorInvalidValue"), std::string::npos) << report(r);
  EXPECT_NE(r.err.find("on the qgpu (Qwen3.5 model) device: 5008 bytes of kernel parameters; it takes at most 4096"),
            std::string::npos)
      << report(r);
  EXPECT_NE(r.err.find("--backend interpreter"), std::string::npos) << report(r);  // the way out
}

// clock64() on the model: the circuit has no clock, so the model lowering
// keeps a per-thread count of instructions (docs/isa.md 8.1); the model
// computes it like any value, and a read after a loop is larger than one
// before it in every thread.
TEST(ModelRun, ClockIsAPerThreadCountOnTheModel) {
  Daemon d({});
  auto r = run({kLimits, "clock"}, d.env(), kTimeout);
  EXPECT_EQ(r.status, 0) << report(r);
  EXPECT_NE(r.out.find("clock: cudaSuccess, later reads larger in 32 of 32"), std::string::npos) << report(r);
}

// Shuffles, a ballot, __activemask on both sides of a divergent branch,
// __syncwarp and a butterfly sum over a full and a partial warp: the model
// writes every token of the interpreter's trace (WMIN tokens included) and
// every word.
TEST(ModelRun, WarpOperationsAreCheckedTokenByToken) {
  TempDir t;
  const fs::path dump = t.path / "tokens.txt";
  auto r = run({kQgpu, "run", "--check", "--stats", "--dump-tokens", dump.string(), "--", kWarpOps}, {}, kTimeout);
  ASSERT_EQ(r.status, 0) << report(r);
  EXPECT_NE(r.out.find("PASSED\n"), std::string::npos) << report(r);
  EXPECT_EQ(r.err.find("diverged"), std::string::npos) << report(r);
  const std::string text = slurp(dump);
  const size_t bar = text.find(" | ");
  ASSERT_NE(bar, std::string::npos) << text;
  int wmins = 0;
  for (int64_t id : ids(text.substr(bar + 3))) wmins += qgpu::gpu::decode_token(id)->kind == qgpu::gpu::Kind::WMIN;
  EXPECT_GT(wmins, 10);
}

TEST(ModelRun, ModelOptionsNeedTheModelBackend) {
  for (const char* flag : {"--check", "--model=/nonexistent", "--dump-tokens=/tmp/x"}) {
    auto r = run({kQgpu, "run", "--backend", "interpreter", flag, "--", kDotProduct});
    EXPECT_NE(r.status, 0) << flag;
    EXPECT_NE(r.err.find("needs the model backend"), std::string::npos) << flag << report(r);
    EXPECT_EQ(r.out.find("PASSED"), std::string::npos) << flag;
  }
  TempDir t;
  auto r = run({kQgpu, "run", "--model", t.path.string(), "--", kDotProduct});
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.err.find("holds no complete compiled GPU model"), std::string::npos) << report(r);
}

TEST(ModelRun, AChangedAluWeightMakesCheckDivergeAndTheResultWrong) {
  const std::string weight = alu_perturbation();
  {
    Daemon d({"--check", "--perturb", weight});
    auto r = run({kDotProduct}, d.env(), kTimeout);
    EXPECT_NE(r.status, 0) << report(r);
    EXPECT_NE(r.err.find("diverged from the reference interpreter"), std::string::npos) << report(r);
    EXPECT_NE(r.err.find("expected "), std::string::npos) << report(r);
    EXPECT_EQ(r.out.find("= 32\n"), std::string::npos) << report(r);
  }
  {
    Daemon d({"--perturb", weight, "--max-tokens", "2000"});  // the trace is 43 tokens
    auto r = run({kDotProduct}, d.env(), kTimeout);
    EXPECT_NE(r.status, 0) << report(r);
    EXPECT_EQ(r.out.find("= 32\n"), std::string::npos) << report(r);
  }
}

// A second build, into a fresh cache holding a model of another circuit
// version and a file of someone else's: the same bytes as the fixture's
// build, and only the stale model is gone.
TEST(ModelBuild, ASecondBuildGivesTheSameBytesAndReplacesStaleModels) {
  const std::string cached = qgpu::gpu::default_model_dir();
  ASSERT_TRUE(qgpu::gpu::model_complete(cached, qgpu::gpu::ModelFormat::Compact)) << cached;
  TempDir cache;
  const fs::path stale = cache.path / "qgpu" / "model-0123456789abcdef", other = cache.path / "qgpu" / "notes";
  fs::create_directories(stale);
  std::ofstream(stale / "config.json") << "{}";
  std::ofstream(other) << "mine";
  setenv("XDG_CACHE_HOME", cache.path.c_str(), 1);
  const std::string dir = qgpu::gpu::default_model_dir();
  qgpu::gpu::write_model(dir, qgpu::gpu::ModelFormat::Compact, {});
  setenv("XDG_CACHE_HOME", QGPU_TEST_MODEL_CACHE, 1);
  for (const char* f : {"config.json", "qgpu-gpu.json", "qgpu-sparse.bin"}) {
    const std::string a = slurp(fs::path(cached) / f), b = slurp(fs::path(dir) / f);
    EXPECT_FALSE(a.empty()) << f;
    EXPECT_TRUE(a == b) << f << " differs between two builds";
  }
  EXPECT_FALSE(fs::exists(stale));
  EXPECT_EQ(slurp(other), "mine");
}
