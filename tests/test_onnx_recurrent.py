"""ONNX RNN, GRU and LSTM against onnxruntime: every direction, both layouts, initial states,
biases, peepholes, sequence lengths, clip, linear_before_reset, input_forget and other
activations; a symbolic batch; the optimized engine; the errors."""

from __future__ import annotations

from pathlib import Path
from typing import Any

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

GATES = {"RNN": 1, "GRU": 3, "LSTM": 4}
OPTIONAL = ["B", "sequence_lens", "initial_h", "initial_c", "P"]


def _model(op: str, x_shape: list[int | str], arrays: dict[str, np.ndarray],
           attrs: dict[str, Any]) -> onnx.ModelProto:
    """The layer with X a graph input, its weights initializers; outputs Y, Y_h (and Y_c)."""
    names = ["X", "W", "R", *OPTIONAL[:5 if op == "LSTM" else 3]]
    inputs = [n if n in arrays or n == "X" else "" for n in names]
    while inputs[-1] == "":
        inputs.pop()
    outs = ["Y", "Y_h", "Y_c"][:3 if op == "LSTM" else 2]
    graph = helper.make_graph(
        [helper.make_node(op, inputs, outs, **attrs)], "g",
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, x_shape)],
        [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in outs],
        [numpy_helper.from_array(a, n) for n, a in arrays.items()])
    return onnx.shape_inference.infer_shapes(
        helper.make_model(graph, opset_imports=[helper.make_opsetid("", 22)]))


@st.composite
def _cases(draw: st.DrawFn) -> tuple[str, np.ndarray, dict[str, np.ndarray], dict[str, Any]]:
    op = draw(st.sampled_from(["RNN", "GRU", "LSTM"]))
    seq, batch, inp, hidden = (draw(st.integers(1, 4)), draw(st.integers(1, 3)),
                               draw(st.integers(1, 4)), draw(st.integers(1, 4)))
    direction = draw(st.sampled_from(["forward", "reverse", "bidirectional"]))
    dirs = 2 if direction == "bidirectional" else 1
    layout = draw(st.integers(0, 1))
    g = GATES[op]
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))

    def rand(*shape: int) -> np.ndarray:
        return (rng.standard_normal(shape) * 0.7).astype(np.float32)

    arrays = {"W": rand(dirs, g * hidden, inp), "R": rand(dirs, g * hidden, hidden)}
    attrs: dict[str, Any] = {"hidden_size": hidden, "direction": direction, "layout": layout}
    state = (batch, dirs, hidden) if layout else (dirs, batch, hidden)
    if draw(st.booleans()):
        arrays["B"] = rand(dirs, 2 * g * hidden)
    if draw(st.booleans()):
        arrays["sequence_lens"] = rng.integers(1, seq + 1, batch).astype(np.int32)
    if draw(st.booleans()):
        arrays["initial_h"] = rand(*state)
    if op == "LSTM" and draw(st.booleans()):
        arrays["initial_c"] = rand(*state)
    if op == "LSTM" and draw(st.booleans()):
        arrays["P"] = rand(dirs, 3 * hidden)
    if op == "LSTM" and draw(st.booleans()):
        attrs["input_forget"] = 1
    if op == "GRU" and draw(st.booleans()):
        attrs["linear_before_reset"] = 1
    if draw(st.booleans()):
        attrs["clip"] = draw(st.sampled_from([0.5, 3.0]))
    if draw(st.booleans()):  # other activations, with their parameters
        pool = ["Relu", "Tanh", "Sigmoid", "HardSigmoid", "LeakyRelu", "Softsign", "Elu"]
        per = {"RNN": 1, "GRU": 2, "LSTM": 3}[op]
        attrs["activations"] = [draw(st.sampled_from(pool)) for _ in range(per * dirs)]
    x = rand(*((batch, seq, inp) if layout else (seq, batch, inp)))
    return op, x, arrays, attrs


ACTIVATIONS = {  # name: (default alpha, default beta, f), in float64
    "relu": (None, None, lambda x, a, b: np.maximum(x, 0)),
    "tanh": (None, None, lambda x, a, b: np.tanh(x)),
    "sigmoid": (None, None, lambda x, a, b: 1 / (1 + np.exp(-x))),
    "hardsigmoid": (0.2, 0.5, lambda x, a, b: np.clip(a * x + b, 0, 1)),
    "leakyrelu": (0.01, None, lambda x, a, b: np.where(x < 0, a * x, x)),
    "softsign": (None, None, lambda x, a, b: x / (1 + np.abs(x))),
    "elu": (1.0, None, lambda x, a, b: np.where(x < 0, a * (np.exp(x) - 1), x)),
}
DEFAULTS = {"RNN": ["Tanh"], "GRU": ["Sigmoid", "Tanh"], "LSTM": ["Sigmoid", "Tanh", "Tanh"]}


