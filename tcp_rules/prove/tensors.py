"""The meaning of whole ops over tensors of z3 terms (NumPy object arrays of one term per
element, concrete shapes): elementwise ops lift their scalar formula; constants are their
reference's values; data movement is an index map from output element to input element;
reductions fold a scalar formula over the reduced elements.

An index map is computed by running the op's NumPy reference on an index tensor (element i
holds i): a data-movement op only moves elements, so the result says, for every output element,
which input element it reads. gather's indices are data, so it is written out as a choice over
the (clipped) index.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import z3

from tcp_rules.ops import OPS
from tcp_rules.prove.domain import FP_SORTS, RNE, Ctx, Unsupported, const
from tcp_rules.prove.scalars import SCALAR_FORMULAS
from tcp_rules.types import DType, TensorType

Arr = np.ndarray
TensorFn = Callable[[Ctx, str, Sequence[Arr], Sequence[TensorType], TensorType,
                     dict[str, Any]], Arr]
# NumPy adds a float reduction of up to 7 elements in order (8 or more pairwise, in blocks):
# the proof models that order for one reduced axis, and leaves longer or multi-axis float
# reductions (whose visiting order depends on memory layout) unknown.
ORDERED_SUM = 7


def _shape(t: TensorType) -> tuple[int, ...]:
    assert t.shape is not None
    return t.shape


def lift(values: np.ndarray, dtype: DType, ctx: Ctx) -> Arr:
    """Concrete values as an object array of z3 constants."""
    out = np.empty(values.shape, dtype=object)
    for i, v in np.ndenumerate(values):
        out[i] = const(v, dtype, ctx.mode)
    return out


def elementwise(ctx: Ctx, name: str, args: Sequence[Arr], types: Sequence[TensorType],
                out: TensorType, attrs: dict[str, Any]) -> Arr:
    fn = SCALAR_FORMULAS[name]
    dts = [t.dtype for t in types]
    res = np.empty(_shape(out), dtype=object)
    for i in np.ndindex(*_shape(out)):
        res[i] = fn(ctx, [a[i] for a in args], dts, out.dtype, attrs)
    return res


def constant(ctx: Ctx, name: str, args: Sequence[Arr], types: Sequence[TensorType],
             out: TensorType, attrs: dict[str, Any]) -> Arr:
    return lift(np.asarray(OPS[name].reference([], attrs, out)), out.dtype, ctx)


def movement(ctx: Ctx, name: str, args: Sequence[Arr], types: Sequence[TensorType],
             out: TensorType, attrs: dict[str, Any]) -> Arr:
    """Element k of the inputs laid end to end is read where the reference run on indices
    puts k; pad's constant is index -1."""
    iotas, flat, start = [], [], 0
    for a, t in zip(args, types, strict=True):
        n = math.prod(_shape(t))
        iotas.append(np.arange(start, start + n, dtype=np.int64).reshape(_shape(t)))
        flat.extend(a.reshape(-1).tolist())
        start += n
    at = dict(attrs)
    pad_value = None
    if name == "pad" and at.get("mode") == "constant":
        pad_value = const(np.array(at["value"]).astype(out.dtype.np_dtype), out.dtype, ctx.mode)
        at["value"] = -1
    index = np.asarray(OPS[name].reference(iotas, at, out.with_dtype(DType.I64)))
    res = np.empty(index.shape, dtype=object)
    for i, k in np.ndenumerate(index):
        res[i] = pad_value if k < 0 else flat[int(k)]
    return res


def gather(ctx: Ctx, name: str, args: Sequence[Arr], types: Sequence[TensorType],
           out: TensorType, attrs: dict[str, Any]) -> Arr:
    """np.take(x, indices, axis, mode="clip"): an index below 0 reads 0, above n-1 reads n-1."""
    x, idx = args
    axis = attrs["axis"] % max(x.ndim, 1)
    n = x.shape[axis]
    signed = types[1].dtype.is_signed
    res = np.empty(_shape(out), dtype=object)
    for o in np.ndindex(*_shape(out)):
        pre, j, post = o[:axis], o[axis:axis + idx.ndim], o[axis + idx.ndim:]
        k: Any = idx[j]  # a z3 bit-vector term
        term = x[(*pre, n - 1, *post)]
        for m in range(n - 2, -1, -1):  # clip: at most m (signed: also everything below 0)
            bound = z3.BitVecVal(m, k.size())
            at_most = (k <= bound) if signed else z3.ULE(k, bound)
            term = z3.If(at_most, x[(*pre, m, *post)], term)
        res[o] = term
    return res


def _normal_axes(axes: Sequence[int], rank: int) -> tuple[int, ...]:
    return tuple(sorted(a % rank for a in axes)) if rank else ()


