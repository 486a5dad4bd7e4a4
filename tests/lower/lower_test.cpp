// The lowering, checked end to end: kernels compiled by nvcc run on the
// machine interpreter (lowered for L = 4, 8 and 32 lanes, and for the model's
// machine) and on the PTX-level interpreter; every output byte, the error and
// the printf output must agree.
#include "build_paths.h"   // qgpu_paths() in CMakeLists.txt

#include "model_host/lower/lower.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <random>

#include <cstring>
#include <fstream>
#include <sstream>

#include "model_host/machine/api.h"
#include "model_host/machine/image.h"
#include "model_host/machine/interpreter.h"
#include "model_host/machine/printf.h"
#include "model_host/ptx/layout.h"
#include "model_host/ptx/ptx_interp.h"

namespace qgpu::machine {
namespace {

const std::string& kernels_ptx() {
  static const std::string text = [] {
    std::ifstream in(QGPU_MACHINE_KERNELS_PTX);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }();
  return text;
}

// A kernel argument: raw parameter bytes, or a device buffer (its pointer is the parameter).
struct Arg {
  bool buffer = false;
  std::vector<uint8_t> bytes;
};
template <class T>
Arg scalar(T v) {
  Arg a;
  a.bytes.resize(sizeof(T));
  std::memcpy(a.bytes.data(), &v, sizeof(T));
  return a;
}
template <class T>
Arg buffer(const std::vector<T>& v) {
  Arg a;
  a.buffer = true;
  a.bytes.resize(v.size() * sizeof(T));
  std::memcpy(a.bytes.data(), v.data(), a.bytes.size());
  return a;
}
Arg zeros(size_t n) {
  Arg a;
  a.buffer = true;
  a.bytes.assign(n, 0);
  return a;
}

struct Outcome {
  int error = 0;
  std::string message, printf_output;
  std::vector<std::vector<uint8_t>> buffers;
  uint64_t steps = 0;
};

struct Launch {
  std::string kernel;
  launch::Dim3 grid, block;
  std::vector<Arg> args;
};

// Places the buffers and packs the parameters the same way for both interpreters.
struct Prepared {
  ModuleImage img;
  std::vector<uint8_t> params;
  std::vector<std::pair<uint64_t, size_t>> buffers;
};
Prepared prepare(const Launch& l) {
  Prepared p{load_module(kernels_ptx(), default_params()), {}, {}};
  auto idx = p.img.module.function_index(l.kernel);
  EXPECT_TRUE(idx.has_value()) << l.kernel;
  auto layout = ptx::param_layout(p.img.module.functions[*idx]);
  EXPECT_EQ(layout.size(), l.args.size()) << l.kernel;
  for (size_t i = 0; i < l.args.size(); ++i) {
    std::vector<uint8_t> v = l.args[i].bytes;
    if (l.args[i].buffer) {
      uint64_t addr = p.img.alloc(uint32_t(v.size()));
      std::memcpy(&p.img.mem.bytes[addr - p.img.mem.base], v.data(), v.size());
      p.buffers.push_back({addr, v.size()});
      v.resize(8);
      std::memcpy(v.data(), &addr, 8);
    }
    p.params.resize(std::max<size_t>(p.params.size(), layout[i].offset + layout[i].size));
    std::memcpy(&p.params[layout[i].offset], v.data(), std::min<size_t>(v.size(), layout[i].size));
  }
  return p;
}
void collect(const Prepared& p, Outcome& o) {
  for (auto [addr, n] : p.buffers)
    o.buffers.emplace_back(p.img.mem.bytes.begin() + (addr - p.img.mem.base),
                           p.img.mem.bytes.begin() + (addr - p.img.mem.base) + n);
}

// A machine to lower for: the default machine with `lanes` lanes, or (lanes
// 0) the model's machine with the model lowering.
// `native`: with the native float operations (docs/isa.md 3.4, 3.5).
struct Machine {
  uint32_t lanes;
  bool native = false;
  Params params() const {
    Params p = lanes ? default_params() : model_params();
    if (lanes) p.lanes = lanes;
    p.native_float = native;
    return p;
  }
  std::string name() const {
    return lanes ? std::to_string(lanes) + " lanes" + (native ? " with native floats" : "") : "the model's machine";
  }
};
const std::vector<Machine> kMachines = {{4}, {8}, {32}, {0}};

Outcome run_machine(const Launch& l, const Machine& m) {
  Prepared p = prepare(l);
  Params params = m.params();
  // The model's parameter memory is word-granular (the interpreter backend pads the same way).
  p.params.resize((p.params.size() + 3) / 4 * 4);
  Outcome o;
  Program prog =
      lower(p.img.module, l.kernel, {l.grid, l.block, 0, p.img.symbols}, params,
            {.for_model = m.lanes == 0, .native_float = m.native});
  Interpreter in(prog, params, prog.ctas, prog.threads, p.params, p.img.mem);
  in.run(50'000'000);
  o.error = in.fault().error;
  o.message = in.fault().message;
  o.printf_output = format_prints(in.print_buffer(), p.img.mem);
  o.steps = in.stats().steps;
  collect(p, o);
  return o;
}

Outcome run_reference(const Launch& l) {
  Prepared p = prepare(l);
  launch::LaunchResult r = ptx::run(p.img.module, l.kernel, l.grid, l.block, 0, p.params, p.img.symbols, p.img.mem);
  Outcome o;
  o.error = r.error;
  o.message = r.message;
  o.printf_output = r.printf_output;
  collect(p, o);
  return o;
}

void cross_check(const Launch& l, const std::vector<Machine>& machines = kMachines) {
  Outcome ref = run_reference(l);
  ASSERT_EQ(ref.error, 0) << l.kernel << ": reference failed: " << ref.message;
  for (const Machine& m : machines) {
    SCOPED_TRACE(l.kernel + " on " + m.name());
    Outcome got = run_machine(l, m);
    ASSERT_EQ(got.error, 0) << got.message;
    EXPECT_EQ(got.printf_output, ref.printf_output);
    ASSERT_EQ(got.buffers.size(), ref.buffers.size());
    for (size_t b = 0; b < got.buffers.size(); ++b)
      for (size_t i = 0; i < got.buffers[b].size(); i += 4) {
        uint32_t g = 0, r = 0;
        std::memcpy(&g, &got.buffers[b][i], std::min<size_t>(4, got.buffers[b].size() - i));
        std::memcpy(&r, &ref.buffers[b][i], std::min<size_t>(4, ref.buffers[b].size() - i));
        ASSERT_EQ(g, r) << "buffer " << b << " word " << i / 4;
      }
  }
}

// A kernel beyond the model's machine: the model lowering refuses it with
// `error` and a message containing `words`.
void expect_beyond_model(const Launch& l, int error, const std::string& words) {
  Prepared p = prepare(l);
  try {
    lower(p.img.module, l.kernel, {l.grid, l.block, 0, p.img.symbols}, model_params(), {.for_model = true});
    ADD_FAILURE() << l.kernel << ": the model lowering accepted it";
  } catch (const LowerError& e) {
    EXPECT_EQ(e.error(), error);
    EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
  }
}

std::vector<int> ramp(int n, int mul, int add) {
  std::vector<int> v(n);
  for (int i = 0; i < n; ++i) v[i] = (i * mul + add) % 97 - (i % 5 == 0 ? 40 : 0);
  return v;
}

TEST(MachineLowering, Arith32EveryOpOnEdgePairs) {
  for (int op = 0; op < 24; ++op) {
    SCOPED_TRACE("op " + std::to_string(op));
    cross_check({"_Z7arith32iPi", {2, 1, 1}, {128, 1, 1}, {scalar<int>(op), zeros(256 * 4)}});
  }
}

// Its 20 cases, seven 64-bit divisions among them, on every machine (the
// model's ROM holds them since the known-bits pass).
TEST(MachineLowering, Arith64EveryOp) {
  for (int op = 0; op < 20; ++op) {
    SCOPED_TRACE("op " + std::to_string(op));
    cross_check({"_Z7arith64iPx", {1, 1, 1}, {256, 1, 1}, {scalar<int>(op), zeros(256 * 8)}});
  }
}

TEST(MachineLowering, SmallTypes) {
  std::vector<int8_t> c;
  std::vector<int16_t> s;
  std::vector<uint8_t> u;
  for (int i = 0; i < 64; ++i) {
    c.push_back(int8_t(i * 37 - 128));
    s.push_back(int16_t(i * 1031 - 30000));
    u.push_back(uint8_t(i * 53));
  }
  cross_check({"_Z11small_typesPKaPKsPKhPi", {1, 1, 1}, {64, 1, 1}, {buffer(c), buffer(s), buffer(u), zeros(64 * 4)}});
}

// Narrow loads and stores at known and unknown byte offsets, and narrow
// comparisons (the known-bits pass makes the offsets of the scans constant).
TEST(MachineLowering, NarrowAccessesAtKnownAndUnknownOffsets) {
  std::vector<int16_t> s;
  std::vector<int8_t> c;
  for (int i = 0; i < 64; ++i) {
    s.push_back(int16_t((i * 7919) % 601 - 300) * (i % 4 == 0 ? 50 : 1));
    c.push_back(int8_t(i * 37 - 128 + (i % 3)));
  }
  s[5] = s[9] = s[40];  // ties
  s[6] = int16_t(0x8000);
  s[7] = 0x7fff;
  c[8] = int8_t(0x80);
  c[10] = 0x7f;
  cross_check({"_Z11narrow_scanPKsPKaPi", {1, 1, 1}, {64, 1, 1}, {buffer(s), buffer(c), zeros(64 * 7 * 4)}});
}

TEST(MachineLowering, DivergentBranchesLoopsAndCalls) {
  cross_check({"_Z10divergencePKiPi", {2, 1, 1}, {64, 1, 1}, {buffer(ramp(128, 13, 5)), zeros(128 * 4)}});
}

TEST(MachineLowering, SharedMemoryAndBarriers) {
  cross_check({"_Z13shared_reducePKiPi", {3, 1, 1}, {128, 1, 1}, {buffer(ramp(384, 7, 3)), zeros(384 * 4)}});
}

TEST(MachineLowering, Atomics) {
  std::vector<int> out(13, 0);
  out[3] = -1;
  out[7] = 2;
  out[8] = -1;
  cross_check({"_Z7atomicsPKiPi", {2, 1, 1}, {96, 1, 1}, {buffer(ramp(192, 11, 1)), buffer(out)}});
}

TEST(MachineLowering, Atomics64) {
  std::vector<long long> in;
  for (int i = 0; i < 64; ++i) in.push_back((long long)(i * 2654435761u) * (i % 3 ? 1 : -1) + ((long long)i << 35));
  std::vector<unsigned long long> out(8 + 64 + 1, 0);
  out[0] = 0xFFFFFFFFull;
  out[1] = out[3] = 0x7FFFFFFFFFFFFFFFull;
  out[4] = ~0ull;
  out[7] = 5;
  cross_check({"_Z9atomics64PKxPy", {1, 1, 1}, {64, 1, 1}, {buffer(in), buffer(out)}});
}

// Float atomics: every machine and the PTX-level interpreter agree bit for
// bit, and the reference's results equal sums computed here in thread order
// with the host's arithmetic (f32 flushing subnormal inputs and results).
TEST(MachineLowering, FloatAtomics) {
  const int grid = 2, block = 64, n = grid * block;
  std::vector<float> f(n);
  std::vector<double> d(n);
  std::vector<uint32_t> h(n);
  auto half_bits = [](float x) {
    _Float16 v = (_Float16)x;
    uint16_t b;
    std::memcpy(&b, &v, 2);
    return uint32_t(b);
  };
  for (int g = 0; g < n; ++g) {
    f[g] = float((g * 7919) % 1000 - 500) * std::ldexp(1.0f, g % 23 - 11) / 3.0f;
    d[g] = double((g * 104729) % 10007 - 5000) * std::ldexp(1.0, g % 61 - 30) / 7.0;
    h[g] = half_bits(float((g * 31) % 200 - 100) / 16.0f) | half_bits(float((g * 17) % 90 - 45) / 3.0f) << 16;
  }
  f[5] = 1e-40f;     // subnormal: flushed by atom.add.f32
  f[70] = -3e-39f;
  f[71] = 1.5e-38f;
  f[64] = -3e-39f;   // first into CTA 1's shared cell: 0 + (-0) leaves +0, seen by thread 65's old value
  Launch l{"_Z13float_atomicsPKfPKdPKjPfPdPjS5_S6_S7_", {grid, 1, 1}, {block, 1, 1},
           {buffer(f), buffer(d), buffer(h), zeros(8 * 4), zeros(4 * 8), zeros(2 * 4), zeros(2 * n * 4),
            zeros(2 * n * 8), zeros(n * 4)}};
  // Beyond the model's ROM (refused by name: its part below).  On 32 lanes
  // with native floats the f32 and f64 adds are fadd.rn.ftz and dadd.rn.
  cross_check(l, {{4}, {8}, {32}, {32, true}});
  expect_beyond_model(l, 801, "blocks; the machine's ROM holds 1024");
  // The model's kernel adds in thread order into one cell, starting from
  // +0: subnormal operands and partial sums first, where the flushing shows.
  std::vector<float> fm = f;
  fm[0] = 1e-40f, fm[1] = -3e-39f, fm[2] = 1.5e-38f, fm[3] = -1.4e-38f, fm[4] = 2e-39f;
  cross_check({"_Z19float_atomics_modelPKfPKdPfPdS3_", {grid, 1, 1}, {block, 1, 1},
               {buffer(fm), buffer(d), zeros(4), zeros(8), zeros(n * 4)}},
              {{0}});

  auto ftz = [](float x) { return std::fpclassify(x) == FP_SUBNORMAL ? std::copysign(0.0f, x) : x; };
  auto fadd = [&](float a, float b) { return ftz(ftz(a) + ftz(b)); };
  auto hadd = [](uint32_t a, uint32_t b) {
    _Float16 x, y;
    uint16_t a16 = uint16_t(a), b16 = uint16_t(b);
    std::memcpy(&x, &a16, 2);
    std::memcpy(&y, &b16, 2);
    _Float16 r = (_Float16)((double)x + (double)y);  // exact in double, then one rounding
    uint16_t rb;
    std::memcpy(&rb, &r, 2);
    return uint32_t(rb);
  };
  std::vector<float> out(8, 0.0f), fold(2 * n);
  std::vector<double> dout(4, 0.0), dold(2 * n);
  std::vector<uint32_t> hout(2, 0), hold(n);
  for (int g = 0; g < n; ++g) {
    int t = g % block, b = g / block;
    fold[g] = out[0];
    out[0] = fadd(out[0], f[g]);
    out[1 + (t & 1)] = fadd(out[1 + (t & 1)], f[g]);
    dold[g] = dout[0];
    dout[0] += d[g];
    dout[1] += d[g];
    fold[n + g] = out[4 + 2 * b];
    out[4 + 2 * b] = fadd(out[4 + 2 * b], f[g]);
    dold[n + g] = dout[2 + b];
    dout[2 + b] += d[g];
    float& c = (t & 2) ? out[5 + 2 * b] : out[3];
    c = fadd(c, f[g]);
    hold[g] = hout[0];
    hout[0] = hadd(hout[0], h[g] & 0xFFFF);
    hout[1] = hadd(hout[1] & 0xFFFF, h[g] & 0xFFFF) | hadd(hout[1] >> 16, h[g] >> 16) << 16;
  }
  Outcome ref = run_reference(l);
  ASSERT_EQ(ref.error, 0) << ref.message;
  auto expect_bytes = [&](size_t b, const void* want, size_t bytes, const char* what) {
    ASSERT_EQ(ref.buffers[b].size(), bytes) << what;
    for (size_t i = 0; i < bytes; i += 4)
      EXPECT_EQ(std::memcmp(&ref.buffers[b][i], static_cast<const uint8_t*>(want) + i, 4), 0) << what << " word " << i / 4;
  };
  expect_bytes(3, out.data(), out.size() * 4, "f32 sums");
  expect_bytes(4, dout.data(), dout.size() * 8, "f64 sums");
  expect_bytes(5, hout.data(), hout.size() * 4, "f16 sums");
  expect_bytes(6, fold.data(), fold.size() * 4, "f32 old values");
  expect_bytes(7, dold.data(), dold.size() * 8, "f64 old values");
  expect_bytes(8, hold.data(), hold.size() * 4, "f16 old values");
}

TEST(MachineLowering, MatchAny) {
  cross_check({"_Z9match_anyPKiPj", {1, 1, 1}, {64, 1, 1}, {buffer(ramp(64, 7, 1)), zeros(64 * 4)}});
}

TEST(MachineLowering, WarpShufflesVotesAndBallots) {
  cross_check({"_Z8warp_opsPKiPi", {1, 1, 1}, {64, 1, 1}, {buffer(ramp(64, 17, 2)), zeros(64 * 8 * 4)}});
}

// The model's machine splits a register file of 8192 among a CTA's threads
// (Params::regs_for: 16 a thread at 512 threads, 8 at 1024): kernels
// lowered for such CTAs name no register beyond their share, spill the rest
// to local memory and compute what the reference computes.
TEST(MachineLowering, LargeCtasOnTheModelsMachineShareItsRegisterFile) {
  std::mt19937_64 rng(4242);
  std::vector<uint64_t> a(512);
  for (auto& x : a) x = rng() >> (rng() % 64);
  std::vector<uint32_t> m = {1, 0x80000000u, 0xffffffffu, 1000000007u, 3, 5, 7, 11};
  // (The lowering tests' global memory is the default machine's 16 KiB.)
  const std::vector<Launch> launches = {
      {"_Z7arith32iPi", {1, 1, 1}, {512, 1, 1}, {scalar<int>(17), zeros(1024 * 4)}},
      {"_Z10divergencePKiPi", {1, 1, 1}, {512, 1, 1}, {buffer(ramp(512, 5, 1)), zeros(512 * 4)}},
      {"_Z10divergencePKiPi", {1, 1, 1}, {1024, 1, 1}, {buffer(ramp(1024, 13, 5)), zeros(1024 * 4)}},
      {"_Z9match_anyPKiPj", {1, 1, 1}, {1000, 1, 1}, {buffer(ramp(1000, 7, 1)), zeros(1000 * 4)}},
      {"_Z10divergencePKiPi", {1, 1, 1}, {700, 1, 1}, {buffer(ramp(700, 11, 3)), zeros(700 * 4)}},
  };
  std::map<uint32_t, uint32_t> divergence_local;  // threads -> local bytes a thread
  for (const Launch& l : launches) {
    SCOPED_TRACE(l.kernel + " at " + std::to_string(l.block.x) + " threads");
    const uint32_t regs = model_params().regs_for(l.block.x);
    ASSERT_EQ(regs, l.block.x > 512 ? 8u : 16u);
    Prepared p = prepare(l);
    const Program prog =
        lower(p.img.module, l.kernel, {l.grid, l.block, 0, p.img.symbols}, model_params(), {.for_model = true});
    uint32_t most = 0;
    for (const Block& b : prog.blocks) {
      for (const Instr& in : b.instrs) {
        for (int k = 0; k < kMaxArity; ++k)
          if (!in.src(k).imm) most = std::max(most, in.src(k).v);
        if (in.writes_reg()) most = std::max(most, in.dst);
      }
      if (b.term.kind == Term::BR) most = std::max(most, b.term.cond);
    }
    EXPECT_LT(most, regs);
    if (l.kernel == "_Z10divergencePKiPi") divergence_local[l.block.x] = prog.local_bytes;
    cross_check(l, {{0}});
  }
  // With 8 registers (5 besides the reload ones) its values spill.
  EXPECT_GT(divergence_local[1024], divergence_local[512]);
}

TEST(MachineLowering, WarpOperationsInDivergentCode) {
  cross_check({"_Z18divergent_warp_opsPKiPj", {1, 1, 1}, {64, 1, 1}, {buffer(ramp(64, 13, 3)), zeros(2 * 8 * 4)}});
}

TEST(MachineLowering, GenericPointersIntoEverySpace) {
  Launch l{"_Z16generic_pointersPKiPi", {1, 1, 1}, {64, 1, 1}, {buffer(ramp(64, 9, 4)), zeros(192 * 4)}};
  cross_check(l);
  // It needs 76 B of local memory per thread: the model's machine has 512 B
  // at 64 threads, 128 B at 256 and 64 B at 512: too many resources for a
  // 512-thread block, naming the largest block whose share holds it.
  Launch wide = l;
  wide.block = {512, 1, 1};
  expect_beyond_model(wide, 701,
                      "needs 76 bytes of local memory per thread (variables and spilled registers); the machine has 64 "
                      "at 512 threads per block (local memory and registers are split among a block's threads: 128 "
                      "bytes and 32 registers each at up to 256 threads per block)");
}

TEST(MachineLowering, BlockVotes) {
  cross_check({"_Z11block_votesPKiPi", {1, 1, 1}, {96, 1, 1}, {buffer(ramp(96, 29, 7)), zeros(96 * 4)}});
}

TEST(MachineLowering, Grids2DAnd3D) {
  cross_check({"_Z6grid3dPii", {2, 3, 2}, {4, 3, 2}, {zeros(8 * 9 * 4 * 4), scalar<int>(1000000)}});
  cross_check({"_Z6grid3dPii", {3, 2, 1}, {5, 7, 1}, {zeros(15 * 14 * 4), scalar<int>(3)}});
}

// lower() names what of the grid a program depends on (GridUse), and a
// program is the same for every grid same_lowering() accepts: every kernel
// of the test module, on every machine, lowered for one-dimensional grids of
// 3 and 1000 blocks and for 2-D grids, compared instruction by instruction.
TEST(MachineLowering, GridUseNamesWhatTheProgramReadsOfTheGrid) {
  const ModuleImage img = load_module(kernels_ptx(), default_params());
  const launch::Dim3 small{3, 1, 1}, large{1000, 1, 1}, flat2d{2, 3, 1}, other2d{3, 2, 1};
  int seen[3] = {0, 0, 0};
  for (const ptx::Function& f : img.module.functions) {
    if (!f.is_entry || !f.has_body) continue;
    for (const Machine& m : kMachines) {
      SCOPED_TRACE(f.name + " on " + m.name());
      const Params params = m.params();
      auto lowered = [&](launch::Dim3 grid, LowerInfo& info) -> std::optional<std::string> {
        try {
          return to_string(lower(img.module, f.name, {grid, {32, 1, 1}, 0, img.symbols}, params,
                                 {.for_model = m.lanes == 0}, &info));
        } catch (const LowerError&) {
          return std::nullopt;  // a kernel beyond this machine
        }
      };
      LowerInfo a, b, c, d;
      const auto pa = lowered(small, a), pb = lowered(large, b), pc = lowered(flat2d, c), pd = lowered(other2d, d);
      if (!pa || !pb || !pc || !pd) continue;
      seen[int(a.grid)]++;
      EXPECT_EQ(a.grid, b.grid);
      EXPECT_EQ(same_lowering(a.grid, small, large), a.grid != GridUse::Exact);
      if (a.grid != GridUse::Exact) EXPECT_EQ(*pa, *pb);
      // A 2-D grid: %ctaid.x is no longer the CTA index.
      EXPECT_EQ(c.grid, a.grid == GridUse::None ? GridUse::None : GridUse::Exact);
      EXPECT_EQ(same_lowering(c.grid, flat2d, small), a.grid == GridUse::None);
      if (a.grid == GridUse::None) EXPECT_EQ(*pc, *pa);
      if (same_lowering(c.grid, flat2d, other2d)) EXPECT_EQ(*pc, *pd);
    }
  }
  // The module has kernels of each kind: no grid (arith32), %ctaid.x only
  // (shared_reduce), %nctaid (grid3d).
  EXPECT_GT(seen[int(GridUse::None)], 0);
  EXPECT_GT(seen[int(GridUse::Flat)], 0);
  EXPECT_GT(seen[int(GridUse::Exact)], 0);
  EXPECT_TRUE(same_lowering(GridUse::Flat, {5, 1, 1}, {9, 1, 1}));
  EXPECT_FALSE(same_lowering(GridUse::Flat, {5, 1, 1}, {5, 2, 1}));
  EXPECT_FALSE(same_lowering(GridUse::Exact, {5, 1, 1}, {9, 1, 1}));
  EXPECT_TRUE(same_lowering(GridUse::Exact, {5, 2, 3}, {5, 2, 3}));
  EXPECT_TRUE(same_lowering(GridUse::None, {5, 2, 3}, {9, 1, 1}));
}

TEST(MachineLowering, StructAndManyParametersWithDeviceFunctions) {
  struct Pair {
    char tag;
    long long big;
    short s[3];
  } p{7, 0x123456789LL, {1, -300, 5}};
  Arg pa;
  pa.bytes.resize(sizeof(Pair));
  std::memcpy(pa.bytes.data(), &p, sizeof(Pair));
  cross_check({"_Z6params4PairicxsjPx",
               {1, 1, 1},
               {40, 1, 1},
               {pa, scalar<int>(-9), scalar<char>(5), scalar<long long>(-77777777777LL), scalar<short>(-12),
                scalar<unsigned>(4000000000u), zeros(40 * 8)}});
}

TEST(MachineLowering, RegisterPressureSpillsAndLocalArrays) {
  Launch l{"_Z8pressurePKiPi", {1, 1, 1}, {48, 1, 1}, {buffer(ramp(48, 5, 9)), zeros(48 * 4)}};
  // Its 128 B of local memory fit the model's machine at 48 threads, and so
  // do its blocks, one instruction each (its high multiplies are the
  // circuit's mulhu).
  cross_check(l);
}

// The CUDA-sized device's 255 registers (machine::cuda_params()) hold what
// the default machine's 32 spill to local memory, and the program computes
// the same: `pressure` on the interpreter backend's device against the
// PTX-level reference.
TEST(MachineLowering, CudaSizedDeviceSpillsLess) {
  Launch l{"_Z8pressurePKiPi", {1, 1, 1}, {48, 1, 1}, {buffer(ramp(48, 5, 9)), zeros(48 * 4)}};
  Params narrow = cuda_params(64u << 20);
  narrow.regs = default_params().regs;
  const Params wide = cuda_params(64u << 20);
  ASSERT_EQ(wide.regs, 255u);
  Prepared p = prepare(l);
  const Program spilled = lower(p.img.module, l.kernel, {l.grid, l.block, 0, p.img.symbols}, narrow,
                                {.native_float = true});
  const Program prog = lower(p.img.module, l.kernel, {l.grid, l.block, 0, p.img.symbols}, wide, {.native_float = true});
  EXPECT_LT(prog.local_bytes, spilled.local_bytes);
  EXPECT_LT(prog.instr_count(), spilled.instr_count());
  Interpreter in(prog, wide, prog.ctas, prog.threads, p.params, p.img.mem);
  in.run(50'000'000);
  ASSERT_EQ(in.fault().error, 0) << in.fault().message;
  Outcome got, ref = run_reference(l);
  collect(p, got);
  ASSERT_EQ(ref.error, 0) << ref.message;
  EXPECT_EQ(got.buffers, ref.buffers);
}

TEST(MachineLowering, DevicePrintf) {
  Outcome ref = run_reference({"_Z5printPKi", {1, 1, 1}, {12, 1, 1}, {buffer(ramp(12, 31, 4))}});
  EXPECT_NE(ref.printf_output.find("thread 3 value"), std::string::npos) << ref.printf_output;
  cross_check({"_Z5printPKi", {1, 1, 1}, {12, 1, 1}, {buffer(ramp(12, 31, 4))}});
}

TEST(MachineLowering, FailedAssertTrapsWithCudasMessage) {
  std::vector<int> in(32, 7);
  in[16 + 5] = 99;  // block 1, thread 5
  for (const Machine& m : kMachines) {
    SCOPED_TRACE(m.name());
    Outcome o = run_machine({"_Z12check_assertPKi", {2, 1, 1}, {16, 1, 1}, {buffer(in)}}, m);
    EXPECT_EQ(o.error, 710) << o.message;
    EXPECT_NE(o.printf_output.find("kernels.cu:"), std::string::npos) << o.printf_output;
    EXPECT_NE(o.printf_output.find("block: [1,0,0], thread: [5,0,0] Assertion `in[blockIdx.x * blockDim.x + "
                                   "threadIdx.x] < 50` failed."),
              std::string::npos)
        << o.printf_output;
  }
}

TEST(MachineLowering, LaunchesBeyondTheMachineFailWithNamedLimits) {
  ModuleImage img = load_module(kernels_ptx(), default_params());
  auto expect_error = [&](launch::Dim3 grid, launch::Dim3 block, int error, const std::string& words) {
    try {
      lower(img.module, "_Z13shared_reducePKiPi", {grid, block, 0, img.symbols}, default_params());
      ADD_FAILURE() << "launch accepted";
    } catch (const LowerError& e) {
      EXPECT_EQ(e.error(), error);
      EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
    }
  };
  expect_error({1, 1, 1}, {512, 1, 1}, 1, "threads per block");
  expect_error({65, 1, 1}, {32, 1, 1}, 1, "blocks per grid");
  try {
    lower(img.module, "no_such_kernel", {{1, 1, 1}, {1, 1, 1}, 0, img.symbols}, default_params());
    ADD_FAILURE();
  } catch (const LowerError& e) {
    EXPECT_NE(std::string(e.what()).find("no_such_kernel"), std::string::npos);
  }
}

TEST(MachineLowering, UnsupportedInstructionsAreNamedWithTheirLine) {
  const std::string ptx = R"(.version 8.5
.target sm_75
.address_size 64
.visible .entry k(.param .u64 p)
{
  .reg .f32 %f<3>; .reg .f64 %fd<3>;
  .reg .b64 %rd<3>;
  ld.param.u64 %rd1, [p];
  cvta.to.global.u64 %rd2, %rd1;
  ld.global.f32 %f1, [%rd2];
  rsqrt.approx.f64 %fd1, %fd1;
  st.global.f32 [%rd2], %f2;
  ret;
}
)";
  ModuleImage img = load_module(ptx, default_params());
  try {
    lower(img.module, "k", {{1, 1, 1}, {1, 1, 1}, 0, img.symbols}, default_params());
    ADD_FAILURE() << "a floating-point operation the machine does not have accepted";
  } catch (const LowerError& e) {
    EXPECT_EQ(e.error(), 801);
    std::string m = e.what();
    EXPECT_NE(m.find("line 11"), std::string::npos) << m;
    EXPECT_NE(m.find("rsqrt.approx.f64"), std::string::npos) << m;
  }
}

// The division loops iterate only the quotient's bits: operands of every bit
// length (and either sign) exercise every start of the loop, n < d (no
// iteration), zero divisors, and 32-bit quotients of either length.
TEST(MachineLowering, DivisionOfOperandsOfEveryBitLength) {
  for (uint64_t seed : {2026u, 7u, 1234567u, 99u}) {
  SCOPED_TRACE(seed);
  std::mt19937_64 rng(seed);
  const int n = 128;
  std::vector<uint64_t> a(n), b(n);
  for (int i = 0; i < n; ++i) {
    auto pick = [&] {
      const int bits = int(rng() % 65);
      uint64_t v = bits == 0 ? 0 : rng() >> (64 - bits);
      if (rng() % 4 == 0) v = ~v;  // negative as signed
      if (rng() % 3 == 0) v = uint32_t(v);  // a high word of zero
      return v;
    };
    a[i] = pick();
    b[i] = pick();
  }
  b[0] = 0;
  b[1] = 1;
  a[2] = ~uint64_t(0), b[2] = 1;
  a[3] = uint64_t(1) << 63, b[3] = ~uint64_t(0);
  a[4] = 0x80000000u, b[4] = 0xffffffffu;
  // The 64-bit path for divisors 0 < d < 2^32: at its edges, with a high
  // word above, below and equal to d, and a zero high remainder.
  a[5] = ~uint64_t(0), b[5] = 0x7fffffffu;
  a[6] = 0x123456789abcdef0u, b[6] = 1000000007u;
  a[7] = 0xffffffffu, b[7] = 3;
  a[8] = 0x500000000u, b[8] = 5;
  a[9] = 0x7fffffff00000001u, b[9] = 0x80000000u;
  a[10] = 0x7ffffffe00000000u, b[10] = 0x7fffffffu;
  a[11] = 0x00000003ffffffffu, b[11] = 1;
  // 32-bit quotients longer than the loop accumulates (computed from the
  // remainder through the inverse of the divisor's odd part), at the edges:
  // even divisors, a power of two, the longest quotient, and just past and
  // at the loop's length.
  a[12] = 0xffffffffu, b[12] = 6;
  a[13] = 0xfffffff0u, b[13] = 0x10;
  a[14] = 0xffffffffu, b[14] = 1;
  a[15] = 0x7ff, b[15] = 1;
  a[16] = 0x3ff, b[16] = 1;
  a[17] = 0x80000000u, b[17] = 0x0000c000u;
  a[18] = 0xfffffffbu, b[18] = 0xfffffffau;
  // Divisors that are normalised already (no shift) or powers of two.
  a[19] = ~uint64_t(0), b[19] = 0xffffffffu;
  a[20] = 0xfffffffeffffffffu, b[20] = 0xffffffffu;
  a[21] = ~uint64_t(0), b[21] = 0x80000000u;
  a[22] = 0x8000000000000000u, b[22] = 0x80000001u;
  a[23] = 0xfedcba9876543210u, b[23] = 2;
  // Dividends whose reciprocal step needs its second, rare correction (the
  // estimate one too small after the first): about 0.2% of random ones.
  a[24] = (uint64_t{2134000495} << 32) | 3949693568u, b[24] = 2261772783u;
  a[25] = (uint64_t{2277919202} << 32) | 4113498814u, b[25] = 2277919205u;
  a[26] = (uint64_t{865522036} << 32) | 4138782538u, b[26] = 2200158702u;
  cross_check({"_Z12divide_pairsPKyS0_Py", {2, 1, 1}, {n / 2, 1, 1}, {buffer(a), buffer(b), zeros(n * 64)}});
  }
}

// Products reduced modulo divisors below 2^32 in a loop, the divisor kept
// for three steps and then changed: the 64-by-32 division's reciprocal is
// reused and recomputed.  Divisors at the edges (1, 2^31, 2^32 - 1) and random.
TEST(MachineLowering, ModularChainThroughTheNarrowDivision) {
  std::mt19937_64 rng(31337);
  const int n = 64;
  std::vector<uint64_t> a(n);
  for (auto& x : a) x = rng() >> (rng() % 64);
  std::vector<uint32_t> m = {1, 0x80000000u, 0xffffffffu, 1000000007u};
  for (int i = 0; i < 4; ++i) m.push_back(uint32_t(rng() >> (32 + rng() % 31)) | 1);
  cross_check({"_Z13modular_chainPKyPKjPy", {2, 1, 1}, {n / 2, 1, 1}, {buffer(a), buffer(m), zeros(n * 16)}});
}

// 64-bit remainders by divisors below 2^32 (rem.u64, rem.s64 alone):
// random pairs, and pairs whose reciprocal step needs its second, rare
// correction (the estimate still one too small after the first; about 0.2%
// of random ones).
TEST(MachineLowering, NarrowRemaindersAtTheCorrections) {
  std::mt19937_64 rng(4242);
  const int n = 128;
  std::vector<uint64_t> a(n), b(n);
  for (int i = 0; i < n; ++i) {
    a[i] = rng() >> (rng() % 64);
    b[i] = (rng() >> (32 + rng() % 32)) | 1;
  }
  const uint64_t rare[][2] = {{(uint64_t{2134000495} << 32) | 3949693568u, 2261772783u},
                              {(uint64_t{2277919202} << 32) | 4113498814u, 2277919205u},
                              {(uint64_t{865522036} << 32) | 4138782538u, 2200158702u},
                              {(uint64_t{1985143339} << 32) | 3647756581u, 2299472648u}};
  for (int i = 0; i < 4; ++i) {
    a[i] = rare[i][0], b[i] = rare[i][1];
    a[4 + i] = rare[i][0] >> 1, b[4 + i] = rare[i][1] >> 1;  // the same, shifted by one when normalised
  }
  cross_check({"_Z15remainder_pairsPKyS0_Py", {2, 1, 1}, {n / 2, 1, 1}, {buffer(a), buffer(b), zeros(n * 16)}});
}

// Kernel `k` of `ptx`, lowered for one thread and run on the interpreter.
// Its parameters are an output buffer of `out_bytes`, then `rest`.
struct OneThread {
  Program prog;
  std::vector<uint8_t> out;
  uint64_t steps = 0;
  int error = 0;
};
OneThread run_one_thread(const std::string& ptx, const Params& machine, const LowerOptions& opts,
                         const std::vector<uint8_t>& rest, size_t out_bytes) {
  ModuleImage img = load_module(ptx, machine);
  const uint64_t out = img.alloc(out_bytes);
  std::vector<uint8_t> params(8);
  std::memcpy(params.data(), &out, 8);
  params.insert(params.end(), rest.begin(), rest.end());
  OneThread r;
  r.prog = lower(img.module, "k", {{1, 1, 1}, {1, 1, 1}, 0, img.symbols}, machine, opts);
  Interpreter in(r.prog, machine, 1, 1, params, img.mem);
  in.run();
  r.error = in.fault().error;
  r.steps = in.stats().steps;
  const uint8_t* at = &img.mem.bytes[out - img.mem.base];
  r.out.assign(at, at + out_bytes);
  return r;
}

// An unsigned division writes its result straight into its destination
// register unless an operand reads that register (x = x % y, y = x / y):
// every form gives the quotient and remainder, on both machines, for
// divisors on the 64-bit loop, the reciprocal path and the 32-bit path.
TEST(MachineLowering, DivisionIntoARegisterItReads) {
  const std::string ptx = R"(.version 8.5
.target sm_75
.address_size 64
.visible .entry k(.param .u64 p, .param .u64 x, .param .u64 y)
{
  .reg .b32 %r<8>;
  .reg .b64 %rd<12>;
  ld.param.u64 %rd1, [p];
  cvta.to.global.u64 %rd2, %rd1;
  ld.param.u64 %rd3, [x];
  ld.param.u64 %rd4, [y];
  mov.u64 %rd5, %rd3;
  rem.u64 %rd5, %rd5, %rd4;
  mov.u64 %rd6, %rd4;
  div.u64 %rd6, %rd3, %rd6;
  div.u64 %rd7, %rd3, %rd4;
  st.global.u64 [%rd2], %rd5;
  st.global.u64 [%rd2+8], %rd6;
  st.global.u64 [%rd2+16], %rd7;
  cvt.u32.u64 %r1, %rd3;
  cvt.u32.u64 %r2, %rd4;
  mov.u32 %r3, %r1;
  rem.u32 %r3, %r3, %r2;
  mov.u32 %r4, %r2;
  div.u32 %r4, %r1, %r4;
  rem.u32 %r5, %r1, %r2;
  st.global.u32 [%rd2+24], %r3;
  st.global.u32 [%rd2+28], %r4;
  st.global.u32 [%rd2+32], %r5;
  ret;
}
)";
  const uint64_t pairs[][2] = {{0xfedcba9876543210u, 1000000007u}, {0x123456789abcdefu, 0x100000001u},
                               {0xffffffffu, 7u}, {12345u, 0}, {0x8000000000000000u, 0xffffffffu}};
  for (const Params& machine : {default_params(), model_params()})
    for (const auto& [x, y] : pairs) {
      std::vector<uint8_t> rest(16);
      std::memcpy(&rest[0], &x, 8);
      std::memcpy(&rest[8], &y, 8);
      const OneThread r = run_one_thread(ptx, machine, {.for_model = machine.lanes == 1}, rest, 36);
      ASSERT_EQ(r.error, 0);
      uint64_t d64[3];
      uint32_t d32[3];
      std::memcpy(d64, r.out.data(), 24);
      std::memcpy(d32, r.out.data() + 24, 12);
      const uint32_t x32 = uint32_t(x), y32 = uint32_t(y);
      // Division by zero: quotient all ones, remainder the dividend (docs/isa.md).
      EXPECT_EQ(d64[0], y ? x % y : x) << x << " " << y;
      EXPECT_EQ(d64[1], y ? x / y : ~uint64_t(0)) << x << " " << y;
      EXPECT_EQ(d64[2], y ? x / y : ~uint64_t(0)) << x << " " << y;
      EXPECT_EQ(d32[0], y32 ? x32 % y32 : x32) << x << " " << y;
      EXPECT_EQ(d32[1], y32 ? x32 / y32 : ~uint32_t(0)) << x << " " << y;
      EXPECT_EQ(d32[2], y32 ? x32 % y32 : x32) << x << " " << y;
    }
}

