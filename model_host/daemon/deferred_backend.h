// A backend created on a background thread, so that model_host answers
// clients at once while the model loads (or, on first use, is built); each
// launch waits until the backend is ready.  A backend that could not be
// created fails every launch with cudaErrorInitializationError and the reason
// (and every memory access of a context, with the same reason).
#pragma once

#include <functional>
#include <future>
#include <memory>
#include <string>

#include "model_host/engine/backend.h"

namespace qgpu::daemon {

class DeferredBackend : public engine::Backend {
 public:
  using Factory = std::function<std::unique_ptr<engine::Backend>()>;
  // `device` is the device the backend will run, reported before it is ready.
  DeferredBackend(std::string name, engine::DeviceSpec device, Factory make);
  ~DeferredBackend() override;  // waits for the factory to return

  std::string name() const override { return name_; }
  engine::DeviceSpec device() const override { return device_; }
  engine::LaunchResult launch(const engine::LaunchRequest& req, engine::GlobalMemory& mem) override;
  // A context that opens the backend's own on first use (waiting for the
  // backend then); the backend must keep its clients' memory (the model).
  std::unique_ptr<engine::DeviceContext> open_context() override;

 private:
  std::string name_;
  engine::DeviceSpec device_;
  std::shared_future<std::shared_ptr<engine::Backend>> ready_;
};

}  // namespace qgpu::daemon
