"""ONNX Resize and Upsample: every mode, coordinate transformation and rounding against ONNX's
reference evaluator, the configurations models use against onnxruntime, a U-Net exported by
PyTorch, integer images, the older operator forms and the errors."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from numerics import assert_within, error_bounds, unit_roundoff
from onnx_support import (
    assert_matches_onnxruntime,
    import_fails,
    run_onnx,
    with_output_shapes,
)

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from onnx import TensorProto, helper, numpy_helper  # noqa: E402
from onnx.reference import ReferenceEvaluator  # noqa: E402
from onnx.reference.ops.op_resize import Resize  # noqa: E402

from tcp_rules.frontends.onnx import import_model  # noqa: E402
from tcp_rules.frontends.onnx.resize import Mode, axis_taps, source_coordinates  # noqa: E402
from tcp_rules.ir import Func  # noqa: E402
from tcp_rules.pipeline import run_func  # noqa: E402

TYPES = {np.dtype(np.float32): TensorProto.FLOAT, np.dtype(np.float16): TensorProto.FLOAT16,
         np.dtype(np.uint8): TensorProto.UINT8, np.dtype(np.int8): TensorProto.INT8}


def _model(shape: tuple[int | str, ...], attrs: dict[str, Any], *, roi: list[float] | None = None,
           scales: list[float] | None = None, sizes: list[int] | None = None,
           dtype: type = np.float32, op: str = "Resize",
           opset: int = 19) -> onnx.ModelProto:
    names, inits = ["x"], []
    if op == "Resize" and opset == 11 and roi is None:  # roi is optional from opset 13 on
        roi = []
    for name, value, dt in [("roi", roi, np.float32), ("scales", scales, np.float32),
                            ("sizes", sizes, np.int64)]:
        if (op == "Resize" and opset >= 11) or name == "scales":
            names.append(name if value is not None else "")
        if value is not None:
            inits.append(numpy_helper.from_array(np.asarray(value, dt), name))
    while names[-1] == "":
        names.pop()
    graph = helper.make_graph([helper.make_node(op, names, ["y"], **attrs)], "g",
                              [helper.make_tensor_value_info("x", TYPES[np.dtype(dtype)], shape)],
                              [helper.make_tensor_value_info("y", TYPES[np.dtype(dtype)], None)],
                              inits)
    return with_output_shapes(
        helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)]))


class _Resize64(Resize):
    """ONNX's reference Resize with the cubic coefficient as a float64. Its attribute is an
    np.float32, and NumPy then evaluates the whole cubic kernel in float32, whose cancellation
    leaves the weights ~1e-5 off (-0.0173607 for -0.0173611); onnxruntime's and ours are
    within an ulp of the float64 ones."""

    op_domain = ""

    def _run(self, *args: Any, cubic_coeff_a: Any = None, **kwargs: Any) -> Any:
        a = None if cubic_coeff_a is None else float(cubic_coeff_a)
        return super()._run(*args, cubic_coeff_a=a, **kwargs)


_Resize64.__name__ = "Resize"  # the op it stands for


def _reference(model: onnx.ModelProto, x: np.ndarray) -> np.ndarray:
    return ReferenceEvaluator(model, new_ops=[_Resize64]).run(None, {"x": x})[0]


def _imported(model: onnx.ModelProto, x: np.ndarray) -> tuple[Func, list[np.ndarray]]:
    """The model's func and its arguments: ``x`` and the importer's weights."""
    imported = import_model(model)
    func = imported.module.funcs[0]
    return func, [x if p.param == "x" else imported.weights[p.param] for p in func.params]


def _mode(attrs: dict[str, Any]) -> Mode:
    return Mode(attrs["mode"], attrs["coordinate_transformation_mode"],
                attrs.get("nearest_mode", "round_prefer_floor"), attrs.get("cubic_coeff_a", -0.75),
                bool(attrs.get("exclude_outside")), bool(attrs.get("antialias")))


@st.composite
def _cases(draw: st.DrawFn) -> tuple[np.ndarray, dict[str, Any], dict[str, Any]]:
    kind = draw(st.sampled_from(["nearest", "linear", "cubic"]))
    coordinates = draw(st.sampled_from(["half_pixel", "half_pixel_symmetric",
                                        "pytorch_half_pixel", "align_corners", "asymmetric",
                                        "tf_crop_and_resize"]))
    attrs: dict[str, Any] = {"mode": kind, "coordinate_transformation_mode": coordinates}
    if kind == "nearest":
        attrs["nearest_mode"] = draw(st.sampled_from(["round_prefer_floor", "round_prefer_ceil",
                                                      "floor", "ceil"]))
    else:
        attrs["antialias"] = int(draw(st.booleans()))
        attrs["exclude_outside"] = int(draw(st.booleans()))
    if kind == "cubic" and draw(st.booleans()):
        attrs["cubic_coeff_a"] = draw(st.sampled_from([-0.5, -0.75]))
    rank = draw(st.integers(2, 4))
    shape = tuple(draw(st.integers(1, 7)) for _ in range(rank))
    axes = sorted(draw(st.sets(st.integers(0, rank - 1), min_size=1, max_size=2)))
    if draw(st.booleans()):
        attrs["axes"] = draw(st.permutations(axes))
    inputs: dict[str, Any] = {}
    resized = attrs.get("axes", list(range(rank)))
    if draw(st.booleans()):
        inputs["scales"] = [draw(st.sampled_from([0.3, 0.5, 0.6, 0.75, 1.0, 1.5, 2.0, 2.7, 3.0]))
                            for _ in resized]
    else:
        inputs["sizes"] = [draw(st.integers(1, 9)) for _ in resized]
        if len(resized) > 1 and draw(st.booleans()):
            attrs["keep_aspect_ratio_policy"] = draw(st.sampled_from(["not_larger",
                                                                      "not_smaller"]))
    if coordinates == "tf_crop_and_resize":
        # binary fractions: the reference evaluator subtracts them in float32, exactly so
        lo = [draw(st.sampled_from([0.0, -0.25, 0.125, 0.375])) for _ in resized]
        hi = [draw(st.sampled_from([1.0, 0.75, 0.875, 1.25])) for _ in resized]
        inputs["roi"] = lo + hi
        attrs["extrapolation_value"] = draw(st.sampled_from([0.0, -3.5]))
    dtype = np.dtype(draw(st.sampled_from([np.float32, np.float32, np.float16])))
    x = np.random.default_rng(draw(st.integers(0, 2**16))).standard_normal(shape).astype(dtype)
    return x, attrs, inputs


def _axis_scales(x: np.ndarray, attrs: dict[str, Any], inputs: dict[str, Any]
                 ) -> list[tuple[int, float, tuple[float, float]]]:
    """(axis, scale, roi window) of each axis a case names, as the operator defines them."""
    axes = attrs.get("axes", list(range(x.ndim)))
    if "scales" in inputs:
        scales = [float(np.float32(s)) for s in inputs["scales"]]
    else:
        scales = [n / x.shape[a] for n, a in zip(inputs["sizes"], axes, strict=True)]
        policy = attrs.get("keep_aspect_ratio_policy", "stretch")
        if policy != "stretch":
            scales = [min(scales) if policy == "not_larger" else max(scales)] * len(axes)
    roi = [float(np.float32(r)) for r in inputs.get("roi", [0.0] * len(axes) + [1.0] * len(axes))]
    return [(a, s, (roi[i], roi[len(axes) + i])) for i, (a, s) in enumerate(zip(axes, scales,
                                                                                  strict=True))]


def _reference_is_ambiguous(x: np.ndarray, attrs: dict[str, Any], y: np.ndarray,
                            inputs: dict[str, Any]) -> bool:
    """Whether a source coordinate lies within rounding of a whole pixel without being one.
    The reference evaluator then picks its taps from x + pad rounded in float64 and its weights
    from x itself, which need not agree; an exact coordinate makes both the same."""
    for a, scale, span in _axis_scales(x, attrs, inputs):
        c, _ = source_coordinates(attrs["coordinate_transformation_mode"], y.shape[a],
                                  x.shape[a], scale, span)
        if ((np.abs(c - np.round(c)) < 1e-9) & (c != np.round(c))).any():
            return True
    return False


def _weight_error(x: np.ndarray, func_steps: list[tuple[int, Any]]) -> np.ndarray:
    """How far our result can be from the exact one from the weights' rounding to the compute
    type alone: each pass adds u times the sum of |w| |input| and carries earlier errors
    through |w| (first order)."""
    u = unit_roundoff(np.dtype(np.float32))
    mag, err = np.abs(x.astype(np.float64)), np.zeros(x.shape)
    for axis, taps in func_steps:
        if taps.weight is None:
            mag, err = np.take(mag, taps.index, axis), np.take(err, taps.index, axis)
            continue
        w = np.abs(taps.weight).reshape((1,) * axis + taps.weight.shape
                                        + (1,) * (x.ndim - axis - 1))
        mag = (np.take(mag, taps.index, axis) * w).sum(axis=axis + 1)
        err = (np.take(err, taps.index, axis) * w).sum(axis=axis + 1) + u * mag
    return err


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_cases())
@example((np.arange(7, dtype=np.float32).reshape(1, 7),
          {"mode": "nearest", "coordinate_transformation_mode": "align_corners",
           "nearest_mode": "floor"}, {"sizes": [1, 4]}))
def test_resize_matches_the_reference_evaluator(
        case: tuple[np.ndarray, dict[str, Any], dict[str, Any]]) -> None:
    """Nearest bit for bit; linear and cubic within our error bound E (tests/numerics.py), plus
    the weights' rounding to f32, plus the reference's own rounding of its float64 result."""
    x, attrs, inputs = case
    model = _model(x.shape, attrs, dtype=x.dtype.type, **inputs)
    want = _reference(model, x)
    if _reference_is_ambiguous(x, attrs, want, inputs):
        return
    func, args = _imported(model, x)
    _, (bound,) = error_bounds(func, args)
    for engine in ("reference", "compiled"):
        (got,) = run_func(func, args, engine)
        assert got.shape == want.shape, f"{engine} {attrs} {inputs}"
        if attrs["mode"] == "nearest":
            np.testing.assert_array_equal(got, want, err_msg=f"{engine} {attrs} {inputs}")
            continue
        steps = _axis_steps(x, attrs, inputs, want.shape)
        weights = _weight_error(x, steps)
        u = unit_roundoff(x.dtype)
        total = bound + weights + u * (np.abs(want.astype(np.float64)) + weights) + 1e-30
        assert_within(got, want, total, f"{engine} {attrs} {inputs}")


def _axis_steps(x: np.ndarray, attrs: dict[str, Any], inputs: dict[str, Any],
                out: tuple[int, ...]) -> list[tuple[int, Any]]:
    """The per-axis tables of a case, for the weights' part of its bound."""
    return [(a, axis_taps(_mode(attrs), x.shape[a], out[a], scale, span))
            for a, scale, span in _axis_scales(x, attrs, inputs)
            if not (out[a] == x.shape[a] and abs(scale - 1) < 1e-9 and span == (0.0, 1.0))]


