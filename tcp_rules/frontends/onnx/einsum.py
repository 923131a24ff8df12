"""ONNX's Einsum: any number of operands, explicit or implicit output, ellipses (broadcast
among the operands as NumPy does), repeated labels in an operand (diagonals). Each operand
first takes its diagonals (a gather at a constant stride of its flattened pair of axes) and
sums out the labels no one else needs; the operands are then contracted left to right, each
pair as one batched matmul ([batch, left, contracted] times [batch, contracted, right]) that
TCP's rules and codegen know, and the result is transposed to the output's order.
"""

from __future__ import annotations

import string
from collections import Counter
from collections.abc import Sequence

import numpy as np

from tcp_rules.frontends.onnx.composite import matmul_values
from tcp_rules.frontends.onnx.context import Context, Tensor, converts
from tcp_rules.ir import Value
from tcp_rules.types import Dim, dims_product

Labels = list[str]


def parse(ctx: Context, equation: str, ranks: Sequence[int]) -> tuple[list[Labels], Labels]:
    """Each operand's labels and the output's, an ellipsis spelled out as labels '0', '1', ...
    counted from its right end (so that ellipses of different lengths align as broadcasting
    does)."""
    eq = equation.replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(ranks):
        raise ctx.error(f"equation {equation!r} has {len(terms)} operands, the node "
                        f"{len(ranks)}")
    width = 0
    operands = []
    for term, rank in zip(terms, ranks, strict=True):
        labels = _labels(ctx, equation, term, rank)
        width = max(width, sum(label.isdigit() for label in labels))
        operands.append(labels)
    ellipsis = [str(i) for i in reversed(range(width))]
    if arrow:
        if width and "..." not in rhs:  # NumPy's rule: ellipsis axes are never summed
            raise ctx.error(f"equation {equation!r}: the output needs an ellipsis, as the "
                            f"operands' ellipsis spans axes")
        out = _labels(ctx, equation, rhs, width, output=True)
    else:  # implicit: the ellipsis, then the letters used once, in alphabetical order
        counts = Counter(label for labels in operands for label in labels)
        out = ellipsis + sorted(k for k, n in counts.items() if n == 1 and not k.isdigit())
    known = {label for labels in operands for label in labels}
    if any(label not in known for label in out if not label.isdigit()) or \
            len(set(out)) != len(out):
        raise ctx.error(f"equation {equation!r}: each output label must appear in an operand, "
                        f"once in the output")
    return operands, out


def _labels(ctx: Context, equation: str, term: str, rank: int, output: bool = False) -> Labels:
    """A term's labels; its ellipsis stands for the axes the letters leave (for the output:
    ``rank`` is the widest ellipsis)."""
    head, dots, tail = term.partition("...")
    letters = head + tail
    if any(c not in string.ascii_letters for c in letters) or "..." in tail:
        raise ctx.error(f"equation {equation!r}: term {term!r} must be letters and at most one "
                        f"ellipsis")
    if output:
        spread = [str(i) for i in reversed(range(rank))] if dots else []
    else:
        left = rank - len(letters)
        if left < 0 or (left and not dots):
            raise ctx.error(f"equation {equation!r}: term {term!r} does not fit an operand of "
                            f"rank {rank}")
        spread = [str(i) for i in reversed(range(left))]
    return [*head, *spread, *tail]


def _diagonal(ctx: Context, x: Value, labels: Labels) -> tuple[Value, Labels]:
    """x with each repeated label's axes reduced to their diagonal."""
    while len(set(labels)) != len(labels):
        label = next(lb for lb in labels if labels.count(lb) > 1)
        i, j = [k for k, lb in enumerate(labels) if lb == label][:2]
        rest = [k for k in range(len(labels)) if k not in (i, j)]
        x = _transpose(ctx, x, [*rest, i, j])
        n = x.type.dims[-1].const
        if n is None or x.type.dims[-2] != x.type.dims[-1]:
            raise ctx.error(f"the diagonal of label {label!r} needs equal static axes, got "
                            f"{x.type.dims[-2]} and {x.type.dims[-1]}")
        flat = ctx.op("reshape", x, shape=[*x.type.dims[:-2], Dim.of(n * n)])
        x = ctx.op("gather", flat, ctx.as_value(np.arange(n, dtype=np.int32) * (n + 1),
                                                "diagonal"), axis=len(rest))
        labels = [*(labels[k] for k in rest), label]
    return x, labels


