// One client's device memory: allocations inside the machine's global
// window [base, base + size), first fit, 256-byte aligned as cudaMalloc is.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>

namespace qgpu::daemon {

class Allocator {
 public:
  static constexpr uint64_t kAlign = 256;
  Allocator(uint64_t base, uint64_t size) : base_(base), size_(size) {}

  // The address of a new block of `size` bytes (aligned to `align`, at
  // least kAlign), or nothing when no free range is large enough.
  std::optional<uint64_t> allocate(uint64_t size, uint64_t align = kAlign);
  // Places a block of `size` bytes at `addr` (inside the window); false when
  // it would overlap a live block.
  bool allocate_at(uint64_t addr, uint64_t size);
  // False when `addr` is not the start of a live block.
  bool release(uint64_t addr);
  void clear() { blocks_.clear(); }

  // Empty when [addr, addr + size) lies inside one live block; otherwise a
  // sentence saying why not.
  std::string check_range(uint64_t addr, uint64_t size) const;

  uint64_t used() const;
  uint64_t largest_free() const;
  uint64_t base() const { return base_; }
  uint64_t size() const { return size_; }
  size_t live_blocks() const { return blocks_.size(); }

 private:
  uint64_t base_, size_;
  std::map<uint64_t, uint64_t> blocks_;  // start -> size
};

}  // namespace qgpu::daemon
