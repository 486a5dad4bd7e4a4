#include "model_host/daemon/server.h"

#include <driver_types.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <optional>
#include <random>
#include <thread>

#include "model_host/daemon/log.h"
#include "qgpu/endpoint.h"
#include "qgpu/shm.h"

namespace qgpu::daemon {
namespace {

using Clock = std::chrono::steady_clock;
constexpr const char* kRepliesEndpoint = "inproc://model_host-replies";

std::string hex(uint64_t v) {
  char b[24];
  std::snprintf(b, sizeof b, "0x%llx", static_cast<unsigned long long>(v));
  return b;
}

std::vector<zmq::message_t> reply_frames(const std::string& peer, const proto::Header& req, Reply r) {
  proto::Header h = req;
  h.status = r.status;
  uint8_t hb[proto::kHeaderSize];
  proto::encode_header(h, hb);
  std::vector<zmq::message_t> f;
  f.emplace_back(peer.data(), peer.size());
  f.emplace_back(hb, sizeof hb);
  f.emplace_back(r.body.data().data(), r.body.data().size());
  if (r.bulk) f.push_back(std::move(*r.bulk));
  return f;
}

}  // namespace

// A session and the thread that serves its queue: requests that came over
// ZeroMQ (pushed by the I/O thread) and, once the client attached one, those
// posted in the session's shared-memory segment (qgpu/shm.h).
struct Server::Worker {
  struct Item {
    std::string peer;
    proto::Header header;
    zmq::message_t body, bulk;
    bool has_bulk = false;
  };

  Worker(zmq::context_t& ctx, uint64_t id, Device& device, std::string client, uint32_t pid, bool allow_shm)
      : session(id, device, client), id(id), client(std::move(client)), pid(pid), allow_shm(allow_shm),
        last_seen(Clock::now()) {
    thread = std::thread([this, &ctx] { loop(ctx); });
  }
  ~Worker() {
    close();
    thread.join();
    if (shm_base) munmap(shm_base, shm::kSegmentBytes);
    if (shm_fd >= 0) ::close(shm_fd);
  }

  // Drops what is queued; the running request, if any, completes first.
  void close() {
    {
      std::lock_guard<std::mutex> g(mu);
      closing = true;
      queue.clear();
    }
    wake();
  }

  void push(Item it) {
    {
      std::lock_guard<std::mutex> g(mu);
      queue.push_back(std::move(it));
    }
    wake();
  }

  void wake() {
    cv.notify_all();
    if (shm::Control* c = ctl.load()) shm::ring(&c->bell, &c->server_waiting);
  }