def reduction(ctx: Ctx, name: str, args: Sequence[Arr], types: Sequence[TensorType],
              out: TensorType, attrs: dict[str, Any]) -> Arr:
    x, t = args[0], types[0]
    axes = _normal_axes(attrs["axes"], x.ndim)
    count = math.prod(x.shape[a] for a in axes)
    if count == 0:
        zeros = np.zeros(x.shape, dtype=t.dtype.np_dtype)
        return lift(np.asarray(OPS[name].reference([zeros], attrs, out)), out.dtype, ctx)
    fp = t.dtype.is_float and ctx.mode == "fp"
    if t.dtype is DType.I1:
        raise Unsupported(f"{name} on i1")
    kind = name.removeprefix("reduce_")
    if fp and kind in ("sum", "prod") and count > 2 and (len(axes) > 1 or count > ORDERED_SUM):
        raise Unsupported(f"{name} of {count} floats over axes {list(axes)}: NumPy's order "
                          "of summation is not modelled")
    moved = np.moveaxis(x, axes, range(x.ndim - len(axes), x.ndim)).reshape(-1, count)
    if fp and t.dtype.is_storage_float and kind in ("sum", "prod"):
        # f16/bf16 reduce in f32 and round once at the end (in_f32), not after every step
        f32 = z3.FPSort(*FP_SORTS[DType.F32])
        wide = np.vectorize(lambda e: z3.fpFPToFP(RNE, e, f32), otypes=[object])(moved)
        inner = reduction(ctx, name, [wide.reshape(-1, count)],
                          [TensorType.of(DType.F32, (wide.shape[0], count))],
                          TensorType.of(DType.F32, (wide.shape[0],)), {"axes": (1,),
                                                                       "keepdims": False})
        store = z3.FPSort(*FP_SORTS[t.dtype])
        narrow = np.vectorize(lambda e: z3.fpFPToFP(RNE, e, store), otypes=[object])(inner)
        return narrow.reshape(_shape(out))
    dt = [t.dtype, t.dtype]
    step = {"sum": "add", "prod": "mul", "max": "max", "min": "min"}[kind]
    fold = SCALAR_FORMULAS[step]
    res = []
    for row in moved:
        if kind in ("max", "min") and fp:
            res.append(_ieee_extremum(list(row), kind == "max"))
            continue
        acc = row[0]
        if fp and kind == "sum":  # NumPy starts a float sum at +0.0: sum([-0.0]) is 0.0
            acc = fold(ctx, [const(0.0, t.dtype, "fp"), acc], dt, t.dtype, {})
        for e in row[1:]:
            acc = fold(ctx, [acc, e], dt, t.dtype, {})
        res.append(acc)
    arr = np.empty(len(res), dtype=object)
    arr[:] = res
    return arr.reshape(_shape(out))


def _ieee_extremum(row: list[z3.ExprRef], larger: bool) -> z3.ExprRef:
    """IEEE 754-2019 maximum/minimum of floats: NaN if any is NaN, -0.0 below +0.0."""
    def beats(a: z3.ExprRef, b: z3.ExprRef) -> z3.ExprRef:
        strict = z3.fpGT(a, b) if larger else z3.fpLT(a, b)
        zeros = z3.And(z3.fpIsZero(a), z3.fpIsZero(b),
                       (z3.fpIsPositive(a) if larger else z3.fpIsNegative(a)))
        return z3.Or(strict, zeros)
    acc = row[0]
    for e in row[1:]:
        acc = z3.If(beats(e, acc), e, acc)
    nan = z3.Or(*[z3.fpIsNaN(e) for e in row]) if len(row) > 1 else z3.fpIsNaN(row[0])
    return z3.If(nan, z3.fpNaN(row[0].sort()), acc)


def matmul(ctx: Ctx, name: str, args: Sequence[Arr], types: Sequence[TensorType],
           out: TensorType, attrs: dict[str, Any]) -> Arr:
    a, b = args
    dt = types[0].dtype
    if dt.is_float and ctx.mode == "fp":
        raise Unsupported("float matmul: BLAS's order of summation and fused multiply-adds "
                          "are not modelled")
    mul, add = SCALAR_FORMULAS["mul"], SCALAR_FORMULAS["add"]
    dts = [dt, dt]
    res = np.empty(_shape(out), dtype=object)
    k = a.shape[-1]
    for o in np.ndindex(*_shape(out)):
        batch, i, j = o[:-2], o[-2], o[-1]
        if k == 0:
            res[o] = const(0, dt, ctx.mode)
            continue
        terms = [mul(ctx, [a[(*batch, i, m)], b[(*batch, m, j)]], dts, dt, {}) for m in range(k)]
        acc = terms[0]
        for term in terms[1:]:
            acc = add(ctx, [acc, term], dts, dt, {})
        res[o] = acc
    return res
