// Pitched memory, CUDA arrays, 2D/3D copies and memsets, texture and surface
// objects.
//
// A CUDA array is device memory with its texels in rows, rows in slices,
// both packed (model_host/launch/texture.h); cudaArray_t points to the
// runtime's record of it.  A texture or surface object is the device address
// of a 64-byte descriptor the runtime writes into device memory when the
// object is created; kernels read it (docs/isa.md section 8.3).  2D and 3D
// copies and memsets are one operation of their stream that copies row by
// row (copy3d, memset2d); they wait for completion, asynchronous forms
// included (CUDA allows an asynchronous call to complete before it returns).
#include <algorithm>
#include <cstring>
#include <map>
#include <set>

#include <driver_functions.h>

#include "model_host/launch/texture.h"
#include "runtime.h"

using namespace qgpu::cudart;
namespace T = qgpu::launch::tex;

struct cudaArray {
  uint64_t dev = 0;
  cudaChannelFormatDesc desc{};
  cudaExtent extent{};  // as allocated (height/depth 0 for fewer dimensions)
  unsigned flags = 0;
  size_t texel = 0;     // bytes
  size_t pitch = 0;     // row bytes
  size_t rows = 1, slices = 1;
};

namespace {

std::mutex g_mu;
std::set<cudaArray_t> g_arrays;
struct Object {
  cudaResourceDesc res{};
  cudaTextureDesc tex{};
  bool surface = false;
};
std::map<unsigned long long, Object> g_objects;

uint64_t addr(const void* p) { return reinterpret_cast<uint64_t>(p); }

cudaArray* array_of(cudaArray_const_t a) {
  std::lock_guard<std::mutex> g(g_mu);
  auto* p = const_cast<cudaArray*>(a);
  if (!a || !g_arrays.count(p)) throw qgpu::client::Error(cudaErrorInvalidResourceHandle, "not a CUDA array of this runtime");
  return p;
}

// Channels, bytes per channel of a channel descriptor (all channels alike).
void channels_of(const cudaChannelFormatDesc& d, uint32_t& n, uint32_t& bytes) {
  const int b[4] = {d.x, d.y, d.z, d.w};
  n = 0;
  for (int k = 0; k < 4; ++k)
    if (b[k]) {
      if (b[k] != d.x) throw qgpu::client::Error(cudaErrorInvalidChannelDescriptor, "channels of different sizes");
      ++n;
    }
  if ((n != 1 && n != 2 && n != 4) || (d.x != 8 && d.x != 16 && d.x != 32))
    throw qgpu::client::Error(cudaErrorInvalidChannelDescriptor,
                              "channel descriptor (" + std::to_string(d.x) + "," + std::to_string(d.y) + "," +
                                  std::to_string(d.z) + "," + std::to_string(d.w) +
                                  "): qgpu takes 1, 2 or 4 channels of 8, 16 or 32 bits");
  if (d.f == cudaChannelFormatKindFloat && d.x == 8)
    throw qgpu::client::Error(cudaErrorInvalidChannelDescriptor, "8-bit float channels");
  bytes = uint32_t(d.x / 8);
}

cudaError_t make_array(cudaArray_t* out, const cudaChannelFormatDesc* desc, cudaExtent e, unsigned flags) {
  if (!out || !desc || e.width == 0) return set_error(cudaErrorInvalidValue);
  return guarded([&](Runtime& rt) {
    uint32_t n, b;
    channels_of(*desc, n, b);
    auto a = std::make_unique<cudaArray>();
    a->desc = *desc;
    a->extent = e;
    a->flags = flags;
    a->texel = size_t(n) * b;
    a->pitch = a->texel * e.width;
    a->rows = std::max<size_t>(e.height, 1);
    a->slices = std::max<size_t>(e.depth, 1);
    if ((flags & cudaArrayCubemap) && (e.width != e.height || a->slices % 6))
      return fail(cudaErrorInvalidValue, "cube map array: width and height must match and depth be 6 per layer");
    size_t bytes = a->pitch * a->rows * a->slices;
    a->dev = rt.conn().malloc(bytes + 16);  // 16: a texel fetch may read the word after the last texel
    rt.note_allocation(a->dev, bytes + 16);
    std::lock_guard<std::mutex> g(g_mu);
    *out = a.get();
    g_arrays.insert(a.release());
    return cudaSuccess;
  });
}

void free_device(Runtime& rt, uint64_t dev) {
  rt.streams().wait(rt.streams().all_marks());
  rt.conn().free(dev);
  rt.note_free(dev);
}

// One side of a copy: a pitched pointer or an array (its position in elements).
struct Side {
  cudaPitchedPtr ptr{};
  cudaPos pos{};
  size_t es = 1;  // bytes per element of the position and extent
};
Side side(cudaArray_const_t arr, const cudaPitchedPtr& p, const cudaPos& pos) {
  if (!arr) return {p, pos, 1};
  cudaArray* a = array_of(arr);
  Side s;
  s.ptr = make_cudaPitchedPtr(reinterpret_cast<void*>(a->dev), a->pitch, a->extent.width, a->rows);
  s.es = a->texel;
  s.pos = make_cudaPos(pos.x * a->texel, pos.y, pos.z);
  return s;
}

// Runs a 3D copy (positions and width in bytes) as one operation of `stream`.
cudaError_t copy_op(Runtime& rt, const cudaMemcpy3DParms& p, cudaStream_t stream, bool per_thread, bool sync) {
  if (p.extent.width == 0 || p.extent.height == 0 || p.extent.depth == 0) return cudaSuccess;
  Op op;
  op.kind = Op::Device;
  op.node_type = cudaGraphNodeTypeMemcpy;
  op.body = [&rt, p](double& seconds) { return copy3d(rt, p, seconds); };
  StreamPtr s = stream_of(stream, per_thread);
  if (s->capture) {  // recorded as a node of the capture's graph
    rt.streams().enqueue(s, std::move(op));
    return cudaSuccess;
  }
  cudaError_t e = rt.streams().run(s, std::move(op)).at->error;
  if (!sync) return e;
  cudaError_t y = rt.synchronize();
  return e != cudaSuccess ? e : y;
}

// cudaMemcpy3D's parameters resolved to pitched pointers and bytes.
cudaMemcpy3DParms resolve(const cudaMemcpy3DParms& p) {
  if ((p.srcArray && p.srcPtr.ptr) || (p.dstArray && p.dstPtr.ptr) || (!p.srcArray && !p.srcPtr.ptr) ||
      (!p.dstArray && !p.dstPtr.ptr))
    throw qgpu::client::Error(cudaErrorInvalidValue, "cudaMemcpy3D: give each side an array or a pointer");
  Side s = side(p.srcArray, p.srcPtr, p.srcPos), d = side(p.dstArray, p.dstPtr, p.dstPos);
  size_t es = p.srcArray ? s.es : p.dstArray ? d.es : 1;
  cudaMemcpy3DParms r{};
  r.srcPtr = s.ptr;
  r.dstPtr = d.ptr;
  r.srcPos = s.pos;
  r.dstPos = d.pos;
  r.extent = make_cudaExtent(p.extent.width * es, p.extent.height, p.extent.depth);
  r.kind = p.kind;
  return r;
}

cudaMemcpy3DParms copy2d(void* dst, size_t dpitch, const void* src, size_t spitch, size_t width, size_t height,
                         cudaMemcpyKind kind) {
  if ((height > 1 && (width > dpitch || width > spitch)))
    throw qgpu::client::Error(cudaErrorInvalidPitchValue, "2D copy wider than its pitch");
  cudaMemcpy3DParms p{};
  p.srcPtr = make_cudaPitchedPtr(const_cast<void*>(src), spitch, width, height);
  p.dstPtr = make_cudaPitchedPtr(dst, dpitch, width, height);
  p.extent = make_cudaExtent(width, height, 1);
  p.kind = kind;
  return p;
}

// A 2D copy to or from an array at byte offset wOffset of row hOffset.
cudaMemcpy3DParms array2d(cudaArray_const_t arr, size_t wOffset, size_t hOffset, bool to_array, void* ptr,
                          size_t pitch, size_t width, size_t height, cudaMemcpyKind kind) {
  cudaArray* a = array_of(arr);
  if (wOffset + width > a->pitch || hOffset + height > a->rows * a->slices)
    throw qgpu::client::Error(cudaErrorInvalidValue, "2D copy beyond the array");
  cudaMemcpy3DParms p{};
  cudaPitchedPtr ap = make_cudaPitchedPtr(reinterpret_cast<void*>(a->dev), a->pitch, a->extent.width, a->rows * a->slices);
  cudaPitchedPtr pp = make_cudaPitchedPtr(ptr, pitch, width, height);
  (to_array ? p.dstPtr : p.srcPtr) = ap;
  (to_array ? p.dstPos : p.srcPos) = make_cudaPos(wOffset, hOffset, 0);
  (to_array ? p.srcPtr : p.dstPtr) = pp;
  p.extent = make_cudaExtent(width, height, 1);
  p.kind = kind;
  return p;
}

// The linear bytes of an array from (wOffset, hOffset) on: its rows are packed.
cudaMemcpy3DParms array_linear(cudaArray_const_t arr, size_t wOffset, size_t hOffset, bool to_array, void* ptr,
                               size_t count, cudaMemcpyKind kind) {
  cudaArray* a = array_of(arr);
  size_t off = hOffset * a->pitch + wOffset, total = a->pitch * a->rows * a->slices;
  if (off + count > total) throw qgpu::client::Error(cudaErrorInvalidValue, "copy beyond the array");
  void* at = reinterpret_cast<void*>(a->dev + off);
  return copy2d(to_array ? at : ptr, count, to_array ? ptr : at, count, count, 1, kind);
}

cudaError_t memset_op(Runtime& rt, const cudaMemsetParams& p, cudaStream_t stream, bool per_thread, bool sync) {
  if (p.width == 0 || p.height == 0) return cudaSuccess;
  if (p.height > 1 && p.width > p.pitch) return fail(cudaErrorInvalidPitchValue, "cudaMemset2D wider than its pitch");
  Op op;
  op.kind = Op::Device;
  op.node_type = cudaGraphNodeTypeMemset;
  op.body = [&rt, p](double& seconds) { return memset2d(rt, p, seconds); };
  StreamPtr s = stream_of(stream, per_thread);
  if (s->capture) {
    rt.streams().enqueue(s, std::move(op));
    return cudaSuccess;
  }
  cudaError_t e = rt.streams().run(s, std::move(op)).at->error;
  if (!sync) return e;
  cudaError_t y = rt.synchronize();
  return e != cudaSuccess ? e : y;
}

cudaMemsetParams memset_params(void* p, size_t pitch, int value, size_t width, size_t height) {
  cudaMemsetParams m{};
  m.dst = p;
  m.pitch = pitch;
  m.value = unsigned(value) & 0xFF;
  m.elementSize = 1;
  m.width = width;
  m.height = height;
  return m;
}

// The descriptor of a resource (and, for textures, a texture description).
T::Desc describe(const cudaResourceDesc& r, const cudaTextureDesc* t) {
  const cudaChannelFormatDesc* cd = nullptr;
  T::Desc d;
  uint32_t n = 0, b = 0;
  auto fill = [&](uint64_t base, size_t pitch, size_t slice, size_t w, size_t h, size_t dep) {
    channels_of(*cd, n, b);
    d = T::Desc(base, uint32_t(pitch), uint32_t(slice), uint32_t(w), uint32_t(h), uint32_t(dep), 0, n * b);
  };
  switch (r.resType) {
    case cudaResourceTypeArray: {
      cudaArray* a = array_of(r.res.array.array);
      cd = &a->desc;
      fill(a->dev, a->pitch, a->pitch * a->rows, a->extent.width, a->rows, a->slices);
      break;
    }
    case cudaResourceTypeLinear:
      cd = &r.res.linear.desc;
      channels_of(*cd, n, b);
      fill(addr(r.res.linear.devPtr), r.res.linear.sizeInBytes, r.res.linear.sizeInBytes, r.res.linear.sizeInBytes / (n * b),
           1, 1);
      break;
    case cudaResourceTypePitch2D:
      cd = &r.res.pitch2D.desc;
      fill(addr(r.res.pitch2D.devPtr), r.res.pitch2D.pitchInBytes, r.res.pitch2D.pitchInBytes * r.res.pitch2D.height,
           r.res.pitch2D.width, r.res.pitch2D.height, 1);
      break;
    default:
      throw qgpu::client::Error(cudaErrorNotSupported,
                                "texture or surface of a mipmapped array: qgpu's resources are arrays, linear and pitched memory");
  }
  const bool integer = cd->f == cudaChannelFormatKindSigned || cd->f == cudaChannelFormatKindUnsigned;
  const bool normalized_read = t && t->readMode == cudaReadModeNormalizedFloat && integer && b < 4;
  T::Kind kind = b == 4                                   ? T::kBits
                 : cd->f == cudaChannelFormatKindFloat    ? T::kHalf
                 : cd->f == cudaChannelFormatKindSigned   ? (normalized_read ? T::kSnorm : T::kSigned)
                                                          : (normalized_read ? T::kUnorm : T::kUnsigned);
  if (cd->f != cudaChannelFormatKindFloat && !integer)
    throw qgpu::client::Error(cudaErrorNotSupported, "channel format kind " + std::to_string(int(cd->f)) +
                                                         ": qgpu's textures take float, signed and unsigned channels");
  d.w[T::kFormat] = T::format_word(n, b, kind);
  if (!t) return d;
  if (t->filterMode == cudaFilterModeLinear && integer && !normalized_read)
    throw qgpu::client::Error(cudaErrorInvalidValue, "linear filtering of integer texels read as integers");
  uint32_t mode = 0;
  for (int k = 0; k < 3; ++k) {
    uint32_t m = uint32_t(t->addressMode[k]) & 3;
    if (!t->normalizedCoords && (m == T::kWrap || m == T::kMirror)) m = T::kClamp;  // CUDA: only with normalised coordinates
    if (r.resType == cudaResourceTypeLinear) m = T::kBorderMode;  // tex1Dfetch past the end reads 0
    mode |= m << (2 * k);
  }
  if (t->filterMode == cudaFilterModeLinear) mode |= T::kLinear;
  if (t->normalizedCoords) mode |= T::kNormalized;
  d.w[T::kMode] = mode;
  for (int k = 0; k < 4; ++k)
    d.w[T::kBorder + k] = r.resType == cudaResourceTypeLinear ? 0 : T::f32_bits(t->borderColor[k]);
  return d;
}

cudaError_t create_object(unsigned long long* out, const cudaResourceDesc* r, const cudaTextureDesc* t, bool surface) {
  if (!out || !r || (!surface && !t)) return set_error(cudaErrorInvalidValue);
  return guarded([&](Runtime& rt) {
    if (surface && r->resType != cudaResourceTypeArray)
      return fail(cudaErrorInvalidValue, "surface object of a resource that is not a CUDA array");
    T::Desc d = describe(*r, t);
    uint64_t a = rt.conn().malloc(T::kDescBytes);
    rt.note_allocation(a, T::kDescBytes);
    rt.conn().write(a, d.w, T::kDescBytes);
    std::lock_guard<std::mutex> g(g_mu);
    Object o;
    o.res = *r;
    if (t) o.tex = *t;
    o.surface = surface;
    g_objects[a] = o;
    *out = a;
    return cudaSuccess;
  });
}

cudaError_t destroy_object(unsigned long long h, bool surface) {
  return guarded([&](Runtime& rt) {
    {
      std::lock_guard<std::mutex> g(g_mu);
      auto it = g_objects.find(h);
      if (it == g_objects.end() || it->second.surface != surface) return set_error(cudaErrorInvalidValue);
      g_objects.erase(it);
    }
    free_device(rt, h);
    return cudaSuccess;
  });
}

Object object_of(unsigned long long h, bool surface) {
  std::lock_guard<std::mutex> g(g_mu);
  auto it = g_objects.find(h);
  if (it == g_objects.end() || it->second.surface != surface)
    throw qgpu::client::Error(cudaErrorInvalidValue, surface ? "not a surface object" : "not a texture object");
  return it->second;
}

}  // namespace

