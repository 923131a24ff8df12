"""Helpers the ONNX frontend tests share: a model's output shapes filled in, a model run on
one engine, an exported model checked against onnxruntime, and an import that must fail with a
clear error."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from numerics import assert_within, error_bounds

from tcp_rules.cli import main
from tcp_rules.frontends.onnx import import_model
from tcp_rules.optimize import OptOptions
from tcp_rules.pipeline import optimize_func, run_func
from tcp_rules.rules.library import load_standard_library


def with_output_shapes(model: onnx.ModelProto) -> onnx.ModelProto:
    """``model`` with its outputs' shapes inferred (the checker wants them); where inference
    gives none (a node the error tests make invalid), a placeholder [1]."""
    model = onnx.shape_inference.infer_shapes(model)
    for out in model.graph.output:
        if not out.type.tensor_type.HasField("shape"):
            out.type.tensor_type.shape.dim.add().dim_value = 1
    return model


def run_onnx(model: onnx.ModelProto, feeds: dict[str, np.ndarray], engine: str,
             dims: dict[str, int | str] | None = None) -> list[np.ndarray]:
    """The model imported and run on ``engine`` (reference, compiled, or optimized with the
    standard library then compiled); the importer's weights supply the other parameters."""
    imported = import_model(model, dims)
    func = imported.module.funcs[0]
    if engine == "optimized":
        func = optimize_func(func, load_standard_library().rules, OptOptions()).func
    arrays = {**imported.weights, **feeds}
    return list(run_func(func, [arrays[p.param] for p in func.params],
                         "reference" if engine == "reference" else "compiled"))


def import_fails(model: onnx.ModelProto, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                 *needles: str) -> None:
    """``tcpr import`` of the model exits 1 with every needle in its message, no traceback."""
    path = tmp_path / "m.onnx"
    onnx.save(model, path)
    assert main(["import", str(path)]) == 1
    err = capsys.readouterr().err
    assert "Traceback" not in err
    for n in needles:
        assert n in err, err


def assert_matches_onnxruntime(path: Path, engine: str, shapes: list[tuple[int, ...]],
                               name: str = "images") -> None:
    """The model at ``path`` (its batch symbolic) imported, optimized for the "optimized"
    engine, and run at each input shape within 2 E (tests/numerics.py) of onnxruntime."""
    ort = pytest.importorskip("onnxruntime")
    imported = import_model(onnx.load(path))
    plain = imported.module.funcs[0]
    assert str(plain.params[0].type.dims[0]) == "batch"
    func = optimize_func(plain, load_standard_library().rules, OptOptions()).func \
        if engine == "optimized" else plain
    for shape in shapes:
        x = np.random.default_rng(shape[0]).standard_normal(shape).astype(np.float32)
        (want,) = ort.InferenceSession(str(path)).run(None, {name: x})
        arrays = {name: x, **imported.weights}
        (got,) = run_func(func, [arrays[p.param] for p in func.params], "compiled")
        _, (bound,) = error_bounds(plain, [arrays[p.param] for p in plain.params])
        assert_within(got, want, 2 * bound, f"{engine} {shape}")
