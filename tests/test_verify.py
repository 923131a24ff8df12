"""The soundness verifier: wrong rules are caught with small counterexamples, sound ones pass,
verdicts are reproducible, and users can run it from the CLI and from pytest."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tcp_rules.rules.library import load_rules, load_standard_library
from tcp_rules.rules.model import Rule
from tcp_rules.types import DType
from tcp_rules.verify import PROFILES, verify_rule, verify_rules
from tcp_rules.verify.cases import approx_mismatch
from tcp_rules.verify.checker import Search
from tcp_rules.verify.report import format_verdict, report_json
from tcp_rules.verify.values import Palette, twin

pytest_plugins = ["pytester"]

DATA = Path(__file__).parent / "data"
# The wrong-rule corpus: tests/data/unsound*.tcpr (unsound_sharp: what a blunter tester missed).
CORPUS = sorted(DATA.glob("unsound*.tcpr"))
UNSOUND = load_rules(CORPUS).rules
SHARP = [r for r in UNSOUND if r.where.startswith(str(DATA / "unsound_sharp.tcpr"))]
# TCPR_VERIFY_FULL=1 runs the slow, complete versions of the sampled tests below.
FULL = os.environ.get("TCPR_VERIFY_FULL", "") not in ("", "0")
SEEDS = range(10)

SOUND = """\
rule add-negzero: add(x, -0.0) => x
rule add-comm: add(x, y) <=> add(y, x)
rule tt-compose: transpose(transpose(x, perm=p), perm=q) => transpose(x, perm=compose(p, q))
rule add-assoc approx: add(add(x, y), z) => add(x, add(y, z))
rule add-assoc-int: add(add(x, y), z) => add(x, add(y, z)) where is_int(x)
rule log-mul assumes(a >= 1e-18 and a <= 1e18 and b >= 1e-18 and b <= 1e18):
  log(mul(a, b)) => add(log(a), log(b))  where dtype(a) != f16  # its range is 6e-5..65504
