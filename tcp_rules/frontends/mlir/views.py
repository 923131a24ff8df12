"""Reading the generic MLIR tree: elements split at punctuation, ``name = value`` pairs, an op's
operands, attributes and types in either form (:func:`view`), and ``func.func`` signatures
(:func:`functions`). Dialect importers build on these; none of this knows any dialect's ops.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from tcp_rules.diagnostics import Span, TcpError
from tcp_rules.frontends.mlir.syntax import (
    BlockRef,
    Dict,
    Elem,
    Entry,
    Group,
    MlirFile,
    Node,
    Number,
    Op,
    Punct,
    Region,
    Shaped,
    Str,
    Symbol,
    Value,
    Word,
)


def split(items: Sequence[Elem], sep: str = ",") -> list[list[Elem]]:
    """Elements split at top-level punctuation ``sep`` (an empty run gives no part)."""
    parts: list[list[Elem]] = [[]]
    for e in items:
        if isinstance(e, Punct) and e.text == sep:
            parts.append([])
        else:
            parts[-1].append(e)
    return [p for p in parts if p] if any(parts) else []


def before(items: Sequence[Elem], sep: str) -> tuple[list[Elem], list[Elem] | None]:
    """The elements before the first top-level ``sep`` and those after it (None: no ``sep``)."""
    for i, e in enumerate(items):
        if isinstance(e, Punct) and e.text == sep:
            return list(items[:i]), list(items[i + 1:])
    return list(items), None


def named(items: Sequence[Elem]) -> dict[str, tuple[Word, list[Elem]]]:
    """The ``name = value`` pairs among the elements (``dims = [0]``), by name; each value runs
    to the next top-level comma or colon, or the next ``name =``."""
    out: dict[str, tuple[Word, list[Elem]]] = {}
    i = 0
    while i < len(items):
        e = items[i]
        if isinstance(e, Word) and _is_pair(items, i):
            j = i + 2
            while j < len(items) and not _is_punct(items[j], ",", ":") \
                    and not _is_pair(items, j):
                j += 1
            out[e.text] = (e, list(items[i + 2:j]))
            i = j
        else:
            i += 1
    return out


def _is_punct(e: Elem, *texts: str) -> bool:
    return isinstance(e, Punct) and e.text in texts


def _is_pair(items: Sequence[Elem], i: int) -> bool:
    """Is ``items[i]`` the name of a ``name = value`` pair?"""
    e = items[i]
    return (isinstance(e, Word) and e.args is None and i + 1 < len(items)
            and _is_punct(items[i + 1], "="))


def span_of_elems(items: Sequence[Node], default: Span) -> Span:
    """The span from the first element to the last (``default`` when there are none)."""
    if not items:
        return default
    a, b = items[0].span, items[-1].span
    return Span(a.source, a.line, a.col, b.end_line, b.end_col)


def walk(ops: Sequence[Op]) -> Iterator[Op]:
    """Every op, and the ops nested in their regions, in order."""
    for op in ops:
        yield op
        for region in op.regions():
            for block in region.blocks:
                yield from walk(block.ops)


@dataclass(frozen=True)
class Arg:
    """A function argument: ``%arg0: tensor<4xf32> {attrs}``."""

    name: str
    type: Elem
    attrs: Dict | None
    span: Span


@dataclass(frozen=True)
class FuncOp:
    """A ``func.func`` read from its op: name, arguments, result types, body."""

    op: Op
    name: str
    visibility: str
    args: tuple[Arg, ...]
    results: tuple[Elem, ...]
    body: Region | None


def read_func(op: Op) -> FuncOp:
    """Read ``func.func [visibility] @name(args) -> results [attributes {...}] {body}``."""
    items = list(op.body)
    visibility = "public"
    first = items[0] if items else None
    if isinstance(first, Word) and first.text in ("public", "private", "nested"):
        visibility = first.text
        items.pop(0)
    sym = items.pop(0) if items else None
    if not isinstance(sym, Symbol):
        raise TcpError.at(f"{op.name}: expected the function's name (@name)", op.name_span)
    name = sym.name
    if not items or not isinstance(items[0], Group) or items[0].open != "(":
        raise TcpError.at(f"{op.name} @{name}: expected its argument list", op.name_span)
    params = items.pop(0)
    assert isinstance(params, Group)
    args: list[Arg] = []
    for part in split(params.items):
        if not (len(part) >= 3 and isinstance(part[0], Value) and isinstance(part[1], Punct)
                and part[1].text == ":"):
            raise TcpError.at(f"func @{name}: expected an argument '%name: type'",
                              span_of_elems(part, params.span))
        attrs = part[3] if len(part) > 3 and isinstance(part[3], Dict) else None
        args.append(Arg(part[0].name, part[2], attrs, span_of_elems(part, params.span)))
    results: list[Elem] = []
    if items and isinstance(items[0], Punct) and items[0].text == "->":
        items.pop(0)
        first = items.pop(0) if items else None
        if isinstance(first, Group) and first.open == "(":
            results = [p[0] for p in split(first.items)]
        elif first is not None:
            results = [first]
    if items and isinstance(items[0], Word) and items[0].text == "attributes":
        items = items[2:]
    body = next((e for e in items if isinstance(e, Region)), None)
    return FuncOp(op, name, visibility, tuple(args), tuple(results), body)


def functions(file: MlirFile) -> list[FuncOp]:
    """Every ``func.func`` of the file, at top level or inside ``module`` ops."""
    return [read_func(op) for op in walk(file.ops) if op.name in ("func.func", "func")]


@dataclass(frozen=True)
class OpView:
    """An op's parts in the layout most dialects' assembly formats share, for either form.

    Pretty form ``tcp.broadcast %x, %n {axes = [0]} : tensor<1x?xf32>, index -> tensor<?x?xf32>``:
    ``operands`` are the top-level values before the ``:``, ``attrs`` the dictionary there
    (also after the ``attributes`` keyword), ``groups`` the keyword groups (``starts(...)``),
    ``words`` the other bare words; after the ``:``, the types before ``->`` are
    ``operand_types`` and those after are ``result_types`` (a pretty form with one type list
    and no ``->``, ``stablehlo.add %a, %b : tensor<4xf32>``, gives only ``operand_types``).
    Generic form ``"tcp.add"(%a, %b) <{props}> {attrs} : (t, t) -> t``: the values in the
    first parentheses, the properties and attributes (as one dictionary), the functional
    type. ``regions`` are the op's regions.
    """

    op: Op
    operands: tuple[Value, ...]
    attrs: Dict | None
    groups: dict[str, Group]
    words: tuple[Word, ...]
    operand_types: tuple[Elem, ...]
    result_types: tuple[Elem, ...]
    regions: tuple[Region, ...]

    def attr(self, name: str) -> Entry | None:
        return self.attrs.get(name) if self.attrs is not None else None


def view(op: Op) -> OpView:
    """The op's operands, attributes, types and regions (see :class:`OpView`)."""
    head, types = before(op.body, ":")
    operands: list[Value] = []
    attrs: Dict | None = None
    groups: dict[str, Group] = {}
    words: list[Word] = []
    for i, e in enumerate(head):
        prev = head[i - 1] if i else None
        if isinstance(e, Value):
            operands.append(e)
        elif isinstance(e, Dict):  # properties and attributes read as one dictionary
            attrs = e if attrs is None else Dict(e.span, attrs.entries + e.entries)
        elif isinstance(e, Group) and e.open == "(":
            if op.generic and i == 0:
                operands.extend(x for x in e.items if isinstance(x, Value))
            elif isinstance(prev, Word) and prev.args is None:
                groups[prev.text] = e
        elif isinstance(e, Word):
            nxt = head[i + 1] if i + 1 < len(head) else None
            if not (isinstance(nxt, Group) and nxt.open == "(") and e.text != "attributes":
                words.append(e)
    regions = tuple(op.regions())
    operand_types: tuple[Elem, ...] = ()
    result_types: tuple[Elem, ...] = ()
    if types is not None:
        ins, outs = before(types, "->")
        if outs is not None and len(ins) == 1 and isinstance(ins[0], Group) and ins[0].open == "(":
            operand_types = tuple(p[0] for p in split(ins[0].items))
        else:
            operand_types = tuple(p[0] for p in split(ins))
        if outs is not None:
            if len(outs) == 1 and isinstance(outs[0], Group) and outs[0].open == "(":
                result_types = tuple(p[0] for p in split(outs[0].items))
            else:
                result_types = tuple(p[0] for p in split(outs))
    return OpView(op, tuple(operands), attrs, groups, tuple(words), operand_types,
                  result_types, regions)


