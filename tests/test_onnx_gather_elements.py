"""ONNX GatherElements (torch.gather's export) imported as TCP's gather at linear indices,
against onnxruntime: any axis, indices shorter than the data on the other axes, negative
indices, constant or run-time, symbolic axes; and its errors."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from onnx_support import import_fails, run_onnx

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from tcp_rules.frontends.onnx import import_model  # noqa: E402
from tcp_rules.pipeline import run_func  # noqa: E402

_TYPES = {np.dtype(np.float32): TensorProto.FLOAT, np.dtype(np.int64): TensorProto.INT64}


def _model(data_shape: list[int | str], idx: np.ndarray, axis: int, const: bool,
           dtype: type = np.float32, idx_shape: list[int | str] | None = None
           ) -> onnx.ModelProto:
    ty = _TYPES[np.dtype(dtype)]
    inputs = [helper.make_tensor_value_info("data", ty, data_shape)]
    inits = []
    out = idx_shape or list(idx.shape)
    if const:
        inits.append(numpy_helper.from_array(idx, "idx"))
    else:
        inputs.append(helper.make_tensor_value_info("idx", TensorProto.INT64, out))
    node = helper.make_node("GatherElements", ["data", "idx"], ["y"], axis=axis, name="ge")
    graph = helper.make_graph([node], "g", inputs, [
        helper.make_tensor_value_info("y", ty, out)], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


@st.composite
def _cases(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray, int]:
    """(data, indices, axis): indices in [-size, size) along the axis, no longer than the data
    on the others."""
    rank = draw(st.integers(1, 4))
    shape = draw(st.lists(st.integers(1, 4), min_size=rank, max_size=rank))
    axis = draw(st.integers(-rank, rank - 1))
    out = [draw(st.integers(1, 5)) if k == axis % rank else draw(st.integers(1, n))
           for k, n in enumerate(shape)]
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    n = shape[axis]
    idx = rng.integers(-n, n, size=out).astype(np.int64)
    dtype = draw(st.sampled_from([np.float32, np.int64]))
    return (rng.standard_normal(shape) * 100).astype(dtype), idx, axis


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=_cases(), const=st.booleans())
def test_gather_elements_matches_onnxruntime(case: tuple[np.ndarray, np.ndarray, int],
                                             const: bool) -> None:
    """A gather copies elements: the same bits as onnxruntime on both engines."""
    data, idx, axis = case
    model = _model(list(data.shape), idx, axis, const, data.dtype.type)
    feeds = {"data": data} if const else {"data": data, "idx": idx}
    (want,) = ort.InferenceSession(model.SerializeToString()).run(None, feeds)
    for engine in ("reference", "compiled"):
        (got,) = run_onnx(model, feeds, engine)
        assert got.dtype == want.dtype and got.shape == want.shape, engine
        np.testing.assert_array_equal(got, want, err_msg=engine)


def test_gather_elements_optimized_and_along_symbolic_axes() -> None:
    """Strides and the clamp's bound are symbolic sizes computed as data: one import runs at any
    size; and the optimized engine."""
    model = _model(["n", "m"], np.zeros((1, 3), np.int64), 1, const=False,
                   idx_shape=["n", 3])
    func = import_model(model).module.funcs[0]
    for n, m in ((2, 3), (4, 6)):
        rng = np.random.default_rng(m)
        data = rng.standard_normal((n, m)).astype(np.float32)
        idx = rng.integers(-m, m, (n, 3)).astype(np.int64)
        (want,) = ort.InferenceSession(model.SerializeToString()).run(
            None, {"data": data, "idx": idx})
        for engine in ("reference", "compiled"):
            (got,) = run_func(func, [data, idx], engine)
            np.testing.assert_array_equal(got, want, err_msg=f"{engine} {n}x{m}")
    data = np.random.default_rng(0).standard_normal((3, 4)).astype(np.float32)
    idx = np.array([[0, -1, 2], [1, 0, -2]], np.int64)
    static = _model([3, 4], idx, 1, const=False)
    (want,) = ort.InferenceSession(static.SerializeToString()).run(None, {"data": data,
                                                                        "idx": idx})
    np.testing.assert_array_equal(run_onnx(static, {"data": data, "idx": idx}, "optimized")[0],
                                  want)


def test_gather_elements_run_time_indices_out_of_range_clamp() -> None:
    """ONNX leaves them undefined (onnxruntime raises); they clamp into the gathered axis, as
    TCP's gather clamps: never into the next row."""
    data = np.arange(6, dtype=np.float32).reshape(2, 3)
    idx = np.array([[5, -9], [3, 1]], np.int64)
    wrapped = np.where(idx < 0, idx + 3, idx)
    want = np.take_along_axis(data, np.clip(wrapped, 0, 2), axis=1)
    for engine in ("reference", "compiled"):
        (got,) = run_onnx(_model([2, 3], idx, 1, const=False), {"data": data, "idx": idx},
                          engine)
        np.testing.assert_array_equal(got, want, err_msg=engine)


def test_gather_elements_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import_fails(_model([2, 3], np.array([[0, 3]], np.int64), 1, const=True), tmp_path, capsys,
           "node 'ge' (GatherElements", "index 3 is out of range for axis 1 of size 3")
    import_fails(_model([2, 3], np.zeros((2, 4, 1), np.int64), 1, const=False), tmp_path, capsys,
           "indices [2, 4, 1] must have the data's rank")
    import_fails(_model([2, 3], np.zeros((3, 1), np.int64), 1, const=False), tmp_path, capsys,
           "no axis longer than the data's [2, 3] but for axis 1")
