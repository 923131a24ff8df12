"""A NumPy-like module for functions traced by ``@tcp_rules.jit``.

Each function records TCP ops on the arrays of the function being traced; NumPy's typing rules
(dtype promotion with weak Python scalars, broadcasting) are made explicit as the ops ``cast``
and ``broadcast`` (tcp_rules.tracing.array). Inside a jitted function NumPy's own functions work
too on traced arrays (``numpy.exp(x)``, ``numpy.sum(x, axis=1)``): they call the function of
the same name here. :data:`OP_SPELLINGS` says how each op of the op table is written.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Sequence
from typing import Any

from tcp_rules.tracing.array import (
    TracedArray,
    as_traced,
    binary,
    cast,
    compare,
    operands,
    result_dtype,
    unary,
)
from tcp_rules.tracing.array import broadcast_to as _broadcast_to
from tcp_rules.tracing.array import divide as _divide
from tcp_rules.tracing.context import apply, error
from tcp_rules.tracing.indexing import (
    concatenate,
    matmul,
    normalize_axes,
    normalize_axis,
    reshape,
    shape_arg,
    transpose,
)
from tcp_rules.tracing.values import Scalar, broadcast_dims, check_fits, to_dtype
from tcp_rules.types import Dim, DType

ndarray = TracedArray  # what annotations in user code may name

# How NumPy code spells each op of the op table, with x and y f32[3, 4] arrays, c a boolean
# one, i an integer one (a test checks that every op is here or in NOT_EXPOSED, and that each
# spelling traces to its op).
OP_SPELLINGS = {
    "neg": "-x", "abs": "abs(x)", "exp": "exp(x)", "log": "log(x)", "sqrt": "sqrt(x)",
    "tanh": "tanh(x)", "sin": "sin(x)", "cos": "cos(x)", "atan": "arctan(x)",
    "floor": "floor(x)", "ceil": "ceil(x)", "round_even": "rint(x)",
    "clamp": "clip(x, lo, hi)", "add": "x + y", "sub": "x - y", "mul": "x * y",
    "div": "x / y", "max": "maximum(x, y)", "min": "minimum(x, y)", "pow": "x ** y",
    "atan2": "arctan2(x, y)", "eq": "x == y", "ne": "x != y", "lt": "x < y", "le": "x <= y",
    "gt": "x > y", "ge": "x >= y", "select": "where(c, x, y)", "cast": "x.astype(dtype)",
    "splat": "full_like(x, v)", "dense": "x + asarray([1.0, 2.0, 3.0, 4.0])",
    "iota": "x + arange(x.shape[1])",
    "broadcast": "x + y[0]",
    "transpose": "transpose(x)", "reshape": "reshape(x, shape)", "slice": "x[1:3]",
    "concat": "concatenate([x, y])", "gather": "take(x, i, axis=1, mode='clip')",
    "pad": "pad(x, width)", "reduce_sum": "sum(x, axis)", "reduce_prod": "prod(x, axis)",
    "reduce_max": "max(x, axis)", "reduce_min": "min(x, axis)", "matmul": "x @ y.T",
}
NOT_EXPOSED = {
    "rsqrt": "NumPy has no rsqrt; 1 / sqrt(x) becomes it through the rules (rsqrt-def)",
    "sigmoid": "NumPy has no sigmoid (SciPy's expit); write 1 / (1 + exp(-x))",
    "erf": "erf is scipy.special's, not NumPy's",
    "round": "NumPy rounds half to even (rint); TCP's round rounds half away from zero",
    "load": "the fusion rules' op, not the user's", "kernel": "the fusion rules' op",
    "load_matmul": "the fusion rules' op", "load_matmul_rows": "the fusion rules' op",
}


# elementwise --------------------------------------------------------------------------------

def _unary(op: str) -> Callable[[Any], TracedArray]:
    def f(x: Any) -> TracedArray:
        return unary(op, x)
    f.__doc__ = f"Elementwise, the op ``{op}``."
    return f


def _binary(op: str) -> Callable[[Any, Any], TracedArray]:
    def f(x: Any, y: Any) -> TracedArray:
        return binary(op, x, y)
    f.__doc__ = f"Elementwise on NumPy's common dtype and broadcast shape, the op ``{op}``."
    return f


def _compare(op: str) -> Callable[[Any, Any], TracedArray]:
    def f(x: Any, y: Any) -> TracedArray:
        return compare(op, x, y)
    f.__doc__ = f"Elementwise comparison (a boolean array), the op ``{op}``."
    return f


exp, log, sqrt, tanh = _unary("exp"), _unary("log"), _unary("sqrt"), _unary("tanh")
sin, cos, arctan = _unary("sin"), _unary("cos"), _unary("atan")
floor, ceil, rint = _unary("floor"), _unary("ceil"), _unary("round_even")
negative, absolute = _unary("neg"), _unary("abs")
abs = absolute
add, subtract, multiply = _binary("add"), _binary("sub"), _binary("mul")
maximum, minimum, power, arctan2 = _binary("max"), _binary("min"), _binary("pow"), \
    _binary("atan2")
equal, not_equal = _compare("eq"), _compare("ne")
less, less_equal, greater, greater_equal = _compare("lt"), _compare("le"), _compare("gt"), \
    _compare("ge")


def divide(x: Any, y: Any) -> TracedArray:
    """True division (``x / y``): integers divide as f64, as in NumPy."""
    return _divide(x, y)


def square(x: Any) -> TracedArray:
    """``x * x``."""
    return binary("mul", x, x)


def reciprocal(x: Any) -> TracedArray:
    """``1 / x`` in ``x``'s dtype."""
    a = as_traced(x)
    return binary("div", cast(as_traced(1, a.value.type.dtype), a.value.type.dtype), a)


