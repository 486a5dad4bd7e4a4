#!/usr/bin/env python3
"""Coefficients of the polynomials of the .approx functions in
model_host/lower/softfloat.cpp and model_host/ptx/float_ref.cpp (docs/isa.md
section 11.1): each function interpolated at the Chebyshev nodes of its
interval, in exact rational arithmetic on 60-digit function values, then
rounded to the nearest f32 (the sequences evaluate them by f32 fused
multiply-adds), and the constants of sin and cos's reduction.

  tools/softfloat/coefficients.py        # prints the C++ arrays
"""
from decimal import Decimal, getcontext
import struct
from fractions import Fraction
import math

getcontext().prec = 60
D = Decimal


def ln(x):  # ln(x) = 2 atanh((x - 1) / (x + 1))
    x = D(x)
    t = (x - 1) / (x + 1)
    t2, term, s, k = t * t, t, D(0), 1
    while True:
        add = term / k
        if abs(add) < D(10) ** -58:
            break
        s += add
        term *= t2
        k += 2
    return 2 * s


LN2 = ln(2)
PI = D("3.14159265358979323846264338327950288419716939937510582097494")


def sin_series(x):
    x = D(x)
    term, s, k = x, D(0), 1
    while abs(term) > D(10) ** -58:
        s += term
        term = -term * x * x / ((k + 1) * (k + 2))
        k += 2
    return s


def cos_series(x):
    x = D(x)
    term, s, k = D(1), D(0), 0
    while abs(term) > D(10) ** -58:
        s += term
        term = -term * x * x / ((k + 1) * (k + 2))
        k += 2
    return s


def interpolate(f, lo, hi, n):
    """Monomial coefficients (Fractions) of the degree n-1 polynomial through f
    at the n Chebyshev nodes of [lo, hi]."""
    xs = [Fraction((lo + hi) / 2 + (hi - lo) / 2 * math.cos((2 * k + 1) * math.pi / (2 * n))) for k in range(n)]
    ys = [Fraction(f(D(x.numerator) / D(x.denominator))) for x in xs]
    # Newton divided differences, then expansion to monomials.
    coef = ys[:]
    for j in range(1, n):
        for i in range(n - 1, j - 1, -1):
            coef[i] = (coef[i] - coef[i - 1]) / (xs[i] - xs[i - j])
    poly = [Fraction(0)] * n
    for i in range(n - 1, -1, -1):
        # poly = poly * (x - xs[i]) + coef[i]
        new = [Fraction(0)] * n
        for k in range(n - 1):
            new[k + 1] += poly[k]
            new[k] -= poly[k] * xs[i]
        new[0] += coef[i]
        poly = new
    return poly


# lg2: q(u) = log2(1 + u) / u on [sqrt(1/2) - 1, sqrt(2) - 1] (f32, below).
def q_lg2(u):
    return ln(1 + u) / LN2 / u if u != 0 else 1 / LN2


# ex2 in f32 operations: 2^f = 1 + f q(f) for f in [-1/2, 1/2], q of degree 5
# interpolating (2^f - 1) / f at the 6 Chebyshev nodes, each coefficient
# rounded to the nearest f32 (through the nearest double).
def f32_bits(c):
    return struct.unpack("<I", struct.pack("<f", float(c)))[0]


def q_ex2(f):
    if f == 0:
        return LN2
    # 2^f - 1 = expm1(f ln 2), by its series (f ln 2 is small).
    x, term, s, k = f * LN2, f * LN2, D(0), 1
    while abs(term) > D(10) ** -58:
        s += term
        k += 1
        term = term * x / k
    return s / f


print("constexpr uint32_t kEx2F32[6] = {" +
      ", ".join(f"0x{f32_bits(c):08X}u" for c in interpolate(q_ex2, -0.5, 0.5, 6)) + "};")


# lg2 in f32 operations: log2(1 + u) = u q(u) for u = m - 1, m in [sqrt(1/2), sqrt(2)),
# q of degree 9 interpolating log2(1 + u) / u at the 10 Chebyshev nodes; its
# constant term is also given as the f32 nearest 1 / ln 2 less that f32's value.
print("constexpr uint32_t kLg2F32[10] = {" +
      ", ".join(f"0x{f32_bits(c):08X}u" for c in interpolate(q_lg2, 2 ** -0.5 - 1, 2 ** 0.5 - 1, 10)) + "};")
_c0 = 1 / LN2
_hi = struct.unpack("<f", struct.pack("<f", float(_c0)))[0]
print(f"constexpr uint32_t kLg2C0Lo = 0x{f32_bits(_c0 - D(_hi)):08X}u;")


# sin and cos in f32 operations: r = x - k pi/2 in [-pi/4, pi/4], z = r^2,
# sin r = r + r z S(z) and cos r = 1 + z C(z) with S and C of degree 3
# interpolating (sin r / r - 1) / z and (cos r - 1) / z at the 4 Chebyshev
# nodes of [0, (pi/4)^2].
def s_sin(z):
    if z == 0:
        return D(-1) / 6
    r = z.sqrt()
    return (sin_series(r) / r - 1) / z


def c_cos(z):
    if z == 0:
        return D(-1) / 2
    return (cos_series(z.sqrt()) - 1) / z


_z_hi = float((PI / 4) ** 2)
print("constexpr uint32_t kSinF32[4] = {" +
      ", ".join(f"0x{f32_bits(c):08X}u" for c in interpolate(s_sin, 0, _z_hi, 4)) + "};")
print("constexpr uint32_t kCosF32[4] = {" +
      ", ".join(f"0x{f32_bits(c):08X}u" for c in interpolate(c_cos, 0, _z_hi, 4)) + "};")
# pi/2 as three f32 parts, each the f32 nearest what the earlier ones leave
# (x - k P1 is exact for the reduction's x and k, and the sum is within 2^-76 of
# pi/2), and the f32 nearest 2/pi.
_parts, _left = [], PI / 2
for _ in range(3):
    _p = D(struct.unpack("<f", struct.pack("<f", float(_left)))[0])
    _parts.append(_p)
    _left -= _p
print("constexpr uint32_t kPiOver2[3] = {" + ", ".join(f"0x{f32_bits(p):08X}u" for p in _parts) + "};")
print(f"constexpr uint32_t kTwoOverPiF32 = 0x{f32_bits(2 / PI):08X}u;")
