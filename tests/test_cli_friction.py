"""Everyday friction (issue 15, point 7): --rules with the standard library, unverified-rule
warnings and --verify-rules, standard library files by name, --version, progress lines."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from tcp_rules import __version__
from tcp_rules.cli import main
from tcp_rules.diagnostics import Source
from tcp_rules.optimize import OptOptions, optimize
from tcp_rules.pipeline import load_module
from tcp_rules.progress import Progress
from tcp_rules.rules.library import load_standard_library

ROOT = Path(__file__).parent.parent
MLP = str(ROOT / "examples" / "mlp.tcp")
PROGRAM = "func f(x: f32[4]) -> f32[4] {\n  return neg(neg(exp(x)))\n}\n"


def tcpr(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def files(tmp_path: Path) -> tuple[str, str, str]:
    """A program, a sound rule file and a wrong one."""
    prog = tmp_path / "p.tcp"
    prog.write_text(PROGRAM)
    good = tmp_path / "good.tcpr"
    good.write_text("rule my-exp-negneg: exp(neg(neg(x))) => exp(x)\n")
    bad = tmp_path / "bad.tcpr"
    bad.write_text("rule my-wrong: exp(x) => x\n")
    return str(prog), str(good), str(bad)


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    assert tcpr(capsys, "--version") == (0, f"tcpr {__version__}\n", "")


# --rules adds to the standard library ---------------------------------------------------------

def test_rules_add_to_the_standard_library_and_warn_unverified(
        files: tuple[str, str, str], capsys: pytest.CaptureFixture[str]) -> None:
    prog, good, _ = files
    code, out, err = tcpr(capsys, "opt", prog, "--json")
    assert (code, err) == (0, "")
    std = json.loads(out)["funcs"][0]["report"]["rules"]["loaded"]
    code, out, err = tcpr(capsys, "opt", prog, "--rules", good, "--json")
    assert code == 0, err
    report = json.loads(out)["funcs"][0]["report"]
    assert report["rules"]["loaded"] == std + 1
    assert "neg-neg" in report["matches"]  # a standard library rule
    assert f"warning: 1 rule(s) of your own, from {good}, have not been verified" in err
    assert "--verify-rules" in err


def test_no_stdlib_uses_only_the_given_rules(files: tuple[str, str, str],
                                             capsys: pytest.CaptureFixture[str]) -> None:
    prog, good, _ = files
    code, out, err = tcpr(capsys, "opt", prog, "--rules", good, "--no-stdlib", "--json")
    assert code == 0, err
    report = json.loads(out)["funcs"][0]["report"]
    assert report["rules"]["loaded"] == 1 and "neg-neg" not in report["matches"]
    code, out, err = tcpr(capsys, "opt", prog, "--no-stdlib")
    assert code == 1 and "--no-stdlib needs rule files" in err


def test_verify_rules_refuses_a_wrong_rule_and_silences_the_warning(
        files: tuple[str, str, str], capsys: pytest.CaptureFixture[str]) -> None:
    prog, good, bad = files
    code, out, err = tcpr(capsys, "run", prog, "--random", "--rules", bad, "--verify-rules")
    assert (code, out) == (1, "")
    assert "rule my-wrong is declared exact but is unsound" in err
    assert "error: 1 of your 1 rule(s) are worse than declared" in err
    code, out, err = tcpr(capsys, "run", prog, "--random", "--rules", good, "--verify-rules")
    assert code == 0, err
    assert "warning" not in err and out.startswith("result0: float32[4]")


def test_a_user_rule_may_not_take_a_standard_library_name(
        tmp_path: Path, files: tuple[str, str, str], capsys: pytest.CaptureFixture[str]) -> None:
    prog, _, _ = files
    mine = tmp_path / "mine.tcpr"
    mine.write_text("rule neg-neg: neg(neg(x)) => neg(neg(x))\n")
    code, _out, err = tcpr(capsys, "opt", prog, "--rules", str(mine))
    assert code == 1
    assert f"{mine}:1:1: error: rule neg-neg is already defined in the standard library" in err
    assert "algebra.tcpr" in err and "--no-stdlib" in err


def test_importing_the_standard_library_from_a_user_file_is_no_duplicate(
        tmp_path: Path, files: tuple[str, str, str], capsys: pytest.CaptureFixture[str]) -> None:
    prog, _, _ = files
    mine = tmp_path / "mine.tcpr"
    mine.write_text('import "algebra"\nrule my-one: exp(neg(neg(x))) => exp(x)\n')
    code, _out, err = tcpr(capsys, "opt", prog, "--rules", str(mine))
    assert code == 0, err
    assert "1 rule(s) of your own" in err


# standard library files by name ----------------------------------------------------------------

def test_standard_library_files_by_name(capsys: pytest.CaptureFixture[str]) -> None:
    # (the smaller files: what is tested is the lookup by name; test_rules checks them all)
    code, out, err = tcpr(capsys, "check", "fusion", "math.tcpr")
    assert code == 0, err
    assert "/rules/fusion.tcpr: ok (" in out and "/rules/math.tcpr: ok (" in out
    code, out, err = tcpr(capsys, "verify", "fusion", "--examples", "2", "--json")
    assert code == 0, err
    assert "kernel-one.exp" in {v["rule"] for v in json.loads(out)["rules"]}


def test_a_file_of_that_name_here_wins_over_the_library(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    Path("fusion.tcpr").write_text("rule mine: neg(neg(x)) => x\n")
    code, out, err = tcpr(capsys, "check", "fusion.tcpr")
    assert code == 0 and out == "fusion.tcpr: ok (1 rules: 1 exact)\n"
    code, out, err = tcpr(capsys, "check", "nosuchfile")
    assert code == 1 and "cannot read nosuchfile" in err


# progress ---------------------------------------------------------------------------------------

def test_progress_is_off_when_stderr_is_not_a_terminal(
        files: tuple[str, str, str], capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TCPR_PROGRESS", raising=False)
    _, good, bad = files
    code, out, err = tcpr(capsys, "verify", good, bad)
    assert code == 1
    assert "\r" not in err and "\x1b" not in out + err


def test_forced_progress_goes_to_stderr_only(files: tuple[str, str, str],
                                             capsys: pytest.CaptureFixture[str],
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TCPR_PROGRESS", "1")
    prog, good, bad = files
    code, out, err = tcpr(capsys, "verify", good, bad, "--json")
    assert code == 1
    assert len(json.loads(out)["rules"]) == 2  # stdout is clean JSON
    assert "tcpr verify: 1/2 rules verified, last my-exp-negneg" in err
    assert "tcpr verify: 2/2 rules verified, last my-wrong" in err
    assert err.endswith("\r\x1b[K")  # the line is removed at the end
    code, out, err = tcpr(capsys, "check", prog, good, MLP)
    assert code == 0 and "\x1b" not in out
    assert "tcpr check: 2/3 files" in err


def test_progress_line_draws_clears_and_waits_for_its_delay() -> None:
    stream = io.StringIO()
    bar = Progress("work", stream=stream, force=True)
    bar.update("1/2", force=True)
    assert stream.getvalue() == "\r\x1b[Kwork: 1/2"
    bar.close()
    assert stream.getvalue().endswith("\r\x1b[K")
    late = io.StringIO()
    with Progress("opt", stream=late, force=True, delay=60) as slow:
        slow.update("quick", force=True)
    assert late.getvalue() == ""  # done before its delay: nothing drawn at all


def test_optimize_reports_each_iteration_to_its_hook() -> None:
    func = load_module(Source("p.tcp", PROGRAM)).funcs[0]
    seen: list[dict[str, object]] = []
    result = optimize(func, load_standard_library().rules, OptOptions(), seen.append)
    assert result.report.stop_reason == "saturated"
    assert [s["index"] for s in seen] == [it["index"] for it in result.report.iterations]
    assert all("enodes" in s for s in seen)
