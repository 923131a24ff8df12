"""The TCP op table: every op defined once; every stage of tcp-rules reads it from here."""

from __future__ import annotations

from tcp_rules.ops.core import (
    AttrKind,
    Attrs,
    AttrSpec,
    CostFormula,
    OpCost,
    OpDef,
    ShapeError,
    Traits,
    identity_value,
)
from tcp_rules.ops.elementwise import ELEMENTWISE_OPS
from tcp_rules.ops.fusion import FUSION_OPS, IDENTITY_OPS, MATMULS
from tcp_rules.ops.linalg import LINALG_OPS
from tcp_rules.ops.movement import MOVEMENT_OPS
from tcp_rules.ops.pad import PAD_OPS

OPS: dict[str, OpDef] = {op.name: op for op in (*ELEMENTWISE_OPS, *MOVEMENT_OPS, *PAD_OPS,
                                                  *LINALG_OPS, *FUSION_OPS)}


def get_op(name: str) -> OpDef | None:
    """The op named ``name``, or None."""
    return OPS.get(name)


__all__ = ["IDENTITY_OPS", "MATMULS", "OPS", "AttrKind", "AttrSpec", "Attrs", "CostFormula",
           "OpCost", "OpDef", "ShapeError", "Traits", "get_op", "identity_value"]
