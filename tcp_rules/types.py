"""Element types, symbolic dimensions and tensor types.

A dimension is a polynomial with integer coefficients over named symbols (``N``, ``2*N``,
``N*784``, ``N+4``). Equality of dims is polynomial identity, which is exact and decidable, so
shape rules can say "provably equal", "provably different" or "unknown until run time".
"""

from __future__ import annotations

import enum
import functools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from itertools import product as cartesian
from typing import Any

import numpy as np


class DType(enum.Enum):
    """The element types of TCP tensors (signless integers, i1 for booleans)."""

    F32 = "f32"
    F64 = "f64"
    I32 = "i32"
    I64 = "i64"
    I1 = "i1"

    @property
    def np_dtype(self) -> np.dtype[Any]:
        """The NumPy dtype that stores this element type."""
        return np.dtype(_NP[self])

    @property
    def is_float(self) -> bool:
        return self in (DType.F32, DType.F64)

    @property
    def is_int(self) -> bool:
        """True for the integer types that support arithmetic (i32, i64)."""
        return self in (DType.I32, DType.I64)

    @property
    def is_bool(self) -> bool:
        return self is DType.I1

    @property
    def itemsize(self) -> int:
        return self.np_dtype.itemsize

    def __str__(self) -> str:
        return self.value

    @staticmethod
    def parse(name: str) -> DType:
        """The dtype spelled ``name``; ValueError for an unknown spelling."""
        try:
            return DType(name)
        except ValueError:
            known = ", ".join(d.value for d in DType)
            raise ValueError(f"unknown dtype '{name}' (known: {known})") from None

    @staticmethod
    def from_numpy(dt: np.dtype) -> DType | None:
        """The dtype stored as ``dt``, or None if TCP has no such element type."""
        for d, name in _NP.items():
            if np.dtype(name) == dt:
                return d
        return None


_NP = {DType.F32: "float32", DType.F64: "float64", DType.I32: "int32", DType.I64: "int64",
       DType.I1: "bool"}

FLOATS = frozenset({DType.F32, DType.F64})
INTS = frozenset({DType.I32, DType.I64})
NUMERIC = FLOATS | INTS
ALL_DTYPES = NUMERIC | {DType.I1}


Monomial = tuple[str, ...]  # sorted symbol names, repeated for powers


@dataclass(frozen=True)
class Dim:
    """A dimension: a polynomial sum of ``coeff * sym1 * sym2 ...`` terms, kept normalized."""

    terms: tuple[tuple[Monomial, int], ...]

    @staticmethod
    def of(value: int | str | Dim) -> Dim:
        """A dim from an integer, a symbol name or a dim."""
        if isinstance(value, Dim):
            return value
        return _dim_of(value if isinstance(value, str) else int(value))

    @staticmethod
    def _norm(terms: Mapping[Monomial, int]) -> Dim:
        return Dim(tuple(sorted((m, c) for m, c in terms.items() if c != 0)))

    @property
    def const(self) -> int | None:
        """The integer value if the dim has no symbols."""
        if not self.terms:
            return 0
        if len(self.terms) == 1 and self.terms[0][0] == ():
            return self.terms[0][1]
        return None

    @property
    def symbol(self) -> str | None:
        """The symbol name if the dim is exactly one symbol."""
        if len(self.terms) == 1 and self.terms[0][1] == 1 and len(self.terms[0][0]) == 1:
            return self.terms[0][0][0]
        return None

    @property
    def symbols(self) -> frozenset[str]:
        return frozenset(s for m, _ in self.terms for s in m)

    def __add__(self, other: Dim | int) -> Dim:
        acc = dict(self.terms)
        for m, c in Dim.of(other).terms:
            acc[m] = acc.get(m, 0) + c
        return Dim._norm(acc)

    def __sub__(self, other: Dim | int) -> Dim:
        return self + Dim.of(other) * -1

    def __mul__(self, other: Dim | int) -> Dim:
        acc: dict[Monomial, int] = {}
        for (m1, c1), (m2, c2) in cartesian(self.terms, Dim.of(other).terms):
            m = tuple(sorted(m1 + m2))
            acc[m] = acc.get(m, 0) + c1 * c2
        return Dim._norm(acc)

    def subst(self, env: Mapping[str, int | Dim]) -> Dim:
        """Replace bound symbols by their values (ints or dims)."""
        total = Dim.of(0)
        for m, c in self.terms:
            term = Dim.of(c)
            for s in m:
                term = term * (Dim.of(env[s]) if s in env else Dim.of(s))
            total = total + term
        return total

    def __str__(self) -> str:
        return _dim_text(self.terms)

    def _text(self) -> str:
        if not self.terms:
            return "0"
        parts = []
        for m, c in sorted(self.terms, key=lambda t: (-len(t[0]), t[0])):
            factors = list(m)
            if c != 1 or not factors:
                factors.insert(0, str(c))
            parts.append("*".join(factors))
        return " + ".join(parts).replace("+ -", "- ")

    def __repr__(self) -> str:
        return f"Dim({self})"


