"""Fits the polynomial of kiln's float32 tanh near 0 (src/kiln/kernels/cpu/vec_math.h) and prints it.

    .venv/bin/python scripts/fit_tanh.py

Below |x| = 0.9, tanh(a) = a + a^3 P(a^2) with P of degree 6, a weighted least-squares fit of
(tanh(a) - a) / a^3 as a polynomial in z = a^2 on 4,000 Chebyshev nodes of (0, 0.81], each node's
error weighted by a^3 / tanh(a) (the error it makes in tanh, relative). Prints the coefficients
rounded to float32, highest degree first (the order vec::horner takes), and the error of the
polynomial evaluated as vec_math.h does in float32 (fused multiply-adds) at 200,001 points of
[0.001, 0.9], in ulps of float32. Above 0.9, 1 - 2 / (exp(2a) + 1) needs no fit; vec_math_test
measures the whole function against libm's double tanh.
"""
import numpy as np

SPLIT, DEGREE, NODES = 0.9, 6, 4000


def fit():
    k = np.arange(NODES)
    z = SPLIT**2 * (0.5 - 0.5 * np.cos(np.pi * (k + 0.5) / NODES))
    a = np.sqrt(z)
    target = (np.tanh(a) - a) / a**3
    weight = a**3 / np.tanh(a)
    basis = np.vander(z, DEGREE + 1)  # highest degree first
    coefficients, *_ = np.linalg.lstsq(basis * weight[:, None], target * weight, rcond=None)
    return coefficients.astype(np.float32)


def float32_error(c):
    a = np.linspace(1e-3, SPLIT, 200001).astype(np.float32)
    z = (a * a).astype(np.float32)
    p = np.full_like(z, c[0])
    for ci in c[1:]:  # Horner's rule, each step one fused multiply-add rounded to float32
        p = (p.astype(np.float64) * z + ci).astype(np.float32)
    a3 = (a * z).astype(np.float32)
    got = (a3.astype(np.float64) * p + a).astype(np.float32)
    want = np.tanh(a.astype(np.float64))
    ulps = np.abs(got.astype(np.float64) - want) / np.spacing(want.astype(np.float32)).astype(np.float64)
    return ulps.max(), ulps.mean()


if __name__ == "__main__":
    c = fit()
    worst, mean = float32_error(c)
    print("P (highest degree first):", ", ".join("%.9e" % v for v in c))
    print("float32 evaluation below %.1f: worst %.3f ulp, mean %.3f ulp" % (SPLIT, worst, mean))
