"""Saturation: load a program and rules into egglog and run the schedule under limits.

Iterations are stepped from Python so that the iteration, e-node and time limits are checked
between them (a single iteration cannot be interrupted inside egglog: the optimizer runs this
in a child process and kills it at the deadline, see optimize.py). Each iteration first brings
the type analysis to a fixpoint, then applies every scheduled ruleset once.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from egglog import bindings

from tcp_rules.diagnostics import TcpError
from tcp_rules.egraph.encode import (
    Tables,
    Unencodable,
    encode_program,
    encode_rule,
    rule_ruleset,
    ruleset_name,
)
from tcp_rules.egraph.schema import analysis, declarations, tables
from tcp_rules.ir import Func
from tcp_rules.rules.model import Rule


@dataclass(frozen=True)
class Limits:
    """When saturation stops: iterations, e-nodes (checked between iterations), seconds."""

    iterations: int = 12
    nodes: int = 20_000
    seconds: float = 10.0


@dataclass
class IterationStats:
    index: int
    enodes: int
    eclasses: int
    seconds: float
    matches: dict[str, int]


@dataclass
class Saturation:
    """A loaded e-graph with its encoding tables and what has run so far."""

    egraph: bindings.EGraph
    tables: Tables
    roots: list[str]
    program_text: str
    rules_loaded: list[str] = field(default_factory=list)
    rules_skipped: list[tuple[str, str]] = field(default_factory=list)
    iterations: list[IterationStats] = field(default_factory=list)
    stop_reason: str = "not run"


def max_rank(func: Func) -> int:
    return max((v.type.rank for v in func.values()), default=0)


def build_text(func: Func, rules: Sequence[Rule], tables_: Tables) -> tuple[
        str, list[str], list[str], list[tuple[str, str]]]:
    """The whole egglog program for ``func`` and ``rules`` (what ``--emit egglog`` prints).

    Returns (text, root names, rules loaded, rules skipped with the reason).
    """
    program, names = encode_program(func, tables_)
    roots = [names[id(r)] for r in func.results]
    rule_texts: list[str] = []
    loaded: list[Rule] = []
    skipped: list[tuple[str, str]] = []
    for r in rules:
        try:
            texts = encode_rule(r, tables_)
        except Unencodable as e:
            skipped.append((r.name, str(e)))
            continue
        rule_texts.append(f"(ruleset {rule_ruleset(r)})\n" + "\n".join(texts))
        loaded.append(r)
    groups: dict[str, list[str]] = {}
    for r in loaded:
        groups.setdefault(r.ruleset, []).append(rule_ruleset(r))
    parts = [
        "; tcp-rules: generated egglog program", declarations(),
        f"; helper tables up to rank {max(max_rank(func), 1)}", tables(max(max_rank(func), 1)),
        analysis(), *rule_texts,
        *(f"(unstable-combined-ruleset {ruleset_name(rs)} {' '.join(members)})"
          for rs, members in groups.items()),
        f"(unstable-combined-ruleset all-rules {' '.join(ruleset_name(rs) for rs in groups)})"
        if groups else "(ruleset all-rules)",
        "; the program", program, "; scalar values for guards", tables_.scalar_rows(),
    ]
    return "\n".join(parts), roots, [r.name for r in loaded], skipped


def load(func: Func, rules: Sequence[Rule]) -> Saturation:
    """Create the e-graph holding ``func`` with ``rules`` ready to run."""
    tables_ = Tables()
    text, roots, loaded, skipped = build_text(func, rules, tables_)
    eg = bindings.EGraph()
    try:
        run_text(eg, text, "program.egg")
    except TcpError as e:
        raise _blame(e, text, rules) from None
    return Saturation(eg, tables_, roots, text, loaded, skipped)


def _blame(error: TcpError, text: str, rules: Sequence[Rule]) -> TcpError:
    """Point an egglog error in a generated rule at that rule's file:line:col."""
    m = re.search(r"In (\d+):\d+", str(error))
    if m is None:
        return error
    lines = text.splitlines()
    start = int(m.group(1)) - 1
    for i in range(start, len(lines)):  # a rule's :name ends its text
        if i > start and lines[i].startswith("(rule "):
            break  # the error was not inside a rule
        found = re.search(r':name "([^"]+?)(<=)?"\)$', lines[i])
        if found:
            rule = next((r for r in rules if r.name == found.group(1)), None)
            if rule is not None:
                return TcpError.at(f"rule {rule.name} cannot be run by egglog: "
                                   f"{error.diagnostics[0].message}", rule.span, stage="egraph")
            break
    return error


def run_text(eg: bindings.EGraph, text: str, filename: str) -> list[object]:
    """Run egglog text; egglog errors and Rust panics become TcpErrors."""
    try:
        return list(eg.run_program(*eg.parse_program(text, filename=filename)))
    except bindings.EggSmolError as e:
        if str(e).startswith("Panic") or "Illegal merge" in str(e):
            raise EgglogPanic(str(e)) from None
        raise TcpError.at(f"egglog rejected the generated program: {e}", stage="egraph") from None
    except BaseException as e:  # pyo3 PanicException derives from BaseException
        if type(e).__name__ != "PanicException":
            raise
        raise EgglogPanic(str(e)) from None


class EgglogPanic(Exception):
    """egglog panicked, e.g. an illegal merge: a rule equated tensors of different types."""


def sizes(eg: bindings.EGraph) -> tuple[int, int]:
    """(e-nodes, typed e-classes) of the e-graph."""
    (out,) = run_text(eg, "(print-size)", "size.egg")
    counts = dict(out.sizes) if hasattr(out, "sizes") else dict(out.args[0])  # type: ignore[attr-defined]
    enodes = sum(n for name, n in counts.items() if name[:1].isupper() and name != "TNil")
    return enodes, counts.get("dims", 0)


def step(sat: Saturation) -> tuple[bool, dict[str, int]]:
    """One iteration: types to a fixpoint, then each rule once. Returns (changed, matches)."""
    outputs = run_text(sat.egraph, "(run-schedule (saturate (run types)))\n(run all-rules 1)\n"
                       "(run-schedule (saturate (run types)))", "step.egg")
    report = outputs[1].report  # type: ignore[attr-defined]
    matches = {k: int(v) for k, v in report.num_matches_per_rule.items()
               if not k.startswith("type-")}
    return bool(report.updated), matches


def saturate(sat: Saturation, limits: Limits, deadline: float | None = None,
             on_iteration: Callable[[Saturation], None] | None = None) -> Saturation:
    """Run iterations until saturation or a limit; records stats and the stop reason."""
    start = time.perf_counter()
    deadline = deadline if deadline is not None else start + limits.seconds
    sat.stop_reason = "iteration limit"
    for i in range(limits.iterations):
        if time.perf_counter() >= deadline:
            sat.stop_reason = "time limit"
            break
        t0 = time.perf_counter()
        changed, matches = step(sat)
        enodes, eclasses = sizes(sat.egraph)
        sat.iterations.append(IterationStats(i + 1, enodes, eclasses,
                                             time.perf_counter() - t0, matches))
        if on_iteration is not None:
            on_iteration(sat)
        if not changed:
            sat.stop_reason = "saturated"
            break
        if enodes >= limits.nodes:
            sat.stop_reason = "node limit"
            break
        if time.perf_counter() >= deadline:
            sat.stop_reason = "time limit"
            break
    return sat
