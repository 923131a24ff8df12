"""Building typed values: the one place where ops are applied, literals typed and shapes inferred.

Both the program elaborator and the Python builder API go through :func:`make_apply`::

    from tcp_rules import build as tb
    f = tb.FuncBuilder("relu_fma")
    a, b, c = (f.param(n, "f32[N, 64]") for n in "abc")
    f.ret(tb.max(tb.add(tb.mul(a, b), c), 0.0))
    func = f.finish()
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from tcp_rules.diagnostics import Span, TcpError
from tcp_rules.ir import Apply, Func, Param, Value, attrs_with_defaults
from tcp_rules.ops import OPS, AttrKind, AttrSpec, OpDef, ShapeError
from tcp_rules.sorts import Sort, apply_sort
from tcp_rules.types import DenseData, Dim, DType, TensorType, is_float_array

Scalar = int | float | bool


@dataclass(frozen=True)
class Literal:
    """A scalar literal in operand position, typed by its context when applied."""

    value: Scalar
    span: Span | None = None


Operand = Value | Literal


def normalize_attr(spec: AttrSpec, value: Any) -> Any:
    """Convert a Python value to the canonical form of an attribute kind; ShapeError if wrong."""
    def bad(expected: str) -> ShapeError:
        return ShapeError(f"attribute {spec.name} expects {expected}, got {value!r}",
                          attr=spec.name)

    match spec.kind:
        case AttrKind.INT:
            if isinstance(value, bool) or not isinstance(value, int | np.integer):
                raise bad("an integer")
            return int(value)
        case AttrKind.INTS:
            if not isinstance(value, list | tuple) or not all(
                    isinstance(v, int | np.integer) and not isinstance(v, bool) for v in value):
                raise bad("a list of integers")
            return tuple(int(v) for v in value)
        case AttrKind.DIMS:
            if not isinstance(value, list | tuple) or not all(
                    isinstance(v, int | str | Dim) and not isinstance(v, bool)
                    and not (isinstance(v, int) and v < 0) for v in value):
                raise bad("a list of dims (non-negative integers, symbols or Dims)")
            return tuple(Dim.of(v) for v in value)
        case AttrKind.DTYPE:
            if isinstance(value, DType):
                return value
            try:
                return DType.parse(str(value))
            except ValueError as e:
                raise ShapeError(str(e), attr=spec.name) from None
        case AttrKind.NAME:
            if not isinstance(value, str) or value not in spec.choices:
                raise bad("one of " + ", ".join(spec.choices))
            return value
        case AttrKind.SCALAR:
            if not isinstance(value, int | float | bool | np.number):
                raise bad("a number")
            return value.item() if isinstance(value, np.generic) else value
        case AttrKind.BOOL:
            if not isinstance(value, bool):
                raise bad("true or false")
            return value
        case AttrKind.DATA:
            if isinstance(value, DenseData):
                return value
            try:
                arr = np.array(value)
            except ValueError:
                raise bad("a rectangular nested list of numbers") from None
            if is_float_array(arr):  # bf16 arrays (NumPy kind 'V') included
                return DenseData(arr.astype(np.float64))
            if arr.dtype == object or arr.dtype.kind not in "biu":
                raise bad("a rectangular nested list of numbers")
            # One canonical storage type per kind, so equal constants compare equal whatever
            # they were written as (parsed text, or a float32 array in the builder); u64
            # values beyond the i64 range keep uint64.
            big = arr.dtype.kind == "u" and arr.size and int(arr.max()) > np.iinfo(np.int64).max
            canonical = {"b": np.bool_, "i": np.int64, "u": np.uint64 if big else np.int64}
            return DenseData(arr.astype(canonical[arr.dtype.kind]))
    raise AssertionError(spec.kind)


def check_attrs(op: OpDef, given: Mapping[str, Any]) -> tuple[tuple[str, Any], ...]:
    """Validate attribute names and kinds; fill defaults; table order."""
    for name in given:
        if op.attr(name) is None:
            known = ", ".join(a.name for a in op.attrs) or "none"
            raise ShapeError(f"{op.name} has no attribute '{name}' (attributes: {known})",
                             attr=name)
    out: dict[str, Any] = {}
    for spec in op.attrs:
        if spec.name in given:
            out[spec.name] = normalize_attr(spec, given[spec.name])
        elif spec.default is None and not spec.optional:
            raise ShapeError(f"{op.name} needs attribute '{spec.name}' ({spec.kind.value})",
                             attr=spec.name)
    return attrs_with_defaults(op, out)


def canonical_scalar(v: Scalar, dtype: DType) -> Scalar:
    """One spelling per value: 0 and 0.0 in a float context are the same constant (floats stay
    floats, integers ints, booleans bools), so that matching and sharing see them as equal."""
    if dtype.is_float:
        return float(v)
    if dtype is DType.I1 and v in (0, 1):
        return bool(v)
    if dtype.is_int and isinstance(v, float) and v.is_integer():
        return int(v)
    return v


def _canonical_scalars(op: OpDef, attrs: tuple[tuple[str, Any], ...],
                       dtype: DType | None) -> tuple[tuple[str, Any], ...]:
    """Scalar attributes (splat's value, clamp's bounds, pad's value) in their canonical
    spelling for the dtype they apply to: splat's own, else the first operand's."""
    a = dict(attrs)
    dtype = a.get("dtype") if op.name == "splat" else dtype
    if dtype is None:
        return attrs
    scalars = {spec.name for spec in op.attrs if spec.kind is AttrKind.SCALAR}
    return tuple((k, canonical_scalar(v, dtype) if k in scalars and v is not None else v)
                 for k, v in attrs)


def _literal_context(op: OpDef, args: Sequence[Operand],
                     expected: TensorType | None) -> list[TensorType | None]:
    """The type each literal operand takes (None for non-literals)."""
    fixed = dict(op.fixed_dtypes)
    known = [a for a in args if isinstance(a, Value)]
    shared = [a.type.dtype for i, a in enumerate(args) if isinstance(a, Value) and i not in fixed]
    if known:
        dims = known[0].type.dims
    elif expected is not None:
        dims = expected.dims
    else:
        dims = None
    if not shared and expected is not None and op.category in ("unary", "binary", "select"):
        shared = [expected.dtype]
    out: list[TensorType | None] = []
    for i, a in enumerate(args):
        if not isinstance(a, Literal):
            out.append(None)
            continue
        dtype = fixed.get(i) or (shared[0] if shared else None)
        if dims is None or dtype is None or not op.traits.elementwise:
            raise ShapeError(f"cannot tell the type of literal {format_scalar(a.value)} here",
                             operand=i)
        out.append(TensorType(dtype, dims))
    return out


def numpy_broadcast(shapes: Sequence[Sequence[Dim]]) -> tuple[Dim, ...]:
    """NumPy's broadcast of several shapes (right-aligned; symbolic dims must match exactly).

    Frontends that take NumPy's implicit broadcasting (ONNX, the tracer) share this rule;
    ShapeError says where two dims disagree, and each caller words it for its source.
    """
    rank = max((len(s) for s in shapes), default=0)
    out: list[Dim] = []
    for k in range(rank):
        d: Dim | None = None
        for s in shapes:
            j = k - (rank - len(s))
            if j < 0 or s[j].const == 1:
                continue
            if d is None or d == s[j]:
                d = s[j]
            else:
                raise ShapeError(f"{d} against {s[j]} on axis {k - rank}")
        out.append(d if d is not None else Dim.of(1))
    return tuple(out)


def kept_axes(have: Sequence[Dim], dims: Sequence[Dim]) -> list[int]:
    """The axes of a shape ``have`` that survive a NumPy broadcast to ``dims``: all but the
    size-1 axes that expand (TCP's broadcast maps kept axes, so those are reshaped away)."""
    offset = len(dims) - len(have)
    return [i for i, d in enumerate(have) if not (d.const == 1 and dims[i + offset].const != 1)]


def make_splat(value: Scalar, type_: TensorType, span: Span | None = None) -> Apply:
    """A splat constant of ``type_`` holding ``value``."""
    return make_apply(OPS["splat"], (), {"value": value, "shape": type_.dims,
                                         "dtype": type_.dtype}, span=span)


def make_apply(op: OpDef, args: Sequence[Operand], attrs: Mapping[str, Any], *,
               span: Span | None = None, name: str | None = None,
               expected: TensorType | None = None) -> Apply:
    """Apply ``op``: check arity and attributes, type literals, infer the result type.

    Raises ShapeError (with the operand or attribute at fault) on any type error.
    """
    if not op.arity_ok(len(args)):
        raise ShapeError(f"{op.name} takes {op.arity_text()}, got {len(args)}")
    checked = check_attrs(op, attrs)
    typed: list[Value] = []
    for a, lit_type in zip(args, _literal_context(op, args, expected), strict=True):
        if isinstance(a, Literal):
            assert lit_type is not None
            try:
                typed.append(make_splat(a.value, lit_type, a.span))
            except ShapeError as e:
                raise ShapeError(e.message, operand=len(typed)) from None
        else:
            typed.append(a)
    checked = _canonical_scalars(op, checked, typed[0].type.dtype if typed else None)
    result = op.infer([v.type for v in typed], dict(checked))
    sort = apply_sort(op, [v.sort for v in typed])
    return Apply(result, op=op, operands=tuple(typed), attrs=checked, span=span, name=name,
                 sort=sort)


def format_scalar(v: Scalar) -> str:
    """A scalar as written in source: true, 3, 0.5, -inf, nan."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        if math.isnan(v):
            return "nan"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        return repr(v)
    return str(v)


# The Python builder API --------------------------------------------------------------------

def _as_operand(x: Any) -> Operand:
    if isinstance(x, Value | Literal):
        return x
    if isinstance(x, np.generic) and (x.dtype.kind in "biu" or is_float_array(x.dtype)):
        return Literal(float(x) if is_float_array(x.dtype) else x.item())
    if isinstance(x, bool | int | float):
        return Literal(x)
    raise TypeError(f"expected a tensor value or a scalar, got {x!r}")


def apply_op(name: str, *args: Any, **attrs: Any) -> Apply:
    """Apply the op called ``name`` to values and scalars (TcpError on a type error)."""
    op = OPS.get(name)
    if op is None:
        raise TcpError.at(f"unknown op '{name}'")
    try:
        return make_apply(op, [_as_operand(a) for a in args], attrs)
    except ShapeError as e:
        raise TcpError.at(e.message if e.message.startswith(name) else f"{name}: {e.message}") \
            from None


def __getattr__(name: str) -> Callable[..., Apply]:
    """``build.add(x, y)``, ``build.transpose(x, perm=[1, 0])``: one function per op."""
    if name in OPS:
        return lambda *args, **attrs: apply_op(name, *args, **attrs)
    raise AttributeError(name)


class FuncBuilder:
    """Builds a func without text: parameters, values from ``build.<op>(...)``, results."""

    def __init__(self, name: str):
        self.name = name
        self.params: list[Param] = []
        self.results: list[Value] = []

    def param(self, name: str, type_: TensorType | str) -> Param:
        """Add a parameter; ``type_`` may be written as in programs: "f32[N, 784]"."""
        if not name.isidentifier() or name in ("inf", "nan", "true", "false"):
            raise TcpError.at(f"parameter name '{name}' is not a usable name")
        if any(p.param == name for p in self.params):
            raise TcpError.at(f"func {self.name} already has a parameter '{name}'")
        if isinstance(type_, str):
            from tcp_rules.elaborate import parse_type  # the parser lives above this module

            type_ = parse_type(type_)
        p = Param(type_, param=name, index=len(self.params), name=name)
        self.params.append(p)
        return p

    def ret(self, *values: Value) -> None:
        """Add results; each must be a value (a literal result needs make_splat's type)."""
        for v in values:
            if not isinstance(v, Value):
                raise TcpError.at(f"func {self.name}: a result must be a tensor value, got {v!r} "
                                  f"(use build.make_splat(value, type) for a constant)")
            if v.sort is Sort.BODY:
                raise TcpError.at(f"func {self.name}: a result must be a tensor, not a kernel "
                                  f"body (materialize it with kernel(...))")
        self.results.extend(values)

    def finish(self) -> Func:
        if not self.results:
            raise TcpError.at(f"func {self.name} returns nothing")
        return Func(self.name, tuple(self.params), tuple(self.results),
                    tuple(v.type for v in self.results))
