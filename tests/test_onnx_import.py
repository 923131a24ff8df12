"""The ONNX importer against onnxruntime: a transformer encoder layer with symbolic batch and
sequence, broadcasting and matmul of random ranks, the CLI, and bad models."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from numerics import assert_within, error_bounds  # noqa: E402
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from tcp_rules.cli import main  # noqa: E402
from tcp_rules.diagnostics import TcpError  # noqa: E402
from tcp_rules.frontends import identifier  # noqa: E402
from tcp_rules.frontends.onnx import import_model, import_onnx  # noqa: E402
from tcp_rules.frontends.onnx.zoo import encoder_layer  # noqa: E402
from tcp_rules.optimize import OptOptions  # noqa: E402
from tcp_rules.pipeline import optimize_func, run_func  # noqa: E402
from tcp_rules.rules.library import load_standard_library  # noqa: E402
from tcp_rules.types import Dim  # noqa: E402


def _ort(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)


def _inputs(imported, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    func = imported.module.funcs[0]
    names = {imported.aliases.get(k, k): v for k, v in feeds.items()}
    return [names.get(p.param, imported.weights.get(p.param)) for p in func.params]


def _check_against_ort(model: onnx.ModelProto, feeds: dict[str, np.ndarray],
                       engines: tuple[str, ...] = ("reference", "compiled")) -> None:
    """Every engine, and onnxruntime, within twice the derived error bound of the exact result
    (each is within the bound; see tests/numerics.py)."""
    imported = import_model(model)
    func = imported.module.funcs[0]
    args = _inputs(imported, feeds)
    want = _ort(model, feeds)
    _, bounds = error_bounds(func, args)
    for engine in engines:
        got = run_func(func, args, engine)
        for g, w, b in zip(got, want, bounds, strict=True):
            assert g.dtype == w.dtype and g.shape == w.shape
            assert_within(g, w, 2 * b, f"{engine} vs onnxruntime")


# the transformer encoder layer -------------------------------------------------------------

@pytest.fixture(scope="module")
def encoder() -> onnx.ModelProto:
    return encoder_layer(d_model=64, heads=4, d_ff=128)


@pytest.fixture(scope="module")
def encoder64() -> onnx.ModelProto:
    return encoder_layer(d_model=64, heads=4, d_ff=128, dtype=np.float64)


def assert_as_accurate_as_ort(got: np.ndarray, x: np.ndarray, encoder: onnx.ModelProto,
                              encoder64: onnx.ModelProto, what: str) -> None:
    """A whole encoder compounds rounding through a dozen ops, where a worst-case bound says
    nothing; the measure is instead the distance from the same model run in f64 by ONNX's
    reference evaluator (near exact),
    which must be no more than twice onnxruntime's own f32 distance, plus 4 ulps of the
    largest magnitude (for where onnxruntime happens to be exact)."""
    from onnx.reference import ReferenceEvaluator  # ORT lacks f64 kernels for some ops

    (exact,) = ReferenceEvaluator(encoder64).run(None, {"x": x.astype(np.float64)})
    (peer,) = _ort(encoder, {"x": x})
    ours = float(np.max(np.abs(got.astype(np.float64) - exact)))
    theirs = float(np.max(np.abs(peer.astype(np.float64) - exact)))
    slack = 4 * float(np.spacing(np.float32(np.max(np.abs(exact)))))
    assert got.shape == peer.shape and got.dtype == peer.dtype
    assert ours <= 2 * theirs + slack, f"{what}: error {ours:.3g}, onnxruntime's {theirs:.3g}"


def test_encoder_keeps_symbolic_batch_and_sequence(encoder: onnx.ModelProto) -> None:
    func = import_model(encoder).module.funcs[0]
    x = next(p for p in func.params if p.param == "x")
    assert x.type.dims == (Dim.of("batch"), Dim.of("seq"), Dim.of(64))
    assert func.result_types[0].dims == x.type.dims
    ops = {v.op.name for v in _applies(func)}
    assert {"matmul", "erf", "rsqrt", "reduce_max", "exp", "transpose"} <= ops


def _applies(func):
    from tcp_rules.ir import Apply, topo_order

    return [v for v in topo_order(func.results) if isinstance(v, Apply)]


@pytest.mark.parametrize("engine", ["reference", "compiled", "optimized"])
@pytest.mark.parametrize(("batch", "seq"), [(1, 1), (2, 7), (3, 16)])
def test_encoder_matches_onnxruntime(encoder, encoder64, engine: str, batch: int,
                                     seq: int) -> None:
    imported = import_model(encoder)
    func = imported.module.funcs[0]
    if engine == "optimized":
        func = optimize_func(func, load_standard_library().rules, OptOptions()).func
    x = np.random.default_rng(batch * 100 + seq).standard_normal((batch, seq, 64))
    x = x.astype(np.float32)
    (got,) = run_func(func, _inputs(imported, {"x": x}),
                      "reference" if engine == "reference" else "compiled")
    assert_as_accurate_as_ort(got, x, encoder, encoder64, engine)


def test_run_onnx_in_one_command(encoder, encoder64, tmp_path: Path) -> None:
    model, inputs, out = tmp_path / "enc.onnx", tmp_path / "in.npz", tmp_path / "out.npz"
    onnx.save(encoder, model)
    x = np.random.default_rng(1).standard_normal((2, 5, 64)).astype(np.float32)
    np.savez(inputs, x=x)
    assert main(["run", str(model), "--inputs", str(inputs), "--out", str(out)]) == 0
    assert_as_accurate_as_ort(np.load(out)["result0"], x, encoder, encoder64, "tcpr run")


def test_import_writes_program_and_weights(encoder, encoder64, tmp_path: Path) -> None:
    model = tmp_path / "enc.onnx"
    onnx.save(encoder, model)
    prog = tmp_path / "enc.tcp"
    assert main(["import", str(model), "-o", str(prog), "--dim", "batch=2"]) == 0
    weights = tmp_path / "enc.weights.npz"
    text = prog.read_text()
    assert "x: f32[2, seq, 64]" in text and f"# weights in {weights}" in text
    x = np.random.default_rng(2).standard_normal((2, 3, 64)).astype(np.float32)
    np.savez(tmp_path / "in.npz", x=x)
    out = tmp_path / "out.npz"
    assert main(["run", str(prog), "--no-opt", "--inputs", str(tmp_path / "in.npz"),
                 "--inputs", str(weights), "--out", str(out)]) == 0
    assert_as_accurate_as_ort(np.load(out)["result0"], x, encoder, encoder64, "imported .tcp")


# broadcasting and matmul of any rank, against onnxruntime ------------------------------------

def _model(nodes, inputs, outputs, opset=18, inits=()):
    graph = helper.make_graph(nodes, "g", inputs, outputs, list(inits))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def _vi(name: str, shape, dtype=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, dtype, shape)


shapes = st.lists(st.sampled_from([1, 2, 3]), min_size=0, max_size=4)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(a=shapes, b=shapes, op=st.sampled_from(["Add", "Sub", "Mul", "Div", "Max", "Min"]),
       seed=st.integers(0, 2**16))
def test_broadcasting_binary_ops(a: list[int], b: list[int], op: str, seed: int) -> None:
    try:
        out_shape = list(np.broadcast_shapes(tuple(a), tuple(b)))
    except ValueError:
        return
    model = _model([helper.make_node(op, ["a", "b"], ["y"])], [_vi("a", a), _vi("b", b)],
                   [_vi("y", out_shape)])
    rng = np.random.default_rng(seed)
    feeds = {"a": np.asarray(rng.standard_normal(a), np.float32),
             "b": np.asarray(rng.standard_normal(b) + 3, np.float32)}
    _check_against_ort(model, feeds)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(batch_a=st.lists(st.sampled_from([1, 2]), max_size=2),
       batch_b=st.lists(st.sampled_from([1, 2]), max_size=2),
       m=st.integers(1, 4), k=st.integers(1, 5), n=st.integers(1, 4),
       vec_a=st.booleans(), vec_b=st.booleans(), seed=st.integers(0, 2**16))
def test_matmul_any_rank(batch_a, batch_b, m, k, n, vec_a, vec_b, seed) -> None:
    a = [k] if vec_a else [*batch_a, m, k]
    b = [k] if vec_b else [*batch_b, k, n]
    try:
        want_shape = list(np.matmul(np.zeros(a), np.zeros(b)).shape)
    except ValueError:
        return
    model = _model([helper.make_node("MatMul", ["a", "b"], ["y"])], [_vi("a", a), _vi("b", b)],
                   [_vi("y", want_shape)])
    rng = np.random.default_rng(seed)
    _check_against_ort(model, {"a": rng.standard_normal(a).astype(np.float32),
                               "b": rng.standard_normal(b).astype(np.float32)})


def _symbolic_slice(step: int = 1, start: int = 1) -> onnx.ModelProto:
    """y = x + w[start : seq : step], the end the symbolic length of x, as exporters cut
    position buffers to the sequence."""
    w = numpy_helper.from_array(np.arange(10, dtype=np.float32) * 1.5, "w")
    consts = [numpy_helper.from_array(np.array([v], np.int64), n)
              for n, v in (("one", 1), ("two", 2), ("lo", start), ("ax", 0), ("st", step))]
    nodes = [helper.make_node("Shape", ["x"], ["shape"]),
             helper.make_node("Slice", ["shape", "zero_", "one"], ["n"]),
             helper.make_node("Add", ["n", "lo"], ["end"]),
             helper.make_node("Slice", ["w", "lo", "end", "ax", "st"], ["cut"], name="cut"),
             helper.make_node("Add", ["x", "cut"], ["y"])]
    zero = numpy_helper.from_array(np.array([0], np.int64), "zero_")
    return _model(nodes, [_vi("x", ["seq"])], [_vi("y", ["seq"])], inits=[w, zero, *consts])


def test_slice_to_a_symbolic_end() -> None:
    imported = import_model(_symbolic_slice())
    func = imported.module.funcs[0]
    assert [str(d) for d in func.params[0].type.dims] == ["seq"]
    for n in (1, 4, 9):
        x = np.random.default_rng(n).standard_normal(n).astype(np.float32)
        (want,) = _ort(_symbolic_slice(), {"x": x})
        for engine in ("reference", "compiled"):
            (got,) = run_func(func, _inputs(imported, {"x": x}), engine)
            np.testing.assert_array_equal(got, want, err_msg=f"{engine}, seq={n}")
    x = np.zeros(10, np.float32)  # w[1:11] passes w's end: onnxruntime clamps, we refuse
    with pytest.raises(TcpError, match="slice reads past the end"):
        run_func(func, _inputs(imported, {"x": x}), "compiled")


def test_slice_to_a_symbolic_end_needs_step_one() -> None:
    with pytest.raises(TcpError, match=r"node 'cut'.*symbolic end seq \+ 1 must start at a "
                                       r"non-negative index and have step 1"):
        import_model(_symbolic_slice(step=2))


# names -----------------------------------------------------------------------------------

@pytest.mark.parametrize(("name", "taken", "want"), [
    ("x", (), "x"), ("input.1", (), "input_1"), ("0", (), "v0"), ("", (), "v"),
    ("inf", (), "inf_"), ("a-b", ("a_b",), "a_b_2"), ("a:b/c", ("a_b_c", "a_b_c_2"), "a_b_c_3"),
])
def test_identifier_rule(name: str, taken: tuple[str, ...], want: str) -> None:
    assert identifier(name, taken) == want


def test_inputs_keyed_by_onnx_names(tmp_path: Path) -> None:
    model = _model([helper.make_node("Relu", ["input.1"], ["out:0"])],
                   [_vi("input.1", ["n", 3])], [_vi("out:0", ["n", 3])])
    path = tmp_path / "m.onnx"
    onnx.save(model, path)
    x = np.array([[-1, 0, 2]], np.float32)
    np.savez(tmp_path / "in.npz", **{"input.1": x})
    assert main(["run", str(path), "--inputs", str(tmp_path / "in.npz"), "--out",
                 str(tmp_path / "o.npz"), "--no-opt"]) == 0
    np.testing.assert_array_equal(np.load(tmp_path / "o.npz")["result0"], [[0, 0, 2]])


# bad models ----------------------------------------------------------------------------------

def _fails(argv: list[str], capsys: pytest.CaptureFixture[str], *needles: str) -> None:
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert "Traceback" not in err
    for n in needles:
        assert n in err, err


def test_truncated_model(encoder: onnx.ModelProto, tmp_path: Path, capsys) -> None:
    path = tmp_path / "cut.onnx"
    path.write_bytes(encoder.SerializeToString()[:1000])
    _fails(["import", str(path)], capsys, "cut.onnx", "not an ONNX model")


def test_unknown_op(tmp_path: Path, capsys) -> None:
    model = _model([helper.make_node("Relu", ["x"], ["r"], name="act"),
                    helper.make_node("Det", ["r"], ["y"], name="det")],
                   [_vi("x", [3, 3])], [_vi("y", [])], opset=13)
    path = tmp_path / "m.onnx"
    onnx.save(model, path)
    out = tmp_path / "m.tcp"
    _fails(["import", str(path), "-o", str(out)], capsys,
           "node 'det' (Det, opset 13)", "not supported")
    assert not out.exists()  # never a partial program


def test_dynamic_rank(tmp_path: Path, capsys) -> None:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, None)
    model = _model([helper.make_node("Relu", ["x"], ["y"])], [x], [_vi("y", [2])])
    path = tmp_path / "m.onnx"
    onnx.save(model, path)
    _fails(["run", str(path), "--random"], capsys, "graph input 'x'", "dynamic rank")


def test_mismatched_initializer(tmp_path: Path, capsys) -> None:
    w = numpy_helper.from_array(np.ones((3, 3), np.float32), "w")
    model = _model([helper.make_node("MatMul", ["x", "w"], ["y"])],
                   [_vi("x", [2, 4]), _vi("w", [4, 4])], [_vi("y", [2, 4])], inits=[w])
    path = tmp_path / "m.onnx"
    onnx.save(model, path)
    _fails(["check", str(path)], capsys, "initializer 'w' has shape [3, 3]", "[4, 4]")


def test_initializer_data_does_not_match_its_dims() -> None:
    w = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[4, 4], float_data=[1.0] * 3)
    model = _model([helper.make_node("Relu", ["w"], ["y"])], [], [_vi("y", [4, 4])], inits=[w])
    with pytest.raises(TcpError, match="w"):
        import_model(model)


def test_shape_argument_from_a_graph_input(tmp_path: Path, capsys) -> None:
    model = _model([helper.make_node("Reshape", ["x", "s"], ["y"], name="rs")],
                   [_vi("x", [2, 3]), _vi("s", [2], TensorProto.INT64)], [_vi("y", [3, 2])])
    path = tmp_path / "m.onnx"
    onnx.save(model, path)
    _fails(["import", str(path)], capsys, "node 'rs' (Reshape", "input 's'",
           "must be known when importing")


# models exported from PyTorch (tests/data/onnx/export_torch.py) ------------------------------

TORCH = Path(__file__).parent / "data" / "onnx"


@pytest.mark.parametrize("engine", ["reference", "compiled", "optimized"])
@pytest.mark.parametrize(("name", "shape"), [("mlp.onnx", (5, 16)),
                                             ("encoder_layer.onnx", (3, 7, 64))])
def test_pytorch_exports_match_onnxruntime(name: str, shape: tuple[int, ...],
                                           engine: str) -> None:
    """Against onnxruntime, as close as ONNX's own reference evaluator gets to it (4 times its
    distance, plus 4 ulps of the largest result for where the two happen to agree exactly):
    the three are independent f32 implementations of the same graph."""
    from onnx.reference import ReferenceEvaluator

    path = TORCH / name
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    imported = import_onnx(path)
    func = imported.module.funcs[0]
    if engine == "optimized":
        func = optimize_func(func, load_standard_library().rules, OptOptions()).func
    (got,) = run_func(func, _inputs(imported, {"x": x}),
                      "reference" if engine == "reference" else "compiled")
    (want,) = ort.InferenceSession(str(path)).run(None, {"x": x})
    (other,) = ReferenceEvaluator(str(path)).run(None, {"x": x})
    assert got.shape == want.shape and got.dtype == want.dtype
    theirs = float(np.max(np.abs(other.astype(np.float64) - want)))
    slack = 4 * float(np.spacing(np.float32(np.max(np.abs(want)))))
    ours = float(np.max(np.abs(got.astype(np.float64) - want)))
    assert ours <= 4 * theirs + slack, f"{engine}: {ours:.3g} from onnxruntime ({theirs:.3g})"


def test_pytorch_symbolic_dims_and_external_data() -> None:
    func = import_onnx(TORCH / "encoder_layer.onnx").module.funcs[0]
    assert [str(d) for d in func.params[0].type.dims] == ["batch", "seq", "64"]
    mlp = import_onnx(TORCH / "mlp.onnx")  # weights in mlp.onnx.data beside it
    assert mlp.weights["v0_weight"].shape == (32, 16)


def test_external_data_outside_the_model_folder(tmp_path: Path, capsys) -> None:
    model = onnx.load(TORCH / "mlp.onnx", load_external_data=False)
    for t in model.graph.initializer:
        for entry in t.external_data:
            if entry.key == "location":
                entry.value = "../secret.data"
    path = tmp_path / "sub" / "m.onnx"
    path.parent.mkdir()
    onnx.save(model, path)
    (tmp_path / "secret.data").write_bytes(b"\0" * 4096)
    _fails(["import", str(path)], capsys, "outside the model's directory")
