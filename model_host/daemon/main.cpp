// model_host: the daemon that serves CUDA drop-ins over ZeroMQ.
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <chrono>
#include <cstring>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "model_host/backends/deferred.h"
#include "model_host/daemon/log.h"
#include "model_host/daemon/server.h"
#include "model_host/backends/registry.h"
#include "model_host/machine/api.h"
#include "qgpu/endpoint.h"

namespace {
std::atomic<bool> g_stop{false};
void on_signal(int) { g_stop = true; }
}  // namespace

int main(int argc, char** argv) {
  using namespace qgpu;
  CLI::App app{"model_host: serves qgpu's CUDA drop-ins (libcudart.so.13) over ZeroMQ"};
  daemon::ServerOptions opts;
  std::string backend_name = backends::default_backend(), log_file;
  app.add_option("--endpoint", opts.endpoint, "ipc:// or tcp:// endpoint (default: $QGPU_DAEMON, else ipc:// in the runtime directory)");
  backends::BackendOptions bopts;
  app.add_option("--backend", backend_name,
                 "model, interpreter, or interpreter-model / model-trace / ptx-reference (cross-checks); default: $QGPU_BACKEND, else model")
      ->capture_default_str();
  app.add_option("--model", bopts.model_dir,
                 "compiled GPU model directory (default: $QGPU_MODEL_DIR, else the cache, built there on first use)");
  app.add_flag("--check", bopts.model.check, "compare every generated token and the memory with the reference interpreter");
  app.add_option("--dump-tokens", bopts.model.dump_tokens, "append each launch's prompt and generated token ids to FILE");
  app.add_option("--max-tokens", bopts.model.max_tokens, "generated tokens per launch before cudaErrorLaunchTimeout")
      ->capture_default_str();
  app.add_flag("--dense", bopts.model.dense, "run the dense executor instead of the sparse one (same numbers, slower)");
  bool no_memo = false;
  app.add_flag("--no-memo", no_memo, "run the sparse executor without its sublayer memo (same numbers, slower)");
  app.add_option("--perturb", bopts.model.perturb, "change one weight after loading, NAME:INDEX:VALUE (negative tests)")
      ->group("Testing");
  std::string device_memory;
  app.add_option("--device-memory", device_memory,
                 "global memory of the interpreter's CUDA-sized device, e.g. 512M or 3G (default: $QGPU_DEVICE_MEMORY, "
                 "else 2G); backed lazily, so only what programs touch costs host memory");
  app.add_option("--secret", opts.secret, "shared secret clients must present (default: $QGPU_SECRET; required on tcp://)");
  app.add_option("--log", log_file, "append the log to this file instead of stderr");
  app.add_option("--client-timeout-ms", opts.client_timeout_ms, "free a client's session after this long without a message")
      ->capture_default_str();
  app.add_option("--idle-exit-s", opts.idle_exit_s, "exit after this many seconds without clients (0: never)")
      ->capture_default_str();
  app.add_option("--progress-s", opts.progress_s, "log running requests this often")->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  bopts.model.memo = !no_memo;

  try {
    if (!log_file.empty()) {
      int fd = open(log_file.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
      if (fd < 0) throw std::runtime_error("cannot open log file " + log_file + ": " + std::strerror(errno));
      dup2(fd, 2);
      close(fd);
    }
    if (opts.endpoint.empty()) opts.endpoint = endpoint::env_or(endpoint::kDaemonEnv, endpoint::default_endpoint());
    if (opts.secret.empty()) opts.secret = endpoint::env_or(endpoint::kSecretEnv, "");

    const backends::BackendTraits traits = backends::backend_traits(backend_name);
    bopts.device_memory =
        device_memory.empty() ? machine::default_device_memory() : machine::parse_device_memory(device_memory);
    if (!device_memory.empty() && !traits.sized_device)
      throw std::runtime_error("--device-memory sizes the CUDA-sized device of --backend interpreter (and "
                               "ptx-reference); the " + backend_name + " backend runs the model's fixed device");
    // A model built with another global memory size (`qgpu build-model
    // --global-kib`) says so in its layout: the device has that size.
    if (traits.runs_checkpoint && !bopts.model_dir.empty()) {
      std::ifstream in(bopts.model_dir + "/qgpu-gpu.json");
      if (in) {
        try {
          const nlohmann::json layout = nlohmann::json::parse(in);
          for (const auto& m : layout.at("memories"))
            if (m.at("name") == "global") machine::set_model_global_bytes(m.at("rows").get<uint32_t>() * 4);
        } catch (const std::exception& e) {
          throw std::runtime_error("--model " + bopts.model_dir + ": qgpu-gpu.json: " + e.what());
        }
      }
    }
    std::unique_ptr<launch::Backend> backend;
    if (traits.runs_checkpoint) {
      bopts.progress = [](const std::string& line) { daemon::log(line); };
      // Loading (or building) the model takes a while: serve clients meanwhile.
      backend = std::make_unique<backends::DeferredBackend>(backend_name, machine::model_device(), [bopts, backend_name] {
        const auto t0 = std::chrono::steady_clock::now();
        daemon::log("loading the model", bopts.model_dir.empty() ? " from the cache" : " from " + bopts.model_dir,
                    bopts.model.check ? " (--check: the reference interpreter checks every token)" : "");
        try {
          auto b = backends::make_backend(backend_name, bopts);
          const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
          daemon::log("the model is ready (", secs, " s)");
          return b;
        } catch (const std::exception& e) {
          daemon::log("the model backend could not start: ", e.what());
          throw;
        }
      }, /*concurrent=*/true);
    } else {
      if (!bopts.model_dir.empty() || bopts.model.check || bopts.model.dense || no_memo || !bopts.model.perturb.empty() ||
          app.count("--max-tokens") > 0)
        throw std::runtime_error("--model, --check, --max-tokens, --dense, --no-memo and --perturb need --backend model");
      if (!bopts.model.dump_tokens.empty() && !traits.dumps_tokens)
        throw std::runtime_error("--dump-tokens needs --backend model or model-trace");
      backend = backends::make_backend(backend_name, bopts);
    }
    daemon::Device device;
    device.describe(backend.get());  // the device the backend declares: what sessions enforce and report
    signal(SIGPIPE, SIG_IGN);
    signal(SIGTERM, on_signal);
    signal(SIGINT, on_signal);
    daemon::Server server(opts, device);
    server.run(g_stop);
    daemon::log("stopped");
  } catch (const std::exception& e) {
    std::cerr << "model_host: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
