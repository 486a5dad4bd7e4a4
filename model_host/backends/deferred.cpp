#include "model_host/backends/deferred.h"

#include <stdexcept>

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

namespace {

class DeferredContext : public launch::DeviceContext {
 public:
  DeferredContext(std::string name, std::shared_future<std::shared_ptr<launch::Backend>> ready)
      : name_(std::move(name)), ready_(std::move(ready)) {}

  void write(uint64_t offset, const uint8_t* data, uint64_t size) override { open().write(offset, data, size); }
  void read(uint64_t offset, uint8_t* out, uint64_t size) override { open().read(offset, out, size); }
  launch::LaunchResult launch(const launch::LaunchRequest& req) override {
    launch::DeviceContext* c = nullptr;
    try {
      c = &open();
    } catch (const std::exception& e) {
      launch::LaunchResult r;
      r.error = launch::kInitializationError;
      r.message = e.what();
      return r;
    }
    return c->launch(req);
  }

 private:
  launch::DeviceContext& open() {
    if (!inner_) {
      std::shared_ptr<launch::Backend> backend;
      try {
        backend = ready_.get();
      } catch (const std::exception& e) {
        throw std::runtime_error("the " + name_ + " backend could not start: " + e.what());
      }
      inner_ = backend->open_context();
      if (!inner_) throw std::logic_error("the " + name_ + " backend keeps no device memory of its own");
      backend_ = std::move(backend);
    }
    return *inner_;
  }

  std::string name_;
  std::shared_future<std::shared_ptr<launch::Backend>> ready_;
  std::shared_ptr<launch::Backend> backend_;  // outlives inner_
  std::unique_ptr<launch::DeviceContext> inner_;
};

}  // namespace

std::unique_ptr<launch::DeviceContext> DeferredBackend::open_context() {
  return std::make_unique<DeferredContext>(name_, ready_);
}

}  // namespace qgpu::backends
