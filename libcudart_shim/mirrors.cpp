#include "mirrors.h"

#include <cuda_runtime_api.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>

namespace qgpu::cudart {
namespace {

uint64_t page_size() {
  static const uint64_t p = uint64_t(sysconf(_SC_PAGESIZE));
  return p;
}

std::string hex(uint64_t v) {
  char b[24];
  std::snprintf(b, sizeof b, "0x%llx", static_cast<unsigned long long>(v));
  return b;
}

}  // namespace

void Mirrors::set_device_file(int fd, uint64_t base, uint64_t bytes) {
  std::lock_guard<std::mutex> g(mu_);
  const uint64_t ps = page_size();
  // The file maps only page for page: a base or size off the page grid
  // keeps every range mirrored.
  const bool usable = fd >= 0 && base % ps == 0 && bytes % ps == 0 && bytes > 0;
  fd_ = usable ? fd : -1;
  file_base_ = usable ? base : 0;
  file_bytes_ = usable ? bytes : 0;
}

bool Mirrors::map_run(uint64_t first, uint64_t end) {
  void* want = reinterpret_cast<void*>(first);
  const size_t n = size_t(end - first);
  void* got;
  if (fd_ >= 0 && first >= file_base_ && end <= file_base_ + file_bytes_)
    got = mmap(want, n, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED_NOREPLACE, fd_, off_t(first - file_base_));
  else
    got = mmap(want, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
  if (got == want) return true;
  if (got != MAP_FAILED) {
    munmap(got, n);
    errno = EEXIST;
  }
  return false;
}

uint64_t Mirrors::live_registration_align(const void* host, uint64_t size) const {
  const uint64_t ps = page_size();
  return fd_ >= 0 && reinterpret_cast<uint64_t>(host) % ps == 0 && size % ps == 0 && size > 0 ? ps : 0;
}

bool Mirrors::map_registered(uint64_t dev, uint8_t* host, uint64_t size) {
  if (!live_registration_align(host, size) || dev % page_size() != 0 || dev < file_base_ ||
      dev + size > file_base_ + file_bytes_)
    return false;
  const off_t at = off_t(dev - file_base_);
  for (uint64_t done = 0; done < size;) {
    const ssize_t n = pwrite(fd_, host + done, size_t(size - done), at + off_t(done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += uint64_t(n);
  }
  // The file now holds the program's bytes: its pages replace the program's.
  return mmap(host, size_t(size), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd_, at) == host;
}

void Mirrors::unmap_registered(const Range& r) {
  void* fresh = mmap(nullptr, size_t(r.size), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (fresh == MAP_FAILED) return;  // the program keeps the file's pages: same bytes, still valid
  std::memcpy(fresh, r.host, size_t(r.size));
  if (mremap(fresh, size_t(r.size), size_t(r.size), MREMAP_MAYMOVE | MREMAP_FIXED, r.host) == MAP_FAILED)
    munmap(fresh, size_t(r.size));
}

void Mirrors::map_pages(uint64_t dev, uint64_t size) {
  const uint64_t ps = page_size();
  const uint64_t first = dev / ps * ps, end = (dev + std::max<uint64_t>(size, 1) + ps - 1) / ps * ps;
  // Runs of pages no range maps yet, one mmap each; pages other ranges
  // share are counted once more.
  std::vector<std::pair<uint64_t, uint64_t>> runs;  // mapped here, for an undo
  for (uint64_t p = first; p < end;) {
    if (pages_.count(p)) {
      p += ps;
      continue;
    }
    uint64_t q = p + ps;
    while (q < end && !pages_.count(q)) q += ps;
    if (!map_run(p, q)) {
      const int err = errno;
      for (auto [a, b] : runs) munmap(reinterpret_cast<void*>(a), size_t(b - a));
      throw client::Error(cudaErrorMemoryAllocation,
                          "managed and mapped memory live on the host at their device address, but host address " +
                              hex(p) + " is taken (" + std::strerror(err) +
                              "); the program's own mappings overlap the device's global window");
    }
    runs.push_back({p, q});
    p = q;
  }
  for (uint64_t p = first; p < end; p += ps) pages_[p]++;
}

void Mirrors::unmap_pages(uint64_t dev, uint64_t size) {
  const uint64_t ps = page_size();
  const uint64_t first = dev / ps * ps, end = (dev + std::max<uint64_t>(size, 1) + ps - 1) / ps * ps;
  uint64_t run = 0;  // start of a run of pages to unmap, 0: none
  auto flush = [&](uint64_t upto) {
    if (run) munmap(reinterpret_cast<void*>(run), size_t(upto - run));
    run = 0;
  };
  for (uint64_t p = first; p < end; p += ps) {
    auto it = pages_.find(p);
    if (it != pages_.end() && --it->second == 0) {
      pages_.erase(it);
      if (!run) run = p;
    } else {
      flush(p);
    }
  }
  flush(end);
}

void Mirrors::add(uint64_t dev, void* host, uint64_t size, Kind kind, unsigned flags, bool host_current) {
  std::lock_guard<std::mutex> g(mu_);
  if (!host) map_pages(dev, size);
  Range r;
  r.dev = dev;
  r.host = host ? static_cast<uint8_t*>(host) : reinterpret_cast<uint8_t*>(dev);
  r.size = size;
  r.kind = kind;
  r.flags = flags;
  r.live = host ? kind == Registered && map_registered(dev, r.host, size)
               : fd_ >= 0 && dev >= file_base_ && dev + size <= file_base_ + file_bytes_;
  r.host_current = r.live || host_current;
  ranges_[dev] = r;
  count_ = ranges_.size();
  if (!r.live) ++mirrored_;
}

std::optional<Mirrors::Range> Mirrors::remove(uint64_t dev) {
  std::lock_guard<std::mutex> g(mu_);
  auto it = ranges_.find(dev);
  if (it == ranges_.end()) return std::nullopt;
  Range r = it->second;
  ranges_.erase(it);
  count_ = ranges_.size();
  if (!r.live) --mirrored_;
  if (r.host == reinterpret_cast<uint8_t*>(r.dev)) unmap_pages(r.dev, r.size);
  else if (r.live) unmap_registered(r);
  return r;
}

std::optional<Mirrors::Range> Mirrors::find_device(uint64_t addr) {
  if (empty()) return std::nullopt;
  std::lock_guard<std::mutex> g(mu_);
  auto it = ranges_.upper_bound(addr);
  if (it == ranges_.begin()) return std::nullopt;
  --it;
  const Range& r = it->second;
  if (addr >= r.dev && addr < r.dev + std::max<uint64_t>(r.size, 1)) return r;
  return std::nullopt;
}

std::optional<Mirrors::Range> Mirrors::find_host(const void* p) {
  if (empty()) return std::nullopt;
  std::lock_guard<std::mutex> g(mu_);
  auto* a = static_cast<const uint8_t*>(p);
  for (auto& [d, r] : ranges_)
    if (a >= r.host && a < r.host + std::max<uint64_t>(r.size, 1)) return r;
  return std::nullopt;
}

// Writes the host copy to the device: the pages that differ from what the
// device holds, or all of it when that is not known.
void Mirrors::push(client::Connection& c, Range& r) {
  if (!r.device_bytes) {
    if (r.size) c.write(r.dev, r.host, r.size);
    return;
  }
  const uint64_t chunk = page_size();
  const uint8_t* known = r.device_bytes->data();
  for (uint64_t off = 0; off < r.size;) {
    uint64_t n = std::min(chunk, r.size - off);
    if (std::memcmp(known + off, r.host + off, n) == 0) {
      off += n;
      continue;
    }
    uint64_t end = off + n;  // a run of changed pages, one write
    while (end < r.size) {
      uint64_t m = std::min(chunk, r.size - end);
      if (std::memcmp(known + end, r.host + end, m) == 0) break;
      end += m;
    }
    c.write(r.dev + off, r.host + off, end - off);
    off = end;
  }
}

bool Mirrors::overlaps(const Range& r, const Access& a) const {
  if (a.all) return true;
  uint64_t lo = a.device ? r.dev : reinterpret_cast<uint64_t>(r.host);
  return a.addr < lo + r.size && lo < a.addr + std::max<uint64_t>(a.n, 1);
}

std::unique_lock<std::mutex> Mirrors::prepare(client::Connection& c, std::initializer_list<Access> accesses) {
  if (mirrored_.load() == 0) return {};  // none, or all live: nothing moves, nothing to hold
  std::unique_lock<std::mutex> g(mu_);
  for (auto& [d, r] : ranges_) {
    if (r.live) continue;
    bool device = false, host = false, host_read = false, host_written = false, host_overwritten = false;
    for (const Access& a : accesses) {
      if (!overlaps(r, a)) continue;
      (a.device ? device : host) = true;
      if (a.device) continue;
      if (!a.written) {
        host_read = true;
        continue;
      }
      host_written = true;
      host_overwritten |= a.addr <= reinterpret_cast<uint64_t>(r.host) &&
                          a.addr + a.n >= reinterpret_cast<uint64_t>(r.host) + r.size;
    }
    if (device && host) {
      if (r.host_current) push(c, r);
      else if (r.size) c.read(r.host, r.dev, r.size);
      r.host_current = host_written;
      r.device_bytes.reset();
    } else if (host && !r.host_current && host_overwritten && !host_read) {
      r.host_current = true;  // nothing of the device copy survives the operation
      r.device_bytes.reset();
    } else if (device && r.host_current) {
      push(c, r);
      r.host_current = false;
      r.device_bytes.reset();  // the operation may change the device copy
    } else if (host && !device && !r.host_current) {
      if (r.size) c.read(r.host, r.dev, r.size);
      r.host_current = true;
      r.device_bytes = std::make_shared<std::vector<uint8_t>>(r.host, r.host + r.size);
    }
  }
  return g;
}

void Mirrors::clear() {
  std::lock_guard<std::mutex> g(mu_);
  for (auto& [d, r] : ranges_)
    if (r.live && r.host != reinterpret_cast<uint8_t*>(r.dev)) unmap_registered(r);
  for (auto& [p, n] : pages_) munmap(reinterpret_cast<void*>(p), page_size());
  pages_.clear();
  ranges_.clear();
  count_ = 0;
  mirrored_ = 0;
}

}  // namespace qgpu::cudart
