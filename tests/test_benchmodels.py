"""The model suite's graphs (tcp_rules/benchmodels.py) at tiny shapes: each imports and agrees
with onnxruntime, and the suite's machinery measures one of them. No timing assertions."""

from __future__ import annotations

import json

import numpy as np
import pytest

pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from tcp_rules import benchmodels as bm  # noqa: E402
from tcp_rules.codegen import compile_func  # noqa: E402
from tcp_rules.diagnostics import Source  # noqa: E402
from tcp_rules.interpret import evaluate  # noqa: E402
from tcp_rules.optimize import OptOptions, optimize  # noqa: E402
from tcp_rules.rules.library import load_standard_library  # noqa: E402

GRAPHS = {g.name: g for g in bm.graphs(small=True)}


def test_the_suite_has_its_graphs() -> None:
    assert set(GRAPHS) == {"layernorm", "rmsnorm", "gelu-tanh", "gelu-erf", "softmax",
                           "attention", "attention-causal", "attention-mask", "attention-gqa",
                           "encoder-2"}
    # the bodies are ONNX's, not one op the importer converts whole
    for g in GRAPHS.values():
        assert g.skipped is None and g.model is not None, g.name
        assert len(g.model.graph.node) > 3, g.name


@pytest.mark.parametrize("name", sorted(GRAPHS))
def test_imported_graph_matches_onnxruntime(name: str) -> None:
    g = GRAPHS[name]
    func, inputs = bm.prepare(g)
    assert len(func.ops()) > 0
    (got,) = evaluate(func, inputs)
    sess = ort.InferenceSession(g.model.SerializeToString(), providers=["CPUExecutionProvider"])
    (want,) = sess.run(None, g.feeds)
    assert got.shape == want.shape and got.dtype == want.dtype
    # f32 on both sides, different orders of evaluation: a few ulps of the largest magnitude
    scale = float(np.abs(want).max())
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5 * scale)


def test_suite_measures_a_tiny_graph() -> None:
    report = json.loads(bm.models_suite(True, 1, small=True, names=["gelu-erf"]))
    assert report["schema"] == bm.SCHEMA and report["repeats"] == 1
    (row,) = report["graphs"]
    assert row["graph"] == "gelu-erf" and row["skipped"] is None and row["ops"] > 0
    for k in ("unoptimized", *bm.VARIANTS):
        stats = row[k]
        assert isinstance(stats["kernels"], int) and stats["kernels"] > 0, k
        assert stats["ms"] > 0, k
        # the host's part of a call: positive, and below the whole call's time per kernel
        assert 0 < stats["host_us_per_kernel"] < 1e3 * stats["ms"] / stats["kernels"], k
        assert stats["matmul_share"] == 0.0, k  # GELU has no product
    for k in bm.VARIANTS:
        stats = row[k]
        assert stats["error"] is None and stats["mismatch"] is None, k
        assert isinstance(stats["peak_enodes"], int) and stats["peak_enodes"] > 0
        assert stats["stop_reason"] and stats["speedup"] > 0
        assert stats["kernels"] <= row["unoptimized"]["kernels"]
    table = bm.render(report)
    (line,) = [line for line in table.splitlines() if line.startswith("gelu-erf ")]
    assert line.endswith("| ok") and "How to read it" in table


def test_matmul_share_counts_the_matmul_kernels_time() -> None:
    from tcp_rules.pipeline import load_module

    def share(text: str) -> float:
        func = load_module(Source("<test>", text)).funcs[0]
        cf = compile_func(func)
        rng = np.random.default_rng(0)
        inputs = [rng.standard_normal(p.type.shape).astype(np.float32) for p in func.params]
        split = bm._Split()
        bm._timed_call(cf, inputs, split)
        (got,) = split.matmul_share
        return got

    head = "func f(a: f32[64, 64], b: f32[64, 64]) -> f32[64, 64] {\n"
    assert share(head + "  return matmul(a, b)\n}\n") == 1.0
    assert share(head + "  return exp(add(a, b))\n}\n") == 0.0
    # a product, then a softmax over its rows as kernels of their own (--no-opt)
    rows = "shape=[64, 64], dims=[0]"
    mixed = share(head + "  p = matmul(a, b)\n"
                  f"  e = exp(sub(p, broadcast(reduce_max(p, axes=[1]), {rows})))\n"
                  f"  return div(e, broadcast(reduce_sum(e, axes=[1]), {rows}))\n}}\n")
    assert 0.0 < mixed < 1.0


