"""Which rows the helper tables need, derived from one program and the rules loaded with it.

egglog has no primitive for a permutation's inverse, for sorting a list or for removing
positions from one, so the encoder looks these up in tables (``inverse``, ``reduced-perm``,
``sorted``, ``axis-set``, ``keep-sel``, ``reduce-sel``, ``iota``, ``zeros``; schema.tables writes
the rows). Every lookup sits in a rule's query, so a missing row only means that the rule does
not match there: the tables may be partial. Rows for every permutation of the largest rank and
every list of distinct axes were tens of thousands at rank 6 (seconds to load) and millions at
rank 8; these tables hold what the program and the rules can reach instead:

- permutations, per rank: those of the program's transposes, the literal ones the rules build
  (of ranks the program has), and those the reduce-transpose rules make (``reduced_perm``),
  closed under composition and inversion (``compose`` and ``inverse`` are what rules compute
  from them). A closure larger than PERM_CAP is replaced by the identity, the generators, their
  inverses and pairwise products (up to FALLBACK_CAP): a rule that needs the inverse of a longer
  product then does not fire.
- reduction axes, per operand rank: those of the program's reductions and the literal ones the
  rules build, their images under those permutations (``take(p, a)``, reduce-transpose) and the
  merged axes of nested reductions (``cat(a, take(remove(range(r), a), b))``, reduce-sum-sum),
  up to LIST_CAP lists per rank. ``sorted`` and ``reduce-sel`` get rows for these,
  ``reduced-perm`` for each with each permutation (up to REDUCED_PERM_CAP, the program's
  permutations first), ``axis-set`` for each and each with one axis appended
  (``remove(s, cat(a, [c]))``, reduce-sum-concat).
- axis subsets: every subset up to rank FULL_SUBSET_RANK; above it, at ranks the program has,
  the empty and full sets, singletons and their complements, prefixes (``remove(s, range(k))``)
  and the sets of the lists above. ``keep-sel`` and ``reduce-sel`` get a row for each, ``sorted``
  and ``axis-set`` one for each as a sorted list.
- broadcast dims, per result rank: the program's and the literal ones rules build, closed under
  transpose-broadcast (a sorted image under a permutation) and broadcast-broadcast
  (``take(d2, d1)``). ``is_sorted`` only holds on sorted lists, so ``sorted`` needs rows for
  these (sorted) dims and for no unsorted image; they matter above FULL_SUBSET_RANK.
- ``iota`` and ``zeros`` for every rank up to the largest.

A rule computing some other list (``sort`` of an arbitrary list, the inverse of a permutation
it builds itself) may find no row, and then does not fire.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from tcp_rules.ir import Func
from tcp_rules.rules.model import ABin, AConst, AFn, AList, AttrExpr, Pattern, POp, Rule

Perm = tuple[int, ...]
Axes = tuple[int, ...]

PERM_CAP = 120  # 5!: every group of permutations of rank 5 or less is kept whole
FALLBACK_CAP = 4 * PERM_CAP
LIST_CAP = 256  # reduction axes lists (and broadcast dims) per rank
REDUCED_PERM_CAP = 1024  # reduced-perm rows per rank: permutations x reduced axis sets
FULL_SUBSET_RANK = 6  # 64 subsets: 2^r rows per table beyond would dominate at rank 10+
PASSES = 8  # ranks feed each other (reduced perms down, merged axes up); caps bound the sets


def compose(p: Perm, q: Perm) -> Perm:
    """The permutation of transpose(transpose(x, perm=p), perm=q): p[q[i]]; also take(p, q)."""
    return tuple(p[i] for i in q)


def inverse(p: Perm) -> Perm:
    """The inverse permutation of ``p``."""
    inv = [0] * len(p)
    for i, v in enumerate(p):
        inv[v] = i
    return tuple(inv)


def reduced_perm(p: Perm, axes: Iterable[int]) -> Perm:
    """The permutation left when result axes ``axes`` of transpose(x, perm=p) are reduced."""
    gone = {p[a] for a in axes}
    kept = [v for v in p if v not in gone]
    order = {v: i for i, v in enumerate(sorted(kept))}
    return tuple(order[v] for v in kept)


def axis_set(a: Iterable[int]) -> Axes:
    """A list of axes as the sorted set of its entries."""
    return tuple(sorted(set(a)))


def _is_perm(p: object) -> bool:
    return isinstance(p, tuple) and sorted(p) == list(range(len(p)))


def _axes_of(r: int, a: Axes) -> bool:
    """Are ``a`` distinct axes of a rank-``r`` tensor?"""
    return len(set(a)) == len(a) and all(0 <= i < r for i in a)


# Sets that keep their insertion order (the program's own entries first, so that caps cut the
# derived ones), as dicts with None values.
Ordered = dict[tuple[int, ...], None]


@dataclass
class TableNeeds:
    """What the helper tables must cover (see the module docstring)."""

    max_rank: int = 1
    ranks: set[int] = field(default_factory=set)  # of the program's values
    perms: dict[int, Ordered] = field(default_factory=dict)  # by rank
    reductions: dict[int, Ordered] = field(default_factory=dict)  # axes, by operand rank
    broadcasts: dict[int, Ordered] = field(default_factory=dict)  # dims, by result rank
    literals: set[Axes] = field(default_factory=set)  # int lists written in the rules

    def subsets(self, r: int) -> set[Axes]:
        """The axis subsets of rank ``r`` the tables cover, as sorted tuples."""
        if r <= FULL_SUBSET_RANK:
            return {c for n in range(r + 1) for c in itertools.combinations(range(r), n)}
        if r not in self.ranks:  # no tensor of this rank: no list of this length to index
            return set()
        small = {(), *((i,) for i in range(r))}
        out = small | {axis_set(set(range(r)) - set(c)) for c in small}
        out |= {tuple(range(k)) for k in range(r + 1)}
        out |= {axis_set(a) for a in self.reductions.get(r, ())}
        out |= set(self.broadcasts.get(r, ()))
        return out | {axis_set(a) for a in self.literals if _axes_of(r, a)}

    def removals(self, r: int) -> set[Axes]:
        """Position lists ``remove`` may get at rank ``r``: the sorted subsets, the reduction
        axes, and those with one axis appended (``cat(a, [c])``, c maybe already in a)."""
        axes = self.reductions.get(r, {})
        return ({*self.subsets(r), *axes}
                | {(*a, c) for a in axes for c in range(r)}
                | {a for a in self.literals if all(0 <= i < r for i in a)})

    def reduced_pairs(self, r: int) -> list[tuple[Perm, Axes]]:
        """The (permutation, sorted axes) arguments of reduced-perm rows at rank ``r``: the
        program's permutations first, up to REDUCED_PERM_CAP."""
        sets = list(dict.fromkeys(axis_set(a) for a in self.reductions.get(r, ())))
        pairs = ((p, s) for p in self.perms.get(r, ()) for s in sets)
        return list(itertools.islice(pairs, REDUCED_PERM_CAP))

    def size(self) -> int:
        """How many entries the sets hold (the fixpoint's test; a measure in tests)."""
        return sum(len(s) for d in (self.perms, self.reductions, self.broadcasts)
                   for s in d.values()) + len(self.literals)


