// Stage 5 of the machine circuit: the scheduler's state.  The thread table
// (per thread of the CTA how it stopped, the epoch it waits in and where it
// continues), whether the CTA waits at a barrier, the warp groups' running
// minimum and release pcs of `wbar` (WMIN tokens, docs/tokens.md section 4),
// and what the scan over threads and CTAs goes on to.
#pragma once

#include "model_host/machine_circuit/builder.h"
#include "model_host/machine_circuit/context.h"
#include "model_host/machine_circuit/registers.h"
#include "model_host/machine_circuit/rom.h"

namespace qgpu::gpu::mc {

struct Schedule {
  // The thread table is read at the thread a WARP token names, or on other
  // tokens at the thread after the current one.
  Digits ws_pc;                 // where that thread continues
  ValueId w_is_end = -1;        // WARP's thread is the CTA's thread count (the scan's end)
  ValueId runnable = -1;        // that thread may run
  ValueId warps_next = -1;      // where the current thread stops, the next is written WARPS
  ValueId barf = -1;            // some thread waits at the CTA's barrier
  ValueId wmin_pass = -1;       // this group's pass wrote a WMIN
  ValueId wmin_ws = -1;         // WARP's thread waits at a wbar below the group's minimum
  ValueId wmin_t = -1;          // this block's terminator target is below the minimum
  Digits w_next, cur_w_next, cta_next;
  ValueId cta_more = -1;        // another CTA follows
  ValueId cond_nz = -1;         // the branch condition (register port a) is not 0
  ValueId c_nz = -1;            // register port c is not 0 (a br's condition the C record names)
};

Schedule scheduler_stage(Builder& b, const Context& c, const Rom& r, const Registers& regs);

}  // namespace qgpu::gpu::mc
