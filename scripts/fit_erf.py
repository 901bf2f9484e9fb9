"""Fits the two polynomials of kiln's float32 erf (src/kiln/kernels/cpu/vec_math.h) and prints them.

    .venv/bin/python scripts/fit_erf.py

erf(x) for |x| < 1 is x + x * K(x^2), K of degree 6 (fitted to erf(x) / x - 1); for 1 <= |x| < x1 it
is T(|x| - c), T of degree 14 (fitted to erf itself), and +-1 from x1 on, x1 being the first float
whose erf rounds to 1 (printed). The center c is the float within 20,000 floats of 2.5 whose erf(c)
is nearest a float, so T's constant term is exact to 1e-12. Each fit is Lawson's iteration of
weighted least squares on 6,000 Chebyshev nodes (it converges to the minimax absolute error), and its
coefficients are rounded to float32 one at a time, lowest order first, with the higher ones refitted
after each rounding; the errors printed are the fits' on those nodes, in exact arithmetic, before
the last coefficient is rounded (float32 evaluation adds more: vec_math_test measures the result).
"""
import math

import numpy as np

SPLIT = 1.0
INNER_DEGREE, OUTER_DEGREE = 6, 14


def lawson(f, lo, hi, degree, center, fixed, nodes=6000, iterations=80):
    """Coefficients (lowest first) of the minimax polynomial in x - center with `fixed` leading ones."""
    x = np.cos(np.linspace(0, np.pi, nodes)) * (hi - lo) / 2 + (hi + lo) / 2
    y = np.array([f(v) for v in x])
    basis = np.vander(x - center, degree + 1, increasing=True)
    k = len(fixed)
    rest = y - (basis[:, :k] @ np.array(fixed) if k else 0.0)
    weights = np.full(nodes, 1.0 / nodes)
    for _ in range(iterations):
        root = np.sqrt(weights)
        free, *_ = np.linalg.lstsq(basis[:, k:] * root[:, None], rest * root, rcond=None)
        error = np.abs(basis[:, k:] @ free - rest)
        weights = weights * error
        weights /= weights.sum()
    return list(fixed) + list(free), error.max()


def fit_float32(f, lo, hi, degree, center):
    fixed = []
    for k in range(degree + 1):
        coefficients, error = lawson(f, lo, hi, degree, center, fixed)
        fixed.append(float(np.float32(coefficients[k])))
    return fixed, error


def exact_center(near=2.5, span=20000):
    """The float within `span` floats of `near` whose erf lies nearest a float."""
    bits = np.float32(near).view(np.int32)
    candidates = (np.arange(bits - span, bits + span, dtype=np.int32)).view(np.float32)
    values = np.array([math.erf(float(c)) for c in candidates])
    return float(candidates[np.argmin(np.abs(values - values.astype(np.float32)))])


def first_float_rounding_to_one(lo=3.9, hi=3.93):
    bits = np.arange(np.float32(lo).view(np.int32), np.float32(hi).view(np.int32), dtype=np.int32)
    for x in bits.view(np.float32):
        if np.float32(math.erf(float(x))) == 1.0:
            return float(x)
    raise ValueError("erf does not round to 1 in the range")


def inner(z):
    if z == 0:
        return 2 / math.sqrt(math.pi) - 1
    x = math.sqrt(z)
    return math.erf(x) / x - 1


def main():
    center, top = exact_center(), first_float_rounding_to_one()
    k, k_error = fit_float32(inner, 0.0, SPLIT * SPLIT, INNER_DEGREE, 0.0)
    t, t_error = fit_float32(math.erf, SPLIT, top, OUTER_DEGREE, center)
    listing = lambda c: ", ".join(f"{np.float32(v):.9e}f" for v in reversed(c))
    print(f"// fit errors: K {k_error:.2e}, T {t_error:.2e} (absolute, before float32 evaluation)")
    print(f"x1 = {float.hex(top)}f  // {top!r}, the first float whose erf rounds to 1")
    print(f"center = {np.float32(center):.9e}f  // erf(center) - T(0) = {math.erf(center) - t[0]:.1e}")
    print(f"K (highest first) = {{{listing(k)}}}")
    print(f"T (highest first) = {{{listing(t)}}}")


if __name__ == "__main__":
    main()
