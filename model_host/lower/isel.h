// Instruction selection (README.md): one PTX kernel, specialised for one
// launch configuration, as virtual code (vcode.h).  Every PTX instruction
// becomes machine operations on virtual 32-bit registers (a 64-bit PTX
// register is a pair, a predicate holds 0/1), with labels and branches;
// device functions are inlined, CUDA warp operations go through a per-warp
// scratch area in shared memory and the warp-group barrier.  The Lowerer's
// members are defined by family: isel.cpp (the walk, the dispatch, integer
// and bit operations, setp, cvt, control), isel_operands.cpp, isel_arith.cpp (64-bit
// arithmetic, division), isel_float.cpp, isel_memory.cpp, isel_warp.cpp,
// isel_call.cpp, isel_launch.cpp (the device runtime: device-side launches),
// isel_more.cpp.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include "model_host/launch/errors.h"
#include "model_host/lower/lower.h"
#include "model_host/lower/softfloat.h"
#include "model_host/lower/vcode.h"
#include "model_host/ptx/float_ref.h"
#include "model_host/ptx/layout.h"

namespace qgpu::machine::lowering {

using ptx::Type;

// One inlined function body.
struct Frame {
  const ptx::Function* f = nullptr;
  uint32_t findex = 0;
  std::vector<std::array<uint32_t, 2>> regs;  // PTX register -> vregs (hi kNoV if <= 32 bits)
  std::vector<uint32_t> labels;               // PTX label -> label id
  std::vector<uint32_t> var_off;              // body .local/.param variable -> local offset
  std::vector<uint32_t> param_off, ret_off;   // inlined .func: its params/rets -> local offsets
  bool kernel = false;
  uint32_t ret_label = 0;
};

// The scratch area after the program's shared memory: one CTA counter word
// (bar.red), then per 32-thread warp 32 shuffle words and one vote word.
// A lane's shuffle word is 0 except while the lane is in a shuffle, match or
// redux (each lane clears its word after the closing warp barrier), so a
// shuffle that reads a lane not taking part gets 0, as NVIDIA's GPUs give.
constexpr uint32_t kScratchShfl = 0, kScratchVote = 32, kScratchWords = 33;
// After the scratch area, where a kernel has wmma.mma: per 32-thread warp
// its matrix area (isel_wmma.cpp): A and B of the largest shape (1,280
// bytes of f16); on a machine without Op::MMA, after them A and B as f32
// (2,560 bytes) where the module has an f16 wmma.mma, and the lanes'
// elements of C (32 x 8 words).
constexpr uint32_t kMmaAreaNative = 1280, kMmaAreaStaged = 1280 + 1024, kMmaAreaStagedF32 = 1280 + 2560 + 1024;

// What instruction selection hands on: the kernel's virtual code and the
// memory it laid out.
struct Selection {
  VCode vc;
  uint32_t threads = 0;           // per CTA
  uint32_t local_top = 0;         // per-thread local bytes so far (the allocator's spill slots go above)
  uint32_t scratch_base = 0;      // shared offset of the scratch area
  bool scratch_used = false;      // warp operations use the scratch area
  uint32_t mma_base = 0;          // shared offset of the matrix areas
  uint32_t mma_bytes = 0;         // their size (0: no wmma.mma)
  bool narrow_division = false;   // a 64-bit division has its path for divisors below 2^32
  bool ctas_in_order = false;     // sequences atomic only while CTAs run one at a time (Program)
  GridUse grid_use = GridUse::None;  // what of the grid the code depends on
};

class Lowerer : public Emitter {
 public:
  Lowerer(const ptx::Module& m, const LaunchShape& s, const Params& p, const LowerOptions& o)
      : m_(m), shape_(s), p_(p), opts_(o) {}

  // Throws LowerError for a launch beyond the machine's limits or an
  // instruction it does not take.
  Selection select(const std::string& kernel);

 private:
  [[noreturn]] void unsupported(const ptx::Instr& in, const std::string& why) {
    throw LowerError(launch::kNotSupported, "PTX line " + std::to_string(in.line) + ": `" + in.opcode + "` " + why);
  }

