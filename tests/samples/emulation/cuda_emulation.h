// A CPU emulation of the CUDA subset the samples use, so that every sample's
// device code and its own CPU check can be run against each other without a
// GPU (sample_to_host rewrites the sources to include this header).
//
// Model: every CUDA thread is a fiber (ucontext) with its own stack; the
// blocks of a grid run one after another, the threads of a block
// cooperatively, each until it finishes or blocks.  When no thread can run,
// the pending collectives are resolved:
//   - a warp collective (shuffle, vote, match, __syncwarp) completes once
//     every live lane its mask names waits on the same collective;
//   - __activemask completes once every live lane of the warp is blocked,
//     and returns the lanes waiting at the same call site;
//   - a barrier completes once every live thread of the block waits on it.
// Because blocks run sequentially, __shared__ variables are function-local
// statics and dynamic shared memory is one buffer per launch.  Atomics need
// no locking: fibers never interleave within an operation.
//
// The emulation also enforces the limits every sample promises to keep for
// the small machine that runs them: at most 256 threads per block, 16 blocks
// per grid and 8 KiB of live cudaMalloc memory.
#pragma once
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <vector>
#include <ucontext.h>

struct uint3 {
  unsigned x, y, z;
};
struct dim3 {
  unsigned x, y, z;
  dim3(unsigned x_ = 1, unsigned y_ = 1, unsigned z_ = 1) : x(x_), y(y_), z(z_) {}
};
enum cudaError_t { cudaSuccess = 0, cudaErrorMemoryAllocation = 2 };
enum cudaMemcpyKind {
  cudaMemcpyHostToHost,
  cudaMemcpyHostToDevice,
  cudaMemcpyDeviceToHost,
  cudaMemcpyDeviceToDevice
};

#define __global__
#define __device__
#define __host__
#define __constant__
#define __shared__ static
#define __noinline__ __attribute__((noinline))
#define __forceinline__ inline
#define warpSize 32

