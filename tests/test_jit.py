"""``@tcp_rules.jit`` on functions written with tcp_rules.numpy: results against NumPy's, the
per-signature cache, NumPy's typing rules made explicit, and errors at the user's line.

Results are compared with NumPy's own evaluation of the same function within a bound derived
from the computation (tests/numerics.py): NumPy's result is within E(traced program) of the
exact one and the compiled optimized program within E(optimized program), so the two are within
the sum (the optimizer's rules hold over the reals).
"""

from __future__ import annotations

import math
import operator
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from codegen.support import tcpr_cache  # noqa: F401
from hypothesis import given, settings
from hypothesis import strategies as st
from numerics import assert_within, error_bounds

import tcp_rules
import tcp_rules.numpy as tnp
from tcp_rules.diagnostics import TcpError
from tcp_rules.interpret import evaluate
from tcp_rules.ops import OPS
from tcp_rules.printer import print_func
from tcp_rules.rules.library import load_standard_library
from tcp_rules.tracing.jitted import Jitted

ROOT = Path(__file__).parent.parent


def softmax(x: Any) -> Any:
    e = tnp.exp(x - tnp.max(x, axis=-1, keepdims=True))
    return e / tnp.sum(e, axis=-1, keepdims=True)


def layernorm(x: Any, g: Any, b: Any, eps: float = 1e-5) -> Any:
    mu = tnp.mean(x, axis=-1, keepdims=True)
    d = x - mu
    var = tnp.mean(d * d, axis=-1, keepdims=True)
    return d / tnp.sqrt(var + eps) * g + b


def np_softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - np.max(x, axis=-1, keepdims=True))
    return e / np.sum(e, axis=-1, keepdims=True)


def np_layernorm(x: np.ndarray, g: np.ndarray, b: np.ndarray, eps: float = 1e-5) -> np.ndarray:
    mu = np.mean(x, axis=-1, keepdims=True)
    d = x - mu
    var = np.mean(d * d, axis=-1, keepdims=True)
    return d / np.sqrt(var + eps) * g + b


def assert_matches(f: Jitted, args: tuple[Any, ...], want: Any) -> None:
    """``f(*args)`` is within E(traced) + E(optimized) of NumPy's ``want``, dtype and shape
    included."""
    got = f(*args)
    spec = f.specialization(*args)
    arrays = [args[i] for i in spec.arrays]
    _, e_traced = error_bounds(spec.traced, arrays)
    _, e_program = error_bounds(spec.program, arrays)
    gots = got if isinstance(got, tuple) else (got,)
    wants = want if isinstance(want, tuple) else (want,)
    for i, (g, w) in enumerate(zip(gots, wants, strict=True)):
        assert_within(g, np.asarray(w), e_traced[i] + e_program[i], f"{f.name} result {i}")


# Hypothesis over shapes: symbolic dims give one program per dtype (the static path, one
# program per shape, is tested below on a few shapes).
SOFTMAX = tcp_rules.jit(softmax, symbolic={"x": ("N", "D")})
LAYERNORM = tcp_rules.jit(layernorm, symbolic={"x": ("N", None)})
FLOATS = st.sampled_from([np.float32, np.float64])


@settings(max_examples=30, deadline=None)
@given(st.integers(1, 6), st.integers(1, 70), st.floats(0.01, 30), FLOATS, st.integers(0, 2**32))
def test_softmax_matches_numpy(n: int, d: int, scale: float, dtype: Any, seed: int) -> None:
    x = (np.random.default_rng(seed).standard_normal((n, d)) * scale).astype(dtype)
    assert_matches(SOFTMAX, (x,), np_softmax(x))


@settings(max_examples=30, deadline=None)
@given(st.integers(1, 6), st.sampled_from([1, 24]), st.floats(0.01, 30), FLOATS,
       st.integers(0, 2**32))
def test_layernorm_matches_numpy(n: int, d: int, scale: float, dtype: Any, seed: int) -> None:
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal((n, d)) * scale + rng.standard_normal()).astype(dtype)
    g, b = (rng.standard_normal(d).astype(dtype) for _ in range(2))
    assert_matches(LAYERNORM, (x, g, b), np_layernorm(x, g, b))


