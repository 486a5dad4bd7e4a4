// PTX text -> Module.  A recursive-descent parser over the token stream of
// lexer.cpp.  Names are resolved here (see ir.h): registers and body
// variables through a stack of { } scopes, labels at the end of each
// function, module-scope symbols and call targets at the end of the module
// (PTX allows a kernel to name a function declared after it).
#include "model_host/ptx/parse.h"

#include <algorithm>
#include <iterator>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <unordered_map>
#include <unordered_set>

#include "model_host/ptx/lexer.h"

namespace qgpu::ptx {

ParseError::ParseError(int line, const std::string& message)
    : std::runtime_error("PTX line " + std::to_string(line) + ": " + message), line_(line) {}

namespace {

using detail::Token;
using TK = Token::Kind;

constexpr uint32_t kUnresolved = 0xFFFFFFFFu;

// ---------------------------------------------------------------------------
// Keyword tables

template <class V>
std::optional<V> lookup(const std::unordered_map<std::string_view, V>& m, std::string_view key) {
  auto it = m.find(key);
  if (it == m.end()) return std::nullopt;
  return it->second;
}

std::optional<Type> type_of(std::string_view s) {
  static const std::unordered_map<std::string_view, Type> m = {
      {"pred", Type::Pred}, {"b8", Type::B8},     {"b16", Type::B16},   {"b32", Type::B32},
      {"b64", Type::B64},   {"b128", Type::B128}, {"u8", Type::U8},     {"u16", Type::U16},
      {"u32", Type::U32},   {"u64", Type::U64},   {"s8", Type::S8},     {"s16", Type::S16},
      {"s32", Type::S32},   {"s64", Type::S64},   {"f16", Type::F16},   {"f16x2", Type::F16x2},
      {"bf16", Type::BF16}, {"bf16x2", Type::BF16x2}, {"f32", Type::F32}, {"f64", Type::F64},
      {"texref", Type::Texref}, {"samplerref", Type::Samplerref}, {"surfref", Type::Surfref},
  };
  return lookup(m, s);
}

std::optional<Space> space_of(std::string_view s) {
  static const std::unordered_map<std::string_view, Space> m = {
      {"global", Space::Global}, {"shared", Space::Shared}, {"shared::cta", Space::Shared},
      {"shared::cluster", Space::SharedCluster}, {"local", Space::Local}, {"const", Space::Const},
      {"param", Space::Param}, {"param::entry", Space::Param}, {"param::func", Space::Param},
      {"reg", Space::Reg},
  };
  return lookup(m, s);
}

std::optional<Cmp> cmp_of(std::string_view s) {
  static const std::unordered_map<std::string_view, Cmp> m = {
      {"eq", Cmp::Eq},   {"ne", Cmp::Ne},   {"lt", Cmp::Lt},   {"le", Cmp::Le},
      {"gt", Cmp::Gt},   {"ge", Cmp::Ge},   {"lo", Cmp::Lo},   {"ls", Cmp::Ls},
      {"hi", Cmp::Hi},   {"hs", Cmp::Hs},   {"equ", Cmp::Equ}, {"neu", Cmp::Neu},
      {"ltu", Cmp::Ltu}, {"leu", Cmp::Leu}, {"gtu", Cmp::Gtu}, {"geu", Cmp::Geu},
      {"num", Cmp::Num}, {"nan", Cmp::Nan},
  };
  return lookup(m, s);
}

std::optional<SReg> sreg_of(std::string_view s, bool& has_component) {
  struct E { SReg r; bool comp; };
  static const std::unordered_map<std::string_view, E> m = {
      {"%tid", {SReg::Tid, true}}, {"%ntid", {SReg::Ntid, true}}, {"%ctaid", {SReg::Ctaid, true}},
      {"%nctaid", {SReg::Nctaid, true}}, {"%laneid", {SReg::Laneid, false}},
      {"%warpid", {SReg::Warpid, false}}, {"%nwarpid", {SReg::Nwarpid, false}},
      {"%smid", {SReg::Smid, false}}, {"%nsmid", {SReg::Nsmid, false}},
      {"%gridid", {SReg::Gridid, false}}, {"%lanemask_eq", {SReg::LanemaskEq, false}},
      {"%lanemask_le", {SReg::LanemaskLe, false}}, {"%lanemask_lt", {SReg::LanemaskLt, false}},
      {"%lanemask_ge", {SReg::LanemaskGe, false}}, {"%lanemask_gt", {SReg::LanemaskGt, false}},
      {"%clock", {SReg::Clock, false}}, {"%clock_hi", {SReg::ClockHi, false}},
      {"%clock64", {SReg::Clock64, false}}, {"%globaltimer", {SReg::Globaltimer, false}},
      {"%globaltimer_lo", {SReg::GlobaltimerLo, false}},
      {"%globaltimer_hi", {SReg::GlobaltimerHi, false}},
      {"%dynamic_smem_size", {SReg::DynamicSmemSize, false}},
      {"%total_smem_size", {SReg::TotalSmemSize, false}},
      {"%aggr_smem_size", {SReg::AggrSmemSize, false}},
      {"%reserved_smem_offset_begin", {SReg::ReservedSmemOffsetBegin, false}},
      {"%reserved_smem_offset_end", {SReg::ReservedSmemOffsetEnd, false}},
      {"%reserved_smem_offset_cap", {SReg::ReservedSmemOffsetCap, false}},
      {"%current_graph_exec", {SReg::CurrentGraphExec, false}},
      {"%is_explicit_cluster", {SReg::IsExplicitCluster, false}},
      {"%clusterid", {SReg::Clusterid, true}}, {"%nclusterid", {SReg::Nclusterid, true}},
      {"%cluster_ctaid", {SReg::ClusterCtaid, true}}, {"%cluster_nctaid", {SReg::ClusterNctaid, true}},
      {"%cluster_ctarank", {SReg::ClusterCtarank, false}},
      {"%cluster_nctarank", {SReg::ClusterNctarank, false}},
  };
  auto it = m.find(s);
  if (it == m.end()) return std::nullopt;
  has_component = it->second.comp;
  return it->second.r;
}

// The predefined identifiers with an index: %envreg0..31, %pm0..7,
// %pm0_64..%pm7_64, %reserved_smem_offset_0..1.
std::optional<std::pair<SReg, uint32_t>> indexed_sreg_of(std::string_view s) {
  struct E { std::string_view prefix, suffix; SReg r; uint32_t count; };
  static const E kinds[] = {{"%envreg", "", SReg::Envreg, 32},
                            {"%pm", "_64", SReg::Pm64, 8},
                            {"%pm", "", SReg::Pm, 8},
                            {"%reserved_smem_offset_", "", SReg::ReservedSmemOffset, 2}};
  for (const E& e : kinds) {
    if (!s.starts_with(e.prefix) || !s.ends_with(e.suffix)) continue;
    std::string_view digits = s.substr(e.prefix.size(), s.size() - e.prefix.size() - e.suffix.size());
    if (digits.empty() || digits.size() > 2) continue;
    uint32_t n = 0;
    bool ok = true;
    for (char c : digits) ok &= c >= '0' && c <= '9', n = n * 10 + uint32_t(c - '0');
    if (ok && n < e.count && !(digits.size() == 2 && digits[0] == '0')) return std::pair{e.r, n};
  }
  return std::nullopt;
}

// Base mnemonics.  Op::Other entries are recognised families whose operands
// are not decoded.
std::optional<Op> op_of(std::string_view s) {
  static const std::unordered_map<std::string_view, Op> m = {
      {"add", Op::Add}, {"addc", Op::Addc}, {"sub", Op::Sub}, {"subc", Op::Subc},
      {"mul", Op::Mul}, {"mad", Op::Mad}, {"madc", Op::Madc}, {"mul24", Op::Mul24},
      {"mad24", Op::Mad24}, {"sad", Op::Sad}, {"div", Op::Div}, {"rem", Op::Rem},
      {"abs", Op::Abs}, {"neg", Op::Neg}, {"min", Op::Min}, {"max", Op::Max},
      {"popc", Op::Popc}, {"clz", Op::Clz}, {"bfind", Op::Bfind}, {"brev", Op::Brev},
      {"bfe", Op::Bfe}, {"bfi", Op::Bfi}, {"prmt", Op::Prmt}, {"shf", Op::Shf},
      {"shl", Op::Shl}, {"shr", Op::Shr}, {"and", Op::And}, {"or", Op::Or},
      {"xor", Op::Xor}, {"not", Op::Not}, {"cnot", Op::Cnot}, {"lop3", Op::Lop3},
      {"dp4a", Op::Dp4a}, {"dp2a", Op::Dp2a}, {"szext", Op::Szext}, {"bmsk", Op::Bmsk},
      {"fns", Op::Fns}, {"mov", Op::Mov}, {"cvt", Op::Cvt}, {"cvta", Op::Cvta},
      {"selp", Op::Selp}, {"slct", Op::Slct}, {"setp", Op::Setp}, {"set", Op::Set},
      {"isspacep", Op::Isspacep}, {"ld", Op::Ld}, {"ldu", Op::Ldu}, {"st", Op::St},
      {"prefetch", Op::Prefetch}, {"prefetchu", Op::Prefetch}, {"atom", Op::Atom},
      {"red", Op::Red}, {"bra", Op::Bra}, {"brx", Op::Brx}, {"call", Op::Call},
      {"ret", Op::Ret}, {"exit", Op::Exit}, {"trap", Op::Trap}, {"brkpt", Op::Brkpt},
      {"nanosleep", Op::Nanosleep}, {"bar", Op::Bar}, {"barrier", Op::Bar},
      {"membar", Op::Membar}, {"fence", Op::Fence}, {"shfl", Op::Shfl}, {"vote", Op::Vote},
      {"activemask", Op::Activemask}, {"match", Op::Match}, {"redux", Op::Redux},
      {"fma", Op::Fma}, {"rcp", Op::Rcp}, {"sqrt", Op::Sqrt}, {"rsqrt", Op::Rsqrt},
      {"sin", Op::Sin}, {"cos", Op::Cos}, {"lg2", Op::Lg2}, {"ex2", Op::Ex2},
      {"tanh", Op::Tanh}, {"copysign", Op::Copysign}, {"testp", Op::Testp},
      {"tex", Op::Tex}, {"tld4", Op::Other}, {"txq", Op::Other}, {"suld", Op::Suld},
      {"sust", Op::Sust}, {"sured", Op::Other}, {"suq", Op::Other}, {"istypep", Op::Other},
      {"mma", Op::Other}, {"wmma", Op::Wmma}, {"wgmma", Op::Other}, {"ldmatrix", Op::Other},
      {"stmatrix", Op::Other}, {"movmatrix", Op::Other}, {"cp", Op::Other},
      {"mbarrier", Op::Other}, {"multimem", Op::Other}, {"tensormap", Op::Other},
      {"elect", Op::Other}, {"griddepcontrol", Op::Other}, {"getctarank", Op::Other},
      {"mapa", Op::Other}, {"discard", Op::Other}, {"applypriority", Op::Other},
      {"createpolicy", Op::Other}, {"alloca", Op::Other}, {"stacksave", Op::Other},
      {"stackrestore", Op::Other}, {"setmaxnreg", Op::Other}, {"pmevent", Op::Other},
      {"vabsdiff", Op::Other}, {"vadd", Op::Other}, {"vsub", Op::Other}, {"vmad", Op::Other},
      {"vmin", Op::Other}, {"vmax", Op::Other}, {"vshl", Op::Other}, {"vshr", Op::Other},
      {"vset", Op::Other}, {"vabsdiff2", Op::Other}, {"vabsdiff4", Op::Other},
      {"vadd2", Op::Other}, {"vadd4", Op::Other}, {"vsub2", Op::Other}, {"vsub4", Op::Other},
      {"vavrg2", Op::Other}, {"vavrg4", Op::Other}, {"vmin2", Op::Other}, {"vmin4", Op::Other},
      {"vmax2", Op::Other}, {"vmax4", Op::Other}, {"vset2", Op::Other}, {"vset4", Op::Other},
      {"tcgen05", Op::Other}, {"clusterlaunchcontrol", Op::Other},
  };
  return lookup(m, s);
}

// Operand count bounds, for the operations whose operands are decoded.
struct Arity { uint8_t min, max; bool has_dest; };
Arity arity_of(const Instr& in) {
  switch (in.op) {
    case Op::Add: case Op::Addc: case Op::Sub: case Op::Subc: case Op::Mul: case Op::Mul24:
    case Op::Div: case Op::Rem: case Op::Min: case Op::Max: case Op::Shl: case Op::Shr:
    case Op::And: case Op::Or: case Op::Xor: case Op::Copysign: case Op::Bmsk:
    case Op::Szext:
      return {3, 3, true};
    case Op::Set: return in.bool_op == BoolOp::None ? Arity{3, 3, true} : Arity{4, 4, true};
    case Op::Cvt:  // cvt.rnd.f16x2.f32 and cvt.rnd.bf16x2.f32 d, a, b
      if (in.type == Type::F16x2 || in.type == Type::BF16x2) return {3, 3, true};
      return {2, 2, true};
    case Op::Mad: case Op::Madc: case Op::Mad24: case Op::Sad: case Op::Bfe: case Op::Prmt:
    case Op::Selp: case Op::Slct: case Op::Fma: case Op::Dp4a: case Op::Fns:
      return {4, 4, true};
    case Op::Shf: case Op::Dp2a: return {4, 4, true};
    case Op::Bfi: case Op::Lop3: return {5, 5, true};
    case Op::Abs: case Op::Neg: case Op::Popc: case Op::Clz: case Op::Bfind: case Op::Brev:
    case Op::Not: case Op::Cnot: case Op::Mov: case Op::Cvta: case Op::Rcp:
    case Op::Sqrt: case Op::Rsqrt: case Op::Sin: case Op::Cos: case Op::Lg2: case Op::Ex2:
    case Op::Tanh: case Op::Testp: case Op::Isspacep:
      return {2, 2, true};
    case Op::Setp: return in.bool_op == BoolOp::None ? Arity{3, 3, true} : Arity{4, 4, true};
    case Op::Ld: case Op::Ldu: return {2, 3, true};
    case Op::St: return {2, 3, false};
    case Op::Prefetch: return {1, 1, false};
    case Op::Atom: return in.atom == AtomOp::Cas ? Arity{4, 5, true} : Arity{3, 4, true};
    case Op::Red: return {2, 3, false};
    case Op::Bra: return {1, 1, false};
    case Op::Ret: case Op::Exit: case Op::Trap: case Op::Brkpt: case Op::Membar: case Op::Fence:
      return {0, 0, false};
    case Op::Nanosleep: case Op::BarWarp: return {1, 1, false};
    case Op::Bar: return in.bar == BarKind::Red ? Arity{3, 4, true} : Arity{1, 2, false};
    case Op::Shfl: return {4, 5, true};
    case Op::Vote: return {2, 3, true};
    case Op::Activemask: return {1, 1, true};
    case Op::Match: return {3, 3, true};
    case Op::Redux: return {3, 3, true};
    case Op::Call: case Op::Brx: case Op::Other: case Op::Tex: case Op::Suld: case Op::Sust: case Op::Wmma: break;
  }
  return {0, 255, false};
}

// ---------------------------------------------------------------------------

struct NameScope {
  std::unordered_map<std::string, uint32_t> regs;
  std::unordered_map<std::string, SymRef> syms;
};

// A reference to a module-scope symbol seen in a body, resolved at the end.
struct Pending {
  uint32_t func, instr;
  std::vector<uint32_t> path;  // operand index, then element indices
};

class Parser {
 public:
  explicit Parser(std::string_view text) : toks_(detail::tokenize(text)) {}

