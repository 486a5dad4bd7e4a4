// Instruction selection: calls, printf, assert, malloc/free, indirect calls
// (isel.h).
#include "model_host/lower/isel.h"

#include "model_host/machine/printf.h"

namespace qgpu::machine::lowering {

void Lowerer::lower_call(const ptx::Instr& in) {
  const ptx::Operand& callee = in.ops[1];
  if (callee.kind != ptx::Operand::Kind::Sym || callee.sym.kind != ptx::SymKind::Func)
    unsupported(in, "is an indirect call: the machine inlines device functions and has no indirect calls");
  const ptx::Function& f = m_.functions[callee.sym.index];
  if (f.name == "__assertfail") return lower_assert(in);
  if (f.name == "vprintf") return lower_printf(in);
  if (!f.has_body && lower_device_runtime(in, f.name)) return;
  if (!f.has_body) unsupported(in, "calls `" + f.name + "`, which has no body the machine can run");
  for (auto* fr : frames_)
    if (fr->findex == callee.sym.index) unsupported(in, "is a recursive call: device functions are inlined");
  Frame fr;
  fr.f = &f;
  fr.findex = callee.sym.index;
  fr.ret_label = new_label();
  const ptx::Operand& rets = in.ops[0];
  const ptx::Operand& args = in.ops[2];
  // Call-site parameters are local variables of the caller; the callee's
  // parameters and return values alias them.
  auto slot = [&](const ptx::Operand& o) -> uint32_t {
    if (o.kind != ptx::Operand::Kind::Sym) unsupported(in, "passes an argument that is not a .param variable");
    ptx::Space sp;
    return symbol_address(in, o.sym, &sp);
  };
  for (size_t i = 0; i < f.params.size(); ++i)
    fr.param_off.push_back(i < args.elems.size() ? slot(args.elems[i])
                                                 : local_alloc(f.params[i].size, f.params[i].align));
  for (size_t i = 0; i < f.rets.size(); ++i)
    fr.ret_off.push_back(i < rets.elems.size() ? slot(rets.elems[i]) : local_alloc(f.rets[i].size, f.rets[i].align));
  uint32_t ret = fr.ret_label;
  lower_function(fr);
  place(ret);
}

// The format string of a vprintf call, found statically: the value stored
// into the call's first argument is the address of a module string (through
// mov and cvta).
std::string Lowerer::printf_format(const ptx::Instr& call) {
  const ptx::Function& f = *frames_.back()->f;
  size_t at = size_t(&call - f.body.data());
  const ptx::Operand& arg = call.ops[2].elems.at(0);
  auto fail = [&]() -> std::string { unsupported(call, "passes a printf format the lowering cannot find statically"); };
  uint32_t reg = ptx::kNoReg;
  for (size_t j = at; j-- > 0;) {
    const ptx::Instr& s = f.body[j];
    if (s.op == ptx::Op::St && s.ops[0].has_sym && s.ops[0].sym.kind == arg.sym.kind &&
        s.ops[0].sym.index == arg.sym.index) {
      if (s.ops[1].kind != ptx::Operand::Kind::Reg) return fail();
      reg = s.ops[1].reg;
      at = j;
      break;
    }
  }
  while (reg != ptx::kNoReg) {
    size_t j = at;
    while (j-- > 0 && !(f.body[j].ops.size() > 1 && f.body[j].ops[0].kind == ptx::Operand::Kind::Reg &&
                        f.body[j].ops[0].reg == reg)) {
    }
    if (j == size_t(-1)) return fail();
    const ptx::Instr& d = f.body[j];
    if (d.op != ptx::Op::Mov && d.op != ptx::Op::Cvta) return fail();
    const ptx::Operand& src = d.ops[1];
    if (src.kind == ptx::Operand::Kind::Sym && src.sym.kind == ptx::SymKind::ModuleVar) {
      const auto& init = m_.vars[src.sym.index].init;
      std::string str(init.begin(), init.end());
      return str.substr(0, str.find('\0'));
    }
    if (src.kind != ptx::Operand::Kind::Reg) return fail();
    reg = src.reg;
    at = j;
  }
  return fail();
}

// vprintf(format, args): append a record to the print space (printf.h).
void Lowerer::lower_printf(const ptx::Instr& in) {
  const ptx::Operand& args = in.ops[2];
  if (args.elems.size() != 2) unsupported(in, "calls vprintf with an unexpected argument list");
  uint32_t n, count;
  try {
    const std::string format = printf_format(in);
    n = printf_arg_bytes(format);
    count = printf_arg_count(format);
  } catch (const std::invalid_argument& e) {
    unsupported(in, std::string("has a printf format the machine cannot format: ") + e.what());
  }
  ptx::Space sp;
  uint32_t fmt_slot = symbol_address(in, args.elems[0].sym, &sp);
  uint32_t arg_slot = symbol_address(in, args.elems[1].sym, &sp);
  Operand fmt = R(ld(Space::Local, K(fmt_slot), 0, 4, false));
  Operand argp = opr(Op::SUB, R(ld(Space::Local, K(arg_slot), 0, 4, false)), K(kLocalWindow));
  std::vector<Operand> vals;
  for (uint32_t i = 0; i < (n + 3) / 4; ++i) vals.push_back(R(ld(Space::Local, argp, 4 * i, 4, false)));
  append_print_record(fmt, n, vals);
  // printf returns the number of arguments parsed (as the PTX-level interpreter does).
  const ptx::Operand& rets = in.ops[0];
  if (rets.elems.size() == 1 && rets.elems[0].kind == ptx::Operand::Kind::Sym)
    st(Space::Local, K(symbol_address(in, rets.elems[0].sym, &sp)), 0, 4, K(count));
}

// __assertfail(message, file, line, function, size): a print record that the
// backend formats as CUDA's assertion message, then trap 710.
void Lowerer::lower_assert(const ptx::Instr& in) {
  const ptx::Operand& args = in.ops[2];
  if (args.elems.size() < 4) unsupported(in, "calls __assertfail with an unexpected argument list");
  std::vector<Operand> words;
  for (int i = 0; i < 4; ++i) {
    ptx::Space sp;
    words.push_back(R(ld(Space::Local, K(symbol_address(in, args.elems[i].sym, &sp)), 0, 4, false)));
  }
  for (char c : {'x', 'y', 'z'}) words.push_back(grid_component(c));
  for (char c : {'x', 'y', 'z'}) words.push_back(component(tid_linear(), shape_.block, c));
  append_print_record(K(kAssertRecord), uint32_t(4 * words.size()), words);
  vc_.code.push_back({VI::Trap, {}, 0, 0, 0, uint32_t(launch::kAssert)});
  place(new_label());
}

// Appends [format][bytes][words...] to the print space, or nothing when it is full.
void Lowerer::append_print_record(Operand format, uint32_t bytes, const std::vector<Operand>& words) {
  ctas_in_order_ = true;  // the output keeps the CTAs' order (Program::ctas_in_order)
  const uint32_t rec = 8 + 4 * uint32_t(words.size());
  Operand off = atom(Space::Print, AtomOp::ADD, K(0), K(rec));
  uint32_t write = new_label(), skip = new_label();
  br(opr(Op::SLEU, opr(Op::ADD, off, K(4 + rec)), K(p_.print_bytes)), write, skip);
  place(write);
  Operand at = opr(Op::ADD, off, K(4));
  st(Space::Print, at, 0, 4, format);
  st(Space::Print, at, 4, 4, K(bytes));
  for (size_t i = 0; i < words.size(); ++i) st(Space::Print, at, 8 + 4 * uint32_t(i), 4, words[i]);
  place(skip);
}

// Runs `body` for the active lanes one at a time, in lane order
// (lanes_in_turn, for a body that gives no value): with no barrier inside,
// each lane's `body` is atomic with respect to every other thread.
void Lowerer::serialize_lanes(const std::function<void()>& body) {
  ctas_in_order_ = true;  // the device heap's and launch queue's global words
  lanes_in_turn([&] {
    body();
    return V{};
  });
}

// The device heap (docs/isa.md, 8.2): a header of kHeapHeader bytes at
// heap_base (word 0: bytes handed out so far; word 1 + k: the first free
// block of class k), then blocks of 16 << k bytes, each a 16-byte header
// (word 0: k; word 1: the next free block while free) and the user's bytes.
// Memory is zero before the first launch, which is an empty heap.
constexpr uint32_t kHeapHeader = launch::device_queue::kHeapHeader, kHeapClasses = 27;

// malloc(size): a block of the smallest class k that holds size + 16 bytes,
// from its free list, else from the untouched end, else split from the first
// free block of a larger class; NULL when none fits.  Blocks are not merged
// again: freed small blocks serve only requests of their class.
void Lowerer::lower_malloc(const ptx::Instr& in) {
  const ptx::Operand& rets = in.ops[0];
  const ptx::Operand& args = in.ops[2];
  if (args.elems.size() != 1 || rets.elems.size() != 1) unsupported(in, "calls malloc with an unexpected argument list");
  auto slot = [&](const ptx::Operand& o) {
    if (o.kind != ptx::Operand::Kind::Sym) unsupported(in, "passes an argument that is not a .param variable");
    ptx::Space sp;
    return symbol_address(in, o.sym, &sp);
  };
  const uint32_t arg = slot(args.elems[0]), ret = slot(rets.elems[0]);
  uint32_t result = heap_alloc(R(ld(Space::Local, K(arg), 0, 4, false)), R(ld(Space::Local, K(arg), 4, 4, false)));
  st(Space::Local, K(ret), 0, 4, R(result));
  st(Space::Local, K(ret), 4, 4, K(0));
}

// The allocation of malloc: the virtual register holding the block's user
// address (0 when nothing fits) of a request of hi:lo bytes.
uint32_t Lowerer::heap_alloc(Operand lo, Operand hi) {
  const uint32_t base = uint32_t(shape_.heap_base), bytes = shape_.heap_bytes;
  uint32_t result = op(Op::MOV, K(0));
  if (bytes > kHeapHeader) {
    // Requests of 2^30 bytes or more never fit (nor does any with a high word).
    Operand ok = opr(Op::AND, opr(Op::SEQ, hi, K(0)), opr(Op::SLTU, lo, K(1u << 30)));
    Operand need = opr(Op::ADD, lo, K(16));
    Operand bits = opr(Op::SUB, K(32), opr(Op::CLZ, opr(Op::SUB, need, K(1))));  // need <= 2^bits
    Operand k = opr(Op::MAX, opr(Op::SUB, bits, K(4)), K(0));
    Operand size = opr(Op::SHL, K(16), k);
    Operand head_at = opr(Op::ADD, opr(Op::SHL, k, K(2)), K(base + 4));
    uint32_t go = new_label(), skip = new_label();
    br(ok, go, skip);
    place(go);
    serialize_lanes([&] {
      uint32_t reuse = new_label(), fresh = new_label(), search = new_label(), done = new_label();
      Operand head = R(ld(Space::Global, head_at, 0, 4, false));
      br(head, reuse, fresh);
      place(reuse);
      st(Space::Global, head_at, 0, 4, R(ld(Space::Global, head, 4, 4, false)));
      opd(result, Op::ADD, head, K(16));
      jmp(done);
      place(fresh);
      Operand top = R(ld(Space::Global, K(base), 0, 4, false));
      Operand end = opr(Op::ADD, top, size);
      uint32_t fits = new_label();
      br(opr(Op::SLEU, end, K(bytes - kHeapHeader)), fits, search);
      place(fits);
      Operand block = opr(Op::ADD, top, K(base + kHeapHeader));
      st(Space::Global, K(base), 0, 4, end);
      st(Space::Global, block, 0, 4, k);
      opd(result, Op::ADD, block, K(16));
      jmp(done);
      // No room left: the first free block of a larger class, split in
      // halves down to class k (each upper half to its class's list).
      place(search);
      uint32_t j = op(Op::ADD, k, K(1));
      uint32_t sloop = new_label(), sbody = new_label(), take = new_label(), snext = new_label();
      place(sloop);
      br(opr(Op::SLTU, R(j), K(kHeapClasses)), sbody, done);
      place(sbody);
      Operand hj_at = opr(Op::ADD, opr(Op::SHL, R(j), K(2)), K(base + 4));
      Operand hj = R(ld(Space::Global, hj_at, 0, 4, false));
      br(hj, take, snext);
      place(snext);
      opd(j, Op::ADD, R(j), K(1));
      jmp(sloop);
      place(take);
      st(Space::Global, hj_at, 0, 4, R(ld(Space::Global, hj, 4, 4, false)));
      uint32_t split = new_label(), split_body = new_label(), split_done = new_label();
      place(split);
      br(opr(Op::SLTU, k, R(j)), split_body, split_done);
      place(split_body);
      opd(j, Op::ADD, R(j), K(uint32_t(-1)));
      Operand half = opr(Op::ADD, hj, opr(Op::SHL, K(16), R(j)));
      Operand hh_at = opr(Op::ADD, opr(Op::SHL, R(j), K(2)), K(base + 4));
      Operand old = R(ld(Space::Global, hh_at, 0, 4, false));
      st(Space::Global, half, 0, 4, R(j));
      st(Space::Global, half, 4, 4, old);
      st(Space::Global, hh_at, 0, 4, half);
      jmp(split);
      place(split_done);
      st(Space::Global, hj, 0, 4, k);
      opd(result, Op::ADD, hj, K(16));
      place(done);
    });
    place(skip);
  }
  return result;
}

// free(p): the block goes to the front of its class's free list; free(NULL)
// does nothing.
void Lowerer::lower_free(const ptx::Instr& in) {
  const ptx::Operand& args = in.ops[2];
  if (args.elems.size() != 1) unsupported(in, "calls free with an unexpected argument list");
  if (args.elems[0].kind != ptx::Operand::Kind::Sym) unsupported(in, "passes an argument that is not a .param variable");
  ptx::Space sp;
  const uint32_t arg = symbol_address(in, args.elems[0].sym, &sp);
  heap_free(R(ld(Space::Local, K(arg), 0, 4, false)));
}

void Lowerer::heap_free(Operand p) {
  if (shape_.heap_bytes <= kHeapHeader) return;
  const uint32_t base = uint32_t(shape_.heap_base);
  uint32_t go = new_label(), skip = new_label();
  br(p, go, skip);
  place(go);
  Operand block = opr(Op::SUB, p, K(16));
  Operand k = R(ld(Space::Global, block, 0, 4, false));
  Operand head_at = opr(Op::ADD, opr(Op::SHL, opr(Op::MINU, k, K(kHeapClasses - 1)), K(2)), K(base + 4));
  serialize_lanes([&] {
    Operand head = R(ld(Space::Global, head_at, 0, 4, false));
    st(Space::Global, block, 4, 4, head);
    st(Space::Global, head_at, 0, 4, block);
  });
  place(skip);
}

void Lowerer::lower_indirect_call(const ptx::Instr& in) {
  const ptx::Operand& callee = in.ops[1];
  Operand target = R(frames_.back()->regs[callee.reg][0]);
  if (address_taken_.empty()) {
    address_taken_.assign(m_.functions.size(), false);
    auto mark = [&](const ptx::Operand& o, auto&& self) -> void {
      if ((o.kind == ptx::Operand::Kind::Sym || o.kind == ptx::Operand::Kind::Addr) && o.has_sym &&
          o.sym.kind == ptx::SymKind::Func)
        address_taken_[o.sym.index] = true;
      for (const auto& e : o.elems) self(e, self);
    };
    for (const ptx::Function& f : m_.functions)
      for (const ptx::Instr& x : f.body)
        for (size_t i = 0; i < x.ops.size(); ++i)
          if (!(x.op == ptx::Op::Call && i == 1)) mark(x.ops[i], mark);
    for (const ptx::Var& v : m_.vars)
      for (const auto& r : v.relocs)
        if (auto fi = m_.function_index(r.symbol)) address_taken_[*fi] = true;
  }
  uint32_t done = new_label();
  for (uint32_t fi = 0; fi < m_.functions.size(); ++fi) {
    const ptx::Function& f = m_.functions[fi];
    if (!address_taken_[fi] || !f.has_body || f.is_entry) continue;
    if (f.params.size() != in.ops[2].elems.size() || f.rets.size() != in.ops[0].elems.size()) continue;
    bool active = false;
    for (auto* fr : frames_) active |= fr->findex == fi;
    if (active) continue;
    uint32_t yes = new_label(), no = new_label();
    br(opr(Op::SEQ, target, K(ptx::function_address(fi))), yes, no);
    place(yes);
    ptx::Instr direct = in;
    direct.ops[1].kind = ptx::Operand::Kind::Sym;
    direct.ops[1].has_sym = true;
    direct.ops[1].sym = {ptx::SymKind::Func, fi};
    lower_call(direct);
    jmp(done);
    place(no);
  }
  vc_.code.push_back({VI::Trap, {}, 0, 0, 0, uint32_t(launch::kLaunchFailure)});
  place(done);
}

}  // namespace qgpu::machine::lowering
