#include "model_host/machine/image.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>

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

ModuleImage load_module(std::string ptx_text, const Params& p) {
  ModuleImage img;
  img.ptx = std::move(ptx_text);
  img.module = ptx::parse(img.ptx);
  img.mem.base = p.global_base;
  img.mem.bytes.reserve(p.global_bytes);
  for (const ptx::Var& v : img.module.vars) {
    if (v.space != ptx::Space::Global && v.space != ptx::Space::Const) continue;
    uint32_t align = std::max<uint32_t>(v.align, 1);
    size_t at = (img.mem.bytes.size() + align - 1) / align * align;
    if (at + v.size > p.global_bytes)
      throw std::length_error("module variable " + v.name + " does not fit in global memory");
    img.mem.bytes.resize(at + v.size, 0);
    std::memcpy(img.mem.bytes.data() + at, v.init.data(), std::min<size_t>(v.init.size(), v.size));
    img.symbols[v.name] = img.mem.base + at;
  }
  for (const ptx::Var& v : img.module.vars)
    for (const auto& r : v.relocs) {
      auto self = img.symbols.find(v.name), target = img.symbols.find(r.symbol);
      auto function = img.module.function_index(r.symbol);
      if (self == img.symbols.end() || (target == img.symbols.end() && !function)) continue;
      uint64_t value = (function ? ptx::function_address(*function) : target->second) + uint64_t(r.addend);
      std::memcpy(img.mem.bytes.data() + (self->second - img.mem.base) + r.offset, &value,
                  std::min<uint32_t>(r.size, 8));
    }
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
