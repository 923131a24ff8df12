"""Resolution: a rule's AST becomes a typed Rule, every misuse a positioned diagnostic.

The left side binds variables: tensor variables in operand positions, attribute variables in
attribute positions (their sort is the attribute's kind). The right side and the guards may
only use what the left side bound, each variable as what it is.
"""

from __future__ import annotations

from typing import Any

from tcp_rules.diagnostics import DiagnosticBag, Span
from tcp_rules.elaborate import AttrError, did_you_mean, eval_attr, eval_type
from tcp_rules.grammar import ast
from tcp_rules.ops import OPS, AttrSpec
from tcp_rules.rules.functions import (
    FUNCTIONS,
    LIST_SORTS,
    NUMERIC_SORTS,
    PRECONDITIONS,
    SORT_OF_KIND,
    Sort,
    fits,
)
from tcp_rules.rules.model import (
    ABin,
    AConst,
    AFn,
    AList,
    AttrExpr,
    AVar,
    Example,
    Guard,
    Pattern,
    PLit,
    POp,
    PVar,
    Rule,
    Soundness,
    TRef,
)
from tcp_rules.rules.sorting import SortError, var_sorts
from tcp_rules.types import DType


class _Failed(Exception):
    """This part of the rule has an error that has already been reported."""


class Scope:
    """The variables a side binds: tensors, and attributes with their sorts."""

    def __init__(self) -> None:
        self.tensors: dict[str, Span] = {}
        self.attrs: dict[str, tuple[Sort, Span]] = {}

    def describe(self) -> str:
        names = [*self.tensors, *self.attrs]
        return ", ".join(names) if names else "no variables"