def round(x: Any, decimals: int = 0) -> TracedArray:
    """``numpy.round`` with ``decimals=0``: half to even."""
    if decimals != 0:
        raise error("round: only decimals=0 is supported")
    return rint(x)


def where(condition: Any, x: Any, y: Any) -> TracedArray:
    """``x`` where ``condition`` is true, else ``y`` (a non-boolean condition is ``!= 0``)."""
    c = as_traced(condition)
    if c.value.type.dtype is not DType.I1:
        c = compare("ne", c, 0)
    dt = result_dtype(x, y)
    dims = broadcast_dims([c.value.type.dims, *(v.value.type.dims for v in (x, y)
                                                  if isinstance(v, TracedArray))])
    a, b = operands([x, y], dt)
    a, b, c = broadcast_to(a, dims), broadcast_to(b, dims), broadcast_to(c, dims)
    return TracedArray(apply("select", [c.value, a.value, b.value]))


def clip(x: Any, a_min: Any = None, a_max: Any = None) -> TracedArray:
    """``numpy.clip``: scalar bounds become TCP's ``clamp``, array bounds max and min."""
    a = as_traced(x)
    if isinstance(a_min, bool | int | float | None) and isinstance(a_max, bool | int | float |
                                                                     None):
        if a_min is None and a_max is None:
            raise error("clip needs a_min or a_max")
        dt = result_dtype(a, *(v for v in (a_min, a_max) if v is not None))
        for v in (a_min, a_max):
            if v is not None:
                check_fits(v, dt)
        return TracedArray(apply("clamp", [cast(a, dt).value], min=a_min, max=a_max))
    r = a if a_min is None else maximum(a, a_min)
    return r if a_max is None else minimum(r, a_max)


def full_like(x: Any, fill_value: Scalar, dtype: Any = None) -> TracedArray:
    """An array of ``x``'s shape filled with ``fill_value``."""
    a = as_traced(x)
    dt = to_dtype(dtype) if dtype is not None else a.value.type.dtype
    return as_traced(fill_value, dt, a.value.type.dims)


def zeros_like(x: Any, dtype: Any = None) -> TracedArray:
    """Zeros of ``x``'s shape and dtype."""
    return full_like(x, 0, dtype)


def ones_like(x: Any, dtype: Any = None) -> TracedArray:
    """Ones of ``x``'s shape and dtype."""
    return full_like(x, 1, dtype)


def arange(stop: Any, dtype: Any = None) -> TracedArray:
    """``numpy.arange(stop)``: 0, 1, ..., stop - 1 (int64 unless ``dtype``), as TCP's iota;
    ``stop`` may be a symbolic size such as ``x.shape[0]``."""
    (n,) = shape_arg(stop)
    if isinstance(n, int) and n < 0:
        n = 0
    dt = to_dtype(dtype) if dtype is not None else DType.I64
    return TracedArray(apply("iota", [], shape=[n], axis=0, dtype=dt))


def asarray(x: Any, dtype: Any = None) -> TracedArray:
    """``x`` as a traced array (a constant unless it is one), cast to ``dtype``."""
    a = as_traced(x)
    return a if dtype is None else cast(a, to_dtype(dtype))


# reductions ---------------------------------------------------------------------------------

def _reduce(op: str, x: Any, axis: Any, keepdims: bool, dtype: DType | None = None
            ) -> TracedArray:
    a = as_traced(x)
    if dtype is not None:
        a = cast(a, dtype)
    axes = normalize_axes(axis, a.ndim)
    if not axes:
        return a
    if op in ("reduce_max", "reduce_min"):
        empty = [a.value.type.dims[i] for i in axes if a.value.type.dims[i].const == 0]
        if empty:
            raise error(f"{op.removeprefix('reduce_')} over an empty axis (NumPy raises: "
                        f"the reduction has no identity)")
    r = TracedArray(apply(op, [a.value], axes=list(axes), keepdims=False))
    return _keep(r, a, axes) if keepdims else r


