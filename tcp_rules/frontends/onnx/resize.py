"""ONNX's Resize (opsets 10 to 19) and Upsample (7 and 9). Resizing is separable, so each
resized axis is one pass: a gather along that axis of every output's n taps at a constant
index table [out, n], times a constant weight table [out, n], summed over the taps. Nearest
modes take the one chosen tap, a gather alone, exact for every type. The tables come from the
operator's formulas, evaluated at import in float64 as ONNX's reference evaluates them:
coordinate transformation, nearest rounding, the linear and cubic kernels (antialiased when
downsampling), exclude_outside, and edge padding as clamped indices. So the resized axes must
be static and scales, sizes and roi constant; other axes may be symbolic.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from tcp_rules.frontends.onnx.context import Context, Tensor, converts, normalize_axis
from tcp_rules.ir import Value
from tcp_rules.types import Dim, DType

COORDINATE_MODES = ("half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners",
                    "asymmetric", "tf_crop_and_resize", "tf_half_pixel_for_nn")
NEAREST_MODES = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil")


@dataclass(frozen=True)
class Mode:
    """A Resize node's interpolation settings."""

    kind: str  # nearest, linear or cubic
    coordinates: str
    nearest: str  # a NEAREST_MODES entry, or "simple" (before opset 11: floor, ceil when shrinking)
    cubic_a: float = -0.75
    exclude_outside: bool = False
    antialias: bool = False


@dataclass(frozen=True)
class Taps:
    """One axis's resize: output i is sum_t weight[i, t] * x[index[i, t]] (one tap for nearest,
    weight None), or ``fill`` where ``outside[i]`` (tf_crop_and_resize's extrapolation)."""

    index: np.ndarray
    weight: np.ndarray | None
    outside: np.ndarray | None


def source_coordinates(coordinates: str, out: int, size: int, scale: float,
                       roi: tuple[float, float]) -> tuple[np.ndarray, np.ndarray | None]:
    """Where each output position samples the input axis (in input pixels), and for
    tf_crop_and_resize which positions fall outside it. The output's length as the scale has
    it (``scale * size``) may differ from ``out``, as the operator's formulas distinguish."""
    y = np.arange(out, dtype=np.float64)
    length = scale * size
    if coordinates == "align_corners":
        return (np.zeros(out) if length == 1 else y * (size - 1) / (length - 1)), None
    if coordinates == "asymmetric":
        return y / scale, None
    if coordinates == "tf_half_pixel_for_nn":
        return (y + 0.5) / scale, None
    if coordinates == "pytorch_half_pixel":
        return (np.full(out, -0.5) if length == 1 else (y + 0.5) / scale - 0.5), None
    if coordinates == "half_pixel":
        return (y + 0.5) / scale - 0.5, None
    if coordinates == "half_pixel_symmetric":
        offset = size / 2 * (1 - out / length)
        return offset + (y + 0.5) / scale - 0.5, None
    assert coordinates == "tf_crop_and_resize"
    lo, hi = roi
    x = (np.full(out, (hi - lo) * (size - 1) / 2) if length == 1
         else y * (hi - lo) * (size - 1) / (length - 1)) + lo * (size - 1)
    return x, (x < 0) | (x > size - 1)


def _coefficients(mode: Mode, ratio: np.ndarray, scale: float) -> np.ndarray:
    """[out, n] weights of the n taps around each position, ``ratio`` its distance in (0, 1]
    past the tap left of it."""
    r = ratio[:, None]
    if mode.kind == "nearest":
        if mode.nearest == "simple":
            right = np.full(r.shape, scale < 1) | (r == 1)
        else:
            right = {"round_prefer_floor": r > 0.5, "round_prefer_ceil": r >= 0.5,
                     "floor": r == 1, "ceil": np.ones(r.shape, bool)}[mode.nearest]
        return np.concatenate([~right, right], axis=1).astype(np.float64)
    shrink = min(scale, 1.0) if mode.antialias else 1.0
    if mode.kind == "linear":
        start = math.floor(-1 / shrink) + 1 if mode.antialias else 0
        steps = np.arange(start, 2 - start)[None, :]
        w = np.clip(1 - np.abs((steps - r) * shrink), 0, 1)
    else:
        start = math.floor(-2 / shrink) + 1 if mode.antialias else -1
        steps = np.arange(start, 2 - start)[None, :]
        w = _cubic(np.abs((steps - r) * shrink), mode.cubic_a)
    return w / w.sum(axis=1, keepdims=True) if mode.antialias else w


