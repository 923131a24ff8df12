"""How saturation is scheduled: rule tiers, the default phases, and a back-off scheduler.

**Tiers.** Every rule gets a tier from its structure, so rule files with any ruleset names are
scheduled alike:

- ``simplify``: one-way rules whose right side is smaller than the left, in ops and literals
  (``add(x, 0) => x``, ``transpose(transpose(x)) => transpose(x)``, ``pow(x, 2) => mul(x, x)``):
  always good, and they shrink what they touch;
- ``layout``: the other rules that mention a data-movement op (transpose, broadcast, reshape,
  slice, concat, gather, pad): they move layout ops through the program and grow the e-graph
  by a bounded amount;
- ``algebra``: everything else (commutativity, associativity, distributivity, math identities):
  what makes e-graphs explode on model-sized programs;
- ``fusion``: rules that mention ``kernel`` or ``load`` (rules/fusion.tcpr).

**Default phases.** ``simplify`` (the simplify and layout tiers) runs to saturation first, so the
cheap, always-good rewrites reach their fixpoint before any algebra; ``explore`` adds the algebra
tier under back-off budgets, in rounds of a few iterations with an extraction after each, and
stops when ``patience`` rounds in a row no longer make the best program cheaper (the
scheduler's fixpoint);
``fusion`` then fuses every alternative found. ``--schedule`` replaces the phases.

**Back-off** (after egg's BackoffScheduler): in an iteration a rule may apply at most
``match_limit << bans`` matches (in the default schedule, in the explore phase: the others are
meant to reach their fixpoint); a rule that finds more applies none of them and is banned for
``ban_length << bans`` iterations, and ``bans`` grows by one. When an iteration changes nothing
while rules are banned, the bans are lifted at once (egg fast-forwards the same way), so a phase
is saturated only when nothing changed and nothing was banned. The defaults were chosen on the
model suite (``tcpr bench --suite models``, docs/optimizer.md).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from tcp_rules.egraph.encode import rule_ruleset
from tcp_rules.egraph.schema import constructor
from tcp_rules.rules.model import Pattern, PLit, POp, Rule
from tcp_rules.rules.sorting import forms_kernels

TIERS = ("simplify", "layout", "algebra", "fusion")


@dataclass(frozen=True)
class Backoff:
    """The back-off scheduler's options: per-rule match budget and ban length (iterations)."""

    match_limit: int = 250
    ban_length: int = 4
    round_iterations: int = 2  # iterations of the explore phase between two extractions
    patience: int = 2  # rounds without a cheaper program before the explore phase stops


def _ops(p: Pattern) -> Iterable[POp]:
    stack = [p]
    while stack:
        q = stack.pop()
        if isinstance(q, POp):
            yield q
            stack.extend(q.args)


def _size(p: Pattern) -> int:
    """Ops and literals: the e-nodes a term has (``pow(x, 2) => mul(x, x)`` shrinks it)."""
    return sum(1 + sum(isinstance(a, PLit) for a in o.args) for o in _ops(p))


def tier(rule: Rule) -> str:
    """The tier of ``rule`` (see the module docstring)."""
    if forms_kernels(rule):
        return "fusion"
    if not rule.two_way and _size(rule.rhs) < _size(rule.lhs):
        return "simplify"
    if any(o.op.category == "movement" for side in (rule.lhs, rule.rhs) for o in _ops(side)):
        return "layout"
    return "algebra"


def built_enodes(p: Pattern) -> int:
    """At most how many e-nodes building ``p`` adds: one per op and literal, and a list cell per
    operand of a variadic op."""
    n = 0
    stack = [p]
    while stack:
        q = stack.pop()
        if isinstance(q, PLit):
            n += 1
        elif isinstance(q, POp):
            n += 1 + (len(q.args) if q.op.variadic else 0)
            stack.extend(q.args)
    return n


@dataclass(frozen=True)
class RuleStep:
    """One rule as the scheduler runs it: its egglog ruleset (every direction of the rule), the
    constructors each direction's left side needs, and the e-nodes one match may add."""

    name: str
    ruleset: str
    needs: tuple[frozenset[str], ...]
    enodes_per_match: int

    @staticmethod
    def of(rule: Rule) -> RuleStep:
        dirs = rule.directions()
        needs = tuple(frozenset(constructor(o.op) for o in _ops(src)) for _, src, _ in dirs)
        return RuleStep(rule.name, rule_ruleset(rule), needs,
                        max(built_enodes(dst) for _, _, dst in dirs))

    def can_match(self, counts: Mapping[str, int]) -> bool:
        """Whether some direction's left side has every constructor it needs in the e-graph."""
        return any(all(counts.get(c, 0) for c in need) for need in self.needs)


@dataclass
class PhasePlan:
    """A phase: its name, its stages (each a list of rules, run in order within an iteration),
    whether it runs in rounds with an extraction after each, and whether its rules run under
    match budgets (the default's cheap phases do not: they are meant to reach their fixpoint)."""

    name: str
    stages: list[list[RuleStep]]
    rounds: bool = False
    budgeted: bool = True  # rules run under the back-off scheduler's match budgets

    @property
    def rules(self) -> list[RuleStep]:
        return [r for stage in self.stages for r in stage]


def default_phases(rules: Iterable[Rule], algebra: bool = True) -> list[PhasePlan]:
    """simplify, explore, fusion (empty phases left out; see the module docstring); without
    ``algebra``, the algebra tier is left out (and with it the explore phase)."""
    by_tier: dict[str, list[RuleStep]] = {t: [] for t in TIERS}
    for r in rules:
        t = tier(r)
        if algebra or t != "algebra":
            by_tier[t].append(RuleStep.of(r))
    cheap = by_tier["simplify"] + by_tier["layout"]
    phases = [PhasePlan("simplify", [cheap], budgeted=False),
              PhasePlan("explore", [cheap + by_tier["algebra"]], rounds=True),
              PhasePlan("fusion", [by_tier["fusion"]], budgeted=False)]
    if not by_tier["algebra"]:
        phases.pop(1)
    return [p for p in phases if p.rules] or [PhasePlan("simplify", [[]])]


@dataclass
class BackoffState:
    """Per-rule bans of the back-off scheduler, and what they cost: matches found but not
    applied, and how often each rule was banned."""

    options: Backoff
    bans: dict[str, int] = field(default_factory=dict)  # times banned
    banned_until: dict[str, int] = field(default_factory=dict)  # iteration index, exclusive
    dropped: dict[str, int] = field(default_factory=dict)

    def threshold(self, rule: str) -> int:
        return self.options.match_limit << self.bans.get(rule, 0)

    def banned(self, rule: str, iteration: int) -> bool:
        return self.banned_until.get(rule, 0) > iteration

    def ban(self, rule: str, iteration: int, found: int) -> None:
        n = self.bans.get(rule, 0)
        self.banned_until[rule] = iteration + 1 + (self.options.ban_length << n)
        self.bans[rule] = n + 1
        self.dropped[rule] = self.dropped.get(rule, 0) + found

    def any_banned(self, iteration: int, rules: Iterable[str]) -> bool:
        return any(self.banned(r, iteration) for r in rules)

    def lift(self, rules: Iterable[str]) -> None:
        """End the bans of ``rules`` now (an iteration changed nothing while they were out)."""
        for r in rules:
            self.banned_until.pop(r, None)
