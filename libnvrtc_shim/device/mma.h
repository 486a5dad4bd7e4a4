// mma.h for qgpu's NVRTC: the warp matrix functions of CUDA's
// `nvcuda::wmma` (the tensor-core API) for sm_75's shapes m16n16k16,
// m32n8k16 and m8n32k16 with half inputs and float or half accumulators, and
// signed char or unsigned char inputs with int accumulators.  Each function
// is one of Clang's __hmma_* / __imma_* builtins, which become the PTX
// `wmma.load`, `wmma.mma` and `wmma.store` instructions that NVIDIA's header
// compiles to.  A fragment holds its share of the matrix in `x[]`, packed
// as the instruction's registers (two halves, four 8-bit integers or one
// float or int each); which elements a lane holds is the implementation's,
// so programs treat them all alike (fill, scale, add).
#pragma once
#pragma clang system_header

#include <cuda_fp16.h>

namespace nvcuda {
namespace wmma {

struct row_major;
struct col_major;
struct matrix_a;
struct matrix_b;
struct accumulator;
enum layout_t { mem_row_major, mem_col_major };

namespace __qgpu {
template <typename T, int Size>
struct __align__(8) frag_base {
  typedef T element_type;
  typedef T storage_element_type;
  enum { num_elements = Size };
  T x[Size];
};

// Elements per lane: the PTX fragment's registers times the elements each
// holds.  Other combinations are left undefined, so they do not compile.
template <typename Use, int M, int N, int K, typename T>
struct elements;
#define __QGPU_WMMA_ELEMENTS(Use, M, N, K, T, Count) \
  template <>                                         \
  struct elements<Use, M, N, K, T> {                  \
    enum { value = Count };                           \
  };
#define __QGPU_WMMA_SHAPE_ELEMENTS(M, N, K, S8A, S8B)          \
  __QGPU_WMMA_ELEMENTS(matrix_a, M, N, K, __half, 16)          \
  __QGPU_WMMA_ELEMENTS(matrix_b, M, N, K, __half, 16)          \
  __QGPU_WMMA_ELEMENTS(accumulator, M, N, K, __half, 8)        \
  __QGPU_WMMA_ELEMENTS(accumulator, M, N, K, float, 8)         \
  __QGPU_WMMA_ELEMENTS(matrix_a, M, N, K, signed char, S8A)    \
  __QGPU_WMMA_ELEMENTS(matrix_b, M, N, K, signed char, S8B)    \
  __QGPU_WMMA_ELEMENTS(matrix_a, M, N, K, unsigned char, S8A)  \
  __QGPU_WMMA_ELEMENTS(matrix_b, M, N, K, unsigned char, S8B)  \
  __QGPU_WMMA_ELEMENTS(accumulator, M, N, K, int, 8)
__QGPU_WMMA_SHAPE_ELEMENTS(16, 16, 16, 8, 8)
__QGPU_WMMA_SHAPE_ELEMENTS(32, 8, 16, 16, 4)
__QGPU_WMMA_SHAPE_ELEMENTS(8, 32, 16, 4, 16)
#undef __QGPU_WMMA_SHAPE_ELEMENTS
#undef __QGPU_WMMA_ELEMENTS

// The builtins' layout operand: 0 row-major, 1 column-major; mma's is
// 2 * A's + B's.
template <typename Layout>
struct layout_id;
template <>
struct layout_id<row_major> {
  enum { value = 0 };
};
template <>
struct layout_id<col_major> {
  enum { value = 1 };
};
}  // namespace __qgpu

template <typename Use, int M, int N, int K, typename T, typename Layout = void>
class fragment : public __qgpu::frag_base<T, __qgpu::elements<Use, M, N, K, T>::value> {};

template <typename Use, int M, int N, int K, typename T, typename Layout>
__device__ __inline__ void fill_fragment(
    fragment<Use, M, N, K, T, Layout>& f,
    const typename fragment<Use, M, N, K, T, Layout>::storage_element_type& v) {
  for (int i = 0; i < f.num_elements; ++i) f.x[i] = v;
}

// The builtins take the layout and the saturation as constants, hence the
// branches on them.

// The half and float forms of one shape; P is the builtins' prefix.
#define __QGPU_WMMA_HALF(M, N, K, P)                                                              \
  template <typename L>                                                                           \
  __device__ __inline__ void load_matrix_sync(fragment<matrix_a, M, N, K, __half, L>& f,         \
                                              const __half* p, unsigned ldm) {                    \
    P##_ld_a((int*)f.x, (const int*)p, ldm, __qgpu::layout_id<L>::value);                         \
  }                                                                                               \
  template <typename L>                                                                           \
  __device__ __inline__ void load_matrix_sync(fragment<matrix_b, M, N, K, __half, L>& f,         \
                                              const __half* p, unsigned ldm) {                    \
    P##_ld_b((int*)f.x, (const int*)p, ldm, __qgpu::layout_id<L>::value);                         \
  }                                                                                               \
  __device__ __inline__ void load_matrix_sync(fragment<accumulator, M, N, K, __half>& f,         \
                                              const __half* p, unsigned ldm, layout_t layout) {   \
    if (layout == mem_row_major)                                                                  \
      P##_ld_c_f16((int*)f.x, (const int*)p, ldm, 0);                                             \
    else                                                                                          \
      P##_ld_c_f16((int*)f.x, (const int*)p, ldm, 1);                                             \
  }                                                                                               \
  __device__ __inline__ void load_matrix_sync(fragment<accumulator, M, N, K, float>& f,          \
                                              const float* p, unsigned ldm, layout_t layout) {    \
    if (layout == mem_row_major)                                                                  \
      P##_ld_c_f32(f.x, p, ldm, 0);                                                               \
    else                                                                                          \
      P##_ld_c_f32(f.x, p, ldm, 1);                                                               \
  }                                                                                               \
  __device__ __inline__ void store_matrix_sync(__half* p, const fragment<accumulator, M, N, K, __half>& f, \
                                               unsigned ldm, layout_t layout) {                   \
    if (layout == mem_row_major)                                                                  \
      P##_st_c_f16((int*)p, (const int*)f.x, ldm, 0);                                             \
    else                                                                                          \
      P##_st_c_f16((int*)p, (const int*)f.x, ldm, 1);                                             \
  }                                                                                               \
  __device__ __inline__ void store_matrix_sync(float* p, const fragment<accumulator, M, N, K, float>& f, \
                                               unsigned ldm, layout_t layout) {                   \
    if (layout == mem_row_major)                                                                  \
      P##_st_c_f32(p, f.x, ldm, 0);                                                               \
    else                                                                                          \
      P##_st_c_f32(p, f.x, ldm, 1);                                                               \
  }                                                                                               \
  __QGPU_WMMA_HALF_MMA(M, N, K, P, __half, __half, f16f16, int, int)                              \
  __QGPU_WMMA_HALF_MMA(M, N, K, P, float, __half, f32f16, float, int)                             \
  __QGPU_WMMA_HALF_MMA(M, N, K, P, float, float, f32f32, float, float)                            \
  __QGPU_WMMA_HALF_MMA(M, N, K, P, __half, float, f16f32, int, float)
// D and C are each half or float (the builtin's name: D's type, then C's).
#define __QGPU_WMMA_HALF_MMA(M, N, K, P, TD, TC, Types, RD, RC)                                   \
  template <typename LA, typename LB>                                                             \
  __device__ __inline__ void mma_sync(fragment<accumulator, M, N, K, TD>& d,                     \
                                      const fragment<matrix_a, M, N, K, __half, LA>& a,           \
                                      const fragment<matrix_b, M, N, K, __half, LB>& b,           \
                                      const fragment<accumulator, M, N, K, TC>& c) {              \
    P##_mma_##Types((RD*)d.x, (const int*)a.x, (const int*)b.x, (const RC*)c.x,                   \
                    2 * __qgpu::layout_id<LA>::value + __qgpu::layout_id<LB>::value, 0);          \
  }

// The 8-bit forms of one shape (T the input type, S8 its builtins' suffix).
#define __QGPU_WMMA_INT8(M, N, K, P, T, S8)                                                       \
  template <typename L>                                                                           \
  __device__ __inline__ void load_matrix_sync(fragment<matrix_a, M, N, K, T, L>& f, const T* p,  \
                                              unsigned ldm) {                                     \
    P##_ld_a_##S8((int*)f.x, (const int*)p, ldm, __qgpu::layout_id<L>::value);                    \
  }                                                                                               \
  template <typename L>                                                                           \
  __device__ __inline__ void load_matrix_sync(fragment<matrix_b, M, N, K, T, L>& f, const T* p,  \
                                              unsigned ldm) {                                     \
    P##_ld_b_##S8((int*)f.x, (const int*)p, ldm, __qgpu::layout_id<L>::value);                    \
  }                                                                                               \
  /* satf: .satfinite, the sum clamped to the int range instead of wrapping */                    \
  template <typename LA, typename LB>                                                             \
  __device__ __inline__ void mma_sync(fragment<accumulator, M, N, K, int>& d,                    \
                                      const fragment<matrix_a, M, N, K, T, LA>& a,                \
                                      const fragment<matrix_b, M, N, K, T, LB>& b,                \
                                      const fragment<accumulator, M, N, K, int>& c,               \
                                      bool satf = false) {                                        \
    constexpr int layout = 2 * __qgpu::layout_id<LA>::value + __qgpu::layout_id<LB>::value;       \
    if (satf)                                                                                     \
      P##_mma_##S8(d.x, (const int*)a.x, (const int*)b.x, c.x, layout, 1);                        \
    else                                                                                          \
      P##_mma_##S8(d.x, (const int*)a.x, (const int*)b.x, c.x, layout, 0);                        \
  }
#define __QGPU_WMMA_INT(M, N, K, P)                                                               \
  __device__ __inline__ void load_matrix_sync(fragment<accumulator, M, N, K, int>& f,            \
                                              const int* p, unsigned ldm, layout_t layout) {      \
    if (layout == mem_row_major)                                                                  \
      P##_ld_c(f.x, p, ldm, 0);                                                                   \
    else                                                                                          \
      P##_ld_c(f.x, p, ldm, 1);                                                                   \
  }                                                                                               \
  __device__ __inline__ void store_matrix_sync(int* p, const fragment<accumulator, M, N, K, int>& f, \
                                               unsigned ldm, layout_t layout) {                   \
    if (layout == mem_row_major)                                                                  \
      P##_st_c_i32(p, f.x, ldm, 0);                                                               \
    else                                                                                          \
      P##_st_c_i32(p, f.x, ldm, 1);                                                               \
  }                                                                                               \
  __QGPU_WMMA_INT8(M, N, K, P, signed char, s8)                                                   \
  __QGPU_WMMA_INT8(M, N, K, P, unsigned char, u8)

__QGPU_WMMA_HALF(16, 16, 16, __hmma_m16n16k16)
__QGPU_WMMA_HALF(32, 8, 16, __hmma_m32n8k16)
__QGPU_WMMA_HALF(8, 32, 16, __hmma_m8n32k16)
__QGPU_WMMA_INT(16, 16, 16, __imma_m16n16k16)
__QGPU_WMMA_INT(32, 8, 16, __imma_m32n8k16)
__QGPU_WMMA_INT(8, 32, 16, __imma_m8n32k16)
#undef __QGPU_WMMA_HALF
#undef __QGPU_WMMA_HALF_MMA
#undef __QGPU_WMMA_INT8
#undef __QGPU_WMMA_INT

}  // namespace wmma
}  // namespace nvcuda
