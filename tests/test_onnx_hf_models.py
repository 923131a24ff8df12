"""Hugging Face models exported by PyTorch (tests/data/onnx/export_hf.py), imported with their
batch and sequence bound, against onnxruntime: GPT-2 (its causal mask is a GatherND), Llama
(grouped-query attention, rotary embeddings, RMSNorm), a T5 encoder (relative position
buckets folded at import), RoBERTa and OPT (positions counted by a CumSum over the ids or the
mask) and BERT; and all six with both dims left symbolic. Llama and BERT also exported at opset
23, where attention is ONNX's Attention op."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from onnx.reference import ReferenceEvaluator  # noqa: E402

from tcp_rules.diagnostics import TcpError  # noqa: E402
from tcp_rules.frontends.onnx import import_onnx  # noqa: E402
from tcp_rules.optimize import OptOptions  # noqa: E402
from tcp_rules.pipeline import optimize_func, run_func  # noqa: E402
from tcp_rules.rules.library import load_standard_library  # noqa: E402

DATA = Path(__file__).parent / "data" / "onnx"
BATCH, SEQ, VOCAB = 2, 7, 64  # the export traced 2 x 8: other sizes show the dims are symbolic


def _feeds(batch: int = BATCH, seq: int = SEQ) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seq)
    mask = np.ones((batch, seq), np.int64)
    mask[-1, seq - 3:] = 0  # the last sequence padded, with id 1 (RoBERTa's padding token)
    ids = np.where(mask == 1, rng.integers(2, VOCAB, (batch, seq)), 1)
    return {"ids": ids, "mask": mask}


def _results(name: str, feeds: dict[str, np.ndarray]) -> tuple[np.ndarray, float]:
    """onnxruntime's result, and how far ONNX's reference evaluator is from it."""
    path = str(DATA / f"{name}.onnx")
    (want,) = ort.InferenceSession(path).run(None, feeds)
    with np.errstate(all="ignore"):  # T5's masked-out log(0) cast to int64
        (other,) = ReferenceEvaluator(path).run(None, feeds)
    return want, float(np.max(np.abs(other.astype(np.float64) - want)))


def _assert_close(got: np.ndarray, want: np.ndarray, theirs: float, what: str) -> None:
    """As close to onnxruntime as ONNX's own reference evaluator gets (4 times its distance,
    plus 4 ulps of the largest result for where the two agree exactly), as
    tests/test_onnx_import.py holds PyTorch's exports: three independent f32 implementations."""
    assert got.shape == want.shape and got.dtype == want.dtype, what
    slack = 4 * float(np.spacing(np.float32(np.max(np.abs(want)))))
    ours = float(np.max(np.abs(got.astype(np.float64) - want)))
    assert ours <= 4 * theirs + slack, f"{what}: {ours:.3g} from onnxruntime ({theirs:.3g})"


@pytest.fixture(scope="module",
                params=["gpt2", "llama", "t5_encoder", "bert", "roberta", "opt"])
def model(request: pytest.FixtureRequest) -> tuple[str, np.ndarray, float]:
    return (request.param, *_results(request.param, _feeds()))


@pytest.mark.parametrize("engine", ["reference", "compiled", "optimized"])
def test_hf_exports_match_onnxruntime(model: tuple[str, np.ndarray, float],
                                      engine: str) -> None:
    name, want, theirs = model
    imported = import_onnx(DATA / f"{name}.onnx", {"batch": BATCH, "seq": SEQ})
    func = imported.module.funcs[0]
    if engine == "optimized":
        func = optimize_func(func, load_standard_library().rules, OptOptions()).func
    feeds = _feeds()
    args = [feeds.get(p.param, imported.weights.get(p.param)) for p in func.params]
    (got,) = run_func(func, args, "reference" if engine == "reference" else "compiled")
    assert got.shape == (BATCH, SEQ, 32)
    _assert_close(got, want, theirs, f"{name} {engine}")


@pytest.mark.parametrize("name", ["gpt2", "llama", "t5_encoder", "bert", "roberta", "opt"])
def test_hf_exports_with_symbolic_batch_and_sequence(name: str) -> None:
    """Imported once with both dims symbolic (positions from a Range, a CumSum or a slice of a
    buffer up to ``seq``; GPT-2's mask a GatherND into [batch, seq]), run at two sizes."""
    imported = import_onnx(DATA / f"{name}.onnx")
    func = imported.module.funcs[0]
    assert [str(d) for d in func.params[0].type.dims] == ["batch", "seq"]
    for batch, seq in ((1, 4), (3, 19)):
        feeds = _feeds(batch, seq)
        args = [feeds.get(p.param, imported.weights.get(p.param)) for p in func.params]
        (got,) = run_func(func, args, "compiled")
        _assert_close(got, *_results(name, feeds), f"{name} {batch}x{seq}")


@pytest.mark.parametrize("engine", ["compiled", "optimized"])
@pytest.mark.parametrize("name", ["llama", "bert"])
def test_opset23_exports_match_their_opset18_twins(name: str, engine: str) -> None:
    """The same models exported at opset 23, where attention is one Attention op (Llama's with
    grouped-query heads and a boolean causal-and-padding mask, BERT's with its padding mask)
    and Llama's rotary embeddings a RotaryEmbedding, imported with batch and sequence symbolic,
    against onnxruntime running the opset-18 export of the same weights: its RotaryEmbedding
    refuses a batch of more than one here. The reference distance is ONNX's evaluator's on the
    opset-23 file."""
    path = DATA / f"{name}_opset23.onnx"
    ops = {n.op_type for n in onnx.load(str(path)).graph.node}
    assert "Attention" in ops and (name != "llama" or "RotaryEmbedding" in ops)
    imported = import_onnx(path)
    func = imported.module.funcs[0]
    assert [str(d) for d in func.params[0].type.dims] == ["batch", "seq"]
    if engine == "optimized":
        func = optimize_func(func, load_standard_library().rules, OptOptions()).func
    for batch, seq in ((1, 4), (3, 19)):
        feeds = _feeds(batch, seq)
        (want,) = ort.InferenceSession(str(DATA / f"{name}.onnx")).run(None, feeds)
        (other,) = ReferenceEvaluator(str(path)).run(None, feeds)
        args = [feeds.get(p.param, imported.weights.get(p.param)) for p in func.params]
        (got,) = run_func(func, args, "compiled")
        theirs = float(np.max(np.abs(other.astype(np.float64) - want)))
        _assert_close(got, want, theirs, f"{name} opset 23 {engine} {batch}x{seq}")


def test_bert_longer_than_its_position_buffer() -> None:
    """BERT cuts its position buffer (32 long) to ``seq``: beyond it, a clear error where
    onnxruntime's Slice would clamp and a later Add fail."""
    imported = import_onnx(DATA / "bert.onnx")
    func = imported.module.funcs[0]
    feeds = _feeds(1, 33)
    args = [feeds.get(p.param, imported.weights.get(p.param)) for p in func.params]
    with pytest.raises(TcpError, match="slice reads past the end of axis 1: start 0, size 33"):
        run_func(func, args, "compiled")
