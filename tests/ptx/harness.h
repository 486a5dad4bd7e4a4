// Helpers shared by the PTX tests: reading the generated PTX, a flat device
// memory with a bump allocator and module variables, and kernel parameter
// packing by the .entry layout.
#pragma once

#include "build_paths.h"   // qgpu_paths() in CMakeLists.txt

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "model_host/ptx/layout.h"
#include "model_host/ptx/parse.h"
#include "model_host/ptx/ptx_interp.h"

namespace qgpu::ptx::test {

inline std::string read_text(const std::string& path) {
  std::ifstream f(path);
  if (!f) throw std::runtime_error("cannot open " + path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

inline std::string generated_ptx(const std::string& name) {
  return read_text(std::string(QGPU_TEST_PTX_DIR) + "/" + name);
}

// Device global memory: 1 MiB at 0x10000000, bump-allocated.
struct Device {
  launch::GlobalMemory mem{0x10000000, std::vector<uint8_t>(1 << 20, 0)};
  uint64_t used = 0;
  std::map<std::string, uint64_t> symbols;

  uint64_t alloc(uint64_t n, uint64_t align = 256) {
    used = (used + align - 1) / align * align;
    uint64_t a = mem.base + used;
    used += n;
    if (used > mem.bytes.size()) throw std::runtime_error("test device memory exhausted");
    return a;
  }
  template <class T>
  uint64_t upload(const std::vector<T>& v) {
    uint64_t a = alloc(v.size() * sizeof(T) + 1);
    std::memcpy(&mem.bytes[a - mem.base], v.data(), v.size() * sizeof(T));
    return a;
  }
  template <class T>
  std::vector<T> download(uint64_t a, size_t n) const {
    std::vector<T> v(n);
    std::memcpy(v.data(), &mem.bytes[a - mem.base], n * sizeof(T));
    return v;
  }
  template <class T>
  void poke(uint64_t a, T v) { std::memcpy(&mem.bytes[a - mem.base], &v, sizeof v); }

  // Allocates and initialises the module's .global/.const variables, then
  // patches address-of-symbol initializers.
  void load(const Module& m) {
    for (const launch::ModuleVar& v : module_info(m).vars) {
      uint64_t a = alloc(v.size ? v.size : 1, v.align);
      std::memcpy(&mem.bytes[a - mem.base], v.init.data(), v.init.size());
      symbols[v.name] = a;
    }
    for (const Var& v : m.vars)
      for (const Var::Reloc& r : v.relocs) {
        if (m.function_index(r.symbol)) continue;  // a function's address: module_info wrote it
        uint64_t target = symbols.at(r.symbol) + static_cast<uint64_t>(r.addend);
        std::memcpy(&mem.bytes[symbols.at(v.name) + r.offset - mem.base], &target, r.size);
      }
  }
};

// Packs kernel arguments at the offsets the .entry signature gives.
class Params {
 public:
  explicit Params(const Function& k) : k_(k) {
    uint64_t size = 0;
    for (const Var& p : k.params) size = std::max<uint64_t>(size, p.offset + p.size);
    bytes_.assign(size, 0);
  }
  template <class T>
  Params& arg(const T& v) {
    if (i_ >= k_.params.size()) throw std::runtime_error("too many arguments for " + k_.name);
    const Var& p = k_.params[i_++];
    if (p.size != sizeof(T)) throw std::runtime_error("argument size mismatch for " + p.name);
    std::memcpy(&bytes_[p.offset], &v, sizeof(T));
    return *this;
  }
  const std::vector<uint8_t>& bytes() const { return bytes_; }

 private:
  const Function& k_;
  size_t i_ = 0;
  std::vector<uint8_t> bytes_;
};

}  // namespace qgpu::ptx::test
