"""Extraction: tree and greedy DAG against brute force on random small e-graphs (acyclic and
cyclic, built directly as Snapshots), against the ILP, and at the scale of 100k e-nodes."""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tcp_rules.extract.choice import INF, ExtractionError, dag_cost, node_costs
from tcp_rules.extract.cost import RooflineCost, kernel_totals
from tcp_rules.extract.extractors import greedy_dag, ilp, tree
from tcp_rules.extract.snapshot import EClass, ENode, Snapshot
from tcp_rules.extract.synthetic import layered_snapshot
from tcp_rules.ops import OPS
from tcp_rules.sorts import Sort
from tcp_rules.types import TensorType

TY = TensorType.of("f32", [4])


class AttrCost:
    """A cost model reading each e-node's cost from its ``cost`` attribute (a function of the
    signature, as node_costs requires)."""

    def node_cost(self, node: ENode, out: TensorType, args: Sequence[TensorType],
                  sort: Sort = Sort.TENSOR) -> float:
        return float(dict(node.attrs).get("cost", 0.0))


@st.composite
def egraphs(draw: st.DrawFn, cyclic: bool, bodies: bool) -> Snapshot:
    """Up to 6 classes of up to 3 nodes, each node's cost 0..9 and children any classes
    (``cyclic``) or lower-numbered ones; a body class when ``bodies`` says so."""
    n = draw(st.integers(1, 6))
    classes = {}
    for c in range(n):
        sort = Sort.BODY if bodies and c > 0 and draw(st.booleans()) else Sort.TENSOR
        nodes = []
        for _ in range(draw(st.integers(1, 3))):
            pool = n if cyclic else c
            kids = tuple(draw(st.lists(st.integers(0, pool - 1), max_size=3))) if pool else ()
            cost = draw(st.integers(0, 9))
            nodes.append(ENode(OPS["add"], kids, (("cost", cost),)))
        if c == 0:  # something to start from
            nodes.append(ENode(None, (), (), "x"))
        classes[c] = EClass(c, TY, nodes, sort)
    roots = draw(st.lists(st.integers(0, n - 1), min_size=1, max_size=2, unique=True))
    return Snapshot(classes, roots)


def choices(snap: Snapshot) -> list[dict[int, ENode]]:
    ids = sorted(snap.classes)
    return [dict(zip(ids, pick, strict=True))
            for pick in itertools.product(*(snap.classes[c].nodes for c in ids))]


def reachable(choice: Mapping[int, ENode], roots: Sequence[int]) -> set[int] | None:
    """The classes the choice reaches from the roots; None if one is not chosen or the choice
    has a cycle among them (iterative: the 100k-node e-graph is deep)."""
    done: set[int] = set()
    on_path: set[int] = set()
    stack = [(r, False) for r in roots]
    while stack:
        c, leaving = stack.pop()
        if leaving:
            on_path.discard(c)
            done.add(c)
        elif c in on_path or c not in choice:
            return None
        elif c not in done:
            on_path.add(c)
            stack.append((c, True))
            stack.extend((k, False) for k in choice[c].children)
    return done


def tree_cost(choice: Mapping[int, ENode], costs: Mapping[tuple[int, int], float],
              snap: Snapshot, c: int, path: frozenset[int] = frozenset()) -> float:
    if c in path:
        return INF
    n = choice[c]
    own = costs[(c, snap.classes[c].nodes.index(n))]
    return own + sum(tree_cost(choice, costs, snap, k, path | {c}) for k in n.children)


def assert_valid(snap: Snapshot, choice: Mapping[int, ENode]) -> None:
    assert reachable(choice, snap.roots) is not None  # every needed class chosen, no cycle


@settings(max_examples=150, deadline=None)
@given(st.booleans().flatmap(lambda cyclic: egraphs(cyclic, bodies=False)))
def test_tree_finds_each_roots_cheapest_term(snap: Snapshot) -> None:
    model = AttrCost()
    costs = node_costs(snap, model)
    optimum = {r: min(tree_cost(ch, costs, snap, r) for ch in choices(snap)) for r in snap.roots}
    if any(v == INF for v in optimum.values()):
        with pytest.raises(ExtractionError):
            tree(snap, model)
        return
    ex = tree(snap, model)
    assert_valid(snap, ex.choice)
    for r in snap.roots:
        assert tree_cost(ex.choice, costs, snap, r) == pytest.approx(optimum[r])


