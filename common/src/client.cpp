#include "qgpu/client.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <deque>
#include <mutex>
#include <thread>
#include <optional>
#include <cstring>
#include <filesystem>
#include <vector>
#include <zmq.hpp>

#include "qgpu/endpoint.h"
#include "qgpu/shm.h"

extern char** environ;

namespace qgpu::client {
namespace {

using Clock = std::chrono::steady_clock;
using proto::Type;

constexpr int kUnknown = 999;           // cudaErrorUnknown
constexpr int kInvalidValue = 1;        // cudaErrorInvalidValue
constexpr uint32_t kMaxInFlight = 8;    // chunks of one copy sent before the first reply

// zmq::poll that treats a signal arriving in the program as a timeout.
int poll_for(zmq::socket_t& s, short events, int ms) {
  zmq::pollitem_t item{s.handle(), 0, events, 0};
  try {
    zmq::poll(&item, 1, std::chrono::milliseconds(ms));
  } catch (const zmq::error_t& e) {
    if (e.num() != EINTR) throw;
    return 0;
  }
  return item.revents;
}

int ms_since(Clock::time_point t) {
  return int(std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t).count());
}

struct Reply {
  proto::Header header;
  zmq::message_t body, bulk;
  bool has_bulk = false;
};

// Sends one message without blocking: header, body and, when `has_bulk`, a
// bulk frame that references the caller's buffer (the caller keeps it alive
// until the reply arrives, which the peer sends only after receiving all of
// it).  Returns false when no daemon connection can take it now.
bool try_send(zmq::socket_t& s, const proto::Header& h, std::vector<uint8_t>& body, const void* bulk,
              size_t bulk_size, bool has_bulk) {
  uint8_t hb[proto::kHeaderSize];
  proto::encode_header(h, hb);
  if (!s.send(zmq::buffer(hb, sizeof hb), zmq::send_flags::sndmore | zmq::send_flags::dontwait)) return false;
  // Later frames of a started message are always accepted.
  s.send(zmq::buffer(body.data(), body.size()), has_bulk ? zmq::send_flags::sndmore : zmq::send_flags::none);
  if (has_bulk) {
    zmq::message_t m(const_cast<void*>(bulk), bulk_size, nullptr, nullptr);
    s.send(m, zmq::send_flags::none);
  }
  return true;
}

std::string model_host_path(const Options& o) {
  if (!o.model_host.empty()) return o.model_host;
  std::string env = endpoint::env_or(endpoint::kModelHostEnv, "");
  if (!env.empty()) return env;
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&model_host_path), &info) && info.dli_fname) {
    std::filesystem::path self = std::filesystem::weakly_canonical(info.dli_fname);
    for (auto cand : {self.parent_path().parent_path() / "bin" / "model_host", self.parent_path() / "model_host"})
      if (access(cand.c_str(), X_OK) == 0) return cand.string();
  }
  throw Error(kUnknown, std::string("cannot find the model_host program to start; set ") + endpoint::kModelHostEnv +
                            " to its path, or start it by hand and set " + endpoint::kDaemonEnv);
}

}  // namespace

struct Connection::Impl {
  Options opts;
  std::string endpoint;
  zmq::context_t ctx{1};
  zmq::socket_t sock{ctx, zmq::socket_type::dealer};
  std::mutex mu;
  uint32_t next_request = 1;
  uint64_t session = 0;
  pid_t child = -1;

  // The shared-memory channel (qgpu/shm.h), when the daemon offered one.
  void* shm_base = nullptr;
  uint32_t shm_posted = 0;  // requests posted in the segment
  // The session's device memory as a file, when the daemon shares it
  // (ShmAttach): this process's own descriptor of it, and its size.
  int device_fd = -1;
  uint64_t device_bytes = 0;

  std::thread heartbeat;
  std::atomic<bool> stop{false};
  std::atomic<bool> lost{false};
  std::mutex lost_mu;
  std::string lost_reason;

  void set_lost(const std::string& why) {
    std::lock_guard<std::mutex> g(lost_mu);
    if (!lost) lost_reason = why;
    lost = true;
  }
  [[noreturn]] void throw_lost() {
    std::lock_guard<std::mutex> g(lost_mu);
    throw Error(kUnknown, "lost the model_host daemon at " + endpoint + ": " + lost_reason, true);
  }

