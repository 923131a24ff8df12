"""Constant folding at import time: nodes whose inputs are all known.

Numeric constants are folded by ONNX's own reference evaluator (``onnx.reference``), so folded
values follow the ONNX specification exactly. Shapes with symbolic dims (object arrays of
:class:`Dim`, from ``Shape`` of a tensor with symbolic dims) are folded here for the ops that
exporters use to compute shapes: Gather, Concat, Slice, (Un)Squeeze, Reshape, Cast and integer
arithmetic.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import onnx
from onnx.reference import ReferenceEvaluator

from tcp_rules.frontends.onnx.context import Context, Tensor, normalize_axis
from tcp_rules.types import Dim

# Never folded: their value is not a function of their inputs.
_RANDOM = frozenset({"RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike",
                     "Multinomial", "Bernoulli"})
_FOLD_LIMIT = 1 << 24  # elements; a larger constant would only be a weight nobody asked for


def fold(ctx: Context, node: onnx.NodeProto,
         inputs: Sequence[np.ndarray | None]) -> list[Tensor] | None:
    """The outputs of ``node`` if they can be computed now, else None (convert it instead)."""
    if node.op_type in _RANDOM:
        return None
    if any(a is not None and a.dtype == object for a in inputs):
        return _fold_symbolic(ctx, node, inputs)
    if node.op_type == "Constant":
        return [_constant(ctx, node)]
    if sum(a.size for a in inputs if a is not None) > _FOLD_LIMIT:
        return None
    model = _one_node_model(node, inputs, ctx.opset)
    # IEEE results without NumPy's warnings: exporters fold masked-out branches such as T5's
    # log(0) cast to int64, which a Where discards afterwards.
    try:
        with np.errstate(all="ignore"):
            outs = ReferenceEvaluator(model).run(
                None, {n: a for n, a in zip(node.input, inputs, strict=True) if n})
    except Exception:  # the evaluator raises anything; the node is then converted instead
        return None
    return [np.asarray(o) for o in outs]


def _one_node_model(node: onnx.NodeProto, inputs: Sequence[np.ndarray | None],
                    opset: int) -> onnx.ModelProto:
    h = onnx.helper
    ins = [h.make_tensor_value_info(n, h.np_dtype_to_tensor_dtype(a.dtype), a.shape)
           for n, a in zip(node.input, inputs, strict=True) if n and a is not None]
    outs = [h.make_empty_tensor_value_info(n) for n in node.output if n]
    graph = h.make_graph([node], "fold", ins, outs)
    return h.make_model(graph, opset_imports=[h.make_opsetid("", opset)])


def _constant(ctx: Context, node: onnx.NodeProto) -> np.ndarray:
    (a,) = node.attribute
    v = onnx.helper.get_attribute_value(a)
    if a.name == "value":
        return onnx.numpy_helper.to_array(v)
    kinds = {"value_float": np.float32, "value_floats": np.float32, "value_int": np.int64,
             "value_ints": np.int64}
    if a.name not in kinds:
        raise ctx.error(f"Constant with attribute {a.name} is not supported")
    return np.array(v, dtype=kinds[a.name])


def _dims(a: np.ndarray) -> np.ndarray:
    out = np.empty(a.shape, dtype=object)
    for i, v in np.ndenumerate(a):
        out[i] = Dim.of(v if isinstance(v, Dim) else int(v))
    return out


def shape_value(dims: Sequence[Dim]) -> np.ndarray:
    """A shape as a constant: int64 when static, else an object array of dims."""
    consts = [d.const for d in dims]
    if all(c is not None for c in consts):
        return np.array(consts, dtype=np.int64)
    arr = np.empty(len(dims), dtype=object)
    for i, d in enumerate(dims):
        arr[i] = d
    return arr


def _settle(a: np.ndarray) -> np.ndarray:
    flat = [Dim.of(v) if not isinstance(v, Dim) else v for v in a.ravel()]
    if all(d.const is not None for d in flat):
        return np.array([d.const for d in flat], dtype=np.int64).reshape(a.shape)
    return a


def _int_list(ctx: Context, a: np.ndarray | None) -> list[int]:
    out: list[int] = []
    for v in [] if a is None else a.ravel():
        c = v.const if isinstance(v, Dim) else int(v)
        if c is None:
            raise ctx.error(f"a slice bound or index depends on the symbolic dim {v}")
        out.append(c)
    return out


def _fold_symbolic(ctx: Context, node: onnx.NodeProto,
                   inputs: Sequence[np.ndarray | None]) -> list[Tensor] | None:
    op, x = node.op_type, inputs[0]
    if x is None:
        return None
    if op in ("Identity", "Cast") and x.dtype == object:
        return [x]
    if op == "Gather":
        axis = normalize_axis(ctx, ctx.attr("axis", 0), x.ndim)
        indices = inputs[1]
        assert indices is not None
        taken = np.take(x, np.array(_int_list(ctx, indices)).reshape(indices.shape), axis=axis)
        return [_settle(np.asarray(taken, dtype=object))]
    if op == "Concat":
        parts = [_dims(a) for a in inputs if a is not None]
        return [_settle(np.concatenate(parts, axis=ctx.attr("axis", 0)))]
    if op in ("Unsqueeze", "Squeeze", "Reshape", "Flatten"):
        return None  # the movement converters handle constants of any dtype
    if op == "Slice":
        if x.dtype != object:  # a constant cut to a symbolic size: the converter's slice
            return None
        starts, ends = _int_list(ctx, inputs[1]), _int_list(ctx, inputs[2])
        axes = _int_list(ctx, inputs[3]) if len(inputs) > 3 and inputs[3] is not None \
            else list(range(len(starts)))
        steps = _int_list(ctx, inputs[4]) if len(inputs) > 4 and inputs[4] is not None \
            else [1] * len(starts)
        index = [slice(None)] * x.ndim
        for s, e, a, st in zip(starts, ends, axes, steps, strict=True):
            index[normalize_axis(ctx, a, x.ndim)] = slice(s, e, st)
        return [_settle(x[tuple(index)])]
    if op in ("Add", "Sub", "Mul", "Div") and len(inputs) == 2 and inputs[1] is not None:
        lhs, rhs = np.broadcast_arrays(_dims(x), _dims(inputs[1]))
        out: np.ndarray = np.empty(lhs.shape, dtype=object)
        for i in np.ndindex(lhs.shape):
            out[i] = _arith(ctx, op, lhs.item(i), rhs.item(i))
        return [_settle(out)]
    return None


def _arith(ctx: Context, op: str, a: Dim, b: Dim) -> Dim:
    if op == "Add":
        return a + b
    if op == "Sub":
        return a - b
    if op == "Mul":
        return a * b
    q = divide_dim(a, b)
    if q is None:
        raise ctx.error(f"cannot divide the symbolic dim {a} by {b} exactly")
    return q


def divide_dim(a: Dim, b: Dim) -> Dim | None:
    """``a / b`` when it divides exactly as a polynomial over a monomial divisor, else None."""
    if len(b.terms) != 1:
        return None
    (mono, coeff), = b.terms
    out = Dim.of(0)
    for m, c in a.terms:
        rest = list(m)
        for s in mono:
            if s not in rest:
                return None
            rest.remove(s)
        if c % coeff:
            return None
        term = Dim.of(c // coeff)
        for s in rest:
            term = term * Dim.of(s)
        out = out + term
    return out
