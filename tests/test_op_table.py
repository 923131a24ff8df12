"""The op table: every op is complete, its shape rule accepts and refuses the right types, and its
cost formula counts what it should."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from test_ops_reference import COVERED_OPS

from tcp_rules.build import check_attrs
from tcp_rules.elaborate import parse_type
from tcp_rules.ops import OPS, AttrKind, AttrSpec, CostFormula, OpCost, OpDef, ShapeError, Traits
from tcp_rules.types import TensorType

# Completeness ---------------------------------------------------------------------------------


def missing_facets(op: OpDef) -> list[str]:
    """What ``op`` lacks, each named so a failure says which facet to add."""
    problems = []
    if not isinstance(op.doc, str) or not op.doc.strip():
        problems.append("doc (empty)")
    elif "\n" in op.doc or op.doc != op.doc.strip():
        problems.append("doc (not one trimmed line)")
    if not isinstance(op.operands, tuple) or not all(
            isinstance(o, str) and o.isidentifier() for o in op.operands):
        problems.append("operands (a tuple of operand names)")
    if not isinstance(op.attrs, tuple) or not all(
            isinstance(a, AttrSpec) and isinstance(a.kind, AttrKind) and a.name.isidentifier()
            for a in op.attrs):
        problems.append("attrs (a tuple of AttrSpecs with names and kinds)")
    elif len({a.name for a in op.attrs}) != len(op.attrs):
        problems.append("attrs (duplicate names)")
    if not callable(op.infer):
        problems.append("infer (shape rule)")
    if not callable(op.reference):
        problems.append("reference (NumPy)")
    if not isinstance(op.cost, CostFormula):
        problems.append("cost (CostFormula)")
    if not isinstance(op.traits, Traits):
        problems.append("traits (Traits)")
    if not isinstance(op.category, str) or not op.category or op.category == "other":
        problems.append("category (left at the default 'other')")
    if op.variadic and not op.operands:
        problems.append("operands (variadic op without operands)")
    space = {f.name: f for f in dataclasses.fields(OpDef)}.get("attr_space")
    if space is not None:  # representative attributes, for ops that have any
        if not callable(op.attr_space):
            problems.append("attr_space (not callable)")
        elif op.attrs and op.attr_space is space.default:
            problems.append("attr_space (left at the default for an op with attributes)")
    return problems


@pytest.mark.parametrize("name", sorted(OPS))
def test_op_is_complete(name: str) -> None:
    op = OPS[name]
    assert op.name == name, f"op {name} is registered under the name {op.name!r}"
    missing = missing_facets(op)
    assert not missing, f"op {name} is missing: {', '.join(missing)}"


@pytest.mark.parametrize(("change", "facet"), [
    ({"doc": ""}, "doc (empty)"),
    ({"doc": "two\nlines"}, "doc (not one trimmed line)"),
    ({"operands": ["x"]}, "operands"),
    ({"attrs": (("axis", "int"),)}, "attrs"),
    ({"attrs": (AttrSpec("a", AttrKind.INT), AttrSpec("a", AttrKind.INT))}, "attrs (duplicate"),
    ({"infer": None}, "infer"),
    ({"reference": "np.add"}, "reference"),
    ({"cost": 1.0}, "cost"),
    ({"traits": None}, "traits"),
    ({"category": "other"}, "category"),
])
def test_completeness_check_names_the_missing_facet(change: dict[str, Any], facet: str) -> None:
    broken = dataclasses.replace(OPS["clamp"], **change)
    missing = missing_facets(broken)
    assert len(missing) == 1 and missing[0].startswith(facet), missing


def test_every_op_has_hand_checked_reference_cases() -> None:
    untested = sorted(set(OPS) - COVERED_OPS)
    assert not untested, f"ops without cases in tests/test_ops_reference.py: {untested}"
    assert not COVERED_OPS - set(OPS), "reference cases for unknown ops"


# Shape rules ----------------------------------------------------------------------------------


def T(text: str) -> TensorType:
    return parse_type(text)


def infer(name: str, types: list[str], attrs: dict[str, Any]) -> TensorType:
    op = OPS[name]
    return op.infer([T(t) for t in types], dict(check_attrs(op, attrs)))


GOOD: list[tuple[str, list[str], dict[str, Any], str]] = [
    *((n, ["f32[N, 3]"], {}, "f32[N, 3]") for n in (
        "exp", "log", "sqrt", "rsqrt", "tanh", "sigmoid", "sin", "cos", "atan", "erf", "floor",
        "ceil", "round", "round_even")),
    ("exp", ["f64[]"], {}, "f64[]"),
    ("load", ["i32[N, 3]"], {}, "i32[N, 3]"),
    ("kernel", ["f64[]"], {}, "f64[]"),
    ("load_matmul", ["f32[M, K]", "f32[K, 3]"], {}, "f32[M, 3]"),
    ("load_matmul_rows", ["f32[2, M, K]", "f32[2, K, 3]"], {"shape": [2, "M", "K"]},
     "f32[2, M, 3]"),
    ("load_matmul_rows", ["f32[2, 3, M, K]", "f32[6, K, 3]"], {"shape": [6, "M", "K"]},
     "f32[6, M, 3]"),
    ("neg", ["i32[4]"], {}, "i32[4]"),
    ("abs", ["i64[N]"], {}, "i64[N]"),
    ("clamp", ["f32[4]"], {"min": 0.0}, "f32[4]"),
    ("clamp", ["i32[2, M]"], {"min": -1, "max": 3.0}, "i32[2, M]"),
    *((n, ["f32[N, 3]", "f32[N, 3]"], {}, "f32[N, 3]") for n in (
        "add", "sub", "mul", "div", "max", "min", "pow", "atan2")),
    *((n, ["i64[2*N]", "i64[2*N]"], {}, "i64[2*N]") for n in (
        "add", "sub", "mul", "div", "max", "min")),
    *((n, ["f32[N]", "f32[N]"], {}, "i1[N]") for n in ("eq", "ne", "lt", "le", "gt", "ge")),
    ("eq", ["i1[2]", "i1[2]"], {}, "i1[2]"),
    ("lt", ["i32[]", "i32[]"], {}, "i1[]"),
    ("select", ["i1[N]", "f32[N]", "f32[N]"], {}, "f32[N]"),
    ("select", ["i1[2]", "i1[2]", "i1[2]"], {}, "i1[2]"),
    ("cast", ["f32[2, 3]"], {"to": "i32"}, "i32[2, 3]"),
    ("cast", ["i64[N]"], {"to": "i1"}, "i1[N]"),
    ("splat", [], {"value": 1.0, "shape": ["N", 4], "dtype": "f32"}, "f32[N, 4]"),
    ("splat", [], {"value": True, "shape": [], "dtype": "i1"}, "i1[]"),
    ("splat", [], {"value": -(2**31), "shape": [1], "dtype": "i32"}, "i32[1]"),
    ("iota", [], {"shape": ["N", 4], "axis": 1, "dtype": "i64"}, "i64[N, 4]"),
    ("iota", [], {"shape": [256], "axis": 0, "dtype": "u8"}, "u8[256]"),
    ("iota", [], {"shape": [3000], "axis": 0, "dtype": "f16"}, "f16[3000]"),
    ("dense", [], {"value": [[1, 2], [3, 4]], "dtype": "i32"}, "i32[2, 2]"),
    ("dense", [], {"value": [1.5, 2.0, 3.0], "dtype": "f64"}, "f64[3]"),
    ("broadcast", ["f32[128]"], {"shape": ["N", 128], "dims": [1]}, "f32[N, 128]"),
    ("broadcast", ["f32[1, 3]"], {"shape": [4, 3], "dims": [0, 1]}, "f32[4, 3]"),
    ("broadcast", ["i32[N]"], {"shape": ["N", 2, 5], "dims": [0]}, "i32[N, 2, 5]"),
    ("broadcast", ["f32[]"], {"shape": [2], "dims": []}, "f32[2]"),
    ("transpose", ["f32[2, 3, 4]"], {"perm": [2, 0, 1]}, "f32[4, 2, 3]"),
    ("transpose", ["i1[N, M]"], {"perm": [1, 0]}, "i1[M, N]"),
    ("reshape", ["f32[N, 784]"], {"shape": [parse_type("f32[N*784]").dims[0]]}, "f32[784*N]"),
    ("reshape", ["f32[N*784]"], {"shape": ["N", 28, 28]}, "f32[N, 28, 28]"),
    ("reshape", ["f32[2, 3]"], {"shape": [6, 1]}, "f32[6, 1]"),
    ("slice", ["f32[10]"], {"start": [1], "size": [3], "stride": [3]}, "f32[3]"),
    ("slice", ["f32[10]"], {"start": [0], "size": [4], "stride": [3]}, "f32[4]"),
    ("slice", ["f32[10]"], {"start": [10], "size": [0], "stride": [1]}, "f32[0]"),
    ("slice", ["f32[N]"], {"start": [0], "size": ["N"], "stride": [1]}, "f32[N]"),
    ("slice", ["f32[N, 4]"], {"start": [1, 0], "size": [T("f32[N-1]").dims[0], 2],
                              "stride": [1, 2]}, "f32[N - 1, 2]"),
    ("concat", ["f32[2, 3]", "f32[4, 3]", "f32[N, 3]"], {"axis": 0}, "f32[N + 6, 3]"),
    ("concat", ["i32[2, 1]"], {"axis": 1}, "i32[2, 1]"),
    ("gather", ["f32[5, 3]", "i32[N, 2]"], {"axis": 0}, "f32[N, 2, 3]"),
    ("pad", ["f32[N, 3]"], {"low": [1, 0], "high": [2, 2], "mode": "reflect"}, "f32[N + 3, 5]"),
    ("pad", ["i1[0, 2]"], {"low": [1, 0], "high": [0, 1], "value": True}, "i1[1, 3]"),
    ("pad", ["i32[2]"], {"low": [0], "high": [0], "mode": "edge"}, "i32[2]"),
    ("pow", ["i64[N]", "i64[N]"], {}, "i64[N]"),
    ("gather", ["f32[5, 3]", "i64[N, 2]"], {"axis": 1}, "f32[5, N, 2]"),
    *((n, ["f32[N, 3, 4]"], {"axes": [1]}, "f32[N, 4]") for n in (
        "reduce_sum", "reduce_prod", "reduce_max", "reduce_min")),
    ("reduce_sum", ["f32[N, 3, 4]"], {"axes": [1], "keepdims": True}, "f32[N, 1, 4]"),
    ("reduce_max", ["i32[N, 3, 4]"], {"axes": [0, 2]}, "i32[3]"),
    ("reduce_min", ["i64[N, 3]"], {"axes": []}, "i64[N, 3]"),
    ("reduce_prod", ["f64[N, 3]"], {"axes": [1, 0]}, "f64[]"),
    ("matmul", ["f32[N, 784]", "f32[784, 128]"], {}, "f32[N, 128]"),
    ("matmul", ["i32[B, M, K]", "i32[B, K, P]"], {}, "i32[B, M, P]"),
]


def test_every_op_has_a_good_shape_case() -> None:
    assert sorted(set(OPS) - {g[0] for g in GOOD}) == []


@pytest.mark.parametrize(("name", "types", "attrs", "expected"), GOOD,
                         ids=[f"{g[0]}-{'-'.join(g[1])}" for g in GOOD])
def test_infer_accepts(name: str, types: list[str], attrs: dict[str, Any], expected: str) -> None:
    assert infer(name, types, attrs) == T(expected)


# (op, operand types, attributes, part of the message, the operand or attribute blamed)
BAD: list[tuple[str, list[str], dict[str, Any], str, int | str | None]] = [
    ("add", ["f32[2, 3]", "f32[3, 2]"], {}, "identical shapes", 1),
    ("add", ["f32[N]", "f32[M]"], {}, "identical shapes", 1),
    ("add", ["f32[N, 3]", "f32[N]"], {}, "identical shapes", 1),
    ("add", ["f32[3]", "f64[3]"], {}, "dtypes differ", 1),
    ("max", ["i32[3]", "i64[3]"], {}, "dtypes differ", 1),
    ("sub", ["i1[3]", "i1[3]"], {}, "not supported", 0),
    ("neg", ["i1[3]"], {}, "not supported", 0),
    ("exp", ["i32[3]"], {}, "not supported", 0),
    ("pow", ["i1[3]", "i1[3]"], {}, "not supported", 0),
    ("pad", ["f32[3]"], {"low": [1, 0], "high": [0]}, "2 entries", "low"),
    ("pad", ["f32[3]"], {"low": [-1], "high": [0]}, "negative", "low"),
    ("pad", ["f32[3]"], {"low": [3], "high": [0], "mode": "reflect"}, "below the axis", "mode"),
    ("pad", ["f32[0, 2]"], {"low": [1, 0], "high": [0, 0], "mode": "edge"}, "empty", "mode"),
    ("pad", ["f32[3]"], {"low": [1], "high": [0], "mode": "edge", "value": 2}, "only meaningful",
     "value"),
    ("pad", ["i32[3]"], {"low": [1], "high": [0], "value": 0.5}, "not an integer", "value"),
    ("atan2", ["i64[3]", "i64[3]"], {}, "not supported", 0),
    ("lt", ["f32[3]", "i32[3]"], {}, "dtypes differ", 1),
    ("select", ["f32[3]", "f32[3]", "f32[3]"], {}, "condition must be i1", 0),
    ("select", ["i1[3]", "f32[3]", "f64[3]"], {}, "dtypes differ", 2),
    ("select", ["i1[2]", "f32[3]", "f32[3]"], {}, "identical shapes", 1),
    ("clamp", ["f32[3]"], {}, "at least one of min= and max=", None),
    ("clamp", ["i32[3]"], {"min": 0.5}, "not an integer", "min"),
    ("clamp", ["i32[3]"], {"max": 3e9}, "does not fit in i32", "max"),
    ("clamp", ["i64[3]"], {"max": 2**63}, "does not fit in i64", "max"),
    ("clamp", ["i1[3]"], {"min": 0}, "not supported", 0),
    ("load_matmul_rows", ["f32[2, 3, 4]", "f32[2, 4, 5]"], {"shape": [6, 4]},
     "keep the last two axes", "shape"),
    ("load_matmul_rows", ["f32[2, 3, 4]", "f32[3, 4, 5]"], {"shape": [3, 3, 4]},
     "regroup only the others", "shape"),
    ("load_matmul_rows", ["f32[6, 3, 4]", "f32[3, 4, 5]"], {"shape": [6, 3, 4]},
     "batch dimensions differ", 1),
    ("matmul", ["f32[4, 3]", "f32[4, 5]"], {}, "inner dimensions differ", 1),
    ("matmul", ["f32[N, K]", "f32[M, 5]"], {}, "inner dimensions differ", 1),
    ("matmul", ["f32[2, 4, 3]", "f32[3, 3, 5]"], {}, "batch dimensions differ", 1),
    ("matmul", ["f32[3]", "f32[3]"], {}, "rank-2 or two rank-3", 0),
    ("matmul", ["f32[4, 3]", "f32[2, 3, 5]"], {}, "rank-2 or two rank-3", 1),
    ("matmul", ["f32[4, 3]", "f64[3, 5]"], {}, "dtypes differ", 1),
    ("matmul", ["i1[2, 2]", "i1[2, 2]"], {}, "not supported", 0),
    ("transpose", ["f32[2, 3]"], {"perm": [0, 0]}, "not a permutation", "perm"),
    ("transpose", ["f32[2, 3]"], {"perm": [0, 2]}, "not a permutation", "perm"),
    ("transpose", ["f32[2, 3]"], {"perm": [1]}, "not a permutation", "perm"),
    ("reduce_sum", ["f32[2, 3]"], {"axes": [2]}, "out of range", "axes"),
    ("reduce_max", ["f32[2, 3]"], {"axes": [-1]}, "out of range", "axes"),
    ("reduce_min", ["f32[2, 3]"], {"axes": [1, 1]}, "repeats an axis", "axes"),
    ("reduce_prod", ["i1[2]"], {"axes": [0]}, "not supported", 0),
    ("broadcast", ["f32[2, 3]"], {"shape": [3, 2], "dims": [1, 0]}, "must be increasing",
     "dims"),
    ("broadcast", ["f32[3]"], {"shape": [2, 4], "dims": [1]}, "cannot broadcast", "dims"),
    ("broadcast", ["f32[N]"], {"shape": ["M"], "dims": [0]}, "cannot broadcast", "dims"),
    ("broadcast", ["f32[3]"], {"shape": [3, 3], "dims": [0, 1]}, "map each of", "dims"),
    ("broadcast", ["f32[3]"], {"shape": [2, 3], "dims": [2]}, "out of range", "dims"),
    ("broadcast", ["f32[3, 3]"], {"shape": [3, 3], "dims": [1, 1]}, "repeats an axis", "dims"),
    ("reshape", ["f32[N, 784]"], {"shape": ["N"]}, "changes the number of elements", "shape"),
    ("reshape", ["f32[N*784]"], {"shape": ["N"]}, "changes the number of elements", "shape"),
    ("reshape", ["f32[N, 784]"], {"shape": ["M", 784]}, "changes the number of elements",
     "shape"),
    ("reshape", ["f32[6]"], {"shape": [4]}, "changes the number of elements", "shape"),
    ("slice", ["f32[10]"], {"start": [8], "size": [3], "stride": [1]}, "past the end", "size"),
    ("slice", ["f32[10]"], {"start": [1], "size": [4], "stride": [3]}, "past the end", "size"),
    ("slice", ["f32[N]"], {"start": [1], "size": ["N"], "stride": [1]}, "past the end", "size"),
    ("slice", ["f32[10]"], {"start": [0], "size": [2], "stride": [0]}, "at least 1", "stride"),
    ("slice", ["f32[10]"], {"start": [-1], "size": [2], "stride": [1]}, "must not be negative",
     "start"),
    ("slice", ["f32[10]"], {"start": [0], "size": [-1], "stride": [1]}, "non-negative",
     "size"),
    ("slice", ["f32[10, 2]"], {"start": [0], "size": [2], "stride": [1]}, "1 entries", "start"),
    ("concat", ["f32[2, 3]", "f32[2, 4]"], {"axis": 0}, "differ off the concatenation axis", 1),
    ("concat", ["f32[2, 3]", "f32[2, 3]", "f32[N, 3]"], {"axis": 1}, "differ off the", 2),
    ("concat", ["f32[2, 3]", "f32[2]"], {"axis": 0}, "one rank", 1),
    ("concat", ["f32[2]", "i32[2]"], {"axis": 0}, "dtypes differ", 1),
    ("concat", ["f32[2]", "f32[2]"], {"axis": 1}, "out of range", "axis"),
    ("gather", ["f32[5]", "f32[2]"], {"axis": 0}, "indices must be an integer type", 1),
    ("gather", ["f32[5]", "i1[2]"], {"axis": 0}, "indices must be an integer type", 1),
    ("gather", ["f32[5]", "i32[2]"], {"axis": 1}, "out of range", "axis"),
    ("gather", ["f32[0, 2]", "i32[2]"], {"axis": 0}, "empty", 0),
    ("splat", [], {"value": 0.5, "shape": [2], "dtype": "i32"}, "not an integer", "value"),
    ("splat", [], {"value": 2**31, "shape": [2], "dtype": "i32"}, "does not fit", "value"),
    ("splat", [], {"value": float("nan"), "shape": [2], "dtype": "i64"}, "not an integer",
     "value"),
    ("splat", [], {"value": 2, "shape": [2], "dtype": "i1"}, "not a boolean", "value"),
    ("iota", [], {"shape": [2, 3], "axis": 2, "dtype": "i64"}, "out of range", "axis"),
    ("iota", [], {"shape": [2], "axis": 0, "dtype": "i1"}, "not i1", "dtype"),
    ("iota", [], {"shape": [129], "axis": 0, "dtype": "i8"}, "128 does not fit", "shape"),
    ("dense", [], {"value": [1, 2.5], "dtype": "i32"}, "not an integer", "value"),
    ("dense", [], {"value": [2**40], "dtype": "i32"}, "does not fit", "value"),
]


@pytest.mark.parametrize(("name", "types", "attrs", "message", "blame"), BAD,
                         ids=[f"{b[0]}-{b[3]}-{'-'.join(b[1])}" for b in BAD])
def test_infer_refuses(name: str, types: list[str], attrs: dict[str, Any], message: str,
                       blame: int | str | None) -> None:
    with pytest.raises(ShapeError, match=message) as info:
        infer(name, types, attrs)
    if isinstance(blame, int):
        assert info.value.operand == blame
    elif isinstance(blame, str):
        assert info.value.attr == blame
    else:
        assert info.value.operand is None and info.value.attr is None


# Cost formulas --------------------------------------------------------------------------------


def cost(name: str, args: list[tuple[tuple[int, ...], int]], out: tuple[tuple[int, ...], int],
         attrs: dict[str, Any] | None = None) -> OpCost:
    return OPS[name].cost.evaluate(args, out, attrs or {})


def test_matmul_cost() -> None:
    assert cost("matmul", [((4, 3), 4), ((3, 5), 4)], ((4, 5), 4)) == OpCost(
        flops=2 * 4 * 5 * 3, bytes=(12 + 15 + 20) * 4)
    assert cost("matmul", [((2, 4, 3), 8), ((2, 3, 5), 8)], ((2, 4, 5), 8)) == OpCost(
        flops=2 * 2 * 4 * 5 * 3, bytes=(24 + 30 + 40) * 8)


def test_elementwise_cost() -> None:
    assert cost("add", [((10,), 4), ((10,), 4)], ((10,), 4)) == OpCost(flops=10, bytes=120)
    assert cost("exp", [((2, 5), 8)], ((2, 5), 8)) == OpCost(flops=100, bytes=160)
    assert cost("eq", [((6,), 4), ((6,), 4)], ((6,), 1)) == OpCost(flops=6, bytes=54)
    assert cost("cast", [((3,), 4)], ((3,), 8), {"to": "i64"}) == OpCost(flops=3, bytes=36)
    assert cost("select", [((4,), 1), ((4,), 4), ((4,), 4)], ((4,), 4)) == OpCost(4, 52)


def test_reduction_cost_counts_input_elements() -> None:
    assert OPS["reduce_sum"].cost.per_input
    assert cost("reduce_sum", [((4, 5), 4)], ((4,), 4), {"axes": (1,)}) == OpCost(20, 96)
    assert cost("reduce_max", [((0, 3), 4)], ((3,), 4), {"axes": (0,)}) == OpCost(0, 12)


def test_movement_and_constant_costs() -> None:
    bcast = cost("broadcast", [((3,), 4)], ((2, 3), 4))
    assert bcast == OpCost(flops=0, bytes=36)
    assert not OPS["broadcast"].cost.materializes
    assert not OPS["transpose"].cost.materializes
    assert OPS["reshape"].cost.materializes and OPS["slice"].cost.materializes
    assert cost("splat", [], ((2, 3), 4)) == OpCost(flops=0, bytes=24)
    assert cost("gather", [((5, 3), 4), ((2,), 4)], ((2, 3), 4)) == OpCost(6, 92)
    assert cost("concat", [((2,), 8), ((3,), 8)], ((5,), 8)) == OpCost(0, 80)


@pytest.mark.parametrize("name", sorted(OPS))
def test_costs_are_finite_and_nonnegative(name: str) -> None:
    op = OPS[name]
    shape = (3, 3) if name == "matmul" else (3,)
    c = op.cost.evaluate([(shape, 4)] * len(op.operands), (shape, 4), {})
    assert 0 <= c.flops < 1e6 and 0 < c.bytes < 1e6