def test_static_shapes_one_program_per_signature() -> None:
    calls: list[tuple[int, ...]] = []

    @tcp_rules.jit
    def f(x: Any) -> Any:
        calls.append(x.shape)
        return softmax(x)

    rng = np.random.default_rng(0)
    x = rng.standard_normal((3, 9)).astype(np.float32)
    assert_matches(f, (x,), np_softmax(x))
    assert f(x + 1).shape == (3, 9)
    assert calls == [(3, 9)] and f.signatures == 1  # traced once, called again
    y = rng.standard_normal((2, 4)).astype(np.float32)
    assert_matches(f, (y,), np_softmax(y))
    assert_matches(f, (y.astype(np.float64),), np_softmax(y.astype(np.float64)))
    assert calls == [(3, 9), (2, 4), (2, 4)] and f.signatures == 3
    assert "x: f32[2, 4]" in print_func(f.lower(y))  # concrete dims from the call
    assert f.report is not None and f.report.cost_after <= f.report.cost_before


def test_layernorm_static_and_options() -> None:
    rng = np.random.default_rng(1)
    x = rng.standard_normal((4, 16)).astype(np.float32)
    g, b = rng.standard_normal(16).astype(np.float32), rng.standard_normal(16).astype(np.float32)
    plain = tcp_rules.jit(layernorm, optimize=False, threads=1)
    assert_matches(plain, (x, g, b), np_layernorm(x, g, b))
    assert plain.report is None and plain.lower(x, g, b, optimized=True) is plain.lower(x, g, b)
    exact = tcp_rules.jit(layernorm, allow=("exact",))
    assert_matches(exact, (x, g, b), np_layernorm(x, g, b))
    kinds = {r.name: r.soundness.kind for r in load_standard_library().rules}
    assert exact.report is not None and exact.report.matches
    fired = {kinds[name.removesuffix("<=")] for name in exact.report.matches}
    assert fired == {"exact"}
    default = tcp_rules.jit(layernorm)
    default(x, g, b)
    assert default.report is not None
    assert "approx" in {kinds[n.removesuffix("<=")] for n in default.report.matches}


def test_static_arguments_and_tuples() -> None:
    traced: list[object] = []

    @tcp_rules.jit
    def f(x: Any, k: float, *, mode: str = "add") -> Any:
        traced.append((k, mode))
        y = x + k if mode == "add" else x * k
        return y, tnp.sum(y, axis=0)

    x = np.arange(6, dtype=np.float64).reshape(2, 3)
    for k, mode in [(2.0, "add"), (2.0, "add"), (3.0, "add"), (2.0, "mul")]:
        y, s = f(x, k, mode=mode)
        want = x + k if mode == "add" else x * k
        np.testing.assert_array_equal(y, want)
        np.testing.assert_array_equal(s, want.sum(axis=0))
    assert traced == [(2.0, "add"), (3.0, "add"), (2.0, "mul")]
    assert [p.param for p in f.lower(x, 2.0).params] == ["x"]  # statics are no parameters
    # a non-contiguous view is accepted, as NumPy functions accept it
    np.testing.assert_array_equal(f(x.T.copy().T, 1.0)[0], x + 1)
    with pytest.raises(TcpError, match="not hashable"):
        f(x, [1.0])
    # NumPy scalars are traced as 0-d arrays; results may be constants
    g = tcp_rules.jit(lambda s, v: (s * v, v, np.float32(3)))
    v = np.arange(3, dtype=np.float32)
    got = g(np.float32(2), v)
    assert [(r.dtype, r.shape) for r in got] == [(np.float32, (3,)), (np.float32, (3,)),
                                                 (np.float32, ())]
    np.testing.assert_array_equal(got[0], 2 * v)
    np.testing.assert_array_equal(got[1], v)
    assert got[2] == 3