# What exporters write: PyTorch's nearest (asymmetric, floor) and nearest-exact (half_pixel,
# round_prefer_ceil is its rounding of x + 0.5 down), bilinear and bicubic with and without
# align_corners, antialiased downsampling; TensorFlow's half-pixel nearest (opset 11). Sizes
# that make every weight a short binary fraction, exact in f32 however computed: weights from
# other sizes are compared with the float64 reference above, as onnxruntime computes its
# coordinates in f32.
PEER_CASES = [
    ({"mode": "nearest", "coordinate_transformation_mode": "asymmetric",
      "nearest_mode": "floor"}, {"scales": [1, 1, 2, 2]}, 19),
    ({"mode": "nearest", "coordinate_transformation_mode": "half_pixel",
      "nearest_mode": "round_prefer_ceil", "axes": [2, 3]}, {"sizes": [5, 11]}, 19),
    ({"mode": "linear", "coordinate_transformation_mode": "half_pixel"},
     {"scales": [1, 1, 2, 2]}, 19),
    ({"mode": "linear", "coordinate_transformation_mode": "align_corners", "axes": [2, 3]},
     {"sizes": [15, 7]}, 19),
    ({"mode": "linear", "coordinate_transformation_mode": "pytorch_half_pixel",
      "antialias": 1, "axes": [2, 3]}, {"sizes": [4, 2]}, 19),
    ({"mode": "cubic", "coordinate_transformation_mode": "half_pixel"},
     {"scales": [1, 1, 2, 4]}, 19),
    ({"mode": "cubic", "coordinate_transformation_mode": "align_corners",
      "cubic_coeff_a": -0.5, "axes": [-2, -1]}, {"sizes": [15, 7]}, 19),
    ({"mode": "nearest", "coordinate_transformation_mode": "tf_half_pixel_for_nn"},
     {"scales": [1, 1, 2, 3]}, 11),
    ({"mode": "linear", "coordinate_transformation_mode": "asymmetric"},
     {"scales": [1, 1, 0.5, 2]}, 13),
    ({"mode": "nearest", "axes": [3, 2]}, {"scales": [3, 0.5]}, 19),
]


