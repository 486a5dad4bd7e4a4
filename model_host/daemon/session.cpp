#include "model_host/daemon/session.h"

#include <driver_types.h>

#include <algorithm>
#include <chrono>
#include <cctype>
#include <cstring>

#include "model_host/daemon/log.h"
#include "model_host/launch/module.h"
#include "model_host/machine/api.h"

namespace qgpu::daemon {
namespace {

// A cooperative launch's grid workspace: cooperative groups' grid.sync()
// counts arrivals in its second word.
constexpr uint64_t kGridWorkspaceBytes = 16;

std::string hex(uint64_t v) {
  char b[24];
  std::snprintf(b, sizeof b, "0x%llx", static_cast<unsigned long long>(v));
  return b;
}

bool launches_kernels(const std::string& ptx);

// Whether a module declares device malloc (`.extern .func (...) malloc`):
// launching one of its kernels fixes the device heap, as on a GPU.
bool calls_malloc(const std::string& ptx) {
  for (size_t at = ptx.find("malloc"); at != std::string::npos; at = ptx.find("malloc", at + 1)) {
    const size_t line = ptx.rfind('\n', at) + 1;
    const size_t end = ptx.find('\n', at);
    const std::string text = ptx.substr(line, end == std::string::npos ? std::string::npos : end - line);
    const bool word = (at == 0 || !(std::isalnum((unsigned char)ptx[at - 1]) || ptx[at - 1] == '_')) &&
                      (at + 6 >= ptx.size() || !(std::isalnum((unsigned char)ptx[at + 6]) || ptx[at + 6] == '_'));
    if (word && text.find(".func") != std::string::npos) return true;
  }
  return launches_kernels(ptx);
}

// The device runtime's functions qgpu defines for the modules that declare
// them (as CUDA links its device runtime library into them):
// cudaGraphSetConditional(handle, value) stores the 32-bit value at the
// handle, which the runtime makes the device address of the condition
// (cudaGraphConditionalHandleCreate).  The declaration
//   .extern .func cudaGraphSetConditional(.param .b64 A, .param .b32 B);
// becomes that definition, with the same parameter names.
void define_device_runtime(std::string& ptx) {
  static const std::string kName = "cudaGraphSetConditional";
  for (size_t at = ptx.find(".extern"); at != std::string::npos; at = ptx.find(".extern", at + 1)) {
    const size_t end = ptx.find(';', at);
    if (end == std::string::npos) return;
    std::string decl = ptx.substr(at, end + 1 - at);
    std::string words;  // the declaration with blanks squeezed out
    for (char c : decl)
      if (!std::isspace(static_cast<unsigned char>(c))) words += c;
    const std::string head = ".extern.func" + kName + "(.param.b64";
    if (words.compare(0, head.size(), head) != 0) continue;
    const size_t comma = words.find(",.param.b32", head.size());
    const size_t close = words.find(')', head.size());
    if (comma == std::string::npos || close == std::string::npos || comma > close) continue;
    const std::string a = words.substr(head.size(), comma - head.size());
    const std::string b = words.substr(comma + 11, close - comma - 11);
    const std::string def = ".func " + kName + "(.param .b64 " + a + ", .param .b32 " + b +
                            ")\n{\n\t.reg .b32 %r<2>;\n\t.reg .b64 %rd<2>;\n\tld.param.u64 %rd1, [" + a +
                            "];\n\tld.param.u32 %r1, [" + b + "];\n\tst.global.u32 [%rd1], %r1;\n\tret;\n}";
    ptx.replace(at, end + 1 - at, def);
    return;
  }
}

// Whether a module calls the CUDA device runtime (dynamic parallelism):
// its launch queue lives in the device heap.
bool launches_kernels(const std::string& ptx) { return ptx.find(".func") != std::string::npos && ptx.find("__cudaCDP2") != std::string::npos; }

}  // namespace

Reply Reply::error(int32_t status, const std::string& message) {
  Reply r;
  r.status = status;
  r.body.str(message);
  return r;
}

void Device::describe(launch::Backend* b) {
  backend = b;
  spec = b->device();
  proto::DeviceInfo& d = info;
  d.backend = b->name();
  d.device_name = spec.name;
  d.lanes = spec.lanes;
  d.warp_size = spec.warp_size;
  d.registers = spec.registers;
  d.register_file = spec.register_file;
  d.rom_blocks = spec.rom_blocks;
  d.global_base = spec.global_base;
  d.global_bytes = spec.global_bytes;
  d.shared_bytes_per_cta = spec.shared_bytes_per_cta;
  d.shared_optin_bytes_per_cta = spec.shared_optin_bytes_per_cta;
  d.max_threads_per_cta = spec.max_threads_per_cta;
  d.max_ctas_per_grid = spec.max_ctas_per_grid;
  for (int i = 0; i < 3; ++i) {
    d.max_grid[i] = spec.max_grid[i];
    d.max_block[i] = spec.max_block[i];
  }
  d.param_bytes = spec.param_bytes;
  d.const_bytes = spec.const_bytes;
  d.local_bytes_per_thread = spec.local_bytes_per_thread;
  d.printf_fifo_bytes = spec.printf_fifo_bytes;
  d.heap_bytes = spec.heap_bytes;
  d.cooperative_ctas = spec.cooperative_ctas;
  d.l2_bytes = spec.l2_bytes;
  d.persisting_l2_max_bytes = spec.persisting_l2_max_bytes;
  d.access_policy_max_window_bytes = spec.access_policy_max_window_bytes;
  d.clock_khz = spec.clock_khz;
  d.limits_settable = spec.limits_settable ? 1 : 0;
  d.way_out = spec.larger;
}

Session::Session(uint64_t id, Device& device, std::string client)
    : id_(id),
      device_(device),
      client_(std::move(client)),
      alloc_(device.spec.global_base, device.spec.global_bytes) {
  mem_.base = device.spec.global_base;
  ctx_ = device.backend->open_context();
  if (!ctx_) mem_.bytes = launch::DeviceBytes(device.spec.global_bytes);  // mapped lazily: untouched pages cost nothing
  reset_limits();
}

int Session::share_memory() {
  if (ctx_) return -1;
  if (mem_.bytes.fd() >= 0) return mem_.bytes.fd();
  launch::DeviceBytes shared;
  try {
    shared = launch::DeviceBytes::shared(mem_.bytes.size());
  } catch (const std::bad_alloc&) {
    return -1;
  }
  // Only the pages written so far hold anything (usually none: the client
  // attaches before its first allocation).
  if (mem_.bytes.resident_bytes()) std::memcpy(shared.data(), mem_.bytes.data(), mem_.bytes.size());
  mem_.bytes = std::move(shared);
  return mem_.bytes.fd();
}

void Session::put(uint64_t addr, const uint8_t* data, uint64_t size) {
  if (size == 0) return;
  if (ctx_)
    ctx_->write(addr - mem_.base, data, size);
  else
    std::memcpy(at(addr), data, size);
}

void Session::get(uint64_t addr, uint8_t* out, uint64_t size) {
  if (size == 0) return;
  if (ctx_)
    ctx_->read(addr - mem_.base, out, size);
  else
    std::memcpy(out, at(addr), size);
}

void Session::reset_limits() {
  printf_fifo_ = device_.spec.printf_fifo_bytes;
  pending_launches_ = launch::device_queue::kDefaultPending;
  heap_bytes_ = 0;
  heap_used_ = false;
  if (device_.spec.heap_bytes && !place_heap(device_.spec.heap_bytes)) heap_bytes_ = 0;
}

bool Session::place_heap(uint64_t bytes) {
  const uint64_t end = mem_.base + device_.spec.global_bytes;
  if (heap_bytes_) alloc_.release(heap_base());
  const uint64_t old = heap_bytes_;
  heap_bytes_ = 0;
  if (bytes == 0) return true;
  uint64_t rounded = (bytes + Allocator::kAlign - 1) / Allocator::kAlign * Allocator::kAlign;
  if (rounded < device_.spec.global_bytes && alloc_.allocate_at(end - rounded, rounded)) {
    heap_bytes_ = rounded;
    return true;
  }
  if (old && alloc_.allocate_at(end - old, old)) heap_bytes_ = old;
  return false;
}

void Session::release_all() {
  alloc_.clear();
  modules_.clear();
  scratch_.clear();
  scratch_.shrink_to_fit();
  if (!ctx_) mem_.bytes.zero();  // gives the pages back: no memset of the whole device
  if (ctx_) ctx_ = device_.backend->open_context();  // a new, all-zero memory
  reset_limits();
}

namespace {

// A read's bytes: into the shared chunk when there is one, else a reply frame.
Reply read_reply(const uint8_t* src, uint64_t size, const Bulk& bulk) {
  Reply out;
  if (!bulk.out) {
    out.bulk.emplace(src, size);
  } else if (size > bulk.out_size) {
    return Reply::error(cudaErrorInvalidValue, "model_host: a read of " + std::to_string(size) +
                                                   " bytes does not fit the shared chunk of " + std::to_string(bulk.out_size));
  } else {
    std::memcpy(bulk.out, src, size);
    out.bulk_out = size;
  }
  return out;
}

}  // namespace

Reply Session::serve(proto::Type type, proto::Reader& r, const Bulk& bulk) {
  using proto::Type;
  try {
    switch (type) {
      case Type::Malloc: return malloc(r);
      case Type::Free: return free(r);
      case Type::Write: return write(r, bulk);
      case Type::Read: return read(r, bulk);
      case Type::Copy: return copy(r);
      case Type::Memset: return memset(r);
      case Type::MemInfo: return mem_info(r);
      case Type::ModuleLoad: return module_load(r);
      case Type::ModuleUnload: return module_unload(r);
      case Type::Launch: return launch(r);
      case Type::ScratchWrite: return scratch_write(r, bulk);
      case Type::ScratchRead: return scratch_read(r, bulk);
      case Type::Stats: return stats(r);
      case Type::Progress: return progress(r);
      case Type::Limit: return limit(r);
      default:
        return Reply::error(cudaErrorInvalidValue,
                            std::string("model_host: ") + proto::type_name(type) + " is not a session request");
    }
  } catch (const proto::ProtocolError& e) {
    return Reply::error(cudaErrorInvalidValue, std::string("model_host: malformed ") + proto::type_name(type) +
                                                   " request: " + e.what());
  } catch (const std::exception& e) {  // the backend's device memory (DeviceContext) failed
    return Reply::error(cudaErrorUnknown, std::string("model_host: ") + proto::type_name(type) + ": " + e.what());
  }
}

Reply Session::malloc(proto::Reader& r) {
  uint64_t size = r.u64("size");
  r.finish("Malloc");
  Reply out;
  if (size == 0) {
    out.body.u64(0);
    return out;
  }
  auto addr = alloc_.allocate(size);
  if (!addr) {
    const launch::DeviceSpec& d = device_.spec;
    std::string heap = heap_bytes_ ? " (" + std::to_string(heap_bytes_) + " of them the device heap)" : "";
    return Reply::error(cudaErrorMemoryAllocation,
                        "cudaMalloc(" + std::to_string(size) + "): the " + d.name + " device's global memory is " +
                            std::to_string(alloc_.size()) + " bytes" + heap + "; " +
                            std::to_string(alloc_.size() - alloc_.used()) + " are free, the largest free range is " +
                            std::to_string(alloc_.largest_free()) + " bytes" +
                            (d.more_memory.empty() ? std::string() : "; " + d.more_memory));
  }
  out.body.u64(*addr);
  return out;
}

Reply Session::free(proto::Reader& r) {
  uint64_t addr = r.u64("addr");
  r.finish("Free");
  if (addr != 0 && heap_bytes_ && addr == heap_base())
    return Reply::error(cudaErrorInvalidValue, "cudaFree(" + hex(addr) + "): the device heap, not an allocation");
  if (addr != 0 && !alloc_.release(addr))
    return Reply::error(cudaErrorInvalidValue, "cudaFree(" + hex(addr) + "): not the start of a live allocation");
  return {};
}

Reply Session::write(proto::Reader& r, const Bulk& bulk) {
  uint64_t addr = r.u64("addr");
  r.finish("Write");
  if (!bulk.in) return Reply::error(cudaErrorInvalidValue, "model_host: Write without a bulk frame");
  std::string bad = alloc_.check_range(addr, bulk.in_size);
  if (!bad.empty()) return Reply::error(cudaErrorInvalidValue, "copy to device: " + bad);
  put(addr, static_cast<const uint8_t*>(bulk.in), bulk.in_size);
  return {};
}

Reply Session::read(proto::Reader& r, const Bulk& bulk) {
  uint64_t addr = r.u64("addr"), size = r.u64("size");
  r.finish("Read");
  if (size > proto::kMaxBulk)
    return Reply::error(cudaErrorInvalidValue, "model_host: Read of " + std::to_string(size) + " bytes exceeds the " +
                                                   std::to_string(proto::kMaxBulk) + "-byte chunk limit");
  std::string bad = alloc_.check_range(addr, size);
  if (!bad.empty()) return Reply::error(cudaErrorInvalidValue, "copy from device: " + bad);
  if (ctx_) {
    std::vector<uint8_t> bytes(size);
    get(addr, bytes.data(), size);
    return read_reply(bytes.data(), size, bulk);
  }
  return read_reply(at(addr), size, bulk);
}

Reply Session::copy(proto::Reader& r) {
  uint64_t dst = r.u64("dst"), src = r.u64("src"), size = r.u64("size");
  r.finish("Copy");
  for (auto [addr, what] : {std::pair{dst, "destination"}, std::pair{src, "source"}}) {
    std::string bad = alloc_.check_range(addr, size);
    if (!bad.empty()) return Reply::error(cudaErrorInvalidValue, std::string("device copy ") + what + ": " + bad);
  }
  std::vector<uint8_t> bytes(size);
  get(src, bytes.data(), size);
  put(dst, bytes.data(), size);
  return {};
}

Reply Session::memset(proto::Reader& r) {
  uint64_t addr = r.u64("addr");
  uint32_t value = r.u32("value");
  uint64_t size = r.u64("size");
  r.finish("Memset");
  std::string bad = alloc_.check_range(addr, size);
  if (!bad.empty()) return Reply::error(cudaErrorInvalidValue, "cudaMemset: " + bad);
  const std::vector<uint8_t> bytes(size, uint8_t(value & 0xff));
  put(addr, bytes.data(), size);
  return {};
}

Reply Session::mem_info(proto::Reader& r) {
  r.finish("MemInfo");
  Reply out;
  out.body.u64(alloc_.size() - alloc_.used()).u64(alloc_.size());
  return out;
}

Reply Session::module_load(proto::Reader& r) {
  std::string ptx = r.str("ptx");
  r.finish("ModuleLoad");
  define_device_runtime(ptx);
  Module m;
  try {
    m.info = machine::inspect_module(ptx);
  } catch (const std::exception& e) {
    return Reply::error(cudaErrorInvalidPtx, std::string("the PTX module does not parse: ") + e.what());
  }
  // __constant__ variables: at most the device's constant bank.
  const uint64_t const_total = launch::constant_bytes(m.info);
  if (const_total > device_.spec.const_bytes)
    return Reply::error(cudaErrorInvalidPtx, "the module's __constant__ variables take " + std::to_string(const_total) +
                                                 " bytes; the " + device_.spec.name + " device has " +
                                                 std::to_string(device_.spec.const_bytes) +
                                                 (device_.spec.larger.empty() ? "" : "; " + device_.spec.larger));
  // Module variables live in the client's global memory, initialised now.
  launch::ModuleMemory memory;
  memory.allocate = [&](uint64_t size, uint32_t align) { return alloc_.allocate(size, align); };
  memory.release = [&](uint64_t addr) { alloc_.release(addr); };
  memory.write = [&](uint64_t addr, const uint8_t* bytes, uint64_t size) { put(addr, bytes, size); };
  memory.out_of_memory_hint = "the " + device_.spec.name + " device's global memory is " +
                              std::to_string(alloc_.size()) + " bytes (" + std::to_string(alloc_.largest_free()) +
                              " free in one range)" +
                              (device_.spec.more_memory.empty() ? "" : "; " + device_.spec.more_memory);
  launch::PlacedModule placed = launch::place_module(m.info, memory);
  if (!placed) return Reply::error(placed.error, placed.message);
  m.symbols = std::move(placed.symbols);
  proto::ModuleImage img;
  img.id = next_module_++;
  for (const launch::ModuleVar& v : m.info.vars) img.vars.push_back({v.name, m.symbols[v.name], v.size});
  for (const launch::KernelInfo& k : m.info.kernels) {
    proto::KernelLayout kl;
    kl.name = k.name;
    kl.static_smem = k.static_smem;
    for (const launch::KernelParam& p : k.params) kl.params.push_back({p.offset, p.size, p.align});
    img.kernels.push_back(std::move(kl));
  }
  m.calls_malloc = calls_malloc(ptx);
  m.launches_kernels = launches_kernels(ptx);
  m.ptx = std::move(ptx);
  modules_[img.id] = std::move(m);
  log("session ", hex(id_), " (", client_, "): loaded module ", img.id, " with ", img.kernels.size(), " kernels, ",
      img.vars.size(), " variables");
  Reply out;
  proto::encode(out.body, img);
  return out;
}

Reply Session::module_unload(proto::Reader& r) {
  uint32_t id = r.u32("module");
  r.finish("ModuleUnload");
  auto it = modules_.find(id);
  if (it == modules_.end()) return Reply::error(cudaErrorInvalidResourceHandle, "no module " + std::to_string(id));
  for (auto& [name, addr] : it->second.symbols) alloc_.release(addr);
  modules_.erase(it);
  return {};
}

Reply Session::launch(proto::Reader& r) {
  proto::LaunchArgs a = proto::decode_launch_args(r);
  r.finish("Launch");
  auto mit = modules_.find(a.module);
  if (mit == modules_.end()) return Reply::error(cudaErrorInvalidResourceHandle, "no module " + std::to_string(a.module));
  const Module& m = mit->second;
  auto kit = std::find_if(m.info.kernels.begin(), m.info.kernels.end(),
                          [&](const launch::KernelInfo& k) { return k.name == a.kernel; });
  if (kit == m.info.kernels.end())
    return Reply::error(cudaErrorInvalidDeviceFunction, "module " + std::to_string(a.module) + " has no kernel '" + a.kernel + "'");
  uint32_t want = 0;
  for (const launch::KernelParam& p : kit->params) want = std::max(want, p.offset + p.size);
  if (a.params.size() != want)
    return Reply::error(cudaErrorInvalidValue, "kernel '" + a.kernel + "' takes " + std::to_string(want) +
                                                   " bytes of parameters; the launch passed " + std::to_string(a.params.size()));
  const launch::DeviceSpec& d = device_.spec;
  uint64_t threads = uint64_t(a.block[0]) * a.block[1] * a.block[2];
  uint64_t ctas = uint64_t(a.grid[0]) * a.grid[1] * a.grid[2];
  // A launch beyond the device: what it asked, the device's limit, and the
  // way out when a larger device exists (device_.info carries the spec's
  // limits, name and `larger`).
  const std::string who = "launch of '" + a.kernel + "' on the " + d.name + " device: ";
  const std::string way = d.larger.empty() ? "" : "; " + d.larger;
  proto::LaunchCheck shape = proto::check_launch_shape(a.grid, a.block, device_.info, who);
  if (shape.status != 0) return Reply::error(shape.status, shape.message);
  if (uint64_t(kit->static_smem) + a.dynamic_smem > d.shared_optin_bytes_per_cta ||
      kit->static_smem > d.shared_bytes_per_cta)
    return Reply::error(cudaErrorInvalidValue,
                        who + std::to_string(kit->static_smem) + " static + " + std::to_string(a.dynamic_smem) +
                            " dynamic bytes of shared memory; it has " + std::to_string(d.shared_bytes_per_cta) +
                            " per block" +
                            (d.shared_optin_bytes_per_cta > d.shared_bytes_per_cta
                                 ? " (" + std::to_string(d.shared_optin_bytes_per_cta) +
                                       " after cudaFuncSetAttribute(cudaFuncAttributeMaxDynamicSharedMemorySize))"
                                 : "") +
                            way);
  if (a.params.size() > d.param_bytes)
    return Reply::error(cudaErrorInvalidValue, who + std::to_string(a.params.size()) +
                                                   " bytes of kernel parameters; it takes at most " +
                                                   std::to_string(d.param_bytes) + way);
  // A cooperative launch needs every CTA resident at once (grid-wide sync):
  // at most the device's cooperative_ctas, and a zeroed grid workspace for
  // cooperative groups' arrival counter, released when the launch ends.
  if (a.cooperative && d.cooperative_ctas == 0)
    return Reply::error(cudaErrorNotSupported, who + "a cooperative launch; the " + d.name +
                                                   " device runs none (its blocks run one at a time, never all "
                                                   "resident; cudaDevAttrCooperativeLaunch is 0): run it with "
                                                   "--backend interpreter");
  if (a.cooperative && ctas > d.cooperative_ctas)
    return Reply::error(cudaErrorCooperativeLaunchTooLarge,
                        who + "a cooperative launch of " + std::to_string(ctas) + " blocks; it keeps at most " +
                            std::to_string(d.cooperative_ctas) +
                            " resident at once (grid-wide sync needs every block of the grid resident): launch at most "
                            "cudaOccupancyMaxActiveBlocksPerMultiprocessor x cudaDevAttrMultiProcessorCount blocks");
  struct Workspace {
    Allocator& alloc;
    uint64_t addr = 0;
    ~Workspace() {
      if (addr) alloc.release(addr);
    }
  } workspace{alloc_};
  if (a.cooperative) {
    auto w = alloc_.allocate(kGridWorkspaceBytes);
    if (!w) return Reply::error(cudaErrorMemoryAllocation, who + "no global memory left for the cooperative launch's " +
                                                             std::to_string(kGridWorkspaceBytes) + "-byte grid workspace");
    workspace.addr = *w;
    const std::vector<uint8_t> zeros(kGridWorkspaceBytes, 0);
    put(*w, zeros.data(), zeros.size());
  }

  launch::LaunchRequest req;
  req.grid_workspace = workspace.addr;
  req.ptx = m.ptx;
  req.kernel = a.kernel;
  req.grid = {a.grid[0], a.grid[1], a.grid[2]};
  req.block = {a.block[0], a.block[1], a.block[2]};
  req.dynamic_smem = a.dynamic_smem;
  req.params = std::move(a.params);
  req.symbols = m.symbols;
  req.printf_fifo_bytes = printf_fifo_;
  req.heap_base = heap_base();
  req.heap_bytes = heap_bytes_;
  heap_used_ |= m.calls_malloc;
  req.pending_launch_limit = uint32_t(pending_launches_);
  if (m.launches_kernels)
    for (const auto& [id, other] : modules_)
      if (id != a.module) req.peers.push_back({other.ptx, other.symbols});

  launch::LaunchResult res;
  auto start = std::chrono::steady_clock::now();
  {
    // One launch at a time, unless the backend runs them concurrently (each
    // session's own launches are in order anyway: one worker per session).
    std::unique_lock<std::mutex> g(device_.run_mutex, std::defer_lock);
    if (!device_.backend->concurrent()) g.lock();
    progress_.generated_tokens = 0;
    progress_.cta = 0;
    {
      std::lock_guard<std::mutex> s(device_.stats_mutex);
      Device::Running& run = device_.running[id_];
      run.info.running = 1;
      run.info.launch = ++device_.launches_started;
      run.info.kernel = a.kernel;
      run.info.ctas = ctas;
      run.since = std::chrono::steady_clock::now();
      run.live = &progress_;
      device_.progress_version += 1;
      device_.progress_cv.notify_all();
    }
    req.progress = &progress_;
    try {
      res = ctx_ ? ctx_->launch(req) : device_.backend->launch(req, mem_);
    } catch (const std::exception& e) {
      res.error = cudaErrorUnknown;
      res.message = std::string("the ") + device_.backend->name() + " backend failed: " + e.what();
    }
    std::unique_lock<std::mutex> s(device_.stats_mutex);
    device_.running.erase(id_);
    device_.progress_version += 1;
    device_.progress_cv.notify_all();
    auto now = std::chrono::steady_clock::now();
    if (device_.line_shown && now - device_.watcher_seen < std::chrono::seconds(1))
      device_.progress_cv.wait_for(s, std::chrono::milliseconds(250), [&] { return !device_.line_shown; });
  }
  // The backend's own time when it reports one: it leaves out waiting for
  // the device and for a model that is still loading.
  double secs = res.stats.seconds > 0 ? res.stats.seconds
                                      : std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!ctx_ && mem_.bytes.size() != device_.spec.global_bytes) {
    res.error = cudaErrorUnknown;
    res.message = "the backend resized the global memory image";
    mem_.bytes.resize(device_.spec.global_bytes);
  }

