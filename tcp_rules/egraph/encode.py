"""Programs and rules as egglog text.

A program becomes let-bindings, one per value (shared subterms stay shared), each with its type
set. A rule becomes an egglog rule: the matched side and every guard and computed attribute in
the query (so an undefined value just means no match), the union in the actions.
"""

from __future__ import annotations

import math
import re
from typing import Any

from tcp_rules.egraph.schema import SORT_OF_ATTR, _vec, constructor
from tcp_rules.egraph.tables import (  # noqa: F401 - re-exported: encode is the public face
    BIG_INT_BASE,
    MAX_EXACT_INT,
    NONE_BOUND,
    BigInt,
    Tables,
    bits_scalar,
    f64_text,
    scalar_bits,
)
from tcp_rules.ir import Apply, Func, Param
from tcp_rules.ops import AttrKind, OpDef
from tcp_rules.rules.functions import Sort
from tcp_rules.rules.model import (
    ABin,
    AConst,
    AFn,
    AList,
    AttrExpr,
    AVar,
    Guard,
    Pattern,
    PLit,
    POp,
    PVar,
    Rule,
    TRef,
)
from tcp_rules.rules.sorting import forms_kernels, var_sorts
from tcp_rules.types import Dim, DType


def attr_text(kind: AttrKind, value: Any, tables: Tables) -> str:
    """A concrete attribute value as an egglog literal."""
    match kind:
        case AttrKind.INT:
            return str(value)
        case AttrKind.INTS:
            return _vec(value)
        case AttrKind.DIMS:
            return _vec(tables.dim_id(Dim.of(d)) for d in value)
        case AttrKind.DTYPE | AttrKind.NAME:
            return f'"{value}"'
        case AttrKind.SCALAR:
            return str(NONE_BOUND if value is None else tables.scalar(value))
        case AttrKind.BOOL:
            return "true" if value else "false"
        case AttrKind.DATA:
            return str(tables.dense_id(value))
    raise AssertionError(kind)


def _operands(op: OpDef, parts: list[str]) -> str:
    if op.variadic:
        tail = "(TNil)"
        for p in reversed(parts):
            tail = f"(TCons {p} {tail})"
        return tail
    return " ".join(parts)


def encode_program(func: Func, tables: Tables) -> tuple[str, dict[int, str]]:
    """Let-bindings for every value of ``func`` with its type; returns (text, value id -> name)."""
    names: dict[int, str] = {}
    lines = []
    for i, v in enumerate(func.values()):
        name = f"$v{i}"
        names[id(v)] = name
        if isinstance(v, Param):
            expr = f'(Param "{v.param}")'
        else:
            assert isinstance(v, Apply)
            parts = [names[id(o)] for o in v.operands]
            attrs = [attr_text(spec.kind, a, tables) for spec, (_, a) in zip(v.op.attrs, v.attrs,
                                                                              strict=True)]
            expr = f"({constructor(v.op)} {_operands(v.op, parts)} {' '.join(attrs)})"
            expr = re.sub(r"\s+\)", ")", expr)
        lines.append(f"(let {name} {expr})")
        lines.append(f"(set (dims {name}) {attr_text(AttrKind.DIMS, v.type.dims, tables)})")
        lines.append(f'(set (dt {name}) "{v.type.dtype}")')
    return "\n".join(lines) + "\n", names


class Unencodable(Exception):
    """A rule uses something egglog cannot compute here; it is left out and reported."""


_NAME = re.compile(r"[^A-Za-z0-9_]")


def _var(prefix: str, name: str) -> str:
    return f"{prefix}_{_NAME.sub('_', name)}"


