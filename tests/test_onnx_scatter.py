"""ONNX ScatterElements, ScatterND and TensorScatter: every reduction, negative and repeated
indices, indices on part of the data, run-time and constant indices, against onnxruntime and
ONNX's reference evaluator; and the errors."""

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
from onnx.reference import ReferenceEvaluator  # noqa: E402

from tcp_rules.frontends.onnx import import_model  # noqa: E402

TYPES = {np.dtype(np.float32): TensorProto.FLOAT, np.dtype(np.int64): TensorProto.INT64,
         np.dtype(np.int32): TensorProto.INT32}


def _model(op: str, arrays: dict[str, np.ndarray], constant: set[str], opset: int = 18,
           **attrs: Any) -> onnx.ModelProto:
    """A one-node model whose inputs are ``arrays`` (in order), those named in ``constant``
    as initializers."""
    names = list(arrays)
    graph = helper.make_graph(
        [helper.make_node(op, names, ["y"], **attrs)], "g",
        [helper.make_tensor_value_info(n, TYPES[a.dtype], a.shape) for n, a in arrays.items()
         if n not in constant],
        [helper.make_tensor_value_info("y", TYPES[arrays[names[0]].dtype],
                                       arrays[names[0]].shape)],
        [numpy_helper.from_array(a, n) for n, a in arrays.items() if n in constant])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def _check(model: onnx.ModelProto, feeds: dict[str, np.ndarray], want: np.ndarray,
           exact: bool, engines: tuple[str, ...] = ("reference", "compiled")) -> None:
    """Every engine's result bit for bit (no arithmetic, or max and min), or within 2 E."""
    imported = import_model(model)
    func = imported.module.funcs[0]
    arrays = {**imported.weights, **feeds}
    _, (bound,) = error_bounds(func, [arrays[p.param] for p in func.params])
    for engine in engines:
        (got,) = run_onnx(model, feeds, engine)
        if exact:
            np.testing.assert_array_equal(got, want, err_msg=engine)
        else:
            assert_within(got, want, 2 * bound, engine)


@st.composite
def _elements(draw: st.DrawFn) -> tuple[dict[str, np.ndarray], dict[str, Any], bool]:
    rank = draw(st.integers(1, 3))
    shape = [draw(st.integers(1, 4)) for _ in range(rank)]
    axis = draw(st.integers(-rank, rank - 1))
    reduction = draw(st.sampled_from(["none", "add", "mul", "max", "min"]))
    # the updates: any length along the axis, no longer than the data on the others
    ushape = [draw(st.integers(1, 4)) if k == axis % rank else draw(st.integers(1, d))
              for k, d in enumerate(shape)]
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    n = shape[axis]
    if reduction == "none":  # distinct targets along each line: ONNX leaves repeats open
        ushape[axis % rank] = min(ushape[axis % rank], n)
        idx = _distinct(rng, ushape, n, axis % rank)
    else:
        idx = rng.integers(0, n, ushape)
    idx = np.where(rng.random(ushape) < 0.3, idx - n, idx).astype(np.int64)  # negative ones
    dt = np.dtype(draw(st.sampled_from([np.float32, np.float32, np.int32])))
    data = rng.standard_normal(shape).astype(dt) if dt.kind == "f" else \
        rng.integers(-9, 9, shape).astype(dt)
    upd = rng.standard_normal(ushape).astype(dt) if dt.kind == "f" else \
        rng.integers(-9, 9, ushape).astype(dt)
    attrs = {"axis": axis, "reduction": reduction}
    return {"data": data, "indices": idx, "updates": upd}, attrs, draw(st.booleans())


def _distinct(rng: np.random.Generator, ushape: list[int], n: int, axis: int) -> np.ndarray:
    """Indices along ``axis`` distinct within each line: the first u of a permutation of n."""
    perm = np.argsort(rng.random([*ushape[:axis], n, *ushape[axis + 1:]]), axis=axis)
    return np.take(perm, np.arange(ushape[axis]), axis=axis)


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_elements())
def test_scatter_elements_matches_onnxruntime(
        case: tuple[dict[str, np.ndarray], dict[str, Any], bool]) -> None:
    arrays, attrs, constant = case
    model = _model("ScatterElements", arrays, {"indices"} if constant else set(), **attrs)
    feeds = {k: v for k, v in arrays.items() if not (constant and k == "indices")}
    (want,) = ort.InferenceSession(model.SerializeToString()).run(None, feeds)
    exact = attrs["reduction"] in ("none", "max", "min") or arrays["data"].dtype.kind == "i"
    _check(model, feeds, want, exact)


