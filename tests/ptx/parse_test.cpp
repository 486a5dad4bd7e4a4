// The PTX parser on real nvcc 13 and clang-19 output and on hand-written
// snippets of the syntax those compilers use.
#include <algorithm>
#include <set>

#include "harness.h"

namespace qgpu::ptx::test {
namespace {

const Function& kernel(const Module& m, const std::string& name) {
  const Function* f = m.find_function(name);
  if (!f) throw std::runtime_error("no function " + name);
  return *f;
}

std::vector<const Instr*> find_ops(const Function& f, Op op) {
  std::vector<const Instr*> out;
  for (const Instr& in : f.body)
    if (in.op == op) out.push_back(&in);
  return out;
}

// Parses `body` wrapped in a module with one kernel.
Module parse_kernel(const std::string& body, const std::string& params = "") {
  return parse(".version 9.0\n.target sm_75\n.address_size 64\n.visible .entry k(" + params + ")\n{\n" + body +
               "\n}\n");
}

TEST(PtxParse, NvccModuleHeaderAndFunctions) {
  Module m = parse(generated_ptx("e2e.ptx"));
  EXPECT_EQ(m.version, "9.0");
  EXPECT_EQ(m.target, "sm_75");
  EXPECT_EQ(m.address_size, 64u);
  std::set<std::string> kernels;
  for (const Function& f : m.functions)
    if (f.is_entry) kernels.insert(f.name);
  std::set<std::string> want = {"vec_add", "block_reduce", "warp_ops", "votes", "histogram", "atomics",
                                "int64_math", "bits", "calls", "params_and_globals", "dyn_smem", "grid2d",
                                "sync_reductions", "say", "check", "scale", "pick"};
  EXPECT_EQ(kernels, want);
  const Function& vp = kernel(m, "vprintf");
  EXPECT_TRUE(vp.is_extern);
  EXPECT_FALSE(vp.has_body);
  EXPECT_EQ(vp.params.size(), 2u);
  EXPECT_EQ(vp.rets.size(), 1u);
  EXPECT_EQ(kernel(m, "__assertfail").params.size(), 5u);
  // Every label of every body points into the body.
  for (const Function& f : m.functions)
    for (const Label& l : f.labels) EXPECT_LE(l.target, f.body.size()) << f.name << " " << l.name;
}

TEST(PtxParse, NvccParameterLayoutFollowsTheCAbi) {
  Module m = parse(generated_ptx("e2e.ptx"));
  // struct Pair { int a; long long b; char c; } is 24 bytes, 8-aligned;
  // int* follows at 24.
  auto p = param_layout(kernel(m, "params_and_globals"));
  ASSERT_EQ(p.size(), 2u);
  EXPECT_EQ(p[0].offset, 0u);
  EXPECT_EQ(p[0].size, 24u);
  EXPECT_EQ(p[0].align, 8u);
  EXPECT_EQ(p[1].offset, 24u);
  EXPECT_EQ(p[1].size, 8u);
  // (const int*, const int*, int*, int): the int at 24, 4 bytes.
  auto v = param_layout(kernel(m, "vec_add"));
  ASSERT_EQ(v.size(), 4u);
  EXPECT_EQ(v[3].offset, 24u);
  EXPECT_EQ(v[3].size, 4u);
  // (unsigned char*, int, unsigned*): the pointer after the int is 8-aligned.
  auto h = param_layout(kernel(m, "histogram"));
  ASSERT_EQ(h.size(), 3u);
  EXPECT_EQ(h[1].offset, 8u);
  EXPECT_EQ(h[2].offset, 16u);
}

TEST(PtxParse, NvccModuleInfo) {
  Module m = parse(generated_ptx("e2e.ptx"));
  launch::ModuleInfo info = module_info(m);
  std::map<std::string, launch::ModuleVar> vars;
  for (const auto& v : info.vars) vars[v.name] = v;
  ASSERT_TRUE(vars.count("ctab"));
  EXPECT_EQ(vars["ctab"].space, "const");
  EXPECT_EQ(vars["ctab"].size, 32u);
  ASSERT_TRUE(vars.count("gtable"));
  EXPECT_EQ(vars["gtable"].space, "global");
  std::vector<uint8_t> gt = {10, 0, 0, 0, 20, 0, 0, 0, 30, 0, 0, 0, 40, 0, 0, 0};
  EXPECT_EQ(vars["gtable"].init, gt);
  EXPECT_EQ(vars["gcounter"].size, 4u);
  std::map<std::string, uint32_t> smem;
  for (const auto& k : info.kernels) smem[k.name] = k.static_smem;
  EXPECT_EQ(smem["block_reduce"], 512u);  // int[128]
  EXPECT_EQ(smem["histogram"], 64u);      // unsigned[16]
  EXPECT_EQ(smem["atomics"], 4u);         // one int
  EXPECT_EQ(smem["dyn_smem"], 0u);        // only extern __shared__
  EXPECT_EQ(smem["vec_add"], 0u);
}

TEST(PtxParse, NvccInstructionsDecoded) {
  Module m = parse(generated_ptx("e2e.ptx"));
  auto shfl = find_ops(kernel(m, "warp_ops"), Op::Shfl);
  std::set<ShflMode> modes;
  for (const Instr* in : shfl) {
    modes.insert(in->shfl);
    EXPECT_TRUE(in->sync);
    EXPECT_EQ(in->type, Type::B32);
  }
  EXPECT_EQ(modes, (std::set<ShflMode>{ShflMode::Down, ShflMode::Idx, ShflMode::Up, ShflMode::Bfly}));

  std::set<AtomOp> atoms;
  for (const Instr* in : find_ops(kernel(m, "atomics"), Op::Atom)) atoms.insert(in->atom);
  for (const Instr* in : find_ops(kernel(m, "atomics"), Op::Red)) atoms.insert(in->atom);
  for (AtomOp a : {AtomOp::Max, AtomOp::Min, AtomOp::And, AtomOp::Or, AtomOp::Xor, AtomOp::Cas, AtomOp::Inc,
                   AtomOp::Dec, AtomOp::Exch})
    EXPECT_TRUE(atoms.count(a)) << int(a);

  auto bars = find_ops(kernel(m, "sync_reductions"), Op::Bar);
  std::set<AtomOp> reds;
  for (const Instr* in : bars)
    if (in->bar == BarKind::Red) reds.insert(in->atom);
  EXPECT_EQ(reds, (std::set<AtomOp>{AtomOp::Popc, AtomOp::And, AtomOp::Or}));

  auto votes = find_ops(kernel(m, "votes"), Op::Vote);
  std::set<VoteMode> vm;
  for (const Instr* in : votes) vm.insert(in->vote);
  EXPECT_TRUE(vm.count(VoteMode::Ballot));
  EXPECT_EQ(find_ops(kernel(m, "votes"), Op::Match).size(), 1u);
  EXPECT_EQ(find_ops(kernel(m, "votes"), Op::Activemask).size(), 1u);

  auto calls = find_ops(kernel(m, "calls"), Op::Call);
  ASSERT_EQ(calls.size(), 1u);
  const Instr& call = *calls[0];
  ASSERT_EQ(call.ops.size(), 3u);
  EXPECT_EQ(call.ops[0].kind, Operand::Kind::Vector);
  EXPECT_EQ(call.ops[0].elems.size(), 1u);
  EXPECT_EQ(call.ops[1].kind, Operand::Kind::Sym);
  EXPECT_EQ(call.ops[1].sym.kind, SymKind::Func);
  EXPECT_EQ(m.functions[call.ops[1].sym.index].name, "_Z13collatz_stepsii");
  // nvcc propagates the constant limit into the callee: one argument is left.
  EXPECT_EQ(call.ops[2].elems.size(), 1u);
  EXPECT_EQ(call.ops[2].elems[0].sym.kind, SymKind::LocalVar);

  // Floating point parses into ordinary opcodes with float types.
  auto mul = find_ops(kernel(m, "scale"), Op::Mul);
  EXPECT_TRUE(std::any_of(mul.begin(), mul.end(), [](const Instr* in) { return in->type == Type::F32; }));
}

TEST(PtxParse, ClangModule) {
  Module m = parse(generated_ptx("clang_kernels.ptx"));
  EXPECT_EQ(m.version.substr(0, 2), "8.");
  const Var* bp = m.find_var("bias_ptr");
  ASSERT_NE(bp, nullptr);
  ASSERT_EQ(bp->relocs.size(), 1u);
  EXPECT_EQ(bp->relocs[0].symbol, "bias");
  EXPECT_EQ(bp->relocs[0].addend, 8);
  EXPECT_TRUE(bp->relocs[0].generic);
  const Function& k = kernel(m, "clang_mix");
  auto p = param_layout(k);
  ASSERT_EQ(p.size(), 3u);
  EXPECT_EQ(p[2].offset, 16u);
  EXPECT_EQ(p[2].size, 4u);
  EXPECT_EQ(module_info(m).kernels.at(0).static_smem, 256u);
  EXPECT_FALSE(find_ops(k, Op::Shfl).empty());
  EXPECT_FALSE(find_ops(k, Op::Call).empty());
}

TEST(PtxParse, RegisterRangesScopesAndShadowing) {
  Module m = parse_kernel(R"(
    .reg .b32 %r<3>;
    .reg .pred %p<2>;
    mov.u32 %r0, 1;
    {
      .reg .pred %p1;
      setp.ne.u32 %p1, %r0, 0;
      @%p1 mov.u32 %r2, 5;
    }
    @!%p1 bra $L_end;
    setp.lt.and.s32 %p0|%p1, %r1, -3, !%p0;
  $L_end:
    ret;)");
  const Function& k = m.functions[0];
  ASSERT_EQ(k.regs.size(), 6u);  // %r0..2, %p0..1, the inner %p1
  EXPECT_EQ(k.regs[2].name, "%r2");
  EXPECT_EQ(k.regs[5].name, "%p1");
  EXPECT_EQ(k.regs[5].type, Type::Pred);
  ASSERT_EQ(k.body.size(), 6u);
  EXPECT_EQ(k.body[1].ops[0].reg, 5u);    // inner %p1
  EXPECT_EQ(k.body[2].guard.reg, 5u);
  EXPECT_EQ(k.body[3].guard.reg, 4u);     // outer %p1 again
  EXPECT_TRUE(k.body[3].guard.neg);
  EXPECT_EQ(k.labels.at(k.body[3].ops[0].label).target, 5u);
  const Instr& sp = k.body[4];
  EXPECT_EQ(sp.cmp, Cmp::Lt);
  EXPECT_EQ(sp.bool_op, BoolOp::And);
  EXPECT_EQ(sp.ops[0].kind, Operand::Kind::PredPair);
  EXPECT_EQ(sp.ops[0].reg, 3u);
  EXPECT_EQ(sp.ops[0].reg2, 4u);
  EXPECT_EQ(sp.ops[2].imm, -3);
  EXPECT_TRUE(sp.ops[3].neg);
}

TEST(PtxParse, OperandForms) {
  Module m = parse(R"(
.version 9.0
.target sm_75
.address_size 64
.global .align 4 .b8 arr[8] = {{1, 2}, {3, 4}};
.global .align 8 .u64 ptrs[2] = {arr, generic(arr)+4};
.const .align 4 .f32 one = 0f3F800000;
.section .debug_info { .b8 1, 2, 3 }
.visible .entry k(.param .align 16 .b8 k_param_0[32], .param .u64 .ptr .global .align 4 k_param_1)
.maxntid 128, 1, 1
.minnctapersm 2
{
  .reg .b32 %r<6>;
  .reg .b64 %rd<3>;
  .reg .f32 %f<2>;
  .loc 1 12 3
  ld.param.v4.u32 {%r0, %r1, _, %r3}, [k_param_0+16];
  ld.global.nc.L1::no_allocate.u32 %r4, [%rd1+-8];
  st.shared.v2.u32 [arr+4], {%r0, 7};
  mov.u64 %rd2, arr;
  mov.u32 %r5, %ctaid.y;
  mov.b64 %rd0, {%r0, %r1};
  mov.f32 %f1, 0fBF800000;
  atom.relaxed.gpu.global.cas.b32 %r2, [%rd0], %r1, %r3;
  ret;
})");
  const Function& k = m.functions[0];
  EXPECT_EQ(k.maxntid[0], 128u);
  EXPECT_EQ(k.minnctapersm, 2u);
  ASSERT_EQ(k.params.size(), 2u);
  EXPECT_EQ(k.params[0].size, 32u);
  EXPECT_EQ(k.params[0].align, 16u);
  EXPECT_EQ(k.params[1].offset, 32u);
  EXPECT_EQ(k.params[1].align, 8u);  // the .ptr alignment is the pointee's
  const Var* arr = m.find_var("arr");
  ASSERT_NE(arr, nullptr);
  EXPECT_EQ(arr->init, (std::vector<uint8_t>{1, 2, 3, 4}));
  EXPECT_EQ(m.find_var("ptrs")->relocs.size(), 2u);
  EXPECT_EQ(m.find_var("ptrs")->relocs[1].offset, 8u);
  EXPECT_EQ(m.find_var("one")->init, (std::vector<uint8_t>{0, 0, 0x80, 0x3F}));

  const Instr& ld = k.body[0];
  EXPECT_EQ(ld.vec, 4);
  EXPECT_EQ(ld.space, Space::Param);
  ASSERT_EQ(ld.ops[0].elems.size(), 4u);
  EXPECT_EQ(ld.ops[0].elems[2].kind, Operand::Kind::Sink);
  EXPECT_EQ(ld.ops[1].kind, Operand::Kind::Addr);
  EXPECT_EQ(ld.ops[1].sym.kind, SymKind::Param);
  EXPECT_EQ(ld.ops[1].imm, 16);
  EXPECT_TRUE(k.body[1].nc);
  EXPECT_EQ(k.body[1].ops[1].imm, -8);
  EXPECT_EQ(k.body[2].ops[1].elems[1].imm, 7);
  EXPECT_EQ(k.body[3].ops[1].kind, Operand::Kind::Sym);
  EXPECT_EQ(k.body[3].ops[1].sym.kind, SymKind::ModuleVar);
  EXPECT_EQ(k.body[4].ops[1].sreg, SReg::Ctaid);
  EXPECT_EQ(k.body[4].ops[1].component, 'y');
  EXPECT_EQ(k.body[5].ops[1].kind, Operand::Kind::Vector);
  EXPECT_EQ(k.body[6].ops[1].kind, Operand::Kind::FImm);
  EXPECT_EQ(uint32_t(k.body[6].ops[1].imm), 0xBF800000u);
  const Instr& cas = k.body[7];
  EXPECT_EQ(cas.atom, AtomOp::Cas);
  EXPECT_EQ(cas.sem, Sem::Relaxed);
  EXPECT_EQ(cas.scope, Scope::Gpu);
  EXPECT_EQ(cas.space, Space::Global);
  EXPECT_EQ(cas.ops.size(), 4u);
}

TEST(PtxParse, IndirectCallWithPrototype) {
  Module m = parse(R"(
.version 9.0
.target sm_75
.address_size 64
.func (.param .b32 r) twice(.param .b32 x)
{
  .reg .b32 %r<3>;
  ld.param.b32 %r1, [x];
  add.s32 %r2, %r1, %r1;
  st.param.b32 [r], %r2;
  ret;
}
.visible .entry k()
{
  .reg .b64 %rd<2>;
  .reg .b32 %r<2>;
  mov.u64 %rd1, twice;
  {
  .param .b32 param0;
  st.param.b32 [param0], 21;
  .param .b32 retval0;
  prototype_0 : .callprototype (.param .b32 _) _ (.param .b32 _);
  call (retval0), %rd1, (param0), prototype_0;
  ld.param.b32 %r1, [retval0];
  }
  ret;
})");
  const Function& k = *m.find_function("k");
  auto calls = find_ops(k, Op::Call);
  ASSERT_EQ(calls.size(), 1u);
  ASSERT_EQ(calls[0]->ops.size(), 4u);
  EXPECT_EQ(calls[0]->ops[1].kind, Operand::Kind::Reg);
  EXPECT_EQ(calls[0]->ops[3].kind, Operand::Kind::Name);
  EXPECT_EQ(k.body[0].ops[1].sym.kind, SymKind::Func);
  EXPECT_EQ(k.vars.size(), 2u);
}

// An indirect call without a return list (a virtual void method), as nvcc
// writes it over several lines; and WARP_SZ and the indexed predefined
// identifiers as operands.
TEST(PtxParse, IndirectCallWithoutReturnsAndPredefinedIdentifiers) {
  Module m = parse(R"(
.version 9.0
.target sm_75
.address_size 64
.func sink(.param .b64 p, .param .b32 v)
{
  ret;
}
.visible .entry k()
{
  .reg .b64 %rd<3>;
  .reg .b32 %r<4>;
  mov.u64 %rd1, sink;
  {
  .param .b64 param0;
  st.param.b64 [param0+0], %rd1;
  .param .b32 param1;
  st.param.b32 [param1+0], 1;
  prototype_10 : .callprototype ()_ (.param .b64 _, .param .b32 _);
  call
  %rd1,
  (
  param0,
  param1
  )
  , prototype_10;
  }
  mov.u32 %r1, WARP_SZ;
  mov.u32 %r2, %envreg31;
  mov.u64 %rd2, %pm7_64;
  mov.u32 %r3, %cluster_ctaid.z;
  ret;
})");
  const Function& k = *m.find_function("k");
  auto calls = find_ops(k, Op::Call);
  ASSERT_EQ(calls.size(), 1u);
  ASSERT_EQ(calls[0]->ops.size(), 4u);
  EXPECT_EQ(calls[0]->ops[0].elems.size(), 0u);
  EXPECT_EQ(calls[0]->ops[1].kind, Operand::Kind::Reg);
  EXPECT_EQ(calls[0]->ops[2].elems.size(), 2u);
  EXPECT_EQ(calls[0]->ops[3].kind, Operand::Kind::Name);
  auto movs = find_ops(k, Op::Mov);
  ASSERT_EQ(movs.size(), 5u);
  EXPECT_EQ(movs[1]->ops[1].kind, Operand::Kind::Imm);
  EXPECT_EQ(movs[1]->ops[1].imm, 32);
  EXPECT_EQ(movs[2]->ops[1].sreg, SReg::Envreg);
  EXPECT_EQ(movs[2]->ops[1].imm, 31);
  EXPECT_EQ(movs[3]->ops[1].sreg, SReg::Pm64);
  EXPECT_EQ(movs[3]->ops[1].imm, 7);
  EXPECT_EQ(movs[4]->ops[1].sreg, SReg::ClusterCtaid);
  EXPECT_EQ(movs[4]->ops[1].component, 'z');
  EXPECT_THROW(parse_kernel("  .reg .b32 %r<2>;\n  mov.u32 %r0, %envreg32;"), ParseError);
}

TEST(PtxParse, ErrorsNameTheLineAndToken) {
  struct Case {
    std::string body;
    int line;
    std::string token;
  };
  // The kernel body starts on line 6 of the wrapped module.
  std::vector<Case> cases = {
      {"  .reg .b32 %r<2>;\n  frobnicate.u32 %r0, %r1;", 7, "frobnicate"},
      {"  .reg .b32 %r<2>;\n  add.u32 %r0, %r9, 1;", 7, "%r9"},
      {"  bra $nowhere;\n  ret;", 6, "$nowhere"},
      {"  .reg .b32 %r<2>;\n  add.q32 %r0, %r1, 1;", 7, ".q32"},
      {"  .reg .b32 %r<2>;\n  add.u32 %r0, %r1;", 7, "takes 3 operands"},
      {"  .reg .b32 %r<2>;\n  ld.global.u32 %r0, %r1;", 7, "address"},
      {"  .reg .b32 %r<2>;\n  mov.u32 %r0, #;", 7, "'#'"},
      {"  .reg .b32 %r<2>;\n  mov.u32 %r0, missing_symbol;", 7, "missing_symbol"},
  };
  for (const Case& c : cases) {
    try {
      parse_kernel(c.body);
      ADD_FAILURE() << "no error for: " << c.body;
    } catch (const ParseError& e) {
      EXPECT_EQ(e.line(), c.line) << e.what();
      EXPECT_NE(std::string(e.what()).find("line " + std::to_string(c.line)), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(c.token), std::string::npos) << e.what();
    }
  }
  EXPECT_THROW(parse(".version 9.0\n.target sm_75\n.visible .entry k()\n{\n ret;\n"), ParseError);
}

}  // namespace
}  // namespace qgpu::ptx::test
