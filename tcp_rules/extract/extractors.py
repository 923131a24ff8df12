"""Extractors behind one interface: tree (each use of a subterm paid for), greedy DAG (a shared
tensor paid once), and exact ILP (scipy's milp, small e-graphs, with a time limit).

Kernel bodies are the exception to sharing: a body is computed inside every kernel that uses it,
so the DAG accounting (:func:`dag_cost`, the greedy DAG extractor) charges a body's cost to each
tensor node reading it, and shares only tensors. The ILP shares every e-class; its choice is
re-costed with :func:`dag_cost` and not claimed optimal when the e-graph holds bodies.
"""

from __future__ import annotations

import math
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from tcp_rules.extract.cost import CostModel, kernel_totals
from tcp_rules.extract.snapshot import ENode, Snapshot
from tcp_rules.sorts import Sort

INF = math.inf


@dataclass
class Extraction:
    """A choice of one e-node per needed e-class; ``cost`` counts shared classes once."""

    choice: dict[int, ENode]
    cost: float
    extractor: str
    seconds: float
    optimal: bool | None = None  # ILP: proved optimal


def node_costs(snap: Snapshot, model: CostModel) -> dict[tuple[int, int], float]:
    """The cost of each e-node alone, keyed by (class, index); inf where a type is unknown."""
    out = {}
    for c in snap.classes.values():
        for i, n in enumerate(c.nodes):
            kids = [snap.classes[k].type for k in n.children]
            if c.type is None or any(t is None for t in kids):
                out[(c.id, i)] = INF
            else:
                out[(c.id, i)] = model.node_cost(n, c.type, kids,  # type: ignore[arg-type]
                                                 c.sort)
    return out


def dag_cost(snap: Snapshot, choice: dict[int, ENode], costs: dict[tuple[int, int], float]
             ) -> float:
    """Total cost of the program the choice spans from the roots (cost.kernel_totals)."""
    def own(c: int) -> float:
        return costs[(c, snap.classes[c].nodes.index(choice[c]))]
    return sum(kernel_totals(snap.roots, lambda c: choice[c].children,
                             lambda c: snap.classes[c].sort is not Sort.TENSOR, own).values())


def _propagate(snap: Snapshot, improve: Callable[[int, int], bool]) -> None:
    """Evaluate e-nodes bottom-up from the leaves: ``improve(class, node index)`` says whether
    that node made its class cheaper, and then the class's users are evaluated again."""
    parents: dict[int, list[tuple[int, int]]] = {c: [] for c in snap.classes}
    for c in snap.classes.values():
        for i, n in enumerate(c.nodes):
            for k in set(n.children):
                parents[k].append((c.id, i))
    todo = deque((c.id, i) for c in snap.classes.values() for i, n in enumerate(c.nodes)
                 if not n.children)
    queued = set(todo)
    while todo:
        cid, i = todo.popleft()
        queued.discard((cid, i))
        if improve(cid, i):
            for p in parents[cid]:
                if p not in queued:
                    queued.add(p)
                    todo.append(p)


def tree(snap: Snapshot, model: CostModel) -> Extraction:
    """Bottom-up fixpoint of cost(node) + sum of the children's best costs."""
    start = time.perf_counter()
    costs = node_costs(snap, model)
    best: dict[int, float] = {c: INF for c in snap.classes}
    pick: dict[int, ENode] = {}

    def improve(cid: int, i: int) -> bool:
        n = snap.classes[cid].nodes[i]
        total = costs[(cid, i)] + sum(best[k] for k in n.children)
        if total >= best[cid] - 1e-9:
            return False
        best[cid], pick[cid] = total, n
        return True

    _propagate(snap, improve)
    return _finish(snap, pick, costs, "tree", start)


@dataclass
class _Best:
    total: float
    bodies: dict[int, float]  # body classes this body computes (empty for a tensor)
    tensors: dict[int, float]  # tensor classes reached, each with its kernel's cost
    shared: float  # the sum of ``tensors``


