// The per-client allocator inside the machine's global window.
#include <gtest/gtest.h>

#include "model_host/daemon/allocator.h"

using qgpu::daemon::Allocator;

TEST(Allocator, FirstFitAlignedAndBounded) {
  Allocator a(0x10000000, 4096);
  auto x = a.allocate(100), y = a.allocate(256), z = a.allocate(1);
  ASSERT_TRUE(x && y && z);
  EXPECT_EQ(*x, 0x10000000u);
  EXPECT_EQ(*y, 0x10000100u);  // 256-byte alignment after a 100-byte block
  EXPECT_EQ(*z, 0x10000200u);
  EXPECT_FALSE(a.allocate(4096));  // larger than what is left
  EXPECT_FALSE(a.allocate(0));
  EXPECT_TRUE(a.release(*y));
  EXPECT_FALSE(a.release(*y));  // twice
  EXPECT_FALSE(a.release(*x + 4));  // not a block start
  auto w = a.allocate(200);  // reuses the hole
  ASSERT_TRUE(w);
  EXPECT_EQ(*w, 0x10000100u);
  EXPECT_EQ(a.used(), 100u + 200u + 1u);
  EXPECT_EQ(a.largest_free(), 4096u - 0x201u);  // after the block of 1 byte at 0x200
}

TEST(Allocator, WholeWindowAndExhaustion) {
  Allocator a(0x10000000, 4096);
  auto all = a.allocate(4096);
  ASSERT_TRUE(all);
  EXPECT_EQ(a.largest_free(), 0u);
  EXPECT_FALSE(a.allocate(1));
  a.release(*all);
  EXPECT_EQ(a.largest_free(), 4096u);
  int n = 0;
  while (a.allocate(1)) ++n;
  EXPECT_EQ(n, 4096 / 256);
}

TEST(Allocator, RangeChecksNameTheProblem) {
  Allocator a(0x10000000, 4096);
  auto x = *a.allocate(64);
  EXPECT_EQ(a.check_range(x, 64), "");
  EXPECT_EQ(a.check_range(x + 60, 4), "");
  EXPECT_NE(a.check_range(x + 60, 5).find("runs past the end"), std::string::npos);
  EXPECT_NE(a.check_range(x + 64, 1).find("not inside any live allocation"), std::string::npos);
  EXPECT_NE(a.check_range(0x0fffff00, 4).find("not inside any live allocation"), std::string::npos);
  EXPECT_NE(a.check_range(x, ~0ull).find("runs past the end"), std::string::npos);
  a.release(x);
  EXPECT_NE(a.check_range(x, 4).find("not inside any live allocation"), std::string::npos);
}