def needed(func: Func, rules: Iterable[Rule]) -> TableNeeds:
    """The tables ``func`` needs with ``rules``: see the module docstring."""
    ranks = {v.type.rank for v in func.values()}
    needs = TableNeeds(max(ranks | {1}), ranks)
    gens: dict[int, Ordered] = {}
    for v in func.ops():
        attrs = dict(v.attrs)
        if v.op.name == "transpose":
            gens.setdefault(len(attrs["perm"]), {})[tuple(attrs["perm"])] = None
        elif v.op.category == "reduce":
            r = v.operands[0].type.rank
            needs.reductions.setdefault(r, {})[tuple(attrs["axes"])] = None
        elif v.op.name == "broadcast":
            needs.broadcasts.setdefault(v.type.rank, {})[tuple(attrs["dims"])] = None
    lits = _RuleLiterals(rules)
    for p in sorted(lits.perms):
        if len(p) in ranks:
            gens.setdefault(len(p), {})[p] = None
    for r in sorted(ranks):  # a rule's literal axes or dims apply to any rank they fit
        for a in sorted(lits.axes):
            needs.reductions.setdefault(r, {})[a] = None
        for d in sorted(lits.dims):
            needs.broadcasts.setdefault(r, {})[d] = None
    needs.literals = {a for a in lits.lists if len(set(a)) == len(a)}
    for table in (needs.reductions, needs.broadcasts):
        for r, lists in list(table.items()):
            table[r] = {a: None for a in lists if _axes_of(r, a)}
    _close(needs, gens)
    return needs


def _close(needs: TableNeeds, gens: dict[int, Ordered]) -> None:
    """Fill in permutations and reduction axes, rank by rank from the largest: a reduction of
    rank r of a transpose makes a permutation of a lower rank (reduced_perm), and merged
    nested reductions read the axes of lower ranks."""
    for _ in range(PASSES):
        before = needs.size() + sum(len(g) for g in gens.values())
        for r in sorted(set(gens) | set(needs.reductions), reverse=True):
            needs.perms[r] = _group(list(gens.get(r, ())))
            needs.reductions[r] = _close_axes(r, needs)
            for p, s in needs.reduced_pairs(r):
                if 0 < len(s) < r:  # a new permutation of a lower rank
                    q = reduced_perm(p, s)
                    gens.setdefault(len(q), {})[q] = None
        if needs.size() + sum(len(g) for g in gens.values()) == before:
            break
    for r in sorted(needs.broadcasts):
        needs.broadcasts[r] = _close_dims(r, needs)