def _oracle(op: str, x: np.ndarray, arrays: dict[str, np.ndarray], attrs: dict[str, Any]
            ) -> list[np.ndarray]:
    """The operators' equations (onnx.ai/onnx/operators) step by step in float64: the test's
    own reading of the text, independent of the converter's."""
    f64 = {k: v.astype(np.float64) for k, v in arrays.items()}
    layout, hidden = attrs.get("layout", 0), attrs["hidden_size"]
    xs = x.astype(np.float64).transpose(1, 0, 2) if layout else x.astype(np.float64)
    seq, batch = xs.shape[:2]
    dirs = 2 if attrs["direction"] == "bidirectional" else 1
    g = GATES[op]
    names = attrs.get("activations", DEFAULTS[op] * dirs)
    per = len(DEFAULTS[op])
    clip = attrs.get("clip")

    def state(name: str) -> np.ndarray:
        if name not in f64:
            return np.zeros((dirs, batch, hidden))
        return f64[name].transpose(1, 0, 2) if layout else f64[name]

    h0, c0 = state("initial_h"), state("initial_c")
    lens = arrays.get("sequence_lens", np.full(batch, seq))
    y = np.zeros((seq, dirs, batch, hidden))
    yh, yc = np.zeros((dirs, batch, hidden)), np.zeros((dirs, batch, hidden))
    for d in range(dirs):
        fs = []
        for name in names[d * per:(d + 1) * per]:
            a, b, fn = ACTIVATIONS[name.lower()]
            fs.append(lambda v, a=a, b=b, fn=fn: fn(v, a, b))
        # clip bounds the gates' inputs (onnxruntime's reading of "the input of activations":
        # not that of h(C), the LSTM's output activation; ONNX's reference ignores clip)
        act = [lambda v, f=f: f(np.clip(v, -clip, clip) if clip is not None else v)
               for f in fs]
        if op == "LSTM":
            act[2] = fs[2]
        w, r = f64["W"][d], f64["R"][d]
        bias = f64["B"][d] if "B" in f64 else np.zeros(2 * g * hidden)
        wb, rb = bias[:g * hidden], bias[g * hidden:]
        p = f64["P"][d] if "P" in f64 else np.zeros(3 * hidden)
        h, c = h0[d].copy(), c0[d].copy()
        reverse = attrs["direction"] == "reverse" or d == 1
        for t in (range(seq - 1, -1, -1) if reverse else range(seq)):
            xw = xs[t] @ w.T + wb
            hr = h @ r.T + rb
            if op == "RNN":
                hn, cn = act[0](xw + hr), c
            elif op == "GRU":
                z = act[0](xw[:, :hidden] + hr[:, :hidden])
                rr = act[0](xw[:, hidden:2 * hidden] + hr[:, hidden:2 * hidden])
                if attrs.get("linear_before_reset"):
                    hh = act[1](xw[:, 2 * hidden:] + rr * hr[:, 2 * hidden:])
                else:
                    hh = act[1](xw[:, 2 * hidden:] + (rr * h) @ r[2 * hidden:].T
                                + rb[2 * hidden:])
                hn, cn = (1 - z) * hh + z * h, c
            else:
                gi, go, gf, gc = (xw + hr)[:, :hidden], (xw + hr)[:, hidden:2 * hidden], \
                    (xw + hr)[:, 2 * hidden:3 * hidden], (xw + hr)[:, 3 * hidden:]
                i = act[0](gi + p[:hidden] * c)
                fg = 1 - i if attrs.get("input_forget") else act[0](gf + p[2 * hidden:] * c)
                cn = fg * c + i * act[1](gc)
                o = act[0](go + p[hidden:2 * hidden] * cn)
                hn = o * act[2](cn)
            live = (t < lens)[:, None]
            h, c = np.where(live, hn, h), np.where(live, cn, c)
            y[t, d] = np.where(live, hn, 0)
        yh[d], yc[d] = h, c
    outs = [y, yh, yc][:3 if op == "LSTM" else 2]
    if layout:
        outs = [outs[0].transpose(2, 0, 1, 3), *(o.transpose(1, 0, 2) for o in outs[1:])]
    return outs


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_cases())
def test_layers_match_the_equations(case: tuple[str, np.ndarray, dict[str, np.ndarray],
                                                dict[str, Any]]) -> None:
    """Every output within E (tests/numerics.py, over the unrolled steps) of the equations in
    float64. The oracle itself agrees with onnxruntime wherever onnxruntime runs the case
    (test_the_oracle_agrees_with_onnxruntime)."""
    op, x, arrays, attrs = case
    model = _model(op, list(x.shape), arrays, attrs)
    want = _oracle(op, x, arrays, attrs)
    imported = import_model(model)
    func = imported.module.funcs[0]
    args = [x if p.param == "X" else imported.weights[p.param] for p in func.params]
    _, bounds = error_bounds(func, args)
    for engine in ("reference", "compiled"):
        got = run_onnx(model, {"X": x}, engine)
        for i, (g, w, e) in enumerate(zip(got, want, bounds, strict=True)):
            assert_within(g.astype(np.float64), w, e + 1e-12 * np.abs(w),
                          f"{engine} {op} output {i} {attrs}")


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_cases())
def test_the_oracle_agrees_with_onnxruntime(
        case: tuple[str, np.ndarray, dict[str, np.ndarray], dict[str, Any]]) -> None:
    """A check of the test's oracle, not of tcp-rules: onnxruntime (batch-major layout
    refused) computes its sigmoid and tanh by approximations (MLAS), tens of ulps off at
    times, so the agreement asked is 1e-5 of the outputs' scale, far below any misreading of
    a gate or a direction."""
    op, x, arrays, attrs = case
    if attrs["layout"]:
        return
    model = _model(op, list(x.shape), arrays, attrs)
    want = ort.InferenceSession(model.SerializeToString()).run(None, {"X": x})
    for i, (w, o) in enumerate(zip(want, _oracle(op, x, arrays, attrs), strict=True)):
        scale = max(float(np.abs(o).max()), 1.0)
        assert np.abs(w - o).max() <= 1e-5 * scale, f"output {i} {op} {attrs}"