namespace cuda_emulation {

constexpr unsigned kMaxThreadsPerBlock = 256, kMaxBlocksPerGrid = 16;
constexpr size_t kDeviceMemoryBytes = 8 * 1024;
inline std::map<void*, size_t> allocations;
inline size_t allocated_bytes;

enum class State { Runnable, AtBarrier, InCollective, Done };
enum class Op { Shfl, ShflUp, ShflDown, ShflXor, Ballot, Any, All, MatchAny, ActiveMask, SyncWarp };

struct Thread {
  ucontext_t context;
  std::vector<char> stack;
  uint3 tid;
  State state = State::Runnable;
  // The pending collective or barrier: its operands and, once resolved, its result.
  Op op;
  unsigned mask;
  uint64_t value;
  int arg, width, predicate, site;
  uint64_t result;
};

inline std::vector<Thread>* block_threads;
inline Thread* current;
inline ucontext_t scheduler;
inline uint3 block_idx, block_dim, grid_dim;
inline std::vector<char> shared_buffer;
inline const std::function<void()>* kernel_call;

[[noreturn]] inline void fail(const char* what) {
  fprintf(stderr, "cuda_emulation: %s in block (%u,%u,%u)\n", what, block_idx.x, block_idx.y,
          block_idx.z);
  exit(3);
}

inline void block_current() { swapcontext(&current->context, &scheduler); }

inline void thread_main() {
  (*kernel_call)();
  current->state = State::Done;
  block_current();
}

inline void* dynamic_shared() { return shared_buffer.data(); }

// The lane that a shuffle by lane `lane` reads, within segments of `width` lanes.
inline int shuffle_source(const Thread& t, int lane) {
  int base = lane & ~(t.width - 1), sub = lane & (t.width - 1);
  switch (t.op) {
    case Op::Shfl: return base + (t.arg & (t.width - 1));
    case Op::ShflUp: return sub >= t.arg ? lane - t.arg : lane;
    case Op::ShflDown: return sub + t.arg < t.width ? lane + t.arg : lane;
    default: {
      int src = lane ^ t.arg;
      return (src & ~(t.width - 1)) == base ? src : lane;
    }
  }
}

// Completes the collective of the lanes in `group` (all waiting on it).
inline void complete(Thread* const* lanes, unsigned group) {
  unsigned ballot = 0;
  for (int k = 0; k < 32; ++k)
    if ((group >> k & 1) && lanes[k]->predicate) ballot |= 1u << k;
  for (int k = 0; k < 32; ++k) {
    if (!(group >> k & 1)) continue;
    Thread& t = *lanes[k];
    switch (t.op) {
      case Op::Shfl:
      case Op::ShflUp:
      case Op::ShflDown:
      case Op::ShflXor: {
        int src = shuffle_source(t, k);
        if (!(group >> src & 1)) fail("shuffle from a lane outside the mask");
        t.result = lanes[src]->value;
        break;
      }
      case Op::Ballot: t.result = ballot; break;
      case Op::Any: t.result = ballot != 0; break;
      case Op::All: t.result = ballot == group; break;
      case Op::MatchAny: {
        unsigned same = 0;
        for (int j = 0; j < 32; ++j)
          if ((group >> j & 1) && lanes[j]->value == t.value) same |= 1u << j;
        t.result = same;
        break;
      }
      case Op::ActiveMask: t.result = group; break;
      case Op::SyncWarp: t.result = 0; break;
    }
    t.state = State::Runnable;
  }
}

inline bool resolve_collectives() {
  std::vector<Thread>& threads = *block_threads;
  bool resolved = false;
  for (size_t first = 0; first < threads.size(); first += 32) {
    Thread* lanes[32] = {};
    unsigned live = 0, waiting = 0, blocked = 0;
    for (size_t l = 0; l < 32 && first + l < threads.size(); ++l) {
      Thread& t = threads[first + l];
      lanes[l] = &t;
      if (t.state != State::Done) live |= 1u << l;
      if (t.state == State::InCollective) waiting |= 1u << l;
      if (t.state == State::InCollective || t.state == State::AtBarrier) blocked |= 1u << l;
    }
    for (int l = 0; l < 32; ++l) {
      if (!(waiting >> l & 1)) continue;
      const Thread& t = *lanes[l];
      unsigned group = 0;
      if (t.op == Op::ActiveMask) {
        if (blocked != live) continue;
        for (int k = 0; k < 32; ++k)
          if ((waiting >> k & 1) && lanes[k]->op == Op::ActiveMask && lanes[k]->site == t.site)
            group |= 1u << k;
      } else {
        group = t.mask & live;
        bool ready = true;
        for (int k = 0; k < 32; ++k)
          if ((group >> k & 1) &&
              !((waiting >> k & 1) && lanes[k]->op == t.op && lanes[k]->mask == t.mask))
            ready = false;
        if (!ready) continue;
      }
      complete(lanes, group);
      waiting &= ~group;
      resolved = true;
    }
  }
  return resolved;
}

inline int barrier_live;  // threads that took part in the last barrier

inline bool resolve_barrier() {
  int count = 0, live = 0;
  for (Thread& t : *block_threads) {
    if (t.state == State::Done) continue;
    if (t.state != State::AtBarrier) return false;
    ++live;
    count += t.predicate != 0;
  }
  if (live == 0) return false;
  barrier_live = live;
  for (Thread& t : *block_threads) {
    if (t.state != State::AtBarrier) continue;
    t.result = count;
    t.state = State::Runnable;
  }
  return true;
}

inline void run_block(const dim3& block, const std::function<void()>& call) {
  std::vector<Thread> threads(block.x * block.y * block.z);
  block_threads = &threads;
  kernel_call = &call;
  for (size_t i = 0; i < threads.size(); ++i) {
    Thread& t = threads[i];
    t.tid = {unsigned(i % block.x), unsigned(i / block.x % block.y),
             unsigned(i / (block.x * block.y))};
    t.stack.resize(256 * 1024);
    getcontext(&t.context);
    t.context.uc_stack.ss_sp = t.stack.data();
    t.context.uc_stack.ss_size = t.stack.size();
    t.context.uc_link = nullptr;
    makecontext(&t.context, thread_main, 0);
  }
  for (;;) {
    bool ran = false, done = true;
    for (Thread& t : threads) {
      if (t.state != State::Runnable) continue;
      current = &t;
      swapcontext(&scheduler, &t.context);
      ran = true;
    }
    for (const Thread& t : threads) done = done && t.state == State::Done;
    if (done) return;
    if (!ran && !resolve_collectives() && !resolve_barrier())
      fail("deadlock: threads wait on collectives or barriers that cannot complete");
  }
}

struct Launch {
  dim3 grid, block;
  size_t shared_bytes;
  Launch(dim3 g, dim3 b, size_t shared = 0) : grid(g), block(b), shared_bytes(shared) {}
  void run(const std::function<void()>& call) const {
    if (block.x * block.y * block.z > kMaxThreadsPerBlock)
      fail("launch with more than 256 threads per block");
    if (grid.x * grid.y * grid.z > kMaxBlocksPerGrid) fail("launch with more than 16 blocks");
    grid_dim = {grid.x, grid.y, grid.z};
    block_dim = {block.x, block.y, block.z};
    shared_buffer.assign(shared_bytes, 0);
    for (unsigned z = 0; z < grid.z; ++z)
      for (unsigned y = 0; y < grid.y; ++y)
        for (unsigned x = 0; x < grid.x; ++x) {
          block_idx = {x, y, z};
          run_block(block, call);
        }
  }
};

inline uint64_t collective(Op op, unsigned mask, uint64_t value, int arg = 0, int width = 32,
                           int predicate = 0, int site = 0) {
  Thread& t = *current;
  t.op = op;
  t.mask = mask;
  t.value = value;
  t.arg = arg;
  t.width = width;
  t.predicate = predicate;
  t.site = site;
  t.state = State::InCollective;
  block_current();
  return t.result;
}

inline int barrier(int predicate) {
  current->predicate = predicate != 0;
  current->state = State::AtBarrier;
  block_current();
  return (int)current->result;
}

template <class T>
uint64_t to_bits(T v) {
  static_assert(sizeof(T) <= 8, "shuffled values are at most 64 bits");
  uint64_t u = 0;
  memcpy(&u, &v, sizeof(T));
  return u;
}
template <class T>
T from_bits(uint64_t u) {
  T v;
  memcpy(&v, &u, sizeof(T));
  return v;
}

}  // namespace cuda_emulation

