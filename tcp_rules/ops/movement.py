"""Constants and data movement: splat, dense, iota, broadcast, transpose, reshape, slice,
concat, gather."""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np

from tcp_rules.ops.core import AttrKind, Attrs, AttrSpec, CostFormula, OpDef, ShapeError
from tcp_rules.ops.elementwise import check_dtypes
from tcp_rules.types import (
    ALL_DTYPES,
    INTS,
    DenseData,
    Dim,
    DType,
    TensorType,
    dims_product,
    finfo,
)


def literal_array(values: np.ndarray | float | int | bool, dtype: DType,
                  shape: tuple[int, ...] = ()) -> np.ndarray:
    """Literal values stored as ``dtype``: f16 and bf16 round through f32 like every conversion
    to them (so the code generator, which rounds its constants the same way, agrees)."""
    arr = np.asarray(values)
    if dtype.is_storage_float:
        arr = arr.astype(np.float32)
    return np.array(np.broadcast_to(arr.astype(dtype.np_dtype), shape or arr.shape), order="C")


def check_scalar_fits(value: float | int | bool, dtype: DType, attr: str) -> None:
    """A scalar literal must be representable in the dtype it is splatted to."""
    if dtype.is_float:
        with np.errstate(over="ignore"):
            rounded = float(literal_array(value, dtype))
        if math.isfinite(value) and math.isinf(rounded):
            raise ShapeError(f"literal {value} overflows {dtype} (largest finite "
                             f"{float(finfo(dtype).max):g})", attr=attr)
        return
    if isinstance(value, float) and not value.is_integer():
        raise ShapeError(f"literal {value} is not an integer but the context is {dtype}",
                         attr=attr)
    if dtype is DType.I1:
        if value not in (0, 1):
            raise ShapeError(f"literal {value} is not a boolean (use true, false, 0 or 1)",
                             attr=attr)
        return
    info = np.iinfo(dtype.np_dtype)
    if not info.min <= value <= info.max:
        raise ShapeError(f"literal {value} does not fit in {dtype} "
                         f"(range {info.min}..{info.max})", attr=attr)


def _infer_splat(args: Sequence[TensorType], attrs: Attrs) -> TensorType:
    check_scalar_fits(attrs["value"], attrs["dtype"], "value")
    return TensorType(attrs["dtype"], tuple(attrs["shape"]))


def _infer_iota(args: Sequence[TensorType], attrs: Attrs) -> TensorType:
    shape, axis, dtype = tuple(attrs["shape"]), attrs["axis"], attrs["dtype"]
    check_axes([axis], len(shape), "axis")
    if dtype is DType.I1:
        raise ShapeError("iota counts in an integer or float type, not i1", attr="dtype")
    n = shape[axis].const
    if n is not None and n > 1 and not dtype.is_float:
        check_scalar_fits(n - 1, dtype, "shape")
    return TensorType(dtype, shape)


def _iota(a: Sequence[np.ndarray], attrs: Attrs, out: TensorType) -> np.ndarray:
    shape, axis = out.shape or (), attrs["axis"]
    along = np.arange(shape[axis]).reshape([-1 if i == axis else 1 for i in range(len(shape))])
    return literal_array(along, out.dtype, shape)


def _infer_dense(args: Sequence[TensorType], attrs: Attrs) -> TensorType:
    arr = attrs["value"].array
    for v in arr.ravel().tolist():
        check_scalar_fits(v, attrs["dtype"], "value")
    return TensorType.of(attrs["dtype"], arr.shape)


def _check_perm(perm: Sequence[int], rank: int, attr: str) -> None:
    if sorted(perm) != list(range(rank)):
        raise ShapeError(f"{attr}={list(perm)} is not a permutation of 0..{rank - 1} "
                         f"for a rank-{rank} operand", attr=attr)


def check_axes(axes: Sequence[int], rank: int, attr: str = "axes") -> None:
    """Axes are distinct and within 0..rank-1."""
    bad = [a for a in axes if not 0 <= a < rank]
    if bad:
        raise ShapeError(f"{attr}={list(axes)}: axis {bad[0]} is out of range for a rank-{rank} "
                         f"operand", attr=attr)
    if len(set(axes)) != len(axes):
        raise ShapeError(f"{attr}={list(axes)} repeats an axis", attr=attr)


