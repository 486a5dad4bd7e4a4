// The in-memory form of a PTX module, as produced by qgpu::ptx::parse().
//
// Shape
//   Module
//     vars       module-scope .global/.const/.shared variables (Var), with
//                their initial bytes and address-of-symbol relocations
//     functions  every .entry and .func, declarations (.extern, prototypes
//                without a body) included (Function)
//   Function
//     params, rets   the parameter list and the return parameters (Var in
//                    Space::Param); kernel parameter offsets are filled in
//     vars           variables declared in the body: .local, .shared (nvcc
//                    "demotes" static __shared__ into the kernel body) and
//                    call-site .param declarations; every declaration gets
//                    its own slot even when a name is reused in another
//                    { } scope, so references are unambiguous
//     regs           one entry per declared register (a range `%r<10>`
//                    declares %r0..%r9); shadowing declarations in nested
//                    { } scopes get their own entries
//     body           a flat list of instructions; `{ }` scopes are resolved
//                    away by the parser
//     labels         label name -> index of the instruction it precedes
//                    (== body.size() for a label at the very end)
//
// Names are resolved by the parser: a register operand carries the index of
// its Reg, a symbol carries a SymRef (which table and which slot), a branch
// target carries the Label index.  The lowering never looks up a name.
//
// Instructions
//   `op` is the operation; `opcode` keeps the mnemonic exactly as written
//   (e.g. "ld.global.nc.v4.u32") for error messages.  Suffixes are decoded
//   into the fields of Instr; rounding, .ftz, cache operators and cache hints
//   are accepted and dropped.  Floating-point and other operations that integer
//   kernels do not use still parse (their own Op values, or Op::Other for
//   tensor/async-copy families and texture forms other than tex/suld.b/sust.b
//   on an object in a register, whose operands are not decoded), so a
//   module mixing such kernels with integer kernels loads; the lowering
//   rejects them by name.
//
//   Type fields: `type` is the first type suffix, `type2` the second one.
//     cvt.u32.u64      type = U32 (destination), type2 = U64 (source)
//     set.eq.u32.s32   type = U32 (destination), type2 = S32 (compared)
//     slct.s32.s32     type = S32 (selected values), type2 = S32 (c)
//     mul.wide.s32     type = S32 (sources; destination is twice as wide)
//     bar.red.popc.u32 type = U32
//   Operand order is the PTX order: destinations first.  Special forms:
//     setp with two destinations   `p|q`  -> Operand::Kind::PredPair
//     shfl.sync with `d|p`                -> Operand::Kind::PredPair (reg2 = p)
//     negated predicate source `!%p`      -> Operand::neg
//     call: ops = { rets (Vector, maybe empty), callee (Sym of kind Func, or
//                   Reg for an indirect call), args (Vector, maybe empty),
//                   and for an indirect call the prototype (Name) }
//     bra: ops = { Label }.  ret/exit/trap: no operands.
//   The parser checks operand counts, that destinations are registers, that
//   memory operations have an address operand, and that .vN loads and
//   stores carry N data operands in { }.
//
// Source positions: every Instr records the 1-based source line.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace qgpu::ptx {

enum class Type : uint8_t {
  None,
  Pred,
  B8, B16, B32, B64, B128,
  U8, U16, U32, U64,
  S8, S16, S32, S64,
  F16, F16x2, BF16, BF16x2, F32, F64,
  // opaque handles (.texref etc.) of module-scope variables
  Texref, Samplerref, Surfref,
};

// Size in bytes of one value of `t` (Pred: 1, None: 0).
uint32_t type_size(Type t);
bool is_signed(Type t);       // S8..S64
bool is_float(Type t);        // F16..F64
const char* type_name(Type t);  // "u32" (no dot)

enum class Space : uint8_t {
  None,     // no state space given: generic addressing for ld/st/atom
  Reg,
  Global,
  Shared,
  SharedCluster,
  Local,
  Const,
  Param,
};
const char* space_name(Space s);