def _keep(r: TracedArray, a: TracedArray, axes: Sequence[int]) -> TracedArray:
    """A reduction's result with its reduced axes kept (size 1). Reduced without them and
    reshaped, so that broadcasting it back drops the reshape again (tracing.array.broadcast_to)
    and the program reads as a reduction broadcast along the kept axes."""
    return reshape(r, [Dim.of(1) if i in axes else d for i, d in enumerate(a.value.type.dims)])


def _accumulator(x: TracedArray) -> DType | None:
    """NumPy sums and multiplies booleans and small integers in 64 bits: unsigned ones in
    uint64, the others in int64."""
    dt = x.value.type.dtype
    if dt is DType.I1:
        return DType.I64
    if not dt.is_int or dt.np_dtype.itemsize == 8:
        return None
    return DType.U64 if dt.np_dtype.kind == "u" else DType.I64


def sum(x: Any, axis: Any = None, keepdims: bool = False) -> TracedArray:
    """Sum over ``axis`` (None: every axis)."""
    a = as_traced(x)
    return _reduce("reduce_sum", a, axis, keepdims, _accumulator(a))


def prod(x: Any, axis: Any = None, keepdims: bool = False) -> TracedArray:
    """Product over ``axis`` (None: every axis)."""
    a = as_traced(x)
    return _reduce("reduce_prod", a, axis, keepdims, _accumulator(a))


def _extreme(op: str, x: Any, axis: Any, keepdims: bool) -> TracedArray:
    a = as_traced(x)
    if a.value.type.dtype is not DType.I1:
        return _reduce(op, a, axis, keepdims)
    # booleans: any and all, as the max and min of 0s and 1s (TCP reduces no i1)
    return compare("ne", _reduce(op, a, axis, keepdims, DType.I8), 0)


def max(x: Any, axis: Any = None, keepdims: bool = False) -> TracedArray:
    """Maximum over ``axis`` (None: every axis)."""
    return _extreme("reduce_max", x, axis, keepdims)


def min(x: Any, axis: Any = None, keepdims: bool = False) -> TracedArray:
    """Minimum over ``axis`` (None: every axis)."""
    return _extreme("reduce_min", x, axis, keepdims)


amax, amin = max, min


def _count(a: TracedArray, axis: Any) -> int:
    n = 1
    for i in normalize_axes(axis, a.ndim):
        d = a.value.type.dims[i].const
        if d is None:
            raise error(f"mean over axis {i} needs its size, which is symbolic "
                        f"({a.value.type.dims[i]})")
        n *= d
    return n


def mean(x: Any, axis: Any = None, keepdims: bool = False) -> TracedArray:
    """Mean over ``axis``: the sum divided by the count (integers in f64, as in NumPy)."""
    a = as_traced(x)
    if not a.value.type.dtype.is_float:
        a = cast(a, DType.F64)
    r = divide(sum(a, axis), _count(a, axis))
    return _keep(r, a, normalize_axes(axis, a.ndim)) if keepdims else r


def var(x: Any, axis: Any = None, keepdims: bool = False, ddof: int = 0) -> TracedArray:
    """Variance over ``axis``: the mean squared deviation from the mean (``ddof`` as NumPy's)."""
    a = as_traced(x)
    if not a.value.type.dtype.is_float:
        a = cast(a, DType.F64)
    d = a - mean(a, axis, keepdims=True)
    r = divide(sum(d * d, axis), _count(a, axis) - ddof)
    return _keep(r, a, normalize_axes(axis, a.ndim)) if keepdims else r


def std(x: Any, axis: Any = None, keepdims: bool = False, ddof: int = 0) -> TracedArray:
    """Standard deviation: ``sqrt(var(x))``."""
    return sqrt(var(x, axis, keepdims, ddof))


# shapes -------------------------------------------------------------------------------------

def expand_dims(x: Any, axis: int | Sequence[int]) -> TracedArray:
    """Insert size-1 axes at ``axis``."""
    a = as_traced(x)
    axes = normalize_axes(axis, a.ndim + len(axis if isinstance(axis, tuple | list) else [0]))
    dims = list(a.value.type.dims)
    for i in sorted(axes):
        dims.insert(i, Dim.of(1))
    return reshape(a, dims)


def squeeze(x: Any, axis: Any = None) -> TracedArray:
    """Remove size-1 axes (all of them, or those of ``axis``)."""
    a = as_traced(x)
    dims = a.value.type.dims
    axes = [i for i, d in enumerate(dims) if d.const == 1] if axis is None else \
        normalize_axes(axis, a.ndim)
    for i in axes:
        if dims[i].const != 1:
            raise error(f"cannot squeeze axis {i}: its size is {dims[i]}, not 1")
    return reshape(a, [d for i, d in enumerate(dims) if i not in axes])


