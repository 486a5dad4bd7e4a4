// model_host through the client library: memory rules, isolation between
// clients, module and launch errors, chunked transfers, clients that die,
// and a bounded fuzz of the daemon's message handling.
#include "build_paths.h"   // qgpu_paths() in CMakeLists.txt

#include <driver_types.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <thread>
#include <tuple>
#include <zmq.hpp>

#include "process.h"
#include "qgpu/client.h"
#include "qgpu/endpoint.h"
#include "qgpu/shm.h"

namespace fs = std::filesystem;
using qgpu::client::Connection;
using qgpu::client::Error;

namespace {

class DaemonTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string t = (fs::temp_directory_path() / "qgpu-daemon-test-XXXXXX").string();
    dir_ = mkdtemp(t.data());
    endpoint_ = "ipc://" + (dir_ / "d.sock").string();
    log_ = dir_ / "d.log";
    pid_ = qgpu::test::start({QGPU_MODEL_HOST_BIN, "--endpoint", endpoint_, "--log", log_.string(),
                              "--client-timeout-ms", "2000"},
                             {});
  }
  void TearDown() override {
    kill(pid_, SIGTERM);
    waitpid(pid_, nullptr, 0);
    fs::remove_all(dir_);
  }
  std::unique_ptr<Connection> connect() {
    qgpu::client::Options o;
    o.endpoint = endpoint_;
    o.spawn = false;
    o.program = "daemon_test";
    return Connection::open(o);
  }
  std::string log() {
    std::ifstream in(log_);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }
  template <class F>
  int code_of(F&& f) {
    try {
      f();
    } catch (const Error& e) {
      last_message_ = e.what();
      return e.code;
    }
    return 0;
  }

  fs::path dir_, log_;
  std::string endpoint_, last_message_;
  pid_t pid_ = -1;
};

// A module with one kernel f(u64, u32): 12 bytes of parameters.
const char* kPtx = R"(.version 9.0
.target sm_75
.address_size 64

.visible .global .align 4 .b8 table[16] = {1, 0, 0, 0, 2};

.visible .entry _Z1fPii(
	.param .u64 _Z1fPii_param_0,
	.param .u32 _Z1fPii_param_1
)
{
	ret;
}
)";



TEST_F(DaemonTest, MemoryRoundTripAndTheLimit) {
  auto c = connect();
  const auto& d = c->device();
  EXPECT_EQ(d.warp_size, 32u);
  EXPECT_GT(d.global_bytes, 0u);
  EXPECT_NE(d.device_name.find("qgpu"), std::string::npos);
  uint64_t a = c->malloc(100);
  EXPECT_GE(a, d.global_base);
  EXPECT_LT(a, d.global_base + d.global_bytes);
  std::vector<uint8_t> in(100), out(100);
  for (size_t i = 0; i < in.size(); ++i) in[i] = uint8_t(i * 7 + 1);
  c->write(a, in.data(), in.size());
  c->read(out.data(), a, out.size());
  EXPECT_EQ(in, out);
  c->memset(a + 10, 0xab, 5);
  c->read(out.data(), a, out.size());
  EXPECT_EQ(out[9], in[9]);
  EXPECT_EQ(out[10], 0xab);
  EXPECT_EQ(out[14], 0xab);
  EXPECT_EQ(out[15], in[15]);
  uint64_t free_bytes, total;
  c->mem_info(&free_bytes, &total);
  EXPECT_EQ(total, d.global_bytes);
  // The device heap is reserved at the top of global memory.
  const uint64_t heap = c->limit(qgpu::proto::kLimitMallocHeap, qgpu::proto::kQueryLimit);
  EXPECT_EQ(heap, d.heap_bytes);
  EXPECT_EQ(free_bytes, d.global_bytes - 100 - heap);

  EXPECT_EQ(code_of([&] { c->malloc(uint64_t(d.global_bytes) + 1); }), cudaErrorMemoryAllocation);
  EXPECT_NE(last_message_.find("global memory is " + std::to_string(d.global_bytes) + " bytes"), std::string::npos)
      << last_message_;
  EXPECT_EQ(code_of([&] { c->write(a + 96, in.data(), 8); }), cudaErrorInvalidValue);
  EXPECT_EQ(code_of([&] { c->read(out.data(), a + 200, 4); }), cudaErrorInvalidValue);
  EXPECT_EQ(code_of([&] { c->copy(a, a + 50, 51); }), cudaErrorInvalidValue);
  c->free(a);
  EXPECT_EQ(code_of([&] { c->read(out.data(), a, 4); }), cudaErrorInvalidValue);
  EXPECT_EQ(code_of([&] { c->free(a); }), cudaErrorInvalidValue);
}

