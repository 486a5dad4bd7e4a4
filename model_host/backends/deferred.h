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

#include "model_host/launch/launch.h"

namespace qgpu::backends {

class DeferredBackend : public launch::Backend {
 public:
  using Factory = std::function<std::unique_ptr<launch::Backend>()>;
  // `device` is the device the backend will run, reported before it is ready;
  // `concurrent`, what the backend will say.
  DeferredBackend(std::string name, launch::DeviceSpec device, Factory make, bool concurrent = false);
  ~DeferredBackend() override;  // waits for the factory to return

  std::string name() const override { return name_; }
  launch::DeviceSpec device() const override { return device_; }
  launch::LaunchResult launch(const launch::LaunchRequest& req, launch::GlobalMemory& mem) override;
  // A context that opens the backend's own on first use (waiting for the
  // backend then); the backend must keep its clients' memory (the model).
  std::unique_ptr<launch::DeviceContext> open_context() override;
  bool concurrent() const override { return concurrent_; }

 private:
  std::string name_;
  launch::DeviceSpec device_;
  bool concurrent_;
  std::shared_future<std::shared_ptr<launch::Backend>> ready_;
};

}  // namespace qgpu::backends
