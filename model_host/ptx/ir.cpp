#include "model_host/ptx/ir.h"

namespace qgpu::ptx {

uint32_t type_size(Type t) {
  switch (t) {
    case Type::None: return 0;
    case Type::Pred: case Type::B8: case Type::U8: case Type::S8: return 1;
    case Type::B16: case Type::U16: case Type::S16: case Type::F16: case Type::BF16: return 2;
    case Type::B32: case Type::U32: case Type::S32: case Type::F32: case Type::F16x2:
    case Type::BF16x2: return 4;
    case Type::B64: case Type::U64: case Type::S64: case Type::F64: return 8;
    case Type::B128: return 16;
    case Type::Texref: case Type::Samplerref: case Type::Surfref: return 8;
  }
  return 0;
}

bool is_signed(Type t) {
  return t == Type::S8 || t == Type::S16 || t == Type::S32 || t == Type::S64;
}

bool is_float(Type t) {
  return t == Type::F16 || t == Type::F16x2 || t == Type::BF16 || t == Type::BF16x2 ||
         t == Type::F32 || t == Type::F64;
}

const char* type_name(Type t) {
  switch (t) {
    case Type::None: return "none";
    case Type::Pred: return "pred";
    case Type::B8: return "b8";
    case Type::B16: return "b16";
    case Type::B32: return "b32";
    case Type::B64: return "b64";
    case Type::B128: return "b128";
    case Type::U8: return "u8";
    case Type::U16: return "u16";
    case Type::U32: return "u32";
    case Type::U64: return "u64";
    case Type::S8: return "s8";
    case Type::S16: return "s16";
    case Type::S32: return "s32";
    case Type::S64: return "s64";
    case Type::F16: return "f16";
    case Type::F16x2: return "f16x2";
    case Type::BF16: return "bf16";
    case Type::BF16x2: return "bf16x2";
    case Type::F32: return "f32";
    case Type::F64: return "f64";
    case Type::Texref: return "texref";
    case Type::Samplerref: return "samplerref";
    case Type::Surfref: return "surfref";
  }
  return "?";
}

const char* space_name(Space s) {
  switch (s) {
    case Space::None: return "generic";
    case Space::Reg: return "reg";
    case Space::Global: return "global";
    case Space::Shared: return "shared";
    case Space::SharedCluster: return "shared::cluster";
    case Space::Local: return "local";
    case Space::Const: return "const";
    case Space::Param: return "param";
  }
  return "?";
}

const char* op_name(Op op) {
  switch (op) {
    case Op::Add: return "add";
    case Op::Addc: return "addc";
    case Op::Sub: return "sub";
    case Op::Subc: return "subc";
    case Op::Mul: return "mul";
    case Op::Mad: return "mad";
    case Op::Madc: return "madc";
    case Op::Mul24: return "mul24";
    case Op::Mad24: return "mad24";
    case Op::Sad: return "sad";
    case Op::Div: return "div";
    case Op::Rem: return "rem";
    case Op::Abs: return "abs";
    case Op::Neg: return "neg";
    case Op::Min: return "min";
    case Op::Max: return "max";
    case Op::Popc: return "popc";
    case Op::Clz: return "clz";
    case Op::Bfind: return "bfind";
    case Op::Brev: return "brev";
    case Op::Bfe: return "bfe";
    case Op::Bfi: return "bfi";
    case Op::Prmt: return "prmt";
    case Op::Shf: return "shf";
    case Op::Shl: return "shl";
    case Op::Shr: return "shr";
    case Op::And: return "and";
    case Op::Or: return "or";
    case Op::Xor: return "xor";
    case Op::Not: return "not";
    case Op::Cnot: return "cnot";
    case Op::Lop3: return "lop3";
    case Op::Dp4a: return "dp4a";
    case Op::Dp2a: return "dp2a";
    case Op::Szext: return "szext";
    case Op::Bmsk: return "bmsk";
    case Op::Fns: return "fns";
    case Op::Mov: return "mov";
    case Op::Cvt: return "cvt";
    case Op::Cvta: return "cvta";
    case Op::Selp: return "selp";
    case Op::Slct: return "slct";
    case Op::Setp: return "setp";
    case Op::Set: return "set";
    case Op::Isspacep: return "isspacep";
    case Op::Ld: return "ld";
    case Op::Ldu: return "ldu";
    case Op::St: return "st";
    case Op::Prefetch: return "prefetch";
    case Op::Atom: return "atom";
    case Op::Red: return "red";
    case Op::Bra: return "bra";
    case Op::Brx: return "brx";
    case Op::Call: return "call";
    case Op::Ret: return "ret";
    case Op::Exit: return "exit";
    case Op::Trap: return "trap";
    case Op::Brkpt: return "brkpt";
    case Op::Nanosleep: return "nanosleep";
    case Op::Bar: return "bar";
    case Op::BarWarp: return "bar.warp";
    case Op::Membar: return "membar";
    case Op::Fence: return "fence";
    case Op::Shfl: return "shfl";
    case Op::Vote: return "vote";
    case Op::Activemask: return "activemask";
    case Op::Match: return "match";
    case Op::Redux: return "redux";
    case Op::Wmma: return "wmma";
    case Op::Fma: return "fma";
    case Op::Rcp: return "rcp";
    case Op::Sqrt: return "sqrt";
    case Op::Rsqrt: return "rsqrt";
    case Op::Sin: return "sin";
    case Op::Cos: return "cos";
    case Op::Lg2: return "lg2";
    case Op::Ex2: return "ex2";
    case Op::Tanh: return "tanh";
    case Op::Copysign: return "copysign";
    case Op::Testp: return "testp";
    case Op::Tex: return "tex";
    case Op::Suld: return "suld";
    case Op::Sust: return "sust";
    case Op::Other: return "other";
  }
  return "?";
}

const char* sreg_name(SReg s) {
  switch (s) {
    case SReg::Tid: return "%tid";
    case SReg::Ntid: return "%ntid";
    case SReg::Ctaid: return "%ctaid";
    case SReg::Nctaid: return "%nctaid";
    case SReg::Laneid: return "%laneid";
    case SReg::Warpid: return "%warpid";
    case SReg::Nwarpid: return "%nwarpid";
    case SReg::Smid: return "%smid";
    case SReg::Nsmid: return "%nsmid";
    case SReg::Gridid: return "%gridid";
    case SReg::LanemaskEq: return "%lanemask_eq";
    case SReg::LanemaskLe: return "%lanemask_le";
    case SReg::LanemaskLt: return "%lanemask_lt";
    case SReg::LanemaskGe: return "%lanemask_ge";
    case SReg::LanemaskGt: return "%lanemask_gt";
    case SReg::Clock: return "%clock";
    case SReg::ClockHi: return "%clock_hi";
    case SReg::Clock64: return "%clock64";
    case SReg::Globaltimer: return "%globaltimer";
    case SReg::GlobaltimerLo: return "%globaltimer_lo";
    case SReg::GlobaltimerHi: return "%globaltimer_hi";
    case SReg::DynamicSmemSize: return "%dynamic_smem_size";
    case SReg::TotalSmemSize: return "%total_smem_size";
    case SReg::Envreg: return "%envreg";
    case SReg::Pm: return "%pm";
    case SReg::Pm64: return "%pm_64";
    case SReg::AggrSmemSize: return "%aggr_smem_size";
    case SReg::ReservedSmemOffsetBegin: return "%reserved_smem_offset_begin";
    case SReg::ReservedSmemOffsetEnd: return "%reserved_smem_offset_end";
    case SReg::ReservedSmemOffsetCap: return "%reserved_smem_offset_cap";
    case SReg::ReservedSmemOffset: return "%reserved_smem_offset_";
    case SReg::CurrentGraphExec: return "%current_graph_exec";
    case SReg::IsExplicitCluster: return "%is_explicit_cluster";
    case SReg::Clusterid: return "%clusterid";
    case SReg::Nclusterid: return "%nclusterid";
    case SReg::ClusterCtaid: return "%cluster_ctaid";
    case SReg::ClusterNctaid: return "%cluster_nctaid";
    case SReg::ClusterCtarank: return "%cluster_ctarank";
    case SReg::ClusterNctarank: return "%cluster_nctarank";
  }
  return "?";
}

std::optional<uint32_t> Module::function_index(std::string_view name) const {
  for (uint32_t i = 0; i < functions.size(); ++i)
    if (functions[i].name == name) return i;
  return std::nullopt;
}

const Function* Module::find_function(std::string_view name) const {
  auto i = function_index(name);
  return i ? &functions[*i] : nullptr;
}

const Var* Module::find_var(std::string_view name) const {
  for (const Var& v : vars)
    if (v.name == name) return &v;
  return nullptr;
}

}  // namespace qgpu::ptx