class RuleResolver:
    def __init__(self, decl: ast.RuleDecl, bag: DiagnosticBag):
        self.decl, self.bag = decl, bag

    def fail(self, message: str, span: Span, hint: str | None = None) -> _Failed:
        self.bag.error(f"rule {self.decl.name}: {message}", span, hint=hint)
        return _Failed()

    # left sides: binding --------------------------------------------------------------------

    def bind_pattern(self, t: ast.Term, scope: Scope, side: str) -> Pattern:
        match t:
            case ast.Var(name=n):
                if n in scope.attrs:
                    raise self.fail(f"'{n}' is an attribute variable but is used as a tensor "
                                    f"operand", t.span)
                scope.tensors.setdefault(n, t.span)
                return PVar(n, t.span)
            case ast.Lit(value=v):
                return PLit(v, t.span)
            case ast.Call():
                op, attrs_in = self.op_and_attrs(t)
                args = tuple(self.bind_pattern(a, scope, side) for a in t.args)
                attrs = {name: self.bind_attr(op.attr(name), e, scope, side)
                         for name, e in attrs_in.items()}
                return self.finish_op(t, op, args, attrs)
        raise AssertionError(t)

    def bind_attr(self, spec: AttrSpec, e: ast.AExpr, scope: Scope, side: str) -> AttrExpr:
        sort = SORT_OF_KIND[spec.kind]
        if isinstance(e, ast.AName) and not (sort is Sort.DTYPE and _is_dtype(e.name)) \
                and e.name not in spec.choices:
            if e.name in scope.tensors:
                raise self.fail(f"'{e.name}' is a tensor variable but is used as attribute "
                                f"{spec.name}", e.span)
            prior = scope.attrs.get(e.name)
            if prior is not None and prior[0] is not sort:
                raise self.fail(f"attribute variable '{e.name}' is a {prior[0]} but {spec.name} "
                                f"is a {sort}", e.span)
            scope.attrs.setdefault(e.name, (sort, e.span))
            return AVar(e.name, sort, e.span)
        if _mentions_name(e) and not (sort in (Sort.DTYPE, Sort.NAME)
                                      and isinstance(e, ast.AName)):
            raise self.fail(f"the {side} side must match attribute {spec.name} with a variable "
                            f"or a literal, not a computed expression", e.span,
                            hint="bind it to a variable and compare it in a where-guard")
        return self.literal_attr(spec, e)

    def literal_attr(self, spec: AttrSpec, e: ast.AExpr) -> AConst:
        try:
            return AConst(eval_attr(spec, e), SORT_OF_KIND[spec.kind], e.span)
        except AttrError as err:
            raise self.fail(f"attribute {spec.name}: {err.message}", err.span) from None

    def op_and_attrs(self, t: ast.Call) -> tuple[Any, dict[str, ast.AExpr]]:
        op = OPS.get(t.op)
        if op is None:
            raise self.fail(f"unknown op '{t.op}'", t.op_span, hint=did_you_mean(t.op, OPS))
        if not op.arity_ok(len(t.args)):
            raise self.fail(f"{op.name} takes {op.arity_text()}, got {len(t.args)}", t.span)
        attrs: dict[str, ast.AExpr] = {}
        for kw in t.kwargs:
            if op.attr(kw.name) is None:
                known = ", ".join(a.name for a in op.attrs) or "none"
                raise self.fail(f"{op.name} has no attribute '{kw.name}' (attributes: {known})",
                                kw.span, hint=did_you_mean(kw.name, [a.name for a in op.attrs]))
            if kw.name in attrs:
                raise self.fail(f"attribute '{kw.name}' given twice", kw.span)
            attrs[kw.name] = kw.value
        for spec in op.attrs:
            if spec.name not in attrs and spec.default is None and not spec.optional:
                raise self.fail(f"{op.name} needs attribute '{spec.name}' (write {spec.name}=VAR "
                                f"to match any value)", t.span)
        return op, attrs

    def finish_op(self, t: ast.Call, op: Any, args: tuple[Pattern, ...],
                  attrs: dict[str, AttrExpr]) -> POp:
        full: list[tuple[str, AttrExpr | None]] = []
        for spec in op.attrs:
            if spec.name in attrs:
                full.append((spec.name, attrs[spec.name]))
            elif spec.default is not None:
                full.append((spec.name, AConst(spec.default, SORT_OF_KIND[spec.kind])))
            else:
                full.append((spec.name, None))  # an optional attribute left out
        return POp(op, args, tuple(full), t.span)

    # right sides and guards: use ------------------------------------------------------------

    def use_pattern(self, t: ast.Term, scope: Scope) -> Pattern:
        match t:
            case ast.Var(name=n):
                if n in scope.attrs:
                    raise self.fail(f"'{n}' is an attribute variable but is used as a tensor "
                                    f"operand", t.span)
                if n not in scope.tensors:
                    raise self.fail(f"'{n}' on the right side is not bound by the left side "
                                    f"(it binds {scope.describe()})", t.span)
                return PVar(n, t.span)
            case ast.Lit(value=v):
                return PLit(v, t.span)
            case ast.Call():
                op, attrs_in = self.op_and_attrs(t)
                args = tuple(self.use_pattern(a, scope) for a in t.args)
                attrs = {}
                for name, e in attrs_in.items():
                    spec = op.attr(name)
                    expr = self.expr(e, scope, SORT_OF_KIND[spec.kind])
                    attrs[name] = (self.literal_attr(spec, e) if isinstance(expr, AConst)
                                   else expr)
                return self.finish_op(t, op, args, attrs)
        raise AssertionError(t)

    def expr(self, e: ast.AExpr, scope: Scope, expected: Sort | None) -> AttrExpr:
        """Resolve an attribute expression, checking it has a sort that fits ``expected``."""
        out = self._expr(e, scope, expected)
        if expected is not None and not fits(out.sort, expected):
            raise self.fail(f"expected {_a(expected)} here, but this is {_a(out.sort)}", e.span)
        return out

    def _expr(self, e: ast.AExpr, scope: Scope, expected: Sort | None) -> AttrExpr:
        match e:
            case ast.AName(name=n):
                if n in scope.attrs:
                    return AVar(n, scope.attrs[n][0], e.span)
                if n in scope.tensors:
                    raise self.fail(f"'{n}' is a tensor variable but is used as an attribute",
                                    e.span, hint=f"shape({n}), rank({n}), dim({n}, i) and "
                                    f"dtype({n}) give attributes of a tensor")
                if _is_dtype(n):
                    return AConst(DType.parse(n), Sort.DTYPE, e.span)
                if n in NAME_CHOICES:  # a word of a NAME attribute (mode=reflect)
                    return AConst(n, Sort.NAME, e.span)
                raise self.fail(f"'{n}' is not bound by the left side (it binds "
                                f"{scope.describe()})", e.span)
            case ast.ANum(value=v):
                sort = Sort.BOOL if isinstance(v, bool) else (
                    Sort.INT if isinstance(v, int) else Sort.SCALAR)
                return AConst(v, sort, e.span)
            case ast.ANeg(operand=ast.ANum(value=v)) if not isinstance(v, bool):
                return AConst(-v, Sort.INT if isinstance(v, int) else Sort.SCALAR, e.span)
            case ast.ANeg(operand=x):
                inner = self.expr(x, scope, None)
                return self.arith("-", AConst(0, Sort.INT), inner, e.span)
            case ast.ABin(op=o, lhs=a, rhs=b):
                return self.arith(o, self.expr(a, scope, None), self.expr(b, scope, None), e.span)
            case ast.AList(items=items):
                return self.list_expr(items, scope, expected, e.span)
            case ast.ACall():
                return self.call(e, scope)
        raise AssertionError(e)

    def arith(self, op: str, a: AttrExpr, b: AttrExpr, span: Span) -> AttrExpr:
        for x in (a, b):
            if x.sort not in (Sort.INT, Sort.DIM):
                raise self.fail(f"'{op}' works on ints and dims, not on {_a(x.sort)}", span)
        sort = Sort.DIM if Sort.DIM in (a.sort, b.sort) else Sort.INT
        return ABin(op, a, b, sort, span)

    def list_expr(self, items: tuple[ast.AExpr, ...], scope: Scope, expected: Sort | None,
                  span: Span) -> AttrExpr:
        if expected is not None and expected not in LIST_SORTS:
            raise self.fail(f"expected {_a(expected)} here, not a list", span)
        elem = Sort.INT if expected is Sort.INTS else (Sort.DIM if expected else None)
        parts = tuple(self.expr(i, scope, elem) for i in items)
        sort = Sort.INTS if all(p.sort is Sort.INT for p in parts) else Sort.DIMS
        if any(p.sort not in (Sort.INT, Sort.DIM) for p in parts):
            raise self.fail("list entries must be ints or dims", span)
        if all(isinstance(p, AConst) for p in parts):
            return AConst(tuple(p.value for p in parts if isinstance(p, AConst)), sort, span)
        return AList(parts, sort, span)

    def call(self, e: ast.ACall, scope: Scope) -> AttrExpr:
        fn = FUNCTIONS.get(e.fn)
        if fn is None:
            raise self.fail(f"unknown function '{e.fn}'", e.span,
                            hint=did_you_mean(e.fn, FUNCTIONS) or "functions: "
                            + ", ".join(sorted(FUNCTIONS)))
        if len(e.args) != len(fn.params):
            raise self.fail(f"{fn.name} takes {len(fn.params)} argument(s), got {len(e.args)}",
                            e.span)
        args: list[AttrExpr] = []
        for a, want in zip(e.args, fn.params, strict=True):
            if want is Sort.TENSOR:
                args.append(self.tensor_ref(fn.name, a, scope))
            else:
                args.append(self.expr(a, scope, want))
        return AFn(fn.name, tuple(args), fn.result_sort([x.sort for x in args]), e.span)

    def tensor_ref(self, fn: str, a: ast.AExpr, scope: Scope) -> TRef:
        if isinstance(a, ast.AName) and a.name in scope.tensors:
            return TRef(a.name, a.span)
        if isinstance(a, ast.AName) and a.name in scope.attrs:
            raise self.fail(f"'{a.name}' is an attribute variable but {fn} takes a tensor",
                            a.span)
        if isinstance(a, ast.AName):
            raise self.fail(f"'{a.name}' is not bound by the left side (it binds "
                            f"{scope.describe()})", a.span)
        raise self.fail(f"{fn} takes a tensor variable of the left side", a.span)

    def guard(self, g: ast.GuardDecl, scope: Scope) -> Guard:
        lhs = self.expr(g.lhs, scope, None)
        if g.op is None:
            if lhs.sort is not Sort.BOOL:
                raise self.fail(f"a guard must be a comparison or a predicate, but this is "
                                f"{_a(lhs.sort)}", g.span)
            return Guard(lhs, None, None, g.span)
        assert g.rhs is not None
        rhs = self.expr(g.rhs, scope, None)
        if not _comparable(lhs.sort, rhs.sort):
            raise self.fail(f"cannot compare {_a(lhs.sort)} with {_a(rhs.sort)}", g.span)
        if g.op not in ("==", "!=") and lhs.sort not in NUMERIC_SORTS:
            raise self.fail(f"'{g.op}' orders numbers; use == or != on {_a(lhs.sort)}", g.span)
        return Guard(lhs, g.op, rhs, g.span)

    def precondition(self, g: ast.GuardDecl, scope: Scope) -> Guard:
        hint = "a precondition compares a tensor variable with a number (x > 0) or applies " + \
            " or ".join(f"{p}(x)" for p in PRECONDITIONS)
        if g.op is None and isinstance(g.lhs, ast.ACall) and g.lhs.fn in PRECONDITIONS \
                and len(g.lhs.args) == 1:
            arg = g.lhs.args[0]
            if isinstance(arg, ast.AName) and arg.name in scope.tensors:
                return Guard(AFn(g.lhs.fn, (TRef(arg.name, arg.span),), Sort.BOOL, g.lhs.span),
                             None, None, g.span)
        if g.op is not None and isinstance(g.lhs, ast.AName) and g.lhs.name in scope.tensors:
            assert g.rhs is not None
            value = self.expr(g.rhs, scope, Sort.SCALAR)
            if isinstance(value, AConst):
                return Guard(TRef(g.lhs.name, g.lhs.span), g.op, value, g.span)
        raise self.fail("this precondition is not understood", g.span, hint=hint)

    # the whole rule -------------------------------------------------------------------------

    def resolve(self, ruleset: str) -> Rule | None:
        d = self.decl
        try:
            if not isinstance(d.lhs, ast.Call):
                raise self.fail("the left side must be an op application", d.lhs.span)
            left = Scope()
            lhs = self.bind_pattern(d.lhs, left, "left")
            rhs = self.use_pattern(d.rhs, left)
            try:
                var_sorts(lhs, rhs)
            except SortError as e:
                raise self.fail(e.message, e.span or d.span) from None
            if d.two_way:
                self.check_reverse(d, left)
            guards = tuple(self.guard(g, left) for g in d.guards)
            soundness = Soundness()
            if d.cls is not None:
                soundness = Soundness(d.cls.kind, tuple(
                    self.precondition(g, left) for g in d.cls.condition))
            examples = tuple(self.example(x) for x in d.examples)
        except _Failed:
            return None
        return Rule(name=d.name, ruleset=ruleset, soundness=soundness, lhs=lhs, rhs=rhs,
                    two_way=d.two_way, guards=guards, examples=examples, doc=d.doc,
                    tensor_vars=tuple(left.tensors),
                    attr_vars=tuple((n, s) for n, (s, _) in left.attrs.items()), span=d.span)

    def check_reverse(self, d: ast.RuleDecl, left: Scope) -> None:
        """A two-way rule's right side is a pattern too, binding what the left side binds."""
        if not isinstance(d.rhs, ast.Call):
            raise self.fail("the right side of a two-way rule must be an op application",
                            d.rhs.span)
        right = Scope()
        self.bind_pattern(d.rhs, right, "right")
        for name, span in [*left.tensors.items(), *((n, s) for n, (_, s) in left.attrs.items())]:
            if name not in right.tensors and name not in right.attrs:
                raise self.fail(f"'{name}' is not bound by the right side, so the rule cannot be "
                                f"used right to left", span, hint="use => for a one-way rule")

    def example(self, x: ast.ExampleDecl) -> Example:
        params = []
        for p in x.params:
            try:
                params.append((p.name, eval_type(p.type)))
            except AttrError as e:
                raise self.fail(f"example: {e.message}", e.span) from None
        return Example(tuple(params), x.before, x.after, x.span)


