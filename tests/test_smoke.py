"""The bundled examples parse, type-check and run on the reference engine."""

import numpy as np

from tcp_rules.inputs import random_inputs
from tcp_rules.interpret import evaluate
from tcp_rules.pipeline import load_module_file
from tcp_rules.resources import example_path, example_paths


def test_every_example_is_bundled() -> None:
    names = {p.stem for p in example_paths()}
    assert names == {"mlp", "softmax", "layernorm", "gelu", "attention"}


def test_mlp_matches_numpy() -> None:
    func = load_module_file(example_path("mlp")).func()
    x, w, b = random_inputs(func, {"N": 5}, seed=3)
    (y,) = evaluate(func, [x, w, b])
    np.testing.assert_array_equal(y, np.maximum(x @ w + b, np.float32(0)))
