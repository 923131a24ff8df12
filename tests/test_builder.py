"""The Python builder API builds the same programs as text, and reports type errors clearly."""

from __future__ import annotations

import numpy as np
import pytest

from tcp_rules import build as tb
from tcp_rules.diagnostics import Source, TcpError
from tcp_rules.elaborate import load_program
from tcp_rules.interpret import evaluate
from tcp_rules.ir import Func, Module, same_func
from tcp_rules.pipeline import load_module_file
from tcp_rules.printer import print_module
from tcp_rules.resources import example_path
from tcp_rules.types import TensorType


def example(name: str) -> Func:
    return load_module_file(example_path(name)).func()


def build_mlp() -> Func:
    f = tb.FuncBuilder("mlp")
    x = f.param("x", "f32[N, 784]")
    w = f.param("w", "f32[784, 128]")
    b = f.param("b", TensorType.of("f32", [128]))  # a TensorType works as well as its text
    h = tb.matmul(x, w)
    f.ret(tb.max(tb.add(h, tb.broadcast(b, shape=["N", 128], dims=[1])), 0.0))
    return f.finish()


def build_softmax() -> Func:
    f = tb.FuncBuilder("softmax")
    x = f.param("x", "f32[N, D]")
    m = tb.reduce_max(x, axes=[1])
    e = tb.exp(tb.sub(x, tb.broadcast(m, shape=["N", "D"], dims=[0])))
    s = tb.reduce_sum(e, axes=[1])
    f.ret(tb.div(e, tb.broadcast(s, shape=["N", "D"], dims=[0])))
    return f.finish()


def build_layernorm() -> Func:
    f = tb.FuncBuilder("layernorm")
    x, gamma, beta = (f.param(n, t) for n, t in
                      (("x", "f32[N, 768]"), ("gamma", "f32[768]"), ("beta", "f32[768]")))

    def rows(v: object) -> object:
        return tb.broadcast(v, shape=["N", 768], dims=[0])

    def cols(v: object) -> object:
        return tb.broadcast(v, shape=["N", 768], dims=[1])

    mu = tb.div(tb.reduce_sum(x, axes=[1]), 768.0)
    xc = tb.sub(x, rows(mu))
    var = tb.div(tb.reduce_sum(tb.mul(xc, xc), axes=[1]), 768.0)
    inv = tb.rsqrt(tb.add(var, 1e-05))
    y = tb.mul(xc, rows(inv))
    f.ret(tb.add(tb.mul(y, cols(gamma)), cols(beta)))
    return f.finish()


def build_gelu() -> Func:
    f = tb.FuncBuilder("gelu")
    x = f.param("x", "f32[N, D]")
    x3 = tb.mul(tb.mul(x, x), x)
    inner = tb.mul(tb.add(x, tb.mul(x3, 0.044715)), 0.7978845608028654)
    f.ret(tb.mul(tb.mul(x, 0.5), tb.add(tb.tanh(inner), 1.0)))
    return f.finish()


def build_attention() -> Func:
    f = tb.FuncBuilder("attention")
    x = f.param("x", "f32[S, 128]")
    wq, wk, wv = (f.param(n, "f32[128, 64]") for n in ("wq", "wk", "wv"))
    wo = f.param("wo", "f32[64, 128]")
    q, k, v = tb.matmul(x, wq), tb.matmul(x, wk), tb.matmul(x, wv)
    scores = tb.div(tb.matmul(q, tb.transpose(k, perm=[1, 0])), 8.0)
    m = tb.reduce_max(scores, axes=[1])
    e = tb.exp(tb.sub(scores, tb.broadcast(m, shape=["S", "S"], dims=[0])))
    p = tb.div(e, tb.broadcast(tb.reduce_sum(e, axes=[1]), shape=["S", "S"], dims=[0]))
    f.ret(tb.matmul(tb.matmul(p, v), wo))
    return f.finish()


BUILDERS = {"mlp": build_mlp, "softmax": build_softmax, "layernorm": build_layernorm,
            "gelu": build_gelu, "attention": build_attention}


@pytest.mark.parametrize("name", sorted(BUILDERS))
def test_builder_makes_the_example_program(name: str) -> None:
    built = BUILDERS[name]()
    parsed = example(name)
    assert same_func(built, parsed)
    # Printing the built program gives the example's canonical text except for let-names:
    # the builder has none, so only shared values are bound (as v0, v1, ...).
    assert same_func(load_program(Source("built.tcp", print_module(Module((built,))))).func(),
                     parsed)


