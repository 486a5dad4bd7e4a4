// Per-instruction semantics of the PTX interpreter on edge values, against
// references written from the PTX ISA definitions (plain C++ on wider
// types, bit by bit where the ISA defines an operation that way).
#include <array>
#include <climits>
#include <functional>

#include "harness.h"

namespace qgpu::ptx::test {
namespace {

using In = std::array<uint64_t, 4>;
using Ref = std::function<uint64_t(uint64_t, uint64_t, uint64_t, uint64_t)>;

constexpr uint32_t kBlock = 128;

// Runs `snippet` once per input: %a %b %c %e hold the input (width `win`),
// the snippet leaves its result in %d (width `wout`).  %p %q are predicates
// and %rd7 is the address of the thread's output slot.
std::vector<uint64_t> run_snippet(const std::string& snippet, unsigned win, unsigned wout,
                                  std::vector<In> inputs) {
  size_t n = inputs.size();
  inputs.resize((n + kBlock - 1) / kBlock * kBlock, In{0, 0, 0, 0});
  auto conv_in = [&](const char* r, const char* src) {
    return win == 64 ? std::string("mov.b64 ") + r + ", " + src + ";\n"
                     : std::string("cvt.u32.u64 ") + r + ", " + src + ";\n";
  };
  std::string w = std::to_string(win), wo = std::to_string(wout);
  std::string text = ".version 9.0\n.target sm_75\n.address_size 64\n"
                     ".visible .entry k(.param .u64 k_in, .param .u64 k_out)\n{\n"
                     ".reg .b32 %r<8>;\n.reg .b64 %rd<10>;\n.reg .pred %p, %q;\n"
                     ".reg .b" + w + " %a, %b, %c, %e, %t;\n.reg .b" + wo + " %d;\n"
                     "ld.param.u64 %rd1, [k_in];\nld.param.u64 %rd2, [k_out];\n"
                     "mov.u32 %r0, %tid.x;\nmov.u32 %r1, %ctaid.x;\nmov.u32 %r2, %ntid.x;\n"
                     "mad.lo.s32 %r0, %r1, %r2, %r0;\n"
                     "mul.wide.u32 %rd3, %r0, 32;\nadd.s64 %rd3, %rd1, %rd3;\n"
                     "ld.global.u64 %rd4, [%rd3];\nld.global.u64 %rd5, [%rd3+8];\n"
                     "ld.global.u64 %rd6, [%rd3+16];\nld.global.u64 %rd9, [%rd3+24];\n"
                     "mul.wide.u32 %rd7, %r0, 8;\nadd.s64 %rd7, %rd2, %rd7;\n" +
                     conv_in("%a", "%rd4") + conv_in("%b", "%rd5") + conv_in("%c", "%rd6") +
                     conv_in("%e", "%rd9") + snippet + "\n" +
                     (wout == 64 ? "mov.b64 %rd8, %d;\n" : "cvt.u64.u" + wo + " %rd8, %d;\n") +
                     "st.global.u64 [%rd7], %rd8;\nret;\n}\n";
  Module m = parse(text);
  Device dev;
  uint64_t in = dev.upload(inputs);
  uint64_t out = dev.alloc(inputs.size() * 8);
  Params p(m.functions[0]);
  p.arg(in).arg(out);
  auto r = run(m, "k", {uint32_t(inputs.size() / kBlock), 1, 1}, {kBlock, 1, 1}, 0, p.bytes(), dev.symbols, dev.mem);
  EXPECT_EQ(r.error, 0) << r.message << "\n" << snippet;
  auto v = dev.download<uint64_t>(out, n);
  return v;
}

uint64_t mask(unsigned bits) { return bits == 64 ? ~uint64_t(0) : (1ull << bits) - 1; }

struct Case {
  std::string snippet;
  unsigned win, wout;
  Ref ref;
};

void check(const Case& c, const std::vector<In>& inputs) {
  auto got = run_snippet(c.snippet, c.win, c.wout, inputs);
  int failures = 0;
  for (size_t i = 0; i < inputs.size() && failures < 5; ++i) {
    const In& x = inputs[i];
    uint64_t m = mask(c.win);
    uint64_t want = c.ref(x[0] & m, x[1] & m, x[2] & m, x[3] & m) & mask(c.wout);
    if (got[i] != want) {
      ++failures;
      ADD_FAILURE() << c.snippet << " with a=" << std::hex << (x[0] & m) << " b=" << (x[1] & m)
                    << " c=" << (x[2] & m) << " e=" << (x[3] & m) << ": got " << got[i] << " want " << want;
    }
  }
}

const std::vector<uint64_t> kEdge32 = {0, 1, 0xFFFFFFFFu, 0x80000000u, 0x7FFFFFFFu, 2, 0xFFFFFFFEu, 7,
                                       0xFFFFFFF9u, 0x12345678u, 0xDEADBEEFu, 31, 32, 33, 0x80000001u};
const std::vector<uint64_t> kEdge64 = {0, 1, ~uint64_t(0), 0x8000000000000000ull, 0x7FFFFFFFFFFFFFFFull, 2, ~1ull,
                                       7, 0xFFFFFFFFull, 0x100000000ull, 0x0123456789ABCDEFull,
                                       0xFFFFFFFF80000000ull, 63, 64, 65};

std::vector<In> pairs(const std::vector<uint64_t>& e) {
  std::vector<In> v;
  for (uint64_t a : e)
    for (uint64_t b : e) v.push_back({a, b, a ^ (b << 1) ^ 0x55, b + 3});
  return v;
}
std::vector<In> shifts(const std::vector<uint64_t>& e, unsigned max) {
  std::vector<In> v;
  for (uint64_t a : e)
    for (uint64_t k = 0; k <= max; ++k) v.push_back({a, k, k * 7 + 1, 0});
  return v;
}

int64_t s32(uint64_t x) { return static_cast<int32_t>(static_cast<uint32_t>(x)); }
int64_t s64(uint64_t x) { return static_cast<int64_t>(x); }

TEST(PtxInterpOps, Arithmetic32) {
  std::vector<Case> cases = {
      {"add.s32 %d, %a, %b;", 32, 32, [](auto a, auto b, auto, auto) { return a + b; }},
      {"sub.s32 %d, %a, %b;", 32, 32, [](auto a, auto b, auto, auto) { return a - b; }},
      {"add.sat.s32 %d, %a, %b;", 32, 32,
       [](auto a, auto b, auto, auto) { return uint64_t(std::clamp<int64_t>(s32(a) + s32(b), INT_MIN, INT_MAX)); }},
      {"sub.sat.s32 %d, %a, %b;", 32, 32,
       [](auto a, auto b, auto, auto) { return uint64_t(std::clamp<int64_t>(s32(a) - s32(b), INT_MIN, INT_MAX)); }},
      {"mul.lo.s32 %d, %a, %b;", 32, 32, [](auto a, auto b, auto, auto) { return a * b; }},
      {"mul.hi.s32 %d, %a, %b;", 32, 32, [](auto a, auto b, auto, auto) { return uint64_t((s32(a) * s32(b)) >> 32); }},
      {"mul.hi.u32 %d, %a, %b;", 32, 32, [](auto a, auto b, auto, auto) { return (a * b) >> 32; }},
      {"mul.wide.s32 %d, %a, %b;", 32, 64, [](auto a, auto b, auto, auto) { return uint64_t(s32(a) * s32(b)); }},
      {"mul.wide.u32 %d, %a, %b;", 32, 64, [](auto a, auto b, auto, auto) { return a * b; }},
      {"mad.lo.s32 %d, %a, %b, %c;", 32, 32, [](auto a, auto b, auto c, auto) { return a * b + c; }},
      {"mad.hi.u32 %d, %a, %b, %c;", 32, 32, [](auto a, auto b, auto c, auto) { return ((a * b) >> 32) + c; }},
      {"div.s32 %d, %a, %b;", 32, 32,
       [](auto a, auto b, auto, auto) -> uint64_t {
         if (b == 0) return 0xFFFFFFFFu;  // -1
         if (s32(a) == INT_MIN && s32(b) == -1) return a;
         return uint64_t(s32(a) / s32(b));
       }},
      {"div.u32 %d, %a, %b;", 32, 32, [](auto a, auto b, auto, auto) { return b == 0 ? 0xFFFFFFFFu : a / b; }},
      {"rem.s32 %d, %a, %b;", 32, 32,
       [](auto a, auto b, auto, auto) -> uint64_t {
         if (b == 0) return a;
         if (s32(a) == INT_MIN && s32(b) == -1) return 0;
         return uint64_t(s32(a) % s32(b));
       }},
      {"rem.u32 %d, %a, %b;", 32, 32, [](auto a, auto b, auto, auto) { return b == 0 ? a : a % b; }},
      {"min.s32 %d, %a, %b;", 32, 32, [](auto a, auto b, auto, auto) { return s32(a) < s32(b) ? a : b; }},
      {"max.s32 %d, %a, %b;", 32, 32, [](auto a, auto b, auto, auto) { return s32(a) > s32(b) ? a : b; }},
      {"min.u32 %d, %a, %b;", 32, 32, [](auto a, auto b, auto, auto) { return a < b ? a : b; }},
      {"max.u32 %d, %a, %b;", 32, 32, [](auto a, auto b, auto, auto) { return a > b ? a : b; }},
      {"abs.s32 %d, %a;", 32, 32, [](auto a, auto, auto, auto) { return s32(a) < 0 ? 0 - a : a; }},
      {"neg.s32 %d, %a;", 32, 32, [](auto a, auto, auto, auto) { return 0 - a; }},
      {"and.b32 %d, %a, %b;", 32, 32, [](auto a, auto b, auto, auto) { return a & b; }},
      {"or.b32 %d, %a, %b;", 32, 32, [](auto a, auto b, auto, auto) { return a | b; }},
      {"xor.b32 %d, %a, %b;", 32, 32, [](auto a, auto b, auto, auto) { return a ^ b; }},
      {"not.b32 %d, %a;", 32, 32, [](auto a, auto, auto, auto) { return ~a; }},
      {"cnot.b32 %d, %a;", 32, 32, [](auto a, auto, auto, auto) { return uint64_t(a == 0); }},
      {"mul24.lo.s32 %d, %a, %b;", 32, 32,
       [](auto a, auto b, auto, auto) {
         int64_t x = int64_t(a << 40) >> 40, y = int64_t(b << 40) >> 40;  // 24-bit sign extension
         return uint64_t(x * y);
       }},
      {"mul24.hi.u32 %d, %a, %b;", 32, 32,
       [](auto a, auto b, auto, auto) { return ((a & 0xFFFFFF) * (b & 0xFFFFFF)) >> 16; }},
      {"mad24.lo.u32 %d, %a, %b, %c;", 32, 32,
       [](auto a, auto b, auto c, auto) { return (a & 0xFFFFFF) * (b & 0xFFFFFF) + c; }},
      {"sad.s32 %d, %a, %b, %c;", 32, 32,
       [](auto a, auto b, auto c, auto) { return c + uint64_t(std::abs(s32(a) - s32(b))); }},
      {"sad.u32 %d, %a, %b, %c;", 32, 32,
       [](auto a, auto b, auto c, auto) { return c + (a > b ? a - b : b - a); }},
  };
  for (const Case& c : cases) check(c, pairs(kEdge32));
}

TEST(PtxInterpOps, Shifts) {
  std::vector<Case> cases = {
      {"shl.b32 %d, %a, %b;", 32, 32, [](auto a, auto b, auto, auto) { return b >= 32 ? 0 : a << b; }},
      {"shr.u32 %d, %a, %b;", 32, 32, [](auto a, auto b, auto, auto) { return b >= 32 ? 0 : a >> b; }},
      {"shr.s32 %d, %a, %b;", 32, 32,
       [](auto a, auto b, auto, auto) {
         if (b >= 32) return s32(a) < 0 ? ~uint64_t(0) : uint64_t(0);
         return uint64_t(s32(a) >> b);
       }},
      {"shf.l.wrap.b32 %d, %a, %b, %c;", 32, 32,
       [](auto a, auto b, auto c, auto) { return (((b << 32) | a) << (c % 32)) >> 32; }},
      {"shf.r.wrap.b32 %d, %a, %b, %c;", 32, 32,
       [](auto a, auto b, auto c, auto) { return ((b << 32) | a) >> (c % 32); }},
      {"shf.l.clamp.b32 %d, %a, %b, %c;", 32, 32,
       [](auto a, auto b, auto c, auto) { return c >= 32 ? a : ((((b << 32) | a) << c) >> 32); }},
      {"shf.r.clamp.b32 %d, %a, %b, %c;", 32, 32,
       [](auto a, auto b, auto c, auto) { return c >= 32 ? b : (((b << 32) | a) >> c); }},
  };
  // Counts 0..40: shl/shr take them in %b, shf in %c (its %b is the high word).
  std::vector<In> in;
  for (uint64_t a : kEdge32)
    for (uint64_t k = 0; k <= 40; ++k) in.push_back({a, k, k, 0});
  for (size_t i = 0; i < 3; ++i) check(cases[i], in);
  for (In& x : in) x[1] = (x[0] * 0x9E3779B9u) & 0xFFFFFFFF;
  for (size_t i = 3; i < cases.size(); ++i) check(cases[i], in);
  std::vector<Case> wide = {
      {"shl.b64 %d, %a, %b;", 64, 64, [](auto a, auto b, auto, auto) { return b >= 64 ? 0 : a << b; }},
      {"shr.u64 %d, %a, %b;", 64, 64, [](auto a, auto b, auto, auto) { return b >= 64 ? 0 : a >> b; }},
      {"shr.s64 %d, %a, %b;", 64, 64,
       [](auto a, auto b, auto, auto) { return b >= 64 ? (s64(a) < 0 ? ~uint64_t(0) : 0ull) : uint64_t(s64(a) >> b); }},
  };
  // 64-bit shifts take a .u32 count.
  for (Case c : wide) {
    c.snippet = "cvt.u32.u64 %r1, %b;\n" + c.snippet.replace(c.snippet.find("%b;"), 3, "%r1;");
    check(c, shifts(kEdge64, 70));
  }
}

TEST(PtxInterpOps, Arithmetic64) {
  using I128 = __int128;
  std::vector<Case> cases = {
      {"add.s64 %d, %a, %b;", 64, 64, [](auto a, auto b, auto, auto) { return a + b; }},
      {"sub.s64 %d, %a, %b;", 64, 64, [](auto a, auto b, auto, auto) { return a - b; }},
      {"mul.lo.s64 %d, %a, %b;", 64, 64, [](auto a, auto b, auto, auto) { return a * b; }},
      {"mul.hi.s64 %d, %a, %b;", 64, 64,
       [](auto a, auto b, auto, auto) { return uint64_t((I128(s64(a)) * I128(s64(b))) >> 64); }},
      {"mul.hi.u64 %d, %a, %b;", 64, 64,
       [](auto a, auto b, auto, auto) { return uint64_t((static_cast<unsigned __int128>(a) * b) >> 64); }},
      {"div.s64 %d, %a, %b;", 64, 64,
       [](auto a, auto b, auto, auto) -> uint64_t {
         if (b == 0) return ~uint64_t(0);
         if (s64(a) == LLONG_MIN && s64(b) == -1) return a;
         return uint64_t(s64(a) / s64(b));
       }},
      {"div.u64 %d, %a, %b;", 64, 64, [](auto a, auto b, auto, auto) { return b == 0 ? ~uint64_t(0) : a / b; }},
      {"rem.s64 %d, %a, %b;", 64, 64,
       [](auto a, auto b, auto, auto) -> uint64_t {
         if (b == 0) return a;
         if (s64(a) == LLONG_MIN && s64(b) == -1) return 0;
         return uint64_t(s64(a) % s64(b));
       }},
      {"rem.u64 %d, %a, %b;", 64, 64, [](auto a, auto b, auto, auto) { return b == 0 ? a : a % b; }},
      {"min.s64 %d, %a, %b;", 64, 64, [](auto a, auto b, auto, auto) { return s64(a) < s64(b) ? a : b; }},
      {"max.u64 %d, %a, %b;", 64, 64, [](auto a, auto b, auto, auto) { return a > b ? a : b; }},
      {"mad.lo.s64 %d, %a, %b, %c;", 64, 64, [](auto a, auto b, auto c, auto) { return a * b + c; }},
      {"abs.s64 %d, %a;", 64, 64, [](auto a, auto, auto, auto) { return s64(a) < 0 ? 0 - a : a; }},
  };
  for (const Case& c : cases) check(c, pairs(kEdge64));
}

// Bit-by-bit references.
uint64_t ref_popc(uint64_t a, unsigned n) {
  uint64_t c = 0;
  for (unsigned i = 0; i < n; ++i) c += (a >> i) & 1;
  return c;
}
uint64_t ref_clz(uint64_t a, unsigned n) {
  uint64_t c = 0;
  for (int i = int(n) - 1; i >= 0 && !((a >> i) & 1); --i) ++c;
  return c;
}
uint64_t ref_brev(uint64_t a, unsigned n) {
  uint64_t r = 0;
  for (unsigned i = 0; i < n; ++i)
    if ((a >> i) & 1) r |= 1ull << (n - 1 - i);
  return r;
}
uint64_t ref_msb(uint64_t a) {
  for (int i = 31; i >= 0; --i)
    if ((a >> i) & 1) return uint64_t(i);
  return 0xFFFFFFFFu;
}

TEST(PtxInterpOps, CarryChains) {
  // 64-bit add and subtract through 32-bit halves, as compilers write them.
  std::vector<Case> cases = {
      {"mov.b64 {%r1, %r2}, %a;\nmov.b64 {%r3, %r4}, %b;\nadd.cc.u32 %r5, %r1, %r3;\naddc.u32 %r6, %r2, %r4;\n"
       "mov.b64 %d, {%r5, %r6};",
       64, 64, [](auto a, auto b, auto, auto) { return a + b; }},
      {"mov.b64 {%r1, %r2}, %a;\nmov.b64 {%r3, %r4}, %b;\nsub.cc.u32 %r5, %r1, %r3;\nsubc.u32 %r6, %r2, %r4;\n"
       "mov.b64 %d, {%r5, %r6};",
       64, 64, [](auto a, auto b, auto, auto) { return a - b; }},
      {"mad.lo.cc.u32 %r5, %r0, 0, 0;\nmov.b64 {%r1, %r2}, %a;\nmov.b64 {%r3, %r4}, %b;\n"
       "add.cc.u32 %r5, %r1, %r3;\naddc.cc.u32 %r6, %r2, %r4;\naddc.u32 %r7, 0, 0;\ncvt.u64.u32 %d, %r7;",
       64, 64, [](auto a, auto b, auto, auto) { return uint64_t(a + b < a); }},
  };
  for (const Case& c : cases) check(c, pairs(kEdge64));
}

TEST(PtxInterpOps, BitOperations) {
  std::vector<Case> cases = {
      {"popc.b32 %d, %a;", 32, 32, [](auto a, auto, auto, auto) { return ref_popc(a, 32); }},
      {"clz.b32 %d, %a;", 32, 32, [](auto a, auto, auto, auto) { return ref_clz(a, 32); }},
      {"brev.b32 %d, %a;", 32, 32, [](auto a, auto, auto, auto) { return ref_brev(a, 32); }},
      {"bfind.u32 %d, %a;", 32, 32, [](auto a, auto, auto, auto) { return ref_msb(a); }},
      {"bfind.s32 %d, %a;", 32, 32,
       [](auto a, auto, auto, auto) { return ref_msb((a >> 31) ? (~a & 0xFFFFFFFFu) : a); }},
      {"bfind.shiftamt.u32 %d, %a;", 32, 32,
       [](auto a, auto, auto, auto) { return a == 0 ? 0xFFFFFFFFu : 31 - ref_msb(a); }},
      {"prmt.b32 %d, %a, %b, %c;", 32, 32,
       [](auto a, auto b, auto c, auto) {
         uint8_t src[8];
         for (int i = 0; i < 4; ++i) src[i] = uint8_t(a >> (8 * i)), src[4 + i] = uint8_t(b >> (8 * i));
         uint64_t r = 0;
         for (int i = 0; i < 4; ++i) {
           unsigned sel = (c >> (4 * i)) & 15;
           uint8_t byte = src[sel & 7];
           if (sel & 8) byte = (byte & 0x80) ? 0xFF : 0x00;
           r |= uint64_t(byte) << (8 * i);
         }
         return r;
       }},
  };
  for (const Case& c : cases) check(c, pairs(kEdge32));
  std::vector<Case> wide = {
      {"popc.b64 %d, %a;", 64, 32, [](auto a, auto, auto, auto) { return ref_popc(a, 64); }},
      {"clz.b64 %d, %a;", 64, 32, [](auto a, auto, auto, auto) { return ref_clz(a, 64); }},
      {"brev.b64 %d, %a;", 64, 64, [](auto a, auto, auto, auto) { return ref_brev(a, 64); }},
  };
  for (const Case& c : wide) check(c, pairs(kEdge64));
}

TEST(PtxInterpOps, BitFields) {
  // bfe d, a, pos, len and bfi f, a, b, pos, len, defined bit by bit.
  Case bfe_u{"bfe.u32 %d, %a, %b, %c;", 32, 32, [](auto a, auto b, auto c, auto) {
               unsigned pos = b & 0xFF, len = c & 0xFF;
               uint64_t r = 0;
               for (unsigned i = 0; i < 32; ++i)
                 if (i < len && pos + i <= 31) r |= ((a >> (pos + i)) & 1) << i;
               return r;
             }};
  Case bfe_s{"bfe.s32 %d, %a, %b, %c;", 32, 32, [](auto a, auto b, auto c, auto) {
               unsigned pos = b & 0xFF, len = c & 0xFF;
               uint64_t sbit = len == 0 ? 0 : (a >> std::min(pos + len - 1, 31u)) & 1;
               uint64_t r = 0;
               for (unsigned i = 0; i < 32; ++i) {
                 uint64_t bit = (i < len && pos + i <= 31) ? (a >> (pos + i)) & 1 : sbit;
                 r |= bit << i;
               }
               return r;
             }};
  Case bfi{"bfi.b32 %d, %a, %b, %c, %e;", 32, 32, [](auto a, auto b, auto c, auto e) {
             unsigned pos = c & 0xFF, len = e & 0xFF;
             uint64_t r = b;
             for (unsigned i = 0; i < len && pos + i <= 31; ++i) {
               r &= ~(1ull << (pos + i));
               r |= ((a >> i) & 1) << (pos + i);
             }
             return r;
           }};
  std::vector<In> in;
  for (uint64_t a : {0x0ull, 0xFFFFFFFFull, 0x80000000ull, 0x12345678ull, 0xF0F0A5A5ull})
    for (uint64_t pos : {0, 1, 4, 8, 16, 31, 32, 40, 0x101})
      for (uint64_t len : {0, 1, 3, 8, 16, 31, 32, 33, 0x204}) in.push_back({a, pos, len, 0});
  check(bfe_u, in);
  check(bfe_s, in);
  std::vector<In> in4;
  for (const In& x : in) in4.push_back({x[0], 0xCAFEBABEull, x[1], x[2]});
  check(bfi, in4);
}

TEST(PtxInterpOps, MasksAndExtensions) {
  auto bmsk = [](uint64_t a, uint64_t b, bool wrap) {
    if (wrap) a &= 31, b &= 31;
    else a = std::min<uint64_t>(a, 32), b = std::min<uint64_t>(b, 32);
    uint64_t r = 0;
    for (uint64_t i = a; i < a + b && i < 32; ++i) r |= 1ull << i;
    return r;
  };
  auto szext = [](uint64_t a, uint64_t b, bool wrap, bool sign) -> uint64_t {
    b = wrap ? (b & 31) : std::min<uint64_t>(b, 32);
    if (b == 0) return 0;
    uint64_t r = 0;
    for (uint64_t i = 0; i < 32; ++i) {
      uint64_t bit = i < b ? (a >> i) & 1 : sign ? (a >> (b - 1)) & 1 : 0;
      r |= bit << i;
    }
    return r;
  };
  std::vector<Case> cases = {
      {"bmsk.clamp.b32 %d, %a, %b;", 32, 32, [&](auto a, auto b, auto, auto) { return bmsk(a, b, false); }},
      {"bmsk.wrap.b32 %d, %a, %b;", 32, 32, [&](auto a, auto b, auto, auto) { return bmsk(a, b, true); }},
      {"szext.clamp.s32 %d, %a, %b;", 32, 32, [&](auto a, auto b, auto, auto) { return szext(a, b, false, true); }},
      {"szext.wrap.u32 %d, %a, %b;", 32, 32, [&](auto a, auto b, auto, auto) { return szext(a, b, true, false); }},
  };
  std::vector<In> in;
  for (uint64_t a : kEdge32)
    for (uint64_t k = 0; k <= 40; ++k) in.push_back({a % 41, k, 0, 0});
  check(cases[0], in);
  check(cases[1], in);
  for (In& x : in) x[0] = kEdge32[x[0] % kEdge32.size()] ^ (x[1] << 9);
  check(cases[2], in);
  check(cases[3], in);
}

TEST(PtxInterpOps, WarpReductions) {
  // redux.sync over full warps: every lane gets the warp's result.
  std::vector<In> in;
  for (uint64_t a : kEdge32)
    for (uint64_t b : {0ull, 5ull, 0x80000000ull}) in.push_back({a ^ b, 0, 0, 0});
  in.resize(64, In{3, 0, 0, 0});
  struct R {
    std::string snippet;
    std::function<uint64_t(uint64_t, uint64_t)> f;
  };
  std::vector<R> reds = {
      {"redux.sync.add.u32 %d, %a, -1;", [](uint64_t x, uint64_t y) { return (x + y) & 0xFFFFFFFF; }},
      {"redux.sync.min.s32 %d, %a, -1;", [](uint64_t x, uint64_t y) { return s32(x) < s32(y) ? x : y; }},
      {"redux.sync.max.u32 %d, %a, -1;", [](uint64_t x, uint64_t y) { return x > y ? x : y; }},
      {"redux.sync.xor.b32 %d, %a, -1;", [](uint64_t x, uint64_t y) { return x ^ y; }},
  };
  for (const R& r : reds) {
    auto got = run_snippet(r.snippet, 32, 32, in);
    for (size_t w = 0; w < 2; ++w) {
      uint64_t acc = in[w * 32][0];
      for (size_t l = 1; l < 32; ++l) acc = r.f(acc, in[w * 32 + l][0]);
      for (size_t l = 0; l < 32; ++l) EXPECT_EQ(got[w * 32 + l], acc) << r.snippet << " lane " << l;
    }
  }
}

TEST(PtxInterpOps, ComparisonsSelectsAndConversions) {
  auto setp = [](const std::string& cmp) {
    return "setp." + cmp + " %p, %a, %b;\nselp.u32 %d, 1, 0, %p;";
  };
  std::vector<Case> cases = {
      {setp("lt.s32"), 32, 32, [](auto a, auto b, auto, auto) { return uint64_t(s32(a) < s32(b)); }},
      {setp("le.s32"), 32, 32, [](auto a, auto b, auto, auto) { return uint64_t(s32(a) <= s32(b)); }},
      {setp("gt.s32"), 32, 32, [](auto a, auto b, auto, auto) { return uint64_t(s32(a) > s32(b)); }},
      {setp("ge.u32"), 32, 32, [](auto a, auto b, auto, auto) { return uint64_t(a >= b); }},
      {setp("lo.u32"), 32, 32, [](auto a, auto b, auto, auto) { return uint64_t(a < b); }},
      {setp("hi.u32"), 32, 32, [](auto a, auto b, auto, auto) { return uint64_t(a > b); }},
      {setp("eq.s32"), 32, 32, [](auto a, auto b, auto, auto) { return uint64_t(a == b); }},
      {setp("ne.b32"), 32, 32, [](auto a, auto b, auto, auto) { return uint64_t(a != b); }},
      {"setp.lt.s32 %p|%q, %a, %b;\nselp.u32 %d, 2, 0, %p;\nselp.u32 %t, 1, 0, %q;\nor.b32 %d, %d, %t;", 32, 32,
       [](auto a, auto b, auto, auto) { return s32(a) < s32(b) ? uint64_t(2) : uint64_t(1); }},
      {"setp.ne.u32 %q, %c, 0;\nsetp.gt.or.s32 %p, %a, %b, !%q;\nselp.u32 %d, 1, 0, %p;", 32, 32,
       [](auto a, auto b, auto c, auto) { return uint64_t(s32(a) > s32(b) || c == 0); }},
      {"setp.ne.u32 %q, %c, 0;\nselp.b32 %d, %a, %b, %q;", 32, 32,
       [](auto a, auto b, auto c, auto) { return c != 0 ? a : b; }},
      {"slct.u32.s32 %d, %a, %b, %c;", 32, 32, [](auto a, auto b, auto c, auto) { return s32(c) >= 0 ? a : b; }},
      {"set.lt.u32.s32 %d, %a, %b;", 32, 32,
       [](auto a, auto b, auto, auto) { return s32(a) < s32(b) ? 0xFFFFFFFFull : 0; }},
      {"cvt.s32.s8 %d, %a;", 32, 32, [](auto a, auto, auto, auto) { return uint64_t(int64_t(int8_t(a))); }},
      {"cvt.u32.u8 %d, %a;", 32, 32, [](auto a, auto, auto, auto) { return a & 0xFF; }},
      {"cvt.s32.s16 %d, %a;", 32, 32, [](auto a, auto, auto, auto) { return uint64_t(int64_t(int16_t(a))); }},
      {"cvt.sat.u8.s32 %d, %a;", 32, 32,
       [](auto a, auto, auto, auto) { return uint64_t(std::clamp<int64_t>(s32(a), 0, 255)); }},
      {"cvt.sat.s8.s32 %d, %a;", 32, 32,
       [](auto a, auto, auto, auto) { return uint64_t(std::clamp<int64_t>(s32(a), -128, 127)); }},
      {"cvt.sat.s32.u32 %d, %a;", 32, 32, [](auto a, auto, auto, auto) { return a > 0x7FFFFFFFu ? 0x7FFFFFFFull : a; }},
      {"cvt.s64.s32 %d, %a;", 32, 64, [](auto a, auto, auto, auto) { return uint64_t(s32(a)); }},
      {"cvt.u64.u32 %d, %a;", 32, 64, [](auto a, auto, auto, auto) { return a; }},
  };
  for (const Case& c : cases) check(c, pairs(kEdge32));
  Case narrow{"cvt.u32.u64 %d, %a;", 64, 32, [](auto a, auto, auto, auto) { return a & 0xFFFFFFFFu; }};
  check(narrow, pairs(kEdge64));
}

TEST(PtxInterpOps, AtomicUpdates) {
  // Store a to the output slot, apply the atomic with operand b (and c),
  // then report the new memory value, or (second run) the old value returned.
  auto atom = [](const std::string& op, const std::string& extra, bool report_old) {
    return "st.global.u32 [%rd7], %a;\natom.global." + op + " %t, [%rd7], %b" + extra + ";\n" +
           (report_old ? "mov.b32 %d, %t;" : "ld.global.u32 %d, [%rd7];");
  };
  struct A {
    std::string op, extra;
    std::function<uint64_t(uint64_t, uint64_t, uint64_t)> f;
  };
  std::vector<A> ops = {
      {"add.u32", "", [](auto a, auto b, auto) { return a + b; }},
      {"inc.u32", "", [](auto a, auto b, auto) { return a >= b ? 0 : a + 1; }},
      {"dec.u32", "", [](auto a, auto b, auto) { return (a == 0 || a > b) ? b : a - 1; }},
      {"min.s32", "", [](auto a, auto b, auto) { return s32(a) < s32(b) ? a : b; }},
      {"max.u32", "", [](auto a, auto b, auto) { return a > b ? a : b; }},
      {"exch.b32", "", [](auto, auto b, auto) { return b; }},
      {"cas.b32", ", %c", [](auto a, auto b, auto c) { return a == b ? c : a; }},
      {"and.b32", "", [](auto a, auto b, auto) { return a & b; }},
      {"xor.b32", "", [](auto a, auto b, auto) { return a ^ b; }},
  };
  std::vector<In> in = pairs(kEdge32);
  for (In& i : in) i[2] = (i[0] + 1) & 0xFFFFFFFF;
  for (const A& x : ops) {
    check({atom(x.op, x.extra, false), 32, 32, [&](auto a, auto b, auto c, auto) { return x.f(a, b, c); }}, in);
    check({atom(x.op, x.extra, true), 32, 32, [](auto a, auto, auto, auto) { return a; }}, in);
  }
  // cas with b == a swaps: feed b = a for half of the inputs.
  for (In& i : in) i[1] = (i[3] & 1) ? i[0] : i[1];
  check({atom("cas.b32", ", %c", false), 32, 32, [](auto a, auto b, auto c, auto) { return a == b ? c : a; }}, in);
}

// A one-thread kernel running `body`; returns the launch result.
launch::LaunchResult run_body(const std::string& body, Device& dev, uint64_t max_steps = 1 << 20) {
  Module m = parse(".version 9.0\n.target sm_75\n.address_size 64\n.visible .entry k(.param .u64 k_p)\n{\n"
                   ".reg .b32 %r<4>;\n.reg .b64 %rd<4>;\n.reg .f32 %f<3>;\n.reg .pred %p;\n"
                   "ld.param.u64 %rd1, [k_p];\n" + body + "\nret;\n}\n");
  Params p(m.functions[0]);
  p.arg(dev.alloc(64));
  InterpOptions opt;
  opt.max_steps = max_steps;
  return run(m, "k", {1, 1, 1}, {1, 1, 1}, 0, p.bytes(), dev.symbols, dev.mem, opt);
}

TEST(PtxInterpFaults, ClearErrors) {
  Device dev;
  auto r = run_body("ld.global.u32 %r1, [%rd1+2000000];", dev);
  EXPECT_EQ(r.error, 700);
  EXPECT_NE(r.message.find("ld.global.u32"), std::string::npos) << r.message;
  EXPECT_NE(r.message.find("line 11"), std::string::npos) << r.message;
  r = run_body("mov.u64 %rd2, 0;\nst.u32 [%rd2], 1;", dev);
  EXPECT_EQ(r.error, 700) << r.message;
  r = run_body("ld.global.u32 %r1, [%rd1+2];", dev);
  EXPECT_EQ(r.error, 716) << r.message;
  r = run_body("trap;", dev);
  EXPECT_EQ(r.error, 719) << r.message;
  r = run_body(".reg .f64 %fd<2>;\nld.global.f64 %fd1, [%rd1];\nrsqrt.approx.f64 %fd1, %fd1;", dev);
  EXPECT_EQ(r.error, 801);
  EXPECT_NE(r.message.find("rsqrt.approx.f64"), std::string::npos) << r.message;
  r = run_body("$L_spin:\nbra $L_spin;", dev, 1000);
  EXPECT_EQ(r.error, 702) << r.message;
  Device dev2;
  Module m = parse(".version 9.0\n.target sm_75\n.address_size 64\n.visible .entry k()\n{\nret;\n}\n");
  EXPECT_EQ(run(m, "nope", {1, 1, 1}, {1, 1, 1}, 0, {}, dev2.symbols, dev2.mem).error, 98);
}

}  // namespace
}  // namespace qgpu::ptx::test
