// The "CUBIN" qgpu's NVRTC hands out (nvrtcGetCUBIN): there is no machine
// code for a real GPU, so the container carries the PTX, which qgpu's driver
// API (cuModuleLoadData and friends) recognises by its magic and loads.
//
// Layout, little-endian: 8-byte magic, u32 format version, u32 PTX byte count
// (excluding the terminating NUL), u32 compute capability * 10, u32 reserved
// (0), then the PTX text and a NUL.
#pragma once

#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>

namespace qgpu::rtc_cubin {

inline constexpr char kMagic[8] = {'\x7f', 'Q', 'G', 'P', 'U', 'P', 'T', 'X'};
inline constexpr uint32_t kVersion = 1;
inline constexpr size_t kHeaderBytes = 24;

inline std::string wrap(std::string_view ptx, uint32_t arch) {
  std::string out(kHeaderBytes, '\0');
  std::memcpy(out.data(), kMagic, sizeof kMagic);
  const uint32_t fields[4] = {kVersion, static_cast<uint32_t>(ptx.size()), arch, 0};
  std::memcpy(out.data() + sizeof kMagic, fields, sizeof fields);
  out.append(ptx);
  out.push_back('\0');
  return out;
}

// The PTX inside a container image, or nothing when `image` is not one.
inline std::optional<std::string_view> unwrap(const void* image) {
  const char* p = static_cast<const char*>(image);
  if (std::memcmp(p, kMagic, sizeof kMagic) != 0) return std::nullopt;
  uint32_t fields[4];
  std::memcpy(fields, p + sizeof kMagic, sizeof fields);
  if (fields[0] != kVersion) return std::nullopt;
  return std::string_view(p + kHeaderBytes, fields[1]);
}

}  // namespace qgpu::rtc_cubin
