"""Kernels: loop nests over an output shape, in the spirit of linalg.generic.

A :class:`Kernel` iterates a *domain* (one loop per output axis, extents known at run time) and
stores one scalar value per point into its output buffer. The value is a DAG of scalar nodes:

- :class:`Load` reads an input buffer through an indexing map: one :class:`Affine` expression of
  the loop indices per buffer axis (broadcasts, transposes and slices are only maps, never copies),
  or a data-dependent index clamped into range (gather);
- :class:`Op` applies an op of the op table to scalars (``add``, ``exp``, ``select``, ``cast``...);
- :class:`Reduce` folds its body over reduction loops of its own (``sum``, ``prod``, ``max``,
  ``min``); a reduce whose value depends only on outer indices is hoisted out of inner loops, so a
  whole row softmax is one kernel;
- :class:`Const` is a literal; :class:`Acc` is the accumulator of a :class:`MatmulKernel`, whose
  ``epilogue`` (bias, activation) runs on each output tile before it is stored.

Extents and some offsets are *sizes*: an integer, or the name of a size parameter the runtime
passes in (``s0``, ``s1``...). Loop indices are named ``d0..`` (domain) and ``r0..`` (reductions).
A kernel's canonical text (:func:`kernel_text`) is its identity for caching.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from tcp_rules.types import DType

Size = int | str  # a constant, or the name of a size parameter


@dataclass(frozen=True)
class Affine:
    """``sum(c * loop_var) + sum(c * size_param) + const``: one axis of an indexing map."""

    vars: tuple[tuple[str, int], ...] = ()
    sizes: tuple[tuple[str, int], ...] = ()
    const: int = 0

    @staticmethod
    def var(name: str, coeff: int = 1) -> Affine:
        return Affine(vars=((name, coeff),)) if coeff else Affine()

    @staticmethod
    def of(value: Size) -> Affine:
        """A constant, or a size parameter by name."""
        return Affine(sizes=((value, 1),)) if isinstance(value, str) else Affine(const=value)

    def __add__(self, other: Affine | int) -> Affine:
        o = other if isinstance(other, Affine) else Affine(const=other)
        return Affine(_merge(self.vars, o.vars), _merge(self.sizes, o.sizes),
                      self.const + o.const)

    def scale(self, k: int) -> Affine:
        return Affine(tuple((n, c * k) for n, c in self.vars if c * k),
                      tuple((n, c * k) for n, c in self.sizes if c * k), self.const * k)

    def coeff(self, var: str) -> int:
        return dict(self.vars).get(var, 0)

    def subst(self, env: Mapping[str, Affine]) -> Affine:
        """Replace loop variables by affine expressions (composition of indexing maps)."""
        out = Affine(sizes=self.sizes, const=self.const)
        for n, c in self.vars:
            out = out + (env[n].scale(c) if n in env else Affine.var(n, c))
        return out

    def __str__(self) -> str:
        parts = [n if c == 1 else f"{c}*{n}" for n, c in (*self.vars, *self.sizes)]
        if self.const or not parts:
            parts.append(str(self.const))
        return "+".join(parts).replace("+-", "-")


def _merge(a: tuple[tuple[str, int], ...], b: tuple[tuple[str, int], ...]
           ) -> tuple[tuple[str, int], ...]:
    acc = dict(a)
    for n, c in b:
        acc[n] = acc.get(n, 0) + c
    return tuple(sorted((n, c) for n, c in acc.items() if c))


# Scalar nodes ---------------------------------------------------------------------------------

# The dtypes the packed matmul microkernel handles (f16 and bf16 converted to f32 while packing,
# tiling.py); a matmul of another dtype (8- and 16-bit and unsigned integers) lowers to a plain
# reduction over k (lower.py).
MATMUL_DTYPES = frozenset({DType.F32, DType.F64, DType.I32, DType.I64, DType.F16, DType.BF16})


@dataclass(frozen=True)
class Node:
    """A scalar value of the kernel body; ``dtype`` is the element type it holds."""

    dtype: DType


@dataclass(frozen=True)
class Const(Node):
    """A constant. Nodes key dicts (names, emitted values), so a constant compares by its bits:
    0.0 == -0.0 in Python, and merging them gave add(0.0, x) the -0.0 of a sibling literal."""

    value: float | int | bool = field(compare=False)
    bits: tuple[str, int] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        v = self.value
        key = (struct.unpack("<q", struct.pack("<d", v))[0] if isinstance(v, float)
               else int(v))
        object.__setattr__(self, "bits", (type(v).__name__, key))


@dataclass(frozen=True)
class Load(Node):
    """``buffers[buf][index]``; an index entry that is a Node is data-dependent (a ClampIndex
    or a PadIndex). With a ``mask``, the load happens only where the mask holds (a predicated
    load, so it may point into an empty buffer) and the value is ``other`` elsewhere."""

    buf: int
    index: tuple[Affine | Node, ...]
    mask: Node | None = None
    other: Node | None = None


@dataclass(frozen=True)
class PadIndex(Node):
    """Where a pad's result reads its operand along one axis: ``index - low`` brought into
    ``0..extent-1`` by ``mode``: edge clamps, reflect mirrors (then clamps, so memory safety
    never rests on the shape check), constant clamps and the load is masked by Inside."""

    index: Affine | Node
    low: int
    extent: Size
    mode: str


@dataclass(frozen=True)
class Inside(Node):
    """i1: for every (index, low, extent), ``0 <= index - low < extent`` (constant pads)."""

    axes: tuple[tuple[Affine | Node, int, Size], ...]


@dataclass(frozen=True)
class ClampIndex(Node):
    """An integer value clamped into ``0..extent-1`` as an index (gather's semantics)."""

    value: Node
    extent: Size


@dataclass(frozen=True)
class Op(Node):
    """An op of the op table applied to scalar operands; ``attrs`` as in the program IR."""

    op: str
    args: tuple[Node, ...]
    attrs: tuple[tuple[str, Any], ...] = ()


REDUCE_KINDS = ("sum", "prod", "max", "min")


@dataclass(frozen=True)
class Reduce(Node):
    """Fold ``body`` over the loops ``vars`` (name, extent) with ``kind``.

    Float sums are reassociated (vectorized); f32 ones add blocks in f32 and the block sums in
    f64 (accumulators.F32_SUM_BLOCK); that is an approximate transformation, like NumPy's own
    pairwise order.
    """

    kind: str
    vars: tuple[tuple[str, Size], ...]
    body: Node


@dataclass(frozen=True)
class Acc(Node):
    """The matmul result at the current output point (only in a MatmulKernel's epilogue)."""


# Kernels --------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Buffer:
    """A kernel argument: a contiguous row-major array of ``dtype`` and ``shape``."""

    name: str
    dtype: DType
    shape: tuple[Size, ...]

    @property
    def rank(self) -> int:
        return len(self.shape)


@dataclass(frozen=True)
class Kernel:
    """A loop nest over ``domain``; the last buffer is the output, written at ``out_index``.

    ``out_index`` None is the identity map (the domain is the output's shape); concat writes
    each operand through a shifted map instead. ``split`` is the domain axis whose loop runs
    over the ``[lo, hi)`` the runtime hands each chunk (the threads' split); the axes before it
    have a static extent of 1 (a batch-1 program's kernels: splitting their first axis left
    them on one thread).
    """

    name: str
    buffers: tuple[Buffer, ...]
    sizes: tuple[str, ...]
    domain: tuple[Size, ...]
    value: Node
    out_index: tuple[Affine, ...] | None = None
    split: int = 0

    @property
    def output(self) -> Buffer:
        return self.buffers[-1]

    def out_map(self) -> tuple[Affine, ...]:
        if self.out_index is not None:
            return self.out_index
        return tuple(Affine.var(f"d{i}") for i in range(len(self.domain)))


POST_ROWS = -1  # MatmulKernel.post_bufs: the row kernel's buffer that is the product's rows


@dataclass(frozen=True)
class Strided:
    """Where a matmul operand's elements lie in its buffer, when not as a contiguous
    ``[batch,] rows, columns`` array: element (b, i, j) is at ``batch offset(b) + i * rows + j``,
    the batch offset the sum over ``batch``'s (size, stride) sub-axes (outermost first) of the
    sub-axis' digit of b times its stride. Multi-head attention's heads split out of a
    ``[tokens, heads * width]`` projection read this way, with no transpose kernel."""

    batch: tuple[tuple[int, int], ...]
    rows: int

    def span(self, rows: int, cols: int) -> int:
        """One past the largest offset read for ``rows`` x ``cols`` per batch."""
        return (sum((s - 1) * t for s, t in self.batch) + (rows - 1) * self.rows + cols
                if rows and cols else 0)

    def __str__(self) -> str:
        subs = " ".join(f"{s}:{t}" for s, t in self.batch)
        return f"strided(batch {subs or '-'}, rows {self.rows})"


@dataclass(frozen=True)
class MatmulKernel:
    """``out[b, i, j] = epilogue(sum_k a[b, i, k] * b[b, k, j])`` (rank 2 without ``b``), or
    ``b[b, j, k]`` with ``b_t``.

    Buffers: a, b, then any inputs the epilogue loads (through maps over d0..), then the output.
    The epilogue is a scalar body in which :class:`Acc` stands for the product. ``a_at``,
    ``b_at`` and ``c_at`` (static sizes only) say where a strided operand or output lies in its
    buffer, which then has the shape of the tensor beneath the view.
    """

    name: str
    buffers: tuple[Buffer, ...]
    sizes: tuple[str, ...]
    batched: bool
    m: Size
    k: Size
    n: Size
    epilogue: Node
    b_t: bool = False  # b is stored transposed, [batch,] n, k (a transpose folded into packing)
    a_at: Strided | None = None
    b_at: Strided | None = None  # as stored: [batch,] n, k rows with b_t
    c_at: Strided | None = None  # the output (heads merged back as they are written)
    # A row kernel over one batch's [rows, columns], run on each block of rows of the product,
    # which then goes to a per-worker scratch instead of the output (rowpass.py). Its buffers
    # are the scratch (post_bufs entry -1) or this kernel's buffers (their index); its output
    # is ours. post_batch: for each of its buffers (output last), the (size, stride) sub-axes
    # giving where a batch's part of that buffer starts.
    post: Kernel | None = None
    post_bufs: tuple[int, ...] = ()
    post_batch: tuple[tuple[tuple[int, int], ...], ...] = ()
    # A product of the row pass's rows (attention's P V, chain.py), run on each block of rows
    # once the row pass has written them to the scratch: one batch's product (unbatched, our
    # size parameters) with the rows as its A, our buffer ``then_b`` as its B and our output as
    # its output. then_batch: for that B and the output, the (size, stride) sub-axes giving
    # where a batch's part starts. That product may have a ``then`` of its own (a third
    # product of its rows, unbatched only): its then_b is then a buffer of the outermost
    # kernel, whose output the third product writes.
    then: MatmulKernel | None = None
    then_b: int = 1
    then_batch: tuple[tuple[tuple[int, int], ...], ...] = ()
    # Other products of the same A (siblings.py: attention's Q, K and V projections of one
    # input), run on each block of A's rows after ours: unbatched, each with its own B,
    # epilogue and output, and our sizes. The step's buffers are ours, then each one's but
    # its A (which is our A).
    siblings: tuple[MatmulKernel, ...] = ()

    @property
    def output(self) -> Buffer:
        return self.buffers[-1]

    @property
    def step_buffers(self) -> int:
        """How many buffers the kernel's step passes: ours, then each sibling's but its A."""
        return len(self.buffers) + sum(len(s.buffers) - 1 for s in self.siblings)

    @property
    def products(self) -> tuple[tuple[MatmulKernel, tuple[int, ...]], ...]:
        """Each product the kernel's step runs (ours without the siblings, then each sibling)
        and where its buffers are among the step's: ours, then each sibling's but its A,
        which is ours (index 0)."""
        out = [(replace(self, siblings=()), tuple(range(len(self.buffers))))]
        at = len(self.buffers)
        for sib in self.siblings:
            out.append((sib, (0, *range(at, at + len(sib.buffers) - 1))))
            at += len(sib.buffers) - 1
        return tuple(out)

    @property
    def domain(self) -> tuple[Size, ...]:
        """[batch,] m, n: the output's shape, or the product's where it is written strided or
        goes on into a second product (``then``)."""
        if self.then is not None:
            count = math.prod(size for size, _ in self.then_batch[-1])
        elif self.c_at is None:
            return self.output.shape
        else:
            count = math.prod(size for size, _ in self.c_at.batch)
        return ((count,) if self.batched else ()) + (self.m, self.n)


AnyKernel = Kernel | MatmulKernel


def walk(root: Node) -> Iterator[Node]:
    """Every node reachable from ``root`` once, operands before users."""
    seen: set[int] = set()
    stack: list[tuple[Node, bool]] = [(root, False)]
    while stack:
        n, done = stack.pop()
        if done:
            yield n
            continue
        if id(n) in seen:
            continue
        seen.add(id(n))
        stack.append((n, True))
        stack.extend((c, False) for c in reversed(children(n)))


def children(n: Node) -> tuple[Node, ...]:
    """The operand nodes of ``n`` (data-dependent indices included)."""
    if isinstance(n, Op):
        return n.args
    if isinstance(n, Reduce):
        return (n.body,)
    if isinstance(n, Load):
        extra = tuple(x for x in (n.mask, n.other) if x is not None)
        return tuple(i for i in n.index if isinstance(i, Node)) + extra
    if isinstance(n, ClampIndex):
        return (n.value,)
    if isinstance(n, PadIndex):
        return (n.index,) if isinstance(n.index, Node) else ()
    if isinstance(n, Inside):
        return tuple(i for i, _, _ in n.axes if isinstance(i, Node))
    return ()


def index_affines(n: Node) -> tuple[Affine, ...]:
    """The affine index expressions ``n`` reads directly (its loop-variable dependencies)."""
    if isinstance(n, Load):
        return tuple(i for i in n.index if isinstance(i, Affine))
    if isinstance(n, PadIndex):
        return (n.index,) if isinstance(n.index, Affine) else ()
    if isinstance(n, Inside):
        return tuple(i for i, _, _ in n.axes if isinstance(i, Affine))
    return ()


# Canonical text -------------------------------------------------------------------------------

def _fmt_value(v: float | int | bool) -> str:
    return repr(v) if not isinstance(v, float) else float.hex(v)


def _fmt_attr(v: Any) -> str:
    if isinstance(v, float):
        return float.hex(v)
    if isinstance(v, tuple):
        return "[" + ",".join(_fmt_attr(x) for x in v) + "]"
    return str(v)


def _ix(i: Affine | Node, names: dict[Node, str]) -> str:
    return names[i] if isinstance(i, Node) else str(i)


def node_lines(root: Node, names: dict[Node, str], lines: list[str]) -> str:
    """Append ``%k = ...`` lines for the nodes of ``root`` not yet named; returns root's name."""
    for n in walk(root):
        if n in names:
            continue
        match n:
            case Const(value=v):
                text = f"{_fmt_value(v)}:{n.dtype}"
            case Load(buf=b, index=idx, mask=m, other=o):
                ix = ", ".join(names[i] if isinstance(i, Node) else str(i) for i in idx)
                text = f"load b{b}[{ix}]"
                if m is not None and o is not None:
                    text += f" if {names[m]} else {names[o]}"
            case ClampIndex(value=v, extent=e):
                text = f"clamp_index({names[v]}, {e})"
            case PadIndex(index=i, low=lo, extent=e, mode=mode):
                text = f"pad_index_{mode}({_ix(i, names)}, {lo}, {e})"
            case Inside(axes=axes):
                text = "inside(" + ", ".join(f"{_ix(i, names)}-{lo}<{e}"
                                             for i, lo, e in axes) + ")"
            case Op(op=op, args=args, attrs=attrs):
                at = "".join(f", {k}={_fmt_attr(a)}" for k, a in attrs if a is not None)
                text = f"{op}({', '.join(names[a] for a in args)}{at})"
            case Reduce(kind=k, vars=vs, body=body):
                text = f"reduce_{k}[{', '.join(f'{v}<{e}' for v, e in vs)}]({names[body]})"
            case Acc():
                text = "acc"
            case _:
                raise TypeError(f"unknown node {n!r}")
        names[n] = f"%{len(names)}"
        lines.append(f"  {names[n]} = {text} : {n.dtype}")
    return names[root]


def kernel_text(k: AnyKernel) -> str:
    """The canonical text of a kernel: what it computes, independent of its name."""
    bufs = ", ".join(f"b{i}: {b.dtype}[{', '.join(map(str, b.shape))}]"
                     for i, b in enumerate(k.buffers))
    names: dict[Node, str] = {}
    lines: list[str] = []
    if isinstance(k, Kernel):
        head = (f"kernel({bufs}) sizes({', '.join(k.sizes)}) "
                f"domain[{', '.join(map(str, k.domain))}]{f' split {k.split}' if k.split else ''}")
        root = node_lines(k.value, names, lines)
        out = ", ".join(map(str, k.out_map()))
        lines.append(f"  b{len(k.buffers) - 1}[{out}] = {root}")
    else:
        head = (f"matmul({bufs}) sizes({', '.join(k.sizes)}) batched={k.batched} "
                f"m={k.m} k={k.k} n={k.n}{' b_t' if k.b_t else ''}"
                f"{f' a {k.a_at}' if k.a_at else ''}{f' b {k.b_at}' if k.b_at else ''}"
                f"{f' out {k.c_at}' if k.c_at else ''}")
        root = node_lines(k.epilogue, names, lines)
        lines.append(f"  out = {root}")
        if k.post is not None:
            post = kernel_text(k.post).rstrip("\n").replace("\n", "\n  ")
            lines.append(f"  then rows of {list(k.post_bufs)} at {list(k.post_batch)}: {post}")
        if k.then is not None:
            then = kernel_text(k.then).rstrip("\n").replace("\n", "\n  ")
            lines.append(f"  then times b{k.then_b} at {list(k.then_batch)}: {then}")
        for sib in k.siblings:
            text = kernel_text(sib).rstrip("\n").replace("\n", "\n  ")
            lines.append(f"  and with the same A: {text}")
    return "\n".join([head, *lines]) + "\n"
