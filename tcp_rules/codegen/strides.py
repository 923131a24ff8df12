"""Matmul operands read where they lie, through reshapes, transposes and broadcasts of a stored
tensor; products written where a copy after them would put them.

Multi-head attention splits a ``[tokens, heads * width]`` projection into heads with a reshape,
a transpose and a reshape that folds the heads into the batch (``[batch * heads, seq, width]``).
As a copy, that is a kernel per operand moving the whole projection; read in place, it is only
a different address per batch and a row stride: head h of batch b starts at
``b * seq * heads * width + h * width``, and its rows are ``heads * width`` apart.

A view is tracked as one list of (size, stride) sub-axes per axis, outermost first: a
contiguous tensor has one sub-axis per axis, a transpose permutes the axes, a broadcast adds
sub-axes of stride 0 (grouped-query attention's K and V, shared by several heads), and a reshape
regroups the sub-axes in order (splitting one where a new axis ends inside it). A matmul reads
the view in place when its columns are at unit stride and its rows at one stride (the batch may
take any sub-axes: :class:`Strided`). The other way round, a matmul whose product only a copy
reads (the heads merged back) writes the copy's layout itself (:func:`write_through_copies`).
Static sizes only.
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from tcp_rules.codegen.kernel import Affine, Kernel, Load, MatmulKernel, Strided
from tcp_rules.codegen.plan import Plan, Step
from tcp_rules.ir import Apply, Value

Axis = list[tuple[int, int]]  # (size, stride) sub-axes, outermost first; [] has size 1
VIEWS = ("reshape", "transpose", "broadcast", "load")  # what a view is made of (loads: none)


def view_of(v: Value) -> tuple[Value, list[Axis]] | None:
    """The stored tensor beneath ``v``'s reshapes, transposes and broadcasts (loads skipped)
    and where each of v's axes lies in it (a broadcast axis at stride 0: grouped-query
    attention's K and V shared by several heads); None for symbolic sizes or a reshape that
    cuts a sub-axis unevenly."""
    chain: list[Apply] = []
    x = v
    while isinstance(x, Apply) and x.op.name in VIEWS:
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
        elif op.op.name == "broadcast":  # new and expanded axes: stride 0
            shape = _static(op)
            if shape is None:
                return None
            kept = {d: i for i, d in enumerate(op.attr_map["dims"])}
            axes = [axes[kept[r]] if r in kept and _size(axes[kept[r]]) == n else
                    ([(n, 0)] if n != 1 else []) for r, n in enumerate(shape)]
        elif op.op.name == "reshape":
            shape = _static(op)
            got = None if shape is None else _regroup(axes, shape)
            if got is None:
                return None
            axes = got
    return x, axes


def _size(axis: Axis) -> int:
    return math.prod(s for s, _ in axis)


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
    if contiguous and not has_view(v, ("transpose", "broadcast")):
        return None  # a reshape of a contiguous tensor: a view of its buffer
    return base, Strided(tuple(batch), ld)


def has_view(v: Value, ops: tuple[str, ...]) -> bool:
    """Whether ``v``'s view chain (VIEWS) holds one of ``ops``."""
    while isinstance(v, Apply) and v.op.name in VIEWS:
        if v.op.name in ops:
            return True
        v = v.operands[0]
    return False


def write_through_copies(plan: Plan) -> None:
    """A matmul whose product only a copy right after it reads (attention's heads merged back:
    ``[batch * heads, seq, width]`` to ``[batch, seq, heads * width]``, a transpose) writes
    the copy's output itself, through a strided layout (``MatmulKernel.c_at``)."""
    plan.merge_steps(lambda m, r: _write_through(plan, m, r))


def _write_through(plan: Plan, m: Step, r: Step) -> Step | None:
    mk, rk = m.kernel, r.kernel
    if (not isinstance(mk, MatmulKernel) or mk.post is not None or mk.c_at is not None
            or mk.sizes or not isinstance(rk, Kernel) or rk.sizes or rk.out_index is not None):
        return None
    prod = m.buffers[-1]
    if plan.buffers[prod].kind != "temp" or prod in plan.results:
        return None
    ld = rk.value
    if (not plan.only_readers(prod, m, r) or not isinstance(ld, Load) or ld.mask is not None
            or ld.other is not None or ld.dtype is not mk.output.dtype
            or rk.output.dtype is not mk.output.dtype
            or plan.root(r.buffers[ld.buf]) != prod or plan.root(r.buffers[-1]) == prod):
        return None
    q = len(rk.domain)
    perm = [next((v for v, c in i.vars), "") if isinstance(i, Affine) else "" for i in ld.index]
    if sorted(perm) != [f"d{i}" for i in range(q)] or any(
            not isinstance(i, Affine) or i.sizes or i.const or len(i.vars) != 1
            or i.vars[0][1] != 1 for i in ld.index):
        return None
    # where each element of the product lands in the copy's output, computed outright
    out = np.arange(math.prod(int(d) for d in rk.domain)).reshape([int(d) for d in rk.domain])
    view = np.transpose(out, [int(v[1:]) for v in perm])
    at = _layout(view.reshape([int(d) for d in mk.output.shape]), mk.batched)
    if at is None:
        return None
    kernel = replace(mk, name=rk.name, buffers=(*mk.buffers[:-1], replace(
        rk.output, name="out")), c_at=at)
    return m.fused(r, kernel, (*m.buffers[:-1], r.buffers[-1]))


def _layout(where: np.ndarray, batched: bool) -> Strided | None:
    """The strided layout putting element (b, i, j) of the product at ``where[b, i, j]``, if
    one does: unit column stride, one row stride, the batch as sub-axes found from the
    offsets of the batches' first elements (and checked against every element)."""
    grid = where if batched else where[None]
    nb, rows, cols = grid.shape
    ld = int(grid[0, 1, 0] - grid[0, 0, 0]) if rows > 1 else cols
    firsts = [int(x) for x in grid[:, 0, 0]]
    subs: list[tuple[int, int]] = []
    offs = firsts
    while len(offs) > 1:  # the innermost sub-axis: the longest run at one stride
        step, run = offs[1] - offs[0], 1
        while run < len(offs) and offs[run] - offs[0] == run * step:
            run += 1
        while len(offs) % run:
            run -= 1
        if run == 1:
            return None
        subs.insert(0, (run, step))
        offs = offs[::run]
    at = Strided(tuple(subs), ld)
    want = np.zeros(nb, np.int64)
    for k, (size, stride) in enumerate(subs):
        want += (np.arange(nb) // math.prod(s for s, _ in subs[k + 1:]) % size) * stride
    got = want[:, None, None] + np.arange(rows)[None, :, None] * ld + np.arange(cols)
    return at if np.array_equal(got, grid - grid[0, 0, 0]) and grid[0, 0, 0] == 0 else None
