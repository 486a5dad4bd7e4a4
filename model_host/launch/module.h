// Placing a module's variables in device memory: the one loader the daemon,
// the tools and the tests share.
//
// A module's variables (launch::ModuleInfo, from ptx::module_info) are
// allocated one by one, zero-filled, given their initial bytes, and then
// their address-of-symbol initialisers are written, now that every variable
// has its address.  What a device cannot hold, or an initialiser that names
// no variable of the module or lies outside its variable, is refused with a
// CUDA error and a message; nothing stays allocated then.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "model_host/launch/errors.h"
#include "model_host/launch/launch.h"

namespace qgpu::launch {

// How a loader reaches its device memory.
struct ModuleMemory {
  // A range of `size` bytes aligned to `align`, or nullopt when none is free.
  std::function<std::optional<uint64_t>(uint64_t size, uint32_t align)> allocate;
  // Gives a range back (after a refused load).
  std::function<void(uint64_t addr)> release;
  // Writes bytes at a device address inside an allocated range.
  std::function<void(uint64_t addr, const uint8_t* bytes, uint64_t size)> write;
  // Appended to a refusal for lack of memory ("run it with ...").
  std::string out_of_memory_hint;
};

struct PlacedModule {
  CudaError error = kSuccess;
  std::string message;                        // why, when error != kSuccess
  std::map<std::string, uint64_t> symbols;    // variable name -> device address
  explicit operator bool() const { return error == kSuccess; }
};

// The bytes of __constant__ variables in a module.
inline uint64_t constant_bytes(const ModuleInfo& info) {
  uint64_t total = 0;
  for (const ModuleVar& v : info.vars)
    if (v.space == "const") total += v.size;
  return total;
}

inline PlacedModule place_module(const ModuleInfo& info, const ModuleMemory& mem) {
  PlacedModule out;
  auto refuse = [&](CudaError e, std::string why) {
    for (auto& [name, addr] : out.symbols) mem.release(addr);
    out.symbols.clear();
    out.error = e;
    out.message = std::move(why);
    return out;
  };
  for (const ModuleVar& v : info.vars) {
    const auto addr = mem.allocate(std::max<uint64_t>(v.size, 1), std::max<uint32_t>(v.align, 1));
    if (!addr)
      return refuse(kMemoryAllocation, "module variable '" + v.name + "' (" + std::to_string(v.size) +
                                           " bytes) does not fit in global memory" +
                                           (mem.out_of_memory_hint.empty() ? "" : "; " + mem.out_of_memory_hint));
    out.symbols[v.name] = *addr;
  }
  // Each variable's bytes: its initial bytes (zero where the module gives
  // none) and its address-of-symbol initialisers, now that every variable has
  // its address; written once (on the model every write is a record).
  std::vector<std::vector<uint8_t>> images;
  for (const ModuleVar& v : info.vars) {
    std::vector<uint8_t>& bytes = images.emplace_back(v.size, 0);
    std::memcpy(bytes.data(), v.init.data(), std::min<uint64_t>(v.init.size(), v.size));
    for (const Reloc& rel : v.relocs) {
      const auto target = out.symbols.find(rel.symbol);
      const std::string bad = target == out.symbols.end() ? "which the module does not define"
                              : rel.size > 8 || rel.offset + rel.size > v.size
                                  ? "outside the variable's " + std::to_string(v.size) + " bytes"
                                  : "";
      if (!bad.empty())
        return refuse(kInvalidPtx, "module variable '" + v.name + "' is initialised with the address of '" +
                                       rel.symbol + "', " + bad);
      const uint64_t value = target->second + uint64_t(rel.addend);
      for (uint32_t b = 0; b < rel.size; ++b) bytes[rel.offset + b] = uint8_t(value >> (8 * b));
    }
  }
  for (size_t i = 0; i < info.vars.size(); ++i)
    mem.write(out.symbols[info.vars[i].name], images[i].data(), images[i].size());
  return out;
}

}  // namespace qgpu::launch
