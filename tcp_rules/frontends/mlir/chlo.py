"""The ``chlo`` ops JAX's StableHLO uses that map to TCP: ``chlo.erf`` is ``erf``;
``chlo.erfc`` (exact GELU) is read as ``1 - erf(x)``, which is within an ulp of 1 of erfc but
loses its relative accuracy where erfc(x) is tiny (x above about 3); ``chlo.square`` (``jnp.var``)
is ``x * x``. Other chlo ops are refused by name."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from tcp_rules.build import Literal
from tcp_rules.frontends.mlir.importer import FuncContext, Handler, Result
from tcp_rules.frontends.mlir.stablehlo_movement import declared, operands
from tcp_rules.frontends.mlir.syntax import Op
from tcp_rules.frontends.mlir.views import view


def _erf(ctx: FuncContext, op: Op) -> Sequence[Result]:
    v = view(op)
    return [ctx.apply("erf", operands(ctx, v, 1), {}, op, declared(v))]


def _erfc(ctx: FuncContext, op: Op) -> Sequence[Result]:
    v = view(op)
    erf = ctx.apply("erf", operands(ctx, v, 1), {}, op)
    return [ctx.apply("sub", [Literal(1), erf], {}, op, declared(v))]


def _square(ctx: FuncContext, op: Op) -> Sequence[Result]:
    v = view(op)
    (x,) = operands(ctx, v, 1)
    return [ctx.apply("mul", [x, x], {}, op, declared(v))]


OPS: Mapping[str, Handler] = {"chlo.erf": _erf, "chlo.erfc": _erfc, "chlo.square": _square}
