"""``tcpr bench --suite prove``: the prover over the whole standard library, seconds per rule
(median and maximum) and verdict counts. A benchmark: numbers are reported, never asserted."""

from __future__ import annotations

import json
import statistics
import time
from collections import Counter

from tcp_rules.prove import DEFAULT_TIMEOUT, prove_rules
from tcp_rules.prove.report import summary
from tcp_rules.rules.library import load_standard_library


def prove_suite(as_json: bool = False, jobs: int = 1, timeout: float = DEFAULT_TIMEOUT) -> str:
    """Prove every rule of the standard library once; the tester is not run beside unknowns."""
    rules = load_standard_library().rules
    start = time.perf_counter()
    verdicts = prove_rules(rules, timeout, jobs, tester=False)
    total = time.perf_counter() - start
    secs = [v.seconds for v in verdicts]
    slow = max(verdicts, key=lambda v: v.seconds)
    counts = Counter(v.extent or v.status for v in verdicts)
    row = {"rules": len(verdicts), "seconds": round(total, 2), "jobs": jobs,
           "timeout": timeout, "median_rule_seconds": round(statistics.median(secs), 3),
           "max_rule_seconds": round(max(secs), 3), "slowest": slow.rule.name,
           "proved_all_shapes": counts["all shapes"], "proved_every_size": counts["every size"],
           "proved_to_bound": counts["bounded"],
           "unknown": counts["unknown"], "refuted": counts["refuted"]}
    if as_json:
        return json.dumps(row, indent=2)
    return (f"{summary(verdicts, total)}\nseconds per rule: median {row['median_rule_seconds']}, "
            f"max {row['max_rule_seconds']} ({slow.rule.name}); {jobs} job(s), "
            f"{timeout:g} s per solver query")
