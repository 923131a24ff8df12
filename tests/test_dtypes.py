"""Every element type has every facet, every op accepts exactly the dtypes it should, and the
semantics of the narrow and unsigned types on hand-checked cases (README's semantics table).

A new DType without a facet (NumPy storage, LLVM types, verifier palettes and weights, egglog
tables, hand-picked edge values, ...) fails ``test_every_dtype_has_every_facet`` by name.
"""

from __future__ import annotations

import math
from typing import Any

import llvmlite.ir as ir
import ml_dtypes
import numpy as np
import pytest
from test_ops_reference import SPECIAL, assert_same, run

from tcp_rules.codegen.irbase import IR, mem_type, reg_type
from tcp_rules.codegen.storage import load_value, store_value
from tcp_rules.egraph.schema import tables
from tcp_rules.egraph.tables_needed import TableNeeds
from tcp_rules.elaborate import parse_type
from tcp_rules.inputs import random_array
from tcp_rules.ops import OPS, ShapeError, identity_value
from tcp_rules.types import (
    ALL_DTYPES,
    FLOATS,
    INTS,
    NUMERIC,
    SIGNED,
    STORAGE_FLOATS,
    UNSIGNED,
    Dim,
    DType,
    TensorType,
)
from tcp_rules.verify.checker import DTYPE_WEIGHTS
from tcp_rules.verify.values import finite_values, full_mantissa, special_values

# Every dtype beyond the first five (a dtype added later is tested here without a change)
NEW = [d for d in DType if d not in (DType.F32, DType.F64, DType.I32, DType.I64, DType.I1)]
INF, NAN = math.inf, math.nan


def missing_dtype_facets(dt: DType) -> list[str]:
    """What ``dt`` lacks, each named."""
    problems = []
    if DType.from_numpy(dt.np_dtype) is not dt:
        problems.append("np_dtype (NumPy storage that maps back)")
    if DType.parse(str(dt)) is not dt or parse_type(f"{dt}[N, 4]") != TensorType.of(dt, ["N", 4]):
        problems.append("text syntax")
    if sum(dt in s for s in (FLOATS, INTS, {DType.I1})) != 1 or dt not in ALL_DTYPES:
        problems.append("dtype sets (exactly one of FLOATS, INTS, i1)")
    if dt.is_int and (dt in SIGNED) == (dt in UNSIGNED):
        problems.append("signedness (exactly one of SIGNED, UNSIGNED)")
    try:
        if reg_type(dt) is None or mem_type(dt) is None:
            raise KeyError(dt)
    except KeyError:
        problems.append("codegen types (irbase reg_type/mem_type)")
    else:
        if not _converts(dt):
            problems.append("codegen conversions between memory and registers (storage.py)")
    if dt not in DTYPE_WEIGHTS:
        problems.append("verifier weight (checker.DTYPE_WEIGHTS)")
    try:
        rng = np.random.default_rng(0)
        for pool in (special_values(dt), finite_values(dt)):
            np.array(pool, dtype=object).astype(dt.np_dtype)
        assert full_mantissa(dt, rng, 4).dtype == dt.np_dtype
    except Exception:
        problems.append("verifier palettes (verify.values)")
    if f'"{dt}"' not in tables(TableNeeds()):
        problems.append("egglog dtype tables (egraph.schema.tables)")
    if dt not in SPECIAL:
        problems.append("hand-picked edge values (test_ops_reference.SPECIAL)")
    if random_array(TensorType.of(dt, [3]), np.random.default_rng(0)).dtype != dt.np_dtype:
        problems.append("random inputs (inputs.random_array)")
    return problems


def _converts(dt: DType) -> bool:
    """storage.load_value and store_value turn the memory form into the register form and back."""
    mod = ir.Module()
    fn = ir.Function(mod, ir.FunctionType(ir.VoidType(), [mem_type(dt)]), "f")
    e = IR(ir.IRBuilder(fn.append_basic_block()))
    reg = load_value(e, fn.args[0], dt)
    return bool(reg.type == reg_type(dt) and store_value(e, reg, dt).type == mem_type(dt))


