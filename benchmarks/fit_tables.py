"""Fit the per-interval coefficient tables of tcp_rules/codegen/mathtable.py and atan's polynomial
in mathlib.py. Usage:

    .venv/bin/python benchmarks/fit_tables.py erf     # prints ERF_TABLE as committed, a minute
    .venv/bin/python benchmarks/fit_tables.py tanh    # TANH_TABLE (acc of degree 5)
    .venv/bin/python benchmarks/fit_tables.py erf --degree 5
    .venv/bin/python benchmarks/fit_tables.py atan    # mathlib's _ATAN_P (one polynomial)
    .venv/bin/python benchmarks/fit_tables.py tanh-near0  # mathtanh's NEAR0_P and EXP2_P
    .venv/bin/python benchmarks/fit_tables.py tanh-exp
    .venv/bin/python benchmarks/fit_tables.py exp     # mathlib's _EXP_Q

The kernels evaluate, for x in interval n and its local variable u (mathtable defines both),

    r = fma(u, acc(u), C[n]),   acc(u) = a_d u**d + ... + a_0   (Horner, FMAs)

C[n] is the function at the interval's left end rounded to f32; interval 0 starts at 0 and takes
x = u * step in C's place, so that r = x + u * acc(u) keeps relative accuracy down to denormals. The
a_k are fitted by linear programming for the least maximum error in f32 ulps of the true value
on a dense grid, then rounded to f32 one at a time (a_0 first), refitting the rest after each.
The printout also gives each interval's error of the f32 evaluation on dense samples; the
exhaustive check is benchmarks/ulp_sweep.py on the compiled kernels.
"""

from __future__ import annotations

import argparse
import textwrap
from collections.abc import Callable

import numpy as np
import scipy.optimize
import scipy.special

from tcp_rules.codegen import mathtable, mathtanh

Fn = Callable[[np.ndarray], np.ndarray]


def ulp(v: np.ndarray) -> np.ndarray:
    """The f32 spacing at each value of ``v`` (denormal spacing below the normal range)."""
    t = np.abs(v).astype(np.float32)
    return np.where(t < np.finfo(np.float32).tiny, 2.0 ** -149, np.spacing(t).astype(np.float64))


def fma32(a: np.ndarray, b: np.ndarray, c: np.ndarray | np.float32) -> np.ndarray:
    """f32 fused multiply-add (an f32 product is exact in f64; the sum rounds twice, which
    differs from one rounding only on exact f64 ties, rare enough for fitting)."""
    return (a.astype(np.float64) * b + c).astype(np.float32)


def minimax(u: np.ndarray, resid: np.ndarray, w: np.ndarray, degree: int,
            fixed: dict[int, float]) -> list[float]:
    """a_0..a_degree minimizing max |w * (sum a_k u**k - resid)|, with ``fixed`` a_k held."""
    free = [k for k in range(degree + 1) if k not in fixed]
    basis = np.stack([u**k for k in free], 1) * w[:, None]
    r = (resid - sum(v * u**k for k, v in fixed.items())) * w
    ones = np.ones((len(u), 1))
    a_ub = np.vstack([np.hstack([basis, -ones]), np.hstack([-basis, -ones])])
    cost = np.r_[np.zeros(len(free)), 1.0]
    res = scipy.optimize.linprog(cost, A_ub=a_ub, b_ub=np.r_[r, -r],
                                 bounds=[(None, None)] * (len(free) + 1), method="highs")
    if res.status != 0:
        raise SystemExit(f"fit failed: {res.message}")
    coeffs = dict(fixed)
    coeffs.update(zip(free, res.x[: len(free)], strict=True))
    return [coeffs[k] for k in range(degree + 1)]


def minimax_f32(u: np.ndarray, resid: np.ndarray, w: np.ndarray, degree: int) -> list[float]:
    """minimax's a_0..a_degree rounded to f32 one at a time (a_0 first), refitting the rest."""
    fixed: dict[int, float] = {}
    for k in range(degree + 1):
        fixed[k] = float(np.float32(minimax(u, resid, w, degree, fixed)[k]))
    return [fixed[k] for k in range(degree + 1)]


