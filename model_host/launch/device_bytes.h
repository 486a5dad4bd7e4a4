// DeviceBytes: the bytes of a device memory, mapped lazily.
#pragma once

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <new>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace qgpu::launch {

// The bytes of a device memory: zero-filled and backed lazily by anonymous
// memory mapped without reserving swap (MAP_NORESERVE), so a 2 GiB device
// costs only the pages a program touches.  The interface is the part of
// std::vector<uint8_t> the backends use; growing keeps the contents and
// zero-fills the new bytes, and zero() drops every page (no memset).
//
// shared(n) backs the bytes by a memfd instead, mapped MAP_SHARED: another
// process that maps the same file (a client through /proc/<pid>/fd/<fd>)
// sees every byte as the device does, while it changes.  Such bytes cannot
// grow past n (the other mappings would not follow); their copies are
// private, anonymous ones.
class DeviceBytes {
 public:
  DeviceBytes() = default;
  explicit DeviceBytes(size_t n, uint8_t value = 0);
  DeviceBytes(const std::vector<uint8_t>& v);  // NOLINT: a vector is an image too
  // n zero bytes in a memfd (sealed at that size), mapped shared; throws
  // std::bad_alloc when the file cannot be made.
  static DeviceBytes shared(size_t n);
  DeviceBytes(const DeviceBytes& o);
  DeviceBytes(DeviceBytes&& o) noexcept;
  DeviceBytes& operator=(const DeviceBytes& o);
  DeviceBytes& operator=(DeviceBytes&& o) noexcept;
  ~DeviceBytes();

  uint8_t* data() { return p_; }
  const uint8_t* data() const { return p_; }
  size_t size() const { return n_; }
  bool empty() const { return n_ == 0; }
  size_t capacity() const { return cap_; }
  uint8_t& operator[](size_t i) { return p_[i]; }
  const uint8_t& operator[](size_t i) const { return p_[i]; }
  uint8_t* begin() { return p_; }
  uint8_t* end() { return p_ + n_; }
  const uint8_t* begin() const { return p_; }
  const uint8_t* end() const { return p_ + n_; }
  operator std::span<const uint8_t>() const { return {p_, n_}; }  // NOLINT
  std::vector<uint8_t> vector() const { return {p_, p_ + n_}; }

  void reserve(size_t n);
  void resize(size_t n, uint8_t value = 0);
  void assign(size_t n, uint8_t value);
  void clear() { n_ = 0; }
  // Every byte zero again, the pages given back to the system.
  void zero();
  // Resident bytes (pages touched), for tests of the lazy backing.
  size_t resident_bytes() const;
  // The memfd of shared(), -1 otherwise.
  int fd() const { return fd_; }

  bool operator==(const DeviceBytes& o) const;

 private:
  uint8_t* p_ = nullptr;
  size_t n_ = 0, cap_ = 0;
  int fd_ = -1;
};

// ---- implementation ---------------------------------------------------------

namespace detail {
inline uint8_t* map_zeroed(size_t n) {
  if (n == 0) return nullptr;
  void* p = mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) throw std::bad_alloc();
  return static_cast<uint8_t*>(p);
}
inline void unmap(uint8_t* p, size_t n) {
  if (p) munmap(p, n);
}
}  // namespace detail

inline DeviceBytes DeviceBytes::shared(size_t n) {
  DeviceBytes d;
  if (n == 0) return d;
  const int fd = memfd_create("qgpu-device-memory", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  void* p = MAP_FAILED;
  if (fd >= 0 && ftruncate(fd, off_t(n)) == 0 && fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) == 0)
    p = mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, fd, 0);
  if (p == MAP_FAILED) {
    if (fd >= 0) close(fd);
    throw std::bad_alloc();
  }
  d.p_ = static_cast<uint8_t*>(p);
  d.n_ = d.cap_ = n;
  d.fd_ = fd;
  return d;
}