#define threadIdx (cuda_emulation::current->tid)
#define blockIdx (cuda_emulation::block_idx)
#define blockDim (cuda_emulation::block_dim)
#define gridDim (cuda_emulation::grid_dim)

// Barriers and warp collectives.
inline void __syncthreads() { cuda_emulation::barrier(0); }
inline int __syncthreads_count(int p) { return cuda_emulation::barrier(p); }
inline int __syncthreads_and(int p) {
  return cuda_emulation::barrier(p) == cuda_emulation::barrier_live;
}
inline int __syncthreads_or(int p) { return cuda_emulation::barrier(p) > 0; }
inline void __syncwarp(unsigned mask = 0xffffffffu) {
  cuda_emulation::collective(cuda_emulation::Op::SyncWarp, mask, 0);
}
template <class T>
T __shfl_sync(unsigned mask, T v, int src, int width = 32) {
  using namespace cuda_emulation;
  return from_bits<T>(collective(Op::Shfl, mask, to_bits(v), src, width));
}
template <class T>
T __shfl_up_sync(unsigned mask, T v, unsigned delta, int width = 32) {
  using namespace cuda_emulation;
  return from_bits<T>(collective(Op::ShflUp, mask, to_bits(v), delta, width));
}
template <class T>
T __shfl_down_sync(unsigned mask, T v, unsigned delta, int width = 32) {
  using namespace cuda_emulation;
  return from_bits<T>(collective(Op::ShflDown, mask, to_bits(v), delta, width));
}
template <class T>
T __shfl_xor_sync(unsigned mask, T v, int lane_mask, int width = 32) {
  using namespace cuda_emulation;
  return from_bits<T>(collective(Op::ShflXor, mask, to_bits(v), lane_mask, width));
}
inline unsigned __ballot_sync(unsigned mask, int p) {
  return cuda_emulation::collective(cuda_emulation::Op::Ballot, mask, 0, 0, 32, p != 0);
}
inline int __any_sync(unsigned mask, int p) {
  return cuda_emulation::collective(cuda_emulation::Op::Any, mask, 0, 0, 32, p != 0);
}
inline int __all_sync(unsigned mask, int p) {
  return cuda_emulation::collective(cuda_emulation::Op::All, mask, 0, 0, 32, p != 0);
}
inline unsigned __match_any_sync(unsigned mask, int v) {
  return cuda_emulation::collective(cuda_emulation::Op::MatchAny, mask, (uint32_t)v);
}
// A macro so that each call site is its own convergence point.
#define __activemask() \
  ((unsigned)cuda_emulation::collective(cuda_emulation::Op::ActiveMask, 0, 0, 0, 32, 0, __LINE__))

