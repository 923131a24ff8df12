"""Elaboration: program ASTs become typed IR, every error a positioned diagnostic.

Independent errors are all reported in one run; a let whose value failed to type is poisoned so
its users do not report follow-on errors.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping
from typing import Any

from tcp_rules.build import Literal, Operand, make_apply
from tcp_rules.diagnostics import DiagnosticBag, Source, Span, TcpError
from tcp_rules.grammar import ast
from tcp_rules.grammar.parser import (
    ProgramBuilder,
    parse_program,
    program_hint,
    run_parser,
)
from tcp_rules.ir import Func, Module, Param, Value
from tcp_rules.ops import OPS, AttrKind, AttrSpec, ShapeError
from tcp_rules.sorts import Sort
from tcp_rules.types import Dim, DType, TensorType


class AttrError(Exception):
    """An attribute expression that does not denote a value of the expected kind."""

    def __init__(self, message: str, span: Span):
        super().__init__(message)
        self.message, self.span = message, span


def did_you_mean(name: str, candidates: Iterable[str]) -> str | None:
    """A hint naming the closest candidate; among equally close ones, one that starts like
    ``name`` (a typo keeps the first letter more often: 'ad' is 'add' sooner than 'pad')."""
    matches = difflib.get_close_matches(name, list(candidates), n=3)
    if not matches:
        return None
    best = difflib.SequenceMatcher(None, name, matches[0]).ratio()
    tied = [m for m in matches if difflib.SequenceMatcher(None, name, m).ratio() == best]
    pick = next((m for m in tied if m[:1] == name[:1]), tied[0])
    return f"did you mean '{pick}'?"


def eval_dim(e: ast.AExpr) -> Dim:
    """A dim expression: integers, symbols, +, - and *."""
    match e:
        case ast.ANum(value=int() as v) if not isinstance(v, bool) and v >= 0:
            return Dim.of(v)
        case ast.AName(name=n):
            return Dim.of(n)
        case ast.ABin(op="+", lhs=a, rhs=b):
            return eval_dim(a) + eval_dim(b)
        case ast.ABin(op="-", lhs=a, rhs=b):
            return eval_dim(a) - eval_dim(b)
        case ast.ABin(op="*", lhs=a, rhs=b):
            return eval_dim(a) * eval_dim(b)
    raise AttrError("a dim is a non-negative integer, a symbol, or +, -, * of those", e.span)


def eval_int(e: ast.AExpr) -> int:
    match e:
        case ast.ANum(value=int() as v) if not isinstance(v, bool):
            return v
        case ast.ANeg(operand=ast.ANum(value=int() as v)) if not isinstance(v, bool):
            return -v
    raise AttrError("expected an integer", e.span)


def eval_scalar(e: ast.AExpr) -> int | float | bool:
    match e:
        case ast.ANum(value=v):
            return v
        case ast.ANeg(operand=ast.ANum(value=v)) if not isinstance(v, bool):
            return -v
    raise AttrError("expected a number", e.span)


def _items(e: ast.AExpr, what: str) -> tuple[ast.AExpr, ...]:
    if isinstance(e, ast.AList):
        return e.items
    raise AttrError(f"expected a list of {what}, e.g. [1, 0]", e.span)


def _data(e: ast.AExpr) -> Any:
    return [_data(i) for i in e.items] if isinstance(e, ast.AList) else eval_scalar(e)


def eval_attr(spec: AttrSpec, e: ast.AExpr) -> Any:
    """The value of attribute expression ``e`` for an attribute of ``spec``'s kind."""
    match spec.kind:
        case AttrKind.INT:
            return eval_int(e)
        case AttrKind.INTS:
            return tuple(eval_int(i) for i in _items(e, "integers"))
        case AttrKind.DIMS:
            return tuple(eval_dim(i) for i in _items(e, "dims"))
        case AttrKind.DTYPE:
            if isinstance(e, ast.AName):
                try:
                    return DType.parse(e.name)
                except ValueError as err:
                    raise AttrError(str(err), e.span) from None
            raise AttrError("expected a dtype such as f32", e.span)
        case AttrKind.NAME:
            if isinstance(e, ast.AName) and e.name in spec.choices:
                return e.name
            raise AttrError(f"expected one of {', '.join(spec.choices)}", e.span)
        case AttrKind.SCALAR:
            return eval_scalar(e)
        case AttrKind.BOOL:
            if isinstance(e, ast.ANum) and isinstance(e.value, bool):
                return e.value
            raise AttrError("expected true or false", e.span)
        case AttrKind.DATA:
            return _data(e)
    raise AssertionError(spec.kind)