def horner32(coeffs: list[float], u: np.ndarray) -> np.ndarray:
    """sum a_k u**k (coeffs a_0 first) in f32 FMAs, highest degree first, as the kernels do."""
    a = np.full_like(u, np.float32(coeffs[-1]))
    for k in coeffs[-2::-1]:
        a = fma32(a, u, np.float32(k))
    return a


def fit_interval(f: Fn, x0: float, step: float, u_hi: float, m: float, c: float,
                 degree: int) -> list[float]:
    """acc's coefficients (a_0 first, rounded to f32) for x = x0 + u * step, u in [0, u_hi]."""
    u = (0.5 - 0.5 * np.cos(np.linspace(0.0, np.pi, 3000)))[1:] * u_hi
    y = f(x0 + u * step)
    return minimax_f32(u, (y - (u * m + c)) / u, u / ulp(y), degree)


def evaluate(u: np.ndarray, m: float, c: float, acc: list[float]) -> np.ndarray:
    """The kernel's f32 arithmetic for one interval."""
    return fma32(u, horner32(acc, u), fma32(u, np.full_like(u, np.float32(m)), np.float32(c)))


def fit_table(f: Fn, starts: list[float], step: float, ends: list[float],
              degree: int) -> tuple[list[list[float]], float]:
    """Rows (C, a_degree .. a_0) for intervals [starts[n], ends[n]] with x = starts[n] + u *
    step; also the worst error of the f32 evaluation on dense samples."""
    columns, worst = [], 0.0
    for n, (x0, x1) in enumerate(zip(starts, ends, strict=True)):
        m = step if x0 == 0 else 0.0
        c = float(np.float32(f(np.float64(x0))))
        acc = fit_interval(f, x0, step, (x1 - x0) / step, m, c, degree)
        x = np.linspace(x0, x1, 200001).astype(np.float32)
        x = x[(x >= x0) & (x <= x1)]
        if x0 == 0:
            x = np.r_[x, np.logspace(-45, np.log10(x1), 20000).astype(np.float32)]
        u = ((x - np.float32(x0)) * np.float32(1 / step)).astype(np.float32)
        truth = f(x.astype(np.float64))
        err = np.abs(evaluate(u, m, c, acc) - truth) / ulp(truth)
        worst = max(worst, float(err.max()))
        print(f"# interval {n:2d} [{x0:g}, {x1:g}]: {err.max():.3f} ulp (dense samples)")
        columns.append([c, *acc[::-1]])
    return [list(row) for row in zip(*columns, strict=True)], worst


def fit_erf(degree: int) -> tuple[list[list[float]], float]:
    """erf on mathtable's intervals: n = floor(4|x|), u = 4|x| - n."""
    starts = [n / 4 for n in range(16)]
    return fit_table(scipy.special.erf, starts, 0.25, [*starts[1:], mathtable.ERF_TOP], degree)


def fit_tanh(degree: int) -> tuple[list[list[float]], float]:
    """tanh on mathtable's intervals, u = |x| - start (exact). The last interval starts at the
    clamp, where tanh is 1: a constant, so that tanh(inf) is exactly 1."""
    starts = list(mathtable.TANH_STARTS)
    rows, worst = fit_table(np.tanh, starts[:-1], 1.0, [*starts[1:]], degree)
    return [[*row, 1.0 if k == 0 else 0.0] for k, row in enumerate(rows)], worst


def fit_odd(f: Fn, hi: float, degree: int) -> tuple[list[float], float]:
    """f(t) = t + t * z * P(z), z = t**2, on [0, hi] for an odd f with f'(0) = 1; P's coefficients
    from the highest degree down, and the error of the f32 evaluation on dense samples."""
    t = (0.5 - 0.5 * np.cos(np.linspace(0, np.pi, 8001))) * hi
    t = t[t > 1e-4]  # below, f(t) rounds to t whatever P is
    y = f(t)
    p = minimax_f32(t * t, (y - t) / t**3, t**3 / ulp(y), degree)
    s = np.linspace(0, hi, 1 << 21, dtype=np.float32)
    r = fma32((horner32(p, (s * s).astype(np.float32)) * (s * s)).astype(np.float32), s, s)
    truth = f(s.astype(np.float64))
    return p[::-1], float(np.max(np.abs(r - truth) / ulp(truth)))


