"""ONNX Einsum: random equations (several operands, diagonals, summed labels, ellipses that
broadcast, implicit outputs) against NumPy's einsum in float64, the equations models use
against onnxruntime, symbolic dims, and the errors."""

from __future__ import annotations

import string
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from numerics import assert_within, error_bounds
from onnx_support import import_fails, run_onnx

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from onnx import TensorProto, helper  # noqa: E402

from tcp_rules.frontends.onnx import import_model  # noqa: E402
from tcp_rules.pipeline import run_func  # noqa: E402


def _model(equation: str, shapes: list[tuple[int | str, ...]],
           out: tuple[int | str, ...] | None) -> onnx.ModelProto:
    names = [f"x{i}" for i in range(len(shapes))]
    graph = helper.make_graph(
        [helper.make_node("Einsum", names, ["y"], equation=equation)], "g",
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in zip(names, shapes,
                                                                                strict=True)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, out)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])


@st.composite
def _equations(draw: st.DrawFn) -> tuple[str, list[tuple[int, ...]]]:
    letters = string.ascii_lowercase[:draw(st.integers(1, 5))]
    size = {c: draw(st.integers(1, 4)) for c in letters}
    width = draw(st.integers(0, 2))  # the ellipsis' widest extent
    ellipsis = [draw(st.integers(2, 3)) for _ in range(width)]
    terms, shapes = [], []
    for _ in range(draw(st.integers(1, 3))):
        term = draw(st.lists(st.sampled_from(letters), max_size=4))
        shape = [size[c] for c in term]
        if width and draw(st.booleans()):
            e = draw(st.integers(0, width))
            # each of its axes the full size or 1, which broadcasts
            dims = [draw(st.sampled_from([d, 1])) for d in ellipsis[width - e:]]
            at = draw(st.integers(0, len(term)))
            term = [*term[:at], "...", *term[at:]]
            shape = [*shape[:at], *dims, *shape[at:]]
        terms.append("".join(term))
        shapes.append(tuple(shape))
    equation = ",".join(terms)
    if draw(st.booleans()):
        used = sorted({c for t in terms for c in t if c.isalpha()})
        out = draw(st.permutations(draw(st.lists(st.sampled_from(used), unique=True)) if used
                                   else []))
        dots = "..." if any("..." in t for t in terms) else ""
        equation += "->" + dots + "".join(out)
    return equation, shapes


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_equations(), st.integers(0, 2**16))
def test_equations_match_numpy(case: tuple[str, list[tuple[int, ...]]], seed: int) -> None:
    """Within E of NumPy's einsum in float64 (E from tests/numerics.py bounds our distance from
    the exact result; NumPy's float64 is within 1e-15 of it)."""
    equation, shapes = case
    rng = np.random.default_rng(seed)
    xs = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    want = np.einsum(equation, *[x.astype(np.float64) for x in xs])
    func = import_model(_model(equation, shapes, want.shape)).module.funcs[0]
    _, (bound,) = error_bounds(func, xs)
    for engine in ("reference", "compiled"):
        (got,) = run_func(func, xs, engine)
        assert got.shape == want.shape, f"{engine} {equation} {shapes}"
        assert_within(got.astype(np.float64), want, bound + 1e-12 * np.abs(want),
                      f"{engine} {equation} {shapes}")


# Attention scores and values (as older exporters and hand-written models spell them),
# bilinear forms, a batched outer product, a trace, a diagonal.
PEER_CASES = [
    ("bhqd,bhkd->bhqk", [("b", 2, 5, 8), ("b", 2, 6, 8)]),
    ("bhqk,bhkd->bhqd", [("b", 2, 5, 6), ("b", 2, 6, 8)]),
    ("bn,anm,bm->ba", [("b", 4), (3, 4, 5), ("b", 5)]),
    ("...i,...j->...ij", [("b", 3, 4), ("b", 3, 2)]),
    ("ii", [(5, 5)]),
    ("bii->bi", [("b", 4, 4)]),
    ("ij,jk", [(3, 4), (4, 2)]),
]


@pytest.mark.parametrize(("equation", "shapes"), PEER_CASES)
@pytest.mark.parametrize("engine", ["compiled", "optimized"])
def test_model_equations_match_onnxruntime(equation: str, shapes: list[tuple[int | str, ...]],
                                           engine: str) -> None:
    """With a symbolic batch, at two batch sizes, within 2 E of onnxruntime."""
    model = _model(equation, shapes, None)
    model = onnx.shape_inference.infer_shapes(model)
    func = import_model(model).module.funcs[0]
    for batch in (1, 3):
        rng = np.random.default_rng(batch)
        xs = [rng.standard_normal([batch if d == "b" else d for d in s]).astype(np.float32)
              for s in shapes]
        feeds = {f"x{i}": x for i, x in enumerate(xs)}
        (want,) = ort.InferenceSession(model.SerializeToString()).run(None, feeds)
        (got,) = run_onnx(model, feeds, engine)
        _, (bound,) = error_bounds(func, xs)
        assert_within(got, want, 2 * bound, f"{engine} {equation} batch {batch}")


def test_one_matmul_per_pair() -> None:
    """A contraction of two operands is one TCP matmul (no broadcast product and sum)."""
    func = import_model(_model("bhqd,bhkd->bhqk", [(2, 3, 5, 8), (2, 3, 6, 8)],
                               (2, 3, 5, 6))).module.funcs[0]
    ops = [a.op.name for a in func.ops()]
    assert ops.count("matmul") == 1 and "reduce_sum" not in ops and "mul" not in ops


def test_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for equation, shapes, needle in [
        ("ij,jk->ik", [(2, 3)], "equation 'ij,jk->ik' has 2 operands, the node 1"),
        ("i1->i", [(2, 3)], "term 'i1' must be letters and at most one ellipsis"),
        ("ij->i", [(2, 3, 4)], "term 'ij' does not fit an operand of rank 3"),
        ("ij->ik", [(2, 3)], "each output label must appear in an operand, once in the output"),
        ("ij->ii", [(2, 3)], "each output label must appear in an operand, once in the output"),
        ("ij,jk->ik", [(2, 3), (4, 5)], "label 'j' has sizes 3 and 4"),
        ("ii->i", [(2, 3)], "the diagonal of label 'i' needs equal static axes, got 2 and 3"),
        ("...i->i", [(2, 3)], "the output needs an ellipsis, as the operands' ellipsis spans axes"),
    ]:
        import_fails(_model(equation, shapes, (1,)), tmp_path, capsys, "Einsum", needle)
