#include "runtime.h"

#include <dlfcn.h>
#include <unistd.h>

#include <cctype>
#include <cstdio>
#include <string_view>
#include <cstring>

namespace qgpu::cudart {
namespace {

thread_local cudaError_t t_last_error = cudaSuccess;

}  // namespace

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

namespace {

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

// The kernels a module declares `.extern .entry` (defined in another module).
std::vector<std::string> extern_entries(const std::string& ptx) {
  std::vector<std::string> names;
  for (size_t at = ptx.find(".extern .entry"); at != std::string::npos; at = ptx.find(".extern .entry", at + 1)) {
    size_t b = at + 14;
    while (b < ptx.size() && std::isspace(static_cast<unsigned char>(ptx[b]))) ++b;
    size_t e = b;
    while (e < ptx.size() && (std::isalnum(static_cast<unsigned char>(ptx[e])) || ptx[e] == '_' || ptx[e] == '$')) ++e;
    if (e > b) names.push_back(ptx.substr(b, e - b));
  }
  return names;
}

// Whether a module defines kernel `name` (an .entry line that is not .extern).
bool defines_entry(const std::string& ptx, const std::string& name) {
  for (size_t start = 0; start < ptx.size();) {
    size_t end = ptx.find('\n', start);
    if (end == std::string::npos) end = ptx.size();
    std::string_view line(ptx.data() + start, end - start);
    if (line.find(".entry") != std::string_view::npos && line.find(".extern") == std::string_view::npos &&
        declares(std::string(line), ".entry", name))
      return true;
    start = end + 1;
  }
  return false;
}

}  // namespace

cudaError_t set_error(cudaError_t e) {
  if (e != cudaSuccess && e != cudaErrorNotReady) t_last_error = e;  // "not ready" is an answer, not an error
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

Runtime::Runtime() = default;

Runtime& Runtime::get() {
  // Never destroyed: programs call the runtime from their own exit handlers.
  static Runtime* rt = [] {
    auto* r = new Runtime;
    std::atexit([] {
      Runtime& rt = Runtime::get();
      // Work still queued completes first (its printf output included), then
      // the goodbye: the daemon frees this process's memory now.
      if (!Streams::on_runtime_thread()) rt.streams_.wait(rt.streams_.all_marks());
      rt.flush_printf();
      std::lock_guard<std::recursive_mutex> g(rt.mu_);
      rt.conn_ptr_ = nullptr;
      rt.conn_.reset();
    });
    return r;
  }();
  return *rt;
}

client::Connection& Runtime::conn() {
  if (client::Connection* c = conn_ptr_.load()) return *c;
  std::lock_guard<std::recursive_mutex> g(mu_);
  if (conn_) return *conn_;
  if (client::Connection* c = conn_ptr_.load()) return *c;
  if (conn_error_) throw *conn_error_;
  // One session per process, as CUDA's runtime and driver share the primary
  // context: when qgpu's libcuda.so.1 is loaded and already has a session,
  // the runtime uses it (modules loaded with cuModuleLoadData, memory from
  // either library, one device).
  using DriverSession = void* (*)();
  if (auto f = reinterpret_cast<DriverSession>(dlsym(RTLD_DEFAULT, "qgpu_driver_session")))
    if (auto* c = static_cast<client::Connection*>(f())) {
      mirrors_.set_device_file(c->device_memory_fd(), c->device().global_base, c->device().global_bytes);
      conn_ptr_ = c;
      return *c;
    }
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
  mirrors_.set_device_file(conn_->device_memory_fd(), conn_->device().global_base, conn_->device().global_bytes);
  conn_ptr_ = conn_.get();
  return *conn_;
}

bool Runtime::is_device_pointer(const void* p) {
  const proto::DeviceInfo& d = device();
  auto a = reinterpret_cast<uint64_t>(p);
  return a >= d.global_base && a < d.global_base + d.global_bytes;
}

void Runtime::make_sticky(cudaError_t e) {
  cudaError_t none = cudaSuccess;
  sticky_.compare_exchange_strong(none, e);
}

void Runtime::defer_error(cudaError_t e) {
  std::lock_guard<std::mutex> g(deferred_mu_);
  if (deferred_ == cudaSuccess) deferred_ = e;
}

void Runtime::note_allocation(uint64_t addr, uint64_t size) {
  if (addr == 0) return;
  std::lock_guard<std::mutex> g(allocations_mu_);
  allocations_[addr] = size;
}

void Runtime::note_free(uint64_t addr) {
  std::lock_guard<std::mutex> g(allocations_mu_);
  allocations_.erase(addr);
}

void Runtime::check_device_range(uint64_t addr, uint64_t n, const std::string& what) {
  auto hex = [](uint64_t v) {
    char b[24];
    std::snprintf(b, sizeof b, "0x%llx", static_cast<unsigned long long>(v));
    return std::string(b);
  };
  std::lock_guard<std::mutex> g(allocations_mu_);
  auto it = allocations_.upper_bound(addr);
  if (it != allocations_.begin()) {
    --it;
    if (addr < it->first + it->second) {
      if (n <= it->first + it->second - addr) return;
      throw client::Error(cudaErrorInvalidValue, what + ": [" + hex(addr) + ", +" + std::to_string(n) +
                                                     ") runs past the end of the allocation at " + hex(it->first) +
                                                     " of " + std::to_string(it->second) + " bytes");
    }
  }
  throw client::Error(cudaErrorInvalidValue, what + ": " + hex(addr) + " is not inside any live allocation");
}

void Runtime::add_printf(const std::string& s) {
  if (s.empty()) return;
  std::lock_guard<std::mutex> g(printf_mu_);
  pending_printf_ += s;
}

void Runtime::flush_printf() {
  std::lock_guard<std::mutex> g(printf_mu_);
  if (pending_printf_.empty()) return;
  std::fwrite(pending_printf_.data(), 1, pending_printf_.size(), stdout);
  std::fflush(stdout);
  pending_printf_.clear();
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

void Runtime::register_variable(Fatbin* fb, const void* host_var, const char* name, size_t size, void** managed_ptr) {
  std::lock_guard<std::recursive_mutex> g(mu_);
  variables_[host_var] = Variable{fb, name, size, managed_ptr};
}

Kernel* Runtime::find_kernel(const void* host_fun) {
  std::lock_guard<std::recursive_mutex> g(mu_);
  auto it = kernels_.find(host_fun);
  return it == kernels_.end() ? nullptr : it->second.get();
}

const void* Runtime::host_function(const Kernel* k) {
  std::lock_guard<std::recursive_mutex> g(mu_);
  for (auto& [f, kk] : kernels_)
    if (kk.get() == k) return f;
  return nullptr;
}

bool Runtime::is_kernel(const Kernel* k) {
  std::lock_guard<std::recursive_mutex> g(mu_);
  for (auto& [f, kk] : kernels_)
    if (kk.get() == k) return true;
  return false;
}

Module& Runtime::load(Module& m) {
  if (m.loaded) return m;
  m.image = conn().load_module(m.ptx);
  m.loaded = true;
  // A module that launches kernels from the device (dynamic parallelism,
  // -rdc=true) may launch kernels that another translation unit defines
  // (`.extern .entry`): those modules are loaded with it, for the daemon to
  // find them (docs/protocol.md, Limit and Launch).
  if (m.ptx.find("__cudaCDP2") != std::string::npos) {
    for (const std::string& name : extern_entries(m.ptx))
      for (auto& fb : fatbins_)
        for (auto& unit : fb->units)
          if (unit.get() != &m && !unit->loaded && defines_entry(unit->ptx, name)) load(*unit);
  }
  for (const auto& mv : m.image.vars) note_allocation(mv.addr, mv.size);
  // __managed__ variables: host pages at their device addresses, holding
  // what the module initialised them to; the program reads them through
  // the pointer it registered.
  for (auto& [key, v] : variables_) {
    if (!v.managed_ptr) continue;
    bool mine = false;
    for (auto& unit : v.fatbin->units) mine |= unit.get() == &m;
    if (!mine) continue;
    for (const auto& mv : m.image.vars) {
      if (mv.name != v.name) continue;
      mirrors_.add(mv.addr, nullptr, mv.size, Mirrors::ManagedVariable, 0, false);
      mirrors_.prepare(conn(), {{mv.addr, mv.size, false, false}});
      *v.managed_ptr = reinterpret_cast<void*>(mv.addr);
    }
  }
  return m;
}

void Runtime::init_module(Fatbin* fb) {
  std::lock_guard<std::recursive_mutex> g(mu_);
  if (!fb->error.empty()) throw client::Error(cudaErrorNoKernelImageForDevice, fb->error);
  for (auto& unit : fb->units) load(*unit);
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

cudaError_t Runtime::launch(Kernel* k, dim3 grid, dim3 block, void** args, size_t smem, const StreamPtr& stream,
                            bool cooperative) {
  Op op;
  cudaError_t e = make_launch(k, grid, block, args, smem, &op, cooperative);
  if (e != cudaSuccess) return e;
  streams_.enqueue(stream, std::move(op));
  return cudaSuccess;
}

cudaError_t Runtime::make_launch(Kernel* k, dim3 grid, dim3 block, void** args, size_t smem, Op* out,
                                 bool cooperative) {
  ResolvedKernel rk = resolve(*k);
  proto::LaunchArgs a;
  a.module = rk.module->image.id;
  a.kernel = k->name;
  a.grid[0] = grid.x, a.grid[1] = grid.y, a.grid[2] = grid.z;
  a.block[0] = block.x, a.block[1] = block.y, a.block[2] = block.z;
  a.dynamic_smem = uint32_t(smem);
  a.cooperative = cooperative ? 1 : 0;

  // What the daemon would refuse, refused here: the launch call itself
  // reports a configuration the machine cannot run, as CUDA's does.
  const proto::DeviceInfo& d = device();
  // The daemon's words for the same refusals: the device, what was asked,
  // its limit and the way out.
  std::string what = "launch of '" + k->name + "' on the " + d.device_name + " device: ";
  const std::string way = d.way_out.empty() ? "" : "; " + d.way_out;
  uint64_t ctas = uint64_t(grid.x) * grid.y * grid.z;
  proto::LaunchCheck shape = proto::check_launch_shape(a.grid, a.block, d, what);
  if (shape.status != 0) return fail(cudaError_t(shape.status), shape.message);
  // Beyond the default per-block size only after the kernel opted in
  // (api_launch.cpp checks cudaFuncAttributeMaxDynamicSharedMemorySize).
  if (uint64_t(rk.layout->static_smem) + smem > d.shared_optin_bytes_per_cta)
    return fail(cudaErrorInvalidValue, what + std::to_string(rk.layout->static_smem) + " static + " + std::to_string(smem) +
                                           " dynamic bytes of shared memory; it has at most " +
                                           std::to_string(d.shared_optin_bytes_per_cta) + " per block" + way);
  // A cooperative launch: every block resident at once (grid-wide sync).
  if (cooperative && d.cooperative_ctas == 0)
    return fail(cudaErrorNotSupported, what + "a cooperative launch; the device runs none (its blocks run one at a "
                                              "time; cudaDevAttrCooperativeLaunch is 0): run it with --backend interpreter");
  if (cooperative && ctas > d.cooperative_ctas)
    return fail(cudaErrorCooperativeLaunchTooLarge,
                what + "a cooperative launch of " + std::to_string(ctas) + " blocks; it keeps at most " +
                    std::to_string(d.cooperative_ctas) +
                    " resident at once (grid-wide sync needs every block of the grid resident): launch at most "
                    "cudaOccupancyMaxActiveBlocksPerMultiprocessor x cudaDevAttrMultiProcessorCount blocks");

  a.params.assign(rk.layout->param_bytes(), 0);
  for (size_t i = 0; i < rk.layout->params.size(); ++i) {
    const auto& p = rk.layout->params[i];
    if (!args || !args[i])
      throw client::Error(cudaErrorInvalidValue, "launch of '" + k->name + "': argument " + std::to_string(i) + " is missing");
    std::memcpy(a.params.data() + p.offset, args[i], p.size);
  }

  Op op;
  op.kind = Op::Device;
  op.node_type = cudaGraphNodeTypeKernel;
  op.body = [this, a = std::move(a)](double& seconds) {
    client::Connection& c = conn();
    auto held = mirrors_.prepare(c, {{0, 0, true, true}});  // the kernel may touch any of them
    proto::LaunchOutcome o = c.launch(a);
    if (held.owns_lock()) held.unlock();
    seconds += o.counters.seconds;
    add_printf(o.printf_output);
    if (o.error == cudaSuccess) return cudaSuccess;
    std::fprintf(stderr, "qgpu: kernel %s failed: %s\n", a.kernel.c_str(), o.message.c_str());
    if (is_execution_error(o.error)) make_sticky(cudaError_t(o.error));  // reported by the next synchronizing call
    return cudaError_t(o.error);
  };
  *out = std::move(op);
  return cudaSuccess;
}

cudaError_t Runtime::synchronize() {
  flush_printf();
  if (sticky() != cudaSuccess) return sticky();
  try {
    if (!mirrors_.empty()) mirrors_.prepare(conn(), {{0, 0, false, true}});
  } catch (const client::Error& e) {
    if (e.lost) make_sticky(cudaError_t(e.code));
    return fail(cudaError_t(e.code), e.what());
  }
  std::lock_guard<std::mutex> g(deferred_mu_);
  cudaError_t e = deferred_;
  deferred_ = cudaSuccess;
  return e;
}

client::Connection* Runtime::session_for_driver(bool wait) {
  client::Connection* c = conn_ptr_.load();
  if (c && wait && !Streams::on_runtime_thread()) streams_.wait(streams_.all_marks());
  return c;
}

void Runtime::reset() {
  streams_.wait(streams_.all_marks());
  flush_printf();
  std::lock_guard<std::recursive_mutex> g(mu_);
  mirrors_.clear();
  {
    std::lock_guard<std::mutex> a(allocations_mu_);
    allocations_.clear();
  }
  conn_ptr_ = nullptr;
  conn_.reset();
  conn_error_.reset();
  for (auto& fb : fatbins_)
    for (auto& m : fb->units) m->loaded = false;
  sticky_ = cudaSuccess;
  std::lock_guard<std::mutex> d(deferred_mu_);
  deferred_ = cudaSuccess;
}

cudaError_t last_error_take() {
  cudaError_t e = t_last_error;
  t_last_error = cudaSuccess;
  return e;
}
cudaError_t last_error_peek() { return t_last_error; }

}  // namespace qgpu::cudart

// The runtime's session, for qgpu's libcuda.so.1 (the driver API): found
// with dlsym, so that both libraries use one session per process.  With
// `wait`, the work queued on the runtime's streams completes first: a driver
// call is ordered after the runtime's earlier work, as on CUDA's legacy
// stream.  NULL while the runtime has no session.
extern "C" __attribute__((visibility("default"))) void* qgpu_cudart_session(int wait) {
  return qgpu::cudart::Runtime::get().session_for_driver(wait != 0);
}
