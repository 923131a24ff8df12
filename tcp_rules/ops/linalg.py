"""Reductions and matrix multiplication."""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np

from tcp_rules.ops.core import (
    AttrKind,
    Attrs,
    AttrSpec,
    CostFormula,
    OpDef,
    ShapeError,
    identity_value,
    in_f32,
)
from tcp_rules.ops.elementwise import check_dtypes
from tcp_rules.ops.movement import check_axes
from tcp_rules.types import NUMERIC, Dim, TensorType


def _infer_reduce(args: Sequence[TensorType], attrs: Attrs) -> TensorType:
    x, axes, keep = args[0], list(attrs["axes"]), attrs["keepdims"]
    check_dtypes(args, NUMERIC)
    check_axes(axes, x.rank)
    dims = tuple(Dim.of(1) if i in axes else d for i, d in enumerate(x.dims)
                 if keep or i not in axes)
    return TensorType(x.dtype, dims)


def _reduce(fn: Callable[..., np.ndarray], identity: float | None) -> Callable[
        [Sequence[np.ndarray], Attrs, TensorType], np.ndarray]:
    def run(a: Sequence[np.ndarray], attrs: Attrs, out: TensorType) -> np.ndarray:
        x = a[0]
        extra = {}
        if identity is not None:  # max/min over an empty axis give the identity, not an error
            extra["initial"] = identity_value(identity, out.dtype)
        r = fn(x, axis=tuple(attrs["axes"]), keepdims=attrs["keepdims"], **extra)
        return np.asarray(r, dtype=out.dtype.np_dtype).reshape(out.shape or ())
    return run


def _reduce_space(args: Sequence[TensorType], fresh: Callable[[], Dim]) -> Iterable[dict[str, Any]]:
    rank = args[0].rank
    for n in range(rank + 1):
        for axes in itertools.combinations(range(rank), n):
            for keep in (False, True):
                yield {"axes": axes, "keepdims": keep}


def _reduction(name: str, fn: Callable[..., np.ndarray], doc: str,
               identity: float | None = None) -> OpDef:
    return OpDef(name=name, doc=doc, operands=("x",),
                 attrs=(AttrSpec("axes", AttrKind.INTS),
                        AttrSpec("keepdims", AttrKind.BOOL, default=False)),
                 infer=_infer_reduce, reference=in_f32(_reduce(fn, identity)),
                 attr_space=_reduce_space,
                 cost=CostFormula(1, per_input=True), category="reduce")


def _infer_matmul(args: Sequence[TensorType], attrs: Attrs) -> TensorType:
    a, b = args
    check_dtypes(args, NUMERIC)
    if a.rank not in (2, 3) or b.rank != a.rank:
        raise ShapeError(f"matmul takes two rank-2 or two rank-3 (batched) operands, got {a} "
                         f"and {b}", operand=0 if a.rank not in (2, 3) else 1)
    if a.dims[-1] != b.dims[-2]:
        raise ShapeError(f"matmul inner dimensions differ: {a} @ {b} ({a.dims[-1]} vs "
                         f"{b.dims[-2]})", operand=1)
    if a.rank == 3 and a.dims[0] != b.dims[0]:
        raise ShapeError(f"matmul batch dimensions differ: {a} @ {b}", operand=1)
    return TensorType(a.dtype, a.dims[:-1] + b.dims[-1:])


def matmul_reference(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The product with each a[i,k] * b[k,j] rounded to the dtype, then summed (in some order).

    BLAS may fuse the multiply-adds, and a fused product never overflows: [[inf, 2]] @ [[1],
    [-3e38]] is inf fused but inf + -inf = NaN with the rounded product, depending on the size
    and the BLAS. So where a product can round to inf (rounding is monotonic: |a| max times |b|
    max rounds to inf) or an operand is inf or NaN, each row is computed from rounded products.
    Otherwise np.matmul: its rounding differs from another order's by the usual sum bounds."""
    out = np.matmul(a, b)
    if a.dtype.kind != "f" or a.size == 0 or b.size == 0:
        return out
    with np.errstate(over="ignore", invalid="ignore"):
        if np.isfinite(np.max(np.abs(a)) * np.max(np.abs(b))):
            return out
        for idx in np.ndindex(*a.shape[:-1]):  # (batch,) row: K x N products at a time
            out[idx] = np.sum(a[idx][:, None] * b[idx[:-1]], axis=0, dtype=a.dtype)
    return out


def _matmul_flops(args: Sequence[tuple[int, ...]], out: tuple[int, ...], attrs: Attrs) -> float:
    return 2.0 * math.prod(out) * args[0][-1]


def _ieee_extremum(fn: Callable[..., np.ndarray], larger: bool) -> Callable[..., np.ndarray]:
    """``fn`` (np.max, np.min) as IEEE 754-2019 maximum/minimum, where -0.0 < +0.0: NumPy's
    sign of a zero result depends on the order it visits the elements in (SIMD blocks), so the
    reference fixes it, and compiled code (llvm.maximum/minimum) gives it in any order."""
    def run(x: np.ndarray, **kw: Any) -> np.ndarray:
        r = np.asarray(fn(x, **kw))
        if x.dtype.kind != "f" or not (r == 0).any():
            return r
        winner = (x == 0) & (np.signbit(x) != larger)  # +0.0 wins a max, -0.0 a min
        kw.pop("initial", None)
        has = np.any(winner, axis=kw.get("axis"), keepdims=kw.get("keepdims", False))
        zero = np.where(has == larger, 0.0, -0.0).astype(x.dtype)
        return np.where(r == 0, zero, r)
    return run


LINALG_OPS: tuple[OpDef, ...] = (
    _reduction("reduce_sum", lambda x, **kw: np.sum(x, dtype=x.dtype, **kw),
               "sum over axes (pairwise for floats, wrapping for integers)"),
    _reduction("reduce_prod", lambda x, **kw: np.prod(x, dtype=x.dtype, **kw),
               "product over axes"),
    _reduction("reduce_max", _ieee_extremum(np.max, True),
               "maximum over axes (NaN if any is NaN; +0.0 above -0.0)", float("-inf")),
    _reduction("reduce_min", _ieee_extremum(np.min, False),
               "minimum over axes (NaN if any is NaN; -0.0 below +0.0)", float("inf")),
    OpDef(name="matmul", doc="matrix product [M,K]@[K,N], or batched [B,M,K]@[B,K,N]",
          operands=("a", "b"), attrs=(), infer=_infer_matmul,
          reference=in_f32(lambda a, attrs, out: matmul_reference(a[0], a[1]).astype(
              out.dtype.np_dtype)),
          cost=CostFormula(2, custom=_matmul_flops), category="matmul"),
)