TEST_F(DaemonTest, ClientsAreIsolated) {
  auto c1 = connect(), c2 = connect();
  EXPECT_NE(c1->session(), c2->session());
  uint64_t a1 = c1->malloc(64);
  // c2 has no allocation there...
  uint32_t v = 0x11111111;
  EXPECT_EQ(code_of([&] { c2->write(a1, &v, 4); }), cudaErrorInvalidValue);
  // ...and its own allocation, even at the same address, is separate memory.
  uint64_t a2 = c2->malloc(64);
  uint32_t v1 = 0xaaaaaaaa, v2 = 0x55555555, back = 0;
  c1->write(a1, &v1, 4);
  c2->write(a2, &v2, 4);
  c1->read(&back, a1, 4);
  EXPECT_EQ(back, v1);
  c2->read(&back, a2, 4);
  EXPECT_EQ(back, v2);
}

TEST_F(DaemonTest, ModulesAndLaunchErrors) {
  auto c = connect();
  qgpu::proto::ModuleImage m = c->load_module(kPtx);
  ASSERT_EQ(m.kernels.size(), 1u);
  EXPECT_EQ(m.kernels[0].name, "_Z1fPii");
  ASSERT_EQ(m.kernels[0].params.size(), 2u);
  EXPECT_EQ(m.kernels[0].params[1].offset, 8u);
  EXPECT_EQ(m.kernels[0].param_bytes(), 12u);
  ASSERT_EQ(m.vars.size(), 1u);
  EXPECT_EQ(m.vars[0].name, "table");
  EXPECT_EQ(m.vars[0].size, 16u);
  uint32_t t[4];
  c->read(t, m.vars[0].addr, 16);  // initialised at load
  EXPECT_EQ(t[0], 1u);
  EXPECT_EQ(t[1], 2u);
  EXPECT_EQ(t[2], 0u);

  qgpu::proto::LaunchArgs a;
  a.module = m.id;
  a.kernel = "_Z1fPii";
  a.params.assign(8, 0);
  EXPECT_EQ(code_of([&] { c->launch(a); }), cudaErrorInvalidValue);
  EXPECT_NE(last_message_.find("takes 12 bytes"), std::string::npos) << last_message_;
  EXPECT_NE(last_message_.find("passed 8"), std::string::npos) << last_message_;
  a.params.assign(12, 0);
  a.kernel = "nope";
  EXPECT_EQ(code_of([&] { c->launch(a); }), cudaErrorInvalidDeviceFunction);
  a.kernel = "_Z1fPii";
  a.module = m.id + 100;
  EXPECT_EQ(code_of([&] { c->launch(a); }), cudaErrorInvalidResourceHandle);
  a.module = m.id;
  a.block[0] = c->device().max_threads_per_cta + 1;
  EXPECT_EQ(code_of([&] { c->launch(a); }), cudaErrorInvalidConfiguration);
  a.block[0] = 1;
  qgpu::proto::LaunchOutcome o = c->launch(a);
  EXPECT_EQ(o.error, 0) << o.message;
  EXPECT_EQ(o.counters.launches, 1u);
  EXPECT_EQ(c->daemon_stats().launches, 1u);
  EXPECT_EQ(code_of([&] { c->load_module("this is not PTX"); }), cudaErrorInvalidPtx);
  c->unload_module(m.id);
  EXPECT_EQ(code_of([&] { c->read(t, m.vars[0].addr, 4); }), cudaErrorInvalidValue);  // its variable is gone
}

TEST_F(DaemonTest, LargeTransfersMoveInChunks) {
  // Through the shared-memory segment (1 MiB chunks, 8 slots: the ring wraps
  // more than once), then over ZeroMQ alone (4 MiB chunks).
  for (bool shared : {true, false}) {
    if (!shared) setenv("QGPU_SHM", "0", 1);
    auto c = connect();
    unsetenv("QGPU_SHM");
    EXPECT_EQ(c->shared_memory(), shared);
    std::vector<uint8_t> in(19 * 1024 * 1024 + 123), out(in.size());
    std::mt19937 rng(shared ? 7 : 8);
    for (auto& b : in) b = uint8_t(rng());
    c->scratch_write(0, in.data(), in.size());
    c->scratch_read(out.data(), 0, out.size());
    EXPECT_EQ(in, out) << shared;
    // Pieces at odd offsets and sizes land where they were written.
    std::vector<uint8_t> piece(3 * 1024 * 1024 + 5, 0xc3);
    c->scratch_write(1000001, piece.data(), piece.size());
    std::copy(piece.begin(), piece.end(), in.begin() + 1000001);
    c->scratch_read(out.data(), 0, out.size());
    EXPECT_EQ(in, out) << shared;
    EXPECT_EQ(code_of([&] { c->scratch_read(out.data(), 1, in.size()); }), cudaErrorInvalidValue);
    // An error in one chunk of many fails the copy; the connection goes on.
    uint64_t a = c->malloc(64);
    EXPECT_EQ(code_of([&] { c->write(a, in.data(), 5 * 1024 * 1024); }), cudaErrorInvalidValue);
    c->write(a, in.data(), 64);
    c->read(out.data(), a, 64);
    EXPECT_TRUE(std::equal(in.begin(), in.begin() + 64, out.begin()));
  }
}

