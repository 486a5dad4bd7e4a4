// A module loaded the way the daemon loads one, for the tools and the tests:
// PTX parsed, module variables placed in a global-memory image from the
// machine's global base (initialised, address relocations applied), and a
// bump allocator for the buffers of a launch.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "model_host/launch/launch.h"
#include "model_host/machine/isa.h"
#include "model_host/ptx/ir.h"

namespace qgpu::machine {

struct ModuleImage {
  std::string ptx;
  ptx::Module module;
  launch::GlobalMemory mem;
  std::map<std::string, uint64_t> symbols;

  // Allocates `bytes` (zeroed, 256-byte aligned) and returns the device address.
  // Throws std::length_error when global memory is exhausted.
  uint64_t alloc(uint32_t bytes);
};

ModuleImage load_module(std::string ptx_text, const Params& p);

// The PTX of a file: a .ptx file as is; a .cu file through `nvcc -ptx`.
std::string ptx_of_file(const std::string& path);

}  // namespace qgpu::machine