def render(e: Elem | Sequence[Elem]) -> str:
    """Elements as MLIR text (for messages): ``tensor<4x?xf32>``, ``[1, 2]``."""
    if not isinstance(e, Node):
        return " ".join(render(x) for x in e).replace(" ,", ",")
    match e:
        case Value(name=n):
            return f"%{n}"
        case Symbol(name=n):
            return f"@{n}"
        case BlockRef(name=n):
            return f"^{n}"
        case Word(text=t, args=None):
            return t
        case Word(text=t, args=a):
            return f"{t}<{render(a or ())}>"
        case Number(text=t) | Punct(text=t):
            return t
        case Str(value=v):
            return f'"{v}"'
        case Group(open=o, items=items):
            close = {"(": ")", "[": "]", "<": ">"}[o]
            return f"{o}{render(items)}{close}"
        case Dict(entries=entries):
            return "{" + ", ".join(f"{x.name} = {render(x.value)}" if x.value else x.name
                                   for x in entries) + "}"
        case Shaped(kind=k, dims=dims, elem=el):
            shape = "*x" if dims is None else "".join(
                ("?" if d is None else str(d)) + "x" for d in dims)
            return f"{k}<{shape}{render(el) if el is not None else ''}>"
        case Region():
            return "{...}"
    return "?"


