"""The egglog schema derived from the op table: one constructor per op, the type analysis, and
lookup tables for the attribute functions egglog has no primitive for.

Encodings: a tensor is an e-class of sort ``T``; concat's operands are a ``TL`` cons list.
Attributes: ints are i64, lists are ``IVec`` (Vec i64), dtypes and names (pad's mode) are
strings, booleans are bool,
scalars (splat values, clamp bounds) are the i64 bit pattern of their float64 value (so 0.0 and
-0.0 stay distinct, which egglog's f64 equality would merge), and dims are i64 ids: a constant
size is itself, a symbolic dim a negative id (see DimIds).
"""

from __future__ import annotations

from collections.abc import Iterable

from tcp_rules.egraph.tables_needed import TableNeeds, axis_set, inverse, reduced_perm
from tcp_rules.ops import MATMULS, OPS, AttrKind, OpDef
from tcp_rules.sorts import BOUNDARY
from tcp_rules.types import DType

SORT_OF_ATTR = {AttrKind.INT: "i64", AttrKind.INTS: "IVec", AttrKind.DIMS: "IVec",
                AttrKind.DTYPE: "String", AttrKind.SCALAR: "i64", AttrKind.BOOL: "bool",
                AttrKind.DATA: "i64", AttrKind.NAME: "String"}


def constructor(op: OpDef) -> str:
    """The egglog constructor of an op: reduce_sum -> ReduceSum."""
    return "".join(part.capitalize() for part in op.name.split("_"))


OP_OF_CONSTRUCTOR = {constructor(op): op for op in OPS.values()}


def signature(op: OpDef) -> list[str]:
    """The argument sorts of an op's constructor: operands, then attributes in table order."""
    operands = ["TL"] if op.variadic else ["T"] * len(op.operands)
    return operands + [SORT_OF_ATTR[a.kind] for a in op.attrs]


def declarations() -> str:
    """Sorts, constructors, the type functions and the helper tables' signatures."""
    ctors = "\n".join(f"  ({constructor(op)} {' '.join(signature(op))})".replace(" )", ")")
                      for op in OPS.values())
    return f"""\
(sort IVec (Vec i64))
(sort IFn (UnstableFn (i64) i64))
(datatype*
 (T
  (Param String)
{ctors})
 (TL (TNil) (TCons T TL)))
; The type analysis: dims (dim ids) and dtype of every e-class; :no-merge makes a rule that
; equates tensors of different types fail loudly instead of corrupting the graph.
(function dims (T) IVec :no-merge)
(function dt (T) String :no-merge)
; Sorts (tcp_rules.sorts): materialized tensors and kernel bodies; splat constants are both.
(relation tensor (T))
(relation body (T))
; Tables filled by the encoder for attribute functions egglog has no primitive for.
(function is-float (String) bool :no-merge)
(function is-int (String) bool :no-merge)
(function is-bool (String) bool :no-merge)
(function is-signed (String) bool :no-merge)
(function is-unsigned (String) bool :no-merge)
(function scalar (i64) f64 :no-merge)
(function inverse (IVec) IVec :no-merge)
(function sorted (IVec) IVec :no-merge)
(function axis-set (IVec) IVec :no-merge)
(function iota (i64) IVec :no-merge)
(function zeros (i64) IVec :no-merge)
(function keep-sel (i64 IVec) IVec :no-merge)
(function reduce-sel (i64 IVec bool) IVec :no-merge)
(function reduced-perm (IVec IVec) IVec :no-merge)
"""


def _vec(xs: Iterable[int]) -> str:
    xs = list(xs)
    return f"(vec-of {' '.join(map(str, xs))})" if xs else "(vec-empty)"


