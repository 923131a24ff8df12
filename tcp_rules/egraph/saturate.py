"""Saturation: load a program and rules into egglog and run the phases under limits.

Rules run one at a time (each rule has an egglog ruleset of its own), through a back-off
scheduler (egraph/scheduler.py) that caps the matches a rule may apply in one go; the type
analysis reaches its fixpoint after each. Between two rules the limits are checked, so they hold
inside an iteration: the time limit is met to within one rule's run, and a rule is only applied
when its matches fit under the node limit (each match adds at most ``enodes_per_match``
e-nodes), so the e-graph does not pass the node limit (the report says by how much it did, if
ever: at most one rule's matches). A panic names the rule that ran.

A schedule runs in *phases*, each iterated to saturation or its limits before the next starts;
the default phases are derived from the rules' tiers (scheduler.default_phases). Earlier phases
stop at their share of the time (60%) and node (25%) limits, so that the last one (fusion) always
gets time and room.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from tcp_rules.diagnostics import TcpError
from tcp_rules.egraph.bindings import bindings
from tcp_rules.egraph.encode import (
    INT_ZERO_SUFFIX,
    Tables,
    Unencodable,
    encode_program,
    encode_rule,
    rule_ruleset,
    ruleset_name,
)
from tcp_rules.egraph.scheduler import (
    Backoff,
    BackoffState,
    PhasePlan,
    RuleStep,
    default_phases,
)
from tcp_rules.egraph.schema import analysis, declarations, tables
from tcp_rules.egraph.tables_needed import needed
from tcp_rules.ir import Func
from tcp_rules.rules.model import Rule

NODES = 50_000  # the default node limit's floor
# ... and per e-node of the loaded program: the phases' shares of the limit are fixed, so a
# fixed limit stopped a 6-layer encoder's first phase (683 e-nodes loaded) at the node limit,
# 53 kernels where 51 came out under 100,000; at 200 the 2-layer encoder (235) keeps 50,000
NODES_PER_ENODE = 200


@dataclass(frozen=True)
class Limits:
    """When saturation stops: iterations (per phase), e-nodes, seconds. ``nodes=None`` (the
    default) scales with the program: :meth:`node_limit`."""

    iterations: int = 12  # per phase
    nodes: int | None = None  # e-nodes in the e-graph, checked before each rule is applied
    seconds: float = 10.0

    def node_limit(self, loaded: int) -> int:
        """The node limit for a program whose e-graph held ``loaded`` e-nodes when loaded: the
        one given, else NODES or NODES_PER_ENODE per loaded e-node, whichever is more."""
        return self.nodes if self.nodes is not None else max(NODES, NODES_PER_ENODE * loaded)


@dataclass
class IterationStats:
    index: int
    enodes: int
    eclasses: int
    seconds: float
    matches: dict[str, int]
    phase: int = 0
    phase_end: bool = False  # the last iteration of its phase
    banned: list[str] = field(default_factory=list)  # rules banned in this iteration
    cost: float | None = None  # the best program's cost, where a round ended here


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
    plans: list[PhasePlan] = field(default_factory=list)
    phase_stops: list[str] = field(default_factory=list)
    backoff: BackoffState = field(default_factory=lambda: BackoffState(Backoff()))
    peak_enodes: int = 0
    loaded_enodes: int = 0  # the program's e-nodes, before any rule ran
    node_cap: int = 0  # the node limit of the phase that stopped on it (0: none did)


# A schedule: phases, each a sequence of stages of DSL rulesets. Each iteration of a phase runs
# its stages once, in order, each stage's rules one at a time; iterations repeat until
# saturation or a limit, then the next phase starts. The empty schedule is the default phases
# (scheduler.default_phases).
Phase = tuple[tuple[str, ...], ...]
Schedule = tuple[Phase, ...]
EARLY_PHASES_SHARE = 0.6  # of the time limit, for all phases but the last
# of the node limit, for all phases but the last: fusion wraps every alternative the others
# found in kernels and roughly triples the e-graph, so it needs most of the room
EARLY_NODES_SHARE = 0.25


def parse_schedule(text: str) -> Schedule:
    """``'layout; algebra, broadcast then fusion'``: phases split by ``then``, stages by ``;``,
    rulesets by ``,``."""
    return tuple(tuple(tuple(rs.strip() for rs in stage.split(",") if rs.strip())
                       for stage in phase.split(";") if stage.strip())
                 for phase in re.split(r"\bthen\b", text) if phase.strip())


def max_rank(func: Func) -> int:
    return max((v.type.rank for v in func.values()), default=0)


def build_text(func: Func, rules: Sequence[Rule], tables_: Tables, schedule: Schedule = (),
               algebra: bool = True
               ) -> tuple[str, list[str], list[str], list[tuple[str, str]]]:
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
    else:  # the default phases as combined rulesets, for running the text in egglog by hand
        stages = [_stage(f"phase-{plan.name}", [r.ruleset for r in plan.rules])
                  for plan in default_phases(loaded, algebra)]
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


def load(func: Func, rules: Sequence[Rule], schedule: Schedule = (),
         backoff: Backoff | None = None, algebra: bool = True) -> Saturation:
    """Create the e-graph holding ``func`` with ``rules`` ready to run ``schedule`` (without
    ``algebra``, the default schedule leaves the algebra tier out)."""
    tables_ = Tables()
    text, roots, loaded, skipped = build_text(func, rules, tables_, schedule, algebra)
    eg = bindings.EGraph()
    try:
        run_text(eg, text, "program.egg")
    except TcpError as e:
        raise _blame(e, text, rules) from None
    chosen = [r for r in rules if r.name in set(loaded)]
    plans = ([PhasePlan(f"phase{i}", [[RuleStep.of(r) for r in chosen if r.ruleset in stage]
                                      for stage in phase])
              for i, phase in enumerate(schedule)] if schedule
             else default_phases(chosen, algebra))
    sat = Saturation(eg, tables_, roots, text, loaded, skipped, plans=plans,
                     backoff=BackoffState(backoff or Backoff()))
    sat.peak_enodes = sat.loaded_enodes = sizes(eg)[0]
    return sat


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


def _counts(out: object) -> dict[str, int]:
    """Rows per function from egglog's ``(print-size)`` output."""
    return dict(out.sizes) if hasattr(out, "sizes") else dict(out.args[0])  # type: ignore[attr-defined]


