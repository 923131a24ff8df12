"""The e-graph as Python data, read once from egglog's frozen tables for extraction."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tcp_rules.egraph.bindings import bindings
from tcp_rules.egraph.schema import OP_OF_CONSTRUCTOR
from tcp_rules.egraph.tables import NONE_BOUND, BigInt, Tables, bits_scalar
from tcp_rules.ops import AttrKind, OpDef
from tcp_rules.sorts import Sort
from tcp_rules.types import DType, TensorType


@dataclass(frozen=True)
class ENode:
    """One e-node: an op (or a parameter), its child e-classes and decoded attributes."""

    op: OpDef | None  # None: a parameter
    children: tuple[int, ...]
    attrs: tuple[tuple[str, Any], ...] = ()
    param: str | None = None


@dataclass
class EClass:
    id: int
    type: TensorType | None = None
    nodes: list[ENode] = field(default_factory=list)
    sort: Sort = Sort.TENSOR  # a kernel body, or ANY for constants (tcp_rules.sorts)


@dataclass
class Snapshot:
    """E-classes by id, and the e-class of each program result."""

    classes: dict[int, EClass]
    roots: list[int]

    @property
    def enodes(self) -> int:
        return sum(len(c.nodes) for c in self.classes.values())


class _Reader:
    def __init__(self, eg: bindings.EGraph, tables: Tables):
        self.eg, self.tables = eg, tables
        self.ids: dict[Any, int] = {}
        self.memo: dict[tuple[AttrKind, Any], Any] = {}

    def cid(self, v: Any) -> int:
        return self.ids.setdefault(v, len(self.ids))

    def vec(self, v: Any) -> list[int]:
        return [self.eg.value_to_i64(x) for x in self.eg.value_to_vec(v)]

    def attr(self, kind: AttrKind, v: Any) -> Any:
        """An attribute's value, read once per e-graph value: the same shapes, permutations
        and dtypes recur across the e-graph (reading them took a third of a snapshot of a
        24-layer encoder)."""
        key = (kind, v)
        if key not in self.memo:
            self.memo[key] = self._read(kind, v)
        return self.memo[key]

    def _read(self, kind: AttrKind, v: Any) -> Any:
        match kind:
            case AttrKind.INT:
                return self.eg.value_to_i64(v)
            case AttrKind.INTS:
                return tuple(self.vec(v))
            case AttrKind.DIMS:
                return tuple(self.tables.dim_of(i) for i in self.vec(v))
            case AttrKind.DTYPE:
                return DType.parse(self.eg.value_to_string(v))
            case AttrKind.NAME:
                return self.eg.value_to_string(v)
            case AttrKind.SCALAR:
                # bits, decoded once the dtype is known
                return self.tables.scalar_read(self.eg.value_to_i64(v))
            case AttrKind.BOOL:
                return self.eg.value_to_bool(v)
            case AttrKind.DATA:
                return self.tables.dense[self.eg.value_to_i64(v)]
        raise AssertionError(kind)


def snapshot(eg: bindings.EGraph, tables: Tables, roots: list[str]) -> Snapshot:
    """Read every e-node, e-class type and the roots out of the e-graph."""
    frozen = eg.freeze()
    reader = _Reader(eg, tables)
    funcs = frozen.functions
    lists: dict[Any, list[Any]] = {}
    for row in funcs["TNil"].rows:
        lists[row.output] = []
    pending = list(funcs["TCons"].rows)
    while pending:  # cons cells, shortest tails first
        rest = []
        for row in pending:
            head, tail = row.inputs
            if tail in lists:
                lists[row.output] = [head, *lists[tail]]
            else:
                rest.append(row)
        if len(rest) == len(pending):
            break
        pending = rest
    # Class ids in order of first sight; the classes are made once all nodes are read (this
    # loop runs once per e-node: 100k times in a large e-graph).
    ids = reader.ids
    nodes: dict[int, list[ENode]] = {}
    for row in funcs["Param"].rows:
        out = ids.setdefault(row.output, len(ids))
        nodes.setdefault(out, []).append(
            ENode(None, (), (), eg.value_to_string(row.inputs[0])))
    for name, op in OP_OF_CONSTRUCTOR.items():
        n_operands = 1 if op.variadic else len(op.operands)
        for row in funcs[name].rows:
            if row.subsumed:
                continue
            inputs = row.inputs
            operands = inputs[:n_operands]
            if op.variadic:
                if operands[0] not in lists:
                    continue
                operands = lists[operands[0]]
            kids = tuple([ids.setdefault(o, len(ids)) for o in operands])
            attrs = tuple([(spec.name, reader.attr(spec.kind, v))
                           for spec, v in zip(op.attrs, inputs[n_operands:], strict=True)])
            out = ids.setdefault(row.output, len(ids))
            if out in nodes:
                nodes[out].append(ENode(op, kids, attrs))
            else:
                nodes[out] = [ENode(op, kids, attrs)]
    classes = {i: EClass(i, None, nodes.get(i, [])) for i in range(len(ids))}
    dims = {row.inputs[0]: row.output for row in funcs["dims"].rows}
    dts = {row.inputs[0]: row.output for row in funcs["dt"].rows}
    types: dict[tuple[Any, Any], TensorType] = {}  # one object per type: cheap to hash later
    for v, i in list(ids.items()):
        if v in dims and v in dts:
            key = (dts[v], dims[v])
            if key not in types:
                types[key] = TensorType(DType.parse(eg.value_to_string(dts[v])),
                                        tuple(tables.dim_of(x) for x in reader.vec(dims[v])))
            classes[i].type = types[key]
    tensors = {reader.cid(row.inputs[0]) for row in funcs["tensor"].rows}
    for row in funcs["body"].rows:
        c = classes.get(reader.cid(row.inputs[0]))
        if c is not None:
            c.sort = Sort.ANY if c.id in tensors else Sort.BODY
    root_ids = [reader.cid(funcs[r].rows[0].output) for r in roots]
    return Snapshot(classes, root_ids)


def scalar_value(bits: int | BigInt, dtype: DType) -> int | float | bool | None:
    """A scalar attribute's value for ``dtype`` (None for an absent clamp bound)."""
    return None if bits == NONE_BOUND else bits_scalar(bits, dtype)

