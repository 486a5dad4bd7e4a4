// Lowering PTX to machine blocks (docs/isa.md, "Lowering"; README.md): the
// driver that runs the passes in order.
//
//   1. instruction selection (isel.h): every PTX instruction becomes machine
//      operations on virtual registers; for the model's machine, the
//      operations its circuit does not have are then rewritten into ones it
//      has (model_expand.h);
//   2. optimisation (optimize.h): constant and known-bits folding, local
//      simplification, copy propagation, loop-invariant code motion,
//      unreachable and dead code removal;
//   3. register allocation (allocate.h): linear scan over liveness intervals
//      into the machine's registers, spilling to local memory;
//   4. block formation (blocks.h): straight-line code cut into blocks of at
//      most K instructions that obey the memory rule, each ending in one
//      control transfer.
//
// Two options are turned off when a program does not fit with them: the
// fast 64-bit division path when the program exceeds the ROM, hoisting
// (halved) when it made the allocator spill.  lower_once() says so in its
// result and lower() lowers again.
#include "model_host/lower/lower.h"

#include <variant>

#include "model_host/launch/errors.h"
#include "model_host/lower/allocate.h"
#include "model_host/lower/blocks.h"
#include "model_host/lower/isel.h"
#include "model_host/lower/model_expand.h"
#include "model_host/lower/optimize.h"

