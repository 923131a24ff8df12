"""Cost models: what a chosen e-node costs, from the op table's cost facet and e-class types.

The default is roofline-style: time = flops / compute rate + bytes moved / bandwidth + a fixed
cost per op. Broadcasts and transposes that code generation folds into their consumers'
indexing move no memory of their own; splat constants are free. Symbolic dims take a
configurable default size. Any object with ``node_cost`` can replace it (an experiment knob).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from tcp_rules.extract.snapshot import ENode
from tcp_rules.types import TensorType


class CostModel(Protocol):
    def node_cost(self, node: ENode, out: TensorType, args: Sequence[TensorType]) -> float:
        """The cost of computing ``node`` (result type ``out``) from its operands."""
        ...


@dataclass(frozen=True)
class RooflineCost:
    """Nanoseconds on a machine like this one (2 cores, AVX2, ~17 GB/s copy bandwidth)."""

    default_size: int = 64  # what a symbolic dim counts as
    flop_ns: float = 0.125  # 8 vectorized flops per ns
    byte_ns: float = 0.06  # ~17 GB/s
    op_ns: float = 50.0  # per materialized op: a kernel call and a pass over memory

    def shape(self, t: TensorType) -> tuple[int, ...]:
        sizes = {s: self.default_size for s in t.symbols}
        return tuple(max(d.subst(sizes).const or 0, 0) for d in t.dims)

    def node_cost(self, node: ENode, out: TensorType, args: Sequence[TensorType]) -> float:
        op = node.op
        if op is None or op.category == "constant":
            return 0.0
        cost = op.cost.evaluate([(self.shape(a), a.dtype.itemsize) for a in args],
                                (self.shape(out), out.dtype.itemsize), dict(node.attrs))
        if not op.cost.materializes:  # folded into the consumer's indexing
            return 1.0  # never free, so that a cycle of such ops never looks free
        return self.op_ns + cost.flops * self.flop_ns + cost.bytes * self.byte_ns


def finite(x: float) -> bool:
    return not math.isinf(x) and not math.isnan(x)