// A branch on the negation of a 0/1 value (x & 1, x >> 31, a comparison)
// branches on the value with its targets swapped: no xor is left, and both
// directions still go where they should.
TEST(MachineLowering, BranchOnANegatedBitBranchesOnTheBit) {
  const std::string ptx = R"(.version 8.5
.target sm_75
.address_size 64
.visible .entry k(.param .u64 p, .param .u32 x)
{
  .reg .pred %p<3>;
  .reg .b32 %r<8>;
  .reg .b64 %rd<3>;
  ld.param.u64 %rd1, [p];
  cvta.to.global.u64 %rd2, %rd1;
  ld.param.u32 %r1, [x];
  mov.u32 %r5, 10;
  and.b32 %r2, %r1, 1;
  xor.b32 %r3, %r2, 1;
  setp.ne.u32 %p1, %r3, 0;
  @%p1 bra $even;
  add.u32 %r5, %r5, 1;
$even:
  shr.u32 %r4, %r1, 31;
  xor.b32 %r6, %r4, 1;
  setp.eq.u32 %p2, %r6, 0;
  @%p2 bra $negative;
  add.u32 %r5, %r5, 100;
$negative:
  st.global.u32 [%rd2], %r5;
  ret;
}
)";
  for (const Params& machine : {default_params(), model_params()})
    for (uint32_t x : {0u, 1u, 2u, 7u, 0x80000000u, 0x80000001u, 0xfffffffeu}) {
      std::vector<uint8_t> rest(4);
      std::memcpy(rest.data(), &x, 4);
      const OneThread r = run_one_thread(ptx, machine, {.for_model = machine.lanes == 1}, rest, 4);
      ASSERT_EQ(r.error, 0);
      uint32_t got;
      std::memcpy(&got, r.out.data(), 4);
      EXPECT_EQ(got, 10u + (x & 1) + (x >> 31 ? 0u : 100u)) << x;
      for (const Block& b : r.prog.blocks)
        for (const Instr& i : b.instrs) EXPECT_NE(i.op, Op::XOR) << x;
    }
}

