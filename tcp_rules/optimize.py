"""The optimizer: saturate a program with rules under limits, extract the cheapest program.

The user's program is never lost: on any failure (an egglog error or panic, a limit hit during
the first iteration, an extraction that does not type-check) the original is returned and the
report says what happened. With ``isolate`` (the default) saturation runs in a child process
that reports its best program after every iteration, so the time limit is a hard deadline: the
child is killed when it passes, and the last reported program is used.
"""

from __future__ import annotations

import multiprocessing
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from tcp_rules.diagnostics import Source, TcpError
from tcp_rules.egraph.report import RunReport
from tcp_rules.egraph.saturate import (
    EgglogPanic,
    Limits,
    RulePanic,
    Saturation,
    Schedule,
    load,
    saturate,
)
from tcp_rules.egraph.scheduler import Backoff
from tcp_rules.elaborate import load_program
from tcp_rules.extract.cost import CostModel, RooflineCost
from tcp_rules.extract.decode import DecodeError, decode, program_cost, restore_spans
from tcp_rules.extract.extractors import EXTRACTORS, ExtractionError, ilp
from tcp_rules.extract.snapshot import snapshot
from tcp_rules.ir import Func, rebind_params
from tcp_rules.printer import print_func
from tcp_rules.rules.model import Rule

if TYPE_CHECKING:  # the verify package loads hypothesis: only validation needs it
    from tcp_rules.verify.translation import Validation

GRACE = 0.05  # the child is killed at the time limit plus this fraction (+10% in all)
PROGRESS_EVERY = 0.25  # of the time limit: how often a fallback program is extracted


@dataclass(frozen=True)
class OptOptions:
    """What the optimizer may use and how hard it may try."""

    allow: tuple[str, ...] = ("exact", "approx")
    limits: Limits = field(default_factory=Limits)
    extractor: str = "dag"
    cost: CostModel = field(default_factory=RooflineCost)
    isolate: bool = True
    ilp_seconds: float = 10.0
    schedule: Schedule = ()
    backoff: Backoff = field(default_factory=Backoff)
    algebra: bool = True  # False: the default schedule leaves the algebra tier out


@dataclass
class OptResult:
    func: Func
    original: Func
    report: RunReport
    validation: Validation | None = None  # set by the pipeline when asked to validate


def select_rules(rules: Sequence[Rule], allow: Sequence[str]) -> list[Rule]:
    """The rules of the allowed soundness classes; the others are not loaded at all."""
    return [r for r in rules if r.soundness.kind in allow]


def _extract(sat: Saturation, func: Func, options: OptOptions, name: str) -> tuple[Func, float,
                                                                                   float]:
    snap = snapshot(sat.egraph, sat.tables, sat.roots)
    if name == "ilp":
        ex = ilp(snap, options.cost, options.ilp_seconds)
    else:
        ex = EXTRACTORS[name](snap, options.cost)
    return decode(snap, ex.choice, func), ex.cost, ex.seconds


def _quick(options: OptOptions) -> str:
    """The extractor for fallback programs and rounds: the chosen one, but greedy DAG for ILP
    (which may take its whole time limit)."""
    return "dag" if options.extractor == "ilp" else options.extractor


def run_optimizer(func: Func, rules: Sequence[Rule], options: OptOptions,
                  progress: Callable[[dict[str, Any]], None] | None = None,
                  on_stats: Callable[[dict[str, Any]], None] | None = None,
                  on_loaded: Callable[[int, list[tuple[str, str]]], None] | None = None
                  ) -> OptResult:
    """Optimize in this process; ``progress`` receives each iteration's stats and program (a
    fallback extraction now and then), ``on_stats`` only the stats, ``on_loaded`` the rules
    loaded and skipped once the e-graph is built."""
    start = time.perf_counter()
    report = RunReport(extractor=options.extractor)
    report.cost_before = report.cost_after = program_cost(func, options.cost)
    chosen = select_rules(rules, options.allow)
    best = func

    last = [start]
    progress_every = PROGRESS_EVERY * options.limits.seconds
    ended: list[tuple[int, Func, float, float]] = []  # the extraction at the last phase end

    def on_iteration(sat: Saturation) -> None:
        it = sat.iterations[-1]
        report.iterations.append({"index": it.index, "phase": it.phase, "enodes": it.enodes,
                                  "eclasses": it.eclasses, "seconds": round(it.seconds, 6),
                                  "banned": it.banned, "round_cost": it.cost})
        for k, v in it.matches.items():
            report.matches[k] = report.matches.get(k, 0) + v
        if on_stats is not None:
            on_stats(report.iterations[-1])
        if progress is None:
            return
        message: dict[str, Any] = {"iteration": report.iterations[-1],
                                   "matches": dict(report.matches), "program": None,
                                   "cost": report.cost_before}
        now = time.perf_counter()
        if it.cost is not None:  # a round's extraction: the fallback program, for free
            last[0] = now
            if rounds[-1][0] < report.cost_before:
                message["program"], message["cost"] = print_func(rounds[-1][1]), rounds[-1][0]
        elif it.phase_end or now - last[0] >= progress_every:
            # the best program so far, should the deadline strike: at the end of each phase
            # and now and then (extraction costs more than an iteration on large e-graphs)
            last[0] = now
            out, cost, seconds = _extract(sat, func, options, _quick(options))
            if it.phase_end:  # the final extraction, if no phase runs after this one
                ended[:] = [(it.index, out, cost, seconds)]
            if cost < report.cost_before:
                message["program"], message["cost"] = print_func(out), cost
        progress(message)

    rounds: list[tuple[float, Func]] = []  # the best program after each round

    def round_cost(sat: Saturation) -> float:
        out, cost, _ = _extract(sat, func, options, _quick(options))
        rounds.append((cost, out))
        return cost

    try:
        sat = load(func, chosen, options.schedule, options.backoff, options.algebra)
        report.rules_loaded = len(sat.rules_loaded)
        report.rules_skipped = sat.rules_skipped
        if on_loaded is not None:
            on_loaded(report.rules_loaded, report.rules_skipped)
        try:
            saturate(sat, options.limits, start + options.limits.seconds, on_iteration,
                     round_cost)
        finally:
            report.record_saturation(sat, options.limits, options.backoff)
        if (ended and sat.iterations and ended[0][0] == sat.iterations[-1].index
                and _quick(options) == options.extractor):
            _, out, cost, seconds = ended[0]  # the same e-graph, extracted as the last phase ended
        else:
            out, cost, seconds = _extract(sat, func, options, options.extractor)
        report.extraction_seconds = seconds
        if cost < report.cost_before:
            best, report.cost_after = out, cost
        else:
            report.kept_original = True
    except EgglogPanic as e:
        culprit = next((r for r in chosen if isinstance(e, RulePanic) and r.name == e.rule),
                       None)
        where = (f"rule {culprit.name} ({culprit.where}) made tensors of different types equal"
                 if culprit else "a rule made tensors of different types equal")
        report.stop_reason, report.error = "error", f"{where}: {e}"
    except (TcpError, ExtractionError, DecodeError) as e:
        report.stop_reason, report.error = "error", str(e)
    report.seconds = time.perf_counter() - start
    return OptResult(best, func, report)