def test_builder_program_runs_like_the_parsed_one() -> None:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((3, 784)).astype(np.float32)
    w = rng.standard_normal((784, 128)).astype(np.float32)
    b = rng.standard_normal(128).astype(np.float32)
    (built,) = evaluate(build_mlp(), [x, w, b])
    (parsed,) = evaluate(example("mlp"), [x, w, b])
    np.testing.assert_array_equal(built, parsed)
    np.testing.assert_array_equal(built, np.maximum(x @ w + b, np.float32(0)))


def test_builder_distinguishes_different_programs() -> None:
    f = tb.FuncBuilder("mlp")
    x = f.param("x", "f32[N, 784]")
    w = f.param("w", "f32[784, 128]")
    b = f.param("b", "f32[128]")
    h = tb.matmul(x, w)
    f.ret(tb.min(tb.add(h, tb.broadcast(b, shape=["N", 128], dims=[1])), 0.0))  # min, not max
    assert not same_func(f.finish(), example("mlp"))


def test_several_results_and_shared_values() -> None:
    f = tb.FuncBuilder("stats")
    x = f.param("x", "f32[N, D]")
    s = tb.reduce_sum(x, axes=[1])
    f.ret(s, tb.mul(s, s), tb.gt(s, 0))
    func = f.finish()
    assert [str(t) for t in func.result_types] == ["f32[N]", "f32[N]", "i1[N]"]
    text = print_module(Module((func,)))
    assert text == ("func stats(x: f32[N, D]) -> (f32[N], f32[N], i1[N]) {\n"
                    "  v0 = reduce_sum(x, axes=[1], keepdims=false)\n"
                    "  return v0, mul(v0, v0), gt(v0, 0.0)\n"
                    "}\n")
    assert same_func(load_program(Source("stats.tcp", text)).func(), func)


def test_literals_are_typed_by_their_context() -> None:
    f = tb.FuncBuilder("lits")
    i = f.param("i", "i32[N]")
    c = tb.lt(i, 0)
    r = tb.select(c, -1, i)
    assert r.operands[1].type == i.type
    assert tb.select(True, 1.5, tb.cast(i, to="f32")).operands[0].type == c.type


def test_the_splat_op_is_reached_like_every_op() -> None:
    # build.make_splat is a helper taking a TensorType; tb.splat(...) is the op itself.
    t = TensorType.of("f32", ["N", 4])
    helper = tb.make_splat(0.5, t)
    op = tb.splat(value=0.5, shape=["N", 4], dtype="f32")
    assert helper.type == op.type == t
    assert helper.attrs == op.attrs


# Type errors ----------------------------------------------------------------------------------

def params(*types: str) -> list[object]:
    f = tb.FuncBuilder("f")
    return [f.param(f"p{i}", t) for i, t in enumerate(types)]


TYPE_ERRORS = [
    ("shape", lambda a, b: tb.add(a, b), ("f32[N, 4]", "f32[N, 8]"),
     "add: elementwise operands must have identical shapes: operand 0 is f32[N, 4] but "
     "operand 1 is f32[N, 8] (broadcast explicitly)"),
    ("dtype", lambda a, b: tb.mul(a, b), ("f32[N]", "i32[N]"),
     "mul: operand dtypes differ: f32[N] and i32[N] (cast explicitly)"),
    ("matmul", lambda a, b: tb.matmul(a, b), ("f32[M, 4]", "f32[5, K]"),
     "matmul inner dimensions differ: f32[M, 4] @ f32[5, K] (4 vs 5)"),
    ("arity", lambda a: tb.add(a), ("f32[N]",), "add takes 2 operands, got 1"),
    ("missing attribute", lambda a: tb.transpose(a), ("f32[N, 4]",),
     "transpose needs attribute 'perm' (ints)"),
    ("unknown attribute", lambda a: tb.transpose(a, perm=[1, 0], axis=0), ("f32[N, 4]",),
     "transpose has no attribute 'axis' (attributes: perm)"),
    ("attribute kind", lambda a: tb.transpose(a, perm="10"), ("f32[N, 4]",),
     "transpose: attribute perm expects a list of integers, got '10'"),
    ("permutation", lambda a: tb.transpose(a, perm=[0, 0]), ("f32[N, 4]",),
     "transpose: perm=[0, 0] is not a permutation of 0..1 for a rank-2 operand"),
    ("axes", lambda a: tb.reduce_sum(a, axes=[2]), ("f32[N, 4]",),
     "reduce_sum: axes=[2]: axis 2 is out of range for a rank-2 operand"),
    ("reshape", lambda a: tb.reshape(a, shape=["N", 5]), ("f32[N, 4]",),
     "reshape changes the number of elements: f32[N, 4] has 4*N, shape=[N, 5] has "
     "5*N"),
    ("literal fraction", lambda a: tb.add(a, 0.5), ("i32[N]",),
     "add: literal 0.5 is not an integer but the context is i32"),
    ("literal range", lambda a: tb.add(a, 2**31), ("i32[N]",),
     "add: literal 2147483648 does not fit in i32 (range -2147483648..2147483647)"),
    ("literal boolean", lambda c: tb.select(c, c, 2), ("i1[N]",),
     "select: literal 2 is not a boolean (use true, false, 0 or 1)"),
    ("literal without context", lambda a: tb.reshape(1.0, shape=["N"]), ("f32[N]",),
     "reshape: cannot tell the type of literal 1.0 here"),
    ("two literals", lambda a: tb.add(1.0, 2.0), ("f32[N]",),
     "add: cannot tell the type of literal 1.0 here"),
    ("cast dtype", lambda a: tb.cast(a, to="f8"), ("f32[N]",),
     "cast: unknown dtype 'f8' (known: f16, bf16, f32, f64, i8, i16, i32, i64, u8, u16, u32, "
     "u64, i1)"),
    ("unknown op", lambda a: tb.apply_op("addd", a, a), ("f32[N]",), "unknown op 'addd'"),
]


