"""NumPy's typing rules on the values of a trace: dtypes, broadcasting and constants, each made
an explicit TCP op (``cast``, ``reshape`` + ``broadcast``, ``splat`` or ``dense``)."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

import numpy as np

from tcp_rules.build import kept_axes, numpy_broadcast
from tcp_rules.ir import Apply, Value
from tcp_rules.ops import ShapeError
from tcp_rules.tracing.context import active, apply, error, splat
from tcp_rules.types import Dim, DType, TensorType

Scalar = bool | int | float
DENSE_LIMIT = 1 << 16  # elements: larger constants should be arguments, not program text


def to_dtype(dt: Any) -> DType:
    """The TCP dtype of a NumPy dtype (or anything ``numpy.dtype`` takes)."""
    try:
        got = DType.from_numpy(np.dtype(dt))
    except TypeError:
        got = None
    if got is None:
        raise error(f"dtype {dt} has no TCP element type")
    return got


def check_fits(x: Scalar, dtype: DType) -> None:
    """NumPy 2 refuses a Python integer its integer dtype cannot hold; so do we."""
    if dtype.is_int and not isinstance(x, bool) and isinstance(x, int):
        info = np.iinfo(dtype.np_dtype)
        if not info.min <= x <= info.max:
            raise error(f"Python integer {x} is out of bounds for {dtype.np_dtype}")


_UFUNC_NAMES = {"exp": "exp", "log": "log", "sqrt": "sqrt", "tanh": "tanh", "sin": "sin",
                "cos": "cos", "atan": "arctan", "floor": "floor", "ceil": "ceil",
                "round_even": "rint", "atan2": "arctan2"}


@functools.cache
def ufunc_dtype(op: str, dtype: DType) -> DType:
    """The dtype NumPy's ufunc for ``op`` computes in for integer or boolean operands of
    ``dtype``: its own loop resolution (exp of int8 is f16, of int16 f32, of int32 f64; floor
    of an integer is that integer)."""
    ufunc = getattr(np, _UFUNC_NAMES[op])
    z = np.zeros(1, dtype.np_dtype)
    with np.errstate(all="ignore"):
        return to_dtype(ufunc(*[z] * ufunc.nin).dtype)


def cast_value(v: Value, dtype: DType) -> Value:
    """``v`` as ``dtype`` (unchanged when it has it)."""
    return v if v.type.dtype is dtype else apply("cast", [v], to=dtype)


def constant_value(arr: np.ndarray) -> Value:
    """A NumPy array met while tracing, as a constant of the program."""
    dt = DType.from_numpy(arr.dtype)
    if dt is None:
        raise error(f"a constant of dtype {arr.dtype} has no TCP element type")
    active()
    flat = arr.ravel()
    if flat.size and (flat == flat[0]).all() and not (dt.is_float and np.isnan(flat[0])):
        return splat(flat[0].item(), TensorType.of(dt, arr.shape))
    if arr.size > DENSE_LIMIT:
        raise error(f"a constant array of {arr.size} elements would be written into the "
                    f"program", hint="pass it to the function as an argument")
    return apply("dense", [], value=arr, dtype=dt)


# broadcasting -------------------------------------------------------------------------------

def shape_text(dims: Sequence[Dim | int]) -> str:
    """A shape as NumPy prints it: (3, 4), (3,), ()."""
    items = [str(d) for d in dims]
    return f"({items[0]},)" if len(items) == 1 else f"({', '.join(items)})"


def broadcast_dims(shapes: Sequence[Sequence[Dim]]) -> tuple[Dim, ...]:
    """NumPy's broadcast of several shapes (symbolic dims must match exactly)."""
    try:
        return numpy_broadcast(shapes)
    except ShapeError as e:
        text = " and ".join(shape_text(s) for s in shapes)
        raise error(f"shapes {text} do not broadcast: {e.message}") from None


def broadcast_value(v: Value, dims: Sequence[Dim]) -> Value:
    """``v`` expanded to ``dims`` as NumPy would (right-aligned), made explicit."""
    have = v.type.dims
    dims = tuple(dims)
    if have == dims:
        return v
    offset = len(dims) - len(have)
    if offset < 0 or any(d != dims[i + offset] and d.const != 1 for i, d in enumerate(have)):
        raise error(f"cannot broadcast shape {shape_text(have)} to {shape_text(dims)}")
    keep = kept_axes(have, dims)
    if len(keep) != len(have):  # drop the size-1 axes that expand
        kept = tuple(have[i] for i in keep)
        # a reshape that added those axes (a reduction's keepdims) is undone, not stacked
        inner = v.operands[0] if isinstance(v, Apply) and v.op.name == "reshape" else None
        v = inner if inner is not None and inner.type.dims == kept else \
            apply("reshape", [v], shape=list(kept))
    return apply("broadcast", [v], shape=list(dims), dims=[i + offset for i in keep])
