#include "model_host/machine_circuit/rom.h"

#include "model_host/machine/isa.h"

namespace qgpu::gpu::mc {

using machine::Op;

Rom rom_stage(Builder& b, const Context& c) {
  Program& p = b.p;
  Rom r;
  const auto rom_w = Builder::bits(c.rom_sel, 0, 10), rom_r = Builder::bits(c.cur_pc, 0, 10);
  // The launch's stores start empty at its NT (the client's sequence goes on
  // over many launches: docs/tokens.md section 3): a field a launch does not
  // send reads as zero.
  r.is_nt = b.is_kind(Kind::NT);
  auto rom = [&](const std::string& name, Kind k, std::vector<MemoryOp::Part> parts) {
    return store(b, name, 1024, rom_w, rom_r, b.is_kind(k), r.is_nt, std::move(parts));
  };
  r.opP = outs(rom("rom_op", Kind::OP, payload_parts(b, 4, 0)), 0, 4);
  const auto imm_parts = cat(payload_parts(b, 2, 0), cat(payload_parts(b, 4, 2), payload_parts(b, 4, 1)));
  r.r_a = rom("rom_a", Kind::A, imm_parts);
  r.r_b = rom("rom_b", Kind::B, imm_parts);
  r.r_c = rom("rom_c", Kind::C, imm_parts);
  r.r_t = rom("rom_t", Kind::T, cat(payload_parts(b, 2, 0), cat(payload_parts(b, 3, 2), payload_parts(b, 3, 1))));

  r.op = b.number("op", 64, {r.opP[2], r.opP[3]}, 6);          // payload bits 8..13
  r.bop = circuit::apply(p, "bitop", 8, r.op, [](int s) {
    switch (Op(s)) {
      case Op::AND: return int(kAnd);
      case Op::OR: return int(kOr);
      case Op::XOR: return int(kXor);
      case Op::SHL: return int(kShl);
      case Op::SHR: return int(kShr);
      case Op::SAR: return int(kSar);
      case Op::BREV: return int(kBrev);
      default: return int(kNoBitOp);
    }
  });
  r.space = circuit::apply(p, "space", 8, r.opP[1].v, [](int s) { return s >> 1; });
  r.tkind = circuit::apply(p, "tkind", 8, r.r_t[1], [](int s) { return s >> 1; });
  r.t_target = outs(r.r_t, 2, 3);
  r.f_target = outs(r.r_t, 5, 3);
  r.is_ld = op_is(b, r, "is_ld", {Op::LD});
  r.is_st = op_is(b, r, "is_st", {Op::ST});
  r.has_dst = b.flag("has_dst", r.op, [](int s) {
    return s != int(kNoInstruction) && s != int(Op::ST) && s != int(Op::ATOM);
  });
  return r;
}

ValueId op_is(Builder& b, const Rom& r, const std::string& name, std::initializer_list<Op> ops) {
  return b.flag(name, r.op, [ops](int s) {
    for (Op o : ops)
      if (s == int(o)) return true;
    return false;
  });
}

}  // namespace qgpu::gpu::mc
