"""ONNX NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss against onnxruntime: ranks 2 to
4, class weights, ignore_index inside and outside the classes, every reduction, and the
log-probabilities output."""

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

from tcp_rules.diagnostics import TcpError  # noqa: E402
from tcp_rules.frontends.onnx import import_model  # noqa: E402
from tcp_rules.pipeline import run_func  # noqa: E402


def _model(op: str, x: np.ndarray, t: np.ndarray, weight: bool, attrs: dict[str, Any],
           outputs: int = 1) -> onnx.ModelProto:
    ins = [helper.make_tensor_value_info("x", TensorProto.FLOAT, x.shape),
           helper.make_tensor_value_info("t", TensorProto.INT64, t.shape)]
    if weight:
        ins.append(helper.make_tensor_value_info("w", TensorProto.FLOAT, (x.shape[1],)))
    outs = ["loss", "log_prob"][:outputs]
    node = helper.make_node(op, ["x", "t", *(["w"] if weight else [])], outs, name="loss",
                            **attrs)
    graph = helper.make_graph([node], "g", ins, [
        helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in outs])
    return with_output_shapes(
        helper.make_model(graph, opset_imports=[helper.make_opsetid("", 22)]))


@st.composite
def _cases(draw: st.DrawFn) -> tuple[str, dict[str, np.ndarray], dict[str, Any], bool, int]:
    op = draw(st.sampled_from(["NegativeLogLikelihoodLoss", "SoftmaxCrossEntropyLoss"]))
    rank = draw(st.integers(2, 4))
    n, c = draw(st.integers(1, 3)), draw(st.integers(1, 5))
    rest = [draw(st.integers(1, 3)) for _ in range(rank - 2)]
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    x = rng.standard_normal((n, c, *rest)).astype(np.float32)
    if op == "NegativeLogLikelihoodLoss":  # log-probabilities, as the loss expects
        x = np.log(np.exp(x) / np.exp(x).sum(axis=1, keepdims=True)).astype(np.float32)
    t = rng.integers(0, c, (n, *rest)).astype(np.int64)
    attrs: dict[str, Any] = {"reduction": draw(st.sampled_from(["none", "sum", "mean"]))}
    ignore = draw(st.sampled_from([None, 0, -1]))
    if ignore is not None:
        attrs["ignore_index"] = ignore
        t = np.where(rng.random(t.shape) < 0.3, ignore, t)
        if attrs["reduction"] == "mean" and (t == ignore).all():
            t.flat[0] = c - 1 if ignore != c - 1 else 0  # not every sample ignored: 0 / 0
    feeds = {"x": x, "t": t}
    weight = draw(st.booleans())
    if weight:
        feeds["w"] = rng.uniform(0.5, 2.0, c).astype(np.float32)
    outputs = 2 if op == "SoftmaxCrossEntropyLoss" and draw(st.booleans()) else 1
    return op, feeds, attrs, weight, outputs


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_cases())
def test_losses_match_onnxruntime(case: tuple[str, dict[str, np.ndarray], dict[str, Any],
                                              bool, int]) -> None:
    """Within 2 E of onnxruntime (tests/numerics.py): sums over the samples and the classes."""
    op, feeds, attrs, weight, outputs = case
    model = _model(op, feeds["x"], feeds["t"], weight, attrs, outputs)
    want = ort.InferenceSession(model.SerializeToString()).run(None, feeds)
    func = import_model(model).module.funcs[0]
    args = [feeds[p.param] for p in func.params]
    _, bounds = error_bounds(func, args)
    for engine in ("reference", "compiled"):
        got = run_func(func, args, engine)
        for g, w, b in zip(got, want, bounds, strict=True):
            assert_within(g, w, 2 * b, f"{engine} {op} {attrs} weight={weight}")


def test_loss_errors() -> None:
    x, t = np.zeros((2, 3), np.float32), np.zeros((3,), np.int64)
    with pytest.raises(TcpError, match=r"the target i64\[3\] must be the input f32\[2, 3\] "
                       "without its class axis 1"):
        import_model(_model("NegativeLogLikelihoodLoss", x, t, False, {}))
    with pytest.raises(TcpError, match="reduction 'avg' is not none, sum or mean"):
        import_model(_model("SoftmaxCrossEntropyLoss", x, t[:2], False, {"reduction": "avg"}))
