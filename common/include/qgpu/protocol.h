// The wire protocol between CUDA drop-ins (clients) and model_host (the
// daemon).  docs/protocol.md is the specification; this header is its only
// implementation, shared by both sides.
//
// A message is one ZeroMQ multipart message of two or three frames:
//   frame 0: Header (24 bytes, little-endian, fixed layout)
//   frame 1: body (the fields of the message type, encoded by Writer)
//   frame 2: bulk bytes (only for message types that carry memory contents)
#pragma once

#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace qgpu::proto {

constexpr uint32_t kMagic = 0x57504751;  // "QGPW" read as little-endian bytes
constexpr uint16_t kVersion = 6;

// Bounds every receiver enforces before trusting a length.
constexpr uint64_t kMaxBody = 64ull << 20;      // one body frame
constexpr uint64_t kMaxBulk = 4ull << 20;       // one bulk frame (one chunk)
constexpr uint64_t kMaxMessage = kMaxBody + kMaxBulk + 4096;  // whole message
constexpr uint64_t kMaxScratch = 64ull << 20;   // per-session transport-test buffer

enum class Type : uint16_t {
  Hello = 1,         // u32 pid, str secret, str program  -> DeviceInfo
  Bye = 2,           // -                                   -> -
  Ping = 3,          // -                                   -> -
  Malloc = 4,        // u64 size                            -> u64 addr
  Free = 5,          // u64 addr                            -> -
  Write = 6,         // u64 addr, bulk                      -> -
  Read = 7,          // u64 addr, u64 size                  -> bulk
  Copy = 8,          // u64 dst, u64 src, u64 size          -> -
  Memset = 9,        // u64 addr, u32 byte, u64 size        -> -
  MemInfo = 10,      // -                                   -> u64 free, u64 total
  ModuleLoad = 11,   // str ptx                             -> ModuleImage
  ModuleUnload = 12, // u32 module                          -> -
  Launch = 13,       // LaunchArgs                          -> LaunchOutcome
  ScratchWrite = 14, // u64 offset, bulk                    -> -
  ScratchRead = 15,  // u64 offset, u64 size                -> bulk
  Stats = 16,        // -                                   -> DaemonStats
  Limit = 17,        // u32 limit, u64 value (kQueryLimit: query) -> u64 value
  ShmAttach = 18,    // -                                   -> u32 pid, i32 fd, u64 size, i32 device_fd, u64 device_size (qgpu/shm.h)
  Progress = 19,     // u32 shown, u32 wait_ms              -> LaunchProgress
};

// Limit's `limit`: cudaLimitPrintfFifoSize, cudaLimitMallocHeapSize and
// cudaLimitDevRuntimePendingLaunchCount, as
// the CUDA runtime numbers them.
constexpr uint32_t kLimitPrintfFifo = 1, kLimitMallocHeap = 2, kLimitPendingLaunches = 4;
constexpr uint64_t kQueryLimit = UINT64_MAX;
const char* type_name(Type t);
bool known_type(uint16_t t);

struct Header {
  uint32_t magic = kMagic;
  uint16_t version = kVersion;
  uint16_t type = 0;
  uint32_t request = 0;  // chosen by the client, echoed in the reply
  int32_t status = 0;    // replies: a cudaError_t value (0: success)
  uint64_t session = 0;  // 0 only in Hello; the daemon assigns it
};
constexpr size_t kHeaderSize = 24;
void encode_header(const Header& h, uint8_t out[kHeaderSize]);
// Throws ProtocolError on a wrong size, magic or version.
Header decode_header(const void* data, size_t size);

struct ProtocolError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Appends fields to a body.
class Writer {
 public:
  Writer& u32(uint32_t v) { return raw(&v, 4); }
  Writer& i32(int32_t v) { return raw(&v, 4); }
  Writer& u64(uint64_t v) { return raw(&v, 8); }
  Writer& f64(double v) { return raw(&v, 8); }
  Writer& str(std::string_view s) { u64(s.size()); return raw(s.data(), s.size()); }
  Writer& bytes(const void* p, size_t n) { u64(n); return raw(p, n); }
  std::vector<uint8_t>& data() { return buf_; }

 private:
  Writer& raw(const void* p, size_t n) {
    auto* b = static_cast<const uint8_t*>(p);
    buf_.insert(buf_.end(), b, b + n);
    return *this;
  }
  std::vector<uint8_t> buf_;
};

// Reads fields from a body; every read is bounds-checked and throws
// ProtocolError naming the field, so a malformed message never reads past
// its frame.
class Reader {
 public:
  Reader(const void* p, size_t n) : p_(static_cast<const uint8_t*>(p)), n_(n) {}
  uint32_t u32(const char* what) { uint32_t v; raw(&v, 4, what); return v; }
  int32_t i32(const char* what) { int32_t v; raw(&v, 4, what); return v; }
  uint64_t u64(const char* what) { uint64_t v; raw(&v, 8, what); return v; }
  double f64(const char* what) { double v; raw(&v, 8, what); return v; }
  std::string str(const char* what);
  std::vector<uint8_t> bytes(const char* what);
  // A count of following records, each at least `min_record` bytes long.
  uint64_t count(const char* what, size_t min_record);
  // Throws unless every byte was consumed.
  void finish(const char* message) const;

 private:
  void raw(void* out, size_t n, const char* what);
  const uint8_t* p_;
  size_t n_, pos_ = 0;
};

