"""Print -> parse round trips: the canonical printer's text means the same program.

Goldens: tests/goldens/programs/NAME.tcp (canonical print of each example) and
tests/goldens/ast/mlp.txt (the ``--emit ast`` dump of mlp).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tcp_rules import build as tb
from tcp_rules.diagnostics import Source
from tcp_rules.elaborate import load_program
from tcp_rules.grammar.ast import format_ast
from tcp_rules.grammar.parser import parse_program
from tcp_rules.ir import Apply, Func, Module, Value, same_func, same_module
from tcp_rules.pipeline import EmitStop, Emitter, load_module_file
from tcp_rules.printer import print_module
from tcp_rules.resources import example_path, example_paths
from tcp_rules.types import DType, dims_product

ROOT = Path(__file__).parent.parent
EXAMPLES = example_paths()

# The mlp program exactly as the design (README, tcp.lark) writes it.
DESIGN_MLP = """\
func mlp(x: f32[N, 784], w: f32[784, 128], b: f32[128]) -> f32[N, 128] {
  h = matmul(x, w)
  y = max(add(h, broadcast(b, shape=[N, 128], dims=[1])), 0.0)
  return y
}
"""


def reparse(module: Module, name: str = "printed.tcp") -> Module:
    return load_program(Source(name, print_module(module)))


def assert_round_trips(module: Module) -> str:
    """Printing parses back to an equal module, and printing that prints the same text."""
    text = print_module(module)
    again = load_program(Source("printed.tcp", text))
    assert same_module(module, again), f"print -> parse changed the program:\n{text}"
    assert print_module(again) == text, "printing is not idempotent"
    return text


# Bundled examples ------------------------------------------------------------------------------

@pytest.mark.parametrize("path", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_example_round_trips(path: Path, golden: Callable[[str, str], None]) -> None:
    module = load_module_file(path)
    text = assert_round_trips(module)
    golden(f"programs/{path.stem}.tcp", text)


def test_mlp_ast_dump(golden: Callable[[str, str], None]) -> None:
    printed: list[str] = []
    with pytest.raises(EmitStop):
        load_module_file(example_path("mlp"), Emitter("ast", write=printed.append))
    (text,) = printed
    assert text == format_ast(parse_program(Source("mlp.tcp", example_path("mlp").read_text())))
    golden("ast/mlp.txt", text + "\n")


def test_design_mlp_parses_exactly_as_written() -> None:
    example = example_path("mlp").read_text().splitlines(keepends=True)
    assert example[0].startswith("#")
    assert "".join(example[1:]) == DESIGN_MLP
    module = load_program(Source("design.tcp", DESIGN_MLP))
    assert same_module(module, load_module_file(example_path("mlp")))
    assert print_module(module) == DESIGN_MLP  # the design's text is already canonical
    readme = (ROOT / "README.md").read_text()
    assert DESIGN_MLP in readme
    grammar = (ROOT / "tcp_rules" / "grammar" / "tcp.lark").read_text()
    assert "".join(f"//   {line}\n" for line in DESIGN_MLP.splitlines()) in grammar


# Hand-picked programs --------------------------------------------------------------------------

ROUND_TRIP_PROGRAMS = {
    "special_literals": """
        func f(x: f32[N], y: f64[N]) -> (f32[N], f64[N], f32[N]) {
          a = add(mul(x, -0.0), 1e-300)
          b = select(gt(y, inf), -inf, y)
          return max(a, 5e-324), add(b, 1e+300), min(x, -1)
        }""",
    "nan_signs": """
        func f(x: f32[2]) -> (f32[2], f32[2]) {
          return add(x, dense(value=[-nan, nan], dtype=f32)), clamp(x, min=-nan)
        }""",
    "integers": """
        func f(x: i64[N], y: i32[N]) -> (i64[N], i32[N], i1[N]) {
          return add(x, -9223372036854775808), div(y, 2.0), select(lt(y, 0), true, 0)
        }""",
    "constants": """
        func f(x: f32[2, 2]) -> (f32[2, 2], i32[3], f32[N, 2], f32[0]) {
          d = dense(value=[[1, 2.5], [-3, 4]], dtype=f32)
          return add(x, d), dense(value=[1, 2, 3], dtype=i32),
                 splat(value=0.5, shape=[N, 2], dtype=f32), dense(value=[], dtype=f32)
        }""",
    "named_and_shared": """
        func f(x: f32[N, 4]) -> (f32[N, 4], f32[N]) {
          zero = splat(value=0.0, shape=[N, 4], dtype=f32)
          r = max(x, zero)
          s = reduce_sum(mul(r, r), axes=[1], keepdims=false)
          return add(r, broadcast(s, shape=[N, 4], dims=[0])), s
        }""",
    "symbolic_dims": """
        func f(x: f32[N, 8], y: f32[4 - N], z: f32[2*N + M*N]) -> (f32[N, 8 - N], f32[4 - N],
                                                                 f32[N*(M + 2)]) {
          return slice(x, start=[0, 0], size=[N, 8 - N], stride=[1, 1]), neg(y),
                 reshape(z, shape=[N*M + N*2])
        }""",
    "movement": """
        func f(x: f32[2, 3, N], i: i32[5]) -> (f32[N, 2, 3], f32[6*N], f32[2, 5, N], f32[4, 3, N]) {
          return transpose(x, perm=[2, 0, 1]), reshape(x, shape=[6*N]),
                 gather(x, i, axis=1), concat(x, x, axis=0)
        }""",
    "several_funcs": """
        func a(x: f32[N]) -> f32[N] {
          return clamp(x, min=-1.0, max=1)
        }

        func b(x: f32[N]) -> i32[N] {
          return cast(round_even(x), to=i32)
        }""",
}


@pytest.mark.parametrize("name", sorted(ROUND_TRIP_PROGRAMS))
def test_program_round_trips(name: str) -> None:
    text = "\n".join(line.removeprefix("        ") for line in
                     ROUND_TRIP_PROGRAMS[name].strip("\n").splitlines())
    assert_round_trips(load_program(Source(f"{name}.tcp", text)))


def test_dims_with_a_leading_negative_term_print_as_source() -> None:
    module = load_program(Source("neg.tcp", "func f(x: f32[0 - N + 4]) -> f32[4 - N] {\n"
                                            "  return x\n}\n"))
    text = assert_round_trips(module)
    assert text.startswith("func f(x: f32[4 - N]) -> f32[4 - N] {")


def test_long_let_chain_round_trips() -> None:
    n = 500
    body = "\n".join(f"  v{i + 1} = neg(v{i})" for i in range(n))
    text = f"func f(v0: f32[N]) -> f32[N] {{\n{body}\n  return v{n}\n}}\n"
    module = load_program(Source("chain.tcp", text))
    assert assert_round_trips(module) == text


def test_unnamed_shared_values_get_one_binding() -> None:
    f = tb.FuncBuilder("f")
    x = f.param("x", "f32[N]")
    e = tb.exp(x)
    f.ret(tb.add(e, e), e)
    text = print_module(Module((f.finish(),)))
    assert text.count("exp(") == 1
    assert_round_trips(Module((f.finish(),)))


# Random well-typed programs from the builder API -----------------------------------------------

PARAM_TYPES = ("f32[N, 4]", "f32[4]", "f32[N]", "f64[M, N]", "i32[N, 4]", "i64[N]", "i1[N, 4]",
               "f32[2, 3, N]", "f32[]")
FLOAT_UNARY = ("neg", "abs", "exp", "log", "sqrt", "rsqrt", "tanh", "sigmoid", "erf", "floor",
               "round", "round_even")
ARITH = ("add", "sub", "mul", "div", "max", "min")
COMPARE = ("eq", "ne", "lt", "le", "gt", "ge")
REDUCE = ("reduce_sum", "reduce_prod", "reduce_max", "reduce_min")
SIZES = ("N", "M", 4)


def scalars(dtype: DType) -> st.SearchStrategy[int | float | bool]:
    """Literals that fit ``dtype``: every float (inf, nan, -0.0, subnormals) or in-range ints."""
    if dtype.is_float:  # literals that overflow the dtype are refused
        if dtype is DType.BF16:  # f32's range, less the top values that round up to inf
            big = float(ml_dtypes.finfo(ml_dtypes.bfloat16).max)
            floats = st.one_of(st.floats(-big, big, width=32),
                               st.sampled_from([math.inf, -math.inf, math.nan]))
        else:
            floats = st.floats(width={DType.F16: 16, DType.F32: 32}.get(dtype, 64))
        return st.one_of(floats, st.integers(-1000, 1000))
    if dtype.is_bool:
        return st.one_of(st.booleans(), st.sampled_from([0, 1]))
    info = np.iinfo(dtype.np_dtype)
    return st.integers(int(info.min), int(info.max))


class Gen:
    """Draws random ops over a pool of typed values; each method returns a new value or None."""

    def __init__(self, draw: st.DrawFn, pool: list[Value]):
        self.draw, self.pool = draw, pool

    def pick(self, ok: Callable[[Value], bool]) -> Value | None:
        candidates = [v for v in self.pool if ok(v)]
        return self.draw(st.sampled_from(candidates)) if candidates else None

    def partner(self, v: Value) -> Value | int | float | bool:
        """Another operand of v's type: a value from the pool (maybe v itself) or a literal."""
        same = [u for u in self.pool if u.type == v.type]
        if self.draw(st.booleans()):
            return self.draw(st.sampled_from(same))
        return self.draw(scalars(v.type.dtype))

    def ordered(self, v: Value, other: object) -> list[object]:
        return [other, v] if self.draw(st.booleans()) else [v, other]

    def unary(self) -> Value | None:
        v = self.pick(lambda u: u.type.dtype.is_float)
        return tb.apply_op(self.draw(st.sampled_from(FLOAT_UNARY)), v) if v else None

    def arith(self) -> Value | None:
        v = self.pick(lambda u: not u.type.dtype.is_bool)
        if v is None:
            return None
        ops = ARITH + (("pow", "atan2") if v.type.dtype.is_float else ())
        return tb.apply_op(self.draw(st.sampled_from(ops)), *self.ordered(v, self.partner(v)))

    def compare(self) -> Value | None:
        v = self.draw(st.sampled_from(self.pool))
        return tb.apply_op(self.draw(st.sampled_from(COMPARE)),
                           *self.ordered(v, self.partner(v)))

    def select(self) -> Value | None:
        c = self.pick(lambda u: u.type.dtype.is_bool)
        if c is None:
            return None
        v = self.pick(lambda u: u.type.dims == c.type.dims)
        assert v is not None  # c itself qualifies
        x, y = self.ordered(v, self.partner(v))
        cond: object = c if self.draw(st.integers(0, 4)) else self.draw(st.booleans())
        return tb.select(cond, x, y)

    def clamp(self) -> Value | None:
        v = self.pick(lambda u: not u.type.dtype.is_bool)
        if v is None:
            return None
        # a bound is a literal of v's dtype (scalars gives those that fit), never NaN
        bound = st.none() | scalars(v.type.dtype).filter(lambda b: b == b)
        lo, hi = self.draw(bound), self.draw(bound)
        if lo is None and hi is None:
            lo = 0
        attrs = {k: b for k, b in (("min", lo), ("max", hi)) if b is not None}
        return tb.clamp(v, **attrs)

    def cast(self) -> Value | None:
        v = self.draw(st.sampled_from(self.pool))
        return tb.cast(v, to=self.draw(st.sampled_from(list(DType))))

    def broadcast(self) -> Value | None:
        v = self.pick(lambda u: u.type.rank < 3)
        if v is None:
            return None
        at = self.draw(st.integers(0, v.type.rank))
        shape: list[object] = list(v.type.dims)
        shape.insert(at, self.draw(st.sampled_from(SIZES)))
        dims = [i for i in range(v.type.rank + 1) if i != at]
        return tb.broadcast(v, shape=shape, dims=dims)

    def transpose(self) -> Value | None:
        v = self.pick(lambda u: u.type.rank >= 2)
        if v is None:
            return None
        return tb.transpose(v, perm=self.draw(st.permutations(range(v.type.rank))))

    def reshape(self) -> Value | None:
        v = self.pick(lambda u: u.type.rank >= 1)
        if v is None:
            return None
        if self.draw(st.booleans()):  # flatten
            return tb.reshape(v, shape=[dims_product(v.type.dims)])
        shape: list[object] = []
        for d in v.type.dims:  # split each 4 into 2, 2 and append a unit axis
            shape.extend([2, 2] if d.const == 4 else [d])
        return tb.reshape(v, shape=[*shape, 1])

    def reduce(self) -> Value | None:
        v = self.pick(lambda u: u.type.rank >= 1 and not u.type.dtype.is_bool)
        if v is None:
            return None
        axes = self.draw(st.lists(st.integers(0, v.type.rank - 1), min_size=1, unique=True))
        return tb.apply_op(self.draw(st.sampled_from(REDUCE)), v, axes=axes,
                           keepdims=self.draw(st.booleans()))

    def matmul(self) -> Value | None:
        a = self.pick(lambda u: u.type.rank == 2 and not u.type.dtype.is_bool)
        if a is None:
            return None
        b = self.pick(lambda u: u.type.rank == 2 and u.type.dtype == a.type.dtype
                      and u.type.dims[0] == a.type.dims[1])
        return tb.matmul(a, b if b is not None else tb.transpose(a, perm=[1, 0]))

    def constant(self) -> Value | None:
        v = self.draw(st.sampled_from(self.pool))
        dtype = v.type.dtype
        if self.draw(st.booleans()):
            # tb.splat is build.splat(value, type_), not the op; apply_op reaches the op
            return tb.apply_op("splat", value=self.draw(scalars(dtype)), shape=v.type.dims,
                               dtype=dtype)
        values = self.draw(st.lists(scalars(dtype), min_size=2, max_size=2))
        return tb.dense(value=[values, values[::-1]], dtype=dtype)

    def concat(self) -> Value | None:
        v = self.pick(lambda u: u.type.rank >= 1)
        if v is None:
            return None
        w = self.pick(lambda u: u.type == v.type)
        return tb.concat(v, w, axis=self.draw(st.integers(0, v.type.rank - 1)))

    def slice(self) -> Value | None:
        v = self.pick(lambda u: u.type.rank >= 1)
        if v is None:
            return None
        r = v.type.rank  # the whole tensor, or every other element along 4-sized axes
        if self.draw(st.booleans()):
            return tb.slice(v, start=[0] * r, size=v.type.dims, stride=[1] * r)
        size = [2 if d.const == 4 else d for d in v.type.dims]
        stride = [2 if d.const == 4 else 1 for d in v.type.dims]
        return tb.slice(v, start=[0] * r, size=size, stride=stride)

    def gather(self) -> Value | None:
        v = self.pick(lambda u: u.type.rank >= 1)
        idx = self.pick(lambda u: u.type.dtype.is_int)
        if v is None or idx is None:
            return None
        return tb.gather(v, idx, axis=self.draw(st.integers(0, v.type.rank - 1)))


