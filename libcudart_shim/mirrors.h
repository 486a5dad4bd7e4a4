// Host memory the device reaches: managed memory (cudaMallocManaged and
// __managed__ variables), mapped pinned memory (cudaHostAlloc with
// cudaHostAllocMapped, cudaHostRegister with cudaHostRegisterMapped).
//
// The device reads and writes only its own memory (the machine's global
// window), so each such range has a device copy and a host copy, kept
// coherent at CUDA's points: before the device uses a range (a launch, a
// copy or memset that touches it) the host copy is written to the device if
// the host's is the current one; after a synchronizing call the device copy
// is read back if the device's is (and only the pages the host changed go
// to the device: the runtime keeps what the device holds to compare with,
// rather than write-protecting the pages, which would turn a system call
// writing into them into EFAULT).  Managed memory and cudaHostAllocMapped
// memory live on the host at exactly their device address (pages mapped
// with MAP_FIXED_NOREPLACE), so one pointer is valid on both sides;
// cudaHostRegisterMapped memory keeps the program's address and gets a
// device address of its own (cudaHostGetDevicePointer).  Hence what
// programs are told: managedMemory 1, concurrentManagedAccess 0 (the host
// must not touch these ranges while the device works), pageableMemoryAccess
// 0 (the device reaches no other host memory).
//
// Live ranges.  When the daemon shares the device memory as a file
// (client::Connection::device_memory_fd(): an interpreter backend on this
// machine), managed memory, __managed__ variables and memory from
// cudaHostAlloc are mapped from that file at their device address instead:
// host and device then read and write the same bytes at every moment, so
// such a range has one copy, nothing moves at launches or synchronization,
// and programs are told concurrentManagedAccess 1 and
// hostNativeAtomicSupported 1 (the device's 32-bit integer global atomics
// are atomic operations on those bytes; its 64-bit and float atomics are
// made of 32-bit ones and of read-modify-write blocks that only the
// machine's schedule keeps whole, docs/isa.md section 8, so they are not
// atomic against the host's).
//
// cudaHostRegisterMapped memory is live too when it lies on whole pages and
// its device copy starts on a page (live_registration_align(); the
// runtime then over-allocates the device copy by a page to align it): the
// program's pages are replaced by the device file's pages at the same host
// address, holding what they held (MAP_FIXED over them), and given back as
// private pages with the same contents when the range is removed
// (cudaHostUnregister).  Otherwise, or when the mapping fails, the range is
// mirrored.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "qgpu/client.h"

namespace qgpu::cudart {

class Mirrors {
 public:
  enum Kind { Managed, ManagedVariable, HostMapped, Registered };
  struct Range {
    uint64_t dev = 0;
    uint8_t* host = nullptr;
    uint64_t size = 0;
    Kind kind = Managed;
    unsigned flags = 0;
    bool live = false;         // mapped from the device memory file: one copy
    bool host_current = true;  // else the device copy is the newer one
    // While the host copy is current: the bytes the device copy holds, when
    // known (after a copy either way), so that only the pages the host
    // changed are written to the device.
    std::shared_ptr<std::vector<uint8_t>> device_bytes;
  };
  // One side of an operation's memory: `n` bytes at `addr`, a device
  // address (device = true) or a host one; all = every range.
  struct Access {
    uint64_t addr = 0, n = 0;
    bool device = true;
    bool all = false;
    bool written = false;  // a host side the operation writes (device sides count as written)
  };

  // The device memory file (fd < 0: none): ranges added from now on with
  // host == nullptr are mapped from it, live.  `base`: the device address of
  // the file's byte 0; `bytes`: its size.
  void set_device_file(int fd, uint64_t base, uint64_t bytes);
  // Whether ranges without a host pointer are live (a device file is set).
  bool live() const { return fd_ >= 0; }
  // The alignment a device copy of program memory [host, host + size)
  // needs to be live (the page size: a device file is set and the range
  // covers whole pages), or 0 when it cannot be.
  uint64_t live_registration_align(const void* host, uint64_t size) const;

  // Maps host pages at [dev, dev + size) (host == nullptr), or takes the
  // program's memory at `host`; throws client::Error when the host address
  // range is taken.  `host_current`: which copy holds the contents now
  // (ignored for a live range: there is one).
  void add(uint64_t dev, void* host, uint64_t size, Kind kind, unsigned flags, bool host_current);
  // Removes the range at device address `dev` (unmapping pages no other
  // range uses); its contents are not copied anywhere.
  std::optional<Range> remove(uint64_t dev);
  std::optional<Range> find_device(uint64_t addr);
  std::optional<Range> find_host(const void* p);
  bool empty() const { return count_.load() == 0; }

  // Makes the copies an operation uses current on its side (device-side
  // accesses: host copies written to the device; host-side: device copies
  // read back, unless the operation writes the whole host copy) and returns
  // the lock to hold while the operation runs.  Device-side ranges count as
  // written by the operation; a range it reaches on both sides (a copy
  // between its own device and host copies) has both made equal first, and
  // the side written is the current one after.
  std::unique_lock<std::mutex> prepare(client::Connection& c, std::initializer_list<Access> accesses);
  // Forgets every range (cudaDeviceReset); unmaps the pages.
  void clear();

 private:
  bool overlaps(const Range& r, const Access& a) const;
  void push(client::Connection& c, Range& r);
  void map_pages(uint64_t dev, uint64_t size);
  void unmap_pages(uint64_t dev, uint64_t size);
  // Maps the pages [first, end) (none mapped yet), private and zero, or
  // from the device file; false (errno set, nothing left mapped) when the
  // address range is taken.
  bool map_run(uint64_t first, uint64_t end);
  // Registered memory: writes the program's bytes [host, host + size) to the
  // device file at `dev` and maps the file's pages over them; false (the
  // program's memory as it was) when it cannot.
  bool map_registered(uint64_t dev, uint8_t* host, uint64_t size);
  // Gives a live registered range back private pages holding its bytes.
  void unmap_registered(const Range& r);

  std::mutex mu_;
  std::map<uint64_t, Range> ranges_;  // by device address
  std::map<uint64_t, int> pages_;     // host pages mapped at device addresses -> ranges using them
  std::atomic<size_t> count_{0};
  std::atomic<size_t> mirrored_{0};  // ranges that are not live: prepare() has work only with some
  int fd_ = -1;
  uint64_t file_base_ = 0, file_bytes_ = 0;
};

}  // namespace qgpu::cudart
