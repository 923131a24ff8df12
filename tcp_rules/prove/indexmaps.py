"""Ops over tensors of symbolic size, for proofs that hold for every size: a tensor is its dims
(z3 integer terms) and a function from a symbolic index to the term of that element.

Inputs are uninterpreted functions of their index. Elementwise ops apply their scalar formula
at the index; data movement maps the output index to an input index with the sizes left
symbolic (slice: start + i * stride; concat: a choice on the axis; pad: the border cases of
numpy.pad); reductions and matmul are uninterpreted functions of an array (a z3 lambda over the
reduced indices, masked to their range), so that two reductions of the same elements are equal
by congruence and nothing else is assumed but the one-element case:

- integer, real and max/min reductions take the reduced elements only, in the order of their
  axes (their result does not depend on NumPy's order of visiting: integers wrap, reals are
  exact, IEEE maximum/minimum are order-free);
- float sums and products, and float matmul, whose rounding follows NumPy's and BLAS's
  visiting order, take the whole input tensor, its dims and the output index: they are equal
  only where the whole computation is (a deterministic function of its input).

Each op also says where it is defined at given sizes (slice reads in range, pad's edge and
reflect modes have elements to repeat), exactly as its shape rule does at concrete sizes;
tests/test_prove_allsizes.py checks both the maps and those conditions against the op table.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import z3

from tcp_rules.prove.domain import Ctx, Unsupported, const, regrouped_matmul, sort_of
from tcp_rules.prove.scalars import SCALAR_FORMULAS
from tcp_rules.types import Dim, DType, TensorType

type E = Any  # a z3 term
Index = tuple[E, ...]


@dataclass(frozen=True)
class STensor:
    """A tensor of symbolic size: its dims and its element at any in-range index."""

    dims: tuple[E, ...]
    at: Callable[[Index], E]


@dataclass
class Sized:
    """The reading (``ctx``), the z3 integer of each size symbol, the conditions under which
    the ops built so far are defined, and the uninterpreted reductions in use."""

    ctx: Ctx
    symbols: dict[str, E]
    valid: list[E] = field(default_factory=list)
    folds: dict[str, z3.FuncDeclRef] = field(default_factory=dict)

    def dim(self, d: Dim | int) -> E:
        """A dim (a polynomial in the size symbols) as a z3 integer term."""
        total: E = z3.IntVal(0)
        for mono, coeff in Dim.of(d).terms:
            term: E = z3.IntVal(coeff)
            for s in mono:
                term = term * self.symbol(s)
            total = total + term
        return z3.simplify(total)

    def symbol(self, name: str) -> E:
        if name not in self.symbols:
            self.symbols[name] = z3.Int(f"size_{name}")
        return self.symbols[name]

    def fold(self, name: str, *sorts: z3.SortRef) -> z3.FuncDeclRef:
        key = name + "/" + "/".join(str(s) for s in sorts)
        if key not in self.folds:
            self.folds[key] = z3.Function(key, *sorts)
        return self.folds[key]


SymFn = Callable[[Sized, str, Sequence[STensor], Sequence[TensorType], TensorType,
                  dict[str, Any]], STensor]


def input_tensor(name: str, t: TensorType, sz: Sized) -> STensor:
    """A parameter: an uninterpreted function of its index (a constant at rank 0)."""
    sort = sort_of(t.dtype, sz.ctx.mode)
    dims = tuple(sz.dim(d) for d in t.dims)
    if not dims:
        c = z3.Const(name, sort)
        return STensor((), lambda i: c)
    f = z3.Function(name, *([z3.IntSort()] * len(dims)), sort)
    return STensor(dims, lambda i: f(*i))


def in_range(index: Index, dims: Sequence[E]) -> E:
    return z3.And(*[z3.And(i >= 0, i < d) for i, d in zip(index, dims, strict=True)])


def elementwise(sz: Sized, name: str, args: Sequence[STensor], types: Sequence[TensorType],
                out: TensorType, attrs: dict[str, Any]) -> STensor:
    fn, dts = SCALAR_FORMULAS[name], [t.dtype for t in types]
    return STensor(args[0].dims if args else (),
                   lambda i: fn(sz.ctx, [a.at(i) for a in args], dts, out.dtype, attrs))


def constant(sz: Sized, name: str, args: Sequence[STensor], types: Sequence[TensorType],
             out: TensorType, attrs: dict[str, Any]) -> STensor:
    if name != "splat":
        raise Unsupported(f"{name}: a constant of symbolic size must be a splat")
    c = const(attrs["value"], out.dtype, sz.ctx.mode)
    return STensor(tuple(sz.dim(d) for d in out.dims), lambda i: c)


def iota(sz: Sized, name: str, args: Sequence[STensor], types: Sequence[TensorType],
         out: TensorType, attrs: dict[str, Any]) -> STensor:
    """Element i is i[axis] in the dtype: a bit vector, a real, or the float nearest it."""
    axis, dt = attrs["axis"], out.dtype

    def at(i: Index) -> E:
        k, sort = i[axis], sort_of(dt, sz.ctx.mode)
        if not dt.is_float:
            return z3.Int2BV(k, sort.size())
        if sz.ctx.mode == "real":
            return z3.ToReal(k)
        return z3.fpToFP(z3.RNE(), z3.ToReal(k), sort)
    return STensor(tuple(sz.dim(d) for d in out.dims), at)


def identity(sz: Sized, name: str, args: Sequence[STensor], types: Sequence[TensorType],
             out: TensorType, attrs: dict[str, Any]) -> STensor:
    return args[0]  # load and kernel mean the identity on values


def broadcast(sz: Sized, name: str, args: Sequence[STensor], types: Sequence[TensorType],
              out: TensorType, attrs: dict[str, Any]) -> STensor:
    x, one = args[0], Dim.of(1)
    # The shape rule lets an axis of size 1 broadcast, or one equal to its result axis: a
    # literal 1 is read at 0, any other size at the result's index.
    ones = [types[0].dims[k] == one for k in range(len(x.dims))]
    return STensor(tuple(sz.dim(d) for d in out.dims), lambda i: x.at(tuple(
        z3.IntVal(0) if ones[k] else i[d] for k, d in enumerate(attrs["dims"]))))


def transpose(sz: Sized, name: str, args: Sequence[STensor], types: Sequence[TensorType],
              out: TensorType, attrs: dict[str, Any]) -> STensor:
    x, perm = args[0], list(attrs["perm"])

    def at(i: Index) -> E:
        src: list[E] = [None] * len(perm)
        for k, p in enumerate(perm):  # result axis k is operand axis perm[k]
            src[p] = i[k]
        return x.at(tuple(src))
    return STensor(tuple(x.dims[p] for p in perm), at)


def reshape(sz: Sized, name: str, args: Sequence[STensor], types: Sequence[TensorType],
            out: TensorType, attrs: dict[str, Any]) -> STensor:
    x, before, after = args[0], types[0].dims, out.dims
    dims = tuple(sz.dim(d) for d in after)
    one = Dim.of(1)
    kept_in = [k for k, d in enumerate(before) if d != one]
    kept_out = [k for k, d in enumerate(after) if d != one]
    if [before[k] for k in kept_in] == [after[k] for k in kept_out]:
        # Only axes of size 1 come or go: the other axes keep their index.
        def squeeze(i: Index) -> E:
            src = [z3.IntVal(0)] * len(before)
            for a, b in zip(kept_in, kept_out, strict=True):
                src[a] = i[b]
            return x.at(tuple(src))
        return STensor(dims, squeeze)

    def row_major(i: Index) -> E:  # the flat position, then the operand's index of it
        flat: E = z3.IntVal(0)
        for k, d in zip(i, dims, strict=True):
            flat = flat * d + k
        src: list[E] = []
        for d in reversed(x.dims):
            src.append(flat % d)
            flat = flat / d
        return x.at(tuple(reversed(src)))
    return STensor(dims, row_major)


def slice_(sz: Sized, name: str, args: Sequence[STensor], types: Sequence[TensorType],
           out: TensorType, attrs: dict[str, Any]) -> STensor:
    x = args[0]
    start, stride = attrs["start"], attrs["stride"]
    size = tuple(sz.dim(d) for d in attrs["size"])
    for n, s, st, d in zip(size, start, stride, x.dims, strict=True):
        sz.valid.append(z3.Or(n == 0, s + (n - 1) * st < d))  # the last read is in range
    return STensor(size, lambda i: x.at(tuple(
        s + k * st for k, s, st in zip(i, start, stride, strict=True))))


def concat(sz: Sized, name: str, args: Sequence[STensor], types: Sequence[TensorType],
           out: TensorType, attrs: dict[str, Any]) -> STensor:
    axis = attrs["axis"]
    dims = tuple(sz.dim(d) for d in out.dims)

    def at(i: Index) -> E:
        offsets, acc = [], z3.IntVal(0)
        for a in args:
            offsets.append(acc)
            acc = acc + a.dims[axis]
        term = None
        for a, off in reversed(list(zip(args, offsets, strict=True))):
            here = a.at((*i[:axis], i[axis] - off, *i[axis + 1:]))
            term = here if term is None else z3.If(i[axis] < off + a.dims[axis], here, term)
        return term
    return STensor(dims, at)


def pad(sz: Sized, name: str, args: Sequence[STensor], types: Sequence[TensorType],
        out: TensorType, attrs: dict[str, Any]) -> STensor:
    x, low, high, mode = args[0], attrs["low"], attrs["high"], attrs["mode"]
    dims = tuple(sz.dim(d) for d in out.dims)
    for n, lo, hi in zip(x.dims, low, high, strict=True):
        if lo + hi and mode == "edge":
            sz.valid.append(n > 0)
        if lo + hi and mode == "reflect":
            sz.valid.append(max(lo, hi) < n)
    fill = const(attrs["value"], out.dtype, sz.ctx.mode)

    def at(i: Index) -> E:
        src = tuple(k - lo for k, lo in zip(i, low, strict=True))
        if mode == "constant":
            return z3.If(in_range(src, x.dims), x.at(src), fill)
        if mode == "edge":
            return x.at(tuple(z3.If(j < 0, 0, z3.If(j >= n, n - 1, j))
                              for j, n in zip(src, x.dims, strict=True)))
        return x.at(tuple(z3.If(j < 0, -j, z3.If(j >= n, 2 * (n - 1) - j, j))  # reflect
                          for j, n in zip(src, x.dims, strict=True)))
    return STensor(dims, at)


def gather(sz: Sized, name: str, args: Sequence[STensor], types: Sequence[TensorType],
           out: TensorType, attrs: dict[str, Any]) -> STensor:
    x, idx = args
    axis, r = attrs["axis"], len(idx.dims)
    n = x.dims[axis]
    signed = types[1].dtype.is_signed
    sz.valid.append(z3.Or(n > 0, z3.Or(*[d == 0 for d in idx.dims]) if idx.dims else False))

    def at(o: Index) -> E:
        k = z3.BV2Int(idx.at(o[axis:axis + r]), is_signed=signed)
        clipped = z3.If(k < 0, 0, z3.If(k >= n, n - 1, k))  # np.take's mode="clip"
        return x.at((*o[:axis], clipped, *o[axis + r:]))
    return STensor(tuple(sz.dim(d) for d in out.dims), at)


def _masked(sz: Sized, x: STensor, dims: Sequence[E], index: Callable[[Index], Index],
            dtype: DType) -> E:
    """A z3 array over len(dims) fresh indices: x at index(ks) in range, a fixed value
    outside, so that equal arrays mean equal elements in range."""
    ks = [z3.FreshInt("k") for _ in dims]
    before = (len(sz.ctx.domain), len(sz.ctx.facts), len(sz.valid))
    body = z3.If(in_range(tuple(ks), dims), x.at(index(tuple(ks))),
                 const(0, dtype, sz.ctx.mode))
    if (len(sz.ctx.domain), len(sz.ctx.facts), len(sz.valid)) != before:
        # a partial or uninterpreted op inside the lambda: its conditions would name the
        # lambda's bound index outside it
        raise Unsupported("an op under a reduction needs conditions per element")
    return z3.Lambda(ks, body)


def _order_free(dtype: DType, kind: str, mode: str) -> bool:
    return not dtype.is_float or mode == "real" or kind in ("max", "min")


def _one(sz: Sized, kind: str, dtype: DType, e: E) -> E:
    """A reduction of one element (or over no axes): NumPy starts a float sum at +0.0
    (sum([-0.0]) is 0.0)."""
    if kind == "sum" and dtype.is_float and sz.ctx.mode == "fp":
        return z3.fpAdd(z3.RNE(), const(0.0, dtype, "fp"), e)
    return e


def reduction(sz: Sized, name: str, args: Sequence[STensor], types: Sequence[TensorType],
              out: TensorType, attrs: dict[str, Any]) -> STensor:
    x, t = args[0], types[0]
    if t.dtype is DType.I1:
        raise Unsupported(f"{name} on i1")
    kind, rank = name.removeprefix("reduce_"), len(x.dims)
    axes = sorted(a % rank for a in attrs["axes"]) if rank else []
    keep = attrs["keepdims"]
    dims = tuple(sz.dim(d) for d in out.dims)
    if not axes:  # NumPy still starts a float sum at +0.0: sum(-0.0, axis=()) is 0.0
        return STensor(dims, lambda o: _one(sz, kind, t.dtype, x.at(o)))
    sort = sort_of(t.dtype, sz.ctx.mode)
    kept = [a for a in range(rank) if a not in axes]

    def source(o: Index) -> list[E | None]:  # the operand's index, reduced axes still open
        src: list[E | None] = [None] * rank
        outer = [o[a] for a in kept] if keep else list(o)
        for a, v in zip(kept, outer, strict=True):
            src[a] = v
        return src

    if _order_free(t.dtype, kind, sz.ctx.mode):
        red = [x.dims[a] for a in axes]
        f = sz.fold(name, z3.ArraySort(*([z3.IntSort()] * len(axes)), sort),
                    *([z3.IntSort()] * len(axes)), sort)

        def at(o: Index) -> E:
            src = source(o)

            def fill(ks: Index) -> Index:
                full = list(src)
                for a, k in zip(axes, ks, strict=True):
                    full[a] = k
                return tuple(full)
            arr = _masked(sz, x, red, fill, t.dtype)
            r = f(arr, *red)
            first = _one(sz, kind, t.dtype, x.at(fill(tuple(z3.IntVal(0) for _ in axes))))
            sz.ctx.facts.append(z3.Implies(z3.And(*[n == 1 for n in red]), r == first))
            return r
        return STensor(dims, at)
    # A float sum or product in IEEE arithmetic: a function of the whole operand and of the
    # kept axes' index (keepdims only adds axes of size 1 to the same values).
    arr = _masked(sz, x, x.dims, lambda ks: ks, t.dtype)
    g = sz.fold(f"{name}{axes}", z3.ArraySort(*([z3.IntSort()] * rank), sort),
                *([z3.IntSort()] * (2 * rank - len(axes))), sort)

    def whole(o: Index) -> E:
        r = g(arr, *x.dims, *([o[a] for a in kept] if keep else o))
        src = [z3.IntVal(0) if e is None else e for e in source(o)]
        sz.ctx.facts.append(z3.Implies(z3.And(*[x.dims[a] == 1 for a in axes]),
                                       r == _one(sz, kind, t.dtype, x.at(tuple(src)))))
        return r
    return STensor(dims, whole)


def matmul(sz: Sized, name: str, args: Sequence[STensor], types: Sequence[TensorType],
           out: TensorType, attrs: dict[str, Any]) -> STensor:
    a, b = args
    dt = types[0].dtype
    dims = tuple(sz.dim(d) for d in out.dims)
    sort = sort_of(dt, sz.ctx.mode)
    if not _order_free(dt, "sum", sz.ctx.mode):  # BLAS's order: a function of both operands
        aa = _masked(sz, a, a.dims, lambda ks: ks, dt)
        bb = _masked(sz, b, b.dims, lambda ks: ks, dt)
        r = len(a.dims)
        g = sz.fold(f"matmul{r}", z3.ArraySort(*([z3.IntSort()] * r), sort),
                    z3.ArraySort(*([z3.IntSort()] * r), sort), *([z3.IntSort()] * (3 * r)),
                    sort)
        return STensor(dims, lambda o: g(aa, bb, *a.dims, *b.dims, *o))
    mul = SCALAR_FORMULAS["mul"]
    k = a.dims[-1]
    f = sz.fold("reduce_sum", z3.ArraySort(z3.IntSort(), sort), z3.IntSort(), sort)

    def at(o: Index) -> E:  # a sum over k of the rounded products, in any order
        batch, i, j = o[:-2], o[-2], o[-1]
        prods = STensor((k,), lambda m: mul(sz.ctx, [a.at((*batch, i, m[0])),
                                                     b.at((*batch, m[0], j))], [dt, dt], dt, {}))
        r = f(_masked(sz, prods, (k,), lambda m: m, dt), k)
        sz.ctx.facts.append(z3.Implies(k == 1, r == prods.at((z3.IntVal(0),))))
        return r
    return STensor(dims, at)


INDEX_FORMULAS: dict[str, SymFn] = {
    **{name: elementwise for name in SCALAR_FORMULAS},
    "splat": constant, "dense": constant, "iota": iota, "load": identity, "kernel": identity,
    "broadcast": broadcast, "transpose": transpose, "reshape": reshape, "slice": slice_,
    "concat": concat, "pad": pad, "gather": gather,
    **{f"reduce_{k}": reduction for k in ("sum", "prod", "max", "min")},
    "matmul": matmul, "load_matmul": matmul,
    "load_matmul_rows": regrouped_matmul(reshape, matmul),
}
