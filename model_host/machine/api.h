// The machine as the rest of model_host sees it: its devices (what device
// queries report and what the daemon enforces), the module front end, and the
// reference-interpreter backend.  Implemented in model_host/machine and
// model_host/ptx; the parameters themselves are defined once, in the machine
// definition, and read from there.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "model_host/launch/launch.h"
#include "model_host/machine/isa.h"

namespace qgpu::machine {

// The machine's ISA (lanes, registers, block length, ROM) is Params'; the
// sizes of the device it runs as belong to the backend.  Two devices exist:
//
//  - the model's device (model_params(): 256 KiB of global memory by
//    default, 1024 threads per CTA sharing 8,192 registers, 65,535 CTAs per launch, 4 KiB of
//    parameters, ...), the one the compiled checkpoint holds, run by the
//    model, model-trace and interpreter-model backends;
//  - the CUDA-sized device of the "interpreter" backend (cuda_params()):
//    2 GiB of global memory by default, lazily backed, 1024 threads per
//    CTA, CUDA's grid limits, 48 KiB of static shared memory (64 KiB after
//    opting in), 32,764 bytes of parameters, 64 KiB of __constant__, a
//    1 MiB printf FIFO and an 8 MiB device heap; its machine has 32 lanes
//    (one machine warp per CUDA warp), a ROM of 2^20 blocks and the native
//    float operations (Params::native_float).
//
// device_spec() describes a Params' device for queries and the daemon.

// The interpreter's device with `global_bytes` of global memory (at most
// kMaxDeviceMemory: device addresses are 32-bit).
constexpr uint64_t kDefaultDeviceMemory = 2ull << 30;
constexpr uint64_t kMaxDeviceMemory = 0x100000000ull - 0x10000000ull;
Params cuda_params(uint64_t global_bytes = kDefaultDeviceMemory);

// CUDA's per-launch limits that the machine's Params do not carry.
constexpr uint32_t kCudaStaticSharedBytes = 48 * 1024;
constexpr uint32_t kCudaOptinSharedBytes = 64 * 1024;
constexpr uint32_t kCudaConstBytes = 64 * 1024;
constexpr uint64_t kCudaPrintfFifoBytes = 1 << 20;
constexpr uint64_t kCudaHeapBytes = 8 << 20;

// The model's device and the interpreter's.
launch::DeviceSpec model_device();
launch::DeviceSpec interpreter_device(uint64_t global_bytes = kDefaultDeviceMemory);

// Parses "2G", "512M", "64K" or a byte count; throws std::invalid_argument
// naming the text and the allowed range.
uint64_t parse_device_memory(const std::string& text);
// $QGPU_DEVICE_MEMORY when set, else kDefaultDeviceMemory.
uint64_t default_device_memory();

// Parses a PTX module and reports its variables and kernel signatures.
// Throws std::runtime_error naming the line on malformed PTX.
launch::ModuleInfo inspect_module(const std::string& ptx);

}  // namespace qgpu::machine
