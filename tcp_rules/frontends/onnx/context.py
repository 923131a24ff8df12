"""The state of one ONNX graph import: tensors by name, known constants, and helpers for
converters (operands, attributes, NumPy-style broadcasting, errors that name the node).

A tensor is either a TCP value or a known constant (a NumPy array). Constants stay constants as
long as possible so that shape arguments (Reshape's shape, Slice's starts) are static, as TCP
requires; a shape computed from symbolic dims is an object array of :class:`Dim` entries.
A constant becomes a TCP value only when an op needs it as data: a splat when all its elements
are equal, a dense constant when small, otherwise a parameter whose array is kept as a weight.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import onnx

from tcp_rules import build as tb
from tcp_rules.build import kept_axes, numpy_broadcast
from tcp_rules.diagnostics import TcpError
from tcp_rules.frontends import identifier
from tcp_rules.ir import Param, Value
from tcp_rules.ops import ShapeError
from tcp_rules.types import Dim, DType, TensorType

Tensor = Value | np.ndarray
INLINE_LIMIT = 16  # constants with more elements become parameters (weights)


class NeedsConstant(TcpError):
    """A converter needs a graph input's value at import time (a shape argument)."""

    def __init__(self, message: str, input_name: str):
        super().__init__(TcpError.at(message).diagnostics, "import")
        self.input_name = input_name


def onnx_dtype(elem_type: int, what: str) -> DType:
    """The TCP dtype of an ONNX element type; TcpError when TCP has none."""
    name = onnx.TensorProto.DataType.Name(elem_type) if elem_type in \
        onnx.TensorProto.DataType.values() else str(elem_type)
    try:
        np_dtype = onnx.helper.tensor_dtype_to_np_dtype(elem_type)
    except (KeyError, ValueError, TypeError):
        np_dtype = None
    dt = DType.from_numpy(np.dtype(np_dtype)) if np_dtype is not None else None
    if dt is None:
        raise TcpError.at(f"{what} has element type {name}, which TCP does not support")
    return dt


