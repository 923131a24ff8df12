"""Property tests of the reference interpreter: random programs built with the builder API give
what the same computation does directly in NumPy, and bad inputs are refused with TcpError."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import hypothesis.extra.numpy as hnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tcp_rules import build as tb
from tcp_rules.diagnostics import TcpError
from tcp_rules.interpret import evaluate
from tcp_rules.ir import Value
from tcp_rules.types import Dim, DType

FAST = settings(max_examples=50, deadline=None)
DTYPES = [DType.F32, DType.F64, DType.I32, DType.I64]


def type_text(dtype: DType, dims: tuple[Any, ...]) -> str:
    return f"{dtype}[{', '.join(map(str, dims))}]"


def assert_bitwise(actual: np.ndarray, expected: np.ndarray) -> None:
    """Same dtype and shape, equal bit for bit except that any NaN matches any NaN."""
    assert actual.dtype == expected.dtype and actual.shape == expected.shape, \
        (actual.dtype, actual.shape, expected.dtype, expected.shape)
    if expected.dtype.kind == "f":
        nan = np.isnan(expected)
        assert np.array_equal(np.isnan(actual), nan)
        assert np.array_equal(actual[~nan].view(np.uint8), expected[~nan].view(np.uint8))
    else:
        assert np.array_equal(actual, expected)


def elements(dtype: DType) -> st.SearchStrategy[Any]:
    if dtype is DType.F32:
        return st.floats(width=32)
    if dtype is DType.F64:
        return st.floats()
    info = np.iinfo(dtype.np_dtype)
    return st.one_of(st.sampled_from([int(info.min), int(info.max), 0, -1, 1]),
                     st.integers(int(info.min), int(info.max)))


def trunc_div(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Integer division truncating toward zero, x/0 == -1, wrapping, in plain Python ints."""
    a, b = np.broadcast_arrays(np.asarray(a), np.asarray(b))
    bits = a.dtype.itemsize * 8
    out = []
    for x, y in zip(a.ravel().tolist(), b.ravel().tolist(), strict=True):
        if y == 0:
            q = -1
        else:
            q = abs(x) // abs(y) * (1 if (x < 0) == (y < 0) else -1)
            if q >= 2 ** (bits - 1):
                q -= 2**bits
        out.append(q)
    return np.array(out, dtype=a.dtype).reshape(a.shape)


NpUnary = Callable[[np.ndarray], np.ndarray]
NpBinary = Callable[[np.ndarray, np.ndarray], np.ndarray]
# Ops whose result IEEE (or two's complement) fixes exactly, so NumPy must agree bit for bit.
FLOAT_UNARY: dict[str, NpUnary] = {
    "neg": np.negative, "abs": np.abs, "sqrt": np.sqrt, "floor": np.floor, "ceil": np.ceil,
    "round_even": np.rint}
INT_UNARY: dict[str, NpUnary] = {"neg": np.negative, "abs": np.abs}
FLOAT_BINARY: dict[str, NpBinary] = {
    "add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide,
    "max": np.maximum, "min": np.minimum}
INT_BINARY: dict[str, NpBinary] = {
    "add": np.add, "sub": np.subtract, "mul": np.multiply, "div": trunc_div,
    "max": np.maximum, "min": np.minimum}


@st.composite
def elementwise_programs(draw: st.DrawFn) -> tuple[Any, list[np.ndarray], np.ndarray]:
    """A random chain of elementwise ops over 1-3 parameters, and its NumPy result."""
    dtype = draw(st.sampled_from(DTYPES))
    shape = draw(hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4))
    n_params = draw(st.integers(1, 3))
    arrays = [draw(hnp.arrays(dtype.np_dtype, shape, elements=elements(dtype)))
              for _ in range(n_params)]
    unary = FLOAT_UNARY if dtype.is_float else INT_UNARY
    binary = FLOAT_BINARY if dtype.is_float else INT_BINARY
    f = tb.FuncBuilder("chain")
    params = [f.param(f"p{i}", type_text(dtype, shape)) for i in range(n_params)]
    value: Value = params[0]
    expect = arrays[0]
    with np.errstate(all="ignore"):
        for _ in range(draw(st.integers(1, 6))):
            if draw(st.booleans()):
                name = draw(st.sampled_from(sorted(unary)))
                value, expect = getattr(tb, name)(value), unary[name](expect)
                continue
            name = draw(st.sampled_from(sorted(binary)))
            kind = draw(st.sampled_from(["param", "self", "literal"]))
            if kind == "param":
                i = draw(st.integers(0, n_params - 1))
                other, other_np = params[i], arrays[i]
            elif kind == "self":
                other, other_np = value, expect
            else:
                lit = draw(elements(dtype))
                other, other_np = lit, np.asarray(lit, dtype=dtype.np_dtype)
            if draw(st.booleans()):
                value, expect = getattr(tb, name)(value, other), binary[name](expect, other_np)
            else:
                value, expect = getattr(tb, name)(other, value), binary[name](other_np, expect)
    f.ret(value)
    return f.finish(), arrays, np.asarray(expect, dtype=dtype.np_dtype)


