"""The formula facet of the op table (tcp_rules/prove): every op has one, and each formula,
evaluated by z3 on concrete inputs, equals the op's NumPy reference bit for bit (NaN matches any
NaN). libm ops are uninterpreted: only the points where their facts fix the value are compared."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest

z3 = pytest.importorskip("z3", reason="the prove extra (z3-solver) is not installed")

from tcp_rules.ops import MATMULS, OPS, OpDef, ShapeError  # noqa: E402
from tcp_rules.prove.domain import Ctx, Unsupported, to_numpy  # noqa: E402
from tcp_rules.prove.formulas import FORMULAS, UNSUPPORTED  # noqa: E402
from tcp_rules.prove.scalars import EVEN, ODD  # noqa: E402
from tcp_rules.prove.tensors import lift  # noqa: E402
from tcp_rules.types import ALL_DTYPES, Dim, DType, TensorType  # noqa: E402
from tcp_rules.verify.cases import exact_mismatch  # noqa: E402
from tcp_rules.verify.values import special_values  # noqa: E402


def test_every_op_has_a_formula_or_a_reason() -> None:
    missing = [name for name in OPS if name not in FORMULAS and name not in UNSUPPORTED]
    assert not missing, f"ops without a formula (tcp_rules/prove/formulas.py): {missing}"
    assert not set(FORMULAS) - set(OPS), "formulas for ops the table does not have"
    assert all(reason for reason in UNSUPPORTED.values())


def _evaluate(op: OpDef, arrays: Sequence[np.ndarray], types: Sequence[TensorType],
              out: TensorType, attrs: dict[str, Any]) -> np.ndarray | None:
    """The formula on concrete arrays; elements the formula leaves open (an uninterpreted
    function applied at an ordinary point) come back as None in an object array."""
    ctx = Ctx("fp")
    sym = [lift(a, t.dtype, ctx) for a, t in zip(arrays, types, strict=True)]
    try:
        res = FORMULAS[op.name](ctx, op.name, sym, types, out, attrs)
    except Unsupported:
        return None
    got = np.empty(res.shape, dtype=object)
    for i, e in np.ndenumerate(res):
        v = z3.simplify(e)
        got[i] = to_numpy(v, out.dtype) if z3.is_const(v) and v.decl().arity() == 0 and (
            z3.is_fp_value(v) or z3.is_bv_value(v) or z3.is_true(v) or z3.is_false(v)) else None
    return got


def _compare(op: OpDef, arrays: Sequence[np.ndarray], attrs: dict[str, Any]) -> int:
    """Compare formula and reference on ``arrays``; the number of elements compared."""
    types = [TensorType.of(DType.from_numpy(a.dtype), a.shape) for a in arrays]  # type: ignore
    full = {**{a.name: a.default for a in op.attrs}, **attrs}
    try:
        out = op.infer(types, full)
    except ShapeError:
        return 0
    with np.errstate(all="ignore"):
        want = np.asarray(op.reference(list(arrays), full, out))
    got = _evaluate(op, arrays, types, out, full)
    if got is None:
        return 0
    known = np.array([g is not None for g in got.ravel()], dtype=bool).reshape(got.shape)
    if not known.any():
        return 0
    filled = np.where(known, got, want).astype(want.dtype)
    bad = exact_mismatch(filled, want)
    assert bad is None, f"{op.name}{attrs} on {[a.tolist() for a in arrays]}: {bad}"
    return int(known.sum())


def _values(dt: DType, rng: np.random.Generator, n: int) -> np.ndarray:
    with np.errstate(all="ignore"):  # f16's specials include f32 values beyond its range
        special = np.array(special_values(dt)).astype(dt.np_dtype)
    if dt is DType.I1:
        return special
    if dt.is_float:
        rand = (rng.standard_normal(n) * 10.0 ** rng.integers(-3, 4, n)).astype(dt.np_dtype)
    else:
        info = np.iinfo(dt.np_dtype)
        rand = rng.integers(info.min, info.max, n, endpoint=True, dtype=dt.np_dtype)
    return np.concatenate([special, rand])


ELEMENTWISE = [op for op in OPS.values() if op.traits.elementwise]


@pytest.mark.parametrize("op", ELEMENTWISE, ids=lambda op: op.name)
def test_elementwise_formula_matches_reference(op: OpDef) -> None:
    rng = np.random.default_rng(len(op.name))
    compared = 0
    for dt in sorted(ALL_DTYPES, key=lambda d: d.value):
        xs = _values(dt, rng, 12)
        arity = len(op.operands)
        if arity == 1:
            args = [xs]
        else:  # every pair of values (a sample of them for the ternary select)
            pairs = np.array(list(itertools.product(range(len(xs)), repeat=2)))
            if len(pairs) > 160:
                pairs = pairs[rng.choice(len(pairs), 160, replace=False)]
            args = [xs[pairs[:, 0]], xs[pairs[:, 1]]]
            if arity == 3:
                args = [rng.integers(0, 2, len(pairs)).astype(bool), *args]
        spaces = ([{"to": d} for d in sorted(ALL_DTYPES, key=lambda d: d.value)]
                  if op.name == "cast" else
                  [{"min": 0}, {"max": 0}, {"min": -1, "max": 1}, {"min": 0.1, "max": 7}]
                  if op.name == "clamp" else [{}])
        for attrs in spaces:
            compared += _compare(op, args, attrs)
    assert compared > 0, f"{op.name}: no element compared"


# The libm facts (special points) checked at exactly those points, in every float dtype.
@pytest.mark.parametrize("name", ["exp", "log", "tanh", "sin", "cos", "atan", "erf", "sigmoid",
                                  "pow", "atan2"])
def test_libm_facts_hold_in_numpy(name: str) -> None:
    op = OPS[name]
    compared = 0
    for dt in (DType.F32, DType.F64, DType.F16, DType.BF16):
        xs = np.array([0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan, -2.0, 0.5]).astype(
            dt.np_dtype)
        if len(op.operands) == 1:
            compared += _compare(op, [xs], {})
        else:
            a, b = np.meshgrid(xs, xs)
            compared += _compare(op, [a.ravel(), b.ravel()], {})
    assert compared > 0


def _symbolic(attrs: dict[str, Any]) -> bool:
    """Does an attribute value hold a symbolic dim (made by ``fresh``)?"""
    items = [x for v in attrs.values() for x in (v if isinstance(v, tuple) else (v,))]
    return any(isinstance(x, Dim) and x.const is None for x in items)


def _types_for(op: OpDef, rng: np.random.Generator) -> list[tuple[list[TensorType], dict]]:
    """Small concrete instances of a non-elementwise op from its attribute space."""
    shapes = [(), (2,), (3,), (2, 3), (1, 2), (2, 2, 3), (3, 1, 2)]
    found = []
    for dt in (DType.F32, DType.I32, DType.F16):
        for shape in shapes:
            ts = [TensorType.of(dt, shape)]
            operand_sets = [ts]
            if op.name in MATMULS:
                if len(shape) == 2:
                    operand_sets = [[ts[0], TensorType.of(dt, (shape[1], 2))]]
                elif len(shape) == 3:
                    operand_sets = [[ts[0], TensorType.of(dt, (shape[0], shape[2], 2))]]
                else:
                    continue
            if op.name == "gather":
                operand_sets = [[ts[0], TensorType.of(DType.I32, (2,))],
                                [ts[0], TensorType.of(DType.U8, (2, 2))]]
            if op.name == "concat":
                operand_sets = [[ts[0], ts[0]], [ts[0], ts[0], ts[0]]]
            for types in operand_sets:
                if op.name in ("splat", "dense"):
                    types = []
                names = iter(Dim.of(f"K{i}") for i in range(100))
                spaces = list(itertools.islice(op.attr_space(types, names.__next__), 12))
                found += [(types, attrs) for attrs in spaces if not _symbolic(attrs)]
    return found


MOVING = [op for op in OPS.values() if not op.traits.elementwise]


@pytest.mark.parametrize("op", MOVING, ids=lambda op: op.name)
def test_tensor_formula_matches_reference(op: OpDef) -> None:
    rng = np.random.default_rng(7)
    compared = 0
    for types, attrs in _types_for(op, rng):
        arrays = []
        for k, t in enumerate(types):
            if op.name == "gather" and k == 1:  # indices, some out of range (clipped)
                arrays.append(rng.integers(-2, 5, t.shape).astype(t.dtype.np_dtype))
            else:
                vals = _values(t.dtype, rng, 8)
                arrays.append(rng.choice(vals, t.shape).astype(t.dtype.np_dtype))
        compared += _compare(op, arrays, attrs)
    assert compared > 0, f"{op.name}: no instance compared"


@pytest.mark.parametrize("name", sorted(ODD | EVEN))
def test_libm_symmetries_hold_in_numpy(name: str) -> None:
    """The formulas take tanh, sin, atan and erf as odd and cos as even, bit for bit."""
    op = OPS[name]
    rng = np.random.default_rng(3)
    for dt in (DType.F32, DType.F64, DType.F16, DType.BF16):
        n = 200_000
        t = TensorType.of(dt, (n,))
        with np.errstate(all="ignore"):  # f16 overflows to inf: a value like any other here
            x = (rng.standard_normal(n) * 10.0 ** rng.integers(-8, 9, n)).astype(dt.np_dtype)
            pos, neg = op.reference([x], {}, t), op.reference([-x], {}, t)
        want = pos if name in EVEN else -pos
        assert exact_mismatch(neg, want) is None, f"{name} in {dt}"
