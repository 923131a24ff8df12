"""Greedy DAG extraction: each e-class chooses the e-node whose sub-DAG costs least, with the
children's choices fixed, a shared tensor counted once.

The sub-DAG of a choice is accounted as :func:`tcp_rules.extract.choice.dag_cost` does (see
cost.kernel_totals): each tensor class it reaches once, with its *work* (its own cost plus
that of each distinct body class its kernel computes); a body class is not shared across
kernels, its cost is charged to every tensor node that reads it.

Sets of classes are Python ints used as bit sets: a class gets a bit when its choice is final
(tensors and bodies numbered apart, in the order they become final), so a union is one C-level
``|`` over one machine word per 64 classes: a final class's sets take (number of classes) / 8
bytes at most, where frozensets would hold a program-sized set per e-class (gigabytes at 100k
e-nodes). A node's cost needs only the weight of what its other children add to its heaviest
child's sets; the union itself is made once per class, when its choice is final.
"""

from __future__ import annotations

import time

import numpy as np

from tcp_rules.extract.choice import INF, Extraction, finish, node_costs
from tcp_rules.extract.cost import CostModel
from tcp_rules.extract.order import superior_order, tolerance
from tcp_rules.extract.snapshot import ENode, Snapshot
from tcp_rules.sorts import Sort

_Data = tuple[float, float, float]  # a node's children's tensors' and bodies' weights, own cost


def greedy_dag(snap: Snapshot, model: CostModel) -> Extraction:
    """The greedy DAG choice: every class chooses the node with the least

        own cost + the work of each tensor class in the union of its children's sub-DAGs
                 + the cost of each body class in the union of its children's bodies,

    given the final choices of its children, where a child's sub-DAG is that of its own choice
    plus itself, and its bodies are those its choice computes plus itself when it is a body
    (none when it is a tensor: a kernel's bodies stay inside it). A tensor's work is its node's
    own cost plus its bodies' costs. A node whose children's sub-DAGs reach its own class is not
    used (it would be a cycle). Totals equal within rounding (order.tolerance) are ties; a tie
    goes to the node with more of its total in tensors (``prefer`` below).

    That cost is never below any child's, so the choices are made in Knuth's order (order.py),
    each node evaluated at most once: a node not evaluated before its class's choice became
    final has a child whose choice became final later, at no less cost than the class's, so it
    could not have been cheaper; and a final class's sub-DAG reaches only classes final before
    it, so no evaluated node can reach its own class. Choices that would share more with the
    rest of the program are not sought: the greedy is not optimal (see ``ilp``)."""
    start = time.perf_counter()
    costs = node_costs(snap, model)
    tensor = {c.id for c in snap.classes.values() if c.sort is Sort.TENSOR}
    tensors = _Sets(len(tensor))  # the tensors a final class's sub-DAG reaches, with work
    bodies = _Sets(len(snap.classes) - len(tensor))  # the bodies it computes, with own costs
    unions: dict[tuple[int, ...], tuple[float, float]] = {}  # by distinct children: weights

    tsum, bsum = tensors.total, bodies.total

    def evaluate(cid: int, node: ENode, own: float, bound: float) -> tuple[float, _Data] | None:
        kids = node.children
        if len(kids) == 1 or (len(kids) == 2 and kids[0] == kids[1]):
            ts, bs = tsum[kids[0]], bsum[kids[0]]
        elif not kids:
            ts = bs = 0.0
        else:  # commuted and sibling nodes have the same children: weigh their union once
            key = tuple(sorted(set(kids)))
            if key not in unions:
                if bound < INF and (own + max(map(tsum.__getitem__, key))
                                    + max(map(bsum.__getitem__, key))) > bound + tolerance(bound):
                    return None  # dearer than the class's tentative choice
                unions[key] = tensors.union_weight(key), bodies.union_weight(key)
            ts, bs = unions[key]
        return ts + bs + own, (ts, bs, own)

    def finalize(cid: int, node: ENode, total: float, data: _Data) -> None:
        ts, bs, own = data
        kids = node.children
        if cid in tensor:
            tensors.add(cid, kids, ts, own + bs)  # its work: a kernel's bodies stay inside it
            bodies.mask[cid], bsum[cid] = 0, 0.0
        else:
            tensors.add(cid, kids, ts, None)
            bodies.add(cid, kids, bs, own)

    def prefer(data: _Data, tentative: _Data) -> bool:
        """Of two nodes as cheap, the one with more of its cost in the tensors it reaches: a
        tensor is computed once for the whole program, a body in each kernel that reads it, so
        a body that reads a tensor shares it with the rest of the program where one that
        recomputes it does not (the zoo encoder's residuals recomputed their layernorms, and
        stayed kernels of their own: 10 kernels a layer where 8 cost less)."""
        return data[0] > tentative[0] + tolerance(tentative[0])

    pick = superior_order(snap, costs, evaluate, finalize, prefer)
    return finish(snap, pick, costs, "dag", start)


class _Sets:
    """A set of classes (tensors or bodies) per final class, as a bit set with its weight."""

    def __init__(self, size: int):
        self.mask: dict[int, int] = {}
        self.total: dict[int, float] = {}
        self.weight: list[float] = []  # by bit
        self.weights = np.zeros(max(size, 1))  # the same, for numpy's fancy indexing

    def add(self, cid: int, kids: tuple[int, ...], total: float, own: float | None) -> None:
        """Final class ``cid``'s set: the union of its children's (of weight ``total``), and
        itself with weight ``own`` unless None."""
        mask = 0
        for k in kids:
            mask |= self.mask[k]
        if own is not None:
            mask |= 1 << len(self.weight)
            self.weights[len(self.weight)] = own
            self.weight.append(own)
            total += own
        self.mask[cid], self.total[cid] = mask, total

    def union_weight(self, kids: tuple[int, ...]) -> float:
        """The weight of the union of the children's sets: the heaviest one's, plus that of
        what the others add to it (usually little: siblings share most of what they reach)."""
        top = max(kids, key=self.total.__getitem__)
        others = 0
        for k in kids:
            if k != top:
                others |= self.mask[k]
        if not others:  # a tensor's bodies, a parameter's tensors
            return self.total[top]
        base = self.mask[top]
        extra = (others | base) ^ base  # not others & ~base: ~ of a long int is slow
        return self.total[top] + (self._weigh(extra) if extra else 0.0)

    def _weigh(self, bits: int) -> float:
        """The sum of the weights of the set bits."""
        out = 0.0
        for _ in range(8):  # a few: peel them off from the top (each step costs O(words))
            if not bits:
                return out
            i = bits.bit_length() - 1
            out += self.weight[i]
            bits ^= 1 << i
        # many: find the rest with numpy, in the nonzero 64-bit words only
        words = np.frombuffer(bits.to_bytes((bits.bit_length() + 63) // 64 * 8, "little"),
                              np.uint64)
        nonzero = np.flatnonzero(words)
        at = np.flatnonzero(np.unpackbits(words[nonzero].view(np.uint8), bitorder="little"))
        return out + float(self.weights[nonzero[at >> 6] * 64 + (at & 63)].sum())
