"""The MLIR tcp dialect frontend: hand-written tcp MLIR per op family runs and matches NumPy,
``--emit mlir`` reads back as the same program (every bundled example, unoptimized and
optimized), fused kernels export as tcp.isolated_group, and malformed MLIR gets positioned
errors through the CLI (exit status 1, no traceback)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from codegen.support import fuse_everything
from hypothesis import given, settings
from hypothesis import strategies as st
from numerics import assert_within, error_bounds
from test_codegen_structure import programs as structure_programs
from test_differential import DIALECTS
from test_differential import programs as differential_programs

from tcp_rules.cli import main
from tcp_rules.diagnostics import Source
from tcp_rules.frontends.mlir import import_mlir, import_text
from tcp_rules.frontends.mlir.export import export_func, export_module
from tcp_rules.inputs import random_inputs
from tcp_rules.ir import Func, same_func, same_module
from tcp_rules.optimize import OptOptions
from tcp_rules.pipeline import load_module, load_module_file, optimize_func, run_func
from tcp_rules.rules.library import load_standard_library

DATA = Path(__file__).parent / "data" / "mlir"
EXAMPLES = sorted((Path(__file__).parent.parent / "tcp_rules" / "data" / "examples").glob("*.tcp"))
N = 6  # the size of every dynamic dim


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return (1 / (1 + np.exp(-x.astype(np.float64)))).astype(x.dtype)


def _round_away(x: np.ndarray) -> np.ndarray:
    return (np.sign(x) * np.floor(np.abs(x) + np.float32(0.5))).astype(x.dtype)


def _softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


# func name -> (inputs from the random ones, NumPy's results)
NUMPY: dict[str, Callable[..., tuple[np.ndarray, ...]]] = {
    "unary": lambda x: (np.tanh(x), _sigmoid(x), np.abs(x), np.sqrt(np.abs(x)),
                        np.log(np.abs(x)), np.ceil(x), np.floor(x), _round_away(x),
                        np.round(x), np.sin(x), np.cos(x), -x, np.arctan(x)),
    "binary_f32": lambda a, b: (a + b, a - b, a * b, a / b, np.arctan2(a, b),
                                np.clip(a, np.float32(-0.5), np.float32(0.5))),
    "binary_i32": lambda a, b: (a * b, (np.sign(a) * np.sign(b) * (np.abs(a) // np.abs(b)))
                                .astype(np.int32), np.clip(a, -3, 4).astype(np.int32)),
    "movement": lambda x, y, v, i: (x * y, (x * y)[:, 1:6:2], (x * y).astype(np.int32),
                                    v[i], np.float32([[1.5, 2.5, 3.5], [4.5, 5.5, 6.5]])),
    "groups": lambda a, b: (_sigmoid(np.tanh(a + b) * b),),
    "softmax_matmul": lambda x, w: (_softmax(x), _softmax(x) @ w, (_softmax(x) @ w).T,
                                    _softmax(x) > x.max(axis=1, keepdims=True)),
}


def _inputs(func: Func) -> list[np.ndarray]:
    arrays = random_inputs(func, default_size=N, seed=3)
    if func.name == "binary_i32":  # nonzero divisors, signs of both kinds
        arrays = [np.array([7, -7, 9, -9, 0, 5, -1], np.int32),
                  np.array([2, 2, -4, -4, 3, 1, 5], np.int32)]
    if func.name == "movement":
        arrays[3] = np.array([0, 9, 3, 3], np.int64)  # in range: numpy.take would raise
        arrays[0] = arrays[0] * 3  # values beyond one, so the cast to i32 is not all zeros
    return arrays


@pytest.mark.parametrize("name", ["tcp_unary", "tcp_binary", "tcp_movement", "tcp_groups",
                                  "tcpr_ops"])
def test_op_family_runs_and_matches_numpy(name: str) -> None:
    module = import_mlir(DATA / f"{name}.mlir").module
    for func in module.funcs:
        arrays = _inputs(func)
        got = run_func(func, arrays, "compiled")
        with np.errstate(all="ignore"):
            want = NUMPY[func.name](*arrays)
        _, bounds = error_bounds(func, arrays)
        assert len(got) == len(want)
        for i, (g, w, e) in enumerate(zip(got, want, bounds, strict=True)):
            w = np.asarray(w)
            assert_within(g, w.astype(g.dtype), 2 * e, f"{func.name} result {i}")


def test_isolated_group_is_a_fused_kernel_and_group_is_inlined() -> None:
    (func,) = import_mlir(DATA / "tcp_groups.mlir").module.funcs
    ops = [v.op.name for v in func.ops()]
    assert ops.count("kernel") == 1 and ops.count("load") == 2
    assert "tanh" in ops and "add" in ops  # tcp.group's body, inlined


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_examples_round_trip_through_mlir(path: Path) -> None:
    """Every bundled example, as written and as optimized (kernels and all), exports to MLIR
    that reads back as the same program."""
    module = load_module_file(path)
    assert same_module(module, import_text(Source("x.mlir", export_module(module))).module)
    lib = load_standard_library()
    for func in module.funcs:
        optimized = optimize_func(func, lib.rules, OptOptions()).func
        text = export_func(optimized)
        back = import_text(Source("x.mlir", text)).module.funcs[0]
        assert same_func(optimized, back), text
        if any(v.op.name == "kernel" for v in optimized.ops()):
            assert "tcp.isolated_group" in text


def test_hand_written_files_round_trip() -> None:
    for path in sorted(DATA.glob("tcp*.mlir")):
        module = import_mlir(path).module
        back = import_text(Source("x.mlir", export_module(module))).module
        assert same_module(module, back), path


def test_symbolic_shapes_name_dims_and_dims_unify() -> None:
    text = """
    func.func @f(%a: tensor<?x4xf32>, %b: tensor<?x4xf32>) -> tensor<?x4xf32> {
      %s = tcp.symbolic_int "batch" {min_val = 1, max_val = 64} : i64
      tcp.bind_symbolic_shape %b, [%s], affine_map<()[s0] -> (s0, 4)> : tensor<?x4xf32>
      %0 = tcp.add %a, %b : tensor<?x4xf32>, tensor<?x4xf32> -> tensor<?x4xf32>
      return %0 : tensor<?x4xf32>
    }"""
    (func,) = import_text(Source("t.mlir", text)).module.funcs
    assert [str(p.type) for p in func.params] == ["f32[batch, 4]", "f32[batch, 4]"]
    (renamed,) = import_text(Source("t.mlir", text), {"batch": "B"}).module.funcs
    assert str(renamed.params[0].type) == "f32[B, 4]"
    (sized,) = import_text(Source("t.mlir", text), {"batch": 2}).module.funcs
    assert str(sized.params[1].type) == "f32[2, 4]"


def tcpr(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_import_opt_emit_mlir(capsys: pytest.CaptureFixture[str],
                                  golden: Callable[[str, str], None]) -> None:
    path = str(DATA / "tcp_groups.mlir")
    code, out, _ = tcpr(capsys, "import", path)
    assert code == 0 and "kernel(" in out
    code, out, _ = tcpr(capsys, "opt", path, "--emit", "mlir")
    assert code == 0 and "tcp.isolated_group" in out
    golden("mlir/tcp_groups.opt.mlir", out)
    code, out, _ = tcpr(capsys, "check", path)
    assert code == 0
    # docs/frontends/mlir.md's worked example
    code, out, _ = tcpr(capsys, "opt", str(DATA / "tcp_layer.mlir"), "--emit", "mlir")
    assert code == 0
    golden("mlir/tcp_layer.opt.mlir", out)


BAD = {  # file name -> (text, where the error points, what it says)
    "unknown_op.mlir": ("func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {\n"
                        "  %0 = tcp.frobnicate %a : tensor<4xf32> -> tensor<4xf32>\n"
                        "  return %0 : tensor<4xf32>\n}\n",
                        "2:8", "unknown op 'tcp.frobnicate'"),
    "other_dialect.mlir": ("func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {\n"
                           "  %0 = torch.aten.relu %a : tensor<4xf32> -> tensor<4xf32>\n"
                           "  return %0 : tensor<4xf32>\n}\n",
                           "2:8", "unknown op 'torch.aten.relu'"),
    "bad_type.mlir": ("func.func @f(%a: tensor<4xq7>) -> tensor<4xf32> {\n"
                      "  return %a : tensor<4xf32>\n}\n",
                      "1:27", "element type q7 is not supported"),
    "bad_shape.mlir": ("func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {\n"
                       "  %0 = tcp.tanh %a : tensor<4xf32> -> tensor<5xf32>\n"
                       "  return %0 : tensor<4xf32>\n}\n",
                       "2:39", "tcp.tanh: the result is f32[4], but the op declares "
                       "tensor<5xf32>"),
    "unterminated.mlir": ("func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {\n"
                          "  %0 = tcp.tanh %a : tensor<4xf32> -> tensor<4xf32>\n",
                          "2:52", "syntax error: unexpected end of file"),
    "custom.mlir": ("func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {\n"
                    '  %0 = tcp.custom_op("torch.aten.foo") %a : tensor<4xf32> -> tensor<4xf32>\n'
                    "  return %0 : tensor<4xf32>\n}\n",
                    "2:8", 'tcp.custom_op ("torch.aten.foo") is not supported'),
    "ragged.mlir": ("func.func @f() -> tensor<2xi8> {\n"
                    "  %0 = tcp.const {value = dense<[[1, 2], [3]]> : tensor<2xi8>} : "
                    "tensor<2xi8>\n  return %0 : tensor<2xi8>\n}\n",
                    "2:27", "dense literal dense<[[1, 2], [3]]> is not a rectangular array"),
    "undefined.mlir": ("func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {\n"
                       "  return %b : tensor<4xf32>\n}\n",
                       "2:10", "use of undefined value %b"),
}


@pytest.mark.parametrize("command", ["import", "opt", "check", "run"])
@pytest.mark.parametrize("name", sorted(BAD))
def test_malformed_mlir_gets_positioned_errors(name: str, command: str, tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    text, where, message = BAD[name]
    (tmp_path / name).write_text(text)
    extra = ["--random"] if command == "run" else []
    code, out, err = tcpr(capsys, command, str(tmp_path / name), *extra)
    assert code == 1, out + err
    assert "Traceback" not in out + err
    first = err.splitlines()[0]
    assert first.startswith(f"{tmp_path / name}:{where}: error: {message}"), err
    assert "^" in err  # the source line and a caret under the span


def test_every_op_round_trips_through_mlir() -> None:
    """Completeness: all_ops.tcp uses every op of the table, and reads back the same."""
    from tcp_rules.ops import OPS

    module = load_module_file(DATA / "all_ops.tcp")
    used = {v.op.name for f in module.funcs for v in f.ops()}
    assert set(OPS) - used == set(), "add the new ops to tests/data/mlir/all_ops.tcp"
    text = export_module(module)
    assert same_module(module, import_text(Source("x.mlir", text)).module), text


def test_isolated_group_that_cannot_be_one_kernel_is_inlined() -> None:
    """A dense constant is data in memory, which a kernel body cannot hold: the group's ops
    are read as plain ops."""
    text = """
    func.func @f(%a: tensor<2xf32>) -> tensor<2xf32> {
      %0 = tcp.isolated_group %a {
      ^bb0(%x: tensor<2xf32>):
        %c = tcp.const {value = dense<[1.0, 2.0]> : tensor<2xf32>} : tensor<2xf32>
        %1 = tcp.add %x, %c : tensor<2xf32>, tensor<2xf32> -> tensor<2xf32>
        tcp.yield %1 : tensor<2xf32>
      } : tensor<2xf32> -> tensor<2xf32>
      return %0 : tensor<2xf32>
    }"""
    (func,) = import_text(Source("t.mlir", text)).module.funcs
    assert sorted(v.op.name for v in func.ops()) == ["add", "dense"]


def test_index_arguments_are_dims_given_by_dim(tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "bcast.mlir"
    path.write_text(
        "func.func @b(%arg0 : tensor<1x?xf32>, %arg1 : index) -> tensor<?x?xf32> {\n"
        "  %0 = tcp.broadcast %arg0, %arg1 {axes = [0]} : tensor<1x?xf32>, index -> "
        "tensor<?x?xf32>\n  return %0 : tensor<?x?xf32>\n}\n")
    code, _, err = tcpr(capsys, "import", str(path))
    assert code == 1 and "result dim arg1 is not a dim of any tensor argument" in err
    assert "--dim arg1=N" in err
    code, out, _ = tcpr(capsys, "import", str(path), "--dim", "arg1=5")
    assert code == 0 and "-> f32[5, arg0_d1]" in out


@settings(max_examples=40, deadline=None)
@given(text=st.one_of(differential_programs(DIALECTS["f32"]),
                      differential_programs(DIALECTS["i32"])))
def test_random_programs_round_trip_through_mlir(text: str) -> None:
    """Programs with ±inf, NaN, -0.0 and integer extremes as literals and clamp bounds read
    back from their MLIR the same, bit for bit in every constant."""
    func = load_module(Source("r.tcp", text)).funcs[0]
    back = import_text(Source("r.mlir", export_func(func))).module.funcs[0]
    assert same_func(func, back), export_func(func)


@settings(max_examples=30, deadline=None)
@given(func=structure_programs())
def test_random_fused_programs_round_trip_through_mlir(func: Func) -> None:
    """Every op in kernels (fuse_everything): one isolated group per kernel, read back as the
    same kernels."""
    fused = fuse_everything(func)
    text = export_func(fused)
    assert same_func(fused, import_text(Source("r.mlir", text)).module.funcs[0]), text


def test_legacy_tcp_concat_and_tensor_concat() -> None:
    """mlir-tcp's tcp.concat (removed in its #50 for tensor.concat) and tensor.concat, which
    is also how concat is written."""
    text = """
    func.func @c(%a: tensor<?x3xf32>, %b: tensor<?x3xf32>)
        -> (tensor<?x6xf32>, tensor<?x3xf32>) {
      %0 = tcp.concat %a, %b attributes {axis = 1 : i64} :
             tensor<?x3xf32>, tensor<?x3xf32> -> tensor<?x6xf32>
      %1 = tensor.concat dim(0) %a, %b : (tensor<?x3xf32>, tensor<?x3xf32>) -> tensor<?x3xf32>
      return %0, %1 : tensor<?x6xf32>, tensor<?x3xf32>
    }"""
    (func,) = import_text(Source("t.mlir", text)).module.funcs
    # the first concat unifies b_d0 with a_d0
    assert [str(t) for t in func.result_types] == ["f32[a_d0, 6]", "f32[2*a_d0, 3]"]
    assert "tensor.concat dim(1) %a, %b" in export_func(func)


def test_expand_and_collapse_shape_are_reshapes() -> None:
    text = """
    func.func @r(%a: tensor<?x4xf32>) -> (tensor<?x2x2xf32>, tensor<?xf32>) {
      %c0 = arith.constant 0 : index
      %n = tensor.dim %a, %c0 : tensor<?x4xf32>
      %0 = tensor.expand_shape %a [[0], [1, 2]] output_shape [%n, 2, 2]
             : tensor<?x4xf32> into tensor<?x2x2xf32>
      %1 = tensor.collapse_shape %a [[0, 1]] : tensor<?x4xf32> into tensor<?xf32>
      return %0, %1 : tensor<?x2x2xf32>, tensor<?xf32>
    }"""
    (func,) = import_text(Source("t.mlir", text)).module.funcs
    assert [str(t) for t in func.result_types] == ["f32[a_d0, 2, 2]", "f32[4*a_d0]"]
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    got = run_func(func, [x], "reference")
    np.testing.assert_array_equal(got[0], x.reshape(3, 2, 2))
    np.testing.assert_array_equal(got[1], x.reshape(12))


def test_every_function_error_is_reported_at_once(tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "two.mlir"
    path.write_text(
        "func.func @a(%x: tensor<4xf32>) -> tensor<4xf32> {\n"
        "  %0 = tcp.exp %x : tensor<4xf32> -> tensor<4xf32>\n  return %0 : tensor<4xf32>\n}\n"
        "func.func @b(%x: tensor<4xf32>) -> tensor<4xf32> {\n"
        "  %0 = tcp.tanh %x : tensor<4xf32> -> tensor<5xf32>\n  return %0 : tensor<4xf32>\n}\n")
    code, _, err = tcpr(capsys, "check", str(path))
    lines = [x for x in err.splitlines() if ": error: " in x]
    assert code == 1 and [x.split(": error: ")[0] for x in lines] == [f"{path}:2:8",
                                                                       f"{path}:6:39"], err


def test_multiples_of_symbols_round_trip() -> None:
    """f32[2*N]: bound by an affine map (s0 * 2), N read back as tensor.dim / 2."""
    module = load_module_file(DATA / "composite_dims.tcp")
    text = export_module(module)
    assert "affine_map<()[s0] -> (s0 * 2)>" in text and "arith.divui" in text
    assert same_module(module, import_text(Source("x.mlir", text)).module), text


def test_affine_symbolic_shapes() -> None:
    text = """
    func.func @f(%a: tensor<?x?xf32>) -> tensor<?x?xf32> {
      %s = tcp.symbolic_int "s" {min_val = 1, max_val = 64} : i64
      tcp.bind_symbolic_shape %a, [%s], affine_map<()[s0] -> (s0 * 3, s0 + 1)> : tensor<?x?xf32>
      return %a : tensor<?x?xf32>
    }"""
    (func,) = import_text(Source("t.mlir", text)).module.funcs
    assert str(func.params[0].type) == "f32[3*s, s + 1]"