enum class Op : uint16_t {
  // Integer and bit arithmetic
  Add, Addc, Sub, Subc, Mul, Mad, Madc, Mul24, Mad24, Sad, Div, Rem,
  Abs, Neg, Min, Max, Popc, Clz, Bfind, Brev, Bfe, Bfi, Prmt, Shf, Shl, Shr,
  And, Or, Xor, Not, Cnot, Lop3, Dp4a, Dp2a, Szext, Bmsk, Fns,
  // Moves, conversions, comparisons
  Mov, Cvt, Cvta, Selp, Slct, Setp, Set, Isspacep,
  // Memory
  Ld, Ldu, St, Prefetch, Atom, Red,
  // Control
  Bra, Brx, Call, Ret, Exit, Trap, Brkpt, Nanosleep,
  // Synchronisation
  Bar,      // bar.sync / bar.arrive / bar.red / barrier.sync / barrier.cta...
  BarWarp,  // bar.warp.sync
  Membar, Fence,
  // Warp-level
  Shfl, Vote, Activemask, Match, Redux,
  // Warp matrix operations (wmma.load/store/mma; Instr::wmma, wmma.h)
  Wmma,
  // Floating point only (the type-generic ones above also take float types)
  Fma, Rcp, Sqrt, Rsqrt, Sin, Cos, Lg2, Ex2, Tanh, Copysign, Testp,
  // Textures and surfaces (docs/isa.md section 8.3):
  //   tex:  ops = { dest Vector (4 regs), handle (Reg), coords Vector }
  //   suld: ops = { dest (Reg or Vector), handle (Reg), coords Vector }
  //   sust: ops = { handle (Reg), coords Vector, value (Reg or Vector) }
  Tex, Suld, Sust,
  // Recognised PTX whose operands are not decoded (tld4, txq, mma, cp.async...)
  Other,
};
const char* op_name(Op op);  // base mnemonic, "add"

enum class Cmp : uint8_t {
  None,
  Eq, Ne, Lt, Le, Gt, Ge,         // signed/unsigned decided by the type
  Lo, Ls, Hi, Hs,                 // unsigned forms
  Equ, Neu, Ltu, Leu, Gtu, Geu,   // float, unordered
  Num, Nan,
};
enum class BoolOp : uint8_t { None, And, Or, Xor };  // setp/set combining
enum class MulMode : uint8_t { None, Lo, Hi, Wide };
// atom/red operation; also bar.red (Popc/And/Or) and redux.sync
enum class AtomOp : uint8_t { None, Add, Min, Max, Exch, Cas, And, Or, Xor, Inc, Dec, Popc };
enum class ShflMode : uint8_t { None, Idx, Up, Down, Bfly };
enum class VoteMode : uint8_t { None, Any, All, Ballot, Uni };
enum class MatchMode : uint8_t { None, Any, All };
enum class ShfDir : uint8_t { None, L, R };
enum class ShfMode : uint8_t { None, Wrap, Clamp };  // shf, bmsk, szext
enum class PrmtMode : uint8_t { None, F4e, B4e, Rc8, Ecl, Ecr, Rc16 };
// tex/suld/sust geometry (.1d .2d .3d .a1d .a2d .cube .acube).
enum class TexGeom : uint8_t { None, D1, D2, D3, A1D, A2D, Cube, ACube };
enum class BarKind : uint8_t { None, Sync, Arrive, Red };
// wmma: which operation, the shape, the memory layout of a load or store
// (.row or .col), the element type of A and B of an mma (Instr::type is
// D's, type2 C's; a load's or store's type is its elements'), .satfinite.
//   load:  ops = { fragment Vector, address, [stride] }
//   store: ops = { address, fragment Vector, [stride] }
//   mma:   ops = { D Vector, A Vector, B Vector, C Vector }
enum class WmmaOp : uint8_t { None, LoadA, LoadB, LoadC, StoreD, Mma };
struct WmmaInfo {
  WmmaOp op = WmmaOp::None;
  uint8_t m = 0, n = 0, k = 0;
  bool col = false;
  Type ab = Type::None;
  bool satfinite = false;
};
enum class Sem : uint8_t { None, Weak, Relaxed, Acquire, Release, AcqRel, Sc, Mmio };
enum class Scope : uint8_t { None, Cta, Cluster, Gpu, Sys };