  Module run() {
    while (!at_end()) top_level();
    resolve_module_symbols();
    for (Function& f : m_.functions) {
      if (f.is_entry) layout_params(f);
      if (f.has_body) place_latches(f);
    }
    return std::move(m_);
  }

 private:
  std::vector<Token> toks_;
  size_t p_ = 0;
  Module m_;
  std::vector<Pending> pending_;
  // Parsing state of the current function body.
  Function* fn_ = nullptr;
  uint32_t fn_index_ = 0;
  std::vector<NameScope> scopes_;
  std::unordered_map<std::string, uint32_t> label_ids_;
  std::vector<int> label_use_line_;

  // -- token helpers --------------------------------------------------------
  const Token& peek(size_t k = 0) const {
    size_t i = p_ + k;
    return toks_[i < toks_.size() ? i : toks_.size() - 1];
  }
  bool at_end() const { return peek().kind == TK::End; }
  const Token& next() {
    const Token& t = peek();
    if (t.kind != TK::End) ++p_;
    return t;
  }
  bool is_punct(char c, size_t k = 0) const {
    const Token& t = peek(k);
    return t.kind == TK::Punct && t.text[0] == c;
  }
  bool is_dotted(std::string_view d, size_t k = 0) const {
    const Token& t = peek(k);
    return t.kind == TK::Dotted && t.text == d;
  }
  bool accept(char c) {
    if (!is_punct(c)) return false;
    ++p_;
    return true;
  }
  static std::string describe(const Token& t) {
    if (t.kind == TK::End) return "end of input";
    if (t.kind == TK::String) return "string \"" + std::string(t.text) + "\"";
    return "'" + std::string(t.text) + "'";
  }
  [[noreturn]] void fail(const Token& t, const std::string& what) const {
    throw ParseError(t.line, what + " at " + describe(t));
  }
  [[noreturn]] void fail_here(const std::string& what) const { fail(peek(), what); }
  void expect(char c, const std::string& context) {
    if (!accept(c)) fail_here(std::string("expected '") + c + "' " + context);
  }
  std::string_view ident(const char* what) {
    if (peek().kind != TK::Ident) fail_here(std::string("expected ") + what);
    return next().text;
  }
  uint64_t integer(const char* what) {
    const Token& t = peek();
    if (t.kind != TK::Int) fail_here(std::string("expected ") + what);
    ++p_;
    return int_value(t);
  }
  uint64_t int_value(const Token& t) const {
    std::string_view s = t.text;
    if (!s.empty() && (s.back() == 'U' || s.back() == 'u')) s.remove_suffix(1);
    int base = 10;
    if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) { base = 16; s.remove_prefix(2); }
    else if (s.size() > 2 && s[0] == '0' && (s[1] == 'b' || s[1] == 'B')) { base = 2; s.remove_prefix(2); }
    else if (s.size() > 1 && s[0] == '0') { base = 8; s.remove_prefix(1); }
    if (s.empty()) fail(t, "malformed integer");
    uint64_t v = 0;
    for (char c : s) {
      unsigned d = c <= '9' ? unsigned(c - '0') : unsigned((c | 0x20) - 'a' + 10);
      if (d >= unsigned(base)) fail(t, "malformed integer");
      if (v > (std::numeric_limits<uint64_t>::max() - d) / uint64_t(base))
        fail(t, "integer literal out of range");
      v = v * base + d;
    }
    return v;
  }
  // Float literal -> raw bits; `bits` 32 for 0f, otherwise 64.
  uint64_t float_value(const Token& t, uint8_t& bits) const {
    std::string_view s = t.text;
    if (s.size() > 2 && s[0] == '0' && (s[1] == 'f' || s[1] == 'F' || s[1] == 'd' || s[1] == 'D')) {
      bits = (s[1] == 'f' || s[1] == 'F') ? 32 : 64;
      uint64_t v = 0;
      for (char c : s.substr(2)) v = v * 16 + (c <= '9' ? unsigned(c - '0') : unsigned((c | 0x20) - 'a' + 10));
      return v;
    }
    std::string str(s);
    char* end = nullptr;
    double d = std::strtod(str.c_str(), &end);
    if (end != str.c_str() + str.size()) fail(t, "malformed float literal");
    bits = 64;
    uint64_t v;
    std::memcpy(&v, &d, 8);
    return v;
  }

