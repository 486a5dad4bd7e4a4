// The message format of docs/protocol.md: header layout, bounds-checked
// bodies, and a bounded fuzz of every body decoder.
#include <gtest/gtest.h>

#include <random>

#include "qgpu/protocol.h"

using namespace qgpu::proto;

TEST(Protocol, HeaderLayoutIsTheDocumentedOne) {
  Header h;
  h.type = uint16_t(Type::Launch);
  h.request = 0x01020304;
  h.status = -2;
  h.session = 0x1122334455667788ull;
  uint8_t b[kHeaderSize];
  encode_header(h, b);
  const uint8_t want[kHeaderSize] = {'Q', 'G', 'P', 'W', 6, 0, 13, 0, 4, 3, 2, 1, 0xfe, 0xff, 0xff, 0xff,
                                     0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11};
  EXPECT_EQ(0, memcmp(b, want, kHeaderSize));
  Header back = decode_header(b, kHeaderSize);
  EXPECT_EQ(back.type, h.type);
  EXPECT_EQ(back.request, h.request);
  EXPECT_EQ(back.status, h.status);
  EXPECT_EQ(back.session, h.session);
}

// Every DeviceInfo field crosses the wire, 64-bit sizes included.
TEST(Protocol, DeviceInfoRoundTrips) {
  DeviceInfo d;
  d.backend = "interpreter";
  d.device_name = "qgpu (interpreter)";
  d.lanes = 8, d.warp_size = 32, d.registers = 31, d.rom_blocks = 256;
  d.global_base = 0x10000000, d.global_bytes = 0xF0000000ull;
  d.shared_bytes_per_cta = 49152, d.shared_optin_bytes_per_cta = 65536, d.max_threads_per_cta = 1024;
  d.max_ctas_per_grid = 0xffffffffull;
  d.max_grid[0] = 0x7fffffff, d.max_grid[1] = 65535, d.max_grid[2] = 65534;
  d.max_block[0] = 1024, d.max_block[1] = 1023, d.max_block[2] = 64;
  d.param_bytes = 32764, d.const_bytes = 65536, d.local_bytes_per_thread = 524288;
  d.printf_fifo_bytes = 1ull << 40, d.heap_bytes = (1ull << 33) + 5, d.limits_settable = 1;
  d.register_file = 8192;
  Writer w;
  encode(w, d);
  Reader r(w.data().data(), w.data().size());
  DeviceInfo b = decode_device_info(r);
  r.finish("DeviceInfo");
  EXPECT_EQ(b.backend, d.backend);
  EXPECT_EQ(b.device_name, d.device_name);
  EXPECT_EQ(b.lanes, 8u);
  EXPECT_EQ(b.warp_size, 32u);
  EXPECT_EQ(b.registers, 31u);
  EXPECT_EQ(b.register_file, 8192u);
  EXPECT_EQ(b.registers_per_cta(), 8192u);
  b.register_file = 0;
  EXPECT_EQ(b.registers_per_cta(), 31u * 1024);
  EXPECT_EQ(b.rom_blocks, 256u);
  EXPECT_EQ(b.global_base, 0x10000000u);
  EXPECT_EQ(b.global_bytes, 0xF0000000ull);
  EXPECT_EQ(b.shared_bytes_per_cta, 49152u);
  EXPECT_EQ(b.shared_optin_bytes_per_cta, 65536u);
  EXPECT_EQ(b.max_threads_per_cta, 1024u);
  EXPECT_EQ(b.max_ctas_per_grid, 0xffffffffull);
  EXPECT_EQ(b.max_grid[0], 0x7fffffffu);
  EXPECT_EQ(b.max_grid[1], 65535u);
  EXPECT_EQ(b.max_grid[2], 65534u);
  EXPECT_EQ(b.max_block[0], 1024u);
  EXPECT_EQ(b.max_block[1], 1023u);
  EXPECT_EQ(b.max_block[2], 64u);
  EXPECT_EQ(b.param_bytes, 32764u);
  EXPECT_EQ(b.const_bytes, 65536u);
  EXPECT_EQ(b.local_bytes_per_thread, 524288u);
  EXPECT_EQ(b.printf_fifo_bytes, 1ull << 40);
  EXPECT_EQ(b.heap_bytes, (1ull << 33) + 5);
  EXPECT_EQ(b.limits_settable, 1u);
}

