"""pad and integer pow: both engines against numpy.pad and a big-int reference; the NAME
attribute (pad's mode) through printer, parser, builder and rule files."""

from __future__ import annotations

from pathlib import Path

import hypothesis.extra.numpy as hnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tcp_rules import build as tb
from tcp_rules.codegen.runtime import run_compiled
from tcp_rules.diagnostics import Source, TcpError
from tcp_rules.elaborate import load_program
from tcp_rules.interpret import evaluate
from tcp_rules.ir import Func, same_module
from tcp_rules.printer import print_module
from tcp_rules.rules.library import load_rules
from tcp_rules.types import DType

ENGINES = ("reference", "compiled")


def run(f: Func, inputs: list[np.ndarray], engine: str) -> np.ndarray:
    return (evaluate if engine == "reference" else run_compiled)(f, inputs)[0]


def pad_func(shape: tuple[int, ...], dtype: DType, low: list[int], high: list[int], mode: str,
             value: float | int | bool, fused: bool, symbolic: bool) -> Func:
    fb = tb.FuncBuilder("p")
    dims = [f"S{i}" if symbolic else n for i, n in enumerate(shape)]
    x = fb.param("x", f"{dtype}[{', '.join(map(str, dims))}]")
    y = tb.pad(x, low=low, high=high, mode=mode, value=value)
    if fused:  # read inline by a fused kernel: kernel(select(c, load(pad), load(pad)))
        y = tb.kernel(tb.select(tb.eq(tb.load(y), tb.load(y)), tb.load(y), tb.load(y)))
    fb.ret(y)
    return fb.finish()


@st.composite
def pad_cases(draw: st.DrawFn) -> tuple:
    mode = draw(st.sampled_from(["constant", "edge", "reflect"]))
    dtype = draw(st.sampled_from([DType.F32, DType.I32, DType.I64, DType.I1, DType.F64]))
    shape = draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=0 if mode == "constant"
                                  else 1, max_side=4))
    low, high = [], []
    for n in shape:
        top = n - 1 if mode == "reflect" else 3
        low.append(draw(st.integers(0, top)))
        high.append(draw(st.integers(0, top)))
    x = draw(hnp.arrays(dtype.np_dtype, shape))
    value = 0
    if mode == "constant":
        value = draw(st.booleans()) if dtype is DType.I1 else draw(st.integers(-3, 3))
    return x, dtype, low, high, mode, value, draw(st.booleans()), draw(st.booleans())


@pytest.mark.parametrize("engine", ENGINES)
@settings(max_examples=60, deadline=None)
@given(case=pad_cases())
def test_pad_matches_numpy(engine: str, case: tuple) -> None:
    x, dtype, low, high, mode, value, fused, symbolic = case
    f = pad_func(x.shape, dtype, low, high, mode, value, fused, symbolic)
    widths = list(zip(low, high, strict=True))
    kw = {"constant_values": np.array(value).astype(x.dtype)} if mode == "constant" else {}
    want = np.pad(x, widths, mode=mode, **kw)
    got = run(f, [x], engine)
    assert got.dtype == want.dtype and got.shape == want.shape
    assert np.array_equal(got, want, equal_nan=dtype.is_float)


def test_reflect_width_is_checked_at_run_time_for_symbolic_sizes() -> None:
    f = pad_func((2,), DType.F32, [2], [0], "reflect", 0, False, True)
    for engine in ENGINES:
        with pytest.raises(TcpError, match="below the axis size"):
            run(f, [np.zeros(2, np.float32)], engine)
        assert run(f, [np.arange(3, dtype=np.float32)], engine).tolist() == [2, 1, 0, 1, 2]


def test_pad_type_errors() -> None:
    fb = tb.FuncBuilder("p")
    x = fb.param("x", "f32[3]")
    with pytest.raises(TcpError, match="one of constant, edge, reflect"):
        tb.pad(x, low=[1], high=[1], mode="wrap")
    with pytest.raises(TcpError, match="below the axis size"):
        tb.pad(x, low=[3], high=[0], mode="reflect")