// A kernel whose printf output (64 lines of 100 bytes) is larger than a
// shared-memory slot: the reply comes over ZeroMQ instead, whole.
TEST_F(DaemonTest, RepliesTooLargeForASlotComeOverZeroMq) {
  auto c = connect();
  ASSERT_TRUE(c->shared_memory());
  std::string line(99, 'x');
  std::string bytes;
  for (char ch : line + "\n") bytes += std::to_string(int(ch)) + ",";
  std::string ptx = R"(.version 9.0
.target sm_75
.address_size 64
.extern .func (.param .b32 func_retval0) vprintf(.param .b64 vprintf_param_0, .param .b64 vprintf_param_1);
.global .align 1 .b8 fmt[101] = {)" + bytes + R"(0};
.visible .entry p()
{
	.reg .pred %p<2>;
	.reg .b32 %r<4>;
	.reg .b64 %rd<3>;
	mov.u64 %rd1, fmt;
	cvta.global.u64 %rd2, %rd1;
	mov.u32 %r1, 0;
$L_loop:
	{
	.param .b64 param0;
	st.param.b64 [param0], %rd2;
	.param .b64 param1;
	st.param.b64 [param1], 0;
	.param .b32 retval0;
	call.uni (retval0), vprintf, (param0, param1);
	}
	add.s32 %r1, %r1, 1;
	setp.lt.u32 %p1, %r1, 64;
	@%p1 bra $L_loop;
	ret;
}
)";
  qgpu::proto::ModuleImage m = c->load_module(ptx);
  qgpu::proto::LaunchArgs a;
  a.module = m.id;
  a.kernel = "p";
  qgpu::proto::LaunchOutcome o = c->launch(a);
  EXPECT_EQ(o.error, 0) << o.message;
  std::string want;
  for (int i = 0; i < 64; ++i) want += line + "\n";
  EXPECT_EQ(o.printf_output, want);
  c->ping();  // and the channel goes on
  EXPECT_EQ(c->daemon_stats().launches, 1u);
}

TEST_F(DaemonTest, ADeadClientIsFreed) {
  pid_t child = fork();
  if (child == 0) {
    auto c = connect();
    c->malloc(16);
    c->malloc(16);
    c->malloc(16);
    _exit(0);  // no goodbye
  }
  int status;
  waitpid(child, &status, 0);
  ASSERT_EQ(WEXITSTATUS(status), 0);
  std::string l;
  for (int i = 0; i < 60; ++i) {
    l = log();
    if (l.find("freed 3 allocations") != std::string::npos) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_NE(l.find("pid " + std::to_string(child) + " process exited"), std::string::npos) << l;
  EXPECT_NE(l.find("freed 3 allocations"), std::string::npos) << l;
}

TEST_F(DaemonTest, SurvivesMalformedAndOversizedMessages) {
  // `victim` lends its session to the fuzzer, which may free its memory or
  // say goodbye for it; `good` must not notice anything.
  auto good = connect(), victim = connect();
  uint64_t keep = good->malloc(32);
  uint32_t v = 0x12345678, back = 0;
  good->write(keep, &v, 4);
  zmq::context_t ctx;
  std::mt19937_64 rng(99);
  auto t0 = std::chrono::steady_clock::now();
  {
    zmq::socket_t s(ctx, zmq::socket_type::dealer);
    s.set(zmq::sockopt::linger, 0);
    s.connect(endpoint_);
    for (int i = 0; i < 3000; ++i) {
      int frames = int(rng() % 5);
      for (int f = 0; f < frames; ++f) {
        std::vector<uint8_t> b(rng() % 64);
        for (auto& x : b) x = uint8_t(rng());
        if (f == 0 && rng() % 4 != 0) {  // mostly well-formed headers with random contents
          qgpu::proto::Header h;
          h.type = uint16_t(rng() % 20);
          h.session = rng() % 3 == 0 ? victim->session() : rng();
          h.request = uint32_t(rng());
          b.resize(qgpu::proto::kHeaderSize);
          qgpu::proto::encode_header(h, b.data());
        }
        s.send(zmq::buffer(b), f + 1 < frames ? zmq::send_flags::sndmore : zmq::send_flags::none);
      }
      zmq::message_t m;
      while (s.recv(m, zmq::recv_flags::dontwait)) {
      }
    }
  }
  {
    zmq::socket_t s(ctx, zmq::socket_type::dealer);
    s.set(zmq::sockopt::linger, 1000);
    s.connect(endpoint_);
    std::vector<uint8_t> huge(qgpu::proto::kMaxMessage + 1, 0x42);
    s.send(zmq::buffer(huge), zmq::send_flags::none);
  }
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(10));
  good->ping();
  good->read(&back, keep, 4);
  EXPECT_EQ(back, v);
  auto fresh = connect();
  EXPECT_NO_THROW(fresh->malloc(16));
  EXPECT_EQ(kill(pid_, 0), 0);
}

