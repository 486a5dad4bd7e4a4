#include "model_host/daemon/allocator.h"

#include <algorithm>
#include <cstdio>
#include <iterator>

namespace qgpu::daemon {
namespace {
uint64_t round_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }
std::string hex(uint64_t v) {
  char b[24];
  std::snprintf(b, sizeof b, "0x%llx", static_cast<unsigned long long>(v));
  return b;
}
}  // namespace

std::optional<uint64_t> Allocator::allocate(uint64_t size, uint64_t align) {
  align = std::max(align, kAlign);
  if (size == 0 || size > size_) return std::nullopt;
  uint64_t cursor = base_;
  for (auto [start, len] : blocks_) {
    uint64_t at = round_up(cursor, align);
    if (at + size <= start) break;
    cursor = start + len;
  }
  uint64_t at = round_up(cursor, align);
  if (at + size > base_ + size_) return std::nullopt;
  blocks_[at] = size;
  return at;
}

bool Allocator::allocate_at(uint64_t addr, uint64_t size) {
  if (size == 0 || addr < base_ || addr > base_ + size_ || size > base_ + size_ - addr) return false;
  auto next = blocks_.lower_bound(addr);
  if (next != blocks_.end() && next->first < addr + size) return false;
  if (next != blocks_.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second > addr) return false;
  }
  blocks_[addr] = size;
  return true;
}

bool Allocator::release(uint64_t addr) { return blocks_.erase(addr) == 1; }

std::string Allocator::check_range(uint64_t addr, uint64_t size) const {
  auto it = blocks_.upper_bound(addr);
  if (it == blocks_.begin())
    return hex(addr) + " is not inside any live allocation (freed or never allocated)";
  --it;
  uint64_t start = it->first, len = it->second;
  if (addr >= start + len) return hex(addr) + " is not inside any live allocation (freed or never allocated)";
  if (size > start + len - addr)
    return "[" + hex(addr) + ", +" + std::to_string(size) + ") runs past the end of the allocation at " + hex(start) +
           " of " + std::to_string(len) + " bytes";
  return {};
}

uint64_t Allocator::used() const {
  uint64_t n = 0;
  for (auto& b : blocks_) n += b.second;
  return n;
}

uint64_t Allocator::largest_free() const {
  uint64_t best = 0, cursor = base_;
  for (auto [start, len] : blocks_) {
    best = std::max(best, start - cursor);
    cursor = start + len;
  }
  return std::max(best, base_ + size_ - cursor);
}

}  // namespace qgpu::daemon
