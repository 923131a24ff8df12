"""Golden diagnostics for .tcpr rule files: every misuse of the rule language, rendered exactly.

Each ``tests/goldens/diagnostics/rules/NAME.tcpr`` (or directory ``NAME/`` whose files are
checked together, for imports) is one bad rule file; ``NAME.err`` is what loading it prints.
Adding a case is adding a file; ``pytest --update-goldens`` writes the ``.err`` to be read.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest

from tcp_rules.diagnostics import TcpError
from tcp_rules.rules.library import load_rules

CASE_DIR = Path(__file__).parent / "goldens" / "diagnostics" / "rules"
CASES = sorted([*CASE_DIR.glob("*.tcpr"), *(p for p in CASE_DIR.iterdir() if p.is_dir())])
HEAD = re.compile(r"^[\w./]+\.tcpr:\d+:\d+: error: \S")


def diagnose(case: Path, monkeypatch: pytest.MonkeyPatch) -> TcpError:
    monkeypatch.chdir(case if case.is_dir() else case.parent)  # short file names in output
    files = sorted(p.name for p in case.glob("*.tcpr")) if case.is_dir() else [case.name]
    with pytest.raises(TcpError) as info:
        load_rules(files)
    return info.value


def test_there_are_enough_cases() -> None:
    assert len(CASES) >= 25


@pytest.mark.parametrize("case", CASES, ids=lambda p: p.stem)
def test_rule_diagnostic(case: Path, golden: Callable[[str, str], None],
                         monkeypatch: pytest.MonkeyPatch) -> None:
    err = diagnose(case, monkeypatch)
    text = err.render()
    assert HEAD.match(text), text
    assert "Traceback" not in text
    golden(f"diagnostics/rules/{case.stem}.err", text + "\n")
