"""The soundness verifier: wrong rules are caught with small counterexamples, sound ones pass,
verdicts are reproducible, and users can run it from the CLI and from pytest."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tcp_rules.rules.library import load_rules
from tcp_rules.rules.model import Rule
from tcp_rules.verify import PROFILES, verify_rule
from tcp_rules.verify.report import format_verdict, report_json

pytest_plugins = ["pytester"]

DATA = Path(__file__).parent / "data"
UNSOUND = load_rules([DATA / "unsound.tcpr"]).rules

SOUND = """\
rule add-negzero: add(x, -0.0) => x
rule add-comm: add(x, y) <=> add(y, x)
rule tt-compose: transpose(transpose(x, perm=p), perm=q) => transpose(x, perm=compose(p, q))
rule add-assoc approx: add(add(x, y), z) => add(x, add(y, z))
rule add-assoc-int: add(add(x, y), z) => add(x, add(y, z)) where is_int(x)
rule log-mul assumes(a > 0 and b > 0): log(mul(a, b)) => add(log(a), log(b))
rule neg-neg: neg(neg(x)) => x
rule max-idem: max(x, x) => x
"""


@pytest.fixture(scope="module")
def sound_rules(tmp_path_factory: pytest.TempPathFactory) -> list[Rule]:
    path = tmp_path_factory.mktemp("sound") / "sound.tcpr"
    path.write_text(SOUND)
    return list(load_rules([path]).rules)


def test_the_corpus_is_large_enough() -> None:
    assert len(UNSOUND) >= 25


@pytest.mark.parametrize("rule", UNSOUND, ids=lambda r: r.name)
def test_wrong_rules_are_caught_with_a_counterexample(rule: Rule) -> None:
    verdict = verify_rule(rule)
    assert not verdict.ok, format_verdict(verdict)
    cx = verdict.counterexample
    assert cx is not None and cx.mismatch
    assert cx.lhs.shape == cx.rhs.shape or "differ in type" in cx.mismatch
    text = format_verdict(verdict)
    assert text.startswith(f"{rule.where}: error: rule {rule.name} is declared")
    assert "left side:" in text and "right side:" in text


def test_sound_rules_pass(sound_rules: list[Rule]) -> None:
    for rule in sound_rules:
        verdict = verify_rule(rule)
        assert verdict.ok, format_verdict(verdict)
        assert verdict.checked >= PROFILES["default"].examples // 2


def test_weakest_class_is_reported() -> None:
    by_name = {r.name: r for r in UNSOUND}
    assert verify_rule(by_name["add-assoc-exact"]).satisfies == "approx"
    assert verify_rule(by_name["mul-zero"]).satisfies == "approx"  # only differs on inf/NaN
    assert verify_rule(by_name["select-swapped"]).satisfies == "unsound"


def test_counterexamples_are_shrunk() -> None:
    by_name = {r.name: r for r in UNSOUND}
    for name in ("mul-zero", "add-positive-zero", "sub-self", "max-comm-exact"):
        cx = verify_rule(by_name[name]).counterexample
        assert cx is not None
        assert all(a.size <= 1 for a in cx.inputs.values()), (name, cx.inputs)
    cx = verify_rule(by_name["add-positive-zero"]).counterexample
    assert cx is not None and str(cx.inputs["x"].ravel()[0]) == "-0.0"


def test_a_seed_gives_the_same_cases() -> None:
    rule = next(r for r in UNSOUND if r.name == "relu-over-add")
    a, b = verify_rule(rule, seed=7), verify_rule(rule, seed=7)
    assert a.checked == b.checked
    assert a.counterexample is not None and b.counterexample is not None
    assert a.counterexample.instance == b.counterexample.instance
    assert all((a.counterexample.inputs[k] == b.counterexample.inputs[k]).all()
               for k in a.counterexample.inputs)


def test_json_report_schema(sound_rules: list[Rule]) -> None:
    verdicts = [verify_rule(sound_rules[0]), verify_rule(UNSOUND[0])]
    data = report_json(verdicts, "default", 0)
    assert data["schema"] == 1 and data["ok"] is False
    ok, bad = data["rules"]
    assert set(ok) == {"rule", "location", "declared", "precondition", "satisfies", "ok",
                       "cases", "counterexample"}
    assert ok["ok"] and ok["counterexample"] is None
    assert not bad["ok"] and set(bad["counterexample"]) == {
        "direction", "check", "instance", "sizes", "constants", "inputs", "left", "right",
        "difference"}
    json.dumps(data)


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "tcp_rules", *args], capture_output=True,
                          text=True, timeout=300)


def test_cli_exit_codes(tmp_path: Path) -> None:
    good = tmp_path / "good.tcpr"
    good.write_text("rule neg-neg: neg(neg(x)) => x\n")
    out = run_cli("verify", str(good), "--examples", "20")
    assert out.returncode == 0, out.stdout + out.stderr
    assert "1 as declared, 0 worse than declared" in out.stdout
    bad = tmp_path / "bad.tcpr"
    bad.write_text("rule mul-zero: mul(x, 0) => 0\n")
    out = run_cli("verify", str(bad), "--json", "--seed", "3")
    assert out.returncode == 1
    data = json.loads(out.stdout)
    assert data["seed"] == 3 and data["rules"][0]["satisfies"] == "approx"
    assert "Traceback" not in out.stderr


def test_standard_library_verifies() -> None:
    out = run_cli("verify", str(Path(__file__).parent.parent / "rules"))
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr


def test_pytest_fixture_and_collection(pytester: pytest.Pytester) -> None:
    pytester.makefile(".tcpr", good="rule neg-neg: neg(neg(x)) => x\n",
                      bad="rule sub-self: sub(x, x) => 0\n")
    pytester.makepyfile(test_mine="""
        def test_good(tcpr_verify):
            verdicts = tcpr_verify(["good.tcpr"])
            assert verdicts[0].ok

        def test_bad(tcpr_verify):
            tcpr_verify(["bad.tcpr"])
    """)
    result = pytester.runpytest("test_mine.py")  # the plugin loads through its entry point
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*rule sub-self is declared exact but is only approx*"])
    collected = pytester.runpytest("--tcpr", "good.tcpr", "bad.tcpr")
    collected.assert_outcomes(passed=1, failed=1)