def test_numpy_promotion_and_weak_scalars() -> None:
    @tcp_rules.jit
    def f(a: Any, b: Any, i: Any, j: Any) -> Any:
        return a * 2.5, a + b, i * 0.5, i + j, i + 3, a + i, i / j, a > 1, tnp.mean(i)

    rng = np.random.default_rng(2)
    a = rng.standard_normal((3, 1)).astype(np.float32)
    b = rng.standard_normal(4)  # f64, broadcast
    i = rng.integers(-50, 50, (3, 4)).astype(np.int32)
    j = rng.integers(1, 50, 4).astype(np.int64)
    got = f(a, b, i, j)
    want = (a * 2.5, a + b, i * 0.5, i + j, i + 3, a + i, i / j, a > 1, np.mean(i))
    for g, w in zip(got, want, strict=True):
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_array_equal(g, w)  # single roundings: the same bits
    with pytest.raises(TcpError, match="out of bounds for int32"):
        tcp_rules.jit(lambda x: x + 2**40).lower(i)


ARRAY_DTYPES = [np.bool_, np.int8, np.uint8, np.int32, np.int64, np.float32, np.float64]
NUMPY_BINARY: dict[str, tuple[Any, Any]] = {
    "+": (operator.add, operator.add), "-": (operator.sub, operator.sub),
    "*": (operator.mul, operator.mul), "/": (operator.truediv, operator.truediv),
    "maximum": (np.maximum, tnp.maximum), "minimum": (np.minimum, tnp.minimum),
    "<": (operator.lt, operator.lt), "==": (operator.eq, operator.eq),
}


@st.composite
def operand_pairs(draw: st.DrawFn) -> tuple[Any, Any]:
    """Two operands whose shapes may or may not broadcast (axes dropped, set to 1 or changed),
    of any dtype, one of them possibly a Python scalar."""
    base = draw(st.lists(st.integers(1, 4), max_size=3))
    rng = np.random.default_rng(draw(st.integers(0, 2**32)))

    def operand() -> Any:
        dims = base[draw(st.integers(0, len(base))):]
        dims = [draw(st.sampled_from([d, d, 1, draw(st.integers(1, 4))])) for d in dims]
        dt = np.dtype(draw(st.sampled_from(ARRAY_DTYPES)))
        if dt.kind == "f":
            return rng.standard_normal(dims).astype(dt)
        lo = 0 if dt.kind in "bu" else -100
        return rng.integers(lo, 2 if dt.kind == "b" else 100, dims).astype(dt)

    a, b = operand(), operand()
    scalar = draw(st.sampled_from([None, None, True, 3, 0, 2.5, -1.0]))
    if scalar is not None:
        return (a, scalar) if draw(st.booleans()) else (scalar, a)
    return a, b


@settings(max_examples=150, deadline=None)
@given(operand_pairs(), st.sampled_from(sorted(NUMPY_BINARY)))
def test_binary_ops_promote_and_broadcast_as_numpy(pair: tuple[Any, Any], name: str) -> None:
    """The traced program means what NumPy computes: the same dtype (NumPy 2's promotion, weak
    Python scalars), the same broadcast shape, the same values (each op rounds once, so bit
    for bit, as the reference interpreter evaluates the program); where NumPy refuses the
    operands, tracing refuses them."""
    np_op, tnp_op = NUMPY_BINARY[name]
    a, b = pair
    try:
        with np.errstate(all="ignore"):
            want = np.asarray(np_op(a, b))
    except (ValueError, TypeError, OverflowError):
        with pytest.raises(TcpError):
            tcp_rules.jit(lambda x, y: tnp_op(x, y), optimize=False).lower(a, b)
        return
    func = tcp_rules.jit(lambda x, y: tnp_op(x, y)).lower(a, b)
    with np.errstate(all="ignore"):
        (got,) = evaluate(func, [v for v in pair if isinstance(v, np.ndarray)])
    assert (got.dtype, got.shape) == (want.dtype, want.shape)
    np.testing.assert_array_equal(got, want)