  // Sends a request; while the daemon is not connected, waits (in slices,
  // watching for a lost daemon) up to `timeout_ms` (< 0: until lost).
  uint32_t send(Type t, proto::Writer& body, const void* bulk = nullptr, size_t n = 0, bool has_bulk = false,
                int timeout_ms = -1) {
    proto::Header h;
    h.type = uint16_t(t);
    h.request = next_request++;
    h.session = session;
    auto start = Clock::now();
    for (;;) {
      if (lost) throw_lost();
      if (try_send(sock, h, body.data(), bulk, n, has_bulk)) return h.request;
      if (timeout_ms >= 0 && ms_since(start) > timeout_ms)
        throw Error(kUnknown, "model_host at " + endpoint + " is not connected (waited " +
                                  std::to_string(timeout_ms) + " ms)");
      poll_for(sock, ZMQ_POLLOUT, 100);
    }
  }

  // Waits for the reply to `request`; gives up after `timeout_ms` (< 0: only
  // when the daemon is lost).
  Reply await(uint32_t request, int timeout_ms = -1) {
    auto start = Clock::now();
    for (;;) {
      if (lost) throw_lost();
      if (timeout_ms >= 0 && ms_since(start) > timeout_ms)
        throw Error(kUnknown, "model_host at " + endpoint + " did not answer within " +
                                  std::to_string(timeout_ms) + " ms");
      if (!(poll_for(sock, ZMQ_POLLIN, 100) & ZMQ_POLLIN)) continue;
      std::vector<zmq::message_t> frames;
      for (bool more = true; more;) {
        zmq::message_t m;
        (void)sock.recv(m);
        more = m.more();
        frames.push_back(std::move(m));
      }
      Reply r;
      try {
        if (frames.size() < 2 || frames.size() > 3) throw proto::ProtocolError("reply has " + std::to_string(frames.size()) + " frames");
        r.header = proto::decode_header(frames[0].data(), frames[0].size());
      } catch (const proto::ProtocolError& e) {
        set_lost(std::string("malformed reply: ") + e.what());
        throw_lost();
      }
      if (r.header.request != request) continue;  // a reply to an abandoned request
      r.body = std::move(frames[1]);
      if (frames.size() == 3) {
        r.bulk = std::move(frames[2]);
        r.has_bulk = true;
      }
      return r;
    }
  }

  static void check(const Reply& r) {
    if (r.header.status == 0) return;
    proto::Reader rd(r.body.data(), r.body.size());
    std::string msg;
    try {
      msg = rd.str("message");
    } catch (const proto::ProtocolError& e) {
      msg = std::string("(unreadable error message: ") + e.what() + ")";
    }
    throw Error(r.header.status, msg);
  }

  Reply call(Type t, proto::Writer body) {
    std::lock_guard<std::mutex> g(mu);
    Reply r = shm_base && body.data().size() <= shm::kInline ? shm_collect(shm_post(t, body.data(), nullptr, 0))
                                                             : await(send(t, body));
    check(r);
    return r;
  }

  // ---- The shared-memory channel -------------------------------------------
  struct Posted {
    uint32_t seq, request;
  };

  // Posts a request in the next slot; `bulk` (Write) goes to the slot's
  // chunk, `bulk_len` is also the size a Read asks for.  The caller has
  // collected the slot's previous request.
  Posted shm_post(Type t, const std::vector<uint8_t>& body, const void* bulk, uint32_t bulk_len) {
    if (lost) throw_lost();
    uint32_t seq = shm_posted++;
    shm::Slot* s = shm::slot(shm_base, seq);
    s->type = uint16_t(t);
    s->request = next_request++;
    s->body_len = uint32_t(body.size());
    s->bulk_len = bulk_len;
    std::memcpy(s->body, body.data(), body.size());
    if (bulk) std::memcpy(shm::chunk(shm_base, seq), bulk, bulk_len);
    shm::Control* c = shm::control(shm_base);
    c->req_seq.store(shm_posted, std::memory_order_seq_cst);
    shm::ring(&c->bell, &c->server_waiting);
    return {seq, s->request};
  }

  // Waits for the reply to a posted request; a read's bytes are then in the
  // slot's chunk.
  Reply shm_collect(Posted p) {
    shm::Control* c = shm::control(shm_base);
    for (;;) {
      uint32_t done = c->rep_seq.load(std::memory_order_acquire);
      if (int32_t(done - (p.seq + 1)) >= 0) break;
      if (lost) throw_lost();
      shm::wait_change(&c->rep_seq, &c->client_waiting, done, shm::spin_us(), 100);
    }
    const shm::Slot* s = shm::slot(shm_base, p.seq);
    if (s->flags & shm::kReplyViaZmq) return await(p.request);
    Reply r;
    r.header.type = s->type;
    r.header.request = p.request;
    r.header.session = session;
    r.header.status = s->status;
    r.body = zmq::message_t(s->body, std::min<uint32_t>(s->reply_len, shm::kInline));
    return r;
  }

