"""The run report of an optimization: how the e-graph grew, which rules matched, why it stopped,
and what extraction gained. ``to_json`` has a stable, documented schema (version 1):

    {"schema": 1, "stop_reason": "saturated" | "iteration limit" | "node limit" |
       "time limit" | "error",
     "error": str | null,            # what failed; the original program was kept
     "seconds": float,               # wall time of the whole optimization
     "rules": {"loaded": int, "skipped": [{"rule": str, "reason": str}]},
     "phases": [str],                # each phase's stop reason (saturation phases, in order)
     "iterations": [{"index": int, "phase": int, "enodes": int, "eclasses": int,
                     "seconds": float}],
     "matches": {rule name: int},    # matches per rule, all iterations (reverse: "name<=")
     "extractor": str, "extraction_seconds": float,
     "cost": {"before": float, "after": float},
     "kept_original": bool}           # extraction found nothing cheaper
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

SCHEMA_VERSION = 1


@dataclass
class RunReport:
    stop_reason: str = "not run"
    error: str | None = None
    seconds: float = 0.0
    rules_loaded: int = 0
    rules_skipped: list[tuple[str, str]] = field(default_factory=list)
    iterations: list[dict[str, Any]] = field(default_factory=list)
    phase_stops: list[str] = field(default_factory=list)
    matches: dict[str, int] = field(default_factory=dict)
    extractor: str = ""
    extraction_seconds: float = 0.0
    cost_before: float = 0.0
    cost_after: float = 0.0
    kept_original: bool = False

    def to_json(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA_VERSION, "stop_reason": self.stop_reason, "error": self.error,
            "seconds": round(self.seconds, 6),
            "rules": {"loaded": self.rules_loaded,
                      "skipped": [{"rule": r, "reason": why} for r, why in self.rules_skipped]},
            "phases": self.phase_stops,
            "iterations": self.iterations,
            "matches": dict(sorted(self.matches.items())),
            "extractor": self.extractor, "extraction_seconds": round(self.extraction_seconds, 6),
            "cost": {"before": self.cost_before, "after": self.cost_after},
            "kept_original": self.kept_original,
        }

    def render(self) -> str:
        """The report as a readable table."""
        phases = (f" (phases: {', '.join(self.phase_stops)})" if len(self.phase_stops) > 1
                  else "")
        lines = [f"stop reason: {self.stop_reason}" + (f" ({self.error})" if self.error else "")
                 + phases,
                 f"rules: {self.rules_loaded} loaded, {len(self.rules_skipped)} not encodable"]
        lines += [f"  skipped {r}: {why}" for r, why in self.rules_skipped]
        lines.append("iteration  phase  e-nodes  e-classes   seconds")
        lines += [f"{it['index']:>9}  {it.get('phase', 0):>5}  {it['enodes']:>7}  "
                  f"{it['eclasses']:>9}  {it['seconds']:>8.4f}" for it in self.iterations]
        fired = [(n, k) for n, k in sorted(self.matches.items(), key=lambda x: -x[1]) if k]
        lines.append(f"rules that matched: {len(fired)}")
        lines += [f"  {k:>6}  {n}" for n, k in fired]
        change = (1 - self.cost_after / self.cost_before) * 100 if self.cost_before else 0.0
        lines.append(f"cost: {self.cost_before:.6g} -> {self.cost_after:.6g} "
                     f"({change:.1f}% lower) with the {self.extractor} extractor in "
                     f"{self.extraction_seconds:.3f} s"
                     + (" (kept the original: nothing cheaper found)" if self.kept_original
                        else ""))
        lines.append(f"total: {self.seconds:.3f} s")
        return "\n".join(lines)
