"""Bad input found by fuzzing (issue 15, point 6): each gets a clear error and exit status 1.

Every test here failed before its fix (checked by reverting the fix once).
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest

from tcp_rules.cli import main
from tcp_rules.diagnostics import Source, TcpError
from tcp_rules.ir import Func
from tcp_rules.optimize import OptOptions, optimize
from tcp_rules.pipeline import load_module
from tcp_rules.rules.library import load_rules, load_standard_library

ROOT = Path(__file__).parent.parent


def tcpr(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def user_error(result: tuple[int, str, str], *needles: str) -> str:
    """Exit status 1, an ``error:`` on stderr, no traceback; returns stderr."""
    code, out, err = result
    assert code == 1, out + err
    assert "error:" in err and "Traceback" not in out + err
    for needle in needles:
        assert needle in err
    return err


def func_of(text: str, name: str = "test.tcp") -> Func:
    return load_module(Source(name, text)).funcs[0]


# files are size-checked before they are read ---------------------------------------------------

def _limited() -> None:
    # if the file were read without bound, the child would fail here, not exhaust the host
    resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))


@pytest.mark.parametrize("path", ["/dev/zero", "/dev/urandom"])
def test_device_files_are_refused_before_reading(path: str) -> None:
    if not Path(path).exists():
        pytest.skip(f"no {path} here")
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1"}
    proc = subprocess.run([sys.executable, "-m", "tcp_rules", "check", path], env=env,
                          capture_output=True, text=True, timeout=120, preexec_fn=_limited)
    assert proc.returncode == 1, proc.stderr[-2000:]
    assert f"cannot read {path}: not a regular file (a character device)" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "prog.tcp"
    os.mkfifo(fifo)
    # opening a FIFO for reading waits for a writer: without the fix this never returns
    proc = subprocess.run([sys.executable, "-m", "tcp_rules", "check", str(fifo)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1, proc.stderr
    assert "not a regular file (a FIFO)" in proc.stderr


def test_oversized_file_is_refused_unread(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    big = tmp_path / "big.tcp"
    with open(big, "wb") as f:
        f.truncate(64 << 30)  # sparse: 64 GiB that take no disk, and must not be read

    def no_read(*args: object, **kwargs: object) -> bytes:
        raise AssertionError("an oversized file was read")

    monkeypatch.setattr(Path, "read_bytes", no_read)
    user_error(tcpr(capsys, "check", str(big)), "file is larger than 8388608 bytes")


def test_rule_import_of_a_device_is_refused(tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "dev.tcpr").symlink_to("/dev/zero")
    (tmp_path / "r.tcpr").write_text('import "dev.tcpr"\n')
    user_error(tcpr(capsys, "check", str(tmp_path / "r.tcpr")), "r.tcpr:1:1:")


# rule names that differ only in '-', '_' or '.' ------------------------------------------------

PROGRAM = """func f(x: f32[4]) -> f32[4] {
  return neg(neg(exp(x)))
}
"""


def test_rule_names_differing_in_separators_do_not_collide(tmp_path: Path) -> None:
    rules = tmp_path / "mine.tcpr"
    rules.write_text("rule tw-o: exp(x) => exp(neg(neg(x)))\n"
                     "rule tw_o: neg(neg(x)) => x\n"
                     "rule tw.o: exp(neg(neg(x))) => exp(x)\n")
    result = optimize(func_of(PROGRAM), load_rules([rules]).rules,
                      OptOptions(isolate=False))
    assert result.report.stop_reason == "saturated", result.report.error
    assert result.report.rules_loaded == 3
    assert result.report.matches.get("tw_o", 0) > 0


def test_a_user_rule_name_never_disables_the_standard_library(tmp_path: Path) -> None:
    # 'neg_neg' is not the standard library's 'neg-neg', and must not take its egglog ruleset
    rules = tmp_path / "mine.tcpr"
    rules.write_text("rule neg_neg: exp(neg(neg(x))) => exp(x)\n")
    std = load_standard_library()
    assert any(r.name == "neg-neg" for r in std.rules)
    result = optimize(func_of(PROGRAM), [*std.rules, *load_rules([rules]).rules],
                      OptOptions(isolate=False))
    assert result.report.stop_reason != "error", result.report.error
    assert result.report.matches.get("neg-neg", 0) > 0
    assert "neg" not in [v.op.name for v in result.func.ops()]  # neg-neg did its work


def test_rulesets_named_after_files_do_not_collide(tmp_path: Path) -> None:
    (tmp_path / "my-set.tcpr").write_text("rule one: neg(neg(x)) => x\n")
    (tmp_path / "my_set.tcpr").write_text("rule two: exp(neg(neg(x))) => exp(x)\n")
    (tmp_path / "my set!.tcpr").write_text("rule three: neg(exp(x)) => neg(exp(x))\n")
    lib = load_rules([tmp_path])
    assert len(lib.rulesets) == 3
    result = optimize(func_of(PROGRAM), lib.rules, OptOptions(isolate=False))
    assert result.report.stop_reason == "saturated", result.report.error
    assert result.report.rules_loaded == 3


# imports stay beside the importing file or in the standard library -----------------------------

SECRET = "SECRET CONTENT OF ANOTHER FILE"


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A folder of rule files, and a secret file outside it."""
    (tmp_path / "secret.tcpr").write_text(SECRET + "\n")
    rules = tmp_path / "rules"
    (rules / "sub").mkdir(parents=True)
    return rules