  // Skips a balanced { ... } block (used for .section).
  void skip_braces() {
    expect('{', "to open the block");
    int depth = 1;
    while (depth > 0) {
      if (at_end()) fail_here("unterminated block");
      const Token& t = next();
      if (t.kind == TK::Punct && t.text[0] == '{') ++depth;
      if (t.kind == TK::Punct && t.text[0] == '}') --depth;
    }
  }
  void skip_to_semicolon() {
    while (!accept(';')) {
      if (at_end()) fail_here("expected ';'");
      ++p_;
    }
  }

  // -- module level ---------------------------------------------------------
  void top_level() {
    const Token& t = peek();
    if (t.kind != TK::Dotted) fail(t, "expected a directive");
    std::string_view d = t.text;
    if (d == ".version") {
      next();
      const Token& v = next();
      if (v.kind != TK::Float && v.kind != TK::Int) fail(v, "expected a version number");
      m_.version = std::string(v.text);
      return;
    }
    if (d == ".target") {
      next();
      m_.target = std::string(ident("a target name"));
      while (accept(',')) ident("a target option");
      return;
    }
    if (d == ".address_size") {
      next();
      m_.address_size = static_cast<uint32_t>(integer("an address size"));
      if (m_.address_size != 64 && m_.address_size != 32) fail_here("address size must be 32 or 64");
      return;
    }
    if (d == ".file") {
      next();
      integer("a file number");
      if (peek().kind != TK::String) fail_here("expected a file name");
      next();
      while (accept(',')) integer("a file timestamp or size");
      return;
    }
    if (d == ".section") {
      next();
      if (peek().kind != TK::Dotted && peek().kind != TK::Ident) fail_here("expected a section name");
      next();
      skip_braces();
      return;
    }
    if (d == ".pragma") {
      next();
      if (peek().kind != TK::String) fail_here("expected a pragma string");
      next();
      while (accept(',')) {
        if (peek().kind != TK::String) fail_here("expected a pragma string");
        next();
      }
      expect(';', "after .pragma");
      return;
    }
    // Linkage, then .entry/.func or a variable.
    bool is_extern = false, is_visible = false, is_weak = false;
    for (;;) {
      if (is_dotted(".extern")) is_extern = true;
      else if (is_dotted(".visible")) is_visible = true;
      else if (is_dotted(".weak") || is_dotted(".common")) is_weak = true;
      else break;
      next();
    }
    if (is_dotted(".entry") || is_dotted(".func")) {
      function(is_extern, is_visible, is_weak);
      return;
    }
    if (is_dotted(".global") || is_dotted(".const") || is_dotted(".shared") || is_dotted(".tex") ||
        is_dotted(".local")) {
      std::vector<Var> vars = var_decl(true);
      for (Var& v : vars) {
        v.is_extern = is_extern;
        v.is_visible = is_visible;
        v.is_weak = is_weak;
        if (m_.find_var(v.name))
          throw ParseError(v.line, "module variable '" + v.name + "' declared twice");
        m_.vars.push_back(std::move(v));
      }
      return;
    }
    fail(peek(), "unknown directive");
  }

  // `.space [.attribute(...)] [.align N] [.vN] .type name[dims] [= init] {, name...};`
  // Module scope (with initializers) or body scope.
  std::vector<Var> var_decl(bool module_scope) {
    const Token& sp = next();
    Var proto;
    proto.line = sp.line;
    if (sp.text == ".tex") proto.space = Space::Global;
    else if (auto s = space_of(sp.text.substr(1))) proto.space = *s;
    else fail(sp, "expected a state space");
    uint32_t vec = decl_type(proto);
    std::vector<Var> out;
    do {
      Var v = proto;
      declarator(v, vec);
      if (accept('=')) {
        if (!module_scope) fail_here("initializer on a body variable");
        initializer(v, type_size(v.type) * vec, vec);
      }
      out.push_back(std::move(v));
    } while (accept(','));
    expect(';', "after the variable declaration");
    return out;
  }

  // The attributes and type of a declaration, up to its name:
  // `[.attribute(..)] [.align N] [.ptr ..] [.vN] .type [.ptr ..]`.  Sets
  // v.type, v.align (default: the element size), v.is_managed; returns the
  // vector width.
  uint32_t decl_type(Var& v) {
    uint32_t vec = 1;
    for (;;) {
      if (is_dotted(".attribute")) {
        next();
        expect('(', "after .attribute");
        while (!accept(')')) {
          if (is_dotted(".managed")) v.is_managed = true;
          else if (peek().kind != TK::Dotted && !is_punct(',')) fail_here("bad .attribute");
          next();
        }
      } else if (is_dotted(".align")) {
        next();
        uint64_t a = integer("an alignment");
        if (a == 0 || a > 4096 || (a & (a - 1))) fail_here("alignment must be a power of two");
        v.align = static_cast<uint32_t>(a);
      } else if (is_dotted(".v2") || is_dotted(".v4") || is_dotted(".v8")) {
        vec = peek().text[2] - '0';
        next();
      } else if (is_dotted(".ptr")) {
        skip_pointee();
      } else {
        break;
      }
    }
    if (peek().kind != TK::Dotted) fail_here("expected a type");
    auto ty = type_of(peek().text.substr(1));
    if (!ty) fail_here("unknown type");
    next();
    v.type = *ty;
    if (is_dotted(".ptr")) skip_pointee();  // clang: `.u64 .ptr .global .align 4`
    uint32_t elem = type_size(v.type) * vec;
    if (v.align == 0) v.align = elem ? elem : 1;
    return vec;
  }