class RuleEncoder:
    """One direction of one rule as an egglog rule."""

    def __init__(self, rule: Rule, label: str, frm: Pattern, to: Pattern, tables: Tables,
                 int_zero: bool = False):
        self.rule, self.label, self.frm, self.to, self.tables = rule, label, frm, to, tables
        # The variant that matches a -0.0 literal where it splats to an integer or i1 zero,
        # whose bits in the e-graph are those of 0 (see encode_rule).
        self.int_zero = int_zero
        self.atoms: list[str] = []
        self.count = 0
        self.bound: dict[str, str] = {}  # memo of bound lookups (dims of x, ...)
        self.lengths: dict[str, str] = {}  # a list variable bound by a table of n -> n

    def fresh(self, stem: str = "v") -> str:
        self.count += 1
        return f"{stem}{self.count}"

    def bind(self, expr: str, stem: str = "v") -> str:
        if expr in self.bound:
            return self.bound[expr]
        var = self.fresh(stem)
        self.atoms.append(f"(= {var} {expr})")
        self.bound[expr] = var
        return var

    def length(self, vec: str) -> str:
        """The length of a list variable. Of ``range(n)`` (or ``zeros(n)``) it is ``n`` itself:
        egglog's planner joins the helper tables before the primitives that would connect
        them, and a rule that asked for the length again ran 9x slower (reshape-broadcast on
        the model suite's encoder)."""
        return self.lengths.get(vec) or self.bind(f"(vec-length {vec})")

    # the matched side ----------------------------------------------------------------------

    def match(self, p: Pattern) -> str:
        match p:
            case PVar(name=n):
                return _var("x", n)
            case PLit(value=v):
                var, dtype = self.fresh("lit"), self.fresh("ld")
                bits = self.tables.scalar(v)
                if self.int_zero and _negative_zero(v):
                    bits = self.tables.scalar(0)
                    self.atoms.append(f"(= (is-float {dtype}) false)")
                self.atoms.append(f"(= {var} (Splat {bits} {self.fresh('lt')} {dtype}))")
                return var
            case POp(op=op, args=args, attrs=attrs):
                parts = [self.match(a) for a in args]
                texts = [self.match_attr(op, name, e) for name, e in attrs]
                var = self.fresh("e")
                self.atoms.append(f"(= {var} ({constructor(op)} {_operands(op, parts)} "
                                  f"{' '.join(texts)}))".replace(" )", ")"))
                return var
        raise AssertionError(p)

    def match_attr(self, op: OpDef, name: str, e: AttrExpr | None) -> str:
        spec = op.attr(name)
        assert spec is not None
        if e is None:
            return str(NONE_BOUND)
        if isinstance(e, AVar):
            var = _var("a", e.name)
            if spec.optional:
                # A variable stands for a value the attribute has: without this guard it would
                # also bind the absent-bound sentinel, and a right side would then build that
                # NaN payload into a splat (clamp-min on a bound-less clamp made max(x, NaN)).
                guard = f"(!= {var} {NONE_BOUND})"
                if guard not in self.atoms:
                    self.atoms.append(guard)
            return var
        assert isinstance(e, AConst)
        return attr_text(spec.kind, e.value, self.tables)

    # attribute expressions -----------------------------------------------------------------

    def tensor(self, e: AttrExpr) -> str:
        assert isinstance(e, TRef)
        return _var("x", e.name)

    def dims(self, x: str) -> str:
        return self.bind(f"(dims {x})", "d")

    def dtype(self, x: str) -> str:
        return self.bind(f"(dt {x})", "t")

    def splat_bits(self, x: str) -> str:
        key = f"splat {x}"
        if key not in self.bound:
            bits = self.fresh("cb")
            self.atoms.append(f"(= {x} (Splat {bits} {self.fresh('ct')} {self.fresh('cd')}))")
            self.bound[key] = bits
        return self.bound[key]

    def expr(self, e: AttrExpr, want: str) -> str:
        """An egglog expression for ``e`` of egglog sort ``want``, its lookups bound."""
        match e:
            case AVar(name=n):
                return _var("a", n)
            case AConst(value=v, sort=sort):
                return self.const(v, sort, want)
            case AList(items=items):
                return self.bind(f"(vec-of {' '.join(self.expr(i, 'i64') for i in items)})")
            case ABin(op=op, lhs=a, rhs=b, sort=sort):
                x, y = self.expr(a, "i64"), self.expr(b, "i64")
                if sort is Sort.DIM:  # arithmetic on dim ids is only meaningful on constants
                    self.atoms.extend([f"(>= {x} 0)", f"(>= {y} 0)"])
                return self.bind(f"({op} {x} {y})")
            case AFn():
                return self.call(e, want)
        raise Unencodable(f"cannot encode {e}")

    def const(self, v: Any, sort: Sort, want: str) -> str:
        if want == "f64":
            return f64_text(float(v))
        if isinstance(v, DType | str):
            return f'"{v}"'
        if isinstance(v, bool):
            return "true" if v else "false"
        if isinstance(v, tuple):
            return _vec(self.tables.dim_id(Dim.of(x)) if isinstance(x, Dim) else x for x in v)
        if isinstance(v, Dim):
            return str(self.tables.dim_id(v))
        if isinstance(v, float):
            if not v.is_integer():
                raise Unencodable(f"non-integer {v} where an integer is needed")
            return str(int(v))
        return str(v)

    def call(self, e: AFn, want: str) -> str:
        a = e.args
        match e.fn:
            case "shape":
                return self.dims(self.tensor(a[0]))
            case "rank":
                return self.length(self.dims(self.tensor(a[0])))
            case "dim":
                return self.bind(f"(vec-get {self.dims(self.tensor(a[0]))} "
                                 f"{self.expr(a[1], 'i64')})")
            case "dtype":
                return self.dtype(self.tensor(a[0]))
            case "value":  # bits where an attribute is built, the float value in comparisons
                bits = self.splat_bits(self.tensor(a[0]))
                return bits if want == "i64" else self.bind(f"(scalar {bits})", "s")
            case "compose":
                p, q = self.expr(a[0], "IVec"), self.expr(a[1], "IVec")
                return self.bind(f'(unstable-vec-map (unstable-fn "vec-get" {p}) {q})')
            case "take":
                s, idx = self.expr(a[0], "IVec"), self.expr(a[1], "IVec")
                return self.bind(f'(unstable-vec-map (unstable-fn "vec-get" {s}) {idx})')
            case "remove":
                s, idx = self.expr(a[0], "IVec"), self.expr(a[1], "IVec")
                axes = self.bind(f"(axis-set {idx})")
                sel = self.bind(f"(keep-sel {self.length(s)} {axes})")
                return self.bind(f'(unstable-vec-map (unstable-fn "vec-get" {s}) {sel})')
            case "cat":
                return self.bind(f"(vec-append {self.expr(a[0], 'IVec')} "
                                 f"{self.expr(a[1], 'IVec')})")
            case "at":
                return self.bind(f"(vec-get {self.expr(a[0], 'IVec')} {self.expr(a[1], 'i64')})")
            case "len":
                return self.length(self.expr(a[0], 'IVec'))
            case "inverse" | "sort" | "range" | "zeros":
                table = {"inverse": "inverse", "sort": "sorted", "range": "iota",
                         "zeros": "zeros"}[e.fn]
                arg = self.expr(a[0], "i64" if e.fn in ("range", "zeros") else "IVec")
                var = self.bind(f"({table} {arg})")
                if e.fn in ("range", "zeros"):
                    self.lengths[var] = arg
                return var
            case "reduced_perm":
                return self.bind(f"(reduced-perm {self.expr(a[0], 'IVec')} "
                                 f"(sorted {self.expr(a[1], 'IVec')}))")
        raise Unencodable(f"function {e.fn} has no egglog encoding")

    def guard(self, g: Guard) -> None:
        if g.op is None:
            self.predicate(g.lhs)
            return
        assert g.rhs is not None
        sorts = {g.lhs.sort, g.rhs.sort}
        want = "f64" if Sort.SCALAR in sorts else (
            "IVec" if sorts & {Sort.INTS, Sort.DIMS} else "i64")
        x, y = self.expr(g.lhs, want), self.expr(g.rhs, want)
        if g.op in ("<", "<=", ">", ">=") and Sort.DIM in sorts:
            self.atoms.extend([f"(>= {x} 0)", f"(>= {y} 0)"])  # order only constant sizes
        self.atoms.append(f"(= {x} {y})" if g.op == "==" else f"({g.op} {x} {y})")

    def predicate(self, e: AttrExpr) -> None:
        if not isinstance(e, AFn):
            raise Unencodable(f"predicate {e}")
        match e.fn:
            case "is_float" | "is_int" | "is_bool" | "is_signed" | "is_unsigned":
                table = e.fn.replace("_", "-")
                t = self.dtype(self.tensor(e.args[0]))
                self.atoms.append(f"(= ({table} {t}) true)")
            case "is_const":
                self.splat_bits(self.tensor(e.args[0]))
            case "is_identity":
                p = self.expr(e.args[0], "IVec")
                self.atoms.append(f"(= {p} (iota (vec-length {p})))")
            case "is_sorted":
                p = self.expr(e.args[0], "IVec")
                self.atoms.append(f"(= {p} (sorted {p}))")
            case _:
                raise Unencodable(f"predicate {e.fn}")

    # the produced side ---------------------------------------------------------------------

    def build(self, p: Pattern, context: str | None) -> str:
        """A term for ``p``; ``context`` is an e-class var whose type a literal takes."""
        match p:
            case PVar(name=n):
                return _var("x", n)
            case PLit(value=v):
                if context is None:
                    raise Unencodable("a literal whose type the context does not give")
                return (f"(Splat {self.tables.scalar(v)} {self.dims(context)} "
                        f"{self.dtype(context)})")
            case POp(op=op, args=args, attrs=attrs):
                ctx = self.literal_context(op, args) if any(isinstance(a, PLit) for a in args) \
                    else None
                parts = [self.build(a, ctx) for a in args]
                texts = []
                for name, e in attrs:
                    spec = op.attr(name)
                    assert spec is not None
                    if e is None:
                        texts.append(str(NONE_BOUND))
                    elif isinstance(e, AConst):
                        texts.append(attr_text(spec.kind, e.value, self.tables))
                    else:
                        texts.append(self.expr(e, SORT_OF_ATTR[spec.kind]))
                return (f"({constructor(op)} {_operands(op, parts)} {' '.join(texts)})"
                        .replace(" )", ")"))
        raise AssertionError(p)

    def literal_context(self, op: OpDef, args: tuple[Pattern, ...]) -> str:
        """A variable of the left side whose type a literal operand of ``op`` takes: an
        elementwise op's operands share its type, so follow them down to a variable."""
        if not _same_type_op(op):
            raise Unencodable(f"a literal operand of {op.name}")
        for a in args:
            found = _typed_like(a)
            if found is not None:
                return _var("x", found)
        raise Unencodable(f"a literal operand of {op.name} without a variable beside it")

    def text(self, ruleset: str) -> str:
        root = self.match(self.frm)
        if forms_kernels(self.rule):  # sort-sensitive: its variables' sorts must hold
            for n, srt in var_sorts(self.rule.lhs, self.rule.rhs).items():
                self.atoms.append(f"({srt.value} {_var('x', n)})")
        for g in self.rule.guards:
            self.guard(g)
        rhs = self.build(self.to, root if isinstance(self.to, PLit) else None)
        name = self.rule.name + ("" if self.label == "=>" else "<=")
        name += INT_ZERO_SUFFIX if self.int_zero else ""
        query = "\n       ".join(self.atoms)
        return (f"(rule ({query})\n      ((union {root} {rhs}))\n"
                f"      :ruleset {ruleset} :name \"{name}\")")


