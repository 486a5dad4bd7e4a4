// Stage 1 of the machine circuit: context.  The token's fields, and one-row
// memories that keep what earlier tokens said: the current block, thread,
// CTA, barrier epoch, launch shape, the ROM row being loaded and the tokens
// before; from them the block this pass runs and which pass it is
// (docs/tokens.md section 4).
#pragma once

#include "model_host/machine_circuit/builder.h"

#include <array>

namespace qgpu::gpu::mc {

// Which pass a token is (docs/tokens.md section 4).
enum PassKind { kOther, kExec, kHi, kCtrl, kWarp, kStart, kToWarp0, kToEnd, kWmin, kPassCount };

struct Context {
  Digits P;                     // this token's payload nibbles p0..p3
  ValueId one = -1;             // the constant 1 (a write enable that always holds)
  ValueId is_cta = -1;
  ValueId falls = -1;           // fall-through values since the last EXEC, VX or WARPS (0..kFallChain)
  ValueId prev_kind = -1, prev_falls = -1;
  Digits prevP, prev2P;         // the payloads of the tokens 1 and 2 back
  Digits cur_w, cur_c;          // the thread (3 nibbles), the CTA (4)
  ValueId epoch = -1;           // the barrier epoch
  Digits n_threads, n_ctas;     // the launch shape
  ValueId local_log = -1;       // c = ceil(log2 NT): the local store's split
  Digits rom_sel;               // the ROM row being loaded
  Digits cur_pc, next_pc;       // the block this pass runs, and the one after
  Digits start_pc;              // the block the EXEC after the last WARP named (WARPS runs it)
  ValueId may_fall = -1;        // one more fall-through value may follow
  ValueId pass = -1;            // PassKind
  ValueId is_exec = -1, is_ctrl = -1;
  ValueId is_vhi = -1;          // the high half of a value: D after VLO, or DF
};

// The fields (kind, p0..p3) and every circuit token; sets b.kind and b.pay.
void declare_tokens(Builder& b);
Context context_stage(Builder& b);

}  // namespace qgpu::gpu::mc