// A client that scribbles on its shared-memory segment: lengths past its
// slot or chunk, a read larger than a chunk, types that cannot be posted,
// more requests than slots, then random bytes everywhere.  The daemon
// answers with errors or stops reading the segment, other clients notice
// nothing, and the segment cannot be shrunk under the daemon.
TEST_F(DaemonTest, SurvivesAHostileSharedMemoryClient) {
  namespace shm = qgpu::shm;
  auto good = connect();
  uint64_t keep = good->malloc(32);
  uint32_t v = 0x9abcdef0, back = 0;
  good->write(keep, &v, 4);

  zmq::context_t ctx;
  zmq::socket_t s(ctx, zmq::socket_type::dealer);
  s.set(zmq::sockopt::linger, 0);
  s.connect(endpoint_);
  uint32_t request = 1;
  auto call = [&](qgpu::proto::Type t, qgpu::proto::Writer w, uint64_t session) {
    qgpu::proto::Header h;
    h.type = uint16_t(t);
    h.request = request++;
    h.session = session;
    uint8_t hb[qgpu::proto::kHeaderSize];
    qgpu::proto::encode_header(h, hb);
    s.send(zmq::buffer(hb, sizeof hb), zmq::send_flags::sndmore);
    s.send(zmq::buffer(w.data()), zmq::send_flags::none);
    std::vector<zmq::message_t> frames;
    for (bool more = true; more;) {
      zmq::message_t m;
      EXPECT_TRUE(s.recv(m));
      more = m.more();
      frames.push_back(std::move(m));
    }
    return frames;
  };
  qgpu::proto::Writer hello;
  hello.u32(uint32_t(getpid())).str("").str("hostile");
  auto f = call(qgpu::proto::Type::Hello, std::move(hello), 0);
  uint64_t session = qgpu::proto::decode_header(f[0].data(), f[0].size()).session;
  f = call(qgpu::proto::Type::ShmAttach, {}, session);
  ASSERT_EQ(qgpu::proto::decode_header(f[0].data(), f[0].size()).status, 0);
  qgpu::proto::Reader rd(f[1].data(), f[1].size());
  uint32_t pid = rd.u32("pid");
  int32_t fd = rd.i32("fd");
  uint64_t size = rd.u64("size");
  ASSERT_EQ(size, shm::kSegmentBytes);
  int file = open(("/proc/" + std::to_string(pid) + "/fd/" + std::to_string(fd)).c_str(), O_RDWR);
  ASSERT_GE(file, 0);
  EXPECT_NE(ftruncate(file, 4096), 0);  // sealed: it cannot shrink...
  EXPECT_NE(ftruncate(file, off_t(size) * 2), 0);  // ...or grow
  void* base = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, file, 0);
  ASSERT_NE(base, MAP_FAILED);
  close(file);
  shm::Control* c = shm::control(base);
  ASSERT_EQ(c->session, session);
  EXPECT_EQ(call(qgpu::proto::Type::ShmAttach, {}, session).size(), 2u);  // a second segment is refused

  uint32_t seq = 0;
  auto post = [&](uint16_t type, std::vector<uint8_t> body, uint32_t body_len, uint32_t bulk_len) {
    shm::Slot* sl = shm::slot(base, seq);
    sl->type = type;
    sl->request = request++;
    sl->body_len = body_len;
    sl->bulk_len = bulk_len;
    std::memcpy(sl->body, body.data(), std::min<size_t>(body.size(), shm::kInline));
    c->req_seq.store(++seq);
    shm::ring(&c->bell, &c->server_waiting);
    for (int i = 0; i < 5000 && c->rep_seq.load() != seq; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    EXPECT_EQ(c->rep_seq.load(), seq);
    EXPECT_EQ(sl->flags, 0u);
    return sl->status;
  };
  auto u64s = [](std::initializer_list<uint64_t> vs) {
    qgpu::proto::Writer w;
    for (uint64_t x : vs) w.u64(x);
    return w.data();
  };
  using T = qgpu::proto::Type;
  EXPECT_EQ(post(uint16_t(T::Ping), {}, 0, 0), 0);
  EXPECT_EQ(post(uint16_t(T::Malloc), u64s({16}), 0xffffffffu, 0), cudaErrorInvalidValue);
  EXPECT_EQ(post(uint16_t(T::ScratchWrite), u64s({0}), 8, shm::kChunk + 1), cudaErrorInvalidValue);
  EXPECT_EQ(post(uint16_t(T::ScratchWrite), u64s({0}), 8, shm::kChunk), 0);
  EXPECT_EQ(post(uint16_t(T::ScratchRead), u64s({0, shm::kChunk + 1}), 16, 0), cudaErrorInvalidValue);
  EXPECT_EQ(post(uint16_t(T::Read), u64s({keep, 4}), 16, 0), cudaErrorInvalidValue);  // another session's memory
  EXPECT_EQ(post(uint16_t(T::Hello), {}, 0, 0), cudaErrorInvalidValue);
  EXPECT_EQ(post(uint16_t(T::ShmAttach), {}, 0, 0), cudaErrorInvalidValue);
  EXPECT_EQ(post(999, {}, 0, 0), cudaErrorInvalidValue);
  // More requests than slots: the daemon stops reading the segment.
  c->req_seq.store(seq + 1000);
  shm::ring(&c->bell, &c->server_waiting);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  std::mt19937_64 rng(5);
  for (int round = 0; round < 50; ++round) {
    auto* w = static_cast<uint64_t*>(base);
    for (size_t i = 0; i < (shm::kDataOffset + 4096) / 8; ++i) w[i] = rng();
    shm::futex_wake(&c->bell);
  }
  good->ping();
  good->read(&back, keep, 4);
  EXPECT_EQ(back, v);
  auto fresh = connect();
  EXPECT_TRUE(fresh->shared_memory());
  EXPECT_NO_THROW(fresh->malloc(16));
  EXPECT_EQ(kill(pid_, 0), 0);
  EXPECT_NE(log().find("the segment is no longer read"), std::string::npos) << log();
  munmap(base, size);
}

