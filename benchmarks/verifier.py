"""Verifier benchmark: time to verify the standard library with the default profile and with
ten times as many cases.

    .venv/bin/python benchmarks/verifier.py [--json]       (same as: tcpr bench --suite verifier)
"""

import sys

from tcp_rules.benchsuites import verifier_suite

if __name__ == "__main__":
    print(verifier_suite("--json" in sys.argv))
