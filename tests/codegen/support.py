"""Shared helpers of the codegen tests: edge values, comparisons, single-op funcs, a tmp cache."""

from __future__ import annotations

import ctypes
import hashlib
from collections.abc import Callable, Iterator

import llvmlite.ir as ir
import numpy as np
import pytest

from tcp_rules import build as tb
from tcp_rules.codegen import jit
from tcp_rules.codegen.irbase import F32, I64, IR, PTR, VOID, Body
from tcp_rules.ir import Func, Value
from tcp_rules.sorts import Sort
from tcp_rules.types import DType

FLOAT_EDGES = [0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 1.5, -2.5, 2.5, np.inf, -np.inf, np.nan,
               1e-40, -1e-40, 1e-30, 3.0e38, -3.0e38, 88.7, -88.7, 104.0, -104.0, 0.49999997,
               100.5, 7.0, -7.0, 1e10, -1e10, 2.0**31, -(2.0**31), 2.0**63, 0.875, 4.0]


@pytest.fixture(autouse=True, scope="module")
def tcpr_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Every codegen test module compiles into its own temporary kernel cache."""
    mp = pytest.MonkeyPatch()
    mp.setenv("TCPR_CACHE_DIR", str(tmp_path_factory.mktemp("tcpr-cache")))
    yield
    mp.undo()


def edge_values(dt: DType, n: int = 64, seed: int = 0) -> np.ndarray:
    """Edge values of ``dt`` followed by random ones, ``n`` in all."""
    rng = np.random.default_rng(seed)
    if dt.is_float:
        edges = np.array(FLOAT_EDGES, dtype=dt.np_dtype)
        rest = (rng.standard_normal(n) * rng.choice([1e-3, 1, 10, 1e3], n)).astype(dt.np_dtype)
    elif dt.is_bool:
        edges = np.array([True, False])
        rest = rng.integers(0, 2, n).astype(bool)
    else:
        info = np.iinfo(dt.np_dtype)
        edges = np.array([0, 1, -1, 2, -2, 7, -7, info.min, info.max, info.min + 1,
                          info.max - 1], dtype=dt.np_dtype)
        rest = rng.integers(-1000, 1000, n).astype(dt.np_dtype)
    return np.concatenate([edges, rest])[:max(n, len(edges))]


def assert_same(got: np.ndarray, ref: np.ndarray, what: str = "") -> None:
    """Bit-for-bit equality (any NaN payload), signs of zero included."""
    assert got.shape == ref.shape and got.dtype == ref.dtype, what
    if ref.dtype.kind == "f":
        nan = np.isnan(ref)
        bad = (nan != np.isnan(got)) | (~nan & ((got != ref) | (np.signbit(got) !=
                                                                np.signbit(ref))))
    else:
        bad = got != ref
    if bad.any():
        i = np.argwhere(bad)[0]
        raise AssertionError(f"{what}: {bad.sum()} differ, first at {i.tolist()}: got "
                             f"{got[tuple(i)]!r}, reference {ref[tuple(i)]!r}")


def ulps(got: np.ndarray, ref: np.ndarray) -> np.ndarray:
    """|got - ref| in ulps of ref's dtype at ref (0 where both are the same special value)."""
    g, r = got.astype(np.float64), ref.astype(np.float64)
    finfo = np.finfo(ref.dtype)
    spacing = np.spacing(np.maximum(np.abs(ref), finfo.tiny).astype(ref.dtype)).astype(
        np.float64)
    same = (g == r) | (np.isnan(g) & np.isnan(r))
    with np.errstate(invalid="ignore"):
        err = np.abs(g - r) / spacing
    return np.where(same, 0.0, np.nan_to_num(err, nan=np.inf, posinf=np.inf))


def unary(op: str, dt: DType, shape: str = "N", **attrs: object) -> Func:
    f = tb.FuncBuilder(f"{op}_{dt}")
    x = f.param("x", f"{dt}[{shape}]")
    f.ret(tb.apply_op(op, x, **attrs))
    return f.finish()


