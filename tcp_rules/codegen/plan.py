"""A compiled function's plan: buffers, kernel steps, and their concrete sizes for one call.

Buffers are the func's parameters, its results, temporaries, constants, and views (a reshape
reinterprets its operand's buffer under a new shape). Each step runs one kernel on some buffers.
Before any native code runs for a new binding of the symbolic dims, :func:`instantiate` computes
every shape and checks, by interval arithmetic over the loop bounds, that every load and store of
every kernel stays inside its buffer: no input can make a kernel read or write out of bounds.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import numpy as np

from tcp_rules.codegen.kernel import (
    Affine,
    AnyKernel,
    ClampIndex,
    Load,
    MatmulKernel,
    Node,
    PadIndex,
    Reduce,
    Size,
    Strided,
    children,
)
from tcp_rules.diagnostics import TcpError
from tcp_rules.ir import Apply, Func, Value
from tcp_rules.ops import ShapeError
from tcp_rules.types import Dim, DType, TensorType


@dataclass
class PlanBuffer:
    """A buffer of the plan; ``kind`` is param, result, temp, const or view."""

    dtype: DType
    dims: tuple[Dim, ...]
    kind: str
    param: int | None = None
    data: np.ndarray | None = None
    base: int | None = None


@dataclass
class Step:
    """Run ``kernel`` on plan buffers ``buffers`` with its size parameters set to ``sizes``."""

    kernel: AnyKernel
    buffers: tuple[int, ...]
    sizes: tuple[Dim, ...]
    symbol: str = ""
    value: Value | None = None  # the program value this kernel writes (None: a result copy)
    merged: tuple[Value, ...] = ()  # values of the steps fused into this one, in their order

    @property
    def outputs(self) -> tuple[int, ...]:
        """The buffers the step writes: its kernel's output, or with sibling products
        (MatmulKernel.siblings) each product's, in order; the last is ``value``'s."""
        if not isinstance(self.kernel, MatmulKernel):
            return (self.buffers[-1],)
        return tuple(self.buffers[at[-1]] for _, at in self.kernel.products)

    @property
    def values(self) -> tuple[Value, ...]:
        """The program values the step computes: the fused steps', then its own."""
        return (*self.merged, *((self.value,) if self.value is not None else ()))

    def fused(self, then: Step, kernel: AnyKernel, buffers: tuple[int, ...]) -> Step:
        """This step and ``then`` as the one step running ``kernel`` on ``buffers``: it writes
        what ``then`` wrote, and computes what both did (kernel listings, cost estimates)."""
        return Step(kernel, buffers, self.sizes, value=then.value,
                    merged=(*self.values, *then.merged))


@dataclass
class Plan:
    """What a compiled func runs: its buffers and kernel steps in order."""

    func: Func
    buffers: list[PlanBuffer] = field(default_factory=list)
    steps: list[Step] = field(default_factory=list)
    results: list[int] = field(default_factory=list)
    # Values whose shape rule depends on sizes known only at run time (reflect padding of a
    # symbolic axis): re-checked by instantiate with the concrete shapes.
    checks: list[Apply] = field(default_factory=list)
    # Temporaries that a ``load_matmul_rows`` reads as its A: the program asks that the product
    # reading one run inside the step that writes it, by blocks of rows (chain.py).
    by_rows: set[int] = field(default_factory=set)

    def add_buffer(self, buf: PlanBuffer) -> int:
        """Append a buffer; its id."""
        self.buffers.append(buf)
        return len(self.buffers) - 1

    def merge_steps(self, merge: Callable[[Step, Step], Step | None]) -> None:
        """Replace each step and the step after it by what ``merge`` makes of the two, where
        it makes one (None: they stay apart); a merged step may merge with the next again."""
        steps: list[Step] = []
        for st in self.steps:
            merged = merge(steps[-1], st) if steps else None
            if merged is not None:
                steps[-1] = merged
            else:
                steps.append(st)
        self.steps = steps

    def root(self, pid: int) -> int:
        """The buffer holding ``pid``'s storage: its base if it is a view, else itself."""
        b = self.buffers[pid]
        return b.base if b.kind == "view" and b.base is not None else pid

    def only_readers(self, pid: int, *steps: Step) -> bool:
        """Whether ``steps`` (these objects, in this order) are the steps that touch ``pid``'s
        storage, through any view of it."""
        touching = [s for s in self.steps if any(self.root(b) == pid for b in s.buffers)]
        return len(touching) == len(steps) and all(
            s is t for s, t in zip(touching, steps, strict=True))


@dataclass
class StepInstance:
    sizes: np.ndarray  # int64 size parameters (kept alive: kernels read them)
    extent: int  # the outermost loop's trip count, split across threads
    work: int  # elements (or multiply-adds) the step touches, to decide on splitting
    matmul: tuple[int, int, int, int] | None = None  # batch, m, k, n


