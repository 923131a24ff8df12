"""The ids the encoding hands out (symbolic dims, dense constants, scalars) and how a scalar is
represented in the e-graph: the i64 bits of its float64 value, so 0 and 0.0 are one constant;
integers beyond 2**53, which float64 cannot hold, get codes of their own."""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

from tcp_rules.types import DenseData, Dim, DType

MAX_EXACT_INT = 2**53  # integers beyond this lose bits as float64: Tables.scalar numbers them
# Codes of such integers (u64 above 2**53, large i64): signalling-NaN bit patterns, which no
# literal produces (scalar_bits makes every NaN the quiet one), numbered from here.
BIG_INT_BASE = 0x7FF0_0000_0001_0000


def scalar_bits(v: int | float | bool) -> int:
    """The identity of a scalar in the e-graph: the bits of its float64 value."""
    if isinstance(v, int) and not isinstance(v, bool) and abs(v) > MAX_EXACT_INT:
        raise ValueError(f"integer {v} is not exact as a float64: use Tables.scalar")
    f = float(v)
    if f != f:  # one NaN: payloads carry no meaning here, and NONE_BOUND must stay unreachable
        f = float("nan")
    return int(struct.unpack("<q", struct.pack("<d", f))[0])


@dataclass(frozen=True)
class BigInt:
    """A scalar read back from the e-graph that is an integer beyond float64's exact range."""

    value: int


def bits_scalar(bits: int | BigInt, dtype: DType) -> int | float | bool:
    """The scalar a bit pattern stands for, as the program would write it for ``dtype``."""
    if isinstance(bits, BigInt):
        return bits.value
    f = struct.unpack("<d", struct.pack("<q", bits))[0]
    if dtype.is_float:
        return float(f)
    return bool(f) if dtype is DType.I1 else int(f)


# An absent clamp bound (clamp(x) without max=): a NaN payload no literal can produce.
NONE_BOUND = 0x7FF0_0000_0000_0BAD


@dataclass
class Tables:
    """Ids the encoding hands out: symbolic dims, dense constants, scalars used in guards."""

    dims: dict[Dim, int] = field(default_factory=dict)
    dense: list[DenseData] = field(default_factory=list)
    scalars: set[int] = field(default_factory=set)
    big: list[int] = field(default_factory=list)  # integers beyond 2**53, by code

    def dim_id(self, d: Dim) -> int:
        """A constant is itself; a symbolic dim gets a negative id."""
        c = d.const
        if c is not None and c >= 0:
            return c
        if d not in self.dims:
            self.dims[d] = -1 - len(self.dims)
        return self.dims[d]

    def dim_of(self, i: int) -> Dim:
        if i >= 0:
            return Dim.of(i)
        for d, j in self.dims.items():
            if j == i:
                return d
        raise KeyError(i)

    def dense_id(self, data: DenseData) -> int:
        if data not in self.dense:
            self.dense.append(data)
        return self.dense.index(data)

    def scalar(self, v: int | float | bool) -> int:
        if isinstance(v, int) and not isinstance(v, bool) and abs(v) > MAX_EXACT_INT:
            if v not in self.big:  # a code of its own: float64 would merge its neighbours
                self.big.append(v)
            return BIG_INT_BASE + self.big.index(v)
        bits = scalar_bits(v)
        self.scalars.add(bits)
        return bits

    def scalar_read(self, bits: int) -> int | BigInt:
        """Bits read back from the e-graph; a big integer's code as the integer."""
        if BIG_INT_BASE <= bits < BIG_INT_BASE + len(self.big):
            return BigInt(self.big[bits - BIG_INT_BASE])
        return bits

    def scalar_rows(self) -> str:
        rows = []
        for b in sorted(self.scalars):
            f = struct.unpack("<d", struct.pack("<q", b))[0]
            if f == f and abs(f) != float("inf"):  # guards compare finite values only
                rows.append(f"(set (scalar {b}) {f64_text(f)})")
        return "\n".join(rows) + "\n" if rows else ""


def f64_text(f: float) -> str:
    """``f`` as egglog writes an f64 literal (always with a point or an exponent)."""
    text = repr(float(f))
    return text if ("." in text or "e" in text or "inf" in text or "nan" in text) else text + ".0"
