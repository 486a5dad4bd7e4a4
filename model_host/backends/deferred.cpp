#include "model_host/backends/deferred.h"

#include "model_host/launch/errors.h"


namespace qgpu::backends {

DeferredBackend::DeferredBackend(std::string name, launch::DeviceSpec device, Factory make, bool concurrent)
    : name_(std::move(name)),
      device_(std::move(device)),
      concurrent_(concurrent),
      ready_(std::async(std::launch::async, [make = std::move(make)] { return std::shared_ptr<launch::Backend>(make()); })
                 .share()) {}

DeferredBackend::~DeferredBackend() { ready_.wait(); }

launch::LaunchResult DeferredBackend::launch(const launch::LaunchRequest& req, launch::GlobalMemory& mem) {
  std::shared_ptr<launch::Backend> backend;
  try {
    backend = ready_.get();
  } catch (const std::exception& e) {
    launch::LaunchResult r;
    r.error = launch::kInitializationError;
    r.message = "the " + name_ + " backend could not start: " + e.what();
    return r;
  }
  return backend->launch(req, mem);
}

}  // namespace qgpu::backends