NUMPY_UNARY: dict[str, tuple[Any, Any]] = {
    "exp": (np.exp, tnp.exp), "log": (np.log, tnp.log), "sqrt": (np.sqrt, tnp.sqrt),
    "tanh": (np.tanh, tnp.tanh), "floor": (np.floor, tnp.floor), "rint": (np.rint, tnp.rint),
    "neg": (operator.neg, operator.neg), "abs": (np.abs, tnp.abs),
    "sum": (np.sum, tnp.sum), "prod": (np.prod, tnp.prod), "max": (np.max, tnp.max),
    "min": (np.min, tnp.min), "mean": (np.mean, tnp.mean), "var": (np.var, tnp.var),
}


@settings(max_examples=120, deadline=None)
@given(st.lists(st.integers(1, 4), max_size=3), st.sampled_from(ARRAY_DTYPES),
       st.sampled_from(sorted(NUMPY_UNARY)), st.data())
def test_unary_and_reductions_as_numpy(dims: list[int], dtype: Any, name: str,
                                       data: st.DataObject) -> None:
    """Unary functions and reductions (random axes, keepdims) give NumPy's dtype and shape
    (an integer's exp in NumPy's ufunc loop, f16 for int8; sums of small integers in 64 bits)
    and its values within the bound of the computation; NumPy's refusals are refused."""
    np_op, tnp_op = NUMPY_UNARY[name]
    x = np.random.default_rng(data.draw(st.integers(0, 2**32))).standard_normal(dims) * 3
    x = np.abs(x) if name in ("log", "sqrt") else x
    x = np.asarray(x).astype(dtype)  # 0-d: an array, not a NumPy scalar
    kwargs: dict[str, Any] = {}
    if name in ("sum", "prod", "max", "min", "mean", "var"):
        axis = st.integers(-len(dims), len(dims) - 1) if dims else st.nothing()
        axes = data.draw(st.none() | st.lists(axis, unique=True, max_size=2 if dims else 0))
        kwargs = {"axis": None if axes is None else tuple(axes), "keepdims": data.draw(
            st.booleans())}
    try:
        with np.errstate(all="ignore"):
            want = np.asarray(np_op(x, **kwargs))
    except (ValueError, TypeError):
        with pytest.raises(TcpError):
            tcp_rules.jit(lambda v, **kw: tnp_op(v, **kw)).lower(x, **kwargs)
        return
    if len({i % max(len(dims), 1) for i in kwargs.get("axis") or ()}) < len(
            kwargs.get("axis") or ()):
        return  # the same axis twice, negative and positive: refused by both (checked above)
    func = tcp_rules.jit(lambda v, **kw: tnp_op(v, **kw)).lower(x, **kwargs)
    with np.errstate(all="ignore"):
        (got,), (bound,) = error_bounds(func, [x])
    assert (got.dtype, got.shape) == (want.dtype, want.shape)
    assert_within(got, want, 2 * bound, name)