@pytest.mark.parametrize(("attrs", "inputs", "opset"), PEER_CASES)
def test_what_exporters_write_matches_onnxruntime(attrs: dict[str, Any], inputs: dict[str, Any],
                                                  opset: int) -> None:
    """Against onnxruntime, with a symbolic batch, on every engine: nearest bit for bit, the
    others within 2 E (tests/numerics.py)."""
    x = np.random.default_rng(7).standard_normal((2, 3, 8, 4)).astype(np.float32)
    model = _model(("batch", 3, 8, 4), attrs, opset=opset, **inputs)
    (want,) = ort.InferenceSession(model.SerializeToString()).run(None, {"x": x})
    _, (bound,) = error_bounds(*_imported(model, x))
    for engine in ("reference", "compiled", "optimized"):
        (got,) = run_onnx(model, {"x": x}, engine)
        if attrs["mode"] == "nearest":
            np.testing.assert_array_equal(got, want, err_msg=engine)
        else:
            assert_within(got, want, 2 * bound, engine)


@pytest.mark.parametrize(("op", "opset", "mode", "scales"), [
    ("Resize", 10, "nearest", [1, 1, 2, 3]), ("Resize", 10, "nearest", [1, 1, 0.5, 0.75]),
    ("Resize", 10, "linear", [1, 1, 2, 0.5]), ("Upsample", 9, "nearest", [1, 1, 2, 3]),
    ("Upsample", 9, "linear", [1, 1, 2, 2]), ("Upsample", 7, "nearest", [1, 1, 3, 2]),
])
def test_the_first_forms_match_onnxruntime(op: str, opset: int, mode: str,
                                           scales: list[float]) -> None:
    """Resize-10 and Upsample: asymmetric coordinates; nearest rounds down, up on an axis that
    shrinks (onnxruntime's reading of the text, which gave no rounding)."""
    x = np.random.default_rng(3).standard_normal((2, 3, 8, 4)).astype(np.float32)
    if opset == 7:
        model = _model(x.shape, {"mode": mode, "scales": [float(s) for s in scales]}, op=op,
                       opset=opset)
        del model.graph.node[0].input[1:]
        del model.graph.initializer[:]
    else:
        model = _model(x.shape, {"mode": mode}, scales=scales, op=op, opset=opset)
    (want,) = ort.InferenceSession(model.SerializeToString()).run(None, {"x": x})
    (got,) = run_onnx(model, {"x": x}, "compiled")
    if mode == "nearest":
        np.testing.assert_array_equal(got, want)
    else:  # the weights are 0, 1/2 and 1; the sums round their own ways
        _, (bound,) = error_bounds(*_imported(model, x))
        assert_within(got, want, 2 * bound)


