// Device memory (in model_host), host memory, copies and symbols.
#include <cstdlib>
#include <cstring>

#include "runtime.h"

using namespace qgpu::cudart;

namespace {

uint64_t addr(const void* p) { return reinterpret_cast<uint64_t>(p); }

// Resolves cudaMemcpyDefault from where the pointers point.
cudaMemcpyKind direction(Runtime& rt, void* dst, const void* src, cudaMemcpyKind kind) {
  if (kind != cudaMemcpyDefault) return kind;
  bool d = rt.is_device_pointer(dst), s = rt.is_device_pointer(src);
  return d ? (s ? cudaMemcpyDeviceToDevice : cudaMemcpyHostToDevice)
           : (s ? cudaMemcpyDeviceToHost : cudaMemcpyHostToHost);
}

cudaError_t copy(Runtime& rt, void* dst, const void* src, size_t count, cudaMemcpyKind kind) {
  if (count == 0) return cudaSuccess;
  if (!dst || !src) return set_error(cudaErrorInvalidValue);
  switch (direction(rt, dst, src, kind)) {
    case cudaMemcpyHostToHost: std::memmove(dst, src, count); break;
    case cudaMemcpyHostToDevice: rt.conn().write(addr(dst), src, count); break;
    case cudaMemcpyDeviceToHost: rt.conn().read(dst, addr(src), count); break;
    case cudaMemcpyDeviceToDevice: rt.conn().copy(addr(dst), addr(src), count); break;
    default: return set_error(cudaErrorInvalidMemcpyDirection);
  }
  return cudaSuccess;
}

}  // namespace

extern "C" {

cudaError_t cudaMalloc(void** devPtr, size_t size) {
  if (!devPtr) return set_error(cudaErrorInvalidValue);
  return guarded([&](Runtime& rt) {
    *devPtr = reinterpret_cast<void*>(rt.conn().malloc(size));
    return cudaSuccess;
  });
}

cudaError_t cudaFree(void* devPtr) {
  return guarded([&](Runtime& rt) {
    rt.conn();  // cudaFree(0) is how programs initialise the runtime
    if (devPtr) rt.conn().free(addr(devPtr));
    return cudaSuccess;
  });
}

cudaError_t cudaMallocHost(void** ptr, size_t size) {
  if (!ptr) return set_error(cudaErrorInvalidValue);
  *ptr = std::aligned_alloc(4096, (size + 4095) / 4096 * 4096 + (size == 0 ? 4096 : 0));
  return *ptr ? cudaSuccess : set_error(cudaErrorMemoryAllocation);
}

cudaError_t cudaHostAlloc(void** pHost, size_t size, unsigned int) { return cudaMallocHost(pHost, size); }

cudaError_t cudaFreeHost(void* ptr) {
  std::free(ptr);
  return cudaSuccess;
}

// Pinning means nothing here: copies go through the daemon either way.
cudaError_t cudaHostRegister(void* ptr, size_t, unsigned int) {
  return ptr ? cudaSuccess : set_error(cudaErrorInvalidValue);
}
cudaError_t cudaHostUnregister(void* ptr) { return ptr ? cudaSuccess : set_error(cudaErrorInvalidValue); }

cudaError_t cudaMemcpy(void* dst, const void* src, size_t count, cudaMemcpyKind kind) {
  return guarded([&](Runtime& rt) {
    cudaError_t e = copy(rt, dst, src, count, kind);
    rt.synchronize();  // a synchronous copy waits for the device: print its output
    return e;
  });
}

cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t count, cudaMemcpyKind kind, cudaStream_t) {
  return guarded([&](Runtime& rt) { return copy(rt, dst, src, count, kind); });
}

cudaError_t cudaMemset(void* devPtr, int value, size_t count) {
  return guarded([&](Runtime& rt) {
    if (count) rt.conn().memset(addr(devPtr), uint8_t(value), count);
    return cudaSuccess;
  });
}

cudaError_t cudaMemsetAsync(void* devPtr, int value, size_t count, cudaStream_t) {
  return cudaMemset(devPtr, value, count);
}

cudaError_t cudaMemcpyToSymbol(const void* symbol, const void* src, size_t count, size_t offset, cudaMemcpyKind kind) {
  return guarded([&](Runtime& rt) {
    auto [base, size] = rt.symbol(symbol);
    if (offset > size || count > size - offset)
      return fail(cudaErrorInvalidValue, "cudaMemcpyToSymbol: " + std::to_string(count) + " bytes at offset " +
                                             std::to_string(offset) + " exceed the variable's " + std::to_string(size));
    if (kind == cudaMemcpyDefault) kind = rt.is_device_pointer(src) ? cudaMemcpyDeviceToDevice : cudaMemcpyHostToDevice;
    if (kind != cudaMemcpyHostToDevice && kind != cudaMemcpyDeviceToDevice)
      return set_error(cudaErrorInvalidMemcpyDirection);
    return copy(rt, reinterpret_cast<void*>(base + offset), src, count, kind);
  });
}

cudaError_t cudaMemcpyToSymbolAsync(const void* symbol, const void* src, size_t count, size_t offset,
                                    cudaMemcpyKind kind, cudaStream_t) {
  return cudaMemcpyToSymbol(symbol, src, count, offset, kind);
}

cudaError_t cudaMemcpyFromSymbol(void* dst, const void* symbol, size_t count, size_t offset, cudaMemcpyKind kind) {
  return guarded([&](Runtime& rt) {
    auto [base, size] = rt.symbol(symbol);
    if (offset > size || count > size - offset)
      return fail(cudaErrorInvalidValue, "cudaMemcpyFromSymbol: " + std::to_string(count) + " bytes at offset " +
                                             std::to_string(offset) + " exceed the variable's " + std::to_string(size));
    if (kind == cudaMemcpyDefault) kind = rt.is_device_pointer(dst) ? cudaMemcpyDeviceToDevice : cudaMemcpyDeviceToHost;
    if (kind != cudaMemcpyDeviceToHost && kind != cudaMemcpyDeviceToDevice)
      return set_error(cudaErrorInvalidMemcpyDirection);
    return copy(rt, dst, reinterpret_cast<const void*>(base + offset), count, kind);
  });
}

cudaError_t cudaMemcpyFromSymbolAsync(void* dst, const void* symbol, size_t count, size_t offset, cudaMemcpyKind kind,
                                      cudaStream_t) {
  return cudaMemcpyFromSymbol(dst, symbol, count, offset, kind);
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
