// Fatbinary parsing on programs nvcc built in every form the shim must
// accept (see CMakeLists.txt), read straight from their ELF sections.
#include "build_paths.h"   // qgpu_paths() in CMakeLists.txt

#include <gtest/gtest.h>

#include <cstring>

#include "elf_sections.h"
#include "qgpu/fatbin.h"

namespace fb = qgpu::fatbin;

namespace {

const std::string kDir = QGPU_TEST_PROGRAMS;
// basic.cu's kernel axpb(int*, const int*, int, char, long long), mangled.
const std::string kEntry = ".entry _Z4axpbPiPKiicx(";

// Every fatbinary in a section, in order.
std::vector<fb::Fatbin> fatbins_in(const std::string& program, const std::string& section) {
  qgpu::test::ElfFile elf(kDir + "/" + program);
  auto [off, size] = elf.section(section);
  std::vector<fb::Fatbin> out;
  const char* base = elf.bytes.data() + off;
  for (size_t pos = 0; pos + 16 <= size;) {
    uint32_t magic;
    std::memcpy(&magic, base + pos, 4);
    if (magic != fb::kFatbinMagic) {
      pos += 8;  // alignment padding between fatbinaries
      continue;
    }
    out.push_back(fb::parse(base + pos, size - pos));
    pos += fb::declared_size(base + pos);
  }
  return out;
}

std::vector<const fb::Entry*> entries(const std::vector<fb::Fatbin>& fbs, fb::Kind kind) {
  std::vector<const fb::Entry*> out;
  for (const auto& f : fbs)
    for (const auto& e : f.entries)
      if (e.kind == kind) out.push_back(&e);
  return out;
}

std::string only_ptx(const std::string& program, const std::string& section = ".nv_fatbin") {
  auto fbs = fatbins_in(program, section);
  auto ptx = entries(fbs, fb::Kind::Ptx);
  EXPECT_EQ(ptx.size(), 1u) << program;
  return ptx.empty() ? "" : ptx[0]->payload;
}

}  // namespace

TEST(Fatbin, PlainBuildHasZstdPtxAndElf) {
  auto fbs = fatbins_in("basic", ".nv_fatbin");
  ASSERT_EQ(fbs.size(), 2u);  // the empty device-link module, then the program's
  auto ptx = entries(fbs, fb::Kind::Ptx);
  auto elf = entries(fbs, fb::Kind::Elf);
  ASSERT_EQ(ptx.size(), 1u);
  ASSERT_EQ(elf.size(), 2u);
  EXPECT_EQ(ptx[0]->arch, 75u);
  EXPECT_EQ(ptx[0]->major, 9u);  // nvcc 13 emits PTX ISA 9.0
  EXPECT_EQ(ptx[0]->minor, 0u);
  EXPECT_TRUE(ptx[0]->flags & fb::kFlagCompressedZstd);
  EXPECT_NE(ptx[0]->payload.find(".version 9.0"), std::string::npos);
  EXPECT_NE(ptx[0]->payload.find(kEntry), std::string::npos);
  EXPECT_NE(ptx[0]->payload.find("offsets"), std::string::npos);
  EXPECT_NE(ptx[0]->payload.find("scale"), std::string::npos);
  for (auto* e : elf) {
    EXPECT_EQ(e->arch, 75u);
    EXPECT_EQ(e->payload.substr(0, 4), "\x7f" "ELF");
  }
}

TEST(Fatbin, CompressionFormsDecompressToTheSamePtx) {
  std::string plain = only_ptx("basic");
  ASSERT_FALSE(plain.empty());
  EXPECT_EQ(only_ptx("basic_no_compress"), plain);
  EXPECT_EQ(only_ptx("basic_compress_all"), plain);
  EXPECT_EQ(only_ptx("basic_lz4"), plain);

  auto none_fbs = fatbins_in("basic_no_compress", ".nv_fatbin");
  auto none = entries(none_fbs, fb::Kind::Ptx);
  EXPECT_FALSE(none[0]->flags & (fb::kFlagCompressedZstd | fb::kFlagCompressedLz4));
  auto lz4_fbs = fatbins_in("basic_lz4", ".nv_fatbin");
  auto lz4 = entries(lz4_fbs, fb::Kind::Ptx);
  EXPECT_TRUE(lz4[0]->flags & fb::kFlagCompressedLz4);
  // -compress-all compresses the cubins too; they still decompress to ELF.
  auto all_fbs = fatbins_in("basic_compress_all", ".nv_fatbin");
  for (auto* e : entries(all_fbs, fb::Kind::Elf)) {
    EXPECT_TRUE(e->flags & (fb::kFlagCompressedZstd | fb::kFlagCompressedLz4));
    EXPECT_EQ(e->payload.substr(0, 4), "\x7f" "ELF");
  }
}

TEST(Fatbin, RdcKeepsPtxInThePrelinkedFatbinary) {
  auto linked = fatbins_in("basic_rdc", ".nv_fatbin");
  EXPECT_TRUE(entries(linked, fb::Kind::Ptx).empty());
  std::string ptx = only_ptx("basic_rdc", "__nv_relfatbin");
  EXPECT_NE(ptx.find(kEntry), std::string::npos);
}

