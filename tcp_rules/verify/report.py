"""Verdicts as text (with counterexamples at the rule's file:line:col) and as stable JSON."""

from __future__ import annotations

from typing import Any

import numpy as np

from tcp_rules.verify.cases import Case, format_scalar
from tcp_rules.verify.checker import Verdict

JSON_SCHEMA_VERSION = 1


def _array(a: np.ndarray) -> str:
    text = np.array2string(a, threshold=20, edgeitems=3, separator=", ",
                           formatter={"float_kind": format_scalar, "int": str, "bool": str})
    return text.replace("\n", "\n      ")


def format_case(c: Case) -> list[str]:
    way = "left to right" if c.direction == "=>" else "right to left"
    lines = [f"  counterexample ({c.mode} check, {way}):", f"    instance: {c.instance}"]
    if c.sizes:
        lines.append("    sizes: " + ", ".join(f"{k}={v}" for k, v in c.sizes.items()))
    for name, value in c.consts.items():
        lines.append(f"    {name} = splat {value!r}")
    for name, a in c.inputs.items():
        lines.append(f"    {name}: {a.dtype}{list(a.shape)} = {_array(a)}")
    lines.append(f"    left side:  {_array(c.lhs)}")
    lines.append(f"    right side: {_array(c.rhs)}")
    lines.append(f"    {c.mismatch}")
    return lines


def format_verdict(v: Verdict) -> str:
    r = v.rule
    if v.checked == 0:
        return f"{r.where}: error: rule {r.name}: no case could be run (check its guards)"
    if v.ok:
        return f"{r.where}: ok: rule {r.name} is {r.soundness} ({v.checked} cases)"
    worse = "unsound" if v.satisfies == "unsound" else f"only {v.satisfies}"
    pre = " under its precondition" if r.soundness.kind == "assumes" else ""
    head = (f"{r.where}: error: rule {r.name} is declared {r.soundness} but is {worse}{pre} "
            f"({v.checked} cases)")
    return "\n".join([head, *(format_case(v.counterexample) if v.counterexample else [])])


def verdict_json(v: Verdict) -> dict[str, Any]:
    c = v.counterexample
    return {
        "rule": v.rule.name, "location": v.rule.where, "declared": v.declared,
        "precondition": str(v.rule.soundness) if v.declared == "assumes" else None,
        "satisfies": v.satisfies, "ok": v.ok, "cases": v.checked,
        "counterexample": None if c is None else {
            "direction": c.direction, "check": c.mode, "instance": c.instance,
            "sizes": c.sizes, "constants": {k: repr(x) for k, x in c.consts.items()},
            "inputs": {k: {"dtype": str(a.dtype), "shape": list(a.shape),
                           "values": [repr(x) for x in a.ravel().tolist()]}
                       for k, a in c.inputs.items()},
            "left": [repr(x) for x in c.lhs.ravel().tolist()],
            "right": [repr(x) for x in c.rhs.ravel().tolist()],
            "difference": c.mismatch,
        },
    }


def report_json(verdicts: list[Verdict], profile: str, seed: int) -> dict[str, Any]:
    return {"schema": JSON_SCHEMA_VERSION, "profile": profile, "seed": seed,
            "ok": all(v.ok for v in verdicts), "rules": [verdict_json(v) for v in verdicts]}