@pytest.mark.parametrize("dt", list(DType), ids=str)
def test_every_dtype_has_every_facet(dt: DType) -> None:
    missing = missing_dtype_facets(dt)
    assert not missing, f"dtype {dt} is missing: {', '.join(missing)}"


def test_the_facet_check_names_what_is_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delitem(DTYPE_WEIGHTS, DType.U16)
    assert missing_dtype_facets(DType.U16) == ["verifier weight (checker.DTYPE_WEIGHTS)"]


# Which dtypes each op accepts -----------------------------------------------------------------

ALL = frozenset(ALL_DTYPES)
ACCEPTS: dict[str, frozenset[DType]] = {
    **{n: FLOATS for n in ("exp", "log", "sqrt", "rsqrt", "tanh", "sigmoid", "sin", "cos",
                           "atan", "erf", "floor", "ceil", "round", "round_even", "atan2")},
    "pow": FLOATS | SIGNED,  # integer pow wraps; ONNX has no unsigned base
    **{n: NUMERIC for n in ("neg", "abs", "clamp", "add", "sub", "mul", "div", "max", "min",
                            "reduce_sum", "reduce_prod", "reduce_max", "reduce_min", "matmul")},
    **{n: ALL for n in ("eq", "ne", "lt", "le", "gt", "ge", "select", "cast", "broadcast",
                        "transpose", "reshape", "slice", "concat", "gather")},
}
ATTRS: dict[str, dict[str, Any]] = {
    "clamp": {"min": 0}, "cast": {"to": DType.F32}, "reduce_sum": {"axes": (0,), "keepdims": False},
    "reduce_prod": {"axes": (0,), "keepdims": False},
    "reduce_max": {"axes": (0,), "keepdims": False},
    "reduce_min": {"axes": (0,), "keepdims": False},
    "broadcast": {"shape": (Dim.of(2), Dim.of(2)), "dims": (1,)}, "transpose": {"perm": (1, 0)},
    "reshape": {"shape": (Dim.of(4),)},
    "slice": {"start": (0, 0), "size": (Dim.of(1), Dim.of(1)), "stride": (1, 1)},
    "concat": {"axis": 0}, "gather": {"axis": 0},
}


def _accepts(name: str, dt: DType) -> bool:
    op = OPS[name]
    shape = [2] if name == "broadcast" else [2, 2]
    args = [TensorType.of(dt, shape)] * len(op.operands)
    if name == "select":
        args[0] = args[0].with_dtype(DType.I1)
    if name == "gather":
        args[1] = TensorType.of(DType.I32, [3])
    try:
        op.infer(args, ATTRS.get(name, {}))
    except ShapeError as e:
        assert "is not supported here (allowed:" in e.message, e.message  # a clear message
        return False
    return True


@pytest.mark.parametrize("name", sorted(ACCEPTS))
def test_each_op_accepts_exactly_its_dtypes(name: str) -> None:
    got = frozenset(dt for dt in DType if _accepts(name, dt))
    assert got == ACCEPTS[name], f"{name}: accepts {sorted(map(str, got))}"


def test_math_on_integers_is_refused_with_the_allowed_list() -> None:
    with pytest.raises(ShapeError, match=r"dtype u8 is not supported here \(allowed: bf16, f16"):
        OPS["exp"].infer([TensorType.of(DType.U8, [3])], {})


@pytest.mark.parametrize("dt", sorted(INTS, key=str), ids=str)
def test_gather_takes_every_integer_index_type(dt: DType) -> None:
    OPS["gather"].infer([TensorType.of(DType.F16, [4]), TensorType.of(dt, [2])], {"axis": 0})


# Hand-checked semantics ------------------------------------------------------------------------

BF = ml_dtypes.bfloat16


def arr(dt: DType, *v: Any) -> np.ndarray:
    return np.array(v, dtype=object).astype(dt.np_dtype)