def _same_type_op(op: OpDef) -> bool:
    """Do the operands and the result of ``op`` all have one type?"""
    return op.traits.elementwise and op.category in ("unary", "binary") and not op.fixed_dtypes


def _typed_like(p: Pattern) -> str | None:
    """A tensor variable with the type of ``p``, found through same-type ops."""
    if isinstance(p, PVar):
        return p.name
    if isinstance(p, POp) and _same_type_op(p.op):
        for a in p.args:
            found = _typed_like(a)
            if found is not None:
                return found
    return None


_KEEP = re.compile(r"[A-Za-z0-9.\-]")


def _mangle(prefix: str, name: str) -> str:
    """An egglog identifier for a user-chosen name, distinct for distinct names.

    Rule names may hold '-', '_' and '.', and a ruleset is named after its file; mapping
    those characters to one ('add-zero', 'add_zero') would make two rules one egglog ruleset,
    and egglog would refuse the whole program, so that any user rule could disable the
    standard library. Letters, digits, '-' and '.' (which egglog accepts in symbols) stay;
    '_' is the escape character, written '__'; anything else is '_' + hex code + '_'.
    """
    out = "".join(c if _KEEP.match(c) else "__" if c == "_" else f"_{ord(c):x}_"
                  for c in name)
    return f"{prefix}_{out}"