  // 64-bit helpers on word pairs (isel_arith.cpp).
  V add64(V a, V b);
  V sub64(V a, V b);
  V neg64(V a) { return sub64({K(0), K(0)}, a); }
  V mul64(V a, V b);
  V mulhi64(V a, V b, bool sign);
  Operand eq64(V a, V b) { return opr(Op::AND, opr(Op::SEQ, a.lo, b.lo), opr(Op::SEQ, a.hi, b.hi)); }
  Operand lt64(V a, V b, bool sign, bool or_equal);
  V shl64(V a, Operand n);
  V shr64(V a, Operand n, bool sign);
  // Division routines (docs/isa.md, "Division"): long division with the
  // divisor aligned under the dividend's top bit, one quotient bit per
  // iteration, as an inline loop over the quotient's bits only.  No quotient
  // bit above i0 = clz(d) - clz(n) can be 1 (n >> (i0 + 1) has fewer bits
  // than d), so the loop compares and subtracts d << i for i = i0 .. 0, and
  // d << i0 has exactly n's bit length: nothing overflows.  n < d gives
  // i0 = -1 (no iteration, r = n); a zero divisor runs every bit (i0 = 31 or
  // 63), subtracting 0 each time: q all ones, r = n.  The loop counts its
  // iterations down to zero and branches on the count itself.  The quotient
  // is only accumulated when it is used.
  //
  // A 32-bit step subtracts with r = minu(r, r - dd): when dd <= r, r - dd is
  // the smaller; when dd > r, r - dd wraps to 2^32 - (dd - r) > r.
  //
  // The quotient costs 3 more operations a bit when the loop accumulates it.
  // A long one (more than kShortQuotient bits) is computed after the loop
  // instead: n - r = q d exactly, so with d = d' 2^s, d' odd, (n - r) >> s =
  // q d' exactly (< 2^32), and q = (q d') x mod 2^32 for x the inverse of d'
  // modulo 2^32 (exact_quotient): about 20 operations once, most of whose
  // values are wide (two tokens each on the model), against 3 a bit.
  static constexpr uint32_t kShortQuotient = 10;
  std::pair<Operand, Operand> udiv32(Operand n, Operand d, bool want_q, uint32_t out = kNoV);
  Operand exact_quotient(Operand m_lo, Operand d, Operand m_hi = K(0));
  std::pair<Operand, Operand> div_preinv(Operand u1, Operand u0, Operand dn, Operand v, bool want_q);
  void refresh_reciprocal(Operand dn);
  Operand clz64(V x);
  std::pair<V, V> udiv64(V n, V d, bool want_q, const std::array<uint32_t, 2>* out = nullptr);
  Operand neg_if32(Operand a, Operand neg) { return opr(Op::SEL, neg, opr(Op::SUB, K(0), a), a); }
  V neg_if64(V a, Operand neg);
  // ---- the thread's coordinates ---------------------------------------------
  // The thread's linear index in its CTA, computed once at kernel entry.
  Operand tid_linear() { return R(tid_); }
  Operand div_const(Operand x, uint32_t d, uint64_t bound);
  Operand rem_const(Operand x, uint32_t d, uint64_t bound);
  Operand component(Operand lin, const launch::Dim3& dim, char c);
  static uint32_t dim_of(const launch::Dim3& d, char c) { return c == 'x' ? d.x : c == 'y' ? d.y : d.z; }
  // The grid's parts the code reads, each noting what it depends on
  // (GridUse): component c of the CTA's index, and the grid's dimension c.
  Operand grid_component(char c) {
    const launch::Dim3& g = shape_.grid;
    note_grid(c == 'x' && g.y * g.z == 1 ? GridUse::Flat : GridUse::Exact);  // component(): x is the index itself
    return component(opr(Op::CTA), g, c);
  }
  uint32_t grid_dim(char c) {
    note_grid(GridUse::Exact);
    return dim_of(shape_.grid, c);
  }
  void note_grid(GridUse u) { grid_use_ = std::max(grid_use_, u); }
  Operand special(const ptx::Instr& in, const ptx::Operand& o);