CASES: list[tuple[str, list[np.ndarray], dict[str, Any], np.ndarray]] = [
    # unsigned: wrap, divide by zero gives MAX, compare and order as unsigned numbers
    ("neg", [arr(DType.U8, 0, 1, 255)], {}, arr(DType.U8, 0, 255, 1)),
    ("abs", [arr(DType.U16, 0, 65535)], {}, arr(DType.U16, 0, 65535)),
    ("add", [arr(DType.U8, 200, 255), arr(DType.U8, 100, 1)], {}, arr(DType.U8, 44, 0)),
    ("sub", [arr(DType.U32, 0), arr(DType.U32, 1)], {}, arr(DType.U32, 2**32 - 1)),
    ("div", [arr(DType.U8, 7, 255, 9), arr(DType.U8, 0, 2, 10)], {}, arr(DType.U8, 255, 127, 0)),
    ("div", [arr(DType.U64, 2**64 - 1), arr(DType.U64, 2**63)], {}, arr(DType.U64, 1)),
    ("lt", [arr(DType.U8, 255, 1), arr(DType.U8, 1, 255)], {}, np.array([False, True])),
    ("max", [arr(DType.U16, 65535, 3), arr(DType.U16, 1, 4)], {}, arr(DType.U16, 65535, 4)),
    ("reduce_min", [arr(DType.U8)], {"axes": (0,), "keepdims": False}, arr(DType.U8, 255)[0]),
    ("reduce_max", [arr(DType.I8)], {"axes": (0,), "keepdims": False}, arr(DType.I8, -128)[0]),
    # narrow signed: wrap, truncating division, MIN / -1 == MIN
    ("mul", [arr(DType.I8, 16, -128), arr(DType.I8, 8, -1)], {}, arr(DType.I8, -128, -128)),
    ("div", [arr(DType.I16, -7, -32768, 5), arr(DType.I16, 2, -1, 0)], {},
     arr(DType.I16, -3, -32768, -1)),
    ("abs", [arr(DType.I8, -128, -5)], {}, arr(DType.I8, -128, 5)),
    # casts: float -> int truncates and saturates (0..MAX unsigned), NaN -> 0; int -> int wraps
    ("cast", [arr(DType.F32, -1.0, 255.9, 256.0, NAN, -0.5, INF)], {"to": DType.U8},
     arr(DType.U8, 0, 255, 255, 0, 0, 255)),
    ("cast", [arr(DType.F64, 1e30, -1e30, 2.0**64)], {"to": DType.U64},
     arr(DType.U64, 2**64 - 1, 0, 2**64 - 1)),
    ("cast", [arr(DType.F16, -200.0, 200.0, 65504.0)], {"to": DType.I8}, arr(DType.I8, -128, 127,
                                                                            127)),
    ("cast", [arr(DType.I32, 300, -1)], {"to": DType.U8}, arr(DType.U8, 44, 255)),
    ("cast", [arr(DType.U8, 255)], {"to": DType.I32}, arr(DType.I32, 255)),  # zero-extends
    ("cast", [arr(DType.U64, 2**64 - 1)], {"to": DType.F32}, arr(DType.F32, 2.0**64)),
    ("cast", [arr(DType.I8, -1)], {"to": DType.U16}, arr(DType.U16, 65535)),  # sign-extends
    # f16 / bf16: computed in f32, rounded to nearest even once; overflow to inf
    ("add", [arr(DType.F16, 2048.0, 65504.0), arr(DType.F16, 1.0, 16.0)], {},
     arr(DType.F16, 2048.0, INF)),
    ("add", [arr(DType.F16, 2048.0), arr(DType.F16, 3.0)], {}, arr(DType.F16, 2052.0)),
    ("mul", [arr(DType.F16, 2.0**-14), arr(DType.F16, 2.0**-10)], {}, arr(DType.F16, 2.0**-24)),
    ("add", [arr(DType.BF16, 256.0, 1.0), arr(DType.BF16, 1.0, 2.0**-8)], {},
     arr(DType.BF16, 256.0, 1.0)),
    ("add", [arr(DType.BF16, 256.0), arr(DType.BF16, 3.0)], {}, arr(DType.BF16, 260.0)),
    ("exp", [arr(DType.F16, 0.0, 11.0, 12.0)], {}, arr(DType.F16, 1.0, 59872.0, INF)),
    ("sqrt", [arr(DType.BF16, -0.0, 4.0)], {}, arr(DType.BF16, -0.0, 2.0)),
    ("cast", [arr(DType.F32, 65519.0, 65520.0, 1e-8, NAN)], {"to": DType.F16},
     arr(DType.F16, 65504.0, INF, 0.0, NAN)),
    ("cast", [arr(DType.F32, 1.00390625, 1.01171875)], {"to": DType.BF16},  # ties to even
     arr(DType.BF16, 1.0, 1.015625)),
    ("reduce_sum", [arr(DType.F16, 2048.0, 1.0, 1.0)], {"axes": (0,), "keepdims": False},
     arr(DType.F16, 2050.0)[0]),  # summed in f32, then rounded: not 2048 + 1 + 1 in f16
    ("matmul", [np.full((1, 4), 1.0, np.float16), np.full((4, 1), 2049.0, np.float16)], {},
     np.full((1, 1), 8192.0, np.float16)),  # each 2048 (rounded input) times 1, summed in f32
]


