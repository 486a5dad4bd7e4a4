#include "runtime.h"

#include <unistd.h>

#include <cctype>
#include <cstdio>
#include <string_view>
#include <cstring>

namespace qgpu::cudart {
namespace {

thread_local cudaError_t t_last_error = cudaSuccess;

bool is_execution_error(int e) {
  switch (e) {
    case cudaErrorAssert:
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchFailure:
    case cudaErrorMisalignedAddress:
    case cudaErrorIllegalInstruction:
    case cudaErrorInvalidPc:
    case cudaErrorHardwareStackError:
    case cudaErrorInvalidAddressSpace:
    case cudaErrorLaunchTimeout:
      return true;
    default:
      return false;
  }
}

std::string program_name() {
  char buf[4096];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return "program";
  buf[n] = 0;
  const char* slash = std::strrchr(buf, '/');
  return slash ? slash + 1 : buf;
}

// Whether a line of `ptx` holding `keyword` names `name` as a whole token:
// how a kernel or variable is found among a registration's modules.
bool declares(const std::string& ptx, const char* keyword, const std::string& name) {
  auto ident = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '$'; };
  for (size_t start = 0; start < ptx.size();) {
    size_t end = ptx.find('\n', start);
    if (end == std::string::npos) end = ptx.size();
    std::string_view line(ptx.data() + start, end - start);
    if (line.find(keyword) != std::string_view::npos)
      for (size_t pos = line.find(name); pos != std::string_view::npos; pos = line.find(name, pos + 1)) {
        bool starts = pos == 0 || !ident(line[pos - 1]);
        bool ends = pos + name.size() == line.size() || !ident(line[pos + name.size()]);
        if (starts && ends) return true;
      }
    start = end + 1;
  }
  return false;
}

}  // namespace

cudaError_t set_error(cudaError_t e) {
  if (e != cudaSuccess) t_last_error = e;
  return e;
}

cudaError_t fail(cudaError_t e, const std::string& message) {
  // Once per distinct message: a program retrying a failing call gets one line.
  static std::mutex mu;
  static std::string last;
  {
    std::lock_guard<std::mutex> g(mu);
    if (message != last) std::fprintf(stderr, "qgpu: %s\n", message.c_str());
    last = message;
  }
  return set_error(e);
}

Runtime& Runtime::get() {
  // Never destroyed: programs call the runtime from their own exit handlers.
  static Runtime* rt = [] {
    auto* r = new Runtime;
    std::atexit([] {
      Runtime& rt = Runtime::get();
      std::lock_guard<std::recursive_mutex> g(rt.mu_);
      if (!rt.pending_printf_.empty()) {
        std::fwrite(rt.pending_printf_.data(), 1, rt.pending_printf_.size(), stdout);
        std::fflush(stdout);
      }
      rt.conn_.reset();  // says goodbye: the daemon frees this process's memory now
    });
    return r;
  }();
  return *rt;
}

client::Connection& Runtime::conn() {
  std::lock_guard<std::recursive_mutex> g(mu_);
  if (conn_) return *conn_;
  if (conn_error_) throw *conn_error_;
  try {
    client::Options o;
    o.program = program_name();
    conn_ = client::Connection::open(o);
  } catch (const client::Error& e) {
    conn_error_ = std::make_unique<client::Error>(cudaErrorNoDevice, e.what());
    throw *conn_error_;
  } catch (const std::exception& e) {
    conn_error_ = std::make_unique<client::Error>(cudaErrorNoDevice, e.what());
    throw *conn_error_;
  }
  return *conn_;
}

bool Runtime::is_device_pointer(const void* p) {
  const proto::DeviceInfo& d = device();
  auto a = reinterpret_cast<uint64_t>(p);
  return a >= d.global_base && a < d.global_base + d.global_bytes;
}

void Runtime::make_sticky(cudaError_t e) {
  std::lock_guard<std::recursive_mutex> g(mu_);
  if (sticky_ == cudaSuccess) sticky_ = e;
}

Fatbin* Runtime::register_fatbin(const void* wrapper) {
  auto fb = std::make_unique<Fatbin>();
  try {
    fatbin::Wrapper w = fatbin::parse_wrapper(wrapper);
    for (const fatbin::Fatbin& unit : w.units) {
      const fatbin::Entry* e = unit.best_ptx(kMajor * 10 + kMinor);
      if (!e) continue;
      auto m = std::make_unique<Module>();
      m->ptx = e->payload;
      m->ptx_version = int(e->arch);
      fb->units.push_back(std::move(m));
    }
    if (fb->units.empty()) {
      std::string archs;
      for (const fatbin::Fatbin& unit : w.units)
        for (const fatbin::Entry& e : unit.entries) archs += " sm_" + std::to_string(e.arch);
      fb->error = program_name() + " carries no PTX (only machine code for" + (archs.empty() ? " nothing" : archs) +
                  "); qgpu runs PTX: rebuild with -arch=sm_75 (or -gencode arch=compute_75,code=compute_75)";
    }
  } catch (const fatbin::FatbinError& e) {
    fb->error = "the fatbinary of " + program_name() + " is unreadable: " + e.what();
  }
  std::lock_guard<std::recursive_mutex> g(mu_);
  fatbins_.push_back(std::move(fb));
  return fatbins_.back().get();
}