def _cubic(x: np.ndarray, a: float) -> np.ndarray:
    """Keys' cubic convolution kernel with parameter ``a``, at distances ``x`` >= 0."""
    near = ((a + 2) * x - (a + 3)) * x * x + 1
    far = ((a * x - 5 * a) * x + 8 * a) * x - 4 * a
    return np.where(x <= 1, near, np.where(x < 2, far, 0.0))


def axis_taps(mode: Mode, size: int, out: int, scale: float,
              roi: tuple[float, float] = (0.0, 1.0)) -> Taps:
    """The index and weight tables that resize an axis of ``size`` to ``out``."""
    x, outside = source_coordinates(mode.coordinates, out, size, scale, roi)
    left = np.floor(x)
    # x's distance past the tap on its left, in (0, 1]: at a whole pixel that tap is the
    # pixel before it (ratio 1), as the reference has it
    ratio = np.where(x == left, 1.0, x - left)
    w = _coefficients(mode, ratio, scale)
    n = w.shape[1]
    # n (even) taps, n/2 each side of x; at a whole pixel, that pixel is the last of the left
    # half
    first = left - n // 2 + np.where(x == left, 0, 1)
    index = first.astype(np.int64)[:, None] + np.arange(n)[None, :]
    if mode.exclude_outside:
        w = np.where((index < 0) | (index >= size), 0.0, w)
        total = w.sum(axis=1, keepdims=True)
        w = w / np.where(total == 0, 1.0, total)
    index = np.clip(index, 0, size - 1)  # the edge padding
    if mode.kind == "nearest":
        return Taps(index[np.arange(out), w.argmax(axis=1)], None, outside)
    return Taps(index, w, outside)


def _first_form(ctx: Context) -> bool:
    """Whether the node is Upsample or Resize-10: X and scales only, asymmetric coordinates,
    nearest rounding down (up where the axis shrinks)."""
    assert ctx.node is not None
    return ctx.node.op_type == "Upsample" or ctx.opset < 11


def _mode(ctx: Context) -> Mode:
    kind = ctx.attr("mode", "nearest")
    if kind not in ("nearest", "linear", "cubic") or (kind == "cubic" and _first_form(ctx)):
        raise ctx.error(f"mode {kind!r} is not nearest, linear or cubic")
    if _first_form(ctx):
        return Mode(kind, "asymmetric", "simple")
    coordinates = ctx.attr("coordinate_transformation_mode", "half_pixel")
    if coordinates not in COORDINATE_MODES:
        raise ctx.error(f"coordinate_transformation_mode {coordinates!r} is not one of "
                        f"{', '.join(COORDINATE_MODES)}")
    nearest = ctx.attr("nearest_mode", "round_prefer_floor")
    if nearest not in NEAREST_MODES:
        raise ctx.error(f"nearest_mode {nearest!r} is not one of {', '.join(NEAREST_MODES)}")
    antialias = bool(ctx.attr("antialias", 0))
    if antialias and kind == "nearest":
        raise ctx.error("antialias needs mode linear or cubic")
    return Mode(kind, coordinates, nearest, float(ctx.attr("cubic_coeff_a", -0.75)),
                bool(ctx.attr("exclude_outside", 0)), antialias)


def _floats(ctx: Context, i: int, what: str) -> np.ndarray | None:
    """Input ``i`` as float64 constants, None where it is omitted or empty."""
    if not ctx.has(i):
        return None
    v = ctx.const(i, what)
    if v.dtype == object or v.dtype.kind not in "iuf":
        raise ctx.error(f"{what} must be numbers, got {v.dtype}")
    return v.astype(np.float64).ravel() if v.size else None


@dataclass(frozen=True)
class Step:
    """One axis to resize: from ``size`` to ``out`` at ``scale``, ``roi`` its crop window."""

    axis: int
    size: int
    out: int
    scale: float
    roi: tuple[float, float]


