"""The peers suite (tcp_rules/benchpeers.py) at tiny sizes, measured in this process (through
the same hand-over on disk a measuring process reads), with the engines that are installed:
it runs, its JSON has the documented fields, and every engine's result was checked against the
float64 reference. No timing assertions.

JAX is left out: once it has run, its threads make any later fork of the test process unsafe
(the optimizer forks); the suite runs it in a process of its own."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

from tcp_rules import benchpeers as bp
from tcp_rules import peerworkloads as pw
from tcp_rules.cli import main
from tcp_rules.diagnostics import TcpError
from tcp_rules.ir import Func
from tcp_rules.peerengines import NUMPY, installed
from tcp_rules.peertable import _scaling_table, render

NAMES = ["relu", "mlp"]  # an elementwise program and one with a matmul and a weight
PEERS = [e for e, v in installed().items() if v and e != "jax"]


@pytest.fixture(scope="module")
def to_save(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("programs")


@pytest.fixture(scope="module")
def report(to_save: Path) -> dict:
    out = bp.peers_report((1,), 1, quick=True, names=NAMES, peers=PEERS, isolate=False,
                          save_to=to_save)
    return json.loads(json.dumps(out))  # what --json prints


@pytest.fixture(scope="module")
def saved(report: dict, to_save: Path) -> Path:
    """Where the fixture ``report``'s run saved its optimized programs (--save-programs)."""
    return to_save


def test_report_has_the_documented_fields(report: dict) -> None:
    assert report["schema"] == bp.SCHEMA and report["suite"] == "peers"
    assert report["repeats"] == 1 and report["quick"] is True and report["cpus"] >= 1
    assert report["versions"]["numpy"] and report["versions"]["onnxruntime"]
    assert [w["workload"] for w in report["workloads"]] == NAMES
    for w in report["workloads"]:
        assert w["skipped"] is None and w["ops"] > 0 and w["optimizer"]["stop_reason"]
    (run,) = report["runs"]
    assert run["threads"] == 1 and run["isolated"] is False and run["error"] is None
    assert [r["workload"] for r in run["rows"]] == NAMES


def test_every_installed_engine_ran_and_was_checked(report: dict) -> None:
    assert {"numpy", "onnxruntime"} <= set(PEERS)
    for row in report["runs"][0]["rows"]:
        engines = {bp.TCPR, bp.TCPR_OUT, *PEERS}
        assert row["errors"] == {}, row["errors"]
        assert set(row["ms"]) == engines and all(t > 0 for t in row["ms"].values())
        assert row["check"] == dict.fromkeys(engines), row["check"]  # None: within tolerance
        assert row["best_peer"] in PEERS
        assert row["ratio"] == pytest.approx(row["ms"][row["best_peer"]] / row["ms"][bp.TCPR])
        assert row["ratio_out"] > 0
        assert row["ratio_iqr"] is row["ratio_out_iqr"] is None  # one round: no spread
        assert row["kernels"] >= 1 and row["kernel_ms"] > 0
        # a call's wall time and its kernels' times come from the same call: the host's part
        # (checks, results, the native entry) is positive
        assert row["host_us_per_kernel"] > 0


def test_streaming_rows_are_set_against_the_stream_loop(report: dict) -> None:
    relu, mlp = report["runs"][0]["rows"]
    (w,) = pw.workloads(quick=True, names=["relu"])
    assert w.traffic() == 4 * 16 * 24 * 4  # a, b and c read, the result written, f32
    seconds = w.traffic() / 1e9 / relu["gbs"]
    assert seconds == pytest.approx(relu["ms"][bp.TCPR_OUT] / 1e3)
    assert relu["stream_gbs"] > 0 and relu["roofline"] > 0 and relu["gflops"] is None
    (m,) = pw.workloads(quick=True, names=["mlp"])
    assert m.stream is None and m.flops == 2 * 8 * 20 * 12
    assert mlp["gflops"] == pytest.approx(m.flops / 1e6 / mlp["ms"][bp.TCPR_OUT])
    assert mlp["gbs"] is mlp["stream_gbs"] is mlp["roofline"] is None


