"""pad: widen every axis by ``low`` elements before and ``high`` after, like numpy.pad.

The new elements are ``value`` (mode=constant), the nearest border element (mode=edge), or the
mirror image without repeating the border (mode=reflect, numpy's "reflect": [a, b, c] padded by
2 on the left reads [c, b, a, b, c]). The mode is a NAME attribute, written bare: mode=edge.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np

from tcp_rules.ops.core import AttrKind, Attrs, AttrSpec, CostFormula, OpDef, ShapeError
from tcp_rules.ops.movement import check_scalar_fits
from tcp_rules.types import Dim, TensorType

PAD_MODES = ("constant", "edge", "reflect")


def _infer_pad(args: Sequence[TensorType], attrs: Attrs) -> TensorType:
    x, low, high, mode = args[0], list(attrs["low"]), list(attrs["high"]), attrs["mode"]
    for name, widths in (("low", low), ("high", high)):
        if len(widths) != x.rank:
            raise ShapeError(f"{name} has {len(widths)} entries for a rank-{x.rank} operand",
                             attr=name)
        bad = [w for w in widths if w < 0]
        if bad:
            raise ShapeError(f"{name}={widths}: widths must not be negative (use slice to "
                             f"crop)", attr=name)
    if mode != "constant" and attrs["value"] != 0:
        raise ShapeError(f"value is only meaningful with mode=constant, not mode={mode}",
                         attr="value")
    check_scalar_fits(attrs["value"], x.dtype, "value")
    for i, (d, lo, hi) in enumerate(zip(x.dims, low, high, strict=True)):
        n = d.const
        if n is None or lo + hi == 0:
            continue  # a symbolic size is checked when it is known (interpreter, codegen)
        if mode == "edge" and n == 0:
            raise ShapeError(f"mode=edge pads axis {i}, which is empty: there is no border "
                             f"element to repeat", attr="mode")
        if mode == "reflect" and max(lo, hi) >= n:
            raise ShapeError(f"mode=reflect pads axis {i} of size {n} by {max(lo, hi)}: "
                             f"widths must be below the axis size", attr="mode")
    return TensorType(x.dtype, tuple(d + (lo + hi) for d, lo, hi in
                                     zip(x.dims, low, high, strict=True)))


def _pad(a: Sequence[np.ndarray], attrs: Attrs, out: TensorType) -> np.ndarray:
    if a[0].ndim == 0:  # nothing to widen (numpy.pad fails on a scalar's empty widths)
        return a[0].copy()
    # An int array of shape (rank, 2): numpy reads an empty list (rank 0) as floats.
    widths = np.array(list(zip(attrs["low"], attrs["high"], strict=True)),
                      dtype=np.int64).reshape(-1, 2)
    if attrs["mode"] == "constant":
        value = np.array(attrs["value"]).astype(a[0].dtype)  # -0.0 and i1 true kept as such
        return np.pad(a[0], widths, mode="constant", constant_values=value)
    return np.pad(a[0], widths, mode=attrs["mode"])


Fresh = Callable[[], Dim]


def _pad_space(args: Sequence[TensorType], fresh: Fresh) -> Iterable[dict[str, Any]]:
    """Zero widths, one-sided and two-sided constant padding (0 and 1), edge and reflect by one;
    reflect by one needs axes of two or more, which instances with smaller sizes violate (and
    are skipped, as ill-typed)."""
    r = args[0].rank
    zeros, ones = (0,) * r, (1,) * r
    first = tuple(1 if i == 0 else 0 for i in range(r))
    last = tuple(2 if i == r - 1 else 0 for i in range(r))
    yield {"low": zeros, "high": zeros, "mode": "constant", "value": 0}
    yield {"low": first, "high": last, "mode": "constant", "value": 0}
    yield {"low": ones, "high": ones, "mode": "constant", "value": 1}
    yield {"low": ones, "high": last, "mode": "edge", "value": 0}
    yield {"low": ones, "high": first, "mode": "reflect", "value": 0}


PAD_OPS: tuple[OpDef, ...] = (
    OpDef(name="pad", attr_space=_pad_space,
          doc="widen axis i by low[i] before and high[i] after: mode=constant (value), edge "
              "or reflect, as numpy.pad",
          operands=("x",),
          attrs=(AttrSpec("low", AttrKind.INTS), AttrSpec("high", AttrKind.INTS),
                 AttrSpec("mode", AttrKind.NAME, default="constant", choices=PAD_MODES),
                 AttrSpec("value", AttrKind.SCALAR, default=0)),
          infer=_infer_pad, reference=_pad, category="movement",
          # The traffic of a copy: a pad is read inline by its consumers, but its operand is
          # materialized first (its indices are computed, never folded into an affine map).
          cost=CostFormula(0)),
)
