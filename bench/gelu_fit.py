#!/usr/bin/env python3
"""gelu_fit.py — the coefficients of kernels/vec_ops.h's GELU (mb_v_erf_small,
mb_v_erfcx_big): polynomials fitted for relative error by Lawson's iterated
weighted least squares on Chebyshev nodes, against mpmath at 40 digits, then
rounded to f32. Prints each fit's error (in float64, and its f32 evaluation
emulated) and the coefficients, highest degree first, as vec_ops.h lists them.

usage: build/bench-venv/bin/python bench/gelu_fit.py   (numpy and mpmath)

  erf(z) = z c0 + z^3 Q(z^2), 0 <= z <= 1/sqrt 2 (|x| < 1), c0 = 2/sqrt(pi)
           in two f32 parts, Q of degree 4;
  erfc(z) exp(z^2) = t R(t), t = 2 / (2 + z) for 1/sqrt 2 <= z <= 10.5
           (erfc(10.5) is below f32's least subnormal), R of degree 8 in
           u = a t + b, the interval mapped onto [-1, 1]."""
import mpmath as mp
import numpy as np

mp.mp.dps = 40
Z_SMALL = 1 / np.sqrt(2)
Z_MAX = 10.5


def lawson(A, target, weight, iters=100):
    """coefficients minimising max |(A c - target) weight| (Lawson)"""
    w = np.ones(len(target))
    for _ in range(iters):
        W = np.sqrt(w) * weight
        c, *_ = np.linalg.lstsq(A * W[:, None], target * W, rcond=None)
        e = np.abs((A @ c - target) * weight)
        w = w * e
        w /= w.sum()
    return c, float(np.max(e))


def f32_horner(c32, x):
    p = np.full(x.shape, c32[-1], dtype=np.float32)
    for ci in c32[-2::-1]:
        p = (p.astype(np.float64) * x.astype(np.float64) + float(ci)).astype(np.float32)
    return p


def chebyshev(lo, hi, n=500):
    k = np.arange(n)
    return lo + (hi - lo) * (np.cos(np.pi * (k + 0.5) / n) + 1) / 2


def small():
    c0 = 2 / mp.sqrt(mp.pi)
    hi = np.float32(float(c0))
    lo = np.float32(float(c0 - mp.mpf(float(hi))))
    z = chebyshev(1e-4, Z_SMALL)
    erf = np.array([float(mp.erf(v)) for v in z])
    target = np.array([float((mp.erf(v) - v * c0) / v ** 3) for v in z])
    c, err = lawson(np.vander(z * z, 5, increasing=True), target, z ** 3 / erf)
    c32 = c.astype(np.float32)
    zd = np.linspace(1e-3, Z_SMALL, 3001).astype(np.float32)
    z2 = (zd.astype(np.float64) ** 2).astype(np.float32)
    z3 = (zd.astype(np.float64) * z2).astype(np.float32).astype(np.float64)
    t = (z3 * f32_horner(c32, z2)).astype(np.float32).astype(np.float64)
    inner = (zd.astype(np.float64) * float(lo) + t).astype(np.float32).astype(np.float64)
    got = (zd.astype(np.float64) * float(hi) + inner).astype(np.float32)
    ref = np.array([float(mp.erf(float(v))) for v in zd])
    print("erf, |x| < 1: fit %.2g, f32 evaluation %.2g (relative)" % (err, np.max(np.abs(got / ref - 1))))
    print("  c0 = %.9gf + %.9gf" % (hi, lo))
    print("  Q:", ", ".join("%.9gf" % v for v in c32[::-1]))


def big():
    t_lo, t_hi = 2 / (2 + Z_MAX), 2 / (2 + Z_SMALL)
    a, b = np.float32(2 / (t_hi - t_lo)), np.float32(-(t_hi + t_lo) / (t_hi - t_lo))

    def R(t):
        t = mp.mpf(t)
        z = 2 / t - 2
        return mp.erfc(z) * mp.exp(z * z) / t

    t = chebyshev(t_lo, t_hi)
    r = np.array([float(R(v)) for v in t])
    c, err = lawson(np.vander(a * t + b, 9, increasing=True), r, 1 / r)
    c32 = c.astype(np.float32)
    td = np.linspace(t_lo, t_hi, 4001).astype(np.float32)
    ud = (td.astype(np.float64) * float(a) + float(b)).astype(np.float32)
    ref = np.array([float(R(float(v))) for v in td])
    print("erfc exp(z^2) / t, |x| >= 1: fit %.2g, f32 evaluation %.2g (relative)"
          % (err, np.max(np.abs(f32_horner(c32, ud) / ref - 1))))
    print("  u = %.9gf t + %.9gf" % (a, b))
    print("  R:", ", ".join("%.9gf" % v for v in c32[::-1]))


if __name__ == "__main__":
    small()
    big()
