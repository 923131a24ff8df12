"""Parsers for .tcp programs and .tcpr rule files: lark LALR in strict mode, ASTs with spans,
and syntax errors turned into positioned diagnostics with hints."""

from __future__ import annotations

import functools
import hashlib
import os
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

from lark import Lark, Token, Transformer, v_args
from lark import __version__ as lark_version
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken

from tcp_rules.diagnostics import Source, Span, TcpError
from tcp_rules.grammar import ast

GRAMMAR_DIR = Path(__file__).parent
MAX_SOURCE_BYTES = 8 * 1024 * 1024


@functools.cache
def grammar(name: str, start: str) -> Lark:
    """The LALR parser for ``name``.lark (built once per process, its tables kept on disk).

    Building the tables costs ~0.4 s (strict mode checks every pair of terminals for
    collisions), so lark's own cache keeps them under the cache root: lark checks that the
    grammar, its imports, the options and lark's version are the ones the file was made from,
    and rebuilds it otherwise, or when it cannot be read.
    """
    return Lark.open(str(GRAMMAR_DIR / f"{name}.lark"), start=start, parser="lalr",
                     propagate_positions=True, maybe_placeholders=False, strict=True,
                     cache=_grammar_cache(name, start))


def _grammar_cache(name: str, start: str) -> str | bool:
    """The file lark keeps ``name``'s parser in; False when the cache cannot be written."""
    from tcp_rules.diskcache import cache_dir

    # the grammars' text in the name: two versions of tcp-rules sharing a cache each keep
    # their own file, instead of rebuilding the other's in turn
    h = hashlib.sha256(lark_version.encode())
    for f in sorted(GRAMMAR_DIR.glob("*.lark")):
        h.update(f.read_bytes())
    folder = cache_dir() / "grammar"
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError:
        return False
    return str(folder / f"{name}-{start}-{h.hexdigest()[:16]}.lark")


def span_of(source: Source, item: Any) -> Span:
    """The span of a lark token or tree meta."""
    return Span(source, item.line, item.column, item.end_line, item.end_column)


@v_args(meta=True)
class TermBuilder(Transformer[Token, Any]):
    """Builds AST terms; subclasses add the top-level forms of each language."""

    def __init__(self, source: Source):
        super().__init__()
        self.source = source

    def sp(self, meta: Any) -> Span:
        return span_of(self.source, meta)

    # terms
    def call(self, meta: Any, children: list[Any]) -> ast.Call:
        name, rest = children[0], children[1:]
        args = tuple(c for c in rest if not isinstance(c, ast.Kwarg))
        kwargs = tuple(c for c in rest if isinstance(c, ast.Kwarg))
        first_kw = next((i for i, c in enumerate(rest) if isinstance(c, ast.Kwarg)), len(rest))
        late = next((c for c in rest[first_kw:] if not isinstance(c, ast.Kwarg)), None)
        if late is not None:
            raise TcpError.at("operand after a keyword attribute", late.span,
                              hint="write tensor operands first, then name=value attributes")
        return ast.Call(str(name), args, kwargs, self.sp(meta), span_of(self.source, name))

    def kwarg(self, meta: Any, children: list[Any]) -> ast.Kwarg:
        return ast.Kwarg(str(children[0]), children[1], self.sp(meta))

    def var(self, meta: Any, children: list[Any]) -> ast.Var:
        return ast.Var(str(children[0]), self.sp(meta))

    def literal(self, meta: Any, children: list[Any]) -> ast.Lit:
        return ast.Lit(_scalar(children[0]), self.sp(meta))

    def neg_number(self, meta: Any, children: list[Any]) -> Any:
        return -_scalar(children[0])

    # attribute expressions
    def anum(self, meta: Any, children: list[Any]) -> ast.ANum:
        return ast.ANum(_scalar(children[0]), self.sp(meta))

    def aname(self, meta: Any, children: list[Any]) -> ast.AName:
        return ast.AName(str(children[0]), self.sp(meta))

    def acall(self, meta: Any, children: list[Any]) -> ast.ACall:
        return ast.ACall(str(children[0]), tuple(children[1:]), self.sp(meta))

    def alist(self, meta: Any, children: list[Any]) -> ast.AList:
        return ast.AList(tuple(children), self.sp(meta))

    def abin_add(self, meta: Any, children: list[Any]) -> ast.ABin:
        return ast.ABin(str(children[1]), children[0], children[2], self.sp(meta))

    abin_mul = abin_add

    def aneg(self, meta: Any, children: list[Any]) -> ast.ANeg:
        return ast.ANeg(children[1], self.sp(meta))

    def tensor_type(self, meta: Any, children: list[Any]) -> ast.TypeExpr:
        return ast.TypeExpr(str(children[0]), tuple(children[1:]), self.sp(meta))