def binary(op: str, dt: DType, shape: str = "N") -> Func:
    f = tb.FuncBuilder(f"{op}_{dt}")
    x, y = f.param("x", f"{dt}[{shape}]"), f.param("y", f"{dt}[{shape}]")
    f.ret(tb.apply_op(op, x, y))
    return f.finish()


def fuse_everything(func: Func) -> Func:
    """``func`` with every op inside kernel bodies: each parameter and dense constant is loaded
    once and each result is ``kernel(body)``; the lowering materializes only what it must. A
    matmul that the code generator can run by A's rows (extract/rows.py) becomes
    ``load_matmul_rows`` of that A and of B as ``func`` computes it, as the fusion rule
    chain-rows and extraction would make it (codegen/chain.py then runs it so)."""
    from tcp_rules.build import make_apply
    from tcp_rules.extract.rows import Node, chained_rows
    from tcp_rules.ir import Apply, Param
    from tcp_rules.ops import OPS

    def rebuild(rows: set[int]) -> dict[int, Value]:
        new: dict[int, Value] = {}
        for v in func.values():
            if isinstance(v, Param) or (isinstance(v, Apply) and v.op.name == "dense"):
                new[id(v)] = make_apply(OPS["load"], [v], {})
                continue
            assert isinstance(v, Apply)
            if v.op.name == "matmul" and id(v) in rows:
                a = v.operands[0]
                new[id(v)] = make_apply(OPS["load_matmul_rows"], [new[id(a)], v.operands[1]],
                                        {"shape": a.type.dims})
            else:
                new[id(v)] = make_apply(v.op, [new[id(o)] for o in v.operands], dict(v.attrs))
        return new

    # start from every matmul of a computed A, keep those the code generator runs as written
    rows = {id(v) for v in func.values() if isinstance(v, Apply) and v.op.name == "matmul"
            and isinstance(v.operands[0], Apply) and v.operands[0].op.name != "dense"}
    while True:
        new = rebuild(rows)
        key = {id(u): k for k, u in new.items()}  # (B of load_matmul_rows: func's own value)
        owners = [(k, u) for k, u in new.items() if isinstance(u, Apply)]
        # a matmul in a body reads its operands from memory: a load_matmul
        nodes = [Node(k, "load_matmul" if u.op.name == "matmul" else u.op.name, u.op.category,
                      u.attr_map, tuple(key.get(id(o), id(o)) for o in u.operands))
                 for k, u in owners]
        bodies = {k for k, u in new.items() if u.sort is Sort.BODY}
        shapes = {k: u.type.dims for k, u in new.items()}
        consts = {k for k, u in owners if u.op.name == "splat"}
        ok = chained_rows(nodes, bodies.__contains__, shapes.__getitem__, consts.__contains__)
        kept = {owners[i][0] for i in ok}
        if kept == rows:
            break
        rows = kept
    results = tuple(make_apply(OPS["kernel"], [new[id(r)]], {}) for r in func.results)
    return Func(func.name, func.params, results, func.result_types)


def loop_module(bodies: dict[str, tuple[int, Body]]) -> str:
    """The IR of :func:`loop_kernels`' functions, for the current target (jit.targeting)."""
    module = ir.Module("loop_kernels")
    for name, (w, body) in bodies.items():
        f = ir.Function(module, ir.FunctionType(VOID, [PTR, PTR, I64]), name)
        x, out, n = f.args
        entry, loop, done = (f.append_basic_block(s) for s in ("entry", "loop", "done"))
        e = IR(ir.IRBuilder(entry))
        e.b.branch(loop)
        e.b.position_at_end(loop)
        i = e.b.phi(I64)
        i.add_incoming(ir.Constant(I64, 0), entry)
        v = e.load(ir.VectorType(F32, w) if w > 1 else F32, e.gep(F32, x, i), align=4)
        e.b.store(body(e, v), e.gep(F32, out, i), align=4)
        nxt = e.b.add(i, ir.Constant(I64, w))
        i.add_incoming(nxt, loop)
        e.b.cbranch(e.b.icmp_unsigned("<", nxt, n), loop, done)
        e.b.position_at_end(done)
        e.b.ret_void()
    return str(module)


