// The Device fixture of the NVRTC device tests: kernels compiled by our
// NVRTC, parsed by the PTX front end and run on the PTX-level reference
// interpreter over a small global memory.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "model_host/ptx/layout.h"
#include "model_host/ptx/parse.h"
#include "model_host/ptx/ptx_interp.h"
#include "nvrtc_harness.h"

namespace qgpu::test {

using qgpu::launch::Dim3;
using qgpu::launch::LaunchResult;

class Device : public ::testing::Test {
 protected:
  static constexpr uint64_t kBase = 0x10000000;

  // Compiles `source`, parses the PTX and places the module's variables.
  void build(const std::string& source, const std::vector<const char*>& options = {}) {
    qgpu::test::Compiled c = qgpu::test::compile(source, options);
    ASSERT_EQ(c.result, NVRTC_SUCCESS) << c.log;
    module_ = qgpu::ptx::parse(c.ptx);
    for (const auto& v : qgpu::ptx::module_info(module_).vars) {
      uint64_t addr = alloc(v.size, v.align);
      std::copy(v.init.begin(), v.init.end(), mem_.bytes.begin() + (addr - kBase));
      symbols_[v.name] = addr;
    }
  }

  uint64_t alloc(uint64_t size, uint64_t align = 16) {
    used_ = (used_ + align - 1) / align * align;
    uint64_t addr = kBase + used_;
    used_ += size;
    EXPECT_LE(used_, mem_.bytes.size());
    return addr;
  }

  template <typename T>
  uint64_t put(const std::vector<T>& values) {
    uint64_t addr = alloc(values.size() * sizeof(T));
    std::memcpy(mem_.bytes.data() + (addr - kBase), values.data(), values.size() * sizeof(T));
    return addr;
  }

  template <typename T>
  std::vector<T> get(uint64_t addr, size_t count) {
    std::vector<T> out(count);
    std::memcpy(out.data(), mem_.bytes.data() + (addr - kBase), count * sizeof(T));
    return out;
  }

  // Launches `kernel` with arguments packed as its .entry signature says.
  template <typename... Args>
  LaunchResult launch(const std::string& kernel, Dim3 grid, Dim3 block, Args... args) {
    const qgpu::ptx::Function* fn = module_.find_function(kernel);
    EXPECT_NE(fn, nullptr) << kernel;
    if (!fn) return {};
    auto layout = qgpu::ptx::param_layout(*fn);
    EXPECT_EQ(layout.size(), sizeof...(Args));
    std::vector<uint8_t> params(layout.empty() ? 0 : layout.back().offset + layout.back().size);
    size_t i = 0;
    auto pack = [&](const auto& arg) {
      EXPECT_EQ(layout[i].size, sizeof arg);
      std::memcpy(params.data() + layout[i].offset, &arg, sizeof arg);
      ++i;
    };
    (pack(args), ...);
    return qgpu::ptx::run(module_, kernel, grid, block, 0, params, symbols_, mem_);
  }

  uint64_t symbol(const std::string& name) { return symbols_.at(name); }

 private:
  qgpu::launch::GlobalMemory mem_{kBase, std::vector<uint8_t>(1 << 16)};
  uint64_t used_ = 0;
  qgpu::ptx::Module module_;
  std::map<std::string, uint64_t> symbols_;
};

inline std::vector<uint32_t> test_words(size_t n) {
  std::vector<uint32_t> v(n);
  uint64_t s = 0x9e3779b97f4a7c15ull;
  for (size_t i = 0; i < n; ++i) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    v[i] = uint32_t(s >> 32);
  }
  // Edge values the intrinsics treat specially.
  v[0] = 0, v[1] = 0, v[2] = 0xffffffffu, v[3] = 1, v[4] = 0x80000000u, v[5] = 0x7fffffffu;
  return v;
}

}  // namespace qgpu::test
