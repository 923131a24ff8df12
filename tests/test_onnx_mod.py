"""ONNX Mod on integers against onnxruntime: C's remainder (fmod=1) and Python's (fmod=0),
signed and unsigned, broadcast; and the refusal of floating-point Mod."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from onnx import helper  # noqa: E402

from tcp_rules.diagnostics import TcpError  # noqa: E402
from tcp_rules.frontends.onnx import import_model  # noqa: E402
from tcp_rules.pipeline import run_func  # noqa: E402

_DTYPES = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64]


def _model(a: np.ndarray, b: np.ndarray, fmod: int) -> onnx.ModelProto:
    ty = helper.np_dtype_to_tensor_dtype(a.dtype)
    node = helper.make_node("Mod", ["a", "b"], ["y"], fmod=fmod, name="mod")
    out = np.broadcast_shapes(a.shape, b.shape)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("a", ty, a.shape),
                                            helper.make_tensor_value_info("b", ty, b.shape)],
                              [helper.make_tensor_value_info("y", ty, out)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(dtype=st.sampled_from(_DTYPES), fmod=st.sampled_from([0, 1]), seed=st.integers(0, 2**16),
       broadcast=st.booleans())
def test_integer_mod_matches_onnxruntime(dtype: type, fmod: int, seed: int,
                                         broadcast: bool) -> None:
    """Bit for bit: the extremes of the type included, the divisor never 0 (undefined) and
    MIN % -1 left out (its quotient overflows; onnxruntime gives 0, C leaves it undefined)."""
    info = np.iinfo(dtype)
    rng = np.random.default_rng(seed)
    a = rng.integers(info.min, info.max, (3, 4), dtype=dtype, endpoint=True)
    b = rng.integers(info.min, info.max, (4,) if broadcast else (3, 4), dtype=dtype,
                     endpoint=True)
    b[b == 0] = 7
    if info.min < 0:
        b[b == -1] = -3
    a.flat[0], b.flat[0] = info.max, 5  # and a small divisor into an extreme
    (want,) = ort.InferenceSession(_model(a, b, fmod).SerializeToString()).run(
        None, {"a": a, "b": b})
    func = import_model(_model(a, b, fmod)).module.funcs[0]
    for engine in ("reference", "compiled"):
        (got,) = run_func(func, [a, b], engine)
        np.testing.assert_array_equal(got, want, err_msg=f"{engine} {dtype} fmod={fmod}")


def test_float_mod_is_refused() -> None:
    a = np.ones(3, np.float32)
    with pytest.raises(TcpError, match=r"node 'mod' \(Mod, opset 13\): Mod of f32 needs an "
                       "exact floating-point remainder"):
        import_model(_model(a, a, 1))