def fit_exp(degree: int) -> tuple[list[float], float]:
    """exp(r) = 1 + r (1 + r Q(r)) on |r| <= ln2/2 (mathlib.exp's reduced argument, with the
    reduction's slack); Q's coefficients from the highest degree down, and the error of the f32
    evaluation on dense samples."""
    h = 0.34658
    r = np.linspace(-h, h, 100001)
    r = r[np.abs(r) > 1e-5]  # below, 1 + r (1 + r Q) rounds the same whatever Q is
    y = np.exp(r)
    q = minimax_f32(r, (np.expm1(r) - r) / r**2, r**2 / ulp(y), degree)
    s = np.linspace(-h, h, 1 << 21, dtype=np.float32)
    one = np.float32(1.0)
    p = fma32(fma32(horner32(q, s), s, one), s, one)
    truth = np.exp(s.astype(np.float64))
    return q[::-1], float(np.max(np.abs(p - truth) / ulp(truth)))


def fit_atan(degree: int) -> tuple[list[float], float]:
    """atan on [0, 1] (mathlib.atan)."""
    return fit_odd(np.arctan, 1.0, degree)


def fit_tanh_near0(degree: int) -> tuple[list[float], float]:
    """tanh below mathtanh.SPLIT (mathtanh.NEAR0_P)."""
    return fit_odd(np.tanh, mathtanh.SPLIT, degree)


def fit_tanh_exp(degree: int) -> tuple[list[float], float]:
    """exp(2r) = 1 + 2r + r**2 Q(r) on |r| <= ln2/4 (1% wider: r's reduction rounds), Q of
    ``degree`` fitted for relative error (mathtanh.EXP2_P, highest degree first); also the
    relative error of the f32 evaluation in units of 2**-24."""
    h = np.log(2) / 4
    r = np.linspace(-1.01 * h, 1.01 * h, 20001)
    r = r[np.abs(r) > 1e-6]
    y = np.exp(2 * r)
    coeffs = [*minimax_f32(r, (y - 1 - 2 * r) / r**2, r**2 / ulp(y), degree)[::-1], 2.0, 1.0]
    s = np.linspace(-h, h, 1 << 20).astype(np.float32)
    truth = np.exp(2 * s.astype(np.float64))
    err = np.abs(horner32(coeffs[::-1], s) - truth) / truth
    return coeffs, float(err.max() * 2**24)


ONE = {"atan": ("_ATAN_P", "ulp on [0, 1]", fit_atan),
       "exp": ("_EXP_Q", "ulp on |r| <= ln2/2", fit_exp),
       "tanh-near0": ("NEAR0_P", "ulp below the split", fit_tanh_near0),
       "tanh-exp": ("EXP2_P", "* 2**-24 relative", fit_tanh_exp)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("function", choices=["erf", "tanh", *ONE])
    ap.add_argument("--degree", type=int, help="degree of acc, P or Q (default: erf 4, tanh 5, "
                    "atan 7, exp 4, tanh-near0 5, tanh-exp 4, as used)")
    args = ap.parse_args()
    degree = args.degree if args.degree is not None else {
        "erf": 4, "tanh": 5, "atan": 7, "exp": 4, "tanh-near0": 5, "tanh-exp": 4}[args.function]
    if args.function in ONE:
        name, unit, fit = ONE[args.function]
        p, worst = fit(degree)
        print(f"# worst {worst:.3f} {unit} (dense samples)")
        text = f"{name} = (" + ", ".join(repr(float(np.float32(v))) for v in p) + ")"
        print(textwrap.fill(text, 100, subsequent_indent=" " * (len(name) + 4)))
        return
    rows, worst = (fit_erf if args.function == "erf" else fit_tanh)(degree)
    print(f"# worst {worst:.3f} ulp; rows: C, a_{degree} .. a_0")
    print(f"{args.function.upper()}_TABLE = (")
    for row in rows:
        text = "(" + ", ".join(repr(float(np.float32(v))) for v in row) + "),"
        print(textwrap.fill(text, 100, initial_indent="    ", subsequent_indent="     "))
    print(")")


if __name__ == "__main__":
    main()