// ---- Message bodies with more than two fields -----------------------------

struct DeviceInfo {
  std::string backend;      // "interpreter" or "model"
  std::string device_name;  // e.g. "qgpu (interpreter)"
  uint32_t lanes = 0, warp_size = 0, registers = 0, rom_blocks = 0;
  uint64_t global_base = 0, global_bytes = 0;
  uint32_t shared_bytes_per_cta = 0, shared_optin_bytes_per_cta = 0, max_threads_per_cta = 0;
  uint64_t max_ctas_per_grid = 0;
  uint32_t max_grid[3] = {0, 0, 0}, max_block[3] = {0, 0, 0};
  uint32_t param_bytes = 0, const_bytes = 0, local_bytes_per_thread = 0;
  uint64_t printf_fifo_bytes = 0, heap_bytes = 0;  // the limits' values at start
  uint32_t limits_settable = 0;                    // 1: Limit may change them
  // The way out a message about a launch beyond the device names (a larger
  // device), empty when there is none.
  std::string way_out;
  // The most CTAs a cooperative launch may have (all resident at once, for
  // grid-wide sync); 0: the device takes no cooperative launches.
  uint32_t cooperative_ctas = 0;
  // The multiprocessors the runtime and driver report, one block each: the
  // blocks the device runs at once, one where it runs no cooperative launch.
  uint32_t multiprocessors() const { return cooperative_ctas > 1 ? cooperative_ctas : 1; }
  // The registers of one CTA (regsPerBlock): a register file split among the
  // threads, or 0 where every thread has `registers` at any CTA size.
  uint32_t register_file = 0;
  uint32_t registers_per_cta() const { return register_file ? register_file : registers * max_threads_per_cta; }
  // The L2 cache the device declares (launch::DeviceSpec): its size, the most
  // of it cudaLimitPersistingL2CacheSize may set aside, and the largest
  // access-policy window.
  uint32_t l2_bytes = 0, persisting_l2_max_bytes = 0, access_policy_max_window_bytes = 0;
  // How fast the device's clock() advances (cudaDevAttrClockRate), in kHz.
  uint32_t clock_khz = 0;
};
void encode(Writer& w, const DeviceInfo& d);
DeviceInfo decode_device_info(Reader& r);

struct KernelLayout {
  std::string name;
  struct Param { uint32_t offset = 0, size = 0, align = 1; };
  std::vector<Param> params;
  uint32_t static_smem = 0;
  uint32_t param_bytes() const;  // end of the last parameter
};
struct ModuleImage {
  uint32_t id = 0;
  struct Var { std::string name; uint64_t addr = 0, size = 0; };
  std::vector<Var> vars;
  std::vector<KernelLayout> kernels;
};
void encode(Writer& w, const ModuleImage& m);
ModuleImage decode_module_image(Reader& r);

struct LaunchArgs {
  uint32_t module = 0;
  std::string kernel;
  uint32_t grid[3] = {1, 1, 1}, block[3] = {1, 1, 1};
  uint32_t dynamic_smem = 0;
  std::vector<uint8_t> params;
  uint32_t cooperative = 0;  // 1: cudaLaunchCooperativeKernel / cuLaunchCooperativeKernel
};
void encode(Writer& w, const LaunchArgs& a);
LaunchArgs decode_launch_args(Reader& r);

// The launch shape checks both sides make, the drop-in before it sends a
// launch and the daemon before it runs one: a zero dimension, then each
// block and grid dimension, threads per block and blocks in the grid against
// the device's limits.  `who` opens the message (the kernel and the device);
// "; " + d.way_out ends it when the device names a way out.  status 0: the
// shape fits; otherwise a cudaError_t value (cudaErrorInvalidConfiguration)
// and the message.
struct LaunchCheck {
  int32_t status = 0;
  std::string message;
};
LaunchCheck check_launch_shape(const uint32_t grid[3], const uint32_t block[3], const DeviceInfo& d,
                               const std::string& who);

struct LaunchCounters {
  uint64_t launches = 0, steps = 0, prompt_tokens = 0, generated_tokens = 0;
  double seconds = 0;
};
void encode(Writer& w, const LaunchCounters& c);
LaunchCounters decode_counters(Reader& r);

// The launch the daemon's device is running now (any session's), for
// progress displays, and the totals of the launches that ended.
struct LaunchProgress {
  uint32_t running = 0;        // 1 while a launch runs
  uint64_t launch = 0;         // launches started so far (the running one's number)
  std::string kernel;
  uint64_t ctas = 0;           // CTAs in its grid
  uint64_t cta = 0;            // 1 + the CTA running now; 0: not known
  uint64_t generated_tokens = 0;
  double seconds = 0;          // since it started
  LaunchCounters totals;       // launches that ended
};
void encode(Writer& w, const LaunchProgress& p);
LaunchProgress decode_launch_progress(Reader& r);

// A launch's reply: the kernel's own error (sticky in the client when it is
// an execution error) travels here, not in Header::status, which reports
// whether the request could be served at all.
struct LaunchOutcome {
  int32_t error = 0;
  std::string message;
  std::string printf_output;
  LaunchCounters counters;  // launches == 1
};
void encode(Writer& w, const LaunchOutcome& o);
LaunchOutcome decode_launch_outcome(Reader& r);

}  // namespace qgpu::proto
