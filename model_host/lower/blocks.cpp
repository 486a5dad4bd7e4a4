// Machine blocks from allocated code (blocks.h).
#include "model_host/lower/blocks.h"

namespace qgpu::machine::lowering {

// ---- pass 3: blocks ---------------------------------------------------------------

Program form_blocks(const std::vector<VI>& code, uint32_t nlabels, uint32_t block_instrs, bool for_model) {
  Program prog;
  // Terminator targets are label ids until every block exists; a fall-through
  // into the next block is recorded as that block's index directly.
  std::vector<uint32_t> label_block(nlabels, UINT32_MAX);
  std::vector<bool> by_label;  // per block: t/f are label ids
  bool open = false, stored = false;
  auto start = [&]() {
    prog.blocks.emplace_back();
    by_label.push_back(false);
    open = true;
    stored = false;
  };
  auto fall_through = [&]() {
    prog.blocks.back().term = {Term::JMP, 0, uint32_t(prog.blocks.size()), 0, 0};
    start();
  };
  start();
  for (size_t i = 0; i < code.size(); ++i) {
    const VI& v = code[i];
    if (v.kind == VI::Label) {
      if (!open)
        start();
      else if (!prog.blocks.back().instrs.empty())
        fall_through();
      label_block[v.l1] = uint32_t(prog.blocks.size() - 1);
      continue;
    }
    if (!open) start();  // code after a transfer that no label reaches
    Block& blk = prog.blocks.back();
    if (v.kind == VI::Ins) {
      // An ATOM64 and the ATOMHI after it (with the allocator's spill
      // stores between them) share a block: it starts a new one where they
      // would not fit.
      size_t need = 1;
      if (v.in.op == Op::ATOM64)
        for (size_t j = i + 1; j < code.size() && code[j].kind == VI::Ins && code[j].in.op != Op::ATOM64; ++j)
          if (code[j].in.op == Op::ATOMHI) {
            need = j - i + 1;
            break;
          }
      if (blk.instrs.size() + need > block_instrs || (stored && is_mem_read(v.in))) fall_through();
      prog.blocks.back().instrs.push_back(v.in);
      stored |= is_mem_write(v.in);
      continue;
    }
    Terminator t;
    switch (v.kind) {
      case VI::Jmp: t = {Term::JMP, 0, v.l1, 0, 0}; break;
      case VI::Br: t = {Term::BR, v.cond, v.l1, v.l2, 0}; break;
      case VI::Exit: t = {Term::EXIT, 0, 0, 0, 0}; break;
      case VI::Bar: t = {Term::BAR, 0, v.l1, 0, 0}; break;
      case VI::Wbar: t = {Term::WBAR, 0, v.l1, 0, 0}; break;
      case VI::Trap: t = {Term::TRAP, 0, 0, 0, v.code}; break;
      default: break;
    }
    // On the model's machine a store's block does not end in `br`
    // (docs/tokens.md, section 1): the branch gets a block of its own.
    if (for_model && t.kind == Term::BR && !blk.instrs.empty() && !blk.instrs.back().writes_reg())
      fall_through();
    prog.blocks.back().term = t;
    by_label.back() = true;
    open = false;
  }
  if (open) prog.blocks.back().term = {Term::EXIT, 0, 0, 0, 0};
  for (size_t b = 0; b < prog.blocks.size(); ++b) {
    if (!by_label[b]) continue;
    Terminator& t = prog.blocks[b].term;
    if (t.kind == Term::JMP || t.kind == Term::BR || t.kind == Term::BAR || t.kind == Term::WBAR)
      t.t = label_block[t.t];
    if (t.kind == Term::BR) t.f = label_block[t.f];
  }
  thread_jumps(prog);
  drop_unreachable(prog);
  return prog;
}

// Jump threading over blocks with no instruction: a `jmp` to one takes its
// terminator (`exit`, `trap`, `bar`, `wbar`, or a `jmp` onward), and a
// branch target that is one ending in `jmp` becomes that jmp's target.  A
// store followed by the kernel's shared exit thus exits in its own block,
// and one followed by a barrier waits in it, one step fewer (a thread
// waits at a barrier's target, whichever block ends in it; the lowering
// places the target right after the barrier's own block, so on a machine
// of several lanes no lane's pc lies between the two).
void thread_jumps(Program& prog) {
  auto bare = [&](uint32_t b, bool exits_too) {
    const Block& blk = prog.blocks[b];
    const Term k = blk.term.kind;
    return blk.instrs.empty() &&
           (k == Term::JMP || (exits_too && (k == Term::EXIT || k == Term::TRAP || k == Term::BAR || k == Term::WBAR)));
  };
  const size_t n = prog.blocks.size();
  for (size_t b = 0; b < n; ++b) {
    Terminator& t = prog.blocks[b].term;
    // At most n hops: a cycle of empty blocks is left as it is.
    for (size_t hop = 0; hop < n && t.kind == Term::JMP && t.t != b && bare(t.t, true); ++hop) t = prog.blocks[t.t].term;
    if (t.kind != Term::BR) continue;
    for (uint32_t* to : {&t.t, &t.f})
      for (size_t hop = 0; hop < n && *to != b && bare(*to, false) && prog.blocks[*to].term.t != *to; ++hop)
        *to = prog.blocks[*to].term.t;
  }
}

// Removes blocks no path from B0 reaches (code after a return, say) and
// renumbers the rest, keeping their order.
void drop_unreachable(Program& prog) {
  const size_t n = prog.blocks.size();
  std::vector<bool> seen(n, false);
  std::vector<uint32_t> work = {0};
  seen[0] = true;
  while (!work.empty()) {
    const Terminator& t = prog.blocks[work.back()].term;
    work.pop_back();
    auto visit = [&](uint32_t b) {
      if (!seen[b]) {
        seen[b] = true;
        work.push_back(b);
      }
    };
    if (t.kind == Term::JMP || t.kind == Term::BR || t.kind == Term::BAR || t.kind == Term::WBAR) visit(t.t);
    if (t.kind == Term::BR) visit(t.f);
  }
  std::vector<uint32_t> index(n);
  std::vector<Block> kept;
  for (size_t b = 0; b < n; ++b)
    if (seen[b]) {
      index[b] = uint32_t(kept.size());
      kept.push_back(std::move(prog.blocks[b]));
    }
  for (Block& b : kept) {
    b.term.t = index[b.term.t];
    if (b.term.kind == Term::BR) b.term.f = index[b.term.f];
  }
  prog.blocks = std::move(kept);
}

}  // namespace qgpu::machine::lowering
