// Warp matrix operations (PTX `wmma`): the fragment layout and the
// arithmetic every part of qgpu shares (docs/isa.md section 7.1).
//
// PTX leaves the mapping of a fragment's elements to the lanes of the warp
// to the implementation.  qgpu's: a fragment holds its matrix (A is M x K,
// B is K x N, C and D are M x N) in row-major order, but B in column-major
// order, `per_lane` consecutive elements to a lane: lane l's slot i is
// element l * per_lane + i in that order (so a lane of A holds a run of one
// row, a lane of B a run of one column: the runs a dot product reads).  Slots
// are packed into the fragment's 32-bit registers in order (two f16, four
// s8/u8 or one f32/s32 to a register); registers past the lane's elements
// hold 0.  Any program that only loads, multiplies, stores and applies an
// operation to every element alike (what CUDA's fragments promise) sees
// the same results as on a GPU whose tensor cores round as below.
//
// The multiply-add: element (r, c) of D is C[r][c] + sum over k of
// A[r][k] * B[k][c], accumulated in k order.  f16 inputs: each step is one
// f32 fused multiply-add .rn (the product of two halves is exact in f32,
// so this is also an add of the exact product); a NaN result is the
// canonical one.  s8/u8 inputs: 32-bit integer sums, wrapping, or with
// .satfinite the exact sum clamped to the s32 range.  An f16 accumulator is
// converted to f32 first and the result back to f16 (.rn) last.
#pragma once

#include <cstdint>

namespace qgpu::ptx::wmma {

enum class Frag : uint8_t { A, B, C };  // C: the accumulator (C and D)
enum class In : uint8_t { F16, S8, U8 };  // the element type of A and B

struct Shape {
  uint32_t m = 0, n = 0, k = 0;
};

// The shapes wmma has for f16, s8 and u8 inputs.
bool valid_shape(const Shape& s);
inline uint32_t rows(const Shape& s, Frag f) { return f == Frag::B ? s.k : s.m; }
inline uint32_t cols(const Shape& s, Frag f) { return f == Frag::A ? s.k : s.n; }
// Elements of the fragment each lane holds (a power of two, at least 4,
// never more than one row of A, C, D or column of B).
inline uint32_t per_lane(const Shape& s, Frag f) { return rows(s, f) * cols(s, f) / 32; }
// The row and column of slot i of lane `lane`'s fragment.
inline void element(const Shape& s, Frag f, uint32_t lane, uint32_t i, uint32_t& row, uint32_t& col) {
  const uint32_t e = lane * per_lane(s, f) + i;
  if (f == Frag::B) row = e % s.k, col = e / s.k;
  else row = e / cols(s, f), col = e % cols(s, f);
}
inline uint32_t in_bytes(In t) { return t == In::F16 ? 2 : 1; }

// One element of D: c (f32 bits, or an s32) plus the dot product of a row
// of A and a column of B, each k consecutive elements of type t.
uint32_t dot(uint32_t k, In t, bool satfinite, const uint8_t* a_row, const uint8_t* b_col, uint32_t c);
// The same for f16 inputs already converted to f32 (f16_table), whose
// products are therefore exact in f32.  The host must round to nearest.
uint32_t dot_f32(uint32_t k, const float* a_row, const float* b_col, uint32_t c);
// dot_f32 for n elements at once (the same steps for each: their chains
// interleaved, not reordered): out[j] = dot_f32(k, a_rows[j], b_cols[j], c[j]).
void dot_f32_many(uint32_t k, const float* const* a_rows, const float* const* b_cols, const uint32_t* c,
                  uint32_t* out, uint32_t n);
// Every element of D at once: d[r * n + col] = dot(k, t, satfinite, row r
// of A, column col of B, c[r * n + col]) for the M x N tile, A (row-major)
// and B (column-major) side by side at `area` as in the matrix area
// (docs/isa.md section 7.1).  The same steps as dot's for each element, the
// elements' chains computed together.  The host must round to nearest.
void tile(const Shape& s, In t, bool satfinite, const uint8_t* area, const uint32_t* c, uint32_t* d);
// Every f16 as the f32 of the same value (a NaN: the canonical one),
// indexed by its bits.
const float* f16_table();

}  // namespace qgpu::ptx::wmma