@st.composite
def basic_indices(draw: st.DrawFn, shape: tuple[int, ...]) -> Any:
    """A basic NumPy index of an array of ``shape``: integers, slices (positive steps), one
    ``...`` and ``None``s, out-of-range and negative bounds included."""
    items: list[Any] = []
    axes = draw(st.integers(0, len(shape)))
    for n in shape[:axes]:
        kind = draw(st.sampled_from(["int", "slice", "slice", "full", "none"]))
        if kind == "int":
            items.append(draw(st.integers(-n, n - 1)))
        elif kind == "slice":
            bound = st.none() | st.integers(-n - 2, n + 2)
            items.append(slice(draw(bound), draw(bound), draw(st.none() | st.integers(1, 3))))
        elif kind == "full":
            items.append(slice(None))
        else:
            items += [None, slice(None)]
    if draw(st.booleans()):
        items.insert(draw(st.integers(0, len(items))), Ellipsis)
    return tuple(items) if len(items) != 1 or draw(st.booleans()) else items[0]


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(1, 4), min_size=1, max_size=3).map(tuple), st.data())
def test_indexing_and_shapes_as_numpy(shape: tuple[int, ...], data: st.DataObject) -> None:
    """Basic indexing, reshape with -1, transpose and concatenate mean what NumPy's do (the
    traced program, as the reference interpreter runs it, gives NumPy's array exactly), and
    an index NumPy refuses is refused."""
    x = np.arange(math.prod(shape), dtype=np.int32).reshape(shape)
    index = data.draw(basic_indices(shape))
    perm = data.draw(st.permutations(range(len(shape))))
    size = x.size
    cols = data.draw(st.sampled_from([d for d in range(1, size + 1) if size % d == 0]))

    def f(v: Any, m: Any = tnp) -> Any:  # m: NumPy or tcp_rules.numpy
        return v[index], m.transpose(v, perm), v.reshape(-1, cols), \
            m.concatenate([v, v[..., :1]], axis=-1)

    try:
        want = f(x, np)
    except IndexError:  # the index is out of range where ``...`` moved it: refused alike
        with pytest.raises(TcpError, match="out of bounds"):
            tcp_rules.jit(f).lower(x)
        return
    got = evaluate(tcp_rules.jit(f).lower(x), [x])
    for g, w in zip(got, want, strict=True):
        assert (g.dtype, g.shape) == (w.dtype, w.shape)
        np.testing.assert_array_equal(g, w)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(1, 3), max_size=2), st.lists(st.integers(1, 3), max_size=2),
       st.integers(1, 4), st.integers(1, 4), st.integers(1, 4), st.booleans(), st.booleans(),
       st.integers(0, 2**32))
def test_matmul_as_numpy(batch_a: list[int], batch_b: list[int], m: int, k: int, n: int,
                         vec_a: bool, vec_b: bool, seed: int) -> None:
    """matmul's 1-d operands and broadcast batch dims as NumPy's: the same shape and dtype,
    the values within the dot products' bound; shapes NumPy refuses are refused."""
    rng = np.random.default_rng(seed)
    a = rng.standard_normal([k] if vec_a else [*batch_a, m, k])
    b = rng.standard_normal([k] if vec_b else [*batch_b, k, n]).astype(np.float32)
    try:
        want = np.matmul(a, b)
    except ValueError:
        with pytest.raises(TcpError):
            tcp_rules.jit(lambda x, y: x @ y).lower(a, b)
        return
    func = tcp_rules.jit(lambda x, y: x @ y).lower(a, b)
    (got,), (bound,) = error_bounds(func, [a, b])
    assert (got.dtype, got.shape) == (want.dtype, want.shape)
    assert_within(got, want, 2 * bound, "matmul")


def test_movement_and_matmul() -> None:
    @tcp_rules.jit
    def f(x: Any, y: Any, v: Any, idx: Any) -> Any:
        return (x[1:3, ::2], x[..., 0], x[None, -1], tnp.concatenate([x, y], axis=1),
                x.reshape(-1, 2), tnp.stack([x, y], axis=1), x.T, tnp.swapaxes(x, 0, 1),
                tnp.take(x, idx, axis=1, mode="clip"), tnp.where(x > 0, x, 0.0),
                tnp.clip(x, -0.5, 0.5), tnp.pad(x, 1, mode="edge"), tnp.squeeze(x[:1]),
                tnp.expand_dims(v, 0), tnp.broadcast_to(v, (2, 4)), np.exp(x), np.sum(x, 0),
                x.max(axis=1, keepdims=True), tnp.prod(y, axis=1), tnp.minimum(x, y))

    rng = np.random.default_rng(3)
    x, y = (rng.standard_normal((3, 4)).astype(np.float32) for _ in range(2))
    v = rng.standard_normal(4).astype(np.float32)
    idx = np.array([0, 5, -2], dtype=np.int64)  # clamped, as take(mode="clip")
    want = (x[1:3, ::2], x[..., 0], x[None, -1], np.concatenate([x, y], axis=1),
            x.reshape(-1, 2), np.stack([x, y], axis=1), x.T, np.swapaxes(x, 0, 1),
            np.take(x, idx, axis=1, mode="clip"), np.where(x > 0, x, 0.0).astype(np.float32),
            np.clip(x, -0.5, 0.5), np.pad(x, 1, mode="edge"), np.squeeze(x[:1]),
            np.expand_dims(v, 0), np.broadcast_to(v, (2, 4)), np.exp(x), np.sum(x, 0),
            x.max(axis=1, keepdims=True), np.prod(y, axis=1), np.minimum(x, y))
    assert_matches(f, (x, y, v, idx), want)

    @tcp_rules.jit
    def mm(a: Any, b: Any, c: Any, w: Any) -> Any:
        return a @ b, tnp.matmul(c, b), a @ w, w @ b, tnp.dot(a, b)

    a, b = rng.standard_normal((3, 5)), rng.standard_normal((5, 2))
    c, w = rng.standard_normal((2, 2, 3, 5)), rng.standard_normal(5)
    assert_matches(mm, (a, b, c, w), (a @ b, np.matmul(c, b), a @ w, w @ b, np.dot(a, b)))