// tcp:// only with a shared secret, and only clients that present it.
TEST(DaemonTcp, RequiresASharedSecret) {
  std::string ep = "tcp://127.0.0.1:" + std::to_string(42000 + getpid() % 20000);
  auto r = qgpu::test::run({QGPU_MODEL_HOST_BIN, "--endpoint", ep}, {{"QGPU_SECRET", ""}}, 20);
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("needs a shared secret"), std::string::npos) << r.err;

  pid_t d = qgpu::test::start({QGPU_MODEL_HOST_BIN, "--endpoint", ep, "--secret", "s3cret"}, {});
  qgpu::client::Options o;
  o.endpoint = ep;
  o.spawn = false;
  o.secret = "wrong";
  try {
    Connection::open(o);
    ADD_FAILURE() << "a wrong secret was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code, cudaErrorNotPermitted) << e.what();
  }
  o.secret = "s3cret";
  auto c = Connection::open(o);
  EXPECT_NO_THROW(c->malloc(16));
  EXPECT_FALSE(c->shared_memory());  // a tcp:// client may be on another machine
  c.reset();
  kill(d, SIGTERM);
  waitpid(d, nullptr, 0);
}

// A model_host on its own endpoint, for tests of one backend's device.
struct Daemon {
  explicit Daemon(std::vector<std::string> args, std::map<std::string, std::string> env = {}) {
    std::string t = (fs::temp_directory_path() / "qgpu-device-test-XXXXXX").string();
    dir = mkdtemp(t.data());
    endpoint = "ipc://" + (dir / "d.sock").string();
    args.insert(args.begin(), {QGPU_MODEL_HOST_BIN, "--endpoint", endpoint, "--log", (dir / "d.log").string()});
    pid = qgpu::test::start(args, env);
  }
  ~Daemon() {
    kill(pid, SIGTERM);
    waitpid(pid, nullptr, 0);
    fs::remove_all(dir);
  }
  std::unique_ptr<Connection> connect() const {
    qgpu::client::Options o;
    o.endpoint = endpoint;
    o.spawn = false;
    o.program = "daemon_test";
    return Connection::open(o);
  }
  // The daemon's resident memory, from /proc.
  uint64_t rss_bytes() const {
    std::ifstream in("/proc/" + std::to_string(pid) + "/status");
    for (std::string line; std::getline(in, line);)
      if (line.rfind("VmRSS:", 0) == 0) return std::stoull(line.substr(6)) * 1024;
    return 0;
  }
  fs::path dir;
  std::string endpoint;
  pid_t pid = -1;
};

template <class F>
std::pair<int, std::string> error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return {e.code, e.what()};
  }
  return {0, ""};
}