  // `.ptr [.space] [.align N]` describes what a kernel parameter points to;
  // it does not change the parameter itself.
  void skip_pointee() {
    next();
    if (peek().kind == TK::Dotted && space_of(peek().text.substr(1))) next();
    if (is_dotted(".align")) {
      next();
      integer("an alignment");
    }
  }

  // `name[dims]`: sets v.name, v.line, v.is_array and v.size (0 for `[]`).
  void declarator(Var& v, uint32_t vec) {
    v.line = peek().line;
    v.name = std::string(ident("a variable name"));
    uint64_t count = 1;
    while (accept('[')) {
      v.is_array = true;
      if (accept(']')) {
        count = 0;
        continue;
      }
      uint64_t n = integer("an array size");
      if (n > (uint64_t(1) << 40) || (count && n > (uint64_t(1) << 40) / count)) fail_here("array too large");
      count *= n;
      expect(']', "after the array size");
    }
    v.size = count * type_size(v.type) * vec;
  }

  // Appends initializer elements to v.init (and v.relocs), flattening nested braces.
  void initializer(Var& v, uint32_t elem, uint32_t vec) {
    uint32_t scalar = elem / vec;
    if (scalar == 0) fail_here("initializer on an opaque variable");
    std::vector<uint8_t>& out = v.init;
    auto emit = [&](uint64_t bits) {
      for (uint32_t i = 0; i < scalar; ++i) out.push_back(static_cast<uint8_t>(bits >> (8 * i)));
    };
    int depth = 0;
    bool need_elem = true;
    for (;;) {
      if (accept('{')) { ++depth; need_elem = true; continue; }
      if (depth > 0 && !need_elem && accept('}')) {
        --depth;
        if (depth == 0) break;
        need_elem = false;
        continue;
      }
      if (!need_elem) {
        if (depth == 0) break;
        expect(',', "between initializer elements");
        need_elem = true;
        continue;
      }
      // One element.
      need_elem = false;
      bool neg = accept('-');
      const Token& t = peek();
      if (t.kind == TK::Int) {
        next();
        uint64_t mag = int_value(t);
        if (is_float(v.type)) emit(float_bits(neg ? -double(mag) : double(mag), v.type));
        else emit(neg ? ~mag + 1 : mag);
      } else if (t.kind == TK::Float) {
        next();
        uint8_t bits;
        uint64_t raw = float_value(t, bits);
        double d;
        if (bits == 32) { float f; uint32_t r = uint32_t(raw); std::memcpy(&f, &r, 4); d = f; }
        else std::memcpy(&d, &raw, 8);
        if (neg) d = -d;
        if (!is_float(v.type)) fail(t, "float initializer for an integer variable");
        emit(float_bits(d, v.type));
      } else if (t.kind == TK::Ident && !neg) {
        Var::Reloc r;
        r.offset = out.size();
        r.size = scalar;
        if (t.text == "generic") {
          next();
          expect('(', "after generic");
          r.symbol = std::string(ident("a symbol"));
          expect(')', "after the symbol");
          r.generic = true;
        } else {
          next();
          r.symbol = std::string(t.text);
        }
        if (accept('+')) r.addend = static_cast<int64_t>(integer("an offset"));
        else if (accept('-')) r.addend = -static_cast<int64_t>(integer("an offset"));
        if (scalar != 4 && scalar != 8) fail(t, "address initializer needs a 32- or 64-bit element");
        v.relocs.push_back(std::move(r));
        emit(0);
      } else {
        fail_here("expected an initializer value");
      }
      if (out.size() > v.size && v.size != 0) fail(t, "too many initializer values for '" + v.name + "'");
    }
    if (v.size == 0) v.size = out.size();  // `x[] = {...}`
  }

  uint64_t float_bits(double d, Type t) const {
    if (t == Type::F64) { uint64_t r; std::memcpy(&r, &d, 8); return r; }
    if (t == Type::F32) { float f = static_cast<float>(d); uint32_t r; std::memcpy(&r, &f, 4); return r; }
    fail_here(std::string("initializers of type .") + type_name(t) + " are not supported");
  }

  // Parameter list `( .param ... , ... )`.
  std::vector<Var> param_list() {
    std::vector<Var> out;
    expect('(', "to open the parameter list");
    if (accept(')')) return out;
    do {
      if (!is_dotted(".param") && !is_dotted(".reg")) fail_here("expected .param");
      Var v;
      v.space = next().text == ".reg" ? Space::Reg : Space::Param;
      declarator(v, decl_type(v));
      out.push_back(std::move(v));
    } while (accept(','));
    expect(')', "to close the parameter list");
    return out;
  }

  void performance_directives(Function& f) {
    for (;;) {
      auto dims = [&](uint32_t* out) {
        next();
        for (int i = 0; i < 3; ++i) {
          out[i] = static_cast<uint32_t>(integer("a dimension"));
          if (!accept(',')) break;
        }
      };
      if (is_dotted(".maxntid")) dims(f.maxntid);
      else if (is_dotted(".reqntid")) dims(f.reqntid);
      else if (is_dotted(".reqnctapercluster")) { uint32_t d[3]; dims(d); }
      else if (is_dotted(".minnctapersm")) { next(); f.minnctapersm = uint32_t(integer("a count")); }
      else if (is_dotted(".maxnreg")) { next(); f.maxnreg = uint32_t(integer("a count")); }
      else if (is_dotted(".maxclusterrank") || is_dotted(".maxnctapersm")) { next(); integer("a count"); }
      else if (is_dotted(".noreturn")) { next(); f.noreturn = true; }
      else if (is_dotted(".explicitcluster") || is_dotted(".blocksareclusters")) next();
      else if (is_dotted(".pragma")) {
        next();
        if (peek().kind != TK::String) fail_here("expected a pragma string");
        next();
        expect(';', "after .pragma");
      } else {
        break;
      }
    }
  }

  void function(bool is_extern, bool is_visible, bool is_weak) {
    Function f;
    f.is_entry = next().text == ".entry";
    f.line = peek().line;
    f.is_extern = is_extern;
    f.is_visible = is_visible;
    f.is_weak = is_weak;
    if (!f.is_entry && is_punct('(')) f.rets = param_list();
    f.name = std::string(ident("a function name"));
    if (is_punct('(')) f.params = param_list();
    performance_directives(f);

    // A definition may follow an earlier declaration of the same function.
    auto existing = m_.function_index(f.name);
    uint32_t index;
    if (existing) {
      if (m_.functions[*existing].has_body && is_punct('{'))
        throw ParseError(f.line, "function '" + f.name + "' defined twice");
      index = *existing;
      if (!is_punct('{')) {  // repeated declaration: keep the first
        expect(';', "after the function declaration");
        return;
      }
      m_.functions[index] = std::move(f);
    } else {
      index = static_cast<uint32_t>(m_.functions.size());
      m_.functions.push_back(std::move(f));
    }
    if (accept(';')) return;
    if (!is_punct('{')) fail_here("expected '{' or ';' after the function header");
    body(index);
  }

  // -- function bodies ------------------------------------------------------
  void body(uint32_t index) {
    fn_index_ = index;
    fn_ = &m_.functions[index];
    fn_->has_body = true;
    scopes_.clear();
    label_ids_.clear();
    label_use_line_.clear();
    scopes_.emplace_back();
    for (uint32_t i = 0; i < fn_->params.size(); ++i) scopes_.back().syms[fn_->params[i].name] = {SymKind::Param, i};
    for (uint32_t i = 0; i < fn_->rets.size(); ++i) scopes_.back().syms[fn_->rets[i].name] = {SymKind::Ret, i};
    expect('{', "to open the function body");
    scopes_.emplace_back();
    while (!scopes_.empty() && scopes_.size() > 1) {
      if (at_end()) fail_here("unterminated function body of '" + fn_->name + "'");
      statement();
    }
    for (uint32_t i = 0; i < fn_->labels.size(); ++i)
      if (fn_->labels[i].target == kUnresolved)
        throw ParseError(label_use_line_[i], "undefined label '" + fn_->labels[i].name + "' in '" + fn_->name + "'");
    fn_ = nullptr;
  }

  uint32_t label_id(std::string_view name, int line) {
    auto [it, fresh] = label_ids_.try_emplace(std::string(name), uint32_t(fn_->labels.size()));
    if (fresh) {
      fn_->labels.push_back({std::string(name), kUnresolved});
      label_use_line_.push_back(line);
    }
    return it->second;
  }