// Integer intrinsics, as the CUDA Math API documents them.
inline int min(int a, int b) { return a < b ? a : b; }
inline int max(int a, int b) { return a > b ? a : b; }
inline long long min(long long a, long long b) { return a < b ? a : b; }
inline long long max(long long a, long long b) { return a > b ? a : b; }
inline unsigned umin(unsigned a, unsigned b) { return a < b ? a : b; }
inline unsigned umax(unsigned a, unsigned b) { return a > b ? a : b; }
inline long long llmin(long long a, long long b) { return a < b ? a : b; }
inline int __popc(unsigned x) { return __builtin_popcount(x); }
inline int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
inline int __clz(int x) { return x ? __builtin_clz((unsigned)x) : 32; }
inline int __clzll(long long x) { return x ? __builtin_clzll((unsigned long long)x) : 64; }
inline int __ffs(int x) { return __builtin_ffs(x); }
inline int __ffsll(long long x) { return __builtin_ffsll(x); }
inline unsigned __brev(unsigned x) {
  unsigned r = 0;
  for (int i = 0; i < 32; ++i) r |= (x >> i & 1) << (31 - i);
  return r;
}
inline unsigned long long __brevll(unsigned long long x) {
  unsigned long long r = 0;
  for (int i = 0; i < 64; ++i) r |= (x >> i & 1) << (63 - i);
  return r;
}
inline unsigned __byte_perm(unsigned x, unsigned y, unsigned s) {
  uint64_t bytes = (uint64_t)y << 32 | x;
  unsigned r = 0;
  for (int k = 0; k < 4; ++k) r |= (unsigned)(bytes >> (8 * (s >> (4 * k) & 7)) & 0xff) << (8 * k);
  return r;
}
inline unsigned __funnelshift_l(unsigned lo, unsigned hi, unsigned s) {
  return (unsigned)(((uint64_t)hi << 32 | lo) << (s & 31) >> 32);
}
inline unsigned __funnelshift_lc(unsigned lo, unsigned hi, unsigned s) {
  return (unsigned)(((uint64_t)hi << 32 | lo) << (s < 32 ? s : 32) >> 32);
}
inline unsigned __funnelshift_r(unsigned lo, unsigned hi, unsigned s) {
  return (unsigned)(((uint64_t)hi << 32 | lo) >> (s & 31));
}
inline unsigned __funnelshift_rc(unsigned lo, unsigned hi, unsigned s) {
  return (unsigned)(((uint64_t)hi << 32 | lo) >> (s < 32 ? s : 32));
}
// f32 with one rounding per operation, to nearest even (the float_* samples;
// the emulated programs are compiled with -ffp-contract=off).
inline float __fmaf_rn(float a, float b, float c) { return std::fma(a, b, c); }
inline float __fadd_rn(float a, float b) { return a + b; }
inline float __fmul_rn(float a, float b) { return a * b; }
inline double __fma_rn(double a, double b, double c) { return std::fma(a, b, c); }
inline double __dadd_rn(double a, double b) { return a + b; }
inline float __fdividef(float a, float b) { return a / b; }
inline float rsqrtf(float x) { return 1.0f / std::sqrt(x); }
inline int __float_as_int(float x) {
  int i;
  memcpy(&i, &x, 4);
  return i;
}
inline int __mulhi(int a, int b) { return (int)((long long)a * b >> 32); }
inline unsigned __umulhi(unsigned a, unsigned b) { return (unsigned)((uint64_t)a * b >> 32); }
inline long long __mul64hi(long long a, long long b) { return (long long)((__int128)a * b >> 64); }
inline unsigned long long __umul64hi(unsigned long long a, unsigned long long b) {
  return (unsigned long long)((unsigned __int128)a * b >> 64);
}

