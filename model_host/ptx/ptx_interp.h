// A PTX-level reference interpreter with CUDA semantics, used by the tests to
// check the lowering and the machine interpreter on the same programs.
//
// Execution model (deterministic):
//   * CTAs run one after another in launch order (x fastest, then y, z).
//   * Within a CTA, warps of 32 consecutive threads (by linear thread id)
//     run in order; each warp runs until every thread in it has exited or
//     waits at a barrier, then the next warp runs.  When no warp can run and
//     every live thread waits at a barrier, the barrier opens.
//   * A warp executes in lockstep with per-thread program counters: each step
//     runs one instruction for the threads whose call stack of PCs is
//     smallest (outer frames first, a shorter stack first); all of those
//     threads are the active mask for shuffles, votes and activemask.  Compiler
//     output places reconvergence points after divergent code, so diverged
//     threads meet again there.
//
//   * bar.sync/bar.red/barrier without a thread count wait for every live
//     thread of the CTA; bar.red combines the predicates of all of them.
//     With a count (bar.sync id, count; bar.arrive id, count) a barrier
//     completes when that many threads have arrived at its id (16 ids);
//     when every live thread waits and one waits at such a barrier, the
//     launch fails (deadlock).  Atomics apply in execution order.
//   * %clock/%clock64 count warp instructions executed so far.
//
// Device runtime calls: vprintf appends to LaunchResult::printf_output;
// __assertfail stops the launch with cudaErrorAssert (710) and CUDA's
// "file:line: function: block: [..], thread: [..] Assertion `..` failed."
// message.  malloc/free manage the heap InterpOptions gives (a first-fit
// list of free blocks kept in the heap itself, so it lasts across launches).
// Other external functions are not supported.  A function's address is
// ptx::function_address (layout.h), as on every backend.
//
// Addresses: global and const variables live in `mem` at the addresses
// `symbols` gives; shared, local and kernel-parameter memory appear in the
// generic address space at fixed windows (see ptx_interp.cpp).  An access
// outside every window fails with cudaErrorIllegalAddress (700).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "model_host/launch/launch.h"
#include "model_host/ptx/ir.h"

namespace qgpu::ptx {

struct InterpOptions {
  // Warp instructions after which the launch fails with
  // cudaErrorLaunchTimeout (702).
  uint64_t max_steps = uint64_t(1) << 30;
  // The device heap of malloc/free: `heap_bytes` of `mem` from heap_base
  // (zero before its first use); none: malloc returns NULL.
  uint64_t heap_base = 0;
  uint64_t heap_bytes = 0;
  // A cooperative launch's grid workspace (launch::LaunchRequest): %envreg1
  // reads its high word, %envreg2 its low word; 0 otherwise.
  uint64_t grid_workspace = 0;
};

// Runs `kernel` of `module` to completion.  `params` is the parameter buffer
// laid out as the .entry signature says (layout.h); `mem` is read and updated
// in place.  Never throws for a fault of the program: faults come back as a
// CUDA error code and a message naming the instruction, its line, the thread
// and the block.
launch::LaunchResult run(const Module& module, std::string_view kernel, launch::Dim3 grid,
                         launch::Dim3 block, uint32_t dynamic_smem,
                         const std::vector<uint8_t>& params,
                         const std::map<std::string, uint64_t>& symbols,
                         launch::GlobalMemory& mem, const InterpOptions& options = {});

}  // namespace qgpu::ptx
