"""Proof verdicts as text (counterexamples at the rule's file:line:col, printed like the
tester's), as a summary table per file, as one table beside the tester's verdicts, and as JSON."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from tcp_rules.prove.prover import ProofVerdict
from tcp_rules.verify.checker import Verdict
from tcp_rules.verify.report import format_case, format_verdict, verdict_json

JSON_SCHEMA_VERSION = 1


def scope(v: ProofVerdict) -> str:
    """Where a proof holds: 'all shapes', 'for rank <= 3, every size, ...' or 'up to <bound>'."""
    if v.bound is None:
        return "all shapes"
    if v.bound.startswith("except"):
        return f"all shapes {v.bound}"
    return f"for {v.bound}" if v.general else f"up to {v.bound}"


def tester_text(t: Verdict | None) -> str:
    if t is None:
        return "not run"
    if t.checked == 0:
        return "no case ran"
    return f"ok ({t.checked} cases)" if t.ok else f"{t.satisfies} ({t.checked} cases)"


def format_proof(v: ProofVerdict) -> str:
    """One verdict, with its counterexample (or the tester's, beside an unknown)."""
    r = v.rule
    stats = f"{v.obligations} instance(s), {v.seconds:.2f} s"
    if v.status == "proved":
        return (f"{r.where}: proved: rule {r.name} is {r.soundness} ({v.how}, {scope(v)}; "
                f"{stats})")
    if v.status == "refuted":
        head = (f"{r.where}: error: rule {r.name} is declared {r.soundness} but is refuted "
                f"({stats}; counterexample confirmed by NumPy)")
        return "\n".join([head, *(format_case(v.counterexample) if v.counterexample else [])])
    head = f"{r.where}: unknown: rule {r.name}: {v.reason} ({stats}); tester: " + tester_text(
        v.tester)
    lines = [head]
    if v.tester is not None and not v.tester.ok and v.tester.counterexample is not None:
        lines += ["  the tester's counterexample:", *format_case(v.tester.counterexample)]
    return "\n".join(lines)


COLUMNS = ("all shapes", "every size", "bounded", "unknown", "refuted")


def summary(verdicts: list[ProofVerdict], seconds: float) -> str:
    """Counts per file (proved for all shapes / for every size at rank <= 3 / at bounded
    sizes; unknown; refuted), the total and slowest times."""
    rows: dict[str, Counter[str]] = {}
    for v in verdicts:
        f = Path(v.rule.span.source.name).name if v.rule.span else "?"
        rows.setdefault(f, Counter())[v.extent or v.status] += 1
    width = max([len(f) for f in rows] + [5])
    total: Counter[str] = Counter()
    for c in rows.values():
        total += c

    def line(name: str, c: Counter[str]) -> str:
        return f"{name:<{width}}  " + "  ".join(f"{c[k]:>{len(k)}}" for k in COLUMNS)
    lines = [f"{'file':<{width}}  " + "  ".join(COLUMNS)]
    lines += [line(f, c) for f, c in rows.items()] + [line("total", total)]
    strict = [v for v in verdicts if v.rule.soundness.kind in ("exact", "assumes")]
    done = sum(v.status == "proved" for v in strict)
    if strict:
        lines.append(f"exact and assumes rules proved: {done} of {len(strict)} "
                     f"({100 * done / len(strict):.0f}%)")
    if verdicts:
        slow = max(verdicts, key=lambda v: v.seconds)
        lines.append(f"{len(verdicts)} rules in {seconds:.1f} s; slowest {slow.rule.name} "
                     f"({slow.seconds:.1f} s)")
    return "\n".join(lines)


def table(proofs: list[ProofVerdict], tests: list[Verdict]) -> str:
    """``tcpr verify --prove``: one row per rule, proof and test side by side."""
    head = ("rule", "class", "proof", "bound", "test", "time")
    rows = [(p.rule.name, str(p.rule.soundness), p.status,
             "all shapes" if p.bound is None or p.status != "proved" else p.bound,
             tester_text(t), f"{p.seconds:.2f} s") for p, t in zip(proofs, tests, strict=True)]
    widths = [min(max(len(r[i]) for r in [head, *rows]), 44) for i in range(len(head))]
    out = ["  ".join(h.ljust(w) for h, w in zip(head, widths, strict=True)).rstrip()]
    out += ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    return "\n".join(out)


def proof_json(v: ProofVerdict) -> dict[str, Any]:
    c = None
    if v.counterexample is not None:
        c = verdict_json(Verdict(v.rule, "unsound", 1, v.counterexample))["counterexample"]
    return {"rule": v.rule.name, "location": v.rule.where, "declared": v.rule.soundness.kind,
            "precondition": (str(v.rule.soundness) if v.rule.soundness.kind == "assumes"
                             else None),
            "status": v.status, "how": v.how or None, "bound": v.bound,
            "extent": v.extent or None,
            "instances": v.obligations, "seconds": round(v.seconds, 3),
            "reason": v.reason or None, "uninterpreted": v.uninterpreted,
            "counterexample": c,
            "tester": None if v.tester is None else verdict_json(v.tester)}


def report_json(verdicts: list[ProofVerdict], timeout: float) -> dict[str, Any]:
    return {"schema": JSON_SCHEMA_VERSION, "timeout": timeout,
            "ok": all(v.status != "refuted" for v in verdicts),
            "rules": [proof_json(v) for v in verdicts]}


__all__ = ["format_proof", "format_verdict", "proof_json", "report_json", "summary", "table"]