rule neg-neg: neg(neg(x)) => x
rule max-idem: max(x, x) => x
"""


@pytest.fixture(scope="module")
def sound_rules(tmp_path_factory: pytest.TempPathFactory) -> list[Rule]:
    path = tmp_path_factory.mktemp("sound") / "sound.tcpr"
    path.write_text(SOUND)
    return list(load_rules([path]).rules)


def test_the_corpus_is_large_enough() -> None:
    assert len(UNSOUND) >= 35 and len(SHARP) >= 8


def _seed_sample() -> list[tuple[int, Rule]]:
    """Every corpus rule on one seed of 0-9 (each seed gets its share), or with FULL every rule
    on every seed: verdicts on rules that are wrong on many inputs must not depend on the seed."""
    if FULL:
        return [(seed, r) for seed in SEEDS for r in UNSOUND]
    return [(i % len(SEEDS), r) for i, r in enumerate(UNSOUND)]


@pytest.mark.parametrize(("seed", "rule"), _seed_sample(),
                         ids=lambda x: x.name if isinstance(x, Rule) else f"seed{x}")
def test_wrong_rules_are_caught_on_every_seed(seed: int, rule: Rule) -> None:
    verdict = verify_rule(rule, seed=seed)
    assert not verdict.ok, format_verdict(verdict)


def test_every_palette_holds_a_full_mantissa_value() -> None:
    rng = np.random.default_rng(0)
    for finite in (False, True):
        for _ in range(20):
            palette = Palette.draw(rng, finite)
            for dt in (DType.F32, DType.F64):
                vals = palette.values[dt].astype(np.float64)
                mantissa = np.frexp(np.where(np.isfinite(vals), vals, 0.0))[0]
                # a full mantissa: not a short binary fraction like 1, 1.5, 1.25 or 2^-1022
                assert ((mantissa * 2 ** 13) % 1 != 0).any(), vals
            big = np.abs(palette.values[DType.I32].astype(np.int64))
            assert (big > 1 << 24).any() or (big % 2 == 1).any(), big


def test_twin_inputs_copy_or_negate() -> None:
    rng = np.random.default_rng(0)
    kinds = set()
    for _ in range(20):
        arrays = {"x": np.array([0.0, 1.5, -2.0]), "y": np.array([3.0, 4.0, 5.0]),
                  "n": np.array([1, 2], dtype=np.int32)}
        twin(arrays, rng, p=1.0)
        scalars = {"a": np.array(1.0, F32), "b": np.array(2.0, F32)}
        twin(scalars, rng, p=1.0)
        assert all(isinstance(v, np.ndarray) and v.dtype == F32 for v in scalars.values())
        x, y = arrays["x"], arrays["y"]
        copied = [(a, b) for a, b in ((x, y), (y, x)) if np.array_equal(np.signbit(a),
                                                                         np.signbit(b))]
        kinds.add("copy" if copied else "negation")
        assert np.array_equal(np.abs(x), np.abs(y))
        assert np.array_equal(np.signbit(x), np.signbit(y)) or np.array_equal(
            np.signbit(x), ~np.signbit(y))
    assert kinds == {"copy", "negation"}


def test_large_sizes_land_on_the_reduced_axis() -> None:
    rule = next(r for r in SHARP if r.name == "row-sum-as-column-sum")
    search = Search(rule, PROFILES["default"], 0)
    label, frm, to = next(iter(rule.directions()))
    inst = search.samples[label][0]
    reduced = search.reduced_symbols(inst, frm, to)
    assert len(reduced) == 1
    axis = inst.env.tensors["x"].type.dims[1].symbol
    assert axis is not None and reduced == [axis]
    drawn = [search.sizes(inst, frm, to, large=True)[axis] for _ in range(40)]
    assert min(drawn) >= 8 and max(drawn) > 128


F32 = np.float32


def _approx(a: list[float], b: list[float], slack: list[float] | None = None) -> str | None:
    x, y = np.array(a, F32), np.array(b, F32)
    return approx_mismatch(x, y, np.zeros(x.shape) if slack is None else np.array(slack), 1)


def test_approx_excuses_over_and_underflow_only_when_both_sides_agree() -> None:
    inf, big, tiny = float("inf"), float(np.finfo(F32).max), float(np.finfo(F32).tiny)
    assert _approx([inf, -inf, float("nan")], [inf, -inf, float("nan")]) is None
    assert _approx([1.0], [inf]) is not None  # a finite result against inf
    assert _approx([1.0], [float("nan")]) is not None
    assert _approx([inf], [-inf]) is not None
    assert _approx([big], [inf]) is None  # the largest float and inf differ by rounding
    assert _approx([-big], [inf]) is not None
    assert _approx([0.0, tiny / 4], [tiny / 8, 0.0]) is None  # both underflowed
    assert _approx([0.0], [1e-30]) is not None  # one side underflowed, the other did not
    assert _approx([1e-30], [0.0]) is not None


def test_approx_error_is_relative_near_zero() -> None:
    # One ulp of 1 against a result of 1e-3: far beyond the rounding of 1e-3 ...
    assert _approx([1e-3], [1e-3 + 6e-8], [1e-3]) is not None
    # ... unless the computation had terms of size 1 that cancelled (its bound says so).
    assert _approx([1e-3], [1e-3 + 6e-8], [2.0]) is None


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
    # No timeout: a loaded host is slow, not wrong (speed is measured by tcpr bench).
    return subprocess.run([sys.executable, "-m", "tcp_rules", *args], capture_output=True,
                          text=True)


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
    """Every third standard-library rule, in process; with TCPR_VERIFY_FULL=1 all of them
    through the CLI (`tcpr verify rules/` does the same). Speed is for tcpr bench, not tests."""
    if FULL:
        out = run_cli("verify", str(Path(__file__).parent.parent / "rules"))
        assert out.returncode == 0, out.stdout[-4000:] + out.stderr
        return
    bad = [v for v in verify_rules(load_standard_library().rules[::3]) if not v.ok]
    assert not bad, "\n".join(format_verdict(v) for v in bad)


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