enum class SReg : uint8_t {
  Tid, Ntid, Ctaid, Nctaid,          // with a component x/y/z
  Laneid, Warpid, Nwarpid, Smid, Nsmid, Gridid,
  LanemaskEq, LanemaskLe, LanemaskLt, LanemaskGe, LanemaskGt,
  Clock, ClockHi, Clock64, Globaltimer, GlobaltimerLo, GlobaltimerHi,
  DynamicSmemSize, TotalSmemSize,
  // The other predefined identifiers of the PTX ISA.  Envreg, Pm and Pm64
  // carry their index in Operand::imm (%envreg7: imm 7); the cluster
  // registers describe the implicit 1x1x1 cluster of every CTA.
  Envreg, Pm, Pm64, AggrSmemSize,
  ReservedSmemOffsetBegin, ReservedSmemOffsetEnd, ReservedSmemOffsetCap, ReservedSmemOffset,
  CurrentGraphExec, IsExplicitCluster,
  Clusterid, Nclusterid, ClusterCtaid, ClusterNctaid, ClusterCtarank, ClusterNctarank,
};
const char* sreg_name(SReg s);  // "%tid" (no component)

inline constexpr uint32_t kNoReg = 0xFFFFFFFFu;

// Which table a resolved symbol lives in.
enum class SymKind : uint8_t {
  ModuleVar,  // Module::vars[index]
  Param,      // the enclosing Function::params[index]
  Ret,        // the enclosing Function::rets[index]
  LocalVar,   // the enclosing Function::vars[index] (.local/.shared/.param in the body)
  Func,       // Module::functions[index] (call target, or address of a function)
};
struct SymRef {
  SymKind kind = SymKind::ModuleVar;
  uint32_t index = 0;
};

struct Operand {
  enum class Kind : uint8_t {
    Reg,       // reg
    PredPair,  // reg | reg2
    Imm,       // imm (integers, sign-extended to 64 bits)
    FImm,      // imm holds the raw bits; fbits is 32 (0f...) or 64 (0d..., decimal)
    Sym,       // sym (+ imm offset): the symbol's address, or a function
    Special,   // sreg, component ('x','y','z', or 0)
    Addr,      // [base + imm]: base is reg, sym, or nothing (absolute)
    Vector,    // { elems... }
    Label,     // label: index into Function::labels
    Sink,      // `_`
    Name,      // name only (call prototype label)
  };
  Kind kind = Kind::Imm;
  bool neg = false;            // `!%p`
  uint32_t reg = kNoReg;
  uint32_t reg2 = kNoReg;
  int64_t imm = 0;
  uint8_t fbits = 0;
  SymRef sym{};
  bool has_sym = false;        // Addr/Sym: base is a symbol
  SReg sreg = SReg::Tid;
  char component = 0;
  uint32_t label = 0;
  std::string name;            // symbol/label/prototype name as written
  std::vector<Operand> elems;  // Vector
};

struct Guard {
  uint32_t reg = kNoReg;  // kNoReg: unconditional
  bool neg = false;       // @!%p
};

struct Instr {
  Op op = Op::Other;
  std::string opcode;  // full mnemonic as written
  int line = 0;
  Guard guard;

