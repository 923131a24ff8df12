"""The StableHLO importer (tcp_rules/frontends/mlir/stablehlo*.py): JAX functions' StableHLO
(checked in, and lowered afresh when jax is installed) against NumPy and JAX, StableHLO's generic
forms and dynamic dims, dot_general and gather layouts against NumPy (property tests), the CLI.
Malformed and unsupported StableHLO: tests/test_stablehlo_errors.py."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from numerics import assert_within, error_bounds
from stablehlo_models import DATA, MODELS, SYMBOLIC, inputs

from tcp_rules.cli import main
from tcp_rules.diagnostics import Source
from tcp_rules.frontends.mlir import import_mlir, import_text
from tcp_rules.ir import Func
from tcp_rules.optimize import OptOptions
from tcp_rules.pipeline import export_mlir, load_module, optimize_func, run_func
from tcp_rules.printer import print_module
from tcp_rules.rules.library import load_standard_library
from tcp_rules.types import Dim, DType

ENGINES = ("reference", "compiled")


def _check(func: Func, args: Sequence[np.ndarray], want: Sequence[np.ndarray], what: str,
           engines: Sequence[str] = ENGINES) -> None:
    """Each engine within twice the derived error bound (tests/numerics.py) of ``want``, itself
    within the bound of the exact result (JAX's f32 result, or NumPy's in f64)."""
    _, bounds = error_bounds(func, list(args))
    assert len(want) == len(bounds)
    for engine in engines:
        got = run_func(func, list(args), engine)
        for i, (g, w, b) in enumerate(zip(got, want, bounds, strict=True)):
            w = np.asarray(w)
            assert g.shape == w.shape and g.dtype == w.dtype, f"{what} result {i} ({engine})"
            with np.errstate(over="ignore"):  # bounds beside NaN results may overflow
                twice = 2 * b
            assert_within(g, w, twice, f"{what} result {i}: {engine} vs the expected")


def _numpy_want(name: str, args: Sequence[np.ndarray], func: Func) -> list[np.ndarray]:
    wide = [a.astype(np.float64) if a.dtype.kind == "f" else a for a in args]
    out = MODELS[name][0](*wide)
    out = out if isinstance(out, tuple) else (out,)
    return [np.asarray(o).astype(t.dtype.np_dtype) for o, t in zip(out, func.result_types,
                                                                    strict=True)]


# JAX's functions, checked in: no jax needed ----------------------------------------------------

@pytest.mark.parametrize("name", sorted(MODELS))
def test_checked_in_jax_stablehlo_matches_numpy(name: str) -> None:
    imported = import_mlir(DATA / f"{name}.mlir")
    func = imported.module.funcs[0]
    args = inputs(name)
    assert [p.type.shape for p in func.params] == [a.shape for a in args]
    _check(func, args, _numpy_want(name, args, func), name)


@pytest.mark.parametrize("name", ["softmax", "attention", "mlp"])
def test_optimized_import_matches_numpy(name: str) -> None:
    func = import_mlir(DATA / f"{name}.mlir").module.funcs[0]
    args = inputs(name, seed=1)
    want = _numpy_want(name, args, func)
    opt = optimize_func(func, load_standard_library().rules, OptOptions()).func
    _check(opt, args, want, f"{name} optimized", engines=("compiled",))


def test_mlp_call_is_inlined_and_constants_are_literals() -> None:
    text = (DATA / "mlp.mlir").read_text()
    assert "call @relu" in text and "func.func private @relu" in text
    func = import_mlir(DATA / "mlp.mlir").module.funcs[0]
    from tcp_rules.printer import print_func

    printed = print_func(func)
    # relu's broadcast 0.0 is a scalar literal, not a broadcast of a constant tensor
    assert "max(" in printed and "0.0" in printed and "splat" not in printed
    assert "matmul(arg0, arg1)" in printed


@pytest.mark.parametrize("path", sorted(DATA.glob("*.mlir")), ids=lambda p: p.stem)
def test_import_golden_and_round_trips(path: Path, golden: Callable[[str, str], None]) -> None:
    """The imported program (a golden, read like code when it changes) prints as a .tcp program
    that parses back the same, and goes out as tcp MLIR (--emit mlir) and back the same."""
    module = import_mlir(path).module
    text = print_module(module)
    golden(f"stablehlo/{path.stem}.tcp", text)
    assert print_module(load_module(Source(f"{path.stem}.tcp", text))) == text
    (func,) = module.funcs
    again = import_text(Source(f"{path.stem}.out.mlir", export_mlir(func))).module
    assert print_module(again) == text


# JAX's functions lowered afresh (jax installed) ------------------------------------------------

@pytest.fixture(scope="module")
def lowered(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Every model lowered by JAX in a child process (see stablehlo_models.lower_all)."""
    if importlib.util.find_spec("jax") is None:
        pytest.skip("jax is not installed (the dev extra has it)")
    out = tmp_path_factory.mktemp("jax")
    subprocess.run([sys.executable, str(Path(__file__).parent / "stablehlo_models.py"),
                    "--lower", str(out), "2"], check=True, timeout=300)
    return out