TEST(Protocol, BadHeadersAreRejected) {
  uint8_t b[kHeaderSize];
  encode_header(Header{}, b);
  EXPECT_THROW(decode_header(b, kHeaderSize - 1), ProtocolError);
  b[0] ^= 1;
  EXPECT_THROW(decode_header(b, kHeaderSize), ProtocolError);
  b[0] ^= 1;
  b[4] = 2;  // version 2
  try {
    decode_header(b, kHeaderSize);
    FAIL();
  } catch (const ProtocolError& e) {
    EXPECT_NE(std::string(e.what()).find("version 2"), std::string::npos);
  }
}

TEST(Protocol, ReaderNeverReadsPastTheBody) {
  Writer w;
  w.u32(7).str("abc");
  auto& d = w.data();
  ASSERT_EQ(d.size(), 4u + 8u + 3u);
  Reader ok(d.data(), d.size());
  EXPECT_EQ(ok.u32("a"), 7u);
  EXPECT_EQ(ok.str("s"), "abc");
  EXPECT_NO_THROW(ok.finish("test"));
  for (size_t cut = 0; cut < d.size(); ++cut) {
    Reader r(d.data(), cut);
    EXPECT_THROW({ r.u32("a"); r.str("s"); }, ProtocolError) << cut;
  }
  Reader extra(d.data(), d.size());
  extra.u32("a");
  EXPECT_THROW(extra.finish("test"), ProtocolError);
  // A string whose length field claims more than the body holds.
  Writer lie;
  lie.u64(1ull << 62);
  Reader r(lie.data().data(), lie.data().size());
  EXPECT_THROW(r.str("s"), ProtocolError);
  Reader c(lie.data().data(), lie.data().size());
  EXPECT_THROW(c.count("n", 1), ProtocolError);
}