  proto::LaunchOutcome o;
  o.error = res.error;
  o.message = res.message;
  o.printf_output = std::move(res.printf_output);
  o.counters = {1, res.stats.steps, res.stats.prompt_tokens, res.stats.generated_tokens, secs};
  {
    std::lock_guard<std::mutex> g(device_.stats_mutex);
    auto& t = device_.totals;
    t.launches += 1;
    t.steps += o.counters.steps;
    t.prompt_tokens += o.counters.prompt_tokens;
    t.generated_tokens += o.counters.generated_tokens;
    t.seconds += secs;
  }
  log("session ", hex(id_), " (", client_, "): ", a.kernel, " grid ", ctas, " x ", threads, " threads: ",
      res.error ? "error " + std::to_string(res.error) + " (" + res.message + ")" : std::string("ok"), ", ",
      o.counters.steps, " steps",
      // Interpreter backends: the work, and its rate over launches long
      // enough for one (lowering included).
      !res.stats.lane_instructions ? std::string()
      : secs < 0.01 ? ", " + std::to_string(res.stats.lane_instructions) + " thread-instructions"
                    : ", " + std::to_string(res.stats.lane_instructions) + " thread-instructions (" +
                          std::to_string(uint64_t(double(res.stats.lane_instructions) / secs / 1e6)) + " M/s)",
      res.stats.host_threads > 1 ? " on " + std::to_string(res.stats.host_threads) + " host threads" : std::string(),
      " in ", secs, " s");
  Reply out;
  proto::encode(out.body, o);
  return out;
}