@pytest.mark.parametrize("target, needle", [
    ("{secret}", "never absolute paths"),
    ("../secret.tcpr", "leads outside the folder of r.tcpr"),
    ("sub/../../secret.tcpr", "leads outside the folder of r.tcpr"),
    ("link.tcpr", "leads outside the folder of r.tcpr"),
    ("../nonexistent.tcpr", "leads outside the folder of r.tcpr"),
])
def test_imports_cannot_leave_the_folder(outside: Path, target: str, needle: str,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    secret = outside.parent / "secret.tcpr"
    (outside / "link.tcpr").symlink_to(secret)
    (outside / "r.tcpr").write_text(f'import "{target.format(secret=secret)}"\n')
    err = user_error(tcpr(capsys, "check", str(outside / "r.tcpr")), "r.tcpr:1:1:", needle)
    assert SECRET not in err


def test_imports_inside_the_folder_and_of_the_standard_library_work(
        outside: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (outside / "sub" / "a.tcpr").write_text("rule mine-a: neg(neg(x)) => x\n")
    (outside / "b.tcpr").write_text("rule mine-b: exp(neg(neg(x))) => exp(x)\n")
    (outside / "r.tcpr").write_text('import "sub/a.tcpr"\nimport "sub/../b.tcpr"\n'
                                    'import "math"\n')  # a small library file
    code, out, err = tcpr(capsys, "check", str(outside / "r.tcpr"))
    assert code == 0, err
    assert "math.tcpr: ok" in out and "a.tcpr: ok" in out and "b.tcpr: ok" in out


def test_imports_work_in_a_folder_reached_through_a_symlink(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # as the standard library is (tcp_rules/data/rules -> rules): both sides are resolved
    real = tmp_path / "real"
    real.mkdir()
    (real / "s.tcpr").write_text("rule mine-s: neg(neg(x)) => x\n")
    (real / "r.tcpr").write_text('import "s.tcpr"\nimport "math"\n')
    (tmp_path / "link").symlink_to(real)
    code, out, err = tcpr(capsys, "check", str(tmp_path / "link" / "r.tcpr"))
    assert code == 0, err
    assert "s.tcpr: ok" in out and "math.tcpr: ok" in out


# outputs that cannot fit are refused before allocation -----------------------------------------

HUGE = """func f(x: f32[N]) -> f32[N, N, N] {
  return broadcast(x, shape=[N, N, N], dims=[2])
}
"""


@pytest.mark.parametrize("engine", ["reference", "compiled"])
def test_an_output_too_large_is_refused_with_its_size(
        engine: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    prog = tmp_path / "huge.tcp"
    prog.write_text(HUGE)
    inputs = tmp_path / "in.npz"
    np.savez(inputs, x=np.ones(100_000, np.float32))  # the result: 4e15 bytes
    for opt in ([], ["--no-opt"]):
        err = user_error(tcpr(capsys, "run", str(prog), "--inputs", str(inputs),
                              "--engine", engine, *opt),
                         "huge.tcp:", "f32[100000, 100000, 100000]",
                         "needs 3638.0 TiB of memory, but only")
        assert "<optimized>" not in err


def test_random_inputs_too_large_are_refused(tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    prog = tmp_path / "p.tcp"
    prog.write_text("func f(x: f64[N, N]) -> f64[N, N] {\n  return neg(x)\n}\n")
    user_error(tcpr(capsys, "run", str(prog), "--random", "--size", "N=100000000"),
               "p.tcp:1:8:", "random input 'x' (f64[100000000, 100000000]) needs")


FUSED = """func f(x: f32[N]) -> f32[N] {
  return reduce_sum(broadcast(x, shape=[N, N], dims=[1]), axes=[0], keepdims=false)
}
"""


def test_the_memory_check_counts_what_each_engine_allocates(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from tcp_rules import memory

    func = func_of(FUSED)
    monkeypatch.setattr(memory, "available_bytes", lambda: 1 << 20)
    # the compiled engine fuses the broadcast into the sum: only f32[N] is allocated
    memory.check_run(func, {"N": 1000}, "compiled")
    # the reference engine makes the 4 MB broadcast
    with pytest.raises(TcpError, match=r"broadcast makes f32\[1000, 1000\], which needs 3.8 MiB"):
        memory.check_run(func, {"N": 1000}, "reference")


ROW_PASS = """func f(q: f32[N, 8], k: f32[8, N]) -> f32[N, N] {
  s = load(matmul(q, k))
  e = exp(sub(s, broadcast(reduce_max(s, axes=[1], keepdims=false), shape=[N, N], dims=[0])))
  return kernel(div(e, broadcast(reduce_sum(e, axes=[1], keepdims=false), shape=[N, N], dims=[0])))
}
"""


def test_the_memory_check_leaves_out_a_product_kept_in_scratch(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The softmax runs inside the matmul (codegen/rowpass.py): the N x N product is never
    allocated, only the result is."""
    from tcp_rules import memory

    func = func_of(ROW_PASS)
    monkeypatch.setattr(memory, "available_bytes", lambda: 1 << 20)
    memory.check_run(func, {"N": 400}, "compiled")  # 625 KiB: the result alone fits
    with pytest.raises(TcpError, match=r"arrays together\) needs"):  # it makes the product
        memory.check_run(func, {"N": 400}, "reference")


# .npz members ----------------------------------------------------------------------------------

def _npz_with_member(path: Path, member: bytes) -> str:
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("x.npy", member)
    return str(path)


@pytest.mark.parametrize("member, needle", [
    (b"\x93NUMPY\x01\x00\x20\x00{'descr': <f4, 'shape': (4,), }  \n", "malformed .npy header"),
    (b"\x93NUMPY\x01\x00\x30\x00{'descr': '<f4', 'fortran_order': False, 'shape': (-4,), }\n",
     "malformed .npy header"),
    (b"\x93NUMPY\x01\x00\x20\x00{'descr': '<f4'}              \n", "malformed .npy header"),
    (b"just some bytes", "is not an .npy array"),
])
def test_malformed_npy_members_are_named_as_such(member: bytes, needle: str, tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    prog = tmp_path / "p.tcp"
    prog.write_text("func f(x: f32[4]) -> f32[4] {\n  return neg(x)\n}\n")
    inputs = _npz_with_member(tmp_path / "in.npz", member)
    err = user_error(tcpr(capsys, "run", str(prog), "--inputs", inputs), "array 'x'", needle)
    assert "pickle" not in err


def test_inputs_from_a_fifo_are_refused_without_blocking(tmp_path: Path) -> None:
    prog = tmp_path / "p.tcp"
    prog.write_text("func f(x: f32[4]) -> f32[4] {\n  return neg(x)\n}\n")
    fifo = tmp_path / "in.npz"
    os.mkfifo(fifo)
    # numpy opens the file and waits for a writer: without the check this never returns
    proc = subprocess.run([sys.executable, "-m", "tcp_rules", "run", str(prog), "--inputs",
                           str(fifo)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1, proc.stderr
    assert f"cannot read inputs: {fifo} is not a regular file" in proc.stderr


def test_npz_member_larger_than_memory_is_refused_unread(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    prog = tmp_path / "p.tcp"
    prog.write_text("func f(x: f32[N]) -> f32[N] {\n  return neg(x)\n}\n")
    header = b"{'descr': '<f4', 'fortran_order': False, 'shape': (1000000000000000,), }"
    header += b" " * (63 - len(header) % 64) + b"\n"
    member = b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header
    inputs = _npz_with_member(tmp_path / "in.npz", member)
    user_error(tcpr(capsys, "run", str(prog), "--inputs", inputs),
               "array 'x' (float32[1000000000000000]) needs 3638.0 TiB")


# run-time errors in optimized programs point at the user's file --------------------------------

SLICE = """func f(x: f32[N], y: f32[M]) -> f32[M] {
  a = exp(x)
  b = add(slice(a, start=[0], size=[M], stride=[1]), y)
  return b
}
"""


@pytest.mark.parametrize("engine", ["reference", "compiled"])
@pytest.mark.parametrize("isolate", [[], ["--no-isolate"]])
def test_run_time_errors_of_optimized_programs_point_at_the_users_file(
        engine: str, isolate: list[str], tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    prog = tmp_path / "p.tcp"
    prog.write_text(SLICE)
    err = user_error(tcpr(capsys, "run", str(prog), "--random", "--size", "N=4", "--size", "M=5",
                          "--engine", engine, *isolate),
                     f"{prog}:3:11: error:", "slice reads past the end of axis 0",
                     "(with M=5, N=4)", "b = add(slice(a, start=[0], size=[M], stride=[1]), y)")
    assert "<optimized>" not in err
    assert "slice: slice" not in err  # both engines word it alike: the op named once


@pytest.mark.parametrize("argv", [["prove"], ["verify", "--prove"], ["check", "--prove"]])
def test_prove_without_z3_names_the_extra(argv: list[str], capsys: pytest.CaptureFixture[str],
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """Where z3-solver is not installed, proving says which extra to install (it was an
    'internal error' before)."""
    monkeypatch.setitem(sys.modules, "z3", None)  # import z3 now raises ImportError
    for name in [m for m in sys.modules if m == "tcp_rules.prove" or
                 m.startswith("tcp_rules.prove.")]:
        monkeypatch.delitem(sys.modules, name)
    rules = str(ROOT / "tests/data/unsound.tcpr")
    user_error(tcpr(capsys, *argv, rules), "z3-solver", "tcp-rules[prove]")
