"""Extractors behind one interface: tree (each use of a subterm paid for), greedy DAG (a shared
tensor paid once), and exact ILP (scipy's milp, small e-graphs, with a time limit).

Kernel bodies are the exception to sharing: a body is computed inside every kernel that uses it,
so the DAG accounting (:func:`dag_cost`, the greedy DAG extractor) charges a body's cost to each
tensor node reading it, and shares only tensors. The ILP shares every e-class; its choice is
re-costed with :func:`dag_cost` and not claimed optimal when the e-graph holds bodies.

Tree and greedy DAG extraction evaluate each e-node once, in Knuth's generalization of
Dijkstra's order (order.py); the greedy DAG extractor is in greedy.py, what a choice costs in
choice.py.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable

import numpy as np

from tcp_rules.extract.choice import (
    INF,
    Extraction,
    ExtractionError,
    finish,
    node_costs,
)
from tcp_rules.extract.cost import CostModel
from tcp_rules.extract.greedy import greedy_dag
from tcp_rules.extract.order import superior_order
from tcp_rules.extract.snapshot import ENode, Snapshot
from tcp_rules.sorts import Sort

__all__ = ["EXTRACTORS", "Extraction", "ExtractionError", "greedy_dag", "ilp", "tree"]


def tree(snap: Snapshot, model: CostModel) -> Extraction:
    """Each class's cheapest term with every use of a subterm paid for: the least fixpoint of
    cost(class) = min over its nodes of own cost + the sum of the children's costs (optimal for
    own costs >= 0; each node evaluated once, order.py)."""
    start = time.perf_counter()
    costs = node_costs(snap, model)
    best: dict[int, float] = {}

    def evaluate(cid: int, node: ENode, own: float, bound: float) -> tuple[float, None]:
        total = own
        for k in node.children:
            total += best[k]
        return total, None

    def finalize(cid: int, node: ENode, total: float, data: None) -> None:
        best[cid] = total

    pick = superior_order(snap, costs, evaluate, finalize)
    return finish(snap, pick, costs, "tree", start)


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
    out = finish(snap, pick, costs, "ilp", start)
    has_bodies = any(c.sort is Sort.BODY for c in snap.classes.values())
    out.optimal = None if has_bodies else bool(res.status == 0)
    return out


EXTRACTORS: dict[str, Callable[[Snapshot, CostModel], Extraction]] = {
    "tree": tree, "dag": greedy_dag, "ilp": ilp}