def _infer_broadcast(args: Sequence[TensorType], attrs: Attrs) -> TensorType:
    x, shape, dims = args[0], tuple(attrs["shape"]), list(attrs["dims"])
    if len(dims) != x.rank:
        raise ShapeError(f"dims={dims} must map each of the operand's {x.rank} axes to a "
                         f"result axis", attr="dims")
    check_axes(dims, len(shape), "dims")
    if dims != sorted(dims):
        raise ShapeError(f"dims={dims} must be increasing (use transpose to reorder axes)",
                         attr="dims")
    one = Dim.of(1)
    for i, d in enumerate(dims):
        if x.dims[i] not in (shape[d], one):
            raise ShapeError(f"operand axis {i} has size {x.dims[i]}, which cannot broadcast "
                             f"to result axis {d} of size {shape[d]}", attr="dims")
    return TensorType(x.dtype, shape)


def _broadcast(a: Sequence[np.ndarray], attrs: Attrs, out: TensorType) -> np.ndarray:
    out_shape = out.shape or ()
    expanded = [1] * len(out_shape)
    for i, d in enumerate(attrs["dims"]):
        expanded[d] = a[0].shape[i]
    return np.array(np.broadcast_to(a[0].reshape(expanded), out_shape), order="C")


def _infer_transpose(args: Sequence[TensorType], attrs: Attrs) -> TensorType:
    x, perm = args[0], attrs["perm"]
    _check_perm(perm, x.rank, "perm")
    return TensorType(x.dtype, tuple(x.dims[p] for p in perm))


def _infer_reshape(args: Sequence[TensorType], attrs: Attrs) -> TensorType:
    x, shape = args[0], tuple(attrs["shape"])
    before, after = dims_product(x.dims), dims_product(shape)
    if before != after:
        raise ShapeError(f"reshape changes the number of elements: {x} has {before}, "
                         f"shape={_fmt(shape)} has {after}", attr="shape")
    return TensorType(x.dtype, shape)


def _fmt(dims: Sequence[Dim]) -> str:
    return "[" + ", ".join(map(str, dims)) + "]"


def _infer_slice(args: Sequence[TensorType], attrs: Attrs) -> TensorType:
    x = args[0]
    start, size, stride = list(attrs["start"]), tuple(attrs["size"]), list(attrs["stride"])
    for name, val in (("start", start), ("size", size), ("stride", stride)):
        if len(val) != x.rank:
            raise ShapeError(f"{name} has {len(val)} entries for a rank-{x.rank} operand",
                             attr=name)
    for i in range(x.rank):
        if stride[i] < 1:
            raise ShapeError(f"stride[{i}] = {stride[i]} must be at least 1", attr="stride")
        if start[i] < 0:
            raise ShapeError(f"start[{i}] = {start[i]} must not be negative", attr="start")
        n = size[i].const
        if n is not None and n < 0:
            raise ShapeError(f"size[{i}] = {n} must not be negative", attr="size")
        if n == 0:
            continue
        # Last index read is start + (size - 1) * stride; it must be below the axis size.
        slack = (x.dims[i] - (size[i] * stride[i]) + (stride[i] - 1 - start[i])).const
        if slack is not None and slack < 0:
            raise ShapeError(f"slice reads past the end of axis {i}: start {start[i]}, size "
                             f"{size[i]}, stride {stride[i]} on an axis of size {x.dims[i]}",
                             attr="size")
    return TensorType(x.dtype, size)


def _slice(a: Sequence[np.ndarray], attrs: Attrs, out: TensorType) -> np.ndarray:
    index = tuple(slice(s, s + max(n - 1, 0) * st + (1 if n else 0), st)
                  for s, n, st in zip(attrs["start"], out.shape or (), attrs["stride"],
                                      strict=True))
    return np.array(a[0][index], order="C")  # a copy; np.ascontiguousarray makes 0-d 1-d


