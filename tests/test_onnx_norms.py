"""ONNX InstanceNormalization and GroupNormalization (opset 21) against onnxruntime:
ranks 3 to 5, symbolic batch and image sizes, f32 and f16, and the errors."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from numerics import assert_within, error_bounds
from onnx_support import import_fails, run_onnx

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from tcp_rules.frontends.onnx import import_model  # noqa: E402

TYPES = {np.float32: TensorProto.FLOAT, np.float16: TensorProto.FLOAT16}


def _model(op: str, shape: list[int | str], channels: int, params: int, opset: int,
           dtype: type, **attrs: int | float) -> tuple[onnx.ModelProto, dict[str, np.ndarray]]:
    rng = np.random.default_rng(channels)
    weights = {"scale": rng.uniform(0.5, 2.0, params).astype(dtype),
               "bias": rng.standard_normal(params).astype(dtype)}
    graph = helper.make_graph(
        [helper.make_node(op, ["x", "scale", "bias"], ["y"], **attrs)], "g",
        [helper.make_tensor_value_info("x", TYPES[dtype], shape)],
        [helper.make_tensor_value_info("y", TYPES[dtype], shape)],
        [numpy_helper.from_array(v, k) for k, v in weights.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)]), weights


@st.composite
def _cases(draw: st.DrawFn) -> tuple[str, int, list[int], type, dict[str, int | float]]:
    op = draw(st.sampled_from(["InstanceNormalization", "GroupNormalization"]))
    groups = draw(st.integers(1, 3))
    channels = groups * draw(st.integers(1, 3))
    image = [draw(st.integers(1, 5)) for _ in range(draw(st.integers(1, 3)))]
    attrs: dict[str, int | float] = {"epsilon": draw(st.sampled_from([1e-5, 1e-2]))}
    if op == "GroupNormalization":
        attrs["num_groups"] = groups
    dtype = draw(st.sampled_from([np.float32, np.float16]))
    return op, channels, image, dtype, attrs


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_cases(), st.integers(1, 3), st.integers(0, 2**16))
def test_norms_match_onnxruntime(case: tuple[str, int, list[int], type, dict[str, int | float]],
                                 batch: int, seed: int) -> None:
    """Within 2 E of onnxruntime, the batch and the first image axis symbolic."""
    op, channels, image, dtype, attrs = case
    symbolic: list[int | str] = ["n", channels, "h", *image[1:]]
    model, _ = _model(op, symbolic, channels, channels, 21, dtype, **attrs)
    x = np.random.default_rng(seed).standard_normal((batch, channels, *image)).astype(dtype)
    x *= dtype(3)
    (want,) = ort.InferenceSession(model.SerializeToString()).run(None, {"x": x})
    imported = import_model(model)
    func = imported.module.funcs[0]
    args = [x if p.param == "x" else imported.weights[p.param] for p in func.params]
    _, (bound,) = error_bounds(func, args)
    for engine in ("reference", "compiled"):
        (got,) = run_onnx(model, {"x": x}, engine)
        assert_within(got, want, 2 * bound, f"{engine} {op} {x.shape} {attrs}")


@pytest.mark.parametrize("op", ["InstanceNormalization", "GroupNormalization"])
def test_optimized(op: str) -> None:
    """The optimizer's program (the rules see into the composition) stays within 2 E."""
    attrs = {"num_groups": 2} if op == "GroupNormalization" else {}
    model, _ = _model(op, ["n", 4, 5, 3], 4, 4, 21, np.float32, **attrs)
    x = np.random.default_rng(0).standard_normal((2, 4, 5, 3)).astype(np.float32)
    (want,) = ort.InferenceSession(model.SerializeToString()).run(None, {"x": x})
    imported = import_model(model)
    func = imported.module.funcs[0]
    _, (bound,) = error_bounds(func, [x if p.param == "x" else imported.weights[p.param]
                                      for p in func.params])
    (got,) = run_onnx(model, {"x": x}, "optimized")
    assert_within(got, want, 2 * bound, op)


def test_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    model, _ = _model("GroupNormalization", [1, 6, 4], 6, 6, 21, np.float32, num_groups=4)
    import_fails(model, tmp_path, capsys, "GroupNormalization needs static channels that "
                 "num_groups=4 divides, got f32[1, 6, 4]")
    model, _ = _model("InstanceNormalization", [2, 6], 6, 6, 21, np.float32)
    import_fails(model, tmp_path, capsys, "InstanceNormalization needs an input of rank 3 or "
                 "more")
    model, _ = _model("InstanceNormalization", [2, 6, 3], 6, 5, 21, np.float32)
    import_fails(model, tmp_path, capsys, "input 1 must be [6], one value per channel, got "
                 "f32[5]")