class BadToken(Exception):
    """A token that lexes but cannot be a value (an integer literal of a thousand digits)."""

    def __init__(self, token: Token, message: str):
        super().__init__(message)
        self.token, self.message = token, message


MAX_INT_DIGITS = 40


def _scalar(value: Any) -> int | float | bool:
    if not isinstance(value, Token):
        return value
    match value.type:
        case "INT":
            if len(value) > MAX_INT_DIGITS:
                raise BadToken(value, f"integer literal has more than {MAX_INT_DIGITS} digits")
            return int(value)
        case "FLOAT":
            return float(value)
        case "INF":
            return float("inf")
        case "NAN":
            return float("nan")
        case "TRUE":
            return True
        case "FALSE":
            return False
    raise AssertionError(f"not a scalar token: {value!r}")


@v_args(meta=True)
class ProgramBuilder(TermBuilder):
    """Builds a ModuleDecl from a .tcp parse tree."""

    def module(self, meta: Any, children: list[Any]) -> ast.ModuleDecl:
        return ast.ModuleDecl(tuple(children), self.source)

    def func(self, meta: Any, children: list[Any]) -> ast.FuncDecl:
        name = children[0]
        params = tuple(c for c in children if isinstance(c, ast.ParamDecl))
        results = next(c for c in children if isinstance(c, tuple))
        body = tuple(c for c in children if isinstance(c, ast.Let))
        ret_span, returns = children[-1]
        return ast.FuncDecl(str(name), params, results, body, returns, self.sp(meta),
                            span_of(self.source, name), ret_span)

    def param(self, meta: Any, children: list[Any]) -> ast.ParamDecl:
        return ast.ParamDecl(str(children[0]), children[1], self.sp(meta))

    def results(self, meta: Any, children: list[Any]) -> tuple[ast.TypeExpr, ...]:
        return tuple(children)

    def stmt(self, meta: Any, children: list[Any]) -> ast.Let:
        return ast.Let(str(children[0]), children[1], self.sp(meta))

    def ret(self, meta: Any, children: list[Any]) -> tuple[Span, tuple[ast.Term, ...]]:
        return self.sp(meta), tuple(children)


def read_source(path: str | Path) -> Source:
    """Read a source file, refusing what cannot be program or rule text."""
    return source_from_bytes(str(path), read_file_bytes(path, MAX_SOURCE_BYTES))


