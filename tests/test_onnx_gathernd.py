"""ONNX GatherND imported as TCP's gather at linear indices, and Gather's wrapping of negative
indices into symbolic axes, against onnxruntime."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from onnx_support import run_onnx

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from tcp_rules.cli import main  # noqa: E402
from tcp_rules.frontends.onnx import import_model  # noqa: E402
from tcp_rules.pipeline import run_func  # noqa: E402

_TYPES = {np.dtype(np.float32): TensorProto.FLOAT, np.dtype(np.int32): TensorProto.INT32}


@st.composite
def _cases(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray, int]:
    """(data, indices, batch_dims): indices in [-size, size) of each indexed axis."""
    rank = draw(st.integers(1, 4))
    shape = draw(st.lists(st.integers(1, 4), min_size=rank, max_size=rank))
    b = draw(st.integers(0, rank - 1))
    k = draw(st.integers(1, rank - b))
    extra = draw(st.lists(st.integers(1, 3), max_size=2))
    lead = shape[:b] + extra
    seed = draw(st.integers(0, 2**16))
    rng = np.random.default_rng(seed)
    sizes = np.array(shape[b:b + k])
    idx = rng.integers(-sizes, sizes, size=(*lead, k)).astype(np.int64)
    dtype = draw(st.sampled_from([np.float32, np.int32]))
    data = (rng.standard_normal(shape) * 100).astype(dtype)
    return data, idx, b


def _model(data: np.ndarray, idx: np.ndarray, b: int, const: bool) -> onnx.ModelProto:
    dt = _TYPES[data.dtype]
    inputs = [helper.make_tensor_value_info("data", dt, data.shape)]
    inits = []
    if const:
        inits.append(numpy_helper.from_array(idx, "idx"))
    else:
        inputs.append(helper.make_tensor_value_info("idx", TensorProto.INT64, idx.shape))
    node = helper.make_node("GatherND", ["data", "idx"], ["y"], batch_dims=b, name="gnd")
    out = [*idx.shape[:-1], *data.shape[b + idx.shape[-1]:]]
    graph = helper.make_graph([node], "g", inputs, [helper.make_tensor_value_info("y", dt, out)],
                              inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=_cases(), const=st.booleans())
def test_gathernd_matches_onnxruntime(case: tuple[np.ndarray, np.ndarray, int],
                                      const: bool) -> None:
    """Gathers copy elements: the same bits as onnxruntime on both engines, indices given at
    run time (negatives wrapped by TCP ops) or as an initializer (folded into linear ones)."""
    data, idx, b = case
    model = _model(data, idx, b, const)
    feeds = {"data": data} if const else {"data": data, "idx": idx}
    (want,) = ort.InferenceSession(model.SerializeToString()).run(None, feeds)
    for engine in ("reference", "compiled"):
        got = run_onnx(model, feeds, engine)[0]
        assert got.dtype == want.dtype and got.shape == want.shape, engine
        np.testing.assert_array_equal(got, want, err_msg=engine)


@pytest.mark.parametrize("const", [False, True])
def test_gathernd_optimized_batch_dims(const: bool) -> None:
    rng = np.random.default_rng(7)
    data = rng.standard_normal((2, 3, 4, 5)).astype(np.float32)
    idx = np.array([[[0, -1], [2, 3]], [[1, 0], [-3, -4]]]).reshape(2, 2, 2)
    model = _model(data, idx, 1, const)
    feeds = {"data": data} if const else {"data": data, "idx": idx}
    (want,) = ort.InferenceSession(model.SerializeToString()).run(None, feeds)
    np.testing.assert_array_equal(run_onnx(model, feeds, "optimized")[0], want)


def _fails(path: Path, capsys: pytest.CaptureFixture[str], *needles: str) -> None:
    assert main(["import", str(path)]) == 1
    err = capsys.readouterr().err
    assert "Traceback" not in err
    for n in needles:
        assert n in err, err


def test_gathernd_constant_index_out_of_range(tmp_path: Path, capsys) -> None:
    data = np.zeros((2, 3), np.float32)
    path = tmp_path / "m.onnx"
    onnx.save(_model(data, np.array([[1, 2], [1, 3]]), 0, const=True), path)
    _fails(path, capsys, "node 'gnd' (GatherND", "index 3 at [1, 1] is out of range",
           "size 3")


def test_gathernd_indices_longer_than_data_rank(tmp_path: Path, capsys) -> None:
    data = np.zeros((2, 3), np.float32)
    path = tmp_path / "m.onnx"
    onnx.save(_model(data, np.zeros((4, 3), np.int64), 0, const=False), path)
    _fails(path, capsys, "node 'gnd' (GatherND", "last axis is static and at most 2")


def test_gathernd_into_symbolic_axes() -> None:
    """The strides and the clamp's bounds are the symbolic sizes, computed as data: one import
    runs at any size, as onnxruntime, out-of-range indices clamped per axis."""
    node = helper.make_node("GatherND", ["data", "idx"], ["y"], name="gnd")
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info("data", TensorProto.FLOAT, ["n", "m", 2]),
                      helper.make_tensor_value_info("idx", TensorProto.INT64, [4, 2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 2])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    func = import_model(model).module.funcs[0]
    assert [str(d) for d in func.params[0].type.dims] == ["n", "m", "2"]
    rng = np.random.default_rng(3)
    for n, m in ((3, 5), (6, 2)):
        data = rng.standard_normal((n, m, 2)).astype(np.float32)
        idx = np.array([[0, 1], [n - 1, -1], [-n, m - 1], [1, -m]])
        (want,) = ort.InferenceSession(model.SerializeToString()).run(
            None, {"data": data, "idx": idx})
        wide = np.array([[0, m + 3], [-n - 2, 0]])  # out of range: each axis clamps
        sizes = np.array([n, m])
        clamped = np.clip(np.where(wide < 0, wide + sizes, wide), 0, sizes - 1)
        for engine in ("reference", "compiled"):
            (got,) = run_func(func, [data, idx], engine)
            np.testing.assert_array_equal(got, want, err_msg=f"{engine} {n}x{m}")
            (got,) = run_func(func, [data, np.concatenate([idx[:2], wide])], engine)
            np.testing.assert_array_equal(got[2:], data[clamped[:, 0], clamped[:, 1]])


def test_gathernd_run_time_indices_out_of_range_clamp_per_axis() -> None:
    """ONNX leaves them undefined (onnxruntime raises); TCP's gather clamps, and so does each
    index tuple's every axis here: (0, 5) reads (0, 2), not the next row's (1, 2)."""
    data = np.arange(6, dtype=np.float32).reshape(2, 3)
    idx = np.array([[0, 5], [-9, 1], [7, -1], [1, -4]])
    model = _model(data, idx, 0, const=False)
    sizes = np.array(data.shape)
    wrapped = np.where(idx < 0, idx + sizes, idx)
    clamped = np.clip(wrapped, 0, sizes - 1)
    want = data[clamped[:, 0], clamped[:, 1]]
    for engine in ("reference", "compiled"):
        got = run_onnx(model, {"data": data, "idx": idx}, engine)[0]
        np.testing.assert_array_equal(got, want, err_msg=engine)


@pytest.mark.parametrize("const", [False, True])
def test_gather_wraps_negative_indices_into_a_symbolic_axis(const: bool) -> None:
    """Gather wraps as GatherND does: the symbolic size as data (run-time indices, or constant
    negative ones); refused before."""
    idx = np.array([[0, -1], [-3, 2]], np.int64)
    inputs = [helper.make_tensor_value_info("data", TensorProto.FLOAT, [2, "n"])]
    inits = [numpy_helper.from_array(idx, "idx")] if const else []
    if not const:
        inputs.append(helper.make_tensor_value_info("idx", TensorProto.INT64, [2, 2]))
    node = helper.make_node("Gather", ["data", "idx"], ["y"], axis=1)
    graph = helper.make_graph(
        [node], "g", inputs, [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 2, 2])],
        inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    func = import_model(model).module.funcs[0]
    for n in (3, 7):
        data = np.random.default_rng(n).standard_normal((2, n)).astype(np.float32)
        feeds = {"data": data} if const else {"data": data, "idx": idx}
        (want,) = ort.InferenceSession(model.SerializeToString()).run(None, feeds)
        args = [data] if const else [data, idx]
        for engine in ("reference", "compiled"):
            (got,) = run_func(func, args, engine)
            np.testing.assert_array_equal(got, want, err_msg=f"{engine} n={n}")
