"""The kernels a program compiles to: what each computes, its estimated and measured time.

``tcpr opt --emit kernels`` prints them (the loop nests, by lowering only: nothing is compiled);
``tcpr opt --json`` lists them per func, and with ``--run`` times each one on random inputs.
The estimate is the cost model's for the kernel (extract/cost.py, with the symbols bound as the
inputs bind them); the measurement is the median over runs of that kernel alone.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from tcp_rules.codegen.kernel import kernel_text
from tcp_rules.codegen.lower import lower_func
from tcp_rules.codegen.plan import Plan, Step
from tcp_rules.extract.cost import CostModel
from tcp_rules.extract.decode import kernel_costs
from tcp_rules.ir import Apply, Func, Value
from tcp_rules.ops import IDENTITY_OPS
from tcp_rules.sorts import Sort


@dataclass
class KernelInfo:
    """One loop nest of a compiled program."""

    name: str
    ops: list[str]  # the program's ops it computes, operands first (load/kernel left out)
    reads: list[str]  # parameters by name, intermediate buffers as t<N>
    writes: str  # the type it writes (types, where it writes several)
    estimated_us: float | None  # None: materialized by the code generator, not by the program
    text: str  # the loop nest (codegen/kernel.py's canonical text)
    measured_us: float | None = None

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "ops": self.ops, "reads": self.reads, "writes": self.writes,
                "estimated_us": _round(self.estimated_us),
                "measured_us": _round(self.measured_us)}


def _round(x: float | None) -> float | None:
    return None if x is None else round(x, 3)


def _ops(step: Step, own: set[Value]) -> list[str]:
    """The ops a step computes: its values and every operand not written by another step."""
    mine = step.values
    if not mine:
        return ["copy"]
    out: list[str] = []
    seen: set[Value] = set()

    def walk(v: Value) -> None:
        if v in seen or not isinstance(v, Apply) or (v in own and v not in mine):
            return
        seen.add(v)
        if v.op.name == "load_matmul" or v.op.name == "matmul":
            out.append(v.op.name)  # its operands are read from memory
            return
        if v.op.name == "load_matmul_rows":  # its A is computed in the kernel
            walk(v.operands[0])
            out.append(v.op.name)
            return
        for o in v.operands:
            walk(o)
        if v.op.name not in IDENTITY_OPS and v.op.category != "constant":
            out.append(v.op.name)
    for v in mine:
        walk(v)
    return out


def _buffer_name(plan: Plan, i: int) -> str:
    b = plan.buffers[i]
    if b.kind == "param":
        assert b.param is not None
        return plan.func.params[b.param].param
    return "const" if b.kind == "const" else f"t{i}"


def kernel_infos(func: Func, model: CostModel, inputs: Sequence[np.ndarray] | None = None,
                 repeats: int = 5) -> list[KernelInfo]:
    """The kernels of ``func``; with ``inputs``, each timed (compiling them first)."""
    plan = lower_func(func)
    costs = kernel_costs(func, model)
    own = {v for st in plan.steps for v in st.values}
    infos = []
    for st in plan.steps:
        # the cost model's estimates of the values it computes (the fused steps' summed)
        ests = [costs[v] for v in st.values if v.sort is not Sort.BODY and v in costs]
        est = sum(ests) if ests else None
        written = st.outputs  # (several: sibling products)
        outs = [plan.buffers[i] for i in written]
        infos.append(KernelInfo(
            st.kernel.name, _ops(st, own),
            [_buffer_name(plan, i) for i in st.buffers if i not in written],
            ", ".join(f"{o.dtype}[{', '.join(map(str, o.dims))}]" for o in outs),
            None if est is None else est / 1e3, kernel_text(st.kernel)))
    if inputs is not None:
        from tcp_rules.codegen.runtime import CompiledFunc

        times = CompiledFunc(func, plan).profile(*inputs, repeats=repeats)
        for info, t in zip(infos, times, strict=True):
            info.measured_us = t * 1e6
    return infos


def format_kernels(func: Func, infos: Sequence[KernelInfo]) -> str:
    """The kernels as text: a header per kernel, then its loop nest."""
    n_ops = sum(1 for v in func.ops() if v.op.name not in IDENTITY_OPS
                and v.op.category != "constant")
    lines = [f"# func {func.name}: {len(infos)} kernel(s) for {n_ops} op(s)"]
    for k in infos:
        est = f"estimated {k.estimated_us:.3f} us" if k.estimated_us is not None else \
            "not in the program (materialized by the code generator)"
        meas = f", measured {k.measured_us:.3f} us" if k.measured_us is not None else ""
        lines.append(f"kernel {k.name}: {', '.join(k.ops)}")
        lines.append(f"  reads {', '.join(k.reads) or 'nothing'}; writes {k.writes}; "
                     f"{est}{meas}")
        lines += ["  " + line for line in k.text.rstrip().splitlines()]
    return "\n".join(lines)
