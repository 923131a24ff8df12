"""A row kernel fused into the matmul whose product it reads (attention's QK^T and softmax).

A softmax over a matmul's rows reads each row of the product a few times (max, sum of exps,
the quotients) and nothing else of it. As two kernels, the product goes out to memory and comes
back; fused, the matmul writes each block of rows it finishes into a per-worker scratch that
stays in L2, and runs the row kernel on those rows before it moves on (``MatmulKernel.post``).

The row kernel is the plan step right after the matmul, the only reader of its product (a
temporary, or reshapes of it), over the product's rows: its leading axes are the matmul's
batch, then its rows, then its columns. It is rewritten over one batch's ``[rows, columns]``,
and each of its buffers starts where that batch's part of it does, so the matmul calls it on
any block of rows it owns. Its loads may read, at each buffer axis but the last, a batch
axis' loop variable or 0; the row axes as they are (the buffer's axes before its last: the
row being written, or one value per row at its last axes) or not at all; and at the last axis
the column, a reduction variable or a constant (attention's masks: a causal [S, S] one, a
padding [B, 1, 1, S] one, a flag per query row). Batch axes have static sizes; rows and columns
may be symbolic in a matmul without a batch (the attention example). Anything else stays two
kernels.
"""

from __future__ import annotations

import math
from dataclasses import replace

from tcp_rules.codegen.kernel import (
    POST_ROWS,
    Affine,
    Buffer,
    Const,
    Kernel,
    Load,
    MatmulKernel,
    Node,
    Op,
    Reduce,
    Size,
)
from tcp_rules.codegen.plan import Plan, PlanBuffer, Step


class _NoFuse(Exception):
    pass


def fuse_row_passes(plan: Plan) -> None:
    """Fuse each row kernel into the matmul before it, where it qualifies (module docstring)."""
    plan.merge_steps(lambda m, r: _fuse(plan, m, r))


def _fuse(plan: Plan, m: Step, r: Step) -> Step | None:
    mk, rk = m.kernel, r.kernel
    if (not isinstance(mk, MatmulKernel) or mk.post is not None or mk.c_at is not None
            or not isinstance(rk, Kernel) or rk.out_index is not None or len(rk.domain) < 2):
        return None
    prod = m.buffers[-1]
    if plan.buffers[prod].kind != "temp" or prod in plan.results:
        return None
    inputs = list(r.buffers[:-1])
    at = [i for i, b in enumerate(inputs) if plan.root(b) == prod]
    if not plan.only_readers(prod, m, r) or len(at) != 1 or plan.root(r.buffers[-1]) == prod:
        return None
    # the row kernel's size parameters as the matmul's (its post function reads theirs)
    if any(d not in m.sizes for d in r.sizes):
        return None
    names = dict(zip(rk.sizes, (mk.sizes[m.sizes.index(d)] for d in r.sizes), strict=True))
    dom = list(_renamed(rk.domain, names))
    shape = list(mk.output.shape)
    lead = _batch_axes(dom, shape)
    if lead is None:
        return None
    try:
        post, batches = _per_batch(rk, lead, names, tuple(mk.sizes))
    except _NoFuse:
        return None
    # fused buffers: the matmul's inputs, the row kernel's other inputs, then its output seen
    # with the product's shape (a view: the matmul's domain, batch and all)
    bufs = list(m.buffers[:-1])
    kbufs = list(mk.buffers[:-1])
    post_bufs = []
    for i, b in enumerate(inputs):
        if i == at[0]:
            post_bufs.append(POST_ROWS)
            continue
        if b not in bufs:
            bufs.append(b)
            kbufs.append(Buffer(f"in{len(kbufs)}", rk.buffers[i].dtype,
                                _renamed(rk.buffers[i].shape, names)))
        post_bufs.append(bufs.index(b))
    out = r.buffers[-1]
    view = plan.add_buffer(PlanBuffer(rk.output.dtype, plan.buffers[prod].dims, "view",
                                      base=plan.root(out)))
    kernel = replace(mk, name=rk.name, buffers=(
        *kbufs, Buffer("out", rk.output.dtype, tuple(shape))), post=post,
        post_bufs=tuple(post_bufs), post_batch=batches)
    return m.fused(r, kernel, (*bufs, view))


def _batch_axes(dom: list[Size], shape: list[Size]) -> int | None:
    """How many leading axes of a row kernel over ``dom`` are the batch of a matmul product of
    ``shape`` ([batch,] rows, columns), the rest but the last its rows; None if none fit."""
    if dom[-1] != shape[-1]:
        return None
    if not all(isinstance(d, int) for d in (*dom, *shape)):  # symbolic: [rows, columns] alone
        return 0 if len(dom) == 2 == len(shape) and dom[0] == shape[0] else None
    ints, prod = [int(d) for d in dom], [int(d) for d in shape]
    return next((p for p in range(len(ints) - 1) if math.prod(ints[:p]) == math.prod(
        prod[:-2]) and math.prod(ints[p:-1]) == prod[-2]), None)


def _renamed(shape: tuple[Size, ...], names: dict[str, str]) -> tuple[Size, ...]:
    return tuple(names.get(s, s) if isinstance(s, str) else s for s in shape)


