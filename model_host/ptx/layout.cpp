#include "model_host/ptx/layout.h"

#include <set>
#include <stdexcept>

namespace qgpu::ptx {
namespace {

uint64_t align_up(uint64_t x, uint64_t a) { return a ? (x + a - 1) / a * a : x; }

// Calls `fn(op)` for every operand of `in`, vector elements included.
template <class F>
void for_each_operand(const Instr& in, F&& fn) {
  for (const Operand& o : in.ops) {
    fn(o);
    for (const Operand& e : o.elems) fn(e);
  }
}

// Functions reachable from `root`: direct calls, and functions whose address
// is taken (possible targets of indirect calls).
std::vector<uint32_t> reachable(const Module& m, uint32_t root) {
  std::vector<uint32_t> order{root};
  std::set<uint32_t> seen{root};
  for (size_t i = 0; i < order.size(); ++i)
    for (const Instr& in : m.functions[order[i]].body)
      for_each_operand(in, [&](const Operand& o) {
        if (o.has_sym && o.sym.kind == SymKind::Func && seen.insert(o.sym.index).second)
          order.push_back(o.sym.index);
      });
  return order;
}

}  // namespace

SharedLayout shared_layout(const Module& m, uint32_t kernel) {
  SharedLayout out;
  std::vector<uint32_t> funcs = reachable(m, kernel);
  std::set<uint32_t> module_shared;
  for (uint32_t f : funcs)
    for (const Instr& in : m.functions[f].body)
      for_each_operand(in, [&](const Operand& o) {
        if (o.has_sym && o.sym.kind == SymKind::ModuleVar && m.vars[o.sym.index].space == Space::Shared)
          module_shared.insert(o.sym.index);
      });
  uint64_t off = 0;
  uint32_t dyn_align = 16;
  std::vector<uint32_t> dynamic;
  for (uint32_t i : module_shared) {
    const Var& v = m.vars[i];
    if (v.is_extern && v.size == 0) {
      dynamic.push_back(i);
      dyn_align = std::max(dyn_align, v.align);
      continue;
    }
    off = align_up(off, v.align);
    out.module_vars[i] = off;
    off += v.size;
  }
  for (uint32_t f : funcs) {
    const Function& fn = m.functions[f];
    for (uint32_t i = 0; i < fn.vars.size(); ++i) {
      if (fn.vars[i].space != Space::Shared) continue;
      off = align_up(off, fn.vars[i].align);
      out.function_vars[{f, i}] = off;
      off += fn.vars[i].size;
    }
  }
  if (off > UINT32_MAX) throw std::runtime_error("static shared memory of '" + m.functions[kernel].name + "' exceeds 4 GiB");
  out.static_size = static_cast<uint32_t>(off);
  out.dynamic_offset = static_cast<uint32_t>(align_up(off, dyn_align));
  for (uint32_t i : dynamic) out.module_vars[i] = out.dynamic_offset;
  return out;
}

std::vector<launch::KernelParam> param_layout(const Function& kernel) {
  std::vector<launch::KernelParam> out;
  for (const Var& p : kernel.params)
    out.push_back({static_cast<uint32_t>(p.offset), static_cast<uint32_t>(p.size), p.align});
  return out;
}

launch::ModuleInfo module_info(const Module& m) {
  launch::ModuleInfo info;
  for (const Var& v : m.vars) {
    if (v.is_extern) continue;  // defined in another module
    if (v.space != Space::Global && v.space != Space::Const) continue;
    if (v.type == Type::Texref || v.type == Type::Samplerref || v.type == Type::Surfref) continue;
    launch::ModuleVar mv;
    mv.name = v.name;
    mv.space = v.space == Space::Global ? "global" : "const";
    mv.size = v.size;
    mv.align = v.align;
    mv.init = v.init;
    if (!mv.init.empty()) mv.init.resize(v.size, 0);
    // Generic and global addresses coincide in qgpu's flat address space.
    // The address of a function (a virtual table's entries) is a constant.
    for (const auto& r : v.relocs) {
      if (auto f = m.function_index(r.symbol)) {
        if (mv.init.size() < v.size) mv.init.resize(v.size, 0);
        const uint64_t value = function_address(*f) + uint64_t(r.addend);
        for (uint32_t b = 0; b < r.size && r.offset + b < mv.init.size(); ++b) mv.init[r.offset + b] = uint8_t(value >> (8 * b));
        continue;
      }
      mv.relocs.push_back({r.offset, r.size, r.symbol, r.addend});
    }
    info.vars.push_back(std::move(mv));
  }
  for (uint32_t i = 0; i < m.functions.size(); ++i) {
    const Function& f = m.functions[i];
    if (!f.is_entry || !f.has_body) continue;
    info.kernels.push_back({f.name, param_layout(f), shared_layout(m, i).static_size});
  }
  return info;
}

}  // namespace qgpu::ptx
