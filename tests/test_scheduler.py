"""The scheduler's pieces: rule tiers, the default phases, back-off bans, per-match bounds."""

from __future__ import annotations

from tcp_rules.egraph.scheduler import (
    Backoff,
    BackoffState,
    RuleStep,
    default_phases,
    tier,
)
from tcp_rules.rules.library import load_standard_library

LIB = {r.name: r for r in load_standard_library().rules}


def test_tiers_follow_the_rules_structure() -> None:
    assert tier(LIB["add-zero"]) == "simplify"  # add(x, 0) => x: smaller
    assert tier(LIB["transpose-transpose"]) == "simplify"
    assert tier(LIB["unary-broadcast.neg"]) == "layout"  # two-way, moves a broadcast
    assert tier(LIB["add-transpose"]) == "layout"
    assert tier(LIB["add-comm"]) == "algebra"
    assert tier(LIB["mul-add-dist"]) == "algebra"  # two-way and growing
    assert tier(LIB["pow-three"]) == "algebra"  # one op becomes two
    assert tier(LIB["pow-two"]) == "simplify"  # literals count: pow(x, 2) is two e-nodes
    assert tier(LIB["pow-half"]) == "simplify" and tier(LIB["mul-negone"]) == "simplify"
    assert tier(LIB["fuse"]) == "fusion" and tier(LIB["kernel-one.exp"]) == "fusion"


def test_default_phases() -> None:
    rules = list(LIB.values())
    phases = default_phases(rules)
    assert [p.name for p in phases] == ["simplify", "explore", "fusion"]
    simplify, explore, fusion = ({r.name for r in p.rules} for p in phases)
    assert "add-zero" in simplify and "add-zero" in explore and "add-comm" not in simplify
    assert "add-comm" in explore and not fusion & explore
    assert phases[1].rounds and phases[1].budgeted and not phases[0].budgeted
    assert [p.name for p in default_phases(rules, algebra=False)] == ["simplify", "fusion"]


def test_rule_steps_bound_what_a_match_builds() -> None:
    assert RuleStep.of(LIB["add-zero"]).enodes_per_match == 0  # x: nothing new
    # mul(x, add(y, z)) <=> add(mul(x, y), mul(x, z)): three ops one way, two the other
    assert RuleStep.of(LIB["mul-add-dist"]).enodes_per_match == 3
    step = RuleStep.of(LIB["mul-add-dist"])
    assert step.can_match({"Mul": 1, "Add": 1}) and not step.can_match({"Mul": 3})
    assert RuleStep.of(LIB["concat-single"]).can_match({"Concat": 1})


def test_back_off_doubles_budgets_and_bans() -> None:
    state = BackoffState(Backoff(match_limit=10, ban_length=2))
    assert state.threshold("r") == 10 and not state.banned("r", 0)
    state.ban("r", 0, found=50)
    assert state.banned("r", 1) and state.banned("r", 2) and not state.banned("r", 3)
    assert state.threshold("r") == 20 and state.dropped["r"] == 50
    state.ban("r", 3, found=30)
    assert state.threshold("r") == 40 and state.banned("r", 7) and not state.banned("r", 8)
    state.lift(["r"])
    assert not state.banned("r", 4) and state.bans["r"] == 2