// Device queries describe the device the backend declares: the ISA of its
// machine (docs/isa.md: 32 lanes and a ROM of 2^20 blocks for the interpreter;
// docs/tokens.md section 1: one lane per warp and a 1024-block ROM for the
// model's machine) and its sizes: CUDA's for the interpreter, the compiled
// checkpoint's for the model's device (256 KiB of global memory, 256 threads
// and 65,535 blocks per launch, 48 KiB of shared memory and 56 KiB opting in,
// 4 KiB of parameters, a fixed 1 KiB printf buffer, no heap).
TEST(DaemonDevice, ReportsTheDeviceOfItsBackend) {
  struct Want {
    const char* backend;
    uint32_t lanes, rom, threads;
    uint64_t global, ctas;
    uint32_t shared, optin, params, consts;
    uint64_t fifo, heap;
  };
  for (const Want& w : {Want{"interpreter", 32, 1u << 20, 1024, 2ull << 30, 0xffffffffull, 48 << 10, 64 << 10, 32764,
                             64 << 10, 1 << 20, 8 << 20},
                        Want{"ptx-reference", 32, 1u << 20, 1024, 2ull << 30, 0xffffffffull, 48 << 10, 64 << 10, 32764,
                             64 << 10, 1 << 20, 8 << 20},
                        Want{"interpreter-model", 1, 1024, 1024, 256 << 10, 65535, 48 << 10, 56 << 10, 4096, 256 << 10,
                             1024, 0},
                        Want{"model-trace", 1, 1024, 1024, 256 << 10, 65535, 48 << 10, 56 << 10, 4096, 256 << 10, 1024,
                             0}}) {
    Daemon dm({"--backend", w.backend});
    auto c = dm.connect();
    const qgpu::proto::DeviceInfo& d = c->device();
    EXPECT_EQ(d.backend, w.backend);
    EXPECT_EQ(d.lanes, w.lanes) << w.backend;
    EXPECT_EQ(d.rom_blocks, w.rom) << w.backend;
    EXPECT_EQ(d.warp_size, 32u) << w.backend;
    EXPECT_EQ(d.max_threads_per_cta, w.threads) << w.backend;
    EXPECT_EQ(d.global_base, 0x10000000u) << w.backend;
    EXPECT_EQ(d.global_bytes, w.global) << w.backend;
    EXPECT_EQ(d.max_ctas_per_grid, w.ctas) << w.backend;
    EXPECT_EQ(d.shared_bytes_per_cta, w.shared) << w.backend;
    EXPECT_EQ(d.shared_optin_bytes_per_cta, w.optin) << w.backend;
    EXPECT_EQ(d.param_bytes, w.params) << w.backend;
    EXPECT_EQ(d.const_bytes, w.consts) << w.backend;
    EXPECT_EQ(d.printf_fifo_bytes, w.fifo) << w.backend;
    EXPECT_EQ(d.heap_bytes, w.heap) << w.backend;
    uint64_t free_bytes = 0, total = 0;
    c->mem_info(&free_bytes, &total);
    EXPECT_EQ(total, w.global) << w.backend;
    EXPECT_EQ(free_bytes, w.global - w.heap) << w.backend;
  }
}

// --device-memory and $QGPU_DEVICE_MEMORY size the interpreter's device; the
// model's is fixed.
TEST(DaemonDevice, DeviceMemoryIsAnOption) {
  {
    Daemon dm({"--backend", "interpreter", "--device-memory", "64M"});
    EXPECT_EQ(dm.connect()->device().global_bytes, 64u << 20);
  }
  {
    Daemon dm({"--backend", "interpreter"}, {{"QGPU_DEVICE_MEMORY", "3G"}});
    EXPECT_EQ(dm.connect()->device().global_bytes, 3ull << 30);
  }
  auto r = qgpu::test::run({QGPU_MODEL_HOST_BIN, "--backend", "interpreter-model", "--device-memory", "64M"}, {}, 20);
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("fixed device"), std::string::npos) << r.err;
  r = qgpu::test::run({QGPU_MODEL_HOST_BIN, "--backend", "interpreter", "--device-memory", "5G"}, {}, 20);
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("32-bit"), std::string::npos) << r.err;
}

// 2 GiB of device memory cost only the pages programs touch: allocating
// nearly all of it, writing at its far end (above 2 GiB into the address
// space) and freeing it all leave the daemon small.
TEST(DaemonDevice, DeviceMemoryIsBackedLazily) {
  Daemon dm({"--backend", "interpreter"});
  auto c = dm.connect();
  const qgpu::proto::DeviceInfo& d = c->device();
  const uint64_t rss0 = dm.rss_bytes();
  ASSERT_GT(rss0, 0u);
  const uint64_t big = c->malloc(1900ull << 20);
  const uint64_t high = c->malloc(1 << 20);
  EXPECT_GE(high, 0x80000000u);
  EXPECT_LT(high + (1 << 20), d.global_base + d.global_bytes);
  std::vector<uint8_t> in(1 << 20), out(1 << 20);
  for (size_t i = 0; i < in.size(); ++i) in[i] = uint8_t(i * 13 + 5);
  c->write(high, in.data(), in.size());
  c->write(big + (1900ull << 20) - 4096, in.data(), 4096);
  c->read(out.data(), high, out.size());
  EXPECT_EQ(in, out);
  c->memset(big, 0, 4096);
  EXPECT_LT(dm.rss_bytes(), rss0 + (64u << 20));
  c.reset();  // Bye: the session's memory is given back, not cleared byte by byte
  auto c2 = dm.connect();
  uint64_t again = c2->malloc(1 << 20);
  c2->read(out.data(), again, 4096);
  EXPECT_EQ(out[0], 0u);
  EXPECT_EQ(out[4095], 0u);
  EXPECT_LT(dm.rss_bytes(), rss0 + (64u << 20));
}

// A module that declares device malloc, and one kernel that never calls it.
const char* kMallocPtx = R"(.version 9.0
.target sm_75
.address_size 64

.extern .func  (.param .b64 func_retval0) malloc
(
	.param .b64 malloc_param_0
)
;
.visible .entry k()
{
	ret;
}
)";