@pytest.mark.parametrize(("op", "args", "attrs", "want"), CASES,
                         ids=[f"{c[0]}-{c[1][0].dtype}-{i}" for i, c in enumerate(CASES)])
def test_semantics_on_hand_checked_cases(op: str, args: list[np.ndarray], attrs: dict[str, Any],
                                         want: np.ndarray) -> None:
    assert_same(run(op, args, attrs), np.asarray(want))


def test_identity_values_of_unsigned_types() -> None:
    assert identity_value(-INF, DType.U8) == 0 and identity_value(INF, DType.U64) == 2**64 - 1
    assert identity_value(-0.0, DType.U16) == 0
    assert math.copysign(1.0, identity_value(-0.0, DType.BF16)) == -1.0


def test_storage_floats_and_signedness_sets() -> None:
    assert {DType.F16, DType.BF16} == STORAGE_FLOATS and {d.compute for d in FLOATS} == {
        DType.F32, DType.F64}
    assert {DType.U8, DType.U16, DType.U32, DType.U64} == UNSIGNED
    assert not DType.I1.is_unsigned and not DType.I1.is_int
    assert all(dt in DType for dt in NEW)


# The optimizer keeps every literal of the new types -------------------------------------------

def test_integers_beyond_float64_survive_the_optimizer() -> None:
    """u64 literals above 2**53 have codes of their own in the e-graph: float64 would merge
    2**53 + 1 with 2**53, and 2**64 - 1 with 2**64 - 2."""
    from tcp_rules.diagnostics import Source
    from tcp_rules.egraph.saturate import Limits
    from tcp_rules.elaborate import load_program
    from tcp_rules.interpret import evaluate
    from tcp_rules.optimize import OptOptions, optimize
    from tcp_rules.rules.library import load_standard_library

    text = """func f(x: u64[N], h: f16[N]) -> (u64[N], u64[N], f16[N]) {
      a = add(x, 9007199254740993)
      b = max(add(x, 9007199254740992), 18446744073709551614)
      return a, mul(b, 18446744073709551615), add(mul(h, 0.1), 0.1)
    }"""
    func = load_program(Source("t.tcp", text)).funcs[0]
    options = OptOptions(isolate=False, limits=Limits(iterations=6, nodes=5000, seconds=20))
    result = optimize(func, load_standard_library().rules, options)
    assert result.report.error is None, result.report.error
    x = np.array([0, 1, 2**64 - 1, 2**63], np.uint64)
    h = np.array([1.0, -2.5, 65504.0, np.nan], np.float16)
    for got, want in zip(evaluate(result.func, [x, h]), evaluate(func, [x, h]), strict=True):
        assert_same(got, want)
