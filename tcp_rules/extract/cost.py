"""Cost models: what a chosen e-node costs, from the op table's cost facet and e-class types.

The default is roofline-style, fusion-aware: time = flops / compute rate + bytes moved /
bandwidth + a fixed cost per kernel. Bytes move only at kernel boundaries:

- a tensor-level op is a kernel of its own: it reads its operands, writes its result, and pays
  the per-kernel cost (broadcasts and transposes fold into their consumer's indexing instead);
- ``kernel(b)`` writes its result and pays the per-kernel cost; ``load(x)`` reads x once;
- an op inside a body (sort BODY) costs only its flops, except where the code generator must
  materialize its operand anyway (a reshape, a concat, a broadcast whose operand cannot be
  hoisted out of the inner loops).

:func:`kernel_totals` is how a program's cost adds up: each tensor once, with the cost of every
distinct body node its kernel computes. A body shared by two kernels is paid by each
(recomputation is counted per consumer); within one kernel it is computed once, and a tensor
loaded by several passes of one kernel (a row softmax reads its row three times) is read from
memory once, the row staying in cache.

Splat constants are free. Symbolic dims take a configurable default size. The constants are
calibrated on this machine (docs/fusion.md, ``tcpr bench --suite cost``). Any object with
``node_cost`` can replace the model (an experiment knob).
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from tcp_rules.extract.snapshot import ENode
from tcp_rules.ops.fusion import MATMULS, broadcast_hoists
from tcp_rules.sorts import Sort
from tcp_rules.types import TensorType


class CostModel(Protocol):
    def node_cost(self, node: ENode, out: TensorType, args: Sequence[TensorType],
                  sort: Sort = Sort.TENSOR) -> float:
        """The cost of computing ``node`` (result type ``out``, of ``sort``) from its
        operands: a function of the node's op, attributes and parameter name, the types and
        the sort only (extraction asks once per distinct combination, choice.node_costs)."""
        ...


BODY_EPS = 1e-3  # every body op costs something, so that no cycle of them looks free


@dataclass(frozen=True)
class RooflineCost:
    """Nanoseconds on a machine like this one (2 cores, AVX2, ~20 GB/s copy bandwidth)."""

    default_size: int = 64  # what a symbolic dim counts as, unless ``sizes`` binds it
    sizes: tuple[tuple[str, int], ...] = ()  # symbol bindings known from the inputs
    # Fitted to kernel times on one thread (docs/fusion.md, ``tcpr bench --suite cost``):
    flop_ns: float = 0.03  # elementwise and reduction flops: ~33 per ns, vectorized
    matmul_flop_ns: float = 0.011  # a packed, register-blocked matmul: ~90 GFLOP/s
    byte_ns: float = 0.016  # ~60 GB/s: data in cache; from DRAM it is ~3x slower
    op_ns: float = 4500.0  # per kernel: its dispatch from Python (buffer pointers, ctypes call)

    def shape(self, t: TensorType) -> tuple[int, ...]:
        return _concrete_shape(t, self.sizes, self.default_size)

    def nbytes(self, t: TensorType) -> float:
        return float(math.prod(self.shape(t)) * t.dtype.itemsize)

    def node_cost(self, node: ENode, out: TensorType, args: Sequence[TensorType],
                  sort: Sort = Sort.TENSOR) -> float:
        op = node.op
        if op is None or op.category == "constant":
            return 0.0
        if op.name == "load":
            return self.nbytes(args[0]) * self.byte_ns
        if op.name == "kernel":
            return self.op_ns + self.nbytes(out) * self.byte_ns
        attrs = dict(node.attrs)
        cost = op.cost.evaluate([(self.shape(a), a.dtype.itemsize) for a in args],
                                (self.shape(out), out.dtype.itemsize), attrs)
        flops = cost.flops * (self.matmul_flop_ns if op.name in MATMULS else self.flop_ns)
        if op.name == "load_matmul":  # reads both operands from memory
            return BODY_EPS + flops + sum(map(self.nbytes, args)) * self.byte_ns
        if op.name == "load_matmul_rows":  # reads B; A is computed in the loop nest, by rows
            return BODY_EPS + flops + self.nbytes(args[1]) * self.byte_ns
        if sort is Sort.BODY:
            if self._materializes_in_body(op.name, attrs, out, args):
                return self.op_ns + 2 * sum(map(self.nbytes, args)) * self.byte_ns + flops
            return BODY_EPS + flops
        if not op.cost.materializes:  # folded into the consumer's indexing
            return 1.0  # never free, so that a cycle of such ops never looks free
        return self.op_ns + flops + cost.bytes * self.byte_ns

    @staticmethod
    def _materializes_in_body(name: str, attrs: dict[str, object], out: TensorType,
                              args: Sequence[TensorType]) -> bool:
        if name in ("reshape", "concat"):
            return True
        if name == "broadcast":
            dims = attrs["dims"]
            assert isinstance(dims, tuple)
            return not broadcast_hoists(args[0].dims, out.dims, dims)
        return False


@functools.lru_cache(maxsize=1 << 16)
def _concrete_shape(t: TensorType, sizes: tuple[tuple[str, int], ...], default: int
                    ) -> tuple[int, ...]:
    """``t``'s shape with its symbols sized (memoized: extraction asks for the same few types
    tens of thousands of times)."""
    known = dict(sizes)
    env = {s: known.get(s, default) for s in t.symbols}
    return tuple(max(d.subst(env).const or 0, 0) for d in t.dims)


def with_sizes(model: CostModel, sizes: Mapping[str, int]) -> CostModel:
    """``model`` with symbolic dims sized as bound by actual inputs (a model without that
    notion is returned unchanged)."""
    if isinstance(model, RooflineCost):
        return dataclasses.replace(model, sizes=tuple(sorted(sizes.items())))
    return model


def kernel_totals[N: Hashable](roots: Iterable[N], children: Callable[[N], Sequence[N]],
                  is_body: Callable[[N], bool], own: Callable[[N], float]) -> dict[N, float]:
    """Every tensor node reachable from ``roots``, once, with its own cost plus that of each
    distinct body node reachable from it through bodies only (what its kernel computes)."""
    out: dict[N, float] = {}
    stack = list(roots)
    while stack:
        t = stack.pop()
        if t in out:
            continue
        total = own(t)
        seen: set[N] = set()
        inner = [k for k in children(t) if is_body(k)]
        stack.extend(k for k in children(t) if not is_body(k))
        while inner:
            b = inner.pop()
            if b in seen:
                continue
            seen.add(b)
            total += own(b)
            for k in children(b):
                (inner if is_body(k) else stack).append(k)
        out[t] = total
    return out


def finite(x: float) -> bool:
    return not math.isinf(x) and not math.isnan(x)