  // ---- operands -------------------------------------------------------------
  V read(const ptx::Instr& in, const ptx::Operand& o, Type t);
  Operand read32(const ptx::Instr& in, const ptx::Operand& o, Type t) { return read(in, o, t).lo; }
  void write(const ptx::Operand& d, Type t, V v);
  Operand address(const ptx::Instr& in, const ptx::Operand& o, uint32_t& off, Space& sp);
  uint32_t symbol_address(const ptx::Instr& in, const ptx::SymRef& s, ptx::Space* space);
  Space mem_space(const ptx::Instr& in, ptx::Space sp);

  // ---- instructions ---------------------------------------------------------
  void lower_function(Frame& fr);
  void lower_instr(const ptx::Instr& in);
  // The families lower_instr dispatches to (isel.cpp).
  void lower_int_arith(const ptx::Instr& in);  // mov, add, sub, mul, mad, abs, neg, min, max
  void lower_bit_op(const ptx::Instr& in);     // popc, clz, brev, bfind, bfe, bfi, prmt, shf, shifts, logic
  void lower_select(const ptx::Instr& in);     // cvta, selp, slct
  void lower_control(const ptx::Instr& in);    // bra, ret, exit, trap, barriers, fences
  void lower_guarded(const ptx::Instr& in);
  void lower_setp(const ptx::Instr& in);
  void lower_float(const ptx::Instr& in);
  bool lower_half(const ptx::Instr& in, const ptx::FloatMods& fm);
  bool lower_half_wide(const ptx::Instr& in, const ptx::FloatMods& fm);
  bool lower_half_misc(const ptx::Instr& in, const ptx::FloatMods& fm);
  bool lower_defined_approx(const ptx::Instr& in, const ptx::FloatMods& fm);
  Operand sat16(Operand h);
  // A native float operation (OpKind::Float; LowerOptions::native_float), or
  // its value when every operand is an immediate.
  Operand fnative(Op f, const FloatMod& m, Operand a, Operand b = K(0), Operand c = K(0));
  softfloat::Gen float_gen();
  Operand directed_fma(Operand a, Operand b, Operand c, bool c_zero, softfloat::Round rnd,
                       const std::function<Operand()>& integer);
  // A native f64 operation on up to three 64-bit sources (two words each):
  // its result's low and high words (two instructions, FloatMod::hi), or
  // for an op with a one-word result that word in lo (hi 0).
  V dnative(Op f, const FloatMod& m, V x, V y = {}, V z = {});
  static V float_literal(const ptx::Operand& o, uint32_t size);
  void lower_cvt(const ptx::Instr& in);
  void lower_divrem(const ptx::Instr& in);
  const std::array<uint32_t, 2>* direct_destination(const ptx::Instr& in, std::initializer_list<V> srcs,
                                                    uint32_t bytes);
  void lower_ldst(const ptx::Instr& in);
  void lower_atom(const ptx::Instr& in);
  void lower_atom32(const ptx::Instr& in, Space sp, Operand addr);
  void lower_atom64(const ptx::Instr& in, Space sp, Operand addr);
  void lower_atom_float(const ptx::Instr& in, Space sp, Operand addr);  // lower_atomic_float.h
  V lanes_in_turn(const std::function<V()>& body);  // each lane of the warp in turn
  bool is_generic(const ptx::Instr& in, const ptx::Operand& addr_op);
  void dispatch_generic(Operand a, const std::function<void(Space, Operand)>& access);
  void lower_match(const ptx::Instr& in);
  void lower_call(const ptx::Instr& in);
  void lower_printf(const ptx::Instr& in);
  void lower_assert(const ptx::Instr& in);
  void append_print_record(Operand format, uint32_t bytes, const std::vector<Operand>& words);
  std::string printf_format(const ptx::Instr& call);
  void lower_shfl(const ptx::Instr& in);
  void lower_wmma(const ptx::Instr& in);      // isel_wmma.cpp
  void lower_wmma_mma(const ptx::Instr& in);
  Operand mma_area();                         // this CUDA warp's matrix area
  uint32_t mma_base() const;
  uint32_t mma_area_bytes() const {
    return p_.native_mma ? kMmaAreaNative : mma_f16_ ? kMmaAreaStagedF32 : kMmaAreaStaged;
  }
  void clear_shfl_slot(Operand area);
  void lower_vote(const ptx::Instr& in);
  void lower_bar_red(const ptx::Instr& in);
  uint32_t local_alloc(uint64_t size, uint32_t align);
  Operand warp_scratch(uint32_t word);  // shared offset of this CUDA warp's scratch word
  Operand warp_ballot(Operand bit_pred);