  void statement() {
    const Token& t = peek();
    if (t.kind == TK::Punct && t.text[0] == '{') { next(); scopes_.emplace_back(); return; }
    if (t.kind == TK::Punct && t.text[0] == '}') { next(); scopes_.pop_back(); return; }
    if (t.kind == TK::Dotted) { body_directive(); return; }
    if (t.kind == TK::Ident && is_punct(':', 1)) {
      next();
      next();
      if (is_dotted(".callprototype") || is_dotted(".calltargets") || is_dotted(".branchtargets")) {
        skip_to_semicolon();
        return;
      }
      uint32_t id = label_id(t.text, t.line);
      if (fn_->labels[id].target != kUnresolved) fail(t, "label defined twice");
      fn_->labels[id].target = static_cast<uint32_t>(fn_->body.size());
      return;
    }
    instruction();
  }

  void body_directive() {
    const Token& t = peek();
    if (t.text == ".reg") { reg_decl(); return; }
    if (t.text == ".local" || t.text == ".shared" || t.text == ".param" || t.text == ".const" ||
        t.text == ".global") {
      std::vector<Var> vars = var_decl(false);
      for (Var& v : vars) {
        uint32_t i = static_cast<uint32_t>(fn_->vars.size());
        scopes_.back().syms[v.name] = {SymKind::LocalVar, i};
        fn_->vars.push_back(std::move(v));
      }
      return;
    }
    if (t.text == ".loc") {
      next();
      integer("a file number");
      integer("a line number");
      integer("a column");
      // Optional `, function_name label+off, inlined_at f l c`.
      while (accept(',')) {
        while (!at_end() && peek().line == t.line && !is_punct(',')) next();
      }
      return;
    }
    if (t.text == ".pragma") {
      next();
      if (peek().kind != TK::String) fail_here("expected a pragma string");
      next();
      expect(';', "after .pragma");
      return;
    }
    fail(t, "unknown directive in function body");
  }

  void reg_decl() {
    next();
    if (peek().kind != TK::Dotted) fail_here("expected a register type");
    auto ty = type_of(peek().text.substr(1));
    if (!ty) fail_here("unknown register type");
    next();
    do {
      const Token& nt = peek();
      std::string name(ident("a register name"));
      if (accept('<')) {
        uint64_t n = integer("a register count");
        if (n > (1u << 20)) fail(nt, "register range too large");
        expect('>', "after the register count");
        for (uint64_t i = 0; i < n; ++i) add_reg(name + std::to_string(i), *ty);
      } else {
        add_reg(name, *ty);
      }
    } while (accept(','));
    expect(';', "after the register declaration");
  }

  void add_reg(std::string name, Type t) {
    uint32_t id = static_cast<uint32_t>(fn_->regs.size());
    scopes_.back().regs[name] = id;
    fn_->regs.push_back({std::move(name), t});
  }

