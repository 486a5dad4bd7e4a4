// The shared-memory channel between a client and model_host on one machine
// (docs/protocol.md, "Shared-memory channel").  After Hello, a client on an
// ipc:// endpoint asks for a segment (ShmAttach); the daemon creates a sealed
// memfd (it cannot shrink or grow, so neither side can be made to fault on
// it), and the client maps it through /proc/<daemon pid>/fd/<fd>.  Requests
// then go through a ring of slots in the segment, each slot with its own
// chunk of the data area for bulk bytes, and the two sides wake each other
// with futexes on words in the segment.  ZeroMQ stays for Hello, heartbeats,
// and requests or replies too large for a slot.
//
// The daemon trusts nothing in the segment: it reads a slot's fields once,
// checks every length against its own constants (never against values
// stored in the segment), copies the body out before parsing it, and a
// client that scribbles on the counters can only confuse its own session.
#pragma once

#include <linux/futex.h>
#include <sched.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <climits>
#include <cstddef>
#include <cstdint>
#include <cstdlib>

namespace qgpu::shm {

constexpr uint32_t kMagic = 0x48534751;  // "QGSH"
constexpr uint32_t kVersion = 1;
constexpr uint32_t kSlots = 8;            // requests in flight at most
constexpr uint32_t kSlotBytes = 4096;     // one slot: its header and inline body
constexpr uint32_t kChunk = 1u << 20;     // bulk bytes per slot
constexpr uint32_t kControlBytes = 4096;

struct Control {
  uint32_t magic, version;
  uint64_t session;
  uint32_t slots, slot_bytes, chunk, pad;
  alignas(64) std::atomic<uint32_t> bell;      // bumped for every new request (by the client, or by the daemon for ZeroMQ ones)
  std::atomic<uint32_t> req_seq;               // requests the client has posted
  std::atomic<uint32_t> server_waiting;        // the daemon sleeps on `bell`
  alignas(64) std::atomic<uint32_t> rep_seq;   // requests the daemon has answered
  std::atomic<uint32_t> client_waiting;        // the client sleeps on `rep_seq`
};
static_assert(sizeof(Control) <= kControlBytes);
static_assert(std::atomic<uint32_t>::is_always_lock_free);

// Reply flags.
constexpr uint32_t kReplyViaZmq = 1;  // the reply (too large for the slot) travels over ZeroMQ

struct Slot {
  // Request, written by the client.
  uint16_t type;
  uint16_t pad0;
  uint32_t request;
  uint32_t body_len;   // at most kInline
  uint32_t bulk_len;   // Write: bytes in the slot's chunk; Read: bytes asked (at most kChunk)
  // Reply, written by the daemon.
  int32_t status;
  uint32_t flags;
  uint32_t reply_len;  // body bytes (bulk bytes of a read are the request's bulk_len)
  uint32_t pad1;
  uint8_t body[1];     // request body, then the reply body (kInline bytes)
};
constexpr uint32_t kInline = kSlotBytes - offsetof(Slot, body);

constexpr uint64_t kSlotsOffset = kControlBytes;
constexpr uint64_t kDataOffset = kSlotsOffset + uint64_t(kSlots) * kSlotBytes;
constexpr uint64_t kSegmentBytes = kDataOffset + uint64_t(kSlots) * kChunk;

inline Control* control(void* base) { return static_cast<Control*>(base); }
inline Slot* slot(void* base, uint32_t i) {
  return reinterpret_cast<Slot*>(static_cast<uint8_t*>(base) + kSlotsOffset + uint64_t(i % kSlots) * kSlotBytes);
}
inline uint8_t* chunk(void* base, uint32_t i) {
  return static_cast<uint8_t*>(base) + kDataOffset + uint64_t(i % kSlots) * kChunk;
}

// Futexes on a shared mapping (not FUTEX_PRIVATE: the waker is another process).
inline void futex_wait(std::atomic<uint32_t>* word, uint32_t seen, int timeout_ms) {
  timespec ts{timeout_ms / 1000, long(timeout_ms % 1000) * 1000000L};
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAIT, seen, &ts, nullptr, 0);
}
inline void futex_wake(std::atomic<uint32_t>* word) {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0);
}

// Microseconds a side spins before sleeping ($QGPU_SHM_SPIN_US, default 20).
inline int spin_us() {
  static const int v = [] {
    const char* e = std::getenv("QGPU_SHM_SPIN_US");
    return e ? std::atoi(e) : 20;
  }();
  return v;
}

// Waits until `word` differs from `seen`: spins for `spin_us` first (the
// other side usually answers within microseconds), yielding the processor at
// every turn (spinning with pause alone, measured under load on two cores,
// turned a 9 us round trip into 100-250 us when the two sides shared a
// core; yielding keeps it at 4-7 us both ways), then sleeps on the futex
// in slices of `slice_ms`, returning after each so that the caller can check
// for a lost peer.  Returns true when the word changed.
inline bool wait_change(std::atomic<uint32_t>* word, std::atomic<uint32_t>* waiting, uint32_t seen, int spin_us,
                        int slice_ms) {
  auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(spin_us);
  for (int i = 0;; ++i) {
    if (word->load(std::memory_order_acquire) != seen) return true;
    if ((i & 7) == 7 && std::chrono::steady_clock::now() >= until) break;
    sched_yield();  // on a loaded machine the other side may need this very core
  }
  waiting->store(1, std::memory_order_seq_cst);
  if (word->load(std::memory_order_seq_cst) == seen) futex_wait(word, seen, slice_ms);
  waiting->store(0, std::memory_order_relaxed);
  return word->load(std::memory_order_acquire) != seen;
}

// Bumps `word` and wakes a sleeping waiter.
inline void ring(std::atomic<uint32_t>* word, std::atomic<uint32_t>* waiting) {
  word->fetch_add(1, std::memory_order_seq_cst);
  if (waiting->load(std::memory_order_seq_cst)) futex_wake(word);
}

// Publishes `value` in `word` and wakes a sleeping waiter.
inline void publish(std::atomic<uint32_t>* word, std::atomic<uint32_t>* waiting, uint32_t value) {
  word->store(value, std::memory_order_seq_cst);
  if (waiting->load(std::memory_order_seq_cst)) futex_wake(word);
}

}  // namespace qgpu::shm
