"""Sorts of rule expressions and the attribute functions usable in guards and right-hand sides.

Attribute functions compute attribute values (``compose(p, q)``, ``shape(x)``) and predicates
(``is_float(x)``, ``is_identity(p)``). Each is defined once here, with its signature and meaning;
the resolver checks sorts against it, instances evaluate it, and the e-graph encoder lowers it.
A function raises :class:`EvalError` where it is undefined (an index out of range): a guard
that cannot be evaluated does not hold, and a right side that cannot be computed does not apply.
"""

from __future__ import annotations

import enum
import math
import operator
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from tcp_rules.ops import AttrKind
from tcp_rules.types import Dim, DType, TensorType, dims_product


class Sort(enum.Enum):
    """What a rule expression denotes."""

    TENSOR = "tensor"
    INT = "int"
    INTS = "ints"
    DIM = "dim"
    DIMS = "dims"
    DTYPE = "dtype"
    SCALAR = "scalar"
    BOOL = "bool"
    DATA = "data"
    NAME = "name"

    def __str__(self) -> str:
        return self.value


SORT_OF_KIND = {AttrKind.INT: Sort.INT, AttrKind.INTS: Sort.INTS, AttrKind.DIMS: Sort.DIMS,
                AttrKind.DTYPE: Sort.DTYPE, AttrKind.SCALAR: Sort.SCALAR,
                AttrKind.BOOL: Sort.BOOL, AttrKind.DATA: Sort.DATA, AttrKind.NAME: Sort.NAME}

# An int is a dim (and a scalar); a list of ints is a list of dims.
_SUBSORTS = {(Sort.INT, Sort.DIM), (Sort.INTS, Sort.DIMS), (Sort.INT, Sort.SCALAR)}
NUMERIC_SORTS = frozenset({Sort.INT, Sort.DIM, Sort.SCALAR})
LIST_SORTS = frozenset({Sort.INTS, Sort.DIMS})


def fits(actual: Sort, expected: Sort) -> bool:
    """May an expression of sort ``actual`` stand where ``expected`` is required?"""
    return actual == expected or (actual, expected) in _SUBSORTS


class EvalError(Exception):
    """A function is undefined on its arguments (the guard fails, the rewrite does not apply)."""


class SymbolicSize(EvalError):
    """A number was needed where a symbolic size stands: defined once the size is known."""


@dataclass(frozen=True)
class TensorInfo:
    """What rule functions may know about a tensor: its type, and its value if a splat."""

    type: TensorType
    const: int | float | bool | None = None


@dataclass(frozen=True)
class AttrFn:
    """An attribute function: parameter sorts, result sort and meaning.

    ``result_like`` names a parameter whose sort the result takes (list functions work on ints
    and on dims alike).
    """

    name: str
    params: tuple[Sort, ...]
    result: Sort
    impl: Callable[..., Any]
    doc: str
    result_like: int | None = None

    def result_sort(self, arg_sorts: Sequence[Sort]) -> Sort:
        if self.result_like is None:
            return self.result
        s = arg_sorts[self.result_like]
        if self.result in LIST_SORTS:
            return s  # take, remove, cat keep a list of ints a list of ints
        return Sort.INT if s is Sort.INTS else Sort.DIM  # at: one entry


def _perm(p: Sequence[int]) -> tuple[int, ...]:
    if sorted(p) != list(range(len(p))):
        raise EvalError(f"{list(p)} is not a permutation")
    return tuple(p)


def _index(seq: Sequence[Any], i: Any) -> Any:
    i = as_int(i)
    if not 0 <= i < len(seq):
        raise EvalError(f"index {i} out of range for {list(seq)}")
    return seq[i]


def as_int(v: Any) -> int:
    """An int from an int or a constant dim; EvalError for a symbolic dim."""
    if isinstance(v, Dim):
        c = v.const
        if c is None:
            raise SymbolicSize(f"{v} is not a constant")
        return c
    return int(v)


def _compose(p: Sequence[int], q: Sequence[int]) -> tuple[int, ...]:
    p, q = _perm(p), _perm(q)
    if len(p) != len(q):
        raise EvalError("permutations of different lengths")
    return tuple(p[i] for i in q)


def _inverse(p: Sequence[int]) -> tuple[int, ...]:
    p = _perm(p)
    inv = [0] * len(p)
    for i, v in enumerate(p):
        inv[v] = i
    return tuple(inv)


def _remove(seq: Sequence[Any], idx: Sequence[int]) -> tuple[Any, ...]:
    drop = {as_int(i) for i in idx}
    if any(not 0 <= i < len(seq) for i in drop):
        raise EvalError(f"positions {sorted(drop)} out of range for {list(seq)}")
    return tuple(v for i, v in enumerate(seq) if i not in drop)


def _reduced_perm(p: Sequence[int], axes: Sequence[int]) -> tuple[int, ...]:
    """The permutation left when result axes ``axes`` of ``transpose(x, perm=p)`` are removed.

    reduce(transpose(x, p), axes) == transpose(reduce(x, take(p, axes)), reduced_perm(p, axes)).
    """
    p = _perm(p)
    gone = {p[as_int(a)] for a in axes}
    kept = [v for v in p if v not in gone]
    rank = {v: i for i, v in enumerate(sorted(kept))}
    return tuple(rank[v] for v in kept)


def _value(x: TensorInfo) -> int | float | bool:
    if x.const is None:
        raise EvalError("not a constant")
    return x.const