TEST(Protocol, BodiesRoundTrip) {
  ModuleImage m;
  m.id = 3;
  m.vars = {{"table", 0x10000100, 64}, {"k", 0x10000200, 4}};
  KernelLayout k;
  k.name = "_Z1fPii";
  k.static_smem = 128;
  k.params = {{0, 8, 8}, {8, 4, 4}};
  m.kernels = {k};
  Writer w;
  encode(w, m);
  Reader r(w.data().data(), w.data().size());
  ModuleImage b = decode_module_image(r);
  r.finish("ModuleImage");
  EXPECT_EQ(b.id, 3u);
  ASSERT_EQ(b.vars.size(), 2u);
  EXPECT_EQ(b.vars[1].name, "k");
  EXPECT_EQ(b.vars[1].addr, 0x10000200u);
  ASSERT_EQ(b.kernels.size(), 1u);
  EXPECT_EQ(b.kernels[0].param_bytes(), 12u);
  EXPECT_EQ(b.kernels[0].static_smem, 128u);

  LaunchArgs a;
  a.module = 3;
  a.kernel = "_Z1fPii";
  a.grid[0] = 2, a.block[0] = 64, a.block[1] = 2;
  a.dynamic_smem = 256;
  a.params = {1, 2, 3, 4, 5};
  a.cooperative = 1;
  Writer wa;
  encode(wa, a);
  Reader ra(wa.data().data(), wa.data().size());
  LaunchArgs ab = decode_launch_args(ra);
  ra.finish("LaunchArgs");
  EXPECT_EQ(ab.kernel, a.kernel);
  EXPECT_EQ(ab.block[1], 2u);
  EXPECT_EQ(ab.dynamic_smem, 256u);
  EXPECT_EQ(ab.params, a.params);
  EXPECT_EQ(ab.cooperative, 1u);

  DeviceInfo d{"interpreter", "qgpu (interpreter)"};
  d.way_out = "a larger device";
  d.cooperative_ctas = 1;
  d.l2_bytes = 4 << 20;
  d.persisting_l2_max_bytes = 3 << 20;
  d.access_policy_max_window_bytes = 128 << 20;
  d.clock_khz = 1;
  Writer wd;
  encode(wd, d);
  Reader rd(wd.data().data(), wd.data().size());
  DeviceInfo db = decode_device_info(rd);
  rd.finish("DeviceInfo");
  EXPECT_EQ(db.way_out, d.way_out);
  EXPECT_EQ(db.cooperative_ctas, 1u);
  EXPECT_EQ(db.l2_bytes, 4u << 20);
  EXPECT_EQ(db.persisting_l2_max_bytes, 3u << 20);
  EXPECT_EQ(db.access_policy_max_window_bytes, 128u << 20);
  EXPECT_EQ(db.clock_khz, 1u);

  LaunchProgress p;
  p.running = 1;
  p.launch = 7;
  p.kernel = "_Z3gcdPjS_";
  p.ctas = 16;
  p.cta = 5;
  p.generated_tokens = 123456;
  p.seconds = 12.25;
  p.totals = {6, 100, 2000, 300000, 90.5};
  Writer wp;
  encode(wp, p);
  EXPECT_EQ(wp.data().size(), 4u + 8 + 8 + p.kernel.size() + 8 + 8 + 8 + 8 + 5 * 8);  // docs/protocol.md
  Reader rp(wp.data().data(), wp.data().size());
  LaunchProgress pb = decode_launch_progress(rp);
  rp.finish("LaunchProgress");
  EXPECT_EQ(pb.running, 1u);
  EXPECT_EQ(pb.launch, 7u);
  EXPECT_EQ(pb.kernel, p.kernel);
  EXPECT_EQ(pb.ctas, 16u);
  EXPECT_EQ(pb.cta, 5u);
  EXPECT_EQ(pb.generated_tokens, 123456u);
  EXPECT_EQ(pb.seconds, 12.25);
  EXPECT_EQ(pb.totals.generated_tokens, 300000u);
  EXPECT_EQ(pb.totals.seconds, 90.5);
}

// Random mutations of valid bodies: each decoder either decodes or throws
// ProtocolError; it never crashes, hangs or allocates what was not sent.
TEST(Protocol, DecodersSurviveFuzzedBodies) {
  std::mt19937_64 rng(12345);
  std::vector<std::vector<uint8_t>> seeds;
  {
    Writer w;
    ModuleImage m;
    m.vars = {{"v", 1, 2}};
    m.kernels = {KernelLayout{"k", {{0, 4, 4}}, 0}};
    encode(w, m);
    seeds.push_back(w.data());
  }
  {
    Writer w;
    encode(w, LaunchArgs{1, "kernel", {1, 1, 1}, {32, 1, 1}, 0, {1, 2, 3, 4}});
    seeds.push_back(w.data());
  }
  {
    Writer w;
    encode(w, DeviceInfo{"interpreter", "qgpu (interpreter)"});
    seeds.push_back(w.data());
  }
  {
    Writer w;
    encode(w, LaunchOutcome{710, "assert", "hi\n", {1, 2, 3, 4, 0.5}});
    seeds.push_back(w.data());
  }
  int decoded = 0, rejected = 0;
  for (int iter = 0; iter < 20000; ++iter) {
    std::vector<uint8_t> b = seeds[rng() % seeds.size()];
    int edits = 1 + int(rng() % 4);
    for (int e = 0; e < edits; ++e) {
      switch (rng() % 4) {
        case 0: if (!b.empty()) b[rng() % b.size()] = uint8_t(rng()); break;
        case 1: b.resize(rng() % (b.size() + 1)); break;
        case 2: b.insert(b.begin() + long(rng() % (b.size() + 1)), uint8_t(rng())); break;
        case 3: if (b.size() >= 8) { uint64_t big = rng(); memcpy(b.data() + rng() % (b.size() - 7), &big, 8); } break;
      }
    }
    for (int which = 0; which < 4; ++which) {
      Reader r(b.data(), b.size());
      try {
        switch (which) {
          case 0: decode_module_image(r); break;
          case 1: decode_launch_args(r); break;
          case 2: decode_device_info(r); break;
          case 3: decode_launch_outcome(r); break;
        }
        r.finish("fuzz");
        ++decoded;
      } catch (const ProtocolError&) {
        ++rejected;
      }
    }
  }
  EXPECT_GT(rejected, 0);
  EXPECT_GT(decoded + rejected, 0);
}

