// Memory layouts derived from a parsed module: kernel parameter buffers,
// per-kernel static shared memory, and the summary the daemon needs.
#pragma once

#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#include "model_host/launch/launch.h"
#include "model_host/ptx/ir.h"

namespace qgpu::ptx {

// The address of Module::functions[index] on every backend (function
// pointers, virtual tables): 16 bytes apart in a window no memory uses.
inline constexpr uint32_t kFunctionWindow = 0x03000000;
inline constexpr uint32_t function_address(uint32_t index) { return kFunctionWindow + 16 * index; }

// Shared memory of one kernel launch: every .shared variable the kernel can
// reach (its own body, module-scope variables it or any function it calls
// names), each at an aligned offset from the CTA's shared window.  Dynamic
// (`.extern .shared` unsized) variables all start at `dynamic_offset`, after
// the static ones.
struct SharedLayout {
  std::map<uint32_t, uint64_t> module_vars;                         // Module::vars index -> offset
  std::map<std::pair<uint32_t, uint32_t>, uint64_t> function_vars;  // (function, Function::vars index) -> offset
  uint32_t static_size = 0;
  uint32_t dynamic_offset = 0;  // 16-byte aligned
};
SharedLayout shared_layout(const Module& m, uint32_t kernel);

// The parameter buffer layout of a kernel (.entry): offsets are also stored in
// Function::params[i].offset by the parser.
std::vector<launch::KernelParam> param_layout(const Function& kernel);

// Module variables (.global/.const) and every kernel's parameters and static
// shared size, for the daemon.
launch::ModuleInfo module_info(const Module& m);

}  // namespace qgpu::ptx