void Runtime::unregister_fatbin(Fatbin* fb) {
  std::lock_guard<std::recursive_mutex> g(mu_);
  for (auto it = kernels_.begin(); it != kernels_.end();)
    it = it->second->fatbin == fb ? kernels_.erase(it) : std::next(it);
  for (auto it = variables_.begin(); it != variables_.end();)
    it = it->second.fatbin == fb ? variables_.erase(it) : std::next(it);
  std::erase_if(fatbins_, [fb](const std::unique_ptr<Fatbin>& f) { return f.get() == fb; });
}

void Runtime::register_kernel(Fatbin* fb, const void* host_fun, const char* name) {
  std::lock_guard<std::recursive_mutex> g(mu_);
  auto k = std::make_unique<Kernel>();
  k->fatbin = fb;
  k->name = name;
  kernels_[host_fun] = std::move(k);
}

void Runtime::register_variable(Fatbin* fb, const void* host_var, const char* name, size_t size) {
  std::lock_guard<std::recursive_mutex> g(mu_);
  variables_[host_var] = Variable{fb, name, size};
}

Kernel* Runtime::find_kernel(const void* host_fun) {
  std::lock_guard<std::recursive_mutex> g(mu_);
  auto it = kernels_.find(host_fun);
  return it == kernels_.end() ? nullptr : it->second.get();
}

bool Runtime::is_kernel(const Kernel* k) {
  std::lock_guard<std::recursive_mutex> g(mu_);
  for (auto& [f, kk] : kernels_)
    if (kk.get() == k) return true;
  return false;
}

Module& Runtime::load(Module& m) {
  if (!m.loaded) {
    m.image = conn().load_module(m.ptx);
    m.loaded = true;
  }
  return m;
}

ResolvedKernel Runtime::resolve(Kernel& k) {
  std::lock_guard<std::recursive_mutex> g(mu_);
  if (!k.fatbin->error.empty()) throw client::Error(cudaErrorNoKernelImageForDevice, k.fatbin->error);
  for (auto& unit : k.fatbin->units) {
    if (!declares(unit->ptx, ".entry", k.name)) continue;
    Module& m = load(*unit);
    for (const proto::KernelLayout& l : m.image.kernels)
      if (l.name == k.name) return {&m, &l};
  }
  throw client::Error(cudaErrorInvalidDeviceFunction, "kernel '" + k.name + "' is not in the PTX of " + program_name());
}

std::pair<uint64_t, size_t> Runtime::symbol(const void* host_var) {
  std::lock_guard<std::recursive_mutex> g(mu_);
  auto it = variables_.find(host_var);
  if (it == variables_.end())
    throw client::Error(cudaErrorInvalidSymbol, "the address passed as a symbol is not a registered __device__ or __constant__ variable");
  Variable& v = it->second;
  if (!v.fatbin->error.empty()) throw client::Error(cudaErrorNoKernelImageForDevice, v.fatbin->error);
  for (auto& unit : v.fatbin->units) {
    if (!declares(unit->ptx, ".global", v.name) && !declares(unit->ptx, ".const", v.name)) continue;
    Module& m = load(*unit);
    for (const auto& mv : m.image.vars)
      if (mv.name == v.name) return {mv.addr, v.size};
  }
  throw client::Error(cudaErrorInvalidSymbol, "variable '" + v.name + "' is not in the PTX of " + program_name());
}

cudaError_t Runtime::launch(Kernel* k, dim3 grid, dim3 block, void** args, size_t smem) {
  ResolvedKernel rk = resolve(*k);
  proto::LaunchArgs a;
  a.module = rk.module->image.id;
  a.kernel = k->name;
  a.grid[0] = grid.x, a.grid[1] = grid.y, a.grid[2] = grid.z;
  a.block[0] = block.x, a.block[1] = block.y, a.block[2] = block.z;
  a.dynamic_smem = uint32_t(smem);
  a.params.assign(rk.layout->param_bytes(), 0);
  for (size_t i = 0; i < rk.layout->params.size(); ++i) {
    const auto& p = rk.layout->params[i];
    if (!args || !args[i])
      throw client::Error(cudaErrorInvalidValue, "launch of '" + k->name + "': argument " + std::to_string(i) + " is missing");
    std::memcpy(a.params.data() + p.offset, args[i], p.size);
  }
  proto::LaunchOutcome o = conn().launch(a);
  std::lock_guard<std::recursive_mutex> g(mu_);
  pending_printf_ += o.printf_output;
  if (o.error == cudaSuccess) return cudaSuccess;
  std::fprintf(stderr, "qgpu: kernel %s failed: %s\n", k->name.c_str(), o.message.c_str());
  if (is_execution_error(o.error)) {
    make_sticky(cudaError_t(o.error));  // reported by the next synchronizing call, as CUDA does
    return cudaSuccess;
  }
  return cudaError_t(o.error);
}

cudaError_t Runtime::synchronize() {
  std::lock_guard<std::recursive_mutex> g(mu_);
  if (!pending_printf_.empty()) {
    std::fwrite(pending_printf_.data(), 1, pending_printf_.size(), stdout);
    std::fflush(stdout);
    pending_printf_.clear();
  }
  return sticky_;
}

void Runtime::reset() {
  std::lock_guard<std::recursive_mutex> g(mu_);
  synchronize();
  conn_.reset();
  conn_error_.reset();
  for (auto& fb : fatbins_)
    for (auto& m : fb->units) m->loaded = false;
  sticky_ = cudaSuccess;
}

cudaError_t last_error_take() {
  cudaError_t e = t_last_error;
  t_last_error = cudaSuccess;
  return e;
}
cudaError_t last_error_peek() { return t_last_error; }

}  // namespace qgpu::cudart
