// The op table: one case per machine operation and per PTX form that lowers
// to it, each a small kernel run on every backend and compared, bit for bit,
// with the PTX-level reference ("ptx-reference").  ops_test.cpp runs it on
// the backends without the model; ops_model_test.cpp on the model.
//
// A case is a kernel body over rows of input words: the kernel runs rows
// `row = global thread index, + total threads ...` (a grid-stride loop), or,
// for cases about threads (warp operations, barriers, shared memory), one
// row per thread.  Registers the body may use: %r0..%r63, %rd0..%rd63,
// %p0..%p15, %f0..%f15, %fd0..%fd15, %h0..%h7; %rin and %rout address the
// row's input and output words.  What is compared: the launch's error, its
// printf output and the whole global-memory image.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <functional>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "model_host/backends/registry.h"
#include "model_host/launch/errors.h"
#include "model_host/machine/api.h"
#include "model_host/machine/image.h"
#include "model_host/machine/isa.h"
#include "model_host/lower/lower.h"
#include "model_host/ptx/parse.h"

namespace qgpu::opstable {

// The documented refusal of a backend that cannot run a case: its CUDA
// error and words its message must contain.
struct Refusal {
  int error = 0;
  std::string words;
};

// How a case lays out its threads.
struct Shape {
  bool loop = true;          // rows by a grid-stride loop; false: one row per thread
  launch::Dim3 grid{2, 1, 1}, block{64, 1, 1};
  uint32_t rows = 0;         // loop: rows of input (0: what the inputs hold); else grid x block
};

// On the model in CI (ops_model_test.cpp), or only in its full run
// (QGPU_OPS_MODEL_FULL=1): cases whose operations other cases cover already
// and whose kernels are long.
enum class ModelRun { Always, FullOnly };

struct Case {
  std::string name;
  // The machine operations the case is there for, as coverage keys
  // (op_keys()); each must appear in the case's lowered program.
  std::vector<std::string> covers;
  std::string body;
  uint32_t in_words = 0, out_words = 0;
  std::vector<uint32_t> in;   // rows x in_words
  Shape shape;                // on the CUDA-sized backends and the model's machine
  Shape model;                // on the model (ops_model_test.cpp): fewer rows and threads
  std::string prelude;        // module scope: variables, declarations
  std::string locals;         // kernel scope: .shared / .local declarations
  int error = 0;              // the error every backend must end with (a trap)
  std::map<std::string, Refusal> refusals;  // backend name -> its documented refusal
  ModelRun model_run = ModelRun::Always;

