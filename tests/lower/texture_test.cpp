// Texture fetches and surface accesses (docs/isa.md section 8.3): the
// lowering's machine code (texture.cpp) run on the machine interpreter, and
// on the model's machine, against the PTX-level interpreter's host
// implementation (texture_ref.cpp), over small textures of every format
// with every address mode, filter mode and coordinate normalisation, at
// coordinates that cover every texel, both borders and every 8-bit
// filtering weight; and both against direct expectations where the result
// is known without either implementation (texel centres, read-mode
// conversions, border colour, out-of-range surface accesses).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "model_host/launch/texture.h"
#include "model_host/machine/image.h"
#include "model_host/machine/interpreter.h"
#include "model_host/lower/lower.h"
#include "model_host/ptx/ptx_interp.h"

namespace qgpu::machine {
namespace {

namespace T = launch::tex;

uint32_t fb(float f) { return T::f32_bits(f); }
float bf(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// One kernel: thread i reads the record at records + 32 i (four coordinate
// words, the descriptor's address), runs LINE and stores the four results
// at out + 16 i.
std::string kernel(const std::string& line) {
  return R"(.version 8.0
.target sm_75
.address_size 64
.visible .entry k(.param .u64 rec, .param .u64 out, .param .u32 n)
{
  .reg .pred %p<2>;
  .reg .b32 %r<16>;
  .reg .f32 %f<12>;
  .reg .b64 %rd<10>;
  mov.u32 %r1, %tid.x;
  mov.u32 %r2, %ctaid.x;
  mov.u32 %r3, %ntid.x;
  mad.lo.s32 %r4, %r2, %r3, %r1;
  ld.param.u32 %r5, [n];
  setp.ge.u32 %p1, %r4, %r5;
  @%p1 bra DONE;
  ld.param.u64 %rd2, [rec];
  ld.param.u64 %rd3, [out];
  mul.wide.u32 %rd4, %r4, 32;
  add.s64 %rd5, %rd2, %rd4;
  ld.global.v4.u32 {%r6, %r7, %r8, %r9}, [%rd5];
  ld.global.u64 %rd1, [%rd5+16];
  mov.b32 %f1, %r6;
  mov.b32 %f2, %r7;
  mov.b32 %f3, %r8;
  mov.b32 %f4, %r9;
  mul.wide.u32 %rd4, %r4, 16;
  add.s64 %rd6, %rd3, %rd4;
)" + line + R"(
DONE:
  ret;
}
)";
}

const char* kTexF = "  TEX.v4.f32.f32 {%f5, %f6, %f7, %f8}, [%rd1, {COORDS}];\n  st.global.v4.f32 [%rd6], {%f5, %f6, %f7, %f8};";
const char* kTexI = "  TEX.v4.s32.s32 {%r10, %r11, %r12, %r13}, [%rd1, {COORDS}];\n  st.global.v4.u32 [%rd6], {%r10, %r11, %r12, %r13};";

std::string tex_line(const std::string& geom, bool ints, const std::string& coords) {
  std::string s = ints ? kTexI : kTexF;
  s.replace(s.find("TEX"), 3, "tex." + geom);
  s.replace(s.find("COORDS"), 6, coords);
  return s;
}

struct Format {
  const char* name;
  uint32_t channels, bytes;
  T::Kind kind;
};
const Format kFormats[] = {
    {"f32x1", 1, 4, T::kBits},   {"f32x4", 4, 4, T::kBits},   {"f32x2", 2, 4, T::kBits},
    {"unorm8x4", 4, 1, T::kUnorm}, {"snorm8x2", 2, 1, T::kSnorm}, {"unorm16x1", 1, 2, T::kUnorm},
    {"snorm16x4", 4, 2, T::kSnorm}, {"halfx2", 2, 2, T::kHalf},
};

struct Bench {
  Params params;
  ModuleImage img;
  std::vector<uint32_t> records;  // 8 words a thread
  uint32_t n = 0;
  uint64_t lane_instructions = 0;  // of the last run on the machine
  Bench(const std::string& text, const Params& p) : params(p), img(load_module(text, p)) {}
  uint64_t put(const std::vector<uint32_t>& words) {
    uint64_t a = img.alloc(uint32_t(words.size() * 4 + 16));
    std::memcpy(&img.mem.bytes[a - img.mem.base], words.data(), words.size() * 4);
    return a;
  }
  void add(const uint32_t c[4], uint64_t desc) {
    for (int k = 0; k < 4; ++k) records.push_back(c[k]);
    records.push_back(uint32_t(desc));
    records.push_back(uint32_t(desc >> 32));
    records.push_back(0);
    records.push_back(0);
    ++n;
  }
  // Runs the kernel on the PTX-level interpreter and on the lowering:
  // returns both result arrays.
  // `native`: the lowering with the machine's native float operations
  // (isa.h, OpKind::Float) for the fetch's f32 arithmetic, on the machine
  // declaring them.
  std::pair<std::vector<uint32_t>, std::vector<uint32_t>> run(bool for_model = false, bool native = false) {
    uint64_t rec = put(records), out = img.alloc(n * 16);
    std::vector<uint8_t> pb(20);
    std::memcpy(pb.data(), &rec, 8);
    std::memcpy(pb.data() + 8, &out, 8);
    std::memcpy(pb.data() + 16, &n, 4);
    const uint32_t block = for_model ? 32 : 128, grid = (n + block - 1) / block;
    auto snapshot = img.mem;
    auto r = ptx::run(img.module, "k", {grid, 1, 1}, {block, 1, 1}, 0, pb, img.symbols, img.mem);
    EXPECT_EQ(r.error, 0) << r.message;
    std::vector<uint32_t> want(n * 4), got(n * 4);
    std::memcpy(want.data(), &img.mem.bytes[out - img.mem.base], n * 16);
    img.mem = snapshot;
    Params machine = params;
    if (native) machine.native_float = true;
    Program prog = lower(img.module, "k", {{grid, 1, 1}, {block, 1, 1}, 0, img.symbols}, machine,
                         {.for_model = for_model, .native_float = native});
    Interpreter in(prog, machine, prog.ctas, prog.threads, pb, img.mem);
    in.run(2'000'000'000);
    EXPECT_EQ(in.fault().error, 0) << in.fault().message;
    lane_instructions = in.stats().lane_instructions;
    std::memcpy(got.data(), &img.mem.bytes[out - img.mem.base], n * 16);
    return {want, got};
  }
};

Params test_params() {
  Params p;
  p.global_bytes = 32 << 20;
  p.rom_blocks = 1 << 16;
  p.max_ctas = 65535;
  return p;
}

// Texel data: random channel values, NaN-free for floats except one texel.
std::vector<uint32_t> texels(const Format& f, uint32_t pitch, uint32_t rows, std::mt19937& rng) {
  std::vector<uint8_t> bytes(pitch * rows);
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = uint8_t(rng());
  if (f.bytes == 4)
    for (size_t i = 0; i + 4 <= bytes.size(); i += 4) {
      float v = float(int(rng() % 2001) - 1000) / 64.0f;
      std::memcpy(&bytes[i], &v, 4);
    }
  if (f.kind == T::kHalf)
    for (size_t i = 0; i + 2 <= bytes.size(); i += 2) {
      uint16_t h = uint16_t(rng() % 0x7BFF) | uint16_t(rng() % 2 << 15);
      std::memcpy(&bytes[i], &h, 2);
    }
  std::vector<uint32_t> w((bytes.size() + 3) / 4);
  std::memcpy(w.data(), bytes.data(), bytes.size());
  return w;
}

// The coordinates per axis: edges, fractions and special values.
std::vector<uint32_t> axis_values(uint32_t n, bool norm, int per_texel) {
  std::vector<uint32_t> v;
  const float scale = norm ? 1.0f / float(n) : 1.0f;
  for (int k = -2 * per_texel; k <= int(n + 2) * per_texel; ++k) v.push_back(fb(float(k) / float(per_texel) * scale));
  for (float s : {-0.0f, INFINITY, -INFINITY, NAN, 1e30f, -1e30f, 0.99999994f, 5e-39f})
    v.push_back(fb(s));
  return v;
}

void expect_same(const std::vector<uint32_t>& want, const std::vector<uint32_t>& got, const std::string& what) {
  ASSERT_EQ(want.size(), got.size());
  size_t bad = 0;
  for (size_t i = 0; i < want.size(); ++i)
    if (want[i] != got[i] && bad++ < 5)
      ADD_FAILURE() << what << ": thread " << i / 4 << " channel " << i % 4 << ": reference " << std::hex << want[i]
                    << ", machine " << got[i];
  EXPECT_EQ(bad, 0u) << what;
}

// Every format, address mode (per axis the same), filter and normalisation.
void sweep(const std::string& geom, int dims, bool sliced, int per_texel, bool for_model = false, int formats = 8,
           bool native = false) {
  const uint32_t W = 3, H = 2, D = 2;
  std::string coords = dims == 1 ? "%f1" : dims == 2 ? "%f1, %f2" : "%f1, %f2, %f3, %f4";
  if (sliced) coords = dims == 1 ? "%r6, %f2" : "%r6, %f2, %f3, %f4";
  Params p = for_model ? model_params() : test_params();
  if (for_model) {
    p.global_bytes = 32 << 20;
    p.rom_blocks = 1 << 20;
  }
  Bench s(kernel(tex_line(geom, false, coords)), p);
  std::mt19937 rng(7);
  for (int fi = 0; fi < formats; ++fi) {
    const Format& f = kFormats[fi];
    const uint32_t tb = f.channels * f.bytes, pitch = W * tb + (fi % 2 ? 8 : 0);
    const uint32_t rows = sliced || dims == 3 ? H * D : H;
    uint64_t base = s.put(texels(f, pitch, rows, rng));
    for (uint32_t m = 0; m < 16; ++m) {
      const uint32_t am = m & 3;
      const bool linear = m & 4, norm = m & 8;
      if (!norm && (am == T::kWrap || am == T::kMirror)) continue;  // the runtime stores clamp
      T::Desc d(base, pitch, pitch * H, W, dims >= 2 ? H : 1, sliced || dims == 3 ? D : 1, T::format_word(f.channels, f.bytes, f.kind), tb);
      d.w[T::kMode] = am | am << 2 | am << 4 | (linear ? T::kLinear : 0) | (norm ? T::kNormalized : 0);
      d.w[T::kBorder + 0] = fb(0.25f), d.w[T::kBorder + 1] = fb(-2.0f), d.w[T::kBorder + 2] = fb(3.0f), d.w[T::kBorder + 3] = fb(0.5f);
      uint64_t da = s.put(std::vector<uint32_t>(d.w, d.w + 16));
      auto xs = axis_values(W, norm, per_texel), ys = axis_values(H, norm, dims >= 2 ? 2 : 1);
      if (dims == 1) ys = {0};
      std::vector<uint32_t> zs = {0};
      if (dims == 3) zs = {fb(norm ? 0.25f : 0.5f), fb(norm ? 0.5f : 1.0f), fb(norm ? 0.8f : 1.7f), fb(-1.0f)};
      if (sliced) zs = {0, 1, 7, uint32_t(-1)};
      for (uint32_t z : zs)
        for (uint32_t y : ys)
          for (uint32_t x : xs) {
            uint32_t c[4] = {x, y, z, 0};
            if (sliced) c[0] = z, c[1] = x, c[2] = y, c[3] = 0;
            s.add(c, da);
          }
    }
  }
  auto [want, got] = s.run(for_model, native);
  expect_same(want, got, "tex." + geom + (native ? " (native floats)" : ""));
}

TEST(Texture, Fetch1dEveryWeight) { sweep("1d", 1, false, 256); }
TEST(Texture, Fetch2d) { sweep("2d", 2, false, 8); }
TEST(Texture, Fetch3d) { sweep("3d", 3, false, 4); }
TEST(Texture, FetchLayered) {
  sweep("a1d", 1, true, 16);
  sweep("a2d", 2, true, 4);
}
TEST(Texture, FetchOnTheModelsMachine) { sweep("2d", 2, false, 2, true, 2); }
// With native float operations (the CUDA-sized device's lowering).
TEST(Texture, FetchNativeFloats) {
  sweep("1d", 1, false, 256, false, 8, true);
  sweep("2d", 2, false, 8, false, 8, true);
}

// Cube maps: directions of every face, edges and corners included, on two
// layers.
TEST(Texture, Cube) {
  for (int variant = 0; variant < 3; ++variant) {
    const bool layered = variant == 1, native = variant == 2;
    std::string coords = layered ? "%r6, %f2, %f3, %f4" : "%f1, %f2, %f3, %f4";
    Bench s(kernel(tex_line(layered ? "acube" : "cube", false, coords)), test_params());
    std::mt19937 rng(3);
    const uint32_t W = 4, faces = layered ? 12 : 6;
    uint64_t base = s.put(texels(kFormats[0], W * 4, W * faces, rng));
    for (uint32_t linear : {0u, T::kLinear}) {
      T::Desc d(base, W * 4, W * W * 4, W, W, faces, T::format_word(1, 4, T::kBits), 4);
      d.w[T::kMode] = linear | T::kNormalized | T::kWrap;
      uint64_t da = s.put(std::vector<uint32_t>(d.w, d.w + 16));
      const float vals[] = {-1.5f, -1.0f, -0.6f, -0.25f, 0.0f, -0.0f, 0.3f, 0.75f, 1.0f, 2.0f};
      for (float x : vals)
        for (float y : vals)
          for (float z : vals) {
            uint32_t c[4] = {fb(x), fb(y), fb(z), 0};
            if (layered) c[0] = 1, c[1] = fb(x), c[2] = fb(y), c[3] = fb(z);
            s.add(c, da);
          }
    }
    auto [want, got] = s.run(false, native);
    expect_same(want, got, layered ? "tex.acube" : native ? "tex.cube (native floats)" : "tex.cube");
  }
}

// Integer results and integer coordinates (tex1Dfetch-style).
TEST(Texture, IntegerResultsAndCoordinates) {
  Bench s(kernel(tex_line("2d", true, "%r6, %r7")), test_params());
  std::mt19937 rng(5);
  const Format fmts[] = {{"u8x4", 4, 1, T::kUnsigned}, {"s16x2", 2, 2, T::kSigned}, {"s32x1", 1, 4, T::kSigned}};
  for (const Format& f : fmts) {
    const uint32_t W = 5, H = 3, tb = f.channels * f.bytes;
    uint64_t base = s.put(texels(f, W * tb, H, rng));
    for (uint32_t am = 0; am < 4; ++am) {
      T::Desc d(base, W * tb, W * tb * H, W, H, 1, T::format_word(f.channels, f.bytes, f.kind), tb);
      d.w[T::kMode] = am | am << 2 | T::kLinear;  // no filtering for integers
      d.w[T::kBorder] = 77;
      uint64_t da = s.put(std::vector<uint32_t>(d.w, d.w + 16));
      for (int y = -2; y < int(H) + 2; ++y)
        for (int x = -2; x < int(W) + 2; ++x) {
          uint32_t c[4] = {uint32_t(x), uint32_t(y), 0, 0};
          s.add(c, da);
        }
    }
  }
  auto [want, got] = s.run();
  expect_same(want, got, "tex.2d.v4.s32.s32");
}

// Known values: texel centres give the texel (point and linear), read-mode
// conversions, the border colour, missing channels (0, 0, 1).
TEST(Texture, KnownValues) {
  Bench s(kernel(tex_line("2d", false, "%f1, %f2")), test_params());
  // unorm8x4 texels 2x1: (0, 255, 128, 1), (10, 20, 30, 40); snorm8x2 (-128, 127), (-1, 64).
  uint64_t u8 = s.put({0x0180FF00u, 0x281E140Au});
  uint64_t s8 = s.put({0x40FF7F80u});
  uint64_t f1 = s.put({fb(1.5f), fb(-4.0f)});
  struct Case {
    uint64_t base;
    Format f;
    uint32_t mode;
    float x, y;
    float want[4];
  };
  const Case cases[] = {
      {u8, {"", 4, 1, T::kUnorm}, 0, 0.5f, 0.5f, {0.0f, 1.0f, 128.0f / 255.0f, 1.0f / 255.0f}},
      {u8, {"", 4, 1, T::kUnorm}, T::kLinear, 1.5f, 0.5f, {10 / 255.0f, 20 / 255.0f, 30 / 255.0f, 40 / 255.0f}},
      {s8, {"", 2, 1, T::kSnorm}, 0, 0.5f, 0.5f, {-1.0f, 1.0f, 0.0f, 1.0f}},
      {s8, {"", 2, 1, T::kSnorm}, 0, 1.9f, 0.2f, {-1.0f / 127.0f, 64.0f / 127.0f, 0.0f, 1.0f}},
      {f1, {"", 1, 4, T::kBits}, T::kLinear, 1.0f, 0.5f, {0.5f * 1.5f + 0.5f * -4.0f, 0.0f, 0.0f, 1.0f}},
      {f1, {"", 1, 4, T::kBits}, T::kLinear, 0.5f + 1.0f / 256.0f, 0.5f, {1.5f * (255.0f / 256.0f) + -4.0f / 256.0f, 0, 0, 1}},
      {f1, {"", 1, 4, T::kBits}, T::kBorderMode | T::kBorderMode << 2, 2.5f, 0.5f, {0.25f, 0.0f, 0.0f, 1.0f}},
      {f1, {"", 1, 4, T::kBits}, T::kClamp | T::kClamp << 2, 9.5f, -3.0f, {-4.0f, 0.0f, 0.0f, 1.0f}},
      {f1, {"", 1, 4, T::kBits}, T::kNormalized, 0.75f + 2.0f, 0.5f, {-4.0f, 0.0f, 0.0f, 1.0f}},  // wrap
      {f1, {"", 1, 4, T::kBits}, T::kNormalized | T::kMirror, 1.25f, 0.5f, {-4.0f, 0.0f, 0.0f, 1.0f}},
      {f1, {"", 1, 4, T::kBits}, T::kNormalized | T::kMirror, 1.75f, 0.5f, {1.5f, 0.0f, 0.0f, 1.0f}},
  };
  for (const Case& c : cases) {
    T::Desc d(c.base, 8, 8, 2, 1, 1, T::format_word(c.f.channels, c.f.bytes, c.f.kind), c.f.channels * c.f.bytes);
    d.w[T::kMode] = c.mode;
    d.w[T::kBorder] = fb(0.25f);
    uint32_t co[4] = {fb(c.x), fb(c.y), 0, 0};
    s.add(co, s.put(std::vector<uint32_t>(d.w, d.w + 16)));
  }
  auto [want, got] = s.run();
  expect_same(want, got, "known values");
  for (size_t i = 0; i < std::size(cases); ++i)
    for (int ch = 0; ch < 4; ++ch)
      EXPECT_EQ(got[4 * i + ch], fb(cases[i].want[ch])) << "case " << i << " channel " << ch << ": " << bf(got[4 * i + ch]);
}

// Every 8- and 16-bit value read as a normalised float: v / (2^b - 1)
// correctly rounded (the host's float division), snorm clamped to -1.
TEST(Texture, EveryNormalizedValue) {
  for (bool sign : {false, true}) {
    Bench s(kernel(tex_line("1d", false, "%f1")), test_params());
    std::vector<uint32_t> words(32768);
    for (uint32_t v = 0; v < 65536; ++v) reinterpret_cast<uint16_t*>(words.data())[v] = uint16_t(v);
    uint64_t base = s.put(words);
    for (uint32_t bytes : {1u, 2u}) {
      const uint32_t n = bytes == 1 ? 256 : 65536;
      const uint32_t per = bytes == 1 ? 1 : 2;  // 8-bit: the low bytes of the halfwords
      T::Desc d(base, n * 2, n * 2, n * 2 / bytes, 1, 1, T::format_word(1, bytes, sign ? T::kSnorm : T::kUnorm), bytes);
      uint64_t da = s.put(std::vector<uint32_t>(d.w, d.w + 16));
      for (uint32_t v = 0; v < n; ++v) {
        uint32_t c[4] = {fb(float(v * 2 / per) + 0.5f), 0, 0, 0};
        s.add(c, da);
      }
    }
    auto [want, got] = s.run();
    expect_same(want, got, "normalised reads");
    for (uint32_t v = 0; v < 256 + 65536; ++v) {
      const uint32_t bits = v < 256 ? 8 : 16, raw = v < 256 ? v : v - 256;
      float e;
      if (!sign) {
        e = float(raw) / float((1u << bits) - 1);
      } else {
        int32_t sv = int32_t(raw << (32 - bits)) >> (32 - bits);
        e = std::max(float(sv) / float((1u << (bits - 1)) - 1), -1.0f);
      }
      ASSERT_EQ(got[4 * v], fb(e)) << bits << "-bit " << (sign ? "snorm " : "unorm ") << raw;
    }
  }
}

// Surfaces: sust.b then suld.b through every clamp mode, in and out of range.
TEST(Texture, Surfaces) {
  for (const char* mode : {"clamp", "zero"}) {
    std::string line = std::string("  sust.b.2d.b32.") + mode + " [%rd1, {%r6, %r7}], %r8;\n  suld.b.2d.v2.b32." + mode +
                       " {%r10, %r11}, [%rd1, {%r6, %r7}];\n  st.global.v4.u32 [%rd6], {%r10, %r11, %r6, %r7};";
    Bench s(kernel(line), test_params());
    const uint32_t W = 4, H = 3;
    std::vector<uint32_t> init(W * H);
    for (uint32_t i = 0; i < W * H; ++i) init[i] = 1000 + i;
    uint64_t base = s.put(init);
    T::Desc d(base, W * 4, W * H * 4, W, H, 1, T::format_word(1, 4, T::kBits), 4);
    uint64_t da = s.put(std::vector<uint32_t>(d.w, d.w + 16));
    // One thread: a store then a load of two words at each (x, y); threads
    // store values that do not change what the others read when in range.
    for (int y = -1; y <= int(H); ++y)
      for (int x = -8; x <= int(W * 4) + 4; x += 4) {
        uint32_t c[4] = {uint32_t(x), uint32_t(y), 1000 + uint32_t(std::clamp(x / 4, 0, int(W) - 1) + std::clamp(y, 0, int(H) - 1) * W), 0};
        s.add(c, da);
      }
    auto [want, got] = s.run();
    expect_same(want, got, std::string("surfaces .") + mode);
    for (uint32_t i = 0; i < s.n; ++i) {
      int x = int(got[4 * i + 2]), y = int(got[4 * i + 3]);
      bool in = x >= 0 && x <= int(W * 4) - 8 && y >= 0 && y < int(H);
      if (std::string(mode) == "zero" && !in) {
        EXPECT_EQ(got[4 * i], 0u) << x << "," << y;
      } else {
        int cx = std::clamp(x, 0, int(W * 4) - 8) / 4, cy = std::clamp(y, 0, int(H) - 1);
        EXPECT_EQ(got[4 * i], 1000u + uint32_t(cx + cy * W)) << x << "," << y;
        EXPECT_EQ(got[4 * i + 1], 1000u + uint32_t(cx + 1 + cy * W)) << x << "," << y;
      }
    }
  }
}

// Machine instructions a fetch takes (printed; the kernel without the fetch
// subtracted): a 2D float texture with normalised, wrapped coordinates.
TEST(Texture, InstructionsPerFetch) {
  auto per_thread = [](const std::string& line, uint32_t mode, bool native) {
    Bench s(kernel(line), test_params());
    uint64_t base = s.put(std::vector<uint32_t>(64, fb(1.0f)));
    T::Desc d(base, 32, 64, 8, 2, 1, T::format_word(1, 4, T::kBits), 4);
    d.w[T::kMode] = mode;
    uint64_t da = s.put(std::vector<uint32_t>(d.w, d.w + 16));
    for (int i = 0; i < 256; ++i) {
      uint32_t c[4] = {fb(0.3f + float(i) / 97.0f), fb(0.6f), 0, 0};
      s.add(c, da);
    }
    auto [want, got] = s.run(false, native);
    EXPECT_EQ(want, got);
    return double(s.lane_instructions) / s.n;
  };
  double point[2], linear[2];
  for (bool native : {false, true}) {
    const double none = per_thread("  st.global.v4.f32 [%rd6], {%f1, %f2, %f3, %f4};", 0, native);
    point[native] = per_thread(tex_line("2d", false, "%f1, %f2"), T::kNormalized, native) - none;
    linear[native] = per_thread(tex_line("2d", false, "%f1, %f2"), T::kNormalized | T::kLinear, native) - none;
    std::printf("machine instructions per tex.2d fetch (f32, normalised, wrap%s): point %.0f, linear %.0f\n",
                native ? ", native floats" : "", point[native], linear[native]);
    EXPECT_GT(linear[native], point[native]);
  }
  EXPECT_LT(linear[1], linear[0] / 2);  // the fetch's f32 arithmetic is most of a linear fetch's code
}

TEST(Texture, SurfaceTrap) {
  Bench s(kernel("  sust.b.1d.b32.trap [%rd1, {%r6}], %r8;"), test_params());
  uint64_t base = s.put({0, 0});
  T::Desc d(base, 8, 8, 2, 1, 1, T::format_word(1, 4, T::kBits), 4);
  uint64_t da = s.put(std::vector<uint32_t>(d.w, d.w + 16));
  uint32_t c[4] = {8, 0, 5, 0};
  s.add(c, da);
  uint64_t rec = s.put(s.records), out = s.img.alloc(16);
  std::vector<uint8_t> pb(20);
  std::memcpy(pb.data(), &rec, 8);
  std::memcpy(pb.data() + 8, &out, 8);
  std::memcpy(pb.data() + 16, &s.n, 4);
  auto r = ptx::run(s.img.module, "k", {1, 1, 1}, {32, 1, 1}, 0, pb, s.img.symbols, s.img.mem);
  EXPECT_EQ(r.error, 700);
  Program prog = lower(s.img.module, "k", {{1, 1, 1}, {32, 1, 1}, 0, s.img.symbols}, s.params);
  Interpreter in(prog, s.params, prog.ctas, prog.threads, pb, s.img.mem);
  in.run(1'000'000);
  EXPECT_EQ(in.fault().error, 700);
}

}  // namespace
}  // namespace qgpu::machine
