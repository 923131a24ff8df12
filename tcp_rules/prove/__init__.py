"""SMT-backed rule proofs (``tcpr prove``): z3 checks each rule's soundness class for every
input, and NumPy confirms every counterexample. Needs the optional ``prove`` extra (z3-solver)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from tcp_rules.diagnostics import TcpError

try:
    import z3  # noqa: F401 (every module of this package needs it: say so once, clearly)
except ImportError:
    raise TcpError.at("proving rules needs the 'z3-solver' package",
                      hint="pip install 'tcp-rules[prove]'") from None

from tcp_rules.prove.prover import DEFAULT_TIMEOUT, ProofVerdict, prove_rule
from tcp_rules.rules.library import load_rules
from tcp_rules.rules.model import Rule


def prove_rules(rules: Sequence[Rule], timeout: float = DEFAULT_TIMEOUT, jobs: int = 1,
                tester: bool = True, progress: Callable[[ProofVerdict], None] | None = None
                ) -> list[ProofVerdict]:
    """Prove every rule (in ``jobs`` processes); verdicts in the order of ``rules``."""
    from tcp_rules.prove.parallel import run_parallel

    return run_parallel(list(rules), timeout, jobs, tester, progress)


def prove_files(paths: Sequence[str | Path], timeout: float = DEFAULT_TIMEOUT, jobs: int = 1,
                progress: Callable[[ProofVerdict], None] | None = None) -> list[ProofVerdict]:
    """Load rule files (TcpError on a malformed one) and prove every rule in them."""
    return prove_rules(load_rules(paths).rules, timeout, jobs, progress=progress)


__all__ = ["DEFAULT_TIMEOUT", "ProofVerdict", "prove_files", "prove_rule", "prove_rules"]