inline DeviceBytes::DeviceBytes(size_t n, uint8_t value) : p_(detail::map_zeroed(n)), n_(n), cap_(n) {
  if (value) std::memset(p_, value, n);
}
inline DeviceBytes::DeviceBytes(const std::vector<uint8_t>& v) : DeviceBytes(v.size()) {
  if (!v.empty()) std::memcpy(p_, v.data(), v.size());
}
inline DeviceBytes::DeviceBytes(const DeviceBytes& o) : DeviceBytes(o.n_) {
  if (o.n_) std::memcpy(p_, o.p_, o.n_);
}
inline DeviceBytes::DeviceBytes(DeviceBytes&& o) noexcept
    : p_(std::exchange(o.p_, nullptr)), n_(std::exchange(o.n_, 0)), cap_(std::exchange(o.cap_, 0)),
      fd_(std::exchange(o.fd_, -1)) {}
inline DeviceBytes& DeviceBytes::operator=(const DeviceBytes& o) {
  if (this != &o) {
    if (cap_ >= o.n_ && cap_ > 0) {
      // Reuse the mapping: bytes past the copy must read zero when grown again.
      if (o.n_) std::memcpy(p_, o.p_, o.n_);
      if (n_ > o.n_) std::memset(p_ + o.n_, 0, n_ - o.n_);
      n_ = o.n_;
    } else {
      DeviceBytes t(o);
      *this = std::move(t);
    }
  }
  return *this;
}
inline DeviceBytes& DeviceBytes::operator=(DeviceBytes&& o) noexcept {
  if (this != &o) {
    detail::unmap(p_, cap_);
    if (fd_ >= 0) close(fd_);
    p_ = std::exchange(o.p_, nullptr);
    n_ = std::exchange(o.n_, 0);
    cap_ = std::exchange(o.cap_, 0);
    fd_ = std::exchange(o.fd_, -1);
  }
  return *this;
}
inline DeviceBytes::~DeviceBytes() {
  detail::unmap(p_, cap_);
  if (fd_ >= 0) close(fd_);
}

inline void DeviceBytes::reserve(size_t n) {
  if (n <= cap_) return;
  if (fd_ >= 0) throw std::length_error("shared device memory cannot grow past its " + std::to_string(cap_) + " bytes");
  uint8_t* q = detail::map_zeroed(n);
  if (n_) std::memcpy(q, p_, n_);
  detail::unmap(p_, cap_);
  p_ = q;
  cap_ = n;
}
// Invariant: the bytes in [n_, cap_) are zero (shrinking zeroes them), so
// growing inside the mapping writes only non-zero fill values.
inline void DeviceBytes::resize(size_t n, uint8_t value) {
  if (n > cap_) reserve(std::max(n, cap_ * 2));
  if (n > n_) {
    if (value) std::memset(p_ + n_, value, n - n_);
  } else if (n < n_) {
    std::memset(p_ + n, 0, n_ - n);
  }
  n_ = n;
}
inline void DeviceBytes::assign(size_t n, uint8_t value) {
  zero();
  n_ = 0;
  resize(n, value);
}
inline void DeviceBytes::zero() {
  if (!p_) return;
  const size_t page = size_t(sysconf(_SC_PAGESIZE));
  if (fd_ >= 0) {  // the file's pages freed: every mapping of it reads zero again
    if (fallocate(fd_, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, off_t(cap_)) == 0) return;
  } else if (cap_ >= 16 * page && madvise(p_, cap_, MADV_DONTNEED) == 0) {
    return;  // private anonymous: reads zero again
  }
  std::memset(p_, 0, n_);
}
inline size_t DeviceBytes::resident_bytes() const {
  if (!p_) return 0;
  const size_t page = size_t(sysconf(_SC_PAGESIZE));
  const size_t pages = (cap_ + page - 1) / page;
  std::vector<unsigned char> v(pages);
  if (mincore(p_, cap_, v.data()) != 0) return 0;
  size_t n = 0;
  for (unsigned char c : v) n += c & 1;
  return n * page;
}
inline bool DeviceBytes::operator==(const DeviceBytes& o) const {
  return n_ == o.n_ && (n_ == 0 || std::memcmp(p_, o.p_, n_) == 0);
}

}  // namespace qgpu::launch