def _child(conn: Any, func: Func, rules: Sequence[Rule], options: OptOptions) -> None:
    try:
        result = run_optimizer(func, rules, options, lambda m: conn.send(("iteration", m)),
                               on_loaded=lambda n, skipped: conn.send(("loaded", (n, skipped))))
        conn.send(("done", {"program": print_func(result.func), "report": result.report}))
    except BaseException as e:  # anything at all: the parent keeps the original program
        conn.send(("failed", f"{type(e).__name__}: {e}"))
    finally:
        conn.close()


def optimize(func: Func, rules: Sequence[Rule], options: OptOptions = OptOptions(),
             on_iteration: Callable[[dict[str, Any]], None] | None = None) -> OptResult:
    """Optimize ``func`` with ``rules``; the time limit is a hard deadline when isolated.

    ``on_iteration`` receives each saturation iteration's stats as the isolated child reports
    them (index, phase, enodes, eclasses, seconds), e.g. for a progress line.
    """
    if not options.isolate:
        return run_optimizer(func, rules, options, on_stats=on_iteration)
    start = time.perf_counter()
    # fork, not spawn: rules and programs hold op-table callables that do not pickle, and a
    # spawned child would spend the time limit re-importing. The child only runs egglog and this
    # module; the parent's other threads (OpenBLAS workers, idle kernel-pool workers) hold no
    # lock it needs, which is what Python's warning about forking with threads is about.
    ctx = multiprocessing.get_context("fork")
    recv, send = ctx.Pipe(duplex=False)
    child = ctx.Process(target=_child, args=(send, func, rules, options), daemon=True)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "This process .* is multi-threaded",
                                DeprecationWarning)
        child.start()
    send.close()
    deadline = start + options.limits.seconds * (1 + GRACE)
    report = RunReport(extractor=options.extractor)
    report.cost_before = report.cost_after = program_cost(func, options.cost)
    last_program: str | None = None
    final: dict[str, Any] | None = None
    while final is None:
        left = deadline - time.perf_counter()
        if left <= 0 or not recv.poll(left):
            break
        try:
            kind, payload = recv.recv()
        except EOFError:
            report.stop_reason, report.error = "error", "the optimizer process died"
            break
        if kind == "loaded":  # so that a run killed at its deadline still counts them
            report.rules_loaded, report.rules_skipped = payload
        elif kind == "iteration":
            report.iterations.append(payload["iteration"])
            if on_iteration is not None:
                on_iteration(payload["iteration"])
            report.matches = payload["matches"]
            # the cheapest fallback so far (greedy extraction need not improve every round)
            if payload["program"] is not None and payload["cost"] < report.cost_after:
                last_program, report.cost_after = payload["program"], payload["cost"]
        elif kind == "done":
            final = payload
        else:
            report.stop_reason, report.error = "error", payload
            break
    if child.is_alive():
        child.kill()
    child.join()
    if final is not None:
        report = final["report"]
        last_program = final["program"]
    else:  # the child was killed or died: what its iterations reported
        report.peak_enodes = max((it["enodes"] for it in report.iterations), default=0)
        if report.error is None:
            report.stop_reason = "time limit"
    report.seconds = time.perf_counter() - start
    best = func
    if last_program is not None and not (final is None and report.kept_original):
        parsed = load_program(Source("<optimized>", last_program)).funcs[0]
        best = rebind_params(parsed, func.params)  # the user's parameters, spans included
        best = restore_spans(best, func)  # errors point at the user's file, not this text
    return OptResult(best, func, report)
