"""The two ops that delimit fused kernels: ``load`` and ``kernel``.

A *body* is a tensor expression that is never materialized: the code generator evaluates it
point by point inside one loop nest. ``load(x)`` reads a materialized tensor into a body (a
boundary where bytes are read); ``kernel(b)`` materializes a body (one loop nest, its result
written to memory). Ops applied to bodies are computed inside the kernel that materializes
them. Both ops mean the identity on values, so a fusion rule such as
``load(kernel(b)) => b`` is exact and the verifier checks it like any other rule; what they
change is where memory traffic happens, which the cost model and the code generator read.
Which values are bodies and which are tensors is the *sort* of a value (tcp_rules.sorts).

``load_matmul(a, b)`` is the product of two materialized tensors read into a body without being
materialized (a matmul kernel whose body ops run as its epilogue): matmul reads its operands as
packed panels from memory, so they are tensors, never bodies computed in the loop nest.

``load_matmul_rows(a, b, shape=s)`` is the one exception: a product whose A is a *body*
computed a block of rows at a time inside the product's own loop nest, never materialized, and
whose B is a tensor (attention's P V: the softmax's rows of P go to a per-worker scratch and are
multiplied by V there, codegen/chain.py). A is ``a`` regrouped to ``s``, which keeps a's last
two axes (its rows and columns) and may merge or split the others (an imported softmax over
[batch, heads, queries, keys], its heads folded into the product's batch). The fusion rules
``chain-rows`` make it from ``load_matmul(kernel(a), b)``, with or without a reshape between;
where the code generator cannot run ``a`` by blocks of rows it materializes ``a``, and the term
means what ``load_matmul(reshape(kernel(a), shape=s), b)`` would (extract/rows.py).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

import numpy as np

from tcp_rules.ops.core import AttrKind, Attrs, AttrSpec, CostFormula, OpDef, ShapeError
from tcp_rules.ops.linalg import LINALG_OPS
from tcp_rules.types import Dim, TensorType, dims_product


def _same_type(args: Sequence[TensorType], attrs: Attrs) -> TensorType:
    return args[0]


def _identity(a: Sequence[np.ndarray], attrs: Attrs, out: TensorType) -> np.ndarray:
    return a[0]


def broadcast_hoists(operand: Sequence[Dim], shape: Sequence[Dim], dims: Sequence[int]) -> bool:
    """Whether a broadcast inside a body is free: every axis it adds (or expands from size 1)
    comes after all the axes it keeps, so in a row-major loop nest its operand is computed in
    an outer loop, once per outer point, and reused across the inner ones (a row softmax's
    sum). Otherwise the operand would be recomputed per element, or materialized."""
    kept = [d for i, d in enumerate(dims) if operand[i] == shape[d]]
    return all(a > max(kept, default=-1) for a in range(len(shape)) if a not in kept)


# The ops that mean the identity on values (they only place memory traffic): the reference
# returns their operand, and analyses of values see through them.
IDENTITY_OPS = frozenset({"load", "kernel"})

# The ops that are a matrix product: the op itself and its two fused forms.
MATMULS = frozenset({"matmul", "load_matmul", "load_matmul_rows"})

_MATMUL = next(op for op in LINALG_OPS if op.name == "matmul")


def _regrouped(a: TensorType, attrs: Attrs) -> TensorType:
    """A as load_matmul_rows multiplies it: ``a`` regrouped to ``shape``, its last two axes
    kept."""
    shape = tuple(attrs["shape"])
    if len(shape) < 2 or a.rank < 2 or shape[-2:] != a.dims[-2:] or (
            dims_product(shape[:-2]) != dims_product(a.dims[:-2])):
        raise ShapeError(f"shape={list(map(str, shape))} must keep the last two axes of {a} and "
                         f"regroup only the others", attr="shape")
    return TensorType(a.dtype, shape)


def _infer_rows(args: Sequence[TensorType], attrs: Attrs) -> TensorType:
    return _MATMUL.infer([_regrouped(args[0], attrs), args[1]], {})


def regrouped_rows(a: np.ndarray, out_shape: Sequence[int]) -> np.ndarray:
    """load_matmul_rows' A as it multiplies it, given the product's shape ``out_shape``: the
    product's batch axes, then ``a``'s rows and columns (the values, or their error bounds)."""
    return a.reshape(*out_shape[:-2], *a.shape[-2:])


def _rows_reference(a: Sequence[np.ndarray], attrs: Attrs, out: TensorType) -> np.ndarray:
    assert out.shape is not None, "the reference runs on concrete types"
    return _MATMUL.reference([regrouped_rows(a[0], out.shape), a[1]], {}, out)


def _rows_space(args: Sequence[TensorType], fresh: Callable[[], Dim]
                ) -> Iterable[dict[str, object]]:
    dims = args[0].dims
    yield {"shape": dims}
    if len(dims) == 4:  # two batch axes merged into one
        yield {"shape": (dims[0] * dims[1], *dims[2:])}


FUSION_OPS: tuple[OpDef, ...] = (
    OpDef(name="load", doc="read a materialized tensor into a kernel body (the identity)",
          operands=("x",), attrs=(), infer=_same_type, reference=_identity,
          cost=CostFormula(0), category="fusion"),
    OpDef(name="kernel", doc="materialize a body: one fused loop nest (the identity)",
          operands=("body",), attrs=(), infer=_same_type, reference=_identity,
          cost=CostFormula(0), category="fusion"),
    OpDef(name="load_matmul", doc="matmul of two tensors, read into a body unmaterialized",
          operands=_MATMUL.operands, attrs=(), infer=_MATMUL.infer,
          reference=_MATMUL.reference, cost=_MATMUL.cost, category="fusion"),
    OpDef(name="load_matmul_rows", doc="matmul of a body regrouped to shape, by blocks of rows",
          operands=_MATMUL.operands, attrs=(AttrSpec("shape", AttrKind.DIMS),),
          infer=_infer_rows, reference=_rows_reference, attr_space=_rows_space,
          cost=_MATMUL.cost, category="fusion"),
)