@pytest.mark.parametrize("dtype", [np.uint8, np.int8])
@pytest.mark.parametrize("mode", ["nearest", "linear", "cubic"])
def test_integer_images(dtype: type, mode: str) -> None:
    """Integer images: nearest moves them as they are (against onnxruntime); linear and cubic
    compute in f64, rounded half to even and saturated as the reference evaluator does."""
    info = np.iinfo(dtype)
    x = np.random.default_rng(5).integers(info.min, info.max, (1, 2, 5, 6), endpoint=True,
                                          dtype=dtype)
    x[:, :, :2], x[:, :, 2:4] = info.max, info.min  # a step: the cubic overshoots it
    attrs = {"mode": mode, "coordinate_transformation_mode": "half_pixel"}
    model = _model(x.shape, attrs, scales=[1, 1, 1.6, 0.5], dtype=dtype)
    want = (ort.InferenceSession(model.SerializeToString()).run(None, {"x": x})[0]
            if mode == "nearest" else _reference(model, x))
    for engine in ("compiled", "optimized"):
        (got,) = run_onnx(model, {"x": x}, engine)
        assert got.dtype == dtype
        np.testing.assert_array_equal(got, want, err_msg=engine)
    if mode == "cubic":  # the cubic's overshoot saturates
        assert (want == info.max).any() or (want == info.min).any()