FUNCTIONS: dict[str, AttrFn] = {f.name: f for f in (
    AttrFn("shape", (Sort.TENSOR,), Sort.DIMS, lambda x: x.type.dims, "the dims of x"),
    AttrFn("rank", (Sort.TENSOR,), Sort.INT, lambda x: x.type.rank, "the number of axes of x"),
    AttrFn("dim", (Sort.TENSOR, Sort.INT), Sort.DIM, lambda x, i: _index(x.type.dims, i),
           "the size of axis i of x"),
    AttrFn("numel", (Sort.TENSOR,), Sort.DIM, lambda x: dims_product(x.type.dims),
           "the number of elements of x"),
    AttrFn("dtype", (Sort.TENSOR,), Sort.DTYPE, lambda x: x.type.dtype, "the dtype of x"),
    AttrFn("value", (Sort.TENSOR,), Sort.SCALAR, _value,
           "the value of a splat constant (the guard fails for other tensors)"),
    AttrFn("is_float", (Sort.TENSOR,), Sort.BOOL, lambda x: x.type.dtype.is_float,
           "x has a floating-point dtype"),
    AttrFn("is_int", (Sort.TENSOR,), Sort.BOOL, lambda x: x.type.dtype.is_int,
           "x has an integer dtype, signed or unsigned (i8..i64, u8..u64; not i1)"),
    AttrFn("is_signed", (Sort.TENSOR,), Sort.BOOL,
           lambda x: x.type.dtype.is_float or x.type.dtype.is_signed,
           "x's dtype has negative values (a float or a signed integer): -x and |x| are "
           "what arithmetic says, modulo 2^n"),
    AttrFn("is_unsigned", (Sort.TENSOR,), Sort.BOOL, lambda x: x.type.dtype.is_unsigned,
           "x has an unsigned integer dtype (u8..u64)"),
    AttrFn("is_bool", (Sort.TENSOR,), Sort.BOOL, lambda x: x.type.dtype is DType.I1,
           "x has dtype i1"),
    AttrFn("is_const", (Sort.TENSOR,), Sort.BOOL, lambda x: x.const is not None,
           "x is a splat constant"),
    AttrFn("is_identity", (Sort.INTS,), Sort.BOOL,
           lambda p: tuple(p) == tuple(range(len(p))), "p is [0, 1, ..., n-1]"),
    AttrFn("is_sorted", (Sort.INTS,), Sort.BOOL, lambda a: list(a) == sorted(a),
           "a is in increasing order"),
    AttrFn("compose", (Sort.INTS, Sort.INTS), Sort.INTS, _compose,
           "the permutation of transpose(transpose(x, perm=p), perm=q): p[q[i]]"),
    AttrFn("inverse", (Sort.INTS,), Sort.INTS, _inverse, "the inverse permutation of p"),
    AttrFn("take", (Sort.DIMS, Sort.INTS), Sort.DIMS,
           lambda s, idx: tuple(_index(s, i) for i in idx), "[s[i] for i in idx]",
           result_like=0),
    AttrFn("remove", (Sort.DIMS, Sort.INTS), Sort.DIMS, _remove,
           "s without the entries at positions idx", result_like=0),
    AttrFn("cat", (Sort.DIMS, Sort.DIMS), Sort.DIMS, lambda a, b: tuple(a) + tuple(b),
           "the entries of a followed by those of b", result_like=0),
    AttrFn("at", (Sort.DIMS, Sort.INT), Sort.DIM, _index, "s[i]", result_like=0),
    AttrFn("len", (Sort.DIMS,), Sort.INT, len, "the number of entries of s"),
    AttrFn("sort", (Sort.INTS,), Sort.INTS, lambda a: tuple(sorted(a)), "a in increasing order"),
    AttrFn("range", (Sort.INT,), Sort.INTS, lambda n: tuple(range(as_int(n))), "[0, ..., n-1]"),
    AttrFn("zeros", (Sort.INT,), Sort.INTS, lambda n: (0,) * as_int(n), "[0, ..., 0], n entries"),
    AttrFn("reduced_perm", (Sort.INTS, Sort.INTS), Sort.INTS, _reduced_perm,
           "the permutation of the axes left after reducing axes of transpose(x, perm=p)"),
)}


@dataclass(frozen=True)
class PrecondFn:
    """An elementwise predicate usable in assumes(...): holds where every element satisfies it."""

    name: str
    impl: Callable[[np.ndarray], np.ndarray]
    doc: str


PRECONDITIONS: dict[str, PrecondFn] = {p.name: p for p in (
    PrecondFn("finite", np.isfinite, "no element is NaN or infinite"),
    PrecondFn("not_nan", lambda a: ~np.isnan(a), "no element is NaN"),
)}


_COMPARISONS: dict[str, Callable[[Any, Any], Any]] = {
    "==": operator.eq, "!=": operator.ne, "<": operator.lt, "<=": operator.le,
    ">": operator.gt, ">=": operator.ge}


def compare(op: str, a: Any, b: Any) -> bool:
    """``a op b`` for ints, dims, scalars, lists and dtypes; EvalError where undecidable."""
    if isinstance(a, tuple) or isinstance(b, tuple):
        if op not in ("==", "!="):
            raise EvalError(f"lists can only be compared with == and !=, not {op}")
        same = _as_list(a) == _as_list(b)
        return same if op == "==" else not same
    if isinstance(a, Dim) or isinstance(b, Dim):
        da, db = Dim.of(a), Dim.of(b)
        if op in ("==", "!="):
            return (da == db) == (op == "==")
        diff = (da - db).const
        if diff is None:
            raise EvalError(f"cannot order {da} and {db}")
        a, b = diff, 0
    if (isinstance(a, float) and math.isnan(a)) or (isinstance(b, float) and math.isnan(b)):
        return op == "!="
    return bool(_COMPARISONS[op](a, b))


def _as_list(v: Any) -> tuple[Any, ...]:
    return tuple(Dim.of(x) if isinstance(x, int | Dim) and not isinstance(x, bool) else x
                 for x in v)