def eval_type(t: ast.TypeExpr) -> TensorType:
    """A tensor type expression such as f32[N, 784]."""
    try:
        dtype = DType.parse(t.dtype)
    except ValueError as e:
        raise AttrError(str(e), t.span) from None
    return TensorType(dtype, tuple(eval_dim(d) for d in t.dims))


def parse_type(text: str) -> TensorType:
    """A tensor type from its text, e.g. "f32[N, 784]"."""
    src = Source("<type>", text)
    texpr = run_parser(src, "tcp", "tensor_type", ProgramBuilder, program_hint)
    try:
        return eval_type(texpr)
    except AttrError as e:
        raise TcpError.at(e.message, e.span) from None


# Words the term grammar reads as literals: a let or parameter of this name could never be used.
RESERVED = frozenset({"inf", "nan", "true", "false"})
SPLAT_HINT = "write splat(value=..., shape=[...], dtype=...)"


class _Poison(Exception):
    """A term depends on a value that already failed; its error was reported there."""


class TermElaborator:
    """Types terms over an environment of named values, reporting into a diagnostic bag."""

    def __init__(self, bag: DiagnosticBag, env: Mapping[str, Value | None] | None = None):
        self.bag = bag
        self.env: dict[str, Value | None] = dict(env or {})  # None: defined but failed to type

    def term(self, t: ast.Term, name: str | None = None,
             expected: TensorType | None = None) -> Operand:
        match t:
            case ast.Lit(value=v):
                return Literal(v, t.span)
            case ast.Var(name=n):
                if n not in self.env:
                    self.bag.error(f"undefined name '{n}'", t.span,
                                   hint=did_you_mean(n, self.env))
                    raise _Poison
                value = self.env[n]
                if value is None:
                    raise _Poison
                return value
            case ast.Call():
                return self.call(t, name, expected)
        raise AssertionError(t)

    def call(self, t: ast.Call, name: str | None, expected: TensorType | None) -> Value:
        op = OPS.get(t.op)
        if op is None:
            self.bag.error(f"unknown op '{t.op}'", t.op_span, hint=did_you_mean(t.op, OPS))
            raise _Poison
        args: list[Operand] = []
        poisoned = False
        for a in t.args:
            try:
                args.append(self.term(a))
            except _Poison:
                poisoned = True
        attrs: dict[str, Any] = {}
        kw_spans: dict[str, Span] = {}
        for kw in t.kwargs:
            spec = op.attr(kw.name)
            if kw.name in attrs:
                self.bag.error(f"attribute '{kw.name}' given twice", kw.span)
                poisoned = True
            elif spec is None:
                known = ", ".join(a.name for a in op.attrs) or "none"
                self.bag.error(f"{op.name} has no attribute '{kw.name}' (attributes: {known})",
                               kw.span, hint=did_you_mean(kw.name, [a.name for a in op.attrs]))
                poisoned = True
            else:
                try:
                    attrs[kw.name] = eval_attr(spec, kw.value)
                    kw_spans[kw.name] = kw.span
                except AttrError as e:
                    self.bag.error(f"attribute {kw.name}: {e.message}", e.span)
                    poisoned = True
        if poisoned:
            raise _Poison
        try:
            return make_apply(op, args, attrs, span=t.span, name=name, expected=expected)
        except ShapeError as e:
            span = t.span
            if e.operand is not None and e.operand < len(t.args):
                span = t.args[e.operand].span
            elif e.attr is not None and e.attr in kw_spans:
                span = kw_spans[e.attr]
            msg = e.message if e.message.startswith(op.name) else f"{op.name}: {e.message}"
            hint = SPLAT_HINT if e.message.startswith("cannot tell the type of literal") else None
            self.bag.error(msg, span, hint=hint)
            raise _Poison from None