TEST(Fatbin, TwoTranslationUnits) {
  // Without -rdc each unit registers its own fatbinary; with it, each unit
  // has its own prelinked fatbinary.  Either way the kernels are in the
  // kernels unit's PTX only.
  for (auto [program, section] : {std::pair{"two_units", ".nv_fatbin"}, std::pair{"two_units_rdc", "__nv_relfatbin"}}) {
    auto fbs = fatbins_in(program, section);
    auto ptx = entries(fbs, fb::Kind::Ptx);
    ASSERT_EQ(ptx.size(), 2u) << program;
    int with_kernels = 0;
    for (auto* p : ptx)
      if (p->payload.find(".entry _Z5twicePii(") != std::string::npos) {
        ++with_kernels;
        EXPECT_NE(p->payload.find(".entry _Z9plus_basePii("), std::string::npos);
      }
    EXPECT_EQ(with_kernels, 1) << program;
  }
}

TEST(Fatbin, BestPtxPrefersNewestNotAboveTheDevice) {
  auto fbs = fatbins_in("basic_two_ptx", ".nv_fatbin");
  const fb::Fatbin* f = nullptr;
  for (const auto& x : fbs)
    if (entries({x}, fb::Kind::Ptx).size() == 2) f = &x;
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->best_ptx(75)->arch, 75u);
  EXPECT_EQ(f->best_ptx(80)->arch, 75u);
  EXPECT_EQ(f->best_ptx(86)->arch, 86u);
  EXPECT_EQ(f->best_ptx(90)->arch, 86u);
  EXPECT_EQ(f->best_ptx(60)->arch, 75u);  // nothing old enough: the oldest
}

TEST(Fatbin, SassOnlyBuildHasNoPtx) {
  for (const auto& f : fatbins_in("basic_sass_only", ".nv_fatbin")) EXPECT_EQ(f.best_ptx(75), nullptr);
}

TEST(Fatbin, WrappersVersion1And2) {
  qgpu::test::ElfFile plain(kDir + "/basic"), rdc(kDir + "/basic_rdc");
  auto [poff, psize] = plain.section(".nv_fatbin");
  // The program's own fatbinary is the second one in the section.
  const char* first = plain.bytes.data() + poff;
  size_t skip = (fb::declared_size(first) + 7) / 8 * 8;
  struct Wrapper { int magic, version; const void* data; const void* extra; };
  Wrapper w1{int(fb::kWrapperMagic), 1, first + skip, nullptr};
  fb::Wrapper p1 = fb::parse_wrapper(&w1);
  ASSERT_EQ(p1.units.size(), 1u);
  ASSERT_NE(p1.units[0].best_ptx(75), nullptr);
  EXPECT_NE(p1.units[0].best_ptx(75)->payload.find(kEntry), std::string::npos);

  auto [loff, lsize] = rdc.section(".nv_fatbin");
  auto [roff, rsize] = rdc.section("__nv_relfatbin");
  const void* prelinked[] = {rdc.bytes.data() + roff, nullptr};
  Wrapper w2{int(fb::kWrapperMagic), 2, rdc.bytes.data() + loff, prelinked};
  fb::Wrapper p2 = fb::parse_wrapper(&w2);
  ASSERT_EQ(p2.units.size(), 2u);  // the prelinked unit, then the linked image
  EXPECT_NE(p2.units[0].best_ptx(75), nullptr);
  EXPECT_EQ(p2.units[1].best_ptx(75), nullptr);

  Wrapper bad{0x1234, 1, first + skip, nullptr};
  EXPECT_THROW(fb::parse_wrapper(&bad), fb::FatbinError);
  Wrapper v3{int(fb::kWrapperMagic), 3, first + skip, nullptr};
  EXPECT_THROW(fb::parse_wrapper(&v3), fb::FatbinError);
}

TEST(Fatbin, CorruptInputIsRejectedWithAReason) {
  qgpu::test::ElfFile elf(kDir + "/basic");
  auto [off, size] = elf.section(".nv_fatbin");
  const char* first = elf.bytes.data() + off;
  size_t at = (fb::declared_size(first) + 7) / 8 * 8;
  std::vector<char> good(first + at, first + at + fb::declared_size(first + at));
  ASSERT_NO_THROW(fb::parse(good.data(), good.size()));

  auto expect_error = [](std::vector<char> bytes, size_t limit, const std::string& words) {
    try {
      fb::parse(bytes.data(), limit);
      ADD_FAILURE() << "accepted corrupt input (" << words << ")";
    } catch (const fb::FatbinError& e) {
      EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
    }
  };
  auto bad_magic = good;
  bad_magic[0] ^= 1;
  expect_error(bad_magic, good.size(), "not a fatbinary");
  expect_error(good, good.size() - 1, "available");  // the header claims more than there is
  auto bad_kind = good;
  bad_kind[16] = 7;  // first entry's kind
  expect_error(bad_kind, good.size(), "unknown kind");
  auto huge = good;
  uint64_t big = 1ull << 40;
  std::memcpy(huge.data() + 16 + 8, &big, 8);  // first entry's payload size
  expect_error(huge, good.size(), "past the end");

  // Scramble the compressed PTX payload (the last entry).
  size_t pos = 16, last = 0;
  while (pos < good.size()) {
    last = pos;
    uint32_t hs;
    uint64_t n;
    std::memcpy(&hs, good.data() + pos + 4, 4);
    std::memcpy(&n, good.data() + pos + 8, 8);
    pos += hs + n;
  }
  auto scrambled = good;
  uint32_t hs;
  std::memcpy(&hs, scrambled.data() + last + 4, 4);
  for (size_t i = last + hs; i < last + hs + 16; ++i) scrambled[i] ^= 0x5a;
  expect_error(scrambled, good.size(), "zstd");
}
