"""ONNX's QuantizeLinear and DequantizeLinear on the integer types TCP has (8 and 16 bits,
signed and unsigned; the 2- and 4-bit and float8 types are refused where their tensors are
read): per tensor, per axis and blocked scales and zero points, as onnx.reference computes
them. Quantize: x / scale rounded half to even, plus the zero point, saturated to the type;
Dequantize: (x - zero point) * scale, in f32, rounded to the scale's type.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from tcp_rules.frontends.onnx.context import Context, Tensor, converts, normalize_axis, onnx_dtype
from tcp_rules.ir import Value
from tcp_rules.types import DType


def _spread(ctx: Context, v: Value, x: Value, axis: int, block: int, what: str) -> Value:
    """A scale or zero point broadcast to x's shape: one value, one per index along ``axis``,
    or (``block`` > 0) one per block of that many along it."""
    dims = list(x.type.dims)
    if all(d.const == 1 for d in v.type.dims):
        return ctx.op("broadcast", ctx.op("reshape", v, shape=[]), shape=dims, dims=[])
    axis = normalize_axis(ctx, axis, x.type.rank)  # read only where the scale has an axis
    if not block:
        if v.type.rank != 1 or v.type.dims[0] != dims[axis]:
            raise ctx.error(f"the {what} {v.type} must be one value or one per index along "
                            f"axis {axis} of {x.type}")
        return ctx.op("broadcast", v, shape=dims, dims=[axis])
    n = dims[axis].const
    if block < 0 or n is None or v.type.rank != x.type.rank or any(
            a != b for i, (a, b) in enumerate(zip(v.type.dims, dims, strict=True)) if i != axis
    ) or v.type.dims[axis].const != math.ceil(n / block):
        raise ctx.error(f"the {what} {v.type} does not block {x.type} by {block} along axis "
                        f"{axis}")
    index = ctx.as_value(np.arange(n, dtype=np.int64) // block, f"{what}_blocks")
    return ctx.op("gather", v, index, axis=axis)


def _layout(ctx: Context, x: Value) -> tuple[int, int]:
    """(axis, block_size) as the node gives them."""
    return int(ctx.attr("axis", 1)), int(ctx.attr("block_size", 0) or 0)


@converts("QuantizeLinear")
def quantize(ctx: Context) -> Sequence[Tensor]:
    """saturate(round_half_even(x / scale) + zero_point) in the zero point's type (else
    output_dtype's, else u8); the division in ``precision``'s type where given."""
    x, scale = ctx.value(0), ctx.value(1)
    axis, block = _layout(ctx, x)
    zp = ctx.value(2) if ctx.has(2) else None
    out = zp.type.dtype if zp is not None else (
        onnx_dtype(ctx.attr("output_dtype"), "output_dtype") if ctx.attr("output_dtype")
        else DType.U8)
    if not out.is_int or out.itemsize > 2:
        raise ctx.error(f"QuantizeLinear to {out} is not supported (8- and 16-bit integers)")
    prec = ctx.attr("precision")
    wide = onnx_dtype(prec, "precision") if prec else (
        scale.type.dtype if scale.type.dtype.itemsize >= x.type.dtype.itemsize else x.type.dtype)
    s = ctx.cast(_spread(ctx, scale, x, axis, block, "scale"), wide)
    q = ctx.op("round_even", ctx.op("div", ctx.cast(x, wide), s))
    q = ctx.cast(q, DType.F64 if wide is DType.F64 else DType.F32)
    if zp is not None:  # integers below 2**24 and a zero point: the sum is exact in f32
        q = ctx.op("add", q, ctx.cast(_spread(ctx, zp, x, axis, block, "zero point"),
                                      q.type.dtype))
    info = np.iinfo(out.np_dtype)
    return [ctx.cast(ctx.op("clamp", q, min=float(info.min), max=float(info.max)), out)]


@converts("DequantizeLinear")
def dequantize(ctx: Context) -> Sequence[Tensor]:
    """(x - zero_point) * scale computed in f32, in the scale's type (or output_dtype's)."""
    x, scale = ctx.value(0), ctx.value(1)
    axis, block = _layout(ctx, x)
    dx = ctx.cast(x, DType.F32)
    if ctx.has(2):
        zp = ctx.value(2)
        if zp.type.dtype is not x.type.dtype:
            raise ctx.error(f"the zero point's type {zp.type.dtype} is not x's {x.type.dtype}")
        dx = ctx.op("sub", dx, ctx.cast(_spread(ctx, zp, x, axis, block, "zero point"),
                                       DType.F32))
    y = ctx.op("mul", dx, ctx.cast(_spread(ctx, scale, x, axis, block, "scale"), DType.F32))
    out = onnx_dtype(ctx.attr("output_dtype"), "output_dtype") if ctx.attr("output_dtype") \
        else scale.type.dtype
    return [ctx.cast(y, out)]
