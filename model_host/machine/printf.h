// Device printf (docs/isa.md, "printf and assert").
//
// The lowering turns a vprintf call into a record appended to the launch's
// print space: word 0 of the space counts the bytes of records written after
// it; a record is [format address][argument bytes n][n bytes, padded to 4].
// The argument bytes are the vprintf argument buffer as the program laid it
// out; the backend formats the records after the launch, reading the format
// string (and %s strings) from global memory.  Assertion records are
// formatted as CUDA prints a failed device assertion.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "model_host/launch/launch.h"

namespace qgpu::machine {

// The format address of an assertion record: its words are the message,
// file, line and function of __assertfail, then ctaid.xyz and tid.xyz.
inline constexpr uint32_t kAssertRecord = 0xFFFFFFFFu;

// Size in bytes of the vprintf argument buffer that `fmt` consumes (each
// argument aligned to its size, as nvcc lays it out).  Throws
// std::invalid_argument for a conversion the machine cannot format.
uint32_t printf_arg_bytes(std::string_view fmt);
// The number of arguments `fmt` consumes: what printf returns (CUDA's printf
// returns the number of arguments parsed).
uint32_t printf_arg_count(std::string_view fmt);

// Formats every record of a print space.
std::string format_prints(const std::vector<uint8_t>& print_space, const launch::GlobalMemory& mem);

}  // namespace qgpu::machine