// Division by zero through the lowered routines gives the values docs/isa.md
// specifies (PTX leaves them undefined, so they are checked here directly).
TEST(MachineLowering, DivisionByZeroFollowsTheSpec) {
  const std::string ptx = R"(.version 8.5
.target sm_75
.address_size 64
.visible .entry k(.param .u64 p, .param .u32 n, .param .u64 n64)
{
  .reg .b32 %r<8>;
  .reg .b64 %rd<12>;
  ld.param.u64 %rd1, [p];
  cvta.to.global.u64 %rd2, %rd1;
  ld.param.u32 %r1, [n];
  ld.param.u64 %rd3, [n64];
  mov.u32 %r2, 0;
  div.u32 %r3, %r1, %r2;
  rem.u32 %r4, %r1, %r2;
  div.s32 %r5, %r1, %r2;
  rem.s32 %r6, %r1, %r2;
  st.global.u32 [%rd2], %r3;
  st.global.u32 [%rd2+4], %r4;
  st.global.u32 [%rd2+8], %r5;
  st.global.u32 [%rd2+12], %r6;
  mov.u64 %rd4, 0;
  div.u64 %rd5, %rd3, %rd4;
  rem.u64 %rd6, %rd3, %rd4;
  div.s64 %rd7, %rd3, %rd4;
  rem.s64 %rd8, %rd3, %rd4;
  st.global.u64 [%rd2+16], %rd5;
  st.global.u64 [%rd2+24], %rd6;
  st.global.u64 [%rd2+32], %rd7;
  st.global.u64 [%rd2+40], %rd8;
  ret;
}
)";
  for (int64_t n : {int64_t(0), int64_t(1), int64_t(-1), int64_t(INT32_MIN), int64_t(INT32_MAX),
                    int64_t(0x123456789abLL), INT64_MIN, INT64_MAX}) {
    std::vector<uint8_t> rest(16);
    uint32_t n32 = uint32_t(n);
    std::memcpy(&rest[0], &n32, 4);
    std::memcpy(&rest[8], &n, 8);
    const OneThread r = run_one_thread(ptx, default_params(), {}, rest, 48);
    ASSERT_EQ(r.error, 0);
    uint32_t w[4];
    uint64_t d[4];
    std::memcpy(w, r.out.data(), 16);
    std::memcpy(d, r.out.data() + 16, 32);
    EXPECT_EQ(w[0], 0xFFFFFFFFu) << n;
    EXPECT_EQ(w[1], n32) << n;
    EXPECT_EQ(w[2], 0xFFFFFFFFu) << n;
    EXPECT_EQ(w[3], n32) << n;
    EXPECT_EQ(d[0], ~uint64_t(0)) << n;
    EXPECT_EQ(d[1], uint64_t(n)) << n;
    EXPECT_EQ(d[2], ~uint64_t(0)) << n;
    EXPECT_EQ(d[3], uint64_t(n)) << n;
  }
}

