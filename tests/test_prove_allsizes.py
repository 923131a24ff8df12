"""Proofs for every size (tcp_rules/prove/indexmaps.py, allsizes.py): each op's map from a
symbolic index, evaluated at concrete sizes and indices, equals its NumPy reference bit for bit;
the conditions under which an op is defined at given sizes are exactly its shape rule's; and
rules are proved for every size, or fall back to bounded sizes, never wrongly proved."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import pytest

z3 = pytest.importorskip("z3", reason="the prove extra (z3-solver) is not installed")

from test_prove_formulas import _types_for, _values  # noqa: E402

from tcp_rules.ops import MATMULS, OPS, ShapeError  # noqa: E402
from tcp_rules.prove.allsizes import prove_instance  # noqa: E402
from tcp_rules.prove.domain import Ctx, to_numpy  # noqa: E402
from tcp_rules.prove.formulas import FORMULAS  # noqa: E402
from tcp_rules.prove.indexmaps import INDEX_FORMULAS, Sized, STensor  # noqa: E402
from tcp_rules.prove.obligation import plan  # noqa: E402
from tcp_rules.prove.prover import prove_rule  # noqa: E402
from tcp_rules.prove.tensors import lift  # noqa: E402
from tcp_rules.rules.library import load_rules  # noqa: E402
from tcp_rules.rules.model import Rule  # noqa: E402
from tcp_rules.types import Dim, DType, TensorType  # noqa: E402
from tcp_rules.verify.cases import exact_mismatch  # noqa: E402

UNINTERPRETED = {"reduce_sum", "reduce_prod", "reduce_max", "reduce_min", *MATMULS}


def test_every_formula_has_a_map_at_symbolic_sizes() -> None:
    # An op without one sends every rule that uses it to bounded sizes only: say so here.
    assert set(INDEX_FORMULAS) == set(FORMULAS)
    assert set(INDEX_FORMULAS) <= set(OPS)


def _concrete_input(a: np.ndarray, dt: DType, ctx: Ctx) -> STensor:
    """An input whose element at a concrete index is that value (indices are simplified to
    numerals first: the maps compute them). A read out of range, which a choice may compute
    but must not select, is an unknown: if selected, the result is no value and the test fails."""
    lifted = lift(a, dt, ctx)
    outside = z3.Const("out_of_range", lifted.flat[0].sort()) if a.size else None

    def at(i: tuple[Any, ...]) -> Any:  # a choice over the elements: any index term works
        term = outside
        for k, v in np.ndenumerate(lifted):
            term = z3.If(z3.And(*[x == n for x, n in zip(i, k, strict=True)]), v, term)
        return term
    return STensor(tuple(z3.IntVal(n) for n in a.shape), at)


def _run(name: str, arrays: list[np.ndarray], types: list[TensorType], attrs: dict[str, Any]
         ) -> tuple[np.ndarray, Sized, STensor, TensorType] | None:
    op = OPS[name]
    full = {**{a.name: a.default for a in op.attrs}, **attrs}
    try:
        out = op.infer(types, full)
    except ShapeError:
        return None
    with np.errstate(all="ignore"):
        want = np.asarray(op.reference(list(arrays), full, out))
    sz = Sized(Ctx("fp"), {})
    args = [_concrete_input(a, t.dtype, sz.ctx) for a, t in zip(arrays, types, strict=True)]
    return want, sz, INDEX_FORMULAS[name](sz, name, args, types, out, full), out


def _arrays(name: str, types: list[TensorType], rng: np.random.Generator) -> list[np.ndarray]:
    out = []
    for k, t in enumerate(types):
        if name == "gather" and k == 1:  # indices, some out of range (clipped)
            out.append(rng.integers(-2, 5, t.shape).astype(t.dtype.np_dtype))
        else:
            out.append(rng.choice(_values(t.dtype, rng, 8), t.shape).astype(t.dtype.np_dtype))
    return out


MAPPED = sorted(n for n in INDEX_FORMULAS if not OPS[n].traits.elementwise
                and n not in UNINTERPRETED and n != "dense")


@pytest.mark.parametrize("name", MAPPED)
def test_index_map_matches_reference(name: str) -> None:
    rng = np.random.default_rng(11)
    compared = 0
    for types, attrs in _types_for(OPS[name], rng):
        arrays = _arrays(name, types, rng)
        ran = _run(name, arrays, types, attrs)
        if ran is None:
            continue
        want, sz, res, out = ran
        assert all(z3.is_true(z3.simplify(c)) for c in sz.valid), f"{name}{attrs}: not valid"
        assert [z3.simplify(d).as_long() for d in res.dims] == list(want.shape)
        got = np.empty(want.shape, dtype=want.dtype)
        for i in np.ndindex(*want.shape):
            got[i] = to_numpy(z3.simplify(res.at(tuple(z3.IntVal(k) for k in i))), out.dtype)
        bad = exact_mismatch(got, want)
        assert bad is None, f"{name}{attrs} on {[a.tolist() for a in arrays]}: {bad}"
        compared += want.size
    assert compared > 0


@pytest.mark.parametrize("name", ["reduce_sum", "reduce_max", "reduce_min", "reduce_prod"])
def test_reduction_reads_the_reduced_elements(name: str) -> None:
    """A reduction is an uninterpreted function of the elements it reduces: its array holds
    exactly those (in range), and a reduction of one element is that element, as NumPy."""
    rng = np.random.default_rng(3)
    rows = ones = 0
    for shape, dt, keep in itertools.product([(2, 3), (1, 3), (2, 1, 3), (3,)],
                                             [DType.I32, DType.F32], [False, True]):
        for axes in itertools.chain.from_iterable(
                itertools.combinations(range(len(shape)), n) for n in (0, 1, 2)):
            x = rng.choice(_values(dt, rng, 8), shape).astype(dt.np_dtype)
            x.flat[0] = -0.0 if dt.is_float else x.flat[0]  # the one value a sum changes
            ran = _run(name, [x], [TensorType.of(dt, shape)], {"axes": axes, "keepdims": keep})
            assert ran is not None
            want, sz, res, _ = ran
            # the kept axes first, the reduced ones last, in the order of the axes
            moved = np.moveaxis(x, axes, range(x.ndim - len(axes), x.ndim))
            for o in np.ndindex(*want.shape):
                before = len(sz.ctx.facts)
                term = res.at(tuple(z3.IntVal(k) for k in o))
                if not axes:  # no axes: each element on its own, as NumPy (-0.0 sums to 0.0)
                    got = to_numpy(z3.simplify(term), dt)
                    assert exact_mismatch(np.asarray(got), want[o]) is None, (x, want)
                    continue
                if all(shape[a] == 1 for a in axes):  # the one-element fact, against NumPy
                    (fact,) = sz.ctx.facts[before:]
                    first = to_numpy(z3.simplify(fact.arg(1).arg(1)), dt)
                    assert exact_mismatch(np.asarray(first), want[o]) is None, (x, axes)
                    ones += 1
                if not term.decl().name().startswith(name + "/"):
                    continue  # a float sum or product: a function of the whole operand
                kept = tuple(o[a] for a in range(len(shape)) if a not in axes) if keep else o
                row = moved[kept]
                for ks in np.ndindex(*row.shape):
                    e = z3.simplify(z3.Select(term.arg(0), *[z3.IntVal(k) for k in ks]))
                    assert exact_mismatch(np.asarray(to_numpy(e, dt)), row[ks]) is None
                rows += 1
    assert rows > 0 and ones > 0


@pytest.mark.parametrize("name", ["reduce_sum", "reduce_prod"])
def test_keepdims_does_not_change_a_float_reduction(name: str) -> None:
    """Float sums and products are modelled as one function of the operand whatever keepdims
    says (it only adds axes of size 1): NumPy's results agree bit for bit, pairwise sums
    included (rows of 8 and more)."""
    rng = np.random.default_rng(5)
    op = OPS[name]
    for shape in [(3, 40), (17, 9), (2, 3, 20)]:
        x = (rng.standard_normal(shape) * 10.0 ** rng.integers(-3, 4, shape)).astype(np.float32)
        t = TensorType.of(DType.F32, shape)
        for axes in itertools.chain.from_iterable(
                itertools.combinations(range(len(shape)), n) for n in (1, 2)):
            got = []
            for keep in (False, True):
                attrs = {"axes": axes, "keepdims": keep}
                got.append(np.asarray(op.reference([x], attrs, op.infer([t], attrs))))
            assert exact_mismatch(got[1].reshape(got[0].shape), got[0]) is None


def _out_shape(name: str, n: int, attrs: dict[str, Any], k: int) -> tuple[int, ...]:
    """The result shape the attributes ask for, whether or not the shape rule accepts them."""
    if name == "slice":
        return tuple(Dim.of(d).const or 0 for d in attrs["size"])
    if name == "pad":
        return (n + attrs["low"][0] + attrs["high"][0],)
    return (k,)


@pytest.mark.parametrize("name", ["slice", "pad", "gather"])
def test_conditions_at_sizes_are_the_shape_rule(name: str) -> None:
    """At symbolic sizes an op says where it is defined; at concrete sizes, that is exactly
    where its shape rule accepts the operands (checked over sizes 0..5 and varied attributes)."""
    op, checked = OPS[name], 0
    for n, k in itertools.product(range(6), range(3)):
        types = [TensorType.of(DType.F32, (n,))]
        if name == "slice":
            spaces = [{"start": (s,), "size": (Dim.of(z),), "stride": (st,)}
                      for s in range(4) for z in range(5) for st in (1, 2, 3)]
        elif name == "pad":
            spaces = [{"low": (lo,), "high": (hi,), "mode": m, "value": 0}
                      for lo in range(4) for hi in range(4)
                      for m in ("constant", "edge", "reflect")]
        else:
            spaces = [{"axis": 0}]
            types.append(TensorType.of(DType.I32, (k,)))
        for attrs in spaces:
            full = {**{a.name: a.default for a in op.attrs}, **attrs}
            try:
                op.infer(types, full)
                accepted = True
            except ShapeError:
                accepted = False
            out = TensorType.of(DType.F32, _out_shape(name, n, attrs, k))
            sz = Sized(Ctx("fp"), {})
            args = [STensor(tuple(z3.IntVal(d) for d in t.shape or ()), lambda i: None)
                    for t in types]
            INDEX_FORMULAS[name](sz, name, args, types, out, full)
            ok = all(z3.is_true(z3.simplify(c)) for c in sz.valid)
            assert ok == accepted, f"{name}{attrs} on {types}: shape rule {accepted}, map {ok}"
            checked += 1
    assert checked > 0


EXAMPLES = """
ruleset t
rule bad-perm: transpose(transpose(x, perm=p), perm=q) => transpose(x, perm=compose(q, p))
rule reflect-end: pad(x, low=[0], high=[1], mode=reflect)
  => concat(x, slice(x, start=[0], size=[1], stride=[1]), axis=0)
