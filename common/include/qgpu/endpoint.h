// Where clients find model_host, and how they authenticate on tcp://.
#pragma once

#include <string>

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

}  // namespace qgpu::endpoint
