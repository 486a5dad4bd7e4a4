// bench_rpc: what the transport between a CUDA program and model_host costs.
//
// Prints the round-trip latency of a trivial call (Ping) through the
// shared-memory channel and over ZeroMQ alone, with the floors of both
// (a ZeroMQ ipc:// ping-pong and a futex ping-pong between two threads of
// this process), and the bandwidth of copies from 4 KiB to 64 MiB each way,
// beside an in-process memcpy of the same size.  Device memory is the machine's small global window, so the
// copies go to the session's scratch buffer in the daemon, which the
// protocol offers for exactly this: the same chunked Write/Read path as
// cudaMemcpy, without the window's size limit.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <thread>
#include <vector>

#include <zmq.hpp>

#include "qgpu/client.h"
#include "qgpu/shm.h"

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

template <class F>
double best_seconds(int reps, F&& f) {
  double best = 1e30;
  for (int i = 0; i < reps; ++i) {
    auto t = Clock::now();
    f();
    best = std::min(best, std::chrono::duration<double>(Clock::now() - t).count());
  }
  return best;
}

// Round trip of an empty message between two threads over a ZeroMQ ipc://
// pair (DEALER to ROUTER, as client and daemon): what ZeroMQ alone costs.
double zmq_floor(const fs::path& dir, int n) {
  zmq::context_t ctx(1);
  std::string ep = "ipc://" + (dir / "floor.sock").string();
  zmq::socket_t server(ctx, zmq::socket_type::router), client(ctx, zmq::socket_type::dealer);
  server.bind(ep);
  client.connect(ep);
  std::thread t([&] {
    for (int i = 0; i < n + 100; ++i) {
      zmq::message_t id, m;
      (void)server.recv(id);
      (void)server.recv(m);
      server.send(id, zmq::send_flags::sndmore);
      server.send(m, zmq::send_flags::none);
    }
  });
  Clock::time_point start;
  for (int i = 0; i < n + 100; ++i) {
    if (i == 100) start = Clock::now();
    client.send(zmq::str_buffer("p"), zmq::send_flags::none);
    zmq::message_t m;
    (void)client.recv(m);
  }
  double s = std::chrono::duration<double>(Clock::now() - start).count() / n;
  t.join();
  return s;
}

// Round trip between two threads through two futex words, waiting as the
// shared-memory channel does: its floor.
double futex_floor(int n) {
  std::atomic<uint32_t> ping{0}, pong{0}, ping_waiting{0}, pong_waiting{0};
  std::thread t([&] {
    for (uint32_t i = 1; i <= uint32_t(n); ++i) {
      while (!qgpu::shm::wait_change(&ping, &ping_waiting, i - 1, qgpu::shm::spin_us(), 100)) {
      }
      qgpu::shm::publish(&pong, &pong_waiting, i);
    }
  });
  auto start = Clock::now();
  for (uint32_t i = 1; i <= uint32_t(n); ++i) {
    qgpu::shm::publish(&ping, &ping_waiting, i);
    while (!qgpu::shm::wait_change(&pong, &pong_waiting, i - 1, qgpu::shm::spin_us(), 100)) {
    }
  }
  double s = std::chrono::duration<double>(Clock::now() - start).count() / n;
  t.join();
  return s;
}

double ping_rtt(qgpu::client::Connection& c, int pings) {
  for (int i = 0; i < 100; ++i) c.ping();  // warm up
  auto t = Clock::now();
  for (int i = 0; i < pings; ++i) c.ping();
  return std::chrono::duration<double>(Clock::now() - t).count() / pings;
}

int main(int argc, char** argv) {
  CLI::App app{"bench_rpc: latency and copy bandwidth between a client and model_host over ipc://"};
  std::string endpoint;
  int pings = 2000;
  app.add_option("--endpoint", endpoint, "an existing model_host (default: start a private one)");
  app.add_option("--pings", pings, "round trips to time")->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  pid_t daemon = -1;
  fs::path dir;
  if (endpoint.empty()) {
    std::string t = (fs::temp_directory_path() / "qgpu-bench-XXXXXX").string();
    dir = mkdtemp(t.data());
    endpoint = "ipc://" + (dir / "model_host.sock").string();
    fs::path exe = fs::read_symlink("/proc/self/exe").parent_path() / "model_host";
    std::string log = (dir / "model_host.log").string();
    daemon = fork();
    if (daemon == 0) {
      execl(exe.c_str(), exe.c_str(), "--endpoint", endpoint.c_str(), "--log", log.c_str(), nullptr);
      _exit(127);
    }
  }

  qgpu::client::Options o;
  o.endpoint = endpoint;
  o.spawn = false;
  o.program = "bench_rpc";
  std::unique_ptr<qgpu::client::Connection> c;
  for (int i = 0; i < 100 && !c; ++i) {
    try {
      c = qgpu::client::Connection::open(o);
    } catch (const qgpu::client::Error& e) {
      if (i == 99) {
        std::fprintf(stderr, "bench_rpc: %s\n", e.what());
        return 1;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }

  double rtt = ping_rtt(*c, pings);
  std::printf("endpoint %s (requests over %s)\n", endpoint.c_str(), c->shared_memory() ? "shared memory" : "ZeroMQ");
  std::printf("round trip (Ping): %.1f us (%d calls)\n", rtt * 1e6, pings);
  if (c->shared_memory()) {
    setenv("QGPU_SHM", "0", 1);
    auto z = qgpu::client::Connection::open(o);
    unsetenv("QGPU_SHM");
    std::printf("round trip (Ping) over ZeroMQ alone: %.1f us\n", ping_rtt(*z, pings) * 1e6);
  }
  fs::path floor_dir = dir.empty() ? fs::temp_directory_path() : dir;
  std::printf("floors, two threads of this process: ZeroMQ ipc:// ping-pong %.1f us, futex ping-pong %.1f us\n\n",
              zmq_floor(floor_dir, pings) * 1e6, futex_floor(pings) * 1e6);
  std::printf("%10s %14s %14s %14s\n", "size", "write MB/s", "read MB/s", "memcpy MB/s");
  for (size_t size = 4096; size <= (64u << 20); size *= 4) {
    std::vector<uint8_t> src(size, 0x5a), dst(size), tmp(size);
    int reps = size >= (16u << 20) ? 3 : 10;
    double w = best_seconds(reps, [&] { c->scratch_write(0, src.data(), size); });
    double r = best_seconds(reps, [&] { c->scratch_read(dst.data(), 0, size); });
    double m = best_seconds(reps, [&] {
      std::memcpy(tmp.data(), src.data(), size);
      asm volatile("" : : "r"(tmp.data()) : "memory");
    });
    char label[32];
    if (size >= (1u << 20)) std::snprintf(label, sizeof label, "%zu MiB", size >> 20);
    else std::snprintf(label, sizeof label, "%zu KiB", size >> 10);
    std::printf("%10s %14.0f %14.0f %14.0f\n", label, size / w / 1e6, size / r / 1e6, size / m / 1e6);
  }
  c.reset();
  if (daemon > 0) {
    kill(daemon, SIGTERM);
    waitpid(daemon, nullptr, 0);
    fs::remove_all(dir);
  }
  return 0;
}
