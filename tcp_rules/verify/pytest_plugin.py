"""pytest integration: verify rule files in your own test suite.

Installed with tcp-rules and loaded by pytest automatically. Two ways to use it:

* the ``tcpr_verify`` fixture::

      def test_my_rules_are_sound(tcpr_verify):
          tcpr_verify(["rules/mine.tcpr"])      # fails with the counterexamples

* ``pytest --tcpr rules/`` collects every ``.tcpr`` file as tests, one per rule.

``--tcpr-profile thorough`` and ``--tcpr-seed N`` choose how hard and where to look.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from tcp_rules.diagnostics import TcpError
from tcp_rules.rules.library import load_rules
from tcp_rules.rules.model import Rule


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("tcp-rules")
    group.addoption("--tcpr", action="store_true", help="collect .tcpr rule files as tests")
    group.addoption("--tcpr-profile", default="default", choices=("default", "thorough"),
                    help="how many cases the rule verifier tries")
    group.addoption("--tcpr-seed", type=int, default=0, help="seed of the rule verifier")


def _settings(config: pytest.Config) -> tuple[str, int]:
    return config.getoption("--tcpr-profile"), config.getoption("--tcpr-seed")


@pytest.fixture
def tcpr_verify(request: pytest.FixtureRequest) -> Callable[[Sequence[str | Path]], list[Any]]:
    """``tcpr_verify(paths)`` verifies the rules in ``paths``; the test fails on any rule that
    is worse than its declared class, with the counterexamples in the failure message."""
    from tcp_rules.verify import verify_files
    from tcp_rules.verify.report import format_verdict

    profile, seed = _settings(request.config)

    def run(paths: Sequence[str | Path]) -> list[Any]:
        verdicts = verify_files(paths, profile, seed)
        bad = [v for v in verdicts if not v.ok]
        if bad:
            pytest.fail("\n".join(format_verdict(v) for v in bad), pytrace=False)
        return verdicts

    return run


def pytest_collect_file(parent: pytest.Collector, file_path: Path) -> pytest.Collector | None:
    if file_path.suffix == ".tcpr" and parent.config.getoption("--tcpr"):
        return RuleFile.from_parent(parent, path=file_path)
    return None


class RuleFile(pytest.File):
    def collect(self) -> Iterator[pytest.Item]:
        try:
            lib = load_rules([self.path])
        except TcpError as e:
            raise self.CollectError(e.render()) from None
        for rule in lib.rules:
            if rule.where.startswith(f"{self.path}:"):
                yield RuleItem.from_parent(self, name=rule.name, rule=rule)


class RuleError(Exception):
    pass


class RuleItem(pytest.Item):
    def __init__(self, *, rule: Rule, **kwargs: Any):
        super().__init__(**kwargs)
        self.rule = rule

    def runtest(self) -> None:
        from tcp_rules.verify.checker import PROFILES, verify_rule
        from tcp_rules.verify.report import format_verdict

        profile, seed = _settings(self.config)
        verdict = verify_rule(self.rule, PROFILES[profile], seed)
        if not verdict.ok:
            raise RuleError(format_verdict(verdict))

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException],
                     style: Any = None) -> str:
        if isinstance(excinfo.value, RuleError):
            return str(excinfo.value)
        return str(super().repr_failure(excinfo))

    def reportinfo(self) -> tuple[Path, int | None, str]:
        line = self.rule.span.line - 1 if self.rule.span else None
        return self.path, line, f"rule {self.rule.name}"
