// The machine as the rest of model_host sees it: its limits (what device
// queries report and what the daemon enforces), the module front end, and the
// reference-interpreter backend.  Implemented in model_host/machine and
// model_host/ptx; the parameters themselves are defined once, in the machine
// definition, and read from there.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "model_host/engine/backend.h"
#include "model_host/machine/isa.h"

namespace qgpu::machine {

struct Limits {
  uint32_t lanes;                 // lanes per machine warp
  uint32_t warp_size;             // what programs see: always 32
  uint32_t registers;             // usable 32-bit registers per lane
  uint32_t rom_blocks;            // program ROM capacity in blocks
  uint64_t global_base;           // device address of global byte 0
  uint32_t global_bytes;          // global memory (all allocations and module variables)
  uint32_t shared_bytes_per_cta;  // static + dynamic __shared__ per CTA
  uint32_t max_threads_per_cta;
  uint32_t max_ctas_per_grid;     // total CTAs of one launch
  uint32_t max_grid[3];
  uint32_t max_block[3];
};

// The default machine's limits, and any machine's.
const Limits& limits();
Limits limits(const Params&);

// Parses a PTX module and reports its variables and kernel signatures.
// Throws std::runtime_error naming the line on malformed PTX.
engine::ModuleInfo inspect_module(const std::string& ptx);

// Which machine the interpreter backend runs: the default machine
// (backend "interpreter"), or the model's machine (model_params(), lowered
// with LowerOptions::for_model; backend "interpreter-model"), which runs
// exactly the programs and schedule the model backend runs, on the
// interpreter.
enum class MachineKind { Default, Model };

// The reference machine.  Lowers the kernel (cached per module), runs it
// deterministically, and fails a launch it cannot run with a CUDA error whose
// message names the instruction or limit.
std::unique_ptr<engine::Backend> make_interpreter_backend(MachineKind machine = MachineKind::Default);

}  // namespace qgpu::machine
