// The machine as the rest of model_host sees it (api.h): its devices (the
// CUDA-sized one the interpreter backend runs and the model's, as device
// queries report them and the daemon enforces them) and module inspection.
#include <algorithm>
#include <cstdlib>
#include <stdexcept>
#include <string>

#include "model_host/machine/api.h"
#include "model_host/machine/interpreter.h"
#include "model_host/ptx/layout.h"
#include "model_host/ptx/parse.h"

namespace qgpu::machine {

Params cuda_params(uint64_t global_bytes) {
  if (global_bytes < 4096 || global_bytes > kMaxDeviceMemory)
    throw std::invalid_argument("device memory of " + std::to_string(global_bytes) + " bytes: the machine takes 4096 to " +
                                std::to_string(kMaxDeviceMemory) + " (device addresses are 32-bit)");
  Params p = default_params();  // the ISA: registers, block length (lanes and ROM below)
  p.global_bytes = uint32_t(global_bytes);
  // The opt-in ceiling plus the lowering's scratch area (shuffles, votes)
  // and matrix areas (wmma.mma, 1,280 bytes a warp) for 32 CUDA warps.
  p.shared_bytes = kCudaOptinSharedBytes + 8 * 1024 + 40 * 1024;
  p.local_bytes = 512 * 1024;  // CUDA's most per thread; a CTA holds what its kernel uses
  p.local_store_bytes = 0;
  p.param_bytes = 32764;
  p.print_bytes = uint32_t(kCudaPrintfFifoBytes);
  p.max_threads = 1024;
  p.max_ctas = UINT32_MAX;  // the CTA register is 32-bit
  // A CUDA program's code: library kernels (CUB's radix sort) lower to
  // thousands of blocks.
  p.rom_blocks = 1u << 20;
  // One machine warp per CUDA warp: each EXEC runs 32 threads, so a warp's
  // per-block costs (choosing it, its terminator, its next block) are paid
  // once instead of four times, and warp operations need no warp barrier
  // between machine warps.
  p.lanes = Params::kCudaWarp;
  // Floating point as native float operations (isa.h, OpKind::Float).
  p.native_float = true;
  p.native_mma = true;
  // CUDA's most registers per thread: large kernels (CUB's radix sort,
  // texture fetches, f64 sequences) keep their values in registers instead
  // of spilling them to local memory through the reload registers.
  p.regs = 255;
  // Blocks of up to 64 instructions: a CUDA warp's per-EXEC costs
  // (choosing the warp, the terminator, entering compiled code) are paid
  // once per 64 instructions of straight-line code instead of once per 16.
  p.block_instrs = 64;
  return p;
}

namespace {

launch::DeviceSpec spec_of(const Params& p) {
  launch::DeviceSpec d;
  d.lanes = p.lanes;
  d.warp_size = Params::kCudaWarp;
  d.registers = p.regs;
  d.register_file = p.register_rows;
  d.rom_blocks = p.rom_blocks;
  d.global_base = p.global_base;
  d.global_bytes = p.global_bytes;
  d.max_threads_per_cta = p.max_threads;
  d.max_block[0] = d.max_block[1] = p.max_threads;
  d.max_block[2] = std::min<uint32_t>(p.max_threads, 64);
  d.max_ctas_per_grid = p.max_ctas;
  d.max_grid[0] = d.max_grid[1] = d.max_grid[2] = p.max_ctas;
  d.shared_bytes_per_cta = d.shared_optin_bytes_per_cta = p.shared_bytes;
  d.param_bytes = p.param_bytes;
  d.const_bytes = p.global_bytes;  // __constant__ variables live in global memory
  d.local_bytes_per_thread = p.local_store_bytes ? p.local_bytes_for(p.max_threads) : p.local_bytes;
  d.printf_fifo_bytes = p.print_bytes;
  // An L2 in proportion to the memory, as GPUs have: 1/64 of it (a power of
  // two), at most 4 MiB (a compute capability 7.5 GPU's); three quarters of
  // it may persist, and one access-policy window spans at most 128 MiB (or
  // the whole memory).  The machine has no cache: these are
  // the figures the device queries report, and the hints that use them
  // change no result.
  uint64_t l2 = 1;
  while (l2 * 2 <= std::max<uint64_t>(p.global_bytes / 64, 1) && l2 < (4u << 20)) l2 *= 2;
  d.l2_bytes = uint32_t(l2);
  d.persisting_l2_max_bytes = uint32_t(l2 / 4 * 3);
  d.access_policy_max_window_bytes = uint32_t(std::min<uint64_t>(p.global_bytes, 128u << 20));
  return d;
}

}  // namespace

launch::DeviceSpec model_device() {
  launch::DeviceSpec d = spec_of(model_params());
  d.name = "qgpu (Qwen3.5 model)";
  // The model's lowering keeps the clock as a count of the thread's
  // instructions (docs/isa.md), which the model runs at about a thousand a
  // second: 1 kHz.
  d.clock_khz = 1;
  // CUDA's 48 KiB without opting in; opting in reaches the machine's 64 KiB
  // less 8 KiB that the lowering's scratch area may take (32 CUDA warps).
  d.shared_bytes_per_cta = kCudaStaticSharedBytes;
  d.shared_optin_bytes_per_cta = model_params().shared_bytes - 8 * 1024;
  d.larger = d.more_memory =
      "run it with --backend interpreter (the reference machine as a CUDA-sized device: qgpu run --backend "
      "interpreter, or QGPU_BACKEND=interpreter)";
  if (d.global_bytes < kModelMaxGlobalBytes)   // a larger model can be built (qgpu build-model --global-kib)
    d.more_memory = "build the model with more (qgpu build-model --out DIR --global-kib " +
                    std::to_string(kModelMaxGlobalBytes >> 10) + ", then --model DIR), or " + d.more_memory;
  return d;
}

launch::DeviceSpec interpreter_device(uint64_t global_bytes) {
  const Params p = cuda_params(global_bytes);
  launch::DeviceSpec d = spec_of(p);
  d.name = "qgpu (interpreter)";
  d.max_grid[0] = 0x7fffffff;
  d.max_grid[1] = d.max_grid[2] = 65535;
  d.shared_bytes_per_cta = kCudaStaticSharedBytes;
  d.shared_optin_bytes_per_cta = kCudaOptinSharedBytes;
  d.const_bytes = kCudaConstBytes;
  d.heap_bytes = kCudaHeapBytes;
  d.limits_settable = true;
  // The CTAs of a launch run on Interpreter::cta_threads() host threads
  // (docs/isa.md, 5), each thread a multiprocessor holding one block: a
  // cooperative launch's grid, every block of which must be resident at
  // once, is at most that many blocks, as the occupancy calls and the
  // multiprocessor count report.
  d.cooperative_ctas = Interpreter::cta_threads();
  d.more_memory = global_bytes < kMaxDeviceMemory
                 ? "give the device more memory with model_host --device-memory / qgpu run --device-memory "
                   "(or QGPU_DEVICE_MEMORY), up to " + std::to_string(kMaxDeviceMemory >> 20) + " MiB"
                 : "";
  return d;
}

uint64_t parse_device_memory(const std::string& text) {
  size_t used = 0;
  uint64_t v = 0;
  try {
    v = std::stoull(text, &used, 10);
  } catch (const std::exception&) {
    used = 0;
  }
  uint64_t unit = 1;
  std::string rest = text.substr(used);
  if (rest == "K" || rest == "k" || rest == "KiB") unit = 1ull << 10;
  else if (rest == "M" || rest == "m" || rest == "MiB") unit = 1ull << 20;
  else if (rest == "G" || rest == "g" || rest == "GiB") unit = 1ull << 30;
  else if (!rest.empty()) used = 0;
  if (used == 0 || v == 0 || v > kMaxDeviceMemory / unit || v * unit < 4096 || v * unit > kMaxDeviceMemory)
    throw std::invalid_argument("device memory '" + text + "': give bytes or a size such as 512M or 2G, from 4K to " +
                                std::to_string(kMaxDeviceMemory >> 20) + "M (device addresses are 32-bit)");
  return v * unit;
}

uint64_t default_device_memory() {
  const char* env = std::getenv("QGPU_DEVICE_MEMORY");
  if (!env || !*env) return kDefaultDeviceMemory;
  try {
    return parse_device_memory(env);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(std::string("QGPU_DEVICE_MEMORY: ") + e.what());
  }
}

launch::ModuleInfo inspect_module(const std::string& ptx_text) { return ptx::module_info(ptx::parse(ptx_text)); }

}  // namespace qgpu::machine
