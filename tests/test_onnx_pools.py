"""ONNX MaxPool, AveragePool, GlobalAveragePool and GlobalMaxPool against onnxruntime: 1-D to
3-D, strides, dilations, explicit and automatic padding, ceil_mode, count_include_pad."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from numerics import assert_within, error_bounds
from onnx_support import with_output_shapes

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from onnx import TensorProto, helper  # noqa: E402
from onnx.reference import ReferenceEvaluator  # noqa: E402

from tcp_rules.diagnostics import TcpError  # noqa: E402
from tcp_rules.frontends.onnx import import_model  # noqa: E402
from tcp_rules.pipeline import run_func  # noqa: E402


def _model(op: str, shape: tuple[int, ...], attrs: dict[str, Any],
           outputs: int = 1) -> onnx.ModelProto:
    node = helper.make_node(op, ["x"], ["y", "i"][:outputs], name="pool", **attrs)
    graph = helper.make_graph([node], "g", [
        helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)], [
        helper.make_tensor_value_info(o, t, None)
        for o, t in [("y", TensorProto.FLOAT), ("i", TensorProto.INT64)][:outputs]])
    return with_output_shapes(
        helper.make_model(graph, opset_imports=[helper.make_opsetid("", 22)]))


def _peer(model: onnx.ModelProto, x: np.ndarray) -> np.ndarray:
    """onnxruntime's result where it has the shape ONNX's shape inference gives; else, where
    onnxruntime departs from the specification (its SAME padding ignores dilations, and its
    ceil_mode drops some last windows), ONNX's reference evaluator's."""
    (y,) = model.graph.output[:1]
    shape = tuple(d.dim_value for d in y.type.tensor_type.shape.dim)
    try:
        got = ort.InferenceSession(model.SerializeToString()).run(None, {"x": x})[0]
        if got.shape == shape:
            return got
    except Exception:
        pass
    return ReferenceEvaluator(model).run(None, {"x": x})[0]


@st.composite
def _cases(draw: st.DrawFn) -> tuple[str, np.ndarray, dict[str, Any]]:
    op = draw(st.sampled_from(["MaxPool", "AveragePool"]))
    n = draw(st.integers(1, 3))
    kernel = [draw(st.integers(1, 3)) for _ in range(n)]
    dilations = [draw(st.integers(1, 2)) for _ in range(n)]
    sizes = [draw(st.integers((k - 1) * d + 1, 7)) for k, d in zip(kernel, dilations,
                                                                    strict=True)]
    pad = draw(st.sampled_from(["none", "explicit", "SAME_UPPER", "SAME_LOWER", "VALID"]))
    same = pad.startswith("SAME")
    # SAME padding (deprecated for pools) with dilations or a stride beyond the kernel:
    # onnxruntime and ONNX's reference leave dilations out of the padding and onnxruntime pads
    # negatively; we follow the specification's formula (test_same_padding_follows_the_spec).
    if same:
        dilations = [1] * n
    strides = [draw(st.integers(1, k if same else 3)) for k in kernel]
    attrs: dict[str, Any] = {"kernel_shape": kernel, "strides": strides}
    if any(d > 1 for d in dilations):
        attrs["dilations"] = dilations
    if pad == "explicit":  # ONNX: a pad smaller than the kernel
        attrs["pads"] = [draw(st.integers(0, k - 1)) for k in kernel * 2]
    elif pad != "none":
        attrs["auto_pad"] = pad
    if pad in ("none", "explicit") and draw(st.booleans()):
        attrs["ceil_mode"] = 1
    if op == "AveragePool" and draw(st.booleans()):
        attrs["count_include_pad"] = 1
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    x = rng.standard_normal((draw(st.integers(1, 2)), 2, *sizes)).astype(np.float32)
    return op, x, attrs


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_cases())
def test_pools_match_onnxruntime(case: tuple[str, np.ndarray, dict[str, Any]]) -> None:
    """MaxPool bit for bit; AveragePool within 2 E of the peer (tests/numerics.py)."""
    op, x, attrs = case
    model = _model(op, x.shape, attrs)
    want = _peer(model, x)
    imported = import_model(model)
    func = imported.module.funcs[0]
    args = [x if p.param == "x" else imported.weights[p.param] for p in func.params]
    _, (bound,) = error_bounds(func, args)
    for engine in ("reference", "compiled"):
        (got,) = run_func(func, args, engine)
        assert got.shape == want.shape, f"{engine} {op} {attrs}: {got.shape} {want.shape}"
        if op == "MaxPool":
            np.testing.assert_array_equal(got, want, err_msg=f"{engine} {attrs}")
        else:
            assert_within(got, want, 2 * bound, f"{engine} {op} {attrs}")


@pytest.mark.parametrize("auto_pad", ["SAME_UPPER", "SAME_LOWER"])
def test_same_padding_follows_the_spec(auto_pad: str) -> None:
    """pad = (out - 1) * stride + (kernel - 1) * dilation + 1 - size, as the operator's text
    says (onnxruntime and ONNX's reference evaluator leave the dilation out), and never
    negative, as TensorFlow's SAME (onnxruntime shifts the window instead)."""
    x = np.array([[[3.0, 1.0, 2.0]]], np.float32)
    func = import_model(_model("MaxPool", x.shape, {"kernel_shape": [2], "dilations": [2],
                                                    "auto_pad": auto_pad})).module.funcs[0]
    # extent 3, out 3: pads (1, 1) either way; the windows read (-1, 1), (0, 2), (1, 3)
    np.testing.assert_array_equal(run_func(func, [x], "compiled")[0], [[[1.0, 3.0, 1.0]]])
    x2 = x[..., :2]
    func = import_model(_model("MaxPool", x2.shape, {"kernel_shape": [1], "strides": [2],
                                                     "auto_pad": auto_pad})).module.funcs[0]
    np.testing.assert_array_equal(run_func(func, [x2], "compiled")[0], [[[3.0]]])


@pytest.mark.parametrize("op", ["GlobalAveragePool", "GlobalMaxPool"])
def test_global_pools(op: str) -> None:
    x = np.random.default_rng(1).standard_normal((2, 3, 5, 4)).astype(np.float32)
    model = _model(op, x.shape, {})
    want = _peer(model, x)
    func = import_model(model).module.funcs[0]
    _, (bound,) = error_bounds(func, [x])
    for engine in ("reference", "compiled"):
        (got,) = run_func(func, [x], engine)
        assert_within(got, want, 2 * bound, f"{engine} {op}")


def test_maxpool_nan_and_errors() -> None:
    x = np.zeros((1, 1, 4), np.float32)
    x[0, 0, 1] = np.nan
    func = import_model(_model("MaxPool", x.shape, {"kernel_shape": [2]})).module.funcs[0]
    (got,) = run_func(func, [x], "compiled")
    assert np.isnan(got[0, 0, :2]).all() and got[0, 0, 2] == 0
    with pytest.raises(TcpError, match="MaxPool's Indices output is not supported"):
        import_model(_model("MaxPool", x.shape, {"kernel_shape": [2]}, outputs=2))
    with pytest.raises(TcpError, match=r"kernel_shape \[2, 2\] must be 1 positive numbers"):
        import_model(_model("AveragePool", x.shape, {"kernel_shape": [2, 2]}))
