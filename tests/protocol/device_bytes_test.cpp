// launch::DeviceBytes: the device memory's bytes, private or shared with
// another mapping of the same file (a client's live ranges).
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstring>
#include <stdexcept>
#include <string>

#include "model_host/launch/device_bytes.h"

using qgpu::launch::DeviceBytes;

namespace {

constexpr size_t kBytes = 1 << 20;

// A second mapping of the file, as a client opens it: through /proc.
uint8_t* map_again(int fd, size_t n) {
  const std::string path = "/proc/self/fd/" + std::to_string(fd);
  const int f = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (f < 0) return nullptr;
  void* p = mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_SHARED, f, 0);
  ::close(f);
  return p == MAP_FAILED ? nullptr : static_cast<uint8_t*>(p);
}

TEST(DeviceBytes, PrivateBytesHaveNoFile) {
  DeviceBytes d(kBytes);
  EXPECT_EQ(d.fd(), -1);
  d[7] = 9;
  d.resize(2 * kBytes);  // grows, keeping its bytes
  EXPECT_EQ(d[7], 9);
  EXPECT_EQ(d[kBytes + 7], 0);
}

TEST(DeviceBytes, SharedBytesAreTheSameBytesInEveryMapping) {
  DeviceBytes d = DeviceBytes::shared(kBytes);
  ASSERT_GE(d.fd(), 0);
  EXPECT_EQ(d.size(), kBytes);
  uint8_t* other = map_again(d.fd(), kBytes);
  ASSERT_NE(other, nullptr);
  for (size_t i = 0; i < kBytes; i += 4093) EXPECT_EQ(other[i], 0) << i;
  d[100] = 1;
  d[kBytes - 1] = 2;
  other[5000] = 3;  // the other side writes
  EXPECT_EQ(other[100], 1);
  EXPECT_EQ(other[kBytes - 1], 2);
  EXPECT_EQ(d[5000], 3);

  // zero(): every mapping reads zero again.
  d.zero();
  EXPECT_EQ(d[100], 0);
  EXPECT_EQ(other[100], 0);
  EXPECT_EQ(other[5000], 0);
  EXPECT_EQ(d[kBytes - 1], 0);

  // A copy is private; the file cannot grow (the other mapping would not).
  d[64] = 4;
  DeviceBytes copy = d;
  EXPECT_EQ(copy.fd(), -1);
  copy[64] = 5;
  EXPECT_EQ(other[64], 4);
  EXPECT_THROW(d.resize(kBytes + 1), std::length_error);
  d.resize(kBytes / 2);  // shrinking within the file zeroes the rest
  EXPECT_EQ(other[kBytes / 2 + 1], 0);
  // A moved-from object gives its file away.
  const int fd = d.fd();
  DeviceBytes moved = std::move(d);
  EXPECT_EQ(moved.fd(), fd);
  EXPECT_EQ(d.fd(), -1);
  munmap(other, kBytes);
}

}  // namespace