Reply Session::scratch_write(proto::Reader& r, const Bulk& bulk) {
  uint64_t off = r.u64("offset");
  r.finish("ScratchWrite");
  if (!bulk.in) return Reply::error(cudaErrorInvalidValue, "model_host: ScratchWrite without a bulk frame");
  if (off > proto::kMaxScratch || bulk.in_size > proto::kMaxScratch - off)
    return Reply::error(cudaErrorInvalidValue, "scratch buffer holds at most " + std::to_string(proto::kMaxScratch) + " bytes");
  if (scratch_.size() < off + bulk.in_size) scratch_.resize(off + bulk.in_size);
  std::memcpy(scratch_.data() + off, bulk.in, bulk.in_size);
  return {};
}

Reply Session::scratch_read(proto::Reader& r, const Bulk& bulk) {
  uint64_t off = r.u64("offset"), size = r.u64("size");
  r.finish("ScratchRead");
  if (size > proto::kMaxBulk || off > scratch_.size() || size > scratch_.size() - off)
    return Reply::error(cudaErrorInvalidValue, "scratch read of " + std::to_string(size) + " bytes at " +
                                                   std::to_string(off) + " is outside the " +
                                                   std::to_string(scratch_.size()) + " bytes written");
  return read_reply(scratch_.data() + off, size, bulk);
}

