"""The run report of an optimization: how the e-graph grew, which rules matched or were
banned, why it stopped, and what extraction gained. ``to_json`` has a stable, documented
schema (version 2):

    {"schema": 2, "stop_reason": "saturated" | "fixpoint" | "iteration limit" | "node limit" |
       "time limit" | "error",
     "error": str | null,            # what failed; the original program was kept
     "seconds": float,               # wall time of the whole optimization
     "rules": {"loaded": int, "skipped": [{"rule": str, "reason": str}]},
     "phases": [{"name": str, "stop": str}],   # in order (simplify, explore, fusion by default)
     "iterations": [{"index": int, "phase": int, "enodes": int, "eclasses": int,
                     "seconds": float,
                     "banned": [str],          # rules the back-off scheduler banned in it
                     "round_cost": float | null}],  # best cost, where a round ended here
     "matches": {rule name: int},    # matches applied per rule, all iterations (reverse:
                                     # "name<=")
     "backoff": {"match_limit": int, "ban_length": int, "round_iterations": int,
                 "patience": int,
                 "bans": {rule: int},          # how often each rule was banned
                 "dropped": {rule: int}},      # matches found but not applied (banned)
     "nodes": {"limit": int,                   # --node-limit, or the default's value for
                                               # this program (Limits.node_limit)
               "loaded": int,                  # the program's e-nodes before any rule ran
               "peak": int,                    # the e-graph's largest size
               "over": int},                   # e-nodes past the limit it stopped on (0)
     "extractor": str, "extraction_seconds": float,
     "cost": {"before": float, "after": float},
     "kept_original": bool}           # extraction found nothing cheaper

Stop reasons: ``saturated`` (no rule changes anything and none is banned), ``fixpoint`` (a few
rounds of the explore phase in a row did not make the best program cheaper), or the limit that
ended it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the report is plain data; saturation imports egglog
    from tcp_rules.egraph.saturate import Limits, Saturation
    from tcp_rules.egraph.scheduler import Backoff

SCHEMA_VERSION = 2


@dataclass
class RunReport:
    stop_reason: str = "not run"
    error: str | None = None
    seconds: float = 0.0
    rules_loaded: int = 0
    rules_skipped: list[tuple[str, str]] = field(default_factory=list)
    iterations: list[dict[str, Any]] = field(default_factory=list)
    phase_stops: list[str] = field(default_factory=list)
    phase_names: list[str] = field(default_factory=list)
    matches: dict[str, int] = field(default_factory=dict)
    backoff: dict[str, int] = field(default_factory=dict)
    bans: dict[str, int] = field(default_factory=dict)
    dropped: dict[str, int] = field(default_factory=dict)
    node_limit: int = 0
    loaded_enodes: int = 0
    peak_enodes: int = 0
    over_limit: int = 0
    extractor: str = ""
    extraction_seconds: float = 0.0
    cost_before: float = 0.0
    cost_after: float = 0.0
    kept_original: bool = False

    def record_saturation(self, sat: Saturation, limits: Limits, backoff: Backoff) -> None:
        """Take the stop reasons, phases, bans and sizes of a saturation run (also of one cut
        short by an error)."""
        self.stop_reason, self.phase_stops = sat.stop_reason, list(sat.phase_stops)
        self.phase_names = [p.name for p in sat.plans]
        self.backoff = {"match_limit": backoff.match_limit, "ban_length": backoff.ban_length,
                        "round_iterations": backoff.round_iterations,
                        "patience": backoff.patience}
        self.bans, self.dropped = dict(sat.backoff.bans), dict(sat.backoff.dropped)
        self.node_limit = limits.node_limit(sat.loaded_enodes)
        self.loaded_enodes, self.peak_enodes = sat.loaded_enodes, sat.peak_enodes
        self.over_limit = max(0, sat.peak_enodes - sat.node_cap) if sat.node_cap else 0

    def phases(self) -> list[tuple[str, str]]:
        """(name, stop reason) of each phase; ``not run`` for those an error or the deadline
        cut off."""
        stops = self.phase_stops + ["not run"] * (len(self.phase_names) - len(self.phase_stops))
        return list(zip(self.phase_names, stops, strict=False))

    def to_json(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA_VERSION, "stop_reason": self.stop_reason, "error": self.error,
            "seconds": round(self.seconds, 6),
            "rules": {"loaded": self.rules_loaded,
                      "skipped": [{"rule": r, "reason": why} for r, why in self.rules_skipped]},
            "phases": [{"name": n, "stop": r} for n, r in self.phases()],
            "iterations": self.iterations,
            "matches": dict(sorted(self.matches.items())),
            "backoff": {**self.backoff, "bans": dict(sorted(self.bans.items())),
                        "dropped": dict(sorted(self.dropped.items()))},
            "nodes": {"limit": self.node_limit, "loaded": self.loaded_enodes,
                      "peak": self.peak_enodes, "over": self.over_limit},
            "extractor": self.extractor, "extraction_seconds": round(self.extraction_seconds, 6),
            "cost": {"before": self.cost_before, "after": self.cost_after},
            "kept_original": self.kept_original,
        }

    def render(self) -> str:
        """The report as a readable table."""
        phases = (" (phases: " + ", ".join(f"{n} {r}" for n, r in self.phases()) + ")"
                  if len(self.phase_names) > 1 else "")
        lines = [f"stop reason: {self.stop_reason}" + (f" ({self.error})" if self.error else "")
                 + phases,
                 f"rules: {self.rules_loaded} loaded, {len(self.rules_skipped)} not encodable"]
        lines += [f"  skipped {r}: {why}" for r, why in self.rules_skipped]
        lines.append("iteration  phase  e-nodes  e-classes   seconds  banned  round cost")
        lines += [f"{it['index']:>9}  {it.get('phase', 0):>5}  {it['enodes']:>7}  "
                  f"{it['eclasses']:>9}  {it['seconds']:>8.4f}  {len(it.get('banned', ())):>6}"
                  + (f"  {it['round_cost']:.6g}" if it.get("round_cost") is not None else "")
                  for it in self.iterations]
        fired = [(n, k) for n, k in sorted(self.matches.items(), key=lambda x: -x[1]) if k]
        lines.append(f"rules that matched: {len(fired)}")
        lines += [f"  {k:>6}  {n}" for n, k in fired]
        if self.bans:
            lines.append(f"rules banned by the back-off scheduler (match limit "
                         f"{self.backoff.get('match_limit')}, ban length "
                         f"{self.backoff.get('ban_length')} iterations): {len(self.bans)}")
            lines += [f"  {self.bans[n]:>3}x  {n} ({self.dropped.get(n, 0)} matches dropped)"
                      for n in sorted(self.bans, key=lambda n: -self.dropped.get(n, 0))]
        if self.node_limit:
            lines.append(f"e-nodes: {self.loaded_enodes} loaded, peak {self.peak_enodes} "
                         f"(limit {self.node_limit}"
                         + (f", {self.over_limit} over" if self.over_limit else "") + ")")
        change = (1 - self.cost_after / self.cost_before) * 100 if self.cost_before else 0.0
        lines.append(f"cost: {self.cost_before:.6g} -> {self.cost_after:.6g} "
                     f"({change:.1f}% lower) with the {self.extractor} extractor in "
                     f"{self.extraction_seconds:.3f} s"
                     + (" (kept the original: nothing cheaper found)" if self.kept_original
                        else ""))
        lines.append(f"total: {self.seconds:.3f} s")
        return "\n".join(lines)