def loop_kernels(bodies: dict[str, tuple[int, Body]]) -> dict[str, Callable[[np.ndarray],
                                                                              np.ndarray]]:
    """Compile, for each ``name: (w, body)``, a function applying ``body`` to f32 x[i:i+w] for
    i in steps of w (a scalar for w = 1), without the loop vectorizer, so every body runs as
    written. Returns runners on f32 arrays whose length is a multiple of 16. Names become
    symbols: they must be unique across the test session."""
    text = loop_module(bodies)
    key = hashlib.sha256((jit.target().key() + text).encode()).hexdigest()
    addrs = jit.load(key, list(bodies), lambda: text, use_disk=False, vectorize=False)
    proto = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64)

    def runner(fn: ctypes._CFuncPtr) -> Callable[[np.ndarray], np.ndarray]:
        def run(x: np.ndarray) -> np.ndarray:
            assert x.dtype == np.float32 and x.size % 16 == 0
            out = np.empty_like(x)
            fn(x.ctypes.data, out.ctypes.data, x.size)
            return out
        return run

    return {name: runner(proto(addrs[name])) for name in bodies}


def skip_unless_target_has(*features: str) -> None:
    """Skip the calling test unless the current target (the host, or $TCPR_TARGET) has every
    one of ``features``; the reason names the missing ones."""
    t = jit.target()
    missing = [f for f in features if not t.has(f)]
    if missing:
        pytest.skip(f"needs {', '.join(missing)}, which target {t.name} ({t.cpu}) lacks")


def overflow_patterns(dt: DType) -> list[tuple[list[float], list[float]] | None]:
    """Two values of k of a row of A and a column of B whose fused sum differs from the
    rounded one (inf * 1 + 2 * -big: NaN in the reference; -big + root * root: inf), then None
    (finite data only); for integers None alone."""
    if not dt.is_float:
        return [None]
    big = float(np.finfo(dt.np_dtype).max) * 0.9
    root = float(np.sqrt(np.finfo(dt.np_dtype).max)) * 1.1  # root**2 overflows, barely
    return [([np.inf, 2.0], [1.0, -big]), ([-big, root], [1.0, root]), None]


def softmax(x: Value) -> Value:
    """A softmax over ``x``'s last axis, written out as ONNX exports it."""
    shape, lead = list(x.type.dims), list(range(x.type.rank - 1))
    last = [x.type.rank - 1]
    e = tb.exp(tb.sub(x, tb.broadcast(tb.reduce_max(x, axes=last), shape=shape, dims=lead)))
    return tb.div(e, tb.broadcast(tb.reduce_sum(e, axes=last), shape=shape, dims=lead))


def scores(batch: list[int], m: int, k: int, n: int, scale: float = 0.125
           ) -> tuple[tb.FuncBuilder, Value]:
    """A func builder with params q and k, and Q K^T times ``scale`` over ``batch`` heads."""
    f = tb.FuncBuilder("rows")
    q = f.param("q", f"f32{[*batch, m, k]}")
    kt = f.param("k", f"f32{[*batch, n, k]}")
    perm = [*range(len(batch)), len(batch) + 1, len(batch)]
    s = tb.matmul(q, tb.transpose(kt, perm=perm))
    return f, tb.mul(s, tb.broadcast(tb.apply_op("splat", value=scale, shape=[], dtype="f32"),
                                     shape=list(s.type.dims), dims=[]))


def sized_inputs(func: Func, size: int, seed: int | None = None) -> list[np.ndarray]:
    """f32 N(0, 0.09) inputs for ``func``, its symbolic dims all ``size`` (seeded by it)."""
    rng = np.random.default_rng(size if seed is None else seed)
    return [rng.standard_normal(tuple(size if d.const is None else int(d.const)
                                      for d in p.type.dims)).astype(np.float32) * 0.3
            for p in func.params]
