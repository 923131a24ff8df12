"""ONNX CumSum imported as a masked sum over a second copy of the axis, and ReduceMean over a
symbolic axis, against onnxruntime."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from numerics import assert_within, error_bounds  # noqa: E402
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from tcp_rules.frontends.onnx import import_model  # noqa: E402
from tcp_rules.pipeline import run_func  # noqa: E402

_TYPES = {np.dtype(np.float32): TensorProto.FLOAT, np.dtype(np.float64): TensorProto.DOUBLE,
          np.dtype(np.int32): TensorProto.INT32, np.dtype(np.int64): TensorProto.INT64}


def _model(shape: list[int] | list[str], dtype: np.dtype, axis: int, exclusive: int,
           reverse: int) -> onnx.ModelProto:
    dt = _TYPES[np.dtype(dtype)]
    node = helper.make_node("CumSum", ["x", "axis"], ["y"], exclusive=exclusive,
                            reverse=reverse, name="cs")
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info("x", dt, shape)],
        [helper.make_tensor_value_info("y", dt, shape)],
        [numpy_helper.from_array(np.array(axis, np.int64), "axis")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(shape=st.lists(st.integers(1, 6), min_size=1, max_size=3), data=st.data(),
       dtype=st.sampled_from([np.float32, np.float64, np.int32, np.int64]),
       exclusive=st.integers(0, 1), reverse=st.integers(0, 1), seed=st.integers(0, 2**16))
def test_cumsum_matches_onnxruntime(shape: list[int], data: st.DataObject, dtype: type,
                                    exclusive: int, reverse: int, seed: int) -> None:
    """Integers exactly; floats within twice the derived bound of a sum of the terms in any
    order (onnxruntime adds them in sequence, TCP's reduce_sum in blocks)."""
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal(shape) * 50).astype(dtype)
    model = _model(shape, np.dtype(dtype), axis, exclusive, reverse)
    (want,) = ort.InferenceSession(model.SerializeToString()).run(None, {"x": x})
    func = import_model(model).module.funcs[0]
    _, (bound,) = error_bounds(func, [x])
    for engine in ("reference", "compiled"):
        (got,) = run_func(func, [x], engine)
        assert got.dtype == want.dtype and got.shape == want.shape, engine
        if np.issubdtype(dtype, np.integer):
            np.testing.assert_array_equal(got, want, err_msg=engine)
        else:
            assert_within(got, want, 2 * bound, f"{engine} vs onnxruntime")


def test_cumsum_along_a_symbolic_axis() -> None:
    """The mask compares two iotas of the symbolic length: one import, any length."""
    model = _model(["n", 3], np.dtype(np.int64), 0, 0, 1)
    func = import_model(model).module.funcs[0]
    assert [str(d) for d in func.params[0].type.dims] == ["n", "3"]
    session = ort.InferenceSession(model.SerializeToString())
    for n in (1, 5, 40):
        x = np.random.default_rng(n).integers(-9, 9, (n, 3))
        (want,) = session.run(None, {"x": x})
        for engine in ("reference", "compiled"):
            (got,) = run_func(func, [x], engine)
            np.testing.assert_array_equal(got, want, err_msg=f"{engine} n={n}")


def test_reduce_mean_over_a_symbolic_axis() -> None:
    """Its size divides as data (a sum of ones): a mean over the sequence, as mean pooling."""
    node = helper.make_node("ReduceMean", ["x", "axes"], ["y"], keepdims=0)
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, "n", 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])],
        [numpy_helper.from_array(np.array([1], np.int64), "axes")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    func = import_model(model).module.funcs[0]
    session = ort.InferenceSession(model.SerializeToString())
    for n in (1, 6, 100):
        x = np.random.default_rng(n).standard_normal((2, n, 3)).astype(np.float32)
        (want,) = session.run(None, {"x": x})
        _, (bound,) = error_bounds(func, [x])
        for engine in ("reference", "compiled"):
            (got,) = run_func(func, [x], engine)
            assert_within(got, want, 2 * bound, f"{engine} n={n}")
