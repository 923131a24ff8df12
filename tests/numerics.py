"""How far a compiled result may be from the reference's, derived from the computation.

Both engines evaluate the same ops, each rounding its own way: sums in another order (pairwise in
NumPy; vector accumulators, f32 blocks added in f64 for f32 sums, compiled), fused multiply-adds
in matmul (and in NumPy's BLAS, depending on size and CPU), polynomial math functions within
``ULP_BOUNDS`` against libm's. None of that is promised bit for bit, so a comparison needs a
bound, and the bound must follow from the operations and the data, not from one machine's
observed differences.

:func:`error_bounds` runs a first-order running error analysis (Higham, *Accuracy and Stability of
Numerical Algorithms*, ch. 3-4) over the func: for every value v it bounds |v_engine - v_exact| by
E(v) for *either* engine, from the operands' bounds and magnitudes (the reference's values plus
their bounds) and the op's own error:

- one rounding (add, sub, mul, div, sqrt, casts): ``u |v| + eta`` (u the unit roundoff, eta the
  smallest subnormal for underflow), plus the operands' errors times the op's derivative;
- sums of n terms and dot products of length n, in any order, fused or not:
  ``gamma_n * sum |terms|`` with ``gamma_n = n u / (1 - n u)`` (Higham 3.5, 4.3);
- the math functions: the compiled ones' documented bound in ulps of the result
  (``mathlib.ULP_BOUNDS``, and mathf64's and binmath's for f64), NumPy's at most
  REFERENCE_ULPS (NumPy does not promise its f32 math to the last bit; its SIMD exp and log
  are documented within a few ulp), whichever is larger,
  plus the operand's error times the function's derivative bound;
- exact ops (max, min, neg, abs, data movement) only carry their operands' errors; comparisons
  and rounding to integers may flip where an operand is inexact, and selects then take either.

The two engines' results are then within ``2 E`` of each other: :func:`assert_close_to_reference`.
Where the reference is not finite (inf, NaN), the compiled result must be the same special.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from tcp_rules.codegen.binmath import ULP_BOUNDS as BINARY_ULP_BOUNDS
from tcp_rules.codegen.binmath import ULP_BOUNDS_F64 as BINARY_ULP_BOUNDS_F64
from tcp_rules.codegen.mathf64 import ULP_BOUNDS as ULP_BOUNDS_F64
from tcp_rules.codegen.mathlib import ULP_BOUNDS
from tcp_rules.interpret import _concrete_attrs, bind_symbols, evaluate
from tcp_rules.ir import Apply, Func, Param
from tcp_rules.ops import IDENTITY_OPS, MATMULS, OPS
from tcp_rules.ops.fusion import regrouped_rows
from tcp_rules.types import DType, TensorType, finfo, is_float_array

# Derivative bounds of the math functions (|f'| over the reals) for the operand's error.
_LIPSCHITZ = {"tanh": 1.0, "sigmoid": 0.25, "erf": 2 / math.sqrt(math.pi), "atan": 1.0,
              "sin": 1.0, "cos": 1.0}
REFERENCE_ULPS = 4.0
# f32 and f64 bounds alike: in ulps of either type, the larger one covers both
_F64_ULPS = ULP_BOUNDS_F64 | BINARY_ULP_BOUNDS_F64
_FN_ULPS = {f: max(b, _F64_ULPS[f], REFERENCE_ULPS)
            for f, b in (ULP_BOUNDS | BINARY_ULP_BOUNDS).items()}
_MOVEMENT = frozenset(n for n, op in OPS.items() if op.category == "movement") | IDENTITY_OPS


def unit_roundoff(dtype: np.dtype) -> float:
    """u = 2**-24 for f32, 2**-53 for f64, 2**-11 for f16, 2**-8 for bf16: the relative error
    of one correct rounding."""
    return float(finfo(dtype).eps) / 2


def gamma(n: int | np.ndarray, dtype: np.dtype) -> float | np.ndarray:
    """gamma_n = n u / (1 - n u): the relative error bound of a sum or dot product of n terms."""
    nu = np.asarray(n, dtype=np.float64) * unit_roundoff(dtype)
    return np.where(nu < 1, nu / np.maximum(1 - nu, 1e-300), np.inf)


def dot_bound(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """|fl(a @ b) - a @ b| <= gamma_K (|a| @ |b|), in any summation order, fused or not."""
    aa, bb = np.abs(a.astype(np.float64)), np.abs(b.astype(np.float64))
    return gamma(a.shape[-1], a.dtype) * (aa @ bb)


def _rnd(v: np.ndarray, dtype: np.dtype, k: float = 1.0) -> np.ndarray:
    """k roundings of a result of magnitude |v|."""
    tiny = float(finfo(dtype).smallest_subnormal)
    return k * (unit_roundoff(dtype) * np.abs(v) + tiny)


def _ulps(v: np.ndarray, dtype: np.dtype, ulps: float) -> np.ndarray:
    """``ulps`` ulps of |v|: an ulp is at most 2u |v| (normal) or eta (subnormal)."""
    return _rnd(v, dtype, 2 * ulps)


def _flips(a: np.ndarray, b: np.ndarray, ea: np.ndarray, eb: np.ndarray) -> np.ndarray:
    """Where a comparison of a and b may come out differently: they are within the errors."""
    with np.errstate(invalid="ignore"):
        return (ea + eb > 0) & ~(np.abs(a.astype(np.float64) - b) > ea + eb)


def _reduce(op: str, x: np.ndarray, ex: np.ndarray, attrs: dict[str, object],
            v: np.ndarray) -> np.ndarray:
    axes = tuple(attrs["axes"])  # type: ignore[call-overload]
    keep = bool(attrs["keepdims"])
    n = math.prod(x.shape[i] for i in axes)
    red = lambda y, f=np.sum: f(y, axis=axes, keepdims=keep).reshape(v.shape)  # noqa: E731
    if op in ("reduce_max", "reduce_min"):
        return red(ex, np.max) if n else np.zeros(v.shape)
    mag = np.abs(x.astype(np.float64)) + ex
    if op == "reduce_sum":
        return red(ex) + gamma(n, x.dtype) * red(mag)
    # reduce_prod: relative errors add up (first order), plus n - 1 roundings
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = np.where(ex == 0, 0.0, ex / np.maximum(np.abs(x) - ex, 0))
    return (np.abs(v) + 0.0) * (red(rel) + gamma(n, x.dtype)) + _rnd(v, x.dtype)


def _elementwise(op: str, args: list[np.ndarray], errs: list[np.ndarray], v: np.ndarray,
                 dt: np.dtype) -> np.ndarray:
    a = np.abs(args[0].astype(np.float64)) if args else None
    ea = errs[0] if errs else None
    if op in ("neg", "abs", "clamp", "max", "min"):
        return np.maximum(*errs) if len(errs) == 2 else errs[0]
    if op in ("add", "sub"):
        return errs[0] + errs[1] + _rnd(v, dt)
    if op == "mul":
        b = np.abs(args[1].astype(np.float64))
        return (a + ea) * errs[1] + b * ea + _rnd(v, dt)
    if op == "div":
        b = np.abs(args[1].astype(np.float64))
        with np.errstate(divide="ignore", invalid="ignore"):
            far = np.where(b > errs[1], (ea + np.abs(v) * errs[1]) / (b - errs[1]), np.inf)
        return far + _rnd(v, dt)
    if op in ("sqrt", "rsqrt"):
        lo = np.maximum(a - ea, 0)
        with np.errstate(divide="ignore", invalid="ignore"):
            if op == "sqrt":  # sqrt is also 1/2-Hoelder: |sqrt x - sqrt y| <= sqrt |x - y|
                carry = np.minimum(np.sqrt(ea), ea / (2 * np.sqrt(lo)))
                return np.where(ea == 0, 0.0, carry) + _rnd(v, dt)
            carry = np.where(ea == 0, 0.0, 0.5 * ea * lo ** -1.5)
        return carry + _rnd(v, dt, 2)  # 1 / sqrt(x): two roundings
    if op == "exp":
        return np.abs(v) * np.expm1(ea) * np.exp(ea) + _ulps(v, dt, _FN_ULPS["exp"])
    if op == "log":
        with np.errstate(divide="ignore", invalid="ignore"):
            carry = np.where(ea == 0, 0.0, np.where(a > ea, ea / (a - ea), np.inf))
        return carry + _ulps(v, dt, _FN_ULPS["log"])
    if op in _LIPSCHITZ:
        return _LIPSCHITZ[op] * ea + _ulps(v, dt, _FN_ULPS[op])
    if op in ("pow", "atan2"):  # NumPy's libm, binmath's f32 code: plus the carried errors
        x, y = a, np.abs(args[1].astype(np.float64))
        ex, ey = ea, errs[1]
        with np.errstate(all="ignore"):
            if op == "atan2":  # |d/dx| = |y| / (x^2 + y^2), |d/dy| = |x| / (x^2 + y^2)
                carry = (y * ex + x * ey) / (x * x + y * y)
            else:  # |d/dx| = |y v / x|, |d/dy| = |v log x|
                carry = y * np.abs(v) / x * ex + np.abs(v * np.log(x)) * ey
            carry = np.where((ex == 0) & (ey == 0), 0.0, np.nan_to_num(carry, nan=np.inf))
        return carry + _ulps(v, dt, _FN_ULPS[op])
    if op in ("floor", "ceil", "round", "round_even"):
        return np.where(ea > 0, ea + 1.0, 0.0)  # a jump of 1 where the operand is inexact
    raise NotImplementedError(f"no error bound for {op}")


def error_bounds(func: Func, arrays: Sequence[np.ndarray]
                 ) -> tuple[tuple[np.ndarray, ...], tuple[np.ndarray, ...]]:
    """(the reference's results, E for each): E bounds either engine's distance from the exact
    result elementwise (module docstring). Raises NotImplementedError for an op with no rule."""
    trace: dict[int, np.ndarray] = {}
    results = evaluate(func, arrays, trace)
    with np.errstate(all="ignore"):  # infinities meet zeros in the bounds beside specials
        return results, _propagate(func, arrays, trace)


def _propagate(func: Func, arrays: Sequence[np.ndarray], trace: dict[int, np.ndarray]
               ) -> tuple[np.ndarray, ...]:
    env = bind_symbols(func, arrays)
    err: dict[int, np.ndarray] = {}
    for val in func.values():
        out = trace[id(val)]
        if isinstance(val, Param) or (isinstance(val, Apply) and
                                      val.op.category == "constant"):
            err[id(val)] = np.zeros(out.shape)
            continue
        assert isinstance(val, Apply)
        op, attrs = val.op.name, _concrete_attrs(val, env)
        args = [trace[id(o)] for o in val.operands]
        errs = [err[id(o)] for o in val.operands]
        dt = args[0].dtype if args and is_float_array(args[0]) else out.dtype
        # f16 and bf16 compute in f32 and round the result to storage once (types.DType)
        store = DType.from_numpy(out.dtype)
        rounds_to_storage = store is not None and store.is_storage_float
        low = DType.from_numpy(dt)
        dt = np.dtype(np.float32) if low is not None and low.is_storage_float else dt
        if op in _MOVEMENT:
            if op == "gather" and errs[1].any():
                raise NotImplementedError("gather with inexact indices")
            # The same movement applied to the errors (f64, so nothing rounds them).
            operands = [errs[0], args[1]] if op == "gather" else errs
            e = val.op.reference(operands, attrs, TensorType.of(DType.F64, out.shape))
        elif not is_float_array(out) and val.op.category not in ("compare", "select", "cast"):
            # integer arithmetic: exact on exact operands, anything on inexact ones
            e = np.full(out.shape, np.inf if any((x > 0).any() for x in errs) else 0.0)
        elif val.op.category == "reduce":
            e = _reduce(op, args[0], errs[0], attrs, out)
        elif op in MATMULS:
            a, b = (np.abs(x.astype(np.float64)) for x in args)
            ea, eb = errs
            if op == "load_matmul_rows":  # A regrouped, its last two axes kept
                a, ea = (regrouped_rows(t, out.shape) for t in (a, ea))
            e = a @ eb + ea @ b + ea @ eb + gamma(args[0].shape[-1], dt) * ((a + ea) @ (b + eb))
        elif val.op.category == "compare":
            e = _flips(args[0], args[1], errs[0], errs[1]).astype(np.float64)
        elif op == "select":
            c, t, f = args
            either = np.abs(t.astype(np.float64) - f) + np.maximum(errs[1], errs[2])
            e = np.where(errs[0] > 0, either, np.where(c, errs[1], errs[2]))
        elif op == "cast":  # to f16 and bf16 through f32: two roundings
            e = errs[0] + (_rnd(out, np.float32) * rounds_to_storage if is_float_array(out)
                           else 0.0) + (_rnd(out, out.dtype) if is_float_array(out) else
                                        np.where(errs[0] > 0, 1.0, 0.0))
            rounds_to_storage = False
        else:
            e = _elementwise(op, args, errs, out, dt)
        if rounds_to_storage and op not in _MOVEMENT and val.op.category != "select":
            e = e + _rnd(out, out.dtype)
        # A special value (inf, NaN) must be the same in both engines (assert_within checks the
        # results): it carries no error. A bound that is NaN (inf * 0 beside a special) means
        # no bound.
        e = np.asarray(e, dtype=np.float64).reshape(out.shape)
        fin = np.isfinite(out) if is_float_array(out) else True
        err[id(val)] = np.where(fin, np.nan_to_num(e, nan=np.inf), 0.0)
    return tuple(err[id(r)] for r in func.results)


def assert_within(got: np.ndarray, want: np.ndarray, bound: np.ndarray, what: str = "") -> None:
    """|got - want| <= bound elementwise where ``want`` is finite; elsewhere the same special
    (inf of the same sign, or NaN)."""
    assert got.shape == want.shape and got.dtype == want.dtype, what
    g, w = got.astype(np.float64), want.astype(np.float64)
    fin = np.isfinite(w)
    special_ok = (np.isnan(g) & np.isnan(w)) | (g == w)
    with np.errstate(invalid="ignore"):
        ok = np.where(fin, np.abs(g - w) <= bound, special_ok)
    if not ok.all():
        i = tuple(int(j) for j in np.argwhere(~ok)[0])
        why = (f"|diff| {abs(g[i] - w[i]):.3g} > bound {bound[i]:.3g}" if fin[i] else
               "the reference's special value differs")
        raise AssertionError(f"{what}: {(~ok).sum()} of {ok.size} beyond the bound, first at "
                             f"{list(i)}: got {got[i]!r}, reference {want[i]!r}: {why}")


def assert_close_to_reference(got: Sequence[np.ndarray], func: Func,
                              arrays: Sequence[np.ndarray], what: str = "") -> None:
    """Each compiled result within 2 E of the reference (E from :func:`error_bounds`: each
    engine may be E from the exact result)."""
    want, bounds = error_bounds(func, arrays)
    for i, (g, w, e) in enumerate(zip(got, want, bounds, strict=True)):
        assert_within(g, w, 2 * e, f"{what} result {i}")