@dataclass
class Instance:
    """Concrete shapes and per-step sizes for one binding of the symbols."""

    shapes: list[tuple[int, ...]]
    steps: list[StepInstance]


def _eval(d: Dim, env: Mapping[str, int]) -> int:
    c = d.subst(env).const
    if c is None:
        raise TcpError.at(f"cannot determine dim {d} from the inputs", stage="run")
    return c


def instantiate(plan: Plan, env: Mapping[str, int]) -> Instance:
    """Shapes and kernel sizes for ``env``; TcpError if a kernel could go out of bounds."""
    shapes = [tuple(_eval(d, env) for d in b.dims) for b in plan.buffers]
    for b, s in zip(plan.buffers, shapes, strict=True):
        if any(n < 0 for n in s):
            raise TcpError.at(f"a negative dim in shape {list(s)}", stage="run")
        if b.base is not None and int(np.prod(s)) != int(np.prod(shapes[b.base])):
            raise TcpError.at(f"reshape of {list(shapes[b.base])} to {list(s)} changes the "
                              f"number of elements", stage="run")
    for v in plan.checks:
        try:
            v.op.infer([TensorType.of(o.type.dtype, tuple(_eval(d, env) for d in o.type.dims))
                        for o in v.operands], v.attr_map)
        except ShapeError as e:
            raise TcpError.at(f"{v.op.name}: {e.message}", v.span, stage="run") from None
    steps = []
    for st in plan.steps:
        sizes = {n: _eval(d, env) for n, d in zip(st.kernel.sizes, st.sizes, strict=True)}
        check_step(st.kernel, [shapes[i] for i in st.buffers], sizes)
        arr = np.array([sizes[n] for n in st.kernel.sizes] or [0], dtype=np.int64)
        dom = [_size(s, sizes) for s in st.kernel.domain]
        extent = dom[0 if isinstance(st.kernel, MatmulKernel) else st.kernel.split] if dom else 1
        work = int(np.prod(dom)) if dom else 1
        mm = None
        if isinstance(st.kernel, MatmulKernel):
            k = _size(st.kernel.k, sizes)
            batch = dom[0] if st.kernel.batched else 1
            mm = (batch, _size(st.kernel.m, sizes), k, _size(st.kernel.n, sizes))
            work *= max(k, 1)
            t = st.kernel.then
            if t is not None:  # and the second product's multiply-adds (and a third's)
                rows = work // max(k, 1) // max(mm[3], 1)  # batch * m
                work += rows * mm[3] * _size(t.n, sizes)
                if t.then is not None:
                    work += rows * _size(t.n, sizes) * _size(t.then.n, sizes)
            for sib in st.kernel.siblings:  # the other products of A's rows
                work += mm[1] * mm[2] * _size(sib.n, sizes)
            extent = mm[1]
        else:
            work *= _reduce_work(st.kernel.value, sizes)
        steps.append(StepInstance(arr, extent, work, mm))
    return Instance(shapes, steps)


def _size(s: Size, sizes: Mapping[str, int]) -> int:
    return s if isinstance(s, int) else sizes[s]


def _reduce_work(n: Node, sizes: Mapping[str, int]) -> int:
    if isinstance(n, Reduce):
        inner = int(np.prod([_size(e, sizes) for _, e in n.vars]))
        return max(1, inner) * _reduce_work(n.body, sizes)
    return max([_reduce_work(c, sizes) for c in children(n)], default=1)


def _range(a: Affine, ranges: Mapping[str, int], sizes: Mapping[str, int]) -> tuple[int, int]:
    lo = hi = a.const + sum(c * sizes[n] for n, c in a.sizes)
    for n, c in a.vars:
        top = ranges[n] - 1
        lo += min(0, c * top)
        hi += max(0, c * top)
    return lo, hi


