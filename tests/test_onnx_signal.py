"""ONNX DFT and STFT against NumPy's FFT in float64 (forward and inverse, real and complex,
one-sided both ways, dft_length padding and cutting, any axis, windows), the window
generators, and the errors."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from numerics import assert_within, error_bounds
from onnx_support import import_fails, run_onnx, with_output_shapes

onnx = pytest.importorskip("onnx")

from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from tcp_rules.frontends.onnx import import_model  # noqa: E402

U64 = 2.0**-53


def _model(op: str, x_shape: list[int | str], consts: dict[str, np.ndarray],
           inputs: list[str], opset: int = 20, **attrs: Any) -> onnx.ModelProto:
    graph = helper.make_graph(
        [helper.make_node(op, inputs, ["y"], **attrs)], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(v, k) for k, v in consts.items()])
    return with_output_shapes(
        helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)]))


def _numpy_dft(x: np.ndarray, axis: int, n: int, inverse: bool, onesided: bool) -> np.ndarray:
    """The operator's meaning, by NumPy's FFT in float64 (as ONNX's reference, widened)."""
    z = x[..., 0].astype(np.float64)
    if x.shape[-1] == 2:
        z = z + 1j * x[..., 1].astype(np.float64)
    if inverse and onesided:
        return np.fft.irfft(z, n=n, axis=axis)[..., None]
    y = np.fft.ifft(z, n=n, axis=axis) if inverse else np.fft.fft(z, n=n, axis=axis)
    if onesided:
        y = np.take(y, np.arange(n // 2 + 1), axis=axis)
    return np.stack([y.real, y.imag], -1)


def _bound(func: Any, args: list[np.ndarray], x: np.ndarray) -> np.ndarray:
    """E (our f64 sums and the final rounding to f32) plus the f64 cosines' and sines' own
    error, a few units of 2^-53 of each term."""
    _, (e,) = error_bounds(func, args)
    return e + 4 * U64 * float(np.abs(x).sum())


@st.composite
def _dfts(draw: st.DrawFn) -> tuple[np.ndarray, dict[str, Any], int | None, int]:
    rank = draw(st.integers(1, 3))
    shape = [draw(st.integers(1, 7)) for _ in range(rank)]
    inverse, onesided = draw(st.booleans()), draw(st.booleans())
    complex_in = inverse or (not onesided and draw(st.booleans()))
    axis = draw(st.integers(0, rank - 1))
    n = draw(st.one_of(st.none(), st.integers(1, 9)))
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    x = rng.standard_normal([*shape, 2 if complex_in else 1]).astype(np.float32)
    return x, {"inverse": int(inverse), "onesided": int(onesided)}, n, axis


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_dfts())
def test_dft_matches_numpy(case: tuple[np.ndarray, dict[str, Any], int | None, int]) -> None:
    x, attrs, n, axis = case
    consts = {"axis": np.array(axis, np.int64)}
    if n is not None:
        consts["dft_length"] = np.array(n, np.int64)
    model = _model("DFT", list(x.shape), consts, ["x", "dft_length" if n is not None else "",
                                                  "axis"], **attrs)
    length = n if n is not None else (2 * (x.shape[axis] - 1) if attrs["inverse"] and
                                      attrs["onesided"] else x.shape[axis])
    if length < 1:
        return  # an irfft of one point has no length
    want = _numpy_dft(x, axis, length, bool(attrs["inverse"]), bool(attrs["onesided"]))
    imported = import_model(model)
    func = imported.module.funcs[0]
    args = [x if p.param == "x" else imported.weights[p.param] for p in func.params]
    bound = _bound(func, args, x)
    for engine in ("reference", "compiled"):
        (got,) = run_onnx(model, {"x": x}, engine)
        assert_within(got.astype(np.float64), want, bound, f"{engine} {attrs} n={n} {axis}")


@pytest.mark.parametrize(("frame", "step", "window"), [(8, 4, "hann"), (5, 2, None),
                                                      (16, 16, "hann"), (7, 3, "ones")])
def test_stft_matches_numpy(frame: int, step: int, window: str | None) -> None:
    """Frames of the signal times the window, each one's one-sided DFT."""
    rng = np.random.default_rng(frame)
    x = rng.standard_normal((2, 40, 1)).astype(np.float32)
    w = {"hann": np.hanning(frame + 1)[:-1], "ones": np.ones(frame), None: None}[window]
    consts = {"step": np.array(step, np.int64), "length": np.array(frame, np.int64)}
    names = ["x", "step", "", "length"]
    if w is not None:
        consts["window"] = w.astype(np.float32)
        names[2] = "window"
    model = _model("STFT", list(x.shape), consts, names, opset=17)
    frames = (40 - frame) // step + 1
    at = np.arange(frames)[:, None] * step + np.arange(frame)[None, :]
    seg = x[:, at, 0].astype(np.float64) * (1.0 if w is None else
                                           w.astype(np.float32).astype(np.float64))
    spec = np.fft.rfft(seg, axis=-1)
    want = np.stack([spec.real, spec.imag], -1)
    imported = import_model(model)
    func = imported.module.funcs[0]
    args = [x if p.param == "x" else imported.weights[p.param] for p in func.params]
    bound = _bound(func, args, x)
    for engine in ("reference", "compiled", "optimized"):
        (got,) = run_onnx(model, {"x": x}, engine)
        assert got.shape == want.shape
        assert_within(got.astype(np.float64), want, bound, f"{engine} {frame} {step}")


def test_windows_of_a_constant_size() -> None:
    """The generators fold at import (ONNX's reference evaluator computes them)."""
    for op, numpy_window in [("HannWindow", np.hanning), ("HammingWindow", None),
                             ("BlackmanWindow", np.blackman)]:
        graph = helper.make_graph(
            [helper.make_node(op, ["n"], ["y"], periodic=0)], "g", [],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, [9])],
            [numpy_helper.from_array(np.array(9, np.int64), "n")])
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
        (got,) = run_onnx(model, {}, "compiled")
        if numpy_window is not None:  # symmetric windows are NumPy's
            np.testing.assert_allclose(got, numpy_window(9), atol=1e-7)
        else:  # ONNX's Hamming: alpha 25/46
            want = 25 / 46 - 21 / 46 * np.cos(2 * np.pi * np.arange(9) / 8)
            np.testing.assert_allclose(got, want, atol=1e-7)


def test_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    two = np.array(2, np.int64)
    import_fails(_model("DFT", [3, 4, 1], {"axis": two}, ["x", "", "axis"]), tmp_path, capsys,
                 "DFT", "the DFT's axis cannot be the last one")
    import_fails(_model("DFT", [3, "n", 1], {"axis": np.array(1, np.int64)}, ["x", "", "axis"]),
                 tmp_path, capsys, "the transformed axis n must be static")
    import_fails(_model("DFT", [3, 4, 2], {"axis": np.array(1, np.int64)}, ["x", "", "axis"],
                        onesided=1), tmp_path, capsys, "a one-sided DFT needs a real signal")
    import_fails(_model("STFT", [1, 10, 1], {"step": two, "length": np.array(12, np.int64)},
                        ["x", "step", "", "length"], opset=17), tmp_path, capsys,
                 "STFT needs a static signal length (10), a positive frame_step (2) and a "
                 "frame_length (12)")
