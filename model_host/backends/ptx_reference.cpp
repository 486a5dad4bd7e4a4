// The "ptx-reference" backend: runs kernels directly on their PTX with the
// PTX-level interpreter, with CUDA's 32-thread warps and no lowering.  It is a
// cross-check for the machine (tests run every sample on it and on the
// machine interpreter and compare the outputs), never a product path: the
// daemon uses it only when asked for it by name.
#include <functional>
#include <mutex>
#include <unordered_map>

#include "model_host/backends/registry.h"
#include "model_host/machine/api.h"
#include "model_host/ptx/parse.h"
#include "model_host/ptx/ptx_interp.h"

namespace qgpu::backends {
namespace {

class PtxReferenceBackend : public Backend {
 public:
  explicit PtxReferenceBackend(uint64_t device_memory) : device_(machine::interpreter_device(device_memory)) {
    device_.name = "qgpu (ptx-reference)";
    device_.cooperative_ctas = 1;  // the PTX-level interpreter runs one block at a time
  }
  std::string name() const override { return "ptx-reference"; }
  DeviceSpec device() const override { return device_; }

  LaunchResult launch(const LaunchRequest& req, GlobalMemory& mem) override {
    LaunchResult r;
    const ptx::Module* module = nullptr;
    try {
      module = &parsed(req.ptx);
    } catch (const std::exception& e) {
      r.error = 218;  // cudaErrorInvalidPtx
      r.message = e.what();
      return r;
    }
    ptx::InterpOptions opt;
    opt.grid_workspace = req.grid_workspace;
    return ptx::run(*module, req.kernel, req.grid, req.block, req.dynamic_smem, req.params, req.symbols, mem, opt);
  }

 private:
  const ptx::Module& parsed(const std::string& text) {
    std::lock_guard<std::mutex> lock(mu_);
    size_t key = std::hash<std::string>{}(text);
    auto it = cache_.find(key);
    if (it == cache_.end() || it->second.first != text)
      it = cache_.insert_or_assign(key, std::make_pair(text, ptx::parse(text))).first;
    return it->second.second;
  }

  DeviceSpec device_;
  std::mutex mu_;
  std::unordered_map<size_t, std::pair<std::string, ptx::Module>> cache_;
};

}  // namespace

std::unique_ptr<Backend> make_ptx_reference_backend(uint64_t device_memory) {
  return std::make_unique<PtxReferenceBackend>(device_memory);
}

}  // namespace qgpu::backends
