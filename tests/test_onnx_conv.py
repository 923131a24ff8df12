"""ONNX Conv imported as im2col matmuls, against onnxruntime: 1-D to 3-D, groups (depthwise
too), strides, dilations, explicit and automatic padding, bias; a symbolic batch; a small CNN
exported by PyTorch; and the errors."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from numerics import assert_within, error_bounds
from onnx_support import assert_matches_onnxruntime, import_fails, with_output_shapes

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from tcp_rules.frontends.onnx import import_model  # noqa: E402
from tcp_rules.optimize import OptOptions  # noqa: E402
from tcp_rules.pipeline import optimize_func, run_func  # noqa: E402
from tcp_rules.rules.library import load_standard_library  # noqa: E402


def _model(x_shape: list[Any], w: np.ndarray, b: np.ndarray | None, attrs: dict[str, Any],
           weights_as_inputs: bool = False, op: str = "Conv") -> onnx.ModelProto:
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape)]
    inits = []
    names = ["x", "w"] + (["b"] if b is not None else [])
    for name, arr in (("w", w), ("b", b)):
        if arr is None:
            continue
        if weights_as_inputs:
            inputs.append(helper.make_tensor_value_info(name, TensorProto.FLOAT, arr.shape))
        else:
            inits.append(numpy_helper.from_array(arr, name))
    node = helper.make_node(op, names, ["y"], name="conv", **attrs)
    graph = helper.make_graph([node], "g", inputs, [
        helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    return with_output_shapes(
        helper.make_model(graph, opset_imports=[helper.make_opsetid("", 22)]))


def _check(model: onnx.ModelProto, x: np.ndarray, engines: tuple[str, ...], what: str) -> None:
    """Each engine within 2 E of onnxruntime, E the running error bound of the imported program
    (tests/numerics.py): dot products of C * K terms, each implementation summing its way.
    onnxruntime refuses dilations with SAME padding: there ONNX's reference evaluator is the
    peer."""
    attrs = {a.name: helper.get_attribute_value(a) for a in model.graph.node[0].attribute}
    if attrs.get("auto_pad", b"NOTSET").startswith(b"SAME") and \
            any(d > 1 for d in attrs.get("dilations", [])):
        from onnx.reference import ReferenceEvaluator

        (want,) = ReferenceEvaluator(model).run(None, {"x": x})
    else:
        (want,) = ort.InferenceSession(model.SerializeToString()).run(None, {"x": x})
    imported = import_model(model)
    func = imported.module.funcs[0]
    args = [x if p.param == "x" else imported.weights[p.param] for p in func.params]
    _, (bound,) = error_bounds(func, args)
    for engine in engines:
        f = func
        if engine == "optimized":
            f = optimize_func(func, load_standard_library().rules, OptOptions()).func
        (got,) = run_func(f, args, "reference" if engine == "reference" else "compiled")
        assert_within(got, want, 2 * bound, f"{engine} {what}")


@st.composite
def _cases(draw: st.DrawFn) -> tuple[onnx.ModelProto, np.ndarray, str]:
    n = draw(st.integers(1, 3))
    groups = draw(st.sampled_from([1, 1, 2, 3]))
    cg, mg = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    kernel = [draw(st.integers(1, 3)) for _ in range(n)]
    pad = draw(st.sampled_from(["none", "explicit", "SAME_UPPER", "SAME_LOWER", "VALID"]))
    # SAME with a stride beyond the kernel: onnxruntime pads negatively (shifts the window)
    strides = [draw(st.integers(1, min(2, k) if pad.startswith("SAME") else 2))
               for k in kernel]
    dilations = [draw(st.integers(1, 2)) for _ in range(n)]
    sizes = [draw(st.integers((k - 1) * d + 1, 7)) for k, d in zip(kernel, dilations,
                                                                    strict=True)]
    attrs: dict[str, Any] = {"group": groups, "strides": strides, "dilations": dilations}
    if pad == "explicit":
        attrs["pads"] = [draw(st.integers(0, 2)) for _ in range(2 * n)]
    elif pad != "none":
        attrs["auto_pad"] = pad
    if draw(st.booleans()):
        attrs["kernel_shape"] = kernel
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    batch = draw(st.integers(1, 2))
    x = rng.standard_normal((batch, cg * groups, *sizes)).astype(np.float32)
    w = rng.standard_normal((mg * groups, cg, *kernel)).astype(np.float32)
    b = rng.standard_normal(mg * groups).astype(np.float32) if draw(st.booleans()) else None
    return _model(list(x.shape), w, b, attrs), x, str(attrs)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_cases())
def test_conv_matches_onnxruntime(case: tuple[onnx.ModelProto, np.ndarray, str]) -> None:
    model, x, what = case
    _check(model, x, ("reference", "compiled"), what)


@pytest.mark.parametrize("attrs", [
    {"pads": [1, 1, 1, 1]},
    {"group": 4, "strides": [2, 2], "auto_pad": "SAME_UPPER"},  # depthwise
    {"dilations": [2, 1], "pads": [0, 1, 2, 0]},
])
def test_conv_optimized(attrs: dict[str, Any]) -> None:
    rng = np.random.default_rng(4)
    groups = attrs.get("group", 1)
    x = rng.standard_normal((2, 4, 9, 8)).astype(np.float32)
    w = rng.standard_normal((8, 4 // groups, 3, 3)).astype(np.float32)
    b = rng.standard_normal(8).astype(np.float32)
    _check(_model(list(x.shape), w, b, attrs), x, ("compiled", "optimized"), str(attrs))


def test_conv_with_a_symbolic_batch() -> None:
    rng = np.random.default_rng(5)
    w = rng.standard_normal((6, 3, 3, 3)).astype(np.float32)
    model = _model(["batch", 3, 8, 8], w, None, {"pads": [1, 1, 1, 1], "strides": [2, 2]})
    imported = import_model(model)
    func = imported.module.funcs[0]
    assert str(func.params[0].type.dims[0]) == "batch"
    for batch in (1, 4):
        x = rng.standard_normal((batch, 3, 8, 8)).astype(np.float32)
        static = _model(list(x.shape), w, None, {"pads": [1, 1, 1, 1], "strides": [2, 2]})
        (want,) = ort.InferenceSession(static.SerializeToString()).run(None, {"x": x})
        args = [x if p.param == "x" else imported.weights[p.param] for p in func.params]
        (got,) = run_func(func, args, "compiled")
        _, (bound,) = error_bounds(func, args)
        assert_within(got, want, 2 * bound, f"batch {batch}")


def test_conv_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    w = np.zeros((4, 3, 3, 3), np.float32)
    import_fails(_model([1, 6, 5, 5], w, None, {"group": 3}), tmp_path, capsys,
           "node 'conv' (Conv", "6 input channels and 4 output channels do not split into 3 "
           "groups of W's 3 input channels")
    import_fails(_model([1, 3, "h", 5], w, None, {}, weights_as_inputs=True), tmp_path, capsys,
           "the spatial sizes [h, 5] must be static")
    import_fails(_model([1, 3, 2, 5], w, None, {}), tmp_path, capsys,
           "the window [3, 3] does not fit the padded input [2, 5]")


@pytest.mark.parametrize("engine", ["compiled", "optimized"])
def test_a_cnn_exported_by_pytorch(engine: str) -> None:
    """tests/data/onnx/cnn.onnx (export_cnn.py): convolutions (3x3 with the batch norm folded
    in, depthwise with stride 2, pointwise), max pooling, ReLU6, a mean over the image and a
    linear layer, batch symbolic; against onnxruntime at two batch sizes."""
    path = Path(__file__).parent / "data" / "onnx" / "cnn.onnx"
    assert_matches_onnxruntime(path, engine, [(1, 3, 16, 16), (5, 3, 16, 16)])


@st.composite
def _transposed(draw: st.DrawFn) -> tuple[onnx.ModelProto, np.ndarray, str]:
    n = draw(st.integers(1, 2))
    groups = draw(st.sampled_from([1, 1, 2]))
    cg, mg = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    kernel = [draw(st.integers(1, 3)) for _ in range(n)]
    strides = [draw(st.integers(1, 3)) for _ in range(n)]
    dilations = [draw(st.integers(1, 2)) for _ in range(n)]
    sizes = [draw(st.integers(1, 5)) for _ in range(n)]
    attrs: dict[str, Any] = {"group": groups, "strides": strides, "dilations": dilations}
    # output_padding below the stride (onnxruntime's rule; the operator allows the dilation)
    attrs["output_padding"] = [draw(st.integers(0, s - 1)) for s in strides]
    full = [s * (i - 1) + o + (k - 1) * d + 1 for s, i, o, k, d in zip(
        strides, sizes, attrs["output_padding"], kernel, dilations, strict=True)]
    pad = draw(st.sampled_from(["explicit", "output_shape", "none"]))
    if pad == "explicit":  # the output at least one element long
        pads = [draw(st.integers(0, 2)) for _ in range(2 * n)]
        attrs["pads"] = [min(p, (f - 1) // 2) for p, f in zip(pads, full * 2, strict=True)]
    elif pad == "output_shape":
        attrs["output_shape"] = [max(1, f - draw(st.integers(0, 2))) for f in full]
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    x = rng.standard_normal((draw(st.integers(1, 2)), cg * groups, *sizes)).astype(np.float32)
    w = rng.standard_normal((cg * groups, mg, *kernel)).astype(np.float32)
    b = rng.standard_normal(mg * groups).astype(np.float32) if draw(st.booleans()) else None
    return _model(list(x.shape), w, b, attrs, op="ConvTranspose"), x, str(attrs)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_transposed())
def test_conv_transpose_matches_onnxruntime(case: tuple[onnx.ModelProto, np.ndarray, str]
                                            ) -> None:
    model, x, what = case
    _check(model, x, ("reference", "compiled"), what)


def test_conv_transpose_with_run_time_weights() -> None:
    """W as a graph input: flipped and regrouped in TCP ops (a gather per spatial axis)."""
    rng = np.random.default_rng(8)
    x = rng.standard_normal((2, 4, 3, 5)).astype(np.float32)
    w = rng.standard_normal((4, 3, 2, 3)).astype(np.float32)
    attrs = {"group": 2, "strides": [2, 1], "pads": [1, 0, 0, 1]}
    model = _model(list(x.shape), w, None, attrs, weights_as_inputs=True, op="ConvTranspose")
    (want,) = ort.InferenceSession(model.SerializeToString()).run(None, {"x": x, "w": w})
    imported = import_model(model)
    func = imported.module.funcs[0]
    arrays = {"x": x, "w": w, **imported.weights}
    _, (bound,) = error_bounds(func, [arrays[p.param] for p in func.params])
    for engine in ("reference", "compiled", "optimized"):
        f = func if engine != "optimized" else optimize_func(
            func, load_standard_library().rules, OptOptions()).func
        (got,) = run_func(f, [arrays[p.param] for p in f.params],
                          "reference" if engine == "reference" else "compiled")
        assert_within(got, want, 2 * bound, engine)