  // Asks the daemon for a segment and maps it; on any failure the
  // connection keeps to ZeroMQ alone.
  void shm_attach() {
    std::string env = endpoint::env_or("QGPU_SHM", "1");
    if (env == "0" || endpoint::is_tcp(endpoint)) return;
    Reply r;
    {
      std::lock_guard<std::mutex> g(mu);
      proto::Writer none;
      r = await(send(Type::ShmAttach, none));
    }
    if (r.header.status != 0) return;
    uint32_t pid;
    int32_t fd, dev_fd;
    uint64_t size, dev_size;
    try {
      proto::Reader rd(r.body.data(), r.body.size());
      pid = rd.u32("pid");
      fd = rd.i32("fd");
      size = rd.u64("size");
      dev_fd = rd.i32("device_fd");
      dev_size = rd.u64("device_size");
      rd.finish("ShmAttach");
    } catch (const proto::ProtocolError&) {
      return;
    }
    if (size != shm::kSegmentBytes) return;
    std::string path = "/proc/" + std::to_string(pid) + "/fd/" + std::to_string(fd);
    int f = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
    if (f < 0) return;
    struct stat st {};
    void* base = MAP_FAILED;
    if (fstat(f, &st) == 0 && uint64_t(st.st_size) == size)
      base = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, f, 0);
    ::close(f);
    if (base == MAP_FAILED) return;
    const shm::Control* c = shm::control(base);
    if (c->magic != shm::kMagic || c->version != shm::kVersion || c->session != session || c->slots != shm::kSlots ||
        c->slot_bytes != shm::kSlotBytes || c->chunk != shm::kChunk) {
      munmap(base, size);
      return;
    }
    shm_base = base;
    // The device memory, opened now (the daemon keeps its descriptor for the
    // session's life); mapped range by range where the program asks for
    // memory both sides reach (cudaMallocManaged, cudaHostAlloc).
    if (dev_fd >= 0 && dev_size) {
      std::string dpath = "/proc/" + std::to_string(pid) + "/fd/" + std::to_string(dev_fd);
      int df = ::open(dpath.c_str(), O_RDWR | O_CLOEXEC);
      struct stat dst {};
      if (df >= 0 && fstat(df, &dst) == 0 && uint64_t(dst.st_size) == dev_size) {
        device_fd = df;
        device_bytes = dev_size;
      } else if (df >= 0) {
        ::close(df);
      }
    }
  }

  // Sends `size` bytes in chunks, each a message of type `t` whose body is
  // the chunk's address; at most kMaxInFlight chunks await their replies.
  void chunked_write(Type t, uint64_t addr, const void* src, uint64_t size) {
    std::lock_guard<std::mutex> g(mu);
    auto* p = static_cast<const uint8_t*>(src);
    if (shm_base) {
      // Each chunk is copied into its slot's chunk while the daemon copies
      // the previous ones out.
      std::deque<Posted> pending;
      std::optional<Error> first_error;
      auto collect = [&] {
        Reply r = shm_collect(pending.front());
        pending.pop_front();
        try {
          check(r);
        } catch (const Error& e) {
          if (!first_error) first_error = e;
        }
      };
      for (uint64_t off = 0; off < size;) {
        uint32_t n = uint32_t(std::min<uint64_t>(size - off, shm::kChunk));
        if (pending.size() == shm::kSlots) collect();
        proto::Writer w;
        w.u64(addr + off);
        pending.push_back(shm_post(t, w.data(), p + off, n));
        off += n;
      }
      while (!pending.empty()) collect();
      if (first_error) throw *first_error;
      return;
    }
    std::vector<uint32_t> pending;
    size_t next_reply = 0;
    std::optional<Error> first_error;
    auto collect = [&] {
      Reply r = await(pending[next_reply++]);
      try {
        check(r);
      } catch (const Error& e) {
        if (!first_error) first_error = e;
      }
    };
    for (uint64_t off = 0; off < size;) {
      uint64_t n = std::min<uint64_t>(size - off, proto::kMaxBulk);
      proto::Writer w;
      w.u64(addr + off);
      pending.push_back(send(t, w, p + off, n, true));
      off += n;
      if (pending.size() - next_reply >= kMaxInFlight) collect();
    }
    while (next_reply < pending.size()) collect();
    if (first_error) throw *first_error;
  }

  void chunked_read(Type t, void* dst, uint64_t addr, uint64_t size) {
    std::lock_guard<std::mutex> g(mu);
    auto* p = static_cast<uint8_t*>(dst);
    if (shm_base) {
      // Up to kSlots reads in flight; each chunk is copied out of its slot
      // while the daemon fills the next ones.
      struct Chunk {
        Posted posted;
        uint64_t off;
        uint32_t n;
      };
      std::deque<Chunk> pending;
      std::optional<Error> first_error;
      auto collect = [&] {
        Chunk ch = pending.front();
        pending.pop_front();
        Reply r = shm_collect(ch.posted);
        try {
          check(r);
          std::memcpy(p + ch.off, shm::chunk(shm_base, ch.posted.seq), ch.n);
        } catch (const Error& e) {
          if (!first_error) first_error = e;
        }
      };
      for (uint64_t off = 0; off < size;) {
        uint32_t n = uint32_t(std::min<uint64_t>(size - off, shm::kChunk));
        if (pending.size() == shm::kSlots) collect();
        proto::Writer w;
        w.u64(addr + off).u64(n);
        pending.push_back({shm_post(t, w.data(), nullptr, n), off, n});
        off += n;
      }
      while (!pending.empty()) collect();
      if (first_error) throw *first_error;
      return;
    }
    struct Chunk { uint32_t request; uint64_t off, n; };
    std::vector<Chunk> pending;
    size_t next_reply = 0;
    std::optional<Error> first_error;
    auto collect = [&] {
      const Chunk& c = pending[next_reply++];
      Reply r = await(c.request);
      try {
        check(r);
        if (!r.has_bulk || r.bulk.size() != c.n)
          throw Error(kUnknown, "model_host answered a read of " + std::to_string(c.n) + " bytes with " +
                                    std::to_string(r.has_bulk ? r.bulk.size() : 0));
        std::memcpy(p + c.off, r.bulk.data(), c.n);
      } catch (const Error& e) {
        if (!first_error) first_error = e;
      }
    };
    for (uint64_t off = 0; off < size;) {
      uint64_t n = std::min<uint64_t>(size - off, proto::kMaxBulk);
      proto::Writer w;
      w.u64(addr + off).u64(n);
      pending.push_back({send(t, w), off, n});
      off += n;
      if (pending.size() - next_reply >= kMaxInFlight) collect();
    }
    while (next_reply < pending.size()) collect();
    if (first_error) throw *first_error;
  }

  void heartbeat_loop() {
    zmq::socket_t hb(ctx, zmq::socket_type::dealer);
    hb.set(zmq::sockopt::linger, 0);
    hb.connect(endpoint);
    auto last_reply = Clock::now();
    uint32_t request = 1;
    while (!stop) {
      proto::Header h;
      h.type = uint16_t(Type::Ping);
      h.request = request++;
      h.session = session;
      std::vector<uint8_t> empty;
      uint8_t hbuf[proto::kHeaderSize];
      proto::encode_header(h, hbuf);
      (void)hb.send(zmq::buffer(hbuf, sizeof hbuf), zmq::send_flags::sndmore | zmq::send_flags::dontwait);
      (void)hb.send(zmq::buffer(empty.data(), 0), zmq::send_flags::dontwait);
      auto tick = Clock::now();
      while (!stop && ms_since(tick) < opts.heartbeat_ms) {
        if (poll_for(hb, ZMQ_POLLIN, 50) & ZMQ_POLLIN) {
          std::vector<zmq::message_t> frames;
          for (bool more = true; more;) {
            zmq::message_t m;
            (void)hb.recv(m);
            more = m.more();
            frames.push_back(std::move(m));
          }
          try {
            proto::Header rh = proto::decode_header(frames[0].data(), frames[0].size());
            if (rh.status != 0) {
              set_lost("the daemon no longer knows this client (it was restarted or timed the client out)");
              return;
            }
            last_reply = Clock::now();
          } catch (const proto::ProtocolError& e) {
            set_lost(std::string("malformed heartbeat reply: ") + e.what());
            return;
          }
        }
      }
      if (child > 0) {
        int status = 0;
        if (waitpid(child, &status, WNOHANG) == child) {
          set_lost("model_host (pid " + std::to_string(child) + ") " +
                   (WIFSIGNALED(status) ? "was killed by signal " + std::to_string(WTERMSIG(status))
                                        : "exited with status " + std::to_string(WEXITSTATUS(status))));
          return;
        }
      }
      if (ms_since(last_reply) > opts.heartbeat_timeout_ms) {
        set_lost("no answer to heartbeats for " + std::to_string(opts.heartbeat_timeout_ms) +
                 " ms (the daemon died or hangs)");
        return;
      }
    }
  }

  bool wait_connected(int timeout_ms) {
    auto start = Clock::now();
    while (ms_since(start) <= timeout_ms)
      if (poll_for(sock, ZMQ_POLLOUT, std::max(1, timeout_ms - ms_since(start))) & ZMQ_POLLOUT) return true;
    return false;
  }

  void spawn_daemon() {
    std::string exe = model_host_path(opts);
    std::string log = endpoint::runtime_dir() + "/model_host.log";
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 1, log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0600);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
    posix_spawnattr_t attr;
    posix_spawnattr_init(&attr);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSID);
    std::vector<std::string> args = {exe, "--endpoint", endpoint, "--idle-exit-s", "60"};
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    std::vector<std::string> env = endpoint::daemon_environment();
    std::vector<char*> envp;
    for (auto& e : env) envp.push_back(e.data());
    envp.push_back(nullptr);
    int rc = posix_spawn(&child, exe.c_str(), &fa, &attr, argv.data(), envp.data());
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&attr);
    if (rc != 0) throw Error(kUnknown, "cannot start " + exe + ": " + std::strerror(rc));
  }
};