def _operands(ctx: Context, rank: int
              ) -> tuple[list[int], np.ndarray | None, list[Dim] | None, list[tuple[float, float]]]:
    """(axes, scales or None, sizes or None, each axis's roi window) as the node gives them;
    sizes may hold symbolic dims, as exporters compute them from the input's shape."""
    if _first_form(ctx):  # Upsample-7 has the scales as an attribute
        scales = _floats(ctx, 1, "scales") if ctx.has(1) else \
            np.asarray(ctx.attr("scales", []), np.float64)
        sizes, roi, axes = None, None, list(range(rank))
    else:
        roi, scales, sizes = _floats(ctx, 1, "roi"), _floats(ctx, 2, "scales"), None
        if ctx.has(3) and ctx.const(3, "sizes").size:
            sizes = ctx.dims(3, "sizes")
        given = ctx.attr("axes")
        axes = [normalize_axis(ctx, a, rank) for a in given] if given is not None \
            else list(range(rank))
        if len(set(axes)) != len(axes):
            raise ctx.error(f"axes {given} repeat an axis")
    if (scales is None) == (sizes is None):
        raise ctx.error("exactly one of scales and sizes must be given")
    count = len(scales) if scales is not None else len(sizes)  # type: ignore[arg-type]
    if count != len(axes) or (roi is not None and len(roi) != 2 * len(axes)):
        raise ctx.error(f"scales or sizes need {len(axes)} entries and roi {2 * len(axes)}, got "
                        f"{count} and {None if roi is None else len(roi)}")
    if scales is not None and (scales <= 0).any():
        raise ctx.error(f"scales {scales.tolist()} must be positive")
    if sizes is not None and any(s.const is not None and s.const < 0 for s in sizes):
        raise ctx.error(f"sizes {sizes} must not be negative")
    spans = [(0.0, 1.0) if roi is None else (float(roi[i]), float(roi[len(axes) + i]))
             for i in range(len(axes))]
    return axes, scales, sizes, spans


def _plan(ctx: Context, x: Value) -> list[Step]:
    """The axes the node resizes. An axis scaled by 1 without a crop is left as it is, and may
    be symbolic."""
    axes, scales, sizes, spans = _operands(ctx, x.type.rank)
    policy = ctx.attr("keep_aspect_ratio_policy", "stretch")
    if policy not in ("stretch", "not_larger", "not_smaller"):
        raise ctx.error(f"keep_aspect_ratio_policy {policy!r} is not stretch, not_larger or "
                        f"not_smaller")
    if sizes is not None and policy != "stretch":  # one scale, the sizes rounded half up
        inputs = _static(ctx, x, axes)
        factors = [_static_size(ctx, s) / d for s, d in zip(sizes, inputs, strict=True)]
        scale = min(factors) if policy == "not_larger" else max(factors)
        factors, outs = [scale] * len(axes), [int(scale * d + 0.5) for d in inputs]
    else:
        # an axis left as it is (a scale of 1, or its own size, without a crop) may be symbolic
        if scales is not None:
            given = [float(s) for s in scales]
        else:
            given = [1.0 if s == x.type.dims[a] else 0.0
                     for s, a in zip(sizes, axes, strict=True)]  # type: ignore[arg-type]
        keep = [i for i, (f, span) in enumerate(zip(given, spans, strict=True))
                if not _identity(f, span)]
        axes, spans = [axes[i] for i in keep], [spans[i] for i in keep]
        inputs = _static(ctx, x, axes)
        if scales is not None:
            factors = [float(scales[i]) for i in keep]
            outs = [int(f * d) for f, d in zip(factors, inputs, strict=True)]
        else:
            outs = [_static_size(ctx, sizes[i]) for i in keep]  # type: ignore[index]
            factors = [o / d for o, d in zip(outs, inputs, strict=True)]
    steps = [Step(a, d, o, f, span) for a, d, o, f, span
             in zip(axes, inputs, outs, factors, spans, strict=True)
             if not (o == d and _identity(f, span))]
    return steps