@settings(max_examples=150, deadline=None)
@given(st.booleans().flatmap(lambda cyclic: egraphs(cyclic, bodies=True)))
def test_greedy_dag_is_a_valid_choice_never_below_the_optimum(snap: Snapshot) -> None:
    model = AttrCost()
    costs = node_costs(snap, model)
    valid = [ch for ch in choices(snap) if reachable(ch, snap.roots) is not None]
    if not valid:
        with pytest.raises(ExtractionError):
            greedy_dag(snap, model)
        return
    ex = greedy_dag(snap, model)
    assert_valid(snap, ex.choice)
    assert ex.cost == pytest.approx(dag_cost(snap, ex.choice, costs))
    assert ex.cost >= min(dag_cost(snap, ch, costs) for ch in valid) - 1e-9


def subdag(snap: Snapshot, choice: Mapping[int, ENode], costs: Mapping[tuple[int, int], float],
           c: int) -> float:
    """What the greedy DAG extractor charges class ``c`` (its docstring): the kernel totals of
    the sub-DAG its choice spans, ``c`` included."""
    return sum(kernel_totals([c], lambda k: choice[k].children,
                             lambda k: snap.classes[k].sort is not Sort.TENSOR,
                             lambda k: costs[(k, snap.classes[k].nodes.index(choice[k]))]
                             ).values())


@settings(max_examples=150, deadline=None)
@given(st.booleans().flatmap(lambda cyclic: egraphs(cyclic, bodies=True)))
def test_greedy_dag_choice_is_the_least_node_given_the_children(snap: Snapshot) -> None:
    """The greedy semantics, checked with sets instead of the extractor's bit sets: no class
    has a node cheaper than its choice, given its children's choices."""
    model = AttrCost()
    costs = node_costs(snap, model)
    try:
        ex = greedy_dag(snap, model)
    except ExtractionError:
        return
    choice = ex.choice
    for c, chosen in choice.items():
        assert reachable(choice, [c]) is not None
        total = subdag(snap, choice, costs, c)
        for n in snap.classes[c].nodes:
            if any(k not in choice for k in n.children):
                continue
            if any(c in (reachable(choice, [k]) or ()) for k in n.children):
                continue  # a cycle through c
            other = subdag(snap, {**choice, c: n}, costs, c)
            assert other >= total - 1e-9, (c, n, chosen)


@settings(max_examples=40, deadline=None)
@given(egraphs(cyclic=True, bodies=False))
def test_greedy_dag_never_beats_the_ilp_without_bodies(snap: Snapshot) -> None:
    model = AttrCost()
    try:
        ex = greedy_dag(snap, model)
    except ExtractionError:
        return
    exact = ilp(snap, model)
    assert exact.optimal
    assert ex.cost >= exact.cost - 1e-9


def test_a_shared_tensor_is_paid_once_and_a_body_per_kernel() -> None:
    add, kernel = OPS["add"], OPS["kernel"]
    # t (cost 5) used twice by the root: the tree pays it twice, the DAG once
    classes = {
        0: EClass(0, TY, [ENode(None, (), (), "x")]),
        1: EClass(1, TY, [ENode(add, (0,), (("cost", 5),))]),
        2: EClass(2, TY, [ENode(add, (1, 1), (("cost", 1),)),
                          ENode(add, (0,), (("cost", 8),))]),
    }
    snap = Snapshot(classes, [2])
    assert tree(snap, AttrCost()).choice[2].attrs == (("cost", 8),)  # 8 < 1 + 5 + 5
    dag = greedy_dag(snap, AttrCost())
    assert dag.choice[2].attrs == (("cost", 1),) and dag.cost == 6  # 1 + 5 < 8
    # kernel(add(b, kernel(b))): the body b (cost 5) is computed in both kernels
    classes = {
        0: EClass(0, TY, [ENode(None, (), (), "x")]),
        1: EClass(1, TY, [ENode(add, (0,), (("cost", 5),))], Sort.BODY),
        2: EClass(2, TY, [ENode(kernel, (1,), (("cost", 1),))]),
        3: EClass(3, TY, [ENode(add, (1, 2), (("cost", 1),))], Sort.BODY),
        4: EClass(4, TY, [ENode(kernel, (3,), (("cost", 1),)),
                          ENode(add, (0,), (("cost", 14),))]),
    }
    dag = greedy_dag(Snapshot(classes, [4]), AttrCost())
    assert dag.choice[4].op is kernel and dag.cost == (1 + 1 + 5) + (1 + 5)


