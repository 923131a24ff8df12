"""Sorts: whether a value is a materialized *tensor* or a kernel *body* (see ops/fusion.py).

``load`` (and ``load_matmul``, of two tensors) turns tensors into a body and ``kernel`` a body
into a tensor; ``load_matmul_rows`` takes a body (its A) and a tensor and gives a body. Every
other op keeps the sort of its operands, which must agree. Splat constants fit either sort
(``ANY``): a literal is a constant of whatever loop nest it appears in. Dense constants are data
in memory: tensors.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence

from tcp_rules.ops import OpDef, ShapeError


class Sort(enum.Enum):
    TENSOR = "tensor"
    BODY = "body"
    ANY = "any"  # a splat constant: fits either

    def fits(self, want: Sort) -> bool:
        return self is Sort.ANY or want is Sort.ANY or self is want

    @property
    def article(self) -> str:
        return "a kernel body" if self is Sort.BODY else "a tensor"


# The sort each fusion op requires of each operand, and the sort of its result.
BOUNDARY: dict[str, tuple[tuple[Sort, ...], Sort]] = {
    "load": ((Sort.TENSOR,), Sort.BODY), "kernel": ((Sort.BODY,), Sort.TENSOR),
    "load_matmul": ((Sort.TENSOR, Sort.TENSOR), Sort.BODY),
    "load_matmul_rows": ((Sort.BODY, Sort.TENSOR), Sort.BODY)}


def apply_sort(op: OpDef, operands: Sequence[Sort]) -> Sort:
    """The sort of ``op`` applied to operands of these sorts; ShapeError naming the operand
    whose sort does not fit."""
    if op.name in BOUNDARY:
        wants, result = BOUNDARY[op.name]
        for i, (s, want) in enumerate(zip(operands, wants, strict=True)):
            if not s.fits(want):
                hint = ("materialize it with kernel(...)" if want is Sort.TENSOR
                        else "read tensors into a body with load(...)")
                raise ShapeError(f"{op.name} takes {want.article}, got {s.article} ({hint})",
                                 operand=i)
        return result
    if op.name == "splat":
        return Sort.ANY
    if op.name == "dense":
        return Sort.TENSOR
    first: tuple[int, Sort] | None = None
    for i, s in enumerate(operands):
        if s is Sort.ANY:
            continue
        if first is None:
            first = (i, s)
        elif s is not first[1]:
            raise ShapeError(f"{op.name} mixes {first[1].article} (operand {first[0] + 1}) and "
                             f"{s.article} (operand {i + 1}); inside a kernel body read "
                             f"tensors with load(...)", operand=i)
    return first[1] if first is not None else Sort.ANY