@functools.lru_cache(maxsize=4096)
def _dim_of(value: int | str) -> Dim:
    if isinstance(value, str):
        return Dim((((value,), 1),))
    return Dim._norm({(): value})


@functools.lru_cache(maxsize=4096)
def _dim_text(terms: tuple[tuple[Monomial, int], ...]) -> str:
    return Dim(terms)._text()


def dims_product(dims: Iterable[Dim]) -> Dim:
    """The number of elements of a shape, as a dim."""
    total = Dim.of(1)
    for d in dims:
        total = total * d
    return total


@dataclass(frozen=True)
class TensorType:
    """A ranked tensor type: element type and one dim per axis."""

    dtype: DType
    dims: tuple[Dim, ...]

    @staticmethod
    def of(dtype: DType | str, dims: Iterable[int | str | Dim]) -> TensorType:
        dt = dtype if isinstance(dtype, DType) else DType.parse(dtype)
        return TensorType(dt, tuple(Dim.of(d) for d in dims))

    @property
    def rank(self) -> int:
        return len(self.dims)

    @property
    def shape(self) -> tuple[int, ...] | None:
        """The concrete shape, or None while any dim is symbolic."""
        out = tuple(d.const for d in self.dims)
        return None if any(c is None for c in out) else tuple(c for c in out if c is not None)

    @property
    def symbols(self) -> frozenset[str]:
        return frozenset().union(*(d.symbols for d in self.dims))

    def with_dtype(self, dtype: DType) -> TensorType:
        return TensorType(dtype, self.dims)

    def subst(self, env: Mapping[str, int | Dim]) -> TensorType:
        return TensorType(self.dtype, tuple(d.subst(env) for d in self.dims))

    def __str__(self) -> str:
        return _type_text(self)


@functools.lru_cache(maxsize=4096)
def _type_text(t: TensorType) -> str:
    return f"{t.dtype}[{', '.join(str(d) for d in t.dims)}]"


def format_dims(dims: Iterable[Dim]) -> str:
    """``[N, 128]`` as written in programs."""
    return "[" + ", ".join(str(d) for d in dims) + "]"


@dataclass(frozen=True, eq=False)
class DenseData:
    """The values of a dense constant: an immutable array compared and hashed by value."""

    array: np.ndarray

    def __post_init__(self) -> None:
        self.array.setflags(write=False)

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, DenseData) and self.array.dtype == other.array.dtype
                and self.array.shape == other.array.shape
                and self.array.tobytes() == other.array.tobytes())

    def __hash__(self) -> int:
        return hash((self.array.dtype.str, self.array.shape, self.array.tobytes()))

    def __repr__(self) -> str:
        return f"DenseData({self.array.tolist()!r})"