// Loop-invariant code motion: the loop's `xor` of a parameter and its
// product with another leave the loop (the loop runs fewer steps), nested
// loops hoist out of both levels, and the results are the same as without it.
// Capped at one instruction (lower() halves the cap when hoisting makes the
// allocator spill), only the `xor` leaves, and only the inner loop: fewer
// steps than none, more than all.
TEST(MachineLowering, LoopInvariantsLeaveTheLoop) {
  const std::string ptx = R"(.version 8.5
.target sm_75
.address_size 64
.visible .entry k(.param .u64 p, .param .u32 a, .param .u32 n)
{
  .reg .pred %p<3>;
  .reg .b32 %r<12>;
  .reg .b64 %rd<3>;
  ld.param.u64 %rd1, [p];
  cvta.to.global.u64 %rd2, %rd1;
  ld.param.u32 %r1, [a];
  ld.param.u32 %r2, [n];
  mov.u32 %r3, 0;
  mov.u32 %r4, 0;
$outer:
  mov.u32 %r5, 0;
$inner:
  xor.b32 %r6, %r1, 32768;
  mul.lo.s32 %r7, %r6, %r2;
  add.s32 %r8, %r7, %r5;
  add.s32 %r3, %r3, %r8;
  add.s32 %r5, %r5, 1;
  setp.lt.u32 %p1, %r5, %r2;
  @%p1 bra $inner;
  add.s32 %r4, %r4, 1;
  setp.lt.u32 %p2, %r4, 3;
  @%p2 bra $outer;
  st.global.u32 [%rd2], %r3;
  ret;
}
)";
  for (const Params& machine : {default_params(), model_params()}) {
    for (uint32_t n : {1u, 5u, 40u}) {
      const uint32_t a = 0x1234;
      uint32_t want = 0;
      for (int o = 0; o < 3; ++o)
        for (uint32_t i = 0; i < n; ++i) want += (a ^ 32768u) * n + i;
      uint64_t steps[3] = {0, 0, 0};  // no hoisting, all of it, one instruction
      for (int variant : {0, 1, 2}) {
        const bool hoist = variant > 0;
        std::vector<uint8_t> rest(8);
        std::memcpy(&rest[0], &a, 4);
        std::memcpy(&rest[4], &n, 4);
        const OneThread r = run_one_thread(ptx, machine,
                                           {.for_model = machine.lanes == 1,
                                            .hoist_invariants = hoist,
                                            .max_hoisted = variant == 2 ? 1u : UINT32_MAX},
                                           rest, 4);
        ASSERT_EQ(r.error, 0);
        const Program& prog = r.prog;
        uint32_t got;
        std::memcpy(&got, r.out.data(), 4);
        EXPECT_EQ(got, want) << "n " << n << " variant " << variant;
        steps[variant] = r.steps;
        // With hoisting, no xor is left between the loop's first block
        // and the last one that branches back.
        if (variant == 1) {
          size_t first_back = prog.blocks.size(), last_back = 0;
          for (size_t b = 0; b < prog.blocks.size(); ++b)
            for (uint32_t t : {prog.blocks[b].term.t, prog.blocks[b].term.f})
              if (prog.blocks[b].term.kind == Term::BR && t <= b) {
                first_back = std::min<size_t>(first_back, t);
                last_back = std::max(last_back, b);
              }
          ASSERT_LT(first_back, prog.blocks.size());
          for (size_t b = first_back; b <= last_back; ++b)
            for (const Instr& i : prog.blocks[b].instrs) EXPECT_NE(i.op, Op::XOR) << "B" << b;
        }
      }
      if (machine.lanes == 1 && n > 1) {
        EXPECT_LT(steps[1], steps[2]) << "n " << n;
        EXPECT_LT(steps[2], steps[0]) << "n " << n;
      }
    }
  }
}

}  // namespace
}  // namespace qgpu::machine
