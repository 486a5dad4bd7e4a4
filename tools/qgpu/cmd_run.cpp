// `qgpu run`: runs an unmodified CUDA program under qgpu's libcudart.so.13
// with a private model_host (socket in a temporary directory).  With the
// model backend (the default) the compiled GPU model comes from --model, or
// from the cache, which is built on first use with its progress shown (by
// qgpu-torch: this program does not load libtorch).  On a terminal, a launch
// that runs for more than a couple of seconds shows one progress line on
// stderr, redrawn in place (--quiet: none).
#include <cxxabi.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <thread>

#include "command.h"
#include "model_host/model_cache/model_dir.h"
#include "qgpu/client.h"
#include "qgpu/endpoint.h"
#include "torch_commands.h"

namespace fs = std::filesystem;

namespace {

struct RunOptions {
  std::string backend = "model";
  bool check = false, stats = false, dense = false, no_memo = false, quiet = false;
  std::string model_dir, dump_tokens, daemon_log, device_memory;
  uint64_t max_tokens = 0;  // 0: the daemon's default
  std::vector<std::string> command;
};

// Runs `args` in a child process, with `env` as its environment when given
// (else this process's).
pid_t spawn(const std::vector<std::string>& args, const std::vector<std::string>* env = nullptr) {
  std::vector<char*> argv, envp;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  if (env) {
    for (const auto& e : *env) envp.push_back(const_cast<char*>(e.c_str()));
    envp.push_back(nullptr);
  }
  pid_t pid = fork();
  if (pid < 0) throw std::runtime_error(std::string("fork failed: ") + std::strerror(errno));
  if (pid == 0) {
    if (env) execvpe(argv[0], argv.data(), envp.data());
    else execvp(argv[0], argv.data());
    std::fprintf(stderr, "qgpu run: cannot run %s: %s\n", argv[0], std::strerror(errno));
    _exit(127);
  }
  return pid;
}

// Waits for child `pid` to end; returns its wait status.
int wait_child(pid_t pid) {
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return status;
}

// Writes the compact model into `dir` for ensure_model, in qgpu-torch: its
// progress lines are shown as this command's.
void write_model(const std::string& dir) {
  const fs::path torch = qgpu::cli::torch_program();
  if (!fs::exists(torch)) throw std::runtime_error(torch.string() + " is missing; build the project first");
  const int status = wait_child(spawn({torch.string(), "write-model", "--for", "run", "--", dir}));
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    throw std::runtime_error("building the model in " + dir + " failed (" + torch.string() + " write-model " +
                             (WIFEXITED(status) ? "exited with status " + std::to_string(WEXITSTATUS(status))
                                                : "was killed by signal " + std::to_string(WTERMSIG(status))) +
                             ")");
}

// model_host's arguments for the chosen backend; with the model backend,
// makes sure the model exists first.
std::vector<std::string> backend_args(const RunOptions& o) {
  std::vector<std::string> args = {"--backend", o.backend};
  if (o.backend != "model") {
    // model-trace writes the model's tokens, so it can dump them.
    const bool dump_ok = o.backend == "model-trace";
    for (auto [given, flag] : {std::pair{o.check, "--check"}, std::pair{!o.model_dir.empty(), "--model"},
                               std::pair{o.dense, "--dense"}, std::pair{o.no_memo, "--no-memo"},
                               std::pair{!o.dump_tokens.empty() && !dump_ok, "--dump-tokens"},
                               std::pair{o.max_tokens > 0, "--max-tokens"}})
      if (given) throw std::runtime_error(std::string(flag) + " needs the model backend; --backend " + o.backend + " was given");
    if (!o.dump_tokens.empty()) args.insert(args.end(), {"--dump-tokens", fs::absolute(o.dump_tokens).string()});
    if (!o.device_memory.empty()) args.insert(args.end(), {"--device-memory", o.device_memory});
    return args;
  }
  if (!o.device_memory.empty())
    throw std::runtime_error("--device-memory sizes the interpreter's CUDA-sized device; the model's device is fixed "
                             "(use --backend interpreter)");
  std::string dir = o.model_dir;
  if (dir.empty()) {
    dir = qgpu::gpu::default_model_dir();
    qgpu::gpu::ensure_model(dir, [](const std::string& line) { std::cerr << "qgpu run: " << line << std::endl; },
                            write_model);
  } else if (!qgpu::gpu::model_complete(dir, qgpu::gpu::ModelFormat::Compact)) {
    throw std::runtime_error("--model " + dir + " holds no complete compiled GPU model; write one with `qgpu build-model --out " +
                             dir + "`");
  }
  args.insert(args.end(), {"--model", fs::absolute(dir).string()});
  if (o.check) args.push_back("--check");
  if (o.dense) args.push_back("--dense");
  if (o.no_memo) args.push_back("--no-memo");
  if (!o.dump_tokens.empty()) args.insert(args.end(), {"--dump-tokens", fs::absolute(o.dump_tokens).string()});
  if (o.max_tokens > 0) args.insert(args.end(), {"--max-tokens", std::to_string(o.max_tokens)});
  return args;
}

std::string read_file(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

void stop_daemon(pid_t pid) {
  kill(pid, SIGTERM);
  for (int i = 0; i < 50; ++i) {
    if (waitpid(pid, nullptr, WNOHANG) == pid) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
}

// A kernel's name as written in its source (no namespace or parameters when
// it demangles), for the progress line.
std::string kernel_name(const std::string& mangled) {
  int status = 0;
  char* d = abi::__cxa_demangle(mangled.c_str(), nullptr, nullptr, &status);
  if (status != 0 || !d) return mangled;
  std::string s = d;
  std::free(d);
  if (size_t paren = s.find('('); paren != std::string::npos) s.resize(paren);
  return s;
}

std::string thousands(uint64_t v) {
  std::string s = std::to_string(v);
  for (int i = int(s.size()) - 3; i > 0; i -= 3) s.insert(size_t(i), ",");
  return s;
}

// The progress line of a running launch.
std::string progress_line(const qgpu::proto::LaunchProgress& p) {
  char b[256];
  std::string s = "qgpu: launch " + std::to_string(p.launch) + " (" + kernel_name(p.kernel) + ")";
  if (p.cta) s += ", CTA " + std::to_string(p.cta) + "/" + std::to_string(p.ctas);
  else s += ", " + std::to_string(p.ctas) + (p.ctas == 1 ? " CTA" : " CTAs");
  if (p.generated_tokens) {
    std::snprintf(b, sizeof b, ", %s tokens, %s tok/s", thousands(p.generated_tokens).c_str(),
                  thousands(uint64_t(p.generated_tokens / std::max(p.seconds, 1e-3))).c_str());
    s += b;
  }
  std::snprintf(b, sizeof b, ", %.1f s", p.seconds);
  return s + b;
}

// Polls the daemon while the program runs and keeps one line on the
// terminal (stderr) up to date for a launch running longer than
// $QGPU_PROGRESS_AFTER_MS (default 2000).  The line is erased when the
// launch ends, before the launch returns to the program (the daemon waits
// for the poll that says so), so the program's output never lands on it.
void show_progress(qgpu::client::Connection& conn, const std::atomic<bool>& done) {
  const char* env = std::getenv("QGPU_PROGRESS_AFTER_MS");
  const double after = (env ? std::atof(env) : 2000.0) / 1000.0;
  bool shown = false;
  uint64_t shown_launch = 0;
  auto erase = [&] {
    if (shown) std::fputs("\r\033[K", stderr);
    std::fflush(stderr);
    shown = false;
  };
  while (!done) {
    qgpu::proto::LaunchProgress p;
    try {
      p = conn.progress(shown, 100);  // returns at once when a launch starts or ends
    } catch (const qgpu::client::Error&) {
      break;
    }
    // The shown launch ended (another may run): erase the line now, since
    // the ended launch waits for that before it returns to its program.
    if (!p.running || p.seconds < after || p.launch != shown_launch) erase();
    if (!p.running || p.seconds < after) continue;
    shown_launch = p.launch;
    std::string line = progress_line(p);
    winsize ws{};
    if (ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 1 && line.size() >= ws.ws_col)
      line.resize(ws.ws_col - 1);  // a wrapped line could not be redrawn in place
    std::fprintf(stderr, "\r%s\033[K", line.c_str());
    std::fflush(stderr);
    shown = true;
  }
  erase();
}

int run(const RunOptions& o) {
  if (o.command.empty()) throw std::runtime_error("no program given: qgpu run [options] -- PROGRAM ARGS...");
  fs::path bin = qgpu::cli::program_dir();
  fs::path model_host = bin / "model_host", cudart = bin.parent_path() / "lib" / "libcudart.so.13";
  for (const fs::path& p : {model_host, cudart})
    if (!fs::exists(p)) throw std::runtime_error(p.string() + " is missing; build the project first");

  const std::vector<std::string> bargs = backend_args(o);

  std::string tmpl = (fs::temp_directory_path() / "qgpu-run-XXXXXX").string();
  if (!mkdtemp(tmpl.data())) throw std::runtime_error("cannot create a temporary directory");
  fs::path dir = tmpl;
  std::string endpoint = "ipc://" + (dir / "model_host.sock").string();
  fs::path log = o.daemon_log.empty() ? dir / "model_host.log" : fs::path(o.daemon_log);

  std::vector<std::string> dargs = {model_host.string(), "--endpoint", endpoint, "--log", log.string()};
  dargs.insert(dargs.end(), bargs.begin(), bargs.end());
  const std::vector<std::string> denv = qgpu::endpoint::daemon_environment();
  pid_t daemon = spawn(dargs, &denv);
  auto cleanup = [&] {
    stop_daemon(daemon);
    fs::remove_all(dir);
  };

  std::unique_ptr<qgpu::client::Connection> conn;
  for (auto start = std::chrono::steady_clock::now(); !conn;) {
    int status;
    if (waitpid(daemon, &status, WNOHANG) == daemon) {
      std::string why = read_file(log);
      fs::remove_all(dir);
      throw std::runtime_error("model_host did not start:\n" + why);
    }
    try {
      qgpu::client::Options co;
      co.endpoint = endpoint;
      co.spawn = false;
      co.connect_timeout_ms = 200;
      co.program = "qgpu run";
      conn = qgpu::client::Connection::open(co);
    } catch (const qgpu::client::Error&) {
      if (std::chrono::steady_clock::now() - start > std::chrono::seconds(20)) {
        cleanup();
        throw std::runtime_error("model_host did not answer within 20 s");
      }
    }
  }
  if (o.backend != "model")
    std::cerr << "qgpu run: the " << o.backend << " backend runs kernels (" << conn->device().device_name
              << "), not the model\n";

  std::string preload = cudart.string();
  if (const char* old = std::getenv("LD_PRELOAD"); old && *old) preload += std::string(":") + old;
  setenv("LD_PRELOAD", preload.c_str(), 1);
  // The other drop-ins (libnvrtc.so.13, libcuda.so.1) sit beside libcudart:
  // programs that compile kernels at run time find ours first.
  std::string libpath = cudart.parent_path().string();
  if (const char* old = std::getenv("LD_LIBRARY_PATH"); old && *old) libpath += std::string(":") + old;
  setenv("LD_LIBRARY_PATH", libpath.c_str(), 1);
  setenv("QGPU_DAEMON", endpoint.c_str(), 1);
  auto t0 = std::chrono::steady_clock::now();
  const pid_t child = spawn(o.command);
  std::atomic<bool> done{false};
  std::thread progress;
  if (!o.quiet && isatty(STDERR_FILENO)) progress = std::thread([&] { show_progress(*conn, done); });
  const int status = wait_child(child);
  done = true;
  if (progress.joinable()) progress.join();
  double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  unsetenv("LD_PRELOAD");

  if (o.stats) {
    qgpu::proto::LaunchCounters c = conn->daemon_stats();
    double tps = c.seconds > 0 ? double(c.generated_tokens) / c.seconds : 0.0;
    std::printf("qgpu stats: launches=%llu steps=%llu tokens: prompt=%llu generated=%llu (%.1f tok/s) wall=%.3f s\n",
                (unsigned long long)c.launches, (unsigned long long)c.steps, (unsigned long long)c.prompt_tokens,
                (unsigned long long)c.generated_tokens, tps, wall);
    std::fflush(stdout);
  }
  conn.reset();
  cleanup();
  if (WIFSIGNALED(status)) {
    std::cerr << "qgpu run: " << o.command[0] << " was killed by signal " << WTERMSIG(status) << "\n";
    return 128 + WTERMSIG(status);
  }
  return WEXITSTATUS(status);
}

qgpu::cli::Register reg("run", [](CLI::App& app) {
  auto o = std::make_shared<RunOptions>();
  auto* sub = app.add_subcommand("run", "Run a CUDA program on qgpu with a private model_host");
  sub->add_option("--backend", o->backend,
                  "model (the GPU inside the compiled checkpoint) or interpreter (the reference machine); "
                  "interpreter-model and ptx-reference for cross-checks; model-trace: the model's tokens from the reference interpreter")
      ->check(CLI::IsMember({"model", "interpreter", "interpreter-model", "model-trace", "ptx-reference"}))
      ->capture_default_str();
  sub->add_flag("--check", o->check,
                "compare every generated token, and the memory after each launch, with the reference interpreter; "
                "the first divergence fails the launch with a report (model backend)");
  sub->add_flag("--dense", o->dense, "the model's dense executor (every weight visited: same tokens, far slower)");
  sub->add_flag("--no-memo", o->no_memo, "the sparse executor without its sublayer memo (same tokens, slower)");
  sub->add_flag("--stats", o->stats, "print launch, step and token counts (prompt, generated, tokens/s) at exit");
  sub->add_option("--model", o->model_dir,
                  "compiled GPU model directory (model backend; default: $QGPU_MODEL_DIR, else the cache, built on first use)");
  sub->add_option("--dump-tokens", o->dump_tokens,
                  "append one line per launch to FILE: the prompt ids, ' | ', the generated ids (model and model-trace backends)");
  sub->add_option("--max-tokens", o->max_tokens, "generated tokens per launch before cudaErrorLaunchTimeout (model backend)");
  sub->add_option("--daemon-log", o->daemon_log, "keep model_host's log in FILE");
  sub->add_option("--device-memory", o->device_memory,
                  "global memory of the interpreter backend's device, e.g. 512M or 3G (default: $QGPU_DEVICE_MEMORY, "
                  "else 2G)");
  sub->add_flag("--quiet", o->quiet,
                "no progress line (otherwise shown on a terminal, on stderr, for launches running over 2 s: "
                "launch, CTA, generated tokens, tok/s, elapsed)");
  sub->add_option("command", o->command, "PROGRAM ARGS...")->required();
  sub->positionals_at_end();
  return [o] { return run(*o); };
});

}  // namespace