def test_scaling_table_sets_each_count_against_the_first() -> None:
    def run(threads: int, ms: float, roofline: float) -> dict:
        row = {"workload": "relu", "ms": {bp.TCPR_OUT: ms}, "gbs": 6.0 / ms,
               "roofline": roofline, "gflops": None}
        return {"threads": threads, "error": None, "rows": [row]}

    report = {"runs": [run(1, 8.0, 0.91), run(4, 2.5, 0.84)]}
    (head, cols, line) = _scaling_table(report, {"relu": "relu(a*b+c)"})
    assert "speedup over 1 thread" in head and "4 threads" in cols
    assert line.split("|")[1].split() == ["8.00", "1.00x", "0.8", "GB/s", "91%"]
    assert line.split("|")[2].split() == ["2.50", "3.20x", "2.4", "GB/s", "84%"]


def test_ratio_spread_pairs_each_round() -> None:
    # the rounds' ratios are 2, 2, 1, 0.5, 0.5: each peer time over ours in the same round
    assert bp.paired_iqr([2, 2, 2, 2, 2], [1, 1, 2, 4, 4]) == [0.5, 2.0]
    # unpaired, both lists sorted the same way, every ratio would be 1
    assert bp.paired_iqr([1, 3], [3, 1]) == pytest.approx([1.0, 7 / 3])
    assert bp.paired_iqr([1.0], [2.0]) is None


def test_table_marks_a_ratio_within_the_noise(report: dict) -> None:
    run = json.loads(json.dumps(report["runs"][0]))
    relu, mlp = run["rows"]
    relu |= {"ratio": 1.02, "ratio_iqr": [0.9, 1.1], "ratio_out": 1.2,
             "ratio_out_iqr": [1.05, 1.3]}
    mlp |= {"ratio": 0.8, "ratio_iqr": [0.7, 0.9], "ratio_out": 0.8, "ratio_out_iqr": None}
    table = render({**report, "runs": [run]})
    r, m = (next(line for line in table.splitlines() if line.startswith(name))
            for name in ("relu", "mlp"))  # (the run's table comes first)
    assert "1.02~  1.20x |" in r and "0.80x  0.80x |" in m


def test_table_shows_each_row_checked(report: dict) -> None:
    table = render(report)
    for title in ("relu(a*b+c)", "mlp: relu(x@W+b)"):
        run_row, scaling_row = [ln for ln in table.splitlines() if ln.startswith(title)]
        assert run_row.endswith("| ok") and scaling_row.count("|") == 1
    assert "How to read it" in table and "best peer" in table
    assert "tcp-rules out= by thread count" in table


def test_a_wrong_result_is_a_mismatch() -> None:
    (w,) = pw.workloads(quick=True, names=["softmax"])
    p = bp.Prepared(w, {}, params=["X"])
    wide = {"X": w.arrays["X"].astype(np.float64)}
    bp._reference(p, _imported(w), [w.arrays["X"]])
    good = np.asarray(w.compute(NUMPY, w.arrays))
    assert bp.check(p, good) is None
    bad = good.copy()
    bad.flat[5] += 1e-3  # far beyond rounding for probabilities in [0, 1]
    assert "1 of" in (bp.check(p, bad) or "")
    assert "expected float32" in (bp.check(p, good.astype(np.float64)) or "")
    assert np.allclose(p.want, w.compute(NUMPY, wide), rtol=1e-6, atol=0)


def _imported(w: pw.Workload) -> Func:
    from tcp_rules.frontends.onnx import import_model

    return import_model(w.model).module.funcs[0]


def test_cli_rejects_thread_lists_elsewhere_and_unknown_workloads(
        capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "--suite", "models", "--threads", "1,2"]) == 1
    assert "only --suite peers" in capsys.readouterr().err
    assert main(["bench", "--suite", "peers", "--threads", "1,x"]) == 1
    assert "comma-separated" in capsys.readouterr().err
    assert main(["bench", "--suite", "peers", "--quick", "nosuch"]) == 1
    assert "no peers workload named nosuch" in capsys.readouterr().err


