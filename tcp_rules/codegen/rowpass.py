"""A row kernel fused into the matmul whose product it reads (attention's QK^T and softmax).

A softmax over a matmul's rows reads each row of the product a few times (max, sum of exps,
the quotients) and nothing else of it. As two kernels, the product goes out to memory and comes
back; fused, the matmul writes each block of rows it finishes into a per-worker scratch that
stays in L2, and runs the row kernel on those rows before it moves on (``MatmulKernel.post``).

The row kernel is the plan step right after the matmul, the only reader of its product (a
temporary, or reshapes of it), over the product's rows: every load of a tensor with the row
kernel's shape reads the row the kernel writes (all axes but the last as the kernel's own), and
other loads read the same values for every row (constants, a vector along the last axis). The
kernel is flattened to ``[rows, columns]``, so the matmul calls it on any range of rows it owns,
whatever its batch. Static shapes only; anything else stays two kernels.
"""

from __future__ import annotations

import math
from dataclasses import replace

from tcp_rules.codegen.kernel import (
    Affine,
    Buffer,
    Const,
    Kernel,
    Load,
    MatmulKernel,
    Node,
    Op,
    Reduce,
)
from tcp_rules.codegen.plan import Plan, PlanBuffer, Step

SCRATCH = -1  # the post kernel's buffer that is the matmul's scratch rows (post_bufs)


class _NoFuse(Exception):
    pass


def fuse_row_passes(plan: Plan) -> None:
    """Fuse each row kernel into the matmul before it, where it qualifies (module docstring)."""
    steps: list[Step] = []
    for st in plan.steps:
        prev = steps[-1] if steps else None
        fused = _fuse(plan, prev, st) if prev is not None else None
        if fused is not None:
            steps[-1] = fused
        else:
            steps.append(st)
    plan.steps = steps


def _fuse(plan: Plan, m: Step, r: Step) -> Step | None:
    mk, rk = m.kernel, r.kernel
    if (not isinstance(mk, MatmulKernel) or mk.post is not None or mk.c_at is not None
            or not isinstance(rk, Kernel)):
        return None
    prod = m.buffers[-1]
    if plan.buffers[prod].kind != "temp" or prod in plan.results or rk.sizes or mk.sizes:
        return None
    readers = [s for s in plan.steps if any(plan.root(b) == prod for b in s.buffers)]
    inputs = list(r.buffers[:-1])
    at = [i for i, b in enumerate(inputs) if plan.root(b) == prod]
    if readers != [m, r] or len(at) != 1 or plan.root(r.buffers[-1]) == prod:
        return None
    shape = tuple(mk.output.shape)
    if not all(isinstance(d, int) for d in (*shape, *rk.domain)):
        return None
    dims = [int(d) for d in shape]
    rows, cols = math.prod(dims[:-1]), dims[-1]
    if rk.out_index is not None or rk.domain[-1] != cols or math.prod(rk.domain[:-1]) != rows:
        return None
    try:
        post = _flatten(rk, rows)
    except _NoFuse:
        return None
    # fused buffers: the matmul's inputs, the row kernel's other inputs, then its output seen
    # with the product's shape (a view: the matmul's domain, batch and all)
    bufs = list(m.buffers[:-1])
    post_bufs = []
    for i, b in enumerate(inputs):
        if i == at[0]:
            post_bufs.append(SCRATCH)
            continue
        if b not in bufs:
            bufs.append(b)
        post_bufs.append(bufs.index(b))
    out = r.buffers[-1]
    view = plan.add_buffer(PlanBuffer(rk.output.dtype, plan.buffers[prod].dims, "view",
                                      base=plan.root(out)))
    names = [f"in{i}" for i in range(len(bufs))]
    kbufs = tuple(Buffer(n, plan.buffers[b].dtype, _static_shape(plan, b, mk, m))
                  for n, b in zip(names, bufs, strict=True))
    kernel = replace(mk, name=rk.name, buffers=(*kbufs, Buffer("out", rk.output.dtype, shape)),
                     post=post, post_bufs=tuple(post_bufs))
    return Step(kernel, (*bufs, view), m.sizes, value=r.value)


def _static_shape(plan: Plan, pid: int, mk: MatmulKernel, m: Step) -> tuple[int | str, ...]:
    """A fused buffer's shape as a kernel buffer: the matmul's own where it has the buffer."""
    if pid in m.buffers[:-1]:
        return tuple(mk.buffers[m.buffers.index(pid)].shape)
    dims = [d.const for d in plan.buffers[pid].dims]
    if any(d is None for d in dims):
        raise AssertionError("a row kernel with symbolic buffers was fused")
    return tuple(int(d) for d in dims if d is not None)


def _flatten(k: Kernel, rows: int) -> Kernel:
    """``k`` over ``[rows, columns]``: its leading axes as one; _NoFuse where a load is not
    one of the two kinds the module docstring allows."""
    q = len(k.domain)
    lead = tuple(Affine.var(f"d{i}") for i in range(q - 1))
    last = {f"d{q - 1}": Affine.var("d1")}
    shapes: dict[int, tuple[int, ...]] = {}
    memo: dict[int, Node] = {}

    def cols(a: Affine) -> Affine:
        if any(a.coeff(f"d{i}") for i in range(q - 1)):
            raise _NoFuse
        return a.subst(last)

    def go(n: Node) -> Node:
        if id(n) in memo:
            return memo[id(n)]
        match n:
            case Const():
                out: Node = n
            case Op(args=args):
                out = Op(n.dtype, n.op, tuple(go(a) for a in args), n.attrs)
            case Reduce(body=body):
                out = Reduce(n.dtype, n.kind, n.vars, go(body))
            case Load(index=index, mask=None, other=None) if all(
                    isinstance(i, Affine) for i in index):
                shape = tuple(int(s) for s in k.buffers[n.buf].shape)
                idx = tuple(i for i in index if isinstance(i, Affine))
                new: tuple[Affine, ...]
                flat: tuple[int, ...]
                if shape == tuple(k.domain) and idx[:-1] == lead:
                    new, flat = (Affine.var("d0"), cols(idx[-1])), (rows, shape[-1])
                elif all(s == 1 for s in shape[:-1]) and all(
                        not i.vars and not i.sizes and i.const == 0 for i in idx[:-1]):
                    new, flat = (cols(idx[-1]),) if idx else (), shape[-1:]
                else:
                    raise _NoFuse
                if shapes.setdefault(n.buf, flat) != flat:
                    raise _NoFuse
                out = Load(n.dtype, n.buf, new)
            case _:
                raise _NoFuse
        memo[id(n)] = out
        return out

    value = go(k.value)
    bufs = tuple(replace(b, shape=shapes.get(i, tuple(b.shape)))
                 for i, b in enumerate(k.buffers[:-1]))
    out = replace(k.output, shape=(rows, k.domain[-1]))
    return Kernel(k.name + "_rows", (*bufs, out), (), (rows, k.domain[-1]), value, None)
