// Texture fetches and surface addresses on the host (texture_ref.h).
#include "model_host/ptx/texture_ref.h"

#include <algorithm>

#include "model_host/launch/texture.h"
#include "model_host/ptx/float_ref.h"

namespace qgpu::ptx::texref {

namespace T = qgpu::launch::tex;
using fref::add;
using fref::mul;

namespace {

constexpr uint32_t kOne = 0x3F800000u, kHalfNeg = 0xBF000000u, k256 = 0x43800000u;

uint32_t floor_f(uint32_t x) { return fref::round_int(x, Rnd::Rmi, false, false); }
int32_t to_i32(uint32_t x, Rnd r) { return int32_t(uint32_t(fref::to_int(x, true, 32, r, false))); }

// One axis: the texel index and the 8-bit fraction of coordinate `c`.
void axis(uint32_t c, uint32_t nf, uint32_t mode, bool norm, bool linear, int32_t& i, uint32_t& a) {
  uint32_t u = c;
  if (norm) {
    if (mode == T::kWrap) {
      u = fref::sub(u, floor_f(u), Rnd::Rn, false, false);
    } else if (mode == T::kMirror) {
      uint32_t fl = floor_f(u);
      uint32_t f = fref::sub(u, fl, Rnd::Rn, false, false);
      u = (to_i32(fl, Rnd::Rzi) & 1) ? fref::sub(kOne, f, Rnd::Rn, false, false) : f;
    }
    u = mul(u, nf, Rnd::Rn, false, false);
  }
  if (!linear) {  // point sampling: the texel floor(u)
    i = to_i32(u, Rnd::Rmi);
    a = 0;
    return;
  }
  // floor(256 (u - 0.5)): the texel index and the weight's 8 fraction bits.
  int32_t fx = to_i32(mul(add(u, kHalfNeg, Rnd::Rn, false, false), k256, Rnd::Rn, false, false), Rnd::Rmi);
  i = fx >> 8;
  a = uint32_t(fx) & 255;
}

// An index after the address mode, in [0, n); `out` when it lies outside
// under border addressing.
int32_t address(int32_t j, int32_t n, uint32_t mode, bool& out) {
  if (mode == T::kWrap) j = j < 0 ? j + n : j >= n ? j - n : j;
  if (mode == T::kMirror) j = j < 0 ? -1 - j : j >= n ? 2 * n - 1 - j : j;
  if (mode == T::kBorderMode && (j < 0 || j >= n)) out = true;
  return std::clamp(j, 0, n - 1);
}

// A channel value as f32: v / (2^bits - 1), correctly rounded.
uint32_t unorm(uint32_t v, unsigned bits) {
  float f = float(v) / float((1u << bits) - 1);  // both exact: IEEE division rounds once
  return T::f32_bits(f);
}

struct Fetch {
  const uint32_t* d;
  const Load& load;
  bool int_result;
  // The texel at (x, y, z), indices already in range; `border`: the border colour.
  std::array<uint32_t, 4> texel(int32_t x, int32_t y, int32_t z, bool border) const {
    const uint32_t fmt = d[T::kFormat];
    const uint32_t nch = fmt & 7, lg = (fmt >> 4) & 3, kind = (fmt >> 8) & 7, b = 1u << lg;
    std::array<uint32_t, 4> r = {0, 0, 0, int_result ? 1u : kOne};
    uint64_t at = uint64_t(d[T::kBase]) + uint64_t(uint32_t(z)) * d[T::kSlicePitch] +
                  uint64_t(uint32_t(y)) * d[T::kRowPitch] + uint64_t(uint32_t(x)) * d[T::kTexelBytes];
    for (uint32_t ch = 0; ch < nch && ch < 4; ++ch) {
      if (border) { r[ch] = d[T::kBorder + ch]; continue; }
      uint32_t raw = load(at + ch * b, b);
      uint32_t bits = 8 * b;
      int32_t sv = bits == 32 ? int32_t(raw) : int32_t(raw << (32 - bits)) >> (32 - bits);
      uint32_t v = raw;
      if (kind == T::kSigned) v = uint32_t(sv);
      if (!int_result) {
        if (kind == T::kHalf) v = fref::f32_from_f16(raw & 0xFFFF);
        if (kind == T::kUnorm) v = unorm(raw, bits);
        if (kind == T::kSnorm) {
          uint32_t m = uint32_t(sv < 0 ? -sv : sv);
          uint32_t lim = (1u << (bits - 1)) - 1;
          v = m >= lim ? kOne : unorm(m, bits - 1);
          if (sv < 0) v |= 0x80000000u;
        }
      }
      r[ch] = v;
    }
    return r;
  }
};

std::array<uint32_t, 4> lerp(const std::array<uint32_t, 4>& p, const std::array<uint32_t, 4>& q, uint32_t a,
                             uint32_t nch) {
  uint32_t w1 = fref::from_int(a, false, 32, Rnd::Rn), w0 = fref::from_int(256 - a, false, 32, Rnd::Rn);
  const uint32_t inv = 0x3B800000u;  // 2^-8
  w1 = mul(w1, inv, Rnd::Rn, false, false);
  w0 = mul(w0, inv, Rnd::Rn, false, false);
  std::array<uint32_t, 4> r = p;
  for (uint32_t ch = 0; ch < nch && ch < 4; ++ch)
    r[ch] = add(mul(p[ch], w0, Rnd::Rn, false, false), mul(q[ch], w1, Rnd::Rn, false, false), Rnd::Rn, false, false);
  return r;
}

}  // namespace

std::array<uint32_t, 4> tex(const uint32_t d[16], Geom g, bool int_coords, const uint32_t c[4], bool int_result,
                            const Load& load) {
  const uint32_t mode = d[T::kMode];
  const bool norm = (mode & T::kNormalized) != 0;
  const bool linear = (mode & T::kLinear) && !int_result && !int_coords;
  const int32_t w = int32_t(d[T::kWidth]), h = int32_t(d[T::kHeight]), dep = int32_t(d[T::kDepth]);
  uint32_t am[3] = {mode & 3, (mode >> 2) & 3, (mode >> 4) & 3};
  // The coordinates per axis and the slice (layer / face) for array forms.
  uint32_t x = 0, y = 0, z = 0;
  int dims = 1;
  int32_t slice = 0;
  bool sliced = false, cube_norm = false;
  auto layer_of = [&](uint32_t l, uint32_t per) {
    uint32_t layers = uint32_t(dep) / per;
    return int32_t(std::min<uint32_t>(l, layers ? layers - 1 : 0) * per);
  };
  switch (g) {
    case Geom::D1: x = c[0]; break;
    case Geom::D2: x = c[0]; y = c[1]; dims = 2; break;
    case Geom::D3: x = c[0]; y = c[1]; z = c[2]; dims = 3; break;
    case Geom::A1D: slice = layer_of(c[0], 1); x = c[1]; sliced = true; break;
    case Geom::A2D: slice = layer_of(c[0], 1); x = c[1]; y = c[2]; dims = 2; sliced = true; break;
    case Geom::Cube: case Geom::ACube: {
      const uint32_t* v = g == Geom::Cube ? c : c + 1;
      uint32_t ax = v[0] & 0x7FFFFFFF, ay = v[1] & 0x7FFFFFFF, az = v[2] & 0x7FFFFFFF;
      auto ge = [](uint32_t p, uint32_t q) { return fref::compare(Cmp::Ge, p, q, false); };
      auto neg = [](uint32_t p) { return p ^ 0x80000000u; };
      uint32_t face, m, s, t;
      if (ge(ax, ay) && ge(ax, az)) {
        bool pos = ge(v[0], 0);
        face = pos ? 0 : 1; m = ax; s = pos ? neg(v[2]) : v[2]; t = neg(v[1]);
      } else if (ge(ay, az)) {
        bool pos = ge(v[1], 0);
        face = pos ? 2 : 3; m = ay; s = v[0]; t = pos ? v[2] : neg(v[2]);
      } else {
        bool pos = ge(v[2], 0);
        face = pos ? 4 : 5; m = az; s = pos ? v[0] : neg(v[0]); t = neg(v[1]);
      }
      auto st = [&](uint32_t p) {
        return mul(add(fref::div(p, m, Rnd::Rn, false, false), kOne, Rnd::Rn, false, false), 0x3F000000u, Rnd::Rn,
                   false, false);
      };
      x = st(s);
      y = st(t);
      dims = 2;
      sliced = true;
      cube_norm = true;
      slice = (g == Geom::ACube ? layer_of(c[0], 6) : 0) + int32_t(face);
      am[0] = am[1] = T::kClamp;
      break;
    }
    default: break;
  }
  const uint32_t size_f[3] = {d[T::kWidthF], d[T::kHeightF], d[T::kDepthF]};
  const int32_t size[3] = {w, h, dep};
  const uint32_t coord[3] = {x, y, z};
  int32_t i[3] = {0, 0, 0};
  uint32_t a[3] = {0, 0, 0};
  for (int k = 0; k < dims; ++k) {
    if (int_coords) i[k] = int32_t(coord[k]);
    else axis(coord[k], size_f[k], am[k], norm || cube_norm, linear, i[k], a[k]);
    if (int_coords && (am[k] == T::kWrap || am[k] == T::kMirror)) am[k] = T::kClamp;
  }
  Fetch f{d, load, int_result};
  const uint32_t nch = d[T::kFormat] & 7;
  auto at = [&](int32_t dx, int32_t dy, int32_t dz) {
    bool out = false;
    int32_t xx = address(i[0] + dx, size[0], am[0], out);
    int32_t yy = dims >= 2 ? address(i[1] + dy, size[1], am[1], out) : 0;
    int32_t zz = dims >= 3 ? address(i[2] + dz, size[2], am[2], out) : sliced ? slice : 0;
    return f.texel(xx, yy, zz, out);
  };
  if (!linear) return at(0, 0, 0);
  auto row = [&](int32_t dy, int32_t dz) { return lerp(at(0, dy, dz), at(1, dy, dz), a[0], nch); };
  if (dims == 1) return row(0, 0);
  auto plane = [&](int32_t dz) { return lerp(row(0, dz), row(1, dz), a[1], nch); };
  if (dims == 2) return plane(0);
  return lerp(plane(0), plane(1), a[2], nch);
}

bool surface_address(const uint32_t d[16], Geom g, const uint32_t c[4], uint32_t bytes, int mode, uint64_t& addr) {
  int32_t x = 0, y = 0, z = 0;
  bool ok = true;
  const int32_t wb = int32_t(d[T::kWidth] * d[T::kTexelBytes]) - int32_t(bytes);
  const int32_t h = int32_t(d[T::kHeight]), dep = int32_t(d[T::kDepth]);
  switch (g) {
    case Geom::D1: x = int32_t(c[0]); break;
    case Geom::D2: x = int32_t(c[0]); y = int32_t(c[1]); break;
    case Geom::D3: x = int32_t(c[0]); y = int32_t(c[1]); z = int32_t(c[2]); break;
    case Geom::A1D: z = int32_t(c[0]); x = int32_t(c[1]); break;
    case Geom::A2D: z = int32_t(c[0]); x = int32_t(c[1]); y = int32_t(c[2]); break;
    default: return false;
  }
  ok = x >= 0 && x <= wb && y >= 0 && y < h && z >= 0 && z < dep;
  if (!ok && mode != 1) return false;
  x = std::clamp(x, 0, std::max(wb, 0));
  y = std::clamp(y, 0, h - 1);
  z = std::clamp(z, 0, dep - 1);
  addr = uint64_t(d[T::kBase]) + uint64_t(uint32_t(z)) * d[T::kSlicePitch] + uint64_t(uint32_t(y)) * d[T::kRowPitch] +
         uint64_t(uint32_t(x));
  return true;
}

}  // namespace qgpu::ptx::texref
