"""Synthetic e-graphs for testing and benchmarking extraction at scale, built directly as
:class:`Snapshot` objects (no egglog, no rules): a layered DAG of elementwise ops shaped like
what saturation makes of a program with fusion rules."""

from __future__ import annotations

import numpy as np

from tcp_rules.extract.snapshot import EClass, ENode, Snapshot
from tcp_rules.ops import OPS
from tcp_rules.sorts import Sort
from tcp_rules.types import TensorType

BINARY = ("add", "mul", "sub", "max")


def layered_snapshot(enodes: int = 100_000, width: int = 64, seed: int = 0) -> Snapshot:
    """An e-graph of about ``enodes`` e-nodes: ``width`` parameters, then layers of ``width``
    tensor classes each, every one an op of operands near it in the layer below (sometimes a
    skip connection further down), with alternatives as saturation finds them:

    - the op at tensor level, and the same op with its operands commuted;
    - ``kernel(b)``, ``b`` a body class holding the op of ``load``\\ ed operands, commuted, and
      fused with an operand's own body (recomputed there instead of read from memory);
    - for one class in eight, a cycle ``t = neg(neg(t))``.

    The roots are the last layer's classes. Every class has type f32[N, 64].
    """
    rng = np.random.default_rng(seed)
    ty = TensorType.of("f32", ["N", 64])
    classes: dict[int, EClass] = {}

    count = 0

    def new(sort: Sort, *nodes: ENode) -> int:
        nonlocal count
        c = EClass(len(classes), ty, list(nodes), sort)
        classes[c.id] = c
        count += len(nodes)
        return c.id

    def node(op: str, *kids: int) -> ENode:
        return ENode(OPS[op], kids)

    layers = [[new(Sort.TENSOR, ENode(None, (), (), f"p{j}")) for j in range(width)]]
    loads: dict[int, int] = {}  # tensor class -> its load(...) body class
    bodies: dict[int, int] = {}  # tensor class -> the body class it is the kernel of

    def load(t: int) -> int:
        if t not in loads:
            loads[t] = new(Sort.BODY, node("load", t))
        return loads[t]

    while count < enodes:
        below, layer = layers[-1], []
        for j in range(width):
            a = below[(j + int(rng.integers(-2, 3))) % width]
            skip = rng.random() < 0.1 and len(layers) > 2
            src = layers[int(rng.integers(0, len(layers) - 1))] if skip else below
            b = src[(j + int(rng.integers(-2, 3))) % width]
            op = BINARY[int(rng.integers(len(BINARY)))]
            body_nodes = [node(op, load(a), load(b)), node(op, load(b), load(a))]
            if a in bodies:  # fuse the operand's producer into this kernel
                body_nodes.append(node(op, bodies[a], load(b)))
            body = new(Sort.BODY, *body_nodes)
            t = new(Sort.TENSOR, node(op, a, b), node(op, b, a), node("kernel", body))
            bodies[t] = body
            if rng.random() < 1 / 8:
                neg = new(Sort.TENSOR, node("neg", t))
                classes[t].nodes.append(node("neg", neg))
                count += 1
            layer.append(t)
        layers.append(layer)
    return Snapshot(classes, list(layers[-1]))
