"""ONNX Swish, SwiGLU, LpNormalization, LpPool, CumProd, QuantizeLinear, DequantizeLinear,
DepthToSpace, SpaceToDepth and CenterCropPad against onnxruntime (ONNX's reference evaluator
where onnxruntime lacks the opset): integers and moved elements bit for bit, the floats within
2 E (tests/numerics.py)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from numerics import assert_within, error_bounds
from onnx_support import with_output_shapes

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from onnx import helper, numpy_helper  # noqa: E402
from onnx.reference import ReferenceEvaluator  # noqa: E402

from tcp_rules.diagnostics import TcpError  # noqa: E402
from tcp_rules.frontends.onnx import import_model  # noqa: E402
from tcp_rules.pipeline import run_func  # noqa: E402


def _model(op: str, opset: int, inputs: dict[str, np.ndarray], consts: dict[str, np.ndarray],
           attrs: dict[str, Any]) -> onnx.ModelProto:
    vis = [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(a.dtype), a.shape)
           for n, a in inputs.items()]
    names = [*inputs, *consts]
    node = helper.make_node(op, names, ["y"], name="n", **attrs)
    graph = helper.make_graph([node], "g", vis, [helper.make_tensor_value_info("y", 0, None)],
                              [numpy_helper.from_array(a, n) for n, a in consts.items()])
    return with_output_shapes(
        helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)]))


def _peer(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> np.ndarray:
    try:
        return ort.InferenceSession(model.SerializeToString()).run(None, feeds)[0]
    except Exception:  # an opset onnxruntime 1.32 does not implement
        return ReferenceEvaluator(model).run(None, feeds)[0]


RNG = np.random.default_rng(9)
X = RNG.standard_normal((2, 3, 5, 4)).astype(np.float32)
CASES: dict[str, tuple[str, int, dict[str, np.ndarray], dict[str, np.ndarray], dict[str, Any]]] = {
    "swish": ("Swish", 24, {"x": X}, {}, {"alpha": 1.5}),
    "swiglu": ("SwiGLU", 28, {"a": X, "b": X[::-1].copy()}, {}, {"alpha": 0.7}),
    "l1norm": ("LpNormalization", 22, {"x": X}, {}, {"axis": 1, "p": 1}),
    "l2norm": ("LpNormalization", 22, {"x": np.where(np.arange(5)[:, None] < 2, 0, X)}, {},
               {}),  # rows of zeros: 0, not NaN
    "lppool": ("LpPool", 22, {"x": X}, {}, {"kernel_shape": [2, 3], "pads": [1, 0, 0, 1],
                                            "p": 3}),
    "lppool2": ("LpPool", 22, {"x": X}, {}, {"kernel_shape": [3, 2], "strides": [2, 1]}),
    "cumprod": ("CumProd", 26, {"x": X}, {"axis": np.array(2)}, {"exclusive": 1, "reverse": 1}),
    "cumprod_int": ("CumProd", 26, {"x": (X * 3).astype(np.int32)}, {"axis": np.array(-1)}, {}),
    "dequant_axis": ("DequantizeLinear", 21, {"x": RNG.integers(-128, 128, (2, 3, 4), np.int8)},
                     {"s": np.array([0.5, 0.01, 2.0], np.float32),
                      "z": np.array([1, -3, 0], np.int8)}, {"axis": 1}),
    "dequant_blocked": ("DequantizeLinear", 21,
                        {"x": RNG.integers(0, 65536, (3, 7), np.uint16)},
                        {"s": RNG.uniform(0.1, 1, (3, 3)).astype(np.float32),
                         "z": RNG.integers(0, 65536, (3, 3), np.uint16)},
                        {"axis": 1, "block_size": 3}),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_float_results_match_the_peer(name: str) -> None:
    op, opset, inputs, consts, attrs = CASES[name]
    model = _model(op, opset, inputs, consts, attrs)
    want = _peer(model, inputs)
    imported = import_model(model)
    func = imported.module.funcs[0]
    arrays = {**inputs, **imported.weights}
    args = [arrays[p.param] for p in func.params]
    _, (bound,) = error_bounds(func, args)
    for engine in ("reference", "compiled"):
        (got,) = run_func(func, args, engine)
        if want.dtype.kind in "iu":
            np.testing.assert_array_equal(got, want, err_msg=f"{engine} {name}")
        else:
            assert_within(got, want, 2 * bound, f"{engine} {name}")


@pytest.mark.parametrize("to", [np.int8, np.uint8, np.int16, np.uint16])
@pytest.mark.parametrize("layout", ["tensor", "axis", "blocked"])
def test_quantize_matches_onnxruntime(to: type, layout: str) -> None:
    """Bit for bit, ties rounding half to even and saturation at both ends included."""
    info = np.iinfo(to)
    x = np.concatenate([RNG.uniform(-3, 3, (2, 3, 8)),
                        np.full((2, 3, 2), 0.25), np.full((2, 3, 2), -0.75)], axis=2)
    x[0, 0, :2] = [1e6, -1e6]
    x = x.astype(np.float32)
    shapes = {"tensor": (), "axis": (3,), "blocked": (2, 3, 3)}
    scale = RNG.uniform(0.004, 0.02, shapes[layout]).astype(np.float32)
    if layout == "tensor":
        scale = np.array(0.5, np.float32)  # 0.25 / 0.5 and -0.75 / 0.5 are ties
    zp = RNG.integers(info.min // 2, info.max // 2, shapes[layout]).astype(to)
    attrs = {"axis": 1} if layout == "axis" else {"axis": 2, "block_size": 5} \
        if layout == "blocked" else {}
    model = _model("QuantizeLinear", 21, {"x": x}, {"s": scale, "z": zp}, attrs)
    (want,) = ort.InferenceSession(model.SerializeToString()).run(None, {"x": x})
    imported = import_model(model)
    func = imported.module.funcs[0]
    arrays = {"x": x, **imported.weights}
    for engine in ("reference", "compiled"):
        (got,) = run_func(func, [arrays[p.param] for p in func.params], engine)
        np.testing.assert_array_equal(got, want, err_msg=f"{engine} {layout} {to}")


def test_quantize_errors() -> None:
    x = np.zeros((2, 4), np.float32)
    with pytest.raises(TcpError, match=r"the scale f32\[3\] must be one value or one per index "
                       "along axis 1"):
        import_model(_model("QuantizeLinear", 21, {"x": x}, {"s": np.ones(3, np.float32)},
                            {"axis": 1}))
    with pytest.raises(TcpError, match=r"does not block f32\[2, 4\] by 3 along axis 1"):
        import_model(_model("QuantizeLinear", 21, {"x": x}, {"s": np.ones((2, 1), np.float32)},
                            {"axis": 1, "block_size": 3}))


@pytest.mark.parametrize(("op", "opset", "shape", "consts", "attrs"), [
    ("DepthToSpace", 13, (2, 8, 3, 2), {}, {"blocksize": 2}),
    ("DepthToSpace", 13, (1, 18, 2, 3), {}, {"blocksize": 3, "mode": "CRD"}),
    ("SpaceToDepth", 13, (2, 3, 4, 6), {}, {"blocksize": 2}),
    ("SpaceToDepth", 28, (1, 2, 6, 3), {}, {"blocksize": 3, "mode": "CRD"}),
    ("CenterCropPad", 18, (5, 4, 3), {"shape": np.array([3, 7], np.int64)}, {"axes": [0, -1]}),
    ("CenterCropPad", 18, (6, 3), {"shape": np.array([3, 6], np.int64)}, {}),
])
def test_data_movement_matches_the_peer(op: str, opset: int, shape: tuple[int, ...],
                                        consts: dict[str, np.ndarray],
                                        attrs: dict[str, Any]) -> None:
    """Moved elements: the same bits, floats and integers."""
    for x in (RNG.standard_normal(shape).astype(np.float32),
              RNG.integers(-9, 9, shape).astype(np.int64)):
        model = _model(op, opset, {"x": x}, consts, attrs)
        want = _peer(model, {"x": x})
        func = import_model(model).module.funcs[0]
        for engine in ("reference", "compiled"):
            (got,) = run_func(func, [x], engine)
            np.testing.assert_array_equal(got, want, err_msg=f"{engine} {op} {attrs}")
