"""Which ``load_matmul_rows`` the code generator runs as written: its A computed a block of rows
at a time inside the product's loop nest, never materialized (codegen/chain.py).

The rules ``chain-rows`` are exact for every body, but the code generator runs A inside the
product only where

- A is a *row pass over a product*: a body that reduces, along its last axis, a body that
  computes a ``load_matmul`` or reads one's kernel through views (the softmax of attention's
  scores), then elementwise ops and broadcasts of it; or, without a batch, the
  ``load_matmul_rows`` of such a row pass (a single head's P V, whose rows a third product,
  the output projection, multiplies in turn);
- the product's N is a constant, and with a batch so are A's sizes (its scratch and the batches'
  strides are laid out when the kernel is compiled);
- the product's own epilogue reads no tensor and reduces nothing: its readers are elementwise
  ops with constants, views, ``kernel``, or a third product of its rows.

Elsewhere it writes A first, which the cost of ``load_matmul_rows`` leaves out. So extraction
never picks one that fails these (choice.node_costs), and a program's cost counts one that
holds anyway as what it runs, ``load_matmul(kernel(a), b)`` (decode.kernel_costs); the
code generator's own conditions are in codegen/rowpass.py and chain.py. In an
e-graph the properties are an e-class's, true when any of its e-nodes has them, so one case
slips through: a fourth product whose A's class also holds a second one (the attention example
at S = 19 takes ((P x) Wv) Wo, as x Wv = V is in that class). The code generator then writes
that A, and the kernel listing shows its step without an estimate.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tcp_rules.types import Dim

ELEMENTWISE = frozenset({"unary", "binary", "compare", "select", "cast"})  # op categories


@dataclass(frozen=True)
class Node[K: Hashable]:
    """One op application: its owner (a value, or an e-class), op, attributes and operands."""

    owner: K
    op: str
    category: str
    attrs: Mapping[str, Any]
    children: tuple[K, ...]


def chained_rows[K: Hashable](nodes: Sequence[Node[K]], is_body: Callable[[K], bool],
                              dims: Callable[[K], tuple[Dim, ...]],
                              is_const: Callable[[K], bool]) -> set[int]:
    """The positions in ``nodes`` of the ``load_matmul_rows`` that the code generator runs as
    written (module docstring)."""
    parents: dict[K, list[Node[K]]] = defaultdict(list)
    for n in nodes:
        for k in n.children:
            parents[k].append(n)

    def spread(seeds: list[K], through: Callable[[Node[K], K], bool],
               bodies: bool = True) -> set[K]:
        found: set[K] = set()
        while seeds:
            k = seeds.pop()
            if k in found or (bodies and not is_body(k)):
                continue
            found.add(k)
            seeds.extend(n.owner for n in parents[k] if through(n, k))
        return found

    def row_reduce(n: Node[K], k: K) -> bool:
        return n.category == "reduce" and tuple(n.attrs["axes"]) == (len(dims(k)) - 1,)

    def reads_product(n: Node[K], k: K) -> bool:
        if is_body(k):  # any op of a body, and the kernel materializing it
            return n.op == "kernel" or is_body(n.owner)
        return n.op in ("reshape", "transpose", "load")  # its views, and reading one

    # bodies that read a product (the row pass's input): computing it, or reading the kernel
    # that does through views (an imported graph's heads split out of the product's batch)
    products = spread([n.owner for n in nodes if n.op in ("load_matmul", "load_matmul_rows")],
                      reads_product, bodies=False)
    passes = spread([n.owner for n in nodes if n.category == "reduce" and n.children[0] in products
                     and row_reduce(n, n.children[0])],
                    lambda n, k: n.category in ELEMENTWISE or n.op == "broadcast"
                    or row_reduce(n, k))

    def plain_readers(k: K) -> bool:  # the product's epilogue loads and reduces nothing
        return not any(
            n.category == "reduce" or (n.category in ELEMENTWISE and any(
                c != k and not is_const(c) for c in n.children))
            or (n.op == "load_matmul_rows" and n.children[0] != k) for n in parents[k])

    def runs(n: Node[K], passes: set[K]) -> bool:
        a, out = n.children[0], dims(n.owner)
        return (a in passes and out[-1].const is not None and plain_readers(n.owner)
                and (len(out) == 2 or all(d.const is not None for d in dims(a))))

    rows = [i for i, n in enumerate(nodes) if n.op == "load_matmul_rows"]
    second = {nodes[i].owner for i in rows if runs(nodes[i], passes)}
    third = {k for k in second if len(dims(k)) == 2}  # a third product: without a batch
    return {i for i in rows if runs(nodes[i], passes | third)}