  // Creates the session's segment: a sealed memfd the client maps through
  // /proc/<pid>/fd/<fd>.  The seals keep its size fixed, so no access of the
  // daemon's to it can fault whatever the client does.
  Reply attach() {
    if (!allow_shm) return Reply::error(cudaErrorNotSupported, "model_host: shared memory is offered on ipc:// endpoints only");
    if (ctl.load()) return Reply::error(cudaErrorInvalidValue, "model_host: the session already has a shared-memory segment");
    int fd = memfd_create("qgpu-session", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    void* base = MAP_FAILED;
    if (fd >= 0 && ftruncate(fd, off_t(shm::kSegmentBytes)) == 0 &&
        fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) == 0)
      base = mmap(nullptr, shm::kSegmentBytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (base == MAP_FAILED) {
      std::string why = std::strerror(errno);
      if (fd >= 0) ::close(fd);
      return Reply::error(cudaErrorMemoryAllocation, "model_host: cannot create a shared-memory segment: " + why);
    }
    auto* c = new (base) shm::Control{};
    c->magic = shm::kMagic;
    c->version = shm::kVersion;
    c->session = id;
    c->slots = shm::kSlots;
    c->slot_bytes = shm::kSlotBytes;
    c->chunk = shm::kChunk;
    shm_base = base;
    shm_fd = fd;
    consumed = 0;
    ctl.store(c);
    // The device memory too, where it is bytes here: the client maps the
    // ranges both sides reach (managed and mapped host memory) from it.
    const int dev_fd = session.share_memory();
    Reply r;
    r.body.u32(uint32_t(getpid())).i32(fd).u64(shm::kSegmentBytes);
    r.body.i32(dev_fd).u64(dev_fd >= 0 ? session.memory_bytes() : 0);
    return r;
  }

  bool shm_pending() {
    shm::Control* c = ctl.load();
    return c && !shm_broken && c->req_seq.load(std::memory_order_acquire) != consumed;
  }

  // Serves the next request posted in the segment.  Every field is read
  // once and checked against this side's constants.
  void serve_shm(zmq::socket_t& out, const std::string& peer) {
    shm::Control* c = ctl.load();
    uint32_t posted = c->req_seq.load(std::memory_order_acquire);
    if (posted - consumed > shm::kSlots) {
      log("session ", hex(id), " (", client, "): ", posted - consumed,
          " requests posted in shared memory, more than its ", shm::kSlots, " slots; the segment is no longer read");
      shm_broken = true;
      return;
    }
    if (shm_fd >= 0) {  // the client has mapped the segment
      ::close(shm_fd);
      shm_fd = -1;
    }
    uint32_t index = consumed % shm::kSlots;
    shm::Slot* s = shm::slot(shm_base, index);
    volatile shm::Slot* vs = s;
    proto::Header h;
    h.type = vs->type;
    h.request = vs->request;
    h.session = id;
    uint32_t body_len = vs->body_len, bulk_len = vs->bulk_len;
    Reply r;
    std::vector<uint8_t> body;
    if (body_len > shm::kInline || bulk_len > shm::kChunk) {
      r = Reply::error(cudaErrorInvalidValue, "model_host: a shared-memory request with a body of " +
                                                  std::to_string(body_len) + " bytes and " + std::to_string(bulk_len) +
                                                  " bulk bytes exceeds its slot");
    } else {
      body.assign(s->body, s->body + body_len);
      auto type = proto::Type(h.type);
      uint8_t* chunk = shm::chunk(shm_base, index);
      if (!proto::known_type(h.type) || type == proto::Type::Hello || type == proto::Type::ShmAttach) {
        r = Reply::error(cudaErrorInvalidValue, "model_host: message type " + std::to_string(h.type) +
                                                    " cannot be posted in shared memory");
      } else if (type == proto::Type::Ping) {
      } else if (type == proto::Type::Bye) {
        said_bye = true;
      } else {
        Bulk bulk;
        if (type == proto::Type::Write || type == proto::Type::ScratchWrite) {
          bulk.in = chunk;
          bulk.in_size = bulk_len;
        } else if (type == proto::Type::Read || type == proto::Type::ScratchRead) {
          bulk.out = chunk;
          bulk.out_size = shm::kChunk;
        }
        proto::Reader rd(body.data(), body.size());
        r = session.serve(type, rd, bulk);
      }
    }
    // The reply: in the slot when it fits, else over ZeroMQ.
    uint32_t flags = 0, len = 0;
    if (r.bulk || r.body.data().size() > shm::kInline) {
      if (r.bulk && r.status == 0)
        r = Reply::error(cudaErrorUnknown, "model_host: a shared-memory read answered without its chunk");
      flags = shm::kReplyViaZmq;
      send(out, reply_frames(peer, h, std::move(r)));
    } else {
      len = uint32_t(r.body.data().size());
      std::memcpy(s->body, r.body.data().data(), len);
      vs->status = r.status;
    }
    vs->flags = flags;
    vs->reply_len = len;
    ++consumed;
    shm::publish(&c->rep_seq, &c->client_waiting, consumed);
  }

  static void send(zmq::socket_t& out, std::vector<zmq::message_t> frames) {
    for (size_t i = 0; i < frames.size(); ++i)
      out.send(frames[i], i + 1 < frames.size() ? zmq::send_flags::sndmore : zmq::send_flags::none);
  }

  void loop(zmq::context_t& ctx) {
    zmq::socket_t out(ctx, zmq::socket_type::push);
    out.set(zmq::sockopt::linger, 0);
    out.connect(kRepliesEndpoint);
    std::string peer;  // the client's ZeroMQ identity, for replies too large for a slot
    auto last_served = Clock::now();
    for (;;) {
      std::optional<Item> it;
      shm::Control* c = ctl.load();
      uint32_t bell = c ? c->bell.load(std::memory_order_seq_cst) : 0;
      {
        std::unique_lock<std::mutex> g(mu);
        if (!c) cv.wait(g, [&] { return closing || !queue.empty(); });
        if (!queue.empty()) {
          it = std::move(queue.front());
          queue.pop_front();
        } else if (closing) {
          break;
        }
        if (it || shm_pending()) {
          busy_since = Clock::now();
          busy = true;
        }
      }
      if (it) {
        peer = it->peer;
        auto type = proto::Type(it->header.type);
        Reply r;
        if (type == proto::Type::Bye) {
          said_bye = true;  // the session is released below, after the reply
        } else if (type == proto::Type::ShmAttach) {
          r = attach();
        } else {
          proto::Reader rd(it->body.data(), it->body.size());
          Bulk bulk;
          if (it->has_bulk) {
            bulk.in = static_cast<const uint8_t*>(it->bulk.data());
            bulk.in_size = it->bulk.size();
          }
          r = session.serve(type, rd, bulk);
        }
        send(out, reply_frames(it->peer, it->header, std::move(r)));
      } else if (shm_pending()) {
        serve_shm(out, peer);
      } else {
        // Nothing to do: spin a little right after a request (the next one
        // usually follows within microseconds), then sleep on the bell.
        int spin = Clock::now() - last_served < std::chrono::microseconds(200) ? shm::spin_us() : 0;
        shm::wait_change(&c->bell, &c->server_waiting, bell, spin, 100);
        continue;
      }
      busy = false;
      last_served = Clock::now();
      if (said_bye) break;
    }
    size_t live = session.live_allocations();
    session.release_all();
    log("session ", hex(id), " (", client, ") released", live ? ": freed " + std::to_string(live) + " allocations" : "");
    finished = true;
  }

  Session session;
  uint64_t id;
  std::string client;
  uint32_t pid;
  bool allow_shm;
  Clock::time_point last_seen;
  std::atomic<Clock::time_point> busy_since{};
  std::atomic<bool> busy{false}, finished{false}, said_bye{false};
  Clock::time_point last_progress{};

  // The shared-memory segment (worker thread only, but `ctl`, which the I/O
  // thread reads to ring the bell).
  std::atomic<shm::Control*> ctl{nullptr};
  void* shm_base = nullptr;
  int shm_fd = -1;
  uint32_t consumed = 0;
  bool shm_broken = false;

  std::mutex mu;
  std::condition_variable cv;
  std::deque<Item> queue;
  bool closing = false;
  std::thread thread;
};

Server::Server(ServerOptions opts, Device& device) : opts_(std::move(opts)), device_(device) {
  router_.set(zmq::sockopt::linger, 0);
  router_.set(zmq::sockopt::maxmsgsize, int64_t(proto::kMaxMessage));
  if (endpoint::is_tcp(opts_.endpoint) && opts_.secret.empty())
    throw std::runtime_error("a tcp:// endpoint needs a shared secret (--secret or $QGPU_SECRET)");
  replies_.bind(kRepliesEndpoint);
  try {
    router_.bind(opts_.endpoint);
  } catch (const zmq::error_t& e) {
    throw std::runtime_error("cannot listen on " + opts_.endpoint + ": " + e.what());
  }
  idle_since_ = Clock::now();
}

Server::~Server() {
  // No client will read what a running launch returns: end it (where the
  // backend can) rather than wait for it.
  for (auto& [id, w] : sessions_) w->session.cancel_launches();
  for (auto& w : retiring_) w->session.cancel_launches();
  sessions_.clear();
  retiring_.clear();
  std::string path = endpoint::ipc_path(opts_.endpoint);
  if (!path.empty()) ::unlink(path.c_str());
}

void Server::run(const std::atomic<bool>& stop) {
  log("listening on ", opts_.endpoint, " (pid ", getpid(), "); backend: ", device_.backend->name(), " (", device_.info.device_name, "), ",
      device_.info.global_bytes, " bytes of global memory at ", hex(device_.info.global_base));
  auto last_reap = Clock::now();
  while (!stop) {
    zmq::pollitem_t items[] = {{router_.handle(), 0, ZMQ_POLLIN, 0}, {replies_.handle(), 0, ZMQ_POLLIN, 0}};
    try {
      zmq::poll(items, 2, std::chrono::milliseconds(100));
    } catch (const zmq::error_t& e) {
      if (e.num() == EINTR) continue;  // a signal: check `stop`
      throw;
    }
    if (items[0].revents & ZMQ_POLLIN) {
      std::vector<zmq::message_t> frames;
      for (bool more = true; more;) {
        zmq::message_t m;
        (void)router_.recv(m);
        more = m.more();
        frames.push_back(std::move(m));
      }
      on_client_message(frames);
    }
    while (true) {
      zmq::message_t m;
      if (!replies_.recv(m, zmq::recv_flags::dontwait)) break;
      bool more = m.more();
      router_.send(m, more ? zmq::send_flags::sndmore : zmq::send_flags::none);
      while (more) {
        (void)replies_.recv(m);
        more = m.more();
        router_.send(m, more ? zmq::send_flags::sndmore : zmq::send_flags::none);
      }
    }
    if (Clock::now() - last_reap > std::chrono::milliseconds(250)) {
      reap();
      last_reap = Clock::now();
    }
    if (opts_.idle_exit_s > 0 && sessions_.empty() &&
        Clock::now() - idle_since_ > std::chrono::seconds(opts_.idle_exit_s)) {
      log("no clients for ", opts_.idle_exit_s, " s; exiting");
      break;
    }
  }
}

void Server::reply(const std::string& peer, const proto::Header& req, Reply r) {
  auto frames = reply_frames(peer, req, std::move(r));
  for (size_t i = 0; i < frames.size(); ++i)
    router_.send(frames[i], i + 1 < frames.size() ? zmq::send_flags::sndmore : zmq::send_flags::none);
}

void Server::on_client_message(std::vector<zmq::message_t>& frames) {
  std::string peer = frames[0].to_string();
  if (frames.size() < 3 || frames.size() > 4) {
    log("dropped a message of ", frames.size() - 1, " frames (expected 2 or 3)");
    return;
  }
  proto::Header h;
  try {
    h = proto::decode_header(frames[1].data(), frames[1].size());
  } catch (const proto::ProtocolError& e) {
    log("dropped a message: ", e.what());
    return;
  }
  if (!proto::known_type(h.type))
    return reply(peer, h, Reply::error(cudaErrorInvalidValue, "model_host: unknown message type " + std::to_string(h.type)));
  auto type = proto::Type(h.type);
  bool carries_bulk = type == proto::Type::Write || type == proto::Type::ScratchWrite;
  if ((frames.size() == 4) != carries_bulk)
    return reply(peer, h, Reply::error(cudaErrorInvalidValue, std::string("model_host: ") + proto::type_name(type) +
                                                                   (carries_bulk ? " needs" : " takes no") + " bulk frame"));
  if (type == proto::Type::Hello) {
    proto::Reader rd(frames[2].data(), frames[2].size());
    return hello(peer, h, rd);
  }
  auto it = sessions_.find(h.session);
  if (it == sessions_.end() || it->second->finished || it->second->said_bye)
    return reply(peer, h, Reply::error(cudaErrorInvalidResourceHandle, "model_host: unknown session " + hex(h.session)));
  Worker& w = *it->second;
  w.last_seen = Clock::now();
  if (type == proto::Type::Ping) return reply(peer, h, Reply{});
  Worker::Item item{peer, h, std::move(frames[2]), {}, frames.size() == 4};
  if (item.has_bulk) item.bulk = std::move(frames[3]);
  w.push(std::move(item));
}

void Server::hello(const std::string& peer, const proto::Header& h, proto::Reader& body) {
  uint32_t pid;
  std::string secret, program;
  try {
    pid = body.u32("pid");
    secret = body.str("secret");
    program = body.str("program");
    body.finish("Hello");
  } catch (const proto::ProtocolError& e) {
    return reply(peer, h, Reply::error(cudaErrorInvalidValue, std::string("model_host: malformed Hello: ") + e.what()));
  }
  if (!opts_.secret.empty() && secret != opts_.secret) {
    log("refused a client (pid ", pid, "): wrong shared secret");
    return reply(peer, h, Reply::error(cudaErrorNotPermitted, "model_host: wrong shared secret (set QGPU_SECRET)"));
  }
  static std::mt19937_64 rng{std::random_device{}()};
  uint64_t id;
  do id = rng(); while (id == 0 || sessions_.count(id));
  std::string client = (program.empty() ? "pid " : program + ", pid ") + std::to_string(pid);
  try {
    sessions_[id] = std::make_unique<Worker>(ctx_, id, device_, client, pid, !endpoint::is_tcp(opts_.endpoint));
  } catch (const std::bad_alloc&) {
    // The session's device memory is mapped lazily, but the system may still
    // refuse the mapping (strict overcommit, an address-space limit).
    sessions_.erase(id);
    log("refused a client (", client, "): no room to map ", device_.info.global_bytes, " bytes of device memory");
    return reply(peer, h, Reply::error(cudaErrorMemoryAllocation,
                                       "model_host: the system refused to map the device's " +
                                           std::to_string(device_.info.global_bytes) +
                                           " bytes of memory; give model_host a smaller --device-memory"));
  }
  log("client connected: ", client, " (session ", hex(id), ")");
  proto::Header rh = h;
  rh.session = id;
  Reply r;
  proto::encode(r.body, device_.info);
  reply(peer, rh, std::move(r));
}

void Server::reap() {
  auto now = Clock::now();
  bool local = !endpoint::is_tcp(opts_.endpoint);
  for (auto it = sessions_.begin(); it != sessions_.end();) {
    Worker& w = *it->second;
    std::string why;
    if (w.finished) why = w.said_bye ? "said goodbye" : "closed";
    else if (local && w.pid && kill(pid_t(w.pid), 0) != 0 && errno == ESRCH) why = "process exited";
    else if (now - w.last_seen > std::chrono::milliseconds(opts_.client_timeout_ms))
      why = "silent for " + std::to_string(opts_.client_timeout_ms) + " ms";
    if (w.busy && now - w.busy_since.load() > std::chrono::seconds(opts_.progress_s) &&
        now - w.last_progress > std::chrono::seconds(opts_.progress_s)) {
      w.last_progress = now;
      log("client ", w.client, ": request still running after ",
          std::chrono::duration_cast<std::chrono::seconds>(now - w.busy_since.load()).count(), " s");
    }
    if (why.empty()) {
      ++it;
      continue;
    }
    // A client that exited waits for nothing: its running launch ends early
    // where the backend can (LaunchProgress::cancel).
    const bool gone = why == "process exited";
    log("client ", w.client, " ", why,
        w.busy ? (gone ? "; its running launch is cancelled and its session freed"
                       : "; its session is freed after the running request")
               : "");
    if (gone) w.session.cancel_launches();
    w.close();
    retiring_.push_back(std::move(it->second));
    it = sessions_.erase(it);
  }
  std::erase_if(retiring_, [](const std::unique_ptr<Worker>& w) { return w->finished.load(); });
  if (!sessions_.empty()) idle_since_ = now;
}

}  // namespace qgpu::daemon
