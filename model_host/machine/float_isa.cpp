// The native floating-point operations (float_isa.h): their table, their
// encoding in an Instr, their execution through model_host/ptx/float_ref.h,
// and the validation that keeps them off machines without them.
#include "model_host/machine/float_isa.h"

#include <sstream>
#include <stdexcept>
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif

#include "model_host/ptx/float_ref.h"

namespace qgpu::machine {
namespace {

namespace fref = ptx::fref;
using ptx::Rnd;

const OpInfo kFloatOps[kFOpCount] = {
    {"fadd", kFloatKind, 2, nullptr},  {"fsub", kFloatKind, 2, nullptr},  {"fmul", kFloatKind, 2, nullptr},
    {"ffma", kFloatKind, 3, nullptr},  {"fdiv", kFloatKind, 2, nullptr},  {"fsqrt", kFloatKind, 1, nullptr},
    {"fmin", kFloatKind, 2, nullptr},  {"fmax", kFloatKind, 2, nullptr},  {"fcmp", kFloatKind, 2, nullptr},
    {"i2f", kFloatKind, 1, nullptr},   {"u2f", kFloatKind, 1, nullptr},   {"f2i", kFloatKind, 1, nullptr},
    {"f2u", kFloatKind, 1, nullptr},   {"frint", kFloatKind, 1, nullptr}, {"fex2", kFloatKind, 1, nullptr},
    {"flg2", kFloatKind, 1, nullptr},  {"fsin", kFloatKind, 1, nullptr},  {"fcos", kFloatKind, 1, nullptr},
    {"ftanh", kFloatKind, 1, nullptr},
};

const char* rnd_name(Rnd r) {
  switch (r) {
    case Rnd::Rn: return ".rn";
    case Rnd::Rz: return ".rz";
    case Rnd::Rm: return ".rm";
    case Rnd::Rp: return ".rp";
    case Rnd::Rni: return ".rni";
    case Rnd::Rzi: return ".rzi";
    case Rnd::Rmi: return ".rmi";
    case Rnd::Rpi: return ".rpi";
    default: return "";
  }
}

const char* cmp_name(ptx::Cmp c) {
  using C = ptx::Cmp;
  switch (c) {
    case C::Eq: return ".eq";
    case C::Ne: return ".ne";
    case C::Lt: return ".lt";
    case C::Le: return ".le";
    case C::Gt: return ".gt";
    case C::Ge: return ".ge";
    case C::Equ: return ".equ";
    case C::Neu: return ".neu";
    case C::Ltu: return ".ltu";
    case C::Leu: return ".leu";
    case C::Gtu: return ".gtu";
    case C::Geu: return ".geu";
    case C::Num: return ".num";
    case C::Nan: return ".nan";
    default: return ".?";
  }
}

// One operation over the lanes: `f(a, b, c)` for each lane in mask (a full
// CUDA warp in a loop of known length).
template <class F>
inline void over(const uint32_t* a, const uint32_t* b, const uint32_t* c, uint32_t* d, uint32_t n, uint64_t mask,
                 F f) {
  const uint64_t full = n >= 64 ? ~uint64_t(0) : (uint64_t(1) << n) - 1;
  if ((mask & full) == full) {
    if (n == Params::kCudaWarp)
      for (uint32_t l = 0; l < Params::kCudaWarp; ++l) d[l] = f(a[l], b[l], c[l]);
    else
      for (uint32_t l = 0; l < n; ++l) d[l] = f(a[l], b[l], c[l]);
    return;
  }
  for (uint32_t l = 0; l < n; ++l)
    if (mask >> l & 1) d[l] = f(a[l], b[l], c[l]);
}

// fma .rn over a whole CUDA warp with the host's FMA instructions (the same
// exactly rounded result as fmaf, which the baseline x86-64 build calls per
// lane): used when the processor has them.
#if defined(__x86_64__) && defined(__GNUC__)
[[gnu::target("fma")]] void fma_rn_warp_hw(const uint32_t* a, const uint32_t* b, const uint32_t* c, uint32_t* d) {
  // Four lanes at a time; a NaN result becomes the canonical NaN (fref::canonical).
  const __m128i abs = _mm_set1_epi32(0x7FFFFFFF), inf = _mm_set1_epi32(0x7F800000),
                nan = _mm_set1_epi32(int(fref::kNaN32));
  for (uint32_t l = 0; l < Params::kCudaWarp; l += 4) {
    const __m128 x = _mm_loadu_ps(reinterpret_cast<const float*>(a + l));
    const __m128 y = _mm_loadu_ps(reinterpret_cast<const float*>(b + l));
    const __m128 z = _mm_loadu_ps(reinterpret_cast<const float*>(c + l));
    const __m128i r = _mm_castps_si128(_mm_fmadd_ps(x, y, z));
    const __m128i isnan = _mm_cmpgt_epi32(_mm_and_si128(r, abs), inf);
    const __m128i out = _mm_or_si128(_mm_andnot_si128(isnan, r), _mm_and_si128(isnan, nan));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(d + l), out);
  }
}
const bool kHostFma = __builtin_cpu_supports("fma");
#else
void fma_rn_warp_hw(const uint32_t*, const uint32_t*, const uint32_t*, uint32_t*) {}
const bool kHostFma = false;
#endif

}  // namespace

