"""The tcpr command: exit codes, outputs, and bad input that never crashes.

Most cases call ``tcp_rules.cli.main`` in-process (an uncaught exception fails the test); a few
run the installed ``tcpr`` script to prove the real command prints no traceback.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tcp_rules.cli import main
from tcp_rules.grammar.ast import format_ast
from tcp_rules.grammar.parser import parse_program, read_source
from tcp_rules.ops import OPS
from tcp_rules.pipeline import load_module_file
from tcp_rules.printer import print_module
from tcp_rules.resources import example_paths

ROOT = Path(__file__).parent.parent
DATA = Path(__file__).parent / "data"
MLP = str(ROOT / "examples" / "mlp.tcp")
TCPR = Path(sys.executable).parent / "tcpr"


def tcpr(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """Run ``tcpr argv`` in-process: exit status, stdout, stderr."""
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def assert_user_error(result: tuple[int, str, str], *needles: str) -> str:
    """Exit status 1, an ``error:`` line on stderr, nothing on stdout, no traceback."""
    code, out, err = result
    assert code == 1, err
    assert "error:" in err
    assert "Traceback" not in err + out
    assert out == ""
    for needle in needles:
        assert needle in err
    return err


def mlp_inputs(n: int = 3, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {"x": rng.standard_normal((n, 784)).astype(np.float32),
            "w": rng.standard_normal((784, 128)).astype(np.float32),
            "b": rng.standard_normal(128).astype(np.float32)}


def npz(path: Path, **arrays: Any) -> str:
    np.savez(path, **arrays)
    return str(path)


# check ----------------------------------------------------------------------------------------

def test_check_examples_directory(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = tcpr(capsys, "check", str(ROOT / "examples"))
    assert code == 0, err
    assert err == ""
    assert len(out.splitlines()) == len(example_paths()) == 5
    for path in example_paths():
        assert f"{path.name}: ok ({path.stem})" in out


def test_check_reports_every_bad_file_and_keeps_going(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "a_bad.tcp").write_text("func f(x: f32[N]) -> f32[N] {\n  return addd(x, x)\n}\n")
    (tmp_path / "b_good.tcp").write_text("func g(x: f32[N]) -> f32[N] {\n  return x\n}\n")
    (tmp_path / "c_junk.tcp").write_bytes(b"\xff\xfe\x00junk")
    code, out, err = tcpr(capsys, "check", str(tmp_path))
    assert code == 1
    assert "b_good.tcp: ok (g)" in out
    assert "a_bad.tcp:2:10: error: unknown op 'addd'" in err
    assert "c_junk.tcp:1:1: error: file is not UTF-8 text" in err
    assert "Traceback" not in err


def test_check_quiet_prints_only_errors(capsys: pytest.CaptureFixture[str]) -> None:
    assert tcpr(capsys, "check", "-q", MLP) == (0, "", "")


def test_check_empty_directory(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert_user_error(tcpr(capsys, "check", str(tmp_path)), "no .tcp or .tcpr files")


# run ------------------------------------------------------------------------------------------

def test_run_mlp_matches_numpy(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    arrays = mlp_inputs()
    inputs = npz(tmp_path / "in.npz", **arrays)
    out_path = tmp_path / "out.npz"
    code, out, err = tcpr(capsys, "run", MLP, "--inputs", inputs, "--engine", "reference",
                          "--out", str(out_path))
    assert (code, err) == (0, "")
    assert out == f"wrote 1 result(s) to {out_path}\n"
    with np.load(out_path, allow_pickle=False) as data:
        assert data.files == ["result0"]
        result = data["result0"]
    expected = np.maximum(arrays["x"] @ arrays["w"] + arrays["b"], np.float32(0))
    assert result.dtype == np.float32 and result.shape == (3, 128)
    np.testing.assert_array_equal(result, expected)  # the same float32 NumPy operations
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.npz", "out.npz"]  # no temp file


def test_run_prints_results_without_out(tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    inputs = npz(tmp_path / "in.npz", **mlp_inputs(n=2))
    code, out, err = tcpr(capsys, "run", MLP, "--inputs", inputs)
    assert (code, err) == (0, "")
    assert out.startswith("result0: float32[2, 128] = [[")


def test_run_several_results_and_func_choice(tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    x = np.array([[1.0, 2.0], [-3.0, 0.5]], np.float32)
    inputs = npz(tmp_path / "in.npz", x=x)
    out_path = tmp_path / "out.npz"
    code, _, err = tcpr(capsys, "run", str(DATA / "two_funcs.tcp"), "--func", "stats",
                        "--inputs", inputs, "--out", str(out_path))
    assert (code, err) == (0, "")
    with np.load(out_path) as data:
        np.testing.assert_array_equal(data["result0"], np.array([3.0, -2.5], np.float32))
        np.testing.assert_array_equal(data["result1"], np.array([True, False]))


def test_run_random_is_seeded(capsys: pytest.CaptureFixture[str]) -> None:
    first = tcpr(capsys, "run", MLP, "--random", "--size", "N=2", "--seed", "7")
    second = tcpr(capsys, "run", MLP, "--random", "--size", "N=2", "--seed", "7")
    assert first == second
    assert first[0] == 0 and first[1].startswith("result0: float32[2, 128]")


# run: bad input never crashes ----------------------------------------------------------------

def test_malformed_program(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.tcp"
    bad.write_text("func f(x: f32[N]) -> f32[N] {\n  return add(x\n}\n")
    inputs = npz(tmp_path / "in.npz", x=np.zeros(3, np.float32))
    err = assert_user_error(tcpr(capsys, "run", str(bad), "--inputs", inputs))
    assert err.startswith(f"{bad}:3:1: error: syntax error: unexpected '}}'")


def test_binary_junk_program(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    junk = tmp_path / "junk.tcp"
    junk.write_bytes(bytes(range(256)) * 4)
    assert_user_error(tcpr(capsys, "run", str(junk), "--random"), "binary data?")


def test_nonexistent_program(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "nope.tcp"
    assert_user_error(tcpr(capsys, "run", str(missing), "--random"),
                      f"error: cannot read {missing}: No such file or directory")


def test_directory_as_program(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert_user_error(tcpr(capsys, "run", str(tmp_path), "--random"), "cannot read")


def test_program_that_does_not_type_check(tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.tcp"
    bad.write_text("func f(x: f32[N]) -> i32[N] {\n  return x\n}\n")
    assert_user_error(tcpr(capsys, "run", str(bad), "--random"), "return type mismatch")


@pytest.mark.parametrize(("case", "needles"), [
    ("missing", ["has no array for parameter(s) b of func mlp (it has: w, x)"]),
    ("extra", ["has array(s) c that func mlp has no parameter for (parameters: x, w, b)"]),
    ("shape", ["input 'b' has shape [127] but the parameter is f32[128]"]),
    ("rank", ["input 'b' has rank 2 (shape [1, 128]) but the parameter is f32[128]"]),
    ("dtype", ["input 'x' has dtype float64 but the parameter is f32[N, 784] (expects float32)"]),
    ("string", ["input 'x' has dtype <U1"]),
])
def test_bad_input_arrays(case: str, needles: list[str], tmp_path: Path,
                          capsys: pytest.CaptureFixture[str]) -> None:
    arrays: dict[str, Any] = mlp_inputs()
    match case:
        case "missing":
            del arrays["b"]
        case "extra":
            arrays["c"] = arrays["b"]
        case "shape":
            arrays["b"] = arrays["b"][:127]
        case "rank":
            arrays["b"] = arrays["b"][None, :]
        case "dtype":
            arrays["x"] = arrays["x"].astype(np.float64)
        case "string":
            arrays["x"] = np.array(["a"])
    inputs = npz(tmp_path / "in.npz", **arrays)
    err = assert_user_error(tcpr(capsys, "run", MLP, "--inputs", inputs), *needles)
    if case in ("shape", "rank", "dtype", "string"):  # points at the parameter
        assert err.startswith(f"{MLP}:2:")


def test_symbol_conflict_between_inputs(tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    inputs = npz(tmp_path / "in.npz", a=np.zeros((3, 4), np.float32),
                 b=np.zeros((5, 4), np.float32))
    err = assert_user_error(tcpr(capsys, "run", str(DATA / "pair.tcp"), "--inputs", inputs))
    assert err.splitlines()[0] == (
        f"{DATA / 'pair.tcp'}:2:25: error: symbol N is bound to 3 by input 'a' (axis 0) but "
        f"input 'b' has 5 at axis 0")


def test_inputs_file_that_is_not_npz(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = tmp_path / "in.npz"
    text.write_text("x = [1, 2, 3]\n")
    err = assert_user_error(tcpr(capsys, "run", MLP, "--inputs", str(text)),
                            "is not an .npz file")
    assert "allow_pickle" not in err  # never suggests loading pickles


def test_inputs_file_that_is_npy(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    single = tmp_path / "in.npz"
    with single.open("wb") as f:
        np.save(f, np.zeros((3, 784), np.float32))
    assert_user_error(tcpr(capsys, "run", MLP, "--inputs", str(single)),
                      "holds a single array")


def test_empty_and_missing_inputs_files(tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    empty = tmp_path / "empty.npz"
    empty.write_bytes(b"")
    assert_user_error(tcpr(capsys, "run", MLP, "--inputs", str(empty)), "cannot read inputs")
    assert_user_error(tcpr(capsys, "run", MLP, "--inputs", str(tmp_path / "none.npz")),
                      "does not exist")


class Tripwire:
    """Unpickling this creates ``path``: proof that something unpickled it."""

    def __init__(self, path: Path):
        self.path = path

    def __reduce__(self) -> tuple[Any, ...]:
        return (open, (str(self.path), "w"))


def test_pickled_object_arrays_are_refused(tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    marker = tmp_path / "unpickled"
    arrays: dict[str, Any] = mlp_inputs()
    arrays["x"] = np.array([Tripwire(marker), None], dtype=object)
    inputs = npz(tmp_path / "in.npz", **arrays)
    err = assert_user_error(tcpr(capsys, "run", MLP, "--inputs", inputs),
                            "array 'x' holds Python objects (pickled data)")
    assert "allow_pickle" not in err
    assert not marker.exists(), "tcpr unpickled the inputs"
    # The tripwire works: loading with pickles allowed would have run it.
    with np.load(inputs, allow_pickle=True) as data:
        data["x"][0].close()
    assert marker.exists()


def test_plain_pickle_file_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import pickle

    marker = tmp_path / "unpickled"
    path = tmp_path / "in.npz"
    path.write_bytes(pickle.dumps({"x": Tripwire(marker)}))
    assert_user_error(tcpr(capsys, "run", MLP, "--inputs", str(path)), "is not an .npz file")
    assert not marker.exists()


def test_run_without_inputs(capsys: pytest.CaptureFixture[str]) -> None:
    assert_user_error(tcpr(capsys, "run", MLP),
                      "give the inputs with --inputs IN.npz (one array per parameter)")


def test_several_funcs_need_func(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    two = str(DATA / "two_funcs.tcp")
    assert_user_error(tcpr(capsys, "run", two, "--random"),
                      "the program has several funcs (double, stats); choose one with --func")
    assert_user_error(tcpr(capsys, "run", two, "--random", "--func", "triple"),
                      "no func named 'triple' (funcs: double, stats)")


def test_bad_size(capsys: pytest.CaptureFixture[str]) -> None:
    assert_user_error(tcpr(capsys, "run", MLP, "--random", "--size", "N=many"),
                      "--size expects SYMBOL=INT such as N=64, got 'N=many'")


def test_out_into_missing_directory(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    inputs = npz(tmp_path / "in.npz", **mlp_inputs())
    target = tmp_path / "no" / "such" / "dir" / "out.npz"
    assert_user_error(tcpr(capsys, "run", MLP, "--inputs", inputs, "--out", str(target)),
                      f"cannot write {target}: No such file or directory")
    assert not (tmp_path / "no").exists()
    assert [p.name for p in tmp_path.iterdir()] == ["in.npz"]


def test_out_onto_a_directory(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    inputs = npz(tmp_path / "in.npz", **mlp_inputs())
    target = tmp_path / "taken"
    target.mkdir()
    assert_user_error(tcpr(capsys, "run", MLP, "--inputs", inputs, "--out", str(target)),
                      f"cannot write {target}")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.npz", "taken"]  # no temp file
    assert list(target.iterdir()) == []


def test_usage_errors_exit_1_in_the_diagnostic_style(capsys: pytest.CaptureFixture[str]) -> None:
    for argv, needle in ((["run"], "the following arguments are required: program"),
                         (["run", MLP, "--engine", "gpu"], "invalid choice: 'gpu'"),
                         (["frobnicate"], "invalid choice: 'frobnicate'"),
                         ([], "required: command"),
                         (["opt", MLP, "--iter-limit", "many"], "invalid int value: 'many'")):
        code, out, err = tcpr(capsys, *argv)
        assert (code, out) == (1, ""), err
        assert err.startswith("tcpr: error: ") and needle in err.splitlines()[0]
        assert "  hint: see 'tcpr" in err and "Traceback" not in err


# --emit ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("command", ["check", "run"])
def test_emit_ast(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = tcpr(capsys, command, MLP, "--emit", "ast")
    assert (code, err) == (0, "")
    assert out == format_ast(parse_program(read_source(MLP))) + "\n"
    assert out == (Path(__file__).parent / "goldens" / "ast" / "mlp.txt").read_text()


@pytest.mark.parametrize("command", ["check", "run"])
def test_emit_program(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = tcpr(capsys, command, MLP, "--emit", "program")
    assert (code, err) == (0, "")
    assert out == print_module(load_module_file(MLP))
    assert out == (Path(__file__).parent / "goldens" / "programs" / "mlp.tcp").read_text()


def test_emit_stops_before_errors_of_later_stages(tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.tcp"
    bad.write_text("func f(x: f32[N]) -> f32[N] {\n  return addd(x)\n}\n")
    code, out, err = tcpr(capsys, "check", str(bad), "--emit", "ast")
    assert (code, err) == (0, "")  # parsing succeeds; the type error is a later stage
    assert "Call @2:10 op='addd'" in out
    assert_user_error(tcpr(capsys, "check", str(bad), "--emit", "program"), "unknown op 'addd'")


# ops, demo ------------------------------------------------------------------------------------

def test_ops_json(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = tcpr(capsys, "ops", "--json")
    assert (code, err) == (0, "")
    rows = json.loads(out)
    assert [r["name"] for r in rows] == list(OPS)
    for row in rows:
        op = OPS[row["name"]]
        assert row["doc"] == op.doc and row["doc"]
        assert row["operands"] == list(op.operands)
        assert [a["name"] for a in row["attrs"]] == [a.name for a in op.attrs]
    transpose = next(r for r in rows if r["name"] == "transpose")
    assert transpose["attrs"] == [{"name": "perm", "kind": "ints", "required": True}]


def test_ops_text(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = tcpr(capsys, "ops")
    assert code == 0
    lines = out.splitlines()
    assert [line.split("(")[0] for line in lines] == list(OPS)
    assert "broadcast(x, shape: dims, dims: ints)" in out


def test_demo(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = tcpr(capsys, "demo", "--size", "N=4", "--size", "S=4", "--size", "D=4")
    assert (code, err) == (0, "")
    for path in example_paths():
        assert f"{path.name}: func {path.stem}," in out
    assert "nan" not in out.lower()


# the installed command ------------------------------------------------------------------------

def run_tcpr(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(TCPR), *argv], capture_output=True, text=True, timeout=60,
                          check=False)


@pytest.mark.skipif(not TCPR.exists(), reason="the tcpr script is not installed next to python")
def test_installed_command_reports_errors_without_traceback(tmp_path: Path) -> None:
    junk = tmp_path / "junk.tcp"
    junk.write_bytes(b"\x00\x01\x02 func \xff")
    inputs = npz(tmp_path / "in.npz", **mlp_inputs())
    for argv in ([str(junk), "--random"],
                 [MLP, "--inputs", inputs, "--out", str(tmp_path / "no" / "out.npz")],
                 [MLP, "--inputs", str(junk)]):
        proc = run_tcpr("run", *argv)
        assert proc.returncode == 1, proc.stderr
        assert proc.stderr.startswith(str(junk)) or proc.stderr.startswith("error:")
        assert "Traceback" not in proc.stderr + proc.stdout


@pytest.mark.skipif(not TCPR.exists(), reason="the tcpr script is not installed next to python")
def test_installed_command_runs_and_checks(tmp_path: Path) -> None:
    arrays = mlp_inputs(n=4)
    out_path = tmp_path / "out.npz"
    proc = run_tcpr("run", MLP, "--inputs", npz(tmp_path / "in.npz", **arrays),
                    "--out", str(out_path))
    assert proc.returncode == 0, proc.stderr
    # The compiled engine (the default) sums the 784 products in its own order: within the
    # rounding bound of the program on these inputs (tests/numerics.py), not bit for bit.
    from numerics import assert_close_to_reference

    func = load_module_file(MLP).func()
    inputs = [arrays[p.name] for p in func.params]
    with np.load(out_path) as data:
        assert_close_to_reference([data["result0"]], func, inputs, "mlp")
    proc = run_tcpr("check", str(ROOT / "examples"))
    assert proc.returncode == 0 and proc.stderr == ""