def format_tree(file: MlirFile) -> str:
    """The tree as an indented listing, each element tagged with its kind (for tests, and
    for a reader checking what an importer sees)."""
    lines: list[str] = []
    for name, alias in file.aliases.items():
        lines.append(f"{alias.span.line}:{alias.span.col} alias {name} = {_tagged(alias.value)}")
    _format_ops(file.ops, 0, lines)
    return "\n".join(lines) + "\n"


def _format_ops(ops: Sequence[Op], depth: int, lines: list[str]) -> None:
    pad = "  " * depth
    for op in ops:
        res = ", ".join(f"%{r}" for r in op.results)
        head = f"{res} = " if res else ""
        form = " (generic)" if op.generic else ""
        lines.append(f"{pad}{op.span.line}:{op.span.col} {head}{op.name}{form}: "
                     f"{_tagged(op.body)}")
        for region in op.regions():
            for block in region.blocks:
                label = f"^{block.label}" if block.label is not None else "^entry"
                args = f" {_tagged([block.args])}" if block.args else ""
                lines.append(f"{pad}  {label}{args}")
                _format_ops(block.ops, depth + 2, lines)


def _tagged(items: Sequence[Elem]) -> str:
    out: list[str] = []
    for e in items:
        match e:
            case Group(open=o, items=inner):
                close = {"(": ")", "[": "]", "<": ">"}[o]
                out.append(f"{o}{_tagged(inner)}{close}")
            case Dict(entries=entries):
                out.append("Dict{" + "; ".join(
                    f"{x.name}={_tagged(x.value)}" if x.value else x.name for x in entries) + "}")
            case Word(text=t, args=a) if a is not None:
                out.append(f"Word({t}<{_tagged(a)}>)")
            case Region():
                out.append("Region")
            case Punct(text=t):
                out.append(t)
            case _:
                out.append(f"{type(e).__name__}({render(e)})")
    return " ".join(out)

