"""Shape work of the NumPy-like module: axes, reshape with -1, basic indexing, matmul's batch
dims, all as TCP's explicit movement ops (``slice``, ``reshape``, ``transpose``, ``broadcast``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from tcp_rules.tracing.array import (
    TracedArray,
    as_traced,
    broadcast_dims,
    broadcast_to,
    cast,
    operands,
    result_dtype,
)
from tcp_rules.tracing.context import apply, error
from tcp_rules.tracing.values import shape_text
from tcp_rules.types import Dim, DType


def normalize_axis(axis: Any, ndim: int) -> int:
    """An axis as 0..ndim-1 (negative counts from the end), as NumPy reads it."""
    if isinstance(axis, bool) or not isinstance(axis, int):
        raise error(f"axis must be an integer, got {axis!r}")
    if not -ndim <= axis < ndim:
        raise error(f"axis {axis} is out of bounds for an array of dimension {ndim}")
    return axis % ndim


def normalize_axes(axis: Any, ndim: int) -> tuple[int, ...]:
    """``axis`` of a reduction: None (all), an int or a tuple of ints; no repeats."""
    if axis is None:
        return tuple(range(ndim))
    axes = tuple(axis) if isinstance(axis, tuple | list) else (axis,)
    out = tuple(normalize_axis(a, ndim) for a in axes)
    if len(set(out)) != len(out):
        raise error(f"axis {axis!r} repeats an axis")
    return out


def shape_arg(shape: Any) -> list[int | Dim]:
    """A shape argument: an int, a Dim or a sequence of them."""
    items = list(shape) if isinstance(shape, tuple | list) else [shape]
    for d in items:
        if isinstance(d, bool) or not isinstance(d, int | Dim):
            raise error(f"a shape holds integers, got {d!r}")
    return items


def reshape(x: Any, shape: Any) -> TracedArray:
    """``numpy.reshape``: row-major, one entry may be -1."""
    x = as_traced(x)
    items = shape_arg(shape)
    have = x.value.type.dims
    if sum(1 for d in items if isinstance(d, int) and d == -1) > 1:
        raise error("reshape: only one dimension can be -1")
    if -1 in [d for d in items if isinstance(d, int)]:
        total = math.prod(d.const if d.const is not None else -1 for d in have)
        known = [d for d in items if not (isinstance(d, int) and d == -1)]
        if total < 0 or any(isinstance(d, Dim) and d.const is None for d in known):
            raise error("reshape with -1 needs concrete dims (this array has symbolic ones)")
        rest = math.prod(d if isinstance(d, int) else d.const or 0 for d in known)
        if rest == 0 or total % rest:
            raise error(f"cannot reshape an array of size {total} into shape "
                        f"{tuple(map(str, items))}")
        items = [total // rest if isinstance(d, int) and d == -1 else d for d in items]
    dims = tuple(Dim.of(d) for d in items)
    if dims == have:
        return x
    if any(d.const is not None and d.const < 0 for d in dims):
        raise error(f"reshape: negative dimension in {tuple(map(str, items))}")
    return TracedArray(apply("reshape", [x.value], shape=list(dims)))


def transpose(x: Any, axes: Any = None) -> TracedArray:
    """``numpy.transpose``: reversed axes by default."""
    x = as_traced(x)
    n = x.ndim
    perm = tuple(range(n))[::-1] if axes is None else tuple(normalize_axis(a, n) for a in axes)
    if sorted(perm) != list(range(n)):
        raise error(f"axes {tuple(axes)} are not a permutation of the {n} axes")
    if perm == tuple(range(n)):
        return x
    return TracedArray(apply("transpose", [x.value], perm=list(perm)))


def getitem(x: TracedArray, index: Any) -> TracedArray:
    """Basic indexing: integers, slices with positive steps, ``...`` and ``None``."""
    items = list(index) if isinstance(index, tuple) else [index]
    if any(isinstance(i, TracedArray | list | np.ndarray) for i in items):
        raise error("indexing with arrays is not supported", hint="use tcp_rules.numpy.take")
    if sum(i is Ellipsis for i in items) > 1:
        raise error("an index can only have a single ellipsis ('...')")
    real = sum(1 for i in items if i is not None and i is not Ellipsis)
    if real > x.ndim:
        raise error(f"too many indices for an array of dimension {x.ndim}")
    if any(i is Ellipsis for i in items):
        k = next(n for n, i in enumerate(items) if i is Ellipsis)
        items[k:k + 1] = [slice(None)] * (x.ndim - real)
    else:
        items += [slice(None)] * (x.ndim - real)
    start: list[int] = []
    size: list[Dim] = []
    stride: list[int] = []
    out: list[Dim] = []

    def take(first: int, count: Dim, step: int) -> None:
        start.append(first)
        size.append(count)
        stride.append(step)

    axis = 0
    for item in items:
        if item is None:
            out.append(Dim.of(1))
            continue
        d = x.value.type.dims[axis]
        axis += 1
        if isinstance(item, slice) and item == slice(None):
            take(0, d, 1)
            out.append(d)
            continue
        n = d.const
        if n is None:
            raise error(f"indexing axis {axis - 1} needs its size, which is symbolic ({d})")
        if isinstance(item, slice):
            if item.step is not None and (not isinstance(item.step, int) or item.step <= 0):
                raise error("only slices with positive steps are supported")
            r = range(*item.indices(n))
            take(r.start if len(r) else 0, Dim.of(len(r)), r.step)
            out.append(Dim.of(len(r)))
        elif isinstance(item, int) and not isinstance(item, bool):
            if not -n <= item < n:
                raise error(f"index {item} is out of bounds for axis {axis - 1} with size {n}")
            take(item % n, Dim.of(1), 1)
        else:
            raise error(f"unsupported index {item!r} (integers, slices, ... and None are)")
    v = x.value
    if any(s != 0 for s in start) or tuple(size) != v.type.dims or any(s != 1 for s in stride):
        v = apply("slice", [v], start=start, size=size, stride=stride)
    if tuple(out) != v.type.dims:
        v = apply("reshape", [v], shape=out)
    return TracedArray(v)


def matmul(a: Any, b: Any) -> TracedArray:
    """``numpy.matmul``: 1-d operands as a row or a column, batch dims broadcast and flattened
    into the one batch axis TCP's matmul has."""
    dt = result_dtype(a, b)
    if dt is DType.I1:
        raise error("matmul of boolean arrays is not supported")
    x, y = (v if isinstance(v, TracedArray) else operands([v], dt)[0] for v in (a, b))
    x, y = cast(x, dt), cast(y, dt)
    if x.ndim == 0 or y.ndim == 0:
        raise error("matmul: operands must be at least 1-d (use * for scalars)")
    from tcp_rules.numpy import expand_dims

    xv = expand_dims(x, 0) if x.ndim == 1 else x
    yv = expand_dims(y, 1) if y.ndim == 1 else y
    xd, yd = xv.value.type.dims, yv.value.type.dims
    if xd[-1] != yd[-2]:
        raise error(f"matmul: shapes {shape_text(x.shape)} and {shape_text(y.shape)} do not "
                    f"align: {xd[-1]} != {yd[-2]}")
    batch = broadcast_dims([xd[:-2], yd[:-2]])
    m, k, n = xd[-2], xd[-1], yd[-1]
    if batch:
        xv = broadcast_to(xv, (*batch, m, k))
        yv = broadcast_to(yv, (*batch, k, n))
    if len(batch) > 1:  # TCP's batched matmul has one batch axis
        flat = Dim.of(1)
        for d in batch:
            flat = flat * d
        xv, yv = reshape(xv, [flat, m, k]), reshape(yv, [flat, k, n])
    r = TracedArray(apply("matmul", [xv.value, yv.value]))
    dims: list[Dim] = [*batch, m, n]
    if len(batch) > 1:
        r = reshape(r, dims)
    if y.ndim == 1:
        dims.pop()
    if x.ndim == 1:
        dims.pop(-1 if y.ndim == 1 else -2)
    return reshape(r, dims)


def concatenate(arrays: Sequence[Any], axis: int | None = 0) -> TracedArray:
    """``numpy.concatenate``: operands promoted to a common dtype; axis None flattens."""
    if not isinstance(arrays, Sequence) or not arrays:
        raise error("concatenate needs a non-empty sequence of arrays")
    dt = result_dtype(*arrays)
    xs = [cast(a if isinstance(a, TracedArray) else operands([a], dt)[0], dt) for a in arrays]
    if axis is None:
        xs = [reshape(x, [-1]) for x in xs]
        axis = 0
    ax = normalize_axis(axis, xs[0].ndim) if xs[0].ndim else 0
    if len(xs) == 1:
        return xs[0]
    return TracedArray(apply("concat", [x.value for x in xs], axis=ax))
