"""MLIR text as a generic tree: ops, their elements and regions, every node with its span.

The grammar (tcp_rules/grammar/mlir.lark) knows MLIR's lexical structure and nesting, not what
any dialect's custom assembly means; each dialect importer reads an op's ``body`` (the elements
after its name) itself, with the helpers here. Pretty and generic forms parse alike::

    %0 = tcp.add %a, %b : tensor<?xf32>, tensor<?xf32> -> tensor<?xf32>
    %0 = "tcp.add"(%a, %b) : (tensor<?xf32>, tensor<?xf32>) -> tensor<?xf32>

are both an :class:`Op` named ``tcp.add`` with results ``("0",)``; the first's body is
``Value(a) Punct(,) Value(b) Punct(:) Shaped ...``, the second's (with ``generic`` set)
``Group("(", ...) Punct(:) Group("(", ...) Punct(->) Shaped``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from lark import Token, Transformer, v_args
from lark.exceptions import UnexpectedInput

from tcp_rules.diagnostics import Source, Span, TcpError
from tcp_rules.grammar.parser import span_of


@dataclass(frozen=True)
class Node:
    """Every element of the tree has the span it was read from."""

    span: Span = field(compare=False, repr=False)


@dataclass(frozen=True)
class Value(Node):
    """An SSA value use, ``%arg0`` (``name`` is ``arg0``; ``%x#1`` keeps ``x#1``)."""

    name: str = ""


@dataclass(frozen=True)
class Symbol(Node):
    """A symbol reference, ``@relu`` (``name`` is ``relu``)."""

    name: str = ""


@dataclass(frozen=True)
class BlockRef(Node):
    """A block reference, ``^bb1``."""

    name: str = ""


@dataclass(frozen=True)
class Word(Node):
    """A bare identifier (``f32``, ``applies``, ``stablehlo.maximum``), a dialect type
    (``!torch.int``) or attribute (``#map``), or one with a ``<...>`` body: ``dense<1.0>``,
    ``affine_map<(d0) -> (d0)>`` (``args`` holds the body's elements)."""

    text: str = ""
    args: tuple[Elem, ...] | None = None


@dataclass(frozen=True)
class Number(Node):
    """An integer, float or hexadecimal literal; ``text`` as written (``0xFF800000``)."""

    value: int | float = 0
    text: str = ""

    @property
    def is_hex(self) -> bool:
        return self.text.lower().startswith("0x")


@dataclass(frozen=True)
class Str(Node):
    """A string literal, unescaped."""

    value: str = ""


@dataclass(frozen=True)
class Punct(Node):
    """Punctuation between elements: ``,`` ``:`` ``=`` ``->`` ``*`` ``+`` ``-`` ``?``."""

    text: str = ""


@dataclass(frozen=True)
class Group(Node):
    """A bracketed run of elements: ``(...)`` or ``[...]`` (``open`` says which; a ``<...>``
    body belongs to the :class:`Word` before it)."""

    open: str = "("
    items: tuple[Elem, ...] = ()


@dataclass(frozen=True)
class Entry(Node):
    """One entry of an attribute dictionary: ``name = value elements`` (no value: a unit)."""

    name: str = ""
    value: tuple[Elem, ...] = ()


@dataclass(frozen=True)
class Dict(Node):
    """An attribute dictionary, ``{dim = 0 : index, jax.result_info = "r"}``, or a generic-form
    op's properties, ``<{slice_sizes = array<i64: 1, 4>}>``."""

    entries: tuple[Entry, ...] = ()
    props: bool = False  # a generic-form op's properties, <{...}>

    def get(self, name: str) -> Entry | None:
        return next((e for e in self.entries if e.name == name), None)


@dataclass(frozen=True)
class Shaped(Node):
    """A shaped type: ``tensor<4x?xf32>`` has kind ``tensor``, dims ``(4, None)`` and element
    ``Word(f32)``; ``tensor<*xf32>`` (unranked) has dims ``None``; ``extra`` holds what follows
    the element type (an encoding)."""

    kind: str = "tensor"
    dims: tuple[int | None, ...] | None = ()
    elem: Elem | None = None
    extra: tuple[Elem, ...] = ()


@dataclass(frozen=True)
class Block(Node):
    """A block: its label (None for an entry block written without one), its arguments as
    written (``(%a: tensor<f32>, ...)``) and its ops."""

    label: str | None = None
    args: Group | None = None
    ops: tuple[Op, ...] = ()


@dataclass(frozen=True)
class Region(Node):
    """A region: one or more blocks."""

    blocks: tuple[Block, ...] = ()


@dataclass(frozen=True)
class Op(Node):
    """An operation: results, name, and its elements as written after the name.

    ``generic`` is set for the quoted-name form ``"tcp.add"(...) : (...) -> ...``;
    ``name_span`` points at the name, for errors about the op itself.
    """

    results: tuple[str, ...] = ()
    name: str = ""
    body: tuple[Elem, ...] = ()
    name_span: Span | None = field(default=None, compare=False, repr=False)
    generic: bool = False

    def regions(self) -> list[Region]:
        """The regions among the op's elements (top level, or inside its parentheses)."""
        out: list[Region] = []
        for e in self.body:
            if isinstance(e, Region):
                out.append(e)
            elif isinstance(e, Group) and e.open == "(":
                out.extend(x for x in e.items if isinstance(x, Region))
        return out


@dataclass(frozen=True)
class Alias(Node):
    """An attribute or type alias definition, ``#map = affine_map<...>``."""

    name: str = ""
    value: tuple[Elem, ...] = ()


@dataclass(frozen=True)
class MlirFile:
    """A parsed file: its top-level ops and its aliases (``#map`` -> definition)."""

    source: Source
    ops: tuple[Op, ...]
    aliases: dict[str, Alias]


Elem = Value | Symbol | BlockRef | Word | Number | Str | Punct | Group | Dict | Shaped | Region


def _stmt_token(source: Source, tok: Token) -> tuple[str, Span]:
    """A STMT_* token's text without the line break and blanks it starts with, and its span."""
    text = str(tok)
    stripped = text.lstrip()
    skipped = text[: len(text) - len(stripped)]
    line = (tok.line or 1) + skipped.count("\n")
    col = (len(skipped) - skipped.rfind("\n") if "\n" in skipped
           else (tok.column or 1) + len(skipped))
    return stripped, Span(source, line, col, line, col + len(stripped))


def _unquote(text: str) -> str:
    body = text[1:-1]
    if "\\" not in body:
        return body
    out, i = [], 0
    while i < len(body):
        c = body[i]
        if c == "\\" and i + 1 < len(body):
            nxt = body[i + 1]
            simple = {"n": "\n", "t": "\t", '"': '"', "\\": "\\"}
            if nxt in simple:
                out.append(simple[nxt])
                i += 2
                continue
            hexpair = body[i + 1:i + 3]
            if len(hexpair) == 2 and all(h in "0123456789abcdefABCDEF" for h in hexpair):
                out.append(chr(int(hexpair, 16)))
                i += 3
                continue
        out.append(c)
        i += 1
    return "".join(out)


def _dim(tok: Token) -> int | None:
    text = str(tok)[:-1]
    return None if text == "?" else int(text)


@v_args(meta=True)
class _Builder(Transformer[Token, Any]):
    """Lark tree -> nodes."""

    def __init__(self, source: Source):
        super().__init__()
        self.source = source

    def sp(self, meta: Any) -> Span:
        return span_of(self.source, meta)

    def __default_token__(self, tok: Token) -> Any:
        sp = span_of(self.source, tok)
        match tok.type:
            case "VALUE_ID":
                return Value(sp, str(tok)[1:])
            case "SYMBOL_ID":
                text = str(tok)[1:]
                return Symbol(sp, _unquote(text) if text.startswith('"') else text)
            case "CARET_ID":
                return BlockRef(sp, str(tok)[1:])
            case "INT":
                return Number(sp, int(tok), str(tok))
            case "HEX":
                return Number(sp, int(str(tok), 16), str(tok))
            case "FLOAT":
                return Number(sp, float(tok), str(tok))
            case "QSTRING":
                return Str(sp, _unquote(str(tok)))
            case "COMMA" | "COLON" | "EQ" | "ARROW" | "STAR" | "PLUS" | "MINUS" | "QMARK":
                return Punct(sp, str(tok))
        return tok

    def word(self, meta: Any, children: list[Any]) -> Word:
        args = children[1] if len(children) > 1 else None
        return Word(self.sp(meta), str(children[0]), args)

    def angle(self, meta: Any, children: list[Any]) -> tuple[Any, ...]:
        return tuple(children)

    def paren(self, meta: Any, children: list[Any]) -> Group:
        return Group(self.sp(meta), "(", tuple(children))

    def bracket(self, meta: Any, children: list[Any]) -> Group:
        return Group(self.sp(meta), "[", tuple(children))

    def entry(self, meta: Any, children: list[Any]) -> Entry:
        key = children[0]
        name = key.value if isinstance(key, Str) else str(key)
        return Entry(self.sp(meta), name, tuple(children[2:]))

    def dict(self, meta: Any, children: list[Any]) -> Dict:
        return Dict(self.sp(meta), tuple(c for c in children if isinstance(c, Entry)))

    def props(self, meta: Any, children: list[Any]) -> Dict:
        return Dict(self.sp(meta), tuple(c for c in children if isinstance(c, Entry)), True)

    def type_elem(self, meta: Any, children: list[Any]) -> Elem:
        if isinstance(children[0], Shaped):
            return children[0]
        args = children[1] if len(children) > 1 else None
        return Word(self.sp(meta), str(children[0]), args)

    def shaped_type(self, meta: Any, children: list[Any]) -> Shaped:
        kind = str(children[0])
        dim_toks = [c for c in children[1:] if isinstance(c, Token) and c.type == "DIM_X"]
        rest = children[1 + len(dim_toks):]
        elem, extra = rest[0], tuple(rest[2:])  # rest[1] is the comma before an encoding
        dims = None if any(str(t) == "*x" for t in dim_toks) else tuple(map(_dim, dim_toks))
        return Shaped(self.sp(meta), kind, dims, elem, extra)

    def _op(self, meta: Any, results: tuple[str, ...], head: Token, body: list[Any]) -> Op:
        if head.type in ("STMT_NAME", "STMT_STRING"):
            text, name_span = _stmt_token(self.source, head)
        else:
            text, name_span = str(head), span_of(self.source, head)
        generic = text.startswith('"')
        name = _unquote(text) if generic else text
        span = Span(self.source, name_span.line, name_span.col, meta.end_line, meta.end_column)
        return Op(span, results, name, tuple(body), name_span, generic)

    def first_op(self, meta: Any, children: list[Any]) -> Op:
        if isinstance(children[0], Str):  # the quoted op name was made a Str already
            s = children[0]
            head = Token("QSTRING", f'"{s.value}"', line=s.span.line, column=s.span.col,
                         end_line=s.span.end_line, end_column=s.span.end_col)
            return self._op(meta, (), head, children[1:])
        return self._op(meta, (), children[0], children[1:])

    def op_plain(self, meta: Any, children: list[Any]) -> Op:
        return self._op(meta, (), children[0], children[1:])

    def op_results(self, meta: Any, children: list[Any]) -> Op:
        text = str(children[0]).rstrip("=").strip()
        results = _result_names(text)
        head = children[1]
        if isinstance(head, Str):
            head = Token("QSTRING", f'"{head.value}"', line=head.span.line,
                         column=head.span.col, end_line=head.span.end_line,
                         end_column=head.span.end_col)
        op = self._op(meta, results, head, children[2:])
        start = span_of(self.source, children[0])
        return Op(Span(self.source, start.line, start.col, op.span.end_line, op.span.end_col),
                  op.results, op.name, op.body, op.name_span, op.generic)

    def label(self, meta: Any, children: list[Any]) -> Block:
        text, span = _stmt_token(self.source, children[0])
        args = next((c for c in children[1:] if isinstance(c, Group)), None)
        return Block(span, text[1:], args, ())

    def alias(self, meta: Any, children: list[Any]) -> Alias:
        name = str(children[0]).rstrip("=").strip()
        return Alias(self.sp(meta), name, tuple(children[1:]))

    def region(self, meta: Any, children: list[Any]) -> Region:
        return Region(self.sp(meta), _blocks(self.source, children, self.sp(meta)))

    def start(self, meta: Any, children: list[Any]) -> list[Any]:
        return children


def _result_names(text: str) -> tuple[str, ...]:
    """``%0`` -> ("0",); ``%x:2`` -> ("x#0", "x#1"), the names its uses are written with."""
    name = text[1:]
    if ":" in name:
        base, count = name.split(":", 1)
        return tuple(f"{base}#{i}" for i in range(int(count)))
    return (name,)


def _blocks(source: Source, items: Sequence[Any], span: Span) -> tuple[Block, ...]:
    blocks: list[Block] = []
    current: Block | None = None
    ops: list[Op] = []
    for item in items:
        if isinstance(item, Block):
            if current is not None or ops:
                blocks.append(_with_ops(current, ops, span))
            current, ops = item, []
        elif isinstance(item, Op):
            ops.append(item)
    blocks.append(_with_ops(current, ops, span))
    return tuple(blocks)


def _with_ops(label: Block | None, ops: list[Op], span: Span) -> Block:
    if label is None:
        return Block(span, None, None, tuple(ops))
    return Block(label.span, label.label, label.args, tuple(ops))


def _hint(e: UnexpectedInput, source: Source) -> str | None:
    tok = getattr(e, "token", None)
    if tok is not None and tok.type == "$END":
        return "a region or bracket is not closed"
    return None


def parse_mlir(source: Source) -> MlirFile:
    """Parse MLIR text into the generic tree; a syntax error is a positioned TcpError."""
    from tcp_rules.grammar.parser import grammar, syntax_error

    parser = grammar("mlir", "start")
    try:
        tree = parser.parse(source.text)
    except UnexpectedInput as e:
        raise syntax_error(e, source, parser, _hint) from None
    try:
        items = _Builder(source).transform(tree)
    except RecursionError:
        raise TcpError.at("MLIR is nested too deeply to read", Span.point(source, 1, 1),
                          stage="parse") from None
    ops = tuple(i for i in items if isinstance(i, Op))
    aliases = {a.name: a for a in items if isinstance(a, Alias)}
    return MlirFile(source, ops, aliases)
