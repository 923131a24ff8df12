"""The runtime: input validation, out=, bounds, threads, the kernel cache, the CLI helpers."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from codegen.support import assert_same, tcpr_cache  # noqa: F401

from tcp_rules import build as tb
from tcp_rules.codegen import compile_func, emit_llvm, jit, run_compiled
from tcp_rules.codegen.kernel import kernel_text
from tcp_rules.codegen.lower import lower_func
from tcp_rules.codegen.runtime import kernel_symbols
from tcp_rules.diagnostics import TcpError
from tcp_rules.interpret import evaluate
from tcp_rules.ir import Func

ROOT = Path(__file__).parent.parent


def add_func(shape: str = "N, M") -> Func:
    f = tb.FuncBuilder("addf")
    x, y = f.param("x", f"f32[{shape}]"), f.param("y", f"f32[{shape}]")
    f.ret(tb.add(x, y))
    return f.finish()


ADD = add_func()


@pytest.mark.parametrize(("args", "message"), [
    ((np.zeros((2, 3), np.float32),), "takes 2 input"),
    ((np.zeros((2, 3), np.float64), np.zeros((2, 3), np.float32)), "dtype float64"),
    ((np.zeros(6, np.float32), np.zeros(6, np.float32)), "rank 1"),
    ((np.zeros((2, 3), np.float32), np.zeros((2, 4), np.float32)), "symbol M is bound to 3"),
    ((np.zeros((4, 6), np.float32)[:, ::2], np.zeros((4, 3), np.float32)), "C-contiguous"),
    ((np.asfortranarray(np.zeros((2, 3), np.float32)), np.zeros((2, 3), np.float32)),
     "C-contiguous"),
    (([[1.0]], np.zeros((1, 1), np.float32)), "must be a NumPy array"),
])
def test_wrong_inputs_are_refused(args: tuple[object, ...], message: str) -> None:
    cf = compile_func(ADD)
    with pytest.raises(TcpError, match=message):
        cf(*args)  # type: ignore[arg-type]


def test_out_arrays() -> None:
    cf = compile_func(ADD)
    x, y = np.ones((2, 3), np.float32), np.full((2, 3), 2.0, np.float32)
    out = np.empty((2, 3), np.float32)
    (r,) = cf(x, y, out=(out,))
    assert r is out and (out == 3).all()
    for bad, msg in [((np.empty((3, 2), np.float32),), "shape"),
                     ((np.empty((2, 3), np.float64),), "float32 array"),
                     ((x,), "overlaps"),
                     ((np.empty((2, 6), np.float32)[:, ::2],), "C-contiguous"),
                     ((), "1 result")]:
        with pytest.raises(TcpError, match=msg):
            cf(x, y, out=bad)
    ro = np.empty((2, 3), np.float32)
    ro.setflags(write=False)
    with pytest.raises(TcpError, match="writeable"):
        cf(x, y, out=(ro,))


def test_run_time_shape_rules_are_checked() -> None:
    f = tb.FuncBuilder("sl")
    x, y = f.param("x", "f32[N]"), f.param("y", "f32[M]")
    f.ret(tb.add(tb.slice(x, start=[1], size=["M"], stride=[1]), y))
    func = f.finish()
    cf = compile_func(func)
    ok = cf(np.arange(6, dtype=np.float32), np.ones(5, np.float32))[0]
    assert_same(ok, evaluate(func, [np.arange(6, dtype=np.float32), np.ones(5, np.float32)])[0])
    with pytest.raises(TcpError, match="slice reads past the end"):
        cf(np.arange(3, dtype=np.float32), np.ones(5, np.float32))


def test_empty_and_scalar_shapes() -> None:
    z = np.zeros((0, 5), np.float32)
    assert compile_func(ADD)(z, z)[0].shape == (0, 5)
    f = tb.FuncBuilder("s")
    x = f.param("x", "f64[]")
    f.ret(tb.exp(tb.neg(x)))
    (r,) = compile_func(f.finish())(np.array(2.0))
    assert r.shape == () and r == np.exp(-2.0)


def test_gather_indices_are_clamped() -> None:
    f = tb.FuncBuilder("g")
    x, i = f.param("x", "i64[N, 2]"), f.param("i", "i32[K]")
    f.ret(tb.gather(x, i, axis=0))
    func = f.finish()
    xs = [np.arange(10, dtype=np.int64).reshape(5, 2),
          np.array([-2**31, -1, 0, 4, 5, 2**31 - 1], np.int32)]
    assert_same(compile_func(func)(*xs)[0], evaluate(func, xs)[0], "gather")


@pytest.mark.parametrize("threads", [1, 2])
def test_threads_give_identical_results(threads: int) -> None:
    rng = np.random.default_rng(0)
    x, y = (rng.standard_normal((700, 1024)).astype(np.float32) for _ in range(2))
    assert_same(compile_func(ADD, threads=threads)(x, y)[0], x + y)
    f = tb.FuncBuilder("mm")
    a, b = f.param("a", "i64[M, K]"), f.param("b", "i64[K, N]")
    f.ret(tb.matmul(a, b))
    xa, xb = rng.integers(-9, 9, (150, 100)), rng.integers(-9, 9, (100, 70))
    assert_same(compile_func(f.finish(), threads=threads)(xa, xb)[0], xa @ xb)


def test_kernels_are_cached_on_disk_and_in_memory(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TCPR_CACHE_DIR", str(tmp_path))
    f = tb.FuncBuilder("c")
    x = f.param("x", "f32[N]")
    f.ret(tb.mul(x, 1234.5))  # a constant no other test uses: a fresh kernel
    func = f.finish()
    before = jit.STATS.compiled
    compile_func(func)
    assert jit.STATS.compiled == before + 1
    entries = list(tmp_path.rglob("*.o"))
    assert len(entries) == 1
    hits = jit.STATS.memory_hits
    compile_func(func)
    assert jit.STATS.compiled == before + 1 and jit.STATS.memory_hits == hits + 1
    key, _ = kernel_symbols(lower_func(func).steps[0].kernel)
    assert jit.read_entry(key) is not None


def test_corrupt_cache_entry_is_rebuilt(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TCPR_CACHE_DIR", str(tmp_path))
    f = tb.FuncBuilder("c")
    x = f.param("x", "f32[N]")
    f.ret(tb.mul(x, 4321.5))
    func = f.finish()
    k = lower_func(func).steps[0].kernel
    key, _ = kernel_symbols(k)
    path = tmp_path / key[:2] / f"{key}.o"
    path.parent.mkdir(parents=True)
    path.write_bytes(b"TCPK1\n" + b"\0" * 32 + b"garbage")  # checksum mismatch
    assert jit.read_entry(key) is None
    before = jit.STATS.compiled
    (r,) = compile_func(func)(np.ones(3, np.float32))
    assert (r == 4321.5).all() and jit.STATS.compiled == before + 1
    assert jit.read_entry(key) is not None  # rewritten with a valid entry
    data = bytearray(path.read_bytes())
    data[-1] ^= 0xFF  # flip one bit of the object code
    path.write_bytes(bytes(data))
    assert jit.read_entry(key) is None


def test_cached_kernels_load_in_a_new_process(tmp_path: Path) -> None:
    env = {**os.environ, "TCPR_CACHE_DIR": str(tmp_path)}
    script = ("import sys, numpy as np\n"
              "from tcp_rules.pipeline import load_module_file\n"
              "from tcp_rules.codegen import compile_func, jit\n"
              "f = load_module_file(sys.argv[1]).func()\n"
              "cf = compile_func(f)\n"
              "out = cf(np.ones((2, 3), np.float32))[0]\n"
              "print(jit.STATS.compiled, jit.STATS.disk_hits, float(out.sum()))\n")
    prog = str(ROOT / "examples" / "softmax.tcp")
    runs = [subprocess.run([sys.executable, "-c", script, prog], env=env, capture_output=True,
                           text=True, check=True).stdout.split() for _ in range(2)]
    assert runs[0][0] != "0" and runs[0][1] == "0"  # first process compiles
    assert runs[1][0] == "0" and runs[1][1] != "0"  # the second only loads
    assert float(runs[1][2]) == pytest.approx(2.0)


def test_emit_llvm_and_run_compiled() -> None:
    text = emit_llvm(ADD)
    assert 'define void @"tcpk_' in text and "noalias" in text and "; kernel" in text
    assert kernel_text(lower_func(ADD).steps[0].kernel).splitlines()[0] in text
    x = np.ones((2, 2), np.float32)
    assert_same(run_compiled(ADD, [x, x])[0], x + x)


def test_large_kernel_is_vectorized() -> None:
    from tcp_rules.codegen.runtime import module_ir

    k = lower_func(ADD).steps[0].kernel
    opt = jit.optimized_ir(module_ir(k, "f"))
    assert "x float>" in opt  # vector code for the host


def test_a_reshaped_result_is_written_in_place() -> None:
    """A result that is a reshape of a kernel's output (an imported graph's last Reshape) is
    that kernel's output, written straight into the result array: no copy kernel. A second
    reshape of the same buffer among the results, the buffer itself as a result too, and a
    reshape of an input are copied (results never share memory with each other or inputs)."""
    f = tb.FuncBuilder("shapes")
    x = f.param("x", "f32[N, 6]")
    e = tb.add(x, x)
    f.ret(tb.reshape(e, shape=["N", 2, 3]))
    f.ret(tb.reshape(e, shape=["N", 3, 2]))
    f.ret(e)
    f.ret(tb.reshape(x, shape=["N", 3, 2]))
    f.ret(tb.reshape(tb.neg(x), shape=["N", 2, 3]))
    func = f.finish()
    plan = lower_func(func)
    copies = [s for s in plan.steps if s.value is None]
    assert len(plan.steps) == 2 + len(copies) and len(copies) == 3
    xs = [np.arange(24, dtype=np.float32).reshape(4, 6) / 7]
    want = evaluate(func, xs)
    cf = compile_func(func)
    for out in (None, [np.full(w.shape, np.nan, np.float32) for w in want]):
        for _ in range(2):  # the Python path, then the checked native entry
            got = cf(*xs, out=out)
            assert len({a.ctypes.data for a in got}) == len(got)
            for g, w in zip(got, want, strict=True):
                assert_same(g, w, "reshaped result")
