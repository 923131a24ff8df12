"""Bottom-up extraction in Knuth's generalization of Dijkstra's order (Knuth, "A
generalization of Dijkstra's algorithm", 1977).

E-classes wait in a priority queue keyed by their tentative cost; the cheapest is popped and
its choice is final. An e-node is evaluated when the last of its child classes becomes final,
unless its own class is final by then. This finds the cheapest choice in each class, with each
node evaluated at most once, when the cost of a node is a *superior* function of its
children's: never below any of them, and never cheaper for a dearer child. The tree cost (own
+ the sum of the children's) is such a function when own costs are >= 0; the greedy DAG cost is
never below any child's, which is what its semantics needs (greedy.py).

Cycles need no special case: a node is evaluated only once its children are final, and a
class is final only once its chosen node's children are, so a final class never reaches a
class that is not final yet, and the chosen nodes form a DAG (final classes in pop order are a
topological order of it).
"""

from __future__ import annotations

import heapq
from collections.abc import Callable

from tcp_rules.extract.choice import INF
from tcp_rules.extract.snapshot import ENode, Snapshot

# Totals within this fraction of each other are equal: a class's total sums its sub-DAG's costs
# (1e8 on a model), whose rounding differs in the last bits between two nodes with the same
# sub-DAG cost (seen: 2e-8 apart, a 4-layer encoder's layernorm read vs recomputed).
TOLERANCE = 1e-12


def tolerance(total: float) -> float:
    """How far from ``total`` another total is still equal to it."""
    return TOLERANCE * max(abs(total), 1.0)


def superior_order[E](snap: Snapshot, costs: dict[tuple[int, int], float],
                      evaluate: Callable[[int, ENode, float, float], tuple[float, E] | None],
                      finalize: Callable[[int, ENode, float, E], None],
                      prefer: Callable[[E, E], bool] | None = None) -> dict[int, ENode]:
    """The final choice of every class that has a finite-cost term.

    ``evaluate(class, node, own cost, bound)`` is called at most once per node with a finite
    own cost, when its children are all final and its class is not, and gives the node's total
    and data for ``finalize``, or None where the node cannot be used or cannot cost less than
    ``bound`` (the class's tentative total, inf if none: a cheap lower bound can save the
    work) nor as much (within :func:`tolerance`) where ``prefer`` is given;
    ``prefer(data, tentative data)`` breaks such ties; ``finalize(class, node, total, data)``
    is called once per class with a term, in order of total, with the node chosen for it."""
    nodes: list[tuple[int, ENode, float]] = []  # by a flat index: class, node, own cost
    waiting: list[int] = []  # per node: how many of its distinct child classes are not final
    users: dict[int, list[int]] = {c: [] for c in snap.classes}
    for c in snap.classes.values():
        cid = c.id
        for i, n in enumerate(c.nodes):
            cost = costs[(cid, i)]
            if cost == INF:
                continue
            g = len(nodes)
            nodes.append((cid, n, cost))
            kids = n.children if len(n.children) < 2 else set(n.children)
            waiting.append(len(kids))
            for k in kids:
                users[k].append(g)

    best: dict[int, float] = {}  # tentative totals
    entry: dict[int, tuple[ENode, E]] = {}  # the tentative choice and its data
    heap: list[tuple[float, int]] = []
    pick: dict[int, ENode] = {}

    def offer(g: int) -> None:
        cid, node, cost = nodes[g]
        bound = best.get(cid, INF)
        result = evaluate(cid, node, cost, bound)
        if result is None:
            return
        total, data = result
        if bound == INF or total < bound - tolerance(bound):
            best[cid] = total
            entry[cid] = (node, data)
            heapq.heappush(heap, (total, cid))
        elif prefer is not None and total <= bound + tolerance(bound) and prefer(
                data, entry[cid][1]):  # as cheap: the tie goes to the preferred data
            entry[cid] = (node, data)  # (the class's heap entry stays, with its total)

    for g, w in enumerate(waiting):
        if w == 0:
            offer(g)
    while heap:
        total, cid = heapq.heappop(heap)
        if cid in pick or total > best[cid]:  # final already, or a superseded entry
            continue
        node, data = entry.pop(cid)
        pick[cid] = node
        finalize(cid, node, total, data)
        for g in users[cid]:
            waiting[g] -= 1
            if waiting[g] == 0 and nodes[g][0] not in pick:
                offer(g)
    return pick
