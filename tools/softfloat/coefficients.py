#!/usr/bin/env python3
"""Coefficients of the fixed-point polynomials of model_host/lower/softfloat.cpp
(docs/isa.md section 11.1): each function interpolated at the Chebyshev nodes
of its interval, in exact rational arithmetic on 60-digit function values,
then rounded to the fixed-point format the sequence reads.

  tools/softfloat/coefficients.py        # prints the C++ arrays

The f32 polynomials of ex2 and lg2 (kEx2F32, kLg2F32) are evaluated by f32
fused multiply-adds; their coefficients are the interpolants' rounded to f32.
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


def fixed(cs, bits):
    return [int(round(c * (1 << bits))) for c in cs]


def show(name, vals):
    print(f"constexpr int32_t {name}[{len(vals)}] = {{{', '.join(str(v) for v in vals)}}};")


# lg2: q(u) = log2(1 + u) / u on [sqrt(1/2) - 1, sqrt(2) - 1] (f32, below).
def q_lg2(u):
    return ln(1 + u) / LN2 / u if u != 0 else 1 / LN2


# sin(pi/2 r) = r S(z), cos(pi/2 r) = C(z), z = r^2, r in [-1/2, 1/2]: z in [0, 1/4], Q2.30.
def s_sin(z):
    r = z.sqrt()
    return sin_series(PI / 2 * r) / r if z != 0 else PI / 2


def c_cos(z):
    return cos_series(PI / 2 * z.sqrt())


show("kSinPoly", fixed(interpolate(s_sin, 0, 0.25, 5), 30))
show("kCosPoly", fixed(interpolate(c_cos, 0, 0.25, 6), 30))

# 2/pi, 192 bits (six words, most significant first).
two_over_pi = Fraction(2) / Fraction(PI) if False else None
x = (D(2) / PI)
words = []
for _ in range(6):
    x *= 2 ** 32
    w = int(x)
    words.append(w)
    x -= w
print("constexpr uint32_t kTwoOverPi[6] = {" + ", ".join(f"0x{w:08X}u" for w in words) + "};")


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
