"""The rules ``tcpr opt`` and ``tcpr run`` use: the standard library plus the user's files
(or the user's files alone), the user's rules verified on request, else a warning."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

from tcp_rules.diagnostics import Diagnostic, TcpError
from tcp_rules.progress import Progress
from tcp_rules.rules.library import (
    RuleLibrary,
    load_rules,
    load_standard_library,
    load_with_standard_library,
)


def choose_rules(paths: Sequence[Path], *, stdlib: bool = True,
                 verify: bool = False) -> RuleLibrary:
    """The standard library (unless not ``stdlib``) and the rule files ``paths``.

    Rules of the user's own (not the standard library's, which the test suite verifies) are
    verified with ``verify``, and a TcpError names those worse than declared; without it, a
    warning on stderr says they have not been verified.
    """
    if not paths:
        if not stdlib:
            raise TcpError.at("--no-stdlib needs rule files: give them with --rules FILE")
        return load_standard_library()
    if stdlib:
        lib, mine = load_with_standard_library(paths)
    else:
        lib = load_rules(paths)
        mine = list(lib.rules)
    if not mine:
        return lib
    files = " ".join(dict.fromkeys(str(p) for p in paths))
    if not verify:
        print(Diagnostic(f"{len(mine)} rule(s) of your own, from {files}, have not been "
                         f"verified", severity="warning",
                         hint=f"verify them with 'tcpr verify {files}', or pass --verify-rules "
                              f"to verify them before optimizing").render(), file=sys.stderr)
        return lib
    from tcp_rules.verify import PROFILES, verify_rules  # hypothesis: only when verifying
    from tcp_rules.verify.report import format_verdict

    with Progress("tcpr verify") as bar:
        verdicts = verify_rules(
            mine, PROFILES["default"], 0,
            lambda v: bar.step(len(mine), f"rules verified, last {v.rule.name}"))
    bad = [v for v in verdicts if not v.ok]
    if bad:
        for v in bad:
            print(format_verdict(v), file=sys.stderr)
        raise TcpError.at(f"{len(bad)} of your {len(mine)} rule(s) are worse than declared, "
                          f"so nothing was optimized",
                          hint="fix the rules or their class, or leave them out")
    return lib