Reply Session::progress(proto::Reader& r) {
  uint32_t shown = r.u32("shown"), wait_ms = r.u32("wait_ms");
  r.finish("Progress");
  Reply out;
  std::unique_lock<std::mutex> g(device_.stats_mutex);
  device_.line_shown = shown != 0;
  device_.watcher_seen = std::chrono::steady_clock::now();
  device_.progress_cv.notify_all();
  const uint64_t version = device_.progress_version;
  device_.progress_cv.wait_for(g, std::chrono::milliseconds(std::min<uint32_t>(wait_ms, 1000)),
                               [&] { return device_.progress_version != version || (shown && device_.running.empty()); });
  // The launch started last of those running.
  const Device::Running* last = nullptr;
  for (const auto& [session, run] : device_.running)
    if (!last || run.info.launch > last->info.launch) last = &run;
  proto::LaunchProgress p;
  p.launch = device_.launches_started;
  if (last) {
    p = last->info;
    p.cta = last->live->cta.load(std::memory_order_relaxed);
    p.generated_tokens = last->live->generated_tokens.load(std::memory_order_relaxed);
    p.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - last->since).count();
  }
  p.totals = device_.totals;
  proto::encode(out.body, p);
  return out;
}

Reply Session::limit(proto::Reader& r) {
  uint32_t which = r.u32("limit");
  uint64_t value = r.u64("value");
  r.finish("Limit");
  const launch::DeviceSpec& d = device_.spec;
  if (which == proto::kLimitPendingLaunches) {
    // cudaLimitDevRuntimePendingLaunchCount: the launch queue's capacity
    // (launch::device_queue), on every device (one that runs no device-side
    // launches refuses them at launch).
    if (value != proto::kQueryLimit) {
      if (value < 1 || value > (1u << 24))
        return Reply::error(cudaErrorInvalidValue, "cudaDeviceSetLimit(cudaLimitDevRuntimePendingLaunchCount, " +
                                                       std::to_string(value) + "): the device takes 1 to " +
                                                       std::to_string(1u << 24));
      pending_launches_ = value;
    }
    Reply out;
    out.body.u64(pending_launches_);
    return out;
  }
  if (which != proto::kLimitPrintfFifo && which != proto::kLimitMallocHeap)
    return Reply::error(cudaErrorUnsupportedLimit, "limit " + std::to_string(which) + " is not one the device has");
  const bool heap = which == proto::kLimitMallocHeap;
  const char* what = heap ? "cudaLimitMallocHeapSize" : "cudaLimitPrintfFifoSize";
  uint64_t& current = heap ? heap_bytes_ : printf_fifo_;
  Reply out;
  if (value == proto::kQueryLimit || value == current) {
    out.body.u64(current);
    return out;
  }
  if (!d.limits_settable)
    return Reply::error(cudaErrorUnsupportedLimit,
                        std::string("cudaDeviceSetLimit(") + what + ", " + std::to_string(value) + "): the " + d.name +
                            " device's is fixed at " + std::to_string(current) + " bytes" +
                            (d.larger.empty() ? "" : "; " + d.larger));
  if (!heap) {
    constexpr uint64_t kMaxFifo = 256ull << 20;
    if (value < 64 || value > kMaxFifo)
      return Reply::error(cudaErrorInvalidValue, std::string("cudaDeviceSetLimit(") + what + ", " +
                                                     std::to_string(value) + "): the device takes 64 to " +
                                                     std::to_string(kMaxFifo) + " bytes");
    printf_fifo_ = value;
  } else {
    if (heap_used_)
      return Reply::error(cudaErrorInvalidValue, std::string("cudaDeviceSetLimit(") + what + ", " + std::to_string(value) +
                                                     "): the device heap is fixed once a kernel that calls malloc "
                                                     "has been launched");
    if (!place_heap(value))
      return Reply::error(cudaErrorMemoryAllocation,
                          std::string("cudaDeviceSetLimit(") + what + ", " + std::to_string(value) +
                              "): the heap lies at the top of the device's " + std::to_string(alloc_.size()) +
                              "-byte global memory, and allocations hold part of that range" +
                              (d.more_memory.empty() ? "" : "; " + d.more_memory));
  }
  out.body.u64(current);
  return out;
}

Reply Session::stats(proto::Reader& r) {
  r.finish("Stats");
  Reply out;
  std::lock_guard<std::mutex> g(device_.stats_mutex);
  proto::encode(out.body, device_.totals);
  return out;
}

}  // namespace qgpu::daemon
