#include "qgpu/protocol.h"

#include <algorithm>

namespace qgpu::proto {

const char* type_name(Type t) {
  switch (t) {
    case Type::Hello: return "Hello";
    case Type::Bye: return "Bye";
    case Type::Ping: return "Ping";
    case Type::Malloc: return "Malloc";
    case Type::Free: return "Free";
    case Type::Write: return "Write";
    case Type::Read: return "Read";
    case Type::Copy: return "Copy";
    case Type::Memset: return "Memset";
    case Type::MemInfo: return "MemInfo";
    case Type::ModuleLoad: return "ModuleLoad";
    case Type::ModuleUnload: return "ModuleUnload";
    case Type::Launch: return "Launch";
    case Type::ScratchWrite: return "ScratchWrite";
    case Type::ScratchRead: return "ScratchRead";
    case Type::Stats: return "Stats";
    case Type::Limit: return "Limit";
    case Type::ShmAttach: return "ShmAttach";
    case Type::Progress: return "Progress";
  }
  return "unknown";
}

bool known_type(uint16_t t) { return t >= uint16_t(Type::Hello) && t <= uint16_t(Type::Progress); }

void encode_header(const Header& h, uint8_t out[kHeaderSize]) {
  std::memcpy(out + 0, &h.magic, 4);
  std::memcpy(out + 4, &h.version, 2);
  std::memcpy(out + 6, &h.type, 2);
  std::memcpy(out + 8, &h.request, 4);
  std::memcpy(out + 12, &h.status, 4);
  std::memcpy(out + 16, &h.session, 8);
}

Header decode_header(const void* data, size_t size) {
  if (size != kHeaderSize)
    throw ProtocolError("header frame has " + std::to_string(size) + " bytes, expected " +
                        std::to_string(kHeaderSize));
  auto* p = static_cast<const uint8_t*>(data);
  Header h;
  std::memcpy(&h.magic, p + 0, 4);
  std::memcpy(&h.version, p + 4, 2);
  std::memcpy(&h.type, p + 6, 2);
  std::memcpy(&h.request, p + 8, 4);
  std::memcpy(&h.status, p + 12, 4);
  std::memcpy(&h.session, p + 16, 8);
  if (h.magic != kMagic) throw ProtocolError("bad magic: not a qgpu message");
  if (h.version != kVersion)
    throw ProtocolError("protocol version " + std::to_string(h.version) + " (this side speaks " +
                        std::to_string(kVersion) + ")");
  return h;
}

void Reader::raw(void* out, size_t n, const char* what) {
  if (n > n_ - pos_)
    throw ProtocolError(std::string("truncated body: field '") + what + "' needs " +
                        std::to_string(n) + " bytes, " + std::to_string(n_ - pos_) + " left");
  std::memcpy(out, p_ + pos_, n);
  pos_ += n;
}

std::string Reader::str(const char* what) {
  uint64_t n = u64(what);
  if (n > n_ - pos_)
    throw ProtocolError(std::string("field '") + what + "' claims " + std::to_string(n) +
                        " bytes, " + std::to_string(n_ - pos_) + " left");
  std::string s(reinterpret_cast<const char*>(p_ + pos_), n);
  pos_ += n;
  return s;
}

std::vector<uint8_t> Reader::bytes(const char* what) {
  uint64_t n = u64(what);
  if (n > n_ - pos_)
    throw ProtocolError(std::string("field '") + what + "' claims " + std::to_string(n) +
                        " bytes, " + std::to_string(n_ - pos_) + " left");
  std::vector<uint8_t> v(p_ + pos_, p_ + pos_ + n);
  pos_ += n;
  return v;
}

uint64_t Reader::count(const char* what, size_t min_record) {
  uint64_t n = u64(what);
  if (min_record && n > (n_ - pos_) / min_record)
    throw ProtocolError(std::string("count '") + what + "' = " + std::to_string(n) +
                        " cannot fit in the " + std::to_string(n_ - pos_) + " bytes left");
  return n;
}

void Reader::finish(const char* message) const {
  if (pos_ != n_)
    throw ProtocolError(std::string(message) + " body has " + std::to_string(n_ - pos_) +
                        " trailing bytes");
}

void encode(Writer& w, const DeviceInfo& d) {
  w.str(d.backend).str(d.device_name);
  w.u32(d.lanes).u32(d.warp_size).u32(d.registers).u32(d.rom_blocks);
  w.u64(d.global_base).u64(d.global_bytes);
  w.u32(d.shared_bytes_per_cta).u32(d.shared_optin_bytes_per_cta).u32(d.max_threads_per_cta);
  w.u64(d.max_ctas_per_grid);
  for (uint32_t v : d.max_grid) w.u32(v);
  for (uint32_t v : d.max_block) w.u32(v);
  w.u32(d.param_bytes).u32(d.const_bytes).u32(d.local_bytes_per_thread);
  w.u64(d.printf_fifo_bytes).u64(d.heap_bytes).u32(d.limits_settable);
  w.str(d.way_out).u32(d.cooperative_ctas);
  w.u32(d.l2_bytes).u32(d.persisting_l2_max_bytes).u32(d.access_policy_max_window_bytes);
  w.u32(d.clock_khz).u32(d.register_file);
}

DeviceInfo decode_device_info(Reader& r) {
  DeviceInfo d;
  d.backend = r.str("backend");
  d.device_name = r.str("device_name");
  d.lanes = r.u32("lanes");
  d.warp_size = r.u32("warp_size");
  d.registers = r.u32("registers");
  d.rom_blocks = r.u32("rom_blocks");
  d.global_base = r.u64("global_base");
  d.global_bytes = r.u64("global_bytes");
  d.shared_bytes_per_cta = r.u32("shared_bytes_per_cta");
  d.shared_optin_bytes_per_cta = r.u32("shared_optin_bytes_per_cta");
  d.max_threads_per_cta = r.u32("max_threads_per_cta");
  d.max_ctas_per_grid = r.u64("max_ctas_per_grid");
  for (uint32_t& v : d.max_grid) v = r.u32("max_grid");
  for (uint32_t& v : d.max_block) v = r.u32("max_block");
  d.param_bytes = r.u32("param_bytes");
  d.const_bytes = r.u32("const_bytes");
  d.local_bytes_per_thread = r.u32("local_bytes_per_thread");
  d.printf_fifo_bytes = r.u64("printf_fifo_bytes");
  d.heap_bytes = r.u64("heap_bytes");
  d.limits_settable = r.u32("limits_settable");
  d.way_out = r.str("way_out");
  d.cooperative_ctas = r.u32("cooperative_ctas");
  d.l2_bytes = r.u32("l2_bytes");
  d.persisting_l2_max_bytes = r.u32("persisting_l2_max_bytes");
  d.access_policy_max_window_bytes = r.u32("access_policy_max_window_bytes");
  d.clock_khz = r.u32("clock_khz");
  d.register_file = r.u32("register_file");
  return d;
}

uint32_t KernelLayout::param_bytes() const {
  uint32_t end = 0;
  for (const Param& p : params) end = std::max(end, p.offset + p.size);
  return end;
}

void encode(Writer& w, const ModuleImage& m) {
  w.u32(m.id);
  w.u64(m.vars.size());
  for (const auto& v : m.vars) w.str(v.name).u64(v.addr).u64(v.size);
  w.u64(m.kernels.size());
  for (const auto& k : m.kernels) {
    w.str(k.name).u32(k.static_smem);
    w.u64(k.params.size());
    for (const auto& p : k.params) w.u32(p.offset).u32(p.size).u32(p.align);
  }
}

ModuleImage decode_module_image(Reader& r) {
  ModuleImage m;
  m.id = r.u32("module");
  uint64_t nv = r.count("vars", 24);
  for (uint64_t i = 0; i < nv; ++i) {
    ModuleImage::Var v;
    v.name = r.str("var.name");
    v.addr = r.u64("var.addr");
    v.size = r.u64("var.size");
    m.vars.push_back(std::move(v));
  }
  uint64_t nk = r.count("kernels", 20);
  for (uint64_t i = 0; i < nk; ++i) {
    KernelLayout k;
    k.name = r.str("kernel.name");
    k.static_smem = r.u32("kernel.static_smem");
    uint64_t np = r.count("kernel.params", 12);
    for (uint64_t j = 0; j < np; ++j) {
      KernelLayout::Param p;
      p.offset = r.u32("param.offset");
      p.size = r.u32("param.size");
      p.align = r.u32("param.align");
      k.params.push_back(p);
    }
    m.kernels.push_back(std::move(k));
  }
  return m;
}

void encode(Writer& w, const LaunchArgs& a) {
  w.u32(a.module).str(a.kernel);
  for (uint32_t v : a.grid) w.u32(v);
  for (uint32_t v : a.block) w.u32(v);
  w.u32(a.dynamic_smem).bytes(a.params.data(), a.params.size()).u32(a.cooperative);
}

LaunchArgs decode_launch_args(Reader& r) {
  LaunchArgs a;
  a.module = r.u32("module");
  a.kernel = r.str("kernel");
  for (uint32_t& v : a.grid) v = r.u32("grid");
  for (uint32_t& v : a.block) v = r.u32("block");
  a.dynamic_smem = r.u32("dynamic_smem");
  a.params = r.bytes("params");
  a.cooperative = r.u32("cooperative");
  return a;
}

LaunchCheck check_launch_shape(const uint32_t grid[3], const uint32_t block[3], const DeviceInfo& d,
                               const std::string& who) {
  constexpr int32_t kInvalidConfiguration = 9;  // cudaErrorInvalidConfiguration
  auto dims = [](const uint32_t* v) {
    return "(" + std::to_string(v[0]) + "," + std::to_string(v[1]) + "," + std::to_string(v[2]) + ")";
  };
  auto refuse = [&](std::string message) { return LaunchCheck{kInvalidConfiguration, std::move(message)}; };
  const std::string way = d.way_out.empty() ? "" : "; " + d.way_out;
  for (int i = 0; i < 3; ++i) {
    if (grid[i] == 0 || block[i] == 0)
      return refuse(who + "grid " + dims(grid) + " block " + dims(block) + " has a zero dimension");
    if (block[i] > d.max_block[i])
      return refuse(who + "block " + dims(block) + "; its blocks are at most " + dims(d.max_block) + way);
    if (grid[i] > d.max_grid[i])
      return refuse(who + "grid " + dims(grid) + "; its grids are at most " + dims(d.max_grid) + way);
  }
  uint64_t threads = uint64_t(block[0]) * block[1] * block[2];
  if (threads > d.max_threads_per_cta)
    return refuse(who + std::to_string(threads) + " threads per block; it runs at most " +
                  std::to_string(d.max_threads_per_cta) + way);
  uint64_t ctas = uint64_t(grid[0]) * grid[1] * grid[2];
  if (ctas > d.max_ctas_per_grid)
    return refuse(who + std::to_string(ctas) + " blocks in the grid; it runs at most " +
                  std::to_string(d.max_ctas_per_grid) + " per launch" + way);
  return {};
}

void encode(Writer& w, const LaunchCounters& c) {
  w.u64(c.launches).u64(c.steps).u64(c.prompt_tokens).u64(c.generated_tokens).f64(c.seconds);
}

LaunchCounters decode_counters(Reader& r) {
  LaunchCounters c;
  c.launches = r.u64("launches");
  c.steps = r.u64("steps");
  c.prompt_tokens = r.u64("prompt_tokens");
  c.generated_tokens = r.u64("generated_tokens");
  c.seconds = r.f64("seconds");
  return c;
}

void encode(Writer& w, const LaunchProgress& p) {
  w.u32(p.running).u64(p.launch).str(p.kernel).u64(p.ctas).u64(p.cta).u64(p.generated_tokens).f64(p.seconds);
  encode(w, p.totals);
}

LaunchProgress decode_launch_progress(Reader& r) {
  LaunchProgress p;
  p.running = r.u32("running");
  p.launch = r.u64("launch");
  p.kernel = r.str("kernel");
  p.ctas = r.u64("ctas");
  p.cta = r.u64("cta");
  p.generated_tokens = r.u64("generated_tokens");
  p.seconds = r.f64("seconds");
  p.totals = decode_counters(r);
  return p;
}

void encode(Writer& w, const LaunchOutcome& o) {
  w.i32(o.error).str(o.message).str(o.printf_output);
  encode(w, o.counters);
}

LaunchOutcome decode_launch_outcome(Reader& r) {
  LaunchOutcome o;
  o.error = r.i32("error");
  o.message = r.str("message");
  o.printf_output = r.str("printf_output");
  o.counters = decode_counters(r);
  return o;
}

}  // namespace qgpu::proto
