// One client of model_host: its device memory (an image here, or a context of
// a backend that keeps it, launch::DeviceContext), allocations, loaded modules
// and transport scratch buffer.  A session serves its requests one at
// a time, in order, on its own worker thread (see server.h).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>
#include <zmq.hpp>

#include "model_host/daemon/allocator.h"
#include "model_host/launch/launch.h"
#include "qgpu/protocol.h"

namespace qgpu::daemon {

// What every session shares: the one backend (one device runs one kernel at
// a time), the device it declares (what sessions enforce) and that device as
// reported to clients, and the totals.
struct Device {
  launch::Backend* backend = nullptr;
  std::mutex run_mutex;                 // serialises launches on the backend
  launch::DeviceSpec spec;
  proto::DeviceInfo info;
  // Sets `backend`, `spec` and `info` from the backend's device.
  void describe(launch::Backend* b);
  std::mutex stats_mutex;
  proto::LaunchCounters totals;
  // The running launches, for Progress requests (under stats_mutex; a
  // backend that runs launches concurrently may have several): by session,
  // what each is and where its backend reports how far it came.
  struct Running {
    proto::LaunchProgress info;
    std::chrono::steady_clock::time_point since;
    const launch::LaunchProgress* live = nullptr;
  };
  std::map<uint64_t, Running> running;
  uint64_t launches_started = 0;
  // A watcher (qgpu run) that shows a progress line on the terminal the
  // program writes to: a launch that ends waits (briefly) until the watcher
  // has erased its line, so the program's next output never lands on it.
  std::condition_variable progress_cv;  // launches starting and ending, watchers erasing
  uint64_t progress_version = 0;        // bumped when a launch starts or ends
  bool line_shown = false;
  std::chrono::steady_clock::time_point watcher_seen;
};

struct Reply {
  int32_t status = 0;  // a cudaError_t value
  proto::Writer body;
  std::optional<zmq::message_t> bulk;
  size_t bulk_out = 0;  // bytes a read placed in Bulk::out instead of `bulk`
  static Reply error(int32_t status, const std::string& message);
};

// A request's bulk bytes: a ZeroMQ frame, or a chunk of the shared-memory
// segment (qgpu/shm.h), whose contents the client may change at any time:
// they are only ever copied, never interpreted.
struct Bulk {
  const uint8_t* in = nullptr;  // Write, ScratchWrite: the bytes (nullptr: none came)
  size_t in_size = 0;
  uint8_t* out = nullptr;       // Read, ScratchRead: where the bytes go (nullptr: a reply frame)
  size_t out_size = 0;
};

class Session {
 public:
  Session(uint64_t id, Device& device, std::string client);

  // Serves one request (any type but Hello and Ping, which the server
  // answers itself).  Never throws: failures become error replies.
  Reply serve(proto::Type type, proto::Reader& body, const Bulk& bulk);

  // Frees every allocation and module (the client said Bye or died).
  void release_all();
  // Ends the running launch early where the backend looks
  // (LaunchProgress::cancel): its client is gone.
  void cancel_launches() { progress_.cancel = true; }
  size_t live_allocations() const { return alloc_.live_blocks() - (heap_bytes_ ? 1 : 0); }  // the heap is none
  // Puts the device memory in a file the client can map (docs/protocol.md,
  // ShmAttach): its contents move there.  Returns the file's descriptor, or
  // -1 for a backend whose memory is not bytes here (the model's lives in
  // its recurrent state) or when no file can be made.  Only between
  // requests (nothing runs on the memory).
  int share_memory();
  uint64_t memory_bytes() const { return mem_.bytes.size(); }

 private:
  struct Module {
    std::string ptx;
    launch::ModuleInfo info;
    std::map<std::string, uint64_t> symbols;  // module variables -> device address
    bool calls_malloc = false;                // declares device malloc (or the device runtime)
    bool launches_kernels = false;            // calls the device runtime (device-side launches)
  };

  Reply malloc(proto::Reader& r);
  Reply free(proto::Reader& r);
  Reply write(proto::Reader& r, const Bulk& bulk);
  Reply read(proto::Reader& r, const Bulk& bulk);
  Reply copy(proto::Reader& r);
  Reply memset(proto::Reader& r);
  Reply mem_info(proto::Reader& r);
  Reply module_load(proto::Reader& r);
  Reply module_unload(proto::Reader& r);
  Reply launch(proto::Reader& r);
  Reply scratch_write(proto::Reader& r, const Bulk& bulk);
  Reply scratch_read(proto::Reader& r, const Bulk& bulk);
  Reply stats(proto::Reader& r);
  Reply progress(proto::Reader& r);
  Reply limit(proto::Reader& r);
  // The device heap: the top heap_bytes_ of global memory, a block of the
  // allocator (docs/isa.md, "Device heap").
  bool place_heap(uint64_t bytes);
  uint64_t heap_base() const { return heap_bytes_ ? mem_.base + mem_.bytes.size() - heap_bytes_ : 0; }
  void reset_limits();

  uint8_t* at(uint64_t addr) { return mem_.bytes.data() + (addr - mem_.base); }
  // Device memory, in the image or in the backend's context.
  void put(uint64_t addr, const uint8_t* data, uint64_t size);
  void get(uint64_t addr, uint8_t* out, uint64_t size);

  uint64_t id_;
  Device& device_;
  std::string client_;
  launch::GlobalMemory mem_;   // the image, unless the backend keeps the memory (ctx_)
  std::unique_ptr<launch::DeviceContext> ctx_;
  Allocator alloc_;
  std::map<uint32_t, Module> modules_;
  uint32_t next_module_ = 1;
  std::vector<uint8_t> scratch_;
  launch::LaunchProgress progress_;  // of this session's running launch
  uint64_t printf_fifo_ = 0, heap_bytes_ = 0;
  uint64_t pending_launches_ = launch::device_queue::kDefaultPending;  // cudaLimitDevRuntimePendingLaunchCount
  bool heap_used_ = false;  // a kernel of a module that calls malloc has run: the heap is fixed
};

}  // namespace qgpu::daemon
