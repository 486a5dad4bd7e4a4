// Instruction selection: tex, suld.b and sust.b (texture.h; docs/isa.md
// section 8.3): the fetch or the surface access written as machine code that
// reads the texture's descriptor from global memory.
#include "model_host/lower/isel.h"
#include "model_host/lower/texture.h"

#include <algorithm>
#include <vector>

namespace qgpu::machine::lowering {

void Lowerer::lower_texture(const ptx::Instr& in) {
  using PO = ptx::Op;
  texture::Emitter e;
  e.alu = [this](Op o, Operand a, Operand b, Operand c) { return opr(o, a, b, c); };
  e.load = [this](Operand a, uint32_t bytes) { return R(ld(Space::Global, a, 0, bytes, false)); };
  e.store = [this](Operand a, uint32_t bytes, Operand v) { st(Space::Global, a, 0, bytes, v); };
  e.label = [this] { return new_label(); };
  e.place = [this](uint32_t l) { place(l); };
  e.jmp = [this](uint32_t l) { jmp(l); };
  e.br = [this](Operand c, uint32_t t, uint32_t f) { br(c, t, f); };
  e.trap = [this](uint32_t code) { vc_.code.push_back({VI::Trap, {}, 0, 0, 0, code}); };
  e.var = [this] { return nv(); };
  e.set = [this](uint32_t v, Operand x) { opd(v, Op::MOV, x); };
  if (opts_.native_float)
    e.fnative = [this](Op o, const FloatMod& m, Operand a, Operand b) { return fnative(o, m, a, b); };
  const bool store = in.op == PO::Sust;
  const ptx::Operand& handle = in.ops[store ? 0 : 1];
  const ptx::Operand& coords = in.ops[store ? 1 : 2];
  const ptx::Operand& data = in.ops[store ? 2 : 0];
  Operand desc = read(in, handle, Type::U64).lo;
  std::array<Operand, 4> c = {K(0), K(0), K(0), K(0)};
  for (size_t k = 0; k < coords.elems.size() && k < 4; ++k)
    if (coords.elems[k].kind != ptx::Operand::Kind::Sink) c[k] = read(in, coords.elems[k], Type::B32).lo;
  auto elems = [&](const ptx::Operand& o) {
    std::vector<const ptx::Operand*> v;
    if (o.kind == ptx::Operand::Kind::Vector)
      for (auto& x : o.elems) v.push_back(&x);
    else
      v.push_back(&o);
    return v;
  };
  if (in.op == PO::Tex) {
    if (in.type != Type::F32 && in.type != Type::S32 && in.type != Type::U32)
      unsupported(in, "returns a type tex does not have here (f32, s32, u32; docs/isa.md section 8.3)");
    if (in.type2 != Type::F32 && in.type2 != Type::S32)
      unsupported(in, "has coordinates of a type other than f32 and s32");
    auto r = texture::tex(e, desc, in.geom, in.type2 == Type::S32, c, in.type != Type::F32);
    auto d = elems(data);
    for (size_t k = 0; k < d.size() && k < 4; ++k) write(*d[k], Type::B32, {r[k], K(0)});
    return;
  }
  if (in.geom == ptx::TexGeom::Cube || in.geom == ptx::TexGeom::ACube)
    unsupported(in, "is a surface access of a cube map (surfaces here are 1d, 2d, 3d, a1d and a2d)");
  const uint32_t es = ptx::type_size(in.type);
  auto d = elems(data);
  Operand ok = K(1);
  Operand a = texture::surface_address(e, desc, in.geom, c, es * uint32_t(d.size()), in.surf_clamp, ok);
  if (in.surf_clamp != 2) ok = K(1);  // .trap has trapped, .clamp clamped: only .zero drops the access
  if (in.op == PO::Suld) {
    for (size_t k = 0; k < d.size(); ++k) {
      V v;
      v.lo = opr(Op::SEL, ok, R(ld(Space::Global, a, uint32_t(k * es), std::min<uint32_t>(es, 4), false)), K(0));
      if (es == 8) v.hi = opr(Op::SEL, ok, R(ld(Space::Global, a, uint32_t(k * es + 4), 4, false)), K(0));
      write(*d[k], in.type, v);
    }
    return;
  }
  uint32_t go = new_label(), done = new_label();
  br(ok, go, done);
  place(go);
  for (size_t k = 0; k < d.size(); ++k) {
    V v = read(in, *d[k], in.type);
    st(Space::Global, a, uint32_t(k * es), std::min<uint32_t>(es, 4), v.lo);
    if (es == 8) st(Space::Global, a, uint32_t(k * es + 4), 4, v.hi);
  }
  jmp(done);
  place(done);
}

}  // namespace qgpu::machine::lowering