@pytest.mark.parametrize("engine", ["compiled", "optimized"])
def test_a_unet_exported_by_pytorch(engine: str) -> None:
    """tests/data/onnx/unet.onnx (export_unet.py): convolutions, max pooling, nearest and
    bilinear upsampling by 2 (Resize with scales [1, 1, 2, 2]: the symbolic batch is left as
    it is), skip connections; against onnxruntime at two batch sizes."""
    path = Path(__file__).parent / "data" / "onnx" / "unet.onnx"
    assert sorted(n.attribute[-1].s for n in onnx.load(path).graph.node
                  if n.op_type == "Resize") == [b"linear", b"nearest"]
    assert_matches_onnxruntime(path, engine, [(1, 3, 16, 16), (3, 3, 16, 16)])


def test_sizes_from_the_input_shape() -> None:
    """sizes computed from the input's shape (Shape, Slice, Concat, as exporters write
    F.interpolate(x, size=...)): the symbolic batch and channels stay, the image resizes."""
    nodes = [helper.make_node("Shape", ["x"], ["shape"]),
             helper.make_node("Slice", ["shape", "zero", "two"], ["lead"]),
             helper.make_node("Concat", ["lead", "hw"], ["sizes"], axis=0),
             helper.make_node("Resize", ["x", "", "", "sizes"], ["y"], mode="linear")]
    inits = [numpy_helper.from_array(np.array(v, np.int64), n)
             for n, v in [("zero", [0]), ("two", [2]), ("hw", [6, 10])]]
    graph = helper.make_graph(nodes, "g", [
        helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", "c", 3, 5])], [
        helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    model = with_output_shapes(helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 19)]))
    x = np.random.default_rng(2).standard_normal((2, 4, 3, 5)).astype(np.float32)
    func, args = _imported(model, x)
    assert [str(d) for d in func.results[0].type.dims] == ["n", "c", "6", "10"]
    (want,) = ort.InferenceSession(model.SerializeToString()).run(None, {"x": x})
    (got,) = run_func(func, args, "compiled")
    _, (bound,) = error_bounds(func, args)
    assert_within(got, want, 2 * bound)


def test_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    shape = (1, 2, 4, 4)
    for attrs, inputs, needle in [
        ({"mode": "area"}, {"scales": [1, 1, 2, 2]}, "mode 'area' is not nearest, linear or "
         "cubic"),
        ({"mode": "nearest", "antialias": 1}, {"scales": [1, 1, 2, 2]},
         "antialias needs mode linear or cubic"),
        ({"coordinate_transformation_mode": "edge"}, {"scales": [1, 1, 2, 2]},
         "coordinate_transformation_mode 'edge' is not one of"),
        ({"nearest_mode": "up"}, {"scales": [1, 1, 2, 2]}, "nearest_mode 'up' is not one of"),
        ({}, {"scales": [1, 1, 2, 2], "sizes": [1, 2, 8, 8]},
         "exactly one of scales and sizes must be given"),
        ({}, {"scales": [2, 2]}, "scales or sizes need 4 entries and roi 8, got 2 and None"),
        ({}, {"scales": [1, 1, 0, 2]}, "scales [1.0, 1.0, 0.0, 2.0] must be positive"),
        ({"axes": [2, 2]}, {"scales": [2, 2]}, "axes [2, 2] repeat an axis"),
        ({"keep_aspect_ratio_policy": "fit", "axes": [2, 3]}, {"sizes": [3, 3]},
         "keep_aspect_ratio_policy 'fit' is not stretch, not_larger or not_smaller"),
    ]:
        import_fails(_model(shape, attrs, **inputs), tmp_path, capsys, "Resize", needle)
    import_fails(_model(("n", 2, 4, 4), {}, scales=[2, 1, 1, 1]), tmp_path, capsys,
                 "the resized axes [0] of X f32[n, 2, 4, 4] must be static")
    run_time = _model(shape, {}, scales=[1, 1, 2, 2])
    del run_time.graph.initializer[:]
    run_time.graph.input.append(helper.make_tensor_value_info("scales", TensorProto.FLOAT, [4]))
    import_fails(run_time, tmp_path, capsys, "scales (input 'scales') must be known when "
                 "importing")