  std::optional<uint32_t> find_reg(std::string_view name) const {
    std::string key(name);
    for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it) {
      auto f = it->regs.find(key);
      if (f != it->regs.end()) return f->second;
    }
    return std::nullopt;
  }
  std::optional<SymRef> find_sym(std::string_view name) const {
    std::string key(name);
    for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it) {
      auto f = it->syms.find(key);
      if (f != it->syms.end()) return f->second;
    }
    return std::nullopt;
  }

  // -- instructions ---------------------------------------------------------
  void instruction() {
    Instr in;
    in.line = peek().line;
    if (accept('@')) {
      in.guard.neg = accept('!');
      const Token& g = peek();
      auto r = find_reg(ident("a guard predicate"));
      if (!r) fail(g, "undeclared guard predicate");
      if (fn_->regs[*r].type != Type::Pred) fail(g, "guard is not a predicate register");
      in.guard.reg = *r;
    }
    const Token& mt = peek();
    if (mt.kind != TK::Ident) fail(mt, "expected an instruction");
    next();
    in.opcode = std::string(mt.text);
    std::vector<std::string_view> suffixes;
    while (peek().kind == TK::Dotted && peek().line == mt.line &&
           peek().text.data() == toks_[p_ - 1].text.data() + toks_[p_ - 1].text.size()) {
      suffixes.push_back(peek().text.substr(1));
      in.opcode += peek().text;
      next();
    }
    auto op = op_of(mt.text);
    if (op == Op::Cvt && !suffixes.empty() && suffixes[0] == "pack") op = Op::Other;
    if (!op) fail(mt, "unknown instruction");
    in.op = *op;
    if (in.op == Op::Bar && !suffixes.empty() && suffixes[0] == "warp") {
      in.op = Op::BarWarp;
      suffixes.erase(suffixes.begin());
    }
    if ((in.op == Op::Tex || in.op == Op::Suld || in.op == Op::Sust) && !texture_instruction(in, suffixes))
      in.op = Op::Other;  // a form not decoded (tex.level, suld.p, ...): the lowering rejects it by name
    else if (in.op == Op::Tex || in.op == Op::Suld || in.op == Op::Sust) {
      fn_->body.push_back(std::move(in));
      return;
    }
    if (in.op == Op::Wmma && !wmma_instruction(in, suffixes)) in.op = Op::Other;  // the lowering rejects it by name
    else if (in.op == Op::Wmma) {
      fn_->body.push_back(std::move(in));
      return;
    }
    if (in.op == Op::Other || in.op == Op::Brx) {
      skip_to_semicolon();
      fn_->body.push_back(std::move(in));
      return;
    }
    for (std::string_view s : suffixes) apply_suffix(in, s, mt);
    if (in.op == Op::Bar && in.bar == BarKind::None) in.bar = BarKind::Sync;  // `barrier` alone

    uint32_t instr_index = static_cast<uint32_t>(fn_->body.size());
    if (!accept(';')) {
      do {
        uint32_t k = static_cast<uint32_t>(in.ops.size());
        in.ops.push_back(operand(in, instr_index, {k}));
      } while (accept(','));
      expect(';', "after the operands of '" + in.opcode + "'");
    }
    check_operands(in, mt);
    fn_->body.push_back(std::move(in));
  }

  // tex.GEOM.v4.DT.CT d, [h, {c..}];  suld.b.GEOM{.vN}.bT{.clamp} d, [h, {c..}];
  // sust.b.GEOM{.vN}.bT{.clamp} [h, {c..}], v;  (docs/isa.md section 8.3).
  // Returns false, consuming nothing, for a form it does not decode.
  bool texture_instruction(Instr& in, const std::vector<std::string_view>& suffixes) {
    static const std::unordered_map<std::string_view, TexGeom> geoms = {
        {"1d", TexGeom::D1}, {"2d", TexGeom::D2}, {"3d", TexGeom::D3}, {"a1d", TexGeom::A1D},
        {"a2d", TexGeom::A2D}, {"cube", TexGeom::Cube}, {"acube", TexGeom::ACube}};
    bool b = false;
    for (std::string_view s : suffixes) {
      if (auto g = lookup(geoms, s)) in.geom = *g;
      else if (auto t = type_of(s)) {
        if (in.type == Type::None) in.type = *t;
        else if (in.type2 == Type::None) in.type2 = *t;
        else return false;
      } else if (s == "v2" || s == "v4") in.vec = static_cast<uint8_t>(s[1] - '0');
      else if (s == "b" && in.op != Op::Tex) b = true;
      else if (s == "trap" && in.op != Op::Tex) in.surf_clamp = 0;
      else if (s == "clamp" && in.op != Op::Tex) in.surf_clamp = 1;
      else if (s == "zero" && in.op != Op::Tex) in.surf_clamp = 2;
      else if (s == "weak" || s == "relaxed" || s == "ca" || s == "cg" || s == "cs" || s == "cv" || s == "wb" ||
               s == "wt") {
      } else return false;
    }
    if (in.geom == TexGeom::None || in.type == Type::None) return false;
    if (in.op == Op::Tex && (in.vec != 4 || in.type2 == Type::None)) return false;
    if (in.op != Op::Tex && !b) return false;
    size_t save = p_;
    uint32_t idx = static_cast<uint32_t>(fn_->body.size());
    auto address = [&]() {
      if (!accept('[')) return false;
      auto r = peek().kind == TK::Ident ? find_reg(peek().text) : std::nullopt;
      if (!r) return false;
      next();
      Operand h;
      h.kind = Operand::Kind::Reg;
      h.reg = *r;
      in.ops.push_back(h);
      if (!accept(',') || !is_punct('{')) return false;
      in.ops.push_back(operand(in, idx, {uint32_t(in.ops.size())}));
      return accept(']');
    };
    bool ok;
    if (in.op == Op::Sust) {
      ok = address() && accept(',');
      if (ok) in.ops.push_back(operand(in, idx, {2}));
    } else {
      in.ops.push_back(operand(in, idx, {0}));
      ok = accept(',') && address();
    }
    if (!ok || !accept(';')) {
      p_ = save;
      in.ops.clear();
      return false;
    }
    return true;
  }

  // wmma.load.{a,b,c}.sync.aligned.LAYOUT.SHAPE{.SPACE}.TYPE {frag}, [a]{, stride};
  // wmma.store.d.sync.aligned.LAYOUT.SHAPE{.SPACE}.TYPE [a], {frag}{, stride};
  // wmma.mma.sync.aligned.ALAYOUT.BLAYOUT.SHAPE.DTYPE.CTYPE d, a, b, c;  (f16 inputs)
  // wmma.mma.sync.aligned.ALAYOUT.BLAYOUT.SHAPE.s32.ATYPE.BTYPE.s32{.satfinite} d, a, b, c;
  // Returns false, consuming nothing, for a form it does not decode (other
  // shapes and types: sub-byte, bf16, tf32, f64).
  bool wmma_instruction(Instr& in, const std::vector<std::string_view>& suffixes) {
    WmmaInfo& w = in.wmma;
    std::vector<Type> types;
    int layouts = 0;
    for (size_t i = 0; i < suffixes.size(); ++i) {
      std::string_view s = suffixes[i];
      if (i == 0) {
        if (s == "load" && i + 1 < suffixes.size()) {
          std::string_view f = suffixes[++i];
          w.op = f == "a" ? WmmaOp::LoadA : f == "b" ? WmmaOp::LoadB : f == "c" ? WmmaOp::LoadC : WmmaOp::None;
        } else if (s == "store" && i + 1 < suffixes.size() && suffixes[i + 1] == "d") {
          ++i;
          w.op = WmmaOp::StoreD;
        } else if (s == "mma") {
          w.op = WmmaOp::Mma;
        }
        if (w.op == WmmaOp::None) return false;
      } else if (s == "sync") in.sync = true;
      else if (s == "aligned") in.aligned = true;
      else if (s == "row" || s == "col") {
        if (layouts++ == 0) w.col = s == "col";
      } else if (s == "satfinite") w.satfinite = true;
      else if (s.size() >= 6 && s[0] == 'm') {
        unsigned m = 0, n = 0, k = 0;
        if (std::sscanf(std::string(s).c_str(), "m%un%uk%u", &m, &n, &k) != 3) return false;
        w.m = uint8_t(m), w.n = uint8_t(n), w.k = uint8_t(k);
      } else if (auto sp = space_of(s)) in.space = *sp;
      else if (auto t = type_of(s)) types.push_back(*t);
      else return false;
    }
    if (!in.sync || !in.aligned || w.k == 0) return false;
    if (w.op == WmmaOp::Mma) {
      if (types.size() == 2) {
        in.type = types[0], in.type2 = types[1], w.ab = Type::F16;
      } else if (types.size() == 4 && types[1] == types[2]) {
        in.type = types[0], in.type2 = types[3], w.ab = types[1];
      } else {
        return false;
      }
    } else {
      if (types.size() != 1) return false;
      in.type = types[0];
    }
    size_t save = p_;
    uint32_t idx = static_cast<uint32_t>(fn_->body.size());
    do {
      uint32_t k = static_cast<uint32_t>(in.ops.size());
      in.ops.push_back(operand(in, idx, {k}));
    } while (accept(','));
    if (!accept(';')) {
      p_ = save;
      in.ops.clear();
      return false;
    }
    const size_t want = w.op == WmmaOp::Mma ? 4 : 2;
    auto vec = [&](size_t i) { return i < in.ops.size() && in.ops[i].kind == Operand::Kind::Vector; };
    bool ok = in.ops.size() == want || (w.op != WmmaOp::Mma && in.ops.size() == 3);
    if (w.op == WmmaOp::Mma) ok = ok && vec(0) && vec(1) && vec(2) && vec(3);
    else if (w.op == WmmaOp::StoreD) ok = ok && in.ops[0].kind == Operand::Kind::Addr && vec(1);
    else ok = ok && vec(0) && in.ops[1].kind == Operand::Kind::Addr;
    if (!ok) {
      p_ = save;
      in.ops.clear();
      return false;
    }
    return true;
  }

  void apply_suffix(Instr& in, std::string_view s, const Token& mt) {
    auto bad = [&]() { fail(mt, "unknown modifier '." + std::string(s) + "' in '" + in.opcode + "'"); };
    if (auto t = type_of(s)) {
      if (in.type == Type::None) in.type = *t;
      else if (in.type2 == Type::None) in.type2 = *t;
      else bad();
      return;
    }
    if (auto sp = space_of(s)) { in.space = *sp; return; }
    // Suffixes whose meaning depends on the operation.
    switch (in.op) {
      case Op::Setp: case Op::Set:
        if (auto c = cmp_of(s)) { in.cmp = *c; return; }
        if (s == "and") { in.bool_op = BoolOp::And; return; }
        if (s == "or") { in.bool_op = BoolOp::Or; return; }
        if (s == "xor") { in.bool_op = BoolOp::Xor; return; }
        break;
      case Op::Slct: case Op::Testp: case Op::Isspacep:
        break;
      case Op::Mul: case Op::Mad: case Op::Mul24: case Op::Mad24: case Op::Madc:
        if (s == "lo") { in.mul = MulMode::Lo; return; }
        if (s == "hi") { in.mul = MulMode::Hi; return; }
        if (s == "wide") { in.mul = MulMode::Wide; return; }
        break;
      case Op::Atom: case Op::Red: case Op::Bar: case Op::Redux: {
        static const std::unordered_map<std::string_view, AtomOp> m = {
            {"add", AtomOp::Add}, {"min", AtomOp::Min}, {"max", AtomOp::Max},
            {"exch", AtomOp::Exch}, {"cas", AtomOp::Cas}, {"and", AtomOp::And},
            {"or", AtomOp::Or}, {"xor", AtomOp::Xor}, {"inc", AtomOp::Inc},
            {"dec", AtomOp::Dec}, {"popc", AtomOp::Popc}};
        if (auto a = lookup(m, s)) { in.atom = *a; return; }
        if (in.op == Op::Bar) {
          if (s == "sync") { in.bar = BarKind::Sync; in.sync = true; return; }
          if (s == "arrive") { in.bar = BarKind::Arrive; return; }
          if (s == "red") { in.bar = BarKind::Red; return; }
        }
        break;
      }
      case Op::Shfl:
        if (s == "idx") { in.shfl = ShflMode::Idx; return; }
        if (s == "up") { in.shfl = ShflMode::Up; return; }
        if (s == "down") { in.shfl = ShflMode::Down; return; }
        if (s == "bfly") { in.shfl = ShflMode::Bfly; return; }
        break;
      case Op::Vote:
        if (s == "any") { in.vote = VoteMode::Any; return; }
        if (s == "all") { in.vote = VoteMode::All; return; }
        if (s == "ballot") { in.vote = VoteMode::Ballot; return; }
        if (s == "uni") { in.vote = VoteMode::Uni; return; }
        break;
      case Op::Match:
        if (s == "any") { in.match = MatchMode::Any; return; }
        if (s == "all") { in.match = MatchMode::All; return; }
        break;
      case Op::Shf: case Op::Bmsk: case Op::Szext:
        if (in.op == Op::Shf && s == "l") { in.shf_dir = ShfDir::L; return; }
        if (in.op == Op::Shf && s == "r") { in.shf_dir = ShfDir::R; return; }
        if (s == "wrap") { in.shf_mode = ShfMode::Wrap; return; }
        if (s == "clamp") { in.shf_mode = ShfMode::Clamp; return; }
        break;
      case Op::Prmt: {
        static const std::unordered_map<std::string_view, PrmtMode> m = {
            {"f4e", PrmtMode::F4e}, {"b4e", PrmtMode::B4e}, {"rc8", PrmtMode::Rc8},
            {"ecl", PrmtMode::Ecl}, {"ecr", PrmtMode::Ecr}, {"rc16", PrmtMode::Rc16}};
        if (auto p = lookup(m, s)) { in.prmt = *p; return; }
        break;
      }
      case Op::Membar:
        if (s == "gl") { in.scope = Scope::Gpu; return; }
        break;
      default:
        break;
    }
    // Suffixes with one meaning everywhere.
    static const std::unordered_map<std::string_view, Sem> sems = {
        {"weak", Sem::Weak}, {"relaxed", Sem::Relaxed}, {"acquire", Sem::Acquire},
        {"release", Sem::Release}, {"acq_rel", Sem::AcqRel}, {"sc", Sem::Sc}, {"mmio", Sem::Mmio}};
    if (auto v = lookup(sems, s)) { in.sem = *v; return; }
    static const std::unordered_map<std::string_view, Scope> scopes = {
        {"cta", Scope::Cta}, {"cluster", Scope::Cluster}, {"gpu", Scope::Gpu}, {"sys", Scope::Sys}};
    if (auto v = lookup(scopes, s)) { in.scope = *v; return; }
    if (s == "v2" || s == "v4" || s == "v8") { in.vec = static_cast<uint8_t>(s[1] - '0'); return; }
    if (s == "volatile") { in.is_volatile = true; return; }
    if (s == "sat") { in.sat = true; return; }
    if (s == "cc") { in.cc = true; return; }
    if (s == "uni") { in.uni = true; return; }
    if (s == "to") { in.to = true; return; }
    if (s == "sync") { in.sync = true; return; }
    if (s == "aligned") { in.aligned = true; return; }
    if (s == "shiftamt") { in.shiftamt = true; return; }
    if (s == "nc") { in.nc = true; return; }
    // Rounding, flush-to-zero, precision, cache operators and hints: no
    // effect on integer results, dropped.
    static const std::unordered_set<std::string_view> ignored = {
        "rn", "rz", "rm", "rp", "rni", "rzi", "rmi", "rpi", "rna", "rs", "ftz", "approx", "full", "noftz",
        "NaN", "xorsign", "abs", "relu", "oob", "satfinite", "ca", "cg", "cs", "lu", "cv", "wb", "wt",
        "finite", "infinite", "number", "notanumber", "normal", "subnormal", "L1", "L2", "noreturn",
        "proxy", "alias", "async"};
    if (ignored.count(s) || s.find("::") != std::string_view::npos) return;
    if (in.op == Op::Testp) return;
    bad();
  }

  Operand operand(const Instr& in, uint32_t instr_index, std::vector<uint32_t> path) {
    Operand o;
    const Token& t = peek();
    if (accept('{')) {
      o.kind = Operand::Kind::Vector;
      do {
        std::vector<uint32_t> sub = path;
        sub.push_back(static_cast<uint32_t>(o.elems.size()));
        o.elems.push_back(operand(in, instr_index, sub));
        if (o.elems.back().kind == Operand::Kind::Vector) fail(t, "nested vector operand");
      } while (accept(','));
      expect('}', "to close the vector operand");
      return o;
    }
    if (accept('(')) {  // call return/argument list
      if (in.op != Op::Call) fail(t, "unexpected '('");
      o.kind = Operand::Kind::Vector;
      if (!is_punct(')')) {
        do {
          std::vector<uint32_t> sub = path;
          sub.push_back(static_cast<uint32_t>(o.elems.size()));
          o.elems.push_back(operand(in, instr_index, sub));
        } while (accept(','));
      }
      expect(')', "to close the call list");
      return o;
    }
    if (accept('[')) {
      o.kind = Operand::Kind::Addr;
      if (peek().kind == TK::Ident) {
        const Token& b = next();
        if (auto r = find_reg(b.text)) o.reg = *r;
        else symbol(o, b, instr_index, path);
      } else {
        o.imm = static_cast<int64_t>(signed_int());
        expect(']', "to close the address");
        return o;
      }
      if (accept('+')) o.imm = static_cast<int64_t>(signed_int());
      else if (accept('-')) o.imm = -static_cast<int64_t>(integer("an offset"));
      expect(']', "to close the address");
      return o;
    }
    if (accept('!')) {
      o = operand(in, instr_index, path);
      if (o.kind != Operand::Kind::Reg || fn_->regs[o.reg].type != Type::Pred)
        fail(t, "'!' applies only to a predicate register");
      o.neg = true;
      return o;
    }
    if (t.kind == TK::Int || (is_punct('-') && peek(1).kind == TK::Int)) {
      o.kind = Operand::Kind::Imm;
      o.imm = static_cast<int64_t>(signed_int());
      return o;
    }
    if (t.kind == TK::Float || (is_punct('-') && peek(1).kind == TK::Float)) {
      bool neg = accept('-');
      const Token& ft = next();
      o.kind = Operand::Kind::FImm;
      uint64_t raw = float_value(ft, o.fbits);
      if (neg) raw ^= o.fbits == 32 ? 0x80000000ull : 0x8000000000000000ull;
      o.imm = static_cast<int64_t>(raw);
      return o;
    }
    if (t.kind != TK::Ident) fail(t, "expected an operand of '" + in.opcode + "'");
    next();
    if (t.text == "_") { o.kind = Operand::Kind::Sink; return o; }
    if (in.op == Op::Bra) {
      o.kind = Operand::Kind::Label;
      o.name = std::string(t.text);
      o.label = label_id(t.text, t.line);
      return o;
    }
    if (auto r = find_reg(t.text)) {
      o.kind = Operand::Kind::Reg;
      o.reg = *r;
      if (accept('|')) {
        const Token& t2 = peek();
        auto r2 = find_reg(ident("a second destination"));
        if (!r2) fail(t2, "undeclared register");
        o.kind = Operand::Kind::PredPair;
        o.reg2 = *r2;
      }
      return o;
    }
    // WARP_SZ, the warp size: a constant of the PTX ISA.
    if (t.text == "WARP_SZ") {
      o.kind = Operand::Kind::Imm;
      o.imm = 32;
      return o;
    }
    if (auto ix = indexed_sreg_of(t.text)) {
      o.kind = Operand::Kind::Special;
      o.sreg = ix->first;
      o.imm = ix->second;
      return o;
    }
    bool comp = false;
    if (auto sr = sreg_of(t.text, comp)) {
      o.kind = Operand::Kind::Special;
      o.sreg = *sr;
      if (comp) {
        const Token& c = peek();
        if (c.kind != TK::Dotted || c.text.size() != 2 || (c.text[1] != 'x' && c.text[1] != 'y' && c.text[1] != 'z'))
          fail(c, std::string("expected .x, .y or .z after ") + sreg_name(*sr));
        o.component = c.text[1];
        next();
      }
      return o;
    }
    if (t.text[0] == '%') fail(t, "undeclared register");
    // A call prototype (last operand of an indirect call, after the argument
    // list, with or without a return list) is a bare name.
    if (in.op == Op::Call && path.size() == 1 &&
        (in.ops.size() >= 3 || (in.ops.size() == 2 && in.ops[0].kind == Operand::Kind::Reg &&
                                in.ops[1].kind == Operand::Kind::Vector))) {
      o.kind = Operand::Kind::Name;
      o.name = std::string(t.text);
      return o;
    }
    o.kind = Operand::Kind::Sym;
    symbol(o, t, instr_index, path);
    if (accept('+')) o.imm = static_cast<int64_t>(signed_int());
    return o;
  }

  uint64_t signed_int() {
    bool neg = accept('-');
    uint64_t v = integer("an integer");
    return neg ? ~v + 1 : v;
  }

  // Resolves a name in the body scopes, or defers it to the module.
  void symbol(Operand& o, const Token& t, uint32_t instr_index, const std::vector<uint32_t>& path) {
    o.has_sym = true;
    o.name = std::string(t.text);
    if (auto s = find_sym(t.text)) {
      o.sym = *s;
      return;
    }
    o.sym = {SymKind::ModuleVar, kUnresolved};
    pending_.push_back({fn_index_, instr_index, path});
  }

  // Type suffixes: every data-processing instruction names its type, and the
  // converting ones a second.
  void check_types(const Instr& in, const Token& mt) {
    int need = 1;
    switch (in.op) {
      case Op::Cvt: case Op::Set: case Op::Slct: case Op::Dp4a: case Op::Dp2a: need = 2; break;
      case Op::Bra: case Op::Brx: case Op::Call: case Op::Ret: case Op::Exit: case Op::Trap:
      case Op::Brkpt: case Op::Membar: case Op::Fence: case Op::BarWarp: case Op::Prefetch:
      case Op::Isspacep: case Op::Other:
        need = 0;
        break;
      case Op::Bar: need = in.bar == BarKind::Red ? 1 : 0; break;
      default: break;
    }
    if ((need >= 1 && in.type == Type::None) || (need == 2 && in.type2 == Type::None))
      fail(mt, "'" + in.opcode + "' needs " + (need == 2 ? "two type suffixes" : "a type suffix"));
  }

  void check_operands(const Instr& in, const Token& mt) {
    check_types(in, mt);
    Arity a = arity_of(in);
    if (in.ops.size() < a.min || in.ops.size() > a.max)
      fail(mt, "'" + in.opcode + "' takes " +
                   (a.min == a.max ? std::to_string(a.min)
                                   : std::to_string(a.min) + " to " + std::to_string(a.max)) +
                   " operands, got " + std::to_string(in.ops.size()));
    if (a.has_dest) {
      auto k = in.ops[0].kind;
      if (k != Operand::Kind::Reg && k != Operand::Kind::PredPair && k != Operand::Kind::Vector &&
          k != Operand::Kind::Sink)
        fail(mt, "destination of '" + in.opcode + "' must be a register");
      if (k == Operand::Kind::Vector)
        for (const Operand& e : in.ops[0].elems)
          if (e.kind != Operand::Kind::Reg && e.kind != Operand::Kind::Sink)
            fail(mt, "destination of '" + in.opcode + "' must be registers");
    }
    // Memory operations: the address operand.
    int addr = -1;
    if (in.op == Op::Ld || in.op == Op::Ldu || in.op == Op::Atom) addr = 1;
    if (in.op == Op::St || in.op == Op::Red || in.op == Op::Prefetch) addr = 0;
    if (addr >= 0 && in.ops[addr].kind != Operand::Kind::Addr)
      fail(mt, "'" + in.opcode + "' needs an address operand [..]");
    // Vector loads and stores: one register per element.
    int data = in.op == Op::Ld || in.op == Op::Ldu ? 0 : in.op == Op::St ? 1 : -1;
    if (data >= 0) {
      const Operand& d = in.ops[data];
      size_t n = d.kind == Operand::Kind::Vector ? d.elems.size() : 1;
      if (n != in.vec || (in.vec > 1) != (d.kind == Operand::Kind::Vector))
        fail(mt, "'" + in.opcode + "' needs " + std::to_string(in.vec) + " data operand(s) in { }");
    }
    if (in.op == Op::Bra && in.ops[0].kind != Operand::Kind::Label)
      fail(mt, "'bra' needs a label");
    if (in.op == Op::Call) check_call(in, mt);
  }

  // The written forms of call; resolve_module_symbols() normalises them to
  // { rets, callee, args [, prototype] }:
  //   call f;  call f, (a..);  call (r..), f;  call (r..), f, (a..);
  //   call (r..), %rd, (a..), proto;  call %rd, (a..), proto;
  void check_call(const Instr& in, const Token& mt) {
    const auto& o = in.ops;
    size_t i = 0;
    if (i < o.size() && o[i].kind == Operand::Kind::Vector) ++i;
    if (i >= o.size() || (o[i].kind != Operand::Kind::Sym && o[i].kind != Operand::Kind::Reg))
      fail(mt, "call needs a function name or register");
    ++i;
    if (i < o.size() && o[i].kind == Operand::Kind::Vector) ++i;
    if (i < o.size() && o[i].kind == Operand::Kind::Name) ++i;
    if (i != o.size()) fail(mt, "malformed call operands");
  }

  // -- module-wide resolution and layout ------------------------------------
  void resolve_module_symbols() {
    for (const Pending& pd : pending_) {
      Instr& in = m_.functions[pd.func].body[pd.instr];
      Operand* o = &in.ops[pd.path[0]];
      for (size_t k = 1; k < pd.path.size(); ++k) o = &o->elems[pd.path[k]];
      for (uint32_t i = 0; i < m_.vars.size(); ++i)
        if (m_.vars[i].name == o->name) { o->sym = {SymKind::ModuleVar, i}; break; }
      if (o->sym.index != kUnresolved) continue;
      if (auto f = m_.function_index(o->name)) {
        o->sym = {SymKind::Func, *f};
        continue;
      }
      throw ParseError(in.line, "undeclared symbol '" + o->name + "'");
    }
    // Calls: normalise to { rets, callee, args [, prototype] } (see check_call).
    for (Function& f : m_.functions)
      for (Instr& in : f.body) {
        if (in.op != Op::Call) continue;
        if (in.ops[0].kind != Operand::Kind::Vector) in.ops.insert(in.ops.begin(), empty_list());
        if (in.ops.size() < 3 || in.ops[2].kind != Operand::Kind::Vector)
          in.ops.insert(in.ops.begin() + 2, empty_list());
        if (in.ops[1].kind == Operand::Kind::Sym && in.ops[1].sym.kind != SymKind::Func)
          throw ParseError(in.line, "call target '" + in.ops[1].name + "' is not a function");
      }
    for (const Var& v : m_.vars)
      for (const Var::Reloc& r : v.relocs)
        if (!m_.find_var(r.symbol) && !m_.find_function(r.symbol))
          throw ParseError(v.line, "initializer of '" + v.name + "' names undeclared symbol '" + r.symbol + "'");
  }

  static Operand empty_list() {
    Operand o;
    o.kind = Operand::Kind::Vector;
    return o;
  }

  // Loop latches that nvcc lays out before their loop's header: a block B
  // that nothing falls into (an unconditional branch precedes it), entered
  // only by branches after it, that falls through to the header H after it.
  // Under the minimum-pc rule (docs/isa.md section 6) lanes that branch back
  // to B early would run the next iteration, warp operations included,
  // without the lanes still in the body.  B moves after its last entering
  // branch, if that one is unconditional (so nothing falls into B there
  // either), and ends with `bra.uni H`: the same control-flow graph, every
  // edge into B forward.
  static void place_latches(Function& f) {
    for (const Instr& in : f.body)
      if (in.op == Op::Brx) return;
    for (int round = 0; round < 256; ++round) {
      bool moved = false;
      for (uint32_t li = 0; li < f.labels.size() && !moved; ++li) {
        const uint32_t b = f.labels[li].target;
        if (b == 0 || b >= f.body.size()) continue;
        const Instr& before = f.body[b - 1];
        if (before.op != Op::Bra || before.guard.reg != kNoReg) continue;
        uint32_t e = uint32_t(f.body.size());
        for (const Label& l : f.labels)
          if (l.target > b && l.target < e) e = l.target;
        if (e >= f.body.size()) continue;
        uint32_t header = UINT32_MAX;
        for (uint32_t k = 0; k < f.labels.size(); ++k)
          if (f.labels[k].target == e) header = k;
        // Every branch to B's labels comes after B.
        uint32_t last = 0;
        bool ok = true, any = false;
        for (uint32_t i = 0; i < f.body.size() && ok; ++i) {
          const Instr& in = f.body[i];
          for (const Operand& o : in.ops)
            if (o.kind == Operand::Kind::Label && f.labels[o.label].target == b) {
              if (in.op != Op::Bra || i < e) ok = false;
              any = true;
              last = std::max(last, i);
            }
        }
        if (!ok || !any || header == UINT32_MAX) continue;
        const Instr& at_last = f.body[last];
        if (at_last.op != Op::Bra || at_last.guard.reg != kNoReg) continue;
        const Instr& tail = f.body[e - 1];
        const bool falls = !((tail.op == Op::Bra || tail.op == Op::Ret || tail.op == Op::Exit) && tail.guard.reg == kNoReg);
        std::vector<Instr> block(f.body.begin() + b, f.body.begin() + e);
        if (falls) {
          Instr j;
          j.op = Op::Bra;
          j.opcode = "bra.uni";
          j.uni = true;
          j.line = tail.line;
          Operand o;
          o.kind = Operand::Kind::Label;
          o.label = header;
          o.name = f.labels[header].name;
          j.ops.push_back(o);
          block.push_back(j);
        }
        const uint32_t len = e - b, added = falls ? 1 : 0;
        std::vector<Instr> body;
        body.reserve(f.body.size() + added);
        body.insert(body.end(), std::make_move_iterator(f.body.begin()), std::make_move_iterator(f.body.begin() + b));
        body.insert(body.end(), std::make_move_iterator(f.body.begin() + e),
                    std::make_move_iterator(f.body.begin() + last + 1));
        body.insert(body.end(), std::make_move_iterator(block.begin()), std::make_move_iterator(block.end()));
        body.insert(body.end(), std::make_move_iterator(f.body.begin() + last + 1), std::make_move_iterator(f.body.end()));
        for (Label& l : f.labels) {
          if (l.target == b) l.target = last + 1 - len;
          else if (l.target >= e && l.target <= last) l.target -= len;
          else if (l.target > last) l.target += added;
        }
        f.body = std::move(body);
        moved = true;
      }
      if (!moved) return;
    }
  }

  static void layout_params(Function& f) {
    uint64_t off = 0;
    for (Var& p : f.params) {
      uint64_t a = p.align ? p.align : 1;
      off = (off + a - 1) / a * a;
      p.offset = off;
      off += p.size;
    }
  }
};

}  // namespace

Module parse(std::string_view text) { return Parser(text).run(); }

}  // namespace qgpu::ptx
