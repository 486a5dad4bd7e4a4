// bench_interp: how fast the reference interpreter runs, in lane-instructions
// per second (one lane executing one machine instruction), on kernels that
// stress its parts: ALU chains, shared memory and barriers, many small CTAs,
// divergence, memory.  Each kernel is lowered once for the CUDA-sized device
// and run to completion; `--record` also runs it through step() with a
// StepRecord per EXEC (the path the model's trace checks use).  Rates are
// over this thread's CPU time.  Appends one line per kernel to --out
// (tab-separated: time, label, then the printed columns) and prints them.
// `--lanes 8,32` runs every kernel on machines of those lane counts (the same
// launch, lowered for each) and prints how much faster each runs than the first.
// `--softfloat` also runs each kernel with floating point lowered to integer
// sequences (as for a machine without native floats) and prints the ratio.
// The last two columns are the blocks the JIT compiled during the launch and
// the seconds it took (model_host/machine/README.md, "JIT"); `--runs 2` runs
// each launch twice, the second with the blocks compiled.  Compare
// QGPU_JIT=0 with QGPU_JIT=always (or the default threshold) in one
// farm-bench pairing.
#include <CLI/CLI.hpp>
#include <chrono>
#include <cstring>
#include <ctime>
#include <time.h>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <sstream>

#include "build_paths.h"  // qgpu_paths() in CMakeLists.txt
#include "model_host/machine/api.h"
#include "model_host/machine/image.h"
#include "model_host/machine/interpreter.h"
#include "model_host/machine/jit.h"
#include "model_host/lower/lower.h"

using namespace qgpu;
using namespace qgpu::machine;