// cudaDeviceSetLimit / cudaDeviceGetLimit through the Limit request: the
// interpreter's printf FIFO and heap change; the heap is fixed once a kernel
// of a module that uses malloc has run.  The model's are fixed, and asking
// for others names the way out.
TEST(DaemonDevice, LimitsOfTheSession) {
  using qgpu::proto::kLimitMallocHeap;
  using qgpu::proto::kLimitPrintfFifo;
  using qgpu::proto::kQueryLimit;
  {
    Daemon dm({"--backend", "interpreter"});
    auto c = dm.connect();
    EXPECT_EQ(c->limit(kLimitPrintfFifo, kQueryLimit), 1u << 20);
    EXPECT_EQ(c->limit(kLimitMallocHeap, kQueryLimit), 8u << 20);
    EXPECT_EQ(c->limit(kLimitPrintfFifo, 4 << 20), 4u << 20);
    EXPECT_EQ(c->limit(kLimitPrintfFifo, kQueryLimit), 4u << 20);
    EXPECT_EQ(c->limit(kLimitMallocHeap, 64 << 20), 64u << 20);
    uint64_t free_bytes, total;
    c->mem_info(&free_bytes, &total);
    EXPECT_EQ(free_bytes, total - (64u << 20));
    EXPECT_EQ(error_of([&] { c->limit(kLimitPrintfFifo, 1); }).first, cudaErrorInvalidValue);
    EXPECT_EQ(error_of([&] { c->limit(7, 1); }).first, cudaErrorUnsupportedLimit);
    // cudaLimitDevRuntimePendingLaunchCount: CUDA's 2048 at start, 1 to 2^24.
    using qgpu::proto::kLimitPendingLaunches;
    EXPECT_EQ(kLimitPendingLaunches, uint32_t(cudaLimitDevRuntimePendingLaunchCount));
    EXPECT_EQ(c->limit(kLimitPendingLaunches, kQueryLimit), 2048u);
    EXPECT_EQ(c->limit(kLimitPendingLaunches, 4096), 4096u);
    EXPECT_EQ(c->limit(kLimitPendingLaunches, kQueryLimit), 4096u);
    EXPECT_EQ(error_of([&] { c->limit(kLimitPendingLaunches, 0); }).first, cudaErrorInvalidValue);
    // A heap that would overlap an allocation.
    c->malloc(c->device().global_bytes - (80u << 20));
    auto [code, msg] = error_of([&] { c->limit(kLimitMallocHeap, 128 << 20); });
    EXPECT_EQ(code, cudaErrorMemoryAllocation) << msg;
    EXPECT_EQ(c->limit(kLimitMallocHeap, kQueryLimit), 64u << 20);
    qgpu::proto::ModuleImage m = c->load_module(kMallocPtx);
    qgpu::proto::LaunchArgs a;
    a.module = m.id;
    a.kernel = "k";
    EXPECT_EQ(c->launch(a).error, 0);
    std::tie(code, msg) = error_of([&] { c->limit(kLimitMallocHeap, 16 << 20); });
    EXPECT_EQ(code, cudaErrorInvalidValue);
    EXPECT_NE(msg.find("calls malloc"), std::string::npos) << msg;
  }
  {
    Daemon dm({"--backend", "interpreter-model"});
    auto c = dm.connect();
    EXPECT_EQ(c->limit(kLimitPrintfFifo, kQueryLimit), 1024u);
    EXPECT_EQ(c->limit(kLimitMallocHeap, kQueryLimit), 0u);
    EXPECT_EQ(c->limit(kLimitPrintfFifo, 1024), 1024u);
    auto [code, msg] = error_of([&] { c->limit(kLimitPrintfFifo, 1 << 20); });
    EXPECT_EQ(code, cudaErrorUnsupportedLimit);
    EXPECT_NE(msg.find("--backend interpreter"), std::string::npos) << msg;
  }
}