def broadcast_to(x: Any, shape: Any) -> TracedArray:
    """``numpy.broadcast_to``."""
    return _broadcast_to(as_traced(x), [Dim.of(d) for d in shape_arg(shape)])


def stack(arrays: Sequence[Any], axis: int = 0) -> TracedArray:
    """Join arrays along a new axis."""
    xs = [as_traced(a) for a in arrays]
    if not xs:
        raise error("stack needs a non-empty sequence of arrays")
    ax = normalize_axis(axis, xs[0].ndim + 1)
    return concatenate([expand_dims(a, ax) for a in xs], ax)


def swapaxes(x: Any, axis1: int, axis2: int) -> TracedArray:
    """Exchange two axes."""
    a = as_traced(x)
    perm = list(range(a.ndim))
    i, j = normalize_axis(axis1, a.ndim), normalize_axis(axis2, a.ndim)
    perm[i], perm[j] = perm[j], perm[i]
    return transpose(a, perm)


def dot(a: Any, b: Any) -> TracedArray:
    """``numpy.dot`` for operands of rank 1 and 2 (where it is matmul)."""
    x, y = as_traced(a), as_traced(b)
    if x.ndim > 2 or y.ndim > 2:
        raise error("dot of arrays of rank above 2 is not supported", hint="use matmul")
    return matmul(x, y)


def take(x: Any, indices: Any, axis: int | None = None, mode: str = "raise") -> TracedArray:
    """``numpy.take`` along ``axis`` with ``mode='clip'`` (TCP's gather clamps indices)."""
    if mode != "clip":
        raise error("take needs mode='clip': TCP's gather clamps indices into range, NumPy's "
                    "default raises on them")
    if axis is None:
        raise error("take needs an axis")
    a, i = as_traced(x), as_traced(indices)
    if not i.value.type.dtype.is_int or i.value.type.dtype is DType.I1:
        raise error(f"take: indices must be integers, got {i.dtype}")
    return TracedArray(apply("gather", [a.value, i.value], axis=normalize_axis(axis, a.ndim)))


def pad(x: Any, pad_width: Any, mode: str = "constant", constant_values: Scalar = 0
        ) -> TracedArray:
    """``numpy.pad`` with modes constant, edge and reflect."""
    a = as_traced(x)
    w = pad_width
    if isinstance(w, int):
        w = [(w, w)] * a.ndim
    elif len(w) and isinstance(w[0], int):
        w = [tuple(w) if len(w) == 2 else (w[0], w[0])] * a.ndim
    if len(w) != a.ndim or not builtins.all(len(p) == 2 for p in w):
        raise error(f"pad_width {pad_width!r} does not give (before, after) for each of "
                    f"{a.ndim} axes")
    return TracedArray(apply("pad", [a.value], low=[p[0] for p in w], high=[p[1] for p in w],
                             mode=mode, value=constant_values))


# Functions NumPy's dispatch protocols may hand traced arrays to, by NumPy's name.
UFUNCS: dict[str, Callable[..., TracedArray]] = {
    "add": add, "subtract": subtract, "multiply": multiply, "divide": divide,
    "true_divide": divide, "power": power, "negative": negative, "absolute": absolute,
    "maximum": maximum, "minimum": minimum, "exp": exp, "log": log, "sqrt": sqrt,
    "tanh": tanh, "sin": sin, "cos": cos, "arctan": arctan, "arctan2": arctan2,
    "floor": floor, "ceil": ceil, "rint": rint, "square": square, "reciprocal": reciprocal,
    "equal": equal, "not_equal": not_equal, "less": less, "less_equal": less_equal,
    "greater": greater, "greater_equal": greater_equal, "matmul": matmul,
}
FUNCTIONS: dict[str, Callable[..., TracedArray]] = {
    "sum": sum, "prod": prod, "max": max, "min": min, "amax": max, "amin": min, "mean": mean,
    "var": var, "std": std, "where": where, "clip": clip, "round": round,
    "transpose": transpose, "reshape": reshape, "concatenate": concatenate, "stack": stack,
    "expand_dims": expand_dims, "squeeze": squeeze, "broadcast_to": broadcast_to,
    "swapaxes": swapaxes, "dot": dot, "matmul": matmul, "take": take, "pad": pad,
    "full_like": full_like, "zeros_like": zeros_like, "ones_like": ones_like,
    "asarray": asarray,
}
__all__ = sorted({*UFUNCS, *FUNCTIONS, "abs", "amax", "amin", "ndarray"})
