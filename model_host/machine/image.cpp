#include "model_host/machine/image.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "model_host/launch/module.h"
#include "model_host/ptx/layout.h"
#include "model_host/ptx/parse.h"

namespace qgpu::machine {

uint64_t ModuleImage::alloc(uint32_t bytes) {
  size_t at = (mem.bytes.size() + 255) / 256 * 256;
  if (at + bytes > mem.bytes.capacity())
    throw std::length_error("global memory exhausted: " + std::to_string(at + bytes) + " bytes needed, " +
                            std::to_string(mem.bytes.capacity()) + " available");
  mem.bytes.resize(at + bytes, 0);
  return mem.base + at;
}

// The daemon's loader (launch::place_module over ptx::module_info), with a
// bump allocator from the global base.
ModuleImage load_module(std::string ptx_text, const Params& p) {
  ModuleImage img;
  img.ptx = std::move(ptx_text);
  img.module = ptx::parse(img.ptx);
  img.mem.base = p.global_base;
  img.mem.bytes.reserve(p.global_bytes);
  launch::ModuleMemory memory;
  memory.allocate = [&](uint64_t size, uint32_t align) -> std::optional<uint64_t> {
    const uint64_t at = (img.mem.bytes.size() + align - 1) / align * align;
    if (at + size > p.global_bytes) return std::nullopt;
    img.mem.bytes.resize(at + size, 0);
    return img.mem.base + at;
  };
  memory.release = [](uint64_t) {};
  memory.write = [&](uint64_t addr, const uint8_t* bytes, uint64_t size) {
    std::memcpy(img.mem.bytes.data() + (addr - img.mem.base), bytes, size);
  };
  launch::PlacedModule placed = launch::place_module(ptx::module_info(img.module), memory);
  if (!placed) {
    if (placed.error == launch::kMemoryAllocation) throw std::length_error(placed.message);
    throw std::invalid_argument(placed.message);
  }
  img.symbols = std::move(placed.symbols);
  return img;
}

std::string ptx_of_file(const std::string& path) {
  std::string file = path;
  std::string tmp;
  if (path.size() > 3 && path.compare(path.size() - 3, 3, ".cu") == 0) {
    char name[] = "/tmp/qgpu-ptx-XXXXXX";
    int fd = mkstemp(name);
    if (fd < 0) throw std::runtime_error("cannot create a temporary file");
    close(fd);
    tmp = name;
    std::string cmd = "/usr/local/cuda/bin/nvcc -ptx -arch=sm_75 -o " + tmp + " '" + path + "'";
    if (std::system(cmd.c_str()) != 0) {
      std::remove(tmp.c_str());
      throw std::runtime_error("nvcc failed on " + path);
    }
    file = tmp;
  }
  std::ifstream in(file);
  if (!in) throw std::runtime_error("cannot read " + file);
  std::stringstream ss;
  ss << in.rdbuf();
  if (!tmp.empty()) std::remove(tmp.c_str());
  return ss.str();
}

}  // namespace qgpu::machine
