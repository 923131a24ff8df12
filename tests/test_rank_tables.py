"""The helper tables scale with what a program uses, not with its rank: the builder's sets
(tables_needed) and programs of rank 6 to 8 that the optimizer now loads in well under a
second (every permutation of rank 6 made the tables tens of thousands of rows)."""

from __future__ import annotations

import itertools

import numpy as np

from tcp_rules.diagnostics import Source
from tcp_rules.egraph.encode import Tables
from tcp_rules.egraph.saturate import build_text
from tcp_rules.egraph.schema import tables
from tcp_rules.egraph.tables_needed import (
    FALLBACK_CAP,
    PERM_CAP,
    TableNeeds,
    _group,
    axis_set,
    compose,
    inverse,
    needed,
    reduced_perm,
)
from tcp_rules.elaborate import load_program
from tcp_rules.interpret import evaluate
from tcp_rules.ir import Func
from tcp_rules.optimize import OptOptions, optimize
from tcp_rules.rules.library import load_standard_library

STDLIB = load_standard_library().rules
TABLES = ("inverse", "reduced-perm", "sorted", "axis-set", "keep-sel", "reduce-sel", "iota",
          "zeros")

RANK6 = """func r6(x: f32[2, 3, 4, 5, 6, 7]) -> f32[7, 6, 5, 4, 3, 2] {
  t = transpose(x, perm=[1, 0, 2, 3, 5, 4])
  u = transpose(t, perm=[5, 4, 3, 2, 1, 0])
  e = exp(u)
  r = reshape(e, shape=[42, 20, 6])
  s = reshape(r, shape=[7, 6, 5, 4, 3, 2])
  return s
}"""

RANK8 = """func r8(x: f32[2, 3, 2, 3, 2, 3, 2, 3], y: f32[3, 2, 3, 2, 3, 2, 3, 2]) -> f32[3, 3, 3] {
  t = transpose(x, perm=[7, 6, 5, 4, 3, 2, 1, 0])
  w = transpose(add(t, y), perm=[1, 0, 3, 2, 5, 4, 7, 6])
  s = reduce_sum(w, axes=[0, 2, 4])
  return reduce_max(s, axes=[1, 3])
}"""


def func(text: str) -> Func:
    return load_program(Source("t.tcp", text)).funcs[0]


def table_rows(text: str) -> int:
    return sum(line.startswith(tuple(f"(set ({t} " for t in TABLES))
               for line in text.splitlines())


def is_group(perms: set[tuple[int, ...]]) -> bool:
    return all(compose(p, q) in perms for p in perms for q in perms) and all(
        inverse(p) in perms for p in perms)


# The builder -------------------------------------------------------------------------------

def test_permutations_are_the_group_the_program_generates() -> None:
    p, q = (1, 0, 2, 3, 5, 4), (5, 4, 3, 2, 1, 0)
    perms = set(needed(func(RANK6), STDLIB).perms[6])
    assert {p, q, compose(p, q), compose(q, p), inverse(compose(p, q)), tuple(range(6))} <= perms
    assert is_group(perms)
    assert len(perms) == 4  # not the 720 permutations of rank 6


def test_rule_literal_permutations_join_only_at_ranks_the_program_has() -> None:
    # matmul-transpose builds perm=[1, 0], matmul-transpose-batched perm=[0, 2, 1]
    needs = needed(func(RANK6), STDLIB)  # ranks 6 and 3 (the reshape to [42, 20, 6])
    assert set(needs.perms[3]) == {(0, 1, 2), (0, 2, 1)}
    assert 2 not in needs.perms


def test_a_large_group_falls_back_to_products_of_generators() -> None:
    # a transposition and a 7-cycle generate all 5040 permutations of rank 7
    p, q = (1, 0, 2, 3, 4, 5, 6), (1, 2, 3, 4, 5, 6, 0)
    f = func(f"""func f(x: f32[2, 2, 2, 2, 2, 2, 2]) -> f32[2, 2, 2, 2, 2, 2, 2] {{
      return transpose(transpose(x, perm={list(p)}), perm={list(q)}) }}""")
    perms = set(needed(f, STDLIB).perms[7])
    base = {tuple(range(7)), p, q, inverse(p), inverse(q)}
    products = {compose(a, b) for a in base for b in base}
    assert perms == base | products | {inverse(x) for x in products}
    assert len(perms) < PERM_CAP and all(inverse(x) in perms for x in perms)
    rng = np.random.default_rng(0)  # many generators: the fallback is capped as well
    many = [tuple(int(i) for i in rng.permutation(8)) for _ in range(400)]
    assert len(_group(many)) == FALLBACK_CAP


