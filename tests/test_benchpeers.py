"""The peers suite (tcp_rules/benchpeers.py) at tiny sizes, measured in this process (through
the same hand-over on disk a measuring process reads), with the engines that are installed:
it runs, its JSON has the documented fields, and every engine's result was checked against the
float64 reference. No timing assertions.

JAX is left out: once it has run, its threads make any later fork of the test process unsafe
(the optimizer forks); the suite runs it in a process of its own."""

from __future__ import annotations

import json

import numpy as np
import pytest

pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

from tcp_rules import benchpeers as bp
from tcp_rules import peerworkloads as pw
from tcp_rules.cli import main
from tcp_rules.ir import Func
from tcp_rules.peerengines import NUMPY, installed
from tcp_rules.peertable import _scaling_table, render

NAMES = ["relu", "mlp"]  # an elementwise program and one with a matmul and a weight
PEERS = [e for e, v in installed().items() if v and e != "jax"]


@pytest.fixture(scope="module")
def report() -> dict:
    out = bp.peers_report((1,), 1, quick=True, names=NAMES, peers=PEERS, isolate=False)
    return json.loads(json.dumps(out))  # what --json prints


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
