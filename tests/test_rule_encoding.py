"""Every rule's examples through the egglog encoding: encode the example, run that one rule,
read the e-graph back, and check what the encoding made equal to the example.

The verifier checks a rule's meaning on the rule as written; the optimizer applies the rule's
egglog encoding. This test catches an encoding that differs from the rule's meaning, rule by
rule: in the e-class of the example's input,

- the example's expected result must be there (the encoded rule fires as written, in either
  direction of a two-way rule);
- every term must type-check by the op table (an encoding that builds a term the rule cannot
  build, such as a clamp without bounds, is wrong even before it is run);
- every term must agree with the input on the reference interpreter as the rule's class
  demands, on random inputs and inputs from the verifier's edge-value palettes.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator

import numpy as np
import pytest

from tcp_rules.build import make_apply
from tcp_rules.diagnostics import DiagnosticBag
from tcp_rules.egraph.encode import Tables, Unencodable, encode_rule
from tcp_rules.egraph.saturate import load, step
from tcp_rules.elaborate import elaborate_term
from tcp_rules.extract.decode import node_attrs
from tcp_rules.extract.snapshot import Snapshot, snapshot
from tcp_rules.inputs import random_inputs
from tcp_rules.ir import Apply, Func, Param, Value
from tcp_rules.ops import ShapeError
from tcp_rules.rules.library import load_standard_library
from tcp_rules.rules.model import AFn, Example, Guard, Rule, TRef
from tcp_rules.rules.semantics import same_value
from tcp_rules.sorts import Sort
from tcp_rules.verify.cases import Setup, judge
from tcp_rules.verify.values import Palette, draw_array, impose

STDLIB = load_standard_library()
STEPS = 2  # the example rewrites at its root; a second step runs the rule on what it built
MAX_TERMS = 24  # per e-class, enough to hold every direct rewrite of an example
PALETTE_TRIALS = 6


class IllTyped(Exception):
    """A term in the e-graph that the op table refuses."""


def terms(snap: Snapshot, cid: int, params: dict[str, Param], depth: int) -> Iterator[Value]:
    """The terms of e-class ``cid`` up to ``depth`` op levels; raises IllTyped for a term the
    op table refuses."""
    for node in snap.classes[cid].nodes:
        if node.op is None:
            assert node.param is not None
            yield params[node.param]
            continue
        if depth == 0:
            continue
        kids = [list(itertools.islice(terms(snap, k, params, depth - 1), MAX_TERMS))
                for k in node.children]
        for operands in itertools.islice(itertools.product(*kids), MAX_TERMS):
            try:
                yield make_apply(node.op, list(operands), node_attrs(node, list(operands)))
            except ShapeError as e:
                if any(o.sort is Sort.BODY for o in operands):
                    continue  # a constant's class holds both sorts (sorts.py); not a term
                raise IllTyped(f"{node.op.name}: {e.message}") from None


def _depth(v: Value) -> int:
    return 1 + max((_depth(o) for o in v.operands), default=0) if isinstance(v, Apply) else 0


def _inputs(rule: Rule, func: Func, seed: int) -> list[dict[str, np.ndarray]]:
    rng = np.random.default_rng(seed)
    base = random_inputs(func, default_size=3, seed=seed)
    sets = [base]
    finite = rule.soundness.kind != "exact"
    for _ in range(PALETTE_TRIALS):
        palette = Palette.draw(rng, finite)
        sets.append([draw_array(a.shape, p.type.dtype, rng, palette)
                     for p, a in zip(func.params, base, strict=True)])
    out = []
    for arrays in sets:
        named = {p.param: a for p, a in zip(func.params, arrays, strict=True)}
        pre = rule.soundness.precondition
        if pre and not (all(_names(g) <= named.keys() for g in pre) and impose(pre, named, rng)):
            continue  # inputs the precondition rules out say nothing about the rule
        out.append(named)
    return out


def _names(e: object) -> set[str]:
    """The tensor variables a precondition mentions."""
    match e:
        case TRef(name=n):
            return {n}
        case Guard(lhs=lhs, rhs=rhs):
            return _names(lhs) | _names(rhs)
        case AFn(args=args):
            return set().union(*(_names(a) for a in args))
    return set()


def _elaborate(rule: Rule, ex: Example) -> tuple[dict[str, Param], Value, Value]:
    params = {name: Param(t, param=name, index=i, name=name)
              for i, (name, t) in enumerate(ex.params)}
    bag = DiagnosticBag()
    before = elaborate_term(ex.before, params, bag)
    after = elaborate_term(ex.after, params, bag, expected=before.type if before else None)
    assert not bag.items and before is not None and after is not None, bag.items
    return params, before, after


def check_direction(rule: Rule, params: dict[str, Param], start: Value, want: Value) -> None:
    """Run ``rule`` alone on ``start``; ``want`` must be equal to it, and so must everything
    else the encoding put in its e-class."""
    func = Func("example", tuple(params.values()), (start,), (start.type,))
    sat = load(func, [rule])
    assert sat.rules_loaded, f"{rule.name} ({rule.where}) is not encodable: {sat.rules_skipped}"
    for _ in range(STEPS):
        step(sat)
    snap = snapshot(sat.egraph, sat.tables, sat.roots)
    depth = max(_depth(start), _depth(want)) + 1
    try:
        found = list(itertools.islice(terms(snap, snap.roots[0], params, depth), 4 * MAX_TERMS))
    except IllTyped as e:
        pytest.fail(f"{rule.name} ({rule.where}): the encoding built an ill-typed term: {e}")
    assert any(same_value(t, want) for t in found), (
        f"{rule.name} ({rule.where}): the encoded rule does not rewrite the example to its "
        f"expected result")
    mode = "exact" if rule.soundness.kind == "exact" else "approx"
    for named in _inputs(rule, func, seed=len(rule.name)):
        for t in found:
            pair = Func("pair", func.params, (start, t), (start.type, t.type))
            judged = judge(Setup(pair, list(func.params), {}, {}), named, mode)
            assert judged is None or judged[2] is None, (
                f"{rule.name} ({rule.where}): the encoding made a term that differs from the "
                f"example's input ({mode}): {judged[2]}")


CASES = [(r, i) for r in STDLIB.rules for i in range(len(r.examples))]


@pytest.mark.parametrize(("rule", "index"), CASES, ids=[f"{r.name}-{i}" for r, i in CASES])
def test_rule_example_through_the_encoding(rule: Rule, index: int) -> None:
    params, before, after = _elaborate(rule, rule.examples[index])
    check_direction(rule, params, before, after)
    if rule.two_way:
        check_direction(rule, params, after, before)


def test_a_list_length_is_asked_once_and_never_of_a_range() -> None:
    """egglog's planner joins the helper tables (iota, keep-sel, axis-set) before the
    primitives that connect them, so a query that asks for ``(vec-length (iota n))`` instead of
    using ``n``, or looks the same list up twice, multiplies its join: reshape-broadcast took
    88 ms a run on the model suite's encoder, 14 ms without them."""
    for rule in STDLIB.rules:
        try:
            texts = encode_rule(rule, Tables())
        except Unencodable:
            continue
        for text in texts:
            bound = re.findall(r"\(= (\w+) (\(.*\))\)$", text, flags=re.MULTILINE)
            lookups = [e for _, e in bound if e[1].islower()]  # not the matched e-nodes
            assert len(lookups) == len(set(lookups)), (rule.name, text)
            ranges = {v for v, e in bound if re.fullmatch(r"\((iota|zeros) \w+\)", e)}
            asked = set(re.findall(r"\(vec-length (\w+)\)", text))
            assert not ranges & asked, (rule.name, text)