def _affine(a: Affine, names: dict[str, str]) -> Affine:
    return Affine(a.vars, tuple((names.get(n, n), c) for n, c in a.sizes), a.const)


def _per_batch(k: Kernel, lead: int, names: dict[str, str], sizes: tuple[str, ...]
               ) -> tuple[Kernel, tuple[tuple[tuple[int, int], ...], ...]]:
    """``k`` over one batch's ``[rows, columns]`` (its first ``lead`` axes are the batch, the
    others but the last the rows), its size parameters renamed by ``names`` and taken from
    ``sizes``; and for each of its buffers where that batch's part starts: (size, stride)
    sub-axes over the batch axes, as a Strided layout's batch. _NoFuse where a load is not of
    the kinds the module docstring allows."""
    q = len(k.domain)
    dom = list(_renamed(k.domain, names))
    batch = [f"d{i}" for i in range(lead)]
    rows = [f"d{i}" for i in range(lead, q - 1)]
    col = f"d{q - 1}"
    nrows: Size = dom[lead] if q - 1 - lead == 1 else math.prod(int(d) for d in dom[lead:-1])
    slabs: dict[int, tuple[tuple[Size, ...], tuple[tuple[int, int], ...]]] = {}
    memo: dict[int, Node] = {}

    def var(a: Affine) -> str | None:
        """The one loop variable ``a`` is, None for 0 (_NoFuse for anything else)."""
        if not a.vars and not a.sizes and a.const == 0:
            return None
        if (v := _single(a)) is None:
            raise _NoFuse
        return v

    def batch_at(shape: tuple[Size, ...], vs: list[str | None]) -> tuple[tuple[int, int], ...]:
        """Sub-axes over the batch axes for a buffer whose leading axes read ``vs``."""
        stride_of = dict.fromkeys(batch, 0)
        for a, v in enumerate(vs):
            if v in stride_of and stride_of[v] == 0:
                if not all(isinstance(s, int) for s in shape[a + 1:]):
                    raise _NoFuse
                stride_of[v] = math.prod(int(s) for s in shape[a + 1:])
            elif v is not None:
                raise _NoFuse
        return tuple((int(dom[i]), stride_of[v]) for i, v in enumerate(batch))

    def slab(shape: tuple[Size, ...], idx: tuple[Affine, ...]
             ) -> tuple[tuple[Size, ...], tuple[Affine, ...], tuple[tuple[int, int], ...]]:
        if not idx:
            return (), (), batch_at(shape, [])
        n = len(rows)
        if rows and len(idx) >= n and [_single(a) for a in idx[-n:]] == rows and list(
                shape[-n:]) == dom[lead:-1]:  # one value per row
            return (nrows,), (Affine.var("d0"),), batch_at(shape, [var(i) for i in idx[:-n]])
        last = idx[-1]
        if any(last.coeff(v) for v in (*batch, *rows)):
            raise _NoFuse
        new: tuple[Affine, ...] = (last.subst({col: Affine.var("d1")}),)
        dims: tuple[Size, ...] = (shape[-1],)
        vs = [var(i) for i in idx[:-1]]
        at = len(vs) - n
        if rows and at >= 0 and vs[at:] == rows and list(shape[at:-1]) == dom[lead:-1]:
            new, dims, vs = (Affine.var("d0"), *new), (nrows, *dims), vs[:at]
        elif any(v in rows for v in vs):
            raise _NoFuse
        return dims, new, batch_at(shape, vs)

    def go(n: Node) -> Node:
        if id(n) in memo:
            return memo[id(n)]
        match n:
            case Const():
                out: Node = n
            case Op(args=args):
                out = Op(n.dtype, n.op, tuple(go(a) for a in args), n.attrs)
            case Reduce(body=body):
                out = Reduce(n.dtype, n.kind, tuple(
                    (v, names.get(e, e) if isinstance(e, str) else e) for v, e in n.vars),
                    go(body))
            case Load(index=index, mask=None, other=None) if all(
                    isinstance(i, Affine) for i in index):
                shape = _renamed(k.buffers[n.buf].shape, names)
                dims, idx, at = slab(shape, tuple(_affine(i, names) for i in index
                                                  if isinstance(i, Affine)))
                if slabs.setdefault(n.buf, (dims, at)) != (dims, at):
                    raise _NoFuse
                out = Load(n.dtype, n.buf, idx)
            case _:
                raise _NoFuse
        memo[id(n)] = out
        return out

    value = go(k.value)
    if lead and not all(isinstance(d, int) for d in dom):
        raise _NoFuse
    out_batch = tuple((int(dom[i]), math.prod(int(d) for d in dom[i + 1:])) for i in range(lead))
    bufs = tuple(replace(b, shape=slabs[i][0] if i in slabs else ())
                 for i, b in enumerate(k.buffers[:-1]))
    batches = (*(slabs[i][1] if i in slabs else () for i in range(len(bufs))), out_batch)
    domain = (nrows, dom[-1])
    out = replace(k.output, shape=domain)
    return Kernel(k.name + "_rows", (*bufs, out), sizes, domain, value, None), batches


def _single(a: Affine) -> str | None:
    """The loop variable ``a`` is by itself (coefficient 1, nothing added), else None."""
    return (a.vars[0][0] if len(a.vars) == 1 and a.vars[0][1] == 1 and not a.sizes
            and a.const == 0 else None)