@pytest.mark.parametrize("name", sorted(MODELS))
def test_jax_lowering_imports_and_matches_jax(name: str, lowered: Path) -> None:
    func = import_mlir(lowered / f"{name}.mlir").module.funcs[0]
    results = np.load(lowered / f"{name}.npz")
    want = [results[f"result{i}"] for i in range(len(results.files))]
    _check(func, inputs(name, seed=2), want, f"{name} vs JAX")


# generic forms, dynamic dims ---------------------------------------------------------------

def test_generic_forms_and_dynamic_dims() -> None:
    func = import_mlir(DATA / "generic.mlir").module.funcs[0]
    assert func.params[0].type.dims == (Dim.of("arg0_d0"), Dim.of(8))
    rng = np.random.default_rng(4)
    for rows in (1, 5):
        x = rng.standard_normal((rows, 8)).astype(np.float32)
        w = rng.standard_normal((8, 3)).astype(np.float32)
        k = np.array([2, -1, 3], np.int32)
        x64, w64 = x.astype(np.float64), w.astype(np.float64)
        row = (x64.sum(1) + 10) - np.maximum(x64.max(1), 0)
        mm = (row[:, None] * x64) @ w64
        t = mm.T
        cat = np.concatenate([np.broadcast_to(t[0:3:2, 0:1], (2, 8)),
                              np.broadcast_to(np.arange(8.0), (2, 8))], axis=1)
        y = (w64 @ k.astype(np.float64)) @ w64
        want = [a.astype(np.float32) for a in (mm, row, t, cat, y)]
        _check(func, [x, w, k], want, f"generic, {rows} rows")


@pytest.mark.parametrize("name", sorted(SYMBOLIC))
def test_jax_shape_polymorphic_lowering_has_a_symbolic_batch(name: str) -> None:
    """JAX's dim argument b (``{jax.global_constant = "b"}``) and its shape tensors read as
    the dim b: one program for every batch size."""
    func = import_mlir(DATA / f"{name}_symbolic.mlir").module.funcs[0]
    dim_arg, *params = func.params
    assert dim_arg.type.rank == 0 and dim_arg.type.dtype is DType.I32
    assert params[0].type.dims[0] == Dim.of("b") and func.result_types[0].dims[0] == Dim.of("b")
    rng = np.random.default_rng(5)
    for batch in (1, 6):
        args = [rng.standard_normal((batch, *a.shape[1:]) if i == 0 else a.shape)
                .astype(np.float32) for i, a in enumerate(inputs(name))]
        want = _numpy_want(name, args, func)
        _check(func, [np.array(batch, np.int32), *args], want, f"{name}, batch {batch}")


# every elementwise op of the table, against NumPy ----------------------------------------------

_UNARY_NP = {"negate": np.negative, "abs": np.abs, "exponential": np.exp, "log": np.log,
             "sqrt": np.sqrt, "rsqrt": lambda x: 1 / np.sqrt(x), "tanh": np.tanh,
             "logistic": lambda x: 1 / (1 + np.exp(-x)), "sine": np.sin, "cosine": np.cos,
             "floor": np.floor, "ceil": np.ceil, "round_nearest_even": np.round,
             "round_nearest_afz": lambda x: np.sign(x) * np.floor(np.abs(x) + 0.5)}
