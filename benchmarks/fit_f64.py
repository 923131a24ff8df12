"""Fit the f64 erf coefficients of tcp_rules/codegen/mathf64.py with mpmath. Usage:

    .venv/bin/python benchmarks/fit_f64.py          # prints ERF_NEAR0 and ERFC_PIECES as committed

erf(x) for |x| < ERF_SPLIT is x + x P(x**2): P fits erf(x)/x - 1 as a polynomial in z = x**2.
Beyond, erf(x) = 1 - exp(-x**2) g(x) with g = erfc(x) exp(x**2) (the scaled complementary error
function, smooth and slowly varying), a polynomial in u = x - (the piece's middle) on each piece.
Both are Chebyshev fits at 120 bits (mpmath.chebyfit: near minimax), rounded to f64; the
printout gives each fit's relative error before rounding. erf rounds to 1 from 5.921 on, so the
last piece ends at 6.
"""

from __future__ import annotations

import mpmath as mp

SPLIT = 0.84375
PIECES = [(SPLIT, 1.5), (1.5, 2.5), (2.5, 3.75), (3.75, 6.0)]
DEGREE_NEAR0, DEGREE = 11, 14


def near0() -> tuple[list[float], float]:
    """P with erf(x) = x + x P(x**2) on |x| < SPLIT, and its relative error."""
    def f(z: mp.mpf) -> mp.mpf:
        return mp.erf(mp.sqrt(z)) / mp.sqrt(z) - 1 if z > 0 else 2 / mp.sqrt(mp.pi) - 1
    coeffs, err = mp.chebyfit(f, [0, mp.mpf(SPLIT) ** 2], DEGREE_NEAR0 + 1, error=True)
    return [float(c) for c in coeffs], float(err / f(mp.mpf(SPLIT) ** 2))


def piece(lo: float, hi: float) -> tuple[float, list[float], float]:
    """(middle, g's polynomial in x - middle, relative error) on [lo, hi]."""
    mid = (lo + hi) / 2

    def g(u: mp.mpf) -> mp.mpf:
        x = u + mid
        return mp.erfc(x) * mp.exp(x * x)
    coeffs, err = mp.chebyfit(g, [lo - mid, hi - mid], DEGREE + 1, error=True)
    return mid, [float(c) for c in coeffs], float(err / g(mp.mpf(hi - mid)))


def main() -> None:
    mp.mp.prec = 120
    p, err = near0()
    print(f"# erf(x) = x + x P(x**2) below {SPLIT}; relative error {err:.2e}")
    print(f"ERF_NEAR0 = {tuple(p)!r}")
    print("# (middle, g's coefficients from the highest degree down) per piece")
    print("ERFC_PIECES = (")
    for lo, hi in PIECES:
        mid, g, err = piece(lo, hi)
        print(f"    # [{lo}, {hi}): relative error {err:.2e}")
        print(f"    ({mid!r}, {tuple(g)!r}),")
    print(")")


if __name__ == "__main__":
    main()