def test_mismatch_is_reported_not_raised() -> None:
    func, inputs = bm.prepare(GRAPHS["softmax"])
    (want,) = evaluate(func, inputs)
    assert bm.outputs_mismatch(func, inputs, [want], [want.copy()]) is None
    wrong = want.copy()
    wrong.flat[3] += 1e-2  # far beyond rounding for probabilities in [0, 1]
    assert "1 of" in (bm.outputs_mismatch(func, inputs, [want], [wrong]) or "")


def test_unreadable_graph_is_skipped_with_the_importers_reason() -> None:
    from onnx import TensorProto, helper

    x = helper.make_tensor_value_info("X", TensorProto.FLOAT, [3, 3])
    model = helper.make_model(helper.make_graph(
        [helper.make_node("Det", ["X"], ["Y"])], "g", [x],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [])]),
        opset_imports=[helper.make_opsetid("", 13)])
    row = bm.measure(bm.Graph("det", "test", model), [], repeats=1)
    assert "Det" in row["skipped"]
    report = {"repeats": 1, "threads": 1, "cpu": "x", "tolerance": bm.TOLERANCE,
              "graphs": [row]}
    assert "det                 skipped: import:" in bm.render(report)


@pytest.mark.parametrize("name", ["attention", "attention-causal", "attention-mask",
                                  "attention-gqa"])
def test_onnx_attention_runs_as_one_kernel(name: str) -> None:
    """ONNX's expanded Attention body scales q and k by sqrt(scale) before QK^T and reads K^T
    through a reshape: matmul-const-left/right move the scale to the product (the softmax's
    loop), reshape-transpose-last and the matmul's transposed packing read K in place (shared
    by several heads in grouped-query attention: a broadcast read at stride 0), the masked
    softmax runs on QK^T's rows inside its matmul (rowpass) and P V on the softmax's (chain),
    and the last Reshape writes the result array: one kernel. (attention-mask has one kernel
    more, before it: which query rows the mask blocks entirely, from the mask alone.)"""
    func, inputs = bm.prepare(GRAPHS[name])
    opt = optimize(func, list(load_standard_library().rules), OptOptions(isolate=False)).func
    assert bm.kernel_count(func) > 3 and bm.kernel_count(opt) == 1 + (name == "attention-mask")
    got = compile_func(opt)(*inputs)
    assert bm.outputs_mismatch(func, inputs, evaluate(func, inputs), got) is None


def test_programs_saved_here_are_measured_without_optimizing(
        tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    """--save-programs then --programs: the second run never optimizes, measures the same
    programs (kernel counts, agreement with the unoptimized program) and reports the first
    run's optimizer stats, marked as such."""
    names = ["softmax", "attention"]
    first = json.loads(bm.models_suite(True, 1, small=True, names=names, save_to=tmp_path))
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    assert manifest["suite"] == "models" and manifest["sizes"] == "small"
    assert sorted(manifest["graphs"]) == sorted(names)
    assert sorted(p.name for p in tmp_path.glob("*.tcp")) == sorted(
        f"{n}.{v}.tcp" for n in names for v in bm.VARIANTS)

    def refuse(*_: object, **__: object) -> None:
        raise AssertionError("optimized although the programs were given")

    monkeypatch.setattr("tcp_rules.optimize.optimize", refuse)
    again = json.loads(bm.models_suite(True, 1, small=True, names=names, programs=tmp_path))
    assert first["programs"] is None
    assert again["programs"]["dir"] == str(tmp_path)
    for a, b in zip(first["graphs"], again["graphs"], strict=True):
        for k in bm.VARIANTS:
            for stat in ("seconds", "stop_reason", "peak_enodes", "kernels"):
                assert a[k][stat] == b[k][stat], (a["graph"], k, stat)
            assert b[k]["error"] is None and b[k]["mismatch"] is None
        assert a["unoptimized"]["kernels"] == b["unoptimized"]["kernels"]
    assert "optimized elsewhere: the programs in" in bm.render(again)
    with pytest.raises(bm.TcpError, match="of the models suite, not of the peers suite"):
        from tcp_rules.programstore import ProgramStore

        ProgramStore(tmp_path, "peers", "quick")


def test_kernel_count_is_the_listings() -> None:
    """kernel_count (the plan's steps, no cost model) counts what tcpr opt --emit kernels
    lists."""
    from tcp_rules.extract.cost import RooflineCost
    from tcp_rules.kernels import kernel_infos

    for name in ("softmax", "encoder-2"):
        func, _ = bm.prepare(GRAPHS[name])
        assert bm.kernel_count(func) == len(kernel_infos(func, RooflineCost())) > 1