_BINARY_NP = {"add": np.add, "subtract": np.subtract, "multiply": np.multiply,
              "divide": np.divide, "maximum": np.maximum, "minimum": np.minimum,
              "power": np.power, "atan2": np.arctan2}
_POSITIVE = {"log", "sqrt", "rsqrt", "power"}


def test_every_elementwise_op_has_a_numpy_check() -> None:
    from tcp_rules.frontends.mlir.stablehlo import BINARY, UNARY

    assert set(UNARY) == set(_UNARY_NP) and set(BINARY) == set(_BINARY_NP)


@pytest.mark.parametrize("name", sorted(_UNARY_NP) + sorted(_BINARY_NP))
def test_elementwise_op_matches_numpy(name: str) -> None:
    binary = name in _BINARY_NP
    t = "tensor<3x5xf32>"
    args = "%a, %b" if binary else "%a"
    text = (f"func.func @main(%a: {t}, %b: {t}) -> {t} {{\n"
            f"  %0 = stablehlo.{name} {args} : {t}\n  return %0 : {t}\n}}\n")
    func = import_text(Source(f"{name}.mlir", text)).module.funcs[0]
    rng = np.random.default_rng(6)
    a, b = (rng.uniform(-3, 3, (3, 5)).astype(np.float32) for _ in range(2))
    a[0, :3] = [0.5, -1.5, 2.5]  # rounding ties
    if name in _POSITIVE:
        a = np.abs(a) + 0.1
    fn = _BINARY_NP[name] if binary else _UNARY_NP[name]
    wide = [a.astype(np.float64), b.astype(np.float64)]
    want = (fn(*wide) if binary else fn(wide[0])).astype(np.float32)
    _check(func, [a, b], [want], name)


def test_compare_select_clamp_sign_logic_convert() -> None:
    t, i = "tensor<2x6xf32>", "tensor<2x6xi1>"
    lines = [f"%{d.lower()} = stablehlo.compare {d}, %a, %b, FLOAT : ({t}, {t}) -> {i}"
             for d in ("EQ", "NE", "LT", "LE", "GT", "GE")]
    lines += [f"%sel = stablehlo.select %lt, %a, %b : {i}, {t}",
              "%lo = stablehlo.constant dense<-1.000000e+00> : tensor<f32>",
              "%hi = stablehlo.constant dense<1.000000e+00> : tensor<f32>",
              f"%cl = stablehlo.clamp %lo, %a, %hi : (tensor<f32>, {t}, tensor<f32>) -> {t}",
              f"%sg = stablehlo.sign %a : {t}",
              f"%and = stablehlo.and %lt, %ne : {i}", f"%or = stablehlo.or %eq, %gt : {i}",
              f"%not = stablehlo.not %le : {i}",
              f"%ai = stablehlo.convert %a : ({t}) -> tensor<2x6xi32>",
              "%m = stablehlo.constant dense<-1> : tensor<2x6xi32>",
              "%uc = stablehlo.compare LT, %ai, %m, UNSIGNED : (tensor<2x6xi32>, "
              "tensor<2x6xi32>) -> tensor<2x6xi1>"]
    names = ["eq", "ne", "lt", "le", "gt", "ge", "sel", "cl", "sg", "and", "or", "not", "ai", "uc"]
    types = [i] * 6 + [t] * 3 + [i] * 3 + ["tensor<2x6xi32>", i]
    text = (f"func.func @main(%a: {t}, %b: {t}) -> ({', '.join(types)}) {{\n  "
            + "\n  ".join(lines) + f"\n  return {', '.join('%' + n for n in names)} : "
            f"{', '.join(types)}\n}}\n")
    func = import_text(Source("logic.mlir", text)).module.funcs[0]
    a = np.array([[-2.5, -1, -0.0, 0, 0.5, np.nan], [3, 1, 2, -7.5, 0.25, 1]], np.float32)
    b = np.array([[-2.5, 0, 0.0, 1, 0.5, 1], [np.nan, 1, -2, -7.5, 4, 0]], np.float32)
    ai = np.trunc(np.nan_to_num(a)).astype(np.int32)
    want = [a == b, a != b, a < b, a <= b, a > b, a >= b, np.where(a < b, a, b),
            np.clip(a, -1, 1), np.where(a > 0, 1, np.where(a < 0, -1, a)).astype(np.float32),
            (a < b) & (a != b), (a == b) | (a > b), ~(a <= b), ai,
            ai.astype(np.uint32) < np.uint32(0xFFFFFFFF)]
    for engine in ENGINES:
        got = run_func(func, [a, b], engine)
        for n, g, w in zip(names, got, want, strict=True):
            np.testing.assert_array_equal(g, w, err_msg=f"{n} ({engine})")


