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

import ml_dtypes
import numpy as np


class DType(enum.Enum):
    """The element types of TCP tensors (integers of both signednesses, i1 for booleans).

    f16 and bf16 are storage types: every op on them computes in f32 and rounds its result to
    the storage type (round to nearest even), so they share f32's code paths and accuracy.
    Unsigned integers wrap modulo 2**n and compare, divide and convert as unsigned numbers.
    """

    F16 = "f16"
    BF16 = "bf16"
    F32 = "f32"
    F64 = "f64"
    I8 = "i8"
    I16 = "i16"
    I32 = "i32"
    I64 = "i64"
    U8 = "u8"
    U16 = "u16"
    U32 = "u32"
    U64 = "u64"
    I1 = "i1"

    @property
    def np_dtype(self) -> np.dtype[Any]:
        """The NumPy dtype that stores this element type."""
        return _NP[self]

    @property
    def is_float(self) -> bool:
        return self in FLOATS

    @property
    def is_int(self) -> bool:
        """True for the integer types that support arithmetic (signed and unsigned, not i1)."""
        return self in INTS

    @property
    def is_signed(self) -> bool:
        """True for the two's complement integer types i8..i64."""
        return self in SIGNED

    @property
    def is_unsigned(self) -> bool:
        """True for u8..u64 (i1 is a boolean, not an unsigned integer)."""
        return self in UNSIGNED

    @property
    def is_storage_float(self) -> bool:
        """True for f16 and bf16, which ops compute in f32 and round to storage."""
        return self in STORAGE_FLOATS

    @property
    def compute(self) -> DType:
        """The dtype ops compute in: f32 for f16 and bf16, the dtype itself otherwise."""
        return DType.F32 if self in STORAGE_FLOATS else self

    @property
    def is_bool(self) -> bool:
        return self is DType.I1

    @property
    def bits(self) -> int:
        """Width in bits (1 for i1)."""
        return 1 if self is DType.I1 else 8 * self.itemsize

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
        for d, stored in _NP.items():
            if stored == dt:
                return d
        return None


_NP: dict[DType, np.dtype[Any]] = {
    DType.F16: np.dtype(np.float16), DType.BF16: np.dtype(ml_dtypes.bfloat16),
    DType.F32: np.dtype(np.float32), DType.F64: np.dtype(np.float64),
    DType.I8: np.dtype(np.int8), DType.I16: np.dtype(np.int16),
    DType.I32: np.dtype(np.int32), DType.I64: np.dtype(np.int64),
    DType.U8: np.dtype(np.uint8), DType.U16: np.dtype(np.uint16),
    DType.U32: np.dtype(np.uint32), DType.U64: np.dtype(np.uint64), DType.I1: np.dtype(bool)}

STORAGE_FLOATS = frozenset({DType.F16, DType.BF16})
FLOATS = STORAGE_FLOATS | {DType.F32, DType.F64}
SIGNED = frozenset({DType.I8, DType.I16, DType.I32, DType.I64})
UNSIGNED = frozenset({DType.U8, DType.U16, DType.U32, DType.U64})
INTS = SIGNED | UNSIGNED
NUMERIC = FLOATS | INTS
ALL_DTYPES = NUMERIC | {DType.I1}


def is_float_array(a: np.ndarray | np.dtype[Any]) -> bool:
    """True for arrays (or dtypes) of a float type, bf16 included (whose NumPy kind is 'V')."""
    dt = a if isinstance(a, np.dtype) else a.dtype
    return dt.kind == "f" or dt == _NP[DType.BF16]


def finfo(dt: DType | np.dtype[Any]) -> Any:
    """Machine limits of a float dtype, bf16 included (np.finfo does not know it)."""
    np_dt = dt.np_dtype if isinstance(dt, DType) else dt
    return ml_dtypes.finfo(np_dt)


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