ACTIONS = [m for m in vars(Gen) if not m.startswith("_") and m not in
           ("pick", "partner", "ordered")]


@st.composite
def random_funcs(draw: st.DrawFn) -> Func:
    f = tb.FuncBuilder("random")
    n_params = draw(st.integers(1, 3))
    pool: list[Value] = [f.param(f"p{i}", draw(st.sampled_from(PARAM_TYPES)))
                         for i in range(n_params)]
    gen = Gen(draw, pool)
    for _ in range(draw(st.integers(1, 10))):
        v = getattr(gen, draw(st.sampled_from(ACTIONS)))()
        if v is not None:
            pool.append(v)
    made = pool[n_params:] or pool
    f.ret(*draw(st.lists(st.sampled_from(made), min_size=1, max_size=3)))
    return f.finish()


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(random_funcs())
def test_random_programs_round_trip(func: Func) -> None:
    text = print_module(Module((func,)))
    again = load_program(Source("random.tcp", text)).func()
    assert same_func(func, again), text
    assert print_module(Module((again,))) == text


@pytest.mark.parametrize("action", ACTIONS)
@settings(max_examples=8, deadline=None)
@given(data=st.data())
def test_each_action_round_trips(action: str, data: st.DataObject) -> None:
    """Every action applies to a pool holding each parameter type, and its value round trips."""
    f = tb.FuncBuilder("one")
    pool: list[Value] = [f.param(f"p{i}", t) for i, t in enumerate(PARAM_TYPES)]
    v = getattr(Gen(data.draw, pool), action)()
    assert isinstance(v, Apply)
    f.ret(v)
    func = f.finish()
    text = print_module(Module((func,)))
    assert same_func(func, load_program(Source("one.tcp", text)).func()), text


def test_same_func_is_not_fooled_by_equal_looking_constants() -> None:
    """The round trip check has teeth: -0.0 and 0.0 differ (all NaNs are equal; 0 and 0.0 are
    one constant in a float context, so that rules and sharing see them as equal)."""
    def relu(zero: float) -> Func:
        f = tb.FuncBuilder("relu")
        x = f.param("x", "f32[N]")
        f.ret(tb.max(x, zero))
        return f.finish()

    assert not same_func(relu(0.0), relu(-0.0))
    assert same_func(relu(math.nan), relu(-math.nan))
    assert same_func(relu(0.0), relu(0))
    assert isinstance(relu(0.0).results[0], Apply)