def _infer_concat(args: Sequence[TensorType], attrs: Attrs) -> TensorType:
    axis, first = attrs["axis"], args[0]
    check_dtypes(args, ALL_DTYPES)
    check_axes([axis], first.rank, "axis")
    total = Dim.of(0)
    for i, a in enumerate(args):
        if a.rank != first.rank:
            raise ShapeError(f"concat operands must have one rank: {first} and {a}", operand=i)
        for k in range(a.rank):
            if k != axis and a.dims[k] != first.dims[k]:
                raise ShapeError(f"concat operands differ off the concatenation axis {axis}: "
                                 f"{first} and {a}", operand=i)
        total = total + a.dims[axis]
    dims = list(first.dims)
    dims[axis] = total
    return TensorType(first.dtype, tuple(dims))


def _infer_gather(args: Sequence[TensorType], attrs: Attrs) -> TensorType:
    x, idx, axis = args[0], args[1], attrs["axis"]
    check_axes([axis], x.rank, "axis")
    if idx.dtype not in INTS:
        raise ShapeError(f"gather indices must be an integer type, got {idx}", operand=1)
    if x.dims[axis].const == 0 and dims_product(idx.dims).const != 0:
        raise ShapeError(f"gather reads from axis {axis} of {x}, which is empty", operand=0)
    return TensorType(x.dtype, x.dims[:axis] + idx.dims + x.dims[axis + 1:])


# Attribute spaces: representative valid attributes for given operand types -------------------

Fresh = Callable[[], Dim]
Space = Iterable[dict[str, Any]]


def _splat_space(args: Sequence[TensorType], fresh: Fresh) -> Space:
    for dtype in DType:
        yield {"value": 0, "shape": (), "dtype": dtype}
        yield {"value": 1, "shape": (fresh(), fresh()), "dtype": dtype}


def _iota_space(args: Sequence[TensorType], fresh: Fresh) -> Space:
    for dtype in (DType.I64, DType.I32, DType.F32, DType.F16):
        yield {"shape": (Dim.of(5),), "axis": 0, "dtype": dtype}
        yield {"shape": (Dim.of(2), Dim.of(3)), "axis": 1, "dtype": dtype}
        yield {"shape": (fresh(), fresh()), "axis": 0, "dtype": dtype}


def _dense_space(args: Sequence[TensorType], fresh: Fresh) -> Space:
    for dtype in DType:
        yield {"value": DenseData(np.array([[1, 0], [0, 1]])), "dtype": dtype}


def _broadcast_space(args: Sequence[TensorType], fresh: Fresh) -> Space:
    x = args[0]
    for extra in (0, 1):
        rank = x.rank + extra
        for dims in itertools.combinations(range(rank), x.rank):
            shape = [fresh() for _ in range(rank)]
            for i, d in enumerate(dims):
                shape[d] = x.dims[i]
            yield {"shape": tuple(shape), "dims": dims}
            expand = [i for i, d in enumerate(x.dims) if d == Dim.of(1)]
            if expand:  # size-1 axes grow to new sizes
                grown = list(shape)
                for i in expand:
                    grown[dims[i]] = fresh()
                yield {"shape": tuple(grown), "dims": dims}


def _transpose_space(args: Sequence[TensorType], fresh: Fresh) -> Space:
    return ({"perm": p} for p in itertools.permutations(range(args[0].rank)))


def _reshape_space(args: Sequence[TensorType], fresh: Fresh) -> Space:
    dims = args[0].dims
    shapes = {dims, (dims_product(dims),), (*dims, Dim.of(1)), (Dim.of(1), *dims)}
    for i in range(len(dims) - 1):  # merge two neighbouring axes
        shapes.add((*dims[:i], dims[i] * dims[i + 1], *dims[i + 2:]))
    return ({"shape": s} for s in sorted(shapes, key=str))


