// The client side of model_host: one connection per process, used by the
// CUDA drop-ins (libcudart.so.13 now, libcuda.so.1 later) and by tools.
//
// Every call is synchronous and thread-safe (calls are serialised).  On an
// ipc:// endpoint the requests go through a shared-memory segment with the
// daemon (qgpu/shm.h), else over ZeroMQ.  A call
// fails by throwing client::Error carrying a cudaError_t value and a message;
// when the daemon dies or stops answering, the pending call and every later
// one fail with Error::lost set, never hang.
#pragma once

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>

#include "qgpu/protocol.h"

namespace qgpu::client {

struct Error : std::runtime_error {
  Error(int code, const std::string& message, bool lost = false)
      : std::runtime_error(message), code(code), lost(lost) {}
  int code;   // a cudaError_t value
  bool lost;  // the daemon is gone: nothing more will work
};

struct Options {
  std::string endpoint;      // empty: $QGPU_DAEMON, else the default ipc:// endpoint
  bool spawn = true;         // start model_host if none answers (never with $QGPU_DAEMON)
  std::string model_host;    // program to spawn; empty: $QGPU_MODEL_HOST, else ../bin/model_host
                             // beside the library or program holding this code
  std::string secret;        // empty: $QGPU_SECRET
  std::string program;       // shown in the daemon's log
  int connect_timeout_ms = 10000;
  int heartbeat_ms = 500;            // ping period
  int heartbeat_timeout_ms = 5000;   // silence after which the daemon counts as lost
                                     // ($QGPU_HEARTBEAT_TIMEOUT_MS overrides)
};

class Connection {
 public:
  // Connects (spawning model_host if allowed and needed) and says Hello.
  static std::unique_ptr<Connection> open(Options opts = {});
  ~Connection();  // says Bye

  const proto::DeviceInfo& device() const { return device_; }
  const std::string& endpoint() const { return endpoint_; }
  uint64_t session() const { return session_; }

  uint64_t malloc(uint64_t size);
  void free(uint64_t addr);
  void write(uint64_t addr, const void* src, uint64_t size);
  void read(void* dst, uint64_t addr, uint64_t size);
  void copy(uint64_t dst, uint64_t src, uint64_t size);
  void memset(uint64_t addr, uint8_t value, uint64_t size);
  void mem_info(uint64_t* free_bytes, uint64_t* total_bytes);
  // Sets (or with proto::kQueryLimit reads) the session's printf FIFO or
  // device heap size (proto::kLimitPrintfFifo, kLimitMallocHeap); returns the
  // value now in force.
  uint64_t limit(uint32_t which, uint64_t value);
  proto::ModuleImage load_module(const std::string& ptx);
  void unload_module(uint32_t module);
  // Fails (throws) only when the request could not be served; the kernel's
  // own error is in the outcome.
  proto::LaunchOutcome launch(const proto::LaunchArgs& args);
  // Transport checks and benchmarks: a per-session buffer in the daemon
  // (up to proto::kMaxScratch bytes) that is not device memory.
  void scratch_write(uint64_t offset, const void* src, uint64_t size);
  void scratch_read(void* dst, uint64_t offset, uint64_t size);
  void ping();
  // Whether requests go through a shared-memory segment with the daemon
  // (ipc:// endpoints; $QGPU_SHM=0 keeps to ZeroMQ) rather than ZeroMQ.
  bool shared_memory() const;
  // The session's device global memory as a file this process may map
  // (MAP_SHARED, file offset = device address - device().global_base): what
  // the device reads and writes, live, with the daemon on this machine
  // running a backend whose memory is bytes (the interpreters); -1 otherwise.
  int device_memory_fd() const;
  proto::LaunchCounters daemon_stats();
  // The launch the daemon runs now (any client's) and the totals so far;
  // answered while another client's launch runs.  Waits up to `wait_ms`
  // (at most 1000) for a launch to start or end.  `shown`: this client shows
  // a progress line on the program's terminal; a launch that ends then
  // waits for the next call, which says the line is gone, before it returns
  // (at most 250 ms).
  proto::LaunchProgress progress(bool shown = false, uint32_t wait_ms = 0);

  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

 private:
  struct Impl;
  explicit Connection(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
  proto::DeviceInfo device_;
  std::string endpoint_;
  uint64_t session_ = 0;
};

}  // namespace qgpu::client