def ruleset_name(name: str) -> str:
    """The egglog ruleset of a DSL ruleset."""
    return _mangle("rs", name)


def rule_ruleset(rule: Rule) -> str:
    """Every rule has a ruleset of its own, so that one rule can be run alone (diagnosis)."""
    return _mangle("r", rule.name)


# The egglog name of a rule direction's integer-zero variant ends with this; run reports count
# its matches under the direction's own name.
INT_ZERO_SUFFIX = "@int-zero"


def _negative_zero(v: object) -> bool:
    return isinstance(v, float) and v == 0 and math.copysign(1.0, v) < 0


def _has_negative_zero(p: Pattern) -> bool:
    if isinstance(p, PLit):
        return _negative_zero(p.value)
    return isinstance(p, POp) and any(_has_negative_zero(a) for a in p.args)


def encode_rule(rule: Rule, tables: Tables) -> list[str]:
    """Egglog rules for each direction of ``rule`` (Unencodable if it cannot be expressed).

    A -0.0 literal on the matched side splats to 0 for integers, whose bits in the e-graph
    differ from -0.0's: such a direction gets a second egglog rule for integer and i1 zeros.
    """
    out = []
    for label, frm, to in rule.directions():
        out.append(RuleEncoder(rule, label, frm, to, tables).text(rule_ruleset(rule)))
        if _has_negative_zero(frm):
            out.append(RuleEncoder(rule, label, frm, to, tables, int_zero=True)
                       .text(rule_ruleset(rule)))
    return out
