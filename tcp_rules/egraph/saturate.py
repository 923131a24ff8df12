"""Saturation: load a program and rules into egglog and run the schedule under limits.

Iterations are stepped from Python so that the iteration, e-node and time limits are checked
between them (a single iteration cannot be interrupted inside egglog: the optimizer runs this
in a child process and kills it at the deadline, see optimize.py). Each iteration first brings
the type analysis to a fixpoint, then applies every scheduled ruleset once.

A schedule runs in *phases*, each iterated to saturation or its limits before the next starts.
By default the first phase holds every rule that does not mention ``kernel`` or ``load`` and the
second the rules that do (fusion, rules/fusion.tcpr): algebra explores first, then every
alternative it found can be fused, without the algebraic rules rewriting kernel bodies as well.
Earlier phases stop at 60% of the time budget so that the last one always gets time.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from egglog import bindings

from tcp_rules.diagnostics import TcpError
from tcp_rules.egraph.encode import (
    INT_ZERO_SUFFIX,
    Tables,
    Unencodable,
    encode_program,
    encode_rule,
    rule_ruleset,
    ruleset_name,
)
from tcp_rules.egraph.schema import analysis, declarations, tables
from tcp_rules.egraph.tables_needed import needed
from tcp_rules.ir import Func
from tcp_rules.rules.model import Rule
from tcp_rules.rules.sorting import forms_kernels


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
    phase: int = 0
    phase_end: bool = False  # the last iteration of its phase


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
    phases: list[list[str]] = field(default_factory=lambda: [["all-rules"]])
    phase_stops: list[str] = field(default_factory=list)


# A schedule: phases, each a sequence of stages of DSL rulesets. Each iteration of a phase runs
# its stages once, in order (the type analysis reaching its fixpoint before and after each);
# iterations repeat until saturation or a limit, then the next phase starts. The empty schedule
# is the default two phases (see the module docstring).
Phase = tuple[tuple[str, ...], ...]
Schedule = tuple[Phase, ...]
EARLY_PHASES_SHARE = 0.6  # of the time limit, for all phases but the last


def parse_schedule(text: str) -> Schedule:
    """``'layout; algebra, broadcast then fusion'``: phases split by ``then``, stages by ``;``,
    rulesets by ``,``."""
    return tuple(tuple(tuple(rs.strip() for rs in stage.split(",") if rs.strip())
                       for stage in phase.split(";") if stage.strip())
                 for phase in re.split(r"\bthen\b", text) if phase.strip())


def max_rank(func: Func) -> int:
    return max((v.type.rank for v in func.values()), default=0)


def build_text(func: Func, rules: Sequence[Rule], tables_: Tables,
               schedule: Schedule = ()) -> tuple[str, list[str], list[str], list[tuple[str, str]]]:
    """The whole egglog program for ``func`` and ``rules`` (what ``--emit egglog`` prints).

    Returns (text, root names, rules loaded, rules skipped with the reason).
    """
    check_schedule(rules, schedule)
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
    if schedule:
        stages = [_stage(f"phase{i}-stage{j}", [ruleset_name(rs) for rs in stage if rs in groups])
                  for i, phase in enumerate(schedule) for j, stage in enumerate(phase)]
    else:
        stages = [_stage(f"phase{i}", [rule_ruleset(r) for r in loaded if forms_kernels(r) == k])
                  for i, k in enumerate((False, True))]
    parts = [
        "; tcp-rules: generated egglog program", declarations(),
        f"; helper tables up to rank {max(max_rank(func), 1)}", tables(needed(func, loaded)),
        analysis(), *rule_texts,
        *(f"(unstable-combined-ruleset {ruleset_name(rs)} {' '.join(members)})"
          for rs, members in groups.items()),
        f"(unstable-combined-ruleset all-rules {' '.join(ruleset_name(rs) for rs in groups)})"
        if groups else "(ruleset all-rules)",
        *stages,
        "; the program", program, "; scalar values for guards", tables_.scalar_rows(),
    ]
    return "\n".join(parts), roots, [r.name for r in loaded], skipped


def check_schedule(rules: Sequence[Rule], schedule: Schedule) -> None:
    """Every ruleset a schedule names must exist among the rules (TcpError otherwise)."""
    known = list(dict.fromkeys(r.ruleset for r in rules))
    for stage in (st for phase in schedule for st in phase):
        for name in stage:
            if name not in known:
                raise TcpError.at(f"schedule: no ruleset '{name}' among the rules "
                                  f"(rulesets: {', '.join(known) or 'none'})")


def _stage(name: str, members: list[str]) -> str:
    return (f"(unstable-combined-ruleset {name} {' '.join(members)})" if members
            else f"(ruleset {name})")


def load(func: Func, rules: Sequence[Rule], schedule: Schedule = ()) -> Saturation:
    """Create the e-graph holding ``func`` with ``rules`` ready to run ``schedule``."""
    tables_ = Tables()
    text, roots, loaded, skipped = build_text(func, rules, tables_, schedule)
    eg = bindings.EGraph()
    try:
        run_text(eg, text, "program.egg")
    except TcpError as e:
        raise _blame(e, text, rules) from None
    kinds = {forms_kernels(r) for r in rules if r.name in loaded}
    phases = ([[f"phase{i}-stage{j}" for j in range(len(ph))] for i, ph in enumerate(schedule)]
              if schedule else [[f"phase{i}"] for i in (0, 1) if bool(i) in kinds] or [["phase0"]])
    return Saturation(eg, tables_, roots, text, loaded, skipped, phases=phases)


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
        found = re.search(r':name "([^"]+?)(<=)?(@int-zero)?"\)$', lines[i])
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


def step(sat: Saturation, phase: int = 0) -> tuple[bool, dict[str, int]]:
    """One iteration of a phase: each of its stages once, in order, with the type analysis at
    its fixpoint before and after each. Returns (changed, matches per rule)."""
    types = "(run-schedule (saturate (run types)))"
    text = "\n".join([types, *(f"(run {s} 1)\n{types}" for s in sat.phases[phase])])
    outputs = run_text(sat.egraph, text, "step.egg")
    changed = False
    matches: dict[str, int] = {}
    for out in outputs[1::2]:  # the stages' reports; the others are the type analysis
        report = out.report  # type: ignore[attr-defined]
        changed = changed or bool(report.updated)
        for k, v in report.num_matches_per_rule.items():
            if not k.startswith("type-"):
                k = k.removesuffix(INT_ZERO_SUFFIX)  # a variant of the same direction
                matches[k] = matches.get(k, 0) + int(v)
    return changed, matches


def saturate(sat: Saturation, limits: Limits, deadline: float | None = None,
             on_iteration: Callable[[Saturation], None] | None = None) -> Saturation:
    """Run each phase until saturation or a limit; records stats and the stop reasons (the
    iteration and node limits apply to each phase, the node limit to the e-nodes it adds; the
    time limit to the whole run)."""
    start = time.perf_counter()
    deadline = deadline if deadline is not None else start + limits.seconds
    last = len(sat.phases) - 1
    for phase in range(len(sat.phases)):
        end = deadline if phase == last else min(
            deadline, start + limits.seconds * EARLY_PHASES_SHARE * (phase + 1) / last)
        sat.phase_stops.append(_run_phase(sat, phase, limits, end, on_iteration))
    # the run saturated only if every phase did; otherwise the first limit that cut it short
    sat.stop_reason = next((r for r in sat.phase_stops if r != "saturated"), "saturated")
    return sat


def _run_phase(sat: Saturation, phase: int, limits: Limits, deadline: float,
               on_iteration: Callable[[Saturation], None] | None) -> str:
    base = sat.iterations[-1].enodes if sat.iterations else 0
    for i in range(limits.iterations):
        if time.perf_counter() >= deadline:
            return "time limit"
        t0 = time.perf_counter()
        changed, matches = step(sat, phase)
        enodes, eclasses = sizes(sat.egraph)
        stop = ("saturated" if not changed else "node limit" if enodes - base >= limits.nodes
                else "iteration limit" if i == limits.iterations - 1 else None)
        sat.iterations.append(IterationStats(len(sat.iterations) + 1, enodes, eclasses,
                                             time.perf_counter() - t0, matches, phase,
                                             stop is not None))
        if on_iteration is not None:
            on_iteration(sat)
        if stop is not None:
            return stop
    return "iteration limit"