@FAST
@given(elementwise_programs())
def test_elementwise_chains_match_numpy(program: tuple[Any, list[np.ndarray], np.ndarray]) -> None:
    func, arrays, expected = program
    (out,) = evaluate(func, arrays)
    assert_bitwise(out, expected)


@FAST
@given(st.sampled_from(DTYPES), hnp.array_shapes(min_dims=1, max_dims=2, max_side=5),
       st.data())
def test_compare_select_match_numpy(dtype: DType, shape: tuple[int, ...],
                                    data: st.DataObject) -> None:
    x, y = (data.draw(hnp.arrays(dtype.np_dtype, shape, elements=elements(dtype)))
            for _ in range(2))
    f = tb.FuncBuilder("cmp")
    a, b = f.param("a", type_text(dtype, shape)), f.param("b", type_text(dtype, shape))
    f.ret(tb.lt(a, b), tb.eq(a, b), tb.ne(a, b), tb.select(tb.ge(a, b), a, b))
    lt, eq, ne, sel = evaluate(f.finish(), [x, y])
    assert_bitwise(lt, x < y)
    assert_bitwise(eq, x == y)
    assert_bitwise(ne, x != y)
    assert_bitwise(sel, np.where(x >= y, x, y))


# Data movement --------------------------------------------------------------------------------


@st.composite
def movement_programs(draw: st.DrawFn) -> tuple[Any, np.ndarray, np.ndarray]:
    """A random chain of transpose, reshape, slice, concat, broadcast, gather and reductions."""
    shape = draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=4))
    x = draw(hnp.arrays(np.int32, shape, elements=elements(DType.I32)))
    f = tb.FuncBuilder("move")
    value: Value = f.param("x", type_text(DType.I32, shape))
    cur = x
    for _ in range(draw(st.integers(1, 5))):
        kind = draw(st.sampled_from(["transpose", "reshape", "slice", "concat", "broadcast",
                                     "gather", "reduce"]))
        rank = cur.ndim
        if kind == "transpose":
            perm = draw(st.permutations(range(rank)))
            value, cur = tb.transpose(value, perm=perm), np.transpose(cur, perm)
        elif kind == "reshape":
            split = draw(st.integers(0, rank))
            new = [int(np.prod(cur.shape[:split])), int(np.prod(cur.shape[split:]))]
            value, cur = tb.reshape(value, shape=new), cur.reshape(new)
        elif kind == "slice":
            start, size, stride, index = [], [], [], []
            for n in cur.shape:
                st_ = draw(st.integers(0, max(n - 1, 0)))
                stride_ = draw(st.integers(1, 3))
                most = 0 if n == 0 else (n - 1 - st_) // stride_ + 1
                k = draw(st.integers(0, most))
                start.append(st_)
                stride.append(stride_)
                size.append(k)
                index.append(st_ + stride_ * np.arange(k))
            value = tb.slice(value, start=start, size=size, stride=stride)
            cur = cur[np.ix_(*index)]
        elif kind == "concat":
            axis = draw(st.integers(0, rank - 1))
            n = draw(st.integers(1, 3))
            value = tb.concat(*[value] * n, axis=axis)
            cur = np.concatenate([cur] * n, axis=axis)
        elif kind == "broadcast":
            at = draw(st.integers(0, rank))
            size = draw(st.integers(1, 3))
            expanded = [n if n != 1 else draw(st.integers(1, 3)) for n in cur.shape]
            out_shape = [*expanded[:at], size, *expanded[at:]]
            dims = [d if d < at else d + 1 for d in range(rank)]
            value = tb.broadcast(value, shape=out_shape, dims=dims)
            cur = np.broadcast_to(np.expand_dims(cur, at), out_shape).copy()
        elif kind == "gather":
            axes = [a for a in range(rank) if cur.shape[a] > 0]
            if not axes:
                continue
            axis = draw(st.sampled_from(axes))
            idx = draw(st.lists(st.integers(-5, cur.shape[axis] + 4), min_size=1, max_size=4))
            indices = tb.apply_op("dense", value=idx, dtype="i64")
            value = tb.gather(value, indices, axis=axis)
            cur = np.take(cur, np.clip(idx, 0, cur.shape[axis] - 1), axis=axis)
        else:
            name = draw(st.sampled_from(["reduce_sum", "reduce_max", "reduce_min"]))
            axes = draw(st.lists(st.integers(0, rank - 1), unique=True, max_size=rank))
            keep = draw(st.booleans())
            value = getattr(tb, name)(value, axes=axes, keepdims=keep)
            if name == "reduce_sum":
                cur = np.sum(cur, axis=tuple(axes), keepdims=keep, dtype=np.int32)
            else:
                fn, empty = ((np.max, np.iinfo(np.int32).min) if name == "reduce_max"
                             else (np.min, np.iinfo(np.int32).max))
                cur = fn(cur, axis=tuple(axes), keepdims=keep, initial=empty)
            cur = np.asarray(cur, np.int32)
            if cur.ndim == 0:
                cur = cur.reshape(1)
                value = tb.reshape(value, shape=[1])
    f.ret(value)
    return f.finish(), x, cur