@dataclass
class Context:
    """Tensors of the graph being imported and the parameters made so far."""

    func: tb.FuncBuilder
    opset: int
    inline_limit: int = INLINE_LIMIT
    env: dict[str, Tensor] = field(default_factory=dict)
    graph_inputs: set[str] = field(default_factory=set)
    weights: dict[str, np.ndarray] = field(default_factory=dict)
    aliases: dict[str, str] = field(default_factory=dict)
    node: onnx.NodeProto | None = None
    # id(array) -> (array, value); holding the array keeps its id unique
    _materialized: dict[int, tuple[np.ndarray, Value]] = field(default_factory=dict)

    # errors ------------------------------------------------------------------------------

    def where(self) -> str:
        n = self.node
        if n is None:
            return "graph"
        label = f"'{n.name}' " if n.name else ""
        return f"node {label}({n.op_type}, opset {self.opset})"

    def error(self, message: str) -> TcpError:
        """A TcpError naming the node being converted."""
        return TcpError.at(f"{self.where()}: {message}", stage="import")

    # operands ----------------------------------------------------------------------------

    def has(self, i: int) -> bool:
        """Whether the node has a non-empty input ``i`` (ONNX marks omitted inputs with '')."""
        assert self.node is not None
        return i < len(self.node.input) and self.node.input[i] != ""

    def tensor(self, i: int) -> Tensor:
        assert self.node is not None
        if not self.has(i):
            raise self.error(f"input {i} is required")
        name = self.node.input[i]
        if name not in self.env:
            raise self.error(f"input '{name}' is not produced by any earlier node")
        return self.env[name]

    def value(self, i: int) -> Value:
        """Input ``i`` as a TCP value (constants materialized)."""
        return self.as_value(self.tensor(i), self.node.input[i] if self.node else "const")

    def const(self, i: int, what: str) -> np.ndarray:
        """Input ``i`` as a constant array; NeedsConstant if it is only known at run time."""
        t = self.tensor(i)
        if isinstance(t, np.ndarray):
            return t
        assert self.node is not None
        name = self.node.input[i]
        msg = (f"{what} (input '{name}') must be known when importing, since TCP shapes and "
               f"attributes are static")
        if name in self.graph_inputs:
            raise NeedsConstant(f"{self.where()}: {msg}; pass it as an initializer", name)
        raise self.error(msg)

    def ints(self, i: int, what: str) -> list[int]:
        arr = self.const(i, what)
        if arr.dtype == object:
            out = []
            for v in arr.ravel():
                c = Dim.of(v).const
                if c is None:
                    raise self.error(f"{what} depends on the symbolic dim {v}")
                out.append(c)
            return out
        if arr.dtype.kind not in "iu":
            raise self.error(f"{what} must be integers, got {arr.dtype}")
        return [int(v) for v in arr.ravel()]

    def dims(self, i: int, what: str) -> list[Dim]:
        """Input ``i`` as a list of dims (symbolic entries allowed)."""
        arr = self.const(i, what)
        if arr.dtype != object and arr.dtype.kind not in "iu":
            raise self.error(f"{what} must be integers, got {arr.dtype}")
        return [Dim.of(v if isinstance(v, Dim) else int(v)) for v in arr.ravel()]

    def attr(self, name: str, default: Any = None) -> Any:
        assert self.node is not None
        for a in self.node.attribute:
            if a.name == name:
                v = onnx.helper.get_attribute_value(a)
                if isinstance(v, bytes):
                    return v.decode()
                if isinstance(v, list):
                    return [x.decode() if isinstance(x, bytes) else x for x in v]
                return v
        return default

    # constants -> values -----------------------------------------------------------------

    def as_value(self, t: Tensor, name: str = "const") -> Value:
        """A tensor as a TCP value: splat, dense constant or weight parameter."""
        if isinstance(t, Value):
            return t
        key = id(t)
        if key in self._materialized:
            return self._materialized[key][1]
        source = t
        if t.dtype == object:
            t = self._concrete(t)
        dt = DType.from_numpy(t.dtype)
        if dt is None:
            raise self.error(f"constant '{name}' has dtype {t.dtype}, which TCP does not "
                             f"support")
        flat = t.ravel()
        if (flat.size and (flat == flat[0]).all() and not np.isnan(flat.astype(float)).any()) \
                or flat.size == 1:
            v: Value = tb.make_splat(flat[0].item(), TensorType.of(dt, t.shape))
        elif flat.size <= self.inline_limit:
            v = tb.apply_op("dense", value=t, dtype=dt)
        else:
            v = self.weight(name, t, dt)
        self._materialized[key] = (source, v)
        return v

    def _concrete(self, t: np.ndarray) -> np.ndarray:
        vals = [Dim.of(v).const if isinstance(v, Dim) else int(v) for v in t.ravel()]
        if any(v is None for v in vals):
            raise self.error("a shape with symbolic dims is used as data, which TCP cannot "
                             "express (shapes are static)")
        return np.array(vals, dtype=np.int64).reshape(t.shape)

    def weight(self, name: str, t: np.ndarray, dt: DType) -> Param:
        taken = {p.param for p in self.func.params}
        tcp = identifier(name, taken)
        p = self.func.param(tcp, TensorType.of(dt, t.shape))
        self.weights[tcp] = np.ascontiguousarray(t)
        if tcp != name:
            self.aliases[name] = tcp
        return p

    # building ----------------------------------------------------------------------------

    def op(self, name: str, *args: Any, **attrs: Any) -> Value:
        """Apply a TCP op; a type error names the ONNX node."""
        try:
            return tb.apply_op(name, *args, **attrs)
        except TcpError as e:
            raise self.error(e.diagnostics[0].message) from None

    def broadcast_to(self, v: Value, dims: Sequence[Dim]) -> Value:
        """NumPy-style broadcast of ``v`` to ``dims`` (right-aligned), explicit in TCP."""
        if tuple(v.type.dims) == tuple(dims):
            return v
        offset = len(dims) - v.type.rank
        if offset < 0:
            raise self.error(f"cannot broadcast {v.type} to rank {len(dims)}")
        keep = kept_axes(v.type.dims, dims)
        if len(keep) != v.type.rank:  # drop the size-1 axes that expand
            v = self.op("reshape", v, shape=[v.type.dims[i] for i in keep])
        return self.op("broadcast", v, shape=list(dims), dims=[i + offset for i in keep])

    def broadcast_dims(self, shapes: Sequence[Sequence[Dim]]) -> list[Dim]:
        """The NumPy broadcast of several shapes; symbolic dims must match exactly."""
        try:
            return list(numpy_broadcast(shapes))
        except ShapeError as e:
            raise self.error(f"shapes {[list(map(str, s)) for s in shapes]} do not broadcast: "
                             f"{e.message} (bind symbolic dims with --dim)") from None

    def broadcast_all(self, values: Sequence[Value]) -> list[Value]:
        dims = self.broadcast_dims([v.type.dims for v in values])
        return [self.broadcast_to(v, dims) for v in values]

    def widen(self, v: Value) -> Value:
        """An f16/bf16 value as f32: an ONNX op that TCP writes as several ops computes in f32
        and rounds once at the end (cast back with :meth:`cast`), as ONNX's reference does."""
        dt = v.type.dtype
        return self.cast(v, DType.F32) if dt.is_float and dt.itemsize < 4 else v

    def in_f32(self, fn: Callable[[Value], Value]) -> Value:
        """``fn`` of input 0, computed wide (see :meth:`widen`) and rounded back once."""
        x = self.value(0)
        return self.cast(fn(self.widen(x)), x.type.dtype)

    def cast(self, v: Value, dt: DType) -> Value:
        return v if v.type.dtype is dt else self.op("cast", v, to=dt)

    def scalar(self, value: float | int | bool, like: Value) -> Value:
        """A splat of ``value`` with the type of ``like``."""
        return tb.make_splat(value, like.type)

    def dim_value(self, d: Dim, like: Value) -> Value:
        """The size ``d`` as data, with the type of ``like``: a splat of a constant; of a
        symbolic dim, the sum of d ones (TCP has no op that reads a dim as a value; the sum
        depends on no index, so a kernel computes it once)."""
        if d.const is not None:
            return self.scalar(d.const, like)
        ones = tb.make_splat(1, TensorType(like.type.dtype, (d,)))
        n = self.op("reduce_sum", ones, axes=[0], keepdims=False)
        return self.op("broadcast", n, shape=list(like.type.dims), dims=[])

    def wrapped(self, idx: Value, size: Dim) -> Value:
        """Indices into an axis of ``size``, the negative ones counted from its end (ONNX's
        Gather, GatherND, OneHot); a symbolic size as data (:meth:`dim_value`)."""
        neg = self.op("lt", idx, self.scalar(0, idx))
        return self.op("select", neg, self.op("add", idx, self.dim_value(size, idx)), idx)

    def splat(self, value: float | int | bool, like: Value, dtype: DType) -> Value:
        """A splat of ``value`` with the shape of ``like`` and element type ``dtype``."""
        return tb.make_splat(value, TensorType(dtype, like.type.dims))


def normalize_axis(ctx: Context, axis: int, rank: int) -> int:
    """An ONNX axis (negative counts from the end) as 0..rank-1."""
    a = axis + rank if axis < 0 else axis
    if not 0 <= a < rank:
        raise ctx.error(f"axis {axis} is out of range for rank {rank}")
    return a


Converter = Callable[[Context], Sequence[Tensor]]
CONVERTERS: dict[str, Converter] = {}


def converts(*op_types: str) -> Callable[[Converter], Converter]:
    """Register a converter for the ONNX op types named."""
    def register(fn: Converter) -> Converter:
        for t in op_types:
            CONVERTERS[t] = fn
        return fn
    return register


def as_dims(values: Mapping[str, int | str] | None) -> dict[str, Dim]:
    """``--dim`` bindings: an ONNX dim name to a size or a TCP symbol."""
    out: dict[str, Dim] = {}
    for k, v in (values or {}).items():
        out[k] = Dim.of(int(v) if isinstance(v, int) or str(v).isdigit() else str(v))
    return out
