// Register allocation (README.md): linear scan over liveness intervals of
// virtual code into the machine's registers, spilling to local memory
// through kSpillScratch reserved registers.
#pragma once

#include <cstdint>
#include <vector>

#include "model_host/lower/vcode.h"

namespace qgpu::machine::lowering {

struct Allocation {
  std::vector<VI> code;  // on machine registers 0 .. regs - 1
  bool spilled = false;  // some value lives in local memory
};

// In: optimised virtual code and the machine's register count.  Spill slots
// are taken from per-thread local memory above `local_top`, which grows.
Allocation allocate(const VCode& vc, uint32_t regs, uint32_t& local_top);

}  // namespace qgpu::machine::lowering