Connection::Connection(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

std::unique_ptr<Connection> Connection::open(Options opts) {
  std::string env_daemon = endpoint::env_or(endpoint::kDaemonEnv, "");
  bool explicit_endpoint = !opts.endpoint.empty() || !env_daemon.empty();
  if (opts.endpoint.empty()) opts.endpoint = env_daemon.empty() ? endpoint::default_endpoint() : env_daemon;
  if (opts.secret.empty()) opts.secret = endpoint::env_or(endpoint::kSecretEnv, "");
  std::string hb = endpoint::env_or("QGPU_HEARTBEAT_TIMEOUT_MS", "");
  if (!hb.empty()) opts.heartbeat_timeout_ms = std::max(200, std::atoi(hb.c_str()));

  auto impl = std::make_unique<Impl>();
  impl->opts = opts;
  impl->endpoint = opts.endpoint;
  impl->sock.set(zmq::sockopt::linger, 0);
  impl->sock.set(zmq::sockopt::immediate, 1);  // queue nothing for a daemon that is not there
  impl->sock.set(zmq::sockopt::maxmsgsize, int64_t(proto::kMaxMessage));
  try {
    impl->sock.connect(opts.endpoint);
  } catch (const zmq::error_t& e) {
    throw Error(kInvalidValue, "cannot use endpoint '" + opts.endpoint + "': " + e.what());
  }

  if (!impl->wait_connected(explicit_endpoint || !opts.spawn ? opts.connect_timeout_ms : 300)) {
    if (explicit_endpoint || !opts.spawn)
      throw Error(kUnknown, "no model_host answers at " + opts.endpoint + " (waited " +
                                std::to_string(opts.connect_timeout_ms) + " ms)");
    // One spawner at a time: the others wait on the lock, then find the daemon.
    std::string lock_path = endpoint::runtime_dir() + "/spawn.lock";
    int lock = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (lock >= 0) flock(lock, LOCK_EX);
    bool up = impl->wait_connected(300);
    if (!up) {
      impl->spawn_daemon();
      up = impl->wait_connected(opts.connect_timeout_ms);
    }
    if (lock >= 0) close(lock);
    if (!up)
      throw Error(kUnknown, "started model_host for " + opts.endpoint + " but it did not come up within " +
                                std::to_string(opts.connect_timeout_ms) + " ms; see " + endpoint::runtime_dir() +
                                "/model_host.log");
  }

  proto::Writer w;
  w.u32(uint32_t(getpid())).str(opts.secret).str(opts.program);
  Reply r = impl->await(impl->send(Type::Hello, w, nullptr, 0, false, opts.connect_timeout_ms), opts.connect_timeout_ms);
  Impl::check(r);
  proto::Reader rd(r.body.data(), r.body.size());
  proto::DeviceInfo dev = proto::decode_device_info(rd);
  impl->session = r.header.session;
  impl->heartbeat = std::thread([p = impl.get()] { p->heartbeat_loop(); });
  impl->shm_attach();

  std::unique_ptr<Connection> c(new Connection(std::move(impl)));
  c->device_ = std::move(dev);
  c->endpoint_ = opts.endpoint;
  c->session_ = c->impl_->session;
  return c;
}

Connection::~Connection() {
  impl_->stop = true;
  if (impl_->heartbeat.joinable()) impl_->heartbeat.join();
  if (!impl_->lost) {
    try {
      std::lock_guard<std::mutex> g(impl_->mu);
      proto::Writer w;
      impl_->await(impl_->send(Type::Bye, w, nullptr, 0, false, 1000), 1000);
    } catch (const Error&) {
      // The daemon frees the session on its own when it stops hearing from us.
    }
  }
  if (impl_->shm_base) munmap(impl_->shm_base, shm::kSegmentBytes);
  if (impl_->device_fd >= 0) ::close(impl_->device_fd);
}

uint64_t Connection::malloc(uint64_t size) {
  proto::Writer w;
  w.u64(size);
  Reply r = impl_->call(Type::Malloc, std::move(w));
  proto::Reader rd(r.body.data(), r.body.size());
  return rd.u64("addr");
}

void Connection::free(uint64_t addr) {
  proto::Writer w;
  w.u64(addr);
  impl_->call(Type::Free, std::move(w));
}

void Connection::write(uint64_t addr, const void* src, uint64_t size) { impl_->chunked_write(Type::Write, addr, src, size); }
void Connection::read(void* dst, uint64_t addr, uint64_t size) { impl_->chunked_read(Type::Read, dst, addr, size); }
void Connection::scratch_write(uint64_t off, const void* src, uint64_t size) {
  impl_->chunked_write(Type::ScratchWrite, off, src, size);
}
void Connection::scratch_read(void* dst, uint64_t off, uint64_t size) { impl_->chunked_read(Type::ScratchRead, dst, off, size); }

void Connection::copy(uint64_t dst, uint64_t src, uint64_t size) {
  proto::Writer w;
  w.u64(dst).u64(src).u64(size);
  impl_->call(Type::Copy, std::move(w));
}

void Connection::memset(uint64_t addr, uint8_t value, uint64_t size) {
  proto::Writer w;
  w.u64(addr).u32(value).u64(size);
  impl_->call(Type::Memset, std::move(w));
}

void Connection::mem_info(uint64_t* free_bytes, uint64_t* total_bytes) {
  Reply r = impl_->call(Type::MemInfo, proto::Writer());
  proto::Reader rd(r.body.data(), r.body.size());
  *free_bytes = rd.u64("free");
  *total_bytes = rd.u64("total");
}

uint64_t Connection::limit(uint32_t which, uint64_t value) {
  proto::Writer w;
  w.u32(which).u64(value);
  Reply r = impl_->call(Type::Limit, std::move(w));
  proto::Reader rd(r.body.data(), r.body.size());
  return rd.u64("value");
}

proto::ModuleImage Connection::load_module(const std::string& ptx) {
  proto::Writer w;
  w.str(ptx);
  Reply r = impl_->call(Type::ModuleLoad, std::move(w));
  proto::Reader rd(r.body.data(), r.body.size());
  return proto::decode_module_image(rd);
}

void Connection::unload_module(uint32_t module) {
  proto::Writer w;
  w.u32(module);
  impl_->call(Type::ModuleUnload, std::move(w));
}

proto::LaunchOutcome Connection::launch(const proto::LaunchArgs& args) {
  proto::Writer w;
  proto::encode(w, args);
  Reply r = impl_->call(Type::Launch, std::move(w));
  proto::Reader rd(r.body.data(), r.body.size());
  return proto::decode_launch_outcome(rd);
}

bool Connection::shared_memory() const { return impl_->shm_base != nullptr; }
int Connection::device_memory_fd() const { return impl_->device_fd; }

void Connection::ping() { impl_->call(Type::Ping, proto::Writer()); }

proto::LaunchProgress Connection::progress(bool shown, uint32_t wait_ms) {
  proto::Writer w;
  w.u32(shown ? 1 : 0).u32(wait_ms);
  Reply r = impl_->call(Type::Progress, std::move(w));
  proto::Reader rd(r.body.data(), r.body.size());
  return proto::decode_launch_progress(rd);
}

proto::LaunchCounters Connection::daemon_stats() {
  Reply r = impl_->call(Type::Stats, proto::Writer());
  proto::Reader rd(r.body.data(), r.body.size());
  return proto::decode_counters(rd);
}

}  // namespace qgpu::client
