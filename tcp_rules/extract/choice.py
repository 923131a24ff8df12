"""A choice of e-nodes and what it costs: the cost of each e-node alone (:func:`node_costs`) and
the one definition of a choice's total (:func:`dag_cost`), with which every extractor's result
is re-costed so that extractors compare on the same scale."""

from __future__ import annotations

import math
import time
from collections.abc import Hashable
from dataclasses import dataclass

from tcp_rules.extract.cost import CostModel, kernel_totals
from tcp_rules.extract.rows import Node, chained_rows
from tcp_rules.extract.snapshot import ENode, Snapshot
from tcp_rules.ops import AttrKind, OpDef
from tcp_rules.sorts import Sort
from tcp_rules.types import TensorType

INF = math.inf


@dataclass
class Extraction:
    """A choice of one e-node per needed e-class; ``cost`` counts shared classes once."""

    choice: dict[int, ENode]
    cost: float
    extractor: str
    seconds: float
    optimal: bool | None = None  # ILP: proved optimal


class ExtractionError(Exception):
    pass


def node_costs(snap: Snapshot, model: CostModel) -> dict[tuple[int, int], float]:
    """The cost of each e-node alone, keyed by (class, index); inf where a type is unknown.

    The model is asked once per distinct signature (op, attributes, parameter name, result
    type, operand types, sort), the arguments a cost model sees: a saturated e-graph holds
    tens of thousands of e-nodes with a few hundred signatures. E-nodes with dense data are
    asked each time (hashing the data would cost more than the model)."""
    type_ids: dict[TensorType, int] = {}
    by_object: dict[int, int] = {}  # id(type) -> its number: most classes share type objects
    tid: dict[int, int] = {}
    for c in snap.classes.values():
        if c.type is not None:
            j = by_object.get(id(c.type))
            if j is None:
                j = by_object[id(c.type)] = type_ids.setdefault(c.type, len(type_ids))
            tid[c.id] = j
    memo: dict[Hashable, float] = {}
    memoizable: dict[str | None, bool] = {}
    out = {}
    for c in snap.classes.values():
        head = (tid.get(c.id), c.sort.value)  # an enum's hash is computed in Python: slow
        for i, n in enumerate(c.nodes):
            kids = tuple(map(tid.get, n.children))
            if c.type is None or None in kids:
                out[(c.id, i)] = INF
                continue
            name = None if n.op is None else n.op.name
            if name not in memoizable:
                memoizable[name] = _memoizable(n.op)
            key = (name, n.attrs, n.param, head, kids) if memoizable[name] else None
            cost = memo.get(key) if key is not None else None
            if cost is None:
                args = [snap.classes[k].type for k in n.children]
                cost = model.node_cost(n, c.type, args, c.sort)  # type: ignore[arg-type]
                if key is not None:
                    memo[key] = cost
            out[(c.id, i)] = cost
    _unchained_rows(snap, out)
    return out


def _unchained_rows(snap: Snapshot, costs: dict[tuple[int, int], float]) -> None:
    """Rule out each load_matmul_rows that the code generator would not run as written
    (extract/rows.py): its cost leaves out A's write and read, which would then happen."""
    if not any(n.op is not None and n.op.name == "load_matmul_rows"
               for c in snap.classes.values() for n in c.nodes):
        return
    at: list[tuple[int, int]] = []  # (class, index) of each node
    nodes: list[Node[int]] = []
    for c in snap.classes.values():
        for i, n in enumerate(c.nodes):
            if n.op is not None:
                at.append((c.id, i))
                nodes.append(Node(c.id, n.op.name, n.op.category, dict(n.attrs), n.children))
    classes = snap.classes
    consts = {c.id for c in classes.values() if c.sort is Sort.ANY or any(
        n.op is not None and n.op.name == "splat" for n in c.nodes)}
    ok = chained_rows(nodes, lambda k: classes[k].sort is Sort.BODY,
                      lambda k: () if (t := classes[k].type) is None else t.dims,
                      consts.__contains__)
    for j, node in enumerate(nodes):
        if node.op == "load_matmul_rows" and j not in ok:
            costs[at[j]] = INF


def _memoizable(op: OpDef | None) -> bool:
    return op is None or all(a.kind is not AttrKind.DATA for a in op.attrs)


def dag_cost(snap: Snapshot, choice: dict[int, ENode], costs: dict[tuple[int, int], float]
             ) -> float:
    """Total cost of the program the choice spans from the roots (cost.kernel_totals)."""
    known: dict[int, float] = {}

    def own(c: int) -> float:
        if c not in known:
            known[c] = costs[(c, snap.classes[c].nodes.index(choice[c]))]
        return known[c]

    # C-level callables: a body is visited once per kernel computing it, and kernels inline
    # long chains of bodies when fusion rules ran
    bodies = {c.id for c in snap.classes.values() if c.sort is not Sort.TENSOR}
    kids = {c: n.children for c, n in choice.items()}
    return sum(kernel_totals(snap.roots, kids.__getitem__, bodies.__contains__, own).values())


def finish(snap: Snapshot, pick: dict[int, ENode], costs: dict[tuple[int, int], float],
           name: str, start: float) -> Extraction:
    """The extraction of ``pick``, re-costed with :func:`dag_cost`; ExtractionError if a root
    has no finite-cost term."""
    missing = [r for r in snap.roots if r not in pick]
    if missing:
        raise ExtractionError(f"no finite-cost term for result e-class {missing[0]}")
    return Extraction(pick, dag_cost(snap, pick, costs), name, time.perf_counter() - start)
