"""A product of a row pass's rows run inside the matmul that runs the row pass (attention).

Attention is softmax(Q K^T) V. rowpass.py already runs the softmax on each block of Q K^T's
rows while they sit in the worker's scratch; the probabilities P then went out to memory and
a second kernel multiplied them by V. Here that second matmul, where it is P's only reader and
reads P as its A, runs inside the first kernel instead (``MatmulKernel.then``): the row pass
writes each block's rows of P to the worker's scratch, and the second product multiplies
those rows by their batch's V and writes its output rows. The step packs every batch's V
once a call, with K^T (tiling.packed_b), not each worker the batches it meets. Q K^T, scale,
mask, softmax and P V are then one loop nest over blocks of query rows, as in flash-attention,
except that a block sees all the keys at once (the softmax's rows are whole, so no running
rescaling is needed).

The program decides, not this module: a product runs inside only where the program reads its A
with ``load_matmul_rows`` (the fusion rule ``chain-rows`` makes one where the e-graph finds
``load_matmul(kernel(a), b)``, and the cost model takes it for saving A's write and read). The
lowering materializes that A and lists its buffer in ``Plan.by_rows``; here the step writing it
and the product reading it become one where the conditions below hold, and stay two (what
``load_matmul`` would give) where they do not.

The second product may read V through a strided layout (heads split out of a projection) and
write through one (heads merged back, strides.py); its epilogue loads nothing; its N is static
(the scratch is sized by it); its rows and batches are the first's. Steps between the two (V's
projection) keep their place: the fused step runs where the second product did.

A third product of the second's rows (a single head's output projection, O W) runs inside the
same way (``then.then``): the second product then writes each block's rows of O to the
scratch, and the third multiplies them by W (packed once a call, after V). Only without a batch:
with heads, a block of O's rows holds one head's columns, and the projection needs all.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import replace

from tcp_rules.codegen.kernel import Buffer, MatmulKernel, Size, Strided
from tcp_rules.codegen.plan import Plan, Step


def fuse_row_products(plan: Plan) -> None:
    """Fuse each qualifying second product into the matmul and row pass before it, and a
    qualifying third product (an output projection) into that."""
    i = 0
    while i < len(plan.steps):
        m = plan.steps[i]
        fused = j = None
        if isinstance(m.kernel, MatmulKernel) and m.kernel.post is not None:  # P's reader
            prod = plan.root(m.buffers[-1])
            j = next((j for j in range(i + 1, len(plan.steps)) if any(
                plan.root(b) == prod for b in plan.steps[j].buffers)), None)
            if j is not None:
                fuse = _fuse if m.kernel.then is None else _fuse_third
                fused = fuse(plan, m, plan.steps[j], plan.steps[i + 1:j])
        if fused is None:
            i += 1
            continue
        assert j is not None
        plan.steps[j] = fused
        del plan.steps[i]  # (the fused step, now at j - 1, may take a third product)


def _reader(plan: Plan, m: Step, r: Step, between: list[Step]
            ) -> Callable[[Size], Size] | None:
    """Whether ``r`` may run inside ``m``: ``m``'s output is a temporary that the program reads
    by rows (``Plan.by_rows``), only ``r`` reads it, as its A and not as its B, none of the
    steps between writes what ``m`` reads (they keep their place, and the fused step runs where
    ``r`` did), and ``r``'s sizes are ``m``'s. Then the renaming of ``r``'s size parameters to
    ``m``'s."""
    mk, rk = m.kernel, r.kernel
    prod = plan.root(m.buffers[-1])
    if (plan.buffers[prod].kind != "temp" or prod not in plan.by_rows
            or prod in map(plan.root, plan.results)
            or plan.root(r.buffers[0]) != prod or plan.root(r.buffers[1]) == prod
            or not plan.only_readers(prod, m, r)):
        return None
    reads = {plan.root(b) for b in m.buffers[:-1]}
    if any(plan.root(s.buffers[-1]) in reads for s in between):
        return None
    if any(d not in m.sizes for d in r.sizes):
        return None
    names = dict(zip(rk.sizes, (mk.sizes[m.sizes.index(d)] for d in r.sizes), strict=True))

    def ren(s: Size) -> Size:
        return names.get(s, s) if isinstance(s, str) else s
    return ren