// The launch shape check both the drop-in and the daemon make: each limit
// at, just under and just over, zero dimensions, and the exact messages
// (what the launch asked, the limit, the way out when there is one).
namespace {
DeviceInfo shape_device() {
  DeviceInfo d;
  d.device_name = "test";
  d.max_block[0] = 1024, d.max_block[1] = 512, d.max_block[2] = 64;
  d.max_grid[0] = 0x7fffffff, d.max_grid[1] = 65535, d.max_grid[2] = 300;
  d.max_threads_per_cta = 1024;
  d.max_ctas_per_grid = 1ull << 62;  // the grid limits bind first
  d.way_out = "run it with --device big";
  return d;
}
LaunchCheck shape(const DeviceInfo& d, uint32_t gx, uint32_t gy, uint32_t gz, uint32_t bx, uint32_t by, uint32_t bz) {
  const uint32_t grid[3] = {gx, gy, gz}, block[3] = {bx, by, bz};
  return check_launch_shape(grid, block, d, "launch of 'k' on the test device: ");
}
void fits(const LaunchCheck& c) {
  EXPECT_EQ(c.status, 0) << c.message;
  EXPECT_EQ(c.message, "");
}
void refused(const LaunchCheck& c, const std::string& message) {
  EXPECT_EQ(c.status, 9);  // cudaErrorInvalidConfiguration
  EXPECT_EQ(c.message, message);
}
const std::string kWho = "launch of 'k' on the test device: ";
}  // namespace

TEST(LaunchShape, ZeroDimensionsAreRefused) {
  const DeviceInfo d = shape_device();
  fits(shape(d, 1, 1, 1, 1, 1, 1));
  for (int i = 0; i < 3; ++i) {
    uint32_t g[3] = {2, 3, 4}, b[3] = {5, 6, 7};
    g[i] = 0;
    refused(shape(d, g[0], g[1], g[2], 5, 6, 7),
            kWho + "grid (" + std::to_string(g[0]) + "," + std::to_string(g[1]) + "," + std::to_string(g[2]) +
                ") block (5,6,7) has a zero dimension");
    b[i] = 0;
    refused(shape(d, 2, 3, 4, b[0], b[1], b[2]),
            kWho + "grid (2,3,4) block (" + std::to_string(b[0]) + "," + std::to_string(b[1]) + "," +
                std::to_string(b[2]) + ") has a zero dimension");
  }
  // A zero dimension is named before a dimension over its limit.
  refused(shape(d, 0, 70000, 1, 1, 1, 1), kWho + "grid (0,70000,1) block (1,1,1) has a zero dimension");
}

TEST(LaunchShape, BlockDimensionsAtUnderAndOverTheLimit) {
  const DeviceInfo d = shape_device();
  fits(shape(d, 1, 1, 1, 1024, 1, 1));
  fits(shape(d, 1, 1, 1, 1023, 1, 1));
  refused(shape(d, 1, 1, 1, 1025, 1, 1),
          kWho + "block (1025,1,1); its blocks are at most (1024,512,64); run it with --device big");
  fits(shape(d, 1, 1, 1, 2, 512, 1));
  fits(shape(d, 1, 1, 1, 2, 511, 1));
  refused(shape(d, 1, 1, 1, 1, 513, 1),
          kWho + "block (1,513,1); its blocks are at most (1024,512,64); run it with --device big");
  fits(shape(d, 1, 1, 1, 16, 1, 64));
  fits(shape(d, 1, 1, 1, 16, 1, 63));
  refused(shape(d, 1, 1, 1, 1, 1, 65),
          kWho + "block (1,1,65); its blocks are at most (1024,512,64); run it with --device big");
}