  uint32_t rows(const Shape& s) const {
    if (!s.loop) return uint32_t(s.grid.count() * s.block.count());
    return s.rows ? s.rows : uint32_t(in_words ? in.size() / in_words : 0);
  }
};

// ---- inputs ------------------------------------------------------------------

// Edge values: zero, one, minus one, INT_MIN/INT_MAX and their neighbours,
// powers of two, shift counts, bytes and halfwords at their limits.
inline const std::vector<uint32_t>& edges32() {
  static const std::vector<uint32_t> v = {0u,          1u,          2u,          3u,          0xFFFFFFFFu, 0xFFFFFFFEu,
                                          0x80000000u, 0x7FFFFFFFu, 0x80000001u, 0x40000000u, 0x00010000u, 0x00008000u,
                                          0x0000FFFFu, 0x000000FFu, 0x00000080u, 31u,         32u,         33u,
                                          0x12345678u, 0xDEADBEEFu, 0xFFFF8000u, 0x00FF00FFu};
  return v;
}

// Random words of random bit lengths (sign-extended or not).
inline uint32_t random_word(std::mt19937_64& rng) {
  const int bits = int(rng() % 33);
  uint32_t v = bits == 0 ? 0 : uint32_t(rng()) >> (32 - bits);
  if (rng() % 4 == 0) v = ~v;
  return v;
}

// Rows of `n` words: every ordered pair of edge values in the first two
// words (shuffled, so any prefix mixes them) then `random_rows` random rows;
// further words are edges or random.
inline std::vector<uint32_t> int_rows(uint32_t n, uint64_t seed, uint32_t random_rows = 64) {
  std::mt19937_64 rng(seed);
  const auto& e = edges32();
  std::vector<std::vector<uint32_t>> rows;
  for (uint32_t a : e)
    for (uint32_t b : e) {
      std::vector<uint32_t> r(n);
      r[0] = a;
      if (n > 1) r[1] = b;
      for (uint32_t i = 2; i < n; ++i) r[i] = rng() % 2 ? e[rng() % e.size()] : random_word(rng);
      rows.push_back(r);
    }
  std::shuffle(rows.begin(), rows.end(), rng);
  for (uint32_t k = 0; k < random_rows; ++k) {
    std::vector<uint32_t> r(n);
    for (auto& w : r) w = random_word(rng);
    rows.push_back(r);
  }
  std::vector<uint32_t> flat;
  for (auto& r : rows) flat.insert(flat.end(), r.begin(), r.end());
  return flat;
}

// Rows (a, count, c): every edge value shifted by every count 0..40.
inline std::vector<uint32_t> shift_rows(uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<std::vector<uint32_t>> rows;
  for (uint32_t a : edges32())
    for (uint32_t k = 0; k <= 40; ++k) rows.push_back({a, k, uint32_t(rng() % 64)});
  std::shuffle(rows.begin(), rows.end(), rng);
  std::vector<uint32_t> flat;
  for (auto& r : rows) flat.insert(flat.end(), r.begin(), r.end());
  return flat;
}

// Floating-point edge values: signed zeros, subnormals, the smallest and
// largest normals, one and its neighbours, infinities, NaNs.
inline const std::vector<uint32_t>& edges_f32() {
  static const std::vector<uint32_t> v = [] {
    std::vector<uint32_t> base = {0x00000000u, 0x00000001u, 0x007FFFFFu, 0x00800000u, 0x3F800000u, 0x3F800001u,
                                  0x3F7FFFFFu, 0x40000000u, 0x3FC00000u, 0x4B000000u, 0x4F000000u, 0x7F7FFFFFu,
                                  0x7F800000u, 0x7FC00000u, 0x7F800001u, 0x33800000u, 0x40490FDBu, 0x3EAAAAABu};
    std::vector<uint32_t> all;
    for (uint32_t x : base) all.push_back(x), all.push_back(x | 0x80000000u);
    return all;
  }();
  return v;
}

// Rows of `n` float words: edge pairs (shuffled) then random values with
// exponents near one another, so sums round and cancel.
inline std::vector<uint32_t> float_rows(uint32_t n, uint64_t seed, uint32_t random_rows = 64) {
  std::mt19937_64 rng(seed);
  auto any = [&]() -> uint32_t {
    switch (rng() % 4) {
      case 0: return edges_f32()[rng() % edges_f32().size()];
      case 1: return uint32_t(rng());
      default: return (uint32_t(rng()) & 0x807FFFFFu) | uint32_t(112 + rng() % 32) << 23;
    }
  };
  std::vector<std::vector<uint32_t>> rows;
  for (uint32_t a : edges_f32())
    for (uint32_t b : edges_f32()) {
      std::vector<uint32_t> r(n);
      r[0] = a;
      if (n > 1) r[1] = b;
      for (uint32_t i = 2; i < n; ++i) r[i] = any();
      rows.push_back(r);
    }
  std::shuffle(rows.begin(), rows.end(), rng);
  for (uint32_t k = 0; k < random_rows; ++k) {
    std::vector<uint32_t> r(n);
    for (auto& w : r) w = any();
    rows.push_back(r);
  }
  std::vector<uint32_t> flat;
  for (auto& r : rows) flat.insert(flat.end(), r.begin(), r.end());
  return flat;
}

// Rows of doubles (two words each): edge values and random ones.
inline std::vector<uint32_t> double_rows(uint32_t doubles, uint64_t seed, uint32_t random_rows = 48) {
  static const uint64_t edges[] = {0, 1ull, 0x000FFFFFFFFFFFFFull, 0x0010000000000000ull, 0x3FF0000000000000ull,
                                   0x3FF0000000000001ull, 0x4000000000000000ull, 0x7FEFFFFFFFFFFFFFull,
                                   0x7FF0000000000000ull, 0x7FF8000000000000ull, 0x400921FB54442D18ull,
                                   0x41E0000000000000ull, 0x3CA0000000000000ull};
  std::mt19937_64 rng(seed);
  std::vector<uint64_t> e;
  for (uint64_t x : edges) e.push_back(x), e.push_back(x | 0x8000000000000000ull);
  auto any = [&]() -> uint64_t {
    switch (rng() % 3) {
      case 0: return e[rng() % e.size()];
      case 1: return rng();
      default: return (rng() & 0x800FFFFFFFFFFFFFull) | (uint64_t(1000 + rng() % 48) << 52);
    }
  };
  std::vector<std::vector<uint64_t>> rows;
  for (uint64_t a : e)
    for (uint64_t b : e) {
      std::vector<uint64_t> r(doubles);
      r[0] = a;
      if (doubles > 1) r[1] = b;
      for (uint32_t i = 2; i < doubles; ++i) r[i] = any();
      rows.push_back(r);
    }
  std::shuffle(rows.begin(), rows.end(), rng);
  for (uint32_t k = 0; k < random_rows; ++k) {
    std::vector<uint64_t> r(doubles);
    for (auto& w : r) w = any();
    rows.push_back(r);
  }
  std::vector<uint32_t> flat;
  for (auto& r : rows)
    for (uint64_t d : r) flat.push_back(uint32_t(d)), flat.push_back(uint32_t(d >> 32));
  return flat;
}

// ---- coverage keys -----------------------------------------------------------

// What the table must cover: every machine operation (isa.h's Op, the
// native float operations of the interpreter's machine included), loads and
// stores in every space they exist in, every atomic function, every
// terminator.  A new Op, AtomOp, Space or Term has no case until one is
// added, and EveryMachineOpHasACase fails.
inline std::string key_of(machine::Op op) { return machine::op_info(op).name; }
inline std::string key_of(const machine::Instr& in) {
  using machine::Op;
  if (in.op == Op::LD || in.op == Op::ST) return std::string(key_of(in.op)) + "." + machine::space_name(in.space);
  if (in.op == Op::ATOM) return std::string("atom.") + machine::atom_info(in.atom).name;
  if (in.op == Op::ATOM64) return std::string("atom64.") + machine::atom_info(in.atom).name;
  return key_of(in.op);
}
inline std::string term_key(machine::Term t) {
  switch (t) {
    case machine::Term::JMP: return "term.jmp";
    case machine::Term::BR: return "term.br";
    case machine::Term::EXIT: return "term.exit";
    case machine::Term::BAR: return "term.bar";
    case machine::Term::WBAR: return "term.wbar";
    case machine::Term::TRAP: return "term.trap";
  }
  return "term.?";
}

inline std::vector<std::string> op_keys() {
  using namespace machine;
  std::vector<std::string> keys;
  for (int i = 0; i < kOpCount; ++i) {
    const Op op = Op(i);
    const OpInfo& info = op_info(op);
    if (info.kind == OpKind::Load || info.kind == OpKind::Store) {
      for (Space s : {Space::Global, Space::Shared, Space::Local, Space::Param, Space::Print}) {
        // Parameters are read-only; the print space is written only.
        if (info.kind == OpKind::Store && s == Space::Param) continue;
        if (info.kind == OpKind::Load && s == Space::Print) continue;
        keys.push_back(std::string(info.name) + "." + space_name(s));
      }
    } else if (info.kind == OpKind::Atomic) {
      for (int a = 0; a < kAtomOpCount; ++a)
        if (op == Op::ATOM || atom64_valid(AtomOp(a))) keys.push_back(std::string(info.name) + "." + atom_info(AtomOp(a)).name);
    } else {
      keys.push_back(info.name);
    }
  }
  for (Term t : {Term::JMP, Term::BR, Term::EXIT, Term::BAR, Term::WBAR, Term::TRAP}) keys.push_back(term_key(t));
  return keys;
}

// ---- kernels -----------------------------------------------------------------

constexpr uint64_t kGlobalBase = 0x10000000;
constexpr uint32_t kImageBytes = 64 * 1024;  // the most a case uses, within the model's global memory

inline std::string ld_in(const std::string& reg, uint32_t word, const std::string& type = "b32") {
  return "  ld.global." + type + " " + reg + ", [%rin+" + std::to_string(4 * word) + "];\n";
}
inline std::string st_out(const std::string& reg, uint32_t word, const std::string& type = "b32") {
  return "  st.global." + type + " [%rout+" + std::to_string(4 * word) + "], " + reg + ";\n";
}

inline std::string kernel_text(const Case& c, const Shape& s) {
  std::string t = ".version 8.5\n.target sm_75\n.address_size 64\n" + c.prelude +
                  ".visible .entry k(.param .u64 pin, .param .u64 pout, .param .u32 pn)\n{\n"
                  "  .reg .pred %p<16>;\n  .reg .pred %pdone;\n  .reg .b16 %h<8>;\n  .reg .b32 %r<64>;\n"
                  "  .reg .f32 %f<16>;\n  .reg .b64 %rd<64>;\n  .reg .f64 %fd<16>;\n  .reg .b32 %ti<8>;\n"
                  "  .reg .b64 %rin, %rout, %rbi, %rbo, %roff;\n" +
                  c.locals +
                  "  ld.param.u64 %rbi, [pin];\n  ld.param.u64 %rbo, [pout];\n  ld.param.u32 %ti4, [pn];\n"
                  "  cvta.to.global.u64 %rbi, %rbi;\n  cvta.to.global.u64 %rbo, %rbo;\n"
                  "  mov.u32 %ti1, %tid.x;\n  mov.u32 %ti2, %ctaid.x;\n  mov.u32 %ti3, %ntid.x;\n"
                  "  mad.lo.u32 %ti0, %ti2, %ti3, %ti1;\n  mov.u32 %ti5, %nctaid.x;\n  mul.lo.u32 %ti5, %ti5, %ti3;\n";
  const std::string in = std::to_string(4 * c.in_words), out = std::to_string(4 * c.out_words);
  std::string rows = "  mul.wide.u32 %roff, %ti0, " + in + ";\n  add.u64 %rin, %rbi, %roff;\n"
                     "  mul.wide.u32 %roff, %ti0, " + out + ";\n  add.u64 %rout, %rbo, %roff;\n";
  if (s.loop)
    t += "ROWS:\n  setp.ge.u32 %pdone, %ti0, %ti4;\n  @%pdone bra DONE;\n" + rows + c.body +
         "  add.u32 %ti0, %ti0, %ti5;\n  bra ROWS;\nDONE:\n  ret;\n}\n";
  else
    t += rows + c.body + "  ret;\n}\n";
  return t;
}

// ---- running -----------------------------------------------------------------

struct Outcome {
  int error = 0;
  std::string message, printf_output;
  std::vector<uint8_t> image;
  double seconds = 0;
  uint64_t generated_tokens = 0, prompt_tokens = 0;
};

// The same image for every backend: module variables, then the input and
// output arrays.
struct Launch {
  launch::LaunchRequest req;
  launch::GlobalMemory mem;
  uint64_t out = 0;
};

inline Launch prepare(const Case& c, const Shape& s) {
  const uint32_t rows = c.rows(s);
  machine::Params p = machine::default_params();
  p.global_bytes = kImageBytes;  // the image is as large as what is placed in it
  machine::ModuleImage img = machine::load_module(kernel_text(c, s), p);
  Launch l;
  const uint64_t in = img.alloc(std::max<uint32_t>(4, rows * c.in_words * 4));
  const size_t nin = std::min<size_t>(c.in.size(), size_t(rows) * c.in_words);
  std::memcpy(&img.mem.bytes[in - img.mem.base], c.in.data(), nin * 4);
  l.out = img.alloc(std::max<uint32_t>(4, rows * c.out_words * 4));
  l.req.ptx = img.ptx;
  l.req.kernel = "k";
  l.req.grid = s.grid;
  l.req.block = s.block;
  l.req.symbols = img.symbols;
  l.req.params.resize(20);
  std::memcpy(&l.req.params[0], &in, 8);
  std::memcpy(&l.req.params[8], &l.out, 8);
  std::memcpy(&l.req.params[16], &rows, 4);
  l.mem = std::move(img.mem);
  return l;
}

inline Outcome run_on(launch::Backend& b, const Case& c, const Shape& s) {
  Launch l = prepare(c, s);
  const auto t0 = std::chrono::steady_clock::now();
  launch::LaunchResult r = b.launch(l.req, l.mem);
  Outcome o;
  o.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  o.error = r.error;
  o.message = r.message;
  o.printf_output = r.printf_output;
  o.generated_tokens = r.stats.generated_tokens;
  o.prompt_tokens = r.stats.prompt_tokens;
  o.image.assign(l.mem.bytes.begin(), l.mem.bytes.end());
  return o;
}

// The first difference between a backend's outcome and the reference's,
// named by output word (row and word within the row); empty when equal.
inline std::string difference(const Case& c, const Shape& s, const Outcome& got, const Outcome& ref) {
  if (got.error != ref.error)
    return "error " + std::to_string(got.error) + " (" + got.message + "), the reference " + std::to_string(ref.error) +
           " (" + ref.message + ")";
  // A launch that fails keeps the writes committed before the fault, which
  // depend on how many threads run together (docs/isa.md section 10): only
  // the error is compared.
  if (ref.error != 0) return "";
  if (got.printf_output != ref.printf_output)
    return "printf output\n" + got.printf_output + "\nthe reference's\n" + ref.printf_output;
  if (got.image.size() != ref.image.size()) return "image sizes differ";
  const Launch l = prepare(c, s);
  const uint64_t out_off = l.out - kGlobalBase;
  for (size_t i = 0; i + 4 <= got.image.size(); i += 4) {
    uint32_t g, r;
    std::memcpy(&g, &got.image[i], 4);
    std::memcpy(&r, &ref.image[i], 4);
    if (g == r) continue;
    char buf[160];
    std::string where;
    if (i >= out_off && c.out_words) {
      const uint64_t w = (i - out_off) / 4;
      where = "output row " + std::to_string(w / c.out_words) + " word " + std::to_string(w % c.out_words);
      const uint64_t row = w / c.out_words;
      if ((row + 1) * c.in_words <= c.in.size()) {
        where += " (input";
        for (uint32_t k = 0; k < c.in_words; ++k) {
          std::snprintf(buf, sizeof buf, " 0x%08x", c.in[row * c.in_words + k]);
          where += buf;
        }
        where += ")";
      }
    } else {
      std::snprintf(buf, sizeof buf, "global byte 0x%zx", i);
      where = buf;
    }
    std::snprintf(buf, sizeof buf, ": got 0x%08x, the reference 0x%08x", g, r);
    return where + buf;
  }
  return "";
}

// Runs `c` on `b` and holds it to the reference's outcome `ref`: equal, or
// the backend's documented refusal (and then nothing else).
inline Outcome check_backend(launch::Backend& b, const Case& c, const Shape& s, const Outcome& ref,
                             std::map<std::string, double>& seconds) {
  SCOPED_TRACE(b.name());
  Outcome got = run_on(b, c, s);
  seconds[b.name()] += got.seconds;
  auto refusal = c.refusals.find(b.name());
  if (refusal != c.refusals.end()) {
    EXPECT_EQ(got.error, refusal->second.error) << c.name << " on " << b.name() << ": not its documented refusal: "
                                                << got.message;
    EXPECT_NE(got.message.find(refusal->second.words), std::string::npos)
        << c.name << " on " << b.name() << ": the refusal does not name '" << refusal->second.words
        << "': " << got.message;
    return got;
  }
  const std::string diff = difference(c, s, got, ref);
  EXPECT_TRUE(diff.empty()) << c.name << " on " << b.name() << " disagrees with ptx-reference: " << diff;
  return got;
}

// Runs the reference and checks the case's own expectations of it.
inline Outcome run_reference(launch::Backend& ref, const Case& c, const Shape& s,
                             std::map<std::string, double>& seconds) {
  Outcome o = run_on(ref, c, s);
  seconds[ref.name()] += o.seconds;
  EXPECT_EQ(o.error, c.error) << c.name << " on ptx-reference: " << o.message;
  return o;
}

// The machine operations the case's kernel lowers to on the interpreter's
// machine (the CUDA-sized device's).
inline std::set<std::string> lowered_keys(const Case& c) {
  const std::string ptx = kernel_text(c, c.shape);
  machine::Params p = machine::cuda_params(kImageBytes);
  machine::ModuleImage img = machine::load_module(ptx, p);
  machine::LaunchShape shape{c.shape.grid, c.shape.block, 0, img.symbols};
  machine::Program prog =
      machine::lower(img.module, "k", shape, p, {.native_float = p.native_float});
  std::set<std::string> keys;
  for (const machine::Block& b : prog.blocks) {
    for (const machine::Instr& in : b.instrs) keys.insert(key_of(in));
    keys.insert(term_key(b.term.kind));
  }
  return keys;
}

const std::vector<Case>& cases();

}  // namespace qgpu::opstable
