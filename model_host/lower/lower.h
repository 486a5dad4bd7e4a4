// Lowering: one PTX kernel, specialised for one launch configuration, to a
// machine Program (docs/isa.md, "Lowering").
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>

#include "model_host/launch/launch.h"
#include "model_host/machine/isa.h"
#include "model_host/ptx/ir.h"

namespace qgpu::machine {

// What the lowering specialises on.
struct LaunchShape {
  launch::Dim3 grid, block;
  uint32_t dynamic_smem = 0;
  std::map<std::string, uint64_t> symbols;  // module variables -> device address
  // The device heap that malloc/free manage (launch::LaunchRequest, docs/isa.md
  // "Device heap"): global memory the backend sets aside, zero before the
  // first launch that uses it.  heap_bytes 0: none, every malloc returns NULL.
  uint64_t heap_base = 0, heap_bytes = 0;
  // A cooperative launch's grid workspace: %envreg1 is its high word,
  // %envreg2 its low word (launch::LaunchRequest); 0 otherwise.
  uint64_t grid_workspace = 0;
};

// How much of the launch's grid a lowered program depends on (its CTA count
// aside: the interpreter takes that at launch).  The lowering reads the grid
// only for %ctaid, %nctaid and their cluster forms (and an assertion's
// message): a program that reads none of them is the same for every grid,
// and one that reads only %ctaid.x of a one-dimensional grid (the CTA index
// itself) the same for every one-dimensional grid.  A cache of lowered
// programs keys on what this says (same_lowering()).
enum class GridUse : uint8_t {
  None,   // nothing of the grid
  Flat,   // only that the grid is one-dimensional (y * z == 1)
  Exact,  // its three dimensions
};

// Whether a program lowered for grid `was`, depending on it as `use` says,
// is also the program lower() makes for grid `now` (everything else equal).
bool same_lowering(GridUse use, const launch::Dim3& was, const launch::Dim3& now);

// What lower() reports beside the program.
struct LowerInfo {
  GridUse grid = GridUse::None;
};

// A launch of `ctas` blocks beyond the machine (none, or more than
// Params::max_ctas): the LowerError lower() throws for it, else nothing.
// For a backend that reuses a program lowered for another grid.
void check_grid(const std::string& kernel, const launch::Dim3& grid, const Params& p);

// A kernel the machine cannot run.  `error` is the cudaError_t the launch
// fails with: cudaErrorInvalidValue (1) for a launch beyond the machine's
// limits, cudaErrorNotSupported (801) for an operation it does not have.
class LowerError : public std::runtime_error {
 public:
  LowerError(int error, const std::string& msg) : std::runtime_error(msg), error_(error) {}
  int error() const { return error_; }

 private:
  int error_;
};

// Generic addresses of the shared and local windows (docs/isa.md, "Memory").
inline constexpr uint32_t kSharedWindow = 0x01000000;
inline constexpr uint32_t kLocalWindow = 0x02000000;

// What the lowering produces beyond the block rules of docs/isa.md.
struct LowerOptions {
  // The model's machine (docs/tokens.md; Params::lanes must be 1): atomics
  // become a load, ALU operations and a store, 8/16-bit accesses become
  // 32-bit ones, mulhs becomes mulhu and a sign correction, and a block
  // whose instruction is a store does not end in `br`.
  bool for_model = false;
  // 64-bit division without its path for divisors below 2^32 (less code,
  // slower).  lower() lowers this way by itself when a program would not fit
  // the ROM otherwise.
  bool compact_division = false;
  // Loop-invariant code motion, of at most `max_hoisted` instructions
  // (innermost loops first).  When hoisting makes the register allocator
  // spill, lower() lowers again with half as many, down to none.
  bool hoist_invariants = true;
  uint32_t max_hoisted = UINT32_MAX;
  // Floating point as the machine's native float operations (isa.h,
  // OpKind::Float) where one covers the PTX instruction, instead of integer
  // sequences: for a machine with Params::native_float only (validate()
  // refuses them elsewhere).  f64 and f16/bf16 stay integer sequences.
  // Without it, on a machine with Params::native_rn (the model's: FFMA),
  // add, sub, mul, fma and mad .f32 (.rn or no rounding) without .ftz or
  // .sat are still one native op each (FFMA standing in for the others).
  bool native_float = false;
  // Device-side launches (the device runtime's __cudaCDP2* calls) append to
  // the launch queue in the device heap (launch::device_queue); a backend
  // that runs the queued grids sets it.  Otherwise such a call is refused
  // (cudaErrorNotSupported) naming the interpreter backend.
  bool device_launches = false;
  // The launch's parameter buffer, where the program is lowered for that one
  // launch (the model's: its prompt carries the ROM per launch): parameter
  // words read at constant offsets become immediates (optimize.h,
  // inline_parameters).  The buffer must outlive lower().
  const std::vector<uint8_t>* params = nullptr;
};

Program lower(const ptx::Module& m, const std::string& kernel, const LaunchShape& shape, const Params& p,
              const LowerOptions& opts = {}, LowerInfo* info = nullptr);

// The first thing in `prog` that the model's circuit does not execute
// (docs/tokens.md, section 1), named with its block and instruction, or
// nothing when the model can run the program.
std::optional<std::string> model_unsupported(const Program& prog);

}  // namespace qgpu::machine
