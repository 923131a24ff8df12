"""MLIR types and attribute values read from the generic tree: element types, shaped types,
integers and arrays, ``dense<...>`` literals (hexadecimal bit patterns included).

Shared by every MLIR dialect importer; each raises a positioned TcpError on what it cannot read.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from tcp_rules.diagnostics import Span, TcpError
from tcp_rules.frontends.mlir.syntax import (
    Elem,
    Group,
    Number,
    Punct,
    Shaped,
    Str,
    Word,
)
from tcp_rules.frontends.mlir.views import render
from tcp_rules.types import DType

# MLIR element type -> TCP dtype. MLIR integers are signless: iN reads as TCP's signed iN (the
# ops that care, division and casts, say how they treat the sign); siN and uiN are explicit.
ELEMENT_TYPES = {
    "f16": DType.F16, "bf16": DType.BF16, "f32": DType.F32, "f64": DType.F64,
    "i1": DType.I1, "i8": DType.I8, "i16": DType.I16, "i32": DType.I32, "i64": DType.I64,
    "si8": DType.I8, "si16": DType.I16, "si32": DType.I32, "si64": DType.I64,
    "ui8": DType.U8, "ui16": DType.U16, "ui32": DType.U32, "ui64": DType.U64,
}
# TCP dtype -> the MLIR element type written on export
MLIR_ELEMENT = {DType.F16: "f16", DType.BF16: "bf16", DType.F32: "f32", DType.F64: "f64",
                DType.I1: "i1", DType.I8: "i8", DType.I16: "i16", DType.I32: "i32",
                DType.I64: "i64", DType.U8: "ui8", DType.U16: "ui16", DType.U32: "ui32",
                DType.U64: "ui64"}


def error(message: str, span: Span | None, hint: str | None = None) -> TcpError:
    """A positioned import error."""
    return TcpError.at(message, span, hint=hint, stage="import")


def element_type(e: Elem | None, span: Span) -> DType:
    """The TCP dtype of an MLIR element type (``f32``, ``i1``, ``ui8``)."""
    if isinstance(e, Word) and e.args is None and e.text in ELEMENT_TYPES:
        return ELEMENT_TYPES[e.text]
    what = render(e) if e is not None else "nothing"
    raise error(f"element type {what} is not supported (supported: "
                f"{', '.join(ELEMENT_TYPES)})", e.span if e is not None else span)


def shaped(e: Elem | None, span: Span, what: str = "type") -> tuple[DType, tuple[int | None, ...]]:
    """A ranked tensor type's dtype and dims (None for ``?``)."""
    if not isinstance(e, Shaped) or e.kind != "tensor":
        found = render(e) if e is not None else "nothing"
        raise error(f"expected a tensor type as the {what}, found {found}",
                    e.span if e is not None else span)
    if e.dims is None:
        raise error(f"unranked tensor type {render(e)}: tcp-rules needs the rank", e.span)
    if e.extra:
        raise error(f"tensor type {render(e)} has an encoding, which tcp-rules does not read",
                    e.span)
    return element_type(e.elem, e.span), e.dims


def integer(e: Elem | Sequence[Elem], span: Span, what: str) -> int:
    """An integer attribute: ``3``, or ``3 : i64`` / ``3 : index``."""
    items = [e] if not isinstance(e, Sequence) else list(e)
    if items and isinstance(items[0], Number) and isinstance(items[0].value, int) \
            and not items[0].is_hex:
        return items[0].value
    raise error(f"{what} must be an integer, found {render(items) or 'nothing'}",
                items[0].span if items else span)


def number(items: Sequence[Elem], span: Span, what: str) -> int | float:
    """A numeric attribute with an optional type: ``0.0 : f32``, ``0x7F800000 : f32``, ``2``."""
    if not items or not isinstance(items[0], Number):
        raise error(f"{what} must be a number, found {render(items) or 'nothing'}",
                    items[0].span if items else span)
    n = items[0]
    typ = items[2] if len(items) >= 3 and isinstance(items[1], Punct) else None
    if n.is_hex and isinstance(typ, Word):
        return _from_bits(int(n.value), element_type(typ, n.span), n.span)
    return n.value


