#include "model_host/machine_circuit/registers.h"

#include "model_host/machine/isa.h"

#include <algorithm>

namespace qgpu::gpu::mc {

Registers registers_stage(Builder& b, const Context& c, const Rom& r) {
  Program& p = b.p;
  const Digits& P = c.P;
  // The value tokens write register dst of the current thread: VZ(lo) and
  // VZF(lo) write (lo, 0), VG(lo) and VGF(lo) (lo, 0x1000), VN(lo) and VNF(lo)
  // (lo, 0xffff), VH(hi) and VHF(hi) (0, hi); D(hi) or DF(hi) after VLO(lo)
  // writes (lo, hi); VX(pc, v) writes (v, 0).
  // dst is the destination of the block the token before ran (EXEC, VX, WARPS
  // or a fall-through value before VZ, VH, VX and the fall-through values, and VLO,
  // whose block is still the current one, before D and DF), kept one token
  // in a one-row store: on a VX pass the ROM already
  // reads the next block.
  std::vector<Term> vx_terms;
  for (int s = 1; s < 16; ++s) {
    if (s >> 2) vx_terms.push_back({b.pay[2], s, s >> 2});
    if (s & 3) vx_terms.push_back({b.pay[3], s, (s & 3) << 2});
  }
  const ValueId vx_value = p.ladder("vx_value", 16, vx_terms, 0, [](int s) { return std::min(s, 15); });
  // v's bits 4..5 (payload bits 14..15).
  const ValueId vx_value_hi = circuit::apply(p, "vx_value_hi", 4, b.pay[3], [](int s) { return s >> 2; });
  const ValueId reg_src = circuit::apply(p, "reg_src", 4, b.kind, [](int s) {
    const Kind k = Kind(s);
    // D and DF take the low half from VLO, the token before (0); VH and VHF
    // write a low half of 0 (3: no case of the multiplexer holds).
    return k == Kind::VZ || k == Kind::VG || k == Kind::VN || k == Kind::VZF || k == Kind::VGF || k == Kind::VNF ? 1
           : k == Kind::VX                                                                                    ? 2
           : k == Kind::VH || k == Kind::VHF                                                                  ? 3
                                                                                                              : 0;
  });
  const Digits reg_lo = b.mux("reg_lo", reg_src, {{1, P}, {2, {{vx_value}, {vx_value_hi}}}, {0, c.prevP}}, 4);
  const ValueId is_vg = b.flag("high_global", b.kind, [](int s) { return Kind(s) == Kind::VG || Kind(s) == Kind::VGF; });
  const ValueId is_vn = b.flag("high_negative", b.kind, [](int s) { return Kind(s) == Kind::VN || Kind(s) == Kind::VNF; });
  const ValueId is_vh = b.flag("high_payload", b.kind, [](int s) { return Kind(s) == Kind::VH || Kind(s) == Kind::VHF; });
  // The tokens that write a register (with is_vhi for D after VLO): VZ, VG,
  // VN, VH, VX and the fall-through values (DF's low half is VLO's payload).
  const ValueId writes_reg = b.flag("writes_reg", b.kind, [](int s) {
    const Kind k = Kind(s);
    return k == Kind::VZ || k == Kind::VG || k == Kind::VN || k == Kind::VH || k == Kind::VX || falls_through(k);
  });
  const ValueId hi_src = p.lookup("reg_hi_src", 4, {c.is_vhi, is_vg, is_vn, is_vh}, [](const std::vector<int>& v) {
    return v[0] || v[3] ? 1 : v[1] ? 2 : v[2] ? 3 : 0;
  });
  auto high_digits = [](uint32_t h) {
    Digits d;
    for (int i = 0; i < 4; ++i) d.push_back({-1, int((h >> (4 * i)) & 15)});
    return d;
  };
  const Digits reg_hi = b.mux("reg_hi", hi_src, {{1, P}, {2, high_digits(kGlobalHigh)}, {3, high_digits(kNegativeHigh)}}, 4);
  std::vector<MemoryOp::Part> reg_rec = digit_parts(b.pad(reg_lo, 4));
  for (const Dig& d : reg_hi) reg_rec.push_back({d.v >= 0 ? d.v : b.konst(16, 0), 0});
  for (auto& part_ : reg_rec)
    if (part_.data < 0) part_.data = b.konst(16, 0);
  // The register file is 8192 rows: register r of thread w is row
  // r0..r2 | w0..w7 << 3 | (r3 | w9) << 11 | (r4 | w8) << 12.  A CTA of up to
  // 256 threads has 32 registers a thread (w8 = w9 = 0), up to 512 has 16
  // (r4 = 0, w9 = 0), up to 1024 has 8 (r3 = r4 = 0), as the lowering
  // allocates them (machine::Params::regs_for): each bit OR'd is one of two
  // bits of which the other is 0, so the row is one and the same map for
  // every launch shape, without the circuit knowing the shape.
  const ValueId w_hi = c.cur_w[2].v;
  auto reg_addr = [&](const std::string& name, ValueId lo4, ValueId bit4) {
    std::vector<AddrBit> a;
    for (int i = 0; i < 3; ++i) a.push_back({lo4, i});
    auto w = Builder::bits(c.cur_w, 0, 8);
    a.insert(a.end(), w.begin(), w.end());
    std::vector<Term> t3, t4;
    for (int s = 1; s < p.info(bit4).size; ++s)  // bit 0 of the value (a nibble of the dst field's)
      if (s & 1) t4.push_back({bit4, s, 1});
    for (int s = 1; s < 16; ++s) {
      if (s & 8) t3.push_back({lo4, s, 1});
      if (s & 2) t3.push_back({w_hi, s, 1});
      if (s & 1) t4.push_back({w_hi, s, 1});
    }
    auto either = [](int k) { return k >= 1 ? 1 : 0; };
    a.push_back({p.ladder(name + ".row11", 2, t3, 0, either), 0});
    a.push_back({p.ladder(name + ".row12", 2, t4, 0, either), 0});
    return a;
  };
  const auto prev_dst = store(b, "prev_dst", 1, {}, {}, c.one, -1, {{r.opP[0].v, 1}, {r.opP[1].v, 1}});
  const auto reg_w = reg_addr("reg_w", prev_dst[0], prev_dst[1]);
  // Port A also reads the branch condition: on the control pass, and on the
  // EXEC pass of a block with no instruction (the lowering never ends a
  // store's block in br, so no other block needs both).
  const ValueId is_nop = b.flag("is_nop", r.op, [](int s) { return s == int(kNoInstruction); });
  const ValueId read_cond = b.any("read_cond", {c.is_ctrl, is_nop});
  const Digits ra = b.mux("ra", read_cond, {{1, {{r.r_t[0]}, {r.r_t[1]}}}, {0, {{r.r_a[0]}, {r.r_a[1]}}}}, 2);
  auto reg_port = [&](const std::string& name, ValueId lo4, ValueId bit4) {
    return outs(store(b, name, 8192, reg_w, reg_addr(name, lo4, bit4), b.any("reg_we", {writes_reg, c.is_vhi}), c.is_cta,
                      reg_rec),
                0, 8);
  };
  Registers regs;
  regs.regC = reg_port("regs_c", r.r_c[0], r.r_c[1]);
  regs.regB = reg_port("regs_b", r.r_b[0], r.r_b[1]);
  regs.regA = reg_port("regs_a", ra[0].v, ra[1].v);
  return regs;
}

}  // namespace qgpu::gpu::mc
