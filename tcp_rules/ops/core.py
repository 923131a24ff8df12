"""The shape of an op definition: operands, attributes, shape rule, reference, traits, cost.

Every stage (parser, type checker, interpreter, e-graph encoder, cost model, verifier, code
generator) reads these records; none keeps its own list of ops.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tcp_rules.types import Dim, DType, TensorType


class AttrKind(enum.Enum):
    """How an attribute value is written and what it holds."""

    INT = "int"  # one integer: axis
    INTS = "ints"  # a list of integers: perm, axes, dims, start, stride
    DIMS = "dims"  # a list of dims, symbols allowed: shape, size
    DTYPE = "dtype"  # an element type: to
    SCALAR = "scalar"  # a number (inf/nan allowed) or bool: clamp bounds, splat value
    BOOL = "bool"  # true/false: keepdims
    DATA = "data"  # a nested list of numbers: dense constants
    NAME = "name"  # one word from the spec's fixed ``choices``, written bare: pad's mode=edge


@dataclass(frozen=True)
class AttrSpec:
    """One attribute of an op; ``default`` of None means the attribute is required.

    A NAME attribute takes one of ``choices`` (an enum written as a bare word, never quoted:
    the term grammar has no strings, and a fixed set lets every stage check it statically).
    """

    name: str
    kind: AttrKind
    default: Any = None
    optional: bool = False  # may be absent altogether (clamp's min/max)
    choices: tuple[str, ...] = ()


class ShapeError(Exception):
    """A type/shape rule failed; ``operand`` or ``attr`` says what to point at."""

    def __init__(self, message: str, *, operand: int | None = None, attr: str | None = None):
        super().__init__(message)
        self.message = message
        self.operand = operand
        self.attr = attr


@dataclass(frozen=True)
class Traits:
    """Algebraic facts about an op, for documentation, rules and codegen.

    ``identity`` is a value e with op(x, e) == x bit for bit (so add's is -0.0, not 0.0).
    ``idempotent`` means op(x, x) == x for binary ops and op(op(x)) == op(x) for unary ones.
    """

    elementwise: bool = False
    commutative: bool = False
    associative: bool = False
    identity: float | None = None
    idempotent: bool = False


Attrs = Mapping[str, Any]
InferFn = Callable[[Sequence[TensorType], Attrs], TensorType]
ReferenceFn = Callable[[Sequence[np.ndarray], Attrs, TensorType], np.ndarray]
# Representative valid attribute values for given operand types; ``fresh`` makes a new symbolic
# dim. Rule checking and the verifier enumerate instances from it.
AttrSpaceFn = Callable[[Sequence[TensorType], Callable[[], Dim]], Iterable[dict[str, Any]]]


def no_attrs(args: Sequence[TensorType], fresh: Callable[[], Dim]) -> Iterable[dict[str, Any]]:
    """The attribute space of an op without attributes: one empty assignment."""
    return ({},)


@dataclass(frozen=True)
class OpCost:
    """Work of one op instance: floating-point operations and bytes read plus written."""

    flops: float
    bytes: float


Shape = tuple[int, ...]


@dataclass(frozen=True)
class CostFormula:
    """Flops per element (of the output, or of the largest operand for reductions) and traffic.

    ``materializes`` is False for ops whose result is only an index remapping (broadcast,
    transpose) that fused code can fold into its consumer's indexing. ``custom`` computes flops
    from concrete operand and result shapes where a per-element count does not fit (matmul).
    """

    flops_per_element: float
    per_input: bool = False
    materializes: bool = True
    custom: Callable[[Sequence[Shape], Shape, Attrs], float] | None = None

    def evaluate(self, args: Sequence[tuple[Shape, int]], out: tuple[Shape, int],
                 attrs: Attrs) -> OpCost:
        """Cost from the (shape, itemsize) of each operand and of the result."""
        numels = [math.prod(shape) for shape, _ in args]
        out_numel = math.prod(out[0])
        if self.custom is not None:
            flops = self.custom([shape for shape, _ in args], out[0], attrs)
        else:
            base = max(numels, default=0) if self.per_input else out_numel
            flops = self.flops_per_element * base
        traffic = sum(n * w for n, (_, w) in zip(numels, args, strict=True)) + out_numel * out[1]
        return OpCost(flops=float(flops), bytes=float(traffic))


@dataclass(frozen=True)
class OpDef:
    """One TCP op: the single source of truth that every stage derives from."""

    name: str
    doc: str
    operands: tuple[str, ...]
    attrs: tuple[AttrSpec, ...]
    infer: InferFn = field(repr=False)
    reference: ReferenceFn = field(repr=False)
    cost: CostFormula
    traits: Traits = Traits()
    variadic: bool = False  # the last operand takes one or more tensors
    category: str = "other"
    # Operand positions whose dtype is fixed instead of shared with the others (select's i1
    # condition); a scalar literal written there is typed accordingly.
    fixed_dtypes: tuple[tuple[int, DType], ...] = ()
    attr_space: AttrSpaceFn = field(default=no_attrs, repr=False)

    def attr(self, name: str) -> AttrSpec | None:
        return next((a for a in self.attrs if a.name == name), None)

    @property
    def min_arity(self) -> int:
        return len(self.operands)

    def arity_ok(self, n: int) -> bool:
        return n >= len(self.operands) if self.variadic else n == len(self.operands)

    def arity_text(self) -> str:
        n = len(self.operands)
        if self.variadic:
            return f"at least {n} operand{'s' * (n != 1)}"
        return f"{n} operand{'s' * (n != 1)}"


def identity_value(identity: float, dtype: DType) -> float | int | bool:
    """An op's identity element as a value of ``dtype`` (±inf become the integer extremes,
    so 0 and MAX for unsigned types; -0.0 is 0 for every integer type)."""
    if dtype.is_float:
        return identity
    info = np.iinfo(dtype.np_dtype) if dtype.is_int else None
    if math.isinf(identity):
        if info is None:
            return identity > 0
        return int(info.max if identity > 0 else info.min)
    return int(identity) if info is not None else bool(identity)


def in_f32(ref: ReferenceFn) -> ReferenceFn:
    """``ref`` computed the way f16 and bf16 are defined: operands widened to f32 (exactly),
    the op computed in f32, and a f16/bf16 result rounded to storage once (nearest even).
    Other dtypes pass through unchanged."""
    def run(args: Sequence[np.ndarray], attrs: Attrs, out: TensorType) -> np.ndarray:
        low = [_is_storage(a) for a in args]
        if not any(low) and not out.dtype.is_storage_float:
            return ref(args, attrs, out)
        wide = [a.astype(np.float32) if lo else a for a, lo in zip(args, low, strict=True)]
        r = ref(wide, attrs, out.with_dtype(out.dtype.compute))
        return np.asarray(r).astype(out.dtype.np_dtype)
    return run


def _is_storage(a: np.ndarray) -> bool:
    dt = DType.from_numpy(a.dtype)
    return dt is not None and dt.is_storage_float