def int_array(e: Elem | Sequence[Elem], span: Span, what: str) -> tuple[int, ...]:
    """``[1, 0]`` or ``array<i64: 1, 0>`` as integers."""
    items = [e] if not isinstance(e, Sequence) else list(e)
    first = items[0] if items else None
    if isinstance(first, Group) and first.open == "[":
        parts = [p for p in first.items if not (isinstance(p, Punct) and p.text == ",")]
        return tuple(integer(p, first.span, what) for p in parts)
    if isinstance(first, Word) and first.text == "array" and first.args is not None:
        parts = [p for p in first.args[2:] if not (isinstance(p, Punct) and p.text == ",")]
        return tuple(integer(p, first.span, what) for p in parts)
    raise error(f"{what} must be an array of integers like [0, 1], found "
                f"{render(items) or 'nothing'}", first.span if first else span)


def _from_bits(bits: int, dtype: DType, span: Span) -> int | float | bool:
    """The value whose bit pattern is ``bits`` (MLIR writes NaNs and infinities as hex)."""
    width = dtype.bits
    if dtype is DType.I1:
        return bool(bits & 1)
    if bits >= 1 << max(width, 8):
        raise error(f"hexadecimal {bits:#x} does not fit {dtype}", span)
    raw = np.array([bits], dtype=f"u{max(dtype.itemsize, 1)}")
    value = raw.view(dtype.np_dtype)[0]
    return float(value) if dtype.is_float else int(value)


def dense(e: Elem, dtype: DType, dims: Sequence[int], span: Span) -> np.ndarray:
    """The array a ``dense<...>`` attribute holds, of shape ``dims``, in ``dtype`` (floats in
    f64, as written); a splat is one value repeated; a hexadecimal string holds the raw
    little-endian data."""
    if not (isinstance(e, Word) and e.text == "dense" and e.args is not None):
        raise error(f"expected a dense<...> literal, found {render(e)}", e.span)
    args = list(e.args)
    if len(args) == 1 and isinstance(args[0], Str):
        return _hex_blob(args[0].value, dtype, dims, args[0].span)
    if len(args) != 1:
        raise error(f"cannot read {render(e)}", e.span)
    values = _nested(args[0], dtype)
    # floats parsed as written (f64), as the program text's constants are: a value that is not
    # exact in the element type rounds where it is used, the same on every path
    store = np.float64 if dtype.is_float else dtype.np_dtype
    try:
        arr = np.array(values, dtype=store)
    except OverflowError:
        raise error(f"a value of {render(e)} does not fit {dtype}", e.span) from None
    except (ValueError, TypeError):
        raise error(f"dense literal {render(e)} is not a rectangular array", e.span) from None
    if arr.ndim == 0 or (arr.size == 1 and tuple(arr.shape) != tuple(dims)):
        return np.full(tuple(dims), arr.reshape(()), dtype=store)
    if tuple(arr.shape) != tuple(dims):
        raise error(f"dense literal has shape {list(arr.shape)}, its type says {list(dims)}",
                    e.span)
    return arr


def _nested(e: Elem, dtype: DType) -> object:
    if isinstance(e, Group) and e.open == "[":
        return [_nested(p, dtype) for p in e.items
                if not (isinstance(p, Punct) and p.text == ",")]
    if isinstance(e, Number):
        return _from_bits(int(e.value), dtype, e.span) if e.is_hex else e.value
    if isinstance(e, Word) and e.text in ("true", "false"):
        return e.text == "true"
    raise error(f"cannot read {render(e)} as an element of a dense literal", e.span)


def _hex_blob(text: str, dtype: DType, dims: Sequence[int], span: Span) -> np.ndarray:
    if not text.lower().startswith("0x"):
        raise error(f'dense string "{text[:20]}" is not hexadecimal data', span)
    try:
        raw = bytes.fromhex(text[2:])
    except ValueError:
        raise error("dense hexadecimal data is malformed", span) from None
    n = int(np.prod(dims)) if dims else 1
    arr = np.frombuffer(raw, dtype=dtype.np_dtype.newbyteorder("<"))
    if arr.size == 1:
        return np.full(tuple(dims), arr[0], dtype=dtype.np_dtype)
    if arr.size != n:
        raise error(f"dense data holds {arr.size} elements, its type {n}", span)
    return arr.reshape(tuple(dims)).astype(dtype.np_dtype)