def test_reductions_of_transposes_get_their_axes_and_reduced_permutations() -> None:
    needs = needed(func(RANK8), STDLIB)
    p = (1, 0, 3, 2, 5, 4, 7, 6)
    # reduce-sum-transpose: the axes take(p, a) and the permutation reduced_perm(p, a)
    assert compose(p, (0, 2, 4)) in needs.reductions[8]
    assert reduced_perm(p, (0, 2, 4)) in needs.perms[5]
    assert (p, (0, 2, 4)) in needs.reduced_pairs(8)
    # reduce-sum-sum: the outer axes [1, 3] index the axes the inner sum leaves
    assert (0, 2, 4, 3, 6) in needs.reductions[8]
    # every reduced-perm row's permutation has an inverse row at its rank
    assert all(reduced_perm(p, s) in needs.perms[8 - len(s)]
               for p, s in needs.reduced_pairs(8) if 0 < len(s) < 8)


def test_rows_cover_the_lists_the_rules_look_up() -> None:
    needs = needed(func(RANK8), STDLIB)
    text = tables(needs)
    for a in needs.reductions[8]:
        assert f"(set (sorted {vec(a)}) {vec(sorted(a))})" in text
        assert f"(set (reduce-sel 8 {vec(axis_set(a))} false)" in text
        for c in range(8):  # remove(range(rank(x)), cat(a, [c])): reduce-sum-concat
            assert f"(set (axis-set {vec((*a, c))}) {vec(axis_set((*a, c)))})" in text
    for r in range(needs.max_rank + 1):
        assert f"(set (iota {r}) " in text and f"(set (zeros {r}) " in text
    for s in itertools.combinations(range(4), 2):  # every subset at small ranks
        assert f"(set (keep-sel 4 {vec(s)}) " in text and f"(set (sorted {vec(s)}) " in text


def test_a_rank_8_program_keeps_its_tables_small() -> None:
    # every permutation of rank 8 was 40320 inverse rows and 10 million reduced-perm rows
    text = build_text(func(RANK8), STDLIB, Tables())[0]
    assert table_rows(text) < 2500


def test_tables_of_high_ranks_stay_bounded() -> None:
    rng = np.random.default_rng(0)
    r = 14
    p, q = (list(map(int, rng.permutation(r))) for _ in range(2))
    f = func(f"""func f(x: f32[{', '.join(['2'] * r)}]) -> f32[{', '.join(['2'] * (r - 3))}] {{
      return reduce_sum(transpose(transpose(x, perm={p}), perm={q}), axes=[1, 5, 9]) }}""")
    assert table_rows(build_text(f, STDLIB, Tables())[0]) < 6000


def test_no_program_needs_only_the_dtype_rows_and_small_ranks() -> None:
    text = tables(TableNeeds())
    assert '(set (is-float "f32") true)' in text
    assert "(set (iota 1) (vec-of 0))" in text and "inverse" not in text


def vec(xs: tuple[int, ...] | list[int]) -> str:
    return f"(vec-of {' '.join(map(str, xs))})" if xs else "(vec-empty)"


# Programs of rank 6 to 8 through the optimizer -------------------------------------------------

FAST = OptOptions(isolate=False)


def transposes(f: Func) -> list[tuple[int, ...]]:
    return [tuple(dict(v.attrs)["perm"]) for v in f.ops() if v.op.name == "transpose"]


def test_a_rank_6_reshape_transpose_program_optimizes() -> None:
    f = func(RANK6)
    result = optimize(f, STDLIB, FAST)
    assert result.report.error is None
    assert result.report.stop_reason == "saturated"
    assert result.report.rules_loaded > 0
    # the two transposes compose into one (transpose-transpose), the reshapes too
    assert transposes(result.func) == [compose((1, 0, 2, 3, 5, 4), (5, 4, 3, 2, 1, 0))]
    assert [v.op.name for v in result.func.ops()].count("reshape") == 1
    x = np.random.default_rng(1).standard_normal((2, 3, 4, 5, 6, 7)).astype(np.float32)
    want = np.exp(x.transpose(1, 0, 2, 3, 5, 4).transpose(5, 4, 3, 2, 1, 0))
    want = want.reshape(7, 6, 5, 4, 3, 2)
    (got,) = evaluate(result.func, [x])
    np.testing.assert_allclose(got, want, rtol=1e-6)
    assert table_rows(build_text(f, STDLIB, Tables())[0]) < 1000


def test_a_rank_8_reduction_of_transposes_optimizes() -> None:
    f = func(RANK8)
    result = optimize(f, STDLIB, FAST)
    assert result.report.error is None
    assert result.report.stop_reason == "saturated"
    # the reduced-perm rows let the reductions move below the transposes
    assert result.report.matches.get("reduce-sum-transpose", 0) > 0
    rng = np.random.default_rng(2)
    x = rng.standard_normal((2, 3) * 4).astype(np.float32)
    y = rng.standard_normal((3, 2) * 4).astype(np.float32)
    w = (x.transpose(7, 6, 5, 4, 3, 2, 1, 0) + y).transpose(1, 0, 3, 2, 5, 4, 7, 6)
    want = w.sum(axis=(0, 2, 4)).max(axis=(1, 3))
    (got,) = evaluate(result.func, [x, y])
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
