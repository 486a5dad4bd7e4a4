// Fatbinaries as nvcc embeds them in host programs, parsed in process.
//
// A program registers a wrapper (fatbinary_section.h's __fatBinC_Wrapper_t):
// version 1 points at one fatbinary; version 2 (-rdc) points at the linked
// device code and, through filename_or_fatbins, at a NULL-terminated array of
// the relocatable fatbinaries of each translation unit, which hold the PTX.
// A fatbinary is a 16-byte header followed by entries (PTX text or ELF
// cubins), each with its own header and a payload that may be compressed
// with zstd or the LZ4 block format.
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace qgpu::fatbin {

struct FatbinError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

constexpr uint32_t kWrapperMagic = 0x466243B1;  // FATBINC_MAGIC
constexpr uint32_t kFatbinMagic = 0xBA55ED50;

enum class Kind : uint16_t { Ptx = 1, Elf = 2 };

// Entry flags (the 64-bit field at entry offset 40).
constexpr uint64_t kFlagCompressedLz4 = 0x2000;
constexpr uint64_t kFlagCompressedZstd = 0x8000;

struct Entry {
  Kind kind = Kind::Ptx;
  uint32_t arch = 0;         // sm_XX as XX
  uint32_t major = 0, minor = 0;  // PTX ISA version of a PTX entry
  uint64_t flags = 0;
  std::string payload;       // decompressed; PTX text without trailing NULs
};

struct Fatbin {
  std::vector<Entry> entries;
  // The PTX entry to run on a device of compute capability `arch`: the
  // newest one not above it, else the oldest one; null when there is none.
  const Entry* best_ptx(uint32_t arch) const;
};

// Parses one fatbinary.  `limit` bounds how far it may read (the size of the
// buffer when known).  Throws FatbinError naming what is wrong.
Fatbin parse(const void* data, size_t limit);

// The size a fatbinary declares in its header (header included).
size_t declared_size(const void* data);

// What a registered wrapper holds: one Fatbin per translation unit that
// carries PTX (version 2), or the single fatbinary (version 1).
struct Wrapper {
  uint32_t version = 0;
  std::vector<Fatbin> units;
};
Wrapper parse_wrapper(const void* wrapper);

}  // namespace qgpu::fatbin