// Atomics: each returns the old value.
template <class T> T atomicAdd(T* p, T v) { T old = *p; *p = old + v; return old; }
template <class T> T atomicSub(T* p, T v) { T old = *p; *p = old - v; return old; }
template <class T> T atomicMin(T* p, T v) { T old = *p; *p = v < old ? v : old; return old; }
template <class T> T atomicMax(T* p, T v) { T old = *p; *p = v > old ? v : old; return old; }
template <class T> T atomicAnd(T* p, T v) { T old = *p; *p = old & v; return old; }
template <class T> T atomicOr(T* p, T v) { T old = *p; *p = old | v; return old; }
template <class T> T atomicXor(T* p, T v) { T old = *p; *p = old ^ v; return old; }
template <class T> T atomicExch(T* p, T v) { T old = *p; *p = v; return old; }
template <class T> T atomicCAS(T* p, T compare, T v) {
  T old = *p;
  if (old == compare) *p = v;
  return old;
}
inline unsigned atomicInc(unsigned* p, unsigned limit) {
  unsigned old = *p;
  *p = old >= limit ? 0 : old + 1;
  return old;
}
inline unsigned atomicDec(unsigned* p, unsigned limit) {
  unsigned old = *p;
  *p = old == 0 || old > limit ? limit : old - 1;
  return old;
}

// The runtime API: device memory is host memory.  New allocations are filled
// with 0xcd so that a sample that reads memory it never wrote is caught, and
// allocations beyond the 8 KiB budget fail.
inline const char* cudaGetErrorString(cudaError_t e) {
  return e == cudaSuccess ? "no error" : "out of memory (the samples' budget is 8 KiB)";
}
inline cudaError_t cudaGetLastError() { return cudaSuccess; }
inline cudaError_t cudaDeviceSynchronize() { return cudaSuccess; }
template <class T>
cudaError_t cudaMalloc(T** p, size_t bytes) {
  using namespace cuda_emulation;
  if (allocated_bytes + bytes > kDeviceMemoryBytes) return cudaErrorMemoryAllocation;
  *p = (T*)malloc(bytes);
  memset(*p, 0xcd, bytes);
  allocations[*p] = bytes;
  allocated_bytes += bytes;
  return cudaSuccess;
}
inline cudaError_t cudaFree(void* p) {
  using namespace cuda_emulation;
  allocated_bytes -= allocations.at(p);
  allocations.erase(p);
  free(p);
  return cudaSuccess;
}
inline cudaError_t cudaMemcpy(void* dst, const void* src, size_t bytes, cudaMemcpyKind) {
  memcpy(dst, src, bytes);
  return cudaSuccess;
}
inline cudaError_t cudaMemset(void* dst, int value, size_t bytes) {
  memset(dst, value, bytes);
  return cudaSuccess;
}
template <class T>
cudaError_t cudaMemcpyToSymbol(T& symbol, const void* src, size_t bytes, size_t offset = 0,
                               cudaMemcpyKind = cudaMemcpyHostToDevice) {
  memcpy((char*)&symbol + offset, src, bytes);
  return cudaSuccess;
}
template <class T>
cudaError_t cudaMemcpyFromSymbol(void* dst, const T& symbol, size_t bytes, size_t offset = 0,
                                 cudaMemcpyKind = cudaMemcpyDeviceToHost) {
  memcpy(dst, (const char*)&symbol + offset, bytes);
  return cudaSuccess;
}

// Cooperative groups: the thread block and its static tiles.
namespace cooperative_groups {
struct thread_block {
  unsigned thread_rank() const {
    return threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
  }
};
inline thread_block this_thread_block() { return {}; }
template <unsigned N>
struct thread_block_tile {
  static_assert(N >= 1 && N <= 32 && (N & (N - 1)) == 0, "tiles are powers of two up to 32");
  unsigned size() const { return N; }
  unsigned thread_rank() const { return thread_block().thread_rank() % N; }
  unsigned first_lane() const { return thread_block().thread_rank() % 32 & ~(N - 1); }
  unsigned mask() const { return N == 32 ? 0xffffffffu : ((1u << N) - 1) << first_lane(); }
  template <class T>
  T shfl_down(T v, unsigned delta) const { return __shfl_down_sync(mask(), v, delta, N); }
  unsigned ballot(int p) const { return __ballot_sync(mask(), p) >> first_lane(); }
};
template <unsigned N>
thread_block_tile<N> tiled_partition(thread_block) { return {}; }
}  // namespace cooperative_groups