def _enodes(counts: dict[str, int]) -> int:
    return sum(n for name, n in counts.items() if name[:1].isupper() and name != "TNil")


def sizes(eg: bindings.EGraph) -> tuple[int, int]:
    """(e-nodes, typed e-classes) of the e-graph."""
    (out,) = run_text(eg, "(print-size)", "size.egg")
    counts = _counts(out)
    return _enodes(counts), counts.get("dims", 0)


class RulePanic(EgglogPanic):
    """A rule's run panicked (an illegal merge: it equated tensors of different types)."""

    def __init__(self, rule: str, message: str):
        super().__init__(message)
        self.rule = rule


@dataclass
class StepResult:
    """What one iteration did: whether anything changed, matches applied per egglog rule name,
    the rules banned, and the limit that stopped it part-way (None: it ran every rule)."""

    changed: bool = False
    matches: dict[str, int] = field(default_factory=dict)
    banned: list[str] = field(default_factory=list)
    stop: str | None = None
    enodes: int = 0  # the e-graph's size after it
    eclasses: int = 0


TYPES = "(run-schedule (saturate (run types)))"
UNBUDGETED = 1 << 40  # the match limit of a rule outside the back-off scheduler


def _found(report: object) -> dict[str, int]:
    """Matches found per egglog rule in a run, applied or dropped by the back-off filter (a
    dropped rule is missing from ``num_matches_per_rule`` but listed in the iterations)."""
    found = {k: int(v) for k, v in report.num_matches_per_rule.items()}  # type: ignore[attr-defined]
    for it in report.iterations:  # type: ignore[attr-defined]
        for k, runs in it.rule_set_report.rule_reports.items():
            if k not in found:
                found[k] = max(int(r.num_matches) for r in runs)
    return found