def greedy_dag(snap: Snapshot, model: CostModel) -> Extraction:
    """Like tree, but a node's cost is that of the union of its children's sub-DAGs: each
    tensor it reaches counted once, each body once per kernel computing it."""
    start = time.perf_counter()
    costs = node_costs(snap, model)
    best: dict[int, _Best] = {}
    pick: dict[int, ENode] = {}

    def union(kids: list[int], part: Callable[[_Best], dict[int, float]]
              ) -> tuple[dict[int, float], float, int | None]:
        """The union of the children's maps grown from the largest one: (union, the sum of
        what the others add, the largest one's child)."""
        top = max(kids, key=lambda k: len(part(best[k])), default=None)
        if top is None:
            return {}, 0.0, None
        base = part(best[top])
        extra = {c: v for k in kids if k != top for c, v in part(best[k]).items()
                 if c not in base}
        return ({**base, **extra} if extra else base), sum(extra.values()), top

    def improve(cid: int, i: int) -> bool:
        n = snap.classes[cid].nodes[i]
        own = costs[(cid, i)]
        if own == INF or any(k not in best for k in n.children):
            return False
        kids = list(dict.fromkeys(n.children))
        tensors, added, top = union(kids, lambda b: b.tensors)
        shared = (best[top].shared if top is not None else 0.0) + added
        bodies, _, _ = union(kids, lambda b: b.bodies)
        if cid in tensors or cid in bodies:  # the node would use its own class: a cycle
            return False
        work = own + sum(bodies.values())
        if snap.classes[cid].sort is not Sort.TENSOR:
            entry = _Best(shared + work, {**bodies, cid: own}, tensors, shared)
        else:
            entry = _Best(shared + work, {}, {**tensors, cid: work}, shared + work)
        if cid in best and entry.total >= best[cid].total - 1e-9:
            return False
        best[cid], pick[cid] = entry, n
        return True

    _propagate(snap, improve)
    return _finish(snap, pick, costs, "dag", start)


def ilp(snap: Snapshot, model: CostModel, time_limit: float = 10.0,
        fallback: Callable[[Snapshot, CostModel], Extraction] = greedy_dag) -> Extraction:
    """Exact DAG extraction as an integer program (acyclicity by topological levels).

    Variables: x[n] picks e-node n, y[c] needs e-class c, level[c] orders classes. Falls back
    to the greedy DAG choice if the solver finds nothing within ``time_limit``.
    """
    from scipy.optimize import Bounds, LinearConstraint, milp

    start = time.perf_counter()
    costs = node_costs(snap, model)
    nodes = [(c.id, i, n) for c in snap.classes.values() for i, n in enumerate(c.nodes)
             if costs[(c.id, i)] < INF]
    cls = sorted(snap.classes)
    ci = {c: len(nodes) + j for j, c in enumerate(cls)}
    li = {c: len(nodes) + len(cls) + j for j, c in enumerate(cls)}
    nv = len(nodes) + 2 * len(cls)
    big = float(len(cls) + 1)
    rows, lo, hi = [], [], []

    def row(coeffs: dict[int, float], low: float, high: float) -> None:
        r = np.zeros(nv)
        for k, v in coeffs.items():
            r[k] += v
        rows.append(r)
        lo.append(low)
        hi.append(high)

    for c in cls:  # a needed class picks one of its nodes
        picks = {k: 1.0 for k, (cid, _, _) in enumerate(nodes) if cid == c}
        row({**picks, ci[c]: -1.0}, 0.0, 0.0)
    for k, (c, _, n) in enumerate(nodes):
        for child in set(n.children):
            row({ci[child]: 1.0, k: -1.0}, 0.0, math.inf)  # a picked node needs its children
            # and sits above them: level[c] >= level[child] + 1 when picked
            row({li[c]: 1.0, li[child]: -1.0, k: -big}, 1.0 - big, math.inf)
    for r in snap.roots:
        row({ci[r]: 1.0}, 1.0, 1.0)
    objective = np.zeros(nv)
    for k, (c, i, _) in enumerate(nodes):
        objective[k] = costs[(c, i)]
    integrality = np.array([1] * (len(nodes) + len(cls)) + [0] * len(cls))
    upper = np.array([1.0] * (len(nodes) + len(cls)) + [big] * len(cls))
    res = milp(objective, integrality=integrality, bounds=Bounds(np.zeros(nv), upper),
               constraints=LinearConstraint(np.array(rows), lo, hi) if rows else (),
               options={"time_limit": time_limit, "disp": False})
    if res.x is None:
        out = fallback(snap, model)
        out.extractor = "ilp (no solution in time: greedy DAG)"
        out.optimal = False
        return out
    pick = {}
    for k, (c, _, n) in enumerate(nodes):
        if res.x[k] > 0.5:
            pick[c] = n
    out = _finish(snap, pick, costs, "ilp", start)
    has_bodies = any(c.sort is Sort.BODY for c in snap.classes.values())
    out.optimal = None if has_bodies else bool(res.status == 0)
    return out


def _finish(snap: Snapshot, pick: dict[int, ENode], costs: dict[tuple[int, int], float],
            name: str, start: float) -> Extraction:
    missing = [r for r in snap.roots if r not in pick]
    if missing:
        raise ExtractionError(f"no finite-cost term for result e-class {missing[0]}")
    return Extraction(pick, dag_cost(snap, pick, costs), name, time.perf_counter() - start)


class ExtractionError(Exception):
    pass


EXTRACTORS: dict[str, Callable[[Snapshot, CostModel], Extraction]] = {
    "tree": tree, "dag": greedy_dag, "ilp": ilp}