// A launch or allocation beyond the model's device fails with CUDA's error
// and a message naming the limit, what was asked and the way out.
TEST(DaemonDevice, BeyondTheModelsDeviceNamesTheWayOut) {
  Daemon dm({"--backend", "interpreter-model"});
  auto c = dm.connect();
  auto [code, msg] = error_of([&] { c->malloc(1 << 20); });
  EXPECT_EQ(code, cudaErrorMemoryAllocation);
  EXPECT_NE(msg.find("262144 bytes"), std::string::npos) << msg;
  EXPECT_NE(msg.find("--backend interpreter"), std::string::npos) << msg;
  qgpu::proto::ModuleImage m = c->load_module(kPtx);
  qgpu::proto::LaunchArgs a;
  a.module = m.id;
  a.kernel = "_Z1fPii";
  a.params.assign(12, 0);
  a.block[0] = 32;
  a.block[1] = 33;
  std::tie(code, msg) = error_of([&] { c->launch(a); });
  EXPECT_EQ(code, cudaErrorInvalidConfiguration);
  EXPECT_NE(msg.find("1056 threads per block"), std::string::npos) << msg;
  EXPECT_NE(msg.find("at most 1024"), std::string::npos) << msg;
  EXPECT_NE(msg.find("--backend interpreter"), std::string::npos) << msg;
  a.block[0] = a.block[1] = 1;
  a.grid[0] = 65535;
  a.grid[1] = 2;
  std::tie(code, msg) = error_of([&] { c->launch(a); });
  EXPECT_EQ(code, cudaErrorInvalidConfiguration);
  EXPECT_NE(msg.find("--backend interpreter"), std::string::npos) << msg;
  a.grid[0] = a.grid[1] = 1;
  // Beyond the 56 KiB a launch may opt in to (the shim refuses more than 48
  // KiB without opting in; the daemon, the ceiling).
  a.dynamic_smem = 60 * 1024;
  std::tie(code, msg) = error_of([&] { c->launch(a); });
  EXPECT_EQ(code, cudaErrorInvalidValue);
  EXPECT_NE(msg.find("61440 dynamic"), std::string::npos) << msg;
  EXPECT_NE(msg.find("57344 after cudaFuncSetAttribute"), std::string::npos) << msg;
}

// The interpreter's device takes CUDA's launches: 1024-thread blocks, grids
// of 2^31 - 1 blocks in x and 65535 in y and z (the machine's CTA register
// is 32-bit, so at most 2^32 - 1 blocks in all), 64 KiB of shared memory.
TEST(DaemonDevice, TheInterpreterTakesCudasLaunches) {
  Daemon dm({"--backend", "interpreter"});
  auto c = dm.connect();
  qgpu::proto::ModuleImage m = c->load_module(kPtx);
  qgpu::proto::LaunchArgs a;
  a.module = m.id;
  a.kernel = "_Z1fPii";
  a.params.assign(12, 0);
  a.block[0] = 1024;
  a.grid[0] = 100000;
  a.dynamic_smem = 64 << 10;
  EXPECT_EQ(c->launch(a).error, 0);
  a.block[0] = 1025;
  EXPECT_EQ(error_of([&] { c->launch(a); }).first, cudaErrorInvalidConfiguration);
  a.block[0] = 1;
  a.dynamic_smem = (64 << 10) + 1;
  EXPECT_EQ(error_of([&] { c->launch(a); }).first, cudaErrorInvalidValue);
  a.dynamic_smem = 0;
  a.grid[1] = 65536;
  EXPECT_EQ(error_of([&] { c->launch(a); }).first, cudaErrorInvalidConfiguration);
  a.grid[0] = 0x7fffffff;
  a.grid[1] = 65535;
  auto [code, msg] = error_of([&] { c->launch(a); });
  EXPECT_EQ(code, cudaErrorInvalidConfiguration);
  EXPECT_NE(msg.find("4294967295"), std::string::npos) << msg;
}

// The environment clients give the model_host they spawn: glibc's huge-page
// heap is asked for, added to any other tunables, unless already set either
// way or switched off with QGPU_HUGE_PAGES=0.
TEST(DaemonEnvironment, SpawnedDaemonsAskForAHugePageHeap) {
  auto tunables = [] {
    std::vector<std::string> found;
    for (const std::string& e : qgpu::endpoint::daemon_environment())
      if (e.rfind("GLIBC_TUNABLES=", 0) == 0) found.push_back(e);
    return found;
  };
  const char* saved = std::getenv("GLIBC_TUNABLES");
  const std::string saved_value = saved ? saved : "";
  unsetenv("QGPU_HUGE_PAGES");
  unsetenv("GLIBC_TUNABLES");
  EXPECT_EQ(tunables(), std::vector<std::string>{"GLIBC_TUNABLES=glibc.malloc.hugetlb=1"});
  setenv("GLIBC_TUNABLES", "glibc.malloc.check=0", 1);
  EXPECT_EQ(tunables(), std::vector<std::string>{"GLIBC_TUNABLES=glibc.malloc.check=0:glibc.malloc.hugetlb=1"});
  setenv("GLIBC_TUNABLES", "glibc.malloc.hugetlb=0", 1);
  EXPECT_EQ(tunables(), std::vector<std::string>{"GLIBC_TUNABLES=glibc.malloc.hugetlb=0"});
  setenv("QGPU_HUGE_PAGES", "0", 1);
  unsetenv("GLIBC_TUNABLES");
  EXPECT_TRUE(tunables().empty());
  unsetenv("QGPU_HUGE_PAGES");
  // Every other entry is passed on unchanged.
  setenv("QGPU_TEST_MARKER", "a=b", 1);
  const auto env = qgpu::endpoint::daemon_environment();
  EXPECT_NE(std::find(env.begin(), env.end(), "QGPU_TEST_MARKER=a=b"), env.end());
  unsetenv("QGPU_TEST_MARKER");
  if (saved) setenv("GLIBC_TUNABLES", saved_value.c_str(), 1);
  else unsetenv("GLIBC_TUNABLES");
}

}  // namespace