def _identity(scale: float, roi: tuple[float, float]) -> bool:
    """Whether an axis scaled by ``scale`` and cropped to ``roi`` is left as it is (close to 1
    and the whole axis, as the reference evaluator decides)."""
    return math.isclose(scale, 1.0) and math.isclose(roi[0], 0.0) and math.isclose(roi[1], 1.0)


def _static_size(ctx: Context, d: Dim) -> int:
    if d.const is None:
        raise ctx.error(f"sizes entry {d} is symbolic where it changes the axis")
    return d.const


def _static(ctx: Context, x: Value, axes: list[int]) -> list[int]:
    dims = [x.type.dims[a].const for a in axes]
    if any(d is None for d in dims):
        raise ctx.error(f"the resized axes {axes} of X {x.type} must be static")
    return [int(d) for d in dims]  # type: ignore[arg-type]


UNROLLED_TAPS = 8  # up to this many taps, a sum of one gather per tap (no reduction axis)


def resize_axis(ctx: Context, x: Value, axis: int, taps: Taps, fill: float) -> Value:
    """``x`` resized along ``axis`` by ``taps``: each tap gathered and weighted, summed. Up to
    UNROLLED_TAPS taps, one gather per tap added up, so the kernel's inner loop runs along the
    output (a reduction over an innermost axis of 2 taps took 16 ns per output, 30x more);
    more taps (antialiased shrinking) gather them all and reduce over them."""
    small = (x.type.dims[axis].const or 0) < 2**31
    index = taps.index.astype(np.int32 if small else np.int64)
    if taps.weight is None:
        y = ctx.op("gather", x, ctx.as_value(index, "resize_taps"), axis=axis)
    elif index.shape[1] <= UNROLLED_TAPS:
        terms = []
        for t in range(index.shape[1]):
            g = ctx.op("gather", x, ctx.as_value(np.ascontiguousarray(index[:, t]),
                                                 "resize_taps"), axis=axis)
            w = ctx.as_value(np.ascontiguousarray(taps.weight[:, t]).astype(
                x.type.dtype.np_dtype), "resize_weights")
            terms.append(ctx.op("mul", g, ctx.op("broadcast", w, shape=list(g.type.dims),
                                                 dims=[axis])))
        y = functools.reduce(lambda a, b: ctx.op("add", a, b), terms)
    else:
        g = ctx.op("gather", x, ctx.as_value(index, "resize_taps"), axis=axis)
        w = ctx.as_value(taps.weight.astype(x.type.dtype.np_dtype), "resize_weights")
        w = ctx.op("broadcast", w, shape=list(g.type.dims), dims=[axis, axis + 1])
        y = ctx.op("reduce_sum", ctx.op("mul", g, w), axes=[axis + 1], keepdims=False)
    if taps.outside is not None and taps.outside.any():
        mask = ctx.op("broadcast", ctx.as_value(taps.outside, "resize_outside"),
                      shape=list(y.type.dims), dims=[axis])
        y = ctx.op("select", mask, ctx.scalar(fill, y), y)
    return y


@converts("Resize", "Upsample")
def resize(ctx: Context) -> Sequence[Tensor]:
    """X resized along each axis in turn. Linear and cubic compute f16/bf16 in f32 and
    integers in f64, rounded half to even and saturated once at the end, as the reference
    computes in f64 and casts once."""
    x0 = ctx.value(0)
    mode = _mode(ctx)
    steps = _plan(ctx, x0)
    dt = x0.type.dtype
    wide = dt if mode.kind == "nearest" else \
        DType.F64 if not dt.is_float else ctx.widen(x0).type.dtype
    x = ctx.cast(x0, wide)
    fill = float(ctx.attr("extrapolation_value", 0.0))
    for step in steps:
        taps = axis_taps(mode, step.size, step.out, step.scale, step.roi)
        x = resize_axis(ctx, x, step.axis, taps, fill)
    if dt.is_float or mode.kind == "nearest":
        return [ctx.cast(x, dt)]
    info = np.iinfo(dt.np_dtype)
    x = ctx.op("clamp", ctx.op("round_even", x), min=float(info.min), max=float(info.max))
    return [ctx.cast(x, dt)]

