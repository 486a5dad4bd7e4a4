// Device memory (in model_host), host memory, managed and mapped memory
// (mirrors.h), copies and symbols.
//
// Copies and memsets are operations of a stream (streams.h).  As CUDA's:
// cudaMemcpy waits for its copy (on the default stream, so after all work
// queued before it there); cudaMemcpyAsync returns at once for device-to-
// device copies and for copies between the device and pinned host memory,
// while a copy from pageable memory is staged first and one to pageable
// memory waits, since the program may reuse or read its buffer as soon as
// the call returns; cudaMemset returns at once unless it sets managed or
// mapped memory.  The device ranges of asynchronous copies and memsets are
// checked when the call is made.
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <map>
#include <optional>

#include "graph.h"
#include "runtime.h"

using namespace qgpu::cudart;

namespace {

uint64_t addr(const void* p) { return reinterpret_cast<uint64_t>(p); }

// Pinned host memory: cudaMallocHost, cudaHostAlloc, cudaHostRegister.
struct Pinned {
  size_t size = 0;
  unsigned flags = 0;
  bool registered = false;  // the program's memory (cudaHostRegister)
  uint64_t dev = 0;         // its device copy when mapped (0: none)
  uint64_t allocation = 0;  // the device allocation holding it (dev, or below it when aligned up)
};
std::mutex g_pinned_mu;
std::map<uint64_t, Pinned> g_pinned;  // by host address

std::optional<std::pair<uint64_t, Pinned>> find_pinned(const void* p) {
  std::lock_guard<std::mutex> g(g_pinned_mu);
  auto it = g_pinned.upper_bound(addr(p));
  if (it == g_pinned.begin()) return std::nullopt;
  --it;
  if (addr(p) >= it->first && addr(p) < it->first + std::max<size_t>(it->second.size, 1)) return *it;
  return std::nullopt;
}

// Whether the program guarantees [p, p + n) stays as it is until the copy
// is done: pinned memory, and managed or mapped memory (host pages the
// runtime owns).
bool stable(Runtime& rt, const void* p, size_t n) {
  auto pin = find_pinned(p);
  if (pin && addr(p) + n <= pin->first + pin->second.size) return true;
  return bool(rt.mirrors().find_host(p));
}

// Resolves cudaMemcpyDefault from where the pointers point.
cudaMemcpyKind direction(Runtime& rt, void* dst, const void* src, cudaMemcpyKind kind) {
  if (kind != cudaMemcpyDefault) return kind;
  bool d = rt.is_device_pointer(dst), s = rt.is_device_pointer(src);
  return d ? (s ? cudaMemcpyDeviceToDevice : cudaMemcpyHostToDevice)
           : (s ? cudaMemcpyDeviceToHost : cudaMemcpyHostToHost);
}

double since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

// The copy itself, run on a stream's runtime thread.  `staged`: the source
// bytes, taken when the call was made.
cudaError_t do_copy(Runtime& rt, void* dst, const void* src, size_t n, cudaMemcpyKind dir,
                    const std::vector<uint8_t>* staged, double& seconds) {
  qgpu::client::Connection& c = rt.conn();
  auto t = std::chrono::steady_clock::now();
  switch (dir) {
    case cudaMemcpyHostToHost: {
      auto held = rt.mirrors().prepare(c, {{addr(dst), n, false, false, true}, {addr(src), n, false}});
      std::memmove(dst, staged ? staged->data() : src, n);
      return cudaSuccess;  // no device time
    }
    case cudaMemcpyHostToDevice: {
      Mirrors::Access from = staged ? Mirrors::Access{addr(dst), n, true} : Mirrors::Access{addr(src), n, false};
      auto held = rt.mirrors().prepare(c, {{addr(dst), n, true}, from});
      c.write(addr(dst), staged ? staged->data() : src, n);
      break;
    }
    case cudaMemcpyDeviceToHost: {
      auto held = rt.mirrors().prepare(c, {{addr(src), n, true}, {addr(dst), n, false, false, true}});
      c.read(dst, addr(src), n);
      break;
    }
    case cudaMemcpyDeviceToDevice: {
      auto held = rt.mirrors().prepare(c, {{addr(dst), n, true}, {addr(src), n, true}});
      c.copy(addr(dst), addr(src), n);
      break;
    }
    default:
      return cudaErrorInvalidMemcpyDirection;
  }
  seconds += since(t);
  return cudaSuccess;
}

// Queues a copy on `s`; waits for it when `wait` or when the host buffer
// may not be touched afterwards (pageable memory), staging a pageable
// source instead when the copy need not wait.
cudaError_t copy_on(Runtime& rt, const StreamPtr& s, void* dst, const void* src, size_t n, cudaMemcpyKind kind,
                    bool wait) {
  if (n == 0) return cudaSuccess;
  if (!dst || !src) return set_error(cudaErrorInvalidValue);
  cudaMemcpyKind dir = direction(rt, dst, src, kind);
  if (dir != cudaMemcpyHostToHost && dir != cudaMemcpyHostToDevice && dir != cudaMemcpyDeviceToHost &&
      dir != cudaMemcpyDeviceToDevice)
    return set_error(cudaErrorInvalidMemcpyDirection);
  std::shared_ptr<std::vector<uint8_t>> staged;
  // A captured copy reads and writes its memory when the graph runs.
  const bool captured = bool(s->capture);
  if (captured) wait = false;
  if (!wait) {
    // Checked now, as CUDA checks an asynchronous copy's pointers.
    if (dir == cudaMemcpyDeviceToDevice || dir == cudaMemcpyDeviceToHost)
      rt.check_device_range(addr(src), n, "asynchronous copy source");
    if (dir == cudaMemcpyDeviceToDevice || dir == cudaMemcpyHostToDevice)
      rt.check_device_range(addr(dst), n, "asynchronous copy destination");
    bool src_host = dir == cudaMemcpyHostToHost || dir == cudaMemcpyHostToDevice;
    bool dst_host = dir == cudaMemcpyHostToHost || dir == cudaMemcpyDeviceToHost;
    if (captured) {
    } else if (dst_host && !stable(rt, dst, n)) wait = true;
    else if (src_host && !stable(rt, src, n)) {
      auto* p = static_cast<const uint8_t*>(src);
      staged = std::make_shared<std::vector<uint8_t>>(p, p + n);
    }
  }
  Op op;
  op.kind = Op::Device;
  op.node_type = cudaGraphNodeTypeMemcpy;
  op.body = [&rt, dst, src, n, dir, staged](double& seconds) {
    return do_copy(rt, dst, src, n, dir, staged.get(), seconds);
  };
  if (!wait) {
    rt.streams().enqueue(s, std::move(op));
    return cudaSuccess;
  }
  return rt.streams().run(s, std::move(op)).at->error;
}

cudaError_t memset_on(Runtime& rt, const StreamPtr& s, void* p, int value, size_t n, bool wait) {
  if (n == 0) return cudaSuccess;
  if (!wait) rt.check_device_range(addr(p), n, "memset");
  Op op;
  op.kind = Op::Device;
  op.node_type = cudaGraphNodeTypeMemset;
  op.body = [&rt, p, value, n](double& seconds) { return memset_now(rt, p, value, n, seconds); };
  if (!wait) {
    rt.streams().enqueue(s, std::move(op));
    return cudaSuccess;
  }
  return rt.streams().run(s, std::move(op)).at->error;
}

// cudaMemcpy: the copy on the default stream, then what a synchronizing
// call reports (printf output, managed memory made current on the host).
cudaError_t memcpy_sync(void* dst, const void* src, size_t count, cudaMemcpyKind kind, bool per_thread) {
  return guarded([&](Runtime& rt) {
    cudaError_t e = copy_on(rt, stream_of(nullptr, per_thread), dst, src, count, kind, true);
    cudaError_t s = rt.synchronize();
    return e != cudaSuccess ? e : s;
  });
}

cudaError_t memcpy_async(void* dst, const void* src, size_t count, cudaMemcpyKind kind, cudaStream_t stream,
                         bool per_thread) {
  return guarded([&](Runtime& rt) { return copy_on(rt, stream_of(stream, per_thread), dst, src, count, kind, false); });
}

// cudaMemset returns before the device has done it, as CUDA's does, except
// on managed and mapped memory (which the host may read right after).
cudaError_t memset_call(void* p, int value, size_t count, cudaStream_t stream, bool per_thread, bool async) {
  return guarded([&](Runtime& rt) {
    bool wait = !async && rt.mirrors().find_device(addr(p));
    return memset_on(rt, stream_of(stream, per_thread), p, value, count, wait);
  });
}

// The device address of a symbol's bytes [offset, offset + count).
uint64_t symbol_at(Runtime& rt, const char* call, const void* symbol, size_t count, size_t offset) {
  auto [base, size] = rt.symbol(symbol);
  if (offset > size || count > size - offset)
    throw qgpu::client::Error(cudaErrorInvalidValue, std::string(call) + ": " + std::to_string(count) + " bytes at offset " +
                                                         std::to_string(offset) + " exceed the variable's " +
                                                         std::to_string(size));
  return base + offset;
}

cudaError_t to_symbol(const void* symbol, const void* src, size_t count, size_t offset, cudaMemcpyKind kind,
                      cudaStream_t stream, bool per_thread, bool async) {
  return guarded([&](Runtime& rt) {
    uint64_t at = symbol_at(rt, "cudaMemcpyToSymbol", symbol, count, offset);
    if (kind == cudaMemcpyDefault) kind = rt.is_device_pointer(src) ? cudaMemcpyDeviceToDevice : cudaMemcpyHostToDevice;
    if (kind != cudaMemcpyHostToDevice && kind != cudaMemcpyDeviceToDevice)
      return set_error(cudaErrorInvalidMemcpyDirection);
    void* dst = reinterpret_cast<void*>(at);
    if (async) return copy_on(rt, stream_of(stream, per_thread), dst, src, count, kind, false);
    cudaError_t e = copy_on(rt, stream_of(nullptr, per_thread), dst, src, count, kind, true);
    cudaError_t s = rt.synchronize();
    return e != cudaSuccess ? e : s;
  });
}

cudaError_t from_symbol(void* dst, const void* symbol, size_t count, size_t offset, cudaMemcpyKind kind,
                        cudaStream_t stream, bool per_thread, bool async) {
  return guarded([&](Runtime& rt) {
    uint64_t at = symbol_at(rt, "cudaMemcpyFromSymbol", symbol, count, offset);
    if (kind == cudaMemcpyDefault) kind = rt.is_device_pointer(dst) ? cudaMemcpyDeviceToDevice : cudaMemcpyDeviceToHost;
    if (kind != cudaMemcpyDeviceToHost && kind != cudaMemcpyDeviceToDevice)
      return set_error(cudaErrorInvalidMemcpyDirection);
    const void* src = reinterpret_cast<const void*>(at);
    if (async) return copy_on(rt, stream_of(stream, per_thread), dst, src, count, kind, false);
    cudaError_t e = copy_on(rt, stream_of(nullptr, per_thread), dst, src, count, kind, true);
    cudaError_t s = rt.synchronize();
    return e != cudaSuccess ? e : s;
  });
}

// Frees device memory once the device is idle (cudaFree and cudaFreeHost
// synchronize, as CUDA's do).
// `allocation`: the daemon's allocation holding `dev` when it starts below it.
void free_device(Runtime& rt, uint64_t dev, uint64_t allocation = 0) {
  rt.streams().wait(rt.streams().all_marks());
  rt.mirrors().remove(dev);
  rt.conn().free(allocation ? allocation : dev);
  rt.note_free(dev);
}

}  // namespace