def _fuse(plan: Plan, m: Step, r: Step, between: list[Step]) -> Step | None:
    mk, rk = m.kernel, r.kernel
    if (not isinstance(mk, MatmulKernel) or mk.post is None or mk.then is not None
            or not isinstance(rk, MatmulKernel) or rk.post is not None or rk.then is not None
            or rk.a_at is not None or len(rk.buffers) != 3 or not isinstance(rk.n, int)
            or rk.batched != mk.batched or rk.buffers[0].dtype is not mk.output.dtype):
        return None
    ren = _reader(plan, m, r, between)
    if ren is None:
        return None
    # P is the row pass's output, [batch,] rows, columns as it lies; the second product reads
    # it as its A, so their rows, columns and batches must be the same
    tm, tk, tn = ren(rk.m), ren(rk.k), rk.n
    if tm != mk.m or tk != mk.n or (mk.batched and ren(rk.domain[0]) != mk.domain[0]):
        return None
    batch = mk.domain[0] if mk.batched else 1
    if mk.batched and not all(isinstance(s, int) for s in (batch, tm, tk)):
        return None  # a batch's part of V and of the output must start at a static stride

    def per_batch(at: Strided | None, rows: int) -> tuple[tuple[int, int], ...]:
        if at is not None:
            return at.batch
        return ((int(batch), rows),) if mk.batched else ()
    b_shape = (tn, tk) if rk.b_t else (tk, tn)
    v_batch = per_batch(rk.b_at, math.prod(int(s) for s in b_shape) if mk.batched else 0)
    out_batch = per_batch(rk.c_at, int(tm) * tn if mk.batched else 0)
    v_buf, out_buf = rk.buffers[1], rk.output
    then = MatmulKernel(
        rk.name + "_rows", (
            Buffer("a", rk.buffers[0].dtype, (tm, tk)),
            Buffer("b", v_buf.dtype, b_shape if rk.b_at is None else _renamed(v_buf, ren)),
            Buffer("out", out_buf.dtype, (tm, tn) if rk.c_at is None else _renamed(out_buf, ren))),
        mk.sizes, False, tm, tk, tn, rk.epilogue, rk.b_t, None,
        None if rk.b_at is None else Strided((), rk.b_at.rows),
        None if rk.c_at is None else Strided((), rk.c_at.rows))
    bufs, kbufs = list(m.buffers[:-1]), list(mk.buffers[:-1])
    if r.buffers[1] not in bufs:
        bufs.append(r.buffers[1])
        kbufs.append(Buffer(f"in{len(kbufs)}", v_buf.dtype, _renamed(v_buf, ren)))
    kernel = replace(mk, name=rk.name, buffers=(*kbufs, Buffer(
        "out", out_buf.dtype, _renamed(out_buf, ren))), then=then,
        then_b=bufs.index(r.buffers[1]), then_batch=(v_batch, out_batch))
    return m.fused(r, kernel, (*bufs, r.buffers[-1]))


def _fuse_third(plan: Plan, m: Step, r: Step, between: list[Step]) -> Step | None:
    """The second product's output O times a B, where that product is O's only reader and takes
    it as its A (single-head attention's output projection): the second product's rows then go
    to the scratch too, and the third product (``then.then``) multiplies them. Unbatched only:
    with heads, a block's rows of O hold one head's columns, and the projection needs all."""
    mk, rk = m.kernel, r.kernel
    assert isinstance(mk, MatmulKernel)
    t = mk.then
    if (t is None or t.then is not None or mk.batched or t.c_at is not None
            or not isinstance(rk, MatmulKernel) or rk.post is not None or rk.then is not None
            or rk.batched or rk.a_at is not None or rk.b_at is not None or rk.c_at is not None
            or len(rk.buffers) != 3 or not isinstance(rk.n, int)
            or rk.buffers[0].dtype is not t.output.dtype):
        return None
    ren = _reader(plan, m, r, between)
    if ren is None:
        return None
    # O's rows and columns are the second product's
    if ren(rk.m) != t.m or ren(rk.k) != t.n:
        return None
    w_buf, out_buf = rk.buffers[1], rk.output
    third = MatmulKernel(
        rk.name + "_rows", (
            Buffer("a", rk.buffers[0].dtype, (t.m, t.n)),
            Buffer("b", w_buf.dtype, _renamed(w_buf, ren)),
            Buffer("out", out_buf.dtype, _renamed(out_buf, ren))),
        mk.sizes, False, t.m, t.n, rk.n, rk.epilogue, rk.b_t)
    bufs, kbufs = list(m.buffers[:-1]), list(mk.buffers[:-1])
    if r.buffers[1] not in bufs:
        bufs.append(r.buffers[1])
        kbufs.append(Buffer(f"in{len(kbufs)}", w_buf.dtype, _renamed(w_buf, ren)))
    # the third product's B is the fused kernel's buffer then.then_b
    second = replace(t, then=third, then_b=bufs.index(r.buffers[1]), then_batch=((), ()))
    kernel = replace(mk, name=rk.name, buffers=(*kbufs, Buffer(
        "out", out_buf.dtype, _renamed(out_buf, ren))), then=second)
    return m.fused(r, kernel, (*bufs, r.buffers[-1]))


def _renamed(buf: Buffer, ren: Callable[[Size], Size]) -> tuple[Size, ...]:
    return tuple(ren(s) for s in buf.shape)