namespace {

struct Case {
  std::string name, kernel;
  launch::Dim3 grid, block;
  // Fills the image and returns the parameter buffer.
  std::function<std::vector<uint8_t>(ModuleImage&)> setup;
};

template <class... T>
std::vector<uint8_t> pack(T... v) {
  std::vector<uint8_t> out;
  auto put = [&](auto x) {
    size_t a = sizeof x;
    out.resize((out.size() + a - 1) / a * a);
    size_t at = out.size();
    out.resize(at + sizeof x);
    std::memcpy(out.data() + at, &x, sizeof x);
  };
  (put(v), ...);
  return out;
}

uint64_t filled(ModuleImage& img, uint32_t n, uint32_t seed) {
  uint64_t a = img.alloc(n * 4ull);
  uint32_t x = seed;
  for (uint32_t i = 0; i < n; ++i) {
    x = x * 1664525u + 1013904223u;
    uint32_t v = (x >> 8) % 100000 + 2;
    std::memcpy(&img.mem.bytes[a - img.mem.base + 4ull * i], &v, 4);
  }
  return a;
}

// n floats in [0, 16) (multiples of 1/256).
uint64_t small_floats(ModuleImage& img, uint32_t n, uint32_t seed) {
  uint64_t a = img.alloc(n * 4ull);
  uint32_t x = seed;
  for (uint32_t i = 0; i < n; ++i) {
    x = x * 1664525u + 1013904223u;
    const float v = float((x >> 8) % 4096) / 256.0f;
    std::memcpy(&img.mem.bytes[a - img.mem.base + 4ull * i], &v, 4);
  }
  return a;
}

// This thread's CPU time: the rates hold on a busy machine too.
double cpu_seconds() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"bench_interp: the reference interpreter's lane-instructions per second"};
  std::string out_file, label = "run", only;
  bool record = false;
  double scale = 1.0;
  app.add_option("--out", out_file, "append the results to this file (tab-separated)");
  app.add_option("--label", label, "the results' label (e.g. before/after)")->capture_default_str();
  app.add_option("--only", only, "run only the kernel of this name");
  app.add_option("--scale", scale, "multiply the work of every kernel")->capture_default_str();
  app.add_flag("--record", record, "also run step() with a StepRecord per EXEC");
  int runs = 1;
  app.add_option("--runs", runs,
                 "run each launch this many times (the first compiles the hot blocks when the JIT is on, the "
                 "later ones find them compiled: QGPU_JIT, model_host/machine/README.md)")
      ->capture_default_str();
  bool softfloat = false;
  app.add_flag("--softfloat", softfloat,
               "also run every kernel lowered with floating point as integer sequences (how machines without "
               "native floats run it) and print how much faster the native float operations run the launch");
  std::vector<uint32_t> lanes_list;
  app.add_option("--lanes", lanes_list,
                 "machine lanes to run each kernel with (several: the same work on each, then the ratios of "
                 "CPU seconds to the first); default: the CUDA-sized device's");
  CLI11_PARSE(app, argc, argv);

  std::ifstream in(QGPU_BENCH_INTERP_PTX);
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string ptx = ss.str();
  const Params device = cuda_params(256u << 20);
  if (lanes_list.empty()) lanes_list.push_back(device.lanes);
  for (uint32_t l : lanes_list)
    if (l == 0 || l > 64 || Params::kCudaWarp % l != 0) {
      std::cerr << "--lanes: " << l << " does not divide 32\n";
      return 2;
    }

  auto n_of = [&](uint32_t n) { return uint32_t(std::max(1.0, n * scale)); };
  std::vector<Case> cases = {
      {"alu_chain", "_Z9alu_chainPKjPji", {n_of(64), 1, 1}, {256, 1, 1},
       [&](ModuleImage& img) {
         uint32_t n = n_of(64) * 256;
         return pack(filled(img, n, 1), img.alloc(n * 4ull), int32_t(64));
       }},
      {"block_reduce", "_Z12block_reducePKiPi", {n_of(64), 1, 1}, {1024, 1, 1},
       [&](ModuleImage& img) {
         uint32_t n = n_of(64) * 1024;
         return pack(filled(img, n, 2), img.alloc(n_of(64) * 4ull));
       }},
      {"tiny_ctas", "_Z9tiny_ctasPKiPii", {n_of(100000), 1, 1}, {32, 1, 1},
       [&](ModuleImage& img) {
         uint32_t n = n_of(100000) * 32;
         return pack(filled(img, n, 3), img.alloc(n * 4ull), int32_t(n));
       }},
      {"collatz", "_Z7collatzPKjPj", {n_of(16), 1, 1}, {256, 1, 1},
       [&](ModuleImage& img) {
         uint32_t n = n_of(16) * 256;
         return pack(filled(img, n, 4), img.alloc(n * 4ull));
       }},
      {"stride_copy", "_Z11stride_copyPKiPii", {n_of(32), 1, 1}, {256, 1, 1},
       [&](ModuleImage& img) {
         uint32_t n = n_of(1u << 20);
         return pack(filled(img, n, 5), img.alloc(n * 4ull), int32_t(n));
       }},
      {"short_blocks", "_Z12short_blocksPiPKii", {n_of(64), 1, 1}, {512, 1, 1},
       [&](ModuleImage& img) {
         uint32_t n = n_of(64) * 512;
         return pack(filled(img, n, 6), filled(img, 1, 7), int32_t(16));
       }},
      {"bitonic_shared", "_Z14bitonic_sharedPj", {n_of(16), 1, 1}, {512, 1, 1},
       [&](ModuleImage& img) { return pack(filled(img, n_of(16) * 1024, 8)); }},
      {"shared_histogram", "_Z16shared_histogramPKjPji", {n_of(32), 1, 1}, {256, 1, 1},
       [&](ModuleImage& img) {
         uint32_t n = n_of(32) * 256;
         return pack(filled(img, n * 16, 9), img.alloc(64 * 4ull), int32_t(16));
       }},
      {"warp_scan", "_Z9warp_scanPKjPj", {n_of(256), 1, 1}, {256, 1, 1},
       [&](ModuleImage& img) {
         uint32_t n = n_of(256) * 256;
         return pack(filled(img, n, 10), img.alloc(n * 4ull));
       }},
      {"float_tile", "_Z10float_tilePKfS0_Pfi", {n_of(64), 1, 1}, {256, 1, 1},
       [&](ModuleImage& img) {
         const uint32_t tiles = 8, n = n_of(64) * tiles * 256;
         return pack(small_floats(img, n, 11), small_floats(img, tiles * 256, 12), img.alloc(n_of(64) * 256 * 4ull),
                     int32_t(tiles));
       }},
  };

  std::ofstream out;
  if (!out_file.empty()) out.open(out_file, std::ios::app);
  char when[32];
  std::time_t now = std::time(nullptr);
  std::strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%S", std::gmtime(&now));
  std::cout << "kernel\tpath\tgrid x block\tEXECs\tlane-instructions\tCPU seconds\tM lane-instructions/s\tlanes\tJIT blocks\tJIT seconds\n";
  std::vector<std::string> ratios;
  for (const Case& c : cases) {
    if (!only.empty() && c.name != only) continue;
    std::vector<double> run_secs, soft_secs;
    for (uint32_t lanes : lanes_list) {
    Params params = device;
    params.lanes = lanes;
    ModuleImage img = load_module(ptx, params);
    std::vector<uint8_t> args = c.setup(img);
    for (int soft = softfloat ? 1 : 0; soft >= 0; --soft) {
    const Program prog = lower(img.module, c.kernel, {c.grid, c.block, 0, img.symbols}, params,
                               {.native_float = !soft});
    for (int pass = 0; pass < (record ? runs + 1 : runs); ++pass) {
      launch::GlobalMemory mem = img.mem;
      Interpreter interp(prog, params, prog.ctas, prog.threads, args, mem);
      const jit::Counters j0 = jit::counters();
      const double c0 = cpu_seconds();
      if (pass < runs) {
        interp.run();
      } else {
        StepRecord rec;
        while (interp.step(&rec)) {
        }
      }
      double secs = cpu_seconds() - c0;
      if (interp.fault().error) {
        std::cerr << c.name << ": " << interp.fault().message << "\n";
        return 1;
      }
      const InterpStats& st = interp.stats();
      std::ostringstream line;
      line << c.name << '\t' << (pass < runs ? "run" : "step+record") << (soft ? " (softfloat)" : "") << '\t' << c.grid.count() << 'x' << c.block.count()
           << '\t' << st.steps << '\t' << st.lane_instructions << '\t' << std::fixed << std::setprecision(3) << secs
           << '\t' << std::setprecision(1) << st.lane_instructions / secs / 1e6 << '\t' << lanes << '\t'
           << jit::counters().compiled - j0.compiled << '\t' << std::setprecision(3)
           << jit::counters().seconds - j0.seconds;
      std::cout << line.str() << "\n";
      if (out) out << when << '\t' << label << '\t' << line.str() << '\n';
      if (pass == runs - 1) (soft ? soft_secs : run_secs).push_back(secs);
    }
    }
    }
    for (size_t i = 0; i < soft_secs.size(); ++i) {
      std::ostringstream r;
      r << c.name << ": native floats run the launch " << std::fixed << std::setprecision(2)
        << soft_secs[i] / run_secs[i] << "x as fast as integer sequences (" << lanes_list[i] << " lanes)";
      ratios.push_back(r.str());
    }
    for (size_t i = 1; i < run_secs.size(); ++i) {
      std::ostringstream r;
      r << c.name << ": " << lanes_list[i] << " lanes run the launch " << std::fixed << std::setprecision(2)
        << run_secs[0] / run_secs[i] << "x as fast as " << lanes_list[0];
      ratios.push_back(r.str());
    }
  }
  for (const std::string& r : ratios) std::cout << r << "\n";
  return 0;
}