namespace qgpu::cudart {

cudaError_t copy_now(Runtime& rt, void* dst, const void* src, size_t n, cudaMemcpyKind kind, double& seconds) {
  if (n == 0) return cudaSuccess;
  return do_copy(rt, dst, src, n, direction(rt, dst, src, kind), nullptr, seconds);
}

cudaError_t memset_now(Runtime& rt, void* p, int value, size_t n, double& seconds) {
  qgpu::client::Connection& c = rt.conn();
  auto t = std::chrono::steady_clock::now();
  auto held = rt.mirrors().prepare(c, {{addr(p), n, true}});
  c.memset(addr(p), uint8_t(value), n);
  seconds += since(t);
  return cudaSuccess;
}

// The rows of a 3D copy between pitched pointers (byte positions and
// widths); rows that lie back to back on both sides go as one copy.
cudaError_t copy3d(Runtime& rt, const cudaMemcpy3DParms& p, double& seconds) {
  size_t w = p.extent.width, h = std::max<size_t>(p.extent.height, 1), d = std::max<size_t>(p.extent.depth, 1);
  const bool packed = p.srcPtr.pitch == w && p.dstPtr.pitch == w;
  for (size_t z = 0; z < d; ++z)
    for (size_t y = 0; y < h; y += packed ? h : 1) {
      auto* s = static_cast<const char*>(p.srcPtr.ptr) +
                ((p.srcPos.z + z) * p.srcPtr.ysize + p.srcPos.y + y) * p.srcPtr.pitch + p.srcPos.x;
      auto* t = static_cast<char*>(p.dstPtr.ptr) +
                ((p.dstPos.z + z) * p.dstPtr.ysize + p.dstPos.y + y) * p.dstPtr.pitch + p.dstPos.x;
      if (cudaError_t e = copy_now(rt, t, s, packed ? w * h : w, p.kind, seconds)) return e;
    }
  return cudaSuccess;
}

cudaError_t memset2d(Runtime& rt, const cudaMemsetParams& p, double& seconds) {
  const size_t row = p.width * p.elementSize;
  std::vector<uint8_t> pattern;
  if (p.elementSize != 1) {
    pattern.resize(row);
    for (size_t i = 0; i < p.width; ++i) std::memcpy(pattern.data() + i * p.elementSize, &p.value, p.elementSize);
  }
  for (size_t y = 0; y < std::max<size_t>(p.height, 1); ++y) {
    auto* t = static_cast<char*>(p.dst) + y * p.pitch;
    cudaError_t e = p.elementSize == 1 ? memset_now(rt, t, int(p.value), row, seconds)
                                       : copy_now(rt, t, pattern.data(), row, cudaMemcpyHostToDevice, seconds);
    if (e) return e;
  }
  return cudaSuccess;
}

}  // namespace qgpu::cudart