FloatMod float_mod(const Instr& in) {
  FloatMod m;
  m.rnd = Rnd(in.bytes & 15);
  m.ftz = in.bytes >> 4 & 1;
  m.sat = in.bytes >> 5 & 1;
  m.cmp = ptx::Cmp(uint8_t(in.atom));
  return m;
}

Instr make_float(FOp f, uint32_t dst, Operand a, Operand b, Operand c, const FloatMod& m) {
  Instr in;
  in.op = float_op(f);
  in.dst = dst;
  const int n = kFloatOps[int(f)].arity;
  in.a = n >= 1 ? a : Operand::k(0);
  in.b = n >= 2 ? b : Operand::k(0);
  in.c = n >= 3 ? c : Operand::k(0);
  in.bytes = uint8_t(uint8_t(m.rnd) | (m.ftz ? 16 : 0) | (m.sat ? 32 : 0));
  in.atom = AtomOp(f == FOp::CMP ? uint8_t(m.cmp) : 0);
  in.space = Space::Global;
  in.sign = false;
  return in;
}

const OpInfo& info(Op op) {
  if (is_float(op)) return kFloatOps[int(fop_of(op))];
  return op_info(op);
}

std::string to_string_any(const Instr& in) {
  if (!is_float(in.op)) return to_string(in);
  const OpInfo& i = info(in.op);
  const FloatMod m = float_mod(in);
  std::string r = i.name;
  if (fop_of(in.op) == FOp::CMP) r += cmp_name(m.cmp);
  else r += rnd_name(m.rnd);
  if (m.ftz) r += ".ftz";
  if (m.sat) r += ".sat";
  r += " r" + std::to_string(in.dst);
  if (i.arity >= 1) r += ", " + to_string(in.a);
  if (i.arity >= 2) r += ", " + to_string(in.b);
  if (i.arity >= 3) r += ", " + to_string(in.c);
  return r;
}

std::string to_string_any(const Program& prog) {
  std::ostringstream os;
  os << "// " << prog.kernel << ": " << prog.blocks.size() << " blocks, " << prog.instr_count()
     << " instructions, shared " << prog.shared_bytes << " B/CTA, local " << prog.local_bytes << " B/thread\n";
  for (size_t i = 0; i < prog.blocks.size(); ++i) {
    os << "B" << i << ":\n";
    for (auto& in : prog.blocks[i].instrs) os << "  " << to_string_any(in) << "\n";
    os << "  " << to_string(prog.blocks[i].term) << "\n";
  }
  return os.str();
}

uint32_t eval_float(const Instr& in, uint32_t a, uint32_t b, uint32_t c) {
  uint32_t d = 0;
  eval_float_lanes(in, &a, &b, &c, &d, 1, 1);
  return d;
}

