"""Optimizer benchmark: e-graph growth and optimization time on the examples and a generated
1000-op program, and greedy DAG against exact ILP extraction (cost gap and time).

    .venv/bin/python benchmarks/optimizer.py [--json]      (same as: tcpr bench --suite optimizer)
"""

import sys

from tcp_rules.benchsuites import optimizer_suite

if __name__ == "__main__":
    print(optimizer_suite("--json" in sys.argv))