extern "C" {

cudaError_t cudaMalloc(void** devPtr, size_t size) {
  if (!devPtr) return set_error(cudaErrorInvalidValue);
  return guarded([&](Runtime& rt) {
    uint64_t a = rt.conn().malloc(size);
    rt.note_allocation(a, size);
    *devPtr = reinterpret_cast<void*>(a);
    return cudaSuccess;
  });
}

cudaError_t cudaFree(void* devPtr) {
  return guarded([&](Runtime& rt) {
    rt.conn();  // cudaFree(0) is how programs initialise the runtime
    if (!devPtr) return cudaSuccess;
    if (free_stream_ordered(rt, addr(devPtr))) return cudaSuccess;  // cudaMallocAsync or a graph's allocation
    if (auto m = rt.mirrors().find_device(addr(devPtr)); m && m->kind != Mirrors::Managed)
      return fail(cudaErrorInvalidValue, "cudaFree of host memory (free it with cudaFreeHost)");
    free_device(rt, addr(devPtr));
    return cudaSuccess;
  });
}

cudaError_t cudaMallocManaged(void** devPtr, size_t size, unsigned int flags) {
  if (!devPtr || size == 0) return set_error(cudaErrorInvalidValue);
  return guarded([&](Runtime& rt) {
    uint64_t a = rt.conn().malloc(size);
    try {
      rt.mirrors().add(a, nullptr, size, Mirrors::Managed, flags, true);
    } catch (...) {
      rt.conn().free(a);
      throw;
    }
    rt.note_allocation(a, size);
    *devPtr = reinterpret_cast<void*>(a);
    return cudaSuccess;
  });
}

// Pinned memory in the device memory, mapped live (mirrors.h), where the
// daemon shares its device memory: as under CUDA's unified addressing, the
// device then reaches it at its host address.  False (nothing allocated)
// where it does not, or when the device memory is full.
bool pinned_in_device_memory(void** pHost, size_t size, unsigned flags) {
  Runtime& rt = Runtime::get();
  if (size == 0 || rt.sticky() != cudaSuccess) return false;
  try {
    qgpu::client::Connection& c = rt.conn();  // the device memory is known once connected
    if (!rt.mirrors().live()) return false;
    uint64_t a = c.malloc(size);
    try {
      rt.mirrors().add(a, nullptr, size, Mirrors::HostMapped, flags, true);
    } catch (...) {
      c.free(a);
      return false;
    }
    rt.note_allocation(a, size);
    std::lock_guard<std::mutex> g(g_pinned_mu);
    g_pinned[a] = Pinned{size, flags, false, a};
    *pHost = reinterpret_cast<void*>(a);
    return true;
  } catch (const qgpu::client::Error&) {
    return false;
  }
}

cudaError_t cudaHostAlloc(void** pHost, size_t size, unsigned int flags) {
  if (!pHost) return set_error(cudaErrorInvalidValue);
  if (!(flags & cudaHostAllocMapped)) {
    if (pinned_in_device_memory(pHost, size, flags)) return cudaSuccess;
    void* p = std::aligned_alloc(4096, (size + 4095) / 4096 * 4096 + (size == 0 ? 4096 : 0));
    if (!p) return set_error(cudaErrorMemoryAllocation);
    std::lock_guard<std::mutex> g(g_pinned_mu);
    g_pinned[addr(p)] = Pinned{size, flags, false, 0};
    *pHost = p;
    return cudaSuccess;
  }
  // Mapped: host pages at the device copy's address, one pointer for both.
  if (size == 0) return set_error(cudaErrorInvalidValue);
  return guarded([&](Runtime& rt) {
    uint64_t a = rt.conn().malloc(size);
    try {
      rt.mirrors().add(a, nullptr, size, Mirrors::HostMapped, flags, true);
    } catch (...) {
      rt.conn().free(a);
      throw;
    }
    rt.note_allocation(a, size);
    std::lock_guard<std::mutex> g(g_pinned_mu);
    g_pinned[a] = Pinned{size, flags, false, a};
    *pHost = reinterpret_cast<void*>(a);
    return cudaSuccess;
  });
}

cudaError_t cudaMallocHost(void** ptr, size_t size) { return cudaHostAlloc(ptr, size, cudaHostAllocDefault); }

cudaError_t cudaFreeHost(void* ptr) {
  if (!ptr) return cudaSuccess;
  auto pin = find_pinned(ptr);
  if (!pin || pin->first != addr(ptr) || pin->second.registered) return set_error(cudaErrorInvalidValue);
  {
    std::lock_guard<std::mutex> g(g_pinned_mu);
    g_pinned.erase(addr(ptr));
  }
  if (!pin->second.dev) {
    std::free(ptr);
    return cudaSuccess;
  }
  return guarded([&](Runtime& rt) {
    free_device(rt, pin->second.dev);
    return cudaSuccess;
  });
}

cudaError_t cudaHostRegister(void* ptr, size_t size, unsigned int flags) {
  if (!ptr || size == 0) return set_error(cudaErrorInvalidValue);
  if (find_pinned(ptr)) return set_error(cudaErrorHostMemoryAlreadyRegistered);
  if (!(flags & cudaHostRegisterMapped)) {
    std::lock_guard<std::mutex> g(g_pinned_mu);
    g_pinned[addr(ptr)] = Pinned{size, flags, true, 0};
    return cudaSuccess;
  }
  // Mapped: a device copy at an address of its own (cudaHostGetDevicePointer).
  // Whole pages may be live (mirrors.h): their device copy then starts on a
  // page, a page into an allocation one page larger.
  return guarded([&](Runtime& rt) {
    const uint64_t page = rt.mirrors().live_registration_align(ptr, size);
    const uint64_t allocation = rt.conn().malloc(size + page);
    const uint64_t a = page ? (allocation + page - 1) / page * page : allocation;
    try {
      rt.mirrors().add(a, ptr, size, Mirrors::Registered, flags, true);
    } catch (...) {
      rt.conn().free(allocation);
      throw;
    }
    rt.note_allocation(a, size);
    std::lock_guard<std::mutex> g(g_pinned_mu);
    g_pinned[addr(ptr)] = Pinned{size, flags, true, a, allocation};
    return cudaSuccess;
  });
}

cudaError_t cudaHostUnregister(void* ptr) {
  if (!ptr) return set_error(cudaErrorInvalidValue);
  auto pin = find_pinned(ptr);
  if (!pin || pin->first != addr(ptr) || !pin->second.registered) return set_error(cudaErrorHostMemoryNotRegistered);
  {
    std::lock_guard<std::mutex> g(g_pinned_mu);
    g_pinned.erase(addr(ptr));
  }
  if (!pin->second.dev) return cudaSuccess;
  return guarded([&](Runtime& rt) {
    // What the device wrote reaches the program's memory first.
    rt.streams().wait(rt.streams().all_marks());
    rt.mirrors().prepare(rt.conn(), {{addr(ptr), pin->second.size, false}});
    free_device(rt, pin->second.dev, pin->second.allocation);
    return cudaSuccess;
  });
}

cudaError_t cudaHostGetDevicePointer(void** pDevice, void* pHost, unsigned int flags) {
  if (!pDevice || !pHost || flags != 0) return set_error(cudaErrorInvalidValue);
  return guarded([&](Runtime& rt) {
    if (auto m = rt.mirrors().find_host(pHost); m && m->kind != Mirrors::Managed && m->kind != Mirrors::ManagedVariable) {
      *pDevice = reinterpret_cast<void*>(m->dev + (addr(pHost) - addr(m->host)));
      return cudaSuccess;
    }
    if (find_pinned(pHost))
      return fail(cudaErrorInvalidValue, "cudaHostGetDevicePointer: this pinned memory is not mapped; the device reaches host "
                                         "memory allocated with cudaHostAllocMapped or registered with cudaHostRegisterMapped");
    return fail(cudaErrorInvalidValue, "cudaHostGetDevicePointer: not pinned host memory");
  });
}

cudaError_t cudaHostGetFlags(unsigned int* pFlags, void* pHost) {
  if (!pFlags) return set_error(cudaErrorInvalidValue);
  auto pin = find_pinned(pHost);
  if (!pin || pin->second.registered) return set_error(cudaErrorInvalidValue);
  *pFlags = pin->second.flags;
  return cudaSuccess;
}

cudaError_t cudaPointerGetAttributes(cudaPointerAttributes* attr, const void* ptr) {
  if (!attr) return set_error(cudaErrorInvalidValue);
  return guarded([&](Runtime& rt) {
    *attr = cudaPointerAttributes{};
    attr->device = 0;
    if (rt.is_device_pointer(ptr)) {
      auto m = rt.mirrors().find_device(addr(ptr));
      if (m && (m->kind == Mirrors::Managed || m->kind == Mirrors::ManagedVariable)) {
        attr->type = cudaMemoryTypeManaged;
        attr->devicePointer = attr->hostPointer = const_cast<void*>(ptr);
      } else if (m && m->kind == Mirrors::HostMapped) {
        attr->type = cudaMemoryTypeHost;
        attr->devicePointer = attr->hostPointer = const_cast<void*>(ptr);
      } else if (m && m->kind == Mirrors::Registered) {  // the device copy of registered memory
        attr->type = cudaMemoryTypeHost;
        attr->devicePointer = const_cast<void*>(ptr);
        attr->hostPointer = m->host + (addr(ptr) - m->dev);
      } else {
        attr->type = cudaMemoryTypeDevice;
        attr->devicePointer = const_cast<void*>(ptr);
      }
      return cudaSuccess;
    }
    if (auto pin = find_pinned(ptr)) {
      attr->type = cudaMemoryTypeHost;
      attr->hostPointer = const_cast<void*>(ptr);
      if (pin->second.dev) attr->devicePointer = reinterpret_cast<void*>(pin->second.dev + (addr(ptr) - pin->first));
      return cudaSuccess;
    }
    attr->type = cudaMemoryTypeUnregistered;
    attr->device = cudaInvalidDeviceId;
    attr->hostPointer = const_cast<void*>(ptr);
    return cudaSuccess;
  });
}

// Hints: managed memory moves at launches and synchronization whatever the
// program says, so prefetching and advice are accepted for managed ranges.
static cudaError_t managed_hint(const void* p, size_t count, cudaStream_t* stream, bool per_thread) {
  return guarded([&](Runtime& rt) {
    if (stream) stream_of(*stream, per_thread);
    auto m = rt.mirrors().find_device(addr(p));
    if (!m || (m->kind != Mirrors::Managed && m->kind != Mirrors::ManagedVariable) || addr(p) + count > m->dev + m->size)
      return fail(cudaErrorInvalidValue, "prefetch or advice for a range that is not managed memory");
    return cudaSuccess;
  });
}

cudaError_t cudaMemPrefetchAsync(const void* p, size_t count, cudaMemLocation, unsigned int, cudaStream_t stream) {
  return managed_hint(p, count, &stream, false);
}
cudaError_t cudaMemPrefetchAsync_ptsz(const void* p, size_t count, cudaMemLocation, unsigned int, cudaStream_t stream) {
  return managed_hint(p, count, &stream, true);
}
cudaError_t cudaMemAdvise(const void* p, size_t count, cudaMemoryAdvise, cudaMemLocation) {
  return managed_hint(p, count, nullptr, false);
}

cudaError_t cudaMemcpy(void* dst, const void* src, size_t count, cudaMemcpyKind kind) {
  return memcpy_sync(dst, src, count, kind, false);
}
cudaError_t cudaMemcpy_ptds(void* dst, const void* src, size_t count, cudaMemcpyKind kind) {
  return memcpy_sync(dst, src, count, kind, true);
}
cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t count, cudaMemcpyKind kind, cudaStream_t stream) {
  return memcpy_async(dst, src, count, kind, stream, false);
}
cudaError_t cudaMemcpyAsync_ptsz(void* dst, const void* src, size_t count, cudaMemcpyKind kind, cudaStream_t stream) {
  return memcpy_async(dst, src, count, kind, stream, true);
}

