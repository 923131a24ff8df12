"""The soundness verifier: ``verify_files(paths)`` checks every rule against NumPy references."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from tcp_rules.rules.library import load_rules
from tcp_rules.verify.checker import PROFILES, Profile, Verdict, verify_rule, verify_rules


def verify_files(paths: Sequence[str | Path], profile: Profile | str = "default", seed: int = 0,
                 progress: Callable[[Verdict], None] | None = None) -> list[Verdict]:
    """Load rule files (TcpError on a malformed one) and verify every rule in them."""
    prof = PROFILES[profile] if isinstance(profile, str) else profile
    return verify_rules(load_rules(paths).rules, prof, seed, progress)


__all__ = ["PROFILES", "Profile", "Verdict", "verify_files", "verify_rule", "verify_rules"]