void eval_float_lanes(const Instr& in, const uint32_t* a, const uint32_t* b, const uint32_t* c, uint32_t* d,
                      uint32_t n, uint64_t mask, int host_nearest) {
  const FloatMod m = float_mod(in);
  const Rnd r = m.rnd;
  const bool ftz = m.ftz, sat = m.sat;
  auto run = [&](auto f) { over(a, b, c, d, n, mask, f); };
  if ((r == Rnd::None || r == Rnd::Rn) && !ftz && !sat &&
      (host_nearest >= 0 ? host_nearest != 0 : fref::host_rounds_to_nearest())) {
    // The common case inline over the lanes (float_ref.h: the same functions
    // fref::add ... fma use for it).
    switch (fop_of(in.op)) {
      case FOp::ADD: return run([](uint32_t x, uint32_t y, uint32_t) { return fref::add_rn(x, y); });
      case FOp::SUB: return run([](uint32_t x, uint32_t y, uint32_t) { return fref::sub_rn(x, y); });
      case FOp::MUL: return run([](uint32_t x, uint32_t y, uint32_t) { return fref::mul_rn(x, y); });
      case FOp::FMA:
        if (kHostFma && n == Params::kCudaWarp && mask == (uint64_t(1) << Params::kCudaWarp) - 1)
          return fma_rn_warp_hw(a, b, c, d);
        return run([](uint32_t x, uint32_t y, uint32_t z) { return fref::fma_rn(x, y, z); });
      default: break;
    }
  }
  switch (fop_of(in.op)) {
    case FOp::ADD: return run([&](uint32_t x, uint32_t y, uint32_t) { return fref::add(x, y, r, ftz, sat); });
    case FOp::SUB: return run([&](uint32_t x, uint32_t y, uint32_t) { return fref::sub(x, y, r, ftz, sat); });
    case FOp::MUL: return run([&](uint32_t x, uint32_t y, uint32_t) { return fref::mul(x, y, r, ftz, sat); });
    case FOp::FMA: return run([&](uint32_t x, uint32_t y, uint32_t z) { return fref::fma(x, y, z, r, ftz, sat); });
    case FOp::DIV: return run([&](uint32_t x, uint32_t y, uint32_t) { return fref::div(x, y, r, ftz, sat); });
    case FOp::SQRT: return run([&](uint32_t x, uint32_t, uint32_t) { return fref::sqrt(x, r, ftz); });
    case FOp::MIN: return run([&](uint32_t x, uint32_t y, uint32_t) { return fref::min(x, y, ftz); });
    case FOp::MAX: return run([&](uint32_t x, uint32_t y, uint32_t) { return fref::max(x, y, ftz); });
    case FOp::CMP:
      return run([&](uint32_t x, uint32_t y, uint32_t) { return uint32_t(fref::compare(m.cmp, x, y, ftz)); });
    case FOp::I2F:
      return run([&](uint32_t x, uint32_t, uint32_t) { return fref::saturate(fref::from_int(x, true, 32, r), sat); });
    case FOp::U2F:
      return run([&](uint32_t x, uint32_t, uint32_t) { return fref::saturate(fref::from_int(x, false, 32, r), sat); });
    case FOp::F2I: return run([&](uint32_t x, uint32_t, uint32_t) { return uint32_t(fref::to_int(x, true, 32, r, ftz)); });
    case FOp::F2U:
      return run([&](uint32_t x, uint32_t, uint32_t) { return uint32_t(fref::to_int(x, false, 32, r, ftz)); });
    case FOp::RINT: return run([&](uint32_t x, uint32_t, uint32_t) { return fref::round_int(x, r, ftz, sat); });
    case FOp::EX2: return run([&](uint32_t x, uint32_t, uint32_t) { return fref::ex2(x, ftz); });
    case FOp::LG2: return run([&](uint32_t x, uint32_t, uint32_t) { return fref::lg2(x, ftz); });
    case FOp::SIN: return run([&](uint32_t x, uint32_t, uint32_t) { return fref::sin(x, ftz); });
    case FOp::COS: return run([&](uint32_t x, uint32_t, uint32_t) { return fref::cos(x, ftz); });
    case FOp::TANH: return run([&](uint32_t x, uint32_t, uint32_t) { return fref::tanh(x, ftz); });
  }
}

void validate(const Program& prog, const Params& p, const Features& f) {
  bool any = false;
  for (size_t bi = 0; bi < prog.blocks.size(); ++bi)
    for (size_t ii = 0; ii < prog.blocks[bi].instrs.size(); ++ii) {
      const Instr& in = prog.blocks[bi].instrs[ii];
      const std::string where = "block " + std::to_string(bi) + " instruction " + std::to_string(ii) + ": ";
      if (uint8_t(in.op) < kOpCount) continue;
      if (!is_float(in.op)) throw std::invalid_argument(where + "op " + std::to_string(int(in.op)) + " is not defined");
      if (!f.native_float)
        throw std::invalid_argument(where + to_string_any(in) +
                                    ": a native floating-point operation, which this machine does not have (it "
                                    "runs floating point as integer sequences, docs/isa.md section 11)");
      const FloatMod m = float_mod(in);
      const bool cmp = fop_of(in.op) == FOp::CMP;
      if (uint8_t(m.rnd) > uint8_t(Rnd::Rpi) || (cmp && std::string(cmp_name(m.cmp)) == ".?"))
        throw std::invalid_argument(where + "invalid floating-point modifiers");
      any = true;
    }
  if (!any) return validate(prog, p);
  // The block rules, with each float operation in the place of an ALU
  // operation reading and writing the same registers.
  Program copy = prog;
  for (Block& b : copy.blocks)
    for (Instr& in : b.instrs)
      if (is_float(in.op)) {
        in.op = Op::SEL;
        in.bytes = 4;
        in.atom = AtomOp::ADD;
      }
  validate(copy, p);
}

}  // namespace qgpu::machine