PAD_PROGRAM = """\
func f(x: f32[N, 3]) -> f32[N + 2, 3] {
  a = pad(x, low=[1, 0], high=[1, 0], mode=reflect)
  b = pad(a, low=[0, 1], high=[0, 1], value=-0.5)
  c = pad(b, low=[0, 0], high=[0, 0], mode=edge)
  return slice(c, start=[0, 1], size=[N + 2, 3], stride=[1, 1])
}
"""


def test_pad_round_trips() -> None:
    module = load_program(Source("pad.tcp", PAD_PROGRAM))
    text = print_module(module)
    assert "mode=reflect" in text and "mode=edge" in text
    again = load_program(Source("printed.tcp", text))
    assert same_module(module, again) and print_module(again) == text


def test_pad_mode_in_rules_is_a_constant_or_a_variable(tmp_path: Path) -> None:
    src = """ruleset t
rule r1: neg(pad(x, low=l, high=h, mode=edge)) => pad(neg(x), low=l, high=h, mode=edge)
rule r2: pad(x, low=l, high=h, mode=m, value=c) => pad(x, low=l, high=h, mode=m, value=c)
"""
    (tmp_path / "t.tcpr").write_text(src)
    assert [r.name for r in load_rules([tmp_path / "t.tcpr"]).rules] == ["r1", "r2"]
    (tmp_path / "t.tcpr").write_text("ruleset t\nrule r: neg(x) => pad(neg(x), low=[0], "
                                     "high=[0], mode=wrap)\n")
    with pytest.raises(TcpError, match="not bound"):
        load_rules([tmp_path / "t.tcpr"])


# Integer pow ----------------------------------------------------------------------------------

def big_pow(x: int, y: int, bits: int) -> int:
    """The definition: x**y mod 2**bits (signed), and for y < 0: 0, 1 for x == 1, ±1 for -1."""
    if y < 0:
        return 1 if x == 1 else (1 if y % 2 == 0 else -1) if x == -1 else 0
    r = pow(x, y, 1 << bits)
    return r - (1 << bits) if r >= 1 << (bits - 1) else r


def int_values(bits: int) -> st.SearchStrategy[int]:
    lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    return st.one_of(st.sampled_from([lo, hi, lo + 1, -2, -1, 0, 1, 2, 3]),
                     st.integers(-40, 70), st.integers(lo, hi))


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("dtype", [DType.I32, DType.I64])
@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_int_pow_matches_big_ints(engine: str, dtype: DType, data: st.DataObject) -> None:
    bits = 8 * dtype.itemsize
    n = data.draw(st.integers(1, 9))
    xs = data.draw(st.lists(int_values(bits), min_size=n, max_size=n))
    ys = data.draw(st.lists(int_values(bits), min_size=n, max_size=n))
    fb = tb.FuncBuilder("p")
    x, y = fb.param("x", f"{dtype}[N]"), fb.param("y", f"{dtype}[N]")
    fb.ret(tb.pow(x, y))
    got = run(fb.finish(), [np.array(xs, dtype.np_dtype), np.array(ys, dtype.np_dtype)], engine)
    assert got.tolist() == [big_pow(a, b, bits) for a, b in zip(xs, ys, strict=True)]


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("exponent", [-3, -2, -1, 0, 1, 2, 3, 7, 31, 62, 63])
def test_int_pow_literal_exponents(engine: str, exponent: int) -> None:
    xs = [-(1 << 63), -3, -2, -1, 0, 1, 2, 3, 5, (1 << 63) - 1]
    fb = tb.FuncBuilder("p")
    x = fb.param("x", "i64[10]")
    fb.ret(tb.pow(x, exponent))
    got = run(fb.finish(), [np.array(xs, np.int64)], engine)
    assert got.tolist() == [big_pow(a, exponent, 64) for a in xs]
