// Reads named sections of an ELF64 file: how the tests find the fatbinaries
// nvcc embedded in a program without running it.
#pragma once

#include <elf.h>

#include <cstring>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <vector>

namespace qgpu::test {

struct ElfFile {
  std::vector<char> bytes;
  explicit ElfFile(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw std::runtime_error("cannot read " + path);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
    if (bytes.size() < sizeof(Elf64_Ehdr) || std::memcmp(bytes.data(), ELFMAG, SELFMAG) != 0)
      throw std::runtime_error(path + " is not an ELF file");
  }
  // Offset and size of the section `name` in the file; size 0 when absent.
  std::pair<size_t, size_t> section(const std::string& name) const {
    auto* eh = reinterpret_cast<const Elf64_Ehdr*>(bytes.data());
    auto* sh = reinterpret_cast<const Elf64_Shdr*>(bytes.data() + eh->e_shoff);
    const char* names = bytes.data() + sh[eh->e_shstrndx].sh_offset;
    for (int i = 0; i < eh->e_shnum; ++i)
      if (name == names + sh[i].sh_name) return {sh[i].sh_offset, sh[i].sh_size};
    return {0, 0};
  }
};

}  // namespace qgpu::test