class FuncElaborator(TermElaborator):
    """Types one func, reporting into a shared diagnostic bag."""

    def __init__(self, decl: ast.FuncDecl, bag: DiagnosticBag):
        super().__init__(bag)
        self.decl = decl
        self.defined_at: dict[str, Span] = {}

    def define(self, name: str, value: Value | None, span: Span) -> None:
        if name in RESERVED:
            self.bag.error(f"'{name}' cannot name a value: it always means the literal {name}",
                           span, hint=f"rename it, e.g. '{name}_'")
            self.env.setdefault(name, None)
            return
        if name in self.env:
            self.bag.error(f"'{name}' is already defined", span,
                           notes=[("first defined here", self.defined_at[name])])
            return
        self.env[name], self.defined_at[name] = value, span

    def run(self) -> Func | None:
        d = self.decl
        params: list[Param] = []
        for p in d.params:
            try:
                t = eval_type(p.type)
            except AttrError as e:
                self.bag.error(e.message, e.span)
                self.define(p.name, None, p.span)
                continue
            param = Param(t, param=p.name, index=len(params), span=p.span, name=p.name)
            params.append(param)
            self.define(p.name, param, p.span)
        for let in d.body:
            self.define(let.name, self.bind(let), let.span)
        return self.finish(params)

    def bind(self, let: ast.Let) -> Value | None:
        try:
            value = self.term(let.value, name=let.name)
        except _Poison:
            return None
        if isinstance(value, Literal):
            self.bag.error(f"cannot tell the type of literal bound to '{let.name}'",
                           let.value.span, hint=SPLAT_HINT)
            return None
        return value

    def finish(self, params: list[Param]) -> Func | None:
        d = self.decl
        try:
            expected = [eval_type(t) for t in d.results]
        except AttrError as e:
            self.bag.error(e.message, e.span)
            return None
        if len(d.returns) != len(expected):
            self.bag.error(f"func {d.name} declares {len(expected)} result(s) but returns "
                           f"{len(d.returns)}", d.return_span)
            return None
        results: list[Value] = []
        for term, want in zip(d.returns, expected, strict=True):
            try:
                operand = self.term(term, expected=want)
            except _Poison:
                continue
            v = (self.apply_literal(operand, want, term.span) if isinstance(operand, Literal)
                 else operand)
            if v is None:
                continue
            if v.sort is Sort.BODY:
                self.bag.error("a func returns tensors, not kernel bodies: materialize the body "
                               "with kernel(...)", term.span)
            elif v.type != want:
                self.bag.error(f"return type mismatch: the value has type {v.type} but func "
                               f"{d.name} declares {want}", term.span)
            results.append(v)
        if len(results) != len(expected) or len(params) != len(d.params):
            return None
        return Func(d.name, tuple(params), tuple(results), tuple(expected), d.span)

    def apply_literal(self, lit: Literal, want: TensorType, span: Span) -> Value | None:
        try:
            return make_apply(OPS["splat"], (), {"value": lit.value, "shape": want.dims,
                                                 "dtype": want.dtype}, span=span)
        except ShapeError as e:
            self.bag.error(e.message, span)
            return None

def elaborate(decl: ast.ModuleDecl) -> Module:
    """Type-check a parsed module; raises TcpError listing every error found."""
    bag = DiagnosticBag()
    funcs: list[Func] = []
    seen: dict[str, Span] = {}
    for fd in decl.funcs:
        if fd.name in seen:
            bag.error(f"func '{fd.name}' is already defined", fd.name_span,
                      notes=[("first defined here", seen[fd.name])])
            continue
        seen[fd.name] = fd.name_span
        f = FuncElaborator(fd, bag).run()
        if f is not None:
            funcs.append(f)
    if not decl.funcs:
        bag.error("the module defines no func", Span.point(decl.source, 1, 1))
    bag.raise_if_any("typecheck")
    return Module(tuple(funcs))


def elaborate_term(term: ast.Term, env: Mapping[str, Value], bag: DiagnosticBag,
                   expected: TensorType | None = None) -> Value | None:
    """Type one term over named values (rule examples); errors go into ``bag``."""
    elab = TermElaborator(bag, env)
    try:
        v = elab.term(term, expected=expected)
    except _Poison:
        return None
    if isinstance(v, Literal):
        if expected is None:
            bag.error(f"cannot tell the type of literal {v.value}", term.span)
            return None
        try:
            return make_apply(OPS["splat"], (), {"value": v.value, "shape": expected.dims,
                                                 "dtype": expected.dtype}, span=term.span)
        except ShapeError as e:
            bag.error(e.message, term.span)
            return None
    return v


def load_program(source: Source) -> Module:
    """Parse and type-check program text."""
    return elaborate(parse_program(source))


__all__ = ["elaborate", "elaborate_term", "eval_attr", "eval_type", "load_program", "parse_type"]