cudaMemcpy3DParms qgpu::cudart::array_copy_bytes(const cudaMemcpy3DParms& p) {
  if (!p.srcArray && !p.dstArray) return p;
  return resolve(p);
}

extern "C" {

cudaError_t cudaMallocPitch(void** devPtr, size_t* pitch, size_t width, size_t height) {
  if (!devPtr || !pitch) return set_error(cudaErrorInvalidValue);
  return guarded([&](Runtime& rt) {
    size_t p = (std::max<size_t>(width, 1) + 255) / 256 * 256;
    uint64_t a = rt.conn().malloc(p * std::max<size_t>(height, 1));
    rt.note_allocation(a, p * std::max<size_t>(height, 1));
    *devPtr = reinterpret_cast<void*>(a);
    *pitch = p;
    return cudaSuccess;
  });
}

cudaError_t cudaMalloc3D(cudaPitchedPtr* pitchedDevPtr, cudaExtent extent) {
  if (!pitchedDevPtr) return set_error(cudaErrorInvalidValue);
  void* p = nullptr;
  size_t pitch = 0;
  cudaError_t e = cudaMallocPitch(&p, &pitch, extent.width, std::max<size_t>(extent.height, 1) * std::max<size_t>(extent.depth, 1));
  if (e) return e;
  *pitchedDevPtr = make_cudaPitchedPtr(p, pitch, extent.width, extent.height);
  return cudaSuccess;
}

cudaError_t cudaMallocArray(cudaArray_t* array, const cudaChannelFormatDesc* desc, size_t width, size_t height,
                            unsigned int flags) {
  return make_array(array, desc, make_cudaExtent(width, height, 0), flags);
}

cudaError_t cudaMalloc3DArray(cudaArray_t* array, const cudaChannelFormatDesc* desc, cudaExtent extent, unsigned int flags) {
  return make_array(array, desc, extent, flags);
}

cudaError_t cudaFreeArray(cudaArray_t array) {
  if (!array) return cudaSuccess;
  return guarded([&](Runtime& rt) {
    cudaArray* a = array_of(array);
    {
      std::lock_guard<std::mutex> g(g_mu);
      g_arrays.erase(a);
    }
    free_device(rt, a->dev);
    delete a;
    return cudaSuccess;
  });
}

cudaError_t cudaArrayGetInfo(cudaChannelFormatDesc* desc, cudaExtent* extent, unsigned int* flags, cudaArray_t array) {
  return guarded([&](Runtime&) {
    cudaArray* a = array_of(array);
    if (desc) *desc = a->desc;
    if (extent) *extent = a->extent;
    if (flags) *flags = a->flags;
    return cudaSuccess;
  });
}

cudaError_t cudaGetChannelDesc(cudaChannelFormatDesc* desc, cudaArray_const_t array) {
  if (!desc) return set_error(cudaErrorInvalidValue);
  return guarded([&](Runtime&) {
    *desc = array_of(array)->desc;
    return cudaSuccess;
  });
}

// ---- copies -----------------------------------------------------------------
#define QGPU_COPY(NAME, ARGS, PARMS, STREAM, PT, SYNC) \
  cudaError_t NAME ARGS { return guarded([&](Runtime& rt) { return copy_op(rt, PARMS, STREAM, PT, SYNC); }); }

#define QGPU_COPY_FORMS(BASE, ARGS, ARGS_ASYNC, PARMS)                   \
  QGPU_COPY(BASE, ARGS, PARMS, nullptr, false, true)                     \
  QGPU_COPY(BASE##_ptds, ARGS, PARMS, nullptr, true, true)               \
  QGPU_COPY(BASE##Async, ARGS_ASYNC, PARMS, stream, false, false)        \
  QGPU_COPY(BASE##Async_ptsz, ARGS_ASYNC, PARMS, stream, true, false)

QGPU_COPY_FORMS(cudaMemcpy2D,
                (void* dst, size_t dpitch, const void* src, size_t spitch, size_t width, size_t height, cudaMemcpyKind kind),
                (void* dst, size_t dpitch, const void* src, size_t spitch, size_t width, size_t height, cudaMemcpyKind kind,
                 cudaStream_t stream),
                copy2d(dst, dpitch, src, spitch, width, height, kind))
QGPU_COPY_FORMS(cudaMemcpy2DToArray,
                (cudaArray_t dst, size_t wOffset, size_t hOffset, const void* src, size_t spitch, size_t width,
                 size_t height, cudaMemcpyKind kind),
                (cudaArray_t dst, size_t wOffset, size_t hOffset, const void* src, size_t spitch, size_t width,
                 size_t height, cudaMemcpyKind kind, cudaStream_t stream),
                array2d(dst, wOffset, hOffset, true, const_cast<void*>(src), spitch, width, height, kind))
QGPU_COPY_FORMS(cudaMemcpy2DFromArray,
                (void* dst, size_t dpitch, cudaArray_const_t src, size_t wOffset, size_t hOffset, size_t width,
                 size_t height, cudaMemcpyKind kind),
                (void* dst, size_t dpitch, cudaArray_const_t src, size_t wOffset, size_t hOffset, size_t width,
                 size_t height, cudaMemcpyKind kind, cudaStream_t stream),
                array2d(src, wOffset, hOffset, false, dst, dpitch, width, height, kind))
QGPU_COPY_FORMS(cudaMemcpyToArray,
                (cudaArray_t dst, size_t wOffset, size_t hOffset, const void* src, size_t count, cudaMemcpyKind kind),
                (cudaArray_t dst, size_t wOffset, size_t hOffset, const void* src, size_t count, cudaMemcpyKind kind,
                 cudaStream_t stream),
                array_linear(dst, wOffset, hOffset, true, const_cast<void*>(src), count, kind))
QGPU_COPY_FORMS(cudaMemcpyFromArray,
                (void* dst, cudaArray_const_t src, size_t wOffset, size_t hOffset, size_t count, cudaMemcpyKind kind),
                (void* dst, cudaArray_const_t src, size_t wOffset, size_t hOffset, size_t count, cudaMemcpyKind kind,
                 cudaStream_t stream),
                array_linear(src, wOffset, hOffset, false, dst, count, kind))
QGPU_COPY_FORMS(cudaMemcpy3D, (const cudaMemcpy3DParms* p), (const cudaMemcpy3DParms* p, cudaStream_t stream),
                resolve(p ? *p : throw qgpu::client::Error(cudaErrorInvalidValue, "cudaMemcpy3D without parameters")))

cudaError_t cudaMemcpy2DArrayToArray(cudaArray_t dst, size_t wOffsetDst, size_t hOffsetDst, cudaArray_const_t src,
                                     size_t wOffsetSrc, size_t hOffsetSrc, size_t width, size_t height,
                                     cudaMemcpyKind kind) {
  return guarded([&](Runtime& rt) {
    cudaArray* s = array_of(src);
    cudaMemcpy3DParms p = array2d(dst, wOffsetDst, hOffsetDst, true,
                                  reinterpret_cast<void*>(s->dev + hOffsetSrc * s->pitch + wOffsetSrc), s->pitch, width,
                                  height, cudaMemcpyDeviceToDevice);
    (void)kind;
    return copy_op(rt, p, nullptr, false, true);
  });
}

cudaError_t cudaMemcpyArrayToArray(cudaArray_t dst, size_t wOffsetDst, size_t hOffsetDst, cudaArray_const_t src,
                                   size_t wOffsetSrc, size_t hOffsetSrc, size_t count, cudaMemcpyKind kind) {
  return guarded([&](Runtime& rt) {
    cudaArray* s = array_of(src);
    cudaMemcpy3DParms p = array_linear(dst, wOffsetDst, hOffsetDst, true,
                                       reinterpret_cast<void*>(s->dev + hOffsetSrc * s->pitch + wOffsetSrc), count,
                                       cudaMemcpyDeviceToDevice);
    (void)kind;
    return copy_op(rt, p, nullptr, false, true);
  });
}

// ---- memsets ------------------------------------------------------------------
cudaError_t cudaMemset2D(void* p, size_t pitch, int value, size_t width, size_t height) {
  return guarded([&](Runtime& rt) { return memset_op(rt, memset_params(p, pitch, value, width, height), nullptr, false, true); });
}
cudaError_t cudaMemset2D_ptds(void* p, size_t pitch, int value, size_t width, size_t height) {
  return guarded([&](Runtime& rt) { return memset_op(rt, memset_params(p, pitch, value, width, height), nullptr, true, true); });
}
cudaError_t cudaMemset2DAsync(void* p, size_t pitch, int value, size_t width, size_t height, cudaStream_t stream) {
  return guarded([&](Runtime& rt) { return memset_op(rt, memset_params(p, pitch, value, width, height), stream, false, false); });
}
cudaError_t cudaMemset2DAsync_ptsz(void* p, size_t pitch, int value, size_t width, size_t height, cudaStream_t stream) {
  return guarded([&](Runtime& rt) { return memset_op(rt, memset_params(p, pitch, value, width, height), stream, true, false); });
}
static cudaError_t memset3d(cudaPitchedPtr p, int value, cudaExtent e, cudaStream_t stream, bool pt, bool sync) {
  return guarded([&](Runtime& rt) {
    for (size_t z = 0; z < std::max<size_t>(e.depth, 1); ++z) {
      char* at = static_cast<char*>(p.ptr) + z * p.pitch * p.ysize;
      if (cudaError_t r = memset_op(rt, memset_params(at, p.pitch, value, e.width, e.height), stream, pt, sync)) return r;
    }
    return cudaSuccess;
  });
}
cudaError_t cudaMemset3D(cudaPitchedPtr p, int value, cudaExtent e) { return memset3d(p, value, e, nullptr, false, true); }
cudaError_t cudaMemset3D_ptds(cudaPitchedPtr p, int value, cudaExtent e) { return memset3d(p, value, e, nullptr, true, true); }
cudaError_t cudaMemset3DAsync(cudaPitchedPtr p, int value, cudaExtent e, cudaStream_t s) {
  return memset3d(p, value, e, s, false, false);
}
cudaError_t cudaMemset3DAsync_ptsz(cudaPitchedPtr p, int value, cudaExtent e, cudaStream_t s) {
  return memset3d(p, value, e, s, true, false);
}

// ---- texture and surface objects -------------------------------------------------
cudaError_t cudaCreateTextureObject(cudaTextureObject_t* pTexObject, const cudaResourceDesc* pResDesc,
                                    const cudaTextureDesc* pTexDesc, const cudaResourceViewDesc* pResViewDesc) {
  if (pResViewDesc) return fail(cudaErrorNotSupported, "cudaCreateTextureObject with a resource view: qgpu reads the resource as it is");
  return create_object(pTexObject, pResDesc, pTexDesc, false);
}
cudaError_t cudaDestroyTextureObject(cudaTextureObject_t texObject) { return destroy_object(texObject, false); }
cudaError_t cudaGetTextureObjectResourceDesc(cudaResourceDesc* pResDesc, cudaTextureObject_t texObject) {
  if (!pResDesc) return set_error(cudaErrorInvalidValue);
  return guarded([&](Runtime&) {
    *pResDesc = object_of(texObject, false).res;
    return cudaSuccess;
  });
}
cudaError_t cudaGetTextureObjectTextureDesc(cudaTextureDesc* pTexDesc, cudaTextureObject_t texObject) {
  if (!pTexDesc) return set_error(cudaErrorInvalidValue);
  return guarded([&](Runtime&) {
    *pTexDesc = object_of(texObject, false).tex;
    return cudaSuccess;
  });
}
cudaError_t cudaCreateSurfaceObject(cudaSurfaceObject_t* pSurfObject, const cudaResourceDesc* pResDesc) {
  return create_object(pSurfObject, pResDesc, nullptr, true);
}
cudaError_t cudaDestroySurfaceObject(cudaSurfaceObject_t surfObject) { return destroy_object(surfObject, true); }
cudaError_t cudaGetSurfaceObjectResourceDesc(cudaResourceDesc* pResDesc, cudaSurfaceObject_t surfObject) {
  if (!pResDesc) return set_error(cudaErrorInvalidValue);
  return guarded([&](Runtime&) {
    *pResDesc = object_of(surfObject, true).res;
    return cudaSuccess;
  });
}

}  // extern "C"
