"""ONNX TopK against onnxruntime, bit for bit: values and indices, largest and smallest, any
axis, ties (the lower index first), signed and unsigned integers and floats with infinities;
NaN, which ONNX leaves open, counted as the most extreme; and the errors."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from tcp_rules.diagnostics import TcpError  # noqa: E402
from tcp_rules.frontends.onnx import import_model  # noqa: E402
from tcp_rules.pipeline import run_func  # noqa: E402


def _model(x: np.ndarray, k: int, axis: int, largest: int) -> onnx.ModelProto:
    ty = helper.np_dtype_to_tensor_dtype(x.dtype)
    node = helper.make_node("TopK", ["x", "k"], ["values", "indices"], axis=axis,
                            largest=largest, name="topk")
    out = list(x.shape)
    out[axis] = k
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info("x", ty, x.shape)],
        [helper.make_tensor_value_info("values", ty, out),
         helper.make_tensor_value_info("indices", TensorProto.INT64, out)],
        [numpy_helper.from_array(np.array([k], np.int64), "k")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 11)])


@st.composite
def _cases(draw: st.DrawFn) -> tuple[np.ndarray, int, int, int]:
    rank = draw(st.integers(1, 3))
    shape = draw(st.lists(st.integers(1, 6), min_size=rank, max_size=rank))
    axis = draw(st.integers(-rank, rank - 1))
    k = draw(st.integers(1, shape[axis]))
    dtype = draw(st.sampled_from([np.float32, np.float64, np.int32, np.int64, np.uint8]))
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    x = rng.integers(0, 4, shape).astype(dtype)  # few values: many ties
    if np.dtype(dtype).kind == "f":
        x[rng.random(shape) < 0.2] = np.inf
        x[rng.random(shape) < 0.2] = -np.inf
    else:  # the type's extremes, which the rounds' masks must not confuse with taken ones
        info = np.iinfo(dtype)
        x[rng.random(shape) < 0.2] = info.min
        x[rng.random(shape) < 0.2] = info.max
    return x, k, axis, draw(st.sampled_from([0, 1]))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_cases())
def test_topk_matches_onnxruntime(case: tuple[np.ndarray, int, int, int]) -> None:
    x, k, axis, largest = case
    model = _model(x, k, axis, largest)
    want = ort.InferenceSession(model.SerializeToString()).run(None, {"x": x})
    func = import_model(model).module.funcs[0]
    for engine in ("reference", "compiled"):
        got = run_func(func, [x], engine)
        for g, w in zip(got, want, strict=True):
            assert g.dtype == w.dtype, engine
            np.testing.assert_array_equal(g, w, err_msg=f"{engine} k={k} axis={axis} "
                                          f"largest={largest}")


def test_topk_nan_counts_as_the_most_extreme() -> None:
    x = np.array([[1.0, np.nan, 3.0, np.nan, 2.0]], np.float32)
    for largest, order in ((1, [1, 3, 2]), (0, [1, 3, 0])):
        func = import_model(_model(x, 3, 1, largest)).module.funcs[0]
        values, indices = run_func(func, [x], "compiled")
        assert indices.tolist() == [order]
        np.testing.assert_array_equal(values, x[:, order])


def test_topk_errors() -> None:
    x = np.zeros((2, 3), np.float32)
    with pytest.raises(TcpError, match=r"node 'topk' \(TopK, opset 11\): K = 4 must be "
                       r"between 1 and the axis' size 3"):
        import_model(_model(x, 4, 1, 1))
