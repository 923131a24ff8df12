"""Sibling products: matmuls of one A run as one kernel (attention's Q, K and V projections).

Attention projects one input three times, q = x Wq, k = x Wk and v = x Wv: three matmuls that
each read all of x. Here a later product of the same A joins an earlier one
(``MatmulKernel.siblings``): the step packs every product's B before any rows run, and each
block of MC rows of A goes through every product in turn (matmul.py), so that x is read from
memory once, by one kernel, and packed once: the products that pack A share the packed block.

A product joins when both are unbatched matmuls that read the same buffer as their A, where it
lies (no strided A), with the same M, K and size parameters, and neither has a row pass or a
chained product; the later one's N is static (its B's region of the packed buffer is sized by
it), nothing was fused into its step, it reads nothing the earlier step writes, and none of the
steps between writes what it reads or touches what it writes: it moves up to the earlier step's
place, and the steps between keep theirs.
"""

from __future__ import annotations

from dataclasses import replace

from tcp_rules.codegen.kernel import MatmulKernel
from tcp_rules.codegen.plan import Plan, Step


def fuse_siblings(plan: Plan) -> None:
    """Join each matmul step with the later matmul steps of the same A that may join it."""
    i = 0
    while i < len(plan.steps):
        j = i + 1
        while j < len(plan.steps):
            joined = _join(plan, plan.steps[i], plan.steps[j], plan.steps[i + 1:j])
            if joined is None:
                j += 1
                continue
            plan.steps[i] = joined
            del plan.steps[j]
        i += 1


def _plain(k: MatmulKernel) -> bool:
    return not k.batched and k.post is None and k.then is None and k.a_at is None


def _join(plan: Plan, m: Step, r: Step, between: list[Step]) -> Step | None:
    """``m`` with ``r`` as one more sibling product, or None where ``r`` may not join it."""
    mk, rk = m.kernel, r.kernel
    if (not isinstance(mk, MatmulKernel) or not isinstance(rk, MatmulKernel)
            or not _plain(mk) or not _plain(rk) or rk.siblings or r.merged
            or m.buffers[0] != r.buffers[0] or not isinstance(rk.n, int)
            or (rk.m, rk.k, rk.sizes, r.sizes) != (mk.m, mk.k, mk.sizes, m.sizes)):
        return None
    reads = {plan.root(b) for b in r.buffers[:-1]}
    out = plan.root(r.buffers[-1])
    if any(plan.root(o) in reads for o in m.outputs):
        return None  # r needs all of what m writes a block at a time
    for s in between:
        if any(plan.root(o) in reads for o in s.outputs) or any(
                plan.root(b) == out for b in s.buffers):
            return None
    kernel = replace(mk, siblings=(*mk.siblings, rk))
    return Step(kernel, (*m.buffers, *r.buffers[1:]), m.sizes, value=r.value,
                merged=m.values)