TEST(LaunchShape, GridDimensionsAtUnderAndOverTheLimit) {
  const DeviceInfo d = shape_device();
  fits(shape(d, 0x7fffffff, 1, 1, 1, 1, 1));
  fits(shape(d, 0x7ffffffe, 1, 1, 1, 1, 1));
  refused(shape(d, 0x80000000u, 1, 1, 1, 1, 1),
          kWho + "grid (2147483648,1,1); its grids are at most (2147483647,65535,300); run it with --device big");
  fits(shape(d, 1, 65535, 1, 1, 1, 1));
  fits(shape(d, 1, 65534, 1, 1, 1, 1));
  refused(shape(d, 1, 65536, 1, 1, 1, 1),
          kWho + "grid (1,65536,1); its grids are at most (2147483647,65535,300); run it with --device big");
  fits(shape(d, 1, 1, 300, 1, 1, 1));
  fits(shape(d, 1, 1, 299, 1, 1, 1));
  refused(shape(d, 1, 1, 301, 1, 1, 1),
          kWho + "grid (1,1,301); its grids are at most (2147483647,65535,300); run it with --device big");
}

TEST(LaunchShape, ThreadsPerBlockAtUnderAndOverTheLimit) {
  const DeviceInfo d = shape_device();
  fits(shape(d, 1, 1, 1, 32, 32, 1));  // 1024
  fits(shape(d, 1, 1, 1, 31, 11, 3));  // 1023
  // Every dimension within its limit, the product over.
  refused(shape(d, 1, 1, 1, 41, 5, 5), kWho + "1025 threads per block; it runs at most 1024; run it with --device big");
  refused(shape(d, 1, 1, 1, 1024, 512, 64),
          kWho + "33554432 threads per block; it runs at most 1024; run it with --device big");
}

TEST(LaunchShape, BlocksInTheGridAtUnderAndOverTheLimit) {
  DeviceInfo d = shape_device();
  d.max_ctas_per_grid = 1000;
  fits(shape(d, 10, 10, 10, 1, 1, 1));  // 1000
  fits(shape(d, 999, 1, 1, 1, 1, 1));
  refused(shape(d, 1001, 1, 1, 1, 1, 1),
          kWho + "1001 blocks in the grid; it runs at most 1000 per launch; run it with --device big");
  refused(shape(d, 10, 10, 11, 1, 1, 1),
          kWho + "1100 blocks in the grid; it runs at most 1000 per launch; run it with --device big");
  // The product of the largest grid in 64 bits, not wrapped.
  d.max_ctas_per_grid = 0xffffffffull;
  refused(shape(d, 0x7fffffff, 65535, 300, 1, 1, 1),
          kWho + "42220602241843500 blocks in the grid; it runs at most 4294967295 per launch; run it with --device big");
}

// Without a way out (the limit is CUDA's own) the message ends at the limit.
TEST(LaunchShape, NoWayOutNoSuffix) {
  DeviceInfo d = shape_device();
  d.way_out.clear();
  refused(shape(d, 1, 1, 1, 1025, 1, 1), kWho + "block (1025,1,1); its blocks are at most (1024,512,64)");
  refused(shape(d, 1, 1, 301, 1, 1, 1), kWho + "grid (1,1,301); its grids are at most (2147483647,65535,300)");
  refused(shape(d, 1, 1, 1, 41, 5, 5), kWho + "1025 threads per block; it runs at most 1024");
  d.max_ctas_per_grid = 1000;
  refused(shape(d, 1001, 1, 1, 1, 1, 1), kWho + "1001 blocks in the grid; it runs at most 1000 per launch");
}