cudaError_t cudaMemset(void* devPtr, int value, size_t count) { return memset_call(devPtr, value, count, nullptr, false, false); }
cudaError_t cudaMemset_ptds(void* devPtr, int value, size_t count) {
  return memset_call(devPtr, value, count, nullptr, true, false);
}
cudaError_t cudaMemsetAsync(void* devPtr, int value, size_t count, cudaStream_t stream) {
  return memset_call(devPtr, value, count, stream, false, true);
}
cudaError_t cudaMemsetAsync_ptsz(void* devPtr, int value, size_t count, cudaStream_t stream) {
  return memset_call(devPtr, value, count, stream, true, true);
}

cudaError_t cudaMemcpyToSymbol(const void* symbol, const void* src, size_t count, size_t offset, cudaMemcpyKind kind) {
  return to_symbol(symbol, src, count, offset, kind, nullptr, false, false);
}
cudaError_t cudaMemcpyToSymbol_ptds(const void* symbol, const void* src, size_t count, size_t offset, cudaMemcpyKind kind) {
  return to_symbol(symbol, src, count, offset, kind, nullptr, true, false);
}
cudaError_t cudaMemcpyToSymbolAsync(const void* symbol, const void* src, size_t count, size_t offset,
                                    cudaMemcpyKind kind, cudaStream_t stream) {
  return to_symbol(symbol, src, count, offset, kind, stream, false, true);
}
cudaError_t cudaMemcpyToSymbolAsync_ptsz(const void* symbol, const void* src, size_t count, size_t offset,
                                         cudaMemcpyKind kind, cudaStream_t stream) {
  return to_symbol(symbol, src, count, offset, kind, stream, true, true);
}
cudaError_t cudaMemcpyFromSymbol(void* dst, const void* symbol, size_t count, size_t offset, cudaMemcpyKind kind) {
  return from_symbol(dst, symbol, count, offset, kind, nullptr, false, false);
}
cudaError_t cudaMemcpyFromSymbol_ptds(void* dst, const void* symbol, size_t count, size_t offset, cudaMemcpyKind kind) {
  return from_symbol(dst, symbol, count, offset, kind, nullptr, true, false);
}
cudaError_t cudaMemcpyFromSymbolAsync(void* dst, const void* symbol, size_t count, size_t offset, cudaMemcpyKind kind,
                                      cudaStream_t stream) {
  return from_symbol(dst, symbol, count, offset, kind, stream, false, true);
}
cudaError_t cudaMemcpyFromSymbolAsync_ptsz(void* dst, const void* symbol, size_t count, size_t offset,
                                           cudaMemcpyKind kind, cudaStream_t stream) {
  return from_symbol(dst, symbol, count, offset, kind, stream, true, true);
}

cudaError_t cudaGetSymbolAddress(void** devPtr, const void* symbol) {
  if (!devPtr) return set_error(cudaErrorInvalidValue);
  return guarded([&](Runtime& rt) {
    *devPtr = reinterpret_cast<void*>(rt.symbol(symbol).first);
    return cudaSuccess;
  });
}

cudaError_t cudaGetSymbolSize(size_t* size, const void* symbol) {
  if (!size) return set_error(cudaErrorInvalidValue);
  return guarded([&](Runtime& rt) {
    *size = rt.symbol(symbol).second;
    return cudaSuccess;
  });
}

cudaError_t cudaMemGetInfo(size_t* free, size_t* total) {
  return guarded([&](Runtime& rt) {
    uint64_t f, t;
    rt.conn().mem_info(&f, &t);
    if (free) *free = f;
    if (total) *total = t;
    return cudaSuccess;
  });
}

}  // extern "C"