def _transpose(ctx: Context, x: Value, perm: list[int]) -> Value:
    return x if perm == sorted(perm) else ctx.op("transpose", x, perm=perm)


def _sum_out(ctx: Context, x: Value, labels: Labels, needed: set[str]) -> tuple[Value, Labels]:
    axes = [i for i, lb in enumerate(labels) if lb not in needed]
    if not axes:
        return x, labels
    x = ctx.op("reduce_sum", x, axes=axes, keepdims=False)
    return x, [lb for lb in labels if lb in needed]


def _squeeze_ones(ctx: Context, x: Value, labels: Labels, sizes: dict[str, Dim]
                  ) -> tuple[Value, Labels]:
    """Ellipsis axes of size 1 where another operand's is longer dropped: they broadcast."""
    keep = [i for i, lb in enumerate(labels)
            if not (lb.isdigit() and x.type.dims[i] == Dim.of(1) and sizes[lb] != Dim.of(1))]
    if len(keep) == len(labels):
        return x, labels
    return ctx.op("reshape", x, shape=[x.type.dims[i] for i in keep]), [labels[i] for i in keep]


def _contract(ctx: Context, a: Value, la: Labels, b: Value, lb: Labels, needed: set[str]
              ) -> tuple[Value, Labels]:
    """a and b multiplied, their shared labels not ``needed`` summed: one batched matmul."""
    batch = [x for x in la if x in lb and x in needed]
    inner = [x for x in la if x in lb and x not in needed]
    left = [x for x in la if x not in lb]
    right = [x for x in lb if x not in la]
    a = _transpose(ctx, a, [la.index(x) for x in batch + left + inner])
    b = _transpose(ctx, b, [lb.index(x) for x in batch + inner + right])
    da, db = dict(zip(batch + left + inner, a.type.dims, strict=True)), \
        dict(zip(batch + inner + right, b.type.dims, strict=True))
    for x in inner:
        if da[x] != db[x]:
            raise ctx.error(f"label {x!r} has sizes {da[x]} and {db[x]}")
    batch_dims = [da[x] for x in batch]
    for x, d in zip(batch, batch_dims, strict=True):
        if db[x] != d:
            raise ctx.error(f"label {x!r} has sizes {d} and {db[x]}")
    m, k, n = (dims_product(da[x] for x in left), dims_product(da[x] for x in inner),
               dims_product(db[x] for x in right))
    a = ctx.op("reshape", a, shape=[*batch_dims, m, k])
    b = ctx.op("reshape", b, shape=[*batch_dims, k, n])
    y = matmul_values(ctx, a, b)
    dims = [*batch_dims, *(da[x] for x in left), *(db[x] for x in right)]
    return ctx.op("reshape", y, shape=dims), batch + left + right


@converts("Einsum")
def einsum(ctx: Context) -> Sequence[Tensor]:
    """The contraction, f16/bf16 computed in f32 and rounded once."""
    assert ctx.node is not None
    values = [ctx.value(i) for i in range(len(ctx.node.input))]
    if not values:
        raise ctx.error("Einsum needs at least one operand")
    dt = values[0].type.dtype
    if any(v.type.dtype is not dt for v in values):
        raise ctx.error(f"operands of types {[str(v.type.dtype) for v in values]} differ")
    operands, out = parse(ctx, str(ctx.attr("equation", "")), [v.type.rank for v in values])
    sizes: dict[str, Dim] = {}
    for v, labels in zip(values, operands, strict=True):
        for label, d in zip(labels, v.type.dims, strict=True):
            if sizes.get(label, Dim.of(1)) == Dim.of(1):
                sizes[label] = d
    terms = []
    for i, (v, labels) in enumerate(zip(values, operands, strict=True)):
        x, ls = _squeeze_ones(ctx, ctx.widen(v), labels, sizes)
        x, ls = _diagonal(ctx, x, ls)
        others = {lb for j, o in enumerate(operands) if j != i for lb in o}
        terms.append(_sum_out(ctx, x, ls, others | set(out)))
    x, labels = terms[0]
    for i, (y, ly) in enumerate(terms[1:], start=1):
        later = {lb for _, o in terms[i + 1:] for lb in o}
        x, labels = _contract(ctx, x, labels, y, ly, later | set(out))
    return [ctx.cast(_transpose(ctx, x, [labels.index(lb) for lb in out]), dt)]
