// launch::place_module: the loader the daemon, the tools and the tests share.
#include "model_host/launch/module.h"

#include <gtest/gtest.h>

#include <map>
#include <set>

namespace qgpu::launch {
namespace {

// A device of `size` bytes at 0x1000 with a first-fit bump allocator that
// remembers which ranges are live, and its bytes.
struct TestDevice {
  uint64_t base = 0x1000, size;
  uint64_t next = 0;
  std::set<uint64_t> live;
  std::map<uint64_t, uint8_t> bytes;  // written bytes only
  int writes = 0;
  explicit TestDevice(uint64_t s) : size(s) {}
  ModuleMemory memory() {
    ModuleMemory m;
    m.allocate = [this](uint64_t n, uint32_t align) -> std::optional<uint64_t> {
      const uint64_t at = (next + align - 1) / align * align;
      if (at + n > size) return std::nullopt;
      next = at + n;
      live.insert(base + at);
      return base + at;
    };
    m.release = [this](uint64_t a) { EXPECT_EQ(live.erase(a), 1u) << "released twice or never allocated: " << a; };
    m.write = [this](uint64_t a, const uint8_t* p, uint64_t n) {
      ++writes;
      for (uint64_t i = 0; i < n; ++i) bytes[a + i] = p[i];
    };
    m.out_of_memory_hint = "try a bigger device";
    return m;
  }
  uint64_t u64(uint64_t a) const {
    uint64_t v = 0;
    for (int i = 7; i >= 0; --i) v = v << 8 | bytes.at(a + i);
    return v;
  }
};

ModuleVar var(std::string name, uint64_t size, uint32_t align, std::vector<uint8_t> init = {}) {
  ModuleVar v;
  v.name = std::move(name);
  v.space = "global";
  v.size = size;
  v.align = align;
  v.init = std::move(init);
  return v;
}

TEST(ModuleLoader, PlacesInitialisesAndRelocates) {
  ModuleInfo info;
  info.vars.push_back(var("table", 24, 8));  // three pointers, filled by relocations
  info.vars.push_back(var("a", 3, 1, {7, 8}));  // init shorter than the variable: the rest is zero
  info.vars.push_back(var("b", 16, 16));
  info.vars[0].relocs.push_back({0, 8, "a", 0});
  info.vars[0].relocs.push_back({8, 8, "b", 12});
  info.vars[0].relocs.push_back({16, 4, "table", -4});  // a 4-byte address of itself
  TestDevice dev(4096);
  const PlacedModule placed = place_module(info, dev.memory());
  ASSERT_TRUE(placed) << placed.message;
  ASSERT_EQ(placed.symbols.size(), 3u);
  const uint64_t table = placed.symbols.at("table"), a = placed.symbols.at("a"), b = placed.symbols.at("b");
  EXPECT_EQ(table % 8, 0u);
  EXPECT_EQ((b - dev.base) % 16, 0u);
  EXPECT_EQ(dev.live.size(), 3u);
  EXPECT_EQ(dev.u64(table), a);
  EXPECT_EQ(dev.u64(table + 8), b + 12);
  const uint64_t self = table - 4;
  for (int i = 0; i < 4; ++i) EXPECT_EQ(dev.bytes.at(table + 16 + i), uint8_t(self >> (8 * i)));
  for (int i = 4; i < 8; ++i) EXPECT_EQ(dev.bytes.at(table + 16 + i), 0u);
  EXPECT_EQ(dev.bytes.at(a), 7u);
  EXPECT_EQ(dev.bytes.at(a + 1), 8u);
  EXPECT_EQ(dev.bytes.at(a + 2), 0u);
  for (int i = 0; i < 16; ++i) EXPECT_EQ(dev.bytes.at(b + i), 0u);
  EXPECT_EQ(dev.writes, 3) << "one write per variable (each write is a record on the model)";
}

TEST(ModuleLoader, RefusesARelocationToNoVariableAndFreesEverything) {
  ModuleInfo info;
  info.vars.push_back(var("p", 8, 8));
  info.vars.push_back(var("q", 8, 8));
  info.vars[1].relocs.push_back({0, 8, "missing", 0});
  TestDevice dev(4096);
  const PlacedModule placed = place_module(info, dev.memory());
  EXPECT_FALSE(placed);
  EXPECT_EQ(placed.error, kInvalidPtx);
  EXPECT_NE(placed.message.find("'missing'"), std::string::npos) << placed.message;
  EXPECT_TRUE(dev.live.empty());
  EXPECT_EQ(dev.writes, 0);
}

TEST(ModuleLoader, RefusesARelocationOutsideItsVariable) {
  ModuleInfo info;
  info.vars.push_back(var("p", 8, 8));
  info.vars[0].relocs.push_back({4, 8, "p", 0});
  TestDevice dev(4096);
  const PlacedModule placed = place_module(info, dev.memory());
  EXPECT_EQ(placed.error, kInvalidPtx);
  EXPECT_NE(placed.message.find("outside the variable's 8 bytes"), std::string::npos) << placed.message;
  EXPECT_TRUE(dev.live.empty());
}

TEST(ModuleLoader, RefusesWhatDoesNotFitAndFreesWhatWasPlaced) {
  ModuleInfo info;
  info.vars.push_back(var("small", 100, 4));
  info.vars.push_back(var("big", 4000, 4));
  TestDevice dev(4096);
  const PlacedModule placed = place_module(info, dev.memory());
  EXPECT_EQ(placed.error, kMemoryAllocation);
  EXPECT_NE(placed.message.find("'big' (4000 bytes)"), std::string::npos) << placed.message;
  EXPECT_NE(placed.message.find("try a bigger device"), std::string::npos) << placed.message;
  EXPECT_TRUE(dev.live.empty());
  EXPECT_TRUE(placed.symbols.empty());
}

TEST(ModuleLoader, CountsConstantBytes) {
  ModuleInfo info;
  info.vars.push_back(var("g", 100, 4));
  info.vars.push_back(var("c1", 40, 4));
  info.vars.back().space = "const";
  info.vars.push_back(var("c2", 2, 4));
  info.vars.back().space = "const";
  EXPECT_EQ(constant_bytes(info), 42u);
}

}  // namespace
}  // namespace qgpu::launch