def tables(needs: TableNeeds) -> str:
    """Rows of the dtype predicates and of the helper tables ``needs`` asks for (see
    tables_needed: rows for what the program and the rules can reach, not for every
    permutation of the largest rank)."""
    rows = []
    for d in DType:
        rows.append(f'(set (is-float "{d}") {str(d.is_float).lower()})')
        rows.append(f'(set (is-int "{d}") {str(d.is_int).lower()})')
        rows.append(f'(set (is-bool "{d}") {str(d is DType.I1).lower()})')
        rows.append(f'(set (is-signed "{d}") {str(d.is_float or d.is_signed).lower()})')
        rows.append(f'(set (is-unsigned "{d}") {str(d.is_unsigned).lower()})')
    # sorted's arguments: reduction axes (typing, reduced_perm) and sorted lists (is_sorted);
    # axis-set's: remove's positions
    to_sort, to_remove = set(needs.literals), set(needs.literals)
    for r in range(needs.max_rank + 1):
        rows.append(f"(set (iota {r}) {_vec(range(r))})")
        rows.append(f"(set (zeros {r}) {_vec([0] * r)})")
        subsets = needs.subsets(r)
        removals = needs.removals(r)
        to_sort |= subsets | set(needs.reductions.get(r, ())) | set(needs.broadcasts.get(r, ()))
        to_remove |= removals
        for axes in sorted({axis_set(a) for a in removals}):  # removals hold the subsets
            rows.append(f"(set (keep-sel {r} {_vec(axes)}) "
                        f"{_vec(i for i in range(r) if i not in axes)})")
        for axes in sorted(subsets):
            kept = [i for i in range(r) if i not in axes]
            rows.append(f"(set (reduce-sel {r} {_vec(axes)} false) {_vec(kept)})")
            # keepdims: a reduced axis reads index r of (vec-push dims 1), the appended 1
            rows.append(f"(set (reduce-sel {r} {_vec(axes)} true) "
                        f"{_vec(r if i in axes else i for i in range(r))})")
    for r, perms in sorted(needs.perms.items()):
        rows.extend(f"(set (inverse {_vec(p)}) {_vec(inverse(p))})" for p in sorted(perms))
        rows.extend(f"(set (reduced-perm {_vec(p)} {_vec(axes)}) {_vec(reduced_perm(p, axes))})"
                    for p, axes in sorted(needs.reduced_pairs(r)))
    rows.extend(f"(set (sorted {_vec(a)}) {_vec(sorted(a))})" for a in sorted(to_sort))
    # remove's positions are a set (a repeat comes from remove(s, cat(a, [c])), c in a)
    rows.extend(f"(set (axis-set {_vec(a)}) {_vec(axis_set(a))})" for a in sorted(to_remove))
    return "\n".join(dict.fromkeys(rows)) + "\n"


def _elementwise_rule(op: OpDef) -> str:
    c = constructor(op)
    n = len(op.operands)
    args = " ".join(f"a{i}" for i in range(n))
    attrs = " ".join(f"k{i}" for i in range(len(op.attrs)))
    first = 1 if op.name == "select" else 0  # select's type is that of its branches
    dtype = '"i1"' if op.category == "compare" else ("k0" if op.name == "cast" else "t")
    return (f"(rule ((= e ({c} {args} {attrs})) (= d (dims a{first})) (= t (dt a{first})))\n"
            f"      ((set (dims e) d) (set (dt e) {dtype}))"
            f" :ruleset types :name \"type-{op.name}\")")


def _sort_rules(op: OpDef) -> list[str]:
    """Sort analysis: the fusion ops give their result's sort (sorts.BOUNDARY: load and the
    load_matmuls bodies, kernel tensors), dense constants tensors, splats both; any other op
    has the sort its operands share (concat: that of its first operand)."""
    c = constructor(op)
    fixed = ({n: [result.value] for n, (_, result) in BOUNDARY.items()}
             | {"dense": ["tensor"], "splat": ["tensor", "body"]}).get(op.name)
    holes = " ".join("_" for _ in op.attrs)
    if fixed is not None:
        args = " ".join(["_"] * len(op.operands) + ["_"] * len(op.attrs))
        return [f"(rule ((= e ({c} {args}))) (({s} e)) :ruleset types :name \"{s}-{op.name}\")"
                for s in fixed]
    out = []
    for s in ("tensor", "body"):
        if op.variadic:
            pat, conds = f"({c} (TCons a0 rest) {holes})", f"({s} a0)"
        else:
            n = len(op.operands)
            pat = f"({c} {' '.join(f'a{i}' for i in range(n))} {holes})"
            conds = " ".join(f"({s} a{i})" for i in range(n))
        out.append(f"(rule ((= e {pat.replace(' )', ')')}) {conds}) (({s} e)) :ruleset types "
                   f":name \"{s}-{op.name}\")")
    return out


# Pads that rules build are typed up to this rank when their operand's sizes are constants (a
# sum with a symbolic dim has no id; such a pad is typed by the e-class it joins, like concat).
PAD_TYPED_RANKS = 6


def _pad_rule(rank: int) -> str:
    conds = "".join(f" (>= (vec-get d {i}) 0)" for i in range(rank))
    dims = " ".join(f"(+ (vec-get d {i}) (+ (vec-get lo {i}) (vec-get hi {i})))"
                    for i in range(rank))
    out = f"(vec-of {dims})" if rank else "(vec-empty)"
    return (f"(rule ((= e (Pad x lo hi m v)) (= d (dims x)) (= t (dt x)) "
            f"(= {rank} (vec-length d)){conds})\n"
            f"      ((set (dims e) {out}) (set (dt e) t)) :ruleset types "
            f":name \"type-pad-{rank}\")")


