"""Loop scopes of a kernel body: which loop each node belongs to, and kernel validation.

A node is emitted in the innermost loop whose index it uses, so loop-invariant work (a row
reduction in a softmax, a bias load) is hoisted out of inner loops. Reductions bind their own
loop indices under the loop where they are hoisted to; an index used outside its reduction, or
indices of two unrelated loops in one node, make the kernel malformed (KernelError).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tcp_rules.codegen.kernel import (
    Affine,
    Kernel,
    Load,
    Node,
    Reduce,
    children,
    index_affines,
    walk,
)


class KernelError(ValueError):
    """A malformed kernel (a bug in lowering or in a hand-built kernel)."""


@dataclass
class Scopes:
    """Loop nesting: each loop variable's parent loop, and each node's innermost loop."""

    parent: dict[str, str | None] = field(default_factory=dict)
    depth: dict[str, int] = field(default_factory=dict)
    deps: dict[Node, frozenset[str]] = field(default_factory=dict)

    def add(self, var: str, parent: str | None) -> None:
        if var in self.parent:
            raise KernelError(f"loop variable {var} is bound twice")
        self.parent[var] = parent
        self.depth[var] = 0 if parent is None else self.depth[parent] + 1

    def innermost(self, deps: frozenset[str]) -> str | None:
        if not deps:
            return None
        unknown = deps - self.parent.keys()
        if unknown:
            raise KernelError(f"loop variable {sorted(unknown)[0]} is used outside its loop")
        deepest = max(deps, key=lambda v: self.depth[v])
        chain: set[str] = set()
        v: str | None = deepest
        while v is not None:
            chain.add(v)
            v = self.parent[v]
        if not deps <= chain:
            raise KernelError(f"loop variables {sorted(deps)} do not lie on one loop nest")
        return deepest


def index_vars(n: Node) -> frozenset[str]:
    """The loop variables the affine indices of a load (or a pad's index nodes) use."""
    return frozenset(v for i in index_affines(n) for v, _ in i.vars)


def compute_scopes(root: Node, domain_vars: list[str]) -> Scopes:
    """Bind loop variables (domain first, then each reduction under its hoisted position)."""
    sc = Scopes()
    for i, v in enumerate(domain_vars):
        sc.add(v, domain_vars[i - 1] if i else None)
    order = list(walk(root))
    for n in order:  # operands first: dependency sets bottom-up
        d = index_vars(n).union(*(sc.deps[c] for c in children(n)))
        if isinstance(n, Reduce):
            d = d - {v for v, _ in n.vars}
        sc.deps[n] = d
    for n in reversed(order):  # users first: an outer reduction binds its loops first
        if isinstance(n, Reduce):
            where = sc.innermost(sc.deps[n])
            for v, _ in n.vars:
                sc.add(v, where)
                where = v
    for n in order:
        sc.innermost(sc.deps[n])  # validates every node's loop nest
    for r in order:  # a reduction's indices are visible only inside its body
        if isinstance(r, Reduce):
            inside = {id(x) for x in walk(r.body)}
            own = {v for v, _ in r.vars}
            if any(sc.deps[n] & own for n in order if id(n) not in inside):
                raise KernelError(f"an index of reduce_{r.kind} over {sorted(own)} is used "
                                  f"outside the reduction")
    extra = sc.deps[root] - set(domain_vars)
    if extra:
        raise KernelError(f"the kernel's value depends on loop variables {sorted(extra)}")
    return sc


def needs_tiling(k: Kernel) -> bool:
    """A kernel without reductions that reads some input transposed: the innermost loop index
    moves along a non-contiguous axis."""
    if len(k.domain) < 2:
        return False
    inner = f"d{len(k.domain) - 1}"
    transposed = False
    for n in walk(k.value):
        if isinstance(n, Reduce):
            return False
        if isinstance(n, Load):
            ix = n.index
            transposed |= any(isinstance(a, Affine) and a.coeff(inner) for a in ix[:-1])
    return transposed