"""


@pytest.fixture(scope="module")
def rules(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Rule]:
    path = tmp_path_factory.mktemp("allsizes") / "t.tcpr"
    path.write_text(EXAMPLES)
    return {r.name: r for r in load_rules([path], check=False).rules}


def test_a_wrong_layout_rule_is_refuted_at_bounded_sizes(rules: dict[str, Rule]) -> None:
    v = prove_rule(rules["bad-perm"], tester=False)
    assert v.status == "refuted" and v.counterexample is not None


def test_a_wrong_instance_is_never_proved_for_every_size(rules: dict[str, Rule]) -> None:
    """Instances of a rule NumPy refutes: those where the perms commute prove, the others come
    back with the sizes at which the solver found the sides may differ."""
    rule = rules["bad-perm"]
    attempts = [prove_instance(frm, to, rule.guards, inst, "fp", 5.0)  # f32, rank <= 2 first
                for _, frm, to, inst in plan(rule).instances[:40]]
    assert any(a.proved for a in attempts)
    wrong = [a for a in attempts if not a.proved]
    assert wrong and all(a.sizes is not None for a in wrong), [a.reason for a in wrong]


def test_a_rule_wrong_only_from_size_3_is_refuted(rules: dict[str, Rule]) -> None:
    """Reflecting one element past the end is x[n-2]; appending x[0] agrees for n = 2 (and
    reflect needs n >= 2), so every bounded instance proves; the proof for every size finds
    n = 3 and NumPy confirms it there."""
    rule = rules["reflect-end"]
    assert all(ob.sizes and max(ob.sizes.values()) <= 2 for ob in plan(rule).obligations)
    v = prove_rule(rule, tester=False)
    assert v.status == "refuted" and v.counterexample is not None, v.reason
    assert max(v.counterexample.sizes.values()) >= 3
    assert v.counterexample.mismatch is not None  # NumPy's own results differ
