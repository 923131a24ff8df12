"""The benchmark harness: a memory-bound case gets its paired roofline fraction and engine times."""

from __future__ import annotations

from codegen.support import tcpr_cache  # noqa: F401

from tcp_rules.codegen import bench


def test_run_case_pairs_the_stream_loop_round_by_round() -> None:
    (row,) = bench.run_case("unary_neg", repeats=3, threads=1, loops=bench.stream_loops(1))
    assert {"tcp-rules", "numpy"} <= set(row.times)
    assert row.roofline is not None and 0.2 < row.roofline < 3.0  # a copy-like kernel: near 1
    report = bench._row_json(row, {"copy": 1.0, "triad": 1.0})
    assert report["roofline"] == row.roofline
    assert report["roofline_vs_start"] == report["gbs"]  # against the 1 GB/s given as the start
