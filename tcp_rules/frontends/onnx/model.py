"""Reading an ONNX model and walking its graph: parameters from graph inputs, constants from
initializers, one converter per node, results from graph outputs.

Nothing is executed from the file and no other file is read, except external tensor data that
the model names inside its own directory.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import onnx
import onnx.inliner
from google.protobuf.message import DecodeError
from onnx import external_data_helper, numpy_helper

from tcp_rules import build as tb
from tcp_rules.diagnostics import TcpError
from tcp_rules.frontends import Imported, identifier
from tcp_rules.frontends.onnx.context import (
    CONVERTERS,
    INLINE_LIMIT,
    Context,
    Tensor,
    as_dims,
    onnx_dtype,
)
from tcp_rules.frontends.onnx.folding import fold
from tcp_rules.grammar.parser import read_file_bytes
from tcp_rules.ir import Module, Value
from tcp_rules.types import Dim, DType, TensorType

MAX_MODEL_BYTES = 2 << 30  # protobuf's own limit on one message
MIN_OPSET, DOMAINS = 7, ("", "ai.onnx")


def load_model(path: str | Path) -> onnx.ModelProto:
    """Parse an ONNX file (no external data yet); TcpError when it is not a valid model."""
    data = read_file_bytes(path, MAX_MODEL_BYTES)
    model = onnx.ModelProto()
    try:
        model.ParseFromString(data)
    except (DecodeError, RuntimeWarning, ValueError) as e:
        raise TcpError.at(f"{path}: not an ONNX model (the protobuf does not parse: {e})") \
            from None
    if not model.HasField("graph"):
        raise TcpError.at(f"{path}: not an ONNX model (it has no graph)")
    _load_external(model, Path(path))
    return model


def _load_external(model: onnx.ModelProto, path: Path) -> None:
    tensors = [t for t in model.graph.initializer if external_data_helper.uses_external_data(t)]
    if not tensors:
        return
    base = path.resolve().parent
    for t in tensors:
        info = external_data_helper.ExternalDataInfo(t)
        target = (base / info.location).resolve()
        if base not in target.parents or not target.is_file():
            raise TcpError.at(f"{path}: initializer '{t.name}' names external data "
                              f"'{info.location}' outside the model's directory or missing")
        external_data_helper.load_external_data_for_tensor(t, str(base))


def opset_of(model: onnx.ModelProto) -> int:
    """The default-domain opset the model imports."""
    versions = [o.version for o in model.opset_import if o.domain in DOMAINS]
    if not versions:
        raise TcpError.at("the model imports no version of the default ONNX domain")
    return max(versions)


def import_model(model: onnx.ModelProto, dims: Mapping[str, int | str] | None = None, *,
                 constants: Mapping[str, np.ndarray] | None = None,
                 inline_limit: int = INLINE_LIMIT, where: str = "model") -> Imported:
    """A TCP module from an ONNX model.

    ``dims`` binds ONNX dim names to sizes or TCP symbols; ``constants`` gives values for graph
    inputs that must be known when importing (shape arguments); initializers with more than
    ``inline_limit`` elements become parameters whose arrays are returned as weights.
    """
    inits = {t.name for t in model.graph.initializer}
    for inp in model.graph.input:  # before the checker, which says less about it
        tt = inp.type.tensor_type
        if inp.name not in inits and inp.type.HasField("tensor_type") \
                and not tt.HasField("shape"):
            raise TcpError.at(f"{where}: graph input '{inp.name}' has no shape (dynamic rank); "
                              f"TCP needs the rank of every tensor: export the model with a "
                              f"fixed rank")
    try:
        if model.functions:
            model = onnx.inliner.inline_local_functions(model)
        onnx.checker.check_model(model)
    except (onnx.checker.ValidationError, onnx.onnx_cpp2py_export.checker.ValidationError) as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise TcpError.at(f"{where}: invalid ONNX model: {first}") from None
    opset = opset_of(model)
    if opset < MIN_OPSET:
        raise TcpError.at(f"{where}: opset {opset} is older than {MIN_OPSET}, which the "
                          f"importer reads")
    g = model.graph
    ctx = Context(tb.FuncBuilder(identifier(g.name or "main")), opset, inline_limit)
    bindings = as_dims(dims)
    for t in g.initializer:
        try:
            ctx.env[t.name] = numpy_helper.to_array(t)
        except (ValueError, TypeError) as e:
            raise TcpError.at(f"{where}: initializer '{t.name}' is malformed: {e}") from None
    for name, arr in (constants or {}).items():
        ctx.env[name] = np.asarray(arr)
    for inp in g.input:
        if inp.name in ctx.env:  # an initializer with a default value, or given as constant
            _check_initializer(inp, ctx.env[inp.name], where)
            continue
        ctx.env[inp.name] = _param(ctx, inp, bindings)
        ctx.graph_inputs.add(inp.name)
    for node in g.node:
        ctx.node = node
        _convert(ctx, node)
    ctx.node = None
    results = []
    for out in g.output:
        if out.name not in ctx.env:
            raise TcpError.at(f"{where}: graph output '{out.name}' is not produced by any node")
        v = ctx.as_value(ctx.env[out.name], out.name)
        _check_output(ctx, out, v, where)
        results.append(v)
    ctx.func.ret(*results)
    return Imported(Module((ctx.func.finish(),)), dict(ctx.weights), dict(ctx.aliases))


def _param(ctx: Context, inp: onnx.ValueInfoProto, bindings: Mapping[str, Dim]) -> Value:
    what = f"graph input '{inp.name}'"
    if not inp.type.HasField("tensor_type"):
        raise TcpError.at(f"{what} is not a tensor (sequences, maps and optionals are not "
                          f"supported)")
    tt = inp.type.tensor_type
    dt = onnx_dtype(tt.elem_type, what)
    dims = []
    taken = {p.param for p in ctx.func.params}
    tcp = identifier(inp.name, taken)
    for axis, d in enumerate(tt.shape.dim):
        if d.HasField("dim_value"):
            dims.append(Dim.of(d.dim_value))
        elif d.HasField("dim_param") and d.dim_param:
            dims.append(bindings.get(d.dim_param) or Dim.of(identifier(d.dim_param)))
        else:  # an unnamed dynamic dim gets a symbol of its own
            dims.append(Dim.of(f"{tcp}_d{axis}"))
    if tcp != inp.name:
        ctx.aliases[inp.name] = tcp
    return ctx.func.param(tcp, TensorType(dt, tuple(dims)))


def _check_initializer(inp: onnx.ValueInfoProto, value: Tensor, where: str) -> None:
    """A graph input that has an initializer must agree with it in type and shape."""
    tt = inp.type.tensor_type
    if not isinstance(value, np.ndarray) or not inp.type.HasField("tensor_type"):
        return
    want = onnx_dtype(tt.elem_type, f"graph input '{inp.name}'") if tt.elem_type else None
    got = DType.from_numpy(value.dtype)
    if want is not None and got is not want:
        raise TcpError.at(f"{where}: initializer '{inp.name}' is {value.dtype} but the graph "
                          f"input of that name is declared {want}")
    if tt.HasField("shape"):
        declared = [d.dim_value if d.HasField("dim_value") else None for d in tt.shape.dim]
        if len(declared) != value.ndim or any(
                d is not None and d != n for d, n in zip(declared, value.shape, strict=False)):
            raise TcpError.at(f"{where}: initializer '{inp.name}' has shape "
                              f"{list(value.shape)} but the graph input of that name is "
                              f"declared {[d if d is not None else '?' for d in declared]}")


def _convert(ctx: Context, node: onnx.NodeProto) -> None:
    if node.domain not in DOMAINS:
        raise ctx.error(f"op {node.domain}.{node.op_type} is from a domain the importer does "
                        f"not read (only the default ONNX domain)")
    inputs = [ctx.env.get(n) if n else None for n in node.input]
    missing = [n for n, t in zip(node.input, inputs, strict=True) if n and t is None]
    if missing:
        raise ctx.error(f"input '{missing[0]}' is not produced by any earlier node")
    outs: list[Tensor] | None = None
    consts = [t for t in inputs if t is None or isinstance(t, np.ndarray)]
    if len(consts) == len(inputs):
        outs = fold(ctx, node, consts)
    if outs is None:
        fn = CONVERTERS.get(node.op_type)
        if fn is None:
            raise ctx.error(f"op {node.op_type} is not supported: TCP cannot express it (yet)")
        outs = list(fn(ctx))
    for name, t in zip(node.output, outs, strict=False):
        if name:
            ctx.env[name] = t
    used = [n for n in node.output[len(outs):] if n]
    if used:
        raise ctx.error(f"output '{used[0]}' is not supported by the importer")


def _check_output(ctx: Context, out: onnx.ValueInfoProto, v: Value, where: str) -> None:
    tt = out.type.tensor_type
    if out.type.HasField("tensor_type") and tt.elem_type:
        want = onnx_dtype(tt.elem_type, f"graph output '{out.name}'")
        if want is not v.type.dtype:
            raise TcpError.at(f"{where}: graph output '{out.name}' is declared {want} but "
                              f"computes {v.type.dtype}")


def import_onnx(path: str | Path, dims: Mapping[str, int | str] | None = None, *,
                inline_limit: int = INLINE_LIMIT) -> Imported:
    """Read and import the ONNX model at ``path`` (see :func:`import_model`)."""
    return import_model(load_model(path), dims, inline_limit=inline_limit,
                        where=os.fspath(path))