def test_programs_saved_here_are_measured_without_optimizing(
        report: dict, saved: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """--programs DIR: the optimizer is never called, the programs are the ones saved, and the
    results are checked against references computed afresh."""
    import tcp_rules.optimize

    def refuse(*_: object, **__: object) -> None:
        raise AssertionError("optimized although the programs were given")

    monkeypatch.setattr(tcp_rules.optimize, "optimize", refuse)
    again = bp.peers_report((1,), 1, quick=True, names=NAMES, peers=["numpy"], isolate=False,
                            programs=saved)
    assert again["programs"] == {"dir": str(saved), "saved_by": report["versions"][bp.TCPR]}
    assert report["programs"] is None
    assert [w["optimizer"] for w in again["workloads"]] == \
        [w["optimizer"] for w in report["workloads"]]
    for row, first in zip(again["runs"][0]["rows"], report["runs"][0]["rows"], strict=True):
        assert row["errors"] == {} and row["check"] == dict.fromkeys(
            [bp.TCPR, bp.TCPR_OUT, "numpy"])
        assert row["kernels"] == first["kernels"]
    assert "optimized elsewhere: the programs in" in render(again)
    manifest = json.loads((saved / "manifest.json").read_text())
    assert sorted(manifest["graphs"]) == sorted(NAMES) and manifest["sizes"] == "quick"
    assert manifest["suite"] == "peers"
    assert sorted(p.name for p in saved.iterdir()) == [
        "manifest.json", "mlp.optimized.tcp", "relu.optimized.tcp"]


def _store_error(where: Path, sizes: str = "quick", name: str = "relu",
                 suite: str = "peers") -> str:
    from tcp_rules.programstore import ProgramStore

    (w,) = pw.workloads(quick=True, names=[name])
    with pytest.raises(TcpError) as e:
        ProgramStore(where, suite, sizes).program(w.name, w.model, bp.VARIANT)
    return e.value.render()


def test_a_programs_directory_that_does_not_fit_is_refused(saved: Path, report: dict,
                                                            tmp_path: Path) -> None:
    assert "has no manifest.json" in _store_error(tmp_path)
    assert "for the quick sizes, not the full ones" in _store_error(saved, sizes="full")
    assert "of the peers suite, not of the models suite" in _store_error(saved, suite="models")
    assert "no programs for softmax" in _store_error(saved, name="softmax")
    bad = tmp_path / "bad"
    shutil.copytree(saved, bad)
    manifest = json.loads((bad / "manifest.json").read_text())
    manifest["graphs"]["relu"]["graph"] = "0" * 24
    # must not lead out of the directory
    manifest["graphs"]["mlp"]["variants"]["optimized"]["file"] = "../relu.optimized.tcp"
    (bad / "manifest.json").write_text(json.dumps(manifest))
    assert "optimized from another graph" in _store_error(bad)
    assert "must be a file in" in _store_error(bad, name="mlp")
    (bad / "manifest.json").write_text("{")
    assert "cannot read it" in _store_error(bad)
    linked = tmp_path / "linked"
    shutil.copytree(saved, linked)
    (linked / "relu.optimized.tcp").unlink()
    (linked / "relu.optimized.tcp").symlink_to(saved / "relu.optimized.tcp")
    assert "a link; the programs must be files" in _store_error(linked)


def test_a_program_of_another_signature_is_refused(saved: Path, tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    other = tmp_path / "other"
    shutil.copytree(saved, other)
    text = (other / "relu.optimized.tcp").read_text()
    assert text.count("f32[16, 24]") == 4  # a, b, c and the result: a valid program still
    (other / "relu.optimized.tcp").write_text(text.replace("f32[16, 24]", "f32[16, 25]"))
    assert main(["bench", "--suite", "peers", "--quick", "--repeats", "1", "--programs",
                 str(other), "relu"]) == 1
    err = capsys.readouterr().err
    assert "parameters or results differ from the imported graph's" in err


def test_a_broken_program_is_reported_at_its_line(saved: Path, tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad"
    shutil.copytree(saved, bad)
    lines = (bad / "relu.optimized.tcp").read_text().splitlines()
    lines[1] = lines[1].replace("max(", "nosuchop(", 1)  # an op no table knows
    (bad / "relu.optimized.tcp").write_text("\n".join(lines) + "\n")
    assert main(["bench", "--suite", "peers", "--quick", "--repeats", "1", "--programs",
                 str(bad), "relu"]) == 1
    err = capsys.readouterr().err
    assert f"{bad / 'relu.optimized.tcp'}:2:" in err and "Traceback" not in err
    assert main(["bench", "--suite", "codegen", "--programs", str(bad)]) == 1
    assert "only --suite peers" in capsys.readouterr().err


def test_models_carry_their_opsets_ir_version() -> None:
    """Not the newest IR version the onnx package writes: onnxruntime 1.30 refused every
    workload of onnx 1.23's IR 14 ("max supported IR version: 13"). The model suite's graphs
    (ONNX function bodies, the zoo encoder) likewise."""
    from onnx import helper

    from tcp_rules.benchmodels import graphs

    models = [w.model for w in pw.workloads(quick=True)]
    models += [g.model for g in graphs(small=True) if g.model is not None]
    assert len(models) > len(pw.NAMES)
    for model in models:
        assert model.ir_version == helper.find_min_ir_version_for(model.opset_import)