SPELL_ENV = {"x": np.ones((3, 4), np.float32), "y": np.ones((3, 4), np.float32),
             "i": np.zeros(2, np.int64)}


@pytest.mark.parametrize("op", sorted(OPS))
def test_every_op_has_a_spelling(op: str) -> None:
    """Each op of the op table is written some way with tcp_rules.numpy (and that spelling
    traces to it), or is named as not exposed with the reason."""
    if op in tnp.NOT_EXPOSED:
        assert op not in tnp.OP_SPELLINGS
        return
    spelling = tnp.OP_SPELLINGS[op]
    scope = {"lo": -1.0, "hi": 1.0, "dtype": "float64", "v": 2.0, "width": 1, "axis": 1,
             "shape": (4, 3)}

    def f(x: Any, y: Any, i: Any) -> Any:
        return eval(spelling, {**vars(tnp), **scope, "c": x > y}, {"x": x, "y": y, "i": i})

    func = tcp_rules.jit(f).lower(*SPELL_ENV.values())
    assert op in {a.op.name for a in func.ops()}, f"{spelling} traces to no {op}"


def _line_of(text: str) -> int:
    lines = Path(__file__).read_text().splitlines()
    return next(n for n, line in enumerate(lines, 1) if text in line)


def bad_broadcast(x: Any, y: Any) -> Any:
    z = tnp.exp(x)
    return z + y  # the line of the error


def bad_branch(x: Any) -> Any:
    if tnp.sum(x) > 0:  # branch on a traced value
        return x
    return -x


def bad_op(x: Any) -> Any:
    return x // 2  # no floor division


def bad_dtype(x: Any) -> Any:
    return tnp.take(x, x, axis=0, mode="clip")  # float indices


@pytest.mark.parametrize(("fn", "args", "marker", "message"), [
    (bad_broadcast, (np.ones((3, 4)), np.ones(3)), "the line of the error",
     r"shapes \(3, 4\) and \(3,\) do not broadcast"),
    (bad_branch, (np.ones(3),), "branch on a traced", "no truth value"),
    (bad_op, (np.ones(3),), "no floor division", "// is not supported"),
    (bad_dtype, (np.ones(3),), "float indices", "indices must be integers"),
])
def test_errors_point_at_the_users_line(fn: Any, args: tuple[Any, ...], marker: str,
                                        message: str) -> None:
    f = tcp_rules.jit(fn)
    with pytest.raises(TcpError, match=message) as info:
        f(*args)
    span = info.value.diagnostics[0].span
    assert span is not None and Path(span.source.name) == Path(__file__)
    assert span.line == _line_of(marker)
    assert info.value.render().startswith(f"{__file__}:{span.line}:")


def test_wrong_argument_dtype_points_at_the_call() -> None:
    f = tcp_rules.jit(softmax)
    with pytest.raises(TcpError, match="complex64, which TCP does not support") as info:
        f(np.ones(3, np.complex64))  # the call
    span = info.value.diagnostics[0].span
    assert span is not None and span.line == _line_of("f(np.ones(3, np.complex64))  # the call")