def test_a_file_mixes_stablehlo_and_tcp_ops() -> None:
    text = """func.func @main(%a: tensor<?x4xf32>, %b: tensor<?x4xf32>) -> tensor<?x4xf32> {
  %0 = stablehlo.add %a, %b : tensor<?x4xf32>
  %1 = tcp.tanh %0 : tensor<?x4xf32> -> tensor<?x4xf32>
  %2 = "stablehlo.multiply"(%1, %a) : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
  return %2 : tensor<?x4xf32>
}
"""
    func = import_text(Source("mixed.mlir", text)).module.funcs[0]
    a, b = (np.random.default_rng(7).standard_normal((3, 4)).astype(np.float32)
            for _ in range(2))
    want = (np.tanh(a.astype(np.float64) + b) * a).astype(np.float32)
    _check(func, [a, b], [want], "mixed dialects")


def test_dynamic_reshape_to_a_shape_of_dim_arguments() -> None:
    func = import_mlir(DATA / "dynamic_reshape.mlir").module.funcs[0]
    assert func.result_types[0].dims == (Dim.of("b"), Dim.of(2), Dim.of(2))
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    (got,) = run_func(func, [np.array(3, np.int32), x], "compiled")
    np.testing.assert_array_equal(got, x.reshape(3, 2, 2))


# dot_general and gather layouts, against NumPy ----------------------------------------------

@st.composite
def _dot_cases(draw: st.DrawFn) -> tuple[str, str, dict[str, int]]:
    """A dot_general in matmul shape: roles b (batch), m, n (free), k (contracted), each side's
    axes in a random order; some sides without a free axis."""
    batched = draw(st.booleans())
    lhs = ["k"] + (["b"] if batched else []) + (["m"] if draw(st.booleans()) else [])
    rhs = ["k"] + (["b"] if batched else []) + (["n"] if draw(st.booleans()) else [])
    lhs, rhs = draw(st.permutations(lhs)), draw(st.permutations(rhs))
    sizes = {r: draw(st.integers(1, 4)) for r in "bmnk"}
    return "".join(lhs), "".join(rhs), sizes


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_dot_cases())
def test_dot_general_layouts_match_einsum(case: tuple[str, str, dict[str, int]]) -> None:
    lhs, rhs, sizes = case
    out = "".join(r for r in "bmn" if r in lhs + rhs)

    def ty(axes: str) -> str:
        return "tensor<" + "".join(f"{sizes[a]}x" for a in axes) + "f32>"
    dims = f"contracting_dims = [{lhs.index('k')}] x [{rhs.index('k')}]"
    if "b" in lhs:
        dims = f"batching_dims = [{lhs.index('b')}] x [{rhs.index('b')}], " + dims
    text = (f"func.func @main(%a: {ty(lhs)}, %b: {ty(rhs)}) -> {ty(out)} {{\n"
            f"  %0 = stablehlo.dot_general %a, %b, {dims} : ({ty(lhs)}, {ty(rhs)}) -> {ty(out)}\n"
            f"  return %0 : {ty(out)}\n}}\n")
    func = import_text(Source("dot.mlir", text)).module.funcs[0]
    rng = np.random.default_rng(len(text))
    a = rng.standard_normal([sizes[r] for r in lhs]).astype(np.float32)
    b = rng.standard_normal([sizes[r] for r in rhs]).astype(np.float32)
    want = np.einsum(f"{lhs},{rhs}->{out}", a.astype(np.float64), b.astype(np.float64))
    _check(func, [a, b], [want.astype(np.float32)], text, engines=("reference",))


