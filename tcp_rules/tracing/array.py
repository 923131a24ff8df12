"""Traced arrays and NumPy's elementwise typing rules made explicit in TCP.

A :class:`TracedArray` stands for a value of the program being traced; its operators and
methods are those of ``numpy.ndarray`` as far as TCP's ops reach. NumPy's implicit rules become
explicit ops (the value-level helpers are in tracing.values):

- dtype promotion follows ``numpy.result_type`` (NumPy 2, NEP 50): operands of another dtype are
  ``cast``; Python scalars are *weak*: ``x * 2.0`` stays f32 for an f32 ``x``, ``i * 0.5`` turns
  an integer ``i`` into f64, as NumPy does;
- broadcasting right-aligns shapes and expands size-1 and missing axes with ``broadcast`` (a
  size-1 axis that expands is dropped first by a ``reshape``);
- NumPy arrays met while tracing (a closure's weights) become constants: a ``splat`` when all
  elements are equal, else a ``dense`` constant.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from tcp_rules.ir import Apply, Value
from tcp_rules.tracing.context import apply, error, splat
from tcp_rules.tracing.values import (
    Scalar,
    broadcast_dims,
    broadcast_value,
    cast_value,
    check_fits,
    constant_value,
    to_dtype,
    ufunc_dtype,
)
from tcp_rules.types import Dim, DType, TensorType


class TracedArray:
    """An array of the function being traced: a TCP value with NumPy's operators."""

    __slots__ = ("value",)
    __array_priority__ = 1000  # NumPy defers to our reflected operators

    def __init__(self, value: Value):
        self.value = value

    # what NumPy code reads ---------------------------------------------------------------

    @property
    def shape(self) -> tuple[int | Dim, ...]:
        """The shape: ints, and a :class:`Dim` for each symbolic axis."""
        return tuple(d.const if d.const is not None else d for d in self.value.type.dims)

    @property
    def dtype(self) -> np.dtype[Any]:
        return self.value.type.dtype.np_dtype

    @property
    def ndim(self) -> int:
        return self.value.type.rank

    @property
    def size(self) -> int | Dim:
        total = Dim.of(1)
        for d in self.value.type.dims:
            total = total * d
        return total.const if total.const is not None else total

    def __len__(self) -> int:
        if not self.ndim:
            raise error("len() of a 0-d array")
        n = self.value.type.dims[0].const
        if n is None:
            raise error(f"len() of an array whose first axis is symbolic ({self.shape[0]})")
        return n

    def __repr__(self) -> str:
        return f"TracedArray({self.value.type})"

    def __bool__(self) -> bool:
        raise error("a traced array has no truth value while tracing (its values are known "
                    "only when the compiled program runs)", hint="use tcp_rules.numpy.where")

    def __index__(self) -> int:
        raise error("a traced array cannot be used as a Python integer while tracing")

    def __int__(self) -> int:
        raise error("a traced array cannot be converted to a Python integer while tracing")

    def __setitem__(self, index: Any, value: Any) -> None:
        raise error("traced arrays cannot be updated in place",
                    hint="build a new array (tcp_rules.numpy.where, concatenate, pad)")

    def __float__(self) -> float:
        raise error("a traced array cannot be converted to a Python float while tracing")

    def __iter__(self) -> Any:
        raise error("iterating over a traced array is not supported", hint="index or slice it")

    def __array__(self, *args: Any, **kwargs: Any) -> np.ndarray:
        raise error("a traced array has no values while tracing, so it cannot become a NumPy "
                    "array", hint="use tcp_rules.numpy instead of numpy inside the function")

    def __array_ufunc__(self, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
        """``numpy.exp(x)``, ``weights + x``: NumPy's ufuncs on traced arrays trace the op
        of tcp_rules.numpy of the same name."""
        from tcp_rules import numpy as tnp

        fn = tnp.UFUNCS.get(ufunc.__name__)
        if method != "__call__" or kwargs or fn is None:
            raise error(f"numpy.{ufunc.__name__}{'' if method == '__call__' else '.' + method}"
                        f"{' with ' + ', '.join(kwargs) if kwargs else ''} is not supported on "
                        f"traced arrays", hint="see tcp_rules.numpy for what is")
        return fn(*inputs)

    def __array_function__(self, func: Any, types: Any, args: Any, kwargs: Any) -> Any:
        """``numpy.sum(x)``, ``numpy.concatenate([x, y])``: the function of the same name."""
        from tcp_rules import numpy as tnp

        fn = tnp.FUNCTIONS.get(func.__name__)
        if fn is None:
            raise error(f"numpy.{func.__name__} is not supported on traced arrays",
                        hint="see tcp_rules.numpy for what is")
        return fn(*args, **kwargs)

    # operators -------------------------------------------------------------------------

    def __add__(self, o: Any) -> TracedArray:
        return binary("add", self, o)

    def __radd__(self, o: Any) -> TracedArray:
        return binary("add", o, self)

    def __sub__(self, o: Any) -> TracedArray:
        return binary("sub", self, o)

    def __rsub__(self, o: Any) -> TracedArray:
        return binary("sub", o, self)

    def __mul__(self, o: Any) -> TracedArray:
        return binary("mul", self, o)

    def __rmul__(self, o: Any) -> TracedArray:
        return binary("mul", o, self)

    def __truediv__(self, o: Any) -> TracedArray:
        return divide(self, o)

    def __rtruediv__(self, o: Any) -> TracedArray:
        return divide(o, self)

    def __pow__(self, o: Any) -> TracedArray:
        return binary("pow", self, o)

    def __rpow__(self, o: Any) -> TracedArray:
        return binary("pow", o, self)

    def __matmul__(self, o: Any) -> TracedArray:
        from tcp_rules.numpy import matmul

        return matmul(self, o)

    def __rmatmul__(self, o: Any) -> TracedArray:
        from tcp_rules.numpy import matmul

        return matmul(o, self)

    def __neg__(self) -> TracedArray:
        return unary("neg", self)

    def __pos__(self) -> TracedArray:
        return self

    def __abs__(self) -> TracedArray:
        return unary("abs", self)

    def __lt__(self, o: Any) -> TracedArray:
        return compare("lt", self, o)

    def __le__(self, o: Any) -> TracedArray:
        return compare("le", self, o)

    def __gt__(self, o: Any) -> TracedArray:
        return compare("gt", self, o)

    def __ge__(self, o: Any) -> TracedArray:
        return compare("ge", self, o)

    def __eq__(self, o: Any) -> TracedArray:  # type: ignore[override]
        return compare("eq", self, o)

    def __ne__(self, o: Any) -> TracedArray:  # type: ignore[override]
        return compare("ne", self, o)

    __hash__ = None  # type: ignore[assignment]  # == builds an array, as NumPy's does

    def __floordiv__(self, o: Any) -> TracedArray:
        raise error("// is not supported (TCP's integer division truncates toward zero)",
                    hint="use tcp_rules.numpy.floor(a / b) for floats")

    def __mod__(self, o: Any) -> TracedArray:
        raise error("% is not supported on traced arrays")

    def __getitem__(self, index: Any) -> TracedArray:
        from tcp_rules.tracing.indexing import getitem

        return getitem(self, index)

    # methods, as ndarray's -------------------------------------------------------------

    @property
    def T(self) -> TracedArray:
        from tcp_rules.numpy import transpose

        return transpose(self)

    def astype(self, dtype: Any) -> TracedArray:
        return cast(self, to_dtype(dtype))

    def reshape(self, *shape: Any) -> TracedArray:
        from tcp_rules.numpy import reshape

        return reshape(self, shape[0] if len(shape) == 1 else shape)

    def transpose(self, *axes: Any) -> TracedArray:
        from tcp_rules.numpy import transpose

        return transpose(self, (axes[0] if len(axes) == 1 else axes) or None)

    def sum(self, axis: Any = None, keepdims: bool = False) -> TracedArray:
        from tcp_rules.numpy import sum as sum_

        return sum_(self, axis, keepdims=keepdims)

    def prod(self, axis: Any = None, keepdims: bool = False) -> TracedArray:
        from tcp_rules.numpy import prod

        return prod(self, axis, keepdims=keepdims)

    def max(self, axis: Any = None, keepdims: bool = False) -> TracedArray:
        from tcp_rules.numpy import max as max_

        return max_(self, axis, keepdims=keepdims)

    def min(self, axis: Any = None, keepdims: bool = False) -> TracedArray:
        from tcp_rules.numpy import min as min_

        return min_(self, axis, keepdims=keepdims)

    def mean(self, axis: Any = None, keepdims: bool = False) -> TracedArray:
        from tcp_rules.numpy import mean

        return mean(self, axis, keepdims=keepdims)


# dtypes -------------------------------------------------------------------------------------

def dtype_of(x: Any) -> np.dtype[Any] | Scalar:
    """What ``numpy.result_type`` takes for ``x``: a dtype, or a weak Python scalar."""
    if isinstance(x, TracedArray):
        return x.dtype
    if isinstance(x, bool | int | float):
        return x
    return np.asarray(x).dtype


def result_dtype(*xs: Any) -> DType:
    """NumPy's promotion of the operands (weak Python scalars included)."""
    try:
        dt = np.result_type(*(dtype_of(x) for x in xs))
    except (TypeError, OverflowError) as e:
        raise error(f"operands do not promote to a common dtype: {e}") from None
    return to_dtype(dt)


def cast(x: TracedArray, dtype: DType) -> TracedArray:
    """``x`` as ``dtype`` (unchanged when it has it)."""
    return x if x.value.type.dtype is dtype else TracedArray(cast_value(x.value, dtype))


def broadcast_to(x: TracedArray, dims: Sequence[Dim]) -> TracedArray:
    """``x`` expanded to ``dims`` as NumPy would (right-aligned), made explicit."""
    v = broadcast_value(x.value, dims)
    return x if v is x.value else TracedArray(v)


# operands -----------------------------------------------------------------------------------

def as_traced(x: Any, dtype: DType | None = None,
              dims: Sequence[Dim] | None = None) -> TracedArray:
    """``x`` as a traced array: scalars splat to ``dtype`` and ``dims`` (0-d without them),
    arrays and nested lists become constants."""
    if isinstance(x, TracedArray):
        return x
    if isinstance(x, bool | int | float) and dtype is not None:
        check_fits(x, dtype)
        return TracedArray(splat(x, TensorType(dtype, tuple(dims or ()))))
    try:
        arr = np.asarray(x)
    except (ValueError, TypeError):
        arr = np.asarray(None)
    if arr.dtype == object:
        raise error(f"expected an array or a number, got {type(x).__name__}")
    return TracedArray(constant_value(arr))


# elementwise ops ----------------------------------------------------------------------------

def operands(xs: Sequence[Any], dtype: DType) -> list[TracedArray]:
    """The operands of an elementwise op: each as a traced array of ``dtype``, all broadcast
    to one shape (scalars splat straight to it)."""
    arrays = _arrays(xs)
    dims = broadcast_dims([a.value.type.dims for a in arrays if a is not None])
    return [broadcast_to(cast(a, dtype), dims) if a is not None
            else as_traced(x, dtype, dims) for a, x in zip(arrays, xs, strict=True)]


def _arrays(xs: Sequence[Any]) -> list[TracedArray | None]:
    """Each operand as a traced array; None for Python scalars (weak: splat later)."""
    return [x if isinstance(x, TracedArray) else None if isinstance(x, bool | int | float)
            else as_traced(x) for x in xs]


def elementwise(op: str, xs: Sequence[Any], dtype: DType) -> TracedArray:
    """``op`` on operands of ``dtype`` broadcast to one shape.

    Where every array operand is a reshape of a value of one same shape (a reduction's
    ``keepdims``), the op applies before the reshape: elementwise ops commute with reshapes,
    and the reshape is then dropped again when the result is broadcast back.
    """
    arrays = _arrays(xs)
    dims = broadcast_dims([a.value.type.dims for a in arrays if a is not None])
    vals = [broadcast_to(cast(a, dtype), dims).value if a is not None else None
            for a in arrays]
    inner = {v.operands[0].type.dims if isinstance(v, Apply) and v.op.name == "reshape"
             else None for v in vals if v is not None}
    at = inner.pop() if len(inner) == 1 else None
    if at is not None:
        vals = [v.operands[0] if isinstance(v, Apply) else None for v in vals]
    shape = dims if at is None else at
    args = [v if v is not None else as_traced(x, dtype, shape).value
            for v, x in zip(vals, xs, strict=True)]
    r = apply(op, args)
    return TracedArray(r if at is None else apply("reshape", [r], shape=list(dims)))


# NumPy's arithmetic on booleans: + and maximum are or, * and minimum are and (TCP's i1 add
# would wrap, 1 + 1 == 0, and TCP's max takes no i1): selects. -, unary - and ** are refused,
# as NumPy refuses them (its ** computes in int8).
_BOOL_OPS = {"add": "or", "mul": "and", "max": "or", "min": "and"}


def _bool_op(op: str) -> str:
    if op not in _BOOL_OPS:
        raise error(f"{op} of boolean arrays is not supported (NumPy refuses it too)",
                    hint="use tcp_rules.numpy.where, or astype an integer dtype first")
    return _BOOL_OPS[op]


def unary(op: str, x: Any) -> TracedArray:
    """An elementwise unary op in the dtype NumPy's ufunc would use."""
    a = as_traced(x) if not isinstance(x, TracedArray) else x
    dt = a.value.type.dtype
    if dt is DType.I1 and op in ("neg", "abs"):
        if op == "abs":
            return a
        _bool_op(op)
    if op not in ("neg", "abs") and not dt.is_float:
        dt = ufunc_dtype(op, dt)
        if not dt.is_float:  # rounding an integer: the integer itself
            return cast(a, dt)
    return elementwise(op, [a], dt)


def binary(op: str, a: Any, b: Any) -> TracedArray:
    """An elementwise binary op on NumPy's common dtype and broadcast shape."""
    dt = result_dtype(a, b)
    if op == "atan2" and not dt.is_float:
        dt = ufunc_dtype(op, dt)
    if dt is DType.I1:
        x, y = operands([a, b], dt)
        picks = (x, x, y) if _bool_op(op) == "or" else (x, y, x)  # a ? a : b, a ? b : a
        return TracedArray(apply("select", [v.value for v in picks]))
    return elementwise(op, [a, b], dt)


def divide(a: Any, b: Any) -> TracedArray:
    """True division: integers divide as f64, as NumPy's ``/`` does."""
    dt = result_dtype(a, b)
    return elementwise("div", [a, b], dt if dt.is_float else DType.F64)


def compare(op: str, a: Any, b: Any) -> TracedArray:
    """A comparison on the common dtype: a boolean (i1) array."""
    return elementwise(op, [a, b], result_dtype(a, b))
