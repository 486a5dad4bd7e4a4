#include "model_host/daemon/deferred_backend.h"

#include <driver_types.h>

namespace qgpu::daemon {

DeferredBackend::DeferredBackend(std::string name, engine::DeviceSpec device, Factory make, bool concurrent)
    : name_(std::move(name)),
      device_(std::move(device)),
      concurrent_(concurrent),
      ready_(std::async(std::launch::async, [make = std::move(make)] { return std::shared_ptr<engine::Backend>(make()); })
                 .share()) {}

DeferredBackend::~DeferredBackend() { ready_.wait(); }

engine::LaunchResult DeferredBackend::launch(const engine::LaunchRequest& req, engine::GlobalMemory& mem) {
  std::shared_ptr<engine::Backend> backend;
  try {
    backend = ready_.get();
  } catch (const std::exception& e) {
    engine::LaunchResult r;
    r.error = cudaErrorInitializationError;
    r.message = "the " + name_ + " backend could not start: " + e.what();
    return r;
  }
  return backend->launch(req, mem);
}

}  // namespace qgpu::daemon
