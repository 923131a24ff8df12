"""Matmul operands read where they lie, through reshapes and transposes of a stored tensor.

Multi-head attention splits a ``[tokens, heads * width]`` projection into heads with a reshape,
a transpose and a reshape that folds the heads into the batch (``[batch * heads, seq, width]``).
As a copy, that is a kernel per operand moving the whole projection; read in place, it is only
a different address per batch and a row stride: head h of batch b starts at
``b * seq * heads * width + h * width``, and its rows are ``heads * width`` apart.

A view is tracked as one list of (size, stride) sub-axes per axis, outermost first: a
contiguous tensor has one sub-axis per axis, a transpose permutes the axes, and a reshape
regroups the sub-axes in order (splitting one where a new axis ends inside it). A matmul reads
the view in place when its columns are at unit stride and its rows at one stride (the batch may
take any sub-axes: :class:`Strided`). Static sizes only.
"""

from __future__ import annotations

from tcp_rules.codegen.kernel import Strided
from tcp_rules.ir import Apply, Value

Axis = list[tuple[int, int]]  # (size, stride) sub-axes, outermost first; [] has size 1


def view_of(v: Value) -> tuple[Value, list[Axis]] | None:
    """The stored tensor beneath ``v``'s reshapes and transposes (loads skipped) and where each
    of v's axes lies in it; None for symbolic sizes or a reshape that cuts a sub-axis unevenly."""
    chain: list[Apply] = []
    x = v
    while isinstance(x, Apply) and x.op.name in ("reshape", "transpose", "load"):
        chain.append(x)
        x = x.operands[0]
    dims = _static(x)
    if dims is None:
        return None
    axes: list[Axis] = []
    stride = 1
    for d in reversed(dims):
        axes.insert(0, [(d, stride)] if d != 1 else [])
        stride *= d
    for op in reversed(chain):
        if op.op.name == "transpose":
            axes = [axes[p] for p in op.attr_map["perm"]]
        elif op.op.name == "reshape":
            shape = _static(op)
            got = None if shape is None else _regroup(axes, shape)
            if got is None:
                return None
            axes = got
    return x, axes


def _static(v: Value) -> list[int] | None:
    dims = [d.const for d in v.type.dims]
    return None if any(d is None for d in dims) else [int(d) for d in dims if d is not None]


def _regroup(axes: list[Axis], shape: list[int]) -> list[Axis] | None:
    flat = [sub for ax in axes for sub in ax]
    out: list[Axis] = []
    for d in shape:
        group: Axis = []
        need = d
        while need > 1:
            if not flat:
                return None
            size, stride = flat[0]
            if need % size == 0:
                group.append(flat.pop(0))
                need //= size
            elif size % need == 0:  # the new axis ends inside this sub-axis: split it
                group.append((need, stride * (size // need)))
                flat[0] = (size // need, stride)
                need = 1
            else:
                return None
        out.append(_merged(group))
    return None if flat else out


def _merged(group: Axis) -> Axis:
    """Adjacent sub-axes that are one run of memory as one."""
    out: Axis = []
    for size, stride in group:
        if out and out[-1][1] == size * stride:
            out[-1] = (out[-1][0] * size, stride)
        else:
            out.append((size, stride))
    return out


def operand_layout(v: Value, transposed: bool = False
                   ) -> tuple[Value, Strided] | None:
    """The stored tensor and layout a matmul reads operand ``v`` (rank 2 or 3) from in place,
    where a transpose is involved (else None: a reshape of a stored tensor is a view of its
    buffer already; also None where it cannot be read in place).
    ``transposed``: the layout of v's transpose of the last two axes, as ``b_t`` reads B."""
    got = view_of(v)
    if got is None:
        return None
    base, axes = got
    if len(axes) not in (2, 3):
        return None
    batch = axes[0] if len(axes) == 3 else []
    rows, cols = axes[-2:] if not transposed else axes[:-3:-1]
    if len(cols) > 1 or (cols and cols[0][1] != 1) or len(rows) > 1:
        return None
    ncols = cols[0][0] if cols else 1
    nrows = rows[0][0] if rows else 1
    ld = rows[0][1] if rows else ncols
    contiguous = (ld == ncols or nrows == 1) and (
        not batch or batch == [(batch[0][0], nrows * ncols)])
    if contiguous and not _transposes(v):
        return None  # a reshape of a contiguous tensor: a view of its buffer
    return base, Strided(tuple(batch), ld)


def _transposes(v: Value) -> bool:
    while isinstance(v, Apply) and v.op.name in ("reshape", "transpose", "load"):
        if v.op.name == "transpose":
            return True
        v = v.operands[0]
    return False