@pytest.mark.parametrize(("what", "make", "types", "message"), TYPE_ERRORS,
                         ids=[case[0] for case in TYPE_ERRORS])
def test_builder_type_errors(what: str, make: object, types: tuple[str, ...],
                             message: str) -> None:
    args = params(*types)
    with pytest.raises(TcpError) as info:
        make(*args)  # type: ignore[operator]
    (diag,) = info.value.diagnostics
    assert diag.message.endswith(message)  # see test_builder_messages_name_the_op_once
    assert diag.span is None  # built values have no source position
    assert info.value.render() == f"error: {diag.message}"


def test_builder_messages_name_the_op_once() -> None:
    for _, make, types, message in TYPE_ERRORS:
        with pytest.raises(TcpError) as info:
            make(*params(*types))  # type: ignore[operator]
        assert info.value.diagnostics[0].message == message


@pytest.mark.parametrize(("type_text", "message"), [
    ("f8[N]", "unknown dtype 'f8' (known: f16, bf16, f32, f64, i8, i16, i32, i64, u8, u16, u32, "
              "u64, i1)"),
    ("f32[N, -1]", "a dim is a non-negative integer, a symbol, or +, -, * of those"),
    ("f32[N", "syntax error: unexpected end of file"),
    ("f32", "syntax error: unexpected end of file; expected '['"),
])
def test_bad_parameter_types(type_text: str, message: str) -> None:
    f = tb.FuncBuilder("f")
    with pytest.raises(TcpError) as info:
        f.param("x", type_text)
    assert info.value.diagnostics[0].message.startswith(message)
    assert info.value.render().startswith("<type>:1:")


def test_func_without_results_is_an_error() -> None:
    f = tb.FuncBuilder("empty")
    f.param("x", "f32[N]")
    with pytest.raises(TcpError, match="func empty returns nothing"):
        f.finish()


def test_unknown_op_attribute_on_the_module() -> None:
    with pytest.raises(AttributeError):
        tb.not_an_op  # noqa: B018


def test_non_tensor_operands_are_python_type_errors() -> None:
    (x,) = params("f32[N]")
    with pytest.raises(TypeError, match="expected a tensor value or a scalar"):
        tb.add(x, "1.0")


def test_dense_from_a_float32_array_round_trips() -> None:
    f = tb.FuncBuilder("f")
    x = f.param("x", "f32[2]")
    f.ret(tb.add(x, tb.dense(value=np.array([0.1, 1.0], np.float32), dtype="f32")))
    func = f.finish()
    again = load_program(Source("d.tcp", print_module(Module((func,))))).func()
    assert same_func(func, again)


def test_numpy_scalars_are_literals() -> None:
    (x,) = params("f32[N]")
    v = tb.add(x, np.float32(0.5))
    assert v.operands[1].attr_map["value"] == 0.5  # type: ignore[attr-defined]


def test_duplicate_parameter_names_are_refused() -> None:
    f = tb.FuncBuilder("f")
    f.param("x", "f32[N]")
    with pytest.raises(TcpError, match="already has a parameter 'x'"):
        f.param("x", "f32[N]")
    with pytest.raises(TcpError, match="not a usable name"):
        f.param("nan", "f32[N]")


def test_literal_results_are_refused_with_a_hint() -> None:
    f = tb.FuncBuilder("f")
    f.param("x", "f32[N]")
    with pytest.raises(TcpError, match="make_splat"):
        f.ret(0.0)  # type: ignore[arg-type]


def test_float_literals_that_overflow_are_refused() -> None:
    (x,) = params("f32[N]")
    with pytest.raises(TcpError, match="overflows f32"):
        tb.add(x, 1e39)