def read_file_bytes(path: str | Path, limit: int) -> bytes:
    """The bytes of a regular file of at most ``limit`` bytes; TcpError otherwise.

    The size is checked before anything is read, and only regular files are read: a device
    (``/dev/zero``), a FIFO or a directory would otherwise be read without bound, or block.
    """
    p = Path(path)
    try:
        # opened once, so that the checks and the read see the same file; without blocking,
        # which opening a FIFO would do until a writer comes
        fd = os.open(p, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        with open(fd, "rb", buffering=0) as f:
            st = os.fstat(f.fileno())
            if not stat.S_ISREG(st.st_mode):
                raise TcpError.at(f"cannot read {p}: not a regular file ({_kind(st.st_mode)})")
            if st.st_size > limit:
                raise TcpError.at(f"{p}: file is larger than {limit} bytes "
                                  f"({st.st_size} bytes)")
            # a file growing while read stays bounded: read what fstat saw, and one byte more
            data = f.read(st.st_size + 1)
            if len(data) > limit:
                raise TcpError.at(f"{p}: file is larger than {limit} bytes")
            return data
    except OSError as e:
        raise TcpError.at(f"cannot read {p}: {e.strerror or e}") from None


def _kind(mode: int) -> str:
    kinds = ((stat.S_ISDIR, "a directory"), (stat.S_ISCHR, "a character device"),
             (stat.S_ISBLK, "a block device"), (stat.S_ISFIFO, "a FIFO"),
             (stat.S_ISSOCK, "a socket"))
    return next((name for test, name in kinds if test(mode)), "not a plain file")


def source_from_bytes(name: str, data: bytes) -> Source:
    """Decode source text; binary or oversized input gets a diagnostic, not a crash."""
    if len(data) > MAX_SOURCE_BYTES:
        raise TcpError.at(f"{name}: file is larger than {MAX_SOURCE_BYTES} bytes")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data[:e.start].count(b"\n") + 1
        col = e.start - (data.rfind(b"\n", 0, e.start) + 1) + 1
        src = Source(name, data.decode("utf-8", errors="replace"))
        raise TcpError.at("file is not UTF-8 text (binary data?)",
                          Span.point(src, line, col)) from None
    if "\x00" in text:
        src = Source(name, text)
        pos = text.index("\x00")
        line = text.count("\n", 0, pos) + 1
        col = pos - (text.rfind("\n", 0, pos) + 1) + 1
        raise TcpError.at("file contains a NUL byte (binary data?)", Span.point(src, line, col))
    return Source(name, text)


def run_parser(source: Source, grammar_name: str, start: str,
               builder: Callable[[Source], Transformer[Token, Any]],
               hints: Callable[[UnexpectedInput, Source], str | None]) -> Any:
    """Parse ``source`` and build its AST; every failure becomes a TcpError."""
    try:
        tree = grammar(grammar_name, start).parse(source.text)
    except UnexpectedInput as e:
        raise syntax_error(e, source, grammar(grammar_name, start), hints) from None
    try:
        return builder(source).transform(tree)
    except RecursionError:
        raise TcpError.at("expression is nested too deeply to process",
                          Span.point(source, 1, 1)) from None
    except Exception as e:  # lark wraps errors raised in callbacks
        inner = getattr(e, "orig_exc", None)
        if isinstance(inner, TcpError):
            raise inner from None
        if isinstance(inner, BadToken):
            raise TcpError.at(inner.message, span_of(source, inner.token)) from None
        if isinstance(inner, RecursionError):
            raise TcpError.at("expression is nested too deeply to process",
                              Span.point(source, 1, 1)) from None
        raise


_FRIENDLY = {"NAME": "a name", "INT": "an integer", "FLOAT": "a number", "RULE_NAME": "a rule name",
             "STRING": "a quoted file name", "$END": "end of file", "INF": "'inf'",
             "NAN": "'nan'", "TRUE": "'true'", "FALSE": "'false'",
             # MLIR (mlir.lark): the ways a statement starts
             "RESULT_DEF": "an op ('%x = ...')", "STMT_NAME": "an op", "STMT_STRING": "an op",
             "STMT_LABEL": "a block label", "ALIAS_DEF": "an alias ('#x = ...')",
             "VALUE_ID": "a value ('%x')", "QSTRING": "a string", "BARE_ID": "a name",
             "DIM_X": "a dim ('4x')"}


def describe_terminal(parser: Lark, name: str) -> str:
    """A terminal as a user would write it: ')' rather than RPAR."""
    if name in _FRIENDLY:
        return _FRIENDLY[name]
    try:
        term = parser.get_terminal(name)
    except KeyError:
        return name.lower()
    if term.pattern.type == "str":
        return f"'{term.pattern.value}'"
    return name.lower()


def syntax_error(e: UnexpectedInput, source: Source, parser: Lark,
                 hints: Callable[[UnexpectedInput, Source], str | None]) -> TcpError:
    """A lark parse failure as a diagnostic: what was found, what was expected, and a hint."""
    line, col = max(e.line, 1), max(e.column, 1)
    if isinstance(e, UnexpectedCharacters):
        found = f"character {source.text[e.pos_in_stream or 0]!r}"
        expected: set[str] = set(e.allowed or ())
    elif isinstance(e, UnexpectedToken):
        tok = e.token
        found = "end of file" if tok.type == "$END" else f"'{tok}'"
        expected = set(e.expected)
        if tok.type == "$END":
            line, col = _end_position(source)
    elif isinstance(e, UnexpectedEOF):
        found = "end of file"
        expected = set(e.expected)
        line, col = _end_position(source)
    else:
        found, expected = "input", set()
    wanted = sorted({describe_terminal(parser, t) for t in expected})
    message = f"syntax error: unexpected {found}"
    if wanted and len(wanted) <= 8:
        message += f"; expected {_one_of(wanted)}"
    width = len(str(e.token)) if isinstance(e, UnexpectedToken) and e.token.type != "$END" else 1
    return TcpError.at(message, Span.point(source, line, col, max(width, 1)), hint=hints(e, source),
                       stage="parse")


def _one_of(items: list[str]) -> str:
    return items[0] if len(items) == 1 else "one of " + ", ".join(items)


def _end_position(source: Source) -> tuple[int, int]:
    lines = source.text.splitlines() or [""]
    return len(lines), len(lines[-1]) + 1


def expected_set(e: UnexpectedInput) -> set[str]:
    return set(getattr(e, "expected", None) or getattr(e, "allowed", None) or ())


def common_hint(e: UnexpectedInput, source: Source) -> str | None:
    """Hints for mistakes both languages share."""
    expected = expected_set(e)
    tok = getattr(e, "token", None)
    if isinstance(e, UnexpectedCharacters):
        ch = source.text[e.pos_in_stream or 0]
        if ch in "\"'":
            return "strings are not part of terms; names and numbers are written bare"
        if ch == ";":
            return "statements end at the line break; no ';' needed"
    if "RPAR" in expected and tok is not None and tok.type == "EQUAL":
        return "attributes are written name=value after the operands"
    return None


def program_hint(e: UnexpectedInput, source: Source) -> str | None:
    """Hints for common mistakes in .tcp programs."""
    expected = expected_set(e)
    tok = getattr(e, "token", None)
    at_end = isinstance(e, UnexpectedEOF) or (tok is not None and tok.type == "$END")
    if at_end and ("RBRACE" in expected or "RETURN" in expected or "NAME" in expected):
        return "a func is not closed: its body ends with 'return VALUE' and '}'"
    if tok is not None and tok.type == "RBRACE" and "RETURN" in expected:
        return "every func body ends with 'return VALUE'"
    if "LSQB" in expected and tok is not None and tok.type in ("COMMA", "RPAR", "LBRACE"):
        return "tensor types are written dtype[dims], e.g. f32[N, 128] or f32[] for a scalar"
    return common_hint(e, source)


def doc_comment(source: Source, line: int) -> str:
    """The comment lines directly above ``line`` (no blank line between), without '#'."""
    lines = source.text.splitlines()
    doc: list[str] = []
    i = line - 2
    while i >= 0 and lines[i].lstrip().startswith("#"):
        doc.insert(0, lines[i].lstrip()[1:].strip())
        i -= 1
    return "\n".join(doc)


@v_args(meta=True)
class RuleFileBuilder(TermBuilder):
    """Builds a RuleFileDecl from a .tcpr parse tree."""

    def rule_file(self, meta: Any, children: list[Any]) -> ast.RuleFileDecl:
        return ast.RuleFileDecl(tuple(children), self.source)

    def ruleset_decl(self, meta: Any, children: list[Any]) -> ast.RulesetDecl:
        return ast.RulesetDecl(str(children[0]), self.sp(meta))

    def import_decl(self, meta: Any, children: list[Any]) -> ast.ImportDecl:
        return ast.ImportDecl(str(children[0])[1:-1], self.sp(meta))

    def rule(self, meta: Any, children: list[Any]) -> ast.RuleDecl:
        name, rest = children[0], children[1:]
        family = rest.pop(0) if isinstance(rest[0], ast.FamilyDecl) else None
        cls = rest.pop(0) if isinstance(rest[0], ast.ClassDecl) else None
        lhs, arrow, rhs = rest[:3]
        guards: tuple[ast.GuardDecl, ...] = ()
        examples = []
        for item in rest[3:]:
            if isinstance(item, ast.ExampleDecl):
                examples.append(item)
            else:
                guards = item
        return ast.RuleDecl(str(name), cls, lhs, arrow == "<=>", rhs, guards, tuple(examples),
                            doc_comment(self.source, meta.line), self.sp(meta),
                            span_of(self.source, name), family)

    def family(self, meta: Any, children: list[Any]) -> ast.FamilyDecl:
        var, *ops = (str(c) for c in children)
        return ast.FamilyDecl(var, tuple(ops), len(children) > 2 or "[" in
                              self.source.text[meta.start_pos:meta.end_pos], self.sp(meta))

    def arrow(self, meta: Any, children: list[Any]) -> str:
        return str(children[0])

    def rule_class(self, meta: Any, children: list[Any]) -> ast.ClassDecl:
        cond = children[1] if len(children) > 1 else ()
        return ast.ClassDecl(str(children[0]), cond, self.sp(meta))

    def guards(self, meta: Any, children: list[Any]) -> tuple[ast.GuardDecl, ...]:
        return children[0]

    def condition(self, meta: Any, children: list[Any]) -> tuple[ast.GuardDecl, ...]:
        return tuple(c for c in children if isinstance(c, ast.GuardDecl))

    def guard(self, meta: Any, children: list[Any]) -> ast.GuardDecl:
        if len(children) == 3:
            return ast.GuardDecl(children[0], str(children[1]), children[2], self.sp(meta))
        return ast.GuardDecl(children[0], None, None, self.sp(meta))

    def example(self, meta: Any, children: list[Any]) -> ast.ExampleDecl:
        params = tuple(c for c in children if isinstance(c, ast.ParamDecl))
        before, after = children[len(params):]
        return ast.ExampleDecl(params, before, after, self.sp(meta))

    def example_param(self, meta: Any, children: list[Any]) -> ast.ParamDecl:
        return ast.ParamDecl(str(children[0]), children[1], self.sp(meta))


def rule_hint(e: UnexpectedInput, source: Source) -> str | None:
    """Hints for common mistakes in .tcpr rule files."""
    expected = expected_set(e)
    tok = getattr(e, "token", None)
    if tok is not None and tok.type == "COLON" and "RULE_NAME" in expected:
        return "every rule has a name: rule NAME: LEFT => RIGHT"
    if {"ONE_WAY", "TWO_WAY"} & expected and tok is not None:
        if str(tok) in ("->", "=", "==>", "-"):
            return "rules rewrite with => (one way) or <=> (both ways)"
        return "a rule is written LEFT => RIGHT (or LEFT <=> RIGHT for both directions)"
    if "COLON" in expected and "EXACT" in expected:
        return "a rule's name (and optional class) ends with ':': rule NAME [CLASS]: LEFT => RIGHT"
    if isinstance(e, UnexpectedCharacters) and source.text[e.pos_in_stream or 0] == "&":
        return "join guards with 'and' or ','"
    return common_hint(e, source)


def parse_rule_file(source: Source) -> ast.RuleFileDecl:
    """Parse .tcpr rule text into its AST."""
    result: ast.RuleFileDecl = run_parser(source, "tcpr", "rule_file", RuleFileBuilder,
                                          rule_hint)
    return result


def parse_program(source: Source) -> ast.ModuleDecl:
    """Parse .tcp program text into its AST."""
    result: ast.ModuleDecl = run_parser(source, "tcp", "module", ProgramBuilder, program_hint)
    return result