  Type type = Type::None, type2 = Type::None;
  Space space = Space::None;
  Cmp cmp = Cmp::None;
  BoolOp bool_op = BoolOp::None;
  MulMode mul = MulMode::None;
  AtomOp atom = AtomOp::None;
  ShflMode shfl = ShflMode::None;
  VoteMode vote = VoteMode::None;
  MatchMode match = MatchMode::None;
  ShfDir shf_dir = ShfDir::None;
  ShfMode shf_mode = ShfMode::None;
  PrmtMode prmt = PrmtMode::None;
  BarKind bar = BarKind::None;
  Sem sem = Sem::None;
  Scope scope = Scope::None;
  uint8_t vec = 1;         // .v2/.v4/.v8
  bool is_volatile = false;
  bool sat = false;        // .sat (add/sub/mad .s32; cvt)
  bool cc = false;         // .cc carry-out (add.cc, sub.cc, mad.cc)
  bool uni = false;        // bra.uni / call.uni / ret.uni
  bool to = false;         // cvta.to
  bool sync = false;       // .sync (shfl/vote/match/bar/redux)
  bool aligned = false;    // .aligned
  bool shiftamt = false;   // bfind.shiftamt
  bool nc = false;         // ld.global.nc
  TexGeom geom = TexGeom::None;  // tex/suld/sust
  uint8_t surf_clamp = 0;  // suld/sust: 0 .trap (the default), 1 .clamp, 2 .zero
  WmmaInfo wmma;           // wmma only

  std::vector<Operand> ops;
};

// A variable: module scope, function parameter, or declared in a body.
struct Var {
  std::string name;
  Space space = Space::None;
  Type type = Type::None;    // element type (.b8 for byte arrays)
  uint32_t align = 0;        // from .align, else the element size
  uint64_t size = 0;         // bytes; 0 for an unsized `[]` array
  bool is_array = false;
  bool is_extern = false;    // .extern (e.g. dynamic shared memory)
  bool is_visible = false;   // .visible
  bool is_weak = false;      // .weak
  bool is_managed = false;   // .attribute(.managed)
  uint64_t offset = 0;       // kernel params: byte offset in the param buffer
  int line = 0;

  // Initial contents (module-scope .global/.const); empty: zero-filled.
  // Shorter than `size`: the rest is zero.
  std::vector<uint8_t> init;
  // Address-of-symbol initializers: at `offset` (bytes into init), store
  // `size` bytes of the address of `symbol` + addend.  `generic` marks
  // generic(sym); a plain sym in .global/.const also means its generic address.
  struct Reloc {
    uint64_t offset = 0;
    uint32_t size = 8;
    std::string symbol;
    int64_t addend = 0;
    bool generic = false;
  };
  std::vector<Reloc> relocs;
};

struct Reg {
  std::string name;  // "%r3"
  Type type = Type::None;
};

struct Label {
  std::string name;
  uint32_t target = 0;  // index in Function::body
};

struct Function {
  std::string name;
  bool is_entry = false;     // .entry (kernel) vs .func
  bool is_extern = false;    // .extern: declared here, defined elsewhere
  bool is_visible = false;
  bool is_weak = false;
  bool has_body = false;     // false for declarations and prototypes
  bool noreturn = false;
  int line = 0;

  std::vector<Var> params;   // Space::Param; offsets filled for kernels
  std::vector<Var> rets;     // return parameters (.func only)
  std::vector<Var> vars;     // body declarations (.local/.shared/.param)
  std::vector<Reg> regs;
  std::vector<Instr> body;
  std::vector<Label> labels;

  // Performance directives (0 = not given).
  uint32_t maxntid[3] = {0, 0, 0};
  uint32_t reqntid[3] = {0, 0, 0};
  uint32_t minnctapersm = 0;
  uint32_t maxnreg = 0;
};

struct Module {
  std::string version;         // ".version 9.0" -> "9.0"
  std::string target;          // "sm_75" (first target word)
  uint32_t address_size = 64;
  std::vector<Var> vars;
  std::vector<Function> functions;

  // Lookup by name; nullptr / nullopt if absent.
  const Function* find_function(std::string_view name) const;
  std::optional<uint32_t> function_index(std::string_view name) const;
  const Var* find_var(std::string_view name) const;
};

}  // namespace qgpu::ptx