def check_step(k: AnyKernel, shapes: list[tuple[int, ...]], sizes: Mapping[str, int]) -> None:
    """Every access of ``k`` lies inside its buffer for these shapes and sizes."""
    def fail(msg: str) -> TcpError:
        return TcpError.at(f"kernel {k.name}: {msg}", stage="run")

    if isinstance(k, MatmulKernel) and k.siblings:  # each product on its buffers, A shared
        if len(shapes) != k.step_buffers:
            raise fail(f"{len(shapes)} buffers for products of {k.step_buffers}")
        (k, ours), *others = k.products
        for sib, at in others:
            check_step(sib, [shapes[i] for i in at], sizes)
        shapes = [shapes[i] for i in ours]

    for buf, shape in zip(k.buffers, shapes, strict=True):
        want = tuple(_size(s, sizes) for s in buf.shape)
        if want != shape:
            raise fail(f"buffer {buf.name} is {list(shape)}, the kernel expects {list(want)}")
    dom = [_size(s, sizes) for s in k.domain]
    if any(n == 0 for n in dom):
        return  # no iteration runs
    ranges = {f"d{i}": n for i, n in enumerate(dom)}
    if isinstance(k, MatmulKernel):
        _check_matmul(k, shapes, sizes, fail)
        root: Node = k.epilogue
    else:
        root = k.value
        for a, n in zip(k.out_map(), shapes[-1], strict=True):
            lo, hi = _range(a, ranges, sizes)
            if lo < 0 or hi >= n:
                raise fail(f"stores outside the output ({lo}..{hi} on an axis of {n})")
    seen: set[int] = set()
    stack: list[tuple[Node, dict[str, int]]] = [(root, ranges)]
    while stack:
        node, rg = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, Reduce):
            ext = {v: _size(e, sizes) for v, e in node.vars}
            if any(e == 0 for e in ext.values()):
                continue  # the body never runs
            rg = {**rg, **ext}
        if isinstance(node, Load):
            ld = node
            for axis, (ix, dim) in enumerate(zip(ld.index, shapes[ld.buf], strict=True)):
                if isinstance(ix, Affine):
                    lo, hi = _range(ix, rg, sizes)
                    if lo < 0 or hi >= dim:
                        raise fail(f"reads {k.buffers[ld.buf].name} at {lo}..{hi} on axis "
                                   f"{axis} of size {dim}")
                elif isinstance(ix, PadIndex) and _size(ix.extent, sizes) == dim and (
                        dim >= 1 or ld.mask is not None):
                    pass  # clamped into the axis; with a mask, never read when it is empty
                elif not isinstance(ix, ClampIndex) or not 1 <= _size(ix.extent, sizes) <= dim:
                    raise fail(f"a data-dependent index into {k.buffers[ld.buf].name} is not "
                               f"clamped into its axis {axis} of size {dim}")
        stack.extend((c, rg) for c in children(node))


def _check_matmul(k: MatmulKernel, shapes: list[tuple[int, ...]], sizes: Mapping[str, int],
                  fail: Callable[[str], TcpError]) -> None:
    a, b, out = shapes[0], shapes[1], shapes[-1]
    m, kk, n = (_size(s, sizes) for s in (k.m, k.k, k.n))
    lead = (_size(k.domain[0], sizes),) if k.batched else ()
    b_rows = (n, kk) if k.b_t else (kk, n)

    def fits(shape: tuple[int, ...], at: Strided | None, rows: tuple[int, int]) -> bool:
        if at is None:
            return shape == (*lead, *rows)
        count = int(np.prod([s for s, _ in at.batch], dtype=np.int64))
        return count == (lead[0] if lead else 1) and at.span(*rows) <= int(np.prod(shape))
    if not fits(a, k.a_at, (m, kk)) or not fits(b, k.b_at, b_rows) or (k.then is None and not fits(
            out, k.c_at, (m, n))):
        raise fail(f"matmul shapes {list(a)} @ {list(b)} -> {list(out)} do not agree")
    if k.then is not None:  # each batch's part of the second product's B and output inside
        t = k.then
        tn = _size(t.n, sizes)
        parts = [(k.then_b, t.b_at, (tn, n) if t.b_t else (n, tn), k.then_batch[0])]
        if t.then is None:
            parts.append((len(shapes) - 1, t.c_at, (m, tn), k.then_batch[1]))
        else:  # a third product's B and output (unbatched: chain.py)
            un = _size(t.then.n, sizes)
            parts += [(t.then_b, None, (un, tn) if t.then.b_t else (tn, un), ()),
                      (len(shapes) - 1, None, (m, un), ())]
        for i, at, rows, subs in parts:
            span = at.span(*rows) if at is not None else rows[0] * rows[1]
            if sum((s - 1) * st for s, st in subs) + span > int(np.prod(shapes[i])):
                raise fail(f"a chained product reaches beyond {k.buffers[i].name}'s end")
    if k.post is not None:  # each batch's part of its buffers inside ours, its loads inside
        slabs = [tuple(_size(s, sizes) for s in buf.shape) for buf in k.post.buffers]
        for i, slab, subs in zip((*k.post_bufs, len(shapes) - 1), slabs, k.post_batch,
                                 strict=True):
            if i < 0 or (k.then is not None and i == len(shapes) - 1):
                continue  # the product's rows, or P's (then) in the worker's scratch
            if sum((s - 1) * t for s, t in subs) + int(np.prod(slab)) > int(
                    np.prod(shapes[i])):
                raise fail(f"the row pass reads {k.buffers[i].name} beyond its end")
        check_step(k.post, slabs, sizes)
