"""ONNX Range over a symbolic length (position ids up to the sequence length) and Trilu over
symbolic sizes (causal masks), imported with TCP's iota; constant Ranges are folded at import
(ONNX's node tests cover Trilu's static cases)."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from tcp_rules.diagnostics import TcpError  # noqa: E402
from tcp_rules.frontends.onnx import import_model  # noqa: E402
from tcp_rules.pipeline import run_func  # noqa: E402


def _model(start: int, extra: int, scale: int, delta: int) -> onnx.ModelProto:
    """y = Range(start, len(x) * scale + extra, delta) + 0 * x[0], x of the symbolic length n."""
    consts = [numpy_helper.from_array(np.array(v, np.int64), name) for name, v in
              (("zero", 0), ("start", start), ("extra", extra), ("scale", scale),
               ("delta", delta))]
    nodes = [helper.make_node("Shape", ["x"], ["shape"]),
             helper.make_node("Gather", ["shape", "zero"], ["n"], axis=0),
             helper.make_node("Mul", ["n", "scale"], ["scaled"]),
             helper.make_node("Add", ["scaled", "extra"], ["limit"]),
             helper.make_node("Range", ["start", "limit", "delta"], ["y"], name="range")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.INT64,
                                                                          ["n"])],
                              [helper.make_tensor_value_info("y", TensorProto.INT64, ["m"])],
                              consts)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


@pytest.mark.parametrize(("start", "extra", "scale", "delta"), [
    (0, 0, 1, 1), (2, 2, 1, 1), (0, 0, 2, 2), (1, 1, 3, 3), (5, 0, 0, -1), (3, 1, 1, 1)])
def test_range_over_a_symbolic_length(start: int, extra: int, scale: int, delta: int) -> None:
    model = _model(start, extra, scale, delta)
    func = import_model(model).module.funcs[0]
    session = ort.InferenceSession(model.SerializeToString())
    for n in (2, 4, 9):
        x = np.zeros(n, np.int64)
        (want,) = session.run(None, {"x": x})
        for engine in ("reference", "compiled"):
            (got,) = run_func(func, [x], engine)
            np.testing.assert_array_equal(got, want, err_msg=f"{engine} n={n}")


@pytest.mark.parametrize(("start", "extra", "scale", "delta", "message"), [
    (0, 0, 1, 2, "whole number of steps"),
    (0, 0, 1, 0, "nonzero"),
])
def test_range_over_a_symbolic_length_refused(start: int, extra: int, scale: int, delta: int,
                                              message: str) -> None:
    with pytest.raises(TcpError, match=rf"node 'range' \(Range.*{message}"):
        import_model(_model(start, extra, scale, delta))


def test_range_shorter_than_empty_is_a_shape_error() -> None:
    """From 3 to n + 1 is n - 2 long: ONNX's max(n - 2, 0) is no dim TCP can name, so n = 1
    fails the shape check at run time instead of giving an empty range."""
    func = import_model(_model(3, 1, 1, 1)).module.funcs[0]
    for engine in ("reference", "compiled"):
        with pytest.raises(TcpError, match="negative"):
            run_func(func, [np.zeros(1, np.int64)], engine)


@pytest.mark.parametrize("upper", [0, 1])
@pytest.mark.parametrize("k", [-2, 0, 1])
def test_trilu_over_symbolic_sizes(upper: int, k: int) -> None:
    node = helper.make_node("Trilu", ["x", "k"], ["y"], upper=upper)
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, "n", "m"])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, "n", "m"])],
        [numpy_helper.from_array(np.array(k, np.int64), "k")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])
    func = import_model(model).module.funcs[0]
    session = ort.InferenceSession(model.SerializeToString())
    for n, m in ((1, 4), (5, 3), (6, 6)):
        x = np.random.default_rng(n * m).standard_normal((2, n, m)).astype(np.float32)
        (want,) = session.run(None, {"x": x})
        for engine in ("reference", "compiled"):
            (got,) = run_func(func, [x], engine)
            np.testing.assert_array_equal(got, want, err_msg=f"{engine} {n}x{m}")


def test_range_from_a_symbolic_start() -> None:
    """Positions past a cache: Range(len(past), len(past) + len(x)), the start added as data."""
    zero = numpy_helper.from_array(np.array(0, np.int64), "zero")
    nodes = [helper.make_node("Shape", ["past"], ["ps"]),
             helper.make_node("Gather", ["ps", "zero"], ["p"], axis=0),
             helper.make_node("Shape", ["x"], ["xs"]),
             helper.make_node("Gather", ["xs", "zero"], ["n"], axis=0),
             helper.make_node("Add", ["p", "n"], ["limit"]),
             helper.make_node("Range", ["p", "limit", "one"], ["y"])]
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("past", TensorProto.FLOAT, ["p"]),
                     helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n"])],
        [helper.make_tensor_value_info("y", TensorProto.INT64, ["n"])],
        [zero, numpy_helper.from_array(np.array(1, np.int64), "one")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    func = import_model(model).module.funcs[0]
    session = ort.InferenceSession(model.SerializeToString())
    for p, n in ((0, 3), (5, 1), (7, 4)):
        feeds = {"past": np.zeros(p, np.float32), "x": np.zeros(n, np.float32)}
        (want,) = session.run(None, feeds)
        for engine in ("reference", "compiled"):
            (got,) = run_func(func, [feeds["past"], feeds["x"]], engine)
            np.testing.assert_array_equal(got, want, err_msg=f"{engine} {p}+{n}")