@st.composite
def _gather_cases(draw: st.DrawFn) -> tuple[tuple[int, ...], int, tuple[int, ...], list[int]]:
    shape = tuple(draw(st.lists(st.integers(1, 4), min_size=1, max_size=3)))
    axis = draw(st.integers(0, len(shape) - 1))
    batch = tuple(draw(st.lists(st.integers(1, 3), max_size=2)))
    rank = len(shape) - 1 + len(batch)
    offset = sorted(draw(st.permutations(range(rank)))[:len(shape) - 1])
    return shape, axis, batch, offset


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_gather_cases())
def test_gather_layouts_match_numpy(case: tuple[tuple[int, ...], int, tuple[int, ...],
                                                 list[int]]) -> None:
    """A take along ``axis`` with indices of shape ``batch`` (+ the index vector dim of 1),
    the operand's other axes at ``offset_dims`` of the result, StableHLO's batch axes at the
    rest, in order; indices out of range clamp."""
    shape, axis, batch, offset = case
    rank = len(shape) - 1 + len(batch)
    rest = iter([s for i, s in enumerate(shape) if i != axis])
    bat = iter(batch)
    out = [next(rest) if p in offset else next(bat) for p in range(rank)]

    def ty(dims: Sequence[int], el: str = "f32") -> str:
        return "tensor<" + "".join(f"{d}x" for d in dims) + f"{el}>"
    sizes = ", ".join(str(1 if i == axis else s) for i, s in enumerate(shape))
    dn = (f"#stablehlo.gather<offset_dims = [{', '.join(map(str, offset))}], "
          f"collapsed_slice_dims = [{axis}], start_index_map = [{axis}], "
          f"index_vector_dim = {len(batch)}>")
    idx_t = ty((*batch, 1), "i32")
    text = (f"func.func @main(%x: {ty(shape)}, %i: {idx_t}) -> {ty(out)} {{\n"
            f'  %0 = "stablehlo.gather"(%x, %i) <{{dimension_numbers = {dn}, '
            f"slice_sizes = array<i64: {sizes}>}}> : ({ty(shape)}, {idx_t}) -> {ty(out)}\n"
            f"  return %0 : {ty(out)}\n}}\n")
    func = import_text(Source("gather.mlir", text)).module.funcs[0]
    rng = np.random.default_rng(len(text))
    x = rng.standard_normal(shape).astype(np.float32)
    i = rng.integers(-2, shape[axis] + 2, (*batch, 1)).astype(np.int32)
    taken = np.take(x, np.clip(i[..., 0], 0, shape[axis] - 1), axis=axis)
    # numpy.take puts the batch axes at `axis`; StableHLO puts the operand's axes at offset
    ours = [("o", k) for k in range(axis)] + [("b", j) for j in range(len(batch))] \
        + [("o", k) for k in range(axis, len(shape) - 1)]
    bj = iter(range(len(batch)))
    theirs = [("o", offset.index(p)) if p in offset else ("b", next(bj)) for p in range(rank)]
    want = np.transpose(taken, [ours.index(t) for t in theirs])
    (got,) = run_func(func, [x, i], "reference")
    np.testing.assert_array_equal(got, want)


# the CLI -----------------------------------------------------------------------------------

def test_cli_import_opt_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = DATA / "softmax.mlir"
    assert main(["import", str(path)]) == 0
    out = capsys.readouterr().out
    assert "func main(arg0: f32[4, 16]) -> f32[4, 16]" in out and "reduce_max" in out
    assert main(["opt", str(path), "--emit", "program"]) == 0
    assert "exp(" in capsys.readouterr().out
    (x,) = inputs("softmax")
    np.savez(tmp_path / "in.npz", arg0=x)
    assert main(["run", str(path), "--inputs", str(tmp_path / "in.npz"), "--out",
                 str(tmp_path / "out.npz")]) == 0
    got = np.load(tmp_path / "out.npz")["result0"]
    func = import_mlir(path).module.funcs[0]
    _, (bound,) = error_bounds(func, [x])
    want = MODELS["softmax"][0](x.astype(np.float64)).astype(np.float32)
    assert_within(got, want, 2 * bound, "tcpr run softmax.mlir")
