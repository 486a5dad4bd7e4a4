// model_host's protocol server: one ROUTER socket, one session per client,
// each session's requests served in order on its own worker thread, so a
// long launch of one client never stalls another client's replies or
// heartbeats.  The I/O thread answers Hello and Ping itself, reaps clients
// that said Bye, died (their pid vanished) or fell silent, and logs progress
// of long launches.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>
#include <zmq.hpp>

#include "model_host/daemon/session.h"

namespace qgpu::daemon {

struct ServerOptions {
  std::string endpoint;
  std::string secret;                 // required from clients when non-empty
  int client_timeout_ms = 15000;      // silence after which a client counts as dead
  int idle_exit_s = 0;                // exit after this long without clients (0: never)
  int progress_s = 10;                // log running launches this often
};

class Server {
 public:
  Server(ServerOptions opts, Device& device);
  ~Server();
  // Serves until `stop` becomes true (or the idle timeout passes).
  void run(const std::atomic<bool>& stop);

 private:
  struct Worker;
  void on_client_message(std::vector<zmq::message_t>& frames);
  void hello(const std::string& peer, const proto::Header& h, proto::Reader& body);
  void reply(const std::string& peer, const proto::Header& req, Reply r);
  void reap();

  ServerOptions opts_;
  Device& device_;
  zmq::context_t ctx_{1};
  zmq::socket_t router_{ctx_, zmq::socket_type::router};
  zmq::socket_t replies_{ctx_, zmq::socket_type::pull};
  std::map<uint64_t, std::unique_ptr<Worker>> sessions_;
  std::vector<std::unique_ptr<Worker>> retiring_;  // closed, finishing their last request
  std::chrono::steady_clock::time_point idle_since_;
};

}  // namespace qgpu::daemon