@FAST
@given(movement_programs())
def test_movement_programs_match_numpy(program: tuple[Any, np.ndarray, np.ndarray]) -> None:
    func, x, expected = program
    (out,) = evaluate(func, [x])
    assert_bitwise(out, expected)


# Symbolic dims --------------------------------------------------------------------------------


@FAST
@given(st.integers(0, 5), st.integers(0, 5), st.data())
def test_symbolic_dims_bound_at_run_time(n: int, m: int, data: st.DataObject) -> None:
    ints = elements(DType.I32)
    x = data.draw(hnp.arrays(np.int32, (n, m), elements=ints))
    b = data.draw(hnp.arrays(np.int32, (m,), elements=ints))
    y = data.draw(hnp.arrays(np.int32, (m, n), elements=st.integers(-100, 100)))
    f = tb.FuncBuilder("sym")
    px, pb, py = f.param("x", "i32[N, M]"), f.param("b", "i32[M]"), f.param("y", "i32[M, N]")
    shifted = tb.add(px, tb.broadcast(pb, shape=["N", "M"], dims=[1]))
    f.ret(shifted,
          tb.reshape(shifted, shape=[Dim.of("N") * Dim.of("M")]),
          tb.concat(px, tb.transpose(py, perm=[1, 0]), axis=0),
          tb.reduce_sum(px, axes=[1]),
          tb.matmul(tb.clamp(px, min=-100, max=100), py),
          tb.mul(tb.apply_op("splat", value=3, shape=["N", "M"], dtype="i32"), px))
    outs = evaluate(f.finish(), [x, b, y])
    s = x + b
    expected = [s, s.reshape(n * m), np.concatenate([x, y.T]), np.sum(x, axis=1, dtype=np.int32),
                np.clip(x, -100, 100) @ y, x * np.int32(3)]
    assert len(outs) == len(expected)
    for out, want in zip(outs, expected, strict=True):
        assert_bitwise(out, want)


@FAST
@given(st.integers(0, 6))
def test_symbolic_slice_checked_at_run_time(n: int) -> None:
    f = tb.FuncBuilder("tail")
    x = f.param("x", "f64[N]")
    f.ret(tb.slice(x, start=[1], size=[Dim.of("N") - 1], stride=[1]))
    arr = np.arange(n, dtype=np.float64)
    func = f.finish()
    if n == 0:
        with pytest.raises(TcpError, match="N=0"):
            evaluate(func, [arr])
    else:
        (out,) = evaluate(func, [arr])
        assert_bitwise(out, arr[1:])


# Bad inputs -----------------------------------------------------------------------------------

ALL_NP = [np.float32, np.float64, np.int32, np.int64, np.bool_, np.float16, np.uint8, np.int16]


