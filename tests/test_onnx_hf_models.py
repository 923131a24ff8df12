"""Hugging Face models exported by PyTorch (tests/data/onnx/export_hf.py), imported with their
batch and sequence bound, against onnxruntime: GPT-2 (its causal mask is a GatherND), Llama
(grouped-query attention, rotary embeddings, RMSNorm) and a T5 encoder (relative position
buckets folded at import)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from onnx.reference import ReferenceEvaluator  # noqa: E402

from tcp_rules.frontends.onnx import import_onnx  # noqa: E402
from tcp_rules.optimize import OptOptions  # noqa: E402
from tcp_rules.pipeline import optimize_func, run_func  # noqa: E402
from tcp_rules.rules.library import load_standard_library  # noqa: E402

DATA = Path(__file__).parent / "data" / "onnx"
BATCH, SEQ, VOCAB = 2, 7, 64  # the export traced 2 x 8: other sizes show the dims are symbolic


def _feeds() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    mask = np.ones((BATCH, SEQ), np.int64)
    mask[1, SEQ - 3:] = 0  # the second sequence padded
    return {"ids": rng.integers(0, VOCAB, (BATCH, SEQ)), "mask": mask}


@pytest.fixture(scope="module", params=["gpt2", "llama", "t5_encoder"])
def model(request: pytest.FixtureRequest) -> tuple[str, np.ndarray, float]:
    """(name, onnxruntime's result, ONNX's reference evaluator's distance from it)."""
    path = DATA / f"{request.param}.onnx"
    feeds = _feeds()
    (want,) = ort.InferenceSession(str(path)).run(None, feeds)
    with np.errstate(all="ignore"):  # T5's masked-out log(0) cast to int64
        (other,) = ReferenceEvaluator(str(path)).run(None, feeds)
    return request.param, want, float(np.max(np.abs(other.astype(np.float64) - want)))


@pytest.mark.parametrize("engine", ["reference", "compiled", "optimized"])
def test_hf_exports_match_onnxruntime(model: tuple[str, np.ndarray, float],
                                      engine: str) -> None:
    """As close to onnxruntime as ONNX's own reference evaluator gets (4 times its distance,
    plus 4 ulps of the largest result), as tests/test_onnx_import.py holds PyTorch's exports."""
    name, want, theirs = model
    imported = import_onnx(DATA / f"{name}.onnx", {"batch": BATCH, "seq": SEQ})
    func = imported.module.funcs[0]
    if engine == "optimized":
        func = optimize_func(func, load_standard_library().rules, OptOptions()).func
    feeds = _feeds()
    args = [feeds.get(p.param, imported.weights.get(p.param)) for p in func.params]
    (got,) = run_func(func, args, "reference" if engine == "reference" else "compiled")
    assert got.shape == want.shape == (BATCH, SEQ, 32) and got.dtype == want.dtype
    slack = 4 * float(np.spacing(np.float32(np.max(np.abs(want)))))
    ours = float(np.max(np.abs(got.astype(np.float64) - want)))
    assert ours <= 4 * theirs + slack, f"{name} {engine}: {ours:.3g} from onnxruntime " \
                                       f"({theirs:.3g})"