@pytest.mark.parametrize("op", ["GRU", "LSTM"])
def test_symbolic_batch_optimized(op: str) -> None:
    """A bidirectional layer over 5 steps with the batch symbolic, optimized, at two batch
    sizes."""
    rng = np.random.default_rng(0)
    g, hidden = GATES[op], 3
    arrays = {"W": rng.standard_normal((2, g * hidden, 4)).astype(np.float32),
              "R": rng.standard_normal((2, g * hidden, hidden)).astype(np.float32),
              "B": rng.standard_normal((2, 2 * g * hidden)).astype(np.float32)}
    model = _model(op, [5, "batch", 4], arrays, {"hidden_size": hidden,
                                                 "direction": "bidirectional"})
    for batch in (1, 3):
        x = rng.standard_normal((5, batch, 4)).astype(np.float32)
        want = ort.InferenceSession(model.SerializeToString()).run(None, {"X": x})
        imported = import_model(model)
        func = imported.module.funcs[0]
        _, bounds = error_bounds(func, [x if p.param == "X" else imported.weights[p.param]
                                        for p in func.params])
        got = run_onnx(model, {"X": x}, "optimized")
        for g_, w, e in zip(got, want, bounds, strict=True):
            assert_within(g_, w, 2 * e, f"{op} batch {batch}")


def test_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    w, r = np.zeros((1, 4, 2), np.float32), np.zeros((1, 4, 4), np.float32)
    import_fails(_model("RNN", ["seq", 1, 2], {"W": w, "R": r}, {"hidden_size": 4}),
                 tmp_path, capsys, "RNN", "the sequence length seq must be static")
    import_fails(_model("RNN", [3, 1, 2], {"W": w, "R": r}, {"hidden_size": 3}), tmp_path,
                 capsys, "W f32[1, 4, 2] and R f32[1, 4, 4] must be [1, 3, input] and [1, 3, 3]")
    import_fails(_model("RNN", [3, 1, 2], {"W": w, "R": r},
                        {"hidden_size": 4, "activations": ["Swish"]}), tmp_path, capsys,
                 "activation 'Swish' is not one of the operators' activations")


@pytest.mark.parametrize("engine", ["compiled", "optimized"])
def test_a_recurrent_network_exported_by_pytorch(engine: str) -> None:
    """tests/data/onnx/rnn.onnx (export_rnn.py): a two-layer bidirectional LSTM, a GRU and a
    linear layer, batch symbolic; within 2 E of PyTorch's own outputs (rnn_expected.npz) at
    batch sizes 1 and 3."""
    data = Path(__file__).parent / "data" / "onnx"
    from tcp_rules.frontends.onnx import import_onnx
    from tcp_rules.optimize import OptOptions
    from tcp_rules.pipeline import optimize_func, run_func
    from tcp_rules.rules.library import load_standard_library

    imported = import_onnx(data / "rnn.onnx")
    plain = imported.module.funcs[0]
    assert str(plain.params[0].type.dims[0]) == "batch"
    func = optimize_func(plain, load_standard_library().rules, OptOptions()).func \
        if engine == "optimized" else plain
    expected = np.load(data / "rnn_expected.npz")
    for batch in (1, 3):
        arrays = {"tokens": expected[f"x{batch}"], **imported.weights}
        (got,) = run_func(func, [arrays[p.param] for p in func.params], "compiled")
        _, (bound,) = error_bounds(plain, [arrays[p.param] for p in plain.params])
        assert_within(got, expected[f"y{batch}"], 2 * bound, f"{engine} batch {batch}")