def test_import_stays_cheap() -> None:
    """``import tcp_rules`` loads no tracing code; ``tcp_rules.jit`` loads it when used."""
    script = ("import sys, tcp_rules; before = 'tcp_rules.tracing' in sys.modules; "
              "tcp_rules.jit; print(before, 'tcp_rules.tracing.jitted' in sys.modules, "
              "'llvmlite' in sys.modules, 'egglog' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         check=True, env={"PYTHONPATH": str(ROOT)}).stdout.split()
    assert out == ["False", "True", "False", "False"]


def test_bench_suite_row() -> None:
    """``tcpr bench --suite jit`` measures what it says on a workload (numbers not asserted)."""
    from tcp_rules.benchjit import measure, workloads

    row = measure(workloads()[0], repeats=1, threads=1)
    assert row["workload"] == "softmax-small" and row["kernels_compiled"] + \
        row["kernels_from_disk"] >= 1
    assert row["overhead_us"] == pytest.approx(row["later_call_us"] - row["compiled_call_us"],
                                               abs=0.011)
    assert row["wrapper_us"] > 0


def test_nested_jit_inlines_and_options_reach_the_optimizer() -> None:
    from tcp_rules.egraph.saturate import Limits
    from tcp_rules.optimize import OptOptions

    inner = tcp_rules.jit(lambda x: tnp.exp(x))
    outer = tcp_rules.jit(lambda x: inner(x) + 1, options=OptOptions(limits=Limits(iterations=1)))
    x = np.linspace(-1, 1, 5)
    assert_matches(outer, (x,), np.exp(x) + 1)
    assert inner.signatures == 0  # traced into outer, never compiled on its own
    assert {a.op.name for a in outer.lower(x).ops()} == {"exp", "add", "splat"}
    assert outer.report is not None
    phases = [it["phase"] for it in outer.report.iterations]
    assert all(phases.count(p) <= 1 for p in set(phases))  # one iteration per phase


def bad_symbolic_mean(x: Any) -> Any:
    return tnp.mean(x, axis=0)  # over the symbolic axis


def test_symbolic_dims() -> None:
    f = tcp_rules.jit(lambda x: tnp.sum(x, axis=1) * 2, symbolic={"x": ("N", None)})
    for n in (3, 5, 1):
        x = np.arange(4 * n, dtype=np.int32).reshape(n, 4)
        np.testing.assert_array_equal(f(x), x.sum(axis=1) * 2)
    assert f.signatures == 1 and "x: i32[N, 4]" in print_func(f.lower(x))
    f(np.ones((2, 6), np.int32))  # the concrete axis changed: a second program
    assert f.signatures == 2
    with pytest.raises(TcpError, match="gives 2 dims for parameter 'x', which has 1"):
        f(np.ones(3, np.int32))
    with pytest.raises(TcpError, match="symbolic names no parameter of"):
        tcp_rules.jit(softmax, symbolic={"y": ("N",)})
    g = tcp_rules.jit(bad_symbolic_mean, symbolic={"x": ("N",)})
    with pytest.raises(TcpError, match="needs its size, which is symbolic") as info:
        g(np.ones(3))
    span = info.value.diagnostics[0].span
    assert span is not None and span.line == _line_of("# over the symbolic axis")


def test_the_docs_worked_example() -> None:
    """docs/frontends/jit.md's example runs, and the program it shows is what it traces to."""
    doc = (ROOT / "docs" / "frontends" / "jit.md").read_text()
    code = doc.split("```python\n", 1)[1].split("```", 1)[0]
    scope: dict[str, Any] = {}
    exec(compile(code, "jit.md", "exec"), scope)
    shown = doc.split(">>> print(print_func(layernorm.lower(x, gamma, beta)))\n", 1)[1]
    shown = shown.split("```", 1)[0]
    f = scope["layernorm"]
    args = (scope["x"], scope["gamma"], scope["beta"])
    assert print_func(f.lower(*args)) + "\n" == shown
    assert "kernel(" in print_func(f.lower(*args, optimized=True))
    assert_matches(f, args, np_layernorm(*args))