def _slice_space(args: Sequence[TensorType], fresh: Fresh) -> Space:
    x = args[0]
    per_axis = []
    for d in x.dims:
        options = [(0, d, 1), (0, Dim.of(1), 1), (0, Dim.of(0), 1)]
        if (d - 1).const is None or (d - 1).const > 0:
            options.append((1, d - 1, 1))
        if d.const is not None and d.const >= 3:
            options.append((0, Dim.of((d.const + 1) // 2), 2))
        per_axis.append(options)
    for combo in itertools.product(*per_axis):
        yield {"start": tuple(c[0] for c in combo), "size": tuple(c[1] for c in combo),
               "stride": tuple(c[2] for c in combo)}


def _axis_space(args: Sequence[TensorType], fresh: Fresh) -> Space:
    return ({"axis": a} for a in range(args[0].rank))


MOVEMENT_OPS: tuple[OpDef, ...] = (
    OpDef(name="splat", attr_space=_splat_space,
          doc="a tensor filled with one scalar value", operands=(),
          attrs=(AttrSpec("value", AttrKind.SCALAR), AttrSpec("shape", AttrKind.DIMS),
                 AttrSpec("dtype", AttrKind.DTYPE)),
          infer=_infer_splat, cost=CostFormula(0), category="constant",
          reference=lambda a, attrs, out: literal_array(attrs["value"], out.dtype,
                                                        out.shape or ())),
    OpDef(name="dense", attr_space=_dense_space,
          doc="a constant tensor given element by element", operands=(),
          attrs=(AttrSpec("value", AttrKind.DATA), AttrSpec("dtype", AttrKind.DTYPE)),
          infer=_infer_dense, cost=CostFormula(0), category="constant",
          reference=lambda a, attrs, out: literal_array(attrs["value"].array, out.dtype)),
    OpDef(name="iota", attr_space=_iota_space,
          doc="a tensor of shape whose elements are their index along axis",
          operands=(),
          attrs=(AttrSpec("shape", AttrKind.DIMS), AttrSpec("axis", AttrKind.INT),
                 AttrSpec("dtype", AttrKind.DTYPE)),
          infer=_infer_iota, cost=CostFormula(0), category="constant", reference=_iota),
    OpDef(name="broadcast", attr_space=_broadcast_space,
          doc="expand x to shape; dims[i] is the result axis of x's axis i",
          operands=("x",),
          attrs=(AttrSpec("shape", AttrKind.DIMS), AttrSpec("dims", AttrKind.INTS)),
          infer=_infer_broadcast, reference=_broadcast,
          cost=CostFormula(0, materializes=False), category="movement"),
    OpDef(name="transpose", attr_space=_transpose_space,
          doc="permute axes: result axis i is operand axis perm[i]",
          operands=("x",), attrs=(AttrSpec("perm", AttrKind.INTS),), infer=_infer_transpose,
          reference=lambda a, attrs, out: np.array(np.transpose(a[0], attrs["perm"]), order="C"),
          cost=CostFormula(0, materializes=False), category="movement"),
    OpDef(name="reshape", attr_space=_reshape_space,
          doc="the same elements in row-major order under a new shape",
          operands=("x",), attrs=(AttrSpec("shape", AttrKind.DIMS),), infer=_infer_reshape,
          reference=lambda a, attrs, out: a[0].reshape(out.shape or ()).copy(),
          cost=CostFormula(0), category="movement"),
    OpDef(name="slice", attr_space=_slice_space,
          doc="elements start + k*stride, k < size, along every axis",
          operands=("x",),
          attrs=(AttrSpec("start", AttrKind.INTS), AttrSpec("size", AttrKind.DIMS),
                 AttrSpec("stride", AttrKind.INTS)),
          infer=_infer_slice, reference=_slice, cost=CostFormula(0), category="movement"),
    OpDef(name="concat", attr_space=_axis_space,
          doc="join operands along axis", operands=("xs",), variadic=True,
          attrs=(AttrSpec("axis", AttrKind.INT),), infer=_infer_concat,
          reference=lambda a, attrs, out: np.concatenate(list(a), axis=attrs["axis"]),
          cost=CostFormula(0), category="movement"),
    OpDef(name="gather", attr_space=_axis_space,
          doc="take(x, indices, axis); indices clamp into range",
          operands=("x", "indices"), attrs=(AttrSpec("axis", AttrKind.INT),),
          infer=_infer_gather, cost=CostFormula(1), category="movement",
          reference=lambda a, attrs, out: np.take(a[0], a[1], axis=attrs["axis"], mode="clip")),
)