def test_repeated_indices_take_the_last_update() -> None:
    """reduction none with repeats: the last update wins, as the reference writes them in
    order; add sums them all."""
    arrays = {"data": np.zeros((2, 4), np.float32),
              "indices": np.array([[1, 1, 3], [0, 2, 0]], np.int64),
              "updates": np.array([[1, 2, 3], [4, 5, 6]], np.float32)}
    for reduction, want in [("none", [[0, 2, 0, 3], [6, 0, 5, 0]]),
                            ("add", [[0, 3, 0, 3], [10, 0, 5, 0]])]:
        model = _model("ScatterElements", arrays, set(), axis=1, reduction=reduction)
        assert np.array_equal(ReferenceEvaluator(model).run(None, arrays)[0], want)
        _check(model, arrays, np.array(want, np.float32), True, ("compiled", "optimized"))


@pytest.mark.parametrize("reduction", ["none", "add", "mul", "max", "min"])
@pytest.mark.parametrize("k", [1, 2, 3])
def test_scatter_nd_matches_onnxruntime(reduction: str, k: int) -> None:
    """Index tuples of length k into [4, 3, 5] data (slices where k < 3), in a [2, 3] grid,
    negative entries included; distinct tuples for reduction none."""
    rng = np.random.default_rng(k)
    data = rng.standard_normal((4, 3, 5)).astype(np.float32)
    sizes = np.array([4, 3, 5][:k])
    count = 6 if reduction != "none" else min(6, int(sizes.prod()))
    flat = rng.choice(int(sizes.prod()), count, replace=reduction != "none")
    idx = np.stack(np.unravel_index(flat, tuple(sizes)), -1).astype(np.int64)
    idx = np.where(rng.random(idx.shape) < 0.3, idx - sizes, idx).reshape(count // 3 or 1,
                                                                          -1, k)
    upd = rng.standard_normal((*idx.shape[:-1], *data.shape[k:])).astype(np.float32)
    arrays = {"data": data, "indices": idx, "updates": upd}
    model = _model("ScatterND", arrays, set(), reduction=reduction)
    (want,) = ort.InferenceSession(model.SerializeToString()).run(None, arrays)
    _check(model, arrays, want, reduction in ("none", "max", "min"),
           ("reference", "compiled", "optimized"))


@pytest.mark.parametrize("mode", ["linear", "circular"])
@pytest.mark.parametrize("writes", [None, [0, 3, 5]])
def test_tensor_scatter_matches_the_reference(mode: str, writes: list[int] | None) -> None:
    """A [3, 2, 6, 4] cache, an update of 3 positions along axis -2 from each batch's write
    index (circular: wrapping past the end), bit for bit against ONNX's reference."""
    rng = np.random.default_rng(0)
    arrays = {"past": rng.standard_normal((3, 2, 6, 4)).astype(np.float32),
              "update": rng.standard_normal((3, 2, 3, 4)).astype(np.float32)}
    if writes is not None:
        arrays["writes"] = np.array(writes, np.int64)
        if mode == "linear":
            arrays["writes"] = np.array([0, 3, 2], np.int64)  # runs inside the cache
    model = _model("TensorScatter", arrays, set(), opset=24, mode=mode)
    want = ReferenceEvaluator(model).run(None, arrays)[0]
    _check(model, arrays, want, True, ("reference", "compiled", "optimized"))


def test_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = np.zeros((3, 4), np.float32)
    bad = {"data": data, "indices": np.array([[5]], np.int64),
           "updates": np.ones((1, 1), np.float32)}
    import_fails(_model("ScatterElements", bad, {"indices"}), tmp_path, capsys,
                 "ScatterElements", "index 5 at [0, 0, 0] is out of range for an axis of size 3")
    wide = {"data": data, "indices": np.zeros((1, 5), np.int64),
            "updates": np.ones((1, 5), np.float32)}
    import_fails(_model("ScatterElements", wide, set()), tmp_path, capsys,
                 "no axis longer than the data's [3, 4] but for axis 0")
    odd = {"data": data, "indices": np.zeros((2, 1), np.int64),
           "updates": np.ones((2, 3), np.float32)}
    import_fails(_model("ScatterND", odd, set()), tmp_path, capsys,
                 "updates f32[2, 3] must be [2, 4]")
    import_fails(_model("ScatterND", {**odd, "updates": np.ones((2, 4), np.float32)}, set(),
                        reduction="sum"), tmp_path, capsys,
                 "reduction 'sum' is not one of none, add, mul, max, min")