# The words NAME attributes take; a rule writes them bare, as constants (like dtypes).
NAME_CHOICES = frozenset(c for op in OPS.values() for a in op.attrs for c in a.choices)


def _is_dtype(name: str) -> bool:
    return name in {d.value for d in DType}


def _mentions_name(e: ast.AExpr) -> bool:
    match e:
        case ast.AName():
            return True
        case ast.AList(items=items):
            return any(_mentions_name(i) for i in items)
        case ast.ABin(lhs=a, rhs=b):
            return _mentions_name(a) or _mentions_name(b)
        case ast.ANeg(operand=x):
            return _mentions_name(x)
        case ast.ACall():
            return True
    return False


def _comparable(a: Sort, b: Sort) -> bool:
    return a == b or {a, b} <= NUMERIC_SORTS or {a, b} <= LIST_SORTS


def _a(sort: Sort) -> str:
    return {Sort.INT: "an int", Sort.INTS: "a list of ints", Sort.DIM: "a dim",
            Sort.DIMS: "a list of dims", Sort.DTYPE: "a dtype", Sort.SCALAR: "a number",
            Sort.BOOL: "a truth value", Sort.DATA: "dense data", Sort.NAME: "a name",
            Sort.TENSOR: "a tensor"}[sort]


def resolve_rule(decl: ast.RuleDecl, ruleset: str, bag: DiagnosticBag) -> Rule | None:
    """Resolve one rule, reporting its errors into ``bag``; None if it has any."""
    return RuleResolver(decl, bag).resolve(ruleset)


