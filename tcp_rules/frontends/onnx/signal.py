"""ONNX's signal processing: DFT (opsets 17-20: forward, inverse, one-sided real transforms
both ways, dft_length padding or truncating) and STFT, as matmuls by constant cosine and sine
matrices (computed at import in float64; the transformed axis must be static), so the rules
and the matmul kernels see them; and the window and mel filter-bank generators (HannWindow,
HammingWindow, BlackmanWindow, MelWeightMatrix), whose inputs must be constants: they are then
evaluated at import by ONNX's reference evaluator, as every node of constants is.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from tcp_rules.frontends.onnx.composite import matmul_values
from tcp_rules.frontends.onnx.context import Context, Tensor, converts, normalize_axis
from tcp_rules.frontends.onnx.conv import window_positions
from tcp_rules.ir import Value
from tcp_rules.types import Dim, DType


@converts("HannWindow", "HammingWindow", "BlackmanWindow", "MelWeightMatrix")
def generated(ctx: Context) -> Sequence[Tensor]:
    """Generators of constants: asked for here only when an input is not known at import
    (or the reference evaluator refused the node)."""
    assert ctx.node is not None
    for i in range(len(ctx.node.input)):
        if ctx.has(i):
            ctx.const(i, f"input {i}")
    raise ctx.error("the node's inputs are constants, yet ONNX's reference evaluator could not "
                    "compute it")


def _scalar(ctx: Context, i: int, what: str) -> int | None:
    if not ctx.has(i):
        return None
    values = ctx.ints(i, what)
    if len(values) != 1:
        raise ctx.error(f"{what} must be one integer, got {values}")
    return values[0]


def _wide(ctx: Context, x: Value) -> Value:
    """A float signal in f64: the matmul form sums n terms per output, whose f32 rounding
    would grow with n (an FFT's grows with log n); in f64 the result is rounded once."""
    return ctx.cast(x, DType.F64)


def _parts(ctx: Context, x: Value) -> tuple[Value, Value | None]:
    """The real and imaginary parts of [..., 1 | 2] (None for a real signal), that axis gone."""
    two = x.type.dims[-1].const
    if x.type.rank < 2 or two not in (1, 2):
        raise ctx.error(f"the signal {x.type} must end in an axis of 1 (real) or 2 (complex)")
    lead = list(x.type.dims[:-1])

    def part(k: int) -> Value:
        piece = ctx.op("slice", x, start=[0] * (x.type.rank - 1) + [k],
                       size=[*lead, Dim.of(1)], stride=[1] * x.type.rank)
        return ctx.op("reshape", piece, shape=lead)
    return part(0), (part(1) if two == 2 else None)


def _last(ctx: Context, v: Value, axis: int) -> Value:
    """``v`` with ``axis`` moved last."""
    perm = [a for a in range(v.type.rank) if a != axis] + [axis]
    return v if perm == sorted(perm) else ctx.op("transpose", v, perm=perm)


def _back(ctx: Context, v: Value, axis: int) -> Value:
    """Undo :func:`_last`."""
    r = v.type.rank
    perm = [*range(axis), r - 1, *range(axis, r - 1)]
    return v if perm == sorted(perm) else ctx.op("transpose", v, perm=perm)


def _complex(ctx: Context, re: Value, im: Value | None) -> Value:
    """[..., 2] (or [..., 1] with no imaginary part)."""
    parts = [ctx.op("reshape", p, shape=[*p.type.dims, Dim.of(1)]) for p in (re, im)
             if p is not None]
    return parts[0] if len(parts) == 1 else ctx.op("concat", *parts, axis=re.type.rank)


def dft_matrices(used: int, n: int, bins: int, inverse: bool, onesided: bool
                 ) -> tuple[np.ndarray, np.ndarray]:
    """cos and sin of 2 pi k t / n for the ``used`` input points t and ``bins`` outputs k
    (inverse: the points are frequencies and the outputs samples, scaled by 1 / n; one-sided
    inverse: the Hermitian half counted twice, but for 0 and n / 2)."""
    t = np.arange(used, dtype=np.float64)[:, None]
    k = np.arange(bins, dtype=np.float64)[None, :]
    angle = 2 * np.pi * ((t * k) % n) / n  # reduced first: exact angles for large t k
    c, s = np.cos(angle), np.sin(angle)
    if inverse:
        c, s = c / n, s / n
        if onesided:
            weight = np.where((t == 0) | (2 * t == n), 1.0, 2.0)
            c, s = c * weight, s * weight
    return c, s


def transform(ctx: Context, re: Value, im: Value | None, n: int, inverse: bool,
              onesided: bool, window: np.ndarray | None = None) -> tuple[Value, Value | None]:
    """The DFT of length ``n`` along the last axis of (``re``, ``im``), the input padded or
    cut to n (one-sided inverse: n // 2 + 1 frequencies in, n real samples out, so no
    imaginary part; one-sided forward: n // 2 + 1 bins out). A constant ``window`` multiplies
    the input, folded into the matrices."""
    length = re.type.dims[-1].const
    assert length is not None
    real_out = inverse and onesided
    used = min(length, n // 2 + 1 if real_out else n)
    bins = n if inverse else (n // 2 + 1 if onesided else n)
    c, s = dft_matrices(used, n, bins, inverse, real_out)
    if window is not None:
        c, s = c * window[:used, None], s * window[:used, None]
    if used < length:  # the input cut to the points the transform reads
        cut = [*re.type.dims[:-1], Dim.of(used)]

        def first(v: Value) -> Value:
            return ctx.op("slice", v, start=[0] * v.type.rank, size=cut,
                          stride=[1] * v.type.rank)
        re, im = first(re), (None if im is None else first(im))
    dt = re.type.dtype
    cm, sm = (ctx.as_value(m.astype(dt.np_dtype), name) for m, name in ((c, "dft_cos"),
                                                                         (s, "dft_sin")))
    sign = 1.0 if inverse else -1.0  # e^{+i} inverse, e^{-i} forward
    out_re = matmul_values(ctx, re, cm)
    out_im = ctx.op("mul", matmul_values(ctx, re, sm), ctx.scalar(sign, out_re))
    if im is not None:  # (a + ib)(c + i sign s) = ac - sign bs + i (sign as + bc)
        out_re = ctx.op("sub", out_re, ctx.op("mul", matmul_values(ctx, im, sm),
                                              ctx.scalar(sign, out_re)))
        out_im = ctx.op("add", out_im, matmul_values(ctx, im, cm))
    return out_re, (None if real_out else out_im)


@converts("DFT")
def dft(ctx: Context) -> Sequence[Tensor]:
    """The signal's DFT along its axis: [..., n or n // 2 + 1, 2], or [..., n, 1] for the
    one-sided inverse; computed in f64 (:func:`_wide`)."""
    x0 = ctx.value(0)
    x = _wide(ctx, x0)
    inverse, onesided = bool(ctx.attr("inverse", 0)), bool(ctx.attr("onesided", 0))
    default_axis = -2 if ctx.opset >= 20 else 1
    given = _scalar(ctx, 2, "axis") if ctx.opset >= 20 else ctx.attr("axis", 1)
    axis = normalize_axis(ctx, default_axis if given is None else given, x.type.rank)
    if axis == x.type.rank - 1:
        raise ctx.error("the DFT's axis cannot be the last one, of real and imaginary parts")
    length = x.type.dims[axis].const
    if length is None:
        raise ctx.error(f"the transformed axis {x.type.dims[axis]} must be static")
    n = _scalar(ctx, 1, "dft_length")
    if n is None:
        n = 2 * (length - 1) if inverse and onesided else length
    if n < 1:
        raise ctx.error(f"dft_length {n} must be positive")
    if onesided and not inverse and x.type.dims[-1] != Dim.of(1):
        raise ctx.error("a one-sided DFT needs a real signal")
    re, im = _parts(ctx, x)
    re, im = _last(ctx, re, axis), (None if im is None else _last(ctx, im, axis))
    out_re, out_im = transform(ctx, re, im, n, inverse, onesided)
    out_re, out_im = _back(ctx, out_re, axis), (None if out_im is None else _back(ctx, out_im,
                                                                                axis))
    return [ctx.cast(_complex(ctx, out_re, out_im), x0.type.dtype)]


@converts("STFT")
def stft(ctx: Context) -> Sequence[Tensor]:
    """[batch, frames, bins, 2]: the DFT of each frame of frame_length samples, frame_step
    apart, times the window; a constant window folds into the DFT's matrices. Computed in
    f64 (:func:`_wide`)."""
    x0 = ctx.value(0)
    x = _wide(ctx, x0)
    if x.type.rank != 3:
        raise ctx.error(f"the signal {x.type} must be [batch, length, 1 or 2]")
    length = x.type.dims[1].const
    step = _scalar(ctx, 1, "frame_step")
    window = ctx.const(2, "the window") if ctx.has(2) else None
    frame = _scalar(ctx, 3, "frame_length")
    if frame is None:
        frame = window.shape[0] if window is not None else length
    onesided = bool(ctx.attr("onesided", 1))
    if length is None or step is None or frame is None or step < 1 or not 1 <= frame <= length \
            or (window is not None and window.shape != (frame,)):
        raise ctx.error(f"STFT needs a static signal length ({x.type.dims[1]}), a positive "
                        f"frame_step ({step}) and a frame_length ({frame}) no longer than the "
                        f"signal and matching the window "
                        f"{None if window is None else list(window.shape)}")
    if onesided and x.type.dims[-1] != Dim.of(1):
        raise ctx.error("a one-sided STFT needs a real signal")
    frames = (length - frame) // step + 1
    index = window_positions([length], [frame], [step], [1], [frames])  # [frame, frames]
    def frames_of(v: Value) -> Value:  # [batch, frames, frame]
        return ctx.op("transpose", ctx.op("gather", v, index, axis=1), perm=[0, 2, 1])
    re, im = _parts(ctx, x)
    re, im = frames_of(re), (None if im is None else frames_of(im))
    w = None if window is None else np.asarray(window, np.float64)
    out_re, out_im = transform(ctx, re, im, frame, False, onesided, w)
    return [ctx.cast(_complex(ctx, out_re, out_im), x0.type.dtype)]
