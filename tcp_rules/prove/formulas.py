"""The formula facet of the op table: each op's meaning as z3 terms, keyed by op name.

z3 is heavy and optional, so this facet lives here, beside the op table rather than in it;
tests/test_prove_formulas.py checks that every op in OPS has a formula or a stated reason why
not (an op without one makes every rule that uses it come back unknown).
"""

from __future__ import annotations

from tcp_rules.prove.domain import regrouped_matmul
from tcp_rules.prove.scalars import SCALAR_FORMULAS
from tcp_rules.prove.tensors import (
    TensorFn,
    constant,
    elementwise,
    gather,
    matmul,
    movement,
    reduction,
)

FORMULAS: dict[str, TensorFn] = {
    **{name: elementwise for name in SCALAR_FORMULAS},
    "splat": constant, "dense": constant, "iota": constant,
    **{name: movement for name in ("broadcast", "transpose", "reshape", "slice", "concat",
                                   "pad", "load", "kernel")},
    "gather": gather,
    **{f"reduce_{k}": reduction for k in ("sum", "prod", "max", "min")},
    "matmul": matmul, "load_matmul": matmul,
    "load_matmul_rows": regrouped_matmul(movement, matmul),
}

# Ops with no formula, and why: none at present (float matmul and long float sums are refused
# per instance, see tensors.py).
UNSUPPORTED: dict[str, str] = {}
