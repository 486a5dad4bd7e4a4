// Where clients find model_host, and how they authenticate on tcp://.
#pragma once

#include <string>
#include <vector>

namespace qgpu::endpoint {

// Environment variables (docs/protocol.md):
//   QGPU_DAEMON      endpoint of a running daemon; clients connect and never spawn
//   QGPU_SECRET      shared secret; required by daemons listening on tcp://
//   QGPU_MODEL_HOST  the model_host program clients spawn when none answers
constexpr const char* kDaemonEnv = "QGPU_DAEMON";
constexpr const char* kSecretEnv = "QGPU_SECRET";
constexpr const char* kModelHostEnv = "QGPU_MODEL_HOST";

// The per-user runtime directory for sockets and logs, created 0700:
// $XDG_RUNTIME_DIR/qgpu, else /tmp/qgpu-<uid>.
std::string runtime_dir();

// ipc://<runtime_dir>/model_host.sock
std::string default_endpoint();

// The filesystem path of an ipc:// endpoint, empty for other transports.
std::string ipc_path(const std::string& endpoint);

bool is_tcp(const std::string& endpoint);

// Returns the environment variable or `fallback` when unset or empty.
std::string env_or(const char* name, const std::string& fallback);

// The environment a spawned model_host gets: this process's, with
// glibc.malloc.hugetlb=1 added to GLIBC_TUNABLES, so that its heap is backed
// by transparent huge pages (the sparse executor reads scattered entries of
// about 100 MB of weights and indexes; with 4 KiB pages most reads miss the
// TLB).  Unchanged when QGPU_HUGE_PAGES=0 or GLIBC_TUNABLES already sets it.
std::vector<std::string> daemon_environment();

}  // namespace qgpu::endpoint