def step(sat: Saturation, phase: int = 0, node_cap: int | None = None,
         deadline: float | None = None) -> StepResult:
    """One iteration of a phase: each rule of each stage once, in order, under the back-off
    scheduler, with the type analysis at its fixpoint after each. Stops part-way, before the
    rule that would not fit under ``node_cap`` e-nodes or once ``deadline`` has passed."""
    plan, state = sat.plans[phase], sat.backoff
    it = len(sat.iterations)
    res = StepResult()
    # types first: the program's e-nodes are untyped until the analysis has run once
    _, out = run_text(sat.egraph, f"{TYPES}\n(print-size)", "step.egg")
    counts = _counts(out)
    for rule in plan.rules:
        if deadline is not None and time.perf_counter() >= deadline:
            res.stop = "time limit"
            break
        if state.banned(rule.name, it) or not rule.can_match(counts):
            continue
        room = None  # how many of its matches fit (a rule building nothing, x => y, always fits)
        if node_cap is not None and rule.enodes_per_match > 0:
            room = (node_cap - _enodes(counts)) // rule.enodes_per_match
        budget = state.threshold(rule.name) if plan.budgeted else UNBUDGETED
        limit = budget if room is None else max(0, min(budget, room))
        text = (f"(run-schedule (let-scheduler s (back-off :match-limit {limit})) "
                f"(run-with s {rule.ruleset}))")
        try:
            (run_out,) = run_text(sat.egraph, text, "step.egg")
            report = run_out.report  # type: ignore[attr-defined]
            if report.updated:  # type the new e-nodes, and count them (else nothing to do)
                _, size_out = run_text(sat.egraph, f"{TYPES}\n(print-size)", "step.egg")
                counts = _counts(size_out)
                sat.peak_enodes = max(sat.peak_enodes, _enodes(counts))
                res.changed = True
        except EgglogPanic as e:
            raise RulePanic(rule.name, str(e)) from None
        found = _found(report)
        for k, v in report.num_matches_per_rule.items():
            k = k.removesuffix(INT_ZERO_SUFFIX)  # a variant of the same direction
            res.matches[k] = res.matches.get(k, 0) + int(v)
        dropped = {k: v for k, v in found.items() if k not in report.num_matches_per_rule}
        most = max(dropped.values(), default=0)
        if most > budget:
            state.ban(rule.name, it, most)
            res.banned.append(rule.name)
        elif most > limit:  # within its budget, but its matches would pass the node limit
            res.stop = "node limit"
            break
    res.enodes, res.eclasses = _enodes(counts), counts.get("dims", 0)
    return res


def saturate(sat: Saturation, limits: Limits, deadline: float | None = None,
             on_iteration: Callable[[Saturation], None] | None = None,
             round_cost: Callable[[Saturation], float] | None = None) -> Saturation:
    """Run each phase until saturation, its fixpoint or a limit; records stats and the stop
    reasons. The iteration limit applies to each phase, the node and time limits to the whole
    run (earlier phases stop at their share). ``round_cost`` extracts the best program's cost
    after each round of a phase that runs in rounds."""
    start = time.perf_counter()
    deadline = deadline if deadline is not None else start + limits.seconds
    last = len(sat.plans) - 1
    nodes = limits.node_limit(sat.loaded_enodes)
    for phase in range(len(sat.plans)):
        share = 1.0 if phase == last else (phase + 1) / last
        end = min(deadline, start + limits.seconds * (share if phase == last
                                                      else EARLY_PHASES_SHARE * share))
        cap = max(1, int(nodes * (share if phase == last else EARLY_NODES_SHARE * share)))
        stop = _run_phase(sat, phase, limits, end, cap, on_iteration, round_cost)
        sat.phase_stops.append(stop)
        if stop == "node limit" and not sat.node_cap:
            sat.node_cap = cap
    # the run saturated only if every phase did; otherwise the first limit that cut it short
    sat.stop_reason = next((r for r in sat.phase_stops if r not in ("saturated", "fixpoint")),
                           "fixpoint" if "fixpoint" in sat.phase_stops else "saturated")
    return sat


def _run_phase(sat: Saturation, phase: int, limits: Limits, deadline: float, node_cap: int,
               on_iteration: Callable[[Saturation], None] | None,
               round_cost: Callable[[Saturation], float] | None) -> str:
    plan, state = sat.plans[phase], sat.backoff
    names = [r.name for r in plan.rules]
    best, stale = None, 0  # the best round's cost, and rounds since it improved
    rounds = plan.rounds and round_cost is not None
    for i in range(limits.iterations):
        if time.perf_counter() >= deadline:
            return "time limit"
        t0 = time.perf_counter()
        res = step(sat, phase, node_cap, deadline)
        it = len(sat.iterations)
        banned = state.any_banned(it + 1, names)
        stop = res.stop
        if stop is None and not res.changed:
            if banned:  # nothing changed while rules were out: let them back in at once
                state.lift(names)
            else:
                stop = "saturated"
        cost = None
        if stop is None and rounds and (i + 1) % state.options.round_iterations == 0:
            assert round_cost is not None
            cost = round_cost(sat)
            stale = 0 if best is None or cost < best * (1 - 1e-9) else stale + 1
            best = cost if best is None else min(best, cost)
            if stale >= state.options.patience:  # rounds that found nothing cheaper
                stop = "fixpoint"
        if stop is None and i == limits.iterations - 1:
            stop = "iteration limit"
        sat.iterations.append(IterationStats(it + 1, res.enodes, res.eclasses,
                                             time.perf_counter() - t0,
                                             res.matches, phase, stop is not None, res.banned,
                                             cost))
        if on_iteration is not None:
            on_iteration(sat)
        if stop is not None:
            return stop
    return "iteration limit"