namespace qgpu::machine {
namespace {

using namespace lowering;

// A lowering to do again with fewer optimisations.
struct Relower {
  bool compact_division = false;
  uint32_t max_hoisted = UINT32_MAX;  // the cap to lower with (0: no hoisting)
};

// Passes 2 (optimisation); returns how many instructions were hoisted.
uint32_t optimize(VCode& vc, const Params& p, const LowerOptions& opts) {
  for (int round = 0; round < 3; ++round) {
    fold_constants(vc, p.lanes);
    if (round < 2) fold_known_bits(vc);
    simplify_local(vc);
    propagate_copies(vc);
  }
  uint32_t hoisted = 0;
  if (opts.hoist_invariants && opts.max_hoisted > 0 && (hoisted = hoist_invariants(vc, opts.max_hoisted)) > 0) {
    simplify_local(vc);  // the values hoisted beside each other, numbered
    propagate_copies(vc);
  }
  remove_unreachable(vc);
  remove_dead_code(vc);
  return hoisted;
}

std::variant<Program, Relower> lower_once(const ptx::Module& m, const std::string& kernel, const LaunchShape& shape,
                                          const Params& p, const LowerOptions& opts, LowerInfo& info) {
  Selection sel = Lowerer(m, shape, p, opts).select(kernel);
  info.grid = sel.grid_use;
  if (opts.for_model) expand_for_model(sel.vc);
  const uint32_t hoisted = optimize(sel.vc, p, opts);
  if (opts.params) {
    inline_parameters(sel.vc, *opts.params, p.param_bytes);
    remove_dead_code(sel.vc);
  }
  uint32_t local_top = sel.local_top;
  Allocation alloc = allocate(sel.vc, p.regs_for(sel.threads), local_top);
  if (alloc.spilled && hoisted > 0) return Relower{.max_hoisted = hoisted / 2};
  local_top = (local_top + 3) / 4 * 4;  // whole words: a byte access may be widened to its word
  const uint32_t threads = sel.threads;
  uint32_t cuda_warps = (threads + 31) / 32;
  uint32_t total = sel.scratch_base + (sel.scratch_used ? (cuda_warps * kScratchWords + 1) * 4 : 0);
  if (sel.mma_bytes) total = sel.mma_base + sel.mma_bytes;
  if (total > p.shared_bytes)
    throw LowerError(launch::kInvalidValue, "kernel " + kernel + " needs " + std::to_string(total) +
                                           " bytes of shared memory per block; the machine has " +
                                           std::to_string(p.shared_bytes));
  if (local_top > p.local_bytes_for(threads)) {
    std::string message = "kernel " + kernel + " needs " + std::to_string(local_top) +
                          " bytes of local memory per thread (variables and spilled registers); the machine has " +
                          std::to_string(p.local_bytes_for(threads)) +
                          (p.local_store_bytes ? " at " + std::to_string(threads) + " threads per block" : "");
    // Where local memory (and the register file) are split among a block's
    // threads, a smaller block may fit: too many resources for this launch,
    // as a GPU says when a block's registers exceed its register file.
    uint32_t fits = Params::thread_slots(threads) / 2;
    while (fits > 0 && p.local_bytes_for(fits) < local_top) fits /= 2;
    if (p.local_store_bytes == 0 || fits == 0) throw LowerError(launch::kInvalidValue, message);
    throw LowerError(launch::kLaunchOutOfResources,
                     message + " (local memory and registers are split among a block's threads: " +
                         std::to_string(p.local_bytes_for(fits)) + " bytes and " + std::to_string(p.regs_for(fits)) +
                         " registers each at up to " + std::to_string(fits) + " threads per block)");
  }
  Program prog = form_blocks(alloc.code, sel.vc.nlabels, p.block_instrs, opts.for_model);
  prog.kernel = kernel;
  prog.shared_bytes = total;
  prog.local_bytes = local_top;
  prog.threads = threads;
  prog.ctas = uint32_t(shape.grid.count());
  prog.ctas_in_order = sel.ctas_in_order;
  if (prog.blocks.size() > p.rom_blocks && sel.narrow_division) return Relower{.compact_division = true};
  if (prog.blocks.size() > p.rom_blocks)
    throw LowerError(launch::kNotSupported, "kernel " + kernel + " lowers to " + std::to_string(prog.blocks.size()) +
                                           " blocks; the machine's ROM holds " + std::to_string(p.rom_blocks));
  validate(prog, p);
  return prog;
}

}  // namespace

void check_grid(const std::string& kernel, const launch::Dim3& grid, const Params& p) {
  const uint64_t ctas = grid.count();
  if (ctas == 0 || ctas > p.max_ctas)
    throw LowerError(launch::kInvalidValue, "launch of " + kernel + " with " + std::to_string(ctas) +
                                           " blocks: the machine runs at most " + std::to_string(p.max_ctas) +
                                           " blocks per grid");
}

bool same_lowering(GridUse use, const launch::Dim3& was, const launch::Dim3& now) {
  switch (use) {
    case GridUse::None: return true;
    case GridUse::Flat: return was.y * was.z == 1 && now.y * now.z == 1;
    case GridUse::Exact: return was.x == now.x && was.y == now.y && was.z == now.z;
  }
  return false;
}

Program lower(const ptx::Module& m, const std::string& kernel, const LaunchShape& shape, const Params& p,
              const LowerOptions& opts, LowerInfo* info) {
  // Widened accesses and expanded atomics are atomic only when nothing runs
  // between a thread's consecutive instructions: one lane per warp.
  if (opts.for_model && p.lanes != 1)
    throw std::invalid_argument("lowering for the model needs a one-lane machine; Params::lanes is " +
                                std::to_string(p.lanes));
  LowerOptions o = opts;
  for (;;) {  // each retry turns one option off, so this ends
    LowerInfo got;
    auto r = lower_once(m, kernel, shape, p, o, got);
    if (auto* prog = std::get_if<Program>(&r)) {
      if (info) *info = got;
      return std::move(*prog);
    }
    const Relower& again = std::get<Relower>(r);
    if (again.compact_division) o.compact_division = true;
    o.max_hoisted = std::min(o.max_hoisted, again.max_hoisted);
  }
}

std::optional<std::string> model_unsupported(const Program& prog) {
  const Params& p = model_params();
  if (prog.blocks.size() > p.rom_blocks)
    return "kernel " + prog.kernel + " has " + std::to_string(prog.blocks.size()) + " blocks; the model's ROM holds " +
           std::to_string(p.rom_blocks);
  try {
    validate(prog, p);  // the model's machine: no native floats among the rest
  } catch (const std::invalid_argument& e) {
    return std::string("not a program of the model's machine: ") + e.what();
  }
  for (size_t b = 0; b < prog.blocks.size(); ++b) {
    const Block& blk = prog.blocks[b];
    auto at = [&](const std::string& text, const std::string& why) {
      return "block B" + std::to_string(b) + ": `" + text + "`: " + why;
    };
    for (const Instr& in : blk.instrs) {
      std::string why;
      switch (in.op) {
        case Op::CLOCK: why = "the circuit has no clock (the model lowering counts the thread's instructions)"; break;
        case Op::MULHS: why = "the signed high multiply is not in the model's circuit (the model lowering makes it of mulhu)"; break;
        case Op::ATOM: why = "atomics are not in the model's circuit (the model lowering expands them)"; break;
        case Op::LD:
        case Op::ST:
          if (in.bytes != 4) why = "the model's circuit accesses memory in 32-bit words (the model lowering widens this)";
          break;
        default: break;
      }
      if (!why.empty()) return at(to_string(in), why);
    }
    if (blk.term.kind == Term::BR && !blk.instrs.empty() && !blk.instrs.back().writes_reg())
      return at(to_string(blk.instrs.back()) + "; " + to_string(blk.term),
                "a store's block ends in a branch (the model lowering splits it)");
  }
  return std::nullopt;
}

}  // namespace qgpu::machine