def _group(gens: list[Perm]) -> Ordered:
    """The group ``gens`` generate, or if it has more than PERM_CAP elements the fallback: the
    identity, the generators, their inverses and pairwise products, up to FALLBACK_CAP."""
    if not gens:
        return {}
    group: Ordered = {tuple(range(len(gens[0]))): None}
    frontier = list(group)
    while frontier:  # products with generators reach the whole (finite) group
        new = []
        for g in frontier:
            for s in gens:
                h = compose(g, s)
                if h not in group:
                    if len(group) >= PERM_CAP:
                        return _fallback(gens)
                    group[h] = None
                    new.append(h)
        frontier = new
    return group


def _fallback(gens: list[Perm]) -> Ordered:
    """What stands for a group too large to list: see _group."""
    out: Ordered = {tuple(range(len(gens[0]))): None}
    for p in gens:  # a permutation with its inverse, so that the set stays closed
        out.update({p: None, inverse(p): None})
    base = list(out)[:FALLBACK_CAP]
    for p, q in itertools.product(base, base):
        if len(out) >= FALLBACK_CAP:
            break
        out.update({compose(p, q): None, inverse(compose(p, q)): None})
    return dict.fromkeys(list(out)[:FALLBACK_CAP])


def _close_axes(r: int, needs: TableNeeds) -> Ordered:
    """Reduction axes at operand rank ``r``: the seeds, their images under the permutations
    (take(p, a)) and the merges with the axes of a reduction of the result (rank r - len(a)),
    up to LIST_CAP. An image is not mapped again: under a group an image of an image is an
    image, and a fallback set, which is no group, would otherwise grow lists to the cap."""
    perms = list(needs.perms.get(r, ()))
    out = dict(needs.reductions.get(r, {}))
    images: set[Axes] = set()
    work = list(out)
    while work and len(out) < LIST_CAP:
        a = work.pop(0)
        found = [] if a in images else [compose(p, a) for p in perms]
        images.update(found)
        rest = [i for i in range(r) if i not in a]
        for b in needs.reductions.get(r - len(a), ()):
            if all(i < len(rest) for i in b):
                found.append(a + tuple(rest[i] for i in b))
        for c in found:
            if c not in out and len(out) < LIST_CAP:
                out[c] = None
                work.append(c)
    return out


def _close_dims(r: int, needs: TableNeeds) -> Ordered:
    """Broadcast dims at result rank ``r``: the sorted images under the permutations
    (transpose-broadcast) and compositions take(d2, d1) (broadcast-broadcast), up to
    LIST_CAP."""
    perms = list(needs.perms.get(r, ()))
    out = dict(needs.broadcasts[r])
    work = list(out)
    while work and len(out) < LIST_CAP:
        d = work.pop(0)
        found = [img for p in perms if list(img := compose(p, d)) == sorted(img)]
        found += [compose(d, d1) for d1 in needs.broadcasts.get(len(d), ())]
        for c in found:
            if c not in out and len(out) < LIST_CAP:
                out[c] = None
                work.append(c)
    return out


class _RuleLiterals:
    """The int lists the rules build terms or compute with: the perms of the transposes, the
    axes of the reductions and the dims of the broadcasts they build, the permutations they
    pass to compose, inverse and reduced_perm, and every list in guards and built attributes.
    A matched side's literals only match what is already in the e-graph."""

    def __init__(self, rules: Iterable[Rule]):
        self.perms: set[Perm] = set()
        self.axes: set[Axes] = set()
        self.dims: set[Axes] = set()
        self.lists: set[Axes] = set()
        for rule in rules:
            for _, _, built in rule.directions():
                self._pattern(built)
            for g in (*rule.guards, *rule.soundness.precondition):
                for e in (g.lhs, g.rhs):
                    if e is not None:
                        self._expr(e)

    def _pattern(self, p: Pattern) -> None:
        if not isinstance(p, POp):
            return
        for name, e in p.attrs:
            if e is None:
                continue
            value = _ints(e)
            if value is not None:
                if p.op.name == "transpose" and name == "perm" and _is_perm(value):
                    self.perms.add(value)
                elif p.op.category == "reduce" and name == "axes":
                    self.axes.add(value)
                elif p.op.name == "broadcast" and name == "dims":
                    self.dims.add(value)
            self._expr(e)
        for a in p.args:
            self._pattern(a)

    def _expr(self, e: AttrExpr) -> None:
        value = _ints(e)
        if value is not None:
            self.lists.add(value)
        for sub in _children(e):
            self._expr(sub)
        if isinstance(e, AFn) and e.fn in ("compose", "inverse", "reduced_perm"):
            args = e.args[:1] if e.fn == "reduced_perm" else e.args
            self.perms |= {v for v in map(_ints, args) if v is not None and _is_perm(v)}


def _ints(e: AttrExpr) -> tuple[int, ...] | None:
    """The value of a literal list of ints, else None."""
    if isinstance(e, AConst) and isinstance(e.value, tuple) and all(
            isinstance(x, int) and not isinstance(x, bool) and x >= 0 for x in e.value):
        return tuple(e.value)
    return None


def _children(e: AttrExpr) -> Iterator[AttrExpr]:
    if isinstance(e, AFn):
        yield from e.args
    elif isinstance(e, AList):
        yield from e.items
    elif isinstance(e, ABin):
        yield from (e.lhs, e.rhs)