@FAST
@given(st.sampled_from(list(DType)), st.sampled_from(ALL_NP), st.integers(0, 4))
def test_wrong_dtype_is_refused(dtype: DType, given_np: type, n: int) -> None:
    f = tb.FuncBuilder("id")
    x = f.param("x", type_text(dtype, ("N",)))
    f.ret(tb.reshape(x, shape=["N"]))
    arr = np.zeros(n, dtype=given_np)
    if np.dtype(given_np) == dtype.np_dtype:
        (out,) = evaluate(f.finish(), [arr])
        assert_bitwise(out, arr)
    else:
        with pytest.raises(TcpError, match="has dtype"):
            evaluate(f.finish(), [arr])


@FAST
@given(st.integers(0, 3), hnp.array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=3))
def test_wrong_rank_is_refused(rank: int, shape: tuple[int, ...]) -> None:
    f = tb.FuncBuilder("id")
    x = f.param("x", type_text(DType.F32, tuple(f"S{i}" for i in range(rank))))
    f.ret(tb.neg(x))
    arr = np.ones(shape, np.float32)
    if len(shape) == rank:
        (out,) = evaluate(f.finish(), [arr])
        assert_bitwise(out, -arr)
    else:
        with pytest.raises(TcpError, match="has rank"):
            evaluate(f.finish(), [arr])


@FAST
@given(st.integers(0, 5), st.integers(0, 5))
def test_symbol_bound_to_two_sizes_is_refused(n1: int, n2: int) -> None:
    f = tb.FuncBuilder("pair")
    x, y = f.param("x", "f32[N]"), f.param("y", "f32[N]")
    f.ret(tb.add(x, y))
    a, b = np.ones(n1, np.float32), np.full(n2, 2.0, np.float32)
    if n1 == n2:
        (out,) = evaluate(f.finish(), [a, b])
        assert_bitwise(out, np.full(n1, 3.0, np.float32))
    else:
        with pytest.raises(TcpError, match="symbol N is bound to"):
            evaluate(f.finish(), [a, b])


@FAST
@given(st.integers(0, 4), st.integers(0, 4))
def test_symbol_repeated_within_one_input(n: int, m: int) -> None:
    f = tb.FuncBuilder("square")
    x = f.param("x", "i64[N, N]")
    f.ret(tb.transpose(x, perm=[1, 0]))
    arr = np.arange(n * m, dtype=np.int64).reshape(n, m)
    if n == m:
        (out,) = evaluate(f.finish(), [arr])
        assert_bitwise(out, arr.T)
    else:
        with pytest.raises(TcpError, match="symbol N is bound to"):
            evaluate(f.finish(), [arr])


def test_other_bad_inputs_are_refused() -> None:
    f = tb.FuncBuilder("fixed")
    x = f.param("x", "f32[3]")
    f.ret(tb.abs(x))
    func = f.finish()
    with pytest.raises(TcpError, match="takes 1 input"):
        evaluate(func, [])
    with pytest.raises(TcpError, match="has shape"):
        evaluate(func, [np.zeros(4, np.float32)])
    with pytest.raises(TcpError, match="must be a NumPy array"):
        evaluate(func, [[1.0, 2.0, 3.0]])


def test_composite_dim_checked_against_its_symbols() -> None:
    f = tb.FuncBuilder("flat")
    x, y = f.param("x", "f32[N, 2]"), f.param("y", "f32[N*2]")
    f.ret(tb.add(tb.reshape(x, shape=[Dim.of("N") * 2]), y))
    func = f.finish()
    (out,) = evaluate(func, [np.ones((3, 2), np.float32), np.ones(6, np.float32)])
    assert_bitwise(out, np.full(6, 2.0, np.float32))
    with pytest.raises(TcpError, match="has shape"):
        evaluate(func, [np.ones((3, 2), np.float32), np.ones(5, np.float32)])


def test_negative_dim_at_run_time_is_refused() -> None:
    f = tb.FuncBuilder("neg_dim")
    x = f.param("x", "f32[N]")
    fill = tb.apply_op("splat", value=1.0, shape=[Dim.of("N") - 4], dtype="f32")
    f.ret(tb.concat(x, fill, axis=0))
    func = f.finish()
    (out,) = evaluate(func, [np.zeros(5, np.float32)])
    assert_bitwise(out, np.array([0, 0, 0, 0, 0, 1], np.float32))
    with pytest.raises(TcpError, match="negative dim"):
        evaluate(func, [np.zeros(2, np.float32)])