  // ---- more of PTX's integer instructions (lower_more.*; docs/isa.md 8.2) -----
  // Carry chains, lop3, mul24/mad24, sad, dp4a/dp2a, bmsk/szext, saturating
  // add/sub, redux.sync, every match form, 64-bit bfe/bfi/bfind, prmt's
  // modes, counted and named barriers, device malloc/free and indirect calls.
  // lower_more() takes the instructions it handles and returns true.
  bool lower_more(const ptx::Instr& in);
  // tex, suld.b, sust.b (texture.h; docs/isa.md section 8.3; isel_texture.cpp).
  void lower_texture(const ptx::Instr& in);
  Operand special_more(const ptx::Instr& in, const ptx::Operand& o);
  void set_carry(Operand c);
  Operand carry_in();
  void lower_carry(const ptx::Instr& in);
  void lower_lop3(const ptx::Instr& in);
  Operand lop3_expand(uint32_t lut, const std::array<Operand, 3>& x, int var, uint32_t nvars);
  void lower_mul24(const ptx::Instr& in);
  void lower_sad(const ptx::Instr& in);
  void lower_dp(const ptx::Instr& in);
  void lower_sat(const ptx::Instr& in);
  void lower_redux(const ptx::Instr& in);
  void lower_match_any_all(const ptx::Instr& in);
  void lower_bitfield64(const ptx::Instr& in);
  void lower_prmt_mode(const ptx::Instr& in);
  void lower_named_barrier(const ptx::Instr& in);
  void lower_malloc(const ptx::Instr& in);
  void lower_free(const ptx::Instr& in);
  uint32_t heap_alloc(Operand lo, Operand hi);
  void heap_free(Operand p);
  // The device runtime's calls (isel_launch.cpp): false when `name` is none.
  bool lower_device_runtime(const ptx::Instr& in, const std::string& name);
  void start_device_runtime();
  uint32_t enqueue(Operand rec, Operand stream);
  uint32_t last_error_slot_ = UINT32_MAX;  // per-thread cudaGetLastError word (local memory)
  void lower_indirect_call(const ptx::Instr& in);
  void serialize_lanes(const std::function<void()>& body);
  uint32_t carry_ = kNoV;  // vreg: PTX's CC.CF flag (created at its first use)
  bool counted_barriers_ = false;  // every barrier is counted (lower_named_barrier)
  uint32_t barrier_base_ = 0;      // shared offset of the counted barriers' words
  void reserve_barrier_words();
  std::vector<bool> address_taken_;  // per function: the module takes its address
  bool rename_temp(uint32_t t, uint32_t dst);

  const ptx::Module& m_;
  const LaunchShape& shape_;
  const Params& p_;
  const LowerOptions& opts_;
  uint32_t kernel_ = 0;
  ptx::SharedLayout shared_;
  uint32_t threads_ = 0;
  uint32_t local_top_ = 0;
  uint32_t scratch_base_ = 0;  // shared offset of the scratch area
  bool narrow_division_ = false;  // a 64-bit division has its path for divisors below 2^32
  bool ctas_in_order_ = false;    // Selection::ctas_in_order
  GridUse grid_use_ = GridUse::None;
  uint32_t recip_d_ = 0, recip_v_ = 0;  // vregs: the normalised divisor whose reciprocal recip_v_ holds (0: none)
  bool scratch_used_ = false;
  bool mma_used_ = false;
  bool mma_f16_ = false;  // the module has an f16 wmma.mma (mma_area_bytes)
  std::vector<Frame*> frames_;
  Operand guard_ = K(1);  // pure instructions under a guard write through SEL
  uint32_t mark_ = 0;  // first vreg created by the current PTX instruction
  uint32_t tid_ = 0;   // vreg: warp * L + lane
};

}  // namespace qgpu::machine::lowering
