// A backend created on a background thread, so that model_host answers
// clients at once while the model loads (or, on first use, is built); each
// launch waits until the backend is ready.  A backend that could not be
// created fails every launch with cudaErrorInitializationError and the reason.
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
  // `concurrent`: what the backend the factory makes will say.
  DeferredBackend(std::string name, Factory make, bool concurrent = false);
  ~DeferredBackend() override;  // waits for the factory to return

  std::string name() const override { return name_; }
  engine::LaunchResult launch(const engine::LaunchRequest& req, engine::GlobalMemory& mem) override;
  bool concurrent() const override { return concurrent_; }

 private:
  std::string name_;
  bool concurrent_;
  std::shared_future<std::shared_ptr<engine::Backend>> ready_;
};

}  // namespace qgpu::daemon