def test_of_two_as_cheap_a_body_reads_the_tensor_rather_than_recompute_it() -> None:
    """A body that can read tensor t (load) or recompute it inline costs the same either way
    in its own sub-DAG; but t is computed once for the whole program and a body in every
    kernel that reads it, so the tie goes to the load (greedy.prefer). First evaluated, the
    recomputation used to win it."""
    add, kernel, load = OPS["add"], OPS["kernel"], OPS["load"]
    classes = {
        0: EClass(0, TY, [ENode(None, (), (), "x")]),
        1: EClass(1, TY, [ENode(add, (0,), (("cost", 5),))], Sort.BODY),  # t's computation
        2: EClass(2, TY, [ENode(kernel, (1,), (("cost", 0),))]),  # t: work 5
        3: EClass(3, TY, [ENode(add, (0,), (("cost", 5),)),  # recompute t inline: 5
                          ENode(load, (2,), (("cost", 0),))], Sort.BODY),  # read t: 0 + 5
        4: EClass(4, TY, [ENode(kernel, (3,), (("cost", 1),))]),
        5: EClass(5, TY, [ENode(add, (2, 4), (("cost", 1),))]),  # uses t, and the kernel
    }
    dag = greedy_dag(Snapshot(classes, [5]), AttrCost())
    assert dag.choice[3].op is load
    assert dag.cost == 1 + 5 + 1  # the root, t once, the kernel reading it (not 1 + 5 + 1 + 5)


@pytest.mark.parametrize("width", [2, 5, 40])  # a few bits peeled off, many found with numpy
@pytest.mark.parametrize("bodies", [False, True])
def test_greedy_dag_weighs_what_every_child_adds(width: int, bodies: bool) -> None:
    """root = h(t1, ..., tn) (cost 1), each t_i of cost 3 reading x, is 1 + 3n: the greedy
    must take that over k(x) of cost 3n + 2, and not over one of 3n."""
    add = OPS["add"]
    sort = Sort.BODY if bodies else Sort.TENSOR
    for alternative, wins in ((3 * width + 2, False), (3 * width, True)):
        classes = {0: EClass(0, TY, [ENode(None, (), (), "x")])}
        for i in range(1, width + 1):
            classes[i] = EClass(i, TY, [ENode(add, (0,), (("cost", 3), ("i", i)))], sort)
        root = width + 1
        classes[root] = EClass(root, TY, [
            ENode(add, tuple(range(width, 0, -1)), (("cost", 1),)),
            ENode(add, (0,), (("cost", alternative),))])
        ex = greedy_dag(Snapshot(classes, [root]), AttrCost())
        assert (ex.choice[root].attrs == (("cost", alternative),)) == wins
        assert ex.cost == min(1 + 3 * width, alternative)


def test_node_costs_ask_the_model_once_per_signature() -> None:
    snap = layered_snapshot(3000, width=16)
    calls = 0
    roofline = RooflineCost()

    class Counting:
        def node_cost(self, node: ENode, out: TensorType, args: Sequence[TensorType],
                      sort: Sort = Sort.TENSOR) -> float:
            nonlocal calls
            calls += 1
            return roofline.node_cost(node, out, args, sort)

    costs = node_costs(snap, Counting())
    assert calls < 50 < snap.enodes
    for c in snap.classes.values():
        for i, n in enumerate(c.nodes):
            args = [snap.classes[k].type for k in n.children]
            assert costs[(c.id, i)] == roofline.node_cost(n, c.type, args, c.sort)  # type: ignore


def test_unknown_types_cost_inf() -> None:
    classes = {0: EClass(0, TY, [ENode(None, (), (), "x")]),
               1: EClass(1, None, [ENode(OPS["neg"], (0,))]),
               2: EClass(2, TY, [ENode(OPS["neg"], (1,)), ENode(OPS["exp"], (0,))])}
    snap = Snapshot(classes, [2])
    costs = node_costs(snap, RooflineCost())
    assert costs[(1, 0)] == INF and costs[(2, 0)] == INF and costs[(2, 1)] < INF
    assert tree(snap, RooflineCost()).choice[2].op is OPS["exp"]


def test_a_hundred_thousand_enodes_extract() -> None:
    """Both extractors on a synthetic e-graph of 100k e-nodes (timings: tcpr bench --suite
    optimizer, "extraction at scale"; here only that it runs and the choices are valid)."""
    snap = layered_snapshot(100_000)
    assert snap.enodes >= 100_000
    model = RooflineCost()
    for extract in (tree, greedy_dag):
        ex = extract(snap, model)
        assert_valid(snap, ex.choice)
        assert 0 < ex.cost < INF
