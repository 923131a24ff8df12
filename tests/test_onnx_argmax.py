"""ONNX ArgMax, ArgMin and OneHot, built on TCP's iota, against onnxruntime (and NumPy where
ONNX leaves NaN open)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from tcp_rules.frontends.onnx import import_model  # noqa: E402
from tcp_rules.pipeline import run_func  # noqa: E402

_TYPES = {np.dtype(np.float32): TensorProto.FLOAT, np.dtype(np.int32): TensorProto.INT32}


def _arg_model(op: str, shape: list[int] | list[str], dtype: np.dtype, axis: int, keep: int,
               last: int) -> onnx.ModelProto:
    node = helper.make_node(op, ["x"], ["y"], axis=axis, keepdims=keep, select_last_index=last)
    a = axis % len(shape)
    out = [*shape[:a], *([1] if keep else []), *shape[a + 1:]]
    graph = helper.make_graph([node], "g",
                              [helper.make_tensor_value_info("x", _TYPES[dtype], shape)],
                              [helper.make_tensor_value_info("y", TensorProto.INT64, out)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(shape=st.lists(st.integers(1, 5), min_size=1, max_size=3), data=st.data(),
       op=st.sampled_from(["ArgMax", "ArgMin"]), dtype=st.sampled_from([np.float32, np.int32]),
       keep=st.integers(0, 1), last=st.integers(0, 1), seed=st.integers(0, 2**16))
def test_arg_extremes_match_onnxruntime(shape: list[int], data: st.DataObject, op: str,
                                        dtype: type, keep: int, last: int, seed: int) -> None:
    """Few distinct values, so ties are common: the first (or last) of them, as onnxruntime;
    -0.0 and +0.0 tie."""
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    rng = np.random.default_rng(seed)
    x = rng.choice(np.array([-1.0, -0.0, 0.0, 2.0, 3.0]), shape).astype(dtype)
    model = _arg_model(op, shape, np.dtype(dtype), axis, keep, last)
    (want,) = ort.InferenceSession(model.SerializeToString()).run(None, {"x": x})
    func = import_model(model).module.funcs[0]
    for engine in ("reference", "compiled"):
        (got,) = run_func(func, [x], engine)
        np.testing.assert_array_equal(got, want, err_msg=engine)


def test_argmax_finds_the_first_nan_as_numpy_does() -> None:
    x = np.array([[1.0, np.nan, 5.0, np.nan], [2.0, 7.0, 7.0, -1.0], [np.inf, 1.0, 0, 2]],
                 np.float32)
    for op, numpy_fn in (("ArgMax", np.argmax), ("ArgMin", np.argmin)):
        func = import_model(_arg_model(op, [3, 4], np.dtype(np.float32), 1, 0, 0)
                            ).module.funcs[0]
        for engine in ("reference", "compiled"):
            (got,) = run_func(func, [x], engine)
            np.testing.assert_array_equal(got, numpy_fn(x, axis=1), err_msg=f"{op} {engine}")


def test_argmax_along_a_symbolic_axis() -> None:
    model = _arg_model("ArgMax", [2, "n"], np.dtype(np.float32), 1, 1, 0)
    func = import_model(model).module.funcs[0]
    session = ort.InferenceSession(model.SerializeToString())
    for n in (1, 7, 300):
        x = np.random.default_rng(n).standard_normal((2, n)).astype(np.float32)
        (want,) = session.run(None, {"x": x})
        (got,) = run_func(func, [x], "compiled")
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("axis", [-1, 0, 1])
def test_one_hot_of_run_time_indices(axis: int) -> None:
    """Negative indices wrap, those outside [-depth, depth) are all off; the values and the
    indices arrive at run time."""
    node = helper.make_node("OneHot", ["i", "depth", "v"], ["y"], axis=axis)
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info("i", TensorProto.INT64, ["n", 2]),
                      helper.make_tensor_value_info("v", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT,
                                       [*["n", 2][:axis % 3], 4, *["n", 2][axis % 3:]])],
        [numpy_helper.from_array(np.array(4, np.int64), "depth")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 11)])
    func = import_model(model).module.funcs[0]
    i = np.array([[0, 3], [-1, -4], [4, -5], [2, 1]], np.int64)
    v = np.array([-0.5, 2.0], np.float32)
    (want,) = ort.InferenceSession(model.SerializeToString()).run(None, {"i": i, "v": v})
    for engine in ("reference", "compiled"):
        (got,) = run_func(func, [i, v], engine)
        np.testing.assert_array_equal(got, want, err_msg=engine)
