"""The checked native entry (codegen/fastcall.py): calls like the last accepted one are checked
inside the native call; any input that differs in type, dtype, rank, dims, contiguity or
alignment is caught there, before a kernel runs, and the call goes the checked Python way (new
shapes run, bad inputs get the same errors as before)."""

from __future__ import annotations

import platform

import numpy as np
import pytest
from codegen.support import tcpr_cache  # noqa: F401

from tcp_rules import build as tb
from tcp_rules.codegen import fastcall
from tcp_rules.codegen.runtime import CompiledFunc, compile_func
from tcp_rules.diagnostics import TcpError


def _axpy() -> CompiledFunc:
    f = tb.FuncBuilder("axpy")
    x, y = f.param("x", "f32[N, M]"), f.param("y", "f32[M]")
    f.ret(tb.add(tb.mul(x, 2.0), tb.broadcast(y, shape=["N", "M"], dims=[1])), tb.exp(y))
    return compile_func(f.finish(), threads=1)


def _slow_calls(cf: CompiledFunc, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """A list that grows by one on every call that takes the checked Python path."""
    seen: list[int] = []
    validated = cf._validated

    def counting(arrays: object) -> object:
        seen.append(1)
        return validated(arrays)  # type: ignore[arg-type]

    monkeypatch.setattr(cf, "_validated", counting)
    return seen


@pytest.mark.skipif(platform.python_implementation() != "CPython", reason="CPython's layout")
def test_the_layout_is_read_back_from_live_objects() -> None:
    assert fastcall.abi() == (object.__basicsize__, tuple.__basicsize__)


def test_same_shaped_calls_take_the_native_check(monkeypatch: pytest.MonkeyPatch) -> None:
    cf = _axpy()
    slow = _slow_calls(cf, monkeypatch)
    rng = np.random.default_rng(0)
    for _ in range(5):
        x = rng.standard_normal((7, 5)).astype(np.float32)
        y = rng.standard_normal(5).astype(np.float32)
        got = cf(x, y)
        np.testing.assert_array_equal(got[0], x * np.float32(2) + y)
        np.testing.assert_allclose(got[1], np.exp(y), rtol=2e-7)
    assert len(slow) == 1  # only the first call
    cf(rng.standard_normal((9, 5)).astype(np.float32), y)  # a new N: checked in Python...
    cf(rng.standard_normal((9, 5)).astype(np.float32), y)  # ...and then natively again
    assert len(slow) == 2


@pytest.mark.parametrize("bad", ["fortran", "strided", "dtype", "rank", "subclass", "foreign"])
def test_inputs_unlike_the_last_are_caught_before_any_kernel(
        bad: str, monkeypatch: pytest.MonkeyPatch) -> None:
    cf = _axpy()
    x = np.arange(35, dtype=np.float32).reshape(7, 5)
    y = np.arange(5, dtype=np.float32)
    cf(x, y)
    fast = cf._fast
    assert fast is not None
    other = {"fortran": np.asfortranarray(x),
             "strided": np.arange(70, dtype=np.float32).reshape(7, 10)[:, ::2],
             "dtype": x.astype(np.float64),
             "rank": x.reshape(7, 5, 1),
             "subclass": x.view(type("Sub", (np.ndarray,), {})),
             "foreign": x.view(np.dtype(np.float32, metadata={"unit": "m"}))}[bad]
    res = [np.full(shape, -7.0, dtype) for shape, dtype in fast.results]
    raw = fast.layout.take_raw()
    assert cf._checked(fast.address, (other, y, *res, raw), 0) == 1  # the first input
    assert all((r == -7.0).all() for r in res)  # nothing ran
    slow = _slow_calls(cf, monkeypatch)
    if bad in ("subclass", "foreign"):  # accepted by the checked path, same results
        np.testing.assert_array_equal(cf(other, y)[0], x * np.float32(2) + y)
        assert slow
    else:
        with pytest.raises(TcpError, match="'x'"):
            cf(other, y)


def test_the_check_covers_every_input_and_dim() -> None:
    cf = _axpy()
    x = np.ones((7, 5), np.float32)
    y = np.ones(5, np.float32)
    cf(x, y)
    fast = cf._fast
    assert fast is not None
    res = [np.empty(shape, dtype) for shape, dtype in fast.results]
    raw = fast.layout.take_raw()
    for args, want in (((x, y), 0), ((np.ones((7, 6), np.float32), y), 1),
                       ((np.ones((6, 5), np.float32), y), 1), ((x, np.ones(6, np.float32)), 2),
                       ((x, np.ones(5, np.float16)), 2), ((x, x), 2)):
        assert cf._checked(fast.address, (*args, *res, raw), 0) == want, args
    with pytest.raises(TcpError, match="takes 2 input"):  # a count the table does not describe
        cf(x)


def test_arrays_at_unaligned_addresses_are_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    cf = _axpy()
    x = np.ones((7, 5), np.float32)
    cf(x, np.ones(5, np.float32))
    buf = np.zeros(4 * 5 + 1, np.uint8)
    y = np.frombuffer(buf.data, dtype=np.float32, count=5, offset=1)  # misaligned view
    assert not y.flags.aligned
    with pytest.raises(TcpError, match="aligned"):
        cf(x, y)


def test_the_entry_runs_with_timing_and_threads() -> None:
    f = tb.FuncBuilder("twice")
    x = f.param("x", "f32[N]")
    f.ret(tb.tanh(tb.mul(x, 2.0)))
    cf = compile_func(f.finish(), threads=3)
    a = np.linspace(-4, 4, 1 << 20, dtype=np.float32)
    want = cf(a)[0]
    for _ in range(3):
        got, wall, steps = cf.timed(a)
        np.testing.assert_array_equal(got[0], want)
        assert len(steps) == len(cf.steps) and wall > sum(steps) > 0


def test_out_arrays_are_checked_natively_too(monkeypatch: pytest.MonkeyPatch) -> None:
    cf = _axpy()
    x = np.arange(35, dtype=np.float32).reshape(7, 5)
    y = np.arange(5, dtype=np.float32)
    outs = [np.empty((7, 5), np.float32), np.empty(5, np.float32)]
    got = cf(x, y, out=outs)
    assert got[0] is outs[0] and got[1] is outs[1]
    slow = _slow_calls(cf, monkeypatch)
    for _ in range(3):
        got = cf(x, y, out=outs)
        assert got[0] is outs[0] and got[1] is outs[1]
    np.testing.assert_array_equal(outs[0], x * np.float32(2) + y)
    assert not slow
    fast = cf._fast
    assert fast is not None
    raw = fast.layout.take_raw()
    frozen = np.empty(5, np.float32)
    frozen.flags.writeable = False
    both = np.empty(12, np.float32)
    for objs, want, error in (
            ((x, y, *outs), 0, None),
            ((x, y, outs[0], np.empty(5, np.float64)), 4, "out\\[1\\] must be a float32"),
            ((x, y, np.empty((5, 7), np.float32), outs[1]), 3, "out\\[0\\] must be"),
            ((x, y, outs[0], frozen), 4, "writeable"),
            ((x, y, x, outs[1]), 3, "overlaps an input"),  # the result written over x
            ((x, y, outs[0], outs[0][0]), 4, "overlaps"),  # into the other result
            ((x, y, outs[0], both[::2][:5]), 4, "C-contiguous"),
            ((x, y, outs[0], both[7:]), 0, None)):  # beside, not over, each other
        assert cf._checked(fast.out_address, (*objs, raw), 0) == want, error
        if error:
            with pytest.raises(TcpError, match=error):
                cf(x, y, out=list(objs[2:]))