def analysis() -> str:
    """The type and sort analysis, by op category (elementwise ops keep their operands'
    shape)."""
    rules = ['(rule ((= e (Param _))) ((tensor e)) :ruleset types :name "tensor-param")']
    for op in OPS.values():
        rules.extend(_sort_rules(op))
    for op in OPS.values():
        c = constructor(op)
        if op.traits.elementwise:
            rules.append(_elementwise_rule(op))
        elif op.name == "splat":  # dense constants only come from programs, typed there
            rules.append(f"(rule ((= e ({c} v s t))) ((set (dims e) s) (set (dt e) t)) "
                         f":ruleset types :name \"type-{op.name}\")")
        elif op.name in ("broadcast", "reshape"):
            rules.append(f"(rule ((= e ({c} x s{' k' if op.name == 'broadcast' else ''})) "
                         f"(= t (dt x))) ((set (dims e) s) (set (dt e) t)) "
                         f":ruleset types :name \"type-{op.name}\")")
        elif op.name in ("load", "kernel"):  # the identity on types
            rules.append(f"(rule ((= e ({c} x)) (= d (dims x)) (= t (dt x))) ((set (dims e) d) "
                         f"(set (dt e) t)) :ruleset types :name \"type-{op.name}\")")
        elif op.name == "slice":
            rules.append("(rule ((= e (Slice x st sz sd)) (= t (dt x))) ((set (dims e) sz) "
                         "(set (dt e) t)) :ruleset types :name \"type-slice\")")
        elif op.name == "transpose":
            rules.append("(rule ((= e (Transpose x p)) (= d (dims x)) (= t (dt x)))\n"
                         "      ((set (dims e) (unstable-vec-map (unstable-fn \"vec-get\" d) p)) "
                         "(set (dt e) t)) :ruleset types :name \"type-transpose\")")
        elif op.category == "reduce":
            rules.append(
                f"(rule ((= e ({c} x axes keep)) (= d (dims x)) (= t (dt x))\n"
                f"       (= sel (reduce-sel (vec-length d) (sorted axes) keep)))\n"
                f"      ((set (dims e) (unstable-vec-map (unstable-fn \"vec-get\" "
                f"(vec-push d 1)) sel)) (set (dt e) t)) :ruleset types :name \"type-{op.name}\")")
        elif op.name == "load_matmul_rows":  # A regrouped to s: s with B's columns last
            rules.append(
                f"(rule ((= e ({c} a b s)) (= db (dims b)) (= t (dt a)))\n"
                f"      ((set (dims e) (vec-set s (- (vec-length s) 1) "
                f"(vec-get db (- (vec-length db) 1)))) (set (dt e) t))"
                f" :ruleset types :name \"type-{op.name}\")")
        elif op.name in MATMULS:
            rules.append(
                f"(rule ((= e ({c} a b)) (= da (dims a)) (= db (dims b)) (= t (dt a))\n"
                f"       (= 2 (vec-length da)))\n"
                f"      ((set (dims e) (vec-of (vec-get da 0) (vec-get db 1))) (set (dt e) t))"
                f" :ruleset types :name \"type-{op.name}\")")
            rules.append(
                f"(rule ((= e ({c} a b)) (= da (dims a)) (= db (dims b)) (= t (dt a))\n"
                f"       (= 3 (vec-length da)))\n"
                f"      ((set (dims e) (vec-of (vec-get da 0) (vec-get da 1) (vec-get db 2)))"
                f" (set (dt e) t)) :ruleset types :name \"type-{op.name}-batched\")")
        elif op.name == "concat":
            # Sizes add up only when both are constants (symbolic sums have no id here);
            # concat nodes of the program itself are typed by the encoder.
            rules.append(
                "(rule ((= e (Concat (TCons a (TCons b (TNil))) k)) (= da (dims a))\n"
                "       (= db (dims b)) (= t (dt a)) (>= (vec-get da k) 0) (>= (vec-get db k) 0))\n"
                "      ((set (dims e) (vec-set da k (+ (vec-get da k) (vec-get db k))))"
                " (set (dt e) t)) :ruleset types :name \"type-concat\")")
        elif op.name == "pad":
            rules.extend(_pad_rule(r) for r in range(PAD_TYPED_RANKS + 1))
        # gather: only ever comes from programs, which the encoder types directly
    return "(ruleset types)\n" + "\n".join(rules) + "\n"
